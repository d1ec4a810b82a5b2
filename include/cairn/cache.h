/* SPDX-License-Identifier: MIT */
/*
 * Layer 2: segment cache over a bdev. The device is cut into fixed-size segments.
 * A read maps to segments; misses next to each other become one device request
 * (up to max_io). A sequential detector per stream starts asynchronous readahead
 * on worker threads with a growing window. Every segment is fetched at most once
 * at a time (single-flight), however many readers wait for it. Memory stays within
 * budget_bytes plus a small constant; evicted segments are freed to the OS.
 * A failed fetch is never cached: the next read tries the device again.
 *
 * Ownership: the cache owns `dev` from a successful cairn_cache_new() on, and
 * closes it in cairn_cache_free(). On failure the caller keeps `dev`.
 */
#ifndef CAIRN_CACHE_H
#define CAIRN_CACHE_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <cairn/types.h>

struct cairn_bdev;
struct cairn_cache;

struct cairn_cache_config {
	size_t segment_size;    /* bytes, power of two >= 512; 0 = default (see docs) */
	size_t budget_bytes;    /* 0 = default (64 MiB); CAIRN_CACHE_OFF = no caching:
				   each read goes to the device as it is asked (the MFS mode) */
	size_t max_io;          /* largest device request; 0 = default (1 MiB) */
	size_t readahead_max;   /* largest readahead window; 0 = default (4 MiB) */
	unsigned threads;       /* readahead workers; 0 = default (4) */
	size_t small_file;      /* a file (hint range) this small, or the rest of one, is
				   fetched whole on its first miss; 0 = default (256 KiB) */
};
#define CAIRN_CACHE_OFF ((size_t)-1)

/* A read can say which file extent it belongs to, so readahead stops at the
 * file's end and small files are fetched whole. lo == hi == 0 means "unknown". */
struct cairn_cache_hint {
	uint64_t lo, hi;        /* device byte range of the file's data */
};

struct cairn_cache_stats {
	uint64_t hits, misses;          /* segment lookups (pass-through: reads are misses) */
	uint64_t requests, bytes;       /* device requests issued by the cache */
	uint64_t readahead_bytes;       /* fetched by readahead */
	uint64_t readahead_used;        /* readahead segments later hit */
	uint64_t readahead_wasted;      /* readahead segments evicted unused */
	uint64_t evictions;
	uint64_t resident_bytes;        /* now */
	uint64_t errors;                /* failed device requests */
	uint64_t waits;                 /* hits that waited for an in-flight fetch */
	uint64_t dropped;               /* segments dropped once delivered */
	/* Over a verify device: the time reads spent on digest checks, summed over
	 * reads (hashing on their own thread, or waiting for another thread's
	 * check of a segment they need; not the checks of bytes fetched ahead
	 * that no read waited for), and the bytes hashed on readers' threads. */
	uint64_t verify_wait_ns, verify_read_bytes;
	uint64_t lent_bytes;            /* handed out in place (cairn_cache_read_pinned) */
};

int cairn_cache_new(struct cairn_bdev *dev, const struct cairn_cache_config *cfg,
		    struct cairn_cache **out);
void cairn_cache_free(struct cairn_cache *c);
/* Frees the cache but not its device, which it hands back to the caller (to
 * stack another layer under a new cache, once the first bytes told what it is). */
struct cairn_bdev *cairn_cache_release(struct cairn_cache *c);
/* Thread-safe. Returns bytes read (short only at the end of the device) or -errno. */
ssize_t cairn_cache_read(struct cairn_cache *c, void *buf, size_t len, uint64_t off,
			 const struct cairn_cache_hint *hint);
/* cairn_cache_read() of bytes already cached only: -EAGAIN (no device request,
 * nothing claimed, no readahead) when a segment of [off, off+len) is not there.
 * For a copy of what another read fetched (the rest of a segment pushed into a
 * kernel page cache), which is worth making only while it is cached. */
ssize_t cairn_cache_read_cached(struct cairn_cache *c, void *buf, size_t len, uint64_t off);
/* cairn_cache_read() that copies nothing: the segments of [off, off+len) are
 * fetched (and over a verify device checked) as a read's, one request for
 * neighbouring misses, and stay cached for the reads that follow. Returns the
 * bytes covered or -errno; 0 on a pass-through cache, which keeps nothing. */
