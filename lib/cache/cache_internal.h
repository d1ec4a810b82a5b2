/* SPDX-License-Identifier: MIT */
/*
 * Segment cache internals, shared by the files of lib/cache/:
 *   cache.c      public API, the read path, fetching runs from the device
 *   segtable.c   sharded hash of segments, CLOCK eviction, segment memory
 *   readahead.c  per-stream sequential detector, worker threads and jobs
 *   arena.c      segment memory: fixed slots in one reused arena, bounce buffers
 *
 * Locking (always in this order, never the reverse):
 *   lru_lock -> shard lock.   The job queue, stream and slot locks are leaves.
 * A segment's state, refs, referenced and from_ra are guarded by its shard lock.
 * Its data is immutable once fetched (READY or UNCHECKED), and lives until its
 * last reference drops.
 */
#ifndef CAIRN_CACHE_INTERNAL_H
#define CAIRN_CACHE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <cairn/bdev.h>
#include "util/bufpool.h"
#include <cairn/cache.h>

#define CACHE_SHARDS 64u          /* power of two */
#define CACHE_STREAMS 16u         /* sequential streams tracked at once */
#define CACHE_BOUNCE_POOL 8u      /* bounce buffers kept for reuse (1 resident) */
#define SEG_NO_SLOT UINT32_MAX

/* SEG_GONE: dropped once delivered (cairn_cache_delivered), its data freed. It
 * stays in the table, a few bytes, so that readahead and prefetch do not fetch
 * again what the reader already keeps; a read of it is a miss like any other.
 * SEG_UNCHECKED (over a verify device only): speculative bytes fetched but not
 * yet checked against their digests. They are never served: the first reader
 * that needs them takes them (back to SEG_FETCHING, so others wait), checks
 * them on its own thread, and publishes them READY or fails them; a worker
 * checks them meanwhile (check_spare) unless a reader got there first. Such a
 * segment is on the CLOCK ring (evictable like a READY one); while taken it
 * is pinned there. */
enum seg_state { SEG_FETCHING, SEG_READY, SEG_FAILED, SEG_GONE, SEG_UNCHECKED };

struct seg {
	struct seg *hnext;          /* hash chain (shard lock) */
	struct seg *lprev, *lnext;  /* CLOCK ring of READY segments (lru_lock) */
	uint64_t idx;               /* segment number: device offset / segment size */
	unsigned char *data;
	size_t alloc;               /* bytes of memory charged to the budget */
	uint32_t len;               /* valid bytes (short only at the device end) */
	uint32_t slot;              /* arena slot, or SEG_NO_SLOT (malloc'd data) */
	uint32_t delivered;         /* which 32nds of it a reader took to keep (bits) */
	int refs;                   /* hash membership + readers holding it */
	int err;                    /* SEG_FAILED: the negative errno */
	uint64_t check_t0;          /* monotonic ns its digest check began (0: not yet);
				       set by the checker, which holds it FETCHING */
	uint8_t state;
	uint8_t referenced;         /* CLOCK second-chance bit */
	uint8_t from_ra;            /* speculative fetch not yet read by anyone */
	uint8_t in_lru;
};

struct shard {
	pthread_mutex_t lock;
	pthread_cond_t cond;        /* a segment of this shard left SEG_FETCHING */
	struct seg **buckets;
	size_t nbuckets;            /* power of two */
	size_t count;
	/* counters kept under the shard lock so hits touch no shared cache line */
	uint64_t hits, misses, waits, ra_used;
} __attribute__((aligned(64)));

struct stream {
	uint64_t lo, hi;            /* the hint range (0,0 = none) */
	uint64_t last_off, next;    /* start and end of the last read seen */
	uint64_t ra_end;            /* readahead has been issued up to here */
	uint64_t window;            /* next readahead size, bytes */
	uint64_t used;              /* tick of last use, for replacement */
};

enum { JOB_FETCH, JOB_CHECK, JOB_SPARE, JOB_VEC };

struct ra_job {
	struct ra_job *next;
	int kind;                   /* JOB_FETCH: fetch_run; JOB_VEC: fetch_vec; on fetched,
				       unchecked, held segments: JOB_CHECK check_spare,
				       JOB_SPARE spare_check */
	uint64_t own_lo, own_hi;    /* a reader's own segments (fetch_run); lo > hi: none */
	size_t n;                   /* claimed segments, in order (JOB_FETCH: consecutive) */
	struct seg *segs[];
};

struct cairn_cache {
	struct cairn_bdev *dev;
	uint64_t dev_size;
	size_t seg_size;
	unsigned seg_shift;
	size_t budget;
	size_t max_io;              /* a multiple of seg_size */
	size_t ra_unit;             /* streams end on these boundaries: max_io, at most 1 MiB */
	size_t ra_max;
	size_t small_file;
	int passthrough;            /* budget CAIRN_CACHE_OFF */
	/* dev, when it is a verify device whose granule divides seg_size: fetches
	 * then read from below it and check each segment apart (check_segs): the
	 * reader's own at once, speculative ones when first needed (SEG_UNCHECKED). */
	struct cairn_bdev *verify;

