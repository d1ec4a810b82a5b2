/* SPDX-License-Identifier: MIT */
/*
 * Fault campaign through the library: mem -> fault -> cache -> image. For each
 * device request in turn (fail_nth = 1, 2, ... until a whole pass sees no
 * failure), transient and persistent, as EIO and as short reads, and then at
 * random rates with many seeds:
 *   - every call either returns exactly what the clean image gives or -EIO:
 *     never wrong bytes, never -CAIRN_ECORRUPT (a failed read is not damage);
 *   - after the plan is cleared, in the same open image (same cache, same
 *     verified-block bitmap), everything reads back correctly: no failure was
 *     cached or remembered as corruption.
 * Run on an image with its metadata as is and on one with it compressed.
 * The cache is small (4 KiB segments, 64 KiB budget) so segments are evicted
 * and fetched again, and readahead runs on its worker threads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "hostile.h"

#define MAX_NTH 4000
#define BUF (2u << 20)

static uint8_t *img;
static size_t img_len;

enum kind { ITEM_FILE, ITEM_DIR, ITEM_LINK, ITEM_XATTR, ITEM_STAT };
struct item {
	enum kind kind;
	const char *path;
	uint8_t *want;      /* golden bytes */
	size_t want_len;
};

static struct item items[] = {
	{ ITEM_FILE, "/small", NULL, 0 }, { ITEM_FILE, "/big", NULL, 0 }, { ITEM_FILE, "/dir/mid", NULL, 0 },
	{ ITEM_FILE, "/dir/sub/deep", NULL, 0 }, { ITEM_FILE, "/sparse", NULL, 0 }, { ITEM_FILE, "/hard", NULL, 0 },
	{ ITEM_FILE, "/link", NULL, 0 }, { ITEM_LINK, "/link", NULL, 0 }, { ITEM_DIR, "/", NULL, 0 }, { ITEM_DIR, "/dir", NULL, 0 },
	{ ITEM_DIR, "/dir/sub", NULL, 0 }, { ITEM_XATTR, "/small", NULL, 0 }, { ITEM_STAT, "/dir/sub/deep", NULL, 0 },
	{ ITEM_STAT, "/sparse", NULL, 0 },
};
#define NITEMS (sizeof(items) / sizeof(items[0]))

static const struct cairn_cache_config small_cache = {
	.segment_size = 4096, .budget_bytes = 64u << 10, .max_io = 32u << 10,
	.readahead_max = 32u << 10, .threads = 2,
};

struct sink {
	uint8_t *buf;
	size_t len;
};

static int dir_cb(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		  uint64_t next)
{
	struct sink *s = ctx;

	if (s->len + len + 16 > BUF)
		return 1;
	memcpy(s->buf + s->len, name, len);
	s->len += len;
	s->len += (size_t)snprintf((char *)s->buf + s->len, 16, "=%llu,", (unsigned long long)ino);
	return 0;
}

/* One item into buf: returns its length or a negative errno. */
static long get_item(struct cairn_image *im, const struct item *it, uint8_t *buf)
{
	cairn_ino_t ino;
	struct cairn_stat st;
	struct sink s = { buf, 0 };
	long rc = cairn_image_resolve(im, it->path, it->kind != ITEM_LINK, &ino);
	size_t done = 0;

	if (rc)
		return rc;
	switch (it->kind) {
	case ITEM_FILE:
		for (;;) {
			/* Odd-sized reads, so they straddle segments. */
			ssize_t n = cairn_image_read(im, ino, buf + done, 12345, done);

			if (n < 0)
				return n;
			if (n == 0)
				return (long)done;
			done += (size_t)n;
			if (done + 12345 > BUF)
				return -E2BIG;
		}
	case ITEM_LINK:
		return cairn_image_readlink(im, ino, (char *)buf, BUF);
	case ITEM_DIR:
		rc = cairn_image_readdir(im, ino, 0, dir_cb, &s);
		return rc ? rc : (long)s.len;
	case ITEM_XATTR: {
		ssize_t n = cairn_image_listxattr(im, ino, (char *)buf, 4096);

		if (n < 0)
			return n;
		rc = cairn_image_getxattr(im, ino, "user.a", buf + n, BUF - 8192);
		if (rc == -ENODATA)
			rc = 0; /* the temp fs took no user xattrs */
		return rc < 0 ? rc : n + rc;
	}
	case ITEM_STAT:
		rc = cairn_image_stat(im, ino, &st);
		if (rc)
			return rc;
		return snprintf((char *)buf, 512, "%llu %o %u %u %u %llu %llu %llu %lld.%u %lld.%u",
				(unsigned long long)st.ino, st.mode, st.nlink, st.uid, st.gid,
				(unsigned long long)st.size, (unsigned long long)st.blocks,
				(unsigned long long)st.rdev, (long long)st.mtime.sec, st.mtime.nsec,
				(long long)st.ctime.sec, st.ctime.nsec);
	}
	return -EINVAL;
}

