/*
 * The interpreter running flows/netflow.xml as compiled by the weaver,
 * against simulated guest and dom0 memory: the id is created, moved to the
 * clone, written into bits 4..15 of netif_tx_request.flags, read back in
 * dom0 and ended at the free — with the records and markers that the
 * aggregation needs.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
/* Xen's public headers expect the integer types to be declared already. */
#include <xen/io/netif.h>

#include "guestrt/interp/interp.h"
#include "xflow/flowlang.h"

/* Simulated memory of one domain: MEM_SIZE bytes at MEM_BASE. */
#define MEM_BASE 0x100000u
#define MEM_SIZE 4096u

struct dom {
	unsigned char mem[MEM_SIZE];
	struct xflow_flowtab flows;
	struct xflow_record recs[64];
	unsigned nrecs;
	uint64_t now;
};

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct dom *d = ctx;
	if (addr < MEM_BASE || addr - MEM_BASE > MEM_SIZE - len)
		return -EFAULT;
	memcpy(buf, d->mem + (addr - MEM_BASE), len);
	return 0;
}

static int mem_write(void *ctx, uint64_t addr, const void *buf, size_t len)
{
	struct dom *d = ctx;
	if (addr < MEM_BASE || addr - MEM_BASE > MEM_SIZE - len)
		return -EFAULT;
	memcpy(d->mem + (addr - MEM_BASE), buf, len);
	return 0;
}

static const struct xflow_mem_ops mem_ops = { .read = mem_read, .write = mem_write };

static uint64_t clock_fn(void *ctx)
{
	return ++((struct dom *)ctx)->now;
}

static int sink(void *ctx, struct xflow_record *r)
{
	struct dom *d = ctx;
	if (d->nrecs == 64)
		return -ENOBUFS;
	d->recs[d->nrecs++] = *r;
	return 0;
}

/* Addresses in the simulated memory. */
#define SKB      (MEM_BASE + 0x100)  /* the guest's sk_buff */
#define CLONE    (MEM_BASE + 0x200)  /* its clone */
#define TX       (MEM_BASE + 0x300)  /* the netif_tx_request on the ring */
#define VAR_A    (MEM_BASE + 0x400)  /* a local variable holding a pointer */
#define VAR_B    (MEM_BASE + 0x408)
#define SKB0     (MEM_BASE + 0x500)  /* dom0's sk_buff */

static void put_ptr(struct dom *d, uint64_t at, uint64_t v)
{
	memcpy(d->mem + (at - MEM_BASE), &v, 8);
}

static struct xflow_field_rt fields[16];

/* Resolve the unit's field table as the join-point resolver will from
 * DWARF: here from the real Xen header and a made-up sk_buff. */
static void resolve_fields(const struct xflow_unit *u)
{
	size_t n = xflow_unit_field_count(u);
	cr_assert_leq(n, 16);
	for (size_t i = 0; i < n; i++) {
		const char *s, *m;
		unsigned bits;
		cr_assert_eq(xflow_unit_field(u, i, &s, &m, &bits), 0);
		if (!strcmp(s, "netif_tx_request") && !strcmp(m, "flags"))
			fields[i] = (struct xflow_field_rt){ .offset = offsetof(struct netif_tx_request, flags),
							     .size = 2 };
		else
			fields[i] = (struct xflow_field_rt){ .offset = 8, .size = 8 };
	}
}

/* Run advice @i of @u at a join point with the given inputs. */
static struct xflow_interp_result run(const struct xflow_unit *u, size_t i, struct dom *d,
				      const char *const *names, const uint64_t *vals, unsigned nvals)
{
	struct xflow_advice_info ai;
	cr_assert_eq(xflow_unit_advice(u, i, &ai), 0);
	uint64_t inputs[XFLOW_BC_MAX_INPUTS] = { 0 };
	for (uint32_t k = 0; k < ai.prog->ninputs; k++) {
		const struct xflow_bc_input *in = &ai.prog->inputs[k];
		const char *want = in->kind == XFLOW_IN_TARGET ? "target" : in->local;
		int found = 0;
		for (unsigned j = 0; j < nvals; j++)
			if (!strcmp(names[j], want)) {
				inputs[k] = vals[j];
				found = 1;
			}
		cr_assert(found, "advice %zu needs input %s", i, want);
	}
	struct xflow_record tmpl;
	memset(&tmpl, 0, sizeof(tmpl));
	tmpl.site_id = (uint32_t)i;
	struct xflow_interp_env env = {
		.prog = ai.prog, .inputs = inputs, .fields = fields, .flows = &d->flows,
		.mem = &mem_ops, .mem_ctx = d, .pc = 0x401000 + i, .clock = clock_fn, .clock_ctx = d,
		.sink = sink, .sink_ctx = d, .tmpl = &tmpl,
		.marker_flags = ai.origin == XFLOW_ADVICE_USER ? 0 : ai.rec_flags,
	};
	struct xflow_interp_result res;
	xflow_interp_run(&env, &res);
	return res;
}

