/* SPDX-License-Identifier: MIT */
/*
 * Profiles: the ranges a workload read (a trace of -o trace=), resolved against
 * this image, prefetched in trace order and pushed per file (include/cairn/image.h).
 *
 * Each named path is resolved once (a small hash of paths). A file keeps its
 * pieces in the order first read and, beside them, the union of its pieces as
 * sorted intervals, so a later record adds only bytes not yet in the profile: a
 * range keeps its first place, whatever order traces are joined in. The global
 * sequence of pieces is the prefetch order and the order a saved profile is
 * written in. `pos` numbers the profile's bytes in that order, so a push queue
 * can order the ranges of all files the way the workload first read them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cairn/mkfs.h>
#include "image_int.h"

struct ivl {
	uint64_t lo, hi;
};

struct piece {
	uint64_t off, len, pos;
};

struct prof_file {
	char *path;                /* NUL-terminated, as traced */
	cairn_ino_t ino;           /* 0: not a regular file of this image */
	struct cairn_rinode r;
	struct piece *p;           /* in the order first read */
	size_t n, cap;
	struct ivl *cov;           /* the union of p, sorted, merged */
	size_t ncov, capcov;
};

struct ino_idx;

struct seq_ent {
	uint32_t file, piece;
};

struct cairn_profile {
	struct prof_file *files;
	size_t nfiles, capfiles;
	uint32_t *hash;            /* path -> file index + 1, open addressing */
	uint32_t *ihash;           /* inode -> file index + 1, the same size */
	size_t hmask;
	struct ino_idx *by_ino;    /* files sorted by inode, rebuilt at each load */
	struct seq_ent *seq;
	size_t nseq, capseq;
	uint64_t bytes;
};

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t ncap;
	void *nv;

	if (n < *cap)
		return 0;
	ncap = *cap ? 2 * *cap : 16;
	nv = realloc(*v, ncap * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

static size_t hash_path(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	while (n--)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return (size_t)(h ^ (h >> 32));
}

static size_t hash_ino(cairn_ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h ^ (h >> 29));
}

static void ino_insert(uint32_t *ih, size_t mask, cairn_ino_t ino, size_t f)
{
	size_t i = hash_ino(ino) & mask;

	while (ih[i])
		i = (i + 1) & mask;
	ih[i] = (uint32_t)f + 1;
}

/* The file of the profile that is inode ino (under any name), or NULL. */
static struct prof_file *ino_find(const struct cairn_profile *p, cairn_ino_t ino)
{
	for (size_t i = hash_ino(ino) & p->hmask; p->ihash[i]; i = (i + 1) & p->hmask)
		if (p->files[p->ihash[i] - 1].ino == ino)
			return &p->files[p->ihash[i] - 1];
	return NULL;
}

static int hash_grow(struct cairn_profile *p)
{
	size_t nmask = p->hmask ? 2 * p->hmask + 1 : 255;
	uint32_t *h = calloc(nmask + 1, sizeof(*h)), *ih = calloc(nmask + 1, sizeof(*ih));

	if (!h || !ih) {
		free(h);
		free(ih);
		return -ENOMEM;
	}
	for (size_t f = 0; f < p->nfiles; f++) {
		const char *s = p->files[f].path;
		size_t i = hash_path(s, strlen(s)) & nmask;

		while (h[i])
			i = (i + 1) & nmask;
		h[i] = (uint32_t)f + 1;
		if (p->files[f].ino)
			ino_insert(ih, nmask, p->files[f].ino, f);
	}
	free(p->hash);
	free(p->ihash);
	p->hash = h;
	p->ihash = ih;
	p->hmask = nmask;
	return 0;
}

/* The file a path names, resolved once; NULL on ENOMEM or when full. Another
 * name of a file already in the profile ("big" or "/./big" beside "/big", a
 * hard link) is that file, so its bytes are in the profile once and its ranges
 * come in one order; such a name is resolved at each of its records. */
