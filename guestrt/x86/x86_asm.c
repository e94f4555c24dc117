/*
 * The x86-64 encoder (guestrt/x86/x86_asm.h).  REX.W everywhere but where a
 * size says otherwise; memory operands as ModRM mod 01 (disp8) or 10
 * (disp32), with a SIB byte for rsp and r12 bases.
 */
#include <errno.h>
#include <string.h>

#include "guestrt/x86/x86_asm.h"

/* ---- the code buffer -------------------------------------------------------- */

void xc_init(struct xcode *c, uint8_t *buf, size_t max, uint64_t at)
{
	*c = (struct xcode){ .p = buf, .max = max, .at = at };
}

static void xc_fail(struct xcode *c, int err)
{
	if (!c->err)
		c->err = err;
}

void xc_bytes(struct xcode *c, const void *b, size_t n)
{
	if (c->err)
		return;
	if (c->n + n > c->max) {
		xc_fail(c, -ENOSPC);
		return;
	}
	memcpy(c->p + c->n, b, n);
	c->n += n;
}

uint64_t xc_here(const struct xcode *c)
{
	return c->at + c->n;
}

/* The displacement of a rel32 ending at end to to, or -ERANGE. */
static int rel32_of(uint64_t end, uint64_t to, int32_t *out)
{
	int64_t d = (int64_t)(to - end);
	if (d < INT32_MIN || d > INT32_MAX)
		return -ERANGE;
	*out = (int32_t)d;
	return 0;
}

void xc_rel32(struct xcode *c, uint64_t to)
{
	int32_t r;
	if (rel32_of(xc_here(c) + 4, to, &r) < 0) {
		xc_fail(c, -ERANGE);
		return;
	}
	xc_bytes(c, &r, 4);
}

void xc_jmp(struct xcode *c, uint64_t to)
{
	static const uint8_t op = 0xe9;
	xc_bytes(c, &op, 1);
	xc_rel32(c, to);
}

void xc_call(struct xcode *c, uint64_t to)
{
	static const uint8_t op = 0xe8;
	xc_bytes(c, &op, 1);
	xc_rel32(c, to);
}

void xc_jcc(struct xcode *c, enum xcc cc, uint64_t to)
{
	uint8_t op[2] = { 0x0f, (uint8_t)(0x80 | cc) };
	xc_bytes(c, op, 2);
	xc_rel32(c, to);
}

size_t xc_jcc_fwd(struct xcode *c, enum xcc cc)
{
	uint8_t op[2] = { 0x0f, (uint8_t)(0x80 | cc) };
	static const int32_t zero;
	xc_bytes(c, op, 2);
	size_t fix = c->n;
	xc_bytes(c, &zero, 4);
	return fix;
}

size_t xc_jmp_fwd(struct xcode *c)
{
	static const uint8_t op = 0xe9;
	static const int32_t zero;
	xc_bytes(c, &op, 1);
	size_t fix = c->n;
	xc_bytes(c, &zero, 4);
	return fix;
}

void xc_land(struct xcode *c, size_t fix)
{
	if (c->err)
		return;
	int32_t d = (int32_t)(c->n - (fix + 4));
	memcpy(c->p + fix, &d, 4);
}

void xc_jmp_far(struct xcode *c, uint64_t to)
{
	static const uint8_t op[] = { 0xff, 0x25, 0, 0, 0, 0 }; /* jmp [rip+0] */
	xc_bytes(c, op, sizeof(op));
	xc_bytes(c, &to, 8);
}

void xc_mov_ri(struct xcode *c, enum xreg r, uint64_t imm)
{
	uint8_t op[10] = { (uint8_t)(0x48 | (r >= XR_R8)), (uint8_t)(0xb8 | (r & 7)) };
	memcpy(op + 2, &imm, 8);
	xc_bytes(c, op, sizeof(op));
}

int x86_jmp_rel32(uint8_t out[5], uint64_t at, uint64_t to)
{
	int32_t r;
	int rc = rel32_of(at + 5, to, &r);
	if (rc < 0)
		return rc;
	out[0] = 0xe9;
	memcpy(out + 1, &r, 4);
	return 0;
}

/* ---- the assembler ----------------------------------------------------------- */