/* Index of the advice whose origin and (for transits) record flags match. */
static size_t find_advice(const struct xflow_unit *u, enum xflow_advice_origin o, unsigned flags)
{
	for (size_t i = 0; i < xflow_unit_advice_count(u); i++) {
		struct xflow_advice_info ai;
		xflow_unit_advice(u, i, &ai);
		if (ai.origin == o && (!flags || (ai.rec_flags & flags) == flags))
			return i;
	}
	cr_assert_fail("no advice of origin %d", o);
	return 0;
}

static struct xflow_unit *netflow(void)
{
	struct xflow_unit *u;
	cr_assert_eq(xflow_unit_new(&u, NULL), 0);
	cr_assert_eq(xflow_unit_add_file(u, "flows/netflow.xml"), 0);
	cr_assert_eq(xflow_unit_compile(u), 0);
	for (size_t i = 0; i < xflow_unit_advice_count(u); i++) {
		struct xflow_advice_info ai;
		xflow_unit_advice(u, i, &ai);
		const char *why;
		uint32_t at;
		cr_assert_eq(xflow_bc_verify((struct xflow_bc_prog *)ai.prog, &why, &at), 0, "%s", why);
	}
	resolve_fields(u);
	return u;
}

Test(interp, netflow_carries_the_id_through_the_ring_header)
{
	struct xflow_unit *u = netflow();
	static struct dom guest, dom0;
	memset(&guest, 0, sizeof(guest));
	memset(&dom0, 0, sizeof(dom0));
	cr_assert_eq(xflow_flowtab_init(&guest.flows, 64), 0);
	cr_assert_eq(xflow_flowtab_init(&dom0.flows, 64), 0);
	/* Burn some ids so the carried one is not trivially 1. */
	guest.flows.last_id = 0x1233;

	size_t start = find_advice(u, XFLOW_ADVICE_START, 0);
	size_t clone = find_advice(u, XFLOW_ADVICE_TRANSIT, XFLOW_REC_TRANSIT);
	size_t xin = find_advice(u, XFLOW_ADVICE_TRANSIT, XFLOW_REC_CROSS_DOMAIN);
	size_t quit = find_advice(u, XFLOW_ADVICE_QUIT, 0);
	size_t fig2 = find_advice(u, XFLOW_ADVICE_USER, 0);
	size_t xout = xin + 1; /* netback's, after netfront's in weave order */

	/* alloc_skb_from_cache in the guest. */
	static const char *const t[] = { "target" };
	uint64_t v = SKB;
	struct xflow_interp_result r = run(u, start, &guest, t, &v, 1);
	cr_assert_eq(r.rc, 0);
	uint64_t id = xflow_flowtab_get(&guest.flows, 0, SKB);
	cr_assert_eq(id, 0x1235);
	cr_assert_eq(guest.recs[0].flags, XFLOW_REC_START, "the start marker");
	cr_assert_eq(guest.recs[0].flow_id, id);
	cr_assert_eq(guest.recs[0].ndata, 0);

	/* Figure 2 at an sk_buff access: one record with $pc$, tsc, id. */
	r = run(u, fig2, &guest, t, &v, 1);
	cr_assert_eq(r.records, 1);
	cr_assert_eq(guest.recs[1].ndata, 3);
	cr_assert_eq(guest.recs[1].data[0], 0x401000 + fig2);
	cr_assert_eq(guest.recs[1].data[2], id);
	cr_assert_eq(guest.recs[1].flow_id, id);
	cr_assert_eq(guest.recs[1].flow_kind, 0);

	/* skb_clone: the id moves from skb to n. */
	put_ptr(&guest, VAR_A, SKB);
	put_ptr(&guest, VAR_B, CLONE);
	static const char *const sn[] = { "skb", "n" };
	uint64_t sv[] = { VAR_A, VAR_B };
	r = run(u, clone, &guest, sn, sv, 2);
	cr_assert_eq(r.rc, 0);
	cr_assert_eq(xflow_flowtab_get(&guest.flows, 0, SKB), 0);
	cr_assert_eq(xflow_flowtab_get(&guest.flows, 0, CLONE), id);

	/* netfront: into bits 4..15 of tx->flags, keeping Linux's bits. */
	uint16_t flags = NETTXF_csum_blank | NETTXF_more_data;
	memcpy(guest.mem + (TX - MEM_BASE) + offsetof(struct netif_tx_request, flags), &flags, 2);
	put_ptr(&guest, VAR_A, CLONE);
	put_ptr(&guest, VAR_B, TX);
	static const char *const st[] = { "skb", "tx" };
	r = run(u, xin, &guest, st, sv, 2);
	cr_assert_eq(r.rc, 0);
	memcpy(&flags, guest.mem + (TX - MEM_BASE) + offsetof(struct netif_tx_request, flags), 2);
	cr_assert_eq(flags, (uint16_t)(NETTXF_csum_blank | NETTXF_more_data | (0x235 << 4)),
		     "flags %#x", flags);
	cr_assert_eq(xflow_flowtab_get(&guest.flows, 0, CLONE), 0, "xin_move forgets the id");
	struct xflow_record *m = &guest.recs[guest.nrecs - 1];
	cr_assert_eq(m->flags, XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_TRUNCATED_ID);
	cr_assert_eq(m->flow_id, id);

	/* The ring page is shared: dom0 sees the same request. */
	memcpy(dom0.mem + (TX - MEM_BASE), guest.mem + (TX - MEM_BASE), sizeof(struct netif_tx_request));
	put_ptr(&dom0, VAR_A, TX);
	put_ptr(&dom0, VAR_B, SKB0);
	static const char *const bk[] = { "txp", "skb" };
	r = run(u, xout, &dom0, bk, sv, 2);
	cr_assert_eq(r.rc, 0);
	cr_assert_eq(xflow_flowtab_get(&dom0.flows, 0, SKB0), 0x235, "the 12 carried bits");
	memcpy(&flags, dom0.mem + (TX - MEM_BASE) + offsetof(struct netif_tx_request, flags), 2);
	cr_assert_eq(flags, NETTXF_csum_blank | NETTXF_more_data, "netback sees Linux's bits only");

	/* __kfree_skb in dom0 ends the flow. */
	v = SKB0;
	r = run(u, quit, &dom0, t, &v, 1);
	cr_assert_eq(r.rc, 0);
	cr_assert_eq(xflow_flowtab_get(&dom0.flows, 0, SKB0), 0);
	m = &dom0.recs[dom0.nrecs - 1];
	cr_assert_eq(m->flags, XFLOW_REC_QUIT);
	cr_assert_eq(m->flow_id, 0x235);

	/* Every record decodes: the interpreter writes only valid ones. */
	for (unsigned k = 0; k < guest.nrecs; k++) {
		struct xflow_record out;
		cr_assert_eq(xflow_record_decode(&guest.recs[k], sizeof(out), &out, NULL), 0);
	}
	xflow_flowtab_fini(&guest.flows);
	xflow_flowtab_fini(&dom0.flows);
	xflow_unit_free(u);
}

