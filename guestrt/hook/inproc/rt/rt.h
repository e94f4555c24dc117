/*
 * Inside the in-process runtime (guestrt/hook/inproc/rt/): the pieces its files share.
 *
 * The runtime runs in a process that did not ask for it, on that process's
 * threads and stacks.  It is built without a C library, with hidden
 * visibility, without SSE (the trampolines save only general registers)
 * and without a stack protector (the canary would be the program's).  It
 * holds no mutable state of its own but rt_globals (wiped in a forked
 * child) and the shared regions the agent gave it (xflow/inproc.h).
 */
#ifndef XFLOW_GUESTRT_HOOK_INPROC_RT_RT_H
#define XFLOW_GUESTRT_HOOK_INPROC_RT_RT_H

#include <stddef.h>
#include <stdint.h>

#include "xflow/inproc.h"

extern struct xflow_rt_config rt_config;
extern struct xflow_rt_globals rt_globals;

/* rt_head.S */
int rt_safe_read(uint64_t addr, void *out, uint64_t len);
int rt_safe_write(uint64_t addr, const void *in, uint64_t len);
extern const char rt_safe_begin[], rt_safe_end[], rt_safe_fault[], rt_restorer[];

/* rt_lane.c */
static inline uint64_t rt_tsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}
/* The hit's time, and its CPU + 1 (0: unknown) as @c says to learn it.
 * RDTSC then RDPID where RDPID is: RDTSCP, which reads both at one
 * instant, waits for every instruction before it to finish, and cost 14 ns
 * more than RDTSC alone on these machines (40 against 26; RDPID, 4).  The
 * thread may move between the two reads: the record then names the CPU it
 * moved to, as it would a moment later. */
static inline uint64_t rt_tsc_cpu(const struct xflow_rt_ctl *c, uint32_t *cpu_plus1)
{
	uint32_t lo, hi, aux;
	if (__builtin_expect(c->cpu_how == XFLOW_RT_CPU_RDPID, 1)) {
		uint64_t id;
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		__asm__ volatile("rdpid %0" : "=r"(id));
		*cpu_plus1 = ((uint32_t)id & 0xfff) + 1;
		return (uint64_t)hi << 32 | lo;
	}
	if (c->cpu_how == XFLOW_RT_CPU_RDTSCP) {
		__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
		*cpu_plus1 = (aux & 0xfff) + 1;
		return (uint64_t)hi << 32 | lo;
	}
	*cpu_plus1 = c->cpu_how == XFLOW_RT_CPU_FIXED ? c->cpu_fixed + 1 : 0;
	return rt_tsc();
}
/* The calling thread's lane, claimed at its first hit; NULL when all are
 * taken. */
struct xflow_rt_lane *rt_lane_get(struct xflow_rt_proc *p);
/* A flow id, unique over the target's processes. */
uint64_t rt_lane_new_id(struct xflow_rt_lane *l, const struct xflow_rt_ctl *c);
void rt_flows_lock(struct xflow_rt_proc *p);
void rt_flows_unlock(struct xflow_rt_proc *p);
/* One spin of a thread waiting for the lock to be free. */
void rt_flows_wait(struct xflow_rt_proc *p, uint32_t *spins);

#define RT_AT(base, off) ((void *)((char *)(base) + (off)))

/* rt_hit.c */
void rt_hit(uint64_t *frame, const struct xflow_rt_hook *hook);

/* rt_signal.c */
struct siginfo;
void rt_on_signal(int sig, void *info, void *uc);

/* System calls, the few the runtime makes: the first hit of a thread asks
 * its tid, a waiter for the flow-id table's lock yields, and the signal
 * handler chains or re-raises. */
static inline long rt_syscall3(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return ret;
}

static inline long rt_syscall4(long nr, long a, long b, long c, long d)
{
	long ret;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return ret;
}

#define RT_SYS_sched_yield 24
#define RT_SYS_rt_sigaction 13
#define RT_SYS_getpid 39
#define RT_SYS_gettid 186
#define RT_SYS_tgkill 234

#endif
