/* SPDX-License-Identifier: MIT */
/*
 * Copying image objects into the RAM layer: the one copy routine behind both
 * overlay copy-up (copyup.c) and seeding a tmp= subtree with the image's content
 * at that path (setup.c). Copies run as root with no credentials (an exact copy:
 * no umask, no default ACL inherited); owners and modes are set from the image
 * after the data, so writing never clears setuid bits the image had.
 *
 * One xattr policy for every copy (copy_xattrs): the namespace's own names
 * (trusted.cairn.*) never come from the image; names the RAM fs cannot hold on
 * such an object are skipped, as overlayfs skips xattrs its upper layer refuses;
 * an ACL it refuses as malformed is one no kernel writes: a corrupt image.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cairn/error.h>
#include "ns_internal.h"

#define COPY_CHUNK (1u << 20)
/* Whole reads are chunk-aligned pieces for every chunk size the RAM fs takes
 * (powers of two up to 1 MiB, cairn_ramfs_config). */
_Static_assert(COPY_CHUNK % (1u << 20) == 0, "COPY_CHUNK must be a multiple of 1 MiB");
#define SEED_MAX_DEPTH 1024     /* deeper than any sane tree: a loop in a corrupt image */

static int all_zero(const unsigned char *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* Holes stay holes: RAM chunks (ns->ram_chunk) that would hold only zeros are
 * not written, and the caller sets the size afterwards. `size` is what is
 * copied, which may be less than the file. */
static int copy_data(struct cairn_ns *ns, cairn_ino_t lower, cairn_ino_t upper, uint64_t size)
{
	size_t cs = ns->ram_chunk ? ns->ram_chunk : 4096;
	unsigned char *buf;
	uint64_t off = 0;
	int rc = 0;

	if (!size)
		return 0;
	buf = malloc(COPY_CHUNK);
	if (!buf)
		return -ENOMEM;
	while (!rc && off < size) {
		size_t want = size - off < COPY_CHUNK ? (size_t)(size - off) : COPY_CHUNK;
		ssize_t n = cairn_image_read(ns->img, lower, buf, want, off);

		if (n <= 0) {
			rc = (int)n; /* 0: the image says the file is shorter than its size */
			break;
		}
		/* Chunk-aligned pieces while reads come back whole (COPY_CHUNK is a
		 * multiple of any chunk size); any piece is correct, aligned ones
		 * keep every hole. */
		for (size_t done = 0; !rc && done < (size_t)n; done += cs) {
			size_t blk = (size_t)n - done < cs ? (size_t)n - done : cs;
			ssize_t w;

			if (all_zero(buf + done, blk))
				continue;
			w = cairn_ramfs_write(ns->ram, upper, buf + done, blk, off + done, 0, NULL);
			if (w < 0)
				rc = (int)w;
			else if ((size_t)w < blk)
				rc = -ENOSPC;
		}
		off += (uint64_t)n;
	}
	free(buf);
	return rc;
}

/* Whether a setxattr error means "the RAM fs holds no such name on such an
 * object" (skip it): unknown namespaces, ACLs on symlinks (-EOPNOTSUPP), user.*
 * on special files (-EPERM). */
static int xattr_unholdable(int rc)
{
	return rc == -EOPNOTSUPP || rc == -EPERM;
}

static int copy_xattrs(struct cairn_ns *ns, cairn_ino_t lower, cairn_ino_t upper)
{
	char *names, *val = NULL;
	ssize_t len = cairn_image_listxattr_alloc(ns->img, lower, &names);
	int rc = 0;

	if (len <= 0)
		return len == -ENOTSUP || len == -ENODATA ? 0 : (int)len;
	for (ssize_t i = 0; !rc && i < len; i += (ssize_t)strlen(names + i) + 1) {
		const char *name = names + i;
		ssize_t vl;
		char *nv;

		if (ns_reserved_xattr(name))
			continue;
		vl = cairn_image_getxattr(ns->img, lower, name, NULL, 0);
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
		vl = cairn_image_getxattr(ns->img, lower, name, val, (size_t)vl);
		if (vl < 0) {
			rc = (int)vl;
			break;
		}
		rc = cairn_ramfs_setxattr(ns->ram, upper, name, val, (size_t)vl, 0);
		if (rc == -EINVAL && !strncmp(name, "system.posix_acl_", 17))
			rc = -CAIRN_ECORRUPT; /* an ACL no kernel would have written */
		else if (xattr_unholdable(rc))
			rc = 0;
	}
	free(val);
	free(names);
	return rc;
}

/* The object alone (no data, xattrs or attributes yet) as `name` in RAM dir
 * updir; *st gets it with one RAM lookup reference. */
static int make_object(struct cairn_ns *ns, const struct cairn_stat *ls, cairn_ino_t updir,
		       const char *name, size_t len, struct cairn_stat *st)
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
		n = cairn_image_readlink(ns->img, ls->ino, target, PATH_MAX);
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
		return cairn_ramfs_mknod(ns->ram, updir, name, len, S_IFREG | perm, 0, NULL, st);
	default:
		return cairn_ramfs_mknod(ns->ram, updir, name, len, ls->mode, ls->rdev, NULL, st);
	}
}

