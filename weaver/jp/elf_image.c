/*
 * ELF files for join points: open, validate, and find code bytes, function
 * symbols, the build id and the .gnu_debuglink name.
 *
 * The file is read into memory once and handed to libelf with elf_memory,
 * so the DWARF reader and the decoder see the same validated bytes, and the
 * fuzz target can feed a buffer.  libelf trusts header offsets; every
 * section that the rest of the weaver reads is bounds-checked here first.
 */
#include "weaver/jp/joinpoint.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xflow/file.h"

/* Bigger inputs are refused rather than read: a weave target is code, and a
 * multi-gigabyte "binary" is a mistake or an attack. */
#define ELF_MAX_SIZE (2ull << 30)

static int fail(struct jp_err *err, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct jp_err *err, int rc, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return rc;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct jp_elf_sym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);
}

static bool in_file(const struct jp_elf *e, uint64_t off, uint64_t size)
{
	return off <= e->size && size <= e->size - off;
}

static void read_notes(struct jp_elf *e, const unsigned char *p, size_t size)
{
	size_t off = 0;
	while (size - off >= 12) {
		uint32_t namesz, descsz, type;
		memcpy(&namesz, p + off, 4);
		memcpy(&descsz, p + off + 4, 4);
		memcpy(&type, p + off + 8, 4);
		off += 12;
		size_t nlen = ((size_t)namesz + 3) & ~(size_t)3;
		size_t dlen = ((size_t)descsz + 3) & ~(size_t)3;
		if (namesz > size - off || nlen > size - off || descsz > size - off - nlen)
			return;
		if (type == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 &&
		    memcmp(p + off, "GNU", 4) == 0 && descsz > 0 && descsz <= 64) {
			static const char hex[] = "0123456789abcdef";
			const unsigned char *d = p + off + nlen;
			for (uint32_t i = 0; i < descsz && 2 * i + 2 < sizeof(e->build_id); i++) {
				e->build_id[2 * i] = hex[d[i] >> 4];
				e->build_id[2 * i + 1] = hex[d[i] & 15];
				e->build_id[2 * i + 2] = '\0';
			}
		}
		if (dlen > size - off - nlen)
			return;
		off += nlen + dlen;
	}
}

/*
 * libdwarf 20210528 frees a context twice when a .debug_rnglists unit
 * header is malformed (dwarf_load_rnglists; later releases fixed it), and
 * reads .debug_loclists headers the same way.  So the headers of both are
 * checked here, before libdwarf sees them: every unit's length inside the
 * section, version 5, 8-byte addresses, no segment selectors, and the
 * offset table inside the unit.
 */
static bool lists_ok(const unsigned char *p, size_t size, size_t *bad_at)
{
	size_t off = 0;
	while (off < size) {
		*bad_at = off;
		if (size - off < 4)
			return false;
		uint32_t l32;
		memcpy(&l32, p + off, 4);
		uint64_t len;
		size_t hdr = 4, osz = 4;
		if (l32 == 0xffffffffu) {
			if (size - off < 12)
				return false;
			memcpy(&len, p + off + 4, 8);
			hdr = 12;
			osz = 8;
		} else if (l32 >= 0xfffffff0u) {
			return false;
		} else {
			len = l32;
		}
		if (len < 8 || len > size - off - hdr)
			return false;
		const unsigned char *u = p + off + hdr;
		uint16_t version;
		memcpy(&version, u, 2);
		uint32_t count;
		memcpy(&count, u + 4, 4);
		if (version != 5 || u[2] != 8 || u[3] != 0 || (uint64_t)count * osz > len - 8)
			return false;
		off += hdr + (size_t)len;
	}
	return true;
}

static int check_lists(struct jp_elf *e, Elf_Scn *s, GElf_Shdr *sh, const char *nm,
		       struct jp_err *err)
{
	if (sh->sh_type == SHT_NOBITS || sh->sh_size == 0)
		return 0;
	if (sh->sh_flags & SHF_COMPRESSED) {
		/* Decompress in place (libdwarf then reads the plain data);
		 * refuse a claimed size no debug section has. */
		Elf_Data *d = elf_rawdata(s, NULL);
		GElf_Chdr ch;
		if (!d || !gelf_getchdr(s, &ch) || ch.ch_size > (256u << 20) || elf_compress(s, 0, 0) < 0)
			return fail(err, -EINVAL, "%s: corrupted DWARF: bad compressed section %s", e->name, nm);
	}
	Elf_Data *d = elf_getdata(s, NULL);
	size_t at = 0;
	if (!d || (d->d_size && !d->d_buf) ||
	    (d->d_size && !lists_ok(d->d_buf, d->d_size, &at)))
		return fail(err, -EINVAL, "%s: corrupted DWARF: %s unit header at offset %#zx", e->name, nm, at);
	return 0;
}

