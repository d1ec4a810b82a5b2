/* SPDX-License-Identifier: MIT */
/*
 * The mount daemon: open the image and build the namespace (so a bad image is
 * refused before anything is mounted), mount, detach from the terminal, serve
 * until unmounted or signalled, then write stats and free everything.
 *
 * Daemon mode forks first, before any thread exists (the cache starts workers),
 * and the child tells the parent over a pipe whether the mount worked, so
 * errors reach the caller's terminal and exit status.
 *
 * Signals: SIGTERM/SIGINT/SIGHUP end the session (libfuse's handlers), SIGUSR1
 * writes the stats file, SIGUSR2 clears the fault plan of fault= mounts. The
 * latter two are taken by a thread in sigwait(), so no handler touches state.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <syslog.h>
#include <unistd.h>
#include "daemon.h"
#include "../cairn/cli.h"

#define READ_AHEAD_KB 4096
#define READ_AHEAD_PREFETCH_KB 16
#define DAEMON_READAHEAD (256u << 10)
#define MAX_THREADS 10 /* libfuse's own default */
#define DAEMON_BUDGET (12u << 20)

static void errf(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "cairn mount: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
}

void daemon_log(const struct daemon *cf, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (cf->to_syslog) {
		vsyslog(LOG_ERR, fmt, ap);
	} else {
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
}

/* ---- stats ---- */

static void rss_kb(uint64_t *rss, uint64_t *hwm)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	*rss = *hwm = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "VmRSS:", 6))
			*rss = strtoull(line + 6, NULL, 10);
		else if (!strncmp(line, "VmHWM:", 6))
			*hwm = strtoull(line + 6, NULL, 10);
	}
	fclose(f);
}

static void write_verify_stats(FILE *f, struct daemon *cf)
{
	struct cairn_verify_stats vs;

	if (cairn_bdev_verify_stats(cairn_cache_bdev(cairn_image_cache(cf->img)), &vs))
		return;
	fprintf(f, "verify_granules %" PRIu64 "\nverify_bytes %" PRIu64
		"\nverify_mismatches %" PRIu64 "\nverify_eio_reads %" PRIu64 "\n", vs.granules,
		vs.bytes, vs.mismatches, __atomic_load_n(&cf->bad_reads, __ATOMIC_RELAXED));
}

