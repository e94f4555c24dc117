/*
 * The in-process backend on a real traced program (fixtures/ip_fx.c, whose
 * sites the tests place by hand): which sites get a jump and which a
 * breakpoint and why, every hit recorded once, flows that start and end in
 * the same thread, forked children with flows of their own, exec, detach
 * leaving every byte and mapping as it was, the agent killed with SIGKILL
 * while its targets run on, and four threads running through 1,000 live
 * changes of the advice and the sites.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>

#include "gt.h"
#include "tests/guestrt/handplan.h"

#define NTHREADS 4

static const char flows_xml[] =
	"<flows>"
	"<xflow name=\"w\">"
	"  <start><pointcut>access(item.seq) AND within_function(item_touch)</pointcut></start>"
	"  <quit><pointcut>access(item.sum) AND within_function(item_touch)</pointcut></quit>"
	"</xflow>"
	"<advice><pointcut>access(item.seq) AND target(it)</pointcut><after>STORE_DATA2(it->seq, 1);</after></advice>"
	"<advice><pointcut>call(tight_loop)</pointcut><before>STORE_DATA1(2);</before></advice>"
	"<advice><pointcut>call(tight_loop)</pointcut><before>STORE_DATA1(3);</before></advice>"
	"</flows>";

/* Advice in weave order, and the plan's sites. */
enum { ADV_START, ADV_QUIT, ADV_SEQ, ADV_JUMP, ADV_TRAP, NADV };
enum { S_SEQ, S_SUM, S_TRAP, S_JUMP, S_BACK, S_MA, S_MB, NSITES };

struct fx {
	const char *bin;
	struct gt_proc p;
	struct handplan hp;
	uint64_t base;
	uint64_t addr[NSITES];          /* runtime addresses */
	struct xflow_hook *h;
	struct xflow_hook_target *t;
	uint32_t id[NSITES][2];         /* hook site ids, by when */
	/* records seen */
	struct xflow_record *rec;
	size_t nrec, caprec;
	/* set: drained a run at a time (xflow_hook_drain_runs) into it */
	xflow_hook_records_fn runs;
	size_t refused;                 /* records of runs it did not keep */
	/* lifecycle seen */
	int exited, status, forks, execs;
	pid_t child;
	char outs[4096];                /* every "out:" line the fixture printed */
};

static void on_event(const struct xflow_hook_event *ev, void *data)
{
	struct fx *f = data;
	if (ev->kind == XFLOW_HOOK_EV_EXITED && ev->pid == f->p.pid) {
		f->exited = 1;
		f->status = ev->status;
	}
	if (ev->kind == XFLOW_HOOK_EV_FORK && ev->child) {
		f->forks++;
		f->child = ev->child_pid;
	}
	if (ev->kind == XFLOW_HOOK_EV_EXEC)
		f->execs++;
}

static int collect(void *ctx, const struct xflow_record *r)
{
	struct fx *f = ctx;
	if (f->nrec == f->caprec) {
		f->caprec = f->caprec ? 2 * f->caprec : 1 << 16;
		f->rec = realloc(f->rec, f->caprec * sizeof(*f->rec));
		cr_assert_not_null(f->rec);
	}
	f->rec[f->nrec++] = *r;
	return 0;
}

/* A caller taking runs whose ring has room for half of each (none of a
 * run of one): the rest it refuses, and they are lost. */
static size_t keep_half(void *ctx, const struct xflow_record *r, size_t n)
{
	struct fx *f = ctx;
	size_t k = n / 2;
	for (size_t i = 0; i < k; i++)
		collect(f, &r[i]);
	f->refused += n - k;
	return k;
}

/* A caller taking runs with room for all. */
static size_t keep_all(void *ctx, const struct xflow_record *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		collect(ctx, &r[i]);
	return n;
}

static void drain(struct fx *f)
{
	if (f->runs)
		xflow_hook_drain_runs(f->h, f->runs, collect, f, 0);
	else
		xflow_hook_drain(f->h, collect, f, 0);
}

/* The plan for the fixture loaded at @base. */
static void plan_build(struct fx *f)
{
	struct handplan *hp = &f->hp;
	cr_assert_eq(handplan_init(hp, flows_xml, f->bin), 0);
	cr_assert_eq(hp->plan.nadvice, NADV);
	for (uint32_t i = 0; i < hp->plan.nfields; i++)
		handplan_layout(hp, i, strcmp(hp->fields[i].member, "seq") == 0 ? 0 : 8, 8);
	uint64_t touch = gt_sym(f->bin, "item_touch"), loop = gt_sym(f->bin, "tight_loop");
	struct xflow_plan_fetch rdi = { .kind = XFLOW_FETCH_REG, .reg = 5 };
	uint32_t s = handplan_site(hp, touch, 3);
	handplan_bind(hp, s, ADV_START, XFLOW_WHEN_BEFORE, &rdi, hp->adv[ADV_START].prog.ninputs);
	handplan_bind(hp, s, ADV_SEQ, XFLOW_WHEN_AFTER, &rdi, 1);
	s = handplan_site(hp, touch + 3, 4);
	handplan_bind(hp, s, ADV_QUIT, XFLOW_WHEN_BEFORE, &rdi, hp->adv[ADV_QUIT].prog.ninputs);
	s = handplan_site(hp, loop + 4, 4);
	handplan_bind(hp, s, ADV_TRAP, XFLOW_WHEN_BEFORE, NULL, 0);
	s = handplan_site(hp, loop + 8, 4);
	handplan_bind(hp, s, ADV_JUMP, XFLOW_WHEN_BEFORE, NULL, 0);
	s = handplan_site(hp, loop + 17, 3);
	handplan_bind(hp, s, ADV_JUMP, XFLOW_WHEN_BEFORE, NULL, 0);
	s = handplan_site(hp, loop + 26, 3);
	handplan_bind(hp, s, ADV_JUMP, XFLOW_WHEN_BEFORE, NULL, 0);
	s = handplan_site(hp, loop + 32, 3);
	handplan_bind(hp, s, ADV_JUMP, XFLOW_WHEN_BEFORE, NULL, 0);
	for (unsigned i = 0; i < NSITES; i++)
		f->addr[i] = f->base + hp->sites[i].addr;
}

