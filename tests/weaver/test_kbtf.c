/*
 * Kernel domains (weaver/jp/kbtf.c, the kernel branch of plan_build.c): join
 * points resolved against the running kernel's BTF.  They need
 * /sys/kernel/btf/vmlinux and skip, saying so, where the kernel has none.
 * The functions and tracepoints named exist from Linux 5.x to 6.18.
 */
#include <criterion/criterion.h>
#include <sys/utsname.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "weaver/jp/joinpoint.h"
#include "weaver/jp/kbtf.h"
#include "xflow/flowlang.h"
#include "xflow/plan.h"

static void need_btf(void)
{
	if (access(JP_KBTF_DEFAULT, R_OK) != 0)
		cr_skip_test("this kernel has no BTF (%s): kernel domains cannot be resolved here", JP_KBTF_DEFAULT);
}

TestSuite(kbtf, .init = need_btf, .timeout = 60);

Test(kbtf, functions_and_their_arguments)
{
	struct jp_kbtf *k;
	struct jp_err err;
	cr_assert(jp_kbtf_is_kernel("kernel:"));
	cr_assert(jp_kbtf_is_kernel("kernel:/x/btf"));
	cr_assert_not(jp_kbtf_is_kernel("/usr/bin/kernel"));
	cr_assert_eq(jp_kbtf_open(&k, "kernel:", &err), 0, "%s", err.msg);
	cr_expect_str_eq(jp_kbtf_path(k), JP_KBTF_DEFAULT);
	struct jp_kbtf_func f;
	/* struct sk_buff *skb_clone(struct sk_buff *skb, gfp_t gfp_mask) */
	cr_assert_eq(jp_kbtf_func(k, "skb_clone", &f, &err), 0, "%s", err.msg);
	cr_expect_eq(f.nargs, 2);
	cr_expect_str_eq(f.arg[0], "skb");
	cr_expect_str_eq(f.arg_struct[0], "sk_buff");
	cr_expect_str_eq(f.arg[1], "gfp_mask");
	cr_expect_null(f.arg_struct[1]);
	cr_expect(f.returns);
	cr_expect_str_eq(f.ret_struct, "sk_buff");
	cr_expect_gt(f.id, 0);
	/* void consume_skb(struct sk_buff *skb) */
	cr_assert_eq(jp_kbtf_func(k, "consume_skb", &f, &err), 0, "%s", err.msg);
	cr_expect_not(f.returns);
	/* alloc_skb is an inline wrapper of __alloc_skb: said, with the name
	 * that is there. */
	cr_expect_eq(jp_kbtf_func(k, "alloc_skb", &f, &err), -ENOENT);
	cr_expect(strstr(err.msg, "no function alloc_skb") && strstr(err.msg, "did you mean __alloc_skb?"),
		  "%s", err.msg);
	cr_expect_eq(jp_kbtf_func(k, "xflow_no_such_function", &f, &err), -ENOENT);
	cr_expect(strstr(err.msg, "xflow_no_such_function") != NULL, "%s", err.msg);
	jp_kbtf_free(k);
}

Test(kbtf, tracepoints_and_their_arguments)
{
	struct jp_kbtf *k;
	struct jp_err err;
	cr_assert_eq(jp_kbtf_open(&k, "kernel:", &err), 0, "%s", err.msg);
	struct jp_kbtf_func f;
	/* TP_PROTO(struct sk_buff *skb, ...): the tracepoint's own data
	 * pointer is not an argument. */
	cr_assert_eq(jp_kbtf_tracepoint(k, "skb:consume_skb", &f, &err), 0, "%s", err.msg);
	cr_expect_geq(f.nargs, 1);
	cr_expect_str_eq(f.arg_struct[0], "sk_buff");
	cr_expect_not(f.returns);
	cr_expect_eq(jp_kbtf_tracepoint(k, "skb:xflow_nothing", &f, &err), -ENOENT);
	cr_expect(strstr(err.msg, "no tracepoint skb:xflow_nothing") != NULL, "%s", err.msg);
	jp_kbtf_free(k);
}

Test(kbtf, struct_members_and_their_layout)
{
	struct jp_kbtf *k;
	struct jp_err err;
	cr_assert_eq(jp_kbtf_open(&k, "kernel:", &err), 0, "%s", err.msg);
	struct jp_kbtf_member m;
	/* struct sk_buff's len is an unsigned int, past the list links. */
	cr_assert_eq(jp_kbtf_member(k, "sk_buff", "len", &m, &err), 0, "%s", err.msg);
	cr_expect_eq(m.size, 4);
	cr_expect_gt(m.offset, 16);
	cr_expect_not(m.is_signed);
	cr_expect_eq(m.bit_size, 0);
	/* next is inside an anonymous union of structs: found through them. */
	cr_assert_eq(jp_kbtf_member(k, "sk_buff", "next", &m, &err), 0, "%s", err.msg);
	cr_expect_eq(m.offset, 0);
	cr_expect(m.is_ptr);
	/* net_device.ifindex: a signed int. */
	cr_assert_eq(jp_kbtf_member(k, "net_device", "ifindex", &m, &err), 0, "%s", err.msg);
	cr_expect(m.is_signed);
	cr_expect_eq(m.size, 4);
	cr_expect_eq(jp_kbtf_member(k, "sk_buff", "xflow_nothing", &m, &err), -ENOENT);
	cr_expect(strstr(err.msg, "no member xflow_nothing") != NULL, "%s", err.msg);
	cr_expect_eq(jp_kbtf_member(k, "xflow_no_struct", "x", &m, &err), -ENOENT);
	jp_kbtf_free(k);
}

