/* SPDX-License-Identifier: MIT */
/*
 * qcow2 bdev: opening. Parses and checks the header, the header extensions and
 * the L1 table, refuses what a read-only reader cannot honour, and opens the
 * backing chain. Every number read from the file is checked before it sizes an
 * allocation or a loop: a hostile header gets -CAIRN_ECORRUPT or -ENOTSUP, never a
 * crash or a huge malloc. The read path is in qcow2_read.c, the L2 cache in
 * qcow2_l2.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cairn/error.h>
#include "util/util_int.h"
#include "qcow2_int.h"

/* The header fields a reader uses, decoded. */
struct qcow2_header {
	uint32_t version;
	uint64_t backing_off;
	uint32_t backing_len;
	uint32_t cluster_bits;
	uint64_t size;
	uint32_t crypt_method;
	uint32_t l1_size;
	uint64_t l1_off;
	uint64_t incompat;
	uint32_t header_len;
	uint8_t compression;
};

/* What the header extensions said. */
struct qcow2_exts {
	char backing_fmt[32];   /* "" = not given */
	int has_crypto, has_data_file;
};

uint64_t qcow2_be64(const void *p)
{
	const uint8_t *b = p;
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | b[i];
	return v;
}

uint32_t qcow2_be32(const void *p)
{
	const uint8_t *b = p;

	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

void qcow2_report(const struct qcow2_dev *q, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!q->report)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	q->report(q->report_ctx, msg);
}

int cairn_bdev_qcow2_magic(const uint8_t head[4])
{
	return qcow2_be32(head) == QCOW2_MAGIC;
}

int cairn_bdev_is_qcow2(struct cairn_bdev *dev)
{
	uint8_t magic[4];
	ssize_t n = cairn_bdev_read(dev, magic, sizeof(magic), 0);

	if (n < 0)
		return (int)n;
	return n == 4 && cairn_bdev_qcow2_magic(magic);
}

static int parse_header(struct qcow2_dev *q, const uint8_t *h, size_t hlen,
			struct qcow2_header *hd)
{
	if (qcow2_be32(h) != QCOW2_MAGIC) {
		qcow2_report(q, "qcow2: bad magic");
		return -CAIRN_ECORRUPT;
	}
	hd->version = qcow2_be32(h + 4);
	if (hd->version != 2 && hd->version != 3) {
		qcow2_report(q, "qcow2: version %" PRIu32 " is not supported (only 2 and 3)",
			     hd->version);
		return -ENOTSUP;
	}
	hd->backing_off = qcow2_be64(h + 8);
	hd->backing_len = qcow2_be32(h + 16);
	hd->cluster_bits = qcow2_be32(h + 20);
	hd->size = qcow2_be64(h + 24);
	hd->crypt_method = qcow2_be32(h + 32);
	hd->l1_size = qcow2_be32(h + 36);
	hd->l1_off = qcow2_be64(h + 40);
	hd->incompat = 0;
	hd->header_len = QCOW2_V2_HEADER_LEN;
	hd->compression = QCOW2_ZLIB;
	if (hd->version == 3) {
		if (hlen < QCOW2_V3_HEADER_MIN) {
			qcow2_report(q, "qcow2: file too short for a version 3 header");
			return -CAIRN_ECORRUPT;
		}
		hd->incompat = qcow2_be64(h + 72);
		hd->header_len = qcow2_be32(h + 100);
		if (hd->header_len < QCOW2_V3_HEADER_MIN || hd->header_len % 8 ||
		    hd->header_len > hlen) {
			qcow2_report(q, "qcow2: bad header_length %" PRIu32, hd->header_len);
			return -CAIRN_ECORRUPT;
		}
		if (hd->header_len > 104)
			hd->compression = h[104];
	}
	return 0;
}

