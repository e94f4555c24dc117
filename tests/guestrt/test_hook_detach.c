/*
 * Letting targets go: after a detach (asked for, by a signal to the tracer,
 * or because the controlling monitor died) the target's text is the file's,
 * nobody traces it, and it runs to the end with an untraced run's output.
 * Also the targets that fight back: code rewritten or unmapped under a
 * site, fork and exec.
 */
#include "tests/guestrt/gt.h"

static struct xflow_hook *engine(enum xflow_hook_fork_policy pol, xflow_hook_event_fn ev, void *data)
{
	struct xflow_hook_config cfg = {.fork_policy = pol, .on_event = ev, .event_data = data};
	struct xflow_hook *h = NULL;
	gt_need_ptrace();
	cr_assert_eq(xflow_hook_new(&xflow_hook_ptrace_ops, &cfg, &h), 0);
	return h;
}

static int tracer_pid_of(pid_t pid)
{
	char path[64], line[256];
	int tp = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %d", &tp) == 1)
			break;
	fclose(f);
	return tp;
}

/* Sites of every kind the fixture offers: rip-relative (hooked at -O2),
 * emulated mov (other), AFTER. */
static void add_sites(struct xflow_hook *h, struct xflow_hook_target *t, const char *bin, uint64_t *n)
{
	cr_assert_eq(xflow_hook_site_add(t, gt_addr(t->pid, bin, "hooked"), XFLOW_HOOK_BEFORE, gt_count, n, NULL),
		     0, "%s", xflow_hook_last_error(h));
	cr_assert_eq(xflow_hook_site_add(t, gt_addr(t->pid, bin, "hooked"), XFLOW_HOOK_AFTER, gt_count, n, NULL), 0);
	cr_assert_eq(xflow_hook_site_add(t, gt_addr(t->pid, bin, "other"), XFLOW_HOOK_AFTER, gt_count, n, NULL), 0);
}

static void check_after_detach(struct gt_proc *p, const char *bin, const char *want)
{
	char got[1024];
	cr_expect(gt_text_intact(p->pid, bin), "text differs from the file after detach");
	cr_expect_eq(tracer_pid_of(p->pid), 0);
	gt_send(p);
	int st = gt_finish(p, got, sizeof(got));
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %x", st);
	cr_expect_str_eq(got, want);
}

Test(hook_detach, asked)
{
	struct xflow_hook *h = engine(XFLOW_HOOK_FORK_INHERIT, NULL, NULL);
	const char *bin = gt_build("fx_loop", "-O2");
	char want[1024], line[256];
	uint64_t n = 0;
	struct gt_proc p;
	struct xflow_hook_target *t;

	gt_reference(bin, "3", "2000", "swe", want, sizeof(want));
	gt_start(&p, bin, "3", "2000", "swe");
	gt_line(&p, line, sizeof(line));
	cr_assert_eq(xflow_hook_attach(h, p.pid, &t), 0, "%s", xflow_hook_last_error(h));
	add_sites(h, t, bin, &n);
	gt_send(&p);
	cr_assert(xflow_hook_run(h, 150) >= 0);
	cr_assert(n > 0);
	cr_assert_eq(xflow_hook_detach(t), 0, "%s", xflow_hook_last_error(h));
	check_after_detach(&p, bin, want);
	xflow_hook_free(h);
}

/* The tracer in a process of its own, so that it can be signalled or lose
 * its monitor.  Exits 0 when run() ended for the expected reason. */
static pid_t start_tracer(pid_t target, const char *bin, int control_fd, int expect_reason, int ready_fd)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	struct xflow_hook *h = NULL;
	struct xflow_hook_target *t;
	struct xflow_hook_config cfg = {0};
	uint64_t n = 0;
	if (xflow_hook_new(&xflow_hook_ptrace_ops, &cfg, &h) < 0 || xflow_hook_signals_install(h) < 0 ||
	    xflow_hook_attach(h, target, &t) < 0)
		_exit(2);
	uint64_t fn;
	if (xflow_hook_resolve(target, bin, XFLOW_HOOK_LOC_VADDR, gt_sym(bin, "hooked"), &fn) < 0 ||
	    xflow_hook_site_add(t, fn, XFLOW_HOOK_BEFORE, gt_count, &n, NULL) < 0 ||
	    xflow_hook_site_add(t, fn, XFLOW_HOOK_AFTER, gt_count, &n, NULL) < 0)
		_exit(3);
	if (control_fd >= 0 && xflow_hook_control_fd(h, control_fd) < 0)
		_exit(4);
	if (write(ready_fd, "r", 1) != 1)
		_exit(5);
	int rc = xflow_hook_run(h, 20000);
	int reason = xflow_hook_stop_reason(h);
	xflow_hook_free(h);
	_exit(rc == -EINTR && reason == expect_reason && n > 0 ? 0 : 10);
}

