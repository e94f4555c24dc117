/*
 * State of the in-process hook backend (hook_inproc.c), shared by its
 * files: the runtime in each target (inproc_inject.c), the compiled plan
 * (inproc_prog.c), sites and patches (inproc_patch.c) and trampolines
 * (inproc_tramp.c).
 *
 * The backend is built on the ptrace layer (ptrace_priv.h): targets are
 * held under ptrace for what only a tracer can do (map the runtime in,
 * follow forks, execs and threads, mend a fault-safe access that faulted,
 * serve the few sites a jump cannot take), but a hit at a jump site never
 * stops anything.
 */
#ifndef XFLOW_GUESTRT_HOOK_INPROC_INPROC_PRIV_H
#define XFLOW_GUESTRT_HOOK_INPROC_INPROC_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include "guestrt/hook/inproc/inproc_tail.h"
#include "guestrt/hook/ptrace/ptrace_priv.h"
#include "xflow/inproc.h"

/* Instructions one patch covers at most (5 bytes need 5; two patches
 * merged, more). */
#define IP_PATCH_MAX_INSNS 8
#define IP_ZONE_SIZE (256u << 10)
/* How far from its site a zone may be: a rel32 jump's reach, with room
 * for the zone's own size. */
#define IP_ZONE_REACH ((1ull << 31) - 2 * IP_ZONE_SIZE)

/* Our side of one lane: its ring's consumer, and its numbers as far as we
 * kept its records (for the loss notes, inproc_tail.h). */
struct ip_lane {
	struct xflow_ring_consumer ring;
	struct ip_tail tail;
	struct xflow_rt_lane *rt;    /* the lane in our mapping, placed when we
				      * formatted it (the region's own geometry
				      * is the target's to scribble on) */
};

/* A memfd region of the target that this process maps too. */
struct ip_region {
	uint64_t addr;  /* in the target */
	void *map;      /* ours */
	size_t size;
};

/* The compiled plan of one program load, shared by a target and the
 * children it forks (they map the same memfd). */
struct ip_ctl {
	struct ip_region r;
	int refs;
	uint32_t nadvice;
	uint32_t nsites; /* plan sites */
};

/* Trampoline memory near code, in one target's address space. */
struct ip_zone {
	uint64_t base;
	uint32_t used;
	uint64_t stub;  /* the zone stub's address (every hook call lands there) */
};

enum ip_patch_kind { IP_JUMP = 1, IP_TRAP = 2 };

/* Bytes replaced at one place: a 5-byte jump over whole instructions, or
 * an int3 on one.  Its trampoline runs those instructions with the hooks
 * of the sites placed at them. */
struct ip_patch {
	uint64_t addr;
	uint8_t len;                 /* bytes covered */
	uint8_t kind;                /* enum ip_patch_kind */
	uint8_t ninsns;
	bool installed;              /* our bytes are in the text */
	uint8_t orig[32];            /* the bytes replaced */
	uint8_t guard;               /* bytes from addr we write (jump, int3s);
				      * 0: all of len.  A patch that took in
				      * the one before it keeps the original
				      * bytes past that one's end: its old
				      * trampoline returns there. */
	struct xflow_insn insn[IP_PATCH_MAX_INSNS];
	uint64_t entry;              /* the current trampoline's entry */
	char why[160];               /* IP_TRAP: why not a jump */
};

/* A placement: the hook API's site. */
struct ip_site {
	uint64_t addr;
	uint32_t psite;              /* plan site */
	uint8_t when;
	bool live;                   /* not removed */
	bool enabled;
	enum xflow_hook_mech mech;
	char why[160];               /* why a trap rather than a jump */
};

struct ip_target {
	struct pt_target pt;         /* first: the ptrace layer's target */
	uint64_t image;              /* the runtime image, 0: not injected */
	uint32_t fs_mode;            /* rt_config.fs_mode written there (a forked
				      * child's copy of the image has its parent's) */
	struct ip_ctl *ctl;          /* the program, NULL: none loaded */
	struct ip_region proc;       /* this process's data region */
	bool need_setup;             /* a forked child, its data region to make */
	struct ip_lane *lanes;       /* one per lane of proc */
	uint32_t nlanes;
	uint32_t drain_from;         /* the lane a drain cut short stopped at */
	uint64_t records;            /* moved out of its lanes */
	uint64_t bad;
	struct ip_zone *zones;
	int nzones, capzones;
	struct ip_patch **patches;   /* sorted by addr */
	int npatches, cappatches;
	struct ip_site *sites;       /* ids are index + 1 */
	uint32_t nsites, capsites;
	uint64_t traps;              /* the trap table written last, 0: none */
};

/* A process's data region kept after the process (or its image) went, for
 * a last drain and its counters. */
struct ip_gone {
	struct ip_region proc;
	struct ip_lane *lanes;
	uint32_t nlanes;
	bool running;                /* the runtime was left mapped with a thread
				      * maybe inside: a hit may still end */
};

