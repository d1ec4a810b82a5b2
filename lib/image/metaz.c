/* SPDX-License-Identifier: MIT */
/*
 * Compressed metadata (CAIRN_INCOMPAT_META_Z, docs/FORMAT.md "Compressed
 * metadata"): the metadata region is a logical address space cut into blocks
 * of 2^block_log2 bytes, each stored compressed on its own and found through
 * the block index. Everything above cairn_image_meta_fetch() (inodes, dirents,
 * the blob, the per-4 KiB checksums) is unchanged by it.
 *
 * Trust model as in image_int.h: the record is checked at open (its hash, every
 * bound against the image), the index when it is first needed (read whole, once,
 * and checked against index_hash), each index record when it is used (codec,
 * lengths, stored bytes inside the stored area), and each decompressed 4 KiB
 * block against the checksum table by cairn_image_meta_read() as before. A block
 * that does not decompress to exactly its length is corrupt, so a bomb costs one
 * block of memory. Decompressed blocks live in a decompressed-block cache of
 * their own (a zcache.c instance with a small budget, CAIRN_META_ZCACHE: the
 * daemon's memory after a walk of a million files stays what it was), so a
 * lookup decompresses a block once however many records it reads from it.
 */
#include <errno.h>
#include <stdlib.h>
#include <xxhash.h>
#include <string.h>
#include <cairn/error.h>
#include "format/format_int.h"
#include "image_int.h"
#include "zcache.h"

/* Budget of the decompressed metadata blocks: 256 blocks of 16 KiB. A walk of
 * a million files reads them in order, a lookup a few; the compressed bytes
 * stay in the segment cache, so a block dropped here costs a decompression,
 * not a device request. */
#define CAIRN_META_ZCACHE (4u << 20)

int cairn_image_metaz_open(struct cairn_image *img, char *why, size_t why_len)
{
	struct cairn_disk_metaz_super *z = &img->mzraw;
	uint64_t csum_len = img->meta_blocks * 8;
	int rc;

	if (!(img->incompat & CAIRN_INCOMPAT_META_Z))
		return 0;
	rc = cairn_image_dev_read(img, z, sizeof(*z), CAIRN_META_Z_SUPER_OFF, NULL);
	if (rc)
		return cairn_image_why(why, why_len, rc, "cannot read the metadata compression record");
	if (cairn_format_metaz_csum(z) != cairn_le64(z->hash))
		return cairn_image_why(why, why_len, -CAIRN_ECORRUPT,
				       "metadata compression record checksum mismatch");
	img->mz_log2 = cairn_le32(z->block_log2);
	img->mz_area_off = cairn_le64(z->area_off);
	img->mz_area_len = cairn_le64(z->area_len);
	img->mz_index_off = cairn_le64(z->index_off);
	img->mz_count = cairn_le64(z->block_count);
	if (img->mz_log2 < CAIRN_META_Z_LOG2_MIN || img->mz_log2 > CAIRN_META_Z_LOG2_MAX)
		return cairn_image_why(why, why_len, -CAIRN_ECORRUPT,
				       "metadata block size 2^%u outside 2^%u..2^%u", img->mz_log2,
				       CAIRN_META_Z_LOG2_MIN, CAIRN_META_Z_LOG2_MAX);
	if (img->mz_area_off % CAIRN_BLOCK_SIZE || img->mz_area_len % CAIRN_BLOCK_SIZE ||
	    img->mz_area_off < CAIRN_BLOCK_SIZE ||
	    !cairn_add_ok(img->mz_area_off, img->mz_area_len, img->image_size) ||
	    (img->data_len && img->mz_area_off < img->data_end &&
	     img->data_off < img->mz_area_off + img->mz_area_len) ||
	    (img->csum_off < img->mz_area_off + img->mz_area_len &&
	     img->mz_area_off < img->csum_off + csum_len))
		return cairn_image_why(why, why_len, -CAIRN_ECORRUPT,
				       "stored metadata %llu+%llu is not aligned, not inside the image, or overlaps the data or the checksum table",
				       (unsigned long long)img->mz_area_off,
				       (unsigned long long)img->mz_area_len);
	/* Exactly the blocks the region needs; the index lies in the area, so
	 * its size (the memory it takes once loaded) is bounded by the image. */
	if (img->mz_count != ((img->meta_len - 1) >> img->mz_log2) + 1 ||
	    img->mz_index_off < img->mz_area_off ||
	    img->mz_index_off > img->mz_area_off + img->mz_area_len ||
	    img->mz_count > (img->mz_area_off + img->mz_area_len - img->mz_index_off) /
			    CAIRN_CHUNK_SIZE)
		return cairn_image_why(why, why_len, -CAIRN_ECORRUPT,
				       "metadata block index of %llu blocks at %llu does not fit the region or the stored area",
				       (unsigned long long)img->mz_count,
				       (unsigned long long)img->mz_index_off);
	pthread_mutex_init(&img->mz_lock, NULL);
	img->mz_init = 1;
	return cairn_zcache_new(CAIRN_META_ZCACHE, &img->mzc);
}

void cairn_image_metaz_fini(struct cairn_image *img)
{
	if (!img->mz_init)
		return;
	free(atomic_load(&img->mz_index));
	cairn_zcache_free(img->mzc);
	img->mzc = NULL;
	pthread_mutex_destroy(&img->mz_lock);
	img->mz_init = 0;
}

