/*
 * xflow-agent: the command line (guestrt/agent/agent.h does the work).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crash.h"
#include "xflow/session.h"
#include "guestrt/agent/agent.h"
#include "guestrt/hook/hook.h"

static void usage(FILE *f)
{
	fputs("usage: xflow-agent [--domain NAME] [--domain-id N] (--pid PID... | --exe PATH | -- COMMAND...)\n"
	      "                   [--transport auto|local|xen] [--socket PATH] [--ring-slots N]\n"
	      "                   [--batch N] [--backend inproc|ptrace] [--lanes N] [--lane-slots N]\n"
	      "                   [--stay] [--vcpu N] [-v]\n"
	      "       xflow-agent --backend kernel [--domain NAME] [--domain-id N] [--socket PATH] [--stay] [-v]\n"
	      "       xflow-agent --domain NAME [--domain-id N] --plan PLAN --save-session FILE\n"
	      "                   [--session-max SIZE] (--pid PID... | --exe PATH | -- COMMAND...) [--ring-slots N]\n"
	      "                   [--backend inproc|ptrace] [-v]\n"
	      "Attach to the processes of one domain, load the weave plans the monitor sends,\n"
	      "and ship the advice's records through a shared ring: a Unix socket and shared\n"
	      "memory (local), or libxenvchan offered in xenstore (xen; the default in a domU,\n"
	      "where xenstore names the domain).  --domain is required with the local transport.\n"
	      "With --plan, load PLAN (written by xflowc plan -o) and save the records to FILE\n"
	      "for xflowtop --replay, without a monitor.\n"
	      "--vcpu N: every record says vCPU N (a simulated domain's one vCPU), not\n"
	      "the CPU its hit ran on.\n"
	      "See xflow-agent(8).\n",
	      f);
}

static int parse_u(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

/* --plan: the records go to a saved session, with the plan's site names. */
struct recording {
	struct xflow_session_writer *w;
	struct xflow_agent *a;
	const char *domain;
	uint64_t max;   /* --session-max: bytes */
	bool full;      /* it was reached: records are counted, not written */
};

/* 256 MiB: minutes of a busy server's flows, far less than a disk. */
#define SESSION_MAX_DEFAULT (256ull << 20)

static int record_one(void *ctx, const struct xflow_record *r, uint64_t t_ns)
{
	struct recording *rec = ctx;
	if (rec->full)
		return 1;
	if (xflow_session_writer_bytes(rec->w) >= rec->max) {
		rec->full = true;
		fprintf(stderr, "xflow-agent[%s]: the session reached --session-max (%llu bytes): the records from now on "
				"are counted, not written\n",
			rec->domain, (unsigned long long)rec->max);
		return 1;
	}
	return xflow_session_write_plan_record(rec->w, xflow_agent_plan(rec->a), xflow_agent_plan_domain(rec->a),
					       rec->domain, r, t_ns);
}

/* A size: digits and an optional K, M or G (powers of 1024).  0 or -1. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = 0;
	if (errno || end == s || *s == '-')
		return -1;
	if (*end == 'K' || *end == 'k')
		shift = 10, end++;
	else if (*end == 'M' || *end == 'm')
		shift = 20, end++;
	else if (*end == 'G' || *end == 'g')
		shift = 30, end++;
	if (*end || v == 0 || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* --plan and --save-session go together, and leave out what serves a
 * monitor.  0, or a usage message in @err. */
static int plan_mode_check(const struct xflow_agent_opts *o, const char *session, bool transport_set,
			   char *err, size_t errlen)
{
	if (!o->plan_path != !session)
		snprintf(err, errlen, "%s needs %s", o->plan_path ? "--plan" : "--save-session",
			 o->plan_path ? "--save-session FILE, where the records go" : "--plan PLAN");
	else if (o->plan_path && (o->socket_path || o->stay || (transport_set && o->transport != XFLOW_AGENT_LOCAL)))
		snprintf(err, errlen, "--plan serves no monitor: leave out --socket, --stay and --transport");
	else if (o->plan_path && (!o->domain || !o->domain[0]))
		snprintf(err, errlen, "--plan needs --domain: the name its records and the plan's domain go by");
	else if (o->backend == XFLOW_AGENT_KERNEL && (o->npids || o->exe || (o->argv && o->argv[0])))
		snprintf(err, errlen, "--backend kernel traces this domain's kernel: leave out --pid, --exe and the command");
	else
		return 0;
	return -EINVAL;
}

