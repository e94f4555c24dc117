/*
 * The xentrace collector: Xen's own trace records (collectors/xentrace.h),
 * from a file or live from xentrace's output on a pipe, decoded into what
 * the hypervisor did — runstates per domain and vcpu, wake-to-run latency,
 * HVM exits, PV events and hypercalls, lost records, unknown events.  It
 * delivers no flow records: what it gives is the hypervisor() summary of
 * xflow/collector.h, and as its text the summary comparable line for line
 * with `xenalyze --summary`.
 *
 * Options (comma-separated):
 *   file=PATH   a file written by xentrace (a FIFO is read as a pipe)
 *   pipe        standard input, e.g. `xentrace ... /dev/stdout | xflowtop ...`
 *   fd=N        an inherited descriptor, read as a pipe
 *   cpu-hz=HZ   the traced host's TSC rate: 2.4G, 2400M, 2400000000.
 *               Required: xentrace records do not carry it, and calibrating
 *               against our clock would measure xentrace's buffering too.
 *   speed=N     replay a file at N times its recorded speed (0.001 to 1e6),
 *               or speed=max (the default): as fast as it can be read.
 *   clock-offset=NS  where the trace's time stands on the monitor's clock:
 *               a record at TSC T is at T / cpu-hz + NS nanoseconds of the
 *               monitor's CLOCK_MONOTONIC (default 0: the TSC counts from
 *               that clock's origin, as the simulated host's does).
 *   clock-offset=auto  live in dom0 on x86: from dom0's own anchors, its
 *               TSC (the host's, in Xen's default TSC mode) read beside its
 *               CLOCK_MONOTONIC when the collector opens and again at each
 *               sched() call; a TSC is placed by the latest pair, at the
 *               rate measured between the first and the latest once they
 *               are a second apart (cpu-hz until then).  Wrong for a file
 *               of another boot: the join's clock check then says so.
 *
 * Besides the summary, the collector gives the scheduler's records as
 * events for the join with the flows (the sched() hook, xflow/collector.h):
 * runstate changes, switches, hypercalls, lost records and the interrupts
 * Xen handled (its own time), on the monitor's clock by clock-offset, in a
 * queue of SCHED_QUEUE events.  From a file, reading waits while the queue
 * is full once someone takes from it; from a pipe, what does not fit is
 * given as a LOST event.
 *
 * A file is read on the monitor's thread (read() takes at most MAX_BATCH
 * records per call, all of them at speed=max for files below that).  A
 * pipe is read by a thread of its own, because the reader blocks in read(2)
 * when it needs input; the decoder's state is shared under a mutex.
 *
 * The decoder's counts and times come from the library; the collector adds
 * what the library does not keep in public: cycle percentiles per exit
 * reason, PV event counts per domain, the places of lost records, the ids
 * of unknown events.  For that it follows which domain runs on each pcpu.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collectors/xentrace_collector.h"
#include "common/mem.h"
#include "common/quiet_thread.h"
#include "collectors/xentrace.h"
#include "xflow/histogram.h"

#define MAX_BATCH (UINT64_C(16) << 20) /* records per read() of a file */
#define MAX_LOST 32
#define XEN_HYPERCALL_EVTCHN_OP 32 /* __HYPERVISOR_event_channel_op */
#define MAX_EVENT_IDS 4096             /* distinct event ids followed for "unknown" */
#define MAX_TRACKED_DOMS 64            /* domains with PV counts and exit histograms */
#define SCHED_QUEUE 65536u             /* scheduler events not yet taken */
#define PV_MAX XENTRACE_PV_EVENT_MAX
#define EXIT_NAMES XENTRACE_VMX_EXIT_NAMES

/* The names are the library's: xentrace_pv_event_name() and friends. */

/* What the collector follows per domain besides the library. */
struct tdom {
	uint32_t did;
	uint64_t pv[PV_MAX];
	struct xflow_hist *exit_h[XENTRACE_VMX_EXIT_MAX]; /* cycles exit -> entry, on first use */
};

struct xentrace_col {
	/* configuration */
	char path[1024];
	int fd, own_fd, live;
	uint64_t hz;
	double speed; /* 0: max */
	int64_t clock_offset_ns;
	int clock_auto;
	uint64_t a_tsc0, a_ns0, a_tsc1, a_ns1; /* dom0's first and latest anchors */
	uint64_t last_tsc, last_t;              /* the last TSC placed, and where */

	/* scheduler events for the join, under mu when live */
	struct xflow_sched_event *sq;
	uint64_t sq_head, sq_tail; /* taken, written */
	int sched_used;            /* someone takes them: a file waits for room */
	uint64_t sq_dropped;       /* not queued since the last LOST given for them */
	uint64_t sq_dropped_t;
	uint16_t sq_dropped_cpu;

	struct xentrace_source src;
	struct xentrace_reader *r;
	struct xentrace_state *s;

	/* replay */
	int started;
	uint64_t t0_ns, tsc0;
	struct xentrace_record pending;
	int have_pending;

