/* SPDX-License-Identifier: MIT */
/* Joining host and image paths: the one copy every layer and tool uses. */
#include <stdlib.h>
#include <string.h>
#include "util/util_int.h"

char *util_path_join(const char *dir, const char *name, size_t name_len)
{
	size_t dl = strlen(dir);
	int slash = dl && dir[dl - 1] != '/';
	char *p = malloc(dl + (size_t)slash + name_len + 1);

	if (!p)
		return NULL;
	memcpy(p, dir, dl);
	if (slash)
		p[dl] = '/';
	memcpy(p + dl + (size_t)slash, name, name_len);
	p[dl + (size_t)slash + name_len] = '\0';
	return p;
}

char *util_path_resolve(const char *base, const char *name)
{
	if (name[0] == '/' || !base[0])
		return strdup(name);
	return util_path_join(base, name, strlen(name));
}

char *util_path_resolve_in(const char *dir, const char *name)
{
	return util_path_resolve(dir[0] ? dir : "/", name);
}
