/* SPDX-License-Identifier: MIT */
/* Option parsing shared by every command that reads an image. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

const char cli_image_opts_help[] =
	"image access options:\n"
	"  --cache-size SIZE  segment cache budget (default 64M; 0 disables caching)\n"
	"  --chunk-cache SIZE compressed images: decompressed-chunk cache budget\n"
	"                     (default 32M)\n"
	"  --segment SIZE     cache segment size, a power of two from 512 to 64M (default 128K)\n"
	"  --max-io SIZE      largest device request, 512 to 256M (default 1M)\n"
	"  --delay TIME       add TIME to every device request (e.g. 1ms, 250us)\n"
	"  --offset BYTES     the image starts at this byte of the file\n"
	"  --direct           read the image file with O_DIRECT\n"
	"  --l2-cache SIZE    qcow2 files: L2 table cache budget (default 1M; 0 disables it)\n"
	"  --stats            print device and cache counters to stderr at exit\n"
	"  --digest sha256:HEX  refuse the image unless its root digest is HEX\n"
	"  --verify MODE      on (default): check every byte read against the image's\n"
	"                     SHA-256 digests; none: do not (unsafe for untrusted storage)\n"
	"remote images (IMAGE is http://, https:// or s3://BUCKET/KEY):\n"
	"  --connections N    parallel kept-alive connections (default 4)\n"
	"  --timeout TIME     a read fails with EIO after TIME, retries included (default 10s)\n"
	"  --retries N        attempts after a failed one (default 4)\n"
	"  --mirror URL       another server with the same image (repeatable)\n"
	"  --proxy URL        HTTP proxy (default: the http_proxy/https_proxy environment)\n"
	"  --cacert FILE      trust the CA certificates in FILE; --insecure: trust any\n"
	"  --http1            never negotiate HTTP/2\n"
	"  --cache-dir DIR    persistent disk cache of the image's bytes\n"
	"  --cache-max SIZE   disk cache bound for all of DIR (default 1G)\n"
	"  --cache-chunk SIZE chunk files of a new disk cache (4K..16M, default 128K)\n"
	"  --s3-endpoint URL, --s3-region R, --s3-profile P   for s3:// (else AWS_* env)\n";

int cli_empty_arg(const char *cmd, const char *a)
{
	if (a[0])
		return 0;
	cli_err(cmd, "an empty argument names no file (see cairn %s --help)", cmd);
	return 1;
}

void cli_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "cairn %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_check_segment(const char *cmd, const char *what, uint64_t v)
{
	if (v >= CAIRN_CACHE_SEGMENT_MIN && v <= CAIRN_CACHE_SEGMENT_MAX && !(v & (v - 1)))
		return 0;
	cli_err(cmd, "%s must be a power of two from 512 to 64M, got %" PRIu64, what, v);
	return -1;
}

int cli_check_max_io(const char *cmd, const char *what, uint64_t v)
{
	if (v >= CLI_MAX_IO_MIN && v <= CLI_MAX_IO_MAX)
		return 0;
	cli_err(cmd, "%s must be from 512 to 256M, got %" PRIu64, what, v);
	return -1;
}

int cli_parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0 || !isfinite(v))
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': v *= 1024.0; end++; break;
	case 'm': case 'M': v *= 1024.0 * 1024; end++; break;
	case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
	case 't': case 'T': v *= 1024.0 * 1024 * 1024 * 1024; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end || v > 9.0e18)
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}

int cli_parse_duration_ns(const char *s, uint64_t *out)
{
	char *end;
	double v, scale = 1e3;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0 || !isfinite(v))
		return -EINVAL;
	if (!strcmp(end, "ns"))
		scale = 1;
	else if (!strcmp(end, "us") || !*end)
		scale = 1e3;
	else if (!strcmp(end, "ms"))
		scale = 1e6;
	else if (!strcmp(end, "s"))
		scale = 1e9;
	else
		return -EINVAL;
	if (v * scale > 3.6e12) /* an hour per request is certainly a typo */
		return -EINVAL;
	*out = (uint64_t)(v * scale + 0.5);
	return 0;
}