ssize_t cairn_cache_fetch(struct cairn_cache *c, size_t len, uint64_t off,
			  const struct cairn_cache_hint *hint);
/* cairn_cache_read() without the copy: fetches (and over a verify device
 * checks) the segments of [off, off+len), holds them so neither eviction nor
 * the use-once drop frees their memory, calls fn with iovecs that point into
 * them, and lets them go (a segment delivered meanwhile is dropped then).
 * Returns fn's value or a fetch's -errno; CAIRN_CACHE_COPY, with fn not
 * called, when it cannot lend (a pass-through cache, len 0 or past the end,
 * or segments evicted again before they could be held): read with a copy. */
int cairn_cache_read_pinned(struct cairn_cache *c, size_t len, uint64_t off,
			    const struct cairn_cache_hint *hint, cairn_iov_fn fn, void *ctx);
#define CAIRN_CACHE_COPY 1
/* Start reading [off, off+len) in large background requests; returns at once. */
void cairn_cache_prefetch(struct cairn_cache *c, uint64_t off, uint64_t len);
/* Hand the cache bytes [off, off+len) of the device that the caller already
 * read (and checked): the whole segments among them become cached, as if
 * fetched, without a device request; segments already present are left alone.
 * For a layer that had to read the start of the device before the cache existed
 * (the verify device reads block 0 and the digest table). */
void cairn_cache_prime(struct cairn_cache *c, const void *buf, size_t len, uint64_t off);
/* A device byte range, for cairn_cache_prefetch_ranges(). */
struct cairn_range {
	uint64_t off, len;
};
/* Start reading n device ranges in the background, most wanted first (the order a
 * workload first read them): the segments they cover are merged into as few
 * requests as max_io allows, filling a gap between them while the request stays
 * at least half wanted (a gap costs bytes, a request a round trip), and the
 * requests are queued in the order of the first range
 * each holds, so several run at once on a device with channels. On a device
 * that tells what it holds locally (cairn_bdev_held: a disk cache), a request
 * holds only held segments or only others, gaps included.
 * Segments already cached or in flight are left alone. At most the budget is
 * claimed: more would evict its own beginning. Returns the bytes claimed, 0 when
 * there is nothing to do (or no memory: prefetching is advice). */
uint64_t cairn_cache_prefetch_ranges(struct cairn_cache *c, const struct cairn_range *r,
				     size_t n);
/* 1 when the device below holds every segment the n ranges cover on local
 * storage (cairn_bdev_held: a warm disk cache), so fetching them costs no round
 * trip; 0 when some are not held, n is 0, or the device cannot tell. */
int cairn_cache_held(struct cairn_cache *c, const struct cairn_range *r, size_t n);
/* The bytes [off, off+len) have been handed to a reader that keeps its own copy
 * (a kernel page cache). A segment all of whose bytes have been handed on so is
 * dropped at once (use-once) and its memory reused; readers holding it keep it
 * until they are done. Delivery is tracked in 32nds of a segment (pages, with
 * 128 KiB segments): a partly delivered 32nd does not count. */
void cairn_cache_delivered(struct cairn_cache *c, uint64_t off, uint64_t len);
/* Wait until queued readahead and prefetch work is done, then hold the cache to
 * its budget (fetches in flight may overshoot it by their slack until then). */
void cairn_cache_drain(struct cairn_cache *c);
/* Lowers the budget to bytes (a larger value, 0 or a pass-through cache: no
 * change), evicting down to it; waits for queued work first. For a user that
 * learns only after opening that it needs less (a mount that found no profile
 * to prefetch). Not while other threads read the cache. */
void cairn_cache_lower_budget(struct cairn_cache *c, size_t bytes);
void cairn_cache_get_stats(struct cairn_cache *c, struct cairn_cache_stats *out);
struct cairn_bdev *cairn_cache_bdev(struct cairn_cache *c); /* the device below; not owned */
size_t cairn_cache_segment_size(const struct cairn_cache *c);
/* The byte budget (cairn_cache_config.budget_bytes, as lowered since). */
size_t cairn_cache_budget(const struct cairn_cache *c);

/* Segment sizes cairn_cache_new() takes: a power of two in this range. */
#define CAIRN_CACHE_SEGMENT_MIN 512u
#define CAIRN_CACHE_SEGMENT_MAX (64u << 20)

#ifdef __cplusplus
}
#endif

#endif
