/* SPDX-License-Identifier: MIT */
/*
 * cairn extract: restore an image into a directory: every file type, hard links
 * as links, modes (setuid, sticky), owners when run as root, atime/mtime to the
 * nanosecond, xattrs, and sparse files with their holes.
 *
 * Safety: everything is created relative to an open directory descriptor
 * (openat/mkdirat/symlinkat/mknodat/linkat), never through a path that could
 * cross a symlink: directories are opened with O_NOFOLLOW, files are created
 * with O_EXCL|O_NOFOLLOW, and names other than single components ('/', '.',
 * '..', empty) are refused. So nothing is written outside DIR whatever the image
 * holds. Existing files are never overwritten.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "cli.h"

#define COPY_CHUNK (1u << 20)
#define MAX_DEPTH 4096

static void usage(FILE *f)
{
	fprintf(f, "usage: cairn extract [options] IMAGE DIR\n"
		   "Restores IMAGE into DIR (created if missing; existing files are never\n"
		   "overwritten): all file types, hard links, modes, owners (when root),\n"
		   "atime/mtime to the nanosecond, xattrs, and the holes of sparse files.\n"
		   "Nothing is ever written outside DIR, and symlinks that would lead\n"
		   "outside it (absolute, or climbing above it with '..', directly or\n"
		   "through other links) are refused.\n\n"
		   "options:\n"
		   "  --unsafe-links     extract such symlinks as they are (e.g. a root file\n"
		   "                     system to chroot into)\n\n%s",
		cli_image_opts_help);
}

struct ex {
	struct cairn_image *img;
	const char *image, *dir;
	int rootfd;
	int as_root;
	char **links;      /* per inode: the first extracted path of a multi-link file */
	uint8_t *seen;     /* directories entered (a hostile image may loop) */
	uint64_t inode_count;
	char *buf;         /* COPY_CHUNK bytes */
	char *xval;
	int failed;
	int unsafe_links;  /* --unsafe-links: keep symlinks that lead outside DIR */
};

static void ex_fail(struct ex *x, const char *path, int err)
{
	if (err == -CAIRN_ECORRUPT)
		cli_img_err("extract", x->image, x->img, path, err);
	else
		cli_err("extract", "%s/%s: %s", x->dir, path, cairn_strerror(err));
	x->failed = 1;
}

static int valid_name(const char *n)
{
	return n[0] && !strchr(n, '/') && strcmp(n, ".") && strcmp(n, "..");
}

static int write_all(int fd, const char *b, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, b, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Copies only the data ranges, then sets the size, so holes stay holes. */
static int copy_data(struct ex *x, cairn_ino_t ino, int fd, uint64_t size)
{
	uint64_t pos = 0;

	while (pos < size) {
		int64_t d = cairn_image_lseek(x->img, ino, pos, SEEK_DATA);
		int64_t h;

		if (d == -ENXIO)
			break;
		if (d < 0)
			return (int)d;
		h = cairn_image_lseek(x->img, ino, (uint64_t)d, SEEK_HOLE);
		if (h < 0)
			return (int)h;
		if ((uint64_t)h <= (uint64_t)d)
			return -CAIRN_ECORRUPT;
		for (pos = (uint64_t)d; pos < (uint64_t)h;) {
			size_t want = (uint64_t)h - pos < COPY_CHUNK ? (size_t)((uint64_t)h - pos)
								     : COPY_CHUNK;
			ssize_t n = cairn_image_read(x->img, ino, x->buf, want, pos);
			int rc;

			if (n <= 0)
				return n < 0 ? (int)n : -EIO;
			rc = write_all(fd, x->buf, (size_t)n, pos);
			if (rc)
				return rc;
			pos += (uint64_t)n;
		}
	}
	return ftruncate(fd, (off_t)size) ? -errno : 0;
}

/* xattrs on the open fd, or for fd < 0 (symlinks, devices, fifos) through
 * /proc/self/fd/DIRFD/NAME with lsetxattr, which does not follow the last name. */
static int set_xattrs(struct ex *x, cairn_ino_t ino, int fd, int dirfd, const char *name)
{
	ssize_t len = cairn_image_listxattr(x->img, ino, NULL, 0);
	char *names;
	int rc = 0;

	if (len <= 0)
		return (int)len;
	names = malloc((size_t)len);
	if (!names)
		return -ENOMEM;
	len = cairn_image_listxattr(x->img, ino, names, (size_t)len);
	if (len < 0)
		rc = (int)len;
	for (char *n = names; !rc && n < names + len; n += strlen(n) + 1) {
		ssize_t v = cairn_image_getxattr(x->img, ino, n, x->xval, CAIRN_XATTR_VALUE_MAX);
		char path[64 + CAIRN_NAME_MAX];

		if (v < 0) {
			rc = (int)v;
			break;
		}
		if (fd >= 0) {
			rc = fsetxattr(fd, n, x->xval, (size_t)v, 0);
		} else {
			snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dirfd, name);
			rc = lsetxattr(path, n, x->xval, (size_t)v, 0);
		}
		if (rc)
			rc = -errno;
	}
	free(names);
	return rc;
}

