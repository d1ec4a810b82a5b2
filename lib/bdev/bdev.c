/* SPDX-License-Identifier: MIT */
/* The one entry point every image read goes through. */
#include <errno.h>
#include <cairn/bdev.h>

ssize_t cairn_bdev_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	if (off >= dev->size)
		return 0;
	if (len > dev->size - off)
		len = (size_t)(dev->size - off);
	if (len == 0)
		return 0;
	return dev->ops->read(dev, buf, len, off);
}

int cairn_bdev_read_full(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	ssize_t n = cairn_bdev_read(dev, buf, len, off);

	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EIO;
}

/* Entries must lie inside the device: a vector is all-or-error, so there is no
 * short count to clip to. */
static int iov_check(const struct cairn_bdev *dev, const struct cairn_bdev_iov *v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if ((!v[i].buf && v[i].len) || v[i].off > dev->size || v[i].len > dev->size - v[i].off)
			return -EINVAL;
	return 0;
}

static int has_readv(const struct cairn_bdev *dev)
{
	return dev->ops->version >= 3 && dev->ops->readv;
}

int cairn_bdev_readv(struct cairn_bdev *dev, const struct cairn_bdev_iov *v, unsigned n)
{
	int rc = iov_check(dev, v, n);

	if (rc || !n)
		return rc;
	if (has_readv(dev))
		return dev->ops->readv(dev, v, n);
	for (unsigned i = 0; i < n && !rc; i++)
		if (v[i].len) {
			ssize_t got = dev->ops->read(dev, v[i].buf, v[i].len, v[i].off);

			rc = got < 0 ? (int)got : (size_t)got == v[i].len ? 0 : -EIO;
		}
	return rc;
}

int cairn_bdev_readv_below(struct cairn_bdev *dev, const struct cairn_bdev_iov *v, unsigned n)
{
	return dev->below ? cairn_bdev_readv(dev->below, v, n) : -EINVAL;
}

int cairn_bdev_readv_native(struct cairn_bdev *dev)
{
	for (; dev; dev = dev->below)
		if (!has_readv(dev) || (dev->ops->readv_one && !dev->ops->readv_one(dev)))
			return 0;
	return 1;
}

int cairn_bdev_init(struct cairn_bdev *dev, const struct cairn_bdev_ops *ops,
		    struct cairn_bdev *below, uint64_t size)
{
	if (!dev || !ops || ops->version < 1 || ops->version > CAIRN_BDEV_OPS_VERSION ||
	    !ops->read || !ops->close)
		return -EINVAL;
	dev->ops = ops;
	dev->below = below;
	dev->size = size;
	return 0;
}

int cairn_bdev_held(struct cairn_bdev *dev, uint64_t off, uint64_t len)
{
	if (dev->ops->version < 2 || !dev->ops->held)
		return -ENOTSUP;
	if (off >= dev->size || !len)
		return 1;
	if (len > dev->size - off)
		len = dev->size - off;
	return dev->ops->held(dev, off, len);
}

int cairn_bdev_held_below(struct cairn_bdev *dev, uint64_t off, uint64_t len)
{
	return dev->below ? cairn_bdev_held(dev->below, off, len) : -ENOTSUP;
}

void cairn_bdev_close(struct cairn_bdev *dev)
{
	if (dev)
		dev->ops->close(dev);
}