static int elf_scan(struct jp_elf *e, struct jp_err *err)
{
	Elf *elf = e->elf;
	if (elf_kind(elf) != ELF_K_ELF)
		return fail(err, -ENOEXEC, "%s: not an ELF file", e->name);
	GElf_Ehdr eh;
	if (!gelf_getehdr(elf, &eh))
		return fail(err, -ENOEXEC, "%s: truncated or corrupted ELF header", e->name);
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return fail(err, -ENOEXEC, "%s: not a 64-bit little-endian ELF file", e->name);
	if (eh.e_machine != EM_X86_64)
		return fail(err, -ENOTSUP, "%s: machine %u is not supported (x86-64 only)",
			    e->name, (unsigned)eh.e_machine);
	e->type = eh.e_type;
	if (eh.e_shoff == 0)
		return fail(err, -ENOEXEC, "%s: no section headers (stripped with sstrip, or corrupted)", e->name);
	size_t shnum, shstrndx;
	if (elf_getshdrnum(elf, &shnum) != 0 || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return fail(err, -ENOEXEC, "%s: corrupted section header table", e->name);
	if (shnum > 65536 || !in_file(e, eh.e_shoff, (uint64_t)shnum * sizeof(Elf64_Shdr)))
		return fail(err, -ENOEXEC, "%s: truncated ELF: section headers past the end of the file (%zu bytes)",
			    e->name, e->size);
	/* Section names must be readable before anything uses them. */
	{
		Elf_Scn *s = elf_getscn(elf, shstrndx);
		GElf_Shdr sh;
		if (!s || !gelf_getshdr(s, &sh) || sh.sh_type == SHT_NOBITS ||
		    !in_file(e, sh.sh_offset, sh.sh_size))
			return fail(err, -ENOEXEC, "%s: truncated or corrupted ELF: bad section name table", e->name);
	}
	e->secs = calloc(shnum ? shnum : 1, sizeof(*e->secs));
	if (!e->secs)
		return -ENOMEM;
	Elf_Scn *symscn = NULL;
	GElf_Shdr symsh;
	for (Elf_Scn *s = elf_nextscn(elf, NULL); s; s = elf_nextscn(elf, s)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(s, &sh))
			return fail(err, -ENOEXEC, "%s: corrupted section header", e->name);
		const char *nm = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!nm)
			return fail(err, -ENOEXEC, "%s: corrupted section name", e->name);
		if (sh.sh_type != SHT_NOBITS && !in_file(e, sh.sh_offset, sh.sh_size))
			return fail(err, -ENOEXEC,
				    "%s: truncated or corrupted ELF: section %s (offset %#llx, %llu bytes) past the end of the file (%zu bytes)",
				    e->name, nm, (unsigned long long)sh.sh_offset,
				    (unsigned long long)sh.sh_size, e->size);
		if ((sh.sh_flags & SHF_EXECINSTR) && sh.sh_type == SHT_PROGBITS && sh.sh_size) {
			struct jp_elf_sec *x = &e->secs[e->nsecs++];
			x->addr = sh.sh_addr;
			x->size = sh.sh_size;
			x->off = sh.sh_offset;
			x->exec = true;
		}
		if (sh.sh_type == SHT_SYMTAB && sh.sh_size) {
			symscn = s;
			symsh = sh;
		}
		if (strcmp(nm, ".debug_info") == 0 && sh.sh_type != SHT_NOBITS && sh.sh_size > 0)
			e->has_dwarf = true;
		if (strcmp(nm, ".debug_rnglists") == 0 || strcmp(nm, ".debug_loclists") == 0) {
			int rc = check_lists(e, s, &sh, nm, err);
			if (rc)
				return rc;
		}
		if (sh.sh_type == SHT_NOTE && sh.sh_size)
			read_notes(e, e->data + sh.sh_offset, sh.sh_size);
		if (strcmp(nm, ".gnu_debuglink") == 0 && sh.sh_type != SHT_NOBITS && sh.sh_size > 4) {
			const char *p = (const char *)e->data + sh.sh_offset;
			size_t n = strnlen(p, sh.sh_size);
			if (n < sh.sh_size && n < sizeof(e->debuglink) && !memchr(p, '/', n))
				memcpy(e->debuglink, p, n + 1);
		}
	}
	if (symscn) {
		e->has_symtab = true;
		if (symsh.sh_entsize != sizeof(Elf64_Sym) || symsh.sh_link >= shnum)
			return fail(err, -ENOEXEC, "%s: corrupted symbol table", e->name);
		Elf_Data *d = elf_getdata(symscn, NULL);
		if (!d || !d->d_buf)
			return fail(err, -ENOEXEC, "%s: unreadable symbol table", e->name);
		size_t n = d->d_size / sizeof(Elf64_Sym), ns = 0, strbytes = 0;
		e->syms = calloc(n ? n : 1, sizeof(*e->syms));
		if (!e->syms)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
				continue;
			const char *nm = elf_strptr(elf, symsh.sh_link, sym.st_name);
			if (!nm || !*nm)
				continue;
			e->syms[ns].name = nm;
			e->syms[ns].addr = sym.st_value;
			e->syms[ns].size = sym.st_size;
			strbytes += strlen(nm) + 1;
			ns++;
		}
		/* Copy the names: libelf's pointers die with the Elf handle,
		 * and keeping names ours makes the table self-contained. */
		e->symstr = malloc(strbytes ? strbytes : 1);
		if (!e->symstr)
			return -ENOMEM;
		char *w = e->symstr;
		for (size_t i = 0; i < ns; i++) {
			size_t l = strlen(e->syms[i].name) + 1;
			memcpy(w, e->syms[i].name, l);
			e->syms[i].name = w;
			w += l;
		}
		e->nsyms = ns;
		qsort(e->syms, ns, sizeof(*e->syms), sym_cmp);
	}
	return 0;
}

