/* SPDX-License-Identifier: MIT */
/*
 * Extraction of an image subtree into a host directory (include/cairn/extract.h
 * says what and how safely). The walk is depth-first, one open descriptor per
 * level; every object is created relative to its parent's descriptor.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <cairn/error.h>
#include <cairn/format.h>
#include "extract/extract_int.h"
#include "util/util_int.h"

#define COPY_CHUNK (1u << 20)
#define MAX_DEPTH 4096

struct ex {
	struct cairn_image *img;
	const struct cairn_extract_opts *o;
	const char *image, *dir;   /* labels of messages */
	int rootfd;
	cairn_ino_t base;          /* the extracted directory of the image */
	char **links;      /* per inode: the first extracted path of a multi-link file */
	uint8_t *seen;     /* directories entered (a hostile image may loop) */
	uint64_t inode_count;
	char *buf;         /* COPY_CHUNK bytes */
	char *xval;
	int first_err;     /* of the first problem reported */
	int full;          /* the target is out of space: nothing more can be written */
	struct cairn_extract_stats st;
};

void cairn_extract_opts_init(struct cairn_extract_opts *o)
{
	memset(o, 0, sizeof(*o));
}

/* Every problem goes through here: one line to the caller, counted, and the
 * first error kept as the return value. */
__attribute__((format(printf, 3, 4)))
static void ex_report(struct ex *x, int err, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (x->o->report)
		x->o->report(x->o->ctx, n < 0 ? "out of memory" : msg);
	if (n >= 0)
		free(msg);
	x->st.problems++;
	if (!x->first_err)
		x->first_err = err;
}

/* A reader failure on `what` (an image path): "IMAGE: corrupt image: <reason>
 * (what)" for corruption, else "IMAGE: what: <strerror>". */
static void ex_image_fail(struct ex *x, const char *what, int err)
{
	const char *why = err == -CAIRN_ECORRUPT ? cairn_image_corruption(x->img) : NULL;

	if (why)
		ex_report(x, err, "%s: %s: %s (%s)", x->image, cairn_strerror(err), why, what);
	else
		ex_report(x, err, "%s: %s: %s", x->image, what, cairn_strerror(err));
}

/* A failure on path (relative to the target). A full target (ENOSPC, EDQUOT)
 * stops the extraction: every entry after it would fail the same way (the JDK
 * into a full disk printed 195 such lines). */
static void ex_fail(struct ex *x, const char *path, int err)
{
	if (err == -CAIRN_ECORRUPT) {
		ex_image_fail(x, path, err);
	} else if (err == -ENOSPC || err == -EDQUOT) {
		ex_report(x, err, "%s/%s: %s; extraction stopped", x->dir, path, cairn_strerror(err));
		x->full = 1;
	} else {
		struct cairn_bdev_error e;
		char dev[2 * CAIRN_BDEV_ERROR_TEXT + 64] = "";

		/* An EIO or a digest mismatch names the device, the range and the
		 * cause once, here: the device recorded them as the read failed. */
		if ((err == -EIO || err == -CAIRN_EDIGEST) &&
		    cairn_image_last_error(x->img, &e) == 1)
			cairn_bdev_error_format(&e, dev, sizeof(dev));
		ex_report(x, err, "%s/%s: %s%s%s", x->dir, path, cairn_strerror(err),
			  dev[0] ? ": " : "", dev);
	}
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
			x->st.data_bytes += (uint64_t)n;
		}
	}
	return ftruncate(fd, (off_t)size) ? -errno : 0;
}

/* xattrs on the open fd, or for fd < 0 (symlinks, devices, fifos) through
 * /proc/self/fd/DIRFD/NAME with lsetxattr, which does not follow the last name. */