static void tracer_case(int sig)
{
	bool by_signal = sig != 0;
	const char *bin = gt_build("fx_loop", "-O2");
	char want[1024], line[256], c;
	struct gt_proc p;
	int ready[2], ctl[2] = {-1, -1}, st;
	pid_t monitor = -1;

	gt_need_ptrace();
	gt_reference(bin, "2", "3000", "swe", want, sizeof(want));
	gt_start(&p, bin, "2", "3000", "swe");
	gt_line(&p, line, sizeof(line));
	cr_assert_eq(pipe(ready), 0);
	if (!by_signal) {
		cr_assert_eq(pipe(ctl), 0);
		monitor = fork();
		if (monitor == 0) {
			close(ctl[0]);
			pause();
			_exit(0);
		}
		close(ctl[1]);
	}
	pid_t tracer = start_tracer(p.pid, bin, ctl[0], by_signal ? sig : -1, ready[1]);
	if (ctl[0] >= 0)
		close(ctl[0]);
	cr_assert_eq(read(ready[0], &c, 1), 1, "the tracer did not start");
	gt_send(&p);
	usleep(150000);
	if (by_signal)
		kill(tracer, sig);
	else
		kill(monitor, SIGKILL);
	cr_assert_eq(waitpid(tracer, &st, 0), tracer);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "tracer status %x", st);
	if (monitor > 0)
		waitpid(monitor, NULL, 0);
	check_after_detach(&p, bin, want);
}

Test(hook_detach, tracer_sigterm)
{
	tracer_case(SIGTERM);
}

Test(hook_detach, tracer_sigint_sighup_sigquit)
{
	tracer_case(SIGINT);
	tracer_case(SIGHUP);
	tracer_case(SIGQUIT);
}

Test(hook_detach, monitor_killed)
{
	tracer_case(0);
}

Test(hook_detach, target_rewrites_its_code)
{
	struct xflow_hook *h = engine(XFLOW_HOOK_FORK_INHERIT, NULL, NULL);
	const char *bin = gt_build("fx_loop", "-O2");
	char want[1024], got[1024], line[256];
	uint64_t n = 0;
	struct gt_proc p;
	struct xflow_hook_target *t;

	gt_reference(bin, "1", "1", "wre", want, sizeof(want));
	gt_start(&p, bin, "1", "1", "wre");
	gt_line(&p, line, sizeof(line));
	cr_assert_eq(xflow_hook_attach(h, p.pid, &t), 0);
	uint64_t fn = gt_addr(p.pid, bin, "patched_fn");
	cr_assert_eq(xflow_hook_site_add(t, fn, XFLOW_HOOK_BEFORE, gt_count, &n, NULL), 0, "%s",
		     xflow_hook_last_error(h));
	gt_send(&p);
	gt_run_line(h, &p, line, sizeof(line));
	cr_expect_str_eq(line, "out: patched 1 2\n");
	/* It waits now; its new code must survive the detach. */
	xflow_hook_run(h, 0);
	cr_assert_eq(xflow_hook_detach(t), 0, "%s", xflow_hook_last_error(h));
	unsigned char code[6];
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)p.pid);
	int fd = open(path, O_RDONLY);
	cr_assert_eq(pread(fd, code, sizeof(code), (off_t)fn), 6);
	close(fd);
	cr_expect(code[0] == 0xb8 && code[1] == 2, "the target's own code was touched: %02x %02x", code[0], code[1]);
	cr_expect_eq(n, 1);
	gt_send(&p);
	int st = gt_finish(&p, got, sizeof(got));
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	xflow_hook_free(h);
}

