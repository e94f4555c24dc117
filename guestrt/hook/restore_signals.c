/*
 * Signals of the tracer.  A signal handler must not restore bytes itself:
 * it may interrupt the engine half way through changing a breakpoint.  So
 * the handlers only record why the engine must stop and wake it; the engine
 * then detaches every target from its main loop, where the state is
 * consistent.  The handlers are installed without SA_RESTART, so a signal
 * that comes while the engine sleeps in its wait ends the wait with EINTR.
 * One that comes just before the engine enters the wait (after it looked at
 * the flags) would be missed until the next event: for that window the
 * handler arms a timer that keeps interrupting every few milliseconds while
 * the engine is in its wait, which bounds the delay without ever losing an
 * event (leaving the wait with siglongjmp could lose one the kernel already
 * handed over).
 *
 * Signal dispositions are per process, hence the two pointers below: the
 * one engine woken by SIGURG and the one that owns the fatal signals.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/crash.h"
#include "guestrt/hook/hook_priv.h"

#define WAKE_SIGNAL SIGURG

static struct xflow_hook *volatile wake_hook;
static struct xflow_hook *volatile fatal_hook;
static struct sigaction old_wake;
static timer_t wake_timer;
static int wake_timer_ok;

static const int fatal_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
static struct sigaction old_fatal[4];
static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
static struct sigaction old_crash[5];

#define KICK_NS 2000000L

static void kick(void)
{
	struct itimerspec its = {.it_value = {0, KICK_NS}, .it_interval = {0, KICK_NS}};
	if (wake_timer_ok)
		timer_settime(wake_timer, 0, &its, NULL);
}

static void leave_wait(struct xflow_hook *h)
{
	if (h->in_wait)
		kick();
}

static void request_stop(struct xflow_hook *h, int reason)
{
	if (!h->stop_requested) {
		h->stop_reason = reason;
		h->stop_requested = 1;
	}
}

void xflow_hook_control_poll(struct xflow_hook *h)
{
	if (h->control_fd < 0)
		return;
	struct pollfd p = {.fd = h->control_fd, .events = POLLIN | POLLRDHUP};
	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)))
		request_stop(h, -1);
}

static void on_wake(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	int saved = errno;
	struct xflow_hook *h = wake_hook;
	if (!h)
		goto out;
	if (si->si_code == SI_TIMER)
		h->timed_out = 1;
	else if (si->si_code > 0 && si->si_code != SI_KERNEL)
		xflow_hook_control_poll(h); /* POLL_HUP, POLL_IN...: from the control fd */
	errno = saved;
	leave_wait(h);
out:
	errno = saved;
}

static void on_fatal(int sig)
{
	int saved = errno;
	struct xflow_hook *h = fatal_hook;
	if (h) {
		request_stop(h, sig);
		if (gettid() != h->owner_tid)
			syscall(SYS_tgkill, getpid(), h->owner_tid, WAKE_SIGNAL);
		errno = saved;
		leave_wait(h);
	}
	errno = saved;
}

int xflow_hook_wake_init(struct xflow_hook *h)
{
	struct sigaction sa;

	h->owner_tid = gettid();
	h->control_fd = -1;
	h->stop_reason = -2;
	if (wake_hook)
		return -EBUSY;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_wake;
	sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: the wait must end */
	sigfillset(&sa.sa_mask);
	if (sigaction(WAKE_SIGNAL, &sa, &old_wake) < 0)
		return -errno;
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = WAKE_SIGNAL;
	sev._sigev_un._tid = h->owner_tid; /* sigev_notify_thread_id: glibc 2.36 lacks the name */
	wake_timer_ok = timer_create(CLOCK_MONOTONIC, &sev, &wake_timer) == 0;
	wake_hook = h;
	return 0;
}

void xflow_hook_wake_fini(struct xflow_hook *h)
{
	if (fatal_hook == h)
		xflow_hook_signals_uninstall(h);
	if (wake_hook != h)
		return;
	if (wake_timer_ok)
		timer_delete(wake_timer);
	wake_timer_ok = 0;
	sigaction(WAKE_SIGNAL, &old_wake, NULL);
	wake_hook = NULL;
}

