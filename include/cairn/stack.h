/* SPDX-License-Identifier: MIT */
/*
 * The stack builder: the one place that composes layers 1-4 (docs/DESIGN.md).
 * It turns a path or URL plus options into the device stack
 *   file -> [offset] -> [delay] -> stats -> [qcow2] -> [verify] -> cache -> image
 * or, for an http://, https:// or s3:// URL,
 *   http -> [offset] -> [delay] -> stats -> [diskcache] -> [qcow2] -> [verify]
 *   -> cache -> image
 * and the open image on top, as the CLI, the FUSE daemon and `cairn bench read`
 * do. The image layer below knows nothing of files, URLs or how devices are
 * put together: it reads a cache.
 *
 * ABI: struct cairn_stack_opts and struct cairn_remote_opts start with a size
 * field that their init functions set to the caller's sizeof; the library reads
 * only the fields that size covers, so fields can be added at the end. Layer
 * configs are pointed to, never embedded (NULL = that layer's defaults, or no
 * such layer for the optional ones).
 *
 * Ownership: cairn_stack_open() makes a stack the caller frees with
 * cairn_stack_close(), which closes the image, the cache and every device.
 * Objects handed out by the cairn_stack_* getters belong to the stack.
 */
#ifndef CAIRN_STACK_H
#define CAIRN_STACK_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdint.h>
#include <cairn/bdev.h>
#include <cairn/cache.h>
#include <cairn/image.h>
#include <cairn/remote.h>
#include <cairn/verify.h>

struct cairn_stack;

/* How a URL is opened (include/cairn/remote.h). The builder fills the http
 * config's origins from the URL and the mirrors (s3:// ones resolved with s3),
 * and its head_bytes from what opening reads first when it is 0. */
struct cairn_remote_opts {
	size_t size;                             /* cairn_remote_opts_init() sets it */
	const struct cairn_http_config *http;    /* NULL = defaults */
	const char *const *mirrors;              /* -o mirror=URL, in order */
	unsigned n_mirrors;                      /* < CAIRN_HTTP_MAX_ORIGINS */
	const struct cairn_s3_config *s3;        /* NULL = defaults */
	const char *cache_dir;                   /* NULL = no disk cache */
	uint64_t cache_max;                      /* 0 = 1 GiB */
	size_t cache_chunk;                      /* 0 = 128 KiB */
};
void cairn_remote_opts_init(struct cairn_remote_opts *o);

struct cairn_stack_opts {
	size_t size;                               /* cairn_stack_opts_init() sets it */
	const struct cairn_cache_config *cache;    /* NULL = defaults */
	const struct cairn_delay_config *delay;    /* NULL = no delay device */
	const struct cairn_qcow2_config *qcow2;    /* NULL = defaults */
	/* Digest checking (verify.h): NULL = on for images that have digests; a
	 * verify device then sits under the cache. */
	const struct cairn_verify_config *verify;
	const struct cairn_remote_opts *remote;    /* NULL = defaults */
	uint64_t offset;                           /* the image starts here in the file */
	unsigned file_flags;                       /* CAIRN_BDEV_FILE_* */
	size_t chunk_cache;                        /* decompressed-chunk budget; 0 = default */
	unsigned flags;                            /* CAIRN_STACK_* */
};
/* Any file, not read as an image: the stack ends at the cache (no qcow2 or
 * verify device, no image; cairn_stack_image() gives NULL). For measuring the
 * device and cache layers alone (`cairn bench read --raw`). */
#define CAIRN_STACK_RAW 1u
/* Zeroes o (all defaults) and sets o->size. */
void cairn_stack_opts_init(struct cairn_stack_opts *o);

/* Opens the image at path (a file, a block device or a URL). opts may be NULL
 * (defaults). On failure returns a negative errno and, when why is not NULL,
 * writes a one-line reason into it ("" when the errno says it all). */
int cairn_stack_open(const char *path, const struct cairn_stack_opts *opts, char *why,
		     size_t why_len, struct cairn_stack **out);
void cairn_stack_close(struct cairn_stack *s);
/* A small file published beside a remote image: url followed by suffix (for
 * example URL.profile), from its origin (or the mirrors of opts, each with the
 * same suffix, as the image fails over) with the HTTP, S3, proxy and TLS
 * settings of opts, read whole into *text (malloc'd, NUL-terminated; the
 * caller frees it) and *len. One request when it is at most 256 KiB. -ENOENT when
 * the server has none (a 404: one request, nothing written to why), -EFBIG when
 * it is larger than max, -EINVAL when url is not a URL; other errors as
 * cairn_stack_open(). *requests (may be NULL) gets the requests it sent. It needs
 * no open stack, so it may run in another thread beside cairn_stack_open(). */
int cairn_stack_fetch_beside(const char *url, const struct cairn_stack_opts *opts,
			     const char *suffix, size_t max, char *why, size_t why_len,
			     char **text, size_t *len, uint64_t *requests);

struct cairn_image *cairn_stack_image(struct cairn_stack *s);
struct cairn_cache *cairn_stack_cache(struct cairn_stack *s);
/* The top device, under the cache (for the verify, qcow2, http and disk cache
 * counters, which walk down from it). */
struct cairn_bdev *cairn_stack_bdev(struct cairn_stack *s);
/* Why a device of the stack last failed (cairn_bdev_last_error() from the
 * top device): 1 with *out filled, 0 when none recorded a failure. */
int cairn_stack_last_error(struct cairn_stack *s, struct cairn_bdev_error *out);
/* Counters of the stats device: requests that reached the file or the network.
 * -ENOENT for a remote image served offline by its disk cache (no network). */
int cairn_stack_counters(struct cairn_stack *s, struct cairn_bdev_counters *out);

#ifdef __cplusplus
}
#endif

#endif
