/*
 * collectors/xentrace.h — Xen's binary trace format (xentrace output).
 *
 * The record layout is that of xen/trace.h: a 32-bit header (event in bits
 * 0-27, number of extra 32-bit words in bits 28-30, TSC present in bit 31),
 * the optional 64-bit TSC, up to 7 extra words.  xentrace writes each
 * physical cpu's records in windows, each opened by a TRC_TRACE_CPU_CHANGE
 * record {cpu, window size}, so a file is not in time order.
 *
 * Four parts, each usable alone:
 *   source   bytes by offset, from a file descriptor or from memory;
 *   reader   the per-cpu windows walked in constant memory and merged by
 *            TSC (one cursor and one buffer per cpu, a heap over the cpus);
 *            or, live from a pipe, read once into bounded per-cpu queues;
 *   state    the decoder: runstates per domain and vcpu, migrations, HVM
 *            exits, PV hypercalls and traps, domain create/destroy, guest
 *            records — with xenalyze's accounting rules, so that
 *            xentrace_state_print_summary() is comparable line for line
 *            with `xenalyze --summary`;
 *   writer   a small generator of valid trace files, for the tests.
 *
 * xentrace files do not record the TSC rate: the caller gives it (xenalyze
 * assumes 2.4 GHz; we do not guess).
 *
 * Errors are 0 or a negative errno.  Bad input never aborts: a problem that
 * stops reading returns -EBADMSG (see xentrace_reader_diag for the offset
 * and the reason); anything recoverable is skipped and counted.
 */
#ifndef XFLOW_COLLECTORS_XENTRACE_H
#define XFLOW_COLLECTORS_XENTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define XENTRACE_MAX_CPUS 256
#define XENTRACE_MAX_EXTRA 7
/* A window claiming more bytes than this is not believed, from a file or
 * a stream (Xen's per-cpu trace buffers are far smaller): it is a framing
 * error, and the reader looks for the next window. */
#define XENTRACE_MAX_WINDOW (256u << 20)

/* Event ids the reader itself interprets (xen/trace.h). */
#define XENTRACE_EV_LOST_RECORDS 0x0001f001u
#define XENTRACE_EV_WRAP_BUFFER 0x0001f002u
#define XENTRACE_EV_CPU_CHANGE 0x0001f003u

/* --- source -------------------------------------------------------------- */

/*
 * Where the bytes come from.  read_at() copies up to @len bytes at @off into
 * @buf and returns how many it copied (0 at the end) or a negative errno.
 * Embedded by value; the memory or descriptor stays owned by the caller.
 */
struct xentrace_source {
	ssize_t (*read_at)(const struct xentrace_source *src, void *buf, size_t len, uint64_t off);
	uint64_t size;
	union {
		int fd;
		const uint8_t *mem;
	} u;
};

/* A regular file (pread); -ESPIPE for a pipe, which cannot be re-read:
 * use xentrace_reader_open_stream() for that. */
int xentrace_source_init_fd(struct xentrace_source *src, int fd);
void xentrace_source_init_mem(struct xentrace_source *src, const void *data, size_t len);

/* --- reader -------------------------------------------------------------- */

enum {
	/* Second delivery of a TRC_LOST_RECORDS, at its own TSC: the first one
	 * came at the TSC of the first lost record (as xenalyze does). */
	XENTRACE_REC_LOST_END = 1u << 0,
	/* The last record of its cpu: the decoder closes that cpu after it. */
	XENTRACE_REC_CPU_LAST = 1u << 1,
};

struct xentrace_record {
	uint64_t tsc;       /* the record's TSC, or its cpu's last TSC when it has none */
	uint64_t order_tsc; /* what the merge sorted on */
	uint64_t offset;    /* file offset of the header */
	uint32_t event;     /* bits 0-27 of the header */
	uint16_t cpu;
	uint8_t nextra;
	uint8_t has_tsc : 1;
	uint8_t flags : 7;  /* XENTRACE_REC_* */
	uint32_t extra[XENTRACE_MAX_EXTRA];
};

/* Byte size of a record as it is in the file. */
static inline unsigned xentrace_record_size(const struct xentrace_record *r)
{
	return 4u + (r->has_tsc ? 8u : 0u) + 4u * r->nextra;
}

enum xentrace_diag_kind {
	XENTRACE_DIAG_FRAMING,   /* window headers: bad cpu-change, bad size, resync */
	XENTRACE_DIAG_RECORD,    /* a record skipped: crosses its window, bad TSC */
	XENTRACE_DIAG_TRUNCATED, /* the file ends inside a window or a record */
	XENTRACE_DIAG_TSC_BACK,  /* TSC went backwards on a cpu */
	XENTRACE_DIAG_LOST,      /* Xen lost records here */
	XENTRACE_DIAG_DECODE,    /* the decoder skipped a record it could not use */
};

