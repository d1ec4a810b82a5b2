/* SPDX-License-Identifier: MIT */
/*
 * Shared by the model-based random tests (lib/ramfs/tests/test_model.c,
 * lib/ns/tests/test_model.c): a seeded xorshift64* generator, so that a
 * failing seed replays exactly, and the check that names the seed to rerun.
 * Include after <cmocka.h>.
 */
#ifndef CAIRN_TEST_MODEL_H
#define CAIRN_TEST_MODEL_H

#include <inttypes.h>
#include <stdint.h>

static inline uint64_t t_rng_seed(uint64_t seed)
{
	return seed * 0x9E3779B97F4A7C15ull + 1;
}

static inline uint64_t t_rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* A number below n (0 for n == 0). */
static inline uint64_t t_rng_below(uint64_t *s, uint64_t n)
{
	return n ? t_rng_next(s) % n : 0;
}

/* Fail the test unless cond, naming the seed (what: the variant run) and the
 * operation number. */
#define T_MODEL_CHECK(seed, what, op, cond, ...) do { \
	if (!(cond)) { \
		print_error("seed=%" PRIu64 " %s op=%d: ", (uint64_t)(seed), (what), (int)(op)); \
		print_error(__VA_ARGS__); \
		print_error("\n(rerun with CAIRN_SEED=%" PRIu64 ")\n", (uint64_t)(seed)); \
		fail(); \
	} \
} while (0)

#endif