	/* side accounting, under mu when live */
	int32_t cur_dom[XENTRACE_MAX_CPUS];
	struct {
		int valid;
		uint32_t reason;
		int32_t dom;
		uint64_t tsc;
	} exit_open[XENTRACE_MAX_CPUS];
	struct tdom doms[MAX_TRACKED_DOMS];
	unsigned ndoms;
	uint64_t first_tsc;
	uint64_t records, bytes, lost_records;
	/* The reader's skips as of the last record processed (copied by the
	 * thread that reads, so that build() need not look at the reader). */
	uint64_t skip_tsc, skip_framing, skip_bytes;
	char damage[512]; /* set at the end: why the input is not whole */
	struct xflow_hv_lost lost[MAX_LOST];
	unsigned nlost;
	uint32_t ids[MAX_EVENT_IDS]; /* open addressing, 0 = free (event 0 is never traced) */
	unsigned nids;
	int done, failed; /* failed: the errno read() ends with, 0 if none */
	char err[1664];    /* a path and a damage */

	/* live */
	pthread_t th;
	pthread_mutex_t mu;
	int th_started;

	/* the summary handed out */
	uint64_t built_records;
	int built_done, have_built;
	struct xflow_hv_summary sum;
	struct xflow_hv_vcpu *vcpus;
	size_t vcpus_cap;
	struct xflow_hv_event *events;
	size_t events_cap;
	struct xflow_hv_unknown *unknown;
	size_t unknown_cap;
	char *text;
	size_t textlen;
};

/* --- options ---------------------------------------------------------------- */

static int parse_hz(const char *s, uint64_t *hz)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !(v > 0))
		return -EINVAL;
	switch (*end) {
	case 'G': case 'g': v *= 1e9; end++; break;
	case 'M': case 'm': v *= 1e6; end++; break;
	case 'K': case 'k': v *= 1e3; end++; break;
	}
	if (*end == 'H' && end[1] == 'z')
		end += 2;
	if (*end || v < 1e3 || v > 1e12)
		return -EINVAL;
	*hz = (uint64_t)(v + 0.5);
	return 0;
}

static int parse_options(struct xentrace_col *x, const char *options, char *err, size_t errlen)
{
	char *copy = strdup(options ? options : "");
	if (!copy)
		return -ENOMEM;
	int rc = 0, sources = 0;
	for (char *save = NULL, *kv = strtok_r(copy, ",", &save); kv && !rc; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		const char *v = eq ? eq + 1 : "";
		if (eq)
			*eq = '\0';
		if (!strcmp(kv, "file") && eq) {
			if (!*v || strlen(v) >= sizeof(x->path)) {
				snprintf(err, errlen, "xentrace: file= needs a path");
				rc = -EINVAL;
			}
			snprintf(x->path, sizeof(x->path), "%s", v);
			sources++;
		} else if (!strcmp(kv, "pipe") && !eq) {
			x->fd = STDIN_FILENO;
			x->live = 1;
			snprintf(x->path, sizeof(x->path), "standard input");
			sources++;
		} else if (!strcmp(kv, "fd") && eq) {
			char *end;
			errno = 0;
			long n = strtol(v, &end, 10);
			if (!*v || *end || errno || n < 0 || n > 65535) {
				snprintf(err, errlen, "xentrace: bad value '%s' for fd: expected a descriptor number", v);
				rc = -EINVAL;
			}
			x->fd = (int)n;
			x->live = 1;
			snprintf(x->path, sizeof(x->path), "descriptor %ld", n);
			sources++;
		} else if (!strcmp(kv, "cpu-hz") && eq) {
			if (parse_hz(v, &x->hz)) {
				snprintf(err, errlen, "xentrace: bad value '%s' for cpu-hz: expected a TSC rate such as 2.4G, 2400M or 2400000000", v);
				rc = -EINVAL;
			}
		} else if (!strcmp(kv, "clock-offset") && eq && !strcmp(v, "auto")) {
#if defined(__x86_64__) || defined(__i386__)
			x->clock_auto = 1;
#else
			snprintf(err, errlen, "xentrace: clock-offset=auto reads the TSC, which only x86 has");
			rc = -EINVAL;
#endif
		} else if (!strcmp(kv, "clock-offset") && eq) {
			char *end;
			errno = 0;
			long long off = strtoll(v, &end, 10);
			if (!*v || *end || errno) {
				snprintf(err, errlen, "xentrace: bad value '%s' for clock-offset: expected nanoseconds", v);
				rc = -EINVAL;
			}
			x->clock_offset_ns = off;
		} else if (!strcmp(kv, "speed") && eq) {
			char *end;
			double sp = strtod(v, &end);
			if (!strcmp(v, "max")) {
				x->speed = 0;
			} else if (!*v || *end || !(sp >= 0.001 && sp <= 1e6)) {
				snprintf(err, errlen, "xentrace: bad value '%s' for speed: expected a factor from 0.001 to 1000000, or max", v);
				rc = -EINVAL;
			} else {
				x->speed = sp;
			}
		} else {
			snprintf(err, errlen, "xentrace: unknown option '%s%s%s' (file=PATH, pipe, fd=N, cpu-hz=HZ, speed=N|max, clock-offset=NS|auto)",
				 kv, eq ? "=" : "", v);
			rc = -EINVAL;
		}
	}
	free(copy);
	if (rc)
		return rc;
	if (sources != 1) {
		snprintf(err, errlen, sources ? "xentrace: give one of file=PATH, pipe or fd=N, not several"
					      : "xentrace: no input: give file=PATH, pipe or fd=N");
		return -EINVAL;
	}
	if (!x->hz) {
		snprintf(err, errlen, "xentrace: cpu-hz=HZ is required (e.g. cpu-hz=2.4G, --cpu-hz 2.4G): "
				      "xentrace records do not carry the TSC rate");
		return -EINVAL;
	}
	if (x->live && x->speed > 0) {
		snprintf(err, errlen, "xentrace: speed= replays a file; a pipe is read as it comes");
		return -EINVAL;
	}
	return 0;
}

