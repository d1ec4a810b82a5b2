/* SPDX-License-Identifier: MIT */
/* cairn bench: in-process measurements. Each subcommand lives in its own file. */
#include <string.h>
#include "cli.h"

static void bench_usage(FILE *f)
{
	fprintf(f, "usage: cairn bench read IMAGE [PATH...] [options]   cold reads through the IO stack\n"
		   "       cairn bench rw [options]                      seed-001 test on the RAM fs\n"
		   "'cairn bench <sub> --help' lists the options.\n");
}

int cmd_bench(int argc, char **argv)
{
	if (argc < 2) {
		bench_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		bench_usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "read"))
		return bench_read_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "rw"))
		return bench_rw_main(argc - 1, argv + 1);
	cli_err("bench", "unknown subcommand '%s'", argv[1]);
	bench_usage(stderr);
	return CLI_EXIT_USAGE;
}
