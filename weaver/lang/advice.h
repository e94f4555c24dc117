/*
 * weaver/lang/advice.h — tokens of the advice language (a C subset), shared by
 * advice_lex.c and advice_parse.c.
 */
#ifndef XFLOW_WEAVER_LANG_ADVICE_H
#define XFLOW_WEAVER_LANG_ADVICE_H

#include <stdint.h>

#include "weaver/lang/unit.h"

enum fl_tok_kind {
	/* Single-character punctuators are their own character code. */
	FL_T_EOF = 256,
	FL_T_IDENT,
	FL_T_NUM,
	FL_T_PCVAR,        /* $pc$ */
	FL_T_ARROW,        /* -> */
	FL_T_SHL, FL_T_SHR, FL_T_LE, FL_T_GE, FL_T_EQ, FL_T_NE, FL_T_LAND, FL_T_LOR,
	FL_T_INC, FL_T_DEC,
	/* Compound assignment: the base operator is in fl_tok.op. */
	FL_T_ASSIGN_OP,
	/* Keywords. */
	FL_T_KW_IF, FL_T_KW_ELSE, FL_T_KW_STRUCT, FL_T_KW_VOID, FL_T_KW_CONST,
	FL_T_INTTYPE,      /* char short int long signed unsigned, intN_t, uN ... */
	FL_T_LOOP,         /* while for do goto switch: refused */
	FL_T_RETURN,
	FL_T_BAD,          /* a character the language does not have */
};

struct fl_tok {
	int kind;
	int op;            /* FL_T_ASSIGN_OP: '+', '-', ..., FL_T_SHL, FL_T_SHR */
	size_t at, len;    /* bytes of the code text */
	uint64_t num;
	bool num_overflow;
	bool is_unsigned;  /* FL_T_INTTYPE "unsigned"/uN, or a 'u' number suffix */
	int size_hint;     /* FL_T_INTTYPE: "long"/"short"/... counted by the parser */
};

struct fl_lexer {
	const struct fl_code *code;
	size_t i;
};

void fl_lex_init(struct fl_lexer *lx, const struct fl_code *code);
/* The next token; comments and white space are skipped. */
struct fl_tok fl_lex_next(struct fl_lexer *lx);
/* Human name of a token for messages ("'->'", "end of code"). */
const char *fl_tok_describe(struct fl_arena *a, const struct fl_code *code,
			    const struct fl_tok *t);

#endif
