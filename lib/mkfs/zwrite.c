/* SPDX-License-Identifier: MIT */
/*
 * Writing a compressed image (docs/FORMAT.md "Compression").
 *
 * Planning (single-threaded, in placement order: the hot prefix items, then the
 * other files in inode order): each data file is hashed, identical files share
 * the first one's chunks, and every file gets its chunk indexes: its own chunks
 * (one per chunk size of its data) and, for a tail shorter than a chunk (a small
 * file is all tail), a place in the current fragment. Fragments collect tails in
 * placement order and are closed when the next tail does not fit, and at the end
 * of the hot prefix so the prefix holds its files' tails. The result is a list
 * of jobs, one per chunk to store, in the order they go on disk.
 *
 * Writing: jobs are taken in batches; the threads of a batch each read a job's
 * bytes from the source and compress them alone, then the batch is written back
 * to back in job order. A chunk is a pure function of its bytes and the codec,
 * and offsets are assigned in job order, so the output does not depend on the
 * thread count. A chunk that does not shrink by 1/32 is stored raw; a chunk of
 * zeros is stored as nothing. Sparse files are not planned: they keep their
 * extents, uncompressed, after the chunks (write.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <lz4.h>
#include <lz4hc.h>
#include <xxhash.h>
#include <zstd.h>
#include "format/format_int.h"
#include "mkfs_int.h"
#include "util/thread.h"

#define ZBUF (1u << 20)           /* hashing and comparing buffer */
#define BATCH_PER_THREAD 8u       /* jobs in flight per thread */
#define PROGRESS_STEP (16ull << 20)

/* One chunk to store: chunk `j` of file `idx`, or fragment `j` (idx MK_NONE). */
struct zjob {
	uint32_t idx, j;
	uint64_t chunk;
};

/* A tail in a fragment. */
struct zpiece {
	uint32_t idx, len;
	uint64_t src_off;
};

struct zfrag {
	uint64_t first, n;        /* pieces */
	uint32_t ulen;
	uint64_t chunk;
};

struct mk_zplan {
	struct cairn_mkfs *m;
	unsigned log2;
	uint64_t cs;
	unsigned codec;           /* CAIRN_MKFS_* */
	int level;
	unsigned hot_codec;       /* the hot prefix's chunks: CAIRN_MKFS_* */
	int hot_level;
	struct mk_vec jobs;       /* struct zjob, in disk order */
	struct mk_vec pieces;     /* struct zpiece */
	struct mk_vec frags;      /* struct zfrag */
	struct mk_vec table;      /* struct cairn_disk_chunk (le) */
	struct mk_vec placed;     /* uint8_t per chunk: a job exists for it */
	uint64_t hot_jobs;        /* jobs of the hot prefix */
	int frag_open;            /* the last fragment takes more tails */
	struct mk_map dedup;      /* (size, hash) -> inode index */
	uint64_t total, done, reported, stored, logical, raw_chunks;
	uint64_t hot_stored, hot_logical; /* of the chunks stored in the hot prefix */
	char *buf, *buf2;         /* ZBUF each, planning only */
};

static struct zjob *job_at(struct mk_zplan *z, uint64_t i)
{
	return MK_AT(&z->jobs, struct zjob, i);
}

static struct cairn_disk_chunk *chunk_rec(struct mk_zplan *z, uint64_t i)
{
	return MK_AT(&z->table, struct cairn_disk_chunk, i);
}

static int fragmentable(const struct mk_inode *in)
{
	return !in->split; /* split files keep whole chunks (their last one short) */
}

/* Sparse files keep their extents, uncompressed (write.c): a chunk map would
 * spend 16 bytes per chunk of holes (320 KiB per GiB at 64 KiB chunks). */
int mk_zplan_skips(const struct mk_inode *in)
{
	return (in->flags & CAIRN_IF_EXTENTS) && !in->split;
}