void xa_init(struct xasm *a, uint8_t *buf, size_t max, uint64_t at)
{
	memset(a, 0, sizeof(*a));
	xc_init(&a->c, buf, max, at);
}

static void fail(struct xasm *a, int err)
{
	xc_fail(&a->c, err);
}

void xa_bytes(struct xasm *a, const void *b, size_t n)
{
	xc_bytes(&a->c, b, n);
}

static void byte(struct xasm *a, uint8_t b)
{
	xa_bytes(a, &b, 1);
}

static void u32(struct xasm *a, uint32_t v)
{
	xa_bytes(a, &v, 4);
}

/* REX with W, R (reg's bit 3), B (rm's bit 3); force: emit even if 0x40. */
static void rex(struct xasm *a, int w, unsigned reg, unsigned rm, int force)
{
	uint8_t r = (uint8_t)(0x40 | (w ? 8 : 0) | ((reg & 8) ? 4 : 0) | ((rm & 8) ? 1 : 0));
	if (r != 0x40 || force)
		byte(a, r);
}

static void modrm_rr(struct xasm *a, unsigned reg, unsigned rm)
{
	byte(a, (uint8_t)(0xc0 | ((reg & 7) << 3) | (rm & 7)));
}

static void modrm_mem(struct xasm *a, unsigned reg, enum xreg base, int32_t disp)
{
	int d8 = disp >= -128 && disp <= 127;
	byte(a, (uint8_t)((d8 ? 0x40 : 0x80) | ((reg & 7) << 3) | (base & 7)));
	if ((base & 7) == 4)
		byte(a, 0x24); /* SIB: base only */
	if (d8)
		byte(a, (uint8_t)(int8_t)disp);
	else
		u32(a, (uint32_t)disp);
}

/* ---- labels ---------------------------------------------------------------- */

uint32_t xa_label(struct xasm *a)
{
	if (a->nlabels == XA_MAX_LABELS) {
		fail(a, -ENOSPC);
		return 0;
	}
	a->label[a->nlabels] = -1;
	return a->nlabels++;
}

void xa_bind(struct xasm *a, uint32_t l)
{
	if (l >= a->nlabels)
		return;
	/* A jmp just emitted to this very label would jump to the next
	 * instruction (the end of a branch that falls into its join, a
	 * program's last ret): it is taken back, and labels bound after it
	 * name what follows it, as they did in effect. */
	while (!a->c.err && a->nfix && a->fix[a->nfix - 1].label == l && a->c.n >= 5 &&
	       a->fix[a->nfix - 1].at + 4 == a->c.n && a->c.p[a->c.n - 5] == 0xe9) {
		int64_t was = (int64_t)a->c.n;
		a->c.n -= 5;
		a->nfix--;
		for (uint32_t i = 0; i < a->nlabels; i++)
			if (a->label[i] == was)
				a->label[i] = (int64_t)a->c.n;
	}
	a->label[l] = (int64_t)a->c.n;
}

static void rel_to(struct xasm *a, uint32_t l)
{
	if (a->nfix == XA_MAX_FIXUPS || l >= a->nlabels) {
		fail(a, -ENOSPC);
		return;
	}
	a->fix[a->nfix].at = (uint32_t)a->c.n;
	a->fix[a->nfix++].label = l;
	u32(a, 0);
}

void xa_jmp(struct xasm *a, uint32_t l)
{
	byte(a, 0xe9);
	rel_to(a, l);
}

void xa_jcc(struct xasm *a, enum xcc cc, uint32_t l)
{
	byte(a, 0x0f);
	byte(a, (uint8_t)(0x80 | cc));
	rel_to(a, l);
}

void xa_jmp_abs(struct xasm *a, uint64_t to)
{
	xc_jmp(&a->c, to);
}

void xa_call_abs(struct xasm *a, uint64_t to)
{
	xa_mov_ri(a, XR_R11, to);
	static const uint8_t call_r11[] = { 0x41, 0xff, 0xd3 };
	xa_bytes(a, call_r11, sizeof(call_r11));
}

