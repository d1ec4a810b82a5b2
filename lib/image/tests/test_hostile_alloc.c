/* SPDX-License-Identifier: MIT */
/*
 * Bounded allocation: an image whose counts claim far more than its size can
 * hold (2^40 inodes, a 1 TB directory, 2^32 xattrs, giant blob, extent and
 * dirent tables, a 2^40-byte symlink) is refused with -CAIRN_ECORRUPT, at open
 * or at first use, and is never trusted: the peak RSS of the whole walk (open,
 * readdir, stat, read, xattrs, fsck with data) grows by less than 64 MiB.
 * Without ASan the walk also runs under an address-space limit of the current
 * size + 256 MiB, so any allocation sized from the claim fails loudly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <cmocka.h>
#include "hostile.h"

#include "util/tests/sanitizer.h"

#define RSS_GROWTH_MAX_KB (64 * 1024)

static uint8_t *good;
static size_t good_len;
static cairn_ino_t ino_small, ino_big, ino_sparse, ino_link, ino_dir;

struct walk {
	struct cairn_image *img;
	unsigned visits;
	int corrupt;          /* some call said -CAIRN_ECORRUPT */
	char *buf;
};

static void note(struct walk *w, long rc)
{
	if (rc == -CAIRN_ECORRUPT)
		w->corrupt = 1;
	/* Only errors a hostile image may cause; never ENOMEM from a claim. */
	assert_true(rc >= 0 || rc == -CAIRN_ECORRUPT || rc == -ENOENT || rc == -ENOTDIR ||
		    rc == -EINVAL || rc == -ENODATA || rc == -ERANGE || rc == -EISDIR ||
		    rc == -ENXIO || rc == -ELOOP || rc == -ENAMETOOLONG);
}

static void walk_dir(struct walk *w, cairn_ino_t dir, int depth);

static int depth_ok(struct walk *w)
{
	return w->visits < 10000;
}

static int visit_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		    uint64_t next)
{
	struct walk *w = ctx;
	struct cairn_stat st;
	long rc;

	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	if (++w->visits > 10000)
		return 1;
	rc = cairn_image_stat(w->img, ino, &st);
	note(w, rc);
	if (rc)
		return 0;
	if (S_ISREG(st.mode)) {
		for (uint64_t off = 0; off < st.size && off < (2u << 20); off += 1u << 20)
			note(w, cairn_image_read(w->img, ino, w->buf, 1u << 20, off));
		note(w, cairn_image_read(w->img, ino, w->buf, 4096,
					 st.size > 4096 ? st.size - 4096 : 0));
	} else if (S_ISLNK(st.mode)) {
		note(w, cairn_image_readlink(w->img, ino, w->buf, 1u << 20));
	}
	rc = cairn_image_listxattr(w->img, ino, w->buf, 1u << 20);
	note(w, rc);
	note(w, cairn_image_getxattr(w->img, ino, "user.a", w->buf, 1u << 20));
	if (S_ISDIR(st.mode) && depth_ok(w))
		walk_dir(w, ino, 1);
	return 0;
}

static void walk_dir(struct walk *w, cairn_ino_t dir, int depth)
{
	if (depth > 16)
		return;
	note(w, cairn_image_readdir(w->img, dir, 0, visit_cb, w));
}

static void count_cb(void *ctx, const char *msg)
{
	(*(long *)ctx)++;
}

/* Opens and walks img; returns whether corruption was seen anywhere. */
static int walk_all(const uint8_t *img, size_t len)
{
	struct cairn_image *im = NULL;
	struct walk w = { 0 };
	long problems = 0, rc;

	rc = hostile_open(img, len, NULL, NULL, NULL, &im);
	if (rc) {
		assert_int_equal(rc, -CAIRN_ECORRUPT);
		return 1;
	}
	w.img = im;
	w.buf = malloc(1u << 20);
	assert_non_null(w.buf);
	walk_dir(&w, cairn_image_root(im), 0);
	for (cairn_ino_t i = 0; i < 64; i++) {
		struct cairn_stat st;

		note(&w, cairn_image_stat(im, i, &st));
	}
	rc = cairn_image_fsck(im, CAIRN_FSCK_DATA, count_cb, &problems);
	note(&w, rc);
	free(w.buf);
	cairn_image_close(im);
	return w.corrupt || problems > 0;
}

static long maxrss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* Runs one edit: patch, reseal, walk under the limits, check refusal. */
static void run_edit(const char *what, void (*edit)(uint8_t *img), int must_refuse)
{
	uint8_t *img = malloc(good_len);
	long before, after;
	int corrupt;

	assert_non_null(img);
	memcpy(img, good, good_len);
	edit(img);
	cairn_fixup_checksums(img, good_len);
	before = maxrss_kb();
	corrupt = walk_all(img, good_len);
	after = maxrss_kb();
	print_message("%-28s %s, peak RSS +%ld KiB\n", what, corrupt ? "refused" : "accepted",
		      after - before);
	assert_true(after - before < RSS_GROWTH_MAX_KB);
	if (must_refuse)
		assert_true(corrupt);
	free(img);
}

