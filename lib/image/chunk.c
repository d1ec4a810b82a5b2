/* SPDX-License-Identifier: MIT */
/*
 * Compressed files (CAIRN_INCOMPAT_CHUNKED, docs/FORMAT.md "Compression"): the
 * chunk table, the checks of a chunk map, and reads through the
 * decompressed-chunk cache (zcache.c).
 *
 * Trust model as in image_int.h: every chunk record is checked when it is loaded
 * (codec, lengths, bounds in the data region), and its uncompressed length
 * against what the file needs there before it is used. Decompression writes into
 * a buffer of exactly that length, and a chunk that does not decode to exactly
 * that length is corrupt, so a bomb or a codec error costs at most one chunk
 * size of memory and gives -CAIRN_ECORRUPT.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <lz4.h>
#include <zstd.h>
#include <cairn/cache.h>
#include <cairn/error.h>
#include "image_int.h"
#include "zcache.h"
#include "util/thread.h"

int cairn_image_chunk_rec(struct cairn_image *img, const char *what, uint64_t idx,
			  const struct cairn_disk_chunk *d, uint64_t max_ulen, struct cairn_rchunk *c)
{
	unsigned long long n = idx;
	uint32_t info = cairn_le32(d->info);

	c->disk_off = cairn_le64(d->disk_off);
	c->stored_len = cairn_le32(d->stored_len);
	c->ulen = CAIRN_CHUNK_ULEN(info);
	c->codec = CAIRN_CHUNK_CODEC(info);
	if (c->codec > CAIRN_CODEC_MAX)
		return cairn_image_corrupt(img, "%s %llu: unknown codec %u", what, n, c->codec);
	if (c->ulen == 0 || c->ulen > max_ulen)
		return cairn_image_corrupt(img, "%s %llu: length %u not in 1..%llu", what, n, c->ulen,
					   (unsigned long long)max_ulen);
	if (c->codec == CAIRN_CODEC_ZERO) {
		if (c->disk_off || c->stored_len)
			return cairn_image_corrupt(img, "%s %llu: zero chunk with stored bytes", what, n);
		return 0;
	}
	if (c->codec == CAIRN_CODEC_RAW ? c->stored_len != c->ulen
					: c->stored_len == 0 || c->stored_len >= c->ulen)
		return cairn_image_corrupt(img, "%s %llu: stored length %u does not fit length %u",
					   what, n, c->stored_len, c->ulen);
	return 0;
}

int cairn_image_chunk_load(struct cairn_image *img, uint64_t idx, struct cairn_rchunk *c)
{
	struct cairn_disk_chunk d;
	unsigned long long n = idx;
	int rc;

	rc = cairn_image_rec_read(img, "chunk", img->chunk_off, img->chunk_count, idx, &d,
				  CAIRN_CHUNK_SIZE);
	if (!rc)
		rc = cairn_image_chunk_rec(img, "chunk", idx, &d, img->chunk_size, c);
	if (rc || c->codec == CAIRN_CODEC_ZERO)
		return rc;
	if (c->disk_off < img->data_off || !cairn_add_ok(c->disk_off, c->stored_len, img->data_end))
		return cairn_image_corrupt(img, "chunk %llu: %llu+%u outside the data region", n,
					   (unsigned long long)c->disk_off, c->stored_len);
	return 0;
}

/* Bytes of r held by its own chunks (the rest, if any, is the tail in a fragment). */
static uint64_t own_bytes(const struct cairn_image *img, const struct cairn_rinode *r)
{
	uint64_t covered = r->data_count << img->chunk_log2;

	return covered < r->size ? covered : r->size;
}

int cairn_image_chunked_ok(struct cairn_image *img, cairn_ino_t ino, const struct cairn_rinode *r)
{
	unsigned long long n = ino;

	if (!(img->incompat & CAIRN_INCOMPAT_CHUNKED))
		return cairn_image_corrupt(img, "inode %llu: chunked without the feature", n);
	if (r->flags & (CAIRN_IF_INLINE | CAIRN_IF_EXTENTS))
		return cairn_image_corrupt(img, "inode %llu: chunked and inline or extents", n);
	if (!cairn_add_ok(r->data_ref, r->data_count, img->chunk_count))
		return cairn_image_corrupt(img, "inode %llu: chunks %llu+%llu past the chunk table", n,
					   (unsigned long long)r->data_ref,
					   (unsigned long long)r->data_count);
	/* Every own chunk but the last is full, the last holds at least one byte,
	 * and a tail past them is shorter than a chunk. */
	if (r->data_count > (r->size >> img->chunk_log2) + 1 ||
	    (r->data_count && (r->data_count - 1) << img->chunk_log2 >= r->size))
		return cairn_image_corrupt(img, "inode %llu: %llu chunks for %llu bytes", n,
					   (unsigned long long)r->data_count,
					   (unsigned long long)r->size);
	if (r->size - own_bytes(img, r) >= img->chunk_size)
		return cairn_image_corrupt(img, "inode %llu: tail longer than a chunk", n);
	if (r->size > own_bytes(img, r) ? r->frag_ref >= img->chunk_count
					: r->frag_ref || r->frag_off)
		return cairn_image_corrupt(img, "inode %llu: bad fragment reference %llu", n,
					   (unsigned long long)r->frag_ref);
	return 0;
}

