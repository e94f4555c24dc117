/*
 * The ptrace hook backend: int3 at each site, handlers in this process (the
 * Xenprobes design applied to processes), and no single-step.  At a hit the
 * thread resumes in a scratch slot that holds the displaced instruction and a
 * jump back (ooline.c), or with the instruction emulated when it is a branch
 * that cannot run elsewhere, or a nop or register move.
 *
 * One hit costs what a bare stop-and-continue costs: waitpid, GETREGS, one
 * POKEUSER of rip (or none, or SETREGS when a handler changed more), CONT.
 * Nothing on that path reads /proc, allocates or asks for siginfo: a
 * SIGTRAP is ours when rip - 1 is one of our breakpoints, which one binary
 * search tells (or, for an AFTER trap, the slot it is in).
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "guestrt/hook/ptrace/ooline.h"
#include "guestrt/hook/ptrace/ptrace_priv.h"

_Static_assert(sizeof(struct xflow_hook_regs) == sizeof(struct user_regs_struct), "regs layout");
_Static_assert(offsetof(struct xflow_hook_regs, rip) == offsetof(struct user_regs_struct, rip), "rip");
_Static_assert(offsetof(struct xflow_hook_regs, rsp) == offsetof(struct user_regs_struct, rsp), "rsp");
_Static_assert(offsetof(struct xflow_hook_regs, gs) == offsetof(struct user_regs_struct, gs), "gs");

#define ENGINE(h) xflow_container_of(h, struct pt_engine, pub)
#define TARGET(t) xflow_container_of(t, struct pt_target, pub)

struct pt_bp *pt_bp_find(struct pt_target *mm, uint64_t addr)
{
	int lo = 0, hi = mm->nbps - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		struct pt_bp *bp = mm->bps[mid];
		if (bp->addr == addr)
			return bp;
		if (bp->addr < addr)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

/* Index of the first bp at or above addr. */
static int bp_lower(struct pt_target *mm, uint64_t addr)
{
	int lo = 0, hi = mm->nbps;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (mm->bps[mid]->addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct pt_bp *pt_slot_bp(struct pt_target *mm, uint64_t addr)
{
	for (int i = 0; i < mm->nscr; i++) {
		uint64_t base = mm->scr[i].base;
		if (addr >= base && addr < base + PT_SCRATCH_SIZE) {
			unsigned k = (unsigned)((addr - base) / PT_SLOT_SIZE);
			return k < mm->scr[i].used ? mm->scr[i].owner[k] : NULL;
		}
	}
	return NULL;
}

int pt_bp_sync(struct pt_target *t, struct pt_bp *bp)
{
	bool want = bp->nbefore + bp->nafter > 0;
	bool want_after = bp->nafter > 0 && bp->slot != 0;
	int rc = 0;

	if (want != bp->installed) {
		uint8_t cur = 0, b = want ? 0xcc : bp->insn.bytes[0];
		rc = xflow_tmem_peek(&t->mem, bp->addr, &cur, 1);
		/* Put back only our own int3: anything else there is the
		 * target's code, rewritten by the target itself. */
		if (rc == 0 && (want || cur == 0xcc))
			rc = xflow_tmem_poke(&t->mem, bp->addr, &b, 1);
		if (rc == 0 || !want)
			bp->installed = want;
	}
	if (want_after != bp->after_trap) {
		uint8_t b = want_after ? 0xcc : 0x90;
		int r2 = xflow_tmem_poke(&t->mem, bp->slot + bp->insn.len, &b, 1);
		if (r2 == 0 || !want_after)
			bp->after_trap = want_after;
		if (rc == 0)
			rc = r2;
	}
	return rc;
}

/* ---- the hit path ---- */

static void run_handlers(struct pt_thread *th, struct pt_bp *bp, enum xflow_hook_when when,
			 struct xflow_hook_regs *r)
{
	struct pt_target *t = th->t, *mm = pt_mm(t);
	struct pt_engine *e = t->e;
	struct xflow_hook_hit hit = {
		.target = &t->pub, .pid = t->pub.pid, .tid = th->tid, .when = when, .addr = bp->addr, .regs = r};

	if (t->quiet)
		return;
	th->held = true;
	e->depth++;
	/* Indices, not pointers: a handler may add sites (realloc). */
	for (int i = 0; i < bp->nsites; i++) {
		struct pt_site *s = &mm->sites[bp->sites[i] - 1];
		if (!s->enabled || s->when != when || s->bp != bp)
			continue;
		s->hits++;
		hit.site = s->id;
		s->fn(&hit, s->data);
		if (t->detached || t->dead)
			break;
	}
	e->depth--;
	th->held = false;
}

/* Write back what the hit changed in the registers, the cheapest way: each
 * ptrace request costs microseconds here (it waits for the tracee to be
 * off its CPU), so nothing when nothing changed (a one-byte nop), one
 * POKEUSER when only one register did (rip, the common case), SETREGS
 * otherwise. */
static int regs_put(struct pt_thread *th, const struct xflow_hook_regs *r)
{
	const uint64_t *a = (const uint64_t *)r, *b = (const uint64_t *)&th->t->e->trapped;
	int n = 0, at = 0;
	for (int i = 0; i < (int)(sizeof(*r) / 8); i++) {
		if (a[i] != b[i]) {
			n++;
			at = i;
		}
	}
	if (n == 0)
		return 0;
	if (n == 1)
		return (int)ptrace(PTRACE_POKEUSER, th->tid, (void *)(uintptr_t)(at * 8), (void *)(uintptr_t)a[at]);
	return (int)ptrace(PTRACE_SETREGS, th->tid, 0, r);
}

void pt_thread_cont(struct pt_thread *th, struct xflow_hook_regs *r, int sig)
{
	th->state = PT_RUNNING;
	if (r && regs_put(th, r) < 0)
		return; /* gone (killed during the hit): its exit comes next */
	ptrace(PTRACE_CONT, th->tid, 0, sig);
}

static int push_ret(struct pt_target *t, struct xflow_hook_regs *r, uint64_t ret)
{
	uint64_t sp = r->rsp - 8;
	int rc = xflow_tmem_write(&t->mem, sp, &ret, 8);
	if (rc == 0)
		r->rsp = sp;
	return rc;
}

static void hit_before(struct pt_thread *th, struct pt_bp *bp, struct xflow_hook_regs *r)
{
	struct pt_target *t = th->t;
	const struct xflow_insn *in = &bp->insn;
	uint64_t next = bp->addr + in->len, *reg = (uint64_t *)r;

	r->rip = bp->addr;
	if (bp->nbefore)
		run_handlers(th, bp, XFLOW_HOOK_BEFORE, r);
	if (t->detached)
		return; /* the handler let the target go, this thread with it */
	if (r->rip != bp->addr) {
		pt_thread_cont(th, r, 0); /* the handler chose where to go on */
		return;
	}
	switch (in->kind) {
	case XFLOW_INSN_OOL:
		r->rip = bp->slot;
		pt_thread_cont(th, r, 0);
		return; /* AFTER handlers run at the slot's trap */
	case XFLOW_INSN_EMU_NOP:
		r->rip = next;
		break;
	case XFLOW_INSN_EMU_JMP:
		r->rip = in->target;
		break;
	case XFLOW_INSN_EMU_JCC:
		r->rip = xflow_insn_cond(in->cc, r->eflags) ? in->target : next;
		break;
	case XFLOW_INSN_EMU_CALL:
	case XFLOW_INSN_EMU_CALLR: {
		uint64_t to = in->kind == XFLOW_INSN_EMU_CALL ? in->target : reg[in->src];
		if (push_ret(t, r, next) < 0) {
			/* The call itself would have faulted on its push. */
			pt_thread_cont(th, r, SIGSEGV);
			return;
		}
		r->rip = to;
		break;
	}
	case XFLOW_INSN_EMU_MOVRR:
		reg[in->dst] = reg[in->src];
		r->rip = next;
		break;
	}
	if (bp->nafter)
		run_handlers(th, bp, XFLOW_HOOK_AFTER, r);
	if (!t->detached)
		pt_thread_cont(th, r, 0);
}

static void hit_after(struct pt_thread *th, struct pt_bp *bp, struct xflow_hook_regs *r)
{
	r->rip = bp->addr + bp->insn.len;
	if (bp->nafter)
		run_handlers(th, bp, XFLOW_HOOK_AFTER, r);
	if (!th->t->detached)
		pt_thread_cont(th, r, 0);
}

void pt_serve_trap(struct pt_thread *th)
{
	struct pt_target *t = th->t, *mm = pt_mm(t);
	struct xflow_hook_regs r;
	struct pt_bp *bp;

	if (ptrace(PTRACE_GETREGS, th->tid, 0, &r) < 0) {
		th->state = PT_RUNNING; /* gone: its exit comes next */
		return;
	}
	t->e->trapped = r;
	bp = pt_bp_find(mm, r.rip - 1);
	if (bp) {
		if (bp->installed) {
			hit_before(th, bp, &r);
		} else {
			/* A trap from before the site was disabled: the
			 * instruction is back, run it. */
			r.rip = bp->addr;
			pt_thread_cont(th, &r, 0);
		}
		return;
	}
	bp = pt_slot_bp(mm, r.rip - 1);
	if (bp && r.rip - 1 == bp->slot + bp->insn.len) {
		hit_after(th, bp, &r);
		return;
	}
	if (t->e->ext && t->e->ext->trap && t->e->ext->trap(th, &r))
		return;
	pt_thread_cont(th, NULL, SIGTRAP); /* the target's own SIGTRAP */
}

static void dispatch(struct pt_engine *e, pid_t tid, int status)
{
	struct pt_thread *th = pt_thr_find(e, tid);

	if (!th) {
		for (int i = 0; i < e->nlinger; i++) {
			if (e->linger[i] != tid)
				continue;
			e->linger[i] = e->linger[--e->nlinger];
			if (WIFSTOPPED(status))
				ptrace(PTRACE_DETACH, tid, 0, (status >> 16) || WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status));
			return;
		}
		if (WIFSTOPPED(status))
			pt_unknown_add(e, tid, status);
		return; /* exits of threads we never knew, or let go */
	}
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		pt_thread_exit(th, status);
		return;
	}
	/* The hot case first: a plain SIGTRAP stop. */
	if (status >> 8 == SIGTRAP && !th->held) {
		th->state = PT_STOPPED;
		pt_serve_trap(th);
		return;
	}
	pt_note_stop(e, th, status);
	pt_resume_thread(th);
}

