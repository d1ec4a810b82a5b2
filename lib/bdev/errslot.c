/* SPDX-License-Identifier: MIT */
/* A device's last failure, and the query that walks a stack for the newest. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cairn/error.h>
#include "bdev/errslot.h"

int errslot_init(struct errslot *s, const char *device)
{
	memset(&s->e, 0, sizeof(s->e));
	if (device)
		snprintf(s->e.device, sizeof(s->e.device), "%s", device);
	return pthread_mutex_init(&s->lock, NULL) ? -ENOMEM : 0;
}

void errslot_destroy(struct errslot *s)
{
	pthread_mutex_destroy(&s->lock);
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void errslot_set(struct errslot *s, int err, uint64_t off, uint64_t len, const char *fmt, ...)
{
	char cause[CAIRN_BDEV_ERROR_TEXT];
	va_list ap;

	/* Formatted outside the lock: a slow vsnprintf holds no other reader up. */
	va_start(ap, fmt);
	vsnprintf(cause, sizeof(cause), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&s->lock);
	s->e.err = err;
	s->e.off = off;
	s->e.len = len;
	s->e.when_ns = monotonic_ns();
	s->e.count++;
	memcpy(s->e.cause, cause, sizeof(cause));
	pthread_mutex_unlock(&s->lock);
}

void errslot_get(struct errslot *s, struct cairn_bdev_error *out)
{
	pthread_mutex_lock(&s->lock);
	*out = s->e;
	pthread_mutex_unlock(&s->lock);
}

int cairn_bdev_last_error(struct cairn_bdev *dev, struct cairn_bdev_error *out)
{
	char name[CAIRN_BDEV_ERROR_TEXT] = "";
	struct cairn_bdev_error e;

	memset(out, 0, sizeof(*out));
	for (; dev; dev = dev->below) {
		if (dev->ops->version < 4 || !dev->ops->last_error)
			continue;
		memset(&e, 0, sizeof(e));
		dev->ops->last_error(dev, &e);
		if (e.device[0])
			memcpy(name, e.device, sizeof(name)); /* the lowest named one wins */
		/* >= : of two at the same instant, the lower device is nearer the cause */
		if (e.err && (!out->err || e.when_ns >= out->when_ns))
			*out = e;
	}
	if (!out->err)
		return 0;
	if (!out->device[0])
		memcpy(out->device, name, sizeof(name));
	return 1;
}

void cairn_bdev_error_format(const struct cairn_bdev_error *e, char *text, size_t len)
{
	if (!len)
		return;
	if (!e->err)
		text[0] = '\0';
	else if (e->len)
		snprintf(text, len, "%s: bytes %" PRIu64 "-%" PRIu64 ": %s",
			 e->device[0] ? e->device : "device", e->off, e->off + e->len - 1,
			 e->cause[0] ? e->cause : cairn_strerror(e->err));
	else
		snprintf(text, len, "%s: %s", e->device[0] ? e->device : "device",
			 e->cause[0] ? e->cause : cairn_strerror(e->err));
}
