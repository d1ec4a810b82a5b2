/* SPDX-License-Identifier: MIT */
/*
 * http bdev: an image on an HTTP(S) server, read with range requests through
 * libcurl's easy interface.
 *
 * Connections: a pool of `connections` easy handles. A read takes a free one
 * (waiting for one up to its deadline), so parallel reads (the segment cache's
 * readahead workers) go out on separate kept-alive connections, HTTP/2 where
 * TLS offers it.
 *
 * Consistency: the first request (bytes 0..head_bytes) learns the size and the
 * validator (ETag, else Last-Modified). Every later response must carry the
 * same validator and a Content-Range with the same total, or the read fails
 * with EIO and nothing it received is returned. A mirror has its own validator
 * (servers make their own ETags), learned on its first response, and is only
 * used if its first head_bytes equal the primary's.
 *
 * Failure: an attempt that fails (connection refused or reset, 5xx, 408, 429,
 * a short body, a timeout) is retried with a doubling backoff on the next
 * origin, until `retries` or the read's deadline runs out. Every attempt's
 * curl timeout is what is left of that deadline, so a read never outlives it.
 *
 * Vectors (readv): one GET with `Range: bytes=a-b,c-d,...` (up to MP_MAX_RANGES
 * entries, in the order given) answered with multipart/byteranges, parsed into
 * the entries' buffers as it arrives (multipart.c). A server that answers such
 * a request with the whole file (200) or a single range is remembered: from
 * then on this device sends a vector as separate range requests, in parallel
 * over its connections (as S3, which takes one range per GET, always is), and
 * says so (readv_one), so the cache plans merged runs instead. The first
 * readv_one asks the server with a 2-byte multi-range GET when no vector has
 * told yet (one request, before a prefetch is planned). A
 * multipart answer that does not match what was asked fails the vector (EIO);
 * a transport failure or a 5xx sends it again as separate requests, which
 * retry and fail over as reads do.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <dlfcn.h>
/* Calls go through the table below, not the functions the header declares
 * (whose type-checking macros would wrap them). */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <cairn/version.h>
#include <cairn/remote.h>
#include "remote/multipart.h"
#include "bdev/errslot.h"
#include "util/thread.h"

#define NSEC 1000000000ull
#define MS   1000000ull
#define MAX_CONNECTIONS 64u
#define VALIDATOR_MAX 256
#define BACKOFF_CAP (2 * NSEC)

struct origin {
	char *url, *sigv4, *userpwd, *token_hdr;
	struct curl_slist *headers;  /* x-amz-* for S3, NULL otherwise */
	char validator[VALIDATOR_MAX];
	int known;                   /* validator learned and head checked */
};

struct conn {
	CURL *h;
	int busy;
};

struct http_bdev {
	struct cairn_bdev base;
	struct origin origins[CAIRN_HTTP_MAX_ORIGINS];
	unsigned n_origins;
	struct conn *conns;
	unsigned n_conns;
	pthread_mutex_t lock;        /* conns[].busy, origins[].known/validator */
	pthread_cond_t freed;        /* CLOCK_MONOTONIC */
	uint64_t timeout_ns, connect_ns, backoff_ns, low_speed_bps, low_speed_s;
	unsigned retries;
	char *proxy, *cacert;
	int insecure, http1;
	uint8_t *head;               /* the first head_len bytes of the image */
	size_t head_len;
	atomic_uint cur;             /* origin in use */
	atomic_uint_fast64_t requests, bytes, n_retries, failovers, timeouts, changed, failed;
	atomic_long http_version;
	atomic_int ranges;           /* how the server answers multi-range GETs: RANGES_* */
	struct errslot err;          /* named by the primary URL */
};

/* What one attempt saw. */
struct xfer {
	uint8_t *buf;
	size_t len, got;
	int status;                  /* of the last (final) response */
	int have_range;
	uint64_t r_first, r_last, r_total;
	int total_known;             /* r_total is not '*' */
	char etag[VALIDATOR_MAX], lastmod[VALIDATOR_MAX];
	int whole;                   /* 200 with the whole file: take the first len bytes */
	int filled;                  /* stopped on purpose once buf was full */
	/* A multi-range GET: the body goes to mp, set up from the Content-Type. */
	const struct cairn_bdev_iov *v;
	unsigned n;
	uint64_t size;
	struct mp_parser *mp;
	int mp_rc;                   /* mp_init's or mp_feed's failure, 1 before the body */
	char ctype[VALIDATOR_MAX];
};

enum outcome { OK, RETRY, NEXT_ORIGIN, FATAL };
enum { RANGES_UNKNOWN, RANGES_MULTI, RANGES_SINGLE };

/*
 * libcurl is opened on first use (dlopen), not linked. Linked, it loads GnuTLS,
 * Kerberos, LDAP, libssh2, nghttp2 and more with it, whose relocations and load
 * time constructors (GnuTLS initialises itself) left 3.3 MiB resident in every
 * process, a daemon serving a local image too (docs/bench/million.md, "A lean
 * daemon"). Like curl_global_init(), which it runs, this is once per process,
 * so the table is the one piece of process-wide state here, written once under
 * pthread_once and read-only after.
 */
