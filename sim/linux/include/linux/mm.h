/*
 * A domain's page allocator.  A guest's I/O buffers come from its RAM in the
 * memory it shares with dom0 (so that it can grant them); dom0's come from
 * private memory.  Pages are PAGE_SIZE and page aligned.
 */
#ifndef SIM_LINUX_MM_H
#define SIM_LINUX_MM_H

#include <stddef.h>
#include <stdint.h>

/* Hands the allocator @npages pages at @base. */
void mem_init(void *base, size_t npages);

/* A free page, or NULL when memory is exhausted. */
void *alloc_page(void);

/* Waits up to @timeout_ms for a page (as a sleeping GFP_KERNEL allocation). */
void *alloc_page_wait(int timeout_ms);

void free_page(void *page);

/* The frame number of the page holding @addr (its index in RAM). */
unsigned long virt_to_mfn(const void *addr);

/* Pages currently allocated. */
size_t mm_pages_in_use(void);

#endif
