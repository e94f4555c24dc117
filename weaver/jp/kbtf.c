/*
 * Kernel join points from BTF (weaver/jp/kbtf.h).
 */
#include "weaver/jp/kbtf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/btf.h>

/* A kernel's BTF: vmlinux's, and the split BTF of the modules searched
 * after it (a function or struct not in vmlinux is in a module). */
struct kbtf_mod {
	char name[64];
	struct btf *btf;             /* split on vmlinux */
};

/* A module named with "?" that this machine could not give, and why. */
struct kbtf_skip {
	char name[64];
	char why[200];
};

struct jp_kbtf {
	struct btf *btf;             /* vmlinux */
	/* One allocation each: jp_kbtf_func() hands out their names, which
	 * must outlive the table growing when loaded modules are scanned. */
	struct kbtf_mod **mods;
	unsigned nmods, capmods;
	struct kbtf_skip *skips;
	unsigned nskips;
	bool running;                /* kernel: — loaded modules are searched too */
	bool here;                   /* this machine's running kernel's vmlinux */
	bool scanned;                /* /sys/kernel/btf read */
	char path[256];
	char moddir[256];
};

bool jp_kbtf_is_kernel(const char *binary)
{
	return binary && strncmp(binary, JP_KBTF_PREFIX, strlen(JP_KBTF_PREFIX)) == 0;
}

const char *jp_kbtf_path(const struct jp_kbtf *k)
{
	return k->path;
}

/* A module's name as the kernel writes it: "-" read as "_". */
static void mod_name(char *out, size_t len, const char *s, size_t n)
{
	snprintf(out, len, "%.*s", (int)n, s);
	for (char *c = out; *c; c++)
		if (*c == '-')
			*c = '_';
}

static bool have_mod(const struct jp_kbtf *k, const char *name)
{
	for (unsigned i = 0; i < k->nmods; i++)
		if (strcmp(k->mods[i]->name, name) == 0)
			return true;
	return false;
}

unsigned jp_kbtf_skipped(const struct jp_kbtf *k, unsigned i, const char **name, const char **why)
{
	if (i >= k->nskips)
		return k->nskips;
	*name = k->skips[i].name;
	*why = k->skips[i].why;
	return k->nskips;
}

