/*
 * guestrt/hook/kernel/klower.c: a weave plan's domain lowered to the kernel backend's
 * slot table.  The plans are built by hand around advice the real compiler
 * produces from flow files, so that these run on any machine: which flow
 * operation each expanded element becomes, which argument each operand
 * is, which slot kind each site takes, and the refusals of what a kernel
 * advice cannot do, each naming the advice's file:line.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "guestrt/hook/kernel/klower.h"
#include "guestrt/hook/kernel/ksite_name.h"
#include "xflow/flowlang.h"
#include "xflow/plan.h"
#include "xflow/record.h"

#define MAXA 24

/* A plan of one domain: advice i of @xml bound at site i, of kind kinds[i]
 * ("e" entry, "r" return, "t" tracepoint, "l" an instruction), its inputs
 * fetched from DWARF registers regs[i][k]. */
struct kp {
	struct xflow_unit *u;
	struct xflow_plan plan;
	struct xflow_plan_advice adv[MAXA];
	struct xflow_plan_domain dom;
	struct xflow_plan_site sites[MAXA];
	struct xflow_plan_binding bind[MAXA];
	struct xflow_plan_fetch fetch[MAXA * 4];
	char names[MAXA][32];
};

static void kp_build(struct kp *k, const char *xml, const char *kinds, const uint8_t regs[][4],
		     const uint32_t *site_of)
{
	memset(k, 0, sizeof(*k));
	cr_assert_eq(xflow_unit_new(&k->u, NULL), 0);
	cr_assert_eq(xflow_unit_add_buffer(k->u, "t.xml", xml, strlen(xml)), 0);
	cr_assert_eq(xflow_unit_compile(k->u), 0, "the flow file does not compile");
	size_t n = xflow_unit_advice_count(k->u);
	cr_assert(n <= MAXA && n == strlen(kinds), "%zu advice for %zu kinds", n, strlen(kinds));
	uint32_t nf = 0, nsites = 0;
	for (size_t i = 0; i < n; i++) {
		struct xflow_advice_info ai;
		cr_assert_eq(xflow_unit_advice(k->u, i, &ai), 0);
		k->adv[i] = (struct xflow_plan_advice){ .origin = ai.origin, .flow = ai.flow, .rec_flags = ai.rec_flags,
							.file = ai.file, .line = ai.line, .col = ai.col,
							.prog = *ai.prog };
		uint32_t s = site_of ? site_of[i] : (uint32_t)i;
		if (s + 1 > nsites)
			nsites = s + 1;
		static const uint8_t kind_of[128] = { ['e'] = XFLOW_SITE_ENTRY, ['r'] = XFLOW_SITE_RETURN,
						      ['t'] = XFLOW_SITE_TRACEPOINT, ['l'] = XFLOW_SITE_LOAD };
		snprintf(k->names[s], sizeof(k->names[s]), "%s%u", kinds[i] == 't' ? "cat:tp" : "fn", s);
		k->sites[s] = (struct xflow_plan_site){ .addr = 100 + s, .kind = kind_of[(unsigned char)kinds[i]],
						       .len = 1, .func = k->names[s], .field = -1 };
		k->bind[i] = (struct xflow_plan_binding){ .site = s, .advice = (uint32_t)i,
							  .ninputs = (uint8_t)ai.prog->ninputs, .first_fetch = nf };
		for (uint32_t in = 0; in < ai.prog->ninputs; in++)
			k->fetch[nf++] = (struct xflow_plan_fetch){ .kind = XFLOW_FETCH_REG, .reg = regs[i][in], .size = 8 };
	}
	k->dom = (struct xflow_plan_domain){ .name = "k", .sites = k->sites, .nsites = nsites, .bindings = k->bind,
					     .nbindings = (uint32_t)n, .fetches = k->fetch, .nfetches = nf };
	k->plan = (struct xflow_plan){ .advice = k->adv, .nadvice = (uint32_t)n, .domains = &k->dom, .ndomains = 1 };
}

static void kp_free(struct kp *k)
{
	xflow_unit_free(k->u);
}

/* DWARF numbers of the argument registers and rax. */
enum { RDI = 5, RSI = 4, RDX = 1, RCX = 2, RAX = 0, RBX = 3 };

static const char *const all_ops =
	"<flows><xflow name='f'>"
	"<start><pointcut>call(a)</pointcut><select local_var='skb'/></start>"
	"<transit><pointcut>return(b)</pointcut><move from='skb' to='retval'/></transit>"
	"<transit><pointcut>call(c)</pointcut><copy from='x' to='y'/></transit>"
	"<transit><pointcut>tracepoint(net:d)</pointcut><select local_var='arg0'/></transit>"
	"<quit><pointcut>tracepoint(skb:e)</pointcut></quit>"
	"</xflow></flows>";

Test(klower, each_flow_element_becomes_its_operation)
{
	struct kp k;
	const uint8_t regs[][4] = { { RDI }, { RDI, RAX }, { RSI, RCX }, { RDI }, { RDI } };
	kp_build(&k, all_ops, "erett", regs, NULL);
	struct xk_lowered l;
	char why[512] = "";
	cr_assert_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(l.nused, 5);
	/* Sites take slots of their kind, in order: entries from 0, returns
	 * from XK_NSLOTS, tracepoints from 2 * XK_NSLOTS. */
	const int32_t want_slot[5] = { 0, XK_NSLOTS, 1, 2 * XK_NSLOTS, 2 * XK_NSLOTS + 1 };
	const uint8_t want_kind[5] = { XK_OP_START, XK_OP_MOVE, XK_OP_COPY, XK_OP_PASS, XK_OP_END };
	const uint8_t want_from[5] = { 0, 0, 1, 0, 0 };
	const uint8_t want_to[5] = { XK_ARG_NONE, XK_ARG_RET, 3, XK_ARG_NONE, XK_ARG_NONE };
	const uint16_t want_flags[5] = { XFLOW_REC_START, XFLOW_REC_TRANSIT, XFLOW_REC_TRANSIT, XFLOW_REC_TRANSIT,
					 XFLOW_REC_QUIT };
	for (uint32_t s = 0; s < 5; s++) {
		cr_assert_eq(l.slot_of_site[s], want_slot[s], "site %u in slot %d", s, l.slot_of_site[s]);
		const struct xk_slot_info *si = &l.slots[want_slot[s]];
		cr_expect(si->used);
		cr_expect_str_eq(si->target, k.names[s]);
		cr_expect_eq(si->site.plan_site, s);
		cr_expect_eq(si->site.nops, 1);
		const struct xk_op *op = &si->site.ops[0];
		cr_expect_eq(op->kind, want_kind[s], "site %u: op %u", s, op->kind);
		cr_expect_eq(op->from.arg, want_from[s], "site %u: from %u", s, op->from.arg);
		cr_expect_eq(op->to.arg, want_to[s], "site %u: to %u", s, op->to.arg);
		cr_expect_eq(op->rec_flags, want_flags[s], "site %u: flags %#x", s, op->rec_flags);
		cr_expect_eq(op->flow, 0);
		cr_expect_eq(op->advice, s);
	}
	char name[32];
	xk_slot_prog_name((uint32_t)want_slot[1], name, sizeof(name));
	cr_expect_str_eq(name, "xk_exit_0");
	xk_slot_prog_name((uint32_t)want_slot[4], name, sizeof(name));
	cr_expect_str_eq(name, "xk_tp_1");
	xk_lowered_fini(&l);
	kp_free(&k);
}

