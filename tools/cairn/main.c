/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "mkfs",    cmd_mkfs,    "build an image from a directory or a manifest" },
	{ "info",    cmd_info,    "print the superblock summary of an image" },
	{ "ls",      cmd_ls,      "list a directory of an image" },
	{ "cat",     cmd_cat,     "write a file of an image to stdout" },
	{ "stat",    cmd_stat,    "print the attributes of a path in an image" },
	{ "extract", cmd_extract, "restore an image into a directory" },
	{ "fsck",    cmd_fsck,    "check every structure and checksum of an image" },
	{ "digest",  cmd_digest,  "recompute an image's root digest from all its bytes" },
	{ "mount",   cmd_mount,   "serve an image (or RAM only) through FUSE" },
	{ "bench",   cmd_bench,   "measure reads from an image in-process" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: cairn <command> [options] ...\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "  --version print the version\n"
		   "\n'cairn <command> --help' describes each command.\n");
}

/* The nearest command (or --version) is the hint, as for an unknown option. */
static void unknown_command(const char *word)
{
	char near[80];

	cli_suggest_usage(usage, word, near, sizeof(near));
	fprintf(stderr, "cairn: unknown command '%s'%s\n", word, near);
	usage(stderr);
}

static int run(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("cairn %s\n", cairn_version());
		return CLI_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	unknown_command(argv[1]);
	return CLI_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	const char *cmd = argc >= 2 && argv[1][0] != '-' ? argv[1] : NULL;

	return cli_close_stdout(cmd, run(argc, argv));
}
