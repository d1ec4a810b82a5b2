/* SPDX-License-Identifier: MIT */
/*
 * Remote images: the `http` bdev (HTTP/HTTPS range requests through libcurl; S3
 * is HTTP signed with SigV4) and the `diskcache` bdev (a persistent, bounded,
 * crash-safe local cache of device bytes). Both are ordinary bdevs
 * (include/cairn/bdev.h), so everything above them is unchanged:
 *   segment cache -> [verify] -> diskcache -> stats -> [delay] -> http
 *
 * Ownership: cairn_bdev_http_new() makes a leaf device (the caller owns it,
 * closed with cairn_bdev_close()); the strings in the config are copied.
 * cairn_bdev_diskcache_new() takes `below` on success only.
 */
#ifndef CAIRN_REMOTE_H
#define CAIRN_REMOTE_H

#include <stddef.h>
#include <stdint.h>
#include <cairn/bdev.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when path is an http://, https:// or s3:// URL (case-insensitive scheme). */
int cairn_url_is_remote(const char *path);

/* One server holding the image. aws_sigv4/userpwd/session_token are for S3
 * (NULL for plain HTTP): curl's "aws:amz:REGION:s3" and "KEY_ID:SECRET". */
struct cairn_http_origin {
	const char *url;
	const char *aws_sigv4;
	const char *userpwd;
	const char *session_token;
};

struct cairn_http_config {
	const struct cairn_http_origin *origins; /* the first is the primary, then mirrors */
	unsigned n_origins;                       /* 1..CAIRN_HTTP_MAX_ORIGINS */
	unsigned connections;      /* parallel kept-alive connections; 0 = 4 (max 64) */
	uint64_t timeout_ns;       /* a read fails with EIO at most this long after it
				      starts, retries included; 0 = 10 s */
	uint64_t connect_timeout_ns; /* per attempt; 0 = min(timeout, 5 s) */
	unsigned retries;          /* attempts after the first; 0 = 4; CAIRN_HTTP_NO_RETRY = none */
	uint64_t backoff_ns;       /* first retry delay, doubled per retry (cap 2 s); 0 = 100 ms */
	uint64_t low_speed_bps;    /* an attempt slower than this for low_speed_ns fails;
				      0 = 1024 B/s */
	uint64_t low_speed_ns;     /* 0 = min(timeout, 5 s), whole seconds (curl's unit) */
	size_t head_bytes;         /* bytes fetched by the first request and served from
				      memory after it; 0 = 128 KiB */
	const char *proxy;         /* NULL: curl's environment (http_proxy, https_proxy,
				      no_proxy); "" = no proxy */
	int insecure;              /* skip TLS certificate and host verification */
	const char *cacert;        /* trust the CA certificates in this PEM file */
	int http1;                 /* never negotiate HTTP/2 */
	/* Receives one line saying why cairn_bdev_http_new() failed (may be NULL). */
	void (*report)(void *ctx, const char *msg);
	void *report_ctx;
};
#define CAIRN_HTTP_MAX_ORIGINS 16
#define CAIRN_HTTP_NO_RETRY    (~0u)

/* Opens the image at origins[0]: one range request learns the size, the
 * validator (ETag, else Last-Modified) and the first head_bytes. A mirror is
 * first used only if its first head_bytes equal the primary's. Reads are range
 * requests; a size or validator change gives -EIO (never mixed data). Errors:
 * -EINVAL for a bad config, -ENOENT (404), -EACCES (401/403), -ENOTSUP when the
 * server ignores range requests, -EIO otherwise; `report` hears why. */
int cairn_bdev_http_new(const struct cairn_http_config *cfg, struct cairn_bdev **out);

struct cairn_http_stats {
	uint64_t requests;    /* HTTP requests sent (attempts, the probe included) */
	uint64_t bytes;       /* body bytes received */
	uint64_t retries;     /* attempts after a failed one */
	uint64_t failovers;   /* switches to another origin */
	uint64_t timeouts;    /* attempts that hit a time limit */
	uint64_t changed;     /* responses refused because the image changed */
	uint64_t failed;      /* reads that returned an error */
	unsigned origin;      /* the origin now in use (index into origins) */
	long http_version;    /* of the last response: 11, 2 (curl's CURL_HTTP_VERSION_*) */
};
/* dev may be the http device or any device stacked above it; -EINVAL if none. */
int cairn_bdev_http_stats(struct cairn_bdev *dev, struct cairn_http_stats *out);

