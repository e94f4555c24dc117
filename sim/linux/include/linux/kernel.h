/*
 * The few kernel idioms the simulated kernels use, on top of libc: locks are
 * pthread mutexes (a spinlock with interrupts off, for our purposes), and
 * "interrupts" and softirqs are threads.
 */
#ifndef SIM_LINUX_KERNEL_H
#define SIM_LINUX_KERNEL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/*
 * Only for functions that Linux's compiler keeps out of line because of their
 * size, but that are small here and called from their own file: a tracer
 * must find them where the real kernel has them.
 */
#define noinline __attribute__((noinline))

typedef pthread_mutex_t spinlock_t;
#define spin_lock_init(l) pthread_mutex_init((l), NULL)
#define spin_lock(l) pthread_mutex_lock(l)
#define spin_unlock(l) pthread_mutex_unlock(l)


#endif
