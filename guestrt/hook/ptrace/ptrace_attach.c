/*
 * Targets of the ptrace backend: taking them (attach by pid, spawn), their
 * life (clone, fork, vfork, exec, exit) and letting them go (detach) without
 * leaving a patched byte or a thread at a wrong instruction.
 *
 * PTRACE_O_EXITKILL is deliberately not used: if this process dies, killing
 * the targets would be the damage we exist to avoid.  The signal handlers of
 * restore_signals.c make the loop detach instead.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guestrt/hook/ptrace/ptrace_priv.h"

#define ENGINE(h) xflow_container_of(h, struct pt_engine, pub)
#define TARGET(t) xflow_container_of(t, struct pt_target, pub)

struct pt_target *pt_target_new(struct pt_engine *e, pid_t pid)
{
	struct pt_target *t = calloc(1, e->ext ? e->ext->target_size : sizeof(*t));
	if (!t || pt_grow((void **)&e->targets, &e->captargets, e->ntargets + 1, sizeof(*e->targets))) {
		free(t);
		return NULL;
	}
	t->pub.hook = &e->pub;
	t->pub.pid = pid;
	t->e = e;
	t->mem.memfd = -1;
	if (xflow_tmem_open(&t->mem, pid) < 0) {
		free(t);
		return NULL;
	}
	e->targets[e->ntargets++] = t;
	return t;
}

static void free_image(struct pt_target *t)
{
	for (int i = 0; i < t->nbps; i++) {
		free(t->bps[i]->sites);
		free(t->bps[i]);
	}
	free(t->bps);
	free(t->sites);
	free(t->scr);
	t->bps = NULL;
	t->sites = NULL;
	t->scr = NULL;
	t->nbps = t->capbps = t->nscr = t->capscr = 0;
	t->nsites = t->capsites = 0;
}

void pt_target_free(struct pt_target *t)
{
	struct pt_engine *e = t->e;
	struct pt_target *heir = NULL;

	/* vfork children still share this memory: the first takes over its
	 * breakpoint records, the others follow it. */
	for (int i = 0; i < e->ntargets; i++) {
		struct pt_target *c = e->targets[i];
		if (c == t || c->mm_owner != t)
			continue;
		if (!heir) {
			heir = c;
			c->mm_owner = NULL;
			c->bps = t->bps, c->nbps = t->nbps, c->capbps = t->capbps;
			c->sites = t->sites, c->nsites = t->nsites, c->capsites = t->capsites;
			c->scr = t->scr, c->nscr = t->nscr, c->capscr = t->capscr;
			t->bps = NULL, t->sites = NULL, t->scr = NULL;
			t->nbps = t->nscr = 0, t->nsites = 0;
		} else {
			c->mm_owner = heir;
		}
	}
	if (e->ext && e->ext->target_free)
		e->ext->target_free(t);
	while (t->nthreads)
		pt_thread_del(t->threads[0]);
	free(t->threads);
	free_image(t);
	xflow_tmem_close(&t->mem);
	for (int i = 0; i < e->ntargets; i++) {
		if (e->targets[i] == t) {
			e->targets[i] = e->targets[--e->ntargets];
			break;
		}
	}
	free(t);
}

void pt_emit(struct pt_target *t, const struct xflow_hook_event *ev)
{
	struct pt_engine *e = t->e;
	if (pt_grow((void **)&e->evq, &e->capevq, e->nevq + 1, sizeof(*e->evq)))
		return;
	e->evq[e->nevq] = *ev;
	e->evq[e->nevq].target = &t->pub;
	e->evq[e->nevq].pid = t->pub.pid;
	e->nevq++;
}

void pt_flush(struct pt_engine *e)
{
	if (e->depth > 0)
		return;
	/* The callback may cause more events: the queue may grow under us. */
	for (int i = 0; i < e->nevq; i++) {
		struct xflow_hook_event ev = e->evq[i];
		if (e->pub.cfg.on_event)
			e->pub.cfg.on_event(&ev, e->pub.cfg.event_data);
	}
	e->nevq = 0;
	for (int i = 0; i < e->ntargets;) {
		struct pt_target *t = e->targets[i];
		if (t->dead || t->detached)
			pt_target_free(t);
		else
			i++;
	}
}

