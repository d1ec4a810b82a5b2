/* SPDX-License-Identifier: MIT */
/*
 * Opening an image by path: builds the device stack
 *   file -> [offset] -> [fault] -> [delay] -> stats -> [qcow2] -> [verify] -> cache
 *   -> image
 * from cairn_open_opts, as the CLI and the mount do. Each wrapper takes the
 * device below it on success; on failure we close what we built so far.
 * qcow2 sits above delay and stats: the emulated disk is the file, so its L2
 * table reads pay the delay and count as device requests like any other read.
 * verify sits right under the cache (over a disk cache or http device, when
 * those come): bytes are checked once, as they enter the cache.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cairn/bdev.h>
#include <cairn/cache.h>
#include <cairn/error.h>
#include "image_int.h"
#include "util/util_int.h"

/* Wraps *dev with a constructor's result; on failure *dev still owns the stack. */
#define WRAP(call, what)                                                         \
	do {                                                                     \
		struct cairn_bdev *up_ = NULL;                                   \
		rc = (call);                                                     \
		if (rc < 0) {                                                    \
			snprintf(why, why_len, "cannot set up the %s device: %s", \
				 what, cairn_strerror(rc));                      \
			goto fail;                                               \
		}                                                                \
		dev = up_;                                                       \
	} while (0)

struct why_buf {
	char *why;
	size_t len;
};

/* The qcow2 layer's reason for a refusal becomes the open error's text. */
static void qcow2_why(void *ctx, const char *msg)
{
	struct why_buf *w = ctx;

	snprintf(w->why, w->len, "%s", msg);
}

/* Replace *dev (a qcow2 file) with the qcow2 view of it. Backing files are found
 * relative to the image's directory. */
static int wrap_qcow2(const char *path, const struct cairn_open_opts *o, char *why,
		      size_t why_len, struct cairn_bdev **dev)
{
	struct cairn_qcow2_config cfg = o->qcow2;
	struct why_buf wb = { why, why_len };
	struct cairn_bdev *q = NULL;
	char *copy = strdup(path);
	int rc;

	if (!copy)
		return -ENOMEM;
	if (!cfg.report) {
		cfg.report = qcow2_why;
		cfg.report_ctx = &wb;
	}
	rc = cairn_bdev_qcow2_new(*dev, dirname(copy), &cfg, &q);
	free(copy);
	if (rc < 0) {
		if (!why[0])
			snprintf(why, why_len, "cannot open the qcow2 image: %s",
				 cairn_strerror(rc));
		return rc;
	}
	*dev = q;
	return 0;
}

static int build_stack(const char *path, const struct cairn_open_opts *o, char *why,
		       size_t why_len, struct cairn_bdev **out, struct cairn_bdev **stats,
		       struct cairn_bdev **fault)
{
	struct cairn_bdev *dev = NULL;
	int rc;

	*stats = *fault = NULL;
	rc = cairn_bdev_file_open(path, o->file_flags, &dev);
	if (rc == -EINVAL) { /* not a regular file nor a block device: say which */
		struct stat st;

		if (!stat(path, &st))
			snprintf(why, why_len, "not a cairn image: %s is %s", path,
				 cairn_mode_kind(st.st_mode));
	}
	if (rc < 0)
		return rc; /* otherwise the errno says it all (ENOENT, EACCES) */
	if (o->offset)
		WRAP(cairn_bdev_offset_new(dev, o->offset, 0, &up_), "offset");
	if (o->fault) {
		WRAP(cairn_bdev_fault_new(dev, o->fault, &up_), "fault");
		*fault = dev;
	}
	if (o->delay.latency_ns || o->delay.bandwidth_bps)
		WRAP(cairn_bdev_delay_new(dev, &o->delay, &up_), "delay");
	rc = cairn_bdev_stats_new(dev, stats);
	if (rc < 0) {
		*stats = NULL;
		snprintf(why, why_len, "cannot set up the stats device: %s", cairn_strerror(rc));
		goto fail;
	}
	*out = *stats;
	return 0;
fail:
	cairn_bdev_close(dev);
	*stats = *fault = NULL;
	return rc;
}

static int new_cache(struct cairn_bdev *dev, const struct cairn_open_opts *o, char *why,
		     size_t why_len, struct cairn_cache **out)
{
	int rc = cairn_cache_new(dev, &o->cache, out);

	if (rc < 0) {
		snprintf(why, why_len, "cannot set up the cache: %s", cairn_strerror(rc));
		cairn_bdev_close(dev);
	}
	return rc;
}

/* Puts the verify device over *dev (the bytes of a cairn image) unless turned
 * off. An image without digests goes on without one, unless a root was pinned
 * (verify refuses that). -EMEDIUMTYPE: *dev holds a qcow2 file. */
static int wrap_verify(const struct cairn_open_opts *o, char *why, size_t why_len,
		       struct cairn_bdev **dev)
{
	struct cairn_bdev *v = NULL;
	int rc = cairn_bdev_verify_new(*dev, &o->verify, why, why_len, &v);