static void place(struct fx *f, unsigned s, unsigned when)
{
	int rc = xflow_hook_site_add(f->t, f->addr[s], when ? XFLOW_HOOK_AFTER : XFLOW_HOOK_BEFORE, NULL,
				     (void *)(uintptr_t)s, &f->id[s][when]);
	cr_assert_eq(rc, 0, "site %u: %s", s, xflow_hook_last_error(f->h));
}

/* Start the fixture (threads waiting for their line), attach, load the
 * plan and place every site. */
static void fx_start(struct fx *f, const char *threads, const char *calls, const char *flags)
{
	char line[128];
	gt_need_ptrace();
	memset(f, 0, sizeof(*f));
	f->bin = gt_build("ip_fx", "-O2");
	gt_start(&f->p, f->bin, threads, calls, flags);
	gt_line(&f->p, line, sizeof(line));
	cr_assert_str_eq(line, "ready\n");
	struct xflow_hook_config cfg = { .fork_policy = XFLOW_HOOK_FORK_INHERIT, .on_event = on_event, .event_data = f };
	cr_assert_eq(xflow_hook_new(&xflow_hook_inproc_ops, &cfg, &f->h), 0);
	cr_assert_eq(xflow_hook_attach(f->h, f->p.pid, &f->t), 0, "%s", xflow_hook_last_error(f->h));
	f->base = gt_addr(f->p.pid, f->bin, "item_touch") - gt_sym(f->bin, "item_touch");
	plan_build(f);
	struct xflow_hook_prog prog;
	cr_assert_eq(handplan_prog(&f->hp, f->base, 9, &prog), 0);
	prog.lanes = 16;
	prog.lane_slots = 1u << 16;
	cr_assert_eq(xflow_hook_prog_load(f->t, &prog), 0, "%s", xflow_hook_last_error(f->h));
	place(f, S_SEQ, 0);
	place(f, S_SEQ, 1);
	place(f, S_SUM, 0);
	place(f, S_TRAP, 0);
	place(f, S_JUMP, 0);
	place(f, S_BACK, 0);
	place(f, S_MA, 0);
	place(f, S_MB, 0);
}

/* Serve and drain until the fixture prints a line starting with @want
 * (NULL: any), which goes to @buf; false on EOF. */
static bool serve_until(struct fx *f, const char *want, char *buf, size_t len)
{
	int fd = fileno(f->p.out);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (int i = 0; i < 20000; i++) {
		xflow_hook_run(f->h, 2);
		drain(f);
		errno = 0;
		if (fgets(buf, (int)len, f->p.out)) {
			if (strstr(buf, "out:"))
				strncat(f->outs, buf, sizeof(f->outs) - strlen(f->outs) - 1);
			if (!want || strncmp(buf, want, strlen(want)) == 0)
				return true;
			continue;
		}
		if (feof(f->p.out))
			return false;
		clearerr(f->p.out);
	}
	cr_assert_fail("the fixture said nothing for 40 s");
	return false;
}

/* Until EOF, serving meanwhile, then until the fixture exited (the engine
 * reaps it): its status. */
static int serve_to_end(struct fx *f)
{
	char line[256];
	while (serve_until(f, NULL, line, sizeof(line)))
		;
	for (int i = 0; i < 5000 && !f->exited; i++)
		xflow_hook_run(f->h, 2);
	drain(f);
	fclose(f->p.out);
	fclose(f->p.in);
	cr_assert(f->exited, "the fixture did not exit");
	return f->status;
}

static size_t count(const struct fx *f, uint32_t site, uint64_t d0)
{
	size_t n = 0;
	for (size_t i = 0; i < f->nrec; i++)
		n += f->rec[i].site_id == site && f->rec[i].ndata >= 1 && f->rec[i].data[0] == d0;
	return n;
}

/* Records of advice SEQ: per thread, call numbers strictly increasing (no
 * hit twice), and all of 1..calls when nothing was switched off. */
static void check_seq(const struct fx *f, long calls, bool whole, size_t *total)
{
	uint32_t tids[64];
	long last[64];
	unsigned nt = 0;
	*total = 0;
	for (size_t i = 0; i < f->nrec; i++) {
		const struct xflow_record *r = &f->rec[i];
		if (r->site_id != S_SEQ || r->ndata != 2 || r->data[1] != 1)
			continue;
		unsigned k;
		for (k = 0; k < nt && tids[k] != r->thread_id; k++)
			;
		if (k == nt) {
			cr_assert_lt(nt, 64);
			tids[nt] = r->thread_id;
			last[nt++] = 0;
		}
		cr_assert_gt((long)r->data[0], last[k], "thread %u: call %llu after %ld", r->thread_id,
			     (unsigned long long)r->data[0], last[k]);
		if (whole)
			cr_assert_eq((long)r->data[0], last[k] + 1, "thread %u: call %llu after %ld", r->thread_id,
				     (unsigned long long)r->data[0], last[k]);
		last[k] = (long)r->data[0];
		(*total)++;
	}
	if (whole)
		for (unsigned k = 0; k < nt; k++)
			cr_assert_eq(last[k], calls, "thread %u ended at call %ld", tids[k], last[k]);
}

static int cmp_rec_flow(const void *a, const void *b)
{
	const struct xflow_record *x = a, *y = b;
	return x->flow_id < y->flow_id ? -1 : x->flow_id > y->flow_id;
}

/* Flow markers: every flow one START and one QUIT, from one thread; with
 * @lost, a flow may miss one of them (a marker dropped by a full lane):
 * how many did goes there. */
static size_t check_flows_lost(struct fx *f, size_t *lost)
{
	struct xflow_record *m = calloc(f->nrec + 1, sizeof(*m));
	size_t n = 0;
	for (size_t i = 0; i < f->nrec; i++)
		if (f->rec[i].ndata == 0 && f->rec[i].flow_id)
			m[n++] = f->rec[i];
	qsort(m, n, sizeof(*m), cmp_rec_flow);
	size_t flows = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		unsigned starts = 0, quits = 0;
		for (; j < n && m[j].flow_id == m[i].flow_id; j++) {
			starts += (m[j].flags & XFLOW_REC_START) != 0;
			quits += (m[j].flags & XFLOW_REC_QUIT) != 0;
			cr_assert_eq(m[j].thread_id, m[i].thread_id, "flow %llu: in threads %u and %u",
				     (unsigned long long)m[i].flow_id, m[i].thread_id, m[j].thread_id);
		}
		if (lost && starts + quits == 1)
			(*lost)++;
		else
			cr_assert(starts == 1 && quits == 1, "flow %llu: %u starts, %u quits",
				  (unsigned long long)m[i].flow_id, starts, quits);
		flows++;
		i = j;
	}
	free(m);
	return flows;
}

