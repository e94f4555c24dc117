/*
 * The agent collector's plans (collectors/acoll_priv.h): each domain's plan
 * built from the compiled flows and that domain's binaries (or kernel BTF),
 * cached by domain name and executable.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "collectors/agent_collector.h"
#include "collectors/builtin.h"
#include "collectors/guest_clock.h"
#include "collectors/xen_discover.h"
#include "weaver/weave.h"
#include "xflow/clock.h"
#include "xflow/control.h"
#include "xflow/flowlang.h"
#include "xflow/plan.h"
#include "xflow/ring.h"
#include "xflow/shm.h"
#include "xflow/xen.h"
#include "xflow/xen_time.h"
#include "collectors/acoll_priv.h"

/* ---- plans ----------------------------------------------------------------------- */

static void site_what(const struct xflow_plan_site *s, char *out, size_t len)
{
	if (s->sname && s->member)
		snprintf(out, len, "access %s.%s (%s)", s->sname, s->member, xflow_plan_site_kind_name(s->kind));
	else
		snprintf(out, len, "%s %s", xflow_plan_site_kind_name(s->kind), s->func ? s->func : "?");
}


/* What the resolve pass says while a plan is built: the first error is the
 * reason a domain cannot be woven; a warning goes to the aspect of its
 * advice (a site left out, an access that could not be typed). */
struct plan_diags {
	struct acoll *c;
	char first_error[768];
	/* Said of the domain, not of an advice (a module skipped). */
	char first_warning[512];
	unsigned domain_warnings;
};

static void plan_diag(void *ctx, const struct jp_plan_diag *d)
{
	struct plan_diags *pd = ctx;
	struct acoll *c = pd->c;
	if (d->sev[0] == 'e') {
		if (!pd->first_error[0])
			snprintf(pd->first_error, sizeof(pd->first_error), "%s: %s", d->where, d->msg);
		return;
	}
	if (d->sev[0] != 'w')
		return; /* a note: where call() put its sites, not a fault */
	if (d->advice < 0 && !pd->domain_warnings++)
		snprintf(pd->first_warning, sizeof(pd->first_warning), "%s", d->msg);
	for (unsigned i = 0; d->advice >= 0 && i < c->naspects; i++) {
		struct aspect *a = &c->aspects[i];
		if (acoll_in_aspect(c, a, (uint32_t)d->advice) && !a->warnings++)
			snprintf(a->first_warning, sizeof(a->first_warning), "%s", d->msg);
	}
}

/* Domain @dom's binaries given with bin=: the @i-th, or NULL. */
static const char *bin_of(const struct acoll *c, const char *dom, unsigned *i)
{
	size_t dl = strlen(dom);
	for (; *i < c->nbins; ++*i)
		if (!strncmp(c->bins[*i], dom, dl) && c->bins[*i][dl] == ':')
			return c->bins[(*i)++] + dl + 1;
	return NULL;
}

/*
 * What a kernel agent's domain is planned with (*out, malloc'd): a kernel
 * given with bin=DOM:kernel:... as given; else, when the agent named its
 * release, this machine's vmlinux if it runs that release (refused
 * otherwise: another release's struct offsets would be silently wrong);
 * plus, either way, the agent's modules, each skipped when this machine
 * has no BTF for it.  An agent that did not name its kernel gets kernel:
 * as it said.  0, or -EINVAL with the error set.
 */