	if (rc == -ENODATA) {
		why[0] = '\0';
		return 0;
	}
	if (rc < 0)
		return rc;
	*dev = v;
	return 0;
}

/* The verify device's open read (block 0, the table, the start of the
 * metadata) goes into the cache, so a verified open costs no request more. */
static void prime_from_verify(struct cairn_cache *c)
{
	void *head;
	size_t len;

	if (cairn_bdev_verify_take_head(cairn_cache_bdev(c), &head, &len))
		return;
	cairn_cache_prime(c, head, len, 0);
	free(head);
}

/* The verified stack: the verify device's first read (block 0 and the table)
 * also tells a qcow2 file apart, so that costs no request of its own. Takes dev. */
static int open_verified(const char *path, const struct cairn_open_opts *o, char *why,
			 size_t why_len, struct cairn_bdev *dev, struct cairn_cache **out)
{
	int rc = wrap_verify(o, why, why_len, &dev);

	if (rc == -EMEDIUMTYPE) {
		why[0] = '\0';
		rc = wrap_qcow2(path, o, why, why_len, &dev);
		if (!rc)
			rc = wrap_verify(o, why, why_len, &dev);
	}
	if (rc < 0) {
		cairn_bdev_close(dev);
		return rc;
	}
	rc = new_cache(dev, o, why, why_len, out);
	if (!rc)
		prime_from_verify(*out);
	return rc;
}

/* The cache over dev, or over the qcow2 view of dev when it holds a qcow2 file.
 * The magic is read through a first cache: for a raw image that read is the
 * segment the superblock (and the metadata after it) is read from next, so
 * telling the formats apart costs no device request of its own. Takes dev. */
static int open_cache(const char *path, const struct cairn_open_opts *o, char *why,
		      size_t why_len, struct cairn_bdev *dev, struct cairn_cache **out)
{
	struct cairn_cache *c;
	uint8_t magic[4];
	ssize_t n;
	int rc = new_cache(dev, o, why, why_len, &c);

	if (rc < 0)
		return rc;
	n = cairn_cache_read(c, magic, sizeof(magic), 0, NULL);
	if (n < 0) {
		snprintf(why, why_len, "cannot read the file header");
		cairn_cache_free(c);
		return (int)n;
	}
	if (n < (ssize_t)sizeof(magic) || !cairn_bdev_qcow2_magic(magic)) {
		*out = c;
		return 0;
	}
	dev = cairn_cache_release(c);
	rc = wrap_qcow2(path, o, why, why_len, &dev);
	if (rc < 0) {
		cairn_bdev_close(dev);
		return rc;
	}
	return new_cache(dev, o, why, why_len, out);
}

int cairn_image_open_path_ex(const char *path, const struct cairn_open_opts *opts, char *why,
			     size_t why_len, struct cairn_image **out)
{
	static const struct cairn_open_opts defaults;
	struct cairn_bdev *dev = NULL, *stats = NULL, *fault = NULL;
	struct cairn_cache *cache;
	struct cairn_image *img;
	char spare[8];
	int rc;

	if (!why || !why_len) {
		why = spare;
		why_len = sizeof(spare);
	}
	why[0] = '\0';
	if (!opts)
		opts = &defaults;
	rc = build_stack(path, opts, why, why_len, &dev, &stats, &fault);
	if (rc < 0)
		return rc;
	if (opts->verify.off)
		rc = open_cache(path, opts, why, why_len, dev, &cache);
	else
		rc = open_verified(path, opts, why, why_len, dev, &cache);
	if (rc < 0)
		return rc;
	rc = cairn_image_open_ex(cache, why, why_len, &img);
	if (rc < 0) {
		cairn_cache_free(cache);
		return rc;
	}
	img->stats_dev = stats;
	img->fault_dev = fault;
	*out = img;
	return 0;
}

int cairn_image_open_path(const char *path, const struct cairn_open_opts *opts,
			  struct cairn_image **out)
{
	return cairn_image_open_path_ex(path, opts, NULL, 0, out);
}

int cairn_image_device_counters(struct cairn_image *img, struct cairn_bdev_counters *out)
{
	if (!img->stats_dev)
		return -ENOENT;
	return cairn_bdev_stats_get(img->stats_dev, out);
}

int cairn_image_root_digest(struct cairn_image *img, uint8_t out[CAIRN_DIGEST_LEN])
{
	uint8_t block0[CAIRN_BLOCK_SIZE];
	int rc;

	if (!(img->compat & CAIRN_COMPAT_VERITY))
		return -ENODATA;
	if (!cairn_bdev_verify_root(cairn_cache_bdev(img->cache), out))
		return 0;
	rc = cairn_image_dev_read(img, block0, sizeof(block0), 0, NULL);
	if (!rc)
		cairn_sha256(block0, sizeof(block0), out);
	return rc;
}

struct cairn_bdev *cairn_image_fault_dev(struct cairn_image *img)
{
	return img->fault_dev;
}