int cairn_image_chunk_at(struct cairn_image *img, const struct cairn_rinode *r, uint64_t off,
			 uint64_t *idx, uint64_t *start, struct cairn_rchunk *c)
{
	uint64_t own = own_bytes(img, r), want;
	int rc;

	if (off < own) {
		uint64_t j = off >> img->chunk_log2;

		*idx = r->data_ref + j;
		*start = j << img->chunk_log2;
		want = own - *start < img->chunk_size ? own - *start : img->chunk_size;
		rc = cairn_image_chunk_load(img, *idx, c);
		if (!rc && c->ulen != want)
			rc = cairn_image_corrupt(img, "chunk %llu: length %u, the file needs %llu",
						 (unsigned long long)*idx, c->ulen,
						 (unsigned long long)want);
		return rc;
	}
	*idx = r->frag_ref;
	*start = own;
	rc = cairn_image_chunk_load(img, *idx, c);
	if (!rc && !cairn_add_ok(r->frag_off, r->size - own, c->ulen))
		rc = cairn_image_corrupt(img, "fragment %llu: tail %u+%llu past its length %u",
					 (unsigned long long)*idx, r->frag_off,
					 (unsigned long long)(r->size - own), c->ulen);
	return rc;
}

static ZSTD_DCtx *dctx_get(struct cairn_image *img)
{
	ZSTD_DCtx *d = NULL;

	pthread_mutex_lock(&img->dctx_lock);
	if (img->ndctx)
		d = img->dctx[--img->ndctx];
	pthread_mutex_unlock(&img->dctx_lock);
	return d ? d : ZSTD_createDCtx();
}

static void dctx_put(struct cairn_image *img, ZSTD_DCtx *d)
{
	pthread_mutex_lock(&img->dctx_lock);
	if (img->ndctx < CAIRN_DCTX_POOL) {
		img->dctx[img->ndctx++] = d;
		d = NULL;
	}
	pthread_mutex_unlock(&img->dctx_lock);
	ZSTD_freeDCtx(d);
}


static int decompress(struct cairn_image *img, const struct cairn_rchunk *c, const void *src,
		      void *dst)
{
	if (c->codec == CAIRN_CODEC_ZSTD) {
		ZSTD_DCtx *d = dctx_get(img);
		size_t n;

		if (!d)
			return -ENOMEM;
		n = ZSTD_decompressDCtx(d, dst, c->ulen, src, c->stored_len);
		dctx_put(img, d);
		return !ZSTD_isError(n) && n == c->ulen ? 0 : -CAIRN_ECORRUPT;
	}
	if (c->codec == CAIRN_CODEC_LZ4) {
		int n = LZ4_decompress_safe(src, dst, (int)c->stored_len, (int)c->ulen);

		return n >= 0 && (uint32_t)n == c->ulen ? 0 : -CAIRN_ECORRUPT;
	}
	return -CAIRN_ECORRUPT; /* RAW and ZERO are never decompressed */
}

static int decode(struct cairn_image *img, const char *what, uint64_t idx,
		  const struct cairn_rchunk *c, const struct cairn_cache_hint *hint, void *buf)
{
	void *src = malloc(c->stored_len); /* < ulen <= chunk size: checked at load */
	int rc;

	if (!src)
		return -ENOMEM;
	rc = cairn_image_dev_read(img, src, c->stored_len, c->disk_off, hint);
	if (!rc)
		rc = decompress(img, c, src, buf);
	if (rc == -CAIRN_ECORRUPT)
		rc = cairn_image_corrupt(img, "%s %llu: does not decompress to %u bytes", what,
					 (unsigned long long)idx, c->ulen);
	free(src);
	return rc;
}

int cairn_image_stored_decode(struct cairn_image *img, const char *what, uint64_t idx,
			      const struct cairn_rchunk *c, void *buf)
{
	struct cairn_cache_hint hint = { c->disk_off, c->disk_off + c->stored_len };

	if (c->codec == CAIRN_CODEC_ZERO) {
		memset(buf, 0, c->ulen);
		return 0;
	}
	if (c->codec == CAIRN_CODEC_RAW)
		return cairn_image_dev_read(img, buf, c->ulen, c->disk_off, &hint);
	return decode(img, what, idx, c, &hint, buf);
}

int cairn_image_chunk_decode(struct cairn_image *img, uint64_t idx, const struct cairn_rchunk *c,
			     void *buf)
{
	return cairn_image_stored_decode(img, "chunk", idx, c, buf);
}

