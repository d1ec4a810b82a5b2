/* SPDX-License-Identifier: MIT */
/*
 * RAM fs internals shared by lib/ramfs/ sources.
 *
 * Locking (always taken in this order, never the reverse):
 *   fs->ns_lock      rwlock over the namespace: directory contents, dir->parent,
 *                    nlink changes. Lookups and readdir read-lock it, everything
 *                    that adds, removes or moves a name write-locks it.
 *   inode->lock      rwlock over one inode's attributes, data and xattrs. Read and
 *                    write take only this (the ino -> inode table is read without
 *                    a lock), so readers of different files never meet. At most
 *                    one inode lock is held at a time.
 *   fs->table_lock   mutex over changes to the ino -> inode table and its free
 *                    list. Readers load slots atomically: pages of slots never
 *                    move, and a grown page directory is published atomically
 *                    (old ones are kept until the fs is freed).
 * Counters (space, inodes, meta bytes) are atomics and need no lock.
 *
 * Lifetime: inode->refs = names (dirents pointing at it) + open handles + lookup
 * references. The inode is destroyed when refs drops to 0, which is exactly "nlink
 * == 0 && open == 0 && lookup == 0" (a directory has one name but nlink 2+).
 */
#ifndef CAIRN_RAMFS_INTERNAL_H
#define CAIRN_RAMFS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <cairn/ramfs.h>

/* Directory size as tmpfs reports it: 20 bogus bytes per entry incl. "." "..". */
#define RAMFS_BOGO_DIRENT 20
/* Largest file size (as tmpfs: MAX_LFS_FILESIZE). */
#define RAMFS_MAX_FILE ((uint64_t)INT64_MAX)

/* Chunk tree: a radix tree of 64-way nodes over chunk indices. Height 0 keeps
 * chunk 0 directly in root, so a small file costs no node at all. */
#define RT_SHIFT 6
#define RT_FAN (1u << RT_SHIFT)
struct rt_node { void *slot[RT_FAN]; };
struct ramfs_tree { void *root; unsigned height; };

struct ramfs_inode;

/* The inode table: fixed pages of slots under a directory that is replaced
 * (never changed in place) when it grows. */
#define TABLE_PAGE_SHIFT 10
#define TABLE_PAGE (1u << TABLE_PAGE_SHIFT)
struct ramfs_tpage { _Atomic uintptr_t slot[TABLE_PAGE]; };
struct ramfs_tdir {
	struct ramfs_tdir *retired;     /* the directory this one replaced */
	uint64_t npages;
	_Atomic(struct ramfs_tpage *) page[];
};

struct ramfs_dirent {
	struct ramfs_dirent *hnext;     /* hash chain */
	struct ramfs_inode *node;
	uint64_t id;                    /* per-directory, increasing: the readdir cookie */
	uint64_t hash;
	uint32_t pos;                   /* index in dir->order */
	uint16_t len;
	char name[];
};

/* One slot of the creation-ordered entry list; de == NULL once removed. */
struct ramfs_order { uint64_t id; struct ramfs_dirent *de; };

struct ramfs_dir {
	struct ramfs_dirent **buckets;  /* NULL while empty */
	uint32_t nbuckets, count;
	struct ramfs_order *order;      /* ids strictly increasing */
	uint32_t norder, order_cap;
	uint64_t next_id;
	struct ramfs_inode *parent;     /* NULL once removed; root's parent is root */
};

struct ramfs_xattr {
	struct ramfs_xattr *next;
	uint32_t name_len, value_len;
	char data[];                    /* name, NUL, value */
};

struct ramfs_inode {
	pthread_rwlock_t lock;
	atomic_uint_fast64_t refs;
	cairn_ino_t ino;
	uint32_t type;                  /* mode & S_IFMT, never changes: read without locks */
	uint32_t mode, nlink, uid, gid;
	uint64_t size, rdev;
	uint64_t nchunks;               /* allocated chunks (st_blocks) */
	bool linkable;                  /* O_TMPFILE: nlink 0, yet link() may name it */
	struct cairn_time atime, mtime, ctime;
	struct ramfs_xattr *xattrs;
	union {
		struct ramfs_tree data; /* S_IFREG */
		struct ramfs_dir dir;   /* S_IFDIR */
		char *target;           /* S_IFLNK, NUL-terminated, size = length */
	} u;
};

struct cairn_ramfs {
	pthread_rwlock_t ns_lock;
	pthread_mutex_t table_lock;
	/* Table slot: an inode pointer, or (next_free << 1 | 1) on the free list. */
	_Atomic(struct ramfs_tdir *) tdir;
	uint64_t table_cap, free_head;  /* slots in use or free; free_head 0 = none */
	struct ramfs_inode *root;

