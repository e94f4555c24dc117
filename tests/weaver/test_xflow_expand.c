/*
 * xflow expansion: the paper's Figures 5-8 are what Figures 2-3 expand to,
 * compared as compiled bytecode with names abstracted away.
 */
#include "bceval.h"
#include "wtest.h"

#include "xflow/record.h"

#define FIG(n) "tests/weaver/figures/fig" #n ".xml"

static void expect_equiv(const struct xflow_unit *ua, size_t ia, const struct xflow_unit *ub,
			 size_t ib)
{
	char why[200] = "";
	cr_expect(wt_prog_equiv(ua, wt_prog(ua, ia), ub, wt_prog(ub, ib), why, sizeof(why)),
		  "advice %zu vs %zu: %s", ia, ib, why);
}

/* Figure 5, but an object that has a live id keeps it (issue 19 item 2:
 * a start pointcut matching several instructions on one path). */
static const char fig5_keeping_a_live_id[] =
	"<flows><xflow name='netflow'/><advice><pointcut>access(sk_buff.data) AND "
	"within_function(alloc_skb_from_cache) AND target(random_string)</pointcut><before>"
	"if (get_flowid(netflow, random_string) == 0) {"
	"  register_flowid(netflow, random_string, get_new_flowid());"
	"}</before></advice></flows>";

Test(xflow_expand, figure3_start_is_figure5_keeping_a_live_id)
{
	int rc;
	struct xflow_unit *f3 = wt_compile_file(FIG(3)), *f5 = wt_compile_file(FIG(5));
	struct xflow_unit *kept = wt_compile(fig5_keeping_a_live_id, &rc);
	cr_assert_eq(rc, 0);
	cr_assert_eq(xflow_unit_advice_count(f3), 3);
	expect_equiv(f3, 0, kept, 0);
	char why[200];
	cr_expect_not(wt_prog_equiv(f3, wt_prog(f3, 0), f5, wt_prog(f5, 0), why, sizeof(why)),
		      "the start is Figure 5 as printed, which gives a live object a second id");
	xflow_unit_free(f3);
	xflow_unit_free(f5);
	xflow_unit_free(kept);
}

Test(xflow_expand, figure3_transit_is_figure6)
{
	struct xflow_unit *f3 = wt_compile_file(FIG(3)), *f6 = wt_compile_file(FIG(6));
	expect_equiv(f3, 1, f6, 0);
	xflow_unit_free(f3);
	xflow_unit_free(f6);
}

Test(xflow_expand, figure2_is_figure8)
{
	struct xflow_unit *f2 = wt_compile_file(FIG(2)), *f8 = wt_compile_file(FIG(8));
	/* Figure 2 includes Figure 3: three xflow advice, then its own. */
	cr_assert_eq(xflow_unit_advice_count(f2), 4);
	expect_equiv(f2, 3, f8, 0);
	xflow_unit_free(f2);
	xflow_unit_free(f8);
}

Test(xflow_expand, equivalence_sees_a_difference)
{
	/* The comparison is not vacuous: copy differs from Figure 6's move. */
	int rc;
	struct xflow_unit *c = wt_compile(
		"<xflow name='netflow'><transit><pointcut>access(sk_buff.head) AND "
		"within_function(skb_clone)</pointcut><copy from='skb' to='n'/></transit></xflow>", &rc);
	cr_assert_eq(rc, 0);
	struct xflow_unit *f6 = wt_compile_file(FIG(6));
	char why[200];
	cr_expect_not(wt_prog_equiv(c, wt_prog(c, 0), f6, wt_prog(f6, 0), why, sizeof(why)));
	xflow_unit_free(c);
	xflow_unit_free(f6);
}

