/*
 * The agent collector: records from xflow-agents (guestrt/agent/agent.h) through
 * their rings, driven with the control protocol (xflow/control.h).
 *
 * Options (comma-separated key=value, keys repeatable where said):
 *   socket=PATH    an agent's control socket (repeatable)
 *   dir=DIR        every socket in DIR; without socket=, dir= or xen, the
 *                  agents' default directory (xflow_ctl_default_dir())
 *   flows=FILE     a flow file to weave (repeatable; at least one)
 *   bin=DOM:PATH   another binary of domain DOM (a shared library ...),
 *                  besides the executable each agent names (repeatable)
 *   timeout=MS     how long an agent may take to load its plan, and to
 *                  greet (over Xen at most 10 s) (default 30000)
 *
 * At open the collector connects to every agent, takes the ring it offers,
 * compiles the flow files once, builds each domain's plan from the binaries
 * of that domain (cached by domain name and executable, so guests running
 * the same kernel share one) and sends it.  Records are read from the rings
 * and their timestamps converted with the monitor's own calibration (the
 * agent's, from its HELLO, only when the two clocks differ in kind).  A ring
 * that turns out corrupt, or an agent that goes away, is reported and
 * dropped; the others go on.
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

#include "collectors/agent.h"
#include "collectors/builtin.h"
#include "collectors/guest_clock.h"
#include "collectors/xen_discover.h"
#include "weaver/joinpoint.h"
#include "weaver/kbtf.h"
#include "weaver/unit.h"
#include "xflow/clock.h"
#include "xflow/control.h"
#include "xflow/flowlang.h"
#include "xflow/plan.h"
#include "xflow/ring.h"
#include "xflow/shm.h"
#include "xflow/xen.h"
#include "xflow/xen_time.h"
#include <libxenvchan.h>

#define MAX_PEERS 256 /* agents seen in a run, gone ones included */
#define MAX_LIST 64
#define STATS_EVERY_NS 200000000u /* the monitor refreshes every second or so */
#define POP_CHUNK 256
/* An agent over Xen gets this long to greet (its plan, timeout= whole:
 * a kernel agent answers once the verifier has passed every program, and
 * waiting costs nothing here, as no read waits on a guest); a domain whose
 * offer failed is not tried again for XEN_RETRY_NS. */
#define XEN_STEP_MS 10000
#define XEN_RETRY_NS 30000000000ull
/* A guest's clock further than this from ours is moved onto ours. */
#define XEN_CLOCK_SKEW_NS 1000000000ll

