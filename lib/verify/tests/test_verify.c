/* SPDX-License-Identifier: MIT */
/*
 * Verified images end to end: a small tree goes through mkfs (4 KiB granules)
 * into an image, then
 *  - every byte of it is flipped in turn, and the image is opened with its root
 *    digest pinned and every file, link and directory read back: each flip is
 *    refused at open or fails the reads that need it, and whatever read succeeds
 *    returns the original bytes (never wrong data with success); the whole-image
 *    scan (cairn digest) detects every flip;
 *  - a wrong pinned root, and a pinned root on an image without digests, refuse;
 *  - two builds of one tree have one root digest;
 *  - a bad granule fails only the reads that need it: the cache checks a
 *    merged run segment by segment, and fetches the bad one again on the next
 *    read; a bad granule among the neighbours a read was widened to costs no
 *    request more (they are checked apart, not fetched again);
 *  - bytes fetched ahead (widened reads, prefetch) are checked on a worker,
 *    or by the first read that needs them if it comes first (never twice),
 *    and a bad granule among them fails exactly those reads, each of which
 *    fetches it again;
 *  - readers on several threads, racing for unchecked segments and with the
 *    workers prefetching, get the right bytes or -CAIRN_EDIGEST for exactly
 *    the bad granule (TSan);
 *  - the verify device's open read is handed to the cache (no second request).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <cairn/cairn.h>
#include "util/tests/iov.h"

#define NFILES 4
static const char *const g_paths[NFILES] = { "/a", "/d/e", "/c", "/d/big" };
static const size_t g_sizes[NFILES] = { 5000, 3000, 100, 24000 };

struct fx {
	char root[64], src[96], img[96], img2[96];
	uint8_t want[NFILES][40000];
	uint8_t digest[CAIRN_DIGEST_LEN];
	uint8_t *bytes;
	size_t len;
};

static void put(struct fx *f, int i)
{
	char p[256];
	int fd;

	for (size_t k = 0; k < g_sizes[i]; k++)
		f->want[i][k] = (uint8_t)(k * 7 + (size_t)i * 31 + (k >> 8));
	snprintf(p, sizeof(p), "%s%s", f->src, g_paths[i]);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, f->want[i], g_sizes[i]), (ssize_t)g_sizes[i]);
	close(fd);
}

static void build(struct fx *f, const char *img, int no_verity, uint8_t root[CAIRN_DIGEST_LEN])
{
	struct cairn_mkfs_opts o;
	struct cairn_mkfs_stats st;
	struct cairn_mkfs *m;

	cairn_mkfs_opts_init(&o);
	o.set_mtime = 1;
	o.mtime = 1700000000;
	o.no_fsync = 1;
	o.granule_shift = 12;
	o.no_verity = no_verity;
	assert_int_equal(cairn_mkfs_new(&o, &m), 0);
	assert_int_equal(cairn_mkfs_add_tree(m, "/", f->src), 0);
	assert_int_equal(cairn_mkfs_add_symlink(m, "/l", "d/e"), 0);
	assert_int_equal(cairn_mkfs_write_path(m, img), 0);
	cairn_mkfs_get_stats(m, &st);
	assert_int_equal(st.verity, !no_verity);
	if (root)
		memcpy(root, st.root, CAIRN_DIGEST_LEN);
	cairn_mkfs_free(m);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char p[160];
	struct stat st;
	int fd;

	assert_non_null(f);
	snprintf(f->root, sizeof(f->root), "/tmp/cairn-verify-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	snprintf(f->src, sizeof(f->src), "%s/src", f->root);
	snprintf(f->img, sizeof(f->img), "%s/img", f->root);
	snprintf(f->img2, sizeof(f->img2), "%s/img2", f->root);
	assert_int_equal(mkdir(f->src, 0755), 0);
	snprintf(p, sizeof(p), "%s/d", f->src);
	assert_int_equal(mkdir(p, 0755), 0);
	for (int i = 0; i < NFILES; i++)
		put(f, i);
	build(f, f->img, 0, f->digest);
	fd = open(f->img, O_RDONLY);
	assert_true(fd >= 0 && !fstat(fd, &st));
	f->len = (size_t)st.st_size;
	f->bytes = malloc(f->len);
	assert_int_equal(pread(fd, f->bytes, f->len, 0), (ssize_t)f->len);
	close(fd);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->root);
	assert_int_equal(system(cmd), 0);
	free(f->bytes);
	free(f);
	return 0;
}

/* The configs the tests vary; open_path() hands them to the stack builder. */
struct vopts {
	struct cairn_cache_config cache;
	struct cairn_verify_config verify;
};

