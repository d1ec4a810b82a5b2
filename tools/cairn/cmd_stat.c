/* SPDX-License-Identifier: MIT */
/* Placeholder until the command lands; replaced by its owner. */
#include "cli.h"

int cmd_stat(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cli_err("stat", "not built yet");
	return CLI_EXIT_FAIL;
}
