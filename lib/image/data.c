/* SPDX-License-Identifier: MIT */
/*
 * File data of the image reader: extents, read, lseek, the device ranges of a
 * file (map, extent) and the hot prefix's delivery and ranges.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "image_int.h"

int cairn_image_extent_load(struct cairn_image *img, uint64_t idx, const struct cairn_rinode *r,
			    struct cairn_disk_extent *x)
{
	struct cairn_disk_extent d;
	unsigned long long n = idx;
	int rc;

	rc = cairn_image_rec_read(img, "extent", img->extent_off, img->extent_count, idx, &d,
				  CAIRN_EXTENT_SIZE);
	if (rc)
		return rc;
	x->file_off = cairn_le64(d.file_off);
	x->disk_off = cairn_le64(d.disk_off);
	x->len = cairn_le64(d.len);
	if (x->len == 0 || !cairn_add_ok(x->file_off, x->len, r->size))
		return cairn_image_corrupt(img, "extent %llu: range past the file size", n);
	if (x->disk_off % CAIRN_BLOCK_SIZE || x->disk_off < img->data_off ||
	    !cairn_add_ok(x->disk_off, x->len, img->data_end))
		return cairn_image_corrupt(img, "extent %llu: outside the data region", n);
	return 0;
}

static int load_regular(struct cairn_image *img, cairn_ino_t ino, struct cairn_rinode *r)
{
	int rc = cairn_image_inode_load(img, ino, r);

	if (rc)
		return rc;
	if (S_ISDIR(r->mode))
		return -EISDIR;
	return S_ISREG(r->mode) ? 0 : -EINVAL;
}

/* Index of the first extent of r that ends after off (binary search); r->data_count
 * when none. Order is checked again as the caller walks forward. */
