/*
 * The headless renderer (--headless): no screen and no tables, for hosts
 * where nobody watches and Prometheus scrapes /metrics (tui/metrics.h).
 * The loop still collects and refreshes at the interval; -n still stops it.
 */
#include "tui/app.h"

const struct xft_renderer xft_renderer_headless = {
	.name = "headless",
};
