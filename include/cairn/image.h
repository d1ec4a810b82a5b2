/* SPDX-License-Identifier: MIT */
/*
 * Layer 3: the image reader. Opens a cairn image from a bdev, reading only the
 * superblock (open cost does not grow with the file count). All calls are
 * thread-safe and return negative errno values; a corrupt image gives
 * -CAIRN_ECORRUPT. Every metadata block is checked against its checksum the first
 * time it is used.
 *
 * Ownership: cairn_image_open() takes the cache on success (freed by
 * cairn_image_close()); on failure the caller keeps it.
 */
#ifndef CAIRN_IMAGE_H
#define CAIRN_IMAGE_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <cairn/bdev.h>
#include <cairn/cache.h>
#include <cairn/types.h>
#include <cairn/verify.h>

struct cairn_image;

/* Summary of an image for `cairn info`. */
struct cairn_image_info {
	uint16_t version_major, version_minor;
	uint32_t compat, incompat;
	uint64_t image_size, inode_count, file_count, data_bytes;
	uint64_t meta_off, meta_len, data_off, data_len, hot_off, hot_len;
	uint64_t dirent_count, xattr_count, extent_count, blob_len;
	int64_t build_time;
	uint8_t uuid[16];
	/* Compression (all 0 for an uncompressed image). */
	uint64_t chunk_size;        /* logical chunk bytes */
	uint32_t codec, level;      /* the writer's CAIRN_CODEC_* and level (lz4 > 0: lz4hc) */
	uint64_t chunk_count, frag_count;
	uint64_t stored_bytes, logical_bytes; /* of all chunks */
	/* The chunks stored in the hot prefix (mkfs --order): their codec and level
	 * as codec/level above (CAIRN_CODEC_RAW: --hot-codec none) and their bytes.
	 * All 0 without such chunks, and for images written before format 1.2 kept
	 * these figures. */
	uint32_t hot_codec, hot_level;
	uint64_t hot_stored_bytes, hot_logical_bytes;
	/* Compressed metadata (all 0 when the metadata is stored as is). */
	uint64_t meta_block_size;   /* logical metadata block bytes */
	uint64_t meta_stored_len;   /* bytes of the stored area (index and blocks) */
};

/* The decompressed-chunk cache of a compressed image (all 0 otherwise). */
struct cairn_chunk_cache_stats {
	uint64_t hits, misses;       /* chunk lookups */
	uint64_t waits;              /* lookups that waited for another reader's load */
	uint64_t readahead;          /* chunks decompressed ahead of a sequential reader */
	uint64_t evictions;
	uint64_t dropped;            /* chunks dropped once wholly delivered */
	uint64_t decompressed_bytes; /* by all loads */
	uint64_t resident_bytes, budget_bytes;
	uint64_t lent_bytes;         /* handed out in place (cairn_image_read_pinned) */
};

/* On failure also writes a one-line reason ("bad superblock checksum") into why,
 * when why is not NULL. To open an image by path or URL: <cairn/stack.h>. */
int cairn_image_open(struct cairn_cache *cache, char *why, size_t why_len,
		     struct cairn_image **out);
/* The first corruption this image met since it was opened ("dirent 12: name
 * contains '/'"), or NULL. Stays valid until close. */
const char *cairn_image_corruption(struct cairn_image *img);
void cairn_image_close(struct cairn_image *img);
struct cairn_cache *cairn_image_cache(struct cairn_image *img); /* not owned */
/* Why the image's device last failed: cairn_bdev_last_error() on the device
 * under its cache (1 with *out filled, 0 when none recorded a failure). For
 * messages after an -EIO: the error itself stays a bare errno. */
int cairn_image_last_error(struct cairn_image *img, struct cairn_bdev_error *out);
void cairn_image_get_info(const struct cairn_image *img, struct cairn_image_info *out);
cairn_ino_t cairn_image_root(const struct cairn_image *img);
/* The byte budget of the decompressed-chunk cache (0: the default, 32 MiB); for
 * an uncompressed image a no-op. Entries in use may overshoot it briefly. */
