/* SPDX-License-Identifier: MIT */
/*
 * Segment memory: one arena of fixed slots, reserved once, reused forever.
 *
 * Why not malloc/munmap per segment: a page touched for the first time costs
 * far more than rewriting it (a fault and zeroing per 4 KiB page: 21-35 ms for
 * 35 MB of fresh malloc'd memory on the benchmark VM, bench/touch and
 * docs/bench/zorder.md; munmap of 128 KiB costs ~1 ms, docs/BENCHMARKS.md).
 * A cache that is full evicts exactly when it fills, so
 * memory given back to the OS at eviction would be faulted in again at once.
 * The arena is reserved with MAP_NORESERVE (no RSS until a slot is first
 * used) and asks for transparent huge pages, which also keeps TLB misses off
 * the hit path. Resident memory can never exceed the arena: budget plus a
 * slack of max_io per worker and per concurrent reader (the fetches in
 * flight). A slot freed while nothing waits for memory (a segment dropped once
 * delivered, cairn_cache_delivered) stays resident only while fewer than
 * WARM_BUSY of free slots are; past that its pages go back to the OS
 * (MADV_DONTNEED). A cold start frees delivered segments as fast as it
 * fetches new ones, so the next fetch takes a warm slot (the free list is a
 * stack) instead of faulting and zeroing fresh pages: 8 MiB of them cut the
 * daemon's system time per Java start by 10-15 ms (docs/bench/vcost4.md).
 * Once the workers have had nothing to do for WARM_IDLE_S, the free slots
 * beyond WARM_IDLE go back too (arena_trim), so an idle daemon whose data the
 * kernel has taken shrinks back to its metadata. Eviction frees slots for the
 * fetch that follows it, which takes them warm. Everything goes back to the
 * OS in cairn_cache_free().
 *
 * If every slot is taken (more concurrent fetches than the slack foresaw),
 * a segment falls back to malloc and is freed at eviction: correctness never
 * depends on the arena having room.
 *
 * A run of several segments is one request. When its slots are adjacent it is
 * read straight into them; otherwise into a bounce buffer, then copied (slots
 * of a run need not be adjacent). Bounce buffers are pooled (util_bufpool),
 * and like freed slots only one of them stays resident: each is max_io (1 MiB)
 * filled whole, and a cold Java start left three of them, 3 MiB of a daemon
 * whose data the kernel had long taken (docs/bench/rss.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "cache/cache_internal.h"

#define HUGE_ALIGN (2u << 20)
#define SLACK_READERS 4u    /* concurrent sync readers the slack is sized for */
#define MAX_SLOTS (1u << 26)
#define WARM_BUSY (4u << 20) /* freed segment memory kept resident for reuse */
#define WARM_IDLE (2u << 20) /* of which kept once idle (arena_trim) */

int arena_init(struct cairn_cache *c)
{
	uint64_t want = c->budget < c->dev_size ? c->budget : round_up(c->dev_size, c->seg_size);
	size_t slack = (c->nthreads + SLACK_READERS) * (c->max_io >> c->seg_shift);
	size_t n = (size_t)(want >> c->seg_shift) + slack;
	size_t bytes = n << c->seg_shift;
	unsigned char *p;

	if (n > MAX_SLOTS)
		return -EINVAL; /* a budget this large wants bigger segments */
	if (pthread_mutex_init(&c->slot_lock, NULL))
		return -ENOMEM;
	c->free_slots = malloc(n * sizeof(*c->free_slots));
	c->slot_warm = calloc(n, 1);
	if (!c->free_slots || !c->slot_warm)
		goto fail;
	c->warm_max = WARM_BUSY >> c->seg_shift;
	c->warm_idle = WARM_IDLE >> c->seg_shift;
	p = mmap(NULL, bytes + HUGE_ALIGN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		goto fail;
	c->arena_map = p;
	c->arena_map_len = bytes + HUGE_ALIGN;
	c->arena = (unsigned char *)round_up((uintptr_t)p, HUGE_ALIGN);
	madvise(c->arena, bytes, MADV_HUGEPAGE); /* advice: fine if refused */
	c->nslots = n;
	/* Hand out low slots first so a partly used arena stays compact. */
	for (size_t i = 0; i < n; i++)
		c->free_slots[i] = (uint32_t)(n - 1 - i);
	c->nfree = n;
	util_bufpool_init(&c->bounce, c->max_io, CACHE_BOUNCE_POOL, 1);
	return 0;
fail:
	free(c->free_slots);
	free(c->slot_warm);
	c->free_slots = NULL;
	c->slot_warm = NULL;
	pthread_mutex_destroy(&c->slot_lock);
	return -ENOMEM;
}

void arena_destroy(struct cairn_cache *c)
{
	if (!c->free_slots)
		return;
	util_bufpool_destroy(&c->bounce);
	munmap(c->arena_map, c->arena_map_len);
	free(c->free_slots);
	free(c->slot_warm);
	c->free_slots = NULL;
	c->slot_warm = NULL;
	pthread_mutex_destroy(&c->slot_lock);
}

/* Insertion sort: runs are short and usually already in order. */
static void sort_slots(struct seg **s, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint32_t v = s[i]->slot;
		size_t j = i;

		for (; j > 0 && s[j - 1]->slot > v; j--)
			s[j]->slot = s[j - 1]->slot;
		s[j]->slot = v;
	}
}