static int set_xattrs(struct ex *x, cairn_ino_t ino, int fd, int dirfd, const char *name)
{
	char *names;
	ssize_t len = cairn_image_listxattr_alloc(x->img, ino, &names);
	int rc = 0;

	if (len <= 0)
		return (int)len;
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
 * times go last because everything before them may touch them. With fd >= 0
 * the object is fd (dirfd and name unused), else name in dirfd. */
static int set_attrs(struct ex *x, cairn_ino_t ino, const struct cairn_stat *st, int fd,
		     int dirfd, const char *name)
{
	struct timespec ts[2] = { { (time_t)st->atime.sec, st->atime.nsec },
				  { (time_t)st->mtime.sec, st->mtime.nsec } };
	int lnk = S_ISLNK(st->mode);
	int rc;

	if (x->o->preserve_owner) {
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
	x->st.files++;
	rc = copy_data(x, ino, fd, st->size);
	if (!rc)
		rc = set_attrs(x, ino, st, fd, dirfd, name);
	if (close(fd) && !rc)
		rc = -errno;
	/* A file whose data could not all be read (a bad granule, an IO error) is
	 * removed: its first part alone would look like a finished file. */
	if (rc)
		unlinkat(dirfd, name, 0);
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
	x->st.symlinks++;
	return set_attrs(x, ino, st, -1, dirfd, name);
}

static int extract_special(struct ex *x, cairn_ino_t ino, const struct cairn_stat *st, int dirfd,
			   const char *name)
{
	if (mknodat(dirfd, name, (st->mode & S_IFMT) | 0600, (dev_t)st->rdev))
		return -errno;
	x->st.others++;
	return set_attrs(x, ino, st, -1, dirfd, name);
}

/* Opens the directory holding rel (a path we created, relative to the target)
 * one component at a time with O_NOFOLLOW; *last gets the final name. */
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
	else
		x->st.hardlinks++;
	close(pfd);
	return rc;
}

static void extract_dir(struct ex *x, cairn_ino_t dir, int dirfd, const char *rel, int depth);

/* With safe_links, a symlink at path (in directory rel) is extracted only if
 * following it stays inside the target (links.c). Chains longer than the kernel
 * follows are safe: they end in ELOOP on the host too. Reports and returns 0
 * otherwise. */
static int link_safe(struct ex *x, const char *rel, const char *path, cairn_ino_t ino)
{
	char target[CAIRN_SYMLINK_MAX + 1];
	ssize_t n = cairn_image_readlink(x->img, ino, target, CAIRN_SYMLINK_MAX);
	int rc = n < 0 ? (int)n : ex_link_escapes(x->img, x->base, rel, target, (size_t)n);

	if (rc == 0 || rc == -ELOOP)
		return 1;
	if (rc == -EXDEV) {
		target[n] = '\0';
		ex_report(x, rc, "%s/%s: skipping symlink to '%s': it leads outside %s "
			  "(--safe-links)", x->dir, path, target, x->dir);
	} else {
		ex_fail(x, path, rc);
	}
	return 0;
}

/* Marks a directory entered; 0 the first time, -CAIRN_ECORRUPT when the image
 * holds it twice (a loop) or names an inode it does not have. */
static int mark_seen(struct ex *x, cairn_ino_t ino)
{
	uint8_t bit = (uint8_t)(1u << (ino % 8));

	if (ino >= x->inode_count || (x->seen[ino / 8] & bit))
		return -CAIRN_ECORRUPT;
	x->seen[ino / 8] |= bit;
	return 0;
}

/* A directory of the image: made, or an existing one merged into (as tar
 * does). O_NOFOLLOW: an existing symlink of that name (on the host, or made
 * from a hostile image holding a symlink and a directory of one name) is not
 * entered, so nothing lands where it points. */
static void extract_subdir(struct ex *x, cairn_ino_t ino, const struct cairn_stat *st,
			   int dirfd, const char *name, const char *path, int depth)
{
	int fd, made = 1, rc = mark_seen(x, ino);

	if (!rc && depth >= MAX_DEPTH)
		rc = -ELOOP;
	if (!rc && mkdirat(dirfd, name, 0700)) {
		rc = -errno;
		made = 0;
		if (rc == -EEXIST)
			rc = 0;
	}
	if (rc) {
		ex_fail(x, path, rc);
		return;
	}
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		rc = errno == ELOOP || errno == ENOTDIR ? -ENOTDIR : -errno;
		if (rc == -ENOTDIR)
			ex_report(x, rc, "%s/%s: exists and is not a directory", x->dir, path);
		else
			ex_fail(x, path, rc);
		return;
	}
	if (made)
		x->st.dirs++;
	extract_dir(x, ino, fd, path, depth + 1);
	rc = made || x->o->overwrite_dirs ? set_attrs(x, ino, st, fd, dirfd, name) : 0;
	close(fd);
	if (rc)
		ex_fail(x, path, rc);
}

