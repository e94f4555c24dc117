/*
 * A target's seccomp filters (guestrt/hook/seccomp.c): the classic BPF
 * evaluator on hand-written programs and against the kernel's own verdict,
 * and the backends refusing, with the reason, to make a target run a
 * system call its filter would kill it for (issue 30, item 2), the target
 * running on.
 */
#include <criterion/criterion.h>
#include <linux/audit.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "gt.h"
#include "guestrt/hook/hook_priv.h"

#define LD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define LD_ARG(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))

static struct seccomp_data call(int nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
	return (struct seccomp_data){ .nr = nr, .arch = AUDIT_ARCH_X86_64, .args = { a0, a1, a2 } };
}

static uint32_t run(const struct sock_filter *p, size_t n, struct seccomp_data d)
{
	uint32_t action = 0xdeadbeef;
	cr_assert_eq(xflow_seccomp_run(p, n, &d, &action), 0, "a good program refused");
	return action;
}

#define RUN(prog, d) run(prog, sizeof(prog) / sizeof(prog[0]), d)
#define REFUSED(prog)                                                                                            \
	do {                                                                                                     \
		uint32_t a_;                                                                                     \
		struct seccomp_data d_ = call(1, 0, 0, 0);                                                       \
		cr_expect_eq(xflow_seccomp_run(prog, sizeof(prog) / sizeof(prog[0]), &d_, &a_), -EINVAL,        \
			     "%s: a bad program run", #prog);                                                    \
	} while (0)

Test(seccomp, runs_every_instruction)
{
	/* Kill memfd_create, fail mmap of executable memory, allow the rest. */
	struct sock_filter p[] = {
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_memfd_create, 0, 1),
		RET(SECCOMP_RET_KILL_PROCESS),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 0, 3),
		LD_ARG(2),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 4 /* PROT_EXEC */, 0, 1),
		RET(SECCOMP_RET_ERRNO | 1),
		RET(SECCOMP_RET_ALLOW),
	};
	cr_expect_eq(RUN(p, call(SYS_memfd_create, 0, 0, 0)), SECCOMP_RET_KILL_PROCESS);
	cr_expect_eq(RUN(p, call(SYS_mmap, 0, 4096, 5)), SECCOMP_RET_ERRNO | 1);
	cr_expect_eq(RUN(p, call(SYS_mmap, 0, 4096, 3)), SECCOMP_RET_ALLOW);
	cr_expect_eq(RUN(p, call(SYS_close, 3, 0, 0)), SECCOMP_RET_ALLOW);

	/* Arithmetic, scratch memory, X, JGT/JGE, JA, RET A: (nr * 3 + 1)
	 * kept in M[5]; mod 7 over 3 returns ERRNO | that, else A. */
	struct sock_filter q[] = {
		LD_NR,
		BPF_STMT(BPF_ALU | BPF_MUL | BPF_K, 3),
		BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 1),
		BPF_STMT(BPF_ST, 5),
		BPF_STMT(BPF_LDX | BPF_IMM, 7),
		BPF_STMT(BPF_ALU | BPF_MOD | BPF_X, 0),
		BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, 3, 0, 2),
		BPF_STMT(BPF_ALU | BPF_OR | BPF_K, SECCOMP_RET_ERRNO),
		BPF_STMT(BPF_RET | BPF_A, 0),
		BPF_STMT(BPF_LD | BPF_MEM, 5),
		BPF_STMT(BPF_MISC | BPF_TAX, 0),
		BPF_STMT(BPF_LD | BPF_IMM, SECCOMP_RET_TRACE),
		BPF_STMT(BPF_JMP | BPF_JA, 1),
		RET(SECCOMP_RET_KILL_THREAD),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_X, 0, 0, 1),
		BPF_STMT(BPF_RET | BPF_A, 0),
		RET(SECCOMP_RET_LOG),
	};
	/* nr 2: 7 % 7 = 0, not > 3: A = TRACE >= X = 7: TRACE. */
	cr_expect_eq(RUN(q, call(2, 0, 0, 0)), SECCOMP_RET_TRACE);
	/* nr 1: 4 % 7 = 4 > 3: ERRNO | 4. */
	cr_expect_eq(RUN(q, call(1, 0, 0, 0)), SECCOMP_RET_ERRNO | 4);

	/* Division by an X of 0 ends the program with 0: kill the thread. */
	struct sock_filter z[] = {
		BPF_STMT(BPF_LDX | BPF_IMM, 0),
		BPF_STMT(BPF_ALU | BPF_DIV | BPF_X, 0),
		RET(SECCOMP_RET_ALLOW),
	};
	cr_expect_eq(RUN(z, call(1, 0, 0, 0)), SECCOMP_RET_KILL_THREAD);
}

