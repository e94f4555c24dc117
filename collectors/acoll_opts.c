/*
 * The agent collector's options (collectors/acoll_priv.h): sockets, directories,
 * flow files and binaries, and the flow files compiled once.
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

/* ---- options ---------------------------------------------------------------------- */

static int add_path(struct acoll *c, const char *path)
{
	if (c->npeers == MAX_PEERS) {
		acoll_set_err(c, "agent: more than %d agents", MAX_PEERS);
		return -E2BIG;
	}
	struct peer *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	if (snprintf(p->path, sizeof(p->path), "%s", path) >= (int)sizeof(p->path)) {
		free(p);
		acoll_set_err(c, "agent: socket path too long: %s", path);
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
		acoll_set_err(c, "agent: dir=%s: %s", dir, strerror(errno));
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
		acoll_set_err(c, "agent: dir=%s: no agent socket there", dir);
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
		acoll_set_err(c, "agent: no agent: the default socket directory: %s; give socket=PATH, dir=DIR or xen",
			strerror(-rc));
		return rc;
	}
	rc = add_dir(c, dir);
	if (rc == -ENOENT)
		acoll_set_err(c, "agent: no agent socket in %s, where xflow-agent listens by default; give socket=PATH, "
			   "dir=DIR or xen", dir);
	return rc;
}

int acoll_parse_options(struct acoll *c, const char *options)
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
			acoll_set_err(c, "agent: option '%s' is not key=value", kv);
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
				acoll_set_err(c, "agent: bin=%s: expected DOMAIN:PATH", v);
				return -EINVAL;
			}
			c->bins[c->nbins++] = v;
		} else if (!strcmp(kv, "timeout")) {
			char *end;
			long ms = strtol(v, &end, 10);
			if (*end || ms < 1 || ms > 600000) {
				acoll_set_err(c, "agent: timeout=%s: expected milliseconds from 1 to 600000", v);
				return -EINVAL;
			}
			c->timeout_ms = (int)ms;
		} else if (!strcmp(kv, "rate")) {
			char *end;
			errno = 0;
			unsigned long long n = strtoull(v, &end, 10);
			if (*end || v[0] == '-' || errno || n > 1000000000ull) {
				acoll_set_err(c, "agent: rate=%s: expected records a second per agent, 0 (no limit) to "
					   "1000000000", v);
				return -EINVAL;
			}
			c->rate = n;
		} else {
			acoll_set_err(c, "agent: unknown option '%s' (socket=, dir=, xen, flows=, bin=, timeout=, rate=)", kv);
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
		acoll_set_err(c, "agent: no flow file: give flows=FILE");
		return -EINVAL;
	}
	return 0;
}

int acoll_compile_flows(struct acoll *c)
{
	int rc = xflow_weave_compile((const char *const *)c->flows, c->nflows, 0, &c->unit);
	if (rc && !c->unit)
		return rc;
	if (rc) {
		char why[768];
		if (xflow_unit_first_error(c->unit, why, sizeof(why)) != 0)
			snprintf(why, sizeof(why), "%s", strerror(-rc));
		acoll_set_err(c, "agent: flows: %s", why);
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

uint64_t acoll_rate_for(const struct acoll *c, bool xen)
{
	if (c->rate != ACOLL_RATE_UNSET)
		return c->rate;
	return xen ? ACOLL_RATE_DEFAULT : 0;
}
