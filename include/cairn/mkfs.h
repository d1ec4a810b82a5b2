/* SPDX-License-Identifier: MIT */
/*
 * Layer 3 (writer side): the image builder. Independent of the reader: it only
 * shares include/cairn/format.h with it.
 *
 * A builder collects a tree in memory (metadata only: names, attributes, xattrs,
 * symlink targets, inline data of small files, host paths of the rest), then
 * writes the image in one pass over the file data. Memory use is proportional
 * to the metadata, never to the file data.
 *
 *   struct cairn_mkfs *m;
 *   cairn_mkfs_new(&opts, &m);
 *   cairn_mkfs_add_tree(m, "/", "/srv/root");      and/or
 *   cairn_mkfs_add_manifest(m, "usr.manifest");
 *   cairn_mkfs_write_path(m, "out.cairn");          temp file, fsync, rename
 *   cairn_mkfs_free(m);
 *
 * Every call returns 0 or a negative errno. On failure cairn_mkfs_error() gives
 * a one-line message naming the path or line at fault.
 *
 * Ownership: cairn_mkfs_new() copies what it needs from opts (strings included);
 * the caller keeps opts. The builder is not thread-safe (one thread at a time).
 */
#ifndef CAIRN_MKFS_H
#define CAIRN_MKFS_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdio.h>

struct cairn_mkfs;

struct cairn_mkfs_opts {
	int all_root;               /* every uid and gid becomes 0 */
	int64_t uid, gid;           /* >= 0: force this owner; -1: keep the source's */
	int set_mtime;              /* nonzero: every time becomes `mtime` (nsec 0) */
	int64_t mtime;              /*   seconds since the epoch; also the build_time */
	int set_epoch;              /* nonzero: SOURCE_DATE_EPOCH semantics: times later */
	int64_t epoch;              /*   than `epoch` are clamped to it; build_time = epoch */
	const char *const *excludes;/* fnmatch(3) patterns on the in-image path (see MANIFEST.md) */
	size_t exclude_count;
	const char *order_file;     /* NULL or a file of in-image paths (data order) */
	/* Compression (docs/FORMAT.md "Compression"). codec CAIRN_MKFS_NONE writes
	 * the uncompressed format, byte for byte as without these fields. */
	unsigned codec;             /* CAIRN_MKFS_NONE, _LZ4, _LZ4HC, _ZSTD */
	int level;                  /* codec level; CAIRN_MKFS_LEVEL_DEFAULT: the codec's default */
	/* With an order: the hot prefix's chunks use hot_codec at hot_level instead
	 * (the chunks that a cold start decompresses: a faster codec costs it less
	 * CPU; CAIRN_MKFS_NONE stores them raw). Needs codec != CAIRN_MKFS_NONE. */
	int set_hot_codec;
	unsigned hot_codec;         /*   CAIRN_MKFS_NONE, _LZ4, _LZ4HC, _ZSTD */
	int hot_level;              /*   as level */
	unsigned chunk_log2;        /* chunk size 2^14..2^20; 0 = CAIRN_MKFS_CHUNK_LOG2_DEFAULT */
	unsigned threads;           /* compressing threads; 0 = one per online CPU */
	const char *const *no_compress; /* exclude-style patterns: these files' chunks are */
	size_t no_compress_count;   /* stored raw (data that is compressed already) */
	int no_fsync;               /* skip the fsync before rename (benchmarks only) */
	int allow_empty_globs;      /* a manifest glob matching nothing is not an error */
	int force;                  /* write_path: replace an existing regular file that is
				     * not a cairn image (refused otherwise) */
	int no_verity;              /* no digest table, no root digest (docs/FORMAT.md
				     * "Verification"); readers then check metadata only */
	unsigned granule_shift;     /* log2 of the verity granule: 12..24; 0 = 17 (128 KiB) */
	int plain_meta;             /* store the metadata as is, not in compressed blocks
				     * (docs/FORMAT.md "Compressed metadata"): readers
				     * before format 1.2 can read the image */
	const char *output;         /* NULL or the image path: an existing file there is
				     * left out of directory walks (building into the tree) */
	/* Progress of the data copy: done and total bytes. Called at most every
	 * few MiB; may be NULL. */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	/* Progress of the scan: entries seen so far, every 8192; may be NULL. */
	void (*scan_progress)(void *ctx, uint64_t entries);
	/* Non-fatal notes (e.g. an --order path not in the image); may be NULL. */
	void (*warn)(void *ctx, const char *msg);
	void *ctx;
};

