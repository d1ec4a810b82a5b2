/* SPDX-License-Identifier: MIT */
/*
 * qcow2 bdev internals, shared by qcow2.c (header, open, backing chain),
 * qcow2_l2.c (L2 entry lookup and the slice cache) and qcow2_read.c (the read
 * path: mapping, request merging, decompression). Layout facts come from QEMU's
 * docs/interop/qcow2.txt; see /work/shared/notes/qcow2-checklist.md.
 */
#ifndef CAIRN_QCOW2_INT_H
#define CAIRN_QCOW2_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <cairn/bdev.h>

#define QCOW2_MAGIC 0x514649fbu /* "QFI\xfb" */
#define QCOW2_V2_HEADER_LEN 72u
#define QCOW2_V3_HEADER_MIN 104u

#define QCOW2_INCOMPAT_DIRTY      (1ull << 0)
#define QCOW2_INCOMPAT_CORRUPT    (1ull << 1)
#define QCOW2_INCOMPAT_DATA_FILE  (1ull << 2)
#define QCOW2_INCOMPAT_COMPRESS   (1ull << 3)
#define QCOW2_INCOMPAT_EXTL2      (1ull << 4)
#define QCOW2_INCOMPAT_KNOWN      0x1full

#define QCOW2_EXT_END          0x00000000u
#define QCOW2_EXT_BACKING_FMT  0xe2792acau
#define QCOW2_EXT_FEATURES     0x6803f857u
#define QCOW2_EXT_CRYPTO       0x0537be77u
#define QCOW2_EXT_DATA_FILE    0x44415441u

#define QCOW2_OFFSET_MASK   0x00fffffffffffe00ull /* bits 9-55 of L1/L2 entries */
#define QCOW2_L2_COMPRESSED (1ull << 62)
#define QCOW2_L2_ZERO       1ull                  /* v3, standard L2 only */
#define QCOW2_L1_RESERVED   0x7f000000000001ffull /* must be zero in L1 entries */

#define QCOW2_BACKING_NAME_MAX 1023u /* as QEMU */
#define QCOW2_MAX_L1_BYTES (32u << 20) /* as QEMU: 4 Mi entries */
#define QCOW2_DEFAULT_L2_CACHE (1u << 20)
#define QCOW2_DEFAULT_SLICE 4096u
#define QCOW2_DEFAULT_DEPTH 16u
#define QCOW2_SUBCLUSTERS 32u

enum qcow2_compress { QCOW2_ZLIB = 0, QCOW2_ZSTD = 1 };

/* One L2 entry; bitmap is 0 for standard (64-bit) entries. */
struct qcow2_l2e {
	uint64_t entry;
	uint64_t bitmap;
};

/* A cached slice of an L2 table: slice_entries entries starting at `key` (the
 * host offset of the slice). Hash chain plus LRU list; head = most recent. */
struct qcow2_slice {
	uint64_t key;
	struct qcow2_slice *hnext;
	struct qcow2_slice *prev, *next;
	struct qcow2_l2e ents[]; /* decoded from big-endian */
};

struct qcow2_l2cache {
	pthread_mutex_t lock;
	struct qcow2_slice **buckets;
	size_t nbuckets;                 /* power of two */
	struct qcow2_slice *lru_head, *lru_tail;
	size_t count, capacity;          /* slices */
	uint64_t hits, misses, evictions;
};

struct qcow2_dev {
	struct cairn_bdev base;          /* base.below = the qcow2 file (owned) */
	struct cairn_bdev *backing;      /* owned; NULL = unallocated reads as zero */
	uint32_t version;
	uint32_t cluster_bits;
	uint64_t cluster_size;
	uint64_t file_size;              /* size of below */
	int ext_l2;                      /* extended L2: 16-byte entries, subclusters */
	unsigned entry_bytes;            /* 8 or 16 */
	uint64_t l2_entries;             /* per table */
	enum qcow2_compress compression;
	uint64_t *l1;                    /* decoded, l1_count entries */
	uint64_t l1_count;               /* entries covering the virtual size */

	int cache_disabled;
	size_t slice_bytes;
	uint64_t slice_entries;
	struct qcow2_l2cache cache;

	/* One decompressed cluster kept for the next read of the same cluster. */
	pthread_mutex_t zlock;
	uint8_t *zbuf;                   /* cluster_size bytes, or NULL */
	uint64_t zbuf_entry;             /* L2 entry zbuf holds */

	atomic_uint_fast64_t l2_table_reads, data_requests, compressed_clusters,
		backing_reads;

	void (*report)(void *ctx, const char *msg);
	void *report_ctx;
};

/* qcow2.c */
void qcow2_report(const struct qcow2_dev *q, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
uint64_t qcow2_be64(const void *p);
uint32_t qcow2_be32(const void *p);

/* qcow2_l2.c */
int qcow2_l2cache_init(struct qcow2_dev *q, size_t budget_bytes);
void qcow2_l2cache_destroy(struct qcow2_dev *q);
/* Entries [idx, idx + want) of the L2 table at l2_off (want >= 1, idx + want <= the
 * table's entry count): fills out[] with as many as one slice (or, with the cache
 * disabled, one request) gives, at least 1. Returns the count or -errno. */
int qcow2_l2_get(struct qcow2_dev *q, uint64_t l2_off, uint64_t idx, uint64_t want,
		 struct qcow2_l2e *out);

/* qcow2_read.c */
ssize_t qcow2_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off);
int qcow2_decomp_init(struct qcow2_dev *q);
void qcow2_decomp_destroy(struct qcow2_dev *q);

#endif