static int slots_adjacent(struct seg **s, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (s[i]->slot != s[0]->slot + i)
			return 0;
	return 1;
}

int seg_alloc_run(struct cairn_cache *c, struct seg **s, size_t n, unsigned char **tmp)
{
	size_t got = 0;
	int n_direct = 0;

	*tmp = NULL;
	pthread_mutex_lock(&c->slot_lock);
	while (got < n && c->nfree) {
		uint32_t slot = c->free_slots[--c->nfree];

		if (c->slot_warm[slot])
			c->nwarm_free--;
		c->slot_warm[slot] = 1; /* it is about to be written */
		s[got++]->slot = slot;
	}
	/* Slots freed by eviction come back in the order their segments went;
	 * sorting gives a run adjacent slots whenever the free ones are. */
	sort_slots(s, got);
	for (size_t i = 0; i < got; i++)
		s[i]->data = c->arena + ((size_t)s[i]->slot << c->seg_shift);
	/* Slots of a run that happen to be adjacent (the usual case: the free
	 * stack hands them out in order) are read into directly, with no bounce. */
	if (got == n && n > 1 && slots_adjacent(s, n))
		n_direct = 1;
	pthread_mutex_unlock(&c->slot_lock);
	for (size_t i = got; i < n; i++) {
		s[i]->slot = SEG_NO_SLOT;
		s[i]->data = malloc(c->seg_size);
		if (!s[i]->data)
			goto fail;
	}
	if (n > 1 && !n_direct && !(*tmp = util_bufpool_get(&c->bounce)))
		goto fail;
	for (size_t i = 0; i < n; i++)
		s[i]->alloc = c->seg_size;
	atomic_fetch_add_explicit(&c->resident, n << c->seg_shift, memory_order_relaxed);
	return 0;
fail:
	for (size_t i = 0; i < n; i++) {
		s[i]->alloc = 0;
		seg_free_data(c, s[i]);
	}
	util_bufpool_put(&c->bounce, *tmp);
	*tmp = NULL;
	return -ENOMEM;
}

/* Give back the pages of free slots beyond WARM_IDLE, the least recently
 * freed first (the top of the stack is taken next). */
void arena_trim(struct cairn_cache *c)
{
	pthread_mutex_lock(&c->slot_lock);
	for (size_t i = 0; i < c->nfree && c->nwarm_free > c->warm_idle; i++) {
		uint32_t slot = c->free_slots[i];

		if (!c->slot_warm[slot])
			continue;
		madvise(c->arena + ((size_t)slot << c->seg_shift), c->seg_size, MADV_DONTNEED);
		c->slot_warm[slot] = 0;
		c->nwarm_free--;
	}
	atomic_store_explicit(&c->warm_excess, 0, memory_order_relaxed);
	pthread_mutex_unlock(&c->slot_lock);
}

void seg_free_data(struct cairn_cache *c, struct seg *s)
{
	int wake = 0;

	if (!s->data)
		return;
	if (s->slot == SEG_NO_SLOT) {
		free(s->data);
	} else {
		pthread_mutex_lock(&c->slot_lock);
		/* A few freed slots stay resident for the next fetch; the rest go
		 * back to the OS (before anyone can take the slot again), so a daemon
		 * whose data was delivered shrinks back. */
		if (c->nwarm_free < c->warm_max) {
			c->nwarm_free++;
		} else {
			madvise(c->arena + ((size_t)s->slot << c->seg_shift), c->seg_size,
				MADV_DONTNEED);
			c->slot_warm[s->slot] = 0;
		}
		c->free_slots[c->nfree++] = s->slot;
		/* The first slot kept past the idle allowance: a worker must wake to
		 * time the idle period (workers_wait), it may be asleep for good. */
		if (c->nwarm_free > c->warm_idle &&
		    !atomic_exchange_explicit(&c->warm_excess, 1, memory_order_relaxed))
			wake = 1;
		pthread_mutex_unlock(&c->slot_lock);
	}
	if (wake) { /* job_lock is a leaf: not under slot_lock */
		pthread_mutex_lock(&c->job_lock);
		pthread_cond_signal(&c->job_cond);
		pthread_mutex_unlock(&c->job_lock);
	}
	s->data = NULL;
	s->slot = SEG_NO_SLOT;
}
