/*
 * The application: collectors, the model, refreshes, reactions, and the
 * libuv loop that drives them.  libuv is included here only.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "common/mem.h"
#include "tui/app.h"
#include "tui/demo_host.h"
#include "tui/metrics.h"
#include "tui/report.h"
#include "tui/sched_join.h"
#include "weaver/weave.h"
#include "xflow/clock.h"
#include "xflow/file.h"
#include "xflow/flowlang.h"
#include "xflow/session.h"


/* Records one read() call may deliver, and the most one refresh takes
 * from one collector before drawing (so a flood cannot freeze the screen). */
#define READ_BATCH 4096
#define REFRESH_BUDGET (UINT64_C(8) << 20)
/* Live sources are also read on this short timer: a collector's descriptors
 * are taken once at start, and an agent's ring descriptor exists only
 * after its HELLO; read on the display refresh alone, one agent's records
 * reach the reorder window seconds after another's and split flows. */
#define COLLECT_MS 10

struct xft_app_loop {
	uv_loop_t loop;
	uv_timer_t refresh;
	uv_timer_t collect;
	uv_signal_t sig[5];
	unsigned empty_inputs; /* readable input that gave no key: a hung-up terminal */
	uv_poll_t input;
	int have_input;
	struct {
		uv_poll_t poll;
		unsigned src;
	} polls[XFT_MAX_SOURCES * XFT_MAX_FDS];
	unsigned npolls;
	struct xft_app *app;
};

/* --- collectors ------------------------------------------------------------ */

/* Saving stops at the first write error; monitoring goes on. */
static void session_check(struct xft_app *app, int rc)
{
	if (!rc || !app->session)
		return;
	snprintf(app->session_error, sizeof(app->session_error), "%s",
		 xflow_session_writer_error(app->session));
	xflow_session_writer_free(app->session, 0, NULL, 0);
	app->session = NULL;
	xft_app_message(app, "save-session: %s: saving stopped", app->session_error);
}

static int site_lookup(void *ctx, uint16_t domain, uint32_t site, struct xflow_site_info *out)
{
	struct xft_app *app = ctx;
	for (unsigned s = 0; s < app->nsrc; s++)
		if (app->src[s].ops->site_info &&
		    app->src[s].ops->site_info(app->src[s].c, domain, site, out) == 0) {
			if (app->session)
				session_check(app, xflow_session_write_site(app->session, domain, site,
					      out->domain, out->file, out->line, out->function,
					      out->roles));
			return 0;
		}
	return -ENOENT;
}

/* The flow files an agent collector's @options weave (its flows=). */
static void note_woven(struct xft_app *app, const char *options)
{
	for (const char *p = options; p && *p;) {
		size_t n = strcspn(p, ",");
		if (n > 6 && !strncmp(p, "flows=", 6) && app->nwoven < XFT_MAX_LIST)
			snprintf(app->woven[app->nwoven++], sizeof(app->woven[0]), "%.*s", (int)(n - 6), p + 6);
		p += n + (p[n] == ',');
	}
}

int xft_app_flow_file_woven(const struct xft_app *app, const char *path)
{
	for (unsigned i = 0; i < app->nwoven; i++)
		if (!strcmp(app->woven[i], path))
			return 1;
	return 0;
}

int xft_app_add_source(struct xft_app *app, const char *spec, char *err, size_t errlen)
{
	if (app->nsrc >= XFT_MAX_SOURCES) {
		snprintf(err, errlen, "too many collectors (at most %d)", XFT_MAX_SOURCES);
		return -ENOSPC;
	}
	char name[4096];
	snprintf(name, sizeof(name), "%s", spec);
	char *colon = strchr(name, ':');
	const char *options = "";
	if (colon) {
		*colon = '\0';
		options = colon + 1;
	}
	const struct xflow_collector_ops *ops = xft_registry_find(&app->reg, name);
	if (!ops) {
		char known[512];
		size_t o = 0;
		known[0] = '\0';
		for (unsigned i = 0; i < app->reg.n && o < sizeof(known); i++)
			o += (size_t)snprintf(known + o, sizeof(known) - o, "%s%s", i ? ", " : "",
					      app->reg.e[i].ops->name);
		snprintf(err, errlen, "unknown collector '%s' (known: %s; plugins load with --collector-path)",
			 name, known);
		return -ENOENT;
	}
	struct xft_source *s = &app->src[app->nsrc];
	memset(s, 0, sizeof(*s));
	s->ops = ops;
	snprintf(s->spec, sizeof(s->spec), "%s", spec);
	char msg[256] = "";
	int rc = ops->open(options, &s->c, msg, sizeof(msg));
	if (rc) {
		snprintf(err, errlen, "collector '%s': %s", spec, msg[0] ? msg : strerror(rc < 0 ? -rc : rc));
		return rc < 0 ? rc : -EINVAL;
	}
	if (ops->pollfds) {
		int n = ops->pollfds(s->c, s->fds, XFT_MAX_FDS);
		s->nfds = n > 0 ? (n > XFT_MAX_FDS ? XFT_MAX_FDS : n) : 0;
	}
	if (!strcmp(ops->name, "agent"))
		note_woven(app, options);
	app->nsrc++;
	return 0;
}

struct emit_ctx {
	struct xft_app *app;
	uint64_t n;
	struct xft_source *src;
};

