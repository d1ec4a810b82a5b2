/* SPDX-License-Identifier: MIT */
/*
 * The reader over a small hand-made image (built here, independent of mkfs), then
 * over deliberately broken variants of it: each structure error must come back
 * as -CAIRN_ECORRUPT (or the errno the API documents), never a crash, and fsck
 * must count it. Checksums are recomputed after each edit so the structure
 * checks, not only the checksums, are what is tested.
 */
#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <xxhash.h>
#include <cairn/cairn.h>
#include "../../../fuzz/fixup.h"

/* Layout of the test image. */
#define META_OFF   4096u
#define INODES     8u            /* 0 unused, 1..7 */
#define INODE_OFF  META_OFF
#define DIRENT_OFF (INODE_OFF + INODES * CAIRN_INODE_SIZE)
#define NDIRENTS   6u
#define XATTR_OFF  (DIRENT_OFF + NDIRENTS * CAIRN_DIRENT_SIZE)
#define NXATTRS    2u
#define EXTENT_OFF (XATTR_OFF + NXATTRS * CAIRN_XATTR_SIZE)
#define NEXTENTS   2u
#define BLOB_OFF   (EXTENT_OFF + NEXTENTS * CAIRN_EXTENT_SIZE)
#define META_LEN   8192u         /* two blocks: the second is padding, checksummed too */
#define CSUM_OFF   (META_OFF + META_LEN)
#define DATA_OFF   (CSUM_OFF + 4096u)
#define DATA_LEN   (4u * 4096u)
#define IMG_SIZE   (DATA_OFF + DATA_LEN)
#define A_SIZE     5000u
#define SP_SIZE    100000u

struct img {
	unsigned char b[IMG_SIZE];
	uint64_t blob_len;
};

static uint64_t blob_add(struct img *m, const void *p, size_t n)
{
	uint64_t ref = m->blob_len;

	memcpy(m->b + BLOB_OFF + ref, p, n);
	m->blob_len += n;
	return ref;
}

static struct cairn_disk_inode *ino_at(struct img *m, unsigned i)
{
	return (struct cairn_disk_inode *)(m->b + INODE_OFF + i * CAIRN_INODE_SIZE);
}

static struct cairn_disk_dirent *dirent_at(struct img *m, unsigned i)
{
	return (struct cairn_disk_dirent *)(m->b + DIRENT_OFF + i * CAIRN_DIRENT_SIZE);
}

static struct cairn_disk_super *super_of(struct img *m)
{
	return (struct cairn_disk_super *)m->b;
}

static void set_inode(struct img *m, unsigned i, uint32_t mode, uint32_t nlink, uint64_t size,
		      uint64_t ref, uint64_t count)
{
	struct cairn_disk_inode *d = ino_at(m, i);

	d->mode = mode;
	d->nlink = nlink;
	d->uid = 1000 + i;
	d->gid = 2000 + i;
	d->size = size;
	d->data_ref = ref;
	d->data_count = count;
	d->mtime_sec = 1700000000 + i;
	d->mtime_nsec = 123456789;
	d->atime_sec = 1600000000;
	d->ctime_sec = 1500000000;
	d->parent = 0;
}

static void add_dirent(struct img *m, unsigned idx, const char *name, uint32_t ino, uint8_t type)
{
	struct cairn_disk_dirent *d = dirent_at(m, idx);

	d->name_ref = blob_add(m, name, strlen(name));
	d->name_len = (uint8_t)strlen(name);
	d->ino = ino;
	d->type = type;
}

static unsigned char a_data(size_t i)
{
	return (unsigned char)(i * 7 + 3);
}

/* Recomputes every checksum after an edit (the fuzz targets' fixup). */
static void seal(struct img *m)
{
	cairn_fixup_checksums(m->b, IMG_SIZE);
}

static uint64_t sparse_hash(void)
{
	unsigned char *p = calloc(1, SP_SIZE);
	uint64_t h;

	memset(p + 4096, 0xaa, 4096);
	memset(p + 65536, 0xbb, 4096);
	h = XXH3_64bits(p, SP_SIZE);
	free(p);
	return h;
}

/*
 * /            ino 1   dir  (a, b, d, loop, sp)
 * /a           ino 2   5000 bytes contiguous, xattrs user.k=v1 user.z=v2
 * /b           ino 3   inline "hello"
 * /d           ino 4   dir  (s)
 * /d/s         ino 5   symlink -> ../a
 * /sp          ino 6   sparse 100000 bytes, data at 4096 and 65536
 * /loop        ino 7   symlink -> loop
 */
