/* SPDX-License-Identifier: MIT */
/*
 * fsck: checks every structure of an image, not only the parts a lookup touches.
 * Order: block 0 padding, the checksum table against its hash, every metadata
 * block against the table, every inode, then a walk from the root that checks
 * each directory (sort order, names, types, parent links) and counts references,
 * so link counts and reachability can be checked at the end; with
 * CAIRN_FSCK_DATA, each regular file's content hash; with CAIRN_FSCK_DIGESTS, every
 * granule of the image against the digest table and the table against block 0.
 *
 * Memory: per inode, reference and subdirectory counts, its parent and link count
 * (so the walk loads no inode a second time) and a state byte, plus a queue of
 * directories, all bounded by inode_count, which the superblock check bounded by
 * the image.
 *
 * Threads (CAIRN_FSCK_THREADS): the passes over metadata blocks, chunks and
 * inodes are cut into fixed shards. Workers run the shards silently: they count
 * problems and name none, as the reader's reason for a corruption is one per
 * image. Then, in shard order, a clean shard's totals are merged and a shard with
 * any problem is run again on this thread, with the reports. One thread runs
 * every shard that way, so the findings and their order do not depend on the
 * thread count: a shard's report depends only on what came before it in order.
 * The digest scan runs beside the passes, which hold their reports until it is
 * done and its own are given; the walk runs on this thread (check_tree).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>
#include <xxhash.h>
#include <cairn/cache.h>
#include <cairn/error.h>
#include <cairn/verify.h>
#include "format/format_int.h"
#include "image_int.h"
#include "util/thread.h"

#define MAX_REPORTS 200 /* after this many problems only the count grows */
#ifdef CAIRN_FUZZING
/* Under ASan a block this large is mapped afresh on every malloc; keep the
 * fuzz build's buffer below that threshold (15 times more executions/s). */
#define CHUNK (64u << 10)
#else
#define CHUNK (1u << 20)
#endif

/* Sparse files larger than both of these bounds (and than RATIO times the image)
 * are not hashed; see check_content. */
#define FSCK_SPARSE_HASH_MIN   (64ull << 20)
#define FSCK_SPARSE_HASH_RATIO 16u

/* Shard sizes: a few milliseconds of work each, fixed, so that the shards (and
 * with them the findings) do not depend on the thread count. */
#define SHARD_BLOCKS 256u  /* metadata blocks (1 MiB) */
#define SHARD_CHUNKS 64u   /* compressed chunks (up to 64 MiB decompressed with --data) */
#define SHARD_INODES 4096u
#define MAX_THREADS  256u

/* state[] bits per inode */
#define ST_LOADED 1u  /* the inode loaded and passed its checks */
#define ST_QUEUED 2u  /* queued as a directory of the walk */
#define ST_DTYPE_SHIFT 4 /* bits 4..7: its DT_* type */

struct fsck {
	struct cairn_image *img;
	cairn_report_cb report;
	void *ctx;
	unsigned flags;
	long problems;
	unsigned threads;
	int silent;          /* a worker's run of a shard: counts problems, reports none */
	uint32_t *refs;      /* references from directory entries, per inode */
	uint32_t *subdirs;   /* subdirectories, per directory inode */
	uint32_t *parent;    /* per inode, from check_inodes */
	uint32_t *nlink;     /* per inode, from check_inodes */
	uint8_t *state;      /* per inode: ST_* */
	unsigned char *chunk; /* CHUNK bytes for hashing, allocated once per run (per worker) */
	uint64_t files, bytes;     /* regular files and their sizes (check_inodes) */
	uint64_t stored, logical;  /* chunk totals (check_chunks) */
	uint64_t hot_stored, hot_logical; /* of the chunks stored in the hot prefix */
	struct cairn_rchunk *chunks; /* per chunk (check_chunks); stored_len 0: none */
	uint64_t *queue, qlen;     /* directories of the walk, in walk order */
	char (*held)[256];   /* while the digest scan runs beside: the reports, for later */
	uint64_t whys[MAX_REPORTS]; /* hashes of the reader's reasons reported so far */
	unsigned nwhys;
	int lost_inodes;     /* some inode could not be loaded: totals cannot match */
	char buf[256];
};