Test(seccomp, refuses_what_the_kernel_refuses)
{
	struct sock_filter no_ret[] = { LD_NR };
	struct sock_filter jump_out[] = { LD_NR, BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 5, 0), RET(0) };
	struct sock_filter ja_out[] = { BPF_STMT(BPF_JMP | BPF_JA, 1), RET(0) };
	struct sock_filter far_load[] = { BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 64), RET(0) };
	struct sock_filter odd_load[] = { BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 2), RET(0) };
	struct sock_filter half_load[] = { BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 0), RET(0) };
	struct sock_filter bad_mem[] = { BPF_STMT(BPF_ST, 16), RET(0) };
	struct sock_filter div0[] = { BPF_STMT(BPF_ALU | BPF_DIV | BPF_K, 0), RET(0) };
	struct sock_filter shift[] = { BPF_STMT(BPF_ALU | BPF_LSH | BPF_K, 32), RET(0) };
	struct sock_filter ret_x[] = { BPF_STMT(BPF_RET | BPF_X, 0) };
	struct sock_filter junk[] = { { 0xffff, 0, 0, 0 }, RET(0) };
	REFUSED(no_ret);
	REFUSED(jump_out);
	REFUSED(ja_out);
	REFUSED(far_load);
	REFUSED(odd_load);
	REFUSED(half_load);
	REFUSED(bad_mem);
	REFUSED(div0);
	REFUSED(shift);
	REFUSED(ret_x);
	REFUSED(junk);
	uint32_t a;
	struct seccomp_data d = call(1, 0, 0, 0);
	cr_expect_eq(xflow_seccomp_run(NULL, 0, &d, &a), -EINVAL);
}

/* What the kernel does with system call nr (args a0..a2) under @p, seen
 * from a child that installs it and makes the call: 0 allowed, an errno,
 * or 1000 + the signal that killed it. */
static int kernel_verdict(const struct sock_filter *p, size_t n, long nr, long a0, long a1, long a2)
{
	pid_t c = fork();
	cr_assert(c >= 0);
	if (c == 0) {
		struct sock_fprog fp = { .len = (unsigned short)n, .filter = (struct sock_filter *)p };
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp))
			_exit(99);
		long r = syscall(nr, a0, a1, a2);
		_exit(r < 0 ? errno : 0);
	}
	int st;
	cr_assert_eq(waitpid(c, &st, 0), c);
	cr_assert_neq(WIFEXITED(st) ? WEXITSTATUS(st) : 0, 99, "the kernel refused the filter");
	return WIFSIGNALED(st) ? 1000 + WTERMSIG(st) : WEXITSTATUS(st);
}

static int our_verdict(const struct sock_filter *p, size_t n, long nr, long a0, long a1, long a2)
{
	uint32_t action = run(p, n, call((int)nr, (uint64_t)a0, (uint64_t)a1, (uint64_t)a2));
	switch (action & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_ALLOW:
		return 0;
	case SECCOMP_RET_ERRNO:
		return (int)(action & SECCOMP_RET_DATA);
	case SECCOMP_RET_KILL_PROCESS:
	case SECCOMP_RET_KILL_THREAD:
	case SECCOMP_RET_TRAP:
		return 1000 + SIGSYS;
	default:
		return -1;
	}
}

