/* SPDX-License-Identifier: MIT */
/*
 * The on-disk structures of the cairn format, version 1 (private to libcairn:
 * not installed, as erofs-utils keeps erofs_fs.h). include/cairn/format.h holds
 * the public part (magic, limits, feature bits, codecs); the two together are
 * the whole format, and docs/FORMAT.md is their prose spec and must match them
 * field for field. The library includes it as "format/disk.h"; tests, fuzz
 * helpers and tests/progs/craft.c that forge images include it too.
 *
 * Every integer is little-endian and fixed width. Structures are packed by
 * construction (natural alignment, explicit padding) and their sizes are checked
 * with static asserts below. Readers must use cairn_le*() accessors, never cast
 * image bytes to host integers on a big-endian host.
 *
 *   offset 0         superblock (one 4 KiB block, struct at its start; the verity
 *                    record at CAIRN_VERITY_SUPER_OFF when CAIRN_COMPAT_VERITY)
 *   4096             digest table (CAIRN_COMPAT_VERITY): SHA-256 of every granule
 *   meta_off         metadata region, 4 KiB-aligned, contiguous (with
 *                    CAIRN_INCOMPAT_META_Z a logical space, stored compressed
 *                    in blocks after the data region):
 *                      inode table   inode N at inode_off + N * CAIRN_INODE_SIZE
 *                      dirent table  directory entries, sorted per directory
 *                      xattr table   xattr entries, sorted per inode
 *                      extent table  data maps of sparse files
 *                      chunk table   compressed chunks (CAIRN_INCOMPAT_CHUNKED)
 *                      blob region   names, symlink targets, xattr names/values,
 *                                    inline file data
 *   csum_off         checksum table: one le64 XXH3-64 per 4 KiB metadata block
 *   data_off         data region: regular-file data, every file 4 KiB-aligned;
 *                    the files named by mkfs --order come first (the hot prefix)
 *   image_size       end of image
 *
 * Inode 0 is never used (0 means "none"); the root is CAIRN_ROOT_INO.
 */
#ifndef CAIRN_FORMAT_DISK_H
#define CAIRN_FORMAT_DISK_H

#include <stdint.h>
#include <string.h>
#include "../../include/cairn/format.h" /* relative: tests/progs build without -I */

#define CAIRN_SUPER_OFF        0

/* The superblock: 256 bytes at offset 0; the rest of block 0 is zero. */
struct cairn_disk_super {
	uint8_t  magic[8];          /* CAIRN_MAGIC_BYTES */
	uint16_t version_major;     /* CAIRN_FORMAT_VERSION_MAJOR; a different major is refused */
	uint16_t version_minor;     /* informational */
	uint32_t block_size;        /* CAIRN_BLOCK_SIZE (only 4096 in v1) */
	uint32_t compat;            /* CAIRN_COMPAT_* */
	uint32_t incompat;          /* CAIRN_INCOMPAT_* */
	uint32_t ro_compat;         /* none defined yet */
	uint32_t inode_size;        /* CAIRN_INODE_SIZE */
	uint64_t image_size;        /* bytes; the image file may be longer, never shorter */
	uint64_t inode_count;       /* inodes 0 .. inode_count-1; inode 0 is unused */
	uint64_t root_ino;          /* CAIRN_ROOT_INO */
	uint64_t meta_off;          /* start of metadata, 4 KiB-aligned */
	uint64_t meta_len;          /* bytes, a multiple of 4 KiB */
	uint64_t inode_off;         /* absolute offsets and lengths of each table */
	uint64_t dirent_off;
	uint64_t dirent_count;
	uint64_t xattr_off;
	uint64_t xattr_count;
	uint64_t extent_off;
	uint64_t extent_count;
	uint64_t blob_off;
	uint64_t blob_len;
	uint64_t csum_off;          /* checksum table: meta_len / 4096 entries of le64 */
	uint64_t data_off;          /* data region, 4 KiB-aligned */
	uint64_t data_len;
	uint64_t hot_off;           /* ordered prefix of the data region (mkfs --order) */
	uint64_t hot_len;
	int64_t  build_time;        /* seconds since epoch: --mtime / SOURCE_DATE_EPOCH or 0 */
	uint8_t  uuid[16];          /* derived from the content, so builds are reproducible */
	uint64_t csum_table_hash;   /* XXH3-64 of the whole checksum table (fsck) */
	uint64_t file_count;        /* informational: regular files */
	uint64_t data_bytes;        /* informational: logical bytes of all regular files */
	uint8_t  reserved[16];
	uint64_t super_hash;        /* XXH3-64 of these 256 bytes with this field zero */
};

