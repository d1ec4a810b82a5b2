/* SPDX-License-Identifier: MIT */
/*
 * stats bdev: counts requests, bytes, errors and a histogram of request sizes
 * passing through it. Counters are relaxed atomics: they are read for reports,
 * never used to order anything, and must not serialize concurrent readers.
 * Owns `below` on success.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <cairn/bdev.h>

struct stats_bdev {
	struct cairn_bdev base;
	_Atomic uint64_t requests, bytes, errors;
	_Atomic uint64_t hist[CAIRN_STATS_BUCKETS];
};

static const struct cairn_bdev_ops stats_ops;

/* Bucket 0 holds everything below 1 KiB; bucket i >= 1 holds [2^(i+9), 2^(i+10));
 * the last bucket also takes anything larger. */
static unsigned size_bucket(size_t len)
{
	unsigned b = 0;

	len >>= 10;
	while (len) {
		b++;
		len >>= 1;
	}
	return b < CAIRN_STATS_BUCKETS ? b : CAIRN_STATS_BUCKETS - 1;
}

/* One request of len bytes asked, n got (or a negative errno). */
static void count(struct stats_bdev *s, size_t len, ssize_t n)
{
	atomic_fetch_add_explicit(&s->requests, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->hist[size_bucket(len)], 1, memory_order_relaxed);
	if (n < 0)
		atomic_fetch_add_explicit(&s->errors, 1, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&s->bytes, (uint64_t)n, memory_order_relaxed);
}

static ssize_t stats_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	ssize_t n = cairn_bdev_read(dev->below, buf, len, off);

	count((struct stats_bdev *)dev, len, n);
	return n;
}

/* Counted as the requests it becomes below (bdev.h): one when the device below
 * takes the vector whole, else one per entry (a failure fails them all). */
static int stats_readv(struct cairn_bdev *dev, const struct cairn_bdev_iov *v, unsigned n)
{
	struct stats_bdev *s = (struct stats_bdev *)dev;
	int rc = cairn_bdev_readv(dev->below, v, n);
	size_t total = 0;

	for (unsigned i = 0; i < n; i++)
		total += v[i].len;
	if (cairn_bdev_readv_native(dev->below)) {
		count(s, total, rc ? rc : (ssize_t)total);
		return rc;
	}
	for (unsigned i = 0; i < n; i++)
		count(s, v[i].len, rc ? rc : (ssize_t)v[i].len);
	return rc;
}

static void stats_close(struct cairn_bdev *dev)
{
	cairn_bdev_close(dev->below);
	free(dev);
}

static const struct cairn_bdev_ops stats_ops = {
	.version = CAIRN_BDEV_OPS_VERSION,
	.name = "stats",
	.read = stats_read,
	.close = stats_close,
	.held = cairn_bdev_held_below,
	.readv = stats_readv,
};

int cairn_bdev_stats_new(struct cairn_bdev *below, struct cairn_bdev **out)
{
	struct stats_bdev *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	(void)cairn_bdev_init(&s->base, &stats_ops, below, cairn_bdev_size(below));
	*out = &s->base;
	return 0;
}

int cairn_bdev_get_stats(struct cairn_bdev *dev, struct cairn_bdev_counters *out)
{
	struct stats_bdev *s = (struct stats_bdev *)dev;

	if (!dev || dev->ops != &stats_ops)
		return -EINVAL;
	out->requests = atomic_load_explicit(&s->requests, memory_order_relaxed);
	out->bytes = atomic_load_explicit(&s->bytes, memory_order_relaxed);
	out->errors = atomic_load_explicit(&s->errors, memory_order_relaxed);
	for (unsigned i = 0; i < CAIRN_STATS_BUCKETS; i++)
		out->hist[i] = atomic_load_explicit(&s->hist[i], memory_order_relaxed);
	return 0;
}

void cairn_bdev_reset_stats(struct cairn_bdev *dev)
{
	struct stats_bdev *s = (struct stats_bdev *)dev;

	if (!dev || dev->ops != &stats_ops)
		return;
	atomic_store_explicit(&s->requests, 0, memory_order_relaxed);
	atomic_store_explicit(&s->bytes, 0, memory_order_relaxed);
	atomic_store_explicit(&s->errors, 0, memory_order_relaxed);
	for (unsigned i = 0; i < CAIRN_STATS_BUCKETS; i++)
		atomic_store_explicit(&s->hist[i], 0, memory_order_relaxed);
}