int xflow_hook_timer_arm(struct xflow_hook *h, int ms)
{
	struct itimerspec its;
	if (!wake_timer_ok || wake_hook != h)
		return -ENOTSUP;
	memset(&its, 0, sizeof(its));
	if (ms >= 0) {
		its.it_value.tv_sec = ms / 1000;
		its.it_value.tv_nsec = (long)(ms % 1000) * 1000000L + (ms == 0);
		/* Keep firing after the deadline: see the comment at the top. */
		its.it_interval.tv_nsec = KICK_NS;
	}
	h->timed_out = 0;
	return timer_settime(wake_timer, 0, &its, NULL) < 0 ? -errno : 0;
}

/* A crash in this process: the loop will never run again, so the backend's
 * emergency path does the restoring here.  Then the signal's default action
 * applies: the raise is blocked until the handler returns (sa_mask), and a
 * faulting instruction would fault again anyway. */
static void on_crash(int sig, siginfo_t *si, void *uc)
{
	struct xflow_hook *h = fatal_hook;
	sigset_t alrm;
	fatal_hook = NULL;
	/* The emergency path bounds itself with alarm(): let it fire. */
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	sigprocmask(SIG_UNBLOCK, &alrm, NULL);
	signal(SIGALRM, SIG_DFL);
	if (h && h->emergency)
		h->emergency(h);
	xflow_crash_say(sig, si, uc);
	signal(sig, SIG_DFL);
	raise(sig);
}

int xflow_hook_signals_install(struct xflow_hook *h)
{
	struct sigaction sa;
	if (fatal_hook)
		return -EBUSY;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	sigfillset(&sa.sa_mask);
	fatal_hook = h;
	for (unsigned i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
		sigaction(fatal_signals[i], &sa, &old_fatal[i]);
	sa.sa_handler = NULL;
	sa.sa_sigaction = on_crash;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER | SA_SIGINFO;
	for (unsigned i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++)
		sigaction(crash_signals[i], &sa, &old_crash[i]);
	return 0;
}

void xflow_hook_signals_uninstall(struct xflow_hook *h)
{
	if (fatal_hook != h)
		return;
	for (unsigned i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
		sigaction(fatal_signals[i], &old_fatal[i], NULL);
	for (unsigned i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++)
		sigaction(crash_signals[i], &old_crash[i], NULL);
	fatal_hook = NULL;
}

void xflow_hook_signals_reraise(int signo)
{
	if (signo <= 0)
		return;
	signal(signo, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, signo);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(signo);
}

void xflow_hook_stop(struct xflow_hook *h)
{
	int saved = errno;
	request_stop(h, 0);
	if (gettid() != h->owner_tid)
		syscall(SYS_tgkill, getpid(), h->owner_tid, WAKE_SIGNAL);
	errno = saved;
}

int xflow_hook_stop_reason(const struct xflow_hook *h)
{
	return h->stop_requested ? h->stop_reason : -2;
}

int xflow_hook_control_fd_watch(struct xflow_hook *h, int fd)
{
	if (h->control_fd >= 0) {
		int fl = fcntl(h->control_fd, F_GETFL);
		if (fl >= 0)
			fcntl(h->control_fd, F_SETFL, fl & ~O_ASYNC);
	}
	h->control_fd = -1;
	if (fd < 0)
		return 0;
	struct f_owner_ex own = {.type = F_OWNER_TID, .pid = h->owner_tid};
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETOWN_EX, &own) < 0 || fcntl(fd, F_SETSIG, WAKE_SIGNAL) < 0 ||
	    fcntl(fd, F_SETFL, fl | O_ASYNC) < 0)
		return -errno;
	h->control_fd = fd;
	/* The peer may be gone already: no signal will say so. */
	xflow_hook_control_poll(h);
	return 0;
}
