/* SPDX-License-Identifier: MIT */
/*
 * Seeding a RAM tree from an image directory (e.g. /tmp as the image has it):
 * a recursive copy through the public APIs of both sides, keeping modes,
 * owners, times, xattrs, hard links inside the subtree and holes (chunk-sized
 * runs of zeros are not stored).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cairn/error.h>
#include "ramfs/internal.h"

#define COPY_BUF (256 * 1024)
#define COPY_MAX_DEPTH 1024     /* deeper than any sane tree: a loop in a corrupt image */

/* Hard links already copied: image inode -> RAM inode (open addressing). */
struct link_map {
	struct { cairn_ino_t src, dst; } *slot;
	size_t cap, used;
};

struct copy {
	struct cairn_ramfs *fs;
	struct cairn_image *img;
	struct link_map links;
	char *buf;
};

static cairn_ino_t *link_find(struct link_map *m, cairn_ino_t src, bool insert)
{
	if (!m->cap)
		return NULL;
	for (size_t i = (size_t)(src * 0x9E3779B97F4A7C15ull) & (m->cap - 1);;
	     i = (i + 1) & (m->cap - 1)) {
		if (m->slot[i].src == src)
			return &m->slot[i].dst;
		if (!m->slot[i].src) {
			if (!insert)
				return NULL;
			m->slot[i].src = src;
			m->used++;
			return &m->slot[i].dst;
		}
	}
}

static int link_add(struct link_map *m, cairn_ino_t src, cairn_ino_t dst)
{
	if ((m->used + 1) * 2 > m->cap) {
		struct link_map bigger = { .cap = m->cap ? m->cap * 2 : 64 };

		bigger.slot = calloc(bigger.cap, sizeof(*bigger.slot));
		if (!bigger.slot)
			return -ENOMEM;
		for (size_t i = 0; i < m->cap; i++)
			if (m->slot[i].src)
				*link_find(&bigger, m->slot[i].src, true) = m->slot[i].dst;
		free(m->slot);
		*m = bigger;
	}
	*link_find(m, src, true) = dst;
	return 0;
}

/* Mode, owner and times of the image inode onto the RAM inode. */
static int copy_attrs(struct copy *c, cairn_ino_t dst, const struct cairn_stat *st)
{
	struct cairn_setattr sa = {
		.valid = CAIRN_SET_MODE | CAIRN_SET_UID | CAIRN_SET_GID | CAIRN_SET_ATIME |
			 CAIRN_SET_MTIME | CAIRN_SET_CTIME,
		.mode = st->mode, .uid = st->uid, .gid = st->gid,
		.atime = st->atime, .mtime = st->mtime, .ctime = st->ctime,
	};

	return cairn_ramfs_setattr(c->fs, dst, &sa, NULL, NULL);
}

/* xattrs the RAM fs cannot hold (system.* but the POSIX ACLs, user.* on a
 * symlink) are skipped. */
static int copy_xattrs(struct copy *c, cairn_ino_t dst, cairn_ino_t src)
{
	char *names;
	ssize_t len = cairn_image_listxattr_alloc(c->img, src, &names);
	int err = 0;

	if (len <= 0)
		return (int)len;
	for (ssize_t off = 0; !err && len > 0 && off < len; off += (ssize_t)strlen(names + off) + 1) {
		const char *name = names + off;
		ssize_t vlen = cairn_image_getxattr(c->img, src, name, c->buf, COPY_BUF);

		if (vlen < 0) {
			err = (int)vlen;
			break;
		}
		err = cairn_ramfs_setxattr(c->fs, dst, name, c->buf, (size_t)vlen, 0);
		if (err == -EOPNOTSUPP || err == -EPERM)
			err = 0;
		if (err == -EINVAL && !strncmp(name, "system.posix_acl_", 17))
			err = -CAIRN_ECORRUPT; /* an ACL no kernel would have written */
	}
	free(names);
	return len < 0 ? (int)len : err;
}

static bool all_zero(const char *p, size_t n)
{
	return n == 0 || (p[0] == 0 && !memcmp(p, p + 1, n - 1));
}

static int copy_data(struct copy *c, cairn_ino_t dst, cairn_ino_t src, uint64_t size)
{
	size_t cs = c->fs->chunk_size;
	struct cairn_setattr sa = { .valid = CAIRN_SET_SIZE, .size = size };

	for (uint64_t off = 0; off < size;) {
		ssize_t n = cairn_image_read(c->img, src, c->buf, COPY_BUF, off);

		if (n < 0)
			return (int)n;
		if (n == 0)
			break; /* the image says the file is shorter than its size */
		for (size_t p = 0; p < (size_t)n; p += cs) {
			size_t k = (size_t)n - p < cs ? (size_t)n - p : cs;
			ssize_t w;

			if (all_zero(c->buf + p, k))
				continue; /* keep holes as holes */
			w = cairn_ramfs_write(c->fs, dst, c->buf + p, k, off + p, 0, NULL);
			if (w < 0)
				return (int)w;
			if ((size_t)w < k)
				return -ENOSPC;
		}
		off += (uint64_t)n;
	}
	return cairn_ramfs_setattr(c->fs, dst, &sa, NULL, NULL);
}

static int copy_dir(struct copy *c, cairn_ino_t dst, cairn_ino_t src, unsigned depth);

