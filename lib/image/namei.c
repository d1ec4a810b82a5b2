/* SPDX-License-Identifier: MIT */
/*
 * Inodes and names of the image reader: decoding and checking inode records,
 * stat, lookup in a sorted directory, readlink and path resolution.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "image_int.h"

#define MAX_SYMLINK_FOLLOWS 40
#define RESOLVE_BUF_MAX (64u * 1024) /* longest path text resolve() expands to */

int cairn_image_blob_ok(const struct cairn_image *img, uint64_t ref, uint64_t len)
{
	return cairn_add_ok(ref, len, img->blob_len);
}

int cairn_image_blob_read(struct cairn_image *img, void *buf, size_t len, uint64_t ref)
{
	if (!cairn_image_blob_ok(img, ref, len))
		return cairn_image_corrupt(img, "blob reference %llu+%zu past the blob region",
					   (unsigned long long)ref, len);
	return cairn_image_meta_read(img, buf, len, img->blob_off + ref);
}

static int mode_ok(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR:
	case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		break;
	default:
		return 0;
	}
	return (mode & ~(uint32_t)(S_IFMT | 07777)) == 0;
}

static int regular_ok(struct cairn_image *img, cairn_ino_t ino, struct cairn_rinode *r)
{
	unsigned long long n = ino;

	if (r->flags & CAIRN_IF_CHUNKED) {
		return cairn_image_chunked_ok(img, ino, r);
	} else if (r->flags & CAIRN_IF_INLINE) {
		if (r->flags & CAIRN_IF_EXTENTS)
			return cairn_image_corrupt(img, "inode %llu: both inline and extents", n);
		if (r->size > CAIRN_INLINE_MAX || !cairn_image_blob_ok(img, r->data_ref, r->size))
			return cairn_image_corrupt(img, "inode %llu: inline data out of bounds", n);
	} else if (r->flags & CAIRN_IF_EXTENTS) {
		if (!(img->incompat & CAIRN_INCOMPAT_EXTENTS))
			return cairn_image_corrupt(img, "inode %llu: uses extents without the feature", n);
		if (!cairn_add_ok(r->data_ref, r->data_count, img->extent_count))
			return cairn_image_corrupt(img, "inode %llu: extents %llu+%llu past the extent table",
						   n, (unsigned long long)r->data_ref,
						   (unsigned long long)r->data_count);
	} else if (r->size) {
		if (r->data_ref % CAIRN_BLOCK_SIZE || r->data_ref < img->data_off ||
		    !cairn_add_ok(r->data_ref, r->size, img->data_end))
			return cairn_image_corrupt(img, "inode %llu: data %llu+%llu outside the data region",
						   n, (unsigned long long)r->data_ref,
						   (unsigned long long)r->size);
	}
	return 0;
}

static int type_ok(struct cairn_image *img, cairn_ino_t ino, struct cairn_rinode *r)
{
	unsigned long long n = ino;

	switch (r->mode & S_IFMT) {
	case S_IFREG:
		return regular_ok(img, ino, r);
	case S_IFDIR:
		if (r->flags)
			return cairn_image_corrupt(img, "inode %llu: directory with data flags", n);
		if (!cairn_add_ok(r->data_ref, r->data_count, img->dirent_count))
			return cairn_image_corrupt(img, "inode %llu: entries %llu+%llu past the dirent table",
						   n, (unsigned long long)r->data_ref,
						   (unsigned long long)r->data_count);
		if (r->parent == 0 || r->parent >= img->inode_count)
			return cairn_image_corrupt(img, "inode %llu: bad parent %u", n, r->parent);
		return 0;
	case S_IFLNK:
		if (r->flags)
			return cairn_image_corrupt(img, "inode %llu: symlink with data flags", n);
		if (r->size == 0 || r->size > CAIRN_SYMLINK_MAX || !cairn_image_blob_ok(img, r->data_ref, r->size))
			return cairn_image_corrupt(img, "inode %llu: symlink target out of bounds", n);
		return 0;
	default:
		if (r->flags)
			return cairn_image_corrupt(img, "inode %llu: special file with data flags", n);
		return 0;
	}
}

