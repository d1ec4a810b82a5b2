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
