/* Event channel stand-in: see evtchn.h for the contract. */
#include "sim/evtchn.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

int evtchn_bind(struct evtchn *ch, struct evtchn_shared *sh, int end,
		int local_fd, int remote_fd)
{
	if (!sh || (end != 0 && end != 1) || local_fd < 0 || remote_fd < 0)
		return -EINVAL;
	ch->sh = sh;
	ch->end = end;
	ch->local_fd = local_fd;
	ch->remote_fd = remote_fd;
	return 0;
}

static void upcall(int fd)
{
	uint64_t one = 1;

	/*
	 * An eventfd write only fails with EAGAIN when the counter would
	 * overflow, which cannot happen as we write at most once per
	 * pending-bit transition; EINTR is retried.
	 */
	while (write(fd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

static const struct evtchn_hooks *evtchn_hooks;

void evtchn_set_hooks(const struct evtchn_hooks *hooks)
{
	evtchn_hooks = hooks;
}

/* Sets the remote pending bit; true when the upcall is to be raised. */
static bool set_remote_pending(struct evtchn *ch)
{
	int remote = !ch->end;

	/*
	 * seq_cst: the caller's ring index store (already fenced by the ring
	 * macros) is visible before the pending bit, and the mask load cannot
	 * move before the bit is set, so an unmask racing with us either sees
	 * the bit or we see the mask cleared.
	 */
	if (atomic_exchange(&ch->sh->pending[remote], 1))
		return false; /* already pending: the receiver has not run yet */
	if (atomic_load(&ch->sh->mask[remote]))
		return false; /* delivered on unmask */
	return true;
}

void notify_remote_via_evtchn(struct evtchn *ch)
{
	const struct evtchn_hooks *h = evtchn_hooks;

	if (!h) {
		if (set_remote_pending(ch))
			upcall(ch->remote_fd);
		return;
	}
	if (h->notify_begin)
		h->notify_begin(ch);
	if (set_remote_pending(ch)) {
		if (h->notify_raised)
			h->notify_raised(ch);
		upcall(ch->remote_fd);
	}
	if (h->notify_end)
		h->notify_end(ch);
}

int evtchn_wait(struct evtchn *ch, struct pollfd *pfd, nfds_t nfds, int timeout_ms)
{
	const struct evtchn_hooks *h = evtchn_hooks;
	int n;

	if (h && h->wait_begin)
		h->wait_begin(ch);
	n = poll(pfd, nfds, timeout_ms);
	if (h && h->wait_end)
		h->wait_end(ch, pfd, nfds, n);
	return n;
}

bool evtchn_ack(struct evtchn *ch)
{
	uint64_t count;

	/* The fd is non-blocking: an empty counter returns EAGAIN at once. */
	while (read(ch->local_fd, &count, sizeof(count)) < 0 && errno == EINTR)
		;
	/*
	 * Clearing the bit before the handler reads the rings makes a
	 * notification sent from here on raise a new upcall rather than be
	 * swallowed: the order Xen's upcall loop uses.
	 */
	return atomic_exchange(&ch->sh->pending[ch->end], 0) != 0;
}

void evtchn_mask(struct evtchn *ch)
{
	atomic_store(&ch->sh->mask[ch->end], 1);
}

void evtchn_unmask(struct evtchn *ch)
{
	atomic_store(&ch->sh->mask[ch->end], 0);
	/* seq_cst store then load: pairs with the exchange/load in notify. */
	if (atomic_load(&ch->sh->pending[ch->end]))
		upcall(ch->local_fd);
}
