/* SPDX-License-Identifier: MIT */
/*
 * Copying image objects into RAM for the overlay: data, metadata and xattrs,
 * parents first. (tmp= subtrees are seeded by cairn_ramfs_copy_from_image.)
 * Copies run as root with no credentials (an exact copy: no umask, no default
 * ACL inherited); owners and modes are then set from the image, after the
 * data, so writing never clears setuid bits the image had.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cairn/error.h>
#include "ns_internal.h"

#define COPY_CHUNK (1u << 20)


static int all_zero(const unsigned char *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* Holes stay holes: zero blocks are skipped and the size is set afterwards.
 * `size` is what is copied, which may be less than the file. */
static int copy_data(struct cairn_ns *ns, cairn_ino_t lower, cairn_ino_t upper, uint64_t size)
{
	unsigned char *buf;
	uint64_t off = 0;
	int rc = 0;

	if (!size)
		return 0;
	buf = malloc(COPY_CHUNK);
	if (!buf)
		return -ENOMEM;
	while (off < size) {
		size_t want = size - off < COPY_CHUNK ? (size_t)(size - off) : COPY_CHUNK;
		ssize_t n = cairn_image_read(ns->img, lower, buf, want, off);

		if (n < 0) {
			rc = (int)n;
			break;
		}
		if (n == 0)
			break;
		for (size_t done = 0; done < (size_t)n;) {
			size_t blk = (size_t)n - done < 4096 ? (size_t)n - done : 4096;

			if (!all_zero(buf + done, blk)) {
				ssize_t w = cairn_ramfs_write(ns->ram, upper, buf + done, blk,
							      off + done, 0, NULL);
				if (w < 0) {
					rc = (int)w;
					goto out;
				}
				if ((size_t)w < blk) {
					rc = -ENOSPC;
					goto out;
				}
			}
			done += blk;
		}
		off += (uint64_t)n;
	}
out:
	free(buf);
	return rc;
}

static int copy_xattrs(struct cairn_ns *ns, cairn_ino_t lower, cairn_ino_t upper)
{
	char *names, *val = NULL;
	ssize_t len = cairn_image_listxattr_alloc(ns->img, lower, &names);
	int rc = 0;

	if (len <= 0)
		return len == -ENOTSUP || len == -ENODATA ? 0 : (int)len;
	for (ssize_t i = 0; len > 0 && i < len; i += (ssize_t)strlen(names + i) + 1) {
		ssize_t vl;
		char *nv;

		if (ns_reserved_xattr(names + i))
			continue;
		vl = cairn_image_getxattr(ns->img, lower, names + i, NULL, 0);
		if (vl < 0) {
			rc = (int)vl;
			break;
		}
		nv = realloc(val, vl ? (size_t)vl : 1);
		if (!nv) {
			rc = -ENOMEM;
			break;
		}
		val = nv;
		vl = cairn_image_getxattr(ns->img, lower, names + i, val, (size_t)vl);
		if (vl < 0) {
			rc = (int)vl;
			break;
		}
		rc = cairn_ramfs_setxattr(ns->ram, upper, names + i, val, (size_t)vl, 0);
		if (rc == -EINVAL && !strncmp(names + i, "system.posix_acl_", 17))
			rc = -CAIRN_ECORRUPT; /* an ACL no kernel would have written */
		if (rc)
			break;
	}
	if (len < 0)
		rc = (int)len;
	free(val);
	free(names);
	return rc;
}

static int make_object(struct cairn_ns *ns, const struct cairn_stat *ls, cairn_ino_t lower,
		       cairn_ino_t updir, const char *name, size_t len, struct cairn_stat *st)
{
	uint32_t perm = ls->mode & 07777;

	switch (ls->mode & S_IFMT) {
	case S_IFDIR:
		return cairn_ramfs_mkdir(ns->ram, updir, name, len, perm, NULL, st);
	case S_IFLNK: {
		char *target = malloc(PATH_MAX + 1);
		ssize_t n;
		int rc;

		if (!target)
			return -ENOMEM;
		n = cairn_image_readlink(ns->img, lower, target, PATH_MAX);
		if (n < 0) {
			free(target);
			return (int)n;
		}
		target[n] = 0;
		rc = cairn_ramfs_symlink(ns->ram, updir, name, len, target, NULL, st);
		free(target);
		return rc;
	}
	case S_IFREG:
		return cairn_ramfs_mknod(ns->ram, updir, name, len, S_IFREG | perm, 0, NULL,
					 st);
	default:
		return cairn_ramfs_mknod(ns->ram, updir, name, len, ls->mode, ls->rdev, NULL,
					 st);
	}
}

