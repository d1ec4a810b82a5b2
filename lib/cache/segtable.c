/* SPDX-License-Identifier: MIT */
/*
 * The segment table: CACHE_SHARDS hash tables, each under its own mutex, so
 * readers of different segments never touch the same lock. Segments that hold
 * data sit on one CLOCK ring; a hit only sets the segment's referenced bit
 * (under its shard lock), so the ring lock is taken on fills and evictions,
 * never on the hit path.
 *
 * Segment memory comes from arena.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cache/cache_internal.h"

#define INITIAL_BUCKETS 16u

void seg_vec_init(struct seg_vec *sv)
{
	sv->v = sv->inline_v;
	sv->n = 0;
	sv->cap = sizeof(sv->inline_v) / sizeof(sv->inline_v[0]);
}

int seg_vec_push(struct seg_vec *sv, struct seg *s)
{
	if (sv->n == sv->cap) {
		size_t cap = sv->cap * 2;
		struct seg **v = malloc(cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		memcpy(v, sv->v, sv->n * sizeof(*v));
		if (sv->v != sv->inline_v)
			free(sv->v);
		sv->v = v;
		sv->cap = cap;
	}
	sv->v[sv->n++] = s;
	return 0;
}

void seg_vec_free(struct seg_vec *sv)
{
	if (sv->v != sv->inline_v)
		free(sv->v);
	seg_vec_init(sv);
}

/* Fibonacci hashing: consecutive segments land in different shards. */
static uint64_t seg_hash(uint64_t idx)
{
	uint64_t h = idx * 0x9e3779b97f4a7c15ull;

	return h ^ (h >> 32);
}

struct shard *seg_shard(struct cairn_cache *c, uint64_t idx)
{
	return &c->shards[(idx * 0x9e3779b97f4a7c15ull) >> 58 & (CACHE_SHARDS - 1)];
}

struct seg *seg_lookup(struct shard *sh, uint64_t idx)
{
	struct seg *s = sh->buckets[seg_hash(idx) & (sh->nbuckets - 1)];

	while (s && s->idx != idx)
		s = s->hnext;
	return s;
}

/* Double the bucket array; on ENOMEM the chains just get longer. */
static void shard_grow(struct shard *sh)
{
	size_t nb = sh->nbuckets * 2;
	struct seg **b = calloc(nb, sizeof(*b));

	if (!b)
		return;
	for (size_t i = 0; i < sh->nbuckets; i++) {
		struct seg *s = sh->buckets[i], *next;

		for (; s; s = next) {
			size_t j = seg_hash(s->idx) & (nb - 1);

			next = s->hnext;
			s->hnext = b[j];
			b[j] = s;
		}
	}
	free(sh->buckets);
	sh->buckets = b;
	sh->nbuckets = nb;
}

struct seg *seg_insert_fetching(struct cairn_cache *c, struct shard *sh, uint64_t idx, int refs)
{
	struct seg *s = calloc(1, sizeof(*s));
	size_t b;

	if (!s)
		return NULL;
	s->idx = idx;
	s->slot = SEG_NO_SLOT;
	s->refs = refs;
	s->state = SEG_FETCHING;
	if (sh->count >= sh->nbuckets)
		shard_grow(sh);
	b = seg_hash(idx) & (sh->nbuckets - 1);
	s->hnext = sh->buckets[b];
	sh->buckets[b] = s;
	sh->count++;
	return s;
}

void seg_unhash(struct cairn_cache *c, struct shard *sh, struct seg *s)
{
	struct seg **p = &sh->buckets[seg_hash(s->idx) & (sh->nbuckets - 1)];

	while (*p && *p != s)
		p = &(*p)->hnext;
	if (!*p)
		return;
	*p = s->hnext;
	s->hnext = NULL;
	sh->count--;
	atomic_fetch_sub_explicit(&c->resident, s->alloc, memory_order_relaxed);
}

struct seg *seg_unref_locked(struct seg *s)
{
	return --s->refs == 0 ? s : NULL;
}

void seg_destroy(struct cairn_cache *c, struct seg *s)
{
	seg_free_data(c, s);
	free(s);
}

