/*
 * tui/lies_text.h — a domain's lies (xflow/collector.h's struct
 * xflow_domain_lies) in the words and keys every renderer uses: the
 * Domains view, the batch text, the snapshots, the JSON and /metrics name
 * each kind the same way.
 */
#ifndef XFLOW_TUI_LIES_TEXT_H
#define XFLOW_TUI_LIES_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "xflow/collector.h"

#define XFT_LIE_KINDS 9

/* The key of lie kind @k (0 .. XFT_LIE_KINDS - 1): "other_domain",
 * "time_past", "time_future", "flood", "never_started", "after_end",
 * "stats", "hop_share", "handoff_share". */
const char *xft_lie_key(unsigned k);
/* Its count in @l. */
uint64_t xft_lie_count(const struct xflow_domain_lies *l, unsigned k);

/* "lies: 3 other domain, 1 time future" (the kinds that are not 0), or ""
 * when there is none; at most @len bytes, terminated when @len is not 0. */
void xft_lies_text(const struct xflow_domain_lies *l, char *buf, size_t len);

#endif
