/* SPDX-License-Identifier: MIT */
/*
 * cairn extract: restore an image into a directory. A front end over
 * cairn_extract_to_dir() (include/cairn/extract.h, lib/extract/), which does
 * the work and the path safety; this file parses options and prints.
 */
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>
#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: cairn extract [options] IMAGE DIR\n"
		   "Restores IMAGE into DIR: all file types, symlinks as they are (absolute\n"
		   "and '..' ones too, as tar does), hard links, modes, owners (when root),\n"
		   "atime/mtime to the nanosecond, xattrs, and the holes of sparse files.\n"
		   "DIR is created if missing and then takes the image root's mode, owner and\n"
		   "times; an existing DIR keeps its own. Existing subdirectories are merged\n"
		   "into (keeping their attributes); existing files are never overwritten.\n"
		   "Nothing is ever written outside DIR: no symlink is followed while writing.\n\n"
		   "options:\n"
		   "  --overwrite-dir    existing directories, DIR too, take the image's mode,\n"
		   "                     owner and times (as tar --overwrite-dir)\n"
		   "  --safe-links       skip symlinks that would lead outside DIR when followed\n"
		   "                     (absolute, or climbing above DIR); each is reported\n"
		   "                     and the exit status is 1\n"
		   "  --unsafe-links     accepted for old scripts and ignored: symlinks are\n"
		   "                     restored as they are by default\n\n%s",
		cli_image_opts_help);
}

static void report(void *ctx, const char *msg)
{
	(void)ctx;
	cli_err("extract", "%s", msg);
}

/* Each directory level holds one descriptor: allow as many as the hard limit. */
static void raise_fd_limit(void)
{
	struct rlimit r;

	if (!getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

int cmd_extract(int argc, char **argv)
{
	struct cli_image_opts o;
	struct cairn_extract_opts xo;
	struct cairn_image *img;
	struct cairn_stack *stack;
	int npos, rc, safe_links = 0, unsafe_links = 0, overwrite_dir = 0;
	char *pos[2];
	const struct cli_flag flags[] = {
		{ "--safe-links", NULL, &safe_links },
		{ "--unsafe-links", NULL, &unsafe_links }, /* the default: a no-op */
		{ "--overwrite-dir", NULL, &overwrite_dir },
		{ NULL, NULL, NULL },
	};

	cli_image_opts_init(&o);
	rc = cli_read_args("extract", argc, argv, &o, flags, pos, 2, &npos, usage);
	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	if (npos != 2) {
		cli_err("extract", "needs IMAGE and DIR (see cairn extract --help)");
		return CLI_EXIT_USAGE;
	}
	stack = cli_open_image("extract", pos[0], &o);
	img = stack ? cairn_stack_image(stack) : NULL;
	if (!img)
		return CLI_EXIT_FAIL;
	raise_fd_limit();
	cairn_extract_opts_init(&xo);
	xo.safe_links = safe_links;
	xo.overwrite_dirs = overwrite_dir;
	xo.preserve_owner = geteuid() == 0;
	xo.image_name = pos[0];
	xo.report = report;
	rc = cairn_extract_to_dir(img, "/", pos[1], &xo, NULL);
	cli_print_stats(&o, stack);
	cairn_stack_close(stack);
	return rc ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
