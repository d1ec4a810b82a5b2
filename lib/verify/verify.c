/* SPDX-License-Identifier: MIT */
/*
 * The verify device: every byte it returns matches the image's root digest.
 *
 * At open it reads block 0 and the digest table (one request for tables up to
 * HEAD_READ - 4096 bytes), checks the root digest when one is pinned, the record
 * hash and the table digest, and keeps both in memory: bytes of block 0 and of the
 * table region are then served from those checked copies, never from below.
 * Every other read is widened to whole granules, hashed and compared. The
 * segment cache above asks for whole segments, and a granule divides the segment
 * size (both 128 KiB by default), so widening costs nothing there, and a bad
 * granule fails exactly the segment that holds it. The segment cache goes
 * further when a granule divides its segment: it reads from below this device
 * and calls cairn_bdev_verify_check() per segment (the same checks), so each
 * segment is hashed apart, on the reader's thread or a worker's, before any
 * byte of it is served (lib/cache/cache.c).
 * Nothing is kept: a bad granule gives -CAIRN_EDIGEST now and is fetched again
 * on the next read (a torn or stale copy from a proxy may be right next time).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cairn/error.h>
#include "util/util_int.h"
#include "verify/verify_int.h"
#include "bdev/errslot.h"

#define HEAD_READ CAIRN_VERIFY_HEAD_BYTES

struct verify_dev {
	struct cairn_bdev base;
	struct cairn_verity v;
	uint8_t block0[CAIRN_BLOCK_SIZE];
	uint8_t *table;                 /* the granule_count entries, checked */
	uint8_t root[CAIRN_DIGEST_LEN];
	uint8_t *head;                  /* the open read's checked granules, until taken */
	size_t head_len;
	_Atomic uint64_t granules, bytes, mismatches, first_bad;
	struct errslot err;             /* mismatches (no name: the device below has it) */
};

static const struct cairn_bdev_ops verify_ops;

static struct verify_dev *to_vd(struct cairn_bdev *dev)
{
	return (struct verify_dev *)dev;
}

/* Checks granules [lo, hi) of bytes at `buf` (buf holds image offset lo << shift).
 * Returns 0, or -CAIRN_EDIGEST when one does not match, counted as a mismatch
 * when count_bad (a read fails for it; a trial's is counted by that read). */
static int check_granules(struct verify_dev *vd, const uint8_t *buf, uint64_t lo, uint64_t hi,
			  int count_bad)
{
	uint8_t d[CAIRN_DIGEST_LEN];
	uint64_t base = lo << vd->v.granule_shift;

	for (uint64_t g = lo; g < hi; g++) {
		uint64_t off = g << vd->v.granule_shift, len = cairn_verity_granule_len(&vd->v, g);

		cairn_verity_granule_digest(&vd->v, g, buf + (off - base), d);
		if (memcmp(d, vd->table + g * CAIRN_DIGEST_LEN, CAIRN_DIGEST_LEN)) {
			uint64_t none = UINT64_MAX;

			if (!count_bad)
				return -CAIRN_EDIGEST;
			atomic_compare_exchange_strong(&vd->first_bad, &none, off);
			atomic_fetch_add_explicit(&vd->mismatches, 1, memory_order_relaxed);
			errslot_set(&vd->err, -CAIRN_EDIGEST, off, len, "granule %" PRIu64 " does not "
				    "match its SHA-256 digest (tampered, torn or stale storage)", g);
			return -CAIRN_EDIGEST;
		}
		atomic_fetch_add_explicit(&vd->granules, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&vd->bytes, len, memory_order_relaxed);
	}
	return 0;
}

/* Overwrite the parts of [off, off+len) in buf that are block 0 or the table
 * region with the checked copies (the granule rule counts them as zeros): the
 * table's entries, then the zeros that table_digest proved the rest to be. */
