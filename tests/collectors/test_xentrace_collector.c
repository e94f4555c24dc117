/*
 * The xentrace collector through its ops table, on traces generated with the
 * writer: the hypervisor() summary's runstate counts, times and shares are
 * exact, exits carry cycle percentiles, PV events and hypercalls are counted
 * per domain, lost records are placed, unknown event ids listed; replay at
 * a speed, a pipe read live; truncated and garbage files give clear errors.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collectors/builtin.h"
#include "collectors/xentrace.h"
#include "collectors/xentrace_collector.h"

#define RUNNING XENTRACE_RS_RUNNING
#define RUNNABLE XENTRACE_RS_RUNNABLE
#define BLOCKED XENTRACE_RS_BLOCKED
#define IDLE XENTRACE_IDLE_DOMAIN

static const struct xflow_collector_ops *ops = &xflow_collector_xentrace;
static char path[64];

static struct xentrace_writer *begin(FILE **f, unsigned ncpus, size_t window)
{
	snprintf(path, sizeof(path), "/tmp/xft-xtcol-XXXXXX");
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	*f = fdopen(fd, "w");
	cr_assert_not_null(*f);
	struct xentrace_writer *w;
	cr_assert_eq(xentrace_writer_new(&w, *f, ncpus, window), 0);
	return w;
}

static void end(FILE *f, struct xentrace_writer *w)
{
	cr_assert_eq(xentrace_writer_close(w), 0);
	cr_assert_eq(fclose(f), 0);
}

static void rs(struct xentrace_writer *w, unsigned cpu, uint64_t tsc, unsigned dom, unsigned v, int from, int to)
{
	cr_assert_eq(xentrace_writer_runstate(w, cpu, tsc, dom, v, from, to), 0);
}

static void noemit(void *ctx, const struct xflow_record *r, uint64_t t)
{
	(void)ctx, (void)r, (void)t;
	cr_assert_fail("the xentrace collector emits no flow records");
}

static struct xflow_collector *open_ok(const char *opts)
{
	struct xflow_collector *c = NULL;
	char err[512] = "";
	int rc = ops->open(opts, &c, err, sizeof(err));
	cr_assert_eq(rc, 0, "%s: %s", opts, err);
	return c;
}

/* Reads to the end; returns what the last read() said. */
static long read_all(struct xflow_collector *c)
{
	long n;
	for (int i = 0; i < 1000; i++) {
		n = ops->read(c, 0, noemit, NULL, 4096);
		if (n < 0)
			return n;
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
	return 0;
}

static const struct xflow_hv_vcpu *find_vcpu(const struct xflow_hv_summary *h, uint32_t dom, uint32_t v)
{
	for (uint32_t i = 0; i < h->nvcpus; i++)
		if (h->vcpus[i].domain == dom && h->vcpus[i].vcpu == v)
			return &h->vcpus[i];
	cr_assert_fail("no d%uv%u", dom, v);
	return NULL;
}

static const struct xflow_hv_event *find_event(const struct xflow_hv_summary *h, uint32_t dom, int kind,
					       uint32_t code)
{
	for (uint32_t i = 0; i < h->nevents; i++)
		if (h->events[i].domain == dom && (int)h->events[i].kind == kind && h->events[i].code == code)
			return &h->events[i];
	return NULL;
}

/* The first test of test_xentrace_state.c, through the collector. */
static void write_runstates(struct xentrace_writer *w)
{
	rs(w, 1, 200, IDLE, 1, RUNNING, RUNNABLE);
	rs(w, 1, 300, IDLE, 1, RUNNABLE, RUNNING);
	rs(w, 1, 8000, 1, 0, BLOCKED, RUNNABLE);
	rs(w, 1, 8400, IDLE, 1, RUNNING, RUNNABLE);
	rs(w, 1, 8500, 1, 0, RUNNABLE, RUNNING);
	rs(w, 1, 9500, 1, 0, RUNNING, BLOCKED);
	xentrace_writer_flush_cpu(w, 1);
	rs(w, 0, 100, IDLE, 0, RUNNING, RUNNABLE);
	rs(w, 0, 1000, 1, 0, RUNNABLE, RUNNING);
	rs(w, 0, 5000, 1, 0, RUNNING, BLOCKED);
	rs(w, 0, 5000, IDLE, 0, RUNNABLE, RUNNING);
}

static void check_runstates(const struct xflow_hv_summary *h)
{
	cr_assert_eq(h->cpu_hz, 1000000000);
	cr_assert_eq(h->total_ns, 9400);
	cr_assert_eq(h->records, 10);
	const struct xflow_hv_vcpu *v = find_vcpu(h, 1, 0);
	cr_assert_eq(v->count[XFLOW_HV_RUNNING], 2);
	cr_assert_eq(v->ns[XFLOW_HV_RUNNING], 5000);
	cr_assert_eq(v->count[XFLOW_HV_BLOCKED], 1);
	cr_assert_eq(v->ns[XFLOW_HV_BLOCKED], 3000);
	cr_assert_eq(v->count[XFLOW_HV_RUNNABLE], 1);
	cr_assert_eq(v->ns[XFLOW_HV_RUNNABLE], 500);
	cr_assert_eq(v->count[XFLOW_HV_OFFLINE], 0);
	cr_assert_float_eq(v->share[XFLOW_HV_RUNNING], 5000.0 / 9400, 1e-12);
	cr_assert_float_eq(v->share[XFLOW_HV_BLOCKED], 3000.0 / 9400, 1e-12);
	cr_assert_eq(v->wakes, 1);
	cr_assert_eq(v->wake_p50_ns, 500);
	cr_assert_eq(v->wake_p99_ns, 500);
	cr_assert_eq(v->wake_ns, 500);
	cr_assert_not_null(v->wake_hist);
	cr_assert_eq(v->wake_hist->count, 1);
	cr_assert_eq(v->wake_hist->min, 500, "in cycles of the 1 GHz clock");
	cr_assert_null(find_vcpu(h, IDLE, 0)->wake_hist, "no wake, no histogram");
	cr_assert_eq(v->migrations, 1);
	cr_assert_eq(v->pcpu, 1);
	find_vcpu(h, IDLE, 0);
	find_vcpu(h, IDLE, 1);
	cr_assert_eq(h->nvcpus, 3);
	cr_assert_eq(h->nlost, 0);
	cr_assert_eq(h->unknown_total, 0);
	cr_assert_not_null(h->text);
	cr_assert_not_null(strstr(h->text, "|-- Domain 1 --|"), "%s", h->text);
	cr_assert_not_null(strstr(h->text, "   running:       2  0.00s   2500"), "%s", h->text);
}

Test(xentrace_collector, is_built_in_with_the_current_abi_and_the_hook)
{
	cr_assert_eq(xflow_collector_find("xentrace"), ops);
	cr_assert_eq(ops->abi, XFLOW_COLLECTOR_ABI);
	cr_assert_not_null(ops->hypervisor);
	cr_assert_not_null(ops->last_error);
}

Test(xentrace_collector, runstate_shares_and_counts_are_exact)
{
	FILE *f;
	struct xentrace_writer *w = begin(&f, 2, 4096);
	write_runstates(w);
	end(f, w);
	char opts[128];
	snprintf(opts, sizeof(opts), "file=%s,cpu-hz=1G", path);
	struct xflow_collector *c = open_ok(opts);
	const struct xflow_hv_summary *h;
	cr_assert_eq(ops->hypervisor(c, &h), -ENODATA, "nothing before the first read");
	cr_assert_eq(read_all(c), -ENODATA);
	cr_assert_null(ops->last_error(c));
	cr_assert_eq(ops->hypervisor(c, &h), 0);
	cr_assert(h->complete);
	cr_assert_eq(h->size, h->bytes + 2 * 12 /* the two windows' cpu-change records */);
	check_runstates(h);
	ops->close(c);
	unlink(path);
}

Test(xentrace_collector, exits_pv_events_lost_and_unknown)
{
	FILE *f;
	struct xentrace_writer *w = begin(&f, 2, 4096);
	/* d3, HVM, on cpu 0: ten IO exits of 10..19 cycles, one HLT of 100. */
	rs(w, 0, 100, IDLE, 0, RUNNING, RUNNABLE);
	rs(w, 0, 200, 3, 0, RUNNABLE, RUNNING);
	for (unsigned i = 0; i < 10; i++) {
		cr_assert_eq(xentrace_writer_vmexit(w, 0, 1000 + 100 * i, 30, 0xffffffff81000000u), 0);
		cr_assert_eq(xentrace_writer_vmentry(w, 0, 1000 + 100 * i + 10 + i), 0);
	}
	cr_assert_eq(xentrace_writer_vmexit(w, 0, 5000, 12, 0), 0);
	rs(w, 0, 5100, 3, 0, RUNNING, RUNNABLE);
	cr_assert_eq(xentrace_writer_add(w, 0, 5400, true, 0x0001f0aau, 0, NULL), 0); /* unknown */
	cr_assert_eq(xentrace_writer_add(w, 0, 5500, true, 0x0001f0aau, 0, NULL), 0);
	cr_assert_eq(xentrace_writer_add(w, 0, 5600, true, 0x0000f0ffu, 0, NULL), 0);
	/* d0, PV, on cpu 1: seven hypercalls, then Xen loses 42 records. */
	rs(w, 1, 150, IDLE, 1, RUNNING, RUNNABLE);
	rs(w, 1, 300, 0, 0, RUNNABLE, RUNNING);
	for (unsigned i = 0; i < 7; i++)
		cr_assert_eq(xentrace_writer_hypercall(w, 1, 400 + i, i % 2 ? 29 : 23), 0);
	cr_assert_eq(xentrace_writer_lost(w, 1, 7000, 42, 0, 0, 3000), 0);
	rs(w, 1, 8000, 0, 0, RUNNING, BLOCKED);
	end(f, w);
	char opts[128];
	snprintf(opts, sizeof(opts), "cpu-hz=1000000000,file=%s", path);
	struct xflow_collector *c = open_ok(opts);
	cr_assert_eq(read_all(c), -ENODATA);
	const struct xflow_hv_summary *h;
	cr_assert_eq(ops->hypervisor(c, &h), 0);

	const struct xflow_hv_event *io = find_event(h, 3, XFLOW_HV_EXIT, 30);
	cr_assert_not_null(io);
	cr_assert_str_eq(io->name, "IO_INSTRUCTION");
	cr_assert_eq(io->count, 10);
	cr_assert_eq(io->ns, 10 * 10 + 45);
	cr_assert(io->p50_cycles >= 14 && io->p50_cycles <= 15, "p50 %lu", (unsigned long)io->p50_cycles);
	cr_assert_eq(io->p99_cycles, 19);
	cr_assert_float_eq(io->share, 145.0 / (double)h->total_ns, 1e-9);
	const struct xflow_hv_event *hlt = find_event(h, 3, XFLOW_HV_EXIT, 12);
	cr_assert_not_null(hlt);
	cr_assert_str_eq(hlt->name, "HLT");
	cr_assert_eq(hlt->count, 1);
	cr_assert_eq(hlt->ns, 100);
	cr_assert_eq(hlt->p50_cycles, 100);

	const struct xflow_hv_event *e = find_event(h, 0, XFLOW_HV_HYPERCALL, 29);
	cr_assert_not_null(e);
	cr_assert_str_eq(e->name, "sched_op");
	cr_assert_eq(e->count, 3);
	e = find_event(h, 0, XFLOW_HV_HYPERCALL, 23);
	cr_assert_not_null(e);
	cr_assert_str_eq(e->name, "iret");
	cr_assert_eq(e->count, 4);
	e = find_event(h, 0, XFLOW_HV_PV, 13);
	cr_assert_not_null(e);
	cr_assert_str_eq(e->name, "hypercall");
	cr_assert_eq(e->count, 7);
	cr_assert_eq(e->ns, 0);
	cr_assert_null(find_event(h, 3, XFLOW_HV_PV, 13), "d3's records are not d0's");

	cr_assert_eq(h->lost_records, 42);
	cr_assert_eq(h->nlost, 1);
	cr_assert_eq(h->lost[0].cpu, 1);
	cr_assert_eq(h->lost[0].records, 42);
	cr_assert_gt(h->lost[0].offset, 0);
	cr_assert_eq(h->lost[0].at_ns, 3000 - 100, "where the loss began");

	cr_assert_eq(h->unknown_total, 3);
	cr_assert_eq(h->nunknown, 2);
	cr_assert_eq(h->unknown[0].event, 0x0000f0ffu);
	cr_assert_eq(h->unknown[0].count, 1);
	cr_assert_eq(h->unknown[1].event, 0x0001f0aau);
	cr_assert_eq(h->unknown[1].count, 2);
	struct xflow_collector_stats st;
	ops->stats(c, &st);
	cr_assert_eq(st.drops, 42, "lost records are the collector's drops");
	ops->close(c);
	unlink(path);
}

Test(xentrace_collector, replays_at_a_speed)
{
	FILE *f;
	struct xentrace_writer *w = begin(&f, 2, 4096);
	write_runstates(w);
	end(f, w);
	char opts[128];
	/* 9400 cycles at 1 kHz are 9.4 s of trace; at speed 100, 94 ms. */
	snprintf(opts, sizeof(opts), "file=%s,cpu-hz=1k,speed=100", path);
	struct xflow_collector *c = open_ok(opts);
	const uint64_t t0 = UINT64_C(1000000000000);
	cr_assert_eq(ops->read(c, t0, noemit, NULL, 64), 0);
	const struct xflow_hv_summary *h;
	cr_assert_eq(ops->hypervisor(c, &h), 0);
	cr_assert_eq(h->records, 1, "only the first record is due");
	cr_assert_not(h->complete);
	/* cycle 5000 is 4.9 s after the first record: 49 ms at speed 100. */
	cr_assert_eq(ops->read(c, t0 + 50000000, noemit, NULL, 64), 0);
	cr_assert_eq(ops->hypervisor(c, &h), 0);
	cr_assert_eq(h->records, 6, "%lu", (unsigned long)h->records);
	cr_assert_eq(ops->read(c, t0 + 100000000, noemit, NULL, 64), -ENODATA);
	cr_assert_eq(ops->hypervisor(c, &h), 0);
	cr_assert(h->complete);
	cr_assert_eq(h->cpu_hz, 1000);
	cr_assert_eq(find_vcpu(h, 1, 0)->ns[XFLOW_HV_RUNNING], 5000000000u);
	ops->close(c);
	unlink(path);
}

Test(xentrace_collector, reads_a_pipe_live)
{
	FILE *f;
	struct xentrace_writer *w = begin(&f, 2, 4096);
	write_runstates(w);
	end(f, w);
	FILE *in = fopen(path, "rb");
	cr_assert_not_null(in);
	char buf[65536];
	size_t n = fread(buf, 1, sizeof(buf), in);
	fclose(in);
	unlink(path);
	int p[2];
	cr_assert_eq(pipe(p), 0);
	char opts[64];
	snprintf(opts, sizeof(opts), "fd=%d,cpu-hz=1G", p[0]);
	struct xflow_collector *c = open_ok(opts);
	cr_assert_eq(ops->read(c, 0, noemit, NULL, 64), 0, "nothing has come yet");
	cr_assert_eq(write(p[1], buf, n), (ssize_t)n);
	close(p[1]);
	cr_assert_eq(read_all(c), -ENODATA);
	const struct xflow_hv_summary *h;
	cr_assert_eq(ops->hypervisor(c, &h), 0);
	cr_assert(h->complete);
	cr_assert_eq(h->size, 0);
	check_runstates(h);
	ops->close(c);
	close(p[0]);
}

Test(xentrace_collector, a_pipe_that_stays_open_is_closed_cleanly)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	char opts[64];
	snprintf(opts, sizeof(opts), "fd=%d,cpu-hz=2.4G", p[0]);
	struct xflow_collector *c = open_ok(opts);
	cr_assert_eq(ops->read(c, 0, noemit, NULL, 64), 0);
	const struct xflow_hv_summary *h;
	cr_assert_eq(ops->hypervisor(c, &h), -ENODATA);
	ops->close(c); /* the reading thread waits in read(2) */
	close(p[0]);
	close(p[1]);
}

