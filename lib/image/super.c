/* SPDX-License-Identifier: MIT */
/*
 * The image reader's superblock and metadata access (the reader's trust model
 * is in image_int.h): opening an image (the superblock checked whole), reading
 * metadata blocks through their checksums, and the image's info and settings.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cairn/cache.h>
#include <cairn/error.h>
#include "format/format_int.h"
#include "util/util_int.h"
#include "zcache.h"
#include "image_int.h"

int cairn_image_corrupt(struct cairn_image *img, const char *fmt, ...)
{
	va_list ap;

	if (atomic_load_explicit(&img->has_why, memory_order_acquire))
		return -CAIRN_ECORRUPT;
	pthread_mutex_lock(&img->why_lock);
	if (!atomic_load_explicit(&img->has_why, memory_order_relaxed)) {
		va_start(ap, fmt);
		vsnprintf(img->why, sizeof(img->why), fmt, ap);
		va_end(ap);
		atomic_store_explicit(&img->has_why, 1, memory_order_release);
	}
	pthread_mutex_unlock(&img->why_lock);
	return -CAIRN_ECORRUPT;
}

const char *cairn_image_corruption(struct cairn_image *img)
{
	if (!img || !atomic_load_explicit(&img->has_why, memory_order_acquire))
		return NULL;
	return img->why;
}

int cairn_image_dev_read(struct cairn_image *img, void *buf, size_t len, uint64_t off,
			 const struct cairn_cache_hint *hint)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = cairn_cache_read(img->cache, (char *)buf + done, len - done,
					     off + done, hint);

		/* The cache reads block 0's whole segment, and a bad byte anywhere in
		 * it fails the read. A verifying device holds block 0 (superblock
		 * and records) checked by the root digest apart: ask it alone, so the
		 * image still opens and only reads of the bad bytes fail. */
		if (n == -CAIRN_EDIGEST && off + len <= CAIRN_BLOCK_SIZE)
			return cairn_bdev_read_full(cairn_cache_bdev(img->cache), buf, len, off);
		if (n < 0)
			return (int)n;
		if (n == 0)
			return -EIO; /* open checked the device is long enough */
		done += (size_t)n;
	}
	return 0;
}

static int block_verified(struct cairn_image *img, uint64_t b)
{
	uint64_t w = atomic_load_explicit(&img->verified[b / 64], memory_order_acquire);

	return (w >> (b % 64)) & 1;
}

int cairn_image_verify_block(struct cairn_image *img, uint64_t b)
{
	unsigned char block[CAIRN_BLOCK_SIZE];
	uint64_t want;
	int rc;

	if (b >= img->meta_blocks)
		return -EINVAL;
	rc = cairn_image_meta_fetch(img, block, sizeof(block), img->meta_off + b * CAIRN_BLOCK_SIZE);
	if (rc)
		return rc;
	rc = cairn_image_dev_read(img, &want, sizeof(want), img->csum_off + b * 8, NULL);
	if (rc)
		return rc;
	if (cairn_format_block_csum(block) != cairn_le64(want))
		return cairn_image_corrupt(img, "metadata block %llu (offset %llu): checksum mismatch",
					   (unsigned long long)b,
					   (unsigned long long)(img->meta_off + b * CAIRN_BLOCK_SIZE));
	atomic_fetch_or_explicit(&img->verified[b / 64], (uint64_t)1 << (b % 64),
				 memory_order_release);
	return 0;
}

int cairn_image_meta_read(struct cairn_image *img, void *buf, size_t len, uint64_t off)
{
	uint64_t first, last;
	int rc;

	if (len == 0)
		return 0;
	if (off < img->meta_off || !cairn_add_ok(off, len, img->meta_end))
		return cairn_image_corrupt(img, "metadata reference %llu+%zu outside the metadata region",
					   (unsigned long long)off, len);
	first = (off - img->meta_off) / CAIRN_BLOCK_SIZE;
	last = (off + len - 1 - img->meta_off) / CAIRN_BLOCK_SIZE;
	for (uint64_t b = first; b <= last; b++) {
		if (block_verified(img, b))
			continue;
		rc = cairn_image_verify_block(img, b);
		if (rc)
			return rc;
	}
	return cairn_image_meta_fetch(img, buf, len, off);
}

