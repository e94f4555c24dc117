/*
 * guestrt/hook/kernel/ksite_name.h — a kernel site's name as a plan gives
 * it, checked before libbpf or the kernel sees it.  A plan is hostile
 * input (xflow/plan.h): its reader checks that a name is a string, this
 * that it is a name the kernel backend can attach to.
 */
#ifndef XFLOW_GUESTRT_HOOK_KERNEL_KSITE_NAME_H
#define XFLOW_GUESTRT_HOOK_KERNEL_KSITE_NAME_H

#include <stdbool.h>
#include <stddef.h>

/* The kernel's own bound on a symbol's name (KSYM_NAME_LEN), less its NUL. */
#define XK_NAME_MAX 511

/*
 * Is @name a function a fentry/fexit program can name (@tracepoint
 * false): 1 to XK_NAME_MAX bytes of [A-Za-z0-9_.], not beginning with a
 * digit or '.' (a compiler's clones: "tcp_v4_rcv.cold"); or a tracepoint
 * (@tracepoint true): CATEGORY:NAME, the category of [A-Za-z0-9_-], the
 * name of [A-Za-z0-9_], both not empty, XK_NAME_MAX bytes in all.  When
 * not, @why says what is wrong with it.
 */
bool xk_site_name_ok(const char *name, bool tracepoint, char *why, size_t whylen);

/* @name as it may be printed: printable ASCII, the rest as \xHH, at most
 * 64 of its bytes then "...", into @buf (terminated when @len is not 0). */
void xk_name_quote(const char *name, char *buf, size_t len);

#endif
