/* SPDX-License-Identifier: MIT */
/*
 * Shared by test_hostile_*.c: builds a small image of every feature with the
 * mkfs library from a temporary tree (removed at once), returns it as bytes,
 * and opens byte buffers through mem -> [fault] -> cache -> image. Hostile
 * variants are made by patching fields and recomputing the checksums
 * (fuzz/fixup.h), so the reader meets the bad structure itself.
 */
#ifndef CAIRN_TEST_HOSTILE_H
#define CAIRN_TEST_HOSTILE_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <cairn/cairn.h>
#include <cairn/mkfs.h>
#include <cairn/testing.h>
#include "../../../fuzz/fixup.h"

/* Deterministic file bytes, so a wrong byte anywhere is seen. */
static inline unsigned char hostile_byte(size_t i, unsigned salt)
{
	return (unsigned char)((i * 131u + salt * 17u + (i >> 12)) & 0xff);
}

static inline void hostile_write(const char *path, size_t len, unsigned salt)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		abort();
	for (size_t i = 0; i < len; i++)
		fputc(hostile_byte(i, salt), f);
	if (fclose(f))
		abort();
}

/* The image of the tree at dir (times 1000), compressed in chunks of
 * 2^chunk_log2 bytes with codec (0: the default), laid out by `order` (NULL or
 * the text of an --order file), plain_meta as in cairn_mkfs_opts (0: compressed
 * metadata, the default), the hot prefix's chunks with hot_codec (-1: codec).
 * Returns a malloc'd image; *len its size. */
