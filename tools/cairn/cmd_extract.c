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
		   "Restores IMAGE into DIR (created if missing; existing files are never\n"
		   "overwritten): all file types, hard links, modes, owners (when root),\n"
		   "atime/mtime to the nanosecond, xattrs, and the holes of sparse files.\n"
		   "Nothing is ever written outside DIR, and symlinks that would lead\n"
		   "outside it (absolute, or climbing above it with '..', directly or\n"
		   "through other links) are refused.\n\n"
		   "options:\n"
		   "  --unsafe-links     extract such symlinks as they are (e.g. a root file\n"
		   "                     system to chroot into)\n\n%s",
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
	int npos, rc, unsafe_links = 0;
	char *pos[2];
	const struct cli_flag flags[] = {
		{ "--unsafe-links", NULL, &unsafe_links },
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
	img = cli_open_image("extract", pos[0], &o);
	if (!img)
		return CLI_EXIT_FAIL;
	raise_fd_limit();
	cairn_extract_opts_init(&xo);
	xo.unsafe_links = unsafe_links;
	xo.preserve_owner = geteuid() == 0;
	xo.image_name = pos[0];
	xo.report = report;
	rc = cairn_extract_to_dir(img, "/", pos[1], &xo, NULL);
	cli_print_stats(&o, img);
	cairn_image_close(img);
	return rc ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
