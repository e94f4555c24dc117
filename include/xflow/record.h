/*
 * xflow/record.h — the record every hook writes and every collector reads.
 *
 * ABI between processes (and, on Xen, between domains): a record is a fixed
 * 88-byte little-endian structure.  Producers fill a struct xflow_record and
 * push it into a ring (xflow/ring.h); consumers copy a ring slot out of shared
 * memory into private memory and only then decode it with
 * xflow_record_decode(), which rejects anything a well-behaved producer of
 * this version cannot have written.  A record from a guest is hostile input.
 *
 * Records the runtime writes for the flow operations of xflow-derived advice
 * (start, transit, quit: "markers") carry the flags of that operation and no
 * data (ndata 0); records of ordinary advice carry what STORE_DATAn stored.
 *
 * Versioning: XFLOW_RECORD_VERSION changes whenever a field changes meaning
 * or position.  Fields are only ever added in the reserved space; a consumer
 * refuses records whose version it does not know.
 */
#ifndef XFLOW_RECORD_H
#define XFLOW_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 2: cpu_plus1 (offset 36, formerly reserved).  Version 1 records are
 * still accepted: they decode with cpu_plus1 0, the CPU not known.
 * 3: the flag XFLOW_REC_SEQ_COUNTS_LOST (bit 8, formerly zero); records of
 * versions 1 and 2 never have it.
 * 4: the flag XFLOW_REC_LOSS_NOTE (bit 9, formerly zero); records of
 * versions 1 to 3 never have it. */
#define XFLOW_RECORD_VERSION 4
#define XFLOW_RECORD_VERSION_MIN 1
#define XFLOW_RECORD_SIZE 88
/* STORE_DATA1 .. STORE_DATA6: the most values one record carries. */
#define XFLOW_RECORD_MAX_DATA 6

/* Flow ids are 48 bits wide; 0 means "no flow". */
#define XFLOW_FLOWID_BITS 48
#define XFLOW_FLOWID_MAX ((UINT64_C(1) << XFLOW_FLOWID_BITS) - 1)

/* What the record says about its flow at this site (bits of .flags). */
enum xflow_record_flag {
	XFLOW_REC_START = 1u << 0,        /* the flow was created here */
	XFLOW_REC_TRANSIT = 1u << 1,      /* the id moved or was copied to another key */
	XFLOW_REC_QUIT = 1u << 2,         /* the flow ended here */
	XFLOW_REC_CROSS_DOMAIN = 1u << 3, /* the id was carried in or out of a ring header */
	XFLOW_REC_SYNTHETIC = 1u << 4,    /* generated (tests, replay), not observed */
	XFLOW_REC_TRUNCATED_ID = 1u << 5, /* the id was cut to the bits of a header field */
	XFLOW_REC_KEYED = 1u << 6,        /* keyed cross-domain handoff (XFLOW_OP_HANDOFF),
	                                   * see "Keyed handoffs" below */
	XFLOW_REC_SPLIT = 1u << 7,        /* a fragment got its own id (XFLOW_OP_SPLIT):
	                                   * data[0] = the parent's id */
	XFLOW_REC_SEQ_COUNTS_LOST = 1u << 8, /* (version 3) thread_seq counts every
	                                   * record of its thread, those lost on
	                                   * the way too: see "Losses" below */
	XFLOW_REC_LOSS_NOTE = 1u << 9,    /* (version 4) no hit's record: its
	                                   * thread lost the records numbered
	                                   * data[0] to this one's thread_seq,
	                                   * this one's included ("Losses") */
	XFLOW_REC_ALL_FLAGS = (1u << 10) - 1,
	/* What advice may ask its records to say; the rest is the
	 * producer's own claim. */
	XFLOW_REC_OP_FLAGS = (1u << 8) - 1,
};

