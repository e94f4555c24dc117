/*
 * A target's seccomp filters, read through ptrace and run here on the
 * system calls we are about to make it perform: a filter that kills on one
 * of them (or traps, or fails it) must stop us before the call, not kill
 * the target (issue 30).
 *
 * The filters are classic BPF, run as the kernel runs them (see the
 * kernel's Documentation/userspace-api/seccomp_filter.rst and
 * networking/filter.rst): 32-bit A and X, 16 scratch words, loads from
 * struct seccomp_data only, forward jumps only.  The words come from the
 * target, which we do not trust: every instruction, jump and offset is
 * checked, and a program the kernel would have refused is refused here.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>

#include "guestrt/hook/hook_priv.h"

#ifndef PTRACE_SECCOMP_GET_FILTER
#define PTRACE_SECCOMP_GET_FILTER 0x420c
#endif

int xflow_seccomp_run(const struct sock_filter *prog, size_t n, const struct seccomp_data *d, uint32_t *action)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };
	unsigned char data[sizeof(*d)];
	memcpy(data, d, sizeof(data));
	if (n == 0 || n > BPF_MAXINSNS)
		return -EINVAL;
	/* Jumps only go forward: at most n instructions run. */
	for (size_t pc = 0; pc < n; pc++) {
		const struct sock_filter *f = &prog[pc];
		uint32_t k = f->k, src = BPF_SRC(f->code) == BPF_X ? x : k;
		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (k >= sizeof(data) || k % 4)
				return -EINVAL;
			memcpy(&a, data + k, 4);
			continue;
		case BPF_LD | BPF_W | BPF_LEN:
			a = sizeof(data);
			continue;
		case BPF_LDX | BPF_W | BPF_LEN:
			x = sizeof(data);
			continue;
		case BPF_LD | BPF_IMM:
			a = k;
			continue;
		case BPF_LDX | BPF_IMM:
			x = k;
			continue;
		case BPF_LD | BPF_MEM:
		case BPF_LDX | BPF_MEM:
		case BPF_ST:
		case BPF_STX:
			if (k >= BPF_MEMWORDS)
				return -EINVAL;
			if (f->code == (BPF_LD | BPF_MEM))
				a = mem[k];
			else if (f->code == (BPF_LDX | BPF_MEM))
				x = mem[k];
			else
				mem[k] = f->code == BPF_ST ? a : x;
			continue;
		case BPF_MISC | BPF_TAX:
			x = a;
			continue;
		case BPF_MISC | BPF_TXA:
			a = x;
			continue;
		case BPF_RET | BPF_K:
			*action = k;
			return 0;
		case BPF_RET | BPF_A:
			*action = a;
			return 0;
		case BPF_JMP | BPF_JA:
			if (k >= n - pc - 1)
				return -EINVAL;
			pc += k;
			continue;
		default:
			break;
		}
		if (BPF_CLASS(f->code) == BPF_ALU) {
			switch (BPF_OP(f->code)) {
			case BPF_ADD: a += src; break;
			case BPF_SUB: a -= src; break;
			case BPF_MUL: a *= src; break;
			case BPF_OR: a |= src; break;
			case BPF_AND: a &= src; break;
			case BPF_XOR: a ^= src; break;
			case BPF_LSH:
			case BPF_RSH:
				/* A constant must be under 32; X is taken mod 32. */
				if (BPF_SRC(f->code) == BPF_K && k >= 32)
					return -EINVAL;
				a = BPF_OP(f->code) == BPF_LSH ? a << (src & 31) : a >> (src & 31);
				break;
			case BPF_NEG: a = -a; break;
			case BPF_DIV:
			case BPF_MOD:
				/* The kernel refuses a constant 0 and ends the
				 * program with 0 (kill the thread) on X = 0. */
				if (src == 0) {
					if (BPF_SRC(f->code) == BPF_K)
						return -EINVAL;
					*action = 0;
					return 0;
				}
				a = BPF_OP(f->code) == BPF_DIV ? a / src : a % src;
				break;
			default:
				return -EINVAL;
			}
			continue;
		}
		if (BPF_CLASS(f->code) != BPF_JMP || f->jt >= n - pc - 1 || f->jf >= n - pc - 1)
			return -EINVAL;
		bool take;
		switch (BPF_OP(f->code)) {
		case BPF_JEQ: take = a == src; break;
		case BPF_JGT: take = a > src; break;
		case BPF_JGE: take = a >= src; break;
		case BPF_JSET: take = (a & src) != 0; break;
		default: return -EINVAL;
		}
		pc += take ? f->jt : f->jf;
	}
	return -EINVAL; /* ran off its end without a return */
}

