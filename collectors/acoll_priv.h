/*
 * State of the agent collector shared by its files (not for other
 * folders): the collector's hooks (acoll.c), peers (acoll_peer.c), plans
 * (acoll_plan.c), clock placement (acoll_clock.c), peers over Xen
 * (acoll_xen.c) and options (acoll_opts.c).
 */
#ifndef XFLOW_COLLECTORS_ACOLL_PRIV_H
#define XFLOW_COLLECTORS_ACOLL_PRIV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <limits.h>

#include "collectors/agent_collector.h"
#include "collectors/guest_clock.h"
#include "collectors/xen_discover.h"
#include "weaver/weave.h"
#include "xflow/clock.h"
#include "xflow/collector.h"
#include "xflow/control.h"
#include "xflow/flowid.h"
#include "xflow/plan.h"
#include "xflow/ring.h"
#include "xflow/shm.h"
#include "xflow/xen.h"
#include "xflow/xen_time.h"
#include <libxenvchan.h>

#define MAX_PEERS 256 /* agents seen in a run, gone ones included */
#define MAX_LIST 64
#define STATS_EVERY_NS 200000000u /* the monitor refreshes every second or so */
#define CLOCK_REFINE_NS 1000000000u /* xflow_clock_refine(): a second */
/* An agent that says records wait in its lanes is waited for while its
 * ring moves, and no further back than this: one stopped, or one that
 * says so for ever, must not hold every domain's records. */
#define HELD_STALE_NS UINT64_C(1000000000)
#define HELD_MAX_NS UINT64_C(2000000000)
#define POP_CHUNK 256
/* An agent over Xen gets this long to greet (its plan, timeout= whole:
 * a kernel agent answers once the verifier has passed every program, and
 * waiting costs nothing here, as no read waits on a guest), twice as long
 * after each time it ran out (struct failed_offer); a domain whose offer
 * failed is not tried again for XEN_RETRY_STEPS of these. */
#define XEN_STEP_MS 10000
#define XEN_RETRY_STEPS 3
/* A guest's clock further than this from ours is moved onto ours. */
#define XEN_CLOCK_SKEW_NS 1000000000ll

/* Records a second one agent over Xen may send by default (rate=): ten
 * times what the in-process backend's busiest measured target wrote, and
 * below what the model applies a second.  A guest's agent is not ours to
 * trust, and a flood from one would take the model from the others.  A
 * local agent is the operator's own, started on this host for a flow it
 * chose, and its ring already bounds it by what we read: no limit unless
 * rate= says (a heavy flow writes millions a second, issue 27, and a
 * limit would refuse them live). */
#define ACOLL_RATE_DEFAULT 2000000u
/* c->rate when rate= was not given: each transport's default. */
#define ACOLL_RATE_UNSET UINT64_MAX

/* The row of a local agent refused at its greeting (it claimed a domain
 * another agent speaks for): no domain has this id (xflowtop.conf(5): 0
 * to 65534). */
#define ACOLL_DOMID_REFUSED 0xffffu

/* What a guest's records claim, judged (acoll_vet.c). */
struct acoll_vet_id {
	uint16_t kind;
	bool doubted;  /* claimed never_started, its START not yet seen */
	bool sent;     /* it ended by leaving through a ring, not by a QUIT */
	uint32_t late; /* records claimed after_end since it ended: perhaps
	                * of the id's next flow, whose beginning another
	                * thread's lane has not published yet */
	bool late_end_sent; /* the last end among them left through a ring */
	uint64_t id;
	uint64_t t;    /* when it ended */
	uint64_t late_t, late_end_t; /* the first of those records, and the
	                              * last that ended the id (0: none) */
};
/* A lie of a flow id judged but not yet counted (acoll_vet_flow): what an
 * honest agent publishes out of order is forgiven when the rest comes, and
 * a count that went back would break what reads it (a Prometheus counter),
 * so a claim is counted once it has stood VET_SETTLE_NS unforgiven. */