/* Two elements at one join point: one slot, operations in weave order. */
Test(klower, one_site_many_operations_in_weave_order)
{
	struct kp k;
	const char *xml = "<flows><xflow name='f'>"
			  "<start><pointcut>call(a)</pointcut><select local_var='p'/></start>"
			  "</xflow><xflow name='g'>"
			  "<quit><pointcut>call(a)</pointcut><select local_var='q'/></quit>"
			  "</xflow></flows>";
	const uint8_t regs[][4] = { { RSI }, { RDX } };
	const uint32_t site_of[] = { 0, 0 };
	kp_build(&k, xml, "ee", regs, site_of);
	struct xk_lowered l;
	char why[512] = "";
	cr_assert_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(l.nused, 1);
	const struct xk_site *s = &l.slots[0].site;
	cr_assert_eq(s->nops, 2);
	cr_expect_eq(s->ops[0].kind, XK_OP_START);
	cr_expect_eq(s->ops[0].flow, 0);
	cr_expect_eq(s->ops[0].from.arg, 1);
	cr_expect_eq(s->ops[1].kind, XK_OP_END);
	cr_expect_eq(s->ops[1].flow, 1);
	cr_expect_eq(s->ops[1].from.arg, 2);
	xk_lowered_fini(&l);
	kp_free(&k);
}

static void expect_refusal(const char *xml, const char *kinds, const uint8_t regs[][4], int rc, const char *want)
{
	struct kp k;
	kp_build(&k, xml, kinds, regs, NULL);
	struct xk_lowered l;
	char why[512] = "";
	cr_expect_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), rc, "for %s: %s", xml, why);
	cr_expect(strstr(why, want) != NULL, "want \"%s\" in \"%s\"", want, why);
	cr_expect_null(l.slot_of_site, "nothing kept after a refusal");
	kp_free(&k);
}

Test(klower, data_records_are_refused_naming_the_advice)
{
	const uint8_t regs[][4] = { { RDI } };
	expect_refusal("<flows><xflow name='f'/><advice><pointcut>call(a) AND local_var(skb, s) AND xflow(f, s, id)"
		       "</pointcut><before>STORE_DATA1(id);</before></advice></flows>",
		       "e", regs, -EINVAL, "writes data records");
	expect_refusal("<flows><xflow name='f'/><advice><pointcut>call(a) AND local_var(skb, s) AND xflow(f, s, id)"
		       "</pointcut><before>STORE_DATA1(id);</before></advice></flows>",
		       "e", regs, -EINVAL, "t.xml:1:");
}

Test(klower, writing_kernel_memory_is_refused)
{
	const uint8_t regs[][4] = { { RDI, RSI } };
	expect_refusal("<flows><xflow name='f'><transit><pointcut>call(a) AND access(netif_tx_request.flags)"
		       "</pointcut><xin_move name='n' from='skb' to='tx'><field name='flags' offset='4' size='12'/>"
		       "</xin_move></transit></xflow></flows>",
		       "e", regs, -EINVAL, "never writes kernel memory");
}

static const char *const keyed =
	"<flows><xflow name='f'>"
	"<transit><pointcut>call(a) AND access(netif_tx_request.id)</pointcut>"
	"<xin_move name='tx' from='skb' to='req'><key member='id'/></xin_move></transit>"
	"<transit><pointcut>call(b) AND access(netif_tx_request.id)</pointcut>"
	"<xout_copy name='tx' from='txp' to='nskb'/></transit>"
	"</xflow></flows>";

/* A keyed handoff (xflow(5), CROSS-DOMAIN TRANSIT WITHOUT FREE BITS): the
 * sending side keyed by the request's member, at the offset and size the
 * domain's layout (the kernel's BTF) gives; the receiving side a new id. */
Test(klower, keyed_handoffs_become_hand_out_and_hand_in)
{
	struct kp k;
	const uint8_t regs[][4] = { { RDI, RSI }, { RDX, RCX } };
	kp_build(&k, keyed, "ee", regs, NULL);
	struct xflow_plan_field fields[1] = { { "netif_tx_request", "id" } };
	struct xflow_plan_layout lay[1] = { { .offset = 10, .size = 2 } };
	k.plan.fields = fields;
	k.plan.nfields = 1;
	k.dom.layouts = lay;
	struct xk_lowered l;
	char why[512] = "";
	cr_assert_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), 0, "%s", why);
	const struct xk_op *out = &l.slots[0].site.ops[0], *in = &l.slots[1].site.ops[0];
	cr_expect_eq(out->kind, XK_OP_HAND_OUT);
	cr_expect_eq(out->from.arg, 0, "the object: skb in rdi");
	cr_expect_eq(out->to.arg, 1, "the request: req in rsi");
	cr_expect_eq(out->move, 1, "xin_move drops the sender's id");
	cr_expect_eq(out->part[0].off, 10);
	cr_expect_eq(out->part[0].size, 2);
	cr_expect_eq(out->rec_flags & (XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN),
		     XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN);
	cr_expect_eq(in->kind, XK_OP_HAND_IN);
	cr_expect_eq(in->from.arg, 3, "the object: nskb in rcx");
	cr_expect_eq(in->to.arg, 2, "the request: txp in rdx");
	cr_expect_eq(in->part[0].off, 10);
	cr_expect_eq(in->part[0].size, 2);
	xk_lowered_fini(&l);
	/* A key that is not a whole 1, 2, 4 or 8-byte member is refused. */
	lay[0] = (struct xflow_plan_layout){ .offset = 10, .size = 2, .bit_offset = 81, .bit_size = 3 };
	cr_expect_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "the key netif_tx_request.id is not a whole integer member") != NULL, "%s", why);
	lay[0] = (struct xflow_plan_layout){ .offset = -1 };
	cr_expect_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "t.xml:1:") != NULL, "%s", why);
	kp_free(&k);
}

