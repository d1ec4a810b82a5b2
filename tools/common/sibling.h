/* SPDX-License-Identifier: MIT */
/* Finding a tool installed beside the running one (header-only: mount.cairn
 * links nothing but libc). */
#ifndef CAIRN_TOOLS_SIBLING_H
#define CAIRN_TOOLS_SIBLING_H

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The path of `name` in the directory holding this executable, into out;
 * 0 when it is there and executable, else -1. */
static inline int tool_sibling(const char *name, char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n <= 0)
		return -1;
	self[n] = 0;
	slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = 0;
	if (snprintf(out, len, "%s/%s", self, name) >= (int)len)
		return -1;
	return access(out, X_OK);
}

#endif
