/* SPDX-License-Identifier: MIT */
/* For tests: which sanitizer the build runs under (gcc defines __SANITIZE_*,
 * clang answers __has_feature). TEST_ASAN, TEST_TSAN, and TEST_SANITIZED for
 * either: tests that count memory or hook malloc need to know, since the
 * sanitizers keep shadow memory of their own and interpose the allocator. */
#ifndef CAIRN_TEST_SANITIZER_H
#define CAIRN_TEST_SANITIZER_H

#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(TEST_ASAN)
#define TEST_ASAN 1
#endif
#if __has_feature(thread_sanitizer) && !defined(TEST_TSAN)
#define TEST_TSAN 1
#endif
#endif
#if defined(TEST_ASAN) || defined(TEST_TSAN)
#define TEST_SANITIZED 1
#endif

#endif
