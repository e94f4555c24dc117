/*
 * The agent collector's judge of what a guest's records claim
 * (collectors/acoll_priv.h): an agent is another domain's program, and its
 * records are its word.  Each lie it can tell is counted by kind
 * (struct xflow_domain_lies); those that would move other domains' figures
 * are refused here, before the model sees them:
 *
 *   another domain's id   the model scopes flows, hops and handoffs by
 *                         domain: such a record would be another's;
 *   a time in the future  the model's reorder window and expiry follow the
 *                         newest time: one such record would release every
 *                         domain's pending records early and make the next
 *                         ones late;
 *   a time long past      nothing an agent recorded for us is older than
 *                         our previous read of it by more than VET_PAST_NS;
 *   a flood               over the rate= option, a token bucket per agent,
 *                         so that one agent cannot take the read budget.
 *
 * A STATS reply's counts are judged too: summed with other domains' into
 * each aspect's hits, drops and faults, a guest's absurd or shrinking
 * counts would move what every domain's part of them shows (acoll_vet_stats).
 *
 * Flow ids are judged, not refused: a record of an id the agent never
 * started, or of one after its QUIT, is what an honest agent sends once a
 * full ring dropped a START or a QUIT, and the model keeps it as a partial
 * flow of its own domain.  The ids are kept per agent in a flow-id table
 * (xflow/flowid.h: the id as the key, its state as the value), its ended
 * ones at most VET_ENDED_KEPT, forgotten oldest first; an agent with more
 * live flows than VET_IDS has the excess counted as never started.  An id
 * ends by its QUIT or by leaving the domain through a ring: the sending
 * side never quits it, and kept live it would fill the table in seconds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/acoll_priv.h"
#include "xflow/clock.h"
#include "xflow/flowid.h"

/* A record stamped this far before our previous read of its agent (or
 * before we connected) is a lie: an agent publishes what it records within
 * its idle flush, a fraction of a second.  A monitor that was stopped reads
 * the backlog as newer than its previous read, so it is not judged. */
#define VET_PAST_NS (UINT64_C(60) * 1000000000u)
/* A record may be this far after our clock (the read takes time). */
#define VET_FUTURE_NS UINT64_C(1000000000)
/* A clock bound not known is taken as the Xen placement's own skew. */
#define VET_BOUND_MAX (UINT64_C(3600) * 1000000000u)
/* Flow ids judged per agent, and ended ones remembered. */
#define VET_IDS 16384
#define VET_ENDED_KEPT 4096
/* A flow-id lie is counted once it stood this long unforgiven: the rest of
 * what an honest agent published out of order comes with its next drain,
 * milliseconds later (xflow-agent(8)).  At most VET_CLAIMS wait; one more
 * counts the oldest. */
#define VET_SETTLE_NS UINT64_C(1000000000)
#define VET_CLAIMS 4096

/* The value of an id in the table (never 0: that is "absent"): live,
 * doubted (a record came before any START: never_started claimed, the
 * claim withdrawn if its START comes after all), or ended, 3 + its place
 * in the ring of ended ids, which keeps when it ended. */
enum { VET_LIVE = 1, VET_DOUBTED = 2, VET_ENDED0 = 3 };

int acoll_vet_init(struct acoll_vet *v, uint64_t rate, uint64_t now)
{
	memset(v, 0, sizeof(*v));
	v->rate = rate;
	v->burst = rate / 4 > 1024 ? rate / 4 : 1024;
	v->tokens = v->burst;
	v->refill_ns = now;
	v->floor_ns = now;
	v->stats_ns = now;
	v->now = now;
	return 0;
}

void acoll_vet_fini(struct acoll_vet *v)
{
	if (v->ids_ready)
		xflow_flowtab_fini(&v->ids);
	free(v->ended);
	free(v->claims);
	v->ids_ready = false;
	v->ended = NULL;
	v->claims = NULL;
}

/* The table, made at the first record that needs it: an agent that only
 * greets costs nothing. */
