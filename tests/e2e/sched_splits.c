/*
 * sched-splits SESSION TRACE [--offset NS] [--lose FROM_NS:TO_NS]
 *
 * Issue 24's tests: every hop sample of a session saved by xflowtop
 * --save-session, split by the model joined with TRACE (xentrace, 2.4 GHz,
 * as the simulated host writes it), one a line:
 *
 *   FROMDOM:FUNCTION->TODOM:FUNCTION  t0  t1  run wait notify backend
 *   blocked offline xen unknown  CULPRIT (dDvV@pcpuP, or -)  no_trace lost
 *   clock old early
 *
 * (the reasons of the unknown last, so that the columns before keep
 * their place)
 *
 * each record at a notify point's site (XFLOW_SITE_NOTIFIES) as
 * "#notify DOMAIN T_NS FLOW_ID" when it is fed, then "#sched" with the
 * join's status (joined, clock error or -, trace records, lost, hops
 * split).  The records go through the model as
 * xflowtop feeds them (tui/aggregate.h, hops grouped by function), the
 * trace's events 50 ms ahead of them at most, as xflowtop takes them,
 * with the sites' roles the session saved.
 * --offset NS places the trace NS later on the flows' clock (the
 * collector's clock-offset); --lose drops the trace's events in [FROM, TO)
 * and says so with one LOST event at FROM, as Xen does when its buffers
 * are full.  Exit 0, or 1 with the reason.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/xentrace_collector.h"
#include "tui/aggregate.h"
#include "tui/sched_join.h"
#include "tui/sites.h"
#include "xflow/session.h"

struct site {
	uint16_t domain;
	uint32_t site, line, roles;
	char *dom, *file, *fn;
};

static struct site *sites;
static size_t nsites, capsites;
static struct xft_sites names;

static int lookup(void *ctx, uint16_t domain, uint32_t site, struct xflow_site_info *out)
{
	(void)ctx;
	for (size_t i = 0; i < nsites; i++)
		if (sites[i].domain == domain && sites[i].site == site) {
			memset(out, 0, sizeof(*out));
			out->domain = sites[i].dom;
			out->file = sites[i].file;
			out->line = sites[i].line;
			out->function = sites[i].fn;
			return 0;
		}
	return -ENOENT;
}

static const struct site *site_of(uint16_t domain, uint32_t site)
{
	for (size_t i = 0; i < nsites; i++)
		if (sites[i].domain == domain && sites[i].site == site)
			return &sites[i];
	return NULL;
}

/* The roles the session saved, as xflowtop's model had them live. */
static unsigned roles_of(void *ctx, uint16_t domain, uint32_t site)
{
	(void)ctx;
	const struct site *s = site_of(domain, site);
	return s ? s->roles : 0;
}

static void on_split(void *ctx, const struct xft_hop *h, uint64_t t0, uint64_t t1, const struct xft_split *s,
		     const struct xft_culprit *c)
{
	(void)ctx;
	printf("%u:%s->%u:%s\t%" PRIu64 "\t%" PRIu64, h->key.from_domain,
	       xft_sites_get(&names, h->key.from_domain, h->from_site)->function, h->key.to_domain,
	       xft_sites_get(&names, h->key.to_domain, h->to_site)->function, t0, t1);
	for (unsigned i = 0; i < XFT_NSTATES; i++)
		printf("\t%" PRIu64, s->ns[i]);
	if (c->wait_ns)
		printf("\td%uv%u@pcpu%u", c->domain, c->vcpu, c->pcpu);
	else
		printf("\t-");
	for (unsigned r = 0; r < XFT_UNK_NREASONS; r++)
		printf("\t%" PRIu64, s->unknown_ns[r]);
	printf("\n");
}

static uint64_t lose_from, lose_to;
static int lose_said;

static void sched_emit(void *ctx, const struct xflow_sched_event *e)
{
	if (e->t_ns >= lose_from && e->t_ns < lose_to) {
		if (!lose_said++) {
			struct xflow_sched_event l = { .t_ns = lose_from, .kind = XFLOW_SCHED_LOST, .arg = 1 };
			xft_agg_sched_event(ctx, &l);
		}
		return;
	}
	xft_agg_sched_event(ctx, e);
}