/* Lower is stronger, as the kernel compares them (signed). */
static int32_t precedence(uint32_t action)
{
	return (int32_t)(action & SECCOMP_RET_ACTION_FULL);
}

const char *xflow_seccomp_action_name(uint32_t action)
{
	switch (action & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_KILL_PROCESS: return "kill the process";
	case SECCOMP_RET_KILL_THREAD: return "kill the thread";
	case SECCOMP_RET_TRAP: return "raise SIGSYS";
	case SECCOMP_RET_ERRNO: return "fail with an errno";
	case SECCOMP_RET_USER_NOTIF: return "wait for its supervisor";
	case SECCOMP_RET_TRACE: return "stop for a seccomp tracer";
	case SECCOMP_RET_LOG: return "log and allow";
	case SECCOMP_RET_ALLOW: return "allow";
	default: return "an unknown action (the kernel kills)";
	}
}

/* The Seccomp: line of /proc/PID/task/TID/status: 0, 1 (strict), 2
 * (filters), or -errno. */
static int seccomp_mode(pid_t tid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	int mode = -ENOENT;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Seccomp: %d", &mode) == 1)
			break;
	fclose(f);
	return mode;
}

int xflow_seccomp_check(pid_t tid, const struct seccomp_data *d, const char *call, char *err, size_t errlen)
{
	int mode = seccomp_mode(tid);
	if (mode <= 0)
		return 0; /* none, or it cannot be read: a thread gone, found out later */
	if (mode == 1) {
		snprintf(err, errlen, "thread %d is in seccomp's strict mode: %s would kill it", (int)tid, call);
		return -EPERM;
	}
	struct sock_filter *prog = malloc(BPF_MAXINSNS * sizeof(*prog));
	uint32_t verdict = SECCOMP_RET_ALLOW;
	int rc = 0;
	if (!prog)
		return -ENOMEM;
	/* Index 0 is the newest filter; every one runs, the strongest action
	 * wins. */
	for (unsigned long i = 0;; i++) {
		long n = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)i, NULL);
		if (n < 0 && errno == ENOENT && i > 0)
			break;
		if (n <= 0 || n > BPF_MAXINSNS ||
		    ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)i, prog) != n) {
			int e = n == 0 ? EINVAL : errno;
			snprintf(err, errlen, "thread %d has a seccomp filter we cannot read (%s%s): %s could be refused",
				 (int)tid, strerror(e), e == EACCES || e == EPERM ? ", CAP_SYS_ADMIN needed" : "",
				 call);
			rc = -EACCES;
			break;
		}
		uint32_t action;
		if (xflow_seccomp_run(prog, (size_t)n, d, &action) < 0) {
			snprintf(err, errlen, "thread %d: its seccomp filter %lu is not a program the kernel runs", (int)tid,
				 i);
			rc = -EINVAL;
			break;
		}
		if (precedence(action) < precedence(verdict))
			verdict = action;
	}
	free(prog);
	if (rc < 0)
		return rc;
	uint32_t act = verdict & SECCOMP_RET_ACTION_FULL;
	if (act == SECCOMP_RET_ALLOW || act == SECCOMP_RET_LOG)
		return 0;
	snprintf(err, errlen, "thread %d's seccomp filter would %s at %s", (int)tid, xflow_seccomp_action_name(verdict),
		 call);
	return -EPERM;
}