/* ---- events ---- */

static struct pt_target *copy_target(struct pt_engine *e, struct pt_target *from, pid_t pid)
{
	struct pt_target *c = pt_target_new(e, pid);
	if (!c)
		return NULL;
	c->bps = calloc((size_t)from->nbps + 1, sizeof(*c->bps));
	c->sites = calloc((size_t)from->nsites + 1, sizeof(*c->sites));
	c->scr = calloc((size_t)from->nscr + 1, sizeof(*c->scr));
	if (!c->bps || !c->sites || !c->scr)
		goto fail;
	c->capbps = from->nbps + 1;
	c->capsites = from->nsites + 1;
	c->capscr = from->nscr + 1;
	/* A target may have no scratch slots or sites yet: memcpy from NULL
	 * is undefined even for zero bytes. */
	if (from->nscr)
		memcpy(c->scr, from->scr, (size_t)from->nscr * sizeof(*c->scr));
	c->nscr = from->nscr;
	if (from->nsites)
		memcpy(c->sites, from->sites, (size_t)from->nsites * sizeof(*c->sites));
	c->nsites = from->nsites;
	for (int i = 0; i < from->nbps; i++) {
		struct pt_bp *bp = malloc(sizeof(*bp));
		if (!bp)
			goto fail;
		*bp = *from->bps[i];
		bp->sites = malloc((size_t)(bp->capsites ? bp->capsites : 1) * sizeof(*bp->sites));
		if (!bp->sites) {
			free(bp);
			goto fail;
		}
		if (bp->nsites)
			memcpy(bp->sites, from->bps[i]->sites, (size_t)bp->nsites * sizeof(*bp->sites));
		c->bps[c->nbps++] = bp;
		for (uint32_t s = 0; s < c->nsites; s++)
			if (c->sites[s].bp == from->bps[i])
				c->sites[s].bp = bp;
		for (int s = 0; s < c->nscr; s++)
			for (unsigned k = 0; k < c->scr[s].used; k++)
				if (c->scr[s].owner[k] == from->bps[i])
					c->scr[s].owner[k] = bp;
	}
	for (uint32_t s = 0; s < c->nsites; s++)
		c->sites[s].hits = 0;
	return c;
fail:
	c->dead = true;
	c->silent = true;
	return NULL;
}

static void fork_child(struct pt_engine *e, struct pt_target *t, pid_t pid, bool vfork)
{
	bool inherit = e->pub.cfg.fork_policy == XFLOW_HOOK_FORK_INHERIT;
	struct pt_target *mm = pt_mm(t), *c;

	if (vfork) {
		c = pt_target_new(e, pid);
		if (c) {
			c->mm_owner = mm;
			c->quiet = !inherit;
			c->detach_at_exec = !inherit;
		}
	} else {
		c = copy_target(e, mm, pid);
		if (c && !inherit)
			c->detach_when_stopped = true;
	}
	if (!c || !pt_thread_add(c, pid, PT_RUNNING)) {
		/* Without a record the child would die at its first int3 once
		 * it runs; better to keep it stopped than damaged. */
		xflow_hook_fail(&e->pub, -ENOMEM, "pid %d: no memory to follow its child %d", (int)t->pub.pid,
				(int)pid);
		return;
	}
	c->silent = !inherit;
	if (e->ext && e->ext->fork)
		e->ext->fork(mm, c, vfork);
	struct xflow_hook_event ev = {
		.kind = XFLOW_HOOK_EV_FORK, .child = inherit ? &c->pub : NULL, .child_pid = pid};
	pt_emit(t, &ev);
}

static void exec_done(struct pt_engine *e, struct pt_thread *th)
{
	struct pt_target *t = th->t;

	/* Every other thread is gone, and the memory is new: the records of
	 * the old image mean nothing now. */
	for (int i = 0; i < t->nthreads;) {
		if (t->threads[i] != th)
			pt_thread_del(t->threads[i]);
		else
			i++;
	}
	if (t->mm_owner)
		t->mm_owner = NULL; /* a vfork child: it has its own memory now */
	else
		free_image(t);
	t->quiet = false;
	t->gen++;
	xflow_tmem_reopen(&t->mem);
	if (e->ext && e->ext->exec)
		e->ext->exec(t);
	if (t->detach_at_exec)
		t->detach_when_stopped = true;
	struct xflow_hook_event ev = {.kind = XFLOW_HOOK_EV_EXEC};
	if (!t->silent)
		pt_emit(t, &ev);
}

