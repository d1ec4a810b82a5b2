/* SPDX-License-Identifier: MIT */
/*
 * cairn bench rw: the HelenOS test (seed 001) run in-process on the RAM fs. A
 * file of --size bytes is written in --bs calls (growing it), rewritten from
 * offset 0, then read back; each phase reports its cost per call. Then: the
 * bytes of stored data moved while growing (must be 0), and memory overhead per
 * MiB stored and per small file.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include "cli.h"

struct rw_opts {
	uint64_t size, bs;
	size_t chunk;
	unsigned runs, threads;
	uint64_t files, small;
};

static void rw_usage(FILE *f)
{
	fprintf(f,
		"usage: cairn bench rw [options]\n"
		"The seed-001 test in-process on the RAM fs: write a file in small calls,\n"
		"rewrite it, read it back; cost per call of each phase, bytes copied while\n"
		"growing, memory overhead per MiB stored and per small file.\n"
		"  --size SIZE     file size (default 64M)\n"
		"  --bs SIZE       bytes per call (default 4K)\n"
		"  --chunk SIZE    RAM fs chunk size, a power of two >= 4K (default 4K)\n"
		"                  (the chunk pool is set to --size for the regrow phase)\n"
		"  --runs N        repeat and report the median (default 5)\n"
		"  --threads N     also run N threads at once, each on its own file (default 2;\n"
		"                  0 skips)\n"
		"  --files N       small files for the per-file overhead (default 100000)\n"
		"  --small SIZE    bytes in each small file (default 100)\n");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Resident memory of this process in bytes (0 if unknown). */
static uint64_t rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long pages = 0, rss = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &pages, &rss) != 2)
		rss = 0;
	fclose(f);
	return (uint64_t)rss * 4096;
}

enum { PH_WRITE, PH_REWRITE, PH_READ, PH_REGROW, PH_N };
static const char *const phase_name[PH_N] = { "write (grow)", "rewrite", "read",
					      "regrow (pool)" };

/* Per-run results of the seed test on one file. */
struct run_result {
	double secs[PH_N];
	uint64_t bytes_copied, meta_bytes, data_bytes;
	int moved;              /* the first chunk changed address while growing */
	int err;
};

static int first_chunk_cb(void *ctx, const struct iovec *iov, int cnt, size_t total)
{
	*(const void **)ctx = cnt ? iov[0].iov_base : NULL;
	return 0;
}

/* The seed test on file `name` of fs; buf holds bs bytes. */
static void seed_test(struct cairn_ramfs *fs, const char *name, const struct rw_opts *o,
		      char *buf, struct run_result *r)
{
	uint64_t calls = o->size / o->bs;
	const void *first = NULL, *later = NULL;
	struct cairn_stat st;
	double t;

	memset(r, 0, sizeof(*r));
	r->err = cairn_ramfs_mknod(fs, cairn_ramfs_root(fs), name, strlen(name), S_IFREG | 0644,
				   0, NULL, &st);
	if (r->err)
		return;
	t = now_s();
	for (uint64_t i = 0; i < calls; i++) {
		if (cairn_ramfs_write(fs, st.ino, buf, o->bs, 0, 1, NULL) != (ssize_t)o->bs) {
			r->err = -EIO;
			return;
		}
		if (i == 0)
			cairn_ramfs_read_iov(fs, st.ino, 1, 0, first_chunk_cb, &first);
	}
	r->secs[PH_WRITE] = now_s() - t;
	cairn_ramfs_read_iov(fs, st.ino, 1, 0, first_chunk_cb, &later);
	r->moved = first != later;
	t = now_s();
	for (uint64_t i = 0; i < calls; i++)
		if (cairn_ramfs_write(fs, st.ino, buf, o->bs, i * o->bs, 0, NULL) != (ssize_t)o->bs) {
			r->err = -EIO;
			return;
		}
	r->secs[PH_REWRITE] = now_s() - t;
	t = now_s();
	for (uint64_t i = 0; i < calls; i++)
		if (cairn_ramfs_read(fs, st.ino, buf, o->bs, i * o->bs) != (ssize_t)o->bs) {
			r->err = -EIO;
			return;
		}
	r->secs[PH_READ] = now_s() - t;
	/* Truncate to 0 (the chunks go to the pool) and grow again: growth with
	 * resident memory, i.e. the fs's own cost of growing. */
	struct cairn_setattr sa = { .valid = CAIRN_SET_SIZE, .size = 0 };
	r->err = cairn_ramfs_setattr(fs, st.ino, &sa, NULL, NULL);
	t = now_s();
	for (uint64_t i = 0; i < calls && !r->err; i++)
		if (cairn_ramfs_write(fs, st.ino, buf, o->bs, 0, 1, NULL) != (ssize_t)o->bs)
			r->err = -EIO;
	r->secs[PH_REGROW] = now_s() - t;
	cairn_ramfs_forget(fs, st.ino, 1);
}

