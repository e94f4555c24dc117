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

#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* One channel's state, shared by both domains. */
struct evtchn_shared {
	atomic_uint pending[2];
	atomic_uint mask[2];
	uint32_t domid[2];          /* the domain at each end (set by the launcher) */
	/* For the scheduler model (sim/sched.h): when and from which pCPU the
	 * notification that raised an end's pending bit was sent. */
	_Atomic int64_t sent_ns[2];
	atomic_int sent_pcpu[2];
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

/*
 * Waits for upcalls as poll(2) does on @pfd, one of which is this channel's
 * fd: the event-processing thread's wait.  Without hooks it is poll().
 */
int evtchn_wait(struct evtchn *ch, struct pollfd *pfd, nfds_t nfds, int timeout_ms);

/*
 * What a scheduler model is told about notifications and waits (sim/sched.c
 * provides them; NULL: not provided).  Hooks are called in the thread that
 * notifies or waits, outside any lock of the channel.
 */
struct evtchn_hooks {
	/* Before a notification's pending bit is set: the sender is about to
	 * make its hypercall. */
	void (*notify_begin)(struct evtchn *ch);
	/* The notification raised the remote end's upcall (the 0 -> 1
	 * transition of an unmasked port), which is not yet written. */
	void (*notify_raised)(struct evtchn *ch);
	/* After the notification, raised or not. */
	void (*notify_end)(struct evtchn *ch);
	/* Before and after the wait in evtchn_wait(); @n is poll's result. */
	void (*wait_begin)(struct evtchn *ch);
	void (*wait_end)(struct evtchn *ch, const struct pollfd *pfd, nfds_t nfds, int n);
};

/* Installs @hooks (static, or NULL to remove them) for every channel of
 * this process; call before any thread uses a channel. */
void evtchn_set_hooks(const struct evtchn_hooks *hooks);

/* The file descriptor to poll() for upcalls (readable when one is raised). */
static inline int evtchn_fd(const struct evtchn *ch)
{
	return ch->local_fd;
}

#endif
