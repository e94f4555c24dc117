/*
 * The in-process runtime run inside the test process itself: the agent's
 * image mapped here (as the backend maps it into a target), a control
 * region and a data region built by the backend's own code, advice compiled
 * by its compiler, and a shim that calls a hook's code with every register
 * and the flags set from an array and reads them all back (then puts the
 * ABI's flags back).  So the
 * compiler's code can be checked instruction by instruction against the
 * interpreter, and register by register against what it must preserve,
 * without a traced process in between.
 */
#ifndef XFLOW_TESTS_GUESTRT_RTLOCAL_H
#define XFLOW_TESTS_GUESTRT_RTLOCAL_H

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include "guestrt/hook/inproc/inproc_priv.h"

extern const uint8_t xflow_rt_blob[], xflow_rt_blob_end[];

/* rtlocal_call(code, in, out): in and out are 17 words, the 16 registers
 * in DWARF order (rsp's slot unused) and the flags. */
void rtlocal_call(uint64_t code, const uint64_t *in, uint64_t *out);
__asm__(".text\n.globl rtlocal_call\n.type rtlocal_call,@function\nrtlocal_call:\n"
	"\tpush %rbx\n\tpush %rbp\n\tpush %r12\n\tpush %r13\n\tpush %r14\n\tpush %r15\n"
	"\tpush %rdx\n\tpush %rdi\n"
	"\tmov %rsi, %rax\n\tpushq 128(%rax)\n\tpopfq\n"
	"\tmov 8(%rax), %rdx\n\tmov 16(%rax), %rcx\n\tmov 24(%rax), %rbx\n\tmov 32(%rax), %rsi\n"
	"\tmov 40(%rax), %rdi\n\tmov 48(%rax), %rbp\n\tmov 64(%rax), %r8\n\tmov 72(%rax), %r9\n"
	"\tmov 80(%rax), %r10\n\tmov 88(%rax), %r11\n\tmov 96(%rax), %r12\n\tmov 104(%rax), %r13\n"
	"\tmov 112(%rax), %r14\n\tmov 120(%rax), %r15\n\tmov 0(%rax), %rax\n"
	"\tcall *(%rsp)\n"
	"\tpushfq\n\tpush %rax\n\tmov 24(%rsp), %rax\n\tpopq (%rax)\n"
	"\tmov %rdx, 8(%rax)\n\tmov %rcx, 16(%rax)\n\tmov %rbx, 24(%rax)\n\tmov %rsi, 32(%rax)\n"
	"\tmov %rdi, 40(%rax)\n\tmov %rbp, 48(%rax)\n\tmov %r8, 64(%rax)\n\tmov %r9, 72(%rax)\n"
	"\tmov %r10, 80(%rax)\n\tmov %r11, 88(%rax)\n\tmov %r12, 96(%rax)\n\tmov %r13, 104(%rax)\n"
	"\tmov %r14, 112(%rax)\n\tmov %r15, 120(%rax)\n\tpopq 128(%rax)\n"
	/* Back to the ABI's flags: DF clear, and AC clear, or the caller's
	 * own unaligned accesses (ASan's shadow writes) trap. */
	"\tpushq $0x202\n\tpopfq\n"
	"\tadd $16, %rsp\n"
	"\tpop %r15\n\tpop %r14\n\tpop %r13\n\tpop %r12\n\tpop %rbp\n\tpop %rbx\n\tret\n"
	".size rtlocal_call, .-rtlocal_call\n");

struct rtlocal {
	uint8_t *image;
	size_t image_size;
	const struct xflow_rt_head *head;
	void *ctl;
	size_t ctl_size;
	struct ip_target t;   /* only its data region: t.proc, t.lanes */
	uint8_t *code;
	size_t code_used;
	struct sigaction old_segv, old_bus;
};

#define RTLOCAL_CODE (1u << 20)

