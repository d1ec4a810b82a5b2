/* SPDX-License-Identifier: MIT */
/* Segment cache: correctness, merging, small files, readahead, single-flight,
 * budget, pass-through, prefetch. Devices: mem -> [delay] -> stats -> cache. */
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>
#include "cache/cache_internal.h"
#include "cache_test_util.h"
#include "util/tests/iov.h"
#include "util/tests/resident.h"

struct rig {
	unsigned char *src;
	size_t size;
	struct cairn_bdev *stats;  /* not owned: inside the cache's stack */
	struct cairn_cache *cache;
};

static void rig_open(struct rig *r, size_t size, const struct cairn_cache_config *cfg,
		     uint64_t delay_ns)
{
	struct cairn_bdev *m, *d;

	r->size = size;
	r->src = make_source(size, size * 31 + 7);
	assert_non_null(r->src);
	assert_int_equal(cairn_bdev_mem_new(r->src, size, 0, &m), 0);
	if (delay_ns) {
		struct cairn_delay_config dc = { .latency_ns = delay_ns };

		assert_int_equal(cairn_bdev_delay_new(m, &dc, &d), 0);
		m = d;
	}
	assert_int_equal(cairn_bdev_stats_new(m, &r->stats), 0);
	assert_int_equal(cairn_cache_new(r->stats, cfg, &r->cache), 0);
}

static void rig_close(struct rig *r)
{
	cairn_cache_free(r->cache);
	free(r->src);
}

static uint64_t dev_requests(struct rig *r)
{
	struct cairn_bdev_counters c;

	assert_int_equal(cairn_bdev_get_stats(r->stats, &c), 0);
	return c.requests;
}

static void check_read(struct rig *r, uint64_t off, size_t len, const struct cairn_cache_hint *h)
{
	unsigned char *buf = malloc(len + 1);
	size_t want = off >= r->size ? 0 : (len < r->size - off ? len : (size_t)(r->size - off));

	assert_non_null(buf);
	assert_int_equal(cairn_cache_read(r->cache, buf, len, off, h), (ssize_t)want);
	if (want)
		assert_memory_equal(buf, r->src + off, want);
	free(buf);
}

static void random_reads(size_t seg, size_t budget, size_t size)
{
	struct cairn_cache_config cfg = { .segment_size = seg, .budget_bytes = budget };
	struct rig r;
	uint64_t rng = seg * 977 + budget;

	rig_open(&r, size, &cfg, 0);
	for (int i = 0; i < TEST_SCALE(800); i++) {
		uint64_t off = rng_next(&rng) % (size + 100);
		size_t len = (size_t)(rng_next(&rng) % (i % 10 == 0 ? 700000 : 20000)) + 1;

		check_read(&r, off, len, NULL);
	}
	cairn_cache_drain(r.cache);
	rig_close(&r);
}

static void test_random_reads(void **state)
{
	/* Segment sizes on both memory paths (malloc below 64 KiB, mmap from it),
	 * roomy and tight budgets, and a device size that is not segment-aligned. */
	const size_t segs[] = { 512, 4096, 32768, 65536, 131072, 1u << 20 };

	for (size_t i = 0; i < sizeof(segs) / sizeof(segs[0]); i++) {
		print_message("segment %zu\n", segs[i]);
		random_reads(segs[i], 0, 5 * 1000 * 1000 + 123);
		random_reads(segs[i], 2 * segs[i] > (1u << 20) ? 2 * segs[i] : 1u << 20,
			     3 * 1000 * 1000 + 45);
	}
}

static void test_second_read_hits(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 65536 };
	struct cairn_cache_stats st;
	struct rig r;
	uint64_t n;

	rig_open(&r, 1u << 20, &cfg, 0);
	check_read(&r, 70000, 100000, NULL);
	cairn_cache_drain(r.cache);
	n = dev_requests(&r);
	check_read(&r, 70000, 100000, NULL);
	check_read(&r, 65536, 4096, NULL);
	assert_int_equal(dev_requests(&r), n);
	cairn_cache_get_stats(r.cache, &st);
	assert_true(st.hits >= 3);
	assert_true(st.misses >= 2);
	assert_int_equal(st.errors, 0);
	assert_int_equal(st.verify_wait_ns, 0); /* no verify device: nothing hashed */
	assert_int_equal(st.verify_read_bytes, 0);
	rig_close(&r);
}

/* A fetch is one request for its neighbouring misses and leaves the bytes
 * cached: the reads after it make none; on a pass-through cache it sends none. */
static void test_fetch(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 65536 };
	struct cairn_cache_config off = { .budget_bytes = CAIRN_CACHE_OFF };
	struct rig r;
	uint64_t n;

	rig_open(&r, 1u << 20, &cfg, 0);
	n = dev_requests(&r);
	assert_int_equal(cairn_cache_fetch(r.cache, 300000, 70000, NULL), 300000);
	assert_int_equal(dev_requests(&r) - n, 1);
	cairn_cache_drain(r.cache);
	n = dev_requests(&r);
	check_read(&r, 70000, 300000, NULL);
	assert_int_equal(dev_requests(&r), n);
	assert_int_equal(cairn_cache_fetch(r.cache, 4096, 1u << 20, NULL), 0); /* past the end */
	rig_close(&r);
	rig_open(&r, 1u << 20, &off, 0);
	assert_int_equal(cairn_cache_fetch(r.cache, 4096, 0, NULL), 0);
	assert_int_equal(dev_requests(&r), 0);
	rig_close(&r);
}

/* 8 missing segments next to each other are one device request. */
static void test_merge_neighbours(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 4096, .max_io = 1u << 20 };
	struct cairn_cache_stats st;
	struct rig r;

	rig_open(&r, 4u << 20, &cfg, 0);
	check_read(&r, 3u << 20, 8 * 4096, NULL);
	assert_int_equal(dev_requests(&r), 1);
	/* a read with a cached hole in the middle: two runs, two requests */
	check_read(&r, (3u << 20) + 9 * 4096, 4096, NULL);
	assert_int_equal(dev_requests(&r), 2);
	check_read(&r, (3u << 20) + 6 * 4096, 6 * 4096, NULL);
	assert_int_equal(dev_requests(&r), 3); /* only segment 8 was missing */
	/* a 3 MiB read with max_io 1 MiB: three requests */
	check_read(&r, 0, 3u << 20, NULL);
	assert_int_equal(dev_requests(&r), 6);
	cairn_cache_get_stats(r.cache, &st);
	assert_int_equal(st.requests, 6);
	rig_close(&r);
}

