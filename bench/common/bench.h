/* SPDX-License-Identifier: MIT */
/*
 * What every bench tool (bench/<tool>/main.c) needs: option values (sizes,
 * durations) and the monotonic clock. Header-only, so each tool stays one
 * source file and the Makefile's bench/<tool>/main.c rule builds it as is.
 * Include as "../common/bench.h".
 */
#ifndef CAIRN_BENCH_COMMON_H
#define CAIRN_BENCH_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "64M", "4k", "4096": a whole number of bytes with an optional k/m/g (binary)
 * suffix. 0 on success, -EINVAL on anything else (*out is then left alone). */
static inline int bench_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "1ms", "250us", "2s", "100ns"; a bare number is microseconds. Rounded to
 * the nearest nanosecond. 0 on success, -EINVAL on anything else. */
static inline int bench_parse_duration_ns(const char *s, uint64_t *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -EINVAL;
	if (*end == '\0' || strcmp(end, "us") == 0)
		v *= 1e3;
	else if (strcmp(end, "ms") == 0)
		v *= 1e6;
	else if (strcmp(end, "s") == 0)
		v *= 1e9;
	else if (strcmp(end, "ns") != 0)
		return -EINVAL;
	*out = (uint64_t)(v + 0.5);
	return 0;
}

#endif /* CAIRN_BENCH_COMMON_H */
