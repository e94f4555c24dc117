/*
 * weaver/jp/kbtf.h — join points of a kernel domain from the kernel's BTF
 * (the only file of the weaver that includes libbpf): which functions and
 * tracepoints exist, and what their arguments are called and typed, so that
 * call(f), return(f), tracepoint(c:n), target(v) and local_var(name, v)
 * resolve against the kernel that will run the flow.
 *
 * A kernel "binary" is written kernel:[PATH][+ITEM]...: PATH is
 * vmlinux's BTF (a raw BTF file such as a copy of another domain's
 * /sys/kernel/btf/vmlinux, or a vmlinux ELF with its .BTF section), this
 * machine's running kernel if left out.  Functions, tracepoints and
 * structs not in vmlinux are searched in modules' split BTF: for the
 * running kernel, every loaded module (/sys/kernel/btf/<module>); and the
 * modules the ITEMs name: a module name (xen_netfront), found through
 * modules.dep in the module directory (/lib/modules/<release> of the
 * running kernel, or an ITEM that is a directory), or a .ko file.  A plan
 * names its modules rather than taking whatever is loaded where it is
 * planned: the domain that will run it loads its own.  PATH written out as
 * /sys/kernel/btf/vmlinux is the running kernel with only the modules
 * named (a name loaded here is taken from /sys/kernel/btf).  An ITEM
 * ?NAME is a module the domain has that this machine may lack: when it
 * cannot be found or read it is skipped (jp_kbtf_skipped() says why), and
 * a name searched in vain says the module was not there.  The agent
 * collector plans a kernel agent's domain with one ?NAME per module the
 * agent named in its HELLO.  Errors fill a struct jp_err with one line
 * naming the kernel and what is missing.
 */
#ifndef XFLOW_WEAVER_JP_KBTF_H
#define XFLOW_WEAVER_JP_KBTF_H

#include <stdbool.h>
#include <stdint.h>

#include "weaver/jp/joinpoint.h"

#define JP_KBTF_MAX_ARGS 6   /* what fentry/fexit pass in registers */

struct jp_kbtf;

/* Open the BTF @binary names. */
int jp_kbtf_open(struct jp_kbtf **out, const char *binary, struct jp_err *err);
void jp_kbtf_free(struct jp_kbtf *k);
/* The ?NAME modules skipped at open: how many; for @i below that, its
 * name and why in *@name and *@why (valid until jp_kbtf_free). */
unsigned jp_kbtf_skipped(const struct jp_kbtf *k, unsigned i, const char **name, const char **why);
const char *jp_kbtf_path(const struct jp_kbtf *k);

struct jp_kbtf_func {
	uint32_t id;             /* the FUNC's BTF id: unique in the kernel */
	unsigned nargs;
	const char *arg[JP_KBTF_MAX_ARGS + 2];      /* names ("" if none) */
	const char *arg_struct[JP_KBTF_MAX_ARGS + 2]; /* S when the arg is a struct S *, else NULL */
	uint8_t arg_int[JP_KBTF_MAX_ARGS + 2];      /* bytes of an integer (or enum) arg, else 0 */
	bool returns;            /* a non-void return value */
	const char *ret_struct;  /* S when it returns a struct S * */
	const char *module;      /* the module whose BTF has it; NULL: vmlinux */
};

/* Function @name: 0, or -ENOENT with @err (and a near name if one). */
int jp_kbtf_func(struct jp_kbtf *k, const char *name, struct jp_kbtf_func *out, struct jp_err *err);
/* Tracepoint "category:name" (its btf_trace_<name> type): 0 with its
 * arguments (nameless in BTF; the tracepoint's own data pointer left out),
 * or -ENOENT / -EINVAL with @err. */
int jp_kbtf_tracepoint(struct jp_kbtf *k, const char *cat_name, struct jp_kbtf_func *out, struct jp_err *err);

/* Member @member of struct (or union) @sname, searched through anonymous
 * members: its byte offset, size, and for a bitfield its bit offset from
 * the struct's start and bit size.  0, or -ENOENT with @err. */
struct jp_kbtf_member {
	uint64_t offset, size;
	uint32_t bit_offset, bit_size;
	bool is_signed, is_ptr;
	uint32_t nelems, stride; /* "arr[]", "arr[].m.n": the embedded array's
	                          * count and element size; offset is then
	                          * the first element's (or its member's) */
};
int jp_kbtf_member(struct jp_kbtf *k, const char *sname, const char *member, struct jp_kbtf_member *out,
		   struct jp_err *err);

#endif