static void emit(void *ctx, const struct xflow_record *r, uint64_t t_ns)
{
	struct emit_ctx *e = ctx;
	struct xft_app *app = e->app;
	if (app->session) {
		/* A site's names go before its first record, so that a replay
		 * can name every hop it shows. */
		struct xflow_site_info si = { 0 };
		if (!xflow_session_writer_has_site(app->session, r->domain_id, r->site_id))
			site_lookup(app, r->domain_id, r->site_id, &si);
		if (app->session)
			session_check(app, xflow_session_write_record(app->session, r, t_ns));
	}
	if (e->src->record_clock && t_ns > app->record_now)
		app->record_now = t_ns;
	if (t_ns > app->newest_ns)
		app->newest_ns = t_ns;
	xft_agg_feed(app->agg, r, t_ns);
	e->n++;
}

/* A collector closes the descriptors of what it lost (an agent killed) as
 * it reads: a poll left on one would have libuv register a closed
 * descriptor (epoll_ctl fails with EBADF, and libuv aborts: issue 30, one
 * xflowtop of six dying of SIGABRT when their agents were killed) or
 * watch whatever opens under its number next.  So after each call into
 * source @i, every poll of it on a descriptor the collector no longer
 * names is stopped. */
static void polls_sync(struct xft_app *app, unsigned i)
{
	struct xft_source *s = &app->src[i];
	struct xft_app_loop *l = app->loop;
	if (!l || !s->ops->pollfds)
		return;
	int fds[XFT_MAX_FDS], n = s->ended ? 0 : s->ops->pollfds(s->c, fds, XFT_MAX_FDS);
	if (n > XFT_MAX_FDS)
		n = XFT_MAX_FDS;
	for (unsigned k = 0; k < l->npolls; k++) {
		uv_poll_t *p = &l->polls[k].poll;
		uv_os_fd_t fd;
		if ((unsigned)(uintptr_t)p->data != i || !uv_is_active((uv_handle_t *)p) ||
		    uv_fileno((uv_handle_t *)p, &fd) != 0)
			continue;
		bool named = false;
		for (int j = 0; j < n; j++)
			named |= fds[j] == fd;
		if (!named)
			uv_poll_stop(p);
	}
}

static uint64_t collect_one(struct xft_app *app, unsigned i, uint64_t now, uint64_t budget)
{
	struct xft_source *s = &app->src[i];
	struct emit_ctx e = { app, 0, s };
	/* A budget of millions of records takes seconds at a few hundred ns
	 * each: each read is told the time it runs at, @now moved on by the
	 * time taken so far, or a collector judging records by our clock
	 * (an agent's "time in the future") refuses those written while we
	 * read. */
	uint64_t t0 = xflow_monotonic_ns();
	for (bool first = true; !s->ended && e.n < budget; first = false) {
		uint64_t at = first ? now : now + (xflow_monotonic_ns() - t0);
		long n = s->ops->read(s->c, at, emit, &e, READ_BATCH);
		if (n < 0) {
			s->ended = 1;
			s->failed = n != -ENODATA;
			const char *why = s->ops->last_error ? s->ops->last_error(s->c) : NULL;
			snprintf(s->error, sizeof(s->error), "%s",
				 n == -ENODATA ? "end of input" : why ? why : strerror((int)-n));
			xft_app_message(app, "%s: %s", s->spec, s->error);
			break;
		}
		if (n == 0)
			break;
	}
	polls_sync(app, i);
	app->records += e.n;
	return e.n;
}

/* A source has given all it will: its records, and its scheduler's events. */
static int source_done(const struct xft_source *s)
{
	return s->ended && s->sched_ended;
}

static void sched_emit(void *ctx, const struct xflow_sched_event *e)
{
	xft_agg_sched_event(ctx, e);
}

/*
 * The scheduler's events, for the join (tui/sched_join.h).  A trace read
 * from a file would run ahead of the flows it is joined with, past what
 * the timelines keep: it is taken only up to SCHED_LEAD_NS beyond the
 * newest flow record, SCHED_READ_BATCH events at a time, unless every source of
 * flows has ended.  Live, the trace lags the flows anyway.  The lead, the
 * reorder window and a hop's own length must stay within what a timeline
 * keeps (4,096 state changes a vCPU, 0.5 s of the demo's dom0): a lead of
 * 1 s left 89 % of a replay of the demo '?'.
 */
#define SCHED_LEAD_NS (UINT64_C(50) * 1000 * 1000)
#define SCHED_READ_BATCH 512
static void collect_sched(struct xft_app *app, uint64_t now)
{
	int flows_done = 1;
	for (unsigned i = 0; i < app->nsrc; i++)
		if (!app->src[i].ops->sched)
			flows_done &= app->src[i].ended;
	for (unsigned i = 0; i < app->nsrc; i++) {
		struct xft_source *s = &app->src[i];
		for (uint64_t taken = 0; s->ops->sched && !s->sched_ended && taken < REFRESH_BUDGET;) {
			if (!flows_done && xft_agg_sched_watermark(app->agg) > app->newest_ns + SCHED_LEAD_NS)
				break;
			long n = s->ops->sched(s->c, now, sched_emit, app->agg, SCHED_READ_BATCH);
			if (n < 0)
				s->sched_ended = 1;
			if (n <= 0)
				break;
			taken += (uint64_t)n;
		}
	}
}

uint64_t xft_app_collect(struct xft_app *app, uint64_t now, uint64_t budget)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < app->nsrc; i++)
		n += collect_one(app, i, now, budget);
	collect_sched(app, now);
	return n;
}

/* --- refresh -------------------------------------------------------------- */

/* A weave that matches nothing runs on with empty tables: said once
 * where a script sees it apart from them, and in every header after. */
