/* SPDX-License-Identifier: MIT */
/*
 * The cairn tool: one file per command (cmd_<name>.c), each a thin front end over
 * libcairn. Shared option handling lives in cli_opts.c.
 */
#ifndef CAIRN_CLI_H
#define CAIRN_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <cairn/cairn.h>
#include "open_cfg.h"

int cmd_mkfs(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_extract(int argc, char **argv);
int cmd_fsck(int argc, char **argv);
int cmd_digest(int argc, char **argv);
int cmd_mount(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* cairn bench subcommands: `read` (bench_read.c), `rw` (bench_rw.c, the RAM fs). */
int bench_read_main(int argc, char **argv);
int bench_rw_main(int argc, char **argv);

/* Exit codes shared by all commands. fsck documents its own (see cmd_fsck.c). */
#define CLI_EXIT_OK      0
#define CLI_EXIT_FAIL    1  /* the operation failed (IO error, corrupt image, ...) */
#define CLI_EXIT_USAGE   2  /* bad command line */

/* Flushes and closes stdout at exit; output that never got there (a full disk,
 * a closed pipe) turns rc into CLI_EXIT_FAIL with a message for "cairn <cmd>"
 * (cmd may be NULL). Returns the exit code. */
int cli_close_stdout(const char *cmd, int rc);

/* Options every image-reading command takes: --cache-size, --segment, --delay,
 * --max-io, --offset, --direct, --stats, --digest, --verify. */
struct cli_image_opts {
	struct cli_open_cfg open;             /* open_cfg.h */
	int print_stats;
	/* Hidden test options (tests/cli/faults*.sh): --fault-nth N, --fault-every K,
	 * --fault-random PERMILLE, --fault-seed S, --fault-short, --fault-persistent
	 * put a fault device in the stack; open.fault then points here. */
	struct cairn_fault_config fault;
};
void cli_image_opts_init(struct cli_image_opts *o);
/* If argv[*i] is one of the shared options, consume it (and its value) and return 1;
 * 0 if it is not one; -1 after printing "cairn <cmd>: ..." for a bad value. */
int cli_image_opt_parse(struct cli_image_opts *o, const char *cmd, int argc, char **argv,
			int *i);
extern const char cli_image_opts_help[];
/* `cairn mount --help` (mount_help.c; linked into cairn-fuse too). */
extern const char cli_mount_help[];
/* why past a leading "path: ": a remote layer names the URL that failed (one
 * of several with mirrors), which for the image's own URL repeats what the
 * message already starts with. */
const char *cli_why_tail(const char *path, const char *why);
/* "cairn <cmd>: <path>: <reason>" for a failed open of path (rc, why from
 * cli_stack_open or a later check; why may be ""), the one wording of it. */
void cli_open_err(const char *cmd, const char *path, int rc, const char *why);
/* Open the image's stack or print "cairn <cmd>: <path>: <reason>" and return
 * NULL. The caller closes it with cairn_stack_close(). */
struct cairn_stack *cli_open_image(const char *cmd, const char *path,
				   const struct cli_image_opts *o);
/* ": DEVICE: bytes A-B: CAUSE" into out after an -EIO (err) that a device of
 * the stack under dev recorded (cairn_bdev_last_error), the device's name left
 * out when it is image, which the message names already; else "". */
#define CLI_DEV_WHY_LEN (2 * CAIRN_BDEV_ERROR_TEXT + 80)
void cli_dev_why(struct cairn_bdev *dev, const char *image, int err, char *out, size_t len);
/* The same for the failure e. */
void cli_dev_error_text(const struct cairn_bdev_error *e, const char *image, char *out,
			size_t len);
/* Report an error from a call on an open image: "cairn <cmd>: IMAGE: corrupt
 * image: <reason> (<what>)" for corruption, else "cairn <cmd>: IMAGE: <what>:
 * <strerror>[: <cli_dev_why>]". what may be NULL. */
void cli_img_err(const char *cmd, const char *image, struct cairn_image *img, const char *what,
		 int err);
/* A remote-image option (connections, timeout, retries, mirror, proxy, cacert,
 * insecure, http1, cache_dir, cache_max, cache_chunk, s3_*): 1 when taken, 0 when
 * key is not one, -1 after printing "cairn <cmd>: <shown> needs ..." (shown: the
 * option as the user wrote it, "-o timeout" or "--timeout"). val may be NULL for
 * the flags. */
int cli_remote_opt(struct cli_open_cfg *o, const char *cmd, const char *key, const char *shown,
		   const char *val);
/* http and disk cache counters of the stack under dev, if it has them: one line
 * each, or "key value" lines when style is "kv" (the mount's stats file). */
void cli_print_remote_stats(FILE *f, struct cairn_bdev *dev, const char *style);
/* Print IO counters to stderr if --stats was given. */
void cli_print_stats(const struct cli_image_opts *o, struct cairn_stack *stack);

/* Read-side commands (cli_read.c). A boolean flag: "-l" (alt "--long") sets *set. */
struct cli_flag {
	const char *name, *alt;
	int *set;
};
/* Parses argv[1..]: --help (prints usage to stdout, returns 1), the shared image
 * options, the flags (short ones may be bundled: -lR), then up to max_pos
 * positional arguments. Returns 0, or -1 after printing an error (exit 2). */
int cli_read_args(const char *cmd, int argc, char **argv, struct cli_image_opts *o,
		  const struct cli_flag *flags, char **pos, int max_pos, int *n_pos,
		  void (*usage)(FILE *f));
/* "drwxr-xr-x", with s/S/t/T for setuid, setgid and sticky. */
void cli_mode_string(uint32_t mode, char out[11]);
/* "2024-01-02 03:04:05[.123456789] UTC". */
void cli_format_time(const struct cairn_time *t, int with_ns, char *buf, size_t len);
/* A name with newlines, backslashes and control bytes escaped (\n, \\, \xNN). */
void cli_print_name(FILE *f, const char *name, size_t len);

/* "64M", "1m", "4096", "1.5G" -> bytes. Returns 0 or -EINVAL. */
int cli_parse_size(const char *s, uint64_t *out);
/* 0 when v is a segment size the cache takes; else says so as "cairn <cmd>:",
 * naming `what`. */
int cli_check_segment(const char *cmd, const char *what, uint64_t v);
/* The largest device request a user may ask for: at least one smallest segment,
 * at most what a bounce buffer may sensibly take (a typo of 100G would ask
 * the cache for that much). 0 when v is in range; else says so. */
#define CLI_MAX_IO_MIN 512u
#define CLI_MAX_IO_MAX (256u << 20)
int cli_check_max_io(const char *cmd, const char *what, uint64_t v);
/* "1ms", "250us", "2s", "100ns"; a bare number is microseconds. */
int cli_parse_duration_ns(const char *s, uint64_t *out);
/* For an unknown option: ": did you mean 'OPTION'?" into out, OPTION the one of a
 * --help text nearest to word (a typo of at most two letters; '-' and '_' alike,
 * anything from '=' on ignored); else out is "". The help text is the list of
 * options, so a new option needs no second list. */
void cli_suggest(const char *help, const char *word, char *out, size_t len);
/* The same with the text usage() prints as the help. */
void cli_suggest_usage(void (*usage)(FILE *f), const char *word, char *out, size_t len);
/* "cairn <cmd>: unknown option 'a'[: did you mean ...?] (see cairn <help_cmd>
 * --help)", the hint from usage()'s text; help_cmd is "bench rw" for a
 * subcommand. */
void cli_unknown_option(const char *cmd, const char *help_cmd, const char *a,
			void (*usage)(FILE *f));
/* 1 after saying so when the positional argument a is "" (an image, a mount
 * point, a path in an image: "cairn info ''" said ": No such file or
 * directory", "cairn ls IMG ''" listed the root); else 0. */
int cli_empty_arg(const char *cmd, const char *a);
/* Print "cairn <cmd>: <fmt...>\n" to stderr. */
void cli_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
