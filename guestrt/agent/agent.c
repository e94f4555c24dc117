/*
 * xflow-agent: its set-up, transport choice and loop (guestrt/agent/agent.h);
 * the hit path, targets, plan and monitor are the other agent_*.c files.
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
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

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
#include <libxenvchan.h>

#include "guestrt/agent/agent_priv.h"

void agent_logf(struct agent *a, int level, const char *fmt, ...)
{
	if (level > a->o.verbose)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(a->log, "xflow-agent[%s]: ", a->o.domain);
	vfprintf(a->log, fmt, ap);
	fputc('\n', a->log);
	fflush(a->log);
	va_end(ap);
}

/* Xen's system time minus our CLOCK_MONOTONIC, as of at most
 * XFLOW_XEN_TIME_EVERY_NS ago; false when it cannot be read here. */
bool agent_xtime_now(struct agent *a, int64_t *d)
{
	/* Only a monitor across domains places a clock by it. */
	if (!a->xen)
		return false;
	uint64_t now = xflow_monotonic_ns();
	if (!a->xtime_never && (!a->xtime_said || now - a->xtime_at >= XFLOW_XEN_TIME_EVERY_NS)) {
		char why[240];
		int64_t v;
		a->xtime_at = now;
		int rc = xen_time_reader_read(&a->xtime_r, &v, why, sizeof(why));
		if (rc == 0) {
			if (!a->xtime_said)
				agent_logf(a, 1, "Xen system time: CLOCK_MONOTONIC + %.9f s", (double)v / 1e9);
			a->xtime_said = true;
			a->xtime_d = v;
		} else if (!a->xtime_said && !a->xtime_logged) {
			agent_logf(a, 1, "Xen system time: not said: %s", why);
			a->xtime_logged = true;
		}
		/* No BPF, no kallsyms, not root: that will not change.  The
		 * clocksource may (a kernel leaves an unstable TSC for Xen's
		 * clock when its watchdog notices, seconds after boot). */
		if (rc && rc != -EINVAL && !a->xtime_said)
			a->xtime_never = true;
	}
	*d = a->xtime_d;
	return a->xtime_said;
}

/* ---- set-up and the loop ---------------------------------------------------------- */

static int attach_exe(struct agent *a, const char *path)
{
	char want[PATH_MAX], link[64], got[PATH_MAX];
	if (!realpath(path, want))
		return -errno;
	DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	struct dirent *e;
	int n = 0, rc = 0;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid == getpid())
			continue;
		snprintf(link, sizeof(link), "/proc/%ld/exe", pid);
		ssize_t k = readlink(link, got, sizeof(got) - 1);
		if (k <= 0)
			continue;
		got[k] = 0;
		if (strcmp(got, want) != 0)
			continue;
		struct xflow_hook_target *ht;
		if ((rc = xflow_hook_attach(a->hook, (pid_t)pid, &ht)) == 0 && agent_target_add(a, ht))
			n++;
	}
	closedir(d);
	return n ? 0 : rc ? rc : -ESRCH;
}

/* Local or Xen, and say which and why: over Xen the domain's id and name
 * are xenstore's (records and plans must name the domain the monitor
 * knows it by). */
static int choose_transport(struct agent *a, char *err, size_t errlen)
{
	char why[256] = "";
	enum xflow_agent_transport t = a->o.transport;
	int rc = t == XFLOW_AGENT_LOCAL ? -ENOENT : agent_xen_init(&a->xt, why, sizeof(why));
	if (t == XFLOW_AGENT_XEN && rc) {
		snprintf(err, errlen, "--transport xen: %s", why);
		return rc;
	}
	if (t == XFLOW_AGENT_AUTO && rc == 0 && a->xt.domid == 0)
		rc = -EEXIST; /* dom0: the monitor is here, the socket is faster */
	if (rc == 0) {
		if (a->o.domain && strcmp(a->o.domain, a->xt.name) != 0)
			fprintf(a->log, "xflow-agent: --domain %s ignored: xenstore names this domain %s\n", a->o.domain,
				a->xt.name);
		a->xen = true;
		a->o.domain = a->xt.name;
		a->o.domain_id = (uint16_t)a->xt.domid;
		fprintf(a->log, "xflow-agent: transport xen (%s)\n", why);
		return 0;
	}
	if (!a->o.domain || !a->o.domain[0]) {
		snprintf(err, errlen, "--domain is required with the local transport (%s)",
			 t == XFLOW_AGENT_LOCAL ? "asked for" : why);
		return -EINVAL;
	}
	if (a->o.verbose || t == XFLOW_AGENT_AUTO)
		fprintf(a->log, "xflow-agent: transport local (%s)\n",
			t == XFLOW_AGENT_LOCAL ? "asked for" : rc == -EEXIST ? "this is dom0" : why);
	return 0;
}