int main(int argc, char **argv)
{
	enum { OPT_DOMAIN = 256, OPT_DOMID, OPT_PID, OPT_EXE, OPT_SOCKET, OPT_SLOTS, OPT_BATCH, OPT_STAY, OPT_TRANSPORT,
	       OPT_BACKEND, OPT_LANES, OPT_LANE_SLOTS, OPT_PLAN, OPT_SESSION, OPT_VCPU, OPT_SESSION_MAX };
	static const struct option longopts[] = {
		{ "domain", required_argument, NULL, OPT_DOMAIN },
		{ "domain-id", required_argument, NULL, OPT_DOMID },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "exe", required_argument, NULL, OPT_EXE },
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "ring-slots", required_argument, NULL, OPT_SLOTS },
		{ "batch", required_argument, NULL, OPT_BATCH },
		{ "stay", no_argument, NULL, OPT_STAY },
		{ "transport", required_argument, NULL, OPT_TRANSPORT },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "lanes", required_argument, NULL, OPT_LANES },
		{ "lane-slots", required_argument, NULL, OPT_LANE_SLOTS },
		{ "plan", required_argument, NULL, OPT_PLAN },
		{ "save-session", required_argument, NULL, OPT_SESSION },
		{ "vcpu", required_argument, NULL, OPT_VCPU },
		{ "session-max", required_argument, NULL, OPT_SESSION_MAX },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct xflow_agent_opts o = { 0 };
	xflow_crash_install("xflow-agent");
	const char *session = NULL;
	uint64_t session_max = SESSION_MAX_DEFAULT;
	bool session_max_set = false;
	bool transport_set = false;
	pid_t *pids = calloc((size_t)argc + 1, sizeof(*pids));
	unsigned long v;
	int c;
	if (!pids)
		return 1;
	while ((c = getopt_long(argc, argv, "+vh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_DOMAIN: o.domain = optarg; break;
		case OPT_DOMID:
			if (parse_u(optarg, 0x7fef, &v)) {
				fprintf(stderr, "xflow-agent: --domain-id: '%s' is not a domain id (0..32751)\n", optarg);
				goto bad_usage;
			}
			o.domain_id = (uint16_t)v;
			break;
		case OPT_PID:
			if (parse_u(optarg, 0x7fffffff, &v) || v == 0) {
				fprintf(stderr, "xflow-agent: --pid: '%s' is not a process id\n", optarg);
				goto bad_usage;
			}
			pids[o.npids++] = (pid_t)v;
			break;
		case OPT_EXE: o.exe = optarg; break;
		case OPT_SOCKET: o.socket_path = optarg; break;
		case OPT_SLOTS:
			if (parse_u(optarg, 1u << 24, &v) || v < 2 || (v & (v - 1))) {
				fprintf(stderr, "xflow-agent: --ring-slots: '%s' is not a power of two from 2 to 16777216\n",
					optarg);
				goto bad_usage;
			}
			o.ring_slots = (uint32_t)v;
			break;
		case OPT_BATCH:
			if (parse_u(optarg, 1u << 20, &v) || v == 0) {
				fprintf(stderr, "xflow-agent: --batch: '%s' is not a count from 1 to 1048576\n", optarg);
				goto bad_usage;
			}
			o.batch = (uint32_t)v;
			break;
		case OPT_STAY: o.stay = true; break;
		case OPT_PLAN: o.plan_path = optarg; break;
		case OPT_SESSION: session = optarg; break;
		case OPT_VCPU:
			if (parse_u(optarg, XFLOW_RECORD_MAX_CPU, &v)) {
				fprintf(stderr, "xflow-agent: --vcpu: '%s' is not a vCPU number (0..%u)\n", optarg,
					XFLOW_RECORD_MAX_CPU);
				goto bad_usage;
			}
			o.vcpu_plus1 = (uint32_t)v + 1;
			break;
		case OPT_SESSION_MAX:
			if (parse_size(optarg, &session_max) < 0) {
				fprintf(stderr, "xflow-agent: --session-max: '%s' is not a size (bytes, or with K, M or G)\n",
					optarg);
				goto bad_usage;
			}
			session_max_set = true;
			break;
		case OPT_TRANSPORT:
			transport_set = true;
			if (!strcmp(optarg, "auto"))
				o.transport = XFLOW_AGENT_AUTO;
			else if (!strcmp(optarg, "local"))
				o.transport = XFLOW_AGENT_LOCAL;
			else if (!strcmp(optarg, "xen"))
				o.transport = XFLOW_AGENT_XEN;
			else {
				fprintf(stderr, "xflow-agent: --transport: '%s' is not auto, local or xen\n", optarg);
				goto bad_usage;
			}
			break;
		case OPT_BACKEND:
			if (!strcmp(optarg, "inproc"))
				o.backend = XFLOW_AGENT_INPROC;
			else if (!strcmp(optarg, "ptrace"))
				o.backend = XFLOW_AGENT_PTRACE;
			else if (!strcmp(optarg, "kernel"))
				o.backend = XFLOW_AGENT_KERNEL;
			else {
				fprintf(stderr, "xflow-agent: --backend: '%s' is not inproc, ptrace or kernel\n", optarg);
				goto bad_usage;
			}
			break;
		case OPT_LANES:
		case OPT_LANE_SLOTS:
			if (parse_u(optarg, c == OPT_LANES ? 4096 : 1u << 20, &v) || v < 2 || (v & (v - 1))) {
				fprintf(stderr, "xflow-agent: --%s: '%s' is not a power of two from 2 to %u\n",
					c == OPT_LANES ? "lanes" : "lane-slots", optarg, c == OPT_LANES ? 4096 : 1u << 20);
				goto bad_usage;
			}
			if (c == OPT_LANES)
				o.lanes = (uint32_t)v;
			else
				o.lane_slots = (uint32_t)v;
			break;
		case 'v': o.verbose++; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); goto bad_usage;
		}
	}
	o.pids = pids;
	if (optind < argc)
		o.argv = argv + optind;
	char err[512] = "";
	if (plan_mode_check(&o, session, transport_set, err, sizeof(err))) {
		fprintf(stderr, "xflow-agent: %s\n", err);
		usage(stderr);
		free(pids);
		return 2;
	}
	if (session_max_set && !session) {
		fprintf(stderr, "xflow-agent: --session-max bounds --save-session's file: give both\n");
		goto bad_usage;
	}
	struct recording rec = { .domain = o.domain, .max = session_max };
	if (session) {
		/* No monitor here: the records go to a session for xflowtop
		 * --replay, written whole or not at all. */
		o.transport = XFLOW_AGENT_LOCAL;
		o.record = record_one;
		o.record_ctx = &rec;
		if (xflow_session_writer_new(session, &rec.w, err, sizeof(err))) {
			fprintf(stderr, "xflow-agent: --save-session: %s\n", err);
			free(pids);
			return 1;
		}
	}
	int rc = xflow_agent_new(&o, &rec.a, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "xflow-agent: %s\n", err);
		xflow_session_writer_free(rec.w, 0, NULL, 0);
		free(pids);
		return 1;
	}
	int sig = 0;
	rc = xflow_agent_run(rec.a, &sig);
	xflow_agent_free(rec.a);
	free(pids);
	/* Committed only when the run ended well: a session cut short by an
	 * error is not left under its name. */
	if (rec.w) {
		err[0] = '\0';
		int wrc = xflow_session_writer_free(rec.w, rc == 0, err, sizeof(err));
		if (rc || wrc)
			fprintf(stderr, "xflow-agent: --save-session %s: the session was not saved%s%s\n", session,
				 wrc ? ": " : "", err);
		rc = rc ? rc : wrc;
	}
	/* Every target was let go: now die of the signal as asked. */
	if (sig > 0)
		xflow_hook_signals_reraise(sig);
	return rc ? 1 : 0;
bad_usage: /* a bad command line: said above, nothing begun */
	free(pids);
	return 2;
}
