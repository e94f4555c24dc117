#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "xflow/record.h"

static struct xflow_record valid(void)
{
	struct xflow_record r;
	memset(&r, 0, sizeof(r));
	r.version = XFLOW_RECORD_VERSION;
	r.timestamp = 123456789;
	r.flow_id = 42;
	r.site_id = 7;
	r.flow_kind = 1;
	r.domain_id = 3;
	r.flags = XFLOW_REC_START | XFLOW_REC_CROSS_DOMAIN;
	r.ndata = 3;
	r.data[0] = 0x400123;
	r.data[1] = 99;
	r.data[2] = 42;
	return r;
}

Test(record, wire_layout_is_little_endian_at_fixed_offsets)
{
	struct xflow_record r = valid();
	unsigned char w[XFLOW_RECORD_SIZE];
	xflow_record_encode(&r, w);
	cr_assert_eq(w[0], 123456789 & 0xff);
	cr_assert_eq(w[8], 42);
	cr_assert_eq(w[16], 7);
	cr_assert_eq(w[22], 3);
	cr_assert_eq(w[24], XFLOW_REC_START | XFLOW_REC_CROSS_DOMAIN);
	cr_assert_eq(w[26], XFLOW_RECORD_VERSION);
	cr_assert_eq(w[27], 3);
	cr_assert_eq(w[40], 0x23);
	cr_assert_eq(w[41], 0x01);
}

Test(record, round_trip)
{
	struct xflow_record r = valid(), back;
	unsigned char w[XFLOW_RECORD_SIZE];
	xflow_record_encode(&r, w);
	const char *why = "x";
	cr_assert_eq(xflow_record_decode(w, sizeof(w), &back, &why), 0);
	cr_assert_null(why);
	cr_assert_eq(memcmp(&r, &back, sizeof(r)), 0);
}

static void expect_bad(struct xflow_record r, int err, const char *field)
{
	unsigned char w[XFLOW_RECORD_SIZE];
	struct xflow_record out;
	const char *why = NULL;
	xflow_record_encode(&r, w);
	cr_assert_eq(xflow_record_decode(w, sizeof(w), &out, &why), err, "field %s", field);
	cr_assert_str_eq(why, field);
}

Test(record, every_invalid_field_is_rejected_and_named)
{
	struct xflow_record r;
	r = valid(); r.version = XFLOW_RECORD_VERSION + 1; expect_bad(r, -EPROTO, "version");
	r = valid(); r.version = 0; expect_bad(r, -EPROTO, "version");
	r = valid(); r.ndata = 7; expect_bad(r, -EBADMSG, "ndata");
	r = valid(); r.flags = 1u << 10; expect_bad(r, -EBADMSG, "flags");
	r = valid(); r.flow_id = XFLOW_FLOWID_MAX + 1; expect_bad(r, -EBADMSG, "flow_id");
	r = valid(); r.version = 1; r.cpu_plus1 = 1; expect_bad(r, -EBADMSG, "reserved");
	r = valid(); r.cpu_plus1 = XFLOW_RECORD_MAX_CPU + 2; expect_bad(r, -EBADMSG, "cpu");
	r = valid(); r.data[5] = 1; expect_bad(r, -EBADMSG, "data beyond ndata");
	r = valid(); r.ndata = 6; r.data[5] = 1;
	unsigned char w[XFLOW_RECORD_SIZE];
	struct xflow_record out;
	xflow_record_encode(&r, w);
	cr_assert_eq(xflow_record_decode(w, sizeof(w), &out, NULL), 0, "six values are allowed");
}

/* Every word past ndata, whatever ndata, is checked, and none before it:
 * the decoder masks the words by their index instead of looping from
 * ndata, and an off-by-one there would pass a word or refuse one. */
Test(record, each_word_past_ndata_is_refused_and_each_before_it_kept)
{
	for (unsigned nd = 0; nd <= XFLOW_RECORD_MAX_DATA; nd++) {
		for (unsigned j = 0; j < XFLOW_RECORD_MAX_DATA; j++) {
			for (unsigned bit = 0; bit < 64; bit += 63) {
				struct xflow_record r = valid(), out;
				memset(r.data, 0, sizeof(r.data));
				r.ndata = (uint8_t)nd;
				r.data[j] = UINT64_C(1) << bit;
				const char *why = NULL;
				int rc = xflow_record_decode(&r, sizeof(r), &out, &why);
				if (j < nd)
					cr_assert_eq(rc, 0, "ndata %u, word %u, bit %u refused", nd, j, bit);
				else
					cr_assert(rc == -EBADMSG && why && !strcmp(why, "data beyond ndata"),
						  "ndata %u, word %u, bit %u: %d", nd, j, bit, rc);
			}
		}
	}
}

/* Version 2 says on which CPU the record was written; version 1, which
 * had a reserved zero word there, still decodes, its CPU unknown. */
Test(record, cpu_of_version_2_and_unknown_of_version_1)
{
	unsigned char w[XFLOW_RECORD_SIZE];
	struct xflow_record r = valid(), out;
	r.cpu_plus1 = 4;
	xflow_record_encode(&r, w);
	cr_assert_eq(w[36], 4, "the CPU is at offset 36");
	cr_assert_eq(xflow_record_decode(w, sizeof(w), &out, NULL), 0);
	cr_assert_eq(xflow_record_cpu(&out), 3);
	r.cpu_plus1 = XFLOW_RECORD_MAX_CPU + 1;
	xflow_record_encode(&r, w);
	cr_assert_eq(xflow_record_decode(w, sizeof(w), &out, NULL), 0, "the highest CPU");
	r = valid();
	r.version = 1;
	xflow_record_encode(&r, w);
	cr_assert_eq(xflow_record_decode(w, sizeof(w), &out, NULL), 0, "version 1 is still read");
	cr_assert_eq(xflow_record_cpu(&out), -1);
}