/* --- side accounting ------------------------------------------------------------- */

static struct tdom *tdom_get(struct xentrace_col *x, uint32_t did)
{
	for (unsigned i = 0; i < x->ndoms; i++)
		if (x->doms[i].did == did)
			return &x->doms[i];
	if (x->ndoms >= MAX_TRACKED_DOMS)
		return NULL;
	struct tdom *d = &x->doms[x->ndoms++];
	memset(d, 0, sizeof(*d));
	d->did = did;
	return d;
}

static void note_id(struct xentrace_col *x, uint32_t ev)
{
	if (!ev)
		return;
	unsigned h = (ev * 2654435761u) % MAX_EVENT_IDS;
	for (unsigned k = 0; k < MAX_EVENT_IDS; k++, h = (h + 1) % MAX_EVENT_IDS) {
		if (x->ids[h] == ev)
			return;
		if (!x->ids[h]) {
			if (x->nids + 1 >= MAX_EVENT_IDS)
				return; /* unknown ids past this still count in unknown_total */
			x->ids[h] = ev;
			x->nids++;
			return;
		}
	}
}

static void close_exit(struct xentrace_col *x, unsigned cpu, uint64_t tsc)
{
	if (!x->exit_open[cpu].valid)
		return;
	x->exit_open[cpu].valid = 0;
	if (x->exit_open[cpu].dom < 0 || tsc < x->exit_open[cpu].tsc)
		return;
	struct tdom *d = tdom_get(x, (uint32_t)x->exit_open[cpu].dom);
	unsigned r = x->exit_open[cpu].reason;
	if (!d || r >= XENTRACE_VMX_EXIT_MAX)
		return;
	if (!d->exit_h[r]) {
		d->exit_h[r] = malloc(sizeof(*d->exit_h[r]));
		if (!d->exit_h[r])
			return;
		xflow_hist_init(d->exit_h[r]);
	}
	xflow_hist_record(d->exit_h[r], tsc - x->exit_open[cpu].tsc);
}

/* --- scheduler events ------------------------------------------------------------ */

static uint64_t sq_free(const struct xentrace_col *x)
{
	return SCHED_QUEUE - (x->sq_tail - x->sq_head);
}

/* The LOST event for the events dropped since the last one; room for it
 * is the caller's to check. */
static void sq_put_lost(struct xentrace_col *x)
{
	struct xflow_sched_event l = { .t_ns = x->sq_dropped_t, .kind = XFLOW_SCHED_LOST, .pcpu = x->sq_dropped_cpu,
				       .arg = x->sq_dropped > UINT32_MAX ? UINT32_MAX : (uint32_t)x->sq_dropped };
	x->sq[x->sq_tail++ % SCHED_QUEUE] = l;
	x->sq_dropped = 0;
}

static void sq_put(struct xentrace_col *x, const struct xflow_sched_event *e)
{
	/* Say what was dropped before what comes after it. */
	if (x->sq_dropped && sq_free(x) >= 2)
		sq_put_lost(x);
	if (!sq_free(x) || x->sq_dropped) {
		if (!x->sq_dropped++) {
			x->sq_dropped_t = e->t_ns;
			x->sq_dropped_cpu = e->pcpu;
		}
		return;
	}
	x->sq[x->sq_tail++ % SCHED_QUEUE] = *e;
}

/* One anchor: this CPU's TSC and CLOCK_MONOTONIC at one instant, the
 * closest of a few tries (the clock read on both sides of the TSC). */
static void anchor(uint64_t *tsc, uint64_t *ns)
{
#if defined(__x86_64__) || defined(__i386__)
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 5; i++) {
		struct timespec a, b;
		uint32_t lo, hi;
		clock_gettime(CLOCK_MONOTONIC, &a);
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		clock_gettime(CLOCK_MONOTONIC, &b);
		uint64_t na = (uint64_t)a.tv_sec * 1000000000u + (uint64_t)a.tv_nsec;
		uint64_t nb = (uint64_t)b.tv_sec * 1000000000u + (uint64_t)b.tv_nsec;
		if (nb - na < best) {
			best = nb - na;
			*tsc = (uint64_t)hi << 32 | lo;
			*ns = na + (nb - na) / 2;
		}
	}
#else
	*tsc = *ns = 0;
#endif
}

/* ns per TSC tick with clock-offset=auto: measured between the anchors
 * once they are a second apart, cpu-hz's until then. */
static double auto_rate(const struct xentrace_col *x)
{
	return x->a_ns1 - x->a_ns0 >= 1000000000u && x->a_tsc1 > x->a_tsc0
		       ? (double)(x->a_ns1 - x->a_ns0) / (double)(x->a_tsc1 - x->a_tsc0)
		       : 1e9 / (double)x->hz;
}

