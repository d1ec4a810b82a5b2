/* SPDX-License-Identifier: MIT */
/*
 * The image reader: open (superblock only), checked access to every on-disk
 * structure, and the lookups and reads of image.h.
 *
 * Trust model: nothing read from the image is used before it is checked. The
 * superblock is checked whole at open (hash, then every region against the image
 * and device size). Every metadata block is checked against its checksum entry
 * the first time any byte of it is used (a bitmap remembers which were). Every
 * record is then checked for its own bounds by the *_load() function that decodes
 * it, so callers only ever see records whose offsets lie inside their regions.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <cairn/cache.h>
#include <cairn/error.h>
#include "format/format_int.h"
#include "image_int.h"
#include "zcache.h"

#define MAX_SYMLINK_FOLLOWS 40
#define RESOLVE_BUF_MAX (64u * 1024) /* longest path text resolve() expands to */

int cairn_image_corrupt(struct cairn_image *img, const char *fmt, ...)
{
	va_list ap;

	if (atomic_load_explicit(&img->has_why, memory_order_acquire))
		return -CAIRN_ECORRUPT;
	pthread_mutex_lock(&img->why_lock);
	if (!atomic_load_explicit(&img->has_why, memory_order_relaxed)) {
		va_start(ap, fmt);
		vsnprintf(img->why, sizeof(img->why), fmt, ap);
		va_end(ap);
		atomic_store_explicit(&img->has_why, 1, memory_order_release);
	}
	pthread_mutex_unlock(&img->why_lock);
	return -CAIRN_ECORRUPT;
}

const char *cairn_image_corruption(struct cairn_image *img)
{
	if (!img || !atomic_load_explicit(&img->has_why, memory_order_acquire))
		return NULL;
	return img->why;
}

int cairn_image_dev_read(struct cairn_image *img, void *buf, size_t len, uint64_t off,
			 const struct cairn_cache_hint *hint)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = cairn_cache_read(img->cache, (char *)buf + done, len - done,
					     off + done, hint);

		if (n < 0)
			return (int)n;
		if (n == 0)
			return -EIO; /* open checked the device is long enough */
		done += (size_t)n;
	}
	return 0;
}

static int block_verified(struct cairn_image *img, uint64_t b)
{
	uint64_t w = atomic_load_explicit(&img->verified[b / 64], memory_order_acquire);

	return (w >> (b % 64)) & 1;
}

int cairn_image_verify_block(struct cairn_image *img, uint64_t b)
{
	unsigned char block[CAIRN_BLOCK_SIZE];
	uint64_t want;
	int rc;

	if (b >= img->meta_blocks)
		return -EINVAL;
	rc = cairn_image_dev_read(img, block, sizeof(block), img->meta_off + b * CAIRN_BLOCK_SIZE,
				  NULL);
	if (rc)
		return rc;
	rc = cairn_image_dev_read(img, &want, sizeof(want), img->csum_off + b * 8, NULL);
	if (rc)
		return rc;
	if (cairn_format_block_csum(block) != cairn_le64(want))
		return cairn_image_corrupt(img, "metadata block %llu (offset %llu): checksum mismatch",
					   (unsigned long long)b,
					   (unsigned long long)(img->meta_off + b * CAIRN_BLOCK_SIZE));
	atomic_fetch_or_explicit(&img->verified[b / 64], (uint64_t)1 << (b % 64),
				 memory_order_release);
	return 0;
}

int cairn_image_meta_read(struct cairn_image *img, void *buf, size_t len, uint64_t off)
{
	uint64_t first, last;
	int rc;

	if (len == 0)
		return 0;
	if (off < img->meta_off || !cairn_add_ok(off, len, img->meta_end))
		return cairn_image_corrupt(img, "metadata reference %llu+%zu outside the metadata region",
					   (unsigned long long)off, len);
	first = (off - img->meta_off) / CAIRN_BLOCK_SIZE;
	last = (off + len - 1 - img->meta_off) / CAIRN_BLOCK_SIZE;
	for (uint64_t b = first; b <= last; b++) {
		if (block_verified(img, b))
			continue;
		rc = cairn_image_verify_block(img, b);
		if (rc)
			return rc;
	}
	return cairn_image_dev_read(img, buf, len, off, NULL);
}

/* A blob reference [ref, ref+len) must lie inside the blob region. */
static int blob_ok(const struct cairn_image *img, uint64_t ref, uint64_t len)
{
	return cairn_add_ok(ref, len, img->blob_len);
}

static int blob_read(struct cairn_image *img, void *buf, size_t len, uint64_t ref)
{
	if (!blob_ok(img, ref, len))
		return cairn_image_corrupt(img, "blob reference %llu+%zu past the blob region",
					   (unsigned long long)ref, len);
	return cairn_image_meta_read(img, buf, len, img->blob_off + ref);
}

static int mode_ok(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR:
	case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		break;
	default:
		return 0;
	}
	return (mode & ~(uint32_t)(S_IFMT | 07777)) == 0;
}

static int regular_ok(struct cairn_image *img, cairn_ino_t ino, struct cairn_rinode *r)
{
	unsigned long long n = ino;

	if (r->flags & CAIRN_IF_CHUNKED) {
		return cairn_image_chunked_ok(img, ino, r);
	} else if (r->flags & CAIRN_IF_INLINE) {
		if (r->flags & CAIRN_IF_EXTENTS)
			return cairn_image_corrupt(img, "inode %llu: both inline and extents", n);
		if (r->size > CAIRN_INLINE_MAX || !blob_ok(img, r->data_ref, r->size))
			return cairn_image_corrupt(img, "inode %llu: inline data out of bounds", n);
	} else if (r->flags & CAIRN_IF_EXTENTS) {
		if (!(img->incompat & CAIRN_INCOMPAT_EXTENTS))
			return cairn_image_corrupt(img, "inode %llu: uses extents without the feature", n);
		if (!cairn_add_ok(r->data_ref, r->data_count, img->extent_count))
			return cairn_image_corrupt(img, "inode %llu: extents %llu+%llu past the extent table",
						   n, (unsigned long long)r->data_ref,
						   (unsigned long long)r->data_count);
	} else if (r->size) {
		if (r->data_ref % CAIRN_BLOCK_SIZE || r->data_ref < img->data_off ||
		    !cairn_add_ok(r->data_ref, r->size, img->data_end))
			return cairn_image_corrupt(img, "inode %llu: data %llu+%llu outside the data region",
						   n, (unsigned long long)r->data_ref,
						   (unsigned long long)r->size);
	}
	return 0;
}

