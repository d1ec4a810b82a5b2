/* SPDX-License-Identifier: MIT */
/*
 * The namespace: lookups and changes on the merged tree. The rules, as in
 * overlayfs: a name is looked up in the upper (RAM) directory first; a whiteout
 * there hides the image's entry; an upper directory that is not opaque is merged
 * with the image directory of the same name. Changes go to the upper layer only,
 * after copying the object (and its parents) up.
 *
 * Locking: ns->lock guards the node tables, node links and every tree change.
 * Lookups and reads do their layer IO without it (the layers are thread-safe and
 * a node's layers only ever gain an upper inode, published atomically). A file's
 * copy-up copies its data without it too (copyup.c): only users of that file
 * wait, and a rename that meets one starts over once it is done.
 *
 * Here: lookups, attributes, creating and removing names, file IO and xattrs.
 * The merged view of one name is merge.c's, listings readdir.c's, renames
 * rename.c's, and copying from the image copy.c's and copyup.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ns_internal.h"
#include "util/util_int.h"


/* ---- small helpers ---- */

int ns_is_tmp_root(const struct cairn_ns *ns, cairn_ino_t upper)
{
	for (size_t i = 0; i < ns->n_tmp_roots; i++)
		if (ns->tmp_roots[i] == upper)
			return 1;
	return 0;
}

/* An image file some of whose names are gone shows the links it has left.
 * Lock held. */
static void lower_nlink(struct cairn_ns *ns, struct cairn_stat *st)
{
	uint64_t gone = ns_link_group(st) ? ns_set_count(&ns->gone_links, st->ino) : 0;

	st->nlink = gone < st->nlink ? st->nlink - (uint32_t)gone : 1;
}

/* Attributes of n: the upper inode once it is the truth, else the image's.
 * `locked`: whether the caller holds ns->lock. */
static int node_stat(struct cairn_ns *ns, struct ns_node *n, struct cairn_stat *st, int locked)
{
	int up = ns_has_upper(n);
	int rc;

	if (up && (ns_writable(ns, n) || !n->has_lower)) {
		rc = cairn_ramfs_getattr(ns->ram, n->upper, st);
	} else {
		rc = cairn_image_stat(ns->img, n->lower, st);
		if (!rc && ns->overlay && ns_link_group(st)) {
			if (!locked)
				pthread_mutex_lock(&ns->lock);
			lower_nlink(ns, st);
			if (!locked)
				pthread_mutex_unlock(&ns->lock);
		}
	}
	if (rc)
		return rc;
	st->ino = n->st_ino;
	/* A merged directory's link count is unknown without a full listing; 1 tells
	 * find(1) not to count subdirectories, as overlayfs does. */
	if (S_ISDIR(st->mode) && up && n->has_lower && ns_writable(ns, n) &&
	    !ns_upper_hides(ns, n->upper, locked))
		st->nlink = 1;
	return 0;
}

/* e->node and e->flags, once e->st is filled. One name of an image file with
 * several is its own node (each copies up alone), so a change through another
 * name changes its link count without a call on this node. */
static void fill_entry(struct cairn_ns *ns, struct ns_node *n, struct cairn_ns_entry *e)
{
	e->node = ns_node_id(ns, n);
	e->flags = ns_writable(ns, n) ? 0 : CAIRN_NS_E_IMMUTABLE;
	if (ns->overlay && !ns_has_upper(n) && ns_link_group(&e->st))
		e->flags |= CAIRN_NS_E_VOLATILE;
}

int ns_check_name(const char *name, size_t len)
{
	if (len > CAIRN_NAME_MAX)
		return -ENAMETOOLONG;
	if (!len || memchr(name, '/', len))
		return -EINVAL;
	return 0;
}

/* The inode number users see for a RAM inode no image object is merged with:
 * the image's for a copy-up (its origin), else the RAM number past the image's. */
uint64_t ns_upper_st_ino(struct cairn_ns *ns, cairn_ino_t up)
{
	uint64_t origin;

	if (ns->img && ns->overlay &&
	    cairn_ramfs_getxattr(ns->ram, up, NS_XATTR_ORIGIN, &origin, sizeof(origin)) ==
		    sizeof(origin))
		return origin;
	return up + ns->ino_offset;
}

/* Make a node for a looked-up or created object, or find the one standing for it.
 * `up` (with one RAM reference, which the node keeps or drops) and `lower` may
 * each be absent. Lock held. */