static inline uint8_t *hostile_mkfs_with(const char *dir, unsigned codec, int hot_codec,
					 unsigned chunk_log2, const char *order, int plain_meta,
					 size_t *len)
{
	char order_path[] = "/tmp/cairn-hostile-order-XXXXXX";
	struct cairn_mkfs_opts o;
	struct cairn_mkfs *m;
	struct stat st;
	uint8_t *buf;
	int fd;

	cairn_mkfs_opts_init(&o);
	o.set_mtime = 1;
	o.mtime = 1000;
	o.codec = codec;
	if (hot_codec >= 0) {
		o.set_hot_codec = 1;
		o.hot_codec = (unsigned)hot_codec;
		o.hot_level = CAIRN_MKFS_LEVEL_DEFAULT;
	}
	o.chunk_log2 = chunk_log2;
	o.plain_meta = plain_meta;
	if (order) {
		int ofd = mkstemp(order_path);

		if (ofd < 0 || write(ofd, order, strlen(order)) != (ssize_t)strlen(order) ||
		    close(ofd))
			abort();
		o.order_file = order_path;
	}
	if (cairn_mkfs_new(&o, &m) || cairn_mkfs_add_tree(m, "/", dir))
		abort();
	fd = memfd_create("hostile-image", MFD_CLOEXEC);
	if (fd < 0 || cairn_mkfs_write_fd(m, fd, "memfd") || fstat(fd, &st))
		abort();
	cairn_mkfs_free(m);
	if (order)
		unlink(order_path);
	buf = malloc((size_t)st.st_size);
	if (!buf || pread(fd, buf, (size_t)st.st_size, 0) != st.st_size)
		abort();
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* The tests that patch records in place need them where the superblock says:
 * the metadata stored as is. */
static inline uint8_t *hostile_mkfs(const char *dir, unsigned codec, unsigned chunk_log2,
				    size_t *len)
{
	return hostile_mkfs_with(dir, codec, -1, chunk_log2, NULL, 1, len);
}

/* The tree: /small (inline), /big (300 KiB), /dir/mid (9000 B), /dir/sub/deep,
 * /sparse (1 MiB with two data runs), /link -> dir/mid, /hard = /big's twin
 * by link, xattrs on /small when the temp fs takes user xattrs. Returns a
 * malloc'd image; *len its size. With a codec the image is compressed in
 * chunks of 2^chunk_log2 bytes (0: the default), laid out by `order` (NULL or
 * the text of an --order file), its hot prefix with hot_codec (-1: codec);
 * plain_meta as in cairn_mkfs_opts. */
static inline uint8_t *hostile_build_tree(size_t *len, unsigned codec, int hot_codec,
					  unsigned chunk_log2, const char *order, int plain_meta)
{
	char dir[] = "/tmp/cairn-hostile-XXXXXX", p[256];
	uint8_t *buf;
	int fd;

	if (!mkdtemp(dir))
		abort();
#define P(s) (snprintf(p, sizeof(p), "%s/%s", dir, s), p)
	hostile_write(P("small"), 100, 1);
	hostile_write(P("big"), 300 * 1024, 2);
	mkdir(P("dir"), 0755);
	mkdir(P("dir/sub"), 0755);
	hostile_write(P("dir/mid"), 9000, 3);
	hostile_write(P("dir/sub/deep"), 5000, 4);
	fd = open(P("sparse"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, 1 << 20) || pwrite(fd, "data", 4, 200000) != 4 ||
	    pwrite(fd, "tail", 4, 900000) != 4 || close(fd))
		abort();
	if (symlink("dir/mid", P("link")))
		abort();
	{
		char big[256];

		snprintf(big, sizeof(big), "%s/big", dir);
		if (link(big, P("hard")))
			abort();
	}
	(void)setxattr(P("small"), "user.a", "value-a", 7, 0);
	(void)setxattr(P("small"), "user.b", "", 0, 0);

	buf = hostile_mkfs_with(dir, codec, hot_codec, chunk_log2, order, plain_meta, len);
	/* Remove the tree now: the test only needs the bytes. */
	unlink(P("dir/sub/deep"));
	rmdir(P("dir/sub"));
	unlink(P("dir/mid"));
	rmdir(P("dir"));
	unlink(P("small"));
	unlink(P("big"));
	unlink(P("hard"));
	unlink(P("sparse"));
	unlink(P("link"));
	rmdir(dir);
#undef P
	return buf;
}

static inline uint8_t *hostile_build_meta(size_t *len, unsigned codec, unsigned chunk_log2,
					  int plain_meta)
{
	return hostile_build_tree(len, codec, -1, chunk_log2, NULL, plain_meta);
}

/* With a hot prefix laid out by `order`, metadata stored as is. */
static inline uint8_t *hostile_build_order(size_t *len, unsigned codec, unsigned chunk_log2,
					   const char *order)
{
	return hostile_build_tree(len, codec, -1, chunk_log2, order, 1);
}

/* The same with the hot prefix's chunks compressed by hot_codec. */
static inline uint8_t *hostile_build_order_hot(size_t *len, unsigned codec, unsigned hot_codec,
					       unsigned chunk_log2, const char *order)
{
	return hostile_build_tree(len, codec, (int)hot_codec, chunk_log2, order, 1);
}

/* The tests that patch records in place need them where the superblock says:
 * the metadata stored as is. */
static inline uint8_t *hostile_build_ex(size_t *len, unsigned codec, unsigned chunk_log2)
{
	return hostile_build_tree(len, codec, -1, chunk_log2, NULL, 1);
}

static inline uint8_t *hostile_build(size_t *len)
{
	return hostile_build_ex(len, CAIRN_MKFS_NONE, 0);
}

/* mem -> [fault] -> cache -> image over buf (not copied: keep it alive).
 * *fault (may be NULL) gets the fault device, inside the stack. */
static inline int hostile_open(const uint8_t *buf, size_t len, const struct cairn_fault_config *fc,
			       const struct cairn_cache_config *cc, struct cairn_bdev **fault,
			       struct cairn_image **out)
{
	struct cairn_bdev *dev = NULL, *f = NULL;
	struct cairn_cache *cache = NULL;
	int rc = cairn_bdev_mem_new(buf, len, 0, &dev);

	if (rc)
		return rc;
	if (fc) {
		rc = cairn_bdev_fault_new(dev, fc, &f);
		if (rc) {
			cairn_bdev_close(dev);
			return rc;
		}
		dev = f;
	}
	if (fault)
		*fault = f;
	rc = cairn_cache_new(dev, cc, &cache);
	if (rc) {
		cairn_bdev_close(dev);
		return rc;
	}
	rc = cairn_image_open(cache, NULL, 0, out);
	if (rc)
		cairn_cache_free(cache);
	return rc;
}

static inline struct cairn_disk_super *hostile_super(uint8_t *img)
{
	return (struct cairn_disk_super *)img;
}

static inline struct cairn_disk_inode *hostile_inode(uint8_t *img, uint64_t ino)
{
	return (struct cairn_disk_inode *)(img + cairn_le64(hostile_super(img)->inode_off) +
					   ino * CAIRN_INODE_SIZE);
}

#endif