static void patch_checked(struct verify_dev *vd, uint8_t *buf, size_t len, uint64_t off)
{
	uint64_t elen = vd->v.granule_count * CAIRN_DIGEST_LEN;
	const struct {
		uint64_t lo, hi;
		const uint8_t *src;
	} r[3] = { { 0, CAIRN_BLOCK_SIZE, vd->block0 },
		   { vd->v.table_off, vd->v.table_off + elen, vd->table },
		   { vd->v.table_off + elen, vd->v.table_off + vd->v.table_len, NULL } };

	for (int i = 0; i < 3; i++) {
		uint64_t lo = off > r[i].lo ? off : r[i].lo;
		uint64_t hi = off + len < r[i].hi ? off + len : r[i].hi;

		if (lo >= hi)
			continue;
		if (r[i].src)
			memcpy(buf + (lo - off), r[i].src + (lo - r[i].lo), (size_t)(hi - lo));
		else
			memset(buf + (lo - off), 0, (size_t)(hi - lo));
	}
}

/* Checks bytes [off, off+len) at buf (whole granules) and overwrites block 0 and
 * the table region in them with the checked copies. 0 or -CAIRN_EDIGEST. */
static int check_range(struct verify_dev *vd, uint8_t *buf, size_t len, uint64_t off)
{
	unsigned shift = vd->v.granule_shift;
	int rc = check_granules(vd, buf, off >> shift, (off + len + vd->v.granule - 1) >> shift, 1);

	if (!rc)
		patch_checked(vd, buf, len, off);
	return rc;
}

static ssize_t verify_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	struct verify_dev *vd = to_vd(dev);
	unsigned shift = vd->v.granule_shift;
	uint64_t lo = off >> shift << shift;
	uint64_t hi = (off + len + vd->v.granule - 1) >> shift << shift;
	uint8_t *tmp = buf;
	int rc;

	if (hi > dev->size)
		hi = dev->size;
	/* Block 0 alone is served from its copy, which the root digest checked:
	 * the superblock stays readable when another byte of its granule is bad
	 * (the image then opens, and only the reads that need that byte fail). */
	if (off + len <= CAIRN_BLOCK_SIZE) {
		memcpy(buf, vd->block0 + off, len);
		return (ssize_t)len;
	}
	/* The cache reads whole segments, so a bounce is rare (pass-through mode). */
	if (lo != off || hi != off + len) {
		tmp = malloc((size_t)(hi - lo));
		if (!tmp)
			return -ENOMEM;
	}
	rc = cairn_bdev_read_full(dev->below, tmp, (size_t)(hi - lo), lo);
	if (!rc)
		rc = check_range(vd, tmp, (size_t)(hi - lo), lo);
	if (!rc && tmp != buf)
		memcpy(buf, tmp + (off - lo), len);
	if (tmp != buf)
		free(tmp);
	return rc ? rc : (ssize_t)len;
}

static void verify_close(struct cairn_bdev *dev)
{
	struct verify_dev *vd = to_vd(dev);

	cairn_bdev_close(dev->below);
	errslot_destroy(&vd->err);
	free(vd->table);
	free(vd->head);
	free(vd);
}

static void verify_last_error(struct cairn_bdev *dev, struct cairn_bdev_error *out)
{
	errslot_get(&to_vd(dev)->err, out);
}

/* A read is widened to whole granules (verify_read): those must be held. */
static int verify_held(struct cairn_bdev *dev, uint64_t off, uint64_t len)
{
	uint64_t mask = to_vd(dev)->v.granule - 1, lo = off & ~mask, hi = (off + len + mask) & ~mask;

	if (hi > dev->size)
		hi = dev->size; /* the last granule is short */
	return cairn_bdev_held(dev->below, lo, hi - lo);
}

/* No readv: a vector is read granule-widened entry by entry. The segment cache
 * reads below this device anyway when a granule divides its segment. */
static const struct cairn_bdev_ops verify_ops = {
	.version = CAIRN_BDEV_OPS_VERSION,
	.name = "verify",
	.read = verify_read,
	.close = verify_close,
	.held = verify_held,
	.last_error = verify_last_error,
};

#define WHY(err, ...) (snprintf(why, why_len, __VA_ARGS__), (err))

