/* SPDX-License-Identifier: MIT */
/*
 * Rename on the merged tree, as overlayfs does it without redirect_dir: what
 * moves is copied up first; a directory of the image does not move (-EXDEV); the
 * name left behind is whited out when the image has it; a directory landing on
 * an image directory's name becomes opaque. Everything that can fail runs before
 * the RAM fs's rename, so a failed rename changes nothing a user sees.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ns_internal.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#ifndef RENAME_WHITEOUT
#define RENAME_WHITEOUT (1 << 2)
#endif

/* Does the entry show a directory of the image? A directory made where an image
 * entry was deleted is opaque: it is the RAM layer's alone. */
static int entry_lower_dir(struct cairn_ns *ns, const struct ns_mentry *m)
{
	int hu, hl;
	cairn_ino_t u, l;

	ns_entry_dir_layers(ns, m, &hu, &u, &hl, &l);
	return S_ISDIR(ns_entry_mode(m)) && hl;
}

/* Copy up the image object a merged entry names, so it can move. */
static int copy_up_entry(struct cairn_ns *ns, struct ns_node *d, const char *name, size_t len,
			 struct ns_mentry *m)
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
			rc = ns_lower_name_gone(ns, m->lower);
		if (rc)
			return rc;
		cairn_ramfs_forget(ns->ram, st.ino, 1);
		m->ust = st;
	}
	if (rc == 0)
		m->in_upper = 1;
	return rc;
}

/* After a rename, the node standing for moved RAM inode `up` (if any) learns its
 * new place. `name` was made by ns_name_dup before anything changed, so this
 * cannot fail; it is taken over (or freed). */
static void move_node(struct cairn_ns *ns, cairn_ino_t up, struct ns_node *d, char *name,
		      size_t len)
{
	struct ns_node *n = ns_table_find_upper(ns, up);

	if (n)
		ns_node_move(ns, n, d, name, len);
	else
		free(name);
}

/* Whether the destination may be replaced by the source; empties a directory
 * being replaced of its whiteouts. *had_lower_dir: dst showed an image dir. */
static int check_replace(struct cairn_ns *ns, struct ns_mentry *src, struct ns_mentry *dst,
			 int *had_lower_dir)
{
	int sdir = S_ISDIR(ns_entry_mode(src)), ddir = S_ISDIR(ns_entry_mode(dst));
	int hu, hl, rc;
	cairn_ino_t u, l;

	if (sdir && !ddir)
		return -ENOTDIR;
	if (!sdir && ddir)
		return -EISDIR;
	if (!ddir)
		return 0;
	ns_entry_dir_layers(ns, dst, &hu, &u, &hl, &l);
	rc = ns_dir_empty(ns, hu, u, hl, l);
	if (!rc && hu)
		rc = ns_purge_whiteouts(ns, u);
	*had_lower_dir = hl || (dst->in_lower && S_ISDIR(dst->lower_mode));
	return rc;
}

static int do_rename(struct cairn_ns *ns, struct ns_node *od, const char *oname, size_t olen,
		     struct ns_node *nd, const char *nname, size_t nlen, unsigned flags)
{
	const unsigned how = NS_FIND_LOCKED | NS_FIND_HIDDEN;
	struct ns_dsnap os, nsn;
	struct ns_mentry src, dst;
	char *src_name, *dst_name = NULL;
	int rc, src_had_lower, dst_had_lower_dir = 0;

