/* SPDX-License-Identifier: MIT */
/*
 * Compressed metadata (CAIRN_INCOMPAT_META_Z, docs/FORMAT.md "Compressed
 * metadata"): the default image reads back exactly as the same tree with its
 * metadata stored as is (every stat, entry, byte and xattr), alone and with
 * compressed data; a reader that knows only the 1.1 incompat bits refuses it;
 * many empty files cost a few bytes each; and hostile records, a hostile index
 * and damaged blocks give -CAIRN_ECORRUPT at open or at first use, never a
 * crash, a hang or a large allocation.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include "hostile.h"

struct built {
	uint8_t *buf;
	size_t len;
};

static struct built build(unsigned codec, int plain)
{
	struct built b;

	b.buf = hostile_build_meta(&b.len, codec, 0, plain);
	return b;
}

static struct cairn_image *open_buf(const struct built *b)
{
	struct cairn_image *img = NULL;

	assert_int_equal(hostile_open(b->buf, b->len, NULL, NULL, NULL, &img), 0);
	return img;
}

static struct cairn_disk_metaz_super *record(uint8_t *buf)
{
	return (struct cairn_disk_metaz_super *)(buf + CAIRN_META_Z_SUPER_OFF);
}

static struct cairn_disk_chunk *index_rec(uint8_t *buf, uint64_t i)
{
	return (struct cairn_disk_chunk *)(buf + cairn_le64(record(buf)->index_off) +
					   i * CAIRN_CHUNK_SIZE);
}

/* Everything a reader can see of inode ino and below, in both images. */
static void same_tree(struct cairn_image *a, struct cairn_image *b, cairn_ino_t ino)
{
	static char da[400 * 1024], db[400 * 1024];
	struct cairn_stat sa, sb;
	char xa[512], xb[512];
	ssize_t na, nb;

	assert_int_equal(cairn_image_stat(a, ino, &sa), 0);
	assert_int_equal(cairn_image_stat(b, ino, &sb), 0);
	assert_memory_equal(&sa, &sb, sizeof(sa));
	na = cairn_image_listxattr(a, ino, xa, sizeof(xa));
	nb = cairn_image_listxattr(b, ino, xb, sizeof(xb));
	assert_int_equal(na, nb);
	assert_memory_equal(xa, xb, (size_t)(na > 0 ? na : 0));
	if (S_ISREG(sa.mode) || S_ISLNK(sa.mode)) {
		na = S_ISREG(sa.mode) ? cairn_image_read(a, ino, da, sizeof(da), 0)
				      : cairn_image_readlink(a, ino, da, sizeof(da));
		nb = S_ISREG(sa.mode) ? cairn_image_read(b, ino, db, sizeof(db), 0)
				      : cairn_image_readlink(b, ino, db, sizeof(db));
		assert_true(na >= 0);
		assert_int_equal(na, nb);
		assert_memory_equal(da, db, (size_t)na);
	}
	if (!S_ISDIR(sa.mode))
		return;
	{
		struct cairn_dirent *ea = NULL, *eb = NULL;
		ssize_t ca = cairn_image_readdir_alloc(a, ino, 0, 0, &ea);
		ssize_t cb = cairn_image_readdir_alloc(b, ino, 0, 0, &eb);

		assert_true(ca >= 0);
		assert_int_equal(ca, cb);
		for (ssize_t i = 0; i < ca; i++) {
			assert_string_equal(ea[i].name, eb[i].name);
			assert_int_equal(ea[i].ino, eb[i].ino);
			assert_int_equal(ea[i].dtype, eb[i].dtype);
			if (strcmp(ea[i].name, ".") && strcmp(ea[i].name, ".."))
				same_tree(a, b, ea[i].ino);
		}
		free(ea);
		free(eb);
	}
}

static void roundtrip(unsigned codec)
{
	struct built z = build(codec, 0), p = build(codec, 1);
	struct cairn_image *iz = open_buf(&z), *ip = open_buf(&p);
	struct cairn_image_info in, pn;

	cairn_image_get_info(iz, &in);
	cairn_image_get_info(ip, &pn);
	assert_true(in.incompat & CAIRN_INCOMPAT_META_Z);
	assert_false(pn.incompat & CAIRN_INCOMPAT_META_Z);
	assert_int_equal(in.version_minor, CAIRN_FORMAT_VERSION_MINOR_META_Z);
	assert_int_equal(in.meta_block_size, 1u << CAIRN_META_Z_LOG2_DEFAULT);
	assert_true(in.meta_stored_len > 0 && in.meta_stored_len < in.meta_len);
	assert_int_equal(in.meta_len, pn.meta_len);
	assert_true(in.image_size < pn.image_size);
	same_tree(iz, ip, CAIRN_ROOT_INO);
	assert_int_equal(cairn_image_fsck(iz, CAIRN_FSCK_DATA, NULL, NULL), 0);
	cairn_image_close(iz);
	cairn_image_close(ip);
	free(z.buf);
	free(p.buf);
}

