/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>
#include "util/util_int.h"

int util_xattr_ns(const char *name, size_t len)
{
	static const char *const prefixes[] = { "user.", "trusted.", "security.", "system." };

	for (int i = 0; i < (int)(sizeof(prefixes) / sizeof(prefixes[0])); i++) {
		size_t pl = strlen(prefixes[i]);

		if (len < pl || strncmp(name, prefixes[i], pl))
			continue;
		if (len > pl)
			return i;
		/* A bare prefix: system.* has only whole names (the ACLs). */
		return i == UTIL_XATTR_SYSTEM ? -EOPNOTSUPP : -EINVAL;
	}
	return -EOPNOTSUPP;
}