/*
 * The floor on this machine, same call count and size: memcpy into memory that
 * is already resident (what rewrite and read cannot beat), and malloc + memcpy
 * of fresh memory (what any growth pays for first-touch page faults).
 */
static void baselines(const struct rw_opts *o, double *copy_us, double *fresh_us)
{
	uint64_t calls = o->size / o->bs;
	char *src = malloc(o->bs), *dst = malloc(o->size);
	char **blocks = calloc(calls, sizeof(*blocks));
	double t;

	*copy_us = *fresh_us = 0;
	if (src && dst && blocks) {
		memset(src, 'b', o->bs);
		memset(dst, 'z', o->size); /* non-zero: no calloc shortcut, really resident */
		t = now_s();
		for (uint64_t i = 0; i < calls; i++) {
			memcpy(dst + i * o->bs, src, o->bs);
			__asm__ __volatile__("" : : "r"(dst) : "memory");
		}
		*copy_us = (now_s() - t) * 1e6 / (double)calls;
		t = now_s();
		for (uint64_t i = 0; i < calls; i++) {
			blocks[i] = malloc(o->bs);
			if (blocks[i])
				memcpy(blocks[i], src, o->bs);
			__asm__ __volatile__("" : : "r"(blocks[i]) : "memory");
		}
		*fresh_us = (now_s() - t) * 1e6 / (double)calls;
		for (uint64_t i = 0; i < calls; i++)
			free(blocks[i]);
	}
	free(blocks);
	free(src);
	free(dst);
}

static int seed_runs(const struct rw_opts *o)
{
	struct cairn_ramfs_config cfg = { .chunk_size = o->chunk, .pool_bytes = o->size };
	double secs[PH_N][64];
	struct run_result r = { 0 };
	char *buf = malloc(o->bs);
	uint64_t calls = o->size / o->bs;

	if (!buf)
		return -ENOMEM;
	memset(buf, 'x', o->bs);
	for (unsigned run = 0; run < o->runs; run++) {
		struct cairn_ramfs *fs;
		struct cairn_ramfs_usage u0, u1;
		int err = cairn_ramfs_new(&cfg, &fs);

		if (err) {
			free(buf);
			return err;
		}
		cairn_ramfs_usage(fs, &u0);
		seed_test(fs, "readtest", o, buf, &r);
		cairn_ramfs_usage(fs, &u1);
		r.bytes_copied = u1.bytes_copied;
		r.meta_bytes = u1.meta_bytes - u0.meta_bytes;
		r.data_bytes = u1.data_bytes;
		cairn_ramfs_free(fs);
		if (r.err) {
			free(buf);
			return r.err;
		}
		for (int p = 0; p < PH_N; p++)
			secs[p][run] = r.secs[p];
	}
	printf("seed 001 test: %" PRIu64 " MiB file, %" PRIu64 " calls of %" PRIu64
	       " B per phase, chunk %zu B, median of %u runs\n",
	       o->size >> 20, calls, o->bs, o->chunk, o->runs);
	printf("  %-14s %10s %14s %10s\n", "phase", "total ms", "per call us", "MiB/s");
	for (int p = 0; p < PH_N; p++) {
		double s = median(secs[p], o->runs);

		printf("  %-14s %10.2f %14.3f %10.0f\n", phase_name[p], s * 1e3, s * 1e6 / (double)calls,
		       (double)(calls * o->bs) / (1 << 20) / s);
	}
	double copy_us, fresh_us;
	baselines(o, &copy_us, &fresh_us);
	printf("  floor: memcpy %" PRIu64 " B into resident memory %.3f us/call; malloc+memcpy of"
	       " fresh memory %.3f us/call\n", o->bs, copy_us, fresh_us);
	printf("append growth: %" PRIu64 " MiB appended, bytes_copied %" PRIu64
	       ", first chunk moved: %s\n", (calls * o->bs) >> 20, r.bytes_copied,
	       r.moved ? "YES" : "no");
	printf("memory per MiB stored: data %.0f B, meta %.1f B (%.3f%%)\n",
	       (double)r.data_bytes / (double)(o->size >> 20),
	       (double)r.meta_bytes / (double)(o->size >> 20),
	       100.0 * (double)r.meta_bytes / (double)r.data_bytes);
	free(buf);
	return 0;
}

