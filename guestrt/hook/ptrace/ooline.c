/*
 * Scratch pages and slots.  A page is mapped into the target by running an
 * mmap system call on one of its stopped threads (xflow_ooline_syscall,
 * which says how that stays safe if we die in the middle); the first slots
 * of each page are the area those calls run from later.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/audit.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "guestrt/hook/ptrace/ooline.h"
#include "guestrt/x86/x86_asm.h"

#define REACH (1ull << 30) /* where to look for a page near a rip-relative site */

void xflow_ooline_shadow(struct pt_target *mm, uint64_t addr, void *buf, size_t len)
{
	uint8_t *b = buf;
	for (int i = 0; i < mm->nbps; i++) {
		struct pt_bp *bp = mm->bps[i];
		if (bp->installed && bp->addr >= addr && bp->addr - addr < len)
			b[bp->addr - addr] = bp->insn.bytes[0];
	}
}

/* The kernel's codes of an interrupted system call to restart (they never
 * reach user space). */
enum { K_ERESTARTSYS = 512, K_ERESTARTNOINTR = 513, K_ERESTARTNOHAND = 514, K_ERESTART_RESTARTBLOCK = 516 };

/* The registers a thread stopped with @r runs with once let go and no
 * signal handler runs first: a system call the kernel would restart is
 * restarted (rip back on its syscall instruction, its number in rax). */
static void regs_resumed(const struct user_regs_struct *r, struct user_regs_struct *out)
{
	*out = *r;
	if ((int64_t)r->orig_rax < 0)
		return;
	switch (-(int64_t)r->rax) {
	case K_ERESTARTSYS:
	case K_ERESTARTNOINTR:
	case K_ERESTARTNOHAND:
		out->rax = r->orig_rax;
		out->rip -= 2;
		break;
	case K_ERESTART_RESTARTBLOCK:
		out->rax = SYS_restart_syscall;
		out->rip -= 2;
		break;
	default:
		break;
	}
	out->orig_rax = (uint64_t)-1;
}

/* The code of one injected call at @at: the system call, then a move back
 * of every register it or its setting up changed, to @back's values, and
 * a jump to back->rip.  The agent takes the thread back at the call's exit
 * and never runs the rest: it is for a thread whose tracer died meanwhile,
 * which the kernel lets go where it stopped. */
static int call_code(uint8_t out[PT_CALL_LEN], uint64_t at, const struct user_regs_struct *back)
{
	static const uint8_t syscall_insn[] = { 0x0f, 0x05 };
	const struct {
		enum xreg r;
		uint64_t v;
	} regs[] = {
		{ XR_RAX, back->rax }, { XR_RCX, back->rcx }, { XR_RDX, back->rdx }, { XR_RSI, back->rsi },
		{ XR_RDI, back->rdi }, { XR_R8, back->r8 },   { XR_R9, back->r9 },   { XR_R10, back->r10 },
		{ XR_R11, back->r11 },
	};
	struct xcode c;
	xc_init(&c, out, PT_CALL_LEN, at);
	xc_bytes(&c, syscall_insn, sizeof(syscall_insn));
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		xc_mov_ri(&c, regs[i].r, regs[i].v);
	xc_jmp_far(&c, back->rip);
	if (c.err)
		return c.err;
	memset(out + c.n, 0xcc, PT_CALL_LEN - c.n);
	return 0;
}

/* Zero bytes at the end of an executable mapping of a file: the padding
 * after its last function, which nothing runs.  An injected call's code
 * goes there while the target has no page of ours for it: should we die
 * before putting the zeros back, what is left there is never run. */
static int call_padding(struct pt_target *t, uint64_t *at)
{
	char path[64], line[512];
	uint8_t tail[4 * PT_CALL_LEN];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)t->pub.pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	int rc = -ENOSPC;
	while (rc < 0 && fgets(line, sizeof(line), f)) {
		uint64_t s, e;
		char perms[8];
		int name = 0;
		/* A private mapping of a file: not a JIT's memfd or shared
		 * code, whose free space may be its next function's. */
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %*s %*s %*s %n", &s, &e, perms, &name) < 3 || !name ||
		    perms[2] != 'x' || perms[3] != 'p' || line[name] != '/' || strncmp(line + name, "/memfd:", 7) == 0 ||
		    strstr(line + name, " (deleted)") || e - s < sizeof(tail) ||
		    xflow_tmem_peek(&t->mem, e - sizeof(tail), tail, sizeof(tail)) < 0)
			continue;
		size_t z = 0;
		while (z < sizeof(tail) && tail[sizeof(tail) - 1 - z] == 0)
			z++;
		/* Twice what we need: a last instruction's zero operand bytes
		 * are never taken for padding. */
		if (z >= 2 * PT_CALL_LEN) {
			*at = e - PT_CALL_LEN;
			rc = 0;
		}
	}
	fclose(f);
	return rc;
}

