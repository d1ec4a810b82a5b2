/* SPDX-License-Identifier: MIT */
/*
 * Pure text parsers of mkfs: the manifest (docs/MANIFEST.md), the --order file,
 * pattern lists (--no-compress-from) and the --exclude matcher. No file system
 * access here, so all of them can be unit tested and fuzzed on memory buffers.
 */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cairn/mkfs.h>

static void seterr(char *err, size_t err_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !err_len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, err_len, fmt, ap);
	va_end(ap);
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Trim [*s, *e) of surrounding white space. */
static void trim(const char **s, const char **e)
{
	while (*s < *e && is_space(**s))
		(*s)++;
	while (*e > *s && is_space((*e)[-1]))
		(*e)--;
}

static int has_glob(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '*' || s[i] == '?' || s[i] == '[')
			return 1;
	return 0;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !memcmp(s + n - k, suffix, k);
}

/* Find the separator of an entry line: ": " (or ':' at the end) for a copy,
 * " -> " for a symlink, whichever comes first. Returns its start or NULL. */
static const char *find_sep(const char *s, const char *e, size_t *sep_len, int *is_link)
{
	for (const char *p = s; p < e; p++) {
		if (*p == ':' && (p + 1 == e || is_space(p[1]))) {
			*sep_len = 1;
			*is_link = 0;
			return p;
		}
		if (*p == '-' && p + 1 < e && p[1] == '>' && p > s && is_space(p[-1]) &&
		    (p + 2 == e || is_space(p[2]))) {
			*sep_len = 2;
			*is_link = 1;
			return p;
		}
	}
	return NULL;
}

/* Parse one non-blank, non-comment line [s, e) into e->*; buf holds the strings. */
static int parse_line(const char *s, const char *e, unsigned line, char *buf,
		      struct cairn_manifest_entry *ent, char *err, size_t err_len)
{
	size_t sep_len;
	int is_link;
	const char *sep = find_sep(s, e, &sep_len, &is_link);
	const char *gs = s, *ge, *hs, *he = e;

	if (!sep) {
		seterr(err, err_len, "line %u: expected '/guest: host' or '/guest -> target'", line);
		return -EINVAL;
	}
	ge = sep;
	hs = sep + sep_len;
	trim(&gs, &ge);
	trim(&hs, &he);
	if (gs == ge || *gs != '/') {
		seterr(err, err_len, "line %u: the in-image path must start with '/'", line);
		return -EINVAL;
	}
	if (hs == he) {
		seterr(err, err_len, "line %u: %s is empty", line,
		       is_link ? "the symlink target" : "the host path");
		return -EINVAL;
	}
	memcpy(buf, gs, (size_t)(ge - gs));
	buf[ge - gs] = '\0';
	char *host = buf + (ge - gs) + 1;
	memcpy(host, hs, (size_t)(he - hs));
	host[he - hs] = '\0';
	memset(ent, 0, sizeof(*ent));
	ent->line = line;
	ent->guest = buf;
	ent->host = host;
	if (is_link) {
		ent->kind = CAIRN_MANIFEST_SYMLINK;
		if (has_glob(buf, strlen(buf)) && strstr(buf, "**")) {
			seterr(err, err_len, "line %u: a symlink cannot use '**'", line);
			return -EINVAL;
		}
		return 0;
	}
	int g_tree = !strcmp(buf, "/**") || ends_with(buf, "/**");
	int h_tree = !strcmp(host, "**") || ends_with(host, "/**");
	if (g_tree != h_tree) {
		seterr(err, err_len, "line %u: '/**' must end both sides or neither", line);
		return -EINVAL;
	}
	if (g_tree) {
		buf[strlen(buf) - 3] = '\0';
		if (!buf[0])
			strcpy(buf, "/");
		size_t hl = strlen(host);
		if (hl == 2) {
			strcpy(host, ".");          /* a bare double star: the manifest's dir */
		} else {
			host[hl - 3] = '\0';        /* strip the slash and double star */
			if (!host[0])
				strcpy(host, "/");  /* it was the root */
		}
		if (has_glob(buf, strlen(buf)) || has_glob(host, strlen(host))) {
			seterr(err, err_len, "line %u: '**' may only end a path", line);
			return -EINVAL;
		}
		ent->kind = CAIRN_MANIFEST_TREE;
		return 0;
	}
	char *slash = strrchr(host, '/');
	char *last = slash ? slash + 1 : host;
	if (has_glob(host, (size_t)(last - host))) {
		seterr(err, err_len, "line %u: glob characters only in the last host component",
		       line);
		return -EINVAL;
	}
	int g_glob = ends_with(buf, "/*");
	if (has_glob(last, strlen(last))) {
		if (!g_glob) {
			seterr(err, err_len, "line %u: a host glob needs '/*' ending the in-image path",
			       line);
			return -EINVAL;
		}
		buf[strlen(buf) - 2] = '\0';
		if (!buf[0])
			strcpy(buf, "/");
		if (has_glob(buf, strlen(buf))) {
			seterr(err, err_len, "line %u: glob characters in the in-image directory", line);
			return -EINVAL;
		}
		/* Split host into directory and pattern: the pattern moves behind the
		 * directory's terminator inside buf (buf is large enough: 2 * line). */
		size_t pl = strlen(last);
		char *pat = host + strlen(host) + 1;
		memmove(pat, last, pl + 1);
		if (slash == host)
			strcpy(host, "/");
		else if (slash)
			*slash = '\0';
		else
			strcpy(host, ".");
		ent->pattern = pat;
		ent->kind = CAIRN_MANIFEST_GLOB;
		return 0;
	}
	if (g_glob || has_glob(buf, strlen(buf))) {
		seterr(err, err_len, "line %u: glob in the in-image path without a host glob", line);
		return -EINVAL;
	}
	ent->kind = CAIRN_MANIFEST_PATH;
	return 0;
}