/* Refuse what this reader cannot present faithfully; the message says which. */
static int check_features(struct qcow2_dev *q, const struct qcow2_header *hd)
{
	uint64_t unknown = hd->incompat & ~QCOW2_INCOMPAT_KNOWN;

	if (hd->crypt_method != 0) {
		qcow2_report(q, "qcow2: encrypted images are not supported (crypt_method %" PRIu32
			     ")", hd->crypt_method);
		return -ENOTSUP;
	}
	if (unknown) {
		qcow2_report(q, "qcow2: unknown incompatible features 0x%" PRIx64, unknown);
		return -ENOTSUP;
	}
	if (hd->incompat & QCOW2_INCOMPAT_DATA_FILE) {
		qcow2_report(q, "qcow2: images with an external data file are not supported");
		return -ENOTSUP;
	}
	if (!(hd->incompat & QCOW2_INCOMPAT_COMPRESS) && hd->compression != QCOW2_ZLIB) {
		qcow2_report(q, "qcow2: compression_type %u set without its feature bit",
			     hd->compression);
		return -CAIRN_ECORRUPT;
	}
	if (hd->compression != QCOW2_ZLIB && hd->compression != QCOW2_ZSTD) {
		qcow2_report(q, "qcow2: unknown compression_type %u", hd->compression);
		return -ENOTSUP;
	}
	if (hd->incompat & QCOW2_INCOMPAT_CORRUPT)
		qcow2_report(q, "qcow2: warning: the image is marked corrupt; reading anyway");
	/* The dirty bit only says refcounts may be stale; a reader never uses them. */
	return 0;
}

static int check_geometry(struct qcow2_dev *q, const struct qcow2_header *hd)
{
	uint64_t cs, vclusters, l1_needed;
	int ext_l2 = !!(hd->incompat & QCOW2_INCOMPAT_EXTL2);

	if (hd->cluster_bits < 9 || hd->cluster_bits > 21 || (ext_l2 && hd->cluster_bits < 14)) {
		qcow2_report(q, "qcow2: cluster_bits %" PRIu32 " out of range (9..21, >= 14 "
			     "with extended L2)", hd->cluster_bits);
		return -CAIRN_ECORRUPT;
	}
	cs = 1ull << hd->cluster_bits;
	/* 2^62 keeps every "offset + length" and rounding below 2^64. */
	if (hd->size > (1ull << 62)) {
		qcow2_report(q, "qcow2: virtual size %" PRIu64 " too large", hd->size);
		return -CAIRN_ECORRUPT;
	}
	q->cluster_bits = hd->cluster_bits;
	q->cluster_size = cs;
	q->ext_l2 = ext_l2;
	q->entry_bytes = ext_l2 ? 16 : 8;
	q->l2_entries = cs / q->entry_bytes;
	vclusters = (hd->size + cs - 1) >> hd->cluster_bits;
	l1_needed = (vclusters + q->l2_entries - 1) / q->l2_entries;
	if (hd->l1_size < l1_needed) {
		qcow2_report(q, "qcow2: L1 table of %" PRIu32 " entries cannot map %" PRIu64
			     " bytes", hd->l1_size, hd->size);
		return -CAIRN_ECORRUPT;
	}
	if ((uint64_t)hd->l1_size * 8 > QCOW2_MAX_L1_BYTES) {
		qcow2_report(q, "qcow2: L1 table of %" PRIu32 " entries too large", hd->l1_size);
		return -CAIRN_ECORRUPT;
	}
	if (l1_needed && (hd->l1_off % cs || hd->l1_off > q->file_size ||
			  l1_needed * 8 > q->file_size - hd->l1_off)) {
		qcow2_report(q, "qcow2: L1 table at %" PRIu64 " is misaligned or outside the "
			     "file", hd->l1_off);
		return -CAIRN_ECORRUPT;
	}
	q->l1_count = l1_needed;
	q->version = hd->version;
	q->compression = (enum qcow2_compress)hd->compression;
	return 0;
}

/* Header extensions sit between the header and the end of the first cluster (or
 * the backing file name). Each is type, length, data padded to 8 bytes. */
static int parse_extensions(struct qcow2_dev *q, const struct qcow2_header *hd,
			    const uint8_t *h, size_t hlen, struct qcow2_exts *ex)
{
	size_t pos = hd->header_len;
	size_t end = hlen;

	memset(ex, 0, sizeof(*ex));
	if (hd->backing_off && hd->backing_off < end)
		end = (size_t)hd->backing_off;
	while (pos + 8 <= end) {
		uint32_t type = qcow2_be32(h + pos);
		uint32_t len = qcow2_be32(h + pos + 4);
		size_t padded = ((size_t)len + 7) & ~(size_t)7;

		pos += 8;
		if (type == QCOW2_EXT_END)
			break;
		if (len > end - pos || padded > end - pos) {
			qcow2_report(q, "qcow2: header extension 0x%08" PRIx32 " overruns the "
				     "header", type);
			return -CAIRN_ECORRUPT;
		}
		switch (type) {
		case QCOW2_EXT_BACKING_FMT:
			if (len >= sizeof(ex->backing_fmt)) {
				qcow2_report(q, "qcow2: backing format name too long");
				return -CAIRN_ECORRUPT;
			}
			memcpy(ex->backing_fmt, h + pos, len);
			ex->backing_fmt[len] = 0;
			break;
		case QCOW2_EXT_CRYPTO:
			ex->has_crypto = 1;
			break;
		case QCOW2_EXT_DATA_FILE:
			ex->has_data_file = 1;
			break;
		default: /* feature names, bitmaps and unknown ones: not needed to read */
			break;
		}
		pos += padded;
	}
	if (ex->has_crypto) {
		qcow2_report(q, "qcow2: encrypted images are not supported");
		return -ENOTSUP;
	}
	return 0;
}

