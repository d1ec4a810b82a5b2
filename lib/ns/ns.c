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
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>
#include "ns_internal.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define NAME_MAX_LEN 255
#define LOWER_COOKIE (1ull << 62)

/* ---- small helpers ---- */

static int is_whiteout(const struct cairn_stat *st)
{
	return (st->mode & S_IFMT) == S_IFCHR && st->rdev == 0;
}

/* Whether n may change: everything in an overlay or RAM-only namespace, only the
 * RAM subtrees otherwise. */
static int writable(const struct cairn_ns *ns, const struct ns_node *n)
{
	return ns->overlay || n->tmp;
}

static int is_tmp_root(const struct cairn_ns *ns, cairn_ino_t upper)
{
	for (size_t i = 0; i < ns->n_tmp_roots; i++)
		if (ns->tmp_roots[i] == upper)
			return 1;
	return 0;
}

/* A directory's layers as seen at one moment. */
struct dsnap {
	int has_lower, has_upper, opaque;
	cairn_ino_t lower, upper;
};

static void snap_dir(struct cairn_ns *ns, struct ns_node *d, struct dsnap *s)
{
	s->has_upper = ns_has_upper(d);
	s->upper = s->has_upper ? d->upper : 0;
	s->has_lower = d->has_lower;
	s->lower = d->lower;
	s->opaque = s->has_upper && (ns_set_has(&ns->opaque, s->upper) || d->tmp);
}