/* Inode flags. */
#define CAIRN_IF_INLINE   (1u << 0) /* regular file data in the blob region at data_ref */
#define CAIRN_IF_EXTENTS  (1u << 1) /* regular file mapped by extents data_ref..+data_count */
#define CAIRN_IF_CHUNKED  (1u << 2) /* regular file in chunks data_ref..+data_count (+ fragment) */
#define CAIRN_IF_KNOWN    (CAIRN_IF_INLINE | CAIRN_IF_EXTENTS | CAIRN_IF_CHUNKED)

/*
 * Inode record, 128 bytes. The meaning of data_ref/data_count depends on the type:
 *   regular, contiguous: data_ref = absolute byte offset (4 KiB-aligned), size bytes there
 *   regular, INLINE:     data_ref = blob offset, size bytes there (size <= CAIRN_INLINE_MAX)
 *   regular, EXTENTS:    data_ref = first extent index, data_count = number of extents
 *   regular, CHUNKED:    data_ref = first chunk index, data_count = number of chunks;
 *                        bytes past data_count chunks: in chunk frag_ref at frag_off
 *   regular, size 0:     data_ref = data_count = 0
 *   directory:           data_ref = first dirent index, data_count = entries
 *                        (without "." and ".."); parent = inode of ".."
 *   symlink:             data_ref = blob offset of the target, size = its length
 *   char/block device:   data_ref = rdev as Linux encodes dev_t (major/minor, 64 bit)
 *   fifo/socket:         nothing
 */
struct cairn_disk_inode {
	uint32_t mode;            /* S_IFMT type bits and permission bits, as st_mode */
	uint32_t flags;           /* CAIRN_IF_* */
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint32_t parent;          /* directories: ino of ".." (root: itself) */
	uint64_t size;            /* bytes (st_size) */
	int64_t  atime_sec;
	int64_t  mtime_sec;
	int64_t  ctime_sec;
	uint32_t atime_nsec;
	uint32_t mtime_nsec;
	uint32_t ctime_nsec;
	uint32_t xattr_count;
	uint64_t xattr_ref;       /* first xattr entry index */
	uint64_t data_ref;
	uint64_t data_count;
	uint64_t content_hash;    /* XXH3-64 of the logical data (CAIRN_COMPAT_FILE_HASH) */
	uint64_t alloc_blocks;    /* st_blocks, 512-byte units, as the source had them */
	uint64_t frag_ref;        /* CHUNKED with a tail: chunk index of its fragment; else 0 */
	uint32_t frag_off;        /* CHUNKED with a tail: offset of the tail in the fragment */
	uint32_t reserved;
};

/* Directory entry, 16 bytes. Entries of one directory are contiguous and sorted by
 * name bytes (memcmp over the shorter length, then shorter first). */
struct cairn_disk_dirent {
	uint64_t name_ref;        /* blob offset of the name (not NUL-terminated) */
	uint32_t ino;
	uint8_t  name_len;        /* 1..255 */
	uint8_t  type;            /* DT_* value of the target (DT_REG, DT_DIR, ...) */
	uint16_t reserved;
};

/* Extended attribute entry, 24 bytes, sorted per inode by full name. */
struct cairn_disk_xattr {
	uint64_t name_ref;        /* blob offset of the full name, e.g. "user.mime" */
	uint64_t value_ref;       /* blob offset of the value */
	uint32_t value_len;       /* 0..CAIRN_XATTR_VALUE_MAX */
	uint8_t  name_len;        /* 1..255 */
	uint8_t  reserved[3];
};

