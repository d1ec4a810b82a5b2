/* SPDX-License-Identifier: MIT */
/* The stack builder: options read as far as their size says, the stack owns
 * and counts its devices, the fault hook of <cairn/testing.h>, raw stacks. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <cairn/cairn.h>
#include <cairn/testing.h>

struct fx {
	char dir[64], img[96];
};

static const char g_text[] = "hello from the stack\n";

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct cairn_mkfs_opts mo;
	struct cairn_mkfs *m;
	char p[128];
	FILE *fp;

	assert_non_null(f);
	strcpy(f->dir, "/tmp/cairn-stack.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(p, sizeof(p), "%s/hello", f->dir);
	fp = fopen(p, "w");
	assert_non_null(fp);
	fputs(g_text, fp);
	fclose(fp);
	snprintf(f->img, sizeof(f->img), "%s.cairn", f->dir);
	cairn_mkfs_opts_init(&mo);
	mo.no_fsync = 1;
	assert_int_equal(cairn_mkfs_new(&mo, &m), 0);
	assert_int_equal(cairn_mkfs_add_path(m, "/hello", p, 0), 0);
	assert_int_equal(cairn_mkfs_write_path(m, f->img), 0);
	cairn_mkfs_free(m);
	unlink(p);
	rmdir(f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	unlink(f->img);
	free(f);
	return 0;
}

static void read_hello(struct cairn_stack *s)
{
	struct cairn_image *img = cairn_stack_image(s);
	char buf[64];
	cairn_ino_t ino;

	assert_non_null(img);
	assert_int_equal(cairn_image_resolve(img, "/hello", 1, &ino), 0);
	assert_int_equal(cairn_image_read(img, ino, buf, sizeof(buf), 0), strlen(g_text));
	assert_memory_equal(buf, g_text, strlen(g_text));
}

/* Defaults (NULL opts), and the stats device counts what reached the file. */
static void test_open_and_count(void **state)
{
	struct fx *f = *state;
	struct cairn_bdev_counters c;
	struct cairn_stack *s;

	assert_int_equal(cairn_stack_open(f->img, NULL, NULL, 0, &s), 0);
	read_hello(s);
	assert_int_equal(cairn_stack_counters(s, &c), 0);
	assert_true(c.requests >= 1);
	assert_true(c.bytes > 0);
	assert_null(cairn_stack_fault_dev(s));
	assert_non_null(cairn_stack_bdev(s));
	cairn_stack_close(s);
}

/* A caller built against an older, smaller cairn_stack_opts: the fields past
 * its size are not read, whatever the bytes there. */
static void test_opts_size(void **state)
{
	struct fx *f = *state;
	struct cairn_stack_opts o;
	struct cairn_stack *s;
	char why[128];

	memset(&o, 0, sizeof(o));
	assert_int_equal(cairn_stack_open(f->img, &o, why, sizeof(why), &s), -EINVAL);
	assert_non_null(strstr(why, "cairn_stack_opts_init"));
	cairn_stack_opts_init(&o);
	assert_int_equal(o.size, sizeof(o));
	o.size = offsetof(struct cairn_stack_opts, flags);
	o.flags = CAIRN_STACK_RAW; /* past the size: ignored, so an image opens */
	assert_int_equal(cairn_stack_open(f->img, &o, why, sizeof(why), &s), 0);
	read_hello(s);
	cairn_stack_close(s);
}

/* Raw: any file, the stack ends at the cache. */
static void test_raw(void **state)
{
	struct fx *f = *state;
	struct cairn_stack_opts o;
	struct cairn_stack *s;
	uint8_t magic[4];

	cairn_stack_opts_init(&o);
	o.flags = CAIRN_STACK_RAW;
	assert_int_equal(cairn_stack_open(f->img, &o, NULL, 0, &s), 0);
	assert_null(cairn_stack_image(s));
	assert_int_equal(cairn_cache_read(cairn_stack_cache(s), magic, 4, 0, NULL), 4);
	cairn_stack_close(s);
}

/* The test hook: a fault device under the stats device, reachable from the
 * stack; the first request failing fails the open with the device's error. */
static void test_faulty(void **state)
{
	struct fx *f = *state;
	struct cairn_fault_config fc = { .fail_nth = 1, .kind = CAIRN_FAULT_EIO };
	static const struct cairn_fault_config idle;
	struct cairn_bdev_counters c;
	struct cairn_stack *s;
	uint64_t seen, injected;

	assert_int_equal(cairn_stack_open_faulty(f->img, NULL, &fc, NULL, 0, &s), -EIO);
	assert_int_equal(cairn_stack_open_faulty(f->img, NULL, &idle, NULL, 0, &s), 0);
	assert_non_null(cairn_stack_fault_dev(s));
	read_hello(s);
	assert_int_equal(cairn_bdev_fault_counts(cairn_stack_fault_dev(s), &seen, &injected), 0);
	assert_int_equal(cairn_stack_counters(s, &c), 0);
	assert_int_equal(seen, c.requests);
	assert_int_equal(injected, 0);
	cairn_stack_close(s);
}

static void test_missing_file(void **state)
{
	struct cairn_stack *s = NULL;
	char why[128];

	(void)state;
	assert_int_equal(cairn_stack_open("/nonexistent/x.cairn", NULL, why, sizeof(why), &s),
			 -ENOENT);
	assert_null(s);
	cairn_stack_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_and_count),
		cmocka_unit_test(test_opts_size),
		cmocka_unit_test(test_raw),
		cmocka_unit_test(test_faulty),
		cmocka_unit_test(test_missing_file),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
