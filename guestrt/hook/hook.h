/*
 * Hook engines of the guest runtime: put a probe at an instruction of a
 * running program, run a handler at each hit, never damage the program.
 *
 * One table of operations, struct xflow_hook_backend_ops, is implemented by
 * each backend: ptrace breakpoints with the handlers in the agent's user space
 * (xflow_hook_ptrace_ops, the Xenprobes design applied to processes), and
 * in-process hot patching (xflow_hook_inproc_ops): a jump at each site to a
 * trampoline that runs the advice inside the target, with a breakpoint for
 * the sites a jump cannot take.  The second runs no handler of the caller's:
 * it runs compiled advice, loaded with the in-target operations at the end
 * of this header.  Nothing in this header is specific to ptrace: a backend
 * embeds struct xflow_hook as the first member of its engine and reaches
 * its own state back with container_of.
 *
 * Threading: an engine belongs to the thread that created it.  Every call
 * except xflow_hook_stop() is made from that thread (ptrace ties a tracee to
 * the tracing thread, and the in-process backends want the same discipline).
 * Handlers run on that thread, from inside xflow_hook_run().
 *
 * Children: the ptrace backend waits for any child of its thread (it must
 * see every traced thread, which it cannot name in advance), so a program
 * using it should not start other children from that thread and wait for
 * them itself: their exit statuses would be taken.
 *
 * Live changes: site_add, site_enable and site_remove stop every thread of
 * the target, patch, and let them go on; a thread that had just hit a site
 * while they were being stopped is served at the next xflow_hook_run().
 *
 * Errors: 0 or a negative errno.  When a call fails for a reason worth more
 * than an errno (an instruction that cannot be relocated, an address that is
 * not mapped), xflow_hook_last_error() has the full sentence.
 */
#ifndef XFLOW_GUESTRT_HOOK_HOOK_H
#define XFLOW_GUESTRT_HOOK_HOOK_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct xflow_hook;
struct xflow_hook_target;
struct xflow_hook_backend_ops;

/* x86-64 integer registers in the order of the Linux user_regs_struct, so
 * that a backend that gets them from the kernel copies nothing. */
struct xflow_hook_regs {
	uint64_t r15, r14, r13, r12, rbp, rbx, r11, r10, r9, r8;
	uint64_t rax, rcx, rdx, rsi, rdi, orig_rax;
	uint64_t rip, cs, eflags, rsp, ss;
	uint64_t fs_base, gs_base, ds, es, fs, gs;
};

enum xflow_hook_when {
	XFLOW_HOOK_BEFORE = 0, /* before the instruction at the site runs */
	XFLOW_HOOK_AFTER = 1,  /* after it ran, before the next one */
};

/* What a forked child of a target becomes. */
enum xflow_hook_fork_policy {
	/* Its breakpoints stay (the child's copy of them) and are tracked: it
	 * becomes a target of its own with the same sites and site ids. */
	XFLOW_HOOK_FORK_INHERIT = 0,
	/* Its breakpoint bytes are restored and it is detached at once (a vfork
	 * child, which shares its parent's memory, is followed until it execs or
	 * exits and then let go; its hits run no handler). */
	XFLOW_HOOK_FORK_DETACH = 1,
};

/*
 * One hit, as a handler sees it.  regs->rip is the site address for a
 * BEFORE hit and the address of the next instruction for an AFTER hit,
 * whatever the backend does underneath (trap, out-of-line copy, emulation).
 * The handler may change any register; a BEFORE handler that changes rip
 * skips the instruction (and the AFTER handlers) and resumes at its rip.
 */
struct xflow_hook_hit {
	struct xflow_hook_target *target;
	pid_t pid;
	pid_t tid;
	uint32_t site;
	enum xflow_hook_when when;
	uint64_t addr; /* the site's address */
	struct xflow_hook_regs *regs;
};

/* Runs at each hit of an enabled site.  It must not block for long: the
 * thread that hit (and, for a ptrace backend, every other hit) waits. It may
 * read and write target memory with xflow_hook_mem_read/_write and may call
 * xflow_hook_site_enable/_add/_remove and xflow_hook_detach. */
typedef void (*xflow_hook_handler_fn)(const struct xflow_hook_hit *hit, void *data);

enum xflow_hook_event_kind {
	XFLOW_HOOK_EV_THREAD_NEW = 1, /* a target created a thread: tid */
	XFLOW_HOOK_EV_FORK,           /* child is a new target (INHERIT) or 0 */
	XFLOW_HOOK_EV_EXEC,           /* every site of target was retired */
	XFLOW_HOOK_EV_EXITED,         /* target ended: status as from waitpid */
	XFLOW_HOOK_EV_DETACHED,       /* target let go (asked, or on an error) */
	XFLOW_HOOK_EV_ERROR,          /* error on target: err; it was detached */
};

