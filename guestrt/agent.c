/*
 * xflow-agent: targets, ring, control socket, plans and the hit handler
 * (guestrt/agent.h).
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

#include "guestrt/agent.h"
#include "guestrt/hook.h"
#include "guestrt/interp.h"
#include "guestrt/kernel_name.h"
#include "xflow/xen_time.h"
#include "xflow/clock.h"
#include "xflow/control.h"
#include "xflow/flowid.h"
#include "xflow/flowlang.h"
#include "xflow/plan.h"
#include "xflow/ring.h"
#include "xflow/shm.h"
#include "xflow/xen.h"
#include "guestrt/agent_xen.h"
#include <libxenvchan.h>

#define MAX_TARGETS 256
/* How long one slice of serving hits lasts before the socket is looked
 * at again (the hook engine has no way to wait on it too). */
#define SLICE_MS 10
#define BUSY_SLICE_MS 2
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
	bool summary_said;   /* --plan: plan_summary() ran */
	int record_rc;       /* --plan: the first failure to keep a record */
	long moved;          /* records the last drain of their lanes moved */
	uint64_t next_id;    /* ptrace backend: flow ids, one space for every table */
	/* The socket and the one monitor. */
	bool xen;            /* the Xen transport instead of the socket */
	struct agent_xen xt;
	int lfd;
	char sock_path[108];
	struct xflow_ctl_conn conn;
	bool connected;
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
	uint32_t seq;
	uint64_t records, faults_total;
	bool quit;
	int exit_rc;
};

static void logf_(struct agent *a, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void logf_(struct agent *a, int level, const char *fmt, ...)
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
static bool xtime_now(struct agent *a, int64_t *d)
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
				logf_(a, 1, "Xen system time: CLOCK_MONOTONIC + %.9f s", (double)v / 1e9);
			a->xtime_said = true;
			a->xtime_d = v;
		} else if (!a->xtime_said && !a->xtime_logged) {
			logf_(a, 1, "Xen system time: not said: %s", why);
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

/* ---- the hit path: no allocation, no lock ----------------------------------- */

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct agent *a = ctx;
	if (len == 0 || len > 8)
		return -EFAULT; /* the interpreter moves 1..8 bytes; 0 = unresolved field */
	if (addr >= XFLOW_INTERP_SCRATCH_BASE && addr - XFLOW_INTERP_SCRATCH_BASE < sizeof(a->scratch)) {
		uint64_t off = addr - XFLOW_INTERP_SCRATCH_BASE;
		if (off + len > sizeof(a->scratch))
			return -EFAULT;
		memcpy(buf, (char *)a->scratch + off, len);
		return 0;
	}
	return xflow_hook_mem_read(a->cur, addr, buf, len);
}

static int mem_write(void *ctx, uint64_t addr, const void *buf, size_t len)
{
	struct agent *a = ctx;
	if (len == 0 || len > 8)
		return -EFAULT;
	if (addr >= XFLOW_INTERP_SCRATCH_BASE && addr - XFLOW_INTERP_SCRATCH_BASE < sizeof(a->scratch)) {
		uint64_t off = addr - XFLOW_INTERP_SCRATCH_BASE;
		if (off + len > sizeof(a->scratch))
			return -EFAULT;
		memcpy((char *)a->scratch + off, buf, len);
		return 0;
	}
	return xflow_hook_mem_write(a->cur, addr, buf, len);
}

static const struct xflow_mem_ops agent_mem_ops = { .read = mem_read, .write = mem_write };

static uint64_t hit_clock(void *ctx)
{
	/* Every record of a hit carries the hit's time: when the program got
	 * there, not when the advice got round to storing. */
	return ((struct agent *)ctx)->hit_ticks;
}

static uint64_t agent_new_id(void *ctx)
{
	struct agent *a = ctx;
	a->next_id = xflow_flowid_after(a->next_id);
	return a->next_id;
}

static int ring_sink(void *ctx, struct xflow_record *r)
{
	struct agent *a = ctx;
	r->thread_seq = a->seq++;
	if (xflow_ring_push_record(&a->prod, r) != 0)
		return -ENOBUFS;
	a->records++;
	return 0;
}

/* struct xflow_hook_regs offsets by DWARF x86-64 register number. */
static const uint8_t dwarf_reg[17] = {
	offsetof(struct xflow_hook_regs, rax) / 8, offsetof(struct xflow_hook_regs, rdx) / 8,
	offsetof(struct xflow_hook_regs, rcx) / 8, offsetof(struct xflow_hook_regs, rbx) / 8,
	offsetof(struct xflow_hook_regs, rsi) / 8, offsetof(struct xflow_hook_regs, rdi) / 8,
	offsetof(struct xflow_hook_regs, rbp) / 8, offsetof(struct xflow_hook_regs, rsp) / 8,
	offsetof(struct xflow_hook_regs, r8) / 8,  offsetof(struct xflow_hook_regs, r9) / 8,
	offsetof(struct xflow_hook_regs, r10) / 8, offsetof(struct xflow_hook_regs, r11) / 8,
	offsetof(struct xflow_hook_regs, r12) / 8, offsetof(struct xflow_hook_regs, r13) / 8,
	offsetof(struct xflow_hook_regs, r14) / 8, offsetof(struct xflow_hook_regs, r15) / 8,
	offsetof(struct xflow_hook_regs, rip) / 8,
};

static int reg_value(const struct xflow_hook_hit *hit, unsigned reg, uint64_t *v)
{
	if (reg > 16)
		return -EINVAL;
	if (reg == 16) {
		/* DWARF locations are computed at the site's address. */
		*v = hit->addr;
		return 0;
	}
	*v = ((const uint64_t *)hit->regs)[dwarf_reg[reg]];
	return 0;
}

