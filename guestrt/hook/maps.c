/*
 * /proc/PID/maps: where an address lives, where a scratch page can go, and
 * the runtime address of a location in an object (PIE executables and shared
 * libraries load anywhere).  Read only when sites are added, never per hit.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guestrt/hook/hook_priv.h"

static FILE *maps_open(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	return fopen(path, "re");
}

/* One line: start-end perms offset dev inode [path].  path points into line. */
static int maps_parse(char *line, struct xflow_map *m, char **path)
{
	int n = 0;
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %*s %*s %n", &m->start, &m->end, m->perms,
		   &m->offset, &n) < 4)
		return -1;
	if (path) {
		char *p = line + n;
		p[strcspn(p, "\n")] = 0;
		*path = p;
	}
	return 0;
}

int xflow_maps_find(pid_t pid, uint64_t addr, struct xflow_map *out)
{
	char line[4096 + 128];
	FILE *f = maps_open(pid);
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct xflow_map m;
		if (maps_parse(line, &m, NULL) == 0 && addr >= m.start && addr < m.end) {
			*out = m;
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

int xflow_maps_gap_near(pid_t pid, uint64_t addr, uint64_t size, uint64_t reach, uint64_t *out)
{
	char line[4096 + 128];
	FILE *f = maps_open(pid);
	/* Stay off the lowest pages (mmap_min_addr) and below the 47-bit top. */
	uint64_t prev_end = 0x10000, best = 0, best_dist = UINT64_MAX;
	const uint64_t top = (1ull << 47) - 0x10000;

	if (!f)
		return -errno;
	for (;;) {
		struct xflow_map m;
		int more = fgets(line, sizeof(line), f) != NULL;
		if (more && maps_parse(line, &m, NULL) != 0)
			continue;
		uint64_t lo = prev_end, hi = more ? m.start : top;
		/* Leave a page of distance from the neighbours. */
		if (hi > lo + size + 2 * 4096) {
			lo += 4096;
			hi -= 4096;
			uint64_t cand = addr < lo ? lo : (addr + size > hi ? hi - size : addr);
			cand &= ~(uint64_t)4095;
			uint64_t dist = cand > addr ? cand - addr : addr - cand;
			if (cand >= lo && cand + size <= hi && dist < best_dist) {
				best = cand;
				best_dist = dist;
			}
		}
		if (!more)
			break;
		if (m.end > prev_end)
			prev_end = m.end;
	}
	fclose(f);
	if (best == 0 || best_dist > reach)
		return -ENOSPC;
	*out = best;
	return 0;
}

/* The PT_LOAD program header of the ELF file at path holding @where: a
 * link-time address when by_vaddr, else a file offset. */
/* The PT_LOAD segment of the ELF file open at @fd that holds @where (a
 * virtual address, or a file offset).  The file may be the target's: its
 * header is checked and its segment count bounded. */
static int load_segment_fd(int fd, uint64_t where, bool by_vaddr, Elf64_Phdr *out)
{
	Elf64_Ehdr eh;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 4096)
		return -ENOEXEC;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != (ssize_t)sizeof(ph))
			return -ENOEXEC;
		uint64_t start = by_vaddr ? ph.p_vaddr : ph.p_offset;
		if (ph.p_type == PT_LOAD && where >= start && where - start < ph.p_filesz) {
			*out = ph;
			return 0;
		}
	}
	return -ENOENT;
}

static int load_segment(const char *path, uint64_t where, bool by_vaddr, Elf64_Phdr *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	int rc = load_segment_fd(fd, where, by_vaddr, out);
	close(fd);
	return rc;
}

