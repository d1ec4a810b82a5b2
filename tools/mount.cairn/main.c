/* SPDX-License-Identifier: MIT */
/*
 * mount.cairn: the helper mount(8) runs for `mount -t cairn IMAGE DIR [-o opts]`
 * and for fstab lines of type cairn. mount(8) calls it as
 *   mount.cairn IMAGE DIR [-sfnv] [-o options] [-t type]
 * and it hands over to `cairn mount IMAGE DIR -o options`, which detaches once
 * the mount is up. mount(8) gives it no PATH, so the cairn tool is looked for
 * next to this helper first (a build directory), then in CAIRN_BINDIR, where
 * `make install` put the cairn this helper was installed with, then in PATH.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "../common/sibling.h"

#ifndef CAIRN_BINDIR
#define CAIRN_BINDIR "/usr/local/bin"
#endif

static void usage(FILE *f)
{
	fprintf(f, "usage: mount.cairn IMAGE DIR [-sfnv] [-o options]\n"
		   "  (or: mount -t cairn IMAGE DIR -o options; see docs/MOUNT.md)\n"
		   "Runs `cairn mount IMAGE DIR -o options`, which detaches once mounted.\n"
		   "  -f  fake: do nothing     -v  print the command run\n"
		   "  -s, -n, -N: accepted for mount(8), no effect\n"
		   "The options are those of `cairn mount --help`. cairn is run from this\n"
		   "helper's directory, else from " CAIRN_BINDIR ", else from PATH.\n");
}

/* mount(8) adds "rw" to every mount not asked to be "ro" (libmount writes the
 * MS_RDONLY flag back as an option), so here it says nothing about what the user
 * wants, and `cairn mount` refuses "rw" on a mount with nothing writable. Drops
 * each "rw" from the comma-separated opts, in place. */
static void drop_rw(char *opts)
{
	char *out = opts;

	for (char *tok = opts, *end; tok; tok = end) {
		end = strchr(tok, ',');
		if (end)
			*end++ = 0;
		if (!strcmp(tok, "rw"))
			continue;
		if (out != opts)
			*out++ = ',';
		memmove(out, tok, strlen(tok) + 1);
		out += strlen(out);
	}
	*out = 0;
}

int main(int argc, char **argv)
{
	char *opts = NULL;
	const char *pos[2];
	char tool[PATH_MAX];
	char *args[8];
	int n = 0, npos = 0, fake = 0, verbose = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-o") && i + 1 < argc) {
			opts = argv[++i];
		} else if (!strncmp(a, "-o", 2) && a[2]) {
			opts = argv[i] + 2;
		} else if (!strcmp(a, "-t") && i + 1 < argc) {
			i++; /* cairn or fuse.cairn: nothing to choose */
		} else if (a[0] == '-' && a[1]) {
			/* -s sloppy, -n no mtab, -N namespace: nothing to do; -f fake; -v */
			for (const char *f = a + 1; *f; f++) {
				if (*f == 'f')
					fake = 1;
				else if (*f == 'v')
					verbose = 1;
			}
		} else if (npos < 2) {
			pos[npos++] = a;
		} else {
			usage(stderr);
			return 1;
		}
	}
	if (npos != 2) {
		usage(stderr);
		return 1;
	}
	if (fake)
		return 0;
	args[n++] = "cairn";
	args[n++] = "mount";
	args[n++] = (char *)pos[0];
	args[n++] = (char *)pos[1];
	if (opts)
		drop_rw(opts);
	if (opts && *opts) {
		args[n++] = "-o";
		args[n++] = opts;
	}
	args[n] = NULL;
	if (verbose)
		fprintf(stderr, "mount.cairn: cairn mount %s %s%s%s\n", pos[0], pos[1],
			opts && *opts ? " -o " : "", opts && *opts ? opts : "");
	if (tool_sibling("cairn", tool, sizeof(tool)) == 0)
		execv(tool, args);
	execv(CAIRN_BINDIR "/cairn", args);
	execvp("cairn", args);
	fprintf(stderr, "mount.cairn: cannot run cairn: %s (looked beside this helper, in "
		CAIRN_BINDIR " and in PATH)\n", strerror(errno));
	return 1;
}