void pt_note_event(struct pt_engine *e, struct pt_thread *th, int ev)
{
	unsigned long msg = 0;

	switch (ev) {
	case PTRACE_EVENT_CLONE:
		if (ptrace(PTRACE_GETEVENTMSG, th->tid, 0, &msg) == 0 && !pt_thr_find(e, (pid_t)msg) &&
		    pt_thread_add(th->t, (pid_t)msg, PT_RUNNING)) {
			struct xflow_hook_event nev = {.kind = XFLOW_HOOK_EV_THREAD_NEW, .tid = (pid_t)msg};
			if (!th->t->silent)
				pt_emit(th->t, &nev);
		}
		break;
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		if (ptrace(PTRACE_GETEVENTMSG, th->tid, 0, &msg) == 0 && !pt_thr_find(e, (pid_t)msg))
			fork_child(e, th->t, (pid_t)msg, ev == PTRACE_EVENT_VFORK);
		/* Set after pt_note_stop cleared it: from its resume on, the
		 * thread waits in the kernel for the child. */
		th->in_vfork = ev == PTRACE_EVENT_VFORK;
		break;
	case PTRACE_EVENT_EXEC:
		exec_done(e, th);
		break;
	default:
		break;
	}
}

/* ---- detach ---- */

/* Where a thread stopped at rip must be put back, our traps and slots
 * undone; 0 when it is fine where it is. */
static uint64_t fixed_rip(struct pt_target *mm, struct pt_thread *th, uint64_t rip, bool *ours)
{
	struct pt_bp *bp;

	*ours = false;
	if (mm->e->ext && mm->e->ext->fix_rip) {
		uint64_t to = mm->e->ext->fix_rip(mm, th, rip, ours);
		if (to || *ours)
			return to;
	}
	if (th->pending_hit || th->held) {
		bp = pt_bp_find(mm, rip - 1);
		if (bp) {
			*ours = true;
			return bp->addr; /* the original instruction runs on its own */
		}
	}
	bp = pt_slot_bp(mm, rip - (th->pending_hit || th->held));
	if (bp) {
		*ours = th->pending_hit || th->held;
		/* At the slot's start the instruction has not run yet; past it,
		 * it has, and the thread goes on after the original. */
		return rip == bp->slot ? bp->addr : bp->addr + bp->insn.len;
	}
	return 0;
}

/* Collect the ends of t's dying threads (let_go could not let them go):
 * they are our tracees, and until we wait for them they stay zombies, and
 * their process's leader with them, for whoever waits for it (its parent,
 * perhaps this process) to wait for ever.  The leader is reported after
 * the others, so last.  A core dump may take a while: up to about 5 s,
 * after which the run loop collects what is left.  True when every thread
 * was dying, with the status of the leader's end in *status. */
static bool reap_dying(struct pt_target *t, int *status)
{
	int dying = 0, reaped = 0;
	*status = 0;
	for (int i = 0; i < t->nthreads; i++)
		dying += t->threads[i]->dying;
	if (dying == 0)
		return false;
	for (int tries = 0; tries < 1000 && reaped < dying; tries++) {
		for (int i = 0; i < t->nthreads; i++) {
			struct pt_thread *th = t->threads[i];
			int st;
			bool leader = th->tid == t->pub.pid;
			if (!th->dying || (leader && reaped < dying - 1))
				continue;
			pid_t w = waitpid(th->tid, &st, __WALL | WNOHANG);
			if (w == th->tid && !WIFSTOPPED(st)) {
				th->dying = false;
				reaped++;
				if (leader || *status == 0)
					*status = st;
			} else if (w < 0 && errno == ECHILD) {
				th->dying = false; /* collected by someone else */
				reaped++;
			}
		}
		if (reaped < dying)
			usleep(5000);
	}
	return dying == t->nthreads;
}