/* The control socket's path: --socket as given, or the default one.  A
 * path that sockaddr_un cannot hold is refused here: cut, it would name
 * another file than the one asked for. */
static int sock_path_choose(struct agent *a, char *err, size_t errlen)
{
	const struct xflow_agent_opts *o = &a->o;
	char path[PATH_MAX], dir[PATH_MAX];
	int rc, n;
	if (o->socket_path) {
		n = snprintf(path, sizeof(path), "%s", o->socket_path);
	} else if ((rc = xflow_ctl_default_dir(dir, sizeof(dir)))) {
		snprintf(err, errlen, "the default socket directory: %s", strerror(-rc));
		return rc;
	} else {
		n = snprintf(path, sizeof(path), "%s/agent-%s-%u.sock", dir, o->domain, (unsigned)o->domain_id);
	}
	if (n < 0 || (size_t)n >= sizeof(a->sock_path)) {
		snprintf(err, errlen, "%s %.200s%s is %d bytes long; a Unix socket's path holds at most %zu",
			 o->socket_path ? "--socket" : "the default socket path", path, n > 200 ? "..." : "", n,
			 sizeof(a->sock_path) - 1);
		return -ENAMETOOLONG;
	}
	memcpy(a->sock_path, path, (size_t)n + 1);
	return 0;
}

