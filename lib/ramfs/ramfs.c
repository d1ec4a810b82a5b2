/* SPDX-License-Identifier: MIT */
/*
 * The RAM fs object: inode table, reference counting, space accounting and
 * attributes. See internal.h for the locking rules.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ramfs/internal.h"

#define TABLE_FREE(next) (((uintptr_t)(next) << 1) | 1u)

void ramfs_now(struct cairn_time *t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	t->sec = ts.tv_sec;
	t->nsec = (uint32_t)ts.tv_nsec;
}

bool ramfs_cred_root(const struct cairn_cred *cred)
{
	return !cred || cred->uid == 0;
}

void ramfs_kill_suid(struct ramfs_inode *n)
{
	uint32_t kill = S_ISUID;

	if (n->mode & S_IXGRP)
		kill |= S_ISGID;
	n->mode &= ~kill;
}

void *ramfs_meta_alloc(struct cairn_ramfs *fs, size_t size)
{
	void *p = malloc(size);

	if (p)
		atomic_fetch_add_explicit(&fs->meta_bytes, size, memory_order_relaxed);
	return p;
}

void *ramfs_meta_calloc(struct cairn_ramfs *fs, size_t size)
{
	void *p = calloc(1, size);

	if (p)
		atomic_fetch_add_explicit(&fs->meta_bytes, size, memory_order_relaxed);
	return p;
}

void ramfs_meta_free(struct cairn_ramfs *fs, void *p, size_t size)
{
	if (!p)
		return;
	atomic_fetch_sub_explicit(&fs->meta_bytes, size, memory_order_relaxed);
	free(p);
}

/* Take `bytes` of the size limit, or -ENOSPC leaving nothing taken. */
int ramfs_reserve(struct cairn_ramfs *fs, uint64_t bytes)
{
	uint_fast64_t cur = atomic_load_explicit(&fs->used_bytes, memory_order_relaxed);

	if (!fs->size_limit) {
		atomic_fetch_add_explicit(&fs->used_bytes, bytes, memory_order_relaxed);
		return 0;
	}
	do {
		if (bytes > fs->size_limit || cur > fs->size_limit - bytes)
			return -ENOSPC;
	} while (!atomic_compare_exchange_weak_explicit(&fs->used_bytes, &cur, cur + bytes,
							memory_order_relaxed,
							memory_order_relaxed));
	return 0;
}

void ramfs_unreserve(struct cairn_ramfs *fs, uint64_t bytes)
{
	atomic_fetch_sub_explicit(&fs->used_bytes, bytes, memory_order_relaxed);
}

static int reserve_inode(struct cairn_ramfs *fs)
{
	uint_fast64_t cur = atomic_load_explicit(&fs->inodes, memory_order_relaxed);

	do {
		if (fs->inode_limit && cur >= fs->inode_limit)
			return -ENOSPC;
	} while (!atomic_compare_exchange_weak_explicit(&fs->inodes, &cur, cur + 1,
							memory_order_relaxed,
							memory_order_relaxed));
	return 0;
}

static struct ramfs_tpage *table_page(struct ramfs_tdir *d, uint64_t p)
{
	return atomic_load_explicit(&d->page[p], memory_order_acquire);
}

static _Atomic uintptr_t *table_slot(struct ramfs_tdir *d, uint64_t ino)
{
	return &table_page(d, ino >> TABLE_PAGE_SHIFT)->slot[ino & (TABLE_PAGE - 1)];
}