Test(klower, instruction_sites_are_refused)
{
	const uint8_t regs[][4] = { { RDI } };
	expect_refusal("<flows><xflow name='f'><start><pointcut>call(a)</pointcut><select local_var='p'/></start>"
		       "</xflow></flows>",
		       "l", regs, -EINVAL, "entries, returns and tracepoints only");
}

Test(klower, operands_must_be_arguments)
{
	/* rbx is no argument register; rax is the return value only at a
	 * return. */
	const uint8_t rbx[][4] = { { RBX } };
	const char *xml = "<flows><xflow name='f'><start><pointcut>call(a)</pointcut><select local_var='p'/></start>"
			  "</xflow></flows>";
	expect_refusal(xml, "e", rbx, -EINVAL, "not an argument of the function");
	const uint8_t rax[][4] = { { RAX } };
	expect_refusal(xml, "e", rax, -EINVAL, "not an argument of the function");
	const uint8_t rsi[][4] = { { RSI } };
	expect_refusal(xml, "t", rsi, -EINVAL, "only the first argument");
}

Test(klower, too_many_sites_of_a_kind)
{
	struct kp k;
	const char *xml = "<flows><xflow name='f'><start><pointcut>call(a)</pointcut><select local_var='p'/></start>"
			  "</xflow></flows>";
	const uint8_t regs[][4] = { { RDI } };
	kp_build(&k, xml, "t", regs, NULL);
	/* The one advice bound at XK_NTP + 1 tracepoints. */
	struct xflow_plan_site sites[XK_NTP + 1];
	struct xflow_plan_binding bind[XK_NTP + 1];
	for (uint32_t s = 0; s <= XK_NTP; s++) {
		sites[s] = k.sites[0];
		sites[s].addr = 100 + s;
		bind[s] = k.bind[0];
		bind[s].site = s;
	}
	k.dom.sites = sites;
	k.dom.nsites = XK_NTP + 1;
	k.dom.bindings = bind;
	k.dom.nbindings = XK_NTP + 1;
	struct xk_lowered l;
	char why[512] = "";
	cr_expect_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), -E2BIG);
	cr_expect(strstr(why, "more than 8 tracepoints") != NULL, "%s", why);
	kp_free(&k);
}

/* netfront's and netback's sides on 6.1 (flows/kernel/xen_net.xml): the
 * object and the request are members of a void * argument, the key is
 * two members packed, and the receiver knows the sender from its queue. */
static const char *const chained =
	"<flows><xflow name='f'>"
	"<transit><pointcut>call(a)</pointcut>"
	"<cast var='data' struct='txreq_info'/><cast var='data->tx' struct='tx_req'/>"
	"<xin_move name='tx' from='data->skb' to='data->tx'>"
	"<key member='gref' bits='32'/><key member='id' bits='16'/></xin_move></transit>"
	"<transit><pointcut>call(b)</pointcut>"
	"<cast var='txp' struct='tx_req'/><cast var='queue' struct='vq'/><cast var='queue->vif' struct='vif'/>"
	"<xout_move name='tx' from='txp' to='skb'><sender domid='queue->vif->domid'/></xout_move></transit>"
	"</xflow></flows>";

/* Layouts by (struct, member), whatever order the compiler numbered the
 * fields in. */
struct want_layout {
	const char *s, *m;
	struct xflow_plan_layout l;
};

static void kp_layouts(struct kp *k, const struct want_layout *w, size_t n, struct xflow_plan_field *fields,
		       struct xflow_plan_layout *lay)
{
	size_t nf = xflow_unit_field_count(k->u);
	for (size_t i = 0; i < nf; i++) {
		unsigned mb;
		cr_assert_eq(xflow_unit_field(k->u, i, &fields[i].sname, &fields[i].member, &mb), 0);
		lay[i] = (struct xflow_plan_layout){ .offset = -1 };
		for (size_t j = 0; j < n; j++)
			if (!strcmp(w[j].s, fields[i].sname) && !strcmp(w[j].m, fields[i].member))
				lay[i] = w[j].l;
	}
	k->plan.fields = fields;
	k->plan.nfields = (uint32_t)nf;
	k->dom.layouts = lay;
}

#define PTR8(o) { .offset = (o), .size = 8, .flags = XFLOW_LAYOUT_POINTER }
static const struct want_layout chained_layouts[] = {
	{ "txreq_info", "skb", PTR8(8) },        { "txreq_info", "tx", PTR8(24) },
	{ "tx_req", "gref", { .offset = 0, .size = 4 } }, { "tx_req", "id", { .offset = 6, .size = 2 } },
	{ "vq", "vif", PTR8(40) },               { "vif", "domid", { .offset = 2, .size = 2 } },
};

