/* SPDX-License-Identifier: MIT */
/*
 * qcow2 read path. A read is cut into pieces (clusters, or subclusters with
 * extended L2), each one of: data at a host offset, zeros, or "ask the backing
 * file". Neighbouring pieces of the same kind are merged into one run, and a data
 * run grows while the host clusters are contiguous, so a read over a contiguous
 * layout costs one request to the file below however many clusters it crosses.
 * Compressed clusters are read and inflated one at a time; the last one inflated
 * is kept, because a reader going through a cluster in small steps would
 * otherwise inflate it once per step.
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
	ZSTD_freeDCtx(q->zstd_ctx);
	q->zstd_ctx = NULL;
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

static int inflate_zstd(struct qcow2_dev *q, const uint8_t *in, size_t in_len, uint8_t *out,
			size_t out_len)
{
	ZSTD_inBuffer ib = { in, in_len, 0 };
	ZSTD_outBuffer ob = { out, out_len, 0 };

	if (!q->zstd_ctx) {
		q->zstd_ctx = ZSTD_createDCtx();
		if (!q->zstd_ctx)
			return -ENOMEM;
		ZSTD_DCtx_setParameter(q->zstd_ctx, ZSTD_d_windowLogMax, ZSTD_WINDOW_LOG_MAX);
	}
	ZSTD_DCtx_reset(q->zstd_ctx, ZSTD_reset_session_only);
	/* QEMU may write several frames per cluster: go on until the cluster is full. */
	while (ob.pos < ob.size) {
		size_t in_before = ib.pos, out_before = ob.pos;
		size_t zr = ZSTD_decompressStream(q->zstd_ctx, &ob, &ib);

		if (ZSTD_isError(zr))
			return -CAIRN_ECORRUPT;
		if (ib.pos == in_before && ob.pos == out_before)
			return -CAIRN_ECORRUPT; /* no progress: input used up or stuck */
	}
	return 0;
}

/* Read one compressed cluster's bytes [vs, ve) (virtual offsets). */
static int read_compressed(struct reader *r, uint64_t entry, uint64_t vs, uint64_t ve)
{
	struct qcow2_dev *q = r->q;
	unsigned x = 62 - (q->cluster_bits - 8);
	uint64_t coff = entry & ((1ull << x) - 1);
	uint64_t nsect = ((entry >> x) & ((1ull << (q->cluster_bits - 8)) - 1)) + 1;
	uint64_t csize = nsect * 512 - (coff & 511); /* at most 2 clusters */
	uint64_t in_cluster = vs & (q->cluster_size - 1);
	uint8_t *cbuf;
	int rc;

	if (coff > QCOW2_OFFSET_MASK || coff >= q->file_size)
		return -CAIRN_ECORRUPT; /* outside the file */
	if (csize > q->file_size - coff) /* may run past the end of the file */
		csize = q->file_size - coff;
	pthread_mutex_lock(&q->zlock);
	if (q->zbuf && q->zbuf_entry == entry) {
		memcpy(r->buf + (vs - r->off), q->zbuf + in_cluster, (size_t)(ve - vs));
		pthread_mutex_unlock(&q->zlock);
		return 0;
	}
	pthread_mutex_unlock(&q->zlock);

	cbuf = malloc((size_t)csize);
	if (!cbuf)
		return -ENOMEM;
	atomic_fetch_add(&q->data_requests, 1);
	rc = cairn_bdev_read_full(q->base.below, cbuf, (size_t)csize, coff);
	if (rc < 0) {
		free(cbuf);
		return rc;
	}
	pthread_mutex_lock(&q->zlock);
	if (!q->zbuf)
		q->zbuf = malloc((size_t)q->cluster_size);
	if (!q->zbuf) {
		rc = -ENOMEM;
	} else {
		q->zbuf_entry = 0;
		if (q->compression == QCOW2_ZSTD)
			rc = inflate_zstd(q, cbuf, (size_t)csize, q->zbuf, (size_t)q->cluster_size);
		else
			rc = inflate_zlib(cbuf, (size_t)csize, q->zbuf, (size_t)q->cluster_size);
		if (rc == 0) {
			q->zbuf_entry = entry;
			memcpy(r->buf + (vs - r->off), q->zbuf + in_cluster, (size_t)(ve - vs));
			atomic_fetch_add(&q->compressed_clusters, 1);
		}
	}
	pthread_mutex_unlock(&q->zlock);
	free(cbuf);
	return rc;
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

	if (e->entry & QCOW2_L2_COMPRESSED) {
		rc = flush(r);
		return rc < 0 ? rc : read_compressed(r, e->entry, vs, ve);
	}
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
		for (int i = 0; i < n && rc == 0; i++) {
			uint64_t cstart = (cl + (uint64_t)i) << cb;
			uint64_t ve = cstart + q->cluster_size < end ? cstart + q->cluster_size : end;

			rc = map_cluster(&r, &ents[i], cstart, pos, ve);
			pos = ve;
		}
	}
	if (rc == 0)
		rc = flush(&r);
	return rc < 0 ? rc : (ssize_t)len;
}