static bool ids_ready(struct acoll_vet *v)
{
	if (v->ids_ready)
		return true;
	if (v->ids_failed)
		return false;
	v->ended = calloc(VET_ENDED_KEPT, sizeof(*v->ended));
	v->claims = calloc(VET_CLAIMS, sizeof(*v->claims));
	if (!v->ended || !v->claims || xflow_flowtab_init(&v->ids, VET_IDS)) {
		free(v->ended);
		free(v->claims);
		v->ended = NULL;
		v->claims = NULL;
		v->ids_failed = true;
		return false;
	}
	v->ids_ready = true;
	return true;
}

/* @id's key in the table: an agent's ids run 1, 3, 5... (xflow/flowid.h),
 * so consecutive ones take neighbouring slots, where a hashed key cost a
 * cache miss at each flow's start.  One id of each kind but 0 has no key
 * (it is judged never started at each record). */
static uint64_t id_key(const struct acoll_vet *v, uint16_t kind, uint64_t id)
{
	return xflow_flowtab_key_of_number(&v->ids, kind, id >> 1 | (id & 1) << (XFLOW_FLOWID_BITS - 1));
}

/* Ended id @e is left for good (forgotten, or its id moved on): what it
 * still claims can be forgiven no more, and is counted now (its claims
 * then find it gone). */
static void ended_settle(struct acoll_vet *v, struct acoll_vet_id *e)
{
	v->lies.never_started += e->doubted;
	v->lies.after_end += e->late;
	e->doubted = false;
	e->late = 0;
}

/* @id of @kind ended at @t (@sent: it left through a ring): remembered,
 * the oldest ended one forgotten.  false: not kept (the table is full of
 * live ids). */
static bool id_ended(struct acoll_vet *v, uint16_t kind, uint64_t id, uint64_t t, bool doubted, bool sent)
{
	uint32_t at = v->ended_next;
	struct acoll_vet_id *slot = &v->ended[at];
	if (slot->id && xflow_flowtab_get(&v->ids, slot->kind, id_key(v, slot->kind, slot->id)) == VET_ENDED0 + at) {
		ended_settle(v, slot);
		xflow_flowtab_remove(&v->ids, slot->kind, id_key(v, slot->kind, slot->id));
	}
	*slot = (struct acoll_vet_id){ .kind = kind, .id = id, .t = t, .doubted = doubted, .sent = sent };
	v->ended_next = (at + 1) % VET_ENDED_KEPT;
	return xflow_flowtab_register(&v->ids, kind, id_key(v, kind, id), VET_ENDED0 + at) == 0;
}

/* Count the oldest claim, unless it was forgiven: its id no longer
 * doubted, or no longer late in the same ended slot. */
static void settle_one(struct acoll_vet *v)
{
	struct acoll_vet_claim *c = &v->claims[v->claim_first];
	v->claim_first = (v->claim_first + 1) % VET_CLAIMS;
	v->nclaims--;
	uint64_t key = id_key(v, c->kind, c->id);
	uint64_t state = xflow_flowtab_get(&v->ids, c->kind, key);
	struct acoll_vet_id *e = state >= VET_ENDED0 ? &v->ended[state - VET_ENDED0] : NULL;
	if (c->late) {
		if (state == VET_ENDED0 + c->slot && e->late) {
			v->lies.after_end += e->late;
			e->late = 0;
			e->late_t = e->late_end_t = 0;
		}
	} else if (state == VET_DOUBTED) {
		/* A lie: the id lives on as any other, its START no longer
		 * awaited. */
		v->lies.never_started++;
		xflow_flowtab_register(&v->ids, c->kind, key, VET_LIVE);
	} else if (e && e->doubted) {
		v->lies.never_started++;
		e->doubted = false;
	}
}