static struct prof_file *file_of(struct cairn_image *img, struct cairn_profile *p,
				 const char *path, size_t len)
{
	struct prof_file *f, *same;
	struct cairn_rinode r;
	cairn_ino_t ino = 0;
	char *name;
	size_t i;

	if (2 * (p->nfiles + 1) > p->hmask + 1 && hash_grow(p))
		return NULL;
	for (i = hash_path(path, len) & p->hmask; p->hash[i]; i = (i + 1) & p->hmask) {
		f = &p->files[p->hash[i] - 1];
		if (!strncmp(f->path, path, len) && !f->path[len])
			return f;
	}
	name = strndup(path, len);
	if (!name)
		return NULL;
	/* Anything that does not resolve to a regular file is stale: skipped. */
	if (len >= PATH_MAX || cairn_image_resolve(img, name, 0, &ino) ||
	    cairn_image_inode_load(img, ino, &r) || !S_ISREG(r.mode))
		ino = 0;
	if (ino && (same = ino_find(p, ino))) {
		free(name);
		return same;
	}
	if (p->nfiles >= CAIRN_PROFILE_MAX_RANGES ||
	    grow((void **)&p->files, &p->capfiles, p->nfiles, sizeof(*p->files))) {
		free(name);
		return NULL;
	}
	f = &p->files[p->nfiles];
	memset(f, 0, sizeof(*f));
	f->path = name;
	if (ino) {
		f->ino = ino;
		f->r = r;
		ino_insert(p->ihash, p->hmask, ino, p->nfiles);
	}
	p->hash[i] = (uint32_t)p->nfiles + 1;
	p->nfiles++;
	return f;
}

static int add_piece(struct cairn_profile *p, struct prof_file *f, uint64_t lo, uint64_t hi)
{
	struct seq_ent *last = p->nseq ? &p->seq[p->nseq - 1] : NULL;

	/* A trace gives a file read in order as many lines: one piece. */
	if (last && last->file == (uint32_t)(f - p->files) && last->piece == f->n - 1 &&
	    f->p[f->n - 1].off + f->p[f->n - 1].len == lo) {
		f->p[f->n - 1].len += hi - lo;
		p->bytes += hi - lo;
		return 0;
	}
	if (grow((void **)&f->p, &f->cap, f->n, sizeof(*f->p)) ||
	    grow((void **)&p->seq, &p->capseq, p->nseq, sizeof(*p->seq)))
		return -ENOMEM;
	f->p[f->n] = (struct piece){ lo, hi - lo, p->bytes };
	p->seq[p->nseq++] = (struct seq_ent){ (uint32_t)(f - p->files), (uint32_t)f->n };
	f->n++;
	p->bytes += hi - lo;
	return 0;
}

