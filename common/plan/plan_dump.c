/*
 * Weave plan text dump: what `xflowc plan` prints, and what a person reads
 * to see where a plan hooks and why.  One section per domain; each site
 * lists the advice bound to it in weave order with its inputs' recipes.
 */
#include "xflow/plan.h"

#include <inttypes.h>
#include <stdio.h>

#include "xflow/flowlang.h"

static const char *s_or(const char *s, const char *dflt)
{
	return s && *s ? s : dflt;
}

const char *xflow_plan_site_kind_name(unsigned kind)
{
	static const char *const n[] = { "?", "load", "store", "rmw", "entry", "return", "tracepoint" };
	return kind <= XFLOW_SITE_TRACEPOINT ? n[kind] : "?";
}

static const char *reg_name(unsigned r)
{
	static const char *const names[17] = {
		"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
		"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip",
	};
	return r < 17 ? names[r] : "?";
}

void xflow_plan_fetch_print(const struct xflow_plan_fetch *f, FILE *out)
{
	switch (f->kind) {
	case XFLOW_FETCH_REG:
		fprintf(out, "%%%s", reg_name(f->reg));
		break;
	case XFLOW_FETCH_MEM:
		fprintf(out, "&[%%%s%+" PRId64 "]", reg_name(f->reg), f->off);
		break;
	case XFLOW_FETCH_STATIC:
		fprintf(out, "&[base+%#" PRIx64 "]", (uint64_t)f->off);
		break;
	case XFLOW_FETCH_VALUE:
		if (f->scale)
			fprintf(out, "%%%s+%%%s*%u%+" PRId64 " (value)", reg_name(f->reg), reg_name(f->index),
				f->scale, f->off);
		else
			fprintf(out, "%%%s%+" PRId64 " (value)", reg_name(f->reg), f->off);
		break;
	default:
		fputs("-", out);
	}
	if (f->size)
		fprintf(out, ":%u", f->size);
}

static const char *origin_name(uint32_t o)
{
	static const char *const n[] = { "advice", "start", "transit", "quit" };
	return o < 4 ? n[o] : "?";
}