/* Input @i of a binding: the struct pointer of target(), or the address of
 * a local_var() (a scratch cell when the variable has none). */
static int fetch(struct agent *a, const struct xflow_hook_hit *hit, const struct target *t,
		 const struct xflow_plan_site *s, const struct xflow_plan_fetch *f, uint8_t in_kind,
		 unsigned i, uint64_t *out)
{
	uint64_t r = 0, x = 0;
	switch (f->kind) {
	case XFLOW_FETCH_REG:
		if (reg_value(hit, f->reg, &r))
			return -EINVAL;
		break;
	case XFLOW_FETCH_MEM:
		if (reg_value(hit, f->reg, &r))
			return -EINVAL;
		*out = r + (uint64_t)f->off;
		return 0;
	case XFLOW_FETCH_STATIC:
		*out = (t && t->base ? t->base[s->binary] : 0) + (uint64_t)f->off;
		return 0;
	case XFLOW_FETCH_VALUE:
		if (reg_value(hit, f->reg, &r))
			return -EINVAL;
		if (f->scale && reg_value(hit, f->index, &x) == 0)
			r += x * f->scale;
		r += (uint64_t)f->off;
		break;
	default:
		return -EINVAL;
	}
	if (in_kind == XFLOW_IN_LOCAL_VAR) {
		a->scratch[i] = r;
		*out = XFLOW_INTERP_SCRATCH_BASE + 8u * i;
	} else {
		*out = r;
	}
	return 0;
}

static void on_hit(const struct xflow_hook_hit *hit, void *data)
{
	struct site_ctx *c = data;
	struct agent *a = c->a;
	if (!a->dom)
		return;
	a->hit_ticks = xflow_clock_ticks(&a->clock);
	a->cur = hit->target;
	const struct target *t = hit->target->user_data;
	if (!t || !t->flows)
		return;
	const struct xflow_plan_site *s = &a->dom->sites[c->psite];
	struct xflow_record tmpl;
	memset(&tmpl, 0, sizeof(tmpl));
	tmpl.site_id = c->psite;
	tmpl.domain_id = a->o.domain_id;
	tmpl.thread_id = (uint32_t)hit->tid;
	uint32_t first = a->site_first[c->psite], end = first + a->site_nb[c->psite];
	/* Bindings are in weave order: xflow-derived advice first, so the
	 * recording advice after it sees the flow ids it set. */
	for (uint32_t bi = first; bi < end; bi++) {
		const struct xflow_plan_binding *b = &a->dom->bindings[bi];
		if (b->when != c->when)
			continue;
		struct advice_rt *ar = &a->adv[b->advice];
		if (!ar->enabled)
			continue;
		const struct xflow_plan_advice *pa = &a->plan->advice[b->advice];
		uint64_t inputs[XFLOW_BC_MAX_INPUTS];
		int bad = 0;
		for (unsigned i = 0; i < b->ninputs && !bad; i++)
			bad = fetch(a, hit, t, s, &a->dom->fetches[b->first_fetch + i], pa->prog.inputs[i].kind, i,
				    &inputs[i]);
		ar->hits++;
		if (bad) {
			ar->faults++;
			a->faults_total++;
			continue;
		}
		struct xflow_interp_env env = {
			.prog = &pa->prog, .inputs = inputs, .fields = a->fields, .flows = t->flows,
			.mem = &agent_mem_ops, .mem_ctx = a, .pc = hit->addr,
			.clock = hit_clock, .clock_ctx = a, .new_id = agent_new_id, .new_id_ctx = a,
			.sink = ring_sink, .sink_ctx = a,
			.tmpl = &tmpl,
			.marker_flags = pa->origin != XFLOW_ADVICE_USER ? pa->rec_flags : 0,
		};
		struct xflow_interp_result res;
		xflow_interp_run(&env, &res);
		ar->drops += res.dropped;
		if (res.rc) {
			ar->faults++;
			a->faults_total++;
		}
	}
	a->cur = NULL;
}

/* ---- targets ------------------------------------------------------------------ */

static struct target *target_add(struct agent *a, struct xflow_hook_target *ht)
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
static int target_flows(struct agent *a, struct target *t)
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

static void target_free(struct target *t)
{
	if (t->flows)
		xflow_flowtab_fini(t->flows);
	free(t->flows);
	free(t);
}

static unsigned targets_alive(const struct agent *a)
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

