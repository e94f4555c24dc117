/*
 * The C library functions the compiler may call on its own (for struct
 * copies and clears) even in freestanding code: the runtime has no C
 * library, so it brings these.  Built with
 * -fno-tree-loop-distribute-patterns, so these loops are not themselves
 * turned back into calls.  The direction flag is clear wherever the
 * runtime runs (the zone stub clears it, the kernel does for a handler).
 */
#include <stddef.h>
#include <stdint.h>

void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);

/* Small sizes (records, a stack of cells) word by word: rep movsb costs
 * tens of cycles to start, more than these copies take. */
void *memcpy(void *restrict dst, const void *restrict src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	if (n >= 256) {
		__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
		return dst;
	}
	for (; n >= 8; n -= 8, d += 8, s += 8) {
		uint64_t w;
		__builtin_memcpy(&w, s, 8);
		__builtin_memcpy(d, &w, 8);
	}
	while (n--)
		*d++ = *s++;
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	if (d < s) {
		while (n--)
			*d++ = *s++;
	} else {
		while (n--)
			d[n] = s[n];
	}
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	unsigned char *d = dst;
	if (n >= 256) {
		__asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
		return dst;
	}
	uint64_t w = (uint64_t)(unsigned char)c * 0x0101010101010101ull;
	for (; n >= 8; n -= 8, d += 8)
		__builtin_memcpy(d, &w, 8);
	while (n--)
		*d++ = (unsigned char)c;
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x < *y ? -1 : 1;
	return 0;
}