static int skip_mod(struct jp_kbtf *k, const char *name, const char *why)
{
	struct kbtf_skip *v = realloc(k->skips, (k->nskips + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	k->skips = v;
	snprintf(v[k->nskips].name, sizeof(v[k->nskips].name), "%s", name);
	snprintf(v[k->nskips].why, sizeof(v[k->nskips].why), "%s", why);
	k->nskips++;
	return 0;
}

static int add_mod(struct jp_kbtf *k, const char *name, const char *path, struct jp_err *err)
{
	if (have_mod(k, name))
		return 0;
	if (k->nmods == k->capmods) {
		unsigned cap = k->capmods ? 2 * k->capmods : 16;
		struct kbtf_mod **v = realloc(k->mods, cap * sizeof(*v));
		if (!v) {
			snprintf(err->msg, sizeof(err->msg), "%s: no memory for module %s", k->path, name);
			return -ENOMEM;
		}
		k->mods = v;
		k->capmods = cap;
	}
	struct btf *m = btf__parse_split(path, k->btf);
	if (!m) {
		int rc = -errno;
		snprintf(err->msg, sizeof(err->msg), "module %s (%s): cannot read its BTF: %s (a module built without "
			 "CONFIG_DEBUG_INFO_BTF_MODULES, or for another kernel than %s)", name, path, strerror(-rc), k->path);
		return rc ? rc : -EINVAL;
	}
	struct kbtf_mod *km = calloc(1, sizeof(*km));
	if (!km) {
		btf__free(m);
		snprintf(err->msg, sizeof(err->msg), "%s: no memory for module %s", k->path, name);
		return -ENOMEM;
	}
	snprintf(km->name, sizeof(km->name), "%s", name);
	km->btf = m;
	k->mods[k->nmods++] = km;
	return 0;
}

/* Module @name's file, through @dir/modules.dep: module files are named
 * by their build path (kernel/drivers/net/xen-netfront.ko), not by the
 * name the kernel knows them by, and the directory layout varies. */
static int find_mod(const struct jp_kbtf *k, const char *name, char *out, size_t len, struct jp_err *err)
{
	char dep[512];
	snprintf(dep, sizeof(dep), "%s/modules.dep", k->moddir);
	FILE *f = fopen(dep, "r");
	if (!f) {
		int rc = -errno;
		snprintf(err->msg, sizeof(err->msg), "module %s: cannot read %s: %s (give the module directory: "
			 "kernel:VMLINUX+/lib/modules/RELEASE+%s)", name, dep, strerror(-rc), name);
		return rc;
	}
	char line[4096];
	int rc = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = 0;
		const char *base = strrchr(line, '/');
		base = base ? base + 1 : line;
		const char *dot = strstr(base, ".ko");
		char n[64];
		mod_name(n, sizeof(n), base, dot ? (size_t)(dot - base) : strlen(base));
		if (strcmp(n, name) != 0)
			continue;
		if (dot && dot[3]) {
			snprintf(err->msg, sizeof(err->msg), "module %s: %s/%.200s is compressed; decompress it into a "
				 "module directory of plain .ko files", name, k->moddir, line);
			rc = -ENOTSUP;
			break;
		}
		snprintf(out, len, "%s/%.300s", k->moddir, line);
		rc = 0;
		break;
	}
	fclose(f);
	if (rc == -ENOENT)
		snprintf(err->msg, sizeof(err->msg), "module %s is not in %s", name, dep);
	return rc;
}

/* The running kernel's loaded modules (/sys/kernel/btf/<module>), read
 * the first time a name is not in vmlinux nor in the named modules. */
static void scan_loaded(struct jp_kbtf *k)
{
	if (!k->running || k->scanned)
		return;
	k->scanned = true;
	DIR *d = opendir("/sys/kernel/btf");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strcmp(e->d_name, "vmlinux") == 0)
			continue;
		char p[512];
		struct jp_err ignored;
		snprintf(p, sizeof(p), "/sys/kernel/btf/%s", e->d_name);
		add_mod(k, e->d_name, p, &ignored);
	}
	closedir(d);
}

/* One ITEM of kernel:[BTF][+ITEM]... (weaver/jp/kbtf.h). */
static int open_item(struct jp_kbtf *k, const char *it, struct jp_err *err)
{
	struct stat st;
	char path[600], name[64];
	int rc;
	if (strchr(it, '/')) {
		if (stat(it, &st) != 0) {
			rc = -errno;
			snprintf(err->msg, sizeof(err->msg), "%s: %s", it, strerror(-rc));
			return rc;
		}
		if (S_ISDIR(st.st_mode))
			return 0;
		const char *base = strrchr(it, '/') + 1;
		const char *dot = strstr(base, ".ko");
		mod_name(name, sizeof(name), base, dot ? (size_t)(dot - base) : strlen(base));
		return add_mod(k, name, it, err);
	}
	mod_name(name, sizeof(name), it, strlen(it));
	snprintf(path, sizeof(path), "/sys/kernel/btf/%s", name);
	/* A module loaded here is the running kernel's own. */
	if (k->here && access(path, R_OK) == 0)
		return add_mod(k, name, path, err);
	if ((rc = find_mod(k, name, path, sizeof(path), err)) == 0)
		rc = add_mod(k, name, path, err);
	return rc;
}