int xflow_agent_new(const struct xflow_agent_opts *o, struct xflow_agent **out, char *err, size_t errlen)
{
	*out = NULL;
	struct agent *a = calloc(1, sizeof(*a));
	int rc;
	if (!a)
		return -ENOMEM;
	a->o = *o;
	a->log = o->log ? o->log : stderr;
	a->lfd = -1;
	a->ring_slots = o->ring_slots ? o->ring_slots : 65536;
	if ((rc = choose_transport(a, err, errlen)))
		goto fail;
	if (a->ring_slots & (a->ring_slots - 1) || a->ring_slots > XFLOW_RING_MAX_SLOTS || a->ring_slots < 2) {
		snprintf(err, errlen, "--ring-slots must be a power of two from 2 to %u", XFLOW_RING_MAX_SLOTS);
		rc = -EINVAL;
		goto fail;
	}
	/* BPF programs stamp records with bpf_ktime_get_ns(): the ring then
	 * counts CLOCK_MONOTONIC, whatever the TSC could do. */
	xflow_clock_init(&a->clock, o->backend == XFLOW_AGENT_KERNEL ? XFLOW_CLOCK_FORCE_MONOTONIC : 0);
	if (a->xen) {
		/* The slow part of reading Xen's time (the kernel's BTF), done
		 * now rather than in a greeting the monitor waits for. */
		char why[240];
		if (xen_time_reader_prepare(&a->xtime_r, why, sizeof(why))) {
			agent_logf(a, 1, "Xen system time: not said: %s", why);
			a->xtime_never = a->xtime_logged = true;
		}
	}
	if (a->clock.kind == XFLOW_CLOCK_MONOTONIC) {
		/* Still, a TSC shared with the monitor (other domains under
		 * Xen) places our clock on its own to a microsecond, where the
		 * HELLO's arrival is milliseconds late: its rate for the anchor. */
		struct xflow_clock tsc;
		xflow_clock_init(&tsc, 0);
		a->anchor_hz = tsc.kind == XFLOW_CLOCK_TSC ? tsc.tsc_hz : 0;
		agent_logf(a, 1, "clock anchor: %s", tsc.why);
	}
	size_t size = xflow_ring_region_size(XFLOW_RECORD_SIZE, a->ring_slots);
	if ((rc = xflow_shm_create("xflow-agent-ring", size, &a->shm)) ||
	    (rc = xflow_eventfd_notifier_init(&a->notifier, -1)) || (rc = agent_ring_reset(a))) {
		snprintf(err, errlen, "cannot create the ring: %s", strerror(-rc));
		goto fail;
	}
	if (o->flowtab_capacity > (1u << 30)) {
		snprintf(err, errlen, "the flow-id table's capacity must be at most %u live keys", 1u << 30);
		rc = -EINVAL;
		goto fail;
	}
	struct xflow_hook_config cfg = { .fork_policy = XFLOW_HOOK_FORK_INHERIT, .on_event = agent_on_event,
					 .event_data = a };
	const struct xflow_hook_backend_ops *ops = &xflow_hook_ptrace_ops;
	if (o->backend == XFLOW_AGENT_INPROC) {
		/* The runtime in the target stamps records with the TSC: where
		 * the ring counts CLOCK_MONOTONIC (no invariant TSC), the
		 * advice runs here. */
		if (a->clock.kind == XFLOW_CLOCK_TSC)
			ops = &xflow_hook_inproc_ops;
		else
			fprintf(a->log, "xflow-agent: backend ptrace: the in-process runtime needs the TSC (%s)\n",
				a->clock.why);
	}
	if (o->backend == XFLOW_AGENT_KERNEL)
		ops = &xflow_hook_kernel_ops;
	if ((rc = xflow_hook_new(ops, &cfg, &a->hook))) {
		if (ops == &xflow_hook_kernel_ops && rc == -ENOTSUP)
			snprintf(err, errlen, "cannot start the kernel backend: %s",
				 xflow_hook_kernel_unbuilt() ? xflow_hook_kernel_unbuilt()
							     : "this kernel has no BTF (/sys/kernel/btf/vmlinux)");
		else
			snprintf(err, errlen, "cannot start the hook engine (%s): %s", ops->name, strerror(-rc));
		goto fail;
	}
	a->intarget = ops->intarget != NULL;
	xflow_hook_signals_install(a->hook);
	/* Over Xen the offer is made once the targets are held (below); with
	 * --plan there is no monitor to wait for. */
	if (!a->xen && !o->plan_path && (rc = sock_path_choose(a, err, errlen)))
		goto fail;
	for (unsigned i = 0; i < o->npids; i++) {
		struct xflow_hook_target *ht;
		if ((rc = xflow_hook_attach(a->hook, o->pids[i], &ht)) || !agent_target_add(a, ht)) {
			snprintf(err, errlen, "cannot attach to process %d: %s", (int)o->pids[i],
				 xflow_hook_last_error(a->hook)[0] ? xflow_hook_last_error(a->hook) : strerror(-rc));
			rc = rc ? rc : -ENOMEM;
			goto fail;
		}
	}
	if (o->backend == XFLOW_AGENT_KERNEL) {
		/* One target, the kernel; the monitor plans against its BTF
		 * ("kernel:", see xflowc(1)). */
		struct xflow_hook_target *ht;
		struct target *t;
		if ((rc = xflow_hook_attach(a->hook, 0, &ht)) || !(t = agent_target_add(a, ht))) {
			snprintf(err, errlen, "cannot attach to the kernel: %s", rc ? xflow_hook_last_error(a->hook) : "no memory");
			rc = rc ? rc : -ENOMEM;
			goto fail;
		}
		snprintf(t->exe, sizeof(t->exe), "kernel:");
	}
	if (o->exe && (rc = attach_exe(a, o->exe))) {
		snprintf(err, errlen, "cannot attach to a process running %s: %s", o->exe,
			 rc == -ESRCH ? "none runs it" : strerror(-rc));
		goto fail;
	}
	if (o->argv && o->argv[0]) {
		struct xflow_hook_target *ht;
		if ((rc = xflow_hook_spawn(a->hook, o->argv, &ht)) || !agent_target_add(a, ht)) {
			snprintf(err, errlen, "cannot start %s: %s", o->argv[0],
				 xflow_hook_last_error(a->hook)[0] ? xflow_hook_last_error(a->hook) : strerror(-rc));
			rc = rc ? rc : -ENOMEM;
			goto fail;
		}
		a->spawned_held = true;
	}
	if (!a->ntargets) {
		snprintf(err, errlen, "no target: give --pid, --exe or a command after --");
		rc = -EINVAL;
		goto fail;
	}
	if (o->plan_path) {
		if ((rc = agent_plan_file_load(a, err, errlen)))
			goto fail;
		agent_logf(a, 0, "tracing %u target(s) with the plan %s, no monitor (clock %s)", a->ntargets, o->plan_path,
		      a->clock.kind == XFLOW_CLOCK_TSC ? "tsc" : "monotonic");
		*out = (struct xflow_agent *)a;
		return 0;
	}
	if (a->xen) {
		if ((rc = agent_xen_offer(&a->xt, err, errlen)))
			goto fail;
		agent_logf(a, 0, "serving %u target(s) over vchan, offered at %s (clock %s)", a->ntargets, a->xt.base,
		      a->clock.kind == XFLOW_CLOCK_TSC ? "tsc" : "monotonic");
		*out = (struct xflow_agent *)a;
		return 0;
	}
	a->lfd = xflow_ctl_listen(a->sock_path);
	if (a->lfd < 0) {
		rc = a->lfd;
		a->lfd = -1;
		snprintf(err, errlen, "cannot listen on %s: %s", a->sock_path,
			 rc == -EPERM ? "its directory must be yours and mode 0700" : strerror(-rc));
		a->sock_path[0] = 0;
		goto fail;
	}
	agent_logf(a, 0, "serving %u target(s) on %s (clock %s)", a->ntargets, a->sock_path,
	      a->clock.kind == XFLOW_CLOCK_TSC ? "tsc" : "monotonic");
	*out = (struct xflow_agent *)a;
	return 0;
fail:
	xflow_agent_free((struct xflow_agent *)a);
	return rc;
}

