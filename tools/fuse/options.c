/* SPDX-License-Identifier: MIT */
/*
 * cairn mount IMAGE MOUNTPOINT [-f] [-s] [-o opts]
 * cairn mount --empty MOUNTPOINT [-f] [-o opts]
 * The daemon's command line (cairn-fuse, which `cairn mount` execs with its
 * arguments): parsed into struct mount_opts, then daemon_mount() does the rest.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../cairn/cli.h"
#include "mount.h"

static int size_opt(const char *key, const char *val, uint64_t *out)
{
	if (!val || cli_parse_size(val, out)) {
		cli_err("mount", "-o %s needs a size, got '%s'", key, val ? val : "");
		return -1;
	}
	return 0;
}

static int num_opt(const char *key, const char *val, uint64_t *out)
{
	char *end;

	errno = 0;
	if (!val || !*val || (*out = strtoull(val, &end, 10), errno || *end)) {
		cli_err("mount", "-o %s needs a number, got '%s'", key, val ? val : "");
		return -1;
	}
	return 0;
}

/* Options mount(8) and fstab pass that mean nothing here. */
static int generic_opt(const char *key)
{
	static const char *const ignored[] = { "ro", "defaults", "auto", "noauto", "user",
					       "nouser", "users", "nofail", "_netdev", "suid",
					       "nosuid", "dev", "nodev", "exec", "noexec", "atime",
					       "noatime", "relatime", "async", "sync", NULL };

	if (!strncmp(key, "x-", 2) || !strcmp(key, "comment"))
		return 1;
	for (int i = 0; ignored[i]; i++)
		if (!strcmp(key, ignored[i]))
			return 1;
	return 0;
}

/* The remote options, named in errors as the user wrote them ("-o timeout"). */
static int remote_opt(struct mount_opts *o, const char *key, const char *val)
{
	char shown[40];

	snprintf(shown, sizeof(shown), "-o %s", key);
	return cli_remote_opt(&o->open, "mount", key, shown, val);
}