void cli_image_opts_init(struct cli_image_opts *o)
{
	memset(o, 0, sizeof(*o));
}

static int size_arg(const char *cmd, const char *opt, const char *val, uint64_t *out)
{
	if (!val || cli_parse_size(val, out)) {
		cli_err(cmd, "%s needs a size (e.g. 64M), got '%s'", opt, val ? val : "");
		return -1;
	}
	return 0;
}

/* The hidden --fault-* options: a fault device fails chosen device requests. */
static int fault_opt_parse(struct cli_image_opts *o, const char *cmd, const char *opt,
			   const char *val, int *i)
{
	struct cairn_fault_config *f = &o->fault;
	uint64_t *num = NULL;
	char *end;

	if (!strcmp(opt, "--fault-short"))
		f->kind = CAIRN_FAULT_SHORT;
	else if (!strcmp(opt, "--fault-persistent"))
		f->persistent = 1;
	else if (!strcmp(opt, "--fault-nth"))
		num = &f->fail_nth;
	else if (!strcmp(opt, "--fault-every"))
		num = &f->fail_every;
	else if (!strcmp(opt, "--fault-seed"))
		num = &f->seed;
	else if (strcmp(opt, "--fault-random"))
		return 0;
	if (num || !strcmp(opt, "--fault-random")) {
		unsigned long long v;

		errno = 0;
		v = val ? strtoull(val, &end, 10) : 0;
		if (!val || errno || end == val || *end ||
		    (!num && v > 1000)) {
			cli_err(cmd, "%s needs a number%s, got '%s'", opt,
				num ? "" : " (per mille, 0..1000)", val ? val : "");
			return -1;
		}
		if (num)
			*num = v;
		else
			f->random_permille = (uint32_t)v;
		(*i)++;
	}
	o->open.fault = f;
	return 1;
}

/* A remote-image option: the same keys for `-o key=val` (mount) and
 * `--key val` (other commands, '-' for '_'); errors name the option as shown
 * ("-o timeout", "--timeout"). Returns 1 when taken, 0 when key is not one, -1
 * after printing an error. */
int cli_remote_opt(struct cli_open_cfg *o, const char *cmd, const char *key, const char *shown,
		   const char *val)
{
	struct cli_remote_cfg *r = &o->remote;
	uint64_t v;
	char *end;

	if (!strcmp(key, "insecure") || !strcmp(key, "http1")) {
		*(key[0] == 'i' ? &r->http.insecure : &r->http.http1) = 1;
		return 1;
	}
	if (strcmp(key, "connections") && strcmp(key, "retries") && strcmp(key, "timeout") &&
	    strcmp(key, "mirror") && strcmp(key, "proxy") && strcmp(key, "cacert") &&
	    strcmp(key, "cache_dir") && strcmp(key, "cache_max") && strcmp(key, "cache_chunk") &&
	    strncmp(key, "s3_", 3))
		return 0;
	if (!val) {
		cli_err(cmd, "%s needs a value", shown);
		return -1;
	}
	if (!strcmp(key, "connections") || !strcmp(key, "retries")) {
		errno = 0;
		v = strtoull(val, &end, 10);
		if (errno || end == val || *end || v > 64 || (key[0] == 'c' && v == 0)) {
			cli_err(cmd, "%s needs a number (%s..64), got '%s'", shown,
				key[0] == 'c' ? "1" : "0", val);
			return -1;
		}
		if (key[0] == 'c')
			r->http.connections = (unsigned)v;
		else
			r->http.retries = v ? (unsigned)v : CAIRN_HTTP_NO_RETRY;
	} else if (!strcmp(key, "timeout")) {
		if (cli_parse_duration_ns(val, &v) || v < 1000000) {
			cli_err(cmd, "%s needs a time of at least 1ms (e.g. 10s), got '%s'", shown,
				val);
			return -1;
		}
		r->http.timeout_ns = v;
	} else if (!strcmp(key, "mirror")) {
		if (r->n_mirrors >= CAIRN_HTTP_MAX_ORIGINS - 1) {
			cli_err(cmd, "at most %d mirrors", CAIRN_HTTP_MAX_ORIGINS - 1);
			return -1;
		}
		r->mirrors[r->n_mirrors++] = val;
	} else if (!strcmp(key, "proxy")) {
		r->http.proxy = val;
	} else if (!strcmp(key, "cacert")) {
		r->http.cacert = val;
	} else if (!strcmp(key, "cache_dir")) {
		r->cache_dir = val;
	} else if (!strcmp(key, "cache_max") || !strcmp(key, "cache_chunk")) {
		if (cli_parse_size(val, &v) || v == 0) {
			cli_err(cmd, "%s needs a size (e.g. 1G), got '%s'", shown, val);
			return -1;
		}
		if (key[6] == 'm')
			r->cache_max = v;
		else
			r->cache_chunk = (size_t)v;
	} else if (!strcmp(key, "s3_endpoint")) {
		r->s3.endpoint = val;
	} else if (!strcmp(key, "s3_region")) {
		r->s3.region = val;
	} else if (!strcmp(key, "s3_profile")) {
		r->s3.profile = val;
	} else {
		return 0;
	}
	return 1;
}