/* Does the image show through below an upper directory? */
static int merged(const struct dsnap *s)
{
	return s->has_lower && !s->opaque;
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

	if (up && (writable(ns, n) || !n->has_lower)) {
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
	if (S_ISDIR(st->mode) && up && n->has_lower && !ns_set_has(&ns->opaque, n->upper) &&
	    writable(ns, n))
		st->nlink = 1;
	return 0;
}

/* e->node and e->flags, once e->st is filled. One name of an image file with
 * several is its own node (each copies up alone), so a change through another
 * name changes its link count without a call on this node. */
static void fill_entry(struct cairn_ns *ns, struct ns_node *n, struct cairn_ns_entry *e)
{
	e->node = ns_node_id(ns, n);
	e->flags = writable(ns, n) ? 0 : CAIRN_NS_E_IMMUTABLE;
	if (ns->overlay && !ns_has_upper(n) && ns_link_group(&e->st))
		e->flags |= CAIRN_NS_E_VOLATILE;
}

static int check_name(const char *name, size_t len)
{
	if (len > NAME_MAX_LEN)
		return -ENAMETOOLONG;
	if (!len || memchr(name, '/', len))
		return -EINVAL;
	return 0;
}

/* One name in a merged directory. */
struct mentry {
	int in_upper, whiteout, in_lower;
	struct cairn_stat ust;          /* upper attributes (ref dropped) */
	cairn_ino_t lower;
	uint32_t lower_mode;
};

static int find_entry(struct cairn_ns *ns, const struct dsnap *d, const char *name, size_t len,
		      struct mentry *m)
{
	int rc;

	memset(m, 0, sizeof(*m));
	if (d->has_upper) {
		rc = cairn_ramfs_lookup(ns->ram, d->upper, name, len, &m->ust);
		if (rc == 0) {
			cairn_ramfs_forget(ns->ram, m->ust.ino, 1);
			if (is_whiteout(&m->ust))
				m->whiteout = 1;
			else
				m->in_upper = 1;
		} else if (rc != -ENOENT) {
			return rc;
		}
	}
	if (!m->in_upper && !m->whiteout && merged(d)) {
		struct cairn_stat ls;

		rc = cairn_image_lookup(ns->img, d->lower, name, len, &m->lower);
		if (rc == 0)
			rc = cairn_image_stat(ns->img, m->lower, &ls);
		if (rc == 0) {
			m->in_lower = 1;
			m->lower_mode = ls.mode;
		} else if (rc != -ENOENT) {
			return rc;
		}
	} else if ((m->in_upper || m->whiteout) && merged(d)) {
		/* Whether the image has the name too: removing it needs a whiteout. */
		rc = cairn_image_lookup(ns->img, d->lower, name, len, &m->lower);
		if (rc == 0) {
			struct cairn_stat ls;

			rc = cairn_image_stat(ns->img, m->lower, &ls);
			if (rc)
				return rc;
			m->in_lower = 1;
			m->lower_mode = ls.mode;
		} else if (rc != -ENOENT) {
			return rc;
		}
	}
	return 0;
}

static int entry_exists(const struct mentry *m)
{
	return m->in_upper || (m->in_lower && !m->whiteout);
}

static uint32_t entry_mode(const struct mentry *m)
{
	return m->in_upper ? m->ust.mode : m->lower_mode;
}

static int make_whiteout(struct cairn_ns *ns, cairn_ino_t dir, const char *name, size_t len)
{
	struct cairn_stat st;
	int rc = cairn_ramfs_mknod(ns->ram, dir, name, len, NS_WHITEOUT_MODE, 0, NULL, &st);

	if (rc == 0)
		cairn_ramfs_forget(ns->ram, st.ino, 1);
	return rc;
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
	n->tmp = parent->tmp || (up && is_tmp_root(ns, up->ino));
	n->st_ino = has_lower ? lower : up->ino + ns->ino_offset;
	if (!has_lower && ns->img && ns->overlay) {
		uint64_t origin;

		if (cairn_ramfs_getxattr(ns->ram, up->ino, NS_XATTR_ORIGIN, &origin,
					 sizeof(origin)) == sizeof(origin))
			n->st_ino = origin;
	}
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
	fill_entry(ns, n, e);
	return 0;
}

/* ---- lookup and lifetime ---- */

int cairn_ns_lookup(struct cairn_ns *ns, uint64_t dir, const char *name, size_t len,
		    struct cairn_ns_entry *e)
{
	struct ns_node *d, *n;
	struct dsnap s;
	struct cairn_stat ust;
	int rc, have_up = 0, have_low = 0, share = 1;
	cairn_ino_t lower = 0;
	uint32_t mode = 0;

	memset(e, 0, sizeof(*e));
	if (len > NAME_MAX_LEN)
		return -ENAMETOOLONG;
	pthread_mutex_lock(&ns->lock);
	d = ns_node_get(ns, dir);
	snap_dir(ns, d, &s);
	if (!writable(ns, d))
		e->flags = CAIRN_NS_E_IMMUTABLE;
	pthread_mutex_unlock(&ns->lock);
	if (d->type != S_IFDIR)
		return -ENOTDIR;

	if (s.has_upper) {
		rc = cairn_ramfs_lookup(ns->ram, s.upper, name, len, &ust);
		if (rc == 0 && is_whiteout(&ust)) {
			cairn_ramfs_forget(ns->ram, ust.ino, 1);
			return -ENOENT;
		}
		if (rc && rc != -ENOENT)
			return rc;
		if (rc == 0) {
			have_up = 1;
			mode = ust.mode;
		}
	}
	if (merged(&s) && (!have_up || (S_ISDIR(mode) && !ns_set_has(&ns->opaque, ust.ino) &&
					!is_tmp_root(ns, ust.ino)))) {
		struct cairn_stat ls;

		rc = cairn_image_lookup(ns->img, s.lower, name, len, &lower);
		if (rc == 0)
			rc = cairn_image_stat(ns->img, lower, &ls);
		if (rc == 0 && (!have_up || S_ISDIR(ls.mode))) {
			have_low = 1;
			share = S_ISDIR(ls.mode) || ls.nlink <= 1;
			if (!have_up)
				mode = ls.mode;
		} else if (rc && rc != -ENOENT) {
			if (have_up)
				cairn_ramfs_forget(ns->ram, ust.ino, 1);
			return rc;
		}
	}
	if (!have_up && !have_low)
		return -ENOENT;

	pthread_mutex_lock(&ns->lock);
	rc = get_node(ns, d, name, len, have_up ? &ust : NULL, have_low, lower, mode, share, &n);
	if (rc == 0)
		rc = give_entry(ns, n, e);
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

void cairn_ns_forget(struct cairn_ns *ns, uint64_t node, uint64_t nlookup)
{
	pthread_mutex_lock(&ns->lock);
	ns_node_put(ns, ns_node_get(ns, node), nlookup);
	pthread_mutex_unlock(&ns->lock);
}

void cairn_ns_hold(struct cairn_ns *ns, uint64_t node)
{
	pthread_mutex_lock(&ns->lock);
	ns_node_get(ns, node)->nlookup++;
	pthread_mutex_unlock(&ns->lock);
}

int cairn_ns_getattr(struct cairn_ns *ns, uint64_t node, struct cairn_ns_entry *e)
{
	struct ns_node *n = ns_node_get(ns, node);
	int rc;

	memset(e, 0, sizeof(*e));
	rc = node_stat(ns, n, &e->st, 0);
	fill_entry(ns, n, e);
	return rc;
}

/* Make n changeable: -EROFS where the namespace is read-only, else copy it up
 * with its data below `keep` (a truncation needs no more). */
static int prep_write_keep(struct cairn_ns *ns, struct ns_node *n, uint64_t keep)
{
	if (!writable(ns, n))
		return -EROFS;
	return ns_copy_up(ns, n, keep, 1);
}

static int prep_write(struct cairn_ns *ns, struct ns_node *n)
{
	return prep_write_keep(ns, n, NS_KEEP_ALL);
}

int cairn_ns_setattr(struct cairn_ns *ns, uint64_t node, const struct cairn_setattr *sa,
		     const struct cairn_cred *cred, struct cairn_ns_entry *e)
{
	struct ns_node *n = ns_node_get(ns, node);
	int rc;

	memset(e, 0, sizeof(*e));
	pthread_mutex_lock(&ns->lock);
	rc = prep_write_keep(ns, n, (sa->valid & CAIRN_SET_SIZE) ? sa->size : NS_KEEP_ALL);
	pthread_mutex_unlock(&ns->lock);
	if (rc)
		return rc;
	rc = cairn_ramfs_setattr(ns->ram, n->upper, sa, cred, &e->st);
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
	struct ns_node *d = ns_node_get(ns, dir), *n;
	struct dsnap s;
	struct mentry m;
	struct cairn_stat st;
	int rc = check_name(name, len);

	memset(e, 0, sizeof(*e));
	if (rc)
		return rc;
	pthread_mutex_lock(&ns->lock);
	if (d->type != S_IFDIR) {
		rc = -ENOTDIR;
		goto out;
	}
	rc = prep_write(ns, d);
	if (!rc && a->kind == C_LINK)
		rc = prep_write(ns, a->src);
	if (rc)
		goto out;
	snap_dir(ns, d, &s);
	rc = find_entry(ns, &s, name, len, &m);
	if (rc)
		goto out;
	if (entry_exists(&m)) {
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
			make_whiteout(ns, s.upper, name, len); /* best effort: keep it hidden */
		goto out;
	}
	/* A directory made where an image entry was deleted must not show it again. */
	if (m.whiteout && S_ISDIR(st.mode))
		ns_set_add(&ns->opaque, st.ino);
	rc = get_node(ns, d, name, len, &st, 0, 0, st.mode, 0, &n);
	if (rc == 0 && n->name_len == 0) /* an O_TMPFILE node named at last */
		rc = ns_node_rename(ns, n, d, name, len);
	if (rc == 0)
		rc = give_entry(ns, n, e);
out:
	pthread_mutex_unlock(&ns->lock);
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
	struct create_args a = { .kind = C_LINK, .src = ns_node_get(ns, node) };

	if (a.src->type == S_IFDIR)
		return -EPERM;
	return do_create(ns, newdir, name, len, &a, e);
}

int cairn_ns_tmpfile(struct cairn_ns *ns, uint64_t dir, uint32_t mode,
		     const struct cairn_cred *cred, struct cairn_ns_entry *e)
{
	struct ns_node *d = ns_node_get(ns, dir), *n;
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

/* Is the merged directory (upper `up`, image `low`) empty? Whiteouts don't count. */
static int dir_empty(struct cairn_ns *ns, int has_up, cairn_ino_t up, int has_low,
		     cairn_ino_t low)
{
	struct ns_dlist l = { 0 };
	int rc = 0;

	if (has_up) {
		rc = ns_dlist_read(ns, 1, up, 0, 0, &l);
		for (size_t i = 0; !rc && i < l.n; i++) {
			struct cairn_stat st;

			if (l.e[i].dtype != DT_CHR) {
				rc = -ENOTEMPTY;
				break;
			}
			rc = cairn_ramfs_getattr(ns->ram, l.e[i].ino, &st);
			if (!rc && !is_whiteout(&st))
				rc = -ENOTEMPTY;
		}
		ns_dlist_free(&l);
		if (rc)
			return rc;
	}
	if (has_low) {
		memset(&l, 0, sizeof(l));
		rc = ns_dlist_read(ns, 0, low, 0, 0, &l);
		for (size_t i = 0; !rc && i < l.n; i++) {
			struct cairn_stat st;
			int r = has_up ? cairn_ramfs_lookup(ns->ram, up, l.e[i].name, l.e[i].len,
							    &st)
				       : -ENOENT;

			if (r == 0)
				cairn_ramfs_forget(ns->ram, st.ino, 1);
			else if (r == -ENOENT)
				rc = -ENOTEMPTY; /* an image entry nothing hides */
			else
				rc = r;
		}
		ns_dlist_free(&l);
	}
	return rc;
}

/* Remove the whiteouts of an upper directory that is about to go away. */
static int purge_whiteouts(struct cairn_ns *ns, cairn_ino_t up)
{
	struct ns_dlist l = { 0 };
	int rc = ns_dlist_read(ns, 1, up, 0, 0, &l);

	for (size_t i = 0; !rc && i < l.n; i++)
		rc = cairn_ramfs_unlink(ns->ram, up, l.e[i].name, l.e[i].len);
	ns_dlist_free(&l);
	return rc;
}

/* The layers of a directory entry that is itself a directory. */
static void entry_dir_layers(struct cairn_ns *ns, const struct mentry *m, int *has_up,
			     cairn_ino_t *up, int *has_low, cairn_ino_t *low)
{
	*has_up = m->in_upper;
	*up = m->ust.ino;
	*has_low = m->in_lower && !m->whiteout && S_ISDIR(m->lower_mode) &&
		   !(m->in_upper && (ns_set_has(&ns->opaque, m->ust.ino) ||
				     is_tmp_root(ns, m->ust.ino)));
	*low = m->lower;
}

/* Image object `lower` loses a name that showed it (ns_link_gone). Lock held. */
static int lower_name_gone(struct cairn_ns *ns, cairn_ino_t lower)
{
	struct cairn_stat ls;
	int rc = cairn_image_stat(ns->img, lower, &ls);

	return rc ? rc : ns_link_gone(ns, &ls);
}

static int do_remove(struct cairn_ns *ns, uint64_t dir, const char *name, size_t len, int isdir)
{
	struct ns_node *d = ns_node_get(ns, dir);
	struct dsnap s;
	struct mentry m;
	int rc = check_name(name, len);

	if (rc)
		return rc;
	pthread_mutex_lock(&ns->lock);
	rc = prep_write(ns, d);
	if (rc)
		goto out;
	snap_dir(ns, d, &s);
	rc = find_entry(ns, &s, name, len, &m);
	if (rc)
		goto out;
	if (!entry_exists(&m)) {
		rc = -ENOENT;
		goto out;
	}
	if (isdir && !S_ISDIR(entry_mode(&m))) {
		rc = -ENOTDIR;
		goto out;
	}
	if (!isdir && S_ISDIR(entry_mode(&m))) {
		rc = -EISDIR;
		goto out;
	}
	if (isdir) {
		int hu, hl;
		cairn_ino_t u, l;

		entry_dir_layers(ns, &m, &hu, &u, &hl, &l);
		rc = dir_empty(ns, hu, u, hl, l);
		if (!rc && hu)
			rc = purge_whiteouts(ns, u);
		if (!rc && hu)
			rc = cairn_ramfs_rmdir(ns->ram, s.upper, name, len);
		if (!rc && hu)
			ns_set_del(&ns->opaque, u);
	} else if (m.in_upper) {
		rc = cairn_ramfs_unlink(ns->ram, s.upper, name, len);
	}
	if (!rc && m.in_lower && !m.whiteout)
		rc = make_whiteout(ns, s.upper, name, len);
	if (!rc && m.in_lower && !m.whiteout && !m.in_upper)
		rc = lower_name_gone(ns, m.lower);
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

/* ---- rename ---- */

/* Copy up the image object a merged entry names, so it can move. */
static int copy_up_entry(struct cairn_ns *ns, struct ns_node *d, const char *name, size_t len,
			 struct mentry *m)
{
	struct ns_node *n;
	struct cairn_stat st;
	int rc;

	if (m->in_upper)
		return 0;
	if (S_ISDIR(m->lower_mode))
		return -EXDEV;
	n = ns_table_find_lower(ns, m->lower);
	if (n && n->parent == d && n->name_len == len && !memcmp(n->name, name, len)) {
		rc = ns_copy_up(ns, n, NS_KEEP_ALL, 0); /* the rename's checks must stay true */
		if (rc)
			return rc;
		rc = cairn_ramfs_getattr(ns->ram, n->upper, &m->ust);
	} else {
		rc = ns_copy_object(ns, m->lower, d->upper, name, len, NS_KEEP_ALL, &st);
		if (!rc)
			rc = lower_name_gone(ns, m->lower);
		if (rc)
			return rc;
		cairn_ramfs_forget(ns->ram, st.ino, 1);
		m->ust = st;
	}
	if (rc == 0)
		m->in_upper = 1;
	return rc;
}

/* After a rename, nodes standing for the moved inodes learn their new place. */
static void move_node(struct cairn_ns *ns, cairn_ino_t up, struct ns_node *d, const char *name,
		      size_t len)
{
	struct ns_node *n = ns_table_find_upper(ns, up);

	if (n)
		ns_node_rename(ns, n, d, name, len);
}

static int do_rename(struct cairn_ns *ns, struct ns_node *od, const char *oname, size_t olen,
		     struct ns_node *nd, const char *nname, size_t nlen, unsigned flags)
{
	struct dsnap os, nsn;
	struct mentry src, dst;
	int rc, src_had_lower, dst_had_lower_dir = 0;

	rc = prep_write(ns, od);
	if (!rc)
		rc = prep_write(ns, nd);
	if (rc)
		return rc;
	snap_dir(ns, od, &os);
	snap_dir(ns, nd, &nsn);
	rc = find_entry(ns, &os, oname, olen, &src);
	if (!rc)
		rc = find_entry(ns, &nsn, nname, nlen, &dst);
	if (rc)
		return rc;
	if (!entry_exists(&src))
		return -ENOENT;
	if (entry_exists(&dst)) {
		if (flags & RENAME_NOREPLACE)
			return -EEXIST;
		if ((src.in_upper && dst.in_upper && src.ust.ino == dst.ust.ino) ||
		    (!src.in_upper && !dst.in_upper && src.lower == dst.lower))
			return 0; /* two names of one inode: nothing to do */
	} else if (flags & RENAME_EXCHANGE) {
		return -ENOENT;
	}
	if (entry_exists(&dst) && !(flags & RENAME_EXCHANGE)) {
		int sdir = S_ISDIR(entry_mode(&src)), ddir = S_ISDIR(entry_mode(&dst));

		if (sdir && !ddir)
			return -ENOTDIR;
		if (!sdir && ddir)
			return -EISDIR;
		if (ddir) {
			int hu, hl;
			cairn_ino_t u, l;

			entry_dir_layers(ns, &dst, &hu, &u, &hl, &l);
			rc = dir_empty(ns, hu, u, hl, l);
			if (!rc && hu)
				rc = purge_whiteouts(ns, u);
			if (rc)
				return rc;
			dst_had_lower_dir = hl || (dst.in_lower && S_ISDIR(dst.lower_mode));
		}
	}
	/* Directories from the image do not move (overlayfs without redirect_dir). */
	if (S_ISDIR(entry_mode(&src)) && src.in_lower && !src.whiteout)
		return -EXDEV;
	if ((flags & RENAME_EXCHANGE) && S_ISDIR(entry_mode(&dst)) && dst.in_lower &&
	    !dst.whiteout)
		return -EXDEV;
	src_had_lower = src.in_lower && !src.whiteout;
	rc = copy_up_entry(ns, od, oname, olen, &src);
	if (!rc && (flags & RENAME_EXCHANGE))
		rc = copy_up_entry(ns, nd, nname, nlen, &dst);
	if (rc)
		return rc;
	if (dst.whiteout) {
		rc = cairn_ramfs_unlink(ns->ram, nsn.upper, nname, nlen);
		if (rc)
			return rc;
	}
	rc = cairn_ramfs_rename(ns->ram, os.upper, oname, olen, nsn.upper, nname, nlen,
				flags & RENAME_EXCHANGE);
	if (rc) {
		if (dst.whiteout)
			make_whiteout(ns, nsn.upper, nname, nlen);
		return rc;
	}
	if (dst.in_upper && S_ISDIR(dst.ust.mode) && !(flags & RENAME_EXCHANGE))
		ns_set_del(&ns->opaque, dst.ust.ino);
	/* An image file renamed over is hidden now, as if unlinked. */
	if (!dst.in_upper && dst.in_lower && !dst.whiteout && !S_ISDIR(dst.lower_mode))
		lower_name_gone(ns, dst.lower);
	/* A directory landing on an image directory's name must hide its content. */
	if (S_ISDIR(src.ust.mode) && (dst_had_lower_dir || dst.whiteout))
		ns_set_add(&ns->opaque, src.ust.ino);
	move_node(ns, src.ust.ino, nd, nname, nlen);
	if (flags & RENAME_EXCHANGE) {
		move_node(ns, dst.ust.ino, od, oname, olen);
		return 0;
	}
	if (src_had_lower)
		rc = make_whiteout(ns, os.upper, oname, olen);
	return rc;
}

int cairn_ns_rename(struct cairn_ns *ns, uint64_t olddir, const char *oldname, size_t oldlen,
		    uint64_t newdir, const char *newname, size_t newlen, unsigned flags)
{
	int rc;

	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE))
		return -EINVAL;
	rc = check_name(oldname, oldlen);
	if (!rc)
		rc = check_name(newname, newlen);
	if (rc)
		return rc;
	pthread_mutex_lock(&ns->lock);
	/* -EAGAIN: a file it moves is being copied up; nothing changed yet. */
	while ((rc = do_rename(ns, ns_node_get(ns, olddir), oldname, oldlen,
			       ns_node_get(ns, newdir), newname, newlen, flags)) == -EAGAIN)
		pthread_cond_wait(&ns->copy_done, &ns->lock);
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

/* ---- reading ---- */

ssize_t cairn_ns_readlink(struct cairn_ns *ns, uint64_t node, char *buf, size_t len)
{
	struct ns_node *n = ns_node_get(ns, node);

	if (n->type != S_IFLNK)
		return -EINVAL;
	if (ns_has_upper(n))
		return cairn_ramfs_readlink(ns->ram, n->upper, buf, len);
	return cairn_image_readlink(ns->img, n->lower, buf, len);
}

struct dlist_ctx {
	struct ns_dlist *l;
	size_t max;
	int err;
};

static int dlist_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		    uint64_t next)
{
	struct dlist_ctx *c = ctx;
	struct ns_dlist *l = c->l;
	struct ns_dent *d;

	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 64;
		struct ns_dent *ne = realloc(l->e, ncap * sizeof(*ne));

		if (!ne) {
			c->err = -ENOMEM;
			return 1;
		}
		l->e = ne;
		l->cap = ncap;
	}
	d = &l->e[l->n];
	d->name = malloc(len + 1);
	if (!d->name) {
		c->err = -ENOMEM;
		return 1;
	}
	memcpy(d->name, name, len);
	d->name[len] = 0;
	d->len = len;
	d->ino = ino;
	d->dtype = dtype;
	d->next = next;
	l->n++;
	if (c->max && l->n >= c->max) {
		l->full = 1;
		return 1;
	}
	return 0;
}

int ns_dlist_read(struct cairn_ns *ns, int upper, cairn_ino_t dir, uint64_t cookie, size_t max,
		  struct ns_dlist *l)
{
	struct dlist_ctx c = { l, max, 0 };
	int rc;

	l->full = 0;
	if (upper)
		rc = cairn_ramfs_readdir(ns->ram, dir, cookie, dlist_cb, &c);
	else
		rc = cairn_image_readdir(ns->img, dir, cookie, dlist_cb, &c);
	return rc ? rc : c.err;
}

void ns_dlist_free(struct ns_dlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].name);
	free(l->e);
	l->e = NULL;
	l->n = l->cap = 0;
}

