/*
 * One x86-64 instruction, classified for moving it out of line: executed
 * in a scratch slot with its rip-relative displacement moved (as uprobes and
 * Kerninst do), emulated where that is exact and no slower (relative
 * branches, which cannot run elsewhere; nops and register moves), or refused
 * with a message (traps, syscalls, loops).  The runtime's only file that
 * includes capstone (the weaver's is weaver/jp/insn_decode.c).
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "guestrt/x86/x86_insn.h"

/* Index of a 64-bit general register in struct xflow_hook_regs seen as an
 * array of uint64_t, or -1. */
static int reg_index(x86_reg r)
{
	switch (r) {
	case X86_REG_R15: return 0;
	case X86_REG_R14: return 1;
	case X86_REG_R13: return 2;
	case X86_REG_R12: return 3;
	case X86_REG_RBP: return 4;
	case X86_REG_RBX: return 5;
	case X86_REG_R11: return 6;
	case X86_REG_R10: return 7;
	case X86_REG_R9: return 8;
	case X86_REG_R8: return 9;
	case X86_REG_RAX: return 10;
	case X86_REG_RCX: return 11;
	case X86_REG_RDX: return 12;
	case X86_REG_RSI: return 13;
	case X86_REG_RDI: return 14;
	case X86_REG_RSP: return 19;
	default: return -1;
	}
}

static int refuse(struct xflow_insn *out, char *err, size_t errlen, const char *why)
{
	snprintf(err, errlen, "0x%llx: cannot relocate '%s': %s", (unsigned long long)out->addr, out->text,
		 why);
	return -ENOTSUP;
}

static int classify(csh cs, const cs_insn *in, struct xflow_insn *out, char *err, size_t errlen)
{
	const cs_x86 *x = &in->detail->x86;

	switch (in->id) {
	case X86_INS_INT3:
		return refuse(out, err, errlen, "a breakpoint is already there");
	case X86_INS_SYSCALL:
	case X86_INS_SYSENTER:
	case X86_INS_INT:
	case X86_INS_INT1:
	case X86_INS_INTO:
		return refuse(out, err, errlen, "system calls and traps are not moved");
	case X86_INS_UD0:
	case X86_INS_UD2:
	case X86_INS_UD2B:
		return refuse(out, err, errlen, "an undefined instruction would fault in the scratch page");
	case X86_INS_LOOP:
	case X86_INS_LOOPE:
	case X86_INS_LOOPNE:
	case X86_INS_JRCXZ:
	case X86_INS_JECXZ:
	case X86_INS_JCXZ:
		return refuse(out, err, errlen, "relative loop branches are not emulated");
	case X86_INS_NOP:
	case X86_INS_ENDBR64:
		out->kind = XFLOW_INSN_EMU_NOP;
		return 0;
	default:
		break;
	}
	if (cs_insn_group(cs, in, CS_GRP_INT) || cs_insn_group(cs, in, CS_GRP_IRET) ||
	    cs_insn_group(cs, in, CS_GRP_PRIVILEGE))
		return refuse(out, err, errlen, "privileged, trapping or interrupt-return instruction");

	if (cs_insn_group(cs, in, CS_GRP_BRANCH_RELATIVE)) {
		if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
			return refuse(out, err, errlen, "relative branch of an unknown form");
		out->target = (uint64_t)x->operands[0].imm;
		if (in->id == X86_INS_JMP) {
			out->kind = XFLOW_INSN_EMU_JMP;
			out->uncond = 1;
		} else if (in->id == X86_INS_CALL) {
			out->kind = XFLOW_INSN_EMU_CALL;
		} else if ((x->opcode[0] & 0xf0) == 0x70) {
			out->kind = XFLOW_INSN_EMU_JCC;
			out->cc = x->opcode[0] & 0x0f;
		} else if (x->opcode[0] == 0x0f && (x->opcode[1] & 0xf0) == 0x80) {
			out->kind = XFLOW_INSN_EMU_JCC;
			out->cc = x->opcode[1] & 0x0f;
		} else {
			return refuse(out, err, errlen, "relative branch that is not jmp, call or jcc");
		}
		return 0;
	}
	/* A call through a register pushes the scratch address if moved; emulate
	 * it so the stack holds the true return address. */
	if (in->id == X86_INS_CALL && x->op_count == 1 && x->operands[0].type == X86_OP_REG) {
		int r = reg_index(x->operands[0].reg);
		if (r < 0)
			return refuse(out, err, errlen, "call through a register that is not 64-bit");
		out->kind = XFLOW_INSN_EMU_CALLR;
		out->src = (uint8_t)r;
		return 0;
	}
	if (in->id == X86_INS_MOV && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
	    x->operands[1].type == X86_OP_REG && x->operands[0].size == 8 && x->operands[1].size == 8) {
		int d = reg_index(x->operands[0].reg), s = reg_index(x->operands[1].reg);
		if (d >= 0 && s >= 0) {
			out->kind = XFLOW_INSN_EMU_MOVRR;
			out->dst = (uint8_t)d;
			out->src = (uint8_t)s;
			return 0;
		}
	}
	/* Everything else runs out of line.  A memory operand based on rip
	 * needs its displacement moved; capstone says where it is encoded. */
	out->kind = XFLOW_INSN_OOL;
	for (int i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];
		if (op->type == X86_OP_MEM && op->mem.base == X86_REG_RIP) {
			if (x->encoding.disp_offset == 0 || x->encoding.disp_size != 4)
				return refuse(out, err, errlen, "rip-relative operand without a 32-bit displacement");
			out->disp_off = x->encoding.disp_offset;
		}
		if (op->type == X86_OP_MEM && (op->mem.base == X86_REG_RSP || op->mem.index == X86_REG_RSP))
			out->stack_mem = 1;
		if (op->type == X86_OP_REG && op->reg == X86_REG_RIP)
			return refuse(out, err, errlen, "instruction reads rip");
	}
	if (in->id == X86_INS_CALL) {
		/* Through memory: a trampoline pushes the true return address
		 * and jumps through the same operand (ModRM's reg field 2 -> 4). */
		unsigned k = 0;
		while (k < in->size && (in->bytes[k] == 0x2e || in->bytes[k] == 0x3e || in->bytes[k] == 0x26 ||
					in->bytes[k] == 0x36 || in->bytes[k] == 0x64 || in->bytes[k] == 0x65 ||
					in->bytes[k] == 0x66 || in->bytes[k] == 0x67 || in->bytes[k] == 0xf2 ||
					in->bytes[k] == 0xf3 || (in->bytes[k] & 0xf0) == 0x40))
			k++;
		if (k + 1 >= in->size || in->bytes[k] != 0xff || ((in->bytes[k + 1] >> 3) & 7) != 2)
			return refuse(out, err, errlen, "call of an unknown form");
		out->call_mem = 1;
		out->modrm_off = (uint8_t)(k + 1);
	}
	switch (in->id) {
	case X86_INS_JMP:
	case X86_INS_LJMP:
	case X86_INS_RET:
	case X86_INS_RETF:
	case X86_INS_HLT:
		out->uncond = 1;
		break;
	default:
		break;
	}
	return 0;
}

