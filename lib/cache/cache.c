/* SPDX-License-Identifier: MIT */
/*
 * The segment cache: public API and the read path.
 *
 * A read first tries the fast path: every segment it covers is READY, so it is
 * a hash lookup and a memcpy per segment under that segment's shard lock, with
 * no allocation, no syscall and no shared counter. Anything else goes to
 * slow_read(), which claims the missing segments (inserting them as FETCHING so
 * concurrent readers wait instead of fetching again), extends the claim for
 * small files and sequential streams, fetches each run of neighbouring claims
 * in one device request, and then waits for segments someone else is fetching.
 *
 * A failed fetch removes its segments from the table before anyone can see
 * them as data, and every reader waiting on them gets the error. Nothing of a
 * failed request stays cached, so the next read asks the device again.
 *
 * Over a verify device (c->verify) a fetch reads from below it and checks each
 * segment apart with the verify device's checks (check_run). A reader checks
 * the first segment it asked for on its thread. Everything else a fetch
 * brings (the read's further segments, the neighbours it was widened to,
 * readahead, prefetch) is held unchecked (SEG_UNCHECKED) and checked in the
 * background, or by the first reader that needs it if that comes first:
 * hashing runs on several cores and overlaps the next requests, and a reader
 * never waits behind hashing queued for bytes it did not ask for. The read's
 * further segments go to a worker; the speculative ones to the spare threads,
 * which hash without taking a segment (spare_check), so no reader ever waits
 * for them and the workers stay free to fetch. A bad granule fails its
 * segment only, for the reads that need it, and is fetched again by the next
 * one; a background check leaves it unchecked, for the first of those reads.
 * What the hashing costs the reads is counted (cairn_cache_stats
 * verify_wait_ns): a reader's own checks, and its waits on a segment from the
 * moment another thread began checking it (seg.check_t0), not its waits on
 * the device.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <cairn/error.h>
#include <cairn/verify.h>
#include "cache/cache_internal.h"

/* Defaults; the segment size is chosen by measurement, see docs/BENCHMARKS.md. */
#define DEFAULT_SEGMENT     (128u << 10)
#define DEFAULT_BUDGET      (64u << 20)
#define DEFAULT_MAX_IO      (1u << 20)
#define DEFAULT_RA_MAX      (4u << 20)
#define DEFAULT_THREADS     4u
#define DEFAULT_SMALL_FILE  (256u << 10)
#define MAX_THREADS         64u

static unsigned log2_exact(size_t v)
{
	unsigned s = 0;

	while ((1ull << s) < v)
		s++;
	return s;
}

int cairn_cache_new(struct cairn_bdev *dev, const struct cairn_cache_config *cfg,
		    struct cairn_cache **out)
{
	struct cairn_cache_config d = { 0 };
	struct cairn_cache *c;
	size_t S;
	int rc;

	if (!dev || !out)
		return -EINVAL;
	if (cfg)
		d = *cfg;
	S = d.segment_size ? d.segment_size : DEFAULT_SEGMENT;
	if (S < CAIRN_CACHE_SEGMENT_MIN || S > CAIRN_CACHE_SEGMENT_MAX || (S & (S - 1)))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->dev = dev;
	c->dev_size = cairn_bdev_size(dev);
	c->seg_size = S;
	c->seg_shift = log2_exact(S);
	c->budget = d.budget_bytes ? d.budget_bytes : DEFAULT_BUDGET;
	c->passthrough = c->budget == CAIRN_CACHE_OFF;
	c->max_io = (d.max_io ? d.max_io : DEFAULT_MAX_IO) / S * S;
	if (c->max_io < S)
		c->max_io = S;
	/* A stream's reads and readahead end on a max_io boundary (a file costs
	 * ceil(size / max_io) requests), but a larger max_io is for the hot prefix
	 * and profile prefetch of a remote image: rounding streams to 4 MiB there
	 * fetched Java Hello 46.1 MiB for 21.9 read, against 42.0 at 1 MiB. */
	c->ra_unit = c->max_io < DEFAULT_MAX_IO ? c->max_io : DEFAULT_MAX_IO / S * S;
	if (c->ra_unit < S)
		c->ra_unit = S;
	c->ra_max = d.readahead_max ? d.readahead_max : DEFAULT_RA_MAX;
	c->small_file = d.small_file ? d.small_file : DEFAULT_SMALL_FILE;
	c->nthreads = d.threads ? d.threads : DEFAULT_THREADS;
	if (!c->passthrough && cairn_bdev_verify_granule(dev) &&
	    cairn_bdev_verify_granule(dev) <= S && dev->below)
		c->verify = dev; /* both powers of two: every segment is whole granules */
	if (c->nthreads > MAX_THREADS)
		c->nthreads = MAX_THREADS;
	pthread_mutex_init(&c->lru_lock, NULL);
	pthread_mutex_init(&c->stream_lock, NULL);
	pthread_mutex_init(&c->job_lock, NULL);
	pthread_cond_init(&c->job_cond, NULL);
	pthread_cond_init(&c->idle_cond, NULL);
	if (!c->passthrough) {
		rc = segtable_init(c);
		if (!rc) {
			rc = arena_init(c);
			if (rc)
				segtable_destroy(c);
		}
		if (!rc) {
			rc = workers_start(c);
			if (rc) {
				segtable_destroy(c);
				arena_destroy(c);
			}
		}
		if (rc) {
			c->dev = NULL; /* the caller keeps it */
			cairn_cache_free(c);
			return rc;
		}
	}
	*out = c;
	return 0;
}

struct cairn_bdev *cairn_cache_release(struct cairn_cache *c)
{
	struct cairn_bdev *dev = c->dev;

