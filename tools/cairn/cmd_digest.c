/* SPDX-License-Identifier: MIT */
/*
 * cairn digest IMAGE: recompute the root digest from the bytes, checking the
 * digest table against block 0 and every granule against the table, and print
 * it. Exit 0 when every byte matches (and matches --digest, if given), 1 when
 * something does not (each mismatch printed), 2 bad usage, 4 unreadable.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"

#define DIGEST_EXIT_UNREADABLE 4

static void usage(FILE *f)
{
	fprintf(f, "usage: cairn digest [options] IMAGE\n"
		   "Reads every byte of IMAGE, checks it against the image's SHA-256 digests\n"
		   "and prints the root digest (sha256:HEX), which --digest and mount -o digest=\n"
		   "accept. With --digest, also fails unless the root is that one.\n"
		   "exit status: 0 every byte matches, 1 mismatches (listed), 2 bad command line,\n"
		   "             4 the image cannot be read or has no digests\n\n%s",
		cli_image_opts_help);
}

static void report(void *ctx, const char *msg)
{
	printf("%s: %s\n", (const char *)ctx, msg);
}

/* The device stack of the image without the verify device and the cache: the
 * scan reads every byte itself, so it names each bad granule. */
static struct cairn_stack *open_raw(const char *path, struct cli_image_opts *o)
{
	struct cli_image_opts raw = *o;

	raw.open.verify.off = 1;
	raw.open.verify.has_root = 0;
	raw.open.cache.budget_bytes = CAIRN_CACHE_OFF;
	return cli_open_image("digest", path, &raw);
}

int cmd_digest(int argc, char **argv)
{
	struct cli_image_opts o;
	struct cairn_image *img;
	struct cairn_stack *stack;
	uint8_t root[CAIRN_DIGEST_LEN];
	char text[CAIRN_DIGEST_TEXT_LEN];
	int npos, rc;
	long problems;
	char *pos[1];

	cli_image_opts_init(&o);
	rc = cli_read_args("digest", argc, argv, &o, NULL, pos, 1, &npos, usage);
	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	if (npos != 1) {
		cli_err("digest", "needs IMAGE (see cairn digest --help)");
		return CLI_EXIT_USAGE;
	}
	stack = open_raw(pos[0], &o);
	img = stack ? cairn_stack_image(stack) : NULL;
	if (!img)
		return DIGEST_EXIT_UNREADABLE;
	problems = cairn_verify_scan(cairn_cache_bdev(cairn_image_cache(img)), root, report, pos[0]);
	cli_print_stats(&o, stack);
	cairn_stack_close(stack);
	if (problems == -ENODATA) {
		cli_err("digest", "%s: the image has no digests (built with --no-verity)", pos[0]);
		return DIGEST_EXIT_UNREADABLE;
	}
	if (problems < 0) {
		cli_err("digest", "%s: %s", pos[0], cairn_strerror((int)problems));
		return DIGEST_EXIT_UNREADABLE;
	}
	cairn_digest_format(root, text);
	/* The granules first: they are checked against the image's own root, so a
	 * pinned root that differs is a second finding, not a mismatch of bytes. */
	if (problems)
		printf("%s: %ld mismatch%s; the bytes do not match root digest %s\n", pos[0],
		       problems, problems == 1 ? "" : "es", text);
	if (o.open.verify.has_root && memcmp(root, o.open.verify.root, CAIRN_DIGEST_LEN)) {
		char want[CAIRN_DIGEST_TEXT_LEN];

		cairn_digest_format(o.open.verify.root, want);
		printf("%s: root digest is %s, expected %s\n", pos[0], text, want);
		problems++;
	}
	if (problems)
		return CLI_EXIT_FAIL;
	printf("%s\n", text);
	return CLI_EXIT_OK;
}
