/* SPDX-License-Identifier: MIT */
/*
 * File data: fixed-size chunks in a 64-way radix tree per file. A missing chunk
 * is a hole and reads as zeros. Growing a file adds chunks and, when the index
 * outgrows the tree, a new root above the old one: stored data never moves.
 *
 * Invariant: bytes of an allocated chunk beyond i_size are zero. New chunks are
 * zeroed outside the part being written, and truncating down zeroes the tail of
 * the last chunk, so extending a file never has to clear anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ramfs/internal.h"

#define NO_INDEX UINT64_MAX

/* Number of chunk indices a tree of this height covers, or 0 for "all". */
static uint64_t rt_capacity(unsigned height)
{
	return RT_SHIFT * height >= 64 ? 0 : (uint64_t)1 << (RT_SHIFT * height);
}

static bool rt_fits(unsigned height, uint64_t idx)
{
	uint64_t cap = rt_capacity(height);

	return !cap || idx < cap;
}

static void *rt_get(const struct ramfs_tree *t, uint64_t idx)
{
	void *p = t->root;

	if (!rt_fits(t->height, idx))
		return NULL;
	for (unsigned h = t->height; h > 0 && p; h--)
		p = ((struct rt_node *)p)->slot[(idx >> (RT_SHIFT * (h - 1))) & (RT_FAN - 1)];
	return p;
}

/* The slot that holds chunk idx, creating nodes as needed; NULL on ENOMEM. */
static void **rt_slot(struct cairn_ramfs *fs, struct ramfs_tree *t, uint64_t idx)
{
	void **slot;

	while (!rt_fits(t->height, idx)) {
		if (t->root) {
			struct rt_node *top = ramfs_meta_calloc(fs, sizeof(*top));

			if (!top)
				return NULL;
			top->slot[0] = t->root;
			t->root = top;
		}
		t->height++;
	}
	slot = &t->root;
	for (unsigned h = t->height; h > 0; h--) {
		if (!*slot) {
			*slot = ramfs_meta_calloc(fs, sizeof(struct rt_node));
			if (!*slot)
				return NULL;
		}
		slot = &((struct rt_node *)*slot)->slot[(idx >> (RT_SHIFT * (h - 1))) &
							(RT_FAN - 1)];
	}
	return slot;
}

static void chunk_free(struct cairn_ramfs *fs, struct ramfs_inode *n, void *chunk)
{
	if (!fs->closing)
		ramfs_chunk_put(fs, chunk);
	n->nchunks--;
	atomic_fetch_sub_explicit(&fs->chunks, 1, memory_order_relaxed);
	ramfs_unreserve(fs, fs->chunk_size);
}

/*
 * Free chunks lo..hi (inclusive) below *slot, which covers indices from base at
 * `level` (0 = *slot is a chunk). Frees nodes left empty.
 */
static void rt_free_range(struct cairn_ramfs *fs, struct ramfs_inode *n, void **slot,
			  unsigned level, uint64_t base, uint64_t lo, uint64_t hi)
{
	struct rt_node *node = *slot;
	uint64_t span;

	if (!node)
		return;
	if (level == 0) {
		chunk_free(fs, n, node);
		*slot = NULL;
		return;
	}
	span = (uint64_t)1 << (RT_SHIFT * (level - 1));
	for (unsigned i = 0; i < RT_FAN; i++) {
		uint64_t first = base + i * span, last = first + (span - 1);

		if (first > hi)
			break;
		if (node->slot[i] && last >= lo)
			rt_free_range(fs, n, &node->slot[i], level - 1, first, lo, hi);
	}
	for (unsigned i = 0; i < RT_FAN; i++)
		if (node->slot[i])
			return;
	ramfs_meta_free(fs, node, sizeof(*node));
	*slot = NULL;
}

static void tree_free_range(struct cairn_ramfs *fs, struct ramfs_inode *n, uint64_t lo,
			    uint64_t hi)
{
	struct ramfs_tree *t = &n->u.data;

	if (lo > hi || !t->root)
		return;
	if (t->height == 0 && lo > 0)
		return; /* the only chunk, index 0, is outside the range */
	rt_free_range(fs, n, &t->root, t->height, 0, lo, hi);
	if (!t->root)
		t->height = 0;
}

/*
 * First index >= idx whose presence equals `want` below the node at `level`
 * covering indices from base; NO_INDEX if none inside this node.
 */
