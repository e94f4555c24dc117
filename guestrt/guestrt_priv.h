/*
 * Interfaces between the files of guestrt/ (not for other folders).
 */
#ifndef XFLOW_GUESTRT_PRIV_H
#define XFLOW_GUESTRT_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "guestrt/hook.h"

#define xflow_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* Fill h->errbuf (printf-style) and return err, so that a failing path can
 * say `return hook_fail(h, -EINVAL, "...")`. */
int xflow_hook_fail(struct xflow_hook *h, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- insn_reloc.c: one x86-64 instruction, decoded to be moved ---- */

enum xflow_insn_kind {
	XFLOW_INSN_OOL = 0,   /* executed out of line (rip-relative disp fixed) */
	XFLOW_INSN_EMU_NOP,   /* nop, endbr64: rip += len */
	XFLOW_INSN_EMU_JMP,   /* jmp rel: rip = target */
	XFLOW_INSN_EMU_JCC,   /* jcc rel: rip = cond ? target : next */
	XFLOW_INSN_EMU_CALL,  /* call rel32: push next, rip = target */
	XFLOW_INSN_EMU_CALLR, /* call r64: push next, rip = reg[src] */
	XFLOW_INSN_EMU_MOVRR, /* mov r64, r64: reg[dst] = reg[src] */
};

struct xflow_insn {
	uint64_t addr;
	uint8_t bytes[16];
	uint8_t len;
	enum xflow_insn_kind kind;
	uint64_t target; /* EMU_JMP/JCC/CALL */
	uint8_t cc;      /* EMU_JCC: condition code, the low nibble of 0x7X */
	uint8_t dst;     /* EMU_MOVRR: index into struct xflow_hook_regs as uint64_t[] */
	uint8_t src;     /* EMU_MOVRR, EMU_CALLR */
	uint8_t disp_off; /* OOL: offset of a rip-relative disp32, 0 if none */
	uint8_t call_mem; /* OOL: a call through memory; modrm_off is its ModRM */
	uint8_t modrm_off;
	uint8_t stack_mem; /* OOL: a memory operand based on rsp */
	uint8_t uncond;   /* control never falls through (jmp, ret, ud2...) */
	char text[96];   /* "mnemonic operands", for messages */
};

/* Decode the instruction at addr from code[0..avail).  Returns 0, or
 * -EINVAL (not an instruction) / -ENOTSUP (cannot be moved) with a message in
 * err naming the address and the instruction. */
int xflow_insn_decode(const uint8_t *code, size_t avail, uint64_t addr, struct xflow_insn *out, char *err,
		      size_t errlen);
/* Bytes of in for execution at slot (in->len of them), the rip-relative
 * displacement moved; -ERANGE when slot is out of its reach. */
int xflow_insn_relocate(const struct xflow_insn *in, uint64_t slot, uint8_t *out);
/* Whether rip-relative operand of in can be reached from slot. */
int xflow_insn_reaches(const struct xflow_insn *in, uint64_t slot);
/* Jcc condition cc against eflags. */
int xflow_insn_cond(uint8_t cc, uint64_t eflags);

/*
 * A linear sweep of code[0..len) at addr (one function's bytes): where
 * control can go inside a program, for deciding which bytes a jump may
 * cover.  Reported through ops, each NULL-able:
 *   target    a direct jmp, jcc or call's destination;
 *   table     a jump table: entries of entry_size bytes at table (4: signed
 *             offsets from the table, 8: absolute addresses), count of them
 *             known from a bounds check before the jump, or -1;
 *   indirect  an indirect jump whose destinations it cannot tell (not a
 *             table it recognises, not a tail call through memory).
 * Returns 0, or -EINVAL when bytes did not decode (the sweep goes on past
 * them: what follows is reported, but the caller should trust the
 * function less).
 */
struct xflow_insn_scan_ops {
	void (*target)(void *ctx, uint64_t to);
	void (*table)(void *ctx, uint64_t table, unsigned entry_size, int64_t count);
	void (*indirect)(void *ctx, uint64_t at);
};
int xflow_insn_scan(const uint8_t *code, size_t len, uint64_t addr, const struct xflow_insn_scan_ops *ops,
		    void *ctx);

/* ---- code_map.c: where control can go in a binary (link-time addresses) ---- */

struct xflow_code_map;
struct xflow_code_func {
	uint64_t start, end; /* the function's bytes */
	uint64_t next;       /* the next function's start (padding lies between) */
	bool opaque;         /* an indirect jump it could not follow: any
			      * instruction may be a destination */
};
int xflow_code_map_open(const char *path, struct xflow_code_map **out, char *err, size_t errlen);
void xflow_code_map_free(struct xflow_code_map *m);
/* The function holding vaddr: 0, or -ENOENT (no symbol covers it). */
int xflow_code_map_func(const struct xflow_code_map *m, uint64_t vaddr, struct xflow_code_func *out);
/* A direct branch or a jump table may land at vaddr. */
bool xflow_code_map_is_target(const struct xflow_code_map *m, uint64_t vaddr);
/* The binary has exception landing pads, which no sweep sees. */
bool xflow_code_map_landing_pads(const struct xflow_code_map *m);

/* ---- target_mem.c: another process's memory ---- */

struct xflow_tmem {
	pid_t pid;
	int memfd; /* /proc/PID/mem, opened once: writes to text go through it */
	int use_procmem; /* process_vm_* unusable: fall back to memfd */
};
int xflow_tmem_open(struct xflow_tmem *m, pid_t pid);
void xflow_tmem_close(struct xflow_tmem *m);
/* Reopen after exec (the old fd keeps the old image). */
int xflow_tmem_reopen(struct xflow_tmem *m);
/* Fault-safe bounded read/write, all or nothing: -EFAULT, -E2BIG. */
int xflow_tmem_read(struct xflow_tmem *m, uint64_t addr, void *buf, size_t len);
int xflow_tmem_write(struct xflow_tmem *m, uint64_t addr, const void *buf, size_t len);
/* Write ignoring page protections (text, scratch): the kernel's forced
 * write through /proc/PID/mem, which gives the target a private copy of the
 * page. */
int xflow_tmem_poke(struct xflow_tmem *m, uint64_t addr, const void *buf, size_t len);
int xflow_tmem_peek(struct xflow_tmem *m, uint64_t addr, void *buf, size_t len);

/* ---- maps.c ---- */

struct xflow_map {
	uint64_t start, end, offset;
	char perms[5];
};
/* The mapping of pid holding addr: 0, -ENOENT, or a read error. */
int xflow_maps_find(pid_t pid, uint64_t addr, struct xflow_map *out);
/* A free range of size bytes near addr, within +-reach, page aligned, for a
 * scratch page: 0 and *out, or -ENOSPC. */
int xflow_maps_gap_near(pid_t pid, uint64_t addr, uint64_t size, uint64_t reach, uint64_t *out);
/* The link-time address of file offset off of the ELF file at path. */
int xflow_maps_vaddr_of(const char *path, uint64_t off, uint64_t *vaddr);

/* ---- restore_signals.c ---- */

/* Register h as the engine woken by SIGURG (xflow_hook_stop from another
 * thread, control fd, run timeouts).  Called by every backend's hook_new. */
int xflow_hook_wake_init(struct xflow_hook *h);
void xflow_hook_wake_fini(struct xflow_hook *h);
/* Arm (ms >= 0) or disarm (ms < 0) the run timeout of h. */
int xflow_hook_timer_arm(struct xflow_hook *h, int ms);
/* Check the control fd now (the engine calls it when run starts). */
void xflow_hook_control_poll(struct xflow_hook *h);
/* Watch the control fd (SIGURG on HUP): the ops->control_fd of a backend. */
int xflow_hook_control_fd_watch(struct xflow_hook *h, int fd);

#endif
