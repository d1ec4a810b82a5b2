/* SPDX-License-Identifier: MIT */
/*
 * Directories and the namespace: entries live in a per-directory hash table (by
 * name) and in an array ordered by entry id (for readdir). Ids only grow, so a
 * readdir cookie (id + 3) keeps its place while entries come and go; the array
 * is compacted when half of it is holes, which keeps the ids.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>
#include "ramfs/internal.h"

#define RESOLVE_MAX_LINKS 40

bool ramfs_is_dir(const struct ramfs_inode *n)
{
	return S_ISDIR(n->type);
}

static size_t dirent_size(size_t len)
{
	return sizeof(struct ramfs_dirent) + len + 1;
}

static uint64_t name_hash(const char *name, size_t len)
{
	return XXH3_64bits(name, len);
}

/* 0 for a valid name; "." and ".." are valid here (callers decide). */
static int check_name(const char *name, size_t len)
{
	if (len == 0)
		return -ENOENT;
	if (len > CAIRN_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return -EINVAL;
	return 0;
}

static bool is_dot(const char *name, size_t len)
{
	return len == 1 && name[0] == '.';
}

static bool is_dotdot(const char *name, size_t len)
{
	return len == 2 && name[0] == '.' && name[1] == '.';
}

static struct ramfs_dirent *dir_find(const struct ramfs_dir *d, const char *name, size_t len)
{
	uint64_t h;

	if (!d->count)
		return NULL;
	h = name_hash(name, len);
	for (struct ramfs_dirent *de = d->buckets[h & (d->nbuckets - 1)]; de; de = de->hnext)
		if (de->hash == h && de->len == len && !memcmp(de->name, name, len))
			return de;
	return NULL;
}

static int dir_rehash(struct cairn_ramfs *fs, struct ramfs_dir *d, uint32_t nb)
{
	struct ramfs_dirent **b = ramfs_meta_calloc(fs, nb * sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (uint32_t i = 0; i < d->nbuckets; i++) {
		struct ramfs_dirent *de = d->buckets[i], *next;

		for (; de; de = next) {
			next = de->hnext;
			de->hnext = b[de->hash & (nb - 1)];
			b[de->hash & (nb - 1)] = de;
		}
	}
	ramfs_meta_free(fs, d->buckets, d->nbuckets * sizeof(*b));
	d->buckets = b;
	d->nbuckets = nb;
	return 0;
}

/* Drop the holes of the order array; ids (cookies) are kept. */
static void dir_compact(struct ramfs_dir *d)
{
	uint32_t w = 0;

	for (uint32_t r = 0; r < d->norder; r++) {
		if (!d->order[r].de)
			continue;
		d->order[w] = d->order[r];
		d->order[w].de->pos = w;
		w++;
	}
	d->norder = w;
}

/* Make room for one more entry in both indexes. */
static int dir_reserve(struct cairn_ramfs *fs, struct ramfs_dir *d)
{
	if (d->count + 1 > d->nbuckets) {
		uint32_t nb = d->nbuckets ? d->nbuckets * 2 : 8;

		if (nb > (1u << 30) || dir_rehash(fs, d, nb))
			return -ENOMEM;
	}
	if (d->norder > d->count + 8 && d->norder - d->count > d->count)
		dir_compact(d);
	if (d->norder == d->order_cap) {
		uint32_t cap = d->order_cap ? d->order_cap * 2 : 4;
		struct ramfs_order *o;

		if (cap > (1u << 30))
			return -ENOSPC;
		o = realloc(d->order, cap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		atomic_fetch_add_explicit(&fs->meta_bytes, (cap - d->order_cap) * sizeof(*o),
					  memory_order_relaxed);
		d->order = o;
		d->order_cap = cap;
	}
	return 0;
}

/* Add name -> n to dir. Changes neither nlink nor refs: callers do. */
int ramfs_dir_add(struct cairn_ramfs *fs, struct ramfs_inode *dir, const char *name, size_t len,
		  struct ramfs_inode *n)
{
	struct ramfs_dir *d = &dir->u.dir;
	struct ramfs_dirent *de;
	int err = dir_reserve(fs, d);

	if (err)
		return err;
	de = ramfs_meta_alloc(fs, dirent_size(len));
	if (!de)
		return -ENOMEM;
	de->node = n;
	de->id = d->next_id++;
	de->hash = name_hash(name, len);
	de->len = (uint16_t)len;
	memcpy(de->name, name, len);
	de->name[len] = '\0';
	de->pos = d->norder;
	d->order[d->norder].id = de->id;
	d->order[d->norder].de = de;
	d->norder++;
	de->hnext = d->buckets[de->hash & (d->nbuckets - 1)];
	d->buckets[de->hash & (d->nbuckets - 1)] = de;
	d->count++;
	return 0;
}

/* After many removals, give the indexes' memory back (a directory that once held
 * 100 000 entries should not keep their buckets). Failure to shrink is harmless. */
static void dir_shrink(struct cairn_ramfs *fs, struct ramfs_dir *d)
{
	if (d->nbuckets > 8 && d->count < d->nbuckets / 8)
		(void)dir_rehash(fs, d, d->nbuckets / 4);
	if (d->order_cap > 16 && d->norder - d->count > d->count) {
		dir_compact(d);
		if (d->norder < d->order_cap / 4) {
			uint32_t cap = d->order_cap / 2;
			struct ramfs_order *o = realloc(d->order, cap * sizeof(*o));

			if (o) {
				atomic_fetch_sub_explicit(&fs->meta_bytes,
							  (d->order_cap - cap) * sizeof(*o),
							  memory_order_relaxed);
				d->order = o;
				d->order_cap = cap;
			}
		}
	}
}

static void dir_del(struct cairn_ramfs *fs, struct ramfs_dir *d, struct ramfs_dirent *de)
{
	struct ramfs_dirent **pp = &d->buckets[de->hash & (d->nbuckets - 1)];

	while (*pp != de)
		pp = &(*pp)->hnext;
	*pp = de->hnext;
	d->order[de->pos].de = NULL;
	d->count--;
	ramfs_meta_free(fs, de, dirent_size(de->len));
	dir_shrink(fs, d);
}

/* Free the entries (not the inodes they name) and the indexes; idempotent. */
void ramfs_dir_destroy(struct cairn_ramfs *fs, struct ramfs_inode *dir)
{
	struct ramfs_dir *d = &dir->u.dir;

	for (uint32_t i = 0; i < d->norder; i++)
		if (d->order[i].de)
			ramfs_meta_free(fs, d->order[i].de, dirent_size(d->order[i].de->len));
	ramfs_meta_free(fs, d->buckets, d->nbuckets * sizeof(*d->buckets));
	ramfs_meta_free(fs, d->order, d->order_cap * sizeof(*d->order));
	d->buckets = NULL;
	d->order = NULL;
	d->nbuckets = d->count = d->norder = d->order_cap = 0;
}

/* The directory inode for a namespace operation, or an error. */
static int get_dir(struct cairn_ramfs *fs, cairn_ino_t ino, struct ramfs_inode **out)
{
	struct ramfs_inode *d = ramfs_get(fs, ino);

	if (!d)
		return -ENOENT;
	if (!S_ISDIR(d->type))
		return -ENOTDIR;
	*out = d;
	return 0;
}

/* A directory that was removed takes no new entries. */
static int get_live_dir(struct cairn_ramfs *fs, cairn_ino_t ino, struct ramfs_inode **out)
{
	int err = get_dir(fs, ino, out);

	if (!err && !(*out)->u.dir.parent)
		err = -ENOENT;
	return err;
}

/* Parent attributes after an entry was added (+1) or removed (-1). */
static void dir_touch(struct ramfs_inode *dir, int entries, int subdirs,
		      const struct cairn_time *now)
{
	pthread_rwlock_wrlock(&dir->lock);
	dir->size += (uint64_t)(int64_t)entries * RAMFS_BOGO_DIRENT;
	dir->nlink += (uint32_t)subdirs;
	dir->mtime = dir->ctime = *now;
	pthread_rwlock_unlock(&dir->lock);
}

static void node_nlink(struct ramfs_inode *n, int delta, const struct cairn_time *now)
{
	pthread_rwlock_wrlock(&n->lock);
	n->nlink += (uint32_t)delta;
	n->ctime = *now;
	pthread_rwlock_unlock(&n->lock);
}

int cairn_ramfs_lookup(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name, size_t len,
		       struct cairn_stat *st)
{
	struct ramfs_inode *d, *n = NULL;
	int err = check_name(name, len);

	if (err)
		return err;
	pthread_rwlock_rdlock(&fs->ns_lock);
	err = get_dir(fs, dir, &d);
	if (!err) {
		if (is_dot(name, len)) {
			n = d;
		} else if (is_dotdot(name, len)) {
			n = d->u.dir.parent;
		} else {
			struct ramfs_dirent *de = dir_find(&d->u.dir, name, len);

			n = de ? de->node : NULL;
		}
		if (n)
			ramfs_ref(n, 1);
		else
			err = -ENOENT;
	}
	pthread_rwlock_unlock(&fs->ns_lock);
	if (!err && st)
		ramfs_fill_stat(fs, n, st);
	return err;
}

/* What a new object is, besides its name. */
struct new_obj {
	uint32_t mode;
	uint64_t rdev;
	const char *target;     /* symlinks */
	size_t target_len;
};

static int init_obj(struct cairn_ramfs *fs, struct ramfs_inode *n, struct ramfs_inode *parent,
		    const struct new_obj *o)
{
	switch (o->mode & S_IFMT) {
	case S_IFDIR:
		n->nlink = 2;
		n->size = 2 * RAMFS_BOGO_DIRENT;
		n->u.dir.parent = parent;
		break;
	case S_IFLNK:
		n->nlink = 1;
		n->u.target = ramfs_meta_alloc(fs, o->target_len + 1);
		if (!n->u.target)
			return -ENOMEM;
		memcpy(n->u.target, o->target, o->target_len);
		n->u.target[o->target_len] = '\0';
		n->size = o->target_len;
		break;
	default:
		n->nlink = 1;
		n->rdev = o->rdev;
		break;
	}
	return 0;
}

/* Owner, group and mode of a new object in dir (setgid directories). */
static void new_owner(const struct ramfs_inode *dir, const struct cairn_cred *cred,
		      uint32_t *mode, uint32_t *uid, uint32_t *gid)
{
	*uid = cred ? cred->uid : 0;
	*gid = cred ? cred->gid : 0;
	if (!(dir->mode & S_ISGID))
		return;
	*gid = dir->gid;
	if (S_ISDIR(*mode))
		*mode |= S_ISGID;
	else if ((*mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) && !ramfs_cred_root(cred) &&
		 cred->gid != dir->gid)
		*mode &= ~(uint32_t)S_ISGID; /* as the kernel's mode_strip_sgid() */
}

/* The default ACL of dir, copied (caller frees); NULL when it has none. */
static void *default_acl(struct ramfs_inode *dir, size_t *len)
{
	void *copy = NULL, *v;

	pthread_rwlock_rdlock(&dir->lock);
	v = ramfs_xattr_value(dir, RAMFS_ACL_DEFAULT, len);
	if (v && (copy = malloc(*len)))
		memcpy(copy, v, *len);
	pthread_rwlock_unlock(&dir->lock);
	return copy;
}

/* A new unlinked inode for dir (refs 0, nlink 0): owner and group as
 * new_owner(); the mode masked by dir's default ACL, which it inherits (as its
 * access ACL, and a directory as its default ACL too), or else by the caller's
 * umask. A NULL cred makes an exact copy: nothing inherited, no umask. Caller
 * holds fs->ns_lock for writing. */
static int new_inode_in(struct cairn_ramfs *fs, struct ramfs_inode *d, uint32_t mode,
			const struct cairn_cred *cred, struct ramfs_inode **out)
{
	struct ramfs_inode *n;
	uint32_t uid, gid;
	void *dacl = NULL, *acc = NULL;
	size_t alen = 0;
	int err = 0, store_access = 0;

	pthread_rwlock_rdlock(&d->lock);
	new_owner(d, cred, &mode, &uid, &gid);
	pthread_rwlock_unlock(&d->lock);
	if (cred && !S_ISLNK(mode))
		dacl = default_acl(d, &alen);
	if (dacl) {
		acc = malloc(alen);
		if (!acc) {
			free(dacl);
			return -ENOMEM;
		}
		memcpy(acc, dacl, alen);
		store_access = ramfs_acl_create(acc, alen, &mode);
	} else if (cred && !S_ISLNK(mode)) {
		mode &= ~(cred->umask & 0777);
	}
	err = ramfs_inode_new(fs, mode, uid, gid, &n);
	if (!err) {
		if (dacl && S_ISDIR(mode))
			err = ramfs_xattr_add(fs, n, RAMFS_ACL_DEFAULT, dacl, alen);
		if (!err && store_access)
			err = ramfs_xattr_add(fs, n, RAMFS_ACL_ACCESS, acc, alen);
		if (err)
			ramfs_inode_discard(fs, n);
		else
			*out = n;
	}
	free(dacl);
	free(acc);
	return err;
}

static int create_obj(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name, size_t len,
		      const struct new_obj *o, const struct cairn_cred *cred, struct cairn_stat *st)
{
	struct ramfs_inode *d, *n;
	struct cairn_time now;
	int err = check_name(name, len);

	if (err)
		return err;
	pthread_rwlock_wrlock(&fs->ns_lock);
	err = get_live_dir(fs, dir, &d);
	if (!err && (is_dot(name, len) || is_dotdot(name, len) || dir_find(&d->u.dir, name, len)))
		err = -EEXIST;
	if (!err)
		err = new_inode_in(fs, d, o->mode, cred, &n);
	if (err)
		goto out;
	err = init_obj(fs, n, d, o);
	if (!err)
		err = ramfs_dir_add(fs, d, name, len, n);
	if (err) {
		ramfs_inode_discard(fs, n);
		goto out;
	}
	ramfs_ref(n, 2); /* its name and the caller's lookup reference */
	now = n->ctime;
	dir_touch(d, 1, S_ISDIR(n->type) ? 1 : 0, &now);
	if (st)
		ramfs_fill_stat(fs, n, st);
out:
	pthread_rwlock_unlock(&fs->ns_lock);
	return err;
}

int cairn_ramfs_mknod(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name, size_t len,
		      uint32_t mode, uint64_t rdev, const struct cairn_cred *cred,
		      struct cairn_stat *st)
{
	struct new_obj o = { .mode = mode, .rdev = rdev };

	switch (mode & S_IFMT) {
	case 0:
		o.mode |= S_IFREG; /* as mknod(2) */
		break;
	case S_IFREG: case S_IFIFO: case S_IFSOCK: case S_IFCHR: case S_IFBLK:
		break;
	default:
		return -EINVAL;
	}
	if (!S_ISCHR(o.mode) && !S_ISBLK(o.mode))
		o.rdev = 0;
	o.mode &= S_IFMT | 07777;
	return create_obj(fs, dir, name, len, &o, cred, st);
}

int cairn_ramfs_mkdir(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name, size_t len,
		      uint32_t mode, const struct cairn_cred *cred, struct cairn_stat *st)
{
	struct new_obj o = { .mode = S_IFDIR | (mode & 07777) };

	return create_obj(fs, dir, name, len, &o, cred, st);
}

int cairn_ramfs_symlink(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name, size_t len,
			const char *target, const struct cairn_cred *cred, struct cairn_stat *st)
{
	struct new_obj o = { .mode = S_IFLNK | 0777, .target = target };

	o.target_len = strnlen(target, CAIRN_RAMFS_SYMLINK_MAX + 1);
	if (o.target_len > CAIRN_RAMFS_SYMLINK_MAX)
		return -ENAMETOOLONG;
	if (!o.target_len)
		return -ENOENT; /* as symlink(2) with an empty target */
	return create_obj(fs, dir, name, len, &o, cred, st);
}

int cairn_ramfs_tmpfile(struct cairn_ramfs *fs, cairn_ino_t dir, uint32_t mode,
			const struct cairn_cred *cred, struct cairn_stat *st)
{
	struct ramfs_inode *d, *n;
	int err;

	pthread_rwlock_wrlock(&fs->ns_lock);
	err = get_live_dir(fs, dir, &d);
	if (!err)
		err = new_inode_in(fs, d, S_IFREG | (mode & 07777), cred, &n);
	if (!err) {
		n->linkable = true;
		ramfs_ref(n, 1); /* the caller's lookup reference: no name */
		if (st)
			ramfs_fill_stat(fs, n, st);
	}
	pthread_rwlock_unlock(&fs->ns_lock);
	return err;
}

int cairn_ramfs_link(struct cairn_ramfs *fs, cairn_ino_t ino, cairn_ino_t newdir,
		     const char *name, size_t len, struct cairn_stat *st)
{
	struct ramfs_inode *d, *n;
	struct cairn_time now;
	int err = check_name(name, len);

	if (err)
		return err;
	pthread_rwlock_wrlock(&fs->ns_lock);
	/* Checks in the kernel's order: the new name first, then the inode. */
	n = ramfs_get(fs, ino);
	err = n ? get_live_dir(fs, newdir, &d) : -ENOENT;
	if (!err && (is_dot(name, len) || is_dotdot(name, len) || dir_find(&d->u.dir, name, len)))
		err = -EEXIST;
	if (!err && S_ISDIR(n->type))
		err = -EPERM;
	if (!err && n->nlink == 0 && !n->linkable)
		err = -ENOENT;
	if (!err && n->nlink >= UINT32_MAX - 1)
		err = -EMLINK;
	if (!err)
		err = ramfs_dir_add(fs, d, name, len, n);
	if (!err) {
		ramfs_ref(n, 2);
		ramfs_now(&now);
		n->linkable = false; /* named once: from now on as any inode */
		node_nlink(n, 1, &now);
		dir_touch(d, 1, 0, &now);
		if (st)
			ramfs_fill_stat(fs, n, st);
	}
	pthread_rwlock_unlock(&fs->ns_lock);
	return err;
}

/* Remove entry de (naming n) from d; drops n's name reference. */
static void remove_entry(struct cairn_ramfs *fs, struct ramfs_inode *d, struct ramfs_dirent *de,
			 const struct cairn_time *now)
{
	struct ramfs_inode *n = de->node;
	bool isdir = S_ISDIR(n->type);

	dir_del(fs, &d->u.dir, de);
	if (isdir) {
		pthread_rwlock_wrlock(&n->lock);
		n->nlink = 0;
		n->u.dir.parent = NULL;
		n->ctime = *now;
		pthread_rwlock_unlock(&n->lock);
	} else {
		node_nlink(n, -1, now);
	}
	dir_touch(d, -1, isdir ? -1 : 0, now);
	ramfs_put(fs, n, 1);
}

static int remove_name(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name, size_t len,
		       bool want_dir)
{
	struct ramfs_inode *d;
	struct ramfs_dirent *de = NULL;
	struct cairn_time now;
	int err = check_name(name, len);

	if (err)
		return err;
	if (want_dir && is_dot(name, len))
		return -EINVAL;
	if (want_dir && is_dotdot(name, len))
		return -ENOTEMPTY;
	if (!want_dir && (is_dot(name, len) || is_dotdot(name, len)))
		return -EISDIR;
	pthread_rwlock_wrlock(&fs->ns_lock);
	err = get_dir(fs, dir, &d);
	if (!err) {
		de = dir_find(&d->u.dir, name, len);
		err = de ? 0 : -ENOENT;
	}
	if (!err && want_dir && !S_ISDIR(de->node->type))
		err = -ENOTDIR;
	if (!err && !want_dir && S_ISDIR(de->node->type))
		err = -EISDIR;
	if (!err && want_dir && de->node->u.dir.count)
		err = -ENOTEMPTY;
	if (!err) {
		ramfs_now(&now);
		remove_entry(fs, d, de, &now);
	}
	pthread_rwlock_unlock(&fs->ns_lock);
	return err;
}

int cairn_ramfs_unlink(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name, size_t len)
{
	return remove_name(fs, dir, name, len, false);
}

int cairn_ramfs_rmdir(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name, size_t len)
{
	return remove_name(fs, dir, name, len, true);
}

/* Is dir `a` the directory d or one of its ancestors? */
static bool is_ancestor(const struct ramfs_inode *a, const struct ramfs_inode *d)
{
	while (d) {
		if (d == a)
			return true;
		if (d->u.dir.parent == d)
			return false;
		d = d->u.dir.parent;
	}
	return false;
}

static void set_parent(struct ramfs_inode *n, struct ramfs_inode *parent,
		       const struct cairn_time *now)
{
	pthread_rwlock_wrlock(&n->lock);
	if (S_ISDIR(n->type))
		n->u.dir.parent = parent;
	n->ctime = *now;
	pthread_rwlock_unlock(&n->lock);
}

static void rename_exchange(struct ramfs_inode *od, struct ramfs_dirent *ode,
			    struct ramfs_inode *nd, struct ramfs_dirent *nde,
			    const struct cairn_time *now)
{
	struct ramfs_inode *src = ode->node, *dst = nde->node;
	int moved = (S_ISDIR(src->type) ? 1 : 0) - (S_ISDIR(dst->type) ? 1 : 0);

	ode->node = dst;
	nde->node = src;
	set_parent(src, nd, now);
	set_parent(dst, od, now);
	if (od != nd) {
		dir_touch(od, 0, -moved, now);
		dir_touch(nd, 0, moved, now);
	} else {
		dir_touch(od, 0, 0, now);
	}
}

static int rename_move(struct cairn_ramfs *fs, struct ramfs_inode *od, struct ramfs_dirent *ode,
		       struct ramfs_inode *nd, struct ramfs_dirent *nde, const char *newname,
		       size_t newlen, const struct cairn_time *now)
{
	struct ramfs_inode *src = ode->node, *dst = nde ? nde->node : NULL;
	bool isdir = S_ISDIR(src->type);
	int err;

	if (dst) {
		/* Reuse the target's entry: nothing to allocate, nothing can fail. */
		bool dstdir = S_ISDIR(dst->type);

		nde->node = src;
		pthread_rwlock_wrlock(&dst->lock);
		if (dstdir) {
			dst->nlink = 0;
			dst->u.dir.parent = NULL;
		} else {
			dst->nlink--;
		}
		dst->ctime = *now;
		pthread_rwlock_unlock(&dst->lock);
		dir_touch(nd, 0, dstdir ? -1 : 0, now);
	} else {
		err = ramfs_dir_add(fs, nd, newname, newlen, src);
		if (err)
			return err;
		dir_touch(nd, 1, 0, now);
	}
	dir_del(fs, &od->u.dir, ode);
	dir_touch(od, -1, 0, now);
	set_parent(src, nd, now);
	if (isdir && od != nd) {
		dir_touch(od, 0, -1, now);
		dir_touch(nd, 0, 1, now);
	}
	if (dst)
		ramfs_put(fs, dst, 1);
	return 0;
}

int cairn_ramfs_rename(struct cairn_ramfs *fs, cairn_ino_t olddir, const char *oldname,
		       size_t oldlen, cairn_ino_t newdir, const char *newname, size_t newlen,
		       unsigned flags)
{
	struct ramfs_inode *od, *nd, *src, *dst;
	struct ramfs_dirent *ode, *nde;
	struct cairn_time now;
	int err;

	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE))
		return -EINVAL;
	err = check_name(oldname, oldlen);
	if (!err)
		err = check_name(newname, newlen);
	if (err)
		return err;
	if (is_dot(oldname, oldlen) || is_dotdot(oldname, oldlen) || is_dot(newname, newlen) ||
	    is_dotdot(newname, newlen))
		return (flags & RENAME_NOREPLACE) ? -EEXIST : -EBUSY;
	pthread_rwlock_wrlock(&fs->ns_lock);
	err = get_dir(fs, olddir, &od);
	if (!err)
		err = get_live_dir(fs, newdir, &nd);
	if (err)
		goto out;
	ode = dir_find(&od->u.dir, oldname, oldlen);
	nde = dir_find(&nd->u.dir, newname, newlen);
	err = -ENOENT;
	if (!ode || (!nde && (flags & RENAME_EXCHANGE)))
		goto out;
	err = -EEXIST;
	if (nde && (flags & RENAME_NOREPLACE))
		goto out;
	src = ode->node;
	dst = nde ? nde->node : NULL;
	err = 0;
	if (src == dst)
		goto out; /* the same file under both names: nothing to do */
	if (S_ISDIR(src->type) && is_ancestor(src, nd)) {
		err = -EINVAL; /* a directory into its own subtree */
		goto out;
	}
	if (dst && S_ISDIR(dst->type) && is_ancestor(dst, od)) {
		err = (flags & RENAME_EXCHANGE) ? -EINVAL : -ENOTEMPTY;
		goto out;
	}
	ramfs_now(&now);
	if (flags & RENAME_EXCHANGE) {
		rename_exchange(od, ode, nd, nde, &now);
		goto out;
	}
	if (dst && S_ISDIR(src->type) && !S_ISDIR(dst->type))
		err = -ENOTDIR;
	else if (dst && !S_ISDIR(src->type) && S_ISDIR(dst->type))
		err = -EISDIR;
	else if (dst && S_ISDIR(dst->type) && dst->u.dir.count)
		err = -ENOTEMPTY;
	else
		err = rename_move(fs, od, ode, nd, nde, newname, newlen, &now);
out:
	pthread_rwlock_unlock(&fs->ns_lock);
	return err;
}

ssize_t cairn_ramfs_readlink(struct cairn_ramfs *fs, cairn_ino_t ino, char *buf, size_t len)
{
	struct ramfs_inode *n = ramfs_get(fs, ino);
	ssize_t r;

	if (!n)
		return -ENOENT;
	if (!S_ISLNK(n->type))
		return -EINVAL;
	/* The target never changes after creation; size is its length. */
	if (len < n->size)
		return -ERANGE;
	memcpy(buf, n->u.target, n->size);
	r = (ssize_t)n->size;
	return r;
}

/* readdir copies a batch of entries under the lock, then calls back unlocked. */
#define RD_BATCH 32
struct rd_entry {
	cairn_ino_t ino;
	uint64_t next;
	unsigned dtype;
	uint16_t len;
	char name[CAIRN_NAME_MAX + 1];
};

static unsigned dtype_of(uint32_t mode)
{
	return (mode & S_IFMT) >> 12; /* DT_* values */
}

static void rd_put(struct rd_entry *e, const char *name, size_t len, const struct ramfs_inode *n,
		   uint64_t next)
{
	e->ino = n->ino;
	e->dtype = dtype_of(n->type);
	e->next = next;
	e->len = (uint16_t)len;
	memcpy(e->name, name, len);
}

/* First index in d->order whose id is >= id. */
static uint32_t order_seek(const struct ramfs_dir *d, uint64_t id)
{
	uint32_t lo = 0, hi = d->norder;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (d->order[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int rd_fill(struct cairn_ramfs *fs, cairn_ino_t dir, uint64_t cookie, struct rd_entry *b,
		   unsigned *count)
{
	struct ramfs_inode *d;
	unsigned c = 0;
	int err;

	pthread_rwlock_rdlock(&fs->ns_lock);
	err = get_dir(fs, dir, &d);
	if (err)
		goto out;
	if (cookie == 0)
		rd_put(&b[c++], ".", 1, d, 1);
	if (cookie <= 1)
		rd_put(&b[c++], "..", 2, d->u.dir.parent ? d->u.dir.parent : d, 2);
	for (uint32_t i = order_seek(&d->u.dir, cookie >= 2 ? cookie - 2 : 0);
	     i < d->u.dir.norder && c < RD_BATCH; i++) {
		const struct ramfs_dirent *de = d->u.dir.order[i].de;

		if (de)
			rd_put(&b[c++], de->name, de->len, de->node, de->id + 3);
	}
out:
	pthread_rwlock_unlock(&fs->ns_lock);
	*count = c;
	return err;
}

int cairn_ramfs_readdir(struct cairn_ramfs *fs, cairn_ino_t dir, uint64_t cookie,
			cairn_dirent_cb cb, void *ctx)
{
	struct rd_entry *b = malloc(RD_BATCH * sizeof(*b));
	unsigned count;
	int err;

	if (!b)
		return -ENOMEM;
	for (;;) {
		err = rd_fill(fs, dir, cookie, b, &count);
		if (err || !count)
			break;
		for (unsigned i = 0; i < count; i++) {
			if (cb(ctx, b[i].name, b[i].len, b[i].ino, b[i].dtype, b[i].next))
				goto done;
		}
		if (count < RD_BATCH)
			break;
		cookie = b[count - 1].next;
	}
done:
	free(b);
	return err;
}

/* One step of resolve: the inode `name` in d, following nothing. */
static struct ramfs_inode *walk_one(struct ramfs_inode *d, const char *name, size_t len)
{
	struct ramfs_dirent *de;

	if (is_dot(name, len))
		return d;
	if (is_dotdot(name, len))
		return d->u.dir.parent;
	de = dir_find(&d->u.dir, name, len);
	return de ? de->node : NULL;
}

int cairn_ramfs_resolve(struct cairn_ramfs *fs, const char *path, int follow, cairn_ino_t *out)
{
	struct ramfs_inode *cur = fs->root;
	char *buf = strdup(path), *p;
	int links = 0, err = 0;

	if (!buf)
		return -ENOMEM;
	pthread_rwlock_rdlock(&fs->ns_lock);
	p = buf;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		char *end = strchrnul(p, '/');
		size_t len = (size_t)(end - p);
		struct ramfs_inode *n;

		if (!S_ISDIR(cur->type)) {
			err = -ENOTDIR;
			break;
		}
		if (len > CAIRN_NAME_MAX) {
			err = -ENAMETOOLONG;
			break;
		}
		n = walk_one(cur, p, len);
		if (!n) {
			err = -ENOENT;
			break;
		}
		bool last = !end[strspn(end, "/")];
		if (S_ISLNK(n->type) && (!last || follow || *end == '/')) {
			/* Splice the target in front of the rest of the path. */
			char *nb;

			if (++links > RESOLVE_MAX_LINKS) {
				err = -ELOOP;
				break;
			}
			if (asprintf(&nb, "%s%s", n->u.target, end) < 0) {
				err = -ENOMEM;
				break;
			}
			if (n->u.target[0] == '/')
				cur = fs->root;
			free(buf);
			buf = p = nb;
			continue;
		}
		if (last && *end == '/' && !S_ISDIR(n->type)) {
			err = -ENOTDIR;
			break;
		}
		cur = n;
		p = end;
	}
	if (!err) {
		ramfs_ref(cur, 1);
		*out = cur->ino;
	}
	pthread_rwlock_unlock(&fs->ns_lock);
	free(buf);
	return err;
}