/*
 * Losses.  A record lost anywhere between the hook and the monitor (a
 * full lane, the agent's ring, the transport, a record the monitor could
 * not decode) must not leave a flow that lost it counted as whole.  A
 * producer that numbers each of a thread's records in thread_seq before
 * it knows whether the record will fit, a lost one included, flags them
 * SEQ_COUNTS_LOST: among the records of one (domain_id, thread_id) so
 * flagged, a sequence number skipped is a record lost between the two
 * records around the gap, whatever its flow.  Nothing else on the way
 * renumbers a record.  Every backend does so: the in-process runtime's
 * lanes (a lane belongs to one thread at a time), the ptrace backend's
 * agent per thread, and the kernel backend's BPF program per CPU and
 * level of nesting, whose stream is its thread_id (0x80000000 and up,
 * above any tid: guestrt/hook/kernel/kabi.h, "Numbering").
 *
 * A loss after a thread's last record (a burst fills its lane, then it
 * exits or writes no more) leaves no gap until the thread writes again,
 * maybe never.  The one who knows both ends, the agent that empties the
 * lane, then writes a loss note for the thread: flagged SEQ_COUNTS_LOST
 * and LOSS_NOTE, flow_id 0, flow_kind none, site_id 0, the thread's
 * thread_id, thread_seq the number of the last record it lost, one datum,
 * data[0], the number of the first (the note covers data[0] to thread_seq,
 * fewer than 2^31 numbers, wrapping), and the time the agent saw the lane
 * idle (the lost records were written between the thread's last record
 * and then).  The note stands for that last lost record: a consumer
 * following the thread counts the gap up to the note's number, the note's
 * included, and the thread's next record, numbered one after it, follows
 * on without a gap.  A consumer that has seen nothing of the thread yet
 * (every record it kept was lost) counts data[0] to thread_seq.  Every
 * backend's agent writes notes: the in-process one per lane, the ptrace
 * one per thread, the kernel one per CPU stream (guestrt/hook/kernel/kabi.h,
 * "Numbering": its streams number from 0 at each load, so even a stream
 * none of whose records got through is noted whole).
 *
 * Why a sequence and not the lost records' flow ids: the number costs the
 * writer nothing it did not already do, where a list of lost ids would be
 * one more store per lost record into a space that itself fills up, and
 * every stage after the lanes (agent ring, transport, monitor) would need
 * one of its own; a gap is seen by the monitor whichever stage lost it.
 * The price is that the monitor cannot tell whose record it was, and
 * suspects every flow live in the gap (tui/aggregate.h).
 */

/*
 * Keyed handoffs.  The two sides of one ring request, in the sending and
 * the receiving domain, each write a record flagged TRANSIT|CROSS_DOMAIN|
 * KEYED whose data words are:
 *   data[0]  the key, packed from the request's fields (the same on both
 *            sides while the request is outstanding);
 *   data[1]  the side: 0 sending ("OUT"), 1 receiving ("IN", whose flow id
 *            is a fresh local one);
 *   data[2]  on an IN: the sending domain's id + 1 as the receiver itself
 *            knows it (netback's queue->vif->domid), 0 when not known; on
 *            an OUT: free.
 * Further data words are free for display.  The monitor joins an IN to an
 * OUT of the same flow kind and key from another domain, and from the
 * named one when data[2] names it.  The collector vouches for domain_id
 * (it drops a guest's records claiming another domain); it cannot vouch
 * for a guest's data[], so the key is a claim, and the join is built to
 * survive a guest lying about it (tui/keyed_join.h).
 */

/*
 * One record.  Offsets are fixed (see the static assertions in record.c and
 * the table in xflow(5)); all integers are little-endian on the wire.
 */
struct xflow_record {
	/* Producer clock ticks when the hook ran: TSC ticks when the ring
	 * header's clock is XFLOW_CLOCK_TSC, nanoseconds of CLOCK_MONOTONIC
	 * otherwise.  The consumer converts with its own calibration so that
	 * records of every domain land on one time line. */
	uint64_t timestamp;         /* offset 0 */
	uint64_t flow_id;           /* offset 8: 0 = not part of a flow; < 2^48 */
	uint32_t site_id;           /* offset 16: index into the weave plan's site table */
	uint16_t flow_kind;         /* offset 20: index of the xflow definition; 0xffff = none */
	uint16_t domain_id;         /* offset 22: Xen domain id (or simulated one) */
	uint16_t flags;             /* offset 24: enum xflow_record_flag */
	uint8_t version;            /* offset 26: XFLOW_RECORD_VERSION */
	uint8_t ndata;              /* offset 27: how many of data[] are meaningful, 0..6 */
	uint32_t thread_id;         /* offset 28: producer's thread (tid); the
	                             * kernel backend's, its CPU stream */
	uint32_t thread_seq;        /* offset 32: per-thread sequence, wraps; orders
	                             * records of one thread with equal timestamps;
	                             * with SEQ_COUNTS_LOST, a gap is a loss */
	/* offset 36 (version 2): 1 + the CPU the producer ran on when the hook
	 * ran, as its kernel numbers CPUs (in a PV guest Linux CPU n is vCPU
	 * n, which is what the monitor joins with Xen's scheduler trace);
	 * 0 when the producer could not tell.  At most XFLOW_RECORD_MAX_CPU
	 * + 1.  The kernel backend has it for free; the in-process runtime
	 * takes it with the timestamp (RDTSCP's TSC_AUX, which Linux sets to
	 * the CPU), without a system call. */
	uint32_t cpu_plus1;
	uint64_t data[XFLOW_RECORD_MAX_DATA]; /* offset 40: STORE_DATAn values */
};

