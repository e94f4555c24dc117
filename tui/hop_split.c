/*
 * tui/hop_split.c — the names of the states a hop is split into, and of
 * the reasons of its '?'.
 */
#include "tui/hop_split.h"

static const char *const state_names[XFT_NSTATES] = {
	[XFT_ST_RUN] = "run",         [XFT_ST_WAIT] = "wait",
	[XFT_ST_NOTIFY] = "notify",   [XFT_ST_BACKEND] = "backend",
	[XFT_ST_BLOCKED] = "blocked", [XFT_ST_OFFLINE] = "offline",
	[XFT_ST_XEN] = "xen",         [XFT_ST_UNKNOWN] = "?",
};

const char *xft_state_name(enum xft_state s)
{
	return (unsigned)s < XFT_NSTATES ? state_names[s] : "bad-state";
}

/* Prometheus label values must be plain words: '?' is "unknown" there. */
const char *xft_state_label(enum xft_state s)
{
	return s == XFT_ST_UNKNOWN ? "unknown" : xft_state_name(s);
}

static const char *const reason_names[XFT_UNK_NREASONS] = {
	[XFT_UNK_NO_TRACE] = "no_trace", [XFT_UNK_LOST] = "lost",   [XFT_UNK_CLOCK] = "clock",
	[XFT_UNK_OLD] = "old",           [XFT_UNK_EARLY] = "early",
};

const char *xft_unknown_reason_name(enum xft_unknown_reason r)
{
	return (unsigned)r < XFT_UNK_NREASONS ? reason_names[r] : "bad-reason";
}