static struct img *build(void)
{
	struct img *m = calloc(1, sizeof(*m));
	struct cairn_disk_super *s;
	struct cairn_disk_xattr *x;
	struct cairn_disk_extent *e;

	assert_non_null(m);
	s = super_of(m);
	memcpy(s->magic, CAIRN_MAGIC_BYTES, 8);
	s->version_major = CAIRN_FORMAT_VERSION_MAJOR;
	s->block_size = CAIRN_BLOCK_SIZE;
	s->inode_size = CAIRN_INODE_SIZE;
	s->compat = CAIRN_COMPAT_FILE_HASH | CAIRN_COMPAT_HOT_PREFIX;
	s->incompat = CAIRN_INCOMPAT_EXTENTS;
	s->image_size = IMG_SIZE;
	s->inode_count = INODES;
	s->root_ino = CAIRN_ROOT_INO;
	s->meta_off = META_OFF;
	s->meta_len = META_LEN;
	s->inode_off = INODE_OFF;
	s->dirent_off = DIRENT_OFF;
	s->dirent_count = NDIRENTS;
	s->xattr_off = XATTR_OFF;
	s->xattr_count = NXATTRS;
	s->extent_off = EXTENT_OFF;
	s->extent_count = NEXTENTS;
	s->blob_off = BLOB_OFF;
	s->csum_off = CSUM_OFF;
	s->data_off = DATA_OFF;
	s->data_len = DATA_LEN;
	s->hot_off = DATA_OFF;
	s->hot_len = 8192;
	s->file_count = 3;
	s->data_bytes = A_SIZE + 5 + SP_SIZE;

	set_inode(m, 1, S_IFDIR | 0755, 3, 0, 0, 5);
	ino_at(m, 1)->parent = 1;
	add_dirent(m, 0, "a", 2, DT_REG);
	add_dirent(m, 1, "b", 3, DT_REG);
	add_dirent(m, 2, "d", 4, DT_DIR);
	add_dirent(m, 3, "loop", 7, DT_LNK);
	add_dirent(m, 4, "sp", 6, DT_REG);
	set_inode(m, 4, S_IFDIR | 0700, 2, 0, 5, 1);
	ino_at(m, 4)->parent = 1;
	add_dirent(m, 5, "s", 5, DT_LNK);

	set_inode(m, 2, S_IFREG | 04755, 1, A_SIZE, DATA_OFF, 0);
	for (size_t i = 0; i < A_SIZE; i++)
		m->b[DATA_OFF + i] = a_data(i);
	ino_at(m, 2)->content_hash = XXH3_64bits(m->b + DATA_OFF, A_SIZE);
	ino_at(m, 2)->xattr_ref = 0;
	ino_at(m, 2)->xattr_count = 2;
	x = (struct cairn_disk_xattr *)(m->b + XATTR_OFF);
	x[0].name_ref = blob_add(m, "user.k", 6);
	x[0].name_len = 6;
	x[0].value_ref = blob_add(m, "v1", 2);
	x[0].value_len = 2;
	x[1].name_ref = blob_add(m, "user.z", 6);
	x[1].name_len = 6;
	x[1].value_ref = blob_add(m, "v2", 2);
	x[1].value_len = 2;

	set_inode(m, 3, S_IFREG | 0644, 1, 5, blob_add(m, "hello", 5), 0);
	ino_at(m, 3)->flags = CAIRN_IF_INLINE;
	ino_at(m, 3)->content_hash = XXH3_64bits("hello", 5);

	set_inode(m, 5, S_IFLNK | 0777, 1, 4, blob_add(m, "../a", 4), 0);
	set_inode(m, 7, S_IFLNK | 0777, 1, 4, blob_add(m, "loop", 4), 0);

	set_inode(m, 6, S_IFREG | 0600, 1, SP_SIZE, 0, 2);
	ino_at(m, 6)->flags = CAIRN_IF_EXTENTS;
	ino_at(m, 6)->content_hash = sparse_hash();
	e = (struct cairn_disk_extent *)(m->b + EXTENT_OFF);
	e[0].file_off = 4096;
	e[0].disk_off = DATA_OFF + 8192;
	e[0].len = 4096;
	e[1].file_off = 65536;
	e[1].disk_off = DATA_OFF + 12288;
	e[1].len = 4096;
	memset(m->b + DATA_OFF + 8192, 0xaa, 4096);
	memset(m->b + DATA_OFF + 12288, 0xbb, 4096);