static int load_l1(struct qcow2_dev *q, uint64_t l1_off)
{
	uint64_t i, max_off = q->file_size;
	uint8_t *raw;
	int rc;

	if (!q->l1_count)
		return 0;
	/* Bounded by QCOW2_MAX_L1_BYTES and by the file size (check_geometry). */
	raw = malloc(q->l1_count * 8);
	q->l1 = malloc(q->l1_count * sizeof(*q->l1));
	if (!raw || !q->l1) {
		free(raw);
		return -ENOMEM;
	}
	rc = cairn_bdev_read_full(q->base.below, raw, q->l1_count * 8, l1_off);
	if (rc < 0) {
		qcow2_report(q, "qcow2: cannot read the L1 table: %s", cairn_strerror(rc));
		free(raw);
		return rc;
	}
	for (i = 0; i < q->l1_count; i++) {
		uint64_t e = qcow2_be64(raw + i * 8);
		uint64_t l2 = e & QCOW2_OFFSET_MASK;

		/* Checked once here so lookups can trust every L2 offset. */
		if ((e & QCOW2_L1_RESERVED) || (l2 && (l2 % q->cluster_size ||
		    l2 > max_off || q->cluster_size > max_off - l2))) {
			qcow2_report(q, "qcow2: L1 entry %" PRIu64 " (0x%016" PRIx64 ") is "
				     "invalid or points outside the file", i, e);
			free(raw);
			return -CAIRN_ECORRUPT;
		}
		q->l1[i] = l2;
	}
	free(raw);
	return 0;
}

/* The chain of images being opened, for loop detection: canonical paths. */
struct qcow2_chain {
	const struct qcow2_chain *up;
	const char *path;
};

struct qcow2_open_args {
	const struct cairn_qcow2_config *cfg;
	unsigned depth, max_depth;
	const struct qcow2_chain *chain;
};

static int qcow2_open(struct cairn_bdev *below, const char *base_dir,
		      const struct qcow2_open_args *args, struct cairn_bdev **out);

static int default_open_backing(void *ctx, const char *path, struct cairn_bdev **out)
{
	(void)ctx;
	return cairn_bdev_file_open(path, 0, out);
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *d;

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	d = strndup(path, (size_t)(slash - path));
	return d;
}

