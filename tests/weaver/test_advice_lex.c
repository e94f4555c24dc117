/*
 * The advice lexer: tokens, comments, numbers.
 */
#include "wtest.h"
#include "weaver/lang/advice.h"

static int kinds(const char *text, int *out, size_t max)
{
	struct fl_code code = { .text = text, .len = strlen(text) };
	struct fl_lexer lx;
	fl_lex_init(&lx, &code);
	size_t n = 0;
	for (;;) {
		struct fl_tok t = fl_lex_next(&lx);
		if (n < max)
			out[n] = t.kind;
		n++;
		if (t.kind == FL_T_EOF)
			return (int)n;
	}
}

Test(advice_lex, operators_longest_match)
{
	int k[16];
	cr_assert_eq(kinds("a->b <<= >>= << >= && || != ++", k, 16), 12);
	cr_expect_eq(k[0], FL_T_IDENT);
	cr_expect_eq(k[1], FL_T_ARROW);
	cr_expect_eq(k[3], FL_T_ASSIGN_OP);
	cr_expect_eq(k[4], FL_T_ASSIGN_OP);
	cr_expect_eq(k[5], FL_T_SHL);
	cr_expect_eq(k[6], FL_T_GE);
	cr_expect_eq(k[7], FL_T_LAND);
	cr_expect_eq(k[8], FL_T_LOR);
	cr_expect_eq(k[9], FL_T_NE);
	cr_expect_eq(k[10], FL_T_INC);
}

Test(advice_lex, comments_and_keywords)
{
	int k[8];
	cr_assert_eq(kinds("/* x */ if // y\n else $pc$ while unsigned /* open", k, 8), 6);
	cr_expect_eq(k[0], FL_T_KW_IF);
	cr_expect_eq(k[1], FL_T_KW_ELSE);
	cr_expect_eq(k[2], FL_T_PCVAR);
	cr_expect_eq(k[3], FL_T_LOOP);
	cr_expect_eq(k[4], FL_T_INTTYPE);
	cr_expect_eq(k[5], FL_T_EOF);
}

Test(advice_lex, numbers)
{
	struct fl_code code = { .text = "0x1F 017 42UL 18446744073709551615 18446744073709551616 9x",
				.len = 0 };
	code.len = strlen(code.text);
	struct fl_lexer lx;
	fl_lex_init(&lx, &code);
	struct fl_tok t = fl_lex_next(&lx);
	cr_expect_eq(t.num, 31);
	t = fl_lex_next(&lx);
	cr_expect_eq(t.num, 15);
	t = fl_lex_next(&lx);
	cr_expect(t.num == 42 && t.is_unsigned);
	t = fl_lex_next(&lx);
	cr_expect(t.num == UINT64_MAX && !t.num_overflow);
	t = fl_lex_next(&lx);
	cr_expect(t.num_overflow);
	t = fl_lex_next(&lx);
	cr_expect_eq(t.kind, FL_T_BAD);
	cr_expect_eq(t.len, 2);
}
