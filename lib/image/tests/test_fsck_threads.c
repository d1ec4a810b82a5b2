/* SPDX-License-Identifier: MIT */
/*
 * fsck gives the same findings at any thread count (issue 17): an image of
 * ~20k inodes, built by the mkfs library, with faults spread over every pass and
 * over many shards (bad records re-sealed so the reader meets them, a metadata
 * block left with a bad checksum, a changed data byte), is checked on 1, 2, 4
 * and 7 threads (the digest scan beside the other checks from 2 on), and a
 * compressed one with bad chunks; the
 * reports, byte for byte, and the counts must be equal. A
 * second image has more problems than fsck lists, so the cut-off is the same
 * too. Run under TSan by `make tsan-test`.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "hostile.h"
#include "image/image_int.h"

#define DIRS  20
#define FILES 1000 /* per directory: 20k inodes, five inode shards and more */
#define BIG   40000 /* bytes in every 97th file: 660 chunks of 16 KiB compressed */

struct log {
	char *text;
	size_t len, cap;
};

static void log_cb(void *ctx, const char *msg)
{
	struct log *l = ctx;
	size_t n = strlen(msg) + 1;

	if (l->len + n + 1 > l->cap) {
		l->cap = (l->len + n + 1) * 2;
		l->text = realloc(l->text, l->cap);
		assert_non_null(l->text);
	}
	memcpy(l->text + l->len, msg, n - 1);
	l->text[l->len + n - 1] = '\n';
	l->len += n;
	l->text[l->len] = '\0';
}

/* dNN/fNNNN (every 97th holds BIG bytes), dNN/sub/, a hard link, a symlink. */
static void make_tree(const char *dir)
{
	char p[512], q[512];

	for (int d = 0; d < DIRS; d++) {
		snprintf(p, sizeof(p), "%s/d%02d", dir, d);
		assert_int_equal(mkdir(p, 0755), 0);
		snprintf(p, sizeof(p), "%s/d%02d/sub", dir, d);
		assert_int_equal(mkdir(p, 0755), 0);
		for (int i = 0; i < FILES; i++) {
			snprintf(p, sizeof(p), "%s/d%02d/f%04d", dir, d, i);
			hostile_write(p, i % 97 ? 0 : BIG, (unsigned)(d * FILES + i));
		}
	}
	snprintf(p, sizeof(p), "%s/d00/f0001", dir);
	snprintf(q, sizeof(q), "%s/d01/hard", dir);
	assert_int_equal(link(p, q), 0);
	snprintf(q, sizeof(q), "%s/link", dir);
	assert_int_equal(symlink("d00/f0001", q), 0);
}

/* The images, built once for all the tests (20k files take a while to write). */
static uint8_t *g_image, *g_zimage;
static size_t g_len, g_zlen;

static int setup(void **state)
{
	char dir[] = "/tmp/cairn-fsckj-XXXXXX", rm[64];

	(void)state;
	assert_non_null(mkdtemp(dir));
	make_tree(dir);
	g_image = hostile_mkfs(dir, CAIRN_MKFS_NONE, 0, &g_len);
	g_zimage = hostile_mkfs(dir, CAIRN_MKFS_ZSTD, 14, &g_zlen); /* 16 KiB chunks */
	snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
	assert_int_equal(system(rm), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(g_image);
	free(g_zimage);
	return 0;
}

/* A copy of an image to change. */
static uint8_t *copy_of(const uint8_t *img, size_t len)
{
	uint8_t *b = malloc(len);

	assert_non_null(b);
	memcpy(b, img, len);
	return b;
}

static uint8_t *image_copy(size_t *len)
{
	*len = g_len;
	return copy_of(g_image, g_len);
}

static struct cairn_image *open_buf(const uint8_t *buf, size_t len)
{
	struct cairn_image *img;

	assert_int_equal(hostile_open(buf, len, NULL, NULL, NULL, &img), 0);
	return img;
}

static cairn_ino_t ino_of(struct cairn_image *img, const char *path)
{
	cairn_ino_t ino;

	assert_int_equal(cairn_image_resolve(img, path, 0, &ino), 0);
	return ino;
}

static struct cairn_disk_dirent *dirent_of(uint8_t *b, struct cairn_image *img, cairn_ino_t dir,
					   uint64_t i)
{
	struct cairn_rinode r;

	assert_int_equal(cairn_image_inode_load(img, dir, &r), 0);
	assert_true(i < r.data_count);
	return (struct cairn_disk_dirent *)(b + img->dirent_off +
					    (r.data_ref + i) * sizeof(struct cairn_disk_dirent));
}

/* The same text and count at every thread count; returns the count. */
static long same_at_any_count(const uint8_t *buf, size_t len, unsigned flags, struct log *first)
{
	static const unsigned counts[] = { 1, 2, 4, 7 };
	long n0 = 0;

	for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
		struct cairn_image *img = open_buf(buf, len);
		struct log l = { 0 };
		long n = cairn_image_fsck(img, flags | CAIRN_FSCK_THREADS(counts[k]), log_cb, &l);

		cairn_image_close(img);
		if (k == 0) {
			n0 = n;
			*first = l;
			continue;
		}
		if (n != n0 || (l.len != first->len || (l.len && memcmp(l.text, first->text, l.len))))
			fail_msg("-j%u: %ld problems, -j1: %ld\n--- -j1:\n%s--- -j%u:\n%s", counts[k],
				 n, n0, first->text ? first->text : "", counts[k],
				 l.text ? l.text : "");
		free(l.text);
	}
	return n0;
}