struct load_ctx {
	struct cairn_image *img;
	const struct cairn_rchunk *c;
	const struct cairn_cache_hint *hint;
};

static int load_chunk(void *ctx, uint64_t key, void *buf, size_t len)
{
	struct load_ctx *l = ctx;

	return decode(l->img, "chunk", key, l->c, l->hint, buf);
}

/* The device range of a file's own chunks, from its first and last one, so the
 * segment cache reads ahead to the file's end and fetches a small rest whole
 * (chunks of a file sit back to back; hot ranges make this approximate, as for
 * extents). */
static void file_hint(struct cairn_image *img, const struct cairn_rinode *r,
		      struct cairn_cache_hint *h)
{
	struct cairn_rchunk a, b;

	h->lo = h->hi = 0;
	if (!r->data_count || cairn_image_chunk_load(img, r->data_ref, &a) ||
	    cairn_image_chunk_load(img, r->data_ref + r->data_count - 1, &b) ||
	    a.codec == CAIRN_CODEC_ZERO || b.codec == CAIRN_CODEC_ZERO)
		return;
	h->lo = a.disk_off < b.disk_off ? a.disk_off : b.disk_off;
	h->hi = a.disk_off + a.stored_len > b.disk_off + b.stored_len ? a.disk_off + a.stored_len
								      : b.disk_off + b.stored_len;
}

/* ---- read-ahead and the hot prefix ----
 *
 * A sequential read that ends at the end of a compressed chunk of a file is
 * most likely followed by the next chunks (a program streaming the file, the
 * page-cache push of -o prefetch walking a hot range), so they are queued for
 * the worker threads, which decompress them into the chunk cache while the
 * reader returns its data. A full queue drops the request; a chunk cached or
 * being loaded already is skipped. A read is sequential when it is a chunk
 * long or more, starts the file, or starts where one of the last reads of the
 * file ended (cairn_image_stream_follows). A random reader's read that happens
 * to end at a chunk's end gets no read-ahead: for 4 KiB random reads of a 128 MiB file, that
 * read-ahead decompressed 4.3x the file. A read made with CAIRN_READ_ALONE (the
 * FUSE daemon pushing the rest of a chunk into the page cache) neither reads
 * ahead nor counts as the end of a stream.
 *
 * -o prefetch of an ordered image also hands the workers the hot prefix. The
 * first worker lists its compressed chunks (the records whose stored bytes lie
 * in the prefix, until their stored lengths add up to it: mkfs packs the
 * prefix with hot chunks back to back) and sorts them by device offset, the
 * order mkfs placed them, which is the order the traced program read them (the
 * records themselves are in file order: a file split by --order ranges has its
 * cold chunks' records between its hot ones). The workers then decompress the
 * list in that order, each chunk as soon as the prefetch has its stored bytes
 * in the segment cache, so decompression overlaps the prefix's IO, runs on
 * every core, and is done before the push or the program asks. The list keeps
 * the chunks that fit in 3/4 of the chunk cache's budget, so the walk never
 * evicts its own work. Queued read-ahead goes first: a reader waits for it now.
 */
#define AHEAD_QUEUE 16
#define AHEAD_THREADS_MAX 4
#define HOT_LIST_MAX 65536u       /* 1 MiB of list, 8 GiB of 128 KiB chunks */
#define HOT_STOP_CHECK 4096u      /* records between looks at the stop flag */

struct zahead_item {
	uint64_t idx;
	struct cairn_rchunk c;
	struct cairn_cache_hint hint;
};

struct hot_rec {
	uint64_t disk_off, idx, ulen;
};

struct cairn_zahead {
	struct cairn_image *img;
	pthread_mutex_t lock;
	pthread_cond_t work, idle;
	struct zahead_item q[AHEAD_QUEUE];
	unsigned head, n;
	unsigned busy;            /* workers decompressing now */
	unsigned nthreads;        /* started */
	int spawned, stop;
	pthread_t tid[AHEAD_THREADS_MAX];
	/* The hot prefix walk: on from prefetch_hot until the list is done. */
	int hot_on, hot_listing, hot_listed;
	uint64_t hot_budget;      /* bytes the list may decompress */
	struct hot_rec *hot;      /* sorted by disk_off */
	size_t hot_n, hot_pos;
};

static int load_chunk(void *ctx, uint64_t key, void *buf, size_t len);

static int by_disk_off(const void *x, const void *y)
{
	const struct hot_rec *a = x, *b = y;

	return a->disk_off < b->disk_off ? -1 : a->disk_off > b->disk_off;
}

/* Whether chunk c's stored bytes start in the hot prefix. */
static int in_hot_prefix(const struct cairn_image *img, const struct cairn_rchunk *c)
{
	return c->codec != CAIRN_CODEC_ZERO && c->disk_off >= img->hot_off &&
	       c->disk_off - img->hot_off < img->hot_len;
}

/* The hot prefix's compressed chunks, in disk order, within the budget (no lock
 * held; a->stop is looked at now and then, so a close does not wait for a walk
 * of a hostile table). */