/* Add a page of slots (and a bigger directory when full). Called with table_lock. */
static int table_grow(struct cairn_ramfs *fs)
{
	struct ramfs_tdir *d = atomic_load_explicit(&fs->tdir, memory_order_relaxed);
	uint64_t used = fs->table_cap >> TABLE_PAGE_SHIFT;
	struct ramfs_tpage *pg;

	if (!d || used == d->npages) {
		uint64_t np = d ? d->npages * 2 : 4;
		struct ramfs_tdir *nd = ramfs_meta_calloc(fs, sizeof(*nd) + np * sizeof(nd->page[0]));

		if (!nd)
			return -ENOMEM;
		nd->npages = np;
		for (uint64_t p = 0; p < used; p++)
			atomic_init(&nd->page[p], table_page(d, p));
		nd->retired = d;
		/* Readers still holding d keep reading valid pages: d is freed with
		 * the fs, and the pages themselves never move. */
		atomic_store_explicit(&fs->tdir, nd, memory_order_release);
		d = nd;
	}
	pg = ramfs_meta_calloc(fs, sizeof(*pg));
	if (!pg)
		return -ENOMEM;
	atomic_store_explicit(&d->page[used], pg, memory_order_release);
	/* Chain the new slots onto the free list, lowest number first. Slot 0 is
	 * never used: 0 is not a valid inode number. */
	for (uint64_t i = fs->table_cap + TABLE_PAGE - 1; i >= fs->table_cap && i > 0; i--) {
		atomic_store_explicit(&pg->slot[i & (TABLE_PAGE - 1)], TABLE_FREE(fs->free_head),
				      memory_order_relaxed);
		fs->free_head = i;
	}
	fs->table_cap += TABLE_PAGE;
	return 0;
}

static int table_insert(struct cairn_ramfs *fs, struct ramfs_inode *n)
{
	int err = 0;

	pthread_mutex_lock(&fs->table_lock);
	if (!fs->free_head)
		err = table_grow(fs);
	if (!err) {
		struct ramfs_tdir *d = atomic_load_explicit(&fs->tdir, memory_order_relaxed);
		uint64_t ino = fs->free_head;
		_Atomic uintptr_t *slot = table_slot(d, ino);

		fs->free_head = atomic_load_explicit(slot, memory_order_relaxed) >> 1;
		n->ino = ino;
		atomic_store_explicit(slot, (uintptr_t)n, memory_order_release);
	}
	pthread_mutex_unlock(&fs->table_lock);
	return err;
}

static void table_remove(struct cairn_ramfs *fs, cairn_ino_t ino)
{
	pthread_mutex_lock(&fs->table_lock);
	atomic_store_explicit(table_slot(atomic_load_explicit(&fs->tdir, memory_order_relaxed), ino),
			      TABLE_FREE(fs->free_head), memory_order_release);
	fs->free_head = ino;
	pthread_mutex_unlock(&fs->table_lock);
}

/* Lock-free: the hot path of every read and write. */
struct ramfs_inode *ramfs_get(struct cairn_ramfs *fs, cairn_ino_t ino)
{
	struct ramfs_tdir *d = atomic_load_explicit(&fs->tdir, memory_order_acquire);
	uintptr_t v;

	if (!d || (ino >> TABLE_PAGE_SHIFT) >= d->npages || !table_page(d, ino >> TABLE_PAGE_SHIFT))
		return NULL;
	v = atomic_load_explicit(table_slot(d, ino), memory_order_acquire);
	return v && !(v & 1u) ? (struct ramfs_inode *)v : NULL;
}

int ramfs_inode_new(struct cairn_ramfs *fs, uint32_t mode, uint32_t uid, uint32_t gid,
		    struct ramfs_inode **out)
{
	struct ramfs_inode *n;
	int err = reserve_inode(fs);

	if (err)
		return err;
	n = ramfs_meta_calloc(fs, sizeof(*n));
	if (!n) {
		atomic_fetch_sub_explicit(&fs->inodes, 1, memory_order_relaxed);
		return -ENOMEM;
	}
	pthread_rwlock_init(&n->lock, NULL);
	atomic_init(&n->refs, 0);
	n->mode = mode;
	n->type = mode & S_IFMT;
	n->uid = uid;
	n->gid = gid;
	ramfs_now(&n->atime);
	n->mtime = n->ctime = n->atime;
	err = table_insert(fs, n);
	if (err) {
		pthread_rwlock_destroy(&n->lock);
		ramfs_meta_free(fs, n, sizeof(*n));
		atomic_fetch_sub_explicit(&fs->inodes, 1, memory_order_relaxed);
		return err;
	}
	*out = n;
	return 0;
}