int cairn_image_rec_read(struct cairn_image *img, const char *what, uint64_t table_off,
			 uint64_t count, uint64_t idx, void *rec, size_t size)
{
	if (idx >= count)
		return cairn_image_corrupt(img, "%s %llu past the %s table", what,
					   (unsigned long long)idx, what);
	return cairn_image_meta_read(img, rec, size, table_off + idx * size);
}

int cairn_image_why(char *why, size_t why_len, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && why_len) {
		va_start(ap, fmt);
		vsnprintf(why, why_len, fmt, ap);
		va_end(ap);
	}
	return err;
}

#define BAD(...) cairn_image_why(why, why_len, -CAIRN_ECORRUPT, __VA_ARGS__)

/* A table of count records of size rec at off must fit in the metadata region. */
static int table_ok(const struct cairn_image *img, uint64_t off, uint64_t count, uint64_t rec)
{
	if (count == 0)
		return 1;
	if (off < img->meta_off || off > img->meta_end)
		return 0;
	return count <= (img->meta_end - off) / rec;
}

static int ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return alen && blen && a < b + blen && b < a + alen;
}

static void super_decode(struct cairn_image *img, const struct cairn_disk_super *s)
{
	img->compat = cairn_le32(s->compat);
	img->incompat = cairn_le32(s->incompat);
	img->ro_compat = cairn_le32(s->ro_compat);
	img->image_size = cairn_le64(s->image_size);
	img->inode_count = cairn_le64(s->inode_count);
	img->root_ino = cairn_le64(s->root_ino);
	img->meta_off = cairn_le64(s->meta_off);
	img->meta_len = cairn_le64(s->meta_len);
	img->inode_off = cairn_le64(s->inode_off);
	img->dirent_off = cairn_le64(s->dirent_off);
	img->dirent_count = cairn_le64(s->dirent_count);
	img->xattr_off = cairn_le64(s->xattr_off);
	img->xattr_count = cairn_le64(s->xattr_count);
	img->extent_off = cairn_le64(s->extent_off);
	img->extent_count = cairn_le64(s->extent_count);
	img->blob_off = cairn_le64(s->blob_off);
	img->blob_len = cairn_le64(s->blob_len);
	img->csum_off = cairn_le64(s->csum_off);
	img->data_off = cairn_le64(s->data_off);
	img->data_len = cairn_le64(s->data_len);
	img->hot_off = cairn_le64(s->hot_off);
	img->hot_len = cairn_le64(s->hot_len);
}