void seg_release(struct cairn_cache *c, struct seg *s)
{
	struct shard *sh = seg_shard(c, s->idx);
	uint64_t idx = s->idx;
	struct seg *dead;
	int drop;

	pthread_mutex_lock(&sh->lock);
	dead = seg_unref_locked(s);
	drop = !dead && seg_drop_due(c, s);
	pthread_mutex_unlock(&sh->lock);
	if (dead)
		seg_destroy(c, dead);
	else if (drop)
		seg_drop_delivered(c, idx);
}

int seg_drop_due(const struct cairn_cache *c, const struct seg *s)
{
	return s->refs == 1 && s->state == SEG_READY && s->delivered &&
	       s->delivered == seg_all_delivered(c, s);
}

/* Ring operations; lru_lock held. The hand (lru_head) is the oldest segment. */
static void ring_insert_tail(struct cairn_cache *c, struct seg *s)
{
	struct seg *h = c->lru_head;

	if (!h) {
		s->lnext = s->lprev = s;
		c->lru_head = s;
	} else {
		s->lnext = h;
		s->lprev = h->lprev;
		h->lprev->lnext = s;
		h->lprev = s;
	}
	s->in_lru = 1;
}

static void ring_remove(struct cairn_cache *c, struct seg *s)
{
	if (s->lnext == s) {
		c->lru_head = NULL;
	} else {
		s->lprev->lnext = s->lnext;
		s->lnext->lprev = s->lprev;
		if (c->lru_head == s)
			c->lru_head = s->lnext;
	}
	s->lnext = s->lprev = NULL;
	s->in_lru = 0;
}

/* Frees a delivered segment's data, leaving it in the table as a ghost
 * (SEG_GONE) so readahead does not fetch it again; ring and shard locked. */
static void drop_locked(struct cairn_cache *c, struct seg *s)
{
	ring_remove(c, s);
	atomic_fetch_sub_explicit(&c->resident, s->alloc, memory_order_relaxed);
	s->alloc = 0;
	seg_free_data(c, s);
	s->state = SEG_GONE;
	atomic_fetch_add_explicit(&c->dropped, 1, memory_order_relaxed);
}

/* A segment published UNCHECKED can be taken, fail its check and leave the
 * table (fail_claims) before its publisher gets here: it must not join the
 * ring then, or it is freed while linked. fail_claims marks it under the ring
 * lock and its shard's, so the check here, under both, sees it. */
void lru_add(struct cairn_cache *c, struct seg **s, size_t n)
{
	pthread_mutex_lock(&c->lru_lock);
	for (size_t i = 0; i < n; i++) {
		struct shard *sh = seg_shard(c, s[i]->idx);

		pthread_mutex_lock(&sh->lock);
		if (!s[i]->in_lru && s[i]->state != SEG_FAILED) {
			ring_insert_tail(c, s[i]);
			/* A reader may have taken all of it between READY and here,
			 * when cairn_cache_delivered could not drop it (off the ring). */
			if (seg_drop_due(c, s[i]))
				drop_locked(c, s[i]);
		}
		pthread_mutex_unlock(&sh->lock);
	}
	pthread_mutex_unlock(&c->lru_lock);
}

void lru_remove_locked(struct cairn_cache *c, struct seg *s)
{
	if (s->in_lru)
		ring_remove(c, s);
}

/*
 * CLOCK: the hand gives a referenced segment a second chance (clears the bit
 * and moves on) and evicts the first unreferenced one. Two full turns without
 * finding a victim means everything is pinned by in-flight work; stop then, the
 * overshoot is bounded by the fetches in flight. A segment a reader is checking
 * (taken from SEG_UNCHECKED, so FETCHING while on the ring) is never evicted:
 * its checker publishes or fails it in place.
 */