/* Version 3 may say its thread_seq counts lost records too; a record of
 * an earlier version cannot, since that bit had to be zero there. */
Test(record, seq_counts_lost_only_from_version_3)
{
	unsigned char w[XFLOW_RECORD_SIZE];
	struct xflow_record r = valid(), out;
	r.flags |= XFLOW_REC_SEQ_COUNTS_LOST;
	xflow_record_encode(&r, w);
	cr_assert_eq(xflow_record_decode(w, sizeof(w), &out, NULL), 0);
	cr_assert(out.flags & XFLOW_REC_SEQ_COUNTS_LOST);
	r.version = 2;
	expect_bad(r, -EBADMSG, "flags");
	r.version = 1;
	r.cpu_plus1 = 0;
	expect_bad(r, -EBADMSG, "flags");
}

/* A loss note (version 4): the number of its thread's last lost record
 * and nothing else.  An earlier version cannot say it, and a note that
 * also claimed a flow, a site or data would be applied as a record. */
static struct xflow_record note(void)
{
	struct xflow_record r;
	memset(&r, 0, sizeof(r));
	r.version = 4;
	r.timestamp = 5000;
	r.flow_kind = XFLOW_FLOW_KIND_NONE;
	r.domain_id = 3;
	r.flags = XFLOW_REC_SEQ_COUNTS_LOST | XFLOW_REC_LOSS_NOTE;
	r.thread_id = 77;
	r.thread_seq = 41;
	r.ndata = 1;
	r.data[0] = 39; /* 39 to 41 */
	return r;
}

Test(record, a_loss_note_is_a_number_and_nothing_else)
{
	unsigned char w[XFLOW_RECORD_SIZE];
	struct xflow_record r = note(), out;
	xflow_record_encode(&r, w);
	cr_assert_eq(w[25], XFLOW_REC_LOSS_NOTE >> 8 | XFLOW_REC_SEQ_COUNTS_LOST >> 8, "bits 8 and 9 of flags");
	cr_assert_eq(xflow_record_decode(w, sizeof(w), &out, NULL), 0);
	cr_assert_eq(out.flags, XFLOW_REC_SEQ_COUNTS_LOST | XFLOW_REC_LOSS_NOTE);
	cr_assert_eq(out.thread_seq, 41);
	r.version = 3;
	expect_bad(r, -EBADMSG, "flags");
	r = note(); r.flags = XFLOW_REC_LOSS_NOTE; expect_bad(r, -EBADMSG, "loss note");
	r = note(); r.flags |= XFLOW_REC_QUIT; expect_bad(r, -EBADMSG, "loss note");
	r = note(); r.flow_id = 9; expect_bad(r, -EBADMSG, "loss note");
	r = note(); r.flow_kind = 0; expect_bad(r, -EBADMSG, "loss note");
	r = note(); r.site_id = 1; expect_bad(r, -EBADMSG, "loss note");
	r = note(); r.ndata = 0; r.data[0] = 0; expect_bad(r, -EBADMSG, "loss note");
	r = note(); r.ndata = 2; r.data[1] = 1; expect_bad(r, -EBADMSG, "loss note");
	r = note(); r.data[0] = 42; expect_bad(r, -EBADMSG, "loss note");
	r = note(); r.data[0] = 41u - (1u << 31); expect_bad(r, -EBADMSG, "loss note");
	r = note(); r.data[0] = UINT64_C(1) << 32 | 39; expect_bad(r, -EBADMSG, "loss note");
	/* Its first number may be its last (one lost), or wrap below 0. */
	r = note(); r.data[0] = 41; xflow_record_encode(&r, w);
	cr_assert_eq(xflow_record_decode(w, sizeof(w), &out, NULL), 0);
	r = note(); r.thread_seq = 3; r.data[0] = UINT32_MAX - 2; xflow_record_encode(&r, w);
	cr_assert_eq(xflow_record_decode(w, sizeof(w), &out, NULL), 0, "a note across the numbers' wrap");
}

/* Every agent builds its notes with xflow_record_loss_note(): what it
 * builds is the note the decoder accepts, numbered first to last. */
Test(record, a_loss_note_built_is_one_the_decoder_takes)
{
	unsigned char w[XFLOW_RECORD_SIZE];
	struct xflow_record n, out;
	xflow_record_loss_note(&n, 3, 77, 39, 41, 5000);
	struct xflow_record want = note();
	cr_assert_eq(memcmp(&n, &want, sizeof(n)), 0, "the note the decoder's test takes, field for field");
	xflow_record_encode(&n, w);
	cr_assert_eq(xflow_record_decode(w, sizeof(w), &out, NULL), 0);
	xflow_record_loss_note(&n, 3, 0x80000005u, UINT32_MAX - 2, 3, 1);
	xflow_record_encode(&n, w);
	cr_assert_eq(xflow_record_decode(w, sizeof(w), &out, NULL), 0, "across the numbers' wrap");
	cr_assert_eq(out.data[0], UINT32_MAX - 2);
	cr_assert_eq(out.thread_seq, 3);
}

Test(record, wrong_length_is_rejected)
{
	unsigned char w[XFLOW_RECORD_SIZE + 1] = { 0 };
	struct xflow_record out;
	const char *why;
	cr_assert_eq(xflow_record_decode(w, XFLOW_RECORD_SIZE - 1, &out, &why), -EMSGSIZE);
	cr_assert_eq(xflow_record_decode(w, XFLOW_RECORD_SIZE + 1, &out, &why), -EMSGSIZE);
	cr_assert_str_eq(why, "length");
}
