/* SPDX-License-Identifier: MIT */
/*
 * qcow2 read path. A read is cut into pieces (clusters, or subclusters with
 * extended L2), each one of: data at a host offset, zeros, or "ask the backing
 * file". Neighbouring pieces of the same kind are merged into one run, and a data
 * run grows while the host clusters are contiguous, so a read over a contiguous
 * layout costs one request to the file below however many clusters it crosses.
 * Compressed clusters packed next to each other in the file are fetched with one
 * request too, then inflated one by one, straight into the caller's buffer when
 * the read covers the whole cluster. The last partly read cluster is kept,
 * because a reader going through a cluster in small steps would otherwise
 * inflate it once per step.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#include <cairn/error.h>
#include "qcow2_int.h"

#define L2_BATCH 256 /* entries fetched per lookup; 4 KiB of stack */
/* Reserved bits of a standard L2 entry (bits 1-8 and 56-61); with extended L2
 * bit 0 is reserved too. */
#define L2_RESERVED     0x3f000000000001feull
#define L2_RESERVED_EXT 0x3f000000000001ffull
/* zstd window limit: a frame may not make us allocate more than 8 MiB. */
#define ZSTD_WINDOW_LOG_MAX 23

enum run_kind { RUN_NONE, RUN_DATA, RUN_ZERO, RUN_BACKING };

struct run {
	enum run_kind kind;
	uint64_t voff, host, len;
};

struct reader {
	struct qcow2_dev *q;
	uint8_t *buf;
	uint64_t off; /* virtual offset of buf[0] */
	struct run run;
};

int qcow2_decomp_init(struct qcow2_dev *q)
{
	(void)q; /* contexts are made on the first compressed cluster */
	return 0;
}

void qcow2_decomp_destroy(struct qcow2_dev *q)
{
	free(q->zbuf);
	q->zbuf = NULL;
	pthread_mutex_destroy(&q->zlock);
}

/* Fill dst from dev at off; whatever lies past dev's end reads as zeros. */
static int read_or_zero(struct cairn_bdev *dev, uint8_t *dst, uint64_t len, uint64_t off)
{
	ssize_t n = cairn_bdev_read(dev, dst, (size_t)len, off);

	if (n < 0)
		return (int)n;
	if ((uint64_t)n < len)
		memset(dst + n, 0, (size_t)(len - (uint64_t)n));
	return 0;
}

static int flush(struct reader *r)
{
	struct qcow2_dev *q = r->q;
	struct run *run = &r->run;
	uint8_t *dst;
	int rc = 0;

	if (run->kind == RUN_NONE)
		return 0;
	dst = r->buf + (run->voff - r->off);
	switch (run->kind) {
	case RUN_NONE:
		break;
	case RUN_DATA:
		atomic_fetch_add(&q->data_requests, 1);
		rc = read_or_zero(q->base.below, dst, run->len, run->host);
		break;
	case RUN_ZERO:
		memset(dst, 0, (size_t)run->len);
		break;
	case RUN_BACKING:
		if (q->backing) {
			atomic_fetch_add(&q->backing_reads, 1);
			rc = read_or_zero(q->backing, dst, run->len, run->voff);
		} else {
			memset(dst, 0, (size_t)run->len);
		}
		break;
	}
	run->kind = RUN_NONE;
	return rc;
}

/* Add a piece; it joins the current run when it continues it. */
static int emit(struct reader *r, enum run_kind kind, uint64_t voff, uint64_t host,
		uint64_t len)
{
	struct run *run = &r->run;
	int rc;

	if (run->kind == kind && run->voff + run->len == voff &&
	    (kind != RUN_DATA || run->host + run->len == host)) {
		run->len += len;
		return 0;
	}
	rc = flush(r);
	run->kind = kind;
	run->voff = voff;
	run->host = host;
	run->len = len;
	return rc;
}

static int inflate_zlib(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len)
{
	z_stream s;
	int zr;

	memset(&s, 0, sizeof(s));
	/* Raw deflate. QEMU writes with a 4 KiB window (-12); the full 32 KiB window
	 * reads those streams and any other raw deflate stream as well. */
	if (inflateInit2(&s, -15) != Z_OK)
		return -ENOMEM;
	s.next_in = (Bytef *)(uintptr_t)in;
	s.avail_in = (uInt)in_len;
	s.next_out = out;
	s.avail_out = (uInt)out_len;
	zr = inflate(&s, Z_FINISH);
	inflateEnd(&s);
	/* The stored length may exceed the stream (sector rounding), so stopping with
	 * a full output and input left over (Z_BUF_ERROR) is success too. */
	if ((zr == Z_STREAM_END || zr == Z_BUF_ERROR || zr == Z_OK) && s.avail_out == 0)
		return 0;
	return -CAIRN_ECORRUPT;
}

