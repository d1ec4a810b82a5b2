/* SPDX-License-Identifier: MIT */
/*
 * offset bdev: the window [off, off+len) of the device below, e.g. an image
 * stored at some offset of a disk or a partition. Owns `below` on success.
 */
#include <errno.h>
#include <stdlib.h>
#include <cairn/bdev.h>

struct offset_bdev {
	struct cairn_bdev base;
	uint64_t off;
};

static ssize_t offset_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	struct offset_bdev *o = (struct offset_bdev *)dev;

	return cairn_bdev_read(dev->below, buf, len, o->off + off);
}

/* The vector moved by the window's start, passed down whole (one request
 * below stays one). */
static int offset_readv(struct cairn_bdev *dev, const struct cairn_bdev_iov *v, unsigned n)
{
	struct offset_bdev *o = (struct offset_bdev *)dev;
	struct cairn_bdev_iov *w = malloc(n * sizeof(*w));
	int rc;

	if (!w)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		w[i] = (struct cairn_bdev_iov){ v[i].buf, v[i].len, v[i].off + o->off };
	rc = cairn_bdev_readv(dev->below, w, n);
	free(w);
	return rc;
}

static void offset_close(struct cairn_bdev *dev)
{
	cairn_bdev_close(dev->below);
	free(dev);
}

static const struct cairn_bdev_ops offset_ops = {
	.version = CAIRN_BDEV_OPS_VERSION,
	.name = "offset",
	.read = offset_read,
	.close = offset_close,
	.readv = offset_readv,
};

int cairn_bdev_offset_new(struct cairn_bdev *below, uint64_t off, uint64_t len,
			  struct cairn_bdev **out)
{
	struct offset_bdev *o;
	uint64_t size = cairn_bdev_size(below);

	if (off > size)
		return -EINVAL;
	if (len == 0)
		len = size - off;
	if (len > size - off)
		return -EINVAL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	(void)cairn_bdev_init(&o->base, &offset_ops, below, len);
	o->off = off;
	*out = &o->base;
	return 0;
}