#define LIBCURL_SONAME "libcurl.so.4"
static struct {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *h);
	CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *h);
	const char *(*easy_strerror)(CURLcode rc);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
} lc;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;
static char curl_init_why[256];

#define LC_LOAD(f, name) \
	(ok = ok && (lc.f = (__typeof__(lc.f))dlsym(lib, name)) != NULL)

static void curl_init(void)
{
	void *lib = dlopen(LIBCURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	int ok = lib != NULL;

	LC_LOAD(global_init, "curl_global_init");
	LC_LOAD(easy_init, "curl_easy_init");
	LC_LOAD(easy_setopt, "curl_easy_setopt");
	LC_LOAD(easy_perform, "curl_easy_perform");
	LC_LOAD(easy_getinfo, "curl_easy_getinfo");
	LC_LOAD(easy_cleanup, "curl_easy_cleanup");
	LC_LOAD(easy_strerror, "curl_easy_strerror");
	LC_LOAD(slist_append, "curl_slist_append");
	LC_LOAD(slist_free_all, "curl_slist_free_all");
	if (!ok) {
		const char *e = dlerror();

		snprintf(curl_init_why, sizeof(curl_init_why), ": %s", e ? e : LIBCURL_SONAME);
		curl_init_rc = CURLE_FAILED_INIT;
		return; /* the library stays loaded, as it would if linked */
	}
	curl_init_rc = lc.global_init(CURL_GLOBAL_DEFAULT);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
}

static struct timespec abs_ts(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / NSEC), .tv_nsec = (long)(ns % NSEC) };

	return ts;
}

int cairn_url_is_remote(const char *path)
{
	return path && (!strncasecmp(path, "http://", 7) || !strncasecmp(path, "https://", 8) ||
			!strncasecmp(path, "s3://", 5));
}

/* ---- one response ---- */

/* Header value with the name's case ignored, trailing CR/LF/space stripped. */
static int header_value(const char *line, size_t n, const char *name, char *out, size_t out_len)
{
	size_t k = strlen(name);

	if (n <= k || strncasecmp(line, name, k) || line[k] != ':')
		return 0;
	line += k + 1;
	n -= k + 1;
	while (n && (*line == ' ' || *line == '\t'))
		line++, n--;
	while (n && (line[n - 1] == '\r' || line[n - 1] == '\n' || line[n - 1] == ' '))
		n--;
	if (n >= out_len)
		n = out_len - 1;
	memcpy(out, line, n);
	out[n] = '\0';
	return 1;
}

/* The code of a status line "HTTP/V NNN reason", read within its n bytes (curl's
 * header lines are not NUL-terminated, and atoi would overflow on a long run of
 * digits); 0, which no check accepts, when it is not three digits. */
static int status_of(const char *line, size_t n)
{
	const char *sp = memchr(line, ' ', n);
	const char *end = line + n;
	int code = 0;

	if (!sp || end - sp < 4)
		return 0;
	for (int i = 1; i <= 3; i++) {
		if (sp[i] < '0' || sp[i] > '9')
			return 0;
		code = code * 10 + (sp[i] - '0');
	}
	return end - sp == 4 || sp[4] == ' ' || sp[4] == '\r' || sp[4] == '\n' ? code : 0;
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *ctx)
{
	struct xfer *x = ctx;
	size_t n = size * nmemb;
	char v[VALIDATOR_MAX];

	if (n > 5 && !strncmp(line, "HTTP/", 5)) {
		/* A new response (after a redirect or a 100): forget the last one's. */
		x->status = status_of(line, n);
		x->have_range = x->total_known = 0;
		x->etag[0] = x->lastmod[0] = x->ctype[0] = '\0';
		return n;
	}
	if (header_value(line, n, "ETag", x->etag, sizeof(x->etag)) ||
	    header_value(line, n, "Content-Type", x->ctype, sizeof(x->ctype)) ||
	    header_value(line, n, "Last-Modified", x->lastmod, sizeof(x->lastmod)))
		return n;
	if (header_value(line, n, "Content-Range", v, sizeof(v))) {
		struct content_range r;

		if (content_range_parse(v, &r))
			return n; /* unparsable: have_range stays 0, the attempt fails */
		x->have_range = 1;
		x->total_known = r.total_known;
		x->r_total = r.total;
		x->r_first = r.first;
		x->r_last = r.last;
	}
	return n;
}

/* Body bytes land straight in the caller's buffer; anything beyond it stops the
 * transfer (a 200 for the whole file, or a server sending more than asked). */
/* The body of a multi-range answer: parsed into the vector's buffers. Anything
 * but a multipart 206 stops the transfer at once (a 200 would be the whole
 * image), as does a body found bad. */
static size_t on_multi_body(struct xfer *x, const uint8_t *data, size_t n)
{
	if (x->status != 206 && x->status != 200)
		return n; /* an error page: read and dropped, the status decides */
	if (x->mp_rc == 1)
		x->mp_rc = x->status == 206 ? mp_init(x->mp, x->ctype, x->v, x->n, x->size)
			   : -ENOTSUP;
	if (!x->mp_rc)
		x->mp_rc = mp_feed(x->mp, data, n);
	if (x->mp_rc)
		return 0;
	x->got += n;
	return n;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct xfer *x = ctx;
	size_t n = size * nmemb, room = x->len - x->got;

	if (x->mp)
		return on_multi_body(x, (const uint8_t *)data, n);
	if (x->status != 206 && !(x->status == 200 && x->whole))
		return n; /* an error page: read and dropped, the status decides */
	if (n > room) {
		memcpy(x->buf + x->got, data, room);
		x->got = x->len;
		x->filled = 1;
		return 0; /* CURLE_WRITE_ERROR, on purpose */
	}
	memcpy(x->buf + x->got, data, n);
	x->got += n;
	return n;
}