static int check_root(struct verify_dev *vd, const struct cairn_verify_config *cfg, char *why,
		      size_t why_len)
{
	char have[CAIRN_DIGEST_TEXT_LEN], want[CAIRN_DIGEST_TEXT_LEN];

	if (!cfg || !cfg->has_root || !memcmp(vd->root, cfg->root, CAIRN_DIGEST_LEN))
		return 0;
	cairn_digest_format(vd->root, have);
	cairn_digest_format(cfg->root, want);
	return WHY(-CAIRN_EDIGEST, "root digest is %s, expected %s", have, want);
}

/* Keeps the leading granules of the open read that match their digests (the
 * metadata starts there), so the cache can take them instead of reading them
 * again: a verified open then costs no request more than an unverified one. */
static void keep_head(struct verify_dev *vd, uint8_t *buf, size_t len)
{
	uint8_t d[CAIRN_DIGEST_LEN];
	uint64_t g = 0, off = 0;

	for (; g < vd->v.granule_count; g++) {
		uint64_t glen = cairn_verity_granule_len(&vd->v, g);

		if (off + glen > len)
			break;
		cairn_verity_granule_digest(&vd->v, g, buf + off, d);
		if (memcmp(d, vd->table + g * CAIRN_DIGEST_LEN, CAIRN_DIGEST_LEN))
			break;
		off += glen;
	}
	if (!off) {
		free(buf);
		return;
	}
	atomic_fetch_add_explicit(&vd->granules, g, memory_order_relaxed);
	atomic_fetch_add_explicit(&vd->bytes, off, memory_order_relaxed);
	vd->head = buf;
	vd->head_len = (size_t)off;
}

/* Reads block 0 and the table: one request when the table ends within HEAD_READ. */
static int load_head(struct verify_dev *vd, struct cairn_bdev *below,
		     const struct cairn_verify_config *cfg, char *why, size_t why_len)
{
	uint64_t dev_size = cairn_bdev_size(below);
	size_t head = dev_size < HEAD_READ ? (size_t)dev_size : HEAD_READ;
	uint8_t *buf;
	int rc;

	if (!dev_size)
		return util_not_cairn(NULL, 0, why, why_len);
	buf = malloc(head);
	if (!buf)
		return -ENOMEM;
	rc = cairn_bdev_read_full(below, buf, head, 0);
	if (rc) {
		free(buf);
		return WHY(rc, "cannot read block 0: %s", cairn_strerror(rc));
	}
	if (dev_size < CAIRN_BLOCK_SIZE) {
		rc = util_too_short(buf, head, dev_size, why, why_len);
		free(buf);
		return rc;
	}
	memcpy(vd->block0, buf, CAIRN_BLOCK_SIZE);
	if (cairn_bdev_qcow2_magic(vd->block0)) {
		free(buf);
		return WHY(-EMEDIUMTYPE, "a qcow2 file");
	}
	/* The root covers block 0 as it was read, before anything in it is used. */
	cairn_sha256(vd->block0, CAIRN_BLOCK_SIZE, vd->root);
	rc = cairn_verity_decode(vd->block0, &vd->v, why, why_len);
	/* A pinned root that does not match says so before any damage the decode
	 * found (tampering, not corruption), but an image without digests has no
	 * root to compare: the caller names that (the hash of its block 0 is none). */
	if (rc != -ENODATA) {
		int bad = check_root(vd, cfg, why, why_len);

		if (bad)
			rc = bad;
	}
	if (!rc && vd->v.image_size > dev_size)
		rc = WHY(-CAIRN_ECORRUPT, "image is truncated: %llu bytes on the device, the "
			 "superblock says %llu", (unsigned long long)dev_size,
			 (unsigned long long)vd->v.image_size);
	if (!rc) {
		rc = cairn_verity_read_table(below, &vd->v, buf, head, &vd->table);
		if (rc == -CAIRN_ECORRUPT)
			snprintf(why, why_len, "digest table does not match its digest in block 0");
		else if (rc)
			snprintf(why, why_len, "cannot read the digest table: %s", cairn_strerror(rc));
	}
	if (!rc)
		keep_head(vd, buf, head);
	else
		free(buf);
	return rc;
}

