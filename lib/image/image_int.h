/* SPDX-License-Identifier: MIT */
/*
 * Reader internals shared by reader.c (lookups and reads), fsck.c (the full
 * check) and open.c (building the device stack). Not a public header.
 */
#ifndef CAIRN_IMAGE_INT_H
#define CAIRN_IMAGE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <cairn/format.h>
#include <cairn/image.h>

/* The superblock fields in host byte order, already checked for bounds. */
struct cairn_image {
	struct cairn_cache *cache;       /* owned */
	struct cairn_bdev *stats_dev;    /* inside the cache's stack, not owned; may be NULL */
	struct cairn_bdev *fault_dev;    /* same */
	struct cairn_disk_super raw;     /* the superblock bytes as read */
	uint32_t compat, incompat, ro_compat;
	uint64_t image_size, inode_count, root_ino;
	uint64_t meta_off, meta_len, meta_end;
	uint64_t inode_off, dirent_off, dirent_count, xattr_off, xattr_count;
	uint64_t extent_off, extent_count, blob_off, blob_len, csum_off;
	uint64_t data_off, data_len, data_end, hot_off, hot_len;
	uint64_t meta_blocks;            /* meta_len / 4096 */
	_Atomic uint64_t *verified;      /* one bit per metadata block, set once checked */
	/* The first corruption met since open, for error messages. Written once under
	 * the lock, then published by setting `has_why`. */
	pthread_mutex_t why_lock;
	atomic_int has_why;
	char why[192];
	struct cairn_profile *profile;   /* owned; NULL unless one was loaded (profile.c) */
	int keep_hot;                    /* prefetch_hot ran: hot data outlives delivery */
};

/* An inode in host byte order, checked by inode_load() for every bound that can
 * be checked without reading further structures. */
struct cairn_rinode {
	uint32_t mode, flags, nlink, uid, gid, parent, xattr_count;
	uint64_t size, xattr_ref, data_ref, data_count, content_hash, alloc_blocks;
	struct cairn_time atime, mtime, ctime;
};

struct cairn_rdirent {
	uint64_t name_ref;
	uint32_t ino;
	uint8_t name_len, type;
	char name[CAIRN_NAME_MAX + 1]; /* NUL-terminated copy */
};

struct cairn_rxattr {
	uint64_t name_ref, value_ref;
	uint32_t value_len;
	uint8_t name_len;
};

/* Records a corruption reason (the first one wins) and returns -CAIRN_ECORRUPT. */
int cairn_image_corrupt(struct cairn_image *img, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Reads [off, off+len) of the metadata region, verifying each block's checksum on
 * first use. Out-of-region ranges are corruption. */
int cairn_image_meta_read(struct cairn_image *img, void *buf, size_t len, uint64_t off);
/* Reads len bytes at a device offset through the cache, exactly. */
int cairn_image_dev_read(struct cairn_image *img, void *buf, size_t len, uint64_t off,
			 const struct cairn_cache_hint *hint);
int cairn_image_inode_load(struct cairn_image *img, cairn_ino_t ino, struct cairn_rinode *out);
int cairn_image_dirent_load(struct cairn_image *img, uint64_t idx, struct cairn_rdirent *out);
int cairn_image_xattr_load(struct cairn_image *img, uint64_t idx, struct cairn_rxattr *out);
int cairn_image_extent_load(struct cairn_image *img, uint64_t idx, const struct cairn_rinode *ino,
			    struct cairn_disk_extent *out);
/* Verifies metadata block b (index in the region) now, whether or not it was before. */
int cairn_image_verify_block(struct cairn_image *img, uint64_t b);

/* Calls fn(ctx, file_off, disk_off, len) for each piece of [off, off+len) of
 * regular file r (inode ino) stored on the device, in file order; holes and
 * inline data have none. Stops at and returns fn's first non-zero value. */
int cairn_image_map(struct cairn_image *img, cairn_ino_t ino, const struct cairn_rinode *r,
		    uint64_t off, uint64_t len, cairn_range_cb fn, void *ctx);

/* profile.c: the ranges of a learned profile, in place of the hot prefix. */
void cairn_profile_free(struct cairn_profile *p);
uint64_t cairn_profile_bytes(const struct cairn_profile *p);
void cairn_profile_prefetch(struct cairn_image *img, struct cairn_profile *p);
int cairn_profile_ranges(struct cairn_profile *p, cairn_ino_t ino, cairn_range_cb fn,
			 void *ctx);
int cairn_profile_has(const struct cairn_profile *p, cairn_ino_t ino); /* hot ranges? */

static inline int cairn_add_ok(uint64_t a, uint64_t b, uint64_t limit)
{
	return a <= limit && b <= limit - a;
}

#endif