Test(xentrace_collector, a_truncated_file_is_a_clear_error)
{
	FILE *f;
	struct xentrace_writer *w = begin(&f, 2, 4096);
	write_runstates(w);
	end(f, w);
	FILE *in = fopen(path, "rb");
	char buf[65536];
	size_t n = fread(buf, 1, sizeof(buf), in);
	fclose(in);
	in = fopen(path, "wb");
	fwrite(buf, 1, n - 6, in); /* the last record loses its end */
	fclose(in);
	char opts[128];
	snprintf(opts, sizeof(opts), "file=%s,cpu-hz=1G", path);
	struct xflow_collector *c = open_ok(opts);
	cr_assert_eq(read_all(c), -EBADMSG);
	const char *e = ops->last_error(c);
	cr_assert_not_null(e);
	cr_assert_not_null(strstr(e, path), "%s", e);
	cr_assert_not_null(strstr(e, "truncated"), "%s", e);
	const struct xflow_hv_summary *h;
	cr_assert_eq(ops->hypervisor(c, &h), 0, "what could be read is still shown");
	cr_assert_gt(h->records, 0);
	/* Not complete, and why, with the offset; the record cut is skipped. */
	cr_expect_eq(h->complete, 0);
	cr_assert_not_null(h->damage);
	cr_expect(strncmp(h->damage, "offset ", 7) == 0 && strstr(h->damage, ": truncated: ") &&
		  strstr(h->damage, "the file ends 6 bytes short"), "%s", h->damage);
	cr_expect_eq(h->skipped_framing, 1, "the record cut");
	cr_expect_eq(h->skipped, h->skipped_bad_tsc + h->skipped_framing + h->skipped_decode);
	ops->close(c);

	/* The same bytes from a pipe: the same verdict. */
	int p[2];
	cr_assert_eq(pipe(p), 0);
	snprintf(opts, sizeof(opts), "fd=%d,cpu-hz=1G", p[0]);
	c = open_ok(opts);
	cr_assert_eq(write(p[1], buf, n - 6), (ssize_t)(n - 6));
	close(p[1]);
	cr_assert_eq(read_all(c), -EBADMSG);
	e = ops->last_error(c);
	cr_expect(e && strstr(e, "truncated"), "%s", e ? e : "(none)");
	cr_assert_eq(ops->hypervisor(c, &h), 0);
	cr_expect_eq(h->complete, 0);
	cr_expect(h->damage && strstr(h->damage, "truncated"), "%s", h->damage ? h->damage : "(none)");
	ops->close(c);
	close(p[0]);
	unlink(path);
}

