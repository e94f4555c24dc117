/*
 * The agent's one monitor (guestrt/agent/agent_priv.h): accepted over the socket
 * or the Xen transport, greeted, served, and its loss.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <libxenvchan.h>

#include "guestrt/agent/agent.h"
#include "guestrt/hook/hook.h"
#include "guestrt/interp/interp.h"
#include "guestrt/hook/kernel/kernel_name.h"
#include "xflow/xen_time.h"
#include "xflow/clock.h"
#include "xflow/control.h"
#include "xflow/flowid.h"
#include "xflow/flowlang.h"
#include "xflow/plan.h"
#include "xflow/ring.h"
#include "xflow/shm.h"
#include "xflow/xen.h"
#include "guestrt/agent/agent_xen.h"
#include "guestrt/agent/agent_priv.h"

/* ---- the monitor -------------------------------------------------------------- */

/* Publish what the producer holds; over Xen also move it into the record
 * vchan (what does not fit waits in the ring).  A record vchan whose
 * monitor end is gone ends the connection. */

static int lane_record(void *ctx, const struct xflow_record *r)
{
	struct agent *a = ctx;
	bool note = r->flags & XFLOW_REC_LOSS_NOTE;
	if (a->o.plan_path) {
		/* --plan: the targets' records go straight to the session,
		 * not through the agent's ring (encoded into it and decoded
		 * out again, a third of the agent's time per record).  A
		 * failure stops the agent in agent_self_drain(). */
		if (!a->record_rc)
			a->record_rc = a->o.record(a->o.record_ctx, r, xflow_clock_to_ns(&a->clock, r->timestamp));
		if (a->record_rc == 1) {
			/* A note refused is no record lost: the backend
			 * tries it again, and nothing is counted. */
			a->record_rc = 0;
			a->not_kept += !note;
			return -ENOSPC;
		}
		if (a->record_rc)
			return -EIO;
		a->records++;
		a->notes += note;
		return 0;
	}
	/* Full: dropped and counted by the producer, like any other; the
	 * backend's loss note then counts it after a thread's last record.
	 * A note is pushed only into room, so that one refused is not
	 * counted with the drops (it is tried again). */
	if (note && xflow_ring_free_slots(&a->prod) == 0) {
		a->note_refused = true; /* agent_ring_flush_final() waits for room */
		return -ENOBUFS;
	}
	if (xflow_ring_push_record(&a->prod, r) != 0)
		return -ENOBUFS;
	a->records++;
	a->notes += note;
	return 0;
}

/* A run of a lane's plain records (no note among them) into the ring at
 * once: what does not fit is dropped and counted by the producer, as
 * lane_record's full ring does one at a time. */
static size_t lane_records(void *ctx, const struct xflow_record *r, size_t n)
{
	struct agent *a = ctx;
	long k = xflow_ring_push_records(&a->prod, r, n);
	if (k < 0)
		return 0; /* not a ring of records: cannot happen, ours is */
	a->records += (uint64_t)k;
	return (size_t)k;
}

/* The targets' lanes into the ring, in each thread's order: every record
 * (what the ring has no room for dropped and counted), or with @room_only
 * as many as it has room for now, the rest left in the lanes for later.
 * --plan hands records to the session one at a time, and has no ring to
 * wait for. */
static void lanes_out(struct agent *a, bool room_only)
{
	a->ring_short = false;
	if (!a->intarget)
		return;
	if (a->o.plan_path) {
		a->moved = xflow_hook_drain(a->hook, lane_record, a, 0);
		return;
	}
	uint64_t began = xflow_clock_ticks(&a->clock);
	size_t max = 0;
	if (room_only) {
		max = xflow_ring_free_slots(&a->prod);
		a->ring_short = true;
		a->moved = 0;
		if (max == 0)
			return;
	}
	a->moved = xflow_hook_drain_runs(a->hook, lane_records, lane_record, a, max);
	a->ring_short = max && a->moved >= (long)max;
	if (!a->ring_short)
		a->given_from = began;
}

/* Whether records wait in the lanes, said in the ring's header once what
 * was moved is published: the monitor then waits for them rather than
 * taking them for late when they come (a monitor stopped for 0.3 s with
 * a ring of 64 saw hundreds of records late).  A record stamped before
 * the last complete drain began was taken by it, unless its thread was
 * stopped between its clock read and its write: that one may still come
 * late, as before. */
