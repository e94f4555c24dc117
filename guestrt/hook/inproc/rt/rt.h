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

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "xflow/inproc.h"

#define RT_AT(base, off) ((void *)((char *)(base) + (off)))

extern struct xflow_rt_config rt_config;
extern struct xflow_rt_globals rt_globals;

/* rt_head.S */
int rt_safe_read(uint64_t addr, void *out, uint64_t len);
int rt_safe_write(uint64_t addr, const void *in, uint64_t len);
uint64_t rt_safe_fs0(void);
/* What rt_safe_fs0 gives a thread without TLS. */
#define RT_FS0_FAULT ((uint64_t)(uint32_t)-14)
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
/* What tells the calling thread apart (rt_config.fs_mode); 0: nothing. */
static inline uint64_t rt_thread_key(void)
{
	uint64_t v;
	if (rt_config.fs_mode == XFLOW_RT_FS_RDFSBASE) {
		__asm__ volatile("rdfsbase %0" : "=r"(v));
		return v;
	}
	v = rt_safe_fs0();
	return v == RT_FS0_FAULT ? 0 : v;
}

/* The lane of the thread whose key is @key: found by a search of the
 * lanes, or claimed; NULL when all are taken. */
struct xflow_rt_lane *rt_lane_find(struct xflow_rt_proc *p, uint64_t key);

static inline struct xflow_rt_lane *rt_lane_at(struct xflow_rt_proc *p, uint64_t key, uint32_t *i)
{
	*i = (uint32_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 40) & (p->nlanes - 1);
	return RT_AT(p, p->off_lanes + (uint64_t)*i * p->lane_size);
}

/* The calling thread's lane, claimed at its first hit; NULL when all are
 * taken.  A thread finds its lane where the hash of its key puts it but
 * when another thread was there first: one load and a compare, inline, and
 * the search only then. */
static inline struct xflow_rt_lane *rt_lane_get(struct xflow_rt_proc *p)
{
	uint64_t key = rt_thread_key();
	uint32_t i;
	if (__builtin_expect(!key, 0))
		return NULL;
	struct xflow_rt_lane *l = rt_lane_at(p, key, &i);
	/* Acquire: as in rt_lane_find. */
	if (__builtin_expect(atomic_load_explicit(&l->owner, memory_order_acquire) == key &&
				     !atomic_load_explicit(&l->stale, memory_order_relaxed) && l->ready,
			     1))
		return l;
	return rt_lane_find(p, key);
}
/* A flow id, unique over the target's processes. */
uint64_t rt_lane_new_id(struct xflow_rt_lane *l, const struct xflow_rt_ctl *c);
void rt_flows_lock(struct xflow_rt_proc *p);
void rt_flows_unlock(struct xflow_rt_proc *p);
/* One spin of a thread waiting for the lock to be free. */
void rt_flows_wait(struct xflow_rt_proc *p, uint32_t *spins);


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