/* Every check of the superblock that needs no further reads. */
static int super_check(struct cairn_image *img, uint64_t dev_size, char *why, size_t why_len)
{
	const struct cairn_disk_super *s = &img->raw;
	uint64_t csum_len;
	int zmeta;

	if (memcmp(s->magic, CAIRN_MAGIC_BYTES, 8))
		return util_not_cairn(s->magic, sizeof(*s), why, why_len);
	if (cairn_le16(s->version_major) != CAIRN_FORMAT_VERSION_MAJOR)
		return cairn_image_why(why, why_len, -EOPNOTSUPP, "unsupported format version %u.%u",
				cairn_le16(s->version_major), cairn_le16(s->version_minor));
	if (cairn_format_super_csum(s) != cairn_le64(s->super_hash))
		return BAD("superblock checksum mismatch");
	if (cairn_le32(s->block_size) != CAIRN_BLOCK_SIZE)
		return BAD("unsupported block size %u", cairn_le32(s->block_size));
	if (cairn_le32(s->inode_size) != CAIRN_INODE_SIZE)
		return BAD("unsupported inode size %u", cairn_le32(s->inode_size));
	super_decode(img, s);
	if (img->incompat & ~CAIRN_INCOMPAT_KNOWN) {
		uint32_t unk = img->incompat & ~CAIRN_INCOMPAT_KNOWN;

		return cairn_image_why(why, why_len, -EOPNOTSUPP,
				"unknown incompatible feature bit %d (incompat 0x%x)",
				__builtin_ctz(unk), img->incompat);
	}
	if (img->image_size < CAIRN_BLOCK_SIZE)
		return BAD("image size %llu is smaller than the superblock block",
			   (unsigned long long)img->image_size);
	if (img->image_size > dev_size)
		return BAD("image is truncated: %llu bytes on the device, the superblock says %llu",
			   (unsigned long long)dev_size, (unsigned long long)img->image_size);
	if (img->root_ino != CAIRN_ROOT_INO)
		return BAD("root inode is %llu, not %u", (unsigned long long)img->root_ino,
			   CAIRN_ROOT_INO);
	if (img->inode_count < 2 || img->inode_count > CAIRN_INO_MAX + 1)
		return BAD("inode count %llu out of range", (unsigned long long)img->inode_count);
	/* Compressed metadata is a logical space: not stored where it says, so it
	 * may overlap anything, and its size is bounded by the checksum table,
	 * which must lie in the image (below). */
	zmeta = img->incompat & CAIRN_INCOMPAT_META_Z;
	if (img->meta_off % CAIRN_BLOCK_SIZE || img->meta_len % CAIRN_BLOCK_SIZE ||
	    img->meta_off < CAIRN_BLOCK_SIZE || img->meta_len == 0 ||
	    !cairn_add_ok(img->meta_off, img->meta_len, zmeta ? UINT64_MAX / 2 : img->image_size))
		return BAD("metadata region %llu+%llu is not aligned or not inside the image",
			   (unsigned long long)img->meta_off, (unsigned long long)img->meta_len);
	img->meta_end = img->meta_off + img->meta_len;
	img->meta_blocks = img->meta_len / CAIRN_BLOCK_SIZE;
	if (!table_ok(img, img->inode_off, img->inode_count, CAIRN_INODE_SIZE))
		return BAD("inode table outside the metadata region");
	if (!table_ok(img, img->dirent_off, img->dirent_count, CAIRN_DIRENT_SIZE))
		return BAD("dirent table outside the metadata region");
	if (!table_ok(img, img->xattr_off, img->xattr_count, CAIRN_XATTR_SIZE))
		return BAD("xattr table outside the metadata region");
	if (!table_ok(img, img->extent_off, img->extent_count, CAIRN_EXTENT_SIZE))
		return BAD("extent table outside the metadata region");
	if (!table_ok(img, img->blob_off, img->blob_len, 1))
		return BAD("blob region outside the metadata region");
	csum_len = img->meta_blocks * 8;
	if (!cairn_add_ok(img->csum_off, csum_len, img->image_size) ||
	    (!zmeta && ranges_overlap(img->csum_off, csum_len, img->meta_off, img->meta_len)))
		return BAD("checksum table %llu+%llu outside the image or inside the metadata",
			   (unsigned long long)img->csum_off, (unsigned long long)csum_len);
	if ((img->data_len && img->data_off % CAIRN_BLOCK_SIZE) ||
	    !cairn_add_ok(img->data_off, img->data_len, img->image_size) ||
	    (!zmeta && ranges_overlap(img->data_off, img->data_len, img->meta_off, img->meta_len)) ||
	    ranges_overlap(img->data_off, img->data_len, img->csum_off, csum_len) ||
	    ranges_overlap(img->data_off, img->data_len, 0, CAIRN_BLOCK_SIZE))
		return BAD("data region %llu+%llu is not aligned, not inside the image, or overlaps metadata",
			   (unsigned long long)img->data_off, (unsigned long long)img->data_len);
	img->data_end = img->data_off + img->data_len;
	if ((img->compat & CAIRN_COMPAT_HOT_PREFIX) &&
	    (img->hot_off < img->data_off || !cairn_add_ok(img->hot_off, img->hot_len, img->data_end)))
		return BAD("hot prefix outside the data region");
	return 0;
}