Test(hook_detach, target_unmaps_its_code)
{
	struct xflow_hook *h = engine(XFLOW_HOOK_FORK_INHERIT, NULL, NULL);
	const char *bin = gt_build("fx_loop", "-O2");
	char want[1024], got[1024], line[256];
	uint64_t n = 0;
	unsigned long long jit;
	struct gt_proc p;
	struct xflow_hook_target *t;

	gt_reference(bin, "1", "300", "je", want, sizeof(want));
	gt_start(&p, bin, "1", "300", "je");
	gt_line(&p, line, sizeof(line));
	cr_assert_eq(sscanf(line, "jit %llx", &jit), 1);
	cr_assert_eq(xflow_hook_attach(h, p.pid, &t), 0);
	cr_assert_eq(xflow_hook_site_add(t, jit, XFLOW_HOOK_BEFORE, gt_count, &n, NULL), 0, "%s",
		     xflow_hook_last_error(h));
	gt_send(&p);
	gt_run_line(h, &p, line, sizeof(line));
	xflow_hook_run(h, 0);
	cr_expect_eq(n, 300);
	cr_expect_str_eq(line, want);
	/* The site's page is gone: detaching must neither fail nor map it. */
	cr_assert_eq(xflow_hook_detach(t), 0, "%s", xflow_hook_last_error(h));
	gt_send(&p);
	int st = gt_finish(&p, got, sizeof(got));
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	xflow_hook_free(h);
}

struct fork_rec {
	pid_t parent;
	uint64_t parent_hits, child_hits;
	int forks, execs, exits, detached;
	int status; /* of the parent: the engine reaps it */
};

static void fork_count(const struct xflow_hook_hit *hit, void *data)
{
	struct fork_rec *r = data;
	if (hit->pid == r->parent)
		r->parent_hits++;
	else
		r->child_hits++;
}

static void fork_ev(const struct xflow_hook_event *ev, void *data)
{
	struct fork_rec *r = data;
	r->forks += ev->kind == XFLOW_HOOK_EV_FORK;
	r->execs += ev->kind == XFLOW_HOOK_EV_EXEC;
	r->exits += ev->kind == XFLOW_HOOK_EV_EXITED;
	r->detached += ev->kind == XFLOW_HOOK_EV_DETACHED;
	if (ev->kind == XFLOW_HOOK_EV_EXITED && ev->pid == r->parent)
		r->status = ev->status;
}

/* Run fx_loop with @a1 @a2 @mode traced under @pol, a counter on `hooked`,
 * to its end; its output in @got, an untraced run's in @want. */
static void fork_run(enum xflow_hook_fork_policy pol, const char *a1, const char *a2, const char *mode,
		     struct fork_rec *r, char *got, char *want, size_t len)
{
	struct xflow_hook *h = engine(pol, fork_ev, r);
	const char *bin = gt_build("fx_loop", "-O2");
	char line[256];
	struct gt_proc p;
	struct xflow_hook_target *t;

	gt_reference(bin, a1, a2, mode, want, len);
	gt_start(&p, bin, a1, a2, mode);
	gt_line(&p, line, sizeof(line));
	r->parent = p.pid;
	cr_assert_eq(xflow_hook_attach(h, p.pid, &t), 0);
	cr_assert_eq(xflow_hook_site_add(t, gt_addr(p.pid, bin, "hooked"), XFLOW_HOOK_BEFORE, fork_count, r, NULL),
		     0);
	gt_send(&p);
	gt_run_all(h, 20000);
	gt_finish(&p, got, len);
	cr_expect(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0, "status %x", r->status);
	xflow_hook_free(h);
}

