/*
 * Configuration file and command line.  See tui/config.h and
 * xflowtop.conf(5).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tui/config.h"
#include "xflow/collector.h"

#ifndef XFLOWTOP_VERSION
#define XFLOWTOP_VERSION "0.1"
#endif

void xft_config_defaults(struct xft_config *c)
{
	memset(c, 0, sizeof(*c));
	c->refresh_s = 1.0;
	xft_agg_limits_default(&c->limits);
	snprintf(c->snapshot_dir, sizeof(c->snapshot_dir), ".");
	snprintf(c->sort, sizeof(c->sort), "total");
	c->color = 1;
	xft_config_export_defaults(c);
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* --- values ------------------------------------------------------------- */

static int parse_u64(const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	if (!*v || *v == '-' || isspace((unsigned char)*v))
		return -1;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || *end || x < lo || x > hi)
		return -1;
	*out = x;
	return 0;
}

static int parse_double(const char *v, double lo, double hi, double *out)
{
	char *end;
	if (!*v || isspace((unsigned char)*v))
		return -1;
	errno = 0;
	double x = strtod(v, &end);
	if (errno || *end || !isfinite(x) || x < lo || x > hi)
		return -1;
	*out = x;
	return 0;
}

static int parse_bool(const char *v, int *out)
{
	static const char *const yes[] = { "yes", "on", "true", "1" };
	static const char *const no[] = { "no", "off", "false", "0" };
	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i]))
			return *out = 1, 0;
		if (!strcasecmp(v, no[i]))
			return *out = 0, 0;
	}
	return -1;
}

static int copy_str(char *dst, size_t len, const char *v)
{
	if (!*v || strlen(v) >= len)
		return -1;
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

static int add_list(char (*list)[XFT_SPEC_LEN], unsigned *n, const char *v, char *err,
		    size_t errlen, const char *key)
{
	if (*n >= XFT_MAX_LIST)
		return fail(err, errlen, "too many '%s' entries (at most %d)", key, XFT_MAX_LIST);
	if (copy_str(list[*n], XFT_SPEC_LEN, v))
		return fail(err, errlen, "bad value '%s' for '%s': expected 1 to %d characters", v,
			    key, XFT_SPEC_LEN - 1);
	(*n)++;
	return 0;
}

/* --- the global keys ------------------------------------------------------ */

enum kind { K_U32, K_MS, K_SECONDS, K_REFRESH, K_LIST, K_STR, K_BOOL, K_SORT, K_EXPORT };

struct key_desc {
	const char *key;
	enum kind kind;
	uint64_t lo, hi;
	const char *doc;
};

static const char *const sort_names[] = { "from", "to", "count", "p50", "p90", "p99", "max", "total" };

static const struct key_desc keys[] = {
	{ "refresh", K_REFRESH, 0, 0, "seconds between screen updates, 0.05 to 3600" },
	{ "collector", K_LIST, 0, 0, "NAME[:OPTIONS], repeatable" },
	{ "collector-path", K_LIST, 0, 0, "directory of collector plugins (*.so), repeatable" },
	{ "flows", K_LIST, 0, 0, "flow definition file, repeatable" },
	{ "snapshot-dir", K_STR, 0, 0, "directory where 's' writes snapshots" },
	{ "snapshot-on-exit", K_STR, 0, 0, "write a snapshot to this base name on exit" },
	{ "color", K_BOOL, 0, 0, "yes or no" },
	{ "sort", K_SORT, 0, 0, "from, to, count, p50, p90, p99, max or total" },
	{ "reorder-window", K_MS, 0, 60000, "milliseconds, 0 to 60000" },
	{ "max-pending", K_U32, 16, 1u << 26, "records held in the reorder window, 16 to 67108864" },
	{ "max-flows", K_U32, 16, 1u << 26, "live flows, 16 to 67108864" },
	{ "max-hops", K_U32, 16, 1u << 20, "distinct hops, 16 to 1048576" },
	{ "max-path", K_U32, 2, 4096, "points kept per flow, 2 to 4096" },
	{ "top-k", K_U32, 1, 10000, "slowest flows kept, 1 to 10000" },
	{ "flow-expire", K_SECONDS, 0, 86400, "seconds before an idle flow expires, 0.001 to 86400" },
	{ "max-handoffs", K_U32, 16, 1u << 24, "ids in flight between domains, 16 to 16777216" },
	{ "join-grace", K_SECONDS, 0, 3600, "seconds a keyed handoff side waits for its peer, 0.001 to 3600" },
	{ "xentrace", K_STR, 0, 0, "a xentrace file (without commas), or - for standard input" },
	{ "cpu-hz", K_STR, 0, 0, "the traced host's TSC rate, e.g. 2.4G, 2400M or 2400000000" },
	{ "save-session", K_STR, 0, 0, "a file to save the records the model is fed to, for replay" },
	{ "replay", K_STR, 0, 0, "a session saved with save-session, to play back (a path without commas)" },
	{ "speed", K_STR, 0, 0, "the replay's pace: N times the recorded one (0.001 to 1000000), or max" },
	{ "listen", K_EXPORT, 0, 0, "" },
	{ "host", K_EXPORT, 0, 0, "" },
	{ "metrics-max-hops", K_EXPORT, 0, 0, "" },
	{ "metrics-max-connections", K_EXPORT, 0, 0, "" },
	{ "metrics-max-connections-per-address", K_EXPORT, 0, 0, "" },
	{ "metrics-request-timeout", K_EXPORT, 0, 0, "" },
	{ "headless", K_BOOL, 0, 0, "yes or no" },
};

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 31 || lb > 31)
		return 99;
	size_t d[32][32];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t k = 0; k <= lb; k++)
		d[0][k] = k;
	for (size_t i = 1; i <= la; i++)
		for (size_t k = 1; k <= lb; k++) {
			size_t m = d[i - 1][k - 1] + (a[i - 1] != b[k - 1]);
			if (d[i - 1][k] + 1 < m)
				m = d[i - 1][k] + 1;
			if (d[i][k - 1] + 1 < m)
				m = d[i][k - 1] + 1;
			d[i][k] = m;
		}
	return d[la][lb];
}

