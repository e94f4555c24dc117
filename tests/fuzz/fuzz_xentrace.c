/*
 * Fuzz the xentrace reader and decoder: any bytes are read to the end from
 * memory, decoded and summarised, then read again as a live stream, without
 * a crash, a leak or unbounded memory; whatever is rejected says where and
 * why.  (The two may still disagree on hostile framing: the file reader
 * takes a cpu-change record with a TSC or extra words as a window, the
 * stream only the exact one xentrace writes.)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "collectors/xentrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	if (!sink && !(sink = fopen("/dev/null", "w")))
		abort();
	struct xentrace_source src;
	xentrace_source_init_mem(&src, data, size);
	/* A small buffer, so that refills and records straddling them are
	 * exercised on small inputs too. */
	struct xentrace_reader_opts opts = { .buffer_bytes = 64 };
	struct xentrace_reader *r = NULL;
	int rc = xentrace_reader_open(&r, &src, &opts);
	if (rc < 0) {
		/* Rejected input must say why. */
		if (rc != -EBADMSG || !r || xentrace_reader_ndiags(r) == 0)
			abort();
		xentrace_reader_free(r);
		return 0;
	}
	struct xentrace_state *s;
	if (xentrace_state_new(&s, 2400000000u) < 0)
		abort();
	const struct xentrace_record *rec;
	uint64_t n = 0, last = 0;
	while ((rc = xentrace_reader_next(r, &rec)) == 1) {
		/* The merge never goes back in time, and records stay in the file. */
		if (rec->order_tsc < last || rec->nextra > XENTRACE_MAX_EXTRA ||
		    rec->offset + xentrace_record_size(rec) > size)
			abort();
		last = rec->order_tsc;
		xentrace_state_feed(s, rec);
		if (++n > size)
			abort(); /* more records than bytes: a loop */
	}
	if (rc != 0)
		abort();
	xentrace_state_finish(s);
	xentrace_state_print_summary(s, sink);
	xentrace_state_print_extras(s, sink);
	xentrace_state_free(s);
	xentrace_reader_free(r);

	/* The same bytes as a live stream (read once, in order), with a budget
	 * small enough to be reached. */
	struct xentrace_reader_opts sopts = { .stream_budget = 4096, .stream_quiet_windows = 4 };
	if (xentrace_reader_open_stream_src(&r, &src, &sopts) < 0)
		abort();
	n = 0;
	while ((rc = xentrace_reader_next(r, &rec)) == 1) {
		if (rec->nextra > XENTRACE_MAX_EXTRA || ++n > size)
			abort();
	}
	/* A stream with no window at all is refused, as a file is, and says
	 * why; one with windows ends cleanly. */
	if (rc != 0 && (rc != -EBADMSG || n || xentrace_reader_stats(r)->windows || !xentrace_reader_ndiags(r)))
		abort();
	xentrace_reader_free(r);
	return 0;
}
