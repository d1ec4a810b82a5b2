/* SPDX-License-Identifier: MIT */
/* A RAM directory read into one allocation (see cairn/ramfs.h). */
#include "util/util_int.h"
#include <cairn/ramfs.h>

ssize_t cairn_ramfs_readdir_alloc(struct cairn_ramfs *fs, cairn_ino_t dir, uint64_t cookie,
				  size_t max, struct cairn_dirent **out)
{
	struct util_dirlist l = { .max = max };

	return util_dirlist_finish(&l, cairn_ramfs_readdir(fs, dir, cookie, util_dirlist_cb, &l),
				   out);
}
