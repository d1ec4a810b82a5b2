/* SPDX-License-Identifier: MIT */
/*
 * Writing compressed metadata (CAIRN_INCOMPAT_META_Z, docs/FORMAT.md
 * "Compressed metadata"). write.c produces the metadata region in order as
 * always (and checksums its 4 KiB blocks); this cuts it into logical blocks,
 * compresses each on its own with zstd and appends it to the stored area after
 * the data region, behind the block index. A block that does not shrink by
 * 1/32 is stored raw, an all-zero one (padding between tables) not at all.
 *
 * Ownership: mk_metaz_new() returns a writer freed by mk_metaz_free().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>
#include "format/format_int.h"
#include "mkfs_int.h"

#define MZ_LEVEL 3 /* zstd: 1M empty files' metadata, 144 MB, in 2.7 MB (docs/bench/million.md) */

struct mk_metaz {
	unsigned log2;
	uint64_t count, next;       /* blocks in the index, blocks written */
	uint64_t area_off, cursor;  /* the stored area; where the next block goes */
	uint64_t stored;
	struct cairn_disk_chunk *index;
	XXH3_state_t *hash;        /* of the stored bytes, in order */
	ZSTD_CCtx *cctx;
	void *out;
	size_t out_cap;
};

int mk_metaz_new(uint64_t meta_len, uint64_t area_off, struct mk_metaz **out)
{
	struct mk_metaz *z = calloc(1, sizeof(*z));

	if (!z)
		return -ENOMEM;
	z->log2 = CAIRN_META_Z_LOG2_DEFAULT;
	z->count = ((meta_len - 1) >> z->log2) + 1;
	z->area_off = area_off;
	z->cursor = area_off + z->count * CAIRN_CHUNK_SIZE;
	z->index = calloc((size_t)z->count, CAIRN_CHUNK_SIZE);
	z->cctx = ZSTD_createCCtx();
	z->hash = XXH3_createState();
	z->out_cap = ZSTD_compressBound((size_t)1 << z->log2);
	z->out = malloc(z->out_cap);
	if (!z->index || !z->cctx || !z->out || !z->hash || XXH3_64bits_reset(z->hash) != XXH_OK) {
		mk_metaz_free(z);
		return -ENOMEM;
	}
	*out = z;
	return 0;
}

void mk_metaz_free(struct mk_metaz *z)
{
	if (!z)
		return;
	free(z->index);
	ZSTD_freeCCtx(z->cctx);
	XXH3_freeState(z->hash);
	free(z->out);
	free(z);
}

static int all_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && !memcmp(p, p + 1, n - 1));
}

/* One logical block of n bytes: its index record, and its stored bytes at the cursor. */
static int put_block(struct mk_metaz *z, int fd, const uint8_t *p, size_t n)
{
	struct cairn_disk_chunk *c = &z->index[z->next++];
	const void *src = p;
	uint32_t codec = CAIRN_CODEC_ZSTD;
	size_t len = 0;
	int rc;

	if (all_zero(p, n)) {
		c->info = cairn_le32((uint32_t)n | CAIRN_CODEC_ZERO << 24);
		return 0;
	}
	len = ZSTD_compressCCtx(z->cctx, z->out, z->out_cap, p, n, MZ_LEVEL);
	if (!ZSTD_isError(len) && len + n / 32 < n) {
		src = z->out;
	} else {
		codec = CAIRN_CODEC_RAW;
		len = n;
	}
	if ((rc = mk_pwrite_full(fd, src, len, z->cursor)))
		return rc;
	XXH3_64bits_update(z->hash, src, len);
	c->disk_off = cairn_le64(z->cursor);
	c->stored_len = cairn_le32((uint32_t)len);
	c->info = cairn_le32((uint32_t)n | codec << 24);
	z->cursor += len;
	z->stored += len;
	return 0;
}

int mk_metaz_put(struct mk_metaz *z, int fd, const void *p, size_t n)
{
	size_t bs = (size_t)1 << z->log2;
	int rc;

	for (size_t k; n; p = (const uint8_t *)p + k, n -= k) {
		k = n < bs ? n : bs;
		if (z->next >= z->count)
			return -EFBIG; /* more metadata than planned: a bug in write.c */
		if ((rc = put_block(z, fd, p, k)))
			return rc;
	}
	return 0;
}

int mk_metaz_finish(struct mk_metaz *z, int fd, struct cairn_disk_metaz_super *rec,
		    uint64_t *area_end)
{
	size_t len = (size_t)z->count * CAIRN_CHUNK_SIZE;
	int rc;

	if (z->next != z->count)
		return -EIO; /* less metadata than planned: a bug in write.c */
	static const uint8_t zero[CAIRN_BLOCK_SIZE];

	if ((rc = mk_pwrite_full(fd, z->index, len, z->area_off)) ||
	    (rc = mk_pwrite_full(fd, zero, (size_t)(MK_ALIGN(z->cursor) - z->cursor), z->cursor)))
		return rc;
	memset(rec, 0, sizeof(*rec));
	rec->block_log2 = cairn_le32(z->log2);
	rec->codec = cairn_le32(CAIRN_CODEC_ZSTD);
	rec->level = cairn_le32(MZ_LEVEL);
	rec->area_off = cairn_le64(z->area_off);
	rec->area_len = cairn_le64(MK_ALIGN(z->cursor) - z->area_off);
	rec->index_off = cairn_le64(z->area_off);
	rec->block_count = cairn_le64(z->count);
	rec->index_hash = cairn_le64(XXH3_64bits(z->index, len));
	rec->stored_bytes = cairn_le64(z->stored);
	rec->stored_hash = cairn_le64(XXH3_64bits_digest(z->hash));
	rec->hash = cairn_le64(cairn_format_metaz_csum(rec));
	*area_end = MK_ALIGN(z->cursor);
	return 0;
}
