/* SPDX-License-Identifier: MIT */
/*
 * The FUSE front end: translates kernel requests into cairn_ns calls (all the
 * filesystem logic lives in lib/ns) and runs the daemon for `cairn mount`.
 */
#ifndef CAIRN_DAEMON_H
#define CAIRN_DAEMON_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <cairn/cairn.h>
#include <cairn/ns.h>
#include "mount.h"

struct trace;
struct push;

/* Nothing under the mount can be written: the image alone, mounted read-only. */
static inline int daemon_image_only(const struct mount_opts *o)
{
	return o->image && !o->empty && !o->overlay && !o->tmp_paths;
}

/* The daemon's state, handed to every handler as the session's userdata. */
struct daemon {
	struct cairn_ns *ns;
	struct cairn_stack *stack;      /* owns img and its devices; NULL with --empty */
	struct cairn_image *img;        /* the stack's image; NULL with --empty */
	struct fuse_session *se;
	const struct mount_opts *o;
	struct trace *trace;      /* NULL unless trace= */
	struct push *push;        /* NULL without an image, or when tracing (trace=) */
	int prefetching;                /* -o prefetch, or a profile was loaded */
	int profiled;                   /* a profile was loaded: its ranges are prefetched */
	int profile_held;               /* ... unless the disk cache holds them all: then
	                                 * the push reads them there (cairn_image_prefetch_hot) */
	int compressed;                 /* the image has compressed chunks */
	struct cairn_profile_stats profile; /* what the loaded profile matched */
	char *learn_path;               /* learn=: the profile, absolute (malloc'd) */
	char *learn_trace;              /* ... and this run's trace beside it */
	int learn_default;              /* learn_path is the disk cache's, not learn= */
	char *shipped;                  /* URL.profile from the server (malloc'd), or NULL */
	size_t shipped_len;
	int shipped_used;               /* ... and it is the profile prefetched */
	uint64_t shipped_requests;      /* requests that asking for it sent */
	char *mnt_abs;                  /* absolute mountpoint */
	char *stats_path;               /* stats= as an absolute path, or NULL (owned) */
	pthread_mutex_t init_lock;
	pthread_cond_t init_cond;
	int init_done;
	uint64_t init_unique;           /* killpriv.c: the INIT request, 0 when done */
	int killpriv_v2;                /* the kernel took FUSE_HANDLE_KILLPRIV_V2 */
	int no_open;                    /* opens stay in the kernel (read-only image) */
	int no_opendir;
	int writeback;                  /* the kernel took FUSE_CAP_WRITEBACK_CACHE */
	uint64_t image_reads;           /* FUSE reads of image files (atomic) */
	uint64_t image_read_bytes;      /* bytes they asked for (atomic) */
	/* Digest mismatches already logged, as (inode, 128 KiB unit) keys, so the
	 * kernel's retries of one bad range log one line (fuse_ops.c). */
	pthread_mutex_t bad_lock;
	uint64_t bad_keys[64][2];
	unsigned bad_n;
	uint64_t bad_reads;             /* reads answered EIO for a mismatch (atomic) */
	/* The device failure last logged (fuse_ops.c, log_io_error): a cause is
	 * logged once, and again at most every DAEMON_IO_LOG_NS with the count. */
	pthread_mutex_t io_lock;
	char io_cause[2 * CAIRN_BDEV_ERROR_TEXT];  /* device and cause, no range */
	uint64_t io_count;              /* that device's failures when logged */
	uint64_t io_logged_ns;          /* CLOCK_MONOTONIC */
	int to_syslog;                  /* detached: stderr is /dev/null, so log there */
};

/* A message while serving (a digest mismatch, a profile not used): to stderr in
 * the foreground (-f), to syslog once the daemon has gone to the background,
 * where nobody holds its stderr. */
