/* SPDX-License-Identifier: MIT */
/*
 * Layer 3: the image reader. Opens a cairn image from a bdev, reading only the
 * superblock (open cost does not grow with the file count). All calls are
 * thread-safe and return negative errno values; a corrupt image gives
 * -CAIRN_ECORRUPT. Every metadata block is checked against its checksum the first
 * time it is used.
 *
 * Ownership: cairn_image_open() takes the cache on success (freed by
 * cairn_image_close()); on failure the caller keeps it.
 */
#ifndef CAIRN_IMAGE_H
#define CAIRN_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <cairn/bdev.h>
#include <cairn/cache.h>
#include <cairn/remote.h>

struct cairn_image;
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

/* Summary of an image for `cairn info`. */
struct cairn_image_info {
	uint16_t version_major, version_minor;
	uint32_t compat, incompat;
	uint64_t image_size, inode_count, file_count, data_bytes;
	uint64_t meta_off, meta_len, data_off, data_len, hot_off, hot_len;
	uint64_t dirent_count, xattr_count, extent_count, blob_len;
	int64_t build_time;
	uint8_t uuid[16];
};

/* readdir callback: return nonzero to stop. `next` is the cookie that resumes
 * after this entry. Cookies are stable: 1 = ".", 2 = "..", 3 + i = entry i. */
typedef int (*cairn_dirent_cb)(void *ctx, const char *name, size_t name_len,
			       cairn_ino_t ino, unsigned dtype, uint64_t next);

int cairn_image_open(struct cairn_cache *cache, struct cairn_image **out);
/* As cairn_image_open(); on failure also writes a one-line reason ("bad superblock
 * checksum") into why, when why is not NULL. */
int cairn_image_open_ex(struct cairn_cache *cache, char *why, size_t why_len,
			struct cairn_image **out);
/* The first corruption this image met since it was opened ("dirent 12: name
 * contains '/'"), or NULL. Stays valid until close. */
const char *cairn_image_corruption(struct cairn_image *img);
void cairn_image_close(struct cairn_image *img);
struct cairn_cache *cairn_image_cache(struct cairn_image *img); /* not owned */
void cairn_image_get_info(const struct cairn_image *img, struct cairn_image_info *out);
cairn_ino_t cairn_image_root(const struct cairn_image *img);

int cairn_image_stat(struct cairn_image *img, cairn_ino_t ino, struct cairn_stat *st);
/* One name in a directory (binary search). -ENOENT, -ENOTDIR. */
int cairn_image_lookup(struct cairn_image *img, cairn_ino_t dir, const char *name,
		       size_t name_len, cairn_ino_t *out);
/* A '/'-separated path from the root. Symlinks inside the path are followed
 * (at most 40, then -ELOOP); the last one too when `follow` is set. */
int cairn_image_resolve(struct cairn_image *img, const char *path, int follow,
			cairn_ino_t *out);
int cairn_image_readdir(struct cairn_image *img, cairn_ino_t dir, uint64_t cookie,
			cairn_dirent_cb cb, void *ctx);
/* Regular files: bytes read (0 at or past EOF). Holes read as zeros. */
ssize_t cairn_image_read(struct cairn_image *img, cairn_ino_t ino, void *buf, size_t len,
			 uint64_t off);
/* SEEK_DATA / SEEK_HOLE over a regular file, as lseek(2): the first data byte at
 * or after off, or the first hole byte (end of file counts as a hole). -ENXIO
 * when off is at or past the end (or no data follows, for SEEK_DATA). */
int64_t cairn_image_lseek(struct cairn_image *img, cairn_ino_t ino, uint64_t off, int whence);
/* Symlink target into buf (not NUL-terminated); returns its length, or -ERANGE
 * when buf is too small. */
ssize_t cairn_image_readlink(struct cairn_image *img, cairn_ino_t ino, char *buf, size_t len);
/* size 0 asks for the size. -ENODATA when absent, -ERANGE when buf is too small. */
ssize_t cairn_image_getxattr(struct cairn_image *img, cairn_ino_t ino, const char *name,
			     void *buf, size_t size);
