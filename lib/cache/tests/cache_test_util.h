/* SPDX-License-Identifier: MIT */
/* Shared helpers of the cache tests: a patterned source and device stacks. */
#ifndef CACHE_TEST_UTIL_H
#define CACHE_TEST_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <cairn/bdev.h>
#include <cairn/cache.h>

/* Sanitizer builds run the same tests with fewer iterations (TSan makes every
 * lock and memcpy ~10x dearer); the coverage of paths stays the same. */
#include "util/tests/sanitizer.h"
#ifdef TEST_SANITIZED
#define TEST_SCALE(n) ((n) / 4 > 0 ? (n) / 4 : 1)
#else
#define TEST_SCALE(n) (n)
#endif

/* Bytes that differ at every offset, so a misplaced copy is caught. */
static inline unsigned char *make_source(size_t n, uint64_t seed)
{
	unsigned char *p = malloc(n);
	uint64_t x = seed | 1;

	if (!p)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (unsigned char)(x ^ (i >> 9));
	}
	return p;
}

static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

#endif
