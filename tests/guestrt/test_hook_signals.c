/*
 * The target's own signals while a tracer comes and goes: one sent at any
 * step of an attach and a detach (the runtime's system calls injected into
 * a thread sleeping in a call the kernel restarts, the world stopped and
 * resumed, every thread let go) reaches the program, once.  A signal that
 * stops a traced thread is the tracer's to pass on; passed from the wrong
 * stop, the kernel drops it (ptrace_signals.c).
 */
#include "tests/guestrt/gt.h"

/* Attach the in-process engine to the fixture, then detach it; a signal
 * sent at step @n by XFLOW_HOOK_DIE_AT.  Whether step @n came. */
static bool signalled_life(const char *bin, unsigned n, int sig, char *outs, size_t len)
{
	struct gt_proc p;
	char line[256], die[16];
	gt_start(&p, bin, NULL, NULL, NULL);
	gt_line(&p, line, sizeof(line));
	cr_assert_str_eq(line, "ready\n");
	snprintf(die, sizeof(die), "%u", n);
	setenv("XFLOW_HOOK_DIE_AT", die, 1);
	struct xflow_hook *h;
	struct xflow_hook_target *t = NULL;
	cr_assert_eq(xflow_hook_new(&xflow_hook_inproc_ops, NULL, &h), 0);
	unsetenv("XFLOW_HOOK_DIE_AT");
	cr_expect_eq(xflow_hook_attach(h, p.pid, &t), 0, "step %u: %s", n, xflow_hook_last_error(h));
	if (t)
		cr_expect_eq(xflow_hook_detach(t), 0, "step %u: %s", n, xflow_hook_last_error(h));
	bool fired = h->steps >= h->die_at;
	xflow_hook_free(h);
	if (!fired)
		kill(p.pid, sig); /* past the last step: sent untraced, as a reference */
	/* Delivered by now, or pending; then the line. */
	usleep(2000);
	cr_assert_eq(gt_write_in(&p, "stop\n"), 0, "step %u: the fixture is gone", n);
	int st = gt_finish(&p, outs, len);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "step %u: the fixture ended with %x", n, st);
	return fired;
}

static void every_step(int sig, const char *want)
{
	gt_need_ptrace();
	const char *bin = gt_build("sig_fx", "-O1");
	char outs[256], num[8];
	unsigned n, lost = 0;
	snprintf(num, sizeof(num), "%d", sig);
	setenv("XFLOW_HOOK_DIE_WHO", "target", 1);
	setenv("XFLOW_HOOK_DIE_SIG", num, 1);
	for (n = 1; n < 2000; n++) {
		bool fired = signalled_life(bin, n, sig, outs, sizeof(outs));
		if (strcmp(outs, want) != 0) {
			lost++;
			cr_expect_str_eq(outs, want, "signal %d sent at step %u of the attach and detach", sig, n);
		}
		if (!fired)
			break;
	}
	unsetenv("XFLOW_HOOK_DIE_WHO");
	unsetenv("XFLOW_HOOK_DIE_SIG");
	cr_log_info("signal %d sent at each of %u steps of an attach and a detach: %u not delivered once", sig,
		    n - 1, lost);
	/* The injection and the ejection have dozens of steps. */
	cr_expect_gt(n, 20);
}

Test(hook_signals, usr2_at_every_step, .timeout = 300)
{
	every_step(SIGUSR2, "out: usr2 1 term 0\n");
}

/* The signal that stops a program: the demo's guests lost it when the
 * agent was taking its runtime out (issue 30). */
Test(hook_signals, term_at_every_step, .timeout = 300)
{
	every_step(SIGTERM, "out: usr2 0 term 1\n");
}