Test(interp, a_faulting_read_stops_the_advice_and_harms_nothing)
{
	struct xflow_unit *u = netflow();
	static struct dom guest;
	memset(&guest, 0, sizeof(guest));
	xflow_flowtab_init(&guest.flows, 8);
	size_t clone = find_advice(u, XFLOW_ADVICE_TRANSIT, XFLOW_REC_TRANSIT);
	static const char *const sn[] = { "skb", "n" };
	uint64_t sv[] = { 0xdead0000, VAR_B }; /* the variable's address is unmapped */
	struct xflow_interp_result r = run(u, clone, &guest, sn, sv, 2);
	cr_assert_eq(r.rc, -EFAULT);
	cr_assert_eq(r.records, 0);
	cr_assert_eq(guest.flows.live, 0);
	xflow_flowtab_fini(&guest.flows);
	xflow_unit_free(u);
}

Test(interp, arithmetic_never_traps)
{
	/* x / 0, INT64_MIN / -1 and x % 0 in advice: defined results. */
	static const char *xml =
		"<advice><pointcut>call(f)</pointcut><before>"
		"long a = 7; long z = 0; long m = -9223372036854775807 - 1; long q = -1;"
		"STORE_DATA4(a / z, m / q, a % z, m % q);"
		"</before></advice>";
	struct xflow_unit *u;
	struct xflow_unit_opts o = { .no_include = true };
	cr_assert_eq(xflow_unit_new(&u, &o), 0);
	xflow_unit_add_buffer(u, "t.xml", xml, strlen(xml));
	cr_assert_eq(xflow_unit_compile(u), 0);
	static struct dom d;
	memset(&d, 0, sizeof(d));
	xflow_flowtab_init(&d.flows, 8);
	struct xflow_interp_result r = run(u, 0, &d, NULL, NULL, 0);
	cr_assert_eq(r.rc, 0);
	cr_assert_eq(d.recs[0].data[0], 0);
	cr_assert_eq(d.recs[0].data[1], (uint64_t)INT64_MIN);
	cr_assert_eq(d.recs[0].data[2], 7);
	cr_assert_eq(d.recs[0].data[3], 0);
	cr_assert_eq(d.recs[0].flow_id, 0, "no flow looked up");
	xflow_flowtab_fini(&d.flows);
	xflow_unit_free(u);
}

