/* SPDX-License-Identifier: MIT */
/* cairn ls: list a directory of an image, like ls(1) (all names except . and ..). */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: cairn ls [-l] [-R] [options] IMAGE [PATH]\n"
		   "Lists PATH (default /) of IMAGE: one name per line, in the image's (byte) order.\n"
		   "  -l, --long         mode, links, uid, gid, size (or major, minor), mtime (UTC), name\n"
		   "  -R, --recursive    list subdirectories too\n"
		   "Names are printed with \\n, \\\\ and \\xNN escapes for newlines and control bytes.\n\n%s",
		cli_image_opts_help);
}

struct ls {
	struct cairn_image *img;
	const char *image;
	int lng, rec;
	uint8_t *seen; /* directories listed already: a hostile image may hold loops */
	uint64_t inode_count;
	int failed;
};

static void print_entry(struct ls *s, const char *path, const char *name, size_t len,
			cairn_ino_t ino)
{
	struct cairn_stat st;
	char mode[11], t[64], target[CAIRN_SYMLINK_MAX + 1];
	int rc;

	if (!s->lng) {
		cli_print_name(stdout, name, len);
		putchar('\n');
		return;
	}
	rc = cairn_image_stat(s->img, ino, &st);
	if (rc) {
		cli_img_err("ls", s->image, s->img, path, rc);
		s->failed = 1;
		return;
	}
	cli_mode_string(st.mode, mode);
	cli_format_time(&st.mtime, 0, t, sizeof(t));
	t[16] = '\0'; /* minutes, as ls -l */
	printf("%s %3u %5u %5u ", mode, st.nlink, st.uid, st.gid);
	if (S_ISCHR(st.mode) || S_ISBLK(st.mode))
		printf("%4u, %4u ", major(st.rdev), minor(st.rdev));
	else
		printf("%10" PRIu64 " ", st.size);
	printf("%s ", t);
	cli_print_name(stdout, name, len);
	if (S_ISLNK(st.mode)) {
		ssize_t n = cairn_image_readlink(s->img, ino, target, sizeof(target));

		if (n < 0) {
			cli_img_err("ls", s->image, s->img, path, (int)n);
			s->failed = 1;
		} else {
			fputs(" -> ", stdout);
			cli_print_name(stdout, target, (size_t)n);
		}
	}
	putchar('\n');
}

/* The path printed for an entry of the directory at path: one '/' between
 * them, none after an empty path. malloc'd; NULL on ENOMEM. */
static char *entry_path(const char *path, const char *name, size_t len)
{
	size_t n = strlen(path);
	char *p;

	if (asprintf(&p, "%s%s%.*s", path, !n || path[n - 1] == '/' ? "" : "/", (int)len,
		     name) < 0)
		return NULL;
	return p;
}

static void list_dir(struct ls *s, const char *path, cairn_ino_t dir, int header)
{
	struct cairn_dirent *l = NULL;
	ssize_t n;

	if (dir < s->inode_count) {
		if (s->seen[dir / 8] & (1u << (dir % 8))) {
			cli_err("ls", "%s: %s: directory loop (corrupt image)", s->image, path);
			s->failed = 1;
			return;
		}
		s->seen[dir / 8] |= (uint8_t)(1u << (dir % 8));
	}
	n = cairn_image_readdir_alloc(s->img, dir, 0, 0, &l);
	if (header) {
		cli_print_name(stdout, path, strlen(path));
		fputs(":\n", stdout);
	}
	if (n < 0) {
		cli_img_err("ls", s->image, s->img, path, (int)n);
		s->failed = 1;
	}
	for (ssize_t i = 0; i < n; i++) {
		char *p = entry_path(path, l[i].name, l[i].name_len);

		print_entry(s, p ? p : path, l[i].name, l[i].name_len, l[i].ino);
		free(p);
	}
	for (ssize_t i = 0; s->rec && i < n; i++) {
		char *p;

		if (l[i].dtype != DT_DIR)
			continue;
		p = entry_path(path, l[i].name, l[i].name_len);
		if (!p) {
			s->failed = 1;
			break;
		}
		putchar('\n');
		list_dir(s, p, l[i].ino, 1);
		free(p);
	}
	free(l);
}

int cmd_ls(int argc, char **argv)
{
	struct cli_image_opts o;
	struct ls s = { 0 };
	struct cairn_stack *stack;
	struct cairn_image_info info;
	struct cairn_stat st;
	const char *path;
	cairn_ino_t ino;
	int npos, rc;
	char *pos[2];
	const struct cli_flag flags[] = { { "-l", "--long", &s.lng },
					  { "-R", "--recursive", &s.rec },
					  { NULL, NULL, NULL } };

	cli_image_opts_init(&o);
	rc = cli_read_args("ls", argc, argv, &o, flags, pos, 2, &npos, usage);
	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	if (npos < 1) {
		cli_err("ls", "needs IMAGE (see cairn ls --help)");
		return CLI_EXIT_USAGE;
	}
	path = npos > 1 ? pos[1] : "/";
	s.image = pos[0];
	stack = cli_open_image("ls", s.image, &o);
	s.img = stack ? cairn_stack_image(stack) : NULL;
	if (!s.img)
		return CLI_EXIT_FAIL;
	cairn_image_get_info(s.img, &info);
	s.inode_count = info.inode_count;
	s.seen = calloc((size_t)(info.inode_count / 8 + 1), 1);
	if (!s.seen) {
		cli_err("ls", "out of memory");
		cairn_stack_close(stack);
		return CLI_EXIT_FAIL;
	}
	/* Like ls: a symlink named on the command line is listed itself with -l,
	 * and followed without it. */
	rc = cairn_image_resolve(s.img, path, !s.lng, &ino);
	if (!rc)
		rc = cairn_image_stat(s.img, ino, &st);
	if (rc) {
		cli_img_err("ls", s.image, s.img, path, rc);
		s.failed = 1;
	} else if (S_ISDIR(st.mode)) {
		list_dir(&s, path, ino, s.rec);
	} else {
		print_entry(&s, path, path, strlen(path), ino);
	}
	cli_print_stats(&o, stack);
	free(s.seen);
	cairn_stack_close(stack);
	return s.failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
