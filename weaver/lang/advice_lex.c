/*
 * Lexer of the advice language: C tokens, C and C++ comments, $pc$.
 */
#include "weaver/lang/advice.h"

#include <ctype.h>
#include <string.h>

void fl_lex_init(struct fl_lexer *lx, const struct fl_code *code)
{
	lx->code = code;
	lx->i = 0;
}

static const struct {
	const char *word;
	int kind;
	bool is_unsigned;
} keywords[] = {
	{ "if", FL_T_KW_IF, false }, { "else", FL_T_KW_ELSE, false },
	{ "struct", FL_T_KW_STRUCT, false }, { "void", FL_T_KW_VOID, false },
	{ "const", FL_T_KW_CONST, false }, { "volatile", FL_T_KW_CONST, false },
	{ "char", FL_T_INTTYPE, false }, { "short", FL_T_INTTYPE, false },
	{ "int", FL_T_INTTYPE, false }, { "long", FL_T_INTTYPE, false },
	{ "signed", FL_T_INTTYPE, false }, { "unsigned", FL_T_INTTYPE, true },
	{ "int8_t", FL_T_INTTYPE, false }, { "int16_t", FL_T_INTTYPE, false },
	{ "int32_t", FL_T_INTTYPE, false }, { "int64_t", FL_T_INTTYPE, false },
	{ "uint8_t", FL_T_INTTYPE, true }, { "uint16_t", FL_T_INTTYPE, true },
	{ "uint32_t", FL_T_INTTYPE, true }, { "uint64_t", FL_T_INTTYPE, true },
	{ "u8", FL_T_INTTYPE, true }, { "u16", FL_T_INTTYPE, true },
	{ "u32", FL_T_INTTYPE, true }, { "u64", FL_T_INTTYPE, true },
	{ "s8", FL_T_INTTYPE, false }, { "s16", FL_T_INTTYPE, false },
	{ "s32", FL_T_INTTYPE, false }, { "s64", FL_T_INTTYPE, false },
	{ "size_t", FL_T_INTTYPE, true }, { "uintptr_t", FL_T_INTTYPE, true },
	{ "while", FL_T_LOOP, false }, { "for", FL_T_LOOP, false },
	{ "do", FL_T_LOOP, false }, { "goto", FL_T_LOOP, false },
	{ "switch", FL_T_LOOP, false }, { "return", FL_T_RETURN, false },
};

static void skip_space(struct fl_lexer *lx)
{
	const char *s = lx->code->text;
	size_t n = lx->code->len;
	for (;;) {
		while (lx->i < n && isspace((unsigned char)s[lx->i]))
			lx->i++;
		if (lx->i + 1 < n && s[lx->i] == '/' && s[lx->i + 1] == '/') {
			while (lx->i < n && s[lx->i] != '\n')
				lx->i++;
		} else if (lx->i + 1 < n && s[lx->i] == '/' && s[lx->i + 1] == '*') {
			size_t j = lx->i + 2;
			while (j + 1 < n && !(s[j] == '*' && s[j + 1] == '/'))
				j++;
			lx->i = j + 1 < n ? j + 2 : n;
		} else {
			return;
		}
	}
}

static void lex_number(const char *s, size_t n, struct fl_tok *t)
{
	size_t i = t->at;
	unsigned base = 10;
	if (s[i] == '0' && i + 1 < n && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
		base = 16;
		i += 2;
	} else if (s[i] == '0') {
		base = 8;
	}
	size_t digits = 0;
	for (; i < n; i++) {
		int c = (unsigned char)s[i];
		unsigned v = isdigit(c) ? (unsigned)(c - '0')
			   : isxdigit(c) ? (unsigned)(tolower(c) - 'a' + 10) : 99;
		if (v >= base)
			break;
		if (t->num > (UINT64_MAX - v) / base)
			t->num_overflow = true;
		t->num = t->num * base + v;
		digits++;
	}
	if (base == 16 && digits == 0)
		t->num_overflow = true;
	while (i < n && strchr("uUlL", s[i])) {
		if (s[i] == 'u' || s[i] == 'U')
			t->is_unsigned = true;
		i++;
	}
	/* "12abc": the letters belong to the number and make it bad. */
	while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_')) {
		t->kind = FL_T_BAD;
		i++;
	}
	t->len = i - t->at;
}