/* The stack builder's whole stack (file -> stats -> [verify] -> cache -> image). */
static int open_path(const char *path, const struct vopts *o, char *why, size_t why_len,
		     struct cairn_stack **s)
{
	struct cairn_stack_opts so;

	cairn_stack_opts_init(&so);
	so.cache = &o->cache;
	so.verify = &o->verify;
	return cairn_stack_open(path, &so, why, why_len, s);
}

/* 4 KiB segments, one per granule: a bad granule fails exactly its segment. */
static void opts_pinned(struct vopts *o, const uint8_t root[CAIRN_DIGEST_LEN])
{
	memset(o, 0, sizeof(*o));
	o->cache.segment_size = 4096;
	o->cache.budget_bytes = 1u << 20; /* opened once per flipped byte: keep it cheap */
	o->cache.threads = 1;
	if (root) {
		o->verify.has_root = 1;
		memcpy(o->verify.root, root, CAIRN_DIGEST_LEN);
	}
}

/* Reads everything; returns how many reads failed. A read that succeeds must
 * return the original bytes. */
static int read_all(struct fx *f, struct cairn_image *img)
{
	static uint8_t buf[40000];
	int failed = 0;
	cairn_ino_t ino;
	char target[16];
	ssize_t n;

	for (int i = 0; i < NFILES; i++) {
		struct cairn_stat st;

		if (cairn_image_resolve(img, g_paths[i], 1, &ino) || cairn_image_stat(img, ino, &st)) {
			failed++;
			continue;
		}
		assert_int_equal(st.size, g_sizes[i]);
		/* Read in two pieces, so a bad granule in one leaves the other served. */
		for (size_t off = 0; off < g_sizes[i]; off += 20000) {
			size_t len = g_sizes[i] - off < 20000 ? g_sizes[i] - off : 20000;

			n = cairn_image_read(img, ino, buf, len, off);
			if (n < 0) {
				assert_true(n == -CAIRN_EDIGEST || n == -CAIRN_ECORRUPT);
				failed++;
				continue;
			}
			assert_int_equal(n, (ssize_t)len);
			assert_memory_equal(buf, f->want[i] + off, len);
		}
	}
	if (cairn_image_resolve(img, "/l", 0, &ino) ||
	    (n = cairn_image_readlink(img, ino, target, sizeof(target))) < 0) {
		failed++;
	} else {
		assert_int_equal(n, 3);
		assert_memory_equal(target, "d/e", 3);
	}
	return failed;
}

static void write_byte(const char *path, size_t off, uint8_t v)
{
	int fd = open(path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &v, 1, (off_t)off), 1);
	close(fd);
}

/* Whether the full scan (cairn digest) sees the damage. */
static int scan_detects(struct fx *f)
{
	struct cairn_bdev *dev;
	uint8_t root[CAIRN_DIGEST_LEN];
	long n;

	assert_int_equal(cairn_bdev_mem_new(f->bytes, f->len, 0, &dev), 0);
	n = cairn_verify_scan(dev, root, NULL, NULL);
	cairn_bdev_close(dev);
	return n != 0 || memcmp(root, f->digest, CAIRN_DIGEST_LEN);
}

/* The stack lib/stack builds, over `bytes` (f->len of them) in memory:
 * [stats ->] verify -> cache -> image, without the open read primed into the
 * cache, so every segment a read needs is fetched. *stats (may be NULL) gets
 * the stats device. */
static int open_bytes(struct fx *f, const uint8_t *bytes, const struct vopts *o,
		      struct cairn_image **img, struct cairn_bdev **stats)
{
	struct cairn_bdev *mem, *v;
	struct cairn_cache *c;
	int rc;