static void hot_list(struct cairn_zahead *a, uint64_t budget, struct hot_rec **out, size_t *n)
{
	struct cairn_image *img = a->img;
	uint64_t seen = 0, sum = 0;
	struct hot_rec *v = NULL;
	size_t k = 0, cap = 0, keep = 0;
	int stop = 0;

	for (uint64_t idx = 0; idx < img->chunk_count && seen < img->hot_len && !stop; idx++) {
		struct cairn_rchunk c;

		if (!(idx % HOT_STOP_CHECK)) {
			pthread_mutex_lock(&a->lock);
			stop = a->stop;
			pthread_mutex_unlock(&a->lock);
		}
		if (cairn_image_chunk_load(img, idx, &c))
			break; /* the demand reader reports it */
		if (!in_hot_prefix(img, &c))
			continue;
		seen += c.stored_len;
		if (c.codec != CAIRN_CODEC_ZSTD && c.codec != CAIRN_CODEC_LZ4)
			continue; /* raw chunks stay in the segment cache */
		if (k == cap) {
			size_t ncap = cap ? 2 * cap : 256;
			struct hot_rec *nv = ncap <= HOT_LIST_MAX ? realloc(v, ncap * sizeof(*nv)) : NULL;

			if (!nv)
				break; /* advice: what is listed is decompressed */
			v = nv;
			cap = ncap;
		}
		v[k++] = (struct hot_rec){ c.disk_off, idx, c.ulen };
	}
	if (k)
		qsort(v, k, sizeof(*v), by_disk_off);
	for (; keep < k && sum + v[keep].ulen <= budget; keep++)
		sum += v[keep].ulen;
	*out = v;
	*n = keep;
}

/* One step of the hot walk (lock held on entry and exit; busy counted). */
static void hot_step(struct cairn_zahead *a)
{
	struct cairn_image *img = a->img;
	struct cairn_rchunk c;
	uint64_t idx;

	if (!a->hot_listed) { /* this worker lists; the others wait for it */
		struct hot_rec *v;
		size_t n;

		a->hot_listing = 1;
		pthread_mutex_unlock(&a->lock);
		hot_list(a, a->hot_budget, &v, &n);
		pthread_mutex_lock(&a->lock);
		a->hot = v;
		a->hot_n = n;
		a->hot_pos = 0;
		a->hot_listing = 0;
		a->hot_listed = 1;
		pthread_cond_broadcast(&a->work);
	}
	if (a->hot_pos >= a->hot_n) {
		a->hot_on = 0;
		return;
	}
	idx = a->hot[a->hot_pos++].idx;
	pthread_mutex_unlock(&a->lock);
	if (cairn_image_chunk_load(img, idx, &c) == 0) {
		struct cairn_cache_hint hint = { c.disk_off, c.disk_off + c.stored_len };
		struct load_ctx l = { img, &c, &hint };

		/* Advice: a failure is the demand reader's to see and report. */
		(void)cairn_zcache_prefetch(img->zc, idx, c.ulen, load_chunk, &l);
	}
	pthread_mutex_lock(&a->lock);
}

/* Work for a worker (lock held): queued read-ahead, or a step of the hot walk
 * unless another worker is listing it. */
static int has_work(const struct cairn_zahead *a)
{
	return a->n || (a->hot_on && !a->hot_listing);
}

static void *ahead_main(void *arg)
{
	struct cairn_zahead *a = arg;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		while (!has_work(a) && !a->stop)
			pthread_cond_wait(&a->work, &a->lock);
		if (a->stop)
			break;
		a->busy++;
		if (a->n) {
			struct zahead_item it = a->q[a->head];
			struct load_ctx l = { a->img, &it.c, &it.hint };

			a->head = (a->head + 1) % AHEAD_QUEUE;
			a->n--;
			pthread_mutex_unlock(&a->lock);
			/* A failure is the demand reader's to see and report. */
			(void)cairn_zcache_prefetch(a->img->zc, it.idx, it.c.ulen, load_chunk, &l);
			pthread_mutex_lock(&a->lock);
		} else {
			hot_step(a);
		}
		a->busy--;
		if (!a->n && !a->hot_on && !a->busy)
			pthread_cond_broadcast(&a->idle);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* Starts the workers on first use, one per online CPU up to AHEAD_THREADS_MAX
 * (lock held). Returns whether at least one runs. */
static int ahead_spawn(struct cairn_zahead *a)
{
	long cpus;
	unsigned want;

	if (a->spawned || a->stop)
		return a->nthreads > 0;
	a->spawned = 1;
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	want = cpus < 1 ? 1 : cpus > AHEAD_THREADS_MAX ? AHEAD_THREADS_MAX : (unsigned)cpus;
	while (a->nthreads < want &&
	       util_thread_create(&a->tid[a->nthreads], ahead_main, a) == 0)
		a->nthreads++;
	return a->nthreads > 0;
}

int cairn_image_chunk_init(struct cairn_image *img)
{
	struct cairn_zahead *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->img = img;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->work, NULL);
	pthread_cond_init(&a->idle, NULL);
	img->ahead = a;
	return 0;
}

