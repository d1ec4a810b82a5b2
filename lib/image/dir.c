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
	rc = cairn_image_blob_read(img, e->name, e->name_len, e->name_ref);
	if (rc)
		return rc;
	e->name[e->name_len] = '\0';
	if (memchr(e->name, '/', e->name_len) || memchr(e->name, '\0', e->name_len))
		return cairn_image_corrupt(img, "dirent %llu: name contains '/' or NUL", n);
	if (!strcmp(e->name, ".") || !strcmp(e->name, ".."))
		return cairn_image_corrupt(img, "dirent %llu: name is '.' or '..'", n);
	return 0;
}

int cairn_image_readdir(struct cairn_image *img, cairn_ino_t dir, uint64_t cookie,
			cairn_dirent_cb cb, void *ctx)
{
	struct cairn_rinode r;
	struct cairn_rdirent e;
	int rc = cairn_image_dir_load(img, dir, &r);

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