int cairn_image_inode_load(struct cairn_image *img, cairn_ino_t ino, struct cairn_rinode *r)
{
	struct cairn_disk_inode d;
	unsigned long long n = ino;
	int rc;

	if (ino == 0 || ino >= img->inode_count)
		return -ENOENT;
	rc = cairn_image_meta_read(img, &d, sizeof(d), img->inode_off + ino * CAIRN_INODE_SIZE);
	if (rc)
		return rc;
	r->mode = cairn_le32(d.mode);
	r->flags = cairn_le32(d.flags);
	r->nlink = cairn_le32(d.nlink);
	r->uid = cairn_le32(d.uid);
	r->gid = cairn_le32(d.gid);
	r->parent = cairn_le32(d.parent);
	r->size = cairn_le64(d.size);
	r->atime.sec = (int64_t)cairn_le64((uint64_t)d.atime_sec);
	r->mtime.sec = (int64_t)cairn_le64((uint64_t)d.mtime_sec);
	r->ctime.sec = (int64_t)cairn_le64((uint64_t)d.ctime_sec);
	r->atime.nsec = cairn_le32(d.atime_nsec);
	r->mtime.nsec = cairn_le32(d.mtime_nsec);
	r->ctime.nsec = cairn_le32(d.ctime_nsec);
	r->xattr_count = cairn_le32(d.xattr_count);
	r->xattr_ref = cairn_le64(d.xattr_ref);
	r->data_ref = cairn_le64(d.data_ref);
	r->data_count = cairn_le64(d.data_count);
	r->content_hash = cairn_le64(d.content_hash);
	r->alloc_blocks = cairn_le64(d.alloc_blocks);
	r->frag_ref = cairn_le64(d.frag_ref);
	r->frag_off = cairn_le32(d.frag_off);

	if (!mode_ok(r->mode))
		return cairn_image_corrupt(img, "inode %llu: bad mode 0%o", n, r->mode);
	if (r->flags & ~CAIRN_IF_KNOWN)
		return cairn_image_corrupt(img, "inode %llu: unknown flags 0x%x", n, r->flags);
	if (r->nlink == 0)
		return cairn_image_corrupt(img, "inode %llu: link count 0", n);
	if (r->atime.nsec >= 1000000000u || r->mtime.nsec >= 1000000000u ||
	    r->ctime.nsec >= 1000000000u)
		return cairn_image_corrupt(img, "inode %llu: nanoseconds out of range", n);
	if (!cairn_add_ok(r->xattr_ref, r->xattr_count, img->xattr_count))
		return cairn_image_corrupt(img, "inode %llu: xattrs past the xattr table", n);
	return type_ok(img, ino, r);
}

int cairn_image_stat(struct cairn_image *img, cairn_ino_t ino, struct cairn_stat *st)
{
	struct cairn_rinode r;
	int rc = cairn_image_inode_load(img, ino, &r);

	if (rc)
		return rc;
	memset(st, 0, sizeof(*st));
	st->ino = ino;
	st->mode = r.mode;
	st->nlink = r.nlink;
	st->uid = r.uid;
	st->gid = r.gid;
	st->size = r.size;
	st->blocks = r.alloc_blocks;
	if (S_ISCHR(r.mode) || S_ISBLK(r.mode))
		st->rdev = r.data_ref;
	st->atime = r.atime;
	st->mtime = r.mtime;
	st->ctime = r.ctime;
	return 0;
}

/* The order of the format: memcmp over the shorter length, then shorter first. */
static int name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