Test(klower, member_chains_and_packed_keys_become_paths_and_parts)
{
	struct kp k;
	/* a(data = rcx); b(queue = rdi, txp = rsi, skb = rdx), in the order
	 * the expansion binds them: object, request, sender. */
	const uint8_t regs[][4] = { { RCX }, { RDX, RSI, RDI } };
	kp_build(&k, chained, "ee", regs, NULL);
	struct xflow_plan_field fields[16];
	struct xflow_plan_layout lay[16];
	kp_layouts(&k, chained_layouts, 6, fields, lay);
	struct xk_lowered l;
	char why[512] = "";
	cr_assert_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), 0, "%s", why);
	const struct xk_op *out = &l.slots[0].site.ops[0], *in = &l.slots[1].site.ops[0];
	cr_expect_eq(out->kind, XK_OP_HAND_OUT);
	cr_expect_eq(out->from.arg, 3, "data in rcx");
	cr_expect_eq(out->from.n, 1, "data->skb: one load");
	cr_expect_eq(out->from.off[0], 8);
	cr_expect_eq(out->from.size[0], 8);
	cr_expect_eq(out->to.arg, 3);
	cr_expect_eq(out->to.n, 1, "data->tx: one load");
	cr_expect_eq(out->to.off[0], 24);
	cr_expect_eq(out->peer.arg, XK_ARG_NONE, "the sender says nothing of a peer");
	/* The first <key> highest: gref in bits 16..47, id in 0..15. */
	cr_assert_eq(out->nparts, 2);
	cr_expect_eq(out->part[0].off, 0);
	cr_expect_eq(out->part[0].size, 4);
	cr_expect_eq(out->part[0].bits, 32);
	cr_expect_eq(out->part[0].shift, 16);
	cr_expect_eq(out->part[1].off, 6);
	cr_expect_eq(out->part[1].size, 2);
	cr_expect_eq(out->part[1].bits, 16);
	cr_expect_eq(out->part[1].shift, 0);
	cr_expect_eq(in->kind, XK_OP_HAND_IN);
	cr_expect_eq(in->from.arg, 2, "skb in rdx");
	cr_expect_eq(in->from.n, 0);
	cr_expect_eq(in->to.arg, 1, "txp in rsi");
	cr_expect_eq(in->to.n, 0);
	cr_assert_eq(in->nparts, 2);
	cr_expect_eq(in->part[0].shift, 16);
	cr_expect_eq(in->peer.arg, 0, "queue in rdi");
	cr_assert_eq(in->peer.n, 2, "queue->vif->domid: two loads");
	cr_expect_eq(in->peer.off[0], 40);
	cr_expect_eq(in->peer.size[0], 8);
	cr_expect_eq(in->peer.off[1], 2);
	cr_expect_eq(in->peer.size[1], 2);
	xk_lowered_fini(&l);
	kp_free(&k);
}

/* What this kernel's BTF says can refuse a chain or a key: each refusal
 * names the flow file's line and the member. */
Test(klower, chains_and_keys_refused_by_the_kernels_layouts)
{
	const uint8_t regs[][4] = { { RCX }, { RDX, RSI, RDI } };
	struct want_layout w[6];
	struct {
		unsigned which;
		struct xflow_plan_layout l;
		const char *said;
	} cases[] = {
		/* gref of 2 bytes cannot give 32 bits. */
		{ 2, { .offset = 0, .size = 2 }, "the key tx_req.gref gives bits=\"32\", but the member has 16 bits" },
		/* A pointer is no key. */
		{ 3, PTR8(8), "the key tx_req.id is not a whole integer member" },
		/* A chain goes through pointers only. */
		{ 1, { .offset = 24, .size = 4 }, "txreq_info.tx is not a pointer member" },
		/* The sender's domain id is an integer. */
		{ 5, PTR8(2), "vif.domid is not a whole integer member" },
		/* A member this kernel lacks. */
		{ 4, { .offset = -1 }, "vq.vif is not a pointer member" },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct kp k;
		kp_build(&k, chained, "ee", regs, NULL);
		memcpy(w, chained_layouts, sizeof(w));
		w[cases[c].which].l = cases[c].l;
		struct xflow_plan_field fields[16];
		struct xflow_plan_layout lay[16];
		kp_layouts(&k, w, 6, fields, lay);
		struct xk_lowered l;
		char why[512] = "";
		cr_expect_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), -EINVAL, "case %zu", c);
		cr_expect(strstr(why, cases[c].said) != NULL, "case %zu: %s", c, why);
		cr_expect(strncmp(why, "t.xml:1:", 8) == 0, "case %zu names the file and line: %s", c, why);
		kp_free(&k);
	}
}

/* Arithmetic other than a key's packing is still refused: the BPF
 * program only masks, shifts and ORs members. */
Test(klower, arithmetic_beyond_packing_is_refused)
{
	const uint8_t regs[][4] = { { RDI } };
	expect_refusal("<flows><xflow name='f'/><advice><pointcut>call(a) AND local_var(p, s) AND xflow(f, s, id)"
		       "</pointcut><before>struct r *q = *(void**)s; STORE_HANDOFF_OUT(f, q->id + 1, id);</before>"
		       "</advice></flows>",
		       "e", regs, -EINVAL, "computes with its values");
	expect_refusal("<flows><xflow name='f'/><advice><pointcut>call(a) AND local_var(p, s) AND xflow(f, s, id)"
		       "</pointcut><before>struct r *q = *(void**)s; STORE_HANDOFF_OUT(f, q->id &amp; 0xf0, id);</before>"
		       "</advice></flows>",
		       "e", regs, -EINVAL, "t.xml:1:");
}

/* The shipped block flow, lowered with the layouts Debian 12's
 * 6.1.0-50-amd64 has in its BTF (vmlinux, xen-blkfront.ko and
 * xen-blkback.ko, as `xflowc plan` printed them; guestrt/hook/kernel/NOTES.md): the
 * front's object is qd->rq->bio and its key ring 0's free id, four loads
 * deep; the back's sender is bio->bi_private->ring->blkif->domid. */