struct xentrace_diag {
	enum xentrace_diag_kind kind;
	int cpu;         /* -1 when not tied to one cpu */
	uint64_t offset; /* file offset */
	char what[112];
};

struct xentrace_reader_stats {
	uint64_t records;        /* delivered, lost-record second deliveries excluded */
	uint64_t windows;        /* cpu-change windows walked by the discovery pass */
	uint64_t cpus;           /* distinct cpus seen */
	uint64_t lost_events;    /* TRC_LOST_RECORDS records */
	uint64_t lost_records;   /* sum of their counts */
	uint64_t wraps;          /* TRC_TRACE_WRAP_BUFFER records */
	uint64_t tsc_backwards;  /* records whose TSC was below their cpu's last */
	uint64_t bad_tsc;        /* records skipped for an absurd TSC jump */
	uint64_t bad_records;    /* records skipped for framing (crossing a window...) */
	uint64_t skipped_bytes;  /* bytes skipped to find the next window */
	uint64_t diags_dropped;  /* diagnostics past the first XENTRACE_MAX_DIAGS */
	uint64_t stream_forced;  /* stream mode: emitted without waiting, budget full */
	uint64_t stream_late;    /* stream mode: records older than one already emitted */
	uint64_t stream_peak_bytes; /* stream mode: the most the queues held at once */
	uint64_t file_size;
};

#define XENTRACE_MAX_DIAGS 32
/* A TSC more than this ahead of its cpu's last one is not believed. */
#define XENTRACE_TSC_MAX_JUMP (UINT64_C(1) << 48)

struct xentrace_reader;

struct xentrace_reader_opts {
	size_t buffer_bytes;           /* per cpu; 0: 256 KiB */
	size_t stream_budget;          /* stream mode: bytes queued at most; 0: 16 MiB */
	unsigned stream_quiet_windows; /* stream mode: a cpu without a window for this
					* many windows is not waited for; 0: 8 */
};

/* Opens a reader on @src, which must outlive it.  Walks the window headers
 * once (not the records) to find the cpus.  -ENOMEM, -EIO..., or -EBADMSG
 * when no window can be found at all: then *@out is still set, so that its
 * diagnostics say why; free it as usual. */
int xentrace_reader_open(struct xentrace_reader **out, const struct xentrace_source *src,
			 const struct xentrace_reader_opts *opts);
/*
 * Live: a reader of xentrace's output on a pipe (`xentrace -e all - | ...`),
 * which cannot be re-read.  Windows are read once, in order, into per-cpu
 * queues, and the merge waits for a cpu that has nothing queued, so that
 * records come out in TSC order — unless that cpu has been quiet for
 * stream_quiet_windows windows, or the queues hold stream_budget bytes:
 * then it goes on, and a record that arrives later than a younger one
 * already delivered is counted (stats.stream_late).  xentrace_reader_next()
 * blocks in read(2) when it needs more input, and returns -EBADMSG when the
 * input ends without a single window, as xentrace_reader_open() does for a
 * file.  Memory: the budget is held against the queues' capacity, which a
 * drained queue gives back; with the window being read and the doubling of
 * the queue it lands in, at most twice the budget plus one window, however
 * long the stream (stats.stream_peak_bytes says how much it came to).
 */
int xentrace_reader_open_stream(struct xentrace_reader **out, int fd, const struct xentrace_reader_opts *opts);
/* The same over any source, read once from its start in order (tests, fuzzing). */
int xentrace_reader_open_stream_src(struct xentrace_reader **out, const struct xentrace_source *src,
				    const struct xentrace_reader_opts *opts);
void xentrace_reader_free(struct xentrace_reader *r);

/* The next record in TSC order: 1 and *@rec (valid until the next call), 0 at
 * the end, or a negative errno (-EIO from the source). */
int xentrace_reader_next(struct xentrace_reader *r, const struct xentrace_record **rec);

const struct xentrace_reader_stats *xentrace_reader_stats(const struct xentrace_reader *r);
unsigned xentrace_reader_ndiags(const struct xentrace_reader *r);
const struct xentrace_diag *xentrace_reader_diag(const struct xentrace_reader *r, unsigned i);
const char *xentrace_diag_kind_name(enum xentrace_diag_kind k);

/* --- decoder ------------------------------------------------------------- */