/* Put every stopped thread of t back at a correct instruction and let it
 * go; the bytes are already restored (rc: how that went). */
static int let_go(struct pt_target *t, int rc)
{
	struct pt_engine *e = t->e;
	struct pt_target *mm = pt_mm(t);

	for (int i = 0; i < t->nthreads; i++) {
		struct pt_thread *th = t->threads[i];
		struct user_regs_struct r;
		bool ours;
		if (th->state != PT_STOPPED || ptrace(PTRACE_GETREGS, th->tid, 0, &r) < 0)
			continue;
		uint64_t to = fixed_rip(mm, th, r.rip, &ours);
		if (th->pending_hit && !ours && th->resume_sig == 0)
			th->resume_sig = SIGTRAP; /* the target's own trap */
		th->pending_hit = false;
		if (to) {
			r.rip = to;
			if (ptrace(PTRACE_SETREGS, th->tid, 0, &r) < 0 && rc == 0)
				rc = -errno;
		}
	}
	for (int i = 0; i < t->nthreads; i++) {
		struct pt_thread *th = t->threads[i];
		if (th->state == PT_RUNNING && th->in_vfork &&
		    pt_grow((void **)&e->linger, &e->caplinger, e->nlinger + 1, sizeof(*e->linger)) == 0) {
			/* It will stop when its vfork child is done with the
			 * memory (the interrupt), and be let go then. */
			ptrace(PTRACE_INTERRUPT, th->tid, 0, 0);
			e->linger[e->nlinger++] = th->tid;
		} else if (ptrace(PTRACE_DETACH, th->tid, 0, pt_pass_signal(th)) < 0 && errno == ESRCH &&
			   th->state == PT_STOPPED) {
			/* Held, and no longer stopped: killed (with its
			 * process, as only that ends a thread we hold). */
			th->dying = true;
		}
		xflow_hook_step(&e->pub, t->pub.pid, "let-go");
		pt_tid_remove(e, th);
		th->state = PT_RUNNING;
		th->held = false;
	}
	t->detached = true;
	int status;
	if (reap_dying(t, &status)) {
		/* It died under us: its end is what happened to it. */
		struct xflow_hook_event ev = {.kind = XFLOW_HOOK_EV_EXITED, .status = status};
		t->exit_status = status;
		if (!t->silent)
			pt_emit(t, &ev);
		return -ESRCH;
	}
	if (!t->silent) {
		struct xflow_hook_event ev = {.kind = rc < 0 ? XFLOW_HOOK_EV_ERROR : XFLOW_HOOK_EV_DETACHED,
					      .err = rc};
		pt_emit(t, &ev);
	}
	return rc;
}

static bool shares(struct pt_target *c, struct pt_target *t)
{
	return c != t && c->mm_owner == t && !c->dead && !c->detached;
}

int pt_detach_target(struct pt_target *t, bool internal)
{
	struct pt_engine *e = t->e;
	int rc = 0;

	if (t->dead || t->detached)
		return t->dead ? -ESRCH : 0;
	if (t->mm_owner && !internal)
		return xflow_hook_fail(&e->pub, -EBUSY, "pid %d shares the memory of pid %d until it execs",
				       (int)t->pub.pid, (int)t->mm_owner->pub.pid);
	/* vfork children sharing this memory are stopped too: the bytes must
	 * be back before any of them runs untraced. */
	for (int i = 0; i < e->ntargets; i++)
		if (shares(e->targets[i], t))
			pt_stop_world(e->targets[i]);
	pt_stop_world(t);
	if (t->dead) {
		for (int i = 0; i < e->ntargets; i++)
			if (shares(e->targets[i], t))
				pt_resume_world(e->targets[i]);
		return -ESRCH;
	}
	if (!t->mm_owner) {
		for (int i = 0; i < t->nbps; i++) {
			struct pt_bp *bp = t->bps[i];
			bp->nbefore = bp->nafter = 0;
			int r2 = pt_bp_sync(t, bp);
			if (r2 < 0 && r2 != -EFAULT && rc == 0)
				rc = r2; /* -EFAULT: the target unmapped it */
		}
		if (e->ext && e->ext->detach) {
			int r2 = e->ext->detach(t);
			if (r2 < 0 && rc == 0)
				rc = r2;
		}
	}
	for (int i = 0; i < e->ntargets; i++)
		if (shares(e->targets[i], t))
			let_go(e->targets[i], rc);
	return let_go(t, rc);
}

