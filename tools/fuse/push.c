/* SPDX-License-Identifier: MIT */
/*
 * -o prefetch, second half: page-cache push. The prefetch reads the hot ranges
 * (the hot prefix of an ordered image, or a loaded profile) into the daemon's
 * cache at mount; without more, each page the program then faults in still
 * costs it a FUSE round trip (hundreds for Java Hello). So when the kernel
 * learns of an image file with hot ranges (lookup, readdirplus), they join a
 * queue that one thread works through in the order the traced program first
 * read them (cairn_image_hot_ranges' `pos`: the device offset in a hot prefix,
 * the profile position otherwise), storing each range straight into the
 * kernel's page cache (FUSE notify_store). Across all files this runs ahead of
 * the program in the order it will fault. A page the program asks for first is
 * simply read as usual, and its whole pages then leave the queue (push_served):
 * storing them again would write the same bytes, and a zstd ordered Java start
 * on a network disk read a quarter of its hot prefix before the push got there.
 *
 * Safety: the image never changes, so any stored page is right. Node ids are
 * addresses and get reused once freed, so each queued range holds a lookup
 * reference (cairn_ns_hold) until it is pushed: its id cannot come to name
 * another file.
 * If the kernel has dropped the inode meanwhile, notify_store says -ENOENT and the
 * push of that file ends.
 *
 * A file is queued once, but again after the kernel forgets its inode
 * (push_forgotten): an evicted inode's pages went with it (memory pressure,
 * drop_caches), and the lean caches dropped theirs once pushed, so without a
 * second push the next run reads the hot data back through the mount's small
 * read-ahead, one segment per request: 443 ms for a Java Hello whose cold start
 * took 64 ms (docs/bench/zerocopy.md).
 *
 * Compressed images: a read of part of a compressed chunk decompresses all of
 * it, so the rest of the chunk is queued too (push_span), after hot ranges,
 * and marked delivered once stored (the chunk cache then drops it). It is
 * pushed only while it is still decompressed (CAIRN_READ_CACHED): once the
 * kernel has read all of it (the other end of a sequential window), the chunk
 * cache has dropped it, and loading it again would cost more than it saves. A random
 * 4 KiB reader then costs one decompression per chunk, not one per page: the
 * kernel serves the chunk's other pages from its cache. It is queued from the
 * read handler but stored by this thread: a store waits for the pages it
 * writes to be unlocked, and a page in a read the kernel has sent is locked
 * until some handler replies to it, which a handler that stored would never do
 * (with -s, or with every worker storing).
 *
 * Uncompressed images: a random reader's 4 KiB read fetches and hashes the
 * whole cache segment around it (128 KiB by default), so the rest of that
 * segment is queued the same way (push_span) and pushed while the segment
 * cache still has it (CAIRN_READ_CACHED: never fetched again for a push),
 * then marked delivered, which drops the segment. Only for random readers
 * (fuse_ops.c, partial_chunks): a sequential reader's next window is on its
 * way. The SPANS_MAX bound keeps the queue, and what it makes the caches
 * hold, small under any number of random readers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "daemon.h"

#define PUSH_CHUNK (1u << 20) /* the most one notify_store message carries */
#define PAGE 4096u
#define PUSH_IDLE_SECS 1 /* idle this long, the push gives its buffer's pages back */

struct push_range {
	uint64_t pos, file_off, len, node; /* pos: place in the profile's order */
	unsigned tries;           /* notify_store said the kernel has no such inode */
	int deliver;              /* a chunk's or segment's rest: pushed only while cached */
	size_t at;                /* queued (heap_push made it): where it is in the heap */
};

/* A node's queued hot ranges, sorted by file_off, so push_served finds those a
 * READ meets by binary search (n 0: none now; the slot is reused, or dropped
 * when the table grows). Chunk and segment rests are not cut: not listed. */
struct node_ranges {
	uint64_t node;            /* 0: free slot */
	struct push_range **v;
	size_t n, cap;
	uint64_t max_len;         /* the longest listed so far: how far back one may reach */
	int overlap;              /* two listed ranges overlapped (a hand-made profile) */
};

/* Chunk (or segment) pushes queued or running at most; the reads that come in
 * for a chunk's other pages before its push is done do not queue it again. */
#define SPANS_MAX 64