/* Lifecycle notice.  target is valid during the call; after EXITED and
 * DETACHED it is freed when the callback returns. */
struct xflow_hook_event {
	enum xflow_hook_event_kind kind;
	struct xflow_hook_target *target;
	pid_t pid;
	pid_t tid;                      /* THREAD_NEW */
	struct xflow_hook_target *child; /* FORK (NULL if detached) */
	pid_t child_pid;                /* FORK */
	int status;                     /* EXITED */
	int err;                        /* ERROR */
};
typedef void (*xflow_hook_event_fn)(const struct xflow_hook_event *ev, void *data);

struct xflow_hook_config {
	enum xflow_hook_fork_policy fork_policy;
	xflow_hook_event_fn on_event; /* optional */
	void *event_data;
};

/* How a site is served. */
enum xflow_hook_mech {
	XFLOW_HOOK_MECH_TRAP = 1, /* int3 and a stop of the thread for this process */
	XFLOW_HOOK_MECH_JUMP = 2, /* a jump to a trampoline in the target: no trap */
	XFLOW_HOOK_MECH_TRAP_INTARGET = 3, /* int3, the trampoline run by the trapped thread */
};

/* Per-site counters. */
struct xflow_hook_site_stats {
	uint64_t hits;           /* handler calls (backends with in-target advice
	                          * count per advice instead: 0 here) */
	bool enabled;
	uint64_t addr;
	enum xflow_hook_when when;
	enum xflow_hook_mech mech;
	char why[160];           /* why a backend that prefers jumps used a trap */
};

/* Engine state every backend embeds first.  The volatile fields are
 * written by the signal handlers of restore_signals.c; a backend sets
 * in_wait around the one blocking wait of its loop, which those signals
 * interrupt (EINTR). */
struct xflow_hook {
	const struct xflow_hook_backend_ops *ops;
	struct xflow_hook_config cfg;
	pid_t owner_tid;
	int control_fd;
	volatile sig_atomic_t stop_requested;
	volatile sig_atomic_t stop_reason;
	volatile sig_atomic_t timed_out;
	volatile sig_atomic_t in_wait;
	/* Called from a crash signal handler (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
	 * SIGABRT in this process, once xflow_hook_signals_install was called):
	 * restore what can be restored and let the targets go, with system
	 * calls only: no allocation, no lock.  NULL if the backend has none. */
	void (*emergency)(struct xflow_hook *h);
	/* The test hook of xflow_hook_step (hook_priv.h): die at step die_at
	 * (of those named die_name, when it is set); 0: never.  die_target:
	 * the target is sent die_sig there (SIGKILL unless said) instead of
	 * this process dying. */
	long die_at, steps;
	char die_name[32];
	bool die_target;
	int die_sig;
	char errbuf[256];
};

/* Target state every backend embeds first. */
struct xflow_hook_target {
	struct xflow_hook *hook;
	pid_t pid;
	void *user_data; /* free for the caller */
};

/*
 * The backend table.  NULL means "not provided" (the wrapper returns
 * -ENOTSUP).  Contracts:
 */

/* Allocate an engine configured by cfg (copied). *out is the embedded
 * struct xflow_hook of the backend's engine.  One engine per process at a
 * time (-EBUSY): its wake-up signal and timer are the process's. */
typedef int (*xflow_hook_new_fn)(const struct xflow_hook_config *cfg, struct xflow_hook **out);
/* Detach every target (restoring every byte) and free the engine. */
typedef void (*xflow_hook_free_fn)(struct xflow_hook *h);
/* Take a running process and every one of its threads; it keeps running.
 * New threads are followed.  *out is owned by the engine (freed after the
 * EXITED or DETACHED event, or by xflow_hook_free). */
typedef int (*xflow_hook_attach_fn)(struct xflow_hook *h, pid_t pid, struct xflow_hook_target **out);
/* Start argv[0] (PATH searched) as a target, held just after its exec so
 * that sites of the main executable can be added before it runs; it starts
 * at the next xflow_hook_run(). */
typedef int (*xflow_hook_spawn_fn)(struct xflow_hook *h, char *const argv[], struct xflow_hook_target **out);
/* Restore every byte patched in target, put every thread back at a correct
 * instruction, let it go.  target is freed (after the DETACHED event; at
 * the end of the handler's hit when called from a handler).  Scratch pages
 * a backend mapped stay mapped: a thread may still return into one (an
 * indirect call moved out of line), and an unused page harms nothing. */
