/* SPDX-License-Identifier: MIT */
/* Placeholder until the command lands; replaced by its owner. */
#include "cli.h"

int cmd_mkfs(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cli_err("mkfs", "not built yet");
	return CLI_EXIT_FAIL;
}
