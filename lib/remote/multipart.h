/* SPDX-License-Identifier: MIT */
/*
 * The answer to a multi-range GET (RFC 9110 14.6, multipart/byteranges), parsed
 * as it streams in, straight into the buffers of the vector that asked.
 * Untrusted: a part is only written once its Content-Range names exactly one
 * entry not yet filled (the whole file size as its total), into that entry's
 * buffer and no further; a bad boundary, an unknown range, a short part or a
 * missing close delimiter is -EIO. Internal to lib/remote.
 */
#ifndef CAIRN_REMOTE_MULTIPART_H
#define CAIRN_REMOTE_MULTIPART_H

#include <stddef.h>
#include <stdint.h>
#include <cairn/bdev.h>

#define MP_MAX_RANGES 64   /* entries per request (one Range header) */
#define MP_BOUNDARY_MAX 70 /* RFC 2046 */
#define MP_LINE_MAX 512    /* a delimiter or part header line */
#define MP_PREAMBLE_MAX 4096

struct mp_parser {
	const struct cairn_bdev_iov *v;
	unsigned n, parts;           /* entries, parts filled */
	uint64_t size;               /* of the file: every part's total */
	char delim[MP_BOUNDARY_MAX + 3]; /* "--" boundary */
	size_t delim_len, preamble;
	int state;
	char line[MP_LINE_MAX];
	size_t line_len;
	int have_range;
	uint64_t first, last;        /* the current part's Content-Range */
	uint8_t *dst;
	size_t left;
	unsigned char done[MP_MAX_RANGES];
};

/* A Content-Range value (RFC 9110 14.4): "bytes FIRST-LAST/TOTAL" or, total
 * unknown, "bytes FIRST-LAST/" and a star (then total_known is 0). */
struct content_range {
	uint64_t first, last, total;
	int total_known;
};

/* Parses a Content-Range value, spaces and tabs around it allowed. Strict, as it
 * comes from an untrusted server: decimal digits only (no sign, no overflow past
 * 2^64-1), FIRST <= LAST, LAST < TOTAL, nothing after it. 0, or -EIO. */
int content_range_parse(const char *s, struct content_range *r);

/* Starts a parser for the entries v[0..n) (n <= MP_MAX_RANGES) of a file of
 * `size` bytes, from the response's Content-Type value. -ENOTSUP when it is not
 * multipart/byteranges (a server that answered one range or the whole file),
 * -EIO when its boundary is missing or malformed, -EINVAL for n out of range. */
int mp_init(struct mp_parser *p, const char *content_type, const struct cairn_bdev_iov *v,
	    unsigned n, uint64_t size);
/* Feeds body bytes. 0, or -EIO once the body is found bad (then stays so). */
int mp_feed(struct mp_parser *p, const uint8_t *data, size_t len);
/* After the last byte: 0 when every entry was filled and the close delimiter
 * seen, else -EIO. */
int mp_finish(const struct mp_parser *p);

#endif
