/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target over the extract library (include/cairn/extract.h), as
 * `cairn extract` drives it: the input is an image in a memfd (no temporary
 * file), opened with the CLI's default stack and extracted with
 * cairn_extract_to_dir() into <scratch>/out. After each run the target checks
 * that
 *   - nothing was written outside out/: <scratch> holds only out/, an empty
 *     canary directory outside/ and the empty working directory cwd/, though
 *     symlinks are restored verbatim (an image's "x -> ../outside" is created,
 *     and nothing written through it);
 *   - with safe_links (chosen by the last input byte, so both ways are fuzzed),
 *     no symlink in out/ leads outside it when followed (openat2 with
 *     RESOLVE_BENEATH), whatever the image said;
 *   - no file descriptor leaked;
 *   - every problem was reported with a message, and the result is an error
 *     exactly when there were problems.
 * Then out/ is removed. The scratch directory lives on /dev/shm when there is
 * one (set CAIRN_FUZZ_SCRATCH to choose), and is removed at exit.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cairn/cairn.h>
#include "fixup.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char scratch[PATH_MAX];
static char outdir[PATH_MAX + 8];

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	if (remove(path) && errno != ENOENT) {
		/* A directory extracted without write permission: open it up, retry. */
		chmod(path, 0700);
		remove(path);
	}
	return 0;
}

static void rm_tree(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return;
	if (S_ISDIR(st.st_mode)) {
		/* Depth-first; directories first made writable so entries can go. */
		chmod(path, 0700);
		nftw(path, rm_one, 64, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	} else {
		remove(path);
	}
}

static void cleanup(void)
{
	if (scratch[0]) {
		if (chdir("/") == 0)
			rm_tree(scratch);
	}
}

/* Number of entries of dir other than . and .. */
static int count_entries(const char *dir, const char *only)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (only && (!strcmp(e->d_name, "out") || !strcmp(e->d_name, "outside") ||
			     !strcmp(e->d_name, "cwd")))
			continue;
		n++;
	}
	closedir(d);
	return n;
}

static int out_fd = -1;
static int cwd_fd = -1, home_fd = -1; /* extract runs in cwd/, then back home */
static int verbose; /* CAIRN_FUZZ_VERBOSE: print extract's reports */

static int check_link(const char *path, const struct stat *st, int type, struct FTW *f)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_BENEATH };
	const char *rel = path + strlen(outdir);
	long fd;

	if (type != FTW_SL)
		return 0;
	while (*rel == '/')
		rel++;
	fd = syscall(SYS_openat2, out_fd, rel, &how, sizeof(how));
	if (fd >= 0) {
		close((int)fd);
		return 0;
	}
	if (errno == EXDEV) {
		char target[PATH_MAX];
		ssize_t n = readlink(path, target, sizeof(target) - 1);

		target[n > 0 ? n : 0] = '\0';
		fprintf(stderr, "fuzz_extract: symlink %s -> %s leads outside the target\n", rel,
			target);
		abort();
	}
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *base = getenv("CAIRN_FUZZ_SCRATCH");
	char sub[PATH_MAX + 16];
	struct stat st;

	if (!base)
		base = stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp";
	snprintf(scratch, sizeof(scratch), "%s/cairn-fuzz-extract.XXXXXX", base);
	if (!mkdtemp(scratch)) {
		perror("fuzz_extract: mkdtemp");
		exit(1);
	}
	atexit(cleanup);
	verbose = getenv("CAIRN_FUZZ_VERBOSE") != NULL;
	snprintf(outdir, sizeof(outdir), "%s/out", scratch);
	snprintf(sub, sizeof(sub), "%s/outside", scratch);
	if (mkdir(sub, 0777))
		abort();
	snprintf(sub, sizeof(sub), "%s/cwd", scratch);
	if (mkdir(sub, 0777))
		abort();
	cwd_fd = open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	home_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cwd_fd < 0 || home_fd < 0)
		abort();
	return 0;
}

static int lowest_free_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd;
}

/* extract names every problem; keep the fuzzer's log readable unless asked. */
static void report(void *ctx, const char *msg)
{
	uint64_t *n = ctx;

	if (!msg || !msg[0]) {
		fprintf(stderr, "fuzz_extract: a problem reported without a message\n");
		abort();
	}
	++*n;
	if (verbose)
		fprintf(stderr, "extract: %s\n", msg);
}

/* Opens and extracts the image in the memfd fd, from cwd/, as the CLI does. */
static void extract(int fd, int safe_links)
{
	char img_path[64];
	struct cairn_extract_opts xo;
	struct cairn_extract_stats st;
	struct cairn_stack *stack = NULL;
	struct cairn_image *img;
	uint64_t reports = 0;
	int rc;

	snprintf(img_path, sizeof(img_path), "/proc/self/fd/%d", fd);
	if (cairn_stack_open(img_path, NULL, NULL, 0, &stack) < 0)
		return;
	img = cairn_stack_image(stack);
	cairn_extract_opts_init(&xo);
	xo.preserve_owner = geteuid() == 0;
	xo.safe_links = safe_links;
	xo.image_name = img_path;
	xo.report = report;
	xo.ctx = &reports;
	if (fchdir(cwd_fd))
		abort();
	rc = cairn_extract_to_dir(img, "/", outdir, &xo, &st);
	if (fchdir(home_fd))
		abort();
	cairn_stack_close(stack);
	if (rc > 0 || st.problems != reports || (rc != 0) != (reports != 0)) {
		fprintf(stderr, "fuzz_extract: returned %d after %llu reports (stats: %llu)\n",
			rc, (unsigned long long)reports, (unsigned long long)st.problems);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char sub[PATH_MAX + 16];
	int fd, before, after, safe_links = size && (data[size - 1] & 1);

	uint8_t *copy = malloc(size ? size : 1);

	/* Checksums recomputed, so mutations reach extract's own checks (fixup.h). */
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	cairn_fixup_checksums(copy, size);
	fd = memfd_create("cairn-fuzz-image", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	for (size_t done = 0; done < size;) {
		ssize_t n = write(fd, copy + done, size - done);

		if (n <= 0)
			abort();
		done += (size_t)n;
	}
	free(copy);

	before = lowest_free_fd();
	extract(fd, safe_links);
	after = lowest_free_fd();
	if (before != after) {
		fprintf(stderr, "fuzz_extract: file descriptor leak (%d -> %d)\n", before, after);
		abort();
	}
	close(fd);

	if (count_entries(scratch, "known") != 0) {
		fprintf(stderr, "fuzz_extract: something was created beside out/\n");
		abort();
	}
	snprintf(sub, sizeof(sub), "%s/outside", scratch);
	if (count_entries(sub, NULL) != 0)
		abort();
	snprintf(sub, sizeof(sub), "%s/cwd", scratch);
	if (count_entries(sub, NULL) != 0)
		abort();
	out_fd = safe_links ? open(outdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (out_fd >= 0) {
		nftw(outdir, check_link, 64, FTW_PHYS | FTW_MOUNT);
		close(out_fd);
		out_fd = -1;
	}
	rm_tree(outdir);
	return 0;
}
