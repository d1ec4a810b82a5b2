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
 * Memory: one uint32 per inode for reference counts plus a queue of directories,
 * both bounded by inode_count, which the superblock check bounded by the image.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <xxhash.h>
#include <cairn/cache.h>
#include <cairn/error.h>
#include <cairn/verify.h>
#include "format/format_int.h"
#include "image_int.h"

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

struct fsck {
	struct cairn_image *img;
	cairn_report_cb report;
	void *ctx;
	unsigned flags;
	long problems;
	uint32_t *refs;      /* references from directory entries, per inode */
	uint32_t *subdirs;   /* subdirectories, per directory inode */
	uint8_t *state;      /* per inode: bit 0 loaded ok, bit 1 queued as a directory */
	unsigned char *chunk; /* CHUNK bytes for hashing, allocated once per run */
	uint64_t whys[MAX_REPORTS]; /* hashes of the reader's reasons reported so far */
	unsigned nwhys;
	int lost_inodes;     /* some inode could not be loaded: totals cannot match */
	char buf[256];
};

static void problem(struct fsck *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct fsck *f, const char *fmt, ...)
{
	va_list ap;

	f->problems++;
	if (!f->report || f->problems > MAX_REPORTS)
		return;
	va_start(ap, fmt);
	vsnprintf(f->buf, sizeof(f->buf), fmt, ap);
	va_end(ap);
	f->report(f->ctx, f->buf);
	if (f->problems == MAX_REPORTS)
		f->report(f->ctx, "(further problems are counted, not listed)");
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

/* Reports a structure error with the reader's own reason when it gave one.
 * `what` may be f->buf, which problem() formats into: it is copied first. */
static void problem_rc(struct fsck *f, int rc, const char *what)
{
	char w[128];

	snprintf(w, sizeof(w), "%s", what);
	if (rc == -CAIRN_ECORRUPT && f->img->why[0]) {
		if (!seen_why(f, f->img->why))
			problem(f, "%s: %s", w, f->img->why);
	} else {
		problem(f, "%s: %s", w, rc == -CAIRN_ECORRUPT ? "corrupt" : cairn_strerror(rc));
	}
	/* Let the next corruption record its own reason. */
	pthread_mutex_lock(&f->img->why_lock);
	f->img->why[0] = '\0';
	atomic_store(&f->img->has_why, 0);
	pthread_mutex_unlock(&f->img->why_lock);
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
	for (uint64_t b = 0; b < img->meta_blocks; b++) {
		rc = cairn_image_verify_block(img, b);
		if (rc == -CAIRN_ECORRUPT) {
			problem_rc(f, rc, "metadata");
			rc = 0;
		} else if (rc) {
			goto out;
		}
	}
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

/* Every chunk of a compressed image: its record, that it decompresses to its
 * length, and that no two chunks' stored bytes overlap. The records are held
 * for the overlap check: 24 bytes per chunk, bounded by the metadata size. */
static int check_chunks(struct fsck *f)
{
	struct cairn_image *img = f->img;
	struct cairn_rchunk *v;
	unsigned char *buf;
	uint64_t n = 0, stored = 0, logical = 0;
	int rc = 0;

	if (!(img->incompat & CAIRN_INCOMPAT_CHUNKED))
		return 0;
	v = malloc((size_t)(img->chunk_count ? img->chunk_count : 1) * sizeof(*v));
	buf = malloc((size_t)img->chunk_size); /* <= 1 MiB: checked at open */
	if (!v || !buf) {
		free(v);
		free(buf);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < img->chunk_count; i++) {
		struct cairn_rchunk c;

		rc = cairn_image_chunk_load(img, i, &c);
		if (!rc && (f->flags & CAIRN_FSCK_DATA))
			rc = cairn_image_chunk_decode(img, i, &c, buf);
		if (rc == -CAIRN_ECORRUPT) {
			snprintf(f->buf, sizeof(f->buf), "chunk %llu", (unsigned long long)i);
			problem_rc(f, rc, f->buf);
			rc = 0;
			continue;
		}
		if (rc)
			break;
		stored += c.stored_len;
		logical += c.ulen;
		if (c.stored_len)
			v[n++] = c;
	}
	if (!rc && (stored != cairn_le64(img->zraw.stored_bytes) ||
		    logical != cairn_le64(img->zraw.logical_bytes)))
		problem(f, "compression record: %llu stored / %llu logical bytes, chunks hold "
			"%llu / %llu", (unsigned long long)cairn_le64(img->zraw.stored_bytes),
			(unsigned long long)cairn_le64(img->zraw.logical_bytes),
			(unsigned long long)stored, (unsigned long long)logical);
	qsort(v, (size_t)n, sizeof(*v), by_disk);
	for (uint64_t i = 1; !rc && i < n; i++)
		if (v[i].disk_off < v[i - 1].disk_off + v[i - 1].stored_len) {
			problem(f, "chunks at %llu and %llu overlap",
				(unsigned long long)v[i - 1].disk_off,
				(unsigned long long)v[i].disk_off);
			break;
		}
	free(v);
	free(buf);
	return rc;
}

/* Every inode on its own: record bounds, xattrs, extents, symlink text, data. */
static int check_inodes(struct fsck *f)
{
	struct cairn_image *img = f->img;
	uint64_t files = 0, bytes = 0;
	char target[CAIRN_SYMLINK_MAX];
	struct cairn_rinode r;
	int rc;

	for (cairn_ino_t ino = 1; ino < img->inode_count; ino++) {
		rc = cairn_image_inode_load(img, ino, &r);
		if (rc == -CAIRN_ECORRUPT) {
			snprintf(f->buf, sizeof(f->buf), "inode %llu", (unsigned long long)ino);
			problem_rc(f, rc, f->buf);
			f->lost_inodes = 1;
			continue;
		}
		if (rc)
			return rc;
		f->state[ino] |= 1;
		rc = check_xattrs(f, ino, &r);
		if (!rc && S_ISREG(r.mode)) {
			files++;
			bytes += r.size;
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
	if (f->lost_inodes)
		return 0; /* the totals below would only repeat that */
	if (files != cairn_le64(img->raw.file_count))
		problem(f, "superblock: file count %llu, but %llu regular files found",
			(unsigned long long)cairn_le64(img->raw.file_count), (unsigned long long)files);
	if (bytes != cairn_le64(img->raw.data_bytes))
		problem(f, "superblock: data bytes %llu, but files hold %llu",
			(unsigned long long)cairn_le64(img->raw.data_bytes), (unsigned long long)bytes);
	return 0;
}

/* One directory: entries sorted and unique, types match, subdirectories point back. */
static int check_dir(struct fsck *f, cairn_ino_t dir, uint64_t **queue, uint64_t *qlen)
{
	struct cairn_image *img = f->img;
	struct cairn_rdirent e;
	char prev[CAIRN_NAME_MAX + 1];
	size_t prev_len = 0;
	struct cairn_rinode r, c;
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
		if (!(f->state[e.ino] & 1))
			continue; /* the inode itself was reported */
		rc = cairn_image_inode_load(img, e.ino, &c);
		if (rc)
			return rc == -CAIRN_ECORRUPT ? 0 : rc;
		if (cairn_format_dtype(c.mode) != e.type)
			problem(f, "directory %llu: entry '%s' type %u does not match inode %u", d,
				e.name, e.type, e.ino);
		if (!S_ISDIR(c.mode))
			continue;
		f->subdirs[dir]++;
		if (c.parent != dir)
			problem(f, "directory %u ('%s'): parent %u, but it is listed in %llu", e.ino,
				e.name, c.parent, d);
		if (f->state[e.ino] & 2) {
			problem(f, "directory %u ('%s') is linked more than once", e.ino, e.name);
			continue;
		}
		f->state[e.ino] |= 2;
		(*queue)[(*qlen)++] = e.ino;
	}
	return 0;
}

/* Breadth-first from the root; each directory is queued at most once, so the
 * queue never holds more than inode_count entries and cycles end. */
static int check_tree(struct fsck *f)
{
	struct cairn_image *img = f->img;
	uint64_t *queue = malloc((size_t)img->inode_count * sizeof(uint64_t));
	uint64_t head = 0, qlen = 0;
	struct cairn_rinode r;
	int rc = 0;

	if (!queue)
		return -ENOMEM;
	if (!(f->state[img->root_ino] & 1)) {
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
	f->state[img->root_ino] |= 2;
	queue[qlen++] = img->root_ino;
	while (head < qlen) {
		rc = check_dir(f, queue[head++], &queue, &qlen);
		if (rc)
			goto out;
	}
	for (cairn_ino_t ino = 1; ino < img->inode_count; ino++) {
		if (!(f->state[ino] & 1))
			continue;
		rc = cairn_image_inode_load(img, ino, &r);
		if (rc)
			goto out;
		if (ino != img->root_ino && f->refs[ino] == 0) {
			problem(f, "inode %llu is not reachable from the root", (unsigned long long)ino);
			continue;
		}
		if (S_ISDIR(r.mode)) {
			if (r.nlink != 2 + f->subdirs[ino])
				problem(f, "directory %llu: link count %u, expected %u",
					(unsigned long long)ino, r.nlink, 2 + f->subdirs[ino]);
		} else if (r.nlink != f->refs[ino]) {
			problem(f, "inode %llu: link count %u, but %u entries name it",
				(unsigned long long)ino, r.nlink, f->refs[ino]);
		}
	}
out:
	free(queue);
	return rc;
}

static void digest_problem(void *ctx, const char *msg)
{
	problem(ctx, "digests: %s", msg);
}

/* Every byte against the root digest (include/cairn/verify.h), read from the
 * device under the verify layer: through it a bad granule would only be EIO,
 * and the scan names it. */
static int check_digests(struct fsck *f)
{
	struct cairn_bdev *dev = cairn_cache_bdev(f->img->cache);
	struct cairn_bdev *vd = cairn_bdev_verify_find(dev);
	uint8_t root[CAIRN_DIGEST_LEN];
	long n;

	if (!(f->img->compat & CAIRN_COMPAT_VERITY))
		return 0;
	n = cairn_verify_scan(vd ? vd->below : dev, root, digest_problem, f);
	if (n == -ENODATA || n == -EOPNOTSUPP) {
		problem(f, "digests: the verity record cannot be used: %s", cairn_strerror((int)n));
		return 0;
	}
	return n < 0 ? (int)n : 0;
}

long cairn_image_fsck(struct cairn_image *img, unsigned flags, cairn_report_cb report, void *ctx)
{
	struct fsck f = { .img = img, .report = report, .ctx = ctx, .flags = flags };
	int rc;

	f.refs = calloc((size_t)img->inode_count, sizeof(uint32_t));
	f.subdirs = calloc((size_t)img->inode_count, sizeof(uint32_t));
	f.state = calloc((size_t)img->inode_count, 1);
	f.chunk = malloc(CHUNK);
	if (!f.refs || !f.subdirs || !f.state || !f.chunk) {
		rc = -ENOMEM;
		goto out;
	}
	rc = check_block0(&f);
	/* First, so that a bad granule is named here: the checks after this read
	 * through the verify device, where it is only an error. */
	if (!rc && (flags & CAIRN_FSCK_DIGESTS))
		rc = check_digests(&f);
	if (!rc)
		rc = check_checksums(&f);
	if (!rc)
		rc = check_chunks(&f);
	if (!rc)
		rc = check_inodes(&f);
	if (!rc)
		rc = check_tree(&f);
	if (rc == -CAIRN_EDIGEST) {
		problem(&f, "checks stopped at bytes that do not match the digests");
		rc = 0;
	}
out:
	free(f.refs);
	free(f.subdirs);
	free(f.state);
	free(f.chunk);
	return rc ? rc : f.problems;
}