static size_t check_flows(struct fx *f)
{
	return check_flows_lost(f, NULL);
}

/* "out: thread K calls C seq S sum T loop L" lines, each checked for the
 * program's own arithmetic (C calls: seq C, sum C(C+1)/2, loop 6C); the
 * number of lines. */
static unsigned check_outs(const char *outs, const char *prefix, long want_calls)
{
	unsigned n = 0;
	size_t pl = strlen(prefix);
	for (const char *l = outs; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		int k;
		long c, seq, sum, loop;
		if (strncmp(l, prefix, pl) != 0 ||
		    sscanf(l + pl, "out: thread %d calls %ld seq %ld sum %ld loop %ld", &k, &c, &seq, &sum, &loop) != 5)
			continue;
		cr_expect(seq == c && sum == c * (c + 1) / 2 && loop == 6 * c, "wrong results: %.80s", l);
		if (want_calls)
			cr_expect_eq(c, want_calls, "%.80s", l);
		n++;
	}
	return n;
}

static void fx_end(struct fx *f)
{
	xflow_hook_free(f->h);
	handplan_fini(&f->hp);
	free(f->rec);
}

Test(hook_inproc, jump_or_breakpoint, .timeout = 120)
{
	struct fx f;
	char ref[1024];
	fx_start(&f, "4", "20000", "w");
	struct xflow_hook_site_stats st;
	/* S_BACK's bytes after it cannot be taken, those before it can;
	 * S_MB's neither, and S_MA's jump, ending right at it, takes it in. */
	const unsigned jumps[] = { S_SEQ, S_SUM, S_JUMP, S_BACK, S_MA, S_MB };
	for (unsigned i = 0; i < 6; i++) {
		cr_assert_eq(xflow_hook_site_stats(f.t, f.id[jumps[i]][0], &st), 0);
		cr_expect_eq(st.mech, XFLOW_HOOK_MECH_JUMP, "site %u: %s", jumps[i], st.why);
	}
	cr_assert_eq(xflow_hook_site_stats(f.t, f.id[S_TRAP][0], &st), 0);
	cr_expect_eq(st.mech, XFLOW_HOOK_MECH_TRAP_INTARGET);
	cr_expect(strstr(st.why, "a branch lands at"), "why: %s", st.why);
	cr_log_info("the breakpoint site: %s", st.why);
	gt_send(&f.p);
	char line[256];
	cr_assert(serve_until(&f, "waiting", line, sizeof(line)));
	gt_send(&f.p);
	int status = serve_to_end(&f);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %x", status);
	gt_reference(f.bin, "4", "20000", "w", ref, sizeof(ref));
	cr_expect_str_eq(f.outs, ref);
	cr_expect_eq(check_outs(f.outs, "", 20000), 4);
	size_t seq;
	check_seq(&f, 20000, true, &seq);
	cr_expect_eq(seq, 4u * 20000);
	cr_expect_eq(count(&f, S_JUMP, 2), 4u * 20000 * 3, "jump site: %zu", count(&f, S_JUMP, 2));
	cr_expect_eq(count(&f, S_BACK, 2), 4u * 20000, "jump placed before its site: %zu", count(&f, S_BACK, 2));
	cr_expect_eq(count(&f, S_MA, 2), 4u * 20000, "jump extended over the next site: %zu", count(&f, S_MA, 2));
	cr_expect_eq(count(&f, S_MB, 2), 4u * 20000, "site taken in by the jump before: %zu", count(&f, S_MB, 2));
	cr_expect_eq(count(&f, S_TRAP, 3), 4u * 20000 * 2, "breakpoint site: %zu", count(&f, S_TRAP, 3));
	cr_expect_eq(check_flows(&f), 4u * 20000);
	struct xflow_hook_advice_stats as[NADV];
	struct xflow_hook_prog_stats all;
	cr_assert_eq(xflow_hook_prog_stats(f.h, NADV, as, &all), 0);
	cr_expect_eq(as[ADV_SEQ].hits, 4u * 20000);
	cr_expect_eq(as[ADV_TRAP].hits, 4u * 20000 * 2);
	cr_expect_eq(all.dropped + all.nolane + all.nested, 0);
	cr_expect_eq(all.records, f.nrec);
	fx_end(&f);
}

/* Records taken a run at a time, of which the caller keeps only a part:
 * following the one thread's numbers as a monitor does (a gap between two
 * records, a loss note's range), every record it numbered is one kept or
 * one lost, and those lost are exactly those refused and those a full
 * lane dropped; the records lost after its last one kept are noted. */
Test(hook_inproc, runs_refused_in_part_are_lost_and_noted_exactly, .timeout = 120)
{
	struct fx f;
	fx_start(&f, "1", "20000", "");
	f.runs = keep_half;
	gt_send(&f.p);
	int status = serve_to_end(&f);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %x", status);
	struct xflow_hook_advice_stats as[NADV];
	struct xflow_hook_prog_stats all;
	cr_assert_eq(xflow_hook_prog_stats(f.h, NADV, as, &all), 0);
	uint64_t next = 0, kept = 0, lost = 0, notes = 0;
	for (size_t i = 0; i < f.nrec; i++) {
		const struct xflow_record *r = &f.rec[i];
		cr_assert(r->flags & XFLOW_REC_SEQ_COUNTS_LOST, "record %zu is not numbered", i);
		cr_assert_eq(r->thread_id, f.rec[0].thread_id);
		if (r->flags & XFLOW_REC_LOSS_NOTE) {
			cr_assert_eq(r->data[0], next, "a note from %llu, the thread's next %llu",
				     (unsigned long long)r->data[0], (unsigned long long)next);
			lost += r->thread_seq - r->data[0] + 1;
			notes++;
		} else {
			cr_assert_geq(r->thread_seq, next, "record %u after %llu", r->thread_seq,
				      (unsigned long long)next);
			lost += r->thread_seq - next;
			kept++;
		}
		next = r->thread_seq + 1;
	}
	cr_log_info("%llu kept, %zu refused, %llu dropped by the lane, %llu loss notes", (unsigned long long)kept,
		    f.refused, (unsigned long long)all.dropped, (unsigned long long)notes);
	cr_expect_gt(f.refused, 0);
	cr_expect_geq(notes, 1, "the records lost after the last one kept went unsaid");
	cr_expect_eq(lost, f.refused + all.dropped, "%llu lost by the numbers, %zu refused + %llu dropped",
		     (unsigned long long)lost, f.refused, (unsigned long long)all.dropped);
	cr_expect_eq(next, kept + f.refused + all.dropped, "numbers to %llu for %llu kept, %zu refused, %llu dropped",
		     (unsigned long long)next, (unsigned long long)kept, f.refused, (unsigned long long)all.dropped);
	fx_end(&f);
}

