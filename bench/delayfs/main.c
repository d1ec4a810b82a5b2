/* SPDX-License-Identifier: MIT */
/*
 * delayfs: the benchmark's emulated disk (Ingo Molnar's constant-delay method).
 *
 * Serves the regular files at the top of SRCDIR read-only, with direct_io so no page
 * cache sits between a reader and this daemon: every read the kernel sends is one
 * "device request". Each request waits until a fixed deadline (arrival + delay, or later
 * when all `channels` are busy), then gets its data. Requests and bytes are counted.
 *
 *   delayfs SRCDIR MOUNTPOINT [-o delay=1ms,channels=1,bw=0,max_read=1M,stats=FILE] [-f] [-s]
 *
 * With bw=N (MB/s, 10^6 bytes), every request's bytes also cross one link shared
 * by all channels: after its delay a request queues for the link, which carries
 * one transfer at a time at N MB/s (a network disk: latency per request plus a
 * shared pipe).
 *
 * With log=FILE, one line per request: "ARRIVAL DONE OFFSET LENGTH" (CLOCK_REALTIME
 * microseconds when the request came and when it was answered, the byte range), to
 * see when a reader's requests went out and what they waited on (bench/reqlog.py).
 *
 * Counters: read MOUNTPOINT/.delayfs (one "name value" per line); write "reset" to it to
 * zero them. SIGUSR1 writes the same text to the stats= file (and so does unmount).
 * Loop devices, squashfuse_ll and cairn all read their image files through this, so each
 * pays the same price per request.
 */
#define FUSE_USE_VERSION 34
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "../common/bench.h"

#define CTL_NAME     ".delayfs"
#define CTL_INO      2
#define FIRST_IMG_INO 3
#define HIST_BUCKETS 12          /* bucket i: sizes up to 2^(i+10); the last takes the rest */
#define MAX_CHANNELS 64
#define CTL_TEXT_MAX 1024

/* One served file, by name; its inode number is FIRST_IMG_INO + index. */
struct img_entry {
	char name[NAME_MAX + 1];
};

struct delayfs {
	/* configuration, fixed after start */
	int src_fd;                 /* O_PATH|O_DIRECTORY of SRCDIR */
	uint64_t delay_ns;
	unsigned channels;
	unsigned max_read;          /* bytes; the kernel splits larger reads */
	uint64_t bw;                /* bytes per second of the shared link; 0 = no limit */
	char *stats_path;           /* may be NULL */
	FILE *log;                  /* log=: one line per request, or NULL */
	pthread_mutex_t log_lock;
	/* channel model: each channel is busy until free_at[i] (CLOCK_MONOTONIC ns) */
	pthread_mutex_t chan_lock;
	uint64_t free_at[MAX_CHANNELS];
	uint64_t link_free_at;      /* the shared link (bw) is busy until then */
	/* names seen by lookup; grows, never shrinks (inode numbers stay valid) */
	pthread_mutex_t names_lock;
	struct img_entry *names;
	size_t n_names, cap_names;
	/* counters */
	atomic_uint_fast64_t requests, bytes, errors, max_request, inflight, max_inflight;
	atomic_uint_fast64_t hist[HIST_BUCKETS];
};

/* Reserve a channel for one request arriving now; returns its completion deadline.
 * A request starts when the earliest channel frees up, so with one channel the device
 * serves requests one after another, like a single-queue disk. */
static uint64_t reserve_deadline(struct delayfs *fs, uint64_t now, uint64_t len)
{
	uint64_t start, done;
	unsigned best = 0;

	pthread_mutex_lock(&fs->chan_lock);
	for (unsigned i = 1; i < fs->channels; i++)
		if (fs->free_at[i] < fs->free_at[best])
			best = i;
	start = fs->free_at[best] > now ? fs->free_at[best] : now;
	done = start + fs->delay_ns;
	if (fs->bw) { /* then the bytes cross the shared link, one transfer at a time */
		uint64_t xfer = fs->link_free_at > done ? fs->link_free_at : done;

		done = xfer + len * 1000000000u / fs->bw;
		fs->link_free_at = done;
	}
	fs->free_at[best] = done;
	pthread_mutex_unlock(&fs->chan_lock);
	return done;
}