/* The compression record (block 0 bytes 256..383), when the image has one. */
static int chunked_open(struct cairn_image *img, char *why, size_t why_len)
{
	struct cairn_disk_chunked_super *z = &img->zraw;
	int rc;

	if (!(img->incompat & CAIRN_INCOMPAT_CHUNKED))
		return 0;
	rc = cairn_image_dev_read(img, z, sizeof(*z), CAIRN_CHUNKED_SUPER_OFF, NULL);
	if (rc)
		return cairn_image_why(why, why_len, rc, "cannot read the compression record");
	if (cairn_format_chunked_csum(z) != cairn_le64(z->hash))
		return BAD("compression record checksum mismatch");
	img->chunk_log2 = cairn_le32(z->chunk_log2);
	if (img->chunk_log2 < CAIRN_CHUNK_LOG2_MIN || img->chunk_log2 > CAIRN_CHUNK_LOG2_MAX)
		return BAD("chunk size 2^%u outside 2^%u..2^%u", img->chunk_log2,
			   CAIRN_CHUNK_LOG2_MIN, CAIRN_CHUNK_LOG2_MAX);
	img->chunk_size = 1ull << img->chunk_log2;
	img->chunk_off = cairn_le64(z->chunk_off);
	img->chunk_count = cairn_le64(z->chunk_count);
	if (!table_ok(img, img->chunk_off, img->chunk_count, CAIRN_CHUNK_SIZE))
		return BAD("chunk table outside the metadata region");
	rc = cairn_zcache_new(0, &img->zc);
	if (rc)
		return rc;
	cairn_zcache_set_slot(img->zc, (size_t)img->chunk_size);
	return cairn_image_chunk_init(img);
}

/* A device shorter than a superblock: its first bytes say whether it is a
 * truncated image or not an image at all (a text file given by mistake). */
static int short_image(struct cairn_image *img, uint64_t dev_size, char *why, size_t why_len)
{
	int rc = dev_size ? cairn_image_dev_read(img, &img->raw, (size_t)dev_size,
						 CAIRN_SUPER_OFF, NULL) : 0;

	if (rc)
		return cairn_image_why(why, why_len, rc, "cannot read the superblock");
	return util_too_short((const uint8_t *)&img->raw, (size_t)dev_size, dev_size,
			      why, why_len);
}

int cairn_image_open(struct cairn_cache *cache, char *why, size_t why_len,
		     struct cairn_image **out)
{
	struct cairn_bdev *dev = cairn_cache_bdev(cache);
	uint64_t dev_size = dev ? cairn_bdev_size(dev) : 0;
	struct cairn_image *img;
	ssize_t n;
	int rc;

	if (why && why_len)
		why[0] = '\0';
	img = calloc(1, sizeof(*img));
	if (!img)
		return -ENOMEM;
	img->cache = cache;
	pthread_mutex_init(&img->why_lock, NULL);
	pthread_mutex_init(&img->dctx_lock, NULL);
	pthread_mutex_init(&img->stream_lock, NULL);
	/* The device size says whether the image is too short; a short read from
	 * a longer device is an IO failure, not damage (tests/test_hostile_faults). */
	if (dev_size < sizeof(img->raw)) {
		rc = short_image(img, dev_size, why, why_len);
		goto fail;
	}
	n = cairn_image_dev_read(img, &img->raw, sizeof(img->raw), CAIRN_SUPER_OFF, NULL);
	if (n < 0) {
		rc = cairn_image_why(why, why_len, (int)n, "cannot read the superblock");
		goto fail;
	}
	rc = super_check(img, dev_size, why, why_len);
	if (!rc)
		rc = chunked_open(img, why, why_len);
	if (!rc)
		rc = cairn_image_metaz_open(img, why, why_len);
	if (rc)
		goto fail;
	/* Sized by meta_len, which is bounded by the device size: 1 bit per 4 KiB. */
	img->verified = calloc((size_t)((img->meta_blocks + 63) / 64), sizeof(uint64_t));
	if (!img->verified) {
		rc = -ENOMEM;
		goto fail;
	}
	*out = img;
	return 0;
fail:
	cairn_image_chunk_fini(img);
	cairn_image_metaz_fini(img);
	cairn_zcache_free(img->zc);
	pthread_mutex_destroy(&img->stream_lock);
	pthread_mutex_destroy(&img->dctx_lock);
	pthread_mutex_destroy(&img->why_lock);
	free(img);
	return rc;
}

