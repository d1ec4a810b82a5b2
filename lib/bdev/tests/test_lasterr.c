/* SPDX-License-Identifier: MIT */
/* cairn_bdev_last_error(): the newest failure in a stack, named by the device
 * under it, with its range and cause; safe beside reads on other threads. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <cairn/bdev.h>
#include <cairn/testing.h>

#define SZ 65536

/* A file of SZ bytes; path gets its name. */
static void make_file(char path[64])
{
	static unsigned char buf[SZ];
	int fd;

	snprintf(path, 64, "/tmp/cairn-lasterr-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	memset(buf, 0x5a, sizeof(buf));
	assert_int_equal(write(fd, buf, sizeof(buf)), SZ);
	close(fd);
}

static struct cairn_bdev *file_under_fault(const char *path, const struct cairn_fault_config *cfg)
{
	struct cairn_bdev *file, *f;

	assert_int_equal(cairn_bdev_file_open(path, 0, &file), 0);
	assert_int_equal(cairn_bdev_fault_new(file, cfg, &f), 0);
	return f;
}

static void test_none_recorded(void **state)
{
	struct cairn_bdev *m;
	struct cairn_bdev_error e;
	char text[64] = "x";
	static const char buf[16];

	assert_int_equal(cairn_bdev_mem_new(buf, sizeof(buf), 0, &m), 0);
	assert_int_equal(cairn_bdev_last_error(m, &e), 0);
	assert_int_equal(e.err, 0);
	cairn_bdev_error_format(&e, text, sizeof(text));
	assert_string_equal(text, "");
	cairn_bdev_close(m);
}

/* The fault device has no name: the file under it lends its path. */
static void test_fault_named_by_the_file(void **state)
{
	struct cairn_fault_config cfg = { .fail_nth = 2 };
	char path[64], text[600], want[600];
	struct cairn_bdev *f;
	struct cairn_bdev_error e;
	unsigned char buf[4096];

	make_file(path);
	f = file_under_fault(path, &cfg);
	assert_int_equal(cairn_bdev_read(f, buf, sizeof(buf), 0), 4096);
	assert_int_equal(cairn_bdev_last_error(f, &e), 0);
	assert_int_equal(cairn_bdev_read(f, buf, 4096, 8192), -EIO);
	assert_int_equal(cairn_bdev_last_error(f, &e), 1);
	assert_int_equal(e.err, -EIO);
	assert_int_equal(e.off, 8192);
	assert_int_equal(e.len, 4096);
	assert_int_equal(e.count, 1);
	assert_string_equal(e.device, path);
	cairn_bdev_error_format(&e, text, sizeof(text));
	snprintf(want, sizeof(want), "%s: bytes 8192-12287: injected fault: EIO", path);
	assert_string_equal(text, want);
	/* A later success leaves the record: it is the last failure, not the state. */
	assert_int_equal(cairn_bdev_read(f, buf, 4096, 0), 4096);
	assert_int_equal(cairn_bdev_last_error(f, &e), 1);
	cairn_bdev_close(f);
	unlink(path);
}

/* The newest failure wins, wherever in the stack it was recorded. */
static void test_newest_wins(void **state)
{
	struct cairn_fault_config cfg = { .fail_nth = 1 };
	char path[64];
	struct cairn_bdev *f;
	struct cairn_bdev_error e;
	unsigned char buf[4096];

	make_file(path);
	f = file_under_fault(path, &cfg);
	assert_int_equal(cairn_bdev_read(f, buf, 4096, 0), -EIO);
	assert_int_equal(truncate(path, 1000), 0); /* the file shrinks under the device */
	assert_int_equal(cairn_bdev_read(f, buf, 4096, 40960), 0);
	assert_int_equal(cairn_bdev_last_error(f, &e), 1);
	assert_int_equal(e.err, -EIO);
	assert_int_equal(e.off, 40960);
	assert_non_null(strstr(e.cause, "short read: 0 of 4096 bytes"));
	assert_string_equal(e.device, path);
	cairn_bdev_close(f);
	unlink(path);
}

/* A device of an older ops table (no last_error) above is walked past. */
static ssize_t pass_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	return cairn_bdev_read(dev->below, buf, len, off);
}

static void pass_close(struct cairn_bdev *dev)
{
	cairn_bdev_close(dev->below);
	free(dev);
}

static const struct cairn_bdev_ops pass_ops = {
	.version = 3, .name = "pass", .read = pass_read, .close = pass_close,
};

static void test_older_device_above(void **state)
{
	struct cairn_fault_config cfg = { .fail_every = 1 };
	char path[64];
	struct cairn_bdev *f, *top = calloc(1, sizeof(*top));
	struct cairn_bdev_error e;
	unsigned char buf[16];

	make_file(path);
	f = file_under_fault(path, &cfg);
	assert_non_null(top);
	assert_int_equal(cairn_bdev_init(top, &pass_ops, f, cairn_bdev_size(f)), 0);
	assert_int_equal(cairn_bdev_read(top, buf, sizeof(buf), 100), -EIO);
	assert_int_equal(cairn_bdev_last_error(top, &e), 1);
	assert_int_equal(e.off, 100);
	assert_string_equal(e.device, path);
	cairn_bdev_close(top);
	unlink(path);
}

/* Readers fail on several threads while another asks: every answer is one
 * whole record (TSan: make BUILD=build-tsan SAN=tsan CC=clang unit-test). */
struct race {
	struct cairn_bdev *dev;
};

static void *reader(void *arg)
{
	struct race *r = arg;
	unsigned char buf[512];

	for (unsigned i = 0; i < 2000; i++)
		(void)cairn_bdev_read(r->dev, buf, 512, (uint64_t)(i % 64) * 1024);
	return NULL;
}

static void test_threads(void **state)
{
	struct cairn_fault_config cfg = { .random_permille = 500, .seed = 7 };
	char path[64];
	struct race r = { 0 };
	pthread_t th[3];
	struct cairn_bdev_error e;

	make_file(path);
	r.dev = file_under_fault(path, &cfg);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&th[i], NULL, reader, &r), 0);
	for (unsigned i = 0; i < 2000; i++)
		if (cairn_bdev_last_error(r.dev, &e) == 1) {
			assert_int_equal(e.len, 512);
			assert_int_equal(e.off % 1024, 0);
			assert_string_equal(e.cause, "injected fault: EIO");
			assert_string_equal(e.device, path);
		}
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(cairn_bdev_last_error(r.dev, &e), 1);
	assert_true(e.count > 100);
	cairn_bdev_close(r.dev);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none_recorded),
		cmocka_unit_test(test_fault_named_by_the_file),
		cmocka_unit_test(test_newest_wins),
		cmocka_unit_test(test_older_device_above),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
