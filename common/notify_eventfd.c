/*
 * The eventfd notifier: the local stand-in for a Xen event channel.  A
 * notification adds 1 to the counter; waiting reads (and so clears) it,
 * which coalesces many notifications into one wake-up as an event
 * channel's pending bit does.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/mem.h"
#include "xflow/ring.h"


static struct xflow_eventfd_notifier *to_efd(struct xflow_notifier *n)
{
	return xflow_container_of(n, struct xflow_eventfd_notifier, base);
}

static int efd_notify(struct xflow_notifier *n)
{
	uint64_t one = 1;
	/* EAGAIN means the counter is saturated: a wake-up is pending anyway. */
	if (write(to_efd(n)->fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return -errno;
	return 0;
}

static void efd_ack(struct xflow_notifier *n)
{
	uint64_t v;
	/* Non-blocking: nothing pending is not an error. */
	while (read(to_efd(n)->fd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
}

static int efd_wait(struct xflow_notifier *n, int timeout_ms)
{
	struct pollfd pfd = { .fd = to_efd(n)->fd, .events = POLLIN };
	int rc = poll(&pfd, 1, timeout_ms);
	if (rc < 0)
		return -errno;
	if (rc == 0)
		return 0;
	efd_ack(n);
	return 1;
}

static int efd_pollfd(struct xflow_notifier *n)
{
	return to_efd(n)->fd;
}

static void efd_close(struct xflow_notifier *n)
{
	struct xflow_eventfd_notifier *en = to_efd(n);
	if (en->fd >= 0)
		close(en->fd);
	en->fd = -1;
}

static const struct xflow_notifier_ops efd_ops = {
	.name = "eventfd",
	.notify = efd_notify,
	.wait = efd_wait,
	.pollfd = efd_pollfd,
	.ack = efd_ack,
	.close = efd_close,
};

int xflow_eventfd_notifier_init(struct xflow_eventfd_notifier *en, int fd)
{
	if (fd < 0) {
		fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (fd < 0)
			return -errno;
	} else {
		/* An adopted descriptor may be blocking; ack must never block. */
		int fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
			return -errno;
	}
	en->base.ops = &efd_ops;
	en->fd = fd;
	return 0;
}
