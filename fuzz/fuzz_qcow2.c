/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target over the qcow2 parser: the input is a qcow2 file held in a mem
 * bdev. It is opened with the default L2 cache and with the cache disabled, and
 * read at the start, the middle and the end of the virtual disk. Backing files
 * are never opened (no base directory). Any crash, leak, hang or huge allocation
 * is a bug; errors are the expected outcome for most inputs.
 *
 * Build: clang -fsanitize=fuzzer,address -Iinclude fuzz/fuzz_qcow2.c build-asan/libcairn.a ...
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cairn/bdev.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHUNK (256u << 10)

static void read_some(struct cairn_bdev *q, uint8_t *buf)
{
	uint64_t vsize = cairn_bdev_size(q);
	uint64_t at[3] = { 0, vsize / 2, vsize > CHUNK ? vsize - CHUNK : 0 };

	for (int i = 0; i < 3; i++)
		(void)cairn_bdev_read(q, buf, CHUNK, at[i]);
	/* Small unaligned reads go through the one-cluster inflate cache. */
	(void)cairn_bdev_read(q, buf, 1000, 777);
	(void)cairn_bdev_read(q, buf, 1000, 1777);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cairn_qcow2_config cfgs[2] = {
		{ .l2_cache_bytes = 8192 },
		{ .l2_cache_disabled = 1 },
	};
	uint8_t *buf = malloc(CHUNK);

	if (!buf)
		return 0;
	for (int c = 0; c < 2; c++) {
		struct cairn_bdev *mem, *q;

		if (cairn_bdev_mem_new(data, size, 0, &mem) < 0)
			break;
		if (cairn_bdev_is_qcow2(mem) == 1 &&
		    cairn_bdev_qcow2_new(mem, NULL, &cfgs[c], &q) == 0) {
			read_some(q, buf);
			cairn_bdev_close(q);
		} else {
			cairn_bdev_close(mem);
		}
	}
	free(buf);
	return 0;
}