static int inflate_zstd(ZSTD_DCtx **ctx, const uint8_t *in, size_t in_len, uint8_t *out,
			size_t out_len)
{
	ZSTD_inBuffer ib = { in, in_len, 0 };
	ZSTD_outBuffer ob = { out, out_len, 0 };

	if (!*ctx) {
		*ctx = ZSTD_createDCtx();
		if (!*ctx)
			return -ENOMEM;
		ZSTD_DCtx_setParameter(*ctx, ZSTD_d_windowLogMax, ZSTD_WINDOW_LOG_MAX);
	}
	ZSTD_DCtx_reset(*ctx, ZSTD_reset_session_only);
	/* QEMU may write several frames per cluster: go on until the cluster is full. */
	while (ob.pos < ob.size) {
		size_t in_before = ib.pos, out_before = ob.pos;
		size_t zr = ZSTD_decompressStream(*ctx, &ob, &ib);

		if (ZSTD_isError(zr))
			return -CAIRN_ECORRUPT;
		if (ib.pos == in_before && ob.pos == out_before)
			return -CAIRN_ECORRUPT; /* no progress: input used up or stuck */
	}
	return 0;
}

/* Where a compressed cluster's bytes are: [*coff, *coff + *csize), clipped to the
 * file (the stored sector count may run past its end). */
static int compressed_desc(const struct qcow2_dev *q, uint64_t entry, uint64_t *coff,
			   uint64_t *csize)
{
	unsigned x = 62 - (q->cluster_bits - 8);
	uint64_t nsect = ((entry >> x) & ((1ull << (q->cluster_bits - 8)) - 1)) + 1;

	*coff = entry & ((1ull << x) - 1);
	if (*coff > QCOW2_OFFSET_MASK || *coff >= q->file_size)
		return -CAIRN_ECORRUPT;
	*csize = nsect * 512 - (*coff & 511); /* at most 2 clusters */
	if (*csize > q->file_size - *coff)
		*csize = q->file_size - *coff;
	return 0;
}

/* How many of the compressed clusters e[0..n) can share one read: each must
 * start at or after the one before and at most CSPAN_GAP bytes past the span so
 * far, and the span stays within CSPAN_MAX (one cluster may always go alone).
 * qemu-img packs compressed clusters back to back, so a sequential read of a
 * compressed image becomes one request per read instead of one per cluster. */
#define CSPAN_GAP 4096u
#define CSPAN_MAX (4u << 20)
static int compressed_run(const struct qcow2_dev *q, const struct qcow2_l2e *e, int n,
			  uint64_t *lo, uint64_t *hi)
{
	uint64_t coff, csize, prev = 0;
	int k;

	for (k = 0; k < n && (e[k].entry & QCOW2_L2_COMPRESSED); k++) {
		int rc = compressed_desc(q, e[k].entry, &coff, &csize);
		uint64_t top;

		if (rc < 0)
			return k ? k : rc;
		top = coff + csize;
		if (k == 0) {
			*lo = coff;
			*hi = top;
		} else {
			if (coff < prev || coff > *hi + CSPAN_GAP ||
			    (top > *hi ? top : *hi) - *lo > CSPAN_MAX)
				break;
			if (top > *hi)
				*hi = top;
		}
		prev = coff;
	}
	return k;
}

/* Decompress one cluster from `in` into out (cluster_size bytes). */
static int inflate_cluster(struct qcow2_dev *q, ZSTD_DCtx **zctx, const uint8_t *in,
			   size_t in_len, uint8_t *out)
{
	int rc;

	if (q->compression == QCOW2_ZSTD)
		rc = inflate_zstd(zctx, in, in_len, out, (size_t)q->cluster_size);
	else
		rc = inflate_zlib(in, in_len, out, (size_t)q->cluster_size);
	if (rc == 0)
		atomic_fetch_add(&q->compressed_clusters, 1);
	return rc;
}

