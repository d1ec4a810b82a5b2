/* SPDX-License-Identifier: MIT */
/* mem, offset, stats and delay devices. */
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
