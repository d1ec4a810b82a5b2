/* SPDX-License-Identifier: MIT */
/*
 * cairn bench read: cold reads through the whole IO stack, in-process.
 *
 * Opens IMAGE (or, with --raw, any file as if it were one file of an image),
 * reads the given paths (or every regular file) in --bs pieces, and reports
 * wall time, device requests and bytes, the cache hit rate, and two references:
 * the floor `requests x delay` (the time the emulated disk alone costs) and the
 * copy time (the same cold reads with no delay: the CPU cost of the stack).
 * With --hit N it also times N cached 4 KiB reads (ns per call).
 * Output is "key: value" lines, one per figure, for scripts (bench/seed-read.sh).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include "cli.h"

#define DEFAULT_BS (128u << 10)
#define HIT_SIZE 4096u

struct bench {
	struct cli_image_opts o;
	const char *image;
	char **paths;
	int npaths;
	size_t bs;
	int raw, no_copy, no_warm;
	uint64_t hit_iters;
	unsigned hit_threads;
	uint64_t random_reads;      /* --random N: N reads of bs at random offsets instead */
	uint64_t hit_span;          /* --hit-span: bytes the hit reads range over */
};

struct result {
	double wall_ms;
	uint64_t files, bytes;
	struct cairn_bdev_counters dev;
	struct cairn_cache_stats cache;
	size_t segment;
	double hit_ns, hit_ns_mt;
	double memcpy_ns;           /* the same loop copying from a plain buffer */
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: cairn bench read IMAGE [PATH...] [options]\n"
		   "Reads PATHs (default: every file) of IMAGE cold and reports wall time,\n"
		   "device requests and bytes, hit rate, the floor requests x delay, and the\n"
		   "copy time (the same reads without delay).\n\n"
		   "  --bs SIZE        read size (default 128K; 512 imitates OSv MFS)\n"
		   "  --raw            IMAGE is any file, read whole as one file (no image format)\n"
		   "  --random N       with --raw: N reads of --bs at random aligned offsets\n"
		   "  --hit N          then time N cached 4 KiB reads (ns per call)\n"
		   "  --hit-threads T  threads for a second, parallel hit measurement (default 2)\n"
		   "  --hit-span SIZE  the hits range over this much cached data (default 1M)\n"
		   "  --no-copy        skip the no-delay pass\n"
		   "  --no-warm        do not load IMAGE into the page cache first (by default\n"
		   "                   it is, so the emulated delay is the only disk cost)\n\n%s",
		cli_image_opts_help);
}

/* ---- raw mode: the stack builder's CAIRN_STACK_RAW stack, ending at the cache ---- */

static void raw_read_err(struct cairn_cache *c, const char *image, uint64_t off, int err)
{
	char dev[CLI_DEV_WHY_LEN];

	cli_dev_why(cairn_cache_bdev(c), image, err, dev, sizeof(dev));
	cli_err("bench", "%s: read at %" PRIu64 ": %s%s", image, off, cairn_strerror(err), dev);
}

static int raw_read_all(const struct bench *b, struct cairn_cache *c, char *buf,
			struct result *res)
{
	uint64_t size = cairn_bdev_size(cairn_cache_bdev(c));
	struct cairn_cache_hint h = { 0, size };
	uint64_t x = 0x9e3779b97f4a7c15ull;

	/* Random mode: bs-aligned offsets from a fixed seed, the same in every run. */
	for (uint64_t i = 0; i < b->random_reads && size >= b->bs; i++) {
		uint64_t off;
		ssize_t n;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		off = x % (size / b->bs) * b->bs;
		n = cairn_cache_read(c, buf, b->bs, off, &h);
		if (n < 0) {
			raw_read_err(c, b->image, off, (int)n);
			return (int)n;
		}
		res->bytes += (uint64_t)n;
	}
	if (b->random_reads) {
		res->files = 1;
		return 0;
	}
	for (uint64_t off = 0; off < size; off += b->bs) {
		ssize_t n = cairn_cache_read(c, buf, b->bs, off, &h);

		if (n <= 0) {
			raw_read_err(c, b->image, off, n < 0 ? (int)n : -EIO);
			return n < 0 ? (int)n : -EIO;
		}
		res->bytes += (uint64_t)n;
	}
	res->files = 1;
	return 0;
}