	rc = ns_prep_write(ns, od, NS_KEEP_ALL);
	if (!rc)
		rc = ns_prep_write(ns, nd, NS_KEEP_ALL);
	if (rc)
		return rc;
	ns_snap_dir(ns, od, &os);
	ns_snap_dir(ns, nd, &nsn);
	rc = ns_find_entry(ns, &os, oname, olen, how, &src);
	if (!rc)
		rc = ns_find_entry(ns, &nsn, nname, nlen, how, &dst);
	if (rc)
		return rc;
	if (!ns_entry_exists(&src))
		return -ENOENT;
	if (ns_entry_exists(&dst)) {
		if (flags & RENAME_NOREPLACE)
			return -EEXIST;
		if ((src.in_upper && dst.in_upper && src.ust.ino == dst.ust.ino) ||
		    (!src.in_upper && !dst.in_upper && src.lower == dst.lower))
			return 0; /* two names of one inode: nothing to do */
		if (!(flags & RENAME_EXCHANGE)) {
			rc = check_replace(ns, &src, &dst, &dst_had_lower_dir);
			if (rc)
				return rc;
		}
	} else if (flags & RENAME_EXCHANGE) {
		return -ENOENT;
	}
	/* Directories from the image do not move (overlayfs without redirect_dir). */
	if (entry_lower_dir(ns, &src) || ((flags & RENAME_EXCHANGE) && entry_lower_dir(ns, &dst)))
		return -EXDEV;
	src_had_lower = src.in_lower && !src.whiteout;
	rc = copy_up_entry(ns, od, oname, olen, &src);
	if (!rc && (flags & RENAME_EXCHANGE))
		rc = copy_up_entry(ns, nd, nname, nlen, &dst);
	if (rc)
		return rc;
	/* The nodes' new names, before anything a user sees changes. */
	src_name = ns_name_dup(nname, nlen);
	if (src_name && (flags & RENAME_EXCHANGE))
		dst_name = ns_name_dup(oname, olen);
	if (!src_name || ((flags & RENAME_EXCHANGE) && !dst_name)) {
		free(src_name);
		return -ENOMEM;
	}
	if (dst.whiteout) {
		rc = cairn_ramfs_unlink(ns->ram, nsn.upper, nname, nlen);
		if (rc)
			goto fail;
	}
	rc = cairn_ramfs_rename(ns->ram, os.upper, oname, olen, nsn.upper, nname, nlen,
				flags & RENAME_EXCHANGE);
	if (rc) {
		if (dst.whiteout)
			ns_make_whiteout(ns, nsn.upper, nname, nlen);
		goto fail;
	}
	if (dst.in_upper && S_ISDIR(dst.ust.mode) && !(flags & RENAME_EXCHANGE))
		ns_set_del(&ns->opaque, dst.ust.ino);
	/* An image file renamed over is hidden now, as if unlinked. */
	if (!dst.in_upper && dst.in_lower && !dst.whiteout && !S_ISDIR(dst.lower_mode))
		ns_lower_name_gone(ns, dst.lower);
	/* A directory landing on an image directory's name must hide its content. */
	if (S_ISDIR(src.ust.mode) && (dst_had_lower_dir || dst.whiteout))
		ns_set_add(&ns->opaque, src.ust.ino);
	move_node(ns, src.ust.ino, nd, src_name, nlen);
	if (flags & RENAME_EXCHANGE) {
		/* Each directory lands on the other's name: where the image has a
		 * directory of that name, it must not show through (an opaque one
		 * swapped with one never merged made the image's entries visible). */
		if (S_ISDIR(src.ust.mode) && dst.in_lower && S_ISDIR(dst.lower_mode))
			ns_set_add(&ns->opaque, src.ust.ino);
		if (S_ISDIR(dst.ust.mode) && src.in_lower && S_ISDIR(src.lower_mode))
			ns_set_add(&ns->opaque, dst.ust.ino);
		move_node(ns, dst.ust.ino, od, dst_name, olen);
		return 0;
	}
	return src_had_lower ? ns_make_whiteout(ns, os.upper, oname, olen) : 0;
fail:
	free(src_name);
	free(dst_name);
	return rc;
}

/* RENAME_WHITEOUT: a character device 0/0 takes the old name (the user's kind,
 * overlayfs's whiteout format; kernel overlayfs needs it of an upper fs). It
 * replaces the namespace's own whiteout there, which hides the image as well.
 * Lock held; od has its upper directory (do_rename made sure). */
static int leave_device(struct cairn_ns *ns, struct ns_node *od, const char *name, size_t len)
{
	struct cairn_stat st;
	int rc = ns_upper_has(ns, od->upper, name, len);

	if (rc > 0)
		rc = cairn_ramfs_unlink(ns->ram, od->upper, name, len);
	if (rc < 0)
		return rc;
	rc = cairn_ramfs_mknod(ns->ram, od->upper, name, len, S_IFCHR, 0, NULL, &st);
	if (!rc)
		cairn_ramfs_forget(ns->ram, st.ino, 1);
	return rc;
}

int cairn_ns_rename(struct cairn_ns *ns, uint64_t olddir, const char *oldname, size_t oldlen,
		    uint64_t newdir, const char *newname, size_t newlen, unsigned flags)
{
	unsigned whiteout = flags & RENAME_WHITEOUT;
	struct ns_node oview, nview, *od, *nd;
	int rc;

	flags &= ~(unsigned)RENAME_WHITEOUT;
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE))
		return -EINVAL;
	if (whiteout && (flags & RENAME_EXCHANGE))
		return -EINVAL;
	rc = ns_check_name(oldname, oldlen);
	if (!rc)
		rc = ns_check_name(newname, newlen);
	if (rc)
		return rc;
	pthread_mutex_lock(&ns->lock);
	od = ns_node_get(ns, olddir, &oview);
	nd = ns_node_get(ns, newdir, &nview);
	/* -EAGAIN: a file it moves is being copied up; nothing changed yet. */
	while ((rc = do_rename(ns, od, oldname, oldlen, nd, newname, newlen, flags)) == -EAGAIN)
		pthread_cond_wait(&ns->copy_done, &ns->lock);
	if (!rc && whiteout)
		rc = leave_device(ns, od, oldname, oldlen);
	pthread_mutex_unlock(&ns->lock);
	return rc;
}