int xflow_insn_decode(const uint8_t *code, size_t avail, uint64_t addr, struct xflow_insn *out, char *err,
		      size_t errlen)
{
	csh cs;
	cs_insn *in = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	out->addr = addr;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
		snprintf(err, errlen, "capstone cannot be opened");
		return -ENOMEM;
	}
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	if (cs_disasm(cs, code, avail, addr, 1, &in) != 1) {
		snprintf(err, errlen, "0x%llx: not a valid instruction (bytes %02x %02x %02x %02x)",
			 (unsigned long long)addr, code[0], avail > 1 ? code[1] : 0, avail > 2 ? code[2] : 0,
			 avail > 3 ? code[3] : 0);
		rc = -EINVAL;
		goto out;
	}
	out->len = (uint8_t)in->size;
	memcpy(out->bytes, in->bytes, in->size);
	snprintf(out->text, sizeof(out->text), "%.31s%s%.62s", in->mnemonic, in->op_str[0] ? " " : "", in->op_str);
	rc = classify(cs, in, out, err, errlen);
out:
	if (in)
		cs_free(in, 1);
	cs_close(&cs);
	return rc;
}

static int64_t moved_disp(const struct xflow_insn *in, uint64_t slot)
{
	int32_t disp;
	memcpy(&disp, in->bytes + in->disp_off, 4);
	/* The operand is addr + len + disp; from the slot it must stay there. */
	return (int64_t)disp + (int64_t)(in->addr - slot);
}

int xflow_insn_reaches(const struct xflow_insn *in, uint64_t slot)
{
	if (in->disp_off == 0)
		return 1;
	int64_t d = moved_disp(in, slot);
	return d >= INT32_MIN && d <= INT32_MAX;
}

int xflow_insn_relocate(const struct xflow_insn *in, uint64_t slot, uint8_t *out)
{
	memcpy(out, in->bytes, in->len);
	if (in->disp_off == 0)
		return 0;
	if (!xflow_insn_reaches(in, slot))
		return -ERANGE;
	int32_t disp = (int32_t)moved_disp(in, slot);
	memcpy(out + in->disp_off, &disp, 4);
	return 0;
}