static int type_ok(struct cairn_image *img, cairn_ino_t ino, struct cairn_rinode *r)
{
	unsigned long long n = ino;

	switch (r->mode & S_IFMT) {
	case S_IFREG:
		return regular_ok(img, ino, r);
	case S_IFDIR:
		if (r->flags)
			return cairn_image_corrupt(img, "inode %llu: directory with data flags", n);
		if (!cairn_add_ok(r->data_ref, r->data_count, img->dirent_count))
			return cairn_image_corrupt(img, "inode %llu: entries %llu+%llu past the dirent table",
						   n, (unsigned long long)r->data_ref,
						   (unsigned long long)r->data_count);
		if (r->parent == 0 || r->parent >= img->inode_count)
			return cairn_image_corrupt(img, "inode %llu: bad parent %u", n, r->parent);
		return 0;
	case S_IFLNK:
		if (r->flags)
			return cairn_image_corrupt(img, "inode %llu: symlink with data flags", n);
		if (r->size == 0 || r->size > CAIRN_SYMLINK_MAX || !blob_ok(img, r->data_ref, r->size))
			return cairn_image_corrupt(img, "inode %llu: symlink target out of bounds", n);
		return 0;
	default:
		if (r->flags)
			return cairn_image_corrupt(img, "inode %llu: special file with data flags", n);
		return 0;
	}
}

int cairn_image_inode_load(struct cairn_image *img, cairn_ino_t ino, struct cairn_rinode *r)
{
	struct cairn_disk_inode d;
	unsigned long long n = ino;
	int rc;

	if (ino == 0 || ino >= img->inode_count)
		return -ENOENT;
	rc = cairn_image_meta_read(img, &d, sizeof(d), img->inode_off + ino * CAIRN_INODE_SIZE);
	if (rc)
		return rc;
	r->mode = cairn_le32(d.mode);
	r->flags = cairn_le32(d.flags);
	r->nlink = cairn_le32(d.nlink);
	r->uid = cairn_le32(d.uid);
	r->gid = cairn_le32(d.gid);
	r->parent = cairn_le32(d.parent);
	r->size = cairn_le64(d.size);
	r->atime.sec = (int64_t)cairn_le64((uint64_t)d.atime_sec);
	r->mtime.sec = (int64_t)cairn_le64((uint64_t)d.mtime_sec);
	r->ctime.sec = (int64_t)cairn_le64((uint64_t)d.ctime_sec);
	r->atime.nsec = cairn_le32(d.atime_nsec);
	r->mtime.nsec = cairn_le32(d.mtime_nsec);
	r->ctime.nsec = cairn_le32(d.ctime_nsec);
	r->xattr_count = cairn_le32(d.xattr_count);
	r->xattr_ref = cairn_le64(d.xattr_ref);
	r->data_ref = cairn_le64(d.data_ref);
	r->data_count = cairn_le64(d.data_count);
	r->content_hash = cairn_le64(d.content_hash);
	r->alloc_blocks = cairn_le64(d.alloc_blocks);
	r->frag_ref = cairn_le64(d.frag_ref);
	r->frag_off = cairn_le32(d.frag_off);

	if (!mode_ok(r->mode))
		return cairn_image_corrupt(img, "inode %llu: bad mode 0%o", n, r->mode);
	if (r->flags & ~CAIRN_IF_KNOWN)
		return cairn_image_corrupt(img, "inode %llu: unknown flags 0x%x", n, r->flags);
	if (r->nlink == 0)
		return cairn_image_corrupt(img, "inode %llu: link count 0", n);
	if (r->atime.nsec >= 1000000000u || r->mtime.nsec >= 1000000000u ||
	    r->ctime.nsec >= 1000000000u)
		return cairn_image_corrupt(img, "inode %llu: nanoseconds out of range", n);
	if (!cairn_add_ok(r->xattr_ref, r->xattr_count, img->xattr_count))
		return cairn_image_corrupt(img, "inode %llu: xattrs past the xattr table", n);
	return type_ok(img, ino, r);
}

static int dtype_ok(unsigned t)
{
	return t == DT_REG || t == DT_DIR || t == DT_LNK || t == DT_CHR || t == DT_BLK ||
	       t == DT_FIFO || t == DT_SOCK;
}

int cairn_image_dirent_load(struct cairn_image *img, uint64_t idx, struct cairn_rdirent *e)
{
	struct cairn_disk_dirent d;
	unsigned long long n = idx;
	int rc;

	if (idx >= img->dirent_count)
		return cairn_image_corrupt(img, "dirent %llu past the dirent table", n);
	rc = cairn_image_meta_read(img, &d, sizeof(d), img->dirent_off + idx * CAIRN_DIRENT_SIZE);
	if (rc)
		return rc;
	e->name_ref = cairn_le64(d.name_ref);
	e->ino = cairn_le32(d.ino);
	e->name_len = d.name_len;
	e->type = d.type;
	if (e->name_len == 0)
		return cairn_image_corrupt(img, "dirent %llu: empty name", n);
	if (e->ino == 0 || e->ino >= img->inode_count)
		return cairn_image_corrupt(img, "dirent %llu: inode %u out of range", n, e->ino);
	if (!dtype_ok(e->type))
		return cairn_image_corrupt(img, "dirent %llu: bad type %u", n, e->type);
	rc = blob_read(img, e->name, e->name_len, e->name_ref);
	if (rc)
		return rc;
	e->name[e->name_len] = '\0';
	if (memchr(e->name, '/', e->name_len) || memchr(e->name, '\0', e->name_len))
		return cairn_image_corrupt(img, "dirent %llu: name contains '/' or NUL", n);
	if (!strcmp(e->name, ".") || !strcmp(e->name, ".."))
		return cairn_image_corrupt(img, "dirent %llu: name is '.' or '..'", n);
	return 0;
}

