/* SPDX-License-Identifier: MIT */
/*
 * Collecting a directory listing into one allocation (cairn_image_readdir_alloc,
 * cairn_ramfs_readdir_alloc): a readdir callback gathers entries and names, and
 * util_dirlist_finish() packs them behind one pointer the caller frees.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/util_int.h"

int util_dirlist_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		    uint64_t next)
{
	struct util_dirlist *l = ctx;

	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		struct cairn_dirent *e = realloc(l->e, cap * sizeof(*e));

		if (!e)
			return (l->err = -ENOMEM), 1;
		l->e = e;
		l->cap = cap;
	}
	if (l->names_len + len + 1 > l->names_cap) {
		size_t cap = (l->names_cap + len + 1) * 2;
		char *p = realloc(l->names, cap);

		if (!p)
			return (l->err = -ENOMEM), 1;
		l->names = p;
		l->names_cap = cap;
	}
	memcpy(l->names + l->names_len, name, len);
	l->names[l->names_len + len] = '\0';
	/* An offset for now: the names buffer may still move. */
	l->e[l->n].name = (const char *)(uintptr_t)l->names_len;
	l->e[l->n].name_len = len;
	l->e[l->n].ino = ino;
	l->e[l->n].dtype = dtype;
	l->e[l->n].next = next;
	l->names_len += len + 1;
	l->n++;
	return l->max && l->n >= l->max;
}

ssize_t util_dirlist_finish(struct util_dirlist *l, int rc, struct cairn_dirent **out)
{
	size_t head = l->n * sizeof(struct cairn_dirent);
	struct cairn_dirent *all = NULL;

	*out = NULL;
	if (!rc)
		rc = l->err;
	if (!rc && l->n) {
		all = malloc(head + l->names_len);
		if (!all)
			rc = -ENOMEM;
	}
	if (all) {
		char *names = (char *)all + head;

		memcpy(names, l->names, l->names_len);
		for (size_t i = 0; i < l->n; i++) {
			all[i] = l->e[i];
			all[i].name = names + (uintptr_t)l->e[i].name;
		}
	}
	free(l->e);
	free(l->names);
	*out = all;
	return rc ? rc : (ssize_t)l->n;
}
