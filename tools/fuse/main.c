/* SPDX-License-Identifier: MIT */
/*
 * cairn-fuse: the FUSE daemon, run by `cairn mount` with its arguments (and so
 * by mount.cairn). Kept out of the cairn tool so only this binary links
 * libfuse. Its command line, messages and exit codes are `cairn mount`'s.
 */
#include "../cairn/cli.h"
#include "mount.h"

int main(int argc, char **argv)
{
	return cli_close_stdout("mount", daemon_cmdline(argc, argv));
}
