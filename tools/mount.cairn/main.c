/* SPDX-License-Identifier: MIT */
/*
 * mount.cairn: the helper mount(8) runs for `mount -t cairn IMAGE DIR [-o opts]`
 * and fstab lines. It hands over to `cairn mount IMAGE DIR -o opts`.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *opts = NULL;
	char *args[8];
	int n = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: mount.cairn IMAGE DIR [-o options]\n");
		return 1;
	}
	for (int i = 3; i < argc; i++)
		if (!strcmp(argv[i], "-o") && i + 1 < argc)
			opts = argv[++i];
	args[n++] = "cairn";
	args[n++] = "mount";
	args[n++] = argv[1];
	args[n++] = argv[2];
	if (opts) {
		args[n++] = "-o";
		args[n++] = (char *)opts;
	}
	args[n] = NULL;
	execvp("cairn", args);
	perror("mount.cairn: cannot run cairn");
	return 1;
}
