/* SPDX-License-Identifier: MIT */
/*
 * Writing an image: number the inodes (breadth first over sorted directories),
 * lay out the metadata tables and the blob, stream the file data into the data
 * region (hot prefix first, identical files stored once), then write the
 * metadata, its checksum table and the superblock. See docs/FORMAT.md.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include "format/format_int.h"
#include "mkfs_int.h"

#define COPY_BUF (1u << 20)
#define PROGRESS_STEP (16ull << 20)

struct layout {
	struct cairn_mkfs *m;
	int fd;
	const char *name;        /* of the output, for messages */
	int blkdev;              /* fd is a block device: written in place, never truncated */
	struct mk_vec by_ino;    /* uint32_t: inode number -> inode index */
	struct mk_vec dirents;   /* uint32_t: entry indexes in table order */
	struct mk_vec dname;     /* uint64_t: blob offset of each dirent's name */
	struct mk_vec xent;      /* struct cairn_disk_xattr, host order, the xattr table */
	struct mk_map xsets;     /* xattr list hash -> inode index that emitted it */
	struct mk_vec blob;      /* bytes */
	struct mk_map strings;   /* blob interning */
	struct mk_map dedup;     /* (size, hash) -> inode index of the first copy */
	uint64_t xattr_count, extent_count;
	uint64_t inode_off, dirent_off, xattr_off, extent_off, chunk_off, blob_off;
	uint64_t meta_off, meta_len, csum_off, data_off, cursor, hot_len;
	uint64_t table_len;       /* verity digest table at 4096 (0: none) */
	uint64_t done, total, reported;
	char *buf, *buf2;
	struct mk_vec hot;       /* struct mk_hot: the hot prefix in order (order.c) */
	struct mk_vec cold;      /* uint32_t: the other data files, in inode order */
	struct mk_zplan *z;      /* compressed images: the chunk plan (zwrite.c) */
	int zmeta;               /* compressed metadata, stored after the data (metaz.c) */
};

static uint32_t *by_ino(struct layout *l, uint64_t i)
{
	return MK_AT(&l->by_ino, uint32_t, i);
}

/* ---- numbering ---- */

