/* SPDX-License-Identifier: MIT */
/*
 * The decompressed-chunk cache (zcache.h): a chained hash table of entries and
 * one LRU list of the loaded ones, under one mutex. Loads run outside the lock;
 * readers of a chunk being loaded wait on one condition variable (loads are rare
 * against hits, so a broadcast to all waiters costs little).
 *
 * Entry memory (cairn_zcache_set_slot): a cold start decompresses tens of MB
 * into fresh memory, and on the benchmark VM a fresh 4 KiB page costs more
 * than decompressing into it: 35 MB in malloc'd 128 KiB buffers took 21-25 ms
 * to touch (8200 page faults, a third of the CPU a compressed Java cold start
 * spends over an uncompressed one), the same in transparent huge pages 7 ms.
 * So entries of up to a slot are carved from 2 MiB blocks asked for huge pages,
 * as the segment cache's arena does (lib/cache/arena.c). At most budget / 2 MiB
 * + ZC_SPARE_BLOCKS blocks are mapped (past that, malloc), so slot memory stays
 * within the budget plus the spare however entries come and go, and of the
 * blocks that empty out one is kept (a daemon whose data the kernel took shrinks).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <cairn/error.h>
#include "zcache.h"

#define ZC_BUCKETS 4096u /* power of two; chains stay short at any budget we allow */
/* Keys of chunks dropped once delivered, direct-mapped (a collision forgets the
 * older): read-ahead skips them, as the kernel has their bytes. Without this, a
 * sequential reader's read-ahead of chunks that a parallel read had delivered
 * already decompressed a quarter of a 128 MiB file twice. */
#define ZC_GHOSTS 4096u

enum { ZC_LOADING, ZC_READY, ZC_FAILED };

#define ZC_BLOCK (2u << 20)     /* a huge page; slots are powers of two up to 1 MiB */
#define ZC_SPARE_BLOCKS 4u      /* blocks past the budget: held and loading entries */
#define ZC_NO_BLOCK UINT32_MAX  /* entry data from malloc */

struct zblock {
	char *base;                 /* NULL: unmapped (the array slot is reused) */
	uint64_t used[2];           /* slots taken: at most ZC_BLOCK / 16 KiB = 128 */
	unsigned n;                 /* slots taken */
};

struct cairn_zentry {
	uint64_t key;
	size_t len;
	struct cairn_zentry *hnext;       /* hash chain */
	struct cairn_zentry *prev, *next; /* LRU list (READY entries), most recent first */
	unsigned refs;
	int state, err;
	int hashed;                       /* still in the table */
	uint32_t delivered;               /* which 32nds of it the reader keeps (bits) */
	uint32_t block;                   /* data's block, or ZC_NO_BLOCK */
	char *data;
};

struct cairn_zcache {
	pthread_mutex_t lock;
	pthread_cond_t loaded;
	struct cairn_zentry *table[ZC_BUCKETS];
	struct cairn_zentry *lru_head, *lru_tail;
	size_t budget, resident;
	struct cairn_zcache_stats st;
	uint64_t ghost[ZC_GHOSTS]; /* key + 1 of a dropped chunk, 0 for none */
	size_t slot;               /* entries up to this long come from blocks; 0: none */
	struct zblock *blocks;
	uint32_t nblocks;          /* array length (mapped or not) */
};

static size_t bucket(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	return (size_t)(key ^ (key >> 29)) & (ZC_BUCKETS - 1);
}

int cairn_zcache_new(size_t budget, struct cairn_zcache **out)
{
	struct cairn_zcache *z = calloc(1, sizeof(*z));

	if (!z)
		return -ENOMEM;
	pthread_mutex_init(&z->lock, NULL);
	pthread_cond_init(&z->loaded, NULL);
	z->budget = budget ? budget : CAIRN_ZCACHE_DEFAULT;
	*out = z;
	return 0;
}

/* ---- entry memory (lock held) ---- */

static unsigned slots_per_block(const struct cairn_zcache *z)
{
	return (unsigned)(ZC_BLOCK / z->slot);
}

static uint32_t mapped_blocks(const struct cairn_zcache *z)
{
	uint32_t n = 0;

	for (uint32_t b = 0; b < z->nblocks; b++)
		n += z->blocks[b].base != NULL;
	return n;
}