/* A flow with a split and a keyed handoff, compiled and verified: advice
 * 0 start, 1 split, 2 keyed xin, 3 keyed xout, 4 quit. */
/* The flow file @xml, named @name in messages, compiled: it must be. */
static struct xflow_unit *compile_ok(const char *name, const char *xml)
{
	struct xflow_unit *u;
	cr_assert_eq(xflow_unit_new(&u, NULL), 0);
	cr_assert_eq(xflow_unit_add_buffer(u, name, xml, strlen(xml)), 0);
	cr_assert_eq(xflow_unit_compile(u), 0, "%s does not compile", name);
	return u;
}

static struct xflow_unit *split_keyed_flow(void)
{
	static const char xml[] =
		"<flows><xflow name='f'>"
		"<start><pointcut>access(sk_buff.data)</pointcut></start>"
		"<transit><pointcut>access(sk_buff.head)</pointcut><split from='skb' to='n'/></transit>"
		"<transit><pointcut>access(netif_tx_request.id) AND within_function(a)</pointcut>"
		"<xin_move name='kin' from='skb' to='tx'><key member='id'/></xin_move></transit>"
		"<transit><pointcut>access(netif_tx_request.id) AND within_function(b)</pointcut>"
		"<xout_move name='kin' from='txp' to='skb'/></transit>"
		"<quit><pointcut>access(sk_buff.len)</pointcut></quit>"
		"</xflow></flows>";
	struct xflow_unit *u = compile_ok("sk.xml", xml);
	static const enum xflow_advice_origin want[] = { XFLOW_ADVICE_START, XFLOW_ADVICE_TRANSIT,
							 XFLOW_ADVICE_TRANSIT, XFLOW_ADVICE_TRANSIT,
							 XFLOW_ADVICE_QUIT };
	cr_assert_eq(xflow_unit_advice_count(u), 5);
	for (size_t i = 0; i < 5; i++) {
		struct xflow_advice_info ai;
		xflow_unit_advice(u, i, &ai);
		cr_assert_eq(ai.origin, want[i], "advice %zu", i);
		const char *why;
		uint32_t at;
		cr_assert_eq(xflow_bc_verify((struct xflow_bc_prog *)ai.prog, &why, &at), 0, "%s", why);
	}
	resolve_fields(u);
	return u;
}

/* Issue 19 item 2: a start on an object that has a live id keeps the id
 * and writes nothing (the start pointcut matched another instruction of
 * the same path); once the flow quit, the next start makes a new one. */