static void nothing_woven_check(struct xft_app *app)
{
	app->nothing_woven = xft_app_nothing_woven(app);
	if (!app->nothing_woven || app->nothing_woven_said || !app->renderer)
		return;
	app->nothing_woven_said = 1;
	xft_app_message(app, "%s", XFT_NOTHING_WOVEN);
	if (app->renderer && app->renderer->failed)
		app->renderer->failed(app, XFT_NOTHING_WOVEN);
}

/* Not while a domain's plan is on the way: an agent over Xen greets and
 * weaves seconds after the monitor starts, and its sites are not in the
 * aspects' counts until it has. */
int xft_app_nothing_woven(const struct xft_app *app)
{
	uint64_t sites = 0;
	for (unsigned i = 0; i < app->naspects; i++)
		sites += app->aspects[i].info.sites;
	for (unsigned i = 0; i < app->ndomains; i++)
		if (app->domains[i].info.planning)
			return 0;
	return app->naspects > 0 && app->ndomains > 0 && sites == 0;
}

/* Whether a row before the app's next one is of domain @id. */
static int domain_listed(const struct xft_app *app, uint16_t id)
{
	for (unsigned i = 0; i < app->ndomains; i++)
		if (app->domains[i].info.id == id)
			return 1;
	return 0;
}

static void update_infos(struct xft_app *app, double secs)
{
	/* Aspects and domains, with per-second rates from the previous values. */
	struct xft_aspect_row old_a[XFT_MAX_ASPECTS];
	unsigned nold_a = app->naspects;
	memcpy(old_a, app->aspects, sizeof(old_a[0]) * nold_a);
	app->naspects = 0;
	struct xft_domain_row old_d[XFT_MAX_DOMROWS];
	unsigned nold_d = app->ndomains;
	memcpy(old_d, app->domains, sizeof(old_d[0]) * nold_d);
	app->ndomains = 0;
	app->drops = app->bad = 0;
	for (unsigned s = 0; s < app->nsrc; s++) {
		struct xft_source *src = &app->src[s];
		if (src->ops->stats) {
			src->ops->stats(src->c, &src->st);
			app->drops += src->st.drops;
			app->bad += src->st.bad;
		}
		for (uint32_t i = 0; src->ops->aspect_info && app->naspects < XFT_MAX_ASPECTS; i++) {
			struct xft_aspect_row *r = &app->aspects[app->naspects];
			memset(r, 0, sizeof(*r));
			if (src->ops->aspect_info(src->c, i, &r->info))
				break;
			r->src = s;
			r->index = i;
			r->prev_hits = r->info.hits;
			for (unsigned k = 0; k < nold_a; k++)
				if (old_a[k].src == s && old_a[k].index == i) {
					uint64_t d = r->info.hits >= old_a[k].prev_hits ? r->info.hits - old_a[k].prev_hits : 0;
					r->hits_per_s = secs > 0 ? (double)d / secs : old_a[k].hits_per_s;
				}
			app->naspects++;
		}
		for (uint32_t i = 0; src->ops->domain_info && app->ndomains < XFT_MAX_DOMROWS; i++) {
			struct xft_domain_row *r = &app->domains[app->ndomains];
			memset(r, 0, sizeof(*r));
			if (src->ops->domain_info(src->c, i, &r->info))
				break;
			r->src = s;
			r->prev_records = r->info.records;
			if (r->info.name)
				xft_sites_set_domain(&app->sites, r->info.id, r->info.name);
			/* The model's refusals are the domain's as well, shown
			 * with the lies its collector counted: in its first row
			 * only, since the model counts by domain id and two
			 * sources may both speak of one domain. */
			if (!domain_listed(app, r->info.id)) {
				struct xft_agg_refused ref;
				xft_agg_domain_refused(app->agg, r->info.id, &ref);
				r->info.lies.hop_share += ref.hops;
				r->info.lies.handoff_share += ref.handoffs;
			}
			for (unsigned k = 0; k < nold_d; k++)
				if (old_d[k].src == s && old_d[k].info.id == r->info.id) {
					uint64_t d = r->info.records >= old_d[k].prev_records
							     ? r->info.records - old_d[k].prev_records : 0;
					r->per_s = secs > 0 ? (double)d / secs : old_d[k].per_s;
				}
			app->ndomains++;
		}
	}
	nothing_woven_check(app);
}

/* What the sources say of their domains' clocks and progress, into the
 * model before its tick: a domain whose agent holds records back must
 * hold the tick's release at once, not one refresh late. */
static void domains_to_model(struct xft_app *app)
{
	for (unsigned s = 0; s < app->nsrc; s++) {
		struct xft_source *src = &app->src[s];
		struct xflow_domain_info info;
		for (uint32_t i = 0; src->ops->domain_info; i++) {
			memset(&info, 0, sizeof(info)); /* what a collector does not say is 0 */
			if (src->ops->domain_info(src->c, i, &info))
				break;
			xft_agg_set_clock_bound(app->agg, info.id, info.clock_bound_ns);
			xft_agg_set_progress(app->agg, info.id, info.gone ? 0 : info.progress_ns);
			xft_agg_set_held(app->agg, info.id, info.gone ? 0 : info.held_ns);
		}
	}
}