/* Serve [vs, ve) of the cluster `entry` from the kept cluster, if it is that one. */
static int zbuf_hit(struct reader *r, uint64_t entry, uint64_t vs, uint64_t ve)
{
	struct qcow2_dev *q = r->q;
	int hit;

	pthread_mutex_lock(&q->zlock);
	hit = q->zbuf && q->zbuf_entry == entry;
	if (hit)
		memcpy(r->buf + (vs - r->off), q->zbuf + (vs & (q->cluster_size - 1)),
		       (size_t)(ve - vs));
	pthread_mutex_unlock(&q->zlock);
	return hit;
}

/* Keep a decompressed cluster (taking ownership of buf) for the next read. */
static void zbuf_keep(struct qcow2_dev *q, uint64_t entry, uint8_t *buf)
{
	uint8_t *old;

	pthread_mutex_lock(&q->zlock);
	old = q->zbuf;
	q->zbuf = buf;
	q->zbuf_entry = entry;
	pthread_mutex_unlock(&q->zlock);
	free(old);
}

/*
 * k compressed clusters e[0..k), the first starting at virtual offset cstart,
 * whose bytes lie in [lo, hi) of the file: one read, then each is inflated
 * straight into the caller's buffer when the read covers it whole, or through a
 * spare cluster (then kept) when it covers only part. Advances *pos and returns
 * how many clusters it consumed (at least 1), or -errno.
 */
static int read_compressed_run(struct reader *r, const struct qcow2_l2e *e, int k,
			       uint64_t cstart, uint64_t lo, uint64_t hi, uint64_t *pos,
			       uint64_t end)
{
	struct qcow2_dev *q = r->q;
	uint64_t cs = q->cluster_size;
	ZSTD_DCtx *zctx = NULL;
	uint8_t *in;
	int rc = 0, i = 0;

	/* A reader stepping through one cluster finds it already inflated. */
	if (zbuf_hit(r, e[0].entry, *pos, cstart + cs < end ? cstart + cs : end)) {
		*pos = cstart + cs < end ? cstart + cs : end;
		if (k == 1)
			return 1;
		/* The rest may form a shorter run on its own (odd layouts). */
		k = 1 + compressed_run(q, e + 1, k - 1, &lo, &hi);
		i = 1;
	}
	in = malloc((size_t)(hi - lo));
	if (!in)
		return -ENOMEM;
	atomic_fetch_add(&q->data_requests, 1);
	rc = cairn_bdev_read_full(q->base.below, in, (size_t)(hi - lo), lo);
	for (; i < k && rc == 0; i++) {
		uint64_t c0 = cstart + (uint64_t)i * cs;
		uint64_t ve = c0 + cs < end ? c0 + cs : end;
		uint64_t coff, csize;
		uint8_t *spare;

		rc = compressed_desc(q, e[i].entry, &coff, &csize);
		if (rc == 0 && (coff < lo || csize > hi - coff))
			rc = -CAIRN_ECORRUPT; /* cannot happen: the run was built from these */
		if (rc < 0)
			break;
		if (*pos == c0 && ve == c0 + cs) {
			rc = inflate_cluster(q, &zctx, in + (coff - lo), (size_t)csize,
					     r->buf + (c0 - r->off));
		} else {
			spare = malloc((size_t)cs);
			rc = spare ? inflate_cluster(q, &zctx, in + (coff - lo), (size_t)csize, spare)
				   : -ENOMEM;
			if (rc == 0) {
				memcpy(r->buf + (*pos - r->off), spare + (*pos - c0),
				       (size_t)(ve - *pos));
				zbuf_keep(q, e[i].entry, spare);
			} else {
				free(spare);
			}
		}
		*pos = ve;
	}
	ZSTD_freeDCtx(zctx);
	free(in);
	return rc < 0 ? rc : k;
}

/* A data cluster must be aligned and start inside the file. */
static int check_host(const struct qcow2_dev *q, uint64_t host)
{
	return host % q->cluster_size || host >= q->file_size ? -CAIRN_ECORRUPT : 0;
}

