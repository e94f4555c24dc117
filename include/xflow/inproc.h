/*
 * xflow/inproc.h — the memory the agent shares with the runtime it maps
 * into each traced process (the in-process hook backend, guestrt/hook/inproc/hook_inproc.c
 * and guestrt/hook/inproc/rt/).
 *
 * Both sides are built from one tree (the runtime is a blob embedded in
 * xflow-agent), but they are two processes, and the traced one is not
 * trusted: the agent reads what the runtime wrote (records, counters) as
 * hostile input, through xflow/ring.h's consumer and bounded loops.
 *
 * In each target process the agent maps:
 *
 *   runtime image  the blob: code and read-only data (R-X, private), then
 *                  one page of globals (RW, private, wiped on fork).  The
 *                  agent writes struct xflow_rt_config into the code part
 *                  through /proc/PID/mem after mapping it.
 *   text zones     trampolines, within +-2 GiB of the sites they serve
 *                  (R-X, private, written through /proc/PID/mem).
 *   control        the compiled plan: advice programs, sites, bindings,
 *                  fetch recipes, field layouts, enable flags, the flow-id
 *                  counter (memfd, MAP_SHARED: the agent maps it too; a
 *                  forked child shares it with its parent).
 *   process data   the flow-id table and the lanes (memfd, MAP_SHARED,
 *                  MADV_DONTFORK: a forked child gets its own from the
 *                  agent before it runs; until then its globals say it has
 *                  none and its hits do nothing).
 *
 * Addresses stored in these structures are the target's; the agent
 * converts with the difference between its mapping and the target's.
 * Integers are native (both sides are the same machine).
 *
 * Versioning: XFLOW_RT_VERSION changes whenever a layout below changes; the
 * agent refuses a blob of another version (they ship together, so this only
 * catches a broken build).
 */
#ifndef XFLOW_INPROC_H
#define XFLOW_INPROC_H

/* The constants are read by the runtime's assembly too. */
#define XFLOW_RT_MAGIC 0x54524658 /* "XFRT" little-endian */
#define XFLOW_RT_CTL_MAGIC 0x4c435258  /* "XRCL" */
#define XFLOW_RT_PROC_MAGIC 0x52505258 /* "XRPR" */
/* 3: ctl.cpu_how, ctl.cpu_fixed, lane.cpu_plus1; 4: off_syscall is an
 * area of XFLOW_RT_CALL_AREA bytes; 5: XFLOW_RT_CPU_RDPID; 6:
 * XFLOW_RT_JIT_FS0; 7: proc.flows moved to end a line with its geometry. */
#define XFLOW_RT_VERSION 7
/* Bytes at off_syscall where the agent writes each call it injects. */
#define XFLOW_RT_CALL_AREA 128

#ifndef __ASSEMBLER__

#include <stddef.h>
#include <stdint.h>

#include "xflow/bytecode.h"
#include "xflow/flowid.h"
#include "xflow/ring.h"

/* Signals whose handlers the runtime installs, as indexes of
 * xflow_rt_config.old: an int3 fallback site must not kill its process once
 * the agent is gone, nor must a fault-safe read that faulted. */
enum { XFLOW_RT_SIG_TRAP = 0, XFLOW_RT_SIG_SEGV, XFLOW_RT_SIG_BUS, XFLOW_RT_NSIGS };

/* The kernel's struct sigaction on x86-64 (rt_sigaction's layout). */
struct xflow_rt_ksigaction {
	uint64_t handler;
	uint64_t flags;
	uint64_t restorer;
	uint64_t mask;
};

/* Functions of the runtime that advice compiled to machine code calls,
 * with the System V calling convention (guestrt/hook/inproc/rt/rt_jit.c says what each
 * does). */