/* A fresh block of ZC_BLOCK bytes aligned to ZC_BLOCK, asked for huge pages, or NULL. */
static char *block_map(void)
{
	char *p = mmap(NULL, 2 * (size_t)ZC_BLOCK, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + ZC_BLOCK - 1) & ~(uintptr_t)(ZC_BLOCK - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	munmap(a + ZC_BLOCK, (size_t)(p + 2 * (size_t)ZC_BLOCK - (a + ZC_BLOCK)));
	(void)madvise(a, ZC_BLOCK, MADV_HUGEPAGE); /* advice: small pages work too */
	return a;
}

/* A free slot of a mapped block, mapping one within the cap; NULL for none. */
static char *slot_get(struct cairn_zcache *z, uint32_t *block)
{
	unsigned per = slots_per_block(z);
	uint32_t b, hole = z->nblocks;

	for (b = 0; b < z->nblocks; b++) {
		struct zblock *k = &z->blocks[b];

		if (!k->base) {
			hole = hole < b ? hole : b;
			continue;
		}
		if (k->n < per)
			break;
	}
	if (b == z->nblocks) { /* every mapped block is full */
		struct zblock *nb = z->blocks;

		if (mapped_blocks(z) >= z->budget / ZC_BLOCK + ZC_SPARE_BLOCKS)
			return NULL;
		if (hole == z->nblocks) {
			nb = realloc(z->blocks, (z->nblocks + 1) * sizeof(*nb));
			if (!nb)
				return NULL;
			z->blocks = nb;
			z->nblocks++;
		}
		b = hole;
		z->blocks[b] = (struct zblock){ block_map(), { 0, 0 }, 0 };
		if (!z->blocks[b].base)
			return NULL;
	}
	for (unsigned i = 0; i < per; i++) {
		uint64_t bit = 1ull << (i % 64);

		if (!(z->blocks[b].used[i / 64] & bit)) {
			z->blocks[b].used[i / 64] |= bit;
			z->blocks[b].n++;
			*block = b;
			return z->blocks[b].base + (size_t)i * z->slot;
		}
	}
	return NULL; /* not reached: n < per */
}

/* Gives a slot back; a block that empties is unmapped unless it is the only empty one. */
static void slot_put(struct cairn_zcache *z, uint32_t b, char *p)
{
	struct zblock *k = &z->blocks[b];
	unsigned i = (unsigned)((size_t)(p - k->base) / z->slot);

	k->used[i / 64] &= ~(1ull << (i % 64));
	if (--k->n)
		return;
	for (uint32_t o = 0; o < z->nblocks; o++)
		if (o != b && z->blocks[o].base && !z->blocks[o].n) {
			munmap(k->base, ZC_BLOCK);
			k->base = NULL;
			return;
		}
}

static char *data_alloc(struct cairn_zcache *z, struct cairn_zentry *e)
{
	char *p = e->len <= z->slot ? slot_get(z, &e->block) : NULL;

	if (p)
		return p;
	e->block = ZC_NO_BLOCK;
	return malloc(e->len);
}

static void entry_free(struct cairn_zcache *z, struct cairn_zentry *e)
{
	if (e->data && e->block != ZC_NO_BLOCK)
		slot_put(z, e->block, e->data);
	else
		free(e->data);
	free(e);
}

void cairn_zcache_free(struct cairn_zcache *z)
{
	if (!z)
		return;
	for (size_t b = 0; b < ZC_BUCKETS; b++)
		for (struct cairn_zentry *e = z->table[b], *n; e; e = n) {
			n = e->hnext;
			entry_free(z, e);
		}
	for (uint32_t b = 0; b < z->nblocks; b++)
		if (z->blocks[b].base)
			munmap(z->blocks[b].base, ZC_BLOCK);
	free(z->blocks);
	pthread_cond_destroy(&z->loaded);
	pthread_mutex_destroy(&z->lock);
	free(z);
}

static void lru_unlink(struct cairn_zcache *z, struct cairn_zentry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		z->lru_head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		z->lru_tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push(struct cairn_zcache *z, struct cairn_zentry *e)
{
	e->prev = NULL;
	e->next = z->lru_head;
	if (z->lru_head)
		z->lru_head->prev = e;
	z->lru_head = e;
	if (!z->lru_tail)
		z->lru_tail = e;
}

static void unhash(struct cairn_zcache *z, struct cairn_zentry *e)
{
	struct cairn_zentry **p = &z->table[bucket(e->key)];

	while (*p != e)
		p = &(*p)->hnext;
	*p = e->hnext;
	e->hashed = 0;
	z->resident -= e->len;
}

/* Drops unheld loaded entries, oldest first, until the budget holds. */
static void evict(struct cairn_zcache *z)
{
	struct cairn_zentry *e = z->lru_tail, *prev;

	for (; e && z->resident > z->budget; e = prev) {
		prev = e->prev;
		if (e->refs)
			continue;
		lru_unlink(z, e);
		unhash(z, e);
		z->st.evictions++;
		entry_free(z, e);
	}
}

void cairn_zcache_set_slot(struct cairn_zcache *z, size_t slot)
{
	pthread_mutex_lock(&z->lock);
	/* Only while no block is mapped: slots of one size tile every block. */
	if (!z->nblocks && slot && slot <= ZC_BLOCK / 2 && ZC_BLOCK / slot <= 128 &&
	    !(slot & (slot - 1)))
		z->slot = slot;
	pthread_mutex_unlock(&z->lock);
}

void cairn_zcache_set_budget(struct cairn_zcache *z, size_t budget)
{
	pthread_mutex_lock(&z->lock);
	z->budget = budget ? budget : CAIRN_ZCACHE_DEFAULT;
	evict(z);
	pthread_mutex_unlock(&z->lock);
}

static uint64_t *ghost_of(struct cairn_zcache *z, uint64_t key)
{
	return &z->ghost[bucket(key) & (ZC_GHOSTS - 1)];
}

static struct cairn_zentry *find(struct cairn_zcache *z, uint64_t key)
{
	for (struct cairn_zentry *e = z->table[bucket(key)]; e; e = e->hnext)
		if (e->key == key)
			return e;
	return NULL;
}

/* A new LOADING entry for key, held once by the caller, in the table. */
static struct cairn_zentry *insert(struct cairn_zcache *z, uint64_t key, size_t len)
{
	struct cairn_zentry *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->key = key;
	e->len = len;
	e->block = ZC_NO_BLOCK;
	e->refs = 1;
	e->state = ZC_LOADING;
	e->hashed = 1;
	e->hnext = z->table[bucket(key)];
	z->table[bucket(key)] = e;
	z->resident += len;
	return e;
}

/* Loads e (held by us, LOADING, in the table) outside the lock. */
static int load(struct cairn_zcache *z, struct cairn_zentry *e, cairn_zcache_load_fn fn,
		void *ctx)
{
	int rc;

	e->data = data_alloc(z, e);
	pthread_mutex_unlock(&z->lock);
	rc = e->data ? fn(ctx, e->key, e->data, e->len) : -ENOMEM;
	pthread_mutex_lock(&z->lock);
	if (rc) {
		e->state = ZC_FAILED;
		e->err = rc;
		unhash(z, e); /* the next reader tries again */
	} else {
		e->state = ZC_READY;
		z->st.loaded_bytes += e->len;
		lru_push(z, e);
	}
	pthread_cond_broadcast(&z->loaded);
	return rc;
}

/* An entry of len bytes is counted in up to 32 granules of this many bytes. */
static uint64_t granule(size_t len)
{
	return (len + 31) / 32;
}

/* The bits of all granules of an entry of len (> 0) bytes. */
static uint32_t all_granules(size_t len)
{
	uint64_t n = (len + granule(len) - 1) / granule(len);

	return n >= 32 ? UINT32_MAX : (1u << n) - 1;
}

/* Every granule of e delivered: nobody needs it again (the reader keeps it). */
static int all_delivered(const struct cairn_zentry *e)
{
	return e->delivered == all_granules(e->len);
}

/* Drops READY entry e, which nobody holds, from the table and the list, and
 * leaves its key as a ghost for read-ahead to skip. */
static void drop(struct cairn_zcache *z, struct cairn_zentry *e)
{
	*ghost_of(z, e->key) = e->key + 1;
	lru_unlink(z, e);
	unhash(z, e);
	z->st.dropped++;
	entry_free(z, e);
}

static void release(struct cairn_zcache *z, struct cairn_zentry *e)
{
	if (--e->refs)
		return;
	if (!e->hashed) /* failed: the last holder frees it */
		entry_free(z, e);
	else if (e->state == ZC_READY && all_delivered(e))
		drop(z, e);
	else
		evict(z);
}

int cairn_zcache_get(struct cairn_zcache *z, uint64_t key, size_t len, cairn_zcache_load_fn fn,
		     void *ctx, struct cairn_zentry **out, const void **data)
{
	struct cairn_zentry *e;
	int rc = 0;

	pthread_mutex_lock(&z->lock);
	e = find(z, key);
	if (e) {
		e->refs++;
		if (e->state == ZC_LOADING) {
			z->st.waits++;
			while (e->state == ZC_LOADING)
				pthread_cond_wait(&z->loaded, &z->lock);
		} else {
			z->st.hits++;
		}
		if (e->state == ZC_FAILED)
			rc = e->err;
		else if (e->len != len)
			rc = -CAIRN_ECORRUPT;
		else if (e->prev || z->lru_head != e) { /* most recent first */
			lru_unlink(z, e);
			lru_push(z, e);
		}
	} else if (!fn) { /* only what is cached */
		pthread_mutex_unlock(&z->lock);
		return -EAGAIN;
	} else {
		if (*ghost_of(z, key) == key + 1) /* needed again */
			*ghost_of(z, key) = 0;
		e = insert(z, key, len);
		if (!e) {
			pthread_mutex_unlock(&z->lock);
			return -ENOMEM;
		}
		z->st.misses++;
		rc = load(z, e, fn, ctx);
	}
	if (rc) {
		release(z, e);
		pthread_mutex_unlock(&z->lock);
		return rc;
	}
	pthread_mutex_unlock(&z->lock);
	*out = e;
	*data = e->data;
	return 0;
}

int cairn_zcache_present(struct cairn_zcache *z, uint64_t key)
{
	int found;

	pthread_mutex_lock(&z->lock);
	found = find(z, key) != NULL;
	pthread_mutex_unlock(&z->lock);
	return found;
}

int cairn_zcache_prefetch(struct cairn_zcache *z, uint64_t key, size_t len,
			  cairn_zcache_load_fn fn, void *ctx)
{
	struct cairn_zentry *e;
	int rc;

	pthread_mutex_lock(&z->lock);
	if (find(z, key) || *ghost_of(z, key) == key + 1) {
		pthread_mutex_unlock(&z->lock);
		return 0;
	}
	e = insert(z, key, len);
	if (!e) {
		pthread_mutex_unlock(&z->lock);
		return -ENOMEM;
	}
	z->st.ahead++;
	rc = load(z, e, fn, ctx);
	release(z, e);
	pthread_mutex_unlock(&z->lock);
	return rc;
}

/* The granules of an entry of len bytes wholly inside [off, off + n), the last
 * one counting as whole when the range reaches the entry's end (as the segment
 * cache counts its segments, cache.c). */
static uint32_t granules(size_t len, uint64_t off, uint64_t n)
{
	uint64_t g = granule(len), lo = (off + g - 1) / g;
	uint64_t hi = off + n >= len ? 32 : (off + n) / g;
	uint32_t bits = 0;

	for (uint64_t i = lo; i < hi; i++)
		bits |= 1u << i;
	return bits & all_granules(len);
}

int cairn_zcache_delivered(struct cairn_zcache *z, uint64_t key, uint64_t off, uint64_t n)
{
	struct cairn_zentry *e;
	int done = 0;

	pthread_mutex_lock(&z->lock);
	e = find(z, key);
	if (e && e->state == ZC_READY && off < e->len && n) {
		e->delivered |= granules(e->len, off, n);
		done = all_delivered(e);
		if (done && !e->refs)
			drop(z, e);
	}
	pthread_mutex_unlock(&z->lock);
	return done;
}

void cairn_zcache_put(struct cairn_zcache *z, struct cairn_zentry *e)
{
	pthread_mutex_lock(&z->lock);
	release(z, e);
	pthread_mutex_unlock(&z->lock);
}

void cairn_zcache_get_stats(struct cairn_zcache *z, struct cairn_zcache_stats *out)
{
	pthread_mutex_lock(&z->lock);
	*out = z->st;
	out->resident_bytes = z->resident;
	out->blocks = mapped_blocks(z);
	out->budget_bytes = z->budget;
	pthread_mutex_unlock(&z->lock);
}
