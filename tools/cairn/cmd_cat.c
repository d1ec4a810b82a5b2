/* SPDX-License-Identifier: MIT */
/* cairn cat: write files of an image to stdout, following symlinks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include "cli.h"

#define CAT_CHUNK (1u << 20)
#define CAT_PAGE 4096u

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

/* A chunk at off failed its digest: read it again a page at a time, so the
 * good bytes before the bad granule still reach stdout (as cat of a dm-verity
 * device gives every block before the bad one), and say at which byte the bad
 * ones start. Only for a digest mismatch: the good pages are in the cache
 * already, and the bad one fails at once, where a timeout would be paid per
 * page. Returns 0 or -errno; *off advances past what was written. */
static int cat_good_prefix(struct cairn_image *img, cairn_ino_t ino, char *buf,
			   uint64_t end, uint64_t *off, uint64_t *bad)
{
	uint64_t stop = *off + CAT_CHUNK < end ? *off + CAT_CHUNK : end;

	while (*off < stop) {
		size_t want = stop - *off < CAT_PAGE ? (size_t)(stop - *off) : CAT_PAGE;
		ssize_t n = cairn_image_read(img, ino, buf, want, *off);
		int rc;

		if (n <= 0)
			break;
		rc = write_all(STDOUT_FILENO, buf, (size_t)n);
		if (rc)
			return rc;
		*off += (uint64_t)n;
	}
	*bad = *off;
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

		if (n == -CAIRN_EDIGEST) {
			char where[64];
			uint64_t bad;

			rc = cat_good_prefix(img, ino, buf, st.size, &off, &bad);
			if (rc) {
				cli_err("cat", "writing to stdout: %s", cairn_strerror(rc));
				return rc;
			}
			snprintf(where, sizeof(where), "from byte %llu", (unsigned long long)bad);
			cli_err("cat", "%s: %s: %s: %s", image, path, where, cairn_strerror((int)n));
			return -EIO;
		}
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