enum xflow_rt_jit_fn {
	XFLOW_RT_JIT_BEGIN = 0, /* struct xflow_rt_lane *(void) */
	XFLOW_RT_JIT_ROOM,      /* int (lane): room for a record, else one more drop */
	XFLOW_RT_JIT_NEW_ID,    /* uint64_t (lane) */
	XFLOW_RT_JIT_FLOW_GET,  /* uint64_t (lane, kind, key) */
	XFLOW_RT_JIT_FLOW_REG,  /* uint64_t (lane, kind, key, id): id, or 0 if refused */
	XFLOW_RT_JIT_FLOW_DEL,  /* uint64_t (lane, kind, key): the id it had, or 0 */
	XFLOW_RT_JIT_LOCK,      /* void (lane): the flow-id table's lock */
	XFLOW_RT_JIT_UNLOCK,    /* void (lane) */
	XFLOW_RT_JIT_READ,      /* int (addr, uint64_t *out, len, uint64_t *scratch) */
	XFLOW_RT_JIT_WRITE,     /* int (addr, const uint64_t *in, len, uint64_t *scratch) */
	XFLOW_RT_JIT_FLOW_PEEK, /* uint64_t (lane, kind, key): FLOW_GET without the lock */
	XFLOW_RT_JIT_FS0,       /* uint64_t (void): the word at %fs:0, fault-safe
	                         * (rt_safe_fs0); clobbers rax only */
	XFLOW_RT_JIT_NFN
};

/*
 * The head of the runtime image, at its offset 0.  Offsets are from the
 * image's start; the linker computes them (guestrt/hook/inproc/rt/rt.lds).
 */
struct xflow_rt_head {
	uint32_t magic;          /* XFLOW_RT_MAGIC */
	uint32_t version;        /* XFLOW_RT_VERSION */
	uint32_t code_size;      /* bytes mapped R-X, a page multiple */
	uint32_t data_size;      /* bytes of globals mapped RW after them */
	uint32_t off_hit;        /* void rt_hit(uint64_t *frame, const struct xflow_rt_hook *) */
	uint32_t off_config;     /* struct xflow_rt_config */
	uint32_t off_globals;    /* struct xflow_rt_globals (in the data part) */
	uint32_t off_safe_begin; /* fault-safe accesses: a fault with rip in */
	uint32_t off_safe_end;   /*   [begin, end) resumes at safe_fault */
	uint32_t off_safe_fault;
	uint32_t off_on_signal;  /* the SA_SIGINFO handler of the signals above */
	uint32_t off_restorer;   /* rt_sigreturn, the handlers' sa_restorer */
	uint32_t off_syscall;    /* XFLOW_RT_CALL_AREA bytes: the agent's injected calls */
	uint32_t off_zone_stub;  /* the template of every text zone's stub, whose */
	uint32_t zone_stub_size; /*   last 8 bytes the agent sets to rt_hit's address */
	uint32_t off_name;       /* a NUL-terminated name for the runtime's memfds */
	uint32_t off_jit[XFLOW_RT_JIT_NFN]; /* what compiled advice calls (rt_jit.c) */
};

/* Written by the agent into the code part (read-only for the target, and
 * inherited by a forked child as it is). */
struct xflow_rt_config {
	uint64_t ctl;            /* the control region */
	uint64_t traps;          /* struct xflow_rt_traps in a text zone, 0: none */
	uint32_t fs_mode;        /* enum xflow_rt_fs_mode: how a thread is told apart */
	uint32_t installed;      /* bit per XFLOW_RT_SIG_*: our handler was installed */
	struct xflow_rt_ksigaction old[XFLOW_RT_NSIGS]; /* the handlers ours replaced */
};

enum xflow_rt_fs_mode {
	XFLOW_RT_FS_RDFSBASE = 1, /* rdfsbase (FSGSBASE enabled by the kernel) */
	XFLOW_RT_FS_TCB = 2,      /* mov %fs:0: the TCB's self pointer (x86-64 TLS ABI) */
};

/* Private to each process, zero in a child until the agent sets it. */
struct xflow_rt_globals {
	uint64_t proc;           /* this process's data region, 0: none yet */
	uint64_t nodata;         /* hits that found no data region (approximate) */
	uint8_t args[256];       /* the agent's arguments to its injected calls */
};

/*
 * A trampoline's hook: one call into the runtime at one address and
 * placement, for the plan sites listed (several plan sites may share an
 * instruction).  Written once into a text zone, never changed.
 */
struct xflow_rt_hook {
	uint64_t addr;           /* the site's instruction ($pc$, DWARF's rip) */
	uint32_t when;           /* enum xflow_plan_when */
	uint32_t nsites;
	uint32_t site[];         /* plan site indexes */
};

