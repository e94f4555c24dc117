/*
 * The language's additions for kernel flows (xflow(5)): tracepoint(c:n),
 * whose instance target() binds, and the passing <transit> (a <select>
 * and no operation).  Compile-time only: no kernel needed.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/weaver/wtest.h"
#include "xflow/bytecode.h"
#include "xflow/record.h"

Test(kernel_lang, tracepoint_parses_and_binds_its_instance)
{
	int rc;
	struct xflow_unit *u = wt_compile("<flows><xflow name='f'><quit>"
					  "<pointcut>tracepoint(skb:consume_skb@linux0) OR tracepoint(skb:kfree_skb)"
					  "</pointcut></quit></xflow></flows>", &rc);
	char *d = wt_diags(u);
	cr_assert_eq(rc, 0, "%s", d);
	free(d);
	cr_assert_eq(xflow_unit_advice_count(u), 1);
	struct xflow_advice_info ai;
	cr_assert_eq(xflow_unit_advice(u, 0, &ai), 0);
	cr_expect_eq(ai.origin, XFLOW_ADVICE_QUIT);
	cr_assert_eq(ai.prog->ninputs, 1);
	cr_expect_eq(ai.prog->inputs[0].kind, XFLOW_IN_TARGET, "a quit without <select> keys by target()");
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	xflow_unit_dump(u, f, false);
	fclose(f);
	cr_expect(strstr(buf, "tracepoint(skb:consume_skb@linux0)") != NULL, "%s", buf);
	free(buf);
	xflow_unit_free(u);
}

Test(kernel_lang, tracepoint_errors_say_what_to_write)
{
	wt_expect_error("<flows><xflow name='f'><quit><pointcut>tracepoint(consume_skb)</pointcut></quit></xflow></flows>",
			"':' between the category and the name");
	wt_expect_error("<flows><xflow name='f'><quit><pointcut>tracepoint(skb:)</pointcut></quit></xflow></flows>",
			"a tracepoint name");
	/* A quit elsewhere still needs an access(), said of what was
	 * written (issue 26 item 6), not of the target() it expands to. */
	wt_expect_error("<flows><xflow name='f'><quit><pointcut>call(consume_skb)</pointcut></quit></xflow></flows>",
			"<quit> of xflow f needs an object to key the flow by: its pointcut has no access()");
	wt_expect_error("<flows><advice><pointcut>call(f) AND target(v)</pointcut><before>STORE_DATA1(v);</before>"
			"</advice></flows>",
			"target(v) needs an access() in the pointcut");
}

Test(kernel_lang, a_passing_transit_gets_and_records)
{
	int rc;
	struct xflow_unit *u = wt_compile("<flows><xflow name='f'><transit>"
					  "<pointcut>call(dev_hard_start_xmit)</pointcut><select local_var='first'/>"
					  "</transit></xflow></flows>", &rc);
	cr_assert_eq(rc, 0);
	cr_assert_eq(xflow_unit_advice_count(u), 1);
	struct xflow_advice_info ai;
	cr_assert_eq(xflow_unit_advice(u, 0, &ai), 0);
	cr_expect_eq(ai.origin, XFLOW_ADVICE_TRANSIT);
	cr_expect_eq(ai.rec_flags, XFLOW_REC_TRANSIT);
	cr_assert_eq(ai.prog->ninputs, 1);
	cr_expect_eq(ai.prog->inputs[0].kind, XFLOW_IN_LOCAL_VAR);
	cr_expect_str_eq(ai.prog->inputs[0].local, "first");
	/* One get and nothing that changes the table. */
	unsigned gets = 0, others = 0;
	for (uint32_t i = 0; i < ai.prog->ninsns; i++) {
		uint8_t op = ai.prog->insns[i].op;
		gets += op == XFLOW_OP_FLOW_GET;
		others += op == XFLOW_OP_FLOW_REG || op == XFLOW_OP_FLOW_DEL || op == XFLOW_OP_FLOW_NEW ||
			  op == XFLOW_OP_STORE;
	}
	cr_expect_eq(gets, 1);
	cr_expect_eq(others, 0);
	xflow_unit_free(u);
}

Test(kernel_lang, a_transit_says_something)
{
	wt_expect_error("<flows><xflow name='f'><transit><pointcut>call(a)</pointcut></transit></xflow></flows>",
			"or <select local_var=\"v\"/> where the flow only passes");
	wt_expect_error("<flows><xflow name='f'><transit><pointcut>call(a)</pointcut><select local_var='p'/>"
			"<move from='p' to='q'/></transit></xflow></flows>",
			"<select> in a <transit> marks a pass without an operation");
}

