/*
 * guestrt/agent/agent.h — xflow-agent, the runtime of one domain (seed 001 §4.2:
 * "each domain runs a runtime; it receives the compiled advice and the hook
 * list, loads the advice, then inserts the hooks").
 *
 * The agent attaches to its targets with a hook engine (guestrt/hook/hook.h),
 * serves one monitor at a time on a control socket (xflow/control.h), loads
 * the weave plans the monitor sends, puts a probe at every site, and pushes
 * the advice's records into a ring shared with the monitor (xflow/ring.h).
 *
 * Two backends.  The default, in-process, maps a runtime into each target
 * that runs the site's advice in weave order there (the interpreter,
 * guestrt/interp/interp.h, with the plan's fetch recipes), at a jump to a
 * trampoline, and writes records into per-thread lanes the agent drains
 * into its ring between slices of serving the hook engine.  The ptrace
 * backend (--backend ptrace) stops the thread at an int3 and runs the same
 * interpreter here, with one flow-id table per traced process.
 *
 * Inputs of local_var() advice are the variable's address.  When the
 * variable has no address at the site (its recipe is a register or a
 * computed value), the value goes into a per-hit scratch cell and the
 * advice gets the cell's address: cells live at non-canonical addresses
 * (XFLOW_INTERP_SCRATCH_BASE), which no x86-64 process can map, and the
 * memory accessors serve them from the hit's own memory; writes to them
 * never reach the program, as xflow/plan.h says.
 *
 * One thread does everything (ptrace ties the tracees to it).  Errors are 0
 * or a negative errno; xflow_agent_new() also says why in its @err.
 */
#ifndef XFLOW_GUESTRT_AGENT_AGENT_H
#define XFLOW_GUESTRT_AGENT_AGENT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct xflow_record;
struct xflow_plan;
struct xflow_plan_domain;

enum xflow_agent_transport {
	XFLOW_AGENT_AUTO = 0,  /* Xen in a domU where xenstore answers, else local */
	XFLOW_AGENT_LOCAL,     /* a Unix socket and a shared-memory ring */
	XFLOW_AGENT_XEN,       /* libxenvchan, offered in xenstore (xflow/xen.h) */
};

enum xflow_agent_backend {
	XFLOW_AGENT_INPROC = 0, /* jumps into the target, advice run there; the default */
	XFLOW_AGENT_PTRACE,     /* int3 on every site, advice run in the agent */
	XFLOW_AGENT_KERNEL,     /* the domain's Linux kernel, with eBPF: no process */
};

struct xflow_agent_opts {
	const char *domain;        /* required with the local transport; over Xen
				    * xenstore names the domain */
	enum xflow_agent_transport transport;
	uint16_t domain_id;
	/* The vCPU + 1 every record names (a simulated domain's one vCPU,
	 * which is no CPU of this kernel); 0: the CPU each hit ran on. */
	uint32_t vcpu_plus1;
	const pid_t *pids;         /* attach to these */
	unsigned npids;
	const char *exe;           /* or every process running this file */
	char *const *argv;         /* or start this command (held until a plan) */
	const char *socket_path;   /* NULL: <default dir>/agent-<domain>-<id>.sock */
	uint32_t ring_slots;       /* power of two; 0: 65536 */
	uint32_t batch;            /* records per notification check; 0: 64 */
	uint32_t flowtab_capacity; /* 0: 1 << 18 live keys (per process) */
	enum xflow_agent_backend backend;
	uint32_t lanes;            /* in-process: threads with a lane per process (0: 128) */
	uint32_t lane_slots;       /* in-process: records per lane, a power of two (0: from
	                            * the plan, xflow_agent_lane_slots) */
	bool stay;                 /* keep serving after the monitor leaves */
	int verbose;
	FILE *log;                 /* NULL: stderr */
	/* Trace without a monitor: load this plan (`xflowc plan -o`) at start,
	 * every site or fail, and serve no socket.  @record is then called
	 * from the agent's loop, never from a hit, with each record in the
	 * ring and its time in nanoseconds of this host's CLOCK_MONOTONIC;
	 * a negative errno from it stops the agent (targets let go), 1 says
	 * the record was not kept (the session is full): it is counted as
	 * lost, and the summary says so. */
	const char *plan_path;
	int (*record)(void *ctx, const struct xflow_record *r, uint64_t t_ns);
	void *record_ctx;
};

struct xflow_agent;

/* Attach, create the ring and the socket.  On failure *out is NULL and
 * @err holds the reason. */
int xflow_agent_new(const struct xflow_agent_opts *o, struct xflow_agent **out, char *err,
		    size_t errlen);
/* Serve until the monitor detaches or leaves (without --stay), a signal
 * (SIGINT, SIGTERM, SIGHUP, SIGQUIT), or every target is gone.  Every
 * patched byte is restored before it returns.  Returns 0 or a negative
 * errno; *signo (if not NULL) gets the signal that stopped it, or 0. */
int xflow_agent_run(struct xflow_agent *a, int *signo);
/* Detach what is left, remove the socket, free. */
void xflow_agent_free(struct xflow_agent *a);
const char *xflow_agent_socket_path(const struct xflow_agent *a);
/* The domain of the plan loaded (its sites' names), or NULL. */
const struct xflow_plan_domain *xflow_agent_plan_domain(const struct xflow_agent *a);
/* The plan loaded (its advice, which say each site's roles), or NULL. */
const struct xflow_plan *xflow_agent_plan(const struct xflow_agent *a);
/* Records per lane for plan domain @d when none were asked for: room for
 * about a thousand passes over every placement (a request that meets
 * each site once writes one record per placement), a power of two from
 * 4096 to 32768 (2.8 MiB of 88-byte records a thread). */
uint32_t xflow_agent_lane_slots(const struct xflow_plan_domain *d);

#endif
