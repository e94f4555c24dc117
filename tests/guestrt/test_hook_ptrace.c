/*
 * The ptrace hook engine on real processes: exact hit counts, registers and
 * memory seen by handlers, AFTER sites, toggles, and refusals.
 */
#include <sys/prctl.h>

#include "tests/guestrt/gt.h"

static struct xflow_hook *new_engine(enum xflow_hook_fork_policy pol, xflow_hook_event_fn ev, void *data)
{
	struct xflow_hook_config cfg = {.fork_policy = pol, .on_event = ev, .event_data = data};
	struct xflow_hook *h = NULL;
	gt_need_ptrace();
	cr_assert_eq(xflow_hook_new(&xflow_hook_ptrace_ops, &cfg, &h), 0);
	return h;
}

/* Spawn bin with its stdout on a pipe; *out reads it. */
static struct xflow_hook_target *spawn(struct xflow_hook *h, const char *bin, const char *threads,
				       const char *calls, const char *flags, FILE **out)
{
	int fds[2], saved = dup(1);
	struct xflow_hook_target *t = NULL;
	char *argv[] = {(char *)bin, (char *)threads, (char *)calls, (char *)flags, NULL};
	cr_assert_eq(pipe(fds), 0);
	fflush(stdout);
	dup2(fds[1], 1);
	int rc = xflow_hook_spawn(h, argv, &t);
	dup2(saved, 1);
	close(saved);
	close(fds[1]);
	cr_assert_eq(rc, 0, "spawn: %s", xflow_hook_last_error(h));
	*out = fdopen(fds[0], "r");
	return t;
}

static void read_out(FILE *f, char *buf, size_t len)
{
	char line[256];
	buf[0] = 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "out:", 4) == 0)
			strncat(buf, line, len - strlen(buf) - 1);
	fclose(f);
}

struct exit_rec {
	int exited;
	int status;
};

static void on_exit_ev(const struct xflow_hook_event *ev, void *data)
{
	struct exit_rec *r = data;
	if (ev->kind == XFLOW_HOOK_EV_EXITED) {
		r->exited++;
		r->status = ev->status;
	}
}

static void count_case(const char *opt, const char *threads, const char *calls, uint64_t expect_each)
{
	struct exit_rec ex = {0};
	struct xflow_hook *h = new_engine(XFLOW_HOOK_FORK_INHERIT, on_exit_ev, &ex);
	const char *bin = gt_build("fx_loop", opt);
	char want[1024], got[1024];
	uint64_t n_hooked = 0, n_other = 0, n_probe = 0;
	FILE *out;

	gt_reference(bin, threads, calls, "", want, sizeof(want));
	struct xflow_hook_target *t = spawn(h, bin, threads, calls, "", &out);
	cr_assert_eq(xflow_hook_site_add(t, gt_addr(t->pid, bin, "hooked"), XFLOW_HOOK_BEFORE, gt_count, &n_hooked,
					 NULL),
		     0, "%s", xflow_hook_last_error(h));
	cr_assert_eq(xflow_hook_site_add(t, gt_addr(t->pid, bin, "other"), XFLOW_HOOK_BEFORE, gt_count, &n_other,
					 NULL),
		     0, "%s", xflow_hook_last_error(h));
	cr_assert_eq(xflow_hook_site_add(t, gt_addr(t->pid, bin, "probe_args"), XFLOW_HOOK_AFTER, gt_count,
					 &n_probe, NULL),
		     0, "%s", xflow_hook_last_error(h));
	gt_run_all(h, 20000);
	read_out(out, got, sizeof(got));
	cr_assert_eq(ex.exited, 1);
	cr_assert(WIFEXITED(ex.status) && WEXITSTATUS(ex.status) == 0, "status %x", ex.status);
	cr_expect_str_eq(got, want);
	cr_expect_eq(n_hooked, expect_each, "hooked: %" PRIu64 " hits, want %" PRIu64, n_hooked, expect_each);
	cr_expect_eq(n_other, expect_each);
	cr_expect_eq(n_probe, 1);
	xflow_hook_free(h);
}

Test(hook_ptrace, counts_exact_O0)
{
	count_case("-O0", "1", "2000", 2000);
}

Test(hook_ptrace, counts_exact_O2_pie)
{
	count_case("-O2", "1", "2000", 2000);
}

Test(hook_ptrace, counts_exact_threads)
{
	count_case("-O2", "4", "1500", 6000);
}