/* The first of f's intervals that ends at or after lo (binary search). */
static size_t first_reaching(const struct prof_file *f, uint64_t lo)
{
	size_t a = 0, b = f->ncov;

	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (f->cov[mid].hi < lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

/* Joins [lo, hi) into f's sorted, merged intervals. */
static int cover(struct prof_file *f, uint64_t lo, uint64_t hi)
{
	size_t j = first_reaching(f, lo), k;

	for (k = j; k < f->ncov && f->cov[k].lo <= hi; k++) {
		lo = f->cov[k].lo < lo ? f->cov[k].lo : lo;
		hi = f->cov[k].hi > hi ? f->cov[k].hi : hi;
	}
	if (k == j) {
		if (grow((void **)&f->cov, &f->capcov, f->ncov, sizeof(*f->cov)))
			return -ENOMEM;
		memmove(f->cov + j + 1, f->cov + j, (f->ncov - j) * sizeof(*f->cov));
		f->ncov++;
	} else if (k > j + 1) {
		memmove(f->cov + j + 1, f->cov + k, (f->ncov - k) * sizeof(*f->cov));
		f->ncov -= k - j - 1;
	}
	f->cov[j] = (struct ivl){ lo, hi };
	return 0;
}

static int profile_full(const struct cairn_profile *p)
{
	return p->nseq >= CAIRN_PROFILE_MAX_RANGES || p->bytes >= CAIRN_PROFILE_MAX_BYTES;
}

/* Adds the bytes of [lo, hi) not yet in f, as pieces in file order; 1 when the
 * bounds cut it short. */
static int add_range(struct cairn_profile *p, struct prof_file *f, uint64_t lo, uint64_t hi)
{
	uint64_t cur = lo;
	size_t i = first_reaching(f, lo + 1);
	int cut = 0, rc;

	while (cur < hi) {
		uint64_t end;

		if (i < f->ncov && f->cov[i].lo <= cur) { /* already there: skip it */
			cur = f->cov[i].hi < hi ? f->cov[i].hi : hi;
			i++;
			continue;
		}
		if (profile_full(p)) {
			cut = 1;
			break;
		}
		end = i < f->ncov && f->cov[i].lo < hi ? f->cov[i].lo : hi;
		if (end - cur > CAIRN_PROFILE_MAX_BYTES - p->bytes)
			end = cur + (CAIRN_PROFILE_MAX_BYTES - p->bytes);
		rc = add_piece(p, f, cur, end);
		if (rc)
			return rc;
		cur = end;
	}
	rc = cur > lo ? cover(f, lo, cur) : 0;
	return rc ? rc : cut;
}

struct load_ctx {
	struct cairn_image *img;
	struct cairn_profile *p;
	struct cairn_profile_stats st;
};

static int load_rec(void *ctx, const struct cairn_order_record *t)
{
	struct load_ctx *c = ctx;
	struct prof_file *f;
	uint64_t lo = t->offset, hi;
	int rc;

	c->st.records++;
	/* No file's path holds a NUL (a trace writes none; \000 or a raw NUL in a
	 * hand-made one). Kept, it would name the file its first part names, and
	 * the path table compares paths as strings of path_len bytes. */
	if (memchr(t->path, '\0', t->path_len)) {
		c->st.missing++;
		return 0;
	}
	f = file_of(c->img, c->p, t->path, t->path_len);
	if (!f) {
		if (c->p->nfiles >= CAIRN_PROFILE_MAX_RANGES) {
			c->st.dropped++;
			return 0;
		}
		return -ENOMEM;
	}
	if (!f->ino) {
		c->st.missing++;
		return 0;
	}
	if (!t->has_range)
		lo = 0;
	if (lo >= f->r.size || (t->has_range && !t->length)) {
		c->st.past_eof++;
		return 0;
	}
	hi = !t->has_range || t->length > f->r.size - lo ? f->r.size : lo + t->length;
	rc = add_range(c->p, f, lo, hi);
	if (rc > 0)
		c->st.dropped++;
	return rc < 0 ? rc : 0;
}

void cairn_profile_free(struct cairn_profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nfiles; i++) {
		free(p->files[i].path);
		free(p->files[i].p);
		free(p->files[i].cov);
	}
	free(p->files);
	free(p->hash);
	free(p->ihash);
	free(p->by_ino);
	free(p->seq);
	free(p);
}

uint64_t cairn_profile_bytes(const struct cairn_profile *p) { return p->bytes; }

struct ino_idx {
	cairn_ino_t ino;
	uint32_t file;
};

static int by_ino(const void *a, const void *b)
{
	const struct ino_idx *x = a, *y = b;

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->file < y->file ? -1 : x->file > y->file;
}

static int index_by_ino(struct cairn_profile *p)
{
	free(p->by_ino);
	p->by_ino = malloc((p->nfiles ? p->nfiles : 1) * sizeof(*p->by_ino));
	if (!p->by_ino)
		return -ENOMEM;
	for (size_t i = 0; i < p->nfiles; i++)
		p->by_ino[i] = (struct ino_idx){ p->files[i].ino, (uint32_t)i };
	qsort(p->by_ino, p->nfiles, sizeof(*p->by_ino), by_ino);
	return 0;
}

/* Undoes what a failed load added (pieces past nseq, and the growth of the piece
 * that was last), so the image keeps the profile it had. */
static void truncate_to(struct cairn_profile *p, size_t nseq, uint64_t last_len, uint64_t bytes)
{
	while (p->nseq > nseq) {
		struct seq_ent e = p->seq[--p->nseq];

		p->files[e.file].n = e.piece;
	}
	if (nseq)
		p->files[p->seq[nseq - 1].file].p[p->seq[nseq - 1].piece].len = last_len;
	p->bytes = bytes;
	/* The unions are rebuilt from the pieces that stay: each is an earlier state,
	 * so they fit where they were. */
	for (size_t i = 0; i < p->nfiles; i++) {
		struct prof_file *f = &p->files[i];

		f->ncov = 0;
		for (size_t k = 0; k < f->n; k++)
			(void)cover(f, f->p[k].off, f->p[k].off + f->p[k].len);
	}
}

/* Resolving a profile's paths reads the directories and inodes they cross, one
 * dependent read after another: on a remote image, a round trip each before the
 * mount can answer. Metadata sits together at the front, so it is asked for at
 * once first, in large requests the cache's workers send in parallel; lookups
 * then wait for fetches already in flight. Up to PROFILE_META bytes: past that
 * (hundreds of thousands of files) lookups read the rest as they need it. Costs
 * nothing where the metadata is cached already (mount checks it whole up to
 * 4 MiB). */
#define PROFILE_META (4u << 20)

static void prefetch_meta(struct cairn_image *img)
{
	cairn_cache_prefetch(img->cache, img->meta_off,
			     img->meta_len < PROFILE_META ? img->meta_len : PROFILE_META);
}

static int load_text(struct cairn_image *img, const char *text, size_t len,
		     struct cairn_profile_stats *st)
{
	struct load_ctx c = { img, img->profile, { 0 } };
	uint64_t bytes, last_len;
	size_t nseq;
	int rc;

	if (!c.p) {
		c.p = calloc(1, sizeof(*c.p));
		if (!c.p)
			return -ENOMEM;
	}
	nseq = c.p->nseq;
	bytes = c.p->bytes;
	/* Readers look files up by inode from many threads: the index is built
	 * here, while the profile is still the loader's alone. */
	last_len = nseq ? c.p->files[c.p->seq[nseq - 1].file].p[c.p->seq[nseq - 1].piece].len : 0;
	if (len)
		prefetch_meta(img);
	rc = cairn_order_parse(text, len, load_rec, &c);
	if (!rc)
		rc = index_by_ino(c.p);
	if (rc) {
		truncate_to(c.p, nseq, last_len, bytes);
		if (!img->profile)
			cairn_profile_free(c.p);
		return rc;
	}
	img->profile = c.p;
	c.st.ranges = c.p->nseq;
	c.st.bytes = c.p->bytes;
	if (st)
		*st = c.st;
	return 0;
}

int cairn_image_profile_load(struct cairn_image *img, const char *text, size_t len,
			     struct cairn_profile_stats *st)
{
	return load_text(img, text, len, st);
}

/* The whole of a text file, NUL-terminated, into *text (malloc'd). */
static int read_text(const char *path, char **text, size_t *len)
{
	/* O_NONBLOCK: a FIFO (refused below) would block the open for a writer. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	size_t got = 0;
	int rc = 0;

	*text = NULL;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		rc = -errno;
	else if (!S_ISREG(st.st_mode))
		rc = -EINVAL;
	else if (st.st_size > CAIRN_PROFILE_MAX_TEXT)
		rc = -EFBIG;
	else if (!(*text = malloc((size_t)st.st_size + 1)))
		rc = -ENOMEM;
	while (!rc && got < (size_t)st.st_size) {
		ssize_t r = read(fd, *text + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = r ? -errno : 0;
			break; /* shrank meanwhile: what was there */
		}
		got += (size_t)r;
	}
	close(fd);
	if (rc) {
		free(*text);
		*text = NULL;
	} else {
		(*text)[got] = 0;
		*len = got;
	}
	return rc;
}