typedef int (*xflow_hook_detach_fn)(struct xflow_hook_target *t);
/* Probe the instruction at addr.  Fails with a message when addr is not in
 * an executable mapping or its instruction cannot be relocated.  The site is
 * enabled when this returns 0; *site identifies it within t.  fn runs in
 * this process at each hit; with a backend that runs advice in the target
 * (.intarget set) fn is NULL and data is the index, in the program loaded
 * with prog_load, of the plan site whose bindings for @when run there. */
typedef int (*xflow_hook_site_add_fn)(struct xflow_hook_target *t, uint64_t addr, enum xflow_hook_when when,
				      xflow_hook_handler_fn fn, void *data, uint32_t *site);
/* Remove a site; the original bytes are back when no site uses the address. */
typedef int (*xflow_hook_site_remove_fn)(struct xflow_hook_target *t, uint32_t site);
/* Enable or disable a site while the target runs. */
typedef int (*xflow_hook_site_enable_fn)(struct xflow_hook_target *t, uint32_t site, bool on);
typedef int (*xflow_hook_site_stats_fn)(struct xflow_hook_target *t, uint32_t site, struct xflow_hook_site_stats *st);
/* Bounded, fault-safe access to target memory: -EFAULT when any byte is
 * not mapped (nothing partial is reported as success), -E2BIG past
 * XFLOW_HOOK_MEM_MAX.  Reads see the original bytes under breakpoints. Writes
 * honour the target's page protections. Never signals the target. */
typedef int (*xflow_hook_mem_read_fn)(struct xflow_hook_target *t, uint64_t addr, void *buf, size_t len);
typedef int (*xflow_hook_mem_write_fn)(struct xflow_hook_target *t, uint64_t addr, const void *buf, size_t len);
/* Serve hits and events for timeout_ms (-1: until no target is left or
 * xflow_hook_stop; 0: only what is pending).  Returns the number of events
 * served, or -EINTR when stopped by xflow_hook_stop, a fatal signal or the
 * control fd (every target was then detached, see xflow_hook_stop_reason),
 * or -EDEADLK when called from a handler. */
typedef int (*xflow_hook_run_fn)(struct xflow_hook *h, int timeout_ms);
/* Watch fd (a pipe or socket from the controlling monitor): when its peer
 * goes away (HUP), every target is detached and run returns -EINTR.  -1
 * stops watching.  The fd stays the caller's. */
typedef int (*xflow_hook_control_fd_fn)(struct xflow_hook *h, int fd);

struct xflow_hook_intarget_ops;

struct xflow_hook_backend_ops {
	const char *name;
	xflow_hook_new_fn hook_new;
	xflow_hook_free_fn hook_free;
	xflow_hook_attach_fn attach;
	xflow_hook_spawn_fn spawn;
	xflow_hook_detach_fn detach;
	xflow_hook_site_add_fn site_add;
	xflow_hook_site_remove_fn site_remove;
	xflow_hook_site_enable_fn site_enable;
	xflow_hook_site_stats_fn site_stats;
	xflow_hook_mem_read_fn mem_read;
	xflow_hook_mem_write_fn mem_write;
	xflow_hook_run_fn run;
	xflow_hook_control_fd_fn control_fd;
	/* Advice run inside the target; NULL: handlers run in this process. */
	const struct xflow_hook_intarget_ops *intarget;
};

/* Largest single memory access through the accessor. */
#define XFLOW_HOOK_MEM_MAX (1u << 20)

extern const struct xflow_hook_backend_ops xflow_hook_ptrace_ops;
extern const struct xflow_hook_backend_ops xflow_hook_inproc_ops;
/* The running Linux kernel, with eBPF (guestrt/hook/kernel/hook_kernel.c): its one
 * target is the kernel, attached as pid 0; advice is lowered to flow
 * operations (guestrt/hook/kernel/klower.h).  xflow_hook_kernel_unbuilt() is NULL, or
 * why the build left the backend out (its hook_new then fails). */
extern const struct xflow_hook_backend_ops xflow_hook_kernel_ops;
const char *xflow_hook_kernel_unbuilt(void);

/* Wrappers over the table (hook.c). */
int xflow_hook_new(const struct xflow_hook_backend_ops *ops, const struct xflow_hook_config *cfg,
		   struct xflow_hook **out);
void xflow_hook_free(struct xflow_hook *h);
int xflow_hook_attach(struct xflow_hook *h, pid_t pid, struct xflow_hook_target **out);
int xflow_hook_spawn(struct xflow_hook *h, char *const argv[], struct xflow_hook_target **out);
int xflow_hook_detach(struct xflow_hook_target *t);
int xflow_hook_site_add(struct xflow_hook_target *t, uint64_t addr, enum xflow_hook_when when,
			xflow_hook_handler_fn fn, void *data, uint32_t *site);