/* Extended L2: 32 subclusters, each allocated (data), zero, or unallocated. */
static int map_subclusters(struct reader *r, const struct qcow2_l2e *e, uint64_t cstart,
			   uint64_t vs, uint64_t ve)
{
	struct qcow2_dev *q = r->q;
	uint64_t host = e->entry & QCOW2_OFFSET_MASK;
	uint32_t alloc = (uint32_t)e->bitmap, zero = (uint32_t)(e->bitmap >> 32);
	uint64_t scs = q->cluster_size / QCOW2_SUBCLUSTERS;
	int rc = 0;

	/* A subcluster both allocated and zero, or allocated in no cluster, is corrupt. */
	if ((e->entry & L2_RESERVED_EXT) || (alloc & zero) || (!host && alloc))
		return -CAIRN_ECORRUPT;
	if (host && (rc = check_host(q, host)) < 0)
		return rc;
	while (vs < ve && rc == 0) {
		unsigned sc = (unsigned)((vs - cstart) / scs);
		uint64_t pe = cstart + (uint64_t)(sc + 1) * scs;

		if (pe > ve)
			pe = ve;
		if (alloc & (1u << sc))
			rc = emit(r, RUN_DATA, vs, host + (vs - cstart), pe - vs);
		else if (zero & (1u << sc))
			rc = emit(r, RUN_ZERO, vs, 0, pe - vs);
		else
			rc = emit(r, RUN_BACKING, vs, 0, pe - vs);
		vs = pe;
	}
	return rc;
}

/* Bytes [vs, ve) of the cluster starting at cstart, mapped by L2 entry e. */
static int map_cluster(struct reader *r, const struct qcow2_l2e *e, uint64_t cstart,
		       uint64_t vs, uint64_t ve)
{
	struct qcow2_dev *q = r->q;
	uint64_t host;
	int rc;

	if (q->ext_l2)
		return map_subclusters(r, e, cstart, vs, ve);
	if (e->entry & L2_RESERVED)
		return -CAIRN_ECORRUPT;
	/* The zero flag wins over any (preallocated) host offset. */
	if (e->entry & QCOW2_L2_ZERO)
		return emit(r, RUN_ZERO, vs, 0, ve - vs);
	host = e->entry & QCOW2_OFFSET_MASK;
	if (!host)
		return emit(r, RUN_BACKING, vs, 0, ve - vs);
	rc = check_host(q, host);
	return rc < 0 ? rc : emit(r, RUN_DATA, vs, host + (vs - cstart), ve - vs);
}

ssize_t qcow2_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	struct qcow2_dev *q = (struct qcow2_dev *)dev;
	struct reader r = { .q = q, .buf = buf, .off = off, .run = { .kind = RUN_NONE } };
	struct qcow2_l2e ents[L2_BATCH];
	uint64_t pos = off, end = off + len; /* cairn_bdev_read clipped len to size */
	unsigned cb = q->cluster_bits;
	int rc = 0;

	while (pos < end && rc == 0) {
		uint64_t cl = pos >> cb, last = (end - 1) >> cb;
		uint64_t l1i = cl / q->l2_entries, l2i = cl % q->l2_entries;
		uint64_t want = q->l2_entries - l2i, l2;
		int n;

		if (l1i >= q->l1_count)
			return -CAIRN_ECORRUPT; /* cannot happen: L1 covers the size */
		l2 = q->l1[l1i];
		if (!l2) { /* the whole table is unallocated */
			uint64_t tend = (cl + want) << cb;

			rc = emit(&r, RUN_BACKING, pos, 0, (tend < end ? tend : end) - pos);
			pos = tend < end ? tend : end;
			continue;
		}
		if (want > last - cl + 1)
			want = last - cl + 1;
		if (want > L2_BATCH)
			want = L2_BATCH;
		n = qcow2_l2_get(q, l2, l2i, want, ents);
		if (n < 0)
			return n;
		for (int i = 0; i < n && rc == 0;) {
			uint64_t cstart = (cl + (uint64_t)i) << cb;
			uint64_t ve = cstart + q->cluster_size < end ? cstart + q->cluster_size : end;
			uint64_t lo, hi;
			int k;

			if (ents[i].entry & QCOW2_L2_COMPRESSED) {
				rc = flush(&r);
				k = rc < 0 ? rc : compressed_run(q, &ents[i], n - i, &lo, &hi);
				if (k < 0)
					return k;
				k = read_compressed_run(&r, &ents[i], k, cstart, lo, hi, &pos, end);
				if (k < 0)
					return k;
				i += k;
				continue;
			}
			rc = map_cluster(&r, &ents[i], cstart, pos, ve);
			pos = ve;
			i++;
		}
	}
	if (rc == 0)
		rc = flush(&r);
	return rc < 0 ? rc : (ssize_t)len;
}
