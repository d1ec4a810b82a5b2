/* SPDX-License-Identifier: MIT */
/* The multipart/byteranges parser: good answers fed whole and a byte at a time
 * (parts in any order, quoted boundaries, part bytes that hold the boundary),
 * and hostile ones (bad boundary, unknown or repeated or overlong ranges, a
 * wrong total, short parts, no close delimiter, endless lines) fail without a
 * byte written outside the entries' buffers; the Content-Range parser alone. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "remote/multipart.h"

#define SIZE 1000
#define B "--xyz"

static uint8_t buf[3][16];
static struct cairn_bdev_iov v[3];

static void reset(void)
{
	memset(buf, 0xee, sizeof(buf));
	/* 4 bytes at 10, 5 at 500, 3 at 997: the buffers have room to spare */
	v[0] = (struct cairn_bdev_iov){ buf[0], 4, 10 };
	v[1] = (struct cairn_bdev_iov){ buf[1], 5, 500 };
	v[2] = (struct cairn_bdev_iov){ buf[2], 3, 997 };
}

/* Feeds body whole or byte by byte; returns mp_feed's first failure or mp_finish. */
static int parse(const char *ctype, const char *body, size_t len, int bytewise)
{
	struct mp_parser p;
	int rc = mp_init(&p, ctype, v, 3, SIZE);

	if (rc)
		return rc;
	if (!bytewise)
		rc = mp_feed(&p, (const uint8_t *)body, len);
	for (size_t i = 0; bytewise && i < len && !rc; i++)
		rc = mp_feed(&p, (const uint8_t *)body + i, 1);
	return rc ? rc : mp_finish(&p);
}

static void no_overrun(void)
{
	for (int i = 0; i < 3; i++)
		for (size_t k = v[i].len; k < sizeof(buf[i]); k++)
			assert_int_equal(buf[i][k], 0xee);
}

#define PART(a, b, data) "\r\n" B "\r\nContent-Type: application/octet-stream\r\n" \
	"Content-Range: bytes " #a "-" #b "/1000\r\n\r\n" data
#define GOOD PART(500, 504, "--xyz") PART(10, 13, "abcd") PART(997, 999, "\r\n-") "\r\n" B "--\r\n"

static void test_good(void **state)
{
	static const char *ctypes[] = { "multipart/byteranges; boundary=xyz",
					"Multipart/Byteranges;boundary=\"xyz\"",
					"multipart/byteranges; charset=x; boundary=xyz; q=1" };

	(void)state;
	for (int bytewise = 0; bytewise < 2; bytewise++)
		for (int c = 0; c < 3; c++) {
			reset();
			assert_int_equal(parse(ctypes[c], GOOD "epilogue", strlen(GOOD) + 8, bytewise), 0);
			assert_memory_equal(buf[0], "abcd", 4);
			assert_memory_equal(buf[1], "--xyz", 5);
			assert_memory_equal(buf[2], "\r\n-", 3);
			no_overrun();
		}
}

static void test_not_multipart(void **state)
{
	struct mp_parser p;

	(void)state;
	reset();
	assert_int_equal(mp_init(&p, "application/octet-stream", v, 3, SIZE), -ENOTSUP);
	assert_int_equal(mp_init(&p, NULL, v, 3, SIZE), -ENOTSUP);
	assert_int_equal(mp_init(&p, "multipart/byterangesX; boundary=a", v, 3, SIZE), -ENOTSUP);
	assert_int_equal(mp_init(&p, "multipart/byteranges", v, 3, SIZE), -EIO);
	assert_int_equal(mp_init(&p, "multipart/byteranges; boundary=", v, 3, SIZE), -EIO);
	assert_int_equal(mp_init(&p, "multipart/byteranges; boundary=\"ab", v, 3, SIZE), -EIO);
	assert_int_equal(mp_init(&p, "multipart/byteranges; xboundary=ab", v, 3, SIZE), -EIO);
	assert_int_equal(mp_init(&p, "multipart/byteranges; boundary="
				 "0123456789012345678901234567890123456789012345678901234567890123456789x",
				 v, 3, SIZE), -EIO);
	assert_int_equal(mp_init(&p, "multipart/byteranges; boundary=a", v, 0, SIZE), -EINVAL);
	assert_int_equal(mp_init(&p, "multipart/byteranges; boundary=a", v, MP_MAX_RANGES + 1,
				 SIZE), -EINVAL);
}

