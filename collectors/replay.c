/*
 * The replay collector: a session saved by `xflowtop --save-session`
 * played back.
 *
 * Options (comma-separated key=value):
 *   file=PATH    the session (required)
 *   speed=N      N times the recorded pace (0.001 to 1000000, default 1),
 *                or speed=max: as fast as read() is called
 *   clock=recorded  give each record the time it was saved with, not one
 *                moved to the replay's start: to join the session with
 *                Xen's trace of the same run (xflowtop --replay with
 *                --xentrace), whose times are the recorded ones
 *
 * open() reads the whole file once and validates it (so a broken file is
 * refused before anything is shown, with the offset and the reason), and
 * keeps the site names, domains and carried bits; read() then streams the
 * records a second time.  Record k is due at start + (t_k - t_0) / speed,
 * where start is the first read()'s time.  Its timestamp is given as
 * start + (t_k - t_0), unscaled: the gaps the model measures are the
 * recorded ones whatever the speed (the app follows the record time of a
 * replay, see tui/app.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectors/builtin.h"
#include "xflow/session.h"
#include "xflow/file.h"

#define MAX_BATCH 4096
#define MAX_DOMAINS 256

struct site {
	uint16_t domain;
	uint32_t id, line;
	uint32_t roles;   /* as the saving run's collector gave them */
	char *domain_name, *file, *function;
};

struct replay {
	char *path;
	double speed;               /* 0: max */
	int recorded;               /* clock=recorded */
	FILE *f;
	struct xflow_session_reader *r;
	struct site *sites;
	size_t nsites, cap;
	struct {
		uint16_t id;
		const char *name;   /* a site's copy */
		uint64_t records;
	} dom[MAX_DOMAINS];
	unsigned ndom;
	uint8_t carried[XFLOW_SESSION_KINDS];
	uint64_t total, records;
	uint64_t t_first, start;
	int started, done, failed, have_pending;
	struct xflow_session_chunk pending;
	char err[512];
};

static int parse_options(struct replay *x, const char *options, char *err, size_t errlen)
{
	char *copy = strdup(options ? options : ""), *save = NULL;
	int rc = 0;
	if (!copy)
		return -ENOMEM;
	for (char *kv = strtok_r(copy, ",", &save); kv && !rc; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		const char *v = eq ? eq + 1 : "";
		if (eq)
			*eq = '\0';
		if (!strcmp(kv, "file") && eq && *v) {
			free(x->path);
			if (!(x->path = strdup(v)))
				rc = -ENOMEM;
		} else if (!strcmp(kv, "speed") && eq) {
			char *end;
			double sp = strtod(v, &end);
			if (!strcmp(v, "max")) {
				x->speed = 0;
			} else if (end == v || *end || !(sp >= 0.001 && sp <= 1e6)) {
				snprintf(err, errlen, "replay: bad value '%s' for speed: expected a factor from 0.001 to 1000000, or max", v);
				rc = -EINVAL;
			} else {
				x->speed = sp;
			}
		} else if (!strcmp(kv, "clock") && eq && (!strcmp(v, "recorded") || !strcmp(v, "replay"))) {
			x->recorded = !strcmp(v, "recorded");
		} else {
			snprintf(err, errlen, "replay: unknown option '%s%s%s' (file=PATH, speed=N|max, "
				 "clock=recorded|replay)", kv,
				 eq ? "=" : "", v);
			rc = -EINVAL;
		}
	}
	free(copy);
	if (!rc && !x->path) {
		snprintf(err, errlen, "replay: file=PATH is required");
		rc = -EINVAL;
	}
	return rc;
}

static int add_site(struct replay *x, const struct xflow_session_chunk *c)
{
	for (size_t i = 0; i < x->nsites; i++)
		if (x->sites[i].domain == c->domain && x->sites[i].id == c->site)
			return 0; /* the first description stands */
	if (x->nsites == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 64;
		struct site *s = realloc(x->sites, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		x->sites = s;
		x->cap = cap;
	}
	struct site *s = &x->sites[x->nsites];
	s->domain = c->domain;
	s->id = c->site;
	s->line = c->line;
	s->roles = c->roles;
	s->domain_name = strdup(c->domain_name);
	s->file = strdup(c->file);
	s->function = strdup(c->function);
	x->nsites++;
	if (!s->domain_name || !s->file || !s->function)
		return -ENOMEM;
	unsigned d;
	for (d = 0; d < x->ndom && x->dom[d].id != c->domain; d++)
		;
	if (d == x->ndom && d < MAX_DOMAINS) {
		x->dom[d].id = c->domain;
		x->dom[d].name = s->domain_name;
		x->ndom++;
	}
	return 0;
}

/* The first pass: validate everything, keep the names. */
static int scan(struct replay *x, char *err, size_t errlen)
{
	struct xflow_session_reader *r;
	struct xflow_session_chunk c;
	int rc = xflow_session_reader_new(x->f, x->path, &r, err, errlen);
	if (rc)
		return rc;
	/* Records are saved in the order the model got them, which is not
	 * time order across domains: the replay starts at the earliest. */
	uint64_t last;
	xflow_session_reader_span(r, &x->t_first, &last);
	while ((rc = xflow_session_reader_next(r, &c, err, errlen)) == 1) {
		if (c.type == XFLOW_SESSION_SITE && (rc = add_site(x, &c))) {
			snprintf(err, errlen, "replay: %s: %s", x->path, strerror(-rc));
			break;
		}
		if (c.type == XFLOW_SESSION_CARRIED)
			memcpy(x->carried, c.carried, sizeof(x->carried));
		x->total += c.type == XFLOW_SESSION_RECORD;
	}
	xflow_session_reader_free(r);
	return rc < 0 ? rc : 0;
}

static void replay_close(struct xflow_collector *c)
{
	struct replay *x = (struct replay *)c;
	if (!x)
		return;
	xflow_session_reader_free(x->r);
	if (x->f)
		fclose(x->f);
	for (size_t i = 0; i < x->nsites; i++) {
		free(x->sites[i].domain_name);
		free(x->sites[i].file);
		free(x->sites[i].function);
	}
	free(x->sites);
	free(x->path);
	free(x);
}

static int replay_open(const char *options, struct xflow_collector **out, char *err, size_t errlen)
{
	struct replay *x = calloc(1, sizeof(*x));
	int rc;
	if (!x)
		return -ENOMEM;
	x->speed = 1;
	if ((rc = parse_options(x, options, err, errlen)))
		goto fail;
	struct stat st;
	int fd = xflow_file_open(x->path, &st);
	if (fd < 0 || !(x->f = fdopen(fd, "rb"))) {
		rc = fd < 0 ? fd : -errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "replay: %s: %s", x->path, xflow_file_strerror(rc, &st));
		goto fail;
	}
	if ((rc = scan(x, err, errlen)))
		goto fail;
	rewind(x->f);
	if ((rc = xflow_session_reader_new(x->f, x->path, &x->r, err, errlen)))
		goto fail;
	*out = (struct xflow_collector *)x;
	return 0;
fail:
	replay_close((struct xflow_collector *)x);
	return rc;
}