/* A TSC on the monitor's clock. */
static uint64_t tsc_ns(struct xentrace_col *x, uint64_t tsc)
{
	if (x->clock_auto) {
		double d = (double)x->a_ns1 + ((double)tsc - (double)x->a_tsc1) * auto_rate(x);
		uint64_t t = d > 0 ? (uint64_t)d : 0;
		/* A new anchor moves the line by its own error (some 100 ns):
		 * never so that a later TSC lands before an earlier one. */
		if (tsc >= x->last_tsc && t < x->last_t)
			t = x->last_t;
		x->last_tsc = tsc;
		x->last_t = t;
		return t;
	}
	unsigned __int128 ns = (unsigned __int128)tsc * 1000000000u / x->hz;
	int64_t t = (int64_t)(uint64_t)ns + x->clock_offset_ns;
	return t > 0 ? (uint64_t)t : 0;
}

/* A duration of @cycles TSC ticks in ns, at the rate tsc_ns() places
 * times with (so that a span ends where its end is placed). */
static uint32_t cycles_ns(const struct xentrace_col *x, uint32_t cycles)
{
	uint64_t ns = x->clock_auto ? (uint64_t)((double)cycles * auto_rate(x))
				    : (uint64_t)((unsigned __int128)cycles * 1000000000u / x->hz);
	return ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

/* The records the join uses, as events (xflow/collector.h). */
static void sched_event(struct xentrace_col *x, const struct xentrace_record *rec)
{
	uint32_t ev = rec->event;
	struct xflow_sched_event e = { .pcpu = rec->cpu };
	if (!x->sq || (rec->flags & XENTRACE_REC_LOST_END))
		return;
	if (ev == XENTRACE_EV_LOST_RECORDS) {
		e.kind = XFLOW_SCHED_LOST;
		e.arg = rec->nextra >= 1 ? rec->extra[0] : 0;
	} else if ((ev & 0xfffff00fu) == 0x00021001u && rec->nextra >= 1) {
		/* TRC_SCHED_RUNSTATE_CHANGE: old << 8 | new << 4 */
		e.kind = XFLOW_SCHED_RUNSTATE;
		e.from = (uint8_t)(ev >> 8 & 0xf);
		e.to = (uint8_t)(ev >> 4 & 0xf);
		e.dom = (uint16_t)(rec->extra[0] >> 16);
		e.vcpu = (uint16_t)rec->extra[0];
		if (e.from > XENTRACE_RS_OFFLINE || e.to > XENTRACE_RS_OFFLINE)
			return;
	} else if (ev == 0x0002800au && rec->nextra >= 4) {
		/* TRC_SCHED_SWITCH: prev dom, prev unit, next dom, next unit */
		e.kind = XFLOW_SCHED_SWITCH;
		e.dom = (uint16_t)rec->extra[0];
		e.vcpu = (uint16_t)rec->extra[1];
		e.dom2 = (uint16_t)rec->extra[2];
		e.vcpu2 = (uint16_t)rec->extra[3];
	} else if ((ev & ~0x100u) == 0x0020100du && rec->nextra >= 1 &&
		   (rec->extra[0] & 0xfffff) == XEN_HYPERCALL_EVTCHN_OP) {
		/* TRC_PV_HYPERCALL_V2 (| TRC_64_FLAG): op | arg flags << 20.
		 * Only notifications: on real Xen the others (mmu_update,
		 * iret...) were 99% of a PV trace's hypercalls and filled the
		 * queue, losing the runstate changes the join needs. */
		e.kind = XFLOW_SCHED_HYPERCALL;
		e.arg = rec->extra[0] & 0xfffff;
	} else if (ev == 0x00802008u && rec->nextra >= 3) {
		/* TRC_HW_IRQ_HANDLED: irq, TSC at entry and at exit (their low
		 * words, so the difference is taken on 32 bits), written after
		 * the handler on the pCPU it interrupted. */
		e.kind = XFLOW_SCHED_XEN;
		e.arg = cycles_ns(x, rec->extra[2] - rec->extra[1]);
		/* Xen reads the exit's TSC, then the record takes its own
		 * (do_IRQ, then __trace_var): the span ends that much before
		 * the record.  tsc_ns() is given the record's TSC and the gap
		 * taken off after, because its auto clock keeps the last TSC
		 * it placed and expects them in order.  A gap past 2^31
		 * cycles is an exit after its record, no Xen's: ignored. */
		uint32_t gap = (uint32_t)rec->tsc - rec->extra[2];
		uint64_t t = tsc_ns(x, rec->tsc), g = gap < UINT32_C(1) << 31 ? cycles_ns(x, gap) : 0;
		e.t_ns = t > g ? t - g : 0;
		sq_put(x, &e);
		return;
	} else {
		return;
	}
	e.t_ns = tsc_ns(x, rec->tsc);
	sq_put(x, &e);
}

/* One record in merge order: to the library's decoder, and to ours. */
static void process(struct xentrace_col *x, const struct xentrace_record *rec)
{
	xentrace_state_feed(x->s, rec);
	if (rec->cpu < XENTRACE_MAX_CPUS)
		sched_event(x, rec);
	const struct xentrace_reader_stats *rs = xentrace_reader_stats(x->r);
	x->skip_tsc = rs->bad_tsc;
	x->skip_framing = rs->bad_records;
	x->skip_bytes = rs->skipped_bytes;
	if (rec->flags & XENTRACE_REC_LOST_END)
		return;
	x->records++;
	x->bytes += xentrace_record_size(rec);
	if (rec->has_tsc && !x->first_tsc)
		x->first_tsc = rec->order_tsc;
	note_id(x, rec->event);
	unsigned cpu = rec->cpu;
	if (cpu >= XENTRACE_MAX_CPUS)
		return;
	uint32_t ev = rec->event;
	if (ev == XENTRACE_EV_LOST_RECORDS && rec->nextra >= 1) {
		x->lost_records += rec->extra[0];
		if (x->nlost < MAX_LOST) {
			struct xflow_hv_lost *l = &x->lost[x->nlost++];
			l->cpu = cpu;
			l->offset = rec->offset;
			l->records = rec->extra[0];
			uint64_t d = rec->order_tsc >= x->first_tsc ? rec->order_tsc - x->first_tsc : 0;
			l->at_ns = (uint64_t)((double)d * 1e9 / (double)x->hz);
		}
		x->cur_dom[cpu] = -1;
		x->exit_open[cpu].valid = 0;
		return;
	}
	unsigned main = (ev >> 16) & 0xfff;
	if (main == 0x002 && ((ev >> 12) & 0xf) == 1 && rec->nextra >= 1) {
		/* TRC_SCHED_RUNSTATE_CHANGE / _CONTINUE_RUNNING */
		int32_t dom = (int32_t)(rec->extra[0] >> 16);
		unsigned lo = ev & 0xf;
		unsigned to = (ev >> 4) & 0xf, from = (ev >> 8) & 0xf;
		if (lo == 2 || (lo == 1 && to == XENTRACE_RS_RUNNING)) {
			x->cur_dom[cpu] = dom;
		} else if (lo == 1 && from == XENTRACE_RS_RUNNING) {
			if (x->cur_dom[cpu] == dom)
				x->cur_dom[cpu] = -1;
			close_exit(x, cpu, rec->tsc);
		}
	} else if (main == 0x020) { /* TRC_PV_ENTRY (sub 1) and TRC_PV_SUBCALL (sub 2) */
		unsigned minor = ev & 0xff;
		if (minor < PV_MAX && xentrace_pv_event_name(minor) && x->cur_dom[cpu] >= 0) {
			struct tdom *d = tdom_get(x, (uint32_t)x->cur_dom[cpu]);
			if (d)
				d->pv[minor == 12 ? 11 : minor]++;
		}
	} else if (ev == 0x81002u || ev == 0x81102u) {
		if (rec->nextra >= 1 && rec->extra[0] < XENTRACE_VMX_EXIT_MAX) {
			x->exit_open[cpu].valid = 1;
			x->exit_open[cpu].reason = rec->extra[0];
			x->exit_open[cpu].dom = x->cur_dom[cpu];
			x->exit_open[cpu].tsc = rec->tsc;
		}
	} else if (ev == 0x81001u) {
		close_exit(x, cpu, rec->tsc);
	}
}

/* --- the summary ---------------------------------------------------------------- */

/*
 * At the end of the input, from a file or a pipe alike: framing errors and
 * a truncated capture are corruption, so the numbers stand for the part
 * that could be read, the summary is not complete, and the source fails
 * with the first such problem (also its damage).  The reader's counts are
 * taken once more, for records skipped after the last one delivered.
 */
static int end_verdict(struct xentrace_col *x)
{
	const struct xentrace_reader_stats *rs = xentrace_reader_stats(x->r);
	x->skip_tsc = rs->bad_tsc;
	x->skip_framing = rs->bad_records;
	x->skip_bytes = rs->skipped_bytes;
	for (unsigned i = 0; i < xentrace_reader_ndiags(x->r); i++) {
		const struct xentrace_diag *d = xentrace_reader_diag(x->r, i);
		if (d->kind == XENTRACE_DIAG_FRAMING || d->kind == XENTRACE_DIAG_TRUNCATED) {
			snprintf(x->damage, sizeof(x->damage), "offset %" PRIu64 ": %s: %s", d->offset,
				 xentrace_diag_kind_name(d->kind), d->what);
			snprintf(x->err, sizeof(x->err), "%s: %s", x->path, x->damage);
			return -EBADMSG;
		}
	}
	return 0;
}

static uint64_t cyc_ns(const struct xentrace_col *x, uint64_t cycles)
{
	return (uint64_t)((double)cycles * 1e9 / (double)x->hz + 0.5);
}

static int add_event(struct xentrace_col *x, size_t *n, uint32_t dom, enum xflow_hv_event_kind kind,
		     uint32_t code, const char *name, uint64_t count, uint64_t cycles, const struct xflow_hist *h,
		     uint64_t total_cycles)
{
	if (xflow_grow((void **)&x->events, &x->events_cap, *n + 1, sizeof(*x->events)))
		return -ENOMEM;
	struct xflow_hv_event *e = &x->events[(*n)++];
	memset(e, 0, sizeof(*e));
	e->domain = dom;
	e->kind = kind;
	e->code = code;
	e->name = name;
	e->count = count;
	e->ns = cyc_ns(x, cycles);
	e->share = total_cycles ? (double)cycles / (double)total_cycles : 0;
	if (e->share > 1)
		e->share = 1;
	if (h && h->count) {
		e->p50_cycles = xflow_hist_quantile(h, 0.50);
		e->p90_cycles = xflow_hist_quantile(h, 0.90);
		e->p99_cycles = xflow_hist_quantile(h, 0.99);
	}
	return 0;
}

static int build(struct xentrace_col *x)
{
	const struct xentrace_state *s = x->s;
	uint64_t total = xentrace_state_total_cycles(s);
	size_t nv = 0, ne = 0, nu = 0;
	static char unnamed[EXIT_NAMES + 1][16];
	for (const struct xentrace_domain *d = NULL; (d = xentrace_state_domain_next(s, d));) {
		unsigned did = xentrace_domain_id(d);
		/* Hypercalls summed over the domain's vcpus. */
		uint64_t hc[XENTRACE_HYPERCALL_MAX] = { 0 };
		struct xentrace_cycles ex[XENTRACE_VMX_EXIT_MAX];
		memset(ex, 0, sizeof(ex));
		for (unsigned vid = 0; vid < XENTRACE_MAX_VCPUS; vid++) {
			const struct xentrace_vcpu *v = xentrace_domain_vcpu(d, vid);
			if (!v)
				continue;
			for (unsigned op = 0; op < XENTRACE_HYPERCALL_MAX; op++)
				hc[op] += xentrace_vcpu_hypercalls(v, op);
			for (unsigned r = 0; r < XENTRACE_VMX_EXIT_MAX; r++) {
				struct xentrace_cycles c = xentrace_vcpu_exit_reason(v, r);
				ex[r].count += c.count;
				ex[r].cycles += c.cycles;
			}
			if (xflow_grow((void **)&x->vcpus, &x->vcpus_cap, nv + 1, sizeof(*x->vcpus)))
				return -ENOMEM;
			struct xflow_hv_vcpu *o = &x->vcpus[nv++];
			memset(o, 0, sizeof(*o));
			o->domain = did;
			o->vcpu = vid;
			for (int rs = 0; rs < XFLOW_HV_NRUNSTATES; rs++) {
				/* XFLOW_HV_* are numbered as XENTRACE_RS_*. */
				struct xentrace_cycles c = xentrace_vcpu_runstate(v, (enum xentrace_runstate)rs);
				o->count[rs] = c.count;
				o->ns[rs] = cyc_ns(x, c.cycles);
				o->share[rs] = xentrace_vcpu_runstate_share(s, v, (enum xentrace_runstate)rs);
			}
			o->wakes = xentrace_vcpu_wake(v).count;
			o->wake_p50_ns = xentrace_vcpu_wake_latency_ns(s, v, 0.50);
			o->wake_p90_ns = xentrace_vcpu_wake_latency_ns(s, v, 0.90);
			o->wake_p99_ns = xentrace_vcpu_wake_latency_ns(s, v, 0.99);
			o->wake_ns = cyc_ns(x, xentrace_vcpu_wake(v).cycles);
			o->wake_hist = xentrace_vcpu_wake_hist(v);
			o->migrations = xentrace_vcpu_migrations(v);
			o->pcpu = xentrace_vcpu_pcpu(v);
		}
		struct tdom *td = NULL;
		for (unsigned i = 0; i < x->ndoms; i++)
			if (x->doms[i].did == did)
				td = &x->doms[i];
		for (unsigned r = 0; r < XENTRACE_VMX_EXIT_MAX; r++) {
			if (!ex[r].count)
				continue;
			const char *name = xentrace_vmx_exit_name(r);
			if (!name) {
				snprintf(unnamed[r < EXIT_NAMES ? r : EXIT_NAMES], sizeof(unnamed[0]), "reason %u", r);
				name = unnamed[r < EXIT_NAMES ? r : EXIT_NAMES];
			}
			if (add_event(x, &ne, did, XFLOW_HV_EXIT, r, name, ex[r].count, ex[r].cycles,
				      td ? td->exit_h[r] : NULL, total))
				return -ENOMEM;
		}
		for (unsigned i = 0; td && i < PV_MAX; i++) {
			uint64_t n = td->pv[i] + (i == 13 ? td->pv[14] : 0);
			if (n && add_event(x, &ne, did, XFLOW_HV_PV, i, xentrace_pv_event_name(i), n, 0, NULL, total))
				return -ENOMEM;
		}
		for (unsigned op = 0; op < XENTRACE_HYPERCALL_MAX; op++)
			if (hc[op] && add_event(x, &ne, did, XFLOW_HV_HYPERCALL, op,
						xentrace_hypercall_name(op) ? xentrace_hypercall_name(op) : "(unnamed)", hc[op], 0, NULL, total))
				return -ENOMEM;
	}
	for (unsigned i = 0; i < MAX_EVENT_IDS; i++) {
		uint64_t n = x->ids[i] ? xentrace_state_unknown_count(s, x->ids[i]) : 0;
		if (!n)
			continue;
		if (xflow_grow((void **)&x->unknown, &x->unknown_cap, nu + 1, sizeof(*x->unknown)))
			return -ENOMEM;
		x->unknown[nu].event = x->ids[i];
		x->unknown[nu].count = n;
		nu++;
	}
	for (size_t i = 1; i < nu; i++) /* by event id; few entries */
		for (size_t k = i; k > 0 && x->unknown[k - 1].event > x->unknown[k].event; k--) {
			struct xflow_hv_unknown t = x->unknown[k];
			x->unknown[k] = x->unknown[k - 1];
			x->unknown[k - 1] = t;
		}

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	xentrace_state_print_summary(s, f);
	if (fclose(f)) {
		free(text);
		return -ENOMEM;
	}
	free(x->text);
	x->text = text;
	x->textlen = len;

	struct xflow_hv_summary *o = &x->sum;
	memset(o, 0, sizeof(*o));
	o->cpu_hz = x->hz;
	o->total_ns = cyc_ns(x, total);
	o->records = x->records;
	o->bytes = x->bytes;
	o->size = x->live ? 0 : x->src.size;
	o->complete = x->done;
	o->nvcpus = (uint32_t)nv;
	o->vcpus = x->vcpus;
	o->nevents = (uint32_t)ne;
	o->events = x->events;
	o->lost_records = x->lost_records;
	o->nlost = x->nlost;
	o->lost = x->lost;
	o->unknown_total = xentrace_state_unknown_total(s);
	o->nunknown = (uint32_t)nu;
	o->unknown = x->unknown;
	o->skipped_bad_tsc = x->skip_tsc;
	o->skipped_framing = x->skip_framing;
	o->skipped_decode = xentrace_state_skipped(s);
	o->skipped_bytes = x->skip_bytes;
	o->skipped = o->skipped_bad_tsc + o->skipped_framing + o->skipped_decode;
	o->damage = x->damage[0] ? x->damage : NULL;
	o->complete = x->done && !o->damage;
	o->text = x->text;
	return 0;
}

/* --- live --------------------------------------------------------------------- */

static void *live_main(void *arg)
{
	struct xentrace_col *x = arg;
	int rc = xentrace_reader_open_stream(&x->r, x->fd, NULL);
	const struct xentrace_record *rec;
	if (rc == 0)
		while ((rc = xentrace_reader_next(x->r, &rec)) == 1) {
			/* Cancelled (by close) only while waiting for input. */
			pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
			pthread_mutex_lock(&x->mu);
			process(x, rec);
			pthread_mutex_unlock(&x->mu);
			pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		}
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_mutex_lock(&x->mu);
	xentrace_state_finish(x->s);
	if (rc < 0) {
		x->failed = rc;
		snprintf(x->err, sizeof(x->err), "%s: %s", x->path,
			 rc == -EBADMSG ? "not xentrace output (no trace window found)" : strerror(-rc));
	} else if (x->r) {
		x->failed = end_verdict(x);
	}
	x->done = 1;
	pthread_mutex_unlock(&x->mu);
	return NULL;
}

/* --- the ops ------------------------------------------------------------------ */

static void xt_close(struct xflow_collector *c);

static int xt_open(const char *options, struct xflow_collector **out, char *err, size_t errlen)
{
	struct xentrace_col *x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->fd = -1;
	for (unsigned i = 0; i < XENTRACE_MAX_CPUS; i++)
		x->cur_dom[i] = -1;
	pthread_mutex_init(&x->mu, NULL);
	x->sq = calloc(SCHED_QUEUE, sizeof(*x->sq));
	if (!x->sq) {
		pthread_mutex_destroy(&x->mu);
		free(x);
		return -ENOMEM;
	}
	int rc = parse_options(x, options, err, errlen);
	if (!rc && x->clock_auto) {
		anchor(&x->a_tsc0, &x->a_ns0);
		x->a_tsc1 = x->a_tsc0;
		x->a_ns1 = x->a_ns0;
	}
	if (!rc && (rc = xentrace_state_new(&x->s, x->hz)) < 0)
		snprintf(err, errlen, "xentrace: %s", strerror(-rc));
	if (!rc && !x->live) {
		x->fd = open(x->path, O_RDONLY | O_CLOEXEC);
		if (x->fd < 0) {
			rc = -errno;
			snprintf(err, errlen, "xentrace: %s: %s", x->path, strerror(errno));
		} else {
			x->own_fd = 1;
			rc = xentrace_source_init_fd(&x->src, x->fd);
			if (rc == -ESPIPE) { /* a FIFO: read as it comes */
				x->live = 1;
				rc = 0;
				if (x->speed > 0) {
					snprintf(err, errlen, "xentrace: %s is a pipe: speed= replays files only", x->path);
					rc = -EINVAL;
				}
			} else if (rc < 0) {
				snprintf(err, errlen, "xentrace: %s: %s", x->path, strerror(-rc));
			} else {
				rc = xentrace_reader_open(&x->r, &x->src, NULL);
				if (rc < 0) {
					const char *why = x->r && xentrace_reader_ndiags(x->r)
								  ? xentrace_reader_diag(x->r, 0)->what
								  : strerror(-rc);
					snprintf(err, errlen, "xentrace: %s: not a xentrace file: %s", x->path,
						 rc == -EBADMSG ? why : strerror(-rc));
				}
			}
		}
	}
	if (!rc && x->live) {
		rc = xflow_thread_create_quiet(&x->th, live_main, x);
		if (rc)
			snprintf(err, errlen, "xentrace: cannot start the reading thread: %s", strerror(-rc));
		else
			x->th_started = 1;
	}
	if (rc) {
		xt_close((struct xflow_collector *)x);
		return rc;
	}
	*out = (struct xflow_collector *)x;
	return 0;
}

static long xt_read(struct xflow_collector *c, uint64_t now_ns, xflow_collector_emit_fn emit, void *ctx,
		    size_t max)
{
	struct xentrace_col *x = (struct xentrace_col *)c;
	(void)emit, (void)ctx, (void)max;
	if (x->live) {
		pthread_mutex_lock(&x->mu);
		int done = x->done, failed = x->failed;
		pthread_mutex_unlock(&x->mu);
		return !done ? 0 : failed ? failed : -ENODATA;
	}
	if (x->done)
		return x->failed ? x->failed : -ENODATA;
	if (!x->started) {
		x->started = 1;
		x->t0_ns = now_ns;
	}
	const struct xentrace_record *rec;
	int rc = 1;
	for (uint64_t n = 0; n < MAX_BATCH; n++) {
		/* The join takes the scheduler's events: wait for room. */
		if (x->sched_used && sq_free(x) < 2)
			break;
		if (x->have_pending) {
			rec = &x->pending;
		} else if ((rc = xentrace_reader_next(x->r, &rec)) != 1) {
			break;
		}
		if (x->speed > 0 && rec->has_tsc) {
			if (!x->tsc0)
				x->tsc0 = rec->order_tsc;
			double due = (double)(rec->order_tsc - (rec->order_tsc >= x->tsc0 ? x->tsc0 : rec->order_tsc)) *
				     1e9 / (double)x->hz / x->speed;
			if ((double)x->t0_ns + due > (double)now_ns) {
				if (!x->have_pending)
					x->pending = *rec;
				x->have_pending = 1;
				return 0;
			}
		}
		x->have_pending = 0;
		process(x, rec);
	}
	if (rc == 1)
		return 0; /* more next time */
	xentrace_state_finish(x->s);
	x->done = 1;
	if (rc < 0) {
		snprintf(x->err, sizeof(x->err), "%s: read error: %s", x->path, strerror(-rc));
		x->failed = rc;
		return rc;
	}
	x->failed = end_verdict(x);
	return x->failed ? x->failed : -ENODATA;
}

static void xt_stats(struct xflow_collector *c, struct xflow_collector_stats *out)
{
	struct xentrace_col *x = (struct xentrace_col *)c;
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&x->mu);
	out->bad = x->s ? xentrace_state_skipped(x->s) : 0;
	out->drops = x->lost_records;
	pthread_mutex_unlock(&x->mu);
}

