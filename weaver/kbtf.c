/*
 * Kernel join points from BTF (weaver/kbtf.h).
 */
#include "weaver/kbtf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>

struct jp_kbtf {
	struct btf *btf;
	char path[256];
};

bool jp_kbtf_is_kernel(const char *binary)
{
	return binary && strncmp(binary, JP_KBTF_PREFIX, strlen(JP_KBTF_PREFIX)) == 0;
}

const char *jp_kbtf_path(const struct jp_kbtf *k)
{
	return k->path;
}

int jp_kbtf_open(struct jp_kbtf **out, const char *binary, struct jp_err *err)
{
	*out = NULL;
	const char *path = binary + strlen(JP_KBTF_PREFIX);
	if (!path[0])
		path = JP_KBTF_DEFAULT;
	struct jp_kbtf *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	snprintf(k->path, sizeof(k->path), "%s", path);
	k->btf = btf__parse(path, NULL);
	if (!k->btf) {
		int rc = -errno;
		snprintf(err->msg, sizeof(err->msg), "%s: cannot read the kernel's BTF: %s%s", path, strerror(-rc),
			 rc == -ENOENT && !binary[strlen(JP_KBTF_PREFIX)]
				 ? " (a kernel built without CONFIG_DEBUG_INFO_BTF; give kernel:PATH to a BTF file)"
				 : "");
		free(k);
		return rc ? rc : -EINVAL;
	}
	*out = k;
	return 0;
}

void jp_kbtf_free(struct jp_kbtf *k)
{
	if (!k)
		return;
	btf__free(k->btf);
	free(k);
}

/* The struct a pointer type points to (through typedefs and qualifiers),
 * or NULL. */
static const char *ptr_struct(const struct btf *btf, uint32_t id)
{
	const struct btf_type *t = btf__type_by_id(btf, id);
	for (int d = 0; t && d < 16 && (btf_is_mod(t) || btf_is_typedef(t)); d++)
		t = btf__type_by_id(btf, t->type);
	if (!t || !btf_is_ptr(t))
		return NULL;
	t = btf__type_by_id(btf, t->type);
	for (int d = 0; t && d < 16 && (btf_is_mod(t) || btf_is_typedef(t)); d++)
		t = btf__type_by_id(btf, t->type);
	if (!t || !btf_is_struct(t))
		return NULL;
	const char *n = btf__name_by_offset(btf, t->name_off);
	return n && n[0] ? n : NULL;
}

/* Fill @out from FUNC_PROTO @proto, skipping the first @skip params. */
static int from_proto(const struct btf *btf, const struct btf_type *proto, unsigned skip, struct jp_kbtf_func *out)
{
	if (!proto || !btf_is_func_proto(proto))
		return -EINVAL;
	const struct btf_param *pa = btf_params(proto);
	unsigned n = btf_vlen(proto);
	out->nargs = 0;
	for (unsigned i = skip; i < n && out->nargs < JP_KBTF_MAX_ARGS + 1; i++) {
		if (!pa[i].type)
			break; /* a variadic function's "..." */
		const char *nm = btf__name_by_offset(btf, pa[i].name_off);
		out->arg[out->nargs] = nm ? nm : "";
		out->arg_struct[out->nargs] = ptr_struct(btf, pa[i].type);
		out->nargs++;
	}
	out->returns = proto->type != 0;
	out->ret_struct = proto->type ? ptr_struct(btf, proto->type) : NULL;
	return 0;
}

/* A near name for a "did you mean": the same name with or without leading
 * underscores, which is the kernel's usual difference. */
static const char *near_func(const struct btf *btf, const char *name)
{
	const char *base = name;
	while (*base == '_')
		base++;
	static char cand[3][160];
	snprintf(cand[0], sizeof(cand[0]), "%s", base);
	snprintf(cand[1], sizeof(cand[1]), "_%s", base);
	snprintf(cand[2], sizeof(cand[2]), "__%s", base);
	for (int i = 0; i < 3; i++)
		if (strcmp(cand[i], name) && btf__find_by_name_kind(btf, cand[i], BTF_KIND_FUNC) > 0)
			return cand[i];
	return NULL;
}

