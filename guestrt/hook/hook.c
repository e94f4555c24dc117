/*
 * The backend-independent face of the hook engines: wrappers over the
 * backend table, error strings.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guestrt/hook/hook_priv.h"

int xflow_hook_fail(struct xflow_hook *h, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(h->errbuf, sizeof(h->errbuf), fmt, ap);
	va_end(ap);
	return err;
}

/* XFLOW_HOOK_DIE_AT: "N" or "NAME:N" (see xflow_hook_step). */
static void die_at_parse(struct xflow_hook *h, const char *v)
{
	h->die_at = 0;
	h->die_name[0] = 0;
	if (!v || !*v)
		return;
	const char *colon = strrchr(v, ':');
	if (colon && (size_t)(colon - v) < sizeof(h->die_name)) {
		memcpy(h->die_name, v, (size_t)(colon - v));
		h->die_name[colon - v] = 0;
		v = colon + 1;
	}
	h->die_at = strtol(v, NULL, 10);
}

int xflow_hook_new(const struct xflow_hook_backend_ops *ops, const struct xflow_hook_config *cfg,
		   struct xflow_hook **out)
{
	static const struct xflow_hook_config defaults;
	int rc;

	if (!ops || !ops->hook_new || !out)
		return -EINVAL;
	rc = ops->hook_new(cfg ? cfg : &defaults, out);
	if (rc == 0) {
		(*out)->ops = ops;
		die_at_parse(*out, getenv("XFLOW_HOOK_DIE_AT"));
		const char *who = getenv("XFLOW_HOOK_DIE_WHO");
		(*out)->die_target = who && strcmp(who, "target") == 0;
		/* XFLOW_HOOK_DIE_SIG: what the target is sent instead of SIGKILL
		 * (a signal of its own to deliver, at that very step). */
		const char *sig = getenv("XFLOW_HOOK_DIE_SIG");
		(*out)->die_sig = sig && atoi(sig) > 0 && atoi(sig) < 65 ? atoi(sig) : SIGKILL;
	}
	return rc;
}

void xflow_hook_step(struct xflow_hook *h, pid_t pid, const char *name)
{
	if (h->die_at <= 0 || (h->die_name[0] && strcmp(name, h->die_name) != 0))
		return;
	if (++h->steps != h->die_at)
		return;
	char msg[128];
	int n = snprintf(msg, sizeof(msg), "xflow-hook: test: %s %s at step %ld (%s)\n",
			 h->die_target ? "the target" : "this process",
			 h->die_target && h->die_sig != SIGKILL ? "signalled" : "killed", h->steps, name);
	if (n > 0 && write(2, msg, (size_t)n) < 0)
		n = 0;
	if (h->die_target)
		kill(pid, h->die_sig);
	else
		raise(SIGKILL);
}

void xflow_hook_free(struct xflow_hook *h)
{
	if (h)
		h->ops->hook_free(h);
}

/* Each call starts with no message, so that xflow_hook_last_error() after a
 * failure never shows an older failure's. */
static int done(struct xflow_hook *h, int rc)
{
	if (rc < 0 && !h->errbuf[0])
		snprintf(h->errbuf, sizeof(h->errbuf), "%s", strerror(-rc));
	return rc;
}

/* h is read again after the call: for a call on a target, which the call
 * may free (a detach, a target found dead), the caller reads the target's
 * engine once, before. */
#define CALL(h, op, ...) done((h), ((h)->errbuf[0] = 0, (h)->ops->op ? (h)->ops->op(__VA_ARGS__) : -ENOTSUP))

int xflow_hook_attach(struct xflow_hook *h, pid_t pid, struct xflow_hook_target **out)
{
	return CALL(h, attach, h, pid, out);
}

int xflow_hook_spawn(struct xflow_hook *h, char *const argv[], struct xflow_hook_target **out)
{
	if (!argv || !argv[0])
		return -EINVAL;
	return CALL(h, spawn, h, argv, out);
}

