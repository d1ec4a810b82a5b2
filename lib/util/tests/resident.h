/* SPDX-License-Identifier: MIT */
/* For tests: how many pages of [buf, buf + len) are resident (mincore). */
#ifndef CAIRN_TEST_RESIDENT_H
#define CAIRN_TEST_RESIDENT_H

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static inline size_t resident_pages(const void *buf, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page, got = 0;
	unsigned char *vec = malloc(n);

	assert_non_null(vec);
	assert_int_equal(mincore((void *)buf, len, vec), 0);
	for (size_t i = 0; i < n; i++)
		got += vec[i] & 1;
	free(vec);
	return got;
}

#endif