	assert_int_equal(cairn_bdev_mem_new(bytes, f->len, 0, &mem), 0);
	if (stats) {
		assert_int_equal(cairn_bdev_stats_new(mem, stats), 0);
		mem = *stats;
	}
	rc = cairn_bdev_verify_new(mem, &o->verify, NULL, 0, &v);
	if (rc) {
		cairn_bdev_close(mem);
		return rc;
	}
	assert_int_equal(cairn_cache_new(v, &o->cache, &c), 0);
	rc = cairn_image_open(c, NULL, 0, img);
	if (rc)
		cairn_cache_free(c);
	return rc;
}

static int open_mem(struct fx *f, const struct vopts *o, struct cairn_image **img)
{
	return open_bytes(f, f->bytes, o, img, NULL);
}

static void test_flip_every_byte(void **state)
{
	struct fx *f = *state;
	struct vopts o;
	unsigned refused = 0, eio = 0, unnoticed = 0;

	opts_pinned(&o, f->digest);
	for (size_t i = 0; i < f->len; i++) {
		struct cairn_image *img = NULL;

		f->bytes[i] ^= 0x5a;
		if (open_mem(f, &o, &img) < 0)
			refused++;
		else if (read_all(f, img))
			eio++;
		else
			unnoticed++; /* a byte no read needs: the data still matched */
		cairn_image_close(img);
		assert_true(scan_detects(f));
		f->bytes[i] ^= 0x5a;
	}
	print_message("%zu flips: %u refused at open, %u failed reads, %u read nothing bad\n",
		      f->len, refused, eio, unnoticed);
	assert_true(refused > 0 && eio > 0);
}

static void test_pinned_root(void **state)
{
	struct fx *f = *state;
	struct vopts o;
	struct cairn_stack *stk;
	struct cairn_image *img;
	uint8_t wrong[CAIRN_DIGEST_LEN], root[CAIRN_DIGEST_LEN];
	struct cairn_bdev_counters dc;
	char why[256];

	memcpy(wrong, f->digest, sizeof(wrong));
	wrong[31] ^= 1;
	opts_pinned(&o, wrong);
	assert_int_equal(open_path(f->img, &o, why, sizeof(why), &stk),
			 -CAIRN_EDIGEST);
	assert_non_null(strstr(why, "root digest is sha256:"));
	opts_pinned(&o, f->digest);
	assert_int_equal(open_path(f->img, &o, NULL, 0, &stk), 0);
	img = cairn_stack_image(stk);
	assert_int_equal(cairn_image_root_digest(img, root), 0);
	assert_memory_equal(root, f->digest, sizeof(root));
	assert_int_equal(read_all(f, img), 0);
	/* The image is smaller than the verify device's open read, which the cache
	 * was primed with: everything was read in that one request. */
	assert_int_equal(cairn_stack_counters(stk, &dc), 0);
	assert_int_equal(dc.requests, 1);
	cairn_stack_close(stk);
	/* Without digests a pinned root cannot be met, and the reason says so (it
	 * named a "root digest" made of block 0 that the image does not have);
	 * unpinned, it opens. */
	build(f, f->img2, 1, NULL);
	assert_int_equal(open_path(f->img2, &o, why, sizeof(why), &stk),
			 -CAIRN_EDIGEST);
	assert_non_null(strstr(why, "the image has no digests"));
	opts_pinned(&o, NULL);
	assert_int_equal(open_path(f->img2, &o, NULL, 0, &stk), 0);
	img = cairn_stack_image(stk);
	assert_int_equal(cairn_image_root_digest(img, root), -ENODATA);
	cairn_stack_close(stk);
}

static void test_reproducible(void **state)
{
	struct fx *f = *state;
	uint8_t root[CAIRN_DIGEST_LEN];

	build(f, f->img2, 0, root);
	assert_memory_equal(root, f->digest, sizeof(root));
}

/* A bad granule inside one large merged request: only the reads that need it
 * fail, every time (it is never cached as good), and the rest are served. */
