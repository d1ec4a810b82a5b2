/* SPDX-License-Identifier: MIT */
/* mem, offset, stats and delay devices; vectored reads through each (and fault). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <cairn/bdev.h>
#include <cairn/testing.h>

#define SZ 65536

static unsigned char *pattern(size_t n)
{
	unsigned char *p = malloc(n);

	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 131 + (i >> 8));
	return p;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static ssize_t nul_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	(void)dev;
	(void)off;
	memset(buf, 0, len);
	return (ssize_t)len;
}

static void nul_close(struct cairn_bdev *dev)
{
	(void)dev;
}

/* An embedder's device registers through cairn_bdev_init(), which refuses an
 * ops table of a version this library does not know (a newer one) or none. */
static void test_bdev_init_checks_version(void **state)
{
	static const struct cairn_bdev_ops v1 = { .version = 1, .name = "nul",
						  .read = nul_read, .close = nul_close };
	static const struct cairn_bdev_ops v0 = { .name = "nul", .read = nul_read,
						  .close = nul_close };
	static const struct cairn_bdev_ops newer = { .version = CAIRN_BDEV_OPS_VERSION + 1,
						     .name = "nul", .read = nul_read,
						     .close = nul_close };
	static const struct cairn_bdev_ops no_read = { .version = 1, .name = "nul",
						       .close = nul_close };
	struct cairn_bdev d = { 0 };
	char b[8];

	(void)state;
	assert_int_equal(cairn_bdev_init(&d, &v0, NULL, 8), -EINVAL);
	assert_int_equal(cairn_bdev_init(&d, &newer, NULL, 8), -EINVAL);
	assert_int_equal(cairn_bdev_init(&d, &no_read, NULL, 8), -EINVAL);
	assert_null(d.ops);
	assert_int_equal(cairn_bdev_init(&d, &v1, NULL, 8), 0);
	assert_int_equal(cairn_bdev_read(&d, b, sizeof(b), 4), 4);
	/* Version 1 has no held method: the library never looks past close. */
	assert_int_equal(cairn_bdev_held(&d, 0, 8), -ENOTSUP);
}

static void test_mem_read_and_clip(void **state)
{
	unsigned char *src = pattern(SZ), buf[300];
	struct cairn_bdev *d;

	assert_int_equal(cairn_bdev_mem_new(src, SZ, 1, &d), 0);
	free(src); /* copied: the device must not need it */
	src = pattern(SZ);
	assert_int_equal(cairn_bdev_size(d), SZ);
	assert_int_equal(cairn_bdev_read(d, buf, 300, 1000), 300);
	assert_memory_equal(buf, src + 1000, 300);
	assert_int_equal(cairn_bdev_read(d, buf, 300, SZ - 100), 100);
	assert_memory_equal(buf, src + SZ - 100, 100);
	assert_int_equal(cairn_bdev_read(d, buf, 300, SZ), 0);
	assert_int_equal(cairn_bdev_read(d, buf, 300, UINT64_MAX), 0);
	assert_int_equal(cairn_bdev_read_full(d, buf, 300, SZ - 100), -EIO);
	assert_int_equal(cairn_bdev_read_full(d, buf, 300, 0), 0);
	cairn_bdev_close(d);
	free(src);
	assert_int_equal(cairn_bdev_mem_new(NULL, 10, 0, &d), -EINVAL);
}

static void test_offset(void **state)
{
	unsigned char *src = pattern(SZ), buf[64];
	struct cairn_bdev *m, *o;

	assert_int_equal(cairn_bdev_mem_new(src, SZ, 0, &m), 0);
	assert_int_equal(cairn_bdev_offset_new(m, SZ + 1, 0, &o), -EINVAL);
	assert_int_equal(cairn_bdev_offset_new(m, 100, SZ, &o), -EINVAL);
	assert_int_equal(cairn_bdev_offset_new(m, 4096, 1000, &o), 0);
	assert_int_equal(cairn_bdev_size(o), 1000);
	assert_int_equal(cairn_bdev_read(o, buf, 64, 0), 64);
	assert_memory_equal(buf, src + 4096, 64);
	assert_int_equal(cairn_bdev_read(o, buf, 64, 990), 10);
	assert_memory_equal(buf, src + 4096 + 990, 10);
	cairn_bdev_close(o); /* closes m too */

	assert_int_equal(cairn_bdev_mem_new(src, SZ, 0, &m), 0);
	assert_int_equal(cairn_bdev_offset_new(m, 1000, 0, &o), 0);
	assert_int_equal(cairn_bdev_size(o), SZ - 1000);
	cairn_bdev_close(o);
	free(src);
}

