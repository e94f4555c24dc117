/*
 * Classification and relocation of single instructions (no process needed).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "guestrt/hook/hook_priv.h"

static struct xflow_insn dec(const void *bytes, size_t n, uint64_t addr, int want_rc, char *err)
{
	struct xflow_insn in;
	char buf[256] = "";
	int rc = xflow_insn_decode(bytes, n, addr, &in, err ? err : buf, 256);
	cr_assert_eq(rc, want_rc, "rc %d: %s", rc, err ? err : buf);
	return in;
}

Test(insn_reloc, classes)
{
	struct xflow_insn in;
	in = dec("\x55", 1, 0x1000, 0, NULL); /* push rbp */
	cr_expect_eq(in.kind, XFLOW_INSN_OOL);
	cr_expect_eq(in.len, 1);
	in = dec("\x48\x89\xe5", 3, 0x1000, 0, NULL); /* mov rbp, rsp */
	cr_expect_eq(in.kind, XFLOW_INSN_EMU_MOVRR);
	cr_expect_eq(in.dst, 4); /* rbp */
	cr_expect_eq(in.src, 19); /* rsp */
	in = dec("\x89\xe5", 2, 0x1000, 0, NULL); /* mov ebp, esp: zero-extends, moved */
	cr_expect_eq(in.kind, XFLOW_INSN_OOL);
	in = dec("\x90", 1, 0x1000, 0, NULL);
	cr_expect_eq(in.kind, XFLOW_INSN_EMU_NOP);
	in = dec("\x0f\x1f\x44\x00\x00", 5, 0x1000, 0, NULL);
	cr_expect_eq(in.kind, XFLOW_INSN_EMU_NOP);
	cr_expect_eq(in.len, 5);
	in = dec("\xf3\x0f\x1e\xfa", 4, 0x1000, 0, NULL); /* endbr64 */
	cr_expect_eq(in.kind, XFLOW_INSN_EMU_NOP);
	in = dec("\xe8\x10\x00\x00\x00", 5, 0x1000, 0, NULL); /* call 0x1015 */
	cr_expect_eq(in.kind, XFLOW_INSN_EMU_CALL);
	cr_expect_eq(in.target, 0x1015);
	in = dec("\xeb\xfe", 2, 0x1000, 0, NULL); /* jmp . */
	cr_expect_eq(in.kind, XFLOW_INSN_EMU_JMP);
	cr_expect_eq(in.target, 0x1000);
	in = dec("\x0f\x85\x00\x01\x00\x00", 6, 0x1000, 0, NULL); /* jne +0x100 */
	cr_expect_eq(in.kind, XFLOW_INSN_EMU_JCC);
	cr_expect_eq(in.cc, 5);
	cr_expect_eq(in.target, 0x1106);
	in = dec("\x74\x02", 2, 0x1000, 0, NULL); /* je */
	cr_expect_eq(in.cc, 4);
	in = dec("\xff\xd0", 2, 0x1000, 0, NULL); /* call rax */
	cr_expect_eq(in.kind, XFLOW_INSN_EMU_CALLR);
	cr_expect_eq(in.src, 10);
	in = dec("\xc3", 1, 0x1000, 0, NULL); /* ret runs out of line */
	cr_expect_eq(in.kind, XFLOW_INSN_OOL);
}

Test(insn_reloc, refusals_name_address_and_instruction)
{
	char err[256];
	dec("\x0f\x05", 2, 0x401000, -ENOTSUP, err);
	cr_expect(strstr(err, "0x401000") && strstr(err, "syscall"), "%s", err);
	dec("\xcc", 1, 0x401000, -ENOTSUP, err);
	cr_expect(strstr(err, "int3"), "%s", err);
	dec("\x0f\x0b", 2, 0x401000, -ENOTSUP, err);
	cr_expect(strstr(err, "ud2"), "%s", err);
	dec("\xe2\xfe", 2, 0x401000, -ENOTSUP, err); /* loop */
	cr_expect(strstr(err, "loop"), "%s", err);
	dec("\xf4", 1, 0x401000, -ENOTSUP, err); /* hlt */
	dec("\x0f", 1, 0x401000, -EINVAL, err);
	cr_expect(strstr(err, "not a valid instruction"), "%s", err);
}

Test(insn_reloc, rip_relative_moves)
{
	/* mov rax, [rip + 0x100] at 0x5000: the operand is 0x5107. */
	struct xflow_insn in = dec("\x48\x8b\x05\x00\x01\x00\x00", 7, 0x5000, 0, NULL);
	uint8_t out[16];
	int32_t disp;
	cr_assert_eq(in.kind, XFLOW_INSN_OOL);
	cr_assert_eq(in.disp_off, 3);
	cr_assert_eq(xflow_insn_relocate(&in, 0x9000, out), 0);
	memcpy(&disp, out + 3, 4);
	cr_expect_eq(0x9000 + 7 + (int64_t)disp, 0x5107);
	cr_expect_eq(memcmp(out, in.bytes, 3), 0);
	/* Out of reach: 4 GiB away. */
	cr_expect_eq(xflow_insn_relocate(&in, 0x100005000ull, out), -ERANGE);
	cr_expect_eq(xflow_insn_reaches(&in, 0x100005000ull), 0);
	/* cmp byte [rip+0x10], 1: the immediate follows the displacement. */
	in = dec("\x80\x3d\x10\x00\x00\x00\x01", 7, 0x5000, 0, NULL);
	cr_assert_eq(in.disp_off, 2);
	cr_assert_eq(xflow_insn_relocate(&in, 0x4000, out), 0);
	memcpy(&disp, out + 2, 4);
	cr_expect_eq(0x4000 + 7 + (int64_t)disp, 0x5017);
	cr_expect_eq(out[6], 1);
	/* jmp [rip+0]: an indirect jump through memory moves too. */
	in = dec("\xff\x25\x00\x00\x00\x00", 6, 0x5000, 0, NULL);
	cr_expect_eq(in.kind, XFLOW_INSN_OOL);
	cr_expect_eq(in.disp_off, 2);
}

Test(insn_reloc, conditions)
{
	const uint64_t CF = 1, ZF = 1 << 6, SF = 1 << 7, OF = 1 << 11;
	cr_expect(xflow_insn_cond(4, ZF));      /* e */
	cr_expect(!xflow_insn_cond(5, ZF));     /* ne */
	cr_expect(xflow_insn_cond(2, CF));      /* b */
	cr_expect(xflow_insn_cond(7, 0));       /* a */
	cr_expect(!xflow_insn_cond(7, CF));
	cr_expect(xflow_insn_cond(0xc, SF));    /* l: SF != OF */
	cr_expect(!xflow_insn_cond(0xc, SF | OF));
	cr_expect(xflow_insn_cond(0xf, SF | OF)); /* g */
	cr_expect(!xflow_insn_cond(0xf, ZF));
	cr_expect(xflow_insn_cond(0xe, ZF));    /* le */
}