int xa_finish(struct xasm *a)
{
	for (uint32_t i = 0; i < a->nfix && !a->c.err; i++) {
		int64_t to = a->label[a->fix[i].label];
		if (to < 0) {
			fail(a, -EINVAL); /* a label never bound */
			break;
		}
		int32_t d = (int32_t)(to - (int64_t)(a->fix[i].at + 4));
		memcpy(a->c.p + a->fix[i].at, &d, 4);
	}
	return a->c.err ? a->c.err : (int)a->c.n;
}

/* ---- moves ----------------------------------------------------------------- */

void xa_mov_ri(struct xasm *a, enum xreg r, uint64_t imm)
{
	if (imm <= UINT32_MAX) { /* mov r32, imm32 zero-extends */
		rex(a, 0, 0, r, 0);
		byte(a, (uint8_t)(0xb8 | (r & 7)));
		u32(a, (uint32_t)imm);
	} else if ((int64_t)imm >= INT32_MIN && (int64_t)imm < 0) {
		rex(a, 1, 0, r, 0);
		byte(a, 0xc7);
		modrm_rr(a, 0, r);
		u32(a, (uint32_t)imm);
	} else {
		rex(a, 1, 0, r, 0);
		byte(a, (uint8_t)(0xb8 | (r & 7)));
		xa_bytes(a, &imm, 8);
	}
}

void xa_mov_rr(struct xasm *a, enum xreg dst, enum xreg src)
{
	rex(a, 1, src, dst, 0);
	byte(a, 0x89);
	modrm_rr(a, src, dst);
}

void xa_load(struct xasm *a, enum xreg r, enum xreg base, int32_t disp, unsigned size)
{
	switch (size) {
	case 1:
	case 2:
		rex(a, 0, r, base, 0);
		byte(a, 0x0f);
		byte(a, size == 1 ? 0xb6 : 0xb7);
		break;
	case 4:
		rex(a, 0, r, base, 0);
		byte(a, 0x8b);
		break;
	case 8:
		rex(a, 1, r, base, 0);
		byte(a, 0x8b);
		break;
	default:
		fail(a, -EINVAL);
		return;
	}
	modrm_mem(a, r, base, disp);
}

void xa_loads(struct xasm *a, enum xreg r, enum xreg base, int32_t disp, unsigned size)
{
	switch (size) {
	case 1:
	case 2:
		rex(a, 1, r, base, 0);
		byte(a, 0x0f);
		byte(a, size == 1 ? 0xbe : 0xbf);
		break;
	case 4:
		rex(a, 1, r, base, 0);
		byte(a, 0x63);
		break;
	case 8:
		rex(a, 1, r, base, 0);
		byte(a, 0x8b);
		break;
	default:
		fail(a, -EINVAL);
		return;
	}
	modrm_mem(a, r, base, disp);
}

void xa_store(struct xasm *a, enum xreg base, int32_t disp, enum xreg r, unsigned size)
{
	switch (size) {
	case 1:
		rex(a, 0, r, base, r >= 4); /* sil, dil: a REX even with no bit set */
		byte(a, 0x88);
		break;
	case 2:
		byte(a, 0x66);
		rex(a, 0, r, base, 0);
		byte(a, 0x89);
		break;
	case 4:
		rex(a, 0, r, base, 0);
		byte(a, 0x89);
		break;
	case 8:
		rex(a, 1, r, base, 0);
		byte(a, 0x89);
		break;
	default:
		fail(a, -EINVAL);
		return;
	}
	modrm_mem(a, r, base, disp);
}

void xa_store_i(struct xasm *a, enum xreg base, int32_t disp, int32_t imm, unsigned size)
{
	rex(a, size == 8, 0, base, 0);
	byte(a, 0xc7);
	modrm_mem(a, 0, base, disp);
	u32(a, (uint32_t)imm);
}

void xa_lea(struct xasm *a, enum xreg r, enum xreg base, int32_t disp)
{
	rex(a, 1, r, base, 0);
	byte(a, 0x8d);
	modrm_mem(a, r, base, disp);
}

/* ---- arithmetic ------------------------------------------------------------ */

void xa_alu_rr(struct xasm *a, enum xalu op, enum xreg dst, enum xreg src)
{
	rex(a, 1, src, dst, 0);
	byte(a, (uint8_t)((op << 3) | 1));
	modrm_rr(a, src, dst);
}