Test(interp, a_start_on_a_live_object_keeps_its_id)
{
	struct xflow_unit *u = split_keyed_flow();
	static struct dom d;
	memset(&d, 0, sizeof(d));
	cr_assert_eq(xflow_flowtab_init(&d.flows, 64), 0);
	static const char *const t[] = { "target" };
	uint64_t v = SKB;
	struct xflow_interp_result r = run(u, 0, &d, t, &v, 1);
	cr_assert_eq(r.records, 1);
	cr_assert_eq(d.recs[0].flags, XFLOW_REC_START);
	uint64_t id = d.recs[0].flow_id;
	cr_assert_eq(xflow_flowtab_get(&d.flows, 0, SKB), id);
	for (int again = 0; again < 3; again++) {
		r = run(u, 0, &d, t, &v, 1);
		cr_assert_eq(r.rc, 0);
		cr_expect_eq(r.records, 0, "a second START for a live object");
		cr_expect_eq(xflow_flowtab_get(&d.flows, 0, SKB), id, "the live id was replaced");
	}
	r = run(u, 4, &d, t, &v, 1);
	cr_assert_eq(r.records, 1);
	cr_expect_eq(d.recs[d.nrecs - 1].flags, XFLOW_REC_QUIT);
	cr_expect_eq(d.recs[d.nrecs - 1].flow_id, id);
	r = run(u, 0, &d, t, &v, 1);
	cr_assert_eq(r.records, 1);
	cr_expect_eq(d.recs[d.nrecs - 1].flags, XFLOW_REC_START);
	cr_expect_neq(d.recs[d.nrecs - 1].flow_id, id, "a new flow after the quit");
	xflow_flowtab_fini(&d.flows);
	xflow_unit_free(u);
}

/* Issue 19 item 1: a split, and each side of a keyed handoff, is one
 * record: the operation's own (STORE_SPLIT, STORE_HANDOFF_*), without a
 * marker saying it a second time (a second START of every fragment); and
 * matched again on one path, a split or a keyed receive keeps the id the
 * object got (item 2's rule). */
Test(interp, split_and_keyed_handoffs_write_one_record_each)
{
	struct xflow_unit *u = split_keyed_flow();
	static struct dom guest, dom0;
	memset(&guest, 0, sizeof(guest));
	memset(&dom0, 0, sizeof(dom0));
	cr_assert_eq(xflow_flowtab_init(&guest.flows, 64), 0);
	cr_assert_eq(xflow_flowtab_init(&dom0.flows, 64), 0);
	static const char *const t[] = { "target" };
	uint64_t v = SKB;
	run(u, 0, &guest, t, &v, 1);
	uint64_t parent = xflow_flowtab_get(&guest.flows, 0, SKB);
	cr_assert_neq(parent, 0);

	put_ptr(&guest, VAR_A, SKB);
	put_ptr(&guest, VAR_B, CLONE);
	static const char *const sn[] = { "skb", "n" };
	uint64_t sv[] = { VAR_A, VAR_B };
	unsigned before = guest.nrecs;
	struct xflow_interp_result r = run(u, 1, &guest, sn, sv, 2);
	cr_assert_eq(r.rc, 0);
	cr_assert_eq(guest.nrecs - before, 1, "%u records for one split", guest.nrecs - before);
	const struct xflow_record *m = &guest.recs[before];
	cr_expect_eq(m->flags, XFLOW_REC_START | XFLOW_REC_TRANSIT | XFLOW_REC_SPLIT);
	uint64_t child = xflow_flowtab_get(&guest.flows, 0, CLONE);
	cr_expect_eq(m->flow_id, child);
	cr_expect_eq(m->data[0], parent);
	cr_expect_eq(xflow_flowtab_get(&guest.flows, 0, SKB), parent, "the parent keeps its id");
	/* The split's pointcut matching again on the fragment's path: the
	 * fragment keeps its id, and nothing is written. */
	before = guest.nrecs;
	r = run(u, 1, &guest, sn, sv, 2);
	cr_assert_eq(r.rc, 0);
	cr_expect_eq(guest.nrecs, before, "a second split of one fragment");
	cr_expect_eq(xflow_flowtab_get(&guest.flows, 0, CLONE), child);

	/* The sending side of the keyed handoff. */
	uint64_t key = 0x77;
	memcpy(guest.mem + (TX - MEM_BASE) + 8, &key, 8);
	put_ptr(&guest, VAR_A, CLONE);
	put_ptr(&guest, VAR_B, TX);
	static const char *const xt[] = { "skb", "tx" };
	before = guest.nrecs;
	r = run(u, 2, &guest, xt, sv, 2);
	cr_assert_eq(r.rc, 0);
	cr_assert_eq(guest.nrecs - before, 1, "%u records for one keyed send", guest.nrecs - before);
	m = &guest.recs[before];
	cr_expect_eq(m->flags, XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_KEYED);
	cr_expect_eq(m->flow_id, child);
	cr_expect_eq(m->data[0], key);
	cr_expect_eq(m->data[1], 0);

	/* The receiving side, in dom0. */
	memcpy(dom0.mem + (TX - MEM_BASE) + 8, &key, 8);
	put_ptr(&dom0, VAR_A, TX);
	put_ptr(&dom0, VAR_B, SKB0);
	static const char *const xr[] = { "txp", "skb" };
	r = run(u, 3, &dom0, xr, sv, 2);
	cr_assert_eq(r.rc, 0);
	cr_assert_eq(dom0.nrecs, 1, "%u records for one keyed receive", dom0.nrecs);
	m = &dom0.recs[0];
	cr_expect_eq(m->flags, XFLOW_REC_START | XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_KEYED);
	cr_expect_eq(m->flow_id, xflow_flowtab_get(&dom0.flows, 0, SKB0));
	cr_expect_eq(m->data[0], key);
	cr_expect_eq(m->data[1], 1);
	uint64_t local = m->flow_id;
	r = run(u, 3, &dom0, xr, sv, 2);
	cr_assert_eq(r.rc, 0);
	cr_expect_eq(dom0.nrecs, 1, "a second receive for one object");
	cr_expect_eq(xflow_flowtab_get(&dom0.flows, 0, SKB0), local);
	xflow_flowtab_fini(&guest.flows);
	xflow_flowtab_fini(&dom0.flows);
	xflow_unit_free(u);
}

