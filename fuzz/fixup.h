/* SPDX-License-Identifier: MIT */
/*
 * Recomputes the checksums of a (possibly damaged) cairn image in memory: the
 * checksum table entry of every metadata block, csum_table_hash,
 * super_hash and, for a compressed image, the compression record's hash (and
 * with compressed metadata its record's hash and index hash). Used by the fuzz targets, so that a mutated byte in the metadata
 * reaches the structure checks behind the checksums instead of stopping at a
 * checksum mismatch, and by tests/progs/craft.c to seal hand-made hostile images.
 *
 * Only what lies inside the buffer is touched; fields that point elsewhere are
 * left alone (the reader must refuse them anyway). Returns 1 if the superblock
 * hash was rewritten, 0 if the buffer is too short to hold a superblock.
 */
#ifndef CAIRN_FUZZ_FIXUP_H
#define CAIRN_FUZZ_FIXUP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../lib/format/format_int.h" /* relative: needs no include path */

static inline uint64_t fixup_get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return cairn_le64(v);
}

static inline void fixup_put64(uint8_t *p, uint64_t v)
{
	v = cairn_le64(v);
	memcpy(p, &v, 8);
}

static inline int cairn_fixup_checksums(uint8_t *img, size_t size)
{
	struct cairn_disk_super s;
	uint64_t meta_off, meta_len, csum_off, blocks;

	if (size < CAIRN_SUPER_SIZE)
		return 0;
	memcpy(&s, img, sizeof(s));
	meta_off = cairn_le64(s.meta_off);
	meta_len = cairn_le64(s.meta_len);
	csum_off = cairn_le64(s.csum_off);
	blocks = meta_len / CAIRN_BLOCK_SIZE;
	if (meta_off % CAIRN_BLOCK_SIZE == 0 && meta_len % CAIRN_BLOCK_SIZE == 0 &&
	    ((cairn_le32(s.incompat) & CAIRN_INCOMPAT_META_Z) ||
	     (meta_off <= size && meta_len <= size - meta_off)) &&
	    csum_off <= size && blocks <= (size - csum_off) / 8) {
		/* Compressed metadata is not where meta_off says: its table stays. */
		if (!(cairn_le32(s.incompat) & CAIRN_INCOMPAT_META_Z))
			cairn_format_csum_fill(img + csum_off, img + meta_off, blocks);
		s.csum_table_hash = cairn_le64(cairn_format_table_csum(img + csum_off, blocks));
	}
	s.super_hash = cairn_le64(cairn_format_super_csum(&s));
	memcpy(img, &s, sizeof(s));
	/* The verity record's own hash, so mutated records reach the bound checks
	 * (the SHA-256 digests stay as they are: those must catch the mutation). */
	if ((cairn_le32(s.compat) & CAIRN_COMPAT_VERITY) &&
	    size >= CAIRN_VERITY_SUPER_OFF + sizeof(struct cairn_disk_verity_super)) {
		struct cairn_disk_verity_super v;

		memcpy(&v, img + CAIRN_VERITY_SUPER_OFF, sizeof(v));
		v.record_hash = cairn_le64(cairn_format_verity_csum(&v));
		memcpy(img + CAIRN_VERITY_SUPER_OFF, &v, sizeof(v));
	}
	if ((cairn_le32(s.incompat) & CAIRN_INCOMPAT_CHUNKED) &&
	    size >= CAIRN_CHUNKED_SUPER_OFF + CAIRN_CHUNKED_SUPER_SIZE) {
		struct cairn_disk_chunked_super z;

		memcpy(&z, img + CAIRN_CHUNKED_SUPER_OFF, sizeof(z));
		z.hash = cairn_le64(cairn_format_chunked_csum(&z));
		memcpy(img + CAIRN_CHUNKED_SUPER_OFF, &z, sizeof(z));
	}
	/* Compressed metadata: the index hash and the record's own, so mutated
	 * index records reach their checks (the blocks' bytes are compressed:
	 * their 4 KiB checksums, over the logical bytes, must catch a mutation). */
	if ((cairn_le32(s.incompat) & CAIRN_INCOMPAT_META_Z) &&
	    size >= CAIRN_META_Z_SUPER_OFF + CAIRN_META_Z_SUPER_SIZE) {
		struct cairn_disk_metaz_super z;
		uint64_t ioff, icount;

		memcpy(&z, img + CAIRN_META_Z_SUPER_OFF, sizeof(z));
		ioff = cairn_le64(z.index_off);
		icount = cairn_le64(z.block_count);
		if (ioff <= size && icount <= (size - ioff) / CAIRN_CHUNK_SIZE)
			z.index_hash = cairn_le64(XXH3_64bits(img + ioff,
							      (size_t)icount * CAIRN_CHUNK_SIZE));
		z.hash = cairn_le64(cairn_format_metaz_csum(&z));
		memcpy(img + CAIRN_META_Z_SUPER_OFF, &z, sizeof(z));
	}
	return 1;
}

#endif
