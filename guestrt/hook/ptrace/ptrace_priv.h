/*
 * State of the ptrace hook backend, shared by its files.
 */
#ifndef XFLOW_GUESTRT_HOOK_PTRACE_PTRACE_PRIV_H
#define XFLOW_GUESTRT_HOOK_PTRACE_PTRACE_PRIV_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "guestrt/hook/hook_priv.h"

/* Scratch slots: the moved instruction (up to 15 bytes), one byte that is
 * int3 while AFTER sites want control back (else nop), and an absolute jump
 * back (jmp [rip+0]; .quad next), so a slot works at any distance from its
 * site; only rip-relative operands need the page within +-2 GiB. */
#define PT_SLOT_SIZE 32
#define PT_SCRATCH_SIZE 4096
#define PT_SCRATCH_SLOTS (PT_SCRATCH_SIZE / PT_SLOT_SIZE)
/* The first slots of each scratch page are where injected system calls
 * run from (ooline.c): this many bytes. */
#define PT_CALL_LEN 128

struct pt_bp {
	uint64_t addr;
	struct xflow_insn insn;
	uint64_t slot;   /* OOL: address of the slot, 0 otherwise */
	bool installed;  /* int3 is in the text now */
	bool after_trap; /* the slot's trap byte is int3 now */
	int nbefore;     /* enabled sites, by when */
	int nafter;
	uint32_t *sites; /* ids of the sites at this address */
	int nsites, capsites;
};

struct pt_site {
	uint32_t id;
	struct pt_bp *bp; /* NULL once removed */
	enum xflow_hook_when when;
	xflow_hook_handler_fn fn;
	void *data;
	bool enabled;
	uint64_t hits;
};

struct pt_scratch {
	uint64_t base;
	unsigned used;
	struct pt_bp *owner[PT_SCRATCH_SLOTS]; /* the bp of each slot in use */
};

enum pt_thr_state { PT_RUNNING = 0, PT_STOPPED };

struct pt_thread {
	pid_t tid;
	struct pt_target *t;
	enum pt_thr_state state;
	bool held;        /* stopped on purpose (in a handler, held at exec) */
	bool pending_hit; /* stopped at a SIGTRAP not yet served */
	bool group_stop;  /* in a job-control stop: resume with LISTEN */
	bool queued;      /* on the engine's resume queue */
	bool want;        /* stop_world waits for it */
	bool checked;     /* stop_world looked for a queued trap */
	bool in_vfork;    /* parent blocked until its vfork child execs or exits */
	bool dying;       /* held, then not detachable: killed, its end to collect */
	int resume_sig;   /* signal to deliver when resumed (ptrace_signals.c) */
	bool resume_info_ok;
	siginfo_t resume_info; /* its siginfo, to queue it again */
	uint64_t more_sigs;    /* further signals held meanwhile, bit sig - 1 */
};

struct pt_engine;
struct pt_target;

/*
 * What a backend built on this one adds (the in-process backend: jump
 * sites, a runtime in the target).  The ptrace layer calls these at the
 * points of a target's life where that backend has work; NULL means
 * nothing to do.  Every call is on the engine's thread.
 */
struct pt_ext {
	size_t target_size; /* a target's bytes, at least sizeof(struct pt_target) */
	/* child was forked (INHERIT or DETACH) from parent, or vforked (it
	 * shares parent's memory); its one thread is not stopped yet. */
	void (*fork)(struct pt_target *parent, struct pt_target *child, bool vfork);
	/* t ran exec: everything of the old image is gone. */
	void (*exec)(struct pt_target *t);
	/* th exited (the target may live on). */
	void (*thread_exit)(struct pt_thread *th);
	/* A SIGTRAP that no breakpoint of this layer claims: true when the
	 * extension served it (and resumed the thread with pt_thread_cont). */
	bool (*trap)(struct pt_thread *th, struct xflow_hook_regs *r);
	/* th stopped with signal sig: true when the extension consumed it
	 * (the program never sees it). */
	bool (*signal)(struct pt_thread *th, int sig);
	/* At each turn of the run loop, before it waits: deferred work. */
	void (*tick)(struct pt_engine *e);
	/* Detaching t, every thread stopped, this layer's bytes restored:
	 * restore the extension's, unmap what it mapped.  0 or -errno. */
	int (*detach)(struct pt_target *t);
	/* Where a thread stopped at rip must go when let go (0: stays),
	 * *ours when its pending trap was the extension's. */
	uint64_t (*fix_rip)(struct pt_target *mm, struct pt_thread *th, uint64_t rip, bool *ours);
	/* The crash path: put the original bytes back with system calls only. */
	void (*emergency)(struct pt_target *t);
	/* Replace the extension's bytes in buf (target memory at addr). */
	void (*shadow)(struct pt_target *mm, uint64_t addr, void *buf, size_t len);
	/* t is being freed. */
	void (*target_free)(struct pt_target *t);
};

struct pt_target {
	struct xflow_hook_target pub;
	struct pt_engine *e;
	struct xflow_tmem mem;
	struct pt_thread **threads;
	int nthreads, capthreads;
	/* Breakpoints sorted by address; never freed before the target, so that
	 * a late trap or a thread in a slot always finds its record. */
	struct pt_bp **bps;
	int nbps, capbps;
	struct pt_site *sites;
	uint32_t nsites, capsites;
	struct pt_scratch *scr;
	int nscr, capscr;
	struct pt_target *mm_owner; /* vfork child: the target whose memory it shares */
	bool quiet;                 /* hits run no handler (vfork child under DETACH) */
	bool detach_when_stopped;   /* fork child under DETACH */
	bool detach_at_exec;        /* vfork child under DETACH */
	bool dead;                  /* exited: freed at the next safe point */
	bool detached;
	bool silent;                /* no DETACHED event (the caller never saw it) */
	bool hold;                  /* spawned: held at its exec until run() */
	int exit_status;
	unsigned gen; /* bumped at exec */
};