#define CAIRN_MKFS_NONE  0u
#define CAIRN_MKFS_LZ4   1u
#define CAIRN_MKFS_LZ4HC 2u
#define CAIRN_MKFS_ZSTD  3u
#define CAIRN_MKFS_LEVEL_DEFAULT (-1000)
/* 128 KiB: docs/bench/compression.md, "The sweep behind the defaults" */
#define CAIRN_MKFS_CHUNK_LOG2_DEFAULT 17u
/* "none", "lz4", "lz4hc", "zstd", optionally ",LEVEL": 0 or -EINVAL. */
int cairn_mkfs_parse_codec(const char *s, unsigned *codec, int *level);

/* Defaults: keep owners and times, no excludes, no order, no compression. */
void cairn_mkfs_opts_init(struct cairn_mkfs_opts *o);

int cairn_mkfs_new(const struct cairn_mkfs_opts *o, struct cairn_mkfs **out);
void cairn_mkfs_free(struct cairn_mkfs *m);
/* The message of the last failure ("" if none). Valid until the next call. */
const char *cairn_mkfs_error(const struct cairn_mkfs *m);

/* Add the patterns of a rule file (cairn_pattern_list_parse(): one pattern per
 * line, '#' comments) to opts.no_compress: files they match store their chunks
 * raw. Call it before adding any tree or manifest entry (-EINVAL after). Errors
 * name the file (cairn_mkfs_error()). */
int cairn_mkfs_add_no_compress_file(struct cairn_mkfs *m, const char *path);
/* Add the host directory `host_dir` (recursively, symlinks not followed) as the
 * in-image directory `guest_dir` ("/" for the root). The directory itself takes
 * host_dir's attributes. Entries already present are replaced. */
int cairn_mkfs_add_tree(struct cairn_mkfs *m, const char *guest_dir, const char *host_dir);
/* Add one host object (file, directory without its contents, device, ...) at
 * guest_path; with `follow`, a host symlink is followed. */
int cairn_mkfs_add_path(struct cairn_mkfs *m, const char *guest_path, const char *host_path,
			int follow);
/* Add a symlink guest_path -> target. */
int cairn_mkfs_add_symlink(struct cairn_mkfs *m, const char *guest_path, const char *target);
/* Apply a manifest (docs/MANIFEST.md). Relative host paths resolve against
 * `base_dir` (the manifest's directory for add_manifest). `name` labels errors. */
int cairn_mkfs_add_manifest(struct cairn_mkfs *m, const char *manifest_path);
int cairn_mkfs_add_manifest_text(struct cairn_mkfs *m, const char *text, size_t len,
				 const char *base_dir, const char *name);

/* Write the image to `fd` (positioned writes from offset 0; it must be open for
 * reading too): a regular file is truncated to the image size; a block device
 * is written in place, its first block cleared before anything else and the
 * superblock written last. Does not fsync or close. `name` labels write errors
 * ("IMAGE: writing the image: No space left on device"). */
int cairn_mkfs_write_fd(struct cairn_mkfs *m, int fd, const char *name);
/* Write the image at `path`, by what is there now (docs/CLI.md, cairn mkfs):
 *   nothing, an empty file or a cairn image: atomically, through a temporary
 *     file next to it, fsync (unless no_fsync) and rename; nothing is left at
 *     `path` (nor a temporary) on failure;
 *   another regular file: refused (-EEXIST) unless opts.force;
 *   a block device: written in place (opened O_EXCL: refused while mounted);
 *   a symlink: followed, the rules apply to its target; dangling: -ENOENT;
 *   anything else (directory, character device, FIFO, socket): -EINVAL.
 * Messages name `path`, never the temporary file. */
int cairn_mkfs_write_path(struct cairn_mkfs *m, const char *path);
/* The temporary file write_path is writing right now, or NULL. Async-signal-safe:
 * a SIGINT/SIGTERM handler may unlink() it before _exit(), so an interrupted
 * mkfs leaves nothing behind. */
const char *cairn_mkfs_temp_path(const struct cairn_mkfs *m);