int jp_elf_open_mem(struct jp_elf *e, const char *name, const void *buf, size_t len,
		    struct jp_err *err)
{
	memset(e, 0, sizeof(*e));
	e->name = strdup(name ? name : "<memory>");
	if (!e->name)
		return -ENOMEM;
	if (len < 4 || memcmp(buf, "\177ELF", 4) != 0)
		return fail(err, -ENOEXEC, "%s: not an ELF file (no ELF magic)", e->name);
	if (len < sizeof(Elf64_Ehdr))
		return fail(err, -ENOEXEC, "%s: truncated ELF: %zu bytes, shorter than an ELF header",
			    e->name, len);
	e->data = malloc(len);
	if (!e->data)
		return -ENOMEM;
	memcpy(e->data, buf, len);
	e->size = len;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return fail(err, -ENOSYS, "libelf: %s", elf_errmsg(-1));
	e->elf = elf_memory((char *)e->data, len);
	if (!e->elf)
		return fail(err, -ENOEXEC, "%s: %s", e->name, elf_errmsg(-1));
	return elf_scan(e, err);
}

int jp_elf_open(struct jp_elf *e, const char *path, struct jp_err *err)
{
	memset(e, 0, sizeof(*e));
	/* xflow_file_read opens without blocking and takes only regular files:
	 * over Xen the guest names the executable dom0 reads. */
	char *buf, why[128];
	size_t len;
	int rc = xflow_file_read(path, ELF_MAX_SIZE, &buf, &len, why, sizeof(why));
	if (rc)
		return fail(err, rc, "%s: %s", path, why);
	rc = jp_elf_open_mem(e, path, buf, len, err);
	free(buf);
	return rc;
}

void jp_elf_close(struct jp_elf *e)
{
	if (e->elf)
		elf_end(e->elf);
	free(e->data);
	free(e->name);
	free(e->secs);
	free(e->syms);
	free(e->symstr);
	memset(e, 0, sizeof(*e));
}

const uint8_t *jp_elf_code(const struct jp_elf *e, uint64_t addr, size_t *avail)
{
	for (size_t i = 0; i < e->nsecs; i++) {
		const struct jp_elf_sec *s = &e->secs[i];
		if (addr >= s->addr && addr - s->addr < s->size) {
			*avail = (size_t)(s->size - (addr - s->addr));
			return e->data + s->off + (addr - s->addr);
		}
	}
	*avail = 0;
	return NULL;
}