Test(hook_ptrace, counts_exact_threads_nopie)
{
	count_case("-O0 -no-pie", "3", "1000", 3000);
}

struct regs_seen {
	struct xflow_hook_target *t;
	long a, b, magic, value;
	char name[16];
	uint64_t rsp_before, rsp_after;
	int fault_rc;
	int hits;
	uint8_t text0; /* the site's first byte as a handler reads it */
};

static void on_probe(const struct xflow_hook_hit *hit, void *data)
{
	struct regs_seen *s = data;
	struct { long magic, value; char name[16]; } rec;
	s->hits++;
	s->a = (long)hit->regs->rdi;
	s->b = (long)hit->regs->rsi;
	cr_assert_eq(xflow_hook_mem_read(hit->target, hit->regs->rdx, &rec, sizeof(rec)), 0);
	s->magic = rec.magic;
	s->value = rec.value;
	memcpy(s->name, rec.name, sizeof(s->name));
	s->rsp_before = hit->regs->rsp;
	/* Reads see the original bytes, not our int3. */
	cr_assert_eq(xflow_hook_mem_read(hit->target, hit->addr, &s->text0, 1), 0);
	/* A read that faults is an error, not a signal in anyone. */
	char b[8];
	s->fault_rc = xflow_hook_mem_read(hit->target, 8, b, sizeof(b));
	cr_assert_eq(xflow_hook_mem_read(hit->target, hit->regs->rsp, NULL, XFLOW_HOOK_MEM_MAX + 1), -E2BIG);
	/* The write the fixture's output shows: g_rec.value = 1000. */
	long v = 1000;
	cr_assert_eq(xflow_hook_mem_write(hit->target, hit->regs->rdx + 8, &v, sizeof(v)), 0);
}

static void on_probe_after(const struct xflow_hook_hit *hit, void *data)
{
	struct regs_seen *s = data;
	s->rsp_after = hit->regs->rsp;
	cr_assert_eq(hit->when, XFLOW_HOOK_AFTER);
}

Test(hook_ptrace, handler_regs_memory_write)
{
	struct xflow_hook *h = new_engine(XFLOW_HOOK_FORK_INHERIT, NULL, NULL);
	const char *bin = gt_build("fx_loop", "-O0");
	struct regs_seen s = {0};
	char got[1024];
	FILE *out;
	struct xflow_hook_target *t = spawn(h, bin, "1", "10", "", &out);
	uint64_t fn = gt_addr(t->pid, bin, "probe_args");

	/* At -O0 the function starts with push rbp: out of line, and after it
	 * rsp is 8 lower. */
	cr_assert_eq(xflow_hook_site_add(t, fn, XFLOW_HOOK_BEFORE, on_probe, &s, NULL), 0, "%s",
		     xflow_hook_last_error(h));
	cr_assert_eq(xflow_hook_site_add(t, fn, XFLOW_HOOK_AFTER, on_probe_after, &s, NULL), 0);
	gt_run_all(h, 20000);
	read_out(out, got, sizeof(got));
	cr_expect_eq(s.hits, 1);
	cr_expect_eq(s.a, 42);
	cr_expect_eq(s.b, 17);
	cr_expect_eq(s.magic, 0x1122334455667788L);
	cr_expect_eq(s.value, 7);
	cr_expect_str_eq(s.name, "fixture");
	cr_expect_eq(s.fault_rc, -EFAULT);
	cr_expect_eq(s.rsp_before - s.rsp_after, 8);
	cr_expect_eq(s.text0, 0x55, "read %02x at the site, want push rbp", s.text0);
	/* 42 * 1000 + 17 + 1000, and the value written. */
	cr_expect(strstr(got, "out: probe 43017 value 1000\n") != NULL, "%s", got);
	xflow_hook_free(h);
}

static void stop_target(const struct xflow_hook_hit *hit, void *data)
{
	(void)data;
	kill(hit->pid, SIGKILL);
}

Test(hook_ptrace, target_killed_mid_hit)
{
	struct exit_rec ex = {0};
	struct xflow_hook *h = new_engine(XFLOW_HOOK_FORK_INHERIT, on_exit_ev, &ex);
	const char *bin = gt_build("fx_loop", "-O2");
	FILE *out;
	struct xflow_hook_target *t = spawn(h, bin, "4", "1000", "", &out);
	cr_assert_eq(xflow_hook_site_add(t, gt_addr(t->pid, bin, "hooked"), XFLOW_HOOK_BEFORE, stop_target, NULL,
					 NULL),
		     0);
	gt_run_all(h, 20000);
	fclose(out);
	cr_assert_eq(ex.exited, 1);
	cr_expect(WIFSIGNALED(ex.status) && WTERMSIG(ex.status) == SIGKILL, "status %x", ex.status);
	xflow_hook_free(h);
}