/* Absolute deadline: a late wake-up does not push the next request further out. */
static void sleep_until(uint64_t deadline)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline / 1000000000u),
			       .tv_nsec = (long)(deadline % 1000000000u) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void atomic_max(atomic_uint_fast64_t *a, uint64_t v)
{
	uint_fast64_t cur = atomic_load(a);

	while (cur < v && !atomic_compare_exchange_weak(a, &cur, v))
		;
}

static unsigned hist_bucket(uint64_t len)
{
	unsigned b = 0;

	while (b + 1 < HIST_BUCKETS && len > (1ull << (b + 10)))
		b++;
	return b;
}

static void count_request(struct delayfs *fs, uint64_t len)
{
	atomic_fetch_add(&fs->requests, 1);
	atomic_fetch_add(&fs->bytes, len);
	atomic_fetch_add(&fs->hist[hist_bucket(len)], 1);
	atomic_max(&fs->max_request, len);
}

static void counters_reset(struct delayfs *fs)
{
	atomic_store(&fs->requests, 0);
	atomic_store(&fs->bytes, 0);
	atomic_store(&fs->errors, 0);
	atomic_store(&fs->max_request, 0);
	atomic_store(&fs->max_inflight, 0);
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		atomic_store(&fs->hist[i], 0);
}

/* "name value" lines; hist_le_<KiB> counts requests of at most that size. */
static size_t counters_format(struct delayfs *fs, char *buf, size_t cap)
{
	size_t n = 0;

	n += (size_t)snprintf(buf + n, cap - n,
			      "requests %" PRIuFAST64 "\nbytes %" PRIuFAST64 "\nerrors %" PRIuFAST64
			      "\nmax_request %" PRIuFAST64 "\nmax_inflight %" PRIuFAST64
			      "\ndelay_ns %" PRIu64 "\nchannels %u\nbw %" PRIu64 "\n",
			      atomic_load(&fs->requests), atomic_load(&fs->bytes),
			      atomic_load(&fs->errors), atomic_load(&fs->max_request),
			      atomic_load(&fs->max_inflight), fs->delay_ns, fs->channels, fs->bw);
	for (unsigned i = 0; i < HIST_BUCKETS && n < cap; i++) {
		if (i + 1 < HIST_BUCKETS)
			n += (size_t)snprintf(buf + n, cap - n, "hist_le_%lluk %" PRIuFAST64 "\n",
					      1ull << i, atomic_load(&fs->hist[i]));
		else
			n += (size_t)snprintf(buf + n, cap - n, "hist_gt_%lluk %" PRIuFAST64 "\n",
					      1ull << (i - 1), atomic_load(&fs->hist[i]));
	}
	return n < cap ? n : cap - 1;
}

static void counters_dump(struct delayfs *fs)
{
	char text[CTL_TEXT_MAX], tmp[PATH_MAX];
	size_t len = counters_format(fs, text, sizeof text);
	FILE *f;

	if (!fs->stats_path)
		return;
	/* write a temp file and rename, so a reader never sees half the counters */
	snprintf(tmp, sizeof tmp, "%s.tmp", fs->stats_path);
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "delayfs: %s: %s\n", tmp, strerror(errno));
		return;
	}
	fwrite(text, 1, len, f);
	if (fclose(f) != 0 || rename(tmp, fs->stats_path) != 0)
		fprintf(stderr, "delayfs: %s: %s\n", fs->stats_path, strerror(errno));
}

/* ---- names <-> inodes ---- */

static int name_index(struct delayfs *fs, const char *name, fuse_ino_t *ino)
{
	int rc = 0;
	size_t i;

	if (strlen(name) > NAME_MAX)
		return -ENAMETOOLONG;
	pthread_mutex_lock(&fs->names_lock);
	for (i = 0; i < fs->n_names; i++)
		if (strcmp(fs->names[i].name, name) == 0)
			break;
	if (i == fs->n_names) {
		if (fs->n_names == fs->cap_names) {
			size_t cap = fs->cap_names ? fs->cap_names * 2 : 16;
			struct img_entry *p = realloc(fs->names, cap * sizeof *p);

			if (!p) {
				rc = -ENOMEM;
				goto out;
			}
			fs->names = p;
			fs->cap_names = cap;
		}
		snprintf(fs->names[i].name, sizeof fs->names[i].name, "%s", name);
		fs->n_names++;
	}
	*ino = FIRST_IMG_INO + i;
out:
	pthread_mutex_unlock(&fs->names_lock);
	return rc;
}