static void test_bad_granule_alone(void **state)
{
	struct fx *f = *state;
	struct vopts o;
	struct cairn_stack *stk;
	struct cairn_image *img;
	struct cairn_verify_stats vs;
	struct cairn_bdev_error e;
	static uint8_t buf[40000];
	const size_t size = g_sizes[3];
	uint64_t lo, hi;
	cairn_ino_t ino;

	opts_pinned(&o, f->digest);
	assert_int_equal(open_path(f->img, &o, NULL, 0, &stk), 0);
	img = cairn_stack_image(stk);
	assert_int_equal(cairn_image_resolve(img, "/d/big", 1, &ino), 0);
	assert_int_equal(cairn_image_file_extent(img, ino, &lo, &hi), 0);
	cairn_stack_close(stk);
	write_byte(f->img, (size_t)lo + 3 * 4096 + 5, (uint8_t)(f->bytes[lo + 3 * 4096 + 5] ^ 1));
	assert_int_equal(open_path(f->img, &o, NULL, 0, &stk), 0);
	img = cairn_stack_image(stk);
	for (int round = 0; round < 2; round++) {
		/* The whole file in one read: one merged request, then piece by piece. */
		assert_int_equal(cairn_image_read(img, ino, buf, size, 0), -CAIRN_EDIGEST);
		assert_int_equal(cairn_image_read(img, ino, buf, 4096, 0), 4096);
		assert_memory_equal(buf, f->want[3], 4096);
		assert_int_equal(cairn_image_read(img, ino, buf, 4096, 4 * 4096), 4096);
		assert_memory_equal(buf, f->want[3] + 4 * 4096, 4096);
		assert_int_equal(cairn_image_read(img, ino, buf, 10, 3 * 4096), -CAIRN_EDIGEST);
	}
	assert_int_equal(cairn_bdev_verify_stats(cairn_cache_bdev(cairn_image_cache(img)), &vs), 0);
	assert_true(vs.mismatches >= 4);
	assert_int_equal(vs.first_bad_off, lo + 3 * 4096);
	/* The mismatch is recorded as the failure, named by the file under it. */
	assert_int_equal(cairn_image_last_error(img, &e), 1);
	assert_int_equal(e.err, -CAIRN_EDIGEST);
	assert_int_equal(e.off, lo + 3 * 4096);
	assert_string_equal(e.device, f->img);
	assert_non_null(strstr(e.cause, "does not match its SHA-256 digest"));
	cairn_stack_close(stk);
	/* Without verification the bad byte is served: that is what "none" means. */
	o.verify.off = 1;
	o.verify.has_root = 0;
	assert_int_equal(open_path(f->img, &o, NULL, 0, &stk), 0);
	img = cairn_stack_image(stk);
	assert_int_equal(cairn_image_read(img, ino, buf, size, 0), (ssize_t)size);
	assert_true(memcmp(buf, f->want[3], size) != 0);
	cairn_stack_close(stk);
	write_byte(f->img, (size_t)lo + 3 * 4096 + 5, f->bytes[lo + 3 * 4096 + 5]);
}

/* A copy of the image with one byte of /d/big's granule `g` flipped; *ino and
 * *lo get the file and its first byte. */
static uint8_t *bad_copy(struct fx *f, unsigned g, cairn_ino_t *ino, uint64_t *lo)
{
	struct vopts o;
	struct cairn_image *img;
	uint64_t hi;
	uint8_t *copy = malloc(f->len);

	assert_non_null(copy);
	opts_pinned(&o, f->digest);
	assert_int_equal(open_mem(f, &o, &img), 0);
	assert_int_equal(cairn_image_resolve(img, "/d/big", 1, ino), 0);
	assert_int_equal(cairn_image_file_extent(img, *ino, lo, &hi), 0);
	cairn_image_close(img);
	memcpy(copy, f->bytes, f->len);
	copy[*lo + g * 4096 + 5] ^= 1;
	return copy;
}

/* What a pinned image read lent, copied out; calls counts the lendings. */
struct lent_copy {
	uint8_t *buf;
	size_t cap;
	int calls;
};

static int copy_lent(void *ctx, const struct iovec *iov, int iovcnt, size_t total)
{
	struct lent_copy *l = ctx;

	l->calls++;
	assert_int_equal(t_iov_gather(l->buf, l->cap, iov, iovcnt), total);
	return 0;
}

/* A pinned read (cairn_image_read_pinned: the FUSE reply lent the segment
 * cache's memory) of a bad granule fails as a copied one does, before lending
 * anything; the good granules around it are lent, right. */
