/* SPDX-License-Identifier: MIT */
/*
 * Profiles (learned prefetch) over images made with cairn_mkfs: what a trace
 * matches in an image, what it skips, that prefetching it cuts device requests,
 * that a profile of another tree is harmless, that growth is bounded, and that a
 * saved profile survives the writer dying mid-write (kill -9, a write that fails).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cairn/cairn.h>
#include <cairn/mkfs.h>
#include <cairn/remote.h>
#include "util/tests/open_image.h"

#define NSMALL 20
#define SMALL  20000u
#define BIG    (4u << 20)

struct fixture {
	char dir[64];
	char img[96], other[96];
};

static void put(const char *dir, const char *rel, size_t size, unsigned seed)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	for (size_t i = 0; i < size; i++)
		fputc((int)((i * 31 + seed) & 0xff), f);
	fclose(f);
}

static void build(const char *src, const char *out)
{
	struct cairn_mkfs_opts mo;
	struct cairn_mkfs *m;

	cairn_mkfs_opts_init(&mo);
	mo.no_fsync = 1;
	assert_int_equal(cairn_mkfs_new(&mo, &m), 0);
	assert_int_equal(cairn_mkfs_add_tree(m, "/", src), 0);
	assert_int_equal(cairn_mkfs_write_path(m, out), 0);
	cairn_mkfs_free(m);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	char src[128], p[256];

	strcpy(fx->dir, "/tmp/cairn-profile-test.XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	/* The image: small files side by side, a big one, a directory, a symlink. */
	snprintf(src, sizeof(src), "%s/src", fx->dir);
	assert_int_equal(mkdir(src, 0755), 0);
	snprintf(p, sizeof(p), "%s/d", src);
	assert_int_equal(mkdir(p, 0755), 0);
	for (int i = 0; i < NSMALL; i++) {
		char rel[32];

		snprintf(rel, sizeof(rel), "d/f%02d", i);
		put(src, rel, SMALL, (unsigned)i);
	}
	put(src, "big", BIG, 7);
	snprintf(p, sizeof(p), "%s/link", src);
	assert_int_equal(symlink("big", p), 0);
	snprintf(fx->img, sizeof(fx->img), "%s/img", fx->dir);
	build(src, fx->img);
	/* Another tree: some of the same names, other sizes. */
	snprintf(src, sizeof(src), "%s/other", fx->dir);
	assert_int_equal(mkdir(src, 0755), 0);
	snprintf(p, sizeof(p), "%s/d", src);
	assert_int_equal(mkdir(p, 0755), 0);
	put(src, "d/f01", 100, 1);
	put(src, "big", 5000, 2);
	snprintf(fx->other, sizeof(fx->other), "%s/other.img", fx->dir);
	build(src, fx->other);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", fx->dir);
	if (system(cmd)) {
		/* left behind in /tmp; harmless */
	}
	free(fx);
	return 0;
}

/* Page-sized segments, so that each small file is a miss of its own. */
static struct cairn_image *open_img(const char *path)
{
	struct cairn_cache_config cc = { .segment_size = 4096 };
	struct cairn_image *img;

	assert_int_equal(t_open_image_with(path, &cc, 1, &img), 0);
	return img;
}

static uint64_t requests(struct cairn_image *img)
{
	struct cairn_bdev_counters c;

	assert_int_equal(t_requests(img, &c), 0);
	return c.requests;
}

struct ranges {
	uint64_t off[64], pos[64], len[64];
	size_t n;
};

static int collect(void *ctx, uint64_t off, uint64_t pos, uint64_t len)
{
	struct ranges *r = ctx;

	assert_true(r->n < 64);
	r->off[r->n] = off;
	r->pos[r->n] = pos;
	r->len[r->n++] = len;
	return 0;
}

static cairn_ino_t ino_of(struct cairn_image *img, const char *path)
{
	cairn_ino_t ino;

	assert_int_equal(cairn_image_resolve(img, path, 0, &ino), 0);
	return ino;
}

