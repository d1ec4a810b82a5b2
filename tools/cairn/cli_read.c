/* SPDX-License-Identifier: MIT */
/* Helpers shared by the read-side commands (info, ls, cat, stat, extract, fsck). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "cli.h"

void cli_suggest_usage(void (*usage)(FILE *f), const char *word, char *out, size_t len)
{
	char *help = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&help, &n);

	if (len)
		out[0] = '\0';
	if (m) {
		usage(m);
		if (fclose(m) == 0)
			cli_suggest(help, word, out, len);
	}
	free(help);
}

void cli_unknown_option(const char *cmd, const char *help_cmd, const char *a,
			void (*usage)(FILE *f))
{
	char near[80];

	cli_suggest_usage(usage, a, near, sizeof(near));
	cli_err(cmd, "unknown option '%s'%s (see cairn %s --help)", a, near, help_cmd);
}

int cli_read_args(const char *cmd, int argc, char **argv, struct cli_image_opts *o,
		  const struct cli_flag *flags, char **pos, int max_pos, int *n_pos,
		  void (*usage)(FILE *f))
{
	int only_pos = 0;

	*n_pos = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int rc, matched = 0;

		if (!only_pos && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
			usage(stdout);
			return 1;
		}
		if (!only_pos && !strcmp(a, "--")) {
			only_pos = 1;
			continue;
		}
		if (!only_pos && a[0] == '-' && a[1]) {
			rc = cli_image_opt_parse(o, cmd, argc, argv, &i);
			if (rc < 0)
				return -1;
			if (rc > 0)
				continue;
			for (const struct cli_flag *f = flags; f && f->name; f++) {
				if (!strcmp(a, f->name) || (f->alt && !strcmp(a, f->alt))) {
					*f->set = 1;
					matched = 1;
				}
			}
			/* Bundled short flags: -lR. */
			if (!matched && a[1] != '-' && a[2]) {
				matched = 1;
				for (const char *c = a + 1; *c && matched; c++) {
					int one = 0;

					for (const struct cli_flag *f = flags; f && f->name; f++)
						if (f->name[0] == '-' && f->name[1] == *c && !f->name[2]) {
							*f->set = 1;
							one = 1;
						}
					matched = one;
				}
			}
			if (!matched) {
				cli_unknown_option(cmd, cmd, a, usage);
				return -1;
			}
			continue;
		}
		if (cli_empty_arg(cmd, argv[i]))
			return -1;
		if (*n_pos >= max_pos) {
			cli_err(cmd, "too many arguments (see cairn %s --help)", cmd);
			return -1;
		}
		pos[(*n_pos)++] = argv[i];
	}
	return 0;
}

void cli_mode_string(uint32_t mode, char out[11])
{
	static const char types[] = "?pc?d?b?-?l?s???";
	const char *rwx = "rwxrwxrwx";

	out[0] = types[(mode >> 12) & 15];
	for (int i = 0; i < 9; i++)
		out[1 + i] = (mode & (0400u >> i)) ? rwx[i] : '-';
	if (mode & S_ISUID)
		out[3] = (mode & S_IXUSR) ? 's' : 'S';
	if (mode & S_ISGID)
		out[6] = (mode & S_IXGRP) ? 's' : 'S';
	if (mode & S_ISVTX)
		out[9] = (mode & S_IXOTH) ? 't' : 'T';
	out[10] = '\0';
}

void cli_format_time(const struct cairn_time *t, int with_ns, char *buf, size_t len)
{
	time_t s = (time_t)t->sec;
	struct tm tm;
	size_t n;

	if (!gmtime_r(&s, &tm)) {
		snprintf(buf, len, "%lld", (long long)t->sec);
		return;
	}
	n = strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	if (with_ns && n)
		snprintf(buf + n, len - n, ".%09u UTC", t->nsec);
	else if (n)
		snprintf(buf + n, len - n, " UTC");
}

void cli_print_name(FILE *f, const char *name, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c == '\n')
			fputs("\\n", f);
		else if (c == '\\')
			fputs("\\\\", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
}