static int open_mods(struct jp_kbtf *k, const char *items, struct jp_err *err)
{
	struct utsname un;
	if (k->here && uname(&un) == 0)
		snprintf(k->moddir, sizeof(k->moddir), "/lib/modules/%s", un.release);
	char *buf = strdup(items);
	if (!buf)
		return -ENOMEM;
	/* Directories first: a name is looked up in the directory given,
	 * wherever the list says it. */
	for (char *save = NULL, *it = strtok_r(buf, "+", &save); it; it = strtok_r(NULL, "+", &save)) {
		struct stat st;
		if (strchr(it, '/') && stat(it, &st) == 0 && S_ISDIR(st.st_mode))
			snprintf(k->moddir, sizeof(k->moddir), "%s", it);
	}
	strcpy(buf, items);
	int rc = 0;
	for (char *save = NULL, *it = strtok_r(buf, "+", &save); it && !rc; it = strtok_r(NULL, "+", &save)) {
		if (it[0] != '?') {
			rc = open_item(k, it, err);
			continue;
		}
		/* A module the domain has, which this machine may not: a
		 * plan that needs none of its functions must not fail for it. */
		struct jp_err why;
		why.msg[0] = 0;
		if (open_item(k, it + 1, &why) != 0)
			rc = skip_mod(k, it + 1, why.msg);
	}
	free(buf);
	return rc;
}

int jp_kbtf_open(struct jp_kbtf **out, const char *binary, struct jp_err *err)
{
	*out = NULL;
	const char *spec = binary + strlen(JP_KBTF_PREFIX);
	const char *plus = strchr(spec, '+');
	char path[256];
	snprintf(path, sizeof(path), "%.*s", (int)(plus ? (size_t)(plus - spec) : strlen(spec)), spec);
	bool running = !path[0];
	if (running)
		snprintf(path, sizeof(path), "%s", JP_KBTF_DEFAULT);
	bool here = strcmp(path, JP_KBTF_DEFAULT) == 0;
	struct jp_kbtf *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	snprintf(k->path, sizeof(k->path), "%s", path);
	k->running = running;
	k->here = here;
	k->btf = btf__parse(path, NULL);
	if (!k->btf) {
		int rc = -errno;
		snprintf(err->msg, sizeof(err->msg), "%s: cannot read the kernel's BTF: %s%s", path, strerror(-rc),
			 rc == -ENOENT && running
				 ? " (a kernel built without CONFIG_DEBUG_INFO_BTF; give kernel:PATH to a BTF file)"
				 : "");
		free(k);
		return rc ? rc : -EINVAL;
	}
	int rc = plus ? open_mods(k, plus + 1, err) : 0;
	if (rc) {
		jp_kbtf_free(k);
		return rc;
	}
	*out = k;
	return 0;
}

void jp_kbtf_free(struct jp_kbtf *k)
{
	if (!k)
		return;
	for (unsigned i = 0; i < k->nmods; i++) {
		btf__free(k->mods[i]->btf);
		free(k->mods[i]);
	}
	btf__free(k->btf);
	free(k->mods);
	free(k->skips);
	free(k);
}

/* The BTF (vmlinux's, else a module's) that has @name of @kind, its id in
 * *@id and the module's name in *@mod (NULL for vmlinux). */
static struct btf *find_in(struct jp_kbtf *k, const char *name, int kind, int *id, const char **mod)
{
	*mod = NULL;
	*id = btf__find_by_name_kind(k->btf, name, kind);
	if (*id > 0)
		return k->btf;
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < k->nmods; i++) {
			*id = btf__find_by_name_kind(k->mods[i]->btf, name, kind);
			if (*id > 0) {
				*mod = k->mods[i]->name;
				return k->mods[i]->btf;
			}
		}
		if (pass || !k->running || k->scanned)
			break;
		scan_loaded(k);
	}
	return NULL;
}

/* Where else a name was searched, for "not found" messages: after
 * "the kernel (PATH) has no X in its BTF". */