/* A small file is read whole on its first miss; the rest of a big one when near its end. */
static void test_small_file_whole(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 4096 };
	struct cairn_cache_hint h = { .lo = 40960, .hi = 40960 + 100000 };
	struct cairn_cache_hint big = { .lo = 1u << 20, .hi = 3u << 20 };
	struct rig r;

	rig_open(&r, 4u << 20, &cfg, 0);
	check_read(&r, h.lo + 50000, 4096, &h);
	assert_int_equal(dev_requests(&r), 1);
	for (uint64_t o = h.lo; o < h.hi; o += 4096)
		check_read(&r, o, 4096, &h);
	assert_int_equal(dev_requests(&r), 1);
	/* big file: a read in the middle fetches its segment only... */
	check_read(&r, big.lo + 500000, 4096, &big);
	assert_int_equal(dev_requests(&r), 2);
	check_read(&r, big.lo + 520000, 4096, &big);
	assert_int_equal(dev_requests(&r), 3);
	/* ...and a read close to the end fetches the rest */
	check_read(&r, big.hi - 200000, 4096, &big);
	assert_int_equal(dev_requests(&r), 4);
	for (uint64_t o = big.hi - 200000; o < big.hi; o += 4096)
		check_read(&r, o, big.hi - o < 4096 ? big.hi - o : 4096, &big);
	assert_int_equal(dev_requests(&r), 4);
	rig_close(&r);
}

/* Reading a 24 MiB file sequentially costs about one request per max_io. */
static void sequential_file(size_t seg, size_t bs, uint64_t lo, uint64_t size)
{
	struct cairn_cache_config cfg = { .segment_size = seg };
	struct cairn_cache_hint h = { .lo = lo, .hi = lo + size };
	struct cairn_cache_stats st;
	struct rig r;
	uint64_t limit = (size + (1u << 20) - 1) / (1u << 20) + 2;

	rig_open(&r, (size_t)(lo + size + (3u << 20)), &cfg, 50000);
	for (uint64_t o = 0; o < size; o += bs)
		check_read(&r, lo + o, bs, &h);
	cairn_cache_drain(r.cache);
	cairn_cache_get_stats(r.cache, &st);
	print_message("seg %zu bs %zu lo %llu: %llu requests (limit %llu), ra %llu bytes\n",
		      seg, bs, (unsigned long long)lo, (unsigned long long)dev_requests(&r),
		      (unsigned long long)limit, (unsigned long long)st.readahead_bytes);
	assert_true(dev_requests(&r) <= limit);
	/* nothing outside the file, but for the segments holding its ends */
	assert_true(st.bytes >= size && st.bytes <= size + 2 * seg);
	assert_true(st.readahead_used > 0);
	rig_close(&r);
}

static void test_sequential_readahead(void **state)
{
	sequential_file(131072, 131072, 0, 24u << 20);
	sequential_file(131072, 4096, 12288, (24u << 20) + 5000);
	sequential_file(65536, 131072, 3u << 20, 10u << 20);
	sequential_file(32768, 65536, 700000, 7u << 20);
}

struct sf_arg {
	struct rig *r;
	pthread_barrier_t *bar;
	int ok;
};

static void *sf_reader(void *p)
{
	struct sf_arg *a = p;
	unsigned char buf[1000];

	pthread_barrier_wait(a->bar);
	a->ok = cairn_cache_read(a->r->cache, buf, sizeof(buf), 200000, NULL) == sizeof(buf) &&
		!memcmp(buf, a->r->src + 200000, sizeof(buf));
	return NULL;
}

/* 16 threads want one segment at once: exactly one device request. */
static void test_single_flight(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 65536 };
	enum { N = 16 };
	pthread_t th[N];
	struct sf_arg a[N];
	pthread_barrier_t bar;
	struct cairn_cache_stats st;
	struct rig r;

	rig_open(&r, 1u << 20, &cfg, 20000000); /* 20 ms: everyone arrives in flight */
	pthread_barrier_init(&bar, NULL, N);
	for (int i = 0; i < N; i++) {
		a[i] = (struct sf_arg){ &r, &bar, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, sf_reader, &a[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		assert_true(a[i].ok);
	}
	pthread_barrier_destroy(&bar);
	assert_int_equal(dev_requests(&r), 1);
	cairn_cache_get_stats(r.cache, &st);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.hits, N - 1);
	rig_close(&r);
}

/* Resident memory never goes past the budget by more than in-flight fetches. */
static void test_budget(void **state)
{
	const size_t seg = 65536, budget = 1u << 20;
	struct cairn_cache_config cfg = { .segment_size = seg, .budget_bytes = budget,
					  .max_io = 256u << 10 };
	struct cairn_cache_hint h = { .lo = 0, .hi = 16u << 20 };
	struct cairn_cache_stats st;
	struct rig r;
	uint64_t rng = 99;

	rig_open(&r, 16u << 20, &cfg, 0);
	for (int i = 0; i < TEST_SCALE(600); i++) {
		uint64_t off = rng_next(&rng) % (16u << 20);

		check_read(&r, off, (size_t)(rng_next(&rng) % 100000) + 1, i % 2 ? &h : NULL);
		cairn_cache_get_stats(r.cache, &st);
		/* one reader + two workers, each with at most max_io in flight */
		assert_true(st.resident_bytes <= budget + 3 * cfg.max_io);
	}
	/* a sequential pass with readahead under the same budget */
	for (uint64_t o = 0; o < (16u << 20); o += 65536)
		check_read(&r, o, 65536, &h);
	cairn_cache_drain(r.cache);
	cairn_cache_get_stats(r.cache, &st);
	assert_true(st.resident_bytes <= budget);
	assert_true(st.evictions > 0);
	rig_close(&r);
}