	s->blob_len = m->blob_len;
	seal(m);
	return m;
}

static int open_img(struct img *m, size_t len, struct cairn_image **out)
{
	struct cairn_bdev *dev;
	struct cairn_cache *cache;
	int rc;

	assert_int_equal(cairn_bdev_mem_new(m->b, len, 1, &dev), 0);
	assert_int_equal(cairn_cache_new(dev, NULL, &cache), 0);
	rc = cairn_image_open(cache, NULL, 0, out);
	if (rc)
		cairn_cache_free(cache);
	return rc;
}

static struct cairn_image *open_ok(struct img *m)
{
	struct cairn_image *img = NULL;

	assert_int_equal(open_img(m, sizeof(m->b), &img), 0);
	return img;
}

static long fsck_count(struct img *m)
{
	struct cairn_image *img = NULL;
	long n;

	if (open_img(m, sizeof(m->b), &img))
		return -1; /* refused at open: also a detection */
	n = cairn_image_fsck(img, CAIRN_FSCK_DATA, NULL, NULL);
	cairn_image_close(img);
	return n;
}

struct seen {
	char names[16][32];
	uint64_t next[16];
	int n, stop_at;
};

static int rd_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		 uint64_t next)
{
	struct seen *s = ctx;

	(void)ino;
	(void)dtype;
	memcpy(s->names[s->n], name, len);
	s->names[s->n][len] = '\0';
	s->next[s->n++] = next;
	return s->n == s->stop_at;
}

static void test_good_image(void **state)
{
	struct img *m = build();
	struct cairn_image *img = open_ok(m);
	struct cairn_stat st;
	cairn_ino_t ino;
	char buf[SP_SIZE], lnk[16];
	struct seen sn = { .stop_at = 3 };

	(void)state;
	assert_int_equal(cairn_image_fsck(img, CAIRN_FSCK_DATA, NULL, NULL), 0);
	assert_int_equal(cairn_image_resolve(img, "/a", 0, &ino), 0);
	assert_int_equal(ino, 2);
	assert_int_equal(cairn_image_stat(img, ino, &st), 0);
	assert_int_equal(st.mode, S_IFREG | 04755);
	assert_int_equal(st.size, A_SIZE);
	assert_int_equal(st.uid, 1002);
	assert_int_equal(st.mtime.nsec, 123456789);
	assert_int_equal(cairn_image_read(img, ino, buf, sizeof(buf), 0), A_SIZE);
	for (size_t i = 0; i < A_SIZE; i++)
		assert_int_equal((unsigned char)buf[i], a_data(i));
	assert_int_equal(cairn_image_read(img, ino, buf, 10, 4995), 5);
	assert_int_equal(cairn_image_read(img, ino, buf, 10, A_SIZE), 0);
	/* Symlinks: followed inside the path, and at the end only when asked. */
	assert_int_equal(cairn_image_resolve(img, "d/s", 1, &ino), 0);
	assert_int_equal(ino, 2);
	assert_int_equal(cairn_image_resolve(img, "/d/s", 0, &ino), 0);
	assert_int_equal(ino, 5);
	assert_int_equal(cairn_image_readlink(img, 5, lnk, sizeof(lnk)), 4);
	assert_memory_equal(lnk, "../a", 4);
	assert_int_equal(cairn_image_readlink(img, 5, lnk, 2), -ERANGE);
	assert_int_equal(cairn_image_resolve(img, "/loop", 1, &ino), -ELOOP);
	assert_int_equal(cairn_image_resolve(img, "/d/s/", 0, &ino), -ENOTDIR);
	assert_int_equal(cairn_image_resolve(img, "//d//s", 1, &ino), 0);
	assert_int_equal(ino, 2);
	assert_int_equal(cairn_image_resolve(img, "/d/../b", 0, &ino), 0);
	assert_int_equal(ino, 3);
	assert_int_equal(cairn_image_resolve(img, "/a/x", 0, &ino), -ENOTDIR);
	assert_int_equal(cairn_image_resolve(img, "/nope", 0, &ino), -ENOENT);
	/* Inline. */
	assert_int_equal(cairn_image_read(img, 3, buf, sizeof(buf), 1), 4);
	assert_memory_equal(buf, "ello", 4);
	/* Sparse: holes read as zeros, lseek finds the data. */
	assert_int_equal(cairn_image_read(img, 6, buf, sizeof(buf), 0), SP_SIZE);
	for (size_t i = 0; i < SP_SIZE; i++) {
		unsigned char want = i >= 4096 && i < 8192 ? 0xaa
				     : i >= 65536 && i < 69632 ? 0xbb : 0;
		assert_int_equal((unsigned char)buf[i], want);
	}
	assert_int_equal(cairn_image_read(img, 6, buf, 8192, 61440), 8192);
	assert_int_equal((unsigned char)buf[4095], 0);
	assert_int_equal((unsigned char)buf[4096], 0xbb);
	assert_int_equal(cairn_image_lseek(img, 6, 0, SEEK_DATA), 4096);
	assert_int_equal(cairn_image_lseek(img, 6, 4096, SEEK_HOLE), 8192);
	assert_int_equal(cairn_image_lseek(img, 6, 9000, SEEK_DATA), 65536);
	assert_int_equal(cairn_image_lseek(img, 6, 70000, SEEK_DATA), -ENXIO);
	assert_int_equal(cairn_image_lseek(img, 6, 70000, SEEK_HOLE), 70000);
	/* Directories: cookies resume after the entry that returned them. */
	assert_int_equal(cairn_image_readdir(img, 1, 0, rd_cb, &sn), 0);
	assert_int_equal(sn.n, 3);
	assert_string_equal(sn.names[2], "a");
	sn.stop_at = 0;
	assert_int_equal(cairn_image_readdir(img, 1, sn.next[2], rd_cb, &sn), 0);
	assert_int_equal(sn.n, 7);
	assert_string_equal(sn.names[3], "b");
	assert_string_equal(sn.names[6], "sp");
	assert_int_equal(cairn_image_lookup(img, 1, "sp", 2, &ino), 0);
	assert_int_equal(ino, 6);
	assert_int_equal(cairn_image_lookup(img, 1, "c", 1, &ino), -ENOENT);
	assert_int_equal(cairn_image_lookup(img, 2, "c", 1, &ino), -ENOTDIR);
	/* xattrs. */
	assert_int_equal(cairn_image_listxattr(img, 2, NULL, 0), 14);
	assert_int_equal(cairn_image_listxattr(img, 2, buf, 14), 14);
	assert_memory_equal(buf, "user.k\0user.z\0", 14);
	assert_int_equal(cairn_image_getxattr(img, 2, "user.z", NULL, 0), 2);
	assert_int_equal(cairn_image_getxattr(img, 2, "user.z", buf, 2), 2);
	assert_memory_equal(buf, "v2", 2);
	assert_int_equal(cairn_image_getxattr(img, 2, "user.y", buf, 2), -ENODATA);
	assert_int_equal(cairn_image_read(img, 1, buf, 1, 0), -EISDIR);
	assert_int_equal(cairn_image_stat(img, 0, &st), -ENOENT);
	assert_int_equal(cairn_image_stat(img, INODES, &st), -ENOENT);
	cairn_image_close(img);
	free(m);
}

