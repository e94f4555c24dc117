/*
 * A compilation unit and the pass driver (see unit.h for the passes).
 */
#include "weaver/lang/unit.h"
#include "xflow/plan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int xflow_unit_new(struct xflow_unit **out, const struct xflow_unit_opts *opts)
{
	struct xflow_unit *u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	fl_arena_init(&u->arena);
	fl_diag_init(&u->diag, &u->arena);
	if (opts) {
		u->opts = *opts;
		if (opts->max_errors)
			u->diag.max_errors = opts->max_errors;
	}
	u->flows_tail = &u->flows;
	u->user_tail = &u->user;
	*out = u;
	return 0;
}

void xflow_unit_free(struct xflow_unit *u)
{
	if (!u)
		return;
	fl_arena_fini(&u->arena);
	free(u);
}

int xflow_unit_set_warning(struct xflow_unit *u, const char *opt)
{
	return fl_diag_set_option(&u->diag, opt);
}

int xflow_unit_add_file(struct xflow_unit *u, const char *path)
{
	return fl_build_file(u, path, 0, (struct fl_loc){ 0 });
}

int xflow_unit_add_buffer(struct xflow_unit *u, const char *name, const void *buf, size_t len)
{
	return fl_build_buffer(u, name, buf, len, 0);
}

struct fl_xflow *fl_unit_flow(struct xflow_unit *u, const char *name)
{
	return fl_map_get(&u->flow_map, name, strlen(name));
}

int fl_unit_field(struct xflow_unit *u, const char *sname, const char *member, struct fl_loc where)
{
	const char *key = fl_arena_printf(&u->arena, "%s.%s", sname, member);
	size_t klen = strlen(key);
	uintptr_t have = (uintptr_t)fl_map_get(&u->field_map, key, klen);
	if (have)
		return (int)(have - 1);
	struct fl_field f = { .sname = sname, .member = member, .loc = where };
	FL_PUSH(&u->arena, u->fields, u->nfields, u->fields_cap, f);
	fl_map_put(&u->arena, &u->field_map, key, klen, (void *)(uintptr_t)u->nfields);
	return (int)u->nfields - 1;
}

/* What a weave plan can hold (xflow/plan.h), checked here so that `xflowc
 * check` refuses what `xflowc plan` and the monitors could not load; each
 * error points at the first item past the limit. */
static void check_plan_limits(struct xflow_unit *u)
{
	static const char hint[] = "split the flow files into units woven separately";
	if (u->nwoven > XFLOW_PLAN_MAX_ADVICE)
		fl_error(&u->diag, u->by_index[XFLOW_PLAN_MAX_ADVICE]->loc, hint,
			 "%zu advice after expansion, more than the %u a weave plan holds "
			 "(XFLOW_PLAN_MAX_ADVICE); this is advice %u",
			 u->nwoven, XFLOW_PLAN_MAX_ADVICE, XFLOW_PLAN_MAX_ADVICE + 1);
	if (u->nflows > XFLOW_PLAN_MAX_FLOWS) {
		const struct fl_xflow *f = u->flows;
		for (size_t i = 0; f && i < XFLOW_PLAN_MAX_FLOWS; i++)
			f = f->next;
		fl_error(&u->diag, f ? f->loc : (struct fl_loc){ 0 }, hint,
			 "%zu xflows, more than the %u a weave plan holds (XFLOW_PLAN_MAX_FLOWS); "
			 "this is xflow %u",
			 u->nflows, XFLOW_PLAN_MAX_FLOWS, XFLOW_PLAN_MAX_FLOWS + 1);
	}
	if (u->nfields > XFLOW_PLAN_MAX_FIELDS)
		fl_error(&u->diag, u->fields[XFLOW_PLAN_MAX_FIELDS].loc, hint,
			 "%zu struct members used, more than the %u a weave plan holds "
			 "(XFLOW_PLAN_MAX_FIELDS); this is member %u (%s.%s)",
			 u->nfields, XFLOW_PLAN_MAX_FIELDS, XFLOW_PLAN_MAX_FIELDS + 1,
			 u->fields[XFLOW_PLAN_MAX_FIELDS].sname, u->fields[XFLOW_PLAN_MAX_FIELDS].member);
}