int jp_kbtf_func(struct jp_kbtf *k, const char *name, struct jp_kbtf_func *out, struct jp_err *err)
{
	memset(out, 0, sizeof(*out));
	int id = btf__find_by_name_kind(k->btf, name, BTF_KIND_FUNC);
	if (id <= 0) {
		const char *near = near_func(k->btf, name);
		snprintf(err->msg, sizeof(err->msg), "the kernel (%s) has no function %s in its BTF%s%s%s", k->path,
			 name, near ? "; did you mean " : " (inlined, static and renamed functions are not there)",
			 near ? near : "", near ? "?" : "");
		return -ENOENT;
	}
	const struct btf_type *f = btf__type_by_id(k->btf, (uint32_t)id);
	out->id = (uint32_t)id;
	if (from_proto(k->btf, btf__type_by_id(k->btf, f->type), 0, out)) {
		snprintf(err->msg, sizeof(err->msg), "%s: %s has no prototype in BTF", k->path, name);
		return -EINVAL;
	}
	return 0;
}

int jp_kbtf_tracepoint(struct jp_kbtf *k, const char *cat_name, struct jp_kbtf_func *out, struct jp_err *err)
{
	memset(out, 0, sizeof(*out));
	const char *colon = strchr(cat_name, ':');
	const char *name = colon ? colon + 1 : cat_name;
	char tn[200];
	snprintf(tn, sizeof(tn), "btf_trace_%s", name);
	int id = btf__find_by_name_kind(k->btf, tn, BTF_KIND_TYPEDEF);
	if (id <= 0) {
		snprintf(err->msg, sizeof(err->msg), "the kernel (%s) has no tracepoint %s (no %s in its BTF)", k->path,
			 cat_name, tn);
		return -ENOENT;
	}
	/* typedef void (*btf_trace_NAME)(void *__data, args...). */
	const struct btf_type *t = btf__type_by_id(k->btf, (uint32_t)id);
	t = t ? btf__type_by_id(k->btf, t->type) : NULL;
	t = t && btf_is_ptr(t) ? btf__type_by_id(k->btf, t->type) : NULL;
	out->id = (uint32_t)id;
	if (from_proto(k->btf, t, 1, out)) {
		snprintf(err->msg, sizeof(err->msg), "%s: %s is not a tracepoint's prototype", k->path, tn);
		return -EINVAL;
	}
	out->returns = false;
	return 0;
}

static const struct btf_type *skip_mods(const struct btf *btf, uint32_t id, uint32_t *out_id)
{
	const struct btf_type *t = btf__type_by_id(btf, id);
	for (int d = 0; t && d < 16 && (btf_is_mod(t) || btf_is_typedef(t)); d++) {
		id = t->type;
		t = btf__type_by_id(btf, id);
	}
	if (out_id)
		*out_id = id;
	return t;
}

/* Depth-first through anonymous struct/union members. */
static int member_in(const struct btf *btf, const struct btf_type *t, const char *member, uint64_t base_bits,
		     struct jp_kbtf_member *out, int depth)
{
	if (depth > 8)
		return -ENOENT;
	const struct btf_member *m = btf_members(t);
	for (unsigned i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(btf, m->name_off);
		uint64_t bits = base_bits + btf_member_bit_offset(t, i);
		uint32_t mid;
		const struct btf_type *mt = skip_mods(btf, m->type, &mid);
		if ((!n || !n[0]) && mt && (btf_is_struct(mt) || btf_is_union(mt))) {
			if (member_in(btf, mt, member, bits, out, depth + 1) == 0)
				return 0;
			continue;
		}
		if (!n || strcmp(n, member))
			continue;
		uint32_t bsz = btf_member_bitfield_size(t, i);
		long sz = btf__resolve_size(btf, m->type);
		out->bit_size = bsz;
		out->bit_offset = bsz ? (uint32_t)bits : 0;
		out->offset = bits / 8;
		out->size = bsz ? (bits % 8 + bsz + 7) / 8 : (uint64_t)(sz > 0 ? sz : 0);
		out->is_ptr = mt && btf_is_ptr(mt);
		out->is_signed = mt && btf_is_int(mt) && (btf_int_encoding(mt) & BTF_INT_SIGNED);
		return 0;
	}
	return -ENOENT;
}

int jp_kbtf_member(struct jp_kbtf *k, const char *sname, const char *member, struct jp_kbtf_member *out,
		   struct jp_err *err)
{
	memset(out, 0, sizeof(*out));
	int id = btf__find_by_name_kind(k->btf, sname, BTF_KIND_STRUCT);
	if (id <= 0)
		id = btf__find_by_name_kind(k->btf, sname, BTF_KIND_UNION);
	if (id <= 0) {
		snprintf(err->msg, sizeof(err->msg), "the kernel (%s) has no struct %s", k->path, sname);
		return -ENOENT;
	}
	if (member_in(k->btf, btf__type_by_id(k->btf, (uint32_t)id), member, 0, out, 0) != 0) {
		snprintf(err->msg, sizeof(err->msg), "the kernel's struct %s (%s) has no member %s", sname, k->path,
			 member);
		return -ENOENT;
	}
	return 0;
}
