/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER until the benchmark lands. */
#include "cli.h"

int bench_read_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cli_err("bench", "read: not built yet");
	return CLI_EXIT_FAIL;
}