#define XFLOW_FLOW_KIND_NONE 0xffffu
/* The highest CPU number a record may name (Xen's vCPU ids are below). */
#define XFLOW_RECORD_MAX_CPU 0xfffeu

/* The record's CPU, or -1 when its producer did not say. */
static inline int32_t xflow_record_cpu(const struct xflow_record *r)
{
	return r->cpu_plus1 ? (int32_t)(r->cpu_plus1 - 1) : -1;
}

/* Sequence numbers (thread_seq, a loss note's data[0]) wrap: @to is at or
 * after @from when fewer than 2^31 numbers lie between them; further is
 * a step back (no honest gap is that long).  The one rule every producer
 * and consumer of the numbers applies. */
static inline int xflow_seq_ahead(uint32_t from, uint32_t to)
{
	return to - from < UINT32_C(1) << 31;
}

/*
 * Serialise @r into @out (exactly XFLOW_RECORD_SIZE bytes, little-endian).
 * On little-endian hosts this is a copy; it is the only sanctioned way to
 * produce wire bytes, so big-endian hosts stay correct.
 */
void xflow_record_encode(const struct xflow_record *r, void *out);

/* The loss note ("Losses") of producer @thread_id of @domain, which lost
 * its records numbered @first to @last, said at @t (the producer's
 * clock): every agent's notes are built here, so that they agree with
 * what xflow_record_decode() accepts. */
void xflow_record_loss_note(struct xflow_record *out, uint16_t domain, uint32_t thread_id, uint32_t first,
			    uint32_t last, uint64_t t);

/*
 * Decode and validate @len bytes at @in.  @in must be private memory (copy
 * out of shared memory first: the producer could change bytes between the
 * check and the use).  Returns 0, or:
 *   -EMSGSIZE  len is not XFLOW_RECORD_SIZE
 *   -EPROTO    unknown version (1 to 4 are known: a version 1 record
 *              decodes as one of version 2 whose CPU is not known)
 *   -EBADMSG   a field out of range (ndata > 6, unknown flag bits, a
 *              version 1 or 2 record flagged SEQ_COUNTS_LOST, one of
 *              version 1 to 3 flagged LOSS_NOTE, a loss note that is not
 *              only its numbers (another flag than SEQ_COUNTS_LOST, a flow
 *              id, a flow kind, a site, a datum but its first number, or
 *              a first number 2^31 or more before its last), flow id over
 *              48 bits, a
 *              version 1 record's reserved word not zero, a CPU over
 *              XFLOW_RECORD_MAX_CPU, unused data not zero)
 * @why, when not NULL, is set to a static string naming the bad field.
 */
int xflow_record_decode(const void *in, size_t len, struct xflow_record *out,
			const char **why);

/* The words past ndata ORed together (0: all zero; ndata must be at most
 * XFLOW_RECORD_MAX_DATA).  Each word is masked rather than the loop
 * started at ndata: ndata changes from one record to the next, and a loop
 * whose length does was a mispredicted branch in most records, about a
 * third of the decoder's time in the agent (perf and callgrind's branch
 * simulation on tests/bench/pipeline.sh).  Where the CPU has SSE2, three
 * 16-byte ANDs with masks picked by ndata do what six words each masked
 * did, in half the instructions (the agent and the monitor check every
 * record of every ring here). */