static int xt_hypervisor(struct xflow_collector *c, const struct xflow_hv_summary **out)
{
	struct xentrace_col *x = (struct xentrace_col *)c;
	int rc = 0;
	pthread_mutex_lock(&x->mu);
	if (!x->records && !x->done) {
		rc = -ENODATA;
	} else if (!x->have_built || x->built_records != x->records || x->built_done != x->done) {
		rc = build(x);
		if (!rc) {
			x->have_built = 1;
			x->built_records = x->records;
			x->built_done = x->done;
		}
	}
	pthread_mutex_unlock(&x->mu);
	if (!rc)
		*out = &x->sum;
	return rc;
}

static long xt_sched(struct xflow_collector *c, uint64_t now_ns, xflow_sched_emit_fn emit, void *ctx, size_t max)
{
	struct xentrace_col *x = (struct xentrace_col *)c;
	size_t n = 0;
	pthread_mutex_lock(&x->mu);
	x->sched_used = 1;
	if (x->clock_auto && now_ns >= x->a_ns1 + 100000000u)
		anchor(&x->a_tsc1, &x->a_ns1);
	/* Events dropped at the very end have no later one to carry their
	 * LOST: it is queued here, or the end would never come. */
	if (x->done && x->sq_dropped && sq_free(x) >= 2)
		sq_put_lost(x);
	for (; n < max && x->sq_head != x->sq_tail; n++) {
		struct xflow_sched_event e = x->sq[x->sq_head++ % SCHED_QUEUE];
		/* The callback runs without the lock: the model is the
		 * caller's, and the reader goes on meanwhile. */
		pthread_mutex_unlock(&x->mu);
		emit(ctx, &e);
		pthread_mutex_lock(&x->mu);
	}
	int end = x->done && x->sq_head == x->sq_tail && !x->sq_dropped;
	pthread_mutex_unlock(&x->mu);
	return n ? (long)n : end ? -ENODATA : 0;
}