/* One problem: counted, and reported (or held) while fewer than MAX_REPORTS were. */
static void tell(struct fsck *f, const char *msg)
{
	f->problems++;
	if (f->silent || !f->report || f->problems > MAX_REPORTS)
		return;
	if (f->held) {
		snprintf(f->held[f->problems - 1], sizeof(f->held[0]), "%s", msg);
		return;
	}
	f->report(f->ctx, msg);
	if (f->problems == MAX_REPORTS)
		f->report(f->ctx, "(further problems are counted, not listed)");
}

static void problem(struct fsck *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct fsck *f, const char *fmt, ...)
{
	va_list ap;

	if (f->silent || !f->report || f->problems >= MAX_REPORTS) {
		f->problems++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(f->buf, sizeof(f->buf), fmt, ap);
	va_end(ap);
	tell(f, f->buf);
}

/* True when the reader's reason `why` was reported before: one bad metadata
 * block fails every inode, entry and xattr it holds with the same reason, which
 * is one problem, printed once. Remembers the reason otherwise. */
static int seen_why(struct fsck *f, const char *why)
{
	uint64_t h = XXH3_64bits(why, strlen(why));

	for (unsigned i = 0; i < f->nwhys; i++)
		if (f->whys[i] == h)
			return 1;
	if (f->nwhys < MAX_REPORTS)
		f->whys[f->nwhys++] = h;
	return 0;
}

/* Lets the next corruption record its own reason. */
static void clear_why(struct cairn_image *img)
{
	pthread_mutex_lock(&img->why_lock);
	img->why[0] = '\0';
	atomic_store(&img->has_why, 0);
	pthread_mutex_unlock(&img->why_lock);
}

/* Reports a structure error with the reader's own reason when it gave one.
 * `what` may be f->buf, which problem() formats into: it is copied first. A
 * worker only counts it: the reason may be another thread's (run_pass). */
static void problem_rc(struct fsck *f, int rc, const char *what)
{
	char w[128];

	if (f->silent) {
		f->problems++;
		return;
	}
	snprintf(w, sizeof(w), "%s", what);
	if (rc == -CAIRN_ECORRUPT && f->img->why[0]) {
		/* The reader's reason often names the object already ("inode 7: bad
		 * mode"): say it once. */
		size_t n = strlen(w);
		int named = !strncmp(f->img->why, w, n) && f->img->why[n] == ':';

		if (!seen_why(f, f->img->why))
			problem(f, "%s%s%s", named ? "" : w, named ? "" : ": ", f->img->why);
	} else {
		problem(f, "%s: %s", w, rc == -CAIRN_ECORRUPT ? "corrupt" : cairn_strerror(rc));
	}
	clear_why(f->img);
}

/* One pass cut into shards [lo, hi) of `step` items: run() checks a shard into
 * f; merge() adds a worker's clean shard (its copy w) to f (NULL: nothing to add). */
struct pass {
	int (*run)(struct fsck *f, uint64_t lo, uint64_t hi);
	void (*merge)(struct fsck *f, const struct fsck *w);
	uint64_t lo, hi, step;
};

struct shard {
	struct fsck w;       /* the worker's copy of the run: silent, counters from 0 */
	uint64_t lo, hi;
	int rc;
};

struct pool {
	const struct pass *p;
	struct shard *s;
	uint64_t n;
	atomic_uint_fast64_t next;
};

static void *pass_worker(void *arg)
{
	struct pool *pl = arg;
	unsigned char *chunk = malloc(CHUNK);
	uint64_t i;

	while ((i = atomic_fetch_add(&pl->next, 1)) < pl->n) {
		struct shard *s = &pl->s[i];

		s->w.chunk = chunk;
		s->rc = chunk ? pl->p->run(&s->w, s->lo, s->hi) : -ENOMEM;
		s->w.chunk = NULL;
	}
	free(chunk);
	return NULL;
}

/* A clean shard of chunks or inodes: its totals. */
static void merge_counts(struct fsck *f, const struct fsck *w)
{
	f->files += w->files;
	f->bytes += w->bytes;
	f->stored += w->stored;
	f->logical += w->logical;
	f->hot_stored += w->hot_stored;
	f->hot_logical += w->hot_logical;
}

/* The shard's range [lo, hi) of the pass. */
static void shard_range(const struct pass *p, uint64_t i, uint64_t *lo, uint64_t *hi)
{
	*lo = p->lo + i * p->step;
	*hi = p->hi - *lo > p->step ? *lo + p->step : p->hi;
}

/* Every shard in order on this thread, reporting. The reason is cleared before
 * each, so a shard's report never depends on whether the one before it ran here. */
static int run_serial(struct fsck *f, const struct pass *p, uint64_t n)
{
	uint64_t lo, hi;
	int rc;

	for (uint64_t i = 0; i < n; i++) {
		shard_range(p, i, &lo, &hi);
		clear_why(f->img);
		rc = p->run(f, lo, hi);
		if (rc)
			return rc;
	}
	return 0;
}

/* The shards on the workers, then the merge in order (see the top of the file). */
static int run_parallel(struct fsck *f, const struct pass *p, struct shard *s, uint64_t n)
{
	pthread_t tid[MAX_THREADS];
	struct pool pl = { .p = p, .s = s, .n = n };
	unsigned nt = f->threads < n ? f->threads : (unsigned)n, started = 0;
	int rc = 0;

	for (uint64_t i = 0; i < n; i++) {
		s[i].w = *f;
		s[i].w.silent = 1;
		s[i].w.problems = 0;
		s[i].w.files = s[i].w.bytes = s[i].w.stored = s[i].w.logical = 0;
		shard_range(p, i, &s[i].lo, &s[i].hi);
	}
	atomic_init(&pl.next, 0);
	for (unsigned t = 1; t < nt; t++) {
		if (util_thread_create(&tid[t], pass_worker, &pl))
			break; /* the others do its share */
		started = t;
	}
	pass_worker(&pl);
	for (unsigned t = 1; t <= started; t++)
		pthread_join(tid[t], NULL);
	for (uint64_t i = 0; i < n && !rc; i++) {
		if (!s[i].rc && !s[i].w.problems) {
			if (p->merge)
				p->merge(f, &s[i].w);
			continue;
		}
		clear_why(f->img);
		rc = p->run(f, s[i].lo, s[i].hi);
	}
	return rc;
}

static int run_pass(struct fsck *f, const struct pass *p)
{
	uint64_t n = p->hi > p->lo ? (p->hi - p->lo - 1) / p->step + 1 : 0;
	struct shard *s;
	int rc;

	if (f->threads <= 1 || n <= 1)
		return run_serial(f, p, n);
	s = malloc((size_t)n * sizeof(*s));
	if (!s)
		return run_serial(f, p, n); /* the same findings, on one thread */
	rc = run_parallel(f, p, s, n);
	free(s);
	return rc;
}

/* A byte of block 0 that a feature of this image assigns (its record). */
static int block0_assigned(const struct cairn_image *img, size_t off)
{
	if ((img->incompat & CAIRN_INCOMPAT_CHUNKED) && off >= CAIRN_CHUNKED_SUPER_OFF &&
	    off < CAIRN_CHUNKED_SUPER_OFF + CAIRN_CHUNKED_SUPER_SIZE)
		return 1; /* the compression record, checked at open */
	if ((img->incompat & CAIRN_INCOMPAT_META_Z) && off >= CAIRN_META_Z_SUPER_OFF &&
	    off < CAIRN_META_Z_SUPER_OFF + CAIRN_META_Z_SUPER_SIZE)
		return 1; /* the metadata compression record, checked at open */
	return (img->compat & CAIRN_COMPAT_VERITY) && off >= CAIRN_VERITY_SUPER_OFF &&
	       off < CAIRN_VERITY_SUPER_OFF + sizeof(struct cairn_disk_verity_super);
}

static int check_block0(struct fsck *f)
{
	unsigned char b[CAIRN_BLOCK_SIZE - CAIRN_SUPER_SIZE];
	int rc = cairn_image_dev_read(f->img, b, sizeof(b), CAIRN_SUPER_SIZE, NULL);

	if (rc)
		return rc;
	for (size_t i = 0; i < sizeof(b); i++)
		if (b[i] && !block0_assigned(f->img, i + CAIRN_SUPER_SIZE)) {
			problem(f, "superblock block: byte %zu after the superblock is not zero",
				i + CAIRN_SUPER_SIZE);
			break;
		}
	return 0;
}

static int check_blocks(struct fsck *f, uint64_t lo, uint64_t hi)
{
	for (uint64_t b = lo; b < hi; b++) {
		int rc = cairn_image_verify_block(f->img, b);

		if (rc == -CAIRN_ECORRUPT)
			problem_rc(f, rc, "metadata");
		else if (rc)
			return rc;
	}
	return 0;
}

/* The checksum table against its hash, then every metadata block against it.
 * The table hash is cairn_format_table_csum() streamed through CHUNK: the table
 * is not held whole (8 bytes per metadata block). */
static int check_checksums(struct fsck *f)
{
	struct cairn_image *img = f->img;
	uint64_t len = img->meta_blocks * 8, done = 0;
	XXH3_state_t *st = XXH3_createState();
	unsigned char *buf = f->chunk;
	int rc = 0;

	if (!st) {
		rc = -ENOMEM;
		goto out;
	}
	XXH3_64bits_reset(st);
	while (done < len) {
		size_t n = len - done < CHUNK ? (size_t)(len - done) : CHUNK;

		rc = cairn_image_dev_read(img, buf, n, img->csum_off + done, NULL);
		if (rc)
			goto out;
		XXH3_64bits_update(st, buf, n);
		done += n;
	}
	if (XXH3_64bits_digest(st) != cairn_le64(img->raw.csum_table_hash))
		problem(f, "checksum table: hash mismatch");
	rc = cairn_image_metaz_check(img);
	if (rc == -CAIRN_ECORRUPT)
		problem_rc(f, rc, "metadata");
	else if (rc)
		goto out;
	rc = run_pass(f, &(struct pass){ check_blocks, NULL, 0, img->meta_blocks, SHARD_BLOCKS });
out:
	XXH3_freeState(st);
	return rc;
}

static int check_xattrs(struct fsck *f, cairn_ino_t ino, const struct cairn_rinode *r)
{
	char prev[CAIRN_XATTR_NAME_MAX], name[CAIRN_XATTR_NAME_MAX];
	size_t prev_len = 0;
	struct cairn_rxattr x;
	int rc;

	for (uint64_t i = 0; i < r->xattr_count; i++) {
		rc = cairn_image_xattr_load(f->img, r->xattr_ref + i, &x);
		if (!rc)
			rc = cairn_image_meta_read(f->img, name, x.name_len,
						   f->img->blob_off + x.name_ref);
		if (rc == -CAIRN_ECORRUPT) {
			snprintf(f->buf, sizeof(f->buf), "inode %llu xattrs", (unsigned long long)ino);
			problem_rc(f, rc, f->buf);
			return 0;
		}
		if (rc)
			return rc;
		if (memchr(name, '\0', x.name_len))
			problem(f, "inode %llu: xattr name contains NUL", (unsigned long long)ino);
		if (i) {
			int c = memcmp(prev, name, prev_len < x.name_len ? prev_len : x.name_len);

			if (c > 0 || (c == 0 && prev_len >= x.name_len))
				problem(f, "inode %llu: xattrs not sorted or duplicated",
					(unsigned long long)ino);
		}
		memcpy(prev, name, x.name_len);
		prev_len = x.name_len;
	}
	return 0;
}

static int check_extents(struct fsck *f, cairn_ino_t ino, const struct cairn_rinode *r)
{
	struct cairn_disk_extent x;
	uint64_t prev_end = 0;
	int rc;

	for (uint64_t i = 0; i < r->data_count; i++) {
		rc = cairn_image_extent_load(f->img, r->data_ref + i, r, &x);
		if (rc == -CAIRN_ECORRUPT) {
			snprintf(f->buf, sizeof(f->buf), "inode %llu extents", (unsigned long long)ino);
			problem_rc(f, rc, f->buf);
			return 0;
		}
		if (rc)
			return rc;
		if (i && x.file_off < prev_end)
			problem(f, "inode %llu: extents overlap or are unsorted",
				(unsigned long long)ino);
		prev_end = x.file_off + x.len;
	}
	return 0;
}

static int check_content(struct fsck *f, cairn_ino_t ino, const struct cairn_rinode *r)
{
	XXH3_state_t *st;
	unsigned char *buf;
	uint64_t off = 0;
	int rc = 0;

	if (!(f->flags & CAIRN_FSCK_DATA) || !(f->img->compat & CAIRN_COMPAT_FILE_HASH))
		return 0;
	/* Hashing costs the logical size. A sparse file may claim far more than
	 * the image holds (2^62 bytes of holes from a 20 KiB image kept fsck busy
	 * for ever: fuzz/regressions/image/fsck-hash-huge-sparse): past what
	 * the image can justify, the holes carry no data and only the extents
	 * are checked (check_extents); the same for zero chunks, 16 bytes of
	 * metadata each for up to 1 MiB (check_chunks). */
	if ((r->flags & (CAIRN_IF_EXTENTS | CAIRN_IF_CHUNKED)) && r->size > FSCK_SPARSE_HASH_MIN &&
	    r->size / FSCK_SPARSE_HASH_RATIO > f->img->image_size)
		return 0;
	st = XXH3_createState();
	buf = f->chunk;
	if (!st) {
		rc = -ENOMEM;
		goto out;
	}
	XXH3_64bits_reset(st);
	while (off < r->size) {
		ssize_t n = cairn_image_read(f->img, ino, buf, CHUNK, off);

		if (n == -CAIRN_ECORRUPT) {
			snprintf(f->buf, sizeof(f->buf), "inode %llu data", (unsigned long long)ino);
			problem_rc(f, (int)n, f->buf);
			goto out;
		}
		if (n <= 0) {
			rc = n < 0 ? (int)n : -EIO;
			goto out;
		}
		XXH3_64bits_update(st, buf, (size_t)n);
		off += (uint64_t)n;
	}
	if (XXH3_64bits_digest(st) != r->content_hash)
		problem(f, "inode %llu: content hash mismatch", (unsigned long long)ino);
out:
	XXH3_freeState(st);
	return rc;
}

static int by_disk(const void *a, const void *b)
{
	const struct cairn_rchunk *x = a, *y = b;

	return x->disk_off < y->disk_off ? -1 : x->disk_off > y->disk_off;
}

/* Chunks [lo, hi): each record, and with CAIRN_FSCK_DATA that it decompresses
 * to its length. */
static int check_chunk_range(struct fsck *f, uint64_t lo, uint64_t hi)
{
	unsigned char *buf = NULL;
	int rc = 0;

	if ((f->flags & CAIRN_FSCK_DATA) && !(buf = malloc((size_t)f->img->chunk_size)))
		return -ENOMEM; /* <= 1 MiB: checked at open */
	for (uint64_t i = lo; i < hi; i++) {
		struct cairn_rchunk *c = &f->chunks[i];

		rc = cairn_image_chunk_load(f->img, i, c);
		if (!rc && buf)
			rc = cairn_image_chunk_decode(f->img, i, c, buf);
		if (rc == -CAIRN_ECORRUPT) {
			snprintf(f->buf, sizeof(f->buf), "chunk %llu", (unsigned long long)i);
			problem_rc(f, rc, f->buf);
			c->stored_len = 0;
			rc = 0;
			continue;
		}
		if (rc)
			break;
		f->stored += c->stored_len;
		f->logical += c->ulen;
		if (c->stored_len && c->disk_off >= f->img->hot_off &&
		    c->disk_off - f->img->hot_off < f->img->hot_len) {
			f->hot_stored += c->stored_len;
			f->hot_logical += c->ulen;
		}
	}
	free(buf);
	return rc;
}

/* Every chunk of a compressed image: its record, that it decompresses to its
 * length, and that no two chunks' stored bytes overlap. The records are held
 * for the overlap check: 24 bytes per chunk, bounded by the metadata size. */
static int check_chunks(struct fsck *f)
{
	struct cairn_image *img = f->img;
	struct cairn_rchunk *v;
	uint64_t n = 0;
	int rc;

	if (!(img->incompat & CAIRN_INCOMPAT_CHUNKED))
		return 0;
	v = malloc((size_t)(img->chunk_count ? img->chunk_count : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	f->chunks = v;
	rc = run_pass(f, &(struct pass){ check_chunk_range, merge_counts, 0, img->chunk_count,
					SHARD_CHUNKS });
	f->chunks = NULL;
	if (!rc && (f->stored != cairn_le64(img->zraw.stored_bytes) ||
		    f->logical != cairn_le64(img->zraw.logical_bytes)))
		problem(f, "compression record: %llu stored / %llu logical bytes, chunks hold "
			"%llu / %llu", (unsigned long long)cairn_le64(img->zraw.stored_bytes),
			(unsigned long long)cairn_le64(img->zraw.logical_bytes),
			(unsigned long long)f->stored, (unsigned long long)f->logical);
	/* Images written before the hot totals existed have them 0. */
	if (!rc && img->zraw.hot_logical_bytes &&
	    (f->hot_stored != cairn_le64(img->zraw.hot_stored_bytes) ||
	     f->hot_logical != cairn_le64(img->zraw.hot_logical_bytes)))
		problem(f, "compression record: %llu stored / %llu logical bytes in the hot prefix, "
			"its chunks hold %llu / %llu",
			(unsigned long long)cairn_le64(img->zraw.hot_stored_bytes),
			(unsigned long long)cairn_le64(img->zraw.hot_logical_bytes),
			(unsigned long long)f->hot_stored, (unsigned long long)f->hot_logical);
	for (uint64_t i = 0; !rc && i < img->chunk_count; i++)
		if (v[i].stored_len)
			v[n++] = v[i];
	qsort(v, (size_t)n, sizeof(*v), by_disk);
	for (uint64_t i = 1; !rc && i < n; i++)
		if (v[i].disk_off < v[i - 1].disk_off + v[i - 1].stored_len) {
			problem(f, "chunks at %llu and %llu overlap",
				(unsigned long long)v[i - 1].disk_off,
				(unsigned long long)v[i].disk_off);
			break;
		}
	free(v);
	return rc;
}

/* Inodes [lo, hi) on their own: record bounds, xattrs, extents, symlink text,
 * data. What the walk needs of each is kept, so it loads none again. */
static int check_inode_range(struct fsck *f, uint64_t lo, uint64_t hi)
{
	struct cairn_image *img = f->img;
	char target[CAIRN_SYMLINK_MAX];
	struct cairn_rinode r;
	int rc;

	for (cairn_ino_t ino = lo ? lo : 1; ino < hi; ino++) {
		rc = cairn_image_inode_load(img, ino, &r);
		if (rc == -CAIRN_ECORRUPT) {
			snprintf(f->buf, sizeof(f->buf), "inode %llu", (unsigned long long)ino);
			problem_rc(f, rc, f->buf);
			f->lost_inodes = 1;
			continue;
		}
		if (rc)
			return rc;
		f->state[ino] = (uint8_t)(ST_LOADED | cairn_format_dtype(r.mode) << ST_DTYPE_SHIFT);
		f->parent[ino] = r.parent;
		f->nlink[ino] = r.nlink;
		rc = check_xattrs(f, ino, &r);
		if (!rc && S_ISREG(r.mode)) {
			f->files++;
			f->bytes += r.size;
			if (r.flags & CAIRN_IF_EXTENTS)
				rc = check_extents(f, ino, &r);
			if (!rc)
				rc = check_content(f, ino, &r);
		} else if (!rc && S_ISLNK(r.mode)) {
			ssize_t n = cairn_image_readlink(img, ino, target, sizeof(target));

			if (n == -CAIRN_ECORRUPT) {
				snprintf(f->buf, sizeof(f->buf), "inode %llu", (unsigned long long)ino);
				problem_rc(f, (int)n, f->buf);
			} else if (n < 0) {
				rc = (int)n;
			}
		}
		if (rc)
			return rc;
	}
	return 0;
}

static int check_inodes(struct fsck *f)
{
	struct cairn_image *img = f->img;
	int rc = run_pass(f, &(struct pass){ check_inode_range, merge_counts, 1, img->inode_count,
					    SHARD_INODES });

	if (rc || f->lost_inodes)
		return rc; /* the totals below would only repeat that */
	if (f->files != cairn_le64(img->raw.file_count))
		problem(f, "superblock: file count %llu, but %llu regular files found",
			(unsigned long long)cairn_le64(img->raw.file_count),
			(unsigned long long)f->files);
	if (f->bytes != cairn_le64(img->raw.data_bytes))
		problem(f, "superblock: data bytes %llu, but files hold %llu",
			(unsigned long long)cairn_le64(img->raw.data_bytes),
			(unsigned long long)f->bytes);
	return 0;
}

static unsigned dtype_of(const struct fsck *f, uint32_t ino)
{
	return f->state[ino] >> ST_DTYPE_SHIFT;
}

/* Subdirectory ino listed in dir: counted, and queued unless it was before. */
static void link_dir(struct fsck *f, cairn_ino_t dir, uint32_t ino, const char *name)
{
	f->subdirs[dir]++;
	if (f->state[ino] & ST_QUEUED) {
		problem(f, "directory %u ('%s') is linked more than once", ino, name);
		return;
	}
	f->state[ino] |= ST_QUEUED;
	f->queue[f->qlen++] = ino;
}

/* One directory: entries sorted and unique, types match, subdirectories point back. */
static int check_dir(struct fsck *f, cairn_ino_t dir)
{
	struct cairn_image *img = f->img;
	struct cairn_rdirent e;
	char prev[CAIRN_NAME_MAX + 1];
	size_t prev_len = 0;
	struct cairn_rinode r;
	unsigned long long d = dir;
	int rc = cairn_image_inode_load(img, dir, &r);

	if (rc)
		return rc == -CAIRN_ECORRUPT ? 0 : rc; /* already reported */
	for (uint64_t i = 0; i < r.data_count; i++) {
		rc = cairn_image_dirent_load(img, r.data_ref + i, &e);
		if (rc == -CAIRN_ECORRUPT) {
			snprintf(f->buf, sizeof(f->buf), "directory %llu entry %llu", d,
				 (unsigned long long)i);
			problem_rc(f, rc, f->buf);
			continue;
		}
		if (rc)
			return rc;
		if (i) {
			int cmp = memcmp(prev, e.name, prev_len < e.name_len ? prev_len : e.name_len);

			if (cmp > 0 || (cmp == 0 && prev_len >= e.name_len))
				problem(f, "directory %llu: entry '%s' out of order or duplicated", d,
					e.name);
		}
		memcpy(prev, e.name, e.name_len);
		prev_len = e.name_len;
		if (f->refs[e.ino] < UINT32_MAX)
			f->refs[e.ino]++;
		if (!(f->state[e.ino] & ST_LOADED))
			continue; /* the inode itself was reported */
		if (dtype_of(f, e.ino) != e.type)
			problem(f, "directory %llu: entry '%s' type %u does not match inode %u", d,
				e.name, e.type, e.ino);
		if (dtype_of(f, e.ino) != DT_DIR)
			continue;
		if (f->parent[e.ino] != dir)
			problem(f, "directory %u ('%s'): parent %u, but it is listed in %llu", e.ino,
				e.name, f->parent[e.ino], d);
		link_dir(f, dir, e.ino, e.name);
	}
	return 0;
}

/* Breadth-first from the root; each directory is queued at most once, so the
 * queue never holds more than inode_count entries and cycles end. On one thread:
 * two threads were slower (docs/bench/million.md), as nearly every entry's name
 * is read from the same few cached segments, whose locks they then share. */
static int check_tree(struct fsck *f)
{
	struct cairn_image *img = f->img;
	uint64_t head = 0;
	struct cairn_rinode r;
	int rc = 0;

	f->queue = malloc((size_t)img->inode_count * sizeof(uint64_t));
	f->qlen = 0;
	if (!f->queue)
		return -ENOMEM;
	if (!(f->state[img->root_ino] & ST_LOADED)) {
		problem(f, "root inode unusable");
		goto out;
	}
	rc = cairn_image_inode_load(img, img->root_ino, &r);
	if (rc)
		goto out;
	if (!S_ISDIR(r.mode)) {
		problem(f, "root inode is not a directory");
		goto out;
	}
	if (r.parent != img->root_ino)
		problem(f, "root directory: parent %u, not itself", r.parent);
	f->state[img->root_ino] |= ST_QUEUED;
	f->queue[f->qlen++] = img->root_ino;
	while (!rc && head < f->qlen)
		rc = check_dir(f, f->queue[head++]);
	for (cairn_ino_t ino = 1; !rc && ino < img->inode_count; ino++) {
		if (!(f->state[ino] & ST_LOADED))
			continue;
		if (ino != img->root_ino && f->refs[ino] == 0) {
			problem(f, "inode %llu is not reachable from the root", (unsigned long long)ino);
			continue;
		}
		if (dtype_of(f, ino) == DT_DIR) {
			if (f->nlink[ino] != 2 + f->subdirs[ino])
				problem(f, "directory %llu: link count %u, expected %u",
					(unsigned long long)ino, f->nlink[ino], 2 + f->subdirs[ino]);
		} else if (f->nlink[ino] != f->refs[ino]) {
			problem(f, "inode %llu: link count %u, but %u entries name it",
				(unsigned long long)ino, f->nlink[ino], f->refs[ino]);
		}
	}
out:
	free(f->queue);
	f->queue = NULL;
	return rc;
}

/* The digest scan, on this thread or (held set) on its own beside the others. */
struct digests {
	struct fsck *f;
	char (*held)[256];   /* its first MAX_REPORTS problems, reported before the rest */
	long problems;
	int rc;
	pthread_t tid;
};

static void digest_problem(void *ctx, const char *msg)
{
	struct digests *d = ctx;

	if (!d->held) {
		problem(d->f, "digests: %s", msg);
		return;
	}
	if (d->problems < MAX_REPORTS)
		snprintf(d->held[d->problems], sizeof(d->held[0]), "digests: %s", msg);
	d->problems++;
}

/* Every byte against the root digest (include/cairn/verify.h), read from the
 * device under the verify layer: through it a bad granule would only be EIO,
 * and the scan names it. */
static int check_digests(struct digests *d)
{
	struct cairn_bdev *dev = cairn_cache_bdev(d->f->img->cache);
	struct cairn_bdev *vd = cairn_bdev_verify_find(dev);
	uint8_t root[CAIRN_DIGEST_LEN];
	char msg[128];
	long n = cairn_verify_scan(vd ? vd->below : dev, root, digest_problem, d);

	if (n == -ENODATA || n == -EOPNOTSUPP) {
		snprintf(msg, sizeof(msg), "the verity record cannot be used: %s",
			 cairn_strerror((int)n));
		digest_problem(d, msg);
		return 0;
	}
	return n < 0 ? (int)n : 0;
}

static void *digest_main(void *arg)
{
	struct digests *d = arg;

	d->rc = check_digests(d);
	return NULL;
}

/* On more than one thread the scan (SHA-256 of the whole image) runs beside the
 * other checks, which hold their reports meanwhile. 1 when it was started. */
static int start_digests(struct fsck *f, struct digests *d)
{
	if (f->threads < 2)
		return 0;
	d->held = calloc(MAX_REPORTS, sizeof(d->held[0]));
	f->held = calloc(MAX_REPORTS, sizeof(f->held[0]));
	if (d->held && f->held && !util_thread_create(&d->tid, digest_main, d))
		return 1;
	free(d->held);
	free(f->held);
	d->held = f->held = NULL;
	return 0;
}

/* The scan's reports, then the held ones, as one thread makes them; when the scan
 * failed, the checks after it would not have run: theirs are dropped. */
static int finish_digests(struct fsck *f, struct digests *d)
{
	char (*mine)[256] = f->held;
	long n = f->problems;

	pthread_join(d->tid, NULL);
	f->held = NULL;
	f->problems = 0;
	for (long i = 0; i < d->problems; i++)
		tell(f, i < MAX_REPORTS ? d->held[i] : "");
	for (long i = 0; !d->rc && i < n; i++)
		tell(f, i < MAX_REPORTS ? mine[i] : "");
	free(mine);
	free(d->held);
	return d->rc;
}

/* CAIRN_FSCK_THREADS(n), or one per online CPU. */
static unsigned thread_count(unsigned flags)
{
	long n = (flags >> 8) & 0x1ffu;

	if (!n)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (unsigned)n;
}

long cairn_image_fsck(struct cairn_image *img, unsigned flags, cairn_report_cb report, void *ctx)
{
	struct fsck f = { .img = img, .report = report, .ctx = ctx, .flags = flags };
	struct digests d = { .f = &f };
	int rc, beside = 0;

	f.threads = thread_count(flags);
	f.refs = calloc((size_t)img->inode_count, sizeof(uint32_t));
	f.subdirs = calloc((size_t)img->inode_count, sizeof(uint32_t));
	f.parent = calloc((size_t)img->inode_count, sizeof(uint32_t));
	f.nlink = calloc((size_t)img->inode_count, sizeof(uint32_t));
	f.state = calloc((size_t)img->inode_count, 1);
	f.chunk = malloc(CHUNK);
	if (!f.refs || !f.subdirs || !f.parent || !f.nlink || !f.state || !f.chunk) {
		rc = -ENOMEM;
		goto out;
	}
	rc = check_block0(&f);
	/* First, so that a bad granule is named here: the checks after this read
	 * through the verify device, where it is only an error. */
	if (!rc && (flags & CAIRN_FSCK_DIGESTS) && (img->compat & CAIRN_COMPAT_VERITY) &&
	    !(beside = start_digests(&f, &d)))
		rc = check_digests(&d);
	if (!rc)
		rc = check_checksums(&f);
	if (!rc)
		rc = check_chunks(&f);
	if (!rc)
		rc = check_inodes(&f);
	if (!rc)
		rc = check_tree(&f);
	if (beside) {
		int drc = finish_digests(&f, &d);

		rc = drc ? drc : rc;
	}
	if (rc == -CAIRN_EDIGEST) {
		problem(&f, "checks stopped at bytes that do not match the digests");
		rc = 0;
	}
out:
	free(f.refs);
	free(f.subdirs);
	free(f.parent);
	free(f.nlink);
	free(f.state);
	free(f.chunk);
	return rc ? rc : f.problems;
}
