/* SPDX-License-Identifier: MIT */
/*
 * qcow2 bdev. Two halves:
 * - images built by qemu-img at test time (every cluster size, zlib and zstd
 *   compression, extended L2, version 2, backing chains, a backing loop), each read
 *   through the library and compared byte for byte with the raw data (or with
 *   `qemu-img convert -O raw`). Skipped when qemu-img is missing.
 * - small images written by hand, then damaged field by field: every hostile
 *   header or table must give a clean error, and the request merging and the L2
 *   cache counters are checked on a known layout.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <cairn/bdev.h>
#include <cairn/error.h>

/* ---- helpers ---------------------------------------------------------------- */

static char tmpdir[64];

static int setup_dir(void **state)
{
	(void)state;
	strcpy(tmpdir, "/tmp/cairn-qcow2-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static int have_qemu(void)
{
	return system("qemu-img --version >/dev/null 2>&1 && qemu-io --version >/dev/null 2>&1")
	       == 0;
}

/* Runs a shell command inside tmpdir; fails the test if it fails. */
static void sh(const char *fmt, ...)
{
	char cmd[1024];
	int n;
	va_list ap;

	n = snprintf(cmd, sizeof(cmd), "cd '%s' && ", tmpdir);
	va_start(ap, fmt);
	vsnprintf(cmd + n, sizeof(cmd) - (size_t)n, fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

static char *tpath(const char *name)
{
	static char p[4][256];
	static int k;

	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", tmpdir, name);
	return p[k];
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static void spit(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
}

/* A device that counts the requests passed to the one below. */
struct count_bdev {
	struct cairn_bdev base;
	atomic_uint_fast64_t requests;
};

static ssize_t count_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	struct count_bdev *c = (struct count_bdev *)dev;

	atomic_fetch_add(&c->requests, 1);
	return cairn_bdev_read(dev->below, buf, len, off);
}

static void count_close(struct cairn_bdev *dev)
{
	cairn_bdev_close(dev->below);
	free(dev);
}

static const struct cairn_bdev_ops count_ops = {
	.version = CAIRN_BDEV_OPS_VERSION,
	.name = "count",
	.read = count_read,
	.close = count_close,
};

static struct count_bdev *count_wrap(struct cairn_bdev *below)
{
	struct count_bdev *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	assert_int_equal(cairn_bdev_init(&c->base, &count_ops, below, below->size), 0);
	return c;
}

struct report_log {
	char last[512];
	int n;
};

static void log_report(void *ctx, const char *msg)
{
	struct report_log *l = ctx;

	snprintf(l->last, sizeof(l->last), "%s", msg);
	l->n++;
}

/* Opens path as qcow2 with cfg (NULL = defaults); the count device is returned
 * through cnt when asked for. */
static int open_q(const char *path, const struct cairn_qcow2_config *cfg,
		  struct cairn_bdev **out, struct count_bdev **cnt)
{
	struct cairn_bdev *file;
	struct count_bdev *c;
	int rc;

	assert_int_equal(cairn_bdev_file_open(path, 0, &file), 0);
	c = count_wrap(file);
	if (cnt)
		*cnt = c;
	rc = cairn_bdev_qcow2_new(&c->base, tmpdir, cfg, out);
	if (rc < 0)
		cairn_bdev_close(&c->base);
	return rc;
}

/* Reads the whole device in steps of `step` bytes and compares with want. */
static void compare_dev(struct cairn_bdev *q, const uint8_t *want, size_t len, size_t step)
{
	uint8_t *got = malloc(len + 1);
	size_t pos = 0;

	assert_non_null(got);
	assert_int_equal(cairn_bdev_size(q), len);
	while (pos < len) {
		size_t n = len - pos < step ? len - pos : step;

		assert_int_equal(cairn_bdev_read(q, got + pos, n, pos), (ssize_t)n);
		pos += n;
	}
	if (memcmp(got, want, len)) {
		size_t i = 0;

		while (got[i] == want[i])
			i++;
		fail_msg("first difference at byte %zu", i);
	}
	free(got);
}

/* Raw test data: random, compressible text, zero runs, and a hole at the end. */
#define RAW_LEN ((5u << 20) + 3 * 512)
static void make_raw(const char *name)
{
	uint8_t *b = calloc(1, RAW_LEN);
	uint64_t x = 0x9e3779b97f4a7c15ull;

	assert_non_null(b);
	for (size_t i = 0; i < RAW_LEN; i++) {
		size_t mb = i >> 19; /* 512 KiB bands */

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (mb % 4 == 0)
			b[i] = (uint8_t)x;                      /* incompressible */
		else if (mb % 4 == 1)
			b[i] = (uint8_t)("cairn qcow2 test "[i % 17]); /* compressible */
		else if (mb % 4 == 2 && (i & 65535) < 40000)
			b[i] = 0;                               /* zero runs */
		else if (i < RAW_LEN - 300000)
			b[i] = (uint8_t)(x & 7);                /* compressible noise */
	}
	spit(tpath(name), b, RAW_LEN);
	free(b);
}

/* ---- qemu-img images ---------------------------------------------------------- */

struct variant {
	const char *opts;   /* qemu-img convert options */
};

static const struct variant variants[] = {
	{ "-o cluster_size=4k" },
	{ "-o cluster_size=64k" },
	{ "-o cluster_size=2M" },
	{ "-o cluster_size=512" },
	{ "-c -o cluster_size=4k" },
	{ "-c -o cluster_size=64k" },
	{ "-c -o cluster_size=2M" },
	{ "-c -o compression_type=zstd,cluster_size=64k" },
	{ "-c -o compression_type=zstd,cluster_size=4k" },
	{ "-c -o compression_type=zstd,cluster_size=2M" },
	{ "-o extended_l2=on,cluster_size=16k" },
	{ "-o extended_l2=on,cluster_size=64k" },
	{ "-c -o extended_l2=on,cluster_size=32k" },
	{ "-c -o extended_l2=on,compression_type=zstd,cluster_size=128k" },
	{ "-o compat=0.10,cluster_size=64k" },
	{ "-c -o compat=0.10,cluster_size=8k" },
};

static void test_qemu_variants(void **state)
{
	size_t raw_len;
	uint8_t *raw;

	(void)state;
	if (!have_qemu())
		skip();
	make_raw("data.raw");
	raw = slurp(tpath("data.raw"), &raw_len);
	for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		struct cairn_qcow2_config small = { .l2_cache_bytes = 512 };
		struct cairn_qcow2_config off = { .l2_cache_disabled = 1 };
		struct cairn_qcow2_config whole = { .l2_cache_bytes = SIZE_MAX,
						     .l2_slice_bytes = 512 };
		const struct cairn_qcow2_config *cfgs[] = { NULL, &small, &off, &whole };
		struct cairn_bdev *q;

		print_message("variant: %s\n", variants[v].opts);
		sh("rm -f v.qcow2 && qemu-img convert -f raw -O qcow2 %s data.raw v.qcow2",
		   variants[v].opts);
		for (size_t c = 0; c < 4; c++) {
			struct cairn_bdev *file;
			struct cairn_qcow2_stats st;

			assert_int_equal(cairn_bdev_file_open(tpath("v.qcow2"), 0, &file), 0);
			assert_int_equal(cairn_bdev_is_qcow2(file), 1);
			assert_int_equal(cairn_bdev_qcow2_new(file, tmpdir, cfgs[c], &q), 0);
			compare_dev(q, raw, raw_len, c == 0 ? raw_len : 12345 + 4096 * c);
			assert_int_equal(cairn_bdev_qcow2_stats(q, &st), 0);
			if (strstr(variants[v].opts, "-c") && !strstr(variants[v].opts, "2M")) {
				assert_true(st.compressed_clusters > 0);
				/* Packed compressed clusters share requests. */
				if (c == 0)
					assert_true(st.data_requests * 3 < st.compressed_clusters);
			}
			cairn_bdev_close(q);
		}
	}
	free(raw);
}

/* A raw file is not qcow2, and the is_qcow2 probe says so. */
static void test_probe_raw(void **state)
{
	struct cairn_bdev *file;
	uint8_t junk[100] = "not a qcow2 file";

	(void)state;
	spit(tpath("junk"), junk, sizeof(junk));
	assert_int_equal(cairn_bdev_file_open(tpath("junk"), 0, &file), 0);
	assert_int_equal(cairn_bdev_is_qcow2(file), 0);
	cairn_bdev_close(file);
	spit(tpath("tiny"), "QF", 2);
	assert_int_equal(cairn_bdev_file_open(tpath("tiny"), 0, &file), 0);
	assert_int_equal(cairn_bdev_is_qcow2(file), 0);
	cairn_bdev_close(file);
}

static void test_backing_chain(void **state)
{
	struct cairn_bdev *q;
	uint8_t *want;
	size_t len;
	struct cairn_qcow2_config shallow = { .max_backing_depth = 1 };
	struct report_log log = { .n = 0 };

	(void)state;
	if (!have_qemu())
		skip();
	sh("rm -f base.qcow2 mid.qcow2 top.qcow2 chain.raw && "
	   "qemu-img create -q -f qcow2 base.qcow2 4M && "
	   "qemu-io -c 'write -P 0x41 0 64k' -c 'write -P 0x42 1M 128k' "
	   "-c 'write -P 0x47 3968k 128k' base.qcow2 >/dev/null && "
	   "qemu-img create -q -f qcow2 -b base.qcow2 -F qcow2 mid.qcow2 && "
	   "qemu-io -c 'write -P 0x43 32k 64k' -c 'write -P 0x44 2M 4k' mid.qcow2 >/dev/null && "
	   "qemu-img create -q -f qcow2 -b mid.qcow2 -F qcow2 -o extended_l2=on top.qcow2 && "
	   "qemu-io -c 'write -P 0x45 60k 8k' -c 'write -P 0x46 3M 512' "
	   "-c 'write -z 1M 4k' top.qcow2 >/dev/null && "
	   "qemu-img convert -O raw top.qcow2 chain.raw");
	want = slurp(tpath("chain.raw"), &len);
	assert_int_equal(want[0], 0x41);
	assert_int_equal(want[40 << 10], 0x43);
	assert_int_equal(want[61 << 10], 0x45);
	assert_int_equal(want[(1 << 20) + 5000], 0x42);
	assert_int_equal(open_q(tpath("top.qcow2"), NULL, &q, NULL), 0);
	compare_dev(q, want, len, len);
	cairn_bdev_close(q);
	assert_int_equal(open_q(tpath("top.qcow2"), NULL, &q, NULL), 0);
	compare_dev(q, want, len, 3000);
	cairn_bdev_close(q);
	free(want);

	/* Two backing files exceed a limit of one. */
	shallow.report = log_report;
	shallow.report_ctx = &log;
	assert_int_equal(open_q(tpath("top.qcow2"), &shallow, &q, NULL), -ELOOP);
	assert_non_null(strstr(log.last, "deeper"));

	/* A backing file that does not exist. */
	sh("qemu-img create -q -f qcow2 gone.qcow2 1M && "
	   "qemu-img create -q -f qcow2 -b gone.qcow2 -F qcow2 orphan.qcow2 && rm gone.qcow2");
	assert_int_equal(open_q(tpath("orphan.qcow2"), NULL, &q, NULL), -ENOENT);

	/* A raw backing file, shorter than the image: zeros past its end. */
	sh("rm -f rawbase.img && head -c 100000 /dev/urandom > rawbase.img && "
	   "qemu-img create -q -f qcow2 -b rawbase.img -F raw over.qcow2 1M && "
	   "qemu-io -c 'write -P 0x55 64k 4k' over.qcow2 >/dev/null && "
	   "qemu-img convert -O raw over.qcow2 over.raw");
	want = slurp(tpath("over.raw"), &len);
	assert_int_equal(open_q(tpath("over.qcow2"), NULL, &q, NULL), 0);
	compare_dev(q, want, len, 7777);
	cairn_bdev_close(q);
	free(want);
}

static void test_backing_loop(void **state)
{
	struct cairn_bdev *q;
	struct report_log log = { .n = 0 };
	struct cairn_qcow2_config cfg = { .report = log_report, .report_ctx = &log };

	(void)state;
	if (!have_qemu())
		skip();
	sh("rm -f a.qcow2 b.qcow2 self.qcow2 && qemu-img create -q -f qcow2 b.qcow2 1M && "
	   "qemu-img create -q -f qcow2 -b b.qcow2 -F qcow2 a.qcow2 && "
	   "qemu-img rebase -u -b a.qcow2 -F qcow2 b.qcow2 && "
	   "qemu-img create -q -f qcow2 self.qcow2 1M && "
	   "qemu-img rebase -u -b self.qcow2 -F qcow2 self.qcow2");
	assert_int_equal(open_q(tpath("a.qcow2"), &cfg, &q, NULL), -ELOOP);
	assert_non_null(strstr(log.last, "loop"));
	assert_int_equal(open_q(tpath("self.qcow2"), &cfg, &q, NULL), -ELOOP);
	/* Without a directory to resolve names in, a backing file is refused. */
	{
		struct cairn_bdev *file;

		assert_int_equal(cairn_bdev_file_open(tpath("a.qcow2"), 0, &file), 0);
		assert_int_equal(cairn_bdev_qcow2_new(file, NULL, &cfg, &q), -ENOTSUP);
		cairn_bdev_close(file);
	}
}

/* ---- hand-built images ---------------------------------------------------------- */

/*
 * Layout with 512-byte clusters (cluster_bits 9, 64 L2 entries per table):
 *   cluster 0: header          cluster 1: L1 table (1 entry)
 *   cluster 2: L2 table        clusters 3..: data
 * The virtual disk is 8 clusters. L2 maps clusters 0-3 to host 3-6 (contiguous),
 * cluster 4 to host 8 (a jump), cluster 5 zero, clusters 6-7 unallocated.
 */
#define HB 9
#define HCS 512u
#define HCLUSTERS 12
#define HSIZE (8 * HCS)

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint8_t hand[HCLUSTERS * HCS];

static void build_hand(void)
{
	static const uint64_t host[8] = { 3, 4, 5, 6, 8, 0, 0, 0 };

	memset(hand, 0, sizeof(hand));
	put32(hand, 0x514649fb);
	put32(hand + 4, 3);
	put32(hand + 20, HB);
	put64(hand + 24, HSIZE);
	put32(hand + 36, 1);             /* l1_size */
	put64(hand + 40, 1 * HCS);       /* l1_table_offset */
	put32(hand + 96, 4);             /* refcount_order */
	put32(hand + 100, 104);          /* header_length */
	put64(hand + HCS, 2 * HCS);      /* L1[0] -> L2 at cluster 2 */
	for (int i = 0; i < 8; i++)
		if (host[i])
			put64(hand + 2 * HCS + 8 * i, host[i] * HCS);
	put64(hand + 2 * HCS + 8 * 5, 1); /* zero flag */
	for (int c = 3; c < HCLUSTERS; c++)
		memset(hand + c * HCS, 'a' + c, HCS);
}

static void hand_expect(uint8_t *want)
{
	static const int host[8] = { 3, 4, 5, 6, 8, 0, 0, 0 };

	for (int i = 0; i < 8; i++)
		memset(want + i * HCS, host[i] ? 'a' + host[i] : 0, HCS);
}

static int open_hand(const struct cairn_qcow2_config *cfg, struct cairn_bdev **q,
		     struct count_bdev **cnt)
{
	spit(tpath("hand.qcow2"), hand, sizeof(hand));
	return open_q(tpath("hand.qcow2"), cfg, q, cnt);
}

static void test_hand_read_and_merge(void **state)
{
	struct cairn_bdev *q;
	struct count_bdev *cnt;
	struct cairn_qcow2_stats st;
	uint8_t want[HSIZE], got[HSIZE];

	(void)state;
	build_hand();
	hand_expect(want);
	assert_int_equal(open_hand(NULL, &q, &cnt), 0);
	atomic_store(&cnt->requests, 0);
	/* Clusters 0-3 are contiguous on the host: one data request, one L2 slice. */
	assert_int_equal(cairn_bdev_read(q, got, 4 * HCS, 0), 4 * HCS);
	assert_memory_equal(got, want, 4 * HCS);
	assert_int_equal(atomic_load(&cnt->requests), 2);
	assert_int_equal(cairn_bdev_qcow2_stats(q, &st), 0);
	assert_int_equal(st.data_requests, 1);
	assert_int_equal(st.l2_misses, 1);
	assert_int_equal(st.l2_table_reads, 1);
	/* The whole disk: 3-6 then 8 (a jump) = 2 data requests; the slice is cached. */
	atomic_store(&cnt->requests, 0);
	assert_int_equal(cairn_bdev_read(q, got, HSIZE, 0), HSIZE);
	assert_memory_equal(got, want, HSIZE);
	assert_int_equal(atomic_load(&cnt->requests), 2);
	assert_int_equal(cairn_bdev_qcow2_stats(q, &st), 0);
	assert_int_equal(st.l2_hits, 1);
	/* An unaligned read inside one cluster. */
	assert_int_equal(cairn_bdev_read(q, got, 100, HCS + 7), 100);
	assert_memory_equal(got, want + HCS + 7, 100);
	/* Past the end: clipped. */
	assert_int_equal(cairn_bdev_read(q, got, 100, HSIZE - 10), 10);
	cairn_bdev_close(q);

	/* With the cache disabled every read asks the file for its L2 entries. */
	{
		struct cairn_qcow2_config off = { .l2_cache_disabled = 1 };

		assert_int_equal(open_hand(&off, &q, &cnt), 0);
		for (int i = 0; i < 3; i++)
			assert_int_equal(cairn_bdev_read(q, got, HSIZE, 0), HSIZE);
		assert_memory_equal(got, want, HSIZE);
		assert_int_equal(cairn_bdev_qcow2_stats(q, &st), 0);
		assert_int_equal(st.l2_table_reads, 3);
		assert_int_equal(st.l2_hits + st.l2_misses, 0);
		cairn_bdev_close(q);
	}
}

/* Two L2 tables and a cache of one slice: alternating reads evict each time. */
static void test_l2_cache_eviction(void **state)
{
	struct cairn_bdev *q;
	struct cairn_qcow2_stats st;
	struct cairn_qcow2_config one = { .l2_cache_bytes = 1 };
	uint8_t got[HCS];

	(void)state;
	build_hand();
	/* Virtual size 2 tables (128 clusters); L1[1] -> L2 at cluster 9. */
	put64(hand + 24, 128 * HCS);
	put32(hand + 36, 2);
	put64(hand + HCS + 8, 9 * HCS);
	memset(hand + 9 * HCS, 0, HCS);
	put64(hand + 9 * HCS, 10 * HCS);
	assert_int_equal(open_hand(&one, &q, NULL), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(cairn_bdev_read(q, got, HCS, 0), HCS);
		assert_int_equal(got[0], 'a' + 3);
		assert_int_equal(cairn_bdev_read(q, got, HCS, 64 * HCS), HCS);
		assert_int_equal(got[0], 'a' + 10);
	}
	assert_int_equal(cairn_bdev_qcow2_stats(q, &st), 0);
	assert_int_equal(st.l2_misses, 8);
	assert_int_equal(st.l2_evictions, 7);
	assert_int_equal(st.l2_resident_bytes, HCS);
	cairn_bdev_close(q);
	/* The default cache holds both. */
	assert_int_equal(open_hand(NULL, &q, NULL), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(cairn_bdev_read(q, got, HCS, 0), HCS);
		assert_int_equal(cairn_bdev_read(q, got, HCS, 64 * HCS), HCS);
	}
	assert_int_equal(cairn_bdev_qcow2_stats(q, &st), 0);
	assert_int_equal(st.l2_misses, 2);
	assert_int_equal(st.l2_hits, 6);
	assert_int_equal(st.l2_evictions, 0);
	cairn_bdev_close(q);
}

/* One damaged field per case: open or read must fail with the given error. */
enum when { AT_OPEN, AT_READ };
struct hostile {
	const char *what;
	size_t at;        /* byte offset in hand[] */
	int width;        /* 4 or 8 (big-endian), 1 = byte */
	uint64_t value;
	enum when when;
	int err;
};

#define CORRUPT (-CAIRN_ECORRUPT)
static const struct hostile hostiles[] = {
	{ "version 1", 4, 4, 1, AT_OPEN, -ENOTSUP },
	{ "version 4", 4, 4, 4, AT_OPEN, -ENOTSUP },
	{ "cluster_bits 8", 20, 4, 8, AT_OPEN, CORRUPT },
	{ "cluster_bits 22", 20, 4, 22, AT_OPEN, CORRUPT },
	{ "cluster_bits huge", 20, 4, 0xffffffff, AT_OPEN, CORRUPT },
	{ "size 2^63", 24, 8, 1ull << 63, AT_OPEN, CORRUPT },
	{ "size beyond L1", 24, 8, 1ull << 40, AT_OPEN, CORRUPT },
	{ "crypt_method aes", 32, 4, 1, AT_OPEN, -ENOTSUP },
	{ "crypt_method luks", 32, 4, 2, AT_OPEN, -ENOTSUP },
	{ "l1_size 0", 36, 4, 0, AT_OPEN, CORRUPT },
	{ "l1_size huge", 36, 4, 0xffffffff, AT_OPEN, CORRUPT },
	{ "l1 offset outside", 40, 8, 1ull << 40, AT_OPEN, CORRUPT },
	{ "l1 offset unaligned", 40, 8, HCS + 8, AT_OPEN, CORRUPT },
	{ "l1 offset wraps", 40, 8, UINT64_MAX - 511, AT_OPEN, CORRUPT },
	{ "external data file", 72, 8, 1u << 2, AT_OPEN, -ENOTSUP },
	{ "unknown incompat", 72, 8, 1u << 5, AT_OPEN, -ENOTSUP },
	{ "unknown incompat 63", 72, 8, 1ull << 63, AT_OPEN, -ENOTSUP },
	{ "extended L2 with 512 B clusters", 72, 8, 1u << 4, AT_OPEN, CORRUPT },
	{ "header_length 8", 100, 4, 8, AT_OPEN, CORRUPT },
	{ "header_length huge", 100, 4, 0xfffffff8, AT_OPEN, CORRUPT },
	{ "header_length unaligned", 100, 4, 105, AT_OPEN, CORRUPT },
	{ "extension overruns", 104, 8, 0xe2792acaffffffffull, AT_OPEN, CORRUPT },
	{ "crypto extension", 104, 8, 0x0537be7700000000ull, AT_OPEN, -ENOTSUP },
	{ "data file extension", 104, 8, 0x4441544100000000ull, AT_OPEN, -ENOTSUP },
	{ "backing name too long", 8, 8, 200, AT_OPEN, CORRUPT }, /* len set below */
	{ "backing name outside", 8, 8, 1ull << 50, AT_OPEN, CORRUPT },
	{ "L1 entry unaligned", HCS, 8, 2 * HCS + 8, AT_OPEN, CORRUPT },
	{ "L1 entry outside", HCS, 8, 1ull << 40, AT_OPEN, CORRUPT },
	{ "L1 entry reserved bit", HCS, 8, 2 * HCS | 1, AT_OPEN, CORRUPT },
	{ "L2 entry outside", 2 * HCS, 8, 1ull << 40, AT_READ, CORRUPT },
	{ "L2 entry at end of file", 2 * HCS, 8, HCLUSTERS * HCS, AT_READ, CORRUPT },
	{ "L2 entry reserved bit", 2 * HCS, 8, 3 * HCS | 2, AT_READ, CORRUPT },
	{ "compressed garbage", 2 * HCS, 8, (1ull << 62) | (3 * HCS), AT_READ, CORRUPT },
	{ "compressed at end, max sectors", 2 * HCS, 8,
	  (1ull << 62) | (1ull << 61) | (HCLUSTERS * HCS - 1), AT_READ, CORRUPT },
	{ "compressed outside", 2 * HCS, 8, (1ull << 62) | (1ull << 50), AT_READ, CORRUPT },
};

static void poke(size_t at, int width, uint64_t v)
{
	if (width == 8)
		put64(hand + at, v);
	else if (width == 4)
		put32(hand + at, (uint32_t)v);
	else
		hand[at] = (uint8_t)v;
}

static void test_hostile(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(hostiles) / sizeof(hostiles[0]); i++) {
		const struct hostile *h = &hostiles[i];
		struct report_log log = { .n = 0 };
		struct cairn_qcow2_config cfg = { .report = log_report, .report_ctx = &log };
		struct cairn_bdev *q = NULL;
		uint8_t got[HSIZE];
		int rc;

		build_hand();
		poke(h->at, h->width, h->value);
		if (!strcmp(h->what, "backing name too long"))
			put32(hand + 16, 5000);
		if (!strcmp(h->what, "backing name outside"))
			put32(hand + 16, 10);
		rc = open_hand(&cfg, &q, NULL);
		if (h->when == AT_READ) {
			if (rc != 0)
				fail_msg("%s: open failed with %d", h->what, rc);
			rc = (int)cairn_bdev_read(q, got, HSIZE, 0);
			cairn_bdev_close(q);
		}
		if (rc != h->err)
			fail_msg("%s: got %d (%s), want %d", h->what, rc, cairn_strerror(rc), h->err);
		if (h->when == AT_OPEN && log.n == 0)
			fail_msg("%s: no message reported", h->what);
		print_message("%-32s -> %s\n", h->what, log.last);
	}
}

/* The corrupt bit only warns; the dirty bit is ignored; a truncated file fails. */
static void test_flags_and_truncation(void **state)
{
	struct report_log log = { .n = 0 };
	struct cairn_qcow2_config cfg = { .report = log_report, .report_ctx = &log };
	struct cairn_bdev *q;

	(void)state;
	build_hand();
	put64(hand + 72, 3); /* dirty | corrupt */
	assert_int_equal(open_hand(&cfg, &q, NULL), 0);
	assert_non_null(strstr(log.last, "corrupt"));
	cairn_bdev_close(q);
	build_hand();
	for (size_t n = 0; n < 2 * HCS; n += 37) {
		spit(tpath("trunc.qcow2"), hand, n);
		if (open_q(tpath("trunc.qcow2"), NULL, &q, NULL) == 0)
			fail_msg("truncated at %zu opened", n);
	}
}

/* Several threads reading random ranges at once (run under TSan by tsan-test). */
struct thr_arg {
	struct cairn_bdev *q;
	const uint8_t *want;
	size_t len;
	unsigned seed;
	int bad;
};

static void *reader_thread(void *p)
{
	struct thr_arg *a = p;
	uint8_t *buf = malloc(200000);

	for (int i = 0; i < 200 && buf; i++) {
		size_t off = (size_t)rand_r(&a->seed) % a->len;
		size_t n = (size_t)rand_r(&a->seed) % 200000;

		if (n > a->len - off)
			n = a->len - off;
		if (cairn_bdev_read(a->q, buf, n, off) != (ssize_t)n ||
		    memcmp(buf, a->want + off, n))
			a->bad++;
	}
	free(buf);
	return NULL;
}

static void test_threads(void **state)
{
	struct cairn_qcow2_config small = { .l2_cache_bytes = 8192 };
	struct cairn_bdev *q;
	struct thr_arg args[3];
	pthread_t t[3];
	size_t len;
	uint8_t *raw;

	(void)state;
	if (!have_qemu())
		skip();
	make_raw("thr.raw");
	sh("rm -f thr.qcow2 && qemu-img convert -c -O qcow2 -o cluster_size=4k thr.raw "
	   "thr.qcow2");
	raw = slurp(tpath("thr.raw"), &len);
	assert_int_equal(open_q(tpath("thr.qcow2"), &small, &q, NULL), 0);
	for (int i = 0; i < 3; i++) {
		args[i] = (struct thr_arg){ q, raw, len, (unsigned)i + 1, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, reader_thread, &args[i]), 0);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(args[i].bad, 0);
	}
	cairn_bdev_close(q);
	free(raw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe_raw),
		cmocka_unit_test(test_hand_read_and_merge),
		cmocka_unit_test(test_l2_cache_eviction),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_flags_and_truncation),
		cmocka_unit_test(test_qemu_variants),
		cmocka_unit_test(test_backing_chain),
		cmocka_unit_test(test_backing_loop),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
