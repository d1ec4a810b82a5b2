/* SPDX-License-Identifier: MIT */
/*
 * cairn on-disk format, version 1: what a user of the library or a tool needs to
 * know about an image (magic, versions, block size, limits, feature bits, codec
 * numbers). The on-disk structures themselves are private to the library, in
 * lib/format/disk.h (not installed), as erofs-utils keeps erofs_fs.h; together
 * the two headers are the format, and docs/FORMAT.md is their prose spec.
 */
#ifndef CAIRN_FORMAT_H
#define CAIRN_FORMAT_H

#ifdef __cplusplus
extern "C" {
#endif

#include <cairn/types.h> /* CAIRN_NAME_MAX */

#define CAIRN_MAGIC            0x4e52494143ULL /* "CAIRN\0\0\0" read as le64 */
#define CAIRN_MAGIC_BYTES      "CAIRN\0\0\0"
#define CAIRN_FORMAT_VERSION_MAJOR 1 /* of the format; the library's is in version.h */
#define CAIRN_FORMAT_VERSION_MINOR 0
#define CAIRN_FORMAT_VERSION_MINOR_CHUNKED 1 /* version_minor of an image with CAIRN_INCOMPAT_CHUNKED */
#define CAIRN_FORMAT_VERSION_MINOR_META_Z  2 /* version_minor of an image with CAIRN_INCOMPAT_META_Z */
#define CAIRN_BLOCK_SIZE       4096u
#define CAIRN_BLOCK_SHIFT      12
#define CAIRN_ROOT_INO         1u
#define CAIRN_SYMLINK_MAX      4095u
#define CAIRN_XATTR_NAME_MAX   255u
#define CAIRN_XATTR_VALUE_MAX  65536u
#define CAIRN_INLINE_MAX       2048u  /* largest file mkfs stores inline (writer's choice) */
#define CAIRN_INO_MAX          0xfffffffeULL /* dirents hold 32-bit inode numbers */

/* Feature flags. An unknown incompat bit refuses the image; an unknown compat bit
 * is ignored; an unknown ro_compat bit is harmless to a reader (cairn never writes). */
#define CAIRN_COMPAT_HOT_PREFIX    (1u << 0) /* hot_off/hot_len describe an ordered prefix */
#define CAIRN_COMPAT_FILE_HASH     (1u << 1) /* inode.content_hash holds XXH3-64 of the data */
#define CAIRN_COMPAT_VERITY        (1u << 2) /* block 0 holds a verity record (SHA-256 digests) */
#define CAIRN_INCOMPAT_EXTENTS     (1u << 0) /* some files use the extent table (sparse) */
#define CAIRN_INCOMPAT_CHUNKED     (1u << 1) /* compressed chunks: a compression record in block 0 */
#define CAIRN_INCOMPAT_META_Z      (1u << 2) /* metadata stored in compressed blocks: a record in block 0 */
#define CAIRN_INCOMPAT_KNOWN       (CAIRN_INCOMPAT_EXTENTS | CAIRN_INCOMPAT_CHUNKED | \
				    CAIRN_INCOMPAT_META_Z)
#define CAIRN_COMPAT_KNOWN         (CAIRN_COMPAT_HOT_PREFIX | CAIRN_COMPAT_FILE_HASH | \
				    CAIRN_COMPAT_VERITY)

/* Verification (CAIRN_COMPAT_VERITY, docs/FORMAT.md "Verification"): granules of
 * 2^shift bytes, each with its SHA-256 in the digest table. */
#define CAIRN_VERITY_SHIFT_MIN  12u   /* granules of 4 KiB .. 16 MiB */
#define CAIRN_VERITY_SHIFT_MAX  24u
#define CAIRN_VERITY_SHIFT_DEFAULT 17u /* mkfs: 128 KiB, the default cache segment */

/* Compression (CAIRN_INCOMPAT_CHUNKED, docs/FORMAT.md "Compression"). */
#define CAIRN_CHUNK_LOG2_MIN     14u  /* 16 KiB */
#define CAIRN_CHUNK_LOG2_MAX     20u  /* 1 MiB */

/* Compressed metadata (CAIRN_INCOMPAT_META_Z, docs/FORMAT.md "Compressed metadata"):
 * the metadata region is cut into logical blocks of 2^log2 bytes, each stored
 * compressed on its own. */
#define CAIRN_META_Z_LOG2_MIN     12u  /* 4 KiB */
#define CAIRN_META_Z_LOG2_MAX     20u  /* 1 MiB */
#define CAIRN_META_Z_LOG2_DEFAULT 14u  /* mkfs: 16 KiB (docs/bench/million.md) */

/* Chunk codecs (cairn_disk_chunk.info >> 24). */
#define CAIRN_CODEC_RAW   0u /* stored as is: stored_len == ulen */
#define CAIRN_CODEC_ZSTD  1u /* one zstd frame: stored_len < ulen */
#define CAIRN_CODEC_LZ4   2u /* one LZ4 block (lz4 and lz4hc write it): stored_len < ulen */
#define CAIRN_CODEC_ZERO  3u /* ulen zero bytes, nothing stored: disk_off = stored_len = 0 */
#define CAIRN_CODEC_MAX   CAIRN_CODEC_ZERO

#ifdef __cplusplus
}
#endif

#endif /* CAIRN_FORMAT_H */
