/*
 * Where control can go in a binary, for deciding which bytes a jump may
 * cover (guestrt/hook/hook_priv.h, xflow_code_map_*).
 *
 * From the file, not the running process: its function symbols, and a
 * linear sweep of every function (xflow_insn_scan) for the destinations
 * of its direct branches and of the jump tables it recognises, and for
 * the functions with indirect jumps it cannot follow.  A branch from one
 * function into another (GCC's f.cold parts jump back into f) is seen
 * because every function is swept.  What no sweep sees are the landing
 * pads an exception unwinder jumps to: a binary with .gcc_except_table is
 * flagged as a whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guestrt/hook/hook_priv.h"

struct cm_func {
	uint64_t start, end;
	bool opaque;
};

struct xflow_code_map {
	struct cm_func *funcs;
	size_t nfuncs;
	uint64_t *targets;
	size_t ntargets, captargets;
	bool landing_pads;
};

struct sec {
	uint64_t addr, size;
	const uint8_t *data; /* NULL: NOBITS */
};

struct scan_ctx {
	struct xflow_code_map *m;
	struct cm_func *fn;
	const struct sec *secs;
	size_t nsecs;
	bool bad;
};

static int push_target(struct xflow_code_map *m, uint64_t to)
{
	if (m->ntargets == m->captargets) {
		size_t cap = m->captargets ? m->captargets * 2 : 1024;
		uint64_t *v = realloc(m->targets, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->targets = v;
		m->captargets = cap;
	}
	m->targets[m->ntargets++] = to;
	return 0;
}

static const struct sec *sec_at(const struct scan_ctx *c, uint64_t addr, uint64_t len)
{
	for (size_t i = 0; i < c->nsecs; i++)
		if (addr >= c->secs[i].addr && addr - c->secs[i].addr + len <= c->secs[i].size && c->secs[i].data)
			return &c->secs[i];
	return NULL;
}

static void on_target(void *ctx, uint64_t to)
{
	struct scan_ctx *c = ctx;
	if (push_target(c->m, to))
		c->bad = true;
}

static void on_indirect(void *ctx, uint64_t at)
{
	(void)at;
	((struct scan_ctx *)ctx)->fn->opaque = true;
}

/* Whether some function of the map holds addr (funcs is sorted). */
static bool in_some_func(const struct xflow_code_map *m, uint64_t addr)
{
	size_t lo = 0, hi = m->nfuncs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->funcs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && addr < m->funcs[lo - 1].end;
}

/* Every entry of a table becomes a target.  With no known count, entries
 * are read while they land inside the function: the first one that does
 * not is past the table.  With a count, an entry may land in another
 * function: GCC moves unlikely cases (an abort in the default) into the
 * function's f.cold part, a symbol of its own. */
static void on_table(void *ctx, uint64_t table, unsigned esize, int64_t count)
{
	struct scan_ctx *c = ctx;
	const uint64_t limit = 4096;
	for (uint64_t i = 0; count < 0 ? i < limit : i < (uint64_t)count; i++) {
		const struct sec *s = sec_at(c, table + i * esize, esize);
		if (!s) {
			if (count >= 0)
				c->fn->opaque = true; /* the table is not in the file */
			return;
		}
		const uint8_t *p = s->data + (table + i * esize - s->addr);
		uint64_t to;
		if (esize == 4) {
			int32_t d;
			memcpy(&d, p, 4);
			to = table + (uint64_t)(int64_t)d;
		} else {
			memcpy(&to, p, 8);
		}
		if ((to < c->fn->start || to >= c->fn->end) && (count < 0 || !in_some_func(c->m, to))) {
			if (count >= 0)
				c->fn->opaque = true; /* relocated at load (0 here) or odd */
			return;
		}
		on_target(ctx, to);
	}
	if (count < 0)
		c->fn->opaque = true; /* no end found: trust nothing */
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_func(const void *a, const void *b)
{
	const struct cm_func *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end; /* the longest alias first */
}

static int load(Elf *elf, struct xflow_code_map *m, char *err, size_t errlen)
{
	size_t shstrndx, nsec;
	struct sec *secs = NULL;
	Elf_Scn *symtab = NULL, *dynsym = NULL;
	int rc = 0;

	if (elf_getshdrstrndx(elf, &shstrndx) || elf_getshdrnum(elf, &nsec)) {
		snprintf(err, errlen, "no section headers: %s", elf_errmsg(-1));
		return -ENOEXEC;
	}
	secs = calloc(nsec + 1, sizeof(*secs));
	if (!secs)
		return -ENOMEM;
	size_t ns = 0;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && strcmp(name, ".gcc_except_table") == 0)
			m->landing_pads = true;
		if (sh.sh_type == SHT_SYMTAB)
			symtab = scn;
		if (sh.sh_type == SHT_DYNSYM)
			dynsym = scn;
		if (!(sh.sh_flags & SHF_ALLOC) || sh.sh_size == 0)
			continue;
		Elf_Data *d = sh.sh_type == SHT_NOBITS ? NULL : elf_getdata(scn, NULL);
		secs[ns++] = (struct sec){ .addr = sh.sh_addr, .size = sh.sh_size,
					   .data = d && d->d_size == sh.sh_size ? d->d_buf : NULL };
	}
	Elf_Scn *syms = symtab ? symtab : dynsym;
	if (!syms) {
		snprintf(err, errlen, "no symbol table");
		rc = -ENOEXEC;
		goto out;
	}
	GElf_Shdr sh;
	Elf_Data *d = gelf_getshdr(syms, &sh) ? elf_getdata(syms, NULL) : NULL;
	size_t nsyms = d && sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
	m->funcs = calloc(nsyms + 1, sizeof(*m->funcs));
	if (!m->funcs) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nsyms; i++) {
		GElf_Sym s;
		if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || s.st_size == 0 ||
		    (GELF_ST_TYPE(s.st_info) != STT_FUNC && GELF_ST_TYPE(s.st_info) != STT_GNU_IFUNC))
			continue;
		m->funcs[m->nfuncs++] = (struct cm_func){ .start = s.st_value, .end = s.st_value + s.st_size };
	}
	qsort(m->funcs, m->nfuncs, sizeof(*m->funcs), cmp_func);
	size_t k = 0;
	for (size_t i = 0; i < m->nfuncs; i++)
		if (k == 0 || m->funcs[i].start != m->funcs[k - 1].start)
			m->funcs[k++] = m->funcs[i];
	m->nfuncs = k;

	struct scan_ctx c = { .m = m, .secs = secs, .nsecs = ns };
	const struct xflow_insn_scan_ops ops = { .target = on_target, .table = on_table, .indirect = on_indirect };
	for (size_t i = 0; i < m->nfuncs; i++) {
		struct cm_func *fn = &m->funcs[i];
		const struct sec *s = sec_at(&c, fn->start, fn->end - fn->start);
		if (!s) {
			fn->opaque = true;
			continue;
		}
		c.fn = fn;
		if (xflow_insn_scan(s->data + (fn->start - s->addr), fn->end - fn->start, fn->start, &ops, &c) == -ENOMEM)
			c.bad = true;
		if (c.bad) {
			rc = -ENOMEM;
			goto out;
		}
	}
	qsort(m->targets, m->ntargets, sizeof(*m->targets), cmp_u64);
	k = 0;
	for (size_t i = 0; i < m->ntargets; i++)
		if (k == 0 || m->targets[i] != m->targets[k - 1])
			m->targets[k++] = m->targets[i];
	m->ntargets = k;