int cairn_image_profile_load_file(struct cairn_image *img, const char *path,
				  struct cairn_profile_stats *st)
{
	char *text;
	size_t len = 0;
	int rc = read_text(path, &text, &len);

	if (rc)
		return rc;
	rc = load_text(img, text, len, st);
	free(text);
	return rc;
}

/* ---- prefetch ---- */

struct dev_list {
	struct cairn_range *v;
	size_t n, cap;
};

static int add_dev(void *ctx, uint64_t file_off, uint64_t disk_off, uint64_t len)
{
	struct dev_list *l = ctx;

	(void)file_off;
	if (grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v)))
		return -ENOMEM;
	l->v[l->n++] = (struct cairn_range){ disk_off, len };
	return 0;
}

/*
 * Holes the prefetch fills. A run reads pages next to the traced run's (other
 * input, another JIT decision), each a demand miss once the vectors are in. A
 * hole between two ranges of one file that costs at most FILL_SEGS whole
 * segments (of at least FILL_UNIT_MIN bytes) of its own is fetched with them,
 * ranked as the later-needed of the two: a shipped profile's remote Java Hello
 * took 14 requests against 17, for 2 % more bytes (docs/bench/remote13.md).
 * Only within one file: between files a hole is other files' data, which a scattered
 * profile (tests/mount/remote_vecread.sh) must not fetch. The holes go to the
 * cache's list beside the pieces, not into the profile: its pieces are what
 * the push stores and a saved profile writes, and its intervals are what the
 * use-once drop keeps; a hole's bytes are no range's, so once read they go.
 */