void cairn_image_close(struct cairn_image *img)
{
	if (!img)
		return;
	cairn_profile_free(img->profile);
	cairn_image_chunk_fini(img); /* the worker first: it reads through both caches */
	cairn_image_metaz_fini(img);
	cairn_zcache_free(img->zc);
	cairn_cache_free(img->cache);
	pthread_mutex_destroy(&img->stream_lock);
	pthread_mutex_destroy(&img->dctx_lock);
	pthread_mutex_destroy(&img->why_lock);
	free((void *)img->verified);
	free(img);
}

struct cairn_cache *cairn_image_cache(struct cairn_image *img)
{
	return img->cache;
}

int cairn_image_last_error(struct cairn_image *img, struct cairn_bdev_error *out)
{
	return cairn_bdev_last_error(cairn_cache_bdev(img->cache), out);
}

cairn_ino_t cairn_image_root(const struct cairn_image *img)
{
	return img->root_ino;
}

void cairn_image_get_info(const struct cairn_image *img, struct cairn_image_info *o)
{
	const struct cairn_disk_super *s = &img->raw;

	memset(o, 0, sizeof(*o));
	o->version_major = cairn_le16(s->version_major);
	o->version_minor = cairn_le16(s->version_minor);
	o->compat = img->compat;
	o->incompat = img->incompat;
	o->image_size = img->image_size;
	o->inode_count = img->inode_count;
	o->file_count = cairn_le64(s->file_count);
	o->data_bytes = cairn_le64(s->data_bytes);
	o->meta_off = img->meta_off;
	o->meta_len = img->meta_len;
	o->data_off = img->data_off;
	o->data_len = img->data_len;
	o->hot_off = img->hot_off;
	o->hot_len = img->hot_len;
	o->dirent_count = img->dirent_count;
	o->xattr_count = img->xattr_count;
	o->extent_count = img->extent_count;
	o->blob_len = img->blob_len;
	o->build_time = (int64_t)cairn_le64((uint64_t)s->build_time);
	memcpy(o->uuid, s->uuid, sizeof(o->uuid));
	o->meta_block_size = img->mz_log2 ? 1ull << img->mz_log2 : 0;
	o->meta_stored_len = img->mz_area_len;
	if (img->incompat & CAIRN_INCOMPAT_CHUNKED) {
		o->chunk_size = img->chunk_size;
		o->codec = cairn_le32(img->zraw.codec);
		o->level = cairn_le32(img->zraw.level);
		o->chunk_count = img->chunk_count;
		o->frag_count = cairn_le64(img->zraw.frag_count);
		o->stored_bytes = cairn_le64(img->zraw.stored_bytes);
		o->logical_bytes = cairn_le64(img->zraw.logical_bytes);
		o->hot_codec = cairn_le32(img->zraw.hot_codec);
		o->hot_level = cairn_le32(img->zraw.hot_level);
		o->hot_stored_bytes = cairn_le64(img->zraw.hot_stored_bytes);
		o->hot_logical_bytes = cairn_le64(img->zraw.hot_logical_bytes);
	}
}

void cairn_image_set_chunk_cache(struct cairn_image *img, size_t budget)
{
	if (img->zc)
		cairn_zcache_set_budget(img->zc, budget);
}

int cairn_image_chunk_cache_stats(struct cairn_image *img, struct cairn_chunk_cache_stats *o)
{
	struct cairn_zcache_stats s;

	memset(o, 0, sizeof(*o));
	if (!img->zc)
		return -ENOENT;
	cairn_zcache_get_stats(img->zc, &s);
	o->hits = s.hits;
	o->misses = s.misses;
	o->waits = s.waits;
	o->evictions = s.evictions;
	o->dropped = s.dropped;
	o->readahead = s.ahead;
	o->decompressed_bytes = s.loaded_bytes;
	o->resident_bytes = s.resident_bytes;
	o->budget_bytes = s.budget_bytes;
	o->lent_bytes = atomic_load_explicit(&img->chunk_lent, memory_order_relaxed);
	return 0;
}