static void test_clean(void **state)
{
	size_t len;
	uint8_t *buf = image_copy(&len);
	struct log l;

	(void)state;
	assert_int_equal(same_at_any_count(buf, len, CAIRN_FSCK_DATA, &l), 0);
	assert_int_equal(l.len, 0);
	free(l.text);
	free(buf);
}

static void test_faults(void **state)
{
	size_t len;
	uint8_t *buf = image_copy(&len);
	struct cairn_image *img = open_buf(buf, len);
	cairn_ino_t d03 = ino_of(img, "/d03"), d07 = ino_of(img, "/d07"), d12 = ino_of(img, "/d12");
	cairn_ino_t d15sub = ino_of(img, "/d15/sub"), f = ino_of(img, "/d09/f0500");
	cairn_ino_t d16 = ino_of(img, "/d16"), d16sub = ino_of(img, "/d16/sub");
	cairn_ino_t big = ino_of(img, "/d18/f0097"), first = ino_of(img, "/d00/f0002");
	cairn_ino_t last = ino_of(img, "/d19/f0999");
	struct cairn_disk_dirent *a, *b, t;
	struct cairn_rinode r;
	uint64_t blk;
	struct log l;
	long n;

	(void)state;
	/* Inode pass: a link count, a bad mode (the inode is lost), in far shards. */
	hostile_inode(buf, first)->nlink = cairn_le32(3);
	hostile_inode(buf, last)->mode = cairn_le32(0170644);
	/* Walk: two entries of /d03 swapped, a wrong type in /d12, a subdirectory
	 * pointing elsewhere, /d07 listed a second time from /d12 (the file there
	 * is then unreachable), /d16/sub listed twice in /d16. */
	a = dirent_of(buf, img, d03, 10);
	b = dirent_of(buf, img, d03, 11);
	t = *a;
	a->name_ref = b->name_ref;
	a->name_len = b->name_len;
	b->name_ref = t.name_ref;
	b->name_len = t.name_len;
	dirent_of(buf, img, d12, 20)->type = DT_DIR;
	hostile_inode(buf, d15sub)->parent = cairn_le32((uint32_t)d07);
	a = dirent_of(buf, img, d12, 30);
	a->ino = cairn_le32((uint32_t)d07);
	a->type = DT_DIR;
	a = dirent_of(buf, img, d16, 40);
	a->ino = cairn_le32((uint32_t)d16sub);
	a->type = DT_DIR;
	/* Data: a changed byte of a big file. */
	assert_int_equal(cairn_image_inode_load(img, big, &r), 0);
	if (!(r.flags & (CAIRN_IF_INLINE | CAIRN_IF_EXTENTS | CAIRN_IF_CHUNKED)))
		buf[r.data_ref + 100] ^= 0x40;
	assert_true(cairn_fixup_checksums(buf, len));
	/* Checksums: the block holding /d09/f0500's inode, left unsealed. */
	blk = (img->inode_off + f * CAIRN_INODE_SIZE - img->meta_off) / CAIRN_BLOCK_SIZE;
	buf[img->meta_off + blk * CAIRN_BLOCK_SIZE + 7] ^= 1;
	cairn_image_close(img);

	n = same_at_any_count(buf, len, CAIRN_FSCK_DATA | CAIRN_FSCK_DIGESTS, &l);
	assert_true(n >= 8);
	assert_memory_equal(l.text, "digests: ", 9); /* the scan's findings come first */
	assert_non_null(strstr(l.text, "checksum mismatch"));
	assert_non_null(strstr(l.text, "bad mode"));
	/* The inode is named once, not by fsck and again by the reader's reason. */
	assert_non_null(strstr(l.text, "\ninode "));
	assert_null(strstr(l.text, ": inode "));
	assert_non_null(strstr(l.text, "out of order"));
	assert_non_null(strstr(l.text, "does not match inode"));
	assert_non_null(strstr(l.text, "is linked more than once"));
	assert_non_null(strstr(l.text, "('sub') is linked more than once"));
	assert_non_null(strstr(l.text, "not reachable"));
	assert_non_null(strstr(l.text, "link count 3"));
	assert_non_null(strstr(l.text, "content hash mismatch"));
	free(l.text);
	free(buf);
}