int xflow_hook_detach(struct xflow_hook_target *t)
{
	struct xflow_hook *h = t->hook;
	return CALL(h, detach, t);
}

int xflow_hook_site_add(struct xflow_hook_target *t, uint64_t addr, enum xflow_hook_when when,
			xflow_hook_handler_fn fn, void *data, uint32_t *site)
{
	if (when != XFLOW_HOOK_BEFORE && when != XFLOW_HOOK_AFTER)
		return -EINVAL;
	struct xflow_hook *h = t->hook;
	return CALL(h, site_add, t, addr, when, fn, data, site);
}

int xflow_hook_site_remove(struct xflow_hook_target *t, uint32_t site)
{
	struct xflow_hook *h = t->hook;
	return CALL(h, site_remove, t, site);
}

int xflow_hook_site_enable(struct xflow_hook_target *t, uint32_t site, bool on)
{
	struct xflow_hook *h = t->hook;
	return CALL(h, site_enable, t, site, on);
}

int xflow_hook_site_stats(struct xflow_hook_target *t, uint32_t site, struct xflow_hook_site_stats *st)
{
	struct xflow_hook *h = t->hook;
	return CALL(h, site_stats, t, site, st);
}

int xflow_hook_mem_read(struct xflow_hook_target *t, uint64_t addr, void *buf, size_t len)
{
	struct xflow_hook *h = t->hook;
	return CALL(h, mem_read, t, addr, buf, len);
}

int xflow_hook_mem_write(struct xflow_hook_target *t, uint64_t addr, const void *buf, size_t len)
{
	struct xflow_hook *h = t->hook;
	return CALL(h, mem_write, t, addr, buf, len);
}

int xflow_hook_run(struct xflow_hook *h, int timeout_ms)
{
	return CALL(h, run, h, timeout_ms);
}

int xflow_hook_control_fd(struct xflow_hook *h, int fd)
{
	return CALL(h, control_fd, h, fd);
}

#define INTARGET(h, op, ...) \
	done((h), ((h)->errbuf[0] = 0, (h)->ops->intarget && (h)->ops->intarget->op ? (h)->ops->intarget->op(__VA_ARGS__) : -ENOTSUP))

int xflow_hook_prog_load(struct xflow_hook_target *t, const struct xflow_hook_prog *prog)
{
	if (!prog || !prog->plan || !prog->dom)
		return -EINVAL;
	struct xflow_hook *h = t->hook;
	return INTARGET(h, prog_load, t, prog);
}

int xflow_hook_advice_enable(struct xflow_hook_target *t, uint32_t advice, bool on)
{
	struct xflow_hook *h = t->hook;
	return INTARGET(h, advice_enable, t, advice, on);
}

long xflow_hook_drain(struct xflow_hook *h, xflow_hook_record_fn fn, void *ctx, size_t max)
{
	if (!fn)
		return -EINVAL;
	return h->ops->intarget && h->ops->intarget->drain ? h->ops->intarget->drain(h, fn, ctx, max) : -ENOTSUP;
}

long xflow_hook_drain_runs(struct xflow_hook *h, xflow_hook_records_fn runs, xflow_hook_record_fn fn, void *ctx,
			   size_t max)
{
	if (!fn)
		return -EINVAL;
	if (runs && h->ops->intarget && h->ops->intarget->drain_runs)
		return h->ops->intarget->drain_runs(h, runs, fn, ctx, max);
	return xflow_hook_drain(h, fn, ctx, max);
}

int xflow_hook_prog_stats(struct xflow_hook *h, uint32_t nadvice, struct xflow_hook_advice_stats *adv,
			  struct xflow_hook_prog_stats *all)
{
	return INTARGET(h, stats, h, nadvice, adv, all);
}

const char *xflow_hook_last_error(const struct xflow_hook *h)
{
	return h->errbuf;
}

const char *xflow_hook_strerror(int err)
{
	return strerror(err < 0 ? -err : err);
}