static inline uint64_t xflow_record__data_beyond_ndata(const struct xflow_record *r)
{
#if defined(__SSE2__) && XFLOW_RECORD_MAX_DATA == 6
	typedef uint64_t xflow_record__v2 __attribute__((vector_size(16)));
#define XFLOW_RECORD__B(a, b) { (a) ? ~UINT64_C(0) : 0, (b) ? ~UINT64_C(0) : 0 }
	/* [ndata & 7][k]: all ones in the words of data[2k..2k+1] at or past
	 * ndata (7 never passes the ndata check: any mask will do). */
	static const xflow_record__v2 beyond[8][3] = {
		{ XFLOW_RECORD__B(1, 1), XFLOW_RECORD__B(1, 1), XFLOW_RECORD__B(1, 1) },
		{ XFLOW_RECORD__B(0, 1), XFLOW_RECORD__B(1, 1), XFLOW_RECORD__B(1, 1) },
		{ XFLOW_RECORD__B(0, 0), XFLOW_RECORD__B(1, 1), XFLOW_RECORD__B(1, 1) },
		{ XFLOW_RECORD__B(0, 0), XFLOW_RECORD__B(0, 1), XFLOW_RECORD__B(1, 1) },
		{ XFLOW_RECORD__B(0, 0), XFLOW_RECORD__B(0, 0), XFLOW_RECORD__B(1, 1) },
		{ XFLOW_RECORD__B(0, 0), XFLOW_RECORD__B(0, 0), XFLOW_RECORD__B(0, 1) },
		{ XFLOW_RECORD__B(0, 0), XFLOW_RECORD__B(0, 0), XFLOW_RECORD__B(0, 0) },
		{ XFLOW_RECORD__B(0, 0), XFLOW_RECORD__B(0, 0), XFLOW_RECORD__B(0, 0) },
	};
#undef XFLOW_RECORD__B
	const xflow_record__v2 *m = beyond[r->ndata & 7];
	xflow_record__v2 d0, d1, d2;
	/* data[] is 8-byte aligned only: copied, not dereferenced. */
	__builtin_memcpy(&d0, &r->data[0], sizeof(d0));
	__builtin_memcpy(&d1, &r->data[2], sizeof(d1));
	__builtin_memcpy(&d2, &r->data[4], sizeof(d2));
	xflow_record__v2 o = (d0 & m[0]) | (d1 & m[1]) | (d2 & m[2]);
	return o[0] | o[1];
#else
	uint64_t beyond = 0;
#pragma GCC unroll 8
	for (unsigned i = 0; i < XFLOW_RECORD_MAX_DATA; i++)
		beyond |= r->data[i] & (0 - (uint64_t)(i >= r->ndata));
	return beyond;
#endif
}

/*
 * The record every hit writes, tested with one branch: the current
 * version, no loss note, every field in range.  True only when
 * xflow_record_decode() would take @r (already private memory); false
 * for every fault and also for older versions and loss notes, which a
 * reader then hands to xflow_record_decode() to be told.  Inline for the
 * readers of many records (a ring's), where a call a record shows.
 * Every test is a word ORed into one, not &&, so that the compiler makes
 * them one branch: every record of every ring comes through here.
 */
_Static_assert(((XFLOW_RECORD_MAX_CPU + 2u) & (XFLOW_RECORD_MAX_CPU + 1u)) == 0,
	       "the CPU is checked with a mask (xflow_record_plainly_valid)");
static inline bool xflow_record_plainly_valid(const struct xflow_record *r)
{
	/* The highest flow id and CPU + 1 are masks of low bits: a field is
	 * in range when it has none of the others set. */
	uint64_t bad = (uint64_t)(r->version ^ XFLOW_RECORD_VERSION) | (uint64_t)(r->ndata > XFLOW_RECORD_MAX_DATA) |
		       (uint64_t)(r->flags & ~(XFLOW_REC_ALL_FLAGS & ~XFLOW_REC_LOSS_NOTE)) |
		       (r->flow_id & ~XFLOW_FLOWID_MAX) | (uint64_t)(r->cpu_plus1 & ~(XFLOW_RECORD_MAX_CPU + 1u)) |
		       xflow_record__data_beyond_ndata(r);
	return bad == 0;
}

#endif
