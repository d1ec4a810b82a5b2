/* SPDX-License-Identifier: MIT */
/*
 * mem bdev: a byte buffer as a device. Used by tests, by embedders that hold the
 * image in memory, and as the bottom of the emulated slow disk.
 *
 * Ownership: with copy != 0 the bdev holds its own copy and frees it on close;
 * otherwise the caller keeps `buf` alive (and owns it) until the bdev is closed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cairn/bdev.h>

struct mem_bdev {
	struct cairn_bdev base;
	const unsigned char *data;
	void *owned; /* == data when copied, else NULL */
};

static ssize_t mem_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	struct mem_bdev *m = (struct mem_bdev *)dev;

	/* cairn_bdev_read() already clipped [off, off+len) to the device. */
	memcpy(buf, m->data + off, len);
	return (ssize_t)len;
}

static void mem_close(struct cairn_bdev *dev)
{
	struct mem_bdev *m = (struct mem_bdev *)dev;

	free(m->owned);
	free(m);
}

static const struct cairn_bdev_ops mem_ops = {
	.version = CAIRN_BDEV_OPS_VERSION,
	.name = "mem",
	.read = mem_read,
	.close = mem_close,
};

int cairn_bdev_mem_new(const void *buf, size_t len, int copy, struct cairn_bdev **out)
{
	struct mem_bdev *m;

	if (!buf && len)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	if (copy && len) {
		m->owned = malloc(len);
		if (!m->owned) {
			free(m);
			return -ENOMEM;
		}
		memcpy(m->owned, buf, len);
		m->data = m->owned;
	} else {
		m->data = buf;
	}
	m->base.ops = &mem_ops;
	m->base.size = len;
	*out = &m->base;
	return 0;
}
