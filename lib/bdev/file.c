/* SPDX-License-Identifier: MIT */
/* file bdev: pread on a descriptor, optionally O_DIRECT through aligned bounce buffers. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cairn/bdev.h>
#include <cairn/error.h>
#include "bdev/errslot.h"

#define DIRECT_ALIGN 4096u

struct file_bdev {
	struct cairn_bdev base;
	int fd;
	unsigned flags;
	struct errslot err;          /* named by the path when opened by one */
};

static ssize_t pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* O_DIRECT needs aligned offsets, lengths and buffers: read the covering aligned
 * range into a bounce buffer and copy out the part asked for. */
static ssize_t direct_read(struct file_bdev *f, void *buf, size_t len, uint64_t off)
{
	uint64_t start = off & ~(uint64_t)(DIRECT_ALIGN - 1);
	uint64_t end = (off + len + DIRECT_ALIGN - 1) & ~(uint64_t)(DIRECT_ALIGN - 1);
	size_t span = (size_t)(end - start);
	void *bounce;
	ssize_t n;

	if (posix_memalign(&bounce, DIRECT_ALIGN, span))
		return -ENOMEM;
	n = pread_all(f->fd, bounce, span, start);
	if (n >= 0) {
		size_t skip = (size_t)(off - start);

		n = (size_t)n > skip ? n - (ssize_t)skip : 0;
		if ((size_t)n > len)
			n = (ssize_t)len;
		memcpy(buf, (char *)bounce + skip, (size_t)n);
	}
	free(bounce);
	return n;
}

static ssize_t file_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	struct file_bdev *f = (struct file_bdev *)dev;
	ssize_t n = f->flags & CAIRN_BDEV_FILE_DIRECT ? direct_read(f, buf, len, off)
						      : pread_all(f->fd, buf, len, off);

	/* cairn_bdev_read() clipped len to the size: short means the file shrank. */
	if (n < 0)
		errslot_set(&f->err, (int)n, off, len, "%s", cairn_strerror((int)n));
	else if ((size_t)n < len)
		errslot_set(&f->err, -EIO, off, len, "short read: %zd of %zu bytes (the file "
			    "shrank under the image's size of %" PRIu64 ")", n, len, dev->size);
	return n;
}

static void file_last_error(struct cairn_bdev *dev, struct cairn_bdev_error *out)
{
	errslot_get(&((struct file_bdev *)dev)->err, out);
}

static void file_close(struct cairn_bdev *dev)
{
	struct file_bdev *f = (struct file_bdev *)dev;

	close(f->fd);
	errslot_destroy(&f->err);
	free(f);
}

static const struct cairn_bdev_ops file_ops = {
	.version = CAIRN_BDEV_OPS_VERSION,
	.name = "file",
	.read = file_read,
	.close = file_close,
	.last_error = file_last_error,
};

int cairn_bdev_file_from_fd(int fd, unsigned flags, struct cairn_bdev **out)
{
	struct file_bdev *f;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	if (errslot_init(&f->err, NULL)) {
		free(f);
		return -ENOMEM;
	}
	f->base.ops = &file_ops;
	f->fd = fd;
	f->flags = flags;
	if (S_ISBLK(st.st_mode)) {
		off_t end = lseek(fd, 0, SEEK_END);

		if (end < 0) {
			errslot_destroy(&f->err);
			free(f);
			return -errno;
		}
		f->base.size = (uint64_t)end;
	} else {
		f->base.size = (uint64_t)st.st_size;
	}
	*out = &f->base;
	return 0;
}

int cairn_bdev_file_open(const char *path, unsigned flags, struct cairn_bdev **out)
{
	int oflags = O_RDONLY | O_CLOEXEC;
	int fd, rc;

	if (flags & CAIRN_BDEV_FILE_DIRECT)
		oflags |= O_DIRECT;
	/* O_NONBLOCK until the type is known: opening a FIFO would wait for a writer. */
	fd = open(path, oflags | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	rc = cairn_bdev_file_from_fd(fd, flags, out);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	/* Not shared with any thread yet: no lock needed to name it. */
	snprintf(((struct file_bdev *)*out)->err.e.device, CAIRN_BDEV_ERROR_TEXT, "%s", path);
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)) {
		rc = -errno;
		cairn_bdev_close(*out);
		*out = NULL;
	}
	return rc;
}