int xflow_insn_cond(uint8_t cc, uint64_t f)
{
	int cf = f & 1, pf = (f >> 2) & 1, zf = (f >> 6) & 1, sf = (f >> 7) & 1, of = (f >> 11) & 1;
	int r;

	switch (cc >> 1) {
	case 0: r = of; break;
	case 1: r = cf; break;
	case 2: r = zf; break;
	case 3: r = cf | zf; break;
	case 4: r = sf; break;
	case 5: r = pf; break;
	case 6: r = sf != of; break;
	default: r = zf | (sf != of); break;
	}
	return (cc & 1) ? !r : r;
}

/* ---- the sweep ---------------------------------------------------------- */

/* The 64-bit register a general register of any width is part of. */
static x86_reg reg64(x86_reg r)
{
	static const x86_reg fam[][5] = {
		{X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL, X86_REG_AH},
		{X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL, X86_REG_BH},
		{X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL, X86_REG_CH},
		{X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, X86_REG_DH},
		{X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL, X86_REG_INVALID},
		{X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL, X86_REG_INVALID},
		{X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL, X86_REG_INVALID},
		{X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B, X86_REG_INVALID},
		{X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B, X86_REG_INVALID},
		{X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B, X86_REG_INVALID},
		{X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B, X86_REG_INVALID},
		{X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B, X86_REG_INVALID},
		{X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B, X86_REG_INVALID},
		{X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B, X86_REG_INVALID},
		{X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B, X86_REG_INVALID},
	};
	if (r == X86_REG_INVALID)
		return r;
	for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++)
		for (int k = 0; k < 5; k++)
			if (fam[i][k] == r)
				return fam[i][0];
	return r;
}

/* What the sweep remembers of the instructions before a jump. */
#define SCAN_BACK 12
struct seen {
	unsigned id;
	uint64_t next;  /* address after it */
	uint8_t nops;
	cs_x86_op op[2];
};

static const struct seen *back(const struct seen *h, unsigned n, unsigned k)
{
	return k < n && k < SCAN_BACK ? &h[(n - 1 - k) % SCAN_BACK] : NULL;
}

static bool same_mem(const cs_x86_op *a, const cs_x86_op *b)
{
	return a->type == X86_OP_MEM && b->type == X86_OP_MEM && a->mem.segment == b->mem.segment &&
	       a->mem.base == b->mem.base && a->mem.index == b->mem.index && a->mem.scale == b->mem.scale &&
	       a->mem.disp == b->mem.disp;
}

/* The bound of a table indexed by idx: `cmp idx, imm` then `ja` (imm + 1
 * entries) or `jae` (imm), the first such pair from the k-th instruction
 * back on (the jump itself not counted).  GCC also compares a switch value
 * in memory and loads idx from there after the branch (`cmp dword [m],
 * imm; ja; mov idx, [m]`): the compare of that same memory bounds it. */
static int64_t table_bound(const struct seen *h, unsigned n, unsigned k, x86_reg idx)
{
	const cs_x86_op *from = NULL; /* the memory idx was loaded from */
	for (unsigned j = k; j < SCAN_BACK; j++) {
		const struct seen *c = back(h, n, j), *after = back(h, n, j - 1);
		if (!c || !after)
			break;
		if (!from && c->id == X86_INS_MOV && c->nops == 2 && c->op[0].type == X86_OP_REG &&
		    reg64(c->op[0].reg) == idx && c->op[1].type == X86_OP_MEM)
			from = &c->op[1];
		bool on_idx = c->op[0].type == X86_OP_REG && reg64(c->op[0].reg) == idx;
		bool on_from = from && same_mem(&c->op[0], from);
		if (c->id == X86_INS_CMP && c->nops == 2 && (on_idx || on_from) && c->op[1].type == X86_OP_IMM &&
		    c->op[1].imm >= 0) {
			if (after->id == X86_INS_JA)
				return c->op[1].imm + 1;
			if (after->id == X86_INS_JAE)
				return c->op[1].imm;
			return -1;
		}
	}
	return -1;
}

/* A table whose base register was not set in the last SCAN_BACK
 * instructions: GCC keeps the base of a switch in a loop in a callee-saved
 * register, set once at the top of the function.  Resolved when the sweep
 * has seen every write to that register (scan_defs). */
struct pending_table {
	uint64_t at;      /* the jump */
	x86_reg base;
	int64_t count;
};

/* jmp reg: GCC's and clang's position-independent table,
 *	lea base, [rip + table]; movsxd r, dword [base + idx*4]; add r, base; jmp r
 * 1: reported; 2: the lea is further back, *pend says what to resolve. */