/* One advice, as the runtime runs it. */
struct xflow_rt_advice {
	struct xflow_bc_prog prog;   /* pointers into the control region */
	uint16_t marker_flags;       /* record flags of an xflow operation, 0 for user advice */
	uint8_t uses_flows;          /* 1: changes the flow-id table, runs under its
	                              * lock; 2: only looks ids up, runs without
	                              * it (compiled: rt_jit_flow_peek) */
	uint8_t pad;
	uint32_t counter;            /* its counters in each lane (advice index, capped) */
};

/* A plan site's bindings. */
struct xflow_rt_site {
	uint32_t first_binding;
	uint32_t nbindings;
	uint32_t binary;             /* base[binary] for STATIC fetches */
	uint32_t pad;
};

struct xflow_rt_binding {
	uint32_t advice;
	uint32_t first_fetch;        /* input i: fetches[first_fetch + i] */
	uint8_t when;
	uint8_t ninputs;
	uint16_t pad;
};

struct xflow_rt_fetch {
	uint8_t kind;                /* enum xflow_plan_fetch_kind */
	uint8_t reg;                 /* DWARF register number, 0..16 */
	uint8_t index;
	uint8_t scale;
	uint8_t local;               /* the input is a local_var(): pass an address */
	uint8_t pad[3];
	int64_t off;
};

/* An int3 fallback site: where a trap there resumes.  The table is written
 * into a text zone of each process, so that it names that process's
 * trampolines, and swapped whole (rt_config.traps).
 *
 * Every byte of the instruction is an int3, and a trap at any of them
 * resumes at the trampoline: a thread stopped at the first one when its
 * tracer dies is let go at the next byte with the signal lost, traps
 * again there, and must still run the advice and the instruction once. */
struct xflow_rt_trap {
	uint64_t addr;
	uint64_t resume;             /* the trampoline's entry */
	uint64_t len;                /* bytes of the instruction */
};

struct xflow_rt_traps {
	uint32_t n;
	uint32_t pad;
	struct xflow_rt_trap v[];    /* sorted by addr */
};

/*
 * The control region.  Tables are at offsets from its start, aligned to 8.
 * Everything but enabled[] and next_id is written before the first site is
 * patched and never changed; a new plan gets a new region.
 */
struct xflow_rt_ctl {
	uint32_t magic;              /* XFLOW_RT_CTL_MAGIC */
	uint32_t version;
	uint64_t size;
	uint16_t domain_id;
	uint16_t clock;              /* enum xflow_clock_kind (always TSC today) */
	uint32_t nadvice, nsites, nbindings, nfetches, nfields, nbases;
	uint64_t off_advice;         /* struct xflow_rt_advice[nadvice] */
	uint64_t off_enabled;        /* uint8_t[nadvice]: the agent's toggles */
	uint64_t off_sites;          /* struct xflow_rt_site[nsites] */
	uint64_t off_bindings;       /* struct xflow_rt_binding[nbindings] */
	uint64_t off_fetches;        /* struct xflow_rt_fetch[nfetches] */
	uint64_t off_fields;         /* struct xflow_field_rt[nfields] (guestrt/interp/interp.h) */
	uint64_t off_bases;          /* uint64_t[nbases]: load base of each plan binary */
	uint32_t cpu_how;            /* enum xflow_rt_cpu_how: how a hit learns its CPU */
	uint32_t cpu_fixed;          /* XFLOW_RT_CPU_FIXED: the CPU every record names */
	uint8_t pad0[56];
	_Atomic uint64_t next_id;    /* flow ids: lanes take blocks of XFLOW_RT_ID_BLOCK */
	uint8_t pad1[56];
};

/* How the runtime learns on which CPU a hit runs (the records' cpu_plus1,
 * xflow/record.h), without a system call. */
enum xflow_rt_cpu_how {
	XFLOW_RT_CPU_NONE = 0,  /* not known: records say 0 */
	XFLOW_RT_CPU_RDTSCP,    /* the hit's time by RDTSCP, whose TSC_AUX Linux sets
	                         * to node << 12 | cpu (the agent checked CPUID) */
	XFLOW_RT_CPU_FIXED,     /* cpu_fixed: a simulated domain's one vCPU */
	XFLOW_RT_CPU_RDPID,     /* the time by RDTSC, the CPU by RDPID (the same
	                         * TSC_AUX), a third of RDTSCP's extra cost */
};