enum xentrace_runstate {
	XENTRACE_RS_RUNNING,
	XENTRACE_RS_RUNNABLE,
	XENTRACE_RS_BLOCKED,
	XENTRACE_RS_OFFLINE,
	XENTRACE_RS_LOST,
	XENTRACE_RS_QUEUED,
	XENTRACE_RS_INIT,
	XENTRACE_RS_MAX
};

enum xentrace_domain_runstate {
	XENTRACE_DRS_BLOCKED,
	XENTRACE_DRS_PARTIAL_RUN,
	XENTRACE_DRS_FULL_RUN,
	XENTRACE_DRS_PARTIAL_CONTENTION,
	XENTRACE_DRS_CONCURRENCY_HAZARD,
	XENTRACE_DRS_FULL_CONTENTION,
	XENTRACE_DRS_LOST,
	XENTRACE_DRS_MAX
};

#define XENTRACE_IDLE_DOMAIN 32767
#define XENTRACE_DEFAULT_DOMAIN 32768
#define XENTRACE_MAX_DOMAINS 1024
#define XENTRACE_MAX_VCPUS 256       /* per domain */
#define XENTRACE_MAX_VCPUS_TOTAL 1024
#define XENTRACE_HIST_BUDGET 1024    /* histograms (18 KiB each) for percentiles */
#define XENTRACE_SAMPLE_MAX (32u << 20) /* xenalyze's sample_max: values per sample set */
#define XENTRACE_HYPERCALL_MAX 56

/* xenalyze's names, for whoever prints decoded events: PV event kind
 * @kind (below XENTRACE_PV_EVENT_MAX), hypercall @nr and VMX basic exit
 * reason @reason (below XENTRACE_VMX_EXIT_NAMES); NULL when unnamed. */
#define XENTRACE_PV_EVENT_MAX 15
#define XENTRACE_VMX_EXIT_NAMES 56
const char *xentrace_pv_event_name(unsigned kind);
const char *xentrace_hypercall_name(unsigned nr);
const char *xentrace_vmx_exit_name(unsigned reason);
#define XENTRACE_VMX_EXIT_MAX 66

/* Cycles spent in one state or event kind. */
struct xentrace_cycles {
	uint64_t count;
	uint64_t cycles;
};

struct xentrace_state;
struct xentrace_domain;
struct xentrace_vcpu;

/* @cpu_hz: TSC frequency for seconds; xentrace files do not record it.
 * 0 is refused (-EINVAL): pass what the capture's host ran at. */
int xentrace_state_new(struct xentrace_state **out, uint64_t cpu_hz);
/* Keep xenalyze's sample sets too (call before the first record), so that
 * the summary's {5%|50%|95%} are xenalyze's, byte for byte, instead of the
 * histograms' estimates: up to XENTRACE_SAMPLE_MAX values (8 bytes each)
 * per summary line, as xenalyze keeps.  The histograms stay for
 * everything else. */
void xentrace_state_keep_samples(struct xentrace_state *s);
void xentrace_state_free(struct xentrace_state *s);

/* Feeds one record in merge order; never fails (problems are counted). */
void xentrace_state_feed(struct xentrace_state *s, const struct xentrace_record *rec);
/* Closes open intervals at the end of the input; call once before reading
 * the results. */
void xentrace_state_finish(struct xentrace_state *s);

/* Reads @r to its end into @s and finishes it.  0, or the reader's error. */
int xentrace_state_run(struct xentrace_state *s, struct xentrace_reader *r);

/* The summary comparable line for line with `xenalyze --summary`. */
void xentrace_state_print_summary(const struct xentrace_state *s, FILE *out);
/* What xenalyze does not print: skips, unknown events by id, lost records,
 * migrations, wake-to-run latency in ns, domain lifetimes, guest records. */
void xentrace_state_print_extras(const struct xentrace_state *s, FILE *out);

uint64_t xentrace_state_total_cycles(const struct xentrace_state *s);
uint64_t xentrace_state_cpu_hz(const struct xentrace_state *s);
/* Records the decoder skipped (bad extra count, no current vcpu...). */
uint64_t xentrace_state_skipped(const struct xentrace_state *s);
/* Count of records of an event id that no decoder handles (0 if none). */
uint64_t xentrace_state_unknown_count(const struct xentrace_state *s, uint32_t event);
uint64_t xentrace_state_unknown_total(const struct xentrace_state *s);
/* Interrupts Xen handled on line @irq (TRC_HW_IRQ_HANDLED), with cycles. */
struct xentrace_cycles xentrace_state_irq(const struct xentrace_state *s, unsigned irq);