/* What th's stop is, from its siginfo: the event of an event stop inside
 * a system call (clone, fork, exec...), 0 for any other stop. */
static int stop_event(struct pt_thread *th)
{
	siginfo_t si;
	if (ptrace(PTRACE_GETSIGINFO, th->tid, 0, &si) < 0 || si.si_signo != SIGTRAP)
		return 0;
	int ev = si.si_code >> 8;
	return ev > 0 && ev < PTRACE_EVENT_STOP ? ev : 0;
}

/* The stopped thread to make the call: the one that loses least if we die
 * in the middle (no signal of its own held for it, no trap to serve, not
 * in a job-control stop), never one blocked in vfork. */
static struct pt_thread *call_thread(struct pt_target *t)
{
	struct pt_thread *best = NULL;
	int best_cost = 1 << 30;
	for (int i = 0; i < t->nthreads; i++) {
		struct pt_thread *th = t->threads[i];
		if (th->state != PT_STOPPED || th->in_vfork)
			continue;
		int cost = (th->group_stop ? 8 : 0) + (th->resume_sig ? 4 : 0) + (th->pending_hit ? 2 : 0);
		if (cost < best_cost)
			best = th, best_cost = cost;
	}
	return best;
}

/* Resume th with @req until it stops at a system call (@sysc) or in an
 * interrupt (!@sysc); a signal that comes meanwhile is held (queued again
 * once the call is over).  The wait status, or -ESRCH when it died. */
static int run_to(struct pt_thread *th, long req, bool sysc)
{
	if (ptrace(req, th->tid, 0, 0) < 0)
		return -errno;
	for (;;) {
		int st;
		pid_t w = waitpid(th->tid, &st, __WALL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			pt_thread_exit(th, st);
			return -ESRCH;
		}
		int sig = WSTOPSIG(st), ev = st >> 16;
		if (sysc ? sig == (SIGTRAP | 0x80) : ev == PTRACE_EVENT_STOP)
			return st;
		if (ev == 0 && sig != SIGTRAP && sig != (SIGTRAP | 0x80))
			pt_hold_signal(th, sig);
		if (ptrace(req, th->tid, 0, 0) < 0)
			return -errno;
	}
}

static const char *call_name(long nr, char *buf, size_t len)
{
	static const struct {
		long nr;
		const char *name;
	} names[] = {
		{ SYS_mmap, "mmap" },	  { SYS_mprotect, "mprotect" }, { SYS_munmap, "munmap" },
		{ SYS_madvise, "madvise" }, { SYS_memfd_create, "memfd_create" }, { SYS_ftruncate, "ftruncate" },
		{ SYS_close, "close" },	  { SYS_rt_sigaction, "rt_sigaction" },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].nr == nr)
			return names[i].name;
	snprintf(buf, len, "system call %ld", nr);
	return buf;
}

/* Whether th's seccomp filters let it make the call from @ip: 0, or why
 * not in the engine's error. */
static int call_allowed(struct pt_thread *th, long nr, const uint64_t args[6], uint64_t ip)
{
	struct seccomp_data d = { .nr = (int)nr, .arch = AUDIT_ARCH_X86_64, .instruction_pointer = ip };
	char name[32], why[200];
	memcpy(d.args, args, sizeof(d.args));
	int rc = xflow_seccomp_check(th->tid, &d, call_name(nr, name, sizeof(name)), why, sizeof(why));
	if (rc < 0)
		return xflow_hook_fail(&th->t->e->pub, rc, "pid %d: %s", (int)th->t->pub.pid, why);
	return 0;
}

int xflow_ooline_may_call(struct pt_target *t, long nr, const uint64_t args[6])
{
	struct pt_thread *th = call_thread(t);
	return th ? call_allowed(th, nr, args, 0) : -ESRCH;
}

