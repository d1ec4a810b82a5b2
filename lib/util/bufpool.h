/* SPDX-License-Identifier: MIT */
/* A few large buffers kept for reuse (not part of the public API).
 *
 * A fresh buffer of a MiB or so is a fresh mapping from malloc: every page
 * faults and is zeroed as it is filled, and its munmap shoots down the TLBs of
 * every CPU. The cache's bounce buffers and the namespace's image read buffers
 * are taken and given back on every large read, so both keep a few here.
 * Kept buffers beyond `resident` give their pages back (MADV_DONTNEED): the
 * pool then costs no memory while idle beyond those, and a buffer taken again
 * costs only its faults. The resident ones are on top and handed out first.
 * Thread-safe; the lock is a leaf. */
#ifndef CAIRN_UTIL_BUFPOOL_H
#define CAIRN_UTIL_BUFPOOL_H

#include <pthread.h>
#include <stddef.h>

#define UTIL_BUFPOOL_MAX 8u

struct util_bufpool {
	pthread_mutex_t lock;
	size_t size;               /* bytes per buffer: a multiple of the page size */
	unsigned keep;             /* buffers kept at most, <= UTIL_BUFPOOL_MAX */
	unsigned resident;         /* of which keep their pages */
	unsigned n, nres;          /* kept; bufs[n - nres .. n - 1] are resident */
	void *bufs[UTIL_BUFPOOL_MAX];
};

/* size is rounded up to whole pages; keep is capped at UTIL_BUFPOOL_MAX. */
void util_bufpool_init(struct util_bufpool *p, size_t size, unsigned keep, unsigned resident);
/* Frees the kept buffers. Every buffer taken must have been given back or freed. */
void util_bufpool_destroy(struct util_bufpool *p);
/* A page-aligned buffer of p->size bytes, kept or new; NULL on ENOMEM. Free it
 * with util_bufpool_put (or free()). */
void *util_bufpool_get(struct util_bufpool *p);
/* Give back a buffer of util_bufpool_get: kept while there is room, else freed.
 * NULL is ignored. */
void util_bufpool_put(struct util_bufpool *p, void *buf);

#endif