static const char *suggest(const char *key, const char *const *names, size_t n)
{
	const char *best = NULL;
	size_t bd = 3;
	for (size_t i = 0; i < n; i++) {
		size_t dd = edit_distance(key, names[i]);
		if (dd < bd)
			bd = dd, best = names[i];
	}
	return best;
}

static int unknown_key(const char *key, const char *const *names, size_t n, const char *where,
		       char *err, size_t errlen)
{
	const char *s = suggest(key, names, n);
	if (s)
		return fail(err, errlen, "unknown key '%s'%s (did you mean '%s'?)", key, where, s);
	return fail(err, errlen, "unknown key '%s'%s; see xflowtop.conf(5)", key, where);
}

int xft_config_set(struct xft_config *c, const char *key, const char *v, char *err, size_t errlen)
{
	const struct key_desc *k = NULL;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(keys[i].key, key))
			k = &keys[i];
	if (!k) {
		const char *names[sizeof(keys) / sizeof(keys[0])];
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			names[i] = keys[i].key;
		return unknown_key(key, names, sizeof(keys) / sizeof(keys[0]), "", err, errlen);
	}
	uint64_t u;
	double d;
	int b;
	struct xft_agg_limits *l = &c->limits;
	switch (k->kind) {
	case K_U32:
		if (parse_u64(v, k->lo, k->hi, &u))
			break;
		if (!strcmp(key, "max-pending"))
			l->max_pending = (uint32_t)u;
		else if (!strcmp(key, "max-flows"))
			l->max_flows = (uint32_t)u;
		else if (!strcmp(key, "max-hops"))
			l->max_hops = (uint32_t)u;
		else if (!strcmp(key, "max-path"))
			l->max_path = (uint32_t)u;
		else if (!strcmp(key, "top-k"))
			l->top_k = (uint32_t)u;
		else
			l->max_handoffs = (uint32_t)u;
		return 0;
	case K_MS:
		if (parse_double(v, 0, (double)k->hi, &d))
			break;
		l->window_ns = (uint64_t)(d * 1e6);
		return 0;
	case K_SECONDS:
		if (parse_double(v, 0.001, (double)k->hi, &d))
			break;
		if (!strcmp(key, "join-grace"))
			l->join_grace_ns = (uint64_t)(d * 1e9);
		else
			l->expire_ns = (uint64_t)(d * 1e9);
		return 0;
	case K_REFRESH:
		if (parse_double(v, 0.05, 3600, &d))
			break;
		c->refresh_s = d;
		return 0;
	case K_LIST:
		if (!strcmp(key, "collector"))
			return add_list(c->collectors, &c->ncollectors, v, err, errlen, key);
		if (!strcmp(key, "collector-path"))
			return add_list(c->collector_paths, &c->ncollector_paths, v, err, errlen, key);
		return add_list(c->flow_files, &c->nflow_files, v, err, errlen, key);
	case K_STR:
		if (!strcmp(key, "xentrace")) {
			if (strchr(v, ',') || copy_str(c->xentrace, sizeof(c->xentrace), v))
				break;
			return 0;
		}
		if (!strcmp(key, "cpu-hz")) {
			char *end;
			double hz = strtod(v, &end);
			if (end != v && (*end == 'G' || *end == 'g' || *end == 'M' || *end == 'm' ||
					 *end == 'K' || *end == 'k'))
				end++;
			if (end == v || *end || !(hz > 0) || copy_str(c->cpu_hz, sizeof(c->cpu_hz), v))
				break;
			return 0;
		}
		if (!strcmp(key, "replay")) {
			if (!*v || strchr(v, ',') || copy_str(c->replay, sizeof(c->replay), v))
				break;
			return 0;
		}
		if (!strcmp(key, "save-session")) {
			if (!*v || copy_str(c->save_session, sizeof(c->save_session), v))
				break;
			return 0;
		}
		if (!strcmp(key, "speed")) {
			char *end;
			double sp = strtod(v, &end);
			if (strcmp(v, "max") && (end == v || *end || !(sp >= 0.001 && sp <= 1e6)))
				break;
			if (copy_str(c->speed, sizeof(c->speed), v))
				break;
			return 0;
		}
		if (copy_str(!strcmp(key, "snapshot-dir") ? c->snapshot_dir : c->snapshot_on_exit,
			     XFT_SPEC_LEN, v))
			break;
		return 0;
	case K_BOOL:
		if (parse_bool(v, &b))
			break;
		if (!strcmp(key, "headless"))
			c->headless = b;
		else
			c->color = b;
		return 0;
	case K_SORT:
		for (size_t i = 0; i < sizeof(sort_names) / sizeof(sort_names[0]); i++)
			if (!strcmp(v, sort_names[i])) {
				snprintf(c->sort, sizeof(c->sort), "%s", v);
				return 0;
			}
		break;
	case K_EXPORT:
		return xft_config_export_set(c, key, v, err, errlen);
	}
	return fail(err, errlen, "bad value '%s' for '%s': expected %s", v, key, k->doc);
}