/* ---- sites ---- */

static int site_lookup(struct pt_target *t, uint32_t id, struct pt_site **out)
{
	struct pt_target *mm = pt_mm(t);
	if (t->dead || t->detached)
		return -ESRCH;
	if (id == 0 || id > mm->nsites || !mm->sites[id - 1].bp)
		return xflow_hook_fail(&t->e->pub, -ENOENT, "site %u: no such site in pid %d", id, (int)t->pub.pid);
	*out = &mm->sites[id - 1];
	return 0;
}

static void count_site(struct pt_site *s, int delta)
{
	if (s->when == XFLOW_HOOK_BEFORE)
		s->bp->nbefore += delta;
	else
		s->bp->nafter += delta;
}

static int new_bp(struct pt_target *t, uint64_t addr, struct pt_bp **out)
{
	struct pt_engine *e = t->e;
	struct pt_target *mm = pt_mm(t);
	struct xflow_map map;
	uint8_t code[16];
	struct pt_bp *bp = NULL;
	int rc, at;

	rc = xflow_maps_find(t->pub.pid, addr, &map);
	if (rc == -ENOENT)
		return xflow_hook_fail(&e->pub, -EFAULT, "0x%llx: not mapped in pid %d", (unsigned long long)addr,
				       (int)t->pub.pid);
	if (rc < 0)
		return xflow_hook_fail(&e->pub, rc, "pid %d: cannot read its maps: %s", (int)t->pub.pid,
				       xflow_hook_strerror(rc));
	if (map.perms[2] != 'x')
		return xflow_hook_fail(&e->pub, -EACCES, "0x%llx: not in an executable mapping (%s) of pid %d",
				       (unsigned long long)addr, map.perms, (int)t->pub.pid);
	at = bp_lower(mm, addr);
	if (at > 0) {
		struct pt_bp *prev = mm->bps[at - 1];
		if (prev->addr + prev->insn.len > addr)
			return xflow_hook_fail(&e->pub, -EINVAL,
					       "0x%llx: not an instruction boundary: inside '%s' at 0x%llx",
					       (unsigned long long)addr, prev->insn.text,
					       (unsigned long long)prev->addr);
	}
	size_t n = map.end - addr < sizeof(code) ? (size_t)(map.end - addr) : sizeof(code);
	memset(code, 0, sizeof(code));
	rc = xflow_tmem_peek(&t->mem, addr, code, n);
	if (rc < 0)
		return xflow_hook_fail(&e->pub, rc, "0x%llx: cannot read the instruction: %s",
				       (unsigned long long)addr, xflow_hook_strerror(rc));
	xflow_ooline_shadow(mm, addr, code, n);
	bp = calloc(1, sizeof(*bp));
	if (!bp)
		return -ENOMEM;
	bp->addr = addr;
	rc = xflow_insn_decode(code, n, addr, &bp->insn, e->pub.errbuf, sizeof(e->pub.errbuf));
	if (rc < 0)
		goto fail;
	if (at < mm->nbps && addr + bp->insn.len > mm->bps[at]->addr) {
		rc = xflow_hook_fail(&e->pub, -EINVAL, "0x%llx: '%s' would cover the site at 0x%llx",
				     (unsigned long long)addr, bp->insn.text, (unsigned long long)mm->bps[at]->addr);
		goto fail;
	}
	if (bp->insn.kind == XFLOW_INSN_OOL) {
		rc = xflow_ooline_slot(t, bp, &map);
		if (rc < 0)
			goto fail;
	}
	rc = pt_grow((void **)&mm->bps, &mm->capbps, mm->nbps + 1, sizeof(*mm->bps));
	if (rc < 0)
		goto fail;
	memmove(&mm->bps[at + 1], &mm->bps[at], (size_t)(mm->nbps - at) * sizeof(*mm->bps));
	mm->bps[at] = bp;
	mm->nbps++;
	*out = bp;
	return 0;
fail:
	free(bp);
	return rc;
}

