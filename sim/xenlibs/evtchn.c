/*
 * libxenevtchn.so.1 of the simulated Xen toolstack: Debian's Xen 4.17
 * event channel API over the simulated port tables (a simulation for
 * tests, not Xen; see simx_evtchn.h and README).
 *
 * A handle is what an open /dev/xen/evtchn is: the ports bound through it
 * and a file descriptor, here its mailbox, from which xenevtchn_pending()
 * reads the ports that fired, blocking like the device's read().
 */
#include <xenevtchn.h>

#include "simx.h"
#include "simx_evtchn.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct xenevtchn_handle {
	struct simx_env env;
	pthread_mutex_t mutex;          /* cache, and env.lockfd */
	struct simx_evtchn_cache cache;
	uint64_t id;
	int fd;                         /* the mailbox */
	char mailbox[40];
	bool restricted;
	unsigned int restrict_domid;
};

static int fail(int rc)
{
	errno = -rc;
	return -1;
}

xenevtchn_handle *xenevtchn_open(struct xentoollog_logger *logger, unsigned int flags)
{
	xenevtchn_handle *xce = calloc(1, sizeof(*xce));
	char tmp[48];
	int rc, fl;

	(void)logger;
	if (!xce)
		return NULL;
	rc = simx_env_open(&xce->env, "libxenevtchn");
	if (rc)
		goto fail_free;
	xce->id = simx_new_id();
	simx_evtchn_mailbox(xce->id, xce->mailbox, sizeof(xce->mailbox));
	simx_tmp_name(tmp, sizeof(tmp), "e");
	xce->fd = simx_mailbox_make(xce->env.dirfd, tmp);
	if (xce->fd < 0) {
		rc = xce->fd;
		goto fail_env;
	}
	if (renameat(xce->env.dirfd, tmp, xce->env.dirfd, xce->mailbox) < 0) {
		rc = -errno;
		unlinkat(xce->env.dirfd, tmp, 0);
		close(xce->fd);
		goto fail_env;
	}
	/* xenevtchn_pending() blocks, as the device's read() does. */
	fl = fcntl(xce->fd, F_GETFL);
	fcntl(xce->fd, F_SETFL, fl & ~O_NONBLOCK);
	if (flags & XENEVTCHN_NO_CLOEXEC)
		fcntl(xce->fd, F_SETFD, 0);
	pthread_mutex_init(&xce->mutex, NULL);
	return xce;
fail_env:
	simx_env_close(&xce->env);
fail_free:
	free(xce);
	errno = -rc;
	return NULL;
}

xenevtchn_handle *xenevtchn_fdopen(struct xentoollog_logger *logger, int fd, unsigned open_flags)
{
	(void)logger;
	(void)fd;
	(void)open_flags;
	errno = EOPNOTSUPP;
	return NULL;
}

int xenevtchn_close(xenevtchn_handle *xce)
{
	if (!xce)
		return 0;
	/* After fork the child only lets go of its copy, as with a device fd. */
	if (simx_env_owned(&xce->env)) {
		simx_lock(&xce->env, true);
		simx_evtchn_close_owner_locked(&xce->env, &xce->cache, xce->id);
		simx_unlock(&xce->env);
		unlinkat(xce->env.dirfd, xce->mailbox, 0);
	}
	close(xce->fd);
	simx_evtchn_cache_fini(&xce->cache);
	simx_env_close(&xce->env);
	pthread_mutex_destroy(&xce->mutex);
	free(xce);
	return 0;
}

int xenevtchn_fd(xenevtchn_handle *xce)
{
	return xce->fd;
}

/* Our slot for @port: -EINVAL out of range, -ENOTCONN when not ours. */
static int own_slot(xenevtchn_handle *xce, evtchn_port_t port, struct simx_port **slot)
{
	struct simx_port *s = simx_evtchn_slot(&xce->env, &xce->cache, xce->env.domid, port, true);

	if (!s)
		return port == 0 || port >= SIMX_EVTCHN_PORTS ? -EINVAL : -errno;
	if (atomic_load(&s->state) == SIMX_PORT_FREE || atomic_load(&s->owner) != xce->id)
		return -ENOTCONN;
	*slot = s;
	return 0;
}

