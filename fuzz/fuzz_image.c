/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target over the image reader: the input is an image held in a mem
 * bdev (no copy, no temporary file) under a small segment cache. It is opened,
 * then every reachable path is walked: readdir (each directory twice: whole, and
 * resumed from a cookie), stat, lookup of every name, resolve of every full path
 * (following symlinks), readlink, bounded reads of every file at a few offsets,
 * SEEK_DATA/SEEK_HOLE, the file's device extent, listxattr and getxattr of every
 * name, then a full fsck with data hashes. Errors are the expected outcome for
 * most inputs; a crash, leak, hang, sanitizer report or a large allocation
 * (libFuzzer's -malloc_limit_mb) is a bug.
 *
 * Caps keep one input cheap whatever it claims: the walk stops after
 * MAX_ENTRIES names or MAX_DEPTH levels, and reads at most READ_MAX bytes of
 * a file. The reader must itself refuse what the image cannot justify; these
 * caps only bound the fuzzer's time, never the reader's memory.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cairn/cairn.h>
#include "fixup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_DEPTH   12
#define MAX_ENTRIES 512
#define MAX_PER_DIR 128
#define READ_MAX    (64u * 1024)
#define PATH_CAP    4096

struct walk {
	struct cairn_image *img;
	unsigned entries;
	char *buf;          /* READ_MAX bytes */
	char path[PATH_CAP];
};

struct ent {
	char name[256];
	size_t len;
	cairn_ino_t ino;
	unsigned dtype;
	uint64_t next;
};

struct ents {
	struct ent e[MAX_PER_DIR];
	size_t n;
	uint64_t last_cookie;
};

/* The reader promises names of 1..255 bytes without '/' or NUL: check it. */
static int collect(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		   uint64_t next)
{
	struct ents *l = ctx;

	if (len == 0 || len > 255 || memchr(name, '/', len) || memchr(name, '\0', len))
		abort();
	if (l->last_cookie && next <= l->last_cookie)
		abort(); /* cookies must grow, or a resumed readdir could loop */
	l->last_cookie = next;
	if (l->n == MAX_PER_DIR)
		return 1;
	memcpy(l->e[l->n].name, name, len);
	l->e[l->n].name[len] = '\0';
	l->e[l->n].len = len;
	l->e[l->n].ino = ino;
	l->e[l->n].dtype = dtype;
	l->e[l->n].next = next;
	l->n++;
	return 0;
}

static int count_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		    uint64_t next)
{
	unsigned *n = ctx;

	return ++*n > MAX_PER_DIR;
}

static void check_xattrs(struct walk *w, cairn_ino_t ino)
{
	ssize_t len = cairn_image_listxattr(w->img, ino, NULL, 0);
	char *names;

	if (len <= 0 || len > 256 * 1024)
		return;
	names = malloc((size_t)len);
	if (!names)
		return;
	len = cairn_image_listxattr(w->img, ino, names, (size_t)len);
	for (ssize_t i = 0; len > 0 && i < len;) {
		const char *n = names + i;
		size_t nl = strnlen(n, (size_t)(len - i));
		ssize_t v;

		if (nl == (size_t)(len - i))
			abort(); /* the list must be NUL-terminated names */
		v = cairn_image_getxattr(w->img, ino, n, NULL, 0);
		if (v > 0 && (size_t)v <= READ_MAX) {
			(void)cairn_image_getxattr(w->img, ino, n, w->buf, (size_t)v);
			if (v > 1)
				(void)cairn_image_getxattr(w->img, ino, n, w->buf, (size_t)v - 1);
		}
		i += (ssize_t)nl + 1;
	}
	if (len > 1)
		(void)cairn_image_listxattr(w->img, ino, names, (size_t)len - 1);
	free(names);
	(void)cairn_image_getxattr(w->img, ino, "user.none", w->buf, READ_MAX);
}