void evict_to_budget(struct cairn_cache *c, size_t need)
{
	struct seg *dead = NULL;
	size_t turns = 0;
	size_t limit = c->budget > need ? c->budget - need : 0;

	if (atomic_load_explicit(&c->resident, memory_order_relaxed) <= limit)
		return;
	pthread_mutex_lock(&c->lru_lock);
	while (c->lru_head &&
	       atomic_load_explicit(&c->resident, memory_order_relaxed) > limit) {
		struct seg *s = c->lru_head, *d;
		struct shard *sh = seg_shard(c, s->idx);

		int pinned;

		pthread_mutex_lock(&sh->lock);
		pinned = s->state == SEG_FETCHING;
		if ((s->referenced || pinned) && turns < 2 * (c->budget / c->seg_size + 16)) {
			s->referenced = 0;
			pthread_mutex_unlock(&sh->lock);
			c->lru_head = s->lnext;
			turns++;
			continue;
		}
		if (pinned) {
			pthread_mutex_unlock(&sh->lock);
			break;
		}
		ring_remove(c, s);
		seg_unhash(c, sh, s);
		if (s->from_ra)
			atomic_fetch_add_explicit(&c->ra_wasted, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&c->evictions, 1, memory_order_relaxed);
		d = seg_unref_locked(s);
		pthread_mutex_unlock(&sh->lock);
		if (d) {
			d->hnext = dead; /* free outside the locks: munmap is a syscall */
			dead = d;
		}
	}
	pthread_mutex_unlock(&c->lru_lock);
	while (dead) {
		struct seg *next = dead->hnext;

		seg_destroy(c, dead);
		dead = next;
	}
}

void seg_drop_delivered(struct cairn_cache *c, uint64_t idx)
{
	struct shard *sh = seg_shard(c, idx);
	struct seg *s;

	pthread_mutex_lock(&c->lru_lock); /* lock order: ring, then shard */
	pthread_mutex_lock(&sh->lock);
	s = seg_lookup(sh, idx);
	/* Only when no reader holds it (refs: the table's alone): they copy from
	 * it. One that held it then drops it as it lets go (seg_release). */
	if (s && s->in_lru && seg_drop_due(c, s))
		drop_locked(c, s);
	pthread_mutex_unlock(&sh->lock);
	pthread_mutex_unlock(&c->lru_lock);
}

int seg_forget_gone(struct cairn_cache *c, struct shard *sh, struct seg *s)
{
	if (s->state != SEG_GONE)
		return 0;
	seg_unhash(c, sh, s);
	free(s); /* no data, and only the table held it */
	return 1;
}

int segtable_init(struct cairn_cache *c)
{
	c->shards = aligned_alloc(64, sizeof(struct shard) * CACHE_SHARDS);
	if (!c->shards)
		return -ENOMEM;
	memset(c->shards, 0, sizeof(struct shard) * CACHE_SHARDS);
	for (unsigned i = 0; i < CACHE_SHARDS; i++) {
		struct shard *sh = &c->shards[i];

		sh->nbuckets = INITIAL_BUCKETS;
		sh->buckets = calloc(sh->nbuckets, sizeof(*sh->buckets));
		if (!sh->buckets) {
			for (unsigned j = 0; j < i; j++) {
				free(c->shards[j].buckets);
				pthread_mutex_destroy(&c->shards[j].lock);
				pthread_cond_destroy(&c->shards[j].cond);
			}
			free(c->shards);
			c->shards = NULL;
			return -ENOMEM;
		}
		pthread_mutex_init(&sh->lock, NULL);
		pthread_cond_init(&sh->cond, NULL);
	}
	return 0;
}

/* Only when no reader or worker is left: every segment has just its hash ref. */
void segtable_destroy(struct cairn_cache *c)
{
	if (!c->shards)
		return;
	for (unsigned i = 0; i < CACHE_SHARDS; i++) {
		struct shard *sh = &c->shards[i];

		for (size_t b = 0; b < sh->nbuckets; b++) {
			struct seg *s = sh->buckets[b], *next;

			for (; s; s = next) {
				next = s->hnext;
				seg_destroy(c, s);
			}
		}
		free(sh->buckets);
		pthread_mutex_destroy(&sh->lock);
		pthread_cond_destroy(&sh->cond);
	}
	free(c->shards);
	c->shards = NULL;
}
