/* SPDX-License-Identifier: MIT */
/*
 * Internals of the image builder, shared by scan.c (host tree -> memory),
 * mkfs.c (API, manifest, guest paths) and write.c (layout, data, metadata).
 */
#ifndef CAIRN_MKFS_INT_H
#define CAIRN_MKFS_INT_H

#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include "format/disk.h" /* on-disk structures (private) */
#include <cairn/mkfs.h>

#define MK_NONE UINT32_MAX
#define MK_ALIGN(x) (((x) + CAIRN_BLOCK_SIZE - 1) & ~(uint64_t)(CAIRN_BLOCK_SIZE - 1))

/* A growable array of fixed-size elements. */
struct mk_vec {
	void *p;
	size_t n, cap, elem;
};
void mk_vec_init(struct mk_vec *v, size_t elem);
void mk_vec_free(struct mk_vec *v);
/* Append one zeroed element; returns its address or NULL (ENOMEM). */
void *mk_vec_push(struct mk_vec *v);
/* Append raw bytes (elem must be 1); returns the offset or -1 on ENOMEM. */
int64_t mk_vec_append(struct mk_vec *v, const void *data, size_t len);
#define MK_AT(v, type, i) (&((type *)(v)->p)[i])

/* Open-addressing multimap from a 64-bit hash to a 64-bit value. Lookups confirm
 * candidates with an equality callback, so colliding hashes are harmless. */
struct mk_map {
	struct mk_slot { uint64_t hash, val1; } *s; /* val1 = value + 1; 0 = empty */
	size_t cap, n;
};
typedef int (*mk_eq_fn)(void *ctx, uint64_t val);
void mk_map_free(struct mk_map *m);
/* 1 and *val if found, 0 if not. */
int mk_map_find(const struct mk_map *m, uint64_t hash, mk_eq_fn eq, void *ctx, uint64_t *val);
int mk_map_put(struct mk_map *m, uint64_t hash, uint64_t val);

/* One in-memory inode (the image inode is written from it by write.c). */
struct mk_inode {
	uint32_t mode, uid, gid, nlink, flags;
	uint32_t atime_ns, mtime_ns, ctime_ns;
	int64_t atime, mtime, ctime;
	uint64_t size, blocks, rdev;
	uint32_t ino;          /* image inode number; 0 until layout */
	uint32_t parent;       /* directories: parent inode index */
	uint32_t first_child;  /* directories: head of the entry list */
	uint32_t nchild;
	uint32_t xattr_n;
	uint32_t ext_n;        /* EXTENTS files: number of data extents */
	uint64_t xattr_first;  /* index into m->xattrs */
	uint64_t xattr_ref;    /* first entry in the image's xattr table (layout) */
	uint64_t ext_first;    /* index into m->exts */
	uint64_t str;          /* arena: host path (data files), symlink target, inline data */
	uint32_t str_len;
	uint8_t hot;           /* listed in --order (already placed) */
	uint8_t shared;        /* data shared with an earlier file (dedup) */
	uint8_t split;         /* extents made by the --order plan (order.c) */
	uint8_t raw;           /* --no-compress matched a path of it: chunks stored raw */
	uint8_t zplanned;      /* compressed: chunk indexes assigned (zwrite.c) */
	uint32_t frag_off;     /* compressed with a tail: its offset in the fragment */
	uint64_t frag_ref;     /*   and the fragment's chunk index */
	uint64_t data_ref, data_count, hash;
};

/* A name in a directory. */
struct mk_entry {
	uint64_t name;         /* arena offset */
	uint32_t name_len;
	uint32_t dir;          /* inode index of the directory */
	uint32_t inode;        /* inode index of the target */
	uint32_t next;         /* next entry of the same directory */
};

struct mk_xattr {
	uint64_t name, value;  /* arena offsets */
	uint32_t name_len, value_len;
};

struct mk_hardlink {
	uint64_t dev, ino;
	uint32_t inode;
};

