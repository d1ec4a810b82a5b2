/* SPDX-License-Identifier: MIT */
/*
 * The format helpers of lib/format/format_int.h against docs/FORMAT.md's
 * checksum rules, computed here straight from libxxhash, and the dirent type
 * against glibc's IFTODT(). The writer, the reader and the fuzz fixup all use
 * these helpers, so a slip here would be invisible to a round trip.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <xxhash.h>
#include "format/format_int.h"

#define BLOCKS 3

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return cairn_le64(v);
}

/* Entry i is XXH3-64 of block i, stored le64; nothing around the table moves,
 * even when the table is not 8-byte aligned. */
static void test_csum_fill(void **state)
{
	static uint8_t meta[BLOCKS * CAIRN_BLOCK_SIZE];
	uint8_t out[1 + BLOCKS * 8 + 1];

	(void)state;
	for (size_t i = 0; i < sizeof(meta); i++)
		meta[i] = (uint8_t)(i * 7 + i / CAIRN_BLOCK_SIZE);
	memset(out, 0xee, sizeof(out));
	cairn_format_csum_fill(out + 1, meta, BLOCKS);
	for (unsigned b = 0; b < BLOCKS; b++) {
		uint64_t want = XXH3_64bits(meta + b * CAIRN_BLOCK_SIZE, CAIRN_BLOCK_SIZE);

		assert_true(get_le64(out + 1 + b * 8) == want);
		assert_true(cairn_format_block_csum(meta + b * CAIRN_BLOCK_SIZE) == want);
	}
	assert_int_equal(out[0], 0xee);
	assert_int_equal(out[sizeof(out) - 1], 0xee);
	/* Different blocks, different entries: the loop really moves on. */
	assert_true(get_le64(out + 1) != get_le64(out + 9));
}

static void test_table_csum(void **state)
{
	uint64_t table[4] = { 1, 2, 3, 4 };

	(void)state;
	assert_true(cairn_format_table_csum(table, 4) == XXH3_64bits(table, sizeof(table)));
	assert_true(cairn_format_table_csum(table, 3) == XXH3_64bits(table, 24));
	assert_true(cairn_format_table_csum(table, 0) == XXH3_64bits(NULL, 0));
}

/* super_hash covers the 256 bytes with the field zero, whatever it holds, and
 * leaves the caller's superblock as it was. */
static void test_super_csum(void **state)
{
	struct cairn_disk_super s, z, before;
	uint64_t h;

	(void)state;
	memset(&s, 0, sizeof(s));
	memcpy(s.magic, CAIRN_MAGIC_BYTES, 8);
	s.meta_off = cairn_le64(4096);
	s.super_hash = cairn_le64(0x1234567890abcdefULL);
	before = s;
	z = s;
	z.super_hash = 0;
	h = cairn_format_super_csum(&s);
	assert_true(h == XXH3_64bits(&z, sizeof(z)));
	assert_memory_equal(&s, &before, sizeof(s));
	s.super_hash = 0;
	assert_true(cairn_format_super_csum(&s) == h);
	s.reserved[15] ^= 1; /* the byte just before super_hash counts */
	assert_true(cairn_format_super_csum(&s) != h);
}

static void test_dtype(void **state)
{
	static const uint32_t types[] = { S_IFREG, S_IFDIR, S_IFLNK, S_IFCHR,
					  S_IFBLK, S_IFIFO, S_IFSOCK };

	(void)state;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		assert_int_equal(cairn_format_dtype(types[i] | 0755), IFTODT(types[i]));
		assert_int_not_equal(cairn_format_dtype(types[i]), DT_UNKNOWN);
	}
	assert_int_equal(cairn_format_dtype(0644), DT_UNKNOWN);
	assert_int_equal(cairn_format_dtype(S_IFMT), DT_UNKNOWN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csum_fill),
		cmocka_unit_test(test_table_csum),
		cmocka_unit_test(test_super_csum),
		cmocka_unit_test(test_dtype),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