static void test_stats_histogram(void **state)
{
	unsigned char *src = pattern(SZ), *buf = malloc(SZ);
	struct cairn_bdev *m, *s;
	struct cairn_bdev_counters c;

	assert_int_equal(cairn_bdev_mem_new(src, SZ, 0, &m), 0);
	assert_int_equal(cairn_bdev_get_stats(m, &c), -EINVAL);
	assert_int_equal(cairn_bdev_stats_new(m, &s), 0);
	assert_int_equal(cairn_bdev_read(s, buf, 512, 0), 512);     /* bucket 0 */
	assert_int_equal(cairn_bdev_read(s, buf, 1023, 0), 1023);   /* bucket 0 */
	assert_int_equal(cairn_bdev_read(s, buf, 1024, 0), 1024);   /* bucket 1 */
	assert_int_equal(cairn_bdev_read(s, buf, 4096, 0), 4096);   /* bucket 3 */
	assert_int_equal(cairn_bdev_read(s, buf, SZ, 0), SZ);       /* bucket 7 */
	assert_int_equal(cairn_bdev_get_stats(s, &c), 0);
	assert_int_equal(c.requests, 5);
	assert_int_equal(c.bytes, 512 + 1023 + 1024 + 4096 + SZ);
	assert_int_equal(c.errors, 0);
	assert_int_equal(c.hist[0], 2);
	assert_int_equal(c.hist[1], 1);
	assert_int_equal(c.hist[3], 1);
	assert_int_equal(c.hist[7], 1);
	cairn_bdev_reset_stats(s);
	assert_int_equal(cairn_bdev_get_stats(s, &c), 0);
	assert_int_equal(c.requests, 0);
	assert_int_equal(c.hist[7], 0);
	cairn_bdev_close(s);
	free(src);
	free(buf);
}

static void test_delay_latency(void **state)
{
	unsigned char *src = pattern(SZ), buf[512];
	struct cairn_delay_config cfg = { .latency_ns = 2000000 };
	struct cairn_bdev *m, *d;
	uint64_t t0;

	assert_int_equal(cairn_bdev_mem_new(src, SZ, 0, &m), 0);
	assert_int_equal(cairn_bdev_delay_new(m, &cfg, &d), 0);
	t0 = now_ns();
	for (int i = 0; i < 5; i++) {
		assert_int_equal(cairn_bdev_read(d, buf, 512, (uint64_t)i * 512), 512);
		assert_memory_equal(buf, src + i * 512, 512);
	}
	/* Only a lower bound: a loaded machine may be slower, never faster. */
	assert_true(now_ns() - t0 >= 5 * cfg.latency_ns);
	cairn_bdev_close(d);
	free(src);
}

static void test_delay_bandwidth(void **state)
{
	unsigned char *src = pattern(SZ), *buf = malloc(SZ);
	/* 64 KiB at 8 MiB/s = 7.8 ms, no latency. */
	struct cairn_delay_config cfg = { .bandwidth_bps = 8u << 20 };
	struct cairn_bdev *m, *d;
	uint64_t t0;

	assert_int_equal(cairn_bdev_mem_new(src, SZ, 0, &m), 0);
	assert_int_equal(cairn_bdev_delay_new(m, &cfg, &d), 0);
	t0 = now_ns();
	assert_int_equal(cairn_bdev_read(d, buf, SZ, 0), SZ);
	assert_true(now_ns() - t0 >= 7800000);
	assert_memory_equal(buf, src, SZ);
	cairn_bdev_close(d);
	free(src);
	free(buf);
}

struct par_arg {
	struct cairn_bdev *dev;
	unsigned char *src;
	int ok;
};

static void *par_reader(void *p)
{
	struct par_arg *a = p;
	unsigned char buf[512];

	for (int i = 0; i < 2; i++) {
		if (cairn_bdev_read(a->dev, buf, 512, 4096) != 512 ||
		    memcmp(buf, a->src + 4096, 512))
			return NULL;
	}
	a->ok = 1;
	return NULL;
}

/* 4 threads x 2 requests through 1 channel must take at least 8 latencies;
 * through 4 channels at least 2. Correct data either way. */
