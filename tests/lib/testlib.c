#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/lib/testlib.h"

static size_t page_round(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return (n + pg - 1) / pg * pg;
}

void *test_guarded_alloc(size_t size)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), body = page_round(size);
	unsigned char *m = mmap(NULL, body + pg, PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	mprotect(m + body, pg, PROT_NONE);
	/* Place the region flush against the guard page. */
	return m + (body - size);
}

void test_guarded_free(void *p, size_t size)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), body = page_round(size);
	unsigned char *m = (unsigned char *)p - (body - size);
	munmap(m, body + pg);
}
