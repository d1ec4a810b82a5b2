/* SPDX-License-Identifier: MIT */
/* Private to lib/extract. */
#ifndef CAIRN_EXTRACT_INT_H
#define CAIRN_EXTRACT_INT_H

#include <stddef.h>
#include <cairn/extract.h>

/* links.c: 0 when following the symlink text target (tlen bytes) from the
 * directory rel of the image ("" = base, "a/b", relative to the extracted
 * directory base) stays inside base; -EXDEV when it can lead outside; -ELOOP
 * past 40 links; -errno. */
int ex_link_escapes(struct cairn_image *img, cairn_ino_t base, const char *rel,
		    const char *target, size_t tlen);

#endif