/* Create one non-directory; *out gets its ino with a lookup reference. */
static int create_leaf(struct copy *c, cairn_ino_t dir, const char *name, size_t len,
		       cairn_ino_t src, const struct cairn_stat *st, cairn_ino_t *out)
{
	struct cairn_stat nst;
	int err;

	if (S_ISLNK(st->mode)) {
		char target[CAIRN_RAMFS_SYMLINK_MAX + 1];
		ssize_t n = cairn_image_readlink(c->img, src, target, CAIRN_RAMFS_SYMLINK_MAX);

		if (n < 0)
			return (int)n;
		target[n] = '\0';
		err = cairn_ramfs_symlink(c->fs, dir, name, len, target, NULL, &nst);
	} else {
		err = cairn_ramfs_mknod(c->fs, dir, name, len, st->mode, st->rdev, NULL, &nst);
	}
	if (err)
		return err;
	*out = nst.ino;
	if (S_ISREG(st->mode))
		err = copy_data(c, nst.ino, src, st->size);
	return err;
}

static int copy_entry(struct copy *c, cairn_ino_t dir, const char *name, size_t len,
		      cairn_ino_t src, unsigned depth)
{
	struct cairn_stat st, nst;
	cairn_ino_t dst = 0, *linked;
	int err = cairn_image_stat(c->img, src, &st);

	if (err)
		return err;
	if (S_ISDIR(st.mode)) {
		err = cairn_ramfs_lookup(c->fs, dir, name, len, &nst);
		if (!err && !S_ISDIR(nst.mode)) {
			cairn_ramfs_forget(c->fs, nst.ino, 1);
			return -EEXIST;
		}
		if (err == -ENOENT)
			err = cairn_ramfs_mkdir(c->fs, dir, name, len, st.mode & 07777, NULL, &nst);
		if (err)
			return err;
		err = copy_dir(c, nst.ino, src, depth + 1);
		cairn_ramfs_forget(c->fs, nst.ino, 1);
		return err;
	}
	linked = st.nlink > 1 ? link_find(&c->links, src, false) : NULL;
	if (linked) {
		err = cairn_ramfs_link(c->fs, *linked, dir, name, len, &nst);
		if (!err)
			cairn_ramfs_forget(c->fs, nst.ino, 1);
		return err;
	}
	err = create_leaf(c, dir, name, len, src, &st, &dst);
	if (!err)
		err = copy_xattrs(c, dst, src);
	if (!err)
		err = copy_attrs(c, dst, &st);
	if (!err && st.nlink > 1)
		err = link_add(&c->links, src, dst);
	if (dst)
		cairn_ramfs_forget(c->fs, dst, 1);
	return err;
}

/* Names of one image directory, collected before copying (the callback must
 * not recurse into the image reader while it iterates). */
struct name_list {
	char *names;            /* NUL-separated */
	size_t len, cap;
	cairn_ino_t *inos;
	size_t count, inos_cap;
	int err;
};

static int collect_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		      uint64_t next)
{
	struct name_list *l = ctx;

	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	if (l->len + len + 1 > l->cap) {
		size_t cap = (l->cap + len + 1) * 2;
		char *p = realloc(l->names, cap);

		if (!p)
			return (l->err = -ENOMEM);
		l->names = p;
		l->cap = cap;
	}
	if (l->count == l->inos_cap) {
		size_t cap = l->inos_cap ? l->inos_cap * 2 : 16;
		cairn_ino_t *p = realloc(l->inos, cap * sizeof(*p));

		if (!p)
			return (l->err = -ENOMEM);
		l->inos = p;
		l->inos_cap = cap;
	}
	memcpy(l->names + l->len, name, len);
	l->names[l->len + len] = '\0';
	l->len += len + 1;
	l->inos[l->count++] = ino;
	return 0;
}

/* Contents of image dir src into RAM dir dst, then src's own attributes. */
static int copy_dir(struct copy *c, cairn_ino_t dst, cairn_ino_t src, unsigned depth)
{
	struct name_list l = { 0 };
	struct cairn_stat st;
	int err;

	if (depth > COPY_MAX_DEPTH)
		return -CAIRN_ECORRUPT;
	err = cairn_image_stat(c->img, src, &st);
	if (!err && !S_ISDIR(st.mode))
		err = -ENOTDIR;
	if (!err)
		err = cairn_image_readdir(c->img, src, 0, collect_cb, &l);
	if (!err)
		err = l.err;
	const char *name = l.names;
	for (size_t i = 0; !err && i < l.count; i++) {
		size_t len = strlen(name);

		err = copy_entry(c, dst, name, len, l.inos[i], depth);
		name += len + 1;
	}
	free(l.names);
	free(l.inos);
	if (!err)
		err = copy_xattrs(c, dst, src);
	if (!err)
		err = copy_attrs(c, dst, &st);
	return err;
}

int cairn_ramfs_copy_from_image(struct cairn_ramfs *fs, cairn_ino_t dst_dir,
				struct cairn_image *img, cairn_ino_t src_dir)
{
	struct copy c = { .fs = fs, .img = img };
	struct cairn_stat st;
	int err = cairn_ramfs_getattr(fs, dst_dir, &st);

	if (err)
		return err;
	if (!S_ISDIR(st.mode))
		return -ENOTDIR;
	c.buf = malloc(COPY_BUF);
	if (!c.buf)
		return -ENOMEM;
	err = copy_dir(&c, dst_dir, src_dir, 0);
	free(c.links.slot);
	free(c.buf);
	return err;
}
