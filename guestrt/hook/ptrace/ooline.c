/*
 * Scratch pages and slots.  A page is mapped into the target by running an
 * mmap system call on one of its stopped threads: the thread's registers are
 * saved, rip is pointed at `syscall; int3`, and everything is put back when
 * the int3 reports.  The first time, those three bytes are borrowed from the
 * text at the site (all threads are stopped, and the bytes are restored
 * before any runs); later, slot 0 of a scratch page holds them for good.
 *
 * orig_rax is set to -1 for the injected call, so that a thread stopped in
 * the middle of an interrupted system call is not "restarted" into our
 * stub; the saved registers restore its own restart when it resumes.
 */
#include <errno.h>
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

static const uint8_t stub_code[PT_STUB_LEN] = {0x0f, 0x05, 0xcc}; /* syscall; int3 */

void xflow_ooline_shadow(struct pt_target *mm, uint64_t addr, void *buf, size_t len)
{
	uint8_t *b = buf;
	for (int i = 0; i < mm->nbps; i++) {
		struct pt_bp *bp = mm->bps[i];
		if (bp->installed && bp->addr >= addr && bp->addr - addr < len)
			b[bp->addr - addr] = bp->insn.bytes[0];
	}
}

/* Resume th with regs *r until the stub's int3 reports; *r is then the
 * registers there. */
static int run_stub(struct pt_thread *th, struct user_regs_struct *r, uint64_t stub)
{
	if (ptrace(PTRACE_SETREGS, th->tid, 0, r) < 0)
		return -errno;
	xflow_hook_step(&th->t->e->pub, "call-set");
	if (ptrace(PTRACE_CONT, th->tid, 0, 0) < 0)
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
		if (ev == 0 && sig == SIGTRAP) {
			if (ptrace(PTRACE_GETREGS, th->tid, 0, r) < 0)
				return -errno;
			if (r->rip == stub + PT_STUB_LEN) {
				xflow_hook_step(&th->t->e->pub, "call-trap");
				return 0;
			}
		}
		/* A signal that came meanwhile is kept for the thread's resume. */
		if (ev == 0 && sig != SIGTRAP && th->resume_sig == 0)
			th->resume_sig = sig;
		ptrace(PTRACE_CONT, th->tid, 0, 0);
	}
}

int xflow_ooline_syscall(struct pt_target *t, long nr, const uint64_t args[6], uint64_t stub, int64_t *ret)
{
	struct pt_target *mm = pt_mm(t);
	struct pt_thread *th = NULL;
	struct user_regs_struct saved, r;
	uint8_t orig[PT_STUB_LEN];
	bool borrowed = mm->nscr == 0;
	int rc = 0;

	for (int i = 0; i < t->nthreads && !th; i++)
		if (t->threads[i]->state == PT_STOPPED)
			th = t->threads[i];
	if (!th)
		return -ESRCH;
	if (ptrace(PTRACE_GETREGS, th->tid, 0, &saved) < 0)
		return -errno;
	if (!borrowed) {
		stub = mm->scr[0].base;
	} else {
		rc = xflow_tmem_peek(&t->mem, stub, orig, sizeof(orig));
		if (rc == 0)
			rc = xflow_tmem_poke(&t->mem, stub, stub_code, sizeof(stub_code));
		if (rc < 0)
			return rc;
	}
	/* A thread in an event stop (exec, clone, fork) is inside its system
	 * call, whose return value the kernel writes when it resumes: it would
	 * overwrite our rax.  So first let it reach the int3 of the stub, to a
	 * stop where the call is over, and save the registers there (with its
	 * own rip and orig_rax, which decide a restart of an interrupted call). */
	r = saved;
	r.rip = stub + PT_STUB_LEN - 1;
	r.orig_rax = (uint64_t)-1;
	rc = run_stub(th, &r, stub);
	if (rc < 0)
		goto out;
	r.rip = saved.rip;
	r.orig_rax = saved.orig_rax;
	saved = r;
	r.rax = (uint64_t)nr;
	r.rdi = args[0];
	r.rsi = args[1];
	r.rdx = args[2];
	r.r10 = args[3];
	r.r8 = args[4];
	r.r9 = args[5];
	r.rip = stub;
	r.orig_rax = (uint64_t)-1;
	rc = run_stub(th, &r, stub);
	if (rc < 0)
		goto out;
	*ret = (int64_t)r.rax;
	if (ptrace(PTRACE_SETREGS, th->tid, 0, &saved) < 0)
		rc = -errno;
	xflow_hook_step(&t->e->pub, "call-back");
out:
	if (borrowed)
		xflow_tmem_poke(&t->mem, stub, orig, sizeof(orig));
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
	uint64_t stub = bp->addr + PT_STUB_LEN <= map->end ? bp->addr : map->start;
	rc = xflow_ooline_syscall(t, SYS_mmap, args, stub, &ret);
	if (rc < 0)
		return xflow_hook_fail(&e->pub, rc, "pid %d: cannot run mmap in the target: %s", (int)t->pub.pid,
				       xflow_hook_strerror(rc));
	if (ret < 0 && ret > -4096)
		return xflow_hook_fail(&e->pub, (int)ret, "pid %d: mmap of a scratch page failed in the target: %s",
				       (int)t->pub.pid, xflow_hook_strerror((int)ret));
	rc = xflow_tmem_poke(&t->mem, (uint64_t)ret, stub_code, sizeof(stub_code));
	if (rc < 0)
		return xflow_hook_fail(&e->pub, rc, "pid %d: cannot write its scratch page: %s", (int)t->pub.pid,
				       xflow_hook_strerror(rc));
	memset(&mm->scr[mm->nscr], 0, sizeof(mm->scr[0]));
	mm->scr[mm->nscr].base = (uint64_t)ret;
	mm->scr[mm->nscr].used = 1; /* slot 0: the syscall stub */
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