Test(xflow_expand, xflow_derived_advice_is_woven_first)
{
	int rc;
	struct xflow_unit *u = wt_compile(
		"<flows><advice><pointcut>access(sk_buff.%) AND target(skb) AND xflow(f, skb)</pointcut>"
		"<before>STORE_DATA1($pc$);</before></advice>"
		"<xflow name='f'><start><pointcut>access(sk_buff.data)</pointcut></start></xflow></flows>", &rc);
	cr_assert_eq(rc, 0);
	struct xflow_advice_info a0, a1;
	xflow_unit_advice(u, 0, &a0);
	xflow_unit_advice(u, 1, &a1);
	cr_expect_eq(a0.origin, XFLOW_ADVICE_START);
	cr_expect_eq(a0.rec_flags, XFLOW_REC_START);
	cr_expect_eq(a1.origin, XFLOW_ADVICE_USER);
	/* The guard without an id variable still reads the flow id first. */
	cr_expect_eq(a1.prog->insns[1].op, XFLOW_OP_FLOW_GET);
	xflow_unit_free(u);
}

static const char netfront[] =
	"<xflow name='netflow'><transit><pointcut>access(netif_tx_request.flags) AND "
	"within_file(drivers/.../netfront.c@linuxU)</pointcut>"
	"<xin_move name='netin' from='skb' to='tx'/><field name='flags' offset='4' size='12'/>"
	"</transit><transit><pointcut>access(netif_tx_request.flags) AND "
	"within_file(drivers/.../netback.c@linux0)</pointcut>"
	"<xout_move name='netin' from='txp' to='skb'/></transit></xflow>";

Test(xflow_expand, xin_runs_after_stores_of_its_field)
{
	int rc;
	struct xflow_unit *u = wt_compile(netfront, &rc);
	cr_assert_eq(rc, 0);
	struct xflow_advice_info in, out;
	xflow_unit_advice(u, 0, &in);
	xflow_unit_advice(u, 1, &out);
	cr_expect(in.flags & XFLOW_ADVICE_AFTER_STORE);
	const char *s, *m;
	unsigned bits;
	cr_assert_eq(xflow_unit_field(u, (size_t)in.after_store_field, &s, &m, &bits), 0);
	cr_expect_str_eq(s, "netif_tx_request");
	cr_expect_str_eq(m, "flags");
	cr_expect_eq(bits, 16);
	cr_expect_eq(in.rec_flags, XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_TRUNCATED_ID);
	/* Only the writing side needs the placement. */
	cr_expect_not(out.flags & XFLOW_ADVICE_AFTER_STORE);
	xflow_unit_free(u);
}

/* Issue 30 item 7: the plan says which side takes a flow from another
 * domain, for the monitor to let only that side's records take a
 * handoff.  Both sides' records say CROSS_DOMAIN; only the flag tells. */
Test(xflow_expand, only_the_unkeyed_xout_receives)
{
	int rc;
	struct xflow_unit *u = wt_compile(netfront, &rc);
	cr_assert_eq(rc, 0);
	struct xflow_advice_info in, out;
	xflow_unit_advice(u, 0, &in);
	xflow_unit_advice(u, 1, &out);
	cr_expect_not(in.flags & XFLOW_ADVICE_RECEIVES, "the xin sends");
	cr_expect(out.flags & XFLOW_ADVICE_RECEIVES, "the xout receives");
	cr_expect(out.rec_flags & XFLOW_REC_CROSS_DOMAIN);
	xflow_unit_free(u);
	/* A keyed pair is joined by its key, not taken by bits: neither. */
	u = wt_compile("<xflow name='blk'>"
		       "<transit><pointcut>access(blkif_request.id) AND within_file(blkfront.c@linuxU)</pointcut>"
		       "<xin_move name='req' from='bio' to='ring_req'><key member='id'/></xin_move></transit>"
		       "<transit><pointcut>access(blkif_request.id) AND within_file(blkback.c@linux0)</pointcut>"
		       "<xout_move name='req' from='req' to='pending'/></transit></xflow>", &rc);
	cr_assert_eq(rc, 0);
	for (size_t i = 0; i < xflow_unit_advice_count(u); i++) {
		xflow_unit_advice(u, i, &in);
		cr_expect_not(in.flags & XFLOW_ADVICE_RECEIVES, "keyed advice %zu receives", i);
	}
	xflow_unit_free(u);
}

