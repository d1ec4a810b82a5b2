/* SPDX-License-Identifier: MIT */
/* cairn stat: every attribute of one path of an image, xattrs included. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: cairn stat [-L] [options] IMAGE PATH\n"
		   "Prints every attribute of PATH in IMAGE: type, mode, links, owner, size,\n"
		   "blocks, device numbers, times to the nanosecond, symlink target, xattrs.\n"
		   "  -L, --dereference  follow PATH if it is a symlink\n\n%s",
		cli_image_opts_help);
}

static const char *type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "regular file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symbolic link";
	case S_IFCHR: return "character device";
	case S_IFBLK: return "block device";
	case S_IFIFO: return "fifo";
	default: return "socket";
	}
}

/* Value as text when printable, else hex. */
static void print_value(const unsigned char *v, size_t n)
{
	int text = 1;

	for (size_t i = 0; i < n; i++)
		if (v[i] < 0x20 || v[i] >= 0x7f)
			text = 0;
	if (text) {
		putchar('"');
		fwrite(v, 1, n, stdout);
		putchar('"');
	} else {
		fputs("0x", stdout);
		for (size_t i = 0; i < n; i++)
			printf("%02x", v[i]);
	}
}

static int print_xattrs(struct cairn_image *img, const char *image, const char *path,
			cairn_ino_t ino)
{
	char *names;
	ssize_t len = cairn_image_listxattr_alloc(img, ino, &names);
	unsigned char *val = malloc(CAIRN_XATTR_VALUE_MAX);
	int rc = 0;

	if (len < 0 || !val) {
		rc = len < 0 ? (int)len : -ENOMEM;
		goto out;
	}
	for (char *n = names; len > 0 && n < names + len; n += strlen(n) + 1) {
		ssize_t v = cairn_image_getxattr(img, ino, n, val, CAIRN_XATTR_VALUE_MAX);

		if (v < 0) {
			rc = (int)v;
			goto out;
		}
		printf("  xattr: %s = ", n);
		print_value(val, (size_t)v);
		putchar('\n');
	}
out:
	if (rc)
		cli_img_err("stat", image, img, path, rc);
	free(names);
	free(val);
	return rc;
}

int cmd_stat(int argc, char **argv)
{
	struct cli_image_opts o;
	struct cairn_image *img;
	struct cairn_stack *stack;
	struct cairn_stat st;
	cairn_ino_t ino;
	char mode[11], t[80], target[CAIRN_SYMLINK_MAX + 1];
	int npos, rc, deref = 0;
	char *pos[2];
	const struct cli_flag flags[] = { { "-L", "--dereference", &deref }, { NULL, NULL, NULL } };

	cli_image_opts_init(&o);
	rc = cli_read_args("stat", argc, argv, &o, flags, pos, 2, &npos, usage);
	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	if (npos != 2) {
		cli_err("stat", "needs IMAGE and PATH (see cairn stat --help)");
		return CLI_EXIT_USAGE;
	}
	stack = cli_open_image("stat", pos[0], &o);
	img = stack ? cairn_stack_image(stack) : NULL;
	if (!img)
		return CLI_EXIT_FAIL;
	rc = cairn_image_resolve(img, pos[1], deref, &ino);
	if (!rc)
		rc = cairn_image_stat(img, ino, &st);
	if (rc) {
		cli_img_err("stat", pos[0], img, pos[1], rc);
		cairn_stack_close(stack);
		return CLI_EXIT_FAIL;
	}
	cli_mode_string(st.mode, mode);
	fputs("  path: ", stdout);
	cli_print_name(stdout, pos[1], strlen(pos[1]));
	if (S_ISLNK(st.mode)) {
		ssize_t n = cairn_image_readlink(img, ino, target, sizeof(target));

		if (n < 0) {
			rc = (int)n;
			cli_img_err("stat", pos[0], img, pos[1], rc);
		} else {
			fputs(" -> ", stdout);
			cli_print_name(stdout, target, (size_t)n);
		}
	}
	printf("\n  type: %s\n", type_name(st.mode));
	printf("  inode: %" PRIu64 "\n", st.ino);
	printf("  mode: %04o (%s)\n", st.mode & 07777, mode);
	printf("  links: %u\n", st.nlink);
	printf("  uid: %u\n  gid: %u\n", st.uid, st.gid);
	printf("  size: %" PRIu64 "\n", st.size);
	printf("  blocks: %" PRIu64 "\n", st.blocks);
	if (S_ISCHR(st.mode) || S_ISBLK(st.mode))
		printf("  device: %u, %u\n", major(st.rdev), minor(st.rdev));
	cli_format_time(&st.atime, 1, t, sizeof(t));
	printf("  atime: %s (%" PRId64 ".%09u)\n", t, st.atime.sec, st.atime.nsec);
	cli_format_time(&st.mtime, 1, t, sizeof(t));
	printf("  mtime: %s (%" PRId64 ".%09u)\n", t, st.mtime.sec, st.mtime.nsec);
	cli_format_time(&st.ctime, 1, t, sizeof(t));
	printf("  ctime: %s (%" PRId64 ".%09u)\n", t, st.ctime.sec, st.ctime.nsec);
	if (S_ISREG(st.mode)) {
		uint64_t lo, hi;

		if (cairn_image_file_extent(img, ino, &lo, &hi) == 0 && hi > lo)
			printf("  data: bytes %" PRIu64 "..%" PRIu64 " of the image\n", lo, hi);
	}
	if (print_xattrs(img, pos[0], pos[1], ino))
		rc = -1;
	cli_print_stats(&o, stack);
	cairn_stack_close(stack);
	return rc ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