/* Budget CAIRN_CACHE_OFF: every read is one device request of exactly its size. */
/* A cached-only read copies what is there and asks for nothing else: -EAGAIN
 * with no request for a segment not cached (or half of a range not cached),
 * the bytes once a read fetched them; and, being nobody's stream, it starts no
 * readahead where a read continuing a sequential one would. */
static void test_read_cached(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 65536 };
	struct cairn_cache_hint h = { 0, 4u << 20 };
	struct cairn_cache_stats st;
	unsigned char buf[8192];
	struct rig r;

	rig_open(&r, 4u << 20, &cfg, 0);
	assert_int_equal(cairn_cache_read_cached(r.cache, buf, 4096, 1u << 20), -EAGAIN);
	assert_int_equal(dev_requests(&r), 0);
	check_read(&r, (1u << 20) + 4096, 4096, &h); /* random: one segment */
	cairn_cache_drain(r.cache);
	assert_int_equal(dev_requests(&r), 1);
	assert_int_equal(cairn_cache_read_cached(r.cache, buf, 4096, (1u << 20) + 8192), 4096);
	assert_memory_equal(buf, r.src + (1u << 20) + 8192, 4096);
	assert_int_equal(cairn_cache_read_cached(r.cache, buf, 8192, (1u << 20) + 61440), -EAGAIN);
	assert_int_equal(cairn_cache_read_cached(r.cache, buf, 4096, (1u << 20) + 61440), 4096);
	cairn_cache_drain(r.cache);
	assert_int_equal(dev_requests(&r), 1);
	cairn_cache_get_stats(r.cache, &st);
	assert_int_equal(st.readahead_bytes, 0);
	assert_int_equal(cairn_cache_read_cached(r.cache, buf, 4096, 4u << 20), 0); /* at the end */
	rig_close(&r);

	cfg.budget_bytes = CAIRN_CACHE_OFF; /* caching nothing, it has nothing */
	rig_open(&r, 1u << 20, &cfg, 0);
	check_read(&r, 0, 4096, NULL);
	assert_int_equal(cairn_cache_read_cached(r.cache, buf, 4096, 0), -EAGAIN);
	rig_close(&r);
}

static void test_passthrough(void **state)
{
	struct cairn_cache_config cfg = { .budget_bytes = CAIRN_CACHE_OFF };
	struct cairn_bdev_counters dc;
	struct cairn_cache_stats st;
	struct rig r;

	rig_open(&r, 1u << 20, &cfg, 0);
	for (int i = 0; i < 10; i++)
		check_read(&r, 512u * i, 512, NULL);
	check_read(&r, (1u << 20) - 100, 512, NULL);
	check_read(&r, 1u << 20, 512, NULL); /* past the end: no request */
	assert_int_equal(cairn_bdev_get_stats(r.stats, &dc), 0);
	assert_int_equal(dc.requests, 11);
	assert_int_equal(dc.hist[0], 11);
	assert_int_equal(dc.bytes, 10 * 512 + 100);
	cairn_cache_prefetch(r.cache, 0, 1u << 20); /* no-op */
	cairn_cache_drain(r.cache);
	cairn_cache_get_stats(r.cache, &st);
	assert_int_equal(st.requests, 11);
	assert_int_equal(st.misses, 11);
	assert_int_equal(st.hits, 0);
	assert_int_equal(st.resident_bytes, 0);
	rig_close(&r);
}

/* Prefetch fetches a range in max_io requests in the background, skipping what is
 * cached; the fewest requests that cover it. */
static void test_prefetch(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 65536 };
	struct cairn_cache_stats st;
	struct rig r;

	rig_open(&r, 8u << 20, &cfg, 100000);
	check_read(&r, (1u << 20) + 5, 10, NULL); /* one segment already there */
	cairn_cache_prefetch(r.cache, 1u << 20, (4u << 20) + 1000);
	cairn_cache_drain(r.cache);
	/* 4 MiB + 1000 bytes past the cached segment: four max_io requests */
	assert_int_equal(dev_requests(&r), 1 + 4);
	for (uint64_t o = 1u << 20; o < (5u << 20) + 1000; o += 50000)
		check_read(&r, o, 50000, NULL);
	cairn_cache_get_stats(r.cache, &st);
	assert_true(st.readahead_used > 0);
	assert_int_equal(st.readahead_wasted, 0);
	rig_close(&r);
}

/* A read of a part the prefetch has claimed but not fetched yet waits for it: it
 * sends no request of its own that would cut the prefetch's into pieces. */
static void test_prefetch_claims(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 65536 };
	struct rig r;

	rig_open(&r, 8u << 20, &cfg, 20000000); /* 20 ms per request */
	cairn_cache_prefetch(r.cache, 0, 4u << 20);
	check_read(&r, (3u << 20) + 4096, 100000, NULL); /* in the last 1 MiB request */
	cairn_cache_drain(r.cache);
	assert_int_equal(dev_requests(&r), 4);
	rig_close(&r);
}

/* Segments a reader keeps (delivered) are dropped once all their bytes are, and
 * their memory with them; a partly delivered one stays. Readahead and prefetch
 * do not fetch a dropped segment again; a read of it does. */
/* Pages of buf resident, by mincore(2). */
/* Pooled bounce buffers hold no memory but the top one: a cold Java start
 * left three full ones (3 MiB) resident in the daemon. */
static void test_bounce_pool_resident(void **state)
{
	struct rig r;
	struct cairn_cache *c;
	unsigned char *b[3];
	size_t pages;

	rig_open(&r, 8u << 20, NULL, 0);
	c = r.cache;
	pages = c->max_io / (size_t)sysconf(_SC_PAGESIZE);
	for (int i = 0; i < 3; i++) {
		void *p;

		assert_int_equal(posix_memalign(&p, 4096, c->max_io), 0);
		memset(p, 0xa5, c->max_io); /* a fetch fills it whole */
		b[i] = p;
	}
	for (int i = 0; i < 3; i++)
		util_bufpool_put(&c->bounce, b[i]);
	/* The first one back is warm, on top (handed out first); the others not. */
	assert_int_equal(c->bounce.n, 3);
	assert_ptr_equal(c->bounce.bufs[2], b[0]);
	assert_int_equal(resident_pages(b[0], c->max_io), pages);
	assert_int_equal(resident_pages(b[1], c->max_io), 0);
	assert_int_equal(resident_pages(b[2], c->max_io), 0);
	rig_close(&r);
}

