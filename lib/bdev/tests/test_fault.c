/* SPDX-License-Identifier: MIT */
/* fault device: nth, every Kth, seeded random, short reads, persistence, set/clear. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <cairn/bdev.h>
#include <cairn/testing.h>

#define SZ 8192

static unsigned char src[SZ];

static struct cairn_bdev *make(const struct cairn_fault_config *cfg)
{
	struct cairn_bdev *m, *f;

	for (size_t i = 0; i < SZ; i++)
		src[i] = (unsigned char)(i * 7 + 3);
	assert_int_equal(cairn_bdev_mem_new(src, SZ, 0, &m), 0);
	assert_int_equal(cairn_bdev_fault_new(m, cfg, &f), 0);
	return f;
}

static void test_no_plan_passes(void **state)
{
	struct cairn_bdev *f = make(NULL);
	unsigned char buf[100];

	for (int i = 0; i < 50; i++)
		assert_int_equal(cairn_bdev_read(f, buf, 100, 10), 100);
	assert_memory_equal(buf, src + 10, 100);
	cairn_bdev_close(f);
}

static void test_nth(void **state)
{
	struct cairn_fault_config cfg = { .fail_nth = 3 };
	struct cairn_bdev *f = make(&cfg);
	unsigned char buf[100];

	assert_int_equal(cairn_bdev_read(f, buf, 100, 0), 100);
	assert_int_equal(cairn_bdev_read(f, buf, 100, 0), 100);
	assert_int_equal(cairn_bdev_read(f, buf, 100, 0), -EIO);
	/* transient: the retry works */
	assert_int_equal(cairn_bdev_read(f, buf, 100, 0), 100);
	assert_memory_equal(buf, src, 100);
	/* set restarts the count */
	assert_int_equal(cairn_bdev_fault_set(f, &cfg), 0);
	assert_int_equal(cairn_bdev_read(f, buf, 100, 0), 100);
	assert_int_equal(cairn_bdev_read(f, buf, 100, 0), 100);
	assert_int_equal(cairn_bdev_read(f, buf, 100, 0), -EIO);
	cairn_bdev_close(f);
}

static void test_every(void **state)
{
	struct cairn_fault_config cfg = { .fail_every = 4 };
	struct cairn_bdev *f = make(&cfg);
	unsigned char buf[10];

	for (int n = 1; n <= 20; n++)
		assert_int_equal(cairn_bdev_read(f, buf, 10, 0), n % 4 == 0 ? -EIO : 10);
	cairn_bdev_close(f);
}

static unsigned random_pattern(uint64_t seed, char *out, int n)
{
	struct cairn_fault_config cfg = { .random_permille = 300, .seed = seed };
	struct cairn_bdev *f = make(&cfg);
	unsigned char buf[10];
	unsigned fails = 0;

	for (int i = 0; i < n; i++) {
		out[i] = cairn_bdev_read(f, buf, 10, 0) < 0;
		fails += (unsigned)out[i];
	}
	cairn_bdev_close(f);
	return fails;
}

static void test_random_is_seeded(void **state)
{
	char a[1000], b[1000], c[1000];
	unsigned fa = random_pattern(42, a, 1000);

	assert_int_equal(random_pattern(42, b, 1000), fa);
	assert_memory_equal(a, b, sizeof(a));
	random_pattern(43, c, 1000);
	assert_memory_not_equal(a, c, sizeof(a));
	/* 30% of 1000 with a fair mix lands well inside this */
	assert_in_range(fa, 200, 400);
}

static void test_short_read(void **state)
{
	struct cairn_fault_config cfg = { .fail_nth = 1, .kind = CAIRN_FAULT_SHORT };
	struct cairn_bdev *f = make(&cfg);
	unsigned char buf[100];

	assert_int_equal(cairn_bdev_read(f, buf, 100, 50), 50);
	assert_memory_equal(buf, src + 50, 50);
	assert_int_equal(cairn_bdev_fault_set(f, &cfg), 0);
	assert_int_equal(cairn_bdev_read_full(f, buf, 100, 50), -EIO);
	cairn_bdev_close(f);
}

static void test_persistent(void **state)
{
	struct cairn_fault_config cfg = { .fail_nth = 1, .persistent = 1 };
	struct cairn_bdev *f = make(&cfg);
	unsigned char buf[100];

	assert_int_equal(cairn_bdev_read(f, buf, 100, 1000), -EIO);
	/* the same range and anything overlapping it keep failing */
	assert_int_equal(cairn_bdev_read(f, buf, 100, 1000), -EIO);
	assert_int_equal(cairn_bdev_read(f, buf, 10, 1099), -EIO);
	/* elsewhere is fine */
	assert_int_equal(cairn_bdev_read(f, buf, 100, 1100), 100);
	assert_int_equal(cairn_bdev_read(f, buf, 100, 0), 100);
	/* clearing the plan heals it */
	assert_int_equal(cairn_bdev_fault_set(f, NULL), 0);
	assert_int_equal(cairn_bdev_read(f, buf, 100, 1000), 100);
	assert_memory_equal(buf, src + 1000, 100);
	cairn_bdev_close(f);
}

static void test_set_rejects_other_devices(void **state)
{
	struct cairn_bdev *m;

	assert_int_equal(cairn_bdev_mem_new(src, SZ, 0, &m), 0);
	assert_int_equal(cairn_bdev_fault_set(m, NULL), -EINVAL);
	cairn_bdev_close(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_plan_passes),
		cmocka_unit_test(test_nth),
		cmocka_unit_test(test_every),
		cmocka_unit_test(test_random_is_seeded),
		cmocka_unit_test(test_short_read),
		cmocka_unit_test(test_persistent),
		cmocka_unit_test(test_set_rejects_other_devices),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