static void test_roundtrip(void **state)
{
	(void)state;
	roundtrip(CAIRN_MKFS_NONE);
	roundtrip(CAIRN_MKFS_ZSTD);
}

/* A reader that knows only the 1.1 incompat bits (EXTENTS, CHUNKED) refuses
 * the image, and without the bit the image is corrupt, never read as if its
 * logical metadata were stored where meta_off says. */
static void test_incompat_bit(void **state)
{
	struct built z = build(CAIRN_MKFS_NONE, 0);
	uint32_t zi = cairn_le32(hostile_super(z.buf)->incompat);
	struct cairn_image *img = NULL;

	(void)state;
	assert_true(zi & ~(CAIRN_INCOMPAT_EXTENTS | CAIRN_INCOMPAT_CHUNKED));
	hostile_super(z.buf)->incompat = cairn_le32(zi & ~CAIRN_INCOMPAT_META_Z);
	cairn_fixup_checksums(z.buf, z.len);
	if (hostile_open(z.buf, z.len, NULL, NULL, NULL, &img) == 0) {
		cairn_ino_t ino;

		assert_int_equal(cairn_image_resolve(img, "/dir/mid", 1, &ino), -CAIRN_ECORRUPT);
		cairn_image_close(img);
	}
	free(z.buf);
}

/* 20000 empty files in 4 directories: the metadata (144 bytes a file as is)
 * is stored in under 16 bytes a file, and the digest table is one block (it
 * was sized for 4 KiB of data per empty file: 20 KiB). */
