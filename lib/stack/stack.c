/* SPDX-License-Identifier: MIT */
/*
 * The stack builder (include/cairn/stack.h): the one place that composes layers
 * 1-4. From a path and cairn_stack_opts it builds
 *   file -> [offset] -> [fault] -> [delay] -> stats -> [qcow2] -> [verify] -> cache
 *   -> image
 * and for a URL
 *   http -> [offset] -> [fault] -> [delay] -> stats -> [diskcache] -> [qcow2]
 *   -> [verify] -> cache -> image
 * (build_remote_stack: the delay emulates the network, stats count what crossed
 * it, and the disk cache keeps it; bytes are verified as they leave it for the
 * segment cache). The fault device is a test hook (<cairn/testing.h>). Each
 * wrapper takes the device below it on success; on failure we close what we
 * built so far. qcow2 sits above delay and stats: the emulated disk is the
 * file, so its L2 table reads pay the delay and count as device requests like
 * any other read. verify sits right under the cache (over a disk cache or http
 * device): bytes are checked once, as they enter the cache.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cairn/bdev.h>
#include <cairn/cache.h>
#include <cairn/error.h>
#include <cairn/remote.h>
#include <cairn/image.h>
#include <cairn/stack.h>
#include <cairn/testing.h>
#include <cairn/verify.h>
#include "util/util_int.h"

/* The options, resolved: each layer's config by value (zero = defaults), read
 * from the caller's structs only as far as their size says they go. */
struct plan {
	struct cairn_cache_config cache;
	struct cairn_delay_config delay;
	int has_delay;
	struct cairn_qcow2_config qcow2;
	struct cairn_verify_config verify;
	struct cairn_http_config http;
	struct cairn_s3_config s3;
	struct cairn_remote_opts remote;          /* http and s3 point at those above */
	const struct cairn_fault_config *fault;   /* the test hook; NULL = none */
	uint64_t offset;
	unsigned file_flags;
	size_t chunk_cache;
	unsigned flags;
};

struct cairn_stack {
	struct cairn_image *img;                  /* owns the cache; NULL when raw */
	struct cairn_cache *cache;                /* owns the devices */
	struct cairn_bdev *stats;                 /* inside the image's stack; NULL offline */
	struct cairn_bdev *fault;                 /* same; NULL without one */
};

/* An image offset past the end of what is below says so, with both numbers
 * (the offset device's -EINVAL alone read "cannot set up the offset device"). */
static int offset_in(struct cairn_bdev *dev, uint64_t off, char *why, size_t why_len)
{
	uint64_t size = cairn_bdev_size(dev);

	if (off <= size)
		return 0;
	snprintf(why, why_len, "the image offset %llu is past the end of the file (%llu bytes)",
		 (unsigned long long)off, (unsigned long long)size);
	return -EINVAL;
}

/* Wraps *dev with a constructor's result; on failure *dev still owns the stack. */
#define WRAP(call, what)                                                         \
	do {                                                                     \
		struct cairn_bdev *up_ = NULL;                                   \
		rc = (call);                                                     \
		if (rc < 0) {                                                    \
			snprintf(why, why_len, "cannot set up the %s device: %s", \
				 what, cairn_strerror(rc));                      \
			goto fail;                                               \
		}                                                                \
		dev = up_;                                                       \
	} while (0)

struct why_buf {
	char *why;
	size_t len;
};

/* A layer's reason for a refusal (qcow2, http) becomes the open error's text. */
static void layer_why(void *ctx, const char *msg)
{
	struct why_buf *w = ctx;

	snprintf(w->why, w->len, "%s", msg);
}

/* Replace *dev (a qcow2 file) with the qcow2 view of it. Backing files are found
 * relative to the image's directory. */
