/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include "util/thread.h"

int util_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
	static const int faults[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP };
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	for (unsigned i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigdelset(&all, faults[i]);
	/* The new thread inherits the creator's mask: block, create, restore. */
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}
