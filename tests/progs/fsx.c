/* SPDX-License-Identifier: MIT */
/*
 * fsx FILE [-n OPS] [-s SEED] [-l MAXLEN] [-D] [-R REF]: random operations on one file,
 * checked against a copy in memory after each, in the style of the classic fsx
 * (Debian packages none). Operations: pwrite, pread, ftruncate (grow and shrink),
 * mmap read, mmap write (MAP_SHARED + msync), fallocate (keep size, punch hole,
 * zero range; an EOPNOTSUPP turns that kind off), copy_file_range within the
 * file, and close + reopen (every third one with O_TRUNC). -D opens the file
 * with O_DIRECT for pread/pwrite (page-aligned buffers, offsets and lengths).
 * -R REF checks an existing FILE read-only against the reference file REF (a
 * read-only mount against its source): preads, mmap reads and reopens only.
 * Prints the last operations and the first differing byte on a mismatch and
 * exits 1; exit 0 after OPS operations with the same bytes as the model.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define HIST 32
#define PAGE 4096

struct fsx {
	const char *path;
	int fd;
	int direct;
	int readonly; /* -R: FILE exists, only reads */
	unsigned char *model; /* expected content, size bytes valid */
	unsigned char *buf;   /* aligned scratch buffer */
	size_t size, maxlen;
	uint64_t rng;
	long op;
	char hist[HIST][96];
	int no_falloc[3]; /* keep size, punch hole, zero range unsupported */
};

static uint64_t rnd(struct fsx *f)
{
	f->rng ^= f->rng << 13;
	f->rng ^= f->rng >> 7;
	f->rng ^= f->rng << 17;
	return f->rng;
}

static size_t below(struct fsx *f, size_t n)
{
	return n ? (size_t)(rnd(f) % n) : 0;
}

static void logop(struct fsx *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void logop(struct fsx *f, const char *fmt, ...)
{
	char *h = f->hist[f->op % HIST];
	int l = snprintf(h, sizeof(f->hist[0]), "%ld: ", f->op);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(h + l, sizeof(f->hist[0]) - (size_t)l, fmt, ap);
	va_end(ap);
}

static void die(struct fsx *f, const char *what)
{
	fprintf(stderr, "fsx %s: op %ld: %s (errno %d %s)\nlast operations:\n",
		f->path, f->op, what, errno, strerror(errno));
	for (long i = f->op - HIST + 1; i <= f->op; i++)
		if (i >= 0 && f->hist[i % HIST][0])
			fprintf(stderr, "  %s\n", f->hist[i % HIST]);
	exit(1);
}

/* Compares got[0..len) with the model at off; bytes past the model's end are 0. */
static void compare(struct fsx *f, const unsigned char *got, size_t off, size_t len,
		    const char *how)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char want = off + i < f->size ? f->model[off + i] : 0;

		if (got[i] != want) {
			char msg[160];

			snprintf(msg, sizeof(msg), "%s: byte %zu is 0x%02x, want 0x%02x",
				 how, off + i, got[i], want);
			errno = 0;
			die(f, msg);
		}
	}
}

static void check_size(struct fsx *f)
{
	struct stat st;

	if (fstat(f->fd, &st) != 0)
		die(f, "fstat");
	if ((size_t)st.st_size != f->size) {
		char msg[96];

		snprintf(msg, sizeof(msg), "st_size %lld, want %zu", (long long)st.st_size, f->size);
		errno = 0;
		die(f, msg);
	}
}

static void fill(struct fsx *f, unsigned char *p, size_t len)
{
	unsigned char seed = (unsigned char)(f->op * 7 + 1);

	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(seed + i * 13 + (i >> 9));
}

/* Offset and length of an operation; O_DIRECT wants them page-aligned. */
static void range(struct fsx *f, size_t limit, size_t *off, size_t *len)
{
	*off = below(f, limit);
	*len = 1 + below(f, f->maxlen / 8);
	if (f->direct) {
		*off &= ~(size_t)(PAGE - 1);
		*len = (*len + PAGE - 1) & ~(size_t)(PAGE - 1);
	}
	if (*off >= f->maxlen)
		*len = 0;
	else if (*off + *len > f->maxlen)
		*len = f->maxlen - *off;
}

static void op_write(struct fsx *f)
{
	size_t off, len;

	range(f, f->maxlen, &off, &len);
	if (!len)
		return;
	logop(f, "write %zu len %zu", off, len);
	fill(f, f->buf, len);
	if (pwrite(f->fd, f->buf, len, (off_t)off) != (ssize_t)len)
		die(f, "pwrite");
	if (off > f->size)
		memset(f->model + f->size, 0, off - f->size);
	memcpy(f->model + off, f->buf, len);
	if (off + len > f->size)
		f->size = off + len;
}

