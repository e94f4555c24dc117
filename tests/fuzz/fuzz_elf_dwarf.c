/*
 * Fuzz the ELF/DWARF reader and what runs on its output: any bytes either
 * open as an image, whose every struct and function can then be queried
 * (access, entry, return, local_var, field layouts) without a crash, or are
 * refused with a message.  Seeds: small fixture binaries (gcc and clang,
 * DWARF 4 and 5, -O0 to -O2) in tests/fuzz/corpus/elf_dwarf/.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weaver/jp/joinpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Bound the work per input: a fuzzed index can name thousands of types. */
#define MAX_QUERIES 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jp_image *img = NULL;
	struct jp_err err;
	err.msg[0] = '\0';
	int rc = jp_image_open_mem(&img, "fuzz", data, size, &err);
	if (rc != 0) {
		if (!err.msg[0] && rc != -ENOMEM)
			abort();
		return 0;
	}
	struct jp_index *ix = jp_image_index(img);
	unsigned q = 0;
	for (size_t t = 0; t < ix->ntypes && q < MAX_QUERIES; t++) {
		const struct jp_type *ty = &ix->types[t];
		if ((ty->kind != JP_T_STRUCT && ty->kind != JP_T_UNION) || !ty->name || !ty->nmembers)
			continue;
		q++;
		struct jp_sites s = { 0 };
		jp_find_access(img, ty->name, "%", NULL, &s, &err);
		if (ty->members[0].name) {
			struct jp_field_layout l;
			jp_field_layout(img, ty->name, ty->members[0].name, &l, &err);
			jp_find_access(img, ty->name, ty->members[0].name, NULL, &s, &err);
		}
		for (size_t i = 0; i < s.n && i < 64; i++) {
			struct jp_recipe r;
			if (s.v[i].fidx >= 0 && ix->funcs[s.v[i].fidx].nvars)
				jp_local_var(img, &s.v[i], ix->funcs[s.v[i].fidx].vars[0].name, &r, &err);
		}
		jp_sites_free(&s);
	}
	q = 0;
	for (size_t f = 0; f < ix->nfuncs && q < MAX_QUERIES; f++) {
		if (!ix->funcs[f].name)
			continue;
		q++;
		struct jp_sites s = { 0 };
		jp_find_entry(img, ix->funcs[f].name, NULL, &s, &err);
		jp_find_return(img, ix->funcs[f].name, NULL, &s, &err);
		jp_sites_free(&s);
	}
	jp_image_free(img);
	return 0;
}
