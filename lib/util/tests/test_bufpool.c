/* SPDX-License-Identifier: MIT */
/* util_bufpool: kept buffers come back in order, the resident ones on top, the
 * rest without pages, and no more than `keep` are kept. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>
#include "util/bufpool.h"
#include "util/tests/resident.h"

static void test_keep_and_resident(void **state)
{
	struct util_bufpool p;
	void *b[4];
	size_t pages;

	(void)state;
	util_bufpool_init(&p, 100000, 3, 2); /* rounded up to whole pages */
	pages = p.size / (size_t)sysconf(_SC_PAGESIZE);
	assert_int_equal(p.size % (size_t)sysconf(_SC_PAGESIZE), 0);
	for (int i = 0; i < 4; i++) {
		b[i] = util_bufpool_get(&p);
		assert_non_null(b[i]);
		assert_int_equal((uintptr_t)b[i] % (uintptr_t)sysconf(_SC_PAGESIZE), 0);
		memset(b[i], 0x5a, p.size);
	}
	for (int i = 0; i < 4; i++)
		util_bufpool_put(&p, b[i]); /* the fourth is freed: keep is 3 */
	assert_int_equal(p.n, 3);
	assert_int_equal(p.nres, 2);
	/* b[0] and b[1] resident on top, b[2] under them without pages. */
	assert_ptr_equal(p.bufs[0], b[2]);
	assert_int_equal(resident_pages(b[2], p.size), 0);
	assert_int_equal(resident_pages(b[0], p.size), pages);
	assert_int_equal(resident_pages(b[1], p.size), pages);
	/* Handed out top first: the resident ones, then the cold one. */
	assert_ptr_equal(util_bufpool_get(&p), b[1]);
	assert_ptr_equal(util_bufpool_get(&p), b[0]);
	assert_int_equal(p.nres, 0);
	assert_ptr_equal(util_bufpool_get(&p), b[2]);
	assert_int_equal(p.n, 0);
	util_bufpool_put(&p, NULL);
	assert_int_equal(p.n, 0);
	free(b[0]);
	free(b[1]);
	free(b[2]);
	util_bufpool_destroy(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keep_and_resident),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