/* ---- connections ---- */

static struct conn *conn_get(struct http_bdev *h, uint64_t deadline)
{
	struct timespec ts = abs_ts(deadline);
	struct conn *c = NULL;

	pthread_mutex_lock(&h->lock);
	for (;;) {
		for (unsigned i = 0; i < h->n_conns && !c; i++)
			if (!h->conns[i].busy)
				c = &h->conns[i];
		if (c || pthread_cond_timedwait(&h->freed, &h->lock, &ts) == ETIMEDOUT)
			break;
	}
	if (c)
		c->busy = 1;
	pthread_mutex_unlock(&h->lock);
	return c;
}

static void conn_put(struct http_bdev *h, struct conn *c)
{
	pthread_mutex_lock(&h->lock);
	c->busy = 0;
	pthread_cond_signal(&h->freed);
	pthread_mutex_unlock(&h->lock);
}

/* Options every request shares; set once per handle. */
static int conn_setup(struct http_bdev *h, CURL *e)
{
	int bad = 0;

	bad |= lc.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	bad |= lc.easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
	bad |= lc.easy_setopt(e, CURLOPT_MAXREDIRS, 10L);
	bad |= lc.easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	bad |= lc.easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	bad |= lc.easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	bad |= lc.easy_setopt(e, CURLOPT_USERAGENT, "cairn/" CAIRN_VERSION_STRING);
	bad |= lc.easy_setopt(e, CURLOPT_HTTP_VERSION,
				h->http1 ? CURL_HTTP_VERSION_1_1 : CURL_HTTP_VERSION_2TLS);
	bad |= lc.easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, (long)h->low_speed_bps);
	bad |= lc.easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)h->low_speed_s);
	bad |= lc.easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	bad |= lc.easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	if (h->proxy)
		bad |= lc.easy_setopt(e, CURLOPT_PROXY, h->proxy);
	if (h->insecure) {
		bad |= lc.easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		bad |= lc.easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (h->cacert)
		bad |= lc.easy_setopt(e, CURLOPT_CAINFO, h->cacert);
	return bad ? -EINVAL : 0;
}

/* ---- one attempt ---- */

/* Sends GET with Range: bytes=`range` to origin o, within deadline. */
static CURLcode attempt_ranges(struct http_bdev *h, CURL *e, const struct origin *o,
			       struct xfer *x, const char *range, uint64_t deadline, char *err)
{
	uint64_t now = now_ns(), left = deadline > now ? deadline - now : 0;
	long left_ms = (long)(left / MS) ? (long)(left / MS) : 1;
	long conn_ms = (long)(h->connect_ns / MS) < left_ms ? (long)(h->connect_ns / MS) : left_ms;
	CURLcode rc;

	lc.easy_setopt(e, CURLOPT_URL, o->url);
	lc.easy_setopt(e, CURLOPT_RANGE, range);
	lc.easy_setopt(e, CURLOPT_HEADERDATA, x);
	lc.easy_setopt(e, CURLOPT_WRITEDATA, x);
	lc.easy_setopt(e, CURLOPT_TIMEOUT_MS, left_ms);
	lc.easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, conn_ms ? conn_ms : 1L);
	lc.easy_setopt(e, CURLOPT_ERRORBUFFER, err);
	lc.easy_setopt(e, CURLOPT_AWS_SIGV4, o->sigv4);
	lc.easy_setopt(e, CURLOPT_USERPWD, o->userpwd);
	lc.easy_setopt(e, CURLOPT_HTTPHEADER, o->headers);
	err[0] = '\0';
	atomic_fetch_add(&h->requests, 1);
	rc = lc.easy_perform(e);
	atomic_fetch_add(&h->bytes, x->got);
	if (rc == CURLE_WRITE_ERROR && x->filled)
		rc = CURLE_OK;
	if (rc == CURLE_OK) {
		long v = 0;

		lc.easy_getinfo(e, CURLINFO_HTTP_VERSION, &v);
		atomic_store(&h->http_version, v == CURL_HTTP_VERSION_2_0 ? 2 : v == CURL_HTTP_VERSION_3 ? 3 : 11);
	}
	return rc;
}

/* Sends GET with Range: bytes=off..off+len-1 to origin o, within deadline. */
static CURLcode attempt(struct http_bdev *h, CURL *e, const struct origin *o, struct xfer *x,
			uint64_t off, uint64_t deadline, char *err)
{
	char range[64];

	snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, off, off + x->len - 1);
	return attempt_ranges(h, e, o, x, range, deadline, err);
}

static enum outcome transport_outcome(struct http_bdev *h, CURLcode rc)
{
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		atomic_fetch_add(&h->timeouts, 1);
		return RETRY;
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
	case CURLE_TOO_MANY_REDIRECTS:
		return NEXT_ORIGIN; /* the same again would fail the same way */
	default:
		return RETRY;       /* refused, reset, DNS, short body, ... */
	}
}

