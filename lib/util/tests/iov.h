/* SPDX-License-Identifier: MIT */
/* For tests of readers that lend bytes as iovecs (cairn_iov_fn): what they lent. */
#ifndef CAIRN_TEST_IOV_H
#define CAIRN_TEST_IOV_H

#include <stddef.h>
#include <string.h>
#include <sys/uio.h>

/* The iovecs' bytes, in order, into buf of cap bytes: how many, or (size_t)-1
 * when they do not fit. */
static inline size_t t_iov_gather(void *buf, size_t cap, const struct iovec *iov, int iovcnt)
{
	size_t at = 0;

	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > cap - at)
			return (size_t)-1;
		memcpy((char *)buf + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	return at;
}

/* 1 when the iovecs' bytes, in order, are exactly want[0, len). */
static inline int t_iov_equal(const struct iovec *iov, int iovcnt, const void *want, size_t len)
{
	size_t at = 0;

	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > len - at ||
		    memcmp(iov[i].iov_base, (const char *)want + at, iov[i].iov_len))
			return 0;
		at += iov[i].iov_len;
	}
	return at == len;
}

#endif