/* Issue 17: a keyed handoff through member chains, with a packed key and
 * the receiver's idea of the sender, run by the interpreter as the
 * in-process backends run it (the kernel backend lowers the same
 * bytecode): the key is exactly gref's low 32 bits over id's 16, and the
 * receiving record says data[2] = the sender's domain id + 1. */
Test(interp, chained_packed_keys_and_the_sender)
{
	static const char xml[] =
		"<flows><xflow name='f'>"
		"<start><pointcut>call(s)</pointcut><select local_var='skb'/></start>"
		"<transit><pointcut>call(a)</pointcut>"
		"<cast var='data' struct='info'/><cast var='data->tx' struct='req'/>"
		"<xin_copy name='k' from='data->skb' to='data->tx'>"
		"<key member='gref' bits='32'/><key member='id' bits='16'/></xin_copy></transit>"
		"<transit><pointcut>call(b)</pointcut>"
		"<cast var='txp' struct='req'/><cast var='q' struct='queue'/><cast var='q->vif' struct='vif'/>"
		"<xout_copy name='k' from='txp' to='skb'><sender domid='q->vif->domid'/></xout_copy></transit>"
		"</xflow></flows>";
	struct xflow_unit *u = compile_ok("ck.xml", xml);
	/* info { skb @0, tx @8 }; req { gref @0 (4), id @4 (2) };
	 * queue { vif @16 }; vif { domid @2 (2) }. */
	static const struct { const char *s, *m; uint32_t off, size; } lay[] = {
		{ "info", "skb", 0, 8 }, { "info", "tx", 8, 8 }, { "req", "gref", 0, 4 }, { "req", "id", 4, 2 },
		{ "queue", "vif", 16, 8 }, { "vif", "domid", 2, 2 },
	};
	size_t nf = xflow_unit_field_count(u);
	for (size_t i = 0; i < nf; i++) {
		const char *s, *m;
		unsigned bits;
		cr_assert_eq(xflow_unit_field(u, i, &s, &m, &bits), 0);
		fields[i] = (struct xflow_field_rt){ .offset = 0, .size = 0 };
		for (size_t j = 0; j < sizeof(lay) / sizeof(lay[0]); j++)
			if (!strcmp(lay[j].s, s) && !strcmp(lay[j].m, m))
				fields[i] = (struct xflow_field_rt){ .offset = lay[j].off, .size = lay[j].size };
		cr_assert_neq(fields[i].size, 0, "field %s.%s laid out", s, m);
	}
	static struct dom guest, dom0;
	memset(&guest, 0, sizeof(guest));
	memset(&dom0, 0, sizeof(dom0));
	xflow_flowtab_init(&guest.flows, 16);
	xflow_flowtab_init(&dom0.flows, 16);
	/* The guest: info at VAR_A's target (TX), skb SKB, request CLONE with
	 * gref 0xaabbccdd and id 0x1234, and a byte above each that the
	 * masks must drop (a wider read would show them). */
	put_ptr(&guest, VAR_B, SKB);
	uint64_t sv0 = VAR_B;
	static const char *const s0[] = { "skb" };
	run(u, 0, &guest, s0, &sv0, 1);
	uint64_t id = xflow_flowtab_get(&guest.flows, 0, SKB);
	cr_assert_neq(id, 0);
	put_ptr(&guest, TX, SKB);
	put_ptr(&guest, TX + 8, CLONE);
	uint32_t gref = 0xaabbccdd;
	uint16_t rid = 0x1234;
	memcpy(guest.mem + (CLONE - MEM_BASE), &gref, 4);
	memcpy(guest.mem + (CLONE - MEM_BASE) + 4, &rid, 2);
	guest.mem[CLONE - MEM_BASE + 6] = 0xee;
	put_ptr(&guest, VAR_A, TX);
	static const char *const s1[] = { "data" };
	uint64_t sv1 = VAR_A;
	unsigned before = guest.nrecs;
	struct xflow_interp_result r = run(u, 1, &guest, s1, &sv1, 1);
	cr_assert_eq(r.rc, 0);
	cr_assert_eq(guest.nrecs - before, 1);
	const struct xflow_record *m = &guest.recs[before];
	uint64_t want = ((uint64_t)0xaabbccdd << 16) | 0x1234;
	cr_expect_eq(m->data[0], want, "key %#llx", (unsigned long long)m->data[0]);
	cr_expect_eq(m->data[1], 0);
	cr_expect_eq(m->flow_id, id);
	cr_expect_eq(xflow_flowtab_get(&guest.flows, 0, SKB), id, "xin_copy keeps the id");

	/* dom0: the request copy at TX, the queue at CLONE whose vif (at
	 * SKB) says domain 7. */
	memcpy(dom0.mem + (TX - MEM_BASE), &gref, 4);
	memcpy(dom0.mem + (TX - MEM_BASE) + 4, &rid, 2);
	put_ptr(&dom0, CLONE + 16, SKB);
	uint16_t domid = 7;
	memcpy(dom0.mem + (SKB - MEM_BASE) + 2, &domid, 2);
	put_ptr(&dom0, VAR_A, TX);
	put_ptr(&dom0, VAR_B, SKB0);
	put_ptr(&dom0, VAR_B + 8, CLONE);
	static const char *const s2[] = { "txp", "skb", "q" };
	uint64_t sv2[] = { VAR_A, VAR_B, VAR_B + 8 };
	r = run(u, 2, &dom0, s2, sv2, 3);
	cr_assert_eq(r.rc, 0);
	cr_assert_eq(dom0.nrecs, 1);
	m = &dom0.recs[0];
	cr_expect_eq(m->data[0], want);
	cr_expect_eq(m->data[1], 1, "the receiving side");
	cr_expect_eq(m->data[2], 8, "domid 7, + 1");
	cr_expect_eq(m->flags, XFLOW_REC_START | XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_KEYED);
	cr_expect_eq(m->flow_id, xflow_flowtab_get(&dom0.flows, 0, SKB0));
	xflow_flowtab_fini(&guest.flows);
	xflow_flowtab_fini(&dom0.flows);
	xflow_unit_free(u);
}