int cairn_image_xattr_load(struct cairn_image *img, uint64_t idx, struct cairn_rxattr *x)
{
	struct cairn_disk_xattr d;
	unsigned long long n = idx;
	int rc;

	if (idx >= img->xattr_count)
		return cairn_image_corrupt(img, "xattr %llu past the xattr table", n);
	rc = cairn_image_meta_read(img, &d, sizeof(d), img->xattr_off + idx * CAIRN_XATTR_SIZE);
	if (rc)
		return rc;
	x->name_ref = cairn_le64(d.name_ref);
	x->value_ref = cairn_le64(d.value_ref);
	x->value_len = cairn_le32(d.value_len);
	x->name_len = d.name_len;
	if (x->name_len == 0 || !blob_ok(img, x->name_ref, x->name_len))
		return cairn_image_corrupt(img, "xattr %llu: name out of bounds", n);
	if (x->value_len > CAIRN_XATTR_VALUE_MAX || !blob_ok(img, x->value_ref, x->value_len))
		return cairn_image_corrupt(img, "xattr %llu: value out of bounds", n);
	return 0;
}

int cairn_image_extent_load(struct cairn_image *img, uint64_t idx, const struct cairn_rinode *r,
			    struct cairn_disk_extent *x)
{
	struct cairn_disk_extent d;
	unsigned long long n = idx;
	int rc;

	if (idx >= img->extent_count)
		return cairn_image_corrupt(img, "extent %llu past the extent table", n);
	rc = cairn_image_meta_read(img, &d, sizeof(d), img->extent_off + idx * CAIRN_EXTENT_SIZE);
	if (rc)
		return rc;
	x->file_off = cairn_le64(d.file_off);
	x->disk_off = cairn_le64(d.disk_off);
	x->len = cairn_le64(d.len);
	if (x->len == 0 || !cairn_add_ok(x->file_off, x->len, r->size))
		return cairn_image_corrupt(img, "extent %llu: range past the file size", n);
	if (x->disk_off % CAIRN_BLOCK_SIZE || x->disk_off < img->data_off ||
	    !cairn_add_ok(x->disk_off, x->len, img->data_end))
		return cairn_image_corrupt(img, "extent %llu: outside the data region", n);
	return 0;
}

/* ---- open ---- */

static int why_fail(char *why, size_t why_len, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int why_fail(char *why, size_t why_len, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && why_len) {
		va_start(ap, fmt);
		vsnprintf(why, why_len, fmt, ap);
		va_end(ap);
	}
	return err;
}

#define BAD(...) why_fail(why, why_len, -CAIRN_ECORRUPT, __VA_ARGS__)

/* A table of count records of size rec at off must fit in the metadata region. */
static int table_ok(const struct cairn_image *img, uint64_t off, uint64_t count, uint64_t rec)
{
	if (count == 0)
		return 1;
	if (off < img->meta_off || off > img->meta_end)
		return 0;
	return count <= (img->meta_end - off) / rec;
}

static int ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return alen && blen && a < b + blen && b < a + alen;
}

static void super_decode(struct cairn_image *img, const struct cairn_disk_super *s)
{
	img->compat = cairn_le32(s->compat);
	img->incompat = cairn_le32(s->incompat);
	img->ro_compat = cairn_le32(s->ro_compat);
	img->image_size = cairn_le64(s->image_size);
	img->inode_count = cairn_le64(s->inode_count);
	img->root_ino = cairn_le64(s->root_ino);
	img->meta_off = cairn_le64(s->meta_off);
	img->meta_len = cairn_le64(s->meta_len);
	img->inode_off = cairn_le64(s->inode_off);
	img->dirent_off = cairn_le64(s->dirent_off);
	img->dirent_count = cairn_le64(s->dirent_count);
	img->xattr_off = cairn_le64(s->xattr_off);
	img->xattr_count = cairn_le64(s->xattr_count);
	img->extent_off = cairn_le64(s->extent_off);
	img->extent_count = cairn_le64(s->extent_count);
	img->blob_off = cairn_le64(s->blob_off);
	img->blob_len = cairn_le64(s->blob_len);
	img->csum_off = cairn_le64(s->csum_off);
	img->data_off = cairn_le64(s->data_off);
	img->data_len = cairn_le64(s->data_len);
	img->hot_off = cairn_le64(s->hot_off);
	img->hot_len = cairn_le64(s->hot_len);
}

/* Every check of the superblock that needs no further reads. */
static int super_check(struct cairn_image *img, uint64_t dev_size, char *why, size_t why_len)
{
	const struct cairn_disk_super *s = &img->raw;
	uint64_t csum_len;

	if (memcmp(s->magic, CAIRN_MAGIC_BYTES, 8))
		return BAD("not a cairn image (bad magic)");
	if (cairn_le16(s->version_major) != CAIRN_FORMAT_VERSION_MAJOR)
		return why_fail(why, why_len, -EOPNOTSUPP, "unsupported format version %u.%u",
				cairn_le16(s->version_major), cairn_le16(s->version_minor));
	if (cairn_format_super_csum(s) != cairn_le64(s->super_hash))
		return BAD("superblock checksum mismatch");
	if (cairn_le32(s->block_size) != CAIRN_BLOCK_SIZE)
		return BAD("unsupported block size %u", cairn_le32(s->block_size));
	if (cairn_le32(s->inode_size) != CAIRN_INODE_SIZE)
		return BAD("unsupported inode size %u", cairn_le32(s->inode_size));
	super_decode(img, s);
	if (img->incompat & ~CAIRN_INCOMPAT_KNOWN) {
		uint32_t unk = img->incompat & ~CAIRN_INCOMPAT_KNOWN;

		return why_fail(why, why_len, -EOPNOTSUPP,
				"unknown incompatible feature bit %d (incompat 0x%x)",
				__builtin_ctz(unk), img->incompat);
	}
	if (img->image_size < CAIRN_BLOCK_SIZE)
		return BAD("image size %llu is smaller than the superblock block",
			   (unsigned long long)img->image_size);
	if (img->image_size > dev_size)
		return BAD("image is truncated: %llu bytes on the device, the superblock says %llu",
			   (unsigned long long)dev_size, (unsigned long long)img->image_size);
	if (img->root_ino != CAIRN_ROOT_INO)
		return BAD("root inode is %llu, not %u", (unsigned long long)img->root_ino,
			   CAIRN_ROOT_INO);
	if (img->inode_count < 2 || img->inode_count > CAIRN_INO_MAX + 1)
		return BAD("inode count %llu out of range", (unsigned long long)img->inode_count);
	if (img->meta_off % CAIRN_BLOCK_SIZE || img->meta_len % CAIRN_BLOCK_SIZE ||
	    img->meta_off < CAIRN_BLOCK_SIZE || img->meta_len == 0 ||
	    !cairn_add_ok(img->meta_off, img->meta_len, img->image_size))
		return BAD("metadata region %llu+%llu is not aligned or not inside the image",
			   (unsigned long long)img->meta_off, (unsigned long long)img->meta_len);
	img->meta_end = img->meta_off + img->meta_len;
	img->meta_blocks = img->meta_len / CAIRN_BLOCK_SIZE;
	if (!table_ok(img, img->inode_off, img->inode_count, CAIRN_INODE_SIZE))
		return BAD("inode table outside the metadata region");
	if (!table_ok(img, img->dirent_off, img->dirent_count, CAIRN_DIRENT_SIZE))
		return BAD("dirent table outside the metadata region");
	if (!table_ok(img, img->xattr_off, img->xattr_count, CAIRN_XATTR_SIZE))
		return BAD("xattr table outside the metadata region");
	if (!table_ok(img, img->extent_off, img->extent_count, CAIRN_EXTENT_SIZE))
		return BAD("extent table outside the metadata region");
	if (!table_ok(img, img->blob_off, img->blob_len, 1))
		return BAD("blob region outside the metadata region");
	csum_len = img->meta_blocks * 8;
	if (!cairn_add_ok(img->csum_off, csum_len, img->image_size) ||
	    ranges_overlap(img->csum_off, csum_len, img->meta_off, img->meta_len))
		return BAD("checksum table %llu+%llu outside the image or inside the metadata",
			   (unsigned long long)img->csum_off, (unsigned long long)csum_len);
	if ((img->data_len && img->data_off % CAIRN_BLOCK_SIZE) ||
	    !cairn_add_ok(img->data_off, img->data_len, img->image_size) ||
	    ranges_overlap(img->data_off, img->data_len, img->meta_off, img->meta_len) ||
	    ranges_overlap(img->data_off, img->data_len, img->csum_off, csum_len) ||
	    ranges_overlap(img->data_off, img->data_len, 0, CAIRN_BLOCK_SIZE))
		return BAD("data region %llu+%llu is not aligned, not inside the image, or overlaps metadata",
			   (unsigned long long)img->data_off, (unsigned long long)img->data_len);
	img->data_end = img->data_off + img->data_len;
	if ((img->compat & CAIRN_COMPAT_HOT_PREFIX) &&
	    (img->hot_off < img->data_off || !cairn_add_ok(img->hot_off, img->hot_len, img->data_end)))
		return BAD("hot prefix outside the data region");
	return 0;
}