int cairn_bdev_verify_new(struct cairn_bdev *below, const struct cairn_verify_config *cfg,
			  char *why, size_t why_len, struct cairn_bdev **out)
{
	struct verify_dev *vd = calloc(1, sizeof(*vd));
	char spare[8];
	int rc;

	util_why_init(&why, &why_len, spare, sizeof(spare));
	if (!vd)
		return -ENOMEM;
	rc = load_head(vd, below, cfg, why, why_len);
	if (rc) {
		/* Without digests a pinned root cannot match: refuse, naming the root. */
		if (rc == -ENODATA && cfg && cfg->has_root)
			rc = WHY(-CAIRN_EDIGEST, "a root digest was given, but the image has no "
				 "digests (built without verification)");
		free(vd->table);
		free(vd);
		return rc;
	}
	if (errslot_init(&vd->err, NULL)) {
		free(vd->table);
		free(vd->head);
		free(vd);
		return -ENOMEM;
	}
	vd->base.ops = &verify_ops;
	vd->base.below = below;
	vd->base.size = vd->v.image_size;
	atomic_init(&vd->first_bad, UINT64_MAX);
	*out = &vd->base;
	return 0;
}

int cairn_bdev_verify_take_head(struct cairn_bdev *dev, void **buf, size_t *len)
{
	struct verify_dev *vd = to_vd(cairn_bdev_verify_find(dev));

	if (!vd || !vd->head)
		return -ENODATA;
	*buf = vd->head;
	*len = vd->head_len;
	vd->head = NULL;
	vd->head_len = 0;
	return 0;
}

/* The verify device dev when [off, off+len) is whole granules of it, else NULL. */
static struct verify_dev *granule_range(struct cairn_bdev *dev, size_t len, uint64_t off)
{
	struct verify_dev *vd = to_vd(dev);
	uint64_t mask, end = off + len;

	if (!dev || dev->ops != &verify_ops)
		return NULL;
	mask = vd->v.granule - 1;
	if ((off & mask) || end > dev->size || end < off || ((end & mask) && end != dev->size))
		return NULL;
	return vd;
}

int cairn_bdev_verify_check(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	struct verify_dev *vd = granule_range(dev, len, off);

	return vd ? check_range(vd, buf, len, off) : -EINVAL;
}

int cairn_bdev_verify_match(struct cairn_bdev *dev, const void *buf, size_t len, uint64_t off)
{
	struct verify_dev *vd = granule_range(dev, len, off);
	uint64_t lo = off >> (vd ? vd->v.granule_shift : 0);
	uint64_t hi;

	if (!vd)
		return -EINVAL;
	/* Bytes that check_range would overwrite: leave them to it. */
	if (off < CAIRN_BLOCK_SIZE ||
	    (off < vd->v.table_off + vd->v.table_len && off + len > vd->v.table_off))
		return -EAGAIN;
	hi = (off + len + vd->v.granule - 1) >> vd->v.granule_shift;
	return check_granules(vd, buf, lo, hi, 0);
}

size_t cairn_bdev_verify_granule(struct cairn_bdev *dev)
{
	return dev && dev->ops == &verify_ops ? (size_t)to_vd(dev)->v.granule : 0;
}

struct cairn_bdev *cairn_bdev_verify_find(struct cairn_bdev *dev)
{
	for (; dev; dev = dev->below)
		if (dev->ops == &verify_ops)
			return dev;
	return NULL;
}

int cairn_bdev_verify_stats(struct cairn_bdev *dev, struct cairn_verify_stats *out)
{
	struct verify_dev *vd = to_vd(cairn_bdev_verify_find(dev));

	if (!vd)
		return -EINVAL;
	out->granules = atomic_load(&vd->granules);
	out->bytes = atomic_load(&vd->bytes);
	out->mismatches = atomic_load(&vd->mismatches);
	out->first_bad_off = atomic_load(&vd->first_bad);
	if (!out->mismatches)
		out->first_bad_off = 0;
	return 0;
}

int cairn_bdev_verify_root(struct cairn_bdev *dev, uint8_t out[CAIRN_DIGEST_LEN])
{
	struct verify_dev *vd = to_vd(cairn_bdev_verify_find(dev));

	if (!vd)
		return -EINVAL;
	memcpy(out, vd->root, CAIRN_DIGEST_LEN);
	return 0;
}