static void test_bad_granule_pinned(void **state)
{
	struct fx *f = *state;
	struct vopts o;
	struct cairn_image *img;
	static uint8_t buf[40000];
	struct lent_copy l = { buf, sizeof(buf), 0 };
	const size_t size = g_sizes[3];
	cairn_ino_t ino;
	uint64_t lo;
	uint8_t *copy = bad_copy(f, 3, &ino, &lo);

	opts_pinned(&o, f->digest);
	assert_int_equal(open_bytes(f, copy, &o, &img, NULL), 0);
	for (int round = 0; round < 2; round++) {
		assert_int_equal(cairn_image_read_pinned(img, ino, size, 0, copy_lent, &l),
				 -CAIRN_EDIGEST);
		assert_int_equal(l.calls, round);
		assert_int_equal(cairn_image_read_pinned(img, ino, 4096, 4 * 4096, copy_lent, &l), 0);
		assert_int_equal(l.calls, round + 1);
		assert_memory_equal(buf, f->want[3] + 4 * 4096, 4096);
		assert_int_equal(cairn_image_read_pinned(img, ino, 10, 3 * 4096, copy_lent, &l),
				 -CAIRN_EDIGEST);
	}
	assert_int_equal(l.calls, 2);
	cairn_image_close(img);
	free(copy);
}

static uint64_t requests(struct cairn_bdev *stats)
{
	struct cairn_bdev_counters n;

	assert_int_equal(cairn_bdev_get_stats(stats, &n), 0);
	return n.requests;
}

/* A 4 KiB read of a small file is widened to the whole file (one request); a
 * bad granule in the part it did not ask for must neither fail it nor make the
 * cache fetch the run again (it did, segment by segment, when the run was
 * checked as one). The neighbours are checked on a worker: the good ones are
 * cached, the bad one is left unchecked and fails the first read that needs
 * it with no request more (those are the bytes it would have been given);
 * every later read fetches it again, alone. */
static void test_bad_neighbour_no_refetch(void **state)
{
	struct fx *f = *state;
	struct vopts o;
	struct cairn_image *img;
	struct cairn_bdev *stats;
	struct cairn_verify_stats vs;
	static uint8_t buf[4096];
	cairn_ino_t ino;
	uint64_t lo, hi, n0;
	uint8_t *copy = bad_copy(f, 3, &ino, &lo);

	opts_pinned(&o, f->digest);
	assert_int_equal(open_bytes(f, copy, &o, &img, &stats), 0);
	assert_int_equal(cairn_image_file_extent(img, ino, &lo, &hi), 0); /* the inode read */
	cairn_cache_drain(cairn_image_cache(img)); /* readahead the open's reads started */
	n0 = requests(stats);
	assert_int_equal(cairn_image_read(img, ino, buf, 4096, 0), 4096);
	assert_memory_equal(buf, f->want[3], 4096);
	cairn_cache_drain(cairn_image_cache(img));
	assert_int_equal(requests(stats) - n0, 1);
	/* Backwards: a sequential reader's readahead would fetch the failed
	 * segment again in the background, and the count would race it. */
	for (unsigned k = 5; k >= 1; k--) {
		size_t len = k == 5 ? g_sizes[3] - 5 * 4096 : 4096;

		if (k == 3)
			continue;
		assert_int_equal(cairn_image_read(img, ino, buf, len, k * 4096), (ssize_t)len);
		assert_memory_equal(buf, f->want[3] + k * 4096, len);
	}
	assert_int_equal(requests(stats) - n0, 1); /* all cached by the first request */
	/* Twice, so the second read is sequential: its readahead must not fetch
	 * the segment that just failed again. */
	for (unsigned round = 0; round < 3; round++) {
		assert_int_equal(cairn_image_read(img, ino, buf, 10, 3 * 4096), -CAIRN_EDIGEST);
		cairn_cache_drain(cairn_image_cache(img));
		assert_int_equal(requests(stats) - n0, 1 + round);
	}
	assert_int_equal(cairn_bdev_verify_stats(stats, &vs), -EINVAL); /* below verify */
	assert_int_equal(cairn_bdev_verify_stats(cairn_cache_bdev(cairn_image_cache(img)), &vs), 0);
	assert_int_equal(vs.mismatches, 3); /* one per failed read: the worker's trial is not one */
	assert_int_equal(vs.first_bad_off, lo + 3 * 4096);
	cairn_image_close(img);
	free(copy);
}