/* Any single changed byte of the superblock is refused at open. */
static void test_super_flips(void **state)
{
	struct img *m = build();
	struct cairn_image *img;

	(void)state;
	for (size_t i = 0; i < CAIRN_SUPER_SIZE; i++) {
		m->b[i] ^= 0x5a;
		assert_int_not_equal(open_img(m, sizeof(m->b), &img), 0);
		m->b[i] ^= 0x5a;
	}
	free(m);
}

/* Any single changed byte of the metadata or checksum table is found by fsck. */
static void test_meta_flips(void **state)
{
	struct img *m = build();

	(void)state;
	for (size_t i = META_OFF; i < CSUM_OFF + (META_LEN / 4096) * 8; i++) {
		m->b[i] ^= 0x01;
		if (fsck_count(m) == 0)
			fail_msg("flip at %zu not detected", i);
		m->b[i] ^= 0x01;
	}
	free(m);
}

static void test_truncated(void **state)
{
	struct img *m = build();
	struct cairn_image *img;
	char why[200];
	struct cairn_bdev *dev;
	struct cairn_cache *cache;

	(void)state;
	/* An empty device is no image at all; any other short one a truncated image. */
	assert_int_equal(open_img(m, 0, &img), -CAIRN_ENOTIMAGE);
	for (size_t len = 509; len < IMG_SIZE; len += 509)
		assert_int_equal(open_img(m, len, &img), -CAIRN_ECORRUPT);
	assert_int_equal(cairn_bdev_mem_new(m->b, IMG_SIZE - 1, 1, &dev), 0);
	assert_int_equal(cairn_cache_new(dev, NULL, &cache), 0);
	assert_int_equal(cairn_image_open(cache, why, sizeof(why), &img), -CAIRN_ECORRUPT);
	assert_non_null(strstr(why, "truncated"));
	cairn_cache_free(cache);
	free(m);
}

