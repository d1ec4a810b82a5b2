/* SPDX-License-Identifier: MIT */
/* The library version: one string, matching its numbers, from the header and
 * from the library alike. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_string),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