static const char *validator_of(const struct xfer *x)
{
	return x->etag[0] ? x->etag : x->lastmod;
}

/* Is this a whole, consistent answer for [off, off+len) of the image we opened? */
static enum outcome judge(struct http_bdev *h, const struct origin *o, const struct xfer *x,
			  uint64_t off, char *why, size_t why_len)
{
	if (x->status == 416 || x->status == 200) {
		snprintf(why, why_len, x->status == 416 ? "range not satisfiable (image shrank?)"
			 : "server ignores range requests");
		atomic_fetch_add(&h->changed, x->status == 416);
		return FATAL;
	}
	if (x->status >= 500 || x->status == 408 || x->status == 429) {
		snprintf(why, why_len, "HTTP %d", x->status);
		return RETRY;
	}
	if (x->status != 206) {
		snprintf(why, why_len, "HTTP %d", x->status);
		return NEXT_ORIGIN;
	}
	if ((x->total_known && x->r_total != h->base.size) || strcmp(validator_of(x), o->validator)) {
		snprintf(why, why_len, "the image changed on the server (%s)",
			 x->total_known && x->r_total != h->base.size ? "size" : "validator");
		atomic_fetch_add(&h->changed, 1);
		return FATAL;
	}
	if (!x->have_range || x->r_first != off || x->r_last != off + x->len - 1) {
		snprintf(why, why_len, "bad Content-Range for bytes %" PRIu64 "+%zu", off, x->len);
		return RETRY;
	}
	if (x->got != x->len) {
		snprintf(why, why_len, "short body: %zu of %zu bytes", x->got, x->len);
		return RETRY;
	}
	return OK;
}

/* Is x the answer to the first request: the file's first min(size, len) bytes?
 * Sets *size. A server that ignores ranges is fine for a file within the head. */
static enum outcome judge_head(const struct xfer *x, uint64_t *size, char *why, size_t why_len)
{
	if (x->status >= 500 || x->status == 408 || x->status == 429) {
		snprintf(why, why_len, "HTTP %d", x->status);
		return RETRY;
	}
	if (x->status == 200 && x->filled) {
		snprintf(why, why_len, "the server ignores range requests");
		return FATAL;
	}
	if (x->status == 200) {
		*size = x->got; /* curl checked the body against Content-Length */
		return OK;
	}
	if (x->status == 416) {
		snprintf(why, why_len, "empty file (range not satisfiable)");
		return FATAL;
	}
	if (x->status != 206) {
		snprintf(why, why_len, "HTTP %d", x->status);
		return FATAL;
	}
	if (!x->have_range || !x->total_known || x->r_first != 0 ||
	    x->r_last + 1 != (x->r_total < x->len ? x->r_total : x->len)) {
		snprintf(why, why_len, "bad Content-Range in the answer to bytes 0-%zu", x->len - 1);
		return FATAL;
	}
	if (x->got != x->r_last + 1) {
		snprintf(why, why_len, "short body: %zu of %" PRIu64 " bytes", x->got, x->r_last + 1);
		return RETRY;
	}
	*size = x->r_total;
	return OK;
}

/* ---- reads ---- */

/* First use of a mirror: its head must equal the primary's before any byte of
 * it is trusted; its validator is learned from that response. */
static enum outcome check_mirror(struct http_bdev *h, CURL *e, struct origin *o,
				 uint64_t deadline, char *err, char *why, size_t why_len)
{
	uint8_t *tmp = malloc(h->head_len);
	struct xfer x = { .buf = tmp, .len = h->head_len, .whole = 1 };
	enum outcome r;
	CURLcode rc;

	if (!tmp)
		return FATAL;
	rc = attempt(h, e, o, &x, 0, deadline, err);
	if (rc != CURLE_OK) {
		snprintf(why, why_len, "%s", err[0] ? err : lc.easy_strerror(rc));
		r = transport_outcome(h, rc);
	} else {
		uint64_t size = 0;

		r = judge_head(&x, &size, why, why_len);
		if (r == FATAL)
			r = NEXT_ORIGIN;
		if (r == OK && (size != h->base.size || x.got != h->head_len ||
				memcmp(tmp, h->head, h->head_len))) {
			snprintf(why, why_len, "the mirror holds a different image");
			r = NEXT_ORIGIN;
		}
	}
	if (r == OK) {
		/* Another thread may have checked it meanwhile: its result stands, as
		 * readers use the validator without the lock once known is set. */
		pthread_mutex_lock(&h->lock);
		if (!o->known) {
			snprintf(o->validator, sizeof(o->validator), "%s", validator_of(&x));
			o->known = 1;
		}
		pthread_mutex_unlock(&h->lock);
	}
	free(tmp);
	return r;
}

static int origin_known(struct http_bdev *h, struct origin *o)
{
	int k;

	pthread_mutex_lock(&h->lock);
	k = o->known;
	pthread_mutex_unlock(&h->lock);
	return k;
}

/* Sleep before the next attempt, never past the deadline. Returns 0 when the
 * deadline leaves no time for another attempt. */