/* Serve (no drain) until the fixture prints a line starting with @want. */
static void serve_only_until(struct fx *f, const char *want)
{
	char line[256];
	int fd = fileno(f->p.out);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (int i = 0; i < 20000; i++) {
		xflow_hook_run(f->h, 2);
		if (fgets(line, sizeof(line), f->p.out)) {
			if (strstr(line, "out:"))
				strncat(f->outs, line, sizeof(f->outs) - strlen(f->outs) - 1);
			if (strncmp(line, want, strlen(want)) == 0)
				return;
			continue;
		}
		cr_assert(!feof(f->p.out), "the fixture ended before \"%s\"", want);
		clearerr(f->p.out);
	}
	cr_assert_fail("the fixture said nothing for 40 s");
}

/* Records left in four lanes, drained with room for few at a time: no
 * call moves more than it was given room for, each lane gives an equal
 * share of it (so that no thread's records fall behind the others' in
 * time, a lane emptied while the rest wait), and every record comes out,
 * each thread's in its order, none lost. */
Test(hook_inproc, a_drain_with_little_room_shares_it_between_the_lanes, .timeout = 120)
{
	struct fx f;
	fx_start(&f, "4", "2000", "w");
	gt_send(&f.p);
	serve_only_until(&f, "waiting");
	size_t calls = 0;
	for (;;) {
		size_t before = f.nrec;
		long n = xflow_hook_drain_runs(f.h, keep_all, collect, &f, 1000);
		cr_assert_geq(n, 0);
		cr_assert_leq(n, 1000, "a drain given room for 1000 moved %ld", n);
		if (n == 0)
			break;
		if (calls++ < 4) {
			/* Each thread's records in this call. */
			uint32_t tid[4] = { 0 };
			size_t got[4] = { 0 };
			for (size_t i = before; i < f.nrec; i++) {
				unsigned k = 0;
				while (k < 4 && tid[k] && tid[k] != f.rec[i].thread_id)
					k++;
				cr_assert_lt(k, 4, "a fifth thread");
				tid[k] = f.rec[i].thread_id;
				got[k]++;
			}
			for (unsigned k = 0; k < 4; k++)
				cr_expect(tid[k] && got[k] <= 250, "drain %zu: thread %u gave %zu records of 1000", calls,
					  tid[k], got[k]);
		}
	}
	cr_assert_geq(calls, 4);
	gt_send(&f.p);
	int status = serve_to_end(&f);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %x", status);
	size_t seq;
	check_seq(&f, 2000, true, &seq);
	cr_expect_eq(seq, 4u * 2000);
	cr_expect_eq(check_flows(&f), 4u * 2000);
	struct xflow_hook_advice_stats as[NADV];
	struct xflow_hook_prog_stats all;
	cr_assert_eq(xflow_hook_prog_stats(f.h, NADV, as, &all), 0);
	cr_expect_eq(all.dropped + all.nolane + all.nested, 0);
	cr_expect_eq(all.records, f.nrec);
	fx_end(&f);
}

/* The mappings of pid, one "start-end perms name" line each. */
static char *maps_of(pid_t pid)
{
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *m = fopen(path, "r");
	cr_assert_not_null(m);
	size_t cap = 1 << 16, n = 0;
	char *out = calloc(cap, 1);
	while (fgets(line, sizeof(line), m)) {
		char range[64], perms[8], name[256] = "";
		if (sscanf(line, "%63s %7s %*s %*s %*s %255[^\n]", range, perms, name) < 2)
			continue;
		/* The heap and the stack may grow; the rest must be as it was. */
		if (strstr(name, "[heap]") || strstr(name, "[stack]"))
			snprintf(range, sizeof(range), "-");
		n += (size_t)snprintf(out + n, cap - n, "%s %s %s\n", range, perms, name);
	}
	fclose(m);
	return out;
}

static uint64_t caught_signals(pid_t pid)
{
	char path[64], line[256];
	uint64_t v = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigCgt: %" SCNx64, &v) == 1)
			break;
	fclose(f);
	return v;
}

Test(hook_inproc, detach_leaves_nothing, .timeout = 120)
{
	/* Attach, weave, run, detach: every byte of the text as in the file,
	 * every mapping and signal handler as before the attach. */
	struct fx f;
	char line[256];
	gt_need_ptrace();
	const char *bin = gt_build("ip_fx", "-O2");
	struct gt_proc p;
	gt_start(&p, bin, "4", "20000", "w");
	gt_line(&p, line, sizeof(line));
	char *before = maps_of(p.pid);
	uint64_t sigs = caught_signals(p.pid);
	kill(p.pid, SIGKILL);
	gt_finish(&p, line, sizeof(line));
	free(before);

	fx_start(&f, "4", "20000", "w");
	/* The same program, not yet woven: its maps before the attach are
	 * those of the first run but for addresses; so compare within this run:
	 * the maps of now, detached, against those while held in the start. */
	char *woven = maps_of(f.p.pid);
	cr_assert(strstr(woven, "xflow-rt"), "the runtime's regions are not mapped:\n%s", woven);
	cr_assert_neq(caught_signals(f.p.pid), sigs, "the runtime's handlers are not installed");
	gt_send(&f.p);
	cr_assert(serve_until(&f, "waiting", line, sizeof(line)));
	cr_assert_eq(xflow_hook_detach(f.t), 0, "%s", xflow_hook_last_error(f.h));
	cr_expect(gt_text_intact(f.p.pid, f.bin), "the text differs from the file after detach");
	char *after = maps_of(f.p.pid);
	cr_expect(!strstr(after, "xflow-rt"), "a region of the runtime is left:\n%s", after);
	cr_expect_eq(caught_signals(f.p.pid), sigs, "signal handlers not restored: %" PRIx64 " vs %" PRIx64,
		     caught_signals(f.p.pid), sigs);
	/* Nothing executable that the program did not map itself. */
	char *l = after;
	while (l && *l) {
		char *nl = strchr(l, '\n');
		if (nl)
			*nl = 0;
		char range[64], perms[8], name[256] = "";
		if (sscanf(l, "%63s %7s %255[^\n]", range, perms, name) >= 2 && perms[2] == 'x')
			cr_expect(name[0] == '/' || name[0] == '[', "an executable mapping of ours is left: %s", l);
		l = nl ? nl + 1 : NULL;
	}
	gt_send(&f.p);
	char outs[1024];
	int st = gt_finish(&f.p, outs, sizeof(outs));
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %x", st);
	free(woven);
	free(after);
	fx_end(&f);
}