Test(klower, the_shipped_block_flow_lowers_against_6_1)
{
	FILE *f = fopen("flows/kernel/xen_blk.xml", "r");
	cr_assert(f, "run from the source tree");
	static char xml[16384];
	size_t n = fread(xml, 1, sizeof(xml) - 1, f);
	fclose(f);
	xml[n] = 0;
	/* submit_bio(bio); blkif_queue_rq(hctx, qd): qd then hctx, as bound;
	 * end_block_io_op(bio) entry and return; bio_endio(bio); dom0's. */
	const uint8_t regs[][4] = { { RDI }, { RSI, RDI }, { RDI }, { RDI }, { RDI }, { RDI }, { RDI } };
	struct kp k;
	kp_build(&k, xml, "eeereee", regs, NULL);
	static const struct want_layout l61[] = {
		{ "blk_mq_queue_data", "rq", PTR8(0) },     { "request", "bio", PTR8(56) },
		{ "blk_mq_hw_ctx", "queue", PTR8(184) },    { "request_queue", "queuedata", PTR8(96) },
		{ "blkfront_info", "rinfo", PTR8(280) },    { "blkfront_ring_info", "shadow_free", { .offset = 208, .size = 8 } },
		{ "bio", "bi_private", PTR8(64) },          { "pending_req", "id", { .offset = 8, .size = 8 } },
		{ "pending_req", "ring", PTR8(0) },         { "xen_blkif_ring", "blkif", PTR8(360) },
		{ "xen_blkif", "domid", { .offset = 0, .size = 2 } },
	};
	struct xflow_plan_field fields[16];
	struct xflow_plan_layout lay[16];
	kp_layouts(&k, l61, sizeof(l61) / sizeof(l61[0]), fields, lay);
	struct xk_lowered l;
	char why[512] = "";
	cr_assert_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), 0, "%s", why);
	const struct xk_op *out = &l.slots[l.slot_of_site[1]].site.ops[0];
	const struct xk_op *in = &l.slots[l.slot_of_site[2]].site.ops[0];
	cr_expect_eq(out->kind, XK_OP_HAND_OUT);
	cr_expect_eq(out->move, 0, "xin_copy: the bio keeps its id");
	cr_expect_eq(out->from.arg, 1, "qd");
	cr_assert_eq(out->from.n, 2);
	cr_expect_eq(out->from.off[0], 0);
	cr_expect_eq(out->from.off[1], 56);
	cr_expect_eq(out->to.arg, 0, "hctx");
	cr_assert_eq(out->to.n, 3);
	cr_expect_eq(out->to.off[0], 184);
	cr_expect_eq(out->to.off[1], 96);
	cr_expect_eq(out->to.off[2], 280);
	cr_assert_eq(out->nparts, 1);
	cr_expect_eq(out->part[0].off, 208);
	cr_expect_eq(out->part[0].size, 8);
	cr_expect_eq(out->part[0].bits, 0, "the whole id");
	cr_expect_eq(in->kind, XK_OP_HAND_IN);
	cr_expect_eq(in->from.arg, 0);
	cr_expect_eq(in->from.n, 0, "the bio itself");
	cr_assert_eq(in->to.n, 1, "bio->bi_private");
	cr_expect_eq(in->to.off[0], 64);
	cr_assert_eq(in->nparts, 1);
	cr_expect_eq(in->part[0].off, 8, "pending_req.id: the xout's own key name");
	cr_assert_eq(in->peer.n, 4, "bio->bi_private->ring->blkif->domid");
	const uint16_t offs[4] = { 64, 0, 360, 0 };
	const uint8_t sizes[4] = { 8, 8, 8, 2 };
	for (int i = 0; i < 4; i++) {
		cr_expect_eq(in->peer.off[i], offs[i], "load %d", i);
		cr_expect_eq(in->peer.size[i], sizes[i], "load %d", i);
	}
	const struct xk_op *q = &l.slots[l.slot_of_site[3]].site.ops[0];
	cr_expect_eq(l.slots[l.slot_of_site[3]].kind, XK_SLOT_EXIT);
	cr_expect_eq(q->kind, XK_OP_END, "the handoff's id removed when end_block_io_op returns");
	xk_lowered_fini(&l);
	kp_free(&k);
}

/* The shipped network flow's cross-domain part, with 6.1.0-50's layouts
 * (xen-netfront.ko, xen-netback.ko): netfront's object and request are
 * members of xennet_tx_setup_grant's void *data, read at its return;
 * netback keys its copy of the request as itself at xenvif_idx_release
 * (queue %rdi, u16 pending_idx %rsi), an element of the array
 * queue->pending_tx_info (256 of 64 bytes at 3096, req at 0 in each), and
 * drops it when that returns. */