static int parse_one(struct mount_opts *o, char *key)
{
	char *val = strchr(key, '=');
	uint64_t v;
	int rc;

	if (val)
		*val++ = 0;
	if (val && !*val && !generic_opt(key)) {
		cli_err("mount", "-o %s= has an empty value (give %s=VALUE, or leave it out)", key,
			key);
		return -1;
	}
	if (!strcmp(key, "tmp") && val && *val)
		o->tmp_paths = val;
	else if (!strcmp(key, "overlay") && !val)
		o->overlay = 1;
	else if (!strcmp(key, "rw") && !val)
		o->rw = 1; /* checked against the shape of the tree in parse_args */
	else if (!strcmp(key, "size")) {
		if (size_opt(key, val, &o->size_limit))
			return -1;
		o->size_given = 1;
	} else if (!strcmp(key, "nr_inodes")) {
		if (size_opt(key, val, &o->inode_limit))
			return -1;
		o->inodes_given = 1;
	} else if (!strcmp(key, "cache_size")) {
		if (size_opt(key, val, &v))
			return -1;
		o->open.cache.budget_bytes = v ? (size_t)v : CAIRN_CACHE_OFF;
	} else if (!strcmp(key, "chunk_cache")) {
		if (size_opt(key, val, &v))
			return -1;
		o->open.chunk_cache = v ? (size_t)v : 1; /* 0: keep nothing unused */
	} else if (!strcmp(key, "segment")) {
		if (size_opt(key, val, &v))
			return -1;
		if (cli_check_segment("mount", "-o segment", v))
			return -1;
		o->open.cache.segment_size = (size_t)v;
	} else if (!strcmp(key, "max_io")) {
		if (size_opt(key, val, &v) || cli_check_max_io("mount", "-o max_io", v))
			return -1;
		o->open.cache.max_io = (size_t)v;
	} else if (!strcmp(key, "read_ahead")) {
		if (size_opt(key, val, &v))
			return -1;
		if (v > READ_AHEAD_MAX) {
			cli_err("mount", "-o read_ahead must be at most 64M, got '%s'", val);
			return -1;
		}
		o->read_ahead_kb = (int64_t)(v / 1024);
	} else if (!strcmp(key, "offset")) {
		if (size_opt(key, val, &o->open.offset))
			return -1;
	} else if (!strcmp(key, "l2_cache")) {
		if (size_opt(key, val, &v))
			return -1;
		o->open.qcow2.l2_cache_disabled = v == 0;
		o->open.qcow2.l2_cache_bytes = (size_t)v;
	} else if (!strcmp(key, "direct") && !val) {
		o->open.file_flags |= CAIRN_BDEV_FILE_DIRECT;
	} else if (!strcmp(key, "delay")) {
		if (!val || cli_parse_duration_ns(val, &v)) {
			cli_err("mount", "-o delay needs a time (e.g. 1ms), got '%s'",
				val ? val : "");
			return -1;
		}
		o->open.delay.latency_ns = v;
	} else if (!strcmp(key, "delay_rate")) {
		if (size_opt(key, val, &v))
			return -1;
		o->open.delay.bandwidth_bps = v;
	} else if (!strcmp(key, "stats") && val && *val) {
		o->stats_file = val;
	} else if (!strcmp(key, "trace") && val && *val) {
		o->trace_file = val;
	} else if (!strcmp(key, "prefetch") && !val) {
		o->prefetch = 1;
	} else if (!strcmp(key, "prefetch") && *val) {
		o->prefetch_file = val;
	} else if (!strcmp(key, "learn") && val && *val) {
		o->learn_file = val;
	} else if (!strcmp(key, "noprofile") && !val) {
		o->no_profile = 1;
	} else if (!strcmp(key, "keep_data") && !val) {
		o->keep_data = 1;
	} else if (!strcmp(key, "writeback") && !val) {
		o->writeback = 1;
	} else if (!strcmp(key, "single") && !val) {
		o->single = 1;
	} else if (!strcmp(key, "threads")) {
		if (num_opt(key, val, &v))
			return -1;
		if (v < 1 || v > MOUNT_MAX_THREADS) {
			cli_err("mount", "-o threads must be from 1 to %u, got %" PRIu64,
				MOUNT_MAX_THREADS, v);
			return -1;
		}
		o->max_threads = (unsigned)v;
	} else if (!strcmp(key, "verify") && val) {
		if (!strcmp(val, "auto"))
			o->verify = MOUNT_VERIFY_AUTO;
		else if (!strcmp(val, "none"))
			o->verify = MOUNT_VERIFY_NONE;
		else if (!strcmp(val, "meta"))
			o->verify = MOUNT_VERIFY_META;
		else if (!strcmp(val, "lazy"))
			o->verify = MOUNT_VERIFY_LAZY;
		else {
			cli_err("mount", "-o verify is auto, meta, lazy or none, got '%s'", val);
			return -1;
		}
		o->open.verify.off = o->verify == MOUNT_VERIFY_NONE;
	} else if (!strcmp(key, "digest")) {
		if (!val || cairn_digest_parse(val, o->open.verify.root)) {
			cli_err("mount", "-o digest needs sha256:<64 hex digits>, got '%s'",
				val ? val : "");
			return -1;
		}
		o->open.verify.has_root = 1;
	} else if (!strcmp(key, "allow_other") && !val) {
		o->allow_other = 1;
	} else if (!strcmp(key, "fault_every")) {
		if (num_opt(key, val, &o->fault.fail_every))
			return -1;
		o->has_fault = 1;
	} else if (!strcmp(key, "fault_nth")) {
		if (num_opt(key, val, &o->fault.fail_nth))
			return -1;
		o->has_fault = 1;
	} else if (!strcmp(key, "fault_kind") && val) {
		if (!strcmp(val, "eio"))
			o->fault.kind = CAIRN_FAULT_EIO;
		else if (!strcmp(val, "short"))
			o->fault.kind = CAIRN_FAULT_SHORT;
		else {
			cli_err("mount", "-o fault_kind is eio or short, got '%s'", val);
			return -1;
		}
	} else if (!strcmp(key, "fault_persistent") && !val) {
		o->fault.persistent = 1;
	} else if ((rc = remote_opt(o, key, val)) != 0) {
		return rc < 0 ? -1 : 0;
	} else if (!generic_opt(key)) {
		char near[80], kv[80];

		snprintf(kv, sizeof(kv), "%s%s", key, val ? "=" : ""); /* says if a value came */
		cli_suggest(cli_mount_help, kv, near, sizeof(near));
		cli_err("mount", "unknown option '%s%s%s'%s", key, val ? "=" : "", val ? val : "",
			near);
		return -1;
	}
	return 0;
}

/* Appends one -o string to *all (comma-joined). Options are parsed from this
 * copy, which they then point into, so argv stays as it was and ps shows the
 * command line the daemon was started with. */