static void held_say(struct agent *a)
{
	if (a->intarget && !a->o.plan_path)
		xflow_ring_set_held(&a->prod, a->ring_short ? a->given_from : 0);
}

static void flush_out(struct agent *a, bool room_only)
{
	lanes_out(a, room_only);
	agent_tseq_notes(a);
	xflow_ring_flush(&a->prod);
	held_say(a);
	if (a->o.plan_path)
		agent_self_drain(a);
	if (a->xen && a->connected && agent_xen_pump(&a->xt) == -EPIPE)
		agent_monitor_gone(a, "its record vchan closed");
}

void agent_ring_flush_out(struct agent *a)
{
	flush_out(a, false);
}

void agent_ring_move(struct agent *a)
{
	flush_out(a, true);
}

/*
 * The last flush before the agent lets go or leaves: a loss note goes only
 * into room (lane_record, agent_tseq_notes), and a ring the monitor has
 * not read yet may have none, so the notes of losses after a thread's last
 * record would go unsaid.  While one was refused and a monitor is
 * connected, and so reading, wait for room and flush again, for at most
 * @max_ms: the one leaving has nothing else to do, the one asked to detach
 * must answer soon.
 */
void agent_ring_flush_final(struct agent *a, int max_ms)
{
	a->note_refused = false;
	agent_ring_flush_out(a);
	for (int ms = 0; ms < max_ms && a->connected && (a->note_refused || a->tseq_owed); ms += 5) {
		const struct timespec pause = { 0, 5000000 };
		nanosleep(&pause, NULL);
		a->note_refused = false;
		agent_ring_flush_out(a);
	}
}

int agent_ring_reset(struct agent *a)
{
	int rc = xflow_ring_format(a->shm.base, a->shm.size, XFLOW_RECORD_SIZE, a->ring_slots, a->clock.kind);
	if (rc == 0)
		rc = xflow_ring_producer_init(&a->prod, a->shm.base, a->shm.size, &a->notifier.base,
					      a->o.batch ? a->o.batch : 64);
	/* Streamed: a plain store into a slot the monitor read a lap ago
	 * first fetches its line back from the monitor's cache, and that
	 * miss was three quarters of the agent's time per record moved
	 * (perf, tests/bench/pipeline.sh).  Every path that pushes here
	 * flushes when it goes idle (agent_ring_flush_out()).  Where the CPU
	 * has no such stores nothing changes. */
	if (rc == 0)
		(void)xflow_ring_producer_stream(&a->prod);
	/* Nothing from before the ring waits in the lanes. */
	a->given_from = xflow_clock_ticks(&a->clock);
	return rc;
}

/* Over Xen a vchan serves one client in its life: withdraw the used
 * offer and, when staying, make a fresh one for the next monitor. */
static void xen_reoffer(struct agent *a)
{
	if (!a->xen)
		return;
	agent_xen_withdraw(&a->xt);
	if (a->o.stay && !a->quit) {
		char err[256];
		if (agent_xen_offer(&a->xt, err, sizeof(err)) != 0) {
			agent_logf(a, 0, "%s; stopping", err);
			agent_detach_all(a);
			a->quit = true;
			a->exit_rc = -EIO;
		}
	}
}

void agent_monitor_gone(struct agent *a, const char *why)
{
	agent_plan_summary(a);
	agent_logf(a, 0, "the monitor went away (%s)%s", why, a->o.stay ? "; waiting for the next one" : "");
	xen_time_reader_close(&a->xtime_r);
	xflow_hook_control_fd(a->hook, -1);
	xflow_ctl_conn_close(&a->conn);
	a->connected = false;
	if (a->o.stay) {
		/* Nobody reads the ring: take the probes out until the next
		 * monitor sends its plan. */
		agent_plan_unload(a);
	} else {
		agent_detach_all(a);
		a->quit = true;
	}
	xen_reoffer(a);
}

static void monitor_greet(struct agent *a);