static void fork_case(enum xflow_hook_fork_policy pol)
{
	struct fork_rec r = {0};
	char want[1024], got[1024];

	fork_run(pol, "2", "500", "wfx", &r, got, want, sizeof(got));
	/* Parent and child print in either order. */
	char *a = strstr(got, "out: child sum="), *b = strstr(want, "out: child sum=");
	cr_assert(a && b);
	cr_expect_eq(strncmp(a, b, strcspn(b, "\n")), 0);
	memmove(a, a + strcspn(a, "\n") + 1, strlen(a + strcspn(a, "\n") + 1) + 1);
	memmove(b, b + strcspn(b, "\n") + 1, strlen(b + strcspn(b, "\n") + 1) + 1);
	cr_expect_str_eq(got, want);
	cr_expect_eq(r.forks, 1);
	cr_expect_eq(r.execs, 1);
	cr_expect_eq(r.parent_hits, 1000);
	cr_expect_eq(r.child_hits, pol == XFLOW_HOOK_FORK_INHERIT ? 500 : 0);
	cr_expect_eq(r.exits, pol == XFLOW_HOOK_FORK_INHERIT ? 2 : 1);
}

Test(hook_detach, fork_inherit_and_exec)
{
	fork_case(XFLOW_HOOK_FORK_INHERIT);
}

Test(hook_detach, fork_detach_and_exec)
{
	fork_case(XFLOW_HOOK_FORK_DETACH);
}

static void vfork_case(enum xflow_hook_fork_policy pol)
{
	struct fork_rec r = {0};
	char want[1024], got[1024];

	fork_run(pol, "1", "300", "wv", &r, got, want, sizeof(got));
	cr_expect_str_eq(got, want);
	cr_expect_eq(r.forks, 1);
	cr_expect_eq(r.parent_hits, 300);
	cr_expect_eq(r.child_hits, pol == XFLOW_HOOK_FORK_INHERIT ? 2 : 0);
	/* INHERIT follows the child through its exec to its exit. */
	cr_expect_eq(r.execs, pol == XFLOW_HOOK_FORK_INHERIT ? 1 : 0);
	cr_expect_eq(r.exits, pol == XFLOW_HOOK_FORK_INHERIT ? 2 : 1);
}

Test(hook_detach, vfork_inherit)
{
	vfork_case(XFLOW_HOOK_FORK_INHERIT);
}

Test(hook_detach, vfork_detach)
{
	vfork_case(XFLOW_HOOK_FORK_DETACH);
}

struct self_detach {
	uint64_t hits;
	int rc;
};

static void detach_at_100(const struct xflow_hook_hit *hit, void *data)
{
	struct self_detach *d = data;
	if (++d->hits == 100)
		d->rc = xflow_hook_detach(hit->target);
}

/* A handler lets its own target go: the thread it runs for is stopped at
 * the trap and must be put back on the original instruction. */
Test(hook_detach, from_a_handler)
{
	struct xflow_hook *h = engine(XFLOW_HOOK_FORK_INHERIT, NULL, NULL);
	const char *bin = gt_build("fx_loop", "-O2");
	char want[1024], line[256];
	struct self_detach d = {0, -1};
	uint64_t n = 0;
	struct gt_proc p;
	struct xflow_hook_target *t;

	gt_reference(bin, "2", "2000", "we", want, sizeof(want));
	gt_start(&p, bin, "2", "2000", "we");
	gt_line(&p, line, sizeof(line));
	cr_assert_eq(xflow_hook_attach(h, p.pid, &t), 0);
	cr_assert_eq(xflow_hook_site_add(t, gt_addr(p.pid, bin, "hooked"), XFLOW_HOOK_BEFORE, detach_at_100, &d, NULL),
		     0);
	cr_assert_eq(xflow_hook_site_add(t, gt_addr(p.pid, bin, "hooked"), XFLOW_HOOK_AFTER, gt_count, &n, NULL), 0);
	gt_send(&p);
	gt_run_all(h, 20000); /* returns once the target is gone from the engine */
	cr_expect_eq(d.rc, 0);
	cr_expect_eq(d.hits, 100);
	check_after_detach(&p, bin, want);
	xflow_hook_free(h);
}

static void crash_at_200(const struct xflow_hook_hit *hit, void *data)
{
	(void)hit;
	if (++*(uint64_t *)data == 200)
		raise(SIGSEGV); /* as a handler's bug would */
}

/* The tracer crashes in a handler: its crash path must leave the target
 * whole, every thread where it belongs. */