void cairn_image_chunk_fini(struct cairn_image *img)
{
	struct cairn_zahead *a = img->ahead;

	if (a) {
		pthread_mutex_lock(&a->lock);
		a->stop = 1;
		pthread_cond_broadcast(&a->work);
		pthread_mutex_unlock(&a->lock);
		for (unsigned t = 0; t < a->nthreads; t++)
			pthread_join(a->tid[t], NULL);
		pthread_cond_destroy(&a->idle);
		pthread_cond_destroy(&a->work);
		pthread_mutex_destroy(&a->lock);
		free(a->hot);
		free(a);
		img->ahead = NULL;
	}
	while (img->ndctx)
		ZSTD_freeDCtx(img->dctx[--img->ndctx]);
}

void cairn_image_chunk_drain(struct cairn_image *img)
{
	struct cairn_zahead *a = img->ahead;

	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	while (a->nthreads && (a->n || a->busy || a->hot_on))
		pthread_cond_wait(&a->idle, &a->lock);
	pthread_mutex_unlock(&a->lock);
}

void cairn_image_chunk_prefetch_hot(struct cairn_image *img)
{
	struct cairn_zahead *a = img->ahead;
	struct cairn_zcache_stats s;

	if (!a || !img->zc || !img->hot_len)
		return;
	cairn_zcache_get_stats(img->zc, &s);
	pthread_mutex_lock(&a->lock);
	/* Once per image: a second call finds the chunks cached anyway. */
	if (!a->hot_on && !a->hot_listed && ahead_spawn(a)) {
		a->hot_on = 1;
		a->hot_budget = s.budget_bytes / 4 * 3;
		pthread_cond_broadcast(&a->work);
	}
	pthread_mutex_unlock(&a->lock);
}

static void ahead_queue(struct cairn_image *img, uint64_t idx, const struct cairn_rchunk *c,
			const struct cairn_cache_hint *hint)
{
	struct cairn_zahead *a = img->ahead;

	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	if (ahead_spawn(a) && a->n < AHEAD_QUEUE) {
		a->q[(a->head + a->n) % AHEAD_QUEUE] = (struct zahead_item){ idx, *c, *hint };
		a->n++;
		pthread_cond_signal(&a->work);
	}
	pthread_mutex_unlock(&a->lock);
}

/* After a read of len bytes that ended at the end of own chunk j: queue the
 * chunks a read as long as this one will need next (at least one, at most
 * AHEAD_MAX), so the worker stays ahead of a reader of 1 MiB requests. Not
 * from a chunk of the hot prefix into the cold chunks after it: the traced
 * program did not read those, and on a network disk each costs a request
 * of its own beside the prefix's large ones (the push of libjvm.so's hot
 * ranges fetched three such cold chunks for every Java start). */
#define AHEAD_MAX (AHEAD_QUEUE / 2)
static void read_ahead(struct cairn_image *img, const struct cairn_rinode *r, uint64_t start,
		       size_t len, const struct cairn_cache_hint *hint)
{
	uint64_t want = len >> img->chunk_log2, next = start + img->chunk_size, idx, at;
	struct cairn_rchunk c;
	int from_hot;

	if (cairn_image_chunk_at(img, r, start, &idx, &at, &c))
		return;
	from_hot = in_hot_prefix(img, &c);
	want = want < 1 ? 1 : want > AHEAD_MAX ? AHEAD_MAX : want;
	for (; want-- && next < own_bytes(img, r); next += img->chunk_size) {
		if (cairn_image_chunk_at(img, r, next, &idx, &at, &c) ||
		    (from_hot && !in_hot_prefix(img, &c)))
			return;
		if (c.codec == CAIRN_CODEC_ZSTD || c.codec == CAIRN_CODEC_LZ4)
			ahead_queue(img, idx, &c, hint);
	}
}

/* Compressed chunk idx decompressed, held in the chunk cache (*e, its content
 * *data) until cairn_zcache_put; with CAIRN_READ_CACHED only one decompressed
 * already (-EAGAIN otherwise). */
static int chunk_get(struct cairn_image *img, uint64_t idx, const struct cairn_rchunk *c,
		     const struct cairn_cache_hint *hint, unsigned flags, struct cairn_zentry **e,
		     const void **data)
{
	struct load_ctx l = { img, c, hint };
	int rc = cairn_zcache_get(img->zc, idx, c->ulen,
				  flags & CAIRN_READ_CACHED ? NULL : load_chunk, &l, e, data);

	if (rc == -CAIRN_ECORRUPT && !cairn_image_corruption(img))
		rc = cairn_image_corrupt(img, "chunk %llu: cached with another length",
					 (unsigned long long)idx);
	return rc;
}

