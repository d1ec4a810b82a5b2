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

void cairn_bdev_close(struct cairn_bdev *dev)
{
	if (dev)
		dev->ops->close(dev);
}