int xenevtchn_notify(xenevtchn_handle *xce, evtchn_port_t port)
{
	struct simx_port *s;
	int rc;

	pthread_mutex_lock(&xce->mutex);
	rc = own_slot(xce, port, &s);
	if (!rc)
		simx_evtchn_send(&xce->env, &xce->cache, port);
	pthread_mutex_unlock(&xce->mutex);
	return rc ? fail(rc) : 0;
}

static int check_restrict(xenevtchn_handle *xce, uint32_t domid)
{
	if (xce->restricted && domid != xce->restrict_domid)
		return -EPERM;
	return 0;
}

xenevtchn_port_or_error_t xenevtchn_bind_unbound_port(xenevtchn_handle *xce, uint32_t domid)
{
	int rc = check_restrict(xce, domid);

	if (rc)
		return fail(rc);
	pthread_mutex_lock(&xce->mutex);
	simx_lock(&xce->env, true);
	rc = simx_evtchn_alloc_unbound_locked(&xce->env, &xce->cache, xce->id, domid);
	simx_unlock(&xce->env);
	pthread_mutex_unlock(&xce->mutex);
	return rc < 0 ? fail(rc) : rc;
}

xenevtchn_port_or_error_t xenevtchn_bind_interdomain(xenevtchn_handle *xce, uint32_t domid,
						     evtchn_port_t remote_port)
{
	int rc = check_restrict(xce, domid);

	if (rc)
		return fail(rc);
	pthread_mutex_lock(&xce->mutex);
	simx_lock(&xce->env, true);
	rc = simx_evtchn_bind_interdomain_locked(&xce->env, &xce->cache, xce->id, domid,
						 remote_port);
	simx_unlock(&xce->env);
	pthread_mutex_unlock(&xce->mutex);
	return rc < 0 ? fail(rc) : rc;
}

xenevtchn_port_or_error_t xenevtchn_bind_virq(xenevtchn_handle *xce, unsigned int virq)
{
	(void)xce;
	(void)virq;
	return fail(-ENOSYS);
}

int xenevtchn_unbind(xenevtchn_handle *xce, evtchn_port_t port)
{
	struct simx_port *s;
	int rc;

	pthread_mutex_lock(&xce->mutex);
	rc = own_slot(xce, port, &s);
	if (!rc) {
		simx_lock(&xce->env, true);
		simx_evtchn_close_locked(&xce->env, &xce->cache, xce->env.domid, port);
		simx_unlock(&xce->env);
	}
	pthread_mutex_unlock(&xce->mutex);
	return rc ? fail(rc) : 0;
}

xenevtchn_port_or_error_t xenevtchn_pending(xenevtchn_handle *xce)
{
	uint32_t port;
	ssize_t n = read(xce->fd, &port, sizeof(port));

	if (n < 0)
		return -1;
	if (n != (ssize_t)sizeof(port))
		return fail(-EIO);
	return (xenevtchn_port_or_error_t)port;
}

int xenevtchn_unmask(xenevtchn_handle *xce, evtchn_port_t port)
{
	struct simx_port *s;
	int rc;

	pthread_mutex_lock(&xce->mutex);
	rc = own_slot(xce, port, &s);
	if (!rc)
		simx_evtchn_unmask(&xce->env, s, port);
	pthread_mutex_unlock(&xce->mutex);
	/* Linux's evtchn driver ignores ports that are not the handle's. */
	return rc == -EINVAL ? fail(rc) : 0;
}

int xenevtchn_restrict(xenevtchn_handle *xce, domid_t domid)
{
	xce->restricted = true;
	xce->restrict_domid = domid;
	return 0;
}