/* Issue 24: every advice of a notify="yes" point, and only those, is
 * NOTIFIES: any record written there is the hop's crossing. */
Test(xflow_expand, a_notify_point_marks_its_advice)
{
	int rc;
	struct xflow_unit *u = wt_compile("<xflow name='f'>"
					  "<start><pointcut>access(s.a) AND within_function(f0)</pointcut></start>"
					  "<transit notify='yes'><pointcut>access(s.b) AND within_function(f1)</pointcut>"
					  "<move from='p' to='q'/></transit>"
					  "<transit notify='no'><pointcut>access(s.c) AND within_function(f2)</pointcut>"
					  "<select local_var='q'/></transit>"
					  "<quit><pointcut>access(s.d)</pointcut></quit></xflow>", &rc);
	cr_assert_eq(rc, 0);
	cr_assert_eq(xflow_unit_advice_count(u), 4);
	for (size_t i = 0; i < 4; i++) {
		struct xflow_advice_info a;
		xflow_unit_advice(u, i, &a);
		cr_expect_eq(!!(a.flags & XFLOW_ADVICE_NOTIFIES), i == 1, "advice %zu: flags %#x", i, a.flags);
	}
	xflow_unit_free(u);
}

/* The xin masks the id into its bits and keeps the rest of the field:
 * look for the constants the masking needs. */
Test(xflow_expand, xin_masks_the_id_into_the_field)
{
	int rc;
	struct xflow_unit *u = wt_compile(netfront, &rc);
	const struct xflow_bc_prog *p = wt_prog(u, 0);
	bool keep_mask = false, id_mask = false, shift = false, stf = false;
	for (uint32_t i = 0; i < p->ninsns; i++) {
		const struct xflow_bc_insn *x = &p->insns[i];
		if (x->op == XFLOW_OP_PUSHI && x->k == 0xfff)
			id_mask = true;
		if (x->op == XFLOW_OP_PUSHI && x->k == 0xfff0 && p->insns[i + 1].op == XFLOW_OP_NOT)
			keep_mask = true;
		if (x->op == XFLOW_OP_PUSHI && x->k == 4 && p->insns[i + 1].op == XFLOW_OP_SHL)
			shift = true;
		stf |= x->op == XFLOW_OP_STF;
	}
	cr_expect(keep_mask && id_mask && shift && stf);
	/* And the receiving side shifts them back out. */
	p = wt_prog(u, 1);
	bool shr = false;
	for (uint32_t i = 0; i + 1 < p->ninsns; i++)
		shr |= p->insns[i].op == XFLOW_OP_PUSHI && p->insns[i].k == 4 &&
		       p->insns[i + 1].op == XFLOW_OP_SHR;
	cr_expect(shr);
	xflow_unit_free(u);
}