static void test_unknown_incompat(void **state)
{
	struct img *m = build();
	struct cairn_image *img;
	struct cairn_bdev *dev;
	struct cairn_cache *cache;
	char why[200];

	(void)state;
	super_of(m)->incompat |= 1u << 9;
	seal(m);
	assert_int_equal(cairn_bdev_mem_new(m->b, IMG_SIZE, 1, &dev), 0);
	assert_int_equal(cairn_cache_new(dev, NULL, &cache), 0);
	assert_int_equal(cairn_image_open(cache, why, sizeof(why), &img), -EOPNOTSUPP);
	assert_non_null(strstr(why, "bit 9"));
	cairn_cache_free(cache);
	free(m);
}

/* Each hostile edit, checksums recomputed: the API gives an error, fsck counts it. */
typedef void (*edit_fn)(struct img *m);

static void e_name_slash(struct img *m) { m->b[BLOB_OFF + dirent_at(m, 2)->name_ref] = '/'; }
static void e_name_dot(struct img *m)
{
	dirent_at(m, 3)->name_len = 1;
	m->b[BLOB_OFF + dirent_at(m, 3)->name_ref] = '.';
}
static void e_name_nul(struct img *m) { m->b[BLOB_OFF + dirent_at(m, 3)->name_ref + 1] = 0; }
static void e_name_len0(struct img *m) { dirent_at(m, 0)->name_len = 0; }
static void e_name_far(struct img *m) { dirent_at(m, 0)->name_ref = UINT64_MAX - 1; }
static void e_dirent_ino(struct img *m) { dirent_at(m, 0)->ino = INODES; }
static void e_dirent_ino0(struct img *m) { dirent_at(m, 1)->ino = 0; }
static void e_unsorted(struct img *m)
{
	struct cairn_disk_dirent t = *dirent_at(m, 0);

	*dirent_at(m, 0) = *dirent_at(m, 1);
	*dirent_at(m, 1) = t;
}
static void e_dir_count(struct img *m) { ino_at(m, 1)->data_count = UINT64_MAX; }
static void e_dir_cycle(struct img *m) { dirent_at(m, 5)->ino = 1; dirent_at(m, 5)->type = DT_DIR; }
static void e_data_out(struct img *m) { ino_at(m, 2)->data_ref = DATA_OFF + DATA_LEN - 4096; }
static void e_data_wrap(struct img *m) { ino_at(m, 2)->size = UINT64_MAX - 100; }
static void e_inline_big(struct img *m) { ino_at(m, 3)->size = 1u << 20; }
static void e_symlink_len(struct img *m) { ino_at(m, 5)->size = 1u << 20; }
static void e_symlink_nul(struct img *m) { m->b[BLOB_OFF + ino_at(m, 5)->data_ref + 1] = 0; }
static void e_mode(struct img *m) { ino_at(m, 2)->mode = 0170644; }
static void e_flags(struct img *m) { ino_at(m, 2)->flags = 1u << 7; }
static void e_nlink(struct img *m) { ino_at(m, 2)->nlink = 2; }
static void e_parent(struct img *m) { ino_at(m, 4)->parent = INODES + 5; }
static void e_xattr_count(struct img *m) { ino_at(m, 2)->xattr_count = 1000; }
static void e_xattr_value(struct img *m)
{
	((struct cairn_disk_xattr *)(m->b + XATTR_OFF))[0].value_len = 1u << 30;
}
static void e_extent_overlap(struct img *m)
{
	((struct cairn_disk_extent *)(m->b + EXTENT_OFF))[1].file_off = 6000;
}
static void e_extent_past(struct img *m)
{
	((struct cairn_disk_extent *)(m->b + EXTENT_OFF))[1].file_off = SP_SIZE - 10;
}
static void e_extent_disk(struct img *m)
{
	((struct cairn_disk_extent *)(m->b + EXTENT_OFF))[1].disk_off = 0;
}
static void e_extent_count(struct img *m) { ino_at(m, 6)->data_count = 1ull << 40; }
static void e_content(struct img *m) { m->b[DATA_OFF + 17] ^= 1; }
static void e_type(struct img *m) { dirent_at(m, 1)->type = DT_DIR; }
static void e_unreachable(struct img *m)
{
	/* Drop /sp from the root: inode 6 is then not reachable. */
	ino_at(m, 1)->data_count = 4;
}

