/* SPDX-License-Identifier: MIT */
/*
 * diskcache bdev: device bytes of a remote image kept on local disk across
 * mounts, in fixed chunks (chunk_bytes, aligned), one file per chunk:
 *
 *   DIR/.lock          flock'd around every change to DIR
 *   DIR/.usage         le64: bytes of all chunk files under DIR
 *   DIR/KEY/%016llx    a chunk: 32-byte header (magic, index, length, XXH3-64
 *                      of the data seeded with the index), then the data
 *   DIR/KEY/tmp.*      a chunk being written (only while its writer holds the lock)
 *
 * Crash safety without fsync: a chunk is written to a tmp name and renamed, and
 * a reader checks its length and checksum before using a byte of it, so a chunk
 * torn by kill -9 or a power loss (short, zero-filled) is deleted and fetched
 * again; leftover tmp files are deleted by the next scan.
 *
 * Bound: every store happens under the lock; a mount's first store, and any
 * store after which usage would pass max_bytes, scans DIR to measure it afresh
 * (a crash can leave the counter stale) and deletes least recently used chunks
 * (by mtime, which a hit refreshes once DC_TOUCH_SECS have passed since the
 * last store or refresh: LRU to the minute) down to 7/8 of max_bytes, so scans stay
 * rare. DIR therefore never holds more than max_bytes. Opening reads only the
 * counter (a lowered budget is met at once): a warm mount that stores nothing
 * never stats the cache's thousands of files, which after a reboot would each
 * be a disk read before the first lookup. Two mounts share DIR: stores are serialised by
 * the lock, a chunk already present is not stored twice, and an unlinked chunk
 * stays readable by whoever has it open.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#include "format/disk.h" /* on-disk structures (private) */
#include <cairn/remote.h>

#define DC_MAGIC "cairndc1"
#define DEFAULT_MAX (1ull << 30)
#define DEFAULT_CHUNK (128u * 1024)
#define DC_TOUCH_SECS 60 /* LRU granularity: a hit refreshes a chunk at most this often */

struct chunk_hdr {
	char magic[8];
	uint64_t index;
	uint32_t len;
	uint32_t zero;
	uint64_t hash;
};

struct dc_bdev {
	struct cairn_bdev base;
	int dir_fd, key_fd, lock_fd, usage_fd;
	char key[NAME_MAX + 1];
	char *dir;                   /* as configured (cairn_bdev_diskcache_file) */
	uint64_t max_bytes;
	size_t chunk;
	int scanned;                 /* DIR measured by this open (under lock) */
	pthread_mutex_t lock;        /* the flock is per open file: one thread at a time */
	atomic_uint_fast64_t hits, misses, stored, evicted, torn, write_errors, used;
};

static uint64_t chunk_hash(const void *data, size_t len, uint64_t index)
{
	return XXH3_64bits_withSeed(data, len, index);
}

static size_t chunk_len(const struct dc_bdev *d, uint64_t index)
{
	uint64_t start = index * d->chunk, left = d->base.size - start;

	return left < d->chunk ? (size_t)left : d->chunk;
}

static void chunk_name(uint64_t index, char out[32])
{
	snprintf(out, 32, "%016" PRIx64, index);
}

/* ---- the shared usage counter (under the lock) ---- */

