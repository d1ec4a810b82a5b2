/* SPDX-License-Identifier: MIT */
/*
 * The FUSE front end: translates kernel requests into cairn_ns calls (all the
 * filesystem logic lives in lib/ns) and runs the daemon for `cairn mount`.
 */
#ifndef CAIRN_FUSE_H
#define CAIRN_FUSE_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdio.h>
#include <cairn/cairn.h>
#include <cairn/ns.h>
#include "mount.h"

struct cairn_trace;
struct cairn_push;

/* Nothing under the mount can be written: the image alone, mounted read-only. */
static inline int cairn_fuse_image_only(const struct cairn_mount_opts *o)
{
	return o->image && !o->empty && !o->overlay && !o->tmp_paths;
}

/* The daemon's state, handed to every handler as the session's userdata. */
struct cairn_fuse {
	struct cairn_ns *ns;
	struct cairn_stack *stack;      /* owns img and its devices; NULL with --empty */
	struct cairn_image *img;        /* the stack's image; NULL with --empty */
	struct fuse_session *se;
	const struct cairn_mount_opts *o;
	struct cairn_trace *trace;      /* NULL unless trace= */
	struct cairn_push *push;        /* NULL unless prefetching with hot ranges */
	int prefetching;                /* -o prefetch, or a profile was loaded */
	struct cairn_profile_stats profile; /* what the loaded profile matched */
	char *learn_path;               /* learn=: the profile, absolute (malloc'd) */
	char *learn_trace;              /* ... and this run's trace beside it */
	char *mnt_abs;                  /* absolute mountpoint */
	char *stats_path;               /* stats= as an absolute path, or NULL (owned) */
	pthread_mutex_t init_lock;
	pthread_cond_t init_cond;
	int init_done;
	uint64_t init_unique;           /* killpriv.c: the INIT request, 0 when done */
	int killpriv_v2;                /* the kernel took FUSE_HANDLE_KILLPRIV_V2 */
	int no_open;                    /* opens stay in the kernel (read-only image) */
	int no_opendir;
	uint64_t image_reads;           /* FUSE reads of image files (atomic) */
	uint64_t image_read_bytes;      /* bytes they asked for (atomic) */
	/* Digest mismatches already logged, as (inode, 128 KiB unit) keys, so the
	 * kernel's retries of one bad range log one line (fuse_ops.c). */
	pthread_mutex_t bad_lock;
	uint64_t bad_keys[64][2];
	unsigned bad_n;
	uint64_t bad_reads;             /* reads answered EIO for a mismatch (atomic) */
};

extern const struct fuse_lowlevel_ops cairn_fuse_ops;

/* killpriv.c: after fuse_session_mount(), before serving; 0 or negative errno.
 * It also hands FUSE_TMPFILE to the create handler as a CREATE of this name,
 * which no real file can have (the kernel's own name for a tmpfile dentry). */
#define CAIRN_FUSE_TMPFILE_NAME "/"

int cairn_fuse_killpriv_v2(struct cairn_fuse *cf);

/* trace.c: records "PATH OFFSET LENGTH" the first time each range of an image
 * file is read. */
int cairn_trace_open(const char *path, struct cairn_trace **out);
void cairn_trace_read(struct cairn_trace *t, const char *path, uint64_t off, uint64_t len);
void cairn_trace_close(struct cairn_trace *t);

/* push.c: stores the hot-prefix pages of image files into the kernel's
 * page cache from a thread of its own (see the file's comment). */
int cairn_push_start(struct cairn_fuse *cf, struct cairn_push **out);
/* Queues the hot ranges of node (an image file, image inode image_ino) once per
 * inode; called before the reply that tells the kernel of the node. */
void cairn_push_file(struct cairn_push *p, uint64_t node, uint64_t image_ino);
void cairn_push_counts(struct cairn_push *p, uint64_t *files, uint64_t *bytes);
void cairn_push_halt(struct cairn_push *p);
void cairn_push_stop(struct cairn_push *p);

#endif