Test(kbtf, a_missing_btf_file_is_said)
{
	struct jp_kbtf *k;
	struct jp_err err;
	cr_expect_lt(jp_kbtf_open(&k, "kernel:/nonexistent/vmlinux", &err), 0);
	cr_expect_null(k);
	cr_expect(strstr(err.msg, "/nonexistent/vmlinux") != NULL, "%s", err.msg);
}

#define MAXD 32
struct seen {
	char msg[MAXD][1024];
	char sev[MAXD][16];
	char where[MAXD][128];
	size_t n;
};

static void on_diag(void *ctx, const struct jp_plan_diag *d)
{
	struct seen *s = ctx;
	if (s->n == MAXD)
		return;
	snprintf(s->msg[s->n], sizeof(s->msg[0]), "%s", d->msg);
	snprintf(s->sev[s->n], sizeof(s->sev[0]), "%s", d->sev);
	snprintf(s->where[s->n], sizeof(s->where[0]), "%s", d->where ? d->where : "");
	s->n++;
}

static bool said(const struct seen *s, const char *sev, const char *want)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->sev[i], sev) && strstr(s->msg[i], want))
			return true;
	return false;
}

static int plan_of(struct xflow_unit *u, const char *const *bins, size_t nb, struct seen *seen,
		   struct xflow_plan **p)
{
	struct jp_domain_spec dom = { "linuxK", bins, nb };
	FILE *quiet = fopen("/dev/null", "w");
	struct jp_plan_opts o = { .diag = quiet, .on_diag = on_diag, .diag_ctx = seen };
	memset(seen, 0, sizeof(*seen));
	int rc = jp_plan_build(u, &dom, 1, &o, p);
	fclose(quiet);
	return rc;
}

static struct xflow_unit *unit_of(const char *xml)
{
	struct xflow_unit *u;
	cr_assert_eq(xflow_unit_new(&u, NULL), 0);
	if (xml[0] == '<')
		cr_assert_eq(xflow_unit_add_buffer(u, "t.xml", xml, strlen(xml)), 0);
	else
		cr_assert_eq(xflow_unit_add_file(u, xml), 0);
	cr_assert_eq(xflow_unit_compile(u), 0);
	return u;
}

static const struct xflow_plan_site *site_named(const struct xflow_plan_domain *d, const char *f, unsigned kind,
						 uint32_t *index)
{
	for (uint32_t i = 0; i < d->nsites; i++)
		if (!strcmp(d->sites[i].func, f) && d->sites[i].kind == kind) {
			*index = i;
			return &d->sites[i];
		}
	return NULL;
}

/* The shipped network flow, planned against this kernel. */
Test(kbtf, the_network_flow_plans_against_the_kernel)
{
	struct xflow_unit *u = unit_of("flows/kernel/net.xml");
	const char *bins[] = { "kernel:" };
	struct seen seen;
	struct xflow_plan *p;
	cr_assert_eq(plan_of(u, bins, 1, &seen, &p), 0, "%s", seen.n ? seen.msg[0] : "");
	const struct xflow_plan_domain *d = &p->domains[0];
	cr_expect_str_eq(d->binaries[0].path, "kernel:");
	uint32_t si = 0;
	const struct xflow_plan_site *s = site_named(d, "__dev_queue_xmit", XFLOW_SITE_ENTRY, &si);
	cr_assert(s, "no entry site for __dev_queue_xmit");
	s = site_named(d, "skb_clone", XFLOW_SITE_RETURN, &si);
	cr_assert(s, "no return site for skb_clone");
	cr_expect_eq(s->when_mask, 1u << XFLOW_WHEN_AFTER);
	/* <move from="skb" to="retval"/>: skb is argument 0 (rdi), retval rax. */
	bool found = false;
	for (uint32_t b = 0; b < d->nbindings; b++) {
		if (d->bindings[b].site != si)
			continue;
		found = true;
		cr_assert_eq(d->bindings[b].ninputs, 2);
		const struct xflow_plan_fetch *f = &d->fetches[d->bindings[b].first_fetch];
		cr_expect_eq(f[0].kind, XFLOW_FETCH_REG);
		cr_expect_eq(f[0].reg, 5, "skb in rdi");
		cr_expect_eq(f[1].kind, XFLOW_FETCH_REG);
		cr_expect_eq(f[1].reg, 0, "retval in rax");
	}
	cr_expect(found);
	cr_expect(site_named(d, "skb:consume_skb", XFLOW_SITE_TRACEPOINT, &si));
	cr_expect(site_named(d, "skb:kfree_skb", XFLOW_SITE_TRACEPOINT, &si));
	xflow_plan_free(p);
	xflow_unit_free(u);
}

