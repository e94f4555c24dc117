/*
 * Out-of-line execution for the ptrace backend: scratch pages mapped into
 * the target by an injected mmap, one slot per displaced instruction.
 */
#ifndef XFLOW_GUESTRT_HOOK_PTRACE_OOLINE_H
#define XFLOW_GUESTRT_HOOK_PTRACE_OOLINE_H

#include "guestrt/hook/ptrace/ptrace_priv.h"

/* Give bp (an OOL instruction in the mapping map) a slot and write it;
 * maps a new scratch page when none in reach has room.  World stopped. */
int xflow_ooline_slot(struct pt_target *t, struct pt_bp *bp, const struct xflow_map *map);
/* Replace our int3 bytes in buf (target memory at addr) by the originals. */
void xflow_ooline_shadow(struct pt_target *mm, uint64_t addr, void *buf, size_t len);
/* Run syscall nr with args in the target on one of its stopped threads;
 * stub: PT_CALL_LEN bytes of executable memory of ours to run it from (0:
 * a scratch page's, else padding of the target's text, borrowed).  *ret
 * is the raw return (a negative errno in the kernel's way). */
/* Whether the target's seccomp filters let the thread that would make it
 * run system call nr with args: 0, or -EPERM (-EACCES: they cannot be
 * read) with the reason in the engine's error. */
int xflow_ooline_may_call(struct pt_target *t, long nr, const uint64_t args[6]);
int xflow_ooline_syscall(struct pt_target *t, long nr, const uint64_t args[6], uint64_t stub, int64_t *ret);

#endif
