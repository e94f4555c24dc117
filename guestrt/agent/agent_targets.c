/*
 * The agent's targets (guestrt/agent/agent_priv.h): attached, followed through
 * their life events, reported to the monitor.
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

/* ---- targets ------------------------------------------------------------------ */

struct target *agent_target_add(struct agent *a, struct xflow_hook_target *ht)
{
	if (a->ntargets >= MAX_TARGETS)
		return NULL;
	struct target *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->ht = ht;
	t->pid = ht->pid;
	char link[64];
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)t->pid);
	ssize_t n = t->pid > 0 ? readlink(link, t->exe, sizeof(t->exe) - 1) : 0;
	t->exe[n > 0 ? n : 0] = 0;
	ht->user_data = t;
	a->targets[a->ntargets++] = t;
	return t;
}

/* ptrace backend: the process's own flow-id table (the runtime of the
 * in-process backend keeps its own in the target). */
int agent_target_flows(struct agent *a, struct target *t)
{
	if (a->intarget || t->flows)
		return 0;
	t->flows = calloc(1, sizeof(*t->flows));
	if (!t->flows)
		return -ENOMEM;
	int rc = xflow_flowtab_init(t->flows, a->o.flowtab_capacity ? a->o.flowtab_capacity : 1u << 18);
	if (rc) {
		free(t->flows);
		t->flows = NULL;
	}
	return rc;
}

void agent_target_free(struct target *t)
{
	if (t->flows)
		xflow_flowtab_fini(t->flows);
	free(t->flows);
	free(t);
}

unsigned agent_targets_alive(const struct agent *a)
{
	unsigned n = 0;
	for (unsigned i = 0; i < a->ntargets; i++)
		n += a->targets[i]->ht != NULL;
	return n;
}

static void send_event(struct agent *a, unsigned kind, pid_t pid, int status, uint32_t sites,
		       const char *msg)
{
	if (!a->connected)
		return;
	struct xflow_ctl_msg m = { .type = XFLOW_CTL_EVENT };
	m.u.event = (struct xflow_ctl_event){ .kind = (uint16_t)kind, .pid = (uint32_t)pid,
					      .status = status, .sites = sites, .message = msg };
	xflow_ctl_send(&a->conn, &m, NULL, 0, 500);
}

static uint32_t installed_sites(const struct agent *a, const struct target *t)
{
	uint32_t n = 0;
	if (!t->ctx || !a->dom)
		return 0;
	for (uint32_t i = 0; i < a->dom->nsites * 2; i++)
		n += t->ctx[i].installed;
	return n;
}

void agent_on_event(const struct xflow_hook_event *ev, void *data)
{
	struct agent *a = data;
	struct target *t = ev->target ? ev->target->user_data : NULL;
	char msg[160];
	switch (ev->kind) {
	case XFLOW_HOOK_EV_FORK:
		if (ev->child) {
			struct target *c = agent_target_add(a, ev->child);
			if (c && t && t->ctx && a->dom) {
				/* The child inherits the parent's probes with the
				 * same ids and handler data, and starts its own flows
				 * (its objects are not its parent's). */
				c->ctx = t->ctx;
				c->base = t->base;
				if (agent_target_flows(a, c))
					agent_logf(a, 0, "no memory for the flows of child %d: its hits are not served",
					      (int)ev->child_pid);
			}
			agent_logf(a, 1, "target %d forked %d (probes inherited)", (int)ev->pid, (int)ev->child_pid);
		}
		break;
	case XFLOW_HOOK_EV_EXEC: {
		uint32_t n = t ? installed_sites(a, t) : 0;
		if (t && t->ctx)
			for (uint32_t i = 0; i < a->dom->nsites * 2; i++)
				t->ctx[i].installed = 0;
		snprintf(msg, sizeof(msg), "target %d ran exec: its %u sites are retired", (int)ev->pid, n);
		agent_logf(a, 0, "%s", msg);
		send_event(a, XFLOW_CTL_EV_SITES_RETIRED, ev->pid, 0, n, msg);
		break;
	}
	case XFLOW_HOOK_EV_EXITED:
	case XFLOW_HOOK_EV_DETACHED:
	case XFLOW_HOOK_EV_ERROR: {
		if (!t)
			break;
		uint32_t n = installed_sites(a, t);
		unsigned kind;
		if (ev->kind == XFLOW_HOOK_EV_EXITED) {
			bool sig = WIFSIGNALED(ev->status);
			t->state = sig ? XFLOW_CTL_TARGET_CRASHED : XFLOW_CTL_TARGET_EXITED;
			t->status = ev->status;
			kind = sig ? XFLOW_CTL_EV_TARGET_CRASHED : XFLOW_CTL_EV_TARGET_EXITED;
			if (sig)
				snprintf(msg, sizeof(msg), "target %d killed by signal %d; %u sites retired",
					 (int)ev->pid, WTERMSIG(ev->status), n);
			else
				snprintf(msg, sizeof(msg), "target %d exited with status %d; %u sites retired",
					 (int)ev->pid, WEXITSTATUS(ev->status), n);
		} else if (ev->kind == XFLOW_HOOK_EV_ERROR) {
			t->state = XFLOW_CTL_TARGET_DETACHED;
			t->status = ev->err;
			kind = XFLOW_CTL_EV_TARGET_ERROR;
			snprintf(msg, sizeof(msg), "target %d detached after an error: %s", (int)ev->pid,
				 strerror(-ev->err));
		} else {
			t->state = XFLOW_CTL_TARGET_DETACHED;
			kind = 0;
			snprintf(msg, sizeof(msg), "target %d detached", (int)ev->pid);
		}
		agent_logf(a, kind ? 0 : 1, "%s", msg);
		if (kind)
			send_event(a, kind, ev->pid, kind == XFLOW_CTL_EV_TARGET_ERROR ? ev->err : ev->status, n, msg);
		/* The engine frees its target after EXITED, DETACHED and
		 * ERROR (which it sends instead of DETACHED). */
		t->ht->user_data = NULL;
		t->ht = NULL;
		break;
	}
	default:
		break;
	}
}