out:
	free(secs);
	return rc;
}

int xflow_code_map_open(const char *path, struct xflow_code_map **out, char *err, size_t errlen)
{
	struct xflow_code_map *m = calloc(1, sizeof(*m));
	int rc;
	*out = NULL;
	if (!m)
		return -ENOMEM;
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		free(m);
		return rc;
	}
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		snprintf(err, errlen, "%s: not an ELF file", path);
		rc = -ENOEXEC;
	} else {
		char why[200] = "";
		rc = load(elf, m, why, sizeof(why));
		if (rc)
			snprintf(err, errlen, "%s: %s", path, why[0] ? why : strerror(-rc));
	}
	if (elf)
		elf_end(elf);
	close(fd);
	if (rc) {
		xflow_code_map_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

void xflow_code_map_free(struct xflow_code_map *m)
{
	if (!m)
		return;
	free(m->funcs);
	free(m->targets);
	free(m);
}

int xflow_code_map_func(const struct xflow_code_map *m, uint64_t vaddr, struct xflow_code_func *out)
{
	size_t lo = 0, hi = m->nfuncs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->funcs[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || vaddr >= m->funcs[lo - 1].end)
		return -ENOENT;
	const struct cm_func *f = &m->funcs[lo - 1];
	out->start = f->start;
	out->end = f->end;
	out->next = lo < m->nfuncs ? m->funcs[lo].start : f->end;
	out->opaque = f->opaque;
	return 0;
}

bool xflow_code_map_is_target(const struct xflow_code_map *m, uint64_t vaddr)
{
	size_t lo = 0, hi = m->ntargets;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->targets[mid] == vaddr)
			return true;
		if (m->targets[mid] < vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

bool xflow_code_map_landing_pads(const struct xflow_code_map *m)
{
	return m->landing_pads;
}