void agent_monitor_accept(struct agent *a)
{
	int fd = accept4(a->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (a->connected) {
		/* One monitor at a time: tell the newcomer why, then close. */
		struct xflow_ctl_conn c;
		if (xflow_ctl_conn_init_unix(&c, fd) == 0) {
			struct xflow_ctl_msg req = { .type = XFLOW_CTL_HELLO };
			xflow_ctl_reply_simple(&c, &req, -EBUSY, "agent of %s already serves a monitor", a->o.domain);
		}
		xflow_ctl_conn_close(&c);
		return;
	}
	if (xflow_ctl_conn_init_unix(&a->conn, fd) != 0) {
		close(fd);
		return;
	}
	monitor_greet(a);
}

/* Over Xen: a monitor mapped our control vchan. */
void agent_monitor_accept_xen(struct agent *a)
{
	xflow_xen_vchan_ack(a->xt.ctl);
	if (a->connected || !agent_xen_monitor_arrived(&a->xt))
		return;
	/* The connection owns the control vchan from here on. */
	xflow_ctl_conn_init_vchan(&a->conn, a->xt.ctl);
	a->xt.ctl = NULL;
	agent_xen_mark_busy(&a->xt);
	monitor_greet(a);
	if (!a->connected)
		xen_reoffer(a);
}

/* Say HELLO on the new connection a->conn, with a fresh ring. */
static void monitor_greet(struct agent *a)
{
	if (agent_ring_reset(a) != 0 || (a->xen && agent_xen_pump_start(&a->xt, a->shm.base, a->shm.size) != 0)) {
		xflow_ctl_conn_close(&a->conn);
		return;
	}
	struct xflow_ctl_target *tv = calloc(a->ntargets + 1, sizeof(*tv));
	if (!tv) {
		xflow_ctl_conn_close(&a->conn);
		return;
	}
	struct xflow_ctl_msg m = { .type = XFLOW_CTL_HELLO };
	struct xflow_ctl_hello *h = &m.u.hello;
	h->domain_id = a->o.domain_id;
	h->domain = a->o.domain;
	h->agent_pid = (uint32_t)getpid();
	h->clock = (uint16_t)a->clock.kind;
	if (a->clock.kind == XFLOW_CLOCK_TSC) {
		h->tsc_hz = a->clock.tsc_hz;
		h->base_tick = a->clock.base_tick;
		h->base_ns = a->clock.base_ns;
	}
	h->ring_offer = XFLOW_CTL_RING_LOCAL;
	h->slot_size = XFLOW_RECORD_SIZE;
	h->nslots = a->ring_slots;
	h->region_size = a->shm.size;
	if (a->xen) {
		h->ring_offer = XFLOW_CTL_RING_VCHAN;
		h->nslots = XFLOW_XEN_REC_RING / XFLOW_RECORD_SIZE;
		h->region_size = XFLOW_XEN_REC_RING;
	}
	agent_fill_targets(a, tv, &h->ntargets);
	h->targets = tv;
	/* A kernel agent's domain is planned with its own modules and
	 * refused when the monitor's kernel is another release. */
	struct agent_kernel_name kn = { 0 };
	if (a->o.backend == XFLOW_AGENT_KERNEL && agent_kernel_name_read(&kn, NULL) == 0) {
		h->kernel_release = kn.release;
		h->nmodules = kn.nmods;
		h->modules = kn.modv;
		if (kn.left_out)
			agent_logf(a, 0, "%u module name(s) of /sys/kernel/btf left out of the HELLO", kn.left_out);
	}
	h->xen_time = agent_xtime_now(a, &h->xen_minus_mono);
	if (a->clock.kind != XFLOW_CLOCK_TSC) {
		/* Our clock now, last thing before sending (the Xen monitor
		 * takes its arrival for our offset); with a TSC, the TSC read
		 * with it, which lets the monitor scale away the latency. */
		if (a->anchor_hz) {
			xflow_clock_pair(&h->base_tick, &h->base_ns);
			h->tsc_hz = a->anchor_hz;
		} else if (a->xen) {
			h->base_ns = xflow_monotonic_ns();
		}
	}
	int fds[2] = { a->shm.fd, a->notifier.fd };
	int rc = xflow_ctl_send(&a->conn, &m, fds, a->xen ? 0 : 2, 2000);
	agent_kernel_name_fini(&kn);
	free(tv);
	if (rc) {
		agent_logf(a, 0, "cannot greet the monitor: %s", strerror(-rc));
		xflow_ctl_conn_close(&a->conn);
		return;
	}
	a->connected = true;
	/* Without --stay the hook engine itself detaches everything the
	 * moment the monitor's end closes, even in the middle of a slice.
	 * (An event channel says nothing of hang-ups: over Xen the loop
	 * notices between slices.) */
	if (!a->o.stay && !a->xen)
		xflow_hook_control_fd(a->hook, a->conn.fd);
	agent_logf(a, 0, "monitor connected%s", a->xen ? " over vchan" : "");
}

/*
 * Every target is gone, their last records moved: before the agent goes,
 * its monitor must hear what was lost in their last moments (a program
 * that wrote a lane's worth in one burst and exited), which only an
 * answer to STATS tells it.  The monitor asks five times a second; its
 * next question is awaited, 2 s at most, the records still moving out
 * (over Xen, until the ring is empty too: what waits there for room in
 * the record vchan would be lost uncounted).
 */
void agent_monitor_last_stats(struct agent *a)
{
	uint64_t seen = a->stats_answered;
	uint64_t end = xflow_monotonic_ns() + 2000000000ull;
	while (a->connected) {
		agent_ring_flush_out(a);
		if (a->connected)
			agent_monitor_serve(a);
		bool waiting = a->stats_answered == seen || (a->xen && agent_xen_pending(&a->xt));
		uint64_t now = xflow_monotonic_ns();
		if (!a->connected || !waiting || now >= end)
			break;
		struct pollfd pf = { .fd = a->conn.fd, .events = POLLIN };
		int ms = (int)((end - now) / 1000000) + 1;
		poll(&pf, 1, ms < 20 ? ms : 20);
	}
}

void agent_monitor_serve(struct agent *a)
{
	for (;;) {
		struct xflow_ctl_msg *m;
		int rc = xflow_ctl_recv(&a->conn, &m, 0);
		if (rc == 0)
			return;
		if (rc < 0) {
			xflow_ctl_refuse(&a->conn); /* a refused frame: say why, then close */
			agent_monitor_gone(a, rc == -ECONNRESET ? "closed" : a->conn.why ? a->conn.why : strerror(-rc));
			return;
		}
		switch (m->type) {
		case XFLOW_CTL_PLAN_LOAD:
			rc = agent_plan_load(a, m);
			break;
		case XFLOW_CTL_ASPECT_SET:
			rc = agent_aspect_set(a, m);
			break;
		case XFLOW_CTL_STATS:
			rc = agent_stats_reply(a, m);
			break;
		case XFLOW_CTL_DETACH:
			/* The hits stop first, so that the flush moves all
			 * there will be: a hit between the two would be lost
			 * and counted nowhere, after the monitor's last read.
			 * Switched off, then flushed, then taken out: the
			 * kernel backend's rings go with its last placement,
			 * and up to a slice of records waits in them (seen
			 * as the program's losses at every detach while the
			 * host's other traffic ran).  A run already past its
			 * switch when the flush read its ring is still
			 * counted, by the unload. */
			agent_sites_stop(a);
			agent_ring_flush_out(a);
			agent_sites_remove(a);
			agent_ring_flush_final(a, 200);
			agent_plan_summary(a);
			rc = xflow_ctl_reply_simple(&a->conn, m, 0, "detaching");
			xflow_ctl_msg_free(m);
			agent_logf(a, 0, "detach asked by the monitor");
			xen_time_reader_close(&a->xtime_r);
			xflow_hook_control_fd(a->hook, -1);
			if (a->o.stay) {
				agent_plan_unload(a);
			} else {
				agent_detach_all(a);
				a->quit = true;
			}
			xflow_ctl_conn_close(&a->conn);
			a->connected = false;
			xen_reoffer(a);
			return;
		default:
			rc = xflow_ctl_reply_simple(&a->conn, m, -EOPNOTSUPP, "%s is not a request",
						    xflow_ctl_type_name(m->type));
		}
		xflow_ctl_msg_free(m);
		if (rc) {
			agent_monitor_gone(a, strerror(-rc));
			return;
		}
	}
}