static int entry_cmp(const void *a, const void *b, void *ctx)
{
	struct cairn_mkfs *m = ctx;
	const struct mk_entry *x = mk_ent(m, *(const uint32_t *)a);
	const struct mk_entry *y = mk_ent(m, *(const uint32_t *)b);
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(mk_str(m, x->name), mk_str(m, y->name), n);

	if (c)
		return c;
	return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

static int number_inodes(struct layout *l)
{
	struct cairn_mkfs *m = l->m;
	uint32_t *slot;

	for (size_t i = 0; i < m->inodes.n; i++) {
		mk_ino(m, (uint32_t)i)->ino = 0;
		mk_ino(m, (uint32_t)i)->nlink = 0;
	}
	if (!(slot = mk_vec_push(&l->by_ino)))
		return -ENOMEM;
	*slot = MK_NONE;
	if (!(slot = mk_vec_push(&l->by_ino)))
		return -ENOMEM;
	*slot = m->root;
	mk_ino(m, m->root)->ino = CAIRN_ROOT_INO;
	mk_ino(m, m->root)->parent = m->root;
	for (uint64_t i = 1; i < l->by_ino.n; i++) {
		struct mk_inode *d = mk_ino(m, *by_ino(l, i));
		if (!S_ISDIR(d->mode))
			continue;
		uint64_t first = l->dirents.n;
		for (uint32_t e = d->first_child; e != MK_NONE; e = mk_ent(m, e)->next) {
			if (!(slot = mk_vec_push(&l->dirents)))
				return -ENOMEM;
			*slot = e;
		}
		uint64_t n = l->dirents.n - first;
		uint32_t *ents = n ? MK_AT(&l->dirents, uint32_t, first) : NULL; /* empty: no array */
		if (n > 1)
			qsort_r(ents, n, sizeof(uint32_t), entry_cmp, m);
		d = mk_ino(m, *by_ino(l, i));
		d->data_ref = first;
		d->data_count = n;
		uint32_t subdirs = 0, self = *by_ino(l, i);
		for (uint64_t k = 0; k < n; k++) {
			uint32_t ci = mk_ent(m, ents[k])->inode;
			struct mk_inode *c = mk_ino(m, ci);
			if (!c->ino) {
				if (l->by_ino.n > CAIRN_INO_MAX)
					return mk_err(m, -EFBIG, "too many inodes");
				c->ino = (uint32_t)l->by_ino.n;
				if (!(slot = mk_vec_push(&l->by_ino)))
					return -ENOMEM;
				*slot = ci;
				ents = MK_AT(&l->dirents, uint32_t, first);
				if (S_ISDIR(c->mode))
					c->parent = self;
			}
			if (S_ISDIR(c->mode))
				subdirs++;
			else
				c->nlink++;
		}
		mk_ino(m, self)->nlink = 2 + subdirs;
	}
	return 0;
}

/* ---- blob ---- */

struct str_key {
	struct layout *l;
	const void *p;
	size_t len;
};

static int str_eq(void *ctx, uint64_t off)
{
	struct str_key *k = ctx;
	return off + k->len <= k->l->blob.n && !memcmp((char *)k->l->blob.p + off, k->p, k->len);
}

/* Store bytes in the blob once; identical strings share one copy. */
static int intern(struct layout *l, const void *p, size_t len, uint64_t *out)
{
	struct str_key k = { l, p, len };
	uint64_t h = XXH3_64bits(p, len), off;

	if (!len) {
		*out = 0;
		return 0;
	}
	if (mk_map_find(&l->strings, h, str_eq, &k, &off)) {
		*out = off;
		return 0;
	}
	int64_t o = mk_vec_append(&l->blob, p, len);
	if (o < 0 || mk_map_put(&l->strings, h, (uint64_t)o))
		return -ENOMEM;
	*out = (uint64_t)o;
	return 0;
}

struct xset_key {
	struct layout *l;
	const struct mk_inode *in;
};

static uint64_t xset_hash(struct cairn_mkfs *m, const struct mk_inode *in)
{
	uint64_t h = in->xattr_n;

	for (uint32_t x = 0; x < in->xattr_n; x++) {
		struct mk_xattr *xa = MK_AT(&m->xattrs, struct mk_xattr, in->xattr_first + x);
		h = XXH3_64bits_withSeed(mk_str(m, xa->name), xa->name_len, h);
		h = XXH3_64bits_withSeed(mk_str(m, xa->value), xa->value_len, h);
	}
	return h;
}

static int xset_eq(void *ctx, uint64_t val)
{
	struct xset_key *k = ctx;
	struct cairn_mkfs *m = k->l->m;
	const struct mk_inode *o = mk_ino(m, (uint32_t)val);

	if (o->xattr_n != k->in->xattr_n)
		return 0;
	for (uint32_t x = 0; x < o->xattr_n; x++) {
		struct mk_xattr *a = MK_AT(&m->xattrs, struct mk_xattr, o->xattr_first + x);
		struct mk_xattr *b = MK_AT(&m->xattrs, struct mk_xattr, k->in->xattr_first + x);
		if (a->name_len != b->name_len || a->value_len != b->value_len ||
		    memcmp(mk_str(m, a->name), mk_str(m, b->name), a->name_len) ||
		    memcmp(mk_str(m, a->value), mk_str(m, b->value), a->value_len))
			return 0;
	}
	return 1;
}

/* Xattr entries of one inode; an identical list emitted before is shared (a
 * label present on every file costs one entry, not one per file). */
static int emit_xattrs(struct layout *l, struct mk_inode *in)
{
	struct cairn_mkfs *m = l->m;
	struct xset_key k = { l, in };
	uint64_t h = xset_hash(m, in), other;

	if (mk_map_find(&l->xsets, h, xset_eq, &k, &other)) {
		in->xattr_ref = mk_ino(m, (uint32_t)other)->xattr_ref;
		return 0;
	}
	in->xattr_ref = l->xent.n;
	for (uint32_t x = 0; x < in->xattr_n; x++) {
		struct mk_xattr *xa = MK_AT(&m->xattrs, struct mk_xattr, in->xattr_first + x);
		struct cairn_disk_xattr *d = mk_vec_push(&l->xent);
		uint64_t nref, vref;
		if (!d || intern(l, mk_str(m, xa->name), xa->name_len, &nref) ||
		    intern(l, mk_str(m, xa->value), xa->value_len, &vref))
			return -ENOMEM;
		d = MK_AT(&l->xent, struct cairn_disk_xattr, l->xent.n - 1);
		d->name_ref = cairn_le64(nref);
		d->value_ref = cairn_le64(vref);
		d->value_len = cairn_le32(xa->value_len);
		d->name_len = (uint8_t)xa->name_len;
	}
	uint32_t self = (uint32_t)(in - (struct mk_inode *)m->inodes.p);
	return mk_map_put(&l->xsets, h, self);
}

/* Blob in inode order: a directory's names, then each inode's own strings. */
static int build_blob(struct layout *l)
{
	struct cairn_mkfs *m = l->m;

	if (mk_vec_append(&l->dname, NULL, 0) < 0)
		return -ENOMEM;
	for (uint64_t i = 1; i < l->by_ino.n; i++) {
		struct mk_inode *in = mk_ino(m, *by_ino(l, i));
		if (S_ISDIR(in->mode)) {
			for (uint64_t k = 0; k < in->data_count; k++) {
				struct mk_entry *e = mk_ent(m, *MK_AT(&l->dirents, uint32_t, in->data_ref + k));
				uint64_t *ref = mk_vec_push(&l->dname);
				if (!ref || intern(l, mk_str(m, e->name), e->name_len, ref))
					return -ENOMEM;
			}
		} else if (S_ISLNK(in->mode)) {
			if (intern(l, mk_str(m, in->str), in->str_len, &in->data_ref))
				return -ENOMEM;
			in->data_count = 0;
		} else if (S_ISREG(in->mode) && (in->flags & CAIRN_IF_INLINE)) {
			if (intern(l, mk_str(m, in->str), in->str_len, &in->data_ref))
				return -ENOMEM;
			in->data_count = 0;
			in->hash = XXH3_64bits(mk_str(m, in->str), in->str_len);
		}
		if (in->xattr_n && emit_xattrs(l, in))
			return -ENOMEM;
	}
	return 0;
}

/* Table offsets; every table starts on a 4 KiB boundary. */
/* An upper bound of the image bytes after the digest table, known before the
 * data is written: every non-inline file 4 KiB-aligned, one spare block per
 * extent and hot piece (sharing only makes the image smaller). Empty files take
 * no data: a spare block for each made the table of 10M empty files 10 MiB (for
 * a 1.4 GiB image), all read at open. */
static uint64_t verity_bound(struct layout *l)
{
	struct cairn_mkfs *m = l->m;
	uint64_t meta = (uint64_t)l->by_ino.n * CAIRN_INODE_SIZE + l->dirents.n * CAIRN_DIRENT_SIZE +
			l->xent.n * CAIRN_XATTR_SIZE + l->blob.n + 6 * CAIRN_BLOCK_SIZE;
	uint64_t n = meta + meta / CAIRN_BLOCK_SIZE * 8 + CAIRN_BLOCK_SIZE + l->hot.n * CAIRN_BLOCK_SIZE;

	if (l->zmeta) /* blocks stored raw at worst, behind their index */
		n += (meta / (1u << CAIRN_META_Z_LOG2_DEFAULT) + 1) * CAIRN_CHUNK_SIZE +
		     CAIRN_BLOCK_SIZE;

	for (uint64_t i = 1; i < l->by_ino.n; i++) {
		struct mk_inode *in = mk_ino(m, *by_ino(l, i));

		if (!S_ISREG(in->mode) || (in->flags & CAIRN_IF_INLINE) || in->size == 0)
			continue;
		n += MK_ALIGN(in->size) + ((uint64_t)in->ext_n + 1) * CAIRN_BLOCK_SIZE;
		n += (uint64_t)in->ext_n * CAIRN_EXTENT_SIZE;
	}
	return n;
}

static void place_tables(struct layout *l)
{
	struct cairn_mkfs *m = l->m;

	l->xattr_count = l->xent.n;
	l->extent_count = 0;
	for (uint64_t i = 1; i < l->by_ino.n; i++) {
		struct mk_inode *in = mk_ino(m, *by_ino(l, i));
		if (S_ISREG(in->mode) && (in->flags & CAIRN_IF_EXTENTS)) {
			in->data_ref = l->extent_count;
			in->data_count = in->ext_n;
			l->extent_count += in->ext_n;
		}
	}
	l->table_len = mk_verity_table_len(m, verity_bound(l));
	l->meta_off = CAIRN_BLOCK_SIZE + l->table_len;
	l->inode_off = l->meta_off;
	l->dirent_off = MK_ALIGN(l->inode_off + (uint64_t)l->by_ino.n * CAIRN_INODE_SIZE);
	l->xattr_off = MK_ALIGN(l->dirent_off + l->dirents.n * CAIRN_DIRENT_SIZE);
	l->extent_off = MK_ALIGN(l->xattr_off + l->xattr_count * CAIRN_XATTR_SIZE);
	l->chunk_off = MK_ALIGN(l->extent_off + l->extent_count * CAIRN_EXTENT_SIZE);
	l->blob_off = MK_ALIGN(l->chunk_off + (l->z ? mk_zplan_chunks(l->z) : 0) * CAIRN_CHUNK_SIZE);
	l->meta_len = MK_ALIGN(l->blob_off + l->blob.n) - l->meta_off;
	if (l->zmeta) {
		/* The metadata is stored compressed after the data, once the data
		 * offsets it holds are known (write_meta places it and the
		 * checksum table); the logical region starts where it would be. */
		l->data_off = l->meta_off;
		return;
	}
	l->csum_off = l->meta_off + l->meta_len;
	l->data_off = MK_ALIGN(l->csum_off + l->meta_len / CAIRN_BLOCK_SIZE * 8);
}

/* ---- data ---- */

int mk_pwrite_full(int fd, const void *p, size_t n, uint64_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p = (const char *)p + w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

int mk_pread_full(int fd, void *p, size_t n, uint64_t off)
{
	while (n) {
		ssize_t r = pread(fd, p, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -ENODATA;
		p = (char *)p + r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

static void progress(struct layout *l, uint64_t n)
{
	l->done += n;
	if (l->m->o.progress && (l->done - l->reported >= PROGRESS_STEP || l->done == l->total)) {
		l->reported = l->done;
		l->m->o.progress(l->m->o.ctx, l->done, l->total);
	}
}

static int write_err(struct layout *l, int rc)
{
	return mk_err(l->m, rc, "%s: writing the image: %s", l->name, strerror(-rc));
}

/* Copy [src_off, src_off+len) of src to the image at disk_off, hashing it. */
static int copy_range(struct layout *l, int src, const char *path, uint64_t src_off,
		      uint64_t len, uint64_t disk_off, XXH3_state_t *hs)
{
	uint64_t pos = 0;

	while (pos < len) {
		size_t want = len - pos < COPY_BUF ? (size_t)(len - pos) : COPY_BUF;
		ssize_t r = pread(src, l->buf, want, (off_t)(src_off + pos));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return mk_err(l->m, -errno, "%s: read: %s", path, strerror(errno));
		if (r == 0)
			return mk_err(l->m, -EIO, "%s: file shrank while reading", path);
		if (hs)
			XXH3_64bits_update(hs, l->buf, (size_t)r);
		int rc = mk_pwrite_full(l->fd, l->buf, (size_t)r, disk_off + pos);
		if (rc)
			return write_err(l, rc);
		pos += (uint64_t)r;
		progress(l, (uint64_t)r);
	}
	return 0;
}

/* Hash [src_off, src_off+len) of src without writing it. */
static int hash_range(struct layout *l, int src, const char *path, uint64_t src_off,
		      uint64_t len, XXH3_state_t *hs)
{
	for (uint64_t pos = 0; pos < len;) {
		size_t want = len - pos < COPY_BUF ? (size_t)(len - pos) : COPY_BUF;
		int rc = mk_pread_full(src, l->buf, want, src_off + pos);
		if (rc)
			return mk_err(l->m, rc, "%s: read: %s", path,
				      rc == -ENODATA ? "file shrank while reading" : strerror(-rc));
		XXH3_64bits_update(hs, l->buf, want);
		pos += want;
	}
	return 0;
}

/* Copy one hot extent of a split file to the cursor (its hash comes later,
 * in file order, from copy_file). */
static int copy_hot_extent(struct layout *l, struct mk_hot *h)
{
	struct cairn_mkfs *m = l->m;
	const char *path = mk_str(m, mk_ino(m, h->idx)->str);
	struct mk_ext *e = MK_AT(&m->exts, struct mk_ext, h->ext);
	int src = mk_open_noatime(AT_FDCWD, path, O_RDONLY | O_CLOEXEC), rc;

	if (src < 0)
		return mk_err(m, -errno, "%s: cannot read: %s", path, strerror(errno));
	e->disk_off = l->cursor;
	rc = copy_range(l, src, path, e->file_off, e->len, e->disk_off, NULL);
	l->cursor = MK_ALIGN(e->disk_off + e->len);
	close(src);
	return rc;
}

static void hash_zeros(struct layout *l, XXH3_state_t *hs, uint64_t n)
{
	memset(l->buf2, 0, COPY_BUF);
	while (n) {
		size_t k = n < COPY_BUF ? (size_t)n : COPY_BUF;
		XXH3_64bits_update(hs, l->buf2, k);
		n -= k;
	}
}

struct dup_key {
	struct layout *l;
	struct mk_inode *in;
	uint64_t off;
	int err;
};

/* Same size, same hash, and the same bytes (both copies read back from the image). */
static int dup_eq(void *ctx, uint64_t val)
{
	struct dup_key *k = ctx;
	struct mk_inode *o = mk_ino(k->l->m, (uint32_t)val);

	if (k->err || o->size != k->in->size || o->hash != k->in->hash)
		return 0;
	for (uint64_t pos = 0; pos < o->size;) {
		size_t n = o->size - pos < COPY_BUF ? (size_t)(o->size - pos) : COPY_BUF;
		int rc = mk_pread_full(k->l->fd, k->l->buf, n, o->data_ref + pos);
		if (!rc)
			rc = mk_pread_full(k->l->fd, k->l->buf2, n, k->off + pos);
		if (rc) {
			k->err = rc;
			return 0;
		}
		if (memcmp(k->l->buf, k->l->buf2, n))
			return 0;
		pos += n;
	}
	return 1;
}

/* A file that grew after the scan is stored with the size the scan saw (the
 * metadata is laid out already): say so, as tar does. A file that shrank is an
 * error (copy_range), as its stored size would be a lie. */
static void warn_grown(struct cairn_mkfs *m, int src, const char *path, uint64_t size)
{
	struct stat st;
	char msg[sizeof(m->err)];

	if (!m->o.warn || fstat(src, &st) || (uint64_t)st.st_size <= size)
		return;
	snprintf(msg, sizeof(msg), "%s: file changed as we read it (grew from %llu to %llu "
		 "bytes; the image holds the first %llu)", path, (unsigned long long)size,
		 (unsigned long long)st.st_size, (unsigned long long)size);
	m->o.warn(m->o.ctx, msg);
}

static int copy_file(struct layout *l, uint32_t idx)
{
	struct cairn_mkfs *m = l->m;
	struct mk_inode *in = mk_ino(m, idx);
	const char *path = mk_str(m, in->str);
	int src = mk_open_noatime(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	int rc = 0;

	if (src < 0)
		return mk_err(m, -errno, "%s: cannot read: %s", path, strerror(errno));
	posix_fadvise(src, 0, 0, POSIX_FADV_SEQUENTIAL);
	XXH3_state_t *hs = XXH3_createState();
	if (!hs) {
		close(src);
		return mk_err(m, -ENOMEM, "out of memory");
	}
	XXH3_64bits_reset(hs);
	if (in->flags & CAIRN_IF_EXTENTS) {
		uint64_t at = 0;
		for (uint32_t j = 0; j < in->ext_n && !rc; j++) {
			struct mk_ext *e = MK_AT(&m->exts, struct mk_ext, in->ext_first + j);
			hash_zeros(l, hs, e->file_off - at);
			at = e->file_off + e->len;
			if (e->hot) { /* already in the hot prefix: only hash it */
				rc = hash_range(l, src, path, e->file_off, e->len, hs);
				continue;
			}
			e->disk_off = l->cursor;
			rc = copy_range(l, src, path, e->file_off, e->len, e->disk_off, hs);
			l->cursor = MK_ALIGN(e->disk_off + e->len);
		}
		if (!rc)
			hash_zeros(l, hs, in->size - at);
		in->hash = XXH3_64bits_digest(hs);
		if (!in->split)
			m->stats.sparse_files++;
	} else {
		uint64_t off = l->cursor;
		rc = copy_range(l, src, path, 0, in->size, off, hs);
		in->hash = XXH3_64bits_digest(hs);
		if (!rc) {
			struct dup_key k = { l, in, off, 0 };
			uint64_t h = in->hash ^ (in->size * 0x9e3779b97f4a7c15ull), other;
			if (mk_map_find(&l->dedup, h, dup_eq, &k, &other)) {
				in->data_ref = mk_ino(m, (uint32_t)other)->data_ref;
				in->shared = 1;
				m->stats.dedup_files++;
				m->stats.dedup_bytes += in->size;
				/* Drop the copy just written: it is the last thing in the file
				 * (on a device the next write simply goes over it). */
				if (!l->blkdev && ftruncate(l->fd, (off_t)off))
					rc = write_err(l, -errno);
			} else if (k.err) {
				rc = write_err(l, k.err);
			} else {
				in->data_ref = off;
				l->cursor = MK_ALIGN(off + in->size);
				if (mk_map_put(&l->dedup, h, idx))
					rc = mk_err(m, -ENOMEM, "out of memory");
			}
		}
	}
	if (!rc)
		warn_grown(m, src, path, in->size);
	XXH3_freeState(hs);
	close(src);
	return rc;
}

/* The data files outside the hot prefix, in inode order, into l->cold; empty
 * files get their hash here. */
static int list_cold(struct layout *l)
{
	struct cairn_mkfs *m = l->m;

	for (uint64_t i = 1; i < l->by_ino.n; i++) {
		uint32_t idx = *by_ino(l, i);
		struct mk_inode *in = mk_ino(m, idx);
		if (!S_ISREG(in->mode))
			continue;
		if (!in->size) {
			in->hash = XXH3_64bits(NULL, 0);
			in->data_ref = in->data_count = 0;
			continue;
		}
		if ((in->flags & CAIRN_IF_INLINE) || in->hot)
			continue;
		uint32_t *slot = mk_vec_push(&l->cold);
		if (!slot)
			return mk_err(m, -ENOMEM, "out of memory");
		*slot = idx;
	}
	return 0;
}

static int write_data(struct layout *l)
{
	struct cairn_mkfs *m = l->m;
	struct mk_vec *list = &l->cold;
	int rc = 0;

	if (l->z) { /* the chunks, then the sparse files the plan left out */
		rc = mk_zplan_write(l->z, l->fd, l->name, l->data_off, &l->cursor, &l->hot_len);
		l->cursor = MK_ALIGN(l->cursor);
		for (uint64_t i = 0; i < l->hot.n + list->n && !rc; i++) {
			uint32_t idx = i < l->hot.n ? MK_AT(&l->hot, struct mk_hot, i)->idx
						    : *MK_AT(list, uint32_t, i - l->hot.n);

			if (mk_zplan_skips(mk_ino(m, idx)))
				rc = copy_file(l, idx);
		}
		return rc;
	}
	l->total = 0;
	for (uint64_t i = 0; i < l->hot.n; i++) {
		struct mk_hot *h = MK_AT(&l->hot, struct mk_hot, i);
		if (h->ext == MK_HOT_WHOLE)
			l->total += mk_ino(m, h->idx)->size;
	}
	for (uint64_t i = 0; i < list->n; i++) {
		struct mk_inode *in = mk_ino(m, *MK_AT(list, uint32_t, i));
		if (in->flags & CAIRN_IF_EXTENTS)
			for (uint32_t j = 0; j < in->ext_n; j++)
				l->total += MK_AT(&m->exts, struct mk_ext, in->ext_first + j)->len;
		else
			l->total += in->size;
	}
	/* The hot prefix (order.c's plan), then everything else in inode order. */
	l->cursor = l->data_off;
	for (uint64_t i = 0; i < l->hot.n && !rc; i++) {
		struct mk_hot *h = MK_AT(&l->hot, struct mk_hot, i);
		rc = h->ext == MK_HOT_WHOLE ? copy_file(l, h->idx) : copy_hot_extent(l, h);
	}
	l->hot_len = l->cursor - l->data_off;
	for (uint64_t i = 0; i < list->n && !rc; i++)
		rc = copy_file(l, *MK_AT(list, uint32_t, i));
	if (!rc && m->o.progress && l->reported != l->done)
		m->o.progress(m->o.ctx, l->done, l->total);
	return rc;
}

/* ---- metadata ---- */

static void fill_inode(struct layout *l, struct mk_inode *in, struct cairn_disk_inode *d)
{
	uint64_t size = S_ISDIR(in->mode) ? in->data_count * CAIRN_DIRENT_SIZE : in->size;
	uint64_t ref = in->data_ref, count = in->data_count;

	if (S_ISCHR(in->mode) || S_ISBLK(in->mode))
		ref = in->rdev, count = 0;
	else if (S_ISFIFO(in->mode) || S_ISSOCK(in->mode))
		ref = count = 0;
	else if (S_ISREG(in->mode) && !(in->flags & (CAIRN_IF_EXTENTS | CAIRN_IF_CHUNKED)))
		count = 0;
	d->mode = cairn_le32(in->mode);
	d->flags = cairn_le32(S_ISREG(in->mode) ? in->flags : 0);
	d->nlink = cairn_le32(in->nlink);
	d->uid = cairn_le32(in->uid);
	d->gid = cairn_le32(in->gid);
	d->parent = cairn_le32(S_ISDIR(in->mode) ? mk_ino(l->m, in->parent)->ino : 0);
	d->size = cairn_le64(size);
	d->atime_sec = (int64_t)cairn_le64((uint64_t)in->atime);
	d->mtime_sec = (int64_t)cairn_le64((uint64_t)in->mtime);
	d->ctime_sec = (int64_t)cairn_le64((uint64_t)in->ctime);
	d->atime_nsec = cairn_le32(in->atime_ns);
	d->mtime_nsec = cairn_le32(in->mtime_ns);
	d->ctime_nsec = cairn_le32(in->ctime_ns);
	d->xattr_count = cairn_le32(in->xattr_n);
	d->xattr_ref = cairn_le64(in->xattr_n ? in->xattr_ref : 0);
	d->data_ref = cairn_le64(ref);
	d->data_count = cairn_le64(count);
	d->content_hash = cairn_le64(S_ISREG(in->mode) ? in->hash : 0);
	d->alloc_blocks = cairn_le64(in->blocks);
	if (S_ISREG(in->mode) && (in->flags & CAIRN_IF_CHUNKED)) {
		d->frag_ref = cairn_le64(in->frag_ref);
		d->frag_off = cairn_le32(in->frag_off);
	}
}

/*
 * The metadata is produced in image order through a 1 MiB window: each full
 * 4 KiB block is checksummed and the window written out, so memory does not
 * hold a second copy of the metadata.
 */
struct meta_out {
	struct layout *l;
	uint8_t *buf;           /* COPY_BUF bytes */
	size_t fill;
	uint64_t off;           /* image offset of buf[0] */
	uint64_t *csum;
	uint64_t block;         /* next checksum index */
	int rc;
	struct mk_metaz *mz;    /* compressed metadata: blocks go here, not to off */
};

static void meta_flush(struct meta_out *w)
{
	if (w->rc || !w->fill)
		return;
	cairn_format_csum_fill(w->csum + w->block, w->buf, w->fill / CAIRN_BLOCK_SIZE);
	w->block += w->fill / CAIRN_BLOCK_SIZE;
	w->rc = w->mz ? mk_metaz_put(w->mz, w->l->fd, w->buf, w->fill)
		      : mk_pwrite_full(w->l->fd, w->buf, w->fill, w->off);
	w->off += w->fill;
	w->fill = 0;
}

static void meta_emit(struct meta_out *w, const void *p, size_t n)
{
	while (n && !w->rc) {
		size_t k = COPY_BUF - w->fill < n ? COPY_BUF - w->fill : n;
		memcpy(w->buf + w->fill, p, k);
		w->fill += k;
		p = (const char *)p + k;
		n -= k;
		if (w->fill == COPY_BUF)
			meta_flush(w);
	}
}

/* Zeros up to the image offset `to` (the next table, or the end). */
static void meta_pad(struct meta_out *w, uint64_t to)
{
	static const uint8_t zero[CAIRN_BLOCK_SIZE];

	while (!w->rc && w->off + w->fill < to) {
		uint64_t k = to - (w->off + w->fill);
		meta_emit(w, zero, k < sizeof(zero) ? (size_t)k : sizeof(zero));
	}
}

static void emit_meta(struct layout *l, struct meta_out *w)
{
	struct cairn_mkfs *m = l->m;
	struct cairn_disk_inode d;

	memset(&d, 0, sizeof(d));
	meta_emit(w, &d, sizeof(d)); /* inode 0 */
	for (uint64_t i = 1; i < l->by_ino.n; i++) {
		memset(&d, 0, sizeof(d));
		fill_inode(l, mk_ino(m, *by_ino(l, i)), &d);
		meta_emit(w, &d, sizeof(d));
	}
	meta_pad(w, l->dirent_off);
	for (uint64_t i = 0; i < l->dirents.n; i++) {
		struct mk_entry *e = mk_ent(m, *MK_AT(&l->dirents, uint32_t, i));
		struct mk_inode *t = mk_ino(m, e->inode);
		struct cairn_disk_dirent de;
		memset(&de, 0, sizeof(de));
		de.name_ref = cairn_le64(*MK_AT(&l->dname, uint64_t, i));
		de.ino = cairn_le32(t->ino);
		de.name_len = (uint8_t)e->name_len;
		de.type = cairn_format_dtype(t->mode);
		meta_emit(w, &de, sizeof(de));
	}
	meta_pad(w, l->xattr_off);
	meta_emit(w, l->xent.p, l->xent.n * CAIRN_XATTR_SIZE);
	meta_pad(w, l->extent_off);
	for (uint64_t i = 1; i < l->by_ino.n; i++) {
		struct mk_inode *in = mk_ino(m, *by_ino(l, i));
		if (!S_ISREG(in->mode) || !(in->flags & CAIRN_IF_EXTENTS))
			continue;
		for (uint32_t j = 0; j < in->ext_n; j++) {
			struct mk_ext *e = MK_AT(&m->exts, struct mk_ext, in->ext_first + j);
			struct cairn_disk_extent de = { cairn_le64(e->file_off),
							cairn_le64(e->disk_off), cairn_le64(e->len) };
			meta_emit(w, &de, sizeof(de));
		}
	}
	meta_pad(w, l->chunk_off);
	if (l->z)
		meta_emit(w, mk_zplan_table(l->z), mk_zplan_chunks(l->z) * CAIRN_CHUNK_SIZE);
	meta_pad(w, l->blob_off);
	meta_emit(w, l->blob.p, l->blob.n);
	meta_pad(w, l->meta_off + l->meta_len);
	meta_flush(w);
}

static void count_stats(struct layout *l)
{
	struct cairn_mkfs *m = l->m;
	struct cairn_mkfs_stats *s = &m->stats;

	for (uint64_t i = 1; i < l->by_ino.n; i++) {
		struct mk_inode *in = mk_ino(m, *by_ino(l, i));
		s->inodes++;
		if (S_ISREG(in->mode)) {
			s->files++;
			s->data_bytes += in->size;
			if (in->flags & CAIRN_IF_INLINE)
				s->inline_files++;
			if (in->nlink > 1)
				s->hardlinks += in->nlink - 1;
		} else if (S_ISDIR(in->mode)) {
			s->dirs++;
		} else if (S_ISLNK(in->mode)) {
			s->symlinks++;
		} else {
			s->others++;
			if (in->nlink > 1)
				s->hardlinks += in->nlink - 1;
		}
	}
}

/* Zeros in [from, to) (less than a block: the tail after the checksum table;
 * a block device written in place may hold old bytes there). */
static int zero_to(struct layout *l, uint64_t from, uint64_t to)
{
	static const uint8_t zero[CAIRN_BLOCK_SIZE];

	return from < to ? mk_pwrite_full(l->fd, zero, (size_t)(to - from), from) : 0;
}

/* Compressed metadata: the stored area after the data, then the checksum
 * table; the image ends on the block after it. */
static int finish_zmeta(struct layout *l, struct meta_out *w, uint8_t *sb, uint64_t *image_size)
{
	uint64_t area_end;
	int rc = mk_metaz_finish(w->mz, l->fd,
				 (struct cairn_disk_metaz_super *)(sb + CAIRN_META_Z_SUPER_OFF),
				 &area_end);
	if (rc)
		return rc;
	l->csum_off = area_end;
	*image_size = MK_ALIGN(l->csum_off + l->meta_len / CAIRN_BLOCK_SIZE * 8);
	return 0;
}

/* Writes the metadata (at its place, or compressed after the data ending at
 * data_end), the checksum table and block 0; *image_size is the image's end. */
static int write_meta(struct layout *l, uint64_t data_end, uint64_t *image_size)
{
	struct cairn_mkfs *m = l->m;
	uint64_t nblocks = l->meta_len / CAIRN_BLOCK_SIZE;
	uint64_t *csum = calloc(nblocks ? nblocks : 1, 8);
	uint8_t *sb = calloc(1, CAIRN_BLOCK_SIZE);
	struct mk_metaz *mz = NULL;
	int rc = 0;

	*image_size = data_end;
	if (!csum || !sb || (l->zmeta && mk_metaz_new(l->meta_len, MK_ALIGN(data_end), &mz))) {
		rc = mk_err(m, -ENOMEM, "out of memory");
		goto out;
	}
	struct meta_out w = { l, (uint8_t *)l->buf, 0, l->meta_off, csum, 0, 0, mz };
	emit_meta(l, &w);
	if (!w.rc && mz)
		w.rc = finish_zmeta(l, &w, sb, image_size);
	if (w.rc) {
		rc = write_err(l, w.rc);
		goto out;
	}
	uint64_t end = *image_size;

	struct cairn_disk_super *s = (struct cairn_disk_super *)sb;
	uint32_t compat = CAIRN_COMPAT_FILE_HASH, incompat = 0;
	if (l->hot_len)
		compat |= CAIRN_COMPAT_HOT_PREFIX;
	if (l->extent_count || m->stats.sparse_files)
		incompat |= CAIRN_INCOMPAT_EXTENTS;
	if (l->table_len)
		compat |= CAIRN_COMPAT_VERITY;
	if (mz)
		incompat |= CAIRN_INCOMPAT_META_Z;
	if (l->z) {
		incompat |= CAIRN_INCOMPAT_CHUNKED;
		mk_zplan_super(l->z, l->chunk_off,
			       (struct cairn_disk_chunked_super *)(sb + CAIRN_CHUNKED_SUPER_OFF));
	}
	memcpy(s->magic, CAIRN_MAGIC_BYTES, 8);
	s->version_major = cairn_le16(CAIRN_FORMAT_VERSION_MAJOR);
	s->version_minor = cairn_le16(mz ? CAIRN_FORMAT_VERSION_MINOR_META_Z :
				      l->z ? CAIRN_FORMAT_VERSION_MINOR_CHUNKED :
					     CAIRN_FORMAT_VERSION_MINOR);
	s->block_size = cairn_le32(CAIRN_BLOCK_SIZE);
	s->compat = cairn_le32(compat);
	s->incompat = cairn_le32(incompat);
	s->ro_compat = 0;
	s->inode_size = cairn_le32(CAIRN_INODE_SIZE);
	s->image_size = cairn_le64(end);
	s->inode_count = cairn_le64(l->by_ino.n);
	s->root_ino = cairn_le64(CAIRN_ROOT_INO);
	s->meta_off = cairn_le64(l->meta_off);
	s->meta_len = cairn_le64(l->meta_len);
	s->inode_off = cairn_le64(l->inode_off);
	s->dirent_off = cairn_le64(l->dirent_off);
	s->dirent_count = cairn_le64(l->dirents.n);
	s->xattr_off = cairn_le64(l->xattr_off);
	s->xattr_count = cairn_le64(l->xattr_count);
	s->extent_off = cairn_le64(l->extent_off);
	s->extent_count = cairn_le64(l->extent_count);
	s->blob_off = cairn_le64(l->blob_off);
	s->blob_len = cairn_le64(l->blob.n);
	s->csum_off = cairn_le64(l->csum_off);
	s->data_off = cairn_le64(l->data_off);
	s->data_len = cairn_le64((mz ? MK_ALIGN(data_end) : end) - l->data_off);
	s->hot_off = cairn_le64(l->hot_len ? l->data_off : 0);
	s->hot_len = cairn_le64(l->hot_len);
	s->build_time = (int64_t)cairn_le64((uint64_t)m->build_time);
	/* The uuid names the content: the checksum table covers all metadata, and
	 * the metadata holds every file's content hash. */
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits(csum, nblocks * 8));
	memcpy(s->uuid, c.digest, 16);
	s->uuid[6] = (uint8_t)((s->uuid[6] & 0x0f) | 0x80); /* RFC 9562 version 8 */
	s->uuid[8] = (uint8_t)((s->uuid[8] & 0x3f) | 0x80); /* variant 10 */
	s->csum_table_hash = cairn_le64(cairn_format_table_csum(csum, nblocks));
	s->file_count = cairn_le64(m->stats.files);
	s->data_bytes = cairn_le64(m->stats.data_bytes);
	s->super_hash = cairn_le64(cairn_format_super_csum(s));

	if ((rc = mk_pwrite_full(l->fd, csum, nblocks * 8, l->csum_off)) ||
	    (mz && (rc = zero_to(l, l->csum_off + nblocks * 8, end))) ||
	    (rc = mk_pwrite_full(l->fd, sb, CAIRN_BLOCK_SIZE, 0)))
		rc = write_err(l, rc);
out:
	mk_metaz_free(mz);
	free(csum);
	free(sb);
	return rc;
}

static void layout_free(struct layout *l)
{
	mk_vec_free(&l->by_ino);
	mk_vec_free(&l->dirents);
	mk_vec_free(&l->dname);
	mk_vec_free(&l->xent);
	mk_map_free(&l->xsets);
	mk_vec_free(&l->blob);
	mk_map_free(&l->strings);
	mk_map_free(&l->dedup);
	mk_vec_free(&l->hot);
	mk_vec_free(&l->cold);
	mk_zplan_free(l->z);
	free(l->buf);
	free(l->buf2);
}

/* Empty a regular file; on a block device (written in place) clear the old
 * superblock instead, so that a write that fails half-way does not leave an
 * old image's superblock over new metadata (the new one is written last). */
static int start_output(struct layout *l)
{
	struct stat st;

	if (fstat(l->fd, &st))
		return -errno;
	l->blkdev = S_ISBLK(st.st_mode);
	if (!l->blkdev)
		return ftruncate(l->fd, 0) ? -errno : 0;
	memset(l->buf, 0, CAIRN_BLOCK_SIZE);
	return mk_pwrite_full(l->fd, l->buf, CAIRN_BLOCK_SIZE, 0);
}

int mk_write(struct cairn_mkfs *m, int fd, const char *name)
{
	struct layout l;
	int rc;

	memset(&l, 0, sizeof(l));
	memset(&m->stats, 0, sizeof(m->stats));
	l.m = m;
	l.fd = fd;
	l.name = name ? name : "image";
	mk_vec_init(&l.by_ino, sizeof(uint32_t));
	mk_vec_init(&l.dirents, sizeof(uint32_t));
	mk_vec_init(&l.dname, sizeof(uint64_t));
	mk_vec_init(&l.xent, sizeof(struct cairn_disk_xattr));
	mk_vec_init(&l.blob, 1);
	mk_vec_init(&l.hot, sizeof(struct mk_hot));
	mk_vec_init(&l.cold, sizeof(uint32_t));
	l.buf = malloc(COPY_BUF);
	l.buf2 = malloc(COPY_BUF);
	if (!l.buf || !l.buf2) {
		rc = mk_err(m, -ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = start_output(&l))) {
		rc = write_err(&l, rc);
		goto out;
	}
	if ((rc = number_inodes(&l)) || (rc = build_blob(&l))) {
		if (!m->err[0] || rc == -ENOMEM)
			mk_err(m, rc, "laying out the image: %s", strerror(-rc));
		goto out;
	}
	if ((rc = mk_order_plan(m, &l.hot)) || (rc = list_cold(&l)))
		goto out;
	if (m->o.codec && (rc = mk_zplan_new(m, &l.hot, &l.cold, &l.z)))
		goto out;
	l.zmeta = !m->o.plain_meta;
	place_tables(&l);
	if ((rc = write_data(&l)))
		goto out;
	count_stats(&l);
	uint64_t image_size;
	if ((rc = write_meta(&l, l.cursor, &image_size)))
		goto out;
	if (!l.blkdev && ftruncate(fd, (off_t)image_size)) {
		rc = write_err(&l, -errno);
		goto out;
	}
	/* Last: the digests cover the finished bytes, block 0 included. */
	if (l.table_len && (rc = mk_verity_write(m, fd, l.name, image_size, l.table_len)))
		goto out;
	m->stats.image_size = image_size;
	m->stats.meta_len = l.meta_len;
	m->stats.data_len = (l.zmeta ? MK_ALIGN(l.cursor) : image_size) - l.data_off;
	m->stats.meta_stored = l.zmeta ? l.csum_off - MK_ALIGN(l.cursor) : l.meta_len;
	m->stats.hot_len = l.hot_len;
out:
	layout_free(&l);
	return rc;
}

int cairn_mkfs_write_fd(struct cairn_mkfs *m, int fd, const char *name)
{
	m->err[0] = '\0';
	return mk_write(m, fd, name);
}