Test(xflow_expand, keyed_handoff_and_split)
{
	int rc;
	struct xflow_unit *u = wt_compile(
		"<xflow name='blk'>"
		"<transit><pointcut>access(blkif_request.id) AND within_file(blkfront.c@linuxU)</pointcut>"
		"<xin_move name='req' from='bio' to='ring_req'><key member='id'/></xin_move></transit>"
		"<transit><pointcut>access(blkif_request.id) AND within_file(blkback.c@linux0)</pointcut>"
		"<xout_move name='req' from='req' to='pending'/></transit>"
		"<transit><pointcut>access(bio.bi_size) AND within_function(bio_split)</pointcut>"
		"<split from='bio' to='frag'/></transit></xflow>", &rc);
	char *d = wt_diags(u);
	cr_assert_eq(rc, 0, "%s", d);
	free(d);
	int handoffs[2] = { 0, 0 }, splits = 0;
	for (size_t i = 0; i < 3; i++) {
		const struct xflow_bc_prog *p = wt_prog(u, i);
		for (uint32_t k = 0; k < p->ninsns; k++) {
			if (p->insns[k].op == XFLOW_OP_HANDOFF)
				handoffs[p->insns[k].a]++;
			splits += p->insns[k].op == XFLOW_OP_SPLIT;
		}
	}
	cr_expect_eq(handoffs[0], 1);
	cr_expect_eq(handoffs[1], 1);
	cr_expect_eq(splits, 1);
	struct xflow_advice_info in;
	xflow_unit_advice(u, 0, &in);
	/* No header bits are written, so no placement rule and no truncation. */
	cr_expect_not(in.flags & XFLOW_ADVICE_AFTER_STORE);
	cr_expect_not(in.rec_flags & XFLOW_REC_TRUNCATED_ID);
	xflow_unit_free(u);
}

Test(xflow_expand, select_keys_by_the_local_variable)
{
	int rc;
	struct xflow_unit *u = wt_compile(
		"<xflow name='f'><start><pointcut>call(netif_rx)</pointcut><select local_var='skb'/></start></xflow>", &rc);
	cr_assert_eq(rc, 0);
	const struct xflow_bc_prog *p = wt_prog(u, 0);
	cr_expect_eq(p->ninputs, 1);
	cr_expect_eq(p->inputs[0].kind, XFLOW_IN_LOCAL_VAR);
	cr_expect_str_eq(p->inputs[0].local, "skb");
	/* The key is the local's value: read through its address. */
	cr_expect_eq(p->insns[1].op, XFLOW_OP_LDM);
	xflow_unit_free(u);
}

Test(xflow_expand, xflow_under_or_is_refused)
{
	wt_expect_error("<flows><xflow name='f'/><advice><pointcut>access(s.m) AND target(v) AND "
			"(xflow(f, v) OR call(g))</pointcut><before>STORE_DATA1(1);</before></advice></flows>",
			"xflow() under OR or NOT cannot guard the advice");
}

Test(xflow_expand, xin_needs_the_struct_of_its_field)
{
	wt_expect_error("<xflow name='f'><transit><pointcut>within_function(g)</pointcut>"
			"<xin_move name='n' from='a' to='b'><field name='flags' offset='0' size='8'/></xin_move>"
			"</transit></xflow>",
			"cannot tell which struct 'flags' is a member of");
}

/* Run the netfront/netback pair: the id crosses in bits 4..15 of flags and
 * the header's other bits survive both ways. */
Test(xflow_expand, xin_xout_round_trip)
{
	int rc;
	struct xflow_unit *u = wt_compile(netfront, &rc);
	cr_assert_eq(rc, 0);
	struct { uint32_t gref; uint16_t offset, flags, id, size; } tx = { .flags = 0x0003 };
	char skb_u[8], skb_0[8];
	void *skb_local = skb_u, *tx_local = &tx, *skb0_local = skb_0;
	struct ev_env e = { 0 };
	e.field_off[0] = 6;   /* struct netif_tx_request: gref, offset, flags ... */
	e.field_size[0] = 2;
	ev_reg(&e, 0, (uintptr_t)skb_u, 0x12345);
	e.in[0] = (uintptr_t)&skb_local;
	e.in[1] = (uintptr_t)&tx_local;
	cr_assert_geq(ev_run(wt_prog(u, 0), &e), 1);
	cr_expect_eq(tx.flags, 0x3453, "flags = %#x", tx.flags);
	cr_expect_eq(ev_get(&e, 0, (uintptr_t)skb_u), 0, "xin_move keeps the old mapping");
	/* dom0: netback's txp is the same request. */
	e.in[0] = (uintptr_t)&tx_local;
	e.in[1] = (uintptr_t)&skb0_local;
	cr_assert_geq(ev_run(wt_prog(u, 1), &e), 1);
	cr_expect_eq(ev_get(&e, 0, (uintptr_t)skb_0), 0x345);
	cr_expect_eq(tx.flags, 0x0003, "xout_move leaves flags = %#x", tx.flags);
	xflow_unit_free(u);
}

