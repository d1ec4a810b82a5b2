/* SPDX-License-Identifier: MIT */
/*
 * Internal companion of include/cairn/format.h: the on-disk values that the
 * format defines as functions of other bytes (docs/FORMAT.md, "Checksum rules",
 * and the dirent type). The writer (lib/mkfs), the reader (lib/image) and the
 * fuzz fixup (fuzz/fixup.h) all compute them here, so they cannot drift apart.
 *
 * Header-only on purpose: fuzz/fixup.h is also built into tests/progs/craft.c,
 * which links neither libcairn nor anything but libc (it inlines xxhash), and
 * is compiled without -I flags, hence the relative include. Not a public
 * header: keeping it out of include/cairn/ keeps xxhash.h out of the API.
 * Every hash is returned in host byte order.
 */
#ifndef CAIRN_FORMAT_INT_H
#define CAIRN_FORMAT_INT_H

#include <dirent.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>
#include "disk.h"

/* Checksum table entry of one CAIRN_BLOCK_SIZE metadata block. */
static inline uint64_t cairn_format_block_csum(const void *block)
{
	return XXH3_64bits(block, CAIRN_BLOCK_SIZE);
}

/* Writes the checksum table entries (le64) of `blocks` consecutive metadata
 * blocks at meta into table. table needs no alignment (it may point into an
 * image buffer). */
static inline void cairn_format_csum_fill(void *table, const void *meta, uint64_t blocks)
{
	for (uint64_t b = 0; b < blocks; b++) {
		uint64_t h = cairn_le64(cairn_format_block_csum((const uint8_t *)meta +
								b * CAIRN_BLOCK_SIZE));

		memcpy((uint8_t *)table + b * 8, &h, 8);
	}
}

/* csum_table_hash: the hash of a whole checksum table of `entries` entries. */
static inline uint64_t cairn_format_table_csum(const void *table, uint64_t entries)
{
	return XXH3_64bits(table, (size_t)entries * 8);
}

/* super_hash: the hash of the superblock with its super_hash field zero. s is
 * left as it is. */
static inline uint64_t cairn_format_super_csum(const struct cairn_disk_super *s)
{
	struct cairn_disk_super t = *s;

	t.super_hash = 0;
	return XXH3_64bits(&t, sizeof(t));
}

/* record_hash of a verity record: its hash with record_hash zero. */
static inline uint64_t cairn_format_verity_csum(const struct cairn_disk_verity_super *v)
{
	struct cairn_disk_verity_super t = *v;

	t.record_hash = 0;
	return XXH3_64bits(&t, sizeof(t));
}

/* The hash field of the compression record: its 128 bytes with the field zero. */
static inline uint64_t cairn_format_chunked_csum(const struct cairn_disk_chunked_super *z)
{
	struct cairn_disk_chunked_super t = *z;

	t.hash = 0;
	return XXH3_64bits(&t, sizeof(t));
}

/* The hash field of the metadata compression record. */
static inline uint64_t cairn_format_metaz_csum(const struct cairn_disk_metaz_super *z)
{
	struct cairn_disk_metaz_super t = *z;

	t.hash = 0;
	return XXH3_64bits(&t, sizeof(t));
}

/* The dirent type byte for an inode of this mode (its DT_* value). Modes the
 * format does not know give DT_UNKNOWN, which the reader refuses. */
static inline uint8_t cairn_format_dtype(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return DT_REG;
	case S_IFDIR: return DT_DIR;
	case S_IFLNK: return DT_LNK;
	case S_IFCHR: return DT_CHR;
	case S_IFBLK: return DT_BLK;
	case S_IFIFO: return DT_FIFO;
	case S_IFSOCK: return DT_SOCK;
	default: return DT_UNKNOWN;
	}
}

#endif /* CAIRN_FORMAT_INT_H */