static void inode_destroy(struct cairn_ramfs *fs, struct ramfs_inode *n)
{
	switch (n->mode & S_IFMT) {
	case S_IFREG:
		ramfs_data_free_all(fs, n);
		break;
	case S_IFDIR:
		ramfs_dir_destroy(fs, n);
		break;
	case S_IFLNK:
		ramfs_meta_free(fs, n->u.target, n->size + 1);
		break;
	default:
		break;
	}
	ramfs_xattr_free_all(fs, n);
	pthread_rwlock_destroy(&n->lock);
	ramfs_meta_free(fs, n, sizeof(*n));
	atomic_fetch_sub_explicit(&fs->inodes, 1, memory_order_relaxed);
}

void ramfs_inode_discard(struct cairn_ramfs *fs, struct ramfs_inode *n)
{
	table_remove(fs, n->ino);
	inode_destroy(fs, n);
}

void ramfs_ref(struct ramfs_inode *n, uint64_t count)
{
	atomic_fetch_add_explicit(&n->refs, count, memory_order_relaxed);
}

void ramfs_put(struct cairn_ramfs *fs, struct ramfs_inode *n, uint64_t count)
{
	uint_fast64_t old = atomic_fetch_sub_explicit(&n->refs, count, memory_order_acq_rel);

	assert(old >= count); /* a reference dropped that was never taken */
	if (old == count)
		ramfs_inode_discard(fs, n);
}

/* Attributes into *st; caller holds n->lock (either mode). */
void ramfs_stat_locked(struct cairn_ramfs *fs, struct ramfs_inode *n, struct cairn_stat *st)
{
	memset(st, 0, sizeof(*st));
	st->ino = n->ino;
	st->mode = n->mode;
	st->nlink = n->nlink;
	st->uid = n->uid;
	st->gid = n->gid;
	st->size = n->size;
	st->blocks = (n->nchunks << fs->chunk_shift) / 512;
	st->rdev = n->rdev;
	st->atime = n->atime;
	st->mtime = n->mtime;
	st->ctime = n->ctime;
}

void ramfs_fill_stat(struct cairn_ramfs *fs, struct ramfs_inode *n, struct cairn_stat *st)
{
	pthread_rwlock_rdlock(&n->lock);
	ramfs_stat_locked(fs, n, st);
	pthread_rwlock_unlock(&n->lock);
}

int cairn_ramfs_new(const struct cairn_ramfs_config *cfg, struct cairn_ramfs **out)
{
	struct cairn_ramfs_config def = { 0 };
	struct cairn_ramfs *fs;
	struct ramfs_inode *root;
	int err;

	if (!cfg)
		cfg = &def;
	size_t cs = cfg->chunk_size ? cfg->chunk_size : CAIRN_RAMFS_DEFAULT_CHUNK;
	if (cs < 4096 || cs > (1u << 20) || (cs & (cs - 1)))
		return -EINVAL;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	fs->chunk_size = cs;
	while ((1ul << fs->chunk_shift) < cs)
		fs->chunk_shift++;
	fs->size_limit = cfg->size_limit;
	if (cfg->pool_bytes != CAIRN_RAMFS_NO_POOL)
		fs->pool_max = (cfg->pool_bytes ? cfg->pool_bytes : CAIRN_RAMFS_DEFAULT_POOL) / cs;
	pthread_mutex_init(&fs->pool_lock, NULL);
	fs->inode_limit = cfg->inode_limit;
	fs->zero_chunk = calloc(1, cs);
	pthread_rwlock_init(&fs->ns_lock, NULL);
	pthread_mutex_init(&fs->table_lock, NULL);
	err = fs->zero_chunk ? 0 : -ENOMEM;
	if (!err) {
		uint32_t perm = cfg->root_mode ? cfg->root_mode & 07777 : 01777;

		err = ramfs_inode_new(fs, S_IFDIR | perm, cfg->root_uid, cfg->root_gid, &root);
	}
	if (err) {
		cairn_ramfs_free(fs);
		return err;
	}
	root->nlink = 2;
	root->size = 2 * RAMFS_BOGO_DIRENT;
	root->u.dir.parent = root;
	atomic_init(&root->refs, 1); /* the mount's reference, never dropped */
	fs->root = root;
	*out = fs;
	return 0;
}