int xflow_hook_elf_read_vaddr(int fd, uint64_t vaddr, void *buf, size_t len)
{
	Elf64_Phdr ph;
	int rc = load_segment_fd(fd, vaddr, true, &ph);
	if (rc)
		return rc;
	/* All of it in the segment's file image. */
	if (len > ph.p_filesz - (vaddr - ph.p_vaddr))
		return -ENOENT;
	ssize_t n = pread(fd, buf, len, (off_t)(ph.p_offset + (vaddr - ph.p_vaddr)));
	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

int xflow_maps_vaddr_of(const char *path, uint64_t off, uint64_t *vaddr)
{
	Elf64_Phdr ph;
	int rc = load_segment(path, off, false, &ph);
	if (rc == 0)
		*vaddr = off - ph.p_offset + ph.p_vaddr;
	return rc;
}

int xflow_hook_resolve(pid_t pid, const char *path, enum xflow_hook_loc_kind kind, uint64_t where, uint64_t *addr)
{
	char line[4096 + 128];
	char real[4096];
	uint64_t off = where;
	FILE *f;
	int rc = -ENOENT;

	/* maps names objects by their canonical path. */
	if (!realpath(path, real))
		return -errno;
	if (kind == XFLOW_HOOK_LOC_VADDR) {
		Elf64_Phdr ph;
		rc = load_segment(real, where, true, &ph);
		if (rc < 0)
			return rc;
		off = where - ph.p_vaddr + ph.p_offset;
		rc = -ENOENT;
	}
	f = maps_open(pid);
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct xflow_map m;
		char *p;
		if (maps_parse(line, &m, &p) != 0 || strcmp(p, real) != 0)
			continue;
		if (off >= m.offset && off < m.offset + (m.end - m.start)) {
			*addr = m.start + (off - m.offset);
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

/* The GNU build id of the ELF file open at fd, as hex (empty: none).  The
 * file is the target's: every count and size is bounded. */
static int elf_build_id(int fd, char *hex, size_t hexlen)
{
	Elf64_Ehdr eh;
	hex[0] = 0;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 512)
		return -ENOEXEC;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) != (ssize_t)sizeof(ph))
			return -ENOEXEC;
		if (ph.p_type != PT_NOTE || ph.p_filesz > 65536)
			continue;
		unsigned char buf[65536];
		if (pread(fd, buf, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz)
			continue;
		for (uint64_t at = 0; at + sizeof(Elf64_Nhdr) <= ph.p_filesz;) {
			Elf64_Nhdr nh;
			memcpy(&nh, buf + at, sizeof(nh));
			uint64_t name = at + sizeof(nh), desc = name + ((nh.n_namesz + 3ull) & ~3ull);
			uint64_t next = desc + ((nh.n_descsz + 3ull) & ~3ull);
			if (next > ph.p_filesz)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(buf + name, "GNU", 4) == 0 &&
			    nh.n_descsz > 0 && nh.n_descsz * 2 < hexlen) {
				for (uint32_t k = 0; k < nh.n_descsz; k++)
					snprintf(hex + 2 * k, 3, "%02x", buf[desc + k]);
				return 0;
			}
			at = next;
		}
	}
	return 0;
}

int xflow_hook_mapped_open(pid_t pid, const char *path)
{
	char line[4096 + 128], real[4096];
	int rc = -ENOENT;
	if (!realpath(path, real))
		return -errno;
	FILE *f = maps_open(pid);
	if (!f)
		return -errno;
	while (rc == -ENOENT && fgets(line, sizeof(line), f)) {
		struct xflow_map m;
		char *p, link[96];
		if (maps_parse(line, &m, &p) != 0 || strcmp(p, real) != 0)
			continue;
		/* The file the process has mapped, whatever is at its path now. */
		snprintf(link, sizeof(link), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m.start, m.end);
		rc = open(link, O_RDONLY | O_CLOEXEC);
		if (rc < 0)
			rc = -errno;
	}
	fclose(f);
	return rc;
}

int xflow_hook_build_id(pid_t pid, const char *path, char *hex, size_t hexlen)
{
	int fd = xflow_hook_mapped_open(pid, path);
	if (fd < 0)
		return fd;
	int rc = elf_build_id(fd, hex, hexlen);
	close(fd);
	return rc;
}