struct acoll_vet_claim {
	uint64_t at;   /* the read it was made in, our clock */
	uint64_t id;
	uint16_t kind;
	bool late;     /* after_end, in ended[slot]; else never_started */
	uint32_t slot;
};
struct acoll_vet {
	struct xflow_domain_lies lies;
	uint64_t rate, burst, tokens, refill_ns; /* rate 0: no limit */
	uint64_t floor_ns;           /* our previous read of it (or its connection) */
	uint64_t bound;              /* its clock's bound, as of this read */
	struct xflow_flowtab ids;    /* its flow ids: live or ended */
	uint64_t live_id;            /* with live_kind: an id live in ids, the
	                              * last record's (0: none; acoll_vet_flow) */
	uint16_t live_kind;
	bool ids_ready, ids_failed;
	/* The read under way (acoll_vet_read_begin), for acoll_vet_quick():
	 * the times a record may have, read_lo on for read_span ns. */
	uint64_t read_lo, read_span;
	struct acoll_vet_id *ended;  /* the ended ids kept, a ring */
	uint32_t ended_next;
	struct acoll_vet_claim *claims; /* not yet counted, oldest first: a ring */
	uint32_t claim_first, nclaims;
	uint64_t now;                /* the read under way's, our clock */
	/* Its plan's sites' roles (enum xflow_site_roles), for the read under
	 * way: which of its records are an id leaving through a ring. */
	const uint8_t *roles;
	uint32_t nroles;
	/* When its last STATS counts were taken (or it connected), and
	 * whether any were: the counts it may claim since grow from them. */
	uint64_t stats_ns;
	bool stats_taken;
};
enum acoll_verdict { ACOLL_GIVEN, ACOLL_REFUSED };

struct plan_cache {
	char *domain, *exe;
	struct xflow_plan *plan;
	void *buf;        /* the plan's bytes, as sent */
	size_t len;
	char (*what)[96]; /* per site, for site_info */
	uint8_t *roles;   /* per site, for site_info: enum xflow_site_roles,
	                   * found once here, not in the bindings per lookup */
};

enum peer_state {
	PEER_LIVE = 0, /* greeted, planned: records flow */
	PEER_HELLO,    /* over Xen: connected, waiting for the HELLO */
	PEER_PLAN,     /* over Xen: plan sent, waiting for the answer */
};

/* How a guest's clock was placed on ours. */
enum peer_clock {
	PEER_CLOCK_NONE = 0,   /* not yet: its times as it gave them */
	PEER_CLOCK_TSC,        /* its TSC anchor, on a TSC we share */
	PEER_CLOCK_RT,         /* round trips */
	PEER_CLOCK_XTIME,      /* Xen's system time */
	PEER_CLOCK_FIRST,      /* moved onto ours by its first record */
};

