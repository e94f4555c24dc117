/*
 * End-to-end driver on the simulated Xen host: the demo host
 * (tui/demo_host.h), one xflow-agent per domain, and the agent
 * collector opened here directly, as xflowtop opens it.
 *
 *   xflow-e2e flows [--rate N] [--duration S]
 *       Issue 6: flows/netflow.xml woven; every message segment of the
 *       truth file is a flow whose id was assigned in the guest (START),
 *       carried across the ring in netif_tx_request.flags bits 4-15 (a
 *       CROSS_DOMAIN|TRUNCATED_ID transit in the guest and a CROSS_DOMAIN
 *       one in dom0 with the same low 12 bits), and ended at the free in
 *       dom0 (QUIT); the stages the plan covers appear in the truth's order.
 *       Meanwhile the recording advice is switched off (its hits stop within
 *       one refresh while the flow markers keep coming) and on again.
 *   xflow-e2e detach
 *       Detach while the host runs (one agent by SIGTERM, the others asked
 *       by the monitor): every executable mapping of every domain equals
 *       its file byte for byte, and the host finishes with
 *       status 0 and a truth file that truth-check accepts.
 *   xflow-e2e top XFLOWTOP [--delay STAGE=DUR]
 *       Issue 7: xflowtop -b on the demo host through the agent collector;
 *       prints its last batch output and the truth's hop latencies for the
 *       calling script to compare.
 *   xflow-e2e counts XFLOWTOP FLOWS [--rate N] [--size BYTES] [--duration S]
 *                    [--max-flows N]
 *       Issue 19 item 1: xflowtop -b through the agent collector weaving
 *       FLOWS (tests/e2e/counts.xml), each domain's executable also named
 *       again with bin= (once by the same path, once through a symbolic
 *       link); once the host is done, the flows xflowtop counted (its exit
 *       snapshot) must be exactly what the truth file says happened:
 *       started = segments + clones = finished, none expired, evicted,
 *       partial or left live.
 *       With --max-flows N (issue 19 item 5), the model has room for N live
 *       flows only: flows are evicted, and their later records make partial
 *       flows, none of which may be among the slowest: every flow listed
 *       there began where the flow file starts flows, in the guest.
 *   xflow-e2e serve XFLOWTOP [--delay STAGE=DUR] [--rate N] [--duration S]
 *                  [--go-when FILE] -- ARGS...
 *       Issue 18: the demo host, and XFLOWTOP --collector agent:... ARGS
 *       (ARGS give --listen and the output); its standard output is left
 *       alone, its standard error passes through here, and its "serving
 *       http://" line lets the traffic go (once FILE exists, with
 *       --go-when: the caller may want Prometheus scraping first).  Says
 *       "host finished" on standard error when the host's duration is
 *       over; SIGTERM is passed on to xflowtop, and the host stops once
 *       xflowtop has exited.
 *
 * Exit 0 pass, 1 fail, 77 skip (reason on the last line).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collectors/agent_collector.h"
#include "tui/demo_host.h"
#include "tests/e2e/collector_pump.h"
#include "tests/tui/jsonlite.h"
#include "xflow/clock.h"
#include "xflow/collector.h"

/* The simulated host runs at its own default rate (xensim --rate: 1000
 * messages/s per guest) unless a test asks otherwise: woven in process,
 * the traced host keeps that pace, and the checks against its truth file
 * must hold there, not only on a host slowed down to suit the tracer. */
#define SIM_RATE 1000

#define FAILF(...) do { fprintf(stdout, "FAIL: " __VA_ARGS__); fputc('\n', stdout); failures++; } while (0)

static int failures;
/* When the recording advice was off: flows that overlap miss stages. */
static uint64_t toggle_off_ns, toggle_on_ns;
static char truth_path[128];

struct rec {
	uint64_t t;
	uint64_t id;
	uint32_t site;
	uint16_t dom, flags;
	uint8_t ndata;
	const char *func, *inl;
};

static struct rec *recs;
static size_t nrecs, caprecs;
static const struct xflow_collector_ops *ops = &xflow_collector_agent;
static struct xflow_collector *coll;

static void emit(void *ctx, const struct xflow_record *r, uint64_t t_ns)
{
	(void)ctx;
	if (nrecs == caprecs) {
		caprecs = caprecs ? caprecs * 2 : 65536;
		recs = realloc(recs, caprecs * sizeof(*recs));
		if (!recs)
			abort();
	}
	recs[nrecs++] = (struct rec){ .t = t_ns, .id = r->flow_id, .site = r->site_id, .dom = r->domain_id,
				      .flags = r->flags, .ndata = r->ndata };
}

/* Read what is ready for @ms milliseconds. */
static void pump(int ms)
{
	e2e_pump(ops, coll, emit, NULL, ms);
}

static void skip_if_no_ptrace(void)
{
	pid_t c = fork();
	if (c == 0) {
		pause();
		_exit(0);
	}
	int ok = ptrace(PTRACE_SEIZE, c, 0, 0) == 0;
	kill(c, SIGKILL);
	waitpid(c, NULL, __WALL);
	if (!ok) {
		printf("ptrace not permitted here\n");
		exit(77);
	}
}

static struct xflow_demo_host *host;