/* --connections N and the like: the remote options in long-option form. */
static int remote_long_opt(struct cli_image_opts *o, const char *cmd, const char *opt,
			   const char *val, int *i)
{
	char key[32];
	size_t n = strlen(opt + 2);
	int rc;

	if (n >= sizeof(key))
		return 0;
	for (size_t k = 0; k <= n; k++)
		key[k] = opt[2 + k] == '-' ? '_' : opt[2 + k];
	rc = cli_remote_opt(&o->open, cmd, key, opt, val);
	if (rc > 0 && strcmp(key, "insecure") && strcmp(key, "http1"))
		(*i)++;
	return rc;
}

int cli_image_opt_parse(struct cli_image_opts *o, const char *cmd, int argc, char **argv,
			int *i)
{
	const char *opt = argv[*i];
	const char *val = *i + 1 < argc ? argv[*i + 1] : NULL;
	uint64_t v;

	if (!strcmp(opt, "--stats")) {
		o->print_stats = 1;
		return 1;
	}
	if (!strncmp(opt, "--fault-", 8))
		return fault_opt_parse(o, cmd, opt, val, i);
	if (!strcmp(opt, "--direct")) {
		o->open.file_flags |= CAIRN_BDEV_FILE_DIRECT;
		return 1;
	}
	if (!strcmp(opt, "--delay")) {
		if (!val || cli_parse_duration_ns(val, &v)) {
			cli_err(cmd, "--delay needs a time (e.g. 1ms), got '%s'", val ? val : "");
			return -1;
		}
		o->open.delay.latency_ns = v;
	} else if (!strcmp(opt, "--cache-size")) {
		if (size_arg(cmd, opt, val, &v))
			return -1;
		o->open.cache.budget_bytes = v ? (size_t)v : CAIRN_CACHE_OFF;
	} else if (!strcmp(opt, "--chunk-cache")) {
		if (size_arg(cmd, opt, val, &v))
			return -1;
		o->open.chunk_cache = v ? (size_t)v : 1; /* 0: keep nothing unused */
	} else if (!strcmp(opt, "--segment")) {
		if (size_arg(cmd, opt, val, &v))
			return -1;
		if (cli_check_segment(cmd, opt, v))
			return -1;
		o->open.cache.segment_size = (size_t)v;
	} else if (!strcmp(opt, "--max-io")) {
		if (size_arg(cmd, opt, val, &v) || cli_check_max_io(cmd, opt, v))
			return -1;
		o->open.cache.max_io = (size_t)v;
	} else if (!strcmp(opt, "--l2-cache")) {
		if (size_arg(cmd, opt, val, &v))
			return -1;
		o->open.qcow2.l2_cache_disabled = v == 0;
		o->open.qcow2.l2_cache_bytes = (size_t)v;
	} else if (!strcmp(opt, "--digest")) {
		if (!val || cairn_digest_parse(val, o->open.verify.root)) {
			cli_err(cmd, "--digest needs sha256:<64 hex digits>, got '%s'", val ? val : "");
			return -1;
		}
		o->open.verify.has_root = 1;
	} else if (!strcmp(opt, "--verify")) {
		if (!val || (strcmp(val, "on") && strcmp(val, "none"))) {
			cli_err(cmd, "--verify is on or none, got '%s'", val ? val : "");
			return -1;
		}
		o->open.verify.off = !strcmp(val, "none");
	} else if (!strcmp(opt, "--offset")) {
		if (size_arg(cmd, opt, val, &v))
			return -1;
		o->open.offset = v;
	} else if (!strncmp(opt, "--", 2)) {
		return remote_long_opt(o, cmd, opt, val, i);
	} else {
		return 0;
	}
	(*i)++;
	return 1;
}

