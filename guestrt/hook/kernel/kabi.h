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
	__u64 records;      /* records reserved in the ring buffer */
	__u64 drops;        /* records lost: the ring buffer was full */
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
 * (the ring buffer full, the id map full, a faulting member chain) takes
 * its stream's next number too, as does one the agent cannot pass on.
 *
 * Why per CPU and not per task: the kernel's I/O runs in softirqs and irqs
 * on whatever task they interrupt, so a task is not who writes; a CPU's
 * stream is the densest there is, so the time between the two records
 * around a gap, where the monitor looks for the flows that may own the
 * loss, is the shortest; and the streams are a fixed few, read whole from
 * one per-CPU array, where a per-task table would fill and forget.
 *
 * A run claims its level's stream (compare-and-swap on busy[level], the
 * lowest free) before its first record and lets it go after its last: a
 * stream is written by one run at a time, so its numbers are in the ring
 * buffer's order, which the agent and the monitor keep.  A run that finds
 * every level busy (only a preempted program could leave them so) writes
 * its records unnumbered and unflagged, thread_id its task's.
 *
 * The streams number from 0 at the program's load, and busy covers a run
 * from before its first number to after its last ring buffer commit: the
 * agent reads both to tell what was lost after a stream's last record
 * from what is still on its way (kn_tail.h, loss notes).
 */
#define XK_SEQ_LEVELS 4
#define XK_STREAM(cpu, level) (0x80000000u | (__u32)(cpu) << 2 | (__u32)(level))
#define XK_REC_SEQ_COUNTS_LOST 0x100 /* XFLOW_REC_SEQ_COUNTS_LOST */

/* Per CPU, one entry: its streams. */
struct xk_seq {
	__u32 busy[XK_SEQ_LEVELS];  /* 1 while a run holds the level */
	__u32 next[XK_SEQ_LEVELS];  /* the level's next number */
};

/* The record as the ring buffer carries it: struct xflow_record's layout
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