static void test_matches(void **state)
{
	struct fixture *fx = *state;
	struct cairn_image *img = open_img(fx->img);
	struct cairn_profile_stats st;
	struct ranges r = { .n = 0 };
	const char *text = "/big 8192 4096\n"
			   "/d/f03\n"                  /* whole file */
			   "/gone 0 4096\n"            /* not in the image */
			   "/d 0 4096\n"               /* a directory */
			   "/link 0 4096\n"            /* a symlink, not followed */
			   "/big 99999999 4096\n"      /* past the end */
			   "/big 4096 8192\n"          /* overlaps: only 4096..8192 is new */
			   "/big 4190208 100000\n"     /* cut at the end of the file */
			   "/big 12288 4096\n";        /* follows 8192+4096 in the file */

	assert_int_equal(cairn_image_hot_bytes(img), 0);
	assert_int_equal(cairn_image_profile_load(img, text, strlen(text), &st), 0);
	assert_int_equal(st.records, 9);
	assert_int_equal(st.missing, 3);
	assert_int_equal(st.past_eof, 1);
	assert_int_equal(st.bytes, 4096 + SMALL + 4096 + (BIG - 4190208) + 4096);
	assert_int_equal(cairn_image_hot_bytes(img), st.bytes);
	assert_int_equal(cairn_image_hot_ranges(img, ino_of(img, "/big"), collect, &r), 0);
	/* In the order first read: 8192 first, then the new part of the overlap. */
	assert_int_equal(r.n, 4);
	assert_int_equal(r.off[0], 8192);
	assert_int_equal(r.len[0], 4096);
	assert_int_equal(r.pos[0], 0);
	assert_int_equal(r.off[1], 4096);
	assert_int_equal(r.len[1], 4096);
	assert_int_equal(r.off[2], 4190208);
	assert_int_equal(r.len[2], BIG - 4190208);
	assert_int_equal(r.off[3], 12288);
	for (size_t i = 1; i < r.n; i++)
		assert_true(r.pos[i] > r.pos[i - 1]);
	r.n = 0;
	assert_int_equal(cairn_image_hot_ranges(img, ino_of(img, "/d/f03"), collect, &r), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.off[0], 0);
	assert_int_equal(r.len[0], SMALL);
	assert_int_equal(r.pos[0], 4096);
	r.n = 0;
	assert_int_equal(cairn_image_hot_ranges(img, ino_of(img, "/d/f04"), collect, &r), 0);
	assert_int_equal(r.n, 0);
	cairn_image_close(img);
}

/* Every other small file, read as a program would: a request each without a
 * profile (small files are fetched whole), a few merged ones with it. */
static void read_half(struct cairn_image *img)
{
	static char buf[SMALL];

	for (int i = 0; i < NSMALL; i += 2) {
		char path[32];

		snprintf(path, sizeof(path), "/d/f%02d", i);
		assert_int_equal(cairn_image_read(img, ino_of(img, path), buf, SMALL, 0), SMALL);
		for (size_t k = 0; k < SMALL; k += 997)
			assert_int_equal((unsigned char)buf[k], (k * 31 + (size_t)i) & 0xff);
	}
}

static void test_fewer_requests(void **state)
{
	struct fixture *fx = *state;
	struct cairn_image *img = open_img(fx->img);
	char text[1024];
	size_t len = 0;
	uint64_t before, plain, with;

	for (int i = 0; i < NSMALL; i += 2)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "/d/f%02d 0 %u\n", i, SMALL);
	/* Resolving the paths reads metadata: count from after that, both ways. */
	for (int i = 0; i < NSMALL; i++) {
		char path[32];

		snprintf(path, sizeof(path), "/d/f%02d", i);
		(void)ino_of(img, path);
	}
	before = requests(img);
	read_half(img);
	plain = requests(img) - before;
	cairn_image_close(img);

	img = open_img(fx->img);
	assert_int_equal(cairn_image_profile_load(img, text, len, NULL), 0);
	before = requests(img);
	cairn_image_prefetch_hot(img);
	read_half(img);
	cairn_cache_drain(cairn_image_cache(img));
	with = requests(img) - before;
	cairn_image_close(img);
	print_message("requests: %llu without the profile, %llu with it\n",
		      (unsigned long long)plain, (unsigned long long)with);
	assert_int_equal(plain, NSMALL / 2);
	assert_true(with <= 2); /* 400 KB: one max_io request (two if it straddles one) */
}