/* The compression record (block 0 bytes 256..383), when the image has one. */
static int chunked_open(struct cairn_image *img, char *why, size_t why_len)
{
	struct cairn_disk_chunked_super *z = &img->zraw;
	int rc;

	if (!(img->incompat & CAIRN_INCOMPAT_CHUNKED))
		return 0;
	rc = cairn_image_dev_read(img, z, sizeof(*z), CAIRN_CHUNKED_SUPER_OFF, NULL);
	if (rc)
		return why_fail(why, why_len, rc, "cannot read the compression record");
	if (cairn_format_chunked_csum(z) != cairn_le64(z->hash))
		return BAD("compression record checksum mismatch");
	img->chunk_log2 = cairn_le32(z->chunk_log2);
	if (img->chunk_log2 < CAIRN_CHUNK_LOG2_MIN || img->chunk_log2 > CAIRN_CHUNK_LOG2_MAX)
		return BAD("chunk size 2^%u outside 2^%u..2^%u", img->chunk_log2,
			   CAIRN_CHUNK_LOG2_MIN, CAIRN_CHUNK_LOG2_MAX);
	img->chunk_size = 1ull << img->chunk_log2;
	img->chunk_off = cairn_le64(z->chunk_off);
	img->chunk_count = cairn_le64(z->chunk_count);
	if (!table_ok(img, img->chunk_off, img->chunk_count, CAIRN_CHUNK_SIZE))
		return BAD("chunk table outside the metadata region");
	rc = cairn_zcache_new(0, &img->zc);
	return rc ? rc : cairn_image_chunk_init(img);
}

int cairn_image_open(struct cairn_cache *cache, char *why, size_t why_len,
		     struct cairn_image **out)
{
	struct cairn_bdev *dev = cairn_cache_bdev(cache);
	uint64_t dev_size = dev ? cairn_bdev_size(dev) : 0;
	struct cairn_image *img;
	ssize_t n;
	int rc;

	if (why && why_len)
		why[0] = '\0';
	img = calloc(1, sizeof(*img));
	if (!img)
		return -ENOMEM;
	img->cache = cache;
	pthread_mutex_init(&img->why_lock, NULL);
	pthread_mutex_init(&img->dctx_lock, NULL);
	/* The device size says whether the image is too short; a short read from
	 * a longer device is an IO failure, not damage (tests/test_hostile_faults). */
	if (dev_size < sizeof(img->raw)) {
		rc = BAD("too short for a superblock (%llu bytes)", (unsigned long long)dev_size);
		goto fail;
	}
	n = cairn_image_dev_read(img, &img->raw, sizeof(img->raw), CAIRN_SUPER_OFF, NULL);
	if (n < 0) {
		rc = why_fail(why, why_len, (int)n, "cannot read the superblock");
		goto fail;
	}
	rc = super_check(img, dev_size, why, why_len);
	if (!rc)
		rc = chunked_open(img, why, why_len);
	if (rc)
		goto fail;
	/* Sized by meta_len, which is bounded by the device size: 1 bit per 4 KiB. */
	img->verified = calloc((size_t)((img->meta_blocks + 63) / 64), sizeof(uint64_t));
	if (!img->verified) {
		rc = -ENOMEM;
		goto fail;
	}
	*out = img;
	return 0;
fail:
	cairn_image_chunk_fini(img);
	cairn_zcache_free(img->zc);
	pthread_mutex_destroy(&img->dctx_lock);
	pthread_mutex_destroy(&img->why_lock);
	free(img);
	return rc;
}

void cairn_image_close(struct cairn_image *img)
{
	if (!img)
		return;
	cairn_profile_free(img->profile);
	cairn_image_chunk_fini(img); /* the worker first: it reads through both caches */
	cairn_zcache_free(img->zc);
	cairn_cache_free(img->cache);
	pthread_mutex_destroy(&img->dctx_lock);
	pthread_mutex_destroy(&img->why_lock);
	free((void *)img->verified);
	free(img);
}

struct cairn_cache *cairn_image_cache(struct cairn_image *img)
{
	return img->cache;
}

