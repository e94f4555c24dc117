/*
 * Instruction decoding with capstone 4 (Debian 12: 4.0.2).  The weaver's
 * only file that includes capstone (the runtime's is guestrt/x86/insn_reloc.c):
 * what the rest of the weaver needs of an
 * instruction is in struct jp_insn, in DWARF register numbers.
 *
 * A function's code is decoded linearly over its address ranges.  Linear
 * sweep is right for compiler output inside one function's DWARF ranges
 * (no data in .text on x86-64 with gcc or clang); if bytes do not decode,
 * the rest of that range is dropped and the code is marked truncated.
 */
#include "weaver/jp/joinpoint.h"

#include <capstone/capstone.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Capstone register → DWARF number, for every width of the 16 GPRs. */
static uint8_t reg_dwarf(unsigned r)
{
	switch (r) {
	case X86_REG_RAX: case X86_REG_EAX: case X86_REG_AX: case X86_REG_AL: case X86_REG_AH: return 0;
	case X86_REG_RDX: case X86_REG_EDX: case X86_REG_DX: case X86_REG_DL: case X86_REG_DH: return 1;
	case X86_REG_RCX: case X86_REG_ECX: case X86_REG_CX: case X86_REG_CL: case X86_REG_CH: return 2;
	case X86_REG_RBX: case X86_REG_EBX: case X86_REG_BX: case X86_REG_BL: case X86_REG_BH: return 3;
	case X86_REG_RSI: case X86_REG_ESI: case X86_REG_SI: case X86_REG_SIL: return 4;
	case X86_REG_RDI: case X86_REG_EDI: case X86_REG_DI: case X86_REG_DIL: return 5;
	case X86_REG_RBP: case X86_REG_EBP: case X86_REG_BP: case X86_REG_BPL: return 6;
	case X86_REG_RSP: case X86_REG_ESP: case X86_REG_SP: case X86_REG_SPL: return 7;
	case X86_REG_R8: case X86_REG_R8D: case X86_REG_R8W: case X86_REG_R8B: return 8;
	case X86_REG_R9: case X86_REG_R9D: case X86_REG_R9W: case X86_REG_R9B: return 9;
	case X86_REG_R10: case X86_REG_R10D: case X86_REG_R10W: case X86_REG_R10B: return 10;
	case X86_REG_R11: case X86_REG_R11D: case X86_REG_R11W: case X86_REG_R11B: return 11;
	case X86_REG_R12: case X86_REG_R12D: case X86_REG_R12W: case X86_REG_R12B: return 12;
	case X86_REG_R13: case X86_REG_R13D: case X86_REG_R13W: case X86_REG_R13B: return 13;
	case X86_REG_R14: case X86_REG_R14D: case X86_REG_R14W: case X86_REG_R14B: return 14;
	case X86_REG_R15: case X86_REG_R15D: case X86_REG_R15W: case X86_REG_R15B: return 15;
	case X86_REG_RIP: case X86_REG_EIP: return JP_REG_RIP;
	default: return JP_REG_NONE;
	}
}

const char *jp_reg_name(unsigned r)
{
	static const char *const names[JP_NREGS] = {
		"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
		"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip",
	};
	return r < JP_NREGS ? names[r] : "?";
}

/* Registers a call may change (System V AMD64): the caller-saved ones. */
#define CALL_CLOBBERS ((1u << 0) | (1u << 1) | (1u << 2) | (1u << 4) | (1u << 5) | \
		       (1u << 8) | (1u << 9) | (1u << 10) | (1u << 11))

static int cs_open_x86(csh *h)
{
	if (cs_open(CS_ARCH_X86, CS_MODE_64, h) != CS_ERR_OK)
		return -ENOSYS;
	cs_option(*h, CS_OPT_DETAIL, CS_OPT_ON);
	return 0;
}

/*
 * Does operand @k (a memory operand) of @ci read or write memory?  Capstone
 * 4's access flags cannot be trusted either way: it marks the destination
 * of many stores as read only (movups, movdqa, movq, movnti, movbe, the
 * pextr and vextract families, AVX moves and scatters, cmpxchg, x87 stores)
 * and the first operand of a few compares as written.  The operand's place
 * decides instead: in Intel order a memory source is never first, and a
 * first operand is the destination, written, and read too where Capstone
 * says so (add [m], r) or the instruction is known to (cmpxchg).  Only the
 * compares and bit tests read a first operand they do not write.  One
 * operand alone (push, inc, fstp) has no place to go by: Capstone's flags,
 * with the x87 stores it gets wrong put right.
 */
