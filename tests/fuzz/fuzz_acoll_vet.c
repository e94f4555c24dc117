/*
 * Fuzz the agent collector's judge of a guest's records
 * (collectors/acoll_vet.c), which every record of every agent passes:
 * whatever a guest sends, in whatever order and with whatever times, each
 * record is given or refused exactly once, a refused record is counted
 * as one lie, the flow-id counts never go back (a lie is counted once it
 * stood unforgiven) nor count more than the records given, and nothing is
 * read or written out of bounds.
 *
 * Input: 16 bytes a record, { u8 flags, u8 kind (mod 4), u8 domain (mod 3),
 * u8 site, u32 id (mod 4096: ids meet again), i64 time (ms from the start,
 * signed, as the guest claims it) }, one after another; the monitor's
 * clock steps by site % 8 ms a record, and a read begins at a site with
 * bit 2 set.  The plan's sites are plain, sending, receiving, or of roles
 * not known, by site % 4.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/acoll_priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define T0 (UINT64_C(1) << 40) /* a monitor's clock some hours after boot */

static const uint8_t roles[4] = { XFLOW_SITE_ROLES_KNOWN, XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_SENDS,
				  XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_RECEIVES, 0 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct acoll_vet v;
	uint64_t now = T0;
	/* A small rate, so that floods happen too. */
	acoll_vet_init(&v, 2000, now);
	v.roles = roles;
	v.nroles = 4;
	uint64_t given = 0, refused = 0;
	for (size_t at = 0; at + 16 <= size; at += 16) {
		const uint8_t *p = data + at;
		struct xflow_record r;
		memset(&r, 0, sizeof(r));
		r.flags = p[0] & XFLOW_REC_ALL_FLAGS;
		r.flow_kind = p[1] % 4;
		r.domain_id = p[2] % 3;
		r.site_id = p[3];
		uint32_t id;
		int64_t ms;
		memcpy(&id, p + 4, 4);
		memcpy(&ms, p + 8, 8);
		r.flow_id = id % 4096;
		ms %= INT64_C(1) << 24; /* within hours either way */
		uint64_t t = (uint64_t)((int64_t)T0 + ms * 1000000);
		now += (uint64_t)(p[3] % 8) * 1000000u;
		r.site_id %= 4;
		if (p[3] & 4)
			acoll_vet_read_begin(&v, now, p[3] & 1 ? 0 : UINT64_MAX);
		struct xflow_domain_lies before = v.lies;
		enum acoll_verdict d = acoll_vet_record(&v, 1, &r, t, now, p[3] & 1 ? 0 : UINT64_MAX);
		uint64_t refused_before = before.other_domain + before.time_past + before.time_future + before.flood;
		uint64_t refused_after = v.lies.other_domain + v.lies.time_past + v.lies.time_future + v.lies.flood;
		if (d == ACOLL_REFUSED) {
			refused++;
			if (refused_after != refused_before + 1)
				abort();
		} else {
			given++;
			if (refused_after != refused_before)
				abort();
		}
		if (v.lies.never_started < before.never_started || v.lies.after_end < before.after_end)
			abort();
		if (p[3] & 2)
			acoll_vet_read_done(&v, now);
	}
	acoll_vet_settle(&v, UINT64_MAX);
	if (v.lies.never_started + v.lies.after_end > given)
		abort();
	if (given + refused != size / 16)
		abort();
	acoll_vet_fini(&v);
	return 0;
}