/* Statistics of the last write. */
struct cairn_mkfs_stats {
	uint64_t inodes, files, dirs, symlinks, hardlinks, others;
	uint64_t inline_files, sparse_files, dedup_files, dedup_bytes;
	uint64_t data_bytes;        /* logical bytes of all regular files */
	uint64_t image_size, meta_len, data_len, hot_len;
	uint64_t meta_stored;       /* bytes the metadata takes in the image: meta_len, or
				     * its compressed blocks and their index */
	int verity;                 /* the image has digests and this root digest: */
	uint8_t root[32];           /*   SHA-256 of block 0 (cairn_digest_format()) */
	uint64_t table_len;         /* bytes of the digest table region */
	uint64_t chunks, fragments, raw_chunks; /* compressed images: stored chunks */
	uint64_t stored_bytes;      /* compressed images: bytes of all stored chunks */
};
void cairn_mkfs_get_stats(const struct cairn_mkfs *m, struct cairn_mkfs_stats *out);

/*
 * Manifest parser, pure (no file system access), callable on any buffer so it
 * can be fuzzed. One callback per entry line, in order; a nonzero return from
 * the callback stops parsing and is returned. Syntax errors return -EINVAL with
 * "line N: reason" in err.
 */
enum cairn_manifest_kind {
	CAIRN_MANIFEST_PATH,     /* "/guest: host"          one object */
	CAIRN_MANIFEST_TREE,     /* "/guest/" "**: host/" "**"  host's contents, recursively */
	CAIRN_MANIFEST_GLOB,     /* "/guest/" "*: host/PAT" the entries of host matching PAT */
	CAIRN_MANIFEST_SYMLINK,  /* "/guest -> target" */
};
struct cairn_manifest_entry {
	enum cairn_manifest_kind kind;
	unsigned line;
	const char *guest;       /* NUL-terminated; the TREE or GLOB suffix removed */
	const char *host;        /* host path (TREE suffix removed; GLOB: its directory),
				  * or the symlink target */
	const char *pattern;     /* GLOB: the last component of the host side; else NULL */
};
typedef int (*cairn_manifest_cb)(void *ctx, const struct cairn_manifest_entry *e);
int cairn_manifest_parse(const char *text, size_t len, cairn_manifest_cb cb, void *ctx,
			 char *err, size_t err_len);

/*
 * Trace/order file parser, pure as well: the one reader of the trace format
 * (mkfs --order, mount -o prefetch=TRACE and -o learn=FILE): one in-image path per
 * line (the whole file), or "PATH OFFSET LENGTH" range records (the mount's trace). '#' starts a comment
 * line, blank lines are skipped. Paths are unescaped (docs/MANIFEST.md): "\\"
 * is a backslash, "\n" a newline, "\ooo" the byte of three octal digits; any
 * other backslash stands for itself.
 */
struct cairn_order_record {
	const char *path;        /* unescaped, NUL-terminated; valid during the call */
	size_t path_len;         /* may be more than strlen(path) after a "\000" */
	int has_range;           /* the line ended in OFFSET LENGTH */
	uint64_t offset, length;
	unsigned line;
};
typedef int (*cairn_order_cb)(void *ctx, const struct cairn_order_record *r);
int cairn_order_parse(const char *text, size_t len, cairn_order_cb cb, void *ctx);
/* Write one range record as cairn_order_parse() reads it back, whatever bytes
 * the path holds (the mount's trace= writer). 0, or -EIO when f has failed. */
int cairn_order_write_record(FILE *f, const char *path, uint64_t offset, uint64_t length);

/* A pattern list (mkfs --no-compress-from): one pattern per line, the line's
 * surrounding white space trimmed; blank lines and lines starting with '#' are
 * skipped. cb gets each pattern (not NUL-terminated) and its line number; a
 * non-zero return stops the parse and is returned. */
typedef int (*cairn_pattern_cb)(void *ctx, const char *pat, size_t len, unsigned line);
int cairn_pattern_list_parse(const char *text, size_t len, cairn_pattern_cb cb, void *ctx);

/* fnmatch-based exclude test as mkfs uses it: a pattern starting with '/' is
 * matched against the whole in-image path ("/a/b"), any other pattern against the
 * path without its leading '/' ("a/b"). '*' also matches '/'. */
int cairn_mkfs_path_excluded(const char *path, const char *const *patterns, size_t n);

#ifdef __cplusplus
}
#endif

#endif