/* An agent in a child process, killed with SIGKILL while the fixture runs:
 * the jump sites and the breakpoint site go on in the fixture without it. */
Test(hook_inproc, agent_killed_target_runs_on, .timeout = 120)
{
	char line[256], ref[1024];
	gt_need_ptrace();
	const char *bin = gt_build("ip_fx", "-O2");
	gt_reference(bin, "4", "200000", "", ref, sizeof(ref));
	struct gt_proc p;
	gt_start(&p, bin, "4", "200000", "");
	gt_line(&p, line, sizeof(line));
	int ready[2];
	cr_assert_eq(pipe(ready), 0);
	pid_t agent = fork();
	if (agent == 0) {
		struct fx f;
		memset(&f, 0, sizeof(f));
		f.bin = bin;
		f.p = p;
		struct xflow_hook_config cfg = { 0 };
		if (xflow_hook_new(&xflow_hook_inproc_ops, &cfg, &f.h) || xflow_hook_attach(f.h, p.pid, &f.t))
			_exit(3);
		f.base = gt_addr(p.pid, bin, "item_touch") - gt_sym(bin, "item_touch");
		plan_build(&f);
		struct xflow_hook_prog prog;
		if (handplan_prog(&f.hp, f.base, 9, &prog) || xflow_hook_prog_load(f.t, &prog))
			_exit(4);
		place(&f, S_SEQ, 0);
		place(&f, S_SEQ, 1);
		place(&f, S_SUM, 0);
		place(&f, S_TRAP, 0);
		place(&f, S_JUMP, 0);
		place(&f, S_BACK, 0);
		place(&f, S_MA, 0);
		place(&f, S_MB, 0);
		if (write(ready[1], "k", 1) != 1)
			_exit(5);
		for (;;) {
			xflow_hook_run(f.h, 5);
			xflow_hook_drain(f.h, collect, &f, 0);
		}
	}
	close(ready[1]);
	char c;
	cr_assert_eq(read(ready[0], &c, 1), 1, "the agent did not get ready");
	gt_send(&p);
	usleep(20000);
	kill(agent, SIGKILL);
	int ast;
	waitpid(agent, &ast, 0);
	cr_assert(WIFSIGNALED(ast) && WTERMSIG(ast) == SIGKILL);
	char outs[1024];
	int st = gt_finish(&p, outs, sizeof(outs));
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the fixture ended with status %x", st);
	cr_expect_str_eq(outs, ref);
}

Test(hook_inproc, fork_flows_separate, .timeout = 120)
{
	/* Parent and child run the same work on objects at the same addresses
	 * (the heap is copied): each process's flows are its own. */
	struct fx f;
	char line[256];
	fx_start(&f, "3", "20000", "f");
	gt_send(&f.p);
	int status = serve_to_end(&f);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %x", status);
	cr_expect_eq(check_outs(f.outs, "", 20000), 3);
	cr_expect_eq(check_outs(f.outs, "child ", 20000), 3);
	cr_expect_eq(f.forks, 1, "fork events: %d", f.forks);
	size_t seq;
	check_seq(&f, 20000, true, &seq);
	cr_expect_eq(seq, 2u * 3 * 20000, "seq records: %zu", seq);
	cr_expect_eq(check_flows(&f), 2u * 3 * 20000);
	(void)line;
	fx_end(&f);
}

/*
 * A thread with no TLS (fs base 0, made by a bare clone) runs through the
 * sites: the runtime, which tells threads apart by %fs:0 where every thread
 * had a TCB at attach, must neither crash the program nor give it a lane;
 * its hits are counted as lane-less.  The other threads' records are whole.
 */
Test(hook_inproc, thread_without_tls_gets_no_lane, .timeout = 120)
{
	struct fx f;
	fx_start(&f, "2", "5000", "n");
	gt_send(&f.p);
	int status = serve_to_end(&f);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %x", status);
	cr_expect_eq(check_outs(f.outs, "", 5000), 2);
	cr_expect(strstr(f.outs, "out: notls calls 5000 seq 5000 sum 12502500\n") != NULL, "%s", f.outs);
	size_t seq;
	check_seq(&f, 5000, true, &seq);
	cr_expect_eq(seq, 2u * 5000, "seq records: %zu", seq);
	struct xflow_hook_advice_stats as[NADV];
	struct xflow_hook_prog_stats all;
	cr_assert_eq(xflow_hook_prog_stats(f.h, NADV, as, &all), 0);
	/* Three hooks in item_touch (SEQ before and after, SUM before). */
	cr_expect_eq(all.nolane, 3u * 5000, "hits without a lane: %llu", (unsigned long long)all.nolane);
	fx_end(&f);
}

Test(hook_inproc, exec_retires_the_sites, .timeout = 120)
{
	struct fx f;
	char line[256];
	fx_start(&f, "2", "20000", "e");
	gt_send(&f.p);
	/* The exec'd child says ready and waits for its own line. */
	cr_assert(serve_until(&f, "ready", line, sizeof(line)));
	gt_send(&f.p);
	int status = serve_to_end(&f);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %x", status);
	cr_expect_eq(f.execs, 1, "exec events: %d", f.execs);
	/* The parent's threads woven, the exec'd program's not: its image is
	 * another, with no site of ours. */
	cr_expect_eq(check_outs(f.outs, "", 20000), 4, "%s", f.outs);
	size_t seq;
	check_seq(&f, 20000, true, &seq);
	cr_expect_eq(seq, 2u * 20000, "seq records: %zu", seq);
	cr_expect_eq(check_flows(&f), 2u * 20000);
	fx_end(&f);
}

/* The stress test's records are checked as they come (tens of millions of
 * them): per thread, SEQ's call numbers only grow; every flow's START and
 * QUIT come once each, in one thread. */
#define OPEN_BITS 18