static int open_backing_dev(struct qcow2_dev *q, const char *path, const char *fmt,
			    const struct qcow2_open_args *args)
{
	const struct cairn_qcow2_config *cfg = args->cfg;
	int (*opener)(void *, const char *, struct cairn_bdev **) =
		cfg && cfg->open_backing ? cfg->open_backing : default_open_backing;
	struct cairn_bdev *file = NULL;
	char *canon, *dir;
	struct qcow2_chain link;
	struct qcow2_open_args sub = *args;
	const char *kind;
	int rc, is_q;

	canon = realpath(path, NULL);
	if (!canon)
		canon = strdup(path);
	if (!canon)
		return -ENOMEM;
	for (const struct qcow2_chain *c = args->chain; c; c = c->up) {
		if (!strcmp(c->path, canon)) {
			qcow2_report(q, "qcow2: backing file loop at %s", canon);
			free(canon);
			return -ELOOP;
		}
	}
	if (args->depth + 1 > args->max_depth) {
		qcow2_report(q, "qcow2: backing chain deeper than %u at %s", args->max_depth,
			     canon);
		free(canon);
		return -ELOOP;
	}
	rc = opener(cfg ? cfg->open_ctx : NULL, path, &file);
	if (rc == -EINVAL && (kind = util_unreadable_kind(path))) {
		qcow2_report(q, "qcow2: backing file %s is %s", path, kind);
		free(canon);
		return rc;
	}
	if (rc < 0) {
		qcow2_report(q, "qcow2: cannot open backing file %s: %s", path,
			     cairn_strerror(rc));
		free(canon);
		return rc;
	}
	is_q = cairn_bdev_is_qcow2(file);
	if (fmt[0] && strcmp(fmt, "raw") && strcmp(fmt, "qcow2")) {
		qcow2_report(q, "qcow2: backing format '%s' of %s is not supported", fmt, path);
		rc = -ENOTSUP;
	} else if (!strcmp(fmt, "raw") || (!fmt[0] && is_q == 0)) {
		q->backing = file; /* raw backing file */
		file = NULL;
		rc = 0;
	} else if (is_q <= 0) {
		qcow2_report(q, "qcow2: backing file %s is not qcow2", path);
		rc = is_q < 0 ? is_q : -CAIRN_ECORRUPT;
	} else {
		dir = dir_of(canon);
		link.up = args->chain;
		link.path = canon;
		sub.chain = &link;
		sub.depth = args->depth + 1;
		rc = dir ? qcow2_open(file, dir, &sub, &q->backing) : -ENOMEM;
		free(dir);
		if (rc == 0)
			file = NULL;
	}
	cairn_bdev_close(file);
	free(canon);
	return rc;
}

static int read_backing_name(struct qcow2_dev *q, const struct qcow2_header *hd,
			     char *name)
{
	int rc;

	if (hd->backing_len == 0 || hd->backing_len > QCOW2_BACKING_NAME_MAX ||
	    hd->backing_off > q->cluster_size ||
	    hd->backing_len > q->cluster_size - hd->backing_off ||
	    hd->backing_off + hd->backing_len > q->file_size) {
		qcow2_report(q, "qcow2: backing file name (%" PRIu32 " bytes at %" PRIu64
			     ") is invalid", hd->backing_len, hd->backing_off);
		return -CAIRN_ECORRUPT;
	}
	rc = cairn_bdev_read_full(q->base.below, name, hd->backing_len, hd->backing_off);
	if (rc < 0)
		return rc;
	name[hd->backing_len] = 0;
	if (strlen(name) != hd->backing_len) {
		qcow2_report(q, "qcow2: backing file name holds a NUL byte");
		return -CAIRN_ECORRUPT;
	}
	return 0;
}

static void qcow2_close(struct cairn_bdev *dev)
{
	struct qcow2_dev *q = (struct qcow2_dev *)dev;

	qcow2_l2cache_destroy(q);
	qcow2_decomp_destroy(q);
	cairn_bdev_close(q->backing);
	cairn_bdev_close(q->base.below);
	free(q->l1);
	free(q);
}

static const struct cairn_bdev_ops qcow2_ops = {
	.version = CAIRN_BDEV_OPS_VERSION,
	.name = "qcow2",
	.read = qcow2_read,
	.close = qcow2_close,
};

/* Frees what qcow2_open built but leaves `below` to the caller. */
static void qcow2_abort(struct qcow2_dev *q)
{
	q->base.below = NULL;
	qcow2_close(&q->base);
}