/* Owner, xattrs, mode, times, in that order: chown clears setuid bits, and the
 * times go last because everything before them may touch them. */
static int set_attrs(struct ex *x, cairn_ino_t ino, const struct cairn_stat *st, int fd,
		     int dirfd, const char *name)
{
	struct timespec ts[2] = { { (time_t)st->atime.sec, st->atime.nsec },
				  { (time_t)st->mtime.sec, st->mtime.nsec } };
	int lnk = S_ISLNK(st->mode);
	int rc;

	if (x->as_root) {
		rc = fd >= 0 ? fchown(fd, st->uid, st->gid)
			     : fchownat(dirfd, name, st->uid, st->gid, AT_SYMLINK_NOFOLLOW);
		if (rc)
			return -errno;
	}
	rc = set_xattrs(x, ino, fd, dirfd, name);
	if (rc)
		return rc;
	if (!lnk) {
		rc = fd >= 0 ? fchmod(fd, st->mode & 07777)
			     : fchmodat(dirfd, name, st->mode & 07777, 0);
		if (rc)
			return -errno;
	}
	rc = fd >= 0 ? futimens(fd, ts) : utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW);
	return rc ? -errno : 0;
}

static int extract_file(struct ex *x, cairn_ino_t ino, const struct cairn_stat *st, int dirfd,
			const char *name)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int rc;

	if (fd < 0)
		return -errno;
	rc = copy_data(x, ino, fd, st->size);
	if (!rc)
		rc = set_attrs(x, ino, st, fd, dirfd, name);
	if (close(fd) && !rc)
		rc = -errno;
	return rc;
}

static int extract_symlink(struct ex *x, cairn_ino_t ino, const struct cairn_stat *st, int dirfd,
			   const char *name)
{
	char target[CAIRN_SYMLINK_MAX + 1];
	ssize_t n = cairn_image_readlink(x->img, ino, target, CAIRN_SYMLINK_MAX);

	if (n < 0)
		return (int)n;
	target[n] = '\0';
	if (symlinkat(target, dirfd, name))
		return -errno;
	return set_attrs(x, ino, st, -1, dirfd, name);
}

static int extract_special(struct ex *x, cairn_ino_t ino, const struct cairn_stat *st, int dirfd,
			   const char *name)
{
	if (mknodat(dirfd, name, (st->mode & S_IFMT) | 0600, (dev_t)st->rdev))
		return -errno;
	return set_attrs(x, ino, st, -1, dirfd, name);
}

static char *join(const char *a, const char *b)
{
	size_t al = strlen(a), bl = strlen(b);
	char *p = malloc(al + bl + 2);

	if (!p)
		return NULL;
	memcpy(p, a, al);
	p[al] = '/';
	memcpy(p + al + 1, b, bl + 1);
	if (!al)
		memmove(p, p + 1, bl + 1);
	return p;
}

/* Opens the directory holding rel (a path we created, relative to DIR) one
 * component at a time with O_NOFOLLOW; *last gets the final name. */
