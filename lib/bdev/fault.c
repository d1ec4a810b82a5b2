/* SPDX-License-Identifier: MIT */
/*
 * fault bdev: fails chosen requests, for tests of every error path above it.
 * Requests are numbered from 1 in arrival order (the counter restarts at every
 * cairn_bdev_fault_set()). A request fails when it is number fail_nth, a
 * multiple of fail_every, or when a seeded hash of its number falls under
 * random_permille (deterministic for a given seed and arrival order).
 * A failure is -EIO or a short read (half the bytes). With `persistent`, the
 * byte range of a failed request keeps failing until the plan is changed, like
 * a bad sector; otherwise the fault is transient and a retry succeeds.
 * Owns `below` on success.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <cairn/bdev.h>
#include <cairn/testing.h>
#include "bdev/errslot.h"

struct bad_range {
	uint64_t lo, hi;
};

struct fault_bdev {
	struct cairn_bdev base;
	pthread_mutex_t lock;   /* guards everything below */
	struct cairn_fault_config cfg;
	int active;             /* a plan is set */
	uint64_t count;         /* requests since the plan was set */
	uint64_t injected;      /* faults injected since the plan was set */
	struct bad_range *bad;  /* persistent failures */
	size_t nbad, capbad;
	struct errslot err;     /* the faults it injected (no name: below has it) */
};

static const struct cairn_bdev_ops fault_ops;

/* splitmix64: a good 64-bit mix, so request n's coin does not depend on the others. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int plan_hits(const struct cairn_fault_config *cfg, uint64_t n)
{
	if (cfg->fail_nth && n == cfg->fail_nth)
		return 1;
	if (cfg->fail_every && n % cfg->fail_every == 0)
		return 1;
	if (cfg->random_permille && mix64(cfg->seed ^ mix64(n)) % 1000 < cfg->random_permille)
		return 1;
	return 0;
}

static int overlaps_bad(const struct fault_bdev *f, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < f->nbad; i++)
		if (lo < f->bad[i].hi && f->bad[i].lo < hi)
			return 1;
	return 0;
}

static void remember_bad(struct fault_bdev *f, uint64_t lo, uint64_t hi)
{
	if (f->nbad == f->capbad) {
		size_t cap = f->capbad ? f->capbad * 2 : 8;
		struct bad_range *b = realloc(f->bad, cap * sizeof(*b));

		if (!b)
			return; /* the failure stays transient; still a failure now */
		f->bad = b;
		f->capbad = cap;
	}
	f->bad[f->nbad++] = (struct bad_range){ lo, hi };
}

/* Decide under the lock whether this request fails; returns the kind or -1. */
static int decide(struct fault_bdev *f, size_t len, uint64_t off)
{
	int kind = -1;

	pthread_mutex_lock(&f->lock);
	if (f->active) {
		uint64_t n = ++f->count;

		if (plan_hits(&f->cfg, n)) {
			kind = (int)f->cfg.kind;
			if (f->cfg.persistent)
				remember_bad(f, off, off + len);
		} else if (overlaps_bad(f, off, off + len)) {
			kind = (int)f->cfg.kind; /* the bad range, not this request, is remembered */
		}
		f->injected += kind >= 0;
	}
	pthread_mutex_unlock(&f->lock);
	return kind;
}

static ssize_t fault_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	struct fault_bdev *f = (struct fault_bdev *)dev;
	int kind = decide(f, len, off);

	if (kind < 0)
		return cairn_bdev_read(dev->below, buf, len, off);
	if (kind == CAIRN_FAULT_SHORT) {
		ssize_t n = cairn_bdev_read(dev->below, buf, len / 2, off);

		if (n >= 0)
			errslot_set(&f->err, -EIO, off, len, "injected fault: short read of %zd "
				    "bytes", n);
		return n; /* a real error below wins; otherwise at most len/2 */
	}
	errslot_set(&f->err, -EIO, off, len, "injected fault: EIO");
	return -EIO;
}

static void fault_last_error(struct cairn_bdev *dev, struct cairn_bdev_error *out)
{
	errslot_get(&((struct fault_bdev *)dev)->err, out);
}

/* A vector the device below takes whole is one request to the plan, over the
 * span of its entries; otherwise each entry is one, as a read would be. */
static int fault_readv(struct cairn_bdev *dev, const struct cairn_bdev_iov *v, unsigned n)
{
	struct fault_bdev *f = (struct fault_bdev *)dev;
	uint64_t lo = UINT64_MAX, hi = 0;

	if (!cairn_bdev_readv_native(dev->below)) {
		for (unsigned i = 0; i < n; i++) {
			ssize_t got = v[i].len ? fault_read(dev, v[i].buf, v[i].len, v[i].off) : 0;

			if (got < 0 || (size_t)got != v[i].len)
				return got < 0 ? (int)got : -EIO;
		}
		return 0;
	}
	for (unsigned i = 0; i < n; i++) {
		lo = v[i].off < lo ? v[i].off : lo;
		hi = v[i].off + v[i].len > hi ? v[i].off + v[i].len : hi;
	}
	if (decide(f, (size_t)(hi - lo), lo) >= 0) {
		errslot_set(&f->err, -EIO, lo, hi - lo, "injected fault: EIO (a vector of %u)", n);
		return -EIO; /* a short read of a vector is a failed vector */
	}
	return cairn_bdev_readv(dev->below, v, n);
}

static void fault_close(struct cairn_bdev *dev)
{
	struct fault_bdev *f = (struct fault_bdev *)dev;

	cairn_bdev_close(dev->below);
	pthread_mutex_destroy(&f->lock);
	errslot_destroy(&f->err);
	free(f->bad);
	free(f);
}

static const struct cairn_bdev_ops fault_ops = {
	.version = CAIRN_BDEV_OPS_VERSION,
	.name = "fault",
	.read = fault_read,
	.close = fault_close,
	.held = cairn_bdev_held_below,
	.readv = fault_readv,
	.last_error = fault_last_error,
};

int cairn_bdev_fault_new(struct cairn_bdev *below, const struct cairn_fault_config *cfg,
			 struct cairn_bdev **out)
{
	struct fault_bdev *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	if (pthread_mutex_init(&f->lock, NULL)) {
		free(f);
		return -ENOMEM;
	}
	if (errslot_init(&f->err, NULL)) {
		pthread_mutex_destroy(&f->lock);
		free(f);
		return -ENOMEM;
	}
	(void)cairn_bdev_init(&f->base, &fault_ops, below, cairn_bdev_size(below));
	if (cfg) {
		f->cfg = *cfg;
		f->active = 1;
	}
	*out = &f->base;
	return 0;
}

int cairn_bdev_fault_set(struct cairn_bdev *dev, const struct cairn_fault_config *cfg)
{
	struct fault_bdev *f = (struct fault_bdev *)dev;

	if (!dev || dev->ops != &fault_ops)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	if (cfg)
		f->cfg = *cfg;
	else
		memset(&f->cfg, 0, sizeof(f->cfg));
	f->active = cfg != NULL;
	f->count = 0;
	f->injected = 0;
	f->nbad = 0;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

int cairn_bdev_fault_counts(struct cairn_bdev *dev, uint64_t *requests, uint64_t *injected)
{
	struct fault_bdev *f = (struct fault_bdev *)dev;

	if (!dev || dev->ops != &fault_ops)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	*requests = f->count;
	*injected = f->injected;
	pthread_mutex_unlock(&f->lock);
	return 0;
}