static int backoff(struct http_bdev *h, unsigned n, uint64_t deadline)
{
	uint64_t d = h->backoff_ns, now = now_ns();
	struct timespec ts;

	for (unsigned i = 1; i < n && d < BACKOFF_CAP; i++)
		d *= 2; /* retry n waits backoff * 2^(n-1) */
	if (d > BACKOFF_CAP)
		d = BACKOFF_CAP;
	if (now + d >= deadline)
		return 0;
	ts = abs_ts(now + d);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	return 1;
}

/* Move to the next origin after `from` failed (another thread may have moved
 * on already; then its choice stands). */
static void fail_over(struct http_bdev *h, unsigned from)
{
	unsigned to = (from + 1) % h->n_origins;

	if (h->n_origins > 1 && atomic_compare_exchange_strong(&h->cur, &from, to))
		atomic_fetch_add(&h->failovers, 1);
}

/* "URL: why" when there are mirrors, so the record says which one said it. */
static void prefix_origin(char *why, size_t len, const char *url)
{
	char tmp[320];

	snprintf(tmp, sizeof(tmp), "%s", why);
	if (snprintf(why, len, "%s: %s", url, tmp) < 0)
		why[0] = '\0';
}

/* The failure of a read as a person wants it: the last attempt's cause and
 * how many retries there were, or that the deadline ran out (or left no time
 * for the next). */
static void record_failure(struct http_bdev *h, uint64_t off, size_t len, const char *why,
			   unsigned tries, int timed_out)
{
	const char *cause = why[0] ? why : "failed";
	unsigned n = tries > h->retries ? h->retries : tries;
	const char *plural = n == 1 ? "y" : "ies";

	if (timed_out)
		errslot_set(&h->err, -EIO, off, len, "%s (timed out after %" PRIu64 " ms, %u "
			    "retr%s)", cause, (uint64_t)(h->timeout_ns / MS), n, plural);
	else if (n)
		errslot_set(&h->err, -EIO, off, len, "%s (after %u retr%s)", cause, n, plural);
	else
		errslot_set(&h->err, -EIO, off, len, "%s", cause);
}

static ssize_t http_read(struct cairn_bdev *dev, void *buf, size_t len, uint64_t off)
{
	struct http_bdev *h = (struct http_bdev *)dev;
	uint64_t deadline = now_ns() + h->timeout_ns;
	char err[CURL_ERROR_SIZE], why[320];
	struct conn *c;
	enum outcome r = RETRY;
	unsigned tries = 0;
	int timed_out = 0;

	if (off + len <= h->head_len) {
		memcpy(buf, h->head + off, len);
		return (ssize_t)len;
	}
	c = conn_get(h, deadline);
	if (!c) {
		atomic_fetch_add(&h->timeouts, 1);
		atomic_fetch_add(&h->failed, 1);
		errslot_set(&h->err, -EIO, off, len, "no free connection of %u within the timeout "
			    "of %" PRIu64 " ms", h->n_conns, (uint64_t)(h->timeout_ns / MS));
		return -EIO;
	}
	why[0] = '\0';
	for (;;) {
		unsigned oi = atomic_load(&h->cur);
		struct origin *o = &h->origins[oi];
		struct xfer x = { .buf = buf, .len = len };
		CURLcode rc;

		r = origin_known(h, o) ? OK : check_mirror(h, c->h, o, deadline, err, why,
							   sizeof(why));
		if (r == OK) {
			rc = attempt(h, c->h, o, &x, off, deadline, err);
			if (rc != CURLE_OK) {
				r = transport_outcome(h, rc);
				snprintf(why, sizeof(why), "%s", err[0] ? err : lc.easy_strerror(rc));
			} else {
				r = judge(h, o, &x, off, why, sizeof(why));
			}
		}
		if (r != OK && h->n_origins > 1)
			prefix_origin(why, sizeof(why), o->url);
		if (r == OK || r == FATAL || (r == NEXT_ORIGIN && h->n_origins == 1))
			break;
		if (now_ns() >= deadline) {
			atomic_fetch_add(&h->timeouts, 1);
			timed_out = 1;
			break;
		}
		if (++tries > h->retries)
			break;
		atomic_fetch_add(&h->n_retries, 1);
		fail_over(h, oi);
		/* A fresh origin is tried at once; the same one again after a pause. */
		if ((h->n_origins == 1 || tries % h->n_origins == 0) && !backoff(h, tries, deadline)) {
			atomic_fetch_add(&h->timeouts, 1);
			timed_out = 1;
			break;
		}
	}
	conn_put(h, c);
	if (r != OK) {
		atomic_fetch_add(&h->failed, 1);
		record_failure(h, off, len, why, tries, timed_out);
		return -EIO;
	}
	return (ssize_t)len;
}

/* ---- vectors ---- */

/* Separate range requests for v[0..n), in parallel over the connections: the
 * caller's thread and up to connections - 1 helpers take entries in order. */
struct singles {
	struct http_bdev *h;
	const struct cairn_bdev_iov *v;
	unsigned n;
	atomic_uint next;
	atomic_int rc;
};

static void *singles_worker(void *arg)
{
	struct singles *s = arg;

	for (unsigned i; (i = atomic_fetch_add(&s->next, 1)) < s->n && !atomic_load(&s->rc);) {
		ssize_t got = http_read(&s->h->base, s->v[i].buf, s->v[i].len, s->v[i].off);

		if (got < 0 || (size_t)got != s->v[i].len) {
			int zero = 0;

			atomic_compare_exchange_strong(&s->rc, &zero, got < 0 ? (int)got : -EIO);
		}
	}
	return NULL;
}