struct fl_tok fl_lex_next(struct fl_lexer *lx)
{
	const char *s = lx->code->text;
	size_t n = lx->code->len;
	skip_space(lx);
	struct fl_tok t = { .kind = FL_T_EOF, .at = lx->i, .len = 0 };
	if (lx->i >= n)
		return t;
	char c = s[lx->i];
	if (isalpha((unsigned char)c) || c == '_') {
		size_t j = lx->i;
		while (j < n && (isalnum((unsigned char)s[j]) || s[j] == '_'))
			j++;
		t.kind = FL_T_IDENT;
		t.len = j - lx->i;
		for (size_t k = 0; k < sizeof(keywords) / sizeof(keywords[0]); k++) {
			if (strlen(keywords[k].word) == t.len &&
			    memcmp(keywords[k].word, s + t.at, t.len) == 0) {
				t.kind = keywords[k].kind;
				t.is_unsigned = keywords[k].is_unsigned;
			}
		}
	} else if (isdigit((unsigned char)c)) {
		t.kind = FL_T_NUM;
		lex_number(s, n, &t);
	} else if (c == '$' && lx->i + 4 <= n && memcmp(s + lx->i, "$pc$", 4) == 0) {
		t.kind = FL_T_PCVAR;
		t.len = 4;
	} else {
		static const struct { const char *p; int kind; int op; } puncts[] = {
			{ "<<=", FL_T_ASSIGN_OP, FL_T_SHL }, { ">>=", FL_T_ASSIGN_OP, FL_T_SHR },
			{ "->", FL_T_ARROW, 0 }, { "<<", FL_T_SHL, 0 }, { ">>", FL_T_SHR, 0 },
			{ "<=", FL_T_LE, 0 }, { ">=", FL_T_GE, 0 }, { "==", FL_T_EQ, 0 },
			{ "!=", FL_T_NE, 0 }, { "&&", FL_T_LAND, 0 }, { "||", FL_T_LOR, 0 },
			{ "++", FL_T_INC, 0 }, { "--", FL_T_DEC, 0 },
			{ "+=", FL_T_ASSIGN_OP, '+' }, { "-=", FL_T_ASSIGN_OP, '-' },
			{ "*=", FL_T_ASSIGN_OP, '*' }, { "/=", FL_T_ASSIGN_OP, '/' },
			{ "%=", FL_T_ASSIGN_OP, '%' }, { "&=", FL_T_ASSIGN_OP, '&' },
			{ "|=", FL_T_ASSIGN_OP, '|' }, { "^=", FL_T_ASSIGN_OP, '^' },
		};
		for (size_t k = 0; k < sizeof(puncts) / sizeof(puncts[0]); k++) {
			size_t pl = strlen(puncts[k].p);
			if (lx->i + pl <= n && memcmp(s + lx->i, puncts[k].p, pl) == 0) {
				t.kind = puncts[k].kind;
				t.op = puncts[k].op;
				t.len = pl;
				lx->i += pl;
				return t;
			}
		}
		t.len = 1;
		t.kind = strchr("+-*/%&|^~!<>=(){};,?:[].", c) ? (unsigned char)c : FL_T_BAD;
	}
	lx->i += t.len;
	return t;
}

const char *fl_tok_describe(struct fl_arena *a, const struct fl_code *code,
			    const struct fl_tok *t)
{
	if (t->kind == FL_T_EOF)
		return "end of code";
	size_t len = t->len > 40 ? 40 : t->len;
	return fl_arena_printf(a, "'%.*s'", (int)len, code->text + t->at);
}
