/* SPDX-License-Identifier: MIT */
/*
 * delay bdev: an emulated slow disk. Each request costs a fixed latency, plus
 * len / bandwidth when a bandwidth cap is set. `channels` requests are served at
 * once (a device queue depth); a request that finds every channel busy waits for
 * the first one to free up.
 *
 * Model: every channel has the time it becomes free. A request takes the
 * channel that frees first, starts at max(now, free_at), and finishes latency
 * later; with a cap the transfer also queues on one shared bus. The finish time
 * is reserved under a short lock and then slept to as an absolute deadline on
 * CLOCK_MONOTONIC, so scheduling jitter and the time spent in the layers above
 * never accumulate into drift. The read below runs inside that time.
 * Owns `below` on success.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <cairn/bdev.h>

#define NSEC 1000000000ull
#define MAX_CHANNELS 1024u

struct delay_bdev {
	struct cairn_bdev base;
	uint64_t latency_ns;
	uint64_t bandwidth_bps;
	unsigned channels;
	pthread_mutex_t lock;
	uint64_t bus_free;   /* ns: when the shared transfer bus is free (cap only) */
	uint64_t *free_at;   /* ns, per channel */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t deadline)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline / NSEC),
			       .tv_nsec = (long)(deadline % NSEC) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static uint64_t transfer_ns(const struct delay_bdev *d, size_t len)
{
	if (!d->bandwidth_bps)
		return 0;
	/* Split into whole seconds and a remainder so len * 1e9 cannot overflow. */
	return (uint64_t)len / d->bandwidth_bps * NSEC +
	       (uint64_t)len % d->bandwidth_bps * NSEC / d->bandwidth_bps;
}

/* Reserve a channel and return the absolute time this request completes. */
static uint64_t reserve(struct delay_bdev *d, size_t len)
{
	uint64_t now = now_ns(), start, done;
	unsigned best = 0;

	pthread_mutex_lock(&d->lock);
	for (unsigned i = 1; i < d->channels; i++)
		if (d->free_at[i] < d->free_at[best])
			best = i;
	start = d->free_at[best] > now ? d->free_at[best] : now;
	done = start + d->latency_ns;
	if (d->bandwidth_bps) {
		uint64_t t0 = d->bus_free > done ? d->bus_free : done;

		done = t0 + transfer_ns(d, len);
		d->bus_free = done;
	}
	d->free_at[best] = done;
	pthread_mutex_unlock(&d->lock);
	return done;
}

static ssize_t delay_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	struct delay_bdev *d = (struct delay_bdev *)dev;
	uint64_t deadline;
	ssize_t n;

	if (!d->latency_ns && !d->bandwidth_bps)
		return cairn_bdev_read(dev->below, buf, len, off);
	/* The copy below happens inside the latency, as a disk's DMA does: the
	 * request completes at its deadline, or when the copy ends if later. */
	deadline = reserve(d, len);
	n = cairn_bdev_read(dev->below, buf, len, off);
	sleep_until(deadline);
	return n;
}

/* One request per vector when the device below takes it whole (http's
 * multi-range GET), else one per entry, reserved like parallel reads on the
 * channels; the vector completes when its last request does. */
static int delay_readv(struct cairn_bdev *dev, const struct cairn_bdev_iov *v, unsigned n)
{
	struct delay_bdev *d = (struct delay_bdev *)dev;
	uint64_t deadline = 0;
	size_t total = 0;
	int rc;

	if (!d->latency_ns && !d->bandwidth_bps)
		return cairn_bdev_readv(dev->below, v, n);
	if (cairn_bdev_readv_native(dev->below)) {
		for (unsigned i = 0; i < n; i++)
			total += v[i].len;
		deadline = reserve(d, total);
	} else {
		for (unsigned i = 0; i < n; i++) {
			uint64_t t = reserve(d, v[i].len);

			deadline = t > deadline ? t : deadline;
		}
	}
	rc = cairn_bdev_readv(dev->below, v, n);
	sleep_until(deadline);
	return rc;
}

static void delay_close(struct cairn_bdev *dev)
{
	struct delay_bdev *d = (struct delay_bdev *)dev;

	cairn_bdev_close(dev->below);
	pthread_mutex_destroy(&d->lock);
	free(d->free_at);
	free(d);
}

static const struct cairn_bdev_ops delay_ops = {
	.version = CAIRN_BDEV_OPS_VERSION,
	.name = "delay",
	.read = delay_read,
	.close = delay_close,
	.held = cairn_bdev_held_below,
	.readv = delay_readv,
};

int cairn_bdev_delay_new(struct cairn_bdev *below, const struct cairn_delay_config *cfg,
			 struct cairn_bdev **out)
{
	struct delay_bdev *d;
	unsigned ch = cfg && cfg->channels ? cfg->channels : 1;

	if (ch > MAX_CHANNELS)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->free_at = calloc(ch, sizeof(*d->free_at));
	if (!d->free_at || pthread_mutex_init(&d->lock, NULL)) {
		free(d->free_at);
		free(d);
		return -ENOMEM;
	}
	(void)cairn_bdev_init(&d->base, &delay_ops, below, cairn_bdev_size(below));
	d->latency_ns = cfg ? cfg->latency_ns : 0;
	d->bandwidth_bps = cfg ? cfg->bandwidth_bps : 0;
	d->channels = ch;
	*out = &d->base;
	return 0;
}