static int read_singles(struct http_bdev *h, const struct cairn_bdev_iov *v, unsigned n)
{
	struct singles s = { .h = h, .v = v, .n = n };
	pthread_t th[MAX_CONNECTIONS];
	unsigned helpers = (n < h->n_conns ? n : h->n_conns) - 1, started = 0;

	while (started < helpers && !util_thread_create(&th[started], singles_worker, &s))
		started++; /* fewer helpers when threads run out: slower, still right */
	singles_worker(&s);
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	return atomic_load(&s.rc);
}

/* "a-b,c-d,..." for v[0..n); malloc'd, NULL when out of memory. */
static char *range_list(const struct cairn_bdev_iov *v, unsigned n)
{
	char *s = malloc((size_t)n * 44 + 1), *p = s;

	for (unsigned i = 0; s && i < n; i++)
		p += sprintf(p, "%s%" PRIu64 "-%" PRIu64, i ? "," : "", v[i].off,
			     v[i].off + v[i].len - 1);
	return s;
}

/* -EIO, recorded over the span of v[0..n). */
static int vector_failed(struct http_bdev *h, const struct cairn_bdev_iov *v, unsigned n,
			 const char *cause)
{
	uint64_t lo = UINT64_MAX, hi = 0;

	for (unsigned i = 0; i < n; i++) {
		lo = v[i].off < lo ? v[i].off : lo;
		hi = v[i].off + v[i].len > hi ? v[i].off + v[i].len : hi;
	}
	errslot_set(&h->err, -EIO, lo, hi - lo, "%s (%u ranges)", cause, n);
	return -EIO;
}

/* One multi-range GET for v[0..n) (2 <= n <= MP_MAX_RANGES, none empty or in
 * the head). 0; -ENOTSUP when the server does not answer with multipart
 * (remembered by the caller); -EAGAIN when the attempt failed in a way
 * separate requests may get past (transport, 5xx, an unchecked mirror); -EIO
 * when the answer is wrong (bad parts, the image changed). */
static int multi_get(struct http_bdev *h, const struct cairn_bdev_iov *v, unsigned n)
{
	uint64_t deadline = now_ns() + h->timeout_ns;
	char err[CURL_ERROR_SIZE], *range = range_list(v, n);
	struct mp_parser mp;
	struct xfer x = { .v = v, .n = n, .size = h->base.size, .mp = &mp, .mp_rc = 1 };
	struct origin *o = &h->origins[atomic_load(&h->cur)];
	struct conn *c;
	CURLcode rc;

	if (!range)
		return -ENOMEM;
	c = origin_known(h, o) ? conn_get(h, deadline) : NULL;
	if (!c) {
		free(range);
		return -EAGAIN;
	}
	rc = attempt_ranges(h, c->h, o, &x, range, deadline, err);
	conn_put(h, c);
	free(range);
	if (x.mp_rc == -ENOTSUP || (rc == CURLE_OK && x.status == 200))
		return -ENOTSUP; /* the whole file, or one range: stopped at its first byte */
	if (x.mp_rc < 0)
		return vector_failed(h, v, n, "a multipart answer that does not match the ranges asked");
	if (rc != CURLE_OK || x.status >= 500 || x.status == 408 || x.status == 429 ||
	    x.status != 206)
		return x.status == 416 ? vector_failed(h, v, n, "HTTP 416 to a multi-range GET")
				       : -EAGAIN;
	if (strcmp(validator_of(&x), o->validator)) {
		atomic_fetch_add(&h->changed, 1);
		return vector_failed(h, v, n, "the image changed on the server (validator)");
	}
	if (x.mp_rc == 1) /* a 206 without a body */
		return vector_failed(h, v, n, "a multipart answer without a body");
	return mp_finish(&mp) ? vector_failed(h, v, n, "a multipart answer short of the ranges "
					      "asked") : 0;
}

/* A vector: entries in the head from the copy, empty ones skipped, the rest
 * in multi-range GETs of up to MP_MAX_RANGES entries, or separate requests
 * once the server is known not to answer those. */
static int http_readv(struct cairn_bdev *dev, const struct cairn_bdev_iov *v, unsigned n)
{
	struct http_bdev *h = (struct http_bdev *)dev;
	struct cairn_bdev_iov *w = malloc(n * sizeof(*w));
	unsigned k = 0;
	int rc = 0;

	if (!w)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		if (v[i].len && v[i].off + v[i].len <= h->head_len)
			memcpy(v[i].buf, h->head + v[i].off, v[i].len);
		else if (v[i].len)
			w[k++] = v[i];
	}
	for (unsigned i = 0; i < k && !rc; i += MP_MAX_RANGES) {
		unsigned m = k - i < MP_MAX_RANGES ? k - i : MP_MAX_RANGES;

		rc = m > 1 && atomic_load(&h->ranges) != RANGES_SINGLE ? multi_get(h, w + i, m)
									: -EAGAIN;
		if (!rc)
			atomic_store(&h->ranges, RANGES_MULTI);
		if (rc == -ENOTSUP)
			atomic_store(&h->ranges, RANGES_SINGLE);
		if (rc == -ENOTSUP || rc == -EAGAIN)
			rc = read_singles(h, w + i, m);
		else if (rc)
			atomic_fetch_add(&h->failed, 1);
	}
	free(w);
	if (rc && rc != -EIO && rc != -ENOMEM)
		rc = -EIO;
	return rc;
}

