/*
 * The debug-info index: everything join points need from DWARF, copied out
 * of libdwarf into plain arrays (struct jp_index) in one pass over every
 * compilation unit.
 *
 * This is the only file that includes libdwarf: its API changed in 0.x
 * releases (dwarf_init_path grew parameters, dwarf_siblingof_b became
 * dwarf_siblingof_c, the _b/_c/_d suffixes of the line, location and
 * range calls were renamed), and Debian 12 ships 20210528.  Porting means
 * editing this file only.  Calls used here, all present in 20210528:
 * dwarf_elf_init_b, dwarf_next_cu_header_d, dwarf_siblingof_b,
 * dwarf_get_loclist_c + dwarf_get_locdesc_entry_d +
 * dwarf_get_location_op_value_c, dwarf_get_ranges_b (DWARF 2-4) and
 * dwarf_rnglists_get_rle_head (DWARF 5), dwarf_srclines_b, and the reg3
 * CFI calls for the CFA.
 *
 * DWARF is hostile input (the fuzz target feeds this file): every libdwarf
 * error is caught (an error pointer is always passed, so libdwarf never
 * aborts), DIE nesting is bounded, and references that point nowhere are
 * dropped rather than followed.
 */
#include "weaver/jp/joinpoint.h"

#include <errno.h>
#include <gelf.h>
#include <libdwarf/dwarf.h>
#include <libdwarf/libdwarf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64          /* DIE nesting followed */
#define MAX_OPS 64            /* operations kept per location expression */
#define MAX_ORIGIN_HOPS 4     /* abstract_origin / specification chains */

struct dw_state {
	Dwarf_Debug dbg;      /* the debug info */
	Dwarf_Debug fdbg;     /* CFI: dbg, or a second handle on the code file */
	Dwarf_Cie *cies;
	Dwarf_Signed ncies;
	Dwarf_Fde *fdes;
	Dwarf_Signed nfdes;
	bool eh;              /* fdes came from .eh_frame */
	bool fdes_owner_is_f;
	/* The last answer: every variable of a frame asks at the same PC. */
	bool cached;
	int cached_rc;
	uint64_t cached_pc;
	unsigned cached_reg;
	int64_t cached_off;
};

/* A section's bytes (see sec_get). */
struct sec {
	const unsigned char *p;
	size_t n;
};

/* Strings interned once: file names repeat in every line table row. */
struct strtab {
	const char **v;
	size_t cap, n;
};

struct walk {
	Dwarf_Debug dbg;
	struct jp_index *ix;
	Dwarf_Error e;
	struct strtab st;
	/* The unit being walked. */
	uint32_t cu;
	uint16_t version;
	uint64_t base;        /* CU base address (low_pc) */
	char **files;
	Dwarf_Signed nfiles;
	const char *comp_dir;
	unsigned offset_size;  /* 4 or 8: DWARF 32 or 64 */
	uint64_t addr_base;    /* DW_AT_addr_base of the unit */
	uint64_t loclists_base;
	struct sec loc, loclists, addr;
};

#define CLR(w)                                                  \
	do {                                                    \
		if ((w)->e) {                                   \
			dwarf_dealloc((w)->dbg, (w)->e, DW_DLA_ERROR); \
			(w)->e = NULL;                          \
		}                                               \
	} while (0)

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static const char *intern(struct walk *w, const char *s)
{
	if (!s)
		return NULL;
	struct strtab *t = &w->st;
	if (t->n * 2 >= t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 256;
		const char **nv = calloc(ncap, sizeof(*nv));
		if (!nv)
			fl_oom();
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->v[i])
				continue;
			size_t j = hash_str(t->v[i]) & (ncap - 1);
			while (nv[j])
				j = (j + 1) & (ncap - 1);
			nv[j] = t->v[i];
		}
		free(t->v);
		t->v = nv;
		t->cap = ncap;
	}
	size_t j = hash_str(s) & (t->cap - 1);
	while (t->v[j]) {
		if (strcmp(t->v[j], s) == 0)
			return t->v[j];
		j = (j + 1) & (t->cap - 1);
	}
	t->v[j] = fl_arena_strdup(&w->ix->arena, s);
	t->n++;
	return t->v[j];
}

static const char *join_path(struct walk *w, const char *dir, const char *name)
{
	if (!name)
		return NULL;
	if (name[0] == '/' || !dir || !*dir)
		return intern(w, name);
	char *p = fl_arena_printf(&w->ix->arena, "%s/%s", dir, name);
	return intern(w, p);
}

/* ---- attributes ---------------------------------------------------------- */

static bool attr_get(struct walk *w, Dwarf_Die d, Dwarf_Half at, Dwarf_Attribute *out)
{
	int rc = dwarf_attr(d, at, out, &w->e);
	CLR(w);
	return rc == DW_DLV_OK;
}

static bool attr_udata(struct walk *w, Dwarf_Die d, Dwarf_Half at, uint64_t *v)
{
	Dwarf_Attribute a;
	if (!attr_get(w, d, at, &a))
		return false;
	Dwarf_Unsigned u;
	Dwarf_Signed s;
	bool ok = false;
	if (dwarf_formudata(a, &u, &w->e) == DW_DLV_OK) {
		*v = u;
		ok = true;
	} else {
		CLR(w);
		if (dwarf_formsdata(a, &s, &w->e) == DW_DLV_OK) {
			*v = (uint64_t)s;
			ok = true;
		}
	}
	CLR(w);
	dwarf_dealloc(w->dbg, a, DW_DLA_ATTR);
	return ok;
}

static bool attr_flag(struct walk *w, Dwarf_Die d, Dwarf_Half at)
{
	Dwarf_Attribute a;
	if (!attr_get(w, d, at, &a))
		return false;
	Dwarf_Bool f = 0;
	if (dwarf_formflag(a, &f, &w->e) != DW_DLV_OK)
		f = 0;
	CLR(w);
	dwarf_dealloc(w->dbg, a, DW_DLA_ATTR);
	return f != 0;
}

static bool attr_ref(struct walk *w, Dwarf_Die d, Dwarf_Half at, uint64_t *off)
{
	Dwarf_Attribute a;
	if (!attr_get(w, d, at, &a))
		return false;
	Dwarf_Off o;
	bool ok = dwarf_global_formref(a, &o, &w->e) == DW_DLV_OK;
	CLR(w);
	dwarf_dealloc(w->dbg, a, DW_DLA_ATTR);
	if (ok)
		*off = o;
	return ok;
}

static const char *attr_str(struct walk *w, Dwarf_Die d, Dwarf_Half at)
{
	Dwarf_Attribute a;
	if (!attr_get(w, d, at, &a))
		return NULL;
	char *s = NULL;
	if (dwarf_formstring(a, &s, &w->e) != DW_DLV_OK)
		s = NULL;
	CLR(w);
	const char *r = s ? intern(w, s) : NULL;
	dwarf_dealloc(w->dbg, a, DW_DLA_ATTR);
	return r;
}

static const char *die_name(struct walk *w, Dwarf_Die d)
{
	char *s = NULL;
	int rc = dwarf_diename(d, &s, &w->e);
	CLR(w);
	return rc == DW_DLV_OK && s ? intern(w, s) : NULL;
}