void daemon_log(const struct daemon *cf, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

extern const struct fuse_lowlevel_ops daemon_ops;

/* killpriv.c: after fuse_session_mount(), before serving; 0 or negative errno.
 * It also hands FUSE_TMPFILE to the create handler as a CREATE of this name,
 * which no real file can have (the kernel's own name for a tmpfile dentry). */
#define DAEMON_TMPFILE_NAME "/"

int daemon_killpriv_v2(struct daemon *cf);
/* pthread_create() for the daemon's own threads (the signal thread, the push,
 * the bdi setter, the profile fetch): they start with SIGTERM, SIGINT and
 * SIGHUP blocked. Those end the session through libfuse's handler, which only
 * sets a flag, so it must run on the main thread (in the loop's sem_wait) or a
 * FUSE worker (in its read of /dev/fuse), which the signal interrupts and
 * which then look at the flag. On a helper thread the daemon stayed mounted
 * until the next request (tests/tsan/signals.sh hung so). The library's
 * threads block them too (util_thread_create). */
int daemon_thread_create(pthread_t *t, void *(*fn)(void *), void *arg);

/* trace.c: records "PATH OFFSET LENGTH" the first time each range of an image
 * file is read. */
int trace_open(const char *path, struct trace **out);
void trace_read(struct trace *t, const char *path, uint64_t off, uint64_t len);
void trace_close(struct trace *t);

/* push.c: stores the hot-prefix pages of image files, and the rests of chunks
 * and segments reads left partly unread, into the kernel's page cache from a
 * thread of its own (see the file's comment). */
int push_start(struct daemon *cf, struct push **out);
/* Queues the hot ranges of node (an image file, image inode image_ino) once per
 * inode; called before the reply that tells the kernel of the node. */
void push_file(struct push *p, uint64_t node, uint64_t image_ino);
/* The kernel forgot an inode of image file image_ino, and its pages with it: the
 * next push_file of that file queues it again. */
void push_forgotten(struct push *p, uint64_t image_ino);
/* Whether any file was queued whole (push_file): else a FORGET has nothing to
 * undo, and its node's attributes need not be looked up to find out. */
int push_remembers_files(struct push *p);
/* Queues chunk range [lo, hi) of node (an image file): the rest of a compressed
 * chunk a read just decompressed, or of an uncompressed segment a random read
 * just fetched (cairn_ns_chunk_span), stored after hot ranges and then delivered
 * (cairn_ns_delivered). Takes a lookup reference on node that the caller took
 * (cairn_ns_hold) before replying to that read (the kernel may forget the node
 * after the reply); it is dropped once pushed, or now if not queued (a chunk
 * whose push is on already is not queued again). */
void push_span(struct push *p, uint64_t node, uint64_t lo, uint64_t hi);
/* A READ of node's [off, off + len) was replied to: its whole pages are in the
 * kernel's page cache, so queued ranges drop them (storing them again cost the
 * daemon's system time, not the program's) and their chunks are delivered. */
void push_served(struct push *p, uint64_t node, uint64_t off, uint64_t len);
struct push_stats {
	uint64_t files, spans, bytes, served; /* queued files and rests, pushed, read first */
	/* push_served: calls, the queued ranges they visited (their file's), and
	 * the ranges queued at each call summed (what a scan of all would visit) */
	uint64_t served_calls, served_visits, served_queued;
};
void push_counts(struct push *p, struct push_stats *out);
void push_halt(struct push *p);
void push_stop(struct push *p);

/* mountinfo.c: a line of /proc/self/mountinfo, paths unescaped. */
struct mountinfo_entry {
	char root[PATH_MAX];   /* the part of the file system mounted there */
	char point[PATH_MAX];  /* the mount point */
	char fstype[64];
	char super[256];       /* the file system's own options */
};
/* Calls fn for each mount, in mount order, until it returns non-zero; returns
 * that, or 0 (also when mountinfo cannot be read). */
int mountinfo_each(int (*fn)(const struct mountinfo_entry *e, void *arg), void *arg);

/* memlimit.c: warns on stderr when -o size= is more than the memory the RAM
 * layer can have (the cgroup's limit or MemAvailable), naming that limit. */
void memlimit_check_size(const struct mount_opts *o);
/* The RAM layer's size without -o size=, as tmpfs's: half of the smaller of
 * physical RAM and the daemon's cgroup memory limit (bytes, a multiple of 4096;
 * 0 when neither is known). */
uint64_t memlimit_default_size(void);

#endif
