/* SPDX-License-Identifier: MIT */
/*
 * Copying image objects into RAM for the overlay: data, metadata and xattrs,
 * parents first. (tmp= subtrees are seeded by cairn_ramfs_copy_from_image.)
 * Copies run as root; owners and modes are then set from the image, after the
 * data, so writing never clears setuid bits the image had.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "ns_internal.h"

#define COPY_CHUNK (1u << 20)

static const struct cairn_cred root_cred = { 0, 0 };

static int all_zero(const unsigned char *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* Holes stay holes: zero blocks are skipped and the size is set afterwards. */
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
							      off + done, 0, &root_cred);
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
		return cairn_ramfs_mkdir(ns->ram, updir, name, len, perm, &root_cred, st);
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
		rc = cairn_ramfs_symlink(ns->ram, updir, name, len, target, &root_cred, st);
		free(target);
		return rc;
	}
	case S_IFREG:
		return cairn_ramfs_mknod(ns->ram, updir, name, len, S_IFREG | perm, 0, &root_cred,
					 st);
	default:
		return cairn_ramfs_mknod(ns->ram, updir, name, len, ls->mode, ls->rdev, &root_cred,
					 st);
	}
}

int ns_copy_object(struct cairn_ns *ns, cairn_ino_t lower, cairn_ino_t updir, const char *name,
		   size_t len, struct cairn_stat *st)
{
	struct cairn_stat ls;
	struct cairn_setattr sa;
	int rc = cairn_image_stat(ns->img, lower, &ls);

	if (rc)
		return rc;
	rc = make_object(ns, &ls, lower, updir, name, len, st);
	if (rc)
		return rc;
	if (S_ISREG(ls.mode))
		rc = copy_data(ns, lower, st->ino, ls.size);
	if (!rc)
		rc = copy_xattrs(ns, lower, st->ino);
	if (!rc && ns->overlay) {
		uint64_t origin = lower;

		/* Best effort: without it only the inode number of a forgotten and
		 * re-looked-up copy would change. */
		cairn_ramfs_setxattr(ns->ram, st->ino, NS_XATTR_ORIGIN, &origin, sizeof(origin), 0);
	}
	if (!rc) {
		memset(&sa, 0, sizeof(sa));
		sa.valid = CAIRN_SET_UID | CAIRN_SET_GID | CAIRN_SET_ATIME | CAIRN_SET_MTIME |
			   CAIRN_SET_CTIME;
		if (!S_ISLNK(ls.mode))
			sa.valid |= CAIRN_SET_MODE;
		if (S_ISREG(ls.mode))
			sa.valid |= CAIRN_SET_SIZE;
		sa.mode = ls.mode & 07777;
		sa.uid = ls.uid;
		sa.gid = ls.gid;
		sa.size = ls.size;
		sa.atime = ls.atime;
		sa.mtime = ls.mtime;
		sa.ctime = ls.ctime;
		rc = cairn_ramfs_setattr(ns->ram, st->ino, &sa, &root_cred, st);
	}
	if (rc) {
		cairn_ramfs_forget(ns->ram, st->ino, 1);
		if (S_ISDIR(ls.mode))
			cairn_ramfs_rmdir(ns->ram, updir, name, len);
		else
			cairn_ramfs_unlink(ns->ram, updir, name, len);
	}
	return rc;
}

/* A copy-up is no change the user made to the directory it lands in, so that
 * keeps its times, as overlayfs's copy-up does. Best effort. */
static void keep_dir_times(struct cairn_ns *ns, cairn_ino_t dir, const struct cairn_stat *before)
{
	struct cairn_setattr sa;

	memset(&sa, 0, sizeof(sa));
	sa.valid = CAIRN_SET_ATIME | CAIRN_SET_MTIME;
	sa.atime = before->atime;
	sa.mtime = before->mtime;
	cairn_ramfs_setattr(ns->ram, dir, &sa, NULL, NULL);
}

int ns_copy_up(struct cairn_ns *ns, struct ns_node *n)
{
	struct cairn_stat st, pst;
	int rc;

	if (ns_has_upper(n))
		return 0;
	if (!ns->overlay || !n->has_lower || !n->parent)
		return -EROFS;
	rc = ns_copy_up(ns, n->parent);
	if (!rc)
		rc = cairn_ramfs_getattr(ns->ram, n->parent->upper, &pst);
	if (rc)
		return rc;
	rc = ns_copy_object(ns, n->lower, n->parent->upper, n->name, n->name_len, &st);
	if (rc == -EEXIST)
		rc = -ESTALE; /* the name now holds something else (a whiteout after unlink) */
	if (rc)
		return rc;
	keep_dir_times(ns, n->parent->upper, &pst);
	n->upper = st.ino;
	__atomic_store_n(&n->has_upper, 1, __ATOMIC_RELEASE);
	ns_table_add_upper(ns, n);
	ns->copy_ups++;
	return 0;
}