/* Issue 17: member chains, <cast>, packed <key>s and <sender>. */
static char *dump_of(struct xflow_unit *u, bool bytecode)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	xflow_unit_dump(u, f, bytecode);
	fclose(f);
	return buf;
}

static const char *const chained =
	"<flows><xflow name='f'>"
	"<transit><pointcut>call(a)</pointcut>"
	"<cast var='data' struct='info'/><cast var='data->tx' struct='req'/>"
	"<xin_copy name='k' from='data->skb' to='data->tx'>"
	"<key member='gref' bits='32'/><key member='id' bits='16'/></xin_copy></transit>"
	"<transit><pointcut>call(b)</pointcut>"
	"<cast var='txp' struct='req'/><cast var='q' struct='queue'/><cast var='q->vif' struct='vif'/>"
	"<xout_copy name='k' from='txp' to='skb'><sender domid='q->vif->domid'/></xout_copy></transit>"
	"</xflow></flows>";

Test(kernel_lang, a_chain_reads_through_its_casts_and_packs_the_key)
{
	int rc;
	struct xflow_unit *u = wt_compile(chained, &rc);
	char *d = wt_diags(u);
	cr_assert_eq(rc, 0, "%s", d);
	free(d);
	char *t = dump_of(u, false);
	/* One binding for the root both chains share. */
	cr_expect(strstr(t, "call(a) AND local_var(data, ") != NULL, "%s", t);
	cr_expect(strstr(t, "((struct info *)data)-&gt;skb") != NULL, "%s", t);
	cr_expect(strstr(t, "((struct info *)data)-&gt;tx") != NULL, "%s", t);
	/* The first <key> highest, each masked to its bits. */
	cr_expect(strstr(t, "-&gt;gref &amp; 0xffffffffULL) &lt;&lt; 16) | (xf_req") != NULL, "%s", t);
	cr_expect(strstr(t, "-&gt;id &amp; 0xffffULL), xf_id") != NULL, "%s", t);
	cr_expect(strstr(t, "STORE_HANDOFF_IN_FROM(f, ") != NULL, "%s", t);
	cr_expect(strstr(t, "((struct vif *)((struct queue *)q)-&gt;vif)-&gt;domid") != NULL, "%s", t);
	free(t);
	/* The bytecode: LDF chains, the packing, HANDOFF's side 2. */
	struct xflow_advice_info ai;
	cr_assert_eq(xflow_unit_advice(u, 0, &ai), 0);
	unsigned ldf = 0, shl = 0, and = 0, or = 0;
	for (uint32_t i = 0; i < ai.prog->ninsns; i++) {
		uint8_t op = ai.prog->insns[i].op;
		ldf += op == XFLOW_OP_LDF;
		shl += op == XFLOW_OP_SHL;
		and += op == XFLOW_OP_AND;
		or += op == XFLOW_OP_OR;
	}
	cr_expect_eq(ldf, 4, "skb, tx, gref, id");
	cr_expect_eq(shl, 1);
	cr_expect_eq(and, 2);
	cr_expect_eq(or, 1);
	cr_assert_eq(xflow_unit_advice(u, 1, &ai), 0);
	cr_expect_eq(ai.prog->ninputs, 3, "txp, skb and q bound");
	bool side2 = false;
	for (uint32_t i = 0; i < ai.prog->ninsns; i++)
		side2 |= ai.prog->insns[i].op == XFLOW_OP_HANDOFF && ai.prog->insns[i].a == 2;
	cr_expect(side2, "the receiver names its sender");
	xflow_unit_free(u);
}