/*
 * How long the next slice may last: SLICE_MS while nothing flows; while
 * records flow, until the busiest lane would be half full at the pace
 * since the last drain (all the lanes' records over that time, a bound
 * of any one's), and no longer than it takes to write a quarter of the
 * agent's ring; from MIN_SLICE_MS to MAX_SLICE_MS; MIN_SLICE_MS when the
 * last drain left records in the lanes for want of room in the ring.  The
 * quarter: the monitor merges its sources' records behind a window twice
 * as long as they come late (tui/aggregate.h), and the records of a
 * slice come up to a slice late; with the default ring (65536) a window
 * then holds at most about 32 K records of the model's 64 K.
 *
 * Why not a short slice always: every wake-up costs the agent tens of
 * microseconds (a timer armed and disarmed, a signal, the socket looked
 * at, a sleeping vCPU woken), which at 0.5 M records a second and 2 ms
 * slices was about half its CPU per record, and still a fifth at 10 ms.
 * MAX_SLICE_MS bounds how late a record reaches the screen and the
 * monitor's requests are answered.  Without lanes (the kernel backend's
 * ring buffer) BUSY_SLICE_MS, as before.
 */
static int slice_ms(struct agent *a)
{
	uint64_t now = xflow_monotonic_ns(), gap = now - a->drained_at;
	a->drained_at = now;
	/* Records left in the lanes for want of room: soon again. */
	if (a->ring_short)
		return MIN_SLICE_MS;
	if (a->moved <= 0)
		return SLICE_MS;
	if (!a->lane_slots)
		return BUSY_SLICE_MS;
	uint64_t room = a->lane_slots / 2 < a->ring_slots / 4 ? a->lane_slots / 2 : a->ring_slots / 4;
	uint64_t ms = room * gap / (uint64_t)a->moved / 1000000u;
	return ms < MIN_SLICE_MS ? MIN_SLICE_MS : ms > MAX_SLICE_MS ? MAX_SLICE_MS : (int)ms;
}