static uint8_t mem_access(const cs_insn *ci, unsigned k)
{
	const cs_x86 *x = &ci->detail->x86;
	uint8_t cs = (x->operands[k].access & CS_AC_READ ? JP_ACC_READ : 0) |
		     (x->operands[k].access & CS_AC_WRITE ? JP_ACC_WRITE : 0);
	switch (ci->id) {
	case X86_INS_TEST: case X86_INS_CMP: case X86_INS_BT: case X86_INS_UCOMISS:
	case X86_INS_UCOMISD: case X86_INS_COMISS: case X86_INS_COMISD: case X86_INS_PUSH:
		return JP_ACC_READ;
	case X86_INS_CMPXCHG: case X86_INS_CMPXCHG8B: case X86_INS_CMPXCHG16B:
		return JP_ACC_READ | JP_ACC_WRITE;
	case X86_INS_FST: case X86_INS_FSTP: case X86_INS_FIST: case X86_INS_FISTP:
	case X86_INS_FISTTP: case X86_INS_FBSTP:
		return JP_ACC_WRITE;
	default:
		break;
	}
	if (k > 0)
		return JP_ACC_READ;
	if (x->op_count >= 2)
		return (uint8_t)(JP_ACC_WRITE | (cs & JP_ACC_READ && cs & JP_ACC_WRITE ? JP_ACC_READ : 0));
	return cs;
}

static void fill(csh h, const cs_insn *ci, struct jp_insn *o)
{
	memset(o, 0, sizeof(*o));
	o->addr = ci->address;
	o->len = (uint8_t)ci->size;
	o->base = o->index = o->dst = o->src = JP_REG_NONE;
	const cs_x86 *x = &ci->detail->x86;
	unsigned id = ci->id;
	bool is_jmp = cs_insn_group(h, ci, CS_GRP_JUMP);
	if (cs_insn_group(h, ci, CS_GRP_CALL))
		o->kind = JP_I_CALL;
	else if (cs_insn_group(h, ci, CS_GRP_RET) || id == X86_INS_RET || id == X86_INS_RETF)
		o->kind = JP_I_RET;
	else if (id == X86_INS_JMP || id == X86_INS_LJMP)
		o->kind = JP_I_JMP;
	else if (is_jmp)
		o->kind = JP_I_JCC;
	else if (id == X86_INS_MOV || id == X86_INS_MOVABS)
		o->kind = JP_I_MOV;
	else if (id == X86_INS_LEA)
		o->kind = JP_I_LEA;
	else if (id == X86_INS_NOP || id == X86_INS_PREFETCH || id == X86_INS_PREFETCHNTA ||
		 id == X86_INS_PREFETCHT0 || id == X86_INS_PREFETCHT1 || id == X86_INS_PREFETCHT2 ||
		 id == X86_INS_PREFETCHW || id == X86_INS_CLFLUSH)
		o->kind = JP_I_NOMEM;
	else if (id == X86_INS_XCHG && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
		 x->operands[1].type == X86_OP_REG && x->operands[0].reg == x->operands[1].reg)
		o->kind = JP_I_NOMEM;     /* xchg ax, ax: a two-byte nop */
	else if (id == X86_INS_HLT || id == X86_INS_UD2 || id == X86_INS_INT3)
		o->kind = JP_I_HALT;
	else if ((id == X86_INS_ADD || id == X86_INS_SUB || id == X86_INS_SHL) && x->op_count == 2 &&
		 x->operands[0].type == X86_OP_REG &&
		 (x->operands[1].type == X86_OP_REG || x->operands[1].type == X86_OP_IMM) &&
		 (id != X86_INS_SHL || x->operands[1].type == X86_OP_IMM) &&
		 (id != X86_INS_SUB || x->operands[1].type == X86_OP_IMM)) {
		o->kind = id == X86_INS_SHL ? JP_I_SHL : JP_I_ADD;
		o->dst = reg_dwarf(x->operands[0].reg);
		o->dst_size = x->operands[0].size;
		if (x->operands[1].type == X86_OP_REG)
			o->src = reg_dwarf(x->operands[1].reg);
		else
			o->imm = id == X86_INS_SUB ? -x->operands[1].imm : x->operands[1].imm;
	}
	else
		o->kind = JP_I_OTHER;
	for (unsigned i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];
		if (op->type == X86_OP_MEM && !o->has_mem && op->mem.segment == X86_REG_INVALID) {
			o->has_mem = 1;
			o->base = reg_dwarf(op->mem.base);
			o->index = reg_dwarf(op->mem.index);
			o->scale = (uint8_t)op->mem.scale;
			o->disp = op->mem.disp;
			o->msize = op->size;
			o->macc = mem_access(ci, i);
			if (op->mem.base != X86_REG_INVALID && o->base == JP_REG_NONE)
				o->has_mem = 0;      /* a base we do not model */
		} else if (op->type == X86_OP_MEM) {
			o->has_mem = 2;          /* segment-relative or a second memory operand */
		}
		if (op->type == X86_OP_IMM && (o->kind == JP_I_CALL || o->kind == JP_I_JMP ||
					       o->kind == JP_I_JCC))
			o->target = (uint64_t)op->imm;
	}
	if (o->kind == JP_I_LEA || o->kind == JP_I_NOMEM)
		o->macc = 0;
	/* rep stos/movs/...: the extent is a count in rcx, not the operand
	 * size; such a site would claim a member it runs past. */
	if (x->prefix[0] == X86_PREFIX_REP || x->prefix[0] == X86_PREFIX_REPE ||
	    x->prefix[0] == X86_PREFIX_REPNE)
		o->has_mem = o->has_mem ? 2 : 0;
	/* Any instruction writing a register first operand: its width tells
	 * the typer a 32-bit result is a plain (zero-extended) integer. */
	if (o->dst == JP_REG_NONE && x->op_count >= 1 && x->operands[0].type == X86_OP_REG &&
	    (x->operands[0].access & CS_AC_WRITE)) {
		o->dst = reg_dwarf(x->operands[0].reg);
		o->dst_size = x->operands[0].size;
	}
	if ((o->kind == JP_I_MOV || o->kind == JP_I_LEA) && x->op_count == 2 &&
	    x->operands[0].type == X86_OP_REG) {
		o->dst = reg_dwarf(x->operands[0].reg);
		o->dst_size = x->operands[0].size;
		if (x->operands[1].type == X86_OP_REG)
			o->src = reg_dwarf(x->operands[1].reg);
	}
	/* Every GPR the instruction writes, explicit or implicit. */
	cs_regs rr, ww;
	uint8_t nr = 0, nw = 0;
	if (cs_regs_access(h, ci, rr, &nr, ww, &nw) == CS_ERR_OK)
		for (unsigned i = 0; i < nw; i++) {
			uint8_t d = reg_dwarf(ww[i]);
			if (d < 16)
				o->wregs |= (uint16_t)(1u << d);
		}
	if (o->kind == JP_I_CALL)
		o->wregs |= CALL_CLOBBERS;
}

