/*
 * Threads that take no signal (common/quiet_thread.h).
 */
#include <errno.h>
#include <signal.h>

#include "common/quiet_thread.h"

int xflow_thread_create_quiet(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	sigfillset(&all);
	int rc = pthread_sigmask(SIG_SETMASK, &all, &old);
	if (rc)
		return -rc;
	rc = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -rc;
}