Test(kbtf, unresolved_join_points_are_named_not_dropped)
{
	struct xflow_unit *u = unit_of("<flows><xflow name='f'>"
				       "<start><pointcut>call(__dev_queue_xmit) OR call(xflow_no_such_fn)</pointcut>"
				       "<select local_var='skb'/></start>"
				       "<quit><pointcut>tracepoint(skb:xflow_no_such_tp)</pointcut></quit>"
				       "</xflow></flows>");
	const char *bins[] = { "kernel:" };
	struct seen seen;
	struct xflow_plan *p;
	cr_assert_eq(plan_of(u, bins, 1, &seen, &p), 0);
	cr_expect(said(&seen, "warning", "unresolved: the kernel (/sys/kernel/btf/vmlinux) has no function "
					 "xflow_no_such_fn"));
	cr_expect(said(&seen, "warning", "no tracepoint skb:xflow_no_such_tp"));
	cr_expect(said(&seen, "warning", "matches nothing in any domain"), "the quit's pointcut is reported");
	cr_expect_eq(p->domains[0].nsites, 1, "the resolved entry is woven");
	xflow_plan_free(p);
	xflow_unit_free(u);
}

Test(kbtf, arguments_are_bound_by_name_and_errors_list_them)
{
	struct xflow_unit *u = unit_of("<flows><xflow name='f'>"
				       "<start><pointcut>call(skb_clone)</pointcut><select local_var='gfp_mask'/></start>"
				       "<quit><pointcut>call(consume_skb)</pointcut><select local_var='sbk'/></quit>"
				       "<transit><pointcut>call(kfree_skbmem)</pointcut><select local_var='retval'/></transit>"
				       "<transit><pointcut>tracepoint(skb:consume_skb)</pointcut>"
				       "<select local_var='skb'/></transit>"
				       "</xflow></flows>");
	const char *bins[] = { "kernel:" };
	struct seen seen;
	struct xflow_plan *p;
	cr_expect_neq(plan_of(u, bins, 1, &seen, &p), 0);
	cr_expect(said(&seen, "error", "consume_skb has no argument sbk (its arguments: skb"));
	cr_expect(said(&seen, "error", "retval is bound at return() only"));
	cr_expect(said(&seen, "error", "are called arg0.."));
	/* gfp_mask is argument 1 of skb_clone: rsi. */
	uint32_t si = 0;
	const struct xflow_plan_site *s = site_named(&p->domains[0], "skb_clone", XFLOW_SITE_ENTRY, &si);
	cr_assert(s);
	for (uint32_t b = 0; b < p->domains[0].nbindings; b++)
		if (p->domains[0].bindings[b].site == si)
			cr_expect_eq(p->domains[0].fetches[p->domains[0].bindings[b].first_fetch].reg, 4);
	xflow_plan_free(p);
	xflow_unit_free(u);
}

Test(kbtf, access_is_approximated_at_the_entry_and_said)
{
	struct xflow_unit *u = unit_of("<flows><xflow name='f'>"
				       "<start><pointcut>access(sk_buff.len) AND within_function(__dev_queue_xmit)"
				       "</pointcut></start>"
				       "<quit><pointcut>access(sk_buff.len)</pointcut></quit>"
				       "<transit><pointcut>call(consume_skb) AND within_file(net/core/skbuff.c)</pointcut>"
				       "<select local_var='skb'/></transit>"
				       "</xflow></flows>");
	const char *bins[] = { "kernel:" };
	struct seen seen;
	struct xflow_plan *p;
	cr_assert_eq(plan_of(u, bins, 1, &seen, &p), 0);
	cr_expect(said(&seen, "warning", "access(sk_buff.len) approximated by the entry of __dev_queue_xmit"));
	cr_expect(said(&seen, "warning", "add within_function(f) to weave it at f's entry instead"));
	cr_expect(said(&seen, "warning", "within_file() needs the kernel's DWARF"));
	uint32_t si = 0;
	cr_assert(site_named(&p->domains[0], "__dev_queue_xmit", XFLOW_SITE_ENTRY, &si));
	/* target() is the struct sk_buff * argument: skb, the first. */
	cr_expect_eq(p->domains[0].fetches[p->domains[0].bindings[0].first_fetch].reg, 5);
	xflow_plan_free(p);
	xflow_unit_free(u);
}

Test(kbtf, a_kernel_is_a_domain_s_only_binary)
{
	struct xflow_unit *u = unit_of("<flows><xflow name='f'><start><pointcut>call(consume_skb)</pointcut>"
				       "<select local_var='skb'/></start></xflow></flows>");
	const char *bins[] = { "kernel:", "/bin/true" };
	struct seen seen;
	struct xflow_plan *p;
	cr_expect_neq(plan_of(u, bins, 2, &seen, &p), 0);
	cr_expect(said(&seen, "error", "is the domain's only binary"));
	xflow_plan_free(p);
	xflow_unit_free(u);
}

/* A keyed handoff between two kernel functions: the key's layout comes
 * from BTF into the plan, and the request is bound by its argument. */
