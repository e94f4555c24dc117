/*
 * guestrt/hook/kernel/kabi.h — what the kernel backend's BPF program
 * (bpf/xflow.bpf.c) and its loader (hook_kernel.c) share: the per-slot site table, the
 * flow-id map's key and the counters.  Included by BPF C (after vmlinux.h)
 * and by host C, so it uses the kernel's __u* types and nothing else.
 *
 * One BPF program per slot: XK_NSLOTS fentry slots, as many fexit slots
 * and XK_NTP raw tracepoint slots.  A slot is bound to one plan site (a
 * function's entry or return, or a tracepoint) before the object is loaded;
 * its program knows its slot number as a constant and reads what to do
 * there from xk_plan[slot]: up to XK_MAX_OPS flow operations, in weave
 * order.  One generic program body, written as an interpreter of a small
 * table; the table is read-only data fixed at load time, so the verifier
 * specialises each program to its own operations (see xflow-agent(8)).
 */
#ifndef XFLOW_GUESTRT_HOOK_KERNEL_KABI_H
#define XFLOW_GUESTRT_HOOK_KERNEL_KABI_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define XK_NSLOTS 24        /* fentry slots, and as many fexit slots */
#define XK_NTP 8            /* raw tracepoint slots */
#define XK_SLOTS (2 * XK_NSLOTS + XK_NTP)
#define XK_MAX_OPS 4        /* flow operations at one slot */

/* Where an operation's pointer comes from. */
#define XK_ARG_RET 0xfe     /* the function's return value (fexit only) */
#define XK_ARG_NONE 0xff

enum xk_op_kind {
	XK_OP_NONE = 0,
	XK_OP_START = 1,    /* key gets a new id unless it has one */
	XK_OP_END = 2,      /* key's id removed */
	XK_OP_MOVE = 3,     /* from's id registered under to, removed from from */
	XK_OP_COPY = 4,     /* from's id registered under to, kept under from */
	XK_OP_PASS = 5,     /* the flow passes: from's id recorded, kept */
	XK_OP_HAND_OUT = 6, /* keyed handoff, sending side: from's id leaves in
	                     * a record keyed by to's members (part[]) */
	XK_OP_HAND_IN = 7,  /* receiving side: from gets a new id (unless it
	                     * has one), recorded with the key of to's members */
};

#define XK_MAX_DEREF 4      /* loads in one operand's member chain */
#define XK_MAX_KEYS 4       /* members packed into one handoff key */

/* An operand: argument @arg's value, then @n loads, load i reading size[i]
 * bytes (zero-extended) at off[i] from the value so far.  Every load but
 * an integer operand's last reads a pointer (8 bytes).  At most one step
 * on the way takes an element of an array embedded in the struct at hand
 * (q->a[i].m, no load): the index is the low @isize bytes of argument
 * @iarg, and an index >= @nelems is a fault; before load i the value
 * moves by add[i] + index * stride[i], after the last by tadd + index *
 * tstride, all 0 but at the element's step.  Without an element, iarg is
 * XK_ARG_NONE, imask 0 (the index 0) and nelems 1: the same code, no
 * branch more for the verifier to walk.  A fault ends the operation without a record,
 * counted. */
struct xk_path {
	__u8 arg;           /* argument index 0..5, XK_ARG_RET, XK_ARG_NONE */
	__u8 n;             /* 0..XK_MAX_DEREF */
	__u8 size[XK_MAX_DEREF];
	__u16 off[XK_MAX_DEREF];
	__u8 iarg;          /* the index's argument, or XK_ARG_NONE */
	__u8 isize;         /* 1, 2, 4 or 8: the index argument's C type */
	__u32 add[XK_MAX_DEREF];
	__u32 stride[XK_MAX_DEREF];
	__u32 tadd, tstride;
	__u32 nelems;       /* the array's length: the bound of the index */
	__u32 ipad;
	__u64 imask;        /* the index's bits (isize bytes); 0 without one */
};

/* One member of a packed key, read from the request (the op's @to): its
 * low @bits (0: all of it) shifted left by @shift, OR-ed into the key. */
struct xk_keypart {
	__u16 off;
	__u8 size;          /* 1, 2, 4 or 8 */
	__u8 bits;
	__u8 shift;
	__u8 pad[3];
};

struct xk_op {
	__u8 kind;          /* enum xk_op_kind */
	__u8 move;          /* HAND_OUT: drop from's id (xin_move) */
	__u8 nparts;        /* HAND_*: key members, 1..XK_MAX_KEYS */
	__u8 pad;
	__u16 flow;         /* the flow kind: the map's key part and the record's */
	__u16 rec_flags;    /* enum xflow_record_flag of the operation's record */
	__u32 advice;       /* plan advice index: per-advice counters */
	struct xk_path from;  /* the object keyed in the id map */
	struct xk_path to;    /* MOVE/COPY: the destination; HAND_*: the request
	                       * whose members make the key; else arg NONE */
	struct xk_path peer;  /* HAND_IN: the sender's domain id as this
	                       * domain knows it (data[2] = it + 1); arg NONE:
	                       * unknown (data[2] = 0) */
	struct xk_keypart part[XK_MAX_KEYS];
};

/* A slot's site: set before the object is loaded and frozen there (the
 * BPF program's xk_plan), so that the verifier sees each slot's operations
 * as constants and keeps only the code they take. */
struct xk_site {
	__u32 plan_site;    /* the records' site_id */
	__u32 nops;
	struct xk_op ops[XK_MAX_OPS];
};

