/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target over the answer to a multi-range GET (lib/remote/multipart.c):
 * what a hostile HTTP server sends back for a vector read. One input is
 *
 *   byte 0      the number of entries (1..8) and how the body is split
 *   4 per entry offset and length of the entry (16 bits each) in a 64 KiB file
 *   a line      the Content-Type value, up to '\n'
 *   the rest    the response body
 *
 * Each entry gets a buffer of exactly its length (ASan sees any byte written
 * past it). The body is fed whole, then in pieces of a size chosen by the input,
 * then a byte at a time: the parser must give the same verdict and the same
 * bytes every way (it streams), a failed feed must stay failed, and a finished
 * answer must have filled every entry. The Content-Type line is also given to
 * the single-range answers' Content-Range parser.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "remote/multipart.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FILE_SIZE (64u << 10)
#define MAX_ENTRIES 8

struct entries {
	struct cairn_bdev_iov v[MAX_ENTRIES];
	unsigned n;
};

/* Reads the entries from the input; 0 when it is too short for them. */
static int take_entries(const uint8_t **data, size_t *size, struct entries *e)
{
	const uint8_t *d = *data;

	e->n = (d[0] & 7u) + 1;
	if (*size < 1 + 4 * (size_t)e->n)
		return 0;
	for (unsigned i = 0; i < e->n; i++) {
		const uint8_t *p = d + 1 + 4 * i;
		uint64_t off = ((uint64_t)p[0] << 8 | p[1]) % FILE_SIZE;
		size_t len = ((size_t)p[2] << 8 | p[3]) % 4096 + 1;

		if (off + len > FILE_SIZE)
			off = FILE_SIZE - len;
		e->v[i] = (struct cairn_bdev_iov){ NULL, len, off };
	}
	*data = d + 1 + 4 * e->n;
	*size -= 1 + 4 * e->n;
	return 1;
}

/* One parse of body fed in pieces of `step` bytes (0: whole) into fresh buffers;
 * mp_feed's first failure or mp_finish. The buffers are left in e. */
static int parse(struct entries *e, const char *ctype, const uint8_t *body, size_t len,
		 size_t step)
{
	struct mp_parser p;
	int rc;

	for (unsigned i = 0; i < e->n; i++) {
		e->v[i].buf = malloc(e->v[i].len);
		if (!e->v[i].buf)
			abort();
		memset(e->v[i].buf, 0xee, e->v[i].len);
	}
	rc = mp_init(&p, ctype, e->v, e->n, FILE_SIZE);
	if (rc)
		return rc;
	for (size_t at = 0; at < len && !rc;) {
		size_t k = step && step < len - at ? step : len - at;

		rc = mp_feed(&p, body + at, k);
		at += k;
	}
	if (rc) {
		if (mp_feed(&p, body, len) != rc || mp_finish(&p) == 0)
			abort(); /* a bad body stays bad */
		return rc;
	}
	rc = mp_finish(&p);
	if (rc == 0 && p.parts != e->n)
		abort();
	return rc;
}

static void free_bufs(struct entries *e)
{
	for (unsigned i = 0; i < e->n; i++) {
		free(e->v[i].buf);
		e->v[i].buf = NULL;
	}
}

/* The Content-Type line read as a Content-Range header value too (the parser of
 * single-range answers): what it accepts holds together and prints back as the
 * same range. */
static void check_content_range(const char *s)
{
	struct content_range r, again;
	char text[80];

	if (content_range_parse(s, &r))
		return;
	if (r.first > r.last || (r.total_known && r.last >= r.total))
		abort();
	if (r.total_known)
		snprintf(text, sizeof(text), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, r.first,
			 r.last, r.total);
	else
		snprintf(text, sizeof(text), "bytes %" PRIu64 "-%" PRIu64 "/*", r.first, r.last);
	if (content_range_parse(text, &again) || again.first != r.first || again.last != r.last ||
	    again.total != r.total || again.total_known != r.total_known)
		abort();
}

static int same_bytes(const struct entries *a, const struct entries *b)
{
	for (unsigned i = 0; i < a->n; i++)
		if (memcmp(a->v[i].buf, b->v[i].buf, a->v[i].len))
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct entries whole, split;
	const uint8_t *nl;
	char *ctype;
	size_t step;
	int rc;

	if (size < 1)
		return 0;
	step = (data[0] >> 3) + 2;
	if (!take_entries(&data, &size, &whole))
		return 0;
	nl = memchr(data, '\n', size);
	if (!nl || nl - data > 256)
		return 0;
	ctype = strndup((const char *)data, (size_t)(nl - data));
	if (!ctype)
		abort();
	size -= (size_t)(nl - data) + 1;
	data = nl + 1;
	check_content_range(ctype);

	rc = parse(&whole, ctype, data, size, 0);
	for (size_t s = step; s; s = s == 1 ? 0 : 1) {
		split = whole;
		if (parse(&split, ctype, data, size, s) != rc ||
		    (rc == 0 && !same_bytes(&whole, &split)))
			abort(); /* the verdict or the bytes depend on the pieces */
		free_bufs(&split);
	}
	free_bufs(&whole);
	free(ctype);
	return 0;
}