Test(hook_ptrace, bad_sites_refused)
{
	struct xflow_hook *h = new_engine(XFLOW_HOOK_FORK_INHERIT, NULL, NULL);
	const char *bin = gt_build("fx_loop", "-O2");
	uint64_t n = 0;
	char got[1024], want[1024];
	FILE *out;
	gt_reference(bin, "1", "100", "", want, sizeof(want));
	struct xflow_hook_target *t = spawn(h, bin, "1", "100", "", &out);
	uint64_t fn = gt_addr(t->pid, bin, "hooked");

	cr_expect_eq(xflow_hook_site_add(t, 0x1000, XFLOW_HOOK_BEFORE, gt_count, &n, NULL), -EFAULT);
	cr_expect(strstr(xflow_hook_last_error(h), "not mapped") != NULL, "%s", xflow_hook_last_error(h));
	cr_expect_eq(xflow_hook_site_add(t, gt_addr(t->pid, bin, "g_rec"), XFLOW_HOOK_BEFORE, gt_count, &n, NULL),
		     -EACCES);
	cr_expect(strstr(xflow_hook_last_error(h), "not in an executable mapping") != NULL, "%s",
		  xflow_hook_last_error(h));
	cr_assert_eq(xflow_hook_site_add(t, fn, XFLOW_HOOK_BEFORE, gt_count, &n, NULL), 0);
	cr_expect_eq(xflow_hook_site_add(t, fn + 1, XFLOW_HOOK_BEFORE, gt_count, &n, NULL), -EINVAL);
	cr_expect(strstr(xflow_hook_last_error(h), "not an instruction boundary") != NULL, "%s",
		  xflow_hook_last_error(h));
	cr_expect_eq(xflow_hook_site_enable(t, 99, false), -ENOENT);
	gt_run_all(h, 20000);
	read_out(out, got, sizeof(got));
	cr_expect_str_eq(got, want);
	cr_expect_eq(n, 100);
	xflow_hook_free(h);
}

struct toggle {
	uint64_t hits;
};

Test(hook_ptrace, toggle_live)
{
	struct exit_rec ex = {0};
	struct xflow_hook *h = new_engine(XFLOW_HOOK_FORK_INHERIT, on_exit_ev, &ex);
	const char *bin = gt_build("fx_loop", "-O2");
	uint64_t n = 0, n2 = 0;
	uint32_t site;
	char got[1024], want[1024];
	FILE *out;
	gt_reference(bin, "2", "1500", "s", want, sizeof(want));
	struct xflow_hook_target *t = spawn(h, bin, "2", "1500", "s", &out);
	cr_assert_eq(xflow_hook_site_add(t, gt_addr(t->pid, bin, "hooked"), XFLOW_HOOK_BEFORE, gt_count, &n, &site),
		     0);
	cr_assert_eq(xflow_hook_site_add(t, gt_addr(t->pid, bin, "other"), XFLOW_HOOK_BEFORE, gt_count, &n2, NULL),
		     0);
	cr_assert(xflow_hook_run(h, 60) >= 0);
	cr_assert(n > 0, "no hits while enabled");
	cr_assert_eq(xflow_hook_site_enable(t, site, false), 0);
	uint64_t frozen = n, other_before = n2;
	cr_assert(xflow_hook_run(h, 60) >= 0);
	cr_expect_eq(n, frozen, "hits while disabled: %" PRIu64 " -> %" PRIu64, frozen, n);
	cr_expect(n2 > other_before, "the target stopped running");
	cr_assert_eq(xflow_hook_site_enable(t, site, true), 0);
	cr_assert(xflow_hook_run(h, 60) >= 0);
	cr_expect(n > frozen, "no hits after enabling again");
	/* Removed: no more hits, the byte is the file's again, the id is gone. */
	uint64_t fn = gt_addr(t->pid, bin, "hooked");
	cr_assert_eq(xflow_hook_site_remove(t, site), 0);
	frozen = n;
	cr_assert(xflow_hook_run(h, 60) >= 0);
	cr_expect_eq(n, frozen);
	struct xflow_hook_site_stats st;
	cr_expect_eq(xflow_hook_site_stats(t, site, &st), -ENOENT);
	char path[64];
	unsigned char now, file;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)t->pid);
	int mfd = open(path, O_RDONLY), ffd = open(bin, O_RDONLY);
	cr_assert_eq(pread(mfd, &now, 1, (off_t)fn), 1);
	cr_assert_eq(pread(ffd, &file, 1, (off_t)gt_sym(bin, "hooked")), 1); /* PIE text: vaddr == offset */
	close(mfd);
	close(ffd);
	cr_expect_eq(now, file, "byte %02x at the removed site, file has %02x", now, file);
	gt_run_all(h, 20000);
	read_out(out, got, sizeof(got));
	cr_expect_eq(ex.exited, 1);
	cr_expect_str_eq(got, want);
	/* Every call of other() was seen: the toggles lost no hit there. */
	cr_expect_eq(n2, 3000);
	xflow_hook_free(h);
}