int cairn_manifest_parse(const char *text, size_t len, cairn_manifest_cb cb, void *ctx,
			 char *err, size_t err_len)
{
	const char *p = text, *end = text + len;
	unsigned line = 0;
	char *buf = NULL;
	size_t cap = 0;
	int rc = 0;

	seterr(err, err_len, "%s", "");
	while (p < end && !rc) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *s = p, *e = nl ? nl : end;

		p = nl ? nl + 1 : end;
		line++;
		if (memchr(s, '\0', (size_t)(e - s))) {
			seterr(err, err_len, "line %u: NUL byte", line);
			rc = -EINVAL;
			break;
		}
		trim(&s, &e);
		if (s == e || *s == '#')
			continue;
		size_t need = 2 * (size_t)(e - s) + 8;
		if (need > cap) {
			char *nb = realloc(buf, need);
			if (!nb) {
				rc = -ENOMEM;
				break;
			}
			buf = nb;
			cap = need;
		}
		struct cairn_manifest_entry ent;
		rc = parse_line(s, e, line, buf, &ent, err, err_len);
		if (!rc)
			rc = cb(ctx, &ent);
	}
	free(buf);
	return rc;
}

/* Decimal [s, e) into *v; 0 when it is not one (empty, other bytes, overflow). */
static int parse_u64(const char *s, const char *e, uint64_t *v)
{
	if (s == e)
		return 0;
	for (*v = 0; s < e; s++) {
		if (*s < '0' || *s > '9' || *v > (UINT64_MAX - 9) / 10)
			return 0;
		*v = *v * 10 + (uint64_t)(*s - '0');
	}
	return 1;
}

/* If [s, *e) ends in " NUMBER NUMBER" after a path, cut them off into r (a
 * trace range record). */
static void strip_range(const char *s, const char **e, struct cairn_order_record *r)
{
	const char *p = *e, *t2, *t1;
	uint64_t off, len;

	for (t2 = p; t2 > s && !is_space(t2[-1]); t2--)
		;
	if (t2 == s || !parse_u64(t2, p, &len))
		return;
	p = t2;
	while (p > s && is_space(p[-1]))
		p--;
	for (t1 = p; t1 > s && !is_space(t1[-1]); t1--)
		;
	if (t1 == s || !parse_u64(t1, p, &off))
		return;
	p = t1;
	while (p > s && is_space(p[-1]))
		p--;
	if (p == s)
		return;
	*e = p;
	r->has_range = 1;
	r->offset = off;
	r->length = len;
}

static int is_octal(char c)
{
	return c >= '0' && c <= '7';
}

/* The escapes of docs/MANIFEST.md: \\, \n and \ooo; any other backslash is
 * itself. out has room for e - s + 1 bytes; returns the length. */