/*
 * Every step of an injected call leaves the thread able to go on without
 * us, since we may die at any of them (SIGKILL: the kernel lets the thread
 * go from where it stopped, its signal dropped):
 *
 *   1. its code is written where nothing runs (the runtime's call area, a
 *      scratch page's, or file padding): the system call, then what puts
 *      the thread's registers back and jumps to where it was going;
 *   2. its registers are pointed at that code (orig_rax -1: nothing of the
 *      kernel's restarts into it), and it runs to the call's exit stop
 *      (PTRACE_SYSCALL: no int3, which a thread would die of untraced);
 *   3. there its own registers go back.  A system call it was in when
 *      stopped, that the kernel would restart, is restarted by the kernel
 *      only at a stop in signal delivery: the thread goes through an
 *      interrupt stop for that, with registers that would restart it
 *      themselves meanwhile.
 *
 * A thread stopped inside a system call (clone, exec) is first run to that
 * call's exit: the kernel writes its rax when it returns.
 */
int xflow_ooline_syscall(struct pt_target *t, long nr, const uint64_t args[6], uint64_t stub, int64_t *ret)
{
	struct pt_target *mm = pt_mm(t);
	struct xflow_hook *h = &t->e->pub;
	struct pt_thread *th = call_thread(t);
	struct user_regs_struct saved, back, r;
	uint8_t orig[PT_CALL_LEN], code[PT_CALL_LEN];
	bool borrowed = false, pointed = false;
	int rc, st;

	if (!th)
		return -ESRCH;
	if (stop_event(th) && (st = run_to(th, PTRACE_SYSCALL, true)) < 0)
		return st;
	xflow_hook_step(h, t->pub.pid, "call-settled");
	/* Out of a job-control stop for good: resumed with PTRACE_CONT. */
	th->group_stop = false;
	if (ptrace(PTRACE_GETREGS, th->tid, 0, &saved) < 0)
		return -errno;
	regs_resumed(&saved, &back);
	if (!stub && mm->nscr) {
		stub = mm->scr[0].base;
	} else if (!stub) {
		borrowed = true;
		if ((rc = call_padding(t, &stub)) < 0)
			return xflow_hook_fail(h, rc, "pid %d: no executable padding to run a system call from",
					       (int)t->pub.pid);
	}
	/* Not a call the target's seccomp filter would kill it for (or trap,
	 * or fail): the filter runs on it as the kernel would. */
	rc = call_allowed(th, nr, args, stub + 2);
	if (rc == 0)
		rc = call_code(code, stub, &back);
	if (rc == 0 && borrowed)
		rc = xflow_tmem_peek(&t->mem, stub, orig, sizeof(orig));
	if (rc == 0)
		rc = xflow_tmem_poke(&t->mem, stub, code, sizeof(code));
	if (rc < 0)
		goto out;
	xflow_hook_step(h, t->pub.pid, "call-code");
	r = saved;
	r.rax = (uint64_t)nr;
	r.rdi = args[0];
	r.rsi = args[1];
	r.rdx = args[2];
	r.r10 = args[3];
	r.r8 = args[4];
	r.r9 = args[5];
	r.rip = stub;
	r.orig_rax = (uint64_t)-1;
	if (ptrace(PTRACE_SETREGS, th->tid, 0, &r) < 0) {
		rc = -errno;
		goto out;
	}
	pointed = true;
	xflow_hook_step(h, t->pub.pid, "call-set");
	/* Its entry, then its exit. */
	for (int i = 0; i < 2; i++) {
		if ((st = run_to(th, PTRACE_SYSCALL, true)) < 0) {
			rc = st;
			goto out;
		}
		xflow_hook_step(h, t->pub.pid, i ? "call-exit" : "call-entry");
	}
	if (ptrace(PTRACE_GETREGS, th->tid, 0, &r) < 0) {
		rc = -errno;
		goto out;
	}
	*ret = (int64_t)r.rax;
	if (back.rip != saved.rip) {
		/* A call to restart (regs_resumed moved rip back onto it). */
		if (ptrace(PTRACE_SETREGS, th->tid, 0, &back) < 0) {
			rc = -errno;
			goto out;
		}
		xflow_hook_step(h, t->pub.pid, "call-resumable");
		ptrace(PTRACE_INTERRUPT, th->tid, 0, 0);
		if ((st = run_to(th, PTRACE_CONT, false)) < 0) {
			rc = st;
			goto out;
		}
	}
	if (ptrace(PTRACE_SETREGS, th->tid, 0, &saved) == 0)
		pointed = false;
	else
		rc = -errno;
	xflow_hook_step(h, t->pub.pid, "call-back");
out:
	/* A thread that failed us on the way but lives is put back if it can
	 * be; if not, the code it would return through stays. */
	if (pointed && rc != -ESRCH && ptrace(PTRACE_SETREGS, th->tid, 0, &saved) == 0)
		pointed = false;
	if (borrowed && (!pointed || rc == -ESRCH))
		xflow_tmem_poke(&t->mem, stub, orig, sizeof(orig));
	/* It stopped for its own signals on the way, or was in one's stop
	 * when taken: its stop now is the call's, where a signal passed on is
	 * dropped, so they go back into its queue. */
	if (rc != -ESRCH)
		pt_release_signals(th);
	return rc;
}

