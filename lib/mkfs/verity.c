/* SPDX-License-Identifier: MIT */
/*
 * The digest table writer (docs/FORMAT.md "Verification"). mkfs reserves the
 * table right after block 0, sized for an upper bound of the image, lays out and
 * writes everything else, then reads the finished image back granule by granule,
 * writes the table and the verity record into block 0, and takes the root digest
 * of block 0 last. Reading back costs one pass over the image (page cache) but
 * keeps the writer independent of the order data and metadata are written in.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "mkfs/mkfs_int.h"
#include "verify/verify_int.h"

#define READ_IO (4u << 20)

static unsigned shift_of(const struct cairn_mkfs *m)
{
	return m->o.granule_shift ? m->o.granule_shift : CAIRN_VERITY_SHIFT_DEFAULT;
}

/* The table covers itself (as zeros), so its length grows with what it adds:
 * iterate to the fixed point, which a few rounds reach (each adds <= 4 KiB). */
uint64_t mk_verity_table_len(const struct cairn_mkfs *m, uint64_t rest)
{
	unsigned shift = shift_of(m);
	uint64_t t = 0, prev;

	if (m->o.no_verity)
		return 0;
	do {
		uint64_t size = CAIRN_BLOCK_SIZE + t + rest;

		prev = t;
		t = MK_ALIGN(((size + (1ull << shift) - 1) >> shift) * CAIRN_DIGEST_LEN);
	} while (t != prev);
	return t;
}

static int fill_table(int fd, const struct cairn_verity *v, uint8_t *table)
{
	uint64_t per = cairn_verity_run_granules(v, READ_IO);
	uint8_t *buf = malloc(cairn_verity_run_bytes(v, READ_IO));
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (uint64_t g = 0; g < v->granule_count && !rc; g += per) {
		uint64_t off = g << v->granule_shift, n = v->granule_count - g;
		uint64_t len = v->image_size - off;

		if (n > per)
			n = per;
		if (len > n << v->granule_shift)
			len = n << v->granule_shift;
		rc = mk_pread_full(fd, buf, (size_t)len, off);
		for (uint64_t i = 0; i < n && !rc; i++)
			cairn_verity_granule_digest(v, g + i, buf + (i << v->granule_shift),
						    table + (g + i) * CAIRN_DIGEST_LEN);
	}
	free(buf);
	return rc;
}

int mk_verity_write(struct cairn_mkfs *m, int fd, const char *name, uint64_t image_size,
		    uint64_t table_len)
{
	struct cairn_verity v;
	struct cairn_disk_verity_super rec;
	uint8_t block0[CAIRN_BLOCK_SIZE];
	uint8_t *table;
	int rc;

	memset(&v, 0, sizeof(v));
	v.image_size = image_size;
	v.granule_shift = shift_of(m);
	v.granule = 1ull << v.granule_shift;
	v.granule_count = (image_size + v.granule - 1) >> v.granule_shift;
	v.table_off = CAIRN_BLOCK_SIZE;
	v.table_len = table_len;
	if (v.granule_count * CAIRN_DIGEST_LEN > table_len)
		return mk_err(m, -EOVERFLOW, "%s: digest table reserved too small (a bug)", name);
	table = calloc(1, (size_t)table_len);
	if (!table)
		return mk_err(m, -ENOMEM, "out of memory");
	rc = fill_table(fd, &v, table);
	if (!rc)
		rc = mk_pwrite_full(fd, table, (size_t)table_len, v.table_off);
	cairn_sha256(table, (size_t)table_len, v.table_digest);
	cairn_verity_encode(&v, &rec);
	if (!rc)
		rc = mk_pwrite_full(fd, &rec, sizeof(rec), CAIRN_VERITY_SUPER_OFF);
	if (!rc)
		rc = mk_pread_full(fd, block0, sizeof(block0), 0);
	free(table);
	if (rc)
		return mk_err(m, rc, "%s: writing the digest table: %s", name, strerror(-rc));
	cairn_sha256(block0, sizeof(block0), m->stats.root);
	m->stats.verity = 1;
	m->stats.table_len = table_len;
	return 0;
}