/* The hypervisor's state (xentrace), with room for its shown order. */
static void update_hv(struct xft_app *app)
{
	app->hv = NULL;
	for (unsigned s = 0; s < app->nsrc && !app->hv; s++) {
		struct xft_source *src = &app->src[s];
		const struct xflow_hv_summary *h;
		if (!src->ops->hypervisor || src->ops->hypervisor(src->c, &h))
			continue;
		if (h->nvcpus > app->hv_vcpu_cap) {
			uint32_t *o = realloc(app->hv_vcpu_order, h->nvcpus * sizeof(*o));
			if (!o)
				continue;
			app->hv_vcpu_order = o;
			app->hv_vcpu_cap = h->nvcpus;
		}
		if (h->nevents > app->hv_event_cap) {
			uint32_t *o = realloc(app->hv_event_order, h->nevents * sizeof(*o));
			if (!o)
				continue;
			app->hv_event_order = o;
			app->hv_event_cap = h->nevents;
		}
		app->hv = h;
		app->hv_src = s;
	}
}

void xft_app_order(struct xft_app *app)
{
	xft_frame_order(&app->frame, &app->ui.filter, &app->sites, app->ui.list[XFT_VIEW_HOPS].sort,
			app->ui.list[XFT_VIEW_HOPS].desc, app->ui.list[XFT_VIEW_FLOWS].sort,
			app->ui.list[XFT_VIEW_FLOWS].desc);
	if (app->hv) {
		const struct xft_list_state *v = &app->ui.list[XFT_VIEW_HYPERVISOR], *e = &app->ui.hv_events;
		xft_table_sort(&xft_hv_vcpu_table, v->sort, v->desc, app->hv->vcpus, sizeof(*app->hv->vcpus),
			       app->hv_vcpu_order, app->hv->nvcpus);
		xft_table_sort(&xft_hv_event_table, e->sort, e->desc, app->hv->events, sizeof(*app->hv->events),
			       app->hv_event_order, app->hv->nevents);
	}
}

/* The process's resident set (/proc/self/statm), 0 if it cannot be read. */
static uint64_t resident_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long long size, resident;
	int n = f ? fscanf(f, "%llu %llu", &size, &resident) : 0;
	if (f)
		fclose(f);
	long page = sysconf(_SC_PAGESIZE);
	return n == 2 && page > 0 ? (uint64_t)resident * (uint64_t)page : 0;
}

void xft_app_refresh(struct xft_app *app, uint64_t now)
{
	xft_app_collect(app, now, REFRESH_BUDGET);
	int all_ended = app->nsrc > 0;
	for (unsigned s = 0; s < app->nsrc; s++)
		all_ended &= source_done(&app->src[s]);
	/* The end of every input (a replay played out): nothing can come to
	 * reorder, so the window gives up what it holds, and no trace will
	 * pass the hops still waiting for it. */
	if (all_ended) {
		xft_agg_drain(app->agg);
		xft_agg_sched_flush(app->agg);
	}
	domains_to_model(app);
	xft_agg_tick(app->agg, app->recorded_clock || app->record_now > now ? app->record_now : now);
	double secs = app->last_refresh_ns ? (double)(now - app->last_refresh_ns) / 1e9 : 0;
	if (secs > 0)
		app->rate = (double)(app->records - app->prev_records) / secs;
	app->prev_records = app->records;
	app->last_refresh_ns = now;
	app->now_ns = now;
	app->resident_bytes = resident_bytes();
	update_infos(app, secs);
	if (!app->ui.paused) {
		update_hv(app);
		xft_frame_build(&app->frame, app->agg, &app->sites);
		xft_app_order(app);
		size_t nh;
		const struct xft_hop *hops = xft_agg_hops(app->agg, &nh);
		app->ui.hist_copy_hop = UINT32_MAX;
		if (app->ui.have_hist && app->ui.hist_hop < nh) {
			*app->ui.hist_copy = hops[app->ui.hist_hop].hist;
			app->ui.hist_copy_hop = app->ui.hist_hop;
		}
	}
	app->iteration++;
	xft_metrics_publish(app);
}

int xft_app_aspect_toggle(struct xft_app *app, unsigned i)
{
	if (i >= app->naspects)
		return -ENOENT;
	struct xft_aspect_row *r = &app->aspects[i];
	struct xft_source *s = &app->src[r->src];
	if (!s->ops->aspect_set)
		return -ENOTSUP;
	int rc = s->ops->aspect_set(s->c, r->index, !r->info.enabled);
	polls_sync(app, (unsigned)(s - app->src));
	if (rc == 0)
		r->info.enabled = !r->info.enabled;
	return rc;
}

void xft_app_message(struct xft_app *app, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(app->ui.message, sizeof(app->ui.message), fmt, ap);
	va_end(ap);
	app->ui.message_until = xflow_monotonic_ns() + UINT64_C(2500000000);
}

static void snapshot_now(struct xft_app *app, const char *base_in)
{
	char base[4096], err[512];
	if (base_in)
		snprintf(base, sizeof(base), "%s", base_in);
	else
		xft_snapshot_default_base(app, base, sizeof(base));
	/* A snapshot shows the latest data even when the screen is paused. */
	int paused = app->ui.paused;
	if (paused) {
		update_hv(app);
		xft_frame_build(&app->frame, app->agg, &app->sites);
		xft_app_order(app);
	}
	if (xft_snapshot_write(app, base, err, sizeof(err))) {
		/* Asked for and not written: the run says so, and so does its
		 * exit status. */
		char what[sizeof(err) + 32];
		snprintf(what, sizeof(what), "snapshot failed: %s", err);
		xft_app_message(app, "%s", what);
		if (app->renderer && app->renderer->failed)
			app->renderer->failed(app, what);
		app->exit_code = 1;
	} else
		xft_app_message(app, "snapshot: %s.{txt,json,trace.json}", base);
}