/* A pass over every item. Faulty: each item is right or -EIO; returns the
 * number of failed items. Not faulty: every item must be right. */
static unsigned pass(struct cairn_image *im, uint8_t *buf, int faulty, const char *what)
{
	unsigned failed = 0;

	for (size_t i = 0; i < NITEMS; i++) {
		long n = get_item(im, &items[i], buf);

		if (n < 0 && faulty && n == -EIO) {
			failed++;
			continue;
		}
		if (n < 0)
			fail_msg("%s: %s (%d): %s", what, items[i].path, items[i].kind,
				 cairn_strerror((int)n));
		if ((size_t)n != items[i].want_len || memcmp(buf, items[i].want, (size_t)n))
			fail_msg("%s: %s (%d): wrong bytes (%ld, want %zu)", what, items[i].path,
				 items[i].kind, n, items[i].want_len);
	}
	return failed;
}

/* Opens with plan cfg, runs a faulty pass, clears the plan, runs a clean one.
 * Returns how many things failed. *fired (may be NULL) tells whether the plan
 * injected any fault: one that hit readahead can be absorbed by a retry, so
 * "nothing failed" does not mean "the plan never fired". */
static unsigned campaign_one(const struct cairn_fault_config *cfg, uint8_t *buf, const char *what,
			     int *fired)
{
	struct cairn_image *im = NULL;
	struct cairn_bdev *fault = NULL;
	uint64_t requests = 0, injected = 1;
	unsigned failed;
	int rc = hostile_open(img, img_len, cfg, &small_cache, &fault, &im);

	if (fired)
		*fired = 1;
	if (rc) {
		if (rc != -EIO)
			fail_msg("%s: open: %s (want EIO)", what, cairn_strerror(rc));
		return 1;
	}
	failed = pass(im, buf, 1, what);
	cairn_cache_drain(cairn_image_cache(im));
	assert_int_equal(cairn_bdev_fault_counts(fault, &requests, &injected), 0);
	if (fired)
		*fired = injected > 0;
	assert_int_equal(cairn_bdev_fault_set(fault, NULL), 0);
	pass(im, buf, 0, what);
	/* And fsck agrees nothing is damaged. */
	assert_int_equal(cairn_image_fsck(im, CAIRN_FSCK_DATA, NULL, NULL), 0);
	cairn_image_close(im);
	return failed;
}

/* Fails request 1, 2, ... in turn, until a pass makes fewer than n requests
 * (the plan never fires). Short reads are absorbed by the reader (it reads the
 * rest), so they never show as failures; EIO must show in most runs. */