/* Every live inode, in table order. */
static void for_each_inode(struct cairn_ramfs *fs, void (*fn)(struct cairn_ramfs *fs,
							      struct ramfs_inode *n))
{
	struct ramfs_tdir *d = atomic_load_explicit(&fs->tdir, memory_order_acquire);

	for (uint64_t i = 1; d && i < fs->table_cap; i++) {
		uintptr_t v = atomic_load_explicit(table_slot(d, i), memory_order_acquire);

		if (v && !(v & 1u))
			fn(fs, (struct ramfs_inode *)v);
	}
}

static void free_dir_entries(struct cairn_ramfs *fs, struct ramfs_inode *n)
{
	if (S_ISDIR(n->mode))
		ramfs_dir_destroy(fs, n);
}

void cairn_ramfs_free(struct cairn_ramfs *fs)
{
	struct ramfs_tdir *d;

	if (!fs)
		return;
	/* Directories drop their entries first (dirents are owned by their
	 * directory); then every inode goes, whatever its counts. Chunks go with
	 * their slabs at the end. */
	fs->closing = 1;
	for_each_inode(fs, free_dir_entries);
	for_each_inode(fs, inode_destroy);
	d = atomic_load_explicit(&fs->tdir, memory_order_relaxed);
	for (uint64_t p = 0; d && p < (fs->table_cap >> TABLE_PAGE_SHIFT); p++)
		free(table_page(d, p));
	while (d) {
		struct ramfs_tdir *prev = d->retired;

		free(d);
		d = prev;
	}
	ramfs_slabs_free(fs);
	pthread_mutex_destroy(&fs->pool_lock);
	free(fs->zero_chunk);
	pthread_rwlock_destroy(&fs->ns_lock);
	pthread_mutex_destroy(&fs->table_lock);
	free(fs);
}

cairn_ino_t cairn_ramfs_root(const struct cairn_ramfs *fs)
{
	return fs->root->ino;
}

void cairn_ramfs_forget(struct cairn_ramfs *fs, cairn_ino_t ino, uint64_t nlookup)
{
	struct ramfs_inode *n = ramfs_get(fs, ino);

	if (n && nlookup)
		ramfs_put(fs, n, nlookup);
}

int cairn_ramfs_open(struct cairn_ramfs *fs, cairn_ino_t ino)
{
	struct ramfs_inode *n = ramfs_get(fs, ino);

	if (!n)
		return -ENOENT;
	ramfs_ref(n, 1);
	return 0;
}

void cairn_ramfs_release(struct cairn_ramfs *fs, cairn_ino_t ino)
{
	struct ramfs_inode *n = ramfs_get(fs, ino);

	if (n)
		ramfs_put(fs, n, 1);
}

int cairn_ramfs_getattr(struct cairn_ramfs *fs, cairn_ino_t ino, struct cairn_stat *st)
{
	struct ramfs_inode *n = ramfs_get(fs, ino);

	if (!n)
		return -ENOENT;
	ramfs_fill_stat(fs, n, st);
	return 0;
}

/* Sets *moved when the truncation moves mtime and ctime: a change of size, or
 * one to the size the file has when it holds data. tmpfs frees the pages past
 * EOF then (shmem_truncate_range()), which sets both; a file of holes alone
 * (an empty one) keeps its times. */
static int setattr_size(struct cairn_ramfs *fs, struct ramfs_inode *n, uint64_t size,
			const struct cairn_cred *cred, const struct cairn_time *now, bool *moved)
{
	int err;

	if (S_ISDIR(n->mode))
		return -EISDIR;
	if (!S_ISREG(n->mode))
		return -EINVAL;
	if (size > RAMFS_MAX_FILE)
		return -EFBIG;
	if (size == n->size) { /* no change but preallocation past EOF dropped */
		*moved = n->nchunks != 0;
		if (*moved)
			n->mtime = *now;
		return ramfs_data_truncate(fs, n, size);
	}
	err = ramfs_data_truncate(fs, n, size);
	if (err)
		return err;
	*moved = true;
	n->mtime = *now;
	if (!ramfs_cred_root(cred))
		ramfs_kill_suid(n);
	return 0;
}