Test(kernel_lang, keys_and_chains_are_refused_with_their_line)
{
	/* 32 + 16 + 32 > 64. */
	wt_expect_error("<flows><xflow name='f'><transit><pointcut>call(a) AND access(r.a)</pointcut>"
			"<xin_move name='k' from='p' to='q'><key member='a' bits='32'/><key member='b' bits='16'/>"
			"<key member='c' bits='32'/></xin_move></transit></xflow></flows>",
			"t.xml:1:188: error: the <key>s of <xin_move> add up to 80 bits");
	wt_expect_error("<flows><xflow name='f'><transit><pointcut>call(a) AND access(r.a)</pointcut>"
			"<xin_move name='k' from='p' to='q'><key member='a' bits='32'/><key member='b'/>"
			"</xin_move></transit></xflow></flows>",
			"<key member=\"b\"> is one of several and says no bits");
	wt_expect_error("<flows><xflow name='f'><transit><pointcut>call(a) AND access(r.a)</pointcut>"
			"<xin_move name='k' from='p' to='q'><key member='a' bits='0'/></xin_move></transit></xflow></flows>",
			"bits=\"0\" is not 1..64");
	/* A chain through a pointer nobody cast. */
	wt_expect_error("<flows><xflow name='f'><transit><pointcut>call(a) AND access(r.a)</pointcut>"
			"<xin_move name='k' from='d->skb' to='q'><key member='a'/></xin_move></transit></xflow></flows>",
			"add <cast var=\"d\" struct=\"NAME\"/>");
	wt_expect_error("<flows><xflow name='f'><transit><pointcut>call(a)</pointcut>"
			"<move from='d->skb' to='q'/></transit></xflow></flows>",
			"a member chain names only a keyed handoff's object or request");
	wt_expect_error("<flows><xflow name='f'><transit><pointcut>call(a) AND access(r.a)</pointcut>"
			"<xin_move name='k' from='a->b->c->d->e->f' to='q'><key member='a'/></xin_move>"
			"</transit></xflow></flows>",
			"follows 5 pointers");
	wt_expect_error("<flows><xflow name='f'><transit><pointcut>call(a) AND access(r.a)</pointcut>"
			"<xin_move name='k' from='a->' to='q'><key member='a'/></xin_move></transit></xflow></flows>",
			"is not a variable or member chain");
	/* An xout's own key names: as many, with the same bits. */
	wt_expect_error("<flows><xflow name='f'><transit><pointcut>call(a) AND access(r.a)</pointcut>"
			"<xin_move name='k' from='p' to='q'><key member='a' bits='8'/></xin_move></transit>"
			"<transit><pointcut>call(b) AND access(s.x)</pointcut>"
			"<xout_move name='k' from='q' to='p'><key member='x' bits='16'/></xout_move></transit>"
			"</xflow></flows>",
			"do not match those of <xin_*> 'k'");
	/* <sender> needs a keyed xin. */
	wt_expect_error("<flows><xflow name='f'><transit><pointcut>call(a) AND access(r.a)</pointcut>"
			"<xin_move name='k' from='p' to='q'><field name='a' offset='0' size='48'/></xin_move></transit>"
			"<transit><pointcut>call(b) AND access(r.a)</pointcut>"
			"<xout_move name='k' from='q' to='p'><sender domid='q->d'/></xout_move></transit>"
			"</xflow></flows>",
			"need a keyed <xin_*>");
}

/* A lone <key> of plain variables keeps the paper's form: the request
 * declared with its struct, the member read as it is (no mask, no
 * locals for chains). */
Test(kernel_lang, a_lone_key_of_plain_variables_keeps_the_plain_form)
{
	int rc;
	struct xflow_unit *u = wt_compile("<flows><xflow name='f'><transit>"
					  "<pointcut>call(a) AND access(netif_tx_request.id)</pointcut>"
					  "<xin_move name='tx' from='skb' to='req'><key member='id'/></xin_move>"
					  "</transit></xflow></flows>", &rc);
	cr_assert_eq(rc, 0);
	char *t = dump_of(u, false);
	cr_expect(strstr(t, "struct netif_tx_request *req = *(void**)") != NULL, "%s", t);
	cr_expect(strstr(t, "STORE_HANDOFF_OUT(f, req-&gt;id, id);") != NULL, "%s", t);
	cr_expect(strstr(t, "xf_obj") == NULL, "%s", t);
	free(t);
	xflow_unit_free(u);
}

/* netback's copy of a request at xenvif_idx_release (flows/kernel/
 * xen_net.xml): an element of an array embedded in the queue, indexed by
 * an argument, then a member embedded in the element; keyed as itself,
 * and quit by the same chain in a <select>. */
static const char *const indexed =
	"<flows><xflow name='f'>"
	"<transit><pointcut>call(a)</pointcut>"
	"<cast var='data' struct='info'/><cast var='data->tx' struct='req'/>"
	"<xin_copy name='k' from='data->skb' to='data->tx'>"
	"<key member='gref' bits='32'/><key member='id' bits='16'/></xin_copy></transit>"
	"<transit><pointcut>call(b)</pointcut>"
	"<cast var='q' struct='queue'/><cast var='q->vif' struct='vif'/>"
	"<cast var='q->pend[i].req' struct='req'/>"
	"<xout_copy name='k' from='q->pend[i].req' to='q->pend[i].req'><sender domid='q->vif->domid'/></xout_copy>"
	"</transit>"
	"<quit><pointcut>return(b)</pointcut><cast var='q' struct='queue'/><select local_var='q->pend[i].req'/></quit>"
	"</xflow></flows>";

