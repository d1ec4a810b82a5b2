/* SPDX-License-Identifier: MIT */
/*
 * Fault campaign: a fault device under the cache, a synthetic "tree" (files as
 * device ranges) read in full, failing device request k for every k in turn.
 * A read that fails returns -EIO (never wrong bytes); once the fault is cleared
 * the same cache returns every byte right: a failed fetch never poisons it.
 * Run under ASan (make san-test) it also shows that no path leaks.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <cmocka.h>
#include <cairn/testing.h>
#include "cache_test_util.h"
#include "util/tests/iov.h"

#define DEV_SIZE (6u << 20)

struct file { uint64_t lo, hi; };

/* Small files, a file bigger than max_io, one spanning a segment edge, one at
 * the device end; gaps between them like an image's metadata. */
static const struct file tree[] = {
	{ 4096, 4096 + 300 },
	{ 8192, 8192 + 70000 },
	{ 131072 + 4096, 131072 + 4096 + 5000 },
	{ 300000, 300000 + 2500000 },
	{ 3000000, 3000000 + 200000 },
	{ 3300000, 3300000 + 900000 },
	{ DEV_SIZE - 100000, DEV_SIZE },
};
#define NFILES (sizeof(tree) / sizeof(tree[0]))

struct rig {
	unsigned char *src;
	struct cairn_bdev *fault, *stats;
	struct cairn_cache *cache;
};

static void rig_open(struct rig *r, size_t seg, size_t budget)
{
	struct cairn_cache_config cfg = { .segment_size = seg, .budget_bytes = budget,
					  .max_io = 256u << 10 };
	struct cairn_bdev *m;

	r->src = make_source(DEV_SIZE, 5);
	assert_non_null(r->src);
	assert_int_equal(cairn_bdev_mem_new(r->src, DEV_SIZE, 0, &m), 0);
	assert_int_equal(cairn_bdev_fault_new(m, NULL, &r->fault), 0);
	assert_int_equal(cairn_bdev_stats_new(r->fault, &r->stats), 0);
	assert_int_equal(cairn_cache_new(r->stats, &cfg, &r->cache), 0);
}

static void rig_close(struct rig *r)
{
	cairn_cache_free(r->cache);
	free(r->src);
}

/* The lent bytes of a pinned read, copied out (len, the read's, is checked). */
struct copy_out {
	unsigned char *buf;
	size_t len;
	int calls;
};

static int copy_lent(void *ctx, const struct iovec *iov, int iovcnt, size_t total)
{
	struct copy_out *o = ctx;

	o->calls++;
	assert_int_equal(total, o->len);
	assert_int_equal(t_iov_gather(o->buf, o->len, iov, iovcnt), total);
	return 0;
}

/* Every other read of a file is pinned (cairn_cache_read_pinned): a failed
 * fetch returns its error and lends nothing. */
static ssize_t file_read(struct rig *r, unsigned char *buf, size_t len, uint64_t off,
			 const struct cairn_cache_hint *h, int pinned)
{
	struct copy_out o = { buf, len, 0 };
	int rc;

	if (!pinned)
		return cairn_cache_read(r->cache, buf, len, off, h);
	rc = cairn_cache_read_pinned(r->cache, len, off, h, copy_lent, &o);
	if (rc == CAIRN_CACHE_COPY)
		return cairn_cache_read(r->cache, buf, len, off, h);
	assert_int_equal(o.calls, rc == 0);
	return rc ? rc : (ssize_t)len;
}

/* Read every file in chunks of bs (plus a metadata-like read without a hint).
 * Every read returns all its bytes, right, or -EIO. Returns the -EIO count. */
static unsigned read_tree(struct rig *r, size_t bs, int expect_clean)
{
	unsigned char *buf = malloc(bs);
	unsigned eio = 0;

	assert_non_null(buf);
	for (size_t f = 0; f < NFILES; f++) {
		struct cairn_cache_hint h = { tree[f].lo, tree[f].hi };
		ssize_t n = cairn_cache_read(r->cache, buf, 64, tree[f].lo - 64, NULL);

		if (n == -EIO)
			eio++;
		else
			assert_int_equal(n, 64);
		for (uint64_t o = h.lo; o < h.hi; o += bs) {
			size_t len = h.hi - o < bs ? (size_t)(h.hi - o) : bs;

			n = file_read(r, buf, len, o, &h, (o - h.lo) / bs % 2);
			if (n == -EIO && !expect_clean) {
				eio++;
				continue;
			}
			assert_int_equal(n, (ssize_t)len);
			assert_memory_equal(buf, r->src + o, len);
		}
	}
	free(buf);
	return eio;
}