static void op_read(struct fsx *f)
{
	size_t off, len;

	range(f, f->size + PAGE, &off, &len);
	if (!len)
		return;
	logop(f, "read %zu len %zu", off, len);
	ssize_t n = pread(f->fd, f->buf, len, (off_t)off);
	size_t want = off >= f->size ? 0 : (f->size - off < len ? f->size - off : len);

	if (n < 0)
		die(f, "pread");
	if ((size_t)n != want) {
		char msg[96];

		snprintf(msg, sizeof(msg), "pread returned %zd, want %zu", n, want);
		errno = 0;
		die(f, msg);
	}
	compare(f, f->buf, off, (size_t)n, "pread");
}

static void op_truncate(struct fsx *f)
{
	size_t len = below(f, f->maxlen);

	if (f->direct)
		len &= ~(size_t)(PAGE - 1);
	logop(f, "truncate %zu (from %zu)", len, f->size);
	if (ftruncate(f->fd, (off_t)len) != 0)
		die(f, "ftruncate");
	if (len > f->size)
		memset(f->model + f->size, 0, len - f->size);
	f->size = len;
}

static void op_mapread(struct fsx *f)
{
	size_t off, len;

	if (!f->size)
		return;
	range(f, f->size, &off, &len);
	if (off + len > f->size)
		len = f->size - off;
	if (!len)
		return;
	logop(f, "mapread %zu len %zu", off, len);
	size_t pg = off & ~(size_t)(PAGE - 1);
	unsigned char *m = mmap(NULL, off + len - pg, PROT_READ, MAP_SHARED, f->fd, (off_t)pg);

	if (m == MAP_FAILED)
		die(f, "mmap read");
	compare(f, m + (off - pg), off, len, "mapread");
	/* The rest of the last page past EOF reads as zeros. */
	size_t end = off + len, pgend = (end + PAGE - 1) & ~(size_t)(PAGE - 1);

	if (end == f->size && pgend > end) {
		munmap(m, end - pg);
		m = mmap(NULL, pgend - pg, PROT_READ, MAP_SHARED, f->fd, (off_t)pg);
		if (m == MAP_FAILED)
			die(f, "mmap tail");
		compare(f, m + (end - pg), end, pgend - end, "mapread past EOF");
		munmap(m, pgend - pg);
		return;
	}
	munmap(m, off + len - pg);
}

static void op_mapwrite(struct fsx *f)
{
	size_t off, len;

	range(f, f->maxlen, &off, &len);
	if (!len)
		return;
	logop(f, "mapwrite %zu len %zu", off, len);
	if (off + len > f->size) {
		if (ftruncate(f->fd, (off_t)(off + len)) != 0)
			die(f, "ftruncate before mapwrite");
		memset(f->model + f->size, 0, off + len - f->size);
		f->size = off + len;
	}
	size_t pg = off & ~(size_t)(PAGE - 1);
	unsigned char *m = mmap(NULL, off + len - pg, PROT_READ | PROT_WRITE, MAP_SHARED,
				f->fd, (off_t)pg);

	if (m == MAP_FAILED)
		die(f, "mmap write");
	fill(f, m + (off - pg), len);
	memcpy(f->model + off, m + (off - pg), len);
	if (msync(m, off + len - pg, MS_SYNC) != 0)
		die(f, "msync");
	munmap(m, off + len - pg);
}

static void op_falloc(struct fsx *f)
{
	static const int modes[3] = { FALLOC_FL_KEEP_SIZE,
				      FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      FALLOC_FL_ZERO_RANGE };
	static const char *names[3] = { "falloc keep", "punch", "zero range" };
	int k = (int)below(f, 3);
	size_t off, len;

	if (f->no_falloc[k])
		return;
	range(f, f->maxlen, &off, &len);
	if (!len)
		return;
	logop(f, "%s %zu len %zu", names[k], off, len);
	if (fallocate(f->fd, modes[k], (off_t)off, (off_t)len) != 0) {
		if (errno == EOPNOTSUPP) {
			f->no_falloc[k] = 1;
			return;
		}
		die(f, "fallocate");
	}
	if (k == 0)
		return;
	size_t end = off + len;

	if (k == 2 && end > f->size) { /* zero range without KEEP_SIZE extends */
		memset(f->model + f->size, 0, end - f->size);
		f->size = end;
	}
	if (off < f->size)
		memset(f->model + off, 0, (end < f->size ? end : f->size) - off);
}

static void op_copy(struct fsx *f)
{
	size_t src, dst, len;

	if (!f->size)
		return;
	range(f, f->size, &src, &len);
	if (src + len > f->size)
		len = f->size - src;
	dst = below(f, f->maxlen - len);
	if (f->direct)
		dst &= ~(size_t)(PAGE - 1);
	/* copy_file_range within one file refuses overlapping ranges. */
	if (!len || (dst < src + len && src < dst + len))
		return;
	logop(f, "copy %zu len %zu to %zu", src, len, dst);
	loff_t in = (loff_t)src, out = (loff_t)dst;
	size_t done = 0;

	while (done < len) {
		ssize_t n = copy_file_range(f->fd, &in, f->fd, &out, len - done, 0);

		if (n <= 0)
			die(f, "copy_file_range");
		done += (size_t)n;
	}
	if (dst > f->size)
		memset(f->model + f->size, 0, dst - f->size);
	memmove(f->model + dst, f->model + src, len);
	if (dst + len > f->size)
		f->size = dst + len;
}

