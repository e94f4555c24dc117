/*
 * Threads that take no signal (common/quiet_thread.h): the new thread
 * blocks every signal, and its creator's mask is what it was.
 */
#include <criterion/criterion.h>
#include <signal.h>

#include "common/quiet_thread.h"

static void *mask_of(void *arg)
{
	pthread_sigmask(SIG_SETMASK, NULL, arg);
	return NULL;
}

Test(quiet_thread, blocks_every_signal_in_the_new_thread_only)
{
	sigset_t before, after, theirs;
	sigemptyset(&before);
	pthread_sigmask(SIG_SETMASK, &before, NULL);
	pthread_t t;
	cr_assert_eq(xflow_thread_create_quiet(&t, mask_of, &theirs), 0);
	pthread_join(t, NULL);
	cr_expect(sigismember(&theirs, SIGINT) && sigismember(&theirs, SIGTERM) && sigismember(&theirs, SIGHUP) &&
			  sigismember(&theirs, SIGUSR1) && sigismember(&theirs, SIGWINCH),
		  "the thread takes the loop's signals");
	pthread_sigmask(SIG_SETMASK, NULL, &after);
	cr_expect(!sigismember(&after, SIGINT) && !sigismember(&after, SIGTERM), "the creator's mask is its own");
}