/* The image over a disk cache in dir (file -> disk cache -> cache -> image). */
static struct cairn_image *open_over_diskcache(const char *path, const char *dir)
{
	struct cairn_diskcache_config dc = { .dir = dir, .key = "k", .chunk_bytes = 65536 };
	/* A budget a quarter of which the profile's 216 KiB pass (prefetch_hot). */
	struct cairn_cache_config cc = { .segment_size = 65536, .budget_bytes = 512u << 10 };
	struct cairn_bdev *file, *disk;
	struct cairn_cache *cache;
	struct cairn_image *img;

	assert_int_equal(cairn_bdev_file_open(path, 0, &file), 0);
	assert_int_equal(cairn_bdev_diskcache_new(file, &dc, &disk), 0);
	assert_int_equal(cairn_cache_new(disk, &cc, &cache), 0);
	assert_int_equal(cairn_image_open(cache, NULL, 0, &img), 0);
	return img;
}

static uint64_t diskcache_misses(struct cairn_image *img)
{
	struct cairn_diskcache_stats st;

	assert_int_equal(cairn_bdev_diskcache_stats(cairn_cache_bdev(cairn_image_cache(img)),
						    &st), 0);
	return st.misses;
}

/* A profile whose data the disk cache already holds, more than a quarter of the
 * cache's budget, is not prefetched or kept (its hot ranges stay, for a push
 * that reads them there): it costs no round trip, and reading it all ahead
 * doubled a warm Java Hello mount's RSS. A small one, or one with a part
 * missing, is prefetched. */
