/*
 * tui/metrics.h — xflowtop's figures for Prometheus (--listen): the model,
 * the collectors, the domains, the aspects and the hypervisor, walked into
 * a snapshot at each refresh and published to the /metrics server of
 * export/.  The metrics and their labels are listed in xflowtop(1).
 *
 * Everything here runs on the loop thread, between refreshes: publishing
 * costs the loop the walk (each hop's histogram is folded again only when
 * it moved) and never waits for a scrape.
 */
#ifndef XFLOW_TUI_METRICS_H
#define XFLOW_TUI_METRICS_H

#include <stddef.h>

struct xft_app;
struct xft_metrics;

/* Serve app->cfg.listen; the address bound is printed on standard error.
 * 0, or -errno with the reason (and what to do) in @err. */
int xft_metrics_start(struct xft_app *app, char *err, size_t errlen);
/* Publish the figures as of now; nothing without an exporter. */
void xft_metrics_publish(struct xft_app *app);
/* Stop serving and free; safe without an exporter. */
void xft_metrics_stop(struct xft_app *app);
/* The address served ("127.0.0.1:9464"), or NULL without an exporter. */
const char *xft_metrics_address(const struct xft_app *app);

#endif