/* "key value" lines, replaced atomically so readers never see half a file. */
static void write_stats(struct daemon *cf)
{
	const char *path = cf->stats_path;
	struct cairn_ns_usage u;
	uint64_t rss, hwm;
	struct rusage ru;
	char tmp[PATH_MAX];
	FILE *f;

	if (!path || snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return;
	f = fopen(tmp, "w");
	if (!f)
		return;
	if (cf->img) {
		struct cairn_bdev_counters dc;
		struct cairn_cache_stats cs;
		struct cairn_chunk_cache_stats zs;

		if (cairn_stack_counters(cf->stack, &dc) == 0) {
			fprintf(f, "device_requests %" PRIu64 "\n", dc.requests);
			fprintf(f, "device_bytes %" PRIu64 "\n", dc.bytes);
			fprintf(f, "device_errors %" PRIu64 "\n", dc.errors);
			/* request sizes: bucket i counts [2^(i+9), 2^(i+10)) bytes */
			fprintf(f, "device_size_hist");
			for (int i = 0; i < CAIRN_STATS_BUCKETS; i++)
				fprintf(f, " %" PRIu64, dc.hist[i]);
			fputc('\n', f);
		}
		cairn_cache_get_stats(cairn_image_cache(cf->img), &cs);
		fprintf(f, "cache_hits %" PRIu64 "\ncache_misses %" PRIu64 "\n", cs.hits,
			cs.misses);
		fprintf(f, "cache_requests %" PRIu64 "\ncache_bytes %" PRIu64 "\n", cs.requests,
			cs.bytes);
		fprintf(f, "readahead_bytes %" PRIu64 "\nreadahead_used %" PRIu64
			"\nreadahead_wasted %" PRIu64 "\n",
			cs.readahead_bytes, cs.readahead_used, cs.readahead_wasted);
		fprintf(f, "cache_evictions %" PRIu64 "\ncache_resident_bytes %" PRIu64
			"\ncache_errors %" PRIu64 "\ncache_dropped %" PRIu64 "\n",
			cs.evictions, cs.resident_bytes, cs.errors, cs.dropped);
		/* time FUSE reads (through the cache) spent on hashing: their own or
		 * waiting for another thread's; 0 with verify=none */
		fprintf(f, "cache_verify_wait_us %" PRIu64 "\ncache_verify_read_bytes %" PRIu64 "\n",
			cs.verify_wait_ns / 1000, cs.verify_read_bytes);
		/* image reads replied from segment memory, no copy (the rest copied) */
		fprintf(f, "cache_lent_bytes %" PRIu64 "\n", cs.lent_bytes);
		write_verify_stats(f, cf);
		if (cairn_image_chunk_cache_stats(cf->img, &zs) == 0)
			fprintf(f, "chunk_hits %" PRIu64 "\nchunk_misses %" PRIu64
				"\nchunk_waits %" PRIu64 "\nchunk_readahead %" PRIu64
				"\nchunk_evictions %" PRIu64 "\nchunk_dropped %" PRIu64
				"\nchunk_decompressed_bytes %" PRIu64
				"\nchunk_resident_bytes %" PRIu64 "\nchunk_lent_bytes %" PRIu64 "\n",
				zs.hits, zs.misses, zs.waits, zs.readahead, zs.evictions,
				zs.dropped, zs.decompressed_bytes, zs.resident_bytes,
				zs.lent_bytes);
		cli_print_remote_stats(f, cairn_cache_bdev(cairn_image_cache(cf->img)), "kv");
	}
	if (cf->img)
		fprintf(f, "fuse_image_reads %" PRIu64 "\nfuse_image_read_bytes %" PRIu64 "\n",
			__atomic_load_n(&cf->image_reads, __ATOMIC_RELAXED),
			__atomic_load_n(&cf->image_read_bytes, __ATOMIC_RELAXED));
	if (cf->prefetching && cf->profile.records)
		fprintf(f, "profile_records %" PRIu64 "\nprofile_missing %" PRIu64
			"\nprofile_past_eof %" PRIu64 "\nprofile_ranges %" PRIu64
			"\nprofile_bytes %" PRIu64 "\nprofile_held %d\n", cf->profile.records,
			cf->profile.missing, cf->profile.past_eof, cf->profile.ranges,
			cf->profile.bytes, cf->profile_held);
	if (cf->shipped_requests)
		fprintf(f, "profile_shipped_requests %" PRIu64 "\nprofile_shipped %d\n",
			cf->shipped_requests, cf->shipped_used);
	if (cf->push) {
		struct push_stats ps;

		push_counts(cf->push, &ps);
		fprintf(f, "push_files %" PRIu64 "\npush_chunks %" PRIu64 "\npush_bytes %" PRIu64
			"\npush_served_bytes %" PRIu64 "\n", ps.files, ps.spans, ps.bytes, ps.served);
		/* ranges push_served visited, against all it would have scanned */
		fprintf(f, "push_served_calls %" PRIu64 "\npush_served_visits %" PRIu64
			"\npush_served_queued %" PRIu64 "\n", ps.served_calls, ps.served_visits,
			ps.served_queued);
	}
	cairn_ns_usage(cf->ns, &u);
	fprintf(f, "ns_nodes %" PRIu64 "\nns_refs %" PRIu64 "\nns_copy_ups %" PRIu64
		"\nns_over_forgets %" PRIu64 "\n", u.nodes, u.refs, u.copy_ups, u.over_forgets);
	fprintf(f, "ram_data_bytes %" PRIu64 "\nram_meta_bytes %" PRIu64 "\nram_inodes %" PRIu64
		"\n", u.ram.data_bytes, u.ram.meta_bytes, u.ram.inodes);
	rss_kb(&rss, &hwm);
	fprintf(f, "rss_kb %" PRIu64 "\nrss_peak_kb %" PRIu64 "\n", rss, hwm);
	/* CPU of every thread so far, gone ones included: beside wall time on a
	 * shared machine, the cost that does not depend on the other load. */
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		fprintf(f, "cpu_user_us %lld\ncpu_sys_us %lld\n",
			(long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
			(long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec);
	if (fclose(f) == 0)
		rename(tmp, path);
	else
		unlink(tmp);
}

/* ---- helper threads ---- */

int daemon_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t end, old;
	int rc;

	sigemptyset(&end);
	sigaddset(&end, SIGTERM);
	sigaddset(&end, SIGINT);
	sigaddset(&end, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &end, &old); /* inherited by the new thread */
	rc = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

struct sig_thread {
	struct daemon *cf;
	pthread_t tid;
	int quit;
};

static void *sig_main(void *arg)
{
	struct sig_thread *st = arg;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	for (;;) {
		if (sigwait(&set, &sig))
			continue;
		if (__atomic_load_n(&st->quit, __ATOMIC_ACQUIRE))
			break;
		if (sig == SIGUSR1)
			write_stats(st->cf);
		else if (sig == SIGUSR2 && st->cf->stack && cairn_stack_fault_dev(st->cf->stack))
			cairn_bdev_fault_set(cairn_stack_fault_dev(st->cf->stack), NULL);
	}
	return NULL;
}

/* Started once the daemon is set up and stopped before it is torn down, so
 * write_stats never meets a field being written or freed. 1 if it runs. */
static int sig_thread_start(struct sig_thread *st)
{
	return daemon_thread_create(&st->tid, sig_main, st) == 0;
}

static void sig_thread_stop(struct sig_thread *st)
{
	__atomic_store_n(&st->quit, 1, __ATOMIC_RELEASE);
	pthread_kill(st->tid, SIGUSR1);
	pthread_join(st->tid, NULL);
}

/* The bdi read-ahead for this mount, in KiB; -1 keeps the kernel's default. A
 * traced mount turns it off, so the trace records the pages the program itself
 * read, not read-ahead windows around them. A prefetched mount keeps at most
 * the small default: the pages it needs are pushed ahead of it (push.c), and a
 * page outside the hot ranges should not pull a window of cold data with it.
 * For the hot prefix of an ordered image even the kernel's 128 KiB was too
 * much: a fault next to a hot range read around into a cold chunk of the
 * file, and the READ, with the page the program waits for, then waited for
 * that chunk's request behind the prefix's on a network disk (Java Hello,
 * zstd ordered + prefetch: 17 -> 13 requests; docs/bench/compression.md). A
 * reader of cold data loses little: a page read alone pushes the rest of its
 * chunk or segment (push.c). A profile (learnt from read-ahead windows, and
 * made for remote images, where each extra request costs 20 ms) keeps the
 * kernel's default. -o read_ahead= overrides all of these. */
static int read_ahead_kb(const struct daemon *cf)
{
	if (cf->o->read_ahead_kb >= 0)
		return (int)cf->o->read_ahead_kb;
	if (cf->trace && !cf->learn_default)
		return 0;
	if (!cf->prefetching)
		return READ_AHEAD_KB;
	return cf->profiled ? -1 : READ_AHEAD_PREFETCH_KB;
}

/* Writes val to the mount's /sys/class/bdi/MAJ:MIN/<knob>; quietly does nothing
 * where that is not allowed (not root) or the knob does not exist (old kernel). */
static void bdi_set(const struct stat *mnt, const char *knob, int val)
{
	char path[96], text[16];
	int fd, n;

	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/%s", major(mnt->st_dev),
		 minor(mnt->st_dev), knob);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = snprintf(text, sizeof(text), "%d", val);
	if (write(fd, text, (size_t)n) < 0) {
		/* keep the kernel's value */
	}
	close(fd);
}

/* Tune the mount's bdi once the kernel has taken the INIT reply (which sets
 * it up, and can only lower the read-ahead). stat() of the mount root waits for
 * INIT to complete.
 * - read_ahead_kb: above.
 * - strict_limit, with -o writeback: FUSE marks its bdi strictly limited (1 % of
 *   the dirty memory, about 40 MB here), so that a daemon cannot gather much
 *   dirty data; a writer past that waits for write-back at the daemon's pace
 *   (seed 001 at 64 MiB: 8-10 us per write against 3 us). Our daemon keeps its
 *   files in RAM anyway, so the bdi may share the system's dirty limits like
 *   any local file system. */
static void *bdi_main(void *arg)
{
	struct daemon *cf = arg;
	int kb = read_ahead_kb(cf);
	struct stat st;

	pthread_mutex_lock(&cf->init_lock);
	while (!cf->init_done)
		pthread_cond_wait(&cf->init_cond, &cf->init_lock);
	pthread_mutex_unlock(&cf->init_lock);
	if (fuse_session_exited(cf->se) || stat(cf->mnt_abs, &st))
		return NULL;
	if (kb >= 0)
		bdi_set(&st, "read_ahead_kb", kb);
	if (cf->o->writeback)
		bdi_set(&st, "strict_limit", 0);
	return NULL;
}

/* ---- setup ---- */

/* stats= is written only at unmount (and on SIGUSR1), long after the command
 * returned, so a path that cannot be written is refused now, as trace= is. It is
 * kept absolute: the detached daemon runs in /. */
static int check_stats_file(struct daemon *cf, const char *file)
{
	char dir[PATH_MAX], *slash;
	struct stat st;
	int n;

	if (file[0] == '/')
		n = snprintf(dir, sizeof(dir), "%s", file);
	else if (getcwd(dir, sizeof(dir)))
		n = snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/%s", file);
	else
		n = -1;
	if (n < 0 || (size_t)n >= sizeof(dir) - 4) {
		errf("-o stats=%s: %s", file, "path too long");
		return -1;
	}
	cf->stats_path = strdup(dir);
	if (!cf->stats_path) {
		errf("-o stats=%s: %s", file, strerror(ENOMEM));
		return -1;
	}
	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
		errf("-o stats=%s: %s", file, "is a directory");
		return -1;
	}
	slash = strrchr(dir, '/');
	*(slash == dir ? slash + 1 : slash) = 0;
	/* The file is replaced by rename() from FILE.tmp: its directory is written. */
	if (access(dir, W_OK | X_OK)) {
		fprintf(stderr, "cairn mount: -o stats=%s: cannot write in %s: %s\n", file, dir,
			strerror(errno));
		return -1;
	}
	return 0;
}

struct covered {
	const char *dir;
	char *type;
	size_t len;
};

static int note_type(const struct mountinfo_entry *e, void *arg)
{
	struct covered *c = arg;

	if (!strcmp(e->point, c->dir))
		snprintf(c->type, c->len, "%s", e->fstype);
	return 0;
}

/* Type of the file system mounted last on the absolute path `dir` (the one a
 * mount there would cover), or "" when dir is no mount point. */
static void mounted_type(const char *dir, char *type, size_t len)
{
	struct covered c = { dir, type, len };

	type[0] = 0;
	mountinfo_each(note_type, &c);
}

/* Refuses what would leave a broken or hidden mount: a mount point that is not a
 * directory, one where a cairn image is already mounted (it would be stacked
 * over, silently), and a dead FUSE mount (its daemon was killed), with the
 * command that clears it. Resolves the mount point into abs. */
static int check_mountpoint(const char *mnt, char abs[PATH_MAX])
{
	struct statfs sfs;
	struct stat st;
	char type[64];

	if (stat(mnt, &st) || !realpath(mnt, abs) || statfs(abs, &sfs)) {
		if (errno == ENOTCONN)
			fprintf(stderr, "cairn mount: %s: a dead mount is there (its daemon is gone); "
				"unmount it with `fusermount3 -u %s`, then mount again\n", mnt, mnt);
		else
			errf("%s: %s", mnt, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		errf("%s: %s", mnt, "not a directory (a mount point must be one)");
		return -1;
	}
	mounted_type(abs, type, sizeof(type));
	if (!strcmp(type, "fuse.cairn")) {
		fprintf(stderr, "cairn mount: %s: a cairn image is already mounted there; unmount "
			"it first (`fusermount3 -u %s`)\n", mnt, mnt);
		return -1;
	}
	return 0;
}

/* The profile to prefetch: prefetch=TRACE, else learn=FILE once it exists (or,
 * for a remote image with a disk cache, <cache dir>/<image key>.profile: learning
 * is the default there), else IMAGE.profile shipped beside a local image (unless
 * noprofile; for a remote one, URL.profile comes from the server, remote_fetch).
 * A profile that is stale for this image is used as far as it matches; one that
 * cannot be read fails the mount when it was asked for, and is ignored when it
 * is a default. */
static const char *profile_path(const struct daemon *cf, const struct mount_opts *o,
				char beside[PATH_MAX])
{
	if (o->prefetch_file || cf->learn_path)
		return o->prefetch_file ? o->prefetch_file : cf->learn_path;
	if (!o->no_profile && !cairn_url_is_remote(o->image) &&
	    snprintf(beside, PATH_MAX, "%s.profile", o->image) < PATH_MAX &&
	    access(beside, F_OK) == 0)
		return beside;
	return NULL;
}

/* Whether a remote image takes its profile by default (from the server, and
 * learnt into its disk cache): nothing was said about profiles. */
static int remote_default(const struct mount_opts *o)
{
	return !o->empty && cairn_url_is_remote(o->image) && !o->no_profile &&
	       !o->prefetch_file && !o->learn_file;
}

/* Whether the mount will prefetch (and so hold its hot data in the cache). */
static int will_prefetch(const struct daemon *cf, const struct mount_opts *o)
{
	char beside[PATH_MAX];
	const char *path = profile_path(cf, o, beside);

	return o->prefetch || (path && access(path, F_OK) == 0);
}

/* URL.profile, asked for while the image opens (a thread of its own), so that
 * it costs the mount no round trip of its own; a 404 is the usual answer. */
struct remote_fetch {
	const struct mount_opts *o;
	pthread_t tid;
	int started, rc;
	char why[256];
	char *text;
	size_t len;
	uint64_t requests;
};

static void *remote_fetch_main(void *arg)
{
	struct remote_fetch *f = arg;

	f->rc = cli_fetch_beside(f->o->image, &f->o->open, ".profile", CAIRN_PROFILE_MAX_TEXT,
				 f->why, sizeof(f->why), &f->text, &f->len, &f->requests);
	return NULL;
}

static void remote_fetch_start(struct remote_fetch *f, const struct mount_opts *o)
{
	memset(f, 0, sizeof(*f));
	f->o = o;
	f->started = daemon_thread_create(&f->tid, remote_fetch_main, f) == 0;
}

/* Joins the fetch; the text (if any) goes to cf. Why the profile was not
 * used is said only when the image itself opened (open_rc 0): after a failed
 * open it is the same failure again. */
static void remote_fetch_end(struct daemon *cf, struct remote_fetch *f, int open_rc)
{
	char url[PATH_MAX + 16];

	if (!f->started)
		return;
	pthread_join(f->tid, NULL);
	cf->shipped_requests = f->requests;
	/* A server that answers every path with the same file sends no profile. */
	if (f->rc == 0 && memchr(f->text, 0, f->len)) {
		free(f->text);
		f->rc = -EINVAL;
		snprintf(f->why, sizeof(f->why), "binary data, not a trace");
	}
	if (f->rc == 0) {
		cf->shipped = f->text;
		cf->shipped_len = f->len;
	} else if (f->rc != -ENOENT && open_rc == 0) {
		snprintf(url, sizeof(url), "%s.profile", f->o->image);
		fprintf(stderr, "cairn mount: %s: profile not used: %s%s%s\n", url,
			cairn_strerror(f->rc), f->why[0] ? ": " : "", cli_why_tail(url, f->why));
	}
}

static int learn_paths(struct daemon *cf, const char *file);

/* A remote image with a disk cache learns its profile there by default:
 * DIR/KEY.profile, KEY naming this very image, so another image's never meets
 * it. Not while tracing for mkfs --order (that trace is the user's). */
static int learn_in_cache(struct daemon *cf, const struct mount_opts *o)
{
	char path[PATH_MAX];

	if (!remote_default(o) || o->trace_file ||
	    cairn_bdev_diskcache_file(cairn_stack_bdev(cf->stack), ".profile", path,
				      sizeof(path)))
		return 0;
	cf->learn_default = 1;
	return learn_paths(cf, path);
}

/* A profile that comes by default and cannot be used is said and skipped. */
static void not_used(const char *what, const char *suffix, int rc)
{
	fprintf(stderr, "cairn mount: %s%s: profile not used: %s\n", what, suffix,
		cairn_strerror(rc));
}

static int load_profile(struct daemon *cf, const struct mount_opts *o)
{
	char beside[PATH_MAX];
	const char *path = profile_path(cf, o, beside);
	int rc = -ENOENT;

	cf->prefetching = o->prefetch;
	if (path)
		rc = cairn_image_profile_load_file(cf->img, path, &cf->profile);
	if (rc == -ENOENT && path == cf->learn_path)
		; /* nothing learnt yet */
	else if (rc && path && (path == beside || cf->learn_default))
		not_used(path, "", rc);
	else if (rc && path) {
		errf("%s: cannot read the profile: %s", path, cairn_strerror(rc));
		return -1;
	}
	/* Nothing learnt yet (the first learning run only traces): the profile
	 * shipped beside a remote image, if any, which the learnt one then starts
	 * from. */
	if (rc && cf->shipped) {
		rc = cairn_image_profile_load(cf->img, cf->shipped, cf->shipped_len, &cf->profile);
		if (rc)
			not_used(o->image, ".profile", rc);
		cf->shipped_used = rc == 0;
	}
	if (rc == 0)
		cf->prefetching = cf->profiled = 1;
	/* A profile named by prefetch= that matches nothing is used as far as it
	 * matches, never refused; but a user who gave the wrong file hears of it. */
	if (rc == 0 && path && path != beside && path != cf->learn_path && !cf->profile.ranges)
		fprintf(stderr, "cairn mount: %s: warning: no range of the profile is in this "
			"image (of %" PRIu64 " records, %" PRIu64 " name no file of it and %" PRIu64
			" start past its end); nothing is prefetched\n", path,
			cf->profile.records, cf->profile.missing, cf->profile.past_eof);
	return 0;
}

/* Holds an flock of the directory holding a profile while its files change
 * (a save, a sweep), so that mounts sharing it (a disk cache directory) take
 * turns. Returns the descriptor to pass to dir_unlock(), or -1 (then unlocked:
 * every change is still atomic on its own). */
static int dir_lock(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	while (fd >= 0 && flock(fd, LOCK_EX) && errno == EINTR)
		;
	return fd;
}

static void dir_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* drops the lock */
}

/* Whether name is FILE.XXXXXX, a save's temporary file (mkstemp). */
static int is_save_tmp(const char *name, const char *base, size_t blen)
{
	return !strncmp(name, base, blen) && name[blen] == '.' && strlen(name + blen + 1) == 6 &&
	       !strchr(name + blen + 1, '.');
}

/* Traces FILE.trace.PID of learning runs that died before saving (kill -9): no
 * run holds one any more. Their reads were never joined to the profile. A live
 * run holds a lock on its trace (learn_lock): a PID alone cannot tell, since a
 * killed daemon may stay a zombie where nothing reaps it, and PIDs are reused.
 * With tmps (a disk cache directory, where no file is the user's), also the
 * temporary files of saves killed before their rename: saves hold the
 * directory's lock, which the sweep holds too. */
static void learn_sweep(const char *dir, const char *base, int tmps)
{
	size_t blen = strlen(base);
	int lock = dir_lock(dir);
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		int fd;

		if (tmps && lock >= 0 && is_save_tmp(e->d_name, base, blen)) {
			unlinkat(dirfd(d), e->d_name, 0);
			continue;
		}
		if (strncmp(e->d_name, base, blen) || strncmp(e->d_name + blen, ".trace.", 7))
			continue;
		fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue; /* gone already, or not ours to read */
		if (flock(fd, LOCK_EX | LOCK_NB) == 0 && unlinkat(dirfd(d), e->d_name, 0)) {
			/* someone else's directory entry: leave it */
		}
		close(fd);
	}
	if (d)
		closedir(d);
	dir_unlock(lock);
}