/* s3://BUCKET/KEY -> an origin. Settings left NULL come from the environment
 * (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_REGION, AWS_DEFAULT_REGION,
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE) and
 * then the shared credentials file (AWS_SHARED_CREDENTIALS_FILE or
 * ~/.aws/credentials). Region defaults to us-east-1; the endpoint to
 * https://BUCKET.s3.REGION.amazonaws.com/KEY, and a given endpoint is used path
 * style (ENDPOINT/BUCKET/KEY). KEY is escaped into the URL as SigV4's canonical
 * URI for S3 has it (each byte but A-Z a-z 0-9 - . _ ~ / as %XX, once).
 * Without credentials the request goes unsigned.
 * The strings are written into `store` (freed with free()). */
struct cairn_s3_config {
	const char *endpoint, *region, *profile;
	const char *access_key, *secret_key, *session_token;
};
int cairn_s3_origin(const char *s3url, const struct cairn_s3_config *cfg,
		    struct cairn_http_origin *out, char **store);

/* diskcache: device bytes kept in DIR/<key>/ as checksummed chunk files.
 * Everything under DIR (all images) stays within max_bytes: chunks are evicted
 * least recently used first. A chunk is written to a temporary name, then
 * renamed, under an flock of DIR/.lock, so two processes can share DIR; its
 * header holds the length and an XXH3 checksum, so a chunk torn by a crash is
 * found at read, deleted and fetched again. */
struct cairn_diskcache_config {
	const char *dir;          /* created if missing */
	const char *key;          /* names the image's subdirectory ([A-Za-z0-9._-]) */
	uint64_t max_bytes;       /* 0 = 1 GiB */
	size_t chunk_bytes;       /* power of two 4 KiB..16 MiB; 0 = 128 KiB */
};
int cairn_bdev_diskcache_new(struct cairn_bdev *below, const struct cairn_diskcache_config *cfg,
			     struct cairn_bdev **out);

struct cairn_diskcache_stats {
	uint64_t hits, misses;    /* chunks served from disk / fetched from below */
	uint64_t stored, evicted; /* chunks written / deleted to stay within max_bytes */
	uint64_t torn;            /* chunks that failed their checksum and were dropped */
	uint64_t write_errors;    /* chunks that could not be stored (served anyway) */
	uint64_t used_bytes;      /* of DIR as of the last store or eviction */
};
int cairn_bdev_diskcache_stats(struct cairn_bdev *dev, struct cairn_diskcache_stats *out);

/* The path of a file the disk cache's directory keeps about this image beside
 * its chunks, "DIR/KEY" followed by suffix (the mount's learned profile is
 * DIR/KEY.profile). Such files are not chunks: they do not count in max_bytes
 * and eviction leaves them. dev may be the disk cache device or any device
 * stacked above it; -EINVAL if there is none, -ENAMETOOLONG. */
int cairn_bdev_diskcache_file(struct cairn_bdev *dev, const char *suffix, char *out,
			      size_t out_len);

/* Offline opens: cairn_diskcache_remember() notes that `url` was the image with
 * this key and size (DIR/.origins/HASH, written to a tmp name and renamed);
 * cairn_bdev_diskcache_offline() then opens a disk cache device for url from
 * that note, over a device that fails every read with -EIO, so what DIR holds
 * is served while the server cannot be reached (possibly an older version of
 * the image than the server has now). -ENOENT when nothing was noted. */
int cairn_diskcache_remember(const char *dir, const char *url, const char *key, uint64_t size);
int cairn_bdev_diskcache_offline(const struct cairn_diskcache_config *cfg, const char *url,
				 struct cairn_bdev **out);

/* The disk cache key of an image: "UUID-SIZE-HEADHASH" from its first bytes (the
 * superblock), so a changed image never meets the old one's chunks. */
int cairn_diskcache_key(struct cairn_bdev *dev, char *out, size_t out_len);

#ifdef __cplusplus
}
#endif

#endif
