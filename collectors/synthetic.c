/*
 * The synthetic collector: flows along the XenLASY paper's Table 2 path
 * (a packet from a guest's TCP stack through netfront, netback, the bridge
 * and the driver), generated deterministically with known latencies, and
 * named as the real sites would be.  It is labelled synthetic everywhere:
 * records carry XFLOW_REC_SYNTHETIC and the domains' source says so.
 *
 * Options (comma-separated key=value):
 *   rate=N        flows per second (default 1000, 1 .. 10,000,000)
 *   seed=N        the generator's seed (default 1)
 *   guests=N      guest domains sharing dom0 (default 1, at most 8)
 *   jitter=PCT    each gap varies uniformly by +-PCT % (default 20, 0 .. 99)
 *   delay=FUNC:NS add NS ns to the gap into function FUNC (repeatable)
 *
 * Flow k starts at t0 + k / rate; its points follow the path with gap_i *
 * (1 + jitter * u), u uniform in [-1, 1) from a hash of (seed, k, i), so
 * the median of every hop is its gap whatever the batching of reads.  A
 * flow's records are delivered once its last point is in the past.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/builtin.h"
#include "xflow/clock.h"

/* Table 2 of the paper: elapsed us 0.0, 3.4, 15.3, ... as gaps in ns. */
const struct xflow_synthetic_point xflow_synthetic_path[] = {
	{ 0, "net/core/skbuff.c", 234, "alloc_skb_from_cache", 0 },
	{ 0, "net/ipv4/tcp.c", 726, "tcp_sendmsg", 3400 },
	{ 0, "net/ipv4/tcp_output.c", 495, "tcp_set_skb_tso_segs", 11900 },
	{ 0, "net/core/dev.c", 1379, "dev_queue_xmit", 57100 },
	{ 0, "net/core/skbuff.c", 471, "skb_clone", 28900 },
	{ 0, "drivers/xen/netfront/netfront.c", 963, "network_start_xmit", 29500 },
	{ 1, "drivers/xen/netback/netback.c", 1058, "netbk_fill_frags", 751700 },
	{ 1, "net/core/dev.c", 1543, "netif_rx", 12400 },
	{ 1, "net/core/dev.c", 1730, "netif_receive_skb", 2415500 },
	{ 1, "net/bridge/br_netfilter.c", 418, "br_nf_pre_routing", 22300 },
	{ 1, "net/bridge/br_forward.c", 70, "br_forward", 19500 },
	{ 1, "net/bridge/br_netfilter.c", 760, "br_nf_post_routing", 10300 },
	{ 1, "net/bridge/br_forward.c", 35, "br_dev_queue_push_xmit", 4600 },
	{ 1, "net/core/dev.c", 1379, "dev_queue_xmit", 1300 },
	{ 1, "drivers/net/sk98lin/skge.c", 1416, "SkGeXmit", 94200 },
	{ 1, "drivers/net/sk98lin/skge.c", 1829, "FreeTxDescriptors", 32900 },
};
#define NPOINTS (sizeof(xflow_synthetic_path) / sizeof(xflow_synthetic_path[0]))
const unsigned xflow_synthetic_npoints = NPOINTS;

/* The id crosses the ring in 12 bits of netif_tx_request.flags. */
#define CARRIED_BITS 12
#define XIN_POINT 5 /* network_start_xmit: the id leaves the guest here */
#define MAX_GUESTS 8

enum { ASPECT_XFLOW, ASPECT_ADVICE, NASPECTS };

struct synth {
	uint64_t rate, seed, jitter_pct;
	unsigned guests;
	uint64_t extra[NPOINTS];
	uint64_t t0, next_flow; /* flows below next_flow were delivered */
	uint64_t records, hits[NASPECTS];
	uint64_t per_domain[MAX_GUESTS + 1];
	int enabled[NASPECTS];
	char names[MAX_GUESTS + 1][16];
	char what[NPOINTS][64];
};