	c->dev = NULL;
	cairn_cache_free(c);
	return dev;
}

void cairn_cache_free(struct cairn_cache *c)
{
	if (!c)
		return;
	workers_stop(c);
	segtable_destroy(c);
	arena_destroy(c);
	pthread_mutex_destroy(&c->lru_lock);
	pthread_mutex_destroy(&c->stream_lock);
	pthread_mutex_destroy(&c->job_lock);
	pthread_cond_destroy(&c->job_cond);
	pthread_cond_destroy(&c->idle_cond);
	if (c->dev)
		cairn_bdev_close(c->dev);
	free(c);
}

/* Copy the part of segment s that lies in [off, end) to buf (which holds off);
 * a NULL buf (a pinned read, which lends the segment instead) copies nothing. */
static void seg_copy(const struct cairn_cache *c, const struct seg *s, unsigned char *buf,
		     uint64_t off, uint64_t end)
{
	uint64_t base = s->idx << c->seg_shift;
	uint64_t a = off > base ? off : base;
	uint64_t b = end < base + s->len ? end : base + s->len;

	if (buf && b > a)
		memcpy(buf + (a - off), s->data + (a - base), (size_t)(b - a));
}

/* Account a hit on s (shard locked). Returns 1 on the first use of a
 * speculative segment: the caller then lets the stream detector look. */
static int note_hit(struct shard *sh, struct seg *s)
{
	s->referenced = 1;
	sh->hits++;
	if (s->from_ra) {
		s->from_ra = 0;
		sh->ra_used++;
		return 1;
	}
	return 0;
}

static int hint_valid(const struct cairn_cache_hint *h, uint64_t off)
{
	return h && h->hi > h->lo && off >= h->lo && off < h->hi;
}

size_t claim_range(struct cairn_cache *c, uint64_t lo_idx, uint64_t hi_idx, struct seg_vec *out)
{
	uint64_t last_dev = (c->dev_size - 1) >> c->seg_shift;
	size_t got = 0;

	if (hi_idx > last_dev)
		hi_idx = last_dev;
	for (uint64_t idx = lo_idx; idx <= hi_idx; idx++) {
		struct shard *sh = seg_shard(c, idx);
		struct seg *s;
		int full = 0;

		pthread_mutex_lock(&sh->lock);
		if (!seg_lookup(sh, idx)) {
			s = seg_insert_fetching(c, sh, idx, 1);
			if (!s) {
				full = 1;
			} else if (seg_vec_push(out, s)) {
				seg_unhash(c, sh, s); /* nobody saw it: the lock was held */
				free(s);
				full = 1;
			} else {
				s->from_ra = 1;
				got++;
			}
		}
		pthread_mutex_unlock(&sh->lock);
		if (full)
			break;
	}
	return got;
}

/* Under the shard lock: s is in the table and nobody has checked or taken it. */
static int still_unchecked(struct shard *sh, struct seg *s)
{
	return seg_lookup(sh, s->idx) == s && s->state == SEG_UNCHECKED;
}

void fail_claims(struct cairn_cache *c, struct seg **s, size_t n, int err)
{
	for (size_t i = 0; i < n; i++) {
		struct shard *sh = seg_shard(c, s[i]->idx);
		struct seg *dead;

		pthread_mutex_lock(&c->lru_lock); /* lock order: ring, then shard */
		pthread_mutex_lock(&sh->lock);
		lru_remove_locked(c, s[i]);
		seg_unhash(c, sh, s[i]);
		s[i]->state = SEG_FAILED;
		s[i]->err = err;
		dead = seg_unref_locked(s[i]); /* the table's reference */
		pthread_cond_broadcast(&sh->cond);
		pthread_mutex_unlock(&sh->lock);
		pthread_mutex_unlock(&c->lru_lock);
		if (dead)
			seg_destroy(c, dead);
	}
}

/* Fetched segments become `state`, READY or (not yet checked) UNCHECKED, each
 * one's length from its place on the device. An UNCHECKED one gets a reference
 * more, for the background check (check_spare drops it). */
static void publish_run(struct cairn_cache *c, struct seg **s, size_t n, uint64_t own_lo,
			uint64_t own_hi, uint8_t state)
{
	uint64_t spec = 0;

	for (size_t i = 0; i < n; i++) {
		struct shard *sh = seg_shard(c, s[i]->idx);
		uint64_t o = s[i]->idx << c->seg_shift;

		pthread_mutex_lock(&sh->lock);
		s[i]->len = (uint32_t)(c->dev_size - o < c->seg_size ? c->dev_size - o : c->seg_size);
		s[i]->state = state;
		s[i]->refs += state == SEG_UNCHECKED;
		if (s[i]->idx >= own_lo && s[i]->idx <= own_hi) {
			s[i]->referenced = 1;
			s[i]->from_ra = 0;
		} else {
			spec += s[i]->len;
		}
		pthread_cond_broadcast(&sh->cond);
		pthread_mutex_unlock(&sh->lock);
	}
	if (spec)
		atomic_fetch_add_explicit(&c->ra_bytes, spec, memory_order_relaxed);
	lru_add(c, s, n);
}

/* A run failed its digest check (a verify device below): fetch each segment
 * alone, so only the reads that need a bad granule fail, not every read that
 * happened to share the request. Costs requests only when bytes are bad. */