static uint64_t dev_errors(struct rig *r)
{
	struct cairn_bdev_counters c;

	assert_int_equal(cairn_bdev_get_stats(r->stats, &c), 0);
	return c.errors;
}

static void campaign(size_t seg, size_t budget, size_t bs, enum cairn_fault_kind kind,
		     int persistent)
{
	struct rig r;
	uint64_t requests;
	unsigned surfaced = 0;
	struct cairn_bdev_counters c;

	/* How many requests a clean cold pass makes (readahead timing may add a few). */
	rig_open(&r, seg, budget);
	read_tree(&r, bs, 1);
	cairn_cache_drain(r.cache);
	assert_int_equal(cairn_bdev_get_stats(r.stats, &c), 0);
	requests = c.requests;
	rig_close(&r);

	for (uint64_t k = 1; k <= requests + 2; k++) {
		struct cairn_fault_config fc = { .fail_nth = k, .kind = kind,
						 .persistent = persistent };
		struct cairn_cache_stats st;
		unsigned eio;

		rig_open(&r, seg, budget);
		assert_int_equal(cairn_bdev_fault_set(r.fault, &fc), 0);
		eio = read_tree(&r, bs, 0);
		cairn_cache_drain(r.cache);
		cairn_cache_get_stats(r.cache, &st);
		/* The cache saw exactly the failures the device made. A failed
		 * readahead may be retried by the reader unseen; a failed request
		 * the reader waited for surfaces as -EIO. */
		if (kind == CAIRN_FAULT_EIO)
			assert_int_equal(st.errors, dev_errors(&r));
		/* (a short read is a success to the stats device, an error to the cache) */
		if (k == 1)
			assert_true(eio > 0); /* the first request is a reader's own */
		if (!persistent)
			assert_true(st.errors <= 1);
		if (eio)
			assert_true(st.errors > 0);
		surfaced += eio > 0;
		/* Clear the fault: the same cache must now read everything right. */
		assert_int_equal(cairn_bdev_fault_set(r.fault, NULL), 0);
		assert_int_equal(read_tree(&r, bs, 1), 0);
		cairn_cache_drain(r.cache);
		rig_close(&r);
	}
	print_message("seg %zu bs %zu kind %d persistent %d: %llu requests, %u runs saw EIO\n",
		      seg, bs, (int)kind, persistent, (unsigned long long)requests, surfaced);
	assert_true(surfaced > 0);
}

static void test_eio_each_request(void **state)
{
	campaign(65536, 0, 16384, CAIRN_FAULT_EIO, 0);
#ifndef TEST_SANITIZED
	campaign(4096, 0, 100000, CAIRN_FAULT_EIO, 0);
#endif
}

static void test_short_read_each_request(void **state)
{
	campaign(65536, 0, 16384, CAIRN_FAULT_SHORT, 0);
}

static void test_persistent_each_request(void **state)
{
	campaign(131072, 0, 65536, CAIRN_FAULT_EIO, 1);
}

static void test_under_eviction(void **state)
{
	campaign(65536, 512u << 10, 32768, CAIRN_FAULT_EIO, 0);
}

/* Random faults with several seeds: reads are right or -EIO, never wrong. */
static void test_random_faults(void **state)
{
	for (uint64_t seed = 1; seed <= TEST_SCALE(20); seed++) {
		struct cairn_fault_config fc = { .random_permille = 200, .seed = seed };
		struct rig r;

		rig_open(&r, 32768, 1u << 20);
		assert_int_equal(cairn_bdev_fault_set(r.fault, &fc), 0);
		read_tree(&r, 50000, 0);
		cairn_cache_drain(r.cache);
		assert_int_equal(cairn_bdev_fault_set(r.fault, NULL), 0);
		assert_int_equal(read_tree(&r, 50000, 1), 0);
		rig_close(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_eio_each_request),
		cmocka_unit_test(test_short_read_each_request),
		cmocka_unit_test(test_persistent_each_request),
		cmocka_unit_test(test_under_eviction),
		cmocka_unit_test(test_random_faults),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