static int extent_find(struct cairn_image *img, const struct cairn_rinode *r, uint64_t off,
		       uint64_t *idx)
{
	struct cairn_disk_extent x;
	uint64_t lo = 0, hi = r->data_count;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		int rc = cairn_image_extent_load(img, r->data_ref + mid, r, &x);

		if (rc)
			return rc;
		if (x.file_off + x.len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	*idx = lo;
	return 0;
}

static ssize_t read_extents(struct cairn_image *img, cairn_ino_t ino, const struct cairn_rinode *r,
			    char *buf, size_t len, uint64_t off)
{
	struct cairn_disk_extent x;
	uint64_t pos = off, end = off + len, i, prev_end = 0;
	int rc = extent_find(img, r, off, &i);

	if (rc)
		return rc;
	for (; pos < end; i++) {
		uint64_t from, to;
		struct cairn_cache_hint hint;

		if (i >= r->data_count) {
			memset(buf + (pos - off), 0, (size_t)(end - pos));
			break;
		}
		rc = cairn_image_extent_load(img, r->data_ref + i, r, &x);
		if (rc)
			return rc;
		if (x.file_off < prev_end)
			return cairn_image_corrupt(img, "inode %llu: extents overlap or are unsorted",
						   (unsigned long long)ino);
		prev_end = x.file_off + x.len;
		if (x.file_off > pos) { /* a hole before this extent */
			uint64_t z = x.file_off < end ? x.file_off : end;

			memset(buf + (pos - off), 0, (size_t)(z - pos));
			pos = z;
			if (pos >= end)
				break;
		}
		if (prev_end <= pos)
			continue;
		from = pos;
		to = prev_end < end ? prev_end : end;
		hint.lo = x.disk_off;
		hint.hi = x.disk_off + x.len;
		rc = cairn_image_dev_read(img, buf + (from - off), (size_t)(to - from),
					  x.disk_off + (from - x.file_off), &hint);
		if (rc)
			return rc;
		pos = to;
	}
	return (ssize_t)len;
}

ssize_t cairn_image_read(struct cairn_image *img, cairn_ino_t ino, void *buf, size_t len,
			 uint64_t off)
{
	return cairn_image_read_flags(img, ino, buf, len, off, 0);
}

int cairn_image_stream_follows(struct cairn_image *img, cairn_ino_t ino, uint64_t off,
			       uint64_t len, int note)
{
	int seq = off == 0;

	pthread_mutex_lock(&img->stream_lock);
	for (unsigned i = 0; i < CAIRN_IMAGE_STREAMS && !seq; i++)
		seq = img->stream[i].ino == ino && img->stream[i].end == off;
	if (note) {
		img->stream[img->nstream % CAIRN_IMAGE_STREAMS].ino = ino;
		img->stream[img->nstream % CAIRN_IMAGE_STREAMS].end = off + len;
		img->nstream++;
	}
	pthread_mutex_unlock(&img->stream_lock);
	return seq;
}

int cairn_image_read_random(struct cairn_image *img, cairn_ino_t ino, uint64_t off, uint64_t len)
{
	uint64_t unit = img->chunk_size ? img->chunk_size : cairn_cache_segment_size(img->cache);

	return len < unit && !cairn_image_stream_follows(img, ino, off, len, 0);
}

/* A file stored in one piece on the device: bytes [off, off+len) through the
 * segment cache, or with CAIRN_READ_CACHED only from segments it holds (-EAGAIN
 * otherwise). A read of the program's own (not CAIRN_READ_ALONE) is noted as
 * the end of a stream of the file, for cairn_image_read_random(). */
static int read_plain(struct cairn_image *img, cairn_ino_t ino, const struct cairn_rinode *r,
		      void *buf, size_t len, uint64_t off, unsigned flags)
{
	struct cairn_cache_hint hint = { r->data_ref, r->data_ref + r->size };
	ssize_t n;

	if (!(flags & CAIRN_READ_ALONE))
		(void)cairn_image_stream_follows(img, ino, off, len, 1);
	if (!(flags & CAIRN_READ_CACHED))
		return cairn_image_dev_read(img, buf, len, r->data_ref + off, &hint);
	n = cairn_cache_read_cached(img->cache, buf, len, r->data_ref + off);
	return n < 0 ? (int)n : n == (ssize_t)len ? 0 : -EIO;
}

ssize_t cairn_image_read_flags(struct cairn_image *img, cairn_ino_t ino, void *buf, size_t len,
			       uint64_t off, unsigned flags)
{
	struct cairn_rinode r;
	int rc = load_regular(img, ino, &r);

	if (rc)
		return rc;
	if (off >= r.size || len == 0)
		return 0;
	if (len > r.size - off)
		len = (size_t)(r.size - off);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	if (r.flags & CAIRN_IF_INLINE)
		rc = cairn_image_blob_read(img, buf, len, r.data_ref + off);
	else if (r.flags & CAIRN_IF_CHUNKED)
		rc = cairn_image_read_chunked(img, ino, &r, buf, len, off, flags);
	else if (r.flags & CAIRN_IF_EXTENTS)
		return read_extents(img, ino, &r, buf, len, off);
	else
		rc = read_plain(img, ino, &r, buf, len, off, flags);
	return rc ? rc : (ssize_t)len;
}

/* An extent-mapped file's read that lies inside one extent, lent as a file
 * stored in one piece is. A read across extents or into a hole needs the
 * pieces put together (and zeros), so it is copied: in an ordered image those
 * are the few reads that straddle a hot range's end. */
static int read_extent_pinned(struct cairn_image *img, const struct cairn_rinode *r, size_t len,
			      uint64_t off, cairn_iov_fn fn, void *ctx)
{
	struct cairn_disk_extent x;
	struct cairn_cache_hint hint;
	uint64_t i;
	int rc = extent_find(img, r, off, &i);

	if (rc)
		return rc;
	if (i >= r->data_count)
		return CAIRN_CACHE_COPY;
	rc = cairn_image_extent_load(img, r->data_ref + i, r, &x);
	if (rc)
		return rc;
	if (x.file_off > off || off + len > x.file_off + x.len)
		return CAIRN_CACHE_COPY;
	hint = (struct cairn_cache_hint){ x.disk_off, x.disk_off + x.len };
	return cairn_cache_read_pinned(img->cache, len, x.disk_off + (off - x.file_off), &hint, fn,
				       ctx);
}

int cairn_image_read_pinned(struct cairn_image *img, cairn_ino_t ino, size_t len, uint64_t off,
			    cairn_iov_fn fn, void *ctx)
{
	struct cairn_cache_hint hint;
	struct cairn_rinode r;
	int rc = load_regular(img, ino, &r);

	if (rc)
		return rc;
	if (off >= r.size || len == 0 || (r.flags & CAIRN_IF_INLINE))
		return CAIRN_CACHE_COPY;
	if (len > r.size - off)
		len = (size_t)(r.size - off);
	if (r.flags & CAIRN_IF_CHUNKED)
		return cairn_image_read_chunked_pinned(img, ino, &r, len, off, fn, ctx);
	if (r.flags & CAIRN_IF_EXTENTS)
		return read_extent_pinned(img, &r, len, off, fn, ctx);
	hint = (struct cairn_cache_hint){ r.data_ref, r.data_ref + r.size };
	(void)cairn_image_stream_follows(img, ino, off, len, 1); /* as read_plain */
	return cairn_cache_read_pinned(img->cache, len, r.data_ref + off, &hint, fn, ctx);
}

int64_t cairn_image_lseek(struct cairn_image *img, cairn_ino_t ino, uint64_t off, int whence)
{
	struct cairn_disk_extent x;
	struct cairn_rinode r;
	uint64_t i, end;
	int rc = load_regular(img, ino, &r);

	if (rc)
		return rc;
	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (off >= r.size || r.size > INT64_MAX)
		return -ENXIO;
	if (r.flags & CAIRN_IF_CHUNKED)
		return cairn_image_lseek_chunked(img, &r, off, whence);
	if (!(r.flags & CAIRN_IF_EXTENTS))
		return whence == SEEK_DATA ? (int64_t)off : (int64_t)r.size;
	rc = extent_find(img, &r, off, &i);
	if (rc)
		return rc;
	if (i >= r.data_count)
		return whence == SEEK_DATA ? -ENXIO : (int64_t)off;
	rc = cairn_image_extent_load(img, r.data_ref + i, &r, &x);
	if (rc)
		return rc;
	if (whence == SEEK_DATA)
		return (int64_t)(x.file_off > off ? x.file_off : off);
	if (x.file_off > off)
		return (int64_t)off;
	/* Inside data: the hole starts where the run of touching extents ends. */
	end = x.file_off + x.len;
	while (++i < r.data_count) {
		rc = cairn_image_extent_load(img, r.data_ref + i, &r, &x);
		if (rc)
			return rc;
		if (x.file_off != end)
			break;
		end += x.len;
	}
	return (int64_t)end;
}

int cairn_image_file_extent(struct cairn_image *img, cairn_ino_t ino, uint64_t *lo, uint64_t *hi)
{
	struct cairn_rinode r;
	struct cairn_disk_extent a, b;
	int rc = load_regular(img, ino, &r);

	if (rc)
		return rc;
	*lo = *hi = 0;
	if (r.flags & CAIRN_IF_INLINE || r.size == 0)
		return 0;
	if (r.flags & CAIRN_IF_CHUNKED) {
		cairn_image_chunked_extent(img, &r, lo, hi);
		return 0;
	}
	if (!(r.flags & CAIRN_IF_EXTENTS)) {
		*lo = r.data_ref;
		*hi = r.data_ref + r.size;
		return 0;
	}
	if (r.data_count == 0)
		return 0;
	rc = cairn_image_extent_load(img, r.data_ref, &r, &a);
	if (!rc)
		rc = cairn_image_extent_load(img, r.data_ref + r.data_count - 1, &r, &b);
	if (rc)
		return rc;
	*lo = a.disk_off < b.disk_off ? a.disk_off : b.disk_off;
	*hi = a.disk_off + a.len > b.disk_off + b.len ? a.disk_off + a.len : b.disk_off + b.len;
	return 0;
}

struct map_chunks {
	uint64_t off, end;
	cairn_range_cb fn;
	void *ctx;
};

static int map_chunk(void *ctx, uint64_t file_off, uint64_t len, uint64_t dev_off,
		     uint64_t dev_len)
{
	struct map_chunks *m = ctx;

	if (file_off >= m->end || file_off + len <= m->off)
		return 0;
	return m->fn(m->ctx, file_off, dev_off, dev_len);
}

int cairn_image_map(struct cairn_image *img, cairn_ino_t ino, const struct cairn_rinode *r,
		    uint64_t off, uint64_t len, cairn_range_cb fn, void *ctx)
{
	struct cairn_disk_extent x;
	uint64_t end, i, prev_end = 0;
	int rc;

	if (r->flags & CAIRN_IF_INLINE || off >= r->size || !len)
		return 0;
	end = len > r->size - off ? r->size : off + len;
	if (r->flags & CAIRN_IF_CHUNKED) {
		struct map_chunks m = { off, end, fn, ctx };

		return cairn_image_chunked_ranges(img, r, map_chunk, &m);
	}
	if (!(r->flags & CAIRN_IF_EXTENTS))
		return fn(ctx, off, r->data_ref + off, end - off);
	rc = extent_find(img, r, off, &i);
	for (; !rc && i < r->data_count; i++) {
		uint64_t lo, hi;

		rc = cairn_image_extent_load(img, r->data_ref + i, r, &x);
		if (rc || x.file_off >= end)
			break;
		if (x.file_off < prev_end)
			return cairn_image_corrupt(img, "inode %llu: extents overlap or are unsorted",
						   (unsigned long long)ino);
		prev_end = x.file_off + x.len;
		lo = x.file_off > off ? x.file_off : off;
		hi = prev_end < end ? prev_end : end;
		if (lo < hi)
			rc = fn(ctx, lo, x.disk_off + (lo - x.file_off), hi - lo);
	}
	return rc;
}

static int has_hot_prefix(const struct cairn_image *img)
{
	return (img->compat & CAIRN_COMPAT_HOT_PREFIX) && img->hot_len;
}

struct deliver_ctx {
	struct cairn_image *img;
	int keep_hot;
};

/* Hot data is kept while keep_hot: a push into the page cache may still read
 * it, and reading it again would cost the request the prefetch saved. */
static int deliver_piece(void *ctx, uint64_t file_off, uint64_t disk_off, uint64_t len)
{
	const struct deliver_ctx *d = ctx;
	struct cairn_image *img = d->img;
	uint64_t end = disk_off + len, lo = disk_off;

	(void)file_off;
	if (d->keep_hot && !img->profile && has_hot_prefix(img)) {
		uint64_t hot_end = img->hot_off + img->hot_len;

		if (disk_off < img->hot_off) /* the part before the prefix */
			cairn_cache_delivered(img->cache, disk_off,
					      (end < img->hot_off ? end : img->hot_off) - disk_off);
		lo = hot_end > disk_off ? hot_end : disk_off; /* and after it */
	}
	if (lo < end)
		cairn_cache_delivered(img->cache, lo, end - lo);
	return 0;
}

struct gap_ctx {
	struct cairn_image *img;
	cairn_ino_t ino;
	struct cairn_rinode *r;
	uint64_t lo, hi; /* a range just pushed (or none: lo == hi) */
};

/* A gap next to the range just pushed is delivered with it: the cache marks
 * only the 32nds of a segment wholly inside one delivery, and the one across
 * their border would stay unmarked, and the segment resident, for good. */
static int deliver_gap(void *ctx, uint64_t file_off, uint64_t pos, uint64_t len)
{
	struct gap_ctx *g = ctx;
	struct deliver_ctx d = { g->img, 0 };
	uint64_t end = file_off + len;

	(void)pos;
	if (g->lo < g->hi && end == g->lo)
		end = g->hi;
	else if (g->lo < g->hi && file_off == g->hi)
		file_off = g->lo;
	return cairn_image_map(g->img, g->ino, g->r, file_off, end - file_off, deliver_piece, &d);
}

static void image_delivered(struct cairn_image *img, cairn_ino_t ino, uint64_t off,
			    uint64_t len, int keep_hot)
{
	struct deliver_ctx d = { img, keep_hot };
	struct cairn_rinode r;

	if (load_regular(img, ino, &r))
		return;
	/* A profile's file: its ranges are kept for the push, which delivers them
	 * once stored; the rest of what the reader got goes now (a profile mount
	 * held 31 MiB after a cold Java Hello when the whole file was kept). */
	if (keep_hot && img->profile && cairn_profile_has(img->profile, ino)) {
		struct gap_ctx g = { img, ino, &r, 0, 0 };

		if (!(r.flags & CAIRN_IF_CHUNKED))
			(void)cairn_profile_gaps(img->profile, ino, off, len, deliver_gap, &g);
		return;
	}
	/* Compressed files: the chunk cache drops what was delivered; their stored
	 * chunks are left to the segment cache's budget (packed back to back, a
	 * segment serves chunks not delivered yet). */
	if (r.flags & CAIRN_IF_CHUNKED) {
		int keep = keep_hot && !img->profile && has_hot_prefix(img);

		cairn_image_chunked_delivered(img, &r, off, len, keep ? img->hot_off : 0,
					      keep ? img->hot_off + img->hot_len : 0);
		return;
	}
	(void)cairn_image_map(img, ino, &r, off, len, deliver_piece, &d);
}

void cairn_image_delivered(struct cairn_image *img, cairn_ino_t ino, uint64_t off,
			   uint64_t len)
{
	image_delivered(img, ino, off, len, img->keep_hot);
}

static int plain_span(struct cairn_image *img, const struct cairn_rinode *r, uint64_t off,
		      uint64_t *lo, uint64_t *hi);

/* A profile's file whose range [off, off + len) was pushed: the bytes of the
 * file in the segments around it that no profile range covers go too. The
 * prefetch fetched them only to fill the gaps between ranges in one request;
 * the traced program never read them, and kept, they held most segments of a
 * profile mount (31 MiB after a cold Java Hello, docs/bench/rss.md). */
static void pushed_segment_rest(struct cairn_image *img, cairn_ino_t ino, uint64_t off,
				uint64_t len)
{
	struct cairn_rinode r;
	struct gap_ctx g = { img, ino, &r, off, 0 };
	uint64_t lo, hi, last;

	if (!img->profile || !len || load_regular(img, ino, &r) ||
	    (r.flags & (CAIRN_IF_CHUNKED | CAIRN_IF_INLINE | CAIRN_IF_EXTENTS)) || off >= r.size)
		return;
	g.hi = len > r.size - off ? r.size : off + len;
	last = g.hi - 1;
	if (plain_span(img, &r, off, &lo, &hi) || plain_span(img, &r, last, &hi, &hi))
		return;
	(void)cairn_profile_gaps(img->profile, ino, lo, hi - lo, deliver_gap, &g);
}

/* The push is what hot data was kept for; once it stored a range, only the
 * kernel dropping those pages would read them again. */
void cairn_image_pushed(struct cairn_image *img, cairn_ino_t ino, uint64_t off, uint64_t len)
{
	image_delivered(img, ino, off, len, 0);
	pushed_segment_rest(img, ino, off, len);
}

/* A file in one piece: the cache segment holding its byte off (a miss there
 * fetched all of it), clipped to the file, in file offsets. */
static int plain_span(struct cairn_image *img, const struct cairn_rinode *r, uint64_t off,
		      uint64_t *lo, uint64_t *hi)
{
	uint64_t seg = cairn_cache_segment_size(img->cache);
	uint64_t d, s_lo, s_hi;

	if (off >= r->size)
		return -ENXIO;
	d = r->data_ref + off;
	s_lo = d & ~(seg - 1);
	s_hi = s_lo + seg;
	*lo = s_lo > r->data_ref ? s_lo - r->data_ref : 0;
	*hi = s_hi - r->data_ref < r->size ? s_hi - r->data_ref : r->size;
	return 0;
}

int cairn_image_chunk_span(struct cairn_image *img, cairn_ino_t ino, uint64_t off, uint64_t *lo,
			   uint64_t *hi)
{
	struct cairn_rinode r;
	int rc = load_regular(img, ino, &r);

	if (rc)
		return rc;
	if (r.flags & CAIRN_IF_CHUNKED)
		return cairn_image_chunked_span(img, &r, off, lo, hi);
	if (r.flags & (CAIRN_IF_INLINE | CAIRN_IF_EXTENTS))
		return -ENOENT;
	return plain_span(img, &r, off, lo, hi);
}

uint64_t cairn_image_hot_bytes(const struct cairn_image *img)
{
	if (img->profile)
		return cairn_profile_bytes(img->profile);
	return has_hot_prefix(img) ? img->hot_len : 0;
}

/* A profile's data that the device below already holds on local storage (a
 * warm disk cache) is not prefetched or kept: the push reads it from there
 * when it gets to it, as a program would. Its ranges are scattered over the
 * image, and reading them all ahead into the cache at mount, on the cores the
 * mount and the program need, and holding them until pushed, cost Java Hello
 * 54 MiB of daemon RSS against 20 and made the warm run 1.2x the local file
 * (docs/bench/remote13.md). A hot prefix is one stretch, read in a few large
 * requests: prefetched as ever (read on demand, its readahead ran past the
 * prefix into chunks the disk cache lacked). */
int cairn_image_prefetch_hot(struct cairn_image *img)
{
	img->keep_hot = 1;
	if (img->profile) {
		img->keep_hot = cairn_profile_prefetch(img, img->profile);
	} else if (has_hot_prefix(img)) {
		cairn_cache_prefetch(img->cache, img->hot_off, img->hot_len);
		cairn_image_chunk_prefetch_hot(img); /* compressed: decompress it too */
	}
	return img->keep_hot;
}

/* A file's hot pieces, sorted into device order before they are handed on. */
struct hot_piece {
	uint64_t disk_off, disk_len, file_off, len;
};

struct hot_list {
	const struct cairn_image *img;
	struct hot_piece *v;
	size_t n, cap;
};

static int hot_push(struct hot_list *l, struct hot_piece p)
{
	if (l->n == l->cap) {
		size_t ncap = l->cap ? 2 * l->cap : 8;
		struct hot_piece *v = realloc(l->v, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = ncap;
	}
	l->v[l->n++] = p;
	return 0;
}

/* Adds the part of a mapping (file_off -> disk_off, len bytes) that lies in the
 * hot prefix, if any (a cairn_image_map() callback). */
static int hot_add(void *ctx, uint64_t file_off, uint64_t disk_off, uint64_t len)
{
	struct hot_list *l = ctx;
	uint64_t hot_end = l->img->hot_off + l->img->hot_len;
	uint64_t lo = disk_off > l->img->hot_off ? disk_off : l->img->hot_off;
	uint64_t hi = disk_off + len < hot_end ? disk_off + len : hot_end;

	if (lo >= hi)
		return 0;
	return hot_push(l, (struct hot_piece){ lo, hi - lo, file_off + (lo - disk_off), hi - lo });
}

struct hot_chunks {
	const struct cairn_image *img;
	struct hot_list *l;
};

/* A compressed piece is hot whole when its stored bytes start in the prefix. */
static int hot_add_chunk(void *ctx, uint64_t file_off, uint64_t len, uint64_t dev_off,
			 uint64_t dev_len)
{
	struct hot_chunks *h = ctx;
	const struct cairn_image *img = h->img;

	if (dev_off < img->hot_off || dev_off - img->hot_off >= img->hot_len)
		return 0;
	return hot_push(h->l, (struct hot_piece){ dev_off, dev_len, file_off, len });
}

static int by_disk_off(const void *a, const void *b)
{
	const struct hot_piece *x = a, *y = b;

	return x->disk_off < y->disk_off ? -1 : x->disk_off > y->disk_off;
}

/* Hands the pieces on in device order, merging those that follow each other both
 * in the file and on the device. */
static int hot_emit(struct hot_piece *p, size_t n, cairn_range_cb fn, void *ctx)
{
	qsort(p, n, sizeof(*p), by_disk_off);
	for (size_t i = 0; i < n;) {
		uint64_t off = p[i].file_off, dev = p[i].disk_off, len = p[i].len;
		int rc;

		while (++i < n && p[i].file_off == off + len &&
		       p[i].disk_off == p[i - 1].disk_off + p[i - 1].disk_len)
			len += p[i].len;
		rc = fn(ctx, off, dev, len);
		if (rc)
			return rc;
	}
	return 0;
}

int cairn_image_hot_ranges(struct cairn_image *img, cairn_ino_t ino, cairn_range_cb fn,
			   void *ctx)
{
	struct hot_list l = { img, NULL, 0, 0 };
	struct cairn_rinode r;
	int rc;

	if (img->profile)
		return cairn_profile_ranges(img->profile, ino, fn, ctx);
	if (!has_hot_prefix(img))
		return 0;
	rc = load_regular(img, ino, &r);
	if (!rc && r.flags & CAIRN_IF_CHUNKED) {
		struct hot_chunks h = { img, &l };

		rc = cairn_image_chunked_ranges(img, &r, hot_add_chunk, &h);
	} else if (!rc) {
		rc = cairn_image_map(img, ino, &r, 0, r.size, hot_add, &l);
	}
	if (!rc && l.n)
		rc = hot_emit(l.v, l.n, fn, ctx);
	free(l.v);
	return rc;
}