#define SUPER_SET(field, v) (hostile_super(img)->field = cairn_le64(v))

static void e_inodes(uint8_t *img) { SUPER_SET(inode_count, 1ull << 40); }
static void e_inodes_max(uint8_t *img) { SUPER_SET(inode_count, CAIRN_INO_MAX + 1); }
static void e_dirents(uint8_t *img) { SUPER_SET(dirent_count, 1ull << 40); }
static void e_xattrs(uint8_t *img) { SUPER_SET(xattr_count, 1ull << 40); }
static void e_extents(uint8_t *img) { SUPER_SET(extent_count, 1ull << 40); }
static void e_blob(uint8_t *img) { SUPER_SET(blob_len, 1ull << 40); }
static void e_meta(uint8_t *img) { SUPER_SET(meta_len, 1ull << 40); }
static void e_image(uint8_t *img) { SUPER_SET(image_size, 1ull << 40); }
static void e_data(uint8_t *img) { SUPER_SET(data_len, 1ull << 40); }
static void e_root_entries(uint8_t *img)
{
	hostile_inode(img, CAIRN_ROOT_INO)->data_count = cairn_le64(1ull << 40);
}
static void e_dir_entries(uint8_t *img)
{
	hostile_inode(img, ino_dir)->data_count = cairn_le64(UINT64_MAX);
}
static void e_xattr_count(uint8_t *img)
{
	hostile_inode(img, ino_small)->xattr_count = cairn_le32(UINT32_MAX);
}
static void e_xattr_ref(uint8_t *img)
{
	hostile_inode(img, ino_small)->xattr_ref = cairn_le64(UINT64_MAX - 1);
}
static void e_big_size(uint8_t *img)
{
	hostile_inode(img, ino_big)->size = cairn_le64(1ull << 40);
}
static void e_extent_count(uint8_t *img)
{
	hostile_inode(img, ino_sparse)->data_count = cairn_le64(1ull << 40);
}
static void e_link_size(uint8_t *img)
{
	hostile_inode(img, ino_link)->size = cairn_le64(1ull << 40);
}
/* Not corrupt: a sparse file may be huge. It must stay cheap all the same
 * (reads are bounded by the caller's buffer, fsck does not hash 2^62 zeros). */
static void e_sparse_huge(uint8_t *img)
{
	hostile_inode(img, ino_sparse)->size = cairn_le64(1ull << 62);
}

static void test_claims_refused(void **state)
{
	run_edit("2^40 inodes", e_inodes, 1);
	run_edit("2^32 inodes", e_inodes_max, 1);
	run_edit("2^40 dirents", e_dirents, 1);
	run_edit("2^40 xattrs", e_xattrs, 1);
	run_edit("2^40 extents", e_extents, 1);
	run_edit("1 TB blob", e_blob, 1);
	run_edit("1 TB metadata", e_meta, 1);
	run_edit("1 TB image", e_image, 1);
	run_edit("1 TB data region", e_data, 1);
	run_edit("1 TB root directory", e_root_entries, 1);
	run_edit("2^64 directory entries", e_dir_entries, 1);
	run_edit("2^32 xattrs on a file", e_xattr_count, 1);
	run_edit("xattr ref near 2^64", e_xattr_ref, 1);
	run_edit("1 TB contiguous file", e_big_size, 1);
	run_edit("2^40 extents on a file", e_extent_count, 1);
	run_edit("1 TB symlink", e_link_size, 1);
	run_edit("2^62-byte sparse file", e_sparse_huge, 0);
}

/* The same under an address-space limit (skipped under sanitizers, whose
 * shadow memory needs terabytes of address space). */
static void test_claims_under_rlimit(void **state)
{
#ifdef TEST_SANITIZED
	skip();
#else
	struct rlimit old, lim;
	long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld", &pages), 1);
	fclose(f);
	assert_int_equal(getrlimit(RLIMIT_AS, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (256ull << 20);
	assert_int_equal(setrlimit(RLIMIT_AS, &lim), 0);
	test_claims_refused(state);
	assert_int_equal(setrlimit(RLIMIT_AS, &old), 0);
#endif
}

static int find_inos(void **state)
{
	struct cairn_image *im = NULL;

	good = hostile_build(&good_len);
	assert_int_equal(hostile_open(good, good_len, NULL, NULL, NULL, &im), 0);
	assert_int_equal(cairn_image_resolve(im, "/small", 0, &ino_small), 0);
	assert_int_equal(cairn_image_resolve(im, "/big", 0, &ino_big), 0);
	assert_int_equal(cairn_image_resolve(im, "/sparse", 0, &ino_sparse), 0);
	assert_int_equal(cairn_image_resolve(im, "/link", 0, &ino_link), 0);
	assert_int_equal(cairn_image_resolve(im, "/dir", 0, &ino_dir), 0);
	cairn_image_close(im);
	/* The untouched image walks clean. */
	assert_false(walk_all(good, good_len));
	return 0;
}

static int free_good(void **state)
{
	free(good);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_claims_refused),
		cmocka_unit_test(test_claims_under_rlimit),
	};

	return cmocka_run_group_tests(tests, find_inos, free_good);
}
