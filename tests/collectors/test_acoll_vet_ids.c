/*
 * The agent collector's judge of flow ids (collectors/acoll_vet.c) on what
 * an honest agent publishes: an id used again, whose next flow's records
 * come before its beginning (another thread's lane), and ids that leave the
 * domain through a ring and are never quit there.  Neither is a lie; the
 * records after an end that no beginning explains still are.  The judge is
 * driven directly, records in the order an agent would publish them; a lie
 * is counted once it stood a second unforgiven (settle()), so that the
 * counts only grow.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "collectors/acoll_priv.h"
#include "xflow/collector.h"
#include "xflow/record.h"

/* Sites of the plan below: a plain one, one where an id leaves through a
 * ring header, one where it arrives, and one whose roles are not known. */
enum { PLAIN, SENDS, RECEIVES, UNKNOWN, NSITES };
static const uint8_t roles[NSITES] = {
	[PLAIN] = XFLOW_SITE_ROLES_KNOWN,
	[SENDS] = XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_SENDS,
	[RECEIVES] = XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_RECEIVES,
	[UNKNOWN] = 0,
};

static struct acoll_vet v;

static void setup(void)
{
	cr_assert_eq(acoll_vet_init(&v, 0, 0), 0);
	v.roles = roles;
	v.nroles = NSITES;
}

static void teardown(void)
{
	acoll_vet_fini(&v);
}

/* A record of @id at @site with @flags, stamped @t ns. */
static void rec(uint64_t id, uint32_t site, unsigned flags, uint64_t t)
{
	struct xflow_record r;
	memset(&r, 0, sizeof(r));
	r.version = XFLOW_RECORD_VERSION;
	r.flow_id = id;
	r.site_id = site;
	r.flags = (uint16_t)flags;
	acoll_vet_flow(&v, &r, t);
}

/* Everything claimed counted, unless forgiven by now. */
static void settle(void)
{
	acoll_vet_settle(&v, UINT64_MAX);
}

#define ARRIVES (XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_TRUNCATED_ID)
#define MS 1000000u

TestSuite(vet_ids, .init = setup, .fini = teardown);

/* dom0 in the demo: a truncated id arrives (thread A), is quit (thread
 * B), and a thread C records it in between; a second later the id's 12
 * bits come round again, and C's lane is published before A's. */
Test(vet_ids, an_id_used_again_whose_records_come_before_its_beginning)
{
	for (uint64_t round = 0; round < 3; round++) {
		uint64_t t = round * 1000 * MS;
		rec(7, RECEIVES, ARRIVES, t);
		rec(7, PLAIN, XFLOW_REC_QUIT, t + 3 * MS);
		/* C's records, stamped between, published last... */
		rec(7, PLAIN, 0, t + 1 * MS);
		rec(7, PLAIN, 0, t + 2 * MS);
	}
	/* ...or first, and with the QUIT too: the next flow's records
	 * before anything of its beginning. */
	uint64_t t = 3000 * MS;
	rec(7, PLAIN, 0, t + 1 * MS);
	rec(7, PLAIN, XFLOW_REC_QUIT, t + 3 * MS);
	rec(7, RECEIVES, ARRIVES, t);
	settle();
	cr_expect_eq(v.lies.after_end, 0, "after_end %lu", (unsigned long)v.lies.after_end);
	cr_expect_eq(v.lies.never_started, 0);
	/* That flow ended at its QUIT, not at its beginning: a record after
	 * it, with no beginning of its own, is a lie. */
	rec(7, PLAIN, 0, t + 4 * MS);
	settle();
	cr_expect_eq(v.lies.after_end, 1, "a record after the late QUIT");
}

/* What no beginning explains stays a lie: records after an end, and a
 * beginning stamped after them (a new flow, not theirs). */
Test(vet_ids, records_after_an_end_that_no_beginning_explains)
{
	rec(9, PLAIN, XFLOW_REC_START, 0);
	rec(9, PLAIN, XFLOW_REC_QUIT, 1 * MS);
	rec(9, PLAIN, 0, 2 * MS);
	rec(9, PLAIN, 0, 3 * MS);
	rec(9, PLAIN, XFLOW_REC_START, 5 * MS);
	settle();
	cr_expect_eq(v.lies.after_end, 2, "after_end %lu", (unsigned long)v.lies.after_end);
	/* A beginning stamped before the end it would explain is not it. */
	rec(11, PLAIN, XFLOW_REC_START, 10 * MS);
	rec(11, PLAIN, XFLOW_REC_QUIT, 12 * MS);
	rec(11, PLAIN, 0, 13 * MS);
	rec(11, PLAIN, XFLOW_REC_START, 11 * MS);
	settle();
	cr_expect_eq(v.lies.after_end, 3, "after_end %lu", (unsigned long)v.lies.after_end);
}

/* The guest in the demo: every flow starts here and leaves through the
 * ring; none is quit here.  Kept live, the first VET_IDS of them filled
 * the table and every flow after was counted as never started. */
Test(vet_ids, ids_that_leave_through_a_ring_do_not_fill_the_table)
{
	const uint64_t flows = 3 * 16384;
	for (uint64_t f = 0; f < flows; f++) {
		uint64_t id = 2 * f + 1, t = f * 10000;
		rec(id, PLAIN, XFLOW_REC_START, t);
		rec(id, PLAIN, 0, t + 1000);
		/* Every third by a keyed OUT, the rest through header bits. */
		if (f % 3 == 0)
			rec(id, PLAIN, XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_KEYED, t + 2000);
		else
			rec(id, SENDS, XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_TRUNCATED_ID, t + 2000);
	}
	settle();
	cr_expect_eq(v.lies.never_started, 0, "never_started %lu", (unsigned long)v.lies.never_started);
	cr_expect_eq(v.lies.after_end, 0);
	cr_expect_eq(v.ids.live, 4096, "only the ended ids kept: %zu", v.ids.live);
}