/* Name and type of @d, following abstract_origin and specification. */
static void die_name_type(struct walk *w, Dwarf_Die d, const char **name, uint64_t *type,
			  bool *has_type)
{
	*name = die_name(w, d);
	*has_type = attr_ref(w, d, DW_AT_type, type);
	Dwarf_Die cur = d;
	for (int hop = 0; hop < MAX_ORIGIN_HOPS && (!*name || !*has_type); hop++) {
		uint64_t off;
		if (!attr_ref(w, cur, DW_AT_abstract_origin, &off) &&
		    !attr_ref(w, cur, DW_AT_specification, &off))
			break;
		Dwarf_Die o;
		int rc = dwarf_offdie_b(w->dbg, off, 1, &o, &w->e);
		CLR(w);
		if (rc != DW_DLV_OK)
			break;
		if (cur != d)
			dwarf_dealloc(w->dbg, cur, DW_DLA_DIE);
		cur = o;
		if (!*name)
			*name = die_name(w, cur);
		if (!*has_type)
			*has_type = attr_ref(w, cur, DW_AT_type, type);
	}
	if (cur != d)
		dwarf_dealloc(w->dbg, cur, DW_DLA_DIE);
}

static const char *die_linkage(struct walk *w, Dwarf_Die d)
{
	const char *s = attr_str(w, d, DW_AT_linkage_name);
	return s ? s : attr_str(w, d, DW_AT_MIPS_linkage_name);
}

static const char *file_at(struct walk *w, uint64_t n)
{
	uint64_t i = w->version >= 5 ? n : n - 1;
	if (n == 0 && w->version < 5)
		return NULL;
	if (!w->files || i >= (uint64_t)w->nfiles)
		return NULL;
	return join_path(w, w->comp_dir, w->files[i]);
}

/* ---- expressions and ranges ---------------------------------------------- */

/*
 * Location expressions and lists are decoded here, not by libdwarf:
 * 20210528's dwarf_get_loclist_c reads past .debug_loclists on a bad
 * offset (found by fuzzing), so the bytes are taken raw (dwarf_formexprloc,
 * dwarf_formblock, or the list sections read through libelf) and every
 * read is bounds-checked.
 */
struct rd {
	const unsigned char *p, *end;
	bool bad;
};