cairn_ino_t cairn_image_root(const struct cairn_image *img)
{
	return img->root_ino;
}

void cairn_image_get_info(const struct cairn_image *img, struct cairn_image_info *o)
{
	const struct cairn_disk_super *s = &img->raw;

	memset(o, 0, sizeof(*o));
	o->version_major = cairn_le16(s->version_major);
	o->version_minor = cairn_le16(s->version_minor);
	o->compat = img->compat;
	o->incompat = img->incompat;
	o->image_size = img->image_size;
	o->inode_count = img->inode_count;
	o->file_count = cairn_le64(s->file_count);
	o->data_bytes = cairn_le64(s->data_bytes);
	o->meta_off = img->meta_off;
	o->meta_len = img->meta_len;
	o->data_off = img->data_off;
	o->data_len = img->data_len;
	o->hot_off = img->hot_off;
	o->hot_len = img->hot_len;
	o->dirent_count = img->dirent_count;
	o->xattr_count = img->xattr_count;
	o->extent_count = img->extent_count;
	o->blob_len = img->blob_len;
	o->build_time = (int64_t)cairn_le64((uint64_t)s->build_time);
	memcpy(o->uuid, s->uuid, sizeof(o->uuid));
	if (img->zc) {
		o->chunk_size = img->chunk_size;
		o->codec = cairn_le32(img->zraw.codec);
		o->level = cairn_le32(img->zraw.level);
		o->chunk_count = img->chunk_count;
		o->frag_count = cairn_le64(img->zraw.frag_count);
		o->stored_bytes = cairn_le64(img->zraw.stored_bytes);
		o->logical_bytes = cairn_le64(img->zraw.logical_bytes);
	}
}

void cairn_image_set_chunk_cache(struct cairn_image *img, size_t budget)
{
	if (img->zc)
		cairn_zcache_set_budget(img->zc, budget);
}

int cairn_image_chunk_cache_stats(struct cairn_image *img, struct cairn_chunk_cache_stats *o)
{
	struct cairn_zcache_stats s;

	memset(o, 0, sizeof(*o));
	if (!img->zc)
		return -ENOENT;
	cairn_zcache_get_stats(img->zc, &s);
	o->hits = s.hits;
	o->misses = s.misses;
	o->waits = s.waits;
	o->evictions = s.evictions;
	o->readahead = s.ahead;
	o->decompressed_bytes = s.loaded_bytes;
	o->resident_bytes = s.resident_bytes;
	o->budget_bytes = s.budget_bytes;
	return 0;
}

/* ---- attributes and names ---- */

int cairn_image_stat(struct cairn_image *img, cairn_ino_t ino, struct cairn_stat *st)
{
	struct cairn_rinode r;
	int rc = cairn_image_inode_load(img, ino, &r);

	if (rc)
		return rc;
	memset(st, 0, sizeof(*st));
	st->ino = ino;
	st->mode = r.mode;
	st->nlink = r.nlink;
	st->uid = r.uid;
	st->gid = r.gid;
	st->size = r.size;
	st->blocks = r.alloc_blocks;
	if (S_ISCHR(r.mode) || S_ISBLK(r.mode))
		st->rdev = r.data_ref;
	st->atime = r.atime;
	st->mtime = r.mtime;
	st->ctime = r.ctime;
	return 0;
}

/* The order of the format: memcmp over the shorter length, then shorter first. */
static int name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

static int load_dir(struct cairn_image *img, cairn_ino_t dir, struct cairn_rinode *r)
{
	int rc = cairn_image_inode_load(img, dir, r);

	if (rc)
		return rc;
	return S_ISDIR(r->mode) ? 0 : -ENOTDIR;
}

int cairn_image_lookup(struct cairn_image *img, cairn_ino_t dir, const char *name,
		       size_t name_len, cairn_ino_t *out)
{
	struct cairn_rinode r;
	struct cairn_rdirent e;
	uint64_t lo = 0, hi;
	int rc = load_dir(img, dir, &r);

	if (rc)
		return rc;
	if (name_len == 1 && name[0] == '.') {
		*out = dir;
		return 0;
	}
	if (name_len == 2 && name[0] == '.' && name[1] == '.') {
		*out = r.parent;
		return 0;
	}
	if (name_len == 0 || name_len > CAIRN_NAME_MAX)
		return name_len ? -ENAMETOOLONG : -ENOENT;
	hi = r.data_count;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		int c;

		rc = cairn_image_dirent_load(img, r.data_ref + mid, &e);
		if (rc)
			return rc;
		c = name_cmp(name, name_len, e.name, e.name_len);
		if (c == 0) {
			*out = e.ino;
			return 0;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -ENOENT;
}

int cairn_image_readdir(struct cairn_image *img, cairn_ino_t dir, uint64_t cookie,
			cairn_dirent_cb cb, void *ctx)
{
	struct cairn_rinode r;
	struct cairn_rdirent e;
	int rc = load_dir(img, dir, &r);

	if (rc)
		return rc;
	if (cookie < 1 && cb(ctx, ".", 1, dir, DT_DIR, 1))
		return 0;
	if (cookie < 2 && cb(ctx, "..", 2, r.parent, DT_DIR, 2))
		return 0;
	for (uint64_t i = cookie > 2 ? cookie - 2 : 0; i < r.data_count; i++) {
		rc = cairn_image_dirent_load(img, r.data_ref + i, &e);
		if (rc)
			return rc;
		if (cb(ctx, e.name, e.name_len, e.ino, e.type, 3 + i))
			return 0;
	}
	return 0;
}

ssize_t cairn_image_readlink(struct cairn_image *img, cairn_ino_t ino, char *buf, size_t len)
{
	struct cairn_rinode r;
	int rc = cairn_image_inode_load(img, ino, &r);

	if (rc)
		return rc;
	if (!S_ISLNK(r.mode))
		return -EINVAL;
	if (len < r.size)
		return -ERANGE;
	rc = blob_read(img, buf, (size_t)r.size, r.data_ref);
	if (rc)
		return rc;
	if (memchr(buf, '\0', (size_t)r.size))
		return cairn_image_corrupt(img, "inode %llu: symlink target contains NUL",
					   (unsigned long long)ino);
	return (ssize_t)r.size;
}

/* Replaces the text at *rest with target + "/" + rest in buf. */
static int splice_link(char *buf, size_t cap, const char *target, size_t tlen, const char *rest)
{
	size_t rlen = strlen(rest);
	size_t sep = rlen ? 1 : 0; /* no slash after the target when nothing follows */

	if (tlen + sep + rlen + 1 > cap)
		return -ENAMETOOLONG;
	memmove(buf + tlen + sep, rest, rlen + 1);
	memcpy(buf, target, tlen);
	if (sep)
		buf[tlen] = '/';
	return 0;
}

int cairn_image_resolve(struct cairn_image *img, const char *path, int follow, cairn_ino_t *out)
{
	size_t plen = strlen(path);
	char target[CAIRN_SYMLINK_MAX + 1];
	cairn_ino_t cur = img->root_ino;
	struct cairn_rinode r;
	unsigned links = 0;
	char *buf, *p;
	int rc = 0;

	if (plen >= RESOLVE_BUF_MAX / 2)
		return -ENAMETOOLONG;
	buf = malloc(RESOLVE_BUF_MAX);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, path, plen + 1);
	p = buf;
	for (;;) {
		const char *comp, *rest;
		size_t clen;
		cairn_ino_t child;
		int last, slash;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		comp = p;
		while (*p && *p != '/')
			p++;
		clen = (size_t)(p - comp);
		rest = p;
		while (*rest == '/')
			rest++;
		last = !*rest;
		slash = *p == '/';
		if (clen > CAIRN_NAME_MAX) {
			rc = -ENAMETOOLONG;
			break;
		}
		rc = cairn_image_lookup(img, cur, comp, clen, &child);
		if (rc)
			break;
		rc = cairn_image_inode_load(img, child, &r);
		if (rc)
			break;
		if (S_ISLNK(r.mode) && (!last || follow || slash)) {
			ssize_t tl;

			if (++links > MAX_SYMLINK_FOLLOWS) {
				rc = -ELOOP;
				break;
			}
			tl = cairn_image_readlink(img, child, target, sizeof(target));
			if (tl < 0) {
				rc = (int)tl;
				break;
			}
			/* p keeps a trailing slash, which must still demand a directory. */
			rc = splice_link(buf, RESOLVE_BUF_MAX, target, (size_t)tl, p);
			if (rc)
				break;
			if (target[0] == '/')
				cur = img->root_ino;
			p = buf;
			continue;
		}
		if (slash && last && !S_ISDIR(r.mode)) {
			rc = -ENOTDIR;
			break;
		}
		cur = child;
	}
	free(buf);
	if (rc == 0)
		*out = cur;
	return rc;
}