static void test_compact(void **state)
{
	char dir[] = "/tmp/cairn-metaz-XXXXXX", p[256];
	struct cairn_mkfs_opts o;
	struct cairn_mkfs_stats st;
	struct cairn_mkfs *m;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (int d = 0; d < 4; d++) {
		snprintf(p, sizeof(p), "%s/d%d", dir, d);
		assert_int_equal(mkdir(p, 0755), 0);
		for (int f = 0; f < 5000; f++) {
			snprintf(p, sizeof(p), "%s/d%d/f%04d", dir, d, f);
			fd = open(p, O_CREAT | O_WRONLY, 0644);
			assert_true(fd >= 0);
			close(fd);
		}
	}
	cairn_mkfs_opts_init(&o);
	assert_int_equal(cairn_mkfs_new(&o, &m), 0);
	assert_int_equal(cairn_mkfs_add_tree(m, "/", dir), 0);
	fd = memfd_create("metaz", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(cairn_mkfs_write_fd(m, fd, "memfd"), 0);
	cairn_mkfs_get_stats(m, &st);
	cairn_mkfs_free(m);
	close(fd);
	print_message("%llu inodes: metadata %llu bytes, stored in %llu\n",
		      (unsigned long long)st.inodes, (unsigned long long)st.meta_len,
		      (unsigned long long)st.meta_stored);
	assert_true(st.meta_len >= st.inodes * 144);
	assert_true(st.meta_stored < st.inodes * 16);
	assert_int_equal(st.table_len, CAIRN_BLOCK_SIZE);
	for (int d = 0; d < 4; d++) {
		for (int f = 0; f < 5000; f++) {
			snprintf(p, sizeof(p), "%s/d%d/f%04d", dir, d, f);
			unlink(p);
		}
		snprintf(p, sizeof(p), "%s/d%d", dir, d);
		rmdir(p);
	}
	rmdir(dir);
}

/* Opening the patched image fails as corrupt. */
static void expect_open_fails(struct built *b)
{
	struct cairn_image *img = NULL;

	cairn_fixup_checksums(b->buf, b->len);
	assert_int_equal(hostile_open(b->buf, b->len, NULL, NULL, NULL, &img), -CAIRN_ECORRUPT);
}

/* The image opens; every read of its metadata is corrupt; fsck counts a
 * problem and does not crash. */
static void expect_use_fails(struct built *b, int fix)
{
	struct cairn_image *img;
	struct cairn_stat st;
	cairn_ino_t ino;

	if (fix)
		cairn_fixup_checksums(b->buf, b->len);
	img = open_buf(b);
	assert_int_equal(cairn_image_resolve(img, "/dir/sub/deep", 1, &ino), -CAIRN_ECORRUPT);
	assert_int_equal(cairn_image_stat(img, CAIRN_ROOT_INO, &st), -CAIRN_ECORRUPT);
	assert_non_null(cairn_image_corruption(img));
	cairn_image_close(img);
	img = open_buf(b);
	assert_true(cairn_image_fsck(img, CAIRN_FSCK_DATA, NULL, NULL) > 0);
	cairn_image_close(img);
}

enum { F_LOG2_LOW, F_LOG2_HIGH, F_AREA_PAST, F_AREA_ALIGN, F_COUNT, F_INDEX_PAST, F_NFIELD };

static void test_hostile_record(void **state)
{
	(void)state;
	for (int f = 0; f < F_NFIELD; f++) {
		struct built b = build(CAIRN_MKFS_NONE, 0);
		struct cairn_disk_metaz_super *r = record(b.buf);

		switch (f) {
		case F_LOG2_LOW: r->block_log2 = cairn_le32(CAIRN_META_Z_LOG2_MIN - 1); break;
		case F_LOG2_HIGH: r->block_log2 = cairn_le32(63); break;
		case F_AREA_PAST: r->area_len = cairn_le64(UINT64_MAX - 4095); break;
		case F_AREA_ALIGN: r->area_off = cairn_le64(cairn_le64(r->area_off) + 1); break;
		case F_COUNT: r->block_count = cairn_le64(cairn_le64(r->block_count) + 1); break;
		case F_INDEX_PAST: r->index_off = cairn_le64(b.len); break;
		}
		expect_open_fails(&b);
		free(b.buf);
	}
	{ /* a record hash that does not match */
		struct built b = build(CAIRN_MKFS_NONE, 0);
		struct cairn_image *img = NULL;

		record(b.buf)->level ^= 1;
		assert_int_equal(hostile_open(b.buf, b.len, NULL, NULL, NULL, &img),
				 -CAIRN_ECORRUPT);
		free(b.buf);
	}
}

enum { I_CODEC, I_ULEN, I_OUTSIDE, I_HUGE, I_ZERO_STORED, I_RAW_LEN, I_GARBAGE, I_ZERO_BLOCK,
       I_HASH, I_NCASE };

static void test_hostile_index(void **state)
{
	(void)state;
	for (int k = 0; k < I_NCASE; k++) {
		struct built b = build(CAIRN_MKFS_NONE, 0);
		struct cairn_disk_chunk *c = index_rec(b.buf, 0);
		uint32_t info = cairn_le32(c->info);
		int fix = 1;

		switch (k) {
		case I_CODEC: c->info = cairn_le32(CAIRN_CHUNK_ULEN(info) | 9u << 24); break;
		case I_ULEN: c->info = cairn_le32((CAIRN_CHUNK_ULEN(info) - 4096) |
						  (info & 0xff000000u)); break;
		case I_OUTSIDE: c->disk_off = cairn_le64(0); break;
		case I_HUGE: c->stored_len = cairn_le32(UINT32_MAX); break;
		case I_ZERO_STORED: c->info = cairn_le32(CAIRN_CHUNK_ULEN(info) |
							 CAIRN_CODEC_ZERO << 24); break;
		case I_RAW_LEN: c->info = cairn_le32(CAIRN_CHUNK_ULEN(info) |
						     CAIRN_CODEC_RAW << 24); break;
		case I_GARBAGE: /* bytes that are no zstd frame */
			memset(b.buf + cairn_le64(c->disk_off), 0x5a, cairn_le32(c->stored_len));
			break;
		case I_ZERO_BLOCK: /* decodes, to bytes the checksums refuse */
			c->disk_off = 0;
			c->stored_len = 0;
			c->info = cairn_le32(CAIRN_CHUNK_ULEN(info) | CAIRN_CODEC_ZERO << 24);
			break;
		case I_HASH: /* the index changed, its hash not */
			c->stored_len = cairn_le32(cairn_le32(c->stored_len) - 1);
			fix = 0;
			break;
		}
		expect_use_fails(&b, fix);
		free(b.buf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_incompat_bit),
		cmocka_unit_test(test_compact),
		cmocka_unit_test(test_hostile_record),
		cmocka_unit_test(test_hostile_index),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