#define FILL_SEGS 2
/* The unit FILL_SEGS counts in: the cache's segment, but never less than this.
 * The pages a run reads beside the traced ones come in the kernel's read-ahead
 * windows, whatever the segment: with 32 KiB segments (an image built with
 * --granule 32K, whose profile then fetches a third less for Python's scattered
 * small files) holes of 2 segments left Java Hello's shipped profile over http
 * with 31-43 requests against 13-14 at 128 KiB; counted in 128 KiB, 18-21
 * (docs/bench/profile.md, 3 December 2026). */
#define FILL_UNIT_MIN (128u << 10)

struct hole {
	uint64_t pos;         /* of the later-needed neighbour: its place in the queue */
	uint64_t disk_off, len;
};

struct hole_list {
	struct hole *v;
	size_t n, cap;
};

static int by_pos(const void *a, const void *b)
{
	const struct hole *x = a, *y = b;

	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int by_off(const void *a, const void *b)
{
	const struct piece *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* Whole segments of [d, d + len) not shared with the bytes either side of it. */
static uint64_t own_segments(uint64_t d, uint64_t len, uint64_t seg)
{
	uint64_t first = (d + seg - 1) / seg, end = (d + len) / seg;

	return end > first ? end - first : 0;
}

/* Adds the hole [lo, hi) of f when it maps to one device extent (a plain
 * file's bytes, contiguous with its neighbours) of at most FILL_SEGS segments
 * of its own. */
static int add_hole(struct cairn_image *img, struct prof_file *f, uint64_t lo, uint64_t hi,
		    uint64_t pos, uint64_t seg, struct hole_list *h)
{
	struct dev_list m = { NULL, 0, 0 };
	int rc = cairn_image_map(img, f->ino, &f->r, lo, hi - lo, add_dev, &m);

	if (!rc && m.n == 1 && m.v[0].len == hi - lo &&
	    own_segments(m.v[0].off, m.v[0].len, seg) <= FILL_SEGS) {
		rc = grow((void **)&h->v, &h->cap, h->n, sizeof(*h->v));
		if (!rc)
			h->v[h->n++] = (struct hole){ pos, m.v[0].off, m.v[0].len };
	}
	free(m.v);
	return rc;
}

/* The holes to fill between the pieces of f. */
static int file_holes(struct cairn_image *img, struct prof_file *f, uint64_t seg,
		      struct hole_list *h)
{
	struct piece *s;
	int rc = 0;

	if (!f->ino || f->n < 2)
		return 0;
	s = malloc(f->n * sizeof(*s));
	if (!s)
		return -ENOMEM;
	memcpy(s, f->p, f->n * sizeof(*s));
	qsort(s, f->n, sizeof(*s), by_off);
	for (size_t i = 1; i < f->n && rc != -ENOMEM; i++) {
		uint64_t lo = s[i - 1].off + s[i - 1].len, hi = s[i].off;
		uint64_t pos = s[i].pos > s[i - 1].pos ? s[i].pos : s[i - 1].pos;

		if (hi > lo && hi - lo <= (FILL_SEGS + 2) * seg)
			rc = add_hole(img, f, lo, hi, pos, seg, h);
	}
	free(s);
	return rc;
}

/* The holes of all files, sorted by the place they take in the queue. */
static int profile_holes(struct cairn_image *img, struct cairn_profile *p, struct hole_list *h)
{
	uint64_t unit = cairn_cache_segment_size(img->cache);
	int rc = 0;

	if (unit < FILL_UNIT_MIN)
		unit = FILL_UNIT_MIN;
	for (size_t i = 0; i < p->nfiles && rc != -ENOMEM; i++)
		rc = file_holes(img, &p->files[i], unit, h);
	if (h->n)
		qsort(h->v, h->n, sizeof(*h->v), by_pos);
	return rc == -ENOMEM ? rc : 0;
}

/* A profile the disk cache holds whole is still prefetched while it takes at
 * most a quarter of the cache's budget (16 MiB of the default 64): then the
 * cache's workers read it in parallel, ahead of a push that would read it
 * alone (Python start-up, 11 MiB: ~8 % faster so). A larger one is left to the
 * push, which reads it from the disk cache as it goes: prefetched, Java Hello's
 * 44 MiB kept the mount's two cores busy and the daemon at 54 MiB RSS, which
 * made the warm run 1.2x the local file (docs/bench/remote13.md). */
static int held_too_big(struct cairn_image *img, const struct dev_list *l)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < l->n; i++)
		sum += l->v[i].len;
	return sum > cairn_cache_budget(img->cache) / 4 && cairn_cache_held(img->cache, l->v, l->n);
}