void cairn_image_set_chunk_cache(struct cairn_image *img, size_t budget);
/* -ENOENT for an uncompressed image. */
int cairn_image_chunk_cache_stats(struct cairn_image *img, struct cairn_chunk_cache_stats *out);

int cairn_image_stat(struct cairn_image *img, cairn_ino_t ino, struct cairn_stat *st);
/* One name in a directory (binary search). -ENOENT, -ENOTDIR. */
int cairn_image_lookup(struct cairn_image *img, cairn_ino_t dir, const char *name,
		       size_t name_len, cairn_ino_t *out);
/* A '/'-separated path from the root. Symlinks inside the path are followed
 * (at most 40, then -ELOOP); the last one too when `follow` is set. */
int cairn_image_resolve(struct cairn_image *img, const char *path, int follow,
			cairn_ino_t *out);
/* cb is called with no lock held and no buffer of the reader's in use, so it may
 * call back into the reader (look up, read, list another directory). */
int cairn_image_readdir(struct cairn_image *img, cairn_ino_t dir, uint64_t cookie,
			cairn_dirent_cb cb, void *ctx);
/* Regular files: bytes read (0 at or past EOF). Holes read as zeros. */
ssize_t cairn_image_read(struct cairn_image *img, cairn_ino_t ino, void *buf, size_t len,
			 uint64_t off);
/* The read is not part of a stream: no read-ahead follows it, and the next read
 * is not taken as its continuation (the rest of a chunk, copied elsewhere). */
#define CAIRN_READ_ALONE 1u
/* Compressed files: only from chunks decompressed already (in the chunk cache);
 * a read that needs another gives -EAGAIN and loads nothing. Uncompressed files
 * stored in one piece: only from segments in the segment cache, the same way.
 * Raw and zero chunks and files mapped by extents are read as usual. */
#define CAIRN_READ_CACHED 2u
/* cairn_image_read() with CAIRN_READ_* flags. */
ssize_t cairn_image_read_flags(struct cairn_image *img, cairn_ino_t ino, void *buf, size_t len,
			       uint64_t off, unsigned flags);
/* cairn_image_read() without the copy: calls fn with iovecs into the cache's
 * memory, held for the call: for a file stored in one piece the segment
 * cache's (checked, over a verify device; cairn_cache_read_pinned), for a
 * compressed one the decompressed chunks'; for an extent-mapped file a read
 * inside one extent is lent as from a file in one piece. Returns fn's value or
 * -errno; CAIRN_CACHE_COPY, fn not called, for an inline file, an extent-mapped
 * read across extents or into a hole, a piece in a zero or raw chunk, at or
 * past EOF, or when the cache cannot lend: read it with cairn_image_read(). */
int cairn_image_read_pinned(struct cairn_image *img, cairn_ino_t ino, size_t len, uint64_t off,
			    cairn_iov_fn fn, void *ctx);
/* Bytes [off, off+len) of regular file ino were handed to a reader that keeps
 * them (a kernel page cache): their cache segments are dropped once wholly
 * handed on (cairn_cache_delivered), and for a compressed file its decompressed
 * chunks once wholly handed on (its stored chunks are left to the segment
 * cache's budget). Metadata is never dropped so, nor hot data being prefetched. */
void cairn_image_delivered(struct cairn_image *img, cairn_ino_t ino, uint64_t off,
			   uint64_t len);
/* As cairn_image_delivered(), for bytes the caller itself stored into the
 * kernel's page cache (the page-cache push of -o prefetch): hot data too is
 * dropped then, as the push it was kept for is done with it. */
void cairn_image_pushed(struct cairn_image *img, cairn_ino_t ino, uint64_t off, uint64_t len);
/* The byte range [lo, hi) of regular file ino that one decompression or one
 * segment fetch at off yields: the compressed chunk holding off (for a tail
 * packed in a fragment, the whole tail), or for an uncompressed file stored in
 * one piece the cache segment holding off, clipped to the file. A reader that
 * got part of it may want the rest cached upstream while it is cached here (the
 * FUSE daemon pushes it into the page cache). -ENOENT when that chunk is stored
 * raw or is a hole, or the file is inline or mapped by extents; -ENXIO at or
 * past the end. */