static void test_delivered(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 65536 };
	struct cairn_cache_stats st;
	struct rig r;
	uint64_t n;

	rig_open(&r, 8u << 20, &cfg, 0);
	check_read(&r, 0, 1u << 20, NULL);
	cairn_cache_drain(r.cache);
	cairn_cache_get_stats(r.cache, &st);
	assert_true(st.resident_bytes >= 1u << 20);
	n = dev_requests(&r);
	cairn_cache_delivered(r.cache, 0, 65536 * 3 + 4096); /* 3 whole, 1 in part */
	cairn_cache_delivered(r.cache, 65536 * 5 + 1, 65536); /* no whole 32nd of #5 */
	cairn_cache_get_stats(r.cache, &st);
	assert_int_equal(st.dropped, 3);
	/* The rest of segment 3, in two pieces: then it goes too. */
	cairn_cache_delivered(r.cache, 65536 * 3 + 4096, 30000);
	cairn_cache_delivered(r.cache, 65536 * 3 + 4096 + 28672, 65536 - 4096 - 28672);
	cairn_cache_get_stats(r.cache, &st);
	assert_int_equal(st.dropped, 4);
	/* Prefetching the range again fetches nothing: the reader has it. */
	cairn_cache_prefetch(r.cache, 0, 1u << 20);
	cairn_cache_drain(r.cache);
	assert_int_equal(dev_requests(&r), n);
	/* A read of a dropped segment fetches it again, and it is right. */
	check_read(&r, 65536 + 100, 1000, NULL);
	assert_int_equal(dev_requests(&r), n + 1);
	check_read(&r, 65536 * 4, 65536 * 2, NULL); /* still cached */
	assert_int_equal(dev_requests(&r), n + 1);
	rig_close(&r);
}

/* A reference more on segment idx, as a reader copying from it, the background
 * digest check or its publisher before it joins the ring hold one. */
static struct seg *seg_hold(struct cairn_cache *c, uint64_t idx)
{
	struct shard *sh = seg_shard(c, idx);
	struct seg *s;

	pthread_mutex_lock(&sh->lock);
	s = seg_lookup(sh, idx);
	assert_non_null(s);
	s->refs++;
	pthread_mutex_unlock(&sh->lock);
	return s;
}

/* A segment wholly delivered while someone else held it drops when they let
 * go: before, the one drop attempt was refused and it stayed resident for good
 * (most of the cache's memory after a cold Java Hello, docs/bench/rss.md). */
static void test_delivered_while_held(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 65536 };
	struct cairn_cache_stats st;
	struct rig r;
	struct seg *s;
	uint64_t held;

	rig_open(&r, 1u << 20, &cfg, 0);
	check_read(&r, 0, 65536 * 2, NULL);
	cairn_cache_drain(r.cache);
	s = seg_hold(r.cache, 1);
	cairn_cache_delivered(r.cache, 0, 65536 * 2);
	cairn_cache_get_stats(r.cache, &st);
	assert_int_equal(st.dropped, 1); /* segment 0; 1 is held */
	held = st.resident_bytes;
	seg_release(r.cache, s);
	cairn_cache_get_stats(r.cache, &st);
	assert_int_equal(st.dropped, 2);
	assert_int_equal(st.resident_bytes, held - 65536);
	check_read(&r, 65536 + 10, 100, NULL); /* fetched again, right */
	rig_close(&r);
}

/* What a pinned read lent, checked against the source in the callback after
 * `during` ran there (while the read holds its segments). */
struct lent_check {
	struct rig *r;
	uint64_t off;
	size_t want;
	int calls, bad, iovcnt, rc;
	void (*during)(struct rig *r, uint64_t off, size_t len);
};

static int lent_cb(void *ctx, const struct iovec *iov, int iovcnt, size_t total)
{
	struct lent_check *l = ctx;

	l->calls++;
	l->iovcnt = iovcnt;
	if (l->during)
		l->during(l->r, l->off, l->want);
	l->bad |= total != l->want || !t_iov_equal(iov, iovcnt, l->r->src + l->off, l->want);
	return l->rc;
}

static void check_pinned(struct rig *r, uint64_t off, size_t len, size_t want, int fn_rc)
{
	struct lent_check l = { r, off, want, 0, 0, 0, fn_rc, NULL };

	assert_int_equal(cairn_cache_read_pinned(r->cache, len, off, NULL, lent_cb, &l), fn_rc);
	assert_int_equal(l.calls, 1);
	assert_int_equal(l.bad, 0);
}

/* A pinned read lends the cache's segments, cold (fetched for it) and warm,
 * across segment edges and to the device's end; fn's value is the read's;
 * nothing to lend (past the end, len 0, a pass-through cache) says copy. */
static void test_read_pinned(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 65536 };
	struct cairn_cache_config off_cfg = { .budget_bytes = CAIRN_CACHE_OFF };
	struct lent_check l = { 0 };
	struct rig r;
	uint64_t n;

	rig_open(&r, 4u << 20, &cfg, 0);
	check_pinned(&r, 1000, 300000, 300000, 0);
	n = dev_requests(&r);
	check_pinned(&r, 1000, 300000, 300000, 0); /* all hits: no request */
	assert_int_equal(dev_requests(&r), n);
	check_pinned(&r, 65536 * 2, 65536, 65536, -EPIPE);
	check_pinned(&r, r.size - 100, 1000, 100, 0);
	assert_int_equal(cairn_cache_read_pinned(r.cache, 10, r.size, NULL, lent_cb, &l),
			 CAIRN_CACHE_COPY);
	assert_int_equal(cairn_cache_read_pinned(r.cache, 0, 0, NULL, lent_cb, &l),
			 CAIRN_CACHE_COPY);
	assert_int_equal(l.calls, 0);
	rig_close(&r);
	rig_open(&r, 1u << 20, &off_cfg, 0);
	assert_int_equal(cairn_cache_read_pinned(r.cache, 10, 0, NULL, lent_cb, &l),
			 CAIRN_CACHE_COPY);
	assert_int_equal(l.calls, 0);
	rig_close(&r);
}