static void test_hostile(void **state)
{
	static const struct { const char *name; edit_fn fn; } edits[] = {
		{ "name with slash", e_name_slash }, { "name '.'", e_name_dot },
		{ "name with NUL", e_name_nul }, { "empty name", e_name_len0 },
		{ "name ref far", e_name_far }, { "dirent ino", e_dirent_ino },
		{ "dirent ino 0", e_dirent_ino0 }, { "unsorted", e_unsorted },
		{ "dir count", e_dir_count }, { "dir cycle", e_dir_cycle },
		{ "data out", e_data_out }, { "data wrap", e_data_wrap },
		{ "inline big", e_inline_big }, { "symlink len", e_symlink_len },
		{ "symlink nul", e_symlink_nul }, { "mode", e_mode }, { "flags", e_flags },
		{ "nlink", e_nlink }, { "parent", e_parent }, { "xattr count", e_xattr_count },
		{ "xattr value", e_xattr_value }, { "extent overlap", e_extent_overlap },
		{ "extent past", e_extent_past }, { "extent disk", e_extent_disk },
		{ "extent count", e_extent_count }, { "content", e_content }, { "type", e_type },
		{ "unreachable", e_unreachable },
	};
	char buf[SP_SIZE];

	(void)state;
	for (size_t k = 0; k < sizeof(edits) / sizeof(edits[0]); k++) {
		struct img *m = build();
		struct cairn_image *img;
		struct cairn_stat st;
		struct seen sn = { 0 };
		cairn_ino_t ino;

		edits[k].fn(m);
		seal(m);
		if (fsck_count(m) <= 0)
			fail_msg("edit '%s' not found by fsck", edits[k].name);
		/* Everything the API offers still returns, without crashing. */
		img = open_ok(m);
		for (cairn_ino_t i = 0; i <= INODES; i++) {
			(void)cairn_image_stat(img, i, &st);
			(void)cairn_image_read(img, i, buf, sizeof(buf), 0);
			(void)cairn_image_readlink(img, i, buf, sizeof(buf));
			(void)cairn_image_listxattr(img, i, buf, sizeof(buf));
			(void)cairn_image_getxattr(img, i, "user.k", buf, sizeof(buf));
			sn.n = 0;
			sn.stop_at = 15;
			(void)cairn_image_readdir(img, i, 0, rd_cb, &sn);
		}
		(void)cairn_image_resolve(img, "/d/s", 1, &ino);
		(void)cairn_image_resolve(img, "/sp", 1, &ino);
		(void)cairn_image_resolve(img, "/b", 1, &ino);
		cairn_image_close(img);
		free(m);
	}
}

/* Readers on several threads against a fresh image: they race to verify the same
 * metadata blocks and must all see the same, correct data (run under TSan too). */
static void *reader_thread(void *arg)
{
	struct cairn_image *img = arg;
	static char buf[4][SP_SIZE];
	static int next;
	char *b = buf[__atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % 4];
	cairn_ino_t ino;
	struct seen sn;

	for (int k = 0; k < 200; k++) {
		if (cairn_image_resolve(img, "/d/s", 1, &ino) || ino != 2)
			return (void *)1;
		if (cairn_image_read(img, 2, b, A_SIZE, 0) != A_SIZE || (unsigned char)b[77] != a_data(77))
			return (void *)1;
		if (cairn_image_read(img, 6, b, SP_SIZE, 0) != SP_SIZE || (unsigned char)b[65536] != 0xbb)
			return (void *)1;
		memset(&sn, 0, sizeof(sn));
		if (cairn_image_readdir(img, 1, 0, rd_cb, &sn) || sn.n != 7)
			return (void *)1;
		if (cairn_image_getxattr(img, 2, "user.k", b, 16) != 2)
			return (void *)1;
	}
	return NULL;
}

static void test_threads(void **state)
{
	struct img *m = build();
	struct cairn_image *img = open_ok(m);
	pthread_t t[4];
	void *ret;

	(void)state;
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader_thread, img), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], &ret), 0);
		assert_null(ret);
	}
	assert_null(cairn_image_corruption(img));
	cairn_image_close(img);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_image),
		cmocka_unit_test(test_super_flips),
		cmocka_unit_test(test_meta_flips),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_unknown_incompat),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