void xft_app_react(struct xft_app *app, unsigned rx)
{
	app->now_ns = xflow_monotonic_ns();
	if (rx & XFT_RX_QUIT)
		app->quit = 1;
	if (rx & XFT_RX_SNAPSHOT)
		snapshot_now(app, NULL);
	if (rx & XFT_RX_REFRESH)
		xft_app_refresh(app, xflow_monotonic_ns());
	else if (rx & XFT_RX_REORDER)
		xft_app_order(app);
}

/* --- set-up ----------------------------------------------------------------- */

/* Every flow file named with -f (or "flows" in the configuration) is read
 * and compiled when xflowtop starts, whatever the collectors: one that
 * cannot be read, or has an error, stops the start with the weaver's
 * diagnostics, as `xflowc check` prints them. */
static int check_flow_files(const struct xft_config *cfg, char *err, size_t errlen)
{
	struct stat st;
	for (unsigned i = 0; i < cfg->nflow_files; i++) {
		int fd = xflow_file_open(cfg->flow_files[i], &st);
		if (fd < 0) {
			snprintf(err, errlen, "flow file %s: %s", cfg->flow_files[i], xflow_file_strerror(fd, &st));
			return fd;
		}
		close(fd);
	}
	if (!cfg->nflow_files)
		return 0;
	const char *paths[XFT_MAX_LIST];
	for (unsigned i = 0; i < cfg->nflow_files; i++)
		paths[i] = cfg->flow_files[i];
	struct xflow_unit *u;
	int rc = xflow_weave_compile(paths, cfg->nflow_files, XFLOW_WEAVE_EVERY_FILE, &u);
	if (!u) {
		snprintf(err, errlen, "flow files: %s", strerror(-rc));
		return rc;
	}
	if (rc) {
		char *diag = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&diag, &len);
		if (f) {
			xflow_unit_print_diags(u, f);
			fclose(f);
		}
		if (len && diag[len - 1] == '\n')
			diag[len - 1] = '\0';
		snprintf(err, errlen, "the flow files have errors:\n%s", diag && diag[0] ? diag : strerror(-rc));
		free(diag);
	}
	xflow_unit_free(u);
	return rc;
}

/* The demo's collector: its own netflow.xml, or the -f files instead. */
static int demo_spec(const struct xft_app *app, char *spec, size_t len)
{
	const struct xft_config *cfg = &app->cfg;
	if (!cfg->nflow_files)
		return snprintf(spec, len, "agent:%s", xflow_demo_host_options(app->demo)) < (int)len ? 0 : -ENAMETOOLONG;
	size_t o = (size_t)snprintf(spec, len, "agent:dir=%s", xflow_demo_host_socket_dir(app->demo));
	for (unsigned i = 0; i < cfg->nflow_files && o < len; i++)
		o += (size_t)snprintf(spec + o, len - o, ",flows=%s", cfg->flow_files[i]);
	return o < len ? 0 : -ENAMETOOLONG;
}

