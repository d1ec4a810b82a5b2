/* SPDX-License-Identifier: MIT */
/* util_bufpool: a few large buffers kept for reuse (bufpool.h says why). */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "util/bufpool.h"

void util_bufpool_init(struct util_bufpool *p, size_t size, unsigned keep, unsigned resident)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	pthread_mutex_init(&p->lock, NULL);
	p->size = (size + page - 1) / page * page;
	p->keep = keep < UTIL_BUFPOOL_MAX ? keep : UTIL_BUFPOOL_MAX;
	p->resident = resident < p->keep ? resident : p->keep;
	p->n = p->nres = 0;
}

void util_bufpool_destroy(struct util_bufpool *p)
{
	for (unsigned i = 0; i < p->n; i++)
		free(p->bufs[i]);
	p->n = p->nres = 0;
	pthread_mutex_destroy(&p->lock);
}

void *util_bufpool_get(struct util_bufpool *p)
{
	void *buf = NULL;

	pthread_mutex_lock(&p->lock);
	if (p->n) {
		buf = p->bufs[--p->n];
		if (p->nres)
			p->nres--;
	}
	pthread_mutex_unlock(&p->lock);
	/* Page-aligned: a device below that reads by pages (O_DIRECT, a FUSE file
	 * with direct_io) would otherwise split a read into one of the size minus
	 * the misalignment and a tiny one for the rest. */
	if (!buf && posix_memalign(&buf, (size_t)sysconf(_SC_PAGESIZE), p->size))
		buf = NULL;
	return buf;
}

void util_bufpool_put(struct util_bufpool *p, void *buf)
{
	if (!buf)
		return;
	pthread_mutex_lock(&p->lock);
	if (p->n < p->keep && p->nres < p->resident) {
		p->bufs[p->n++] = buf; /* on top: handed out first, warm */
		p->nres++;
		buf = NULL;
	} else if (p->n < p->keep) {
		/* Under the resident ones, without its pages. Given back under the
		 * lock: the pool's next user must not see its pages vanish. */
		madvise(buf, p->size, MADV_DONTNEED);
		for (unsigned i = p->n; i > p->n - p->nres; i--)
			p->bufs[i] = p->bufs[i - 1];
		p->bufs[p->n - p->nres] = buf;
		p->n++;
		buf = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	free(buf);
}