/* A compressed image with bad chunks in several chunk shards. */
static void test_chunks(void **state)
{
	uint8_t *buf = copy_of(g_zimage, g_zlen);
	struct cairn_image *img = open_buf(buf, g_zlen);
	uint64_t count = img->chunk_count;
	struct cairn_rchunk c;
	struct log l;
	long n;

	(void)state;
	assert_true(count > 3 * 64);
	/* Spread over the chunk shards: the frame's first byte of some (a decoding
	 * error), a byte in the middle of others (wrong bytes: content hashes). */
	for (uint64_t i = 3, k = 0; i < count; i += count / 7, k++) {
		assert_int_equal(cairn_image_chunk_load(img, i, &c), 0);
		if (c.stored_len && c.stored_len < c.ulen)
			buf[c.disk_off + (k % 2 ? c.stored_len / 2 : 0)] ^= 0x55;
	}
	cairn_image_close(img);
	n = same_at_any_count(buf, g_zlen, CAIRN_FSCK_DATA, &l);
	assert_true(n >= 5);
	assert_non_null(strstr(l.text, "chunk "));
	assert_non_null(strstr(l.text, "content hash mismatch"));
	free(l.text);
	free(buf);
}

/* The walk loads no inode again: it takes each inode's type, parent and link
 * count from the inode pass. Loading them again cost two more reads of each
 * inode's record: 101,672 cache lookups for these 20,043 inodes (5.1 each: the
 * record, the entry, its name, and the two loads again); now 61,588 (3.1). */
static void test_reads_per_inode(void **state)
{
	struct cairn_image *img = open_buf(g_image, g_len);
	struct cairn_cache_stats st;
	uint64_t before;

	(void)state;
	cairn_cache_get_stats(img->cache, &st);
	before = st.hits + st.misses;
	assert_int_equal(cairn_image_fsck(img, CAIRN_FSCK_THREADS(1), NULL, NULL), 0);
	cairn_cache_get_stats(img->cache, &st);
	if (st.hits + st.misses - before > 4 * img->inode_count)
		fail_msg("%llu cache lookups for %llu inodes",
			 (unsigned long long)(st.hits + st.misses - before),
			 (unsigned long long)img->inode_count);
	cairn_image_close(img);
}

/* More problems than are listed: the same ones are listed at any count. */
static void test_many(void **state)
{
	size_t len;
	uint8_t *buf = image_copy(&len);
	struct cairn_image *img = open_buf(buf, len);
	uint64_t first = (img->inode_off - img->meta_off) / CAIRN_BLOCK_SIZE;
	uint64_t blocks = (img->inode_count * CAIRN_INODE_SIZE) / CAIRN_BLOCK_SIZE;
	struct log l;
	long n;

	(void)state;
	cairn_image_close(img);
	for (uint64_t b = first + 1; b < first + blocks; b += 2)
		buf[cairn_le64(hostile_super(buf)->meta_off) + b * CAIRN_BLOCK_SIZE + 11] ^= 2;
	n = same_at_any_count(buf, len, CAIRN_FSCK_DIGESTS, &l);
	assert_true(n > 200);
	assert_non_null(strstr(l.text, "(further problems are counted, not listed)"));
	free(l.text);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_faults),
		cmocka_unit_test(test_chunks),
		cmocka_unit_test(test_reads_per_inode),
		cmocka_unit_test(test_many),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
