/* SPDX-License-Identifier: MIT */
/* Embedding libcairn: print one file of an image, as `cairn cat` does.
 * Build: cc -std=c11 cat.c $(pkg-config --cflags --libs --static cairn) */
#include <stdio.h>
#include <cairn/cairn.h>

int main(int argc, char **argv)
{
	struct cairn_stack_opts opts;
	struct cairn_stack *stack;
	struct cairn_image *img;
	char why[256];
	cairn_ino_t ino;
	char buf[65536];
	ssize_t n = 0;
	uint64_t off = 0;
	int rc;

	if (argc != 3)
		return 2;
	cairn_stack_opts_init(&opts); /* defaults: 64 MiB cache, 1 MiB requests */
	rc = cairn_stack_open(argv[1], &opts, why, sizeof(why), &stack);
	if (rc < 0) {
		fprintf(stderr, "%s: %s%s%s\n", argv[1], cairn_strerror(rc), why[0] ? ": " : "", why);
		return 1;
	}
	img = cairn_stack_image(stack);
	rc = cairn_image_resolve(img, argv[2], 1, &ino);
	while (rc == 0 && (n = cairn_image_read(img, ino, buf, sizeof(buf), off)) > 0) {
		fwrite(buf, 1, (size_t)n, stdout);
		off += (uint64_t)n;
	}
	if (rc < 0 || n < 0)
		fprintf(stderr, "%s: %s\n", argv[2], cairn_strerror(rc < 0 ? rc : (int)n));
	cairn_stack_close(stack);
	return rc < 0 || n < 0;
}