#define DIR_BATCH 128

/* The upper phase of a listing: cookies are the RAM fs's. Returns 1 when the
 * caller stopped, 0 at the end of the upper directory. */
static int readdir_upper(struct cairn_ns *ns, cairn_ino_t up, uint64_t cookie, cairn_dirent_cb cb,
			 void *ctx, int *err)
{
	for (;;) {
		struct ns_dlist l = { 0 };
		int rc = ns_dlist_read(ns, 1, up, cookie < 2 ? 2 : cookie, DIR_BATCH, &l);
		int stop = 0;

		for (size_t i = 0; !rc && i < l.n && !stop; i++) {
			struct ns_dent *de = &l.e[i];
			uint64_t ino = de->ino + ns->ino_offset;
			struct ns_node *n;

			if (de->dtype == DT_CHR) {
				struct cairn_stat st;

				if (cairn_ramfs_getattr(ns->ram, de->ino, &st) == 0 &&
				    is_whiteout(&st))
					continue;
			}
			pthread_mutex_lock(&ns->lock);
			n = ns_table_find_upper(ns, de->ino);
			if (n)
				ino = n->st_ino;
			pthread_mutex_unlock(&ns->lock);
			stop = cb(ctx, de->name, de->len, ino, de->dtype, de->next);
		}
		if (l.n)
			cookie = l.e[l.n - 1].next;
		if (rc)
			*err = rc;
		if (rc || stop || !l.full) {
			ns_dlist_free(&l);
			return rc || stop;
		}
		ns_dlist_free(&l);
	}
}

