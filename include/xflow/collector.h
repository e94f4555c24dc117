/*
 * xflow/collector.h — record sources for xflowtop.
 *
 * A collector is a const table of hooks (NULL = not provided), built in or
 * loaded from a shared object.  A plugin exports one symbol,
 *
 *     const struct xflow_collector_ops *xflow_collector_plugin(void);
 *
 * and the monitor refuses it unless .abi == XFLOW_COLLECTOR_ABI (a plugin
 * built against another version of this header), naming the file and both
 * versions.
 *
 * Threading: every hook is called from the monitor's one loop thread.
 * Hooks never block: the monitor polls the descriptors pollfds() gives (or
 * calls read() on its refresh tick when there are none) and read() takes
 * only what is ready.
 */
#ifndef XFLOW_COLLECTOR_H
#define XFLOW_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "xflow/histogram.h"
#include "xflow/record.h"

/* 2: the optional hypervisor() hook (and its structures) was added.
 * 3: struct xflow_domain_info.bad, and struct xflow_hv_vcpu.wake_ns and
 *    .wake_hist at its end (which changes its size: the array stride).
 * 4: struct xflow_aspect_info.trap_sites and .trap_why (in its middle) and
 *    .note; struct xflow_hv_summary.skipped_* and .damage.
 * 5: struct xflow_domain_info.clock_bound_ns.
 * 6: the optional sched() hook and struct xflow_sched_event.
 * 7: struct xflow_domain_info.lies (at its end).
 * 8: struct xflow_domain_lies.stats, .hop_share and .handoff_share (at its
 *    end, which changes struct xflow_domain_info's size), and struct
 *    xflow_domain_info.progress_ns (at its end).
 * 9: struct xflow_site_info.roles and struct xflow_domain_info.planning
 *    (each at its end).
 * 10: XFLOW_SCHED_XEN (before XFLOW_SCHED_NKINDS, which it moves).
 * 11: the optional detach() hook (at the end of the ops).
 * 12: XFLOW_SITE_NOTIFIES (a new bit of xflow_site_info.roles, which moves
 *     XFLOW_SITE_ROLES_ALL).
 * 13: struct xflow_domain_info.held_ns (at its end). */
#define XFLOW_COLLECTOR_ABI 13

struct xflow_collector; /* a collector's instance, opaque to the monitor */

/* Called by read() for each record, its timestamp converted to CLOCK_MONOTONIC
 * nanoseconds (the collector owns the conversion: it knows the clock). */
typedef void (*xflow_collector_emit_fn)(void *ctx, const struct xflow_record *r, uint64_t t_ns);

/* What the monitor shows for a site: all strings owned by the collector and
 * valid until close(). */
struct xflow_site_info {
	const char *domain; /* domain name, e.g. "linuxU" */
	const char *file;   /* source file */
	uint32_t line;
	const char *function;
	const char *what;   /* e.g. "access sk_buff.data (store)"; may be NULL */
	uint32_t roles;     /* ABI 9: enum xflow_site_roles; 0 when not known */
};

/*
 * ABI 9.  A site's part in unkeyed cross-domain handoffs (an id carried in
 * a ring header's bits), as its weave plan says.  With ROLES_KNOWN, the
 * model lets only records of a RECEIVES site take a waiting handoff, and
 * only records of a SENDS site leave one: a guest sending records of
 * guessed ids elsewhere cannot take an honest pair's handoff, nor can a
 * record of a flow whose beginning was lost.  A collector that does not
 * know (0) leaves the model as it was: any record may do either.  Keyed
 * handoffs (XFLOW_REC_KEYED) are joined by key and not concerned.
 */
enum xflow_site_roles {
	XFLOW_SITE_ROLES_KNOWN = 1u << 0, /* the two below are the truth */
	XFLOW_SITE_SENDS = 1u << 1,       /* an id leaves the domain here */
	XFLOW_SITE_RECEIVES = 1u << 2,    /* an id from another domain arrives here */
	/* ABI 12: a point written notify="yes" (XFLOW_ADVICE_NOTIFIES): the
	 * domain notifies the next one here, so a hop beginning at a record
	 * of this site crosses vCPUs at that record's time (tui/sched_join.h).
	 * Not about handoffs: the model's matching ignores it. */
	XFLOW_SITE_NOTIFIES = 1u << 3,
	XFLOW_SITE_ROLES_ALL = (1u << 4) - 1,
};

