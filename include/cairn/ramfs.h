/* SPDX-License-Identifier: MIT */
/*
 * Layer 4: the RAM filesystem, a writable in-memory tree (what /tmp, /var/log and
 * the overlay's upper layer are made of). Same object model and error convention
 * as the image reader: inode numbers, struct cairn_stat, readdir cookies, negative
 * errno. File data lives in fixed-size chunks; a missing chunk is a hole. It
 * knows nothing of images: seeding a RAM tree from one is the namespace's (ns.h).
 *
 * Lifetime: an inode is freed when its nlink is 0, it has no open handles
 * (cairn_ramfs_open/release) and its lookup count is 0. Calls that return an
 * entry (lookup, create, mkdir, mknod, symlink, link) add one lookup reference,
 * which cairn_ramfs_forget() drops, exactly as FUSE lookup counts work. In-process
 * callers that keep no handle simply forget the entry right away.
 *
 * Every call taking an inode number requires the caller to hold a reference on it
 * (a lookup reference or an open handle), as the FUSE kernel does; an unknown or
 * freed number gives -ENOENT. Inode numbers are never 0; the root is 1 and is never
 * freed. A freed number may be reused once nothing refers to it any more.
 *
 * Credentials (struct cairn_cred *) may be NULL, which means root. The library does
 * not check permissions (the kernel does, with default_permissions); it applies the
 * ownership rules: group inherited from setgid directories, setuid/setgid cleared on
 * write and truncate by non-root, and on chown of a non-directory.
 *
 * Thread-safe. Readers of different files never wait on each other.
 * Ownership: cairn_ramfs_new() returns an object the caller frees with
 * cairn_ramfs_free(), which releases every inode and chunk.
 */
#ifndef CAIRN_RAMFS_H
#define CAIRN_RAMFS_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <cairn/types.h>

struct cairn_ramfs;

#define CAIRN_RAMFS_SYMLINK_MAX 4095       /* bytes in a symlink target */
#define CAIRN_RAMFS_DEFAULT_CHUNK 4096

/* cfg may be NULL for all defaults. */
struct cairn_ramfs_config {
	uint64_t size_limit;    /* bytes of data + xattrs; 0 = unlimited (like tmpfs size=) */
	uint64_t inode_limit;   /* inodes including the root; 0 = unlimited (nr_inodes=) */
	size_t chunk_size;      /* power of two, 4096 .. 1 MiB; 0 = CAIRN_RAMFS_DEFAULT_CHUNK */
	uint32_t root_mode;     /* permission bits of /, 0 = 01777 */
	uint32_t root_uid, root_gid;
	/* Freed chunks kept resident for reuse, so files that come and go (or are
	 * truncated and regrown) do not pay for fresh pages again: bytes, 0 =
	 * default (16 MiB), CAIRN_RAMFS_NO_POOL = none. Freed chunks beyond it give
	 * their pages back at once (MADV_DONTNEED). Pooled chunks do not count against
	 * size_limit. Chunk memory comes from 2 MiB huge-page slabs. */
	uint64_t pool_bytes;
};
#define CAIRN_RAMFS_DEFAULT_POOL (16u << 20)
#define CAIRN_RAMFS_NO_POOL UINT64_MAX

/* Who is asking: used for ownership of new objects (setgid dirs) and for
 * clearing setuid/setgid on write and chown. umask applies to the mode of a new
 * object unless its directory has a default ACL, which it then inherits (the
 * FUSE front end asks the kernel to leave the umask to it). A NULL cred is root
 * making an exact copy (copy-up, seeding): no umask, nothing inherited. */
struct cairn_cred { uint32_t uid, gid, umask; };

/* setattr: which fields of struct cairn_setattr apply. MODE keeps the file type
 * and sets the 07777 bits. UID/GID on a non-directory also clear setuid (and setgid
 * when group-executable) unless MODE is given in the same call. SIZE truncates or
 * extends a regular file (-EISDIR on a directory, -EINVAL on other types).
 * *_NOW set the time to now (UTIME_NOW); a time whose flag is absent is left alone
 * (UTIME_OMIT). ctime becomes now on any change unless CTIME gives it explicitly.
 * CHOWN is a chown naming neither owner nor group (chown(f, -1, -1)): as on tmpfs,
 * ctime now and setuid/setgid cleared as by UID/GID, the ids left alone. */