/* @r's id claimed a lie (@late: after_end, of ended slot @slot). */
static void claim(struct acoll_vet *v, const struct xflow_record *r, bool late, uint32_t slot)
{
	if (v->nclaims == VET_CLAIMS)
		settle_one(v);
	v->claims[(v->claim_first + v->nclaims++) % VET_CLAIMS] =
		(struct acoll_vet_claim){ .at = v->now, .id = r->flow_id, .kind = r->flow_kind, .late = late, .slot = slot };
}

void acoll_vet_settle(struct acoll_vet *v, uint64_t now)
{
	while (v->nclaims && (now == UINT64_MAX || v->claims[v->claim_first].at + VET_SETTLE_NS <= now))
		settle_one(v);
}

/* Whether @r is its id leaving the domain: the sender's record of a ring
 * handoff (xflow/record.h).  A keyed OUT says so; an unkeyed one is
 * CROSS_DOMAIN as the receiver's record is, told apart by its site's
 * roles, or, where they do not tell (not known, or both), by the id being
 * live here (LEAVES_IF_LIVE): an arrival's id is new here. */
enum { LEAVES_NOT, LEAVES_IF_LIVE, LEAVES };
static int id_leaves(const struct acoll_vet *v, const struct xflow_record *r)
{
	if (!(r->flags & XFLOW_REC_CROSS_DOMAIN))
		return LEAVES_NOT;
	if (r->flags & XFLOW_REC_KEYED)
		return r->flags & XFLOW_REC_START ? LEAVES_NOT : LEAVES;
	unsigned roles = r->site_id < v->nroles ? v->roles[r->site_id] : 0;
	if (!(roles & XFLOW_SITE_ROLES_KNOWN) || (roles & XFLOW_SITE_SENDS && roles & XFLOW_SITE_RECEIVES))
		return LEAVES_IF_LIVE;
	return roles & XFLOW_SITE_SENDS ? LEAVES : LEAVES_NOT;
}

/*
 * Judge @r's flow id, stamped @t (given on whatever is said).  Records
 * come in the order the agent published them, which is not their time
 * order (each thread's lane is published in batches): a record before its
 * flow's START is doubted, and forgiven when the START comes; a record
 * after the id ended is a lie only if it is stamped after that, and no
 * beginning of the id, stamped between the end and it, comes later.  An
 * id is used again: a truncated one that crossed a ring header (its bits
 * wrap every few thousand flows), or any id of a program that outlives
 * 2^47 flows; its next flow's beginning may be in one thread's lane and
 * its next records in another's, published first.  An id that leaves
 * through a ring ends here as by a QUIT, and nothing after that is
 * judged: the rest of its flow is the receiving domain's, and a copy of
 * it (xin_copy) may still be recorded here.
 */
