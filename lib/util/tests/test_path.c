/* SPDX-License-Identifier: MIT */
/* util_path_join / util_path_resolve(_in): the one path join of the library. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "util/util_int.h"

static void join_is(const char *dir, const char *name, size_t len, const char *want)
{
	char *p = util_path_join(dir, name, len);

	assert_non_null(p);
	assert_string_equal(p, want);
	free(p);
}

static void resolve_with(char *(*fn)(const char *, const char *), const char *base,
			 const char *name, const char *want)
{
	char *p = fn(base, name);

	assert_non_null(p);
	assert_string_equal(p, want);
	free(p);
}

static void resolve_is(const char *base, const char *name, const char *want)
{
	resolve_with(util_path_resolve, base, name, want);
}

static void test_join(void **state)
{
	(void)state;
	join_is("a", "b", 1, "a/b");
	join_is("a/", "b", 1, "a/b");        /* one slash between them */
	join_is("/", "etc", 3, "/etc");
	join_is("", "b", 1, "b");            /* no directory: the name alone */
	join_is("/x/y", "name-and-more", 4, "/x/y/name"); /* name_len bytes of name */
	join_is("d", "", 0, "d/");
}

static void test_resolve(void **state)
{
	(void)state;
	resolve_is("/base", "rel/f", "/base/rel/f");
	resolve_is("/base/", "f", "/base/f");
	resolve_is("/base", "/abs/f", "/abs/f"); /* absolute: as written */
	resolve_is("", "f", "f");                /* no base: relative to the cwd */
}

static void resolve_in_is(const char *dir, const char *name, const char *want)
{
	resolve_with(util_path_resolve_in, dir, name, want);
}

static void test_resolve_in(void **state)
{
	(void)state;
	resolve_in_is("/img", "base.qcow2", "/img/base.qcow2");
	resolve_in_is("", "base.qcow2", "/base.qcow2"); /* empty dir: the root */
	resolve_in_is("", "/abs/base", "/abs/base");
	resolve_in_is("d/", "b", "d/b");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_resolve_in),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