int ns_fill_object(struct cairn_ns *ns, const struct cairn_stat *ls, cairn_ino_t ino,
		   uint64_t keep, unsigned flags, struct cairn_stat *st)
{
	struct cairn_setattr sa;
	int rc = 0;

	if (S_ISREG(ls->mode))
		rc = copy_data(ns, ls->ino, ino, ls->size < keep ? ls->size : keep);
	if (!rc)
		rc = copy_xattrs(ns, ls->ino, ino);
	/* A copy of one name of several is a new inode (ns_link_group): it must not
	 * take the inode number the other names still show. */
	if (!rc && (flags & NS_COPY_ORIGIN) && !ns_link_group(ls)) {
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

/* Undo make_object after a failed fill: nothing is left behind. */
static void unmake_object(struct cairn_ns *ns, const struct cairn_stat *ls, cairn_ino_t updir,
			  const char *name, size_t len, cairn_ino_t ino)
{
	cairn_ramfs_forget(ns->ram, ino, 1);
	if (S_ISDIR(ls->mode))
		cairn_ramfs_rmdir(ns->ram, updir, name, len);
	else
		cairn_ramfs_unlink(ns->ram, updir, name, len);
}

int ns_copy_object(struct cairn_ns *ns, cairn_ino_t lower, cairn_ino_t updir, const char *name,
		   size_t len, uint64_t keep, struct cairn_stat *st)
{
	struct cairn_stat ls;
	int rc = cairn_image_stat(ns->img, lower, &ls);

	if (rc)
		return rc;
	ls.ino = lower;
	rc = make_object(ns, &ls, updir, name, len, st);
	if (rc)
		return rc;
	rc = ns_fill_object(ns, &ls, st->ino, keep, ns->overlay ? NS_COPY_ORIGIN : 0, st);
	if (rc)
		unmake_object(ns, &ls, updir, name, len, st->ino);
	return rc;
}

/* ---- seeding a RAM subtree: a whole image directory ---- */

/* Hard links already copied: image inode -> RAM inode (open addressing). */
struct link_map {
	struct { cairn_ino_t src, dst; } *slot;
	size_t cap, used;
};

struct seed {
	struct cairn_ns *ns;
	struct link_map links;
};

static cairn_ino_t *link_find(struct link_map *m, cairn_ino_t src, int insert)
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
				*link_find(&bigger, m->slot[i].src, 1) = m->slot[i].dst;
		free(m->slot);
		*m = bigger;
	}
	*link_find(m, src, 1) = dst;
	return 0;
}

static int seed_dir(struct seed *s, cairn_ino_t dst, const struct cairn_stat *ls,
		    unsigned depth);

/* A directory entry: directories already in RAM are merged into. */
static int seed_subdir(struct seed *s, cairn_ino_t dir, const char *name, size_t len,
		       const struct cairn_stat *ls, unsigned depth)
{
	struct cairn_ns *ns = s->ns;
	struct cairn_stat st;
	int rc = cairn_ramfs_lookup(ns->ram, dir, name, len, &st);

	if (!rc && !S_ISDIR(st.mode)) {
		cairn_ramfs_forget(ns->ram, st.ino, 1);
		return -EEXIST;
	}
	if (rc == -ENOENT)
		rc = make_object(ns, ls, dir, name, len, &st);
	if (rc)
		return rc;
	rc = seed_dir(s, st.ino, ls, depth + 1);
	cairn_ramfs_forget(ns->ram, st.ino, 1);
	return rc;
}

static int seed_entry(struct seed *s, cairn_ino_t dir, const struct cairn_dirent *de,
		      unsigned depth)
{
	struct cairn_ns *ns = s->ns;
	struct cairn_stat ls, st;
	cairn_ino_t *linked;
	int rc = cairn_image_stat(ns->img, de->ino, &ls);

	if (rc)
		return rc;
	ls.ino = de->ino;
	if (S_ISDIR(ls.mode))
		return seed_subdir(s, dir, de->name, de->name_len, &ls, depth);
	linked = ls.nlink > 1 ? link_find(&s->links, ls.ino, 0) : NULL;
	if (linked) {
		rc = cairn_ramfs_link(ns->ram, *linked, dir, de->name, de->name_len, &st);
		if (!rc)
			cairn_ramfs_forget(ns->ram, st.ino, 1);
		return rc;
	}
	rc = make_object(ns, &ls, dir, de->name, de->name_len, &st);
	if (rc)
		return rc;
	rc = ns_fill_object(ns, &ls, st.ino, NS_KEEP_ALL, 0, NULL);
	if (!rc && ls.nlink > 1)
		rc = link_add(&s->links, ls.ino, st.ino);
	cairn_ramfs_forget(ns->ram, st.ino, 1);
	return rc;
}

/* The entries of image dir ls into RAM dir dst, then ls's own xattrs and
 * attributes (last, so adding the entries does not move its times). */
static int seed_dir(struct seed *s, cairn_ino_t dst, const struct cairn_stat *ls,
		    unsigned depth)
{
	struct cairn_dirent *de;
	ssize_t n;
	int rc = 0;

	if (depth > SEED_MAX_DEPTH)
		return -CAIRN_ECORRUPT;
	n = cairn_image_readdir_alloc(s->ns->img, ls->ino, 0, 0, &de);
	if (n < 0)
		return (int)n;
	for (ssize_t i = 0; !rc && i < n; i++)
		rc = seed_entry(s, dst, &de[i], depth);
	free(de);
	return rc ? rc : ns_fill_object(s->ns, ls, dst, NS_KEEP_ALL, 0, NULL);
}

int ns_seed_dir(struct cairn_ns *ns, cairn_ino_t dst, cairn_ino_t lower)
{
	struct seed s = { .ns = ns };
	struct cairn_stat ls;
	int rc = cairn_image_stat(ns->img, lower, &ls);

	if (!rc && !S_ISDIR(ls.mode))
		rc = -ENOTDIR;
	ls.ino = lower;
	if (!rc)
		rc = seed_dir(&s, dst, &ls, 0);
	free(s.links.slot);
	return rc;
}