Test(klower, the_shipped_network_flow_lowers_against_6_1)
{
	FILE *f = fopen("flows/kernel/xen_net.xml", "r");
	cr_assert(f, "run from the source tree");
	static char xml[16384];
	size_t n = fread(xml, 1, sizeof(xml) - 1, f);
	fclose(f);
	xml[n] = 0;
	/* Advice in weave order: xnet start, pass, xin (data in rcx, at the
	 * return), xout (queue rdi, pending_idx rsi), quit at
	 * xenvif_idx_release's return (the same), quit at the skb
	 * tracepoints; xnet0's 10; xnetrx's 4. */
	uint8_t regs[19][4];
	for (int i = 0; i < 19; i++)
		regs[i][0] = RDI;
	regs[2][0] = RCX;
	regs[3][1] = RSI;
	regs[4][1] = RSI;
	struct kp k;
	kp_build(&k, xml, "eerert" "e" "eeeeeee" "t" "eee" "t", (const uint8_t(*)[4])regs, NULL);
	/* pending_idx is a u16: its fetch says so, as the planner's does. */
	k.fetch[k.bind[3].first_fetch + 1].size = 2;
	k.fetch[k.bind[4].first_fetch + 1].size = 2;
	static const struct want_layout l61[] = {
		{ "xennet_gnttab_make_txreq", "skb", PTR8(8) },  { "xennet_gnttab_make_txreq", "tx", PTR8(24) },
		{ "xen_netif_tx_request", "gref", { .offset = 0, .size = 4 } },
		{ "xen_netif_tx_request", "id", { .offset = 8, .size = 2 } },
		{ "xenvif_queue", "vif", PTR8(32) },             { "xenvif", "domid", { .offset = 0, .size = 2 } },
		{ "xenvif_queue", "pending_tx_info[].req", { .offset = 3096, .size = 12, .nelems = 256, .stride = 64 } },
	};
	struct xflow_plan_field fields[16];
	struct xflow_plan_layout lay[16];
	kp_layouts(&k, l61, sizeof(l61) / sizeof(l61[0]), fields, lay);
	struct xk_lowered l;
	char why[512] = "";
	cr_assert_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), 0, "%s", why);
	const struct xk_slot_info *so = &l.slots[l.slot_of_site[2]], *si = &l.slots[l.slot_of_site[3]];
	cr_expect_eq(so->kind, XK_SLOT_EXIT, "xennet_tx_setup_grant's return");
	const struct xk_op *out = &so->site.ops[0], *in = &si->site.ops[0];
	cr_expect_eq(out->kind, XK_OP_HAND_OUT);
	cr_expect_eq(out->move, 0);
	cr_expect_eq(out->from.arg, 3, "data, the 4th argument");
	cr_assert_eq(out->from.n, 1);
	cr_expect_eq(out->from.off[0], 8, "info->skb");
	cr_expect_eq(out->from.iarg, XK_ARG_NONE, "no array on netfront's side");
	cr_assert_eq(out->to.n, 1);
	cr_expect_eq(out->to.off[0], 24, "info->tx");
	cr_expect_eq(out->to.iarg, XK_ARG_NONE);
	cr_assert_eq(out->nparts, 2);
	cr_expect(out->part[0].off == 0 && out->part[0].size == 4 && out->part[0].bits == 32 && out->part[0].shift == 16,
		  "gref over id");
	cr_expect(out->part[1].off == 8 && out->part[1].size == 2 && out->part[1].bits == 16 && out->part[1].shift == 0);
	cr_expect_eq(si->kind, XK_SLOT_ENTRY, "xenvif_idx_release's entry");
	cr_expect_eq(in->kind, XK_OP_HAND_IN);
	/* The request keys itself: queue + 3096 + pending_idx * 64, no load,
	 * pending_idx's low 16 bits below 256. */
	const struct xk_path *paths[2] = { &in->from, &in->to };
	for (int i = 0; i < 2; i++) {
		const struct xk_path *p = paths[i];
		cr_expect_eq(p->arg, 0, "queue");
		cr_expect_eq(p->n, 0, "no load: the element is embedded");
		cr_expect_eq(p->iarg, 1, "pending_idx, the 2nd argument");
		cr_expect_eq(p->isize, 2, "a u16");
		cr_expect_eq(p->imask, 0xffff, "its low 16 bits of the register");
		cr_expect_eq(p->tadd, 3096, "pending_tx_info[0].req, after no load");
		cr_expect_eq(p->tstride, 64, "sizeof(struct pending_tx_info)");
		cr_expect_eq(p->nelems, 256, "MAX_PENDING_REQS");
		for (int j = 0; j < XK_MAX_DEREF; j++)
			cr_expect(p->add[j] == 0 && p->stride[j] == 0, "step %d", j);
	}
	cr_assert_eq(in->nparts, 2);
	cr_expect(in->part[0].off == 0 && in->part[0].size == 4 && in->part[0].shift == 16, "req.gref");
	cr_expect(in->part[1].off == 8 && in->part[1].size == 2 && in->part[1].shift == 0, "req.id");
	cr_expect_eq(in->peer.arg, 0, "queue");
	cr_expect(in->peer.iarg == XK_ARG_NONE && in->peer.nelems == 1 && in->peer.tstride == 0 &&
		  in->peer.imask == 0, "the sender is not indexed: index 0, below 1");
	cr_assert_eq(in->peer.n, 2, "queue->vif->domid");
	cr_expect(in->peer.off[0] == 32 && in->peer.size[0] == 8 && in->peer.off[1] == 0 && in->peer.size[1] == 2);
	const struct xk_slot_info *sq = &l.slots[l.slot_of_site[4]];
	cr_expect_eq(sq->kind, XK_SLOT_EXIT);
	cr_expect_eq(sq->site.ops[0].kind, XK_OP_END);
	const struct xk_path *q = &sq->site.ops[0].from;
	cr_expect(q->arg == 0 && q->n == 0 && q->iarg == 1 && q->isize == 2 && q->tadd == 3096 && q->tstride == 64 &&
		  q->nelems == 256, "the request's id removed at the return");
	xk_lowered_fini(&l);
	kp_free(&k);
}

/* An indexed request with a load before the array: the request
 * q->ring->pend[i].req, the sender q->ring->pend[i].req->vif->domid (two
 * loads after the element), at a function (q %rdi, i %rsi); and, refused,
 * where the index is not an integer argument, where the kernel has no
 * such array, and at a tracepoint past arg0. */
static const char *const indexed2 =
	"<flows><xflow name='f'>"
	"<transit><pointcut>call(a)</pointcut><cast var='d' struct='req'/>"
	"<xin_copy name='k' from='skb' to='d'><key member='gref' bits='32'/></xin_copy></transit>"
	"<transit><pointcut>call(b)</pointcut><cast var='q' struct='vq'/><cast var='q->ring' struct='ring'/>"
	"<cast var='q->ring->pend[i].req' struct='req'/><cast var='q->ring->pend[i].req->vif' struct='vif'/>"
	"<xout_copy name='k' from='q->ring->pend[i].req' to='q->ring->pend[i].req'>"
	"<sender domid='q->ring->pend[i].req->vif->domid'/></xout_copy></transit>"
	"</xflow></flows>";

static const struct want_layout indexed2_layouts[] = {
	{ "req", "gref", { .offset = 0, .size = 4 } },       { "vq", "ring", PTR8(40) },
	{ "ring", "pend[].req", { .offset = 100, .size = 24, .nelems = 8, .stride = 48 } },
	{ "req", "vif", PTR8(16) },                           { "vif", "domid", { .offset = 2, .size = 2 } },
};

static void indexed2_plan(struct kp *k, const char *kinds, const uint8_t regs[][4], uint8_t isize,
			  struct xflow_plan_field *fields, struct xflow_plan_layout *lay, size_t nlay)
{
	kp_build(k, indexed2, kinds, regs, NULL);
	k->fetch[k->bind[1].first_fetch + 1].size = isize;
	kp_layouts(k, indexed2_layouts, nlay, fields, lay);
}

Test(klower, an_element_step_between_loads)
{
	const uint8_t regs[][4] = { { RDI, RSI }, { RDI, RSI } };
	struct kp k;
	struct xflow_plan_field fields[16];
	struct xflow_plan_layout lay[16];
	indexed2_plan(&k, "ee", regs, 4, fields, lay, 5);
	struct xk_lowered l;
	char why[512] = "";
	cr_assert_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), 0, "%s", why);
	const struct xk_op *in = &l.slots[l.slot_of_site[1]].site.ops[0];
	cr_expect_eq(in->kind, XK_OP_HAND_IN);
	/* The request: q->ring (a load), then + 100 + i * 48, no load. */
	cr_assert_eq(in->to.n, 1);
	cr_expect_eq(in->to.off[0], 40);
	cr_expect(in->to.iarg == 1 && in->to.isize == 4 && in->to.imask == 0xffffffffu && in->to.nelems == 8,
		  "i, a u32 below 8");
	cr_expect(in->to.tadd == 100 && in->to.tstride == 48, "after the load");
	cr_expect(in->to.add[0] == 0 && in->to.stride[0] == 0);
	/* The sender: q->ring, the element, then ->vif, ->domid: the element
	 * step before load 1. */
	cr_assert_eq(in->peer.n, 3);
	cr_expect(in->peer.off[0] == 40 && in->peer.off[1] == 16 && in->peer.off[2] == 2);
	cr_expect(in->peer.add[1] == 100 && in->peer.stride[1] == 48, "before ->vif");
	cr_expect(in->peer.add[0] == 0 && in->peer.stride[0] == 0 && in->peer.tadd == 0 && in->peer.tstride == 0);
	cr_expect(in->peer.iarg == 1 && in->peer.nelems == 8);
	xk_lowered_fini(&l);
	kp_free(&k);
}