struct ip_engine {
	struct pt_engine pt;         /* first: the ptrace layer's engine */
	struct xflow_rt_head head;   /* of the embedded image */
	const uint8_t *blob;
	size_t blob_size;
	uint32_t fs_mode;            /* enum xflow_rt_fs_mode */
	/* Binaries whose code was mapped (code_map.c), by path. */
	struct { char *path; struct xflow_code_map *map; } *maps;
	int nmaps, capmaps;
	/* Data regions of processes gone, drained once more; then their
	 * counters are folded into acc (per advice of the current program). */
	struct ip_gone *gone;
	int ngone, capgone;
	struct xflow_hook_advice_stats *acc;
	uint32_t nacc;
	struct xflow_hook_prog_stats acc_all;
	uint64_t records;
	/* The options of the last program loaded, for forked children. */
	uint16_t domain_id;
	uint32_t lanes, lane_slots, flowtab_capacity;
	bool interpret;              /* the runtime's interpreter, not compiled code */
};

#define IP_TARGET(t) xflow_container_of(t, struct ip_target, pt)
#define IP_ENGINE(e) xflow_container_of(e, struct ip_engine, pt)

static inline struct ip_target *ip_mm(struct ip_target *t)
{
	return IP_TARGET(pt_mm(&t->pt));
}

/* inproc_inject.c: the runtime in a target (world stopped) */
int ip_inject(struct ip_target *t);
int ip_proc_new(struct ip_target *t);
int ip_ctl_new(struct ip_target *t, size_t size, struct ip_ctl **out);
void ip_ctl_put(struct ip_target *t, struct ip_ctl *c);
int ip_zone_for(struct ip_target *t, uint64_t near, uint32_t size, struct ip_zone **out);
/* Run a system call in t. */
int ip_syscall(struct ip_target *t, long nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
	       uint64_t a5, int64_t *ret);
int ip_poke(struct ip_target *t, uint64_t addr, const void *buf, size_t len);
int ip_config_set(struct ip_target *t, size_t off, const void *v, size_t len);
/* Take the runtime out: signal handlers back, regions unmapped. */
int ip_eject(struct ip_target *t);
/* Forget t's regions in this process: the data region goes to the engine's
 * gone list, for a last drain. */
void ip_release(struct ip_target *t);
void ip_gone_free(struct ip_gone *g);
/* Whether a thread may be inside [addr, addr + len) or return into it. */
bool ip_busy(struct ip_target *t, const uint64_t *addr, const uint64_t *len, int n, char *why, size_t whylen);

/* inproc_prog.c: the compiled plan */
size_t ip_ctl_size(const struct xflow_hook_prog *p);
void ip_ctl_fill(void *map, uint64_t addr, size_t size, const struct xflow_hook_prog *p);
size_t ip_proc_size(uint32_t lanes, uint32_t lane_slots, uint32_t capacity, uint64_t *ring_off, uint64_t *lane_size,
		    uint64_t *off_slots, uint64_t *off_lanes, uint32_t *nslots_bits);
int ip_proc_format(struct ip_target *t, uint32_t lanes, uint32_t lane_slots, uint32_t capacity);
void ip_proc_reset(struct ip_target *t);

/* inproc_jit.c: advice compiled to machine code */
struct ip_jit_env {
	const struct xflow_rt_ctl *ctl; /* our view of the control region */
	uint64_t ctl_addr;              /* the target's */
	uint64_t image;                 /* the runtime image in the target */
	const struct xflow_rt_head *head;
	uint32_t fs_mode;               /* the image's rt_config.fs_mode, which never
	                                 * changes once the image is in */
};
/* The function for the hook at (addr, when) with plan sites @sites, for
 * address @at: its length in @out, or -ENOSPC (max too small), -EINVAL
 * (a program the compiler refuses: the interpreter runs it). */
int ip_jit_hook(const struct ip_jit_env *env, uint64_t addr, unsigned when, const uint32_t *sites, uint32_t n,
		uint64_t at, uint8_t *out, size_t max);

/* inproc_tramp.c */
struct ip_hooks {
	uint64_t before[IP_PATCH_MAX_INSNS]; /* per instruction: what to call, 0: none */
	uint64_t after[IP_PATCH_MAX_INSNS];
	uint8_t jit_before[IP_PATCH_MAX_INSNS]; /* 1: compiled code, called directly; */
	uint8_t jit_after[IP_PATCH_MAX_INSNS];  /* 0: a hook descriptor for the zone stub */
};
/* Bytes of the trampoline of p with hooks h, for a zone at @at whose stub
 * is @stub; *entry its entry.  Returns the length, or -ERANGE when an
 * operand cannot be reached from there, -ENOSPC when max is too small. */
int ip_tramp_build(const struct ip_patch *p, const struct ip_hooks *h, uint64_t at, uint64_t stub, uint8_t *out,
		   size_t max, uint64_t *entry);
int ip_hook_desc(uint64_t addr, uint32_t when, const uint32_t *sites, uint32_t n, uint8_t *out, size_t max);

/* inproc_patch.c */
int ip_site_place(struct ip_target *t, struct ip_site *s);
int ip_patch_rebuild(struct ip_target *t, struct ip_patch *p);
int ip_patch_unplace(struct ip_target *t, uint64_t addr);
struct ip_patch *ip_patch_at(struct ip_target *t, uint64_t addr);
void ip_patches_restore(struct ip_target *t, bool emergency);
int ip_traps_write(struct ip_target *t);
void ip_shadow(struct ip_target *t, uint64_t addr, void *buf, size_t len);

/* hook_inproc.c */
struct xflow_code_map *ip_code_map(struct ip_engine *e, struct ip_target *t, uint64_t addr, uint64_t *bias,
				   char *why, size_t whylen);

#endif