Test(kbtf, keyed_handoff_plans_with_the_key_layout)
{
	struct xflow_unit *u = unit_of("<flows><xflow name='kx'>"
				       "<transit><pointcut>call(dev_hard_start_xmit) AND access(net_device.ifindex)"
				       "</pointcut><xin_move name='vx' from='first' to='dev'><key member='ifindex'/>"
				       "</xin_move></transit>"
				       "<transit><pointcut>call(veth_xmit) AND access(net_device.ifindex)</pointcut>"
				       "<xout_move name='vx' from='dev' to='skb'/></transit>"
				       "</xflow></flows>");
	const char *bins[] = { "kernel:" };
	struct seen seen;
	struct xflow_plan *p;
	cr_assert_eq(plan_of(u, bins, 1, &seen, &p), 0, "%s", seen.n ? seen.msg[0] : "");
	cr_assert_eq(p->nfields, 1);
	struct jp_kbtf *k;
	struct jp_err err;
	struct jp_kbtf_member m;
	cr_assert_eq(jp_kbtf_open(&k, "kernel:", &err), 0);
	cr_assert_eq(jp_kbtf_member(k, "net_device", "ifindex", &m, &err), 0);
	jp_kbtf_free(k);
	cr_expect_eq(p->domains[0].layouts[0].offset, (int64_t)m.offset);
	cr_expect_eq(p->domains[0].layouts[0].size, 4);
	uint32_t si = 0;
	cr_assert(site_named(&p->domains[0], "veth_xmit", XFLOW_SITE_ENTRY, &si) ||
		  said(&seen, "warning", "veth_xmit"), "veth_xmit is woven or said to be missing");
	xflow_plan_free(p);
	xflow_unit_free(u);
}

/* `xflowc plan --domain NAME=kernel:` on the command line: the sites by
 * their mechanism, and an unresolved one named on standard error. */
Test(kbtf, xflowc_plan_against_the_running_kernel)
{
	char *obuf = NULL, *ebuf = NULL;
	size_t olen = 0, elen = 0;
	FILE *out = open_memstream(&obuf, &olen), *err = open_memstream(&ebuf, &elen);
	const char *argv[] = { "plan", "--domain", "linuxK=kernel:", "flows/kernel/net_tp.xml", NULL };
	int rc = xflowc_plan_run(4, (char **)argv, out, err);
	fclose(out);
	fclose(err);
	cr_expect_eq(rc, 0, "%s", ebuf);
	cr_expect(strstr(obuf, "binary 0 kernel:") != NULL, "%s", obuf);
	cr_expect(strstr(obuf, "tracepoint ?:0 net:net_dev_queue") != NULL, "%s", obuf);
	cr_expect(strstr(obuf, "raw tracepoint") != NULL, "%s", obuf);
	free(obuf);
	free(ebuf);
	obuf = ebuf = NULL;
	out = open_memstream(&obuf, &olen);
	err = open_memstream(&ebuf, &elen);
	FILE *f = fopen("/tmp/xflow-kbtf-test.xml", "w");
	cr_assert(f);
	fputs("<flows><xflow name='f'><start><pointcut>call(xflow_not_in_any_kernel)</pointcut>"
	      "<select local_var='skb'/></start></xflow></flows>\n", f);
	fclose(f);
	const char *argv2[] = { "plan", "--domain", "linuxK=kernel:", "/tmp/xflow-kbtf-test.xml", NULL };
	rc = xflowc_plan_run(4, (char **)argv2, out, err);
	fclose(out);
	fclose(err);
	unlink("/tmp/xflow-kbtf-test.xml");
	cr_expect_eq(rc, 0, "a warning, not an error");
	cr_expect(strstr(ebuf, "unresolved: the kernel (/sys/kernel/btf/vmlinux) has no function "
			       "xflow_not_in_any_kernel") != NULL, "%s", ebuf);
	free(obuf);
	free(ebuf);
}

/* ---- module BTF --------------------------------------------------------------------- */

/* A kernel of our own, as a domain's would be copied here: a raw vmlinux
 * BTF (int, struct base_s) and one module, xen-modx.ko, whose split BTF
 * on it has struct modq { int a; int b; } and void mod_fn(struct modq *q),
 * listed in a modules.dep under kernel/drivers/.  Written with libbpf, so
 * it needs no kernel of any kind. */
struct fake_kernel {
	char dir[64], vmlinux[128], ko[192];
};

static void write_btf(const struct btf *b, const char *path)
{
	uint32_t sz;
	const void *raw = btf__raw_data(b, &sz);
	cr_assert(raw);
	FILE *f = fopen(path, "w");
	cr_assert(f, "%s", path);
	cr_assert_eq(fwrite(raw, 1, sz, f), sz);
	fclose(f);
}

static void fake_kernel_make(struct fake_kernel *fk)
{
	snprintf(fk->dir, sizeof(fk->dir), "/tmp/xflow-kbtf-XXXXXX");
	cr_assert(mkdtemp(fk->dir));
	snprintf(fk->vmlinux, sizeof(fk->vmlinux), "%s/vmlinux", fk->dir);
	struct btf *base = btf__new_empty();
	cr_assert(base);
	int i32 = btf__add_int(base, "int", 4, BTF_INT_SIGNED);
	cr_assert_gt(i32, 0);
	cr_assert_gt(btf__add_struct(base, "base_s", 4), 0);
	cr_assert_eq(btf__add_field(base, "x", i32, 0, 0), 0);
	write_btf(base, fk->vmlinux);
	struct btf *mod = btf__new_empty_split(base);
	cr_assert(mod);
	int q = btf__add_struct(mod, "modq", 8);
	cr_assert_gt(q, 0);
	cr_assert_eq(btf__add_field(mod, "a", i32, 0, 0), 0);
	cr_assert_eq(btf__add_field(mod, "b", i32, 32, 0), 0);
	int pq = btf__add_ptr(mod, q);
	int proto = btf__add_func_proto(mod, 0);
	cr_assert_eq(btf__add_func_param(mod, "q", pq), 0);
	cr_assert_gt(btf__add_func(mod, "mod_fn", BTF_FUNC_GLOBAL, proto), 0);
	char sub[128], dep[128];
	snprintf(sub, sizeof(sub), "%s/kernel", fk->dir);
	mkdir(sub, 0700);
	snprintf(sub, sizeof(sub), "%s/kernel/drivers", fk->dir);
	mkdir(sub, 0700);
	snprintf(fk->ko, sizeof(fk->ko), "%s/xen-modx.ko", sub);
	write_btf(mod, fk->ko);
	snprintf(dep, sizeof(dep), "%s/modules.dep", fk->dir);
	FILE *f = fopen(dep, "w");
	cr_assert(f);
	fputs("kernel/net/other.ko:\nkernel/drivers/xen-modx.ko: kernel/net/other.ko\n", f);
	fclose(f);
	btf__free(mod);
	btf__free(base);
}