/* The image phase: entries the upper directory neither shadows nor whites out.
 * Cookies carry LOWER_COOKIE. */
static int readdir_lower(struct cairn_ns *ns, const struct dsnap *s, uint64_t cookie,
			 cairn_dirent_cb cb, void *ctx, int *err)
{
	for (;;) {
		struct ns_dlist l = { 0 };
		int rc = ns_dlist_read(ns, 0, s->lower, cookie < 2 ? 2 : cookie, DIR_BATCH, &l);
		int stop = 0;

		for (size_t i = 0; !rc && i < l.n && !stop; i++) {
			struct ns_dent *de = &l.e[i];

			if (s->has_upper) {
				struct cairn_stat st;
				int r = cairn_ramfs_lookup(ns->ram, s->upper, de->name, de->len, &st);

				if (r == 0) {
					cairn_ramfs_forget(ns->ram, st.ino, 1);
					continue;
				}
				if (r != -ENOENT) {
					rc = r;
					break;
				}
			}
			stop = cb(ctx, de->name, de->len, de->ino, de->dtype,
				  de->next | LOWER_COOKIE);
		}
		if (l.n)
			cookie = l.e[l.n - 1].next;
		if (rc)
			*err = rc;
		if (rc || stop || !l.full) {
			ns_dlist_free(&l);
			return rc || stop;
		}
		ns_dlist_free(&l);
	}
}