/* Records the reader drops are counted as skipped, with why: a TSC far in
 * the future (a flipped byte) is not believed. */
Test(xentrace_collector, skipped_records_say_why)
{
	FILE *f;
	struct xentrace_writer *w = begin(&f, 2, 4096);
	write_runstates(w);
	uint32_t x = 0;
	cr_assert_eq(xentrace_writer_add(w, 0, 6000 + (UINT64_C(1) << 52), true, 0x28004, 1, &x), 0);
	cr_assert_eq(xentrace_writer_add(w, 0, 6100, true, 0x28004, 1, &x), 0);
	end(f, w);
	char opts[128];
	snprintf(opts, sizeof(opts), "file=%s,cpu-hz=1G", path);
	struct xflow_collector *c = open_ok(opts);
	cr_assert_eq(read_all(c), -ENODATA, "damage inside a record is not a broken file");
	const struct xflow_hv_summary *h;
	cr_assert_eq(ops->hypervisor(c, &h), 0);
	cr_expect_eq(h->skipped_bad_tsc, 1);
	cr_expect_geq(h->skipped, 1);
	cr_expect_eq(h->skipped, h->skipped_bad_tsc + h->skipped_framing + h->skipped_decode);
	cr_expect(h->complete);
	cr_expect_null(h->damage);
	ops->close(c);
	unlink(path);
}