static int wrap_qcow2(const char *path, const struct plan *o, char *why,
		      size_t why_len, struct cairn_bdev **dev)
{
	struct cairn_qcow2_config cfg = o->qcow2;
	struct why_buf wb = { why, why_len };
	struct cairn_bdev *q = NULL;
	char *copy = strdup(path);
	int rc;

	if (!copy)
		return -ENOMEM;
	if (!cfg.report) {
		cfg.report = layer_why;
		cfg.report_ctx = &wb;
	}
	rc = cairn_bdev_qcow2_new(*dev, dirname(copy), &cfg, &q);
	free(copy);
	if (rc < 0) {
		if (!why[0])
			snprintf(why, why_len, "cannot open the qcow2 image: %s",
				 cairn_strerror(rc));
		return rc;
	}
	*dev = q;
	return 0;
}

/* ---- remote images: http -> [offset] -> [fault] -> [delay] -> stats -> [diskcache] ---- */

struct origins {
	struct cairn_http_origin o[CAIRN_HTTP_MAX_ORIGINS];
	char *store[CAIRN_HTTP_MAX_ORIGINS];
	unsigned n;
};

static void origins_free(struct origins *og)
{
	for (unsigned i = 0; i < og->n; i++)
		free(og->store[i]);
}

/* The URL, then the mirrors; s3:// ones become signed https origins. */
static int resolve_origins(const char *url, const struct plan *o, char *why,
			   size_t why_len, struct origins *og)
{
	const struct cairn_remote_opts *r = &o->remote;

	og->n = 0;
	for (unsigned i = 0; i <= r->n_mirrors && i < CAIRN_HTTP_MAX_ORIGINS; i++) {
		const char *u = i ? r->mirrors[i - 1] : url;
		int rc = 0;

		og->store[og->n] = NULL;
		if (!cairn_url_is_remote(u)) {
			snprintf(why, why_len, "mirror '%s' is not an http://, https:// or s3:// URL", u);
			rc = -EINVAL;
		} else if (!strncasecmp(u, "s3://", 5)) {
			rc = cairn_s3_origin(u, &o->s3, &og->o[og->n], &og->store[og->n]);
			if (rc == -EINVAL)
				snprintf(why, why_len, "'%s' is not s3://BUCKET/KEY", u);
		} else {
			og->o[og->n] = (struct cairn_http_origin){ .url = u };
		}
		if (rc < 0) {
			free(og->store[og->n]);
			origins_free(og);
			return rc;
		}
		og->n++;
	}
	return 0;
}

static int open_http(const char *url, const struct plan *o, char *why,
		     size_t why_len, struct cairn_bdev **out)
{
	struct cairn_http_config cfg = o->http;
	struct why_buf wb = { why, why_len };
	struct origins og;
	int rc = resolve_origins(url, o, why, why_len, &og);

	if (rc < 0)
		return rc;
	cfg.origins = og.o;
	cfg.n_origins = og.n;
	/* The first request serves what opening reads first: the verify device's
	 * head (block 0 and the digest table) or, unverified, the first segment. */
	if (!cfg.head_bytes)
		cfg.head_bytes = !o->verify.off ? CAIRN_VERIFY_HEAD_BYTES :
			o->cache.segment_size ? o->cache.segment_size : 128 * 1024;
	if (!cfg.report) {
		cfg.report = layer_why;
		cfg.report_ctx = &wb;
	}
	rc = cairn_bdev_http_new(&cfg, out);
	origins_free(&og);
	return rc;
}

/* The disk cache above *dev, keyed by the image's head (read from the http
 * device's memory, so it costs no request). */
static int wrap_diskcache(const char *url, struct cairn_bdev *head_dev,
			  const struct cairn_remote_opts *r, char *why, size_t why_len,
			  struct cairn_bdev **dev)
{
	struct cairn_diskcache_config dc = { .dir = r->cache_dir, .max_bytes = r->cache_max,
					     .chunk_bytes = r->cache_chunk };
	struct cairn_bdev *up = NULL;
	char key[128];
	int rc = cairn_diskcache_key(head_dev, key, sizeof(key));

