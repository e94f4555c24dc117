/*
 * mm/page_alloc.c: the domain's page allocator (see linux/mm.h), a free list
 * of page frames over the RAM handed to mem_init().
 */
#include "linux/mm.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "xen/interface.h"

static struct {
	pthread_mutex_t lock;
	pthread_cond_t freed;
	unsigned char *base;
	size_t npages;
	uint32_t *free_list; /* stack of free frame numbers */
	size_t nfree;
} mem = { .lock = PTHREAD_MUTEX_INITIALIZER, .freed = PTHREAD_COND_INITIALIZER };

void mem_init(void *base, size_t npages)
{
	mem.base = base;
	mem.npages = npages;
	mem.free_list = malloc(npages * sizeof(*mem.free_list));
	if (!mem.free_list)
		abort(); /* at boot, as the kernel would panic */
	/* Highest frame at the bottom of the stack: low frames go out first. */
	for (size_t i = 0; i < npages; i++)
		mem.free_list[i] = (uint32_t)(npages - 1 - i);
	mem.nfree = npages;
}

void *alloc_page(void)
{
	void *p = NULL;

	pthread_mutex_lock(&mem.lock);
	if (mem.nfree)
		p = mem.base + (size_t)mem.free_list[--mem.nfree] * PAGE_SIZE;
	pthread_mutex_unlock(&mem.lock);
	return p;
}

void *alloc_page_wait(int timeout_ms)
{
	struct timespec ts;
	void *p = NULL;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&mem.lock);
	while (!mem.nfree)
		if (pthread_cond_timedwait(&mem.freed, &mem.lock, &ts))
			break;
	if (mem.nfree)
		p = mem.base + (size_t)mem.free_list[--mem.nfree] * PAGE_SIZE;
	pthread_mutex_unlock(&mem.lock);
	return p;
}

void free_page(void *page)
{
	pthread_mutex_lock(&mem.lock);
	mem.free_list[mem.nfree++] = (uint32_t)virt_to_mfn(page);
	pthread_cond_signal(&mem.freed);
	pthread_mutex_unlock(&mem.lock);
}

unsigned long virt_to_mfn(const void *addr)
{
	return (unsigned long)(((const unsigned char *)addr - mem.base) >> PAGE_SHIFT);
}

size_t mm_pages_in_use(void)
{
	size_t n;

	pthread_mutex_lock(&mem.lock);
	n = mem.npages - mem.nfree;
	pthread_mutex_unlock(&mem.lock);
	return n;
}