static void fake_kernel_rm(struct fake_kernel *fk)
{
	char p[256];
	unlink(fk->ko);
	snprintf(p, sizeof(p), "%s/modules.dep", fk->dir);
	unlink(p);
	unlink(fk->vmlinux);
	snprintf(p, sizeof(p), "%s/kernel/drivers", fk->dir);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/kernel", fk->dir);
	rmdir(p);
	rmdir(fk->dir);
}

/* A function, a struct and its member found in a module named in the
 * plan: by its name through modules.dep ("-" read as "_"), or by file. */
Test(kbtf, a_named_module_on_disk_is_searched_after_vmlinux)
{
	struct fake_kernel fk;
	fake_kernel_make(&fk);
	char spec[2][400];
	snprintf(spec[0], sizeof(spec[0]), "kernel:%s+%s+xen_modx", fk.vmlinux, fk.dir);
	snprintf(spec[1], sizeof(spec[1]), "kernel:%s+%s", fk.vmlinux, fk.ko);
	for (int i = 0; i < 2; i++) {
		struct jp_kbtf *k;
		struct jp_err err;
		cr_assert_eq(jp_kbtf_open(&k, spec[i], &err), 0, "%s: %s", spec[i], err.msg);
		struct jp_kbtf_func f;
		cr_assert_eq(jp_kbtf_func(k, "mod_fn", &f, &err), 0, "%s", err.msg);
		cr_expect_str_eq(f.module, "xen_modx");
		cr_expect_eq(f.nargs, 1);
		cr_expect_str_eq(f.arg[0], "q");
		cr_expect_str_eq(f.arg_struct[0], "modq");
		struct jp_kbtf_member m;
		cr_assert_eq(jp_kbtf_member(k, "modq", "b", &m, &err), 0, "%s", err.msg);
		cr_expect_eq(m.offset, 4);
		cr_expect_eq(m.size, 4);
		cr_assert_eq(jp_kbtf_member(k, "base_s", "x", &m, &err), 0, "vmlinux's own: %s", err.msg);
		cr_expect_eq(jp_kbtf_func(k, "xflow_nothing", &f, &err), -ENOENT);
		cr_expect(strstr(err.msg, "nor in modules xen_modx") != NULL, "where it looked: %s", err.msg);
		jp_kbtf_free(k);
	}
	fake_kernel_rm(&fk);
}

/* What is missing is named: a module not in modules.dep, a module
 * directory without one, a .ko that is not there, and a function that
 * only a module not named would have. */
Test(kbtf, missing_modules_are_named)
{
	struct fake_kernel fk;
	fake_kernel_make(&fk);
	struct jp_kbtf *k;
	struct jp_err err;
	char spec[400], want[300];
	snprintf(spec, sizeof(spec), "kernel:%s+%s+xen_netfront", fk.vmlinux, fk.dir);
	cr_expect_eq(jp_kbtf_open(&k, spec, &err), -ENOENT);
	snprintf(want, sizeof(want), "module xen_netfront is not in %s/modules.dep", fk.dir);
	cr_expect(strstr(err.msg, want) != NULL, "%s", err.msg);
	snprintf(spec, sizeof(spec), "kernel:%s+/nonexistent/x.ko", fk.vmlinux);
	cr_expect_lt(jp_kbtf_open(&k, spec, &err), 0);
	cr_expect(strstr(err.msg, "/nonexistent/x.ko") != NULL, "%s", err.msg);
	snprintf(spec, sizeof(spec), "kernel:%s+%s+xen_modx", fk.vmlinux, "/tmp");
	cr_expect_lt(jp_kbtf_open(&k, spec, &err), 0);
	cr_expect(strstr(err.msg, "/tmp/modules.dep") != NULL, "%s", err.msg);
	/* vmlinux alone: the module's function is not found, and the message
	 * says how to name a module. */
	snprintf(spec, sizeof(spec), "kernel:%s", fk.vmlinux);
	cr_assert_eq(jp_kbtf_open(&k, spec, &err), 0, "%s", err.msg);
	struct jp_kbtf_func f;
	cr_expect_eq(jp_kbtf_func(k, "mod_fn", &f, &err), -ENOENT);
	cr_expect(strstr(err.msg, "name it, kernel:") != NULL, "%s", err.msg);
	jp_kbtf_free(k);
	fake_kernel_rm(&fk);
}