Test(seccomp, agrees_with_the_kernel)
{
	/* getuid failed with errno 10 + the low bits of its first argument;
	 * getgid killed when its first argument is 5 or more (JGE X); the
	 * rest (getppid, the child's exit) allowed. */
	struct sock_filter p[] = {
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getuid, 0, 4),
		LD_ARG(0),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf),
		BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, SECCOMP_RET_ERRNO | 10),
		BPF_STMT(BPF_RET | BPF_A, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getgid, 0, 4),
		BPF_STMT(BPF_LDX | BPF_IMM, 5),
		LD_ARG(0),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_X, 0, 0, 1),
		RET(SECCOMP_RET_KILL_PROCESS),
		RET(SECCOMP_RET_ALLOW),
	};
	size_t n = sizeof(p) / sizeof(p[0]);
	const long cases[][2] = { { SYS_getppid, 0 }, { SYS_getuid, 3 }, { SYS_getuid, 0x24 }, { SYS_getgid, 4 },
				  { SYS_getgid, 5 },  { SYS_getgid, 9 } };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect_eq(our_verdict(p, n, cases[i][0], cases[i][1], 0, 0),
			     kernel_verdict(p, n, cases[i][0], cases[i][1], 0, 0), "call %ld (%ld): %d vs %d", cases[i][0],
			     cases[i][1], our_verdict(p, n, cases[i][0], cases[i][1], 0, 0), kernel_verdict(p, n, cases[i][0], cases[i][1], 0, 0));
}

/* The fixture under a filter doing @action at @callname, and a backend
 * attached to it: the attach (inproc) or a site (ptrace) refused with a
 * message naming @callname, the fixture running on to its end. */
static void refused(const struct xflow_hook_backend_ops *ops, const char *callname, const char *action,
		    const char *want)
{
	gt_need_ptrace();
	const char *bin = gt_build("sc_fx", "-O1");
	struct gt_proc p;
	char line[256], outs[256];
	gt_start(&p, bin, callname, action, "");
	gt_line(&p, line, sizeof(line));
	cr_assert_str_eq(line, "ready\n");
	struct xflow_hook *h;
	struct xflow_hook_target *t = NULL;
	cr_assert_eq(xflow_hook_new(ops, NULL, &h), 0);
	int rc = xflow_hook_attach(h, p.pid, &t);
	if (rc == 0) {
		/* The ptrace backend: its first out-of-line site needs a scratch
		 * page (main's first instruction moves out of line). */
		uint64_t at = gt_addr(p.pid, bin, "main");
		rc = xflow_hook_site_add(t, at, XFLOW_HOOK_BEFORE, gt_count, &(uint64_t){ 0 }, NULL);
	}
	cr_expect_eq(rc, -EPERM, "%s: not refused (%d): %s", ops->name, rc, xflow_hook_last_error(h));
	cr_expect(strstr(xflow_hook_last_error(h), want), "%s: the reason is '%s'", ops->name, xflow_hook_last_error(h));
	cr_log_info("%s: %s", ops->name, xflow_hook_last_error(h));
	xflow_hook_free(h);
	gt_send(&p);
	int st = gt_finish(&p, outs, sizeof(outs));
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the fixture ended with status %x", st);
	cr_expect_str_eq(outs, "out: 8999991\n");
}

Test(seccomp, inproc_refuses_a_call_the_filter_kills, .timeout = 60)
{
	refused(&xflow_hook_inproc_ops, "memfd", "kill",
		"would kill the process at memfd_create: the runtime is not mapped in (the ptrace backend's calls are "
		"allowed)");
}

Test(seccomp, inproc_refuses_a_call_the_filter_traps_or_fails, .timeout = 60)
{
	refused(&xflow_hook_inproc_ops, "memfd", "trap", "would raise SIGSYS at memfd_create");
	refused(&xflow_hook_inproc_ops, "memfd", "errno", "would fail with an errno at memfd_create");
}

Test(seccomp, both_backends_refuse_executable_mmap, .timeout = 60)
{
	refused(&xflow_hook_inproc_ops, "xmmap", "kill", "would kill the process at mmap: the runtime is not mapped in");
	refused(&xflow_hook_ptrace_ops, "xmmap", "kill", "would kill the process at mmap");
}