Test(klower, element_steps_refused)
{
	const uint8_t regs[][4] = { { RDI, RSI }, { RDI, RSI } };
	struct kp k;
	struct xflow_plan_field fields[16];
	struct xflow_plan_layout lay[16];
	struct xk_lowered l;
	char why[512] = "";
	/* A fetch of no integer width: not an integer argument. */
	indexed2_plan(&k, "ee", regs, 3, fields, lay, 5);
	cr_expect_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "an array's index is not an integer argument") != NULL, "%s", why);
	cr_expect(strncmp(why, "t.xml:1:", 8) == 0, "%s", why);
	kp_free(&k);
	/* The index is the return value. */
	const uint8_t ret[][4] = { { RDI, RSI }, { RDI, RAX } };
	indexed2_plan(&k, "er", ret, 8, fields, lay, 5);
	cr_expect_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "an array's index is not an integer argument") != NULL, "%s", why);
	kp_free(&k);
	/* No such array in this kernel (the planner said so already). */
	indexed2_plan(&k, "ee", regs, 2, fields, lay, 2);
	cr_expect_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "ring.pend[].req is not an element of an array embedded in its struct") != NULL, "%s",
		  why);
	kp_free(&k);
	/* A tracepoint reads only arg0: an index in arg1 cannot be read. */
	indexed2_plan(&k, "et", regs, 8, fields, lay, 5);
	k.fetch[k.bind[1].first_fetch].reg = RDI;
	cr_expect_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "only the first argument can be read") != NULL, "%s", why);
	kp_free(&k);
}

/* Issue 30 item 7, hostile kernel plans: what the plan reader lets
 * through as strings and indices, the lowering refuses as names and
 * bindings a kernel cannot have, naming the site and the name (quoted:
 * a control byte is shown as \xHH), before anything reaches libbpf. */
static const char *const one_start =
	"<flows><xflow name='f'><start><pointcut>call(a)</pointcut><select local_var='p'/></start></xflow></flows>";
static const char *const all_ops_tp =
	"<flows><xflow name='f'><start><pointcut>tracepoint(net:d)</pointcut><select local_var='arg0'/></start>"
	"</xflow></flows>";

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void expect_name_refused(const char *kinds, const char *name, const char *want)
{
	struct kp k;
	const uint8_t regs[][4] = { { RDI } };
	kp_build(&k, kinds[0] == 't' ? all_ops_tp : one_start, kinds, regs, NULL);
	k.sites[0].func = name;
	struct xk_lowered l;
	char why[512] = "";
	cr_expect_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), -EINVAL, "name %s: %s", name, why);
	cr_expect(strstr(why, want) != NULL, "want \"%s\" in \"%s\"", want, why);
	cr_expect_null(l.slot_of_site, "nothing kept after a refusal");
	kp_free(&k);
}

Test(klower, hostile_site_names_are_refused)
{
	char long_name[600];
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = 0;
	expect_name_refused("e", "", "site 0 has no function or tracepoint name");
	char why0[64];
	cr_expect(!xk_site_name_ok("", false, why0, sizeof(why0)) && !strcmp(why0, "an empty name"), "%s", why0);
	expect_name_refused("e", "9lives", "site 0 (entry): the function name \"9lives\" begins with '9'");
	expect_name_refused("e", "a b", "has a byte 0x20, which no kernel function's has");
	expect_name_refused("e", "skb\n../../x", "the function name \"skb\\x0a../../x\" has a byte 0x0a");
	expect_name_refused("e", long_name, "is longer than the kernel's 511 bytes");
	expect_name_refused("t", "nocolon", "site 0 (tracepoint): the tracepoint \"nocolon\" is not CATEGORY:NAME");
	expect_name_refused("t", ":x", "is not CATEGORY:NAME");
	expect_name_refused("t", "net:", "is not CATEGORY:NAME");
	expect_name_refused("t", "net:a:b", "has a byte 0x3a in its name");
	expect_name_refused("t", "n/t:x", "has a byte 0x2f in its category");
	/* What real kernels name: a clone's suffix, a category with a dash. */
	char why[200];
	cr_expect(xk_site_name_ok("tcp_v4_rcv.cold", false, why, sizeof(why)), "%s", why);
	cr_expect(xk_site_name_ok("intel-iommu:map_single", true, why, sizeof(why)), "%s", why);
	cr_expect(!xk_site_name_ok("x y", false, NULL, 0), "no room for why is allowed");
}

Test(klower, bindings_naming_what_the_plan_has_not_are_refused)
{
	struct kp k;
	const uint8_t regs[][4] = { { RDI } };
	struct xk_lowered l;
	char why[512] = "";
	kp_build(&k, one_start, "e", regs, NULL);
	k.bind[0].site = 7;
	cr_expect_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "binding 0 names site 7 (of 1)"), "%s", why);
	k.bind[0].site = 0;
	k.bind[0].advice = 3;
	cr_expect_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "advice 3 (of 1)"), "%s", why);
	k.bind[0].advice = 0;
	k.bind[0].first_fetch = UINT32_MAX;
	cr_expect_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "not this plan's"), "%s", why);
	kp_free(&k);
}

/* A million sites and thousands of bindings cost their sum: the lowering
 * walked every binding for every site (10^9 steps here, seconds; a plan
 * of the control protocol's 64 MiB could hold a thousand times more). */