/* --- the file ----------------------------------------------------------- */

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	char *e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int domain_set(struct xft_domain_conf *d, const char *key, const char *v, char *err,
		      size_t errlen)
{
	uint64_t u;
	if (!strcmp(key, "id")) {
		if (parse_u64(v, 0, 65534, &u))
			return fail(err, errlen, "bad value '%s' for 'id': expected a domain id, 0 to 65534", v);
		d->id = (int)u;
		return 0;
	}
	if (!strcmp(key, "agent")) {
		/* What the agent collector understands: its control socket. */
		if (strncmp(v, "socket:", 7) || !v[7] || strchr(v, ',') || copy_str(d->agent, sizeof(d->agent), v))
			return fail(err, errlen, "bad value '%s' for 'agent': expected socket:PATH (the agent's control socket)", v);
		return 0;
	}
	if (!strcmp(key, "binary")) {
		if (d->nbinaries >= XFT_MAX_LIST)
			return fail(err, errlen, "too many 'binary' entries (at most %d)", XFT_MAX_LIST);
		if (strchr(v, ',') || copy_str(d->binaries[d->nbinaries], XFT_SPEC_LEN, v))
			return fail(err, errlen, "bad value '%s' for 'binary': expected a path (without commas)", v);
		d->nbinaries++;
		return 0;
	}
	static const char *const names[] = { "id", "agent", "binary" };
	return unknown_key(key, names, 3, " in a [domain] section", err, errlen);
}