static int open_parent(struct ex *x, const char *rel, const char **last)
{
	int fd = dup(x->rootfd);
	const char *p = rel, *slash;

	if (fd < 0)
		return -errno;
	while ((slash = strchr(p, '/'))) {
		char comp[CAIRN_NAME_MAX + 1];
		size_t n = (size_t)(slash - p);
		int nfd;

		if (n == 0 || n > CAIRN_NAME_MAX) {
			close(fd);
			return -EINVAL;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (nfd < 0)
			return -errno;
		fd = nfd;
		p = slash + 1;
	}
	*last = p;
	return fd;
}

static int extract_link(struct ex *x, const char *first, int dirfd, const char *name)
{
	const char *last = NULL;
	int pfd = open_parent(x, first, &last);
	int rc = 0;

	if (pfd < 0)
		return pfd;
	if (linkat(pfd, last, dirfd, name, 0))
		rc = -errno;
	close(pfd);
	return rc;
}

static void extract_dir(struct ex *x, cairn_ino_t dir, int dirfd, const char *rel, int depth);

/* A symlink at path (in directory rel) is extracted only if following it stays
 * inside DIR (extract_safe.c). Chains longer than the kernel follows are safe:
 * they end in ELOOP on the host too. Reports and returns 0 otherwise. */
static int link_safe(struct ex *x, const char *rel, const char *path, cairn_ino_t ino)
{
	char target[CAIRN_SYMLINK_MAX + 1];
	ssize_t n = cairn_image_readlink(x->img, ino, target, CAIRN_SYMLINK_MAX);
	int rc = n < 0 ? (int)n : cli_link_escapes(x->img, rel, target, (size_t)n);

	if (rc == 0 || rc == -ELOOP)
		return 1;
	if (rc == -EXDEV) {
		target[n] = '\0';
		cli_err("extract", "%s/%s: refusing symlink to '%s': it leads outside %s "
			"(--unsafe-links keeps it)", x->dir, path, target, x->dir);
		x->failed = 1;
	} else {
		ex_fail(x, path, rc);
	}
	return 0;
}

static void extract_entry(struct ex *x, int dirfd, const char *rel, const char *name,
			  cairn_ino_t ino, int depth)
{
	struct cairn_stat st;
	char *path = join(rel, name);
	int rc;

	if (!path) {
		ex_fail(x, rel, -ENOMEM);
		return;
	}
	if (!valid_name(name)) {
		cli_err("extract", "%s: refusing unsafe name in %s/", x->image, rel[0] ? rel : ".");
		x->failed = 1;
		goto out;
	}
	rc = cairn_image_stat(x->img, ino, &st);
	if (rc) {
		ex_fail(x, path, rc);
		goto out;
	}
	if (S_ISLNK(st.mode) && !x->unsafe_links && !link_safe(x, rel, path, ino))
		goto out;
	if (S_ISDIR(st.mode)) {
		int fd;

		if (ino < x->inode_count && (x->seen[ino / 8] & (1u << (ino % 8)))) {
			ex_fail(x, path, -CAIRN_ECORRUPT);
			goto out;
		}
		x->seen[ino / 8] |= (uint8_t)(1u << (ino % 8));
		if (depth >= MAX_DEPTH) {
			ex_fail(x, path, -ELOOP);
			goto out;
		}
		if (mkdirat(dirfd, name, 0700)) {
			ex_fail(x, path, -errno);
			goto out;
		}
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			ex_fail(x, path, -errno);
			goto out;
		}
		extract_dir(x, ino, fd, path, depth + 1);
		rc = set_attrs(x, ino, &st, fd, dirfd, name);
		close(fd);
		if (rc)
			ex_fail(x, path, rc);
		goto out;
	}
	if (st.nlink > 1 && x->links[ino]) {
		rc = extract_link(x, x->links[ino], dirfd, name);
		if (rc)
			ex_fail(x, path, rc);
		goto out;
	}
	if (S_ISREG(st.mode))
		rc = extract_file(x, ino, &st, dirfd, name);
	else if (S_ISLNK(st.mode))
		rc = extract_symlink(x, ino, &st, dirfd, name);
	else
		rc = extract_special(x, ino, &st, dirfd, name);
	if (rc) {
		ex_fail(x, path, rc);
		goto out;
	}
	if (st.nlink > 1) {
		x->links[ino] = path; /* kept for the next link to this inode */
		path = NULL;
	}
out:
	free(path);
}

/* Names are copied out first: extracting a subdirectory re-enters the reader. */
struct namelist {
	char **names;
	cairn_ino_t *inos;
	size_t n, cap;
	int err;
};