static int pt_site_add(struct xflow_hook_target *pub, uint64_t addr, enum xflow_hook_when when,
		       xflow_hook_handler_fn fn, void *data, uint32_t *site)
{
	struct pt_target *t = TARGET(pub), *mm = pt_mm(t);
	struct pt_bp *bp;
	struct pt_site *s;
	int rc;

	if (t->dead || t->detached)
		return -ESRCH;
	if (!fn)
		return -EINVAL;
	rc = pt_stop_world(t);
	if (rc < 0)
		goto out;
	bp = pt_bp_find(mm, addr);
	if (!bp) {
		rc = new_bp(t, addr, &bp);
		if (rc < 0)
			goto out;
	}
	rc = pt_grow((void **)&mm->sites, (int *)&mm->capsites, (int)mm->nsites + 1, sizeof(*mm->sites));
	if (rc == 0)
		rc = pt_grow((void **)&bp->sites, &bp->capsites, bp->nsites + 1, sizeof(*bp->sites));
	if (rc < 0)
		goto out;
	s = &mm->sites[mm->nsites++];
	memset(s, 0, sizeof(*s));
	s->id = mm->nsites;
	s->bp = bp;
	s->when = when;
	s->fn = fn;
	s->data = data;
	s->enabled = true;
	bp->sites[bp->nsites++] = s->id;
	count_site(s, 1);
	rc = pt_bp_sync(t, bp);
	if (rc < 0) {
		count_site(s, -1);
		s->enabled = false;
		s->bp = NULL;
		bp->nsites--;
		rc = xflow_hook_fail(&t->e->pub, rc, "0x%llx: cannot write the breakpoint: %s",
				     (unsigned long long)addr, xflow_hook_strerror(rc));
		goto out;
	}
	if (site)
		*site = s->id;
out:
	if (!t->dead)
		pt_resume_world(t);
	return rc;
}