int xflow_hook_site_remove(struct xflow_hook_target *t, uint32_t site);
int xflow_hook_site_enable(struct xflow_hook_target *t, uint32_t site, bool on);
int xflow_hook_site_stats(struct xflow_hook_target *t, uint32_t site, struct xflow_hook_site_stats *st);
int xflow_hook_mem_read(struct xflow_hook_target *t, uint64_t addr, void *buf, size_t len);
int xflow_hook_mem_write(struct xflow_hook_target *t, uint64_t addr, const void *buf, size_t len);
int xflow_hook_run(struct xflow_hook *h, int timeout_ms);
int xflow_hook_control_fd(struct xflow_hook *h, int fd);
const char *xflow_hook_last_error(const struct xflow_hook *h);
const char *xflow_hook_strerror(int err);

/*
 * Signals of the tracer.  xflow_hook_signals_install() catches SIGINT,
 * SIGTERM, SIGHUP and SIGQUIT for h: the handler only records the signal
 * and wakes xflow_hook_run(), which detaches every target (restoring every
 * byte) and returns -EINTR; xflow_hook_stop_reason() then says which signal,
 * and the caller may re-raise it with xflow_hook_signals_reraise().  One
 * engine per process may own the signals.  It also catches the signals of a
 * crash of this process (a handler's bug): the backend's emergency path puts
 * the targets back as best it can with bare system calls, then the crash
 * goes on as it would have.
 */
int xflow_hook_signals_install(struct xflow_hook *h);
void xflow_hook_signals_uninstall(struct xflow_hook *h);
void xflow_hook_signals_reraise(int signo);
/* Ask run() to return -EINTR after detaching every target.  Async-signal-
 * safe and callable from any thread. */
void xflow_hook_stop(struct xflow_hook *h);
/* Why run() stopped: a signal number, 0 for xflow_hook_stop(), -1 for the
 * control fd, -2 not stopped. */
int xflow_hook_stop_reason(const struct xflow_hook *h);

/*
 * Address resolution (maps.c).  Runtime address in pid of a location given
 * by the object's path and either a file offset (XFLOW_HOOK_LOC_OFFSET) or a
 * link-time virtual address (XFLOW_HOOK_LOC_VADDR, read against the ELF
 * program headers), from /proc/PID/maps: PIE executables and shared
 * libraries at any load base.  -ENOENT when path is not mapped in pid.
 */
enum xflow_hook_loc_kind { XFLOW_HOOK_LOC_OFFSET = 0, XFLOW_HOOK_LOC_VADDR = 1 };
int xflow_hook_resolve(pid_t pid, const char *path, enum xflow_hook_loc_kind kind, uint64_t where,
		       uint64_t *addr);
/* The GNU build id, in hex, of the file pid has mapped for path (the one
 * it runs, even if another file is at that path now): 0 and hex ("" when
 * it has none), -ENOENT when path is not mapped in pid, -ENOEXEC when the
 * mapped file is not a 64-bit ELF file. */
int xflow_hook_build_id(pid_t pid, const char *path, char *hex, size_t hexlen);
/* The file pid has mapped for path, open read-only (the caller closes
 * it): a descriptor, -ENOENT when path is not mapped in pid, or -errno. */
int xflow_hook_mapped_open(pid_t pid, const char *path);
/* Read @len bytes at link-time virtual address @vaddr of the ELF file open
 * at @fd, from its PT_LOAD segments' file image: 0, -ENOEXEC (not a
 * 64-bit ELF file), -ENOENT (no segment holds all of them), -EIO. */
int xflow_hook_elf_read_vaddr(int fd, uint64_t vaddr, void *buf, size_t len);

/*
 * In-target advice (backends with .intarget).  The caller compiles nothing
 * itself: it hands over a weave plan's domain, and the backend maps the
 * plan's programs, tables and field layouts into the target with a runtime
 * that runs them (the advice interpreter, guestrt/interp/interp.h, in the target),
 * fetches inputs as the plan's recipes say, keeps a flow-id table per
 * process and writes records into per-thread lanes.  The caller moves the
 * records out with drain() and reads the counters with stats().
 */
struct xflow_plan;
struct xflow_plan_domain;
struct xflow_field_rt;
struct xflow_record;