/* Extent, 24 bytes: file bytes [file_off, file_off+len) live at disk_off. Extents of
 * one file are sorted by file_off and do not overlap; gaps are holes and read as zeros.
 * disk_off is 4 KiB-aligned. */
struct cairn_disk_extent {
	uint64_t file_off;
	uint64_t disk_off;
	uint64_t len;
};

/*
 * Verification (CAIRN_COMPAT_VERITY, docs/FORMAT.md "Verification"). The image's
 * bytes are cut into granules of 2^granule_shift bytes from offset 0; the digest
 * table holds the SHA-256 of each, bytes of block 0 and of the table region counted
 * as zeros (they are covered otherwise). The root digest is SHA-256 of block 0
 * (4096 bytes): it covers this record, hence the table, hence every granule.
 * 128 bytes at offset 384 of block 0 (bytes 256..383 belong to compression).
 */
#define CAIRN_VERITY_SUPER_OFF  384u
#define CAIRN_VERITY_SHA256     1u    /* hash_alg: SHA-256, 32-byte digests */
#define CAIRN_VERITY_DIGEST_LEN 32u
struct cairn_disk_verity_super {
	uint32_t hash_alg;          /* CAIRN_VERITY_SHA256 */
	uint32_t granule_shift;     /* log2 of the granule size */
	uint64_t table_off;         /* absolute, 4 KiB-aligned, >= 4096 */
	uint64_t table_len;         /* bytes of the table region, a multiple of 4096 */
	uint64_t granule_count;     /* ceil(image_size / granule); entries of 32 bytes */
	uint8_t  table_digest[32];  /* SHA-256 of the table_len bytes of the table region */
	uint8_t  reserved[56];
	uint64_t record_hash;       /* XXH3-64 of these 128 bytes with this field zero */
};

/*
 * Compression (CAIRN_INCOMPAT_CHUNKED). The 128 bytes at CAIRN_CHUNKED_SUPER_OFF
 * of block 0; hash = XXH3-64 of them with the hash field zero.
 */
#define CAIRN_CHUNKED_SUPER_OFF  256u

struct cairn_disk_chunked_super {
	uint32_t chunk_log2;      /* logical chunk size = 1 << chunk_log2, 14..20 */
	uint32_t codec;           /* informational: the writer's codec (CAIRN_CODEC_*) */
	uint32_t level;           /* informational: its level (lz4: 0 fast, > 0 lz4hc) */
	uint32_t reserved0;
	uint64_t chunk_off;       /* absolute offset of the chunk table, in the metadata */
	uint64_t chunk_count;     /* records in it */
	uint64_t frag_count;      /* informational: fragment chunks among them */
	uint64_t stored_bytes;    /* informational: sum of stored_len */
	uint64_t logical_bytes;   /* informational: sum of ulen */
	/* Informational, all 0 when no chunk is stored in the hot prefix (and in
	 * images written before these fields): the codec and level the hot
	 * prefix's chunks were written with (mkfs --hot-codec, else codec/level),
	 * and the sums over the chunks whose stored bytes lie in the prefix. */
	uint32_t hot_codec;
	uint32_t hot_level;
	uint64_t hot_stored_bytes;
	uint64_t hot_logical_bytes;
	uint8_t  reserved[40];
	uint64_t hash;            /* XXH3-64 of these 128 bytes with this field zero */
};

/* One stored chunk, 16 bytes. Regular files' chunks and fragments (small files
 * and tails packed together) alike. */
struct cairn_disk_chunk {
	uint64_t disk_off;        /* absolute offset of the stored bytes (data region) */
	uint32_t stored_len;      /* bytes stored there */
	uint32_t info;            /* bits 0-23: ulen (1 .. chunk size); bits 24-31: codec */
};
#define CAIRN_CHUNK_ULEN(info)  ((info) & 0xffffffu)
#define CAIRN_CHUNK_CODEC(info) ((info) >> 24)