/* Stop a running thread for the crash path; false when it is gone. */
static bool emergency_stop(struct pt_thread *th)
{
	ptrace(PTRACE_INTERRUPT, th->tid, 0, 0);
	for (;;) {
		int st;
		pid_t w = waitpid(th->tid, &st, __WALL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st))
			return false;
		int ev = st >> 16, sig = WSTOPSIG(st);
		th->state = PT_STOPPED;
		if (ev == 0 && sig == SIGTRAP) {
			th->pending_hit = true;
			return true;
		}
		if (ev == 0)
			pt_hold_signal(th, sig);
		if (!pt_trap_pending(th->tid))
			return true;
		pt_release_signals(th);
		ptrace(PTRACE_CONT, th->tid, 0, 0);
	}
}

void pt_emergency(struct xflow_hook *h)
{
	struct pt_engine *e = ENGINE(h);

	/* Should a thread never stop, the default SIGALRM ends this process
	 * and the kernel lets every tracee go: the bytes are back by then. */
	alarm(2);
	for (int i = 0; i < e->ntargets; i++) {
		struct pt_target *t = e->targets[i], *mm = pt_mm(t);
		if (t->dead || t->detached)
			continue;
		/* Bytes first, so that no running thread hits a site any more. */
		for (int j = 0; j < mm->nbps && !t->mm_owner; j++) {
			struct pt_bp *bp = mm->bps[j];
			uint8_t cur = 0, nop = 0x90;
			if (bp->installed && xflow_tmem_peek(&t->mem, bp->addr, &cur, 1) == 0 && cur == 0xcc)
				xflow_tmem_poke(&t->mem, bp->addr, bp->insn.bytes, 1);
			if (bp->after_trap)
				xflow_tmem_poke(&t->mem, bp->slot + bp->insn.len, &nop, 1);
		}
		if (e->ext && e->ext->emergency && !t->mm_owner)
			e->ext->emergency(t);
		for (int j = 0; j < t->nthreads; j++) {
			struct pt_thread *th = t->threads[j];
			struct user_regs_struct r;
			bool ours;
			if (th->state == PT_RUNNING && (th->in_vfork || !emergency_stop(th)))
				continue; /* in vfork: cannot stop, runs nothing of ours */
			if (ptrace(PTRACE_GETREGS, th->tid, 0, &r) == 0) {
				uint64_t to = fixed_rip(mm, th, r.rip, &ours);
				if (th->pending_hit && !ours && th->resume_sig == 0)
					th->resume_sig = SIGTRAP;
				if (to) {
					r.rip = to;
					ptrace(PTRACE_SETREGS, th->tid, 0, &r);
				}
			}
			ptrace(PTRACE_DETACH, th->tid, 0, pt_pass_signal(th));
		}
	}
	alarm(0);
}

int pt_detach(struct xflow_hook_target *pub)
{
	struct pt_target *t = TARGET(pub);
	int rc = pt_detach_target(t, false);
	pt_flush(t->e);
	return rc;
}

/* ---- taking targets ---- */

/* Whether tid already has a tracer (a debugger, strace, another agent):
 * true with "it is traced by pid N (name)" in buf. */
