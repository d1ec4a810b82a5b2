/* SPDX-License-Identifier: MIT */
/*
 * Verification internals shared by the verify device (verify.c), the whole-image
 * scan (scan.c) and the writer (lib/mkfs/verity.c): the checked verity record and
 * the granule digest rule of docs/FORMAT.md "Verification", in one place so the
 * writer and the readers cannot drift apart. Not a public header.
 */
#ifndef CAIRN_VERIFY_INT_H
#define CAIRN_VERIFY_INT_H

#include <stddef.h>
#include <stdint.h>
#include "format/disk.h" /* on-disk structures (private) */
#include <cairn/verify.h>

/* A verity record in host order, checked against the superblock beside it. */
struct cairn_verity {
	uint64_t image_size;
	uint64_t table_off, table_len, granule_count;
	uint64_t granule;              /* bytes, 1 << granule_shift */
	uint32_t granule_shift;
	uint8_t table_digest[CAIRN_DIGEST_LEN];
};

/* Decodes and checks block 0 (4096 bytes): superblock magic, version and hash,
 * the verity feature, the record's hash and every bound. -ENODATA when the image
 * has no verity record, -CAIRN_ECORRUPT (with why) when something is wrong, and
 * -EOPNOTSUPP for an unknown hash algorithm. */
int cairn_verity_decode(const uint8_t *block0, struct cairn_verity *v, char *why,
			size_t why_len);
/* Length of granule g (the last one may be short). */
uint64_t cairn_verity_granule_len(const struct cairn_verity *v, uint64_t g);
/* The digest of granule g from its bytes (n = its length): SHA-256 with the bytes
 * of block 0 and of the table region counted as zeros. */
void cairn_verity_granule_digest(const struct cairn_verity *v, uint64_t g, const uint8_t *bytes,
				 uint8_t out[CAIRN_DIGEST_LEN]);
/* Reads the table region from dev (the first head_len bytes of the image may be
 * given in head, so they are not read again), checks it against table_digest,
 * and returns its granule_count entries in *entries (malloc'd: granule_count *
 * 32 bytes, at most 1/128 of the image, whatever table_len claims; the rest of
 * the region is only hashed). -CAIRN_ECORRUPT when the digest does not match
 * (*entries is then NULL). */
int cairn_verity_read_table(struct cairn_bdev *dev, const struct cairn_verity *v,
			    const uint8_t *head, size_t head_len, uint8_t **entries);

/* Fills the verity record (host values in v, table_digest included) and its hash. */
void cairn_verity_encode(const struct cairn_verity *v, struct cairn_disk_verity_super *out);
/* A pass over the whole image (mkfs filling the table, the scan checking it)
 * reads about io bytes at a time: this many whole granules, at least one, so a
 * granule larger than io (--granule 8M, 16M) is read whole rather than in
 * steps of none (both passes looped for ever on such images). */
static inline uint64_t cairn_verity_run_granules(const struct cairn_verity *v, uint64_t io)
{
	uint64_t n = io >> v->granule_shift;

	return n ? n : 1;
}
/* The bytes such a run spans at most: its buffer. */
static inline size_t cairn_verity_run_bytes(const struct cairn_verity *v, uint64_t io)
{
	uint64_t n = cairn_verity_run_granules(v, io) << v->granule_shift;

	return (size_t)(n < v->image_size ? n : v->image_size);
}

#endif