int xflow_agent_run(struct xflow_agent *xa, int *signo)
{
	struct agent *a = (struct agent *)xa;
	if (signo)
		*signo = 0;
	while (!a->quit) {
		if (a->connected)
			agent_monitor_serve(a);
		if (a->quit)
			break;
		/* The listening socket is always watched: a second monitor is
		 * told it is not served rather than left hanging. */
		int wait_fd = a->lfd;
		if (a->xen)
			wait_fd = !a->connected && a->xt.ctl ? libxenvchan_fd_for_select(a->xt.ctl) : -1;
		struct pollfd p[2] = { { .fd = wait_fd, .events = POLLIN },
				       { .fd = a->connected ? a->conn.fd : -1, .events = POLLIN } };
		if (poll(p, 1, 0) == 1) {
			if (a->xen)
				agent_monitor_accept_xen(a);
			else
				agent_monitor_accept(a);
		}
		if (agent_targets_alive(a) && !a->spawned_held) {
			/* While records flow, lanes are emptied as often as
			 * their size and the pace ask, so that a burst fits
			 * in them. */
			int rc = xflow_hook_run(a->hook, slice_ms(a));
			agent_ring_move(a);
			if (rc == -EINTR) {
				int why = xflow_hook_stop_reason(a->hook);
				if (why == -1) {
					/* The engine detached everything already. */
					agent_monitor_gone(a, "hung up");
				} else {
					if (signo)
						*signo = why > 0 ? why : 0;
					/* A signal asks it out now: no wait for the
					 * monitor to make room for the last notes. */
					agent_ring_flush_out(a);
					agent_plan_summary(a);
					agent_logf(a, 0, "stopped by %s; every target detached",
					      why > 0 ? strsignal(why) : "request");
					agent_detach_all(a);
					a->quit = true;
				}
			}
			continue;
		}
		if (!agent_targets_alive(a) && !a->spawned_held) {
			agent_ring_flush_final(a, 2000);
			agent_plan_summary(a);
			agent_logf(a, 0, "no target left");
			if (a->connected)
				agent_monitor_last_stats(a);
			break;
		}
		/* Held: wait on the socket, waking for signals too. */
		p[1].fd = a->connected ? a->conn.fd : -1;
		poll(p, 2, 50);
		int why = xflow_hook_stop_reason(a->hook);
		if (why > 0) {
			if (signo)
				*signo = why;
			agent_detach_all(a);
			break;
		}
	}
	agent_ring_flush_out(a);
	return a->exit_rc;
}

const char *xflow_agent_socket_path(const struct xflow_agent *xa)
{
	return ((const struct agent *)xa)->sock_path;
}

const struct xflow_plan_domain *xflow_agent_plan_domain(const struct xflow_agent *xa)
{
	return ((const struct agent *)xa)->dom;
}

const struct xflow_plan *xflow_agent_plan(const struct xflow_agent *xa)
{
	return ((const struct agent *)xa)->plan;
}

void xflow_agent_free(struct xflow_agent *xa)
{
	struct agent *a = (struct agent *)xa;
	if (!a)
		return;
	if (a->hook) {
		agent_detach_all(a);
		xflow_hook_signals_uninstall(a->hook);
		xflow_hook_free(a->hook);
	}
	agent_plan_unload(a);
	xen_time_reader_close(&a->xtime_r);
	for (unsigned i = 0; i < a->ntargets; i++)
		agent_target_free(a->targets[i]);
	if (a->connected)
		xflow_ctl_conn_close(&a->conn);
	if (a->xen)
		agent_xen_withdraw(&a->xt);
	if (a->lfd >= 0)
		close(a->lfd);
	if (a->sock_path[0] && a->lfd >= 0)
		unlink(a->sock_path);
	if (a->notifier.base.ops && a->notifier.base.ops->close)
		a->notifier.base.ops->close(&a->notifier.base);
	xflow_shm_release(&a->shm);
	free(a);
}