static const char *xt_last_error(struct xflow_collector *c)
{
	struct xentrace_col *x = (struct xentrace_col *)c;
	pthread_mutex_lock(&x->mu);
	const char *e = x->err[0] ? x->err : NULL;
	pthread_mutex_unlock(&x->mu);
	return e;
}

static void xt_close(struct xflow_collector *c)
{
	struct xentrace_col *x = (struct xentrace_col *)c;
	if (!x)
		return;
	if (x->th_started) {
		pthread_cancel(x->th); /* it may be blocked in read(2) */
		pthread_join(x->th, NULL);
	}
	xentrace_reader_free(x->r);
	xentrace_state_free(x->s);
	if (x->own_fd)
		close(x->fd);
	for (unsigned i = 0; i < x->ndoms; i++)
		for (unsigned r = 0; r < XENTRACE_VMX_EXIT_MAX; r++)
			free(x->doms[i].exit_h[r]);
	free(x->vcpus);
	free(x->events);
	free(x->unknown);
	free(x->text);
	free(x->sq);
	pthread_mutex_destroy(&x->mu);
	free(x);
}

const struct xflow_collector_ops xflow_collector_xentrace = {
	.abi = XFLOW_COLLECTOR_ABI,
	.name = "xentrace",
	.help = "Xen's trace records: file=PATH | pipe | fd=N, cpu-hz=HZ (required), speed=N|max (files), "
		"clock-offset=NS",
	.open = xt_open,
	.read = xt_read,
	.stats = xt_stats,
	.last_error = xt_last_error,
	.close = xt_close,
	.hypervisor = xt_hypervisor,
	.sched = xt_sched,
};