static void check_file(struct walk *w, cairn_ino_t ino, const struct cairn_stat *st)
{
	uint64_t lo, hi, size = st->size;
	uint64_t offs[4] = { 0, size / 2, size > 4096 ? size - 4096 : 0, size };
	ssize_t n;

	for (int i = 0; i < 4; i++) {
		n = cairn_image_read(w->img, ino, w->buf, i == 0 ? READ_MAX : 4096, offs[i]);
		if (n > (ssize_t)READ_MAX)
			abort();
		if (n >= 0 && offs[i] < size && (uint64_t)n > size - offs[i])
			abort(); /* read past the end of file */
	}
	(void)cairn_image_read(w->img, ino, w->buf, 7, UINT64_MAX - 3);
	for (uint64_t off = 0; off < size && off < (1u << 20); off += 65536) {
		int64_t d = cairn_image_lseek(w->img, ino, off, SEEK_DATA);
		int64_t h = cairn_image_lseek(w->img, ino, off, SEEK_HOLE);

		if (d >= 0 && ((uint64_t)d < off || (uint64_t)d >= size))
			abort();
		if (h >= 0 && ((uint64_t)h < off || (uint64_t)h > size))
			abort();
	}
	(void)cairn_image_file_extent(w->img, ino, &lo, &hi);
}

static void check_link(struct walk *w, cairn_ino_t ino)
{
	char target[4096];
	cairn_ino_t got;
	ssize_t n = cairn_image_readlink(w->img, ino, target, sizeof(target));

	if (n > (ssize_t)sizeof(target))
		abort();
	if (n > 0 && memchr(target, '\0', (size_t)n))
		abort();
	(void)cairn_image_readlink(w->img, ino, target, 3);
	(void)cairn_image_resolve(w->img, w->path, 1, &got);
}

static void walk_dir(struct walk *w, cairn_ino_t dir, size_t plen, int depth);

static void visit(struct walk *w, cairn_ino_t dir, const struct ent *e, size_t plen, int depth)
{
	struct cairn_stat st;
	cairn_ino_t got;
	size_t nlen = plen;

	if (plen + 1 + e->len < PATH_CAP) {
		w->path[plen] = '/';
		memcpy(w->path + plen + 1, e->name, e->len + 1);
		nlen = plen + 1 + e->len;
	}
	(void)cairn_image_lookup(w->img, dir, e->name, e->len, &got);
	(void)cairn_image_resolve(w->img, w->path, 0, &got);
	if (cairn_image_stat(w->img, e->ino, &st) == 0) {
		if (st.ino != e->ino)
			abort();
		if (S_ISREG(st.mode))
			check_file(w, e->ino, &st);
		else if (S_ISLNK(st.mode))
			check_link(w, e->ino);
		check_xattrs(w, e->ino);
		if (S_ISDIR(st.mode) && depth < MAX_DEPTH)
			walk_dir(w, e->ino, nlen, depth + 1);
	}
	w->path[plen] = '\0';
}

static void walk_dir(struct walk *w, cairn_ino_t dir, size_t plen, int depth)
{
	struct ents *l = calloc(1, sizeof(*l));
	unsigned count = 0;

	if (!l)
		return;
	if (cairn_image_readdir(w->img, dir, 0, collect, l) == 0 && l->n > 3) {
		/* Resume from the middle cookie, as a FUSE readdir does. */
		(void)cairn_image_readdir(w->img, dir, l->e[l->n / 2].next, count_cb, &count);
	}
	(void)cairn_image_readdir(w->img, dir, UINT64_MAX, count_cb, &count);
	for (size_t i = 0; i < l->n && w->entries < MAX_ENTRIES; i++) {
		const struct ent *e = &l->e[i];

		if ((e->len == 1 && e->name[0] == '.') ||
		    (e->len == 2 && e->name[0] == '.' && e->name[1] == '.'))
			continue;
		w->entries++;
		visit(w, dir, e, plen, depth);
	}
	free(l);
}