/* Trace events until the join's watermark passes @upto or the trace ends. */
static int pull(const struct xflow_collector_ops *ops, struct xflow_collector *c, struct xft_agg *a, uint64_t upto,
		int *ended)
{
	while (!*ended && xft_agg_sched_watermark(a) <= upto) {
		/* Taken before reading: a collector whose events are taken
		 * reads no more than its queue holds, and drops none. */
		long n = ops->sched(c, 0, sched_emit, a, 512);
		if (n < 0) {
			*ended = 1;
			break;
		}
		long r = ops->read(c, 0, NULL, NULL, 0);
		if (r < 0 && r != -ENODATA) {
			fprintf(stderr, "sched-splits: %s\n", ops->last_error(c) ? ops->last_error(c) : strerror((int)-r));
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *offset = NULL;
	for (int i = 3; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--offset"))
			offset = argv[i + 1];
		else if (!strcmp(argv[i], "--lose") &&
			 sscanf(argv[i + 1], "%" SCNu64 ":%" SCNu64, &lose_from, &lose_to) == 2)
			continue;
		else
			argc = 0;
	}
	if (argc < 3 || argc % 2 == 0) {
		fprintf(stderr, "usage: sched-splits SESSION TRACE [--offset NS] [--lose FROM_NS:TO_NS]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	char err[512], opts[4200];
	struct xflow_session_reader *r = NULL;
	int rc = xflow_session_reader_new(f, argv[1], &r, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "sched-splits: %s\n", err);
		return 1;
	}
	snprintf(opts, sizeof(opts), "file=%s,cpu-hz=2.4G%s%s", argv[2], offset ? ",clock-offset=" : "",
		 offset ? offset : "");
	const struct xflow_collector_ops *ops = &xflow_collector_xentrace;
	struct xflow_collector *c;
	if ((rc = ops->open(opts, &c, err, sizeof(err)))) {
		fprintf(stderr, "sched-splits: %s\n", err);
		return 1;
	}
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	struct xft_agg *a;
	struct xft_sj_limits sl = { 0 };
	if (xft_sites_init(&names, 65536, lookup, NULL) || xft_agg_new(&l, xft_sites_group, &names, &a) ||
	    xft_agg_sched_join(a, &sl, 0)) {
		fprintf(stderr, "sched-splits: out of memory\n");
		return 1;
	}
	xft_agg_on_split(a, on_split, NULL);
	xft_agg_set_roles(a, roles_of, NULL);
	struct xflow_session_chunk ch;
	int ended = 0;
	while ((rc = xflow_session_reader_next(r, &ch, err, sizeof(err))) == 1) {
		if (ch.type == XFLOW_SESSION_SITE) {
			if (nsites == capsites) {
				capsites = capsites ? 2 * capsites : 256;
				sites = realloc(sites, capsites * sizeof(*sites));
				if (!sites)
					return 1;
			}
			sites[nsites++] = (struct site){ ch.domain, ch.site, ch.line, ch.roles, strdup(ch.domain_name),
							 strdup(ch.file), strdup(ch.function) };
			xft_sites_set_domain(&names, ch.domain, ch.domain_name);
		} else if (ch.type == XFLOW_SESSION_RECORD) {
			if (pull(ops, c, a, ch.t_ns + UINT64_C(50000000), &ended))
				return 1;
			xft_agg_feed(a, &ch.record, ch.t_ns);
			const struct site *st = site_of(ch.record.domain_id, ch.record.site_id);
			if (st && (st->roles & XFLOW_SITE_NOTIFIES))
				printf("#notify\t%u\t%" PRIu64 "\t%" PRIu64 "\n", st->domain, ch.t_ns,
				       (uint64_t)ch.record.flow_id);
		}
	}
	if (rc < 0) {
		fprintf(stderr, "sched-splits: %s\n", err);
		return 1;
	}
	xft_agg_drain(a);
	if (pull(ops, c, a, UINT64_MAX - 1, &ended))
		return 1;
	xft_agg_sched_flush(a);
	const struct xft_sched_status *s = xft_agg_sched_status(a);
	printf("#sched\t%d\t", s->joined);
	if (s->clock_error_ns == UINT64_MAX)
		printf("-");
	else
		printf("%" PRIu64, s->clock_error_ns);
	printf("\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n", s->trace_records, s->trace_lost, s->hops_split);
	xft_agg_free(a);
	xft_sites_fini(&names);
	ops->close(c);
	xflow_session_reader_free(r);
	fclose(f);
	for (size_t i = 0; i < nsites; i++) {
		free(sites[i].dom);
		free(sites[i].file);
		free(sites[i].fn);
	}
	free(sites);
	return 0;
}