struct pt_engine {
	struct xflow_hook pub;
	const struct pt_ext *ext; /* NULL for the plain ptrace backend */
	struct pt_target **targets;
	int ntargets, captargets;
	struct pt_thread **tids; /* open addressing by tid */
	unsigned tidcap, ntids;
	struct {
		pid_t tid;
		int status;
	} *unknown; /* stops of tids not yet announced by their clone/fork event */
	int nunknown, capunknown;
	pid_t *resumeq;
	int nresumeq, capresumeq;
	/* Threads let go while blocked in vfork (not stoppable, so not yet
	 * detachable): detached at their next stop. */
	pid_t *linger;
	int nlinger, caplinger;
	int depth; /* nesting of handler calls (a handler may call the API) */
	/* The registers as the last trap left them: when a hit ends with the
	 * same ones (a one-byte nop emulated, nothing changed by a handler),
	 * SETREGS is skipped. */
	struct xflow_hook_regs trapped;
	struct xflow_hook_event *evq; /* delivered at safe points */
	int nevq, capevq;
};

/* ptrace_threads.c */
struct pt_thread *pt_thr_find(struct pt_engine *e, pid_t tid);
void pt_tid_remove(struct pt_engine *e, struct pt_thread *th);
int pt_grow(void **arr, int *cap, int need, size_t elem);
struct pt_thread *pt_thread_add(struct pt_target *t, pid_t tid, enum pt_thr_state st);
void pt_thread_del(struct pt_thread *th);
void pt_thread_exit(struct pt_thread *th, int status);
void pt_unknown_add(struct pt_engine *e, pid_t tid, int status);
void pt_queue_resume(struct pt_engine *e, struct pt_thread *th);
/* Record what the stop (a waitpid status) of th needs; th is STOPPED. */
void pt_note_stop(struct pt_engine *e, struct pt_thread *th, int status);
/* Stop every thread of t (none left with an unreported breakpoint trap);
 * -ESRCH when t died meanwhile.  Stops of other threads are queued. */
int pt_stop_world(struct pt_target *t);
void pt_resume_world(struct pt_target *t);
void pt_resume_thread(struct pt_thread *th);
/* A breakpoint trap is queued for tid but not reported yet. */
bool pt_trap_pending(pid_t tid);

/* ptrace_signals.c: th's own signals, never lost.  Hold one it stopped
 * with; on a restarting request, pass the one to give the request (0 if th
 * is not in that signal's delivery stop, where the kernel would drop it:
 * then it is queued again); release all (queued again) before moving th on
 * without them. */
void pt_hold_signal(struct pt_thread *th, int sig);
int pt_pass_signal(struct pt_thread *th);
void pt_release_signals(struct pt_thread *th);

/* ptrace_attach.c */
#define PT_OPTIONS                                                                               \
	(PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC |         \
	 PTRACE_O_TRACESYSGOOD)
struct pt_target *pt_target_new(struct pt_engine *e, pid_t pid);
void pt_target_free(struct pt_target *t);
/* Bookkeeping of a ptrace event stop (clone, fork, vfork, exec). */
void pt_note_event(struct pt_engine *e, struct pt_thread *th, int ev);
/* Put every thread back at a correct instruction, restore every byte
 * (unless the memory is a vfork parent's), let go.  internal: no check that
 * the memory is shared. */
int pt_detach_target(struct pt_target *t, bool internal);
void pt_emit(struct pt_target *t, const struct xflow_hook_event *ev);
/* The crash path (struct xflow_hook.emergency). */
void pt_emergency(struct xflow_hook *h);
/* Deliver queued events, free targets that are gone. */
void pt_flush(struct pt_engine *e);
static inline struct pt_target *pt_mm(struct pt_target *t)
{
	return t->mm_owner ? t->mm_owner : t;
}

/* hook_ptrace.c */
/* An engine of @size bytes (a backend that extends this one embeds struct
 * pt_engine first) with extension @ext (NULL: none). */
int pt_engine_new(const struct xflow_hook_config *cfg, size_t size, const struct pt_ext *ext,
		  struct pt_engine **out);
void pt_free(struct xflow_hook *h);
/* Everything pt_free does but freeing e itself. */
void pt_engine_fini(struct pt_engine *e);
int pt_run(struct xflow_hook *h, int timeout_ms);
int pt_control_fd(struct xflow_hook *h, int fd);
int pt_mem_read(struct xflow_hook_target *pub, uint64_t addr, void *buf, size_t len);
int pt_mem_write(struct xflow_hook_target *pub, uint64_t addr, const void *buf, size_t len);
int pt_attach(struct xflow_hook *h, pid_t pid, struct xflow_hook_target **out);
int pt_spawn(struct xflow_hook *h, char *const argv[], struct xflow_hook_target **out);
int pt_detach(struct xflow_hook_target *t);
/* Resume a stopped thread with registers r (NULL: as they are) and signal
 * sig. */
void pt_thread_cont(struct pt_thread *th, struct xflow_hook_regs *r, int sig);
void pt_serve_trap(struct pt_thread *th);
struct pt_bp *pt_bp_find(struct pt_target *mm, uint64_t addr);
/* The bp whose slot holds addr, or NULL. */
struct pt_bp *pt_slot_bp(struct pt_target *mm, uint64_t addr);
/* Write int3 / the trap byte of the slot as the enabled sites want. */
int pt_bp_sync(struct pt_target *t, struct pt_bp *bp);

#endif
