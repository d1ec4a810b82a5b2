/* SPDX-License-Identifier: MIT */
/*
 * What xattr calls cost on a directory's file system, to hold a RAM layer's
 * against tmpfs's: `build/bench/xattr DIR [N]` makes DIR/xattr-bench with 8
 * user.* xattrs of 32 bytes and times N rounds (default 20000) of each call:
 * setxattr (replacing one), getxattr (a value, and a size-0 query), listxattr,
 * and statfs, which every FUSE file system answers with one round trip and no
 * work (the floor an xattr call through FUSE cannot go below). Prints the
 * median of 5 runs of each, in microseconds per call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define NATTR 8
#define RUNS 5

enum op { OP_SET, OP_GET, OP_GET_SIZE, OP_LIST, OP_STATFS, OP_N };
static const char *const op_names[OP_N] = { "setxattr", "getxattr", "getxattr size 0",
					    "listxattr", "statfs (floor)" };

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int one(enum op op, const char *path, long i)
{
	char name[32], val[32], buf[4096];
	struct statfs sfs;

	snprintf(name, sizeof(name), "user.attr%ld", i % NATTR);
	memset(val, 'a' + (int)(i % 26), sizeof(val));
	switch (op) {
	case OP_SET:
		return setxattr(path, name, val, sizeof(val), XATTR_REPLACE);
	case OP_GET:
		return getxattr(path, name, buf, sizeof(buf)) == sizeof(val) ? 0 : -1;
	case OP_GET_SIZE:
		return getxattr(path, name, NULL, 0) == sizeof(val) ? 0 : -1;
	case OP_LIST:
		return listxattr(path, buf, sizeof(buf)) > 0 ? 0 : -1;
	default:
		return statfs(path, &sfs);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	char path[4096], name[32], val[32] = { 0 };
	long n = argc > 2 ? atol(argv[2]) : 20000;
	FILE *f;

	if (argc < 2 || n <= 0) {
		fprintf(stderr, "usage: %s DIR [N]\n", argv[0]);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/xattr-bench", argv[1]);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return 1;
	}
	fclose(f);
	for (int i = 0; i < NATTR; i++) {
		snprintf(name, sizeof(name), "user.attr%d", i);
		if (setxattr(path, name, val, sizeof(val), 0)) {
			perror(path);
			return 1;
		}
	}
	for (int op = 0; op < OP_N; op++) {
		double t[RUNS];

		for (int r = 0; r < RUNS; r++) {
			double t0 = now_us();

			for (long i = 0; i < n; i++)
				if (one((enum op)op, path, i)) {
					perror(op_names[op]);
					return 1;
				}
			t[r] = (now_us() - t0) / (double)n;
		}
		qsort(t, RUNS, sizeof(t[0]), cmp_double);
		printf("%-16s %8.2f us/call (runs %.2f..%.2f)\n", op_names[op], t[RUNS / 2], t[0],
		       t[RUNS - 1]);
	}
	unlink(path);
	return 0;
}