struct stream {
	uint32_t tid[64];
	long last[64];
	unsigned nt;
	size_t seq, jumps, flows, orphan_quits, bad;
	/* Flows started and not yet ended.  Each start whose quit a full lane
	 * dropped stays here for good: at most half full, the rest of such
	 * starts are only counted (untracked), or a probe would never end. */
	struct { uint64_t id; uint32_t tid; } open[1 << OPEN_BITS];
	size_t nopen, untracked;
};

static int stream_record(void *ctx, const struct xflow_record *r)
{
	struct stream *s = ctx;
	if (r->site_id == S_SEQ && r->ndata == 2 && r->data[1] == 1) {
		unsigned k;
		for (k = 0; k < s->nt && s->tid[k] != r->thread_id; k++)
			;
		if (k == s->nt && s->nt < 64)
			s->tid[s->nt] = r->thread_id, s->last[s->nt++] = 0;
		if (k < 64 && (long)r->data[0] <= s->last[k])
			s->bad++; /* a call recorded twice, or out of order */
		if (k < 64)
			s->last[k] = (long)r->data[0];
		s->seq++;
	} else if ((r->site_id == S_JUMP || r->site_id == S_BACK || r->site_id == S_MA || r->site_id == S_MB) &&
		   r->ndata == 1) {
		s->jumps++;
	} else if (r->ndata == 0 && r->flow_id) {
		uint64_t mask = (1u << OPEN_BITS) - 1, i = (r->flow_id * 0x9E3779B97F4A7C15ull) >> (64 - OPEN_BITS);
		if (r->flags & XFLOW_REC_START) {
			if (s->nopen >= mask / 2) {
				s->untracked++;
				s->flows++;
				return 0;
			}
			for (; s->open[i & mask].id; i++)
				if (s->open[i & mask].id == r->flow_id)
					s->bad++; /* started twice */
			s->open[i & mask].id = r->flow_id;
			s->open[i & mask].tid = r->thread_id;
			s->nopen++;
			s->flows++;
		} else if (r->flags & XFLOW_REC_QUIT) {
			for (; s->open[i & mask].id && s->open[i & mask].id != r->flow_id; i++)
				;
			if (!s->open[i & mask].id) {
				s->orphan_quits++;
				return 0;
			}
			if (s->open[i & mask].tid != r->thread_id)
				s->bad++; /* ended in another thread */
			/* Backward shift, so later entries of the run stay found. */
			uint64_t hole = i & mask;
			s->open[hole].id = 0;
			s->nopen--;
			for (uint64_t j = (hole + 1) & mask; s->open[j].id; j = (j + 1) & mask) {
				uint64_t home = (s->open[j].id * 0x9E3779B97F4A7C15ull) >> (64 - OPEN_BITS) & mask;
				if (((j - home) & mask) >= ((j - hole) & mask)) {
					s->open[hole] = s->open[j];
					s->open[j].id = 0;
					hole = j;
				}
			}
		}
	}
	return 0;
}

/* Serve and check records as they come until a line starting with @want. */
static bool stream_until(struct fx *f, struct stream *s, const char *want, char *buf, size_t len)
{
	int fd = fileno(f->p.out);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (int i = 0; i < 60000; i++) {
		xflow_hook_run(f->h, 2);
		xflow_hook_drain(f->h, stream_record, s, 0);
		if (fgets(buf, (int)len, f->p.out)) {
			if (strstr(buf, "out:"))
				strncat(f->outs, buf, sizeof(f->outs) - strlen(f->outs) - 1);
			if (!want || strncmp(buf, want, strlen(want)) == 0)
				return true;
			continue;
		}
		if (feof(f->p.out))
			return false;
		clearerr(f->p.out);
	}
	return false;
}

/* Four threads calling woven functions while the advice is switched and
 * a placement removed and put back 1,000 times: the results stay right,
 * every flow still starts and ends once in one thread, no hit of the
 * advice changed is recorded twice, and every counted hit is a record or
 * a counted drop. */
Test(hook_inproc, four_threads_through_1000_changes, .timeout = 300)
{
	struct fx f;
	char line[256];
	struct stream *s = calloc(1, sizeof(*s));
	fx_start(&f, "4", "0", "s");
	/* The breakpoint site would make each call a trap: not here. */
	cr_assert_eq(xflow_hook_site_remove(f.t, f.id[S_TRAP][0]), 0);
	gt_send(&f.p);
	cr_assert(stream_until(&f, s, "running", line, sizeof(line)));
	bool seq_on = true, jump_on = true;
	unsigned changes = 0;
	for (unsigned i = 0; i < 1000; i++) {
		if (i % 2) {
			/* The SEQ placement out, or back in (its patch is rebuilt
			 * under the threads, with the flow's start and quit in it). */
			if (seq_on)
				cr_assert_eq(xflow_hook_site_remove(f.t, f.id[S_SEQ][1]), 0, "%s", xflow_hook_last_error(f.h));
			else
				place(&f, S_SEQ, 1);
			seq_on = !seq_on;
		} else {
			jump_on = !jump_on;
			cr_assert_eq(xflow_hook_advice_enable(f.t, ADV_JUMP, jump_on), 0);
		}
		changes++;
		xflow_hook_run(f.h, 0);
		xflow_hook_drain(f.h, stream_record, s, 0);
	}
	gt_send(&f.p);
	while (stream_until(&f, s, NULL, line, sizeof(line)))
		;
	for (int i = 0; i < 5000 && !f.exited; i++)
		xflow_hook_run(f.h, 2);
	xflow_hook_drain(f.h, stream_record, s, 0);
	cr_assert(f.exited && WIFEXITED(f.status) && WEXITSTATUS(f.status) == 0, "status %x", f.status);
	cr_expect_eq(check_outs(f.outs, "", 0), 4, "%s", f.outs);
	struct xflow_hook_advice_stats as[NADV];
	struct xflow_hook_prog_stats all;
	cr_assert_eq(xflow_hook_prog_stats(f.h, NADV, as, &all), 0);
	cr_expect_eq(s->bad, 0, "%zu records twice, out of order or in the wrong thread", s->bad);
	cr_expect_eq(as[ADV_SEQ].hits, s->seq + as[ADV_SEQ].drops, "seq: %llu hits, %zu records, %llu drops",
		     (unsigned long long)as[ADV_SEQ].hits, s->seq, (unsigned long long)as[ADV_SEQ].drops);
	cr_expect_eq(as[ADV_JUMP].hits, s->jumps + as[ADV_JUMP].drops, "jump: %llu hits, %zu records, %llu drops",
		     (unsigned long long)as[ADV_JUMP].hits, s->jumps, (unsigned long long)as[ADV_JUMP].drops);
	/* Every start and every quit ran (the same count), and a flow missing
	 * either record is one a full lane dropped, and counted. */
	cr_expect_eq(as[ADV_START].hits, as[ADV_QUIT].hits);
	/* A start left untracked may see its quit come as an orphan. */
	cr_expect_leq(s->nopen + s->orphan_quits, as[ADV_START].drops + as[ADV_QUIT].drops + s->untracked,
		      "%zu flows without a quit, %zu quits without a start (%zu starts untracked); %llu + %llu dropped",
		      s->nopen, s->orphan_quits, s->untracked, (unsigned long long)as[ADV_START].drops,
		      (unsigned long long)as[ADV_QUIT].drops);
	cr_log_info("%u changes; %zu flows, %zu seq and %zu jump records; %llu dropped", changes, s->flows, s->seq,
		    s->jumps, (unsigned long long)all.dropped);
	cr_expect_gt(s->seq, 0);
	cr_expect_gt(s->jumps, 0);
	free(s);
	fx_end(&f);
}