static int new_scratch(struct pt_target *t, const struct pt_bp *bp, const struct xflow_map *map)
{
	struct pt_engine *e = t->e;
	struct pt_target *mm = pt_mm(t);
	uint64_t hint = 0, args[6];
	int64_t ret;
	int rc, flags = MAP_PRIVATE | MAP_ANONYMOUS;

	rc = pt_grow((void **)&mm->scr, &mm->capscr, mm->nscr + 1, sizeof(*mm->scr));
	if (rc < 0)
		return rc;
	if (xflow_maps_gap_near(t->pub.pid, bp->addr, PT_SCRATCH_SIZE, REACH, &hint) == 0)
		flags |= MAP_FIXED_NOREPLACE;
	else if (bp->insn.disp_off)
		return xflow_hook_fail(&e->pub, -ENOSPC, "0x%llx: no room for a scratch page within reach of '%s'",
				       (unsigned long long)bp->addr, bp->insn.text);
	args[0] = hint;
	args[1] = PT_SCRATCH_SIZE;
	args[2] = PROT_READ | PROT_EXEC;
	args[3] = (uint64_t)flags;
	args[4] = (uint64_t)-1;
	args[5] = 0;
	(void)map;
	rc = xflow_ooline_syscall(t, SYS_mmap, args, 0, &ret);
	if (rc < 0 && e->pub.errbuf[0])
		return rc; /* it said why (a seccomp filter would refuse it) */
	if (rc < 0)
		return xflow_hook_fail(&e->pub, rc, "pid %d: cannot run mmap in the target: %s", (int)t->pub.pid,
				       xflow_hook_strerror(rc));
	if (ret < 0 && ret > -4096)
		return xflow_hook_fail(&e->pub, (int)ret, "pid %d: mmap of a scratch page failed in the target: %s",
				       (int)t->pub.pid, xflow_hook_strerror((int)ret));
	memset(&mm->scr[mm->nscr], 0, sizeof(mm->scr[0]));
	mm->scr[mm->nscr].base = (uint64_t)ret;
	mm->scr[mm->nscr].used = PT_CALL_LEN / PT_SLOT_SIZE; /* the injected calls' area */
	mm->nscr++;
	return 0;
}

int xflow_ooline_slot(struct pt_target *t, struct pt_bp *bp, const struct xflow_map *map)
{
	struct pt_target *mm = pt_mm(t);
	struct pt_scratch *s = NULL;
	uint8_t code[PT_SLOT_SIZE];
	int rc;

	for (int i = 0; i < mm->nscr && !s; i++)
		if (mm->scr[i].used < PT_SCRATCH_SLOTS &&
		    xflow_insn_reaches(&bp->insn, mm->scr[i].base + mm->scr[i].used * PT_SLOT_SIZE))
			s = &mm->scr[i];
	if (!s) {
		rc = new_scratch(t, bp, map);
		if (rc < 0)
			return rc;
		s = &mm->scr[mm->nscr - 1];
	}
	uint64_t slot = s->base + s->used * PT_SLOT_SIZE, next = bp->addr + bp->insn.len;
	rc = xflow_insn_relocate(&bp->insn, slot, code);
	if (rc < 0)
		return xflow_hook_fail(&t->e->pub, rc, "0x%llx: the operand of '%s' is out of reach of its slot",
				       (unsigned long long)bp->addr, bp->insn.text);
	struct xcode c;
	static const uint8_t nop = 0x90; /* nop, or int3 for AFTER sites */
	xc_init(&c, code + bp->insn.len, sizeof(code) - bp->insn.len, slot + bp->insn.len);
	xc_bytes(&c, &nop, 1);
	xc_jmp_far(&c, next);
	memset(c.p + c.n, 0xcc, c.max - c.n);
	rc = xflow_tmem_poke(&t->mem, slot, code, sizeof(code));
	if (rc < 0)
		return xflow_hook_fail(&t->e->pub, rc, "pid %d: cannot write its scratch page: %s", (int)t->pub.pid,
				       xflow_hook_strerror(rc));
	s->owner[s->used++] = bp;
	bp->slot = slot;
	return 0;
}
