/* SPDX-License-Identifier: MIT */
/*
 * rw: the seed 001 latency test (HelenOS) on any directory. Writes SIZE bytes in BS-byte
 * write() calls to a new file, rewrites them from offset 0, then reads them back, and
 * prints the cost per call of each phase. Used on kernel tmpfs, fuse-overlayfs and cairn's
 * RAM layer so the per-call price of each stack shows side by side.
 *
 *   rw DIR [--size 64M] [--bs 4096] [--keep]
 * Output (one line per phase): "write_us 2.81", "rewrite_us ...", "read_us ...".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../common/bench.h"

struct rw_opts {
	const char *dir;
	uint64_t size;
	size_t bs;
	int keep;
};

/* One phase: `calls` write() or read() calls of bs bytes from offset 0. Returns seconds,
 * or a negative value after printing the error. */
static double run_phase(int fd, char *buf, const struct rw_opts *o, int writing,
			const char *path)
{
	uint64_t calls = o->size / o->bs, t0;

	if (lseek(fd, 0, SEEK_SET) != 0) {
		fprintf(stderr, "rw: %s: lseek: %s\n", path, strerror(errno));
		return -1;
	}
	t0 = bench_now_ns();
	for (uint64_t i = 0; i < calls; i++) {
		ssize_t n = writing ? write(fd, buf, o->bs) : read(fd, buf, o->bs);

		if (n != (ssize_t)o->bs) {
			fprintf(stderr, "rw: %s: %s call %llu: %s\n", path, writing ? "write" : "read",
				(unsigned long long)i, n < 0 ? strerror(errno) : "short transfer");
			return -1;
		}
	}
	return (double)(bench_now_ns() - t0) / 1e9;
}

static int parse_args(int argc, char **argv, struct rw_opts *o)
{
	o->size = 64ull << 20;
	o->bs = 4096;
	for (int i = 1; i < argc; i++) {
		uint64_t v;

		if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
			if (bench_parse_size(argv[++i], &o->size))
				return -1;
		} else if (strcmp(argv[i], "--bs") == 0 && i + 1 < argc) {
			if (bench_parse_size(argv[++i], &v))
				return -1;
			o->bs = (size_t)v;
		} else if (strcmp(argv[i], "--keep") == 0)
			o->keep = 1;
		else if (argv[i][0] != '-' && !o->dir)
			o->dir = argv[i];
		else
			return -1;
	}
	if (!o->dir || o->size == 0 || o->bs == 0 || o->bs > (64u << 20) || o->size < o->bs)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	static const char *names[3] = { "write", "rewrite", "read" };
	struct rw_opts o = { 0 };
	double secs[3];
	char path[4096];
	char *buf;
	int fd, rc = 1;

	if (parse_args(argc, argv, &o) != 0) {
		fprintf(stderr, "usage: rw DIR [--size 64M] [--bs 4096] [--keep]\n");
		return 2;
	}
	snprintf(path, sizeof path, "%s/rw-test.%ld", o.dir, (long)getpid());
	buf = malloc(o.bs);
	if (!buf)
		return 1;
	memset(buf, 0x5a, o.bs);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "rw: %s: %s\n", path, strerror(errno));
		free(buf);
		return 1;
	}
	for (int p = 0; p < 3; p++) {
		secs[p] = run_phase(fd, buf, &o, p < 2, path);
		if (secs[p] < 0)
			goto out;
	}
	for (int p = 0; p < 3; p++)
		printf("%s_us %.3f\n", names[p], secs[p] * 1e6 / (double)(o.size / o.bs));
	rc = 0;
out:
	close(fd);
	if (!o.keep)
		unlink(path);
	free(buf);
	return rc;
}
