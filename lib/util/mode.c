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