/*
 * The agent killed at any instant of its work must leave the target
 * running (issue 30, item 1).  An agent's whole life with one target runs
 * in a child process: attach, load a program, place every site, switch
 * advice and a site, serve, detach.  The target's threads run the woven
 * functions all along; once the agent is gone, the target must finish its
 * own work with the right results and exit 0.
 */
#define KILL_THREADS "8"

/* One agent's life with the engine f->h: 0 when it got through, else
 * which call failed (3 attach ... 7 detach). */
static int agent_life(struct fx *f)
{
	if (xflow_hook_attach(f->h, f->p.pid, &f->t))
		return 3;
	struct xflow_hook_prog prog;
	if (handplan_prog(&f->hp, f->base, 9, &prog))
		return 4;
	prog.lanes = 16;
	if (xflow_hook_prog_load(f->t, &prog))
		return 5;
	for (unsigned s = 0; s < NSITES; s++)
		if (xflow_hook_site_add(f->t, f->addr[s], XFLOW_HOOK_BEFORE, NULL, (void *)(uintptr_t)s, &f->id[s][0]))
			return 6;
	for (int i = 0; i < 4; i++) {
		if (xflow_hook_advice_enable(f->t, ADV_JUMP, i % 2) ||
		    xflow_hook_site_enable(f->t, f->id[i % 2 ? S_TRAP : S_MB][0], i >= 2))
			return 6;
		xflow_hook_run(f->h, 1);
		xflow_hook_drain(f->h, collect, f, 0);
		if (f->exited)
			return 6; /* f->t is gone with it */
	}
	if (xflow_hook_detach(f->t))
		return 7;
	return 0;
}

/* The fixture of plan, its threads running the woven functions; where it
 * is loaded in f->base and f->addr. */
static void kill_fixture(struct fx *f, const struct fx *plan)
{
	char line[256];
	*f = *plan;
	gt_start(&f->p, f->bin, KILL_THREADS, "0", "s");
	gt_line(&f->p, line, sizeof(line));
	gt_send(&f->p);
	gt_line(&f->p, line, sizeof(line));
	cr_assert_str_eq(line, "running\n");
	/* The plan was made for base 0: where the fixture is loaded now. */
	uint64_t at;
	cr_assert_eq(xflow_hook_resolve(f->p.pid, f->bin, XFLOW_HOOK_LOC_VADDR, f->hp.sites[S_SEQ].addr, &at), 0);
	f->base = at - f->hp.sites[S_SEQ].addr;
	for (unsigned i = 0; i < NSITES; i++)
		f->addr[i] = f->base + f->hp.sites[i].addr;
}

/* Start the fixture running, an agent on it (with XFLOW_HOOK_DIE_AT=@die
 * unless NULL, killed after @delay_us unless 0), and check the fixture:
 * the agent's wait status, or -1 when the fixture did not end well (what
 * happened goes to @what). */
static int agent_killed(const struct fx *plan, const char *die, long delay_us, char *what, size_t wlen)
{
	struct fx f;
	char outs[2048];
	kill_fixture(&f, plan);
	int err[2];
	cr_assert_eq(pipe(err), 0);
	pid_t agent = fork();
	cr_assert(agent >= 0);
	if (agent == 0) {
		dup2(err[1], 2);
		if (die)
			setenv("XFLOW_HOOK_DIE_AT", die, 1);
		struct xflow_hook_config cfg = { 0 };
		if (xflow_hook_new(&xflow_hook_inproc_ops, &cfg, &f.h))
			_exit(2);
		int rc = agent_life(&f);
		xflow_hook_free(f.h);
		_exit(rc);
	}
	close(err[1]);
	if (delay_us) {
		usleep((useconds_t)delay_us);
		kill(agent, SIGKILL);
	}
	int ast;
	while (waitpid(agent, &ast, 0) < 0 && errno == EINTR)
		;
	ssize_t n = read(err[0], what, wlen - 1);
	what[n > 0 ? n : 0] = 0;
	close(err[0]);
	/* The threads ran on without their tracer; now they stop. */
	usleep(2000);
	int wr = gt_write_in(&f.p, "stop\n");
	int st = gt_finish(&f.p, outs, sizeof(outs));
	unsigned lines = wr == 0 ? check_outs(outs, "", 0) : 0;
	if (wr == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && lines == 8)
		return ast;
	size_t k = strlen(what);
	snprintf(what + k, wlen - k, "the fixture %s %d, %u result lines",
		 WIFSIGNALED(st) ? "died of signal" : "exited with status",
		 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), lines);
	return -1;
}

/* The plan, made once for the fixture at load base 0. */
static void kill_plan(struct fx *f)
{
	gt_need_ptrace();
	memset(f, 0, sizeof(*f));
	f->bin = gt_build("ip_fx", "-O2");
	plan_build(f);
}

