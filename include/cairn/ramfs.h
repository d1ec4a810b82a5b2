/* SPDX-License-Identifier: MIT */
/*
 * Layer 4: the RAM filesystem, a writable in-memory tree (what /tmp, /var/log and
 * the overlay's upper layer are made of). Same object model and error convention
 * as the image reader: inode numbers, struct cairn_stat, readdir cookies, negative
 * errno. File data lives in fixed-size chunks; a missing chunk is a hole.
 *
 * Lifetime: an inode is freed when its nlink is 0, it has no open handles
 * (cairn_ramfs_open/release) and its lookup count is 0. Calls that return an
 * entry (lookup, create, mkdir, mknod, symlink, link) add one lookup reference,
 * which cairn_ramfs_forget() drops, exactly as FUSE lookup counts work. In-process
 * callers that keep no handle simply forget the entry right away.
 *
 * Thread-safe. Readers of different files never wait on each other.
 * Ownership: cairn_ramfs_new() returns an object the caller frees with
 * cairn_ramfs_free(), which releases every inode and chunk.
 */
#ifndef CAIRN_RAMFS_H
#define CAIRN_RAMFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <cairn/image.h>

struct cairn_ramfs;

struct cairn_ramfs_config {
	uint64_t size_limit;    /* bytes of data + xattrs; 0 = unlimited (like tmpfs size=) */
	uint64_t inode_limit;   /* 0 = unlimited (nr_inodes=) */
	size_t chunk_size;      /* power of two, >= 4096; 0 = default */
	uint32_t root_mode;     /* permission bits of /, 0 = 01777 */
	uint32_t root_uid, root_gid;
};

/* Who is asking: used for ownership of new objects (setgid dirs) and for
 * clearing setuid/setgid on write and chown. */
struct cairn_cred { uint32_t uid, gid; };

/* setattr: which fields of struct cairn_setattr apply. */
#define CAIRN_SET_MODE   (1u << 0)
#define CAIRN_SET_UID    (1u << 1)
#define CAIRN_SET_GID    (1u << 2)
#define CAIRN_SET_SIZE   (1u << 3)
#define CAIRN_SET_ATIME  (1u << 4)
#define CAIRN_SET_MTIME  (1u << 5)
#define CAIRN_SET_ATIME_NOW (1u << 6)
#define CAIRN_SET_MTIME_NOW (1u << 7)
#define CAIRN_SET_CTIME  (1u << 8)
struct cairn_setattr {
	unsigned valid;
	uint32_t mode, uid, gid;
	uint64_t size;
	struct cairn_time atime, mtime, ctime;
};

struct cairn_statfs {
	uint64_t block_size;            /* bytes per block below */
	uint64_t blocks, blocks_free;
	uint64_t files, files_free;
	uint32_t name_max;
};

int cairn_ramfs_new(const struct cairn_ramfs_config *cfg, struct cairn_ramfs **out);
void cairn_ramfs_free(struct cairn_ramfs *fs);
cairn_ino_t cairn_ramfs_root(const struct cairn_ramfs *fs);

/* Entry-returning calls fill *st and take one lookup reference on st->ino. */
int cairn_ramfs_lookup(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name, size_t len,
		       struct cairn_stat *st);
void cairn_ramfs_forget(struct cairn_ramfs *fs, cairn_ino_t ino, uint64_t nlookup);
int cairn_ramfs_getattr(struct cairn_ramfs *fs, cairn_ino_t ino, struct cairn_stat *st);
int cairn_ramfs_setattr(struct cairn_ramfs *fs, cairn_ino_t ino, const struct cairn_setattr *sa,
			const struct cairn_cred *cred, struct cairn_stat *st);
/* Any non-directory type: S_IFREG, S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK in mode. */
int cairn_ramfs_mknod(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name, size_t len,
		      uint32_t mode, uint64_t rdev, const struct cairn_cred *cred,
		      struct cairn_stat *st);
int cairn_ramfs_mkdir(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name, size_t len,
		      uint32_t mode, const struct cairn_cred *cred, struct cairn_stat *st);