static void test_held_profile_is_local(void **state)
{
	struct fixture *fx = *state;
	const char *text = "/big 1000000 200000\n/d/f03 0 20000\n";
	char dir[128];
	struct ranges r = { .n = 0 };
	struct cairn_cache_stats st;
	struct cairn_image *img;
	uint64_t ahead;

	snprintf(dir, sizeof(dir), "%s/dc", fx->dir);
	/* Cold: prefetched (filling the disk cache), hot ranges to push. */
	img = open_over_diskcache(fx->img, dir);
	assert_int_equal(cairn_image_profile_load(img, text, strlen(text), NULL), 0);
	assert_int_equal(cairn_image_prefetch_hot(img), 1);
	cairn_cache_drain(cairn_image_cache(img));
	assert_true(diskcache_misses(img) > 0);
	assert_int_equal(cairn_image_hot_ranges(img, ino_of(img, "/big"), collect, &r), 0);
	assert_int_equal(r.n, 1);
	cairn_image_close(img);
	/* Warm: all held, so nothing is read ahead; the ranges are still hot. */
	img = open_over_diskcache(fx->img, dir);
	assert_int_equal(cairn_image_profile_load(img, text, strlen(text), NULL), 0);
	cairn_cache_drain(cairn_image_cache(img)); /* the metadata the load read ahead */
	cairn_cache_get_stats(cairn_image_cache(img), &st);
	ahead = st.readahead_bytes;
	assert_int_equal(cairn_image_prefetch_hot(img), 0);
	cairn_cache_drain(cairn_image_cache(img));
	cairn_cache_get_stats(cairn_image_cache(img), &st);
	assert_int_equal(st.readahead_bytes, ahead);
	r.n = 0;
	assert_int_equal(cairn_image_hot_ranges(img, ino_of(img, "/big"), collect, &r), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(diskcache_misses(img), 0);
	cairn_image_close(img);
	/* Small (a quarter of the budget at most), held: prefetched. */
	img = open_over_diskcache(fx->img, dir);
	assert_int_equal(cairn_image_profile_load(img, "/d/f03 0 20000\n", 15, NULL), 0);
	assert_int_equal(cairn_image_prefetch_hot(img), 1);
	cairn_cache_drain(cairn_image_cache(img));
	cairn_image_close(img);
	/* A range not cached yet: prefetched again. */
	img = open_over_diskcache(fx->img, dir);
	assert_int_equal(cairn_image_profile_load(img, "/big 3000000 200000\n", 20, NULL), 0);
	assert_int_equal(cairn_image_prefetch_hot(img), 1);
	cairn_cache_drain(cairn_image_cache(img));
	assert_true(diskcache_misses(img) > 0);
	cairn_image_close(img);
}

static uint64_t dropped(struct cairn_image *img)
{
	struct cairn_cache_stats st;

	cairn_cache_get_stats(cairn_image_cache(img), &st);
	return st.dropped;
}

/* A profile mount keeps only the profile's ranges for the push: what a reader
 * got elsewhere in the file goes at once, and once a range is pushed, the
 * file's bytes around it in its segments (the prefetch's gap fill, which no
 * range covers) go too. Both stayed resident for good (a profile mount held
 * 31 MiB after a cold Java Hello). */
static void test_profile_mount_lean(void **state)
{
	struct fixture *fx = *state;
	struct cairn_cache_config cc = { .segment_size = 65536 };
	const char *text = "/big 1000000 4096\n";
	static char buf[4 * 65536];
	struct cairn_image *img;
	cairn_ino_t big;
	uint64_t d0, n;

	assert_int_equal(t_open_image_with(fx->img, &cc, 1, &img), 0);
	big = ino_of(img, "/big");
	assert_int_equal(cairn_image_profile_load(img, text, strlen(text), NULL), 0);
	cairn_image_prefetch_hot(img);
	cairn_cache_drain(cairn_image_cache(img));
	/* A read far from the range: delivered, its whole segments drop. */
	assert_int_equal(cairn_image_read(img, big, buf, sizeof(buf), 2000000), sizeof(buf));
	d0 = dropped(img);
	cairn_image_delivered(img, big, 2000000, sizeof(buf));
	assert_true(dropped(img) >= d0 + 2);
	/* Read but not pushed, the range's segment stays. */
	d0 = dropped(img);
	assert_int_equal(cairn_image_read(img, big, buf, 4096, 1000000), 4096);
	cairn_image_delivered(img, big, 1000000, 4096);
	assert_int_equal(dropped(img), d0);
	/* Pushed: the segment goes, the bytes around the range with it; a read of
	 * them later is right. */
	cairn_image_pushed(img, big, 1000000, 4096);
	assert_true(dropped(img) >= d0 + 1);
	n = requests(img);
	assert_int_equal(cairn_image_read(img, big, buf, 8192, 1000000 - 8192), 8192);
	for (size_t i = 0; i < 8192; i++)
		assert_int_equal((unsigned char)buf[i], ((1000000 - 8192 + i) * 31 + 7) & 0xff);
	assert_true(requests(img) > n);
	cairn_image_close(img);
}

static void test_other_tree_harmless(void **state)
{
	struct fixture *fx = *state;
	struct cairn_image *other = open_img(fx->other), *img;
	struct cairn_profile_stats st;
	char path[128];
	const char *text = "/big 0 4194304\n/d/f01 0 20000\n/d/f02 0 20000\n";
	struct ranges r = { .n = 0 };
	static char buf[BIG];

	/* A profile learned on one image, used on the other, both ways. */
	assert_int_equal(cairn_image_profile_load(other, text, strlen(text), &st), 0);
	assert_int_equal(st.missing, 1);
	assert_int_equal(st.bytes, 5000 + 100);
	snprintf(path, sizeof(path), "%s/learned", fx->dir);
	assert_int_equal(cairn_image_profile_save(other, NULL, path, NULL), 0);
	assert_int_equal(cairn_image_hot_ranges(other, ino_of(other, "/big"), collect, &r), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.len[0], 5000);
	cairn_image_prefetch_hot(other);
	assert_int_equal(cairn_image_read(other, ino_of(other, "/big"), buf, BIG, 0), 5000);
	for (size_t k = 0; k < 5000; k++)
		assert_int_equal((unsigned char)buf[k], (k * 31 + 2) & 0xff);
	cairn_image_close(other);

	img = open_img(fx->img);
	assert_int_equal(cairn_image_profile_load_file(img, path, &st), 0);
	assert_int_equal(st.missing, 0);
	assert_int_equal(st.bytes, 5000 + 100);
	cairn_image_prefetch_hot(img);
	assert_int_equal(cairn_image_read(img, ino_of(img, "/big"), buf, BIG, 0), BIG);
	for (size_t k = 0; k < BIG; k += 4093)
		assert_int_equal((unsigned char)buf[k], (k * 31 + 7) & 0xff);
	read_half(img);
	cairn_image_close(img);
}

static uint64_t misses(struct cairn_image *img)
{
	struct cairn_cache_stats st;

	cairn_cache_get_stats(cairn_image_cache(img), &st);
	return st.misses;
}

/* Reads len bytes of /big at off, checks them, and returns the segments the
 * read missed (requests would count the cache's readahead too). */
static uint64_t read_misses(struct cairn_image *img, cairn_ino_t big, uint64_t off, size_t len)
{
	static char buf[65536];
	uint64_t n = misses(img);

	assert_true(len <= sizeof(buf));
	assert_int_equal(cairn_image_read(img, big, buf, len, off), (ssize_t)len);
	for (size_t i = 0; i < len; i++)
		assert_int_equal((unsigned char)buf[i], ((off + i) * 31 + 7) & 0xff);
	return misses(img) - n;
}

/* The image at path with the profile text loaded and prefetched (the cache
 * drained); *big is /big's inode. */
static struct cairn_image *open_prefetched(const char *path, const struct cairn_cache_config *cc,
					   const char *text, cairn_ino_t *big)
{
	struct cairn_image *img;

	assert_int_equal(t_open_image_with(path, cc, 1, &img), 0);
	*big = ino_of(img, "/big");
	assert_int_equal(cairn_image_profile_load(img, text, strlen(text), NULL), 0);
	cairn_image_prefetch_hot(img);
	cairn_cache_drain(cairn_image_cache(img));
	return img;
}

/* A hole of at most two segments between two ranges of one file is fetched
 * with them (a run reads pages next to the traced run's); a longer one is not.
 * The hole is no range's: it is neither kept nor pushed as one. */
static void test_fills_holes(void **state)
{
	struct fixture *fx = *state;
	struct cairn_cache_config cc = { .segment_size = 65536 };
	/* /big starts 8 KiB into a segment: ranges in segments 1, 4 and 15 of the
	 * device, holes of 2 whole segments (2 and 3) and of 10. Without the fill,
	 * neither hole joins a run: a run takes gaps no larger than its wanted part. */
	const char *text = "/big 100000 4096\n/big 254952 4096\n/big 1000000 4096\n";
	struct ranges r = { .n = 0 };
	cairn_ino_t big;
	struct cairn_image *img = open_prefetched(fx->img, &cc, text, &big);

	assert_int_equal(cairn_image_hot_ranges(img, big, collect, &r), 0);
	assert_int_equal(r.n, 3);
	/* first, before a stream of reads makes the cache read ahead */
	assert_true(read_misses(img, big, 500000, 4096) > 0);
	assert_int_equal(read_misses(img, big, 122880, 65536), 0);
	assert_int_equal(read_misses(img, big, 188416, 65536), 0);
	cairn_image_close(img);
}

/* With segments smaller than 128 KiB the holes are still counted in 128 KiB:
 * the pages a run reads beside the traced ones come in the kernel's read-ahead
 * windows, whatever the segment. */
static void test_fills_holes_small_segments(void **state)
{
	struct fixture *fx = *state;
	struct cairn_cache_config cc = { .segment_size = 32768 };
	/* /big starts 8 KiB into a 64 KiB segment: ranges in 32 KiB segments 3 and
	 * 7, a hole of 3 whole segments (4 to 6), more than FILL_SEGS of 32 KiB but
	 * none of 128 KiB; then one of 23 segments (8 to 30), too long either way. */
	const char *text = "/big 100000 4096\n/big 230000 4096\n/big 1000000 4096\n";
	cairn_ino_t big;
	struct cairn_image *img = open_prefetched(fx->img, &cc, text, &big);

	assert_true(read_misses(img, big, 500000, 4096) > 0);
	assert_int_equal(read_misses(img, big, 131072 - 8192, 32768), 0);
	assert_int_equal(read_misses(img, big, 196608 - 8192, 32768), 0);
	cairn_image_close(img);
}

static void test_garbage(void **state)
{
	struct fixture *fx = *state;
	struct cairn_image *img = open_img(fx->img);
	struct cairn_profile_stats st;
	static char text[1 << 16];

	srand(17);
	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = (char)(rand() & 0xff);
	assert_int_equal(cairn_image_profile_load(img, text, sizeof(text), &st), 0);
	assert_int_equal(st.bytes, 0);
	cairn_image_prefetch_hot(img);
	read_half(img);
	cairn_image_close(img);
}

/* A path with a NUL in it (raw, or written \000) names no file: not the file
 * its first part names, and a second record of it is looked up as the same
 * path, not compared past the end of the first part (a heap read ASan saw). */
static void test_nul_in_path(void **state)
{
	static const char text[] = "/big\\000x 0 4\n/big\\000x 0 4\n/big\0y 0 4\n/big\0y 8 4\n"
				   "/d/f01 0 4\n";
	struct fixture *fx = *state;
	struct cairn_image *img = open_img(fx->img);
	struct cairn_profile_stats st;
	struct ranges r = { .n = 0 };

	assert_int_equal(cairn_image_profile_load(img, text, sizeof(text) - 1, &st), 0);
	assert_int_equal(st.records, 5);
	assert_int_equal(st.missing, 4);
	assert_int_equal(st.ranges, 1);
	assert_int_equal(st.bytes, 4);
	assert_int_equal(cairn_image_hot_ranges(img, ino_of(img, "/big"), collect, &r), 0);
	assert_int_equal(r.n, 0); /* /big is not in the profile */
	cairn_image_close(img);
}

/* Names of one file ("/big", "big", "/./big", "/d/../big") are that file: its
 * bytes are in the profile once, and its ranges come in profile order (they
 * were kept per name: twice the bytes, and pushed out of order). */
static void test_names_of_one_file(void **state)
{
	static const char text[] = "/big 0 15\nbig 0 15\n/./big 0 100\n/d/../big 50 100\n";
	struct fixture *fx = *state;
	struct cairn_image *img = open_img(fx->img);
	struct cairn_profile_stats st;
	struct ranges r = { .n = 0 };

	assert_int_equal(cairn_image_profile_load(img, text, sizeof(text) - 1, &st), 0);
	assert_int_equal(st.records, 4);
	assert_int_equal(st.missing, 0);
	assert_int_equal(st.bytes, 150);
	assert_int_equal(st.ranges, 1);
	assert_int_equal(cairn_image_hot_ranges(img, ino_of(img, "/big"), collect, &r), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.off[0], 0);
	assert_int_equal(r.len[0], 150);
	cairn_image_close(img);
}

/* A profile file that is not a regular file is refused, at once: a FIFO
 * (whose open would wait for a writer forever: the alarm fails the test
 * then), a directory; a missing one is -ENOENT. */
static void test_file_not_regular(void **state)
{
	struct fixture *fx = *state;
	struct cairn_image *img = open_img(fx->img);
	char p[128];

	alarm(60);
	snprintf(p, sizeof(p), "%s/fifo", fx->dir);
	assert_int_equal(mkfifo(p, 0644), 0);
	assert_int_equal(cairn_image_profile_load_file(img, p, NULL), -EINVAL);
	assert_int_equal(cairn_image_profile_load_file(img, fx->dir, NULL), -EINVAL);
	snprintf(p, sizeof(p), "%s/none", fx->dir);
	assert_int_equal(cairn_image_profile_load_file(img, p, NULL), -ENOENT);
	alarm(0);
	assert_int_equal(cairn_image_hot_bytes(img), 0);
	cairn_image_close(img);
}

/* A text of n distinct 4-byte ranges of /big, 8 bytes apart. */
static char *many_ranges(size_t n, size_t *len)
{
	size_t cap = n * 32, at = 0;
	char *t = malloc(cap);

	assert_non_null(t);
	for (size_t i = 0; i < n; i++)
		at += (size_t)snprintf(t + at, cap - at, "/big %zu 4\n", i * 8);
	*len = at;
	return t;
}

static void test_bounded(void **state)
{
	struct fixture *fx = *state;
	struct cairn_image *img = open_img(fx->img);
	struct cairn_profile_stats st;
	size_t len, n = CAIRN_PROFILE_MAX_RANGES + 1000;
	char *text = many_ranges(n, &len);

	assert_int_equal(cairn_image_profile_load(img, text, len, &st), 0);
	assert_int_equal(st.ranges, CAIRN_PROFILE_MAX_RANGES);
	assert_int_equal(st.dropped, 1000);
	/* Loading it again adds nothing: every range is there already, or dropped. */
	assert_int_equal(cairn_image_profile_load(img, text, len, &st), 0);
	assert_int_equal(st.ranges, CAIRN_PROFILE_MAX_RANGES);
	free(text);
	cairn_image_close(img);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* The profile file is either what it was or the whole new one. */
static void assert_old_or_new(const char *path, const char *old, size_t old_len,
			      const char *new, size_t new_len, int *saw_new)
{
	size_t len;
	char *now = slurp(path, &len);

	assert_non_null(now);
	if (len == new_len && !memcmp(now, new, len))
		*saw_new = 1;
	else if (len != old_len || memcmp(now, old, len))
		fail_msg("%s is neither the old profile nor the new one (%zu bytes)", path, len);
	free(now);
}

/* Does what a learning mount does at unmount, in a child: loads the profile at
 * out, joins the trace to it and saves it. Returns the child's pid. */
static pid_t save_child(const char *img_path, const char *trace, const char *out,
			rlim_t fsize)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct cairn_image *img;
		struct rlimit rl = { fsize, fsize };

		if (fsize != RLIM_INFINITY) {
			signal(SIGXFSZ, SIG_IGN);
			setrlimit(RLIMIT_FSIZE, &rl);
		}
		if (t_open_image(img_path, &img) ||
		    cairn_image_profile_load_file(img, out, NULL))
			_exit(2);
		_exit(cairn_image_profile_save(img, trace, out, NULL) ? 1 : 0);
	}
	return pid;
}