/* While the reader holds what it was lent, its bytes are delivered (use-once):
 * nothing is dropped under it, and all four segments go once it lets go. */
static void deliver_lent(struct rig *r, uint64_t off, size_t len)
{
	struct cairn_cache_stats st;

	cairn_cache_delivered(r->cache, off, len);
	cairn_cache_get_stats(r->cache, &st);
	assert_int_equal(st.dropped, 0);
}

/* ... or the budget falls so everything is evicted, and other reads take the
 * freed memory: the lent bytes stay right (and, under ASan, alive). */
static void evict_and_refill(struct rig *r, uint64_t off, size_t len)
{
	(void)off;
	(void)len;
	cairn_cache_lower_budget(r->cache, 65536 * 2);
	for (uint64_t o = 2u << 20; o < (3u << 20); o += 65536)
		check_read(r, o, 65536, NULL);
}

static void test_read_pinned_held(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 65536, .budget_bytes = 8u << 20 };
	struct cairn_cache_stats st;
	struct rig r;
	struct lent_check l;
	int rc;

	rig_open(&r, 4u << 20, &cfg, 0);
	l = (struct lent_check){ &r, 0, 65536 * 4, 0, 0, 0, 0, deliver_lent };
	assert_int_equal(cairn_cache_read_pinned(r.cache, l.want, l.off, NULL, lent_cb, &l), 0);
	assert_int_equal(l.calls, 1);
	assert_int_equal(l.bad, 0);
	cairn_cache_get_stats(r.cache, &st);
	assert_int_equal(st.dropped, 4);

	l = (struct lent_check){ &r, 65536 * 8 + 100, 65536 * 4, 0, 0, 0, 0, evict_and_refill };
	assert_int_equal(cairn_cache_read_pinned(r.cache, l.want, l.off, NULL, lent_cb, &l), 0);
	assert_int_equal(l.calls, 1);
	assert_int_equal(l.bad, 0);
	cairn_cache_drain(r.cache);
	cairn_cache_get_stats(r.cache, &st);
	assert_true(st.resident_bytes <= 65536 * 2);
	check_read(&r, 100, 65536 * 4, NULL); /* fetched again, right */
	/* A pinned read of more than the budget may find its first segments
	 * evicted by its last ones before it holds them all: it lends them
	 * (right) or says copy, never wrong bytes. */
	l = (struct lent_check){ &r, 100, 65536 * 4, 0, 0, 0, 0, NULL };
	rc = cairn_cache_read_pinned(r.cache, l.want, l.off, NULL, lent_cb, &l);
	assert_true(rc == 0 || rc == CAIRN_CACHE_COPY);
	assert_int_equal(l.calls, rc == 0);
	assert_int_equal(l.bad, 0);
	rig_close(&r);
}

static size_t warm_free(struct cairn_cache *c)
{
	size_t n;

	pthread_mutex_lock(&c->slot_lock);
	n = c->nwarm_free;
	pthread_mutex_unlock(&c->slot_lock);
	return n;
}

/* Segment memory freed once delivered stays resident for the next fetches
 * while they come (up to WARM_BUSY), and goes back to the OS once the workers
 * have been idle a while, down to WARM_IDLE; reads afterwards are right. */
static void test_warm_trim(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 65536, .budget_bytes = 16u << 20 };
	struct rig r;
	struct timespec nap = { 0, 50 * 1000 * 1000 };
	int waited = 0;

	rig_open(&r, 12u << 20, &cfg, 0);
	for (uint64_t off = 0; off < 10u << 20; off += 1u << 20)
		check_read(&r, off, 1u << 20, NULL);
	cairn_cache_drain(r.cache);
	cairn_cache_delivered(r.cache, 0, 10u << 20);
	assert_true(warm_free(r.cache) > r.cache->warm_idle);
	assert_true(warm_free(r.cache) <= r.cache->warm_max);
	while (warm_free(r.cache) > r.cache->warm_idle && waited++ < 400) /* 20 s at most */
		nanosleep(&nap, NULL);
	assert_true(warm_free(r.cache) <= r.cache->warm_idle);
	check_read(&r, 3u << 20, 2u << 20, NULL);
	rig_close(&r);
}

/* Ranges in the order they are wanted: merged into max_io runs (gaps filled
 * while the run stays half wanted), most wanted first, at most the budget. */
/* Many small ranges in few segments (a profile's pages) do not crowd out a
 * later range's segment: 4096 ranges of 16 bytes in segment 0 (more than 4
 * entries a segment of the budget), then one in segment 9. */
static void test_prefetch_ranges_many_small(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 65536, .budget_bytes = 4u << 20 };
	static struct cairn_range pages[4097];
	struct cairn_cache_stats st;
	struct rig r;

	(void)state;
	rig_open(&r, 8u << 20, &cfg, 0);
	for (size_t i = 0; i < 4096; i++)
		pages[i] = (struct cairn_range){ i * 16, 16 };
	pages[4096] = (struct cairn_range){ 65536 * 9, 100 };
	assert_int_equal(cairn_cache_prefetch_ranges(r.cache, pages, 4097), 2 * 65536);
	cairn_cache_drain(r.cache);
	check_read(&r, 65536 * 9, 100, NULL);
	cairn_cache_get_stats(r.cache, &st);
	assert_int_equal(st.misses, 0);
	rig_close(&r);
}