/* Map the image, the program of @prog and a data region here. */
static inline int rtlocal_init(struct rtlocal *r, const struct xflow_hook_prog *prog, uint32_t lanes, uint32_t slots)
{
	memset(r, 0, sizeof(*r));
	r->head = (const struct xflow_rt_head *)xflow_rt_blob;
	r->image_size = (size_t)r->head->code_size + r->head->data_size;
	r->image = mmap(NULL, r->image_size, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	r->code = mmap(NULL, RTLOCAL_CODE, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->image == MAP_FAILED || r->code == MAP_FAILED)
		return -1;
	memcpy(r->image, xflow_rt_blob, (size_t)(xflow_rt_blob_end - xflow_rt_blob));
	r->ctl_size = (ip_ctl_size(prog) + 4095) & ~(size_t)4095;
	r->ctl = aligned_alloc(4096, r->ctl_size);
	if (!r->ctl)
		return -1;
	ip_ctl_fill(r->ctl, (uint64_t)(uintptr_t)r->ctl, r->ctl_size, prog);
	uint64_t a, b, c, d;
	uint32_t bits;
	size_t ps = ip_proc_size(lanes, slots, 1024, &a, &b, &c, &d, &bits);
	r->t.proc.map = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->t.proc.map == MAP_FAILED)
		return -1;
	r->t.proc.addr = (uint64_t)(uintptr_t)r->t.proc.map;
	r->t.proc.size = ps;
	if (ip_proc_format(&r->t, lanes, slots, 1024))
		return -1;
	struct xflow_rt_config *cfg = (void *)(r->image + r->head->off_config);
	struct xflow_rt_globals *g = (void *)(r->image + r->head->off_globals);
	cfg->ctl = (uint64_t)(uintptr_t)r->ctl;
	/* As the agent picks it for a process whose threads follow the TLS
	 * ABI, as this one's do (fs_mode_of, inproc_inject.c): compiled
	 * advice then finds the lane inline.  A test may set the other. */
	cfg->fs_mode = XFLOW_RT_FS_TCB;
	g->proc = r->t.proc.addr;
	/* The runtime's own handler mends its faulting accesses here too. */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = (void (*)(int, siginfo_t *, void *))(uintptr_t)(r->image + r->head->off_on_signal);
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, &r->old_segv);
	sigaction(SIGBUS, &sa, &r->old_bus);
	return 0;
}

/* The hook at (addr, when) for plan sites @sites, compiled; 0 if the
 * compiler refused. */
static inline uint64_t rtlocal_jit(struct rtlocal *r, uint64_t addr, unsigned when, const uint32_t *sites,
				   uint32_t n)
{
	const struct xflow_rt_config *cfg = (const void *)(r->image + r->head->off_config);
	struct ip_jit_env env = { .ctl = r->ctl, .ctl_addr = (uint64_t)(uintptr_t)r->ctl, .fs_mode = cfg->fs_mode,
				  .image = (uint64_t)(uintptr_t)r->image, .head = r->head };
	uint64_t at = (uint64_t)(uintptr_t)r->code + r->code_used;
	int len = ip_jit_hook(&env, addr, when, sites, n, at, r->code + r->code_used, RTLOCAL_CODE - r->code_used);
	if (len <= 0)
		return 0;
	r->code_used = (r->code_used + (size_t)len + 15) & ~(size_t)15;
	return at;
}

/* The enable flag of advice @i. */
static inline void rtlocal_enable(struct rtlocal *r, uint32_t i, int on)
{
	struct xflow_rt_ctl *c = r->ctl;
	((uint8_t *)r->ctl + c->off_enabled)[i] = (uint8_t)on;
}

/* Records the hooks wrote so far (decoded). */
static inline long rtlocal_records(struct rtlocal *r, struct xflow_record *out, size_t max)
{
	long n = 0;
	for (uint32_t i = 0; i < r->t.nlanes && (size_t)n < max; i++) {
		long k = xflow_ring_pop_records(&r->t.lanes[i].ring, out + n, max - (size_t)n);
		if (k < 0)
			return k;
		n += k;
	}
	return n;
}

/* Lane counters summed: hits, faults, drops of advice @i. */
static inline void rtlocal_counts(struct rtlocal *r, uint32_t i, uint64_t out[3])
{
	struct xflow_rt_proc *p = r->t.proc.map;
	out[0] = out[1] = out[2] = 0;
	for (uint32_t l = 0; l < p->nlanes; l++) {
		const uint64_t *cnt = (const uint64_t *)((const char *)p + p->off_lanes + l * p->lane_size +
							 sizeof(struct xflow_rt_lane));
		for (int k = 0; k < 3; k++)
			out[k] += cnt[k * XFLOW_RT_NCOUNTERS + i];
	}
}

static inline void rtlocal_fini(struct rtlocal *r)
{
	sigaction(SIGSEGV, &r->old_segv, NULL);
	sigaction(SIGBUS, &r->old_bus, NULL);
	free(r->t.lanes);
	munmap(r->t.proc.map, r->t.proc.size);
	free(r->ctl);
	munmap(r->image, r->image_size);
	munmap(r->code, RTLOCAL_CODE);
}

#endif
