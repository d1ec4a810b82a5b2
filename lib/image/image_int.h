/* SPDX-License-Identifier: MIT */
/*
 * Reader internals shared by the files of the image reader (as erofs-utils
 * splits its lib: super.c opens and reads metadata blocks, namei.c inodes,
 * lookup and resolve, dir.c readdir, data.c reads, lseek and maps, xattr.c
 * xattrs, chunk.c compressed files), fsck.c (the full check) and digest.c
 * (the root digest). Not a public header.
 *
 * Trust model: nothing read from the image is used before it is checked. The
 * superblock is checked whole at open (hash, then every region against the image
 * and device size). Every metadata block is checked against its checksum entry
 * the first time any byte of it is used (a bitmap remembers which were). Every
 * record is then checked for its own bounds by the *_load() function that decodes
 * it, so callers only ever see records whose offsets lie inside their regions.
 */
#ifndef CAIRN_IMAGE_INT_H
#define CAIRN_IMAGE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "format/disk.h" /* on-disk structures (private) */
#include <cairn/image.h>

#define CAIRN_DCTX_POOL 8
#define CAIRN_IMAGE_STREAMS 16

/* The superblock fields in host byte order, already checked for bounds. */
struct cairn_image {
	struct cairn_cache *cache;       /* owned */
	struct cairn_disk_super raw;     /* the superblock bytes as read */
	uint32_t compat, incompat, ro_compat;
	uint64_t image_size, inode_count, root_ino;
	uint64_t meta_off, meta_len, meta_end;
	uint64_t inode_off, dirent_off, dirent_count, xattr_off, xattr_count;
	uint64_t extent_off, extent_count, blob_off, blob_len, csum_off;
	uint64_t data_off, data_len, data_end, hot_off, hot_len;
	uint64_t meta_blocks;            /* meta_len / 4096 */
	/* Compression (CAIRN_INCOMPAT_CHUNKED; all 0 without it). */
	struct cairn_disk_chunked_super zraw; /* the record as read */
	uint32_t chunk_log2;
	uint64_t chunk_size, chunk_off, chunk_count;
	struct cairn_zcache *zc;         /* owned; NULL without compression */
	_Atomic uint64_t chunk_lent;     /* bytes lent from zc (read_chunked_pinned) */
	struct cairn_zahead *ahead;      /* owned: the chunk read-ahead workers (chunk.c) */
	/* zstd decompression contexts kept for reuse (a fresh one per chunk costs
	 * a large allocation and its page faults); owned, under dctx_lock. */
	pthread_mutex_t dctx_lock;
	void *dctx[CAIRN_DCTX_POOL];
	unsigned ndctx;
	_Atomic uint64_t *verified;      /* one bit per metadata block, set once checked */
	/* The first corruption met since open, for error messages. Written once under
	 * the lock, then published by setting `has_why`. */
	pthread_mutex_t why_lock;
	atomic_int has_why;
	char why[192];
	/* Compressed metadata (CAIRN_INCOMPAT_META_Z; all 0 without it, metaz.c). */
	struct cairn_disk_metaz_super mzraw; /* the record as read */
	uint32_t mz_log2;
	int mz_init;                     /* mz_lock initialised */
	uint64_t mz_area_off, mz_area_len, mz_index_off, mz_count;
	pthread_mutex_t mz_lock;         /* loading the index */
	struct cairn_disk_chunk *_Atomic mz_index; /* owned; NULL until first needed */
	struct cairn_zcache *mzc;        /* owned: decompressed metadata blocks */
	struct cairn_profile *profile;   /* owned; NULL unless one was loaded (profile.c) */
	/* Where the last reads of regular files ended, a ring under stream_lock:
	 * the image's one detector of sequential against random reads (data.c). */
	pthread_mutex_t stream_lock;
	struct { uint64_t ino, end; } stream[CAIRN_IMAGE_STREAMS];
	unsigned nstream;
	int keep_hot;                    /* prefetch_hot ran: hot data outlives delivery */
};

/* An inode in host byte order, checked by inode_load() for every bound that can
 * be checked without reading further structures. */
struct cairn_zahead;

struct cairn_rinode {
	uint32_t mode, flags, nlink, uid, gid, parent, xattr_count, frag_off;
	uint64_t size, xattr_ref, data_ref, data_count, content_hash, alloc_blocks, frag_ref;
	struct cairn_time atime, mtime, ctime;
};

struct cairn_rdirent {
	uint64_t name_ref;
	uint32_t ino;
	uint8_t name_len, type;
	char name[CAIRN_NAME_MAX + 1]; /* NUL-terminated copy */
};

struct cairn_rxattr {
	uint64_t name_ref, value_ref;
	uint32_t value_len;
	uint8_t name_len;
};