/* n bytes at offset coff of chunk idx's content into buf; with CAIRN_READ_CACHED
 * only from a chunk decompressed already (-EAGAIN otherwise). */
static int read_piece(struct cairn_image *img, uint64_t idx, const struct cairn_rchunk *c,
		      const struct cairn_cache_hint *hint, char *buf, size_t n, uint64_t coff,
		      unsigned flags)
{
	struct cairn_zentry *e;
	const void *data;
	int rc;

	if (c->codec == CAIRN_CODEC_ZERO) {
		memset(buf, 0, n);
		return 0;
	}
	if (c->codec == CAIRN_CODEC_RAW) /* the segment cache holds it as it is */
		return cairn_image_dev_read(img, buf, n, c->disk_off + coff, hint);
	rc = chunk_get(img, idx, c, hint, flags, &e, &data);
	if (rc)
		return rc;
	memcpy(buf, (const char *)data + coff, n);
	cairn_zcache_put(img->zc, e);
	return 0;
}

/* Walks the chunks holding [off, end) of r (end <= size): fn gets each one with
 * the file offset, and the offset and length in its content, of the piece that
 * range covers (for the tail, inside its fragment). Stops at the first non-zero return. */
typedef int (*piece_fn)(struct cairn_image *img, uint64_t idx, const struct cairn_rchunk *c,
			uint64_t pos, uint64_t coff, uint64_t n, void *ctx);

static int walk_pieces(struct cairn_image *img, const struct cairn_rinode *r, uint64_t off,
		       uint64_t end, piece_fn fn, void *ctx)
{
	for (uint64_t pos = off; pos < end;) {
		struct cairn_rchunk c;
		uint64_t idx, start, coff, n;
		int rc = cairn_image_chunk_at(img, r, pos, &idx, &start, &c);

		if (rc)
			return rc;
		coff = pos - start + (start < own_bytes(img, r) ? 0 : r->frag_off);
		n = c.ulen - coff < end - pos ? c.ulen - coff : end - pos;
		rc = fn(img, idx, &c, pos, coff, n, ctx);
		if (rc)
			return rc;
		pos += n;
	}
	return 0;
}

struct read_ctx {
	const struct cairn_rinode *r;
	char *buf;
	uint64_t off, len;
	struct cairn_cache_hint fh; /* the file's own chunks (file_hint) */
	int have_fh;
	uint64_t last_start;        /* first file byte of the last own chunk read, or ~0 */
	unsigned flags;             /* CAIRN_READ_* */
};

/* The cache hint of a piece [coff, coff+n) of chunk c at file offset pos, read
 * through x: the file's own chunks (found once), or the tail's fragment, read
 * whole. Notes in x->last_start the file offset of an own chunk the piece ends. */
static struct cairn_cache_hint piece_hint(struct cairn_image *img, struct read_ctx *x,
					  const struct cairn_rchunk *c, uint64_t pos,
					  uint64_t coff, uint64_t n)
{
	struct cairn_cache_hint ch = { c->disk_off, c->disk_off + c->stored_len };

	x->last_start = ~(uint64_t)0;
	if (pos < own_bytes(img, x->r)) {
		if (!x->have_fh) {
			file_hint(img, x->r, &x->fh);
			x->have_fh = 1;
		}
		ch = x->fh;
		if (coff + n == c->ulen)
			x->last_start = pos - coff;
	}
	return ch;
}

static int read_one(struct cairn_image *img, uint64_t idx, const struct cairn_rchunk *c,
		    uint64_t pos, uint64_t coff, uint64_t n, void *ctx)
{
	struct read_ctx *x = ctx;
	struct cairn_cache_hint ch = piece_hint(img, x, c, pos, coff, n);

	return read_piece(img, idx, c, &ch, x->buf + (pos - x->off), (size_t)n, coff, x->flags);
}

/* ---- a read of several chunks ----
 *
 * A read of several own chunks (the kernel's read-ahead windows, up to 1 MiB)
 * walked chunk by chunk would miss the segment cache at each chunk whose
 * stored bytes start a new segment: two or three device round trips one after
 * the other, with a decompression between each, where a network disk pays its
 * latency every time. So the stored bytes of the chunks the read must
 * decompress are fetched first, in one demand request (the cache merges
 * neighbouring misses), and every such chunk but the first goes to the
 * read-ahead workers, which decompress them on the other cores while this
 * thread decompresses the first. Chunks already decompressed are left out;
 * chunks far apart on the device (a file cut by --order's hot ranges) are
 * fetched as before, one by one. The request spans at most 1 MiB (the
 * cache's default max_io), whatever the chunk size or the length of a library
 * caller's read, and lands in the segment cache alone (cairn_cache_fetch: no
 * buffer, no copy). */
#define SPREAD_MAX 16u /* chunks of one read: 1 MiB of 64 KiB chunks */
#define SPREAD_SPAN_MAX (1u << 20) /* device bytes read for them: one max_io request */

