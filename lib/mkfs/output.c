/* SPDX-License-Identifier: MIT */
/*
 * Where cairn_mkfs_write_path() puts the image, by what is at the path now:
 *
 *   nothing          a temporary file next to it, fsync, rename: nothing is left
 *                    at the path (nor a temporary) on failure;
 *   a regular file   the same, if it is empty or a cairn image already; any other
 *                    file is refused unless opts.force (mkfs does not destroy what
 *                    it did not make);
 *   a block device   written in place, as mkfs.erofs does (opened O_EXCL, so not
 *                    while it is mounted);
 *   a symlink        followed: the rules apply to its target, which is replaced,
 *                    not the link; a dangling symlink is refused;
 *   anything else    refused (a directory, a character device such as /dev/null,
 *                    a FIFO, a socket).
 *
 * Messages name the path as the caller gave it, never the temporary file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "mkfs_int.h"
#include "util/util_int.h"

/* Nonzero when fd holds a cairn image (its magic) or nothing at all. */
static int replaceable(int fd, const struct stat *st)
{
	char magic[sizeof(CAIRN_MAGIC_BYTES) - 1];

	if (st->st_size == 0)
		return 1;
	return pread(fd, magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
	       !memcmp(magic, CAIRN_MAGIC_BYTES, sizeof(magic));
}

static int check_regular(struct cairn_mkfs *m, const char *path, const char *target)
{
	int fd = open(target, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	int ok;

	if (fd < 0)
		return errno == ENOENT ? 0 : mk_err(m, -errno, "%s: %s", path, strerror(errno));
	ok = !fstat(fd, &st) && S_ISREG(st.st_mode) && replaceable(fd, &st);
	close(fd);
	if (ok || m->o.force)
		return 0;
	return mk_err(m, -EEXIST, "%s: exists and is not a cairn image; not replaced "
		      "(--force replaces it)", path);
}

/* Write through fd and close it: the image, then fsync unless no_fsync. */
static int write_close(struct cairn_mkfs *m, int fd, const char *path)
{
	int rc = cairn_mkfs_write_fd(m, fd, path);

	if (!rc && !m->o.no_fsync && fsync(fd))
		rc = mk_err(m, -errno, "%s: fsync: %s", path, strerror(errno));
	if (close(fd) && !rc)
		rc = mk_err(m, -errno, "%s: close: %s", path, strerror(errno));
	return rc;
}

static int write_device(struct cairn_mkfs *m, const char *path, const char *dev)
{
	int fd = open(dev, O_RDWR | O_EXCL | O_CLOEXEC);

	if (fd < 0)
		return mk_err(m, -errno, "%s: %s%s", path, strerror(errno),
			      errno == EBUSY ? " (the device is in use: mounted?)" : "");
	return write_close(m, fd, path);
}

/* Temporary file next to target, then rename over it. */
static int write_replace(struct cairn_mkfs *m, const char *path, const char *target)
{
	int fd = -1, rc;

	if (strlen(target) + 48 > sizeof(m->tmp))
		return mk_err(m, -ENAMETOOLONG, "%s: %s", path, strerror(ENAMETOOLONG));
	/* O_EXCL with mode 0644, so the umask applies as for any new file. */
	for (unsigned i = 0; fd < 0 && i < 100; i++) {
		snprintf(m->tmp, sizeof(m->tmp), "%s.tmp.%ld.%u", target, (long)getpid(), i);
		fd = open(m->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0)
		return mk_err(m, -errno, "%s: %s", path, strerror(errno));
	m->tmp_active = 1;
	rc = write_close(m, fd, path);
	if (!rc && rename(m->tmp, target))
		rc = mk_err(m, -errno, "%s: rename: %s", path, strerror(errno));
	if (rc)
		unlink(m->tmp);
	m->tmp_active = 0;
	return rc;
}

int cairn_mkfs_write_path(struct cairn_mkfs *m, const char *path)
{
	char *real = NULL;
	const char *target = path;
	struct stat st;
	int rc;

	m->err[0] = '\0';
	if (lstat(path, &st)) {
		if (errno != ENOENT)
			return mk_err(m, -errno, "%s: %s", path, strerror(errno));
		return write_replace(m, path, path);
	}
	if (S_ISLNK(st.st_mode)) {
		if (!(real = realpath(path, NULL)) || stat(real, &st)) {
			rc = -errno;
			free(real);
			if (rc == -ENOENT)
				return mk_err(m, rc, "%s: a dangling symlink (mkfs writes through "
					      "a symlink only to an existing file)", path);
			return mk_err(m, rc, "%s: %s", path, strerror(-rc));
		}
		target = real;
	}
	if (S_ISBLK(st.st_mode))
		rc = write_device(m, path, target);
	else if (!S_ISREG(st.st_mode))
		rc = mk_err(m, -EINVAL, "%s: is %s; mkfs writes a regular file or a block device",
			    path, cairn_mode_kind(st.st_mode));
	else if (!(rc = check_regular(m, path, target)))
		rc = write_replace(m, path, target);
	free(real);
	return rc;
}

const char *cairn_mkfs_temp_path(const struct cairn_mkfs *m)
{
	return m->tmp_active ? m->tmp : NULL;
}