static int kernel_spec(struct acoll *c, const struct peer *p, char **out)
{
	const char *given = NULL, *b;
	for (unsigned i = 0; (b = bin_of(c, p->domain, &i));)
		if (jp_kbtf_is_kernel(b))
			given = b;
	const char *base = given ? given : p->exe;
	if (!given && p->krelease[0]) {
		struct utsname un;
		if (uname(&un) != 0)
			snprintf(un.release, sizeof(un.release), "unknown (uname: %s)", strerror(errno));
		if (strcmp(un.release, p->krelease) != 0) {
			/* The releases first: a Xen peer's source shows 120 bytes. */
			acoll_set_err(c, "cannot weave domain %s: it runs kernel %s, this machine %s; give its BTF: "
				   "bin=%s:kernel:PATH", p->domain, p->krelease, un.release, p->domain);
			return -EINVAL;
		}
		base = JP_KBTF_PREFIX JP_KBTF_DEFAULT;
	}
	const char *mods = p->krelease[0] && p->kmods ? p->kmods : "";
	size_t n = strlen(base) + strlen(mods) + 1;
	if (!(*out = malloc(n)))
		return -ENOMEM;
	snprintf(*out, n, "%s%s", base, mods);
	return 0;
}

struct plan_cache *acoll_plan_for(struct acoll *c, struct peer *p)
{
	char *kspec = NULL;
	if (jp_kbtf_is_kernel(p->exe) && kernel_spec(c, p, &kspec))
		return NULL;
	/* The cache is keyed by what is planned: kernels of one release with
	 * the same modules share a plan. */
	const char *exe = kspec ? kspec : p->exe;
	struct plan_cache *pc = NULL;
	for (unsigned i = 0; i < c->ncache && !pc; i++)
		if (!strcmp(c->cache[i].domain, p->domain) && !strcmp(c->cache[i].exe, exe))
			pc = &c->cache[i];
	if (pc || c->ncache == MAX_PEERS) {
		free(kspec);
		return pc;
	}
	const char *bins[MAX_LIST + 2];
	size_t nb = 0;
	bins[nb++] = exe;
	for (unsigned i = 0; (bins[nb] = bin_of(c, p->domain, &i));)
		if (!kspec || !jp_kbtf_is_kernel(bins[nb]))
			nb++;
	struct jp_domain_spec spec = { p->domain, bins, nb };
	struct plan_diags pd = { .c = c };
	struct jp_plan_opts o = { .on_diag = plan_diag, .diag_ctx = &pd };
	struct xflow_plan *plan = NULL;
	int rc = jp_plan_build(c->unit, &spec, 1, &o, &plan);
	if (rc) {
		acoll_set_err(c, "cannot weave domain %s (%s): %s", p->domain, p->exe,
			pd.first_error[0] ? pd.first_error : strerror(-rc));
		xflow_plan_free(plan);
		free(kspec);
		return NULL;
	}
	/* A module skipped, said once: the plan goes on without it. */
	if (pd.first_warning[0])
		acoll_set_err(c, "agent of %s/%u: %s%s", p->domain, (unsigned)p->domid, pd.first_warning,
			pd.domain_warnings > 1 ? " (and more such)" : "");
	pc = &c->cache[c->ncache];
	char why[256];
	if ((rc = xflow_plan_write(plan, &pc->buf, &pc->len, why, sizeof(why)))) {
		acoll_set_err(c, "cannot write the plan of %s: %s", p->domain, why);
		xflow_plan_free(plan);
		return NULL;
	}
	pc->plan = plan;
	pc->domain = strdup(p->domain);
	pc->exe = kspec ? kspec : strdup(p->exe);
	const struct xflow_plan_domain *d = &plan->domains[0];
	pc->what = calloc(d->nsites + 1, sizeof(*pc->what));
	pc->roles = calloc(d->nsites + 1, sizeof(*pc->roles));
	if (!pc->domain || !pc->exe || !pc->what || !pc->roles) {
		free(pc->domain);
		free(pc->exe);
		free(pc->what);
		free(pc->roles);
		free(pc->buf);
		xflow_plan_free(plan);
		memset(pc, 0, sizeof(*pc));
		return NULL;
	}
	for (uint32_t s = 0; s < d->nsites; s++) {
		site_what(&d->sites[s], pc->what[s], sizeof(pc->what[s]));
		pc->roles[s] = (uint8_t)xflow_plan_site_roles(plan, d, s);
	}
	c->ncache++;
	return pc;
}