int xft_app_init(struct xft_app *app, const struct xft_config *cfg, char *err, size_t errlen)
{
	memset(app, 0, sizeof(*app));
	app->cfg = *cfg;
	xft_registry_init(&app->reg);
	int rc;
	for (unsigned i = 0; i < cfg->ncollector_paths; i++)
		if ((rc = xft_registry_load_dir(&app->reg, cfg->collector_paths[i], err, errlen)))
			return rc;
	if ((rc = check_flow_files(cfg, err, errlen)))
		return rc;
	if (cfg->demo) {
		/* Boot the host held, so that no message passes before the
		 * agents have their plans; then let the guests send. */
		/* With --xentrace, the host runs its scheduler model and its
		 * trace is joined with the flows (issue 24). */
		struct xflow_demo_opts o = { .guests = XFT_DEMO_GUESTS, .rate = XFT_DEMO_RATE, .hold = 1,
					     .trace = cfg->xentrace[0] != '\0' };
		if ((rc = xflow_demo_host_start(&o, &app->demo))) {
			snprintf(err, errlen, "demo: %s", xflow_demo_host_error());
			return rc;
		}
		char spec[4096];
		if ((rc = demo_spec(app, spec, sizeof(spec)))) {
			snprintf(err, errlen, "demo: the flow files' names are too long");
			return rc;
		}
		app->note = cfg->nflow_files ? XFT_DEMO_NOTE_FLOWS : XFT_DEMO_NOTE;
		if ((rc = xft_app_add_source(app, spec, err, errlen)))
			return rc;
		if (o.trace) {
			snprintf(spec, sizeof(spec), "xentrace:fd=%d,cpu-hz=2.4G", xflow_demo_host_trace_fd(app->demo));
			if ((rc = xft_app_add_source(app, spec, err, errlen)))
				return rc;
		}
		if ((rc = xflow_demo_host_go(app->demo))) {
			snprintf(err, errlen, "demo: the simulated host did not start sending: %s",
				 strerror(-rc));
			return rc;
		}
	}
	for (unsigned i = 0; i < cfg->ncollectors && !cfg->demo; i++) {
		char spec[4096];
		if ((rc = xft_config_agent_spec(cfg, cfg->collectors[i], spec, sizeof(spec)))) {
			snprintf(err, errlen, "collector '%s': the options from the configuration are too long",
				 cfg->collectors[i]);
			return rc;
		}
		if ((rc = xft_app_add_source(app, spec, err, errlen)))
			return rc;
	}
	if (cfg->xentrace[0] && !cfg->demo) {
		char spec[XFT_SPEC_LEN + 64];
		if ((rc = xft_config_xentrace_spec(cfg, spec, sizeof(spec)))) {
			snprintf(err, errlen, "--xentrace: the path is too long or has a comma");
			return rc;
		}
		if ((rc = xft_app_add_source(app, spec, err, errlen)))
			return rc;
	}
	if (cfg->replay[0] && !cfg->demo) {
		char spec[XFT_SPEC_LEN + 64];
		if ((rc = xft_config_replay_spec(cfg, spec, sizeof(spec)))) {
			snprintf(err, errlen, "--replay: the path is too long or has a comma");
			return rc;
		}
		if ((rc = xft_app_add_source(app, spec, err, errlen)))
			return rc;
	}
	for (unsigned s = 0; s < app->nsrc; s++) {
		app->src[s].sched_ended = !app->src[s].ops->sched;
		if (app->src[s].ops->hypervisor)
			app->have_hv_source = 1;
		if (!strcmp(app->src[s].ops->name, "replay")) {
			app->src[s].record_clock = 1;
			app->recorded_clock |= strstr(app->src[s].spec, "clock=recorded") != NULL;
		}
	}
	if (!app->nsrc) {
		snprintf(err, errlen, "no collector: give --collector NAME (see --list-collectors), "
				      "a 'collector' line in the configuration, or --demo");
		return -EINVAL;
	}
	/* The model must know how many id bits survive each domain crossing. */
	for (unsigned k = 0; k < 16; k++)
		for (unsigned s = 0; s < app->nsrc; s++)
			if (app->src[s].ops->carried_bits) {
				unsigned b = app->src[s].ops->carried_bits(app->src[s].c, (uint16_t)k);
				if (b && b < 48 && (!app->cfg.limits.carried_bits[k] || b < app->cfg.limits.carried_bits[k]))
					app->cfg.limits.carried_bits[k] = (uint8_t)b;
			}
	if (cfg->save_session[0]) {
		if ((rc = xflow_session_writer_new(cfg->save_session, &app->session, err, errlen)))
			return rc;
		if ((rc = xflow_session_write_carried(app->session, app->cfg.limits.carried_bits))) {
			snprintf(err, errlen, "%s", xflow_session_writer_error(app->session));
			return rc;
		}
	}
	uint32_t max_sites = app->cfg.limits.max_hops * 2 < 65536 ? 65536 : app->cfg.limits.max_hops * 2;
	if ((rc = xft_sites_init(&app->sites, max_sites, site_lookup, app)))
		goto oom;
	if ((rc = xft_agg_new(&app->cfg.limits, xft_sites_group, &app->sites, &app->agg)))
		goto oom;
	xft_agg_set_roles(app->agg, xft_sites_roles, &app->sites);
	/* A collector sees Xen's scheduler: join its trace with the flows. */
	for (unsigned s = 0; s < app->nsrc; s++)
		if (app->src[s].ops->sched) {
			struct xft_sj_limits sl = { 0 };
			if ((rc = xft_agg_sched_join(app->agg, &sl, 0)))
				goto oom;
			break;
		}
	if ((rc = xft_frame_init(&app->frame, &app->cfg.limits)))
		goto oom;
	app->ui.path_points = calloc(app->cfg.limits.max_path, sizeof(*app->ui.path_points));
	app->ui.path_gaps = calloc(app->cfg.limits.max_path, sizeof(*app->ui.path_gaps));
	app->ui.hist_copy = malloc(sizeof(*app->ui.hist_copy));
	app->ui.hist_copy_hop = UINT32_MAX;
	if (!app->ui.path_points || !app->ui.path_gaps || !app->ui.hist_copy) {
		rc = -ENOMEM;
		goto oom;
	}
	if ((rc = xft_canvas_resize(&app->canvas, 24, 80)))
		goto oom;
	xft_ui_init(app);
	app->start_ns = app->now_ns = app->last_refresh_ns = xflow_monotonic_ns();
	domains_to_model(app);
	update_infos(app, 0);
	/* Last: listening says that the collectors are open. */
	if (cfg->listen[0] && (rc = xft_metrics_start(app, err, errlen)))
		return rc;
	return 0;
oom:
	snprintf(err, errlen, "cannot allocate the model (%s): lower max-flows, max-hops or max-pending",
		 strerror(-rc));
	return rc;
}

/* The signals that end the loop, and SIGUSR1's snapshot, whose default
 * action ends the process. */
static void quit_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR1);
}

/* Blocked in this thread before the loop's signal handles close, and
 * ignored once they have: closing the last handle of a signal gives it its
 * default action back (libuv sets SIG_DFL), which kills, and the mask of
 * one thread does not keep a signal sent to the process from another
 * thread (a library's, ASan's).  One quit often comes as two signals:
 * timeout(1) passes its own to the command and to the process group. */
static void hold_quit_signals(struct xft_app *app)
{
	sigset_t set;
	quit_signals(&set);
	if (!app->quit_held && pthread_sigmask(SIG_BLOCK, &set, &app->quit_held_before) == 0)
		app->quit_held = 1;
}

static void ignore_quit_signals(void)
{
	sigset_t set;
	quit_signals(&set);
	struct sigaction ign = { .sa_handler = SIG_IGN };
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&set, s) == 1)
			sigaction(s, &ign, NULL);
}

/* Those that came during the shutdown are taken (the quit they ask for is
 * done), then the default actions the loop's handles left and the mask are
 * what they were. */
