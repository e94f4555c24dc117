/*
 * tui/demo_host.h — the live demo: the simulated Xen host (sim/,
 * xensim) with one xflow-agent per simulated domain, ready for the agent
 * collector.  `xflowtop --demo` and the end-to-end tests use it.
 *
 * Use:
 *   xflow_demo_host_start(&o, &h);      host booted, agents up; with o.hold
 *                                       the guests wait, else they send now
 *   open the "agent" collector with xflow_demo_host_options(h)
 *   xflow_demo_host_go(h);              with o.hold: SIGUSR1, the guests
 *                                       start sending (the plans are in, so
 *                                       no message goes untraced)
 *   ...
 *   close the collector                 (the agents detach and exit)
 *   xflow_demo_host_stop(h);            everything stopped and removed
 *
 * Nothing is left behind: the agents and xensim are children of the caller
 * with PR_SET_PDEATHSIG, so they stop (the agents detaching first) even if
 * the caller is killed; xflow_demo_host_stop() also runs at exit for a host
 * still running, and removes the sockets and the scratch directory.  Shared
 * memory is memfds, which vanish with their last holder.
 */
#ifndef XFLOW_TUI_DEMO_HOST_H
#define XFLOW_TUI_DEMO_HOST_H

#include <stdint.h>
#include <sys/types.h>

#define XFLOW_DEMO_MAX_DELAYS 16

struct xflow_demo_opts {
	unsigned guests;           /* 0: 1 */
	unsigned rate;             /* messages/s per guest; 0: 1000, xensim's default */
	uint32_t size;             /* bytes per message; 0: xensim's default */
	const char *duration;      /* xensim --duration; NULL: 1 day (stop ends it) */
	const char *delays[XFLOW_DEMO_MAX_DELAYS]; /* "STAGE=DURATION" */
	unsigned ndelays;
	const char *jitter;        /* xensim --jitter PCT, or NULL */
	unsigned block_rate;       /* block requests/s per guest (0: none) */
	const char *truth;         /* xensim --truth FILE, or NULL */
	const char *flows;         /* NULL: netflow.xml found beside the binary */
	const char *bindir;        /* where xensim and xflow-agent are; NULL: found */
	uint32_t ring_slots;       /* agents' --ring-slots; 0: default */
	uint32_t lane_slots;       /* agents' --lane-slots; 0: default */
	int verbose;               /* children's messages on stderr, not in logs */
	int hold;                  /* 1: traffic waits for xflow_demo_host_go() */
	/* The scheduler model (sim/sched.h): xensim --xentrace PATH (a file
	 * or a FIFO the caller reads), --pcpus, --wake-delay DOM=DUR,
	 * --notify-delay DUR, --xen-irq DUR; NULL or 0: not given. */
	const char *xentrace;
	/* Or 1: run the scheduler model and give its trace to the caller,
	 * live, on xflow_demo_host_trace_fd() (xentrace is then ignored). */
	int trace;
	unsigned pcpus;
	const char *wake_delay;
	const char *notify_delay;
	const char *xen_irq;
};

struct xflow_demo_host;

/* Start the host held, one agent per domain, and wait for their sockets
 * (up to 15 s); then, unless o->hold, let the guests send.  0, or a
 * negative errno with the reason in xflow_demo_host_error() (and nothing
 * left running). */
int xflow_demo_host_start(const struct xflow_demo_opts *o, struct xflow_demo_host **out);
/* Why the last xflow_demo_host_start() failed. */
const char *xflow_demo_host_error(void);
/* "dir=SOCKETS,flows=FILE": options for the agent collector. */
const char *xflow_demo_host_options(const struct xflow_demo_host *h);
/* SOCKETS alone: where the agents listen, for other flows than FILE. */
const char *xflow_demo_host_socket_dir(const struct xflow_demo_host *h);
/* With o->trace: xensim's trace as xentrace writes it, to read as a pipe
 * (the xentrace collector's fd=); the host keeps it open until stopped,
 * and drains the trace itself when nobody reads, so that xensim never
 * waits on it.  -1 without. */
int xflow_demo_host_trace_fd(const struct xflow_demo_host *h);
/* Let the guests send (SIGUSR1 to xensim).  0 or a negative errno. */
int xflow_demo_host_go(struct xflow_demo_host *h);
/* The domains: count, and each one's id, name and pid. */
unsigned xflow_demo_host_ndomains(const struct xflow_demo_host *h);
int xflow_demo_host_domain(const struct xflow_demo_host *h, unsigned i, unsigned *domid, const char **name,
			   pid_t *pid);
/* Wait up to @timeout_ms for xensim to finish by itself (its --duration).
 * Returns its exit status (0 .. 255), -ETIMEDOUT, or another negative errno. */
int xflow_demo_host_wait(struct xflow_demo_host *h, int timeout_ms);
/* Stop the agents (they detach first), then the host; remove the sockets
 * and the scratch directory; free.  NULL is fine. */
void xflow_demo_host_stop(struct xflow_demo_host *h);
/* Async-signal-safe: send SIGTERM to every child (agents first).  For a
 * signal handler; call xflow_demo_host_stop() afterwards from normal code. */
void xflow_demo_host_kill(struct xflow_demo_host *h);

#endif