int cairn_image_chunk_span(struct cairn_image *img, cairn_ino_t ino, uint64_t off, uint64_t *lo,
			   uint64_t *hi);
/* 1 when a read [off, off+len) of regular file ino would be a random reader's:
 * shorter than a chunk (a segment, uncompressed), not at the start of the file
 * and not where one of the file's last reads ended (the detector that also
 * keeps compressed read-ahead to streams); else 0. Reads made with
 * CAIRN_READ_ALONE are not counted as reads of the file. */
int cairn_image_read_random(struct cairn_image *img, cairn_ino_t ino, uint64_t off, uint64_t len);
/* SEEK_DATA / SEEK_HOLE over a regular file, as lseek(2): the first data byte at
 * or after off, or the first hole byte (end of file counts as a hole). -ENXIO
 * when off is at or past the end (or no data follows, for SEEK_DATA). */
int64_t cairn_image_lseek(struct cairn_image *img, cairn_ino_t ino, uint64_t off, int whence);
/* Symlink target into buf (not NUL-terminated); returns its length, or -ERANGE
 * when buf is too small. */
ssize_t cairn_image_readlink(struct cairn_image *img, cairn_ino_t ino, char *buf, size_t len);
/* size 0 asks for the size. -ENODATA when absent, -ERANGE when buf is too small. */
ssize_t cairn_image_getxattr(struct cairn_image *img, cairn_ino_t ino, const char *name,
			     void *buf, size_t size);
/* NUL-separated names, as listxattr(2). */
ssize_t cairn_image_listxattr(struct cairn_image *img, cairn_ino_t ino, char *buf, size_t size);
/* All the names at once: *names (malloc'd, the caller frees it; NULL when there
 * are none) and their length, or a negative errno. */
ssize_t cairn_image_listxattr_alloc(struct cairn_image *img, cairn_ino_t ino, char **names);
/* The device byte range holding a file's data (for cache hints, prefetch, tracing):
 * lo == hi when it has none on the data region (empty, inline). */
int cairn_image_file_extent(struct cairn_image *img, cairn_ino_t ino, uint64_t *lo, uint64_t *hi);
/* Start reading the hot ranges in the background: the loaded profile's (below),
 * else the hot prefix (mkfs --order). From then on cairn_image_delivered() keeps
 * hot data cached (a push may still read it). Call it before other threads use
 * img. Returns 0 when the device below the cache holds all of a loaded profile's
 * data locally (cairn_cache_held: a warm disk cache): then none of it is
 * prefetched or kept, and a push of cairn_image_hot_ranges() reads it from
 * there; else 1. */
int cairn_image_prefetch_hot(struct cairn_image *img);
/* Bytes of file data the hot ranges hold (0: nothing to prefetch or push). */
uint64_t cairn_image_hot_bytes(const struct cairn_image *img);
/* Calls fn(ctx, file_off, pos, len) for each hot byte range of regular file ino:
 * the loaded profile's ranges of the file, else those whose data lies in the hot
 * prefix. `pos` places the range in the order a traced workload first read it
 * (a byte position in that order: the device offset in a hot prefix, the
 * profile position otherwise), and ranges come in that order; ranges that follow
 * each other in the file and in that order are merged. Stops early and returns
 * fn's value when it is non-zero; 0 when done or when there are no hot ranges.
 * For pushing a file's hot pages into a page cache ahead of use. */
typedef int (*cairn_range_cb)(void *ctx, uint64_t file_off, uint64_t pos, uint64_t len);
int cairn_image_hot_ranges(struct cairn_image *img, cairn_ino_t ino, cairn_range_cb fn,
			   void *ctx);