struct spread {
	uint64_t idx[SPREAD_MAX];
	struct cairn_rchunk c[SPREAD_MAX];
	unsigned n;
	uint64_t lo, hi, stored; /* device span of the chunks, and their stored bytes */
};

/* The compressed own chunks of [off, end) not decompressed yet, into s. */
static int spread_list(struct cairn_image *img, const struct cairn_rinode *r, uint64_t off,
		       uint64_t end, struct spread *s)
{
	uint64_t own = own_bytes(img, r);

	s->n = 0;
	s->stored = 0;
	for (uint64_t pos = off; pos < end && pos < own && s->n < SPREAD_MAX;) {
		struct cairn_rchunk c;
		uint64_t idx, start, lo, hi;
		int rc = cairn_image_chunk_at(img, r, pos, &idx, &start, &c);

		if (rc)
			return rc;
		pos = start + c.ulen;
		if ((c.codec != CAIRN_CODEC_ZSTD && c.codec != CAIRN_CODEC_LZ4) ||
		    cairn_zcache_present(img->zc, idx))
			continue;
		lo = s->n && s->lo < c.disk_off ? s->lo : c.disk_off;
		hi = s->n && s->hi > c.disk_off + c.stored_len ? s->hi : c.disk_off + c.stored_len;
		if (hi - lo > SPREAD_SPAN_MAX)
			break; /* the rest is fetched by the walk, as before */
		s->lo = lo;
		s->hi = hi;
		s->stored += c.stored_len;
		s->idx[s->n] = idx;
		s->c[s->n++] = c;
	}
	return 0;
}

static void read_spread(struct cairn_image *img, const struct cairn_rinode *r, uint64_t off,
			uint64_t end, const struct cairn_cache_hint *fh)
{
	struct spread s;

	if (end - off <= img->chunk_size || spread_list(img, r, off, end, &s) || s.n < 2)
		return;
	/* Back to back, or nearly: one request pays for itself. */
	if (s.hi - s.lo > 2 * s.stored)
		return;
	/* A failure is the walk's to see and report. */
	(void)cairn_cache_fetch(img->cache, (size_t)(s.hi - s.lo), s.lo, fh);
	for (unsigned i = 1; i < s.n; i++)
		ahead_queue(img, s.idx[i], &s.c[i], fh);
}

int cairn_image_read_chunked(struct cairn_image *img, cairn_ino_t ino,
			     const struct cairn_rinode *r, char *buf, size_t len, uint64_t off,
			     unsigned flags)
{
	struct read_ctx x = { r, buf, off, len, { 0, 0 }, 0, ~(uint64_t)0, flags };
	/* A read of a chunk or more is a window of a stream (the kernel's
	 * read-ahead, a push of a hot range) wherever it starts. */
	int seq = !(flags & CAIRN_READ_ALONE) &&
		  (cairn_image_stream_follows(img, ino, off, len, 1) || len >= img->chunk_size);
	int rc;

	if (!(flags & CAIRN_READ_CACHED) && len > img->chunk_size) {
		file_hint(img, r, &x.fh);
		x.have_fh = 1;
		read_spread(img, r, off, off + len, &x.fh);
	}
	rc = walk_pieces(img, r, off, off + len, read_one, &x);

	if (!rc && seq && x.last_start != ~(uint64_t)0) /* ended at the end of an own chunk */
		read_ahead(img, r, x.last_start, len, &x.fh);
	return rc;
}

/* A pinned read of a compressed file: the chunks it holds, in order, and
 * iovecs into their content. A read of more chunks than this is copied. */
#define PIN_CHUNKS_MAX 32u

struct pin_ctx {
	struct read_ctx x;          /* the hint and last_start, as a copying read's */
	unsigned n;
	struct cairn_zentry *e[PIN_CHUNKS_MAX];
	struct iovec iov[PIN_CHUNKS_MAX];
};

static int pin_one(struct cairn_image *img, uint64_t idx, const struct cairn_rchunk *c,
		   uint64_t pos, uint64_t coff, uint64_t n, void *ctx)
{
	struct pin_ctx *p = ctx;
	struct cairn_cache_hint ch;
	const void *data;
	int rc;

	/* Zero and raw chunks have no decompressed copy to lend. */
	if ((c->codec != CAIRN_CODEC_ZSTD && c->codec != CAIRN_CODEC_LZ4) ||
	    p->n == PIN_CHUNKS_MAX)
		return CAIRN_CACHE_COPY;
	ch = piece_hint(img, &p->x, c, pos, coff, n);
	rc = chunk_get(img, idx, c, &ch, 0, &p->e[p->n], &data);
	if (rc)
		return rc;
	p->iov[p->n++] = (struct iovec){ (char *)data + coff, (size_t)n };
	return 0;
}

