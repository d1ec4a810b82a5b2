/* SPDX-License-Identifier: MIT */
/* The root digest of an image with digests (include/cairn/image.h). */
#include <errno.h>
#include <cairn/verify.h>
#include "image_int.h"
#include "util/util_int.h"

int cairn_image_root_digest(struct cairn_image *img, uint8_t out[CAIRN_DIGEST_LEN])
{
	uint8_t block0[CAIRN_BLOCK_SIZE];
	int rc;

	if (!(img->compat & CAIRN_COMPAT_VERITY))
		return -ENODATA;
	if (!cairn_bdev_verify_root(cairn_cache_bdev(img->cache), out))
		return 0;
	rc = cairn_image_dev_read(img, block0, sizeof(block0), 0, NULL);
	if (!rc)
		cairn_sha256(block0, sizeof(block0), out);
	return rc;
}
