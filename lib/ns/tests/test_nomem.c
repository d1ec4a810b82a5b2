/* SPDX-License-Identifier: MIT */
/*
 * Out of memory in the namespace: each test body is rerun with the 1st, 2nd,
 * ... allocation it makes failing, until it runs without meeting one (as
 * SQLite's fault-injection tests do). Whatever fails, the namespace must stay
 * true to itself: a rename either happened, with the moved node knowing its new
 * name, or did not happen at all.
 *
 * Allocations are counted by replacing malloc, calloc and realloc in this
 * program (glibc's own are __libc_*). Sanitizers replace them too, so there
 * the tests are skipped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cairn/ns.h>

#include "util/tests/sanitizer.h"
#if defined(TEST_SANITIZED)
#define NO_MALLOC_HOOK 1 /* the sanitizers interpose malloc themselves */
#endif

static long fail_in; /* > 0: the fail_in-th allocation from now fails */

#ifndef NO_MALLOC_HOOK
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);

static int should_fail(void)
{
	if (fail_in > 0 && --fail_in == 0) {
		errno = ENOMEM;
		return 1;
	}
	return 0;
}

void *malloc(size_t size)
{
	return should_fail() ? NULL : __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	return should_fail() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	return should_fail() ? NULL : __libc_realloc(p, size);
}
#endif

static const struct cairn_cred root = { 0, 0, 0 };

static uint64_t mk(struct cairn_ns *ns, uint64_t dir, const char *name, int isdir)
{
	struct cairn_ns_entry e;

	if (isdir)
		assert_int_equal(cairn_ns_mkdir(ns, dir, name, strlen(name), 0755, &root, &e), 0);
	else
		assert_int_equal(cairn_ns_mknod(ns, dir, name, strlen(name), S_IFREG | 0644, 0,
						&root, &e), 0);
	return e.node;
}

static int exists(struct cairn_ns *ns, uint64_t dir, const char *name)
{
	struct cairn_ns_entry e;
	int rc = cairn_ns_lookup(ns, dir, name, strlen(name), &e);

	if (rc == 0)
		cairn_ns_forget(ns, e.node, 1);
	else
		assert_int_equal(rc, -ENOENT);
	return rc == 0;
}

static void path_is(struct cairn_ns *ns, uint64_t node, const char *want)
{
	char buf[64];

	assert_true(cairn_ns_path(ns, node, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, want);
}

/* Runs step on a fresh RAM-only namespace with its 1st, 2nd, ... allocation
 * failing (step arms fail_in around the call under test) until step's call
 * succeeds: then nothing was left to fail. */
static void each_failing_alloc(const char *what, int (*step)(struct cairn_ns *ns, long k))
{
	long k;

#ifdef NO_MALLOC_HOOK
	skip();
#endif
	for (k = 1; k < 10000; k++) {
		struct cairn_ns_config c = { .flags = CAIRN_NS_EMPTY };
		struct cairn_ns *ns;
		int rc;

		assert_int_equal(cairn_ns_new(&c, &ns), 0);
		rc = step(ns, k);
		cairn_ns_free(ns);
		if (rc == 0)
			break;
		assert_int_equal(rc, -ENOMEM);
	}
	print_message("%s ran with %ld allocations failing in turn\n", what, k - 1);
	assert_true(k > 1); /* the hook saw allocations: the test tested something */
}

/* /d1/a -> /d2/b, the node of a held across it: the node's path always matches
 * the tree. */
static int rename_step(struct cairn_ns *ns, long k)
{
	uint64_t d1 = mk(ns, CAIRN_NS_ROOT, "d1", 1), d2 = mk(ns, CAIRN_NS_ROOT, "d2", 1);
	uint64_t a = mk(ns, d1, "a", 0);
	int rc;

	fail_in = k;
	rc = cairn_ns_rename(ns, d1, "a", 1, d2, "b", 1, 0);
	fail_in = 0;
	assert_int_equal(exists(ns, d1, "a"), rc != 0);
	assert_int_equal(exists(ns, d2, "b"), rc == 0);
	path_is(ns, a, rc ? "/d1/a" : "/d2/b");
	cairn_ns_forget(ns, a, 1);
	cairn_ns_forget(ns, d1, 1);
	cairn_ns_forget(ns, d2, 1);
	return rc;
}

static void test_rename_nomem(void **state)
{
	(void)state;
	each_failing_alloc("rename", rename_step);
}

/* An O_TMPFILE file named with link(): named (the node knows it) or not at all. */
static int tmpfile_link_step(struct cairn_ns *ns, long k)
{
	uint64_t d = mk(ns, CAIRN_NS_ROOT, "d", 1);
	struct cairn_ns_entry t, e;
	int rc;

	assert_int_equal(cairn_ns_tmpfile(ns, d, 0600, &root, &t), 0);
	fail_in = k;
	rc = cairn_ns_link(ns, t.node, d, "t", 1, &e);
	fail_in = 0;
	assert_int_equal(exists(ns, d, "t"), rc == 0);
	if (rc == 0) {
		path_is(ns, t.node, "/d/t");
		cairn_ns_forget(ns, e.node, 1);
	}
	cairn_ns_forget(ns, t.node, 1);
	cairn_ns_forget(ns, d, 1);
	return rc;
}

static void test_tmpfile_link_nomem(void **state)
{
	(void)state;
	each_failing_alloc("link of an O_TMPFILE file", tmpfile_link_step);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rename_nomem),
		cmocka_unit_test(test_tmpfile_link_nomem),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