/* A device that holds back reads of [lo, hi) until opened (lo == hi: none):
 * it keeps the cache's only worker busy, so the checks queued for it wait. */
struct gate {
	struct cairn_bdev base;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t lo, hi;
	int open, waiting;
};

static ssize_t gate_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	struct gate *g = (struct gate *)dev;

	pthread_mutex_lock(&g->lock);
	if (off < g->hi && off + len > g->lo) {
		g->waiting++;
		pthread_cond_broadcast(&g->cond);
		while (!g->open)
			pthread_cond_wait(&g->cond, &g->lock);
	}
	pthread_mutex_unlock(&g->lock);
	return cairn_bdev_read(dev->below, buf, len, off);
}

static void gate_close(struct cairn_bdev *dev)
{
	struct gate *g = (struct gate *)dev;

	cairn_bdev_close(dev->below);
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
	free(g);
}

static const struct cairn_bdev_ops gate_ops = {
	.version = CAIRN_BDEV_OPS_VERSION,
	.name = "gate",
	.read = gate_read,
	.close = gate_close,
};

/* An empty cache (nothing read at open, unlike an image's) over `bytes`:
 * mem -> stats -> gate -> verify -> cache, with o's cache options. */
static struct cairn_cache *cache_over(struct fx *f, const uint8_t *bytes,
				      const struct vopts *o, struct cairn_bdev **stats,
				      struct gate **gate)
{
	struct cairn_bdev *mem, *v;
	struct cairn_cache *c;
	struct gate *g = calloc(1, sizeof(*g));

	assert_non_null(g);
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	assert_int_equal(cairn_bdev_mem_new(bytes, f->len, 0, &mem), 0);
	assert_int_equal(cairn_bdev_stats_new(mem, stats), 0);
	g->base.ops = &gate_ops;
	g->base.below = *stats;
	g->base.size = cairn_bdev_size(*stats);
	assert_int_equal(cairn_bdev_verify_new(&g->base, &o->verify, NULL, 0, &v), 0);
	assert_int_equal(cairn_cache_new(v, &o->cache, &c), 0);
	*gate = g;
	return c;
}

/* Granules c's verify device has hashed so far. */
static uint64_t hashed(struct cairn_cache *c)
{
	struct cairn_verify_stats vs;

	assert_int_equal(cairn_bdev_verify_stats(cairn_cache_bdev(c), &vs), 0);
	return vs.granules + vs.mismatches;
}

/* Reads the six 4 KiB pieces of /d/big ([lo, lo + size)) through c, as the
 * image would (the file's extent as the hint), from the last one back (not
 * sequential: no readahead races the counts): each must return its bytes,
 * piece 3 (bad) -CAIRN_EDIGEST. */
static void read_pieces(struct fx *f, struct cairn_cache *c, uint64_t lo)
{
	struct cairn_cache_hint h = { lo, lo + g_sizes[3] };
	static uint8_t buf[4096];

	for (unsigned k = 6; k-- > 0;) {
		size_t len = k == 5 ? g_sizes[3] - 5 * 4096 : 4096;
		ssize_t n = cairn_cache_read(c, buf, len, lo + k * 4096, &h);

		if (k == 3) {
			assert_int_equal(n, -CAIRN_EDIGEST);
			continue;
		}
		assert_int_equal(n, (ssize_t)len);
		assert_memory_equal(buf, f->want[3] + k * 4096, len);
	}
}

/* A bad granule fetched ahead (prefetch on a worker, as readahead) and checked
 * by a spare thread gives -CAIRN_EDIGEST to exactly the reads that need it:
 * the check leaves it unchecked, the first read fails on the bytes fetched,
 * and each later one fetches it again (a failure is not remembered, nor the
 * bytes). The good ones are checked once, by the spare thread. */