/* What of a slot runs, the part that changes while its program is
 * attached (the BPF program's xk_on[slot], writable): XK_ON_SLOT when one
 * of its placements is enabled, else the program returns at once and
 * counts nothing; bit i when its operation i runs (its advice is on). */
#define XK_ON_SLOT (1u << 31)

struct xk_key {
	__u64 addr;         /* the object's kernel address */
	__u32 flow;
	__u32 pad;
};

/* Per CPU, per slot (index XK_SLOTS: totals of no slot). */
struct xk_count {
	__u64 hits;         /* program runs */
	__u64 drops;        /* records lost: their stream's ring was full, or
	                     * no stream was free (every level busy) */
	__u64 full;         /* registrations lost: the id map was full */
	__u64 faults;       /* operations skipped: a member chain's read faulted */
};

/* The record version the program writes: XFLOW_RECORD_VERSION (checked in
 * hook_kernel.c; the BPF side cannot include xflow/record.h). */
#define XK_RECORD_VERSION 4

/*
 * Numbering (xflow/record.h, "Losses").  The program numbers its records
 * per CPU and per level of nesting on that CPU (a program run in task
 * context, one in a softirq that interrupts it, one in a hard irq, one in
 * an NMI: XK_SEQ_LEVELS), each such stream in thread_id XK_STREAM(cpu,
 * level) and flagged SEQ_COUNTS_LOST; every record the program counts lost
 * (its ring full, the id map full, a faulting member chain) takes its
 * stream's next number too, as does one the agent cannot pass on.
 *
 * Why per CPU and not per task: the kernel's I/O runs in softirqs and irqs
 * on whatever task they interrupt, so a task is not who writes; a CPU's
 * stream is the densest there is, so the time between the two records
 * around a gap, where the monitor looks for the flows that may own the
 * loss, is the shortest; and the streams are a fixed few, read whole from
 * one array, where a per-task table would fill and forget.
 *
 * A run claims its level's stream (busy, the lowest free) before its
 * first record and lets it go after its last: a stream is written by one
 * run at a time.  A run that finds every level busy (only preempted
 * fentry/fexit runs could leave them so) has no stream: its records are
 * counted in drops, unnumbered.
 *
 * Each stream has a ring of its own (xk_ring: XK_STREAMS_OF(ncpu) rings of
 * xk_ring_recs records, stream s's at s * xk_ring_recs), which the agent
 * maps and reads in place: record number n goes to slot n % xk_ring_recs,
 * and then next becomes n + 1, in that order (the publication).  A
 * number lost by the program takes no slot: the slot keeps an older
 * record (or zeros), whose thread_seq is not n, and the agent passes over
 * it.  So every number below next is final: written or lost, and the
 * agent can tell which.  The agent's tail (the number it reads next) is
 * the ring's other end: a number n >= tail + xk_ring_recs finds the ring
 * full and is lost (counted in drops).  No BPF ring buffer: its reserve
 * and submit (a lock, interrupts saved, two helper calls and their
 * atomics) were a third of a run.
 */
#define XK_SEQ_LEVELS 4
#define XK_STREAM(cpu, level) (0x80000000u | (__u32)(cpu) << 2 | (__u32)(level))
#define XK_STREAMS_OF(ncpu) ((ncpu) * XK_SEQ_LEVELS)
#define XK_REC_SEQ_COUNTS_LOST 0x100 /* XFLOW_REC_SEQ_COUNTS_LOST */

/* A level's producer side, written only by the run holding it. */
struct xk_level {
	__u32 busy;         /* level + 1 while a run holds the level, else 0 */
	__u32 next;         /* the level's next number: all below are final */
	__u32 room;         /* a number below it has a free slot: the tail
	                     * last read + xk_ring_recs (the tail's line is
	                     * the agent's, read only when this is reached) */
	__u32 pad;
	__u64 ids;          /* flow ids the level gave out (XK_FLOW_ID) */
	__u64 pad2;
};

/* Per CPU, one entry of xk_streams (BPF_F_MMAPABLE, mapped by the agent):
 * its streams, on three cache lines, two the CPU's and the agent's. */
struct xk_cpu {
	struct xk_level lv[XK_SEQ_LEVELS];
	__u32 tail[XK_SEQ_LEVELS];  /* the agent's: the number it reads next */
	__u32 pad[12];
};

/* Flow ids (xflow/flowid.h: odd, at most 48 bits) given out by each
 * stream on its own, without an atomic add on a line every CPU shares:
 * the stream's count above its index (@cpu_bits bits of CPU, 2 of level),
 * and the low bit set.  Distinct across streams; one stream's repeat
 * after 2^(45 - cpu_bits) starts. */
#define XK_FLOW_ID(count, cpu, level, cpu_bits)                                        \
	(((((__u64)(count) << ((cpu_bits) + 2) | (__u64)(cpu) << 2 | (level)) << 1) | 1) & \
	 ((1ULL << 48) - 1))

/* A record in its stream's ring: struct xflow_record's layout
 * (xflow/record.h, 88 bytes), checked field by field in hook_kernel.c. */
struct xk_rec {
	__u64 timestamp;    /* CLOCK_MONOTONIC ns (bpf_ktime_get_ns) */
	__u64 flow_id;
	__u32 site_id;
	__u16 flow_kind;
	__u16 domain_id;
	__u16 flags;
	__u8 version;
	__u8 ndata;
	__u32 thread_id;
	__u32 thread_seq;
	__u32 cpu_plus1;  /* bpf_get_smp_processor_id() + 1 */
	__u64 data[6];
};

#endif