	size_t chunk_size;
	unsigned chunk_shift;
	/* Chunk memory (slab.c), all under pool_lock: the pool of freed resident
	 * chunks (a LIFO list linked through their first bytes), spare chunks whose
	 * pages went back to the kernel, and the slab new chunks are carved from. */
	pthread_mutex_t pool_lock;
	void *pool;
	uint64_t pool_count, pool_max;  /* in chunks */
	void **spare;
	size_t nspare, spare_cap;
	char *carve;
	size_t carve_left;
	void **slabs;                   /* every slab, unmapped at free */
	size_t nslabs, slabs_cap;
	int closing;                    /* cairn_ramfs_free(): chunks need no putting back */
	void *zero_chunk;               /* shared zeros for read_iov holes */
	uint64_t size_limit, inode_limit;

	atomic_uint_fast64_t used_bytes;   /* chunks * chunk_size + xattr bytes */
	atomic_uint_fast64_t inodes;
	atomic_uint_fast64_t chunks;
	atomic_uint_fast64_t meta_bytes;
	atomic_uint_fast64_t bytes_copied;
};

/* ramfs.c */
struct ramfs_inode *ramfs_get(struct cairn_ramfs *fs, cairn_ino_t ino);
void ramfs_ref(struct ramfs_inode *n, uint64_t count);
void ramfs_put(struct cairn_ramfs *fs, struct ramfs_inode *n, uint64_t count);
void ramfs_now(struct cairn_time *t);
void ramfs_fill_stat(struct cairn_ramfs *fs, struct ramfs_inode *n, struct cairn_stat *st);
void ramfs_stat_locked(struct cairn_ramfs *fs, struct ramfs_inode *n, struct cairn_stat *st);
int ramfs_reserve(struct cairn_ramfs *fs, uint64_t bytes);
void ramfs_unreserve(struct cairn_ramfs *fs, uint64_t bytes);
void *ramfs_meta_alloc(struct cairn_ramfs *fs, size_t size);
void *ramfs_meta_calloc(struct cairn_ramfs *fs, size_t size);
void ramfs_meta_free(struct cairn_ramfs *fs, void *p, size_t size);
/* New unlinked inode (refs 0, nlink 0) registered in the table. */
int ramfs_inode_new(struct cairn_ramfs *fs, uint32_t mode, uint32_t uid, uint32_t gid,
		    struct ramfs_inode **out);
/* Undo ramfs_inode_new for an inode nothing points at yet. */
void ramfs_inode_discard(struct cairn_ramfs *fs, struct ramfs_inode *n);
bool ramfs_cred_root(const struct cairn_cred *cred);
/* Clear setuid, and setgid when group-executable (write, truncate, chown). */
void ramfs_kill_suid(struct ramfs_inode *n);

/* data.c (callers hold n->lock for writing unless noted) */
/* slab.c: chunk memory. get returns NULL when out of memory. */
void *ramfs_chunk_get(struct cairn_ramfs *fs);
void ramfs_chunk_put(struct cairn_ramfs *fs, void *chunk);
void ramfs_slabs_free(struct cairn_ramfs *fs);
void ramfs_data_free_all(struct cairn_ramfs *fs, struct ramfs_inode *n);
int ramfs_data_truncate(struct cairn_ramfs *fs, struct ramfs_inode *n, uint64_t size);

/* dir.c (callers hold fs->ns_lock) */
void ramfs_dir_destroy(struct cairn_ramfs *fs, struct ramfs_inode *dir);
int ramfs_dir_add(struct cairn_ramfs *fs, struct ramfs_inode *dir, const char *name,
		  size_t len, struct ramfs_inode *n);
bool ramfs_is_dir(const struct ramfs_inode *n);

/* xattr.c */
void ramfs_xattr_free_all(struct cairn_ramfs *fs, struct ramfs_inode *n);
/* The stored value of name and its length, or NULL; caller holds n->lock. */
void *ramfs_xattr_value(struct ramfs_inode *n, const char *name, size_t *len);
/* Set name on an inode nobody else can see yet (no checks but space). */
int ramfs_xattr_add(struct cairn_ramfs *fs, struct ramfs_inode *n, const char *name,
		    const void *value, size_t size);

/* acl.c: POSIX ACLs in their xattr format (see the file's comment). */
#define RAMFS_ACL_ACCESS "system.posix_acl_access"
#define RAMFS_ACL_DEFAULT "system.posix_acl_default"
#define RAMFS_ACL_IS_ACCESS 1
#define RAMFS_ACL_IS_DEFAULT 2
/* RAMFS_ACL_IS_* for the two ACL names, else 0. */
int ramfs_acl_kind(const char *name);
/* 0 for a well-formed ACL, else -EINVAL. */
int ramfs_acl_check(const void *value, size_t size);
/* The permission bits an access ACL gives; *equiv says the mode says it all. */
uint32_t ramfs_acl_mode(const void *value, size_t size, int *equiv);
/* chmod: owner, mask (or group without one) and other entries from mode. */
void ramfs_acl_chmod(void *value, size_t size, uint32_t mode);
/* A default ACL made into a new object's access ACL, in place, and *mode masked
 * by it; nonzero when the ACL says more than the mode (it must be stored). */
int ramfs_acl_create(void *value, size_t size, uint32_t *mode);

#endif