static void run_channels(unsigned channels, uint64_t min_ns)
{
	unsigned char *src = pattern(SZ);
	struct cairn_delay_config cfg = { .latency_ns = 3000000, .channels = channels };
	struct cairn_bdev *m, *d;
	pthread_t th[4];
	struct par_arg a[4];
	uint64_t t0;

	assert_int_equal(cairn_bdev_mem_new(src, SZ, 0, &m), 0);
	assert_int_equal(cairn_bdev_delay_new(m, &cfg, &d), 0);
	t0 = now_ns();
	for (int i = 0; i < 4; i++) {
		a[i] = (struct par_arg){ d, src, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, par_reader, &a[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_true(a[i].ok);
	}
	assert_true(now_ns() - t0 >= min_ns);
	cairn_bdev_close(d);
	free(src);
}

static void test_delay_channels(void **state)
{
	run_channels(1, 8 * 3000000ull);
	run_channels(4, 2 * 3000000ull);
}

static void test_delay_bad_config(void **state)
{
	unsigned char src[16] = { 0 };
	struct cairn_delay_config cfg = { .channels = 100000 };
	struct cairn_bdev *m, *d = NULL;

	assert_int_equal(cairn_bdev_mem_new(src, sizeof(src), 0, &m), 0);
	assert_int_equal(cairn_bdev_delay_new(m, &cfg, &d), -EINVAL);
	cairn_bdev_close(m); /* still ours after a failed constructor */
}

/* A leaf with a readv method (as http has): counts the vectors it is given and
 * the reads, over a pattern. */
struct vec_leaf {
	struct cairn_bdev base;
	unsigned char *src;
	unsigned vectors, entries, reads;
	uint64_t first_off; /* of the last vector's first entry */
};

static ssize_t vl_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	struct vec_leaf *l = (struct vec_leaf *)dev;

	l->reads++;
	memcpy(buf, l->src + off, len);
	return (ssize_t)len;
}

static int vl_readv(struct cairn_bdev *dev, const struct cairn_bdev_iov *v, unsigned n)
{
	struct vec_leaf *l = (struct vec_leaf *)dev;

	l->vectors++;
	l->entries += n;
	l->first_off = v[0].off;
	for (unsigned i = 0; i < n; i++)
		memcpy(v[i].buf, l->src + v[i].off, v[i].len);
	return 0;
}

static void vl_close(struct cairn_bdev *dev)
{
	(void)dev; /* on the test's stack */
}

static const struct cairn_bdev_ops vl_ops = { .version = 3, .name = "vecleaf", .read = vl_read,
					      .close = vl_close, .readv = vl_readv };

/* A v1 device (an embedder's from before readv): counts reads. */
static unsigned v1_reads;
static ssize_t v1_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	v1_reads++;
	return vl_read(dev, buf, len, off);
}

static const struct cairn_bdev_ops v1_ops = { .version = 1, .name = "v1", .read = v1_read,
					      .close = vl_close };

/* Three scattered entries out of order, as a profile asks for them. */
#define NV 3
static void fill_iov(struct cairn_bdev_iov *v, unsigned char (*b)[700])
{
	static const uint64_t offs[NV] = { 40000, 100, 9000 };
	static const size_t lens[NV] = { 700, 1, 513 };

	for (int i = 0; i < NV; i++) {
		memset(b[i], 0xee, sizeof(b[i]));
		v[i] = (struct cairn_bdev_iov){ b[i], lens[i], offs[i] };
	}
}

static void check_iov(const struct cairn_bdev_iov *v, const unsigned char *src, uint64_t shift)
{
	for (int i = 0; i < NV; i++) {
		assert_memory_equal(v[i].buf, src + v[i].off + shift, v[i].len);
		if (v[i].len < 700) /* nothing written past the entry */
			assert_int_equal(((unsigned char *)v[i].buf)[v[i].len], 0xee);
	}
}

/* Devices without readv (v1, mem) are read entry by entry; bad vectors are
 * refused whole; a short entry fails the vector. */
static void test_readv_fallback(void **state)
{
	unsigned char *src = pattern(SZ), b[NV][700];
	struct cairn_bdev_iov v[NV];
	struct vec_leaf l = { .src = src };
	struct cairn_fault_config fc = { .fail_nth = 2, .kind = CAIRN_FAULT_SHORT };
	struct cairn_bdev *m, *f;

	(void)state;
	assert_int_equal(cairn_bdev_init(&l.base, &v1_ops, NULL, SZ), 0);
	assert_false(cairn_bdev_readv_native(&l.base));
	fill_iov(v, b);
	assert_int_equal(cairn_bdev_readv(&l.base, v, NV), 0);
	assert_int_equal(v1_reads, NV);
	check_iov(v, src, 0);
	assert_int_equal(cairn_bdev_readv(&l.base, v, 0), 0);
	v[1].off = SZ - 0; /* len 1 at the end: outside */
	assert_int_equal(cairn_bdev_readv(&l.base, v, NV), -EINVAL);
	v[1].off = UINT64_MAX;
	assert_int_equal(cairn_bdev_readv(&l.base, v, NV), -EINVAL);
	assert_int_equal(v1_reads, NV); /* refused before any read */

	assert_int_equal(cairn_bdev_mem_new(src, SZ, 0, &m), 0);
	assert_int_equal(cairn_bdev_fault_new(m, &fc, &f), 0);
	fill_iov(v, b);
	/* mem takes no vector: each entry is a request, and the second comes short */
	assert_int_equal(cairn_bdev_readv(f, v, NV), -EIO);
	assert_int_equal(cairn_bdev_fault_set(f, NULL), 0);
	assert_int_equal(cairn_bdev_readv(f, v, NV), 0);
	check_iov(v, src, 0);
	cairn_bdev_close(f);
	free(src);
}

