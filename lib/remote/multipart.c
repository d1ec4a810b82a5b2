/* SPDX-License-Identifier: MIT */
/*
 * multipart/byteranges, streamed (multipart.h). A line state machine for the
 * delimiters and part headers, a counted copy for each part's bytes: the
 * Content-Range gives its length, so the body is never searched for the
 * boundary (which part bytes may contain).
 */
#include <errno.h>
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

/* A run of decimal digits at *s into *v: 0, or -EIO when there is none or it
 * does not fit 64 bits. */
static int digits(const char **s, uint64_t *v)
{
	const char *p = *s;

	*v = 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (*v > (UINT64_MAX - d) / 10)
			return -EIO;
		*v = *v * 10 + d;
	}
	if (p == *s)
		return -EIO;
	*s = p;
	return 0;
}

static const char *skip_ows(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

int content_range_parse(const char *s, struct content_range *r)
{
	s = skip_ows(s);
	if (strncasecmp(s, "bytes", 5) || (s[5] != ' ' && s[5] != '\t'))
		return -EIO;
	s = skip_ows(s + 5);
	if (digits(&s, &r->first) || *s++ != '-' || digits(&s, &r->last) || *s++ != '/')
		return -EIO;
	r->total_known = *s != '*';
	r->total = 0;
	if (!r->total_known)
		s++;
	else if (digits(&s, &r->total))
		return -EIO;
	if (*skip_ows(s) || r->first > r->last || (r->total_known && r->last >= r->total))
		return -EIO;
	return 0;
}

static int header_line(struct mp_parser *p, const char *l, size_t n)
{
	static const char cr[] = "content-range:";
	struct content_range r;

	if (!n)
		return start_part(p);
	if (n > sizeof(cr) - 1 && !strncasecmp(l, cr, sizeof(cr) - 1)) {
		if (p->have_range || content_range_parse(l + sizeof(cr) - 1, &r) ||
		    !r.total_known || r.total != p->size)
			return BAD;
		p->have_range = 1;
		p->first = r.first;
		p->last = r.last;
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