int xft_config_parse(struct xft_config *c, const char *name, const char *text, char *err,
		     size_t errlen)
{
	char msg[512];
	unsigned lineno = 0;
	struct xft_domain_conf *dom = NULL;
	const char *p = text;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		lineno++;
		char line[1024];
		if (len >= sizeof(line))
			return fail(err, errlen, "%s:%u: line too long (at most %zu characters)", name,
				    lineno, sizeof(line) - 1);
		memcpy(line, p, len);
		line[len] = '\0';
		p += len + (nl ? 1 : 0);
		if (memchr(line, '\0', len))
			return fail(err, errlen, "%s:%u: NUL byte in the line", name, lineno);
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *s = trim(line);
		if (!*s)
			continue;
		if (*s == '[') {
			char *close = strchr(s, ']');
			if (!close || trim(close + 1)[0])
				return fail(err, errlen, "%s:%u: bad section header: expected [domain NAME]",
					    name, lineno);
			*close = '\0';
			char *inner = trim(s + 1);
			if (!strcmp(inner, "domain"))
				return fail(err, errlen, "%s:%u: missing the domain name: expected [domain NAME]",
					    name, lineno);
			if (strncmp(inner, "domain", 6) || !isspace((unsigned char)inner[6]))
				return fail(err, errlen, "%s:%u: unknown section '[%s]': expected [domain NAME]",
					    name, lineno, inner);
			char *dn = trim(inner + 6);
			if (!*dn || strlen(dn) >= sizeof(dom->name) || strpbrk(dn, " \t\""))
				return fail(err, errlen, "%s:%u: bad domain name '%s': expected 1 to 63 characters without blanks",
					    name, lineno, dn);
			for (unsigned i = 0; i < c->ndomains; i++)
				if (!strcmp(c->domains[i].name, dn))
					return fail(err, errlen, "%s:%u: domain '%s' is defined twice", name,
						    lineno, dn);
			if (c->ndomains >= XFT_MAX_DOMAINS)
				return fail(err, errlen, "%s:%u: too many domains (at most %d)", name,
					    lineno, XFT_MAX_DOMAINS);
			dom = &c->domains[c->ndomains++];
			memset(dom, 0, sizeof(*dom));
			dom->id = -1;
			snprintf(dom->name, sizeof(dom->name), "%s", dn);
			continue;
		}
		char *eq = strchr(s, '=');
		if (!eq)
			return fail(err, errlen, "%s:%u: expected 'key = value', got '%s'", name, lineno, s);
		*eq = '\0';
		char *key = trim(s), *val = trim(eq + 1);
		if (!*key)
			return fail(err, errlen, "%s:%u: missing key before '='", name, lineno);
		if (!*val)
			return fail(err, errlen, "%s:%u: missing value for '%s'", name, lineno, key);
		int rc = dom ? domain_set(dom, key, val, msg, sizeof(msg))
			     : xft_config_set(c, key, val, msg, sizeof(msg));
		if (rc)
			return fail(err, errlen, "%s:%u: %s", name, lineno, msg);
	}
	return 0;
}