/* The stack options of c, pointing into c and *r. */
static void stack_opts(const struct cli_open_cfg *c, struct cairn_remote_opts *r,
		       struct cairn_stack_opts *so)
{
	cairn_remote_opts_init(r);
	r->http = &c->remote.http;
	r->mirrors = c->remote.mirrors;
	r->n_mirrors = c->remote.n_mirrors;
	r->s3 = &c->remote.s3;
	r->cache_dir = c->remote.cache_dir;
	r->cache_max = c->remote.cache_max;
	r->cache_chunk = c->remote.cache_chunk;
	cairn_stack_opts_init(so);
	so->cache = &c->cache;
	so->delay = &c->delay;
	so->qcow2 = &c->qcow2;
	so->verify = &c->verify;
	so->remote = r;
	so->offset = c->offset;
	so->file_flags = c->file_flags;
	so->chunk_cache = c->chunk_cache;
	so->flags = c->flags;
}

int cli_stack_open(const char *path, const struct cli_open_cfg *c, char *why, size_t why_len,
		   struct cairn_stack **out)
{
	struct cairn_remote_opts r;
	struct cairn_stack_opts so;

	stack_opts(c, &r, &so);
	if (c->fault)
		return cairn_stack_open_faulty(path, &so, c->fault, why, why_len, out);
	return cairn_stack_open(path, &so, why, why_len, out);
}

int cli_fetch_beside(const char *url, const struct cli_open_cfg *c, const char *suffix,
		     size_t max, char *why, size_t why_len, char **text, size_t *len,
		     uint64_t *requests)
{
	struct cairn_remote_opts r;
	struct cairn_stack_opts so;

	stack_opts(c, &r, &so);
	return cairn_stack_fetch_beside(url, &so, suffix, max, why, why_len, text, len, requests);
}

const char *cli_why_tail(const char *path, const char *why)
{
	size_t n = strlen(path);

	return !strncmp(why, path, n) && !strncmp(why + n, ": ", 2) ? why + n + 2 : why;
}

void cli_open_err(const char *cmd, const char *path, int rc, const char *why)
{
	if (why[0] && rc == -EINVAL && strstr(why, path)) /* the reason names the path;
							   * "Invalid argument" adds
							   * nothing to it */
		cli_err(cmd, "%s", why);
	else if (why[0] && rc == -EINVAL) /* e.g. a qcow2 backing file's */
		cli_err(cmd, "%s: %s", path, why);
	else if (why[0])
		cli_err(cmd, "%s: %s: %s", path, cairn_strerror(rc), cli_why_tail(path, why));
	else
		cli_err(cmd, "%s: %s", path, cairn_strerror(rc));
}

