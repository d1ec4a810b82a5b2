/* SPDX-License-Identifier: MIT */
/*
 * cairn mount: runs the FUSE daemon, cairn-fuse, with the same arguments, so
 * the cairn tool itself does not link libfuse (`cairn info` runs without it).
 * The daemon parses the command line, prints the messages and chooses the exit
 * code, as `cairn mount` did when it was linked in. It is looked for next to
 * this cairn (a build directory, or an install that put both in one place),
 * then in CAIRN_LIBEXECDIR, where `make install` put it.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "../common/sibling.h"

#ifndef CAIRN_LIBEXECDIR
#define CAIRN_LIBEXECDIR "/usr/local/libexec/cairn"
#endif
#define DAEMON_NAME "cairn-fuse"

/* -h or --help anywhere, as the daemon reads them. */
static int wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return 1;
	return 0;
}

int cmd_mount(int argc, char **argv)
{
	char path[PATH_MAX];
	const char *tool = path;
	int err;

	if (tool_sibling(DAEMON_NAME, path, sizeof(path)))
		tool = CAIRN_LIBEXECDIR "/" DAEMON_NAME;
	argv[0] = (char *)tool; /* argv[0] was "mount"; argv ends with NULL */
	fflush(NULL);
	execv(tool, argv);
	err = errno;
	if (wants_help(argc, argv)) {
		fputs(cli_mount_help, stdout);
		cli_err("mount", "note: the FUSE daemon %s cannot run (%s): mounting needs it",
			tool, strerror(err));
		return CLI_EXIT_OK;
	}
	cli_err("mount", "cannot run the FUSE daemon %s: %s (looked for beside this cairn, "
		"then where `make install` puts it)", tool, strerror(err));
	return CLI_EXIT_FAIL;
}