static uint64_t rt_scan(void *p, unsigned level, uint64_t base, uint64_t idx, bool want)
{
	struct rt_node *node = p;
	uint64_t span;

	if (level == 0 || !p)
		return (p != NULL) == want ? (idx > base ? idx : base) : NO_INDEX;
	span = (uint64_t)1 << (RT_SHIFT * (level - 1));
	for (unsigned i = idx > base ? (unsigned)((idx - base) / span) : 0; i < RT_FAN; i++) {
		uint64_t first = base + i * span;
		uint64_t r = rt_scan(node->slot[i], level - 1, first, idx, want);

		if (r != NO_INDEX)
			return r;
	}
	return NO_INDEX;
}

/* First chunk index >= idx that is present (want) or absent (!want). */
static uint64_t tree_next(const struct ramfs_tree *t, uint64_t idx, bool want)
{
	uint64_t cap = rt_capacity(t->height);

	if (cap && idx >= cap)
		return want ? NO_INDEX : idx;
	uint64_t r = rt_scan(t->root, t->height, 0, idx, want);
	if (r == NO_INDEX && !want)
		return cap ? cap : NO_INDEX; /* all present from idx to the tree's end */
	return r;
}

void ramfs_data_free_all(struct cairn_ramfs *fs, struct ramfs_inode *n)
{
	tree_free_range(fs, n, 0, NO_INDEX);
}

/* Caller holds n->lock for writing; size <= RAMFS_MAX_FILE. */
int ramfs_data_truncate(struct cairn_ramfs *fs, struct ramfs_inode *n, uint64_t size)
{
	size_t in = size & (fs->chunk_size - 1);

	/* Down, or to the same size: chunks past the end go, those preallocated
	 * past EOF (KEEP_SIZE) too, as tmpfs frees them. */
	if (size <= n->size) {
		uint64_t keep = (size >> fs->chunk_shift) + (in ? 1 : 0);

		tree_free_range(fs, n, keep, NO_INDEX);
		if (in) {
			char *ch = rt_get(&n->u.data, size >> fs->chunk_shift);

			if (ch)
				memset(ch + in, 0, fs->chunk_size - in);
		}
	}
	/* Truncating up needs nothing: chunk bytes past the old size are zero. */
	n->size = size;
	return 0;
}

static int check_reg(const struct ramfs_inode *n)
{
	if (!n)
		return -ENOENT;
	if (S_ISDIR(n->type))
		return -EISDIR;
	return S_ISREG(n->type) ? 0 : -EINVAL;
}

/* Relatime: atime moves only when it is not newer than mtime/ctime or a day old. */
static bool atime_stale(const struct ramfs_inode *n, const struct cairn_time *now)
{
	const struct cairn_time *a = &n->atime;

	if (a->sec < n->mtime.sec || (a->sec == n->mtime.sec && a->nsec <= n->mtime.nsec))
		return true;
	if (a->sec < n->ctime.sec || (a->sec == n->ctime.sec && a->nsec <= n->ctime.nsec))
		return true;
	return now->sec - a->sec >= 24 * 3600;
}

/* Called after a read with n->lock read-held, which it drops. The day-old test
 * uses the coarse clock: reads need no precise time unless atime moves. */
static void unlock_touch_atime(struct ramfs_inode *n)
{
	struct cairn_time now;
	struct timespec ts;
	bool stale;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	now.sec = ts.tv_sec;
	now.nsec = (uint32_t)ts.tv_nsec;
	stale = atime_stale(n, &now);
	pthread_rwlock_unlock(&n->lock);
	if (!stale)
		return;
	ramfs_now(&now);
	pthread_rwlock_wrlock(&n->lock);
	if (atime_stale(n, &now))
		n->atime = now;
	pthread_rwlock_unlock(&n->lock);
}

ssize_t cairn_ramfs_read(struct cairn_ramfs *fs, cairn_ino_t ino, void *buf, size_t len,
			 uint64_t off)
{
	struct ramfs_inode *n = ramfs_get(fs, ino);
	int err = check_reg(n);
	size_t done = 0;

	if (err)
		return err;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	pthread_rwlock_rdlock(&n->lock);
	if (off < n->size) {
		if (len > n->size - off)
			len = (size_t)(n->size - off);
		while (done < len) {
			uint64_t pos = off + done;
			size_t in = pos & (fs->chunk_size - 1);
			size_t k = fs->chunk_size - in;
			const char *ch = rt_get(&n->u.data, pos >> fs->chunk_shift);

			if (k > len - done)
				k = len - done;
			if (ch)
				memcpy((char *)buf + done, ch + in, k);
			else
				memset((char *)buf + done, 0, k);
			done += k;
		}
	}
	unlock_touch_atime(n);
	return (ssize_t)done;
}

