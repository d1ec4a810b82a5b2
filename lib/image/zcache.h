/* SPDX-License-Identifier: MIT */
/*
 * The decompressed-chunk cache of the image layer (not a public header).
 *
 * Compressed chunks are decompressed here, above the segment cache (which holds
 * stored bytes). Entries are keyed by chunk index and hold the chunk's ulen
 * decompressed bytes. A chunk is loaded at most once at a time (single-flight):
 * a burst of 4 KiB reads inside one chunk decompresses it once, the other
 * readers wait for the first. Entries nobody holds are evicted least recently
 * used first once the resident bytes pass the budget; a failed load is not
 * cached. An entry whose bytes have all been delivered (cairn_zcache_delivered:
 * the reader keeps them, as the kernel's page cache does) is dropped at once,
 * when nobody holds it, so a daemon whose data the kernel took stays lean. Thread-safe.
 *
 * Ownership: cairn_zcache_new() returns a cache the caller frees with
 * cairn_zcache_free(), after every entry it got was put back.
 */
#ifndef CAIRN_ZCACHE_H
#define CAIRN_ZCACHE_H

#include <stddef.h>
#include <stdint.h>

#define CAIRN_ZCACHE_DEFAULT (32u << 20)

struct cairn_zcache;
struct cairn_zentry;

/* Fills buf with the len bytes of chunk key; 0 or a negative errno. */
typedef int (*cairn_zcache_load_fn)(void *ctx, uint64_t key, void *buf, size_t len);

struct cairn_zcache_stats {
	uint64_t hits, misses, waits, evictions;
	uint64_t ahead;            /* loads made by cairn_zcache_prefetch() */
	uint64_t dropped;          /* entries dropped once wholly delivered */
	uint64_t loaded_bytes;     /* decompressed by loads */
	uint64_t resident_bytes, budget_bytes;
	uint64_t blocks;           /* 2 MiB blocks of slots mapped now */
};

/* budget 0: CAIRN_ZCACHE_DEFAULT. */
int cairn_zcache_new(size_t budget, struct cairn_zcache **out);
void cairn_zcache_free(struct cairn_zcache *z);
void cairn_zcache_set_budget(struct cairn_zcache *z, size_t budget);
/* Entries of up to slot bytes (a power of two, 16 KiB to 1 MiB) get their memory
 * from 2 MiB blocks asked for huge pages (zcache.c says why); 0 or any other
 * value, or once a block is mapped: ignored, entries use malloc. */
void cairn_zcache_set_slot(struct cairn_zcache *z, size_t slot);
/* The entry of chunk key, holding len bytes, loaded through fn on a miss (fn
 * NULL: -EAGAIN on a miss, nothing loaded). On success *data points at its
 * bytes until cairn_zcache_put(). A cached entry of another length is
 * corruption (the caller validated len against the chunk). */
int cairn_zcache_get(struct cairn_zcache *z, uint64_t key, size_t len, cairn_zcache_load_fn fn,
		     void *ctx, struct cairn_zentry **out, const void **data);
void cairn_zcache_put(struct cairn_zcache *z, struct cairn_zentry *e);
/* Whether chunk key is cached or being loaded, without waiting, counting or
 * touching its place in the LRU (a reader planning its device requests). */
int cairn_zcache_present(struct cairn_zcache *z, uint64_t key);
/* Read-ahead: loads chunk key through fn unless it is cached or being loaded
 * already, or was dropped once wholly delivered (then returns at once: the
 * reader has it); the entry is left unheld in the cache. */
int cairn_zcache_prefetch(struct cairn_zcache *z, uint64_t key, size_t len,
			  cairn_zcache_load_fn fn, void *ctx);
/* Bytes [off, off + n) of chunk key's content were handed to a reader that keeps
 * them. Counted in 32nds of the entry (a 32nd wholly inside, or reaching the
 * entry's end); once all are, the entry is dropped as soon as nobody holds it.
 * A chunk not cached is left alone. Returns 1 if the entry is now wholly
 * delivered. */
int cairn_zcache_delivered(struct cairn_zcache *z, uint64_t key, uint64_t off, uint64_t n);
void cairn_zcache_get_stats(struct cairn_zcache *z, struct cairn_zcache_stats *out);

#endif
