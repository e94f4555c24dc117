/*
 * What the scheduler join costs the model (issue 24): records per second
 * into the aggregation model on one core, the records at 1 M/s of record
 * time and Xen's scheduler events at 100 k/s, with the split on and off in
 * the same run; the ratio is the split's cost (target: on >= 70 % of off).
 *
 * The flows cross between the two vCPUs of their domain at every point,
 * so that each hop is split over two timelines, at a notification, with
 * its clock checked: the dearest case.  The vCPUs run, block, wake and
 * wait on two pCPUs, with switches and evtchn_op hypercalls, as Xen
 * traces them, and Xen interrupts each run once: every interrupt is two
 * entries of a timeline and a path of its own through the split (the
 * `xen` state), so a bench without them would not measure it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/bench/bench_util.h"
#include "tui/aggregate.h"
#include "tui/sched_join.h"

#define POINTS 16
#define RECORDS 6000000
#define RUNS 3
/* Record time between records (1 M/s) and between events (100 k/s). */
#define REC_NS 1000
#define EV_NS 10000
/* Steps of a vCPU's cycle in the event stream (next_event), and how long
 * Xen's interrupt in it lasts: a few microseconds, as a busy NIC's. */
#define STEPS 5
#define IRQ_NS 3000

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The @i-th scheduler event at @t: vCPU i / STEPS % 4 of domains 0 and 1
 * steps through blocked -> runnable -> running -> blocked, with the switch
 * that lets it run and, while it runs, an evtchn_op and an interrupt Xen
 * handles on its pCPU. */
static void next_event(uint64_t i, uint64_t t, struct xflow_sched_event *e)
{
	unsigned v = (unsigned)(i / STEPS % 4), step = (unsigned)(i % STEPS);
	memset(e, 0, sizeof(*e));
	e->t_ns = t;
	e->pcpu = (uint16_t)(v % 2);
	e->dom = (uint16_t)(v / 2);
	e->vcpu = (uint16_t)(v % 2);
	switch (step) {
	case 0:
		e->kind = XFLOW_SCHED_RUNSTATE;
		e->from = 2;
		e->to = 1;
		break;
	case 1:
		e->kind = XFLOW_SCHED_SWITCH;
		e->dom = 32767;
		e->vcpu = e->pcpu;
		e->dom2 = (uint16_t)(v / 2);
		e->vcpu2 = (uint16_t)(v % 2);
		break;
	case 2:
		e->kind = XFLOW_SCHED_RUNSTATE;
		e->from = 1;
		e->to = 0;
		break;
	case 3:
		e->kind = XFLOW_SCHED_HYPERCALL;
		e->arg = 32;
		break;
	default:
		e->kind = XFLOW_SCHED_XEN;
		e->arg = IRQ_NS;
		break;
	}
}

static double feed_rate(uint32_t live, int split, struct xft_agg_stats *st, struct xft_sched_status *ss,
			uint64_t *tail)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.max_flows = live + live / 4 + 1024;
	l.max_path = POINTS;
	l.window_ns = 1000000;
	struct xft_agg *a;
	struct xft_sj_limits sl = { 0 };
	if (xft_agg_new(&l, NULL, NULL, &a) || (split && xft_agg_sched_join(a, &sl, 0))) {
		fprintf(stderr, "bench_sched_join: cannot allocate the model\n");
		exit(1);
	}
	struct xflow_record r;
	memset(&r, 0, sizeof(r));
	r.version = XFLOW_RECORD_VERSION;
	uint64_t t = 1000000000, n = 0, ev = 0, next_ev = t, rnd = 1, c0 = cpu_ns();
	for (uint64_t round = 0; n < RECORDS; round++) {
		uint32_t point = (uint32_t)(round % POINTS);
		uint64_t gen = round / POINTS;
		for (uint32_t s = 0; s < live && n < RECORDS; s++, n++) {
			r.flow_id = (gen * live + s) % XFLOW_FLOWID_MAX + 1;
			r.site_id = point;
			/* Half the flows in each domain, each point on the
			 * other vCPU of it. */
			r.domain_id = (uint16_t)(s % 2);
			r.cpu_plus1 = 1 + point % 2;
			r.flags = point == 0 ? XFLOW_REC_START : point == POINTS - 1 ? XFLOW_REC_QUIT : 0;
			/* Records 0.5 to 1.5 us apart: hops of equal length
			 * would all be at their p99, and all split into the
			 * slowest 1 % too. */
			rnd = rnd * 6364136223846793005u + 1442695040888963407u;
			t += REC_NS / 2 + (rnd >> 33) % REC_NS;
			while (next_ev <= t) {
				struct xflow_sched_event e;
				next_event(ev++, next_ev, &e);
				if (split)
					xft_agg_sched_event(a, &e);
				next_ev += EV_NS;
			}
			xft_agg_feed(a, &r, t);
			if ((n & 4095) == 0)
				xft_agg_tick(a, t);
		}
	}
	xft_agg_drain(a);
	xft_agg_sched_flush(a);
	uint64_t c1 = cpu_ns();
	*st = *xft_agg_stats(a);
	*ss = *xft_agg_sched_status(a);
	size_t nh;
	const struct xft_hop *h = xft_agg_hops(a, &nh);
	*tail = 0;
	for (size_t i = 0; i < nh; i++)
		*tail += h[i].split.tail_count;
	xft_agg_free(a);
	return (double)RECORDS / ((double)(c1 - c0) / 1e9);
}

/* @live flows in flight: each advances one point every @live records,
 * so a hop lasts @live microseconds of record time, over which each vCPU
 * changes state about @live / 100 times and is interrupted @live / 200
 * times. */
static void bench(uint32_t live)
{
	double on[RUNS], off[RUNS];
	struct xft_agg_stats st;
	struct xft_sched_status ss;
	uint64_t tail;
	/* Interleaved, so that both see the same machine. */
	for (int i = 0; i < RUNS; i++) {
		off[i] = feed_rate(live, 0, &st, &ss, &tail);
		on[i] = feed_rate(live, 1, &st, &ss, &tail);
	}
	double a = bench_median(on, RUNS), b = bench_median(off, RUNS);
	printf("scheduler join, %5u live flows crossing vCPUs at every point (hops of %u us), records at "
	       "1 M/s and scheduler events at 100 k/s of record time (1 in %d an interrupt of %d us): split on "
	       "%.2f M records/s, off %.2f M records/s on one core (median of %d): ratio %.2f (target >= 0.70); "
	       "%llu hop samples split (%llu in the slowest 1 %%), %llu split early, clock error %.1f us, model %.0f MiB\n",
	       live, live, STEPS, IRQ_NS / 1000, a / 1e6, b / 1e6, RUNS, a / b, (unsigned long long)ss.hops_split,
	       (unsigned long long)tail,
	       (unsigned long long)st.split_early,
	       ss.clock_error_ns == UINT64_MAX ? -1.0 : (double)ss.clock_error_ns / 1e3,
	       (double)st.memory_bytes / (1 << 20));
}

int main(void)
{
	bench(100);
	bench(1000);
	return 0;
}