/* netback's side at xenvif_idx_release (flows/kernel/xen_net.xml's
 * shape): the request is the element q->pend[i].req, 4 elements of 16
 * bytes at 32 in the queue, req at 4 in each; an index at or past 4
 * writes nothing and is a fault. */
Test(interp, an_indexed_request_is_keyed_and_its_index_bounded)
{
	static const char xml[] =
		"<flows><xflow name='f'>"
		"<start><pointcut>call(s)</pointcut><select local_var='skb'/></start>"
		"<transit><pointcut>call(a)</pointcut><cast var='data' struct='req'/>"
		"<xin_copy name='k' from='skb' to='data'><key member='gref' bits='32'/><key member='id' bits='16'/>"
		"</xin_copy></transit>"
		"<transit><pointcut>call(b)</pointcut><cast var='q' struct='queue'/><cast var='q->vif' struct='vif'/>"
		"<cast var='q->pend[i].req' struct='req'/>"
		"<xout_copy name='k' from='q->pend[i].req' to='q->pend[i].req'><sender domid='q->vif->domid'/>"
		"</xout_copy></transit>"
		"<quit><pointcut>return(b)</pointcut><cast var='q' struct='queue'/>"
		"<select local_var='q->pend[i].req'/></quit>"
		"</xflow></flows>";
	struct xflow_unit *u = compile_ok("ix.xml", xml);
	size_t nf = xflow_unit_field_count(u);
	for (size_t i = 0; i < nf; i++) {
		const char *s, *m;
		unsigned bits;
		cr_assert_eq(xflow_unit_field(u, i, &s, &m, &bits), 0);
		if (!strcmp(m, "pend[].req"))
			fields[i] = (struct xflow_field_rt){ .offset = 32 + 4, .size = 0, .nelems = 4, .stride = 16 };
		else if (!strcmp(m, "gref"))
			fields[i] = (struct xflow_field_rt){ .offset = 0, .size = 4 };
		else if (!strcmp(m, "id"))
			fields[i] = (struct xflow_field_rt){ .offset = 4, .size = 2 };
		else if (!strcmp(m, "vif"))
			fields[i] = (struct xflow_field_rt){ .offset = 16, .size = 8 };
		else
			fields[i] = (struct xflow_field_rt){ .offset = 2, .size = 2 }; /* vif.domid */
	}
	for (size_t i = 0; i < xflow_unit_advice_count(u); i++) {
		struct xflow_advice_info ai;
		xflow_unit_advice(u, i, &ai);
		const char *why;
		uint32_t at;
		cr_assert_eq(xflow_bc_verify((struct xflow_bc_prog *)ai.prog, &why, &at), 0, "%s", why);
	}
	static struct dom dom0;
	memset(&dom0, 0, sizeof(dom0));
	xflow_flowtab_init(&dom0.flows, 16);
	/* The queue at CLONE, its vif at SKB (domain 7); element 2's req at
	 * CLONE + 32 + 2 * 16 + 4: gref 0xaabbccdd, id 0x1234. */
	uint32_t gref = 0xaabbccdd;
	uint16_t rid = 0x1234, domid = 7;
	uint64_t req = CLONE + 32 + 2 * 16 + 4;
	memcpy(dom0.mem + (req - MEM_BASE), &gref, 4);
	memcpy(dom0.mem + (req - MEM_BASE) + 4, &rid, 2);
	put_ptr(&dom0, CLONE + 16, SKB);
	memcpy(dom0.mem + (SKB - MEM_BASE) + 2, &domid, 2);
	put_ptr(&dom0, VAR_A, CLONE);
	static const char *const names[] = { "q", "i" };
	uint64_t vals[] = { VAR_A, VAR_B };
	put_ptr(&dom0, VAR_B, 2);
	struct xflow_interp_result r = run(u, 2, &dom0, names, vals, 2);
	cr_assert_eq(r.rc, 0);
	cr_assert_eq(dom0.nrecs, 1);
	const struct xflow_record *m = &dom0.recs[0];
	cr_expect_eq(m->data[0], ((uint64_t)0xaabbccdd << 16) | 0x1234, "key %#llx", (unsigned long long)m->data[0]);
	cr_expect_eq(m->data[1], 1);
	cr_expect_eq(m->data[2], 8, "domid 7, + 1");
	uint64_t id = xflow_flowtab_get(&dom0.flows, 0, req);
	cr_expect_neq(id, 0, "the request keyed as itself, at its element's address");
	cr_expect_eq(m->flow_id, id);
	/* The last element is in bounds; one past it, and a "negative" index,
	 * are faults: no record, nothing registered. */
	put_ptr(&dom0, VAR_B, 3);
	r = run(u, 2, &dom0, names, vals, 2);
	cr_expect_eq(r.rc, 0);
	cr_expect_eq(dom0.nrecs, 2);
	static const uint64_t bad[] = { 4, 0x10002, UINT64_MAX };
	for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
		put_ptr(&dom0, VAR_B, bad[b]);
		size_t live = dom0.flows.live;
		r = run(u, 2, &dom0, names, vals, 2);
		cr_expect_eq(r.rc, -EFAULT, "index %#llx", (unsigned long long)bad[b]);
		cr_expect_eq(dom0.nrecs, 2, "index %#llx wrote a record", (unsigned long long)bad[b]);
		cr_expect_eq(dom0.flows.live, live);
		r = run(u, 3, &dom0, names, vals, 2);
		cr_expect_eq(r.rc, -EFAULT, "the quit's index %#llx", (unsigned long long)bad[b]);
	}
	/* The quit at the return drops the request's id. */
	put_ptr(&dom0, VAR_B, 2);
	r = run(u, 3, &dom0, names, vals, 2);
	cr_expect_eq(r.rc, 0);
	cr_expect_eq(xflow_flowtab_get(&dom0.flows, 0, req), 0);
	xflow_flowtab_fini(&dom0.flows);
	xflow_unit_free(u);
}