Test(kernel_lang, an_indexed_chain_takes_the_element_s_address)
{
	int rc;
	struct xflow_unit *u = wt_compile(indexed, &rc);
	char *d = wt_diags(u);
	cr_assert_eq(rc, 0, "%s", d);
	free(d);
	char *t = dump_of(u, false);
	cr_expect(strstr(t, "call(b) AND local_var(q, ") != NULL, "%s", t);
	cr_expect(strstr(t, "AND local_var(i, ") != NULL, "the index bound by its name: %s", t);
	cr_expect(strstr(t, "unsigned long i = *(unsigned long *)") != NULL, "read whole: %s", t);
	cr_expect(strstr(t, "&amp;((struct queue *)q)-&gt;pend[i].req") != NULL, "%s", t);
	cr_expect(strstr(t, "remove_flowid(f, xf_obj") != NULL, "the quit keys the same chain: %s", t);
	free(t);
	/* The receiving side: two ELEMs (object and request) of the one
	 * field "pend[].req", no load for them. */
	const struct xflow_bc_prog *p = wt_prog(u, 1);
	unsigned elem = 0;
	uint16_t f = 0;
	for (uint32_t i = 0; i < p->ninsns; i++)
		if (p->insns[i].op == XFLOW_OP_ELEM) {
			elem++;
			f = p->insns[i].b;
		}
	cr_expect_eq(elem, 2);
	const char *s, *m;
	unsigned bits;
	cr_assert_eq(xflow_unit_field(u, f, &s, &m, &bits), 0);
	cr_expect_str_eq(s, "queue");
	cr_expect_str_eq(m, "pend[].req");
	cr_expect_eq(p->ninputs, 2, "q and i");
	p = wt_prog(u, 2);
	elem = 0;
	for (uint32_t i = 0; i < p->ninsns; i++)
		elem += p->insns[i].op == XFLOW_OP_ELEM;
	cr_expect_eq(elem, 1, "the quit's");
	xflow_unit_free(u);
}

Test(kernel_lang, indexed_chains_are_refused_with_their_line)
{
	static const char head[] = "<flows><xflow name='f'><transit><pointcut>call(a) AND access(r.a)</pointcut>"
				   "<cast var='q' struct='queue'/><cast var='q->x' struct='s'/>";
	static const char *const bad[][2] = {
		{ "<xin_move name='k' from='q->a[i].b->c[j]' to='q'><key member='a'/></xin_move>",
		  "t.xml:1:161: error: 'q->a[i].b->c[j]' indexes more than one array" },
		{ "<xin_move name='k' from='q[i]' to='p'><key member='a'/></xin_move>",
		  "'q[i]' indexes a variable, not a struct's array member" },
		{ "<xin_move name='k' from='q->a[1]' to='p'><key member='a'/></xin_move>",
		  "'q->a[1]' is not a variable or member chain" },
		{ "<xin_move name='k' from='q->a[i+1]' to='p'><key member='a'/></xin_move>",
		  "is not a variable or member chain" },
		{ "<xin_move name='k' from='q->a[i]x' to='p'><key member='a'/></xin_move>",
		  "is not a variable or member chain" },
		{ "<xin_move name='k' from='q->a[i].' to='p'><key member='a'/></xin_move>",
		  "is not a variable or member chain" },
		{ "<xin_move name='k' from='q->a[long]' to='p'><key member='a'/></xin_move>",
		  "'long' is a keyword of the advice language" },
		{ "<xin_move name='k' from='q->a[q]' to='p'><key member='a'/></xin_move>",
		  "'q' indexes an array and is also the start of a chain" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char xml[1024];
		snprintf(xml, sizeof(xml), "%s%s</transit></xflow></flows>", head, bad[i][0]);
		wt_expect_error(xml, bad[i][1]);
	}
	/* The advice language: '&' takes only an element's address, and
	 * nothing follows it. */
	wt_expect_error("<flows><advice><pointcut>call(a) AND local_var(q, v)</pointcut><before>"
			"void *x = &amp;q;</before></advice></flows>",
			"'&' (address of) is not supported here");
	wt_expect_error("<flows><advice><pointcut>call(a) AND local_var(q, v)</pointcut><before>"
			"struct s *p = *(void**)v; void *x = &amp;p->a[1]->b;</before></advice></flows>",
			"an element's address ends the expression");
	wt_expect_error("<flows><advice><pointcut>call(a) AND local_var(q, v)</pointcut><before>"
			"struct s *p = *(void**)v; void *x = &amp;p->a[p];</before></advice></flows>",
			"an array index must be an integer");
	wt_expect_error("<flows><advice><pointcut>call(a) AND local_var(q, v)</pointcut><before>"
			"void *p = *(void**)v; void *x = &amp;p->a[1];</before></advice></flows>",
			"needs a struct pointer");
	wt_expect_error("<flows><advice><pointcut>call(a) AND local_var(q, v)</pointcut><before>"
			"struct s *p = *(void**)v; long x = p->a[1];</before></advice></flows>",
			"array subscripts are not supported");
}
