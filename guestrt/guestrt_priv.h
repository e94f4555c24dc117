/*
 * Interfaces between the files of guestrt/ (not for other folders).
 */
#ifndef XFLOW_GUESTRT_PRIV_H
#define XFLOW_GUESTRT_PRIV_H

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
