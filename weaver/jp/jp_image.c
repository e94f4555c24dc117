/*
 * A weave target: the binary, where its DWARF comes from (itself, or a
 * separate debug file found by build id or .gnu_debuglink), the index, and
 * decoded functions cached per function.
 */
#include "weaver/jp/joinpoint.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct jp_image {
	struct jp_elf elf;        /* the binary: code and symbols */
	struct jp_elf dbg;        /* the separate debug file, if one */
	bool has_dbg;
	struct jp_index ix;
	bool has_ix;
	struct jp_code *code;     /* per function, decoded on demand */
	bool *decoded;
};

static int open_debug_file(struct jp_image *img, const char *path, const char *root,
			   char *tried, size_t tlen)
{
	const char *r = root ? root : "/usr/lib/debug";
	char cand[4][4096];
	int nc = 0;
	const char *bid = img->elf.build_id;
	if (bid[0] && bid[1] && bid[2])
		snprintf(cand[nc++], sizeof(cand[0]), "%s/.build-id/%.2s/%s.debug", r, bid, bid + 2);
	if (img->elf.debuglink[0] && path) {
		char *dup = strdup(path);
		if (!dup)
			return -ENOMEM;
		const char *dir = dirname(dup);
		snprintf(cand[nc++], sizeof(cand[0]), "%s/%s", dir, img->elf.debuglink);
		snprintf(cand[nc++], sizeof(cand[0]), "%s/.debug/%s", dir, img->elf.debuglink);
		snprintf(cand[nc++], sizeof(cand[0]), "%s%s%s/%s", r, dir[0] == '/' ? "" : "/", dir,
			 img->elf.debuglink);
		free(dup);
	}
	size_t used = 0;
	if (tlen)
		tried[0] = '\0';
	for (int i = 0; i < nc; i++) {
		if (used < tlen)
			used += (size_t)snprintf(tried + used, tlen - used, "%s%s", i ? ", " : "", cand[i]);
		/* The debuglink names the file next to the binary: that is
		 * the binary itself when it carries its own link. */
		if (path && strcmp(cand[i], path) == 0)
			continue;
		if (access(cand[i], R_OK) != 0)
			continue;
		struct jp_err e2;
		if (jp_elf_open(&img->dbg, cand[i], &e2) == 0 && img->dbg.has_dwarf &&
		    (!bid[0] || !img->dbg.build_id[0] || strcmp(bid, img->dbg.build_id) == 0)) {
			img->has_dbg = true;
			return 0;
		}
		jp_elf_close(&img->dbg);
	}
	return -ENOENT;
}

/* The function symbols of the code: the binary's, or its debug file's
 * when the binary is stripped. */
static const struct jp_elf *sym_elf(const struct jp_image *img)
{
	return img->elf.nsyms || !img->has_dbg ? &img->elf : &img->dbg;
}

