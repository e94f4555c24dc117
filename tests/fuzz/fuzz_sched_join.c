/*
 * Fuzz the scheduler join (tui/sched_join.h): any bytes are scheduler
 * events and hop splits, hostile ones included (unknown kinds and states,
 * pCPUs and vCPUs past the limits, times going back), on small timelines
 * that overflow; each split adds up to its hop exactly, its reasons to
 * its unknown, and its culprit's wait is within its wait, without a
 * crash, a leak or unbounded memory.
 *
 * Input: 16-byte items.  Byte 0 bit 7 set: a split, the rest its ends
 * (time offsets back from the newest event, domains, CPUs, a woven
 * notification); else an event:
 * kind, pcpu, from, to, dom, vcpu, dom2, vcpu2 (a byte each), arg (2
 * bytes), time delta (4 bytes, signed: events may go back).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tui/sched_join.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xft_sj_limits l = { .max_vcpus = 6, .per_vcpu = 8, .per_vcpu_hc = 4, .max_pcpus = 4 };
	struct xft_sj *j;
	if (xft_sj_new(&l, &j))
		abort();
	uint64_t t = 1u << 20;
	for (size_t o = 0; o + 16 <= size; o += 16) {
		const uint8_t *p = data + o;
		if (p[0] & 0x80) {
			uint64_t back0 = u32(p + 1) % (1u << 22), len = u32(p + 5) % (1u << 22);
			struct xft_sj_end a = { t > back0 ? t - back0 : 0, p[9] % 8, (int8_t)p[10] % 8 };
			struct xft_sj_end b = { a.t_ns + len, p[11] % 8, (int8_t)p[12] % 8 };
			/* Byte 13 bit 1: the sender's woven notification, at byte 14
			 * times 2^15 ns into the hop (or past it: clamped). */
			a.has_tn = (p[13] & 2) != 0;
			a.tn_ns = a.t_ns + ((uint64_t)p[14] << 15);
			struct xft_split s;
			struct xft_culprit c;
			xft_sj_split(j, &a, &b, p[13] & 1, &s, &c);
			uint64_t sum = 0, why = 0;
			for (unsigned i = 0; i < XFT_NSTATES; i++)
				sum += s.ns[i];
			for (unsigned r = 0; r < XFT_UNK_NREASONS; r++)
				why += s.unknown_ns[r];
			if (sum != b.t_ns - a.t_ns || c.wait_ns > s.ns[XFT_ST_WAIT] || why != s.ns[XFT_ST_UNKNOWN])
				abort();
			continue;
		}
		int32_t delta = (int32_t)u32(p + 12) % (1 << 16);
		t = delta < 0 && (uint64_t)-delta > t ? 0 : t + (uint64_t)(int64_t)delta;
		struct xflow_sched_event e = { .t_ns = t, .kind = p[0] % 6, .pcpu = p[1] % 6, .from = p[2] % 6,
					       .to = p[3] % 6, .dom = p[4] % 9, .vcpu = p[5] % 3, .dom2 = p[6] % 9,
					       .vcpu2 = p[7] % 3, .arg = (uint32_t)p[8] | (uint32_t)p[9] << 8 };
		if (p[4] == 0xff)
			e.dom = 32767; /* the idle domain */
		xft_sj_event(j, &e);
	}
	xft_sj_free(j);
	return 0;
}
