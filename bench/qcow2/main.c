/* SPDX-License-Identifier: MIT */
/*
 * bench/qcow2: the seed-003 experiment. Reads a whole image cold through the stack
 *   file -> [delay] -> stats -> [qcow2] -> (disk: direct reads | walk: cache -> image)
 * so the fixed delay applies to every request to the image *file*, L2 table reads
 * included, and prints one line of counters. A raw image goes through the same
 * stack minus qcow2, which gives the baseline.
 *
 *   qcow2 FILE [--delay TIME] [--l2-cache SIZE|off] [--slice SIZE] [--chunk SIZE]
 *              [--order seq|random] [--walk]
 *
 * disk mode (default) reads the virtual disk in --chunk requests (default 1M) in
 * order, or in a fixed shuffled order with --order random. --walk opens the cairn
 * image on the device (default segment cache) and reads every regular file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cairn/cairn.h>
#include "../common/bench.h"

struct opts {
	const char *path;
	uint64_t delay_ns;
	struct cairn_qcow2_config q;
	uint64_t chunk;
	int random, walk;
	const char *l2_label;
};

static void usage(void)
{
	fprintf(stderr, "usage: qcow2 FILE [--delay TIME] [--l2-cache SIZE|off] [--slice SIZE] "
			"[--chunk SIZE] [--order seq|random] [--walk]\n");
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	uint64_t v;

	memset(o, 0, sizeof(*o));
	o->chunk = 1 << 20;
	o->l2_label = "default";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--walk")) {
			o->walk = 1;
			continue;
		}
		if (a[0] != '-') {
			o->path = a;
			continue;
		}
		if (!val)
			usage();
		i++;
		if (!strcmp(a, "--delay") && bench_parse_duration_ns(val, &o->delay_ns) == 0)
			continue;
		if (!strcmp(a, "--l2-cache") && !strcmp(val, "off")) {
			o->q.l2_cache_disabled = 1;
			o->l2_label = "off";
			continue;
		}
		if (!strcmp(a, "--l2-cache") && bench_parse_size(val, &v) == 0 && v) {
			o->q.l2_cache_bytes = (size_t)v;
			o->l2_label = val;
			continue;
		}
		if (!strcmp(a, "--slice") && bench_parse_size(val, &v) == 0) {
			o->q.l2_slice_bytes = (size_t)v;
			continue;
		}
		if (!strcmp(a, "--chunk") && bench_parse_size(val, &v) == 0 && v) {
			o->chunk = v;
			continue;
		}
		if (!strcmp(a, "--order") && (!strcmp(val, "seq") || !strcmp(val, "random"))) {
			o->random = !strcmp(val, "random");
			continue;
		}
		usage();
	}
	if (!o->path)
		usage();
}

/* file -> [delay] -> stats -> [qcow2]; *stats is the stats device (not owned). */
static int build(const struct opts *o, struct cairn_bdev **top, struct cairn_bdev **stats,
		 int *is_q)
{
	struct cairn_bdev *dev, *up;
	struct cairn_delay_config dc = { .latency_ns = o->delay_ns };
	char *dir, *slash;
	int rc;

	rc = cairn_bdev_file_open(o->path, 0, &dev);
	if (rc < 0)
		return rc;
	if (o->delay_ns) {
		rc = cairn_bdev_delay_new(dev, &dc, &up);
		if (rc < 0)
			goto fail;
		dev = up;
	}
	rc = cairn_bdev_stats_new(dev, &up);
	if (rc < 0)
		goto fail;
	dev = *stats = up;
	*is_q = cairn_bdev_is_qcow2(dev) == 1;
	if (*is_q) {
		dir = strdup(o->path);
		if (!dir) {
			rc = -ENOMEM;
			goto fail;
		}
		slash = strrchr(dir, '/');
		if (slash)
			*slash = 0;
		rc = cairn_bdev_qcow2_new(dev, slash ? dir : ".", &o->q, &up);
		free(dir);
		if (rc < 0)
			goto fail;
		dev = up;
	}
	*top = dev;
	return 0;
fail:
	cairn_bdev_close(dev);
	return rc;
}

static int read_disk(const struct opts *o, struct cairn_bdev *dev)
{
	uint64_t size = cairn_bdev_size(dev), n = (size + o->chunk - 1) / o->chunk;
	uint64_t *order = malloc(n * sizeof(*order) + 1);
	uint8_t *buf = NULL;
	uint64_t x = 88172645463325252ull;
	int rc = 0;

	/* Page-aligned, as a real reader's buffer would be (an unaligned one splits
	 * direct-IO requests on FUSE-backed files, e.g. delayfs). */
	if (posix_memalign((void **)&buf, 4096, (size_t)o->chunk))
		buf = NULL;
	if (!order || !buf) {
		free(order);
		free(buf);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < n; i++)
		order[i] = i;
	for (uint64_t i = n; o->random && i > 1; i--) { /* Fisher-Yates, fixed seed */
		uint64_t j, t;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = x % i;
		t = order[i - 1];
		order[i - 1] = order[j];
		order[j] = t;
	}
	for (uint64_t i = 0; i < n && rc == 0; i++) {
		ssize_t r = cairn_bdev_read(dev, buf, (size_t)o->chunk, order[i] * o->chunk);

		if (r < 0)
			rc = (int)r;
	}
	free(order);
	free(buf);
	return rc;
}