static uint64_t usage_get(struct dc_bdev *d)
{
	uint64_t v = 0;

	if (pread(d->usage_fd, &v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = 0;
	return v;
}

static void usage_set(struct dc_bdev *d, uint64_t v)
{
	if (pwrite(d->usage_fd, &v, sizeof(v), 0) != (ssize_t)sizeof(v))
		atomic_fetch_add(&d->write_errors, 1);
	atomic_store(&d->used, v);
}

static void dir_lock(struct dc_bdev *d)
{
	pthread_mutex_lock(&d->lock);
	while (flock(d->lock_fd, LOCK_EX) < 0 && errno == EINTR)
		;
}

static void dir_unlock(struct dc_bdev *d)
{
	flock(d->lock_fd, LOCK_UN);
	pthread_mutex_unlock(&d->lock);
}

/* ---- scan and eviction (under the lock) ---- */

struct entry {
	struct timespec mtime;
	uint64_t size;
	int dfd;                     /* borrowed from the scan's table */
	char name[32];
};

struct scan {
	struct entry *e;
	size_t n, cap;
	int *dfds;
	size_t n_dfds;
	uint64_t total;
};

static int entry_add(struct scan *s, int dfd, const char *name, const struct stat *st)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct entry *e = realloc(s->e, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		s->e = e;
		s->cap = cap;
	}
	s->e[s->n] = (struct entry){ .mtime = st->st_mtim, .size = (uint64_t)st->st_size,
				     .dfd = dfd };
	snprintf(s->e[s->n].name, sizeof(s->e[s->n].name), "%s", name);
	s->n++;
	s->total += (uint64_t)st->st_size;
	return 0;
}

/* Every chunk of one image's directory; tmp files are leftovers of a crash. */
static int scan_key_dir(struct scan *s, int dfd)
{
	DIR *dir = fdopendir(dup(dfd));
	struct dirent *de;
	int rc = 0;

	if (!dir)
		return -errno;
	rewinddir(dir); /* the dup shares the offset an earlier scan left at the end */
	while (!rc && (de = readdir(dir))) {
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		if (!strncmp(de->d_name, "tmp.", 4)) {
			unlinkat(dfd, de->d_name, 0);
			continue;
		}
		if (strlen(de->d_name) != 16 || fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		rc = entry_add(s, dfd, de->d_name, &st);
	}
	closedir(dir);
	return rc;
}

static int scan_all(struct dc_bdev *d, struct scan *s)
{
	DIR *dir = fdopendir(dup(d->dir_fd));
	struct dirent *de;
	int rc = 0;

	if (!dir)
		return -errno;
	rewinddir(dir);
	while (!rc && (de = readdir(dir))) {
		int fd, *t;

		if (de->d_name[0] == '.')
			continue;
		fd = openat(d->dir_fd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		t = realloc(s->dfds, (s->n_dfds + 1) * sizeof(*t));
		if (!t) {
			close(fd);
			rc = -ENOMEM;
			break;
		}
		s->dfds = t;
		s->dfds[s->n_dfds++] = fd;
		rc = scan_key_dir(s, fd);
	}
	closedir(dir);
	return rc;
}

static void scan_free(struct scan *s)
{
	for (size_t i = 0; i < s->n_dfds; i++)
		close(s->dfds[i]);
	free(s->dfds);
	free(s->e);
}

static int older(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : x->mtime.tv_nsec > y->mtime.tv_nsec;
}

/* Measure DIR afresh; when `need` more bytes would not fit, delete the least
 * recently used chunks down to 7/8 of the budget (less `need`). */
static int rescan(struct dc_bdev *d, uint64_t need)
{
	struct scan s = { 0 };
	uint64_t low = d->max_bytes - d->max_bytes / 8;
	int rc = scan_all(d, &s);

	if (rc == 0 && s.total + need > d->max_bytes) {
		uint64_t target = low > need ? low - need : 0;

		qsort(s.e, s.n, sizeof(*s.e), older);
		for (size_t i = 0; i < s.n && s.total > target; i++) {
			if (unlinkat(s.e[i].dfd, s.e[i].name, 0) == 0 || errno == ENOENT) {
				s.total -= s.e[i].size;
				atomic_fetch_add(&d->evicted, 1);
			}
		}
	}
	if (rc == 0) {
		usage_set(d, s.total);
		d->scanned = 1;
	}
	scan_free(&s);
	return rc;
}

/* ---- chunks ---- */

/* Drop a chunk that failed its check, if it is still the same file. */
static void drop_torn(struct dc_bdev *d, uint64_t index, const struct stat *bad)
{
	char name[32];
	struct stat st;

	chunk_name(index, name);
	dir_lock(d);
	if (fstatat(d->key_fd, name, &st, 0) == 0 && st.st_ino == bad->st_ino &&
	    unlinkat(d->key_fd, name, 0) == 0) {
		uint64_t u = usage_get(d);

		usage_set(d, u > (uint64_t)st.st_size ? u - (uint64_t)st.st_size : 0);
	}
	dir_unlock(d);
	atomic_fetch_add(&d->torn, 1);
}

/* Whether a hit should make the chunk recent for eviction (its mtime now).
 * Eviction needs only a coarse order, so a chunk stored or touched within the
 * last DC_TOUCH_SECS keeps its time: a warm mount that hits every chunk of a
 * profile made one utimensat per chunk (336 for Java Hello) when the one-second
 * window had passed since the run before. A time in the future (the clock was
 * set back) is refreshed, or the chunk would look newest until then. */
static int touch_due(const struct stat *st, const struct timespec *now)
{
	return st->st_mtim.tv_sec > now->tv_sec ||
	       now->tv_sec - st->st_mtim.tv_sec >= DC_TOUCH_SECS;
}

/* Chunk `index` into dst (chunk_len bytes) if it is on disk and intact. */
static int chunk_load(struct dc_bdev *d, uint64_t index, uint8_t *dst)
{
	size_t len = chunk_len(d, index);
	struct chunk_hdr h;
	struct iovec iov[2] = { { &h, sizeof(h) }, { dst, len } };
	struct timespec now;
	struct stat st;
	char name[32];
	int fd, ok, have_st;

	chunk_name(index, name);
	/* O_NONBLOCK: a FIFO in a chunk's place would block the open for a writer
	 * (it fails the checks below); a regular file reads as ever. */
	fd = openat(d->key_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return 0;
	have_st = fstat(fd, &st) == 0;
	ok = have_st && (uint64_t)st.st_size == sizeof(h) + len &&
	     preadv(fd, iov, 2, 0) == (ssize_t)(sizeof(h) + len) &&
	     !memcmp(h.magic, DC_MAGIC, 8) && h.index == index && h.len == len && !h.zero &&
	     h.hash == chunk_hash(dst, len, index);
	clock_gettime(CLOCK_REALTIME, &now);
	if (ok && touch_due(&st, &now))
		futimens(fd, NULL);
	close(fd);
	if (!ok && have_st)
		drop_torn(d, index, &st);
	return ok;
}

static int write_all(int fd, const struct iovec *iov, int n, size_t total)
{
	return pwritev(fd, iov, n, 0) == (ssize_t)total ? 0 : -EIO;
}

/* Store chunk `index` (data, chunk_len bytes) unless it is there already. */
static void chunk_store(struct dc_bdev *d, uint64_t index, const uint8_t *data)
{
	size_t len = chunk_len(d, index);
	struct chunk_hdr h = { .index = index, .len = (uint32_t)len,
			       .hash = chunk_hash(data, len, index) };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)data, len } };
	uint64_t need = sizeof(h) + len, used;
	char name[32], tmp[64];
	struct stat st;
	int fd, rc = 0;

	if (need > d->max_bytes)
		return;
	memcpy(h.magic, DC_MAGIC, 8);
	chunk_name(index, name);
	snprintf(tmp, sizeof(tmp), "tmp.%ld.%s", (long)getpid(), name);
	dir_lock(d);
	/* Another mount or thread stored it. Anything else in its place (a
	 * symlink, a FIFO) is no chunk: the rename replaces it. */
	if (fstatat(d->key_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
		goto out;
	used = usage_get(d);
	if (!d->scanned || used + need > d->max_bytes) {
		rc = rescan(d, need);
		used = usage_get(d);
		if (rc < 0 || used + need > d->max_bytes)
			goto out_err;
	}
	fd = openat(d->key_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		goto out_err;
	rc = write_all(fd, iov, 2, (size_t)need);
	if (close(fd) < 0 || rc < 0 || renameat(d->key_fd, tmp, d->key_fd, name) < 0) {
		unlinkat(d->key_fd, tmp, 0);
		goto out_err;
	}
	usage_set(d, used + need);
	atomic_fetch_add(&d->stored, 1);
	goto out;
out_err:
	atomic_fetch_add(&d->write_errors, 1);
out:
	dir_unlock(d);
}

/* Chunks [first, first+n), the first and the last missing: fetch them from
 * below in one request, copy the part the caller asked for and store each
 * chunk (one already on disk is left as it is). A run the caller's buffer
 * holds whole is read straight into it. */
static int fetch_run(struct dc_bdev *d, uint64_t first, uint64_t n, uint8_t *buf, size_t len,
		     uint64_t off)
{
	uint64_t start = first * d->chunk, end = (first + n) * d->chunk, lo, hi;
	int inside, rc;
	uint8_t *tmp;

	if (end > d->base.size)
		end = d->base.size;
	inside = start >= off && end <= off + len;
	tmp = inside ? buf + (start - off) : malloc((size_t)(end - start));
	if (!tmp)
		return -ENOMEM;
	rc = cairn_bdev_read_full(d->base.below, tmp, (size_t)(end - start), start);
	if (rc == 0) {
		lo = off > start ? off : start;
		hi = off + len < end ? off + len : end;
		if (!inside)
			memcpy(buf + (lo - off), tmp + (lo - start), (size_t)(hi - lo));
		for (uint64_t i = 0; i < n; i++)
			chunk_store(d, first + i, tmp + i * d->chunk);
	}
	if (!inside)
		free(tmp);
	return rc;
}

/* Serve chunk i's part of the read from disk: a chunk the read covers whole
 * is loaded straight into buf (no copy, no buffer to fault in: the segment
 * cache reads whole aligned chunks), a partial one through *scratch, which is
 * made on first need. 1 = served, 0 = not on disk (or torn), <0 = error. */
static int chunk_serve(struct dc_bdev *d, uint64_t i, uint8_t *buf, size_t len, uint64_t off,
		       uint8_t **scratch)
{
	uint64_t cs = i * d->chunk, ce = cs + chunk_len(d, i);
	uint64_t lo = off > cs ? off : cs, hi = off + len < ce ? off + len : ce;

	if (lo == cs && hi == ce)
		return chunk_load(d, i, buf + (cs - off));
	if (!*scratch && !(*scratch = malloc(d->chunk)))
		return -ENOMEM;
	if (!chunk_load(d, i, *scratch))
		return 0;
	memcpy(buf + (lo - off), *scratch + (lo - cs), (size_t)(hi - lo));
	return 1;
}

/* Chunks on disk are served from it; those missing are fetched in one request
 * from the first missing to the last, the chunks on disk between them included:
 * below is a server, where a request costs a round trip (20 ms) and a chunk of
 * 128 KiB about 1 ms. One request per missing stretch, one after another, made
 * a 1 MiB read with three holes wait for three round trips. */
static ssize_t dc_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	struct dc_bdev *d = (struct dc_bdev *)dev;
	uint64_t first = off / d->chunk, last = (off + len - 1) / d->chunk, lo = 0, hi = 0;
	uint8_t *scratch = NULL;
	int rc = 0;
	uint64_t missing = 0;

	for (uint64_t i = first; i <= last && rc == 0; i++) {
		int got = chunk_serve(d, i, buf, len, off, &scratch);

		if (got < 0) {
			rc = got;
		} else if (got) {
			atomic_fetch_add(&d->hits, 1);
		} else {
			lo = missing ? lo : i;
			hi = i;
			missing++;
		}
	}
	if (rc == 0 && missing) {
		rc = fetch_run(d, lo, hi - lo + 1, buf, len, off);
		if (rc == 0)
			atomic_fetch_add(&d->misses, missing);
	}
	free(scratch);
	return rc < 0 ? rc : (ssize_t)len;
}

/* Missing chunks miss[0..nm) of a vector, in the order first asked: fetched in
 * one vectored read below (one entry per stretch of them that follows on in
 * that order), stored, and copied into every entry that covers them. */
static int fetch_chunks(struct dc_bdev *d, const uint64_t *miss, size_t nm,
			const struct cairn_bdev_iov *v, unsigned n)
{
	uint8_t *tmp = malloc(nm * d->chunk);
	struct cairn_bdev_iov *w = malloc(nm * sizeof(*w));
	unsigned nw = 0;
	int rc = tmp && w ? 0 : -ENOMEM;

	for (size_t k = 0; k < nm && !rc; k++) {
		size_t len = chunk_len(d, miss[k]);

		if (nw && miss[k] == miss[k - 1] + 1 &&
		    (uint8_t *)w[nw - 1].buf + w[nw - 1].len == tmp + k * d->chunk)
			w[nw - 1].len += len;
		else
			w[nw++] = (struct cairn_bdev_iov){ tmp + k * d->chunk, len,
							   miss[k] * d->chunk };
	}
	if (!rc)
		rc = cairn_bdev_readv(d->base.below, w, nw);
	for (size_t k = 0; k < nm && !rc; k++) {
		uint64_t cs = miss[k] * d->chunk, ce = cs + chunk_len(d, miss[k]);

		chunk_store(d, miss[k], tmp + k * d->chunk);
		for (unsigned i = 0; i < n; i++) {
			uint64_t lo = v[i].off > cs ? v[i].off : cs;
			uint64_t hi = v[i].off + v[i].len < ce ? v[i].off + v[i].len : ce;

			if (lo < hi)
				memcpy((uint8_t *)v[i].buf + (lo - v[i].off),
				       tmp + k * d->chunk + (lo - cs), (size_t)(hi - lo));
		}
	}
	free(w);
	free(tmp);
	return rc;
}

/* A vector: chunks on disk served from it, those missing (from all entries)
 * asked of the server once (fetch_chunks), not once per entry. */
static int dc_readv(struct cairn_bdev *dev, const struct cairn_bdev_iov *v, unsigned n)
{
	struct dc_bdev *d = (struct dc_bdev *)dev;
	uint8_t *scratch = NULL;
	uint64_t *miss = NULL;
	size_t nm = 0, cap = 0;
	int rc = 0;

	for (unsigned i = 0; i < n && !rc; i++) {
		uint64_t first = v[i].off / d->chunk, last = (v[i].off + v[i].len - 1) / d->chunk;

		for (uint64_t c = first; v[i].len && c <= last && !rc; c++) {
			int got = chunk_serve(d, c, v[i].buf, v[i].len, v[i].off, &scratch);
			size_t k = 0;

			if (got) {
				rc = got < 0 ? got : 0;
				atomic_fetch_add(&d->hits, got > 0);
				continue;
			}
			while (k < nm && miss[k] != c)
				k++;
			if (k < nm)
				continue; /* another entry needs it too */
			if (nm == cap) {
				uint64_t *m = realloc(miss, (cap = cap ? 2 * cap : 16) * sizeof(*m));

				if (!m) {
					rc = -ENOMEM;
					break;
				}
				miss = m;
			}
			miss[nm++] = c;
		}
	}
	if (!rc && nm) {
		rc = fetch_chunks(d, miss, nm, v, n);
		if (!rc)
			atomic_fetch_add(&d->misses, nm);
	}
	free(miss);
	free(scratch);
	return rc;
}

static void dc_close(struct cairn_bdev *dev)
{
	struct dc_bdev *d = (struct dc_bdev *)dev;

	cairn_bdev_close(dev->below);
	close(d->dir_fd);
	close(d->key_fd);
	close(d->lock_fd);
	close(d->usage_fd);
	pthread_mutex_destroy(&d->lock);
	free(d->dir);
	free(d);
}

/* Whether every chunk of the range has its file here (what dc_read would load,
 * unless it turns out torn): one fstatat per chunk, no data read. */
static int dc_held(struct cairn_bdev *dev, uint64_t off, uint64_t len)
{
	struct dc_bdev *d = (struct dc_bdev *)dev;
	struct stat st;
	char name[32];

	for (uint64_t i = off / d->chunk; i <= (off + len - 1) / d->chunk; i++) {
		chunk_name(i, name);
		if (fstatat(d->key_fd, name, &st, AT_SYMLINK_NOFOLLOW) ||
		    (uint64_t)st.st_size != sizeof(struct chunk_hdr) + chunk_len(d, i))
			return 0;
	}
	return 1;
}

static const struct cairn_bdev_ops dc_ops = {
	.version = CAIRN_BDEV_OPS_VERSION,
	.name = "diskcache",
	.read = dc_read,
	.close = dc_close,
	.held = dc_held,
	.readv = dc_readv,
};

static int key_ok(const char *k)
{
	if (!k || !*k || k[0] == '.' || strlen(k) > NAME_MAX)
		return 0;
	for (; *k; k++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *k))
			return 0;
	return 1;
}

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(buf, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

static int dc_open_files(struct dc_bdev *d, const char *dir)
{
	int rc = mkdir_p(dir);

	if (rc < 0)
		return rc;
	d->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->dir_fd < 0)
		return -errno;
	if (mkdirat(d->dir_fd, d->key, 0755) < 0 && errno != EEXIST)
		return -errno;
	d->key_fd = openat(d->dir_fd, d->key, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	d->lock_fd = openat(d->dir_fd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	d->usage_fd = openat(d->dir_fd, ".usage", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (d->key_fd < 0 || d->lock_fd < 0 || d->usage_fd < 0)
		return -errno;
	return 0;
}

int cairn_bdev_diskcache_new(struct cairn_bdev *below, const struct cairn_diskcache_config *cfg,
			     struct cairn_bdev **out)
{
	size_t chunk = cfg && cfg->chunk_bytes ? cfg->chunk_bytes : DEFAULT_CHUNK;
	struct dc_bdev *d;
	int rc;

	if (!cfg || !cfg->dir || !*cfg->dir || !key_ok(cfg->key) || chunk < 4096 ||
	    chunk > (16u << 20) || (chunk & (chunk - 1)))
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->dir_fd = d->key_fd = d->lock_fd = d->usage_fd = -1;
	snprintf(d->key, sizeof(d->key), "%s", cfg->key);
	d->max_bytes = cfg->max_bytes ? cfg->max_bytes : DEFAULT_MAX;
	d->chunk = chunk;
	pthread_mutex_init(&d->lock, NULL);
	(void)cairn_bdev_init(&d->base, &dc_ops, below, cairn_bdev_size(below));
	d->dir = strdup(cfg->dir);
	rc = d->dir ? dc_open_files(d, cfg->dir) : -ENOMEM;
	if (rc == 0) {
		/* A lowered budget is met now; otherwise the first store measures. */
		dir_lock(d);
		atomic_store(&d->used, usage_get(d));
		if (atomic_load(&d->used) > d->max_bytes)
			rc = rescan(d, 0);
		dir_unlock(d);
	}
	if (rc < 0) {
		d->base.below = NULL;
		dc_close(&d->base);
		return rc;
	}
	*out = &d->base;
	return 0;
}

int cairn_bdev_diskcache_stats(struct cairn_bdev *dev, struct cairn_diskcache_stats *out)
{
	for (; dev; dev = dev->below) {
		struct dc_bdev *d = (struct dc_bdev *)dev;

		if (dev->ops != &dc_ops)
			continue;
		*out = (struct cairn_diskcache_stats){
			.hits = atomic_load(&d->hits), .misses = atomic_load(&d->misses),
			.stored = atomic_load(&d->stored), .evicted = atomic_load(&d->evicted),
			.torn = atomic_load(&d->torn), .write_errors = atomic_load(&d->write_errors),
			.used_bytes = atomic_load(&d->used),
		};
		return 0;
	}
	return -EINVAL;
}

int cairn_bdev_diskcache_file(struct cairn_bdev *dev, const char *suffix, char *out,
			      size_t out_len)
{
	for (; dev; dev = dev->below) {
		const struct dc_bdev *d = (const struct dc_bdev *)dev;

		if (dev->ops != &dc_ops)
			continue;
		if (snprintf(out, out_len, "%s/%s%s", d->dir, d->key, suffix) >= (int)out_len)
			return -ENAMETOOLONG;
		return 0;
	}
	return -EINVAL;
}

int cairn_diskcache_key(struct cairn_bdev *dev, char *out, size_t out_len)
{
	uint8_t head[4096];
	size_t n = cairn_bdev_size(dev) < sizeof(head) ? (size_t)cairn_bdev_size(dev) : sizeof(head);
	const uint8_t *uu = head + offsetof(struct cairn_disk_super, uuid);
	char uuid[33] = "raw";
	int rc = cairn_bdev_read_full(dev, head, n, 0);

	if (rc < 0)
		return rc;
	if (n >= sizeof(struct cairn_disk_super) && !memcmp(head, CAIRN_MAGIC_BYTES, 8))
		for (int i = 0; i < 16; i++)
			snprintf(uuid + 2 * i, 3, "%02x", uu[i]);
	if (snprintf(out, out_len, "%s-%" PRIx64 "-%016llx", uuid, cairn_bdev_size(dev),
		     (unsigned long long)XXH3_64bits(head, n)) >= (int)out_len)
		return -ENAMETOOLONG;
	return 0;
}

/* ---- offline opens ---- */

static void origin_note_path(const char *dir, const char *url, char *out, size_t len)
{
	snprintf(out, len, "%s/.origins/%016llx", dir,
		 (unsigned long long)XXH3_64bits(url, strlen(url)));
}

int cairn_diskcache_remember(const char *dir, const char *url, const char *key, uint64_t size)
{
	char path[PATH_MAX], tmp[PATH_MAX + 32], line[512];
	int fd, n, rc = 0;

	snprintf(path, sizeof(path), "%s/.origins", dir);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	origin_note_path(dir, url, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	n = snprintf(line, sizeof(line), "%s %" PRIu64 "\n", key, size);
	if (n >= (int)sizeof(line))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, line, (size_t)n) != n)
		rc = -EIO;
	if (close(fd) < 0 && !rc)
		rc = -EIO;
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

/* The device under an offline disk cache: the image's size, and no bytes. */
static ssize_t offline_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	return -EIO;
}

static void offline_close(struct cairn_bdev *dev)
{
	free(dev);
}

static const struct cairn_bdev_ops offline_ops = {
	.version = CAIRN_BDEV_OPS_VERSION,
	.name = "offline",
	.read = offline_read,
	.close = offline_close,
};

/* "KEY SIZE\n" as cairn_diskcache_remember() writes it; anything else (a
 * note damaged or written by hand: no size, a sign, trailing junk) is no note,
 * -ENOENT. fscanf's %llu took "-5" as a size of 2^64 - 5. */
static int parse_note(FILE *f, char key[NAME_MAX + 1], unsigned long long *size)
{
	char line[NAME_MAX + 32], *sp, *end;
	size_t n;

	if (!fgets(line, sizeof(line), f))
		return -ENOENT;
	n = strlen(line);
	if (n && line[n - 1] == '\n')
		line[--n] = '\0';
	sp = strchr(line, ' ');
	if (!sp || sp == line || (size_t)(sp - line) > NAME_MAX || sp[1] < '0' || sp[1] > '9')
		return -ENOENT;
	errno = 0;
	*size = strtoull(sp + 1, &end, 10);
	if (errno || *end || !*size)
		return -ENOENT;
	memcpy(key, line, (size_t)(sp - line));
	key[sp - line] = '\0';
	return 0;
}

int cairn_bdev_diskcache_offline(const struct cairn_diskcache_config *cfg, const char *url,
				 struct cairn_bdev **out)
{
	struct cairn_diskcache_config c = *cfg;
	char path[PATH_MAX], key[NAME_MAX + 1];
	unsigned long long size;
	struct cairn_bdev *off;
	FILE *f;
	int rc;

	origin_note_path(cfg->dir, url, path, sizeof(path));
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ENOENT : -errno;
	rc = parse_note(f, key, &size);
	fclose(f);
	if (rc < 0)
		return rc;
	off = calloc(1, sizeof(*off));
	if (!off)
		return -ENOMEM;
	off->ops = &offline_ops;
	off->size = size;
	c.key = key;
	rc = cairn_bdev_diskcache_new(off, &c, out);
	if (rc < 0)
		free(off);
	return rc;
}