struct peer {
	char path[108];
	struct xflow_ctl_conn conn;
	/* Over Xen (xen option): the state of a peer found at run time, its
	 * record vchan and stream, and its offer's tag in xenstore. */
	bool xen;
	enum peer_state state;
	uint64_t deadline_ns;
	struct libxenvchan *rec;
	struct xflow_xen_rstream rs;
	char tag[64];
	int64_t offset_ns;       /* added to its times: its clock onto ours */
	bool offset_checked;
	uint64_t since_ns;       /* over Xen: when we connected (before its HELLO) */
	char clock_how[96];      /* over Xen: how offset_ns was found, for its source */
	enum peer_clock clk;     /* over Xen: the same, for its bound */
	/* Over Xen without a TSC anchor: where the round trips place its
	 * clock (the greeting's, then the STATS ones'), and within how much;
	 * whatever else places it is checked against them.  rt.at_ns 0: no
	 * round trip places it. */
	struct guest_clock_rt rt;
	bool rt_said; /* its round trips' contradictions were said */
	/* The bound reported (peer_clock_bound): a lower one only once the
	 * records placed under the higher one are old (bound_next from
	 * bound_until on). */
	uint64_t bound_held, bound_next, bound_until;
	/* How far its clock's placement moved past the bound it had given
	 * (the moves added up, 0: none), while records placed before may
	 * still wait in the model, until moved_until: against the records
	 * placed after, theirs are off by that much more
	 * (acoll_peer_offset_set). */
	uint64_t moved_ns, moved_until;
	/* Xen's system time minus its CLOCK_MONOTONIC, when it said it
	 * (xflow/control.h); xtime_refused once it disagreed with what the
	 * round trips proved. */
	bool xtime, xtime_refused;
	int64_t xtime_d;
	bool connected;   /* the control socket is up */
	bool ring_ok;     /* the ring is mapped and readable */
	bool gone;
	uint16_t domid;
	char domain[64];
	uint32_t agent_pid;
	char exe[PATH_MAX];
	/* A kernel agent's kernel, from its HELLO: its release ("" when it
	 * did not say) and its modules as kernel:...+?NAME items. */
	char krelease[65];
	char *kmods;
	uint32_t ntargets;
	struct xflow_shm shm;
	struct xflow_eventfd_notifier nt;
	struct xflow_ring_consumer cons;
	struct xflow_clock agent_clock;
	const struct xflow_clock *conv;
	struct plan_cache *pc;
	uint32_t plan_seq;
	/* The monitor leaving (agent_detach): DETACH sent (its seq; 0: it
	 * could not be), answered, and reads of its vchan that found nothing
	 * since the answer (over Xen, where no counter says "drained"). */
	bool detach_asked, detached;
	uint32_t detach_seq;
	unsigned empty_after_detach;
	uint32_t installed, sites;
	/* Plan sites the agent serves with a breakpoint (its in-process
	 * backend could not put a jump there), and the first reason. */
	uint8_t *trap;
	uint32_t ntrap;
	char trap_why[256];
	uint64_t records, bad;
	struct acoll_vet vet;
	/* The last STATS.  Its ring_dropped counts every record the agent
	 * lost: to a full ring and, before it, in the targets' lanes. */
	struct xflow_ctl_advice_stats *adv;
	uint32_t nadv;
	uint64_t ring_dropped;
	/* Of those, the ones lost before the ring (see peer_drops). */
	uint64_t lost_before_ring;
	bool stats_pending;
	uint64_t stats_sent_ns;
	uint64_t plan_sent_ns;   /* over Xen: when its plan left */
	/* The agent's clock in its last STATS reply, on our time: it had
	 * written every record it gave before then (xflow_domain_info's
	 * progress_ns); 0 until it said. */
	uint64_t progress_ns;
	/* What its agent says waits in the lanes (xflow/ring.h held_before)
	 * on our time, 0: nothing; and the ring's producer index when last
	 * read, and when that last moved (acoll_peer_held). */
	uint64_t held_ns;
	uint64_t held_prod, held_moved_at;
	char source[200];
	/* source, and what the domain's lanes lost, for the Domains view. */
	char source_said[320];
};

