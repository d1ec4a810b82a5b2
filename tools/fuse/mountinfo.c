/* SPDX-License-Identifier: MIT */
/*
 * /proc/self/mountinfo, one parsed line at a time: what a mount would cover
 * (daemon.c) and where the cgroup hierarchies are mounted (memlimit.c).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "daemon.h"

/* Copies the blank-ended field at *p into out (at most size - 1 bytes), undoing
 * mountinfo's \ooo escapes of blanks and backslashes; *p moves past it. */
static void field(const char **p, char *out, size_t size)
{
	const char *s = *p;
	size_t n = 0;

	while (*s && *s != ' ' && *s != '\n') {
		char c = *s++;

		if (c == '\\' && s[0] >= '0' && s[0] <= '3' && s[1] && s[2]) {
			c = (char)(((s[0] - '0') << 6) | ((s[1] - '0') << 3) | (s[2] - '0'));
			s += 3;
		}
		if (n + 1 < size)
			out[n++] = c;
	}
	out[n] = 0;
	*p = *s == ' ' ? s + 1 : s;
}

/* "ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER" */
static int parse_line(const char *line, struct mountinfo_entry *e)
{
	const char *p = line, *sep = strstr(line, " - ");
	char skip[2];

	if (!sep)
		return -1;
	for (int i = 0; i < 3; i++)
		field(&p, skip, sizeof(skip));
	field(&p, e->root, sizeof(e->root));
	field(&p, e->point, sizeof(e->point));
	p = sep + 3;
	field(&p, e->fstype, sizeof(e->fstype));
	field(&p, skip, sizeof(skip));
	field(&p, e->super, sizeof(e->super));
	return e->point[0] ? 0 : -1;
}

int mountinfo_each(int (*fn)(const struct mountinfo_entry *e, void *arg), void *arg)
{
	static const size_t line_max = 3 * PATH_MAX;
	struct mountinfo_entry e;
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char *line = f ? malloc(line_max) : NULL;
	int at_start = 1, rc = 0; /* line holds the start of a mountinfo line */

	while (line && !rc && fgets(line, (int)line_max, f)) {
		int start = at_start;

		/* The rest of a line longer than the buffer is no line of its own. */
		at_start = strchr(line, '\n') != NULL;
		if (start && parse_line(line, &e) == 0)
			rc = fn(&e, arg);
	}
	free(line);
	if (f)
		fclose(f);
	return rc;
}
