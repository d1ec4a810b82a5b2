/* SPDX-License-Identifier: MIT */
/*
 * difftest [-s SEED] [-n OPS] [-q] [-v] [-x] [-w] REF TEST: a differential
 * conformance tester (-q: no line at the end, -v: the op log as it goes, -x and
 * -w: below).
 * A seeded, reproducible random sequence of system calls on a small name space
 * (three directories deep, files, symlinks, hard links, open descriptors) runs
 * side by side in two directories: REF on kernel tmpfs (the reference: where
 * the two disagree, tmpfs wins) and TEST on a cairn writable layer. Both must
 * start with the same content (empty, or the same tree).
 *
 * After each operation it compares the return value and errno, the data the
 * call returned, and then the whole name space: lstat of every name (type,
 * mode, nlink, size, uid, gid, whether st_blocks is zero, and whether ctime and
 * mtime *changed* since the last operation, never their values, except times
 * set explicitly with utimensat), every directory's listing (names, d_type)
 * and fstat of every open descriptor (including unlinked and renamed files).
 * On the first mismatch it prints the seed, the operation's index, what
 * differed and the op log, and exits 1; 0 after OPS operations.
 *
 * Exceptions where cairn is right and tmpfs differs for a legitimate reason
 * (docs/MOUNT.md, "Differential testing"): directory st_size (tmpfs counts
 * entries, cairn reports 0), st_blocks beyond zero or not (allocation units
 * differ), lseek on a directory other than SEEK_SET/SEEK_CUR and SEEK_DATA/HOLE
 * in a preallocated file (inexact_seek), and with -x (an overlay): EXDEV from
 * renaming a directory of the read-only image (the op is then not run on REF,
 * so both stay equal), st_nlink 1 of a merged directory and of an image file
 * unlinked while open, on its descriptor (both as overlayfs). With -w (a mount
 * with -o writeback, where the kernel keeps sizes and times): st_blocks beyond
 * zero or not, SEEK_DATA/SEEK_HOLE (the kernel's, every file all data), and the
 * times fallocate() moves or not (the kernel's, kernel_marked()).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define NFD 6
#define BUFMAX 65536
#define MAXOPS 200000
#define LOGLEN 160

/* The name space: every operation picks its names from here. */
static const char *const names[] = {
	"a", "b", "l", "d", "d/a", "d/b", "d/e", "d/e/a", "d/e/l", "f", "f/a", ".",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

/* Symlink targets: relative, never leaving the root (no ".."). */
static const char *const targets[] = {
	"a", "b", "d", "d/a", "missing", "l", "d/e", "e/a", "a/", "",
};
#define NTARGETS (sizeof(targets) / sizeof(targets[0]))

static const char *const xnames[] = {
	"user.a", "user.b", "trusted.t", "security.s", "user.",
	"bogus.x",
};
#define NXNAMES (sizeof(xnames) / sizeof(xnames[0]))

struct times {
	int exists;
	struct timespec m, c;
};

struct side {
	const char *label;
	int root;
	int fd[NFD];
	struct times prev[NNAMES];
};

struct res {
	long ret;
	int err;
	size_t n; /* bytes of data in buf that must match */
	unsigned char buf[BUFMAX];
};

enum kind {
	OPEN, CLOSE, READ, PREAD, WRITE, PWRITE, FTRUNC, TRUNC, FALLOC, LSEEK,
	MKDIR, RMDIR, UNLINK, LINK, SYMLINK, READLINK, RENAME, CHMOD, FCHMOD,
	CHOWN, UTIMENS, FUTIMENS, SETX, GETX, LISTX, REMOVEX, FSETX, NKINDS
};

struct op {
	enum kind kind;
	char p1[16], p2[16];
	int slot, flags, mode, which;
	long off;
	size_t len;
	uint64_t dseed;
	uid_t uid;
	gid_t gid;
};

struct dt {
	uint64_t rng;
	int exdev; /* -x: overlay: EXDEV renaming image directories, merged nlink 1 */
	int writeback; /* -w: -o writeback: st_blocks lags the kernel's cached writes */
	long nops;
	char (*log)[LOGLEN];
	char *failed; /* per op: failed alike on both sides */
	struct res r1, r2;
	ino_t prealloc[64]; /* REF inodes fallocate has preallocated (dir_seek) */
	int nprealloc;
	struct timespec last_op; /* coarse clock when the last op ended */
	unsigned char data[BUFMAX];
};

static uint64_t rnd(struct dt *t)
{
	t->rng ^= t->rng << 13;
	t->rng ^= t->rng >> 7;
	t->rng ^= t->rng << 17;
	return t->rng;
}

static unsigned below(struct dt *t, unsigned n)
{
	return n ? (unsigned)(rnd(t) % n) : 0;
}

/* A name from the pool, now and then with a trailing slash or as "." */
static void pick(struct dt *t, char *out)
{
	unsigned r = below(t, 40);

	if (r == 0)
		strcpy(out, ".");
	else if (r == 1)
		snprintf(out, 16, "%s/", names[below(t, NNAMES)]);
	else
		strcpy(out, names[below(t, NNAMES)]);
}

/* An offset: mostly small, sometimes past any EOF, at page edges. */
static long offset(struct dt *t)
{
	switch (below(t, 4)) {
	case 0: return below(t, 300);
	case 1: return 4096L * below(t, 20) + (long)below(t, 3) - 1; /* -1: EINVAL */
	case 2: return below(t, 70000);
	default: return 4096L * below(t, 40) + below(t, 4096);
	}
}

static size_t length(struct dt *t)
{
	return below(t, 3) ? below(t, 600) : below(t, 20000);
}

static const int open_flag_bits[] = {
	O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_DIRECTORY, O_NOFOLLOW,
};

static void gen(struct dt *t, struct op *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = (enum kind)below(t, NKINDS);
	pick(t, o->p1);
	pick(t, o->p2);
	o->slot = (int)below(t, NFD);
	o->off = offset(t);
	o->len = length(t);
	o->dseed = rnd(t) | 1;
	o->mode = (int)(below(t, 2) ? 0644 : below(t, 07777 + 1));
	switch (o->kind) {
	case OPEN: {
		static const int acc[] = { O_RDONLY, O_WRONLY, O_RDWR };
		o->flags = acc[below(t, 3)];
		for (size_t i = 0; i < sizeof(open_flag_bits) / sizeof(open_flag_bits[0]); i++)
			if (below(t, 3) == 0)
				o->flags |= open_flag_bits[i];
		if (below(t, 2))
			o->flags |= O_CREAT;
		break;
	}
	case FALLOC: {
		static const int modes[] = {
			0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, FALLOC_FL_ZERO_RANGE,
			FALLOC_FL_PUNCH_HOLE,
		};
		o->flags = modes[below(t, 6)];
		break;
	}
	case LSEEK: {
		static const int wh[] = { SEEK_SET, SEEK_CUR, SEEK_END, SEEK_DATA, SEEK_HOLE };
		o->which = wh[below(t, 5)];
		if (o->which == SEEK_CUR || o->which == SEEK_END)
			o->off -= 200;
		break;
	}
	case SYMLINK:
		snprintf(o->p2, sizeof(o->p2), "%s", targets[below(t, NTARGETS)]);
		break;
	case RENAME: {
		static const int rf[] = { 0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE, 1 << 6 };
		o->flags = rf[below(t, 5)];
		break;
	}
	case CHOWN: {
		static const unsigned ids[] = { 0, 1000, 65534, (unsigned)-1 };
		o->uid = ids[below(t, 4)];
		o->gid = ids[below(t, 4)];
		o->flags = below(t, 2) ? AT_SYMLINK_NOFOLLOW : 0;
		break;
	}
	case UTIMENS: case FUTIMENS:
		o->which = (int)below(t, 4); /* 0 NOW/NOW, 1 set/OMIT, 2 OMIT/NOW, 3 set/set */
		o->flags = o->kind == UTIMENS && below(t, 2) ? AT_SYMLINK_NOFOLLOW : 0;
		break;
	case SETX: case FSETX: {
		static const int xf[] = { 0, 0, XATTR_CREATE, XATTR_REPLACE };
		o->flags = xf[below(t, 4)];
		o->which = (int)below(t, NXNAMES);
		o->len = below(t, 40);
		o->mode = (int)below(t, 2); /* lsetxattr */
		break;
	}
	case GETX: case LISTX: case REMOVEX: {
		static const size_t sz[] = { 0, 1, 3, 64, 4096 };
		o->which = (int)below(t, NXNAMES);
		o->len = sz[below(t, 5)];
		o->mode = (int)below(t, 2); /* l- variant */
		break;
	}
	case READLINK:
		o->len = below(t, 2) ? 64 : below(t, 4);
		break;
	default:
		break;
	}
}

static const char *kname(enum kind k)
{
	static const char *const n[] = {
		"open", "close", "read", "pread", "write", "pwrite", "ftruncate",
		"truncate", "fallocate", "lseek", "mkdir", "rmdir", "unlink", "link",
		"symlink", "readlink", "rename", "chmod", "fchmod", "chown",
		"utimensat", "futimens", "setxattr", "getxattr", "listxattr",
		"removexattr", "fsetxattr",
	};
	return n[k];
}

static void describe(const struct op *o, char *out, size_t cap)
{
	const char *k = kname(o->kind);

	switch (o->kind) {
	case OPEN:
		snprintf(out, cap, "fd%d = open(%s, %#o, %#o)", o->slot, o->p1, o->flags, o->mode);
		break;
	case CLOSE: case READ: case FTRUNC:
		snprintf(out, cap, "%s(fd%d, %ld/%zu)", k, o->slot, o->off, o->len);
		break;
	case PREAD: case WRITE: case PWRITE:
		snprintf(out, cap, "%s(fd%d, len %zu, off %ld)", k, o->slot, o->len, o->off);
		break;
	case FALLOC:
		snprintf(out, cap, "fallocate(fd%d, %#x, %ld, %zu)", o->slot, o->flags, o->off, o->len);
		break;
	case LSEEK:
		snprintf(out, cap, "lseek(fd%d, %ld, %d)", o->slot, o->off, o->which);
		break;
	case TRUNC:
		snprintf(out, cap, "truncate(%s, %ld)", o->p1, o->off);
		break;
	case MKDIR: case CHMOD:
		snprintf(out, cap, "%s(%s, %#o)", k, o->p1, o->mode);
		break;
	case FCHMOD:
		snprintf(out, cap, "fchmod(fd%d, %#o)", o->slot, o->mode);
		break;
	case RMDIR: case UNLINK:
		snprintf(out, cap, "%s(%s)", k, o->p1);
		break;
	case READLINK:
		snprintf(out, cap, "readlink(%s, %zu)", o->p1, o->len);
		break;
	case LINK:
		snprintf(out, cap, "link(%s, %s)", o->p1, o->p2);
		break;
	case SYMLINK:
		snprintf(out, cap, "symlink(\"%s\", %s)", o->p2, o->p1);
		break;
	case RENAME:
		snprintf(out, cap, "renameat2(%s, %s, %#x)", o->p1, o->p2, o->flags);
		break;
	case CHOWN:
		snprintf(out, cap, "fchownat(%s, %d, %d, %#x)", o->p1, (int)o->uid, (int)o->gid, o->flags);
		break;
	case UTIMENS:
		snprintf(out, cap, "utimensat(%s, case %d, %#x)", o->p1, o->which, o->flags);
		break;
	case FUTIMENS:
		snprintf(out, cap, "futimens(fd%d, case %d)", o->slot, o->which);
		break;
	case SETX:
		snprintf(out, cap, "%s%s(%s, %s, len %zu, %d)", o->mode ? "l" : "", k, o->p1,
			 xnames[o->which], o->len, o->flags);
		break;
	case FSETX:
		snprintf(out, cap, "fsetxattr(fd%d, %s, len %zu, %d)", o->slot, xnames[o->which],
			 o->len, o->flags);
		break;
	case GETX: case REMOVEX:
		snprintf(out, cap, "%s%s(%s, %s, %zu)", o->mode ? "l" : "", k, o->p1, xnames[o->which], o->len);
		break;
	case LISTX:
		snprintf(out, cap, "%s%s(%s, %zu)", o->mode ? "l" : "", k, o->p1, o->len);
		break;
	default:
		snprintf(out, cap, "%s", k);
	}
}

static void fill(unsigned char *b, size_t n, uint64_t s)
{
	for (size_t i = 0; i < n; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		b[i] = (unsigned char)s;
	}
}

static void times_for(const struct op *o, struct timespec ts[2])
{
	static const long set_sec = 1000000000L; /* 2001: never "now" */

	ts[0].tv_sec = ts[1].tv_sec = set_sec + (long)(o->dseed % 1000);
	ts[0].tv_nsec = ts[1].tv_nsec = (long)(o->dseed % 1000000000UL);
	switch (o->which) {
	case 0: ts[0].tv_nsec = ts[1].tv_nsec = UTIME_NOW; break;
	case 1: ts[1].tv_nsec = UTIME_OMIT; break;
	case 2: ts[0].tv_nsec = UTIME_OMIT; ts[1].tv_nsec = UTIME_NOW; break;
	default: break;
	}
}

/* Sorts a listxattr answer (names in any order) so two can be compared. */
static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void sort_names(unsigned char *buf, size_t n)
{
	char copy[4096], *v[256], *p = copy;
	size_t k = 0, used = 0;

	if (n > sizeof(copy))
		return;
	memcpy(copy, buf, n);
	while ((size_t)(p - copy) < n && k < 256) {
		v[k++] = p;
		p += strlen(p) + 1;
	}
	qsort(v, k, sizeof(v[0]), cmpstr);
	for (size_t i = 0; i < k; i++) {
		size_t l = strlen(v[i]) + 1;
		memcpy(buf + used, v[i], l);
		used += l;
	}
}

/* Runs one operation on one side; the answer goes to r. */
static void run(struct dt *t, struct side *s, const struct op *o, struct res *r)
{
	int fd = s->fd[o->slot];
	long ret = 0;
	struct timespec ts[2];

	r->n = 0;
	errno = 0;
	switch (o->kind) {
	case OPEN:
		if (fd >= 0)
			close(fd);
		s->fd[o->slot] = openat(s->root, o->p1, o->flags, o->mode);
		ret = s->fd[o->slot] >= 0 ? 0 : -1;
		break;
	case CLOSE:
		ret = fd >= 0 ? close(fd) : 0;
		s->fd[o->slot] = -1;
		break;
	case READ:
		ret = read(fd, r->buf, o->len);
		break;
	case PREAD:
		ret = pread(fd, r->buf, o->len, o->off);
		break;
	case WRITE:
		fill(t->data, o->len, o->dseed);
		ret = write(fd, t->data, o->len);
		break;
	case PWRITE:
		fill(t->data, o->len, o->dseed);
		ret = pwrite(fd, t->data, o->len, o->off);
		break;
	case FTRUNC:
		ret = ftruncate(fd, o->off);
		break;
	case TRUNC: {
		/* truncate(2) has no *at form: open the name O_PATH, truncate through /proc. */
		char p[64];
		int pfd = openat(s->root, o->p1, O_PATH);

		if (pfd < 0) {
			ret = -1;
			break;
		}
		snprintf(p, sizeof(p), "/proc/self/fd/%d", pfd);
		ret = truncate(p, o->off);
		int e = errno;
		close(pfd);
		errno = e;
		break;
	}
	case FALLOC:
		ret = fallocate(fd, o->flags, o->off, (off_t)o->len + 1);
		break;
	case LSEEK:
		ret = lseek(fd, o->off, o->which);
		break;
	case MKDIR:
		ret = mkdirat(s->root, o->p1, (mode_t)o->mode);
		break;
	case RMDIR:
		ret = unlinkat(s->root, o->p1, AT_REMOVEDIR);
		break;
	case UNLINK:
		ret = unlinkat(s->root, o->p1, 0);
		break;
	case LINK:
		ret = linkat(s->root, o->p1, s->root, o->p2, 0);
		break;
	case SYMLINK:
		ret = symlinkat(o->p2, s->root, o->p1);
		break;
	case READLINK:
		ret = readlinkat(s->root, o->p1, (char *)r->buf, o->len);
		break;
	case RENAME:
		ret = renameat2(s->root, o->p1, s->root, o->p2, (unsigned)o->flags);
		break;
	case CHMOD:
		ret = fchmodat(s->root, o->p1, (mode_t)o->mode, 0);
		break;
	case FCHMOD:
		ret = fchmod(fd, (mode_t)o->mode);
		break;
	case CHOWN:
		ret = fchownat(s->root, o->p1, o->uid, o->gid, o->flags);
		break;
	case UTIMENS:
		times_for(o, ts);
		ret = utimensat(s->root, o->p1, ts, o->flags);
		break;
	case FUTIMENS:
		times_for(o, ts);
		ret = futimens(fd, ts);
		break;
	case SETX: case GETX: case LISTX: case REMOVEX: {
		/* The xattr calls have no *at form either: go through an O_PATH fd. */
		char p[64];
		int pfd = openat(s->root, o->p1, O_PATH | (o->mode ? O_NOFOLLOW : 0));

		if (pfd < 0) {
			ret = -1;
			break;
		}
		snprintf(p, sizeof(p), "/proc/self/fd/%d", pfd);
		if (o->kind == SETX) {
			fill(t->data, o->len, o->dseed);
			ret = setxattr(p, xnames[o->which], t->data, o->len, o->flags);
		} else if (o->kind == GETX) {
			ret = getxattr(p, xnames[o->which], r->buf, o->len);
		} else if (o->kind == LISTX) {
			ret = listxattr(p, (char *)r->buf, o->len);
			if (ret > 0 && o->len)
				sort_names(r->buf, (size_t)ret);
		} else {
			ret = removexattr(p, xnames[o->which]);
		}
		int e = errno;
		close(pfd);
		errno = e;
		break;
	}
	case FSETX:
		fill(t->data, o->len, o->dseed);
		ret = fsetxattr(fd, xnames[o->which], t->data, o->len, o->flags);
		break;
	default:
		break;
	}
	r->ret = ret;
	r->err = ret < 0 ? errno : 0;
	if (ret > 0 && (o->kind == READ || o->kind == PREAD || o->kind == READLINK ||
			(o->kind == GETX && o->len) || (o->kind == LISTX && o->len)))
		r->n = (size_t)ret;
}


static void report(struct dt *t, uint64_t seed, long i, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void report(struct dt *t, uint64_t seed, long i, const char *fmt, ...)
{
	va_list ap;

	printf("difftest: MISMATCH seed %llu op %ld: %s\n  ", (unsigned long long)seed, i, t->log[i]);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	/* Ops that failed on both sides changed nothing: the replay leaves them out. */
	long left_out = 0;
	for (long k = 0; k < i; k++)
		left_out += t->failed[k];
	printf("\n  replay: difftest -s %llu -n %ld REF TEST; the op log with REF's results"
	       " (%ld ops that failed on both sides, changing nothing, left out):\n",
	       (unsigned long long)seed, i + 1, left_out);
	for (long k = 0; k <= i; k++)
		if (!t->failed[k] || k == i)
			printf("  %5ld %s\n", k, t->log[k]);
	fflush(stdout);
}

static int same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* One directory's listing as sorted "name:type" lines (without . and ..). */
static int listing(int root, const char *path, char *out, size_t cap)
{
	int dfd = openat(root, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	char *v[64], *store = out;
	size_t k = 0, used = 0;
	struct dirent *e;
	DIR *d;

	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -ENOMEM;
	}
	static char tmp[64][NAME_MAX + 16];
	while ((e = readdir(d)) && k < 64) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(tmp[k], sizeof(tmp[k]), "%s:%d", e->d_name, e->d_type);
		v[k] = tmp[k];
		k++;
	}
	closedir(d);
	qsort(v, k, sizeof(v[0]), cmpstr);
	out[0] = 0;
	for (size_t i = 0; i < k; i++)
		used += (size_t)snprintf(store + used, used < cap ? cap - used : 0, "%s ", v[i]);
	return 0;
}

/* What compare_state() allows: CMP_OVERLAY (-x), CMP_WRITEBACK (-w). */
#define CMP_OVERLAY 1
#define CMP_WRITEBACK 2
#define CMP_NO_TIMES 4 /* whether times changed is not compared (taken as they are) */

/* overlay: a merged directory (image and RAM) has st_nlink 1, as on overlayfs.
 * writeback: st_blocks is the daemon's, which has not seen the pages the kernel
 * holds dirty yet (docs/MOUNT.md), so only its size is compared. */
static int cmp_stat(const char *what, const struct stat *a, const struct stat *b, int allow,
		    char *msg, size_t cap)
{
	int overlay = allow & CMP_OVERLAY;

	if (a->st_mode != b->st_mode)
		return snprintf(msg, cap, "%s: mode ref %#o test %#o", what, a->st_mode, b->st_mode);
	if (a->st_nlink != b->st_nlink && !(overlay && S_ISDIR(a->st_mode) && b->st_nlink == 1))
		return snprintf(msg, cap, "%s: nlink ref %lu test %lu", what,
				(unsigned long)a->st_nlink, (unsigned long)b->st_nlink);
	if (!S_ISDIR(a->st_mode) && a->st_size != b->st_size)
		return snprintf(msg, cap, "%s: size ref %lld test %lld", what,
				(long long)a->st_size, (long long)b->st_size);
	if (a->st_uid != b->st_uid || a->st_gid != b->st_gid)
		return snprintf(msg, cap, "%s: owner ref %d:%d test %d:%d", what, (int)a->st_uid,
				(int)a->st_gid, (int)b->st_uid, (int)b->st_gid);
	if (S_ISREG(a->st_mode) && !(allow & CMP_WRITEBACK) &&
	    (a->st_blocks == 0) != (b->st_blocks == 0))
		return snprintf(msg, cap, "%s: st_blocks ref %lld test %lld", what,
				(long long)a->st_blocks, (long long)b->st_blocks);
	/* Times set explicitly (2001) must be the same; others only change alike. */
	if (a->st_mtim.tv_sec < 1500000000L && !same_time(&a->st_mtim, &b->st_mtim))
		return snprintf(msg, cap, "%s: mtime ref %lld.%09ld test %lld.%09ld", what,
				(long long)a->st_mtim.tv_sec, a->st_mtim.tv_nsec,
				(long long)b->st_mtim.tv_sec, b->st_mtim.tv_nsec);
	return 0;
}

/* Compares the whole name space and the open descriptors; 0 when equal. */
static int compare_state(struct side *a, struct side *b, int allow, char *msg, size_t cap)
{
	int overlay = allow & CMP_OVERLAY;

	static char la[8192], lb[8192];

	for (size_t i = 0; i < NNAMES; i++) {
		struct stat sa, sb;
		int ra = fstatat(a->root, names[i], &sa, AT_SYMLINK_NOFOLLOW) ? errno : 0;
		int rb = fstatat(b->root, names[i], &sb, AT_SYMLINK_NOFOLLOW) ? errno : 0;

		if (ra != rb)
			return snprintf(msg, cap, "lstat %s: ref %s test %s", names[i],
					strerror(ra), strerror(rb));
		if (ra) {
			a->prev[i].exists = b->prev[i].exists = 0;
			continue;
		}
		if (cmp_stat(names[i], &sa, &sb, allow, msg, cap))
			return 1;
		if (a->prev[i].exists && b->prev[i].exists && !(allow & CMP_NO_TIMES)) {
			int ma = !same_time(&a->prev[i].m, &sa.st_mtim);
			int mb = !same_time(&b->prev[i].m, &sb.st_mtim);
			int ca = !same_time(&a->prev[i].c, &sa.st_ctim);
			int cb = !same_time(&b->prev[i].c, &sb.st_ctim);

			if (ma != mb)
				return snprintf(msg, cap, "%s: mtime %s on ref, %s on test", names[i],
						ma ? "changed" : "unchanged", mb ? "changed" : "unchanged");
			if (ca != cb)
				return snprintf(msg, cap, "%s: ctime %s on ref, %s on test", names[i],
						ca ? "changed" : "unchanged", cb ? "changed" : "unchanged");
		}
		a->prev[i] = (struct times){ 1, sa.st_mtim, sa.st_ctim };
		b->prev[i] = (struct times){ 1, sb.st_mtim, sb.st_ctim };
		if (S_ISDIR(sa.st_mode)) {
			int ea = listing(a->root, names[i], la, sizeof(la));
			int eb = listing(b->root, names[i], lb, sizeof(lb));

			if (ea != eb || strcmp(la, lb))
				return snprintf(msg, cap, "readdir %s: ref [%s] test [%s]", names[i], la, lb);
		}
	}
	if (listing(a->root, ".", la, sizeof(la)) || listing(b->root, ".", lb, sizeof(lb)) ||
	    strcmp(la, lb))
		return snprintf(msg, cap, "readdir .: ref [%s] test [%s]", la, lb);
	for (int k = 0; k < NFD; k++) {
		struct stat sa, sb;
		char what[16];

		if ((a->fd[k] < 0) != (b->fd[k] < 0))
			return snprintf(msg, cap, "fd%d: open on one side only", k);
		if (a->fd[k] < 0)
			continue;
		if (fstat(a->fd[k], &sa) || fstat(b->fd[k], &sb))
			return snprintf(msg, cap, "fstat fd%d: %s", k, strerror(errno));
		snprintf(what, sizeof(what), "fd%d", k);
		/* overlay: an image file unlinked while open keeps link count 1 on
		 * its descriptor (the image's inode, as on overlayfs). */
		if (overlay && sa.st_nlink == 0 && sb.st_nlink == 1)
			sb.st_nlink = 0;
		if (cmp_stat(what, &sa, &sb, allow, msg, cap))
			return 1;
	}
	return 0;
}

/* Waits until the coarse clock tmpfs stamps times with has ticked since *last
 * (its value when the previous operation ended), so that an operation that
 * sets a time always sets a new one on the reference too. */
static void next_tick(const struct timespec *last)
{
	struct timespec now, nap = { 0, 200000 };

	for (;;) {
		clock_gettime(CLOCK_REALTIME_COARSE, &now);
		if (!same_time(&now, last))
			return;
		nanosleep(&nap, NULL);
	}
}

/* -w: under write-back the kernel keeps a file's times, and fallocate() sets
 * them its own way: it marks the file modified (file_modified()) before it asks
 * the daemon, so a mode the daemon refuses still moves mtime and ctime there
 * (tmpfs refuses it first), and seed 1 op 388 once saw a fallocate that grew a
 * file leave its mtime where it was (once in four runs). After any fallocate
 * REF takes TEST's mtime, so that later checks of times set explicitly still
 * compare like with like. 1 when that happened. */
static int kernel_marked(const struct dt *t, struct side *ref, struct side *test,
			 const struct op *o)
{
	struct stat st;
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { 0, 0 } };

	if (!t->writeback || o->kind != FALLOC || ref->fd[o->slot] < 0 ||
	    test->fd[o->slot] < 0 || fstat(test->fd[o->slot], &st))
		return 0;
	ts[1] = st.st_mtim;
	futimens(ref->fd[o->slot], ts);
	return 1;
}