static void test_save_survives_kill(void **state)
{
	struct fixture *fx = *state;
	char trace[128], path[128], ref[128], cmd[512];
	size_t len, old_len, new_len;
	char *text = many_ranges(CAIRN_PROFILE_MAX_RANGES / 2, &len), *old, *new;
	struct cairn_image *img;
	struct timespec t0, t1;
	int status, saw_new = 0;
	long ns;
	FILE *f;

	snprintf(trace, sizeof(trace), "%s/trace", fx->dir);
	snprintf(path, sizeof(path), "%s/app.profile", fx->dir);
	snprintf(ref, sizeof(ref), "%s/ref.profile", fx->dir);
	f = fopen(trace, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
	free(text);
	/* The old profile: two ranges; the new one: many (some MB of text). */
	img = open_img(fx->img);
	assert_int_equal(cairn_image_profile_load(img, "/d/f01\n/big 0 4096\n", 19, NULL), 0);
	assert_int_equal(cairn_image_profile_save(img, NULL, path, NULL), 0);
	assert_int_equal(cairn_image_profile_save(img, trace, ref, NULL), 0);
	cairn_image_close(img);
	old = slurp(path, &old_len);
	new = slurp(ref, &new_len);
	assert_non_null(old);
	assert_non_null(new);
	assert_true(new_len > 1000000);
	assert_true(old_len < new_len);

	/* A write that fails half-way (the file size limit) leaves the old file. */
	assert_true(waitpid(save_child(fx->img, trace, path, new_len / 2), &status, 0) > 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	assert_old_or_new(path, old, old_len, new, new_len, &saw_new);
	assert_false(saw_new);

	/* kill -9 at moments spread over a whole save (timed on a copy). */
	f = fopen(ref, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(old, 1, old_len, f), old_len);
	fclose(f);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_true(waitpid(save_child(fx->img, trace, ref, RLIM_INFINITY), &status, 0) > 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_old_or_new(ref, old, old_len, new, new_len, &saw_new);
	assert_true(saw_new);
	saw_new = 0;
	ns = (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec);
	for (int i = 0; i < 24; i++) {
		pid_t pid = save_child(fx->img, trace, path, RLIM_INFINITY);
		struct timespec d = { 0, ns * i / 20 % 1000000000L };

		nanosleep(&d, NULL);
		kill(pid, SIGKILL);
		assert_true(waitpid(pid, &status, 0) > 0);
		assert_old_or_new(path, old, old_len, new, new_len, &saw_new);
		if (saw_new) { /* put the old one back for the next round */
			f = fopen(path, "w");
			assert_non_null(f);
			assert_int_equal(fwrite(old, 1, old_len, f), old_len);
			fclose(f);
			saw_new = 0;
		}
	}
	/* Temporary files of killed writers are left beside it, never in its place. */
	snprintf(cmd, sizeof(cmd), "rm -f %s.??????", path);
	if (system(cmd)) {
		/* nothing to remove */
	}
	free(old);
	free(new);
}

/* Resolving a profile asks for the metadata at once (large requests the
 * workers send in parallel), rather than one dependent read per directory and
 * inode block the paths cross: on a remote image each would be a round trip
 * before the mount answers. A tree of many directories, page-sized segments,
 * a profile naming a file in every directory. */
#define NDIRS 150
#define PER_DIR 8
static void test_meta_batched(void **state)
{
	struct fixture *fx = *state;
	struct cairn_image_info info;
	struct cairn_image *img;
	char src[160], p[256], img_path[160], *text = malloc(NDIRS * 64);
	size_t len = 0;
	uint64_t before, used;

	assert_non_null(text);
	snprintf(src, sizeof(src), "%s/many", fx->dir);
	assert_int_equal(mkdir(src, 0755), 0);
	for (int d = 0; d < NDIRS; d++) {
		snprintf(p, sizeof(p), "%s/directory-with-a-long-name-%03d", src, d);
		assert_int_equal(mkdir(p, 0755), 0);
		for (int f = 0; f < PER_DIR; f++) {
			char rel[96];

			snprintf(rel, sizeof(rel), "directory-with-a-long-name-%03d/file-%02d", d, f);
			put(src, rel, 10, (unsigned)f);
		}
		len += (size_t)snprintf(text + len, 64, "/directory-with-a-long-name-%03d/file-%02d\n",
					d, d % PER_DIR);
	}
	snprintf(img_path, sizeof(img_path), "%s/many.cairn", fx->dir);
	build(src, img_path);
	img = open_img(img_path);
	cairn_image_get_info(img, &info);
	assert_true(info.meta_len > 16 * 4096); /* many segments of metadata */
	before = requests(img);
	assert_int_equal(cairn_image_profile_load(img, text, len, NULL), 0);
	cairn_cache_drain(cairn_image_cache(img));
	used = requests(img) - before;
	print_message("metadata %llu bytes: %llu requests to resolve %d paths\n",
		      (unsigned long long)info.meta_len, (unsigned long long)used, NDIRS);
	/* All of it in max_io (1 MiB) requests, a few more where a lookup was
	 * quicker than the worker that had it queued. */
	assert_true(used <= info.meta_len / (1u << 20) + 4);
	cairn_image_close(img);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_matches, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fewer_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_tree_harmless, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nul_in_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_not_regular, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names_of_one_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_save_survives_kill, setup, teardown),
		cmocka_unit_test_setup_teardown(test_meta_batched, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profile_mount_lean, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fills_holes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fills_holes_small_segments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_profile_is_local, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