static int qcow2_setup(struct qcow2_dev *q, const char *base_dir,
		       const struct qcow2_open_args *args)
{
	const struct cairn_qcow2_config *cfg = args->cfg;
	struct qcow2_header hd = { 0 };
	struct qcow2_exts ex = { 0 };
	uint8_t *h;
	size_t hlen;
	char name[QCOW2_BACKING_NAME_MAX + 1];
	int rc;

	/* The header and its extensions live in the first cluster (at most 2 MiB);
	 * read 64 KiB first, which covers every header qemu-img writes, then the
	 * rest of the first cluster if cluster_bits says it is larger. */
	hlen = q->file_size < 65536 ? (size_t)q->file_size : 65536;
	if (hlen < QCOW2_V2_HEADER_LEN) {
		qcow2_report(q, "qcow2: file too short for a header");
		return -CAIRN_ECORRUPT;
	}
	h = malloc(hlen);
	if (!h)
		return -ENOMEM;
	rc = cairn_bdev_read_full(q->base.below, h, hlen, 0);
	if (rc == 0)
		rc = parse_header(q, h, hlen, &hd);
	if (rc == 0)
		rc = check_features(q, &hd);
	if (rc == 0)
		rc = check_geometry(q, &hd);
	if (rc == 0 && q->cluster_size < hlen)
		hlen = (size_t)q->cluster_size;
	if (rc == 0)
		rc = parse_extensions(q, &hd, h, hlen, &ex);
	free(h);
	if (rc < 0)
		return rc;
	if (ex.has_data_file) {
		qcow2_report(q, "qcow2: images with an external data file are not supported");
		return -ENOTSUP;
	}
	rc = load_l1(q, hd.l1_off);
	if (rc < 0)
		return rc;
	q->base.size = hd.size;
	q->cache_disabled = cfg && cfg->l2_cache_disabled;
	q->slice_bytes = cfg && cfg->l2_slice_bytes ? cfg->l2_slice_bytes : QCOW2_DEFAULT_SLICE;
	if (q->slice_bytes < 512 || (q->slice_bytes & (q->slice_bytes - 1)))
		return -EINVAL;
	if (q->slice_bytes > q->cluster_size)
		q->slice_bytes = (size_t)q->cluster_size;
	q->slice_entries = q->slice_bytes / q->entry_bytes;
	rc = qcow2_l2cache_init(q, cfg && cfg->l2_cache_bytes ? cfg->l2_cache_bytes
					: QCOW2_DEFAULT_L2_CACHE);
	if (rc == 0)
		rc = qcow2_decomp_init(q);
	if (rc < 0 || !hd.backing_off)
		return rc;
	rc = read_backing_name(q, &hd, name);
	if (rc < 0)
		return rc;
	if (!base_dir) {
		qcow2_report(q, "qcow2: backing file '%s' given but no directory to find it in",
			     name);
		return -ENOTSUP;
	}
	{
		char *path = util_path_resolve_in(base_dir, name);

		if (!path)
			return -ENOMEM;
		rc = open_backing_dev(q, path, ex.backing_fmt, args);
		free(path);
	}
	return rc;
}

static int qcow2_open(struct cairn_bdev *below, const char *base_dir,
		      const struct qcow2_open_args *args, struct cairn_bdev **out)
{
	const struct cairn_qcow2_config *cfg = args->cfg;
	struct qcow2_dev *q = calloc(1, sizeof(*q));
	int rc;

	if (!q)
		return -ENOMEM;
	q->base.ops = &qcow2_ops;
	q->base.below = below;
	q->file_size = cairn_bdev_size(below);
	q->report = cfg ? cfg->report : NULL;
	q->report_ctx = cfg ? cfg->report_ctx : NULL;
	pthread_mutex_init(&q->cache.lock, NULL);
	pthread_mutex_init(&q->zlock, NULL);
	rc = qcow2_setup(q, base_dir, args);
	if (rc < 0) {
		qcow2_abort(q);
		return rc;
	}
	q->report = NULL; /* the hook is only promised to live while we open */
	*out = &q->base;
	return 0;
}

int cairn_bdev_qcow2_new(struct cairn_bdev *below, const char *base_dir,
			 const struct cairn_qcow2_config *cfg, struct cairn_bdev **out)
{
	struct qcow2_open_args args = {
		.cfg = cfg,
		.depth = 0,
		.max_depth = cfg && cfg->max_backing_depth ? cfg->max_backing_depth
							   : QCOW2_DEFAULT_DEPTH,
		.chain = NULL,
	};

	if (!below || !out)
		return -EINVAL;
	return qcow2_open(below, base_dir, &args, out);
}

int cairn_bdev_qcow2_stats(struct cairn_bdev *dev, struct cairn_qcow2_stats *out)
{
	struct qcow2_dev *q;

	while (dev && dev->ops != &qcow2_ops)
		dev = dev->below;
	if (!dev)
		return -EINVAL;
	q = (struct qcow2_dev *)dev;
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&q->cache.lock);
	out->l2_hits = q->cache.hits;
	out->l2_misses = q->cache.misses;
	out->l2_evictions = q->cache.evictions;
	out->l2_resident_bytes = (uint64_t)q->cache.count * q->slice_bytes;
	pthread_mutex_unlock(&q->cache.lock);
	out->l2_table_reads = atomic_load(&q->l2_table_reads);
	out->data_requests = atomic_load(&q->data_requests);
	out->compressed_clusters = atomic_load(&q->compressed_clusters);
	out->backing_reads = atomic_load(&q->backing_reads);
	return 0;
}
