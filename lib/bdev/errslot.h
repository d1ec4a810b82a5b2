/* SPDX-License-Identifier: MIT */
/*
 * The last failure a device recorded (struct cairn_bdev_error), behind a lock
 * of its own: reads fail on several threads at once, and a query may come from
 * any thread. A device embeds one and answers its last_error method with
 * errslot_get(). Not a public header: devices outside the library fill in
 * struct cairn_bdev_error themselves.
 */
#ifndef CAIRN_ERRSLOT_H
#define CAIRN_ERRSLOT_H

#include <pthread.h>
#include <cairn/bdev.h>

struct errslot {
	pthread_mutex_t lock;
	struct cairn_bdev_error e;
};

/* device: the path or URL (copied, cut at CAIRN_BDEV_ERROR_TEXT), or NULL.
 * 0 or -ENOMEM. */
int errslot_init(struct errslot *s, const char *device);
void errslot_destroy(struct errslot *s);
/* Records a failure of [off, off+len): err (negative errno) and the cause. */
void errslot_set(struct errslot *s, int err, uint64_t off, uint64_t len, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void errslot_get(struct errslot *s, struct cairn_bdev_error *out);

#endif