static void test_prefetch_ranges(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 65536, .budget_bytes = 4u << 20 };
	struct cairn_range want[] = {
		{ (5u << 20) + 100, 1000 },     /* first wanted, far out */
		{ 0, 4096 },
		{ 65536 * 3, 4096 },            /* gap of 2 segments: filled */
		{ 65536 * 20, 4096 },           /* past max_io from 0: a request of its own */
		{ 65536 * 2, 65536 },           /* inside the first run */
		{ 7u << 20, 16u << 20 },        /* past the device end, and the budget */
	};
	struct cairn_cache_stats st;
	struct rig r;
	uint64_t got;

	rig_open(&r, 8u << 20, &cfg, 0);
	got = cairn_cache_prefetch_ranges(r.cache, want, sizeof(want) / sizeof(want[0]));
	cairn_cache_drain(r.cache);
	/* 5 MiB: 1 segment; 0..3: 4; 20: 1; 7 MiB..8 MiB: 16 segments */
	assert_int_equal(got, (1 + 4 + 1 + 16) * 65536);
	assert_int_equal(dev_requests(&r), 4);
	/* All of it is there: no read misses (they may start readahead, which is
	 * why requests are not counted here). */
	for (uint64_t o = 0; o < 4 * 65536; o += 4096)
		check_read(&r, o, 4096, NULL);
	check_read(&r, 65536 * 20, 4096, NULL);
	check_read(&r, (5u << 20) + 100, 1000, NULL);
	cairn_cache_get_stats(r.cache, &st);
	assert_int_equal(st.misses, 0);
	assert_int_equal(cairn_cache_prefetch_ranges(r.cache, NULL, 0), 0);
	rig_close(&r);

	/* Over the budget: the most wanted are taken, up to the budget. */
	rig_open(&r, 64u << 20, &cfg, 0);
	want[0] = (struct cairn_range){ 0, 32u << 20 };
	assert_int_equal(cairn_cache_prefetch_ranges(r.cache, want, 1), 4u << 20);
	cairn_cache_drain(r.cache);
	assert_int_equal(dev_requests(&r), 4);
	rig_close(&r);

	/* A gap is filled only while the run stays at least half wanted: a sparse
	 * profile on a link with a bandwidth would pay for the holes' bytes. */
	rig_open(&r, 8u << 20, &cfg, 0);
	want[0] = (struct cairn_range){ 65536 * 40, 4096 };     /* one wanted ... */
	want[1] = (struct cairn_range){ 65536 * 44, 4096 };     /* ... 3 unwanted: apart */
	want[2] = (struct cairn_range){ 65536 * 50, 65536 * 2 }; /* two wanted ... */
	want[3] = (struct cairn_range){ 65536 * 53, 4096 };     /* ... 1 unwanted: joined */
	got = cairn_cache_prefetch_ranges(r.cache, want, 4);
	cairn_cache_drain(r.cache);
	assert_int_equal(got, (1 + 1 + 4) * 65536);
	assert_int_equal(dev_requests(&r), 3);
	rig_close(&r);
}

/* A device that takes vectors (as http does): records each vector's entries. */
struct vec_bdev {
	struct cairn_bdev base;
	const unsigned char *src;
	pthread_mutex_t lock;
	int reads, vectors;
	uint64_t order[64];  /* the segments asked, in order, over all vectors */
	unsigned n_order;
};

static ssize_t vec_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	struct vec_bdev *d = (struct vec_bdev *)dev;

	pthread_mutex_lock(&d->lock);
	d->reads++;
	pthread_mutex_unlock(&d->lock);
	memcpy(buf, d->src + off, len);
	return (ssize_t)len;
}

static int vec_readv(struct cairn_bdev *dev, const struct cairn_bdev_iov *v, unsigned n)
{
	struct vec_bdev *d = (struct vec_bdev *)dev;

	pthread_mutex_lock(&d->lock);
	d->vectors++;
	for (unsigned i = 0; i < n; i++) {
		if (d->n_order < 64)
			d->order[d->n_order++] = v[i].off / 65536;
		memcpy(v[i].buf, d->src + v[i].off, v[i].len);
	}
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static void vec_close(struct cairn_bdev *dev)
{
	(void)dev; /* on the test's stack */
}

static const struct cairn_bdev_ops vec_ops = { .version = 3, .name = "vec", .read = vec_read,
					       .close = vec_close, .readv = vec_readv };

/* Over a device that takes a vector as one request, a profile's segments go
 * out in the order wanted, max_io (here 4 segments) per vector, one worker so
 * the order is the queue's, no gap fetched; everything is then a hit. */
static void test_prefetch_ranges_vectors(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 65536, .max_io = 4 * 65536,
					  .threads = 1 };
	struct cairn_range want[] = {
		{ 65536 * 40 + 5, 100 },        /* seg 40 */
		{ 65536 * 3, 2 * 65536 },       /* 3, 4 */
		{ 65536 * 90, 10 },             /* 90 */
		{ 65536 * 4, 10 },              /* 4 again: asked once */
		{ 65536 * 10, 10 },             /* 10 */
		{ (8u << 20) - 100, 100 },      /* 127: the last */
	};
	static const uint64_t order[] = { 40, 3, 4, 90, 10, 127 };
	struct cairn_range many[20];
	size_t size = 8u << 20;
	unsigned char *src = make_source(size, 5), *buf = malloc(65536);
	struct vec_bdev d = { .src = src };
	struct cairn_cache_stats st;
	struct cairn_cache *c;

	(void)state;
	pthread_mutex_init(&d.lock, NULL);
	assert_int_equal(cairn_bdev_init(&d.base, &vec_ops, NULL, size), 0);
	assert_int_equal(cairn_cache_new(&d.base, &cfg, &c), 0);
	assert_int_equal(cairn_cache_prefetch_ranges(c, want, sizeof(want) / sizeof(want[0])),
			 6 * 65536);
	cairn_cache_drain(c);
	assert_int_equal(d.vectors, 2);
	assert_int_equal(d.reads, 0);
	assert_int_equal(d.n_order, 6);
	for (int i = 0; i < 6; i++)
		assert_int_equal(d.order[i], order[i]);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		size_t len = want[i].len < 65536 ? (size_t)want[i].len : 65536;

		assert_int_equal(cairn_cache_read(c, buf, len, want[i].off, NULL), (ssize_t)len);
		assert_memory_equal(buf, src + want[i].off, len);
	}
	cairn_cache_get_stats(c, &st);
	assert_int_equal(st.misses, 0);
	cairn_cache_free(c);

	/* A 4 MiB max_io (a remote image's): vectors hold up to max_io, so the
	 * 20 scattered segments (1.25 MiB) go out as one. */
	cfg.max_io = 4u << 20;
	d.vectors = 0;
	assert_int_equal(cairn_cache_new(&d.base, &cfg, &c), 0);
	for (int i = 0; i < 20; i++)
		many[i] = (struct cairn_range){ (uint64_t)(3 * i + 1) * 65536, 10 };
	assert_int_equal(cairn_cache_prefetch_ranges(c, many, 20), 20 * 65536);
	cairn_cache_drain(c);
	assert_int_equal(d.vectors, 1);
	cairn_cache_free(c);
	pthread_mutex_destroy(&d.lock);
	free(src);
	free(buf);
}