	if (rc == 0) {
		dc.key = key;
		rc = cairn_bdev_diskcache_new(*dev, &dc, &up);
	}
	/* For an open while the server is down (without the note only that fails).
	 * The size is the cached device's, so chunk lengths match then. */
	if (rc == 0)
		cairn_diskcache_remember(r->cache_dir, url, key, cairn_bdev_size(up));
	if (rc < 0) {
		snprintf(why, why_len, "cannot set up the disk cache in %s: %s", r->cache_dir,
			 cairn_strerror(rc));
		return rc;
	}
	*dev = up;
	return 0;
}

/* The server cannot be reached: serve what the disk cache holds of the image an
 * earlier open of url found there (reads of anything else give EIO). */
static int open_offline(const char *url, const struct plan *o, char *why,
			size_t why_len, struct cairn_bdev **out, int net_rc)
{
	struct cairn_diskcache_config dc = { .dir = o->remote.cache_dir,
					     .max_bytes = o->remote.cache_max,
					     .chunk_bytes = o->remote.cache_chunk };
	int rc = cairn_bdev_diskcache_offline(&dc, url, out);

	if (rc == -ENOENT)
		return net_rc; /* never opened here before: the network error stands */
	if (rc < 0)
		snprintf(why, why_len, "server unreachable, and the disk cache in %s: %s",
			 o->remote.cache_dir, cairn_strerror(rc));
	return rc;
}

static int build_remote_stack(const char *url, const struct plan *o, char *why,
			      size_t why_len, struct cairn_bdev **out, struct cairn_bdev **stats,
			      struct cairn_bdev **fault)
{
	struct cairn_bdev *dev = NULL, *http;
	int rc;

	*stats = *fault = NULL;
	rc = open_http(url, o, why, why_len, &dev);
	if (rc == -EIO && o->remote.cache_dir)
		return open_offline(url, o, why, why_len, out, rc);
	if (rc < 0)
		return rc;
	http = dev;
	if (o->offset && (rc = offset_in(dev, o->offset, why, why_len)) < 0)
		goto fail;
	if (o->offset)
		WRAP(cairn_bdev_offset_new(dev, o->offset, 0, &up_), "offset");
	if (o->fault) {
		WRAP(cairn_bdev_fault_new(dev, o->fault, &up_), "fault");
		*fault = dev;
	}
	if (o->has_delay) {
		/* An emulated far server: the latency is paid on each connection, so
		 * as many requests are in flight as there are connections. */
		struct cairn_delay_config dc = o->delay;

		if (!dc.channels)
			dc.channels = o->http.connections ? o->http.connections : 4;
		WRAP(cairn_bdev_delay_new(dev, &dc, &up_), "delay");
	}
	WRAP(cairn_bdev_stats_new(dev, &up_), "stats");
	*stats = dev;
	if (o->remote.cache_dir) {
		rc = wrap_diskcache(url, http, &o->remote, why, why_len, &dev);
		if (rc < 0)
			goto fail;
	}
	*out = dev;
	return 0;
fail:
	cairn_bdev_close(dev);
	*stats = *fault = NULL;
	return rc;
}

/* Does a path that names no file look like a URL of a scheme cairn does not
 * read (ftp://, file://, gs://, a misspelt one)? Then saying so beats a bare
 * "No such file or directory". */
