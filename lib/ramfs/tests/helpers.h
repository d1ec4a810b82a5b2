/* SPDX-License-Identifier: MIT */
/* Shared helpers for the RAM fs unit tests (included by each test program). */
#ifndef CAIRN_RAMFS_TEST_HELPERS_H
#define CAIRN_RAMFS_TEST_HELPERS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <cmocka.h>
#include <cairn/ramfs.h>

static inline struct cairn_ramfs *t_new(uint64_t size_limit, uint64_t inode_limit)
{
	struct cairn_ramfs_config cfg = { .size_limit = size_limit, .inode_limit = inode_limit };
	struct cairn_ramfs *fs = NULL;

	assert_int_equal(cairn_ramfs_new(&cfg, &fs), 0);
	return fs;
}

/* Create a regular file; returns its ino (lookup reference kept: freed with fs). */
static inline cairn_ino_t t_file(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name,
				 uint32_t mode)
{
	struct cairn_stat st;

	assert_int_equal(cairn_ramfs_mknod(fs, dir, name, strlen(name), S_IFREG | mode, 0, NULL,
					   &st), 0);
	return st.ino;
}

static inline cairn_ino_t t_dir(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name)
{
	struct cairn_stat st;

	assert_int_equal(cairn_ramfs_mkdir(fs, dir, name, strlen(name), 0755, NULL, &st), 0);
	return st.ino;
}

/* Lookup, returning -errno or the ino (reference kept). */
static inline int64_t t_lookup(struct cairn_ramfs *fs, cairn_ino_t dir, const char *name)
{
	struct cairn_stat st;
	int err = cairn_ramfs_lookup(fs, dir, name, strlen(name), &st);

	return err ? err : (int64_t)st.ino;
}

static inline struct cairn_stat t_stat(struct cairn_ramfs *fs, cairn_ino_t ino)
{
	struct cairn_stat st;

	assert_int_equal(cairn_ramfs_getattr(fs, ino, &st), 0);
	return st;
}

static inline void t_write(struct cairn_ramfs *fs, cairn_ino_t ino, const void *buf, size_t len,
			   uint64_t off)
{
	assert_int_equal(cairn_ramfs_write(fs, ino, buf, len, off, 0, NULL), (ssize_t)len);
}

static inline int t_time_cmp(struct cairn_time a, struct cairn_time b)
{
	if (a.sec != b.sec)
		return a.sec < b.sec ? -1 : 1;
	return a.nsec == b.nsec ? 0 : a.nsec < b.nsec ? -1 : 1;
}

/* Sleep a little so that times taken before and after differ. */
static inline void t_tick(void)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

#endif