static void each_request(enum cairn_fault_kind kind, int persistent)
{
	uint8_t *buf = malloc(BUF);
	char what[96];
	uint64_t n, seen = 0;

	assert_non_null(buf);
	for (n = 1; n <= MAX_NTH; n++) {
		struct cairn_fault_config cfg = { .fail_nth = n, .kind = kind,
						  .persistent = persistent };

		snprintf(what, sizeof(what), "%s%s request %llu",
			 kind == CAIRN_FAULT_EIO ? "EIO" : "short",
			 persistent ? " persistent" : "", (unsigned long long)n);
		int fired;

		seen += campaign_one(&cfg, buf, what, &fired) > 0;
		if (!fired)
			break; /* past the last request of a pass */
	}
	print_message("%s%s: failed each of %llu requests in turn\n",
		      kind == CAIRN_FAULT_EIO ? "EIO" : "short", persistent ? " persistent" : "",
		      (unsigned long long)(n - 1));
	assert_true(n > 3);
	if (kind == CAIRN_FAULT_EIO)
		assert_true(seen * 2 >= n - 1); /* most injected EIOs reach the caller */
	free(buf);
}

static void test_each_request_eio(void **state) { each_request(CAIRN_FAULT_EIO, 0); }
static void test_each_request_short(void **state) { each_request(CAIRN_FAULT_SHORT, 0); }
static void test_each_request_persistent(void **state) { each_request(CAIRN_FAULT_EIO, 1); }

static void test_random(void **state)
{
	static const uint32_t rates[] = { 20, 200, 600 };
	uint8_t *buf = malloc(BUF);
	unsigned fired = 0;
	char what[96];

	assert_non_null(buf);
	for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
		for (uint64_t seed = 1; seed <= 30; seed++) {
			struct cairn_fault_config cfg = {
				.random_permille = rates[r], .seed = seed,
				.kind = seed % 3 ? CAIRN_FAULT_EIO : CAIRN_FAULT_SHORT,
				.persistent = seed % 5 == 0,
			};

			snprintf(what, sizeof(what), "random %u/1000 seed %llu", rates[r],
				 (unsigned long long)seed);
			fired += campaign_one(&cfg, buf, what, NULL) > 0;
		}
	}
	print_message("random faults: %u of 90 runs saw failures\n", fired);
	assert_true(fired > 30);
	free(buf);
}

static int setup_with(int plain_meta)
{
	struct cairn_image *im = NULL;
	uint8_t *buf = malloc(BUF);

	img = hostile_build_meta(&img_len, CAIRN_MKFS_NONE, 0, plain_meta);
	assert_non_null(buf);
	assert_int_equal(hostile_open(img, img_len, NULL, NULL, NULL, &im), 0);
	for (size_t i = 0; i < NITEMS; i++) {
		long n = get_item(im, &items[i], buf);

		if (n < 0)
			fail_msg("golden %s: %s", items[i].path, cairn_strerror((int)n));
		items[i].want = malloc((size_t)n + 1);
		assert_non_null(items[i].want);
		memcpy(items[i].want, buf, (size_t)n);
		items[i].want_len = (size_t)n;
	}
	/* The golden copy is the image's content, checked against the source. */
	assert_int_equal(items[1].want_len, 300 * 1024);
	for (size_t i = 0; i < items[1].want_len; i++)
		if (items[1].want[i] != hostile_byte(i, 2))
			fail_msg("golden /big differs from its source at %zu", i);
	cairn_image_close(im);
	free(buf);
	return 0;
}

/* The metadata as is, and in compressed blocks (CAIRN_INCOMPAT_META_Z): a
 * failed read of the block index or of a block is EIO, and not remembered. */
static int setup_plain(void **state)
{
	return setup_with(1);
}

static int setup_meta_z(void **state)
{
	return setup_with(0);
}

static int teardown(void **state)
{
	for (size_t i = 0; i < NITEMS; i++)
		free(items[i].want);
	free(img);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_request_eio),
		cmocka_unit_test(test_each_request_short),
		cmocka_unit_test(test_each_request_persistent),
		cmocka_unit_test(test_random),
	};

	int failed = cmocka_run_group_tests_name("plain metadata", tests, setup_plain, teardown);

	return failed + cmocka_run_group_tests_name("compressed metadata", tests, setup_meta_z,
						    teardown);
}