static int add_opts(char **all, const char *opts)
{
	size_t have = *all ? strlen(*all) : 0;
	char *s = realloc(*all, have + strlen(opts) + 2);

	if (!s) {
		cli_err("mount", "-o %s: %s", opts, strerror(ENOMEM));
		return -1;
	}
	if (have)
		s[have++] = ',';
	strcpy(s + have, opts);
	*all = s;
	return 0;
}

static int parse_opts(struct mount_opts *o, char *s)
{
	for (char *save = NULL, *tok = strtok_r(s, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (parse_one(o, tok))
			return -1;
	return 0;
}

/* The command line into o and pos; *all collects the -o strings (the caller
 * frees it, after the mount: the options point into it). Returns -1 to go on,
 * else the exit code. */
static int parse_args(int argc, char **argv, struct mount_opts *o, const char *pos[2],
		      int *npos, char **all)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(cli_mount_help, stdout);
			return CLI_EXIT_OK;
		} else if (!strcmp(a, "-f")) {
			o->foreground = 1;
		} else if (!strcmp(a, "-s")) {
			o->single = 1;
		} else if (!strcmp(a, "--empty")) {
			o->empty = 1;
		} else if (!strcmp(a, "-o") || !strncmp(a, "-o", 2)) {
			const char *val = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);

			if (!val) {
				cli_err("mount", "-o needs options");
				return CLI_EXIT_USAGE;
			}
			if (add_opts(all, val))
				return CLI_EXIT_USAGE;
		} else if (a[0] == '-' && a[1]) {
			cli_err("mount", "unknown flag '%s' (see cairn mount --help)", a);
			return CLI_EXIT_USAGE;
		} else if (cli_empty_arg("mount", a)) {
			return CLI_EXIT_USAGE;
		} else if (*npos < 2) {
			pos[(*npos)++] = a;
		} else {
			cli_err("mount", "too many arguments (see cairn mount --help)");
			return CLI_EXIT_USAGE;
		}
	}
	if (*all && parse_opts(o, *all))
		return CLI_EXIT_USAGE;
	if (*npos != (o->empty ? 1 : 2)) { /* say what is missing, not all of --help */
		cli_err("mount", "%s (see cairn mount --help)",
			!o->empty ? "needs IMAGE and MOUNTPOINT" :
			*npos ? "--empty takes no IMAGE, only MOUNTPOINT" : "--empty needs MOUNTPOINT");
		return CLI_EXIT_USAGE;
	}
	if (o->empty && (o->overlay || o->tmp_paths)) {
		cli_err("mount", "--empty takes no image, so no overlay or tmp= either");
		return CLI_EXIT_USAGE;
	}
	if (o->rw && !o->empty && !o->overlay && !o->tmp_paths) {
		/* Accepting it would promise writes that then fail with EROFS. */
		cli_err("mount", "-o rw: %s is mounted read-only (the image is never written); "
			"for writes in RAM give -o overlay (the whole tree) or -o tmp=PATHS",
			*npos ? pos[0] : "IMAGE");
		return CLI_EXIT_USAGE;
	}
	if (o->open.verify.off && o->open.verify.has_root) {
		cli_err("mount", "digest= needs verification: drop verify=none");
		return CLI_EXIT_USAGE;
	}
	if (o->overlay && o->tmp_paths) {
		cli_err("mount", "overlay already makes every path writable; drop tmp=");
		return CLI_EXIT_USAGE;
	}
	if (o->learn_file && (o->trace_file || o->prefetch_file)) {
		cli_err("mount", "learn= traces and prefetches by itself; drop trace= and prefetch=");
		return CLI_EXIT_USAGE;
	}
	if (o->empty && (o->learn_file || o->prefetch_file)) {
		cli_err("mount", "--empty has no image to prefetch from");
		return CLI_EXIT_USAGE;
	}
	return -1;
}

int daemon_cmdline(int argc, char **argv)
{
	struct mount_opts o;
	const char *pos[2];
	char *all = NULL;
	int npos = 0, rc;

	memset(&o, 0, sizeof(o));
	o.read_ahead_kb = -1;
	rc = parse_args(argc, argv, &o, pos, &npos, &all);
	if (rc < 0) {
		o.image = o.empty ? NULL : pos[0];
		o.mountpoint = pos[npos - 1];
		/* Root mounts serve every user (permissions are checked by the kernel,
		 * default_permissions); others' mounts stay private unless asked. */
		if (geteuid() == 0)
			o.allow_other = 1;
		rc = daemon_mount(&o);
	}
	free(all);
	return rc;
}