void xflow_plan_dump(const struct xflow_plan *p, FILE *out, bool bytecode)
{
	fprintf(out, "weave plan v%u (bytecode v%u): %u flows, %u fields, %u advice, %u domains\n",
		p->version ? p->version : XFLOW_PLAN_VERSION, XFLOW_BC_VERSION, p->nflows, p->nfields, p->nadvice, p->ndomains);
	for (uint32_t i = 0; i < p->nflows; i++)
		fprintf(out, "flow %u %s\n", i, s_or(p->flows[i], "?"));
	for (uint32_t i = 0; i < p->nfields; i++)
		fprintf(out, "field %u %s.%s\n", i, s_or(p->fields[i].sname, "?"),
			s_or(p->fields[i].member, "?"));
	for (uint32_t i = 0; i < p->nadvice; i++) {
		const struct xflow_plan_advice *a = &p->advice[i];
		fprintf(out, "advice %u %s", i, origin_name(a->origin));
		if (a->flow >= 0 && (uint32_t)a->flow < p->nflows)
			fprintf(out, " of %s", s_or(p->flows[a->flow], "?"));
		fprintf(out, " (%s:%u:%u) %u insns, %u inputs%s%s%s%s\n", s_or(a->file, "?"), a->line, a->col,
			a->prog.ninsns, a->prog.ninputs, a->flags & XFLOW_ADVICE_AFTER ? ", after" : "",
			a->flags & XFLOW_ADVICE_AFTER_STORE ? ", after stores of its field" : "",
			a->flags & XFLOW_ADVICE_RECEIVES ? ", receives from another domain" : "",
			a->flags & XFLOW_ADVICE_NOTIFIES ? ", notifies the next domain" : "");
		for (uint32_t k = 0; k < a->prog.ninputs; k++) {
			const struct xflow_bc_input *in = &a->prog.inputs[k];
			fprintf(out, "  input %u %s", k, in->kind == XFLOW_IN_TARGET ? "target" : "local_var");
			if (in->local)
				fprintf(out, " %s", in->local);
			if (in->sname)
				fprintf(out, " (struct %s)", in->sname);
			fputc('\n', out);
		}
		if (bytecode)
			for (uint32_t k = 0; k < a->prog.ninsns; k++) {
				const struct xflow_bc_insn *x = &a->prog.insns[k];
				const char *nm = xflow_bc_op_name(x->op);
				fprintf(out, "  %4u  %-10s a=%u b=%u k=%d\n", k, nm ? nm : "?", x->a, x->b, x->k);
			}
	}
	for (uint32_t d = 0; d < p->ndomains; d++) {
		const struct xflow_plan_domain *dm = &p->domains[d];
		fprintf(out, "\ndomain %s: %u binaries, %u sites, %u bindings\n", s_or(dm->name, "?"),
			dm->nbinaries, dm->nsites, dm->nbindings);
		for (uint32_t i = 0; i < dm->nbinaries; i++) {
			fprintf(out, "  binary %u %s%s%s%s", i, s_or(dm->binaries[i].path, "?"),
				dm->binaries[i].build_id ? " build-id " : "", s_or(dm->binaries[i].build_id, ""),
				dm->binaries[i].flags & XFLOW_PLAN_BIN_RELOCATABLE ? " (relocatable)" : "");
			if (dm->binaries[i].size)
				fprintf(out, " size %" PRIu64 " code-hash %016" PRIx64, dm->binaries[i].size,
					dm->binaries[i].code_hash);
			fputc('\n', out);
		}
		for (uint32_t i = 0; i < p->nfields; i++) {
			const struct xflow_plan_layout *l = &dm->layouts[i];
			fprintf(out, "  field %u %s.%s", i, s_or(p->fields[i].sname, "?"),
				s_or(p->fields[i].member, "?"));
			if (l->offset < 0)
				fputs(" not in this domain\n", out);
			else if (l->bit_size)
				fprintf(out, " bits %u..%u (bytes %" PRId64 "+%u)\n", l->bit_offset,
					l->bit_offset + l->bit_size - 1, l->offset, l->size);
			else if (l->nelems)
				fprintf(out, " offset %" PRId64 " size %u, element of %u x %u bytes\n", l->offset,
					l->size, l->nelems, l->stride);
			else
				fprintf(out, " offset %" PRId64 " size %u%s%s\n", l->offset, l->size,
					l->flags & XFLOW_LAYOUT_SIGNED ? " signed" : "",
					l->flags & XFLOW_LAYOUT_POINTER ? " pointer" : "");
		}
		uint32_t b = 0;
		for (uint32_t i = 0; i < dm->nsites; i++) {
			const struct xflow_plan_site *s = &dm->sites[i];
			fprintf(out, "  site %u %#" PRIx64 " [bin %u] %s %s:%u %s", i, s->addr, s->binary,
				xflow_plan_site_kind_name(s->kind), s_or(s->file, "?"), s->line,
				s_or(s->func, "?"));
			if (s->inlined_into)
				fprintf(out, " (inlined into %s)", s->inlined_into);
			if (s->sname)
				fprintf(out, " %s.%s bytes %u+%u", s->sname, s_or(s->member, "?"), s->moff, s->msize);
			fprintf(out, "\n      %s", s_or(s->insn, "?"));
			if (s->target.kind) {
				fputs("  target ", out);
				xflow_plan_fetch_print(&s->target, out);
			}
			fputc('\n', out);
			for (; b < dm->nbindings && dm->bindings[b].site == i; b++) {
				const struct xflow_plan_binding *x = &dm->bindings[b];
				fprintf(out, "      %s advice %u", x->when ? "after " : "before", x->advice);
				for (uint32_t k = 0; k < x->ninputs; k++) {
					fprintf(out, " in%u=", k);
					xflow_plan_fetch_print(&dm->fetches[x->first_fetch + k], out);
				}
				fputc('\n', out);
			}
		}
	}
}