static void test_bad_granule_read_ahead(void **state)
{
	struct fx *f = *state;
	struct vopts o;
	struct cairn_bdev *stats;
	struct gate *g;
	struct cairn_cache *c;
	cairn_ino_t ino;
	uint64_t lo, n0, h0;
	uint8_t *copy = bad_copy(f, 3, &ino, &lo);

	opts_pinned(&o, f->digest);
	o.cache.threads = 2;
	c = cache_over(f, copy, &o, &stats, &g);
	n0 = requests(stats); /* the verify device's open read, */
	h0 = hashed(c);       /* whose granules it checks */
	cairn_cache_prefetch(c, lo, g_sizes[3]);
	cairn_cache_drain(c);
	assert_int_equal(requests(stats) - n0, 1);
	assert_int_equal(hashed(c) - h0, 5); /* the good five; the bad one's trial is no count */
	for (unsigned round = 0; round < 3; round++) {
		read_pieces(f, c, lo);
		cairn_cache_drain(c);
		assert_int_equal(requests(stats) - n0, 1 + round); /* the bad one, again */
		assert_int_equal(hashed(c) - h0, 6 + round);
	}
	cairn_cache_free(c);
	free(copy);
}

/* The neighbours a read was widened to are queued for a worker; a read that
 * needs one before the worker gets to it checks it itself, on its thread,
 * instead of waiting (here the worker is held up by the gate): the bad one
 * fails exactly that read with no request more, and the next read of it
 * fetches it again. Nothing is hashed twice. */
static void test_reader_checks_first(void **state)
{
	struct fx *f = *state;
	struct vopts o;
	struct cairn_bdev *stats;
	struct gate *g;
	struct cairn_cache *c;
	uint8_t buf[4096];
	cairn_ino_t ino;
	uint64_t lo, n0, h0;
	uint8_t *copy = bad_copy(f, 3, &ino, &lo);

	opts_pinned(&o, f->digest);
	o.cache.threads = 1;
	c = cache_over(f, copy, &o, &stats, &g);
	n0 = requests(stats); /* the verify device's open read, */
	h0 = hashed(c);       /* whose granules it checks */
	/* The worker fetches the image's first data segment and waits at the gate. */
	g->lo = lo - 4096;
	g->hi = lo;
	cairn_cache_prefetch(c, lo - 4096, 4096);
	pthread_mutex_lock(&g->lock);
	while (!g->waiting)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
	read_pieces(f, c, lo); /* piece 5 brings the whole file: one request */
	assert_int_equal(requests(stats) - n0, 1);
	assert_int_equal(hashed(c) - h0, 6); /* each piece once, by its reader */
	assert_int_equal(cairn_cache_read(c, buf, 10, lo + 3 * 4096, NULL), -CAIRN_EDIGEST);
	assert_int_equal(requests(stats) - n0, 2);
	assert_int_equal(hashed(c) - h0, 7);
	pthread_mutex_lock(&g->lock);
	g->open = 1;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	cairn_cache_drain(c);
	assert_int_equal(hashed(c) - h0, 8); /* the gated segment; the queued checks found none */
	cairn_cache_free(c);
	free(copy);
}

/* The cost counters of a read: a cold read hashes the segment it asked for on
 * its own thread, and that time and those bytes are counted (the stats the
 * mount reports as cache_verify_wait_us and cache_verify_read_bytes); a hit
 * hashes nothing and adds nothing. */
static void test_read_hash_counted(void **state)
{
	struct fx *f = *state;
	struct vopts o;
	struct cairn_bdev *stats;
	struct gate *g;
	struct cairn_cache *c;
	struct cairn_cache_stats s0, s1;
	struct cairn_cache_hint h;
	uint8_t buf[4096];
	cairn_ino_t ino;
	uint64_t lo;
	uint8_t *copy = bad_copy(f, 3, &ino, &lo); /* piece 3 is not read here */

	opts_pinned(&o, f->digest);
	c = cache_over(f, copy, &o, &stats, &g);
	h.lo = lo;
	h.hi = lo + g_sizes[3];
	cairn_cache_get_stats(c, &s0);
	assert_int_equal(s0.verify_wait_ns, 0);
	assert_int_equal(s0.verify_read_bytes, 0);
	assert_int_equal(cairn_cache_read(c, buf, 4096, lo, &h), 4096);
	assert_memory_equal(buf, f->want[3], 4096);
	cairn_cache_get_stats(c, &s1);
	assert_int_equal(s1.verify_read_bytes, 4096); /* its own segment; the rest on a worker */
	assert_true(s1.verify_wait_ns > 0);
	cairn_cache_drain(c);
	cairn_cache_get_stats(c, &s0);
	assert_int_equal(cairn_cache_read(c, buf, 4096, lo, &h), 4096);
	cairn_cache_get_stats(c, &s1);
	assert_int_equal(s1.verify_read_bytes, s0.verify_read_bytes);
	assert_int_equal(s1.verify_wait_ns, s0.verify_wait_ns);
	cairn_cache_free(c);
	free(copy);
}

