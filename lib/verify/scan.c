/* SPDX-License-Identifier: MIT */
/*
 * The whole-image check behind `cairn digest` and `cairn fsck`: recompute the
 * root from the bytes, then check the table against block 0 and every granule
 * against the table, reading the image front to back in large requests.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cairn/error.h>
#include "verify/verify_int.h"

#define SCAN_IO (4u << 20) /* bytes per read, or one granule when they are larger */

struct scan {
	const struct cairn_verity *v;
	const uint8_t *table;
	cairn_verify_report_cb report;
	void *ctx;
	long problems;
};

static void problem(struct scan *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct scan *s, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	s->problems++;
	if (!s->report)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->report(s->ctx, msg);
}

static int scan_granules(struct cairn_bdev *dev, struct scan *s, uint8_t *buf)
{
	const struct cairn_verity *v = s->v;
	uint64_t per = cairn_verity_run_granules(v, SCAN_IO);

	for (uint64_t g = 0; g < v->granule_count; g += per) {
		uint64_t n = v->granule_count - g < per ? v->granule_count - g : per;
		uint64_t off = g << v->granule_shift;
		uint64_t len = v->image_size - off < n * v->granule ? v->image_size - off
								   : n * v->granule;
		int rc = cairn_bdev_read_full(dev, buf, (size_t)len, off);

		if (rc)
			return rc;
		for (uint64_t i = 0; i < n; i++) {
			uint8_t d[CAIRN_DIGEST_LEN];

			cairn_verity_granule_digest(v, g + i, buf + (i << v->granule_shift), d);
			if (memcmp(d, s->table + (g + i) * CAIRN_DIGEST_LEN, CAIRN_DIGEST_LEN))
				problem(s, "granule %llu (bytes %llu..%llu): digest mismatch",
					(unsigned long long)(g + i),
					(unsigned long long)((g + i) << v->granule_shift),
					(unsigned long long)(((g + i) << v->granule_shift) +
							     cairn_verity_granule_len(v, g + i) - 1));
		}
	}
	return 0;
}

long cairn_verify_scan(struct cairn_bdev *dev, uint8_t root[CAIRN_DIGEST_LEN],
		       cairn_verify_report_cb report, void *ctx)
{
	uint8_t block0[CAIRN_BLOCK_SIZE];
	struct scan s = { NULL, NULL, report, ctx, 0 };
	struct cairn_verity v;
	uint8_t *table = NULL, *buf = NULL;
	char why[192];
	int rc = cairn_bdev_read_full(dev, block0, sizeof(block0), 0);

	if (rc)
		return rc;
	cairn_sha256(block0, sizeof(block0), root);
	rc = cairn_verity_decode(block0, &v, why, sizeof(why));
	if (rc == -CAIRN_ECORRUPT || rc == -CAIRN_ENOTIMAGE) {
		problem(&s, "%s", why);
		return s.problems;
	}
	if (rc)
		return rc;
	if (v.image_size > cairn_bdev_size(dev)) {
		problem(&s, "image is truncated: %llu bytes, the superblock says %llu",
			(unsigned long long)cairn_bdev_size(dev), (unsigned long long)v.image_size);
		return s.problems;
	}
	rc = cairn_verity_read_table(dev, &v, NULL, 0, &table);
	if (rc == -CAIRN_ECORRUPT) {
		problem(&s, "digest table does not match its digest in block 0");
		return s.problems;
	}
	if (rc)
		return rc;
	s.v = &v;
	s.table = table;
	if (!(buf = malloc(cairn_verity_run_bytes(&v, SCAN_IO))))
		rc = -ENOMEM;
	else
		rc = scan_granules(dev, &s, buf);
	free(buf);
	free(table);
	return rc ? rc : s.problems;
}
