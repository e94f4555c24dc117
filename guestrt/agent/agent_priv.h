/*
 * State of xflow-agent shared by its files (not for other folders): the
 * set-up and the loop (agent.c), the hit path (agent_hit.c) and its
 * records' numbers (agent_tseq.c), targets
 * (agent_targets.c), the plan (agent_plan.c) and the monitor
 * (agent_monitor.c).
 */
#ifndef XFLOW_GUESTRT_AGENT_AGENT_PRIV_H
#define XFLOW_GUESTRT_AGENT_AGENT_PRIV_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "guestrt/agent/agent.h"
#include "guestrt/agent/agent_xen.h"
#include "guestrt/hook/hook.h"
#include "guestrt/interp/interp.h"
#include "xflow/clock.h"
#include "xflow/control.h"
#include "xflow/plan.h"
#include "xflow/ring.h"
#include "xflow/shm.h"
#include "xflow/xen_time.h"

#define MAX_TARGETS 256
/* How long one slice of serving hits lasts before the socket is looked
 * at again (the hook engine has no way to wait on it too). */
#define SLICE_MS 10
#define BUSY_SLICE_MS 2
/* The bounds of a slice while records flow into lanes (agent.c). */
#define MIN_SLICE_MS 1
#define MAX_SLICE_MS 30
#define NSCRATCH XFLOW_BC_MAX_INPUTS

struct agent;

/* One placement (site, when) in one target: the handler's data. */
struct site_ctx {
	struct agent *a;
	uint32_t psite;
	uint8_t when;
	uint8_t installed; /* the hook engine has it */
	uint8_t on;        /* enabled there */
	uint32_t hook_site;
};

struct target {
	struct xflow_hook_target *ht;
	pid_t pid;
	uint8_t state;     /* enum xflow_ctl_target_state */
	int32_t status;
	char exe[PATH_MAX];
	struct site_ctx *ctx; /* nsites * 2, or NULL without a plan */
	uint64_t *base;       /* load base per plan binary */
	/* ptrace backend: the flow-id table of this process (each process
	 * its own: the same address in two processes is two objects). */
	struct xflow_flowtab *flows;
};

struct advice_rt {
	uint64_t hits, drops, faults;
	uint32_t sites;
	bool enabled;
};

/* The ptrace backend numbers each thread's records (xflow/record.h,
 * "Losses") in a table fixed with the agent: a thread that finds no room
 * takes the place of the one idle longest, which, if it writes again,
 * numbers afresh (the monitor sees a restart, never a loss).  A thread
 * whose last records the agent's ring refused owes a loss note
 * (agent_tseq_notes). */
#define AGENT_TSEQ 1024
struct agent_tseq {
	uint32_t tid, next;
	uint32_t kept;       /* the number after its last record the ring took,
	                      * or noted: next != kept owes a note */
	uint64_t used;       /* tseq_uses when last used; 0: free */
};

struct agent {
	struct xflow_agent_opts o;
	char errbuf[512];
	FILE *log;
	struct xflow_hook *hook;
	struct target *targets[MAX_TARGETS];
	unsigned ntargets;
	bool spawned_held;   /* a spawned target waits for the first plan */
	/* The ring. */
	struct xflow_clock clock;
	/* A CLOCK_MONOTONIC ring's TSC anchor: the TSC's rate, or 0 when
	 * there is no usable TSC (or XFLOW_CLOCK=monotonic). */
	uint64_t anchor_hz;
	/* Xen's system time minus our CLOCK_MONOTONIC (xflow/xen_time.h),
	 * for the HELLO and STATS replies: xtime_said once read, xtime_never
	 * when the first read said it cannot be (no Xen clocksource, no BPF). */
	bool xtime_said, xtime_never, xtime_logged;
	int64_t xtime_d;
	uint64_t xtime_at;
	struct xen_time_reader xtime_r; /* open while a monitor is served */
	struct xflow_shm shm;
	struct xflow_eventfd_notifier notifier;
	struct xflow_ring_producer prod;
	struct xflow_ring_consumer self; /* --plan: the agent reads its own ring */
	uint32_t ring_slots;
	bool intarget;       /* the backend runs the advice in the targets */
	bool summary_said;   /* agent_plan_summary() ran for this plan */
	int record_rc;       /* --plan: the first failure to keep a record */
	uint64_t not_kept;   /* --plan: records the record callback did not keep */
	uint64_t notes;      /* loss notes among the records (xflow/record.h, "Losses") */
	long moved;          /* records the last drain of their lanes moved */
	bool ring_short;     /* the ring's room, not the lanes, ended that drain */
	uint64_t given_from; /* record clock when the last drain that left
	                      * nothing in the lanes began (ring.h held_before) */
	uint64_t drained_at; /* when the loop last drained them (ns, monotonic) */
	uint32_t lane_slots; /* in-process: records a lane holds; 0: no lanes */
	uint64_t next_id;    /* ptrace backend: flow ids, one space for every table */
	/* The socket and the one monitor. */
	bool xen;            /* the Xen transport instead of the socket */
	struct agent_xen xt;
	int lfd;
	char sock_path[108];
	struct xflow_ctl_conn conn;
	bool connected;
	uint64_t stats_answered; /* STATS requests answered, this monitor or another */
	/* The plan. */
	struct xflow_plan *plan;
	const struct xflow_plan_domain *dom;
	struct xflow_field_rt *fields;
	struct advice_rt *adv;
	uint32_t *site_first, *site_nb; /* bindings of each site */
	/* Per hit. */
	struct xflow_hook_target *cur;
	uint64_t hit_ticks;
	uint64_t scratch[NSCRATCH];
	/* ptrace backend: each thread's next thread_seq (agent_tseq.c). */
	struct agent_tseq tseq[AGENT_TSEQ];
	uint64_t tseq_uses, tseq_evicted;
	uint32_t tseq_owed;  /* entries that owe a loss note */
	bool note_refused;   /* a lane's loss note found the ring full */
	uint64_t records, faults_total;
	bool quit;
	int exit_rc;
};