/* Bytes of a file in its own chunks: all of it, or all but the fragment tail. */
static uint64_t own_len(const struct mk_zplan *z, const struct mk_inode *in)
{
	return fragmentable(in) ? in->size & ~(z->cs - 1) : in->size;
}

/* ---- planning: hashing and sharing ---- */

static int read_at(struct cairn_mkfs *m, int fd, const char *path, void *p, size_t n,
		   uint64_t off)
{
	while (n) {
		ssize_t r = pread(fd, p, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return mk_err(m, -errno, "%s: read: %s", path, strerror(errno));
		if (r == 0)
			return mk_err(m, -EIO, "%s: file shrank while reading", path);
		p = (char *)p + r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

static int open_src(struct cairn_mkfs *m, const struct mk_inode *in)
{
	const char *path = mk_str(m, in->str);
	int fd = mk_open_noatime(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return mk_err(m, -errno, "%s: cannot read: %s", path, strerror(errno));
	return fd;
}

/* XXH3-64 of the file's bytes. */
static int hash_file(struct mk_zplan *z, struct mk_inode *in)
{
	struct cairn_mkfs *m = z->m;
	const char *path = mk_str(m, in->str);
	XXH3_state_t *hs = XXH3_createState();
	int fd, rc = 0;

	if (!hs)
		return mk_err(m, -ENOMEM, "out of memory");
	fd = open_src(m, in);
	if (fd < 0) {
		XXH3_freeState(hs);
		return fd;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	XXH3_64bits_reset(hs);
	for (uint64_t pos = 0; !rc && pos < in->size;) {
		size_t k = in->size - pos < ZBUF ? (size_t)(in->size - pos) : ZBUF;

		rc = read_at(m, fd, path, z->buf, k, pos);
		if (!rc)
			XXH3_64bits_update(hs, z->buf, k);
		pos += k;
	}
	in->hash = XXH3_64bits_digest(hs);
	XXH3_freeState(hs);
	close(fd);
	return rc;
}

struct zdup_key {
	struct mk_zplan *z;
	struct mk_inode *in;
	int err;
};

/* Same size, same hash and the same source bytes. */
static int zdup_eq(void *ctx, uint64_t val)
{
	struct zdup_key *k = ctx;
	struct cairn_mkfs *m = k->z->m;
	struct mk_inode *o = mk_ino(m, (uint32_t)val);
	int a, b, same = 1;

	if (k->err || o->size != k->in->size || o->hash != k->in->hash || o->raw != k->in->raw)
		return 0;
	if ((a = open_src(m, o)) < 0 || (b = open_src(m, k->in)) < 0) {
		k->err = a < 0 ? a : (close(a), b);
		return 0;
	}
	for (uint64_t pos = 0; same && pos < o->size;) {
		size_t n = o->size - pos < ZBUF ? (size_t)(o->size - pos) : ZBUF;

		k->err = read_at(m, a, mk_str(m, o->str), k->z->buf, n, pos);
		if (!k->err)
			k->err = read_at(m, b, mk_str(m, k->in->str), k->z->buf2, n, pos);
		same = !k->err && !memcmp(k->z->buf, k->z->buf2, n);
		pos += n;
	}
	close(a);
	close(b);
	return same;
}

/* ---- planning: chunk indexes and jobs ---- */

static int add_chunk(struct mk_zplan *z, uint64_t *out)
{
	if (!mk_vec_push(&z->table) || !mk_vec_push(&z->placed))
		return mk_err(z->m, -ENOMEM, "out of memory");
	*out = z->table.n - 1;
	return 0;
}

static int add_job(struct mk_zplan *z, uint32_t idx, uint32_t j, uint64_t chunk)
{
	struct zjob *jb = mk_vec_push(&z->jobs);

	if (!jb)
		return mk_err(z->m, -ENOMEM, "out of memory");
	*jb = (struct zjob){ idx, j, chunk };
	*MK_AT(&z->placed, uint8_t, chunk) = 1;
	return 0;
}

static void close_frag(struct mk_zplan *z)
{
	z->frag_open = 0;
}

/* The tail of in into the open fragment, or a new one. */
static int add_tail(struct mk_zplan *z, uint32_t idx)
{
	struct mk_inode *in = mk_ino(z->m, idx);
	uint64_t off = own_len(z, in), len = in->size - off;
	struct zfrag *f = z->frag_open ? MK_AT(&z->frags, struct zfrag, z->frags.n - 1) : NULL;
	struct zpiece *p;

	if (!len)
		return 0;
	if (f && f->ulen + len > z->cs)
		f = NULL;
	if (!f) {
		uint64_t chunk = 0;
		int rc = add_chunk(z, &chunk);

		if (rc)
			return rc;
		if (!(f = mk_vec_push(&z->frags)))
			return mk_err(z->m, -ENOMEM, "out of memory");
		f->first = z->pieces.n;
		f->chunk = chunk;
		rc = add_job(z, MK_NONE, (uint32_t)(z->frags.n - 1), chunk);
		if (rc)
			return rc;
		f = MK_AT(&z->frags, struct zfrag, z->frags.n - 1);
		z->frag_open = 1;
	}
	if (!(p = mk_vec_push(&z->pieces)))
		return mk_err(z->m, -ENOMEM, "out of memory");
	*p = (struct zpiece){ idx, (uint32_t)len, off };
	in = mk_ino(z->m, idx);
	in->frag_ref = f->chunk;
	in->frag_off = f->ulen;
	f->ulen += (uint32_t)len;
	f->n++;
	return 0;
}

/* First sight of a file: hash it, share an identical one's chunks, or take
 * chunk indexes for its own chunks. Returns 1 when it is shared. */
static int plan_file(struct mk_zplan *z, uint32_t idx)
{
	struct cairn_mkfs *m = z->m;
	struct mk_inode *in = mk_ino(m, idx);
	int dedupable = fragmentable(in) && !in->split;
	uint64_t n, h, other;
	int rc;

	if (in->zplanned)
		return in->shared;
	in->zplanned = 1;
	if ((rc = hash_file(z, in)))
		return rc;
	in = mk_ino(m, idx);
	h = in->hash ^ (in->size * 0x9e3779b97f4a7c15ull);
	if (dedupable) {
		struct zdup_key k = { z, in, 0 };

		if (mk_map_find(&z->dedup, h, zdup_eq, &k, &other)) {
			struct mk_inode *o = mk_ino(m, (uint32_t)other);

			in->data_ref = o->data_ref;
			in->data_count = o->data_count;
			in->frag_ref = o->frag_ref;
			in->frag_off = o->frag_off;
			in->shared = 1;
			m->stats.dedup_files++;
			m->stats.dedup_bytes += in->size;
			return 1;
		}
		if (k.err)
			return k.err;
		if (mk_map_put(&z->dedup, h, idx))
			return mk_err(m, -ENOMEM, "out of memory");
	}
	n = (own_len(z, in) + z->cs - 1) >> z->log2;
	in->data_ref = z->table.n;
	in->data_count = n;
	for (uint64_t j = 0; j < n; j++) {
		uint64_t c, lo = j << z->log2;
		uint64_t hi = lo + z->cs < own_len(z, in) ? lo + z->cs : own_len(z, in);

		if ((rc = add_chunk(z, &c)))
			return rc;
		z->total += hi - lo;
	}
	in = mk_ino(m, idx);
	if (in->size > own_len(z, in))
		z->total += in->size - own_len(z, in);
	return 0;
}

/* Jobs for file chunks [j0, j1) not placed yet. */
static int place_chunks(struct mk_zplan *z, uint32_t idx, uint64_t j0, uint64_t j1)
{
	struct mk_inode *in = mk_ino(z->m, idx);

	for (uint64_t j = j0; j < j1 && j < in->data_count; j++) {
		uint64_t c = in->data_ref + j;
		int rc;

		if (*MK_AT(&z->placed, uint8_t, c))
			continue;
		rc = add_job(z, idx, (uint32_t)j, c);
		if (rc)
			return rc;
		in = mk_ino(z->m, idx);
	}
	return 0;
}

/* A whole file: its own chunks, then its tail. */
static int place_file(struct mk_zplan *z, uint32_t idx)
{
	int rc = plan_file(z, idx);

	if (rc)
		return rc < 0 ? rc : 0;
	rc = place_chunks(z, idx, 0, UINT64_MAX);
	return rc ? rc : add_tail(z, idx);
}

static int plan(struct mk_zplan *z, const struct mk_vec *hot, const struct mk_vec *cold)
{
	struct cairn_mkfs *m = z->m;
	int rc = 0;

	for (uint64_t i = 0; !rc && i < hot->n; i++) {
		struct mk_hot *h = MK_AT(hot, struct mk_hot, i);
		struct mk_ext *e;

		if (h->ext == MK_HOT_WHOLE) {
			if (!mk_zplan_skips(mk_ino(m, h->idx)))
				rc = place_file(z, h->idx);
			continue;
		}
		rc = plan_file(z, h->idx);
		if (rc)
			break;
		e = MK_AT(&m->exts, struct mk_ext, h->ext);
		rc = place_chunks(z, h->idx, e->file_off >> z->log2,
				  (e->file_off + e->len + z->cs - 1) >> z->log2);
	}
	close_frag(z);
	z->hot_jobs = z->jobs.n;
	for (uint64_t i = 0; !rc && i < cold->n; i++)
		if (!mk_zplan_skips(mk_ino(m, *MK_AT(cold, uint32_t, i))))
			rc = place_file(z, *MK_AT(cold, uint32_t, i));
	/* Split files: the chunks their hot pieces did not place. */
	for (uint64_t i = 0; !rc && i < hot->n; i++) {
		struct mk_hot *h = MK_AT(hot, struct mk_hot, i);

		if (h->ext != MK_HOT_WHOLE)
			rc = place_chunks(z, h->idx, 0, UINT64_MAX);
	}
	return rc;
}

/* Every planned file becomes CHUNKED (split files lose their extents). */
static void mark_chunked(struct mk_zplan *z, const struct mk_vec *hot, const struct mk_vec *cold)
{
	for (uint64_t i = 0; i < hot->n + cold->n; i++) {
		uint32_t idx = i < hot->n ? MK_AT(hot, struct mk_hot, i)->idx
					  : *MK_AT(cold, uint32_t, i - hot->n);
		struct mk_inode *in = mk_ino(z->m, idx);

		if (!mk_zplan_skips(in))
			in->flags = (in->flags & ~CAIRN_IF_EXTENTS) | CAIRN_IF_CHUNKED;
	}
}

int mk_zplan_new(struct cairn_mkfs *m, const struct mk_vec *hot, const struct mk_vec *cold,
		 struct mk_zplan **out)
{
	struct mk_zplan *z = calloc(1, sizeof(*z));
	int rc;

	if (!z)
		return mk_err(m, -ENOMEM, "out of memory");
	z->m = m;
	z->log2 = m->o.chunk_log2 ? m->o.chunk_log2 : CAIRN_MKFS_CHUNK_LOG2_DEFAULT;
	z->cs = 1ull << z->log2;
	z->codec = m->o.codec;
	z->level = m->o.level;
	z->hot_codec = m->o.set_hot_codec ? m->o.hot_codec : z->codec;
	z->hot_level = m->o.set_hot_codec ? m->o.hot_level : z->level;
	mk_vec_init(&z->jobs, sizeof(struct zjob));
	mk_vec_init(&z->pieces, sizeof(struct zpiece));
	mk_vec_init(&z->frags, sizeof(struct zfrag));
	mk_vec_init(&z->table, sizeof(struct cairn_disk_chunk));
	mk_vec_init(&z->placed, 1);
	z->buf = malloc(ZBUF);
	z->buf2 = malloc(ZBUF);
	rc = z->buf && z->buf2 ? plan(z, hot, cold) : mk_err(m, -ENOMEM, "out of memory");
	free(z->buf);
	free(z->buf2);
	z->buf = z->buf2 = NULL;
	mk_map_free(&z->dedup);
	if (rc) {
		mk_zplan_free(z);
		return rc;
	}
	mark_chunked(z, hot, cold);
	*out = z;
	return 0;
}

void mk_zplan_free(struct mk_zplan *z)
{
	if (!z)
		return;
	mk_vec_free(&z->jobs);
	mk_vec_free(&z->pieces);
	mk_vec_free(&z->frags);
	mk_vec_free(&z->table);
	mk_vec_free(&z->placed);
	mk_map_free(&z->dedup);
	free(z);
}

uint64_t mk_zplan_chunks(const struct mk_zplan *z)
{
	return z->table.n;
}

const struct cairn_disk_chunk *mk_zplan_table(const struct mk_zplan *z)
{
	return z->table.p;
}

/* ---- compressing ---- */

static int default_level(unsigned codec)
{
	switch (codec) {
	case CAIRN_MKFS_LZ4HC: return LZ4HC_CLEVEL_DEFAULT;
	case CAIRN_MKFS_ZSTD: return ZSTD_CLEVEL_DEFAULT;
	default: return 0;
	}
}

static int level_or_default(unsigned codec, int level)
{
	return level == CAIRN_MKFS_LEVEL_DEFAULT ? default_level(codec) : level;
}

static int level_of(const struct mk_zplan *z)
{
	return level_or_default(z->codec, z->level);
}

/* The on-disk codec of chunks compressed by codec (lz4hc writes LZ4 blocks). */
static uint32_t disk_codec(unsigned codec)
{
	return codec == CAIRN_MKFS_ZSTD ? CAIRN_CODEC_ZSTD : CAIRN_CODEC_LZ4;
}

/* One batch slot: the job's stored bytes and codec once compressed. */
struct zslot {
	char *out;
	uint32_t len, ulen, codec;
	int rc;
	char err[256];
};

/* A worker's own buffers and codec state. */
struct zworker {
	struct mk_zplan *z;
	char *in;                 /* chunk size */
	ZSTD_CCtx *zc;
	void *hc;                 /* LZ4_streamHC_t state */
};

struct zbatch {
	struct mk_zplan *z;
	uint64_t first, n;
	struct zslot *slots;
	atomic_uint_fast64_t next;
};

static int slot_err(struct zslot *s, int rc, const char *path, const char *what)
{
	snprintf(s->err, sizeof(s->err), "%s: %s", path, what);
	return s->rc = rc;
}

/* pread of exactly n bytes; reports into the slot (workers may not touch m). */
static int job_read(struct zslot *s, const char *path, char *p, size_t n, uint64_t off)
{
	int fd = mk_open_noatime(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return slot_err(s, -errno, path, strerror(errno));
	while (n) {
		ssize_t r = pread(fd, p, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r < 0 ? errno : EIO;

			close(fd);
			return slot_err(s, -e, path, r < 0 ? strerror(e) : "file shrank while reading");
		}
		p += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	close(fd);
	return 0;
}

/* The job's logical bytes into w->in; returns their length or a negative errno. */
static int64_t job_input(struct zworker *w, const struct zjob *jb, struct zslot *s, int *raw)
{
	struct mk_zplan *z = w->z;
	struct cairn_mkfs *m = z->m;

	*raw = 0;
	if (jb->idx != MK_NONE) {
		struct mk_inode *in = mk_ino(m, jb->idx);
		uint64_t lo = (uint64_t)jb->j << z->log2, own = own_len(z, in);
		uint64_t n = own - lo < z->cs ? own - lo : z->cs;

		*raw = in->raw;
		if (job_read(s, mk_str(m, in->str), w->in, (size_t)n, lo))
			return s->rc;
		return (int64_t)n;
	}
	struct zfrag *f = MK_AT(&z->frags, struct zfrag, jb->j);
	uint64_t at = 0;

	for (uint64_t i = 0; i < f->n; i++) {
		struct zpiece *p = MK_AT(&z->pieces, struct zpiece, f->first + i);
		struct mk_inode *in = mk_ino(m, p->idx);
		int rc = job_read(s, mk_str(m, in->str), w->in + at, p->len, p->src_off);

		if (rc)
			return rc;
		at += p->len;
	}
	return (int64_t)at;
}

static int all_zero(const char *p, size_t n)
{
	static const char zero[4096];

	for (size_t k; n; p += k, n -= k) {
		k = n < sizeof(zero) ? n : sizeof(zero);
		if (memcmp(p, zero, k))
			return 0;
	}
	return 1;
}

static size_t out_bound(const struct mk_zplan *z)
{
	size_t a = ZSTD_compressBound((size_t)z->cs), b = (size_t)LZ4_compressBound((int)z->cs);

	return a > b ? a : b;
}

/* Compresses w->in into s->out with codec at level; 0 when it did not pay
 * (stored raw; CAIRN_MKFS_NONE always). */
static size_t compress(struct zworker *w, struct zslot *s, size_t n, unsigned codec, int level)
{
	size_t cap = out_bound(w->z), got = 0;

	switch (codec) {
	case CAIRN_MKFS_ZSTD: {
		size_t r = ZSTD_compressCCtx(w->zc, s->out, cap, w->in, n, level);

		got = ZSTD_isError(r) ? 0 : r;
		break;
	}
	case CAIRN_MKFS_LZ4: {
		int r = LZ4_compress_default(w->in, s->out, (int)n, (int)cap);

		got = r > 0 ? (size_t)r : 0;
		break;
	}
	case CAIRN_MKFS_LZ4HC: {
		int r = LZ4_compress_HC_extStateHC(w->hc, w->in, s->out, (int)n, (int)cap, level);

		got = r > 0 ? (size_t)r : 0;
		break;
	}
	}
	return got && got + n / 32 < n ? got : 0;
}

/* hot: the job is one of the hot prefix's (stored with the hot codec). */
static void run_job(struct zworker *w, const struct zjob *jb, struct zslot *s, int hot)
{
	const struct mk_zplan *z = w->z;
	unsigned codec = hot ? z->hot_codec : z->codec;
	int raw;
	int64_t n = job_input(w, jb, s, &raw);
	size_t c;

	if (n < 0)
		return;
	s->ulen = (uint32_t)n;
	if (all_zero(w->in, (size_t)n)) {
		s->codec = CAIRN_CODEC_ZERO;
		s->len = 0;
		return;
	}
	c = raw ? 0 : compress(w, s, (size_t)n, codec,
			       hot ? level_or_default(codec, z->hot_level) : level_of(z));
	if (c) {
		s->codec = disk_codec(codec);
		s->len = (uint32_t)c;
	} else {
		s->codec = CAIRN_CODEC_RAW;
		s->len = s->ulen;
		memcpy(s->out, w->in, (size_t)n);
	}
}

static void *worker_main(void *arg)
{
	struct zworker *w = ((void **)arg)[0];
	struct zbatch *b = ((void **)arg)[1];
	uint64_t k;

	while ((k = atomic_fetch_add(&b->next, 1)) < b->n)
		run_job(w, job_at(b->z, b->first + k), &b->slots[k],
			b->first + k < b->z->hot_jobs);
	return NULL;
}

static int worker_init(struct mk_zplan *z, struct zworker *w)
{
	int zstd = z->codec == CAIRN_MKFS_ZSTD || z->hot_codec == CAIRN_MKFS_ZSTD;
	int hc = z->codec == CAIRN_MKFS_LZ4HC || z->hot_codec == CAIRN_MKFS_LZ4HC;

	memset(w, 0, sizeof(*w));
	w->z = z;
	w->in = malloc((size_t)z->cs);
	if (zstd)
		w->zc = ZSTD_createCCtx();
	if (hc)
		w->hc = malloc((size_t)LZ4_sizeofStateHC());
	return w->in && (!zstd || w->zc) && (!hc || w->hc) ? 0 : -ENOMEM;
}

static void worker_fini(struct zworker *w)
{
	free(w->in);
	ZSTD_freeCCtx(w->zc);
	free(w->hc);
}

static unsigned thread_count(const struct cairn_mkfs *m)
{
	long n = m->o.threads ? (long)m->o.threads : sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 256 ? 256 : (unsigned)n;
}

/* Runs one batch on `nt` workers (the calling thread is the first). */
static void run_batch(struct zworker *ws, unsigned nt, struct zbatch *b)
{
	pthread_t tid[256];
	void *args[256][2];
	unsigned started = 0;

	atomic_store(&b->next, 0);
	for (unsigned t = 1; t < nt && b->n > 1; t++) {
		args[t][0] = &ws[t];
		args[t][1] = b;
		if (util_thread_create(&tid[t], worker_main, args[t]))
			break; /* the others do its share */
		started = t;
	}
	args[0][0] = &ws[0];
	args[0][1] = b;
	worker_main(args[0]);
	for (unsigned t = 1; t <= started; t++)
		pthread_join(tid[t], NULL);
}

static void progress(struct mk_zplan *z, uint64_t n)
{
	struct cairn_mkfs *m = z->m;

	z->done += n;
	if (m->o.progress && (z->done - z->reported >= PROGRESS_STEP || z->done == z->total)) {
		z->reported = z->done;
		m->o.progress(m->o.ctx, z->done, z->total);
	}
}

/* Writes a finished batch at *cursor, in job order, and fills the table. */
static int store_batch(struct mk_zplan *z, struct zbatch *b, int fd, const char *name,
		       uint64_t *cursor)
{
	for (uint64_t k = 0; k < b->n; k++) {
		struct zslot *s = &b->slots[k];
		struct zjob *jb = job_at(z, b->first + k);
		uint64_t off = s->codec == CAIRN_CODEC_ZERO ? 0 : *cursor;
		int rc;

		if (s->rc)
			return mk_err(z->m, s->rc, "%s", s->err);
		if (s->len && (rc = mk_pwrite_full(fd, s->out, s->len, off)))
			return mk_err(z->m, rc, "%s: writing the image: %s", name, strerror(-rc));
		*chunk_rec(z, jb->chunk) = (struct cairn_disk_chunk){
			cairn_le64(off), cairn_le32(s->len), cairn_le32(s->ulen | s->codec << 24) };
		*cursor += s->len;
		z->stored += s->len;
		z->logical += s->ulen;
		if (b->first + k < z->hot_jobs && s->len) { /* a zero chunk is not stored */
			z->hot_stored += s->len;
			z->hot_logical += s->ulen;
		}
		z->raw_chunks += s->codec == CAIRN_CODEC_RAW;
		progress(z, s->ulen);
	}
	return 0;
}

int mk_zplan_write(struct mk_zplan *z, int fd, const char *name, uint64_t data_off,
		   uint64_t *end, uint64_t *hot_len)
{
	unsigned nt = thread_count(z->m);
	uint64_t per = (uint64_t)nt * BATCH_PER_THREAD, cursor = data_off;
	struct zworker *ws = calloc(nt, sizeof(*ws));
	struct zslot *slots = calloc((size_t)per, sizeof(*slots));
	struct zbatch b = { .z = z, .slots = slots };
	int rc = ws && slots ? 0 : -ENOMEM;

	for (unsigned t = 0; !rc && t < nt; t++)
		rc = worker_init(z, &ws[t]);
	for (uint64_t k = 0; !rc && k < per; k++)
		if (!(slots[k].out = malloc(out_bound(z))))
			rc = -ENOMEM;
	if (rc)
		rc = mk_err(z->m, rc, "out of memory");
	*hot_len = 0;
	/* The hot jobs and the others go in separate batches, so the prefix ends
	 * where the hot jobs do. */
	for (uint64_t i = 0; !rc && i < z->jobs.n; i += b.n) {
		uint64_t stop = i < z->hot_jobs ? z->hot_jobs : z->jobs.n;

		b.first = i;
		b.n = stop - i < per ? stop - i : per;
		for (uint64_t k = 0; k < b.n; k++)
			slots[k].rc = 0;
		run_batch(ws, nt, &b);
		rc = store_batch(z, &b, fd, name, &cursor);
		if (i + b.n == z->hot_jobs)
			*hot_len = cursor - data_off;
	}
	if (!rc && z->m->o.progress && z->reported != z->done)
		z->m->o.progress(z->m->o.ctx, z->done, z->total);
	for (unsigned t = 0; ws && t < nt; t++)
		worker_fini(&ws[t]);
	for (uint64_t k = 0; slots && k < per; k++)
		free(slots[k].out);
	free(ws);
	free(slots);
	z->m->stats.chunks = z->table.n;
	z->m->stats.fragments = z->frags.n;
	z->m->stats.raw_chunks = z->raw_chunks;
	z->m->stats.stored_bytes = z->stored;
	*end = cursor;
	return rc;
}

void mk_zplan_super(const struct mk_zplan *z, uint64_t chunk_off,
		    struct cairn_disk_chunked_super *s)
{
	memset(s, 0, sizeof(*s));
	s->chunk_log2 = cairn_le32(z->log2);
	s->codec = cairn_le32(disk_codec(z->codec));
	s->level = cairn_le32(z->codec == CAIRN_MKFS_LZ4 ? 0 : (uint32_t)level_of(z));
	s->chunk_off = cairn_le64(chunk_off);
	s->chunk_count = cairn_le64(z->table.n);
	s->frag_count = cairn_le64(z->frags.n);
	s->stored_bytes = cairn_le64(z->stored);
	s->logical_bytes = cairn_le64(z->logical);
	if (z->hot_logical) {
		s->hot_codec = cairn_le32(z->hot_codec == CAIRN_MKFS_NONE ? CAIRN_CODEC_RAW :
					  disk_codec(z->hot_codec));
		s->hot_level = cairn_le32(z->hot_codec == CAIRN_MKFS_LZ4 ? 0 :
					  (uint32_t)level_or_default(z->hot_codec, z->hot_level));
		s->hot_stored_bytes = cairn_le64(z->hot_stored);
		s->hot_logical_bytes = cairn_le64(z->hot_logical);
	}
	s->hash = cairn_le64(cairn_format_chunked_csum(s));
}

int cairn_mkfs_parse_codec(const char *s, unsigned *codec, int *level)
{
	static const char *const names[] = { "none", "lz4", "lz4hc", "zstd" };
	const char *comma = strchr(s, ',');
	size_t n = comma ? (size_t)(comma - s) : strlen(s);
	int lo, hi;

	for (*codec = 0; *codec < 4; (*codec)++)
		if (strlen(names[*codec]) == n && !strncmp(s, names[*codec], n))
			break;
	if (*codec == 4)
		return -EINVAL;
	*level = CAIRN_MKFS_LEVEL_DEFAULT;
	if (!comma)
		return 0;
	lo = *codec == CAIRN_MKFS_ZSTD ? 1 : *codec == CAIRN_MKFS_LZ4HC ? LZ4HC_CLEVEL_MIN : 1;
	hi = *codec == CAIRN_MKFS_ZSTD ? ZSTD_maxCLevel() : *codec == CAIRN_MKFS_LZ4HC
						? LZ4HC_CLEVEL_MAX : 0;
	char *end;
	long v = strtol(comma + 1, &end, 10);

	if (!comma[1] || *end || v < lo || v > hi)
		return -EINVAL;
	*level = (int)v;
	return 0;
}