int cairn_ramfs_symlink(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name, size_t len,
			const char *target, const struct cairn_cred *cred, struct cairn_stat *st);
int cairn_ramfs_link(struct cairn_ramfs *fs, cairn_ino_t ino, cairn_ino_t newdir,
		     const char *name, size_t len, struct cairn_stat *st);
int cairn_ramfs_unlink(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name, size_t len);
int cairn_ramfs_rmdir(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name, size_t len);
/* flags: 0, RENAME_NOREPLACE or RENAME_EXCHANGE (others -EINVAL). */
int cairn_ramfs_rename(struct cairn_ramfs *fs, cairn_ino_t olddir, const char *oldname,
		       size_t oldlen, cairn_ino_t newdir, const char *newname, size_t newlen,
		       unsigned flags);
ssize_t cairn_ramfs_readlink(struct cairn_ramfs *fs, cairn_ino_t ino, char *buf, size_t len);
int cairn_ramfs_readdir(struct cairn_ramfs *fs, cairn_ino_t dir, uint64_t cookie,
			cairn_dirent_cb cb, void *ctx);

/* Open handles keep an unlinked inode alive. */
int cairn_ramfs_open(struct cairn_ramfs *fs, cairn_ino_t ino);
void cairn_ramfs_release(struct cairn_ramfs *fs, cairn_ino_t ino);
ssize_t cairn_ramfs_read(struct cairn_ramfs *fs, cairn_ino_t ino, void *buf, size_t len,
			 uint64_t off);
/* Zero-copy read: calls fn with iovecs that point into the file's chunks (holes
 * point at a shared zero page) while the file is read-locked; fn's return value is
 * returned. Used by FUSE to reply straight from chunks. */
typedef int (*cairn_iov_fn)(void *ctx, const struct iovec *iov, int iovcnt, size_t total);
int cairn_ramfs_read_iov(struct cairn_ramfs *fs, cairn_ino_t ino, size_t len, uint64_t off,
			 cairn_iov_fn fn, void *ctx);
/* append: write at end of file atomically (O_APPEND); `off` is ignored then.
 * Returns bytes written: short when the space limit is reached, -ENOSPC when
 * nothing fits. Clears setuid (and setgid if group-exec) unless cred is root. */
ssize_t cairn_ramfs_write(struct cairn_ramfs *fs, cairn_ino_t ino, const void *buf, size_t len,
			  uint64_t off, int append, const struct cairn_cred *cred);
/* mode: 0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE; others -EOPNOTSUPP. */
int cairn_ramfs_fallocate(struct cairn_ramfs *fs, cairn_ino_t ino, int mode, uint64_t off,
			  uint64_t len);
/* SEEK_DATA / SEEK_HOLE; -ENXIO past the end. */
int64_t cairn_ramfs_lseek(struct cairn_ramfs *fs, cairn_ino_t ino, int64_t off, int whence);
int cairn_ramfs_statfs(struct cairn_ramfs *fs, struct cairn_statfs *out);

/* flags: 0, XATTR_CREATE or XATTR_REPLACE. */
int cairn_ramfs_setxattr(struct cairn_ramfs *fs, cairn_ino_t ino, const char *name,
			 const void *value, size_t size, int flags);
ssize_t cairn_ramfs_getxattr(struct cairn_ramfs *fs, cairn_ino_t ino, const char *name,
			     void *buf, size_t size);
ssize_t cairn_ramfs_listxattr(struct cairn_ramfs *fs, cairn_ino_t ino, char *buf, size_t size);
int cairn_ramfs_removexattr(struct cairn_ramfs *fs, cairn_ino_t ino, const char *name);

/* Memory accounting for benchmarks: bytes of chunk data and of bookkeeping. */
struct cairn_ramfs_usage { uint64_t data_bytes, meta_bytes, inodes, chunks, bytes_copied; };
void cairn_ramfs_usage(struct cairn_ramfs *fs, struct cairn_ramfs_usage *out);

#endif