void acoll_vet_flow(struct acoll_vet *v, const struct xflow_record *r, uint64_t t)
{
	if (!r->flow_id || !ids_ready(v))
		return;
	int leaves = id_leaves(v, r);
	bool quits = r->flags & XFLOW_REC_QUIT;
	/* An id is begun here by its START, by arriving from another domain
	 * (header bits or a keyed IN: its first record here says so), or by a
	 * split, whose fragment gets an id of its own. */
	bool begins = leaves != LEAVES && (r->flags & (ACOLL_VET_ID_FLAGS & ~XFLOW_REC_QUIT));
	/* The id of the record before, live in the table: a record that
	 * neither begins nor ends it changes nothing (below), and a flow's
	 * records mostly come together. */
	if (v->live_id == r->flow_id && v->live_kind == r->flow_kind && !begins && !quits && !leaves)
		return;
	v->live_id = 0;
	uint64_t state = xflow_flowtab_get(&v->ids, r->flow_kind, id_key(v, r->flow_kind, r->flow_id));
	struct acoll_vet_id *e = state >= VET_ENDED0 ? &v->ended[state - VET_ENDED0] : NULL;
	bool doubted = state == VET_DOUBTED || (e && e->doubted);
	bool doubt = false; /* a never_started claimed here */
	if (leaves == LEAVES_IF_LIVE) {
		leaves = state == VET_LIVE || state == VET_DOUBTED ? LEAVES : LEAVES_NOT;
		begins = !leaves;
	}
	if (begins && e && e->late && t > e->t && t <= e->late_t) {
		/* The id's next flow begins here, before the records claimed
		 * after its last one's end: they were this flow's, published
		 * first. */
		e->late = 0;
		if (e->late_end_t) {
			uint64_t end = e->late_end_t;
			bool sent = e->late_end_sent;
			ended_settle(v, e);
			(void)id_ended(v, r->flow_kind, r->flow_id, end, false, sent);
			return;
		}
		doubted = false;
	} else if (begins && doubted && (!e || t <= e->t)) {
		/* Its START came after all, published late: the claim is
		 * withdrawn. */
		if (e) {
			e->doubted = false;
			return;
		}
		doubted = false;
	} else if (e && e->sent) {
		/* It left: what follows here is not judged, but a beginning
		 * after it left, which is the id's next flow. */
		if (!begins || t <= e->t)
			return;
	} else if (!begins && !state) {
		doubt = doubted = true;
	} else if (!begins && e && t > e->t) {
		if (!e->late)
			claim(v, r, true, (uint32_t)(state - VET_ENDED0));
		if (!e->late || t < e->late_t)
			e->late_t = t;
		if (e->late < UINT32_MAX)
			e->late++;
		if ((quits || leaves) && t >= e->late_end_t) {
			e->late_end_t = t;
			e->late_end_sent = leaves && !quits;
		}
		return;
	} else if (e && !begins) {
		return; /* stamped before it ended: published late */
	}
	/* Most records are of a live id, which stays so: no second probe of
	 * the table for them.  A claim is kept with its id, which its START
	 * may still forgive; an id not kept (the table full) cannot be, so
	 * its claim is counted now, as is what an ended id it moves on from
	 * still claims. */
	if (e)
		ended_settle(v, e);
	/* A beginning here is the id's own, whatever its last flow was. */
	doubted = doubted && !begins;
	bool kept = quits || leaves ? id_ended(v, r->flow_kind, r->flow_id, t, doubted, leaves && !quits)
		    : state == (doubted ? VET_DOUBTED : VET_LIVE) ||
		      xflow_flowtab_register(&v->ids, r->flow_kind, id_key(v, r->flow_kind, r->flow_id),
					     doubted ? VET_DOUBTED : VET_LIVE) == 0;
	if (doubt && kept)
		claim(v, r, false, 0);
	else if (doubt)
		v->lies.never_started++;
	if (!kept || quits || leaves)
		return;
	if (!doubted) {
		v->live_id = r->flow_id;
		v->live_kind = r->flow_kind;
	}
}

/* The tokens earned up to @now, @rate a second, at most the burst. */
static void refill(struct acoll_vet *v, uint64_t now)
{
	if (v->rate && now > v->refill_ns) {
		unsigned __int128 add = (unsigned __int128)(now - v->refill_ns) * v->rate / 1000000000u;
		if (add) {
			v->tokens = add >= v->burst - v->tokens ? v->burst : v->tokens + (uint64_t)add;
			v->refill_ns = now;
		}
	}
}

/* One token per record, @rate a second; 0 is no limit. */
static bool within_rate(struct acoll_vet *v, uint64_t now)
{
	if (!v->rate)
		return true;
	refill(v, now);
	if (!v->tokens)
		return false;
	v->tokens--;
	return true;
}

/* The clock bound as judged: one not known is the Xen placement's skew. */
static uint64_t bound_judged(uint64_t bound)
{
	return bound > VET_BOUND_MAX ? XEN_CLOCK_SKEW_NS : bound;
}