/* Holds a lock on this run's trace for the daemon's life, so a sweep by another
 * learning run leaves it alone (the descriptor is never closed: exit drops it). */
static int learn_lock(const char *trace)
{
	int fd = open(trace, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB)) {
		errf("%s: cannot lock this run's trace: %s", trace, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return 0;
}

/* learn=FILE: the profile and this run's trace beside it, as absolute paths (the
 * daemon leaves the working directory before it writes them back). */
static int learn_paths(struct daemon *cf, const char *file)
{
	char dir[PATH_MAX], abs[PATH_MAX];
	const char *slash = strrchr(file, '/'), *base = slash ? slash + 1 : file;

	if (!*base || snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - file + 1) : 1,
			       slash ? file : ".") >= (int)sizeof(dir) ||
	    !realpath(dir, abs)) {
		errf("%s: %s", file, *base ? strerror(errno) : "not a file name");
		return -1;
	}
	if (asprintf(&cf->learn_path, "%s/%s", abs, base) < 0 ||
	    asprintf(&cf->learn_trace, "%s/%s.trace.%ld", abs, base, (long)getpid()) < 0) {
		errf("%s: %s", file, strerror(ENOMEM));
		return -1;
	}
	learn_sweep(abs, base, cf->learn_default);
	return 0;
}