/* A device that says it holds some 64 KiB segments (as a disk cache would) and
 * counts the requests that mix held and other segments. */
struct holder_bdev {
	struct cairn_bdev base;
	uint64_t held_mask;  /* bit i: segment i is held */
	int requests, mixed;
	pthread_mutex_t lock;
};

static int holder_is_held(const struct holder_bdev *h, uint64_t idx)
{
	return idx < 64 && (h->held_mask >> idx & 1);
}

static ssize_t holder_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	struct holder_bdev *h = (struct holder_bdev *)dev;
	int kind = holder_is_held(h, off / 65536), mixed = 0;

	for (uint64_t i = off / 65536 + 1; i <= (off + len - 1) / 65536; i++)
		mixed |= holder_is_held(h, i) != kind;
	pthread_mutex_lock(&h->lock);
	h->requests++;
	h->mixed += mixed;
	pthread_mutex_unlock(&h->lock);
	return cairn_bdev_read(dev->below, buf, len, off);
}

static int holder_held(struct cairn_bdev *dev, uint64_t off, uint64_t len)
{
	struct holder_bdev *h = (struct holder_bdev *)dev;

	for (uint64_t i = off / 65536; i <= (off + len - 1) / 65536; i++)
		if (!holder_is_held(h, i))
			return 0;
	return 1;
}

static void holder_close(struct cairn_bdev *dev)
{
	struct holder_bdev *h = (struct holder_bdev *)dev;

	cairn_bdev_close(dev->below);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

static const struct cairn_bdev_ops holder_ops = {
	.version = CAIRN_BDEV_OPS_VERSION,
	.name = "holder",
	.read = holder_read,
	.close = holder_close,
	.held = holder_held,
};

/* cairn_cache_held: every segment the ranges cover held below, whole segments
 * counted (a range inside a held segment that runs on into one not held is not
 * held); a device that cannot tell holds nothing. */
static void test_cache_held(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 65536 };
	struct holder_bdev *h = calloc(1, sizeof(*h));
	size_t size = 1u << 20;
	unsigned char *src = make_source(size, 12);
	struct cairn_range held[] = { { 4096, 4096 }, { 3 * 65536 + 100, 65536 - 100 } };
	struct cairn_range across[] = { { 4096, 4096 }, { 3 * 65536 + 100, 65536 } };
	struct cairn_range past_end[] = { { size - 10, 4096 }, { 2 * size, 1 } };
	struct cairn_bdev *mem, *plain;
	struct cairn_cache *c, *pc;

	assert_non_null(h);
	assert_non_null(src);
	pthread_mutex_init(&h->lock, NULL);
	h->held_mask = 1ull << 0 | 1ull << 3 | 1ull << 15;
	assert_int_equal(cairn_bdev_mem_new(src, size, 0, &mem), 0);
	assert_int_equal(cairn_bdev_init(&h->base, &holder_ops, mem, size), 0);
	assert_int_equal(cairn_cache_new(&h->base, &cfg, &c), 0);
	assert_int_equal(cairn_cache_held(c, held, 2), 1);
	assert_int_equal(cairn_cache_held(c, across, 2), 0); /* runs into segment 4 */
	assert_int_equal(cairn_cache_held(c, past_end, 2), 1); /* clipped: segment 15 */
	assert_int_equal(cairn_cache_held(c, held, 0), 0);
	assert_int_equal(h->requests, 0); /* asked, never read */
	cairn_cache_free(c);
	assert_int_equal(cairn_bdev_mem_new(src, size, 0, &plain), 0);
	assert_int_equal(cairn_cache_new(plain, &cfg, &pc), 0);
	assert_int_equal(cairn_cache_held(pc, held, 2), 0);
	cairn_cache_free(pc);
	free(src);
}

/* Over a device that tells what it holds, a prefetch run is all held segments
 * or all others, gaps included: mixed, the held ones would wait for the slow
 * ones, and a disk cache would send the server a request per stretch it lacks. */
static void test_prefetch_ranges_held(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 65536 };
	struct holder_bdev *h = calloc(1, sizeof(*h));
	size_t size = 4u << 20;
	unsigned char *src = make_source(size, 11), *buf = malloc(65536);
	struct cairn_range want[] = {
		{ 0, 2 * 65536 },         /* held 0, 1 ... */
		{ 2 * 65536, 4096 },      /* ... 2 not: a run of its own */
		{ 10 * 65536, 4096 },     /* held 10, gap 11 not held, held 12: */
		{ 12 * 65536, 4096 },     /* apart (the gap would be a server request) */
		{ 20 * 65536, 4096 },     /* not held 20, gap 21 held, not held 22: */
		{ 22 * 65536, 4096 },     /* apart (the disk cache would split it) */
		{ 30 * 65536, 4096 },     /* held 30, gap 31 held, held 32: one run */
		{ 32 * 65536, 4096 },
	};
	struct cairn_bdev *mem;
	struct cairn_cache *c;

	assert_non_null(h);
	assert_non_null(src);
	assert_non_null(buf);
	pthread_mutex_init(&h->lock, NULL);
	h->held_mask = 1ull << 0 | 1ull << 1 | 1ull << 10 | 1ull << 12 | 1ull << 21 | 1ull << 30 |
		       1ull << 31 | 1ull << 32;
	assert_int_equal(cairn_bdev_mem_new(src, size, 0, &mem), 0);
	assert_int_equal(cairn_bdev_init(&h->base, &holder_ops, mem, size), 0);
	assert_int_equal(cairn_bdev_held(&h->base, 0, 2 * 65536), 1);
	assert_int_equal(cairn_bdev_held(&h->base, 65536, 2 * 65536), 0);
	assert_int_equal(cairn_cache_new(&h->base, &cfg, &c), 0);
	assert_int_equal(cairn_cache_prefetch_ranges(c, want, sizeof(want) / sizeof(want[0])),
			 (2 + 1 + 2 + 2 + 3) * 65536);
	cairn_cache_drain(c);
	assert_int_equal(h->mixed, 0);
	assert_int_equal(h->requests, 7); /* 0-1, 2, 10, 12, 20, 22, 30-32 */
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint64_t off = want[i].off & ~(uint64_t)65535;

		assert_int_equal(cairn_cache_read(c, buf, 65536, off, NULL), 65536);
		assert_memory_equal(buf, src + off, 65536);
	}
	cairn_cache_free(c);
	free(buf);
	free(src);
}

