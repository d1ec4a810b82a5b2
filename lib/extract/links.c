/* SPDX-License-Identifier: MIT */
/*
 * Does a symlink of the image, once extracted, lead outside the extraction
 * directory when followed? cairn_extract() refuses those (unless
 * unsafe_links), however the image spells them: absolute targets, ".." past
 * the top, and chains through other symlinks of the image ("b -> ." then
 * "c -> b/.." climbs one level more than the text of c says).
 *
 * The walk mirrors what the kernel will do on the extracted tree, which is the
 * image's tree: a stack holds the directory inodes from the extracted directory
 * (the base) to the current position; a name that is a symlink in the image is
 * expanded in place; ".." pops, and popping the base is an escape. A name the image does not hold (or
 * that is not a directory) cannot exist on disk, so from there on the walk is
 * lexical (slot 0). At most 40 links are followed, as the kernel does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cairn/format.h>
#include "extract/extract_int.h"

#define MAX_FOLLOWS 40
#define TEXT_MAX (64u * 1024)

struct lstack {
	cairn_ino_t *ino; /* ino[0] = base; 0 = a place the image does not hold */
	size_t depth, cap;
};

static int push(struct lstack *s, cairn_ino_t ino)
{
	if (s->depth + 1 == s->cap) {
		size_t cap = s->cap * 2;
		cairn_ino_t *n = realloc(s->ino, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->ino = n;
		s->cap = cap;
	}
	s->ino[++s->depth] = ino;
	return 0;
}

/* Replaces buf with target + "/" + rest (rest points into buf). */
static int splice(char *buf, const char *target, size_t tlen, const char *rest)
{
	size_t rlen = strlen(rest);

	if (tlen + 1 + rlen + 1 > TEXT_MAX)
		return -ENAMETOOLONG;
	memmove(buf + tlen + 1, rest, rlen + 1);
	memcpy(buf, target, tlen);
	buf[tlen] = '/';
	return 0;
}

/* One component at the top of the stack: returns 0, 1 when it is a symlink
 * whose text was spliced into buf (walk again from p = buf), or -errno. */
static int step(struct cairn_image *img, struct lstack *s, char *buf, const char *comp,
		size_t clen, const char *rest, unsigned *follows)
{
	cairn_ino_t dir = s->ino[s->depth], child;
	char target[CAIRN_SYMLINK_MAX + 1];
	struct cairn_stat st;
	ssize_t n;
	int rc;

	if (dir == 0)
		return push(s, 0);
	rc = cairn_image_lookup(img, dir, comp, clen, &child);
	if (rc == -ENOENT || rc == -ENAMETOOLONG)
		return push(s, 0);
	if (rc)
		return rc;
	rc = cairn_image_stat(img, child, &st);
	if (rc)
		return rc;
	if (S_ISDIR(st.mode))
		return push(s, child);
	if (!S_ISLNK(st.mode))
		return push(s, 0);
	if (++*follows > MAX_FOLLOWS)
		return -ELOOP;
	n = cairn_image_readlink(img, child, target, CAIRN_SYMLINK_MAX);
	if (n < 0)
		return (int)n;
	if (n == 0 || target[0] == '/')
		return -EXDEV;
	rc = splice(buf, target, (size_t)n, rest);
	return rc ? rc : 1;
}

int ex_link_escapes(struct cairn_image *img, cairn_ino_t base, const char *rel,
		    const char *target, size_t tlen)
{
	struct lstack s = { .cap = 64 };
	unsigned follows = 0;
	char *buf = NULL, *p;
	int rc = 0;

	if (tlen == 0 || target[0] == '/')
		return -EXDEV;
	if (tlen >= TEXT_MAX / 2 || strlen(rel) >= TEXT_MAX / 2)
		return -ENAMETOOLONG;
	s.ino = malloc(s.cap * sizeof(*s.ino));
	buf = malloc(TEXT_MAX);
	if (!s.ino || !buf) {
		rc = -ENOMEM;
		goto out;
	}
	s.ino[0] = base;
	/* The link's own directory: rel names directories extract created, from
	 * the base, one real directory per component (no symlinks). */
	memcpy(buf, rel, strlen(rel) + 1);
	for (p = buf; *p && rc >= 0;) {
		char *comp = p;
		size_t clen = strcspn(p, "/");

		p += clen;
		if (*p)
			*p++ = '\0';
		if (clen)
			rc = step(img, &s, buf, comp, clen, p, &follows);
		if (rc > 0 || s.ino[s.depth] == 0)
			rc = -EINVAL; /* not a directory path of the image */
	}
	if (rc < 0)
		goto out;
	memcpy(buf, target, tlen);
	buf[tlen] = '\0';
	for (p = buf; *p;) {
		char *comp = p;
		size_t clen = strcspn(p, "/");

		p += clen;
		if (*p)
			*p++ = '\0';
		if (clen == 0 || (clen == 1 && comp[0] == '.'))
			continue;
		if (clen == 2 && comp[0] == '.' && comp[1] == '.') {
			if (s.depth == 0) {
				rc = -EXDEV;
				break;
			}
			s.depth--;
			continue;
		}
		rc = step(img, &s, buf, comp, clen, p, &follows);
		if (rc < 0)
			break;
		if (rc > 0) {
			rc = 0;
			p = buf;
		}
	}
out:
	free(s.ino);
	free(buf);
	return rc;
}