Test(hook_inproc, agent_killed_at_every_step, .timeout = 600)
{
	struct fx plan;
	kill_plan(&plan);
	char what[512], die[32];
	unsigned bad = 0, n;
	for (n = 1; n < 5000; n++) {
		snprintf(die, sizeof(die), "%u", n);
		int ast = agent_killed(&plan, die, 0, what, sizeof(what));
		if (ast < 0) {
			cr_log_error("step %u: %s", n, what);
			bad++;
			continue;
		}
		if (WIFEXITED(ast)) {
			cr_assert_eq(WEXITSTATUS(ast), 0, "the agent failed (status %d): %s", WEXITSTATUS(ast), what);
			break;
		}
		cr_assert(WIFSIGNALED(ast) && WTERMSIG(ast) == SIGKILL, "the agent ended with status %x: %s", ast, what);
	}
	cr_log_info("the agent killed at each of its %u steps: the target died %u times", n - 1, bad);
	cr_expect_eq(bad, 0, "the target did not survive the agent's death at %u of %u steps", bad, n - 1);
	cr_expect_gt(n, 50, "only %u steps: the step hook is not reached", n - 1);
	handplan_fini(&plan.hp);
}

/* The same life, the agent killed after a delay swept over its length:
 * instants between the steps (a thread running to a call's exit, the
 * kernel half way through a write). */
Test(hook_inproc, agent_killed_at_any_instant, .timeout = 600)
{
	enum { KILLS = 150 };
	struct fx plan;
	kill_plan(&plan);
	char what[512];
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	int ast = agent_killed(&plan, NULL, 0, what, sizeof(what));
	clock_gettime(CLOCK_MONOTONIC, &b);
	cr_assert(ast >= 0 && WIFEXITED(ast) && WEXITSTATUS(ast) == 0, "an agent left alone failed: %s", what);
	/* Less than the whole run: it includes the fixture's start. */
	long life_us = (b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000;
	unsigned bad = 0, killed = 0;
	for (unsigned i = 0; i < KILLS; i++) {
		ast = agent_killed(&plan, NULL, 1 + life_us * i / KILLS, what, sizeof(what));
		if (ast < 0) {
			cr_log_error("killed after %ld us: %s", 1 + life_us * i / KILLS, what);
			bad++;
		} else {
			killed += WIFSIGNALED(ast);
		}
	}
	cr_log_info("the agent (a life of %ld us) killed %u times at instants swept over it: the target died %u times",
		    life_us, killed, bad);
	cr_expect_eq(bad, 0, "the target did not survive %u of %u kills", bad, KILLS);
	handplan_fini(&plan.hp);
}

/* The target killed at each step of an agent's life instead (issue 30,
 * items 2 and 7: a target that dies in the middle of the injection): every
 * call returns, the attach that fails says why, and the engine reports the
 * target's end and is left with no target. */
Test(hook_inproc, target_killed_at_every_step, .timeout = 600)
{
	struct fx plan;
	kill_plan(&plan);
	char die[32], outs[2048];
	unsigned n, refused = 0, reported = 0;
	setenv("XFLOW_HOOK_DIE_WHO", "target", 1);
	for (n = 1; n < 5000; n++) {
		struct fx f;
		kill_fixture(&f, &plan);
		snprintf(die, sizeof(die), "%u", n);
		setenv("XFLOW_HOOK_DIE_AT", die, 1);
		struct xflow_hook_config cfg = { .on_event = on_event, .event_data = &f };
		cr_assert_eq(xflow_hook_new(&xflow_hook_inproc_ops, &cfg, &f.h), 0);
		int rc = agent_life(&f);
		if (rc == 3) {
			cr_expect(strstr(xflow_hook_last_error(f.h), "died while the runtime was being mapped in (killed by "
								     "signal 9)"),
				  "step %u: the attach failed but says '%s'", n, xflow_hook_last_error(f.h));
			refused++;
		} else if (rc) {
			for (int i = 0; i < 500 && !f.exited; i++)
				xflow_hook_run(f.h, 10);
			cr_expect(f.exited && WIFSIGNALED(f.status) && WTERMSIG(f.status) == SIGKILL,
				  "step %u: the target's end was not reported (status %x)", n, f.status);
			reported += f.exited;
		}
		/* No target is left to serve: it returns at once. */
		if (rc)
			cr_expect_geq(xflow_hook_run(f.h, -1), 0, "step %u: %s", n, xflow_hook_last_error(f.h));
		/* Whether the life had a step n (the last ones come after the
		 * detach, which then succeeded). */
		bool fired = f.h->steps >= f.h->die_at;
		xflow_hook_free(f.h);
		free(f.rec);
		unsetenv("XFLOW_HOOK_DIE_AT");
		if (!fired) {
			/* Past the last step: the target lived. */
			cr_assert_eq(gt_write_in(&f.p, "stop\n"), 0);
			gt_finish(&f.p, outs, sizeof(outs));
			break;
		}
		/* Its end was collected by the engine (-1), or is ours to. */
		int st = gt_finish(&f.p, outs, sizeof(outs));
		cr_expect(st == -1 || (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL), "step %u: the fixture ended with %x",
			  n, st);
	}
	unsetenv("XFLOW_HOOK_DIE_WHO");
	cr_log_info("the target killed at each of %u steps: %u attaches refused, %u ends reported", n - 1, refused,
		    reported);
	cr_expect_gt(n, 50);
	handplan_fini(&plan.hp);
}

/* A target with code made at run time (issue 30, item 7): a JIT's memfd
 * mapped executable and shared, and RWX anonymous memory, below its text.
 * The runtime goes in and out (its first and last system calls run from
 * padding of a file, never from the JIT's free space, which is its next
 * function's, nor through a shared mapping, which cannot be written), and
 * the JIT's code and free space are as the program left them. */
Test(hook_inproc, jit_code_left_alone, .timeout = 60)
{
	gt_need_ptrace();
	const char *bin = gt_build("jit_fx", "-O1");
	struct gt_proc p;
	char line[256], outs[256];
	gt_start(&p, bin, NULL, NULL, NULL);
	gt_line(&p, line, sizeof(line));
	cr_assert_str_eq(line, "ready\n");
	struct xflow_hook *h;
	struct xflow_hook_target *t = NULL;
	cr_assert_eq(xflow_hook_new(&xflow_hook_inproc_ops, NULL, &h), 0);
	cr_expect_eq(xflow_hook_attach(h, p.pid, &t), 0, "%s", xflow_hook_last_error(h));
	if (t)
		cr_expect_eq(xflow_hook_detach(t), 0, "%s", xflow_hook_last_error(h));
	xflow_hook_free(h);
	gt_send(&p);
	int st = gt_finish(&p, outs, sizeof(outs));
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %x", st);
	cr_expect_str_eq(outs, "out: calls ok\nout: jit intact\n");
}
