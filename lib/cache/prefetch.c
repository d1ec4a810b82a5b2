/* SPDX-License-Identifier: MIT */
/*
 * Prefetching a list of device ranges (a learned profile, -o prefetch=TRACE).
 *
 * The ranges come in the order a workload first read them, which on an image not
 * laid out for that workload jumps around the device. Fetched in that order,
 * range by range, they would cost a request each. So the segments they cover are
 * sorted by device offset and cut into runs of at most max_io, a run also taking
 * the gaps between its pieces while at least half of it stays wanted: a request
 * costs a round trip whatever it holds, but on a link with a bandwidth (a remote
 * store) every byte of a gap costs too. Measured on the segments a profile wants
 * (bench/profile_gap.sh): any gap within max_io, Java Hello's profile (234
 * segments) took 38 requests and 32.0 MiB, Python's (83) 16 and 12.5 MiB, and
 * Python at 20 ms, 4 channels and 100 MB/s ran 1.50x the ordered image; gaps no
 * larger than the wanted part of the run, 39 requests and 30.6 MiB, 18 and 11.5
 * MiB (docs/bench/profile.md has the times). The runs are then queued in the
 * order of the most wanted range each holds, so the workers fetch what the
 * program needs first, several at a time where the device has channels.
 *
 * Over a disk cache (a device that says what it holds, cairn_bdev_held) a run
 * is all held segments or all others, gaps included: a run that mixed them
 * would make the held ones wait for a round trip to the server, and the disk
 * cache would send the server one request per stretch it lacks, one after the
 * other. A warm disk cache with a learnt profile asked the server for 2 to 7
 * gap segments this way (tests/mount/remote_profile.sh, bench/remote_profile.sh).
 *
 * A device that takes a vectored read as one request (cairn_bdev_readv_native:
 * http, whose readv is one multi-range GET) needs no runs: the wanted segments
 * go out in the order the workload first needed them, max_io of them per vector, several vectors in flight on the workers, and no gap is fetched. On
 * a shared link that order is what matters: a run carries segments needed late
 * ahead of ones needed early (bench/prefetch_model.py put runs of any shape at
 * >= 1.24x the ordered image for Python at 20 ms, 4 channels, 100 MB/s, and
 * segments in wanted order at ~1.0x; docs/bench/vecread.md has the measures).
 * Over a disk cache (whose readv asks the server once for the chunks it
 * lacks) the held segments go in vectors of their own, queued first.
 */
#include <stdlib.h>
#include "cache/cache_internal.h"

struct want {
	uint64_t idx;   /* segment */
	size_t rank;    /* index of the first range that needs it */
	int held;       /* held by the device below (a disk cache); 0 when it cannot tell */
};

struct run {
	uint64_t lo, hi; /* segments, inclusive */
	uint64_t wanted; /* segments of it a range needs (the rest fills gaps) */
	size_t rank;
	int held;
};