void xa_alu_rm(struct xasm *a, enum xalu op, enum xreg dst, enum xreg base, int32_t disp)
{
	rex(a, 1, dst, base, 0);
	byte(a, (uint8_t)((op << 3) | 3));
	modrm_mem(a, dst, base, disp);
}

void xa_alu_ri(struct xasm *a, enum xalu op, enum xreg r, int32_t imm)
{
	rex(a, 1, 0, r, 0);
	if (imm >= -128 && imm <= 127) {
		byte(a, 0x83);
		modrm_rr(a, op, r);
		byte(a, (uint8_t)(int8_t)imm);
	} else {
		byte(a, 0x81);
		modrm_rr(a, op, r);
		u32(a, (uint32_t)imm);
	}
}

void xa_alu_mi(struct xasm *a, enum xalu op, enum xreg base, int32_t disp, int32_t imm)
{
	rex(a, 1, 0, base, 0);
	if (imm >= -128 && imm <= 127) {
		byte(a, 0x83);
		modrm_mem(a, op, base, disp);
		byte(a, (uint8_t)(int8_t)imm);
	} else {
		byte(a, 0x81);
		modrm_mem(a, op, base, disp);
		u32(a, (uint32_t)imm);
	}
}

void xa_imul_rr(struct xasm *a, enum xreg dst, enum xreg src)
{
	rex(a, 1, dst, src, 0);
	byte(a, 0x0f);
	byte(a, 0xaf);
	modrm_rr(a, dst, src);
}

void xa_imul_rri(struct xasm *a, enum xreg dst, enum xreg src, int32_t imm)
{
	rex(a, 1, dst, src, 0);
	byte(a, 0x69);
	modrm_rr(a, dst, src);
	u32(a, (uint32_t)imm);
}

static void group_f7(struct xasm *a, unsigned op, enum xreg r)
{
	rex(a, 1, 0, r, 0);
	byte(a, 0xf7);
	modrm_rr(a, op, r);
}

void xa_neg(struct xasm *a, enum xreg r)
{
	group_f7(a, 3, r);
}

void xa_not(struct xasm *a, enum xreg r)
{
	group_f7(a, 2, r);
}

void xa_div(struct xasm *a, enum xreg r, int is_signed)
{
	group_f7(a, is_signed ? 7 : 6, r);
}

void xa_shift_cl(struct xasm *a, unsigned op, enum xreg r)
{
	rex(a, 1, 0, r, 0);
	byte(a, 0xd3);
	modrm_rr(a, op, r);
}

void xa_shift_i(struct xasm *a, unsigned op, enum xreg r, uint8_t imm)
{
	rex(a, 1, 0, r, 0);
	byte(a, 0xc1);
	modrm_rr(a, op, r);
	byte(a, imm);
}

void xa_test_rr(struct xasm *a, enum xreg r1, enum xreg r2)
{
	rex(a, 1, r2, r1, 0);
	byte(a, 0x85);
	modrm_rr(a, r2, r1);
}

void xa_setcc(struct xasm *a, enum xcc cc, enum xreg r)
{
	rex(a, 0, 0, r, r >= 4);
	byte(a, 0x0f);
	byte(a, (uint8_t)(0x90 | cc));
	modrm_rr(a, 0, r);
	/* movzx r32, r8: the upper bits too */
	rex(a, 0, r, r, r >= 4);
	byte(a, 0x0f);
	byte(a, 0xb6);
	modrm_rr(a, r, r);
}

void xa_cmov(struct xasm *a, enum xcc cc, enum xreg dst, enum xreg src)
{
	rex(a, 1, dst, src, 0);
	byte(a, 0x0f);
	byte(a, (uint8_t)(0x40 | cc));
	modrm_rr(a, dst, src);
}

void xa_cqo(struct xasm *a)
{
	byte(a, 0x48);
	byte(a, 0x99);
}

void xa_push(struct xasm *a, enum xreg r)
{
	rex(a, 0, 0, r, 0);
	byte(a, (uint8_t)(0x50 | (r & 7)));
}

void xa_pop(struct xasm *a, enum xreg r)
{
	rex(a, 0, 0, r, 0);
	byte(a, (uint8_t)(0x58 | (r & 7)));
}

void xa_op(struct xasm *a, uint8_t op)
{
	byte(a, op);
}