/* NUL-separated names, as listxattr(2). */
ssize_t cairn_image_listxattr(struct cairn_image *img, cairn_ino_t ino, char *buf, size_t size);
/* All the names at once: *names (malloc'd, the caller frees it; NULL when there
 * are none) and their length, or a negative errno. */
ssize_t cairn_image_listxattr_alloc(struct cairn_image *img, cairn_ino_t ino, char **names);
/* The device byte range holding a file's data (for cache hints, prefetch, tracing):
 * lo == hi when it has none on the data region (empty, inline). */
int cairn_image_file_extent(struct cairn_image *img, cairn_ino_t ino, uint64_t *lo, uint64_t *hi);
/* Start reading the hot prefix (mkfs --order) in the background. */
void cairn_image_prefetch_hot(struct cairn_image *img);
/* Calls fn(ctx, file_off, dev_off, len) for each byte range of regular file ino
 * whose data lies in the hot prefix, in device order, which for an ordered image
 * is the order a traced workload first read them; ranges that follow each other in
 * both the file and the device are merged. Stops early and returns fn's value when
 * it is non-zero; 0 when done or when the image has no hot prefix. For pushing a
 * file's hot pages into a page cache ahead of use. */
typedef int (*cairn_range_cb)(void *ctx, uint64_t file_off, uint64_t dev_off, uint64_t len);
int cairn_image_hot_ranges(struct cairn_image *img, cairn_ino_t ino, cairn_range_cb fn,
			   void *ctx);

/* fsck: checks every structure and checksum and, with CAIRN_FSCK_DATA, every file's
 * content hash. Problems are reported through `report` (may be NULL); returns the
 * number of problems found (0 = clean) or a negative errno if checking could not run. */
#define CAIRN_FSCK_DATA 1u
typedef void (*cairn_report_cb)(void *ctx, const char *msg);
long cairn_image_fsck(struct cairn_image *img, unsigned flags, cairn_report_cb report, void *ctx);

/* How a URL is opened (include/cairn/remote.h). The stack builder fills
 * http.origins from the URL and the mirrors (s3:// ones resolved with s3), and
 * http.head_bytes from the cache's segment size when it is 0. */
struct cairn_remote_opts {
	struct cairn_http_config http;
	const char *mirrors[CAIRN_HTTP_MAX_ORIGINS - 1]; /* -o mirror=URL, in order */
	unsigned n_mirrors;
	struct cairn_s3_config s3;
	const char *cache_dir;                   /* NULL = no disk cache */
	uint64_t cache_max;                      /* 0 = 1 GiB */
	size_t cache_chunk;                      /* 0 = 128 KiB */
};

/*
 * Convenience: build the stack file -> [offset] -> [qcow2] -> [fault] -> [delay]
 * -> stats -> cache -> image from options, as the CLI and the mount do. A path
 * that is an http://, https:// or s3:// URL gets
 * http -> [offset] -> [fault] -> [delay] -> stats -> [diskcache] -> cache -> image.
 */
struct cairn_open_opts {
	struct cairn_cache_config cache;
	struct cairn_delay_config delay;
	const struct cairn_fault_config *fault; /* NULL = none */
	uint64_t offset;                         /* image starts here in the file */
	unsigned file_flags;                     /* CAIRN_BDEV_FILE_* */
	struct cairn_qcow2_config qcow2;
	struct cairn_remote_opts remote;
};
int cairn_image_open_path(const char *path, const struct cairn_open_opts *opts,
			  struct cairn_image **out);
/* As cairn_image_open_path(), with a one-line reason on failure (see open_ex). */
int cairn_image_open_path_ex(const char *path, const struct cairn_open_opts *opts,
			     char *why, size_t why_len, struct cairn_image **out);
/* Counters of the stats device in an image opened by cairn_image_open_path();
 * -ENOENT when the stack has none. */
int cairn_image_device_counters(struct cairn_image *img, struct cairn_bdev_counters *out);
/* The fault device of such a stack, or NULL. */
struct cairn_bdev *cairn_image_fault_dev(struct cairn_image *img);

#endif