/* Asks the server once, with bytes 0 and 1 (a failure that tells nothing
 * leaves it unknown: asked again next time, vectors meanwhile assumed whole). */
static int http_readv_one(struct cairn_bdev *dev)
{
	struct http_bdev *h = (struct http_bdev *)dev;
	uint8_t b[2];
	struct cairn_bdev_iov v[2] = { { b, 1, 0 }, { b + 1, 1, 1 } };

	if (atomic_load(&h->ranges) == RANGES_UNKNOWN && dev->size >= 2) {
		int rc = multi_get(h, v, 2);

		if (!rc || rc == -ENOTSUP)
			atomic_store(&h->ranges, rc ? RANGES_SINGLE : RANGES_MULTI);
	}
	return atomic_load(&h->ranges) != RANGES_SINGLE;
}

/* ---- setup ---- */

static void origin_free(struct origin *o)
{
	free(o->url);
	free(o->sigv4);
	free(o->userpwd);
	free(o->token_hdr);
	lc.slist_free_all(o->headers);
}

static void http_last_error(struct cairn_bdev *dev, struct cairn_bdev_error *out)
{
	errslot_get(&((struct http_bdev *)dev)->err, out);
}

static void http_close(struct cairn_bdev *dev)
{
	struct http_bdev *h = (struct http_bdev *)dev;

	for (unsigned i = 0; h->conns && i < h->n_conns; i++)
		lc.easy_cleanup(h->conns[i].h);
	for (unsigned i = 0; i < h->n_origins; i++)
		origin_free(&h->origins[i]);
	pthread_cond_destroy(&h->freed);
	pthread_mutex_destroy(&h->lock);
	errslot_destroy(&h->err);
	free(h->conns);
	free(h->head);
	free(h->proxy);
	free(h->cacert);
	free(h);
}

static const struct cairn_bdev_ops http_ops = {
	.version = CAIRN_BDEV_OPS_VERSION,
	.name = "http",
	.read = http_read,
	.close = http_close,
	.readv = http_readv,
	.readv_one = http_readv_one,
	.last_error = http_last_error,
};

static char *dup_or_null(const char *s, int *oom)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		*oom = 1;
	return d;
}

static int origin_init(struct origin *o, const struct cairn_http_origin *src)
{
	int oom = 0;

	o->url = dup_or_null(src->url, &oom);
	o->sigv4 = dup_or_null(src->aws_sigv4, &oom);
	o->userpwd = dup_or_null(src->userpwd, &oom);
	if (src->aws_sigv4) {
		/* S3 wants the payload hash header; a GET has none to sign. */
		o->headers = lc.slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
		oom |= !o->headers;
	}
	if (src->session_token && !oom) {
		struct curl_slist *l;

		if (asprintf(&o->token_hdr, "x-amz-security-token: %s", src->session_token) < 0) {
			o->token_hdr = NULL;
			return -ENOMEM;
		}
		l = lc.slist_append(o->headers, o->token_hdr);
		oom |= !l;
		if (l)
			o->headers = l;
	}
	return oom ? -ENOMEM : 0;
}

static void defaults(struct http_bdev *h, const struct cairn_http_config *cfg)
{
	h->timeout_ns = cfg->timeout_ns ? cfg->timeout_ns : 10 * NSEC;
	h->connect_ns = cfg->connect_timeout_ns ? cfg->connect_timeout_ns
			: h->timeout_ns < 5 * NSEC ? h->timeout_ns : 5 * NSEC;
	h->retries = cfg->retries == CAIRN_HTTP_NO_RETRY ? 0 : cfg->retries ? cfg->retries : 4;
	h->backoff_ns = cfg->backoff_ns ? cfg->backoff_ns : 100 * MS;
	h->low_speed_bps = cfg->low_speed_bps ? cfg->low_speed_bps : 1024;
	h->low_speed_s = (cfg->low_speed_ns ? cfg->low_speed_ns
			  : h->timeout_ns < 5 * NSEC ? h->timeout_ns : 5 * NSEC) / NSEC;
	if (!h->low_speed_s)
		h->low_speed_s = 1;
	h->n_conns = cfg->connections ? cfg->connections : 4;
	h->head_len = cfg->head_bytes ? cfg->head_bytes : 128 * 1024;
	h->insecure = cfg->insecure;
	h->http1 = cfg->http1;
}

static int report(const struct cairn_http_config *cfg, int rc, const char *fmt, const char *a,
		  const char *b)
{
	char msg[512];

	if (cfg->report) {
		snprintf(msg, sizeof(msg), fmt, a, b);
		cfg->report(cfg->report_ctx, msg);
	}
	return rc;
}

static int status_errno(int status)
{
	if (status == 404 || status == 410)
		return -ENOENT;
	if (status == 401 || status == 403)
		return -EACCES;
	return -EIO;
}

/* The first request: the size, the validator and the head. From the primary,
 * or from the first mirror that answers when it does not (the mirrors are
 * tried in turn, as reads do, within one timeout). */