/* ?NAME: a module the domain has that this machine may lack.  Found, it
 * is searched like NAME; missing, it is skipped and said (at open and in
 * what a name searched in vain looked through), and a plan that needs
 * none of its functions is built with a warning naming it. */
Test(kbtf, optional_modules_are_skipped_and_said)
{
	struct fake_kernel fk;
	fake_kernel_make(&fk);
	struct jp_kbtf *k;
	struct jp_err err;
	char spec[400];
	snprintf(spec, sizeof(spec), "kernel:%s+%s+?xen_modx+?xen_netfront", fk.vmlinux, fk.dir);
	cr_assert_eq(jp_kbtf_open(&k, spec, &err), 0, "%s", err.msg);
	const char *name = NULL, *why = NULL;
	cr_assert_eq(jp_kbtf_skipped(k, 0, &name, &why), 1);
	cr_expect_str_eq(name, "xen_netfront");
	cr_expect(strstr(why, "not in") && strstr(why, "modules.dep"), "%s", why);
	struct jp_kbtf_func f;
	cr_expect_eq(jp_kbtf_func(k, "mod_fn", &f, &err), 0, "the module found: %s", err.msg);
	cr_expect_str_eq(f.module, "xen_modx");
	cr_expect_eq(jp_kbtf_func(k, "xennet_start_xmit", &f, &err), -ENOENT);
	cr_expect(strstr(err.msg, "has no function xennet_start_xmit") &&
		  strstr(err.msg, "not found on this machine: xen_netfront"), "%s", err.msg);
	jp_kbtf_free(k);

	/* Planned: the skip is a warning, the flow's join point in the
	 * missing module is the usual unresolved warning, and the plan is
	 * built with the rest. */
	struct xflow_unit *u = unit_of("<flows><xflow name='f'>"
				       "<start><pointcut>call(mod_fn) OR call(xennet_start_xmit)</pointcut>"
				       "<select local_var='q'/></start></xflow></flows>");
	const char *bins[] = { spec };
	struct seen seen;
	struct xflow_plan *p = NULL;
	cr_assert_eq(plan_of(u, bins, 1, &seen, &p), 0);
	cr_expect(said(&seen, "warning", "module xen_netfront skipped"), "the skip is said");
	cr_expect(said(&seen, "warning", "unresolved: the kernel"), "the join point in it is named");
	cr_expect(said(&seen, "warning", "not found on this machine: xen_netfront"));
	uint32_t idx;
	cr_expect_not_null(site_named(&p->domains[0], "mod_fn", XFLOW_SITE_ENTRY, &idx));
	xflow_plan_free(p);
	xflow_unit_free(u);
	fake_kernel_rm(&fk);
}

/* /sys/kernel/btf/vmlinux written out: the running kernel, with only the
 * modules named (none here), where kernel: alone searches all loaded. */
Test(kbtf, the_running_vmlinux_by_path_takes_only_named_modules)
{
	struct jp_kbtf *k;
	struct jp_err err;
	cr_assert_eq(jp_kbtf_open(&k, "kernel:/sys/kernel/btf/vmlinux+?xflow_no_such_module", &err), 0, "%s",
		     err.msg);
	const char *name, *why;
	cr_assert_eq(jp_kbtf_skipped(k, 0, &name, &why), 1);
	struct utsname un;
	cr_assert_eq(uname(&un), 0);
	char want[400];
	snprintf(want, sizeof(want), "/lib/modules/%s", un.release);
	cr_expect(strstr(why, want) != NULL, "looked in this kernel's module directory: %s", why);
	struct jp_kbtf_func f;
	cr_expect_eq(jp_kbtf_func(k, "xflow_nothing", &f, &err), -ENOENT);
	cr_expect(strstr(err.msg, "loaded modules") == NULL, "loaded modules not searched: %s", err.msg);
	jp_kbtf_free(k);
}

/* The running kernel: its loaded modules are searched without naming
 * them.  Where none has BTF of its own (this project's build machine:
 * /sys/kernel/btf has vmlinux only), there is nothing to find. */
Test(kbtf, loaded_modules_of_the_running_kernel)
{
	DIR *d = opendir("/sys/kernel/btf");
	cr_assert(d);
	char mod[256] = "";
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && strcmp(e->d_name, "vmlinux") != 0) {
			snprintf(mod, sizeof(mod), "%s", e->d_name);
			break;
		}
	closedir(d);
	if (!mod[0])
		cr_skip_test("no loaded module has BTF here (/sys/kernel/btf holds vmlinux only)");
	char path[300];
	snprintf(path, sizeof(path), "/sys/kernel/btf/%s", mod);
	struct btf *vm = btf__parse(JP_KBTF_DEFAULT, NULL);
	struct btf *mb = vm ? btf__parse_split(path, vm) : NULL;
	cr_assert(mb, "%s", path);
	/* The module's first function, found by name through kernel:. */
	const char *fn = NULL;
	for (uint32_t id = btf__type_cnt(vm); id < btf__type_cnt(mb) && !fn; id++) {
		const struct btf_type *t = btf__type_by_id(mb, id);
		if (btf_is_func(t))
			fn = btf__name_by_offset(mb, t->name_off);
	}
	if (!fn)
		cr_skip_test("module %s has no function in its BTF", mod);
	struct jp_kbtf *k;
	struct jp_err err;
	cr_assert_eq(jp_kbtf_open(&k, "kernel:", &err), 0, "%s", err.msg);
	struct jp_kbtf_func f;
	cr_expect_eq(jp_kbtf_func(k, fn, &f, &err), 0, "%s", err.msg);
	cr_expect_str_eq(f.module ? f.module : "(vmlinux)", mod);
	jp_kbtf_free(k);
	btf__free(mb);
	btf__free(vm);
}