static bool traced_by(pid_t tid, char *buf, size_t len)
{
	char path[64], line[256], comm[64] = "?";
	int tracer = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %d", &tracer) == 1)
			break;
	fclose(f);
	if (tracer <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/comm", tracer);
	f = fopen(path, "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	snprintf(buf, len, "it is traced already, by pid %d (%s): one tracer at a time", tracer, comm);
	return true;
}

static int seize_all(struct pt_target *t)
{
	struct pt_engine *e = t->e;
	char path[64];
	int added;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pub.pid);
	/* Threads that a thread not yet seized creates meanwhile are only in
	 * the next listing; those of a seized one are traced by the kernel. */
	do {
		DIR *d = opendir(path);
		struct dirent *de;
		if (!d)
			return -errno;
		added = 0;
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)atoi(de->d_name);
			if (tid <= 0 || pt_thr_find(e, tid))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, 0, PT_OPTIONS) < 0) {
				int err = errno;
				if (err == ESRCH)
					continue;
				if (t->nthreads == 0) {
					closedir(d);
					char tracer[128];
					if (err == EPERM && traced_by(tid, tracer, sizeof(tracer)))
						return xflow_hook_fail(&e->pub, -EBUSY, "pid %d: cannot trace it: %s",
								       (int)t->pub.pid, tracer);
					return xflow_hook_fail(&e->pub, -err, "pid %d: cannot trace it: %s%s",
							       (int)t->pub.pid, strerror(err),
							       err == EPERM ? " (ptrace not permitted: "
									      "see kernel.yama.ptrace_scope)"
									    : "");
				}
				/* EPERM for a thread already traced by us
				 * through its parent's clone. */
			}
			if (!pt_thread_add(t, tid, PT_RUNNING)) {
				closedir(d);
				return -ENOMEM;
			}
			added++;
		}
		closedir(d);
	} while (added);
	return t->nthreads ? 0 : -ESRCH;
}

int pt_attach(struct xflow_hook *h, pid_t pid, struct xflow_hook_target **out)
{
	struct pt_engine *e = ENGINE(h);
	struct pt_target *t;
	int rc;

	if (pid <= 0 || pid == getpid())
		return xflow_hook_fail(h, -EINVAL, "pid %d: cannot trace it", (int)pid);
	for (int i = 0; i < e->ntargets; i++)
		if (e->targets[i]->pub.pid == pid && !e->targets[i]->dead && !e->targets[i]->detached)
			return xflow_hook_fail(h, -EALREADY, "pid %d: already a target", (int)pid);
	t = pt_target_new(e, pid);
	if (!t)
		return xflow_hook_fail(h, kill(pid, 0) < 0 ? -errno : -ENOMEM, "pid %d: cannot open its memory: %s",
				       (int)pid, strerror(kill(pid, 0) < 0 ? errno : ENOMEM));
	rc = seize_all(t);
	if (rc < 0) {
		for (int i = 0; i < t->nthreads; i++)
			ptrace(PTRACE_DETACH, t->threads[i]->tid, 0, 0);
		pt_target_free(t);
		return rc;
	}
	*out = &t->pub;
	return 0;
}

int pt_spawn(struct xflow_hook *h, char *const argv[], struct xflow_hook_target **out)
{
	struct pt_engine *e = ENGINE(h);
	struct pt_target *t;
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return xflow_hook_fail(h, -errno, "fork: %s", strerror(errno));
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* Wait here until traced, so that the exec is seen. */
		raise(SIGSTOP);
		execvp(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &st, WUNTRACED) < 0 && errno == EINTR)
		;
	if (ptrace(PTRACE_SEIZE, pid, 0, PT_OPTIONS) < 0) {
		int err = errno;
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return xflow_hook_fail(h, -err, "cannot trace the child for %s: %s", argv[0], strerror(err));
	}
	kill(pid, SIGCONT);
	for (;;) {
		pid_t w = waitpid(pid, &st, __WALL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st))
			return xflow_hook_fail(h, -ENOEXEC, "%s: could not be run (exit status %d)", argv[0],
					       w < 0 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		int ev = st >> 16, sig = WSTOPSIG(st);
		if (ev == PTRACE_EVENT_EXEC)
			break;
		ptrace(PTRACE_CONT, pid, 0, ev || sig == SIGSTOP || sig == SIGCONT ? 0 : sig);
	}
	t = pt_target_new(e, pid);
	struct pt_thread *th = t ? pt_thread_add(t, pid, PT_STOPPED) : NULL;
	if (!th) {
		kill(pid, SIGKILL);
		if (t)
			pt_target_free(t);
		return -ENOMEM;
	}
	th->held = true;
	t->hold = true;
	*out = &t->pub;
	return 0;
}
