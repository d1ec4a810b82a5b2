/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: replaced by the reader (issue 2). */
#include <errno.h>
#include <cairn/image.h>

int cairn_image_open_path(const char *path, const struct cairn_open_opts *opts,
			  struct cairn_image **out)
{
	return -ENOSYS;
}
int cairn_image_device_counters(struct cairn_image *img, struct cairn_bdev_counters *out)
{
	return -ENOENT;
}
struct cairn_cache *cairn_image_cache(struct cairn_image *img) { return 0; }