int cairn_ns_readdir(struct cairn_ns *ns, uint64_t dir, uint64_t cookie, cairn_dirent_cb cb,
		     void *ctx)
{
	struct ns_node *d = ns_node_get(ns, dir);
	struct dsnap s;
	uint64_t self, parent;
	int err = 0;

	if (d->type != S_IFDIR)
		return -ENOTDIR;
	pthread_mutex_lock(&ns->lock);
	snap_dir(ns, d, &s);
	self = d->st_ino;
	parent = d->parent ? d->parent->st_ino : d->st_ino;
	pthread_mutex_unlock(&ns->lock);

	if (cookie == 0 && cb(ctx, ".", 1, self, DT_DIR, 1))
		return 0;
	if (cookie <= 1 && cb(ctx, "..", 2, parent, DT_DIR, 2))
		return 0;
	if (!(cookie & LOWER_COOKIE) && s.has_upper) {
		if (readdir_upper(ns, s.upper, cookie, cb, ctx, &err))
			return err;
		cookie = 2;
	}
	if (merged(&s) || !s.has_upper)
		readdir_lower(ns, &s, cookie & ~LOWER_COOKIE, cb, ctx, &err);
	return err;
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
	struct ns_node *n = ns_node_get(ns, node);
	int trunc = (flags & O_TRUNC) && n->type == S_IFREG;
	int rc = 0;

	*fh = 0;
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) {
		pthread_mutex_lock(&ns->lock);
		/* Truncating: copied up at size 0, without its data (as overlayfs). */
		rc = prep_write_keep(ns, n, trunc ? 0 : NS_KEEP_ALL);
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

ssize_t cairn_ns_read(struct cairn_ns *ns, uint64_t node, void *buf, size_t len, uint64_t off)
{
	struct ns_node *n = ns_node_get(ns, node);

	if (n->type == S_IFDIR)
		return -EISDIR;
	if (ns_has_upper(n))
		return cairn_ramfs_read(ns->ram, n->upper, buf, len, off);
	return cairn_image_read(ns->img, n->lower, buf, len, off);
}

int cairn_ns_hot_ranges(struct cairn_ns *ns, uint64_t node, cairn_range_cb fn, void *ctx)
{
	struct ns_node *n = ns_node_get(ns, node);

	if (n->type != S_IFREG || ns_has_upper(n) || !n->has_lower)
		return 0;
	return cairn_image_hot_ranges(ns->img, n->lower, fn, ctx);
}

int cairn_ns_read_iov(struct cairn_ns *ns, uint64_t node, size_t len, uint64_t off,
		      cairn_iov_fn fn, void *ctx, int *from_image)
{
	struct ns_node *n = ns_node_get(ns, node);
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
	iov.iov_base = malloc(len ? len : 1);
	if (!iov.iov_base)
		return -ENOMEM;
	got = cairn_image_read(ns->img, n->lower, iov.iov_base, len, off);
	if (got < 0) {
		free(iov.iov_base);
		return (int)got;
	}
	iov.iov_len = (size_t)got;
	rc = fn(ctx, &iov, 1, (size_t)got);
	free(iov.iov_base);
	return rc;
}

ssize_t cairn_ns_write(struct cairn_ns *ns, uint64_t node, const void *buf, size_t len,
		       uint64_t off, int append, const struct cairn_cred *cred)
{
	struct ns_node *n = ns_node_get(ns, node);

	if (!ns_has_upper(n)) {
		int rc;

		pthread_mutex_lock(&ns->lock);
		rc = prep_write(ns, n);
		pthread_mutex_unlock(&ns->lock);
		if (rc)
			return rc;
	}
	return cairn_ramfs_write(ns->ram, n->upper, buf, len, off, append, cred);
}

int cairn_ns_fallocate(struct cairn_ns *ns, uint64_t node, int mode, uint64_t off, uint64_t len)
{
	struct ns_node *n = ns_node_get(ns, node);
	int rc;

	pthread_mutex_lock(&ns->lock);
	rc = prep_write(ns, n);
	pthread_mutex_unlock(&ns->lock);
	return rc ? rc : cairn_ramfs_fallocate(ns->ram, n->upper, mode, off, len);
}

int64_t cairn_ns_lseek(struct cairn_ns *ns, uint64_t node, int64_t off, int whence)
{
	struct ns_node *n = ns_node_get(ns, node);

	if (ns_has_upper(n))
		return cairn_ramfs_lseek(ns->ram, n->upper, off, whence);
	if (off < 0)
		return -ENXIO;
	/* The image knows its holes (extents of sparse files): cp, tar -S and rsync
	 * -S skip them instead of reading gigabytes of zeros. */
	return cairn_image_lseek(ns->img, n->lower, (uint64_t)off, whence);
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
	out->name_max = NAME_MAX_LEN;
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
	struct ns_node *n = ns_node_get(ns, node);
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
	struct ns_node *n = ns_node_get(ns, node);

	if (ns_reserved_xattr(name))
		return -ENODATA;
	if (ns_has_upper(n))
		return cairn_ramfs_getxattr(ns->ram, n->upper, name, buf, size);
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
	struct ns_node *n = ns_node_get(ns, node);

	if (ns_has_upper(n))
		return list_upper_xattrs(ns, n->upper, buf, size);
	return cairn_image_listxattr(ns->img, n->lower, buf, size);
}

int cairn_ns_removexattr(struct cairn_ns *ns, uint64_t node, const char *name)
{
	struct ns_node *n = ns_node_get(ns, node);
	int rc;

	if (ns_reserved_xattr(name))
		return -EPERM;
	pthread_mutex_lock(&ns->lock);
	rc = prep_write(ns, n);
	pthread_mutex_unlock(&ns->lock);
	return rc ? rc : cairn_ramfs_removexattr(ns->ram, n->upper, name);
}

/* ---- misc ---- */

ssize_t cairn_ns_path(struct cairn_ns *ns, uint64_t node, char *buf, size_t len)
{
	struct ns_node *n;
	size_t need = 0, pos;

	pthread_mutex_lock(&ns->lock);
	n = ns_node_get(ns, node);
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
	pthread_mutex_unlock(&ns->lock);
	if (ns->ram)
		cairn_ramfs_usage(ns->ram, &out->ram);
}

struct cairn_ramfs *cairn_ns_ramfs(struct cairn_ns *ns)
{
	return ns->ram;
}