int cairn_ramfs_read_iov(struct cairn_ramfs *fs, cairn_ino_t ino, size_t len, uint64_t off,
			 cairn_iov_fn fn, void *ctx)
{
	struct ramfs_inode *n = ramfs_get(fs, ino);
	struct iovec small[64], *iov = small;
	int err = check_reg(n), cnt = 0;
	size_t done = 0;

	if (err)
		return err;
	pthread_rwlock_rdlock(&n->lock);
	if (off >= n->size)
		len = 0;
	else if (len > n->size - off)
		len = (size_t)(n->size - off);
	if (len) {
		size_t max = (len >> fs->chunk_shift) + 2;

		if (max > 64 && (max > INT32_MAX || !(iov = malloc(max * sizeof(*iov))))) {
			pthread_rwlock_unlock(&n->lock);
			return -ENOMEM;
		}
	}
	while (done < len) {
		uint64_t pos = off + done;
		size_t in = pos & (fs->chunk_size - 1);
		size_t k = fs->chunk_size - in;
		char *ch = rt_get(&n->u.data, pos >> fs->chunk_shift);

		if (k > len - done)
			k = len - done;
		iov[cnt].iov_base = (ch ? ch : (char *)fs->zero_chunk) + in;
		iov[cnt].iov_len = k;
		cnt++;
		done += k;
	}
	err = fn(ctx, iov, cnt, len);
	unlock_touch_atime(n);
	if (iov != small)
		free(iov);
	return err;
}

/* A fresh chunk for *slot, zero outside [in, in + k); NULL with *err set. The
 * space is taken from the limit unless the caller reserved it already. */
static char *chunk_alloc(struct cairn_ramfs *fs, struct ramfs_inode *n, void **slot, size_t in,
			 size_t k, bool reserved, int *err)
{
	char *ch;

	if (!reserved && ramfs_reserve(fs, fs->chunk_size)) {
		*err = -ENOSPC;
		return NULL;
	}
	ch = ramfs_chunk_get(fs);
	if (!ch) {
		if (!reserved)
			ramfs_unreserve(fs, fs->chunk_size);
		*err = -ENOMEM;
		return NULL;
	}
	if (in)
		memset(ch, 0, in);
	if (in + k < fs->chunk_size)
		memset(ch + in + k, 0, fs->chunk_size - in - k);
	*slot = ch;
	n->nchunks++;
	atomic_fetch_add_explicit(&fs->chunks, 1, memory_order_relaxed);
	return ch;
}

static ssize_t write_locked(struct cairn_ramfs *fs, struct ramfs_inode *n, const char *buf,
			    size_t len, uint64_t off)
{
	size_t done = 0;
	int err = 0;

	if (off >= RAMFS_MAX_FILE)
		return -EFBIG;
	if (len > RAMFS_MAX_FILE - off)
		len = (size_t)(RAMFS_MAX_FILE - off);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	while (done < len) {
		uint64_t pos = off + done;
		size_t in = pos & (fs->chunk_size - 1);
		size_t k = fs->chunk_size - in;
		void **slot = rt_slot(fs, &n->u.data, pos >> fs->chunk_shift);
		char *ch;

		if (k > len - done)
			k = len - done;
		if (!slot) {
			err = -ENOMEM;
			break;
		}
		ch = *slot ? *slot : chunk_alloc(fs, n, slot, in, k, false, &err);
		if (!ch)
			break;
		memcpy(ch + in, buf + done, k);
		done += k;
	}
	if (off + done > n->size)
		n->size = off + done;
	return done ? (ssize_t)done : err;
}

ssize_t cairn_ramfs_write(struct cairn_ramfs *fs, cairn_ino_t ino, const void *buf, size_t len,
			  uint64_t off, int append, const struct cairn_cred *cred)
{
	struct ramfs_inode *n = ramfs_get(fs, ino);
	int err = check_reg(n);
	ssize_t r;

	if (err)
		return err;
	if (!len)
		return 0;
	pthread_rwlock_wrlock(&n->lock);
	if (append)
		off = n->size; /* under the lock: O_APPEND writers never interleave */
	r = write_locked(fs, n, buf, len, off);
	if (r > 0) {
		ramfs_now(&n->mtime);
		n->ctime = n->mtime;
		if (!ramfs_cred_root(cred))
			ramfs_kill_suid(n);
	}
	pthread_rwlock_unlock(&n->lock);
	return r;
}

/* Chunks missing in [lo, hi]. */
static uint64_t count_missing(const struct ramfs_tree *t, uint64_t lo, uint64_t hi)
{
	uint64_t missing = 0, i = lo;

	while (i <= hi) {
		uint64_t a = tree_next(t, i, false), p;

		if (a == NO_INDEX || a > hi)
			break;
		p = tree_next(t, a, true);
		if (p == NO_INDEX || p > hi) {
			missing += hi - a + 1;
			break;
		}
		missing += p - a;
		i = p;
	}
	return missing;
}