static int get_node(struct cairn_ns *ns, struct ns_node *parent, const char *name, size_t len,
		    const struct cairn_stat *up, int has_lower, cairn_ino_t lower, uint32_t mode,
		    int share_lower, struct ns_node **out)
{
	struct ns_node *n = NULL;

	if (up)
		n = ns_table_find_upper(ns, up->ino);
	if (!n && !up && has_lower && share_lower)
		n = ns_table_find_lower(ns, lower);
	if (n) {
		if (up)
			cairn_ramfs_forget(ns->ram, up->ino, 1);
		*out = n;
		return 0;
	}
	n = ns_node_new(ns, parent, name, len);
	if (!n) {
		if (up)
			cairn_ramfs_forget(ns->ram, up->ino, 1);
		return -ENOMEM;
	}
	n->type = mode & S_IFMT;
	n->has_lower = has_lower != 0;
	n->lower = lower;
	if (up) {
		n->upper = up->ino;
		n->has_upper = 1;
	}
	n->tmp = parent->tmp || (up && ns_is_tmp_root(ns, up->ino));
	n->st_ino = has_lower ? lower : ns_upper_st_ino(ns, up->ino);
	ns_node_add(ns, n, share_lower);
	*out = n;
	return 0;
}

/* Return n as an entry with one more lookup reference. Lock held. */
static int give_entry(struct cairn_ns *ns, struct ns_node *n, struct cairn_ns_entry *e)
{
	int rc = node_stat(ns, n, &e->st, 1);

	if (rc) {
		ns_node_put(ns, n, 0); /* frees it if it was new */
		return rc;
	}
	n->nlookup++;
	__atomic_add_fetch(&ns->refs, 1, __ATOMIC_RELAXED);
	fill_entry(ns, n, e);
	return 0;
}

/* A lean namespace's lookup: the image's answer, with no node kept and no lock
 * taken. */
static int lean_lookup(struct cairn_ns *ns, struct ns_node *d, const char *name, size_t len,
		       struct cairn_ns_entry *e)
{
	cairn_ino_t ino;
	int rc;

	e->flags = CAIRN_NS_E_IMMUTABLE;
	if (d->type != S_IFDIR)
		return -ENOTDIR;
	rc = cairn_image_lookup(ns->img, d->lower, name, len, &ino);
	if (!rc)
		rc = cairn_image_stat(ns->img, ino, &e->st);
	if (rc)
		return rc;
	e->node = ns_lean_id(ino, e->st.mode);
	__atomic_add_fetch(&ns->refs, 1, __ATOMIC_RELAXED);
	return 0;
}

/* A lean namespace keeps no lookup counts, only their sum (cairn_ns_usage):
 * a forget below zero can only be seen there. */