/* Queues the profile's device ranges for prefetch; 0 when they are all held
 * below and too many to hold (held_too_big: nothing queued), else 1. */
int cairn_profile_prefetch(struct cairn_image *img, struct cairn_profile *p)
{
	struct dev_list l = { NULL, 0, 0 };
	struct hole_list h = { NULL, 0, 0 };
	size_t k = 0;
	int rc = profile_holes(img, p, &h), queued = 1;

	/* Prefetching is advice: a piece that cannot be mapped is read on demand. */
	for (size_t i = 0; i < p->nseq && rc != -ENOMEM; i++) {
		struct prof_file *f = &p->files[p->seq[i].file];
		const struct piece *x = &f->p[p->seq[i].piece];

		rc = cairn_image_map(img, f->ino, &f->r, x->off, x->len, add_dev, &l);
		for (; k < h.n && h.v[k].pos <= x->pos && rc != -ENOMEM; k++)
			rc = add_dev(&l, 0, h.v[k].disk_off, h.v[k].len);
	}
	if (l.n && held_too_big(img, &l))
		queued = 0;
	else if (l.n)
		cairn_cache_prefetch_ranges(img->cache, l.v, l.n);
	free(h.v);
	free(l.v);
	return queued;
}

/* ---- ranges per file ---- */

