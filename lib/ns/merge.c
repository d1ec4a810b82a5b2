/* SPDX-License-Identifier: MIT */
/*
 * One name seen through both layers: the "upper, then lower" probe that every
 * lookup and change starts with, written once (ns_find_entry), and the helpers
 * that act on what it finds (whiteouts, emptiness of a merged directory).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include "ns_internal.h"

void ns_snap_dir(struct cairn_ns *ns, struct ns_node *d, struct ns_dsnap *s)
{
	s->has_upper = ns_has_upper(d);
	s->upper = s->has_upper ? d->upper : 0;
	s->has_lower = d->has_lower;
	s->lower = d->lower;
	s->opaque = s->has_upper && (ns_set_has(&ns->opaque, s->upper) || d->tmp);
}

int ns_upper_hides(struct cairn_ns *ns, cairn_ino_t up, int locked)
{
	int opaque;

	if (!locked)
		pthread_mutex_lock(&ns->lock);
	opaque = ns_set_has(&ns->opaque, up);
	if (!locked)
		pthread_mutex_unlock(&ns->lock);
	return opaque || ns_is_tmp_root(ns, up);
}

int ns_upper_has(struct cairn_ns *ns, cairn_ino_t dir, const char *name, size_t len)
{
	struct cairn_stat st;
	int rc = cairn_ramfs_lookup(ns->ram, dir, name, len, &st);

	if (rc == 0) {
		cairn_ramfs_forget(ns->ram, st.ino, 1);
		return 1;
	}
	return rc == -ENOENT ? 0 : rc;
}

/* Does the image's entry show below the upper one: both directories, and the
 * upper one neither opaque nor a tmp= root. */
static int upper_merges(struct cairn_ns *ns, const struct ns_mentry *m, unsigned how)
{
	return S_ISDIR(m->ust.mode) && !ns_upper_hides(ns, m->ust.ino, how & NS_FIND_LOCKED);
}

int ns_find_entry(struct cairn_ns *ns, const struct ns_dsnap *d, const char *name, size_t len,
		  unsigned how, struct ns_mentry *m)
{
	struct cairn_stat ls;
	int rc;

	memset(m, 0, sizeof(*m));
	if (d->has_upper) {
		rc = cairn_ramfs_lookup(ns->ram, d->upper, name, len, &m->ust);
		if (rc == 0) {
			m->whiteout = ns_is_whiteout(ns, &m->ust);
			m->in_upper = !m->whiteout;
			if (m->whiteout || !(how & NS_FIND_KEEP_REF))
				cairn_ramfs_forget(ns->ram, m->ust.ino, 1);
		} else if (rc != -ENOENT) {
			return rc;
		}
	}
	if (!ns_merged(d))
		return 0;
	/* What an upper entry or whiteout covers: only changes need to know. */
	if (!(how & NS_FIND_HIDDEN) &&
	    (m->whiteout || (m->in_upper && !upper_merges(ns, m, how))))
		return 0;
	rc = cairn_image_lookup(ns->img, d->lower, name, len, &m->lower);
	if (rc == 0)
		rc = cairn_image_stat(ns->img, m->lower, &ls);
	if (rc == 0) {
		m->in_lower = 1;
		m->lower_mode = ls.mode;
		m->lower_nlink = ls.nlink;
	} else if (rc != -ENOENT) {
		if (m->in_upper && (how & NS_FIND_KEEP_REF))
			cairn_ramfs_forget(ns->ram, m->ust.ino, 1);
		return rc;
	}
	return 0;
}

void ns_entry_dir_layers(struct cairn_ns *ns, const struct ns_mentry *m, int *has_up,
			 cairn_ino_t *up, int *has_low, cairn_ino_t *low)
{
	*has_up = m->in_upper;
	*up = m->ust.ino;
	*has_low = m->in_lower && !m->whiteout && S_ISDIR(m->lower_mode) &&
		   !(m->in_upper && ns_upper_hides(ns, m->ust.ino, 1));
	*low = m->lower;
}

int ns_is_whiteout(struct cairn_ns *ns, const struct cairn_stat *st)
{
	return (st->mode & S_IFMT) == S_IFCHR && st->rdev == 0 &&
	       cairn_ramfs_getxattr(ns->ram, st->ino, NS_XATTR_WHITEOUT, NULL, 0) >= 0;
}

int ns_make_whiteout(struct cairn_ns *ns, cairn_ino_t dir, const char *name, size_t len)
{
	struct cairn_stat st;
	int rc = cairn_ramfs_mknod(ns->ram, dir, name, len, NS_WHITEOUT_MODE, 0, NULL, &st);

	if (rc)
		return rc;
	rc = cairn_ramfs_setxattr(ns->ram, st.ino, NS_XATTR_WHITEOUT, "", 0, 0);
	cairn_ramfs_forget(ns->ram, st.ino, 1);
	if (rc)
		cairn_ramfs_unlink(ns->ram, dir, name, len);
	return rc;
}

int ns_dir_empty(struct cairn_ns *ns, int has_up, cairn_ino_t up, int has_low, cairn_ino_t low)
{
	struct cairn_dirent *e;
	ssize_t n;
	int rc = 0;

	if (has_up) {
		n = cairn_ramfs_readdir_alloc(ns->ram, up, 0, 0, &e);
		if (n < 0)
			return (int)n;
		for (ssize_t i = 0; !rc && i < n; i++) {
			struct cairn_stat st;

			if (e[i].dtype != DT_CHR) {
				rc = -ENOTEMPTY;
				break;
			}
			rc = cairn_ramfs_getattr(ns->ram, e[i].ino, &st);
			if (!rc && !ns_is_whiteout(ns, &st))
				rc = -ENOTEMPTY;
		}
		free(e);
		if (rc)
			return rc;
	}
	if (has_low) {
		n = cairn_image_readdir_alloc(ns->img, low, 0, 0, &e);
		if (n < 0)
			return (int)n;
		for (ssize_t i = 0; !rc && i < n; i++) {
			int r = has_up ? ns_upper_has(ns, up, e[i].name, e[i].name_len) : 0;

			/* r == 0: an image entry nothing hides */
			rc = r == 0 ? -ENOTEMPTY : r < 0 ? r : 0;
		}
		free(e);
	}
	return rc;
}

int ns_purge_whiteouts(struct cairn_ns *ns, cairn_ino_t up)
{
	struct cairn_dirent *e;
	ssize_t n = cairn_ramfs_readdir_alloc(ns->ram, up, 0, 0, &e);
	int rc = n < 0 ? (int)n : 0;

	for (ssize_t i = 0; !rc && i < n; i++)
		rc = cairn_ramfs_unlink(ns->ram, up, e[i].name, e[i].name_len);
	free(e);
	return rc;
}

int ns_lower_name_gone(struct cairn_ns *ns, cairn_ino_t lower)
{
	struct cairn_stat ls;
	int rc = cairn_image_stat(ns->img, lower, &ls);

	return rc ? rc : ns_link_gone(ns, &ls);
}
