/* SPDX-License-Identifier: MIT */
/* Test helper: open an image file as an embedder with its own device does,
 * file -> cache -> image (tests of the layers above the image do not need the
 * stack builder, lib/stack). cairn_image_close() frees the cache and device. */
#ifndef CAIRN_TEST_OPEN_IMAGE_H
#define CAIRN_TEST_OPEN_IMAGE_H

#include <cairn/bdev.h>
#include <cairn/cache.h>
#include <cairn/image.h>

/* With stats, a stats device sits right under the cache: t_requests() counts
 * what reached the file. cfg may be NULL (defaults). */
static inline int t_open_image_with(const char *path, const struct cairn_cache_config *cfg,
				    int stats, struct cairn_image **out)
{
	struct cairn_bdev *dev, *up;
	struct cairn_cache *cache;
	int rc = cairn_bdev_file_open(path, 0, &dev);

	if (rc < 0)
		return rc;
	if (stats) {
		rc = cairn_bdev_stats_new(dev, &up);
		if (rc < 0) {
			cairn_bdev_close(dev);
			return rc;
		}
		dev = up;
	}
	rc = cairn_cache_new(dev, cfg, &cache);
	if (rc < 0) {
		cairn_bdev_close(dev);
		return rc;
	}
	rc = cairn_image_open(cache, NULL, 0, out);
	if (rc < 0)
		cairn_cache_free(cache);
	return rc;
}

static inline int t_open_image(const char *path, struct cairn_image **out)
{
	return t_open_image_with(path, NULL, 0, out);
}

/* Requests that reached the file, of an image opened with stats. */
static inline int t_requests(struct cairn_image *img, struct cairn_bdev_counters *out)
{
	return cairn_bdev_get_stats(cairn_cache_bdev(cairn_image_cache(img)), out);
}

#endif
