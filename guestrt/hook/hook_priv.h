/*
 * Interfaces between the hook core (guestrt/hook/) and its backends'
 * files (not for other folders).
 */
#ifndef XFLOW_GUESTRT_HOOK_HOOK_PRIV_H
#define XFLOW_GUESTRT_HOOK_HOOK_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "common/mem.h"
#include "guestrt/hook/hook.h"
#include "guestrt/x86/x86_insn.h"

/* Fill h->errbuf (printf-style) and return err, so that a failing path can
 * say `return hook_fail(h, -EINVAL, "...")`. */
int xflow_hook_fail(struct xflow_hook *h, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * A step of a backend's work on target @pid after which the target must be
 * able to go on without us (a system call made in it, bytes written, a
 * thread's registers changed).  Nothing, unless the environment has
 * XFLOW_HOOK_DIE_AT=N (the Nth step) or =NAME:N (the Nth step called
 * NAME) when the engine is made: then this process says which step on
 * standard error and kills itself with SIGKILL there, as an agent killed
 * at that instant would be; with XFLOW_HOOK_DIE_WHO=target too, it kills
 * the target instead, as if it died then.  The tests sweep it over every
 * step.
 */
void xflow_hook_step(struct xflow_hook *h, pid_t pid, const char *name);

/* ---- seccomp.c: a target's seccomp filters ---- */

/* Run the classic BPF program @prog of @n instructions on @d as seccomp
 * does: 0 and the 32-bit return in *action, or -EINVAL for a program the
 * kernel would not run (a bad instruction, jump or offset; no return). */
int xflow_seccomp_run(const struct sock_filter *prog, size_t n, const struct seccomp_data *d, uint32_t *action);
/* What an action (SECCOMP_RET_*) does, in words. */
const char *xflow_seccomp_action_name(uint32_t action);
/* Whether the seccomp filters of thread tid (stopped under our ptrace) let
 * the system call @d run: 0, or -EPERM when they would not (kill, trap,
 * fail it...), -EACCES when they cannot be read (both with the reason in
 * err, naming @call), -EINVAL for a filter the kernel would not run. */
int xflow_seccomp_check(pid_t tid, const struct seccomp_data *d, const char *call, char *err, size_t errlen);

/* ---- code_map.c: where control can go in a binary (link-time addresses) ---- */

struct xflow_code_map;
struct xflow_code_func {
	uint64_t start, end; /* the function's bytes */
	uint64_t next;       /* the next function's start (padding lies between) */
	bool opaque;         /* an indirect jump it could not follow: any
			      * instruction may be a destination */
};
int xflow_code_map_open(const char *path, struct xflow_code_map **out, char *err, size_t errlen);
void xflow_code_map_free(struct xflow_code_map *m);
/* The function holding vaddr: 0, or -ENOENT (no symbol covers it). */
int xflow_code_map_func(const struct xflow_code_map *m, uint64_t vaddr, struct xflow_code_func *out);
/* A direct branch or a jump table may land at vaddr. */
bool xflow_code_map_is_target(const struct xflow_code_map *m, uint64_t vaddr);
/* The binary has exception landing pads, which no sweep sees. */
bool xflow_code_map_landing_pads(const struct xflow_code_map *m);

/* ---- target_mem.c: another process's memory ---- */

struct xflow_tmem {
	pid_t pid;
	int memfd; /* /proc/PID/mem, opened once: writes to text go through it */
	int use_procmem; /* process_vm_* unusable: fall back to memfd */
};
int xflow_tmem_open(struct xflow_tmem *m, pid_t pid);
void xflow_tmem_close(struct xflow_tmem *m);
/* Reopen after exec (the old fd keeps the old image). */
int xflow_tmem_reopen(struct xflow_tmem *m);
/* Fault-safe bounded read/write, all or nothing: -EFAULT, -E2BIG. */
int xflow_tmem_read(struct xflow_tmem *m, uint64_t addr, void *buf, size_t len);
int xflow_tmem_write(struct xflow_tmem *m, uint64_t addr, const void *buf, size_t len);
/* Write ignoring page protections (text, scratch): the kernel's forced
 * write through /proc/PID/mem, which gives the target a private copy of the
 * page. */
int xflow_tmem_poke(struct xflow_tmem *m, uint64_t addr, const void *buf, size_t len);
int xflow_tmem_peek(struct xflow_tmem *m, uint64_t addr, void *buf, size_t len);

/* ---- maps.c ---- */

struct xflow_map {
	uint64_t start, end, offset;
	char perms[5];
};
/* The mapping of pid holding addr: 0, -ENOENT, or a read error. */
int xflow_maps_find(pid_t pid, uint64_t addr, struct xflow_map *out);
/* A free range of size bytes near addr, within +-reach, page aligned, for a
 * scratch page: 0 and *out, or -ENOSPC. */
int xflow_maps_gap_near(pid_t pid, uint64_t addr, uint64_t size, uint64_t reach, uint64_t *out);
/* The link-time address of file offset off of the ELF file at path. */
int xflow_maps_vaddr_of(const char *path, uint64_t off, uint64_t *vaddr);

/* ---- restore_signals.c ---- */

/* Register h as the engine woken by SIGURG (xflow_hook_stop from another
 * thread, control fd, run timeouts).  Called by every backend's hook_new. */
int xflow_hook_wake_init(struct xflow_hook *h);
void xflow_hook_wake_fini(struct xflow_hook *h);
/* Arm (ms >= 0) or disarm (ms < 0) the run timeout of h. */
int xflow_hook_timer_arm(struct xflow_hook *h, int ms);
/* Check the control fd now (the engine calls it when run starts). */
void xflow_hook_control_poll(struct xflow_hook *h);
/* Watch the control fd (SIGURG on HUP): the ops->control_fd of a backend. */
int xflow_hook_control_fd_watch(struct xflow_hook *h, int fd);

#endif