Test(hook_detach, tracer_crash_in_handler)
{
	const char *bin = gt_build("fx_loop", "-O2");
	char want[1024], line[256], c;
	struct gt_proc p;
	int ready[2], st;

	gt_need_ptrace();
	gt_reference(bin, "3", "3000", "swe", want, sizeof(want));
	gt_start(&p, bin, "3", "3000", "swe");
	gt_line(&p, line, sizeof(line));
	cr_assert_eq(pipe(ready), 0);
	pid_t tracer = fork();
	if (tracer == 0) {
		struct xflow_hook *h = NULL;
		struct xflow_hook_target *t;
		struct xflow_hook_config cfg = {0};
		uint64_t n = 0, n2 = 0, fn, fn2;
		signal(SIGSEGV, SIG_DFL);
		if (xflow_hook_new(&xflow_hook_ptrace_ops, &cfg, &h) < 0 || xflow_hook_signals_install(h) < 0 ||
		    xflow_hook_attach(h, p.pid, &t) < 0 ||
		    xflow_hook_resolve(p.pid, bin, XFLOW_HOOK_LOC_VADDR, gt_sym(bin, "hooked"), &fn) < 0 ||
		    xflow_hook_resolve(p.pid, bin, XFLOW_HOOK_LOC_VADDR, gt_sym(bin, "other"), &fn2) < 0 ||
		    xflow_hook_site_add(t, fn, XFLOW_HOOK_BEFORE, crash_at_200, &n, NULL) < 0 ||
		    xflow_hook_site_add(t, fn, XFLOW_HOOK_AFTER, gt_count, &n2, NULL) < 0 ||
		    xflow_hook_site_add(t, fn2, XFLOW_HOOK_AFTER, gt_count, &n2, NULL) < 0 || write(ready[1], "r", 1) != 1)
			_exit(2);
		xflow_hook_run(h, 20000);
		_exit(3);
	}
	cr_assert_eq(read(ready[0], &c, 1), 1, "the tracer did not start");
	gt_send(&p);
	cr_assert_eq(waitpid(tracer, &st, 0), tracer);
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "tracer status %x", st);
	check_after_detach(&p, bin, want);
}

struct vdetach {
	pid_t parent;
	struct xflow_hook_target *pt;
	int child_hits, rc;
};

static void vfork_detach_parent(const struct xflow_hook_hit *hit, void *data)
{
	struct vdetach *v = data;
	if (hit->pid != v->parent && v->child_hits++ == 0)
		v->rc = xflow_hook_detach(v->pt);
}

/* The parent is let go while its vfork child runs on the same memory (here
 * from a hit of the child): the child must be let go with it, bytes back. */
Test(hook_detach, vfork_parent_detached_while_child_runs)
{
	struct xflow_hook *h = engine(XFLOW_HOOK_FORK_INHERIT, NULL, NULL);
	const char *bin = gt_build("fx_loop", "-O2");
	char want[1024], got[1024], line[256];
	struct vdetach v = {0};
	struct gt_proc p;

	gt_reference(bin, "1", "300", "wve", want, sizeof(want));
	gt_start(&p, bin, "1", "300", "wve");
	gt_line(&p, line, sizeof(line));
	v.parent = p.pid;
	cr_assert_eq(xflow_hook_attach(h, p.pid, &v.pt), 0);
	cr_assert_eq(xflow_hook_site_add(v.pt, gt_addr(p.pid, bin, "hooked"), XFLOW_HOOK_BEFORE, vfork_detach_parent,
					 &v, NULL),
		     0);
	gt_send(&p);
	gt_run_all(h, 20000);
	cr_expect_eq(v.child_hits, 1);
	cr_expect_eq(v.rc, 0, "%s", xflow_hook_last_error(h));
	/* Wait for the vfork child's end before looking at the parent's text. */
	char seen[1024] = "";
	do {
		gt_line(&p, line, sizeof(line));
		strncat(seen, line, sizeof(seen) - strlen(seen) - 1);
	} while (strncmp(line, "out: vfork", 10) != 0);
	cr_expect(gt_text_intact(p.pid, bin));
	cr_expect_eq(tracer_pid_of(p.pid), 0);
	gt_send(&p);
	gt_finish(&p, got, sizeof(got));
	strncat(seen, got, sizeof(seen) - strlen(seen) - 1);
	cr_expect_str_eq(seen, want);
	xflow_hook_free(h);
}