struct mk_ext {
	uint64_t file_off, len, disk_off;
	uint8_t hot;           /* placed in the hot prefix (order.c); copy_file only hashes it */
};

/* One item of the hot prefix, in placement order: a whole file, or one extent. */
#define MK_HOT_WHOLE UINT64_MAX
struct mk_hot {
	uint32_t idx;          /* inode index */
	uint64_t ext;          /* index into m->exts, or MK_HOT_WHOLE */
};

struct cairn_mkfs {
	struct cairn_mkfs_opts o;
	char **excludes;
	char **no_compress;
	struct mk_vec arena;   /* bytes: names, paths, targets, xattrs, inline data */
	struct mk_vec inodes;  /* struct mk_inode */
	struct mk_vec entries; /* struct mk_entry */
	struct mk_vec xattrs;  /* struct mk_xattr */
	struct mk_vec exts;    /* struct mk_ext */
	struct mk_map names;   /* (dir, name) -> entry index, built on first lookup */
	int names_active;      /* names is built and kept up to date */
	int oom;               /* building names failed */
	struct mk_map hardlinks; /* (st_dev, st_ino) -> index into hl */
	struct mk_vec hl;      /* struct mk_hardlink */
	uint32_t root;         /* inode index of "/" */
	int64_t build_time;
	int skip_set;          /* an old image at opts.output: skip it in walks */
	uint64_t skip_dev, skip_ino;
	char err[1024];
	/* cairn_mkfs_write_path's temporary file (output.c); tmp_active while it
	 * exists, for cairn_mkfs_temp_path() in a signal handler. */
	char tmp[PATH_MAX + 64];
	volatile sig_atomic_t tmp_active;
	struct cairn_mkfs_stats stats;
	/* scan scratch */
	char *xbuf;            /* listxattr / getxattr buffer */
	size_t xbuf_cap;
};

/* Positioned IO that retries partial transfers and EINTR (write.c). */
/* The whole file at path, NUL-terminated, into *text (the caller frees it);
 * errors name the path. */
int mk_read_text(struct cairn_mkfs *m, const char *path, char **text, size_t *len);
int mk_pwrite_full(int fd, const void *p, size_t n, uint64_t off);
int mk_pread_full(int fd, void *p, size_t n, uint64_t off);

/* Verification (verity.c): the digest table's length for an image of at most
 * `rest` bytes after it (0 when the options turn verification off), and the
 * writer of the table and the verity record, run on the finished image; it
 * sets stats.root. */
uint64_t mk_verity_table_len(const struct cairn_mkfs *m, uint64_t rest);
int mk_verity_write(struct cairn_mkfs *m, int fd, const char *name, uint64_t image_size,
		    uint64_t table_len);

