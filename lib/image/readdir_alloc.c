/* SPDX-License-Identifier: MIT */
/* A directory of the image read into one allocation (see cairn/image.h). */
#include "util/util_int.h"
#include <cairn/image.h>

ssize_t cairn_image_readdir_alloc(struct cairn_image *img, cairn_ino_t dir, uint64_t cookie,
				  size_t max, struct cairn_dirent **out)
{
	struct util_dirlist l = { .max = max };

	return util_dirlist_finish(&l, cairn_image_readdir(img, dir, cookie, util_dirlist_cb, &l),
				   out);
}