struct cairn_stack *cli_open_image(const char *cmd, const char *path,
				   const struct cli_image_opts *o)
{
	struct cairn_stack *stack = NULL;
	char why[256];
	int rc;

	if (o->open.verify.off && o->open.verify.has_root) {
		cli_err(cmd, "--digest needs verification: drop --verify none");
		return NULL;
	}
	rc = cli_stack_open(path, &o->open, why, sizeof(why), &stack);
	if (rc < 0) {
		cli_open_err(cmd, path, rc, why);
		return NULL;
	}
	return stack;
}

void cli_dev_error_text(const struct cairn_bdev_error *e, const char *image, char *out,
			size_t len)
{
	char text[2 * CAIRN_BDEV_ERROR_TEXT + 64];

	cairn_bdev_error_format(e, text, sizeof(text));
	snprintf(out, len, ": %s", cli_why_tail(image, text));
}

void cli_dev_why(struct cairn_bdev *dev, const char *image, int err, char *out, size_t len)
{
	struct cairn_bdev_error e;

	out[0] = '\0';
	if ((err == -EIO || err == -CAIRN_EDIGEST) && dev && cairn_bdev_last_error(dev, &e) == 1)
		cli_dev_error_text(&e, image, out, len);
}

void cli_img_err(const char *cmd, const char *image, struct cairn_image *img, const char *what,
		 int err)
{
	const char *why = err == -CAIRN_ECORRUPT ? cairn_image_corruption(img) : NULL;
	char dev[CLI_DEV_WHY_LEN];

	cli_dev_why(img ? cairn_cache_bdev(cairn_image_cache(img)) : NULL, image, err, dev,
		    sizeof(dev));
	if (why && what)
		cli_err(cmd, "%s: %s: %s (%s)", image, cairn_strerror(err), why, what);
	else if (why)
		cli_err(cmd, "%s: %s: %s", image, cairn_strerror(err), why);
	else if (what)
		cli_err(cmd, "%s: %s: %s%s", image, what, cairn_strerror(err), dev);
	else
		cli_err(cmd, "%s: %s%s", image, cairn_strerror(err), dev);
}

void cli_print_stats(const struct cli_image_opts *o, struct cairn_stack *stack)
{
	struct cairn_image *img = stack ? cairn_stack_image(stack) : NULL;
	struct cairn_bdev_counters dc;
	struct cairn_cache_stats cs;
	struct cairn_qcow2_stats qs;
	struct cairn_verify_stats vs;
	struct cairn_chunk_cache_stats zs;
	uint64_t lookups;

	if (!o->print_stats || !img)
		return;
	cairn_cache_get_stats(cairn_image_cache(img), &cs);
	lookups = cs.hits + cs.misses;
	if (cairn_stack_counters(stack, &dc) == 0)
		fprintf(stderr, "device: %" PRIu64 " requests, %" PRIu64 " bytes, %" PRIu64
			" errors\n", dc.requests, dc.bytes, dc.errors);
	fprintf(stderr, "cache: %" PRIu64 " hits, %" PRIu64 " misses (%.1f%% hit), %" PRIu64
		" requests, readahead %" PRIu64 " bytes (%" PRIu64 " used, %" PRIu64
		" wasted segments), %" PRIu64 " resident bytes\n",
		cs.hits, cs.misses, lookups ? 100.0 * (double)cs.hits / (double)lookups : 0.0,
		cs.requests, cs.readahead_bytes, cs.readahead_used, cs.readahead_wasted,
		cs.resident_bytes);
	if (cairn_bdev_verify_stats(cairn_cache_bdev(cairn_image_cache(img)), &vs) == 0)
		fprintf(stderr, "verify: %" PRIu64 " granules (%" PRIu64 " bytes) hashed, %" PRIu64
			" mismatches; reads waited %.3f ms on hashing, hashed %" PRIu64
			" bytes themselves\n", vs.granules, vs.bytes, vs.mismatches,
			(double)cs.verify_wait_ns / 1e6, cs.verify_read_bytes);
	if (cairn_image_chunk_cache_stats(img, &zs) == 0)
		fprintf(stderr, "chunks: %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64
			" waits, %" PRIu64 " read ahead, %" PRIu64 " evictions, %" PRIu64
			" bytes decompressed, %" PRIu64 " resident bytes\n", zs.hits, zs.misses,
			zs.waits, zs.readahead, zs.evictions, zs.decompressed_bytes,
			zs.resident_bytes);
	cli_print_remote_stats(stderr, cairn_cache_bdev(cairn_image_cache(img)), "");
	if (cairn_bdev_qcow2_stats(cairn_cache_bdev(cairn_image_cache(img)), &qs) == 0)
		fprintf(stderr, "qcow2: L2 %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64
			" evictions, %" PRIu64 " table reads; %" PRIu64 " data requests, %" PRIu64
			" compressed clusters, %" PRIu64 " backing reads\n",
			qs.l2_hits, qs.l2_misses, qs.l2_evictions, qs.l2_table_reads,
			qs.data_requests, qs.compressed_clusters, qs.backing_reads);
}