static int collect(void *ctx, const char *name, size_t len, cairn_ino_t ino, unsigned dtype,
		   uint64_t next)
{
	struct namelist *l = ctx;

	(void)dtype;
	(void)next;
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 32;
		char **nn = realloc(l->names, cap * sizeof(*nn));
		cairn_ino_t *ni;

		if (!nn)
			goto nomem;
		l->names = nn;
		ni = realloc(l->inos, cap * sizeof(*ni));
		if (!ni)
			goto nomem;
		l->inos = ni;
		l->cap = cap;
	}
	l->names[l->n] = strndup(name, len);
	if (!l->names[l->n])
		goto nomem;
	l->inos[l->n++] = ino;
	return 0;
nomem:
	l->err = -ENOMEM;
	return 1;
}

static void extract_dir(struct ex *x, cairn_ino_t dir, int dirfd, const char *rel, int depth)
{
	struct namelist l = { 0 };
	int rc = cairn_image_readdir(x->img, dir, 0, collect, &l);

	if (!rc)
		rc = l.err;
	if (rc)
		ex_fail(x, rel[0] ? rel : ".", rc);
	for (size_t i = 0; i < l.n; i++)
		extract_entry(x, dirfd, rel, l.names[i], l.inos[i], depth);
	for (size_t i = 0; i < l.n; i++)
		free(l.names[i]);
	free(l.names);
	free(l.inos);
}

/* Each directory level holds one descriptor: allow as many as the hard limit. */
static void raise_fd_limit(void)
{
	struct rlimit r;

	if (!getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

int cmd_extract(int argc, char **argv)
{
	struct cli_image_opts o;
	struct cairn_image_info info;
	struct ex x = { .rootfd = -1 };
	struct cairn_stat st;
	int npos, rc;
	char *pos[2];
	const struct cli_flag flags[] = {
		{ "--unsafe-links", NULL, &x.unsafe_links },
		{ NULL, NULL, NULL },
	};

	cli_image_opts_init(&o);
	rc = cli_read_args("extract", argc, argv, &o, flags, pos, 2, &npos, usage);
	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	if (npos != 2) {
		cli_err("extract", "needs IMAGE and DIR (see cairn extract --help)");
		return CLI_EXIT_USAGE;
	}
	x.image = pos[0];
	x.dir = pos[1];
	x.as_root = geteuid() == 0;
	x.img = cli_open_image("extract", x.image, &o);
	if (!x.img)
		return CLI_EXIT_FAIL;
	raise_fd_limit();
	cairn_image_get_info(x.img, &info);
	x.inode_count = info.inode_count;
	x.links = calloc((size_t)info.inode_count, sizeof(char *));
	x.seen = calloc((size_t)(info.inode_count / 8 + 1), 1);
	x.buf = malloc(COPY_CHUNK);
	x.xval = malloc(CAIRN_XATTR_VALUE_MAX);
	if (!x.links || !x.seen || !x.buf || !x.xval) {
		cli_err("extract", "out of memory");
		x.failed = 1;
		goto out;
	}
	if (mkdir(x.dir, 0700) && errno != EEXIST) {
		cli_err("extract", "%s: %s", x.dir, strerror(errno));
		x.failed = 1;
		goto out;
	}
	x.rootfd = open(x.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (x.rootfd < 0) {
		cli_err("extract", "%s: %s", x.dir, strerror(errno));
		x.failed = 1;
		goto out;
	}
	rc = cairn_image_stat(x.img, cairn_image_root(x.img), &st);
	if (rc) {
		ex_fail(&x, ".", rc);
		goto out;
	}
	x.seen[cairn_image_root(x.img) / 8] |= (uint8_t)(1u << (cairn_image_root(x.img) % 8));
	extract_dir(&x, cairn_image_root(x.img), x.rootfd, "", 0);
	rc = set_attrs(&x, cairn_image_root(x.img), &st, x.rootfd, AT_FDCWD, x.dir);
	if (rc)
		ex_fail(&x, ".", rc);
out:
	cli_print_stats(&o, x.img);
	if (x.rootfd >= 0)
		close(x.rootfd);
	for (uint64_t i = 0; x.links && i < x.inode_count; i++)
		free(x.links[i]);
	free(x.links);
	free(x.seen);
	free(x.buf);
	free(x.xval);
	cairn_image_close(x.img);
	return x.failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
