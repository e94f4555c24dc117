/*
 * Record encoding and validation.  See xflow/record.h for the contract.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "xflow/record.h"

/* The wire layout is the ABI: any change here is a new XFLOW_RECORD_VERSION. */
static_assert(sizeof(struct xflow_record) == XFLOW_RECORD_SIZE, "record size is ABI");
static_assert(offsetof(struct xflow_record, flow_id) == 8, "record layout is ABI");
static_assert(offsetof(struct xflow_record, site_id) == 16, "record layout is ABI");
static_assert(offsetof(struct xflow_record, flags) == 24, "record layout is ABI");
static_assert(offsetof(struct xflow_record, version) == 26, "record layout is ABI");
static_assert(offsetof(struct xflow_record, thread_id) == 28, "record layout is ABI");
static_assert(offsetof(struct xflow_record, cpu_plus1) == 36, "record layout is ABI");
static_assert(offsetof(struct xflow_record, data) == 40, "record layout is ABI");
static_assert(XFLOW_RECORD_SIZE % 8 == 0, "records keep 64-bit alignment in a ring");

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "xflowtop's wire format is little-endian; add byte swapping for this host"
#endif

void xflow_record_loss_note(struct xflow_record *out, uint16_t domain, uint32_t thread_id, uint32_t first,
			    uint32_t last, uint64_t t)
{
	memset(out, 0, sizeof(*out));
	out->timestamp = t;
	out->flow_kind = XFLOW_FLOW_KIND_NONE;
	out->domain_id = domain;
	out->flags = XFLOW_REC_SEQ_COUNTS_LOST | XFLOW_REC_LOSS_NOTE;
	out->version = XFLOW_RECORD_VERSION;
	out->thread_id = thread_id;
	/* It stands for the last record lost, so that a consumer following
	 * the producer counts the gap and this one, and the producer's next
	 * record follows without a gap; the first is for a consumer that has
	 * seen nothing of it. */
	out->thread_seq = last;
	out->ndata = 1;
	out->data[0] = first;
}

void xflow_record_encode(const struct xflow_record *r, void *out)
{
	memcpy(out, r, XFLOW_RECORD_SIZE);
}

int xflow_record_decode(const void *in, size_t len, struct xflow_record *out,
			const char **why)
{
	const char *bad = NULL;
	int rc = 0;

	if (len != XFLOW_RECORD_SIZE) {
		bad = "length";
		rc = -EMSGSIZE;
		goto out;
	}
	/* A ring's reader decodes its own copy in place. */
	if (in != out)
		memcpy(out, in, XFLOW_RECORD_SIZE);
	if (xflow_record_plainly_valid(out))
		goto out;
	if (out->version < XFLOW_RECORD_VERSION_MIN || out->version > XFLOW_RECORD_VERSION) {
		bad = "version";
		rc = -EPROTO;
	} else if (out->ndata > XFLOW_RECORD_MAX_DATA) {
		bad = "ndata";
		rc = -EBADMSG;
	} else if (out->flags & ~XFLOW_REC_ALL_FLAGS) {
		bad = "flags";
		rc = -EBADMSG;
	} else if (out->version < 3 && (out->flags & XFLOW_REC_SEQ_COUNTS_LOST)) {
		bad = "flags";
		rc = -EBADMSG;
	} else if (out->version < 4 && (out->flags & XFLOW_REC_LOSS_NOTE)) {
		bad = "flags";
		rc = -EBADMSG;
	} else if ((out->flags & XFLOW_REC_LOSS_NOTE) &&
		   out->flags != (XFLOW_REC_LOSS_NOTE | XFLOW_REC_SEQ_COUNTS_LOST)) {
		/* A note is a number and nothing else: a consumer that took it
		 * for a flow's record, or for a count of its own, would apply
		 * a loss twice. */
		bad = "loss note";
		rc = -EBADMSG;
	} else if ((out->flags & XFLOW_REC_LOSS_NOTE) &&
		   (out->flow_id || out->flow_kind != XFLOW_FLOW_KIND_NONE || out->site_id || out->ndata != 1 ||
		    !xflow_seq_ahead((uint32_t)out->data[0], out->thread_seq) || out->data[0] > UINT32_MAX)) {
		bad = "loss note";
		rc = -EBADMSG;
	} else if (out->flow_id > XFLOW_FLOWID_MAX) {
		bad = "flow_id";
		rc = -EBADMSG;
	} else if (out->version == 1 && out->cpu_plus1 != 0) {
		bad = "reserved";
		rc = -EBADMSG;
	} else if (out->cpu_plus1 > XFLOW_RECORD_MAX_CPU + 1u) {
		bad = "cpu";
		rc = -EBADMSG;
	} else {
		if (xflow_record__data_beyond_ndata(out)) {
			bad = "data beyond ndata";
			rc = -EBADMSG;
		}
	}
out:
	if (why)
		*why = bad;
	return rc;
}