int xft_config_load(struct xft_config *c, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		int e = errno;
		fail(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	int rc = 0;
	while (buf) {
		size_t n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
		if (len < cap - 1)
			break;
		if (cap >= (1u << 24)) {
			rc = fail(err, errlen, "%s: too large for a configuration file", path);
			break;
		}
		char *nb = realloc(buf, cap * 2);
		if (!nb) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = nb;
		cap *= 2;
	}
	if (!buf) {
		fclose(f);
		fail(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	if (!rc && ferror(f))
		rc = fail(err, errlen, "%s: read error", path);
	fclose(f);
	if (!rc) {
		buf[len] = '\0';
		if (strlen(buf) != len)
			rc = fail(err, errlen, "%s: NUL byte in the file", path);
		else
			rc = xft_config_parse(c, path, buf, err, errlen);
	}
	if (!rc)
		snprintf(c->config_path, sizeof(c->config_path), "%s", path);
	free(buf);
	return rc;
}

/* --- the command line ---------------------------------------------------- */

void xft_config_usage(FILE *f)
{
	fprintf(f,
		"Usage: xflowtop [OPTION]...\n"
		"Live I/O flow monitor for Xen: per-hop latencies, slowest flows, their paths.\n"
		"\n"
		"  -b, --batch               print tables as text each interval (no curses)\n"
		"  -n, --iterations N        stop after N updates (batch and curses)\n"
		"  -d, --delay SECONDS       interval between updates (default 1)\n"
		"      --json                batch mode prints one JSON object per interval\n"
		"  -c, --config FILE         configuration file (default $XFLOWTOP_CONF if set)\n"
		"      --collector NAME[:OPTIONS]  record source, repeatable (replaces the file's)\n"
		"      --collector-path DIR  load collector plugins (*.so) from DIR, repeatable\n"
		"      --list-collectors     list the collectors and their options, and exit\n"
		"  -f, --flows FILE          flow definition file, repeatable\n"
		"      --set KEY=VALUE       any xflowtop.conf(5) key, e.g. --set max-flows=1000000\n"
		"  -s, --sort COLUMN         hops sort column: from to count p50 p90 p99 max total\n"
		"      --snapshot-dir DIR    where the 's' key and SIGUSR1 write snapshots\n"
		"      --snapshot-on-exit FILE  write FILE.txt, FILE.json, FILE.trace.json on exit\n"
		"      --no-color            no colours (also when NO_COLOR is set)\n"
		"      --xentrace FILE       Xen's trace records from FILE (- for standard input),\n"
		"                            shown in the Hypervisor view; needs --cpu-hz\n"
		"      --cpu-hz HZ           the traced host's TSC rate, e.g. 2.4G\n"
		"      --save-session FILE   save the records the model is fed, for --replay\n"
		"      --replay FILE         play back a saved session (the replay collector)\n"
		"      --speed N|max         its pace: N times the recorded one (default 1)\n"
		"      --demo                run on the built-in demo source (with --xentrace sim:\n"
		"                            its scheduler's trace too, joined with the flows)\n"
		"      --listen [ADDR:]PORT  serve /metrics for Prometheus there (ADDR defaults\n"
		"                            to 127.0.0.1; 0.0.0.0 for every interface); the\n"
		"                            series' host label: --set host=NAME (the host name)\n"
		"      --headless            show nothing, only serve /metrics (needs --listen)\n"
		"  -h, --help                this help\n"
		"  -V, --version             version\n"
		"\n"
		"Keys: h help, 1-7 or Tab views, < > sort, / search, \\ filter, p pause,\n"
		"s snapshot, space toggles an aspect, Enter drills down, q quit.  See xflowtop(1).\n");
}

enum {
	OPT_JSON = 256,
	OPT_COLLECTOR,
	OPT_COLLECTOR_PATH,
	OPT_SET,
	OPT_SNAP_DIR,
	OPT_SNAP_EXIT,
	OPT_NO_COLOR,
	OPT_DEMO,
	OPT_LIST,
	OPT_XENTRACE,
	OPT_CPU_HZ,
	OPT_SAVE_SESSION,
	OPT_REPLAY,
	OPT_SPEED,
	OPT_LISTEN,
	OPT_HEADLESS,
};

static const struct option long_opts[] = {
	{ "batch", no_argument, NULL, 'b' },
	{ "iterations", required_argument, NULL, 'n' },
	{ "delay", required_argument, NULL, 'd' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "config", required_argument, NULL, 'c' },
	{ "collector", required_argument, NULL, OPT_COLLECTOR },
	{ "collector-path", required_argument, NULL, OPT_COLLECTOR_PATH },
	{ "list-collectors", no_argument, NULL, OPT_LIST },
	{ "flows", required_argument, NULL, 'f' },
	{ "set", required_argument, NULL, OPT_SET },
	{ "sort", required_argument, NULL, 's' },
	{ "snapshot-dir", required_argument, NULL, OPT_SNAP_DIR },
	{ "snapshot-on-exit", required_argument, NULL, OPT_SNAP_EXIT },
	{ "no-color", no_argument, NULL, OPT_NO_COLOR },
	{ "demo", no_argument, NULL, OPT_DEMO },
	{ "xentrace", required_argument, NULL, OPT_XENTRACE },
	{ "cpu-hz", required_argument, NULL, OPT_CPU_HZ },
	{ "save-session", required_argument, NULL, OPT_SAVE_SESSION },
	{ "replay", required_argument, NULL, OPT_REPLAY },
	{ "speed", required_argument, NULL, OPT_SPEED },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "headless", no_argument, NULL, OPT_HEADLESS },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};
static const char short_opts[] = ":bn:d:c:f:s:hV";

static int opt_err(char *err, size_t errlen, const char *opt, const char *msg)
{
	return fail(err, errlen, "%s: %s", opt, msg);
}

int xft_config_from_args(struct xft_config *c, int argc, char **argv, char *err, size_t errlen)
{
	char msg[512];
	const char *conf = getenv("XFLOWTOP_CONF");
	int opt;

	/* Pass 1: --config, --help, --version, and unknown options. */
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			conf = optarg;
			break;
		case 'h':
			xft_config_usage(stdout);
			return 1;
		case 'V':
			printf("xflowtop %s (collector ABI %d, record version %d)\n", XFLOWTOP_VERSION,
			       XFLOW_COLLECTOR_ABI, XFLOW_RECORD_VERSION);
			return 1;
		case OPT_LIST:
			c->batch = -1; /* the caller lists and exits */
			break;
		case '?':
			if (optopt)
				return fail(err, errlen, "unknown option '-%c' (try --help)", optopt);
			return fail(err, errlen, "unknown option '%s' (try --help)", argv[optind - 1]);
		case ':':
			return fail(err, errlen, "option '%s' needs a value", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return fail(err, errlen, "unexpected argument '%s' (try --help)", argv[optind]);
	if (conf && *conf) {
		int rc = xft_config_load(c, conf, err, errlen);
		if (rc)
			return rc < 0 ? rc : -EINVAL;
	}

	/* Pass 2: the options, which win over the file.  A list given on the
	 * command line replaces the file's list rather than adding to it. */
	int got_coll = 0, got_flows = 0;
	optind = 0;
	while ((opt = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
		int rc = 0;
		uint64_t u;
		switch (opt) {
		case 'b':
			if (c->batch >= 0)
				c->batch = 1;
			break;
		case 'n':
			if (parse_u64(optarg, 1, LONG_MAX, &u))
				return opt_err(err, errlen, "--iterations", "expected a positive count");
			c->iterations = (long)u;
			break;
		case 'd':
			rc = xft_config_set(c, "refresh", optarg, msg, sizeof(msg));
			break;
		case OPT_JSON:
			c->json = 1;
			break;
		case OPT_COLLECTOR:
			if (!got_coll++)
				c->ncollectors = 0;
			rc = xft_config_set(c, "collector", optarg, msg, sizeof(msg));
			break;
		case OPT_COLLECTOR_PATH:
			rc = xft_config_set(c, "collector-path", optarg, msg, sizeof(msg));
			break;
		case 'f':
			if (!got_flows++)
				c->nflow_files = 0;
			rc = xft_config_set(c, "flows", optarg, msg, sizeof(msg));
			break;
		case OPT_SET: {
			char kv[XFT_SPEC_LEN + 64];
			snprintf(kv, sizeof(kv), "%s", optarg);
			char *eq = strchr(kv, '=');
			if (!eq)
				return opt_err(err, errlen, "--set", "expected KEY=VALUE");
			*eq = '\0';
			if (!strcmp(kv, "collector") && !got_coll++)
				c->ncollectors = 0;
			rc = xft_config_set(c, kv, eq + 1, msg, sizeof(msg));
			break;
		}
		case 's':
			rc = xft_config_set(c, "sort", optarg, msg, sizeof(msg));
			break;
		case OPT_SNAP_DIR:
			rc = xft_config_set(c, "snapshot-dir", optarg, msg, sizeof(msg));
			break;
		case OPT_SNAP_EXIT:
			rc = xft_config_set(c, "snapshot-on-exit", optarg, msg, sizeof(msg));
			break;
		case OPT_NO_COLOR:
			c->color = 0;
			break;
		case OPT_DEMO:
			c->demo = 1;
			break;
		case OPT_XENTRACE:
			rc = xft_config_set(c, "xentrace", optarg, msg, sizeof(msg));
			break;
		case OPT_CPU_HZ:
			rc = xft_config_set(c, "cpu-hz", optarg, msg, sizeof(msg));
			break;
		case OPT_SAVE_SESSION:
			rc = xft_config_set(c, "save-session", optarg, msg, sizeof(msg));
			break;
		case OPT_REPLAY:
			rc = xft_config_set(c, "replay", optarg, msg, sizeof(msg));
			break;
		case OPT_SPEED:
			rc = xft_config_set(c, "speed", optarg, msg, sizeof(msg));
			break;
		case OPT_LISTEN:
			rc = xft_config_set(c, "listen", optarg, msg, sizeof(msg));
			break;
		case OPT_HEADLESS:
			c->headless = 1;
			break;
		default:
			break;
		}
		if (rc) {
			const char *name = NULL;
			for (const struct option *o = long_opts; o->name; o++)
				if (o->val == opt)
					name = o->name;
			return fail(err, errlen, "--%s: %s", name ? name : "?", msg);
		}
	}
	if (c->json && c->batch == 0)
		c->batch = 1; /* --json implies batch mode */
	const char *nc = getenv("NO_COLOR");
	if (nc && *nc)
		c->color = 0;
	return xft_config_export_check(c, err, errlen);
}

int xft_config_agent_spec(const struct xft_config *c, const char *collector, char *out, size_t len)
{
	size_t o = (size_t)snprintf(out, len, "%s", collector);
	if (o >= len)
		return -ENAMETOOLONG;
	if (strcmp(collector, "agent") && strncmp(collector, "agent:", 6))
		return 0;
	const char *colon = strchr(collector, ':');
	/* "agent" needs a colon, "agent:" nothing, "agent:x=1" a comma. */
	const char *sep = !colon ? ":" : colon[1] ? "," : "";
#define ADD(...)                                                              \
	do {                                                                  \
		o += (size_t)snprintf(out + o, len - o, "%s", sep);           \
		if (o < len)                                                  \
			o += (size_t)snprintf(out + o, len - o, __VA_ARGS__); \
		if (o >= len)                                                 \
			return -ENAMETOOLONG;                                 \
		sep = ",";                                                    \
	} while (0)
	for (unsigned d = 0; d < c->ndomains; d++) {
		if (c->domains[d].agent[0])
			ADD("socket=%s", c->domains[d].agent + 7);
		for (unsigned b = 0; b < c->domains[d].nbinaries; b++)
			ADD("bin=%s:%s", c->domains[d].name, c->domains[d].binaries[b]);
	}
	for (unsigned f = 0; f < c->nflow_files; f++)
		ADD("flows=%s", c->flow_files[f]);
#undef ADD
	return 0;
}

int xft_config_xentrace_spec(const struct xft_config *c, char *out, size_t len)
{
	if (strchr(c->xentrace, ','))
		return -EINVAL;
	int n;
	if (!strcmp(c->xentrace, "-"))
		n = snprintf(out, len, "xentrace:pipe%s%s", c->cpu_hz[0] ? ",cpu-hz=" : "", c->cpu_hz);
	else
		n = snprintf(out, len, "xentrace:file=%s%s%s", c->xentrace, c->cpu_hz[0] ? ",cpu-hz=" : "",
			     c->cpu_hz);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int xft_config_replay_spec(const struct xft_config *c, char *out, size_t len)
{
	if (strchr(c->replay, ','))
		return -EINVAL;
	/* With the run's trace (--xentrace, or the collector named), the
	 * records keep their own times: the trace's are the recorded ones. */
	int trace = c->xentrace[0] != '\0';
	for (unsigned i = 0; i < c->ncollectors; i++)
		trace |= !strncmp(c->collectors[i], "xentrace:", 9);
	int n = snprintf(out, len, "replay:file=%s,speed=%s%s", c->replay, c->speed[0] ? c->speed : "1",
			 trace ? ",clock=recorded" : "");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
