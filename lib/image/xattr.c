/* SPDX-License-Identifier: MIT */
/*
 * Extended attributes of the image reader: decoding and checking xattr
 * records, getxattr and listxattr.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "image_int.h"

int cairn_image_xattr_load(struct cairn_image *img, uint64_t idx, struct cairn_rxattr *x)
{
	struct cairn_disk_xattr d;
	unsigned long long n = idx;
	int rc;

	rc = cairn_image_rec_read(img, "xattr", img->xattr_off, img->xattr_count, idx, &d,
				  CAIRN_XATTR_SIZE);
	if (rc)
		return rc;
	x->name_ref = cairn_le64(d.name_ref);
	x->value_ref = cairn_le64(d.value_ref);
	x->value_len = cairn_le32(d.value_len);
	x->name_len = d.name_len;
	if (x->name_len == 0 || !cairn_image_blob_ok(img, x->name_ref, x->name_len))
		return cairn_image_corrupt(img, "xattr %llu: name out of bounds", n);
	if (x->value_len > CAIRN_XATTR_VALUE_MAX || !cairn_image_blob_ok(img, x->value_ref, x->value_len))
		return cairn_image_corrupt(img, "xattr %llu: value out of bounds", n);
	return 0;
}

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
		rc = cairn_image_blob_read(img, xname, x.name_len, x.name_ref);
		if (rc)
			return rc;
		if (memcmp(xname, name, nlen))
			continue;
		if (size == 0)
			return x.value_len;
		if (size < x.value_len)
			return -ERANGE;
		rc = cairn_image_blob_read(img, buf, x.value_len, x.value_ref);
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
			rc = cairn_image_blob_read(img, buf + total, x.name_len, x.name_ref);
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