int xflow_unit_compile(struct xflow_unit *u)
{
	if (u->compiled)
		return fl_diag_errors(&u->diag) ? -EINVAL : 0;
	u->compiled = true;
	fl_xflow_expand(u);
	size_t n = 0;
	for (struct fl_advice *a = u->woven; a; a = a->next) {
		if (!a->bad)
			fl_advice_check(u, a);
		n++;
	}
	for (struct fl_advice *a = u->woven; a; a = a->next)
		if (!a->bad && fl_diag_errors(&u->diag) == 0)
			fl_advice_emit(u, a);
	u->by_index = fl_arena_alloc(&u->arena, (n + 1) * sizeof(*u->by_index));
	u->nwoven = 0;
	for (struct fl_advice *a = u->woven; a; a = a->next)
		u->by_index[u->nwoven++] = a;
	check_plan_limits(u);
	return fl_diag_errors(&u->diag) ? -EINVAL : 0;
}

unsigned xflow_unit_errors(const struct xflow_unit *u)
{
	return fl_diag_errors(&u->diag);
}

unsigned xflow_unit_warnings(const struct xflow_unit *u)
{
	return u->diag.nwarnings;
}

void xflow_unit_print_diags(const struct xflow_unit *u, FILE *out)
{
	fl_diag_print(&u->diag, out);
}

int xflow_unit_first_error(const struct xflow_unit *u, char *buf, size_t len)
{
	return fl_diag_first_error(&u->diag, buf, len);
}

size_t xflow_unit_advice_count(const struct xflow_unit *u)
{
	return u->nwoven;
}

int xflow_unit_advice(const struct xflow_unit *u, size_t i, struct xflow_advice_info *out)
{
	if (i >= u->nwoven)
		return -ERANGE;
	const struct fl_advice *a = u->by_index[i];
	static const enum xflow_advice_origin origins[] = {
		[FL_ORIGIN_USER] = XFLOW_ADVICE_USER, [FL_ORIGIN_START] = XFLOW_ADVICE_START,
		[FL_ORIGIN_TRANSIT] = XFLOW_ADVICE_TRANSIT, [FL_ORIGIN_QUIT] = XFLOW_ADVICE_QUIT,
	};
	memset(out, 0, sizeof(*out));
	out->origin = origins[a->origin];
	out->flow = a->flow ? a->flow->index : -1;
	out->flags = (a->when == FL_AFTER ? XFLOW_ADVICE_AFTER : 0) |
		     (a->after_store_field >= 0 ? XFLOW_ADVICE_AFTER_STORE : 0) |
		     (a->receives ? XFLOW_ADVICE_RECEIVES : 0) |
		     (a->notifies ? XFLOW_ADVICE_NOTIFIES : 0);
	out->after_store_field = a->after_store_field;
	out->rec_flags = a->rec_flags;
	out->file = a->loc.src ? a->loc.src->path : NULL;
	fl_loc_linecol(a->loc, &out->line, &out->col);
	out->prog = a->prog;
	return 0;
}

size_t xflow_unit_flow_count(const struct xflow_unit *u)
{
	return u->nflows;
}

const char *xflow_unit_flow_name(const struct xflow_unit *u, size_t i)
{
	for (const struct fl_xflow *f = u->flows; f; f = f->next)
		if ((size_t)f->index == i)
			return f->name;
	return NULL;
}

size_t xflow_unit_field_count(const struct xflow_unit *u)
{
	return u->nfields;
}

int xflow_unit_field(const struct xflow_unit *u, size_t i, const char **sname,
		     const char **member, unsigned *min_bits)
{
	if (i >= u->nfields)
		return -ERANGE;
	*sname = u->fields[i].sname;
	*member = u->fields[i].member;
	if (min_bits)
		*min_bits = u->fields[i].min_bits;
	return 0;
}