struct xflow_hook_prog {
	const struct xflow_plan *plan;
	const struct xflow_plan_domain *dom;
	const struct xflow_field_rt *fields; /* plan->nfields layouts in this domain */
	const uint64_t *bases;               /* load base of each of dom's binaries in the target */
	uint16_t domain_id;                  /* records' domain_id */
	uint32_t fixed_cpu_plus1;            /* records' CPU + 1 when every thread of the
	                                      * domain runs on one known vCPU (a simulated
	                                      * domain's); 0: the CPU each hit ran on */
	uint32_t lanes;                      /* threads with a lane per process (0: 128) */
	uint32_t lane_slots;                 /* records per lane, a power of two (0: 4096) */
	uint32_t flowtab_capacity;           /* live keys per process (0: 1 << 18) */
	bool interpret;                      /* run the bytecode on the runtime's interpreter
	                                      * instead of compiling it (for comparison) */
};

struct xflow_hook_advice_stats {
	uint64_t hits, faults, drops;
};

struct xflow_hook_prog_stats {
	uint64_t records;        /* moved out by drain() */
	uint64_t dropped;        /* lost: a lane's ring was full */
	uint64_t nolane;         /* hits of threads that found no free lane */
	uint64_t nested;         /* hits inside a hit (a signal handler's) */
	uint64_t lock_waits;     /* times the flow-id table's lock yielded the CPU */
	uint64_t bad;            /* records that did not decode (a lane given up) */
};

/* Receives each record drain() moves out (decoded, from private memory).
 * Returns 0 when it kept the record, a negative errno when the record is
 * lost after all (a full ring): a backend that writes loss notes
 * (xflow/record.h, "Losses") counts such a record lost too. */
typedef int (*xflow_hook_record_fn)(void *ctx, const struct xflow_record *r);

/* Receives a run of records drain_runs() moves out: consecutive records of
 * one thread's lane, in its order (decoded, from private memory).  Returns
 * how many of the first it kept, 0 to @n; the others are lost after all
 * (a full ring: the callee counts them), as records a record fn refused. */
typedef size_t (*xflow_hook_records_fn)(void *ctx, const struct xflow_record *r, size_t n);

struct xflow_hook_intarget_ops {
	/* Compile @prog into t's memory (it is copied: the caller may free
	 * it after).  Every site of a previous program must have been
	 * removed; the flow-id table and the counters start empty.  Sites
	 * added afterwards name prog's plan sites. */
	int (*prog_load)(struct xflow_hook_target *t, const struct xflow_hook_prog *prog);
	/* Switch advice @advice on or off in t and every process sharing its
	 * program (its forked children): a flag the target reads at each
	 * hit, no stop, no patch. */
	int (*advice_enable)(struct xflow_hook_target *t, uint32_t advice, bool on);
	/* Move the records the targets wrote, in each thread's order, into
	 * fn; at most @max (0: no limit but one lane's capacity per lane, so
	 * that threads writing as fast as we read cannot hold the caller:
	 * what they add meanwhile waits for the next call).  The records of
	 * a target that is gone are all moved.  The number moved. */
	long (*drain)(struct xflow_hook *h, xflow_hook_record_fn fn, void *ctx, size_t max);
	/* drain() for a caller that takes records a run at a time (one
	 * check of its ring's room, one copy, per run rather than per
	 * record): runs of plain records go to @runs, the rest (loss notes,
	 * the records around them) to @fn one at a time.  NULL: not
	 * provided, drain() with @fn instead. */
	long (*drain_runs)(struct xflow_hook *h, xflow_hook_records_fn runs, xflow_hook_record_fn fn, void *ctx,
			   size_t max);
	/* Counters of the current programs over every target, and of targets
	 * gone since: per advice (nadvice entries of @adv) and in all. */
	int (*stats)(struct xflow_hook *h, uint32_t nadvice, struct xflow_hook_advice_stats *adv,
		     struct xflow_hook_prog_stats *all);
};

/* Wrappers: -ENOTSUP when the backend has no in-target advice. */
int xflow_hook_prog_load(struct xflow_hook_target *t, const struct xflow_hook_prog *prog);
int xflow_hook_advice_enable(struct xflow_hook_target *t, uint32_t advice, bool on);
long xflow_hook_drain(struct xflow_hook *h, xflow_hook_record_fn fn, void *ctx, size_t max);
/* @runs may be NULL: every record to @fn. */
long xflow_hook_drain_runs(struct xflow_hook *h, xflow_hook_records_fn runs, xflow_hook_record_fn fn, void *ctx,
			   size_t max);
int xflow_hook_prog_stats(struct xflow_hook *h, uint32_t nadvice, struct xflow_hook_advice_stats *adv,
			  struct xflow_hook_prog_stats *all);

#endif