static long replay_read(struct xflow_collector *c, uint64_t now, xflow_collector_emit_fn emit,
			void *ctx, size_t max)
{
	struct replay *x = (struct replay *)c;
	if (x->done)
		return x->failed ? -EBADMSG : -ENODATA;
	if (!x->started) {
		x->started = 1;
		x->start = now;
	}
	long n = 0;
	if (max > MAX_BATCH)
		max = MAX_BATCH;
	while ((size_t)n < max) {
		struct xflow_session_chunk *ch = &x->pending;
		if (!x->have_pending) {
			int rc = xflow_session_reader_next(x->r, ch, x->err, sizeof(x->err));
			if (rc <= 0) {
				/* The file changed since open() validated it. */
				x->done = 1;
				x->failed = rc < 0;
				return n ? n : rc < 0 ? rc : -ENODATA;
			}
			if (ch->type == XFLOW_SESSION_END) {
				x->done = 1;
				return n ? n : -ENODATA;
			}
			if (ch->type != XFLOW_SESSION_RECORD)
				continue;
			x->have_pending = 1;
		}
		uint64_t rel = ch->t_ns - x->t_first; /* the reader checked t_first <= t_ns */
		if (x->speed > 0 && (double)x->start + (double)rel / x->speed > (double)now)
			break;
		x->have_pending = 0;
		emit(ctx, &ch->record, x->recorded ? ch->t_ns : x->start + rel);
		n++;
		x->records++;
		for (unsigned d = 0; d < x->ndom; d++)
			if (x->dom[d].id == ch->record.domain_id)
				x->dom[d].records++;
	}
	return n;
}

static void replay_stats(struct xflow_collector *c, struct xflow_collector_stats *out)
{
	struct replay *x = (struct replay *)c;
	memset(out, 0, sizeof(*out));
	out->records = x->records;
	out->ndomains = x->ndom;
}

static int replay_site_info(struct xflow_collector *c, uint16_t domain, uint32_t site,
			    struct xflow_site_info *out)
{
	struct replay *x = (struct replay *)c;
	for (size_t i = 0; i < x->nsites; i++)
		if (x->sites[i].domain == domain && x->sites[i].id == site) {
			memset(out, 0, sizeof(*out));
			out->domain = x->sites[i].domain_name;
			out->file = x->sites[i].file;
			out->line = x->sites[i].line;
			out->function = x->sites[i].function;
			out->roles = x->sites[i].roles;
			return 0;
		}
	return -ENOENT;
}

static int replay_domain_info(struct xflow_collector *c, uint32_t i, struct xflow_domain_info *out)
{
	struct replay *x = (struct replay *)c;
	if (i >= x->ndom)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->id = x->dom[i].id;
	out->name = x->dom[i].name;
	out->source = "replay";
	out->records = x->dom[i].records;
	/* The times were placed when they were recorded, how well is not
	 * in the session. */
	out->clock_bound_ns = XFLOW_CLOCK_BOUND_UNKNOWN;
	out->gone = x->done;
	return 0;
}

static unsigned replay_carried_bits(struct xflow_collector *c, uint16_t kind)
{
	struct replay *x = (struct replay *)c;
	return kind < XFLOW_SESSION_KINDS ? x->carried[kind] : 0;
}

static const char *replay_last_error(struct xflow_collector *c)
{
	struct replay *x = (struct replay *)c;
	return x->err[0] ? x->err : NULL;
}

const struct xflow_collector_ops xflow_collector_replay = {
	.abi = XFLOW_COLLECTOR_ABI,
	.name = "replay",
	.help = "a session saved with --save-session: file=PATH, speed=N|max (default 1), clock=recorded|replay",
	.open = replay_open,
	.read = replay_read,
	.stats = replay_stats,
	.site_info = replay_site_info,
	.domain_info = replay_domain_info,
	.carried_bits = replay_carried_bits,
	.last_error = replay_last_error,
	.close = replay_close,
};