Test(xflow_expand, move_and_copy_rekey)
{
	int rc;
	struct xflow_unit *u = wt_compile(
		"<xflow name='f'><transit><pointcut>call(a)</pointcut><move from='x' to='y'/></transit>"
		"<transit><pointcut>call(b)</pointcut><copy from='x' to='y'/></transit></xflow>", &rc);
	cr_assert_eq(rc, 0);
	char x[1], y[1], z[1];
	void *xl = x, *yl = y, *zl = z;
	struct ev_env e = { 0 };
	ev_reg(&e, 0, (uintptr_t)x, 9);
	e.in[0] = (uintptr_t)&xl;
	e.in[1] = (uintptr_t)&yl;
	ev_run(wt_prog(u, 0), &e);
	cr_expect_eq(ev_get(&e, 0, (uintptr_t)x), 0);
	cr_expect_eq(ev_get(&e, 0, (uintptr_t)y), 9);
	e.in[0] = (uintptr_t)&yl;
	e.in[1] = (uintptr_t)&zl;
	ev_run(wt_prog(u, 1), &e);
	cr_expect_eq(ev_get(&e, 0, (uintptr_t)y), 9);
	cr_expect_eq(ev_get(&e, 0, (uintptr_t)z), 9);
	/* Nothing to move: nothing registered. */
	char w[1];
	void *wl = w;
	e.in[0] = (uintptr_t)&wl;
	ev_run(wt_prog(u, 0), &e);
	cr_expect_eq(e.ntab, 2);
	xflow_unit_free(u);
}

Test(xflow_expand, keyed_handoff_links_by_key)
{
	int rc;
	struct xflow_unit *u = wt_compile(
		"<xflow name='blk'>"
		"<transit><pointcut>access(blkif_request.id)</pointcut>"
		"<xin_move name='req' from='bio' to='r'><key member='id'/></xin_move></transit>"
		"<transit><pointcut>access(blkif_request.id)</pointcut>"
		"<xout_move name='req' from='r' to='pending'/></transit></xflow>", &rc);
	cr_assert_eq(rc, 0);
	uint64_t req[2] = { 0, 4242 };   /* id at offset 8 */
	char bio[1], pend[1];
	void *bl = bio, *rl = req, *pl = pend;
	struct ev_env e = { .next_id = 100 };
	e.field_off[0] = 8;
	e.field_size[0] = 8;
	ev_reg(&e, 0, (uintptr_t)bio, 7);
	e.in[0] = (uintptr_t)&bl;
	e.in[1] = (uintptr_t)&rl;
	ev_run(wt_prog(u, 0), &e);
	e.in[0] = (uintptr_t)&rl;
	e.in[1] = (uintptr_t)&pl;
	ev_run(wt_prog(u, 1), &e);
	cr_assert_eq(e.nrec, 2);
	/* Sender: (id 7, key 4242, side 0); receiver: (new id, key 4242, side 1). */
	cr_expect_eq(e.rec[0].flow_id, 7);
	cr_expect_eq(e.rec[0].data[0], 4242);
	cr_expect_eq(e.rec[0].data[1], 0);
	cr_expect_eq(e.rec[1].flow_id, 101);
	cr_expect_eq(e.rec[1].data[0], 4242);
	cr_expect_eq(e.rec[1].data[1], 1);
	cr_expect_eq(ev_get(&e, 0, (uintptr_t)pend), 101);
	cr_expect_eq(ev_get(&e, 0, (uintptr_t)bio), 0);
	xflow_unit_free(u);
}
