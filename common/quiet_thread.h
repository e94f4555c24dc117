/*
 * common/quiet_thread.h — threads that take no signal.
 *
 * A process-directed signal goes to any thread that does not block it.
 * The monitor's signals (quit, resize, snapshot) are for its loop, which
 * handles them, and blocks them while it shuts down (tui/app.c); a helper
 * thread that did not block them would get them with their default
 * action, which for most of them kills.  A thread started here blocks
 * every signal from its first instruction: it inherits the mask set
 * around its creation, and the creator's own is restored after.
 */
#ifndef XFLOW_COMMON_QUIET_THREAD_H
#define XFLOW_COMMON_QUIET_THREAD_H

#include <pthread.h>

/* pthread_create() with every signal blocked in the new thread.  0 or a
 * negative errno. */
int xflow_thread_create_quiet(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