static int table_of_reg(const struct seen *h, unsigned n, x86_reg r, const struct xflow_insn_scan_ops *ops,
			void *ctx, struct pending_table *pend)
{
	for (unsigned k = 0; k < SCAN_BACK; k++) {
		const struct seen *add = back(h, n, k);
		if (!add)
			return 0;
		if (add->id != X86_INS_ADD || add->nops != 2 || add->op[0].type != X86_OP_REG ||
		    reg64(add->op[0].reg) != r || add->op[1].type != X86_OP_REG)
			continue;
		x86_reg base = reg64(add->op[1].reg);
		for (unsigned j = k + 1; j < SCAN_BACK; j++) {
			const struct seen *mv = back(h, n, j);
			if (!mv)
				return 0;
			if (mv->id != X86_INS_MOVSXD || mv->op[0].type != X86_OP_REG || reg64(mv->op[0].reg) != r ||
			    mv->op[1].type != X86_OP_MEM || reg64(mv->op[1].mem.base) != base || mv->op[1].mem.scale != 4)
				continue;
			x86_reg idx = reg64(mv->op[1].mem.index);
			for (unsigned i = j + 1; i < SCAN_BACK; i++) {
				const struct seen *lea = back(h, n, i);
				if (!lea)
					break;
				if (lea->id != X86_INS_LEA || lea->op[0].type != X86_OP_REG || reg64(lea->op[0].reg) != base ||
				    lea->op[1].type != X86_OP_MEM || lea->op[1].mem.base != X86_REG_RIP)
					continue;
				if (ops->table)
					ops->table(ctx, lea->next + (uint64_t)lea->op[1].mem.disp, 4,
						   table_bound(h, n, 1, idx));
				return 1;
			}
			*pend = (struct pending_table){ .base = base, .count = table_bound(h, n, 1, idx) };
			return 2;
		}
		return 0;
	}
	return 0;
}

/* Every write the sweep saw to each general register: the rip-relative
 * address a lea gave it, and whether anything else wrote it.  Pops do not
 * count: a pop restores the caller's value, which code after it cannot use
 * as a table, so no path from a pop can reach a jump through the table
 * without a write that does count. */
struct reg_defs {
	uint64_t lea[16];
	bool other[16];
};

static int gpr_slot(x86_reg r)
{
	static const x86_reg gpr[16] = { X86_REG_RAX, X86_REG_RCX, X86_REG_RDX, X86_REG_RBX,
					 X86_REG_RSP, X86_REG_RBP, X86_REG_RSI, X86_REG_RDI,
					 X86_REG_R8,  X86_REG_R9,  X86_REG_R10, X86_REG_R11,
					 X86_REG_R12, X86_REG_R13, X86_REG_R14, X86_REG_R15 };
	r = reg64(r);
	for (int i = 0; i < 16; i++)
		if (gpr[i] == r)
			return i;
	return -1;
}

static void scan_defs(csh cs, const cs_insn *in, struct reg_defs *d)
{
	const cs_x86 *x = &in->detail->x86;
	if (in->id == X86_INS_CALL) {
		/* What the callee may clobber, which capstone does not list. */
		static const int clobbered[] = { 0, 1, 2, 6, 7, 8, 9, 10, 11 };
		for (size_t i = 0; i < sizeof(clobbered) / sizeof(clobbered[0]); i++)
			d->other[clobbered[i]] = true;
	}
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;
	if (cs_regs_access(cs, in, rd, &nrd, wr, &nwr) != CS_ERR_OK) {
		for (int i = 0; i < 16; i++)
			d->other[i] = true;
		return;
	}
	for (unsigned i = 0; i < nwr; i++) {
		int k = gpr_slot(wr[i]);
		if (k < 0 || in->id == X86_INS_POP)
			continue;
		if (in->id == X86_INS_LEA && x->op_count == 2 && x->operands[1].type == X86_OP_MEM &&
		    x->operands[1].mem.base == X86_REG_RIP && x->operands[1].mem.index == X86_REG_INVALID &&
		    gpr_slot(x->operands[0].reg) == k && x->operands[0].size == 8) {
			uint64_t to = in->address + in->size + (uint64_t)x->operands[1].mem.disp;
			if (d->lea[k] && d->lea[k] != to)
				d->other[k] = true;
			d->lea[k] = to;
		} else {
			d->other[k] = true;
		}
	}
}

/* jmp reg as a tail call through a pointer: reg loaded from memory, then
 * the frame torn down (a pop, leave or add to rsp) before the jump.  A jump
 * inside a function keeps its frame. */