static size_t unescape(const char *s, const char *e, char *out)
{
	size_t n = 0;

	while (s < e) {
		if (*s == '\\' && e - s >= 2 && (s[1] == '\\' || s[1] == 'n')) {
			out[n++] = s[1] == 'n' ? '\n' : '\\';
			s += 2;
		} else if (*s == '\\' && e - s >= 4 && s[1] >= '0' && s[1] <= '3' &&
			   is_octal(s[2]) && is_octal(s[3])) {
			out[n++] = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			out[n++] = *s++;
		}
	}
	out[n] = '\0';
	return n;
}

/* The next line of [*p, end) that is neither blank nor a '#' comment, trimmed,
 * as [*s, *e); *line counts every line. 0 at the end of the text. */
static int next_line(const char **p, const char *end, const char **s, const char **e,
		     unsigned *line)
{
	while (*p < end) {
		const char *nl = memchr(*p, '\n', (size_t)(end - *p));

		*s = *p;
		*e = nl ? nl : end;
		*p = nl ? nl + 1 : end;
		(*line)++;
		trim(s, e);
		if (*s != *e && **s != '#')
			return 1;
	}
	return 0;
}

int cairn_order_parse(const char *text, size_t len, cairn_order_cb cb, void *ctx)
{
	const char *p = text, *end = text + len, *s, *e;
	char *buf = NULL;
	size_t cap = 0;
	unsigned line = 0;
	int rc = 0;

	while (!rc && next_line(&p, end, &s, &e, &line)) {
		struct cairn_order_record r;

		memset(&r, 0, sizeof(r));
		r.line = line;
		strip_range(s, &e, &r);
		if ((size_t)(e - s) + 1 > cap) {
			char *nb = realloc(buf, (size_t)(e - s) + 1);
			if (!nb) {
				rc = -ENOMEM;
				break;
			}
			buf = nb;
			cap = (size_t)(e - s) + 1;
		}
		r.path_len = unescape(s, e, buf);
		r.path = buf;
		rc = cb(ctx, &r);
	}
	free(buf);
	return rc;
}

int cairn_pattern_list_parse(const char *text, size_t len, cairn_pattern_cb cb, void *ctx)
{
	const char *p = text, *end = text + len, *s, *e;
	unsigned line = 0;
	int rc = 0;

	while (!rc && next_line(&p, end, &s, &e, &line))
		rc = cb(ctx, s, (size_t)(e - s), line);
	return rc;
}

int cairn_order_write_record(FILE *f, const char *path, uint64_t offset, uint64_t length)
{
	size_t n = strlen(path), plain = 0; /* path[plain..i) goes out as it is */

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)path[i];
		const char *esc = c == '\\' ? "\\\\" : c == '\n' ? "\\n" : NULL;
		int octal = c < 0x20 || c == 0x7f || (c == ' ' && (i == 0 || i == n - 1)) ||
			    (c == '#' && i == 0); /* or trimmed, or a comment, when read back */

		if (!esc && !octal)
			continue;
		/* Runs of plain bytes in one call: a profile is rewritten at every
		 * unmount that learns, and a locked fputc per byte cost the daemon a
		 * quarter of what hashing every byte it served did (perf of warm
		 * Java Hello runs, 5,600 records). */
		fwrite(path + plain, 1, i - plain, f);
		if (esc)
			fputs(esc, f);
		else
			fprintf(f, "\\%03o", c);
		plain = i + 1;
	}
	fwrite(path + plain, 1, n - plain, f);
	fprintf(f, " %" PRIu64 " %" PRIu64 "\n", offset, length);
	return ferror(f) ? -EIO : 0;
}

int cairn_mkfs_path_excluded(const char *path, const char *const *patterns, size_t n)
{
	const char *name = strrchr(path, '/');

	name = name ? name + 1 : path;
	for (size_t i = 0; i < n; i++) {
		const char *pat = patterns[i];

		if (!strchr(pat, '/')) {
			if (!fnmatch(pat, name, 0))
				return 1;
		} else if (pat[0] == '/') {
			if (!fnmatch(pat, path, 0))
				return 1;
		} else if (path[0] == '/' && !fnmatch(pat, path + 1, 0)) {
			return 1;
		}
	}
	return 0;
}