static int probe(struct http_bdev *h, const struct cairn_http_config *cfg)
{
	struct origin *o = &h->origins[0];
	struct xfer x;
	char err[CURL_ERROR_SIZE], why[320] = "";
	uint64_t deadline = now_ns() + h->timeout_ns, size = 0;
	enum outcome r = RETRY;
	unsigned oi = 0;
	CURLcode rc = CURLE_OK;

	h->head = malloc(h->head_len);
	if (!h->head)
		return -ENOMEM;
	for (unsigned tries = 0; tries <= h->retries; tries++) {
		if (tries && h->n_origins > 1) {
			oi = tries % h->n_origins;
			o = &h->origins[oi];
		}
		if (tries && oi == 0 && !backoff(h, tries, deadline))
			break;
		x = (struct xfer){ .buf = h->head, .len = h->head_len, .whole = 1 };
		rc = attempt(h, h->conns[0].h, o, &x, 0, deadline, err);
		r = rc != CURLE_OK ? transport_outcome(h, rc) : judge_head(&x, &size, why, sizeof(why));
		if (r == OK || (r != RETRY && h->n_origins == 1))
			break;
		atomic_fetch_add(&h->n_retries, 1);
	}
	if (r == OK && size == 0)
		snprintf(why, sizeof(why), "empty file");
	if (r == OK && size) {
		h->base.size = size;
		h->head_len = x.got;
		snprintf(o->validator, sizeof(o->validator), "%s", validator_of(&x));
		o->known = 1;
		atomic_store(&h->cur, oi);
		atomic_fetch_add(&h->failovers, oi != 0);
		return 0;
	}
	/* Say how to trust it, as curl does: a self-signed test server is the
	 * first https:// many users try. */
	if (rc == CURLE_PEER_FAILED_VERIFICATION && !h->cacert)
		return report(cfg, -EIO, "%s: %s (not trusted: the cacert option "
			      "names a CA file to trust, insecure skips the check)", o->url, err[0] ? err : lc.easy_strerror(rc));
	if (rc != CURLE_OK)
		return report(cfg, -EIO, "%s: %s", o->url, err[0] ? err : lc.easy_strerror(rc));
	if (x.status == 200 && x.filled)
		return report(cfg, -ENOTSUP, "%s: %s", o->url, why);
	return report(cfg, status_errno(x.status), "%s: %s", o->url, why);
}

int cairn_bdev_http_new(const struct cairn_http_config *cfg, struct cairn_bdev **out)
{
	struct http_bdev *h;
	pthread_condattr_t ca;
	int rc, oom = 0;

	if (!cfg || !cfg->n_origins || cfg->n_origins > CAIRN_HTTP_MAX_ORIGINS ||
	    cfg->connections > MAX_CONNECTIONS || !cfg->origins[0].url)
		return -EINVAL;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return report(cfg, -EIO, "%s%s", "cannot initialise libcurl", curl_init_why);
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	if (errslot_init(&h->err, cfg->origins[0].url)) {
		free(h);
		return -ENOMEM;
	}
	pthread_mutex_init(&h->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->freed, &ca);
	pthread_condattr_destroy(&ca);
	h->base.ops = &http_ops;
	defaults(h, cfg);
	h->proxy = dup_or_null(cfg->proxy, &oom);
	h->cacert = dup_or_null(cfg->cacert, &oom);
	rc = oom ? -ENOMEM : 0;
	for (unsigned i = 0; i < cfg->n_origins && !rc; i++, h->n_origins++)
		rc = cfg->origins[i].url ? origin_init(&h->origins[i], &cfg->origins[i]) : -EINVAL;
	h->conns = rc ? NULL : calloc(h->n_conns, sizeof(*h->conns));
	if (!rc && !h->conns)
		rc = -ENOMEM;
	for (unsigned i = 0; !rc && i < h->n_conns; i++) {
		h->conns[i].h = lc.easy_init();
		rc = h->conns[i].h ? conn_setup(h, h->conns[i].h) : -ENOMEM;
	}
	/* S3 answers a multi-range GET with the whole object: separate requests. */
	for (unsigned i = 0; i < h->n_origins; i++)
		if (h->origins[i].sigv4)
			h->ranges = RANGES_SINGLE;
	if (!rc)
		rc = probe(h, cfg);
	if (rc < 0) {
		http_close(&h->base);
		return rc;
	}
	*out = &h->base;
	return 0;
}

int cairn_bdev_http_stats(struct cairn_bdev *dev, struct cairn_http_stats *out)
{
	for (; dev; dev = dev->below) {
		struct http_bdev *h = (struct http_bdev *)dev;

		if (dev->ops != &http_ops)
			continue;
		*out = (struct cairn_http_stats){
			.requests = atomic_load(&h->requests),
			.bytes = atomic_load(&h->bytes),
			.retries = atomic_load(&h->n_retries),
			.failovers = atomic_load(&h->failovers),
			.timeouts = atomic_load(&h->timeouts),
			.changed = atomic_load(&h->changed),
			.failed = atomic_load(&h->failed),
			.origin = atomic_load(&h->cur),
			.http_version = atomic_load(&h->http_version),
		};
		return 0;
	}
	return -EINVAL;
}