	struct shard *shards;

	pthread_mutex_t slot_lock;  /* guards the slot free list and the bounce pool */
	unsigned char *arena;       /* nslots * seg_size bytes, 2 MiB aligned */
	void *arena_map;
	size_t arena_map_len;
	size_t nslots, nfree;
	uint32_t *free_slots;       /* a stack of free slot numbers */
	uint8_t *slot_warm;         /* per slot: its pages are resident */
	size_t nwarm_free, warm_max;/* free slots still resident, and the most kept so */
	size_t warm_idle;           /* ... and kept once idle (arena_trim) */
	_Atomic int warm_excess;    /* nwarm_free went past warm_idle: trim when idle */
	struct util_bufpool bounce; /* max_io buffers of runs whose slots are apart */

	pthread_mutex_t lru_lock;
	struct seg *lru_head;       /* the CLOCK hand points here */

	_Atomic uint64_t resident, requests, bytes, errors, evictions;
	_Atomic uint64_t ra_bytes, ra_wasted, dropped;
	_Atomic uint64_t pt_reads;  /* pass-through mode: reads (all misses) */
	/* c->verify: what hashing cost the reads (cairn_cache_stats) */
	_Atomic uint64_t verify_wait_ns, verify_read_bytes;
	_Atomic uint64_t lent_bytes;  /* cairn_cache_read_pinned */

	pthread_mutex_t stream_lock;
	struct stream streams[CACHE_STREAMS];
	uint64_t stream_tick;

	pthread_mutex_t job_lock;
	pthread_cond_t job_cond;    /* work queued, or stop */
	pthread_cond_t idle_cond;   /* a queue is empty and none of its jobs running */
	struct ra_job *job_head, *job_tail;
	unsigned jobs_running;
	int stopping;
	unsigned nthreads;
	pthread_t *threads;
	/* Background checks of speculative segments (c->verify only): their own
	 * queue (under job_lock) and threads, which never hold a segment a
	 * reader could wait for (spare_check). */
	struct ra_job *spare_head, *spare_tail;
	pthread_cond_t spare_cond;  /* a spare check queued, or stop */
	int spare_stopping;
	unsigned spare_running;     /* spare checks being run (by any thread) */
	unsigned nspare;
	pthread_t *spare_threads;
};

/* A growable list of segments (claims or waits of one read). */
struct seg_vec {
	struct seg **v;
	size_t n, cap;
	struct seg *inline_v[16];
};
void seg_vec_init(struct seg_vec *sv);
int seg_vec_push(struct seg_vec *sv, struct seg *s);
void seg_vec_free(struct seg_vec *sv);

/* segtable.c */
int segtable_init(struct cairn_cache *c);
void segtable_destroy(struct cairn_cache *c);
struct shard *seg_shard(struct cairn_cache *c, uint64_t idx);
struct seg *seg_lookup(struct shard *sh, uint64_t idx);
/* Insert a new SEG_FETCHING segment (shard locked, idx absent); NULL on ENOMEM. */
struct seg *seg_insert_fetching(struct cairn_cache *c, struct shard *sh, uint64_t idx, int refs);
/* Unlink from the hash (shard locked) and release its budget charge. */
void seg_unhash(struct cairn_cache *c, struct shard *sh, struct seg *s);
/* Drop one reference; frees the segment when it was the last. Shard locked;
 * returns the segment when the caller must free it after unlocking. */
struct seg *seg_unref_locked(struct seg *s);
void seg_destroy(struct cairn_cache *c, struct seg *s);
void seg_release(struct cairn_cache *c, struct seg *s); /* locks, unrefs, frees */
/* Put segments on the CLOCK ring; one already on it (a taken unchecked one) stays put. */
void lru_add(struct cairn_cache *c, struct seg **s, size_t n);
/* Take s off the ring if it is on it (lru_lock held). */
void lru_remove_locked(struct cairn_cache *c, struct seg *s);
/* The delivered bits of a segment all of whose bytes were delivered: one bit per
 * 32nd of the segment size, up to its valid length. */
static inline uint32_t seg_all_delivered(const struct cairn_cache *c, const struct seg *s)
{
	size_t g = c->seg_size / 32, n = (s->len + g - 1) / g;

	return n >= 32 ? UINT32_MAX : (uint32_t)((1u << n) - 1);
}
/* Drop segment idx's data if it is READY, on the ring and fully delivered. */
void seg_drop_delivered(struct cairn_cache *c, uint64_t idx);
/* Shard locked: s is READY, wholly delivered and held by the table alone, so
 * its data can go (it was delivered while a reader, a check or its publisher
 * held it, and whoever lets go last drops it). */