Test(hook_ptrace, emulated_and_moved_instructions)
{
	static const char *labels[] = {"emu_mov", "emu_jz", "emu_call", "emu_lea", "emu_jmp", "emu_callr"};
	static const uint64_t want_hits[] = {1000, 1000, 500, 1000, 1000, 1000};
	struct xflow_hook *h = new_engine(XFLOW_HOOK_FORK_INHERIT, NULL, NULL);
	const char *bin = gt_build("fx_loop", "-O2");
	uint64_t before[6] = {0}, after[6] = {0};
	char got[1024], want[1024];
	FILE *out;

	gt_reference(bin, "1", "1000", "m", want, sizeof(want));
	struct xflow_hook_target *t = spawn(h, bin, "1", "1000", "m", &out);
	for (int i = 0; i < 6; i++) {
		uint64_t a = gt_addr(t->pid, bin, labels[i]);
		cr_assert_eq(xflow_hook_site_add(t, a, XFLOW_HOOK_BEFORE, gt_count, &before[i], NULL), 0, "%s: %s",
			     labels[i], xflow_hook_last_error(h));
		cr_assert_eq(xflow_hook_site_add(t, a, XFLOW_HOOK_AFTER, gt_count, &after[i], NULL), 0, "%s: %s",
			     labels[i], xflow_hook_last_error(h));
	}
	gt_run_all(h, 20000);
	read_out(out, got, sizeof(got));
	cr_expect_str_eq(got, want);
	for (int i = 0; i < 6; i++) {
		cr_expect_eq(before[i], want_hits[i], "%s before: %" PRIu64, labels[i], before[i]);
		cr_expect_eq(after[i], want_hits[i], "%s after: %" PRIu64, labels[i], after[i]);
	}
	xflow_hook_free(h);
}

static int resolve_me(int x)
{
	return x + 1;
}

/* Both ways of naming a location give the address this process runs it at. */
Test(hook_ptrace, resolve_vaddr_and_offset)
{
	char line[512], exe[256];
	uint64_t fn = (uint64_t)(uintptr_t)resolve_me, base = 0, off = 0, a = 0;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert(n > 0);
	exe[n] = 0;
	FILE *m = fopen("/proc/self/maps", "r");
	while (fgets(line, sizeof(line), m)) {
		uint64_t s, e, o;
		char name[256] = "";
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %*s %255s", &s, &e, &o, name) < 3 ||
		    strcmp(name, exe) != 0)
			continue;
		if (o == 0 && !base)
			base = s;
		if (fn >= s && fn < e)
			off = fn - s + o;
	}
	fclose(m);
	cr_assert(base && off);
	cr_assert_eq(xflow_hook_resolve(getpid(), exe, XFLOW_HOOK_LOC_OFFSET, off, &a), 0);
	cr_expect_eq(a, fn);
	a = 0;
	cr_assert_eq(xflow_hook_resolve(getpid(), exe, XFLOW_HOOK_LOC_VADDR, fn - base, &a), 0);
	cr_expect_eq(a, fn);
	cr_expect_eq(xflow_hook_resolve(getpid(), "/bin/sh", XFLOW_HOOK_LOC_OFFSET, 0, &a), -ENOENT);
	cr_expect_eq(resolve_me(1), 2);
}

struct two {
	pid_t victim;
	uint64_t hits[2];
	int exits;
	int victim_status, other_status;
};

static void two_hit(const struct xflow_hook_hit *hit, void *data)
{
	struct two *w = data;
	if (hit->pid == w->victim) {
		if (++w->hits[0] == 50)
			kill(hit->pid, SIGKILL);
	} else {
		w->hits[1]++;
	}
}