/*
 * ABI 7.  What a domain's records claimed that it cannot have seen: each
 * kind of lie a guest can tell, counted by the collector that vouches for
 * the domain.  Refused records never reach emit(), so they move no other
 * domain's figures; the two flow kinds are given on (the model keeps them
 * as partial flows of their own domain, never ranked), since an honest
 * agent that lost a START to a full ring sends the same.
 *
 * ABI 8: stats, a STATS reply's counts the collector refused (they went
 * back, or grew faster than any guest can hit a hook): its aspects keep
 * the domain's last counts it accepted, so another domain's part of an
 * aspect's totals is its own.  hop_share and handoff_share are the
 * monitor's, not a collector's (which leaves them 0): what its model
 * refused the domain for wanting more than its share of the tables every
 * domain shares (tui/aggregate.h), so that no domain's records keep
 * another's hops or handoffs out.
 */
struct xflow_domain_lies {
	uint64_t other_domain;  /* refused: the record names another domain */
	uint64_t time_past;     /* refused: stamped before anything it could have seen */
	uint64_t time_future;   /* refused: stamped after the monitor's now */
	uint64_t flood;         /* refused: over the domain's record rate */
	uint64_t never_started; /* given on: a flow id it never started */
	uint64_t after_end;     /* given on: a flow id after its QUIT */
	uint64_t stats;         /* ABI 8, refused: STATS counts gone back or absurd */
	uint64_t hop_share;     /* ABI 8, the monitor's: new hops past its share */
	uint64_t handoff_share; /* ABI 8, the monitor's: handoffs past its share */
};

/* The sum of @l's counts. */
static inline uint64_t xflow_domain_lies_total(const struct xflow_domain_lies *l)
{
	return l->other_domain + l->time_past + l->time_future + l->flood + l->never_started + l->after_end +
	       l->stats + l->hop_share + l->handoff_share;
}

/* One domain the collector sees (for the header and the Domains view). */
struct xflow_domain_info {
	uint16_t id;
	const char *name;
	const char *source;   /* how it is reached: "ring via /run/..", "synthetic", .. */
	uint32_t targets;     /* traced processes (agents) */
	uint64_t records;     /* records received from it */
	uint64_t drops;       /* records its producers dropped */
	int gone;             /* the domain or its agent went away */
	uint64_t bad;         /* ABI 3: records from it rejected as malformed */
	/* ABI 5: how far the times emit() gives its records may be from
	 * the monitor's clock, at most: 0 on the monitor's own clock (the
	 * same kernel), XFLOW_CLOCK_BOUND_UNKNOWN when not known.  The model
	 * decides by time across domains only what the bounds make certain. */
	uint64_t clock_bound_ns;
	/* ABI 7: its lies (all zero from a collector that does not judge:
	 * a replay, the synthetic one). */
	struct xflow_domain_lies lies;
	/* ABI 8: every record its producer wrote before this time (on the
	 * times emit() gives) has been given, but for those a thread held
	 * back (the model counts them late); 0 when not known or gone.  A
	 * domain that falls behind (a guest descheduled for seconds) holds
	 * the model's verdicts that wait for its records. */
	uint64_t progress_ns;
	/* ABI 9: its plan is on the way (an agent greeting, or weaving what
	 * it was sent): what the flows reach there is not known yet. */
	int planning;
	/* ABI 13: its records from this time on (on the times emit() gives)
	 * may still wait at its producer for room to come (an agent's lanes
	 * behind a full ring: xflow/ring.h, held_before), so the model keeps
	 * what is younger until they come instead of counting them late; 0:
	 * nothing waits, or it is not known, or the producer has not moved
	 * for long enough that it is not waited for.  Read it after the
	 * records read() gave: it speaks of what had come by then. */
	uint64_t held_ns;
};
#define XFLOW_CLOCK_BOUND_UNKNOWN UINT64_MAX

