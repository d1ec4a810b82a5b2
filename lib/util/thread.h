/* SPDX-License-Identifier: MIT */
/* Starting the library's own threads (not part of the public API). */
#ifndef CAIRN_UTIL_THREAD_H
#define CAIRN_UTIL_THREAD_H

#include <pthread.h>

/* pthread_create() for a thread of libcairn's (cache workers, fsck passes, mkfs
 * compressors, HTTP helpers): it starts with every asynchronous signal blocked,
 * so the program's signals go to the program's threads. A handler that only
 * sets a flag (libfuse's SIGTERM handler does) needs to run on a thread that
 * then looks at it; run on a library worker it was lost, and the program never
 * noticed (a daemon stayed mounted after SIGTERM). Faults (SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL, SIGTRAP) stay deliverable, so crashes still reach the
 * program's and the sanitizers' handlers. Returns pthread_create's value. */
int util_thread_create(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