/* struct cairn_http_stats' http_version (11, 2, 3; 0 before any response). */
static const char *http_version_name(long v)
{
	return v == 11 ? "1.1" : v == 2 ? "2" : v == 3 ? "3" : "none yet";
}

void cli_print_remote_stats(FILE *f, struct cairn_bdev *dev, const char *style)
{
	struct cairn_diskcache_stats ds;
	struct cairn_http_stats hs;
	int kv = !strcmp(style, "kv");

	if (cairn_bdev_http_stats(dev, &hs) == 0 && kv)
		fprintf(f, "http_requests %" PRIu64 "\nhttp_bytes %" PRIu64 "\nhttp_retries %"
			PRIu64 "\nhttp_failovers %" PRIu64 "\nhttp_timeouts %" PRIu64
			"\nhttp_changed %" PRIu64 "\nhttp_failed %" PRIu64 "\nhttp_origin %u\n"
			"http_version %ld\n",
			hs.requests, hs.bytes, hs.retries, hs.failovers, hs.timeouts, hs.changed,
			hs.failed, hs.origin, hs.http_version);
	else if (cairn_bdev_http_stats(dev, &hs) == 0) /* for people: HTTP/1.1, not 11 */
		fprintf(f, "http: %" PRIu64 " requests, %" PRIu64 " bytes, %" PRIu64 " retries, %"
			PRIu64 " failovers, %" PRIu64 " timeouts, %" PRIu64 " changed, %" PRIu64
			" failed reads; served by %s %u, HTTP/%s\n",
			hs.requests, hs.bytes, hs.retries, hs.failovers, hs.timeouts, hs.changed,
			hs.failed, hs.origin ? "mirror" : "the image's URL, origin", hs.origin,
			http_version_name(hs.http_version));
	if (cairn_bdev_diskcache_stats(dev, &ds) == 0)
		fprintf(f, kv ? "diskcache_hits %" PRIu64 "\ndiskcache_misses %" PRIu64
			"\ndiskcache_stored %" PRIu64 "\ndiskcache_evicted %" PRIu64
			"\ndiskcache_torn %" PRIu64 "\ndiskcache_write_errors %" PRIu64
			"\ndiskcache_used_bytes %" PRIu64 "\n"
			: "diskcache: %" PRIu64 " hits, %" PRIu64 " misses (chunks), %" PRIu64
			" stored, %" PRIu64 " evicted, %" PRIu64 " torn, %" PRIu64
			" write errors, %" PRIu64 " bytes used\n",
			ds.hits, ds.misses, ds.stored, ds.evicted, ds.torn, ds.write_errors,
			ds.used_bytes);
}