struct reader {
	struct fx *f;
	struct cairn_image *img;
	cairn_ino_t ino;
	unsigned first;
	int wrong;                  /* reads that returned neither the bytes nor EDIGEST at 3 */
};

/* Reads /d/big's six 4 KiB pieces, starting at piece `first`. */
static void *reader_main(void *p)
{
	struct reader *r = p;
	uint8_t buf[4096];

	for (unsigned i = 0; i < 6; i++) {
		unsigned k = (r->first + i) % 6;
		size_t len = k == 5 ? g_sizes[3] - 5 * 4096 : 4096;
		ssize_t n = cairn_image_read(r->img, r->ino, buf, len, k * 4096);

		if (k == 3 ? n != -CAIRN_EDIGEST
			   : n != (ssize_t)len || memcmp(buf, r->f->want[3] + k * 4096, len))
			r->wrong++;
	}
	return NULL;
}

/* Readers race each other for the unchecked neighbours of their widened reads,
 * and (every other iteration) the workers fetching a prefetch of the file
 * (run under TSan by make tsan-test). */
static void test_bad_granule_threads(void **state)
{
	struct fx *f = *state;
	struct vopts o;
	cairn_ino_t ino;
	uint64_t lo;
	uint8_t *copy = bad_copy(f, 3, &ino, &lo);
	int wrong = 0;

	opts_pinned(&o, f->digest);
	o.cache.threads = 2;
	for (unsigned iter = 0; iter < 30; iter++) {
		struct reader r[4];
		pthread_t th[4];
		struct cairn_image *img;

		assert_int_equal(open_bytes(f, copy, &o, &img, NULL), 0);
		if (iter % 2)
			cairn_cache_prefetch(cairn_image_cache(img), lo, g_sizes[3]);
		for (unsigned t = 0; t < 4; t++) {
			r[t] = (struct reader){ f, img, ino, (iter + t * 2) % 6, 0 };
			assert_int_equal(pthread_create(&th[t], NULL, reader_main, &r[t]), 0);
		}
		for (unsigned t = 0; t < 4; t++) {
			assert_int_equal(pthread_join(th[t], NULL), 0);
			wrong += r[t].wrong;
		}
		cairn_image_close(img);
	}
	free(copy);
	assert_int_equal(wrong, 0);
}

static void test_digest_text(void **state)
{
	uint8_t d[CAIRN_DIGEST_LEN], e[CAIRN_DIGEST_LEN];
	char t[CAIRN_DIGEST_TEXT_LEN];

	(void)state;
	cairn_sha256("abc", 3, d);
	cairn_digest_format(d, t);
	/* FIPS 180-2's example. */
	assert_string_equal(t, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_int_equal(cairn_digest_parse(t, e), 0);
	assert_memory_equal(d, e, sizeof(d));
	t[7] = 'B';
	assert_int_equal(cairn_digest_parse(t, e), 0);
	assert_int_equal(cairn_digest_parse("sha256:ab", e), -EINVAL);
	assert_int_equal(cairn_digest_parse("md5:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", e),
			 -EINVAL);
	t[8] = 'g';
	assert_int_equal(cairn_digest_parse(t, e), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_digest_text),
		cmocka_unit_test(test_pinned_root),
		cmocka_unit_test(test_reproducible),
		cmocka_unit_test(test_bad_granule_alone),
		cmocka_unit_test(test_bad_granule_pinned),
		cmocka_unit_test(test_bad_neighbour_no_refetch),
		cmocka_unit_test(test_bad_granule_read_ahead),
		cmocka_unit_test(test_reader_checks_first),
		cmocka_unit_test(test_read_hash_counted),
		cmocka_unit_test(test_bad_granule_threads),
		cmocka_unit_test(test_flip_every_byte),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