struct walk {
	struct cairn_image *img;
	uint8_t *buf;
	uint64_t files, bytes;
	int rc;
};

static int walk_dir(struct walk *w, cairn_ino_t dir);

static int walk_entry(void *ctx, const char *name, size_t name_len, cairn_ino_t ino,
		      unsigned dtype, uint64_t next)
{
	struct walk *w = ctx;
	struct cairn_stat st;
	uint64_t off = 0;

	(void)next;
	if ((name_len == 1 && name[0] == '.') || (name_len == 2 && !memcmp(name, "..", 2)))
		return 0;
	w->rc = cairn_image_stat(w->img, ino, &st);
	if (w->rc < 0)
		return 1;
	if ((st.mode & 0170000) == 0040000)
		return walk_dir(w, ino) < 0;
	if ((st.mode & 0170000) != 0100000)
		return 0;
	w->files++;
	while (off < st.size) {
		ssize_t r = cairn_image_read(w->img, ino, w->buf, 1 << 20, off);

		if (r <= 0) {
			w->rc = r < 0 ? (int)r : -EIO;
			return 1;
		}
		off += (uint64_t)r;
		w->bytes += (uint64_t)r;
	}
	(void)dtype;
	return 0;
}

static int walk_dir(struct walk *w, cairn_ino_t dir)
{
	int rc = cairn_image_readdir(w->img, dir, 0, walk_entry, w);

	if (rc < 0)
		w->rc = rc;
	return w->rc;
}

/* Counters are taken before the image closes the stack. */
struct counters {
	struct cairn_bdev *stats;
	int is_q;
	struct cairn_bdev_counters dc;
	struct cairn_qcow2_stats qs;
};

static void take_counters(struct counters *c, struct cairn_bdev *top)
{
	cairn_bdev_get_stats(c->stats, &c->dc);
	if (c->is_q)
		cairn_bdev_qcow2_stats(top, &c->qs);
}

static int read_walk(struct cairn_bdev *dev, struct walk *w, struct counters *c)
{
	struct cairn_cache_config cc = { 0 };
	struct cairn_cache *cache;
	int rc = cairn_cache_new(dev, &cc, &cache);

	if (rc < 0)
		return rc;
	rc = cairn_image_open(cache, NULL, 0, &w->img);
	if (rc < 0) {
		cairn_cache_free(cache);
		return rc;
	}
	w->buf = malloc(1 << 20);
	if (!w->buf)
		rc = -ENOMEM;
	else
		rc = walk_dir(w, cairn_image_root(w->img));
	take_counters(c, dev);
	free(w->buf);
	cairn_image_close(w->img);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct cairn_bdev *top;
	struct counters c = { 0 };
	struct walk w = { 0 };
	uint64_t t0, t1;
	int rc;

	parse(argc, argv, &o);
	t0 = bench_now_ns();
	rc = build(&o, &top, &c.stats, &c.is_q);
	if (rc < 0) {
		fprintf(stderr, "qcow2: %s: %s\n", o.path, cairn_strerror(rc));
		return 1;
	}
	if (o.walk) {
		rc = read_walk(top, &w, &c); /* the image closes the stack */
	} else {
		rc = read_disk(&o, top);
		take_counters(&c, top);
		cairn_bdev_close(top);
	}
	t1 = bench_now_ns();
	if (rc < 0) {
		fprintf(stderr, "qcow2: %s: %s\n", o.path, cairn_strerror(rc));
		return 1;
	}
	printf("mode=%s order=%s format=%s l2=%s time_ms=%.1f requests=%" PRIu64
	       " bytes=%" PRIu64 " l2_table_reads=%" PRIu64 " l2_hits=%" PRIu64
	       " l2_misses=%" PRIu64 " l2_evictions=%" PRIu64 " data_requests=%" PRIu64
	       " files=%" PRIu64 "\n",
	       o.walk ? "walk" : "disk", o.random ? "random" : "seq", c.is_q ? "qcow2" : "raw",
	       c.is_q ? o.l2_label : "-", (double)(t1 - t0) / 1e6, c.dc.requests, c.dc.bytes,
	       c.qs.l2_table_reads, c.qs.l2_hits, c.qs.l2_misses, c.qs.l2_evictions,
	       c.qs.data_requests, w.files);
	return 0;
}