/* A kernel with netback's shape, written with libbpf: struct queue embeds
 * pend, 256 struct pinfo of 64 bytes at 3096, each a struct req at 0
 * (gref at 0, id at 8); and members that are no such array: a pointer, an
 * integer, a flexible array.  idx_release(queue, u16 pending_idx, u8
 * status) and bad_idx(queue, struct req *pending_idx). */
static void netback_like(char *path, size_t len)
{
	snprintf(path, len, "/tmp/xflow-kbtf-idx-XXXXXX");
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	struct btf *b = btf__new_empty();
	cr_assert(b);
	int u32 = btf__add_int(b, "unsigned int", 4, 0), u16 = btf__add_int(b, "unsigned short", 2, 0);
	int u8 = btf__add_int(b, "unsigned char", 1, 0);
	int req = btf__add_struct(b, "req", 12);
	cr_assert_eq(btf__add_field(b, "gref", u32, 0, 0), 0);
	cr_assert_eq(btf__add_field(b, "id", u16, 64, 0), 0);
	int pinfo = btf__add_struct(b, "pinfo", 64);
	cr_assert_eq(btf__add_field(b, "req", req, 0, 0), 0);
	cr_assert_eq(btf__add_field(b, "extra", u32, 96, 0), 0);
	int vif = btf__add_struct(b, "vif", 4);
	cr_assert_eq(btf__add_field(b, "domid", u16, 0, 0), 0);
	int pvif = btf__add_ptr(b, vif), preq = btf__add_ptr(b, req);
	int pend = btf__add_array(b, u32, pinfo, 256), flex = btf__add_array(b, u32, pinfo, 0);
	int q = btf__add_struct(b, "queue", 3096 + 16384 + 16);
	cr_assert_eq(btf__add_field(b, "vif", pvif, 256, 0), 0);
	cr_assert_eq(btf__add_field(b, "pend", pend, 3096 * 8, 0), 0);
	cr_assert_eq(btf__add_field(b, "rp", preq, (3096 + 16384) * 8, 0), 0);
	cr_assert_eq(btf__add_field(b, "narr", u32, (3096 + 16384 + 8) * 8, 0), 0);
	cr_assert_eq(btf__add_field(b, "flex", flex, (3096 + 16384 + 16) * 8, 0), 0);
	int pq = btf__add_ptr(b, q);
	int proto = btf__add_func_proto(b, 0);
	cr_assert_eq(btf__add_func_param(b, "queue", pq), 0);
	cr_assert_eq(btf__add_func_param(b, "pending_idx", u16), 0);
	cr_assert_eq(btf__add_func_param(b, "status", u8), 0);
	cr_assert_gt(btf__add_func(b, "idx_release", BTF_FUNC_GLOBAL, proto), 0);
	proto = btf__add_func_proto(b, 0);
	cr_assert_eq(btf__add_func_param(b, "queue", pq), 0);
	cr_assert_eq(btf__add_func_param(b, "pending_idx", preq), 0);
	cr_assert_gt(btf__add_func(b, "bad_idx", BTF_FUNC_GLOBAL, proto), 0);
	write_btf(b, path);
	btf__free(b);
}

/* A keyed handoff at idx_release whose request is @req (an indexed
 * chain), quit at its return by the same chain, at @fn. */
static struct xflow_unit *indexed_unit(const char *fn, const char *req)
{
	char xml[2048];
	snprintf(xml, sizeof(xml),
		 "<flows><xflow name='f'>\n"
		 "<transit><pointcut>call(%s)</pointcut><cast var='queue' struct='queue'/>\n"
		 "<cast var='%s' struct='req'/>\n"
		 "<xin_copy name='k' from='queue' to='%s'><key member='gref' bits='32'/><key member='id' bits='16'/>"
		 "</xin_copy></transit>\n"
		 "<transit><pointcut>call(%s)</pointcut><cast var='queue' struct='queue'/>"
		 "<cast var='queue->vif' struct='vif'/><cast var='%s' struct='req'/>\n"
		 "<xout_copy name='k' from='%s' to='%s'><sender domid='queue->vif->domid'/></xout_copy></transit>\n"
		 "<quit><pointcut>return(%s)</pointcut><cast var='queue' struct='queue'/>\n"
		 "<select local_var='%s'/></quit>\n"
		 "</xflow></flows>",
		 fn, req, req, fn, req, req, req, fn, req);
	return unit_of(xml);
}

