/*
 * Threads of the ptrace backend: the tid table, stops and resumes, and
 * stopping every thread of a target to patch it ("stop the world").
 *
 * A thread is RUNNING (it will report its next stop through waitpid) or
 * STOPPED (we hold it in a ptrace-stop).  A STOPPED thread remembers what its
 * stop needs when it is resumed: a breakpoint trap to serve (pending_hit), a
 * signal to pass on (resume_sig, ptrace_signals.c), a job-control stop to
 * keep (group_stop).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "guestrt/hook/ptrace/ptrace_priv.h"

static unsigned tid_slot(pid_t tid, unsigned cap)
{
	return ((uint32_t)tid * 2654435761u) & (cap - 1);
}

struct pt_thread *pt_thr_find(struct pt_engine *e, pid_t tid)
{
	if (e->tidcap == 0)
		return NULL;
	for (unsigned i = tid_slot(tid, e->tidcap);; i = (i + 1) & (e->tidcap - 1)) {
		struct pt_thread *th = e->tids[i];
		if (!th || th->tid == tid)
			return th;
	}
}

static void tid_put(struct pt_thread **tab, unsigned cap, struct pt_thread *th)
{
	unsigned i = tid_slot(th->tid, cap);
	while (tab[i])
		i = (i + 1) & (cap - 1);
	tab[i] = th;
}

static int tid_insert(struct pt_engine *e, struct pt_thread *th)
{
	if ((e->ntids + 1) * 2 > e->tidcap) {
		unsigned cap = e->tidcap ? e->tidcap * 2 : 64;
		struct pt_thread **tab = calloc(cap, sizeof(*tab));
		if (!tab)
			return -ENOMEM;
		for (unsigned i = 0; i < e->tidcap; i++)
			if (e->tids[i])
				tid_put(tab, cap, e->tids[i]);
		free(e->tids);
		e->tids = tab;
		e->tidcap = cap;
	}
	tid_put(e->tids, e->tidcap, th);
	e->ntids++;
	return 0;
}

void pt_tid_remove(struct pt_engine *e, struct pt_thread *th)
{
	unsigned mask = e->tidcap - 1, i, j;

	if (e->tidcap == 0)
		return;
	for (i = tid_slot(th->tid, e->tidcap); e->tids[i] != th; i = (i + 1) & mask)
		if (!e->tids[i])
			return;
	e->tids[i] = NULL;
	e->ntids--;
	/* Backward shift: move up every entry that the hole would hide. */
	for (j = (i + 1) & mask; e->tids[j]; j = (j + 1) & mask) {
		unsigned k = tid_slot(e->tids[j]->tid, e->tidcap);
		if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
			e->tids[i] = e->tids[j];
			e->tids[j] = NULL;
			i = j;
		}
	}
}

int pt_grow(void **arr, int *cap, int need, size_t elem)
{
	size_t c = (size_t)*cap;
	int rc = xflow_grow(arr, &c, (size_t)need, elem);
	if (rc == 0)
		*cap = (int)c;
	return rc;
}

struct pt_thread *pt_thread_add(struct pt_target *t, pid_t tid, enum pt_thr_state st)
{
	struct pt_engine *e = t->e;
	struct pt_thread *th = calloc(1, sizeof(*th));

	if (!th)
		return NULL;
	th->tid = tid;
	th->t = t;
	th->state = st;
	if (pt_grow((void **)&t->threads, &t->capthreads, t->nthreads + 1, sizeof(*t->threads)) ||
	    tid_insert(e, th)) {
		free(th);
		return NULL;
	}
	t->threads[t->nthreads++] = th;
	/* Its first stop may have come before the event that announced it. */
	for (int i = 0; i < e->nunknown; i++) {
		if (e->unknown[i].tid != tid)
			continue;
		int status = e->unknown[i].status;
		e->unknown[i] = e->unknown[--e->nunknown];
		pt_note_stop(e, th, status);
		pt_queue_resume(e, th);
		break;
	}
	return th;
}

void pt_thread_del(struct pt_thread *th)
{
	struct pt_target *t = th->t;
	pt_tid_remove(t->e, th);
	for (int i = 0; i < t->nthreads; i++) {
		if (t->threads[i] == th) {
			t->threads[i] = t->threads[--t->nthreads];
			break;
		}
	}
	free(th);
}

void pt_unknown_add(struct pt_engine *e, pid_t tid, int status)
{
	if (pt_grow((void **)&e->unknown, &e->capunknown, e->nunknown + 1, sizeof(*e->unknown)))
		return;
	e->unknown[e->nunknown].tid = tid;
	e->unknown[e->nunknown].status = status;
	e->nunknown++;
}

void pt_queue_resume(struct pt_engine *e, struct pt_thread *th)
{
	if (th->queued)
		return;
	if (pt_grow((void **)&e->resumeq, &e->capresumeq, e->nresumeq + 1, sizeof(*e->resumeq)))
		return;
	e->resumeq[e->nresumeq++] = th->tid;
	th->queued = true;
}