/* Index of the first symbol at or above @addr. */
static size_t sym_lower(const struct jp_elf *e, uint64_t addr)
{
	size_t lo = 0, hi = e->nsyms;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (e->syms[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const char *jp_image_symbol_at(const struct jp_image *img, uint64_t addr, const char *name)
{
	const struct jp_elf *e = sym_elf(img);
	size_t nl = strlen(name);
	const char *copy = NULL;
	for (size_t i = sym_lower(e, addr); i < e->nsyms && e->syms[i].addr == addr; i++) {
		const char *s = e->syms[i].name;
		if (strcmp(s, name) == 0)
			return s;
		if (!copy && strncmp(s, name, nl) == 0 && s[nl] == '.')
			copy = s;
	}
	return copy;
}

/* DWARF gives a function split into a hot and a cold part as ranges
 * without saying which holds its entry: its symbol does (GCC's f and
 * f.cold, the cold part often the lower). */
static void entries_from_symbols(struct jp_image *img)
{
	const struct jp_elf *e = sym_elf(img);
	for (size_t f = 0; f < img->ix.nfuncs; f++) {
		struct jp_func *fn = &img->ix.funcs[f];
		const char *name = fn->linkage ? fn->linkage : fn->name;
		if (fn->inlined || fn->nranges < 2 || !name)
			continue;
		for (uint32_t r = 0; r < fn->nranges; r++)
			for (size_t i = sym_lower(e, fn->ranges[r].lo);
			     i < e->nsyms && e->syms[i].addr < fn->ranges[r].hi; i++)
				if (strcmp(e->syms[i].name, name) == 0)
					fn->entry = e->syms[i].addr;
	}
}

static int image_finish(struct jp_image *img, const char *path, const struct jp_image_opts *opts,
			struct jp_err *err)
{
	char tried[2048] = "";
	if (!img->elf.has_dwarf) {
		int rc = open_debug_file(img, path, opts ? opts->debug_root : NULL, tried, sizeof(tried));
		if (rc == -ENOMEM)
			return rc;
		if (rc != 0) {
			const char *what = img->elf.has_symtab
				? "no DWARF debug info (build it with -g, or install its debug symbols"
				: "stripped binary: no symbol table and no DWARF debug info (install its debug symbols";
			if (tried[0])
				snprintf(err->msg, sizeof(err->msg), "%s: %s; looked in %s)", img->elf.name,
					 what, tried);
			else
				snprintf(err->msg, sizeof(err->msg), "%s: %s; it has no build id or debuglink to find them by)",
					 img->elf.name, what);
			return -ENODATA;
		}
	}
	int rc = jp_dwarf_index_build(&img->ix, img->has_dbg ? &img->dbg : &img->elf, &img->elf, err);
	img->has_ix = true;
	if (rc != 0)
		return rc;
	entries_from_symbols(img);
	img->code = calloc(img->ix.nfuncs ? img->ix.nfuncs : 1, sizeof(*img->code));
	img->decoded = calloc(img->ix.nfuncs ? img->ix.nfuncs : 1, sizeof(*img->decoded));
	if (!img->code || !img->decoded)
		return -ENOMEM;
	return 0;
}

int jp_image_open(struct jp_image **out, const char *path, const struct jp_image_opts *opts,
		  struct jp_err *err)
{
	*out = NULL;
	struct jp_image *img = calloc(1, sizeof(*img));
	if (!img)
		return -ENOMEM;
	int rc = jp_elf_open(&img->elf, path, err);
	if (rc == 0)
		rc = image_finish(img, path, opts, err);
	if (rc != 0) {
		jp_image_free(img);
		return rc;
	}
	*out = img;
	return 0;
}

int jp_image_open_mem(struct jp_image **out, const char *name, const void *buf, size_t len,
		      struct jp_err *err)
{
	*out = NULL;
	struct jp_image *img = calloc(1, sizeof(*img));
	if (!img)
		return -ENOMEM;
	int rc = jp_elf_open_mem(&img->elf, name, buf, len, err);
	if (rc == 0 && !img->elf.has_dwarf) {
		snprintf(err->msg, sizeof(err->msg), "%s: no DWARF debug info", img->elf.name);
		rc = -ENODATA;
	}
	if (rc == 0)
		rc = image_finish(img, NULL, NULL, err);
	if (rc != 0) {
		jp_image_free(img);
		return rc;
	}
	*out = img;
	return 0;
}

void jp_image_free(struct jp_image *img)
{
	if (!img)
		return;
	if (img->code)
		for (size_t i = 0; i < img->ix.nfuncs; i++)
			jp_code_free(&img->code[i]);
	free(img->code);
	free(img->decoded);
	if (img->has_ix)
		jp_dwarf_index_fini(&img->ix);
	if (img->has_dbg)
		jp_elf_close(&img->dbg);
	jp_elf_close(&img->elf);
	free(img);
}

const char *jp_image_path(const struct jp_image *img)
{
	return img->elf.name;
}

const char *jp_image_debug_path(const struct jp_image *img)
{
	return img->has_dbg ? img->dbg.name : img->elf.name;
}

const char *jp_image_build_id(const struct jp_image *img)
{
	return img->elf.build_id;
}

bool jp_image_is_relocatable(const struct jp_image *img)
{
	return img->elf.type == 3 /* ET_DYN */;
}

struct jp_index *jp_image_index(struct jp_image *img)
{
	return &img->ix;
}

const struct jp_elf *jp_image_elf(const struct jp_image *img)
{
	return &img->elf;
}

const struct jp_code *jp_image_code(struct jp_image *img, size_t f, struct jp_err *err)
{
	if (f >= img->ix.nfuncs)
		return NULL;
	if (!img->decoded[f]) {
		const struct jp_func *fn = &img->ix.funcs[f];
		if (jp_code_decode(&img->elf, fn->ranges, fn->nranges, &img->code[f], err) != 0)
			return NULL;
		img->decoded[f] = true;
	}
	return &img->code[f];
}
