/*
 * The target's own signals while we hold its threads.
 *
 * A signal for a traced thread stops it first (a signal-delivery-stop); it
 * reaches the program only if the request that resumes the thread from that
 * very stop passes it on.  From any other stop (a system call's, an
 * interrupt's, a job-control stop) the kernel ignores the signal given to
 * PTRACE_CONT or PTRACE_DETACH.  Yet we often move a thread on from its
 * signal's stop without delivering it: an injected system call, a run to a
 * queued breakpoint trap.  So a thread keeps what it was sent (resume_sig,
 * and any further ones in more_sigs), and when it is let go anywhere but in
 * its signal's stop, the signal goes back into its queue, to arrive again
 * as the program expects.  Losing one is damage: the SIGTERM that should
 * stop the program, gone.
 *
 * A re-queued signal keeps its siginfo when the kernel lets us forge it (the
 * negative codes: sigqueue, timers, ...); one sent with kill() comes back as
 * a tgkill from this process, the only way to send it again.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "guestrt/hook/ptrace/ptrace_priv.h"

void pt_hold_signal(struct pt_thread *th, int sig)
{
	if (sig <= 0 || sig > 64)
		return;
	if (th->resume_sig == 0) {
		th->resume_sig = sig;
		th->resume_info_ok = ptrace(PTRACE_GETSIGINFO, th->tid, 0, &th->resume_info) == 0 &&
				     th->resume_info.si_signo == sig;
	} else if (sig != th->resume_sig) {
		th->more_sigs |= 1ull << (sig - 1);
	}
}

/* Whether th sits in the delivery stop of sig.  The stops ptrace makes
 * itself read as SIGTRAP with a code of SIGTRAP | (event << 8) or
 * SIGTRAP | 0x80; a group stop has no siginfo at all. */
static bool in_delivery_stop(struct pt_thread *th, int sig)
{
	siginfo_t si;
	if (ptrace(PTRACE_GETSIGINFO, th->tid, 0, &si) < 0 || si.si_signo != sig)
		return false;
	return !(sig == SIGTRAP && si.si_code > 0x80 && (si.si_code & 0x7f) == SIGTRAP);
}

static void requeue(struct pt_thread *th, int sig, const siginfo_t *info)
{
	pid_t tgid = th->t->pub.pid;
	if (info && info->si_code < 0 && info->si_code != SI_TKILL &&
	    syscall(SYS_rt_tgsigqueueinfo, tgid, th->tid, sig, info) == 0)
		return;
	syscall(SYS_tgkill, tgid, th->tid, sig);
}

/* Everything but the signal passed on goes back into the queue. */
static void requeue_more(struct pt_thread *th)
{
	for (int s = 1; th->more_sigs; s++)
		if (th->more_sigs & (1ull << (s - 1))) {
			th->more_sigs &= ~(1ull << (s - 1));
			requeue(th, s, NULL);
		}
}

int pt_pass_signal(struct pt_thread *th)
{
	int sig = th->resume_sig;
	th->resume_sig = 0;
	requeue_more(th);
	if (sig == 0 || in_delivery_stop(th, sig))
		return sig;
	requeue(th, sig, th->resume_info_ok ? &th->resume_info : NULL);
	return 0;
}

void pt_release_signals(struct pt_thread *th)
{
	int sig = th->resume_sig;
	th->resume_sig = 0;
	requeue_more(th);
	if (sig)
		requeue(th, sig, th->resume_info_ok ? &th->resume_info : NULL);
}