static void two_ev(const struct xflow_hook_event *ev, void *data)
{
	struct two *w = data;
	if (ev->kind != XFLOW_HOOK_EV_EXITED)
		return;
	w->exits++;
	if (ev->pid == w->victim)
		w->victim_status = ev->status;
	else
		w->other_status = ev->status;
}

/* One target dies in the middle of its hits; the other is served on. */
Test(hook_ptrace, a_dead_target_leaves_the_others_served)
{
	struct two w = {0};
	struct xflow_hook *h = new_engine(XFLOW_HOOK_FORK_INHERIT, two_ev, &w);
	const char *bin = gt_build("fx_loop", "-O2");
	char got[1024], want[1024];
	FILE *out_a, *out_b;

	gt_reference(bin, "2", "1000", "", want, sizeof(want));
	struct xflow_hook_target *a = spawn(h, bin, "2", "1000", "", &out_a);
	struct xflow_hook_target *b = spawn(h, bin, "2", "1000", "", &out_b);
	w.victim = a->pid;
	cr_assert_eq(xflow_hook_site_add(a, gt_addr(a->pid, bin, "hooked"), XFLOW_HOOK_BEFORE, two_hit, &w, NULL), 0);
	cr_assert_eq(xflow_hook_site_add(b, gt_addr(b->pid, bin, "hooked"), XFLOW_HOOK_BEFORE, two_hit, &w, NULL), 0);
	gt_run_all(h, 20000);
	fclose(out_a);
	read_out(out_b, got, sizeof(got));
	cr_expect_eq(w.exits, 2);
	cr_expect(WIFSIGNALED(w.victim_status) && WTERMSIG(w.victim_status) == SIGKILL);
	cr_expect(WIFEXITED(w.other_status) && WEXITSTATUS(w.other_status) == 0);
	cr_expect_eq(w.hits[1], 2000);
	cr_expect_str_eq(got, want);
	xflow_hook_free(h);
}

Test(hook_ptrace, spawn_of_nothing)
{
	struct xflow_hook *h = new_engine(XFLOW_HOOK_FORK_INHERIT, NULL, NULL);
	struct xflow_hook_target *t = NULL;
	char prog[] = "/nonexistent/xflow-no-such-program";
	char *argv[] = {prog, NULL};
	cr_expect_eq(xflow_hook_spawn(h, argv, &t), -ENOEXEC);
	cr_expect(strstr(xflow_hook_last_error(h), "could not be run"), "%s", xflow_hook_last_error(h));
	cr_expect_eq(xflow_hook_attach(h, 0, &t), -EINVAL);
	cr_expect_eq(xflow_hook_run(h, 0), 0); /* nothing to serve */
	xflow_hook_free(h);
}

/* Job control still works on a target: SIGSTOP stops it (no hits), SIGCONT
 * lets it go on, and the hits count exactly in the end. */
Test(hook_ptrace, job_control_stop_and_continue)
{
	struct exit_rec ex = {0};
	struct xflow_hook *h = new_engine(XFLOW_HOOK_FORK_INHERIT, on_exit_ev, &ex);
	const char *bin = gt_build("fx_loop", "-O2");
	uint64_t n = 0;
	char got[1024], want[1024];
	FILE *out;
	gt_reference(bin, "2", "1000", "s", want, sizeof(want));
	struct xflow_hook_target *t = spawn(h, bin, "2", "1000", "s", &out);
	cr_assert_eq(xflow_hook_site_add(t, gt_addr(t->pid, bin, "hooked"), XFLOW_HOOK_BEFORE, gt_count, &n, NULL), 0);
	cr_assert(xflow_hook_run(h, 50) >= 0);
	kill(t->pid, SIGSTOP);
	cr_assert(xflow_hook_run(h, 50) >= 0);
	uint64_t stopped = n;
	cr_assert(xflow_hook_run(h, 100) >= 0);
	cr_expect_eq(n, stopped, "hits while stopped");
	kill(t->pid, SIGCONT);
	gt_run_all(h, 20000);
	read_out(out, got, sizeof(got));
	cr_expect_eq(ex.exited, 1);
	cr_expect_eq(n, 2000);
	cr_expect_str_eq(got, want);
	xflow_hook_free(h);
}

/* Many toggles, adds and removes while four threads run through the sites:
 * no hit of the site that stays is lost, no thread is damaged. */