static int looks_like_url(const char *path)
{
	size_t n = strspn(path, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");

	return n && isalpha((unsigned char)path[0]) && !strncmp(path + n, "://", 3);
}

static int build_stack(const char *path, const struct plan *o, char *why,
		       size_t why_len, struct cairn_bdev **out, struct cairn_bdev **stats,
		       struct cairn_bdev **fault)
{
	struct cairn_bdev *dev = NULL;
	const char *kind;
	int rc;

	*stats = *fault = NULL;
	rc = cairn_bdev_file_open(path, o->file_flags, &dev);
	if (rc == -EINVAL && (kind = util_unreadable_kind(path)))
		snprintf(why, why_len, "not a cairn image: %s is %s", path, kind);
	if (rc == -ENOENT && looks_like_url(path))
		snprintf(why, why_len, "not a URL cairn reads (http://, https://, "
			 "s3://BUCKET/KEY)");
	if (rc < 0)
		return rc; /* otherwise the errno says it all (ENOENT, EACCES) */
	if (o->offset && (rc = offset_in(dev, o->offset, why, why_len)) < 0)
		goto fail;
	if (o->offset)
		WRAP(cairn_bdev_offset_new(dev, o->offset, 0, &up_), "offset");
	if (o->fault) {
		WRAP(cairn_bdev_fault_new(dev, o->fault, &up_), "fault");
		*fault = dev;
	}
	if (o->has_delay)
		WRAP(cairn_bdev_delay_new(dev, &o->delay, &up_), "delay");
	rc = cairn_bdev_stats_new(dev, stats);
	if (rc < 0) {
		*stats = NULL;
		snprintf(why, why_len, "cannot set up the stats device: %s", cairn_strerror(rc));
		goto fail;
	}
	*out = *stats;
	return 0;
fail:
	cairn_bdev_close(dev);
	*stats = *fault = NULL;
	return rc;
}

static int new_cache(struct cairn_bdev *dev, const struct plan *o, char *why,
		     size_t why_len, struct cairn_cache **out)
{
	int rc = cairn_cache_new(dev, &o->cache, out);

	if (rc < 0) {
		snprintf(why, why_len, "cannot set up the cache: %s", cairn_strerror(rc));
		cairn_bdev_close(dev);
	}
	return rc;
}

/* Puts the verify device over *dev (the bytes of a cairn image) unless turned
 * off. An image without digests goes on without one, unless a root was pinned
 * (verify refuses that). -EMEDIUMTYPE: *dev holds a qcow2 file. */
static int wrap_verify(const struct plan *o, char *why, size_t why_len,
		       struct cairn_bdev **dev)
{
	struct cairn_bdev *v = NULL;
	int rc = cairn_bdev_verify_new(*dev, &o->verify, why, why_len, &v);

	if (rc == -ENODATA) {
		why[0] = '\0';
		return 0;
	}
	if (rc < 0)
		return rc;
	*dev = v;
	return 0;
}

/* The verify device's open read (block 0, the table, the start of the
 * metadata) goes into the cache, so a verified open costs no request more. */
static void prime_from_verify(struct cairn_cache *c)
{
	void *head;
	size_t len;

	if (cairn_bdev_verify_take_head(cairn_cache_bdev(c), &head, &len))
		return;
	cairn_cache_prime(c, head, len, 0);
	free(head);
}

/* After an EIO while opening: ": DEVICE: bytes A-B: CAUSE" onto why, as the
 * device that failed recorded it (nothing when none did). */
static void why_device(struct cairn_bdev *dev, int rc, char *why, size_t why_len)
{
	struct cairn_bdev_error e;
	size_t n = strlen(why);

	if (rc != -EIO || n + 3 >= why_len || cairn_bdev_last_error(dev, &e) != 1)
		return;
	if (n) {
		memcpy(why + n, ": ", 3);
		n += 2;
	}
	cairn_bdev_error_format(&e, why + n, why_len - n);
}

/* The verified stack: the verify device's first read (block 0 and the table)
 * also tells a qcow2 file apart, so that costs no request of its own. Takes dev. */
static int open_verified(const char *path, const struct plan *o, char *why,
			 size_t why_len, struct cairn_bdev *dev, struct cairn_cache **out)
{
	int rc = wrap_verify(o, why, why_len, &dev);

	if (rc == -EMEDIUMTYPE) {
		why[0] = '\0';
		rc = wrap_qcow2(path, o, why, why_len, &dev);
		if (!rc)
			rc = wrap_verify(o, why, why_len, &dev);
	}
	if (rc < 0) {
		why_device(dev, rc, why, why_len);
		cairn_bdev_close(dev);
		return rc;
	}
	rc = new_cache(dev, o, why, why_len, out);
	if (!rc)
		prime_from_verify(*out);
	return rc;
}

/* The cache over dev, or over the qcow2 view of dev when it holds a qcow2 file.
 * The magic is read through a first cache: for a raw image that read is the
 * segment the superblock (and the metadata after it) is read from next, so
 * telling the formats apart costs no device request of its own. Takes dev. */
static int open_cache(const char *path, const struct plan *o, char *why,
		      size_t why_len, struct cairn_bdev *dev, struct cairn_cache **out)
{
	struct cairn_cache *c;
	uint8_t magic[4];
	ssize_t n;
	int rc = new_cache(dev, o, why, why_len, &c);

	if (rc < 0)
		return rc;
	n = cairn_cache_read(c, magic, sizeof(magic), 0, NULL);
	if (n < 0) {
		snprintf(why, why_len, "cannot read the file header");
		why_device(cairn_cache_bdev(c), (int)n, why, why_len);
		cairn_cache_free(c);
		return (int)n;
	}
	if (n < (ssize_t)sizeof(magic) || !cairn_bdev_qcow2_magic(magic)) {
		*out = c;
		return 0;
	}
	dev = cairn_cache_release(c);
	rc = wrap_qcow2(path, o, why, why_len, &dev);
	if (rc < 0) {
		cairn_bdev_close(dev);
		return rc;
	}
	return new_cache(dev, o, why, why_len, out);
}

/* Does the caller's struct (of o->size bytes) reach past field? Older callers
 * pass smaller structs; the fields they do not know stay at their defaults. */
#define HAS(o, field) ((o)->size >= offsetof(__typeof__(*(o)), field) + sizeof((o)->field))
#define TAKE(dst, o, field)                           \
	do {                                          \
		if (HAS(o, field) && (o)->field)      \
			(dst) = *(o)->field;          \
	} while (0)

static void plan_remote(struct plan *p, const struct cairn_remote_opts *r)
{
	p->remote.size = sizeof(p->remote);
	p->remote.http = &p->http;
	p->remote.s3 = &p->s3;
	if (!r)
		return;
	TAKE(p->http, r, http);
	TAKE(p->s3, r, s3);
	if (HAS(r, n_mirrors) && r->mirrors) {
		p->remote.mirrors = r->mirrors;
		p->remote.n_mirrors = r->n_mirrors;
	}
	if (HAS(r, cache_dir))
		p->remote.cache_dir = r->cache_dir;
	if (HAS(r, cache_max))
		p->remote.cache_max = r->cache_max;
	if (HAS(r, cache_chunk))
		p->remote.cache_chunk = r->cache_chunk;
}

static int plan_make(const struct cairn_stack_opts *o, const struct cairn_fault_config *fault,
		     char *why, size_t why_len, struct plan *p)
{
	memset(p, 0, sizeof(*p));
	p->fault = fault;
	if (!o) {
		plan_remote(p, NULL);
		return 0;
	}
	if (o->size < offsetof(struct cairn_stack_opts, cache)) {
		snprintf(why, why_len, "cairn_stack_opts without a size: call cairn_stack_opts_init()");
		return -EINVAL;
	}
	TAKE(p->cache, o, cache);
	TAKE(p->delay, o, delay);
	p->has_delay = p->delay.latency_ns || p->delay.bandwidth_bps;
	TAKE(p->qcow2, o, qcow2);
	TAKE(p->verify, o, verify);
	plan_remote(p, HAS(o, remote) ? o->remote : NULL);
	/* Said without cache_dir they did nothing, silently: the user meant a
	 * bounded cache and got none. */
	if (!p->remote.cache_dir && (p->remote.cache_max || p->remote.cache_chunk)) {
		snprintf(why, why_len, "cache_max and cache_chunk bound a disk cache: "
			 "give cache_dir too");
		return -EINVAL;
	}
	if (HAS(o, offset))
		p->offset = o->offset;
	if (HAS(o, file_flags))
		p->file_flags = o->file_flags;
	if (HAS(o, chunk_cache))
		p->chunk_cache = o->chunk_cache;
	if (HAS(o, flags))
		p->flags = o->flags;
	if (p->remote.n_mirrors >= CAIRN_HTTP_MAX_ORIGINS) {
		snprintf(why, why_len, "at most %d mirrors", CAIRN_HTTP_MAX_ORIGINS - 1);
		return -EINVAL;
	}
	return 0;
}

void cairn_stack_opts_init(struct cairn_stack_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
}

void cairn_remote_opts_init(struct cairn_remote_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
}

/* The devices, then the cache, then the image over it. */
static int open_plan(const char *path, const struct plan *p, char *why, size_t why_len,
		     struct cairn_stack *s)
{
	struct cairn_bdev *dev = NULL;
	struct cairn_cache *cache;
	int rc;

	if (cairn_url_is_remote(path))
		rc = build_remote_stack(path, p, why, why_len, &dev, &s->stats, &s->fault);
	else
		rc = build_stack(path, p, why, why_len, &dev, &s->stats, &s->fault);
	if (rc < 0)
		return rc;
	if (p->flags & CAIRN_STACK_RAW)
		return new_cache(dev, p, why, why_len, &s->cache);
	if (p->verify.off)
		rc = open_cache(path, p, why, why_len, dev, &cache);
	else
		rc = open_verified(path, p, why, why_len, dev, &cache);
	if (rc < 0)
		return rc;
	rc = cairn_image_open(cache, why, why_len, &s->img);
	if (rc < 0) {
		why_device(cairn_cache_bdev(cache), rc, why, why_len);
		cairn_cache_free(cache);
		return rc;
	}
	s->cache = cache;
	cairn_image_set_chunk_cache(s->img, p->chunk_cache);
	return 0;
}

/* A remote request pays a round trip (20 ms in bench/remote.py) before its
 * first byte and then runs at one connection's bandwidth (100 MB/s there): a
 * 1 MiB request is 2/3 waiting, and the hot prefix of an ordered image, queued
 * in max_io requests 4 at a time, took 31 requests and 0.31 s for Java Hello's
 * 26 MiB. 4 MiB, about twice bandwidth x latency, keeps each connection
 * transferring 2/3 of the time: 10-12 requests, 0.19-0.24 s (2 MiB 0.24 s,
 * 8 MiB 0.23 s: fewer requests than connections by then, and each first byte
 * later; docs/bench/remote13.md). Streams still end on 1 MiB boundaries
 * (ra_unit, lib/cache/readahead.c). -o max_io= sets any size. */
#define REMOTE_MAX_IO (4u << 20)

int cairn_stack_open_faulty(const char *path, const struct cairn_stack_opts *opts,
			    const struct cairn_fault_config *fault, char *why, size_t why_len,
			    struct cairn_stack **out)
{
	struct cairn_stack *s;
	struct plan p;
	char spare[8];
	int rc;

	util_why_init(&why, &why_len, spare, sizeof(spare));
	rc = plan_make(opts, fault, why, why_len, &p);
	if (rc < 0)
		return rc;
	if (cairn_url_is_remote(path) && !p.cache.max_io)
		p.cache.max_io = REMOTE_MAX_IO;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	rc = open_plan(path, &p, why, why_len, s);
	if (rc < 0) {
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int cairn_stack_open(const char *path, const struct cairn_stack_opts *opts, char *why,
		     size_t why_len, struct cairn_stack **out)
{
	return cairn_stack_open_faulty(path, opts, NULL, why, why_len, out);
}

void cairn_stack_close(struct cairn_stack *s)
{
	if (!s)
		return;
	if (s->img)
		cairn_image_close(s->img);
	else
		cairn_cache_free(s->cache);
	free(s);
}

struct cairn_image *cairn_stack_image(struct cairn_stack *s)
{
	return s->img;
}

struct cairn_cache *cairn_stack_cache(struct cairn_stack *s)
{
	return s->cache;
}

struct cairn_bdev *cairn_stack_bdev(struct cairn_stack *s)
{
	return cairn_cache_bdev(s->cache);
}

int cairn_stack_last_error(struct cairn_stack *s, struct cairn_bdev_error *out)
{
	return cairn_bdev_last_error(cairn_stack_bdev(s), out);
}

int cairn_stack_counters(struct cairn_stack *s, struct cairn_bdev_counters *out)
{
	if (!s->stats) /* offline: the disk cache alone serves the image */
		return -ENOENT;
	return cairn_bdev_get_stats(s->stats, out);
}

struct cairn_bdev *cairn_stack_fault_dev(struct cairn_stack *s)
{
	return s->fault;
}

#define BESIDE_HEAD (256u << 10)

int cairn_stack_fetch_beside(const char *url, const struct cairn_stack_opts *opts,
			     const char *suffix, size_t max, char *why, size_t why_len,
			     char **text, size_t *len, uint64_t *requests)
{
	struct cairn_http_stats hs = { 0 };
	struct cairn_bdev *dev = NULL;
	char *urls[CAIRN_HTTP_MAX_ORIGINS] = { NULL };
	struct plan p;
	char spare[8];
	unsigned n = 0;
	uint64_t size;
	int rc;

	util_why_init(&why, &why_len, spare, sizeof(spare));
	*text = NULL;
	*len = 0;
	if (requests)
		*requests = 0;
	if (!cairn_url_is_remote(url))
		return -EINVAL;
	rc = plan_make(opts, NULL, why, why_len, &p);
	if (rc < 0)
		return rc;
	/* The same name beside the image on every origin, so a primary that is
	 * down costs no more here than it costs the image's own open. */
	for (rc = 0; n <= p.remote.n_mirrors && n < CAIRN_HTTP_MAX_ORIGINS && !rc; n++)
		if (asprintf(&urls[n], "%s%s", n ? p.remote.mirrors[n - 1] : url, suffix) < 0) {
			urls[n] = NULL;
			rc = -ENOMEM;
		}
	/* One connection, with a head large enough that a profile is one request.
	 * No delay device: the emulated latency is the image's (this request runs
	 * beside the image's first). */
	p.remote.mirrors = (const char *const *)(urls + 1);
	p.remote.n_mirrors = n ? n - 1 : 0;
	p.http.connections = 1;
	p.http.head_bytes = BESIDE_HEAD;
	if (!rc)
		rc = open_http(urls[0], &p, why, why_len, &dev);
	for (unsigned i = 0; i < n; i++)
		free(urls[i]);
	if (rc == -ENOENT)
		why[0] = 0; /* nothing there: the usual case, nothing to say */
	if (rc < 0)
		return rc;
	size = cairn_bdev_size(dev);
	if (size > max) {
		rc = -EFBIG;
	} else if (!(*text = malloc((size_t)size + 1))) {
		rc = -ENOMEM;
	} else {
		rc = cairn_bdev_read_full(dev, *text, (size_t)size, 0);
		if (rc == 0) {
			(*text)[size] = 0;
			*len = (size_t)size;
		}
	}
	cairn_bdev_http_stats(dev, &hs);
	if (requests)
		*requests = hs.requests;
	cairn_bdev_close(dev);
	if (rc < 0) {
		free(*text);
		*text = NULL;
	}
	return rc;
}