/* Domains in id order, the default (placeholder) domain excluded:
 * d = NULL; while ((d = xentrace_state_domain_next(s, d))) ... */
const struct xentrace_domain *xentrace_state_domain_next(const struct xentrace_state *s,
							 const struct xentrace_domain *prev);
const struct xentrace_domain *xentrace_state_domain_find(const struct xentrace_state *s, unsigned domid);
unsigned xentrace_domain_id(const struct xentrace_domain *d);
struct xentrace_cycles xentrace_domain_runstate(const struct xentrace_domain *d,
						enum xentrace_domain_runstate rs);
/* TSCs of a domain's creation and destruction records (0: not seen); false
 * when neither was.  Kept apart from the domains above, which exist only
 * once a vcpu of theirs is scheduled (as in xenalyze's summary). */
bool xentrace_state_domain_lifetime(const struct xentrace_state *s, unsigned domid, uint64_t *created,
				    uint64_t *destroyed);
uint64_t xentrace_domain_guest_records(const struct xentrace_domain *d);
const struct xentrace_vcpu *xentrace_domain_vcpu(const struct xentrace_domain *d, unsigned vid);

struct xentrace_cycles xentrace_vcpu_runstate(const struct xentrace_vcpu *v, enum xentrace_runstate rs);
/* Share of the trace's total time in @rs, in [0, 1]. */
double xentrace_vcpu_runstate_share(const struct xentrace_state *s, const struct xentrace_vcpu *v,
				   enum xentrace_runstate rs);
/* Wake-to-run latency (runnable after blocked/offline, until running). */
struct xentrace_cycles xentrace_vcpu_wake(const struct xentrace_vcpu *v);
/* Their histogram in cycles; NULL when there was no wake. */
const struct xflow_hist *xentrace_vcpu_wake_hist(const struct xentrace_vcpu *v);
/* Its quantile @q in ns, within the histogram's error; 0 when empty. */
uint64_t xentrace_vcpu_wake_latency_ns(const struct xentrace_state *s, const struct xentrace_vcpu *v,
				       double q);
uint64_t xentrace_vcpu_migrations(const struct xentrace_vcpu *v);
/* The pcpu it last ran on, -1 if never seen running. */
int xentrace_vcpu_pcpu(const struct xentrace_vcpu *v);
uint64_t xentrace_vcpu_hypercalls(const struct xentrace_vcpu *v, unsigned op);
struct xentrace_cycles xentrace_vcpu_exit_reason(const struct xentrace_vcpu *v, unsigned reason);

/* --- writer (test generator) --------------------------------------------- */

struct xentrace_writer;

/* Records are buffered per cpu and written as one window when a cpu's buffer
 * reaches @window_bytes (as xentrace does when a buffer fills), so windows of
 * different cpus interleave and the file is not in time order. */
int xentrace_writer_new(struct xentrace_writer **out, FILE *f, unsigned ncpus, size_t window_bytes);
/* Flushes every pending window; returns the first write error, if any. */
int xentrace_writer_close(struct xentrace_writer *w);

int xentrace_writer_add(struct xentrace_writer *w, unsigned cpu, uint64_t tsc, bool has_tsc,
			uint32_t event, unsigned nextra, const uint32_t *extra);
/* Ends @cpu's current window now. */
int xentrace_writer_flush_cpu(struct xentrace_writer *w, unsigned cpu);
/* Raw bytes between windows (for hostile-input tests). */
int xentrace_writer_raw(struct xentrace_writer *w, const void *bytes, size_t len);

/* Scheduler runstate change of d@dom v@vcpu, as Xen traces it. */
int xentrace_writer_runstate(struct xentrace_writer *w, unsigned cpu, uint64_t tsc, unsigned dom,
			     unsigned vcpu, enum xentrace_runstate from, enum xentrace_runstate to);
int xentrace_writer_continue(struct xentrace_writer *w, unsigned cpu, uint64_t tsc, unsigned dom,
			     unsigned vcpu);
int xentrace_writer_lost(struct xentrace_writer *w, unsigned cpu, uint64_t tsc, uint32_t count,
			 unsigned dom, unsigned vcpu, uint64_t first_tsc);
int xentrace_writer_vmexit(struct xentrace_writer *w, unsigned cpu, uint64_t tsc, unsigned reason,
			   uint64_t rip);
int xentrace_writer_vmentry(struct xentrace_writer *w, unsigned cpu, uint64_t tsc);
/* A PV hypercall (the v2 record, no arguments). */
int xentrace_writer_hypercall(struct xentrace_writer *w, unsigned cpu, uint64_t tsc, unsigned op);

#endif