/* One aspect (advice or xflow) the collector can report on and toggle.
 * Strings are owned by the collector, valid until its next aspect_info()
 * or close(). */
struct xflow_aspect_info {
	const char *name;
	uint32_t sites;
	uint32_t trap_sites;  /* ABI 4: of them, served by a breakpoint, not a jump */
	const char *trap_why; /* ABI 4: why, for the first of those; NULL if none */
	uint64_t hits;
	uint64_t drops;
	uint64_t faults;
	int enabled;
	/* ABI 4.  What weaving it said, or NULL: join points left out and
	 * why (a variable optimized out at a site, an access that could not
	 * be typed), e.g. "2 warnings; the first: ...". */
	const char *note;
};

struct xflow_collector_stats {
	uint64_t records;   /* delivered through emit */
	uint64_t drops;     /* dropped by producers (ring full) */
	uint64_t bad;       /* rejected as malformed */
	uint32_t ndomains;
};

/*
 * What the hypervisor did, for collectors that see Xen itself (xentrace).
 * Plain data, owned by the collector: valid until its next hypervisor()
 * or close() call.  Times are nanoseconds of the traced host
 * (TSC cycles divided by its rate); "share" is a fraction of the trace's
 * whole time span (total_ns), in [0, 1].
 */
enum xflow_hv_runstate {
	XFLOW_HV_RUNNING,
	XFLOW_HV_RUNNABLE, /* ready, waiting for a pcpu */
	XFLOW_HV_BLOCKED,
	XFLOW_HV_OFFLINE,
	XFLOW_HV_NRUNSTATES
};

/* One vcpu of one domain (the idle domain is 32767). */
struct xflow_hv_vcpu {
	uint32_t domain, vcpu;
	uint64_t count[XFLOW_HV_NRUNSTATES]; /* intervals spent in each state */
	uint64_t ns[XFLOW_HV_NRUNSTATES];    /* time in each state */
	double share[XFLOW_HV_NRUNSTATES];   /* ns / total_ns */
	uint64_t wakes;                      /* runnable after blocked/offline, then running */
	uint64_t wake_p50_ns, wake_p90_ns, wake_p99_ns; /* wake-to-run latency; 0: no wake */
	uint64_t migrations;                 /* pcpu changes */
	int32_t pcpu;                        /* where it last ran, -1: never seen running */
	/* ABI 3: the wake-to-run latencies themselves, so that they can be
	 * summed over vcpus and exported as a histogram: their sum in ns, and
	 * their histogram in TSC cycles (cpu_hz of the summary), NULL when
	 * there was no wake; valid as long as the rest of the summary. */
	uint64_t wake_ns;
	const struct xflow_hist *wake_hist;
};

enum xflow_hv_event_kind {
	XFLOW_HV_EXIT,      /* HVM vmexit, by exit reason: count, time (exit to entry), cycles */
	XFLOW_HV_PV,        /* PV event (page fault, emulated privop ...): count only */
	XFLOW_HV_HYPERCALL, /* PV hypercall, by operation: count only */
};

/* One kind of event of one domain.  For XFLOW_HV_PV and _HYPERCALL the
 * records carry no duration: ns, share and the cycle percentiles are 0. */
struct xflow_hv_event {
	uint32_t domain;
	enum xflow_hv_event_kind kind;
	uint32_t code;             /* exit reason, PV event number or hypercall number */
	const char *name;          /* "EPT_VIOLATION", "page_fault", "mmu_update" ... */
	uint64_t count;
	uint64_t ns;
	double share;              /* ns / total_ns */
	uint64_t p50_cycles, p90_cycles, p99_cycles;
};

/* Where the hypervisor lost trace records (its buffers were full). */
struct xflow_hv_lost {
	uint32_t cpu;
	uint64_t offset;  /* file offset of the TRC_LOST_RECORDS record */
	uint64_t at_ns;   /* when the loss began, since the trace's start */
	uint64_t records; /* how many were lost there */
};

