/* SPDX-License-Identifier: MIT */
/* The library version: one string, matching its numbers, and apart from the
 * format's version. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <cairn/cairn.h>

static void test_version_string(void **state)
{
	char want[32];

	(void)state;
	snprintf(want, sizeof(want), "%d.%d.%d", CAIRN_VERSION_MAJOR, CAIRN_VERSION_MINOR,
		 CAIRN_VERSION_PATCH);
	assert_string_equal(CAIRN_VERSION_STRING, want);
	assert_string_equal(cairn_version(), CAIRN_VERSION_STRING);
}

static void test_format_version_apart(void **state)
{
	(void)state;
	/* An image of format 1.x is what this library reads and writes, whatever
	 * the library's own version. */
	assert_int_equal(CAIRN_FORMAT_VERSION_MAJOR, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_string),
		cmocka_unit_test(test_format_version_apart),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