int seg_drop_due(const struct cairn_cache *c, const struct seg *s);
/* A read needs a SEG_GONE segment again: removes it from the table (shard
 * locked) so it can be fetched anew. 1 when s was gone (and is freed), else 0. */
int seg_forget_gone(struct cairn_cache *c, struct shard *sh, struct seg *s);
/* Evict until `need` more bytes fit in the budget. */
void evict_to_budget(struct cairn_cache *c, size_t need);

/* arena.c */
int arena_init(struct cairn_cache *c);
void arena_destroy(struct cairn_cache *c);
/* Memory for a run of n segments; fills s[i]->data, and *tmp with a bounce
 * buffer of max_io bytes when n > 1 (give it back to c->bounce). */
int seg_alloc_run(struct cairn_cache *c, struct seg **s, size_t n, unsigned char **tmp);
void seg_free_data(struct cairn_cache *c, struct seg *s);
/* Give back the resident free slots beyond the idle allowance (slot_lock not held). */
void arena_trim(struct cairn_cache *c);

/* cache.c */
/* Read a run of consecutive claimed segments in one device request and publish
 * them. Segments outside [own_lo, own_hi] count as speculative (readahead).
 * hash_ns: a reader's fetch (NULL on a worker), which adds the time it hashed. */
int fetch_run(struct cairn_cache *c, struct seg **s, size_t n, uint64_t own_lo, uint64_t own_hi,
	      uint64_t *hash_ns);
/* Read claimed segments, anywhere on the device and in the order given, in one
 * vectored read (one entry each) and publish them as speculative. For a device
 * that takes a vector as one request (cairn_bdev_readv_native(fetch_dev(c))). */
int fetch_vec(struct cairn_cache *c, struct seg **s, size_t n);
/* The device fetches read: c->dev, or the one below it when c->verify. */
struct cairn_bdev *fetch_dev(struct cairn_cache *c);
/* Check those of s (UNCHECKED when published, each holding the reference
 * publish_run added) that are still unchecked and in the table, unless a
 * reader takes them first, and drop those references. */
void check_spare(struct cairn_cache *c, struct seg **s, size_t n);
/* The same without taking them: hashes each (a reader that needs it meanwhile
 * takes and checks it itself, never waiting for this) and makes it READY if it
 * is still unchecked then; bad ones stay unchecked, for the read that needs
 * them to fail. */
void spare_check(struct cairn_cache *c, struct seg **s, size_t n);
/* Mark claimed segments failed (waiters get err) and drop them from the table
 * (and from the CLOCK ring: a taken SEG_UNCHECKED one is on it). */
void fail_claims(struct cairn_cache *c, struct seg **s, size_t n, int err);
/* Claim the absent segments in [lo_idx, hi_idx] (inclusive) as FETCHING, refs 1. */
size_t claim_range(struct cairn_cache *c, uint64_t lo_idx, uint64_t hi_idx, struct seg_vec *out);

/* readahead.c */
int workers_start(struct cairn_cache *c);
void workers_stop(struct cairn_cache *c);
/* Queue claimed segments (consecutive runs are split at max_io); takes the claims. */
void queue_claims(struct cairn_cache *c, struct seg **s, size_t n);
/* Queue claimed segments, in any order, as one vectored fetch (fetch_vec);
 * takes the claims. */
void queue_vec(struct cairn_cache *c, struct seg **s, size_t n);
/* Queue one run of a waiting reader's fetch ahead of all readahead, so it goes
 * out beside the run the reader fetches itself; takes the claims (fetches them
 * here when no job can be made). */
void queue_demand(struct cairn_cache *c, struct seg **s, size_t n, uint64_t own_lo,
		  uint64_t own_hi);
/* Queue check_spare of a reader's further segments s, from the last one back
 * (the reader goes on from the first), on a worker, ahead of queued fetches
 * (hashing is CPU, fetches wait on the device); takes the references. */
void queue_checks(struct cairn_cache *c, struct seg **s, size_t n);
/* Queue spare_check of speculative segments (that no reader waits for) on the
 * spare threads (without any, at the front of the workers' queue); takes the
 * references. */
void queue_spare(struct cairn_cache *c, struct seg **s, size_t n);
void workers_drain(struct cairn_cache *c);
struct ra_plan {
	uint64_t sync_hi;           /* a missing read may extend its own request to here */
	uint64_t ra_lo, ra_hi;      /* start readahead of this device range (empty: none) */
};
void stream_consult(struct cairn_cache *c, uint64_t off, size_t len,
		    const struct cairn_cache_hint *hint, struct ra_plan *plan);

static inline uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

#endif