/* ---- image mode ---- */

static int read_file(const struct bench *b, struct cairn_image *img, cairn_ino_t ino,
		     const char *path, char *buf, struct result *res)
{
	uint64_t off = 0;

	for (;;) {
		ssize_t n = cairn_image_read(img, ino, buf, b->bs, off);

		if (n == 0)
			break;
		if (n < 0) {
			cli_img_err("bench", b->image, img, path, (int)n);
			return (int)n;
		}
		off += (uint64_t)n;
	}
	res->files++;
	res->bytes += off;
	return 0;
}

static int walk(const struct bench *b, struct cairn_image *img, cairn_ino_t dir, char *buf,
		struct result *res, int depth)
{
	struct cairn_dirent *l = NULL;
	ssize_t n = depth > 256 ? -ELOOP : cairn_image_readdir_alloc(img, dir, 0, 0, &l);
	int rc = n < 0 ? (int)n : 0;

	for (ssize_t i = 0; i < n && !rc; i++) {
		unsigned t = l[i].dtype;

		if (t == DT_UNKNOWN) {
			struct cairn_stat st;

			rc = cairn_image_stat(img, l[i].ino, &st);
			t = S_ISDIR(st.mode) ? DT_DIR : S_ISREG(st.mode) ? DT_REG : DT_UNKNOWN;
		}
		if (!rc && t == DT_DIR)
			rc = walk(b, img, l[i].ino, buf, res, depth + 1);
		else if (!rc && t == DT_REG)
			rc = read_file(b, img, l[i].ino, l[i].name, buf, res);
	}
	if (rc < 0 && rc != -ENOMEM && !depth)
		cli_img_err("bench", b->image, img, "walk", rc);
	free(l);
	return rc;
}