int mk_err(struct cairn_mkfs *m, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline struct mk_inode *mk_ino(struct cairn_mkfs *m, uint32_t i)
{
	return MK_AT(&m->inodes, struct mk_inode, i);
}
static inline struct mk_entry *mk_ent(struct cairn_mkfs *m, uint32_t i)
{
	return MK_AT(&m->entries, struct mk_entry, i);
}
static inline const char *mk_str(const struct cairn_mkfs *m, uint64_t off)
{
	return (const char *)m->arena.p + off;
}
int64_t mk_arena_str(struct cairn_mkfs *m, const void *s, size_t len); /* NUL added */

/* Tree (mkfs.c). */
int mk_inode_new(struct cairn_mkfs *m, uint32_t *out);
uint32_t mk_lookup(struct cairn_mkfs *m, uint32_t dir, const char *name, size_t len);
/* Bind `name` in directory `dir` to inode `ino`, replacing an existing entry.
 * `fresh`: the caller knows the name is not there yet (skips the lookup). */
int mk_link(struct cairn_mkfs *m, uint32_t dir, const char *name, size_t len, uint32_t ino,
	    const char *guest_path, int fresh);
void mk_apply_opts(struct cairn_mkfs *m, struct mk_inode *in);

/* Host scanning (scan.c). `follow`: stat the top object through a symlink. */
int mk_scan_path(struct cairn_mkfs *m, uint32_t dir, const char *name, size_t name_len,
		 const char *host, const char *guest, int follow, int recurse);
/* Give directory inode dir_ino the attributes of host dir (followed), and with
 * `recurse` its contents. */
int mk_scan_tree_into(struct cairn_mkfs *m, uint32_t dir_ino, const char *host,
		      const char *guest, int recurse);
/* Open a host path of any length (components beyond PATH_MAX via openat). */
int mk_open_long(const char *path, int flags);
/* Open a source path relative to dfd (AT_FDCWD: a path of any length, as
 * mk_open_long) with O_NOATIME, so packing does not change the source (or two
 * builds would differ); without it where we do not own the file (EPERM). */
int mk_open_noatime(int dfd, const char *path, int flags);
/* The names in directory d (host path `host`, for messages), without "." and
 * "..", and with `pattern` only those fnmatch(FNM_PERIOD) matches; sorted by
 * strcmp so builds are reproducible. On success *out (free with mk_free_names)
 * holds *count malloc'd names; on error nothing is left allocated and m's error
 * is set. */
int mk_list_dir(struct cairn_mkfs *m, DIR *d, const char *host, const char *pattern,
		char ***out, size_t *count);
void mk_free_names(char **names, size_t n);

/* The --order plan (order.c): marks whole hot files (hot = 1), splits files with
 * range records into extents, and appends struct mk_hot items to `hot` in
 * placement order. Run after numbering, before the tables are placed. */
int mk_order_plan(struct cairn_mkfs *m, struct mk_vec *hot);

/* Compressed images (zwrite.c). A plan is made after the --order plan, in
 * placement order (the hot items, then `cold` inode indexes in inode order): it
 * hashes every file, shares identical ones, turns every data file into a CHUNKED
 * one (data_ref, data_count, frag_ref, frag_off, hash set) and lists the chunks
 * to store. mk_zplan_write() then compresses them (opts.threads workers) and
 * writes them back to back from data_off; the output does not depend on the
 * thread count. */
struct mk_zplan;
int mk_zplan_new(struct cairn_mkfs *m, const struct mk_vec *hot, const struct mk_vec *cold,
		 struct mk_zplan **out);
void mk_zplan_free(struct mk_zplan *z);

/* metaz.c: compressed metadata (CAIRN_INCOMPAT_META_Z). The writer takes the
 * meta_len logical bytes in order through put (in pieces that are multiples of
 * the block size but the last) and writes each block at the cursor of the
 * stored area, which starts at area_off (4 KiB-aligned) with the block index;
 * finish writes the index and fills in the record, *area_end being the
 * 4 KiB-aligned end of the stored area. */
struct mk_metaz;
int mk_metaz_new(uint64_t meta_len, uint64_t area_off, struct mk_metaz **out);
int mk_metaz_put(struct mk_metaz *z, int fd, const void *p, size_t n);
int mk_metaz_finish(struct mk_metaz *z, int fd, struct cairn_disk_metaz_super *rec,
		    uint64_t *area_end);
void mk_metaz_free(struct mk_metaz *z);
/* Files the plan leaves out (sparse: extents, uncompressed, written by write.c). */
int mk_zplan_skips(const struct mk_inode *in);
uint64_t mk_zplan_chunks(const struct mk_zplan *z);
/* Writes the chunks; *end is the end of the data, *hot_len the hot prefix. */
int mk_zplan_write(struct mk_zplan *z, int fd, const char *name, uint64_t data_off,
		   uint64_t *end, uint64_t *hot_len);
/* The chunk table (le, chunk_count records) once written. */
const struct cairn_disk_chunk *mk_zplan_table(const struct mk_zplan *z);
/* The compression record, hash included, for a chunk table at chunk_off. */
void mk_zplan_super(const struct mk_zplan *z, uint64_t chunk_off,
		    struct cairn_disk_chunked_super *out);

/* Writing (write.c). */
int mk_write(struct cairn_mkfs *m, int fd, const char *name);

#endif
