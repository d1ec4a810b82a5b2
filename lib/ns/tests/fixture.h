/* SPDX-License-Identifier: MIT */
/* Shared by the lib/ns unit tests: a host tree packed into an image, and the
 * temporary directory removed again. Include after <cmocka.h>. */
#ifndef CAIRN_NS_TEST_FIXTURE_H
#define CAIRN_NS_TEST_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cairn/cairn.h>
#include <cairn/mkfs.h>
#include "util/tests/open_image.h"

/* Pack host directory src into an image file at path and open it. */
static inline struct cairn_image *t_pack(const char *src, const char *path)
{
	struct cairn_mkfs_opts mo;
	struct cairn_mkfs *mk;
	struct cairn_image *img;

	cairn_mkfs_opts_init(&mo);
	mo.no_fsync = 1;
	assert_int_equal(cairn_mkfs_new(&mo, &mk), 0);
	assert_int_equal(cairn_mkfs_add_tree(mk, "/", src), 0);
	assert_int_equal(cairn_mkfs_write_path(mk, path), 0);
	cairn_mkfs_free(mk);
	assert_int_equal(t_open_image(path, &img), 0);
	return img;
}

static inline void t_remove_tree(const char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd)) {
		/* left behind in /tmp; harmless */
	}
}

#endif