static int cmp_allow(const struct dt *t)
{
	return (t->exdev ? CMP_OVERLAY : 0) | (t->writeback ? CMP_WRITEBACK : 0);
}

static int is_image_dir_exdev(struct dt *t, const struct op *o, const struct res *r)
{
	return t->exdev && o->kind == RENAME && r->ret < 0 && r->err == EXDEV;
}

/* Answers that may legitimately differ, not compared:
 * - lseek(SEEK_END, SEEK_DATA, SEEK_HOLE) on a directory: tmpfs's directories
 *   take SEEK_SET and SEEK_CUR only (EINVAL), the kernel's FUSE directories
 *   seek as files of st_size 0 (ENXIO, or the offset): nothing cairn answers;
 * - SEEK_DATA/SEEK_HOLE in a file fallocate has preallocated: tmpfs calls
 *   preallocated pages never written holes, cairn calls them data (lseek(2)
 *   allows either: a hole may always be reported as data). */
static int inexact_seek(struct dt *t, const struct side *ref, const struct op *o)
{
	struct stat st;

	if (o->kind != LSEEK || o->which == SEEK_SET || o->which == SEEK_CUR ||
	    ref->fd[o->slot] < 0 || fstat(ref->fd[o->slot], &st))
		return 0;
	if (S_ISDIR(st.st_mode))
		return 1;
	/* -w: the daemon cannot see dirty pages, so the kernel answers SEEK_DATA
	 * and SEEK_HOLE from its own size: every file all data (docs/MOUNT.md). */
	if (t->writeback && (o->which == SEEK_DATA || o->which == SEEK_HOLE))
		return 1;
	for (int k = 0; k < t->nprealloc; k++)
		if (t->prealloc[k] == st.st_ino && o->which != SEEK_END)
			return 1;
	return 0;
}