static int by_idx(const void *a, const void *b)
{
	const struct want *x = a, *y = b;

	if (x->idx != y->idx)
		return x->idx < y->idx ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int by_rank(const void *a, const void *b)
{
	const struct want *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int run_by_rank(const void *a, const void *b)
{
	const struct run *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The segments the ranges cover, each once with its best rank, at most `keep` of
 * them (the best ranked), sorted by device offset. Returns how many; *out is
 * malloc'd (NULL when none). */
static size_t collect_wants(struct cairn_cache *c, const struct cairn_range *r, size_t n,
			    size_t keep, struct want **out)
{
	size_t cap = 4 * keep + n, got = 0, u = 0;
	struct want *w = malloc(cap * sizeof(*w));

	*out = NULL;
	if (!w)
		return 0;
	/* Duplicates count against the cap too, which bounds the work whatever the
	 * list holds; ranges come best first, so what is cut is the least wanted.
	 * Room for one entry a range on top: a profile's ranges are mostly a few
	 * pages each, many in one segment, and with 4 * keep alone the last of
	 * Java Hello's 2458 ranges were cut, their segments missed by every run
	 * (1951 of libjvm.so, say: a demand miss each). */
	for (size_t i = 0; i < n && got < cap; i++) {
		uint64_t off = r[i].off, len = r[i].len;

		if (off >= c->dev_size || !len)
			continue;
		if (len > c->dev_size - off)
			len = c->dev_size - off;
		for (uint64_t idx = off >> c->seg_shift;
		     idx <= (off + len - 1) >> c->seg_shift && got < cap; idx++)
			w[got++] = (struct want){ idx, i, 0 };
	}
	if (!got) {
		free(w);
		return 0;
	}
	qsort(w, got, sizeof(*w), by_idx);
	for (size_t i = 0; i < got; i++)
		if (!u || w[u - 1].idx != w[i].idx)
			w[u++] = w[i];
	if (u > keep) {
		qsort(w, u, sizeof(*w), by_rank);
		u = keep;
		qsort(w, u, sizeof(*w), by_idx);
	}
	*out = w;
	return u;
}

/* Segment idx held by the device below: 1, 0, or negative when it cannot tell. */
static int seg_held(struct cairn_cache *c, uint64_t idx)
{
	return cairn_bdev_held(c->dev, idx << c->seg_shift, c->seg_size);
}

/* Marks the wants the device holds. 0 when it cannot tell (none marked). */
static int mark_held(struct cairn_cache *c, struct want *w, size_t n)
{
	int h = seg_held(c, w[0].idx);

	if (h < 0)
		return 0;
	w[0].held = h;
	for (size_t i = 1; i < n; i++)
		w[i].held = seg_held(c, w[i].idx) == 1;
	return 1;
}

int cairn_cache_held(struct cairn_cache *c, const struct cairn_range *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t lo, hi;

		if (r[i].off >= c->dev_size || !r[i].len)
			continue;
		/* Whole segments: a fetch reads the segments around a range. */
		lo = r[i].off & ~(uint64_t)(c->seg_size - 1);
		hi = r[i].len > c->dev_size - r[i].off ? c->dev_size : r[i].off + r[i].len;
		hi = (hi + c->seg_size - 1) & ~(uint64_t)(c->seg_size - 1);
		if (cairn_bdev_held(c->dev, lo, hi - lo) != 1)
			return 0;
	}
	return n > 0;
}

/* Whether the gap segments [lo, hi] (none when lo > hi) may join a run of the
 * given kind: all held for a held run, none held for the others. */
static int gap_fits(struct cairn_cache *c, uint64_t lo, uint64_t hi, int held)
{
	if (held)
		return lo > hi || cairn_bdev_held(c->dev, lo << c->seg_shift,
						  (hi - lo + 1) << c->seg_shift) == 1;
	for (uint64_t idx = lo; idx <= hi; idx++)
		if (seg_held(c, idx) == 1)
			return 0;
	return 1;
}

/* Cuts sorted wants into runs of at most max_io, gaps filled while they are no
 * larger than the wanted part of the run so far; where the device tells what
 * it holds (`kinds`), a run holds only segments of one kind. Returns the number
 * of runs written to r (room for n). */
static size_t make_runs(struct cairn_cache *c, const struct want *w, size_t n, int kinds,
			struct run *r)
{
	uint64_t per = c->max_io >> c->seg_shift;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		struct run *last = k ? &r[k - 1] : NULL;

		if (last && w[i].idx - last->lo < per && w[i].idx - last->hi - 1 <= last->wanted &&
		    (!kinds || (w[i].held == last->held &&
				gap_fits(c, last->hi + 1, w[i].idx - 1, last->held)))) {
			last->hi = w[i].idx;
			last->wanted++;
			if (w[i].rank < last->rank)
				last->rank = w[i].rank;
			continue;
		}
		r[k++] = (struct run){ w[i].idx, w[i].idx, 1, w[i].rank, w[i].held };
	}
	return k;
}

/* A vector's segments are published once all of them have arrived, so a
 * larger one makes the first wanted page wait for more bytes on the link; but
 * each vector also pays a round trip. Vectors hold at most max_io, as runs do:
 * with remote images' 4 MiB, Java Hello's profile over http (20 ms, 4
 * connections, one 100 MB/s link; bench/profile_gap.sh -u) took 30 requests and
 * 485 ms, against 49 and 493 ms with 1 MiB vectors; Python 6 requests and
 * 189 ms against 14 and 179 ms (3 runs each, load 7). */

/* Wanted segments in rank order, claimed and queued as vectors of up to max_io
 * bytes: those the device holds (a disk cache) first and
 * apart, so they never wait for a round trip to the server, then the others. Takes w (sorted by
 * offset, held marked); returns the bytes claimed. */
static uint64_t queue_vectors(struct cairn_cache *c, struct want *w, size_t n)
{
	size_t per = c->max_io >> c->seg_shift;
	uint64_t claimed = 0;
	struct seg_vec v;

	if (!per)
		per = 1; /* segments larger than max_io */
	qsort(w, n, sizeof(*w), by_rank);
	seg_vec_init(&v);
	for (int held = 1; held >= 0; held--) {
		for (size_t i = 0; i < n; i++) {
			/* Claimed now, so a read of one not fetched yet waits for
			 * it rather than send a request of its own. */
			if (w[i].held == held)
				claim_range(c, w[i].idx, w[i].idx, &v);
			if (v.n && (v.n == per || i + 1 == n)) {
				claimed += (uint64_t)v.n << c->seg_shift;
				queue_vec(c, v.v, v.n);
				v.n = 0;
			}
		}
	}
	seg_vec_free(&v);
	free(w);
	return claimed;
}

/* Whether to fetch the wants (sorted by offset, each once, held marked when
 * kinds) as vectors. Only when they are scattered (one stretch, a metadata
 * region, is runs either way) and some must come from the server (a warm disk
 * cache has it all: runs cost it nothing), and only then is the device asked
 * whether it takes vectors (http may ask its server, a request). */
static int want_vectors(struct cairn_cache *c, const struct want *w, size_t n, int kinds)
{
	size_t lacking = 0;

	for (size_t i = 0; kinds && i < n; i++)
		lacking += !w[i].held;
	return w[n - 1].idx - w[0].idx + 1 > n && (!kinds || lacking) &&
	       cairn_bdev_readv_native(fetch_dev(c));
}

uint64_t cairn_cache_prefetch_ranges(struct cairn_cache *c, const struct cairn_range *r,
				     size_t n)
{
	size_t keep = c->budget >> c->seg_shift, nw, nr;
	int kinds;
	struct want *w;
	struct run *runs;
	uint64_t claimed = 0;

	if (c->passthrough || !n || !keep)
		return 0;
	nw = collect_wants(c, r, n, keep, &w);
	if (!nw)
		return 0;
	kinds = mark_held(c, w, nw);
	if (want_vectors(c, w, nw, kinds))
		return queue_vectors(c, w, nw);
	runs = malloc(nw * sizeof(*runs));
	if (!runs) {
		free(w);
		return 0;
	}
	nr = make_runs(c, w, nw, kinds, runs);
	free(w);
	qsort(runs, nr, sizeof(*runs), run_by_rank);
	for (size_t i = 0; i < nr; i++) {
		struct seg_vec v;

		/* Claimed now, so a read of a part not fetched yet waits for it
		 * rather than cut the run in pieces with a request of its own. */
		seg_vec_init(&v);
		claim_range(c, runs[i].lo, runs[i].hi, &v);
		claimed += (uint64_t)v.n << c->seg_shift;
		queue_claims(c, v.v, v.n);
		seg_vec_free(&v);
	}
	free(runs);
	return claimed;
}