/* Allocate every chunk in [off, off + len). The space for all of them is taken
 * first, so a full fs fails with -ENOSPC before anything changes. */
static int falloc_alloc(struct cairn_ramfs *fs, struct ramfs_inode *n, uint64_t off, uint64_t len,
			bool keep_size)
{
	uint64_t lo = off >> fs->chunk_shift, hi = (off + len - 1) >> fs->chunk_shift;
	uint64_t missing = count_missing(&n->u.data, lo, hi);
	int err;

	if (missing > (UINT64_MAX >> fs->chunk_shift))
		return -ENOSPC;
	err = ramfs_reserve(fs, missing << fs->chunk_shift);
	if (err)
		return err;
	for (uint64_t i = lo; i <= hi && missing; i++) {
		void **slot = rt_slot(fs, &n->u.data, i);

		if (!slot)
			err = -ENOMEM;
		else if (!*slot && chunk_alloc(fs, n, slot, 0, 0, true, &err))
			missing--;
		if (err)
			break;
	}
	/* On ENOMEM, chunks already added stay (as tmpfs keeps them); the rest of
	 * the reservation goes back. */
	ramfs_unreserve(fs, missing << fs->chunk_shift);
	if (err)
		return err;
	if (!keep_size && off + len > n->size)
		n->size = off + len;
	return 0;
}

/* Zero [off, off + len) and free the whole chunks inside it. */
static void punch_hole(struct cairn_ramfs *fs, struct ramfs_inode *n, uint64_t off, uint64_t len)
{
	uint64_t end = off + len, cs = fs->chunk_size;
	uint64_t first = (off + cs - 1) >> fs->chunk_shift; /* first whole chunk */
	uint64_t stop = end >> fs->chunk_shift;              /* one past the last */

	for (uint64_t pos = off; pos < end;) {
		uint64_t idx = pos >> fs->chunk_shift;
		uint64_t in = pos & (cs - 1), k = cs - in;

		if (k > end - pos)
			k = end - pos;
		if (idx >= first && idx < stop) {
			pos = stop << fs->chunk_shift;
			continue;
		}
		char *ch = rt_get(&n->u.data, idx);
		if (ch)
			memset(ch + in, 0, k);
		pos += k;
	}
	if (first < stop)
		tree_free_range(fs, n, first, stop - 1);
}

int cairn_ramfs_fallocate(struct cairn_ramfs *fs, cairn_ino_t ino, int mode, uint64_t off,
			  uint64_t len)
{
	struct ramfs_inode *n = ramfs_get(fs, ino);
	int err = check_reg(n);

	if (!n)
		return -ENOENT;
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE))
		return -EOPNOTSUPP;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))
		return -EOPNOTSUPP;
	if (S_ISDIR(n->type))
		return -EISDIR;
	if (err)
		return -ENODEV; /* as fallocate(2) on a fifo or device */
	if (!len)
		return -EINVAL;
	if (off > RAMFS_MAX_FILE || len > RAMFS_MAX_FILE - off)
		return -EFBIG;
	pthread_rwlock_wrlock(&n->lock);
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		/* Also past EOF: chunks preallocated with KEEP_SIZE go too. */
		punch_hole(fs, n, off, len);
		err = 0;
	} else {
		err = falloc_alloc(fs, n, off, len, mode & FALLOC_FL_KEEP_SIZE);
	}
	if (!err) {
		ramfs_now(&n->mtime);
		n->ctime = n->mtime;
	}
	pthread_rwlock_unlock(&n->lock);
	return err;
}

int64_t cairn_ramfs_lseek(struct cairn_ramfs *fs, cairn_ino_t ino, uint64_t off, int whence)
{
	struct ramfs_inode *n = ramfs_get(fs, ino);
	int err = check_reg(n);
	int64_t r;

	if (err)
		return err;
	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	pthread_rwlock_rdlock(&n->lock);
	if (off >= n->size) {
		r = -ENXIO;
	} else {
		uint64_t idx = off >> fs->chunk_shift;
		uint64_t i = tree_next(&n->u.data, idx, whence == SEEK_DATA);
		uint64_t pos = i == NO_INDEX || i > (RAMFS_MAX_FILE >> fs->chunk_shift)
			? UINT64_MAX : i << fs->chunk_shift;

		if (pos < off)
			pos = off;
		if (whence == SEEK_DATA)
			r = pos >= n->size ? -ENXIO : (int64_t)pos;
		else
			r = (int64_t)(pos >= n->size ? n->size : pos);
	}
	pthread_rwlock_unlock(&n->lock);
	return r;
}