#define XFLOW_RT_ID_BLOCK 1024u
/* Advice counters per lane: advice past the last share it. */
#define XFLOW_RT_NCOUNTERS 256u

/*
 * One thread's lane: its records and counters.  A lane belongs to the
 * thread whose fs base is `owner` (set by that thread, once); the agent
 * only consumes its ring, reads its counters and, when the thread that
 * named it exits, sets `stale` so that a new thread with the same fs base
 * (the C library reuses a dead thread's block) fetches its own tid.
 */
struct xflow_rt_lane {
	_Atomic uint64_t owner;      /* fs base of the owning thread; 0: free */
	_Atomic uint32_t tid;
	_Atomic uint32_t stale;
	uint32_t seq;                /* the next thread_seq: every record takes
	                              * one, a record the full ring drops too
	                              * (XFLOW_REC_SEQ_COUNTS_LOST) */
	uint32_t ready;              /* prod is initialised */
	uint64_t id_next, id_end;    /* its block of flow ids */
	uint32_t busy;               /* a hit is running on this thread */
	uint32_t cpu_plus1;          /* the running hit's CPU + 1 (0: unknown) */
	uint64_t nested;             /* hits skipped because one was running (a
	                              * signal handler hitting a site) */
	uint64_t now;                /* the running hit's time */
	uint64_t proc;               /* its process's data region */
	struct xflow_ring_producer prod; /* the owner's producer state (target addresses) */
	/* then: uint64_t counters[XFLOW_RT_NCNT][XFLOW_RT_NCOUNTERS], and the
	 * ring (header and slots) at ring_off from the lane's start. */
};

/* The owner of a lane whose thread exited and whose fs base no live thread
 * has (set by the agent while every thread is stopped). */
#define XFLOW_RT_LANE_GONE UINT64_C(1)

enum { XFLOW_RT_CNT_HITS = 0, XFLOW_RT_CNT_FAULTS, XFLOW_RT_CNT_DROPS, XFLOW_RT_NCNT };

/*
 * A process's data region.  lanes at off_lanes, lane_size bytes apart; the
 * flow-id table's slots at off_slots.
 */
struct xflow_rt_proc {
	uint32_t magic;              /* XFLOW_RT_PROC_MAGIC */
	uint32_t version;
	uint64_t size;
	uint32_t nlanes;             /* a power of two */
	uint32_t lane_slots;         /* records a lane's ring holds */
	uint64_t lane_size;          /* bytes per lane */
	uint64_t ring_off;           /* a lane's ring, from the lane's start */
	uint64_t off_lanes;
	uint64_t off_slots;
	uint32_t lock_spins;         /* spins before the flow lock yields the CPU */
	uint8_t pad0[12];
	_Atomic uint32_t flow_lock;  /* its own line: odd while held, and one more at
	                              * each release, so that a lookup without the
	                              * lock sees whether a change overlapped it */
	uint8_t pad1[84];
	struct xflow_flowtab flows;  /* slots at a target address.  Placed so
	                              * that its geometry (slots, mask, shift,
	                              * capacity), which every lookup reads, ends
	                              * a line, and the counts every change writes
	                              * (live, last_id) start the next: on one line
	                              * each change made every other thread's next
	                              * lookup miss (issue 27) */
	_Atomic uint64_t nolane;     /* hits of threads that found no lane */
	_Atomic uint64_t lock_waits; /* times the flow lock yielded the CPU */
	uint8_t pad2[64];
};

/* The region is mapped at a page: offsets are its lines. */
_Static_assert(offsetof(struct xflow_rt_proc, flows.slots) / 64 ==
		       offsetof(struct xflow_rt_proc, flows.capacity) / 64 &&
	       offsetof(struct xflow_rt_proc, flows.live) % 64 == 0 &&
	       offsetof(struct xflow_rt_proc, flows) / 64 != offsetof(struct xflow_rt_proc, flow_lock) / 64,
	       "the flow table's geometry shares a line with what changes");

#endif /* __ASSEMBLER__ */
#endif
