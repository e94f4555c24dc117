/*
 * The agent's plan (guestrt/agent/agent_priv.h): loaded into the hook engine
 * target by target, aspects switched, statistics, unloaded.
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
#include <sys/stat.h>
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

/* ---- plans -------------------------------------------------------------------- */

/* Every installed placement of every target: switched off (@out false)
 * or taken out. */
static void sites_each(struct agent *a, bool out)
{
	for (unsigned i = 0; i < a->ntargets; i++) {
		struct target *t = a->targets[i];
		if (!t->ctx || !t->ht || !a->dom)
			continue;
		for (uint32_t k = 0; k < a->dom->nsites * 2; k++) {
			if (!t->ctx[k].installed)
				continue;
			if (!out) {
				xflow_hook_site_enable(t->ht, t->ctx[k].hook_site, false);
				continue;
			}
			xflow_hook_site_remove(t->ht, t->ctx[k].hook_site);
			t->ctx[k].installed = 0;
		}
	}
}

void agent_sites_stop(struct agent *a)
{
	sites_each(a, false);
}

void agent_sites_remove(struct agent *a)
{
	sites_each(a, true);
}

void agent_plan_unload(struct agent *a)
{
	agent_sites_remove(a);
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

/* The file @t has mapped for @path, or for its executable when the
 * names match and @path is not mapped (the monitor saw it under another
 * path).  A descriptor or -errno; *used says which path. */
static int mapped_open(struct target *t, const char *path, const char **used)
{
	*used = path;
	int fd = xflow_hook_mapped_open(t->pid, path);
	if (fd == -ENOENT && t->exe[0] && strcmp(base_name(t->exe), base_name(path)) == 0)
		fd = xflow_hook_mapped_open(t->pid, *used = t->exe);
	return fd;
}

/* A binary without a build id: the mapped file's size and the hash of the
 * bytes at the plan's sites in it, against what planning recorded
 * (xflow/plan.h).  0, or -ESTALE with both named. */
static int same_code(const struct xflow_plan_domain *d, uint32_t b, struct target *t, char *why, size_t whylen)
{
	const struct xflow_plan_binary *pb = &d->binaries[b];
	const char *path;
	int fd = mapped_open(t, pb->path, &path);
	if (fd < 0)
		return 0; /* not mapped: said by the caller */
	struct stat st;
	int rc = fstat(fd, &st) != 0 ? -errno : 0;
	if (rc) {
		if (snprintf(why, whylen, "process %d: %s: %s", (int)t->pid, path, strerror(-rc)) < 0)
			why[0] = 0;
		goto out;
	}
	if ((uint64_t)st.st_size != pb->size) {
		if (snprintf(why, whylen, "process %d runs %s of %lld bytes without a build id, the plan was made for one of "
			 "%" PRIu64 " bytes", (int)t->pid, path, (long long)st.st_size, pb->size) < 0)
			why[0] = 0;
		rc = -ESTALE;
		goto out;
	}
	uint64_t h = XFLOW_PLAN_HASH_INIT;
	for (uint32_t s = 0; s < d->nsites; s++) {
		const struct xflow_plan_site *ps = &d->sites[s];
		unsigned char insn[16];
		if (ps->binary != b)
			continue;
		int r = ps->len <= sizeof(insn) ? xflow_hook_elf_read_vaddr(fd, ps->addr, insn, ps->len) : -EINVAL;
		if (r) {
			if (snprintf(why, whylen, "process %d runs %s without a build id, and the plan's site %u at %#" PRIx64
				 " is not in it (%s): another build", (int)t->pid, path, s, ps->addr, strerror(-r)) < 0)
				why[0] = 0;
			rc = -ESTALE;
			goto out;
		}
		h = xflow_plan_hash(h, insn, ps->len);
	}
	if (h != pb->code_hash) {
		if (snprintf(why, whylen, "process %d runs %s without a build id, whose code at the plan's sites hashes to "
			 "%016" PRIx64 ", the plan was made for code hashing to %016" PRIx64 ": another build of the same size",
			 (int)t->pid, path, h, pb->code_hash) < 0)
			why[0] = 0;
		rc = -ESTALE;
	}
out:
	close(fd);
	return rc;
}

/* The plan was made for the file @t runs as binary @b (by its path, or
 * as its executable when the names match): same build id, when the plan
 * has one; else the same size and code at the sites, when the plan
 * recorded them.  0, or -ESTALE with both named: the plan's addresses
 * would patch another build's bytes. */
static int same_build(const struct xflow_plan_domain *d, uint32_t b, struct target *t, char *why, size_t whylen)
{
	const struct xflow_plan_binary *pb = &d->binaries[b];
	char mapped[256];
	const char *path = pb->path;
	if (!pb->build_id || !pb->build_id[0])
		return pb->size ? same_code(d, b, t, why, whylen) : 0;
	int rc = xflow_hook_build_id(t->pid, path, mapped, sizeof(mapped));
	if (rc == -ENOENT && t->exe[0] && strcmp(base_name(t->exe), base_name(path)) == 0)
		rc = xflow_hook_build_id(t->pid, path = t->exe, mapped, sizeof(mapped));
	if (rc != 0 || strcmp(mapped, pb->build_id) == 0)
		return 0; /* the same, or nothing to compare (not mapped: said by the caller) */
	/* Cut to whylen if need be (the ids come last). */
	if (snprintf(why, whylen, "process %d runs %s with build id %s, the plan was made for build id %s", (int)t->pid,
		     path, mapped[0] ? mapped : "(none)", pb->build_id) < 0)
		why[0] = 0;
	return -ESTALE;
}

/* Load bases of the plan's binaries in @t: relocatable ones from
 * /proc/PID/maps; the main executable also by name when the monitor saw
 * it under another path.  Each binary the plan has sites in must be the
 * build it was made for. */
static int resolve_bases(struct agent *a, struct target *t, char *why, size_t whylen)
{
	const struct xflow_plan_domain *d = a->dom;
	t->base = calloc(d->nbinaries + 1, sizeof(*t->base));
	if (!t->base)
		return -ENOMEM;
	for (uint32_t b = 0; b < d->nbinaries; b++) {
		uint64_t probe = 0;
		bool found = false;
		for (uint32_t s = 0; s < d->nsites && !found; s++)
			if (d->sites[s].binary == b)
				probe = d->sites[s].addr, found = true;
		if (!found)
			continue;
		const char *path = d->binaries[b].path;
		int rc = same_build(d, b, t, why, whylen);
		if (rc)
			return rc;
		if (!(d->binaries[b].flags & XFLOW_PLAN_BIN_RELOCATABLE))
			continue;
		uint64_t at;
		rc = xflow_hook_resolve(t->pid, path, XFLOW_HOOK_LOC_VADDR, probe, &at);
		if (rc && t->exe[0] && strcmp(base_name(t->exe), base_name(path)) == 0)
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

uint32_t xflow_agent_lane_slots(const struct xflow_plan_domain *d)
{
	uint64_t want = (uint64_t)(d ? d->nbindings : 0) * 1024, slots = 4096;
	while (slots < want && slots < 32768)
		slots *= 2;
	return (uint32_t)slots;
}

/* In-process backend: the plan's program into @t's runtime, with the
 * advice's current switches.  0, or the reason in @why.  Lanes hold what
 * --lane-slots says, else what the plan's placements write: the default
 * 4096 filled at about 13 records a request and 15,000 requests a second
 * on two busy cores. */
static int prog_load_target(struct agent *a, struct target *t, char *why, size_t whylen)
{
	uint32_t slots = a->o.lane_slots ? a->o.lane_slots : xflow_agent_lane_slots(a->dom);
	struct xflow_hook_prog prog = { .plan = a->plan, .dom = a->dom, .fields = a->fields, .bases = t->base,
					.domain_id = a->o.domain_id, .fixed_cpu_plus1 = a->o.vcpu_plus1,
					.lanes = a->o.lanes, .lane_slots = slots,
					.flowtab_capacity = a->o.flowtab_capacity };
	/* The kernel backend's records wait in the BPF ring buffer, not in
	 * lanes: its slices stay as they were (agent.c). */
	a->lane_slots = a->o.backend == XFLOW_AGENT_KERNEL ? 0 : slots;
	agent_logf(a, 1, "pid %d: lanes of %u records (%s)", (int)t->pid, slots,
		   a->o.lane_slots ? "--lane-slots" : "sized from the plan's placements");
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
		rc = a->intarget ? prog_load_target(a, t, why, sizeof(why)) : agent_target_flows(a, t);
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
							       agent_on_hit, c, &c->hook_site);
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
				agent_logf(a, 1, "site %u (%s): %s", s, ps->func ? ps->func : "?", st.why);
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
	agent_plan_unload(a);
	for (unsigned i = 0; i < a->ntargets; i++)
		if (a->targets[i]->flows)
			xflow_flowtab_clear(a->targets[i]->flows);
	a->plan = p;
	a->dom = d;
	a->adv = calloc(p->nadvice + 1, sizeof(*a->adv));
	a->site_first = calloc(d->nsites + 1, sizeof(uint32_t));
	a->site_nb = calloc(d->nsites + 1, sizeof(uint32_t));
	if (!a->adv || !a->site_first || !a->site_nb || fields_build(a)) {
		agent_plan_unload(a);
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
	*total = d->nsites * (agent_targets_alive(a) ? agent_targets_alive(a) : 1);
	uint32_t traps = 0, failed = 0;
	for (uint32_t i = 0; i < fails->n; i++)
		if (fails->v[i].err == 0) {
			traps++;
			agent_logf(a, 1, "%s", fails->v[i].why);
		} else if (failed++ == 0 || a->o.verbose) {
			/* The monitor is told too; the agent's own log says why
			 * where no one reads the monitor's. */
			agent_logf(a, 0, "not installed: %s", fails->v[i].why);
		}
	agent_logf(a, 0, "plan loaded: %u advice, %u sites, %u of %u placements installed in %u targets%s", p->nadvice,
	      d->nsites, *installed, *total, agent_targets_alive(a),
	      !a->intarget ? " (breakpoints)" : a->o.backend == XFLOW_AGENT_KERNEL ? " (BPF programs)"
	      : traps ? "" : " (all by jumps)");
	if (traps)
		agent_logf(a, 0, "%u site(s) by a breakpoint where a jump could not go%s", traps,
		      a->o.verbose ? "" : " (-v says which and why)");
	a->spawned_held = false;
	return 0;
}

int agent_plan_load(struct agent *a, const struct xflow_ctl_msg *req)
{
	a->summary_said = false; /* said again for this monitor's plan */
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
		 agent_targets_alive(a));
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
int agent_plan_file_load(struct agent *a, char *err, size_t errlen)
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

int agent_aspect_set(struct agent *a, const struct xflow_ctl_msg *req)
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
	/* In the targets a flag read at each hit switches the sites, jumps
	 * and breakpoints alike; with the ptrace backend each is a
	 * breakpoint taken out or put back. */
	agent_logf(a, 1, "%s %s %u: %u sites switched (%s)", s->enabled ? "enabled" : "disabled",
		   s->kind == XFLOW_CTL_ASPECT_ADVICE ? "advice" : "flow", s->index, sw,
		   a->intarget ? "a flag the hits read; nothing patched" : "breakpoints taken out or put back");
	struct xflow_ctl_msg m = { .type = XFLOW_CTL_REPLY };
	m.u.reply = (struct xflow_ctl_reply){ .req_seq = req->seq, .req_type = XFLOW_CTL_ASPECT_SET,
					      .message = "" };
	m.u.reply.u.aspect_sites = sw;
	return xflow_ctl_send(&a->conn, &m, NULL, 0, 2000);
}

void agent_fill_targets(const struct agent *a, struct xflow_ctl_target *v, uint32_t *n)
{
	*n = 0;
	for (unsigned i = 0; i < a->ntargets && *n < XFLOW_CTL_MAX_TARGETS; i++) {
		const struct target *t = a->targets[i];
		v[(*n)++] = (struct xflow_ctl_target){ .pid = (uint32_t)t->pid, .state = t->state,
						       .status = t->status, .exe = t->exe };
	}
}

int agent_stats_reply(struct agent *a, const struct xflow_ctl_msg *req)
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
	agent_fill_targets(a, tv, &s->ntargets);
	s->targets = tv;
	/* Read last, just before sending: a monitor over Xen places our
	 * clock by it (collectors/guest_clock.h). */
	s->xen_time = agent_xtime_now(a, &s->xen_minus_mono);
	s->clock_now = xflow_clock_ticks(&a->clock);
	rc = xflow_ctl_send(&a->conn, &m, NULL, 0, 2000);
	if (rc == 0)
		a->stats_answered++;
out:
	free(v);
	free(tv);
	return rc;
}

/* What the agent's records came to, said when it stops or its monitor
 * goes (the targets still attached, their lanes emptied): the records it
 * saved (--plan: the session cannot hold the rest) or sent to the
 * monitor, and those lost on the way, which the monitor's drops must
 * equal. */
void agent_plan_summary(struct agent *a)
{
	if ((!a->o.plan_path && !a->plan) || a->summary_said)
		return;
	a->summary_said = true;
	struct xflow_hook_prog_stats all = { 0 };
	struct xflow_hook_advice_stats one;
	if (a->intarget && xflow_hook_prog_stats(a->hook, 1, &one, &all) < 0)
		memset(&all, 0, sizeof(all));
	uint64_t lost = a->prod.dropped + all.dropped + all.nolane + all.nested + a->not_kept;
	/* The share of what the targets' advice wrote: 34.7 M lost of 35 M
	 * says more than 34.7 M lost.  Loss notes are ours, not the
	 * advice's. */
	uint64_t written = a->records - a->notes + lost;
	char notes[80] = "";
	if (a->notes)
		snprintf(notes, sizeof(notes), "; %" PRIu64 " loss notes among the records %s", a->notes,
			 a->o.plan_path ? "saved" : "sent");
	agent_logf(a, 0, "%s %" PRIu64 " records; lost %" PRIu64 " (%.1f%% of the %" PRIu64 " written): %" PRIu64
		   " to full lanes, %" PRIu64 " to a full ring, %" PRIu64 " of threads without a lane, %" PRIu64
		   " of hits inside hits, %" PRIu64 " past the session's size limit%s",
		   a->o.plan_path ? "saved" : "sent", a->records, lost,
		   written > 0 ? 100.0 * (double)lost / (double)written : 0.0, written, all.dropped, a->prod.dropped,
		   all.nolane, all.nested, a->not_kept, notes);
}

void agent_detach_all(struct agent *a)
{
	agent_plan_unload(a);
	for (unsigned i = 0; i < a->ntargets; i++)
		if (a->targets[i]->ht)
			xflow_hook_detach(a->targets[i]->ht);
}

/* --plan: hand what the ring holds to the record callback.  A callback
 * that fails, or a ring gone corrupt, stops the agent: the records could
 * no longer be kept whole. */
void agent_self_drain(struct agent *a)
{
	struct xflow_record buf[256];
	long n = 0;
	int rc = a->record_rc;
	if (a->exit_rc)
		return; /* stopping already */
	while (!rc && (n = xflow_ring_pop_records(&a->self, buf, 256)) > 0)
		for (long i = 0; i < n && !rc; i++)
			if ((rc = a->o.record(a->o.record_ctx, &buf[i], xflow_clock_to_ns(&a->clock, buf[i].timestamp))) ==
			    1)
				rc = 0, a->not_kept++;
	if (!rc && n >= 0)
		return;
	if (rc)
		agent_logf(a, 0, "cannot keep the records: %s; stopping", strerror(-rc));
	else
		agent_logf(a, 0, "its own ring is corrupt: %s; stopping", a->self.corrupt_why);
	agent_detach_all(a);
	a->quit = true;
	a->exit_rc = rc ? rc : (int)n;
}
