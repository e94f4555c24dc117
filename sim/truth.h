/*
 * The truth: when each message passed each stage, measured inside the
 * simulation, for tests to compare with what xflowtop reports.
 *
 * Each domain writes FILE.<domid>; xensim concatenates them into FILE when the
 * host stops (see sim/README for the format).  Lines are collected in a
 * buffer per thread and written whole, so the threads of a domain never
 * interleave inside a line.
 */
#ifndef SIM_TRUTH_H
#define SIM_TRUTH_H

#include <stdint.h>

#include "sim/late.h"
#include "sim/stage.h"

#define TRUTH_HEADER "#time_ns\tdom\tguest\tpath\tmsg\tseg\tnseg\tstage\taddr\n"

/* Identifies one unit of work: a segment of a message, or a block request. */
struct truth_tag {
	uint32_t guest;
	uint32_t msg;
	uint16_t seg;
	uint16_t nseg;
};

/* Opens @prefix.<domid> (truncating).  Without a call, notes are no-ops. */
int truth_open(const char *prefix, uint32_t domid);

/* Records that @tag passed @st now, on the object at @addr. */
void truth_note(enum sim_stage st, const struct truth_tag *tag, const void *addr);

/* The same, for a time taken earlier (before the tag was known). */
void truth_note_at(enum sim_stage st, const struct truth_tag *tag, const void *addr,
		   int64_t time_ns);

/*
 * Records how late something released its items over the run (see late.h):
 * one comment line "#late <TAB> dom <TAB> what <TAB> releases <TAB> p50
 * <TAB> p90 <TAB> p99 <TAB> max", which readers of the records skip with
 * every other '#' line.
 */
void truth_note_lateness(const char *what, const struct sim_late *late);

/* Writes out the calling thread's buffer (call before a thread exits). */
void truth_thread_flush(void);

/* Writes out every buffer and closes the file; threads must have stopped. */
void truth_close(void);

#endif