static int image_read_all(const struct bench *b, struct cairn_image *img, char *buf,
			  struct result *res)
{
	if (!b->npaths)
		return walk(b, img, cairn_image_root(img), buf, res, 0);
	for (int i = 0; i < b->npaths; i++) {
		struct cairn_stat st;
		cairn_ino_t ino;
		int rc = cairn_image_resolve(img, b->paths[i], 1, &ino);

		if (!rc)
			rc = cairn_image_stat(img, ino, &st);
		if (!rc && S_ISDIR(st.mode))
			rc = walk(b, img, ino, buf, res, 1);
		else if (!rc)
			rc = read_file(b, img, ino, b->paths[i], buf, res);
		else
			cli_img_err("bench", b->image, img, b->paths[i], rc);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- cache hit microbenchmark ---- */

struct hit_arg {
	struct cairn_cache *cache;  /* NULL: copy from `plain` instead */
	const char *plain;
	uint64_t span, iters, seed;
	double ns;
	int failed;
};

static void *hit_loop(void *p)
{
	struct hit_arg *a = p;
	char buf[HIT_SIZE];
	uint64_t x = a->seed | 1, pages = a->span / HIT_SIZE;
	double t0 = now_ms();

	for (uint64_t i = 0; i < a->iters; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (!a->cache) {
			memcpy(buf, a->plain + (x % pages) * HIT_SIZE, HIT_SIZE);
			__asm__ volatile("" : : "r"(buf) : "memory"); /* keep the copy */
		} else if (cairn_cache_read(a->cache, buf, HIT_SIZE, (x % pages) * HIT_SIZE,
					    NULL) != HIT_SIZE) {
			a->failed = 1;
		}
	}
	a->ns = (now_ms() - t0) * 1e6 / (double)a->iters;
	return NULL;
}

/* Warm a span that fits the budget, then time random 4 KiB hits in it. */
static void hit_bench(const struct bench *b, struct cairn_cache *cache, struct result *res)
{
	uint64_t span = cairn_bdev_size(cairn_cache_bdev(cache));
	size_t budget = b->o.open.cache.budget_bytes ? b->o.open.cache.budget_bytes : 64u << 20;
	char *buf = malloc(1u << 20), *plain;
	struct hit_arg a[16];
	unsigned nt = b->hit_threads > 16 ? 16 : b->hit_threads;
	pthread_t th[16];

	if (!buf || budget == CAIRN_CACHE_OFF)
		goto out;
	if (span > budget / 2)
		span = budget / 2;
	if (span > b->hit_span)
		span = b->hit_span;
	span &= ~(uint64_t)(HIT_SIZE - 1);
	if (span < HIT_SIZE)
		goto out;
	for (uint64_t off = 0; off < span; off += 1u << 20)
		cairn_cache_read(cache, buf, 1u << 20, off, NULL);
	cairn_cache_drain(cache);
	a[0] = (struct hit_arg){ cache, NULL, span, b->hit_iters, 42, 0, 0 };
	hit_loop(&a[0]); /* warm-up of the loop itself */
	hit_loop(&a[0]);
	res->hit_ns = a[0].failed ? -1 : a[0].ns;
	/* Reference: memcpy alone over a buffer as large, on this machine, now. */
	plain = malloc(span);
	if (plain) {
		memset(plain, 1, span);
		a[1] = (struct hit_arg){ NULL, plain, span, b->hit_iters, 42, 0, 0 };
		hit_loop(&a[1]);
		res->memcpy_ns = a[1].ns;
		free(plain);
	}
	for (unsigned i = 0; i < nt; i++) {
		a[i] = (struct hit_arg){ cache, NULL, span, b->hit_iters, 1000 + i, 0, 0 };
		if (pthread_create(&th[i], NULL, hit_loop, &a[i]))
			nt = i;
	}
	res->hit_ns_mt = 0;
	for (unsigned i = 0; i < nt; i++) {
		pthread_join(th[i], NULL);
		res->hit_ns_mt += a[i].failed ? 1e9 : a[i].ns / nt;
	}
out:
	free(buf);
}

/* One cold pass: open, read everything, collect counters, close. */
static int run_pass(const struct bench *b, uint64_t delay_ns, int with_hits, struct result *res)
{
	char *buf = malloc(b->bs);
	double t0;
	int rc;

	memset(res, 0, sizeof(*res));
	if (!buf)
		return -ENOMEM;
	t0 = now_ms();
	{
		struct cli_image_opts o = b->o;
		struct cairn_stack *stack;
		struct cairn_cache *c;

		o.open.delay.latency_ns = delay_ns;
		if (b->raw)
			o.open.flags |= CAIRN_STACK_RAW;
		stack = cli_open_image("bench", b->image, &o);
		if (!stack) {
			rc = -EIO;
		} else {
			c = cairn_stack_cache(stack);
			rc = b->raw ? raw_read_all(b, c, buf, res) :
				image_read_all(b, cairn_stack_image(stack), buf, res);
			res->wall_ms = now_ms() - t0;
			cairn_stack_counters(stack, &res->dev);
			cairn_cache_get_stats(c, &res->cache);
			res->segment = cairn_cache_segment_size(c);
			if (!rc && with_hits)
				hit_bench(b, c, res);
			if (!b->raw)
				cli_print_stats(&o, stack);
			cairn_stack_close(stack);
		}
	}
	free(buf);
	return rc;
}

/* Ingo Molnar's method (seed 003): keep the image in RAM (the host page cache)
 * so the emulated delay is the only disk cost, then every pass is comparable. */
static void warm_page_cache(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf = malloc(1u << 20);

	if (fd >= 0 && buf)
		while (read(fd, buf, 1u << 20) > 0)
			;
	if (fd >= 0)
		close(fd);
	free(buf);
}

static int parse(int argc, char **argv, struct bench *b)
{
	uint64_t v;

	memset(b, 0, sizeof(*b));
	cli_image_opts_init(&b->o);
	b->bs = DEFAULT_BS;
	b->hit_threads = 2;
	b->hit_span = 1u << 20;
	b->paths = calloc((size_t)argc + 1, sizeof(char *));
	if (!b->paths)
		return -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		int rc = cli_image_opt_parse(&b->o, "bench", argc, argv, &i);

		if (rc < 0)
			return -1;
		if (rc > 0)
			continue;
		if (!strcmp(a, "--raw")) {
			b->raw = 1;
		} else if (!strcmp(a, "--no-warm")) {
			b->no_warm = 1;
		} else if (!strcmp(a, "--no-copy")) {
			b->no_copy = 1;
		} else if (!strcmp(a, "--bs") || !strcmp(a, "--hit") || !strcmp(a, "--hit-threads") ||
			   !strcmp(a, "--random") || !strcmp(a, "--hit-span")) {
			if (!val || cli_parse_size(val, &v) || v == 0 ||
			    (!strcmp(a, "--bs") && v > (256u << 20)) ||
			    (!strcmp(a, "--hit-threads") && v > 16)) {
				cli_err("bench", "%s needs a positive number, got '%s'", a,
					val ? val : "");
				return -1;
			}
			if (!strcmp(a, "--bs"))
				b->bs = (size_t)v;
			else if (!strcmp(a, "--hit"))
				b->hit_iters = v;
			else if (!strcmp(a, "--random"))
				b->random_reads = v;
			else if (!strcmp(a, "--hit-span"))
				b->hit_span = v;
			else
				b->hit_threads = (unsigned)v;
			i++;
		} else if (a[0] == '-' && a[1]) {
			cli_unknown_option("bench", "bench read", a, usage);
			return -1;
		} else if (!b->image) {
			b->image = a;
		} else {
			b->paths[b->npaths++] = argv[i];
		}
	}
	if (!b->image) {
		cli_err("bench", "read: needs IMAGE (see cairn bench read --help)");
		return -1;
	}
	if (b->random_reads && !b->raw) {
		cli_err("bench", "read: --random needs --raw");
		return -1;
	}
	if (b->raw && b->npaths) {
		cli_err("bench", "read: --raw reads the whole file; no PATHs");
		return -1;
	}
	return 0;
}

static void print_result(const struct bench *b, const struct result *r, const struct result *copy)
{
	uint64_t delay = b->o.open.delay.latency_ns;
	uint64_t lookups = r->cache.hits + r->cache.misses;
	double floor_ms = (double)r->dev.requests * (double)delay / 1e6;
	size_t budget = b->o.open.cache.budget_bytes;

	printf("image: %s\nmode: %s\nfiles: %" PRIu64 "\nbytes: %" PRIu64 "\nbs: %zu\n",
	       b->image, b->raw ? "raw" : "image", r->files, r->bytes, b->bs);
	if (budget == CAIRN_CACHE_OFF)
		printf("cache: off\n");
	else
		printf("cache: on\nsegment: %zu\n", r->segment);
	printf("delay_us: %.1f\n", (double)delay / 1e3);
	printf("wall_ms: %.2f\n", r->wall_ms);
	printf("requests: %" PRIu64 "\ndevice_bytes: %" PRIu64 "\n", r->dev.requests,
	       r->dev.bytes);
	printf("hit_rate: %.4f\n", lookups ? (double)r->cache.hits / (double)lookups : 0.0);
	printf("readahead_bytes: %" PRIu64 "\n", r->cache.readahead_bytes);
	printf("floor_ms: %.2f\n", floor_ms);
	if (copy) {
		printf("copy_ms: %.2f\n", copy->wall_ms);
		printf("ratio: %.3f\n", r->wall_ms / (floor_ms + copy->wall_ms));
	}
	if (b->hit_iters && r->hit_ns > 0)
		printf("hit_4k_ns: %.1f\nhit_4k_ns_%uthreads: %.1f\nmemcpy_4k_ns: %.1f\n",
		       r->hit_ns, b->hit_threads, r->hit_ns_mt, r->memcpy_ns);
}

int bench_read_main(int argc, char **argv)
{
	struct bench b;
	struct result res, copy;
	int rc;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (parse(argc, argv, &b)) {
		free(b.paths);
		return CLI_EXIT_USAGE;
	}
	if (!b.no_warm)
		warm_page_cache(b.image);
	rc = run_pass(&b, b.o.open.delay.latency_ns, b.hit_iters > 0, &res);
	if (!rc && !b.no_copy)
		rc = run_pass(&b, 0, 0, &copy);
	if (!rc)
		print_result(&b, &res, b.no_copy ? NULL : &copy);
	free(b.paths);
	return rc ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
