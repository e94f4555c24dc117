/*
 * The runtime's signal handler, for when nobody else can help: while the
 * agent lives it sees every signal first (ptrace) and mends what is its
 * own; once it is gone (killed with SIGKILL, say), the target must still
 * not die of what the runtime put into it:
 *
 *   SIGTRAP  at an int3 fallback site: resume at the site's trampoline,
 *            which runs the advice and the instruction the int3 replaced.
 *   SIGSEGV, SIGBUS  in a fault-safe access: resume at its fault exit.
 *
 * Anything else is the program's own signal: it goes to the handler ours
 * replaced, as the kernel would have delivered it.
 */
#include <signal.h>
#include <sys/ucontext.h>

#include "guestrt/hook/inproc/rt/rt.h"

static const struct xflow_rt_trap *trap_find(uint64_t addr)
{
	const struct xflow_rt_traps *t = (const struct xflow_rt_traps *)rt_config.traps;
	if (!t)
		return 0;
	/* The last trap at or below addr, if addr is among its bytes. */
	uint32_t lo = 0, hi = t->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && addr - t->v[lo - 1].addr < t->v[lo - 1].len ? &t->v[lo - 1] : 0;
}

/* What the program had: call it, or do what the default would. */
static void chain(int idx, int sig, void *info, void *uc)
{
	const struct xflow_rt_ksigaction *old = &rt_config.old[idx];
	if (old->handler == (uint64_t)(uintptr_t)SIG_DFL || old->handler == (uint64_t)(uintptr_t)SIG_IGN) {
		/* A fault ignored or left to the default kills, as the kernel
		 * forces it: put the default back, then either return into the
		 * faulting instruction (SIGSEGV, SIGBUS) or raise the trap
		 * again (SIGTRAP, which does not repeat by itself). */
		struct xflow_rt_ksigaction dfl = {0};
		rt_syscall4(RT_SYS_rt_sigaction, sig, (long)&dfl, 0, 8);
		if (sig == SIGTRAP)
			rt_syscall3(RT_SYS_tgkill, rt_syscall3(RT_SYS_getpid, 0, 0, 0),
				    rt_syscall3(RT_SYS_gettid, 0, 0, 0), sig);
		return;
	}
	if (old->flags & SA_SIGINFO)
		((void (*)(int, void *, void *))(uintptr_t)old->handler)(sig, info, uc);
	else
		((void (*)(int))(uintptr_t)old->handler)(sig);
}

void rt_on_signal(int sig, void *info, void *ucv)
{
	ucontext_t *uc = ucv;
	uint64_t rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];

	if (sig == SIGSEGV || sig == SIGBUS) {
		if (rip >= (uint64_t)(uintptr_t)rt_safe_begin && rip < (uint64_t)(uintptr_t)rt_safe_end) {
			uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)rt_safe_fault;
			return;
		}
		chain(sig == SIGSEGV ? XFLOW_RT_SIG_SEGV : XFLOW_RT_SIG_BUS, sig, info, uc);
		return;
	}
	if (sig == SIGTRAP) {
		const struct xflow_rt_trap *t = trap_find(rip - 1);
		if (t) {
			uc->uc_mcontext.gregs[REG_RIP] = (greg_t)t->resume;
			return;
		}
		chain(XFLOW_RT_SIG_TRAP, sig, info, uc);
	}
}
