/* SPDX-License-Identifier: MIT */
/* cairn cat: write files of an image to stdout, following symlinks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include "cli.h"

#define CAT_CHUNK (1u << 20)

static void usage(FILE *f)
{
	fprintf(f, "usage: cairn cat [options] IMAGE PATH...\n"
		   "Writes each PATH of IMAGE to stdout (symlinks are followed).\n\n%s",
		cli_image_opts_help);
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int cat_one(struct cairn_image *img, const char *image, const char *path, char *buf)
{
	struct cairn_stat st;
	cairn_ino_t ino;
	uint64_t off = 0;
	int rc = cairn_image_resolve(img, path, 1, &ino);

	if (!rc)
		rc = cairn_image_stat(img, ino, &st);
	if (!rc && S_ISDIR(st.mode))
		rc = -EISDIR;
	else if (!rc && !S_ISREG(st.mode))
		rc = -EINVAL;
	if (rc) {
		cli_img_err("cat", image, img, path, rc);
		return rc;
	}
	while (off < st.size) {
		ssize_t n = cairn_image_read(img, ino, buf, CAT_CHUNK, off);

		if (n <= 0) {
			cli_img_err("cat", image, img, path, n < 0 ? (int)n : -EIO);
			return -EIO;
		}
		rc = write_all(STDOUT_FILENO, buf, (size_t)n);
		if (rc) {
			cli_err("cat", "writing to stdout: %s", cairn_strerror(rc));
			return rc;
		}
		off += (uint64_t)n;
	}
	return 0;
}

int cmd_cat(int argc, char **argv)
{
	struct cli_image_opts o;
	struct cairn_image *img;
	struct cairn_stack *stack;
	int npos, rc, failed = 0;
	char **pos = calloc((size_t)argc + 1, sizeof(char *));
	char *buf;

	if (!pos)
		return CLI_EXIT_FAIL;
	cli_image_opts_init(&o);
	rc = cli_read_args("cat", argc, argv, &o, NULL, pos, argc, &npos, usage);
	if (rc || npos < 2) {
		if (!rc)
			cli_err("cat", "needs IMAGE and PATH (see cairn cat --help)");
		free(pos);
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	stack = cli_open_image("cat", pos[0], &o);
	img = stack ? cairn_stack_image(stack) : NULL;
	buf = malloc(CAT_CHUNK);
	if (!img || !buf) {
		cairn_stack_close(stack);
		free(buf);
		free(pos);
		return CLI_EXIT_FAIL;
	}
	for (int i = 1; i < npos; i++)
		if (cat_one(img, pos[0], pos[i], buf))
			failed = 1;
	cli_print_stats(&o, stack);
	cairn_stack_close(stack);
	free(buf);
	free(pos);
	return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
