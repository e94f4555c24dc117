/*
 * Fuzz the seccomp filter evaluator (guestrt/hook/seccomp.c), which runs
 * programs read from a traced process we do not trust: the first 64 bytes
 * are the system call (struct seccomp_data), the rest the program, 8 bytes
 * an instruction.  Any program either runs to a return or is refused with
 * -EINVAL, the same way each time, touching nothing outside its input.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guestrt/hook/hook_priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seccomp_data d;
	if (size < sizeof(d))
		return 0;
	memcpy(&d, data, sizeof(d));
	size_t n = (size - sizeof(d)) / sizeof(struct sock_filter);
	/* A copy of exactly the program, so that a read past it is caught. */
	struct sock_filter *p = malloc(n ? n * sizeof(*p) : 1);
	if (!p)
		return 0;
	memcpy(p, data + sizeof(d), n * sizeof(*p));
	uint32_t a1 = 0, a2 = 1;
	int r1 = xflow_seccomp_run(p, n, &d, &a1);
	int r2 = xflow_seccomp_run(p, n, &d, &a2);
	if ((r1 != 0 && r1 != -EINVAL) || r1 != r2 || (r1 == 0 && a1 != a2))
		abort();
	free(p);
	return 0;
}
