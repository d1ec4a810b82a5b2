/* SPDX-License-Identifier: MIT */
/*
 * Merged directory listings: the upper (RAM) directory's entries first, then
 * the image's that it neither shadows nor whites out. The upper phase reads
 * the RAM fs in batches, the image phase streams the image's listing; neither
 * holds ns->lock, and the caller's callback runs with no lock held. A cookie says which phase it resumes: image cookies carry
 * LOWER_COOKIE, RAM cookies are the RAM fs's own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include "ns_internal.h"

#define LOWER_COOKIE (1ull << 62)
#define DIR_BATCH 128

/* Both layers' cookies are small (3 + entry index, or a per-directory id). */
_Static_assert(LOWER_COOKIE > UINT32_MAX, "LOWER_COOKIE must lie above any layer's cookie");

/* The upper phase. Returns 1 when the caller stopped, 0 at the end of the
 * upper directory. */
static int readdir_upper(struct cairn_ns *ns, cairn_ino_t up, uint64_t cookie, cairn_dirent_cb cb,
			 void *ctx, int *err)
{
	for (;;) {
		struct cairn_dirent *e;
		ssize_t n = cairn_ramfs_readdir_alloc(ns->ram, up, cookie < 2 ? 2 : cookie,
						      DIR_BATCH, &e);
		int stop = 0;

		if (n < 0) {
			*err = (int)n;
			return 1;
		}
		for (ssize_t i = 0; i < n && !stop; i++) {
			struct cairn_dirent *de = &e[i];
			uint64_t ino;
			struct ns_node *nd;

			/* Under the lock: the listing holds no reference, and an unlink or
			 * rename that frees an entry's inode holds the lock (TSan saw a
			 * rename free it under a getxattr here). */
			pthread_mutex_lock(&ns->lock);
			if (de->dtype == DT_CHR) {
				struct cairn_stat st;

				if (cairn_ramfs_getattr(ns->ram, de->ino, &st) == 0 &&
				    ns_is_whiteout(ns, &st)) {
					pthread_mutex_unlock(&ns->lock);
					continue;
				}
			}
			nd = ns_table_find_upper(ns, de->ino);
			/* else the number a lookup would give it */
			ino = nd ? nd->st_ino : ns_upper_st_ino(ns, de->ino);
			pthread_mutex_unlock(&ns->lock);
			stop = cb(ctx, de->name, de->name_len, ino, de->dtype, de->next);
		}
		if (n)
			cookie = e[n - 1].next;
		free(e);
		if (stop || n < DIR_BATCH)
			return stop;
	}
}

/* The image phase: entries the upper directory neither shadows nor whites out.
 * The image reader holds no lock while it calls back, so its listing streams
 * straight through, with no copy of the entries. */
struct lower_walk {
	struct cairn_ns *ns;
	const struct ns_dsnap *s;
	cairn_dirent_cb cb;
	void *ctx;
	int stopped, err;
};

static int lower_entry(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		       uint64_t next)
{
	struct lower_walk *w = ctx;
	int hidden = w->s->has_upper ? ns_upper_has(w->ns, w->s->upper, name, len) : 0;

	if (hidden < 0) {
		w->err = hidden;
		return 1;
	}
	if (!hidden && w->cb(w->ctx, name, len, ino, dtype, next | LOWER_COOKIE))
		return (w->stopped = 1);
	return 0;
}

static int readdir_lower(struct cairn_ns *ns, const struct ns_dsnap *s, uint64_t cookie,
			 cairn_dirent_cb cb, void *ctx, int *err)
{
	struct lower_walk w = { ns, s, cb, ctx, 0, 0 };
	/* From 2: "." and ".." are the namespace's own. */
	int rc = cairn_image_readdir(ns->img, s->lower, cookie < 2 ? 2 : cookie, lower_entry, &w);

	if (!rc)
		rc = w.err;
	if (rc)
		*err = rc;
	return rc || w.stopped;
}

int cairn_ns_readdir(struct cairn_ns *ns, uint64_t dir, uint64_t cookie, cairn_dirent_cb cb,
		     void *ctx)
{
	struct ns_node view, *d = ns_node_get(ns, dir, &view);
	struct ns_dsnap s;
	uint64_t self, parent;
	int err = 0;

	if (d->type != S_IFDIR)
		return -ENOTDIR;
	/* No upper layer, and no node to say who the parent is: the image's own
	 * listing, "." and ".." (its parent field) included, with its cookies. */
	if (ns->lean)
		return cairn_image_readdir(ns->img, d->lower, cookie, cb, ctx);
	pthread_mutex_lock(&ns->lock);
	ns_snap_dir(ns, d, &s);
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
	if (ns_merged(&s) || !s.has_upper)
		readdir_lower(ns, &s, cookie & ~LOWER_COOKIE, cb, ctx, &err);
	return err;
}