static int site_set(struct pt_target *t, struct pt_site *s, bool on, bool remove)
{
	int rc = 0;
	if (s->enabled != on) {
		rc = pt_stop_world(t);
		if (rc == 0) {
			s->enabled = on;
			count_site(s, on ? 1 : -1);
			rc = pt_bp_sync(t, s->bp);
		}
		if (!t->dead)
			pt_resume_world(t);
	}
	if (remove && rc == 0) {
		struct pt_bp *bp = s->bp;
		for (int i = 0; i < bp->nsites; i++)
			if (bp->sites[i] == s->id)
				bp->sites[i] = bp->sites[--bp->nsites];
		s->bp = NULL; /* the bp stays, for late traps and threads in its slot */
	}
	return rc;
}

static int pt_site_enable(struct xflow_hook_target *pub, uint32_t id, bool on)
{
	struct pt_target *t = TARGET(pub);
	struct pt_site *s = NULL;
	int rc = site_lookup(t, id, &s);
	return rc < 0 ? rc : site_set(t, s, on, false);
}

static int pt_site_remove(struct xflow_hook_target *pub, uint32_t id)
{
	struct pt_target *t = TARGET(pub);
	struct pt_site *s = NULL;
	int rc = site_lookup(t, id, &s);
	return rc < 0 ? rc : site_set(t, s, false, true);
}