static void release_quit_signals(struct xft_app *app)
{
	if (!app->quit_held)
		return;
	sigset_t set;
	quit_signals(&set);
	const struct timespec now = { 0, 0 };
	while (sigtimedwait(&set, NULL, &now) > 0)
		;
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&set, s) == 1)
			sigaction(s, &dfl, NULL);
	pthread_sigmask(SIG_SETMASK, &app->quit_held_before, NULL);
	app->quit_held = 0;
}

void xft_app_fini(struct xft_app *app)
{
	xft_metrics_stop(app);
	/* Committed only when the app came up: a failed start leaves no
	 * session under the final name. */
	if (app->session && xflow_session_writer_free(app->session, app->agg != NULL, app->session_error,
						      sizeof(app->session_error)) == 0)
		app->session_error[0] = '\0';
	app->session = NULL;
	if (app->session_error[0])
		fprintf(stderr, "xflowtop: save-session: %s: the session was not saved\n",
			app->session_error);
	app->session_error[0] = '\0';
	for (unsigned s = 0; s < app->nsrc; s++)
		if (app->src[s].ops->close)
			app->src[s].ops->close(app->src[s].c);
	app->nsrc = 0;
	/* After the collectors: closing the agent collector makes the agents
	 * detach (every patched byte restored) before the host stops. */
	xflow_demo_host_stop(app->demo);
	app->demo = NULL;
	if (app->agg)
		xft_agg_free(app->agg);
	app->agg = NULL;
	xft_frame_fini(&app->frame);
	xft_sites_fini(&app->sites);
	free(app->ui.path_points);
	app->ui.path_points = NULL;
	free(app->ui.path_gaps);
	app->ui.path_gaps = NULL;
	free(app->ui.hist_copy);
	app->ui.hist_copy = NULL;
	free(app->hv_vcpu_order);
	free(app->hv_event_order);
	app->hv_vcpu_order = app->hv_event_order = NULL;
	app->hv_vcpu_cap = app->hv_event_cap = 0;
	app->hv = NULL;
	xft_canvas_free(&app->canvas);
	xft_registry_fini(&app->reg);
	release_quit_signals(app);
}

/* --- the loop --------------------------------------------------------------- */