static int refetch_each(struct cairn_cache *c, struct seg **s, size_t n, uint64_t own_lo,
			uint64_t own_hi)
{
	int err = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t off = s[i]->idx << c->seg_shift;
		size_t len = (size_t)(c->dev_size - off < c->seg_size ? c->dev_size - off : c->seg_size);
		ssize_t r = cairn_bdev_read(c->dev, s[i]->data, len, off);

		atomic_fetch_add_explicit(&c->requests, 1, memory_order_relaxed);
		if (r == (ssize_t)len) {
			atomic_fetch_add_explicit(&c->bytes, len, memory_order_relaxed);
			publish_run(c, &s[i], 1, own_lo, own_hi, SEG_READY);
			continue;
		}
		atomic_fetch_add_explicit(&c->errors, 1, memory_order_relaxed);
		r = r < 0 ? r : -EIO;
		fail_claims(c, &s[i], 1, (int)r);
		if (!err)
			err = (int)r;
	}
	return err;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Check the len fetched bytes of s, which its caller holds FETCHING, against
 * their digests. Stamps when the check began, so a reader waiting for s can
 * tell its wait on the hash from its wait on the device; hash_ns (a reader's
 * own check; NULL on a worker) gets the time spent here. */
static int check_held(struct cairn_cache *c, struct seg *s, size_t len, uint64_t *hash_ns)
{
	uint64_t t0 = now_ns();
	int rc;

	s->check_t0 = t0; /* read by waiters only after s leaves FETCHING */
	rc = cairn_bdev_verify_check(c->verify, s->data, len, s->idx << c->seg_shift);
	if (hash_ns) {
		*hash_ns += now_ns() - t0;
		atomic_fetch_add_explicit(&c->verify_read_bytes, len, memory_order_relaxed);
	}
	return rc;
}

/* Check fetched segments against their digests (c->verify) one at a time, and
 * publish each good one at once (a bad one fails alone). The first error, or 0. */
static int check_segs(struct cairn_cache *c, struct seg **s, size_t n, uint64_t own_lo,
		      uint64_t own_hi, uint64_t *hash_ns)
{
	int err = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t off = s[i]->idx << c->seg_shift;
		size_t len = (size_t)(c->dev_size - off < c->seg_size ? c->dev_size - off : c->seg_size);
		int rc = check_held(c, s[i], len, hash_ns);

		if (rc) {
			atomic_fetch_add_explicit(&c->errors, 1, memory_order_relaxed);
			fail_claims(c, &s[i], 1, rc);
			err = err ? err : rc;
		} else {
			publish_run(c, &s[i], 1, own_lo, own_hi, SEG_READY);
		}
	}
	return err;
}

/* Check a segment its caller took from SEG_UNCHECKED (set it FETCHING, so
 * others wait) and make it READY, or fail it. 0 or the error. hash_ns: as
 * check_held's. */
static int check_taken(struct cairn_cache *c, struct seg *s, uint64_t *hash_ns)
{
	struct shard *sh = seg_shard(c, s->idx);
	int rc = check_held(c, s, s->len, hash_ns);

	if (rc) {
		atomic_fetch_add_explicit(&c->errors, 1, memory_order_relaxed);
		fail_claims(c, &s, 1, rc);
		return rc;
	}
	pthread_mutex_lock(&sh->lock);
	s->state = SEG_READY;
	pthread_cond_broadcast(&sh->cond);
	pthread_mutex_unlock(&sh->lock);
	return 0;
}

void check_spare(struct cairn_cache *c, struct seg **s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct shard *sh = seg_shard(c, s[i]->idx);
		int take;

		pthread_mutex_lock(&sh->lock);
		/* Not evicted (and not replaced), and no reader took it first. */
		take = still_unchecked(sh, s[i]);
		if (take)
			s[i]->state = SEG_FETCHING;
		pthread_mutex_unlock(&sh->lock);
		if (take)
			(void)check_taken(c, s[i], NULL); /* a failure is for the reads that need it */
		seg_release(c, s[i]);
	}
}

void spare_check(struct cairn_cache *c, struct seg **s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct shard *sh = seg_shard(c, s[i]->idx);
		int todo;

		pthread_mutex_lock(&sh->lock);
		todo = still_unchecked(sh, s[i]);
		pthread_mutex_unlock(&sh->lock);
		/* The data is immutable and our reference keeps it. Bad bytes, and
		 * bytes the check must patch, stay unchecked: the first read that
		 * needs them checks them and fails (or serves) them, exactly as if
		 * nobody had looked; a bad one is fetched again by the next read. */
		if (todo && !cairn_bdev_verify_match(c->verify, s[i]->data, s[i]->len,
						     s[i]->idx << c->seg_shift)) {
			pthread_mutex_lock(&sh->lock);
			if (still_unchecked(sh, s[i])) {
				s[i]->state = SEG_READY;
				pthread_cond_broadcast(&sh->cond);
			}
			pthread_mutex_unlock(&sh->lock);
		}
		seg_release(c, s[i]);
	}
}

/* A verified run that was just read. The first segment its reader (own_lo <=
 * own_hi) asked for is checked on its thread; the rest are published
 * unchecked and checked in the background: its own further segments on a
 * worker, from the last one back, while the reader goes on from the first
 * (wait_and_copy), so a large read is hashed on two cores; the neighbours its
 * read was widened to, and a worker's whole readahead run, by the spare
 * checks, on CPUs nobody else wants (no reader waits for them yet). A reader
 * that needs one before it is checked checks it itself, so it never waits
 * behind hashing queued for others. Returns the error of the first own
 * segment (the others show in their state). */