static void on_signal(int sig)
{
	xflow_demo_host_kill(host);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Whatever way the driver ends, nothing of the run stays behind: the
 * demo host stops its own children at exit; the truth file is ours. */
static void cleanup(void)
{
	if (truth_path[0]) {
		char check[160];
		unlink(truth_path);
		snprintf(check, sizeof(check), "%s.check", truth_path);
		unlink(check);
	}
}

static void start_host(struct xflow_demo_opts *o)
{
	snprintf(truth_path, sizeof(truth_path), "/tmp/xflow-e2e-truth-%d", (int)getpid());
	o->truth = truth_path;
	atexit(cleanup);
	o->bindir = getenv("E2E_BINDIR");
	o->hold = 1;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	int rc = xflow_demo_host_start(o, &host);
	if (rc) {
		printf("%s\n", xflow_demo_host_error());
		exit(1);
	}
}

/* Stop the host; after a failure, first show what its agents said (their
 * logs go with the host's scratch directory): a run in which the targets
 * never fired left nothing to say why. */
static void stop_host_telling(void)
{
	if (failures) {
		char cmd[PATH_MAX + 200];
		snprintf(cmd, sizeof(cmd),
			 "for f in %s/../agent-*.log; do echo \"--- $f, its last lines:\"; tail -30 \"$f\"; done",
			 xflow_demo_host_socket_dir(host));
		fflush(stdout);
		if (system(cmd) != 0)
			printf("(no agent logs)\n");
	}
	xflow_demo_host_stop(host);
}

static void open_collector(void)
{
	char err[1024];
	uint64_t t = xflow_monotonic_ns();
	int rc = ops->open(xflow_demo_host_options(host), &coll, err, sizeof(err));
	if (rc) {
		printf("cannot open the agent collector: %s\n", err);
		xflow_demo_host_stop(host);
		exit(1);
	}
	printf("collector open, plans loaded in %.2f s%s%s\n", (double)(xflow_monotonic_ns() - t) / 1e9,
	       ops->last_error(coll) ? ": " : "", ops->last_error(coll) ? ops->last_error(coll) : "");
}

/* ---- the truth ------------------------------------------------------------ */

struct stage {
	uint64_t t;
	unsigned dom;
	char name[40];
};

struct unit {
	unsigned msg, seg;
	struct stage st[32];
	unsigned n;
	uint64_t xmit; /* when it passed network_start_xmit */
};

static struct unit *units;
static size_t nunits;

static int cmp_stage(const void *a, const void *b)
{
	const struct stage *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

static int cmp_unit(const void *a, const void *b)
{
	const struct unit *x = a, *y = b;
	return x->xmit < y->xmit ? -1 : x->xmit > y->xmit;
}

static void read_truth(unsigned guest)
{
	FILE *f = fopen(truth_path, "r");
	if (!f) {
		FAILF("no truth file %s", truth_path);
		return;
	}
	char line[512];
	size_t cap = 0;
	while (fgets(line, sizeof(line), f)) {
		uint64_t t;
		unsigned dom, g, msg, seg, nseg;
		char path[8], stage[40];
		if (line[0] == '#' || sscanf(line, "%" SCNu64 " %u %u %7s %u %u %u %39s", &t, &dom, &g, path, &msg, &seg,
					     &nseg, stage) != 8)
			continue;
		if (g != guest || strcmp(path, "net") != 0)
			continue;
		size_t k;
		for (k = nunits; k-- > 0;)
			if (units[k].msg == msg && units[k].seg == seg)
				break;
		if (k == (size_t)-1) {
			if (nunits == cap) {
				cap = cap ? cap * 2 : 1024;
				units = realloc(units, cap * sizeof(*units));
			}
			k = nunits++;
			memset(&units[k], 0, sizeof(units[k]));
			units[k].msg = msg;
			units[k].seg = seg;
		}
		struct unit *u = &units[k];
		if (u->n < 32) {
			u->st[u->n].t = t;
			u->st[u->n].dom = dom;
			snprintf(u->st[u->n].name, sizeof(u->st[0].name), "%s", stage);
			u->n++;
		}
		if (!strcmp(stage, "network_start_xmit"))
			u->xmit = t;
	}
	fclose(f);
	for (size_t i = 0; i < nunits; i++)
		qsort(units[i].st, units[i].n, sizeof(units[i].st[0]), cmp_stage);
	qsort(units, nunits, sizeof(*units), cmp_unit);
}

/* ---- flows from the records -------------------------------------------------- */

static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	if (x->dom != y->dom)
		return x->dom < y->dom ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

struct flow {
	size_t first, n;      /* guest records */
	size_t d0first, d0n;  /* dom0 records */
	uint64_t xin_t;
};

static int cmp_flow(const void *a, const void *b)
{
	const struct flow *x = a, *y = b;
	return x->xin_t < y->xin_t ? -1 : x->xin_t > y->xin_t;
}

static bool covered(unsigned dom, const char *fn)
{
	static char seen[256][48];
	static unsigned nseen;
	static bool built;
	if (!built) {
		for (size_t i = 0; i < nrecs; i++) {
			if (!recs[i].func || !recs[i].id)
				continue;
			char key[48];
			snprintf(key, sizeof(key), "%u:%s", recs[i].dom ? 1u : 0u, recs[i].func);
			unsigned k;
			for (k = 0; k < nseen && strcmp(seen[k], key); k++)
				;
			if (k == nseen && nseen < 256)
				snprintf(seen[nseen++], sizeof(seen[0]), "%s", key);
		}
		built = true;
	}
	char key[48];
	snprintf(key, sizeof(key), "%u:%s", dom ? 1u : 0u, fn);
	for (unsigned k = 0; k < nseen; k++)
		if (!strcmp(seen[k], key))
			return true;
	return false;
}

static bool rec_is(const struct rec *r, const char *fn)
{
	return (r->func && !strcmp(r->func, fn)) || (r->inl && !strcmp(r->inl, fn));
}

static void check_flows(unsigned guest)
{
	for (size_t i = 0; i < nrecs; i++) {
		struct xflow_site_info si;
		if (ops->site_info(coll, recs[i].dom, recs[i].site, &si) == 0) {
			recs[i].func = si.function;
			recs[i].inl = NULL;
		}
	}
	qsort(recs, nrecs, sizeof(*recs), cmp_rec);
	struct flow *fl = calloc(nrecs + 1, sizeof(*fl));
	size_t nfl = 0, markers_only = 0;
	/* Guest flows that crossed the ring. */
	for (size_t i = 0; i < nrecs;) {
		size_t j = i;
		while (j < nrecs && recs[j].dom == recs[i].dom && recs[j].id == recs[i].id)
			j++;
		if (recs[i].dom == guest && recs[i].id) {
			for (size_t k = i; k < j; k++)
				if ((recs[k].flags & 0x08) && (recs[k].flags & 0x20)) {
					fl[nfl++] = (struct flow){ .first = i, .n = j - i, .xin_t = recs[k].t };
					break;
				}
		}
		i = j;
	}
	qsort(fl, nfl, sizeof(*fl), cmp_flow);
	read_truth(guest);
	printf("%zu message segments in the truth, %zu flows crossed the ring from guest %u\n", nunits, nfl, guest);
	if (nunits == 0)
		FAILF("no message in the truth file");
	if (nfl != nunits)
		FAILF("%zu flows for %zu message segments", nfl, nunits);
	size_t bad = 0, checked_order = 0;
	uint64_t maxdt = 0;
	for (size_t u = 0; u < nunits && u < nfl; u++) {
		struct flow *f = &fl[u];
		struct unit *un = &units[u];
		uint64_t dt = f->xin_t > un->xmit ? f->xin_t - un->xmit : un->xmit - f->xin_t;
		if (dt > maxdt)
			maxdt = dt;
		const struct rec *g = &recs[f->first];
		uint64_t id = g->id, carried = id & 0xfff;
		bool start = false, data = false;
		for (size_t k = 0; k < f->n; k++) {
			start |= (g[k].flags & 0x01) && rec_is(&g[k], "alloc_skb_from_cache");
			data |= g[k].ndata > 0;
		}
		/* dom0's flow: the id's carried bits, first seen after the xin. */
		size_t d0 = SIZE_MAX, d0n = 0;
		for (size_t i = 0; i < nrecs; i++)
			if (recs[i].dom == 0 && recs[i].id == carried) {
				size_t j = i;
				while (j < nrecs && recs[j].dom == 0 && recs[j].id == carried)
					j++;
				d0 = i, d0n = j - i;
				break;
			}
		bool xout = false, quit = false;
		uint64_t last_t = g[f->n - 1].t;
		for (size_t k = 0; d0 != SIZE_MAX && k < d0n; k++) {
			const struct rec *r = &recs[d0 + k];
			xout |= (r->flags & 0x08) && (r->flags & 0x02);
			quit |= (r->flags & 0x04) && rec_is(r, "__kfree_skb");
			data |= r->ndata > 0;
			if (r->t > last_t)
				last_t = r->t;
		}
		/* Flows the switch cut through have part of their records. */
		bool straddles = toggle_off_ns && g[0].t < toggle_on_ns + 50000000u &&
				 last_t + 50000000u > toggle_off_ns;
		char why[256] = "";
		if (dt > 50000000u)
			snprintf(why, sizeof(why), "xin %.3f ms from the truth's network_start_xmit", (double)dt / 1e6);
		else if (!start)
			snprintf(why, sizeof(why), "no START in the guest's alloc_skb_from_cache");
		else if (d0 == SIZE_MAX || !xout)
			snprintf(why, sizeof(why), "id %" PRIu64 " (carried %" PRIu64 ") never picked up in dom0", id,
				 carried);
		else if (!quit)
			snprintf(why, sizeof(why), "no QUIT at __kfree_skb in dom0");
		if (!why[0] && (!data || straddles))
			markers_only++;
		if (!why[0] && data && !straddles) {
			/* Stage order: each stage the plan covers, in the truth's
			 * order, in the guest's records then dom0's. */
			size_t gi = 0, di = 0;
			checked_order++;
			for (unsigned s = 0; s < un->n && !why[0]; s++) {
				const struct stage *st = &un->st[s];
				if (!covered(st->dom, st->name))
					continue;
				if (st->dom == guest) {
					while (gi < f->n && !rec_is(&g[gi], st->name))
						gi++;
					if (gi == f->n)
						snprintf(why, sizeof(why), "guest stage %s missing or out of order", st->name);
				} else if (st->dom == 0) {
					while (di < d0n && !rec_is(&recs[d0 + di], st->name))
						di++;
					if (di == d0n)
						snprintf(why, sizeof(why), "dom0 stage %s missing or out of order", st->name);
				}
			}
		}
		if (why[0] && bad++ < 10)
			printf("message %u segment %u (flow %" PRIu64 "): %s\n", un->msg, un->seg, id, why);
	}
	printf("%zu flows checked: %zu bad, %zu with stage order checked, %zu during the switch (recording "
	       "advice off), xin within %.3f ms of the truth\n",
	       nunits < nfl ? nunits : nfl, bad, checked_order, markers_only, (double)maxdt / 1e6);
	if (bad)
		FAILF("%zu messages do not match the truth", bad);
	free(fl);
}

/* ---- the modes --------------------------------------------------------------- */

static int find_aspect(const char *prefix)
{
	struct xflow_aspect_info ai;
	for (uint32_t i = 0; ops->aspect_info(coll, i, &ai) == 0; i++)
		if (!strncmp(ai.name, prefix, strlen(prefix)))
			return (int)i;
	return -1;
}

static uint64_t hits_of(int i)
{
	struct xflow_aspect_info ai;
	return ops->aspect_info(coll, (uint32_t)i, &ai) == 0 ? ai.hits : 0;
}

static int mode_flows(int argc, char **argv)
{
	struct xflow_demo_opts o = { .guests = 1, .rate = SIM_RATE, .duration = "8" };
	for (int i = 0; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--rate"))
			o.rate = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--duration"))
			o.duration = argv[i + 1];
	}
	start_host(&o);
	open_collector();
	xflow_demo_host_go(host);
	uint64_t t0 = xflow_monotonic_ns();
	int adv = find_aspect("advice"), xf = find_aspect("xflow");
	if (ops->carried_bits(coll, 0) != 12)
		FAILF("netflow carries %u id bits across the ring, not 12", ops->carried_bits(coll, 0));
	if (adv < 0 || xf < 0)
		FAILF("aspects missing (advice %d, xflow %d)", adv, xf);
	pump(1200);
	if (adv >= 0 && xf >= 0) {
		/* One refresh: the monitor asks for stats at least every 0.2 s
		 * and refreshes every second. */
		toggle_off_ns = xflow_monotonic_ns();
		ops->aspect_set(coll, (uint32_t)adv, 0);
		pump(1000);
		uint64_t h1 = hits_of(adv), x1 = hits_of(xf);
		pump(700);
		uint64_t h2 = hits_of(adv), x2 = hits_of(xf);
		printf("advice off: hits %" PRIu64 " -> %" PRIu64 ", xflow hits %" PRIu64 " -> %" PRIu64 "\n", h1, h2,
		       x1, x2);
		if (h2 != h1)
			FAILF("the recording advice still hits after one refresh (%" PRIu64 " -> %" PRIu64 ")", h1, h2);
		if (x2 <= x1)
			FAILF("the targets stopped while the advice was off");
		ops->aspect_set(coll, (uint32_t)adv, 1);
		toggle_on_ns = xflow_monotonic_ns();
		pump(1000);
		uint64_t h3 = hits_of(adv);
		printf("advice on: hits %" PRIu64 " -> %" PRIu64 "\n", h2, h3);
		if (h3 <= h2)
			FAILF("the recording advice did not resume");
	}
	/* Until the host finishes by itself; the agents then exit and the
	 * collector drains their rings. */
	int st;
	while ((st = xflow_demo_host_wait(host, 0)) == -ETIMEDOUT)
		pump(100);
	pump(500);
	double secs = (double)(xflow_monotonic_ns() - t0) / 1e9;
	uint64_t hits = 0;
	struct xflow_aspect_info ai;
	for (uint32_t i = 0; ops->aspect_info(coll, i, &ai) == 0; i++)
		hits += ai.hits;
	struct xflow_collector_stats cs;
	ops->stats(coll, &cs);
	printf("host exit %d; %zu records (%.0f/s into the monitor), %" PRIu64 " advice runs (%.0f/s), "
	       "%" PRIu64 " dropped, %" PRIu64 " bad\n",
	       st, nrecs, (double)nrecs / secs, hits, (double)hits / secs, cs.drops, cs.bad);
	if (st != 0)
		FAILF("the host exited with %d", st);
	if (cs.drops || cs.bad)
		FAILF("records dropped or bad");
	check_flows(1);
	ops->close(coll);
	stop_host_telling();
	unlink(truth_path);
	return failures ? 1 : 0;
}

/* Executable mappings of @pid against their files. */
static unsigned text_diffs(pid_t pid, unsigned *checked)
{
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *m = fopen(path, "r");
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int mem = open(path, O_RDONLY);
	unsigned diffs = 0;
	if (!m || mem < 0) {
		FAILF("cannot read process %d", (int)pid);
		if (m)
			fclose(m);
		if (mem >= 0)
			close(mem);
		return 1;
	}
	while (fgets(line, sizeof(line), m)) {
		unsigned long lo, hi, off;
		char perms[8], file[PATH_MAX] = "";
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095s", &lo, &hi, perms, &off, file) < 4 || perms[2] != 'x' ||
		    file[0] != '/')
			continue;
		int fd = open(file, O_RDONLY);
		if (fd < 0)
			continue;
		size_t len = hi - lo;
		unsigned char *a = malloc(len), *b = malloc(len);
		ssize_t na = pread(fd, a, len, (off_t)off);
		ssize_t nb = pread(mem, b, len, (off_t)lo);
		if (na > 0 && nb >= na) {
			(*checked)++;
			if (memcmp(a, b, (size_t)na) != 0) {
				diffs++;
				printf("process %d: %s differs from its file\n", (int)pid, file);
			}
		}
		free(a);
		free(b);
		close(fd);
	}
	fclose(m);
	close(mem);
	return diffs;
}

static int mode_detach(void)
{
	struct xflow_demo_opts o = { .guests = 1, .rate = SIM_RATE, .duration = "3" };
	start_host(&o);
	open_collector();
	xflow_demo_host_go(host);
	pump(1200);
	size_t before = nrecs;
	/* The comparison sees the breakpoints while they are in. */
	unsigned checked = 0, diffs = 0;
	for (unsigned i = 0; i < xflow_demo_host_ndomains(host); i++) {
		unsigned id;
		const char *name;
		pid_t pid;
		xflow_demo_host_domain(host, i, &id, &name, &pid);
		diffs += text_diffs(pid, &checked);
	}
	printf("while attached: %u executable mappings differ from their files\n", diffs);
	if (!diffs)
		FAILF("the text comparison does not see the breakpoints");
	checked = diffs = 0;
	/* One agent stopped by SIGTERM, the others asked by the monitor. */
	struct xflow_domain_info di;
	unsigned apid = 0;
	if (ops->domain_info(coll, 0, &di) == 0 && sscanf(di.source, "xflow-agent pid %u", &apid) == 1 && apid) {
		printf("SIGTERM to the agent of domain %u (pid %u)\n", (unsigned)di.id, apid);
		kill((pid_t)apid, SIGTERM);
		pump(300);
	} else {
		FAILF("no agent pid for domain 0");
	}
	ops->close(coll); /* DETACH: each agent restores its targets and exits */
	coll = NULL;
	/* Agents exit once they have let go: give them a moment. */
	struct timespec ts = { 0, 300 * 1000000L };
	nanosleep(&ts, NULL);
	for (unsigned i = 0; i < xflow_demo_host_ndomains(host); i++) {
		unsigned id;
		const char *name;
		pid_t pid;
		xflow_demo_host_domain(host, i, &id, &name, &pid);
		diffs += text_diffs(pid, &checked);
		char st[64], l[256];
		snprintf(st, sizeof(st), "/proc/%d/status", (int)pid);
		FILE *f = fopen(st, "r");
		while (f && fgets(l, sizeof(l), f))
			if (!strncmp(l, "TracerPid:", 10) && atoi(l + 10) != 0)
				FAILF("domain %u still traced after detach", id);
		if (f)
			fclose(f);
	}
	printf("%zu records before detach; %u executable mappings compared, %u differ\n", before, checked, diffs);
	if (!before)
		FAILF("no record before detach");
	if (!checked || diffs)
		FAILF("text not restored");
	int rc = xflow_demo_host_wait(host, 20000);
	printf("host exit %d\n", rc);
	if (rc != 0)
		FAILF("the host did not finish normally (%d)", rc);
	char cmd[768];
	snprintf(cmd, sizeof(cmd), "%s/../sim/truth-check %s > %s.check; rc=$?; tail -1 %s.check; rm -f %s.check; exit $rc",
		 getenv("E2E_BINDIR") ? getenv("E2E_BINDIR") : "build/bin", truth_path, truth_path, truth_path, truth_path);
	if (system(cmd) != 0)
		FAILF("truth-check refused the run");
	xflow_demo_host_stop(host);
	unlink(truth_path);
	return failures ? 1 : 0;
}

/* The host's options of the top and serve modes: --delay, --rate, --duration. */
static void host_option(struct xflow_demo_opts *o, const char *opt, char *value)
{
	if (!strcmp(opt, "--delay") && o->ndelays < XFLOW_DEMO_MAX_DELAYS)
		o->delays[o->ndelays++] = value;
	else if (!strcmp(opt, "--rate"))
		o->rate = (unsigned)atoi(value);
	else if (!strcmp(opt, "--duration"))
		o->duration = value;
}

static int mode_top(int argc, char **argv)
{
	struct xflow_demo_opts o = { .guests = 1, .rate = SIM_RATE, .duration = "4" };
	const char *xflowtop = argv[0];
	for (int i = 1; i + 1 < argc; i += 2)
		host_option(&o, argv[i], argv[i + 1]);
	start_host(&o);
	char copt[PATH_MAX + 200];
	snprintf(copt, sizeof(copt), "agent:%s", xflow_demo_host_options(host));
	int p[2];
	if (pipe(p) < 0)
		return 1;
	pid_t kid = fork();
	if (kid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execl(xflowtop, xflowtop, "-b", "-n", "7", "-d", "1", "--collector", copt, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	FILE *in = fdopen(p[0], "r");
	char line[1024];
	char *last = NULL;
	size_t lastlen = 0;
	FILE *out = open_memstream(&last, &lastlen);
	bool go = false;
	while (fgets(line, sizeof(line), in)) {
		/* The first table is printed after the collector opened, that
		 * is after every plan was loaded: the traffic may start. */
		if (!go) {
			xflow_demo_host_go(host);
			go = true;
		}
		if (!strncmp(line, "xflowtop - ", 11)) {
			fclose(out);
			free(last);
			last = NULL;
			out = open_memstream(&last, &lastlen);
		}
		fputs(line, out);
	}
	fclose(out);
	fclose(in);
	int st;
	waitpid(kid, &st, 0);
	/* Without a table xflowtop failed before the traffic was let go. */
	int hs = go ? xflow_demo_host_wait(host, 20000) : -ECANCELED;
	printf("%s", last ? last : "");
	printf("xflowtop exit %d, host exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1, hs);
	char cmd[300];
	if (!go) {
		xflow_demo_host_stop(host);
		return 1;
	}
	snprintf(cmd, sizeof(cmd), "%s/../sim/truth-check --tsv %s", getenv("E2E_BINDIR") ? getenv("E2E_BINDIR") : "build/bin",
		 truth_path);
	fflush(stdout);
	if (system(cmd) != 0)
		failures++;
	free(last);
	xflow_demo_host_stop(host);
	/* E2E_KEEP_TRUTH=FILE: the truth file moves there (make bench
	 * measures the traced host's pace from it). */
	const char *keep = getenv("E2E_KEEP_TRUTH");
	if (!keep || rename(truth_path, keep) != 0)
		unlink(truth_path);
	return (WIFEXITED(st) && WEXITSTATUS(st) == 0 && hs == 0 && !failures) ? 0 : 1;
}

/* The truth's message segments (one skb each) and clones of the guests. */
static void count_truth(uint64_t *segments, uint64_t *clones)
{
	FILE *f = fopen(truth_path, "r");
	char line[512];
	*segments = *clones = 0;
	if (!f) {
		FAILF("no truth file %s", truth_path);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned dom, g, msg, seg, nseg;
		char path[8], stage[40];
		if (line[0] == '#' || sscanf(line, "%*u %u %u %7s %u %u %u %39s", &dom, &g, path, &msg, &seg, &nseg,
					     stage) != 7 || strcmp(path, "net"))
			continue;
		/* Each segment passes alloc_skb_from_cache once. */
		*segments += !strcmp(stage, "alloc_skb_from_cache");
		*clones += !strcmp(stage, "skb_clone");
	}
	fclose(f);
}

static double json_num(const struct jl_value *o, const char *key)
{
	const struct jl_value *v = jl_get(o, key);
	if (!v || v->type != JL_NUMBER) {
		FAILF("the snapshot has no number %s", key);
		return -1;
	}
	return v->number;
}

/* Under a small max-flows: flows were evicted and came back partial, and
 * none of those is among the slowest, whose every flow began where
 * tests/e2e/counts.xml starts flows, in the guest. */
static void check_slowest_whole(const struct jl_value *snap, double evicted, double partial)
{
	const struct jl_value *slow = jl_get(snap, "slowest");
	if (!evicted || !partial)
		FAILF("max-flows left room for every flow: nothing evicted or partial");
	if (!slow || slow->type != JL_ARRAY || !slow->n) {
		FAILF("no slowest flows");
		return;
	}
	for (size_t i = 0; i < slow->n; i++) {
		const struct jl_value *f = &slow->items[i], *path = jl_get(f, "path");
		const struct jl_value *origin = jl_get(f, "origin_domain");
		const struct jl_value *fn = path && path->n ? jl_get(&path->items[0], "function") : NULL;
		bool whole = origin && origin->type == JL_STRING && !strcmp(origin->string, "linuxU") && fn &&
			     fn->type == JL_STRING && (!strcmp(fn->string, "tcp_sendmsg") || !strcmp(fn->string, "skb_clone"));
		if (!whole)
			FAILF("slowest flow %zu (id %.0f) from %s begins at %s: a fragment ranked as a flow", i + 1,
			      json_num(f, "id"), origin && origin->string ? origin->string : "?",
			      fn && fn->string ? fn->string : "?");
	}
	printf("%zu slowest flows, every one whole\n", slow->n);
}

/*
 * What the aspects say their advice lost (a record that found its thread's
 * lane full, or no lane) is part of what the monitor says was lost, in the
 * header's and the domains' drops alike: a loss shown only in the Aspects
 * view is one that batch output, JSON and Prometheus hide.
 */
static void check_lanes_counted(const struct jl_value *snap, const struct jl_value *stats)
{
	const struct jl_value *asp = jl_get(snap, "aspects"), *doms = jl_get(snap, "domains");
	double by_advice = 0, by_domain = 0, drops = json_num(stats, "drops");

	for (size_t i = 0; asp && asp->type == JL_ARRAY && i < asp->n; i++)
		by_advice += json_num(&asp->items[i], "drops");
	for (size_t i = 0; doms && doms->type == JL_ARRAY && i < doms->n; i++)
		by_domain += json_num(&doms->items[i], "drops");
	printf("drops: %.0f in the header, %.0f over the domains, %.0f over the aspects' advice\n", drops, by_domain,
	       by_advice);
	if (by_advice > drops || by_advice > by_domain)
		FAILF("the aspects lost %.0f records but the header says %.0f drops and the domains %.0f", by_advice,
		      drops, by_domain);
}

static int mode_counts(int argc, char **argv)
{
	struct xflow_demo_opts o = { .guests = 1, .rate = SIM_RATE, .size = 3000, .duration = "3" };
	const char *xflowtop = argv[0];
	char max_flows[64] = "";
	o.flows = argv[1];
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--rate"))
			o.rate = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--size"))
			o.size = (uint32_t)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--duration"))
			o.duration = argv[i + 1];
		else if (!strcmp(argv[i], "--lane-slots"))
			o.lane_slots = (uint32_t)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--max-flows"))
			snprintf(max_flows, sizeof(max_flows), "max-flows=%s", argv[i + 1]);
		else if (!strcmp(argv[i], "--delay") && o.ndelays < XFLOW_DEMO_MAX_DELAYS)
			o.delays[o.ndelays++] = argv[i + 1];
	}
	start_host(&o);
	/* Each domain's executable named again: by the same path, and by a
	 * symbolic link to it. */
	char spec[4 * PATH_MAX], links[2][80], out[80], snap[80];
	int n = snprintf(spec, sizeof(spec), "agent:%s", xflow_demo_host_options(host));
	for (unsigned i = 0; i < xflow_demo_host_ndomains(host) && i < 2; i++) {
		unsigned id;
		const char *name;
		pid_t pid;
		char proc[64], exe[PATH_MAX];
		xflow_demo_host_domain(host, i, &id, &name, &pid);
		snprintf(proc, sizeof(proc), "/proc/%d/exe", (int)pid);
		ssize_t k = readlink(proc, exe, sizeof(exe) - 1);
		if (k <= 0) {
			FAILF("cannot read %s", proc);
			xflow_demo_host_stop(host);
			return 1;
		}
		exe[k] = 0;
		snprintf(links[i], sizeof(links[i]), "/tmp/xflow-e2e-%d-%s", (int)getpid(), name);
		unlink(links[i]);
		if (symlink(exe, links[i]))
			FAILF("symlink %s: %s", links[i], strerror(errno));
		n += snprintf(spec + n, sizeof(spec) - (size_t)n, ",bin=%s:%s,bin=%s:%s", name, exe, name, links[i]);
	}
	snprintf(out, sizeof(out), "/tmp/xflow-e2e-counts-%d.out", (int)getpid());
	snprintf(snap, sizeof(snap), "/tmp/xflow-e2e-counts-%d", (int)getpid());
	pid_t kid = fork();
	if (kid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			_exit(127);
		dup2(fd, 1);
		close(fd);
		execl(xflowtop, xflowtop, "-b", "-d", "0.5", "-n", "100000", "--snapshot-on-exit", snap, "--collector",
		      spec, "--set", max_flows[0] ? max_flows : "top-k=20", (char *)NULL);
		_exit(127);
	}
	/* The first table comes once every plan is in: then the traffic. */
	struct stat st;
	int waited = 0, status = -1;
	while ((stat(out, &st) != 0 || st.st_size == 0) && waitpid(kid, &status, WNOHANG) == 0 && waited++ < 3000)
		usleep(10000);
	bool up = stat(out, &st) == 0 && st.st_size > 0;
	int hs = up ? (xflow_demo_host_go(host), xflow_demo_host_wait(host, 60000)) : -ECANCELED;
	/* The agents leave with their targets; what they wrote last drains
	 * through the reorder window within a few refreshes. */
	sleep(3);
	kill(kid, SIGTERM);
	waitpid(kid, &status, 0);
	printf("xflowtop exit %d, host exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1, hs);
	if (!up || hs != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char cmd[200];
		snprintf(cmd, sizeof(cmd), "tail -40 %s", out);
		fflush(stdout);
		if (system(cmd) != 0)
			printf("(no output)\n");
		FAILF("the run did not complete");
	}
	uint64_t segments, clones;
	count_truth(&segments, &clones);
	char path[128], err[160];
	snprintf(path, sizeof(path), "%s.json", snap);
	size_t len;
	char *text = jl_read_file(path, &len);
	struct jl_value v = { 0 };
	if (!text || jl_parse(text, len, &v, err, sizeof(err))) {
		FAILF("no exit snapshot %s%s%s", path, text ? ": " : "", text ? err : "");
	} else {
		const struct jl_value *stats = jl_get(&v, "stats");
		double started = json_num(stats, "flows_started"), finished = json_num(stats, "flows_finished");
		double expired = json_num(stats, "flows_expired"), evicted = json_num(stats, "flows_evicted");
		double live = json_num(stats, "flows_live"), partial = json_num(stats, "flows_partial");
		double lost = json_num(stats, "drops") + json_num(stats, "late") + json_num(stats, "reorder_overflows");
		double truth = (double)(segments + clones);
		printf("truth: %" PRIu64 " segments, %" PRIu64 " clones; xflowtop: started %.0f, finished %.0f, "
		       "expired %.0f, evicted %.0f, partial %.0f, live %.0f; records lost or out of order %.0f\n",
		       segments, clones, started, finished, expired, evicted, partial, live, lost);
		if (!segments || !clones)
			FAILF("the truth has no segment or no clone");
		check_lanes_counted(&v, stats);
		if (lost == 0) {
			/* Nothing lost: the counts are the truth's, exactly. */
			if (started != truth)
				FAILF("%.0f flows started for %" PRIu64 " segments and %" PRIu64 " clones, and "
				      "nothing was said to be lost",
				      started, segments, clones);
			if (!max_flows[0] && (finished != started || expired || evicted || partial || live))
				FAILF("not every flow started finished, or flows expired, were evicted, partial or "
				      "left live, and nothing was said to be lost");
		} else {
			/* A loaded machine can starve the agent until its targets'
			 * lanes fill: records are lost, and said to be.  Each flow
			 * that did not finish whole (or, where evictions are the
			 * point, did not start) lost one of them at least, and no
			 * flow is counted twice. */
			double missed = max_flows[0] ? truth - started : truth - finished;
			if (started > truth || finished > started)
				FAILF("%.0f flows started and %.0f finished for %.0f in the truth", started, finished,
				      truth);
			if (missed > lost)
				FAILF("%.0f flows of %.0f did not %s, more than the %.0f records said lost", missed,
				      truth, max_flows[0] ? "start" : "finish whole", lost);
			printf("records were lost (the monitor says %.0f): %.0f flows of %.0f did not %s\n", lost,
			       missed, truth, max_flows[0] ? "start" : "finish whole");
		}
		if (max_flows[0])
			check_slowest_whole(&v, evicted, partial);
	}
	jl_free(&v);
	free(text);
	for (unsigned i = 0; i < 2; i++)
		unlink(links[i]);
	/* A failed run shows the end of what xflowtop printed: a run that
	 * counted nothing once under load left no trace of why. */
	if (failures) {
		char cmd[200];
		snprintf(cmd, sizeof(cmd), "echo '--- xflowtop, its last lines:'; tail -25 %s", out);
		fflush(stdout);
		if (system(cmd) != 0)
			printf("(no output)\n");
	}
	/* KEEP=1 keeps xflowtop's output and snapshot for a post-mortem. */
	if (getenv("KEEP")) {
		printf("kept %s and %s.*\n", out, snap);
		stop_host_telling();
		return failures ? 1 : 0;
	}
	unlink(out);
	static const char *const suffix[] = { ".txt", ".json", ".trace.json" };
	for (unsigned i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s%s", snap, suffix[i]);
		unlink(path);
	}
	stop_host_telling();
	unlink(truth_path);
	return failures ? 1 : 0;
}

static volatile sig_atomic_t serve_stop;

static void on_serve_signal(int sig)
{
	(void)sig;
	serve_stop = 1;
}

static int mode_serve(int argc, char **argv)
{
	struct xflow_demo_opts o = { .guests = 1, .rate = SIM_RATE, .duration = "8" };
	const char *xflowtop = argv[0], *go_when = NULL;
	int i = 1;
	for (; i + 1 < argc && strcmp(argv[i], "--"); i += 2) {
		if (!strcmp(argv[i], "--go-when"))
			go_when = argv[i + 1];
		else
			host_option(&o, argv[i], argv[i + 1]);
	}
	int nextra = i < argc ? argc - i - 1 : 0;
	start_host(&o);
	/* From here SIGTERM stops xflowtop first, then the host, in order. */
	struct sigaction sa = { .sa_handler = on_serve_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	char copt[PATH_MAX + 200];
	snprintf(copt, sizeof(copt), "agent:%s", xflow_demo_host_options(host));
	int p[2];
	if (pipe(p) < 0)
		return 1;
	pid_t kid = fork();
	if (kid == 0) {
		char *args[64];
		int n = 0;
		args[n++] = (char *)xflowtop;
		args[n++] = (char *)"--collector";
		args[n++] = copt;
		for (int k = 0; k < nextra && n < 63; k++)
			args[n++] = argv[i + 1 + k];
		args[n] = NULL;
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		execv(xflowtop, args);
		_exit(127);
	}
	close(p[1]);
	FILE *in = fdopen(p[0], "r");
	bool listening = false, go = false, host_done = false, stopping = false;
	char line[1024];
	for (;;) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		int r = poll(&pf, 1, 200);
		if (r > 0) {
			if (!fgets(line, sizeof(line), in))
				break; /* xflowtop has exited (or closed its standard error) */
			fputs(line, stderr);
			/* Listening comes after the collector opened, after every
			 * plan was loaded: the traffic may start. */
			listening |= strstr(line, "serving http://") != NULL;
		}
		if (listening && !go && (!go_when || access(go_when, F_OK) == 0)) {
			xflow_demo_host_go(host);
			go = true;
			fprintf(stderr, "xflow-e2e: traffic started\n");
		}
		if (go && !host_done) {
			int hs = xflow_demo_host_wait(host, 0);
			if (hs != -ETIMEDOUT) {
				host_done = true;
				fprintf(stderr, "xflow-e2e: host finished (exit %d)\n", hs);
			}
		}
		if (serve_stop && !stopping) {
			kill(kid, SIGTERM);
			stopping = true;
		}
	}
	fclose(in);
	int st;
	waitpid(kid, &st, 0);
	fprintf(stderr, "xflow-e2e: xflowtop exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	xflow_demo_host_stop(host);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 && go ? 0 : 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: xflow-e2e flows|detach|top XFLOWTOP|counts XFLOWTOP FLOWS|serve XFLOWTOP [options]\n");
		return 2;
	}
	skip_if_no_ptrace();
	if (!strcmp(argv[1], "flows"))
		return mode_flows(argc - 2, argv + 2);
	if (!strcmp(argv[1], "detach"))
		return mode_detach();
	if (!strcmp(argv[1], "top") && argc > 2)
		return mode_top(argc - 2, argv + 2);
	if (!strcmp(argv[1], "counts") && argc > 3)
		return mode_counts(argc - 2, argv + 2);
	if (!strcmp(argv[1], "serve") && argc > 2)
		return mode_serve(argc - 2, argv + 2);
	fprintf(stderr, "xflow-e2e: unknown mode %s\n", argv[1]);
	return 2;
}