#define CAIRN_SET_MODE   (1u << 0)
#define CAIRN_SET_UID    (1u << 1)
#define CAIRN_SET_GID    (1u << 2)
#define CAIRN_SET_SIZE   (1u << 3)
#define CAIRN_SET_ATIME  (1u << 4)
#define CAIRN_SET_MTIME  (1u << 5)
#define CAIRN_SET_ATIME_NOW (1u << 6)
#define CAIRN_SET_MTIME_NOW (1u << 7)
#define CAIRN_SET_CTIME  (1u << 8)
#define CAIRN_SET_CHOWN  (1u << 9)
struct cairn_setattr {
	unsigned valid;
	uint32_t mode, uid, gid;
	uint64_t size;
	struct cairn_time atime, mtime, ctime;
};

/* Limits as configured; without a size limit, blocks = used + available RAM. */
struct cairn_statfs {
	uint64_t block_size;            /* bytes per block below (the chunk size) */
	uint64_t blocks, blocks_free;
	uint64_t files, files_free;
	uint32_t name_max;
};

int cairn_ramfs_new(const struct cairn_ramfs_config *cfg, struct cairn_ramfs **out);
void cairn_ramfs_free(struct cairn_ramfs *fs);
cairn_ino_t cairn_ramfs_root(const struct cairn_ramfs *fs);

/* Entry-returning calls fill *st and take one lookup reference on st->ino.
 * Names are bytes without '/' or NUL (-EINVAL), 1..CAIRN_NAME_MAX long (-ENAMETOOLONG).
 * lookup accepts "." and ".."; creating either gives -EEXIST. */
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
/* A regular file without a name (O_TMPFILE), made as a file in dir would be
 * (owner, setgid, default ACL, umask): nlink 0 and one lookup reference, so it
 * goes when forgotten and released, unless cairn_ramfs_link names it first. */
int cairn_ramfs_tmpfile(struct cairn_ramfs *fs, cairn_ino_t dir, uint32_t mode,
			const struct cairn_cred *cred, struct cairn_stat *st);
/* Also names an inode from cairn_ramfs_tmpfile; other inodes with nlink 0 -ENOENT. */
int cairn_ramfs_link(struct cairn_ramfs *fs, cairn_ino_t ino, cairn_ino_t newdir,
		     const char *name, size_t len, struct cairn_stat *st);
int cairn_ramfs_unlink(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name, size_t len);
int cairn_ramfs_rmdir(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name, size_t len);
/* flags: 0, RENAME_NOREPLACE or RENAME_EXCHANGE (others -EINVAL). */
int cairn_ramfs_rename(struct cairn_ramfs *fs, cairn_ino_t olddir, const char *oldname,
		       size_t oldlen, cairn_ino_t newdir, const char *newname, size_t newlen,
		       unsigned flags);
/* A '/'-separated path from the root (leading '/' optional). Symlinks inside the
 * path are followed (at most 40, then -ELOOP), the last one too when `follow` is
 * set. Takes one lookup reference on *out, which the caller forgets. */
int cairn_ramfs_resolve(struct cairn_ramfs *fs, const char *path, int follow,
			cairn_ino_t *out);
/* symlink target into buf (not NUL-terminated); its length, -ERANGE when buf is
 * too small, -EINVAL when ino is not a symlink. */
ssize_t cairn_ramfs_readlink(struct cairn_ramfs *fs, cairn_ino_t ino, char *buf, size_t len);
/* readdir: cookie 0 starts at ".", then "..", then the entries in creation order.
 * An entry's `next` cookie stays valid while other entries are added and removed
 * (entries carry per-directory increasing ids). cb is called with no lock held, so
 * it may call back into the fs (e.g. cairn_ramfs_lookup for readdirplus). */