struct thr { const struct rw_opts *o; struct cairn_ramfs *fs; int id; struct run_result r; };

static void *thr_main(void *p)
{
	struct thr *t = p;
	char name[32], *buf = malloc(t->o->bs);

	if (!buf) {
		t->r.err = -ENOMEM;
		return NULL;
	}
	memset(buf, 'y', t->o->bs);
	snprintf(name, sizeof(name), "readtest%d", t->id);
	seed_test(t->fs, name, t->o, buf, &t->r);
	free(buf);
	return NULL;
}

/* N threads, one fs, each thread its own file: per-call costs should stay flat. */
static int thread_run(const struct rw_opts *o)
{
	struct cairn_ramfs_config cfg = { .chunk_size = o->chunk, .pool_bytes = o->size * o->threads };
	struct cairn_ramfs *fs;
	struct thr *t = calloc(o->threads, sizeof(*t));
	pthread_t *th = calloc(o->threads, sizeof(*th));
	uint64_t calls = o->size / o->bs;
	int err = t && th ? cairn_ramfs_new(&cfg, &fs) : -ENOMEM;

	if (err) {
		free(t);
		free(th);
		return err;
	}
	for (unsigned i = 0; i < o->threads; i++) {
		t[i] = (struct thr){ .o = o, .fs = fs, .id = (int)i };
		pthread_create(&th[i], NULL, thr_main, &t[i]);
	}
	for (unsigned i = 0; i < o->threads; i++)
		pthread_join(th[i], NULL);
	printf("%u threads at once, one file each, per call us:", o->threads);
	for (int p = 0; p < PH_N; p++) {
		double worst = 0;

		for (unsigned i = 0; i < o->threads; i++) {
			if (t[i].r.err)
				err = t[i].r.err;
			if (t[i].r.secs[p] > worst)
				worst = t[i].r.secs[p];
		}
		printf(" %s %.3f%s", phase_name[p], worst * 1e6 / (double)calls,
		       p + 1 < PH_N ? "," : " (slowest thread)\n");
	}
	cairn_ramfs_free(fs);
	free(t);
	free(th);
	return err;
}

