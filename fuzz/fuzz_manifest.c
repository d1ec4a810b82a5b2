/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target over the pure text parsers of mkfs: the manifest parser
 * (docs/MANIFEST.md) and the --order file parser, on the input bytes as they
 * are (not NUL-terminated: the parsers take a length). Neither touches the file
 * system. Checked besides memory safety: every entry's strings are
 * NUL-terminated and of a sane kind, line numbers never go backwards, a
 * callback's nonzero return stops the parse and is passed back, and a syntax
 * error comes with a message.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cairn/mkfs.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct mctx {
	unsigned entries, last_line, stop_at;
};

static void check_str(const char *s, size_t max)
{
	if (!s || strnlen(s, max + 1) > max)
		abort();
}

static int manifest_cb(void *ctx, const struct cairn_manifest_entry *e)
{
	struct mctx *m = ctx;

	if (e->kind != CAIRN_MANIFEST_PATH && e->kind != CAIRN_MANIFEST_TREE &&
	    e->kind != CAIRN_MANIFEST_GLOB && e->kind != CAIRN_MANIFEST_SYMLINK)
		abort();
	if (e->line < m->last_line || e->line == 0)
		abort();
	m->last_line = e->line;
	/* Nothing the parser hands out can be longer than the text it came from. */
	check_str(e->guest, 1u << 24);
	check_str(e->host, 1u << 24);
	if (e->kind == CAIRN_MANIFEST_GLOB)
		check_str(e->pattern, 1u << 24);
	else if (e->pattern)
		abort();
	if (++m->entries == m->stop_at)
		return 7;
	return 0;
}

static int order_cb(void *ctx, const struct cairn_order_record *r)
{
	struct mctx *m = ctx;

	if (!r->path || r->line == 0 || r->line < m->last_line || r->path[r->path_len])
		abort();
	m->last_line = r->line;
	if (r->path_len)
		(void)((const volatile char *)r->path)[r->path_len - 1]; /* ASan checks the range */
	if (++m->entries == m->stop_at)
		return 9;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly `size` bytes, so ASan catches a read past the end. */
	char *text = malloc(size ? size : 1);
	char err[256];
	struct mctx m = { 0 };
	int rc;

	if (!text)
		return 0;
	memcpy(text, data, size);

	err[0] = '\0';
	rc = cairn_manifest_parse(text, size, manifest_cb, &m, err, sizeof(err));
	if (rc == -EINVAL && !err[0])
		abort(); /* a failure must say why */
	if (m.entries >= 2) {
		struct mctx s = { .stop_at = 2 };

		rc = cairn_manifest_parse(text, size, manifest_cb, &s, err, sizeof(err));
		if (rc != 7)
			abort();
	}
	(void)cairn_manifest_parse(text, size, manifest_cb, &(struct mctx){ 0 }, err, 1);

	memset(&m, 0, sizeof(m));
	rc = cairn_order_parse(text, size, order_cb, &m);
	if (m.entries >= 2) {
		struct mctx s = { .stop_at = 2 };

		if (cairn_order_parse(text, size, order_cb, &s) != 9)
			abort();
	}
	free(text);
	return 0;
}