int cairn_ramfs_setattr(struct cairn_ramfs *fs, cairn_ino_t ino, const struct cairn_setattr *sa,
			const struct cairn_cred *cred, struct cairn_stat *st)
{
	struct ramfs_inode *n = ramfs_get(fs, ino);
	struct cairn_time now;
	unsigned v = sa->valid;
	bool moved = false;
	int err = 0;

	if (!n)
		return -ENOENT;
	ramfs_now(&now);
	pthread_rwlock_wrlock(&n->lock);
	/* The only step that can fail goes first, so a failed call changes nothing. */
	if (v & CAIRN_SET_SIZE)
		err = setattr_size(fs, n, sa->size, cred, &now, &moved);
	if (err)
		goto out;
	if (v & (CAIRN_SET_UID | CAIRN_SET_GID | CAIRN_SET_CHOWN)) {
		if (v & CAIRN_SET_UID)
			n->uid = sa->uid;
		if (v & CAIRN_SET_GID)
			n->gid = sa->gid;
		if (!S_ISDIR(n->mode))
			ramfs_kill_suid(n);
	}
	if (v & CAIRN_SET_MODE) {
		size_t alen;
		void *acl = ramfs_xattr_value(n, RAMFS_ACL_ACCESS, &alen);

		n->mode = (n->mode & S_IFMT) | (sa->mode & 07777);
		if (acl) /* chmod sets the ACL's mask, as on tmpfs */
			ramfs_acl_chmod(acl, alen, n->mode);
	}
	if (v & CAIRN_SET_ATIME_NOW)
		n->atime = now;
	else if (v & CAIRN_SET_ATIME)
		n->atime = sa->atime;
	if (v & CAIRN_SET_MTIME_NOW)
		n->mtime = now;
	else if (v & CAIRN_SET_MTIME)
		n->mtime = sa->mtime;
	/* A truncate that moves no times (setattr_size) leaves ctime too;
	 * ftruncate(2) and open(O_TRUNC) ask for MTIME_NOW as well. */
	if (v & CAIRN_SET_CTIME)
		n->ctime = sa->ctime;
	else if ((v & ~CAIRN_SET_SIZE) || moved)
		n->ctime = now;
out:
	if (!err && st)
		ramfs_stat_locked(fs, n, st);
	pthread_rwlock_unlock(&n->lock);
	return err;
}

int cairn_ramfs_statfs(struct cairn_ramfs *fs, struct cairn_statfs *out)
{
	uint64_t bs = fs->chunk_size;
	uint64_t used = atomic_load_explicit(&fs->used_bytes, memory_order_relaxed);
	uint64_t inodes = atomic_load_explicit(&fs->inodes, memory_order_relaxed);

	memset(out, 0, sizeof(*out));
	out->block_size = bs;
	out->name_max = CAIRN_NAME_MAX;
	if (fs->size_limit) {
		out->blocks = fs->size_limit / bs;
		out->blocks_free = used >= fs->size_limit ? 0 : (fs->size_limit - used) / bs;
	} else {
		long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
		uint64_t avail = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;

		out->blocks_free = avail / bs;
		out->blocks = (used + bs - 1) / bs + out->blocks_free;
	}
	if (fs->inode_limit) {
		out->files = fs->inode_limit;
		out->files_free = inodes >= fs->inode_limit ? 0 : fs->inode_limit - inodes;
	} else {
		out->files_free = UINT32_MAX - (inodes < UINT32_MAX ? inodes : UINT32_MAX);
		out->files = inodes + out->files_free;
	}
	return 0;
}

void cairn_ramfs_usage(struct cairn_ramfs *fs, struct cairn_ramfs_usage *out)
{
	uint64_t chunks = atomic_load_explicit(&fs->chunks, memory_order_relaxed);

	out->chunks = chunks;
	out->data_bytes = chunks << fs->chunk_shift;
	out->meta_bytes = atomic_load_explicit(&fs->meta_bytes, memory_order_relaxed);
	out->inodes = atomic_load_explicit(&fs->inodes, memory_order_relaxed);
	out->bytes_copied = atomic_load_explicit(&fs->bytes_copied, memory_order_relaxed);
	pthread_mutex_lock(&fs->pool_lock);
	out->pool_bytes = fs->pool_count << fs->chunk_shift;
	pthread_mutex_unlock(&fs->pool_lock);
}