/* After an id left, what its domain still records of it (a copy kept for
 * retransmission, its free) is not judged; its START published after the
 * send is forgiven; a beginning after it left is its next flow. */
Test(vet_ids, after_an_id_left)
{
	rec(21, SENDS, XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN, 2 * MS); /* before its START */
	rec(21, PLAIN, XFLOW_REC_START, 1 * MS);
	settle();
	cr_expect_eq(v.lies.never_started, 0, "its START, published after the send");
	rec(21, PLAIN, 0, 3 * MS);
	rec(21, PLAIN, XFLOW_REC_QUIT, 4 * MS);
	settle();
	cr_expect_eq(v.lies.after_end, 0, "records after it left: not judged");
	rec(21, PLAIN, XFLOW_REC_START, 10 * MS);
	rec(21, PLAIN, XFLOW_REC_QUIT, 11 * MS);
	rec(21, PLAIN, 0, 12 * MS);
	settle();
	cr_expect_eq(v.lies.after_end, 1, "its next flow, quit, is judged again");
}

/* Where a site's roles do not say, a ring record of a live id is it
 * leaving, and of an id not live here one arriving. */
Test(vet_ids, roles_not_known)
{
	rec(31, PLAIN, XFLOW_REC_START, 0);
	rec(31, UNKNOWN, XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN, 1 * MS);
	/* Gone: its free here and a record after it are not judged (had it
	 * stayed live, the QUIT would end it and the record be a lie). */
	rec(31, PLAIN, XFLOW_REC_QUIT, 2 * MS);
	rec(31, PLAIN, 0, 3 * MS);
	settle();
	cr_expect_eq(v.lies.after_end, 0, "after_end %lu", (unsigned long)v.lies.after_end);
	rec(33, UNKNOWN, ARRIVES, 3 * MS);
	rec(33, PLAIN, 0, 4 * MS);
	rec(33, PLAIN, XFLOW_REC_QUIT, 5 * MS);
	settle();
	cr_expect_eq(v.lies.never_started, 0, "an arrival begins its id");
	/* A site known to receive: its record always begins the id. */
	rec(35, PLAIN, XFLOW_REC_START, 6 * MS);
	rec(35, RECEIVES, ARRIVES, 7 * MS);
	rec(35, PLAIN, 0, 8 * MS);
	settle();
	cr_expect_eq(v.lies.after_end, 0);
	cr_expect_eq(v.lies.never_started, 0);
}

/* A flow whose START never came, and the id's next flow, begun properly:
 * one lie, the first's, counted once. */
Test(vet_ids, a_lie_of_one_flow_is_not_the_next_ones)
{
	rec(51, PLAIN, 0, 1 * MS);
	rec(51, PLAIN, XFLOW_REC_QUIT, 2 * MS);
	rec(51, PLAIN, XFLOW_REC_START, 5 * MS);
	rec(51, PLAIN, 0, 6 * MS);
	settle();
	cr_expect_eq(v.lies.never_started, 1, "never_started %lu", (unsigned long)v.lies.never_started);
	rec(51, PLAIN, XFLOW_REC_QUIT, 7 * MS);
	rec(51, PLAIN, 0, 8 * MS);
	settle();
	cr_expect_eq(v.lies.never_started, 1, "never_started %lu", (unsigned long)v.lies.never_started);
	cr_expect_eq(v.lies.after_end, 1, "the next flow's own end is judged: %lu", (unsigned long)v.lies.after_end);
}

/* A lie is counted once it stood a second of the monitor's reads
 * unforgiven, and what comes after does not take it back: the counts,
 * shown and exported as counters, only grow. */
Test(vet_ids, a_lie_is_counted_once_it_stood_and_never_taken_back)
{
	const uint64_t second = 1000000000u;
	acoll_vet_read_begin(&v, 0, 0);
	rec(41, PLAIN, 0, 2 * MS);                    /* before any START */
	rec(43, PLAIN, XFLOW_REC_START, 0);
	rec(43, PLAIN, XFLOW_REC_QUIT, 1 * MS);
	rec(43, PLAIN, 0, 2 * MS);                    /* after its QUIT */
	rec(43, PLAIN, 0, 3 * MS);
	acoll_vet_read_begin(&v, second - 1, 0);
	cr_expect_eq(v.lies.never_started, 0, "not yet: its START may still come");
	cr_expect_eq(v.lies.after_end, 0, "not yet: its next beginning may still come");
	acoll_vet_read_begin(&v, second, 0);
	cr_expect_eq(v.lies.never_started, 1);
	cr_expect_eq(v.lies.after_end, 2);
	/* Too late to forgive: counted as they stand. */
	rec(41, PLAIN, XFLOW_REC_START, 1 * MS);
	rec(43, PLAIN, XFLOW_REC_START, 1 * MS + 1);
	settle();
	cr_expect_eq(v.lies.never_started, 1);
	cr_expect_eq(v.lies.after_end, 2);
	/* A claim forgiven within the second is never counted. */
	rec(45, PLAIN, 0, 2 * MS);
	rec(45, PLAIN, XFLOW_REC_START, 1 * MS);
	settle();
	cr_expect_eq(v.lies.never_started, 1);
}