static void reopen(struct fsx *f, int trunc)
{
	int flags = (f->readonly ? O_RDONLY : O_RDWR | O_CREAT) | (f->direct ? O_DIRECT : 0) |
		    (trunc ? O_TRUNC : 0);

	logop(f, trunc ? "reopen O_TRUNC (size was %zu, direct %zu)" : "reopen (size %zu, direct %zu)",
	      f->size, (size_t)f->direct);
	if (f->fd >= 0 && close(f->fd) != 0)
		die(f, "close");
	f->fd = open(f->path, flags, 0644);
	if (f->fd < 0)
		die(f, "open");
	if (trunc)
		f->size = 0;
}

static void whole_check(struct fsx *f)
{
	unsigned char *got = malloc(f->size + 1);
	size_t done = 0;
	int fd = open(f->path, O_RDONLY);

	if (!got || fd < 0)
		die(f, "final open");
	while (done < f->size) {
		ssize_t n = read(fd, got + done, f->size - done);

		if (n <= 0)
			die(f, "final read");
		done += (size_t)n;
	}
	compare(f, got, 0, f->size, "final read");
	close(fd);
	free(got);
}

/* -R: the model is REF's content, and MAXLEN its size (at least 2 pages). */
static int load_ref(struct fsx *f, const char *ref)
{
	int fd = open(ref, O_RDONLY);
	struct stat st;
	size_t done = 0;

	if (fd < 0 || fstat(fd, &st) != 0) {
		perror(ref);
		return -1;
	}
	f->size = (size_t)st.st_size;
	f->maxlen = f->size > 2 * PAGE ? f->size : 2 * PAGE;
	f->model = calloc(1, f->maxlen);
	while (f->model && done < f->size) {
		ssize_t n = read(fd, f->model + done, f->size - done);

		if (n <= 0) {
			perror(ref);
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	close(fd);
	f->readonly = 1;
	return f->model ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct fsx f = { .fd = -1, .maxlen = 256 * 1024, .rng = 1 };
	const char *ref = NULL;
	long ops = 10000;
	int c;

	while ((c = getopt(argc, argv, "n:s:l:DR:")) != -1) {
		switch (c) {
		case 'n': ops = atol(optarg); break;
		case 's': f.rng = strtoull(optarg, NULL, 0) * 0x9E3779B97F4A7C15ull | 1; break;
		case 'l': f.maxlen = (size_t)atol(optarg); break;
		case 'D': f.direct = 1; break;
		case 'R': ref = optarg; break;
		default: goto usage;
		}
	}
	if (optind != argc - 1 || f.maxlen < 2 * PAGE)
		goto usage;
	f.path = argv[optind];
	if (ref && load_ref(&f, ref) != 0)
		return 1;
	if (!f.model)
		f.model = calloc(1, f.maxlen);
	if (!f.model || posix_memalign((void **)&f.buf, PAGE, f.maxlen) != 0)
		return 1;
	if (!f.readonly)
		unlink(f.path);
	reopen(&f, !f.readonly);
	for (f.op = 0; f.op < ops; f.op++) {
		unsigned k = (unsigned)below(&f, 100);

		f.hist[f.op % HIST][0] = '\0';

		if (f.readonly) {
			if (k < 50) op_read(&f);
			else if (k < 95 && !f.direct) op_mapread(&f);
			else reopen(&f, 0);
		} else if (k < 30) op_write(&f);
		else if (k < 55) op_read(&f);
		else if (k < 63) op_truncate(&f);
		else if (k < 73 && !f.direct) op_mapread(&f);
		else if (k < 81 && !f.direct) op_mapwrite(&f);
		else if (k < 89) op_falloc(&f);
		else if (k < 96) op_copy(&f);
		else reopen(&f, k % 3 == 0);
		check_size(&f);
	}
	whole_check(&f);
	printf("fsx %s: %ld operations, final size %zu: ok%s%s%s\n", f.path, ops, f.size,
	       f.no_falloc[0] ? " (no fallocate)" : "", f.no_falloc[1] ? " (no punch)" : "",
	       f.no_falloc[2] ? " (no zero range)" : "");
	close(f.fd);
	if (!f.readonly)
		unlink(f.path);
	free(f.model);
	free(f.buf);
	return 0;
usage:
	fprintf(stderr, "usage: fsx FILE [-n OPS] [-s SEED] [-l MAXLEN>=8192] [-D] [-R REF]\n");
	return 2;
}
