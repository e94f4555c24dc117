/*
 * Readable listings of compiled advice, for `xflowc dump --bytecode`.
 */
#include "weaver/lang/unit.h"

#include <inttypes.h>
#include <string.h>

#include "xflow/record.h"

static void rec_flags(FILE *out, unsigned f)
{
	static const char *const names[] = { "START", "TRANSIT", "QUIT", "CROSS_DOMAIN",
					     "SYNTHETIC", "TRUNCATED_ID" };
	const char *sep = "";
	for (unsigned i = 0; i < 6; i++)
		if (f & (1u << i)) {
			fprintf(out, "%s%s", sep, names[i]);
			sep = "|";
		}
	if (!*sep)
		fputs("0", out);
}

void xflow_bc_dump(const struct xflow_unit *u, const struct xflow_bc_prog *p, FILE *out,
		   const char *indent)
{
	fprintf(out, "%sbytecode v%u: %u insns, %u locals, %u inputs, max stack %u\n", indent,
		p->version, p->ninsns, p->nlocals, p->ninputs, p->max_stack);
	for (uint32_t i = 0; i < p->ninputs; i++) {
		const struct xflow_bc_input *in = &p->inputs[i];
		if (in->kind == XFLOW_IN_TARGET)
			fprintf(out, "%s  in%u = target%s%s%s\n", indent, i, in->sname ? " (struct " : "",
				in->sname ? in->sname : "", in->sname ? " *)" : "");
		else
			fprintf(out, "%s  in%u = &local %s\n", indent, i, in->local);
	}
	for (uint32_t i = 0; i < p->ninsns; i++) {
		const struct xflow_bc_insn *in = &p->insns[i];
		const char *name = xflow_bc_op_name(in->op);
		fprintf(out, "%s  %04u  %-9s", indent, i, name ? name : "?");
		switch ((enum xflow_bc_op)in->op) {
		case XFLOW_OP_PUSHI:
			fprintf(out, " %" PRId32, in->k);
			break;
		case XFLOW_OP_PUSHK:
			fprintf(out, " 0x%" PRIx64, p->consts[in->b]);
			break;
		case XFLOW_OP_LDIN:
			fprintf(out, " in%u", in->a);
			break;
		case XFLOW_OP_LDL:
		case XFLOW_OP_STL:
			fprintf(out, " l%u", in->a);
			break;
		case XFLOW_OP_LDF:
		case XFLOW_OP_STF:
		case XFLOW_OP_ELEM: {
			const char *s = "?", *m = "?";
			xflow_unit_field(u, in->b, &s, &m, NULL);
			fprintf(out, " #%u (%s.%s)", in->b, s, m);
			break;
		}
		case XFLOW_OP_LDM:
			fprintf(out, " %u%s%s", in->a, in->b & XFLOW_LDM_SIGNED ? " signed" : "",
				in->b & XFLOW_LDM_PTR ? " ptr" : "");
			break;
		case XFLOW_OP_JMP:
		case XFLOW_OP_JZ:
		case XFLOW_OP_JNZ:
			fprintf(out, " %04" PRId64, (int64_t)i + 1 + in->k);
			break;
		case XFLOW_OP_FLOW_GET:
		case XFLOW_OP_FLOW_REG:
		case XFLOW_OP_FLOW_DEL:
		case XFLOW_OP_SPLIT:
			fprintf(out, " flow %u (%s)", in->b, xflow_unit_flow_name(u, in->b));
			break;
		case XFLOW_OP_HANDOFF:
			fprintf(out, " flow %u (%s) %s", in->b, xflow_unit_flow_name(u, in->b),
				in->a == 2 ? "in from" : in->a ? "in" : "out");
			break;
		case XFLOW_OP_STORE:
			fprintf(out, " %u flags ", in->a);
			rec_flags(out, in->b);
			break;
		default:
			break;
		}
		fputc('\n', out);
	}
}

/* The expanded advice, as a flow file would write it. */
void xflow_unit_dump(const struct xflow_unit *u, FILE *out, bool bytecode)
{
	static const char *const origins[] = { "advice", "start", "transit", "quit" };
	fputs("<flows>\n", out);
	for (size_t i = 0; i < u->nwoven; i++) {
		const struct fl_advice *a = u->by_index[i];
		unsigned line, col;
		fl_loc_linecol(a->loc, &line, &col);
		fprintf(out, "<!-- #%zu %s", i, origins[a->origin]);
		if (a->flow)
			fprintf(out, " of xflow %s", a->flow->name);
		if (a->loc.src)
			fprintf(out, ", from %s:%u:%u", a->loc.src->path, line, col);
		if (a->rec_flags) {
			fputs(", records ", out);
			rec_flags(out, a->rec_flags);
		}
		if (a->after_store_field >= 0)
			fprintf(out, ", after stores to %s.%s", u->fields[a->after_store_field].sname,
				u->fields[a->after_store_field].member);
		if (a->receives)
			fputs(", receives from another domain", out);
		if (a->notifies)
			fputs(", notifies the next domain", out);
		fputs(" -->\n<advice>\n<pointcut>\n", out);
		struct fl_buf b = { 0 };
		if (a->pc)
			fl_pc_print(&b, a->pc);
		fprintf(out, "%s\n</pointcut>\n<%s>\n", b.s ? b.s : "", a->when == FL_AFTER ? "after" : "before");
		fl_buf_free(&b);
		/* Escape what XML needs escaped, so the dump is a valid flow file. */
		const char *parts[3] = { a->guard_open, a->code.text, a->guard_close };
		size_t lens[3] = { a->guard_open ? strlen(a->guard_open) : 0, a->code.len,
				   a->guard_close ? strlen(a->guard_close) : 0 };
		for (int k = 0; k < 3; k++)
			for (size_t j = 0; j < lens[k]; j++) {
				char c = parts[k][j];
				if (c == '<')
					fputs("&lt;", out);
				else if (c == '>')
					fputs("&gt;", out);
				else if (c == '&')
					fputs("&amp;", out);
				else
					fputc(c, out);
			}
		if (!lens[2] && (!lens[1] || parts[1][lens[1] - 1] != '\n'))
			fputc('\n', out);
		fprintf(out, "</%s>\n</advice>\n", a->when == FL_AFTER ? "after" : "before");
		if (bytecode && a->prog) {
			fputs("<!--\n", out);
			xflow_bc_dump(u, a->prog, out, "");
			fputs("-->\n", out);
		}
	}
	fputs("</flows>\n", out);
}