static void report(void *ctx, const char *msg)
{
	unsigned *n = ctx;

	if (!msg)
		abort();
	++*n;
}

/* Opens data through mem -> cache -> image; NULL when the image is refused. */
static struct cairn_image *open_mem(const uint8_t *data, size_t size)
{
	struct cairn_cache_config cc = {
		.segment_size = 4096, .budget_bytes = 256u << 10, .max_io = 64u << 10,
		.readahead_max = 64u << 10, .threads = 1,
	};
	struct cairn_bdev *dev = NULL;
	struct cairn_cache *cache = NULL;
	struct cairn_image *img = NULL;

	if (cairn_bdev_mem_new(data, size, 0, &dev) < 0)
		return NULL;
	if (cairn_cache_new(dev, &cc, &cache) < 0) {
		cairn_bdev_close(dev);
		return NULL;
	}
	if (cairn_image_open(cache, NULL, 0, &img) < 0) {
		cairn_cache_free(cache);
		return NULL;
	}
	return img;
}

static void exercise(struct cairn_image *img)
{
	struct cairn_image_info info;
	struct cairn_stat st;
	struct walk *w;
	cairn_ino_t got;
	unsigned problems = 0;

	w = calloc(1, sizeof(*w));
	if (w)
		w->buf = malloc(READ_MAX);
	if (w && w->buf) {
		w->img = img;
		cairn_image_get_info(img, &info);
		(void)cairn_image_stat(img, cairn_image_root(img), &st);
		check_xattrs(w, cairn_image_root(img));
		walk_dir(w, cairn_image_root(img), 0, 0);
		/* Inodes no directory names. */
		for (cairn_ino_t i = 0; i < 64 && i <= info.inode_count; i++)
			(void)cairn_image_stat(img, i, &st);
		(void)cairn_image_stat(img, UINT64_MAX, &st);
		(void)cairn_image_resolve(img, "/", 1, &got);
		(void)cairn_image_resolve(img, "../../..//./x/", 1, &got);
		cairn_image_prefetch_hot(img);
		cairn_cache_drain(cairn_image_cache(img));
		(void)cairn_image_fsck(img, CAIRN_FSCK_DATA, report, &problems);
	}
	if (w)
		free(w->buf);
	free(w);
}

/* The digest paths (include/cairn/verify.h): the whole-image scan, and the
 * verify device's open and reads, over bytes that must never crash them. */
static void exercise_verify(const uint8_t *data, size_t size)
{
	static uint8_t buf[3 * 4096];
	struct cairn_bdev *mem, *v;
	uint8_t root[CAIRN_DIGEST_LEN];

	if (cairn_bdev_mem_new(data, size, 0, &mem))
		return;
	(void)cairn_verify_scan(mem, root, NULL, NULL);
	if (cairn_bdev_verify_new(mem, NULL, NULL, 0, &v)) {
		cairn_bdev_close(mem);
		return;
	}
	for (uint64_t off = 0; off < cairn_bdev_size(v) && off < (1u << 20); off += 5000)
		(void)cairn_bdev_read(v, buf, sizeof(buf), off);
	cairn_bdev_close(v);
}

/*
 * Two passes. The input as it is goes through open and fsck (the checksum
 * paths). A copy with every checksum recomputed (fixup.h) goes through the
 * whole walk: without it nearly every mutation would stop at a checksum
 * mismatch and the structure checks behind it would never be reached.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);
	struct cairn_image *img;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	cairn_fixup_checksums(copy, size);
	if (size && memcmp(copy, data, size)) {
		img = open_mem(data, size);
		if (img) {
			(void)cairn_image_fsck(img, 0, NULL, NULL);
			cairn_image_close(img);
		}
	}
	img = open_mem(copy, size);
	if (img) {
		exercise(img);
		cairn_image_close(img);
	}
	exercise_verify(copy, size);
	free(copy);
	return 0;
}
