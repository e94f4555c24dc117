/*
 * Helpers shared by the weaver's unit tests: compile a flow file given as a
 * string, capture its diagnostics, compare compiled programs with names
 * abstracted away.
 */
#ifndef TESTS_WEAVER_WTEST_H
#define TESTS_WEAVER_WTEST_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xflow/flowlang.h"

/* Compile @xml (named t.xml in messages); *rc gets compile's result. */
static inline struct xflow_unit *wt_compile(const char *xml, int *rc)
{
	struct xflow_unit *u;
	struct xflow_unit_opts o = { .no_include = true };
	cr_assert_eq(xflow_unit_new(&u, &o), 0);
	int r = xflow_unit_add_buffer(u, "t.xml", xml, strlen(xml));
	int c = xflow_unit_compile(u);
	if (rc)
		*rc = r < 0 ? r : c;
	return u;
}

static inline struct xflow_unit *wt_compile_file(const char *path)
{
	struct xflow_unit *u;
	cr_assert_eq(xflow_unit_new(&u, NULL), 0);
	cr_assert_eq(xflow_unit_add_file(u, path), 0, "%s does not load", path);
	cr_assert_eq(xflow_unit_compile(u), 0, "%s does not compile", path);
	return u;
}

/* Everything xflowc would print about @u; free() it. */
static inline char *wt_diags(const struct xflow_unit *u)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	xflow_unit_print_diags(u, f);
	fclose(f);
	return buf;
}

/* Compile @xml, expect errors, and expect @want among the messages. */
static inline void wt_expect_error(const char *xml, const char *want)
{
	int rc;
	struct xflow_unit *u = wt_compile(xml, &rc);
	char *d = wt_diags(u);
	cr_expect_neq(rc, 0, "no error for: %s", xml);
	cr_expect(strstr(d, want) != NULL, "want \"%s\" in:\n%s", want, d);
	free(d);
	xflow_unit_free(u);
}

static inline void wt_expect_clean(const char *xml)
{
	int rc;
	struct xflow_unit *u = wt_compile(xml, &rc);
	char *d = wt_diags(u);
	cr_expect_eq(rc, 0, "errors for %s:\n%s", xml, d);
	free(d);
	xflow_unit_free(u);
}

static inline const struct xflow_bc_prog *wt_prog(const struct xflow_unit *u, size_t i)
{
	struct xflow_advice_info info;
	cr_assert_eq(xflow_unit_advice(u, i, &info), 0, "no advice %zu", i);
	cr_assert_not_null(info.prog);
	return info.prog;
}

static inline bool wt_streq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Equal programs up to names: same instructions, constants, local types,
 * input recipes; flow and field indices must name the same flow and the
 * same struct member in their own units.  Variable names do not exist in
 * bytecode, so random_str1 vs random_string cannot matter. */
static inline bool wt_prog_equiv(const struct xflow_unit *ua, const struct xflow_bc_prog *a,
				 const struct xflow_unit *ub, const struct xflow_bc_prog *b,
				 char *why, size_t whylen)
{
	if (a->ninsns != b->ninsns) {
		snprintf(why, whylen, "%u vs %u instructions", a->ninsns, b->ninsns);
		return false;
	}
	if (a->nlocals != b->nlocals ||
	    (a->nlocals && memcmp(a->local_types, b->local_types, a->nlocals))) {
		snprintf(why, whylen, "locals differ");
		return false;
	}
	if (a->nconsts != b->nconsts ||
	    (a->nconsts && memcmp(a->consts, b->consts, a->nconsts * sizeof(uint64_t)))) {
		snprintf(why, whylen, "constants differ");
		return false;
	}
	if (a->ninputs != b->ninputs) {
		snprintf(why, whylen, "%u vs %u inputs", a->ninputs, b->ninputs);
		return false;
	}
	for (uint32_t i = 0; i < a->ninputs; i++) {
		const struct xflow_bc_input *x = &a->inputs[i], *y = &b->inputs[i];
		if (x->kind != y->kind || x->type != y->type || !wt_streq(x->local, y->local) ||
		    !wt_streq(x->sname, y->sname)) {
			snprintf(why, whylen, "input %u differs", i);
			return false;
		}
	}
	for (uint32_t i = 0; i < a->ninsns; i++) {
		const struct xflow_bc_insn *x = &a->insns[i], *y = &b->insns[i];
		if (x->op != y->op || x->a != y->a || x->k != y->k) {
			snprintf(why, whylen, "instruction %u differs (%s vs %s)", i,
				 xflow_bc_op_name(x->op), xflow_bc_op_name(y->op));
			return false;
		}
		switch (x->op) {
		case XFLOW_OP_LDF:
		case XFLOW_OP_STF: {
			const char *sa, *ma, *sb, *mb;
			xflow_unit_field(ua, x->b, &sa, &ma, NULL);
			xflow_unit_field(ub, y->b, &sb, &mb, NULL);
			if (strcmp(sa, sb) || strcmp(ma, mb)) {
				snprintf(why, whylen, "instruction %u: field %s.%s vs %s.%s", i, sa, ma, sb, mb);
				return false;
			}
			break;
		}
		case XFLOW_OP_FLOW_GET:
		case XFLOW_OP_FLOW_REG:
		case XFLOW_OP_FLOW_DEL:
		case XFLOW_OP_HANDOFF:
		case XFLOW_OP_SPLIT:
			if (!wt_streq(xflow_unit_flow_name(ua, x->b), xflow_unit_flow_name(ub, y->b))) {
				snprintf(why, whylen, "instruction %u: other flow", i);
				return false;
			}
			break;
		default:
			if (x->b != y->b) {
				snprintf(why, whylen, "instruction %u operand b differs", i);
				return false;
			}
		}
	}
	return true;
}

#endif /* TESTS_WEAVER_WTEST_H */