/* At unmount: this run's trace joins the profile, written atomically. Another
 * mount sharing the file (two mounts of one image with one disk cache) may have
 * saved since this one loaded it: what it added is joined first, under the
 * directory's lock, so neither run's ranges are lost. */
static void learn_save(struct daemon *cf)
{
	char dir[PATH_MAX];
	int lock, rc;

	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(cf->learn_path, '/') - cf->learn_path),
		 cf->learn_path);
	lock = dir_lock(dir[0] ? dir : "/");
	(void)cairn_image_profile_load_file(cf->img, cf->learn_path, NULL); /* advice */
	rc = cairn_image_profile_save(cf->img, cf->learn_trace, cf->learn_path, NULL);
	dir_unlock(lock);
	if (rc)
		errf("%s: cannot save the profile: %s", cf->learn_path, cairn_strerror(rc));
	unlink(cf->learn_trace);
}

struct problems {
	const char *image;
	unsigned shown;
};

/* The first few problems name the damage; the rest would drown it. */
static void report_problem(void *ctx, const char *msg)
{
	struct problems *p = ctx;

	if (p->shown++ < 3)
		fprintf(stderr, "cairn mount: %s: %s\n", p->image, msg);
}

/* Check every metadata block and structure before mounting (not file data), so a
 * damaged image is refused up front rather than giving EIO later. Metadata sits
 * together (at the front, or compressed after the data), so this is one or a
 * few large reads that lookups would make anyway; above CAIRN_VERIFY_MAX of
 * logical metadata (what it decompresses and holds) it is left to first use. */
