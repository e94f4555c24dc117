/*
 * One x86-64 instruction, classified for moving it out of line: executed
 * in a scratch slot with its rip-relative displacement moved (as uprobes and
 * Kerninst do), emulated where that is exact and no slower (relative
 * branches, which cannot run elsewhere; nops and register moves), or refused
 * with a message (traps, syscalls, loops).  The only file that includes
 * capstone.
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "guestrt/guestrt_priv.h"

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
		if (op->type == X86_OP_REG && op->reg == X86_REG_RIP)
			return refuse(out, err, errlen, "instruction reads rip");
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