/* Many small files in one directory: cost and memory per file. */
static int small_files(const struct rw_opts *o)
{
	struct cairn_ramfs_config cfg = { .chunk_size = o->chunk };
	struct cairn_ramfs *fs;
	struct cairn_ramfs_usage u0, u1;
	struct cairn_stat st;
	char name[32], *data = calloc(1, o->small + 1);
	uint64_t rss0, rss1;
	double t, t_create, t_lookup;
	int err = data ? cairn_ramfs_new(&cfg, &fs) : -ENOMEM;

	if (err) {
		free(data);
		return err;
	}
	memset(data, 's', o->small);
	cairn_ramfs_usage(fs, &u0);
	rss0 = rss_bytes();
	t = now_s();
	for (uint64_t i = 0; i < o->files && !err; i++) {
		int n = snprintf(name, sizeof(name), "file%07" PRIu64, i);

		err = cairn_ramfs_mknod(fs, cairn_ramfs_root(fs), name, (size_t)n, S_IFREG | 0644, 0,
					NULL, &st);
		if (!err && o->small &&
		    cairn_ramfs_write(fs, st.ino, data, o->small, 0, 0, NULL) != (ssize_t)o->small)
			err = -EIO;
		if (!err)
			cairn_ramfs_forget(fs, st.ino, 1);
	}
	t_create = now_s() - t;
	rss1 = rss_bytes();
	cairn_ramfs_usage(fs, &u1);
	t = now_s();
	for (uint64_t i = 0; i < o->files && !err; i++) {
		int n = snprintf(name, sizeof(name), "file%07" PRIu64, i);

		err = cairn_ramfs_lookup(fs, cairn_ramfs_root(fs), name, (size_t)n, &st);
		if (!err)
			cairn_ramfs_forget(fs, st.ino, 1);
	}
	t_lookup = now_s() - t;
	if (!err) {
		double nf = (double)o->files;

		printf("small files: %" PRIu64 " x %" PRIu64 " B in one directory: create+write %.3f us/file,"
		       " lookup %.3f us/file\n", o->files, o->small, t_create * 1e6 / nf,
		       t_lookup * 1e6 / nf);
		printf("  per file: meta %.1f B (inode, name, index, table), data %.0f B (one chunk),"
		       " RSS %.0f B incl. malloc overhead\n",
		       (double)(u1.meta_bytes - u0.meta_bytes) / nf,
		       (double)(u1.data_bytes - u0.data_bytes) / nf,
		       rss1 > rss0 ? (double)(rss1 - rss0) / nf : 0.0);
	}
	cairn_ramfs_free(fs);
	free(data);
	return err;
}

static int parse_size_opt(const char *name, const char *v, uint64_t *out)
{
	if (!v || cli_parse_size(v, out)) {
		cli_err("bench", "rw: %s needs a size like 64M, got '%s'", name, v ? v : "");
		return -1;
	}
	return 0;
}

int bench_rw_main(int argc, char **argv)
{
	struct rw_opts o = { .size = 64 << 20, .bs = 4096, .chunk = 4096, .runs = 5, .threads = 2,
			     .files = 100000, .small = 100 };
	uint64_t v;
	int err;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			rw_usage(stdout);
			return CLI_EXIT_OK;
		}
		if (!strcmp(a, "--size") || !strcmp(a, "--bs") || !strcmp(a, "--chunk") ||
		    !strcmp(a, "--small")) {
			if (parse_size_opt(a, val, &v))
				return CLI_EXIT_USAGE;
			if (!strcmp(a, "--size"))
				o.size = v;
			else if (!strcmp(a, "--bs"))
				o.bs = v;
			else if (!strcmp(a, "--chunk"))
				o.chunk = (size_t)v;
			else
				o.small = v;
			i++;
		} else if (!strcmp(a, "--runs") || !strcmp(a, "--threads") || !strcmp(a, "--files")) {
			char *end;
			unsigned long long n = val ? strtoull(val, &end, 10) : 0;

			if (!val || *end || (!strcmp(a, "--runs") && (n < 1 || n > 64)) ||
			    (!strcmp(a, "--threads") && n > 64)) {
				cli_err("bench", "rw: bad value for %s: '%s'", a, val ? val : "");
				return CLI_EXIT_USAGE;
			}
			if (!strcmp(a, "--runs"))
				o.runs = (unsigned)n;
			else if (!strcmp(a, "--threads"))
				o.threads = (unsigned)n;
			else
				o.files = n;
			i++;
		} else {
			cli_unknown_option("bench", "bench rw", a, rw_usage);
			return CLI_EXIT_USAGE;
		}
	}
	if (o.bs == 0 || o.bs > (64u << 20) || o.size < o.bs || o.small > (1u << 20)) {
		cli_err("bench", "rw: need 0 < --bs <= 64M, --bs <= --size, --small <= 1M");
		return CLI_EXIT_USAGE;
	}
	if (o.chunk < 4096 || o.chunk > (1u << 20) || (o.chunk & (o.chunk - 1))) {
		cli_err("bench", "rw: --chunk must be a power of two from 4K to 1M, got %zu", o.chunk);
		return CLI_EXIT_USAGE;
	}
	err = seed_runs(&o);
	if (!err && o.threads)
		err = thread_run(&o);
	if (!err && o.files)
		err = small_files(&o);
	if (err) {
		cli_err("bench", "rw: %s", cairn_strerror(err));
		return CLI_EXIT_FAIL;
	}
	return CLI_EXIT_OK;
}