static void note_prealloc(struct dt *t, const struct side *ref, const struct op *o,
			  const struct res *r)
{
	struct stat st;

	if (o->kind == FALLOC && !(o->flags & FALLOC_FL_PUNCH_HOLE) && r->ret == 0 &&
	    !fstat(ref->fd[o->slot], &st) && t->nprealloc < 64)
		t->prealloc[t->nprealloc++] = st.st_ino;
}

static int step(struct dt *t, uint64_t seed, long i, struct side *ref, struct side *test)
{
	struct op o;
	char msg[8400];

	gen(t, &o);
	describe(&o, t->log[i], LOGLEN);
	if (o.kind != READ && o.kind != PREAD && o.kind != LSEEK && o.kind != READLINK &&
	    o.kind != GETX && o.kind != LISTX && o.kind != CLOSE)
		next_tick(&t->last_op); /* may set a time */
	run(t, test, &o, &t->r2);
	if (is_image_dir_exdev(t, &o, &t->r2)) {
		snprintf(t->log[i] + strlen(t->log[i]), LOGLEN - strlen(t->log[i]),
			 " = EXDEV (image dir, skipped on ref)");
		return 0;
	}
	int had_fd = ref->fd[o.slot] >= 0;

	run(t, ref, &o, &t->r1);
	clock_gettime(CLOCK_REALTIME_COARSE, &t->last_op);
	snprintf(t->log[i] + strlen(t->log[i]), LOGLEN - strlen(t->log[i]), " = %ld%s%s",
		 t->r1.ret, t->r1.err ? " " : "", t->r1.err ? strerror(t->r1.err) : "");
	note_prealloc(t, ref, &o, &t->r1);
	if (inexact_seek(t, ref, &o)) {
		snprintf(t->log[i] + strlen(t->log[i]), LOGLEN - strlen(t->log[i]),
			 " (test %ld: not compared)", t->r2.ret);
		/* Both descriptors go on from REF's position. */
		lseek(test->fd[o.slot], lseek(ref->fd[o.slot], 0, SEEK_CUR), SEEK_SET);
	} else if (t->r1.ret != t->r2.ret || t->r1.err != t->r2.err) {
		report(t, seed, i, "result: ref %ld (%s) test %ld (%s)", t->r1.ret,
		       strerror(t->r1.err), t->r2.ret, strerror(t->r2.err));
		return 1;
	}
	if (t->r1.n != t->r2.n || memcmp(t->r1.buf, t->r2.buf, t->r1.n)) {
		size_t k = 0;

		while (k < t->r1.n && t->r1.buf[k] == t->r2.buf[k])
			k++;
		report(t, seed, i, "data differs at byte %zu of %zu", k, t->r1.n);
		return 1;
	}
	/* A call that failed changed nothing (but a failed open closed its slot's
	 * old descriptor first): the replay can leave it out. */
	t->failed[i] = (t->r1.ret < 0 && o.kind != OPEN && o.kind != CLOSE) ||
		       (((o.kind == OPEN && t->r1.ret < 0) || o.kind == CLOSE) && !had_fd);
	if (compare_state(ref, test, cmp_allow(t) | (kernel_marked(t, ref, test, &o) ? CMP_NO_TIMES : 0),
			  msg, sizeof(msg))) {
		report(t, seed, i, "after the op: %s", msg);
		return 1;
	}
	return 0;
}