static int ino_name(struct delayfs *fs, fuse_ino_t ino, char *out, size_t cap)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&fs->names_lock);
	if (ino >= FIRST_IMG_INO && ino - FIRST_IMG_INO < fs->n_names) {
		snprintf(out, cap, "%s", fs->names[ino - FIRST_IMG_INO].name);
		rc = 0;
	}
	pthread_mutex_unlock(&fs->names_lock);
	return rc;
}

/* Attributes of a served file: the source's size and times, read-only. */
static int img_stat(struct delayfs *fs, const char *name, fuse_ino_t ino, struct stat *st)
{
	if (fstatat(fs->src_fd, name, st, 0) != 0)
		return -errno;
	if (!S_ISREG(st->st_mode))
		return -ENOENT;
	st->st_ino = ino;
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	return 0;
}

static void ctl_stat(struct stat *st)
{
	memset(st, 0, sizeof *st);
	st->st_ino = CTL_INO;
	st->st_mode = S_IFREG | 0644;
	st->st_nlink = 1;
	st->st_size = 0; /* direct_io: readers read until EOF regardless */
}

static int ino_stat(struct delayfs *fs, fuse_ino_t ino, struct stat *st)
{
	char name[NAME_MAX + 1];

	if (ino == FUSE_ROOT_ID) {
		memset(st, 0, sizeof *st);
		st->st_ino = FUSE_ROOT_ID;
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (ino == CTL_INO) {
		ctl_stat(st);
		return 0;
	}
	if (ino_name(fs, ino, name, sizeof name) != 0)
		return -ENOENT;
	return img_stat(fs, name, ino, st);
}

/* ---- FUSE operations ---- */

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct delayfs *fs = fuse_req_userdata(req);
	struct fuse_entry_param e;
	fuse_ino_t ino;
	int rc;

	memset(&e, 0, sizeof e);
	if (parent != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (strcmp(name, CTL_NAME) == 0) {
		ctl_stat(&e.attr);
		e.ino = CTL_INO;
	} else {
		rc = name_index(fs, name, &ino);
		if (rc == 0)
			rc = img_stat(fs, name, ino, &e.attr);
		if (rc != 0) {
			fuse_reply_err(req, -rc);
			return;
		}
		e.ino = ino;
	}
	/* short timeouts: images are replaced between benchmark phases */
	e.attr_timeout = 1.0;
	e.entry_timeout = 1.0;
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct delayfs *fs = fuse_req_userdata(req);
	struct stat st;
	int rc = ino_stat(fs, ino, &st);

	if (rc != 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, 1.0);
}

/* Only the control file can be "truncated" (by `echo reset > .delayfs`). */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct stat st;

	if (ino != CTL_INO) {
		fuse_reply_err(req, EROFS);
		return;
	}
	ctl_stat(&st);
	fuse_reply_attr(req, &st, 0.0);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct delayfs *fs = fuse_req_userdata(req);
	char name[NAME_MAX + 1];
	int fd;

	if (ino == CTL_INO) {
		fi->fh = (uint64_t)-1;
		fi->direct_io = 1;
		fuse_reply_open(req, fi);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (ino_name(fs, ino, name, sizeof name) != 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fd = openat(fs->src_fd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	fi->fh = (uint64_t)fd;
	fi->direct_io = 1; /* no page cache here: every read is a device request */
	fi->keep_cache = 0;
	fuse_reply_open(req, fi);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != CTL_INO)
		close((int)fi->fh);
	fuse_reply_err(req, 0);
}

static void ctl_read(struct delayfs *fs, fuse_req_t req, size_t size, off_t off)
{
	char text[CTL_TEXT_MAX];
	size_t len = counters_format(fs, text, sizeof text);

	if ((uint64_t)off >= len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, text + off, len - (size_t)off < size ? len - (size_t)off : size);
}

static uint64_t realtime_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void log_request(struct delayfs *fs, uint64_t came, uint64_t off, uint64_t len)
{
	uint64_t done = realtime_us();

	pthread_mutex_lock(&fs->log_lock);
	fprintf(fs->log, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", came, done, off, len);
	fflush(fs->log);
	pthread_mutex_unlock(&fs->log_lock);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct delayfs *fs = fuse_req_userdata(req);
	uint64_t arrival = bench_now_ns();
	ssize_t n;
	char *buf;

	if (ino == CTL_INO) {
		ctl_read(fs, req, size, off);
		return;
	}
	atomic_max(&fs->max_inflight, atomic_fetch_add(&fs->inflight, 1) + 1);
	buf = malloc(size ? size : 1);
	if (!buf) {
		atomic_fetch_sub(&fs->inflight, 1);
		atomic_fetch_add(&fs->errors, 1);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = pread((int)fi->fh, buf, size, off);
	if (n < 0) {
		int err = errno;

		atomic_fetch_add(&fs->errors, 1);
		atomic_fetch_sub(&fs->inflight, 1);
		free(buf);
		fuse_reply_err(req, err);
		return;
	}
	/* A read at or past the end never reaches a real disk: no delay, not counted. */
	if (n > 0) {
		uint64_t came = fs->log ? realtime_us() : 0;

		count_request(fs, (uint64_t)n);
		if (fs->delay_ns || fs->bw)
			sleep_until(reserve_deadline(fs, arrival, (uint64_t)n));
		if (fs->log)
			log_request(fs, came, (uint64_t)off, (uint64_t)n);
	}
	atomic_fetch_sub(&fs->inflight, 1);
	fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		     off_t off, struct fuse_file_info *fi)
{
	struct delayfs *fs = fuse_req_userdata(req);

	if (ino != CTL_INO) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (size >= 5 && memcmp(buf, "reset", 5) == 0)
		counters_reset(fs);
	else if (size >= 4 && memcmp(buf, "dump", 4) == 0)
		counters_dump(fs);
	else {
		fuse_reply_err(req, EINVAL);
		return;
	}
	fuse_reply_write(req, size);
}

static int add_dirent(fuse_req_t req, char *buf, size_t cap, size_t *len, const char *name,
		      fuse_ino_t ino, mode_t mode, off_t next)
{
	struct stat st = { .st_ino = ino, .st_mode = mode };
	size_t need = fuse_add_direntry(req, NULL, 0, name, NULL, 0);

	if (*len + need > cap)
		return 0;
	fuse_add_direntry(req, buf + *len, cap - *len, name, &st, next);
	*len += need;
	return 1;
}

/* Entries: ".", "..", the control file, then every regular file of SRCDIR.
 * The offset of an entry is its position in that list plus one. */
static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct delayfs *fs = fuse_req_userdata(req);
	char *buf = malloc(size);
	size_t len = 0;
	off_t pos = 0;
	struct dirent *de;
	DIR *d;
	int fd;

	if (ino != FUSE_ROOT_ID || !buf) {
		free(buf);
		fuse_reply_err(req, ino != FUSE_ROOT_ID ? ENOTDIR : ENOMEM);
		return;
	}
	fd = openat(fs->src_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		free(buf);
		fuse_reply_err(req, err);
		return;
	}
	if (pos++ >= off && !add_dirent(req, buf, size, &len, ".", FUSE_ROOT_ID, S_IFDIR, pos))
		goto done;
	if (pos++ >= off && !add_dirent(req, buf, size, &len, "..", FUSE_ROOT_ID, S_IFDIR, pos))
		goto done;
	if (pos++ >= off && !add_dirent(req, buf, size, &len, CTL_NAME, CTL_INO, S_IFREG, pos))
		goto done;
	while ((de = readdir(d)) != NULL) {
		fuse_ino_t e_ino;
		struct stat st;

		if (fstatat(fs->src_fd, de->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (pos++ < off)
			continue;
		if (name_index(fs, de->d_name, &e_ino) != 0 ||
		    !add_dirent(req, buf, size, &len, de->d_name, e_ino, S_IFREG, pos))
			break;
	}
done:
	closedir(d);
	fuse_reply_buf(req, buf, len);
	free(buf);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	memset(&sv, 0, sizeof sv);
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_namemax = NAME_MAX;
	fuse_reply_statfs(req, &sv);
}

/* The kernel's read size limit must match the max_read mount option. */
static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct delayfs *fs = userdata;

	conn->max_read = fs->max_read;
}

static void op_destroy(void *userdata)
{
	counters_dump(userdata);
}

static const struct fuse_lowlevel_ops delayfs_ops = {
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.open = op_open,
	.release = op_release,
	.read = op_read,
	.write = op_write,
	.readdir = op_readdir,
	.statfs = op_statfs,
	.init = op_init,
	.destroy = op_destroy,
};

/* ---- options ---- */

struct cmdline {
	char *srcdir;
	char *delay;
	char *stats;
	char *log;
	unsigned channels;
	unsigned max_read;
	unsigned bw_mbs;
};

static const struct fuse_opt delayfs_opts[] = {
	{ "delay=%s", offsetof(struct cmdline, delay), 0 },
	{ "stats=%s", offsetof(struct cmdline, stats), 0 },
	{ "log=%s", offsetof(struct cmdline, log), 0 },
	{ "channels=%u", offsetof(struct cmdline, channels), 0 },
	{ "max_read=%u", offsetof(struct cmdline, max_read), 0 },
	{ "bw=%u", offsetof(struct cmdline, bw_mbs), 0 },
	FUSE_OPT_END
};

/* The first non-option argument is SRCDIR; the second (MOUNTPOINT) is left for libfuse. */
static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct cmdline *c = data;

	if (key == FUSE_OPT_KEY_NONOPT && !c->srcdir) {
		c->srcdir = strdup(arg);
		return 0;
	}
	return 1;
}

static void usage(const char *prog)
{
	printf("usage: %s SRCDIR MOUNTPOINT [options]\n"
	       "Serve SRCDIR's files read-only (direct_io) with a fixed delay per read request.\n"
	       "  -o delay=TIME     per-request latency: 1ms, 250us, 0 (default 1ms)\n"
	       "  -o channels=N     requests served in parallel, others queue (default 1)\n"
	       "  -o bw=N           after its delay each request's bytes cross one shared\n"
	       "                    link of N MB/s, one transfer at a time (default 0: none)\n"
	       "  -o stats=FILE     write the counters here on SIGUSR1 and at unmount\n"
	       "  -o log=FILE       one line per request: arrival and answer (realtime us),\n"
	       "                    offset, length (an absolute path)\n"
	       "  -o max_read=N     largest request in bytes (default 1048576)\n"
	       "  -f, -s, -d        foreground, single-threaded, debug\n"
	       "Counters: cat MOUNTPOINT/" CTL_NAME "; reset: echo reset > MOUNTPOINT/" CTL_NAME "\n",
	       prog);
}

/* SIGUSR1 is blocked in every thread; this one waits for it and dumps the counters. */
static void *signal_thread(void *arg)
{
	struct delayfs *fs = arg;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	for (;;)
		if (sigwait(&set, &sig) == 0 && sig == SIGUSR1)
			counters_dump(fs);
	return NULL;
}

static int delayfs_init(struct delayfs *fs, const struct cmdline *c)
{
	memset(fs, 0, sizeof *fs);
	fs->delay_ns = 1000000;
	if (c->delay && bench_parse_duration_ns(c->delay, &fs->delay_ns) != 0) {
		fprintf(stderr, "delayfs: bad delay '%s' (want e.g. 1ms, 250us)\n", c->delay);
		return -1;
	}
	fs->channels = c->channels ? c->channels : 1;
	fs->bw = (uint64_t)c->bw_mbs * 1000000u;
	fs->max_read = c->max_read ? c->max_read : 1u << 20;
	if (fs->channels > MAX_CHANNELS) {
		fprintf(stderr, "delayfs: channels=%u: at most %d\n", fs->channels, MAX_CHANNELS);
		return -1;
	}
	fs->src_fd = open(c->srcdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fs->src_fd < 0) {
		fprintf(stderr, "delayfs: %s: %s\n", c->srcdir, strerror(errno));
		return -1;
	}
	if (c->stats) {
		/* keep an absolute path: the daemon changes directory to / */
		fs->stats_path = c->stats[0] == '/' ? strdup(c->stats) : realpath(".", NULL);
		if (fs->stats_path && c->stats[0] != '/') {
			char *p = malloc(strlen(fs->stats_path) + strlen(c->stats) + 2);

			if (p)
				sprintf(p, "%s/%s", fs->stats_path, c->stats);
			free(fs->stats_path);
			fs->stats_path = p;
		}
		if (!fs->stats_path) {
			close(fs->src_fd);
			return -1;
		}
	}
	if (c->log && !(fs->log = fopen(c->log, "ae"))) {
		fprintf(stderr, "delayfs: %s: %s\n", c->log, strerror(errno));
		free(fs->stats_path);
		close(fs->src_fd);
		return -1;
	}
	pthread_mutex_init(&fs->chan_lock, NULL);
	pthread_mutex_init(&fs->names_lock, NULL);
	pthread_mutex_init(&fs->log_lock, NULL);
	return 0;
}

static void delayfs_fini(struct delayfs *fs)
{
	pthread_mutex_destroy(&fs->chan_lock);
	pthread_mutex_destroy(&fs->names_lock);
	pthread_mutex_destroy(&fs->log_lock);
	if (fs->log)
		fclose(fs->log);
	free(fs->names);
	free(fs->stats_path);
	close(fs->src_fd);
}

static int serve(struct fuse_args *args, struct fuse_cmdline_opts *o, struct delayfs *fs)
{
	struct fuse_session *se;
	pthread_t sig_tid;
	sigset_t set;
	int rc = 1;

	se = fuse_session_new(args, &delayfs_ops, sizeof delayfs_ops, fs);
	if (!se)
		return 1;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_destroy;
	if (fuse_session_mount(se, o->mountpoint) != 0)
		goto out_signals;
	if (fuse_daemonize(o->foreground) != 0)
		goto out_unmount;
	/* after daemonize (fork): block SIGUSR1 so only signal_thread takes it */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (pthread_create(&sig_tid, NULL, signal_thread, fs) == 0)
		pthread_detach(sig_tid);
	if (o->singlethread) {
		rc = fuse_session_loop(se) != 0;
	} else {
		struct fuse_loop_config *cfg = fuse_loop_cfg_create();

		if (!cfg)
			goto out_unmount;
		fuse_loop_cfg_set_clone_fd(cfg, o->clone_fd);
		fuse_loop_cfg_set_max_threads(cfg, 2 * MAX_CHANNELS);
		if (o->max_idle_threads != UINT_MAX)
			fuse_loop_cfg_set_idle_threads(cfg, o->max_idle_threads);
		rc = fuse_session_loop_mt(se, cfg) != 0;
		fuse_loop_cfg_destroy(cfg);
	}
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_destroy:
	fuse_session_destroy(se);
	return rc;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts o;
	struct cmdline c = { 0 };
	struct delayfs fs;
	char maxread[64];
	int rc = 1;

	if (fuse_opt_parse(&args, &c, delayfs_opts, opt_proc) != 0)
		return 2;
	if (fuse_parse_cmdline(&args, &o) != 0)
		return 2;
	if (o.show_help || !c.srcdir || !o.mountpoint) {
		usage(argv[0]);
		rc = o.show_help ? 0 : 2;
		goto out;
	}
	if (o.show_version) {
		printf("delayfs (libfuse %s)\n", fuse_pkgversion());
		rc = 0;
		goto out;
	}
	if (delayfs_init(&fs, &c) != 0)
		goto out;
	/* 1 MiB requests by default (the FUSE limit here is 256 pages) */
	snprintf(maxread, sizeof maxread, "-omax_read=%u,fsname=delayfs,subtype=delayfs",
		 fs.max_read);
	if (fuse_opt_insert_arg(&args, 1, maxread) != 0) {
		delayfs_fini(&fs);
		goto out;
	}
	rc = serve(&args, &o, &fs);
	delayfs_fini(&fs);
out:
	free(o.mountpoint);
	free(c.srcdir);
	free(c.delay);
	free(c.stats);
	fuse_opt_free_args(&args);
	return rc;
}