/* The first entry of ino in the index, or nfiles. */
static size_t find_ino(const struct cairn_profile *p, cairn_ino_t ino)
{
	size_t lo = 0, hi = p->nfiles;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->by_ino[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int cairn_profile_has(const struct cairn_profile *p, cairn_ino_t ino)
{
	size_t i;

	if (!ino || !p->by_ino)
		return 0;
	i = find_ino(p, ino);
	return i < p->nfiles && p->by_ino[i].ino == ino && p->files[p->by_ino[i].file].n;
}

int cairn_profile_ranges(struct cairn_profile *p, cairn_ino_t ino, cairn_range_cb fn, void *ctx)
{
	size_t lo;

	if (!ino || !p->by_ino)
		return 0;
	for (lo = find_ino(p, ino); lo < p->nfiles && p->by_ino[lo].ino == ino; lo++) {
		const struct prof_file *f = &p->files[p->by_ino[lo].file];

		for (size_t i = 0; i < f->n;) {
			uint64_t off = f->p[i].off, pos = f->p[i].pos, len = f->p[i].len;
			int rc;

			while (++i < f->n && f->p[i].off == off + len && f->p[i].pos == pos + len)
				len += f->p[i].len;
			rc = fn(ctx, off, pos, len);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* Calls fn for each piece of [off, off + len) of ino that no range of the
 * profile covers, in file offsets (pos 0). A file the profile names by several
 * paths gets none: its ranges are not one sorted list, and keeping a little
 * more is safe. */
int cairn_profile_gaps(const struct cairn_profile *p, cairn_ino_t ino, uint64_t off,
		       uint64_t len, cairn_range_cb fn, void *ctx)
{
	uint64_t end = off + len;
	const struct prof_file *f;
	size_t i;

	if (!ino || !p->by_ino || !len)
		return 0;
	i = find_ino(p, ino);
	if (i >= p->nfiles || p->by_ino[i].ino != ino ||
	    (i + 1 < p->nfiles && p->by_ino[i + 1].ino == ino))
		return 0;
	f = &p->files[p->by_ino[i].file];
	for (size_t k = first_reaching(f, off); k < f->ncov && off < end; k++) {
		int rc;

		if (f->cov[k].lo >= end)
			break;
		if (f->cov[k].lo > off && (rc = fn(ctx, off, 0, f->cov[k].lo - off)))
			return rc;
		if (f->cov[k].hi > off)
			off = f->cov[k].hi;
	}
	return off < end ? fn(ctx, off, 0, end - off) : 0;
}

/* ---- saving ---- */

static int write_all(FILE *f, const struct cairn_profile *p)
{
	for (size_t i = 0; i < p->nseq; i++) {
		const struct prof_file *pf = &p->files[p->seq[i].file];
		const struct piece *x = &pf->p[p->seq[i].piece];
		int rc = cairn_order_write_record(f, pf->path, x->off, x->len);

		if (rc)
			return rc;
	}
	return 0;
}

/* fsync of the directory holding path, so the rename itself is durable. */
static int sync_dir(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd, rc = 0;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path + 1), path) >=
		 (int)sizeof(dir))
		return -ENAMETOOLONG;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd))
		rc = -errno;
	close(fd);
	return rc;
}

int cairn_image_profile_save(struct cairn_image *img, const char *trace_path, const char *path,
			     struct cairn_profile_stats *st)
{
	struct cairn_profile empty = { 0 };
	char tmp[PATH_MAX];
	FILE *f;
	int fd, rc = 0;

	if (trace_path)
		rc = cairn_image_profile_load_file(img, trace_path, st);
	if (rc)
		return rc;
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	f = fchmod(fd, 0644) ? NULL : fdopen(fd, "w"); /* mkstemp makes it 0600 */
	if (!f) {
		rc = -errno;
		close(fd);
		unlink(tmp);
		return rc;
	}
	rc = write_all(f, img->profile ? img->profile : &empty);
	if (!rc && (fflush(f) || fsync(fd)))
		rc = -errno;
	if (fclose(f) && !rc)
		rc = -EIO;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc) {
		unlink(tmp);
		return rc;
	}
	return sync_dir(path);
}