void acoll_vet_read_begin(struct acoll_vet *v, uint64_t now, uint64_t bound)
{
	bound = bound_judged(bound);
	/* The times acoll_vet_record() takes, as one range: neither in the
	 * future nor long past. */
	uint64_t hi = now + VET_FUTURE_NS + bound;
	v->read_lo = v->floor_ns > VET_PAST_NS + bound ? v->floor_ns - VET_PAST_NS - bound : 0;
	/* 0 when nothing is both (or, harmlessly, when everything is): every
	 * record then goes to acoll_vet_record(). */
	v->read_span = v->read_lo <= hi ? hi - v->read_lo + 1 : 0;
	v->now = now;
	acoll_vet_settle(v, now);
	/* The read's tokens, earned before it begins (as at its first
	 * record: nothing more is earned at the same time). */
	refill(v, now);
}

enum acoll_verdict acoll_vet_record(struct acoll_vet *v, uint16_t domid, const struct xflow_record *r,
				    uint64_t t, uint64_t now, uint64_t bound)
{
	if (r->domain_id != domid) {
		v->lies.other_domain++;
		return ACOLL_REFUSED;
	}
	bound = bound_judged(bound);
	if (t > now + VET_FUTURE_NS + bound) {
		v->lies.time_future++;
		return ACOLL_REFUSED;
	}
	if (v->floor_ns > VET_PAST_NS + bound && t < v->floor_ns - VET_PAST_NS - bound) {
		v->lies.time_past++;
		return ACOLL_REFUSED;
	}
	if (!within_rate(v, now)) {
		v->lies.flood++;
		return ACOLL_REFUSED;
	}
	acoll_vet_flow(v, r, t);
	return ACOLL_GIVEN;
}

void acoll_vet_read_done(struct acoll_vet *v, uint64_t now)
{
	if (now > v->floor_ns)
		v->floor_ns = now;
}

/* More hits (or drops, faults) than this a second are more than any
 * guest's vCPUs can make through a hook costing a few nanoseconds (2^34,
 * 17 G/s); a count of 2^63 would take 17 years at it. */
#define VET_STATS_RATE_SHIFT 34

/* Whether a counter may have gone from @was to @now in @secs seconds
 * (counting the one the reply began in): an agent's counters only grow
 * while it lives, and by at most the rate above. */
static bool count_plausible(uint64_t was, uint64_t now, uint64_t secs)
{
	if (now < was)
		return false;
	uint64_t most = secs + 1 >= (UINT64_C(1) << (64 - VET_STATS_RATE_SHIFT)) ? UINT64_MAX
										 : (secs + 1) << VET_STATS_RATE_SHIFT;
	return now - was <= most;
}

/*
 * An agent's advice counts restart with each plan, which each connection
 * sends (acoll_vet_init begins the time they may grow in), so its first
 * reply is judged against zero; so is a reply with another number of
 * advice, by the time since the last counts taken: a guest changing that
 * number claims no more than it could have hit.  Its ring's losses may
 * predate this connection (the ring is the agent's, filled while no
 * monitor read it): only judged from the counts taken on.
 */
enum acoll_verdict acoll_vet_stats(struct acoll_vet *v, const struct xflow_ctl_stats *s,
				   const struct xflow_ctl_advice_stats *was, uint32_t nwas, uint64_t was_dropped,
				   uint64_t now)
{
	uint64_t secs = now > v->stats_ns ? (now - v->stats_ns) / 1000000000u : 0;
	bool same_plan = v->stats_taken && nwas == s->nadvice;
	bool ok = !v->stats_taken || count_plausible(was_dropped, s->ring_dropped, secs);
	for (uint32_t i = 0; ok && i < s->nadvice; i++) {
		struct xflow_ctl_advice_stats z = { 0 };
		const struct xflow_ctl_advice_stats *w = same_plan ? &was[i] : &z, *n = &s->advice[i];
		ok = count_plausible(w->hits, n->hits, secs) && count_plausible(w->drops, n->drops, secs) &&
		     count_plausible(w->faults, n->faults, secs);
	}
	if (!ok) {
		v->lies.stats++;
		return ACOLL_REFUSED;
	}
	v->stats_taken = true;
	v->stats_ns = now;
	return ACOLL_GIVEN;
}