/* Everything but the object itself: data below keep, xattrs, the origin, then
 * mode, owner and times of image object ls onto RAM inode ino (*st gets them). */
static int fill_object(struct cairn_ns *ns, const struct cairn_stat *ls, cairn_ino_t ino,
		       uint64_t keep, struct cairn_stat *st)
{
	struct cairn_setattr sa;
	int rc = 0;

	if (S_ISREG(ls->mode))
		rc = copy_data(ns, ls->ino, ino, ls->size < keep ? ls->size : keep);
	if (!rc)
		rc = copy_xattrs(ns, ls->ino, ino);
	/* A copy of one name of several is a new inode (ns_link_group): it must not
	 * take the inode number the other names still show. */
	if (!rc && ns->overlay && !ns_link_group(ls)) {
		uint64_t origin = ls->ino;

		/* Best effort: without it only the inode number of a forgotten and
		 * re-looked-up copy would change. */
		cairn_ramfs_setxattr(ns->ram, ino, NS_XATTR_ORIGIN, &origin, sizeof(origin), 0);
	}
	if (rc)
		return rc;
	memset(&sa, 0, sizeof(sa));
	sa.valid = CAIRN_SET_UID | CAIRN_SET_GID | CAIRN_SET_ATIME | CAIRN_SET_MTIME |
		   CAIRN_SET_CTIME;
	if (!S_ISLNK(ls->mode))
		sa.valid |= CAIRN_SET_MODE;
	if (S_ISREG(ls->mode))
		sa.valid |= CAIRN_SET_SIZE;
	sa.mode = ls->mode & 07777;
	sa.uid = ls->uid;
	sa.gid = ls->gid;
	sa.size = ls->size;
	sa.atime = ls->atime;
	sa.mtime = ls->mtime;
	sa.ctime = ls->ctime;
	return cairn_ramfs_setattr(ns->ram, ino, &sa, NULL, st);
}

int ns_copy_object(struct cairn_ns *ns, cairn_ino_t lower, cairn_ino_t updir, const char *name,
		   size_t len, uint64_t keep, struct cairn_stat *st)
{
	struct cairn_stat ls;
	int rc = cairn_image_stat(ns->img, lower, &ls);

	if (rc)
		return rc;
	ls.ino = lower;
	rc = make_object(ns, &ls, lower, updir, name, len, st);
	if (rc)
		return rc;
	rc = fill_object(ns, &ls, st->ino, keep, st);
	if (rc) {
		cairn_ramfs_forget(ns->ram, st->ino, 1);
		if (S_ISDIR(ls.mode))
			cairn_ramfs_rmdir(ns->ram, updir, name, len);
		else
			cairn_ramfs_unlink(ns->ram, updir, name, len);
	}
	return rc;
}

int ns_copy_meta(struct cairn_ns *ns, cairn_ino_t lower, cairn_ino_t upper)
{
	struct cairn_stat ls, st;
	int rc = cairn_image_stat(ns->img, lower, &ls);

	if (rc)
		return rc;
	ls.ino = lower;
	return fill_object(ns, &ls, upper, 0, &st);
}

int ns_link_gone(struct cairn_ns *ns, const struct cairn_stat *ls)
{
	return ns_link_group(ls) ? ns_set_inc(&ns->gone_links, ls->ino) : 0;
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
	struct cairn_stat named;
	struct cairn_setattr sa;
	int rc = cairn_ramfs_tmpfile(ns->ram, n->parent->upper, ls->mode & 07777, NULL, st);

	if (rc)
		return rc;
	n->copying = 1;
	n->pins++;
	pthread_mutex_unlock(&ns->lock);
	rc = fill_object(ns, ls, st->ino, keep, st);
	pthread_mutex_lock(&ns->lock);
	/* The name as it is now; it is the one the copy must take. */
	if (!rc)
		rc = cairn_ramfs_link(ns->ram, st->ino, n->parent->upper, n->name, n->name_len,
				      &named);
	if (!rc) {
		cairn_ramfs_forget(ns->ram, named.ino, 1);
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
	n->pins--;
	n->copying = 0;
	pthread_cond_broadcast(&ns->copy_done);
	return rc;
}

int ns_copy_up(struct cairn_ns *ns, struct ns_node *n, uint64_t keep, int may_unlock)
{
	struct cairn_stat st, ls;
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
	if (may_unlock && S_ISREG(ls.mode))
		rc = copy_file_unlocked(ns, n, &ls, keep, &st);
	else
		rc = ns_copy_object(ns, n->lower, n->parent->upper, n->name, n->name_len, keep,
				    &st);
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