/*
 * Profiles: learned prefetch without a rebuild (-o prefetch=TRACE, -o learn=FILE).
 * A profile is a trace (the `PATH OFFSET LENGTH` lines of -o trace=, or plain
 * paths for whole files) resolved against this image. Once loaded it replaces the
 * hot prefix: cairn_image_prefetch_hot() reads its ranges in trace order, merged
 * into as few device requests as the cache allows, and cairn_image_hot_ranges()
 * gives its ranges per file. A stale profile is used as far as it matches: paths
 * not in the image (or not regular files) and ranges past a file's end are
 * skipped and counted, never an error (so is a path with a NUL in it). Names of
 * one file (a hard link, "a" or "/./a" beside "/a") are that file. Growth is bounded: at most
 * CAIRN_PROFILE_MAX_BYTES of file data and CAIRN_PROFILE_MAX_RANGES ranges; a
 * range first read earlier keeps its place (later records add only bytes not
 * yet in the profile).
 */
#define CAIRN_PROFILE_MAX_BYTES (256ull << 20)
#define CAIRN_PROFILE_MAX_RANGES (1u << 18)
struct cairn_profile_stats {
	uint64_t records;       /* trace records read */
	uint64_t missing;       /* ... naming no regular file of the image */
	uint64_t past_eof;      /* ... whose range starts at or past the file's end */
	uint64_t dropped;       /* ... not taken (bounds reached) */
	uint64_t ranges, bytes; /* the profile now: distinct ranges and bytes */
};
/* Loads text as the image's profile (adding to one loaded before). Call it before
 * other threads use img. 0, or -ENOMEM (nothing is half-loaded then: the image
 * keeps what it had before). st may be NULL. */
int cairn_image_profile_load(struct cairn_image *img, const char *text, size_t len,
			     struct cairn_profile_stats *st);
/* As cairn_image_profile_load(), from a file of at most CAIRN_PROFILE_MAX_TEXT
 * bytes: -ENOENT when there is none, -EFBIG when it is larger. */
#define CAIRN_PROFILE_MAX_TEXT (64u << 20)
int cairn_image_profile_load_file(struct cairn_image *img, const char *path,
				  struct cairn_profile_stats *st);
/* Writes the loaded profile (empty when none), joined with the records of the
 * trace file trace_path (this run's trace, or NULL: ranges not yet in the profile
 * are appended, within the bounds), to path atomically: a temporary file beside it, fsync, rename,
 * fsync of the directory, so a crash at any point leaves the old file or the new
 * one. Paths not in the image are dropped: the profile follows the image. Not
 * while other threads use the profile. 0 or a negative errno. */
int cairn_image_profile_save(struct cairn_image *img, const char *trace_path, const char *path,
			     struct cairn_profile_stats *st);

/* fsck: checks every structure and checksum and, with CAIRN_FSCK_DATA, every file's
 * content hash. Problems are reported through `report` (may be NULL); returns the
 * number of problems found (0 = clean) or a negative errno if checking could not run. */
#define CAIRN_FSCK_DATA 1u
/* Images with digests: every granule against the digest table (reads the image). */
#define CAIRN_FSCK_DIGESTS 2u
/* Check on n threads (1..256); without it (n = 0), one per online CPU. The
 * findings, their order and the count are the same at any n. */
#define CAIRN_FSCK_THREADS(n) (((unsigned)(n) & 0x1ffu) << 8)
typedef void (*cairn_report_cb)(void *ctx, const char *msg);
long cairn_image_fsck(struct cairn_image *img, unsigned flags, cairn_report_cb report, void *ctx);

/* The root digest of an image with digests (SHA-256 of block 0, as the verify
 * device checked it, or read now when there is none); -ENODATA without digests. */
int cairn_image_root_digest(struct cairn_image *img, uint8_t out[CAIRN_DIGEST_LEN]);
/* The entries of dir from cookie on, but "." and "..", at most max of them (0 =
 * all), in one allocation: *out (the caller frees it; NULL when there are none)
 * and their count, or a negative errno. For walking a tree without holding a
 * callback open across the walk. */
ssize_t cairn_image_readdir_alloc(struct cairn_image *img, cairn_ino_t dir, uint64_t cookie,
				  size_t max, struct cairn_dirent **out);

#ifdef __cplusplus
}
#endif

#endif