static uint64_t rd_n(struct rd *r, int n)
{
	if (r->bad || r->end - r->p < n) {
		r->bad = true;
		return 0;
	}
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

static uint64_t rd_uleb(struct rd *r)
{
	uint64_t v = 0;
	for (int shift = 0; !r->bad; shift += 7) {
		if (r->p >= r->end || shift > 63) {
			r->bad = true;
			return 0;
		}
		unsigned char b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	return 0;
}

static int64_t rd_sleb(struct rd *r)
{
	uint64_t v = 0;
	int shift = 0;
	unsigned char b = 0;
	do {
		if (r->bad || r->p >= r->end || shift > 63) {
			r->bad = true;
			return 0;
		}
		b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

static void rd_skip(struct rd *r, uint64_t n)
{
	if (r->bad || (uint64_t)(r->end - r->p) < n) {
		r->bad = true;
		return;
	}
	r->p += n;
}

/* A section's bytes through libelf (decompressed if need be). */
static struct sec sec_get(Elf *elf, const char *want)
{
	struct sec out = { NULL, 0 };
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return out;
	for (Elf_Scn *s = elf_nextscn(elf, NULL); s; s = elf_nextscn(elf, s)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(s, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		const char *nm = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!nm || strcmp(nm, want) != 0)
			continue;
		if (sh.sh_flags & SHF_COMPRESSED) {
			GElf_Chdr ch;
			if (!gelf_getchdr(s, &ch) || ch.ch_size > (256u << 20) || elf_compress(s, 0, 0) < 0)
				return out;
		}
		Elf_Data *d = elf_getdata(s, NULL);
		if (d && d->d_buf) {
			out.p = d->d_buf;
			out.n = d->d_size;
		}
		return out;
	}
	return out;
}

static bool addr_index(struct walk *w, uint64_t idx, uint64_t *out)
{
	if (!w->addr.p || w->addr_base > w->addr.n || (w->addr.n - w->addr_base) / 8 <= idx)
		return false;
	struct rd r = { w->addr.p + w->addr_base + idx * 8, w->addr.p + w->addr.n, false };
	*out = rd_n(&r, 8);
	return !r.bad;
}

/* DW_OP bytes → ops.  Unknown operations end the expression unusable
 * (0 ops), so nothing is ever guessed from half an expression. */
static uint32_t decode_expr(struct walk *w, const unsigned char *p, size_t n, struct jp_op **out)
{
	struct rd r = { p, p + n, false };
	struct jp_op tmp[MAX_OPS];
	uint32_t k = 0;
	unsigned osz = w->offset_size;
	while (r.p < r.end && !r.bad && k < MAX_OPS) {
		uint8_t op = (uint8_t)rd_n(&r, 1);
		struct jp_op o = { .atom = op };
		if ((op >= DW_OP_lit0 && op <= DW_OP_lit31) || (op >= DW_OP_reg0 && op <= DW_OP_reg31)) {
			/* no operands */
		} else if (op >= DW_OP_breg0 && op <= DW_OP_breg31) {
			o.a = (uint64_t)rd_sleb(&r);
		} else {
			switch (op) {
			case DW_OP_addr: o.a = rd_n(&r, 8); break;
			case DW_OP_const1u: o.a = rd_n(&r, 1); break;
			case DW_OP_const1s: o.a = (uint64_t)(int8_t)rd_n(&r, 1); break;
			case DW_OP_const2u: o.a = rd_n(&r, 2); break;
			case DW_OP_const2s: o.a = (uint64_t)(int16_t)rd_n(&r, 2); break;
			case DW_OP_const4u: o.a = rd_n(&r, 4); break;
			case DW_OP_const4s: o.a = (uint64_t)(int32_t)rd_n(&r, 4); break;
			case DW_OP_const8u: case DW_OP_const8s: o.a = rd_n(&r, 8); break;
			case DW_OP_constu: case DW_OP_plus_uconst: case DW_OP_regx: case DW_OP_piece:
			case DW_OP_convert: case DW_OP_reinterpret: case DW_OP_constx:
			case DW_OP_GNU_const_index:
				o.a = rd_uleb(&r);
				break;
			case DW_OP_addrx: case DW_OP_GNU_addr_index: {
				uint64_t ad;
				if (!addr_index(w, rd_uleb(&r), &ad))
					return 0;
				o.atom = DW_OP_addr;
				o.a = ad;
				break;
			}
			case DW_OP_consts: case DW_OP_fbreg: o.a = (uint64_t)rd_sleb(&r); break;
			case DW_OP_pick: case DW_OP_deref_size: case DW_OP_xderef_size: o.a = rd_n(&r, 1); break;
			case DW_OP_skip: case DW_OP_bra: case DW_OP_call2: o.a = rd_n(&r, 2); break;
			case DW_OP_call4: case DW_OP_GNU_parameter_ref: o.a = rd_n(&r, 4); break;
			case DW_OP_call_ref: case DW_OP_GNU_variable_value: o.a = rd_n(&r, (int)osz); break;
			case DW_OP_bregx: o.a = rd_uleb(&r); o.b = (uint64_t)rd_sleb(&r); break;
			case DW_OP_bit_piece: o.a = rd_uleb(&r); o.b = rd_uleb(&r); break;
			case DW_OP_implicit_value: o.a = rd_uleb(&r); rd_skip(&r, o.a); break;
			case DW_OP_entry_value: case DW_OP_GNU_entry_value: o.a = rd_uleb(&r); rd_skip(&r, o.a); break;
			case DW_OP_const_type: case DW_OP_GNU_const_type: {
				rd_uleb(&r);
				uint64_t len = rd_n(&r, 1);
				rd_skip(&r, len);
				break;
			}
			case DW_OP_regval_type: case DW_OP_GNU_regval_type: o.a = rd_uleb(&r); o.b = rd_uleb(&r); break;
			case DW_OP_deref_type: case DW_OP_GNU_deref_type: o.a = rd_n(&r, 1); o.b = rd_uleb(&r); break;
			case DW_OP_implicit_pointer: case DW_OP_GNU_implicit_pointer:
				o.a = rd_n(&r, (int)osz);
				o.b = (uint64_t)rd_sleb(&r);
				break;
			case DW_OP_deref: case DW_OP_dup: case DW_OP_drop: case DW_OP_over: case DW_OP_swap:
			case DW_OP_rot: case DW_OP_xderef: case DW_OP_abs: case DW_OP_and: case DW_OP_div:
			case DW_OP_minus: case DW_OP_mod: case DW_OP_mul: case DW_OP_neg: case DW_OP_not:
			case DW_OP_or: case DW_OP_plus: case DW_OP_shl: case DW_OP_shr: case DW_OP_shra:
			case DW_OP_xor: case DW_OP_eq: case DW_OP_ge: case DW_OP_gt: case DW_OP_le:
			case DW_OP_lt: case DW_OP_ne: case DW_OP_nop: case DW_OP_push_object_address:
			case DW_OP_form_tls_address: case DW_OP_call_frame_cfa: case DW_OP_stack_value:
			case DW_OP_GNU_push_tls_address:
				break;
			default:
				return 0;
			}
		}
		if (r.bad)
			return 0;
		tmp[k++] = o;
	}
	if (r.bad || r.p != r.end || k == 0)
		return 0;
	*out = fl_arena_alloc(&w->ix->arena, k * sizeof(**out));
	memcpy(*out, tmp, k * sizeof(**out));
	return k;
}

static void loc_push(struct walk *w, struct jp_loc **v, uint32_t *n, size_t *cap, uint64_t lo,
		     uint64_t hi, const unsigned char *p, uint64_t len)
{
	if (lo >= hi || *n >= 4096)
		return;
	struct jp_loc l = { .lo = lo, .hi = hi };
	l.nops = decode_expr(w, p, (size_t)len, &l.ops);
	if (l.nops)
		FL_PUSH(&w->ix->arena, *v, *n, *cap, l);
}

/* A DWARF 2-4 .debug_loc list at @off. */
static uint32_t read_loc(struct walk *w, uint64_t off, struct jp_loc **out)
{
	struct jp_loc *v = NULL;
	uint32_t n = 0;
	size_t cap = 0;
	if (!w->loc.p || off >= w->loc.n)
		return 0;
	struct rd r = { w->loc.p + off, w->loc.p + w->loc.n, false };
	uint64_t base = w->base;
	for (int i = 0; i < 4096 && !r.bad; i++) {
		uint64_t a = rd_n(&r, 8), b = rd_n(&r, 8);
		if (r.bad || (a == 0 && b == 0))
			break;
		if (a == ~(uint64_t)0) {
			base = b;
			continue;
		}
		uint64_t len = rd_n(&r, 2);
		const unsigned char *e = r.p;
		rd_skip(&r, len);
		if (!r.bad)
			loc_push(w, &v, &n, &cap, base + a, base + b, e, len);
	}
	*out = v;
	return n;
}

/* A DWARF 5 .debug_loclists list at @off. */
static uint32_t read_loclists(struct walk *w, uint64_t off, struct jp_loc **out)
{
	struct jp_loc *v = NULL;
	uint32_t n = 0;
	size_t cap = 0;
	if (!w->loclists.p || off >= w->loclists.n)
		return 0;
	struct rd r = { w->loclists.p + off, w->loclists.p + w->loclists.n, false };
	uint64_t base = w->base;
	for (int i = 0; i < 4096 && !r.bad; i++) {
		uint8_t kind = (uint8_t)rd_n(&r, 1);
		uint64_t lo = 0, hi = 0, a, b;
		bool has_expr = true, ok = true;
		switch (kind) {
		case DW_LLE_end_of_list:
			*out = v;
			return n;
		case DW_LLE_base_addressx:
			ok = addr_index(w, rd_uleb(&r), &base);
			has_expr = false;
			break;
		case DW_LLE_startx_endx:
			a = rd_uleb(&r);
			b = rd_uleb(&r);
			ok = addr_index(w, a, &lo) && addr_index(w, b, &hi);
			break;
		case DW_LLE_startx_length:
			a = rd_uleb(&r);
			b = rd_uleb(&r);
			ok = addr_index(w, a, &lo);
			hi = lo + b;
			break;
		case DW_LLE_offset_pair:
			lo = base + rd_uleb(&r);
			hi = base + rd_uleb(&r);
			break;
		case DW_LLE_default_location:
			lo = 0;
			hi = UINT64_MAX;
			break;
		case DW_LLE_base_address:
			base = rd_n(&r, 8);
			has_expr = false;
			break;
		case DW_LLE_start_end:
			lo = rd_n(&r, 8);
			hi = rd_n(&r, 8);
			break;
		case DW_LLE_start_length:
			lo = rd_n(&r, 8);
			hi = lo + rd_uleb(&r);
			break;
		case 0x09: /* DW_LLE_GNU_view_pair: location views, no expression */
			rd_uleb(&r);
			rd_uleb(&r);
			has_expr = false;
			break;
		default:
			r.bad = true;
			break;
		}
		if (r.bad)
			break;
		if (!has_expr)
			continue;
		uint64_t len = rd_uleb(&r);
		const unsigned char *e = r.p;
		rd_skip(&r, len);
		if (!r.bad && ok)
			loc_push(w, &v, &n, &cap, lo, hi, e, len);
	}
	*out = v;
	return n;
}

/* The location description(s) of attribute @at of @d.  Returns the number
 * of entries put in *out (arena), 0 if none. */
static uint32_t attr_locs(struct walk *w, Dwarf_Die d, Dwarf_Half at, struct jp_loc **out)
{
	*out = NULL;
	Dwarf_Attribute a;
	if (!attr_get(w, d, at, &a))
		return 0;
	Dwarf_Half form = 0;
	if (dwarf_whatform(a, &form, &w->e) != DW_DLV_OK)
		form = 0;
	CLR(w);
	uint32_t n = 0;
	Dwarf_Unsigned len = 0, u = 0;
	Dwarf_Ptr ptr = NULL;
	Dwarf_Block *blk = NULL;
	Dwarf_Off off = 0;
	switch (form) {
	case DW_FORM_exprloc:
		if (dwarf_formexprloc(a, &len, &ptr, &w->e) == DW_DLV_OK && ptr) {
			struct jp_loc *l = fl_arena_alloc(&w->ix->arena, sizeof(*l));
			l->lo = 0;
			l->hi = UINT64_MAX;
			l->nops = decode_expr(w, ptr, (size_t)len, &l->ops);
			if (l->nops) {
				*out = l;
				n = 1;
			}
		}
		break;
	case DW_FORM_block1: case DW_FORM_block2: case DW_FORM_block4: case DW_FORM_block:
		if (dwarf_formblock(a, &blk, &w->e) == DW_DLV_OK && blk) {
			struct jp_loc *l = fl_arena_alloc(&w->ix->arena, sizeof(*l));
			l->lo = 0;
			l->hi = UINT64_MAX;
			l->nops = decode_expr(w, blk->bl_data, (size_t)blk->bl_len, &l->ops);
			if (l->nops) {
				*out = l;
				n = 1;
			}
			dwarf_dealloc(w->dbg, blk, DW_DLA_BLOCK);
		}
		break;
	case DW_FORM_sec_offset: case DW_FORM_data4: case DW_FORM_data8:
		if (dwarf_global_formref(a, &off, &w->e) != DW_DLV_OK) {
			CLR(w);
			if (dwarf_formudata(a, &u, &w->e) == DW_DLV_OK)
				off = u;
		}
		n = w->version >= 5 ? read_loclists(w, off, out) : read_loc(w, off, out);
		break;
	case DW_FORM_loclistx:
		if (dwarf_formudata(a, &u, &w->e) == DW_DLV_OK && w->loclists.p &&
		    w->loclists_base <= w->loclists.n && u < (w->loclists.n - w->loclists_base) / w->offset_size) {
			struct rd r = { w->loclists.p + w->loclists_base + u * w->offset_size,
					w->loclists.p + w->loclists.n, false };
			uint64_t rel = rd_n(&r, (int)w->offset_size);
			if (!r.bad)
				n = read_loclists(w, w->loclists_base + rel, out);
		}
		break;
	default:
		break;
	}
	CLR(w);
	dwarf_dealloc(w->dbg, a, DW_DLA_ATTR);
	return n;
}

/* The address ranges of @d: low/high pc or DW_AT_ranges.  Returns the count
 * (arena array in *out). */
static uint32_t die_ranges(struct walk *w, Dwarf_Die d, struct jp_range **out)
{
	*out = NULL;
	Dwarf_Addr lo = 0, hi = 0;
	Dwarf_Half form = 0;
	enum Dwarf_Form_Class cls = DW_FORM_CLASS_UNKNOWN;
	if (dwarf_lowpc(d, &lo, &w->e) == DW_DLV_OK) {
		if (dwarf_highpc_b(d, &hi, &form, &cls, &w->e) == DW_DLV_OK) {
			if (cls == DW_FORM_CLASS_CONSTANT)
				hi += lo;
			if (hi > lo) {
				*out = fl_arena_alloc(&w->ix->arena, sizeof(**out));
				(*out)->lo = lo;
				(*out)->hi = hi;
				return 1;
			}
			return 0;
		}
		CLR(w);
	}
	CLR(w);
	Dwarf_Attribute a;
	if (!attr_get(w, d, DW_AT_ranges, &a))
		return 0;
	uint32_t n = 0;
	Dwarf_Half f = 0;
	if (dwarf_whatform(a, &f, &w->e) != DW_DLV_OK)
		f = 0;
	CLR(w);
	if (w->version >= 5 || f == DW_FORM_rnglistx) {
		Dwarf_Unsigned val = 0;
		if (f == DW_FORM_rnglistx || f == DW_FORM_sec_offset || f == DW_FORM_data4 ||
		    f == DW_FORM_data8) {
			if (dwarf_formudata(a, &val, &w->e) != DW_DLV_OK) {
				CLR(w);
				if (f == DW_FORM_sec_offset) {
					Dwarf_Off o;
					if (dwarf_global_formref(a, &o, &w->e) == DW_DLV_OK)
						val = o;
				}
			}
			CLR(w);
			Dwarf_Rnglists_Head head = NULL;
			Dwarf_Unsigned cnt = 0, goff = 0;
			if (dwarf_rnglists_get_rle_head(a, f, val, &head, &cnt, &goff, &w->e) == DW_DLV_OK) {
				if (cnt > 65536)
					cnt = 65536;
				struct jp_range *v = cnt ? fl_arena_alloc(&w->ix->arena, cnt * sizeof(*v)) : NULL;
				for (Dwarf_Unsigned i = 0; i < cnt; i++) {
					unsigned len = 0, rle = 0;
					Dwarf_Unsigned r1, r2, c1 = 0, c2 = 0;
					Dwarf_Bool unavail = 0;
					if (dwarf_get_rnglists_entry_fields_a(head, i, &len, &rle, &r1, &r2,
									      &unavail, &c1, &c2, &w->e) != DW_DLV_OK) {
						CLR(w);
						break;
					}
					if (unavail)
						continue;
					if (rle == DW_RLE_startx_endx || rle == DW_RLE_startx_length ||
					    rle == DW_RLE_offset_pair || rle == DW_RLE_start_end ||
					    rle == DW_RLE_start_length) {
						if (c1 < c2) {
							v[n].lo = c1;
							v[n].hi = c2;
							n++;
						}
					}
				}
				dwarf_dealloc_rnglists_head(head);
				*out = v;
			}
			CLR(w);
		}
	} else {
		Dwarf_Off off = 0;
		Dwarf_Unsigned u = 0;
		if (dwarf_global_formref(a, &off, &w->e) != DW_DLV_OK) {
			CLR(w);
			if (dwarf_formudata(a, &u, &w->e) == DW_DLV_OK)
				off = u;
		}
		CLR(w);
		Dwarf_Ranges *r = NULL;
		Dwarf_Signed cnt = 0;
		Dwarf_Unsigned bytes = 0;
		Dwarf_Off real = 0;
		if (dwarf_get_ranges_b(w->dbg, off, d, &real, &r, &cnt, &bytes, &w->e) == DW_DLV_OK) {
			uint64_t base = w->base;
			struct jp_range *v = cnt > 0 ? fl_arena_alloc(&w->ix->arena, (size_t)cnt * sizeof(*v)) : NULL;
			for (Dwarf_Signed i = 0; i < cnt; i++) {
				if (r[i].dwr_type == DW_RANGES_ADDRESS_SELECTION) {
					base = r[i].dwr_addr2;
				} else if (r[i].dwr_type == DW_RANGES_ENTRY) {
					uint64_t lo2 = base + r[i].dwr_addr1, hi2 = base + r[i].dwr_addr2;
					if (lo2 < hi2) {
						v[n].lo = lo2;
						v[n].hi = hi2;
						n++;
					}
				}
			}
			dwarf_ranges_dealloc(w->dbg, r, cnt);
			*out = v;
		}
		CLR(w);
	}
	dwarf_dealloc(w->dbg, a, DW_DLA_ATTR);
	return n;
}

/* ---- DIEs ---------------------------------------------------------------- */

struct fctx {
	int32_t func;             /* the jp_func the variables go to, or -1 */
	struct jp_range *scope;   /* innermost lexical block, NULL: the function */
	uint32_t nscope;
};

static void walk_children(struct walk *w, Dwarf_Die parent, struct fctx fc, int depth);

static void add_fname(struct walk *w, const char *name)
{
	if (name)
		FL_PUSH(&w->ix->arena, w->ix->fnames, w->ix->nfnames, w->ix->fnames_cap, name);
}

static struct jp_type *type_new(struct walk *w, Dwarf_Die d, enum jp_type_kind kind)
{
	Dwarf_Off off = 0;
	if (dwarf_dieoffset(d, &off, &w->e) != DW_DLV_OK) {
		CLR(w);
		return NULL;
	}
	struct jp_type t = { .die = off, .kind = kind, .target = -1, .def = -1 };
	t.name = die_name(w, d);
	uint64_t v;
	if (attr_udata(w, d, DW_AT_byte_size, &v))
		t.size = v;
	t.declaration = attr_flag(w, d, DW_AT_declaration);
	if (!attr_ref(w, d, DW_AT_type, &t.target_die))
		t.target_die = 0;
	if (kind == JP_T_BASE && attr_udata(w, d, DW_AT_encoding, &v))
		t.is_signed = v == DW_ATE_signed || v == DW_ATE_signed_char;
	if (kind == JP_T_POINTER && !t.size)
		t.size = 8;
	FL_PUSH(&w->ix->arena, w->ix->types, w->ix->ntypes, w->ix->types_cap, t);
	return &w->ix->types[w->ix->ntypes - 1];
}

static void add_member(struct walk *w, Dwarf_Die d, struct jp_member **v, uint32_t *n,
		       size_t *cap, bool is_union)
{
	struct jp_member m = { .type = -1 };
	m.name = die_name(w, d);
	uint64_t off = 0;
	if (!is_union && !attr_udata(w, d, DW_AT_data_member_location, &off)) {
		struct jp_loc *l;
		if (attr_locs(w, d, DW_AT_data_member_location, &l) == 1 && l->nops == 1 &&
		    l->ops[0].atom == DW_OP_plus_uconst)
			off = l->ops[0].a;
	}
	m.offset = off;
	uint64_t bs = 0, bo = 0, dbo = 0, bytesz = 0;
	if (attr_udata(w, d, DW_AT_bit_size, &bs) && bs > 0 && bs < 65536) {
		uint64_t bit;
		if (attr_udata(w, d, DW_AT_data_bit_offset, &dbo)) {
			bit = dbo;
		} else if (attr_udata(w, d, DW_AT_bit_offset, &bo)) {
			/* DWARF 2/3: bits from the most significant end of a
			 * storage unit of DW_AT_byte_size bytes at the member
			 * location; on a little-endian machine that is: */
			if (!attr_udata(w, d, DW_AT_byte_size, &bytesz))
				bytesz = 4;
			bit = off * 8 + bytesz * 8 - bo - bs;
		} else {
			bit = off * 8;
		}
		m.bit_offset = (uint32_t)bit;
		m.bit_size = (uint32_t)bs;
		m.offset = bit / 8;
		m.size = (bit + bs + 7) / 8 - bit / 8;
	}
	FL_PUSH(&w->ix->arena, *v, *n, *cap, m);
}

static void walk_struct(struct walk *w, Dwarf_Die d, enum jp_type_kind kind, int depth)
{
	struct jp_type *t = type_new(w, d, kind);
	if (!t)
		return;
	size_t ti = (size_t)(t - w->ix->types);
	struct jp_member *mv = NULL;
	uint32_t n = 0;
	size_t cap = 0;
	uint64_t *dies = NULL;
	size_t ndies = 0, dcap = 0;
	Dwarf_Die c = NULL;
	int rc = dwarf_child(d, &c, &w->e);
	CLR(w);
	while (rc == DW_DLV_OK) {
		Dwarf_Half tag = 0;
		if (dwarf_tag(c, &tag, &w->e) != DW_DLV_OK)
			tag = 0;
		CLR(w);
		if (tag == DW_TAG_member) {
			add_member(w, c, &mv, &n, &cap, kind == JP_T_UNION);
			uint64_t td = 0;
			if (!attr_ref(w, c, DW_AT_type, &td))
				td = 0;
			FL_PUSH(&w->ix->arena, dies, ndies, dcap, td);
		} else if (depth < MAX_DEPTH) {
			/* Nested type definitions (struct in struct in C). */
			switch (tag) {
			case DW_TAG_structure_type:
			case DW_TAG_class_type:
				walk_struct(w, c, JP_T_STRUCT, depth + 1);
				break;
			case DW_TAG_union_type:
				walk_struct(w, c, JP_T_UNION, depth + 1);
				break;
			default:
				break;
			}
		}
		Dwarf_Die s = NULL;
		rc = dwarf_siblingof_b(w->dbg, c, 1, &s, &w->e);
		CLR(w);
		dwarf_dealloc(w->dbg, c, DW_DLA_DIE);
		c = s;
	}
	t = &w->ix->types[ti];
	t->members = mv;
	t->nmembers = n;
	/* A struct has no target type, so its target_die carries the array
	 * of its members' type dies until resolve_types looks them up. */
	t->target_die = n ? (uint64_t)(uintptr_t)dies : 0;
}

static void walk_var(struct walk *w, Dwarf_Die d, struct fctx fc, bool param)
{
	struct jp_var v = { .type = -1, .param = param };
	bool has_type = false;
	die_name_type(w, d, &v.name, &v.type_die, &has_type);
	if (!has_type)
		v.type_die = 0;
	v.nlocs = attr_locs(w, d, DW_AT_location, &v.locs);
	v.scope = fc.scope;
	v.nscope = fc.nscope;
	if (fc.func < 0) {
		/* A global or static: keep it if it has a fixed address. */
		if (v.nlocs == 1 && v.locs[0].nops == 1 && v.locs[0].ops[0].atom == DW_OP_addr && v.name) {
			struct jp_global g = { .name = v.name, .addr = v.locs[0].ops[0].a,
					       .type = -1, .type_die = v.type_die };
			FL_PUSH(&w->ix->arena, w->ix->globals, w->ix->nglobals, w->ix->globals_cap, g);
		}
		return;
	}
	if (!v.name)
		return;
	struct jp_func *f = &w->ix->funcs[fc.func];
	/* Grow at powers of two: nvars doubles as the capacity. */
	if (f->nvars == 0 || (f->nvars & (f->nvars - 1)) == 0) {
		size_t ncap = f->nvars ? (size_t)f->nvars * 2 : 4;
		struct jp_var *nv = fl_arena_alloc(&w->ix->arena, ncap * sizeof(*nv));
		if (f->nvars)
			memcpy(nv, f->vars, f->nvars * sizeof(*nv));
		f->vars = nv;
	}
	f->vars[f->nvars++] = v;
}

static void walk_func(struct walk *w, Dwarf_Die d, struct fctx outer, bool inlined, int depth)
{
	const char *name;
	uint64_t tdie;
	bool ht;
	die_name_type(w, d, &name, &tdie, &ht);
	add_fname(w, name);
	struct jp_range *r;
	uint32_t nr = die_ranges(w, d, &r);
	if (nr == 0) {
		/* A declaration or an abstract instance: no code of its own,
		 * but its children may still hold types. */
		struct fctx none = { .func = -1 };
		if (!inlined)
			walk_children(w, d, none, depth + 1);
		return;
	}
	struct jp_func f = { .name = name, .cu = w->cu, .ranges = r, .nranges = nr,
			     .inlined = inlined, .parent = inlined ? outer.func : -1,
			     .ret_type = -1, .ret_type_die = ht ? tdie : 0 };
	f.linkage = die_linkage(w, d);
	f.external = attr_flag(w, d, DW_AT_external);
	/* An out-of-line function in several ranges (a hot part and a cold
	 * one) starts where its first range does, as compilers list them:
	 * its cold part may lie lower.  jp_image.c checks it against the
	 * function's symbol. */
	f.entry = r[0].lo;
	for (uint32_t i = 1; inlined && i < nr; i++)
		if (r[i].lo < f.entry)
			f.entry = r[i].lo;
	uint64_t v;
	/* DW_AT_entry_pc is an address, or in DWARF 5 a constant offset from
	 * the low pc. */
	if (attr_udata(w, d, DW_AT_entry_pc, &v))
		f.entry = r[0].lo + v;
	{
		Dwarf_Attribute a;
		if (attr_get(w, d, DW_AT_entry_pc, &a)) {
			Dwarf_Addr ad = 0;
			if (dwarf_formaddr(a, &ad, &w->e) == DW_DLV_OK && ad)
				f.entry = ad;
			CLR(w);
			dwarf_dealloc(w->dbg, a, DW_DLA_ATTR);
		}
	}
	if (inlined) {
		if (attr_udata(w, d, DW_AT_call_file, &v))
			f.call_file = file_at(w, v);
		if (attr_udata(w, d, DW_AT_call_line, &v))
			f.call_line = (uint32_t)v;
		if (outer.func >= 0) {
			f.fb = w->ix->funcs[outer.func].fb;
			f.nfb = w->ix->funcs[outer.func].nfb;
		}
	} else {
		struct jp_loc *l;
		if (attr_locs(w, d, DW_AT_frame_base, &l) >= 1) {
			f.fb = l[0].ops;
			f.nfb = l[0].nops;
		}
	}
	if (attr_udata(w, d, DW_AT_decl_line, &v))
		f.decl_line = (uint32_t)v;
	if (attr_udata(w, d, DW_AT_decl_file, &v))
		f.decl_file = file_at(w, v);
	FL_PUSH(&w->ix->arena, w->ix->funcs, w->ix->nfuncs, w->ix->funcs_cap, f);
	struct fctx fc = { .func = (int32_t)(w->ix->nfuncs - 1) };
	walk_children(w, d, fc, depth + 1);
}

static void walk_die(struct walk *w, Dwarf_Die d, struct fctx fc, int depth)
{
	Dwarf_Half tag = 0;
	if (dwarf_tag(d, &tag, &w->e) != DW_DLV_OK) {
		CLR(w);
		return;
	}
	switch (tag) {
	case DW_TAG_subprogram:
		walk_func(w, d, fc, false, depth);
		return;
	case DW_TAG_inlined_subroutine:
		walk_func(w, d, fc, true, depth);
		return;
	case DW_TAG_formal_parameter:
		walk_var(w, d, fc, true);
		return;
	case DW_TAG_variable:
		walk_var(w, d, fc, false);
		return;
	case DW_TAG_lexical_block: {
		struct jp_range *r;
		uint32_t nr = die_ranges(w, d, &r);
		struct fctx in = fc;
		if (nr) {
			in.scope = r;
			in.nscope = nr;
		}
		walk_children(w, d, in, depth + 1);
		return;
	}
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
		walk_struct(w, d, JP_T_STRUCT, depth);
		return;
	case DW_TAG_union_type:
		walk_struct(w, d, JP_T_UNION, depth);
		return;
	case DW_TAG_base_type:
		type_new(w, d, JP_T_BASE);
		return;
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		type_new(w, d, JP_T_POINTER);
		return;
	case DW_TAG_typedef:
		type_new(w, d, JP_T_TYPEDEF);
		return;
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
	case DW_TAG_restrict_type:
	case DW_TAG_atomic_type:
		type_new(w, d, JP_T_CV);
		return;
	case DW_TAG_enumeration_type:
		type_new(w, d, JP_T_ENUM);
		return;
	case DW_TAG_subroutine_type:
		type_new(w, d, JP_T_FUNC);
		return;
	case DW_TAG_array_type: {
		struct jp_type *t = type_new(w, d, JP_T_ARRAY);
		if (!t)
			return;
		size_t ti = (size_t)(t - w->ix->types);
		/* Element count: product of the subranges' counts. */
		uint64_t count = 1;
		bool known = true;
		Dwarf_Die c = NULL;
		int rc = dwarf_child(d, &c, &w->e);
		CLR(w);
		while (rc == DW_DLV_OK) {
			uint64_t v;
			if (attr_udata(w, c, DW_AT_count, &v))
				count *= v;
			else if (attr_udata(w, c, DW_AT_upper_bound, &v) && v < (1ull << 40))
				count *= v + 1;
			else
				known = false;
			Dwarf_Die s = NULL;
			rc = dwarf_siblingof_b(w->dbg, c, 1, &s, &w->e);
			CLR(w);
			dwarf_dealloc(w->dbg, c, DW_DLA_DIE);
			c = s;
		}
		/* The element size is not known yet: keep the count in size,
		 * marked by is_signed, and multiply after resolution. */
		if (!w->ix->types[ti].size) {
			w->ix->types[ti].size = known ? count : 0;
			w->ix->types[ti].is_signed = known;
		}
		return;
	}
	case DW_TAG_namespace:
	case DW_TAG_module:
		walk_children(w, d, fc, depth + 1);
		return;
	default:
		return;
	}
}

static void walk_children(struct walk *w, Dwarf_Die parent, struct fctx fc, int depth)
{
	if (depth > MAX_DEPTH)
		return;
	Dwarf_Die c = NULL;
	int rc = dwarf_child(parent, &c, &w->e);
	CLR(w);
	while (rc == DW_DLV_OK) {
		walk_die(w, c, fc, depth);
		Dwarf_Die s = NULL;
		rc = dwarf_siblingof_b(w->dbg, c, 1, &s, &w->e);
		CLR(w);
		dwarf_dealloc(w->dbg, c, DW_DLA_DIE);
		c = s;
	}
}

/* ---- line table ---------------------------------------------------------- */

static void read_lines(struct walk *w, Dwarf_Die cu)
{
	Dwarf_Unsigned ver = 0;
	Dwarf_Small tc = 0;
	Dwarf_Line_Context ctx = NULL;
	if (dwarf_srclines_b(cu, &ver, &tc, &ctx, &w->e) != DW_DLV_OK) {
		CLR(w);
		return;
	}
	Dwarf_Line *lines = NULL;
	Dwarf_Signed n = 0;
	if (dwarf_srclines_from_linecontext(ctx, &lines, &n, &w->e) != DW_DLV_OK) {
		CLR(w);
		dwarf_srclines_dealloc_b(ctx);
		return;
	}
	/* File names by file number, cached: dwarf_linesrc allocates. */
	enum { NCACHE = 512 };
	const char *cache[NCACHE];
	memset(cache, 0, sizeof(cache));
	for (Dwarf_Signed i = 0; i < n; i++) {
		Dwarf_Addr addr = 0;
		Dwarf_Unsigned lno = 0, fno = 0;
		Dwarf_Bool stmt = 0, end = 0, pe = 0, eb = 0;
		Dwarf_Unsigned isa = 0, disc = 0;
		if (dwarf_lineaddr(lines[i], &addr, &w->e) != DW_DLV_OK ||
		    dwarf_lineno(lines[i], &lno, &w->e) != DW_DLV_OK) {
			CLR(w);
			continue;
		}
		if (dwarf_linebeginstatement(lines[i], &stmt, &w->e) != DW_DLV_OK)
			stmt = 0;
		CLR(w);
		if (dwarf_lineendsequence(lines[i], &end, &w->e) != DW_DLV_OK)
			end = 0;
		CLR(w);
		if (dwarf_prologue_end_etc(lines[i], &pe, &eb, &isa, &disc, &w->e) != DW_DLV_OK)
			pe = 0;
		CLR(w);
		if (dwarf_line_srcfileno(lines[i], &fno, &w->e) != DW_DLV_OK)
			fno = (Dwarf_Unsigned)-1;
		CLR(w);
		const char *file = fno < NCACHE ? cache[fno] : NULL;
		if (!file) {
			char *s = NULL;
			if (dwarf_linesrc(lines[i], &s, &w->e) == DW_DLV_OK && s) {
				file = intern(w, s);
				dwarf_dealloc(w->dbg, s, DW_DLA_STRING);
			}
			CLR(w);
			if (file && fno < NCACHE)
				cache[fno] = file;
		}
		struct jp_line l = { .addr = addr, .file = file, .line = (uint32_t)lno,
				     .flags = (stmt ? JP_LINE_STMT : 0) | (pe ? JP_LINE_PROLOGUE_END : 0) |
					      (end ? JP_LINE_END_SEQ : 0) };
		FL_PUSH(&w->ix->arena, w->ix->lines, w->ix->nlines, w->ix->lines_cap, l);
	}
	dwarf_srclines_dealloc_b(ctx);
}

/* ---- resolution of type references ---------------------------------------- */

static int type_cmp(const void *a, const void *b)
{
	const struct jp_type *x = a, *y = b;
	return x->die < y->die ? -1 : x->die > y->die;
}

static int32_t type_by_die(const struct jp_index *ix, uint64_t die)
{
	if (!die)
		return -1;
	size_t lo = 0, hi = ix->ntypes;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ix->types[mid].die < die)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ix->ntypes && ix->types[lo].die == die ? (int32_t)lo : -1;
}

static uint64_t type_size(const struct jp_index *ix, int32_t t, int depth)
{
	if (t < 0 || depth > 16)
		return 0;
	const struct jp_type *ty = &ix->types[t];
	if (ty->size && ty->kind != JP_T_ARRAY)
		return ty->size;
	if (ty->kind == JP_T_TYPEDEF || ty->kind == JP_T_CV)
		return type_size(ix, ty->target, depth + 1);
	if (ty->kind == JP_T_ARRAY)
		return ty->size;
	return 0;
}

static void resolve_types(struct jp_index *ix)
{
	if (ix->ntypes > 1)
		qsort(ix->types, ix->ntypes, sizeof(*ix->types), type_cmp);
	for (size_t i = 0; i < ix->ntypes; i++) {
		struct jp_type *t = &ix->types[i];
		if (t->kind == JP_T_STRUCT || t->kind == JP_T_UNION) {
			const uint64_t *dies = (const uint64_t *)(uintptr_t)t->target_die;
			for (uint32_t k = 0; k < t->nmembers && dies; k++)
				t->members[k].type = type_by_die(ix, dies[k]);
			t->target_die = 0;
			t->target = -1;
		} else {
			t->target = type_by_die(ix, t->target_die);
		}
	}
	/* Arrays: size = count * element size, once elements are known. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < ix->ntypes; i++) {
			struct jp_type *t = &ix->types[i];
			if (t->kind == JP_T_ARRAY && t->is_signed) {
				uint64_t es = type_size(ix, t->target, 0);
				if (es || pass == 1) {
					t->size = t->size * es;
					t->is_signed = false;
				}
			}
		}
	for (size_t i = 0; i < ix->ntypes; i++) {
		struct jp_type *t = &ix->types[i];
		for (uint32_t k = 0; k < t->nmembers; k++) {
			struct jp_member *m = &t->members[k];
			if (!m->bit_size)
				m->size = type_size(ix, m->type, 0);
		}
		if ((t->kind == JP_T_TYPEDEF || t->kind == JP_T_CV) && !t->size)
			t->size = type_size(ix, (int32_t)i, 0);
	}
	for (size_t f = 0; f < ix->nfuncs; f++) {
		if (ix->funcs[f].ret_type_die)
			ix->funcs[f].ret_type = type_by_die(ix, ix->funcs[f].ret_type_die);
		for (uint32_t k = 0; k < ix->funcs[f].nvars; k++)
			ix->funcs[f].vars[k].type = type_by_die(ix, ix->funcs[f].vars[k].type_die);
	}
	for (size_t g = 0; g < ix->nglobals; g++)
		ix->globals[g].type = type_by_die(ix, ix->globals[g].type_die);
}

struct line_sort {
	struct jp_line l;
	size_t order;
};

static int line_cmp(const void *a, const void *b)
{
	const struct line_sort *x = a, *y = b;
	if (x->l.addr != y->l.addr)
		return x->l.addr < y->l.addr ? -1 : 1;
	/* At one address an end of sequence comes first: the next sequence
	 * starts there. */
	int xe = !(x->l.flags & JP_LINE_END_SEQ), ye = !(y->l.flags & JP_LINE_END_SEQ);
	if (xe != ye)
		return xe - ye;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int named_cmp(const void *a, const void *b, void *arg)
{
	const struct jp_index *ix = arg;
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	int c = strcmp(ix->types[x].name, ix->types[y].name);
	return c ? c : (x < y ? -1 : x > y);
}

static int global_cmp(const void *a, const void *b)
{
	const struct jp_global *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int fmap_cmp(const void *a, const void *b)
{
	const struct jp_fmap *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->f < y->f ? -1 : x->f > y->f;
}

static void sort_tables(struct jp_index *ix)
{
	if (ix->nglobals > 1)
		qsort(ix->globals, ix->nglobals, sizeof(*ix->globals), global_cmp);
	ix->named = fl_arena_alloc(&ix->arena, (ix->ntypes + 1) * sizeof(*ix->named));
	for (size_t i = 0; i < ix->ntypes; i++)
		if (ix->types[i].name)
			ix->named[ix->nnamed++] = (int32_t)i;
	if (ix->nnamed > 1)
		qsort_r(ix->named, ix->nnamed, sizeof(*ix->named), named_cmp, ix);
	size_t nr = 0;
	for (size_t f = 0; f < ix->nfuncs; f++) {
		if (ix->funcs[f].inlined)
			continue;
		size_t k = f + 1;
		while (k < ix->nfuncs && ix->funcs[k].inlined)
			k++;
		ix->funcs[f].ninl = (uint32_t)(k - f - 1);
		nr += ix->funcs[f].nranges;
	}
	ix->fmap = fl_arena_alloc(&ix->arena, (nr ? nr : 1) * sizeof(*ix->fmap));
	for (size_t f = 0; f < ix->nfuncs; f++)
		if (!ix->funcs[f].inlined)
			for (uint32_t r = 0; r < ix->funcs[f].nranges; r++) {
				struct jp_fmap *m = &ix->fmap[ix->nfmap++];
				m->lo = ix->funcs[f].ranges[r].lo;
				m->hi = ix->funcs[f].ranges[r].hi;
				m->f = (int32_t)f;
			}
	qsort(ix->fmap, ix->nfmap, sizeof(*ix->fmap), fmap_cmp);
	if (ix->nlines) {
		struct line_sort *tmp = malloc(ix->nlines * sizeof(*tmp));
		if (!tmp)
			fl_oom();
		for (size_t i = 0; i < ix->nlines; i++) {
			tmp[i].l = ix->lines[i];
			tmp[i].order = i;
		}
		qsort(tmp, ix->nlines, sizeof(*tmp), line_cmp);
		for (size_t i = 0; i < ix->nlines; i++)
			ix->lines[i] = tmp[i].l;
		free(tmp);
	}
	if (ix->nfnames) {
		qsort(ix->fnames, ix->nfnames, sizeof(*ix->fnames), str_cmp);
		size_t k = 1;
		for (size_t i = 1; i < ix->nfnames; i++)
			if (strcmp(ix->fnames[i], ix->fnames[k - 1]) != 0)
				ix->fnames[k++] = ix->fnames[i];
		ix->nfnames = k;
	}
}

/* ---- CFI ------------------------------------------------------------------ */

static void load_cfi(struct dw_state *s, Dwarf_Debug dbg, Dwarf_Error *e)
{
	if (dwarf_get_fde_list_eh(dbg, &s->cies, &s->ncies, &s->fdes, &s->nfdes, e) == DW_DLV_OK) {
		s->eh = true;
		return;
	}
	if (*e) {
		dwarf_dealloc(dbg, *e, DW_DLA_ERROR);
		*e = NULL;
	}
	if (dwarf_get_fde_list(dbg, &s->cies, &s->ncies, &s->fdes, &s->nfdes, e) == DW_DLV_OK)
		return;
	if (*e) {
		dwarf_dealloc(dbg, *e, DW_DLA_ERROR);
		*e = NULL;
	}
	s->fdes = NULL;
	s->nfdes = 0;
}

int jp_dwarf_cfa(struct jp_index *ix, uint64_t pc, unsigned *reg, int64_t *off)
{
	struct dw_state *s = ix->dw;
	if (!s || !s->fdes || !s->fdbg)
		return -ENOENT;
	if (s->cached && s->cached_pc == pc) {
		*reg = s->cached_reg;
		*off = s->cached_off;
		return s->cached_rc;
	}
	Dwarf_Error e = NULL;
	Dwarf_Fde fde = NULL;
	Dwarf_Addr lo = 0, hi = 0;
	int rc = -ENOENT;
	if (dwarf_get_fde_at_pc(s->fdes, pc, &fde, &lo, &hi, &e) == DW_DLV_OK) {
		Dwarf_Small vt = 0;
		Dwarf_Signed rel = 0, r = 0, o = 0;
		Dwarf_Ptr blk = NULL;
		Dwarf_Addr row = 0, next = 0;
		Dwarf_Bool more = 0;
		if (dwarf_get_fde_info_for_cfa_reg3_b(fde, pc, &vt, &rel, &r, &o, &blk, &row,
						      &more, &next, &e) == DW_DLV_OK &&
		    vt == DW_EXPR_OFFSET && r >= 0 && r < JP_NREGS) {
			*reg = (unsigned)r;
			*off = o;
			rc = 0;
		}
	}
	if (e)
		dwarf_dealloc(s->fdbg, e, DW_DLA_ERROR);
	s->cached = true;
	s->cached_pc = pc;
	s->cached_rc = rc;
	s->cached_reg = rc == 0 ? *reg : 0;
	s->cached_off = rc == 0 ? *off : 0;
	return rc;
}

/* ---- entry --------------------------------------------------------------- */

int jp_dwarf_index_build(struct jp_index *ix, struct jp_elf *dbg_elf, struct jp_elf *code_elf,
			 struct jp_err *err)
{
	memset(ix, 0, sizeof(*ix));
	fl_arena_init(&ix->arena);
	struct dw_state *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	ix->dw = s;
	Dwarf_Error e = NULL;
	/* Before libdwarf looks at the sections: sec_get may decompress. */
	struct sec loc = sec_get((Elf *)dbg_elf->elf, ".debug_loc");
	struct sec loclists = sec_get((Elf *)dbg_elf->elf, ".debug_loclists");
	struct sec addr = sec_get((Elf *)dbg_elf->elf, ".debug_addr");
	int rc = dwarf_elf_init_b((dwarf_elf_handle)dbg_elf->elf, DW_DLC_READ, DW_GROUPNUMBER_ANY,
				  NULL, NULL, &s->dbg, &e);
	if (rc != DW_DLV_OK) {
		if (rc == DW_DLV_ERROR) {
			snprintf(err->msg, sizeof(err->msg), "%s: corrupted DWARF: %s", dbg_elf->name,
				 dwarf_errmsg(e));
			dwarf_dealloc(NULL, e, DW_DLA_ERROR);
			s->dbg = NULL;
			return -EINVAL;
		}
		s->dbg = NULL;
		snprintf(err->msg, sizeof(err->msg), "%s: no DWARF debug info", dbg_elf->name);
		return -ENODATA;
	}
	struct walk w = { .dbg = s->dbg, .ix = ix, .loc = loc, .loclists = loclists, .addr = addr };
	for (unsigned cu = 0;; cu++) {
		Dwarf_Unsigned hlen = 0, toff = 0, next = 0;
		Dwarf_Half ver = 0, asz = 0, lsz = 0, esz = 0, ctype = 0;
		Dwarf_Off aoff = 0;
		Dwarf_Sig8 sig;
		rc = dwarf_next_cu_header_d(s->dbg, 1, &hlen, &ver, &aoff, &asz, &lsz, &esz, &sig,
					    &toff, &next, &ctype, &w.e);
		if (rc == DW_DLV_NO_ENTRY)
			break;
		if (rc == DW_DLV_ERROR) {
			snprintf(err->msg, sizeof(err->msg), "%s: corrupted DWARF unit header: %s",
				 dbg_elf->name, dwarf_errmsg(w.e));
			CLR(&w);
			rc = -EINVAL;
			goto out;
		}
		Dwarf_Die cud = NULL;
		if (dwarf_siblingof_b(s->dbg, NULL, 1, &cud, &w.e) != DW_DLV_OK) {
			CLR(&w);
			continue;
		}
		struct jp_cu c = { .version = ver };
		c.name = die_name(&w, cud);
		c.comp_dir = attr_str(&w, cud, DW_AT_comp_dir);
		c.producer = attr_str(&w, cud, DW_AT_producer);
		c.path = join_path(&w, c.comp_dir, c.name);
		FL_PUSH(&ix->arena, ix->cus, ix->ncus, ix->cus_cap, c);
		w.cu = (uint32_t)(ix->ncus - 1);
		w.version = ver;
		w.offset_size = lsz == 8 ? 8 : 4;
		uint64_t v = 0;
		w.addr_base = attr_udata(&w, cud, DW_AT_addr_base, &v) ? v
			    : attr_udata(&w, cud, DW_AT_GNU_addr_base, &v) ? v : 8;
		w.loclists_base = attr_udata(&w, cud, DW_AT_loclists_base, &v) ? v : 12;
		w.comp_dir = c.comp_dir;
		Dwarf_Addr base = 0;
		if (dwarf_lowpc(cud, &base, &w.e) != DW_DLV_OK)
			base = 0;
		CLR(&w);
		w.base = base;
		w.files = NULL;
		w.nfiles = 0;
		if (dwarf_srcfiles(cud, &w.files, &w.nfiles, &w.e) != DW_DLV_OK) {
			w.files = NULL;
			w.nfiles = 0;
		}
		CLR(&w);
		struct fctx fc = { .func = -1 };
		walk_children(&w, cud, fc, 0);
		read_lines(&w, cud);
		if (w.files) {
			for (Dwarf_Signed i = 0; i < w.nfiles; i++)
				dwarf_dealloc(s->dbg, w.files[i], DW_DLA_STRING);
			dwarf_dealloc(s->dbg, w.files, DW_DLA_LIST);
			w.files = NULL;
		}
		dwarf_dealloc(s->dbg, cud, DW_DLA_DIE);
	}
	resolve_types(ix);
	sort_tables(ix);
	/* Incomplete structs (struct S; in a unit that never defines it) are
	 * typed through the definition elsewhere: look each up once. */
	for (size_t i = 0; i < ix->ntypes; i++) {
		struct jp_type *t = &ix->types[i];
		if (t->kind != JP_T_STRUCT && t->kind != JP_T_UNION)
			continue;
		if (t->nmembers && !t->declaration)
			t->def = (int32_t)i;
		else
			t->def = t->name ? jp_struct_find(ix, t->name) : -1;
	}
	/* Inlined instances follow their function in walk order; the lookup
	 * in jp_func_at relies on it. */
	s->fdbg = s->dbg;
	load_cfi(s, s->dbg, &e);
	if (!s->fdes && code_elf && code_elf != dbg_elf) {
		Dwarf_Debug f = NULL;
		if (dwarf_elf_init_b((dwarf_elf_handle)code_elf->elf, DW_DLC_READ, DW_GROUPNUMBER_ANY,
				     NULL, NULL, &f, &e) == DW_DLV_OK) {
			s->fdbg = f;
			s->fdes_owner_is_f = true;
			load_cfi(s, f, &e);
		} else if (e) {
			dwarf_dealloc(NULL, e, DW_DLA_ERROR);
			e = NULL;
		}
	}
	rc = 0;
	if (ix->ncus == 0) {
		snprintf(err->msg, sizeof(err->msg), "%s: no DWARF compilation units", dbg_elf->name);
		rc = -ENODATA;
	}
out:
	free(w.st.v);
	return rc;
}

void jp_dwarf_index_fini(struct jp_index *ix)
{
	struct dw_state *s = ix->dw;
	if (s) {
		if (s->fdes)
			dwarf_fde_cie_list_dealloc(s->fdbg, s->cies, s->ncies, s->fdes, s->nfdes);
		Dwarf_Error e = NULL;
		if (s->fdes_owner_is_f && s->fdbg)
			dwarf_finish(s->fdbg, &e);
		if (s->dbg)
			dwarf_finish(s->dbg, &e);
		free(s);
	}
	fl_arena_fini(&ix->arena);
	memset(ix, 0, sizeof(*ix));
}