static void lean_put(struct cairn_ns *ns, uint64_t nlookup)
{
	uint64_t old = __atomic_load_n(&ns->refs, __ATOMIC_RELAXED), left;

	do {
		left = old >= nlookup ? old - nlookup : 0;
	} while (!__atomic_compare_exchange_n(&ns->refs, &old, left, 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	if (old < nlookup)
		__atomic_add_fetch(&ns->over_forgets, 1, __ATOMIC_RELAXED);
}

/* ---- lookup and lifetime ---- */

int cairn_ns_lookup(struct cairn_ns *ns, uint64_t dir, const char *name, size_t len,
		    struct cairn_ns_entry *e)
{
	struct ns_node view, *d, *n;
	struct ns_dsnap s;
	struct ns_mentry m;
	int rc, have_low, share;

	memset(e, 0, sizeof(*e));
	if (len > CAIRN_NAME_MAX)
		return -ENAMETOOLONG;
	if (ns->lean)
		return lean_lookup(ns, ns_node_get(ns, dir, &view), name, len, e);
	pthread_mutex_lock(&ns->lock);
	d = ns_node_get(ns, dir, &view);
	ns_snap_dir(ns, d, &s);
	if (!ns_writable(ns, d))
		e->flags = CAIRN_NS_E_IMMUTABLE;
	pthread_mutex_unlock(&ns->lock);
	if (d->type != S_IFDIR)
		return -ENOTDIR;

	/* The layers' IO without the lock; the upper entry keeps its reference
	 * for the node. Below an upper entry only an image directory shows. */
	rc = ns_find_entry(ns, &s, name, len, NS_FIND_KEEP_REF, &m);
	if (rc)
		return rc;
	if (!ns_entry_exists(&m))
		return -ENOENT;
	have_low = m.in_lower && (!m.in_upper || S_ISDIR(m.lower_mode));
	/* One name of an image file with several is a node of its own. */
	share = m.in_upper || S_ISDIR(m.lower_mode) || m.lower_nlink <= 1;

	pthread_mutex_lock(&ns->lock);
	rc = get_node(ns, d, name, len, m.in_upper ? &m.ust : NULL, have_low, m.lower,
		      ns_entry_mode(&m), share, &n);
	if (rc == 0)
		rc = give_entry(ns, n, e);
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

void cairn_ns_forget(struct cairn_ns *ns, uint64_t node, uint64_t nlookup)
{
	struct ns_node view;

	if (ns->lean) {
		if (node != CAIRN_NS_ROOT)
			lean_put(ns, nlookup);
		return;
	}
	pthread_mutex_lock(&ns->lock);
	ns_node_put(ns, ns_node_get(ns, node, &view), nlookup);
	pthread_mutex_unlock(&ns->lock);
}

void cairn_ns_hold(struct cairn_ns *ns, uint64_t node)
{
	struct ns_node view;

	if (node != CAIRN_NS_ROOT)
		__atomic_add_fetch(&ns->refs, 1, __ATOMIC_RELAXED);
	if (ns->lean)
		return;
	pthread_mutex_lock(&ns->lock);
	ns_node_get(ns, node, &view)->nlookup++;
	pthread_mutex_unlock(&ns->lock);
}

int cairn_ns_getattr(struct cairn_ns *ns, uint64_t node, struct cairn_ns_entry *e)
{
	struct ns_node view, *n = ns_node_get(ns, node, &view);
	int rc;

	memset(e, 0, sizeof(*e));
	rc = node_stat(ns, n, &e->st, 0);
	fill_entry(ns, n, e);
	return rc;
}

int ns_prep_write(struct cairn_ns *ns, struct ns_node *n, uint64_t keep)
{
	if (!ns_writable(ns, n))
		return -EROFS;
	return ns_copy_up(ns, n, keep, 1);
}

static int prep_write(struct cairn_ns *ns, struct ns_node *n)
{
	return ns_prep_write(ns, n, NS_KEEP_ALL);
}

/* What the kernel's file_remove_privs() and ATTR_KILL_PRIV do beside clearing
 * set-user-ID (which the RAM fs does): a change to a file's data or owner drops
 * its file capabilities, so a modified binary keeps no privilege. For every
 * caller of the namespace, not only a FUSE kernel that asks the daemon to. */
static void kill_priv(struct cairn_ns *ns, cairn_ino_t up)
{
	cairn_ramfs_removexattr(ns->ram, up, "security.capability"); /* mostly -ENODATA */
}

int cairn_ns_setattr(struct cairn_ns *ns, uint64_t node, const struct cairn_setattr *sa,
		     const struct cairn_cred *cred, struct cairn_ns_entry *e)
{
	struct ns_node view, *n = ns_node_get(ns, node, &view);
	int rc;

	memset(e, 0, sizeof(*e));
	pthread_mutex_lock(&ns->lock);
	rc = ns_prep_write(ns, n, (sa->valid & CAIRN_SET_SIZE) ? sa->size : NS_KEEP_ALL);
	pthread_mutex_unlock(&ns->lock);
	if (rc)
		return rc;
	rc = cairn_ramfs_setattr(ns->ram, n->upper, sa, cred, &e->st);
	if (!rc && S_ISREG(e->st.mode) &&
	    (sa->valid & (CAIRN_SET_SIZE | CAIRN_SET_UID | CAIRN_SET_GID | CAIRN_SET_CHOWN)))
		kill_priv(ns, n->upper);
	if (!rc)
		rc = node_stat(ns, n, &e->st, 0);
	fill_entry(ns, n, e);
	return rc;
}

/* ---- creating names ---- */

enum create_kind { C_NOD, C_DIR, C_SYMLINK, C_LINK };
struct create_args {
	enum create_kind kind;
	uint32_t mode;
	uint64_t rdev;
	const char *target;
	struct ns_node *src;            /* C_LINK */
	const struct cairn_cred *cred;
};

static int do_create(struct cairn_ns *ns, uint64_t dir, const char *name, size_t len,
		     const struct create_args *a, struct cairn_ns_entry *e)
{
	struct ns_node view, *d = ns_node_get(ns, dir, &view), *n;
	struct ns_dsnap s;
	struct ns_mentry m;
	struct cairn_stat st;
	char *tmp_name = NULL;
	int rc = ns_check_name(name, len);

	memset(e, 0, sizeof(*e));
	if (rc)
		return rc;
	pthread_mutex_lock(&ns->lock);
	/* Naming an O_TMPFILE node: its name is made before anything changes. */
	if (a->kind == C_LINK && a->src->name_len == 0 && !(tmp_name = ns_name_dup(name, len))) {
		rc = -ENOMEM;
		goto out;
	}
	if (d->type != S_IFDIR) {
		rc = -ENOTDIR;
		goto out;
	}
	rc = prep_write(ns, d);
	if (!rc && a->kind == C_LINK)
		rc = prep_write(ns, a->src);
	if (rc)
		goto out;
	ns_snap_dir(ns, d, &s);
	rc = ns_find_entry(ns, &s, name, len, NS_FIND_LOCKED | NS_FIND_HIDDEN, &m);
	if (rc)
		goto out;
	if (ns_entry_exists(&m)) {
		rc = -EEXIST;
		goto out;
	}
	if (m.whiteout) {
		rc = cairn_ramfs_unlink(ns->ram, s.upper, name, len);
		if (rc)
			goto out;
	}
	switch (a->kind) {
	case C_NOD:
		rc = cairn_ramfs_mknod(ns->ram, s.upper, name, len, a->mode, a->rdev, a->cred, &st);
		break;
	case C_DIR:
		rc = cairn_ramfs_mkdir(ns->ram, s.upper, name, len, a->mode, a->cred, &st);
		break;
	case C_SYMLINK:
		rc = cairn_ramfs_symlink(ns->ram, s.upper, name, len, a->target, a->cred, &st);
		break;
	case C_LINK:
		rc = cairn_ramfs_link(ns->ram, a->src->upper, s.upper, name, len, &st);
		break;
	}
	if (rc) {
		if (m.whiteout)
			ns_make_whiteout(ns, s.upper, name, len); /* best effort: keep it hidden */
		goto out;
	}
	/* A directory made where an image entry was deleted must not show it again. */
	if (m.whiteout && S_ISDIR(st.mode))
		ns_set_add(&ns->opaque, st.ino);
	rc = get_node(ns, d, name, len, &st, 0, 0, st.mode, 0, &n);
	if (rc == 0 && n->name_len == 0 && tmp_name) { /* an O_TMPFILE node named at last */
		ns_node_move(ns, n, d, tmp_name, len);
		tmp_name = NULL;
	}
	if (rc == 0)
		rc = give_entry(ns, n, e);
out:
	pthread_mutex_unlock(&ns->lock);
	free(tmp_name);
	return rc;
}

int cairn_ns_mknod(struct cairn_ns *ns, uint64_t dir, const char *name, size_t len,
		   uint32_t mode, uint64_t rdev, const struct cairn_cred *cred,
		   struct cairn_ns_entry *e)
{
	struct create_args a = { .kind = C_NOD, .mode = mode, .rdev = rdev, .cred = cred };

	if (S_ISDIR(mode))
		return -EINVAL;
	return do_create(ns, dir, name, len, &a, e);
}

int cairn_ns_mkdir(struct cairn_ns *ns, uint64_t dir, const char *name, size_t len,
		   uint32_t mode, const struct cairn_cred *cred, struct cairn_ns_entry *e)
{
	struct create_args a = { .kind = C_DIR, .mode = mode, .cred = cred };

	return do_create(ns, dir, name, len, &a, e);
}

int cairn_ns_symlink(struct cairn_ns *ns, uint64_t dir, const char *name, size_t len,
		     const char *target, const struct cairn_cred *cred, struct cairn_ns_entry *e)
{
	struct create_args a = { .kind = C_SYMLINK, .target = target, .cred = cred };

	return do_create(ns, dir, name, len, &a, e);
}

int cairn_ns_link(struct cairn_ns *ns, uint64_t node, uint64_t newdir, const char *name,
		  size_t len, struct cairn_ns_entry *e)
{
	struct ns_node view;
	struct create_args a = { .kind = C_LINK, .src = ns_node_get(ns, node, &view) };

	if (a.src->type == S_IFDIR)
		return -EPERM;
	return do_create(ns, newdir, name, len, &a, e);
}

int cairn_ns_tmpfile(struct cairn_ns *ns, uint64_t dir, uint32_t mode,
		     const struct cairn_cred *cred, struct cairn_ns_entry *e)
{
	struct ns_node view, *d = ns_node_get(ns, dir, &view), *n;
	struct cairn_stat st;
	int rc;

	memset(e, 0, sizeof(*e));
	pthread_mutex_lock(&ns->lock);
	rc = d->type == S_IFDIR ? prep_write(ns, d) : -ENOTDIR;
	if (!rc)
		rc = cairn_ramfs_tmpfile(ns->ram, d->upper, mode, cred, &st);
	/* A node with no name yet: link() gives it one (do_create). */
	if (!rc)
		rc = get_node(ns, d, "", 0, &st, 0, 0, st.mode, 0, &n);
	if (!rc)
		rc = give_entry(ns, n, e);
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

/* ---- removing names ---- */

static int do_remove(struct cairn_ns *ns, uint64_t dir, const char *name, size_t len, int isdir)
{
	struct ns_node view, *d = ns_node_get(ns, dir, &view);
	struct ns_dsnap s;
	struct ns_mentry m;
	int rc = ns_check_name(name, len);

	if (rc)
		return rc;
	pthread_mutex_lock(&ns->lock);
	rc = prep_write(ns, d);
	if (rc)
		goto out;
	ns_snap_dir(ns, d, &s);
	rc = ns_find_entry(ns, &s, name, len, NS_FIND_LOCKED | NS_FIND_HIDDEN, &m);
	if (rc)
		goto out;
	if (!ns_entry_exists(&m)) {
		rc = -ENOENT;
		goto out;
	}
	if (isdir && !S_ISDIR(ns_entry_mode(&m))) {
		rc = -ENOTDIR;
		goto out;
	}
	if (!isdir && S_ISDIR(ns_entry_mode(&m))) {
		rc = -EISDIR;
		goto out;
	}
	if (isdir) {
		int hu, hl;
		cairn_ino_t u, l;

		ns_entry_dir_layers(ns, &m, &hu, &u, &hl, &l);
		rc = ns_dir_empty(ns, hu, u, hl, l);
		if (!rc && hu)
			rc = ns_purge_whiteouts(ns, u);
		if (!rc && hu)
			rc = cairn_ramfs_rmdir(ns->ram, s.upper, name, len);
		if (!rc && hu)
			ns_set_del(&ns->opaque, u);
	} else if (m.in_upper) {
		rc = cairn_ramfs_unlink(ns->ram, s.upper, name, len);
	}
	if (!rc && m.in_lower && !m.whiteout)
		rc = ns_make_whiteout(ns, s.upper, name, len);
	if (!rc && m.in_lower && !m.whiteout && !m.in_upper)
		rc = ns_lower_name_gone(ns, m.lower);
out:
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

int cairn_ns_unlink(struct cairn_ns *ns, uint64_t dir, const char *name, size_t len)
{
	return do_remove(ns, dir, name, len, 0);
}

int cairn_ns_rmdir(struct cairn_ns *ns, uint64_t dir, const char *name, size_t len)
{
	return do_remove(ns, dir, name, len, 1);
}

/* ---- reading ---- */

ssize_t cairn_ns_readlink(struct cairn_ns *ns, uint64_t node, char *buf, size_t len)
{
	struct ns_node view, *n = ns_node_get(ns, node, &view);

	if (n->type != S_IFLNK)
		return -EINVAL;
	if (ns_has_upper(n))
		return cairn_ramfs_readlink(ns->ram, n->upper, buf, len);
	return cairn_image_readlink(ns->img, n->lower, buf, len);
}

/* ---- files ---- */

/* open(O_TRUNC) of a regular file: size 0, and mtime and ctime now even when it
 * was empty (open(2)); setuid cleared for non-root as on any truncate. */
static int open_truncate(struct cairn_ns *ns, struct ns_node *n, const struct cairn_cred *cred)
{
	struct cairn_setattr sa;

	memset(&sa, 0, sizeof(sa));
	sa.valid = CAIRN_SET_SIZE | CAIRN_SET_MTIME_NOW;
	return cairn_ramfs_setattr(ns->ram, n->upper, &sa, cred, NULL);
}

int cairn_ns_open(struct cairn_ns *ns, uint64_t node, int flags, const struct cairn_cred *cred,
		  uint64_t *fh)
{
	struct ns_node view, *n = ns_node_get(ns, node, &view);
	int trunc = (flags & O_TRUNC) && n->type == S_IFREG;
	int rc = 0;

	*fh = 0;
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) {
		pthread_mutex_lock(&ns->lock);
		/* Truncating: copied up at size 0, without its data (as overlayfs). */
		rc = ns_prep_write(ns, n, trunc ? 0 : NS_KEEP_ALL);
		pthread_mutex_unlock(&ns->lock);
		if (rc)
			return rc;
	}
	if (ns_has_upper(n)) {
		rc = cairn_ramfs_open(ns->ram, n->upper);
		if (rc)
			return rc;
		if (trunc)
			rc = open_truncate(ns, n, cred);
		if (trunc && !rc)
			kill_priv(ns, n->upper);
		if (rc) {
			cairn_ramfs_release(ns->ram, n->upper);
			return rc;
		}
		*fh = (n->upper << 1) | 1; /* release drops this inode, whatever happens */
	}
	return 0;
}

void cairn_ns_release(struct cairn_ns *ns, uint64_t node, uint64_t fh)
{
	(void)node;
	if (fh & 1)
		cairn_ramfs_release(ns->ram, fh >> 1);
}

/* CAIRN_NS_USE_ONCE: what a reader got of an image file is its to keep. */
static void delivered(struct cairn_ns *ns, cairn_ino_t lower, uint64_t off, ssize_t got)
{
	if (ns->use_once && got > 0)
		cairn_image_delivered(ns->img, lower, off, (uint64_t)got);
}

ssize_t cairn_ns_read(struct cairn_ns *ns, uint64_t node, void *buf, size_t len, uint64_t off)
{
	return cairn_ns_read_flags(ns, node, buf, len, off, 0);
}

ssize_t cairn_ns_read_flags(struct cairn_ns *ns, uint64_t node, void *buf, size_t len,
			    uint64_t off, unsigned flags)
{
	struct ns_node view, *n = ns_node_get(ns, node, &view);

	if (n->type == S_IFDIR)
		return -EISDIR;
	if (ns_has_upper(n))
		return cairn_ramfs_read(ns->ram, n->upper, buf, len, off);
	return cairn_image_read_flags(ns->img, n->lower, buf, len, off, flags);
}

int cairn_ns_hot_ranges(struct cairn_ns *ns, uint64_t node, cairn_range_cb fn, void *ctx)
{
	struct ns_node view, *n = ns_node_get(ns, node, &view);

	if (n->type != S_IFREG || ns_has_upper(n) || !n->has_lower)
		return 0;
	return cairn_image_hot_ranges(ns->img, n->lower, fn, ctx);
}

int cairn_ns_chunk_span(struct cairn_ns *ns, uint64_t node, uint64_t off, uint64_t *lo,
			uint64_t *hi)
{
	struct ns_node view, *n = ns_node_get(ns, node, &view);

	if (n->type != S_IFREG || ns_has_upper(n) || !n->has_lower)
		return -ENOENT;
	return cairn_image_chunk_span(ns->img, n->lower, off, lo, hi);
}

int cairn_ns_read_random(struct cairn_ns *ns, uint64_t node, uint64_t off, uint64_t len)
{
	struct ns_node view, *n = ns_node_get(ns, node, &view);

	if (n->type != S_IFREG || ns_has_upper(n) || !n->has_lower)
		return 0;
	return cairn_image_read_random(ns->img, n->lower, off, len);
}

void cairn_ns_delivered(struct cairn_ns *ns, uint64_t node, uint64_t off, uint64_t len)
{
	struct ns_node view, *n = ns_node_get(ns, node, &view);

	if (ns->use_once && n->type == S_IFREG && !ns_has_upper(n) && n->has_lower && len)
		cairn_image_pushed(ns->img, n->lower, off, len);
}

/* A buffer for an image read of len bytes: a large one from the kept few
 * (util_bufpool says why; per 1 MiB FUSE read a fresh one cost more system
 * time than the copy, in the threads a cold start waits on:
 * docs/bench/vcost4.md), a small one from the heap. */
static void *read_buf_get(struct cairn_ns *ns, size_t len)
{
	if (len < NS_READ_BUF_MIN || len > NS_READ_BUF)
		return malloc(len ? len : 1);
	return util_bufpool_get(&ns->read_bufs);
}

static void read_buf_put(struct cairn_ns *ns, void *p, size_t len)
{
	if (len < NS_READ_BUF_MIN || len > NS_READ_BUF)
		free(p);
	else
		util_bufpool_put(&ns->read_bufs, p);
}

/* The reader of a pinned image read, and how many bytes it was lent. */
struct lent {
	cairn_iov_fn fn;
	void *ctx;
	size_t total;
};

static int lend_to(void *ctx, const struct iovec *iov, int iovcnt, size_t total)
{
	struct lent *l = ctx;

	l->total = total;
	return l->fn(l->ctx, iov, iovcnt, total);
}

/* An image read lent from the segment cache (no copy); CAIRN_CACHE_COPY when
 * the file or cache cannot lend. */
static int read_pinned(struct cairn_ns *ns, cairn_ino_t lower, size_t len, uint64_t off,
		       cairn_iov_fn fn, void *ctx)
{
	struct lent l = { fn, ctx, 0 };
	int rc = cairn_image_read_pinned(ns->img, lower, len, off, lend_to, &l);

	if (!rc)
		delivered(ns, lower, off, (ssize_t)l.total);
	return rc;
}

int cairn_ns_read_iov(struct cairn_ns *ns, uint64_t node, size_t len, uint64_t off,
		      cairn_iov_fn fn, void *ctx, int *from_image)
{
	struct ns_node view, *n = ns_node_get(ns, node, &view);
	cairn_ino_t lower;
	struct iovec iov;
	ssize_t got;
	int rc;

	if (n->type == S_IFDIR)
		return -EISDIR;
	if (ns_has_upper(n)) {
		cairn_ino_t up = n->upper;

		if (from_image)
			*from_image = 0;
		/* fn replies to the kernel, which may then evict the inode and
		 * forget the node (on another thread) while the RAM fs still finishes
		 * the read: hold the inode open across it. Neither n nor its node id
		 * may be used once fn has run. */
		rc = cairn_ramfs_open(ns->ram, up);
		if (rc)
			return rc;
		rc = cairn_ramfs_read_iov(ns->ram, up, len, off, fn, ctx);
		cairn_ramfs_release(ns->ram, up);
		return rc;
	}
	if (from_image)
		*from_image = 1;
	lower = n->lower; /* n may be forgotten once fn has replied */
	rc = read_pinned(ns, lower, len, off, fn, ctx);
	if (rc != CAIRN_CACHE_COPY)
		return rc;
	iov.iov_base = read_buf_get(ns, len);
	if (!iov.iov_base)
		return -ENOMEM;
	got = cairn_image_read(ns->img, lower, iov.iov_base, len, off);
	if (got < 0) {
		read_buf_put(ns, iov.iov_base, len);
		return (int)got;
	}
	iov.iov_len = (size_t)got;
	rc = fn(ctx, &iov, 1, (size_t)got);
	read_buf_put(ns, iov.iov_base, len);
	if (!rc)
		delivered(ns, lower, off, got);
	return rc;
}

ssize_t cairn_ns_write(struct cairn_ns *ns, uint64_t node, const void *buf, size_t len,
		       uint64_t off, int append, const struct cairn_cred *cred)
{
	struct ns_node view, *n = ns_node_get(ns, node, &view);
	ssize_t n_written;

	if (!ns_has_upper(n)) {
		int rc;

		pthread_mutex_lock(&ns->lock);
		rc = prep_write(ns, n);
		pthread_mutex_unlock(&ns->lock);
		if (rc)
			return rc;
	}
	n_written = cairn_ramfs_write(ns->ram, n->upper, buf, len, off, append, cred);
	if (n_written > 0)
		kill_priv(ns, n->upper);
	return n_written;
}

int cairn_ns_fallocate(struct cairn_ns *ns, uint64_t node, int mode, uint64_t off, uint64_t len)
{
	struct ns_node view, *n = ns_node_get(ns, node, &view);
	int rc;

	pthread_mutex_lock(&ns->lock);
	rc = prep_write(ns, n);
	pthread_mutex_unlock(&ns->lock);
	return rc ? rc : cairn_ramfs_fallocate(ns->ram, n->upper, mode, off, len);
}

int64_t cairn_ns_lseek(struct cairn_ns *ns, uint64_t node, uint64_t off, int whence)
{
	struct ns_node view, *n = ns_node_get(ns, node, &view);

	if (ns_has_upper(n))
		return cairn_ramfs_lseek(ns->ram, n->upper, off, whence);
	/* The image knows its holes (extents of sparse files): cp, tar -S and rsync
	 * -S skip them instead of reading gigabytes of zeros. */
	return cairn_image_lseek(ns->img, n->lower, off, whence);
}

int cairn_ns_statfs(struct cairn_ns *ns, struct cairn_statfs *out)
{
	struct cairn_image_info info;

	if (ns->ram)
		return cairn_ramfs_statfs(ns->ram, out);
	memset(out, 0, sizeof(*out));
	cairn_image_get_info(ns->img, &info);
	out->block_size = 4096;
	out->blocks = (info.image_size + 4095) / 4096;
	out->files = info.inode_count;
	out->name_max = CAIRN_NAME_MAX;
	return 0;
}

/* ---- xattrs ---- */

int ns_reserved_xattr(const char *name)
{
	return !strncmp(name, NS_XATTR_PREFIX, sizeof(NS_XATTR_PREFIX) - 1);
}

int cairn_ns_setxattr(struct cairn_ns *ns, uint64_t node, const char *name, const void *value,
		      size_t size, int flags)
{
	struct ns_node view, *n = ns_node_get(ns, node, &view);
	int rc;

	if (ns_reserved_xattr(name))
		return -EPERM;
	pthread_mutex_lock(&ns->lock);
	rc = prep_write(ns, n);
	pthread_mutex_unlock(&ns->lock);
	return rc ? rc : cairn_ramfs_setxattr(ns->ram, n->upper, name, value, size, flags);
}

ssize_t cairn_ns_getxattr(struct cairn_ns *ns, uint64_t node, const char *name, void *buf,
			  size_t size)
{
	struct ns_node view, *n = ns_node_get(ns, node, &view);
	int kind;

	if (ns_reserved_xattr(name))
		return -ENODATA;
	if (ns_has_upper(n))
		return cairn_ramfs_getxattr(ns->ram, n->upper, name, buf, size);
	/* The name's rules before the image's answer, as the RAM layer has them. */
	kind = util_xattr_ns(name, strlen(name));
	if (kind < 0)
		return kind;
	if (kind == UTIL_XATTR_USER && n->type != S_IFREG && n->type != S_IFDIR)
		return -ENODATA;
	return cairn_image_getxattr(ns->img, n->lower, name, buf, size);
}

/* The RAM layer's list without the namespace's own names. */
static ssize_t list_upper_xattrs(struct cairn_ns *ns, cairn_ino_t ino, char *buf, size_t size)
{
	ssize_t len = cairn_ramfs_listxattr(ns->ram, ino, NULL, 0);
	size_t out = 0;
	char *all;

	if (len <= 0)
		return len;
	all = malloc((size_t)len);
	if (!all)
		return -ENOMEM;
	len = cairn_ramfs_listxattr(ns->ram, ino, all, (size_t)len);
	for (ssize_t i = 0; i < len; i += (ssize_t)strlen(all + i) + 1) {
		size_t l = strlen(all + i) + 1;

		if (ns_reserved_xattr(all + i))
			continue;
		if (size && out + l > size) {
			free(all);
			return -ERANGE;
		}
		if (size)
			memcpy(buf + out, all + i, l);
		out += l;
	}
	free(all);
	return len < 0 ? len : (ssize_t)out;
}

ssize_t cairn_ns_listxattr(struct cairn_ns *ns, uint64_t node, char *buf, size_t size)
{
	struct ns_node view, *n = ns_node_get(ns, node, &view);

	if (ns_has_upper(n))
		return list_upper_xattrs(ns, n->upper, buf, size);
	return cairn_image_listxattr(ns->img, n->lower, buf, size);
}

int cairn_ns_removexattr(struct cairn_ns *ns, uint64_t node, const char *name)
{
	struct ns_node view, *n = ns_node_get(ns, node, &view);
	int rc;

	if (ns_reserved_xattr(name))
		return -EPERM;
	pthread_mutex_lock(&ns->lock);
	rc = prep_write(ns, n);
	pthread_mutex_unlock(&ns->lock);
	return rc ? rc : cairn_ramfs_removexattr(ns->ram, n->upper, name);
}

/* ---- misc ---- */

/* A lean namespace keeps no names, so a path (for an error message) is found by
 * walking the image's directories depth first for the inode; bounded, since a
 * big image would otherwise be read whole for one message. */
#define LEAN_PATH_BUDGET 200000u /* directory entries looked at */

struct lean_path {
	struct cairn_image *img;
	cairn_ino_t want;
	char *buf;
	size_t len, pos;     /* buf[0..pos) names the directory being listed */
	unsigned budget;
	int found;
};

static int lean_path_entry(void *ctx, const char *name, size_t name_len, cairn_ino_t ino,
			   unsigned dtype, uint64_t next)
{
	struct lean_path *f = ctx;
	size_t at = f->pos;

	(void)next;
	if ((name_len == 1 && name[0] == '.') || (name_len == 2 && !memcmp(name, "..", 2)))
		return 0;
	if (f->budget == 0)
		return 1;
	f->budget--;
	if ((ino != f->want && dtype != DT_DIR) || at + name_len + 2 > f->len)
		return 0;
	f->buf[at] = '/';
	memcpy(f->buf + at + 1, name, name_len);
	f->pos = at + 1 + name_len;
	f->buf[f->pos] = 0;
	if (ino == f->want) {
		f->found = 1;
		return 1;
	}
	/* the image calls back with no lock held, so listing a subdirectory is allowed */
	(void)cairn_image_readdir(f->img, ino, 0, lean_path_entry, f);
	if (f->found || f->budget == 0)
		return 1;
	f->pos = at;
	return 0;
}

static ssize_t lean_path(struct cairn_ns *ns, uint64_t node, char *buf, size_t len)
{
	struct ns_node view;
	struct lean_path f = { .img = ns->img, .buf = buf, .len = len,
			       .budget = LEAN_PATH_BUDGET };

	f.want = ns_node_get(ns, node, &view)->lower;
	if (len < 2)
		return -ERANGE;
	(void)cairn_image_readdir(ns->img, cairn_image_root(ns->img), 0, lean_path_entry, &f);
	return f.found ? (ssize_t)f.pos : -ENOENT;
}

ssize_t cairn_ns_path(struct cairn_ns *ns, uint64_t node, char *buf, size_t len)
{
	struct ns_node view, *n;
	size_t need = 0, pos;

	if (ns->lean && node != CAIRN_NS_ROOT)
		return lean_path(ns, node, buf, len);
	pthread_mutex_lock(&ns->lock);
	n = ns_node_get(ns, node, &view);
	for (struct ns_node *p = n; p && p->parent; p = p->parent)
		need += p->name_len + 1;
	if (need == 0)
		need = 1; /* "/" */
	if (need + 1 > len) {
		pthread_mutex_unlock(&ns->lock);
		return -ERANGE;
	}
	buf[need] = 0;
	buf[0] = '/';
	pos = need;
	for (struct ns_node *p = n; p && p->parent; p = p->parent) {
		pos -= p->name_len;
		memcpy(buf + pos, p->name, p->name_len);
		buf[--pos] = '/';
	}
	pthread_mutex_unlock(&ns->lock);
	return (ssize_t)need;
}

void cairn_ns_usage(struct cairn_ns *ns, struct cairn_ns_usage *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&ns->lock);
	out->nodes = ns->nodes;
	out->copy_ups = ns->copy_ups;
	out->refs = __atomic_load_n(&ns->refs, __ATOMIC_RELAXED);
	out->over_forgets = __atomic_load_n(&ns->over_forgets, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ns->lock);
	if (ns->ram)
		cairn_ramfs_usage(ns->ram, &out->ram);
}

struct cairn_ramfs *cairn_ns_ramfs(struct cairn_ns *ns)
{
	return ns->ram;
}