/* ---- data ---- */

static int load_regular(struct cairn_image *img, cairn_ino_t ino, struct cairn_rinode *r)
{
	int rc = cairn_image_inode_load(img, ino, r);

	if (rc)
		return rc;
	if (S_ISDIR(r->mode))
		return -EISDIR;
	return S_ISREG(r->mode) ? 0 : -EINVAL;
}

/* Index of the first extent of r that ends after off (binary search); r->data_count
 * when none. Order is checked again as the caller walks forward. */
static int extent_find(struct cairn_image *img, const struct cairn_rinode *r, uint64_t off,
		       uint64_t *idx)
{
	struct cairn_disk_extent x;
	uint64_t lo = 0, hi = r->data_count;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		int rc = cairn_image_extent_load(img, r->data_ref + mid, r, &x);

		if (rc)
			return rc;
		if (x.file_off + x.len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	*idx = lo;
	return 0;
}

static ssize_t read_extents(struct cairn_image *img, cairn_ino_t ino, const struct cairn_rinode *r,
			    char *buf, size_t len, uint64_t off)
{
	struct cairn_disk_extent x;
	uint64_t pos = off, end = off + len, i, prev_end = 0;
	int rc = extent_find(img, r, off, &i);

	if (rc)
		return rc;
	for (; pos < end; i++) {
		uint64_t from, to;
		struct cairn_cache_hint hint;

		if (i >= r->data_count) {
			memset(buf + (pos - off), 0, (size_t)(end - pos));
			break;
		}
		rc = cairn_image_extent_load(img, r->data_ref + i, r, &x);
		if (rc)
			return rc;
		if (x.file_off < prev_end)
			return cairn_image_corrupt(img, "inode %llu: extents overlap or are unsorted",
						   (unsigned long long)ino);
		prev_end = x.file_off + x.len;
		if (x.file_off > pos) { /* a hole before this extent */
			uint64_t z = x.file_off < end ? x.file_off : end;

			memset(buf + (pos - off), 0, (size_t)(z - pos));
			pos = z;
			if (pos >= end)
				break;
		}
		if (prev_end <= pos)
			continue;
		from = pos;
		to = prev_end < end ? prev_end : end;
		hint.lo = x.disk_off;
		hint.hi = x.disk_off + x.len;
		rc = cairn_image_dev_read(img, buf + (from - off), (size_t)(to - from),
					  x.disk_off + (from - x.file_off), &hint);
		if (rc)
			return rc;
		pos = to;
	}
	return (ssize_t)len;
}

ssize_t cairn_image_read(struct cairn_image *img, cairn_ino_t ino, void *buf, size_t len,
			 uint64_t off)
{
	struct cairn_rinode r;
	struct cairn_cache_hint hint;
	int rc = load_regular(img, ino, &r);

	if (rc)
		return rc;
	if (off >= r.size || len == 0)
		return 0;
	if (len > r.size - off)
		len = (size_t)(r.size - off);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	if (r.flags & CAIRN_IF_INLINE)
		rc = blob_read(img, buf, len, r.data_ref + off);
	else if (r.flags & CAIRN_IF_CHUNKED)
		rc = cairn_image_read_chunked(img, ino, &r, buf, len, off);
	else if (r.flags & CAIRN_IF_EXTENTS)
		return read_extents(img, ino, &r, buf, len, off);
	else {
		hint.lo = r.data_ref;
		hint.hi = r.data_ref + r.size;
		rc = cairn_image_dev_read(img, buf, len, r.data_ref + off, &hint);
	}
	return rc ? rc : (ssize_t)len;
}

int64_t cairn_image_lseek(struct cairn_image *img, cairn_ino_t ino, uint64_t off, int whence)
{
	struct cairn_disk_extent x;
	struct cairn_rinode r;
	uint64_t i, end;
	int rc = load_regular(img, ino, &r);

	if (rc)
		return rc;
	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (off >= r.size || r.size > INT64_MAX)
		return -ENXIO;
	if (r.flags & CAIRN_IF_CHUNKED)
		return cairn_image_lseek_chunked(img, &r, off, whence);
	if (!(r.flags & CAIRN_IF_EXTENTS))
		return whence == SEEK_DATA ? (int64_t)off : (int64_t)r.size;
	rc = extent_find(img, &r, off, &i);
	if (rc)
		return rc;
	if (i >= r.data_count)
		return whence == SEEK_DATA ? -ENXIO : (int64_t)off;
	rc = cairn_image_extent_load(img, r.data_ref + i, &r, &x);
	if (rc)
		return rc;
	if (whence == SEEK_DATA)
		return (int64_t)(x.file_off > off ? x.file_off : off);
	if (x.file_off > off)
		return (int64_t)off;
	/* Inside data: the hole starts where the run of touching extents ends. */
	end = x.file_off + x.len;
	while (++i < r.data_count) {
		rc = cairn_image_extent_load(img, r.data_ref + i, &r, &x);
		if (rc)
			return rc;
		if (x.file_off != end)
			break;
		end += x.len;
	}
	return (int64_t)end;
}

int cairn_image_file_extent(struct cairn_image *img, cairn_ino_t ino, uint64_t *lo, uint64_t *hi)
{
	struct cairn_rinode r;
	struct cairn_disk_extent a, b;
	int rc = load_regular(img, ino, &r);

	if (rc)
		return rc;
	*lo = *hi = 0;
	if (r.flags & CAIRN_IF_INLINE || r.size == 0)
		return 0;
	if (r.flags & CAIRN_IF_CHUNKED) {
		cairn_image_chunked_extent(img, &r, lo, hi);
		return 0;
	}
	if (!(r.flags & CAIRN_IF_EXTENTS)) {
		*lo = r.data_ref;
		*hi = r.data_ref + r.size;
		return 0;
	}
	if (r.data_count == 0)
		return 0;
	rc = cairn_image_extent_load(img, r.data_ref, &r, &a);
	if (!rc)
		rc = cairn_image_extent_load(img, r.data_ref + r.data_count - 1, &r, &b);
	if (rc)
		return rc;
	*lo = a.disk_off < b.disk_off ? a.disk_off : b.disk_off;
	*hi = a.disk_off + a.len > b.disk_off + b.len ? a.disk_off + a.len : b.disk_off + b.len;
	return 0;
}

struct map_chunks {
	uint64_t off, end;
	cairn_range_cb fn;
	void *ctx;
};

static int map_chunk(void *ctx, uint64_t file_off, uint64_t len, uint64_t dev_off,
		     uint64_t dev_len)
{
	struct map_chunks *m = ctx;

	if (file_off >= m->end || file_off + len <= m->off)
		return 0;
	return m->fn(m->ctx, file_off, dev_off, dev_len);
}

int cairn_image_map(struct cairn_image *img, cairn_ino_t ino, const struct cairn_rinode *r,
		    uint64_t off, uint64_t len, cairn_range_cb fn, void *ctx)
{
	struct cairn_disk_extent x;
	uint64_t end, i, prev_end = 0;
	int rc;

	if (r->flags & CAIRN_IF_INLINE || off >= r->size || !len)
		return 0;
	end = len > r->size - off ? r->size : off + len;
	if (r->flags & CAIRN_IF_CHUNKED) {
		struct map_chunks m = { off, end, fn, ctx };

		return cairn_image_chunked_ranges(img, r, map_chunk, &m);
	}
	if (!(r->flags & CAIRN_IF_EXTENTS))
		return fn(ctx, off, r->data_ref + off, end - off);
	rc = extent_find(img, r, off, &i);
	for (; !rc && i < r->data_count; i++) {
		uint64_t lo, hi;

		rc = cairn_image_extent_load(img, r->data_ref + i, r, &x);
		if (rc || x.file_off >= end)
			break;
		if (x.file_off < prev_end)
			return cairn_image_corrupt(img, "inode %llu: extents overlap or are unsorted",
						   (unsigned long long)ino);
		prev_end = x.file_off + x.len;
		lo = x.file_off > off ? x.file_off : off;
		hi = prev_end < end ? prev_end : end;
		if (lo < hi)
			rc = fn(ctx, lo, x.disk_off + (lo - x.file_off), hi - lo);
	}
	return rc;
}

static int has_hot_prefix(const struct cairn_image *img)
{
	return (img->compat & CAIRN_COMPAT_HOT_PREFIX) && img->hot_len;
}

/* Hot data is kept: a push into the page cache may still read it, and reading
 * it again would cost the request the prefetch saved. */
static int deliver_piece(void *ctx, uint64_t file_off, uint64_t disk_off, uint64_t len)
{
	struct cairn_image *img = ctx;
	uint64_t end = disk_off + len, lo = disk_off;

	(void)file_off;
	if (img->keep_hot && !img->profile && has_hot_prefix(img)) {
		uint64_t hot_end = img->hot_off + img->hot_len;

		if (disk_off < img->hot_off) /* the part before the prefix */
			cairn_cache_delivered(img->cache, disk_off,
					      (end < img->hot_off ? end : img->hot_off) - disk_off);
		lo = hot_end > disk_off ? hot_end : disk_off; /* and after it */
	}
	if (lo < end)
		cairn_cache_delivered(img->cache, lo, end - lo);
	return 0;
}

void cairn_image_delivered(struct cairn_image *img, cairn_ino_t ino, uint64_t off,
			   uint64_t len)
{
	struct cairn_rinode r;

	/* Compressed files are left to the budget: their stored chunks serve more
	 * than the bytes delivered, and the chunk cache holds them decompressed. */
	if ((!img->keep_hot || !img->profile || !cairn_profile_has(img->profile, ino)) &&
	    load_regular(img, ino, &r) == 0 && !(r.flags & CAIRN_IF_CHUNKED))
		(void)cairn_image_map(img, ino, &r, off, len, deliver_piece, img);
}

uint64_t cairn_image_hot_bytes(const struct cairn_image *img)
{
	if (img->profile)
		return cairn_profile_bytes(img->profile);
	return has_hot_prefix(img) ? img->hot_len : 0;
}

void cairn_image_prefetch_hot(struct cairn_image *img)
{
	img->keep_hot = 1;
	if (img->profile)
		cairn_profile_prefetch(img, img->profile);
	else if (has_hot_prefix(img))
		cairn_cache_prefetch(img->cache, img->hot_off, img->hot_len);
}

/* A file's hot pieces, sorted into device order before they are handed on. */
struct hot_piece {
	uint64_t disk_off, disk_len, file_off, len;
};

struct hot_list {
	const struct cairn_image *img;
	struct hot_piece *v;
	size_t n, cap;
};

static int hot_push(struct hot_list *l, struct hot_piece p)
{
	if (l->n == l->cap) {
		size_t ncap = l->cap ? 2 * l->cap : 8;
		struct hot_piece *v = realloc(l->v, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = ncap;
	}
	l->v[l->n++] = p;
	return 0;
}

/* Adds the part of a mapping (file_off -> disk_off, len bytes) that lies in the
 * hot prefix, if any (a cairn_image_map() callback). */
static int hot_add(void *ctx, uint64_t file_off, uint64_t disk_off, uint64_t len)
{
	struct hot_list *l = ctx;
	uint64_t hot_end = l->img->hot_off + l->img->hot_len;
	uint64_t lo = disk_off > l->img->hot_off ? disk_off : l->img->hot_off;
	uint64_t hi = disk_off + len < hot_end ? disk_off + len : hot_end;

	if (lo >= hi)
		return 0;
	return hot_push(l, (struct hot_piece){ lo, hi - lo, file_off + (lo - disk_off), hi - lo });
}

struct hot_chunks {
	const struct cairn_image *img;
	struct hot_list *l;
};

/* A compressed piece is hot whole when its stored bytes start in the prefix. */
static int hot_add_chunk(void *ctx, uint64_t file_off, uint64_t len, uint64_t dev_off,
			 uint64_t dev_len)
{
	struct hot_chunks *h = ctx;
	const struct cairn_image *img = h->img;

	if (dev_off < img->hot_off || dev_off - img->hot_off >= img->hot_len)
		return 0;
	return hot_push(h->l, (struct hot_piece){ dev_off, dev_len, file_off, len });
}

static int by_disk_off(const void *a, const void *b)
{
	const struct hot_piece *x = a, *y = b;

	return x->disk_off < y->disk_off ? -1 : x->disk_off > y->disk_off;
}

/* Hands the pieces on in device order, merging those that follow each other both
 * in the file and on the device. */
static int hot_emit(struct hot_piece *p, size_t n, cairn_range_cb fn, void *ctx)
{
	qsort(p, n, sizeof(*p), by_disk_off);
	for (size_t i = 0; i < n;) {
		uint64_t off = p[i].file_off, dev = p[i].disk_off, len = p[i].len;
		int rc;

		while (++i < n && p[i].file_off == off + len &&
		       p[i].disk_off == p[i - 1].disk_off + p[i - 1].disk_len)
			len += p[i].len;
		rc = fn(ctx, off, dev, len);
		if (rc)
			return rc;
	}
	return 0;
}

int cairn_image_hot_ranges(struct cairn_image *img, cairn_ino_t ino, cairn_range_cb fn,
			   void *ctx)
{
	struct hot_list l = { img, NULL, 0, 0 };
	struct cairn_rinode r;
	int rc;

	if (img->profile)
		return cairn_profile_ranges(img->profile, ino, fn, ctx);
	if (!has_hot_prefix(img))
		return 0;
	rc = load_regular(img, ino, &r);
	if (!rc && r.flags & CAIRN_IF_CHUNKED) {
		struct hot_chunks h = { img, &l };

		rc = cairn_image_chunked_ranges(img, &r, hot_add_chunk, &h);
	} else if (!rc) {
		rc = cairn_image_map(img, ino, &r, 0, r.size, hot_add, &l);
	}
	if (!rc && l.n)
		rc = hot_emit(l.v, l.n, fn, ctx);
	free(l.v);
	return rc;
}

/* ---- xattrs ---- */

ssize_t cairn_image_getxattr(struct cairn_image *img, cairn_ino_t ino, const char *name,
			     void *buf, size_t size)
{
	size_t nlen = strlen(name);
	char xname[CAIRN_XATTR_NAME_MAX];
	struct cairn_rinode r;
	struct cairn_rxattr x;
	int rc = cairn_image_inode_load(img, ino, &r);

	if (rc)
		return rc;
	if (nlen == 0 || nlen > CAIRN_XATTR_NAME_MAX)
		return nlen ? -ERANGE : -ENODATA;
	for (uint64_t i = 0; i < r.xattr_count; i++) {
		rc = cairn_image_xattr_load(img, r.xattr_ref + i, &x);
		if (rc)
			return rc;
		if (x.name_len != nlen)
			continue;
		rc = blob_read(img, xname, x.name_len, x.name_ref);
		if (rc)
			return rc;
		if (memcmp(xname, name, nlen))
			continue;
		if (size == 0)
			return x.value_len;
		if (size < x.value_len)
			return -ERANGE;
		rc = blob_read(img, buf, x.value_len, x.value_ref);
		return rc ? rc : (ssize_t)x.value_len;
	}
	return -ENODATA;
}

ssize_t cairn_image_listxattr(struct cairn_image *img, cairn_ino_t ino, char *buf, size_t size)
{
	struct cairn_rinode r;
	struct cairn_rxattr x;
	size_t total = 0;
	int rc = cairn_image_inode_load(img, ino, &r);

	if (rc)
		return rc;
	for (uint64_t i = 0; i < r.xattr_count; i++) {
		rc = cairn_image_xattr_load(img, r.xattr_ref + i, &x);
		if (rc)
			return rc;
		if (size) {
			if (total + x.name_len + 1 > size)
				return -ERANGE;
			rc = blob_read(img, buf + total, x.name_len, x.name_ref);
			if (rc)
				return rc;
			if (memchr(buf + total, '\0', x.name_len))
				return cairn_image_corrupt(img, "xattr %llu: name contains NUL",
							   (unsigned long long)(r.xattr_ref + i));
			buf[total + x.name_len] = '\0';
		}
		total += x.name_len + 1u;
	}
	return (ssize_t)total;
}

ssize_t cairn_image_listxattr_alloc(struct cairn_image *img, cairn_ino_t ino, char **names)
{
	ssize_t len = cairn_image_listxattr(img, ino, NULL, 0);

	*names = NULL;
	if (len <= 0)
		return len;
	*names = malloc((size_t)len);
	if (!*names)
		return -ENOMEM;
	len = cairn_image_listxattr(img, ino, *names, (size_t)len); /* the image never changes */
	if (len < 0) {
		free(*names);
		*names = NULL;
	}
	return len;
}