/* agent.c */
void agent_logf(struct agent *a, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool agent_xtime_now(struct agent *a, int64_t *d);
/* agent_hit.c */
void agent_on_hit(const struct xflow_hook_hit *hit, void *data);
/* agent_tseq.c: @r numbered as its thread's next record (flagged
 * SEQ_COUNTS_LOST) and pushed into the ring: 0, or -ENOBUFS when the
 * full ring dropped it. */
int agent_tseq_push(struct agent *a, struct xflow_record *r);
/* The ptrace backend's loss notes: one for each thread whose last records
 * the agent's ring refused, as far as the ring takes them now. */
void agent_tseq_notes(struct agent *a);
/* agent_targets.c */
void agent_on_event(const struct xflow_hook_event *ev, void *data);
struct target *agent_target_add(struct agent *a, struct xflow_hook_target *ht);
int agent_target_flows(struct agent *a, struct target *t);
void agent_target_free(struct target *t);
unsigned agent_targets_alive(const struct agent *a);
/* agent_plan.c */
int agent_aspect_set(struct agent *a, const struct xflow_ctl_msg *req);
void agent_detach_all(struct agent *a);
void agent_fill_targets(const struct agent *a, struct xflow_ctl_target *v, uint32_t *n);
int agent_plan_file_load(struct agent *a, char *err, size_t errlen);
int agent_plan_load(struct agent *a, const struct xflow_ctl_msg *req);
void agent_plan_summary(struct agent *a);
/* Switch every placement off, leaving it in: no hit records more, and
 * what the hits wrote stays where a drain reaches it.  The kernel backend
 * unloads its programs, and the rings with them, when its last placement
 * is taken out: what they hold then is lost (counted), so a flush meant
 * to pass on every record comes between this and agent_sites_remove(). */
void agent_sites_stop(struct agent *a);
/* Take every placement out of every target, so that no hit records
 * more; the plan stays (agent_plan_unload() frees it). */
void agent_sites_remove(struct agent *a);
void agent_plan_unload(struct agent *a);
void agent_self_drain(struct agent *a);
int agent_stats_reply(struct agent *a, const struct xflow_ctl_msg *req);
/* agent_monitor.c */
void agent_monitor_accept(struct agent *a);
void agent_monitor_accept_xen(struct agent *a);
void agent_monitor_gone(struct agent *a, const char *why);
void agent_monitor_serve(struct agent *a);
void agent_monitor_last_stats(struct agent *a);
/* Everything the targets' lanes hold into the ring (what finds it full
 * is dropped and counted), the notes owed, and the ring published. */
void agent_ring_flush_out(struct agent *a);
/* The same for the loop while targets run: from the lanes only as many
 * records as the ring has room for, the rest left there for the next
 * slice, so that a monitor late to read costs lane space, not records. */
void agent_ring_move(struct agent *a);
/* The same, then waits (at most @max_ms) for room for the last loss
 * notes. */
void agent_ring_flush_final(struct agent *a, int max_ms);
int agent_ring_reset(struct agent *a);

#endif