static int tail_call_of_reg(const struct seen *h, unsigned n, x86_reg r)
{
	bool epilogue = false;
	for (unsigned k = 0; k < SCAN_BACK; k++) {
		const struct seen *s = back(h, n, k);
		if (!s)
			return 0;
		if (s->id == X86_INS_POP || s->id == X86_INS_LEAVE ||
		    (s->id == X86_INS_ADD && s->nops == 2 && s->op[0].type == X86_OP_REG && s->op[0].reg == X86_REG_RSP)) {
			if (s->id == X86_INS_POP && s->op[0].type == X86_OP_REG && reg64(s->op[0].reg) == r)
				return 0;
			epilogue = true;
			continue;
		}
		if (s->nops >= 1 && s->op[0].type == X86_OP_REG && reg64(s->op[0].reg) == r && s->id != X86_INS_CMP &&
		    s->id != X86_INS_TEST && s->id != X86_INS_PUSH)
			return epilogue && s->id == X86_INS_MOV && s->nops == 2 && s->op[1].type == X86_OP_MEM;
	}
	return 0;
}

int xflow_insn_scan(const uint8_t *code, size_t len, uint64_t addr, const struct xflow_insn_scan_ops *ops,
		    void *ctx)
{
	csh cs;
	struct seen hist[SCAN_BACK];
	unsigned n = 0;
	int rc = 0;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return -ENOMEM;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	cs_insn *in = cs_malloc(cs);
	if (!in) {
		cs_close(&cs);
		return -ENOMEM;
	}
	const uint8_t *p = code;
	size_t left = len;
	uint64_t at = addr;
	struct reg_defs defs;
	struct pending_table pend[8];
	unsigned npend = 0;
	memset(&defs, 0, sizeof(defs));
	while (left > 0) {
		if (!cs_disasm_iter(cs, &p, &left, &at, in)) {
			/* Not code (padding of another kind, data): step a byte. */
			rc = -EINVAL;
			p++, left--, at++;
			n = 0;
			/* What it hides may write any register. */
			for (int i = 0; i < 16; i++)
				defs.other[i] = true;
			continue;
		}
		const cs_x86 *x = &in->detail->x86;
		bool rel = cs_insn_group(cs, in, CS_GRP_BRANCH_RELATIVE);
		if (rel && x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
			if (ops->target)
				ops->target(ctx, (uint64_t)x->operands[0].imm);
		} else if (in->id == X86_INS_JMP && x->op_count == 1) {
			const cs_x86_op *op = &x->operands[0];
			int known = 0;
			if (op->type == X86_OP_REG) {
				struct pending_table pt;
				known = table_of_reg(hist, n, reg64(op->reg), ops, ctx, &pt);
				if (known == 2 && npend < sizeof(pend) / sizeof(pend[0])) {
					pt.at = in->address;
					pend[npend++] = pt;
				} else if (known == 2) {
					known = 0;
				}
				known = known || tail_call_of_reg(hist, n, reg64(op->reg));
			}
			else if (op->type == X86_OP_MEM && op->mem.base == X86_REG_RIP && op->mem.index == X86_REG_INVALID)
				known = 1; /* a tail call through a pointer (the PLT's way) */
			else if (op->type == X86_OP_MEM && op->mem.base == X86_REG_INVALID && op->mem.scale == 8 &&
				 op->mem.index != X86_REG_INVALID) {
				/* An absolute table: jmp [table + idx*8]. */
				if (ops->table)
					ops->table(ctx, (uint64_t)op->mem.disp, 8, table_bound(hist, n, 1, reg64(op->mem.index)));
				known = 1;
			}
			if (!known && ops->indirect)
				ops->indirect(ctx, in->address);
		}
		struct seen *s = &hist[n++ % SCAN_BACK];
		s->id = in->id;
		s->next = in->address + in->size;
		s->nops = x->op_count < 2 ? x->op_count : 2;
		memcpy(s->op, x->operands, s->nops * sizeof(s->op[0]));
		scan_defs(cs, in, &defs);
	}
	/* A base written by one lea and nothing else (in the whole function,
	 * before the jump or after it, which a loop may bring first) holds
	 * that address wherever the jump runs. */
	for (unsigned i = 0; i < npend; i++) {
		int k = gpr_slot(pend[i].base);
		if (k >= 0 && defs.lea[k] && !defs.other[k]) {
			if (ops->table)
				ops->table(ctx, defs.lea[k], 4, pend[i].count);
		} else if (ops->indirect) {
			ops->indirect(ctx, pend[i].at);
		}
	}
	cs_free(in, 1);
	cs_close(&cs);
	return rc;
}
