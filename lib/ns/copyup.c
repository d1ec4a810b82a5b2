/* SPDX-License-Identifier: MIT */
/*
 * Overlay copy-up: giving a node its RAM inode, parents first, with the copy
 * routine of copy.c. A regular file's data is copied without the namespace lock.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cairn/error.h>
#include "ns_internal.h"

int ns_link_gone(struct cairn_ns *ns, const struct cairn_stat *ls)
{
	return ns_link_group(ls) ? ns_set_inc(&ns->gone_links, ls->ino) : 0;
}

/* A copy-up is no change the user made to the directory it lands in, so that
 * keeps its times, ctime too (on tmpfs a chmod of a file moves no time of its
 * directory): taken just before the copy gets its name there (lock held), put
 * back just after. Best effort. */
static void keep_dir_times(struct cairn_ns *ns, cairn_ino_t dir, const struct cairn_stat *before)
{
	struct cairn_setattr sa;

	memset(&sa, 0, sizeof(sa));
	sa.valid = CAIRN_SET_ATIME | CAIRN_SET_MTIME | CAIRN_SET_CTIME;
	sa.atime = before->atime;
	sa.mtime = before->mtime;
	sa.ctime = before->ctime;
	cairn_ramfs_setattr(ns->ram, dir, &sa, NULL, NULL);
}

/*
 * A regular file's copy without ns->lock, so one large copy-up stalls nothing
 * but the users of this file. The copy is made as a file with no name (as
 * O_TMPFILE) and named only once complete, so no lookup or listing ever sees a
 * half-copied file: overlayfs copies into its work directory for the same
 * reason. n->copying tells others to wait (ns->copy_done); n stays pinned.
 * Lock held on entry and on return.
 */
static int copy_file_unlocked(struct cairn_ns *ns, struct ns_node *n, const struct cairn_stat *ls,
			      uint64_t keep, struct cairn_stat *st)
{
	struct cairn_stat named, pst;
	struct cairn_setattr sa;
	int rc = cairn_ramfs_tmpfile(ns->ram, n->parent->upper, ls->mode & 07777, NULL, st);

	if (rc)
		return rc;
	assert(!n->copying && !ns_has_upper(n)); /* one copy at a time (ns_copy_up waits) */
	n->copying = 1;
	n->pins++;
	pthread_mutex_unlock(&ns->lock);
	rc = ns_fill_object(ns, ls, st->ino, keep, NS_COPY_ORIGIN, st);
	pthread_mutex_lock(&ns->lock);
	/* The name as it is now; it is the one the copy must take. */
	if (!rc)
		rc = cairn_ramfs_getattr(ns->ram, n->parent->upper, &pst);
	if (!rc)
		rc = cairn_ramfs_link(ns->ram, st->ino, n->parent->upper, n->name, n->name_len,
				      &named);
	if (!rc) {
		cairn_ramfs_forget(ns->ram, named.ino, 1);
		keep_dir_times(ns, n->parent->upper, &pst);
		/* Naming it moved the ctime: the image's stays, as for other copies. */
		memset(&sa, 0, sizeof(sa));
		sa.valid = CAIRN_SET_CTIME;
		sa.ctime = ls->ctime;
		rc = cairn_ramfs_setattr(ns->ram, st->ino, &sa, NULL, st);
		if (rc)
			cairn_ramfs_unlink(ns->ram, n->parent->upper, n->name, n->name_len);
	}
	if (rc)
		cairn_ramfs_forget(ns->ram, st->ino, 1); /* the nameless copy goes */
	assert(n->pins > 0 && n->copying);
	n->pins--;
	n->copying = 0;
	pthread_cond_broadcast(&ns->copy_done);
	return rc;
}

int ns_copy_up(struct cairn_ns *ns, struct ns_node *n, uint64_t keep, int may_unlock)
{
	struct cairn_stat st, ls, pst;
	int rc;

	for (;;) {
		if (ns_has_upper(n))
			return 0;
		if (!ns->overlay || !n->has_lower || !n->parent)
			return -EROFS;
		if (!n->copying)
			break;
		if (!may_unlock)
			return -EAGAIN;
		pthread_cond_wait(&ns->copy_done, &ns->lock);
	}
	/* Parents are directories: copied under the lock, never waited for. */
	rc = ns_copy_up(ns, n->parent, NS_KEEP_ALL, may_unlock);
	if (!rc)
		rc = cairn_image_stat(ns->img, n->lower, &ls);
	if (rc)
		return rc;
	ls.ino = n->lower;
	if (may_unlock && S_ISREG(ls.mode)) {
		rc = copy_file_unlocked(ns, n, &ls, keep, &st);
	} else {
		rc = cairn_ramfs_getattr(ns->ram, n->parent->upper, &pst);
		if (!rc)
			rc = ns_copy_object(ns, n->lower, n->parent->upper, n->name, n->name_len,
					    keep, &st);
		if (!rc)
			keep_dir_times(ns, n->parent->upper, &pst);
	}
	if (rc == -EEXIST)
		rc = -ESTALE; /* the name now holds something else (a whiteout after unlink) */
	if (rc)
		return rc;
	if (ns_link_group(&ls)) {
		n->st_ino = st.ino + ns->ino_offset;
		ns_link_gone(ns, &ls);
	}
	n->upper = st.ino;
	__atomic_store_n(&n->has_upper, 1, __ATOMIC_RELEASE);
	ns_table_add_upper(ns, n);
	ns->copy_ups++;
	return 0;
}