Test(klower, huge_counts_cost_their_sum, .timeout = 60)
{
	struct kp k;
	const uint8_t regs[][4] = { { RDI } };
	kp_build(&k, one_start, "e", regs, NULL);
	const uint32_t nsites = 1u << 20, nbind = 1024;
	struct xflow_plan_site *sites = calloc(nsites, sizeof(*sites));
	struct xflow_plan_binding *bind = calloc(nbind, sizeof(*bind));
	cr_assert(sites && bind);
	for (uint32_t s = 0; s < nsites; s++) {
		sites[s] = k.sites[0];
		sites[s].addr = 100 + s;
	}
	/* Every binding at the last site: past XK_MAX_OPS, refused there. */
	for (uint32_t b = 0; b < nbind; b++) {
		bind[b] = k.bind[0];
		bind[b].site = nsites - 1;
	}
	k.dom.sites = sites;
	k.dom.nsites = nsites;
	k.dom.bindings = bind;
	k.dom.nbindings = nbind;
	struct xk_lowered l;
	char why[512] = "";
	uint64_t t0 = now_ns();
	cr_expect_eq(xk_lower(&k.plan, &k.dom, &l, why, sizeof(why)), -E2BIG, "%s", why);
	uint64_t took = now_ns() - t0;
	cr_expect(strstr(why, "more than 4 flow operations at fn0"), "%s", why);
	cr_expect_lt(took, 500000000u, "%u sites and %u bindings took %.3f s", nsites, nbind, (double)took / 1e9);
	free(sites);
	free(bind);
	kp_free(&k);
}

uint32_t xflow_plan_fnv32(const unsigned char *p, size_t n);

/* The checksum of @b made right again after a change. */
static void plan_refix(unsigned char *b, size_t n)
{
	uint32_t sum = xflow_plan_fnv32(b + XFLOW_PLAN_HEADER_SIZE, n - XFLOW_PLAN_HEADER_SIZE);
	memcpy(b + 48, &sum, 4);
}

static void expect_read_refused(const unsigned char *b, size_t n, const char *want)
{
	struct xflow_plan *q = NULL;
	char why[512] = "";
	cr_expect_eq(xflow_plan_read(b, n, &q, why, sizeof(why)), -EINVAL, "want \"%s\": accepted", want);
	cr_expect(strstr(why, want) != NULL, "want \"%s\" in \"%s\"", want, why);
	cr_expect_null(q, "a refused plan is not half loaded");
}

/*
 * A kernel plan file as an agent's --plan or a PLAN_LOAD carries it: one
 * domain, the binary "kernel:", a tracepoint site.  Truncated anywhere,
 * with a huge count, a string offset out of its table, a string table not
 * ending in NUL, or another version: refused by the reader, each naming
 * the byte and what is wrong there, and nothing returned.  Read whole, a
 * hostile name in it is the lowering's to refuse.
 */
Test(klower, hostile_kernel_plan_files)
{
	struct xflow_plan_binary bin = { .path = "kernel:" };
	struct xflow_plan_site site = { .addr = 1, .kind = XFLOW_SITE_TRACEPOINT, .len = 1, .func = "net:netif_rx",
					.field = -1 };
	struct xflow_plan_domain dom = { .name = "linuxK", .binaries = &bin, .nbinaries = 1, .sites = &site,
					 .nsites = 1 };
	struct xflow_plan plan = { .domains = &dom, .ndomains = 1 };
	unsigned char *b;
	size_t n;
	char why[512] = "";
	cr_assert_eq(xflow_plan_write(&plan, (void **)&b, &n, why, sizeof(why)), 0, "%s", why);
	struct xflow_plan *q;
	cr_assert_eq(xflow_plan_read(b, n, &q, why, sizeof(why)), 0, "%s", why);
	cr_assert_str_eq(q->domains[0].sites[0].func, "net:netif_rx");
	xflow_plan_free(q);
	unsigned char *c = malloc(n);
	/* Truncated: every prefix, the header's size or the records'. */
	for (size_t k = 0; k < n; k++) {
		q = NULL;
		cr_assert_eq(xflow_plan_read(b, k, &q, why, sizeof(why)), -EINVAL, "prefix %zu of %zu accepted", k, n);
		cr_assert(why[0] && !q);
	}
	expect_read_refused(b, n - 1, "the file has");
	/* The layout: header 64, then (no flows, fields or advice) the
	 * domain's name and four counts, its binary of 28 bytes, its site. */
	const size_t nsites_at = 64 + 8, site_at = 64 + 20 + 28, func_at = site_at + 23;
	memcpy(c, b, n);
	uint32_t huge = UINT32_MAX;
	memcpy(c + nsites_at, &huge, 4);
	plan_refix(c, n);
	expect_read_refused(c, n, "plan: count 4294967295 at byte 112 is more than the file holds");
	memcpy(c, b, n);
	uint32_t far = 1u << 30;
	memcpy(c + func_at, &far, 4);
	plan_refix(c, n);
	char want[128];
	snprintf(want, sizeof(want), "plan: string offset %u at byte %zu outside the string table", far, func_at);
	expect_read_refused(c, n, want);
	/* A name without its NUL: the table's last byte is the name's. */
	memcpy(c, b, n);
	c[n - 1] = 'x';
	plan_refix(c, n);
	expect_read_refused(c, n, "plan: bad string table");
	memcpy(c, b, n);
	uint32_t v = 99;
	memcpy(c + 8, &v, 4);
	snprintf(want, sizeof(want), "plan: version 99, this reader knows %d to %d", XFLOW_PLAN_VERSION_MIN,
		 XFLOW_PLAN_VERSION);
	expect_read_refused(c, n, want);
	memcpy(c, b, n);
	c[0] = 'Y';
	expect_read_refused(c, n, "plan: not a weave plan");
	/* Whole, with a name no kernel has: read, then refused by the
	 * lowering, naming the site. */
	site.func = "net:netif_rx\n";
	free(b);
	cr_assert_eq(xflow_plan_write(&plan, (void **)&b, &n, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(xflow_plan_read(b, n, &q, why, sizeof(why)), 0, "%s", why);
	struct xk_lowered l;
	cr_expect_eq(xk_lower(q, &q->domains[0], &l, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "site 0 (tracepoint): the tracepoint \"net:netif_rx\\x0a\" has a byte 0x0a in its name"),
		  "%s", why);
	xflow_plan_free(q);
	free(c);
	free(b);
}