static int pt_site_stats(struct xflow_hook_target *pub, uint32_t id, struct xflow_hook_site_stats *st)
{
	struct pt_target *t = TARGET(pub);
	struct pt_site *s = NULL;
	int rc = site_lookup(t, id, &s);
	if (rc < 0)
		return rc;
	memset(st, 0, sizeof(*st));
	st->hits = s->hits;
	st->enabled = s->enabled;
	st->addr = s->bp->addr;
	st->when = s->when;
	st->mech = XFLOW_HOOK_MECH_TRAP;
	return 0;
}

int pt_mem_read(struct xflow_hook_target *pub, uint64_t addr, void *buf, size_t len)
{
	struct pt_target *t = TARGET(pub);
	if (t->dead || t->detached)
		return -ESRCH;
	int rc = xflow_tmem_read(&t->mem, addr, buf, len);
	if (rc == 0) {
		xflow_ooline_shadow(pt_mm(t), addr, buf, len);
		if (t->e->ext && t->e->ext->shadow)
			t->e->ext->shadow(pt_mm(t), addr, buf, len);
	}
	return rc;
}

int pt_mem_write(struct xflow_hook_target *pub, uint64_t addr, const void *buf, size_t len)
{
	struct pt_target *t = TARGET(pub);
	if (t->dead || t->detached)
		return -ESRCH;
	return xflow_tmem_write(&t->mem, addr, buf, len);
}

/* ---- the loop ---- */

static void drain_resumeq(struct pt_engine *e)
{
	/* The n entries there now; a resume may queue more (and move the
	 * array), which wait for the next round.  No allocation here. */
	int n = e->nresumeq;
	for (int i = 0; i < n; i++) {
		struct pt_thread *th = pt_thr_find(e, e->resumeq[i]);
		if (th && th->queued)
			pt_resume_thread(th);
	}
	memmove(e->resumeq, e->resumeq + n, (size_t)(e->nresumeq - n) * sizeof(*e->resumeq));
	e->nresumeq -= n;
}

static void detach_all(struct pt_engine *e)
{
	for (int i = 0; i < e->ntargets; i++) {
		struct pt_target *t = e->targets[i];
		if (!t->dead && !t->detached && !t->mm_owner)
			pt_detach_target(t, true);
	}
	for (int i = 0; i < e->ntargets; i++) {
		struct pt_target *t = e->targets[i];
		if (!t->dead && !t->detached)
			pt_detach_target(t, true);
	}
}

static void release_holds(struct pt_engine *e)
{
	for (int i = 0; i < e->ntargets; i++) {
		struct pt_target *t = e->targets[i];
		if (!t->hold)
			continue;
		t->hold = false;
		for (int j = 0; j < t->nthreads; j++) {
			t->threads[j]->held = false;
			pt_queue_resume(e, t->threads[j]);
		}
	}
}