int cairn_ramfs_readdir(struct cairn_ramfs *fs, cairn_ino_t dir, uint64_t cookie,
			cairn_dirent_cb cb, void *ctx);
/* The entries from cookie on, but "." and "..", at most max of them (0 = all), in
 * one allocation: *out (the caller frees it; NULL when there are none) and their
 * count, or a negative errno. For callers that change the tree while walking it. */
ssize_t cairn_ramfs_readdir_alloc(struct cairn_ramfs *fs, cairn_ino_t dir, uint64_t cookie,
				  size_t max, struct cairn_dirent **out);

/* Open handles keep an unlinked inode alive (any type; each open needs a release). */
int cairn_ramfs_open(struct cairn_ramfs *fs, cairn_ino_t ino);
void cairn_ramfs_release(struct cairn_ramfs *fs, cairn_ino_t ino);
/* Bytes read (0 at or past EOF; holes read as zeros); -EISDIR on a directory,
 * -EINVAL on other non-regular files. Updates atime relatime-style. */
ssize_t cairn_ramfs_read(struct cairn_ramfs *fs, cairn_ino_t ino, void *buf, size_t len,
			 uint64_t off);
/* Zero-copy read: calls fn with iovecs that point into the file's chunks (holes
 * point at a shared zero page) while the file is read-locked; fn's return value is
 * returned. Used by FUSE to reply straight from chunks. */
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
/* SEEK_DATA / SEEK_HOLE (data granularity is one chunk); -ENXIO at or past the
 * end; other whence values -EINVAL. Offsets are uint64_t here as in every
 * cairn call (a negative off_t becomes one past any end: -ENXIO, as lseek(2)). */
int64_t cairn_ramfs_lseek(struct cairn_ramfs *fs, cairn_ino_t ino, uint64_t off, int whence);
int cairn_ramfs_statfs(struct cairn_ramfs *fs, struct cairn_statfs *out);

/* Namespaces user., trusted., security., and the POSIX ACLs system.posix_acl_access
 * and system.posix_acl_default (others -EOPNOTSUPP; user. on anything but files and
 * directories -EPERM; ACLs on symlinks -EOPNOTSUPP, a default ACL on a
 * non-directory -EACCES, a malformed ACL -EINVAL). ACLs and the mode stay in step
 * as on tmpfs: an access ACL sets the permission bits (group = its mask) and is not
 * stored when the mode says it all; chmod sets the ACL's owner, mask and other
 * entries. The kernel enforces them. flags: 0, XATTR_CREATE (-EEXIST) or XATTR_REPLACE
 * (-ENODATA). get/list: size 0 returns the size needed, a small buffer -ERANGE.
 * Name and value bytes count against size_limit (-ENOSPC). */
int cairn_ramfs_setxattr(struct cairn_ramfs *fs, cairn_ino_t ino, const char *name,
			 const void *value, size_t size, int flags);
ssize_t cairn_ramfs_getxattr(struct cairn_ramfs *fs, cairn_ino_t ino, const char *name,
			     void *buf, size_t size);
ssize_t cairn_ramfs_listxattr(struct cairn_ramfs *fs, cairn_ino_t ino, char *buf, size_t size);
int cairn_ramfs_removexattr(struct cairn_ramfs *fs, cairn_ino_t ino, const char *name);

/* Memory accounting for benchmarks: bytes of chunk data and of bookkeeping
 * (inodes, names, directory indexes, chunk-tree nodes, xattrs, symlink targets).
 * bytes_copied counts stored file data ever moved to grow a file: it stays 0. */
struct cairn_ramfs_usage {
	uint64_t data_bytes, meta_bytes, inodes, chunks, bytes_copied;
	uint64_t pool_bytes;    /* freed chunks held for reuse (not in data_bytes) */
};
void cairn_ramfs_usage(struct cairn_ramfs *fs, struct cairn_ramfs_usage *out);

#ifdef __cplusplus
}
#endif

#endif