static int check_run(struct cairn_cache *c, struct seg **s, size_t n, uint64_t own_lo,
		     uint64_t own_hi, uint64_t *hash_ns)
{
	size_t a = 0, b;
	int err;

	if (own_lo > own_hi) {
		publish_run(c, s, n, own_lo, own_hi, SEG_UNCHECKED);
		queue_spare(c, s, n);
		return 0;
	}
	while (a < n && s[a]->idx < own_lo)
		a++;
	for (b = a; b < n && s[b]->idx <= own_hi; b++)
		;
	if (a)
		publish_run(c, s, a, own_lo, own_hi, SEG_UNCHECKED);
	if (b < n)
		publish_run(c, s + b, n - b, own_lo, own_hi, SEG_UNCHECKED);
	queue_spare(c, s, a);
	queue_spare(c, s + b, n - b);
	if (b - a > 1) { /* queued last: the first a worker takes */
		publish_run(c, s + a + 1, b - a - 1, own_lo, own_hi, SEG_UNCHECKED);
		queue_checks(c, s + a + 1, b - a - 1);
		b = a + 1;
	}
	err = check_segs(c, s + a, b - a, own_lo, own_hi, hash_ns);
	return err;
}

/* Reads [off, off+want) into dst from the device; c->verify: from below it
 * (checked per segment afterwards). want, or a negative errno. */
static ssize_t read_run(struct cairn_cache *c, unsigned char *dst, uint64_t want, uint64_t off)
{
	int rc;

	if (!c->verify)
		return cairn_bdev_read(c->dev, dst, (size_t)want, off);
	rc = cairn_bdev_read_full(fetch_dev(c), dst, (size_t)want, off);
	return rc ? rc : (ssize_t)want;
}

int fetch_run(struct cairn_cache *c, struct seg **s, size_t n, uint64_t own_lo, uint64_t own_hi,
	      uint64_t *hash_ns)
{
	uint64_t off = s[0]->idx << c->seg_shift;
	uint64_t want = (uint64_t)n << c->seg_shift;
	unsigned char *tmp;
	int err;

	if (want > c->dev_size - off)
		want = c->dev_size - off;
	evict_to_budget(c, n << c->seg_shift);
	err = seg_alloc_run(c, s, n, &tmp);
	if (!err) {
		unsigned char *dst = tmp ? tmp : s[0]->data;
		ssize_t r;

		r = read_run(c, dst, want, off);
		atomic_fetch_add_explicit(&c->requests, 1, memory_order_relaxed);
		if (r >= 0 && (uint64_t)r == want) {
			atomic_fetch_add_explicit(&c->bytes, want, memory_order_relaxed);
		} else {
			atomic_fetch_add_explicit(&c->errors, 1, memory_order_relaxed);
			err = r < 0 ? (int)r : -EIO; /* short before the device end */
		}
		if (!err && tmp)
			for (size_t i = 0; i < n; i++) {
				uint64_t o = (uint64_t)i << c->seg_shift;
				uint64_t l = want - o < c->seg_size ? want - o : c->seg_size;

				memcpy(s[i]->data, tmp + o, (size_t)l);
			}
		util_bufpool_put(&c->bounce, tmp);
		if (err == -CAIRN_EDIGEST && n > 1)
			return refetch_each(c, s, n, own_lo, own_hi);
	}
	if (err) {
		fail_claims(c, s, n, err);
		return err;
	}
	if (c->verify)
		return check_run(c, s, n, own_lo, own_hi, hash_ns);
	publish_run(c, s, n, own_lo, own_hi, SEG_READY);
	return 0;
}

/* The device fetches read: below the verify device when the cache checks
 * segments itself. */
struct cairn_bdev *fetch_dev(struct cairn_cache *c)
{
	return c->verify ? c->verify->below : c->dev;
}