#define CAIRN_VERIFY_MAX (4u << 20)
static int image_compressed(const struct cairn_image *img)
{
	struct cairn_image_info info;

	cairn_image_get_info(img, &info);
	return info.chunk_size != 0;
}

static int verify_meta(struct cairn_image *img, const struct mount_opts *o)
{
	struct cairn_image_info info;
	struct problems p = { o->image, 0 };
	long problems;

	cairn_image_get_info(img, &info);
	if (o->verify == MOUNT_VERIFY_NONE || o->verify == MOUNT_VERIFY_LAZY ||
	    (o->verify == MOUNT_VERIFY_AUTO && info.meta_len > CAIRN_VERIFY_MAX))
		return 0;
	problems = cairn_image_fsck(img, 0, report_problem, &p);
	if (problems == 0)
		return 0;
	if (problems < 0)
		errf("%s: cannot check the image: %s", o->image, cairn_strerror((int)problems));
	else
		fprintf(stderr, "cairn mount: %s: corrupt image (%ld problems, `cairn fsck` lists "
			"them); not mounted\n", o->image, problems);
	return -1;
}

static int open_layers(struct daemon *cf, const struct mount_opts *o)
{
	struct cairn_ns_config nc;
	char bad_tmp[PATH_MAX] = "";
	uint64_t dflt; /* the RAM layer's default bound, tmpfs's: computed once */
	int rc;

	if (!o->empty) {
		static const struct cairn_fault_config no_faults; /* read-only */
		struct cli_open_cfg oo = o->open;
		struct remote_fetch fetch;
		struct cairn_stat st;
		char why[256] = "";
		int lean;

		/* The fault device starts idle: the plan applies once the mount is up,
		 * so tests count requests of their own reads, not of the mount. */
		oo.fault = o->has_fault ? &no_faults : NULL;
		/* The kernel reads ahead itself (READ_AHEAD_KB, in requests of up to
		 * 1 MiB, each already extended to a 1 MiB boundary by the cache), so
		 * the cache's own readahead only needs to cover what is in flight; a
		 * deeper one fetched data the kernel never asked for and held it (Java
		 * Hello: 4 MiB readahead, 60 requests and 8 MiB left in the cache;
		 * 256 KiB, 55 requests and 4 MiB). */
		if (!oo.cache.readahead_max)
			oo.cache.readahead_max = DAEMON_READAHEAD;
		/* File data is use-once (CAIRN_NS_USE_ONCE): the cache holds metadata,
		 * data the kernel has not taken yet and, when prefetching, the hot
		 * data the push stores. Without that, a small budget does: find over
		 * 300,000 files read 47 requests with 64 MiB (43 MiB resident), 52
		 * with 16 MiB. cache_size= sets any budget. */
		if (o->learn_file && learn_paths(cf, o->learn_file))
			return -1;
		/* A remote image learns whether it has a profile once open: the
		 * budget is lowered then if not (below). */
		lean = !oo.cache.budget_bytes && !o->keep_data;
		if (lean && !remote_default(o) && !will_prefetch(cf, o))
			oo.cache.budget_bytes = DAEMON_BUDGET;
		if (remote_default(o))
			remote_fetch_start(&fetch, o);
		rc = cli_stack_open(o->image, &oo, why, sizeof(why), &cf->stack);
		if (remote_default(o))
			remote_fetch_end(cf, &fetch, rc);
		if (!rc)
			cf->img = cairn_stack_image(cf->stack);
		/* Reading the root now refuses images whose metadata is damaged at the
		 * start, before anything is mounted. */
		if (!rc)
			rc = cairn_image_stat(cf->img, cairn_image_root(cf->img), &st);
		if (!rc && !S_ISDIR(st.mode)) {
			rc = -CAIRN_ECORRUPT;
			snprintf(why, sizeof(why), "the root inode is not a directory");
		}
		if (rc && cf->img && cairn_image_corruption(cf->img))
			snprintf(why, sizeof(why), "%s", cairn_image_corruption(cf->img));
		if (rc) {
			/* With the reason, as `cairn info` gives it. */
			cli_open_err("mount", o->image, rc, why);
			return -1;
		}
		if (verify_meta(cf->img, o))
			return -1;
		if (learn_in_cache(cf, o) || load_profile(cf, o))
			return -1;
		/* A profile all in the disk cache is not held in memory for the
		 * push, which reads it from disk: the lean budget does. */
		if (cf->prefetching && !cairn_image_prefetch_hot(cf->img))
			cf->profile_held = 1;
		if (lean && (cf->profile_held || (remote_default(o) && !cf->prefetching)))
			cairn_cache_lower_budget(cairn_image_cache(cf->img), DAEMON_BUDGET);
	}
	memset(&nc, 0, sizeof(nc));
	nc.image = cf->img;
	nc.flags = (o->empty ? CAIRN_NS_EMPTY : 0) | (o->overlay ? CAIRN_NS_OVERLAY : 0);
	/* Image files keep their pages in the kernel (keep_cache), so the daemon's
	 * copy of what it replied is worth little: use-once, unless asked to keep. */
	if (!o->keep_data)
		nc.flags |= CAIRN_NS_USE_ONCE;
	/* A trace names the files read, so it needs the node table (and its
	 * names); otherwise an image-only mount keeps nothing per object the kernel
	 * holds: node ids are image inode numbers (cairn/ns.h). */
	if (o->trace_file || cf->learn_trace)
		nc.flags |= CAIRN_NS_NAMES;
	nc.tmp_paths = o->tmp_paths;
	/* Without size= and nr_inodes=, tmpfs's bounds: unbounded, filling the RAM
	 * layer (with data, or with inodes, ~0.5 KiB of the daemon's each and not
	 * counted in size=) would get the daemon OOM-killed, with its files, before
	 * it said ENOSPC. tmpfs allows one inode per page of its default size. */
	dflt = o->size_given && o->inodes_given ? 0 : memlimit_default_size();
	nc.ram.size_limit = o->size_given ? o->size_limit : dflt;
	nc.ram.inode_limit = o->inodes_given ? o->inode_limit : dflt / 4096;
	if (o->empty)
		nc.ram.root_mode = 01777;
	nc.err_path = bad_tmp;
	nc.err_path_size = sizeof(bad_tmp);
	rc = cairn_ns_new(&nc, &cf->ns);
	if (rc && bad_tmp[0]) {
		errf("tmp=%s: %s", bad_tmp,
		     rc == -ENOTDIR ? "the image has a file or symlink there, which a RAM directory would hide"
		     : rc == -EINVAL ? "not an absolute path of a directory other than / (no . or ..)"
		     : cairn_strerror(rc));
		return -1;
	}
	if (rc) {
		errf("%s: cannot build the namespace: %s", o->image ? o->image : "--empty",
		     cairn_strerror(rc));
		return -1;
	}
	if (o->trace_file || cf->learn_trace) {
		const char *t = o->trace_file ? o->trace_file : cf->learn_trace;

		rc = trace_open(t, &cf->trace);
		if (rc) {
			errf("%s: %s", t, cairn_strerror(rc));
			return -1;
		}
		if (cf->learn_trace && !o->trace_file && learn_lock(cf->learn_trace))
			return -1;
	}
	return 0;
}

