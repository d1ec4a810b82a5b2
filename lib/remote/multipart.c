/* SPDX-License-Identifier: MIT */
/*
 * multipart/byteranges, streamed (multipart.h). A line state machine for the
 * delimiters and part headers, a counted copy for each part's bytes: the
 * Content-Range gives its length, so the body is never searched for the
 * boundary (which part bytes may contain).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "remote/multipart.h"

enum { PRE, HEADERS, DATA, AFTER, DONE, BAD };

/* The boundary parameter of a Content-Type value, quoted or not. */
static int boundary_of(const char *ct, char *out, size_t *len)
{
	const char *b = ct;
	size_t n = 0;

	while ((b = strcasestr(b, "boundary=")) && b != ct && b[-1] != ';' && b[-1] != ' ' &&
	       b[-1] != '\t')
		b++;
	if (!b)
		return -EIO;
	b += 9;
	if (*b == '"') {
		const char *e = strchr(++b, '"');

		if (!e)
			return -EIO;
		n = (size_t)(e - b);
	} else {
		n = strcspn(b, "; \t\r\n");
	}
	if (!n || n > MP_BOUNDARY_MAX)
		return -EIO;
	memcpy(out, "--", 2);
	memcpy(out + 2, b, n);
	out[n + 2] = '\0';
	*len = n + 2;
	return 0;
}

int mp_init(struct mp_parser *p, const char *content_type, const struct cairn_bdev_iov *v,
	    unsigned n, uint64_t size)
{
	size_t k = strlen("multipart/byteranges");

	if (!n || n > MP_MAX_RANGES)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	p->v = v;
	p->n = n;
	p->size = size;
	p->state = BAD;
	if (!content_type || strncasecmp(content_type, "multipart/byteranges", k) ||
	    (content_type[k] && content_type[k] != ';' && content_type[k] != ' '))
		return -ENOTSUP;
	if (boundary_of(content_type + k, p->delim, &p->delim_len))
		return -EIO;
	p->state = PRE;
	return 0;
}

/* "--boundary" (1), "--boundary--" (2), anything else (0); transport padding
 * (spaces, tabs) after it is allowed. */
static int delimiter(const struct mp_parser *p, const char *l, size_t n)
{
	while (n && (l[n - 1] == ' ' || l[n - 1] == '\t'))
		n--;
	if (n < p->delim_len || memcmp(l, p->delim, p->delim_len))
		return 0;
	if (n == p->delim_len)
		return 1;
	return n == p->delim_len + 2 && !memcmp(l + p->delim_len, "--", 2) ? 2 : 0;
}

/* The part's headers ended: its range must be an entry not yet filled. */
static int start_part(struct mp_parser *p)
{
	if (!p->have_range)
		return BAD;
	for (unsigned i = 0; i < p->n; i++)
		if (!p->done[i] && p->v[i].off == p->first &&
		    p->v[i].len == p->last - p->first + 1) {
			p->done[i] = 1;
			p->dst = p->v[i].buf;
			p->left = p->v[i].len;
			return DATA;
		}
	return BAD;
}

static int header_line(struct mp_parser *p, const char *l, size_t n)
{
	static const char cr[] = "content-range:";
	unsigned long long a, b, t;
	char tail;

	if (!n)
		return start_part(p);
	if (n > sizeof(cr) - 1 && !strncasecmp(l, cr, sizeof(cr) - 1)) {
		if (p->have_range ||
		    sscanf(l + sizeof(cr) - 1, " bytes %llu-%llu/%llu%c", &a, &b, &t, &tail) != 3 ||
		    a > b || t != p->size || b >= t)
			return BAD;
		p->have_range = 1;
		p->first = a;
		p->last = b;
	}
	return HEADERS;
}

/* One whole line (CR stripped, NUL-terminated) in the current state. */
static int on_line(struct mp_parser *p, const char *l, size_t n)
{
	int d = delimiter(p, l, n);

	switch (p->state) {
	case PRE:
		if (d == 1) {
			p->have_range = 0;
			return HEADERS;
		}
		p->preamble += n + 2;
		return d || p->preamble > MP_PREAMBLE_MAX ? BAD : PRE;
	case HEADERS:
		return header_line(p, l, n);
	case AFTER:
		if (!n)
			return AFTER; /* the CRLF that ends a part's bytes */
		p->have_range = 0;
		return d == 1 ? HEADERS : d == 2 ? DONE : BAD;
	default:
		return BAD;
	}
}

int mp_feed(struct mp_parser *p, const uint8_t *data, size_t len)
{
	while (len && p->state != BAD) {
		if (p->state == DONE)
			return 0; /* the epilogue: ignored */
		if (p->state == DATA) {
			size_t k = len < p->left ? len : p->left;

			memcpy(p->dst, data, k);
			p->dst += k;
			p->left -= k;
			data += k;
			len -= k;
			if (!p->left) {
				p->parts++;
				p->state = AFTER;
			}
			continue;
		}
		if (*data == '\n') {
			size_t n = p->line_len;

			if (n && p->line[n - 1] == '\r')
				n--;
			p->line[n] = '\0';
			p->line_len = 0;
			p->state = on_line(p, p->line, n);
		} else if (p->line_len + 1 >= sizeof(p->line)) {
			p->state = BAD;
		} else {
			p->line[p->line_len++] = (char)*data;
		}
		data++;
		len--;
	}
	return p->state == BAD ? -EIO : 0;
}

int mp_finish(const struct mp_parser *p)
{
	return p->state == DONE && p->parts == p->n ? 0 : -EIO;
}