int fetch_vec(struct cairn_cache *c, struct seg **s, size_t n)
{
	struct cairn_bdev_iov *v = malloc(n * sizeof(*v));
	int err = v ? 0 : -ENOMEM;
	uint64_t total = 0;

	evict_to_budget(c, n << c->seg_shift);
	/* One slot each: the entries are apart on the device, so they need not
	 * be together in memory, and no bounce buffer is needed. */
	for (size_t i = 0; i < n && !err; i++) {
		uint64_t off = s[i]->idx << c->seg_shift;
		unsigned char *tmp;

		err = seg_alloc_run(c, s + i, 1, &tmp);
		v[i] = (struct cairn_bdev_iov){ s[i]->data,
			(size_t)(c->dev_size - off < c->seg_size ? c->dev_size - off : c->seg_size), off };
		total += v[i].len;
	}
	if (!err) {
		err = cairn_bdev_readv(fetch_dev(c), v, (unsigned)n);
		atomic_fetch_add_explicit(&c->requests, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(err ? &c->errors : &c->bytes, err ? 1 : total,
					  memory_order_relaxed);
	}
	free(v);
	if (err) {
		fail_claims(c, s, n, err);
		return err;
	}
	if (c->verify)
		return check_run(c, s, n, 1, 0, NULL);
	publish_run(c, s, n, 1, 0, SEG_READY);
	return 0;
}

static int cmp_seg_idx(const void *a, const void *b)
{
	const struct seg *x = *(struct seg *const *)a, *y = *(struct seg *const *)b;

	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Fetch sorted claims: each run of consecutive segments, up to max_io, is one
 * request. A reader waits for all of them, so every run but the first goes to
 * the workers ahead of readahead and travels beside the one fetched here: a
 * read that is not segment-aligned (9 segments for 1 MiB) or that meets a
 * segment claimed by another read costs one round trip, not one per run (20 ms
 * each to a remote server). Errors show in the claims' state; hash_ns gets the
 * time the reader hashed here. */
static void fetch_claims(struct cairn_cache *c, struct seg **s, size_t n, uint64_t own_lo,
			 uint64_t own_hi, uint64_t *hash_ns)
{
	size_t per = c->max_io >> c->seg_shift, first = 0;

	for (size_t i = 0; i < n;) {
		size_t k = 1;

		while (i + k < n && k < per && s[i + k]->idx == s[i + k - 1]->idx + 1)
			k++;
		if (i == 0)
			first = k;
		else
			queue_demand(c, s + i, k, own_lo, own_hi);
		i += k;
	}
	if (first)
		(void)fetch_run(c, s, first, own_lo, own_hi, hash_ns);
}

/* Claim and queue the readahead a plan asks for, from `from` on. */
static void start_readahead(struct cairn_cache *c, const struct ra_plan *p, uint64_t from)
{
	uint64_t lo = p->ra_lo > from ? p->ra_lo : from;
	struct seg_vec v;

	if (p->ra_hi <= lo)
		return;
	seg_vec_init(&v);
	claim_range(c, lo >> c->seg_shift, (p->ra_hi - 1) >> c->seg_shift, &v);
	queue_claims(c, v.v, v.n);
	seg_vec_free(&v);
}

/* Extend a missing read: small files whole, the rest of a nearly read file,
 * and a sequential stream up to the next max_io boundary. */
static void plan_sync(const struct cairn_cache *c, uint64_t off, uint64_t end,
		      const struct cairn_cache_hint *hint, const struct ra_plan *p,
		      uint64_t *want_lo, uint64_t *want_hi)
{
	*want_lo = off;
	*want_hi = end;
	if (hint_valid(hint, off)) {
		uint64_t hhi = hint->hi < c->dev_size ? hint->hi : c->dev_size;

		if (hhi - hint->lo <= c->small_file) {
			*want_lo = hint->lo;
			*want_hi = hhi > end ? hhi : end;
		} else if (hhi - off <= c->small_file && hhi > end) {
			*want_hi = hhi;
		}
	}
	if (p->sync_hi > *want_hi)
		*want_hi = p->sync_hi;
	if (*want_hi - end > c->max_io)
		*want_hi = end + c->max_io;
	if (off - *want_lo > c->max_io)
		*want_lo = off - c->max_io;
}

/* Wait (shard locked) until s leaves SEG_FETCHING. Over a verify device, the
 * part of the wait after another thread began checking s is added to hash_ns:
 * this read waited on the hash, not on the device. */
static void wait_fetched(struct cairn_cache *c, struct shard *sh, struct seg *s,
			 uint64_t *hash_ns)
{
	uint64_t t0;

	if (s->state != SEG_FETCHING)
		return;
	t0 = c->verify ? now_ns() : 0;
	while (s->state == SEG_FETCHING)
		pthread_cond_wait(&sh->cond, &sh->lock);
	if (c->verify && s->check_t0)
		*hash_ns += now_ns() - (s->check_t0 > t0 ? s->check_t0 : t0);
}

/* Wait for a segment someone else fetches, copy from it, drop our reference.
 * One that is (or becomes) UNCHECKED we take and check here: this read needs
 * it now, and whoever else needs it waits for our check. hash_ns gets the time
 * this read spent hashing, or waiting for another thread's hash of s. */
static int wait_and_copy(struct cairn_cache *c, struct seg *s, unsigned char *buf,
			 uint64_t off, uint64_t end, uint64_t *hash_ns)
{
	struct shard *sh = seg_shard(c, s->idx);
	uint64_t idx = s->idx;
	struct seg *dead;
	int err = 0, drop;

	pthread_mutex_lock(&sh->lock);
	for (;;) {
		wait_fetched(c, sh, s, hash_ns);
		if (s->state != SEG_UNCHECKED)
			break;
		s->state = SEG_FETCHING;
		pthread_mutex_unlock(&sh->lock);
		(void)check_taken(c, s, hash_ns); /* READY or FAILED */
		pthread_mutex_lock(&sh->lock);
	}
	if (s->state == SEG_READY)
		seg_copy(c, s, buf, off, end);
	else
		err = s->err;
	dead = seg_unref_locked(s);
	drop = !dead && seg_drop_due(c, s);
	pthread_mutex_unlock(&sh->lock);
	if (dead)
		seg_destroy(c, dead);
	else if (drop)
		seg_drop_delivered(c, idx);
	return err;
}

static ssize_t slow_read(struct cairn_cache *c, unsigned char *buf, uint64_t off, uint64_t end,
			 uint64_t idx, const struct cairn_cache_hint *hint, int ra_touch)
{
	uint64_t first = off >> c->seg_shift, last = (end - 1) >> c->seg_shift;
	struct seg_vec own, waits, all, *fetch_list = &own;
	struct ra_plan plan = { 0 };
	uint64_t ra_from = (last + 1) << c->seg_shift, hash_ns = 0;
	int err = 0, miss = 0;

	seg_vec_init(&own);
	seg_vec_init(&waits);
	for (; idx <= last; idx++) {
		struct shard *sh = seg_shard(c, idx);
		struct seg *s;

		pthread_mutex_lock(&sh->lock);
		s = seg_lookup(sh, idx);
		if (s && seg_forget_gone(c, sh, s))
			s = NULL; /* the reader dropped its copy: fetch it again */
		if (s && s->state == SEG_READY) {
			ra_touch |= note_hit(sh, s);
			seg_copy(c, s, buf, off, end);
		} else if (s) { /* FETCHING, or UNCHECKED: wait_and_copy checks it */
			if (seg_vec_push(&waits, s)) {
				err = -ENOMEM;
			} else {
				s->refs++;
				sh->waits += s->state == SEG_FETCHING;
				ra_touch |= note_hit(sh, s);
			}
		} else {
			s = seg_insert_fetching(c, sh, idx, 2); /* table + this reader */
			if (!s) {
				err = -ENOMEM;
			} else if (seg_vec_push(&own, s)) {
				seg_unhash(c, sh, s);
				free(s);
				err = -ENOMEM;
			} else {
				sh->misses++;
				miss = 1;
			}
		}
		pthread_mutex_unlock(&sh->lock);
		if (err)
			break;
	}

	if (!err && (miss || ra_touch))
		stream_consult(c, off, (size_t)(end - off), hint, &plan);
	if (!err && miss) {
		uint64_t want_lo, want_hi;

		/* Extension claims join ours in one sorted list for fetching. Only the
		 * table holds them, so after the fetch they may already be evicted:
		 * afterwards we touch only our own claims (own.v), never these. */
		plan_sync(c, off, end, hint, &plan, &want_lo, &want_hi);
		seg_vec_init(&all);
		for (size_t i = 0; i < own.n && !err; i++)
			err = seg_vec_push(&all, own.v[i]);
		if (!err && (want_lo >> c->seg_shift) < first)
			claim_range(c, want_lo >> c->seg_shift, first - 1, &all);
		if (!err && want_hi > (last + 1) << c->seg_shift) {
			claim_range(c, last + 1, (want_hi - 1) >> c->seg_shift, &all);
			ra_from = want_hi;
		}
		if (err) { /* could not list our claims: fetch them as they are */
			seg_vec_free(&all);
		} else {
			qsort(all.v, all.n, sizeof(all.v[0]), cmp_seg_idx);
			fetch_list = &all;
		}
	}
	/* Our own request first (the reader is waiting on it), readahead after.
	 * A failure shows in our own claims' state below; one that hit only the
	 * extension claims is not this read's (a bad granule next door must not
	 * fail it). */
	if (fetch_list->n)
		fetch_claims(c, fetch_list->v, fetch_list->n, first, last, &hash_ns);
	if (fetch_list == &all)
		seg_vec_free(&all);
	/* Readahead starts past this read's own segments and the ones it was
	 * widened to: one that failed its check (its own on this thread, a
	 * neighbour on a worker) may be out of the table by now, and must not be
	 * fetched again for it. */
	if (!err && plan.ra_hi)
		start_readahead(c, &plan, ra_from);
	for (size_t i = 0; i < own.n; i++) {
		int rc = wait_and_copy(c, own.v[i], buf, off, end, &hash_ns); /* a worker may fetch it */

		if (rc && !err)
			err = rc;
	}
	for (size_t i = 0; i < waits.n; i++) {
		int rc = wait_and_copy(c, waits.v[i], buf, off, end, &hash_ns);

		if (rc && !err)
			err = rc;
	}
	seg_vec_free(&own);
	seg_vec_free(&waits);
	if (hash_ns)
		atomic_fetch_add_explicit(&c->verify_wait_ns, hash_ns, memory_order_relaxed);
	return err ? err : (ssize_t)(end - off);
}

static ssize_t passthrough_read(struct cairn_cache *c, void *buf, size_t len, uint64_t off)
{
	ssize_t n = cairn_bdev_read(c->dev, buf, len, off);

	atomic_fetch_add_explicit(&c->pt_reads, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->requests, 1, memory_order_relaxed);
	if (n < 0)
		atomic_fetch_add_explicit(&c->errors, 1, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&c->bytes, (uint64_t)n, memory_order_relaxed);
	return n;
}

/* The fast path: copies the ready segments of [off, end) from the first on, and
 * returns the index of the first that is not ready (past the last: all hits). */
static uint64_t read_hits(struct cairn_cache *c, void *buf, uint64_t off, uint64_t end,
			  int *ra_touch)
{
	uint64_t idx, last = (end - 1) >> c->seg_shift;

	for (idx = off >> c->seg_shift; idx <= last; idx++) {
		struct shard *sh = seg_shard(c, idx);
		struct seg *s;

		pthread_mutex_lock(&sh->lock);
		s = seg_lookup(sh, idx);
		if (!s || s->state != SEG_READY) {
			pthread_mutex_unlock(&sh->lock);
			break;
		}
		*ra_touch |= note_hit(sh, s);
		seg_copy(c, s, buf, off, end);
		pthread_mutex_unlock(&sh->lock);
	}
	return idx;
}

ssize_t cairn_cache_read_cached(struct cairn_cache *c, void *buf, size_t len, uint64_t off)
{
	int ra_touch = 0;

	if (off >= c->dev_size || len == 0)
		return 0;
	if (c->passthrough)
		return -EAGAIN;
	if (len > c->dev_size - off)
		len = (size_t)(c->dev_size - off);
	/* No stream is consulted: such a read is nobody's stream (it copies what
	 * another read fetched), so it must not start readahead. */
	if (read_hits(c, buf, off, off + len, &ra_touch) <= (off + len - 1) >> c->seg_shift)
		return -EAGAIN;
	return (ssize_t)len;
}

/* A read served from cached segments alone used speculative ones: let the
 * stream detector see it, and read further ahead if it says so. */
static void readahead_on_hit(struct cairn_cache *c, uint64_t off, size_t len,
			     const struct cairn_cache_hint *hint)
{
	struct ra_plan plan;

	stream_consult(c, off, len, hint, &plan);
	start_readahead(c, &plan, 0);
}

/* A read of [off, off+len), cut to the device, into buf; a NULL buf (a fetch
 * for the reads that follow) copies nothing. */
static ssize_t read_range(struct cairn_cache *c, void *buf, size_t len, uint64_t off,
			  const struct cairn_cache_hint *hint)
{
	uint64_t end, idx, last;
	int ra_touch = 0;

	if (off >= c->dev_size || len == 0)
		return 0;
	if (len > c->dev_size - off)
		len = (size_t)(c->dev_size - off);
	if (c->passthrough) /* keeps nothing: a fetch would be a wasted request */
		return buf ? passthrough_read(c, buf, len, off) : 0;
	end = off + len;
	last = (end - 1) >> c->seg_shift;
	idx = read_hits(c, buf, off, end, &ra_touch);
	if (idx <= last)
		return slow_read(c, buf, off, end, idx, hint, ra_touch);
	if (ra_touch)
		readahead_on_hit(c, off, len, hint);
	return (ssize_t)len;
}

ssize_t cairn_cache_read(struct cairn_cache *c, void *buf, size_t len, uint64_t off,
			 const struct cairn_cache_hint *hint)
{
	return read_range(c, buf, len, off, hint);
}

ssize_t cairn_cache_fetch(struct cairn_cache *c, size_t len, uint64_t off,
			  const struct cairn_cache_hint *hint)
{
	return read_range(c, NULL, len, off, hint);
}

/* The fast path of a pinned read: holds the ready segments from idx to last
 * (a reference each, listed in pins), and returns the index of the first that
 * is not ready (past last: all held). */
static uint64_t pin_hits(struct cairn_cache *c, uint64_t idx, uint64_t last,
			 struct seg_vec *pins, int *ra_touch)
{
	for (; idx <= last; idx++) {
		struct shard *sh = seg_shard(c, idx);
		struct seg *s;
		int held = 0;

		pthread_mutex_lock(&sh->lock);
		s = seg_lookup(sh, idx);
		if (s && s->state == SEG_READY && !seg_vec_push(pins, s)) {
			s->refs++;
			*ra_touch |= note_hit(sh, s);
			held = 1;
		}
		pthread_mutex_unlock(&sh->lock);
		if (!held)
			break;
	}
	return idx;
}

#define LEND_INLINE_IOV 16u /* 1 MiB FUSE reads over 128 KiB segments need 9 */

/* Call fn with iovecs over the held segments' bytes in [off, end), one per
 * run of segments that lie back to back in memory (arena slots of one fetch). */
static int lend(struct cairn_cache *c, const struct seg_vec *pins, uint64_t off,
		uint64_t end, cairn_iov_fn fn, void *ctx)
{
	struct iovec inline_iov[LEND_INLINE_IOV], *iov = inline_iov;
	int n = 0, rc;

	if (pins->n > LEND_INLINE_IOV && !(iov = malloc(pins->n * sizeof(*iov))))
		return -ENOMEM;
	for (size_t i = 0; i < pins->n; i++) {
		const struct seg *s = pins->v[i];
		uint64_t base = s->idx << c->seg_shift;
		uint64_t a = off > base ? off : base;
		uint64_t b = end < base + s->len ? end : base + s->len;
		unsigned char *p = s->data + (a - base);

		if (n && (unsigned char *)iov[n - 1].iov_base + iov[n - 1].iov_len == p)
			iov[n - 1].iov_len += (size_t)(b - a);
		else
			iov[n++] = (struct iovec){ p, (size_t)(b - a) };
	}
	atomic_fetch_add_explicit(&c->lent_bytes, end - off, memory_order_relaxed);
	rc = fn(ctx, iov, n, (size_t)(end - off));
	if (iov != inline_iov)
		free(iov);
	return rc;
}

int cairn_cache_read_pinned(struct cairn_cache *c, size_t len, uint64_t off,
			    const struct cairn_cache_hint *hint, cairn_iov_fn fn, void *ctx)
{
	uint64_t end, idx, last;
	struct seg_vec pins;
	int ra_touch = 0, rc = 0;

	if (c->passthrough || off >= c->dev_size || len == 0)
		return CAIRN_CACHE_COPY;
	if (len > c->dev_size - off)
		len = (size_t)(c->dev_size - off);
	end = off + len;
	last = (end - 1) >> c->seg_shift;
	seg_vec_init(&pins);
	idx = pin_hits(c, off >> c->seg_shift, last, &pins, &ra_touch);
	if (idx > last && ra_touch)
		readahead_on_hit(c, off, len, hint);
	/* Fetch the rest as a read would, copying nothing, then hold it. Between
	 * the two another read may evict it, or drop it once delivered: try once
	 * more, then let the caller copy. */
	for (int tries = 0; idx <= last && tries < 2 && !rc; tries++) {
		ssize_t got = slow_read(c, NULL, off, end, idx, hint, ra_touch);

		ra_touch = 0;
		if (got < 0)
			rc = (int)got;
		else
			idx = pin_hits(c, idx, last, &pins, &ra_touch);
	}
	if (!rc)
		rc = idx <= last ? CAIRN_CACHE_COPY : lend(c, &pins, off, end, fn, ctx);
	for (size_t i = 0; i < pins.n; i++)
		seg_release(c, pins.v[i]);
	seg_vec_free(&pins);
	return rc;
}

void cairn_cache_prefetch(struct cairn_cache *c, uint64_t off, uint64_t len)
{
	struct seg_vec v;

	if (c->passthrough || off >= c->dev_size || len == 0)
		return;
	if (len > c->dev_size - off)
		len = c->dev_size - off;
	if (len > c->budget)
		len = c->budget; /* more would only evict its own beginning */
	/* Claimed now, fetched in order by the workers: a read of a part not yet
	 * fetched waits for it instead of sending a small request of its own that
	 * would cut the prefetch's large ones in pieces. The prefix is laid out in
	 * the order it is first read, so such a wait is short. */
	seg_vec_init(&v);
	claim_range(c, off >> c->seg_shift, (off + len - 1) >> c->seg_shift, &v);
	queue_claims(c, v.v, v.n);
	seg_vec_free(&v);
}

void cairn_cache_prime(struct cairn_cache *c, const void *buf, size_t len, uint64_t off)
{
	uint64_t end = off + len, first, stop;
	struct seg_vec v;

	if (c->passthrough || off >= c->dev_size || len == 0)
		return;
	if (end > c->dev_size)
		end = c->dev_size;
	/* Whole segments only; the device's last one may be short. */
	first = (off + c->seg_size - 1) >> c->seg_shift;
	stop = end == c->dev_size ? (end + c->seg_size - 1) >> c->seg_shift : end >> c->seg_shift;
	if (first >= stop)
		return;
	seg_vec_init(&v);
	claim_range(c, first, stop - 1, &v);
	for (size_t i = 0; i < v.n; i++) {
		struct seg *s = v.v[i];
		uint64_t o = s->idx << c->seg_shift;
		size_t n = (size_t)(c->dev_size - o < c->seg_size ? c->dev_size - o : c->seg_size);
		unsigned char *tmp;

		evict_to_budget(c, c->seg_size);
		if (seg_alloc_run(c, &s, 1, &tmp)) {
			fail_claims(c, &s, 1, -ENOMEM);
			continue;
		}
		memcpy(s->data, (const unsigned char *)buf + (o - off), n);
		/* about to be read: not speculative */
		publish_run(c, &s, 1, first, stop - 1, SEG_READY);
	}
	seg_vec_free(&v);
}

void cairn_cache_delivered(struct cairn_cache *c, uint64_t off, uint64_t len)
{
	uint64_t end;

	if (c->passthrough || off >= c->dev_size || !len)
		return;
	end = len > c->dev_size - off ? c->dev_size : off + len;
	for (uint64_t idx = off >> c->seg_shift; idx <= (end - 1) >> c->seg_shift; idx++) {
		struct shard *sh = seg_shard(c, idx);
		uint64_t base = idx << c->seg_shift, a, b;
		struct seg *s;
		int full = 0;

		a = off > base ? off : base;
		b = end < base + c->seg_size ? end : base + c->seg_size;
		pthread_mutex_lock(&sh->lock);
		s = seg_lookup(sh, idx);
		if (s && s->state == SEG_READY) {
			/* The 32nds of the segment wholly inside [a, b), the last one
			 * counting as whole when b reaches the segment's valid end. */
			uint64_t g = c->seg_size / 32, lo = (a - base + g - 1) / g;
			uint64_t hi = b - base >= s->len ? 32 : (b - base) / g;

			for (uint64_t i = lo; i < hi; i++)
				s->delivered |= 1u << i;
			s->delivered &= seg_all_delivered(c, s);
			full = s->delivered == seg_all_delivered(c, s);
		}
		pthread_mutex_unlock(&sh->lock);
		if (full)
			seg_drop_delivered(c, idx);
	}
}

void cairn_cache_drain(struct cairn_cache *c)
{
	if (c->passthrough)
		return;
	workers_drain(c);
	/* Fetches that finished after the last eviction pass may have left the
	 * cache over budget by their slack; once quiet, it is held to the budget. */
	evict_to_budget(c, 0);
}

void cairn_cache_lower_budget(struct cairn_cache *c, size_t bytes)
{
	if (c->passthrough || !bytes || bytes >= c->budget)
		return;
	workers_drain(c);
	/* Taken by every worker before its next job, so they see the new value. */
	pthread_mutex_lock(&c->job_lock);
	c->budget = bytes;
	pthread_mutex_unlock(&c->job_lock);
	evict_to_budget(c, 0);
}

void cairn_cache_get_stats(struct cairn_cache *c, struct cairn_cache_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!c->passthrough)
		for (unsigned i = 0; i < CACHE_SHARDS; i++) {
			struct shard *sh = &c->shards[i];

			pthread_mutex_lock(&sh->lock);
			out->hits += sh->hits; /* waits are counted in hits */
			out->misses += sh->misses;
			out->waits += sh->waits;
			out->readahead_used += sh->ra_used;
			pthread_mutex_unlock(&sh->lock);
		}
	out->misses += atomic_load_explicit(&c->pt_reads, memory_order_relaxed);
	out->requests = atomic_load_explicit(&c->requests, memory_order_relaxed);
	out->bytes = atomic_load_explicit(&c->bytes, memory_order_relaxed);
	out->readahead_bytes = atomic_load_explicit(&c->ra_bytes, memory_order_relaxed);
	out->readahead_wasted = atomic_load_explicit(&c->ra_wasted, memory_order_relaxed);
	out->evictions = atomic_load_explicit(&c->evictions, memory_order_relaxed);
	out->dropped = atomic_load_explicit(&c->dropped, memory_order_relaxed);
	out->resident_bytes = atomic_load_explicit(&c->resident, memory_order_relaxed);
	out->errors = atomic_load_explicit(&c->errors, memory_order_relaxed);
	out->verify_wait_ns = atomic_load_explicit(&c->verify_wait_ns, memory_order_relaxed);
	out->verify_read_bytes = atomic_load_explicit(&c->verify_read_bytes, memory_order_relaxed);
	out->lent_bytes = atomic_load_explicit(&c->lent_bytes, memory_order_relaxed);
}

struct cairn_bdev *cairn_cache_bdev(struct cairn_cache *c) { return c->dev; }
size_t cairn_cache_segment_size(const struct cairn_cache *c) { return c->seg_size; }
size_t cairn_cache_budget(const struct cairn_cache *c) { return c->budget; }