Test(xentrace_collector, bad_files_and_options_are_refused_with_the_reason)
{
	struct xflow_collector *c = NULL;
	char err[512], opts[128];
	snprintf(path, sizeof(path), "/tmp/xft-xtcol-XXXXXX");
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	static const char junk[] = "this is not a trace file, not at all, not even close to one.....";
	cr_assert_eq(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(fd);
	snprintf(opts, sizeof(opts), "file=%s,cpu-hz=1G", path);
	cr_assert_lt(ops->open(opts, &c, err, sizeof(err)), 0);
	cr_assert_not_null(strstr(err, "not a xentrace file"), "%s", err);
	unlink(path);

	static const struct {
		const char *opts, *want;
	} bad[] = {
		{ "file=/nonexistent/x.trace,cpu-hz=1G", "/nonexistent/x.trace: No such file" },
		{ "file=/dev/null", "cpu-hz=HZ is required" },
		{ "", "no input" },
		{ "pipe,fd=3,cpu-hz=1G", "not several" },
		{ "pipe,cpu-hz=fast", "bad value 'fast' for cpu-hz" },
		{ "pipe,cpu-hz=1G,speed=2", "a pipe is read as it comes" },
		{ "file=/dev/null,cpu-hz=1G,speed=0", "bad value '0' for speed" },
		{ "file=/dev/null,cpu-hz=1G,colour=red", "unknown option 'colour=red'" },
		{ "file=/dev/null,cpu-hz=1G,clock-offset=soon", "bad value 'soon' for clock-offset" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		c = NULL;
		cr_assert_lt(ops->open(bad[i].opts, &c, err, sizeof(err)), 0, "%s", bad[i].opts);
		cr_assert_not_null(strstr(err, bad[i].want), "%s: %s", bad[i].opts, err);
	}
}

static void sched_collect(void *ctx, const struct xflow_sched_event *e)
{
	struct xflow_sched_event *out = ctx;
	out[out[0].arg++ + 1] = *e;
}

/* The scheduler's records as the join takes them (xflow/collector.h):
 * runstate changes, switches, event-channel hypercalls and lost records,
 * on the monitor's clock by clock-offset; nothing else. */
Test(xentrace_collector, gives_the_schedulers_records_as_events)
{
	FILE *f;
	struct xentrace_writer *w = begin(&f, 2, 4096);
	rs(w, 0, 2400, 1, 0, XENTRACE_RS_BLOCKED, XENTRACE_RS_RUNNABLE);
	uint32_t sw[4] = { 32767, 1, 1, 0 };
	cr_assert_eq(xentrace_writer_add(w, 1, 4800, true, 0x2800a, 4, sw), 0);
	rs(w, 1, 4800, 1, 0, XENTRACE_RS_RUNNABLE, XENTRACE_RS_RUNNING);
	cr_assert_eq(xentrace_writer_hypercall(w, 1, 7200, 32), 0);
	cr_assert_eq(xentrace_writer_hypercall(w, 1, 8400, 1), 0); /* mmu_update: not the join's */
	cr_assert_eq(xentrace_writer_vmentry(w, 1, 9600), 0); /* not the scheduler's */
	cr_assert_eq(xentrace_writer_lost(w, 0, 12000, 3, 1, 0, 11000), 0);
	end(f, w);
	char opts[160];
	snprintf(opts, sizeof(opts), "file=%s,cpu-hz=2.4G,clock-offset=-500", path);
	struct xflow_collector *c = open_ok(opts);
	cr_assert_not_null(ops->sched);
	struct xflow_sched_event ev[16];
	memset(ev, 0, sizeof(ev));
	cr_assert_eq(read_all(c), -ENODATA);
	long n = ops->sched(c, 0, sched_collect, ev, 15);
	cr_assert_eq(n, 5, "%ld events", n);
	cr_assert_eq(ops->sched(c, 0, sched_collect, ev, 15), -ENODATA, "all given, and the input ended");
	struct xflow_sched_event *e = ev + 1;
	cr_assert_eq(e[0].kind, XFLOW_SCHED_RUNSTATE);
	cr_assert_eq(e[0].t_ns, 1000 - 500, "2400 cycles at 2.4 GHz, 500 ns earlier");
	cr_assert_eq(e[0].from, XENTRACE_RS_BLOCKED);
	cr_assert_eq(e[0].to, XENTRACE_RS_RUNNABLE);
	cr_assert_eq(e[0].dom, 1);
	cr_assert_eq(e[1].kind, XFLOW_SCHED_SWITCH);
	cr_assert_eq(e[1].pcpu, 1);
	cr_assert_eq(e[1].dom, 32767);
	cr_assert_eq(e[1].dom2, 1);
	cr_assert_eq(e[2].kind, XFLOW_SCHED_RUNSTATE);
	cr_assert_eq(e[3].kind, XFLOW_SCHED_HYPERCALL);
	cr_assert_eq(e[3].arg, 32);
	cr_assert_eq(e[4].kind, XFLOW_SCHED_LOST);
	cr_assert_eq(e[4].arg, 3);
	ops->close(c);
	unlink(path);
}

/* TRC_HW_IRQ_HANDLED {irq, TSC at entry, TSC at exit}, the TSCs' low
 * words: Xen's own time, its length the difference on 32 bits (which
 * wraps here) at cpu-hz, ending at the exit (its low word is the record's
 * TSC's, less the time Xen took to write the record).  A record too short
 * to say is no event. */
Test(xentrace_collector, an_interrupt_handled_is_xens_own_time)
{
	FILE *f;
	struct xentrace_writer *w = begin(&f, 2, 4096);
	uint32_t irq[3] = { 19, 0xfffff000u, 0x00000e00u }; /* 0x1e00 = 7680 cycles */
	/* The exit at 2^32 + 0xe00 cycles, the record written 240 later. */
	uint64_t exit_tsc = (UINT64_C(1) << 32) + 0xe00;
	cr_assert_eq(xentrace_writer_add(w, 1, exit_tsc + 240, true, 0x802008, 3, irq), 0);
	cr_assert_eq(xentrace_writer_add(w, 1, exit_tsc + 2640, true, 0x802008, 2, irq), 0);
	end(f, w);
	char opts[160];
	snprintf(opts, sizeof(opts), "file=%s,cpu-hz=2.4G,clock-offset=-500", path);
	struct xflow_collector *c = open_ok(opts);
	struct xflow_sched_event ev[4];
	memset(ev, 0, sizeof(ev));
	cr_assert_eq(read_all(c), -ENODATA);
	cr_assert_eq(ops->sched(c, 0, sched_collect, ev, 3), 1);
	cr_assert_eq(ev[1].kind, XFLOW_SCHED_XEN);
	cr_assert_eq(ev[1].pcpu, 1);
	cr_assert_eq(ev[1].t_ns, 1789571200 - 500, "at the exit, 2^32 + 0xe00 cycles at 2.4 GHz, 500 ns earlier: %llu",
		     (unsigned long long)ev[1].t_ns);
	cr_assert_eq(ev[1].arg, 3200, "7680 cycles at 2.4 GHz: %u ns", ev[1].arg);
	ops->close(c);
	unlink(path);
}

#if defined(__x86_64__)
/* clock-offset=auto: a record at the TSC this CPU reads now is placed at
 * this host's CLOCK_MONOTONIC now, whatever the rate given. */
Test(xentrace_collector, auto_clock_places_the_tsc_by_dom0s_anchors)
{
	FILE *f;
	struct xentrace_writer *w = begin(&f, 1, 4096);
	uint32_t lo, hi;
	struct timespec ts;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t mono = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	rs(w, 0, (uint64_t)hi << 32 | lo, 1, 0, XENTRACE_RS_BLOCKED, XENTRACE_RS_RUNNABLE);
	end(f, w);
	char opts[160];
	snprintf(opts, sizeof(opts), "file=%s,cpu-hz=2.4G,clock-offset=auto", path);
	struct xflow_collector *c = open_ok(opts);
	struct xflow_sched_event ev[4];
	memset(ev, 0, sizeof(ev));
	read_all(c);
	cr_assert_eq(ops->sched(c, 0, sched_collect, ev, 3), 1);
	int64_t d = (int64_t)(ev[1].t_ns - mono);
	/* The anchor was taken after the record: the difference is what
	 * the clock did in between, scaled by how far 2.4 GHz is off. */
	cr_assert(d > -5000000 && d < 5000000, "placed %lld ns from the clock", (long long)d);
	ops->close(c);
	unlink(path);
}
#endif
