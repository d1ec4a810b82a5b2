/* SPDX-License-Identifier: MIT */
/*
 * Verified images (docs/FORMAT.md, "Verification"). An image built with
 * CAIRN_COMPAT_VERITY has a root digest: SHA-256 of its block 0, which holds the
 * SHA-256 of a digest table, which holds the SHA-256 of every granule of the
 * image. Pinning the root digest ("sha256:HEX") pins every byte.
 *
 * The verify device is a bdev wrapper that sits under the segment cache (and
 * over a disk cache, http or file device): it reads whole granules, hashes them
 * and returns -CAIRN_EDIGEST for a read that needs a granule whose bytes do not
 * match. It keeps no data: a bad granule is fetched again on the next read.
 * SHA-256 is OpenSSL's libcrypto (SHA-NI where the CPU has it).
 */
#ifndef CAIRN_VERIFY_H
#define CAIRN_VERIFY_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdint.h>
#include <cairn/bdev.h>

#define CAIRN_DIGEST_LEN 32
/* "sha256:" + 64 hex digits + NUL */
#define CAIRN_DIGEST_TEXT_LEN 72
/* The verify device's first read at offset 0: block 0 and the digest table of an
 * image up to about 1 GiB, in one request (a remote device's first request is
 * made this large too, so opening costs one round trip). */
#define CAIRN_VERIFY_HEAD_BYTES (256u << 10)

/* SHA-256 of n bytes. */
void cairn_sha256(const void *p, size_t n, uint8_t out[CAIRN_DIGEST_LEN]);
/* "sha256:HEX" (case-insensitive hex) -> 32 bytes; -EINVAL otherwise. */
int cairn_digest_parse(const char *text, uint8_t out[CAIRN_DIGEST_LEN]);
/* 32 bytes -> "sha256:hex" (lower case). */
void cairn_digest_format(const uint8_t d[CAIRN_DIGEST_LEN], char out[CAIRN_DIGEST_TEXT_LEN]);

/* How an image is verified when it is opened. The zero value is the default:
 * verify when the image has digests, accept any root. */
struct cairn_verify_config {
	int off;             /* 1: no verify device at all (unsafe for untrusted storage) */
	int has_root;        /* 1: refuse an image whose root digest is not `root` (and
				an image without digests) */
	uint8_t root[CAIRN_DIGEST_LEN];
};

/* Counters of a verify device. */
struct cairn_verify_stats {
	uint64_t granules;       /* granules hashed and found good */
	uint64_t bytes;          /* bytes hashed */
	uint64_t mismatches;     /* granule reads whose digest did not match */
	uint64_t first_bad_off;  /* device offset of the first bad granule (when mismatches) */
};

/*
 * Puts a verify device over `below`, which holds a cairn image: reads block 0 and
 * the digest table in one request (more only for a table beyond its first
 * 252 KiB), checks them and, with cfg->has_root, the root digest. Refusals:
 * -ENODATA when the image has no digests (the caller may go on without this
 * device unless a root was pinned), -EMEDIUMTYPE when `below` holds a qcow2 file
 * (put the qcow2 view under this device), -CAIRN_EDIGEST when the pinned root does not
 * match, -CAIRN_ECORRUPT for a damaged record or table. `why` gets one line.
 * The device's size is the image size. Takes `below` on success only.
 */
int cairn_bdev_verify_new(struct cairn_bdev *below, const struct cairn_verify_config *cfg,
			  char *why, size_t why_len, struct cairn_bdev **out);
/* dev may be the verify device or any device above it in a stack (walked down
 * through `below`); -EINVAL when there is none. */
int cairn_bdev_verify_stats(struct cairn_bdev *dev, struct cairn_verify_stats *out);
int cairn_bdev_verify_root(struct cairn_bdev *dev, uint8_t out[CAIRN_DIGEST_LEN]);
/* The checked bytes [0, *len) the open read (whole granules), handed over once:
 * the caller owns *buf (free()) and may give it to cairn_cache_prime(), so they
 * are not read again. -ENODATA when there are none (or they were taken). */
int cairn_bdev_verify_take_head(struct cairn_bdev *dev, void **buf, size_t *len);
/* The checks of the verify device's reads, for a caller that reads the bytes
 * from dev->below itself: the segment cache does, so that it can hash each
 * segment apart and off the reader's thread. dev is the verify device; [off,
 * off+len) starts on a granule boundary and ends on one or at the device end
 * (-EINVAL otherwise). Checks every granule in it and replaces block 0 and the
 * digest table region in buf with the checked copies, exactly as a read of dev
 * would return them. 0, or -CAIRN_EDIGEST (buf must then not be used). */
int cairn_bdev_verify_check(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off);
/* The same checks without writing to buf, for bytes that others may be reading
 * (the segment cache's background check of bytes a reader may take meanwhile):
 * 0 when every granule matches and buf is exactly what a read of dev returns,
 * -EAGAIN when the range holds bytes of block 0 or of the digest table region
 * (use cairn_bdev_verify_check, which replaces them), -CAIRN_EDIGEST when a
 * granule does not match, -EINVAL as cairn_bdev_verify_check. The good
 * granules count in the stats; a mismatch does not (the caller leaves the bytes
 * to a cairn_bdev_verify_check, which counts it). */
int cairn_bdev_verify_match(struct cairn_bdev *dev, const void *buf, size_t len, uint64_t off);
/* The granule size of dev when dev itself is a verify device, else 0. */
size_t cairn_bdev_verify_granule(struct cairn_bdev *dev);
/* The verify device of a stack (dev or below it), or NULL. */
struct cairn_bdev *cairn_bdev_verify_find(struct cairn_bdev *dev);

/*
 * The whole-image check (`cairn digest`, `cairn fsck`): reads every byte of the
 * image on `dev` (a device without a verify layer), checks the record, the table
 * and every granule, and writes the root digest to `root` (the SHA-256 of block 0
 * as it is, whether or not the rest matches). Problems go to report (may be NULL)
 * one line each. Returns the number of problems (0: every byte matches the
 * root), -ENODATA when the image has no digests, or another negative errno.
 */
typedef void (*cairn_verify_report_cb)(void *ctx, const char *msg);
long cairn_verify_scan(struct cairn_bdev *dev, uint8_t root[CAIRN_DIGEST_LEN],
		       cairn_verify_report_cb report, void *ctx);

#ifdef __cplusplus
}
#endif

#endif
