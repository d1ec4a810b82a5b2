/* SPDX-License-Identifier: MIT */
/*
 * Directories of the image reader: decoding and checking directory entries,
 * and readdir over a directory's sorted run of them.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cairn/error.h>
#include "image_int.h"

int cairn_image_dir_load(struct cairn_image *img, cairn_ino_t dir, struct cairn_rinode *r)
{
	int rc = cairn_image_inode_load(img, dir, r);

	if (rc)
		return rc;
	return S_ISDIR(r->mode) ? 0 : -ENOTDIR;
}

static int dtype_ok(unsigned t)
{
	return t == DT_REG || t == DT_DIR || t == DT_LNK || t == DT_CHR || t == DT_BLK ||
	       t == DT_FIFO || t == DT_SOCK;
}

/* Decode and check a dirent record, all but its name (dirent_name). */
static int dirent_decode(struct cairn_image *img, uint64_t idx, const struct cairn_disk_dirent *d,
			 struct cairn_rdirent *e)
{
	unsigned long long n = idx;

	e->name_ref = cairn_le64(d->name_ref);
	e->ino = cairn_le32(d->ino);
	e->name_len = d->name_len;
	e->type = d->type;
	if (e->name_len == 0)
		return cairn_image_corrupt(img, "dirent %llu: empty name", n);
	if (e->ino == 0 || e->ino >= img->inode_count)
		return cairn_image_corrupt(img, "dirent %llu: inode %u out of range", n, e->ino);
	if (!dtype_ok(e->type))
		return cairn_image_corrupt(img, "dirent %llu: bad type %u", n, e->type);
	return 0;
}

/* Take a decoded dirent's name from src (read by the caller) and check it. */
static int dirent_name(struct cairn_image *img, uint64_t idx, const char *src,
		       struct cairn_rdirent *e)
{
	unsigned long long n = idx;

	/* One pass over a short name: cheaper than two memchr calls per entry. */
	for (size_t i = 0; i < e->name_len; i++) {
		if (src[i] == '/' || src[i] == '\0')
			return cairn_image_corrupt(img, "dirent %llu: name contains '/' or NUL", n);
		e->name[i] = src[i];
	}
	e->name[e->name_len] = '\0';
	if (src[0] == '.' && (e->name_len == 1 || (e->name_len == 2 && src[1] == '.')))
		return cairn_image_corrupt(img, "dirent %llu: name is '.' or '..'", n);
	return 0;
}

int cairn_image_dirent_load(struct cairn_image *img, uint64_t idx, struct cairn_rdirent *e)
{
	struct cairn_disk_dirent d;
	char name[CAIRN_NAME_MAX];
	int rc;

	rc = cairn_image_rec_read(img, "dirent", img->dirent_off, img->dirent_count, idx, &d,
				  CAIRN_DIRENT_SIZE);
	if (!rc)
		rc = dirent_decode(img, idx, &d, e);
	if (!rc)
		rc = cairn_image_blob_read(img, name, e->name_len, e->name_ref);
	return rc ? rc : dirent_name(img, idx, name, e);
}

/*
 * readdir reads a directory's records a batch at a time, and the batch's names
 * in one piece when they lie close together in the blob region (mkfs writes a
 * directory's names side by side, or shares them): a million-entry walk then
 * costs a few thousand metadata reads, not two per entry. Names further apart
 * are read one by one, as is every name when reading the piece fails, so an
 * error shows at the entry it belongs to.
 */
#define DIR_BATCH 256          /* records per read: 4 KiB */
#define NAME_SPAN_MAX 16384u   /* the most blob bytes read for one batch's names */

struct dir_batch {
	struct cairn_disk_dirent rec[DIR_BATCH];
	char names[NAME_SPAN_MAX];
	uint64_t names_ref, names_len; /* the blob span in names[], if any */
};

/* Read the names of records [0, n) into b->names when they fit one span. */
static void batch_names(struct cairn_image *img, struct dir_batch *b, size_t n)
{
	uint64_t lo = UINT64_MAX, hi = 0;

	b->names_len = 0;
	for (size_t j = 0; j < n; j++) {
		uint64_t ref = cairn_le64(b->rec[j].name_ref), len = b->rec[j].name_len;

		if (!cairn_image_blob_ok(img, ref, len))
			continue; /* reported when the entry is reached */
		lo = ref < lo ? ref : lo;
		hi = ref + len > hi ? ref + len : hi;
	}
	if (hi <= lo || hi - lo > NAME_SPAN_MAX)
		return;
	if (cairn_image_blob_read(img, b->names, (size_t)(hi - lo), lo) == 0) {
		b->names_ref = lo;
		b->names_len = hi - lo;
	}
}

/* Decode record j of the batch (dirent idx) with its name. */
static int batch_entry(struct cairn_image *img, const struct dir_batch *b, size_t j, uint64_t idx,
		       struct cairn_rdirent *e)
{
	char name[CAIRN_NAME_MAX];
	const char *src = name;
	int rc = dirent_decode(img, idx, &b->rec[j], e);

	if (rc)
		return rc;
	if (b->names_len && e->name_ref >= b->names_ref &&
	    e->name_ref + e->name_len <= b->names_ref + b->names_len)
		src = b->names + (e->name_ref - b->names_ref);
	else if ((rc = cairn_image_blob_read(img, name, e->name_len, e->name_ref)))
		return rc;
	return dirent_name(img, idx, src, e);
}

int cairn_image_readdir(struct cairn_image *img, cairn_ino_t dir, uint64_t cookie,
			cairn_dirent_cb cb, void *ctx)
{
	struct cairn_rinode r;
	struct cairn_rdirent e;
	struct dir_batch *b;
	int rc = cairn_image_dir_load(img, dir, &r);

	if (rc)
		return rc;
	if (cookie < 1 && cb(ctx, ".", 1, dir, DT_DIR, 1))
		return 0;
	if (cookie < 2 && cb(ctx, "..", 2, r.parent, DT_DIR, 2))
		return 0;
	b = malloc(sizeof(*b)); /* 20 KiB: too much for a FUSE thread's stack */
	if (!b)
		return -ENOMEM;
	/* dir_load checked data_ref + data_count against the dirent table. */
	for (uint64_t i = cookie > 2 ? cookie - 2 : 0; i < r.data_count && !rc;) {
		size_t n = r.data_count - i < DIR_BATCH ? (size_t)(r.data_count - i) : DIR_BATCH;
		uint64_t idx = r.data_ref + i;

		rc = cairn_image_meta_read(img, b->rec, n * CAIRN_DIRENT_SIZE,
					   img->dirent_off + idx * CAIRN_DIRENT_SIZE);
		if (rc)
			break;
		batch_names(img, b, n);
		for (size_t j = 0; j < n; j++, i++) {
			rc = batch_entry(img, b, j, idx + j, &e);
			if (rc)
				break;
			if (cb(ctx, e.name, e.name_len, e.ino, e.type, 3 + i)) {
				free(b);
				return 0;
			}
		}
	}
	free(b);
	return rc;
}
