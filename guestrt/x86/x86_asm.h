/*
 * The x86-64 encoder every writer of machine code uses, in two layers:
 *   struct xcode  a buffer of code for a known address, with the branches
 *                 to absolute addresses (rel32 jmp, call and jcc, and the
 *                 64-bit indirect jump): what the trampolines, the jump
 *                 patches and the ptrace backend's scratch slots write;
 *   struct xasm   an xcode with labels and rel32 fixups and the general
 *                 instructions the advice compiler (inproc_jit.c) needs.
 * Memory operands are [base + disp] only.  Errors stick: after one, every
 * call does nothing and xc_error()/xa_finish() return it.
 */
#ifndef XFLOW_GUESTRT_X86_X86_ASM_H
#define XFLOW_GUESTRT_X86_X86_ASM_H

#include <stddef.h>
#include <stdint.h>

enum xreg {
	XR_RAX = 0, XR_RCX, XR_RDX, XR_RBX, XR_RSP, XR_RBP, XR_RSI, XR_RDI,
	XR_R8, XR_R9, XR_R10, XR_R11, XR_R12, XR_R13, XR_R14, XR_R15,
};

/* The ALU group's operations (the ModRM reg field of 0x81 /op). */
enum xalu { XA_ADD = 0, XA_OR = 1, XA_AND = 4, XA_SUB = 5, XA_XOR = 6, XA_CMP = 7 };

/* Condition codes (the low nibble of jcc and setcc). */
enum xcc {
	XC_O = 0, XC_NO, XC_B, XC_AE, XC_E, XC_NE, XC_BE, XC_A,
	XC_S, XC_NS, XC_P, XC_NP, XC_L, XC_GE, XC_LE, XC_G,
};

/* Bytes p[0..n) of at most max, to run at address at. */
struct xcode {
	uint8_t *p;
	size_t n, max;
	uint64_t at; /* address of p[0] where the code will run */
	int err;     /* the first error: -ENOSPC, -ERANGE, -EINVAL */
};

void xc_init(struct xcode *c, uint8_t *buf, size_t max, uint64_t at);
void xc_bytes(struct xcode *c, const void *b, size_t n);
/* Where the next byte will run. */
uint64_t xc_here(const struct xcode *c);
/* A rel32 operand ending the instruction: to - (here + 4); -ERANGE when
 * out of reach. */
void xc_rel32(struct xcode *c, uint64_t to);
/* jmp rel32 (e9), call rel32 (e8), jcc rel32 (0f 8X) to an address. */
void xc_jmp(struct xcode *c, uint64_t to);
void xc_call(struct xcode *c, uint64_t to);
void xc_jcc(struct xcode *c, enum xcc cc, uint64_t to);
/* jcc or jmp rel32 forward to a place not yet written: the offset of the
 * rel32, which xc_land() later points at the next byte written. */
size_t xc_jcc_fwd(struct xcode *c, enum xcc cc);
size_t xc_jmp_fwd(struct xcode *c);
void xc_land(struct xcode *c, size_t fix);
/* jmp [rip+0] with the 8-byte address after it: reaches anywhere. */
void xc_jmp_far(struct xcode *c, uint64_t to);
/* movabs $imm, r: always 10 bytes, flags untouched. */
void xc_mov_ri(struct xcode *c, enum xreg r, uint64_t imm);
/* The 5 bytes of a jmp rel32 at address at to address to: 0 or -ERANGE. */
int x86_jmp_rel32(uint8_t out[5], uint64_t at, uint64_t to);

#define XA_MAX_LABELS 16384
#define XA_MAX_FIXUPS 16384

struct xasm {
	struct xcode c;
	uint32_t nlabels;
	int64_t label[XA_MAX_LABELS];     /* offset, -1 unbound */
	uint32_t nfix;
	struct { uint32_t at, label; } fix[XA_MAX_FIXUPS]; /* rel32 at offset */
};

void xa_init(struct xasm *a, uint8_t *buf, size_t max, uint64_t at);
/* Length of the code, or the first error (-ENOSPC, -ERANGE, -EINVAL). */
int xa_finish(struct xasm *a);

void xa_bytes(struct xasm *a, const void *b, size_t n);
uint32_t xa_label(struct xasm *a);
/* Bind @l here; a jmp to @l emitted last is taken back (it would jump to
 * the next instruction). */
void xa_bind(struct xasm *a, uint32_t l);
void xa_jmp(struct xasm *a, uint32_t l);
void xa_jcc(struct xasm *a, enum xcc cc, uint32_t l);
/* jmp/call to an absolute address in reach of rel32 (-ERANGE if not). */
void xa_jmp_abs(struct xasm *a, uint64_t to);
/* call to any address, through r11 (clobbered). */
void xa_call_abs(struct xasm *a, uint64_t to);

void xa_mov_ri(struct xasm *a, enum xreg r, uint64_t imm);
void xa_mov_rr(struct xasm *a, enum xreg dst, enum xreg src);
/* Loads: size 1, 2, 4 zero-extended (or sign-extended with xa_loads), 8. */
void xa_load(struct xasm *a, enum xreg r, enum xreg base, int32_t disp, unsigned size);
void xa_loads(struct xasm *a, enum xreg r, enum xreg base, int32_t disp, unsigned size);
void xa_store(struct xasm *a, enum xreg base, int32_t disp, enum xreg r, unsigned size);
/* A sign-extended imm32 into 8 bytes (size 8) or 4 bytes (size 4). */
void xa_store_i(struct xasm *a, enum xreg base, int32_t disp, int32_t imm, unsigned size);
void xa_lea(struct xasm *a, enum xreg r, enum xreg base, int32_t disp);
void xa_alu_rr(struct xasm *a, enum xalu op, enum xreg dst, enum xreg src);
void xa_alu_rm(struct xasm *a, enum xalu op, enum xreg dst, enum xreg base, int32_t disp);
void xa_alu_ri(struct xasm *a, enum xalu op, enum xreg r, int32_t imm);
/* 8-byte memory operand with an imm32 (e.g. add $1 to a counter). */
void xa_alu_mi(struct xasm *a, enum xalu op, enum xreg base, int32_t disp, int32_t imm);
void xa_imul_rr(struct xasm *a, enum xreg dst, enum xreg src);
void xa_imul_rri(struct xasm *a, enum xreg dst, enum xreg src, int32_t imm);
void xa_neg(struct xasm *a, enum xreg r);
void xa_not(struct xasm *a, enum xreg r);
/* shl/shr/sar r by cl: op 4, 5, 7; by an immediate with _i. */
void xa_shift_cl(struct xasm *a, unsigned op, enum xreg r);
void xa_shift_i(struct xasm *a, unsigned op, enum xreg r, uint8_t imm);
void xa_test_rr(struct xasm *a, enum xreg r1, enum xreg r2);
/* r = cc ? 1 : 0 (64 bits). */
void xa_setcc(struct xasm *a, enum xcc cc, enum xreg r);
void xa_cmov(struct xasm *a, enum xcc cc, enum xreg dst, enum xreg src);
void xa_cqo(struct xasm *a);
/* rdx:rax / r: idiv (signed) or div. */
void xa_div(struct xasm *a, enum xreg r, int is_signed);
void xa_push(struct xasm *a, enum xreg r);
void xa_pop(struct xasm *a, enum xreg r);
void xa_op(struct xasm *a, uint8_t op); /* one-byte: pushfq 9c, popfq 9d, cld fc, ret c3, lahf 9f, sahf 9e */

#endif
