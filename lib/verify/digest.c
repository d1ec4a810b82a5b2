/* SPDX-License-Identifier: MIT */
/* SHA-256 (OpenSSL libcrypto), digest text, and the verity record and granule rule. */
/*
 * SHA-256 through libcrypto's own SHA256_* functions (the same assembly, SHA-NI
 * included), deprecated in OpenSSL 3 but kept there, rather than EVP: EVP's
 * first use starts the provider machinery, 1.9 MiB of resident libcrypto pages
 * in every verifying daemon (measured: a process that hashes 1 MiB grows by
 * 2,192 KiB through EVP_MD_fetch and EVP_Digest, by 320 KiB this way).
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/sha.h>
#include <cairn/error.h>
#include "format/format_int.h"
#include "util/util_int.h"
#include "verify/verify_int.h"

_Static_assert(SHA256_DIGEST_LENGTH == CAIRN_DIGEST_LEN, "a digest is a SHA-256");

/* Not SHA256(): OpenSSL 3's one-shot goes through EVP (EVP_Q_digest). */
void cairn_sha256(const void *p, size_t n, uint8_t out[CAIRN_DIGEST_LEN])
{
	SHA256_CTX ctx;

	SHA256_Init(&ctx);
	SHA256_Update(&ctx, p, n);
	SHA256_Final(out, &ctx);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int cairn_digest_parse(const char *text, uint8_t out[CAIRN_DIGEST_LEN])
{
	if (!text || strncmp(text, "sha256:", 7) || strlen(text + 7) != 2 * CAIRN_DIGEST_LEN)
		return -EINVAL;
	text += 7;
	for (unsigned i = 0; i < CAIRN_DIGEST_LEN; i++) {
		int hi = hexval(text[2 * i]), lo = hexval(text[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

void cairn_digest_format(const uint8_t d[CAIRN_DIGEST_LEN], char out[CAIRN_DIGEST_TEXT_LEN])
{
	memcpy(out, "sha256:", 7);
	for (unsigned i = 0; i < CAIRN_DIGEST_LEN; i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", d[i]);
}

#define BAD(...) (snprintf(why, why_len, __VA_ARGS__), -CAIRN_ECORRUPT)

static int decode_bounds(struct cairn_verity *v, char *why, size_t why_len)
{
	if (v->granule_shift < CAIRN_VERITY_SHIFT_MIN || v->granule_shift > CAIRN_VERITY_SHIFT_MAX)
		return BAD("verity granule size 2^%u out of range", v->granule_shift);
	v->granule = 1ull << v->granule_shift;
	if (v->image_size < CAIRN_BLOCK_SIZE || v->image_size % CAIRN_BLOCK_SIZE)
		return BAD("image size %llu is not a multiple of the block size",
			   (unsigned long long)v->image_size);
	if (v->granule_count != (v->image_size + v->granule - 1) / v->granule)
		return BAD("verity granule count %llu, the image size needs %llu",
			   (unsigned long long)v->granule_count,
			   (unsigned long long)((v->image_size + v->granule - 1) / v->granule));
	if (v->table_off < CAIRN_BLOCK_SIZE || v->table_off % CAIRN_BLOCK_SIZE ||
	    v->table_len % CAIRN_BLOCK_SIZE || v->table_off > v->image_size ||
	    v->table_len > v->image_size - v->table_off ||
	    v->table_len / CAIRN_DIGEST_LEN < v->granule_count)
		return BAD("digest table %llu+%llu is not aligned, not inside the image, or too "
			   "short for %llu granules", (unsigned long long)v->table_off,
			   (unsigned long long)v->table_len, (unsigned long long)v->granule_count);
	return 0;
}

int cairn_verity_decode(const uint8_t *block0, struct cairn_verity *v, char *why,
			size_t why_len)
{
	struct cairn_disk_super s;
	struct cairn_disk_verity_super r;
	char spare[8];

	util_why_init(&why, &why_len, spare, sizeof(spare));
	memcpy(&s, block0, sizeof(s));
	memcpy(&r, block0 + CAIRN_VERITY_SUPER_OFF, sizeof(r));
	if (memcmp(s.magic, CAIRN_MAGIC_BYTES, 8))
		return util_not_cairn(block0, CAIRN_BLOCK_SIZE, why, why_len);
	if (cairn_le16(s.version_major) != CAIRN_FORMAT_VERSION_MAJOR) {
		snprintf(why, why_len, "unsupported format version %u", cairn_le16(s.version_major));
		return -EOPNOTSUPP;
	}
	if (cairn_format_super_csum(&s) != cairn_le64(s.super_hash))
		return BAD("superblock checksum mismatch");
	if (!(cairn_le32(s.compat) & CAIRN_COMPAT_VERITY)) {
		snprintf(why, why_len, "the image has no digests (built without verification)");
		return -ENODATA;
	}
	if (cairn_format_verity_csum(&r) != cairn_le64(r.record_hash))
		return BAD("verity record checksum mismatch");
	if (cairn_le32(r.hash_alg) != CAIRN_VERITY_SHA256) {
		snprintf(why, why_len, "unknown digest algorithm %u", cairn_le32(r.hash_alg));
		return -EOPNOTSUPP;
	}
	memset(v, 0, sizeof(*v));
	v->image_size = cairn_le64(s.image_size);
	v->granule_shift = cairn_le32(r.granule_shift);
	v->table_off = cairn_le64(r.table_off);
	v->table_len = cairn_le64(r.table_len);
	v->granule_count = cairn_le64(r.granule_count);
	memcpy(v->table_digest, r.table_digest, CAIRN_DIGEST_LEN);
	return decode_bounds(v, why, why_len);
}

void cairn_verity_encode(const struct cairn_verity *v, struct cairn_disk_verity_super *out)
{
	memset(out, 0, sizeof(*out));
	out->hash_alg = cairn_le32(CAIRN_VERITY_SHA256);
	out->granule_shift = cairn_le32(v->granule_shift);
	out->table_off = cairn_le64(v->table_off);
	out->table_len = cairn_le64(v->table_len);
	out->granule_count = cairn_le64(v->granule_count);
	memcpy(out->table_digest, v->table_digest, CAIRN_DIGEST_LEN);
	out->record_hash = cairn_le64(cairn_format_verity_csum(out));
}

uint64_t cairn_verity_granule_len(const struct cairn_verity *v, uint64_t g)
{
	uint64_t off = g << v->granule_shift;

	return v->image_size - off < v->granule ? v->image_size - off : v->granule;
}

#define TABLE_IO (1u << 20)

/* Hashes table bytes [pos, pos+n) (region offsets) and keeps the entry bytes. */
static void table_piece(SHA256_CTX *ctx, const struct cairn_verity *v, uint8_t *entries,
			const uint8_t *p, uint64_t pos, size_t n)
{
	uint64_t elen = v->granule_count * CAIRN_DIGEST_LEN;

	if (pos < elen)
		memcpy(entries + pos, p, (size_t)(elen - pos < n ? elen - pos : n));
	SHA256_Update(ctx, p, n);
}

int cairn_verity_read_table(struct cairn_bdev *dev, const struct cairn_verity *v,
			    const uint8_t *head, size_t head_len, uint8_t **out)
{
	uint64_t elen = v->granule_count * CAIRN_DIGEST_LEN, pos = 0;
	uint8_t *entries = malloc(elen ? (size_t)elen : 1), *buf = NULL;
	SHA256_CTX ctx;
	uint8_t d[CAIRN_DIGEST_LEN];
	int rc = entries ? 0 : -ENOMEM;

	SHA256_Init(&ctx);
	if (!rc && v->table_off < head_len) {
		size_t n = head_len - v->table_off < v->table_len ? head_len - (size_t)v->table_off
								   : (size_t)v->table_len;

		table_piece(&ctx, v, entries, head + v->table_off, 0, n);
		pos = n;
	}
	if (!rc && pos < v->table_len && !(buf = malloc(TABLE_IO)))
		rc = -ENOMEM;
	while (!rc && pos < v->table_len) {
		size_t n = v->table_len - pos < TABLE_IO ? (size_t)(v->table_len - pos) : TABLE_IO;

		rc = cairn_bdev_read_full(dev, buf, n, v->table_off + pos);
		if (!rc)
			table_piece(&ctx, v, entries, buf, pos, n);
		pos += n;
	}
	SHA256_Final(d, &ctx);
	if (!rc && memcmp(d, v->table_digest, CAIRN_DIGEST_LEN))
		rc = -CAIRN_ECORRUPT;
	free(buf);
	if (rc) {
		free(entries);
		entries = NULL;
	}
	*out = entries;
	return rc;
}

/* Bytes [lo, hi) of the image that the granules count as zeros, in order. */
static int excluded(const struct cairn_verity *v, unsigned i, uint64_t *lo, uint64_t *hi)
{
	if (i == 0) {
		*lo = 0;
		*hi = CAIRN_BLOCK_SIZE;
	} else if (i == 1) {
		*lo = v->table_off;
		*hi = v->table_off + v->table_len;
	} else {
		return 0;
	}
	return 1;
}

void cairn_verity_granule_digest(const struct cairn_verity *v, uint64_t g, const uint8_t *bytes,
				 uint8_t out[CAIRN_DIGEST_LEN])
{
	static const uint8_t zeros[CAIRN_BLOCK_SIZE];
	uint64_t start = g << v->granule_shift, len = cairn_verity_granule_len(v, g);
	uint64_t end = start + len, pos = start, lo, hi;
	SHA256_CTX ctx;

	if (start >= CAIRN_BLOCK_SIZE && (start >= v->table_off + v->table_len || end <= v->table_off)) {
		cairn_sha256(bytes, (size_t)len, out); /* the usual granule: no hole in it */
		return;
	}
	SHA256_Init(&ctx);
	for (unsigned i = 0; excluded(v, i, &lo, &hi); i++) {
		if (hi <= pos || lo >= end)
			continue;
		if (lo > pos)
			SHA256_Update(&ctx, bytes + (pos - start), (size_t)(lo - pos));
		pos = lo > pos ? lo : pos;
		for (uint64_t z = hi < end ? hi : end; pos < z;) {
			size_t k = z - pos < sizeof(zeros) ? (size_t)(z - pos) : sizeof(zeros);

			SHA256_Update(&ctx, zeros, k);
			pos += k;
		}
	}
	if (pos < end)
		SHA256_Update(&ctx, bytes + (pos - start), (size_t)(end - pos));
	SHA256_Final(out, &ctx);
}