int pt_run(struct xflow_hook *h, int timeout_ms)
{
	struct pt_engine *e = ENGINE(h);
	int served = 0, rc = 0;

	if (e->depth > 0)
		return -EDEADLK; /* from a handler */
	xflow_hook_control_poll(h);
	h->timed_out = 0;
	if (timeout_ms > 0)
		xflow_hook_timer_arm(h, timeout_ms);
	release_holds(e);
	for (;;) {
		int st;
		pid_t tid;

		pt_flush(e);
		if (e->ext && e->ext->tick)
			e->ext->tick(e);
		if (h->stop_requested) {
			detach_all(e);
			pt_flush(e);
			rc = -EINTR;
			break;
		}
		if (e->nresumeq) {
			drain_resumeq(e);
			continue;
		}
		if (e->ntargets == 0 && e->nlinger == 0)
			break;
		if (timeout_ms == 0) {
			tid = waitpid(-1, &st, __WALL | WNOHANG);
			if (tid <= 0)
				break;
		} else {
			h->in_wait = 1;
			/* The flags must be read after in_wait is seen set by a
			 * handler: see restore_signals.c. */
			atomic_signal_fence(memory_order_seq_cst);
			if (h->stop_requested || (timeout_ms > 0 && h->timed_out)) {
				h->in_wait = 0;
				if (h->stop_requested)
					continue;
				break;
			}
			tid = waitpid(-1, &st, __WALL);
			h->in_wait = 0;
			if (tid < 0) {
				if (errno == EINTR) {
					if (timeout_ms > 0 && h->timed_out)
						break;
					continue;
				}
				if (errno == ECHILD) {
					/* Nothing left that can report: all gone. */
					for (int i = 0; i < e->ntargets; i++) {
						struct pt_target *t = e->targets[i];
						while (t->nthreads)
							pt_thread_exit(t->threads[0], 0);
					}
					continue;
				}
				rc = -errno;
				break;
			}
		}
		dispatch(e, tid, st);
		served++;
	}
	if (timeout_ms > 0 || h->stop_requested)
		xflow_hook_timer_arm(h, -1);
	return rc < 0 ? rc : served;
}

int pt_control_fd(struct xflow_hook *h, int fd)
{
	return xflow_hook_control_fd_watch(h, fd);
}

int pt_engine_new(const struct xflow_hook_config *cfg, size_t size, const struct pt_ext *ext,
		  struct pt_engine **out)
{
	struct pt_engine *e = calloc(1, size);
	int rc;

	if (!e)
		return -ENOMEM;
	e->pub.cfg = *cfg;
	e->pub.emergency = pt_emergency;
	e->ext = ext;
	rc = xflow_hook_wake_init(&e->pub);
	if (rc < 0) {
		free(e);
		return rc;
	}
	*out = e;
	return 0;
}

static int pt_new(const struct xflow_hook_config *cfg, struct xflow_hook **out)
{
	struct pt_engine *e;
	int rc = pt_engine_new(cfg, sizeof(*e), NULL, &e);
	if (rc == 0)
		*out = &e->pub;
	return rc;
}

void pt_free(struct xflow_hook *h)
{
	struct pt_engine *e = ENGINE(h);
	pt_engine_fini(e);
	free(e);
}

void pt_engine_fini(struct pt_engine *e)
{
	detach_all(e);
	pt_flush(e);
	while (e->ntargets)
		pt_target_free(e->targets[0]);
	xflow_hook_wake_fini(&e->pub);
	free(e->targets);
	free(e->tids);
	free(e->unknown);
	free(e->resumeq);
	free(e->linger);
	free(e->evq);
}

const struct xflow_hook_backend_ops xflow_hook_ptrace_ops = {
	.name = "ptrace",
	.hook_new = pt_new,
	.hook_free = pt_free,
	.attach = pt_attach,
	.spawn = pt_spawn,
	.detach = pt_detach,
	.site_add = pt_site_add,
	.site_remove = pt_site_remove,
	.site_enable = pt_site_enable,
	.site_stats = pt_site_stats,
	.mem_read = pt_mem_read,
	.mem_write = pt_mem_write,
	.run = pt_run,
	.control_fd = pt_control_fd,
};
