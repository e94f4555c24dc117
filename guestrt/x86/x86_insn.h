/*
 * One x86-64 instruction decoded to be moved out of line or relocated
 * (insn_reloc.c), and a sweep of a function's code for where control can
 * go.  The encoder that writes machine code is x86_asm.h.
 */
#ifndef XFLOW_GUESTRT_X86_X86_INSN_H
#define XFLOW_GUESTRT_X86_X86_INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum xflow_insn_kind {
	XFLOW_INSN_OOL = 0,   /* executed out of line (rip-relative disp fixed) */
	XFLOW_INSN_EMU_NOP,   /* nop, endbr64: rip += len */
	XFLOW_INSN_EMU_JMP,   /* jmp rel: rip = target */
	XFLOW_INSN_EMU_JCC,   /* jcc rel: rip = cond ? target : next */
	XFLOW_INSN_EMU_CALL,  /* call rel32: push next, rip = target */
	XFLOW_INSN_EMU_CALLR, /* call r64: push next, rip = reg[src] */
	XFLOW_INSN_EMU_MOVRR, /* mov r64, r64: reg[dst] = reg[src] */
};

struct xflow_insn {
	uint64_t addr;
	uint8_t bytes[16];
	uint8_t len;
	enum xflow_insn_kind kind;
	uint64_t target; /* EMU_JMP/JCC/CALL */
	uint8_t cc;      /* EMU_JCC: condition code, the low nibble of 0x7X */
	uint8_t dst;     /* EMU_MOVRR: index into struct xflow_hook_regs as uint64_t[] */
	uint8_t src;     /* EMU_MOVRR, EMU_CALLR */
	uint8_t disp_off; /* OOL: offset of a rip-relative disp32, 0 if none */
	uint8_t call_mem; /* OOL: a call through memory; modrm_off is its ModRM */
	uint8_t modrm_off;
	uint8_t stack_mem; /* OOL: a memory operand based on rsp */
	uint8_t uncond;   /* control never falls through (jmp, ret, ud2...) */
	char text[96];   /* "mnemonic operands", for messages */
};

/* Decode the instruction at addr from code[0..avail).  Returns 0, or
 * -EINVAL (not an instruction) / -ENOTSUP (cannot be moved) with a message in
 * err naming the address and the instruction. */
int xflow_insn_decode(const uint8_t *code, size_t avail, uint64_t addr, struct xflow_insn *out, char *err,
		      size_t errlen);
/* Bytes of in for execution at slot (in->len of them), the rip-relative
 * displacement moved; -ERANGE when slot is out of its reach. */
int xflow_insn_relocate(const struct xflow_insn *in, uint64_t slot, uint8_t *out);
/* Whether rip-relative operand of in can be reached from slot. */
int xflow_insn_reaches(const struct xflow_insn *in, uint64_t slot);
/* Jcc condition cc against eflags. */
int xflow_insn_cond(uint8_t cc, uint64_t eflags);

/*
 * A linear sweep of code[0..len) at addr (one function's bytes): where
 * control can go inside a program, for deciding which bytes a jump may
 * cover.  Reported through ops, each NULL-able:
 *   target    a direct jmp, jcc or call's destination;
 *   table     a jump table: entries of entry_size bytes at table (4: signed
 *             offsets from the table, 8: absolute addresses), count of them
 *             known from a bounds check before the jump, or -1;
 *   indirect  an indirect jump whose destinations it cannot tell (not a
 *             table it recognises, not a tail call through memory).
 * Returns 0, or -EINVAL when bytes did not decode (the sweep goes on past
 * them: what follows is reported, but the caller should trust the
 * function less).
 */
struct xflow_insn_scan_ops {
	void (*target)(void *ctx, uint64_t to);
	void (*table)(void *ctx, uint64_t table, unsigned entry_size, int64_t count);
	void (*indirect)(void *ctx, uint64_t at);
};
int xflow_insn_scan(const uint8_t *code, size_t len, uint64_t addr, const struct xflow_insn_scan_ops *ops,
		    void *ctx);

#endif