struct push {
	struct daemon *cf;
	pthread_mutex_t lock;     /* guards the fields below, but tid and buf */
	pthread_cond_t cond;
	struct push_range **heap; /* min-heap on pos: first read first */
	size_t n, cap;
	struct node_ranges *nodes; /* open-addressed on node: every queued range */
	size_t nodes_mask, nodes_used;
	uint64_t *seen;           /* open-addressed set of image inodes queued once */
	size_t seen_mask, seen_count;
	int stop;
	int joined;               /* the thread has ended (push_halt) */
	pthread_t tid;
	char *buf;                /* PUSH_CHUNK bytes, mmap'd, the thread's alone */
	int buf_warm;             /* buf written since its pages went back (the thread's) */
	struct push_stats st;     /* counters (under lock) */
	uint64_t spans_on[SPANS_MAX][2]; /* (node, first byte) of the chunk pushes on */
	unsigned spans_n;
};

static size_t hash_ino(uint64_t k)
{
	k ^= k >> 31;
	k *= 0x9e3779b97f4a7c15ULL;
	return (size_t)(k ^ (k >> 29));
}

/* Adds ino (never 0) to the seen set; 1 if it was new, 0 if there, -ENOMEM. */
static int seen_add(struct push *p, uint64_t ino)
{
	size_t i;

	if (2 * (p->seen_count + 1) > p->seen_mask + 1) {
		size_t nmask = p->seen_mask ? 2 * p->seen_mask + 1 : 255;
		uint64_t *n = calloc(nmask + 1, sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (size_t j = 0; p->seen && j <= p->seen_mask; j++) {
			if (!p->seen[j])
				continue;
			for (i = hash_ino(p->seen[j]) & nmask; n[i]; i = (i + 1) & nmask)
				;
			n[i] = p->seen[j];
		}
		free(p->seen);
		p->seen = n;
		p->seen_mask = nmask;
	}
	for (i = hash_ino(ino) & p->seen_mask; p->seen[i]; i = (i + 1) & p->seen_mask)
		if (p->seen[i] == ino)
			return 0;
	p->seen[i] = ino;
	p->seen_count++;
	return 1;
}

/* Takes ino out of the seen set (backward-shift deletion, so that the probe
 * runs of the others stay unbroken); nothing if it is not there. */
static void seen_del(struct push *p, uint64_t ino)
{
	size_t mask = p->seen_mask, i, j;

	if (!p->seen)
		return;
	for (i = hash_ino(ino) & mask; p->seen[i] && p->seen[i] != ino; i = (i + 1) & mask)
		;
	if (!p->seen[i])
		return;
	for (j = (i + 1) & mask; p->seen[j]; j = (j + 1) & mask) {
		size_t home = hash_ino(p->seen[j]) & mask;

		/* seen[j] may fill the gap at i unless its home lies in (i, j]. */
		if (i < j ? (home <= i || home > j) : (home <= i && home > j)) {
			p->seen[i] = p->seen[j];
			i = j;
		}
	}
	p->seen[i] = 0;
	p->seen_count--;
}

/* ---- the queue: a binary min-heap on pos (lock held) ----
 *
 * The ranges are allocated one by one and the heap holds pointers to them;
 * each also hangs in its node's list (p->nodes), so a READ's push_served
 * visits only that file's queued ranges: it scanned the whole heap, thousands
 * of ranges for a Java start, under the lock the pushing thread takes. */

/* Lock held: the slot of node in p->nodes at i, or where it would go. */
static size_t node_probe(const struct push *p, uint64_t node)
{
	size_t i = hash_ino(node) & p->nodes_mask;

	while (p->nodes[i].node && p->nodes[i].node != node)
		i = (i + 1) & p->nodes_mask;
	return i;
}

/* Doubles p->nodes, dropping the slots of nodes with nothing queued. */
static int nodes_grow(struct push *p)
{
	size_t nmask = p->nodes_mask ? 2 * p->nodes_mask + 1 : 63;
	struct node_ranges *old = p->nodes;
	size_t omask = p->nodes_mask;

	p->nodes = calloc(nmask + 1, sizeof(*p->nodes));
	if (!p->nodes) {
		p->nodes = old;
		return -ENOMEM;
	}
	p->nodes_mask = nmask;
	p->nodes_used = 0;
	for (size_t j = 0; old && j <= omask; j++) {
		if (!old[j].n) { /* nothing queued: dropped */
			free(old[j].v);
			continue;
		}
		p->nodes[node_probe(p, old[j].node)] = old[j];
		p->nodes_used++;
	}
	free(old);
	return 0;
}

/* The slot of node in p->nodes, or NULL when absent (create: made, NULL only
 * without memory). A node that is there never moves but when one is made:
 * push_served holds a slot while it queues a split's tail of the same node. */
static struct node_ranges *node_slot(struct push *p, uint64_t node, int create)
{
	size_t i;

	if (p->nodes) {
		i = node_probe(p, node);
		if (p->nodes[i].node || !create)
			return p->nodes[i].node ? &p->nodes[i] : NULL;
	}
	if (!create)
		return NULL;
	if (2 * (p->nodes_used + 1) > p->nodes_mask + 1 && nodes_grow(p))
		return NULL;
	i = node_probe(p, node);
	p->nodes[i].node = node;
	p->nodes_used++;
	return &p->nodes[i];
}

/* Doubles an array of range pointers (to first when empty). */
static int ptrs_grow(struct push_range ***v, size_t *cap, size_t first)
{
	size_t ncap = *cap ? 2 * *cap : first;
	struct push_range **n = realloc(*v, ncap * sizeof(*n));

	if (!n)
		return -ENOMEM;
	*v = n;
	*cap = ncap;
	return 0;
}

/* The first of nr's ranges with file_off >= off. */
static size_t node_lower(const struct node_ranges *nr, uint64_t off)
{
	size_t lo = 0, hi = nr->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (nr->v[mid]->file_off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int node_add(struct push *p, struct push_range *q)
{
	struct node_ranges *nr = node_slot(p, q->node, 1);
	size_t i;

	if (!nr)
		return -ENOMEM;
	if (nr->n == nr->cap && ptrs_grow(&nr->v, &nr->cap, 8))
		return -ENOMEM;
	i = node_lower(nr, q->file_off);
	/* Hot ranges of a file come apart, and a cut keeps them so: then only the
	 * range before a READ's first page can reach into it. */
	if ((i && nr->v[i - 1]->file_off + nr->v[i - 1]->len > q->file_off) ||
	    (i < nr->n && q->file_off + q->len > nr->v[i]->file_off))
		nr->overlap = 1;
	memmove(nr->v + i + 1, nr->v + i, (nr->n - i) * sizeof(*nr->v));
	nr->v[i] = q;
	nr->n++;
	if (q->len > nr->max_len)
		nr->max_len = q->len;
	return 0;
}

static void node_del(struct push *p, const struct push_range *q)
{
	struct node_ranges *nr = node_slot(p, q->node, 0);
	size_t i = nr ? node_lower(nr, q->file_off) : 0;

	if (!nr)
		return;
	while (i < nr->n && nr->v[i] != q)
		i++; /* past others at the same offset */
	/* Overlapping ranges (a hand-made profile) may have come out of order
	 * when one was cut: then a plain search. Never left listed once freed. */
	for (size_t j = 0; i == nr->n && j < nr->n; j++)
		if (nr->v[j] == q)
			i = j;
	if (i == nr->n)
		return;
	memmove(nr->v + i, nr->v + i + 1, (nr->n - i - 1) * sizeof(*nr->v));
	nr->n--;
}

static void heap_swap(struct push_range **h, size_t a, size_t b)
{
	struct push_range *t = h[a];

	h[a] = h[b];
	h[b] = t;
	h[a]->at = a;
	h[b]->at = b;
}

static int heap_push(struct push *p, const struct push_range *r)
{
	struct push_range *q;
	size_t i;

	if (p->n == p->cap && ptrs_grow(&p->heap, &p->cap, 64))
		return -ENOMEM;
	q = malloc(sizeof(*q));
	if (!q)
		return -ENOMEM;
	*q = *r;
	if (!q->deliver && node_add(p, q)) {
		free(q);
		return -ENOMEM;
	}
	i = p->n++;
	p->heap[i] = q;
	q->at = i;
	while (i && p->heap[(i - 1) / 2]->pos > p->heap[i]->pos) {
		heap_swap(p->heap, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	return 0;
}

static struct push_range heap_pop(struct push *p)
{
	struct push_range *q = p->heap[0], top = *q;
	size_t i = 0;

	if (!q->deliver)
		node_del(p, q);
	free(q);
	if (!--p->n)
		return top;
	p->heap[0] = p->heap[p->n];
	p->heap[0]->at = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < p->n && p->heap[l]->pos < p->heap[m]->pos)
			m = l;
		if (r < p->n && p->heap[r]->pos < p->heap[m]->pos)
			m = r;
		if (m == i)
			return top;
		heap_swap(p->heap, i, m);
		i = m;
	}
}

/* ---- queueing an opened file ---- */

struct file_ranges {
	uint64_t node;
	struct push_range *v;
	size_t n, cap;
};

static int collect_range(void *ctx, uint64_t file_off, uint64_t pos, uint64_t len)
{
	struct file_ranges *f = ctx;

	if (f->n == f->cap) {
		size_t ncap = f->cap ? 2 * f->cap : 16;
		struct push_range *v = realloc(f->v, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM; /* the rest is read on demand */
		f->v = v;
		f->cap = ncap;
	}
	f->v[f->n++] = (struct push_range){ .pos = pos, .file_off = file_off, .len = len,
					       .node = f->node };
	return 0;
}

void push_file(struct push *p, uint64_t node, uint64_t image_ino)
{
	struct file_ranges f = { node, NULL, 0, 0 };

	if (!p || !image_ino)
		return;
	/* Pushing is advice: whatever is not pushed, the program reads. Only files
	 * with something hot are remembered, so walking a big tree costs nothing. */
	(void)cairn_ns_hot_ranges(p->cf->ns, node, collect_range, &f);
	if (f.n) {
		pthread_mutex_lock(&p->lock);
		if (!p->stop && seen_add(p, image_ino) == 1) {
			for (size_t i = 0; i < f.n && heap_push(p, &f.v[i]) == 0; i++)
				cairn_ns_hold(p->cf->ns, node); /* dropped once it is pushed */
			p->st.files++;
			pthread_cond_signal(&p->cond);
		}
		pthread_mutex_unlock(&p->lock);
	}
	free(f.v);
}

int push_remembers_files(struct push *p)
{
	size_t n;

	if (!p)
		return 0;
	pthread_mutex_lock(&p->lock);
	n = p->seen_count;
	pthread_mutex_unlock(&p->lock);
	return n > 0;
}

void push_forgotten(struct push *p, uint64_t image_ino)
{
	if (!p || !image_ino)
		return;
	pthread_mutex_lock(&p->lock);
	seen_del(p, image_ino);
	pthread_mutex_unlock(&p->lock);
}

/* Lock held: the slot of chunk push (node, lo) among those on, or spans_n. */
static unsigned span_find(const struct push *p, uint64_t node, uint64_t lo)
{
	unsigned i = 0;

	while (i < p->spans_n && (p->spans_on[i][0] != node || p->spans_on[i][1] != lo))
		i++;
	return i;
}

/* Lock held: chunk push (node, lo) is done (stored or given up). */
static void span_done(struct push *p, uint64_t node, uint64_t lo)
{
	unsigned i = span_find(p, node, lo);

	if (i < p->spans_n) {
		p->spans_on[i][0] = p->spans_on[p->spans_n - 1][0];
		p->spans_on[i][1] = p->spans_on[p->spans_n - 1][1];
		p->spans_n--;
	}
}

void push_span(struct push *p, uint64_t node, uint64_t lo, uint64_t hi)
{
	/* After every hot range: those are what the program reads next, and a
	 * chunk rest is still pushed once they are done, while it is cached. */
	struct push_range r = { .pos = UINT64_MAX, .file_off = lo, .len = hi - lo, .node = node,
				.deliver = 1 };
	int queued = 0;

	pthread_mutex_lock(&p->lock);
	/* A chunk already on is not queued again, and when SPANS_MAX are on, a new
	 * one is not queued at all: the push is advice, the pages are still read. */
	if (!p->stop && hi > lo && p->spans_n < SPANS_MAX &&
	    span_find(p, node, lo) == p->spans_n && heap_push(p, &r) == 0) {
		p->spans_on[p->spans_n][0] = node;
		p->spans_on[p->spans_n][1] = lo;
		p->spans_n++;
		p->st.spans++;
		queued = 1; /* the caller's reference goes with it */
		pthread_cond_signal(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	if (!queued)
		cairn_ns_forget(p->cf->ns, node, 1);
}

/* Cuts of one served read delivered after the lock is let go; a read of 1 MiB
 * meets a few ranges at most, and a cut not delivered is only held longer. */
#define CUTS_MAX 8

struct cuts {
	uint64_t lo[CUTS_MAX], hi[CUTS_MAX];
	unsigned n;
};

/* Lock held: cuts the pages [lo, hi) out of queued hot range r of the same node,
 * splitting it when they lie inside (the tail is queued on its own, with a
 * reference of its own), and notes what was cut in c. Each cut is delivered
 * alone: a union of them could cover pages of a range being pushed now, and
 * drop its chunk before the push reads it. */
static void range_cut(struct push *p, struct push_range *r, uint64_t lo, uint64_t hi,
		      struct cuts *c)
{
	uint64_t beg = r->file_off & ~(uint64_t)(PAGE - 1), end = r->file_off + r->len;
	uint64_t clo = lo > beg ? lo : beg, chi = hi < end ? hi : end;

	/* A chunk's or segment's rest holds the read that queued it, and is
	 * stored in one piece while cached: cut, its far side would be lost. */
	if (!r->len || r->deliver || clo >= chi)
		return;
	p->st.served += chi - clo;
	if (c->n < CUTS_MAX) {
		c->lo[c->n] = clo;
		c->hi[c->n++] = chi;
	}
	if (clo == beg && chi == end) { /* all served: popped and given up */
		r->len = 0;
	} else if (clo == beg) {
		r->file_off = chi; /* pos stays: the heap's order holds */
		r->len = end - chi;
	} else if (chi == end) {
		r->len = clo - r->file_off;
	} else {
		struct push_range tail = *r;

		tail.pos = r->pos + (chi - r->file_off);
		tail.file_off = chi;
		tail.len = end - chi;
		r->len = clo - r->file_off;
		if (heap_push(p, &tail) == 0) /* listed right after r */
			cairn_ns_hold(p->cf->ns, tail.node);
	}
}

void push_served(struct push *p, uint64_t node, uint64_t off, uint64_t len)
{
	/* Whole pages only: the kernel keeps a READ's pages, a part page is read again. */
	uint64_t lo = (off + PAGE - 1) & ~(uint64_t)(PAGE - 1);
	uint64_t hi = (off + len) & ~(uint64_t)(PAGE - 1);
	struct cuts c = { .n = 0 };
	struct node_ranges *nr;

	if (!p || lo >= hi)
		return;
	pthread_mutex_lock(&p->lock);
	p->st.served_calls++;
	p->st.served_queued += p->n;
	nr = node_slot(p, node, 0);
	if (nr && nr->n) {
		/* Back from the first at or past lo to the one before it (apart),
		 * or as far as the longest could reach (overlapping); then on while
		 * they start before hi (a split's tail, listed next, starts at hi:
		 * the walk ends there). Cutting keeps the order: a range only loses
		 * pages at its ends, or splits in place. */
		size_t i = node_lower(nr, lo);
		uint64_t reach = lo > nr->max_len + PAGE ? lo - nr->max_len - PAGE : 0;

		if (!nr->overlap && i)
			i--;
		while (nr->overlap && i && nr->v[i - 1]->file_off >= reach)
			i--;
		for (; i < nr->n && nr->v[i]->file_off < hi; i++) {
			p->st.served_visits++;
			range_cut(p, nr->v[i], lo, hi, &c);
		}
	}
	pthread_mutex_unlock(&p->lock);
	/* The push kept those pages' chunks for itself; the kernel has them now. */
	for (unsigned k = 0; k < c.n; k++)
		cairn_ns_delivered(p->cf->ns, node, c.lo[k], c.hi[k] - c.lo[k]);
}

/* ---- the pushing thread ---- */

/* Files are queued before the reply that tells the kernel of them (fuse_ops.c),
 * so a first store may come before the kernel has set up the inode: retry with
 * a doubling wait from 0.1 ms up to 2 ms, about 33 ms in all (a loaded machine
 * can take that long to process the reply; 2 ms in all lost pushes there). */
#define PUSH_TRIES 20
#define PUSH_WAIT_FIRST_NS 100000L
#define PUSH_WAIT_MAX_NS 2000000L

static void push_retry_wait(unsigned tries)
{
	long ns = PUSH_WAIT_FIRST_NS << (tries < 5 ? tries : 5);
	struct timespec t = { 0, ns < PUSH_WAIT_MAX_NS ? ns : PUSH_WAIT_MAX_NS };

	nanosleep(&t, NULL);
}

/* Stores len bytes at file offset off of r's node into the kernel's page cache;
 * 0, or notify_store's error once it is no use trying again. */
static int store(struct push *p, struct push_range *r, uint64_t off, void *mem, size_t len)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(len);

	bv.buf[0].mem = mem;
	for (;;) {
		int rc = fuse_lowlevel_notify_store(p->cf->se, r->node, off, &bv, 0);

		if (rc == 0)
			return 0;
		if (rc != -ENOENT || ++r->tries >= PUSH_TRIES)
			return rc;
		push_retry_wait(r->tries - 1);
	}
}

/* A push piece lent by the caches (cairn_ns_read_iov): stored one iovec per
 * notify_store, no copy (libfuse copies a store of several buffers into one).
 * The kernel marks a page up to date only when one store fills it, so pieces
 * that do not meet at page boundaries are copied together first. */
struct lent_piece {
	struct push *p;
	struct push_range *r;
	uint64_t off;
	size_t got;
};

static int store_lent(void *ctx, const struct iovec *iov, int iovcnt, size_t total)
{
	struct lent_piece *lp = ctx;
	uint64_t pos = lp->off;
	int aligned = 1, rc = 0;

	if (!total) /* at or past EOF: nothing to store */
		return 0;
	for (int i = 0; i + 1 < iovcnt && aligned; i++) {
		pos += iov[i].iov_len;
		aligned = pos % PAGE == 0;
	}
	if (!aligned) {
		if (total > PUSH_CHUNK)
			return -EINVAL;
		size_t at = 0;

		for (int i = 0; i < iovcnt; at += iov[i].iov_len, i++)
			memcpy(lp->p->buf + at, iov[i].iov_base, iov[i].iov_len);
		lp->p->buf_warm = 1;
		rc = store(lp->p, lp->r, lp->off, lp->p->buf, total);
	} else {
		pos = lp->off;
		for (int i = 0; i < iovcnt && !rc; pos += iov[i].iov_len, i++)
			rc = store(lp->p, lp->r, pos, iov[i].iov_base, iov[i].iov_len);
	}
	if (!rc)
		lp->got = total;
	return rc;
}

/* Reads and stores want bytes at off: lent from the caches where they can
 * lend; a push for a random reader's chunk rest (r->deliver) reads only what
 * is cached, which lending does not offer, so it is copied. Returns the bytes
 * stored, 0 if none. */
static size_t push_read_store(struct push *p, struct push_range *r, uint64_t off, size_t want)
{
	struct lent_piece lp = { p, r, off, 0 };
	ssize_t got;

	if (!r->deliver)
		return cairn_ns_read_iov(p->cf->ns, r->node, want, off, store_lent, &lp, NULL) ?
		       0 : lp.got;
	p->buf_warm = 1;
	got = cairn_ns_read_flags(p->cf->ns, r->node, p->buf, want, off,
				  CAIRN_READ_ALONE | CAIRN_READ_CACHED);
	if (got <= 0 || store(p, r, off, p->buf, (size_t)got))
		return 0;
	return (size_t)got;
}

/* Stores r's next pages, at most PUSH_CHUNK of them, and advances r past them
 * (r->len 0 once it is done). What is left goes back in the queue, so a range
 * queued meanwhile that the program needs sooner goes first. Returns the bytes
 * stored; 0 gives the range up (the kernel forgot the inode, or reading failed:
 * the program will get the error itself). */
static size_t push_piece(struct push *p, struct push_range *r)
{
	uint64_t off = r->file_off & ~(uint64_t)(PAGE - 1);
	uint64_t end = r->file_off + r->len;
	size_t want = end - off < PUSH_CHUNK ? (size_t)(end - off) : PUSH_CHUNK;
	size_t got;

	if (!r->len) /* the program read all of it first (push_served) */
		return 0;
	want = (want + PAGE - 1) & ~(size_t)(PAGE - 1); /* whole pages, or to EOF */
	got = push_read_store(p, r, off, want);
	if (!got)
		return 0;
	/* Stored: the kernel has these pages now, hot ones too, so the caches
	 * need not hold them for the push any more (a daemon held the 25 MiB hot
	 * prefix of a Java start long after the push had stored all of it). */
	cairn_ns_delivered(p->cf->ns, r->node, off, (uint64_t)got);
	if (off + (uint64_t)got >= end) {
		r->len = 0;
		return (size_t)got;
	}
	r->pos += off + (uint64_t)got - r->file_off;
	r->len = end - (off + (uint64_t)got);
	r->file_off = off + (uint64_t)got;
	return (size_t)got;
}

/* Idle with the buffer's pages held (under p->lock): waits up to
 * PUSH_IDLE_SECS for work, and when none came gives them back to the OS (1 MiB
 * a prefetching daemon held for the rest of its life). Not at every gap in the
 * queue: a warm Java start went idle 290 times while the program opened its
 * files, and each release cost a madvise and the next fill its page faults. */
static void push_idle_release(struct push *p)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += PUSH_IDLE_SECS;
	while (!p->n && !p->stop)
		if (pthread_cond_timedwait(&p->cond, &p->lock, &until) == ETIMEDOUT)
			break;
	if (p->n || p->stop)
		return;
	pthread_mutex_unlock(&p->lock);
	madvise(p->buf, PUSH_CHUNK, MADV_DONTNEED);
	pthread_mutex_lock(&p->lock);
	p->buf_warm = 0;
}

static void *push_main(void *arg)
{
	struct push *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct push_range r;
		uint64_t lo;
		size_t done;

		while (!p->n && !p->stop) {
			if (p->buf_warm)
				push_idle_release(p);
			else
				pthread_cond_wait(&p->cond, &p->lock);
		}
		if (p->stop)
			break;
		r = heap_pop(p);
		pthread_mutex_unlock(&p->lock);
		lo = r.file_off;
		done = push_piece(p, &r);
		pthread_mutex_lock(&p->lock);
		p->st.bytes += done;
		/* A chunk is one piece (at most PUSH_CHUNK), and so is a segment
		 * unless segment= makes it larger: its rest may then be queued
		 * again meanwhile, which stores the same bytes twice at worst. */
		if (r.deliver)
			span_done(p, r.node, lo);
		if (done && r.len && heap_push(p, &r) == 0)
			continue; /* still holds its reference */
		pthread_mutex_unlock(&p->lock);
		cairn_ns_forget(p->cf->ns, r.node, 1);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* The queue's condition, timed on the monotonic clock (push_idle_release). */
static void push_cond_init(pthread_cond_t *cond)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &a);
	pthread_condattr_destroy(&a);
}

int push_start(struct daemon *cf, struct push **out)
{
	struct push *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->cf = cf;
	p->buf = mmap(NULL, PUSH_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p->buf == MAP_FAILED)
		p->buf = NULL;
	pthread_mutex_init(&p->lock, NULL);
	push_cond_init(&p->cond);
	if (!p->buf || daemon_thread_create(&p->tid, push_main, p)) {
		int err = p->buf ? -EAGAIN : -ENOMEM;

		pthread_cond_destroy(&p->cond);
		pthread_mutex_destroy(&p->lock);
		if (p->buf)
			munmap(p->buf, PUSH_CHUNK);
		free(p);
		return err;
	}
	*out = p;
	return 0;
}

void push_counts(struct push *p, struct push_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	*out = p->st;
	pthread_mutex_unlock(&p->lock);
}

/* Ends the thread, so nothing writes to the FUSE channel any more (call it before
 * the session is unmounted: unmounting closes the channel's descriptor). The
 * counters stay readable. NULL or a second call is a no-op. */
void push_halt(struct push *p)
{
	if (!p || p->joined)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->tid, NULL);
	p->joined = 1;
}

/* Ends the thread, dropping the references of ranges never pushed. NULL is a no-op. */
void push_stop(struct push *p)
{
	if (!p)
		return;
	push_halt(p);
	for (size_t i = 0; i < p->n; i++) {
		cairn_ns_forget(p->cf->ns, p->heap[i]->node, 1);
		free(p->heap[i]);
	}
	for (size_t i = 0; p->nodes && i <= p->nodes_mask; i++)
		free(p->nodes[i].v);
	free(p->nodes);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p->heap);
	free(p->seen);
	if (p->buf)
		munmap(p->buf, PUSH_CHUNK);
	free(p);
}
