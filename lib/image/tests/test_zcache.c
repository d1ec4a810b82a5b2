/* SPDX-License-Identifier: MIT */
/*
 * The decompressed-chunk cache's entry memory (zcache.c, cairn_zcache_set_slot):
 * entries of up to a slot come from 2 MiB blocks, every entry keeps its own
 * bytes however many come and go, the blocks mapped never pass the budget /
 * 2 MiB + the spare (past that, malloc), blocks that empty out are given back
 * but one, and threads that load and drop entries at once get the right bytes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "image/zcache.h"

#define SLOT (16u << 10)
#define SPARE 4u /* ZC_SPARE_BLOCKS */

static unsigned char byte_of(uint64_t key, size_t i)
{
	return (unsigned char)(key * 131 + i * 7 + (i >> 9));
}

static int fill(void *ctx, uint64_t key, void *buf, size_t len)
{
	unsigned char *p = buf;

	(void)ctx;
	for (size_t i = 0; i < len; i++)
		p[i] = byte_of(key, i);
	return 0;
}

static size_t len_of(uint64_t key)
{
	return key % 5 ? SLOT : SLOT - 100 - key % 1000; /* a short last chunk now and then */
}

static void check(uint64_t key, const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != byte_of(key, i))
			fail_msg("chunk %llu: byte %zu differs", (unsigned long long)key, i);
}

static uint64_t blocks(struct cairn_zcache *z)
{
	struct cairn_zcache_stats st;

	cairn_zcache_get_stats(z, &st);
	return st.blocks;
}

/* 600 entries held at once (past the cap of 4 + 0 blocks of 128 slots: the
 * rest from malloc), then 2000 loaded and dropped one after another: every
 * entry reads its own bytes, the cap holds, and once nothing is cached at most
 * one block stays mapped. */
static void test_slots(void **state)
{
	struct cairn_zcache *z;
	struct cairn_zentry *held[600];
	const void *data;
	uint64_t cap = (256u << 10) / (2u << 20) + SPARE;

	(void)state;
	assert_int_equal(cairn_zcache_new(256u << 10, &z), 0);
	cairn_zcache_set_slot(z, SLOT);
	for (uint64_t k = 0; k < 600; k++) {
		assert_int_equal(cairn_zcache_get(z, k, len_of(k), fill, NULL, &held[k], &data), 0);
		check(k, data, len_of(k));
		assert_true(blocks(z) <= cap);
	}
	assert_int_equal(blocks(z), cap);
	for (uint64_t k = 0; k < 600; k++) {
		assert_int_equal(cairn_zcache_get(z, k, len_of(k), NULL, NULL, &held[k], &data), 0);
		check(k, data, len_of(k));
		cairn_zcache_put(z, held[k]);
		cairn_zcache_put(z, held[k]);
	}
	for (uint64_t k = 1000; k < 3000; k++) {
		struct cairn_zentry *e;

		assert_int_equal(cairn_zcache_get(z, k, len_of(k), fill, NULL, &e, &data), 0);
		check(k, data, len_of(k));
		cairn_zcache_put(z, e);
		assert_true(blocks(z) <= cap);
	}
	cairn_zcache_set_budget(z, 1); /* evicts everything nobody holds */
	assert_true(blocks(z) <= 1);
	cairn_zcache_free(z);
}

/* A slot size that is not a power of two from 16 KiB to 1 MiB, or one set once
 * blocks are mapped, is ignored; entries longer than the slot use malloc. */
static void test_slot_rules(void **state)
{
	static const size_t bad[] = { 0, 3000, 8u << 10, 2u << 20, (16u << 10) + 4096 };
	struct cairn_zcache *z;
	struct cairn_zentry *e;
	const void *data;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(cairn_zcache_new(0, &z), 0);
		cairn_zcache_set_slot(z, bad[i]);
		assert_int_equal(cairn_zcache_get(z, 1, 4096, fill, NULL, &e, &data), 0);
		check(1, data, 4096);
		cairn_zcache_put(z, e);
		assert_int_equal(blocks(z), 0);
		cairn_zcache_free(z);
	}
	assert_int_equal(cairn_zcache_new(0, &z), 0);
	cairn_zcache_set_slot(z, SLOT);
	assert_int_equal(cairn_zcache_get(z, 2, SLOT + 1, fill, NULL, &e, &data), 0);
	check(2, data, SLOT + 1);
	cairn_zcache_put(z, e);
	assert_int_equal(blocks(z), 0);
	assert_int_equal(cairn_zcache_get(z, 3, SLOT, fill, NULL, &e, &data), 0);
	cairn_zcache_put(z, e);
	assert_int_equal(blocks(z), 1);
	cairn_zcache_set_slot(z, 2 * SLOT); /* blocks mapped: ignored */
	assert_int_equal(cairn_zcache_get(z, 4, SLOT, fill, NULL, &e, &data), 0);
	check(4, data, SLOT);
	cairn_zcache_put(z, e);
	assert_int_equal(blocks(z), 1);
	cairn_zcache_free(z);
}

struct worker {
	struct cairn_zcache *z;
	unsigned seed;
};

static void *churn(void *arg)
{
	struct worker *w = arg;

	for (unsigned i = 0; i < 3000; i++) {
		struct cairn_zentry *e;
		const void *data;
		uint64_t k = (uint64_t)(rand_r(&w->seed) % 400);

		if (cairn_zcache_get(w->z, k, len_of(k), fill, NULL, &e, &data))
			return (void *)1;
		check(k, data, len_of(k));
		if (i % 7 == 0)
			(void)cairn_zcache_delivered(w->z, k, 0, len_of(k)); /* drop it */
		cairn_zcache_put(w->z, e);
	}
	return NULL;
}

/* Four threads loading, reading, delivering and evicting over a small budget. */
static void test_threads(void **state)
{
	struct cairn_zcache *z;
	struct worker w[4];
	pthread_t t[4];

	(void)state;
	assert_int_equal(cairn_zcache_new(1u << 20, &z), 0);
	cairn_zcache_set_slot(z, SLOT);
	for (unsigned i = 0; i < 4; i++) {
		w[i] = (struct worker){ z, i + 1 };
		assert_int_equal(pthread_create(&t[i], NULL, churn, &w[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		void *rc;

		assert_int_equal(pthread_join(t[i], &rc), 0);
		assert_null(rc);
	}
	assert_true(blocks(z) <= (1u << 20) / (2u << 20) + SPARE);
	cairn_zcache_free(z);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slots),
		cmocka_unit_test(test_slot_rules),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
