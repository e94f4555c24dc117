/*
 * Event channels between simulated domains.
 *
 * A stand-in for Xen's interdomain event channels with the same semantics,
 * for domains that are processes sharing one memfd:
 *
 *  - Each channel has two ends (0 = the frontend's port in the guest, 1 = the
 *    backend's port in dom0).  Each end has a pending bit and a mask bit in
 *    shared memory (struct evtchn_shared, in the guest's shared_info page)
 *    and an eventfd that stands for the upcall into that domain.
 *  - notify_remote_via_evtchn() sets the remote end's pending bit.  Only the
 *    0 -> 1 transition of an unmasked port raises an upcall (one eventfd
 *    write), so any number of notifications sent before the receiver runs
 *    coalesce into one, as they do in Xen.
 *  - A masked port accumulates its pending bit silently; evtchn_unmask()
 *    re-raises the upcall if the bit is set, as Xen's EVTCHNOP_unmask does.
 *  - The receiver's upcall handler calls evtchn_ack() before looking at its
 *    rings: it consumes the eventfd and clears the pending bit, so a
 *    notification sent while the handler runs raises a new upcall.
 *
 * Whether a notification is needed at all is the rings' business: callers use
 * RING_PUSH_*_AND_CHECK_NOTIFY and notify only when it says so.
 *
 * All functions are safe to call from any thread of either domain.  The
 * eventfds are borrowed: the caller owns and closes them.
 */
#ifndef SIM_EVTCHN_H
#define SIM_EVTCHN_H

#include <stdatomic.h>
#include <stdbool.h>

/* One channel's state, shared by both domains. */
struct evtchn_shared {
	atomic_uint pending[2];
	atomic_uint mask[2];
};

/* One end of a channel, private to the process that owns that end. */
struct evtchn {
	struct evtchn_shared *sh;
	int end;       /* 0 frontend, 1 backend */
	int local_fd;  /* eventfd of our upcall */
	int remote_fd; /* eventfd of the other end's upcall */
};

/* Binds @ch to end @end of the shared channel @sh.  Returns 0 or -EINVAL. */
int evtchn_bind(struct evtchn *ch, struct evtchn_shared *sh, int end,
		int local_fd, int remote_fd);

/* Raises the remote end's pending bit and upcall (see above). */
void notify_remote_via_evtchn(struct evtchn *ch);

/*
 * Acknowledges an upcall: drains the eventfd without blocking and clears our
 * pending bit.  Returns true when the bit was set (there may be work).
 */
bool evtchn_ack(struct evtchn *ch);

/* Masks our port: notifications only set the pending bit. */
void evtchn_mask(struct evtchn *ch);

/* Unmasks our port; raises an upcall at once if a notification is pending. */
void evtchn_unmask(struct evtchn *ch);

/* The file descriptor to poll() for upcalls (readable when one is raised). */
static inline int evtchn_fd(const struct evtchn *ch)
{
	return ch->local_fd;
}

#endif