struct acoll {
	struct peer *peers[MAX_PEERS];
	unsigned npeers;
	unsigned next_peer;          /* read() starts there */
	const char *flows[MAX_LIST];
	unsigned nflows;
	const char *bins[MAX_LIST];  /* "DOM:PATH" */
	unsigned nbins;
	int timeout_ms;
	char *opts;                  /* the options string, split in place */
	struct xflow_unit *unit;
	struct plan_cache cache[MAX_PEERS];
	unsigned ncache;
	struct xflow_clock clock;
	uint64_t clock_refined_ns;   /* when its rate was last measured again */
	/* Aspects: the unit's flows, then its user advice. */
	uint32_t naspects;
	struct aspect {
		int kind;        /* XFLOW_CTL_ASPECT_FLOW or _ADVICE */
		uint32_t index;
		char name[96];
		int enabled;
		/* What weaving it warned: how many, the first, and both
		 * together as aspect_info() shows them. */
		unsigned warnings;
		char first_warning[256];
		char note[320];
	} *aspects;
	uint64_t bad, bad_offers;
	uint64_t rate;               /* rate=: records a second per agent, 0 none,
	                              * ACOLL_RATE_UNSET each transport's default */
	int xen_step_ms;             /* the greeting's: timeout=, at most XEN_STEP_MS */
	/* Over Xen: discovery, and the domains whose offer failed lately. */
	bool xen;
	struct xen_discover *xd;
	struct failed_offer {
		uint32_t domid;
		uint64_t until_ns;
		unsigned slow; /* times its agent ran out of time (greeting,
		                * plan): each doubles its next deadlines */
	} failed[MAX_PEERS];
	unsigned nfailed;
	char err[1024];
	/* Over Xen: Xen's system time minus our own CLOCK_MONOTONIC, read
	 * from our kernel (xflow/xen_time.h) at most every
	 * XFLOW_XEN_TIME_EVERY_NS; xtime_never when it cannot be, and why. */
	bool xtime, xtime_never, xtime_why_said;
	int64_t xtime_d;
	uint64_t xtime_at;
	char xtime_why[240];
	struct xen_time_reader xtime_r;
	struct xflow_record buf[POP_CHUNK];
};