int cairn_image_lookup(struct cairn_image *img, cairn_ino_t dir, const char *name,
		       size_t name_len, cairn_ino_t *out)
{
	struct cairn_rinode r;
	struct cairn_rdirent e;
	uint64_t lo = 0, hi;
	int rc = cairn_image_dir_load(img, dir, &r);

	if (rc)
		return rc;
	if (name_len == 1 && name[0] == '.') {
		*out = dir;
		return 0;
	}
	if (name_len == 2 && name[0] == '.' && name[1] == '.') {
		*out = r.parent;
		return 0;
	}
	if (name_len == 0 || name_len > CAIRN_NAME_MAX)
		return name_len ? -ENAMETOOLONG : -ENOENT;
	hi = r.data_count;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		int c;

		rc = cairn_image_dirent_load(img, r.data_ref + mid, &e);
		if (rc)
			return rc;
		c = name_cmp(name, name_len, e.name, e.name_len);
		if (c == 0) {
			*out = e.ino;
			return 0;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -ENOENT;
}

ssize_t cairn_image_readlink(struct cairn_image *img, cairn_ino_t ino, char *buf, size_t len)
{
	struct cairn_rinode r;
	int rc = cairn_image_inode_load(img, ino, &r);

	if (rc)
		return rc;
	if (!S_ISLNK(r.mode))
		return -EINVAL;
	if (len < r.size)
		return -ERANGE;
	rc = cairn_image_blob_read(img, buf, (size_t)r.size, r.data_ref);
	if (rc)
		return rc;
	if (memchr(buf, '\0', (size_t)r.size))
		return cairn_image_corrupt(img, "inode %llu: symlink target contains NUL",
					   (unsigned long long)ino);
	return (ssize_t)r.size;
}

/* Replaces the text at *rest with target + "/" + rest in buf. */
static int splice_link(char *buf, size_t cap, const char *target, size_t tlen, const char *rest)
{
	size_t rlen = strlen(rest);
	size_t sep = rlen ? 1 : 0; /* no slash after the target when nothing follows */

	if (tlen + sep + rlen + 1 > cap)
		return -ENAMETOOLONG;
	memmove(buf + tlen + sep, rest, rlen + 1);
	memcpy(buf, target, tlen);
	if (sep)
		buf[tlen] = '/';
	return 0;
}

int cairn_image_resolve(struct cairn_image *img, const char *path, int follow, cairn_ino_t *out)
{
	size_t plen = strlen(path);
	char target[CAIRN_SYMLINK_MAX + 1];
	cairn_ino_t cur = img->root_ino;
	struct cairn_rinode r;
	unsigned links = 0;
	char *buf, *p;
	int rc = 0;

	if (plen >= RESOLVE_BUF_MAX / 2)
		return -ENAMETOOLONG;
	buf = malloc(RESOLVE_BUF_MAX);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, path, plen + 1);
	p = buf;
	for (;;) {
		const char *comp, *rest;
		size_t clen;
		cairn_ino_t child;
		int last, slash;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		comp = p;
		while (*p && *p != '/')
			p++;
		clen = (size_t)(p - comp);
		rest = p;
		while (*rest == '/')
			rest++;
		last = !*rest;
		slash = *p == '/';
		if (clen > CAIRN_NAME_MAX) {
			rc = -ENAMETOOLONG;
			break;
		}
		rc = cairn_image_lookup(img, cur, comp, clen, &child);
		if (rc)
			break;
		rc = cairn_image_inode_load(img, child, &r);
		if (rc)
			break;
		if (S_ISLNK(r.mode) && (!last || follow || slash)) {
			ssize_t tl;

			if (++links > MAX_SYMLINK_FOLLOWS) {
				rc = -ELOOP;
				break;
			}
			tl = cairn_image_readlink(img, child, target, sizeof(target));
			if (tl < 0) {
				rc = (int)tl;
				break;
			}
			/* p keeps a trailing slash, which must still demand a directory. */
			rc = splice_link(buf, RESOLVE_BUF_MAX, target, (size_t)tl, p);
			if (rc)
				break;
			if (target[0] == '/')
				cur = img->root_ino;
			p = buf;
			continue;
		}
		if (slash && last && !S_ISDIR(r.mode)) {
			rc = -ENOTDIR;
			break;
		}
		cur = child;
	}
	free(buf);
	if (rc == 0)
		*out = cur;
	return rc;
}