static void walk_close(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

/* The loop's handles closed for its end, the quit signals held first. */
static void close_loop(struct xft_app *app)
{
	hold_quit_signals(app);
	uv_walk(&app->loop->loop, walk_close, NULL);
	ignore_quit_signals();
}

static void after(struct xft_app *app, unsigned rx)
{
	xft_app_react(app, rx);
	if (app->quit) {
		close_loop(app);
		return;
	}
	if ((rx & (XFT_RX_REDRAW | XFT_RX_REORDER | XFT_RX_SNAPSHOT)) && app->renderer->draw)
		app->renderer->draw(app);
}

static void on_refresh(uv_timer_t *t)
{
	struct xft_app_loop *l = xflow_container_of(t, struct xft_app_loop, refresh);
	struct xft_app *app = l->app;
	xft_app_refresh(app, xflow_monotonic_ns());
	if (app->renderer->frame)
		app->renderer->frame(app);
	if (app->cfg.iterations && (long)app->iteration >= app->cfg.iterations)
		app->quit = 1;
	int all_ended = app->nsrc > 0;
	for (unsigned s = 0; s < app->nsrc; s++)
		all_ended &= source_done(&app->src[s]);
	/* Batch mode ends with its input (a replay); the screen stays, and
	 * so does a headless exporter, whose figures are still scraped. */
	if (all_ended && app->renderer != &xft_renderer_curses && app->renderer != &xft_renderer_headless)
		app->quit = 1;
	after(app, 0);
}

static void on_collect(uv_timer_t *t)
{
	struct xft_app_loop *l = xflow_container_of(t, struct xft_app_loop, collect);
	struct xft_app *app = l->app;
	uint64_t now = xflow_monotonic_ns();
	for (unsigned s = 0; s < app->nsrc; s++)
		if (app->src[s].nfds > 0)
			collect_one(app, s, now, READ_BATCH * 16);
	/* The scheduler's events are taken at this pace too, not the
	 * screen's: the hops waiting for the trace (65,536 at most, 1.7 s of
	 * the demo's) and a live collector's queue of events are bounded,
	 * and taken only at each refresh (-d) the trace lagged the flows by
	 * the whole interval: both overflowed, into '?' and losses. */
	collect_sched(app, now);
}

/*
 * The monitor is leaving: each source that traces live is asked to let go
 * (an agent moves what its targets recorded into its ring, answers, then
 * restores them) and read until it says nothing more comes, or
 * DETACH_WAIT_NS, so that the exit snapshot and the saved session keep the
 * records written before the quit, and count what was lost among them,
 * instead of leaving them in a ring.  A guest's agent, over Xen, gets the
 * same time: its answer crosses two domains.
 */
#define DETACH_WAIT_NS 3000000000ull
static void drain_at_exit(struct xft_app *app)
{
	const uint64_t t0 = xflow_monotonic_ns();
	for (;;) {
		int waiting = 0;
		uint64_t now = xflow_monotonic_ns();
		for (unsigned s = 0; s < app->nsrc; s++) {
			struct xft_source *src = &app->src[s];
			if (!src->ops->detach || src->detached || src->ended)
				continue;
			src->detached = src->ops->detach(src->c, now) == 1;
			collect_one(app, s, now, READ_BATCH * 16);
			waiting |= !src->detached;
		}
		if (!waiting || now - t0 >= DETACH_WAIT_NS)
			return;
		const struct timespec pause = { 0, 2000000 };
		nanosleep(&pause, NULL);
	}
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct xft_app_loop *l = h->data;
	struct xft_app *app = l->app;
	unsigned rx = 0;
	switch (signum) {
	case SIGINT: case SIGTERM: case SIGHUP:
		rx = XFT_RX_QUIT;
		break;
	case SIGWINCH:
		if (app->renderer->resize)
			app->renderer->resize(app);
		rx = XFT_RX_REDRAW;
		break;
	case SIGUSR1:
		rx = XFT_RX_SNAPSHOT;
		break;
	}
	after(app, rx);
}

static void on_input(uv_poll_t *h, int status, int events)
{
	struct xft_app_loop *l = xflow_container_of(h, struct xft_app_loop, input);
	struct xft_app *app = l->app;
	if (status < 0 || (events & UV_DISCONNECT)) {
		after(app, XFT_RX_QUIT);
		return;
	}
	unsigned rx = app->renderer->input ? app->renderer->input(app) : 0;
	/* A terminal that hung up stays readable and gives nothing: leave
	 * rather than spin. */
	l->empty_inputs = rx ? 0 : l->empty_inputs + 1;
	if (l->empty_inputs > 10000)
		rx |= XFT_RX_QUIT;
	after(app, rx);
}

static void on_source(uv_poll_t *h, int status, int events)
{
	struct xft_app *app = ((struct xft_app_loop *)h->loop->data)->app;
	unsigned src = (unsigned)(uintptr_t)h->data;
	(void)events;
	if (status < 0) {
		uv_poll_stop(h);
		return;
	}
	collect_one(app, src, xflow_monotonic_ns(), READ_BATCH * 16);
	if (app->src[src].ended)
		uv_poll_stop(h);
}

int xft_app_run(struct xft_app *app, const struct xft_renderer *r)
{
	char err[512];
	struct xft_app_loop *l = calloc(1, sizeof(*l));
	if (!l)
		return 1;
	app->loop = l;
	app->renderer = r;
	l->app = app;
	uv_loop_init(&l->loop);
	l->loop.data = l;

	/* Signals first: ncurses leaves handlers it finds in place alone, so
	 * SIGWINCH, SIGINT and SIGTERM come to the loop. */
	static const int signums[5] = { SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGUSR1 };
	for (int i = 0; i < 5; i++) {
		uv_signal_init(&l->loop, &l->sig[i]);
		l->sig[i].data = l;
		uv_signal_start(&l->sig[i], on_signal, signums[i]);
	}
	if (r->start && r->start(app, err, sizeof(err))) {
		fprintf(stderr, "xflowtop: %s\n", err);
		uv_walk(&l->loop, walk_close, NULL);
		uv_run(&l->loop, UV_RUN_DEFAULT);
		uv_loop_close(&l->loop);
		free(l);
		app->loop = NULL;
		return 1;
	}
	for (unsigned s = 0; s < app->nsrc; s++)
		for (int k = 0; k < app->src[s].nfds; k++) {
			uv_poll_t *p = &l->polls[l->npolls].poll;
			if (uv_poll_init(&l->loop, p, app->src[s].fds[k]))
				continue;
			p->data = (void *)(uintptr_t)s;
			uv_poll_start(p, UV_READABLE, on_source);
			l->npolls++;
		}
	int fd = r->input_fd ? r->input_fd(app) : -1;
	if (fd >= 0 && uv_poll_init(&l->loop, &l->input, fd) == 0) {
		uv_poll_start(&l->input, UV_READABLE | UV_DISCONNECT, on_input);
		l->have_input = 1;
	}
	uint64_t ms = (uint64_t)(app->cfg.refresh_s * 1000.0 + 0.5);
	uv_timer_init(&l->loop, &l->refresh);
	/* The first screen comes quickly, the next ones at the interval. */
	uv_timer_start(&l->refresh, on_refresh, r == &xft_renderer_curses ? (ms < 200 ? ms : 200) : ms, ms);
	uv_timer_init(&l->loop, &l->collect);
	uv_timer_start(&l->collect, on_collect, COLLECT_MS, COLLECT_MS);
	if (r->draw)
		r->draw(app);

	uv_run(&l->loop, UV_RUN_DEFAULT);

	if (r->stop)
		r->stop(app);
	drain_at_exit(app);
	/* Nothing more comes to reorder, and no trace will pass the hops
	 * still waiting for it: what the window holds (up to a window of
	 * records, a second's with --set reorder-window=1000) goes into the
	 * model, as at the end of a replay, so that the exit snapshot holds
	 * every record the session saved. */
	xft_agg_drain(app->agg);
	xft_agg_sched_flush(app->agg);
	for (unsigned s = 0; s < app->nsrc; s++)
		if (app->src[s].failed) {
			/* A broken source (a corrupted trace file...) is an error
			 * even though what it gave was shown. */
			fprintf(stderr, "xflowtop: %s: %s\n", app->src[s].spec, app->src[s].error);
			app->exit_code = 1;
		}
	if (app->cfg.snapshot_on_exit[0]) {
		update_hv(app);
		xft_frame_build(&app->frame, app->agg, &app->sites);
		xft_app_order(app);
		if (xft_snapshot_write(app, app->cfg.snapshot_on_exit, err, sizeof(err))) {
			fprintf(stderr, "xflowtop: %s\n", err);
			app->exit_code = 1;
		}
	}
	/* The quit signals held and ignored (close_loop): the shutdown still
	 * has the session to commit and the agents to let go (xft_app_fini). */
	close_loop(app);
	uv_run(&l->loop, UV_RUN_DEFAULT);
	uv_loop_close(&l->loop);
	free(l);
	app->loop = NULL;
	return app->exit_code;
}