/* acoll.c */
bool acoll_in_aspect(const struct acoll *c, const struct aspect *a, uint32_t i);
void acoll_set_err(struct acoll *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* acoll_peer.c */
void acoll_agent_clock_from_hello(struct xflow_clock *k, const struct xflow_ctl_hello *h);
int acoll_peer_connect(struct acoll *c, struct peer *p);
int acoll_peer_control(struct acoll *c, struct peer *p, int timeout_ms, struct xflow_ctl_msg **plan_reply);
void acoll_peer_drop(struct acoll *c, struct peer *p, const char *why);
void acoll_peer_free(struct peer *p);
int acoll_peer_send_plan(struct acoll *c, struct peer *p);
void acoll_peer_take_hello(struct peer *p, const struct xflow_ctl_hello *h);
int acoll_peer_wait_plan(struct acoll *c, struct peer *p);
struct xflow_ctl_msg acoll_plan_load_msg(const struct peer *p);
int acoll_take_plan_reply(struct acoll *c, struct peer *p, struct xflow_ctl_msg *r, char *why, size_t whylen);
/* acoll_plan.c */
struct plan_cache *acoll_plan_for(struct acoll *c, struct peer *p);
/* acoll_clock.c */
void acoll_bound_note(struct peer *p);
/* @p's clock placed anew at @offset_ns (its times onto ours). */
void acoll_peer_offset_set(struct peer *p, int64_t offset_ns);
void acoll_handle_stats(struct peer *p, const struct xflow_ctl_stats *s);
uint64_t acoll_peer_clock_bound(struct peer *p);
void acoll_peer_clock_refine(struct acoll *c, struct peer *p, const struct xflow_ctl_stats *s);
/* A STATS reply's clock_now (@agent_ticks, 0: not said) as p->progress_ns. */
void acoll_peer_progress(struct peer *p, uint64_t agent_ticks);
/* After a read of @p's ring: what its agent said waits in its lanes
 * (xflow/ring.h held_before, @held_ticks, read before the pop), on our
 * time, and the ring's producer index @prod, to see whether it moves. */
void acoll_peer_held(struct peer *p, uint64_t held_ticks, uint64_t prod, uint64_t now);
/* That as xflow_domain_info.held_ns at @now: waited for while the ring
 * moves (HELD_STALE_NS) and not from further back than HELD_MAX_NS; 0
 * once the agent is gone. */
uint64_t acoll_peer_held_ns(const struct peer *p, uint64_t now);
void acoll_rt_how(struct peer *p);
void acoll_xen_peer_source(struct peer *p);
void acoll_xtime_heard(struct acoll *c, struct peer *p, bool said, int64_t d);
void acoll_xtime_ours(struct acoll *c, uint64_t now);
/* acoll_xen.c */
void acoll_xen_peer_fail(struct acoll *c, struct peer *p, const char *why);
void acoll_xen_peer_hello(struct acoll *c, struct peer *p, uint64_t now);
void acoll_xen_peer_planned(struct acoll *c, struct peer *p, uint64_t now);
void acoll_xen_tick(struct acoll *c, uint64_t now);
/* acoll_vet.c */
int acoll_vet_init(struct acoll_vet *v, uint64_t rate, uint64_t now);
void acoll_vet_fini(struct acoll_vet *v);
/* Judge record @r of an agent of domain @domid, at time @t on our clock
 * (placed within @bound), read at our time @now: counted in v->lies by
 * kind; REFUSED when it must not reach the model. */
enum acoll_verdict acoll_vet_record(struct acoll_vet *v, uint16_t domid, const struct xflow_record *r,
				    uint64_t t, uint64_t now, uint64_t bound);
/* A read of the agent ended at @now: nothing it sends later is older by
 * much. */
void acoll_vet_read_done(struct acoll_vet *v, uint64_t now);
/* A read of the agent begins at our time @now, its clock placed within
 * @bound: what acoll_vet_quick() judges by, fixed until the next, and the
 * tokens earned until then. */
void acoll_vet_read_begin(struct acoll_vet *v, uint64_t now, uint64_t bound);
/* The flags that begin or end a flow id (acoll_vet_flow). */
#define ACOLL_VET_ID_FLAGS \
	(XFLOW_REC_START | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_KEYED | XFLOW_REC_SPLIT | XFLOW_REC_QUIT)

/* acoll_vet_record()'s judgement of @r's flow id, stamped @t: never
 * refused, only counted (once settled). */
void acoll_vet_flow(struct acoll_vet *v, const struct xflow_record *r, uint64_t t);
/* Count the flow-id lies claimed before @now less VET_SETTLE_NS and not
 * forgiven since (UINT64_MAX: every one, for an agent that is gone).
 * acoll_vet_read_begin() does it; the counts only grow. */
void acoll_vet_settle(struct acoll_vet *v, uint64_t now);

/*
 * acoll_vet_record() for a record of the read begun, its common case in
 * one test: of its agent's domain, stamped within the read's bounds, and
 * a token to spend (earned when the read began).  Its flow id is judged
 * by a call only when it may change something: not for no flow id, nor
 * for the live id of the record before, which it neither begins nor
 * ends.  true: given, with what acoll_vet_record() would have changed;
 * false: not judged, acoll_vet_record() decides.
 */
static inline bool acoll_vet_quick(struct acoll_vet *v, uint16_t domid, const struct xflow_record *r, uint64_t t)
{
	bool rated = v->rate != 0;
	if (r->domain_id != domid || t - v->read_lo >= v->read_span || (rated && !v->tokens))
		return false;
	v->tokens -= rated;
	if (r->flow_id && (r->flow_id != v->live_id || r->flow_kind != v->live_kind || (r->flags & ACOLL_VET_ID_FLAGS)))
		acoll_vet_flow(v, r, t);
	return true;
}
/* Judge the counts of STATS reply @s at @now against @was (nwas advice)
 * and @was_dropped, the ones last taken: ACOLL_REFUSED (and counted) when
 * one went back or grew faster than a guest can hit a hook. */
enum acoll_verdict acoll_vet_stats(struct acoll_vet *v, const struct xflow_ctl_stats *s,
				   const struct xflow_ctl_advice_stats *was, uint32_t nwas, uint64_t was_dropped,
				   uint64_t now);
/* acoll_opts.c */
int acoll_compile_flows(struct acoll *c);
int acoll_parse_options(struct acoll *c, const char *options);
/* The records a second one agent may send (0: no limit): rate= when it was
 * given, else ACOLL_RATE_DEFAULT for an agent over Xen (@xen) and no limit
 * for a local one. */
uint64_t acoll_rate_for(const struct acoll *c, bool xen);

#endif