/* A device whose first request waits (up to 10 s) for a second one to start,
 * and which records how many were ever in flight at once. */
struct meet_bdev {
	struct cairn_bdev base;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int inflight, peak, started;
};

static ssize_t meet_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	struct meet_bdev *m = (struct meet_bdev *)dev;
	struct timespec until;
	ssize_t r;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&m->lock);
	m->inflight++;
	m->peak = m->inflight > m->peak ? m->inflight : m->peak;
	pthread_cond_broadcast(&m->cond);
	if (m->started++ == 0)
		while (m->inflight < 2 &&
		       pthread_cond_timedwait(&m->cond, &m->lock, &until) != ETIMEDOUT)
			;
	pthread_mutex_unlock(&m->lock);
	r = cairn_bdev_read(dev->below, buf, len, off);
	pthread_mutex_lock(&m->lock);
	m->inflight--;
	pthread_mutex_unlock(&m->lock);
	return r;
}

static void meet_close(struct cairn_bdev *dev)
{
	struct meet_bdev *m = (struct meet_bdev *)dev;

	cairn_bdev_close(dev->below);
	pthread_cond_destroy(&m->cond);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static const struct cairn_bdev_ops meet_ops = {
	.version = CAIRN_BDEV_OPS_VERSION,
	.name = "meet",
	.read = meet_read,
	.close = meet_close,
};

/* A read that is not segment-aligned is max_io plus a piece: two requests, and
 * both go out together (a remote device pays one round trip, not two). */
static void test_split_read_in_parallel(void **state)
{
	struct cairn_cache_config cfg = { .segment_size = 65536, .max_io = 262144 };
	struct meet_bdev *m = calloc(1, sizeof(*m));
	size_t size = 1u << 20, len = 262144;
	unsigned char *src = make_source(size, 5), *buf = malloc(len);
	struct cairn_bdev *mem;
	struct cairn_cache *c;

	assert_non_null(m);
	assert_non_null(src);
	assert_non_null(buf);
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->cond, NULL);
	assert_int_equal(cairn_bdev_mem_new(src, size, 0, &mem), 0);
	assert_int_equal(cairn_bdev_init(&m->base, &meet_ops, mem, size), 0);
	assert_int_equal(cairn_cache_new(&m->base, &cfg, &c), 0);
	assert_int_equal(cairn_cache_read(c, buf, len, 32768, NULL), (ssize_t)len);
	assert_memory_equal(buf, src + 32768, len);
	assert_int_equal(m->started, 2);
	assert_int_equal(m->peak, 2);
	cairn_cache_free(c);
	free(buf);
	free(src);
}

static void test_bad_config(void **state)
{
	unsigned char b[16] = { 0 };
	struct cairn_cache_config cfg = { .segment_size = 3000 };
	struct cairn_bdev *m;
	struct cairn_cache *c = NULL;

	assert_int_equal(cairn_bdev_mem_new(b, sizeof(b), 0, &m), 0);
	assert_int_equal(cairn_cache_new(m, &cfg, &c), -EINVAL);
	cfg.segment_size = 256;
	assert_int_equal(cairn_cache_new(m, &cfg, &c), -EINVAL);
	/* the device is still ours; an empty device reads as empty */
	assert_int_equal(cairn_cache_new(m, NULL, &c), 0);
	assert_int_equal(cairn_cache_segment_size(c), 131072);
	assert_ptr_equal(cairn_cache_bdev(c), m);
	assert_int_equal(cairn_cache_read(c, b, 16, 0, NULL), 16);
	assert_int_equal(cairn_cache_read(c, b, 16, 16, NULL), 0);
	cairn_cache_free(c);
	cairn_cache_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_reads),
		cmocka_unit_test(test_second_read_hits),
		cmocka_unit_test(test_fetch),
		cmocka_unit_test(test_merge_neighbours),
		cmocka_unit_test(test_small_file_whole),
		cmocka_unit_test(test_sequential_readahead),
		cmocka_unit_test(test_single_flight),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_read_cached),
		cmocka_unit_test(test_passthrough),
		cmocka_unit_test(test_prefetch),
		cmocka_unit_test(test_prefetch_claims),
		cmocka_unit_test(test_delivered),
		cmocka_unit_test(test_delivered_while_held),
		cmocka_unit_test(test_read_pinned),
		cmocka_unit_test(test_read_pinned_held),
		cmocka_unit_test(test_bounce_pool_resident),
		cmocka_unit_test(test_warm_trim),
		cmocka_unit_test(test_prefetch_ranges),
		cmocka_unit_test(test_prefetch_ranges_many_small),
		cmocka_unit_test(test_prefetch_ranges_held),
		cmocka_unit_test(test_cache_held),
		cmocka_unit_test(test_prefetch_ranges_vectors),
		cmocka_unit_test(test_split_read_in_parallel),
		cmocka_unit_test(test_bad_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