Test(hook_ptrace, churn_while_running)
{
	struct exit_rec ex = {0};
	struct xflow_hook *h = new_engine(XFLOW_HOOK_FORK_INHERIT, on_exit_ev, &ex);
	const char *bin = gt_build("fx_loop", "-O2");
	uint64_t kept = 0, churned = 0;
	uint32_t site;
	char got[1024], want[1024];
	FILE *out;
	gt_reference(bin, "4", "3000", "", want, sizeof(want));
	struct xflow_hook_target *t = spawn(h, bin, "4", "3000", "", &out);
	uint64_t hooked = gt_addr(t->pid, bin, "hooked"), other = gt_addr(t->pid, bin, "other");
	cr_assert_eq(xflow_hook_site_add(t, other, XFLOW_HOOK_AFTER, gt_count, &kept, NULL), 0);
	cr_assert_eq(xflow_hook_site_add(t, hooked, XFLOW_HOOK_AFTER, gt_count, &churned, &site), 0);
	for (int i = 0; i < 200 && ex.exited == 0; i++) {
		cr_assert(xflow_hook_run(h, 1) >= 0);
		if (ex.exited)
			break;
		int rc;
		switch (i % 3) {
		case 0:
			rc = xflow_hook_site_enable(t, site, false);
			break;
		case 1:
			rc = xflow_hook_site_enable(t, site, true);
			break;
		default:
			rc = xflow_hook_site_remove(t, site);
			if (rc == 0)
				rc = xflow_hook_site_add(t, hooked, i % 2 ? XFLOW_HOOK_BEFORE : XFLOW_HOOK_AFTER,
							 gt_count, &churned, &site);
			break;
		}
		/* The target may finish its work between the engine's run and
		 * this call: its exit is collected below, and whether it
		 * exited whole is checked there. */
		if (rc == -ESRCH)
			break;
		cr_assert_eq(rc, 0, "%s", xflow_hook_last_error(h));
	}
	gt_run_all(h, 20000);
	read_out(out, got, sizeof(got));
	cr_expect_eq(ex.exited, 1);
	cr_expect(WIFEXITED(ex.status) && WEXITSTATUS(ex.status) == 0, "status %x", ex.status);
	cr_expect_eq(kept, 12000);
	cr_expect_leq(churned, 12000);
	cr_expect_str_eq(got, want);
	xflow_hook_free(h);
}

/* A process another tracer holds (a debugger, strace, another agent: a
 * child of ours here, which seizes it and waits) is refused, naming the
 * tracer's pid and name, and left to it (issue 30, item 7). */
Test(hook_ptrace, already_traced_names_its_tracer, .timeout = 60)
{
	gt_need_ptrace();
	const char *bin = gt_build("sc_fx", "-O1");
	struct gt_proc p;
	char line[256], outs[256], want[128];
	gt_start(&p, bin, "none", "errno", "");
	gt_line(&p, line, sizeof(line));
	int sync[2];
	cr_assert_eq(pipe(sync), 0);
	pid_t other = fork();
	if (other == 0) {
		prctl(PR_SET_NAME, "other-tracer");
		int ok = ptrace(PTRACE_SEIZE, p.pid, 0, 0) == 0;
		if (write(sync[1], ok ? "y" : "n", 1) != 1)
			_exit(1);
		pause(); /* it holds the trace until killed */
		_exit(0);
	}
	char c;
	cr_assert_eq(read(sync[0], &c, 1), 1);
	cr_assert_eq(c, 'y', "the other tracer could not seize the fixture");
	const struct xflow_hook_backend_ops *ops[] = { &xflow_hook_ptrace_ops, &xflow_hook_inproc_ops };
	for (int i = 0; i < 2; i++) {
		struct xflow_hook *h;
		struct xflow_hook_target *t;
		cr_assert_eq(xflow_hook_new(ops[i], NULL, &h), 0);
		cr_expect_eq(xflow_hook_attach(h, p.pid, &t), -EBUSY, "%s", xflow_hook_last_error(h));
		snprintf(want, sizeof(want), "it is traced already, by pid %d (other-tracer)", (int)other);
		cr_expect(strstr(xflow_hook_last_error(h), want), "%s: '%s'", ops[i]->name, xflow_hook_last_error(h));
		xflow_hook_free(h);
	}
	/* Its tracer gone, the fixture runs on. */
	kill(other, SIGKILL);
	waitpid(other, NULL, 0);
	gt_send(&p);
	int st = gt_finish(&p, outs, sizeof(outs));
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %x", st);
	cr_expect_str_eq(outs, "out: 8999991\n");
}
