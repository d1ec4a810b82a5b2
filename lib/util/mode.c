/* SPDX-License-Identifier: MIT */
#include <sys/stat.h>
#include "util/util_int.h"

const char *cairn_mode_kind(unsigned mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:  return "a regular file";
	case S_IFDIR:  return "a directory";
	case S_IFLNK:  return "a symlink";
	case S_IFCHR:  return "a character device";
	case S_IFBLK:  return "a block device";
	case S_IFIFO:  return "a FIFO";
	case S_IFSOCK: return "a socket";
	default:       return "of an unknown file type";
	}
}

/* What path is when it is neither a regular file nor a block device (the file
 * device refuses it with -EINVAL), for an error that says which; NULL when it
 * is one of those or cannot be stat'ed. */
const char *util_unreadable_kind(const char *path)
{
	struct stat st;

	if (stat(path, &st) || S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
		return NULL;
	return cairn_mode_kind(st.st_mode);
}