static struct fuse_session *new_session(struct daemon *cf, const struct mount_opts *o)
{
	char opts[PATH_MAX + 128];
	char *argv[4] = { "cairn", "-o", opts, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	const char *fsname = o->image ? o->image : "cairn-ram";
	char abs[PATH_MAX];
	struct fuse_session *se;

	/* fsname is the SOURCE mount(8) and findmnt show: a relative image path
	 * there names nothing from anywhere else, so it is made absolute. */
	if (o->image && o->image[0] != '/' && !strstr(o->image, "://") && realpath(o->image, abs))
		fsname = abs;
	/* Commas would split the option string. */
	if (strchr(fsname, ','))
		fsname = "cairn";
	snprintf(opts, sizeof(opts), "fsname=%s,subtype=cairn,default_permissions%s%s", fsname,
		 o->allow_other ? ",allow_other" : "", daemon_image_only(o) ? ",ro" : "");
	se = fuse_session_new(&args, &daemon_ops, sizeof(daemon_ops), cf);
	fuse_opt_free_args(&args); /* libfuse may have copied them */
	return se;
}

/* Daemon mode: returns in the child with *notify_fd set; the parent exits with
 * the child's verdict. */
static int detach_early(int *notify_fd)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		char c = 1;

		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			c = 1; /* the child died before mounting; it printed why */
		_exit(c);
	}
	close(p[0]);
	setsid();
	*notify_fd = p[1];
	return 0;
}