static const char *searched(const struct jp_kbtf *k, char *buf, size_t len)
{
	int n = 0;
	if (k->running && !k->nmods)
		n = snprintf(buf, len, " nor in its loaded modules'");
	else if (!k->nmods)
		n = snprintf(buf, len, " (a module's: name it, kernel:%s+NAME)", k->path);
	if (k->nmods > 8)
		n = snprintf(buf, len, " nor in its %u modules'", k->nmods);
	for (unsigned i = 0; k->nmods <= 8 && i < k->nmods && n >= 0 && (size_t)n < len; i++)
		n += snprintf(buf + n, len - (size_t)n, "%s%s", i ? ", " : " nor in modules ", k->mods[i]->name);
	/* The domain's modules this machine could not give: the name may be
	 * in one of them. */
	for (unsigned i = 0; i < k->nskips && n >= 0 && (size_t)n < len; i++)
		n += snprintf(buf + n, len - (size_t)n, "%s%s", i ? ", " : "; not found on this machine: ",
			      k->skips[i].name);
	return buf;
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
		const struct btf_type *at = btf__type_by_id(btf, pa[i].type);
		for (int d = 0; at && d < 16 && (btf_is_mod(at) || btf_is_typedef(at)); d++)
			at = btf__type_by_id(btf, at->type);
		out->arg_int[out->nargs] = at && (btf_is_int(at) || btf_is_enum(at)) && at->size <= 8 ? (uint8_t)at->size : 0;
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
	int id;
	const char *mod;
	struct btf *btf = find_in(k, name, BTF_KIND_FUNC, &id, &mod);
	if (!btf) {
		const char *near = near_func(k->btf, name);
		char sb[600];
		snprintf(err->msg, sizeof(err->msg), "the kernel (%s) has no function %s in its BTF%s%s%s%s", k->path,
			 name, searched(k, sb, sizeof(sb)), near ? "; did you mean " : " (inlined, static and renamed functions are not there)",
			 near ? near : "", near ? "?" : "");
		return -ENOENT;
	}
	const struct btf_type *f = btf__type_by_id(btf, (uint32_t)id);
	out->id = (uint32_t)id;
	out->module = mod;
	if (from_proto(btf, btf__type_by_id(btf, f->type), 0, out)) {
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
	int id;
	const char *mod;
	struct btf *btf = find_in(k, tn, BTF_KIND_TYPEDEF, &id, &mod);
	if (!btf) {
		char sb[600];
		snprintf(err->msg, sizeof(err->msg), "the kernel (%s) has no tracepoint %s (no %s in its BTF%s)",
			 k->path, cat_name, tn, searched(k, sb, sizeof(sb)));
		return -ENOENT;
	}
	/* typedef void (*btf_trace_NAME)(void *__data, args...). */
	const struct btf_type *t = btf__type_by_id(btf, (uint32_t)id);
	t = t ? btf__type_by_id(btf, t->type) : NULL;
	t = t && btf_is_ptr(t) ? btf__type_by_id(btf, t->type) : NULL;
	out->id = (uint32_t)id;
	out->module = mod;
	if (from_proto(btf, t, 1, out)) {
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

/* Depth-first through anonymous struct/union members; the member's type
 * id in *@tid. */
static int member_in(const struct btf *btf, const struct btf_type *t, const char *member, uint64_t base_bits,
		     struct jp_kbtf_member *out, uint32_t *tid, int depth)
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
			if (member_in(btf, mt, member, bits, out, tid, depth + 1) == 0)
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
		*tid = m->type;
		return 0;
	}
	return -ENOENT;
}

/* "arr[].m.n" of @t: the array arr embedded in @t, and in its element
 * the members m, then n, each embedded in the one before. */
static int element_in(const struct btf *btf, const struct btf_type *t, const char *sname, const char *path,
		      struct jp_kbtf_member *out, const char *kpath, struct jp_err *err)
{
	const char *br = strstr(path, "[]");
	char name[128];
	size_t n = (size_t)(br - path);
	uint32_t tid;
	if (n >= sizeof(name))
		n = sizeof(name) - 1;
	memcpy(name, path, n);
	name[n] = 0;
	if (member_in(btf, t, name, 0, out, &tid, 0) != 0) {
		snprintf(err->msg, sizeof(err->msg), "the kernel's struct %s (%s) has no member %s", sname, kpath, name);
		return -ENOENT;
	}
	const struct btf_type *at = skip_mods(btf, tid, NULL);
	if (!at || !btf_is_array(at) || out->bit_size) {
		snprintf(err->msg, sizeof(err->msg), "%s.%s is %s in the kernel's BTF (%s), not an array embedded in the "
			 "struct: only such an array can be indexed", sname, name,
			 at && btf_is_ptr(at) ? "a pointer" : "not an array", kpath);
		return -EINVAL;
	}
	const struct btf_array *arr = btf_array(at);
	long stride = btf__resolve_size(btf, arr->type);
	if (arr->nelems == 0 || stride <= 0 || (uint64_t)stride > UINT32_MAX) {
		snprintf(err->msg, sizeof(err->msg), "%s.%s has no fixed length in the kernel's BTF (%s): its index "
			 "cannot be bounded", sname, name, kpath);
		return -EINVAL;
	}
	uint64_t base = out->offset;
	struct jp_kbtf_member m = { .offset = 0, .size = (uint64_t)stride };
	tid = arr->type;
	char where[300];
	snprintf(where, sizeof(where), "%s.%s[]", sname, name);
	for (const char *d = br + 2; *d == '.';) {
		const char *e = strchr(d + 1, '.');
		n = e ? (size_t)(e - d - 1) : strlen(d + 1);
		if (n >= sizeof(name))
			n = sizeof(name) - 1;
		memcpy(name, d + 1, n);
		name[n] = 0;
		const struct btf_type *st = skip_mods(btf, tid, NULL);
		struct jp_kbtf_member sub;
		uint64_t at_off = m.offset;
		if (!st || !(btf_is_struct(st) || btf_is_union(st)) ||
		    member_in(btf, st, name, 0, &sub, &tid, 0) != 0 || sub.bit_size) {
			snprintf(err->msg, sizeof(err->msg), "%s has no member %s embedded in it in the kernel's BTF (%s)",
				 where, name, kpath);
			return -ENOENT;
		}
		m = sub;
		m.offset += at_off;
		size_t wl = strlen(where);
		snprintf(where + wl, sizeof(where) - wl, ".%s", name);
		d += n + 1;
	}
	*out = m;
	out->offset += base;
	out->nelems = arr->nelems;
	out->stride = (uint32_t)stride;
	return 0;
}

int jp_kbtf_member(struct jp_kbtf *k, const char *sname, const char *member, struct jp_kbtf_member *out,
		   struct jp_err *err)
{
	memset(out, 0, sizeof(*out));
	int id;
	const char *mod;
	struct btf *btf = find_in(k, sname, BTF_KIND_STRUCT, &id, &mod);
	if (!btf)
		btf = find_in(k, sname, BTF_KIND_UNION, &id, &mod);
	if (!btf) {
		char sb[600];
		snprintf(err->msg, sizeof(err->msg), "the kernel (%s) has no struct %s%s", k->path, sname,
			 searched(k, sb, sizeof(sb)));
		return -ENOENT;
	}
	const struct btf_type *t = btf__type_by_id(btf, (uint32_t)id);
	if (strstr(member, "[]"))
		return element_in(btf, t, sname, member, out, k->path, err);
	uint32_t tid;
	if (member_in(btf, t, member, 0, out, &tid, 0) != 0) {
		snprintf(err->msg, sizeof(err->msg), "the kernel's struct %s (%s) has no member %s", sname, k->path,
			 member);
		return -ENOENT;
	}
	return 0;
}