static void on_event(const struct xflow_hook_event *ev, void *data)
{
	struct agent *a = data;
	struct target *t = ev->target ? ev->target->user_data : NULL;
	char msg[160];
	switch (ev->kind) {
	case XFLOW_HOOK_EV_FORK:
		if (ev->child) {
			struct target *c = target_add(a, ev->child);
			if (c && t && t->ctx && a->dom) {
				/* The child inherits the parent's probes with the
				 * same ids and handler data, and starts its own flows
				 * (its objects are not its parent's). */
				c->ctx = t->ctx;
				c->base = t->base;
				if (target_flows(a, c))
					logf_(a, 0, "no memory for the flows of child %d: its hits are not served",
					      (int)ev->child_pid);
			}
			logf_(a, 1, "target %d forked %d (probes inherited)", (int)ev->pid, (int)ev->child_pid);
		}
		break;
	case XFLOW_HOOK_EV_EXEC: {
		uint32_t n = t ? installed_sites(a, t) : 0;
		if (t && t->ctx)
			for (uint32_t i = 0; i < a->dom->nsites * 2; i++)
				t->ctx[i].installed = 0;
		snprintf(msg, sizeof(msg), "target %d ran exec: its %u sites are retired", (int)ev->pid, n);
		logf_(a, 0, "%s", msg);
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
		logf_(a, kind ? 0 : 1, "%s", msg);
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

/* ---- plans -------------------------------------------------------------------- */

static void plan_unload(struct agent *a)
{
	for (unsigned i = 0; i < a->ntargets; i++) {
		struct target *t = a->targets[i];
		if (t->ctx && t->ht && a->dom)
			for (uint32_t k = 0; k < a->dom->nsites * 2; k++)
				if (t->ctx[k].installed)
					xflow_hook_site_remove(t->ht, t->ctx[k].hook_site);
	}
	/* Forked children share their parent's tables: free each once. */
	for (unsigned i = 0; i < a->ntargets; i++) {
		struct target *t = a->targets[i];
		void *ctx = t->ctx, *base = t->base;
		if (!ctx && !base)
			continue;
		for (unsigned j = i; j < a->ntargets; j++)
			if (a->targets[j]->ctx == ctx && a->targets[j]->base == base)
				a->targets[j]->ctx = NULL, a->targets[j]->base = NULL;
		free(ctx);
		free(base);
	}
	free(a->fields);
	free(a->adv);
	free(a->site_first);
	free(a->site_nb);
	a->fields = NULL;
	a->adv = NULL;
	a->site_first = a->site_nb = NULL;
	xflow_plan_free(a->plan);
	a->plan = NULL;
	a->dom = NULL;
}

/* Is any enabled advice bound at (site, when)? */
static bool placement_wanted(const struct agent *a, uint32_t site, unsigned when)
{
	uint32_t first = a->site_first[site], end = first + a->site_nb[site];
	for (uint32_t bi = first; bi < end; bi++) {
		const struct xflow_plan_binding *b = &a->dom->bindings[bi];
		if (b->when == when && a->adv[b->advice].enabled)
			return true;
	}
	return false;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Load bases of the plan's binaries in @t: relocatable ones from
 * /proc/PID/maps; the main executable also by name when the monitor saw
 * it under another path. */
static int resolve_bases(struct agent *a, struct target *t, char *why, size_t whylen)
{
	const struct xflow_plan_domain *d = a->dom;
	t->base = calloc(d->nbinaries + 1, sizeof(*t->base));
	if (!t->base)
		return -ENOMEM;
	for (uint32_t b = 0; b < d->nbinaries; b++) {
		if (!(d->binaries[b].flags & XFLOW_PLAN_BIN_RELOCATABLE))
			continue;
		uint64_t probe = 0;
		bool found = false;
		for (uint32_t s = 0; s < d->nsites && !found; s++)
			if (d->sites[s].binary == b)
				probe = d->sites[s].addr, found = true;
		if (!found)
			continue;
		uint64_t at;
		int rc = xflow_hook_resolve(t->pid, d->binaries[b].path, XFLOW_HOOK_LOC_VADDR, probe, &at);
		if (rc && t->exe[0] && strcmp(base_name(t->exe), base_name(d->binaries[b].path)) == 0)
			rc = xflow_hook_resolve(t->pid, t->exe, XFLOW_HOOK_LOC_VADDR, probe, &at);
		if (rc) {
			snprintf(why, whylen, "%s is not mapped in process %d (%s)", d->binaries[b].path,
				 (int)t->pid, strerror(-rc));
			return rc;
		}
		t->base[b] = at - probe;
	}
	return 0;
}

struct fail_list {
	struct xflow_ctl_site_fail v[XFLOW_CTL_MAX_FAILED];
	char why[XFLOW_CTL_MAX_FAILED][256];
	uint32_t n, total;
	uint32_t failed; /* of total, not installed (the others: breakpoints) */
};

static void fail_add(struct fail_list *f, uint32_t site, int err, const char *why)
{
	if (f->n < XFLOW_CTL_MAX_FAILED) {
		size_t k = strnlen(why, sizeof(f->why[0]) - 1);
		memcpy(f->why[f->n], why, k);
		f->why[f->n][k] = 0;
		/* err 0: installed, but by a breakpoint (the reason says why). */
		f->v[f->n] = (struct xflow_ctl_site_fail){ .site = site, .err = err <= 0 ? err : -EINVAL,
							   .why = f->why[f->n] };
		f->n++;
	}
	f->total++;
	f->failed += err != 0;
}

/* In-process backend: the plan's program into @t's runtime, with the
 * advice's current switches.  0, or the reason in @why. */
static int prog_load_target(struct agent *a, struct target *t, char *why, size_t whylen)
{
	struct xflow_hook_prog prog = { .plan = a->plan, .dom = a->dom, .fields = a->fields, .bases = t->base,
					.domain_id = a->o.domain_id, .lanes = a->o.lanes,
					.lane_slots = a->o.lane_slots, .flowtab_capacity = a->o.flowtab_capacity };
	int rc = xflow_hook_prog_load(t->ht, &prog);
	for (uint32_t i = 0; rc == 0 && i < a->plan->nadvice; i++)
		if (!a->adv[i].enabled)
			rc = xflow_hook_advice_enable(t->ht, i, false);
	if (rc)
		snprintf(why, whylen, "pid %d: cannot load the program: %s", (int)t->pid,
			 xflow_hook_last_error(a->hook)[0] ? xflow_hook_last_error(a->hook) : strerror(-rc));
	return rc;
}

/* Probe every placement of the plan in @t.  Returns sites fully installed;
 * sites the in-process backend serves with a breakpoint are listed in
 * @fails with error 0 and the reason. */
static uint32_t plan_install_target(struct agent *a, struct target *t, struct fail_list *fails)
{
	const struct xflow_plan_domain *d = a->dom;
	char why[256];
	uint32_t ok = 0;
	t->ctx = calloc((size_t)d->nsites * 2 + 1, sizeof(*t->ctx));
	if (!t->ctx) {
		fail_add(fails, 0, -ENOMEM, "out of memory");
		return 0;
	}
	int rc = resolve_bases(a, t, why, sizeof(why));
	if (rc == 0)
		rc = a->intarget ? prog_load_target(a, t, why, sizeof(why)) : target_flows(a, t);
	if (rc) {
		if (rc == -ENOMEM)
			snprintf(why, sizeof(why), "pid %d: out of memory", (int)t->pid);
		for (uint32_t s = 0; s < d->nsites; s++)
			fail_add(fails, s, rc, why);
		return 0;
	}
	for (uint32_t s = 0; s < d->nsites; s++) {
		const struct xflow_plan_site *ps = &d->sites[s];
		bool all = true;
		for (unsigned w = 0; w < 2; w++) {
			struct site_ctx *c = &t->ctx[s * 2 + w];
			*c = (struct site_ctx){ .a = a, .psite = s, .when = (uint8_t)w };
			if (!(ps->when_mask & (1u << w)))
				continue;
			uint64_t addr = ps->addr + t->base[ps->binary];
			/* In the target, the site's advice is plan site s's. */
			rc = a->intarget ? xflow_hook_site_add(t->ht, addr, w ? XFLOW_HOOK_AFTER : XFLOW_HOOK_BEFORE,
							       NULL, (void *)(uintptr_t)s, &c->hook_site)
					 : xflow_hook_site_add(t->ht, addr, w ? XFLOW_HOOK_AFTER : XFLOW_HOOK_BEFORE,
							       on_hit, c, &c->hook_site);
			if (rc) {
				snprintf(why, sizeof(why), "pid %d, %s:%u (%s) at %#" PRIx64 ": %s", (int)t->pid,
					 ps->file ? ps->file : "?", ps->line, ps->func ? ps->func : "?", addr,
					 xflow_hook_last_error(a->hook)[0] ? xflow_hook_last_error(a->hook)
									   : strerror(-rc));
				fail_add(fails, s, rc, why);
				all = false;
				continue;
			}
			c->installed = 1;
			c->on = 1;
			struct xflow_hook_site_stats st;
			/* The kernel backend says what serves the site and what
			 * it cost the verifier. */
			if (a->o.backend == XFLOW_AGENT_KERNEL && xflow_hook_site_stats(t->ht, c->hook_site, &st) == 0)
				logf_(a, 1, "site %u (%s): %s", s, ps->func ? ps->func : "?", st.why);
			if (a->intarget && xflow_hook_site_stats(t->ht, c->hook_site, &st) == 0 &&
			    st.mech == XFLOW_HOOK_MECH_TRAP_INTARGET) {
				snprintf(why, sizeof(why), "pid %d, %s:%u (%s) at %#" PRIx64 ": a breakpoint: %s",
					 (int)t->pid, ps->file ? ps->file : "?", ps->line, ps->func ? ps->func : "?",
					 addr, st.why);
				fail_add(fails, s, 0, why);
			}
			/* The in-process backend switches advice, not sites. */
			if (!a->intarget && !placement_wanted(a, s, w)) {
				xflow_hook_site_enable(t->ht, c->hook_site, false);
				c->on = 0;
			}
		}
		ok += all;
	}
	return ok;
}

/* Field layouts of the plan's domain as the interpreter wants them. */
static int fields_build(struct agent *a)
{
	a->fields = calloc(a->plan->nfields + 1, sizeof(*a->fields));
	if (!a->fields)
		return -ENOMEM;
	xflow_interp_fields(a->plan, a->dom, a->fields);
	return 0;
}

/* Make @p the agent's plan (taken: freed on failure too): its domain, the
 * advice's run-time state, and every placement installed in every live
 * target, the failures in @fails.  0 with the counts, or a negative errno
 * with @why. */
static int plan_take(struct agent *a, struct xflow_plan *p, struct fail_list *fails, uint32_t *installed,
		     uint32_t *total, char *why, size_t whylen)
{
	const struct xflow_plan_domain *d = NULL;
	for (uint32_t i = 0; i < p->ndomains; i++)
		if (strcmp(p->domains[i].name, a->o.domain) == 0)
			d = &p->domains[i];
	if (!d && p->ndomains == 1)
		d = &p->domains[0];
	if (!d) {
		xflow_plan_free(p);
		snprintf(why, whylen, "the plan has no domain '%s'", a->o.domain);
		return -ENOENT;
	}
	plan_unload(a);
	for (unsigned i = 0; i < a->ntargets; i++)
		if (a->targets[i]->flows)
			xflow_flowtab_clear(a->targets[i]->flows);
	a->plan = p;
	a->dom = d;
	a->adv = calloc(p->nadvice + 1, sizeof(*a->adv));
	a->site_first = calloc(d->nsites + 1, sizeof(uint32_t));
	a->site_nb = calloc(d->nsites + 1, sizeof(uint32_t));
	if (!a->adv || !a->site_first || !a->site_nb || fields_build(a)) {
		plan_unload(a);
		snprintf(why, whylen, "out of memory loading the plan");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < p->nadvice; i++)
		a->adv[i].enabled = true;
	/* Bindings are sorted by site (the reader checked it). */
	for (uint32_t bi = d->nbindings; bi-- > 0;) {
		const struct xflow_plan_binding *b = &d->bindings[bi];
		a->site_first[b->site] = bi;
		a->site_nb[b->site]++;
		a->adv[b->advice].sites++;
	}
	*installed = 0;
	for (unsigned i = 0; i < a->ntargets; i++)
		if (a->targets[i]->ht)
			*installed += plan_install_target(a, a->targets[i], fails);
	*total = d->nsites * (targets_alive(a) ? targets_alive(a) : 1);
	uint32_t traps = 0, failed = 0;
	for (uint32_t i = 0; i < fails->n; i++)
		if (fails->v[i].err == 0) {
			traps++;
			logf_(a, 1, "%s", fails->v[i].why);
		} else if (failed++ == 0 || a->o.verbose) {
			/* The monitor is told too; the agent's own log says why
			 * where no one reads the monitor's. */
			logf_(a, 0, "not installed: %s", fails->v[i].why);
		}
	logf_(a, 0, "plan loaded: %u advice, %u sites, %u of %u placements installed in %u targets%s", p->nadvice,
	      d->nsites, *installed, *total, targets_alive(a),
	      !a->intarget ? " (breakpoints)" : a->o.backend == XFLOW_AGENT_KERNEL ? " (BPF programs)"
	      : traps ? "" : " (all by jumps)");
	if (traps)
		logf_(a, 0, "%u site(s) by a breakpoint where a jump could not go%s", traps,
		      a->o.verbose ? "" : " (-v says which and why)");
	a->spawned_held = false;
	return 0;
}

static int plan_load(struct agent *a, const struct xflow_ctl_msg *req)
{
	char why[512];
	struct xflow_plan *p;
	int rc = xflow_plan_read(req->u.plan_load.plan, req->u.plan_load.plan_len, &p, why, sizeof(why));
	if (rc)
		return xflow_ctl_reply_simple(&a->conn, req, rc, "plan refused: %s", why);
	struct fail_list *fails = calloc(1, sizeof(*fails));
	uint32_t installed, total;
	if (!fails) {
		xflow_plan_free(p);
		return xflow_ctl_reply_simple(&a->conn, req, -ENOMEM, "out of memory loading the plan");
	}
	if ((rc = plan_take(a, p, fails, &installed, &total, why, sizeof(why)))) {
		free(fails);
		return xflow_ctl_reply_simple(&a->conn, req, rc, "%s", why);
	}
	struct xflow_ctl_msg m = { .type = XFLOW_CTL_REPLY };
	char text[256];
	snprintf(text, sizeof(text), "%u of %u sites installed in %u target(s)", installed, total,
		 targets_alive(a));
	m.u.reply = (struct xflow_ctl_reply){ .req_seq = req->seq, .req_type = XFLOW_CTL_PLAN_LOAD,
					      .status = installed || !total ? 0 : -ENOENT, .message = text };
	/* Failed sites are reported by plan index; the counts are per target. */
	m.u.reply.u.plan = (struct xflow_ctl_plan_result){ .sites = total, .installed = installed,
							   .nfailed_total = fails->total, .nfailed = fails->n,
							   .failed = fails->v };
	for (uint32_t i = 0; i < fails->n; i++)
		if (fails->v[i].site >= total)
			fails->v[i].site = total ? total - 1 : 0;
	if (!total)
		m.u.reply.u.plan.nfailed = 0, m.u.reply.u.plan.nfailed_total = 0;
	rc = xflow_ctl_send(&a->conn, &m, NULL, 0, 2000);
	free(fails);
	return rc;
}

/* --plan: a plan written by `xflowc plan -o`, loaded at start for tracing
 * without a monitor.  Every placement must go in: with no monitor to tell,
 * a site missing would be a silent hole in the records. */
static int plan_file_load(struct agent *a, char *err, size_t errlen)
{
	char why[512];
	struct xflow_plan *p;
	int rc = xflow_plan_read_file(a->o.plan_path, &p, why, sizeof(why));
	if (rc) {
		snprintf(err, errlen, "--plan: %s", why); /* it names the file */
		return rc;
	}
	struct fail_list *fails = calloc(1, sizeof(*fails));
	uint32_t installed, total;
	if (!fails) {
		xflow_plan_free(p);
		return -ENOMEM;
	}
	if ((rc = plan_take(a, p, fails, &installed, &total, why, sizeof(why))))
		snprintf(err, errlen, "--plan %s: %s", a->o.plan_path, why);
	else if (fails->failed) {
		/* Sites served by a breakpoint (error 0) are installed. */
		uint32_t k = 0;
		while (k + 1 < fails->n && fails->v[k].err == 0)
			k++;
		snprintf(err, errlen, "--plan %s: %u of %u sites installed; the first failure: %s", a->o.plan_path,
			 installed, total, fails->why[k]);
		rc = fails->v[k].err < 0 ? fails->v[k].err : -ENOENT;
	}
	free(fails);
	if (!rc && (rc = xflow_ring_consumer_init(&a->self, a->shm.base, a->shm.size, XFLOW_RECORD_SIZE, NULL)))
		snprintf(err, errlen, "cannot read its own ring: %s", a->self.corrupt_why);
	return rc;
}

/* Make every target's breakpoints follow the advice's enabled flags. */
static uint32_t placements_sync(struct agent *a)
{
	uint32_t switched = 0;
	for (unsigned i = 0; i < a->ntargets; i++) {
		struct target *t = a->targets[i];
		if (!t->ht || !t->ctx)
			continue;
		for (uint32_t k = 0; k < a->dom->nsites * 2; k++) {
			struct site_ctx *c = &t->ctx[k];
			if (!c->installed)
				continue;
			bool want = placement_wanted(a, c->psite, c->when);
			if (want != (bool)c->on && xflow_hook_site_enable(t->ht, c->hook_site, want) == 0) {
				c->on = want;
				switched++;
			}
		}
	}
	return switched;
}

/* In-process backend: the advice's flags in every target's runtime (read
 * at each hit: no stop, no patch).  Returns the sites of the advice whose
 * flag changed. */
static uint32_t advice_sync(struct agent *a, const bool *was)
{
	uint32_t switched = 0;
	for (uint32_t i = 0; i < a->plan->nadvice; i++) {
		if (a->adv[i].enabled == was[i])
			continue;
		for (unsigned k = 0; k < a->ntargets; k++)
			if (a->targets[k]->ht && a->targets[k]->ctx)
				xflow_hook_advice_enable(a->targets[k]->ht, i, a->adv[i].enabled);
		switched += a->adv[i].sites;
	}
	return switched;
}

static int aspect_set(struct agent *a, const struct xflow_ctl_msg *req)
{
	const struct xflow_ctl_aspect_set *s = &req->u.aspect;
	if (!a->plan)
		return xflow_ctl_reply_simple(&a->conn, req, -ENOENT, "no plan loaded");
	unsigned n = 0;
	bool *was = calloc(a->plan->nadvice + 1, sizeof(*was));
	if (!was)
		return xflow_ctl_reply_simple(&a->conn, req, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < a->plan->nadvice; i++)
		was[i] = a->adv[i].enabled;
	for (uint32_t i = 0; i < a->plan->nadvice; i++) {
		const struct xflow_plan_advice *pa = &a->plan->advice[i];
		bool match = s->kind == XFLOW_CTL_ASPECT_ADVICE ? i == s->index
								: pa->origin != XFLOW_ADVICE_USER && pa->flow >= 0 &&
									  (uint32_t)pa->flow == s->index;
		if (match) {
			a->adv[i].enabled = s->enabled;
			n++;
		}
	}
	if (!n) {
		free(was);
		return xflow_ctl_reply_simple(&a->conn, req, -ENOENT, "no %s %u in the plan",
					      s->kind == XFLOW_CTL_ASPECT_ADVICE ? "advice" : "flow", s->index);
	}
	uint32_t sw = a->intarget ? advice_sync(a, was) : placements_sync(a);
	free(was);
	logf_(a, 1, "%s %s %u: %u breakpoints switched", s->enabled ? "enabled" : "disabled",
	      s->kind == XFLOW_CTL_ASPECT_ADVICE ? "advice" : "flow", s->index, sw);
	struct xflow_ctl_msg m = { .type = XFLOW_CTL_REPLY };
	m.u.reply = (struct xflow_ctl_reply){ .req_seq = req->seq, .req_type = XFLOW_CTL_ASPECT_SET,
					      .message = "" };
	m.u.reply.u.aspect_sites = sw;
	return xflow_ctl_send(&a->conn, &m, NULL, 0, 2000);
}

static void fill_targets(const struct agent *a, struct xflow_ctl_target *v, uint32_t *n)
{
	*n = 0;
	for (unsigned i = 0; i < a->ntargets && *n < XFLOW_CTL_MAX_TARGETS; i++) {
		const struct target *t = a->targets[i];
		v[(*n)++] = (struct xflow_ctl_target){ .pid = (uint32_t)t->pid, .state = t->state,
						       .status = t->status, .exe = t->exe };
	}
}

static int stats_reply(struct agent *a, const struct xflow_ctl_msg *req)
{
	uint32_t nadv = a->plan ? a->plan->nadvice : 0;
	struct xflow_ctl_advice_stats *v = calloc(nadv + 1, sizeof(*v));
	struct xflow_ctl_target *tv = calloc(a->ntargets + 1, sizeof(*tv));
	int rc = -ENOMEM;
	if (!v || !tv)
		goto out;
	uint64_t lost = 0, faults = a->faults_total;
	if (a->intarget && nadv) {
		/* Counted in the targets' lanes: every hit there, every fault,
		 * every record a full lane or a lane-less thread lost. */
		struct xflow_hook_advice_stats *in = calloc(nadv, sizeof(*in));
		struct xflow_hook_prog_stats all;
		if (!in)
			goto out;
		xflow_hook_prog_stats(a->hook, nadv, in, &all);
		for (uint32_t i = 0; i < nadv; i++) {
			a->adv[i].hits = in[i].hits;
			a->adv[i].faults = in[i].faults;
			a->adv[i].drops = in[i].drops;
			faults += in[i].faults;
		}
		lost = all.dropped + all.nolane + all.nested;
		free(in);
	}
	for (uint32_t i = 0; i < nadv; i++)
		v[i] = (struct xflow_ctl_advice_stats){ .hits = a->adv[i].hits, .drops = a->adv[i].drops,
							.faults = a->adv[i].faults, .sites = a->adv[i].sites,
							.enabled = a->adv[i].enabled };
	struct xflow_ctl_msg m = { .type = XFLOW_CTL_REPLY };
	m.u.reply = (struct xflow_ctl_reply){ .req_seq = req->seq, .req_type = XFLOW_CTL_STATS, .message = "" };
	struct xflow_ctl_stats *s = &m.u.reply.u.stats;
	s->records = a->records;
	s->ring_dropped = a->prod.dropped + lost;
	s->faults_total = faults;
	s->nadvice = nadv;
	s->advice = v;
	fill_targets(a, tv, &s->ntargets);
	s->targets = tv;
	/* Read last, just before sending: a monitor over Xen places our
	 * clock by it (collectors/guest_clock.h). */
	s->xen_time = xtime_now(a, &s->xen_minus_mono);
	s->clock_now = xflow_clock_ticks(&a->clock);
	rc = xflow_ctl_send(&a->conn, &m, NULL, 0, 2000);
out:
	free(v);
	free(tv);
	return rc;
}

/* --plan: what the session cannot hold, said when the agent stops (the
 * targets still attached, their lanes emptied): the records it saved, and
 * those lost on the way, which no monitor would otherwise be told of. */
static void plan_summary(struct agent *a)
{
	if (!a->o.plan_path || a->summary_said)
		return;
	a->summary_said = true;
	struct xflow_hook_prog_stats all = { 0 };
	struct xflow_hook_advice_stats one;
	if (a->intarget && xflow_hook_prog_stats(a->hook, 1, &one, &all) < 0)
		memset(&all, 0, sizeof(all));
	uint64_t lost = a->prod.dropped + all.dropped + all.nolane + all.nested;
	logf_(a, 0, "saved %" PRIu64 " records; lost %" PRIu64 ": %" PRIu64 " to full lanes, %" PRIu64
		    " to a full ring, %" PRIu64 " of threads without a lane, %" PRIu64 " of hits inside hits",
	      a->records, lost, all.dropped, a->prod.dropped, all.nolane, all.nested);
}

static void detach_all(struct agent *a)
{
	plan_unload(a);
	for (unsigned i = 0; i < a->ntargets; i++)
		if (a->targets[i]->ht)
			xflow_hook_detach(a->targets[i]->ht);
}

/* --plan: hand what the ring holds to the record callback.  A callback
 * that fails, or a ring gone corrupt, stops the agent: the records could
 * no longer be kept whole. */
static void self_drain(struct agent *a)
{
	struct xflow_record buf[256];
	long n = 0;
	int rc = a->record_rc;
	if (a->exit_rc)
		return; /* stopping already */
	while (!rc && (n = xflow_ring_pop_records(&a->self, buf, 256)) > 0)
		for (long i = 0; i < n && !rc; i++)
			rc = a->o.record(a->o.record_ctx, &buf[i], xflow_clock_to_ns(&a->clock, buf[i].timestamp));
	if (!rc && n >= 0)
		return;
	if (rc)
		logf_(a, 0, "cannot keep the records: %s; stopping", strerror(-rc));
	else
		logf_(a, 0, "its own ring is corrupt: %s; stopping", a->self.corrupt_why);
	detach_all(a);
	a->quit = true;
	a->exit_rc = rc ? rc : (int)n;
}

/* ---- the monitor -------------------------------------------------------------- */

/* Publish what the producer holds; over Xen also move it into the record
 * vchan (what does not fit waits in the ring).  A record vchan whose
 * monitor end is gone ends the connection. */
static void monitor_gone(struct agent *a, const char *why);

static void lane_record(void *ctx, const struct xflow_record *r)
{
	struct agent *a = ctx;
	if (a->o.plan_path) {
		/* --plan: the targets' records go straight to the session,
		 * not through the agent's ring (encoded into it and decoded
		 * out again, a third of the agent's time per record).  A
		 * failure stops the agent in self_drain(). */
		if (!a->record_rc)
			a->record_rc = a->o.record(a->o.record_ctx, r, xflow_clock_to_ns(&a->clock, r->timestamp));
		if (!a->record_rc)
			a->records++;
		return;
	}
	/* Full: dropped and counted by the producer, like any other. */
	if (xflow_ring_push_record(&a->prod, r) == 0)
		a->records++;
}

static void ring_flush_out(struct agent *a)
{
	/* In-process: the targets' lanes first, in each thread's order. */
	if (a->intarget)
		a->moved = xflow_hook_drain(a->hook, lane_record, a, 0);
	xflow_ring_flush(&a->prod);
	if (a->o.plan_path)
		self_drain(a);
	if (a->xen && a->connected && agent_xen_pump(&a->xt) == -EPIPE)
		monitor_gone(a, "its record vchan closed");
}

static int ring_reset(struct agent *a)
{
	int rc = xflow_ring_format(a->shm.base, a->shm.size, XFLOW_RECORD_SIZE, a->ring_slots, a->clock.kind);
	if (rc == 0)
		rc = xflow_ring_producer_init(&a->prod, a->shm.base, a->shm.size, &a->notifier.base,
					      a->o.batch ? a->o.batch : 64);
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
			logf_(a, 0, "%s; stopping", err);
			detach_all(a);
			a->quit = true;
			a->exit_rc = -EIO;
		}
	}
}

static void monitor_gone(struct agent *a, const char *why)
{
	logf_(a, 0, "the monitor went away (%s)%s", why, a->o.stay ? "; waiting for the next one" : "");
	xen_time_reader_close(&a->xtime_r);
	xflow_hook_control_fd(a->hook, -1);
	xflow_ctl_conn_close(&a->conn);
	a->connected = false;
	if (a->o.stay) {
		/* Nobody reads the ring: take the probes out until the next
		 * monitor sends its plan. */
		plan_unload(a);
	} else {
		detach_all(a);
		a->quit = true;
	}
	xen_reoffer(a);
}

static void monitor_greet(struct agent *a);

static void monitor_accept(struct agent *a)
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
static void monitor_accept_xen(struct agent *a)
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
	if (ring_reset(a) != 0 || (a->xen && agent_xen_pump_start(&a->xt, a->shm.base, a->shm.size) != 0)) {
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
	fill_targets(a, tv, &h->ntargets);
	h->targets = tv;
	/* A kernel agent's domain is planned with its own modules and
	 * refused when the monitor's kernel is another release. */
	struct agent_kernel_name kn = { 0 };
	if (a->o.backend == XFLOW_AGENT_KERNEL && agent_kernel_name_read(&kn, NULL) == 0) {
		h->kernel_release = kn.release;
		h->nmodules = kn.nmods;
		h->modules = kn.modv;
		if (kn.left_out)
			logf_(a, 0, "%u module name(s) of /sys/kernel/btf left out of the HELLO", kn.left_out);
	}
	h->xen_time = xtime_now(a, &h->xen_minus_mono);
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
		logf_(a, 0, "cannot greet the monitor: %s", strerror(-rc));
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
	logf_(a, 0, "monitor connected%s", a->xen ? " over vchan" : "");
}

static void monitor_serve(struct agent *a)
{
	for (;;) {
		struct xflow_ctl_msg *m;
		int rc = xflow_ctl_recv(&a->conn, &m, 0);
		if (rc == 0)
			return;
		if (rc < 0) {
			xflow_ctl_refuse(&a->conn); /* a refused frame: say why, then close */
			monitor_gone(a, rc == -ECONNRESET ? "closed" : a->conn.why ? a->conn.why : strerror(-rc));
			return;
		}
		switch (m->type) {
		case XFLOW_CTL_PLAN_LOAD:
			rc = plan_load(a, m);
			break;
		case XFLOW_CTL_ASPECT_SET:
			rc = aspect_set(a, m);
			break;
		case XFLOW_CTL_STATS:
			rc = stats_reply(a, m);
			break;
		case XFLOW_CTL_DETACH:
			ring_flush_out(a);
			rc = xflow_ctl_reply_simple(&a->conn, m, 0, "detaching");
			xflow_ctl_msg_free(m);
			logf_(a, 0, "detach asked by the monitor");
			xen_time_reader_close(&a->xtime_r);
			xflow_hook_control_fd(a->hook, -1);
			if (a->o.stay) {
				plan_unload(a);
			} else {
				detach_all(a);
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
			monitor_gone(a, strerror(-rc));
			return;
		}
	}
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
		if ((rc = xflow_hook_attach(a->hook, (pid_t)pid, &ht)) == 0 && target_add(a, ht))
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
			logf_(a, 1, "Xen system time: not said: %s", why);
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
		logf_(a, 1, "clock anchor: %s", tsc.why);
	}
	size_t size = xflow_ring_region_size(XFLOW_RECORD_SIZE, a->ring_slots);
	if ((rc = xflow_shm_create("xflow-agent-ring", size, &a->shm)) ||
	    (rc = xflow_eventfd_notifier_init(&a->notifier, -1)) || (rc = ring_reset(a))) {
		snprintf(err, errlen, "cannot create the ring: %s", strerror(-rc));
		goto fail;
	}
	if (o->flowtab_capacity > (1u << 30)) {
		snprintf(err, errlen, "the flow-id table's capacity must be at most %u live keys", 1u << 30);
		rc = -EINVAL;
		goto fail;
	}
	struct xflow_hook_config cfg = { .fork_policy = XFLOW_HOOK_FORK_INHERIT, .on_event = on_event,
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
		if ((rc = xflow_hook_attach(a->hook, o->pids[i], &ht)) || !target_add(a, ht)) {
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
		if ((rc = xflow_hook_attach(a->hook, 0, &ht)) || !(t = target_add(a, ht))) {
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
		if ((rc = xflow_hook_spawn(a->hook, o->argv, &ht)) || !target_add(a, ht)) {
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
		if ((rc = plan_file_load(a, err, errlen)))
			goto fail;
		logf_(a, 0, "tracing %u target(s) with the plan %s, no monitor (clock %s)", a->ntargets, o->plan_path,
		      a->clock.kind == XFLOW_CLOCK_TSC ? "tsc" : "monotonic");
		*out = (struct xflow_agent *)a;
		return 0;
	}
	if (a->xen) {
		if ((rc = agent_xen_offer(&a->xt, err, errlen)))
			goto fail;
		logf_(a, 0, "serving %u target(s) over vchan, offered at %s (clock %s)", a->ntargets, a->xt.base,
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
	logf_(a, 0, "serving %u target(s) on %s (clock %s)", a->ntargets, a->sock_path,
	      a->clock.kind == XFLOW_CLOCK_TSC ? "tsc" : "monotonic");
	*out = (struct xflow_agent *)a;
	return 0;
fail:
	xflow_agent_free((struct xflow_agent *)a);
	return rc;
}

int xflow_agent_run(struct xflow_agent *xa, int *signo)
{
	struct agent *a = (struct agent *)xa;
	if (signo)
		*signo = 0;
	while (!a->quit) {
		if (a->connected)
			monitor_serve(a);
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
				monitor_accept_xen(a);
			else
				monitor_accept(a);
		}
		if (targets_alive(a) && !a->spawned_held) {
			/* While records flow, lanes are emptied more often, so that
			 * a burst fits in them. */
			int rc = xflow_hook_run(a->hook, a->moved > 0 ? BUSY_SLICE_MS : SLICE_MS);
			ring_flush_out(a);
			if (rc == -EINTR) {
				int why = xflow_hook_stop_reason(a->hook);
				if (why == -1) {
					/* The engine detached everything already. */
					monitor_gone(a, "hung up");
				} else {
					if (signo)
						*signo = why > 0 ? why : 0;
					ring_flush_out(a);
					plan_summary(a);
					logf_(a, 0, "stopped by %s; every target detached",
					      why > 0 ? strsignal(why) : "request");
					detach_all(a);
					a->quit = true;
				}
			}
			continue;
		}
		if (!targets_alive(a) && !a->spawned_held) {
			ring_flush_out(a);
			plan_summary(a);
			logf_(a, 0, "no target left");
			if (a->connected)
				monitor_serve(a);
			break;
		}
		/* Held: wait on the socket, waking for signals too. */
		p[1].fd = a->connected ? a->conn.fd : -1;
		poll(p, 2, 50);
		int why = xflow_hook_stop_reason(a->hook);
		if (why > 0) {
			if (signo)
				*signo = why;
			detach_all(a);
			break;
		}
	}
	ring_flush_out(a);
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

void xflow_agent_free(struct xflow_agent *xa)
{
	struct agent *a = (struct agent *)xa;
	if (!a)
		return;
	if (a->hook) {
		detach_all(a);
		xflow_hook_signals_uninstall(a->hook);
		xflow_hook_free(a->hook);
	}
	plan_unload(a);
	xen_time_reader_close(&a->xtime_r);
	for (unsigned i = 0; i < a->ntargets; i++)
		target_free(a->targets[i]);
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
