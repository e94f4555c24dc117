/*
 * Trampolines: the code a patched site jumps to.  For each instruction the
 * patch covers, in order: a call into the runtime for the sites placed
 * BEFORE it, the instruction moved (relocated, or rebuilt when it is a
 * branch), a call for those placed AFTER it; then a jump back past the
 * patch.
 *
 * A moved call must leave the true return address on the stack (the callee
 * returns to the program, not here: nothing of ours is on a stack once
 * the call is made, so the trampoline can be freed while the callee runs),
 * so calls become a push of the return address and a jump.  The pushes use
 * lea and mov, which leave the flags alone.
 *
 * AFTER a branch means at its destination, as the ptrace backend has it:
 * the call into the runtime goes on the taken path and on the fall-through
 * path of a jcc, after the push of a call.  AFTER a ret or an indirect jump
 * runs just before it: the registers are those the destination sees, and
 * the plan's recipes are written for the site's address anyway.
 */
#include <errno.h>
#include <string.h>

#include "guestrt/hook/inproc/inproc_priv.h"
#include "guestrt/x86/x86_asm.h"

/* The call into the runtime: compiled code directly (it saves what it
 * uses), else the zone stub with the hook's descriptor. */
static void put_hook_call(struct xcode *o, uint64_t desc, uint64_t stub, bool jit)
{
	static const uint8_t skip[] = { 0x48, 0x8d, 0x64, 0x24, 0x80 };                  /* lea -0x80(%rsp), %rsp */
	static const uint8_t back[] = { 0x48, 0x8d, 0xa4, 0x24, 0x80, 0, 0, 0 }; /* lea 0x80(%rsp), %rsp */
	if (desc && jit) {
		xc_bytes(o, skip, sizeof(skip));
		xc_call(o, desc);
		xc_bytes(o, back, sizeof(back));
		return;
	}
	static const uint8_t pre[] = { 0x48, 0x8d, 0x64, 0x24, 0x80, /* lea -0x80(%rsp), %rsp */
				       0x50,                         /* push %rax */
				       0x48, 0xb8 };                 /* movabs $desc, %rax */
	static const uint8_t post[] = { 0x58,                                     /* pop %rax */
					0x48, 0x8d, 0xa4, 0x24, 0x80, 0, 0, 0 }; /* lea 0x80(%rsp), %rsp */
	if (!desc)
		return;
	xc_bytes(o, pre, sizeof(pre));
	xc_bytes(o, &desc, 8);
	xc_call(o, stub);
	xc_bytes(o, post, sizeof(post));
}

/* Push @ret without touching the flags. */
static void put_push_ret(struct xcode *o, uint64_t ret)
{
	static const uint8_t lea[] = { 0x48, 0x8d, 0x64, 0x24, 0xf8 }; /* lea -8(%rsp), %rsp */
	static const uint8_t lo[] = { 0xc7, 0x04, 0x24 };              /* movl $imm, (%rsp) */
	static const uint8_t hi[] = { 0xc7, 0x44, 0x24, 0x04 };        /* movl $imm, 4(%rsp) */
	uint32_t l = (uint32_t)ret, h = (uint32_t)(ret >> 32);
	xc_bytes(o, lea, sizeof(lea));
	xc_bytes(o, lo, sizeof(lo));
	xc_bytes(o, &l, 4);
	xc_bytes(o, hi, sizeof(hi));
	xc_bytes(o, &h, 4);
}

/* The hardware number of struct xflow_hook_regs' register @idx. */
static int hw_reg(unsigned idx)
{
	static const int8_t hw[] = { 15, 14, 13, 12, 5, 3, 11, 10, 9, 8, 0, 1, 2, 6, 7 };
	return idx < sizeof(hw) ? hw[idx] : idx == 19 ? 4 : -1;
}

