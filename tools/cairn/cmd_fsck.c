/* SPDX-License-Identifier: MIT */
/*
 * cairn fsck: check every structure and checksum of an image.
 * Exit codes: 0 clean, 1 problems found (each printed), 2 bad command line,
 * 4 the image cannot be read or opened (missing, not an image, truncated, IO error).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

#define FSCK_EXIT_CLEAN    0
#define FSCK_EXIT_PROBLEMS 1
#define FSCK_EXIT_USAGE    2
#define FSCK_EXIT_UNREADABLE 4

static void usage(FILE *f)
{
	fprintf(f, "usage: cairn fsck [--data] [-q] [-j N] [options] IMAGE\n"
		   "Checks the superblock, the checksum table, every metadata block, every inode,\n"
		   "directory (sort order, names, types, parent links), xattr and extent, link\n"
		   "counts and reachability from the root; for an image with digests, every\n"
		   "byte against the root digest (the whole image is read).\n"
		   "  --data             also read every file and check its content hash\n"
		   "  -q, --quiet        print nothing when the image is clean\n"
		   "  -j N               check on N threads (1..256; default: every online CPU);\n"
		   "                     the findings and their order are the same at any N\n"
		   "exit status: 0 clean, 1 problems found, 2 bad command line,\n"
		   "             4 the image cannot be read (missing, not an image, truncated, IO error)\n\n%s",
		cli_image_opts_help);
}

struct report {
	const char *image;
};

static void report(void *ctx, const char *msg)
{
	struct report *r = ctx;

	printf("%s: %s\n", r->image, msg);
}

/* Takes "-j N" out of argv (before any "--"), so the shared parser sees the rest.
 * Returns 0 (*threads 0 when absent) or -1 after printing an error. */
static int take_threads(int *argc, char **argv, unsigned *threads)
{
	*threads = 0;
	for (int i = 1; i < *argc && strcmp(argv[i], "--"); i++) {
		unsigned long v;
		char *end;

		if (strcmp(argv[i], "-j"))
			continue;
		errno = 0;
		v = i + 1 < *argc ? strtoul(argv[i + 1], &end, 10) : 0;
		if (i + 1 >= *argc || errno || end == argv[i + 1] || *end || v < 1 || v > 256) {
			cli_err("fsck", "-j: bad thread count '%s' (1..256)",
				i + 1 < *argc ? argv[i + 1] : "");
			return -1;
		}
		*threads = (unsigned)v;
		memmove(&argv[i], &argv[i + 2], (size_t)(*argc - i - 2) * sizeof(*argv));
		*argc -= 2;
		i--;
	}
	return 0;
}

static int root_differs(struct cairn_image *img, const uint8_t want[CAIRN_DIGEST_LEN],
			const char *image)
{
	uint8_t have[CAIRN_DIGEST_LEN];
	char a[CAIRN_DIGEST_TEXT_LEN], b[CAIRN_DIGEST_TEXT_LEN];

	if (cairn_image_root_digest(img, have)) {
		printf("%s: root digest: the image has none to compare with --digest\n", image);
		return 1;
	}
	if (!memcmp(have, want, CAIRN_DIGEST_LEN))
		return 0;
	cairn_digest_format(have, a);
	cairn_digest_format(want, b);
	printf("%s: root digest is %s, expected %s\n", image, a, b);
	return 1;
}

int cmd_fsck(int argc, char **argv)
{
	struct cli_image_opts o;
	struct cairn_image *img;
	struct cairn_stack *stack;
	struct cairn_verify_config pinned;
	uint8_t root[CAIRN_DIGEST_LEN];
	int verity;
	struct report r;
	int npos, rc, data = 0, quiet = 0;
	unsigned threads;
	long problems;
	char *pos[1];
	const struct cli_flag flags[] = { { "--data", NULL, &data },
					  { "-q", "--quiet", &quiet },
					  { NULL, NULL, NULL } };

	cli_image_opts_init(&o);
	if (take_threads(&argc, argv, &threads))
		return FSCK_EXIT_USAGE;
	rc = cli_read_args("fsck", argc, argv, &o, flags, pos, 1, &npos, usage);
	if (rc)
		return rc > 0 ? FSCK_EXIT_CLEAN : FSCK_EXIT_USAGE;
	if (npos != 1) {
		cli_err("fsck", "needs IMAGE (see cairn fsck --help)");
		return FSCK_EXIT_USAGE;
	}
	/* fsck reads the bytes as they are, so that it can name every bad one (the
	 * digest check runs first); a pinned root is compared with the image's. */
	pinned = o.open.verify;
	o.open.verify.off = 1;
	o.open.verify.has_root = 0;
	stack = cli_open_image("fsck", pos[0], &o);
	img = stack ? cairn_stack_image(stack) : NULL;
	if (!img)
		return FSCK_EXIT_UNREADABLE;
	r.image = pos[0];
	verity = cairn_image_root_digest(img, root) == 0;
	problems = cairn_image_fsck(img, (data ? CAIRN_FSCK_DATA : 0) | CAIRN_FSCK_DIGESTS |
					 CAIRN_FSCK_THREADS(threads), report, &r);
	if (problems >= 0 && pinned.has_root && root_differs(img, pinned.root, pos[0]))
		problems++;
	cli_print_stats(&o, stack);
	if (problems < 0) {
		cli_img_err("fsck", pos[0], img, "cannot check", (int)problems);
		cairn_stack_close(stack);
		return FSCK_EXIT_UNREADABLE;
	}
	cairn_stack_close(stack);
	if (problems) {
		printf("%s: %ld problem%s found\n", pos[0], problems, problems == 1 ? "" : "s");
		return FSCK_EXIT_PROBLEMS;
	}
	if (!quiet)
		printf("%s: clean (structures, checksums%s%s)\n", pos[0],
		       verity ? ", digests" : "", data ? " and file data" : "");
	return FSCK_EXIT_CLEAN;
}
