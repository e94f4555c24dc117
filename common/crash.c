/*
 * Fatal signals said before the death they cause (common/crash.h).  Only
 * write(2) and backtrace_symbols_fd(3) here, and no stdio: the process may
 * be dying of a corrupt heap or inside stdio itself.  The program's name
 * and the first backtrace are set up when the handlers are installed, so
 * that nothing is loaded or allocated in the handler.
 */
#include <execinfo.h>
#include <stdint.h>
#include <string.h>
#include <sys/ucontext.h>
#include <unistd.h>

#include "common/crash.h"

/* One per process, as the signal handlers are. */
static const char *crash_prog = "xflow";

/* Under AddressSanitizer its own handler reports the faults, better. */
#ifdef __SANITIZE_ADDRESS__
static const int crash_sigs[] = { SIGILL, SIGABRT };
#else
static const int crash_sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
#endif

struct line {
	char buf[320];
	size_t n;
};

static void put(struct line *l, const char *s)
{
	while (*s && l->n < sizeof(l->buf) - 1)
		l->buf[l->n++] = *s++;
}

static void put_num(struct line *l, unsigned long long v, unsigned base)
{
	char d[24];
	int k = 0;
	do {
		d[k++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v && k < (int)sizeof(d));
	while (k > 0 && l->n < sizeof(l->buf) - 1)
		l->buf[l->n++] = d[--k];
}

static const char *sig_name(int sig)
{
	switch (sig) {
	case SIGSEGV: return "SIGSEGV, a bad memory access";
	case SIGBUS: return "SIGBUS, a bad memory access";
	case SIGILL: return "SIGILL, an illegal instruction";
	case SIGFPE: return "SIGFPE, an arithmetic fault";
	case SIGABRT: return "SIGABRT, aborted: a failed check, said above if it was";
	default: return "a fatal signal";
	}
}

void xflow_crash_say(int sig, const siginfo_t *si, const void *uc)
{
	struct line l = { .n = 0 };
	put(&l, crash_prog);
	put(&l, ": fatal signal ");
	put_num(&l, (unsigned)sig, 10);
	put(&l, " (");
	put(&l, sig_name(sig));
	put(&l, ")");
	if (si && sig != SIGABRT) {
		put(&l, " at address 0x");
		put_num(&l, (unsigned long long)(uintptr_t)si->si_addr, 16);
	}
#if defined(__x86_64__)
	if (uc) {
		put(&l, ", instruction pointer 0x");
		put_num(&l, (unsigned long long)((const ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP], 16);
	}
#endif
	put(&l, ", pid ");
	put_num(&l, (unsigned long long)getpid(), 10);
	put(&l, "; the stack:\n");
	if (write(2, l.buf, l.n) < 0)
		return;
	void *frames[32];
	int n = backtrace(frames, 32);
	backtrace_symbols_fd(frames, n, 2);
}

static void on_crash(int sig, siginfo_t *si, void *uc)
{
	xflow_crash_say(sig, si, uc);
	/* SA_RESETHAND put the default action back; a fault would happen
	 * again on return anyway, a raised signal would not. */
	raise(sig);
}

void xflow_crash_install(const char *prog)
{
	struct sigaction sa;
	void *warm[1];
	crash_prog = prog;
	/* The first backtrace loads what it needs (libgcc's unwinder): not
	 * in a handler. */
	backtrace(warm, 1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_crash;
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER;
	for (size_t i = 0; i < sizeof(crash_sigs) / sizeof(crash_sigs[0]); i++)
		sigaction(crash_sigs[i], &sa, NULL);
}