Test(kbtf, an_indexed_request_is_laid_out_from_btf)
{
	char path[64], bin[80];
	netback_like(path, sizeof(path));
	snprintf(bin, sizeof(bin), "kernel:%s", path);
	struct xflow_unit *u = indexed_unit("idx_release", "queue->pend[pending_idx].req");
	const char *bins[] = { bin };
	struct seen seen;
	struct xflow_plan *p;
	cr_assert_eq(plan_of(u, bins, 1, &seen, &p), 0, "%s", seen.n ? seen.msg[0] : "");
	struct xflow_plan_domain *d = &p->domains[0];
	bool found = false;
	for (uint32_t f = 0; f < p->nfields; f++) {
		if (strcmp(p->fields[f].member, "pend[].req"))
			continue;
		found = true;
		cr_expect_str_eq(p->fields[f].sname, "queue");
		cr_expect_eq(d->layouts[f].offset, 3096);
		cr_expect_eq(d->layouts[f].size, 12, "the req in the element");
		cr_expect_eq(d->layouts[f].nelems, 256);
		cr_expect_eq(d->layouts[f].stride, 64);
	}
	cr_expect(found, "the element's field is in the plan");
	/* Every binding fetches pending_idx (%rsi) as a 2-byte integer. */
	unsigned idx_fetches = 0;
	for (uint32_t b = 0; b < d->nbindings; b++) {
		const struct xflow_bc_prog *prog = &p->advice[d->bindings[b].advice].prog;
		for (uint32_t i = 0; i < prog->ninputs; i++)
			if (prog->inputs[i].local && !strcmp(prog->inputs[i].local, "pending_idx")) {
				const struct xflow_plan_fetch *f = &d->fetches[d->bindings[b].first_fetch + i];
				cr_expect_eq(f->reg, 4, "rsi");
				cr_expect_eq(f->size, 2);
				idx_fetches++;
			}
	}
	cr_expect_eq(idx_fetches, 3, "xin, xout and quit");
	/* The plan as a file: the element's layout read back. */
	void *buf = NULL;
	size_t len = 0;
	char why[256];
	cr_assert_eq(xflow_plan_write(p, &buf, &len, why, sizeof(why)), 0, "%s", why);
	struct xflow_plan *r;
	cr_assert_eq(xflow_plan_read(buf, len, &r, why, sizeof(why)), 0, "%s", why);
	for (uint32_t f = 0; f < r->nfields; f++)
		cr_expect(r->domains[0].layouts[f].nelems == d->layouts[f].nelems &&
			  r->domains[0].layouts[f].stride == d->layouts[f].stride, "field %u", f);
	xflow_plan_free(r);
	free(buf);
	/* What a reader refuses of an element's layout: a count without a
	 * stride, an array past what an offset says. */
	for (uint32_t f = 0; f < p->nfields; f++) {
		if (!d->layouts[f].nelems)
			continue;
		struct xflow_plan_layout l0 = d->layouts[f];
		d->layouts[f].stride = 0;
		cr_expect_eq(xflow_plan_check(p, why, sizeof(why)), -EINVAL);
		cr_expect(strstr(why, "is invalid") != NULL, "%s", why);
		d->layouts[f] = l0;
		d->layouts[f].nelems = 0x10000;
		d->layouts[f].stride = 0x10000;
		cr_expect_eq(xflow_plan_check(p, why, sizeof(why)), -EINVAL);
		d->layouts[f] = l0;
		cr_expect_eq(xflow_plan_check(p, why, sizeof(why)), 0, "%s", why);
	}
	xflow_plan_free(p);
	xflow_unit_free(u);
	unlink(path);
}

Test(kbtf, what_cannot_be_indexed_is_refused_at_the_flow_s_line)
{
	char path[64], bin[80];
	netback_like(path, sizeof(path));
	snprintf(bin, sizeof(bin), "kernel:%s", path);
	static const char *const bad[][3] = {
		{ "idx_release", "queue->narr[pending_idx]", "queue.narr is not an array in the kernel's BTF" },
		{ "idx_release", "queue->rp[pending_idx]", "queue.rp is a pointer in the kernel's BTF" },
		{ "idx_release", "queue->flex[pending_idx].req", "queue.flex has no fixed length" },
		{ "idx_release", "queue->pend[pending_idx].nosuch", "queue.pend[] has no member nosuch" },
		{ "idx_release", "queue->nosuch[pending_idx].req", "has no member nosuch" },
		{ "idx_release", "queue->pend[nosuch].req", "idx_release has no argument nosuch" },
		{ "bad_idx", "queue->pend[pending_idx].req",
		  "pending_idx indexes an array, but is not an integer argument of function bad_idx" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct xflow_unit *u = indexed_unit(bad[i][0], bad[i][1]);
		const char *bins[] = { bin };
		struct seen seen;
		struct xflow_plan *p;
		cr_expect_neq(plan_of(u, bins, 1, &seen, &p), 0, "%s planned", bad[i][1]);
		bool hit = false;
		for (size_t j = 0; j < seen.n; j++)
			if (!strcmp(seen.sev[j], "error") && strstr(seen.msg[j], bad[i][2])) {
				hit = true;
				/* The line of the element that names the chain: the xin (4), the
				 * xout (6) or the select (8). */
				cr_expect(strstr(seen.where[j], "t.xml:4:") || strstr(seen.where[j], "t.xml:6:") ||
					  strstr(seen.where[j], "t.xml:8:"), "where: %s", seen.where[j]);
			}
		cr_expect(hit, "%s: want \"%s\", got \"%s\"", bad[i][1], bad[i][2], seen.n ? seen.msg[0] : "nothing");
		xflow_plan_free(p);
		xflow_unit_free(u);
	}
	unlink(path);
}