static void test_hostile(void **state)
{
	static const char *bodies[] = {
		/* another boundary */
		"\r\n--xyq\r\nContent-Range: bytes 10-13/1000\r\n\r\nabcd\r\n--xyq--\r\n",
		/* a range not asked (one byte longer than the entry: would overrun) */
		PART(10, 14, "abcde") PART(500, 504, "12345") PART(997, 999, "xyz") "\r\n" B "--\r\n",
		/* a range shifted by one */
		PART(11, 14, "abcd") PART(500, 504, "12345") PART(997, 999, "xyz") "\r\n" B "--\r\n",
		/* the same range twice */
		PART(10, 13, "abcd") PART(10, 13, "abcd") PART(997, 999, "xyz") "\r\n" B "--\r\n",
		/* a wrong total (another file) */
		"\r\n" B "\r\nContent-Range: bytes 10-13/999\r\n\r\nabcd",
		/* no Content-Range */
		"\r\n" B "\r\nContent-Type: x\r\n\r\nabcd",
		/* two Content-Ranges */
		"\r\n" B "\r\nContent-Range: bytes 10-13/1000\r\nContent-Range: bytes 10-13/1000\r\n\r\n",
		/* garbage in the range */
		"\r\n" B "\r\nContent-Range: bytes 13-10/1000\r\n\r\n",
		"\r\n" B "\r\nContent-Range: bytes 10-13/1000x\r\n\r\n",
		/* junk instead of the next delimiter */
		PART(10, 13, "abcdjunk") PART(500, 504, "12345") PART(997, 999, "xyz") "\r\n" B "--\r\n",
		/* the close delimiter first */
		"\r\n" B "--\r\n",
		/* a part missing (close delimiter after two) */
		PART(10, 13, "abcd") PART(500, 504, "12345") "\r\n" B "--\r\n",
		/* short: the body ends inside a part */
		PART(10, 13, "abcd") PART(500, 504, "12345") PART(997, 999, "x"),
		/* no close delimiter */
		PART(10, 13, "abcd") PART(500, 504, "12345") PART(997, 999, "xyz") "\r\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
		for (int bytewise = 0; bytewise < 2; bytewise++) {
			reset();
			assert_int_equal(parse("multipart/byteranges; boundary=xyz", bodies[i],
					       strlen(bodies[i]), bytewise), -EIO);
			no_overrun();
		}
}

/* A header line without end, or a preamble without end, is refused within its cap. */
static void test_endless_lines(void **state)
{
	static char body[3 * MP_PREAMBLE_MAX];
	struct mp_parser p;

	(void)state;
	reset();
	memset(body, 'a', sizeof(body));
	assert_int_equal(mp_init(&p, "multipart/byteranges; boundary=xyz", v, 3, SIZE), 0);
	assert_int_equal(mp_feed(&p, (const uint8_t *)body, MP_LINE_MAX), -EIO);
	for (size_t i = 0; i < sizeof(body); i += 2)
		memcpy(body + i, "a\n", 2);
	assert_int_equal(mp_init(&p, "multipart/byteranges; boundary=xyz", v, 3, SIZE), 0);
	assert_int_equal(mp_feed(&p, (const uint8_t *)body, sizeof(body)), -EIO);
	no_overrun();
}

/* The Content-Range parser both the single-range and the multipart answers use:
 * what RFC 9110 allows, and nothing sscanf's %llu would also take (a sign, a
 * number past 2^64-1 wrapped or saturated, no space after "bytes"). */
static void test_content_range(void **state)
{
	static const char *bad[] = {
		"", "bytes", "bytes 1-2", "bytes 1-2/", "bytes1-2/3", "bits 1-2/3",
		"bytes -1-2/3", "bytes +1-2/3", "bytes 1--2/3", "bytes 1-2/-3", "bytes 1-2/+3",
		"bytes 0-18446744073709551615/0", /* last + 1 wraps to the total */
		"bytes 0-1/18446744073709551616", "bytes 0-99999999999999999999999/1",
		"bytes 2-1/3", "bytes 1-3/3", "bytes 1-2/3x", "bytes 1-2/3 4", "bytes 1-2/**",
		"bytes */3", "bytes 1 -2/3", "bytes 0x1-2/3",
	};
	struct content_range r;

	(void)state;
	assert_int_equal(content_range_parse("bytes 10-13/1000", &r), 0);
	assert_true(r.first == 10 && r.last == 13 && r.total == 1000 && r.total_known);
	assert_int_equal(content_range_parse(" \tBYTES\t 0-0/1 \t", &r), 0);
	assert_true(r.first == 0 && r.last == 0 && r.total == 1 && r.total_known);
	assert_int_equal(content_range_parse("bytes 5-18446744073709551615/*", &r), 0);
	assert_true(r.first == 5 && r.last == UINT64_MAX && !r.total_known);
	assert_int_equal(content_range_parse("bytes 0-18446744073709551614/18446744073709551615",
					     &r), 0);
	assert_true(r.last == UINT64_MAX - 1 && r.total == UINT64_MAX);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (content_range_parse(bad[i], &r) != -EIO)
			fail_msg("accepted Content-Range \"%s\"", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_not_multipart),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_endless_lines),
		cmocka_unit_test(test_content_range),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