static void extract_entry(struct ex *x, int dirfd, const char *rel, const char *name,
			  cairn_ino_t ino, int depth)
{
	struct cairn_stat st;
	char *path = util_path_join(rel, name, strlen(name));
	int rc;

	if (!path) {
		ex_fail(x, rel, -ENOMEM);
		return;
	}
	if (!valid_name(name)) {
		ex_report(x, -CAIRN_ECORRUPT, "%s: refusing unsafe name in %s/", x->image,
			  rel[0] ? rel : ".");
		goto out;
	}
	rc = cairn_image_stat(x->img, ino, &st);
	if (rc) {
		ex_fail(x, path, rc);
		goto out;
	}
	if (S_ISLNK(st.mode) && x->o->safe_links && !link_safe(x, rel, path, ino))
		goto out;
	if (S_ISDIR(st.mode)) {
		extract_subdir(x, ino, &st, dirfd, name, path, depth);
		goto out;
	}
	if (ino >= x->inode_count) {
		ex_fail(x, path, -CAIRN_ECORRUPT);
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

/* The names are read whole first, so no readdir stays open while the
 * subdirectories are extracted. */
static void extract_dir(struct ex *x, cairn_ino_t dir, int dirfd, const char *rel, int depth)
{
	struct cairn_dirent *de;
	ssize_t n = cairn_image_readdir_alloc(x->img, dir, 0, 0, &de);

	if (n < 0)
		ex_fail(x, rel[0] ? rel : ".", (int)n);
	for (ssize_t i = 0; i < n && !x->full; i++)
		extract_entry(x, dirfd, rel, de[i].name, de[i].ino, depth);
	free(de);
}

/* The image directory to extract: the root, or path (symlinks followed). It
 * counts as entered, so a directory holding it is a loop. */
static int find_base(struct ex *x, const char *path, struct cairn_stat *st)
{
	int rc;

	x->base = cairn_image_root(x->img);
	if (path && strcmp(path, "/")) {
		rc = cairn_image_resolve(x->img, path, 1, &x->base);
		if (rc) {
			ex_image_fail(x, path, rc);
			return rc;
		}
	}
	rc = cairn_image_stat(x->img, x->base, st);
	if (!rc)
		rc = mark_seen(x, x->base);
	if (rc) {
		ex_fail(x, ".", rc);
		return rc;
	}
	if (!S_ISDIR(st->mode)) {
		ex_image_fail(x, path ? path : "/", -ENOTDIR);
		return -ENOTDIR;
	}
	return 0;
}

static void ex_free(struct ex *x)
{
	for (uint64_t i = 0; x->links && i < x->inode_count; i++)
		free(x->links[i]);
	free(x->links);
	free(x->seen);
	free(x->buf);
	free(x->xval);
}

static void ex_init(struct ex *x, struct cairn_image *img, const struct cairn_extract_opts *o,
		    const char *dir_label)
{
	static const struct cairn_extract_opts defaults; /* all zero, read-only */
	struct cairn_image_info info;

	if (!o)
		o = &defaults;

	memset(x, 0, sizeof(*x));
	x->img = img;
	x->o = o;
	x->image = o->image_name ? o->image_name : "image";
	x->dir = o->target_name ? o->target_name : dir_label;
	cairn_image_get_info(img, &info);
	x->inode_count = info.inode_count;
}

/* made: the target was created for this extraction, so it takes the
 * attributes of the image directory; an existing one keeps its own unless
 * overwrite_dirs (extracting into /tmp must not drop its sticky bit). */
static int ex_run(struct ex *x, const char *path, int target_dirfd, int made,
		  struct cairn_extract_stats *stats)
{
	struct cairn_stat st;
	int rc;

	x->rootfd = target_dirfd;
	x->links = calloc((size_t)x->inode_count, sizeof(char *));
	x->seen = calloc((size_t)(x->inode_count / 8 + 1), 1);
	x->buf = malloc(COPY_CHUNK);
	x->xval = malloc(CAIRN_XATTR_VALUE_MAX);
	if (!x->links || !x->seen || !x->buf || !x->xval)
		ex_report(x, -ENOMEM, "out of memory");
	else if (!find_base(x, path, &st)) {
		extract_dir(x, x->base, target_dirfd, "", 0);
		rc = made || x->o->overwrite_dirs
			     ? set_attrs(x, x->base, &st, target_dirfd, -1, NULL) : 0;
		if (rc)
			ex_fail(x, ".", rc);
	}
	ex_free(x);
	if (stats)
		*stats = x->st;
	return x->first_err;
}

int cairn_extract(struct cairn_image *img, const char *path, int target_dirfd,
		  const struct cairn_extract_opts *opts, struct cairn_extract_stats *stats)
{
	struct ex x;

	ex_init(&x, img, opts, ".");
	return ex_run(&x, path, target_dirfd, 0, stats);
}

int cairn_extract_to_dir(struct cairn_image *img, const char *path, const char *dir,
			 const struct cairn_extract_opts *opts, struct cairn_extract_stats *stats)
{
	struct ex x;
	int fd, rc, made = 1;

	ex_init(&x, img, opts, dir);
	if (mkdir(dir, 0700)) {
		rc = -errno;
		made = 0;
		if (rc != -EEXIST) {
			ex_report(&x, rc, "%s: %s", dir, cairn_strerror(rc));
			goto fail;
		}
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		ex_report(&x, rc, "%s: %s", dir, cairn_strerror(rc));
		goto fail;
	}
	rc = ex_run(&x, path, fd, made, stats);
	close(fd);
	return rc;
fail:
	if (stats)
		*stats = x.st;
	return rc;
}