/* Records of an event id no decoder handles. */
struct xflow_hv_unknown {
	uint32_t event;
	uint64_t count;
};

struct xflow_hv_summary {
	uint64_t cpu_hz;        /* TSC rate the times are computed with */
	uint64_t total_ns;      /* the trace's time span so far */
	uint64_t records;       /* records decoded */
	uint64_t bytes, size;   /* input read so far, and its size (0: a pipe) */
	int complete;           /* 1: the input has ended whole (damage is NULL)
	                         * and every interval is closed */
	uint32_t nvcpus;
	const struct xflow_hv_vcpu *vcpus;    /* by domain, then vcpu */
	uint32_t nevents;
	const struct xflow_hv_event *events;  /* by domain, kind, then code */
	uint64_t lost_records;  /* sum over every lost-records record */
	uint32_t nlost;         /* places (at most the first 32 are kept) */
	const struct xflow_hv_lost *lost;
	uint64_t unknown_total;
	uint32_t nunknown;
	const struct xflow_hv_unknown *unknown; /* by event id */
	uint64_t skipped;       /* records skipped, for any reason: the sum of
	                         * the skipped_* counts below */
	/* The collector's own report as text, or NULL: for xentrace, the
	 * summary comparable line for line with `xenalyze --summary`. */
	const char *text;
	/* ABI 4.  Why records were skipped: a TSC absurdly far ahead of its
	 * cpu's (the reader's), records cut by their window's end or cpu
	 * changes inside one (the reader's), records the decoder could not
	 * use; and the bytes of garbage skipped to find the next window. */
	uint64_t skipped_bad_tsc, skipped_framing, skipped_decode, skipped_bytes;
	/* NULL, or why the input is not whole, with its offset: where a
	 * truncated capture ends, the first framing problem. */
	const char *damage;
};

/*
 * ABI 6.  Xen's scheduler records as the monitor joins them with the flows
 * (issue 24: where a hop's time goes), for collectors that see Xen's
 * scheduler.  Plain data, in the trace's merged order: an event is given
 * only once every physical CPU's trace has passed its time, so the time of
 * the last one given is a watermark (nothing older will come).
 */
enum xflow_sched_kind {
	XFLOW_SCHED_RUNSTATE,  /* dom.vcpu went from .from to .to (enum xflow_hv_runstate) */
	XFLOW_SCHED_SWITCH,    /* pcpu went from dom.vcpu (prev) to dom2.vcpu2 (next) */
	XFLOW_SCHED_HYPERCALL, /* the vCPU running on pcpu made hypercall .arg: only
	                        * event-channel ones (evtchn_op, 32), the only
	                        * hypercall the join uses; a PV guest makes
	                        * thousands of others a second */
	XFLOW_SCHED_LOST,      /* records lost on pcpu from t_ns on (.arg of them): who
	                        * ran and in which state is not known until each
	                        * vCPU's next runstate change */
	XFLOW_SCHED_XEN,       /* ABI 10: Xen itself ran on pcpu for .arg ns, ending
	                        * at t_ns, while the vCPU running there waited:
	                        * an interrupt it handled (TRC_HW_IRQ_HANDLED) */
	XFLOW_SCHED_NKINDS
};

struct xflow_sched_event {
	uint64_t t_ns;         /* on the monitor's clock: the collector places the
	                        * trace's TSC there (its clock options) */
	uint16_t kind;         /* enum xflow_sched_kind */
	uint16_t pcpu;         /* where Xen logged it */
	uint8_t from, to;      /* RUNSTATE */
	uint16_t dom, vcpu;    /* RUNSTATE; SWITCH: the previous one */
	uint16_t dom2, vcpu2;  /* SWITCH: the next one */
	uint32_t arg;          /* HYPERCALL: its number; LOST: how many records;
	                        * XEN: how long, in ns */
};

/* Called by sched() for each event. */
typedef void (*xflow_sched_emit_fn)(void *ctx, const struct xflow_sched_event *e);