static int open_side(struct side *s, const char *label, const char *dir)
{
	s->label = label;
	s->root = open(dir, O_RDONLY | O_DIRECTORY);
	for (int k = 0; k < NFD; k++)
		s->fd[k] = -1;
	memset(s->prev, 0, sizeof(s->prev));
	if (s->root < 0) {
		fprintf(stderr, "difftest: %s directory %s: %s\n", s->label, dir, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct dt t;
	struct side ref, test;
	uint64_t seed = 1;
	int c, quiet = 0, verbose = 0;
	char msg[8400];

	t.nops = 1000;
	while ((c = getopt(argc, argv, "s:n:qvxw")) != -1) {
		switch (c) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'n': t.nops = strtol(optarg, NULL, 0); break;
		case 'q': quiet = 1; break;
		case 'v': verbose = 1; break;
		case 'x': t.exdev = 1; break;
		case 'w': t.writeback = 1; break;
		default: goto usage;
		}
	}
	if (argc - optind != 2 || t.nops < 0 || t.nops > MAXOPS)
		goto usage;
	if (open_side(&ref, "ref", argv[optind]) || open_side(&test, "test", argv[optind + 1]))
		return 2;
	t.log = calloc((size_t)t.nops + 1, LOGLEN);
	t.failed = calloc((size_t)t.nops + 1, 1);
	if (!t.log || !t.failed)
		return 2;
	t.rng = seed * 0x9E3779B97F4A7C15ULL | 1;
	umask(0);
	if (compare_state(&ref, &test, cmp_allow(&t), msg, sizeof(msg))) {
		printf("difftest: the two trees differ before the first op: %s\n", msg);
		return 1;
	}
	for (long i = 0; i < t.nops; i++) {
		if (step(&t, seed, i, &ref, &test))
			return 1;
		if (verbose)
			printf("%5ld %s\n", i, t.log[i]);
	}
	if (!quiet)
		printf("difftest: seed %llu: %ld ops, no difference\n", (unsigned long long)seed, t.nops);
	return 0;
usage:
	fprintf(stderr, "usage: difftest [-s SEED] [-n OPS] [-q] [-v] [-x] [-w] REF TEST\n");
	return 2;
}
