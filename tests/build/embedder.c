/* SPDX-License-Identifier: MIT */
/*
 * An embedder of libcairn as README.md "Embedding" describes one, built by
 * tests/build/embedder.sh with -Wall -Wextra -Werror against include/cairn
 * only: its own block device (pread on a file) registered once with a
 * version 1 ops table and once with a version 2 one, the segment cache on it,
 * the image opened and one file read. Every ops and config struct is set up
 * with designated initialisers, the way that keeps compiling warning-free as
 * the library adds fields at their ends.
 *   embedder IMAGE PATH EXPECTED
 */
#define _POSIX_C_SOURCE 200809L /* pread, O_CLOEXEC under -std=c11 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cairn/cairn.h>

struct my_dev {
	struct cairn_bdev base; /* first, as the library's devices do */
	int fd;
};

static ssize_t my_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(((struct my_dev *)dev)->fd, buf, len, (off_t)off);

	return n < 0 ? -errno : n;
}

static void my_close(struct cairn_bdev *dev)
{
	close(((struct my_dev *)dev)->fd);
	free(dev);
}

static int my_held(struct cairn_bdev *dev, uint64_t off, uint64_t len)
{
	(void)dev, (void)off, (void)len;
	return 1; /* a local file: everything is here */
}

/* A table written for version 1, before `held` existed. */
static const struct cairn_bdev_ops v1_ops = {
	.version = 1,
	.name = "embedder-v1",
	.read = my_read,
	.close = my_close,
};

static const struct cairn_bdev_ops v2_ops = {
	.version = 2,
	.name = "embedder-v2",
	.read = my_read,
	.close = my_close,
	.held = my_held,
};

static int fail(const char *what, int rc)
{
	fprintf(stderr, "embedder: %s: %s\n", what, cairn_strerror(rc));
	return 1;
}

/* Opens path as a my_dev with ops, reads file `want_path` of the image through
 * the cache and checks it holds `want` and that held answers `want_held`. */
static int run(const struct cairn_bdev_ops *ops, const char *image, const char *want_path,
	       const char *want, int want_held)
{
	const struct cairn_cache_config cc = {
		.budget_bytes = 4u << 20,
		.threads = 1,
	};
	struct my_dev *d = calloc(1, sizeof(*d));
	struct cairn_cache *cache;
	struct cairn_image *img;
	cairn_ino_t ino;
	char why[256] = "", buf[256];
	ssize_t n;
	off_t size;
	int rc;

	if (!d)
		return fail("calloc", -ENOMEM);
	d->fd = open(image, O_RDONLY | O_CLOEXEC);
	if (d->fd < 0 || (size = lseek(d->fd, 0, SEEK_END)) < 0) {
		free(d);
		return fail(image, -errno);
	}
	rc = cairn_bdev_init(&d->base, ops, NULL, (uint64_t)size);
	if (rc < 0) {
		my_close(&d->base);
		return fail(ops->name, rc);
	}
	rc = cairn_bdev_held(&d->base, 0, 4096);
	if (rc != want_held) {
		fprintf(stderr, "embedder: %s: held gave %d, not %d\n", ops->name, rc, want_held);
		my_close(&d->base);
		return 1;
	}
	rc = cairn_cache_new(&d->base, &cc, &cache);
	if (rc < 0) {
		my_close(&d->base);
		return fail("cairn_cache_new", rc);
	}
	rc = cairn_image_open(cache, why, sizeof(why), &img);
	if (rc < 0) {
		cairn_cache_free(cache);
		fprintf(stderr, "embedder: %s: %s: %s\n", image, cairn_strerror(rc), why);
		return 1;
	}
	rc = cairn_image_resolve(img, want_path, 1, &ino);
	n = rc < 0 ? rc : cairn_image_read(img, ino, buf, sizeof(buf) - 1, 0);
	cairn_image_close(img);
	if (n < 0)
		return fail(want_path, (int)n);
	buf[n] = '\0';
	if (strcmp(buf, want)) {
		fprintf(stderr, "embedder: %s holds '%s', not '%s'\n", want_path, buf, want);
		return 1;
	}
	printf("%s: %s read, held %d\n", ops->name, want_path, want_held);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	return run(&v1_ops, argv[1], argv[2], argv[3], -ENOTSUP) ||
	       run(&v2_ops, argv[1], argv[2], argv[3], 1);
}
