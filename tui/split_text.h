/*
 * tui/split_text.h — the hop split of tui/hop_split.h put into words and
 * cells: percentages that add up, a stacked bar, the sentence naming a
 * gap's biggest cause, the culprit of a wait and the header's status.
 *
 * Pure functions of the contract's structs, written once for every
 * renderer (views, snapshots, batch, JSON): none allocates, none reads
 * the model, each writes at most @len bytes and always a terminated
 * string when @len is not 0.
 */
#ifndef XFLOW_TUI_SPLIT_TEXT_H
#define XFLOW_TUI_SPLIT_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "tui/aggregate.h"
#include "tui/hop_split.h"
#include "tui/sites.h"

/* The sum of the states, UINT64_MAX when it would not fit. */
uint64_t xft_split_total(const struct xft_split *s);

/* @s added into @acc state by state and reason by reason, each sum
 * stopping at UINT64_MAX. */
void xft_split_add(struct xft_split *acc, const struct xft_split *s);

/* Whole percentages of the states that add up to exactly 100 for a
 * non-empty split (the largest remainders are rounded up, ties to the
 * earlier state), all 0 for an empty one. */
void xft_split_percent(const struct xft_split *s, int pct[XFT_NSTATES]);

/* The character a state's cells and legend are drawn with: one per state,
 * so that a bar reads without colour. */
char xft_state_glyph(enum xft_state st);

/* A stacked bar of @width cells: @cells[i] is the state (enum xft_state)
 * cell i shows, the states in their order, each as many cells as its
 * share of the split rounded as xft_split_percent() rounds.  Returns the
 * cells filled: @width for a non-empty split, 0 for an empty one or a
 * width below 1. */
int xft_split_cells(const struct xft_split *s, int width, unsigned char *cells);

/* The bar as text, its glyphs, @width of them (0 for an empty split). */
size_t xft_split_bar_text(const struct xft_split *s, int width, char *buf, size_t len);

/* The states there are, biggest first, as "#wait 62% =run 30% ?unknown 8%
 * (clock 6%, lost 2%)" (a share under 1 % as "<1%"; the '?' with its two
 * biggest reasons, xft_unknown_reasons_text()), with only as many whole
 * items as fit in @width characters (@width < 0: no limit).  Returns the
 * length. */
size_t xft_split_percent_text(const struct xft_split *s, int width, char *buf, size_t len);

/* The reasons of the '?' of @s, biggest first, at most @most of them:
 * "clock 6%, lost 2%", each a share of the whole split (those of all five
 * add up to the '?' share of xft_split_percent()); "" when @s has no '?'
 * or its reasons are all zero.  Whole items only.  Returns the length. */
size_t xft_unknown_reasons_text(const struct xft_split *s, int most, char *buf, size_t len);

/* "d0v1", the idle domain's "idlev3". */
void xft_vcpu_name(uint16_t domain, uint16_t vcpu, char *buf, size_t len);

/* The state holding most of @s (ties to the earlier state), -1 when
 * the split is empty. */
int xft_split_biggest(const struct xft_split *s);

/*
 * One sentence of what state @st cost a gap, its duration first:
 * "waited 1.20ms for pCPU1, which ran d0v1", "blocked 4.90ms after its
 * wake", "notify 800us until linux0 woke"; the '?' says its biggest
 * reason: "1.20ms not attributable: within the clock error of a boundary"
 * (all of it), "1.20ms not attributable, 800us of it within the clock
 * error of a boundary" (the biggest of several).  @c names the wait's
 * culprit (NULL or wait_ns 0: none known); @receiver names the receiving side
 * ("linux0"; NULL: "the receiver").  Returns the length; "" when the state
 * took no time.
 */
size_t xft_split_state_text(const struct xft_split *s, const struct xft_culprit *c, enum xft_state st,
			    const char *receiver, char *buf, size_t len);

/* The same sentence for the biggest state of @s; returns that state, -1
 * (and "") for an empty split. */
int xft_split_cause_text(const struct xft_split *s, const struct xft_culprit *c, const char *receiver,
			 char *buf, size_t len);

/* The gap of a flow's path (index i: path[i] -> path[i + 1]) and state
 * holding the most time over all its gaps; -1 when the flow has no split
 * (gaps NULL, or every gap empty). */
int xft_flow_biggest_gap(const struct xft_flow_summary *f, uint32_t *gap, int *state);

/* The sentence of the flow's biggest cause (xft_flow_biggest_gap()), the
 * receiver named by its domain in @sites; returns the gap's index, -1
 * (and "") when the flow has no split. */
int xft_flow_cause_text(const struct xft_flow_summary *f, struct xft_sites *sites, char *buf, size_t len);

/* Who held the physical CPU a hop waited for, with its share of the wait
 * @wait_ns: "waited for pCPU1, which ran d0v1 (80% of the wait)";
 * "waited, but no switch record names the holder" when the split has a
 * wait but no culprit; "" with no wait. */
size_t xft_culprit_text(const struct xft_culprit *c, uint64_t wait_ns, char *buf, size_t len);

/* The culprits of a hop's waits over all its flows and its tail:
 * "waited for pCPU1, which ran d0v1 (80% of the wait); p99+: waited for
 * pCPU1, which ran d0v2 (100% of the wait)"; "" when it did not wait. */
size_t xft_hop_culprits_text(const struct xft_hop_split *sp, char *buf, size_t len);

/* The header's word on the join: "sched: not joined", "sched: joined,
 * clock not yet measured", "sched clock ±3.10us" (the error proven at
 * most that) or "sched clock ≥1.20us off, not bounded" (measured at least
 * that, no bound proven), and ", lost N" when records were. */
size_t xft_sched_status_text(const struct xft_sched_status *st, char *buf, size_t len);

/* Why the trace's records were lost, each reason with its count: " (10
 * lost before the join, 2 splits older than the timelines keep)"; "" when
 * none were. */
size_t xft_sched_lost_text(const struct xft_sched_status *st, char *buf, size_t len);

/* The join's counts: "1000 scheduler records, 12 lost (...); 900 hop
 * samples split, 3 waiting for the trace", and ", 5 split before the trace
 * came (the queue was full)" when some were. */
size_t xft_sched_counts_text(const struct xft_sched_status *st, char *buf, size_t len);

/* The line batch mode prints for scripts, its fields in a fixed order:
 * "sched joined, clock ±3.1 µs; trace records 1000, lost 0; hops split
 * 900, pending 3, split early 0" (the reasons of a loss after its count),
 * "sched joined, clock ≥1.2 µs off, not bounded; ...", "sched joined,
 * clock not measured yet; ..." or "sched not joined". */
size_t xft_sched_batch_text(const struct xft_sched_status *st, char *buf, size_t len);

#endif
