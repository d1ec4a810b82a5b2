/* SPDX-License-Identifier: MIT */
/* What `cairn mount` hands the FUSE daemon (no FUSE headers needed here). */
#ifndef CAIRN_FUSE_MOUNT_H
#define CAIRN_FUSE_MOUNT_H

#include <stdint.h>
#include "../cairn/open_cfg.h"

struct mount_opts {
	const char *image;              /* NULL with empty */
	const char *mountpoint;
	int foreground, empty, overlay, single, allow_other, prefetch;
	const char *tmp_paths;          /* "/tmp:/var/log" or NULL */
	const char *stats_file;         /* IO counters at unmount and on SIGUSR1 */
	const char *trace_file;         /* first-read order, for mkfs --order */
	const char *prefetch_file;      /* prefetch=TRACE: a profile to prefetch and push */
	const char *learn_file;         /* learn=FILE: a profile kept up to date */
	int no_profile;                 /* noprofile: ignore IMAGE.profile */
	int keep_data;                  /* keep_data: cache file data after replying too */
	struct cli_open_cfg open;
	struct cairn_fault_config fault;
	int has_fault;
	uint64_t size_limit, inode_limit;
	int size_given;                 /* -o size= came (size=0: no limit, as tmpfs's);
					   else memlimit_default_size() */
	int inodes_given;               /* -o nr_inodes= came; else that size in 4 KiB pages */
	unsigned max_threads;           /* 0 = MAX_THREADS (daemon.c); else 1..MOUNT_MAX_THREADS */
	int verify;                     /* CAIRN_VERIFY_*: metadata check at mount; NONE
					   also turns digest checking off (open.verify.off) */
	int writeback;                  /* kernel write-back cache: ENOSPC at fsync/close */
	int rw;                         /* -o rw: refused unless something is writable */
	int64_t read_ahead_kb;          /* read_ahead=SIZE, in KiB; -1: the daemon's choice */
};

/* -o threads=N: more workers than this only burn stacks (the kernel's FUSE
 * queue is the bound, not the threads). */
#define MOUNT_MAX_THREADS 256u

/* -o read_ahead=SIZE: the largest window the option takes. */
#define READ_AHEAD_MAX (64ull << 20)

#define MOUNT_VERIFY_AUTO 0 /* when the metadata is at most 16 MiB */
#define MOUNT_VERIFY_NONE 1
#define MOUNT_VERIFY_META 2
#define MOUNT_VERIFY_LAZY 3 /* digests checked, metadata checked on first use only */

/* Mount and serve until unmounted; returns a process exit code. In daemon mode
 * the caller's process exits when the mount is up (0) or failed (1). */
int daemon_mount(const struct mount_opts *o);
/* `cairn mount`'s command line (argv[0] is the program, then its arguments):
 * parses it and mounts; returns the process exit code (options.c). */
int daemon_cmdline(int argc, char **argv);

#endif