/* Records a corruption reason (the first one wins) and returns -CAIRN_ECORRUPT. */
int cairn_image_corrupt(struct cairn_image *img, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Writes a reason into why (if not NULL) and returns err (super.c). */
int cairn_image_why(char *why, size_t why_len, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Compressed metadata (metaz.c): the record, checked at open (a no-op without
 * CAIRN_INCOMPAT_META_Z); freed at close. */
int cairn_image_metaz_open(struct cairn_image *img, char *why, size_t why_len);
void cairn_image_metaz_fini(struct cairn_image *img);
/* fsck: the stored blocks against the record's stored_hash (every stored byte,
 * including bytes whose change a decompressor would not notice). */
int cairn_image_metaz_check(struct cairn_image *img);
/* Reads [off, off+len) of the metadata region as it is logically, without
 * checking the checksums: from the device, or through the decompressed blocks
 * of compressed metadata. The range lies in the region (meta_read checks). */
int cairn_image_meta_fetch(struct cairn_image *img, void *buf, size_t len, uint64_t off);
/* Reads [off, off+len) of the metadata region, verifying each block's checksum on
 * first use. Out-of-region ranges are corruption. */
int cairn_image_meta_read(struct cairn_image *img, void *buf, size_t len, uint64_t off);
/* Reads record idx (of `size` bytes) of a fixed-size record table at table_off
 * holding count records, as it is on disk: the one bounds check every table
 * shares, so an index from a hostile record is corruption ("<what> N past the
 * <what> table"), never a read elsewhere. */
int cairn_image_rec_read(struct cairn_image *img, const char *what, uint64_t table_off,
			 uint64_t count, uint64_t idx, void *rec, size_t size);
/* Is a read [off, off+len) of ino part of a stream: it starts the file, or
 * where one of the last CAIRN_IMAGE_STREAMS reads of the file ended (several
 * streams of one file may interleave: the program's reads and a push)? With
 * `note`, remembers where it ends (data.c). */
int cairn_image_stream_follows(struct cairn_image *img, cairn_ino_t ino, uint64_t off,
			       uint64_t len, int note);
/* Reads len bytes at a device offset through the cache, exactly. */
int cairn_image_dev_read(struct cairn_image *img, void *buf, size_t len, uint64_t off,
			 const struct cairn_cache_hint *hint);
/* A blob reference [ref, ref+len) must lie inside the blob region (namei.c). */
int cairn_image_blob_ok(const struct cairn_image *img, uint64_t ref, uint64_t len);
/* Reads len bytes of the blob region at ref; out of it is corruption. */
int cairn_image_blob_read(struct cairn_image *img, void *buf, size_t len, uint64_t ref);
int cairn_image_inode_load(struct cairn_image *img, cairn_ino_t ino, struct cairn_rinode *out);
/* inode_load of a directory: -ENOTDIR for any other type (dir.c). */
int cairn_image_dir_load(struct cairn_image *img, cairn_ino_t dir, struct cairn_rinode *r);
int cairn_image_dirent_load(struct cairn_image *img, uint64_t idx, struct cairn_rdirent *out);
int cairn_image_xattr_load(struct cairn_image *img, uint64_t idx, struct cairn_rxattr *out);
int cairn_image_extent_load(struct cairn_image *img, uint64_t idx, const struct cairn_rinode *ino,
			    struct cairn_disk_extent *out);
/* A chunk record in host byte order, checked against the image (chunk.c). */
struct cairn_rchunk {
	uint64_t disk_off;
	uint32_t stored_len, ulen, codec;
};
int cairn_image_chunk_load(struct cairn_image *img, uint64_t idx, struct cairn_rchunk *out);
/* Decodes on-disk record d into c and checks what needs nothing else: the codec,
 * 1 <= ulen <= max_ulen, stored_len against the codec. Messages name it
 * "WHAT IDX" (a chunk, a metadata block). */
int cairn_image_chunk_rec(struct cairn_image *img, const char *what, uint64_t idx,
			  const struct cairn_disk_chunk *d, uint64_t max_ulen, struct cairn_rchunk *c);
/* The ulen bytes of a checked record into buf (zero, raw or decompressed). */
int cairn_image_stored_decode(struct cairn_image *img, const char *what, uint64_t idx,
			      const struct cairn_rchunk *c, void *buf);
/* The bounds of a CHUNKED inode that need no further reads (inode_load). */
int cairn_image_chunked_ok(struct cairn_image *img, cairn_ino_t ino, const struct cairn_rinode *r);
/* Bytes [off, off+len) of a CHUNKED file, inside its size. */
int cairn_image_read_chunked(struct cairn_image *img, cairn_ino_t ino,
			     const struct cairn_rinode *r, char *buf, size_t len, uint64_t off,
			     unsigned flags);
/* The chunk holding file offset off: its index and the offset of its first byte
 * in the file, the tail's fragment included. */
int cairn_image_chunk_at(struct cairn_image *img, const struct cairn_rinode *r, uint64_t off,
			 uint64_t *idx, uint64_t *start, struct cairn_rchunk *c);
/* The read-ahead workers of a compressed image: set up at open (the threads
 * start on first use), stopped and freed with the decompression contexts at
 * close. */
int cairn_image_chunk_init(struct cairn_image *img);
void cairn_image_chunk_fini(struct cairn_image *img);
/* Waits until the read-ahead workers have nothing queued or running and the
 * hot prefix walk has ended (tests). */
void cairn_image_chunk_drain(struct cairn_image *img);
/* -o prefetch of an ordered compressed image: the workers decompress the hot
 * prefix's chunks into the chunk cache, in disk order, as their stored bytes
 * arrive (chunk.c "read-ahead and the hot prefix"). */
void cairn_image_chunk_prefetch_hot(struct cairn_image *img);
/* Decompresses chunk idx of ulen bytes into buf (fsck; no cache). */
int cairn_image_chunk_decode(struct cairn_image *img, uint64_t idx, const struct cairn_rchunk *c,
			     void *buf);
/* Bytes [off, off+len) of a CHUNKED file were delivered (cairn_image_delivered):
 * the chunk cache drops each decompressed chunk once all of it is, but those
 * stored in [keep_lo, keep_hi) (the hot prefix being pushed); raw chunks are
 * delivered to the segment cache byte for byte. */
/* cairn_image_read_pinned of a compressed file (the chunk cache's memory, each
 * chunk held for the call); CAIRN_CACHE_COPY when a piece is a zero or raw
 * chunk, or the read spans more chunks than it holds. */
int cairn_image_read_chunked_pinned(struct cairn_image *img, cairn_ino_t ino,
				    const struct cairn_rinode *r, size_t len, uint64_t off,
				    cairn_iov_fn fn, void *ctx);
void cairn_image_chunked_delivered(struct cairn_image *img, const struct cairn_rinode *r,
				   uint64_t off, uint64_t len, uint64_t keep_lo, uint64_t keep_hi);
/* The file range [lo, hi) of the compressed chunk holding off (its tail's whole
 * part for the fragment): what one decompression there yields. -ENOENT when
 * that chunk is stored raw or is a hole (nothing to decompress), -ENXIO at or
 * past the end. */
int cairn_image_chunked_span(struct cairn_image *img, const struct cairn_rinode *r, uint64_t off,
			     uint64_t *lo, uint64_t *hi);
/* lseek(2) SEEK_DATA/SEEK_HOLE over a CHUNKED file: zero chunks are holes. */
int64_t cairn_image_lseek_chunked(struct cairn_image *img, const struct cairn_rinode *r,
				  uint64_t off, int whence);
/* The device range of a CHUNKED file's stored bytes (cairn_image_file_extent). */
void cairn_image_chunked_extent(struct cairn_image *img, const struct cairn_rinode *r,
				uint64_t *lo, uint64_t *hi);
/* Calls fn for each stored chunk piece of a CHUNKED file in file order: file
 * range [file_off, file_off+len) comes from the stored bytes [dev_off,
 * dev_off+dev_len) (a whole fragment for the tail). Zero chunks are skipped. */
typedef int (*cairn_chunk_range_cb)(void *ctx, uint64_t file_off, uint64_t len,
				    uint64_t dev_off, uint64_t dev_len);
int cairn_image_chunked_ranges(struct cairn_image *img, const struct cairn_rinode *r,
			       cairn_chunk_range_cb fn, void *ctx);
/* Verifies metadata block b (index in the region) now, whether or not it was before. */
int cairn_image_verify_block(struct cairn_image *img, uint64_t b);

/* Calls fn(ctx, file_off, disk_off, len) for each piece of [off, off+len) of
 * regular file r (inode ino) stored on the device, in file order; holes and
 * inline data have none. A compressed file (CAIRN_IF_CHUNKED) has no byte-for-byte
 * mapping: fn gets each stored chunk overlapping the range, as (the chunk's first
 * file byte, its stored offset, its stored length). Stops at and returns fn's
 * first non-zero value. */
int cairn_image_map(struct cairn_image *img, cairn_ino_t ino, const struct cairn_rinode *r,
		    uint64_t off, uint64_t len, cairn_range_cb fn, void *ctx);

/* profile.c: the ranges of a learned profile, in place of the hot prefix. */
void cairn_profile_free(struct cairn_profile *p);
uint64_t cairn_profile_bytes(const struct cairn_profile *p);
int cairn_profile_prefetch(struct cairn_image *img, struct cairn_profile *p);
int cairn_profile_ranges(struct cairn_profile *p, cairn_ino_t ino, cairn_range_cb fn,
			 void *ctx);
int cairn_profile_has(const struct cairn_profile *p, cairn_ino_t ino); /* hot ranges? */
int cairn_profile_gaps(const struct cairn_profile *p, cairn_ino_t ino, uint64_t off,
		       uint64_t len, cairn_range_cb fn, void *ctx);

static inline int cairn_add_ok(uint64_t a, uint64_t b, uint64_t limit)
{
	return a <= limit && b <= limit - a;
}

#endif
