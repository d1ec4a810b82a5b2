/* SPDX-License-Identifier: MIT */
/*
 * Many threads read random ranges (and some read files sequentially, which
 * drives readahead) through one cache with a tight budget, so fills, waits,
 * evictions and readahead all race. Half of them hand what they read on as
 * delivered (use-once), so segments are dropped, left as ghosts and fetched
 * again under the others' feet, and profile prefetches claim runs meanwhile.
 * A quarter of them read pinned (cairn_cache_read_pinned), so segments are
 * held, lent, delivered and evicted under one another.
 * Every byte is checked against the source.
 * `make tsan-test` runs this under ThreadSanitizer.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <cmocka.h>
#include "cache_test_util.h"
#include "util/tests/iov.h"

#define DEV_SIZE (8u << 20)
#define THREADS 8

struct shared {
	unsigned char *src;
	struct cairn_cache *cache;
	int iters;
};

struct targ {
	struct shared *sh;
	unsigned id;
	long bad;
};

/* A pinned read (cairn_cache_read_pinned), checked in the callback while the
 * segments are held; CAIRN_CACHE_COPY (evicted again before they could be
 * held) is a right answer too. 1 when right. */
struct lent_want {
	const unsigned char *src;
	size_t len;
	int bad;
};

static int check_lent(void *ctx, const struct iovec *iov, int iovcnt, size_t total)
{
	struct lent_want *w = ctx;

	w->bad |= total != w->len || !t_iov_equal(iov, iovcnt, w->src, w->len);
	return 0;
}

static int read_ok(struct shared *sh, unsigned char *buf, size_t len, uint64_t off,
		   const struct cairn_cache_hint *h, int pinned)
{
	size_t want = len < DEV_SIZE - off ? len : (size_t)(DEV_SIZE - off);
	struct lent_want w = { sh->src + off, want, 0 };
	int rc;

	if (!pinned)
		return cairn_cache_read(sh->cache, buf, len, off, h) == (ssize_t)want &&
		       !memcmp(buf, sh->src + off, want);
	rc = cairn_cache_read_pinned(sh->cache, len, off, h, check_lent, &w);
	return rc == CAIRN_CACHE_COPY || (rc == 0 && !w.bad);
}

static void *reader(void *p)
{
	struct targ *t = p;
	struct shared *sh = t->sh;
	unsigned char *buf = malloc(300000);
	uint64_t rng = 0x1234567ull * (t->id + 1);

	if (!buf) {
		t->bad = -1;
		return NULL;
	}
	for (int i = 0; i < sh->iters; i++) {
		if (t->id % 4 == 3) {
			/* a sequential pass over a "file" with a hint */
			uint64_t lo = rng_next(&rng) % (DEV_SIZE - (1u << 20));
			struct cairn_cache_hint h = { lo, lo + (1u << 20) };

			for (uint64_t o = lo; o < h.hi; o += 65536) {
				size_t len = h.hi - o < 65536 ? (size_t)(h.hi - o) : 65536;

				if (!read_ok(sh, buf, len, o, &h, t->id == 7))
					t->bad++;
				else if (t->id % 8 == 7)
					cairn_cache_delivered(sh->cache, o, len);
			}
			if (i % 8 == 0)
				cairn_cache_prefetch(sh->cache, rng_next(&rng) % DEV_SIZE, 1u << 20);
			if (i % 8 == 4) {
				struct cairn_range r[3];

				for (int k = 0; k < 3; k++)
					r[k] = (struct cairn_range){ rng_next(&rng) % DEV_SIZE, 70000 };
				cairn_cache_prefetch_ranges(sh->cache, r, 3);
			}
			continue;
		}
		uint64_t off = rng_next(&rng) % DEV_SIZE;
		size_t len = (size_t)(rng_next(&rng) % (i % 16 ? 9000 : 300000)) + 1;
		size_t want = len < DEV_SIZE - off ? len : (size_t)(DEV_SIZE - off);

		if (!read_ok(sh, buf, len, off, NULL, t->id % 4 == 1))
			t->bad++;
		else if (t->id % 2)
			cairn_cache_delivered(sh->cache, off, want);
	}
	free(buf);
	return NULL;
}

static void run(size_t seg, size_t budget, uint64_t delay_ns, int iters)
{
	struct cairn_cache_config cfg = { .segment_size = seg, .budget_bytes = budget,
					  .max_io = 512u << 10, .threads = 3 };
	struct cairn_delay_config dc = { .latency_ns = delay_ns, .channels = 4 };
	struct shared sh = { .iters = iters };
	struct cairn_bdev *m, *d;
	struct cairn_cache_stats st;
	pthread_t th[THREADS];
	struct targ t[THREADS];

	sh.src = make_source(DEV_SIZE, seg + budget);
	assert_non_null(sh.src);
	assert_int_equal(cairn_bdev_mem_new(sh.src, DEV_SIZE, 0, &m), 0);
	assert_int_equal(cairn_bdev_delay_new(m, &dc, &d), 0);
	assert_int_equal(cairn_cache_new(d, &cfg, &sh.cache), 0);
	for (unsigned i = 0; i < THREADS; i++) {
		t[i] = (struct targ){ &sh, i, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, reader, &t[i]), 0);
	}
	for (unsigned i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(t[i].bad, 0);
	}
	cairn_cache_drain(sh.cache);
	cairn_cache_get_stats(sh.cache, &st);
	print_message("seg %zu budget %zu: %llu hits %llu misses %llu waits %llu requests "
		      "%llu evictions\n", seg, budget, (unsigned long long)st.hits,
		      (unsigned long long)st.misses, (unsigned long long)st.waits,
		      (unsigned long long)st.requests, (unsigned long long)st.evictions);
	assert_int_equal(st.errors, 0);
	assert_true(st.resident_bytes <= budget);
	cairn_cache_free(sh.cache);
	free(sh.src);
}

static void test_threads_tight_budget(void **state)
{
	run(65536, 2u << 20, 50000, TEST_SCALE(150));
}

static void test_threads_small_segments(void **state)
{
	run(4096, 1u << 20, 20000, TEST_SCALE(150));
}

static void test_threads_roomy(void **state)
{
	run(131072, 64u << 20, 100000, TEST_SCALE(100));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_tight_budget),
		cmocka_unit_test(test_threads_small_segments),
		cmocka_unit_test(test_threads_roomy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