/* The index, read and checked whole the first time a block is needed. */
static int index_get(struct cairn_image *img, const struct cairn_disk_chunk **out)
{
	struct cairn_disk_chunk *ix = atomic_load_explicit(&img->mz_index, memory_order_acquire);
	size_t len = (size_t)img->mz_count * CAIRN_CHUNK_SIZE;
	int rc = 0;

	if (ix) {
		*out = ix;
		return 0;
	}
	pthread_mutex_lock(&img->mz_lock);
	ix = atomic_load_explicit(&img->mz_index, memory_order_relaxed);
	if (!ix) {
		ix = malloc(len);
		if (!ix)
			rc = -ENOMEM;
		else
			rc = cairn_image_dev_read(img, ix, len, img->mz_index_off, NULL);
		if (!rc && XXH3_64bits(ix, len) != cairn_le64(img->mzraw.index_hash))
			rc = cairn_image_corrupt(img, "metadata block index at %llu: hash mismatch",
						 (unsigned long long)img->mz_index_off);
		if (rc) {
			free(ix);
			ix = NULL;
		} else {
			atomic_store_explicit(&img->mz_index, ix, memory_order_release);
		}
	}
	pthread_mutex_unlock(&img->mz_lock);
	*out = ix;
	return rc;
}

/* Record blk of the index, checked: its length is the block's, its stored
 * bytes lie in the stored area. */
static int block_load(struct cairn_image *img, uint64_t blk, struct cairn_rchunk *c)
{
	const struct cairn_disk_chunk *ix;
	uint64_t start = blk << img->mz_log2, want;
	int rc = index_get(img, &ix);

	if (rc)
		return rc;
	want = img->meta_len - start < (1ull << img->mz_log2) ? img->meta_len - start
							     : 1ull << img->mz_log2;
	rc = cairn_image_chunk_rec(img, "metadata block", blk, &ix[blk], want, c);
	if (rc)
		return rc;
	if (c->ulen != want)
		return cairn_image_corrupt(img, "metadata block %llu: length %u, the region needs %llu",
					   (unsigned long long)blk, c->ulen, (unsigned long long)want);
	if (c->codec != CAIRN_CODEC_ZERO &&
	    (c->disk_off < img->mz_area_off ||
	     !cairn_add_ok(c->disk_off, c->stored_len, img->mz_area_off + img->mz_area_len)))
		return cairn_image_corrupt(img, "metadata block %llu: %llu+%u outside the stored metadata",
					   (unsigned long long)blk, (unsigned long long)c->disk_off,
					   c->stored_len);
	return 0;
}

struct mz_load {
	struct cairn_image *img;
	const struct cairn_rchunk *c;
};

static int load_block(void *ctx, uint64_t key, void *buf, size_t len)
{
	struct mz_load *l = ctx;

	(void)len;
	return cairn_image_stored_decode(l->img, "metadata block", key, l->c, buf);
}

int cairn_image_meta_fetch(struct cairn_image *img, void *buf, size_t len, uint64_t off)
{
	if (!(img->incompat & CAIRN_INCOMPAT_META_Z))
		return cairn_image_dev_read(img, buf, len, off, NULL);
	while (len) {
		uint64_t rel = off - img->meta_off, blk = rel >> img->mz_log2;
		uint64_t in = rel & ((1ull << img->mz_log2) - 1);
		struct cairn_zentry *e;
		struct cairn_rchunk c;
		struct mz_load l = { img, &c };
		const void *data;
		size_t n;
		int rc = block_load(img, blk, &c);

		if (rc)
			return rc;
		n = c.ulen - in < len ? (size_t)(c.ulen - in) : len;
		rc = cairn_zcache_get(img->mzc, blk, c.ulen, load_block, &l, &e, &data);
		if (rc)
			return rc;
		memcpy(buf, (const char *)data + in, n);
		cairn_zcache_put(img->mzc, e);
		buf = (char *)buf + n;
		off += n;
		len -= n;
	}
	return 0;
}

int cairn_image_metaz_check(struct cairn_image *img)
{
	uint64_t stored = cairn_le64(img->mzraw.stored_bytes), done = 0;
	uint64_t off = img->mz_index_off + img->mz_count * CAIRN_CHUNK_SIZE;
	const struct cairn_disk_chunk *ix;
	XXH3_state_t *st;
	char *buf;
	int rc;

	if (!(img->incompat & CAIRN_INCOMPAT_META_Z))
		return 0;
	if ((rc = index_get(img, &ix)))
		return rc;
	if (!cairn_add_ok(off, stored, img->mz_area_off + img->mz_area_len))
		return cairn_image_corrupt(img, "stored metadata: %llu bytes past the stored area",
					   (unsigned long long)stored);
	st = XXH3_createState();
	buf = malloc(1u << 20);
	rc = st && buf && XXH3_64bits_reset(st) == XXH_OK ? 0 : -ENOMEM;
	while (!rc && done < stored) {
		size_t n = stored - done < (1u << 20) ? (size_t)(stored - done) : 1u << 20;

		rc = cairn_image_dev_read(img, buf, n, off + done, NULL);
		if (!rc)
			XXH3_64bits_update(st, buf, n);
		done += n;
	}
	if (!rc && XXH3_64bits_digest(st) != cairn_le64(img->mzraw.stored_hash))
		rc = cairn_image_corrupt(img, "stored metadata at %llu: hash mismatch",
					 (unsigned long long)off);
	XXH3_freeState(st);
	free(buf);
	return rc;
}