int cairn_image_read_chunked_pinned(struct cairn_image *img, cairn_ino_t ino,
				    const struct cairn_rinode *r, size_t len, uint64_t off,
				    cairn_iov_fn fn, void *ctx)
{
	struct pin_ctx p = { .x = { r, NULL, off, len, { 0, 0 }, 0, ~(uint64_t)0, 0 } };
	int seq = cairn_image_stream_follows(img, ino, off, len, 1) || len >= img->chunk_size;
	int rc = walk_pieces(img, r, off, off + len, pin_one, &p);

	if (!rc) {
		if (seq && p.x.last_start != ~(uint64_t)0) /* as cairn_image_read_chunked */
			read_ahead(img, r, p.x.last_start, len, &p.x.fh);
		atomic_fetch_add_explicit(&img->chunk_lent, len, memory_order_relaxed);
		rc = fn(ctx, p.iov, (int)p.n, len);
	}
	for (unsigned i = 0; i < p.n; i++)
		cairn_zcache_put(img->zc, p.e[i]);
	return rc;
}

struct keep_range {
	uint64_t lo, hi; /* stored bytes whose chunks stay cached */
};

static int deliver_chunk(struct cairn_image *img, uint64_t idx, const struct cairn_rchunk *c,
			 uint64_t pos, uint64_t coff, uint64_t n, void *ctx)
{
	const struct keep_range *k = ctx;

	(void)pos;
	if (c->codec == CAIRN_CODEC_ZERO)
		return 0;
	if (c->codec == CAIRN_CODEC_RAW) /* stored as it is: the segment cache's */
		cairn_cache_delivered(img->cache, c->disk_off + coff, n);
	else if (c->disk_off < k->lo || c->disk_off >= k->hi)
		(void)cairn_zcache_delivered(img->zc, idx, coff, n);
	return 0;
}

void cairn_image_chunked_delivered(struct cairn_image *img, const struct cairn_rinode *r,
				   uint64_t off, uint64_t len, uint64_t keep_lo, uint64_t keep_hi)
{
	struct keep_range k = { keep_lo, keep_hi };

	if (off < r->size && len)
		(void)walk_pieces(img, r, off, len > r->size - off ? r->size : off + len,
				  deliver_chunk, &k);
}

int cairn_image_chunked_span(struct cairn_image *img, const struct cairn_rinode *r, uint64_t off,
			     uint64_t *lo, uint64_t *hi)
{
	struct cairn_rchunk c;
	uint64_t idx, start;
	int rc;

	if (off >= r->size)
		return -ENXIO;
	rc = cairn_image_chunk_at(img, r, off, &idx, &start, &c);
	if (rc)
		return rc;
	*lo = start;
	*hi = start < own_bytes(img, r) ? start + c.ulen : r->size;
	return c.codec == CAIRN_CODEC_ZSTD || c.codec == CAIRN_CODEC_LZ4 ? 0 : -ENOENT;
}

int64_t cairn_image_lseek_chunked(struct cairn_image *img, const struct cairn_rinode *r,
				  uint64_t off, int whence)
{
	/* Zero chunks are holes; everything else, the tail included, is data. The
	 * walk is bounded by the file's chunk count (checked against the table). */
	for (uint64_t pos = off; pos < r->size;) {
		struct cairn_rchunk c;
		uint64_t idx, start;
		int rc = cairn_image_chunk_at(img, r, pos, &idx, &start, &c);

		if (rc)
			return rc;
		if ((c.codec == CAIRN_CODEC_ZERO) == (whence == SEEK_HOLE))
			return (int64_t)pos;
		pos = start >= own_bytes(img, r) ? r->size : start + c.ulen;
	}
	return whence == SEEK_DATA ? -ENXIO : (int64_t)r->size;
}

void cairn_image_chunked_extent(struct cairn_image *img, const struct cairn_rinode *r,
				uint64_t *lo, uint64_t *hi)
{
	struct cairn_cache_hint h;

	file_hint(img, r, &h);
	if (h.hi <= h.lo && r->size > own_bytes(img, r)) { /* all in a fragment */
		struct cairn_rchunk c;

		if (!cairn_image_chunk_load(img, r->frag_ref, &c) && c.codec != CAIRN_CODEC_ZERO) {
			h.lo = c.disk_off;
			h.hi = c.disk_off + c.stored_len;
		}
	}
	*lo = h.lo;
	*hi = h.hi;
}

int cairn_image_chunked_ranges(struct cairn_image *img, const struct cairn_rinode *r,
			       cairn_chunk_range_cb fn, void *ctx)
{
	for (uint64_t pos = 0; pos < r->size;) {
		struct cairn_rchunk c;
		uint64_t idx, start, len;
		int rc = cairn_image_chunk_at(img, r, pos, &idx, &start, &c);

		if (rc)
			return rc;
		len = start >= own_bytes(img, r) ? r->size - start : c.ulen;
		if (c.codec != CAIRN_CODEC_ZERO) {
			rc = fn(ctx, start, len, c.disk_off, c.stored_len);
			if (rc)
				return rc;
		}
		pos = start + len;
	}
	return 0;
}
