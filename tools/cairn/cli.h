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

int cmd_mkfs(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_extract(int argc, char **argv);
int cmd_fsck(int argc, char **argv);
int cmd_mount(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* cairn bench subcommands: `read` (bench_read.c), `rw` (bench_rw.c, the RAM fs). */
int bench_read_main(int argc, char **argv);
int bench_rw_main(int argc, char **argv);

/* Exit codes shared by all commands. fsck documents its own (see cmd_fsck.c). */
#define CLI_EXIT_OK      0
#define CLI_EXIT_FAIL    1  /* the operation failed (IO error, corrupt image, ...) */
#define CLI_EXIT_USAGE   2  /* bad command line */

/* Options every image-reading command takes: --cache-size, --segment, --delay,
 * --max-io, --offset, --direct, --stats. */
struct cli_image_opts {
	struct cairn_open_opts open;
	int print_stats;
};
void cli_image_opts_init(struct cli_image_opts *o);
/* If argv[*i] is one of the shared options, consume it (and its value) and return 1;
 * 0 if it is not one; -1 after printing an error for a bad value. */
int cli_image_opt_parse(struct cli_image_opts *o, int argc, char **argv, int *i);
extern const char cli_image_opts_help[];
/* Open the image or print "cairn <cmd>: <path>: <reason>" and return NULL. */
struct cairn_image *cli_open_image(const char *cmd, const char *path,
				   const struct cli_image_opts *o);
/* Print IO counters to stderr if --stats was given. */
void cli_print_stats(const struct cli_image_opts *o, struct cairn_image *img);

/* "64M", "1m", "4096", "1.5G" -> bytes. Returns 0 or -EINVAL. */
int cli_parse_size(const char *s, uint64_t *out);
/* "1ms", "250us", "2s", "100ns"; a bare number is microseconds. */
int cli_parse_duration_ns(const char *s, uint64_t *out);
/* Print "cairn <cmd>: <fmt...>\n" to stderr. */
void cli_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