static void finish_detach(int notify_fd, char status)
{
	int nul;

	if (notify_fd < 0)
		return;
	if (status == 0) {
		if (chdir("/")) {
			/* the mount works wherever we are */
		}
		nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
			if (nul > 2)
				close(nul);
		}
	}
	if (write(notify_fd, &status, 1) != 1) {
		/* the parent is gone; nothing to tell */
	}
	close(notify_fd);
}

static int serve(struct daemon *cf, const struct mount_opts *o)
{
	struct fuse_loop_config *lc;
	unsigned n = o->max_threads ? o->max_threads : MAX_THREADS;
	int rc;

	if (o->single)
		return fuse_session_loop(cf->se);
	lc = fuse_loop_cfg_create();
	if (!lc)
		return -ENOMEM;
	/* libfuse ends a worker as soon as more than the idle count are idle and
	 * starts one whenever a request finds none idle, so any idle count below
	 * the pool size churns: with 2, a walk of a mount that answers OPENDIR
	 * started a thread for most directories (744 over the JDK), its background
	 * RELEASEDIRs overlapping the walk's own requests. Workers are kept
	 * instead. An idle one costs its stack's few touched pages and the part of
	 * its 1 MiB request buffer the largest request it took filled: a page for
	 * a read-only mount, up to 1 MiB after a WRITE (bench/fuse-threads-rss.sh:
	 * 8 parallel writers leave the daemon 7-10 MiB larger than with 2 idle). */
	fuse_loop_cfg_set_max_threads(lc, n);
	fuse_loop_cfg_set_idle_threads(lc, n);
	rc = fuse_session_loop_mt(cf->se, lc);
	fuse_loop_cfg_destroy(lc);
	return rc;
}

