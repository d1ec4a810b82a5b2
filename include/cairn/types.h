/* SPDX-License-Identifier: MIT */
/*
 * The vocabulary every tree shares (image, RAM fs, namespace): inode numbers,
 * attributes and directory entries. Kept apart from the layers, so a layer that
 * knows nothing of images (the RAM fs) needs no image header.
 */
#ifndef CAIRN_TYPES_H
#define CAIRN_TYPES_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdint.h>

/* Bytes in a name, in every tree (image, RAM fs, ns); longer: -ENAMETOOLONG. */
#define CAIRN_NAME_MAX 255u

typedef uint64_t cairn_ino_t;

struct cairn_time { int64_t sec; uint32_t nsec; };

/* Attributes shared by every tree (image, RAM fs, namespace). */
struct cairn_stat {
	cairn_ino_t ino;
	uint32_t mode;          /* st_mode */
	uint32_t nlink;
	uint32_t uid, gid;
	uint64_t size;
	uint64_t blocks;        /* 512-byte units */
	uint64_t rdev;
	struct cairn_time atime, mtime, ctime;
};

/* readdir callback: return nonzero to stop. `next` is the cookie that resumes
 * after this entry. Cookies are stable: 1 = ".", 2 = "..", 3 + i = entry i. */
typedef int (*cairn_dirent_cb)(void *ctx, const char *name, size_t name_len,
			       cairn_ino_t ino, unsigned dtype, uint64_t next);

/* A reader that takes bytes lent in place (cairn_ramfs_read_iov,
 * cairn_cache_read_pinned): iovcnt entries of total bytes, valid only during
 * the call; its return value is the read's. */
struct iovec;
typedef int (*cairn_iov_fn)(void *ctx, const struct iovec *iov, int iovcnt, size_t total);

/* One entry of a directory read whole (cairn_image_readdir_alloc,
 * cairn_ramfs_readdir_alloc). */
struct cairn_dirent {
	const char *name;       /* NUL-terminated, in the same allocation */
	size_t name_len;
	cairn_ino_t ino;
	unsigned dtype;         /* DT_* */
	uint64_t next;          /* the cookie that resumes after this entry */
};

#ifdef __cplusplus
}
#endif

#endif
