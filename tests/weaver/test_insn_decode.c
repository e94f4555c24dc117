/*
 * Instruction decoding (weaver/jp/insn_decode.c): whether a memory operand is
 * read, written or both, for the instructions whose direction Capstone 4
 * gets wrong.  Each line of the table is assembled now into a function of
 * a small executable and decoded back.
 */
#include <criterion/criterion.h>

#include "tests/weaver/fixtures/jp_fixture.h"
#include "weaver/jp/joinpoint.h"

struct want {
	const char *asm_text;
	uint8_t macc;
};

#define R JP_ACC_READ
#define W JP_ACC_WRITE

static const struct want table[] = {
	/* Stores Capstone 4 marks as reads. */
	{ "movups xmmword ptr [rbx + 0x70], xmm0", W },
	{ "movdqa xmmword ptr [rbx], xmm1", W },
	{ "movupd xmmword ptr [rbx], xmm1", W },
	{ "movq qword ptr [rbx], xmm1", W },
	{ "movlps qword ptr [rbx], xmm1", W },
	{ "movhps qword ptr [rbx], xmm1", W },
	{ "movntdq xmmword ptr [rbx], xmm1", W },
	{ "movnti dword ptr [rbx], eax", W },
	{ "vmovups ymmword ptr [rbx], ymm1", W },
	{ "vmovdqu ymmword ptr [rbx], ymm1", W },
	{ "vmovq qword ptr [rbx], xmm1", W },
	{ "pextrd dword ptr [rbx], xmm1, 1", W },
	{ "extractps dword ptr [rbx], xmm1, 1", W },
	{ "vextracti128 xmmword ptr [rbx], ymm1, 1", W },
	{ "movbe dword ptr [rbx], eax", W },
	{ "fstp qword ptr [rbx]", W },
	{ "fisttp qword ptr [rbx]", W },
	/* Read and written. */
	{ "lock cmpxchg qword ptr [rbx], rcx", R | W },
	{ "cmpxchg16b xmmword ptr [rbx]", R | W },
	{ "xadd qword ptr [rbx], rax", R | W },
	{ "add qword ptr [rbx], rax", R | W },
	{ "inc qword ptr [rbx]", R | W },
	/* Stores Capstone gets right. */
	{ "mov qword ptr [rbx], rax", W },
	{ "movaps xmmword ptr [rbx], xmm1", W },
	{ "pop qword ptr [rbx]", W },
	/* Reads: sources, compares, a first operand only read. */
	{ "movups xmm0, xmmword ptr [rbx + 0x70]", R },
	{ "vmovdqu ymm0, ymmword ptr [rbx]", R },
	{ "pinsrd xmm0, dword ptr [rbx], 1", R },
	{ "cmp qword ptr [rbx], rax", R },
	{ "test qword ptr [rbx], rax", R },
	{ "bt qword ptr [rbx], rax", R },
	{ "ucomisd xmm0, qword ptr [rbx]", R },
	{ "push qword ptr [rbx]", R },
	{ "fld qword ptr [rbx]", R },
};

#define N (sizeof(table) / sizeof(table[0]))

Test(insn_decode, memory_direction, .timeout = 60)
{
	char *dir = jpf_tmp_new();
	cr_assert(dir);
	char src[600], bin[600], cmd[1400];
	snprintf(src, sizeof(src), "%s/t.s", dir);
	snprintf(bin, sizeof(bin), "%s/t", dir);
	FILE *f = fopen(src, "w");
	cr_assert(f);
	fputs(".intel_syntax noprefix\n.text\n.globl _start\n.type _start, @function\n_start:\n", f);
	for (size_t i = 0; i < N; i++)
		fprintf(f, "\t%s\n", table[i].asm_text);
	fputs("\tret\n.size _start, .-_start\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "gcc -nostdlib -static -o '%s' '%s' 2>&1", bin, src);
	cr_assert_eq(system(cmd), 0, "%s", cmd);

	struct jp_elf e;
	struct jp_err err;
	cr_assert_eq(jp_elf_open(&e, bin, &err), 0, "%s", err.msg);
	const struct jp_elf_sym *fn = NULL;
	for (size_t i = 0; i < e.nsyms; i++)
		if (strcmp(e.syms[i].name, "_start") == 0)
			fn = &e.syms[i];
	cr_assert(fn);
	struct jp_range r = { fn->addr, fn->addr + fn->size };
	struct jp_code c;
	cr_assert_eq(jp_code_decode(&e, &r, 1, &c, &err), 0, "%s", err.msg);
	cr_assert_eq(c.ninsns, N + 1, "one instruction per line and the ret");
	for (size_t i = 0; i < N; i++) {
		const struct jp_insn *in = &c.insns[i];
		cr_expect_eq(in->has_mem, 1, "%s: one plain memory operand", table[i].asm_text);
		cr_expect_eq(in->macc, table[i].macc, "%s: access %u, want %u", table[i].asm_text, in->macc,
			     table[i].macc);
	}
	jp_code_free(&c);
	jp_elf_close(&e);
	jpf_tmp_free(dir);
}