static bool is_job_stop(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

void pt_note_stop(struct pt_engine *e, struct pt_thread *th, int status)
{
	int sig = WSTOPSIG(status), ev = status >> 16;

	th->state = PT_STOPPED;
	th->in_vfork = false;
	if (ev == 0) {
		if (sig == SIGTRAP)
			th->pending_hit = true;
		else if (e->ext && e->ext->signal && e->ext->signal(th, sig))
			; /* the extension's own (a fault it mends) */
		else
			pt_hold_signal(th, sig);
		return;
	}
	if (ev == PTRACE_EVENT_STOP) {
		if (is_job_stop(sig))
			th->group_stop = true;
		return;
	}
	pt_note_event(e, th, ev);
}

/* A breakpoint trap is queued for th but not yet reported: after an
 * interrupt the kernel reports the interrupt first. */
bool pt_trap_pending(pid_t tid)
{
	siginfo_t si[8];
	struct __ptrace_peeksiginfo_args a = {.off = 0, .flags = 0, .nr = 8};
	long n = ptrace(PTRACE_PEEKSIGINFO, tid, &a, si);
	for (long i = 0; i < n; i++)
		if (si[i].si_signo == SIGTRAP && si[i].si_code == SI_KERNEL)
			return true;
	return false;
}

/* Let th run to its queued trap; it stays wanted.  The signal it was
 * stopped with is queued again: the trap, synchronous, comes first. */
static void run_to_trap(struct pt_thread *th)
{
	pt_release_signals(th);
	th->state = PT_RUNNING;
	th->want = true;
	if (ptrace(PTRACE_CONT, th->tid, 0, 0) < 0)
		th->state = PT_RUNNING; /* dying: its exit will be reported */
}

int pt_stop_world(struct pt_target *t)
{
	struct pt_engine *e = t->e;

	for (int i = 0; i < t->nthreads; i++)
		t->threads[i]->want = t->threads[i]->checked = false;
	/* Threads may appear while we wait (a clone reported meanwhile): look
	 * at all of them again after each status, until none is outstanding. */
	for (;;) {
		int waiting = 0;
		for (int i = 0; i < t->nthreads; i++) {
			struct pt_thread *th = t->threads[i];
			if (th->in_vfork && th->state == PT_RUNNING) {
				/* It cannot stop before its child releases the
				 * memory, and runs no code of its own till then. */
			} else if (!th->want && th->state == PT_RUNNING) {
				ptrace(PTRACE_INTERRUPT, th->tid, 0, 0);
				th->want = true;
			} else if (!th->want && !th->checked && !th->pending_hit && !th->held) {
				th->checked = true;
				if (pt_trap_pending(th->tid))
					run_to_trap(th);
			}
			waiting += th->want;
		}
		if (waiting == 0)
			break;
		int st;
		pid_t r = waitpid(-1, &st, __WALL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			/* No child left to report: whoever we waited for is gone. */
			while (t->nthreads)
				pt_thread_exit(t->threads[0], 0);
			break;
		}
		struct pt_thread *th = pt_thr_find(e, r);
		if (!th) {
			if (WIFSTOPPED(st))
				pt_unknown_add(e, r, st);
			continue;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			pt_thread_exit(th, st);
			continue;
		}
		pt_note_stop(e, th, st);
		if (th->t != t || !th->want) {
			pt_queue_resume(e, th);
			continue;
		}
		th->want = false;
		th->checked = false; /* look for a queued trap behind this stop */
	}
	return t->dead ? -ESRCH : 0;
}

void pt_resume_thread(struct pt_thread *th)
{
	struct pt_target *t = th->t;

	th->queued = false;
	if (th->state != PT_STOPPED || th->held)
		return;
	if (t->detach_when_stopped) {
		pt_detach_target(t, true);
		return;
	}
	if (th->pending_hit) {
		th->pending_hit = false;
		pt_serve_trap(th);
		return;
	}
	long req = th->group_stop ? PTRACE_LISTEN : PTRACE_CONT;
	int sig = pt_pass_signal(th);
	th->group_stop = false;
	th->state = PT_RUNNING;
	ptrace(req, th->tid, 0, req == PTRACE_LISTEN ? 0 : sig);
}

void pt_resume_world(struct pt_target *t)
{
	/* Traps are served from the run loop, not from inside the call that
	 * patched: a handler there could call back into that call. */
	for (int i = 0; i < t->nthreads; i++) {
		struct pt_thread *th = t->threads[i];
		if (th->state != PT_STOPPED || th->held)
			continue;
		if (th->pending_hit || t->detach_when_stopped)
			pt_queue_resume(t->e, th);
		else
			pt_resume_thread(th);
	}
}

void pt_thread_exit(struct pt_thread *th, int status)
{
	struct pt_target *t = th->t;
	bool leader = th->tid == t->pub.pid;
	if (t->e->ext && t->e->ext->thread_exit)
		t->e->ext->thread_exit(th);
	pt_thread_del(th);
	if (leader || t->exit_status == 0)
		t->exit_status = status;
	if (t->nthreads == 0 && !t->dead && !t->detached) {
		t->dead = true;
		struct xflow_hook_event ev = {.kind = XFLOW_HOOK_EV_EXITED, .status = t->exit_status};
		pt_emit(t, &ev);
	}
}