int daemon_mount(const struct mount_opts *o)
{
	struct daemon cf;
	struct sig_thread sig = { &cf, 0, 0 };
	pthread_t bdi;
	sigset_t set;
	int notify_fd = -1, rc, ret = 1, mounted = 0, have_sig = 0, have_bdi = 0;
	char abs[PATH_MAX];

	/* Each FUSE worker thread would get a malloc arena of its own, and glibc
	 * raises its mmap threshold past the 1 MiB read buffers once one is freed,
	 * after which freed buffers stay in the heaps: 1-3 MiB resident per thread,
	 * 17 MiB after a Java start. A fixed threshold gives large buffers back at
	 * free; two arenas serve a daemon whose threads mostly wait. */
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
	mallopt(M_ARENA_MAX, 2);
	memset(&cf, 0, sizeof(cf));
	cf.o = o;
	pthread_mutex_init(&cf.init_lock, NULL);
	pthread_mutex_init(&cf.bad_lock, NULL);
	pthread_mutex_init(&cf.io_lock, NULL);
	pthread_cond_init(&cf.init_cond, NULL);
	if (check_mountpoint(o->mountpoint, abs))
		return 1;
	cf.mnt_abs = abs;
	if (o->stats_file && check_stats_file(&cf, o->stats_file)) {
		free(cf.stats_path);
		return 1;
	}
	memlimit_check_size(o); /* here, while stderr is still the caller's */
	/* Blocked in every thread from here on; the signal thread takes them. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	if (!o->foreground && detach_early(&notify_fd)) {
		errf("%s: cannot fork: %s", o->mountpoint, strerror(errno));
		return 1;
	}
	if (open_layers(&cf, o))
		goto out;
	cf.se = new_session(&cf, o);
	if (!cf.se) {
		errf("%s: %s", o->mountpoint, "cannot start a FUSE session");
		goto out;
	}
	if (fuse_set_signal_handlers(cf.se)) {
		errf("%s: %s", o->mountpoint, "cannot set signal handlers");
		goto out;
	}
	if (fuse_session_mount(cf.se, abs)) {
		errf("%s: %s", o->mountpoint, "cannot mount (is it a directory? is /dev/fuse there?)");
		goto out;
	}
	mounted = 1;
	/* With the write-back cache too: there the kernel itself writes through,
	 * with the caller's credentials, to files whose set-user-ID or set-group-ID
	 * bits a write must clear, so the daemon still sees who wrote. */
	if (daemon_killpriv_v2(&cf))
		errf("%s: %s", o->mountpoint, "cannot hook the FUSE channel; writes cost more");
	if (o->has_fault && cf.stack && cairn_stack_fault_dev(cf.stack))
		cairn_bdev_fault_set(cairn_stack_fault_dev(cf.stack), &o->fault);
	finish_detach(notify_fd, 0);
	if (notify_fd >= 0) {
		openlog("cairn", LOG_PID, LOG_DAEMON);
		cf.to_syslog = 1;
	}
	notify_fd = -1;
	if (daemon_thread_create(&bdi, bdi_main, &cf) == 0)
		have_bdi = 1;
	/* Not while tracing for mkfs --order: that trace must see all the program's
	 * own reads. A learning run pushes: its trace adds what the profile missed.
	 * Every image pushes the rest of each chunk a read decompressed, or of each
	 * segment a random read fetched (fuse_ops.c, partial_chunks). */
	cf.compressed = cf.img && image_compressed(cf.img);
	if (!o->trace_file && cf.img && push_start(&cf, &cf.push))
		errf("%s: %s", o->mountpoint, "cannot start the page-cache push; reads cost more");
	/* Only now: write_stats reads what the setup above writes (cf.push), and
	 * a SIGUSR1 sent before stays pending until the thread takes it. */
	have_sig = sig_thread_start(&sig);

	rc = serve(&cf, o);
	ret = rc < 0 ? 1 : 0;
out:
	/* First: a SIGUSR1 now would race the last write_stats and push_stop. */
	if (have_sig)
		sig_thread_stop(&sig);
	if (mounted) {
		push_halt(cf.push); /* it writes to the channel unmount closes */
		fuse_session_unmount(cf.se);
		write_stats(&cf);
	}
	if (cf.se) {
		fuse_remove_signal_handlers(cf.se);
		fuse_session_exit(cf.se);
	}
	push_stop(cf.push);
	if (have_bdi) {
		pthread_mutex_lock(&cf.init_lock);
		cf.init_done = 1;
		pthread_cond_broadcast(&cf.init_cond);
		pthread_mutex_unlock(&cf.init_lock);
		pthread_join(bdi, NULL);
	}
	if (cf.se)
		fuse_session_destroy(cf.se);
	finish_detach(notify_fd, 1);
	trace_close(cf.trace);
	if (cf.learn_trace && mounted)
		learn_save(&cf); /* and removes the run's trace */
	else if (cf.learn_trace)
		unlink(cf.learn_trace);
	free(cf.learn_path);
	free(cf.learn_trace);
	free(cf.shipped);
	cairn_ns_free(cf.ns);
	cairn_stack_close(cf.stack);
	pthread_cond_destroy(&cf.init_cond);
	pthread_mutex_destroy(&cf.init_lock);
	free(cf.stats_path);
	return ret;
}