static int insn_cmp(const void *a, const void *b)
{
	const struct jp_insn *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int jp_code_decode(const struct jp_elf *e, const struct jp_range *ranges, size_t nranges,
		   struct jp_code *out, struct jp_err *err)
{
	memset(out, 0, sizeof(*out));
	csh h;
	if (cs_open_x86(&h) != 0) {
		snprintf(err->msg, sizeof(err->msg), "capstone: cannot open an x86-64 decoder");
		return -ENOSYS;
	}
	size_t cap = 0;
	cs_insn *ci = cs_malloc(h);
	if (!ci) {
		cs_close(&h);
		return -ENOMEM;
	}
	for (size_t r = 0; r < nranges; r++) {
		size_t avail = 0;
		const uint8_t *code = jp_elf_code(e, ranges[r].lo, &avail);
		uint64_t want = ranges[r].hi - ranges[r].lo;
		if (!code) {
			out->truncated = true;
			continue;
		}
		size_t size = avail < want ? avail : (size_t)want;
		if (size < want)
			out->truncated = true;
		uint64_t addr = ranges[r].lo;
		while (size > 0 && cs_disasm_iter(h, &code, &size, &addr, ci)) {
			if (out->ninsns == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				struct jp_insn *nv = realloc(out->insns, ncap * sizeof(*nv));
				if (!nv) {
					cs_free(ci, 1);
					cs_close(&h);
					jp_code_free(out);
					return -ENOMEM;
				}
				out->insns = nv;
				cap = ncap;
			}
			fill(h, ci, &out->insns[out->ninsns++]);
		}
		if (size > 0)
			out->truncated = true;
	}
	cs_free(ci, 1);
	cs_close(&h);
	if (nranges > 1 && out->ninsns > 1)
		qsort(out->insns, out->ninsns, sizeof(*out->insns), insn_cmp);
	/* Basic blocks: a leader starts the code, follows a branch, or is a
	 * direct branch target.  Indirect targets (jump tables) are unknown;
	 * access_find.c stays conservative across them by only following a
	 * register back over instructions that cannot be one (see there). */
	for (size_t i = 0; i < out->ninsns; i++) {
		struct jp_insn *in = &out->insns[i];
		if (i == 0)
			in->leader = true;
		if (i > 0 && out->insns[i - 1].addr + out->insns[i - 1].len != in->addr)
			in->leader = true;
		if ((in->kind == JP_I_JMP || in->kind == JP_I_JCC || in->kind == JP_I_RET ||
		     in->kind == JP_I_HALT) && i + 1 < out->ninsns)
			out->insns[i + 1].leader = true;
		if (in->kind == JP_I_JMP && !in->target)
			out->has_indirect = true;
		if ((in->kind == JP_I_JMP || in->kind == JP_I_JCC) && in->target) {
			struct jp_insn key = { .addr = in->target };
			struct jp_insn *t = bsearch(&key, out->insns, out->ninsns, sizeof(key), insn_cmp);
			if (t) {
				t->leader = true;
				t->jtarget = true;
			}
		}
	}
	/* Predecessors, for following a register back across blocks: the
	 * previous instruction unless it ends its block, and every direct
	 * branch here.  Padding after an unconditional jump or a return (nops
	 * nothing jumps to) is dead, not a way into the next block.  With an
	 * indirect jump anywhere, blocks may have entries nobody can see:
	 * then no instruction has predecessors. */
	uint32_t *cnt = calloc(out->ninsns + 1, sizeof(*cnt));
	if (!cnt) {
		jp_code_free(out);
		return -ENOMEM;
	}
	int32_t *tgt = malloc((out->ninsns + 1) * sizeof(*tgt));
	bool *ft = calloc(out->ninsns + 1, sizeof(*ft));
	if (!tgt || !ft) {
		free(cnt);
		free(tgt);
		free(ft);
		jp_code_free(out);
		return -ENOMEM;
	}
	bool dead = false;
	size_t total = 0;
	for (size_t i = 0; i < out->ninsns; i++) {
		struct jp_insn *in = &out->insns[i];
		tgt[i] = -1;
		bool prev_ends = i > 0 && (out->insns[i - 1].kind == JP_I_JMP || out->insns[i - 1].kind == JP_I_RET ||
					   out->insns[i - 1].kind == JP_I_HALT);
		bool this_dead = !in->jtarget && (in->kind == JP_I_NOMEM || in->kind == JP_I_HALT) &&
				 (prev_ends || dead);
		bool prev_dead = dead;
		dead = this_dead;
		if (i > 0 && out->insns[i - 1].addr + out->insns[i - 1].len == in->addr && !prev_ends &&
		    !prev_dead) {
			ft[i] = true;
			cnt[i]++;
			total++;
		}
		if ((in->kind == JP_I_JMP || in->kind == JP_I_JCC) && in->target) {
			struct jp_insn key = { .addr = in->target };
			struct jp_insn *t = bsearch(&key, out->insns, out->ninsns, sizeof(key), insn_cmp);
			if (t) {
				tgt[i] = (int32_t)(t - out->insns);
				cnt[tgt[i]]++;
				total++;
			}
		}
	}
	out->preds = malloc((total + 1) * sizeof(*out->preds));
	if (!out->preds) {
		free(cnt);
		free(tgt);
		free(ft);
		jp_code_free(out);
		return -ENOMEM;
	}
	uint32_t at = 0;
	for (size_t i = 0; i < out->ninsns; i++) {
		out->insns[i].pred0 = at;
		out->insns[i].npred = out->has_indirect ? 0 : cnt[i];
		at += cnt[i];
		cnt[i] = 0;
	}
	for (size_t i = 0; i < out->ninsns; i++) {
		if (ft[i])
			out->preds[out->insns[i].pred0 + cnt[i]++] = (uint32_t)(i - 1);
		if (tgt[i] >= 0)
			out->preds[out->insns[tgt[i]].pred0 + cnt[tgt[i]]++] = (uint32_t)i;
	}
	free(cnt);
	free(tgt);
	free(ft);
	return 0;
}

void jp_code_free(struct jp_code *c)
{
	free(c->insns);
	free(c->preds);
	memset(c, 0, sizeof(*c));
}

int jp_insn_text(const struct jp_elf *e, uint64_t addr, char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	size_t avail = 0;
	const uint8_t *code = jp_elf_code(e, addr, &avail);
	if (!code)
		return -ENOENT;
	csh h;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
		return -ENOSYS;
	cs_insn *ci = NULL;
	size_t n = cs_disasm(h, code, avail < 16 ? avail : 16, addr, 1, &ci);
	int rc = -EINVAL;
	if (n == 1) {
		snprintf(buf, len, "%s%s%s", ci->mnemonic, ci->op_str[0] ? " " : "", ci->op_str);
		rc = 0;
	}
	if (ci)
		cs_free(ci, n);
	cs_close(&h);
	return rc;
}