struct xflow_collector_ops {
	uint32_t abi;       /* XFLOW_COLLECTOR_ABI */
	const char *name;   /* "synthetic", "agent", "replay", "xentrace" ... */
	const char *help;   /* one line for --help: what it reads and its options */

	/* Create an instance from @options ("key=value,key=value", may be
	 * empty).  Returns 0, or a negative errno with a message naming the
	 * bad option in @err. */
	int (*open)(const char *options, struct xflow_collector **out, char *err, size_t errlen);

	/* Descriptors to poll for readability; returns how many were written
	 * (0: the collector is read on the refresh tick). */
	int (*pollfds)(struct xflow_collector *c, int *fds, int max);

	/* Deliver up to @max ready records through @emit without blocking,
	 * at monitor time @now_ns.  Returns the number delivered, or a
	 * negative errno when the collector can deliver no more (the end of a
	 * replay: -ENODATA; a broken source: another errno, with the reason
	 * from last_error()). */
	long (*read)(struct xflow_collector *c, uint64_t now_ns, xflow_collector_emit_fn emit,
		     void *ctx, size_t max);

	void (*stats)(struct xflow_collector *c, struct xflow_collector_stats *out);

	/* Names for (domain, site); returns 0 or -ENOENT. */
	int (*site_info)(struct xflow_collector *c, uint16_t domain, uint32_t site,
			 struct xflow_site_info *out);

	/* The @i-th domain / aspect; -ENOENT past the last. */
	int (*domain_info)(struct xflow_collector *c, uint32_t i, struct xflow_domain_info *out);
	int (*aspect_info)(struct xflow_collector *c, uint32_t i, struct xflow_aspect_info *out);

	/* Enable or disable aspect @i live; 0, -ENOENT, or -ENOTSUP. */
	int (*aspect_set)(struct xflow_collector *c, uint32_t i, int enabled);

	/* Bits of a flow id that survive a header transit for flow kind
	 * @kind (0: all); feeds the aggregation's handoff matching. */
	unsigned (*carried_bits)(struct xflow_collector *c, uint16_t kind);

	/* The last error as text, or NULL. */
	const char *(*last_error)(struct xflow_collector *c);

	/* Release everything; @c is invalid afterwards. */
	void (*close)(struct xflow_collector *c);

	/* ABI 2.  Optional: the hypervisor's state as of now, for collectors
	 * that see Xen itself (see struct xflow_hv_summary).  0 and *@out
	 * set, -ENODATA while there is nothing yet, -ENOTSUP. */
	int (*hypervisor)(struct xflow_collector *c, const struct xflow_hv_summary **out);

	/* ABI 6.  Optional: deliver up to @max scheduler events (struct
	 * xflow_sched_event) decoded since the last call, without blocking;
	 * returns how many, or -ENODATA once the input has ended and all were
	 * given.  The collector keeps those not yet taken in a bounded queue;
	 * what does not fit is given as a LOST event, never silently dropped.
	 * NULL: the collector sees no scheduler. */
	long (*sched)(struct xflow_collector *c, uint64_t now_ns, xflow_sched_emit_fn emit, void *ctx,
		      size_t max);

	/* ABI 11.  Optional: the monitor is leaving.  The first call asks
	 * whatever the collector traces live to let go (an agent is sent
	 * DETACH: it moves what its targets recorded into its ring, answers,
	 * then restores them); each call returns 1 once nothing more will
	 * come (every agent answered or went away, and what it sent has
	 * been read), else 0.  The monitor calls read() between calls until
	 * 1 or a deadline of its own, so that records written before it quit
	 * are kept and counted, not left in a ring; close() follows.  NULL:
	 * nothing to wait for. */
	int (*detach)(struct xflow_collector *c, uint64_t now_ns);
};

/* What a plugin exports. */
typedef const struct xflow_collector_ops *(*xflow_collector_plugin_fn)(void);
#define XFLOW_COLLECTOR_PLUGIN_SYMBOL "xflow_collector_plugin"

#endif