/*
 * Compressed metadata (CAIRN_INCOMPAT_META_Z). The 128 bytes at
 * CAIRN_META_Z_SUPER_OFF of block 0; hash = XXH3-64 of them with the hash field
 * zero. The metadata region [meta_off, meta_off + meta_len) is then a logical
 * address space: block i of it (2^block_log2 bytes, the last one shorter) is
 * described by record i of the block index, a cairn_disk_chunk whose ulen is
 * the block's length and whose stored bytes lie in the stored area.
 */
#define CAIRN_META_Z_SUPER_OFF  512u

struct cairn_disk_metaz_super {
	uint32_t block_log2;      /* logical block size = 1 << block_log2, 12..20 */
	uint32_t codec;           /* informational: the writer's codec (CAIRN_CODEC_*) */
	uint32_t level;           /* informational: its level */
	uint32_t reserved0;
	uint64_t area_off;        /* stored area: absolute, 4 KiB-aligned; index first */
	uint64_t area_len;        /* bytes, a multiple of 4096 */
	uint64_t index_off;       /* absolute offset of the block index, inside the area */
	uint64_t block_count;     /* records in it: ceil(meta_len / block size) */
	uint64_t index_hash;      /* XXH3-64 of the block_count * 16 index bytes */
	uint64_t stored_bytes;    /* sum of stored_len over the index: the blocks' bytes
				   * follow the index back to back */
	uint64_t stored_hash;     /* XXH3-64 of those stored_bytes bytes (fsck) */
	uint8_t  reserved[48];
	uint64_t hash;            /* XXH3-64 of these 128 bytes with this field zero */
};

#define CAIRN_SUPER_SIZE   256u
#define CAIRN_INODE_SIZE   128u
#define CAIRN_DIRENT_SIZE  16u
#define CAIRN_XATTR_SIZE   24u
#define CAIRN_EXTENT_SIZE  24u
#define CAIRN_CHUNKED_SUPER_SIZE 128u
#define CAIRN_CHUNK_SIZE   16u
#define CAIRN_META_Z_SUPER_SIZE 128u

_Static_assert(sizeof(struct cairn_disk_super) == CAIRN_SUPER_SIZE, "superblock size");
_Static_assert(sizeof(struct cairn_disk_inode) == CAIRN_INODE_SIZE, "inode size");
_Static_assert(sizeof(struct cairn_disk_dirent) == CAIRN_DIRENT_SIZE, "dirent size");
_Static_assert(sizeof(struct cairn_disk_xattr) == CAIRN_XATTR_SIZE, "xattr size");
_Static_assert(sizeof(struct cairn_disk_extent) == CAIRN_EXTENT_SIZE, "extent size");
_Static_assert(sizeof(struct cairn_disk_verity_super) == 128, "verity record size");
_Static_assert(sizeof(struct cairn_disk_chunked_super) == CAIRN_CHUNKED_SUPER_SIZE,
	       "chunked superblock size");
_Static_assert(sizeof(struct cairn_disk_chunk) == CAIRN_CHUNK_SIZE, "chunk size");
_Static_assert(sizeof(struct cairn_disk_metaz_super) == CAIRN_META_Z_SUPER_SIZE,
	       "metadata compression record size");

/* Little-endian conversion. On little-endian hosts these compile to nothing; the
 * byte-wise fallback keeps the format right on big-endian ones. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static inline uint16_t cairn_le16(uint16_t v) { return v; }
static inline uint32_t cairn_le32(uint32_t v) { return v; }
static inline uint64_t cairn_le64(uint64_t v) { return v; }
#else
static inline uint16_t cairn_le16(uint16_t v) { return __builtin_bswap16(v); }
static inline uint32_t cairn_le32(uint32_t v) { return __builtin_bswap32(v); }
static inline uint64_t cairn_le64(uint64_t v) { return __builtin_bswap64(v); }
#endif

#endif /* CAIRN_FORMAT_DISK_H */