/*
 * Output that never reached stdout (a full disk, a closed pipe, > /dev/full) is a
 * failure, whatever the command thought: flush and close stdout here, once for
 * every command, and turn an error into exit 1 with a message.
 */
int cli_close_stdout(const char *cmd, int rc)
{
	int failed = ferror(stdout);

	errno = 0;
	if (fclose(stdout) || failed) {
		fprintf(stderr, "cairn%s%s: writing to stdout: %s\n", cmd ? " " : "", cmd ? cmd : "",
			errno ? strerror(errno) : "write error");
		return rc == CLI_EXIT_OK ? CLI_EXIT_FAIL : rc;
	}
	return rc;
}

static int same_char(char x, char y)
{
	return x == y || (strchr("-_", x) && strchr("-_", y));
}

/* Edit distance of a[0..n) and b[0..m) counting a swap of two neighbours as one
 * edit ("delya": delay), '-' and '_' alike; both at most 63 long. */
static unsigned edit_distance(const char *a, size_t n, const char *b, size_t m)
{
	unsigned d[64][64];

	for (size_t i = 0; i <= n; i++)
		d[i][0] = (unsigned)i;
	for (size_t j = 0; j <= m; j++)
		d[0][j] = (unsigned)j;
	for (size_t i = 1; i <= n; i++)
		for (size_t j = 1; j <= m; j++) {
			unsigned best = d[i - 1][j - 1] + !same_char(a[i - 1], b[j - 1]);

			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && same_char(a[i - 1], b[j - 2]) &&
			    same_char(a[i - 2], b[j - 1]) && d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	return d[n][m];
}

/* Is the token at t one the help text names as an option: at the start of a line
 * or after ", " or "; ", and a long option or followed by '=', ' ', ',' or ':'?
 * After ", " a word followed by a space is prose ("fail device reads, for
 * tests" made `-o foo` a typo of "for"): options in a comma list end at '=',
 * ',', ':' or the line's end. */
static int option_token(const char *help, const char *t, size_t n)
{
	const char *b = t;
	char after = t[n];

	while (b > help && b[-1] == ' ')
		b--;
	if (!(b == help || b[-1] == '\n' || (b[-1] == ',' || b[-1] == ';')))
		return 0;
	if (t[0] == '-')
		return 1;
	if (after == ' ')
		return b == help || b[-1] != ',';
	return after == '=' || after == ',' || after == ':' || after == '\n';
}

void cli_suggest(const char *help, const char *word, char *out, size_t len)
{
	size_t wn = strcspn(word, "="), best_n = 0;
	unsigned best = 3;
	const char *best_t = NULL;

	while (*word == '-')
		word++, wn--;
	if (len)
		out[0] = 0;
	if (!wn || wn > 63)
		return;
	for (const char *t = help; *t; ) {
		size_t n = strspn(t, "abcdefghijklmnopqrstuvwxyz0123456789_-");
		const char *k = t;
		size_t kn = n;
		unsigned d;

		if (!n) {
			t++;
			continue;
		}
		while (kn && *k == '-')
			k++, kn--;
		if (kn >= 2 && kn <= 63 && option_token(help, t, n) &&
		    (d = edit_distance(word, wn, k, kn)) < best && (d <= 1 || wn >= 6)) {
			best = d;
			best_t = t;
			best_n = n;
		}
		t += n;
	}
	if (!best_t || !len)
		return;
	if (best == 0 && best_t[best_n] == '=' && !word[wn])
		snprintf(out, len, ": %.*s needs a value (%.*s=...)", (int)best_n, best_t,
			 (int)best_n, best_t);
	else if (best == 0 && best_t[best_n] != '=' && word[wn] == '=')
		snprintf(out, len, ": %.*s takes no value", (int)best_n, best_t);
	else if (best > 0 || strncmp(word, best_t + strspn(best_t, "-"), wn))
		snprintf(out, len, ": did you mean '%.*s'?", (int)best_n, best_t);
}