/* Wrappers hand a vector down whole to a device that takes it, moved by the
 * offset device's start; stats counts it as one request of its total size. */
static void test_readv_passthrough(void **state)
{
	unsigned char *src = pattern(SZ), b[NV][700];
	struct cairn_bdev_iov v[NV];
	struct vec_leaf l = { .src = src };
	struct cairn_delay_config dc = { .latency_ns = 1000000, .channels = 2 };
	struct cairn_fault_config fc = { 0 };
	struct cairn_bdev *o, *f, *d, *s;
	struct cairn_bdev_counters c;

	(void)state;
	assert_int_equal(cairn_bdev_init(&l.base, &vl_ops, NULL, SZ), 0);
	assert_int_equal(cairn_bdev_offset_new(&l.base, 4096, 0, &o), 0);
	assert_int_equal(cairn_bdev_fault_new(o, &fc, &f), 0);
	assert_int_equal(cairn_bdev_delay_new(f, &dc, &d), 0);
	assert_int_equal(cairn_bdev_stats_new(d, &s), 0);
	assert_true(cairn_bdev_readv_native(s));
	fill_iov(v, b);
	assert_int_equal(cairn_bdev_readv(s, v, NV), 0);
	check_iov(v, src, 4096);
	assert_int_equal(l.vectors, 1);
	assert_int_equal(l.entries, NV);
	assert_int_equal(l.reads, 0);
	assert_int_equal(l.first_off, 40000 + 4096);
	assert_int_equal(cairn_bdev_get_stats(s, &c), 0);
	assert_int_equal(c.requests, 1);
	assert_int_equal(c.bytes, 700 + 1 + 513);
	assert_int_equal(c.hist[1], 1); /* 1214 bytes: one request in [1 KiB, 2 KiB) */
	/* A fault plan sees the vector as one request, and fails it whole. */
	fc.fail_nth = 1;
	assert_int_equal(cairn_bdev_fault_set(f, &fc), 0);
	assert_int_equal(cairn_bdev_readv(s, v, NV), -EIO);
	assert_int_equal(l.vectors, 1);
	assert_int_equal(cairn_bdev_get_stats(s, &c), 0);
	assert_int_equal(c.requests, 2);
	assert_int_equal(c.errors, 1);
	cairn_bdev_close(s); /* down to the leaf, whose close is a no-op */
	free(src);
}

/* Over a device that takes no vector (mem), stats counts one request per entry
 * and the delay device charges a latency per entry: three entries through one
 * channel take at least three latencies (a lower bound only). */
static void test_readv_counts_entries(void **state)
{
	unsigned char *src = pattern(SZ), b[NV][700];
	struct cairn_bdev_iov v[NV];
	struct cairn_delay_config dc = { .latency_ns = 3000000, .channels = 1 };
	struct cairn_bdev *m, *d, *s;
	struct cairn_bdev_counters c;
	uint64_t t0;

	(void)state;
	assert_int_equal(cairn_bdev_mem_new(src, SZ, 0, &m), 0);
	assert_int_equal(cairn_bdev_stats_new(m, &s), 0);
	assert_int_equal(cairn_bdev_delay_new(s, &dc, &d), 0);
	assert_false(cairn_bdev_readv_native(d));
	fill_iov(v, b);
	t0 = now_ns();
	assert_int_equal(cairn_bdev_readv(d, v, NV), 0);
	assert_true(now_ns() - t0 >= NV * dc.latency_ns);
	check_iov(v, src, 0);
	assert_int_equal(cairn_bdev_get_stats(s, &c), 0);
	assert_int_equal(c.requests, NV);
	assert_int_equal(c.bytes, 700 + 1 + 513);
	assert_int_equal(c.hist[0], NV); /* each entry below 1 KiB */
	assert_int_equal(c.hist[1], 0);
	cairn_bdev_close(d);
	free(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mem_read_and_clip),
		cmocka_unit_test(test_offset),
		cmocka_unit_test(test_stats_histogram),
		cmocka_unit_test(test_delay_latency),
		cmocka_unit_test(test_delay_bandwidth),
		cmocka_unit_test(test_delay_channels),
		cmocka_unit_test(test_delay_bad_config),
		cmocka_unit_test(test_bdev_init_checks_version),
		cmocka_unit_test(test_readv_fallback),
		cmocka_unit_test(test_readv_passthrough),
		cmocka_unit_test(test_readv_counts_entries),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