static uint64_t mix(uint64_t z)
{
	z += UINT64_C(0x9E3779B97F4A7C15);
	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_option(struct synth *s, char *kv, char *err, size_t errlen)
{
	char *eq = strchr(kv, '=');
	if (!eq) {
		snprintf(err, errlen, "synthetic: option '%s' is not key=value", kv);
		return -EINVAL;
	}
	*eq = 0;
	const char *k = kv, *v = eq + 1;
	uint64_t n;
	if (!strcmp(k, "rate") && !parse_u64(v, 1, 10000000, &n)) {
		s->rate = n;
	} else if (!strcmp(k, "seed") && !parse_u64(v, 0, UINT64_MAX, &n)) {
		s->seed = n;
	} else if (!strcmp(k, "guests") && !parse_u64(v, 1, MAX_GUESTS, &n)) {
		s->guests = (unsigned)n;
	} else if (!strcmp(k, "jitter") && !parse_u64(v, 0, 99, &n)) {
		s->jitter_pct = n;
	} else if (!strcmp(k, "delay")) {
		const char *colon = strrchr(v, ':');
		unsigned i;
		if (!colon || parse_u64(colon + 1, 0, UINT64_C(1000000000000), &n)) {
			snprintf(err, errlen, "synthetic: delay=%s: expected FUNCTION:NANOSECONDS", v);
			return -EINVAL;
		}
		/* The last point of that name: dev_queue_xmit is on the path
		 * twice, and dom0's is the one a queue would slow. */
		for (i = NPOINTS; i-- > 0;)
			if (strlen(xflow_synthetic_path[i].function) == (size_t)(colon - v) &&
			    !strncmp(xflow_synthetic_path[i].function, v, (size_t)(colon - v)))
				break;
		if (i >= NPOINTS || i == 0) {
			snprintf(err, errlen, "synthetic: delay=%s: no function '%.*s' after the first point",
				 v, (int)(colon - v), v);
			return -EINVAL;
		}
		s->extra[i] += n;
	} else {
		int known = !strcmp(k, "rate") || !strcmp(k, "seed") || !strcmp(k, "guests") ||
			    !strcmp(k, "jitter");
		if (known)
			snprintf(err, errlen, "synthetic: bad value '%s' for %s", v, k);
		else
			snprintf(err, errlen,
				 "synthetic: unknown option '%s' (rate, seed, guests, jitter, delay)", k);
		return -EINVAL;
	}
	return 0;
}

static int synth_open(const char *options, struct xflow_collector **out, char *err, size_t errlen)
{
	struct synth *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->rate = 1000;
	s->seed = 1;
	s->guests = 1;
	s->jitter_pct = 20;
	s->enabled[ASPECT_XFLOW] = s->enabled[ASPECT_ADVICE] = 1;
	char *copy = strdup(options ? options : "");
	if (!copy) {
		free(s);
		return -ENOMEM;
	}
	int rc = 0;
	for (char *save = NULL, *kv = strtok_r(copy, ",", &save); kv && !rc;
	     kv = strtok_r(NULL, ",", &save))
		rc = parse_option(s, kv, err, errlen);
	free(copy);
	if (rc) {
		free(s);
		return rc;
	}
	snprintf(s->names[0], sizeof(s->names[0]), "linux0");
	for (unsigned g = 1; g <= s->guests; g++)
		snprintf(s->names[g], sizeof(s->names[g]), g == 1 ? "linuxU" : "linuxU%u", g);
	for (unsigned i = 0; i < NPOINTS; i++)
		snprintf(s->what[i], sizeof(s->what[i]), "access sk_buff.%% (synthetic)");
	s->t0 = xflow_monotonic_ns();
	*out = (struct xflow_collector *)s;
	return 0;
}

/* Time of point @i of flow @k, relative to the flow's start. */
static uint64_t point_offset(const struct synth *s, uint64_t k, unsigned i)
{
	uint64_t t = 0;
	for (unsigned p = 1; p <= i; p++) {
		uint64_t gap = xflow_synthetic_path[p].gap_ns;
		/* u in [-1, 1): 53 random bits. */
		double u = (double)(mix(s->seed ^ mix(k * NPOINTS + p)) >> 11) * 0x1.0p-52 - 1.0;
		t += (uint64_t)((double)gap * (1.0 + (double)s->jitter_pct / 100.0 * u)) + s->extra[p];
	}
	return t;
}

static uint64_t flow_start(const struct synth *s, uint64_t k)
{
	return s->t0 + (uint64_t)((double)k * 1e9 / (double)s->rate);
}

static long synth_read(struct xflow_collector *c, uint64_t now, xflow_collector_emit_fn emit,
		       void *ctx, size_t max)
{
	struct synth *s = (struct synth *)c;
	long n = 0;
	while ((size_t)n + NPOINTS <= max) {
		uint64_t k = s->next_flow, start = flow_start(s, k);
		uint64_t end = start + point_offset(s, k, NPOINTS - 1);
		if (end > now)
			break;
		s->next_flow++;
		/* With the xflow off no id is ever assigned; with the
		 * recording advice off nothing is stored: no records. */
		if (!s->enabled[ASPECT_XFLOW] || !s->enabled[ASPECT_ADVICE])
			continue;
		unsigned guest = 1 + (unsigned)(k % s->guests);
		/* One id sequence for all guests: with a counter per guest,
		 * dom0 would see equal carried bits from two guests' live
		 * flows at once and could not tell them apart. */
		/* Odd, as the agents hand them out (xflow/flowid.h): never
		 * all zero in the bits carried to dom0. */
		uint64_t id = ((k << 1) | 1) & XFLOW_FLOWID_MAX;
		for (unsigned i = 0; i < NPOINTS; i++) {
			const struct xflow_synthetic_point *p = &xflow_synthetic_path[i];
			struct xflow_record r;
			memset(&r, 0, sizeof(r));
			r.version = XFLOW_RECORD_VERSION;
			r.domain_id = (uint16_t)(p->dom0 ? 0 : guest);
			r.site_id = i;
			r.flow_kind = 0;
			r.flow_id = p->dom0 ? id & ((1u << CARRIED_BITS) - 1) : id;
			r.flags = XFLOW_REC_SYNTHETIC;
			if (i == 0)
				r.flags |= XFLOW_REC_START;
			if (i == XIN_POINT)
				r.flags |= XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_TRUNCATED_ID;
			if (i == NPOINTS - 1)
				r.flags |= XFLOW_REC_QUIT;
			uint64_t t = start + point_offset(s, k, i);
			r.timestamp = t;
			r.ndata = 3; /* Figure 2: $pc$, tsc, id */
			r.data[0] = 0xffffffff81000000u + i * 0x40;
			r.data[1] = t;
			r.data[2] = r.flow_id;
			emit(ctx, &r, t);
			n++;
			s->records++;
			s->per_domain[r.domain_id]++;
			s->hits[ASPECT_ADVICE]++;
		}
		s->hits[ASPECT_XFLOW] += 4; /* start, move, xin, quit */
	}
	return n;
}

static void synth_stats(struct xflow_collector *c, struct xflow_collector_stats *out)
{
	struct synth *s = (struct synth *)c;
	memset(out, 0, sizeof(*out));
	out->records = s->records;
	out->ndomains = s->guests + 1;
}

static int synth_site_info(struct xflow_collector *c, uint16_t domain, uint32_t site,
			   struct xflow_site_info *out)
{
	struct synth *s = (struct synth *)c;
	if (site >= NPOINTS || domain > s->guests)
		return -ENOENT;
	const struct xflow_synthetic_point *p = &xflow_synthetic_path[site];
	if (p->dom0 != (domain == 0))
		return -ENOENT;
	out->domain = s->names[domain];
	out->file = p->file;
	out->line = p->line;
	out->function = p->function;
	out->what = s->what[site];
	/* As a plan would say: the id leaves the guest at XIN_POINT and
	 * arrives at dom0's first point, so the model matches the synthetic
	 * pairs as it matches an agent's. */
	out->roles = XFLOW_SITE_ROLES_KNOWN | (site == XIN_POINT ? XFLOW_SITE_SENDS : 0) |
		     (p->dom0 && site > 0 && !xflow_synthetic_path[site - 1].dom0 ? XFLOW_SITE_RECEIVES : 0);
	return 0;
}

static int synth_domain_info(struct xflow_collector *c, uint32_t i, struct xflow_domain_info *out)
{
	struct synth *s = (struct synth *)c;
	if (i > s->guests)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->id = (uint16_t)i;
	out->name = s->names[i];
	out->source = "synthetic (generated, not traced)";
	out->records = s->per_domain[i];
	return 0;
}

static int synth_aspect_info(struct xflow_collector *c, uint32_t i, struct xflow_aspect_info *out)
{
	struct synth *s = (struct synth *)c;
	static const char *const names[NASPECTS] = { "xflow netflow",
						     "advice access(sk_buff.%) [Figure 2]" };
	static const uint32_t sites[NASPECTS] = { 4, NPOINTS };
	if (i >= NASPECTS)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->name = names[i];
	out->sites = sites[i];
	out->hits = s->hits[i];
	out->enabled = s->enabled[i];
	return 0;
}

static int synth_aspect_set(struct xflow_collector *c, uint32_t i, int enabled)
{
	struct synth *s = (struct synth *)c;
	if (i >= NASPECTS)
		return -ENOENT;
	s->enabled[i] = !!enabled;
	return 0;
}

static unsigned synth_carried_bits(struct xflow_collector *c, uint16_t kind)
{
	(void)c;
	return kind == 0 ? CARRIED_BITS : 0;
}

static void synth_close(struct xflow_collector *c)
{
	free(c);
}

const struct xflow_collector_ops xflow_collector_synthetic = {
	.abi = XFLOW_COLLECTOR_ABI,
	.name = "synthetic",
	.help = "generated flows along the XenLASY paper's Table 2 path "
		"(rate=N,seed=N,guests=N,jitter=PCT,delay=FUNC:NS)",
	.open = synth_open,
	.read = synth_read,
	.stats = synth_stats,
	.site_info = synth_site_info,
	.domain_info = synth_domain_info,
	.aspect_info = synth_aspect_info,
	.aspect_set = synth_aspect_set,
	.carried_bits = synth_carried_bits,
	.close = synth_close,
};