struct plan_cache {
	char *domain, *exe;
	struct xflow_plan *plan;
	void *buf;        /* the plan's bytes, as sent */
	size_t len;
	char (*what)[96]; /* per site, for site_info */
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
	 * clock, and within how much (the greeting's, then each shorter STATS
	 * one's); whatever else places it is checked against them. */
	int64_t rt_offset_ns;
	uint64_t rt_bound_ns;
	/* The bound reported (peer_clock_bound): a lower one only once the
	 * records placed under the higher one are old (bound_next from
	 * bound_until on). */
	uint64_t bound_held, bound_next, bound_until;
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
	uint32_t installed, sites;
	/* Plan sites the agent serves with a breakpoint (its in-process
	 * backend could not put a jump there), and the first reason. */
	uint8_t *trap;
	uint32_t ntrap;
	char trap_why[256];
	uint64_t records, bad;
	/* The last STATS. */
	struct xflow_ctl_advice_stats *adv;
	uint32_t nadv;
	uint64_t ring_dropped;
	bool stats_pending;
	uint64_t stats_sent_ns;
	char source[200];
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
	int xen_step_ms;             /* the greeting's: timeout=, at most XEN_STEP_MS */
	/* Over Xen: discovery, and the domains whose offer failed lately. */
	bool xen;
	struct xen_discover *xd;
	struct failed_offer {
		uint32_t domid;
		uint64_t until_ns;
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

static void set_err(struct acoll *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(struct acoll *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
}

/* ---- peers ------------------------------------------------------------------ */

static void peer_drop(struct acoll *c, struct peer *p, const char *why)
{
	(void)c;
	if (p->connected)
		xflow_ctl_conn_close(&p->conn);
	p->connected = false;
	p->gone = true;
	if (why)
		set_err(c, "agent %s (domain %s/%u): %s", p->path, p->domain, (unsigned)p->domid, why);
}

static void peer_free(struct peer *p)
{
	if (p->connected)
		xflow_ctl_conn_close(&p->conn);
	if (p->rec)
		libxenvchan_close(p->rec);
	if (p->nt.base.ops && p->nt.base.ops->close)
		p->nt.base.ops->close(&p->nt.base);
	xflow_shm_release(&p->shm);
	free(p->adv);
	free(p->trap);
	free(p->kmods);
	free(p);
}

/* A clock that converts the agent's ticks when it counts another kind
 * of clock than ours. */
static void agent_clock_from_hello(struct xflow_clock *k, const struct xflow_ctl_hello *h)
{
	memset(k, 0, sizeof(*k));
	k->kind = (enum xflow_clock_kind)h->clock;
	if (k->kind == XFLOW_CLOCK_TSC) {
		k->tsc_hz = h->tsc_hz;
		k->base_tick = h->base_tick;
		k->base_ns = h->base_ns;
		k->mult = (uint64_t)(((unsigned __int128)1000000000u << 32) / h->tsc_hz);
	}
}

/* Take a HELLO's description of the agent (not its ring). */
static void peer_take_hello(struct peer *p, const struct xflow_ctl_hello *h)
{
	if (!p->xen) {
		/* Over Xen the domain is xenstore's, set when it was found. */
		p->domid = h->domain_id;
		snprintf(p->domain, sizeof(p->domain), "%s", h->domain);
	}
	p->agent_pid = h->agent_pid;
	p->ntargets = h->ntargets;
	for (uint32_t i = 0; i < h->ntargets && !p->exe[0]; i++) {
		if (h->targets[i].exe[0]) {
			snprintf(p->exe, sizeof(p->exe), "%s", h->targets[i].exe);
		} else if (!p->xen) {
			char link[64];
			snprintf(link, sizeof(link), "/proc/%u/exe", h->targets[i].pid);
			ssize_t n = readlink(link, p->exe, sizeof(p->exe) - 1);
			p->exe[n > 0 ? n : 0] = 0;
		}
	}
	/* The decoder let through only names of [A-Za-z0-9_-]: nothing in
	 * them reads as a path or another item of the spec. */
	p->krelease[0] = 0;
	free(p->kmods);
	p->kmods = NULL;
	if (!jp_kbtf_is_kernel(p->exe) || !h->kernel_release || !h->kernel_release[0])
		return;
	snprintf(p->krelease, sizeof(p->krelease), "%s", h->kernel_release);
	size_t len = 1;
	for (uint32_t i = 0; i < h->nmodules; i++)
		len += strlen(h->modules[i]) + 2;
	if (!(p->kmods = malloc(len)))
		return;
	char *w = p->kmods;
	*w = 0;
	for (uint32_t i = 0; i < h->nmodules; i++)
		w += sprintf(w, "+?%s", h->modules[i]);
}

/* Connect and take the HELLO and its ring. */
static int peer_connect(struct acoll *c, struct peer *p)
{
	int fd = xflow_ctl_connect(p->path);
	if (fd < 0) {
		set_err(c, "agent socket %s: %s", p->path, strerror(-fd));
		return fd;
	}
	int rc = xflow_ctl_conn_init_unix(&p->conn, fd);
	if (rc) {
		close(fd);
		return rc;
	}
	p->connected = true;
	struct xflow_ctl_msg *m = NULL;
	rc = xflow_ctl_recv(&p->conn, &m, c->timeout_ms);
	if (rc <= 0) {
		set_err(c, "agent socket %s: no greeting (%s)", p->path,
			rc == 0 ? "timed out" : p->conn.why ? p->conn.why : strerror(-rc));
		return rc ? rc : -ETIMEDOUT;
	}
	if (m->type == XFLOW_CTL_REPLY) {
		set_err(c, "agent socket %s: %s", p->path, m->u.reply.message);
		rc = m->u.reply.status ? m->u.reply.status : -EPROTO;
		goto out;
	}
	if (m->type != XFLOW_CTL_HELLO || m->u.hello.ring_offer != XFLOW_CTL_RING_LOCAL) {
		set_err(c, "agent socket %s: expected a HELLO with a local ring, got %s", p->path,
			xflow_ctl_type_name(m->type));
		rc = -EPROTO;
		goto out;
	}
	const struct xflow_ctl_hello *h = &m->u.hello;
	peer_take_hello(p, h);
	/* The descriptors become ours; the message must not close them. */
	int memfd = m->fds[0], efd = m->fds[1];
	m->fds[0] = m->fds[1] = -1;
	if ((rc = xflow_eventfd_notifier_init(&p->nt, efd))) {
		close(memfd);
		goto out;
	}
	if ((rc = xflow_shm_map(memfd, h->region_size, &p->shm))) {
		set_err(c, "agent %s: cannot map its ring: %s", p->path, strerror(-rc));
		goto out;
	}
	if ((rc = xflow_ring_consumer_init(&p->cons, p->shm.base, p->shm.size, XFLOW_RECORD_SIZE, &p->nt.base))) {
		set_err(c, "agent %s: bad ring: %s", p->path, p->cons.corrupt_why);
		goto out;
	}
	if (p->cons.nslots != h->nslots || (unsigned)p->cons.clock != h->clock) {
		set_err(c, "agent %s: the ring and its HELLO disagree", p->path);
		rc = -EPROTO;
		goto out;
	}
	agent_clock_from_hello(&p->agent_clock, h);
	p->conv = p->cons.clock == c->clock.kind ? &c->clock : &p->agent_clock;
	p->ring_ok = true;
	snprintf(p->source, sizeof(p->source), "xflow-agent pid %u via %s", p->agent_pid, p->path);
out:
	xflow_ctl_msg_free(m);
	return rc;
}

/* ---- plans ----------------------------------------------------------------------- */

static void site_what(const struct xflow_plan_site *s, char *out, size_t len)
{
	if (s->sname && s->member)
		snprintf(out, len, "access %s.%s (%s)", s->sname, s->member, xflow_plan_site_kind_name(s->kind));
	else
		snprintf(out, len, "%s %s", xflow_plan_site_kind_name(s->kind), s->func ? s->func : "?");
}

static bool in_aspect(const struct acoll *c, const struct aspect *a, uint32_t i);

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
	if (d->advice < 0 && !pd->domain_warnings++)
		snprintf(pd->first_warning, sizeof(pd->first_warning), "%s", d->msg);
	for (unsigned i = 0; d->advice >= 0 && i < c->naspects; i++) {
		struct aspect *a = &c->aspects[i];
		if (in_aspect(c, a, (uint32_t)d->advice) && !a->warnings++)
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
			set_err(c, "cannot weave domain %s: it runs kernel %s, this machine %s; give its BTF: "
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

static struct plan_cache *plan_for(struct acoll *c, struct peer *p)
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
		set_err(c, "cannot weave domain %s (%s): %s", p->domain, p->exe,
			pd.first_error[0] ? pd.first_error : strerror(-rc));
		xflow_plan_free(plan);
		free(kspec);
		return NULL;
	}
	/* A module skipped, said once: the plan goes on without it. */
	if (pd.first_warning[0])
		set_err(c, "agent of %s/%u: %s%s", p->domain, (unsigned)p->domid, pd.first_warning,
			pd.domain_warnings > 1 ? " (and more such)" : "");
	pc = &c->cache[c->ncache];
	char why[256];
	if ((rc = xflow_plan_write(plan, &pc->buf, &pc->len, why, sizeof(why)))) {
		set_err(c, "cannot write the plan of %s: %s", p->domain, why);
		xflow_plan_free(plan);
		return NULL;
	}
	pc->plan = plan;
	pc->domain = strdup(p->domain);
	pc->exe = kspec ? kspec : strdup(p->exe);
	const struct xflow_plan_domain *d = &plan->domains[0];
	pc->what = calloc(d->nsites + 1, sizeof(*pc->what));
	if (!pc->domain || !pc->exe || !pc->what) {
		free(pc->domain);
		free(pc->exe);
		free(pc->what);
		free(pc->buf);
		xflow_plan_free(plan);
		memset(pc, 0, sizeof(*pc));
		return NULL;
	}
	for (uint32_t s = 0; s < d->nsites; s++)
		site_what(&d->sites[s], pc->what[s], sizeof(pc->what[s]));
	c->ncache++;
	return pc;
}

static void handle_stats(struct peer *p, const struct xflow_ctl_stats *s)
{
	if (s->nadvice != p->nadv) {
		free(p->adv);
		p->adv = calloc(s->nadvice + 1, sizeof(*p->adv));
		p->nadv = p->adv ? s->nadvice : 0;
	}
	if (p->adv && s->nadvice)
		memcpy(p->adv, s->advice, s->nadvice * sizeof(*p->adv));
	p->ring_dropped = s->ring_dropped;
	uint32_t alive = 0;
	for (uint32_t i = 0; i < s->ntargets; i++)
		alive += s->targets[i].state == XFLOW_CTL_TARGET_RUNNING;
	p->ntargets = alive;
}

/* A live Xen peer's source line: where from, and how its clock is placed. */
static void xen_peer_source(struct peer *p)
{
	snprintf(p->source, sizeof(p->source), "xflow-agent pid %u via vchan from domain %u%s%s", p->agent_pid,
		 (unsigned)p->domid, p->clock_how[0] ? ", " : "", p->clock_how);
}

static void bound_note(struct peer *p);

/* A guest's clock placed by its greeting's round trip is placed again by
 * each shorter STATS round trip: under Xen the greeting's takes tens of
 * milliseconds where the hops across domains are tens of microseconds.
 * Placed otherwise, the round trips go on, to check and bound it. */
static void peer_clock_refine(struct peer *p, const struct xflow_ctl_stats *s)
{
	if (!p->xen || !p->rt_bound_ns || !s->clock_now)
		return;
	uint64_t agent_ns = xflow_clock_to_ns(p->conv, s->clock_now);
	if (!guest_clock_refine(&p->rt_offset_ns, &p->rt_bound_ns, p->stats_sent_ns, xflow_monotonic_ns(), agent_ns))
		return;
	bound_note(p);
	if (p->clk != PEER_CLOCK_RT)
		return; /* they only check what placed it */
	p->offset_ns = p->rt_offset_ns;
	snprintf(p->clock_how, sizeof(p->clock_how), "clock by round trip, within %.3fms",
		 (double)p->rt_bound_ns / 1e6);
	if (p->state == PEER_LIVE)
		xen_peer_source(p);
}

/* How far @p's record times may be from ours (xflow_domain_info's
 * clock_bound_ns): what its placement proves.  A TSC anchor is checked
 * against its greeting's latency to microseconds; Xen's time is exact
 * where Xen keeps one time (its hosts), but what is proven is only that
 * it agrees with the round trips, so their bound and the distance. */
static uint64_t clock_bound_now(const struct peer *p)
{
	if (!p->xen)
		return 0; /* on our own clock */
	switch (p->clk) {
	case PEER_CLOCK_TSC:
		return 10000;
	case PEER_CLOCK_RT:
		return p->rt_bound_ns;
	case PEER_CLOCK_XTIME: {
		if (!p->rt_bound_ns)
			return UINT64_MAX;
		int64_t d = p->offset_ns - p->rt_offset_ns;
		return (uint64_t)(d < 0 ? -d : d) + p->rt_bound_ns;
	}
	default:
		return UINT64_MAX;
	}
}

/* A record keeps the error of the placement it got.  The model keeps, with
 * each side waiting in its join, the bound it had when it applied the
 * side; what the hold covers is the time a record takes to be applied
 * after it was placed (the model's reorder window, its refresh of the
 * bounds once a second), with room to spare. */
#define BOUND_HOLD_NS (10ull * 1000 * 1000 * 1000)

/* The placement of @p's clock changed, or may have: a higher bound is
 * reported at once, a lower one once BOUND_HOLD_NS have passed since the
 * last change, for records placed before it. */
static void bound_note(struct peer *p)
{
	uint64_t b = clock_bound_now(p);
	if (b >= p->bound_held || !p->records) {
		p->bound_held = p->bound_next = b;
		p->bound_until = 0;
	} else if (b != p->bound_next) {
		p->bound_next = b;
		p->bound_until = xflow_monotonic_ns() + BOUND_HOLD_NS;
	}
}

/* What xflow_domain_info says: what @p's records still waiting in the
 * model may be off by. */
static uint64_t peer_clock_bound(struct peer *p)
{
	bound_note(p);
	if (p->bound_until && xflow_monotonic_ns() >= p->bound_until) {
		p->bound_held = p->bound_next;
		p->bound_until = 0;
	}
	return p->bound_held;
}

#define XTIME_HOW "clock by Xen system time"

/* Every guest that said Xen's system time against its clock is placed on
 * ours by it, once ours is known: both clocks are Xen's time less a
 * constant, so the difference of the constants is exact, where a round
 * trip leaves half of itself unknown.  A guest's word is checked against
 * what its round trips proved: outside their bound (with a millisecond to
 * spare) it is refused, said once, and the round trips keep the clock. */
static void xtime_place(struct acoll *c)
{
	if (!c->xtime)
		return;
	for (unsigned i = 0; i < c->npeers; i++) {
		struct peer *p = c->peers[i];
		if (!p->xen || !p->xtime || p->xtime_refused || p->gone || p->clk == PEER_CLOCK_TSC)
			continue;
		int64_t off = p->xtime_d - c->xtime_d;
		uint64_t dist = off > p->rt_offset_ns ? (uint64_t)(off - p->rt_offset_ns)
						      : (uint64_t)(p->rt_offset_ns - off);
		if (p->rt_bound_ns && dist > p->rt_bound_ns + 1000000) {
			p->xtime_refused = true;
			set_err(c,
				"agent of %s/%u: its Xen system time puts its clock %.3f ms from where its round trips "
				"put it (within %.3f ms): not believed",
				p->domain, (unsigned)p->domid, (double)dist / 1e6, (double)p->rt_bound_ns / 1e6);
			if (p->clk == PEER_CLOCK_XTIME) {
				/* It said otherwise before: back to the round trips. */
				p->clk = PEER_CLOCK_RT;
				p->offset_ns = p->rt_offset_ns;
				bound_note(p);
				snprintf(p->clock_how, sizeof(p->clock_how), "clock by round trip, within %.3fms",
					 (double)p->rt_bound_ns / 1e6);
				if (p->state == PEER_LIVE)
					xen_peer_source(p);
			}
			continue;
		}
		p->offset_ns = off;
		p->clk = PEER_CLOCK_XTIME;
		bound_note(p);
		/* With what the round trips say of it: the evidence. */
		if (p->rt_bound_ns)
			snprintf(p->clock_how, sizeof(p->clock_how), XTIME_HOW "; round trips %+.3fms, within %.3fms",
				 (double)(p->rt_offset_ns - off) / 1e6, (double)p->rt_bound_ns / 1e6);
		else
			snprintf(p->clock_how, sizeof(p->clock_how), XTIME_HOW);
		if (p->state == PEER_LIVE)
			xen_peer_source(p);
	}
}

/* Our own side, read again when due. */
static void xtime_ours(struct acoll *c, uint64_t now)
{
	if (c->xtime_never || (c->xtime && now - c->xtime_at < XFLOW_XEN_TIME_EVERY_NS))
		return;
	c->xtime_at = now;
	int64_t d;
	int rc = xen_time_reader_read(&c->xtime_r, &d, c->xtime_why, sizeof(c->xtime_why));
	if (rc == 0) {
		c->xtime = true;
		c->xtime_d = d;
		xtime_place(c);
	} else if (rc != -EINVAL && !c->xtime) {
		/* No BPF, no kallsyms, not root: for good.  Another
		 * clocksource (-EINVAL) may yet become Xen's. */
		c->xtime_never = true;
	}
}

/* A guest's HELLO or STATS reply said Xen's system time (or not). */
static void xtime_heard(struct acoll *c, struct peer *p, bool said, int64_t d)
{
	if (!said || !p->xen)
		return;
	p->xtime = true;
	p->xtime_d = d;
	if (!c->xtime && c->xtime_why[0] && !c->xtime_why_said) {
		c->xtime_why_said = true;
		set_err(c, "agent: the guests say Xen's system time, but ours cannot be read (%s): their clocks are "
			   "placed by round trips",
			c->xtime_why);
	}
	xtime_place(c);
}

/* Take one message from @p's control socket.  1: one handled, 0: none
 * ready, < 0: the agent is gone or broke the protocol.  *reply_seq gets a
 * REPLY's req_seq (PLAN_LOAD replies are returned in *plan_reply). */
static int peer_control(struct acoll *c, struct peer *p, int timeout_ms, struct xflow_ctl_msg **plan_reply)
{
	struct xflow_ctl_msg *m;
	int rc = xflow_ctl_recv(&p->conn, &m, timeout_ms);
	if (rc <= 0)
		return rc;
	switch (m->type) {
	case XFLOW_CTL_REPLY:
		if (m->u.reply.req_type == XFLOW_CTL_STATS) {
			p->stats_pending = false;
			if (m->u.reply.status == 0) {
				handle_stats(p, &m->u.reply.u.stats);
				peer_clock_refine(p, &m->u.reply.u.stats);
				xtime_heard(c, p, m->u.reply.u.stats.xen_time, m->u.reply.u.stats.xen_minus_mono);
			}
		} else if (m->u.reply.req_type == XFLOW_CTL_PLAN_LOAD && plan_reply &&
			   m->u.reply.req_seq == p->plan_seq) {
			*plan_reply = m;
			return 1;
		} else if (m->u.reply.status) {
			set_err(c, "agent of %s/%u: %s", p->domain, (unsigned)p->domid, m->u.reply.message);
		}
		break;
	case XFLOW_CTL_EVENT:
		set_err(c, "agent of %s/%u: %s", p->domain, (unsigned)p->domid, m->u.event.message);
		break;
	default:
		set_err(c, "agent of %s/%u sent an unexpected %s", p->domain, (unsigned)p->domid,
			xflow_ctl_type_name(m->type));
		xflow_ctl_msg_free(m);
		return -EPROTO;
	}
	xflow_ctl_msg_free(m);
	return 1;
}

/* The PLAN_LOAD of @p's plan (p->pc). */
static struct xflow_ctl_msg plan_load_msg(const struct peer *p)
{
	struct xflow_ctl_msg m = { .type = XFLOW_CTL_PLAN_LOAD };
	m.u.plan_load.plan = p->pc->buf;
	m.u.plan_load.plan_len = (uint32_t)p->pc->len;
	return m;
}

/* Take the answer @r to @p's plan (and free it): its counts, and a
 * partial failure as the last error.  Returns the agent's status; when it
 * refused, @why says so with the agent's reason. */
static int take_plan_reply(struct acoll *c, struct peer *p, struct xflow_ctl_msg *r, char *why, size_t whylen)
{
	const struct xflow_ctl_reply *rp = &r->u.reply;
	const struct xflow_ctl_plan_result *pr = &rp->u.plan;
	int rc = rp->status;
	p->installed = pr->installed;
	p->sites = pr->sites;
	free(p->trap);
	p->ntrap = pr->sites;
	p->trap = calloc(p->ntrap + 1, 1);
	p->trap_why[0] = 0;
	const struct xflow_ctl_site_fail *first = NULL;
	for (uint32_t i = 0; i < pr->nfailed; i++) {
		const struct xflow_ctl_site_fail *f = &pr->failed[i];
		if (f->err < 0) {
			first = first ? first : f;
			continue;
		}
		if (p->trap && f->site < p->ntrap)
			p->trap[f->site] = 1;
		if (!p->trap_why[0])
			snprintf(p->trap_why, sizeof(p->trap_why), "%s", f->why);
	}
	if (rc)
		snprintf(why, whylen, "refused the plan: %s", rp->message);
	else if (first)
		set_err(c, "agent of %s/%u: %s; first failure: %s", p->domain, (unsigned)p->domid, rp->message,
			first->why);
	xflow_ctl_msg_free(r);
	return rc;
}

static int peer_send_plan(struct acoll *c, struct peer *p)
{
	p->pc = plan_for(c, p);
	if (!p->pc)
		return -EINVAL;
	struct xflow_ctl_msg m = plan_load_msg(p);
	int rc = xflow_ctl_send(&p->conn, &m, NULL, 0, c->timeout_ms);
	p->plan_seq = m.seq;
	if (rc)
		set_err(c, "agent %s: cannot send the plan: %s", p->path, strerror(-rc));
	return rc;
}

static int peer_wait_plan(struct acoll *c, struct peer *p)
{
	uint64_t deadline = xflow_monotonic_ns() + (uint64_t)c->timeout_ms * 1000000u;
	for (;;) {
		struct xflow_ctl_msg *r = NULL;
		uint64_t now = xflow_monotonic_ns();
		if (now >= deadline) {
			set_err(c, "agent %s: no answer to the plan", p->path);
			return -ETIMEDOUT;
		}
		int rc = peer_control(c, p, (int)((deadline - now) / 1000000u) + 1, &r);
		if (rc < 0) {
			set_err(c, "agent %s: %s", p->path, p->conn.why ? p->conn.why : strerror(-rc));
			return rc;
		}
		if (!r)
			continue;
		char why[sizeof(c->err)];
		rc = take_plan_reply(c, p, r, why, sizeof(why));
		if (rc)
			set_err(c, "agent of %s/%u %s", p->domain, (unsigned)p->domid, why);
		return rc;
	}
}

/* ---- peers over Xen -------------------------------------------------------------- */

static bool offer_backing_off(const struct acoll *c, uint32_t domid, uint64_t now)
{
	for (unsigned i = 0; i < c->nfailed; i++)
		if (c->failed[i].domid == domid && now < c->failed[i].until_ns)
			return true;
	return false;
}

/* A domain whose offer failed is left alone for a while: a guest that
 * keeps offering garbage costs us one attempt per XEN_RETRY_NS. */
static void offer_failed(struct acoll *c, uint32_t domid)
{
	uint64_t now = xflow_monotonic_ns();
	unsigned slot = c->nfailed < MAX_PEERS ? c->nfailed : 0;
	for (unsigned i = 0; i < c->nfailed; i++)
		if (c->failed[i].domid == domid || c->failed[i].until_ns <= now) {
			slot = i;
			break;
		}
	if (slot == c->nfailed)
		c->nfailed++;
	c->failed[slot] = (struct failed_offer){ .domid = domid, .until_ns = now + XEN_RETRY_NS };
}

static void xen_peer_fail(struct acoll *c, struct peer *p, const char *why)
{
	offer_failed(c, p->domid);
	if (p->rec)
		libxenvchan_close(p->rec);
	p->rec = NULL;
	p->ring_ok = false;
	snprintf(p->source, sizeof(p->source), "xflow-agent pid %u over vchan: %.120s", p->agent_pid, why);
	peer_drop(c, p, why);
}

/* A scan found @o: connect unless we already have this domain's agent. */
static void xen_found(void *ctx, const struct xen_offer *o)
{
	struct acoll *c = ctx;
	uint64_t now = xflow_monotonic_ns();
	if (o->busy || offer_backing_off(c, o->domid, now))
		return;
	for (unsigned i = 0; i < c->npeers; i++)
		if (c->peers[i]->xen && !c->peers[i]->gone && c->peers[i]->domid == o->domid)
			return;
	if (c->npeers == MAX_PEERS) {
		set_err(c, "agent: more than %d agents in this run; %s/%u not followed", MAX_PEERS, o->name,
			(unsigned)o->domid);
		offer_failed(c, o->domid);
		return;
	}
	struct peer *p = calloc(1, sizeof(*p));
	if (!p)
		return;
	p->xen = true;
	p->domid = o->domid;
	p->agent_pid = o->agent_pid;
	snprintf(p->domain, sizeof(p->domain), "%s", o->name);
	snprintf(p->path, sizeof(p->path), "%s", o->path);
	snprintf(p->tag, sizeof(p->tag), "%s", o->tag);
	char path[128];
	snprintf(path, sizeof(path), "%s/ctl", o->path);
	struct libxenvchan *v = libxenvchan_client_init(NULL, (int)o->domid, path);
	if (!v) {
		set_err(c, "agent of %s/%u: cannot connect to its control vchan %s: %s", o->name, (unsigned)o->domid,
			path, strerror(errno ? errno : EIO));
		offer_failed(c, o->domid);
		free(p);
		return;
	}
	xflow_ctl_conn_init_vchan(&p->conn, v);
	p->connected = true;
	p->state = PEER_HELLO;
	/* The agent greets once it sees us connected: its HELLO left after
	 * this, which bounds the latency its TSC anchor may claim. */
	p->since_ns = xflow_monotonic_ns();
	p->deadline_ns = now + (uint64_t)c->xen_step_ms * 1000000ull;
	snprintf(p->source, sizeof(p->source), "xflow-agent pid %u over vchan: connecting", p->agent_pid);
	c->peers[c->npeers++] = p;
}

/* Rescan xenstore when it changed: new offers, destroyed domains,
 * agents that withdrew. */
static void xen_tick(struct acoll *c, uint64_t now)
{
	xtime_ours(c, now);
	if (!xen_discover_due(c->xd, now))
		return;
	for (unsigned i = 0; i < c->npeers; i++) {
		struct peer *p = c->peers[i];
		if (!p->xen || p->gone)
			continue;
		if (!xen_discover_domain_alive(c->xd, p->domid)) {
			snprintf(p->source, sizeof(p->source), "xflow-agent pid %u over vchan: the domain is gone",
				 p->agent_pid);
			peer_drop(c, p, "the domain is gone");
		} else if (!xen_discover_offer_present(c->xd, p->domid, p->tag)) {
			snprintf(p->source, sizeof(p->source), "xflow-agent pid %u over vchan: the agent withdrew",
				 p->agent_pid);
			peer_drop(c, p, "the agent withdrew its offer");
		}
	}
	unsigned malformed = 0;
	if (xen_discover_scan(c->xd, xen_found, c, &malformed) < 0)
		set_err(c, "agent: cannot read xenstore: %s", strerror(errno));
	else if (malformed)
		c->bad_offers += malformed;
}

/* Take the HELLO of an agent found over Xen, connect its record vchan and
 * send its plan. */
static void xen_peer_hello(struct acoll *c, struct peer *p, uint64_t now)
{
	struct xflow_ctl_msg *m = NULL;
	char why[200];
	int rc = xflow_ctl_recv(&p->conn, &m, 0);
	if (rc == 0) {
		if (now > p->deadline_ns)
			xen_peer_fail(c, p, "no greeting in time");
		return;
	}
	if (rc < 0) {
		xen_peer_fail(c, p, p->conn.why ? p->conn.why : strerror(-rc));
		return;
	}
	if (m->type == XFLOW_CTL_REPLY) {
		snprintf(why, sizeof(why), "refused: %s", m->u.reply.message);
		goto fail;
	}
	if (m->type != XFLOW_CTL_HELLO || m->u.hello.ring_offer != XFLOW_CTL_RING_VCHAN) {
		snprintf(why, sizeof(why), "expected a HELLO offering a vchan, got %s", xflow_ctl_type_name(m->type));
		goto fail;
	}
	const struct xflow_ctl_hello *h = &m->u.hello;
	peer_take_hello(p, h);
	agent_clock_from_hello(&p->agent_clock, h);
	p->conv = h->clock == (uint16_t)c->clock.kind ? &c->clock : &p->agent_clock;
	if (h->clock == XFLOW_CLOCK_MONOTONIC && h->base_ns) {
		struct guest_clock_in in = { .tsc_hz = h->tsc_hz, .base_tick = h->base_tick, .base_ns = h->base_ns,
					     .since_ns = p->since_ns };
		xflow_clock_pair(&in.now_tick, &in.now_ns);
		/* Our TSC is trusted where our own records use it only. */
		if (c->clock.kind != XFLOW_CLOCK_TSC)
			in.tsc_hz = 0;
		char cwhy[240];
		enum guest_clock_how how = guest_clock_offset(&in, &p->offset_ns, cwhy, sizeof(cwhy));
		if (how == GUEST_CLOCK_TSC_REFUSED)
			set_err(c, "agent of %s/%u: %s", p->domain, (unsigned)p->domid, cwhy);
		if (how == GUEST_CLOCK_TSC) {
			p->clk = PEER_CLOCK_TSC;
			snprintf(p->clock_how, sizeof(p->clock_how), "clock by TSC anchor");
		} else {
			/* Tightened by the STATS round trips that follow. */
			p->clk = PEER_CLOCK_RT;
			p->rt_offset_ns = p->offset_ns;
			p->rt_bound_ns = (in.now_ns - in.since_ns) / 2 + 1;
			bound_note(p);
			snprintf(p->clock_how, sizeof(p->clock_how), "clock by HELLO round trip, within %.1fms",
				 (double)(in.now_ns - in.since_ns) / 2e6);
		}
	}
	xtime_heard(c, p, h->xen_time, h->xen_minus_mono);
	xflow_ctl_msg_free(m);
	m = NULL;
	char path[128];
	snprintf(path, sizeof(path), "%s/rec", p->path);
	p->rec = libxenvchan_client_init(NULL, (int)p->domid, path);
	if (!p->rec) {
		snprintf(why, sizeof(why), "cannot connect to its record vchan %s", path);
		goto fail;
	}
	p->rec->blocking = 0;
	p->ring_ok = true;
	if (!(p->pc = plan_for(c, p))) {
		snprintf(why, sizeof(why), "no plan: %.180s", c->err);
		goto fail;
	}
	struct xflow_ctl_msg pm = plan_load_msg(p);
	if ((rc = xflow_ctl_send_async(&p->conn, &pm))) {
		snprintf(why, sizeof(why), "cannot send its plan: %s", strerror(-rc));
		goto fail;
	}
	p->plan_seq = pm.seq;
	p->state = PEER_PLAN;
	p->deadline_ns = now + (uint64_t)c->timeout_ms * 1000000ull;
	snprintf(p->source, sizeof(p->source), "xflow-agent pid %u over vchan: weaving", p->agent_pid);
	return;
fail:
	xflow_ctl_msg_free(m);
	xen_peer_fail(c, p, why);
}

/* The answer to the plan of an agent over Xen. */
static void xen_peer_planned(struct acoll *c, struct peer *p, uint64_t now)
{
	struct xflow_ctl_msg *r = NULL;
	int rc = xflow_ctl_flush(&p->conn);
	if (rc >= 0)
		while ((rc = peer_control(c, p, 0, &r)) > 0 && !r)
			;
	if (rc < 0) {
		xen_peer_fail(c, p, p->conn.why ? p->conn.why : strerror(-rc));
		return;
	}
	if (!r) {
		if (now > p->deadline_ns)
			xen_peer_fail(c, p, "no answer to its plan in time");
		return;
	}
	char why[200];
	if (take_plan_reply(c, p, r, why, sizeof(why))) {
		xen_peer_fail(c, p, why);
		return;
	}
	p->state = PEER_LIVE;
	xen_peer_source(p);
	/* Aspects switched off before this agent came: off here too. */
	for (uint32_t i = 0; i < c->naspects; i++) {
		if (c->aspects[i].enabled)
			continue;
		struct xflow_ctl_msg m = { .type = XFLOW_CTL_ASPECT_SET };
		m.u.aspect = (struct xflow_ctl_aspect_set){ .kind = (uint8_t)c->aspects[i].kind, .enabled = 0,
							    .index = c->aspects[i].index };
		xflow_ctl_send_async(&p->conn, &m);
	}
}

/* ---- options ---------------------------------------------------------------------- */

static int add_path(struct acoll *c, const char *path)
{
	if (c->npeers == MAX_PEERS) {
		set_err(c, "agent: more than %d agents", MAX_PEERS);
		return -E2BIG;
	}
	struct peer *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	if (snprintf(p->path, sizeof(p->path), "%s", path) >= (int)sizeof(p->path)) {
		free(p);
		set_err(c, "agent: socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	c->peers[c->npeers++] = p;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_dir(struct acoll *c, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		set_err(c, "agent: dir=%s: %s", dir, strerror(errno));
		return -errno;
	}
	char *names[MAX_PEERS];
	unsigned n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < MAX_PEERS) {
		char path[PATH_MAX];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode) && (names[n] = strdup(path)))
			n++;
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_str);
	int rc = 0;
	for (unsigned i = 0; i < n; i++) {
		if (!rc)
			rc = add_path(c, names[i]);
		free(names[i]);
	}
	if (!rc && n == 0) {
		set_err(c, "agent: dir=%s: no agent socket there", dir);
		rc = -ENOENT;
	}
	return rc;
}

/* Neither socket=, dir= nor xen: the agents' own default directory, where
 * an xflow-agent started without --socket listens. */
static int add_default_dir(struct acoll *c)
{
	char dir[PATH_MAX];
	int rc = xflow_ctl_default_dir(dir, sizeof(dir));
	if (rc) {
		set_err(c, "agent: no agent: the default socket directory: %s; give socket=PATH, dir=DIR or xen",
			strerror(-rc));
		return rc;
	}
	rc = add_dir(c, dir);
	if (rc == -ENOENT)
		set_err(c, "agent: no agent socket in %s, where xflow-agent listens by default; give socket=PATH, "
			   "dir=DIR or xen", dir);
	return rc;
}

static int parse_options(struct acoll *c, const char *options)
{
	c->opts = strdup(options ? options : "");
	if (!c->opts)
		return -ENOMEM;
	char *save = NULL;
	for (char *kv = strtok_r(c->opts, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		if (!strcmp(kv, "xen") || !strcmp(kv, "xen=1")) {
			c->xen = true;
			continue;
		}
		char *v = strchr(kv, '=');
		if (!v || v == kv || !v[1]) {
			set_err(c, "agent: option '%s' is not key=value", kv);
			return -EINVAL;
		}
		*v++ = 0;
		int rc = 0;
		if (!strcmp(kv, "socket"))
			rc = add_path(c, v);
		else if (!strcmp(kv, "dir"))
			rc = add_dir(c, v);
		else if (!strcmp(kv, "flows") && c->nflows < MAX_LIST)
			c->flows[c->nflows++] = v;
		else if (!strcmp(kv, "bin") && c->nbins < MAX_LIST) {
			if (!strchr(v, ':') || v[0] == ':') {
				set_err(c, "agent: bin=%s: expected DOMAIN:PATH", v);
				return -EINVAL;
			}
			c->bins[c->nbins++] = v;
		} else if (!strcmp(kv, "timeout")) {
			char *end;
			long ms = strtol(v, &end, 10);
			if (*end || ms < 1 || ms > 600000) {
				set_err(c, "agent: timeout=%s: expected milliseconds from 1 to 600000", v);
				return -EINVAL;
			}
			c->timeout_ms = (int)ms;
		} else {
			set_err(c, "agent: unknown option '%s' (socket=, dir=, xen, flows=, bin=, timeout=)", kv);
			return -EINVAL;
		}
		if (rc)
			return rc;
	}
	if (!c->npeers && !c->xen) {
		int rc = add_default_dir(c);
		if (rc)
			return rc;
	}
	if (!c->nflows) {
		set_err(c, "agent: no flow file: give flows=FILE");
		return -EINVAL;
	}
	return 0;
}

static int compile_flows(struct acoll *c)
{
	int rc = xflow_unit_new(&c->unit, NULL);
	if (rc)
		return rc;
	for (unsigned i = 0; i < c->nflows && !rc; i++)
		rc = xflow_unit_add_file(c->unit, c->flows[i]);
	if (!rc)
		rc = xflow_unit_compile(c->unit);
	if (rc) {
		char why[768];
		if (xflow_unit_first_error(c->unit, why, sizeof(why)) != 0)
			snprintf(why, sizeof(why), "%s", strerror(-rc));
		set_err(c, "agent: flows: %s", why);
		return rc;
	}
	/* Aspects: each xflow, then each advice written by hand. */
	size_t nf = xflow_unit_flow_count(c->unit), na = xflow_unit_advice_count(c->unit);
	c->aspects = calloc(nf + na + 1, sizeof(*c->aspects));
	if (!c->aspects)
		return -ENOMEM;
	for (size_t i = 0; i < nf; i++) {
		struct aspect *a = &c->aspects[c->naspects++];
		a->kind = XFLOW_CTL_ASPECT_FLOW;
		a->index = (uint32_t)i;
		a->enabled = 1;
		snprintf(a->name, sizeof(a->name), "xflow %s", xflow_unit_flow_name(c->unit, i));
	}
	for (size_t i = 0; i < na; i++) {
		struct xflow_advice_info ai;
		if (xflow_unit_advice(c->unit, i, &ai) || ai.origin != XFLOW_ADVICE_USER)
			continue;
		struct aspect *a = &c->aspects[c->naspects++];
		a->kind = XFLOW_CTL_ASPECT_ADVICE;
		a->index = (uint32_t)i;
		a->enabled = 1;
		const char *base = ai.file ? strrchr(ai.file, '/') : NULL;
		snprintf(a->name, sizeof(a->name), "advice %s:%u", base ? base + 1 : ai.file ? ai.file : "?", ai.line);
	}
	return 0;
}

/* ---- the collector hooks ------------------------------------------------------------ */

static void agent_close(struct xflow_collector *xc);

static int agent_open(const char *options, struct xflow_collector **out, char *err, size_t errlen)
{
	struct acoll *c = calloc(1, sizeof(*c));
	int rc;
	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->timeout_ms = 30000;
	xflow_clock_init(&c->clock, 0);
	if ((rc = parse_options(c, options)) || (rc = compile_flows(c)))
		goto fail;
	c->xen_step_ms = c->timeout_ms < XEN_STEP_MS ? c->timeout_ms : XEN_STEP_MS;
	if (c->xen && (rc = xen_discover_open(&c->xd, c->err, sizeof(c->err))))
		goto fail;
	/* Our side of Xen's time: its slow part (the kernel's BTF) now,
	 * before any guest's greeting is timed. */
	if (c->xen && xen_time_reader_prepare(&c->xtime_r, c->xtime_why, sizeof(c->xtime_why)) &&
	    !c->xtime_r.simulated)
		c->xtime_never = true;
	/* Greet everyone, then weave, then wait for all the plans: agents
	 * install their probes in parallel. */
	for (unsigned i = 0; i < c->npeers; i++)
		if ((rc = peer_connect(c, c->peers[i])))
			goto fail;
	for (unsigned i = 0; i < c->npeers; i++)
		if ((rc = peer_send_plan(c, c->peers[i])))
			goto fail;
	for (unsigned i = 0; i < c->npeers; i++)
		if ((rc = peer_wait_plan(c, c->peers[i])))
			goto fail;
	*out = (struct xflow_collector *)c;
	return 0;
fail:
	snprintf(err, errlen, "%s", c->err[0] ? c->err : strerror(-rc));
	agent_close((struct xflow_collector *)c);
	return rc ? rc : -EINVAL;
}

static int agent_pollfds(struct xflow_collector *xc, int *fds, int max)
{
	struct acoll *c = (struct acoll *)xc;
	int n = 0;
	for (unsigned i = 0; i < c->npeers; i++) {
		struct peer *p = c->peers[i];
		if (p->ring_ok && !p->xen && n < max && p->nt.base.ops->pollfd)
			fds[n++] = p->nt.base.ops->pollfd(&p->nt.base);
		if (p->connected && n < max)
			fds[n++] = p->conn.fd;
		if (p->rec && n < max)
			fds[n++] = libxenvchan_fd_for_select(p->rec);
	}
	if (c->xd && n < max)
		fds[n++] = xen_discover_fd(c->xd);
	return n;
}

/* Check one record against what @p may say and hand it on. */
static bool peer_emit(struct acoll *c, struct peer *p, const struct xflow_record *r, xflow_collector_emit_fn emit,
		      void *ctx)
{
	const struct xflow_plan_domain *d = p->pc ? &p->pc->plan->domains[0] : NULL;
	/* An agent speaks for its own domain and plan only. */
	if (r->domain_id != p->domid || !d || r->site_id >= d->nsites) {
		p->bad++;
		c->bad++;
		return false;
	}
	uint64_t t = xflow_clock_to_ns(p->conv, r->timestamp) + (uint64_t)p->offset_ns;
	if (p->xen && !p->offset_checked) {
		/* A guest's clock may not be ours (its own boot, an offset
		 * TSC): moved onto ours by its first record, which is fresh. */
		int64_t skew = (int64_t)(xflow_monotonic_ns() - t);
		if (skew > XEN_CLOCK_SKEW_NS || skew < -XEN_CLOCK_SKEW_NS) {
			p->offset_ns += skew;
			t += (uint64_t)skew;
			p->clk = PEER_CLOCK_FIRST;
			bound_note(p);
		}
		p->offset_checked = true;
	}
	p->records++;
	emit(ctx, r, t);
	return true;
}

static long peer_read(struct acoll *c, struct peer *p, xflow_collector_emit_fn emit, void *ctx, size_t max)
{
	long done = 0;
	while ((size_t)done < max) {
		size_t want = max - (size_t)done < POP_CHUNK ? max - (size_t)done : POP_CHUNK;
		long n = xflow_ring_pop_records(&p->cons, c->buf, want);
		for (long i = 0; i < n; i++)
			done += peer_emit(c, p, &c->buf[i], emit, ctx);
		if (n < 0) {
			char why[160];
			snprintf(why, sizeof(why), "ring corrupt: %s; dropped", p->cons.corrupt_why);
			p->ring_ok = false;
			peer_drop(c, p, why);
			break;
		}
		if ((size_t)n < want)
			break;
	}
	return done;
}

/* The records of an agent over Xen: at most @max, whatever it sends. */
static long peer_read_xen(struct acoll *c, struct peer *p, xflow_collector_emit_fn emit, void *ctx, size_t max)
{
	long done = 0;
	while ((size_t)done < max) {
		size_t want = max - (size_t)done < POP_CHUNK ? max - (size_t)done : POP_CHUNK;
		long n = xflow_xen_rstream_read(p->rec, &p->rs, c->buf, want);
		for (long i = 0; i < n; i++)
			done += peer_emit(c, p, &c->buf[i], emit, ctx);
		if (n < 0 || (n == 0 && p->gone)) {
			/* Closed, garbage, or drained after the agent went. */
			libxenvchan_close(p->rec);
			p->rec = NULL;
			p->ring_ok = false;
			if (n == -EBADMSG) {
				char why[160];
				snprintf(why, sizeof(why), "sent %u bad records in a row (%s); dropped",
					 XFLOW_XEN_MAX_BAD_RUN, p->rs.why ? p->rs.why : "?");
				xen_peer_fail(c, p, why);
			} else if (!p->gone) {
				peer_drop(c, p, "its record vchan closed");
			}
			break;
		}
		if ((size_t)n < want)
			break;
	}
	return done;
}

static long agent_read(struct xflow_collector *xc, uint64_t now_ns, xflow_collector_emit_fn emit, void *ctx,
		       size_t max)
{
	struct acoll *c = (struct acoll *)xc;
	long total = 0;
	if (c->xd)
		xen_tick(c, now_ns);
	/* Start with the next agent each call: a busy one must not starve
	 * the others' rings (their records would reach the reorder window
	 * late and split flows). */
	unsigned first = c->npeers ? c->next_peer++ % c->npeers : 0;
	for (unsigned k = 0; k < c->npeers; k++) {
		struct peer *p = c->peers[(first + k) % c->npeers];
		if (p->xen && p->connected && p->state == PEER_HELLO) {
			xen_peer_hello(c, p, now_ns);
			continue;
		}
		if (p->xen && p->connected && p->state == PEER_PLAN)
			xen_peer_planned(c, p, now_ns);
		if (p->xen && p->ring_ok) {
			total += peer_read_xen(c, p, emit, ctx, max - (size_t)total);
			if ((size_t)total >= max)
				break;
		}
		if (p->connected && p->state == PEER_LIVE) {
			int rc = xflow_ctl_flush(&p->conn);
			int budget = 64; /* messages per call: a chatty agent cannot keep us */
			while (rc >= 0 && budget-- > 0 && (rc = peer_control(c, p, 0, NULL)) > 0)
				;
			if (rc < 0)
				peer_drop(c, p, rc == -ECONNRESET ? "went away" : p->conn.why ? p->conn.why : strerror(-rc));
			else if (!p->stats_pending && now_ns - p->stats_sent_ns >= STATS_EVERY_NS) {
				struct xflow_ctl_msg m = { .type = XFLOW_CTL_STATS };
				if (xflow_ctl_send_async(&p->conn, &m) == 0) {
					p->stats_pending = true;
					p->stats_sent_ns = now_ns;
				}
			}
		}
		if (p->ring_ok && !p->xen) {
			if (p->nt.base.ops->ack)
				p->nt.base.ops->ack(&p->nt.base);
			long got = peer_read(c, p, emit, ctx, max - (size_t)total);
			total += got;
			/* Drained: announce that we sleep on the eventfd the
			 * monitor polls, so the agent notifies at its next batch
			 * or idle flush; what was published meanwhile is read now. */
			if (p->ring_ok && (size_t)total < max && xflow_ring_arm(&p->cons) == 1)
				total += peer_read(c, p, emit, ctx, max - (size_t)total);
			/* Records left behind by an agent that went away are
			 * still read; once drained, the ring is let go. */
			if (p->gone && p->ring_ok && p->cons.cons == atomic_load(&p->cons.hdr->prod))
				p->ring_ok = false;
		}
		if ((size_t)total >= max)
			break;
	}
	return total;
}

static void agent_stats(struct xflow_collector *xc, struct xflow_collector_stats *out)
{
	struct acoll *c = (struct acoll *)xc;
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < c->npeers; i++) {
		struct peer *p = c->peers[i];
		out->records += p->records;
		out->drops += p->xen ? p->ring_dropped : p->shm.base ? xflow_ring_dropped(&p->cons) : 0;
		out->bad += p->bad + p->cons.bad_records + p->rs.bad;
	}
	out->ndomains = c->npeers;
}

static struct peer *peer_of(struct acoll *c, uint16_t domain)
{
	/* Newest first: an agent that came back speaks for its domain now. */
	for (unsigned i = c->npeers; i-- > 0;)
		if (c->peers[i]->domid == domain && c->peers[i]->pc)
			return c->peers[i];
	return NULL;
}

static int agent_site_info(struct xflow_collector *xc, uint16_t domain, uint32_t site, struct xflow_site_info *out)
{
	struct acoll *c = (struct acoll *)xc;
	struct peer *p = peer_of(c, domain);
	if (!p || site >= p->pc->plan->domains[0].nsites)
		return -ENOENT;
	const struct xflow_plan_site *s = &p->pc->plan->domains[0].sites[site];
	out->domain = p->domain;
	out->file = s->file ? s->file : "?";
	out->line = s->line;
	out->function = s->func ? s->func : "?";
	out->what = p->pc->what[site];
	return 0;
}

static int agent_domain_info(struct xflow_collector *xc, uint32_t i, struct xflow_domain_info *out)
{
	struct acoll *c = (struct acoll *)xc;
	if (i >= c->npeers)
		return -ENOENT;
	struct peer *p = c->peers[i];
	*out = (struct xflow_domain_info){ .id = p->domid, .name = p->domain, .source = p->source,
					   .targets = p->ntargets, .records = p->records,
					   .drops = p->xen ? p->ring_dropped
						   : p->shm.base ? xflow_ring_dropped(&p->cons) : 0,
					   .gone = p->gone, .bad = p->bad + p->cons.bad_records + p->rs.bad,
					   .clock_bound_ns = peer_clock_bound(p) };
	return 0;
}

/* Does advice @i belong to aspect @a? */
static bool in_aspect(const struct acoll *c, const struct aspect *a, uint32_t i)
{
	if (a->kind == XFLOW_CTL_ASPECT_ADVICE)
		return i == a->index;
	struct xflow_advice_info ai;
	return xflow_unit_advice(c->unit, i, &ai) == 0 && ai.origin != XFLOW_ADVICE_USER && ai.flow >= 0 &&
	       (uint32_t)ai.flow == a->index;
}

static int agent_aspect_info(struct xflow_collector *xc, uint32_t i, struct xflow_aspect_info *out)
{
	struct acoll *c = (struct acoll *)xc;
	if (i >= c->naspects)
		return -ENOENT;
	struct aspect *a = &c->aspects[i];
	*out = (struct xflow_aspect_info){ .name = a->name, .enabled = a->enabled };
	if (a->warnings) {
		snprintf(a->note, sizeof(a->note), "%u warning%s; the first: %s", a->warnings,
			 a->warnings == 1 ? "" : "s", a->first_warning);
		out->note = a->note;
	}
	for (unsigned k = 0; k < c->npeers; k++) {
		const struct peer *p = c->peers[k];
		for (uint32_t j = 0; j < p->nadv; j++) {
			if (!in_aspect(c, a, j))
				continue;
			out->hits += p->adv[j].hits;
			out->drops += p->adv[j].drops;
			out->faults += p->adv[j].faults;
		}
		/* Sites from the plan: known before any STATS, and after the
		 * agent is gone. */
		if (!p->pc)
			continue;
		const struct xflow_plan_domain *d = &p->pc->plan->domains[0];
		uint32_t last = UINT32_MAX;
		for (uint32_t b = 0; b < d->nbindings; b++)
			if (d->bindings[b].site != last && in_aspect(c, a, d->bindings[b].advice)) {
				last = d->bindings[b].site;
				out->sites++;
				if (p->trap && last < p->ntrap && p->trap[last]) {
					out->trap_sites++;
					if (!out->trap_why)
						out->trap_why = p->trap_why;
				}
			}
	}
	return 0;
}

static int agent_aspect_set(struct xflow_collector *xc, uint32_t i, int enabled)
{
	struct acoll *c = (struct acoll *)xc;
	if (i >= c->naspects)
		return -ENOENT;
	struct aspect *a = &c->aspects[i];
	a->enabled = enabled ? 1 : 0;
	int rc = 0;
	for (unsigned k = 0; k < c->npeers; k++) {
		struct peer *p = c->peers[k];
		if (!p->connected || p->state != PEER_LIVE)
			continue;
		struct xflow_ctl_msg m = { .type = XFLOW_CTL_ASPECT_SET };
		m.u.aspect = (struct xflow_ctl_aspect_set){ .kind = (uint8_t)a->kind, .enabled = (uint8_t)a->enabled,
							    .index = a->index };
		/* The agent applies it as soon as it reads it; its REPLY is
		 * taken by read() like any other. */
		int r = p->xen ? xflow_ctl_send_async(&p->conn, &m) : xflow_ctl_send(&p->conn, &m, NULL, 0, 200);
		if (r && !rc)
			rc = r;
	}
	return rc;
}

static unsigned agent_carried_bits(struct xflow_collector *xc, uint16_t kind)
{
	struct acoll *c = (struct acoll *)xc;
	unsigned bits = 0;
	for (const struct fl_xflow *f = c->unit ? c->unit->flows : NULL; f; f = f->next) {
		if (f->index != (int)kind)
			continue;
		for (const struct fl_xpoint *pt = f->points; pt; pt = pt->next)
			for (size_t k = 0; k < pt->nops; k++) {
				const struct fl_xop *op = pt->ops[k];
				if ((op->kind == FL_X_XIN_MOVE || op->kind == FL_X_XIN_COPY) && op->has_field && op->size &&
				    (!bits || op->size < bits))
					bits = op->size;
			}
	}
	return bits;
}

static const char *agent_last_error(struct xflow_collector *xc)
{
	struct acoll *c = (struct acoll *)xc;
	return c->err[0] ? c->err : NULL;
}

static void agent_close(struct xflow_collector *xc)
{
	struct acoll *c = (struct acoll *)xc;
	if (!c)
		return;
	xen_time_reader_close(&c->xtime_r);
	/* Ask every agent to detach, then wait for each answer (it comes
	 * once the agent has read everything before it), so that the agents
	 * restore their targets now rather than when they notice the hangup. */
	for (unsigned i = 0; i < c->npeers; i++) {
		struct peer *p = c->peers[i];
		if (!p->connected)
			continue;
		struct xflow_ctl_msg m = { .type = XFLOW_CTL_DETACH };
		if ((p->xen ? xflow_ctl_send_async(&p->conn, &m) : xflow_ctl_send(&p->conn, &m, NULL, 0, 500)) == 0)
			p->plan_seq = m.seq;
		else
			p->plan_seq = 0;
	}
	for (unsigned i = 0; i < c->npeers; i++) {
		struct peer *p = c->peers[i];
		/* A guest gets less patience than a local agent. */
		uint64_t deadline = xflow_monotonic_ns() + (p->xen ? 500000000u : 2000000000u);
		while (p->connected && p->plan_seq && xflow_monotonic_ns() < deadline) {
			struct xflow_ctl_msg *m;
			if (p->xen && xflow_ctl_flush(&p->conn) < 0)
				break;
			int rc = xflow_ctl_recv(&p->conn, &m, 100);
			if (rc < 0)
				break;
			if (rc == 1) {
				bool done = m->type == XFLOW_CTL_REPLY && m->u.reply.req_type == XFLOW_CTL_DETACH;
				xflow_ctl_msg_free(m);
				if (done)
					break;
			}
		}
		peer_free(p);
	}
	for (unsigned i = 0; i < c->ncache; i++) {
		xflow_plan_free(c->cache[i].plan);
		free(c->cache[i].buf);
		free(c->cache[i].domain);
		free(c->cache[i].exe);
		free(c->cache[i].what);
	}
	xen_discover_close(c->xd);
	xflow_unit_free(c->unit);
	free(c->aspects);
	free(c->opts);
	free(c);
}

const struct xflow_collector_ops xflow_collector_agent = {
	.abi = XFLOW_COLLECTOR_ABI,
	.name = "agent",
	.help = "records from xflow-agents, woven live "
		"(socket=PATH|dir=DIR|xen,flows=FILE,bin=DOMAIN:PATH,timeout=MS)",
	.open = agent_open,
	.pollfds = agent_pollfds,
	.read = agent_read,
	.stats = agent_stats,
	.site_info = agent_site_info,
	.domain_info = agent_domain_info,
	.aspect_info = agent_aspect_info,
	.aspect_set = agent_aspect_set,
	.carried_bits = agent_carried_bits,
	.last_error = agent_last_error,
	.close = agent_close,
};