/* One covered instruction and the hooks around it. */
static void put_insn(struct xcode *o, const struct xflow_insn *in, uint64_t before, uint64_t after, uint64_t stub,
		     bool jb, bool ja)
{
	uint64_t next = in->addr + in->len;
	uint8_t b[16];

	put_hook_call(o, before, stub, jb);
	switch (in->kind) {
	case XFLOW_INSN_EMU_NOP:
	case XFLOW_INSN_EMU_MOVRR:
		xc_bytes(o, in->bytes, in->len);
		put_hook_call(o, after, stub, ja);
		return;
	case XFLOW_INSN_EMU_JMP:
		put_hook_call(o, after, stub, ja);
		xc_jmp(o, in->target);
		return;
	case XFLOW_INSN_EMU_JCC: {
		if (!after) {
			xc_jcc(o, (enum xcc)in->cc, in->target);
			return;
		}
		/* jcc taken; <after>; jmp over; taken: <after>; jmp target */
		size_t taken = xc_jcc_fwd(o, (enum xcc)in->cc);
		put_hook_call(o, after, stub, ja);
		size_t over = xc_jmp_fwd(o);
		xc_land(o, taken);
		put_hook_call(o, after, stub, ja);
		xc_jmp(o, in->target);
		xc_land(o, over);
		return;
	}
	case XFLOW_INSN_EMU_CALL:
		put_push_ret(o, next);
		put_hook_call(o, after, stub, ja);
		xc_jmp(o, in->target);
		return;
	case XFLOW_INSN_EMU_CALLR: {
		int r = hw_reg(in->src);
		if (r < 0 || r == 4) {
			o->err = -ENOTSUP;
			return;
		}
		put_push_ret(o, next);
		put_hook_call(o, after, stub, ja);
		uint8_t j[3] = { 0x41, 0xff, (uint8_t)(0xe0 | (r & 7)) };
		xc_bytes(o, r >= 8 ? j : j + 1, r >= 8 ? 3 : 2);
		return;
	}
	case XFLOW_INSN_OOL:
		break;
	}
	if (in->call_mem) {
		/* call [mem]: push, then jmp [mem] (ModRM reg 2 -> 4).  The
		 * push moves rsp: an operand based on it would be off. */
		if (in->stack_mem) {
			o->err = -ENOTSUP;
			return;
		}
		put_push_ret(o, next);
		put_hook_call(o, after, stub, ja);
		if (xflow_insn_relocate(in, xc_here(o), b) < 0) {
			o->err = -ERANGE;
			return;
		}
		b[in->modrm_off] = (uint8_t)((b[in->modrm_off] & ~0x38) | (4 << 3));
		xc_bytes(o, b, in->len);
		return;
	}
	if (in->uncond)
		put_hook_call(o, after, stub, ja);
	if (xflow_insn_relocate(in, xc_here(o), b) < 0) {
		o->err = -ERANGE;
		return;
	}
	xc_bytes(o, b, in->len);
	if (!in->uncond)
		put_hook_call(o, after, stub, ja);
}

int ip_tramp_build(const struct ip_patch *p, const struct ip_hooks *h, uint64_t at, uint64_t stub, uint8_t *buf,
		   size_t max, uint64_t *entry)
{
	struct xcode o;
	xc_init(&o, buf, max, at);
	*entry = at;
	for (int i = 0; i < p->ninsns; i++)
		put_insn(&o, &p->insn[i], h->before[i], h->after[i], stub, h->jit_before[i], h->jit_after[i]);
	const struct xflow_insn *last = &p->insn[p->ninsns - 1];
	bool falls = !last->uncond && last->kind != XFLOW_INSN_EMU_JMP && last->kind != XFLOW_INSN_EMU_CALL &&
		     last->kind != XFLOW_INSN_EMU_CALLR && !last->call_mem;
	if (falls)
		xc_jmp(&o, p->addr + p->len);
	return o.err ? o.err : (int)o.n;
}

int ip_hook_desc(uint64_t addr, uint32_t when, const uint32_t *sites, uint32_t n, uint8_t *out, size_t max)
{
	size_t need = sizeof(struct xflow_rt_hook) + n * sizeof(uint32_t);
	if (need > max)
		return -ENOSPC;
	struct xflow_rt_hook h = { .addr = addr, .when = when, .nsites = n };
	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), sites, n * sizeof(uint32_t));
	return (int)((need + 7) & ~(size_t)7);
}
