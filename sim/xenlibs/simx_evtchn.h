/*
 * The simulated event channels (a simulation for tests, not Xen).
 *
 * Each domain has a table of SIMX_EVTCHN_PORTS port slots, the file
 * evtchn/<domid>, which every process that touches the domain's ports maps
 * shared.  A slot is free, unbound (waiting for a given remote domain to
 * bind to it) or interdomain (connected to a remote domain's port), as in
 * Xen.  Binding and closing change slots under the state lock; sending an
 * event does not take it: it reads the slots with atomics and raises the
 * remote port.
 *
 * Each port belongs to one event channel handle (its owner, a 64-bit id),
 * whose mailbox evtchn/h/<id as 16 hex digits> receives the 4-byte port
 * numbers of raised ports.  Like Linux's evtchn driver, delivering an event
 * masks the port; events that arrive while it is masked only set its
 * pending bit, and unmasking a pending port delivers it again.  So each
 * port has at most one record in flight, and a mailbox (64 KiB) can never
 * overflow with at most SIMX_EVTCHN_PORTS ports per domain.
 */
#ifndef SIMX_EVTCHN_H
#define SIMX_EVTCHN_H

#include <stdatomic.h>
#include <stdint.h>

#include "simx.h"

#define SIMX_EVTCHN_PORTS 4096U

enum { SIMX_PORT_FREE, SIMX_PORT_UNBOUND, SIMX_PORT_INTERDOMAIN };
#define SIMX_PORT_PENDING 1U
#define SIMX_PORT_MASKED 2U

struct simx_port {
	_Atomic uint32_t state;        /* SIMX_PORT_* */
	_Atomic uint32_t flags;        /* SIMX_PORT_PENDING | SIMX_PORT_MASKED */
	_Atomic uint32_t remote_dom;
	_Atomic uint32_t remote_port;  /* 0 while unbound */
	_Atomic uint64_t owner;        /* the handle's id; 0 when free */
	uint64_t spare;
};

/* The domains' tables one handle has mapped so far. */
struct simx_ports_map;
struct simx_evtchn_cache {
	struct simx_ports_map *maps;
};

/* Unmaps every table of @cache. */
void simx_evtchn_cache_fini(struct simx_evtchn_cache *cache);

/* "evtchn/h/<owner>": the mailbox of handle @owner. */
void simx_evtchn_mailbox(uint64_t owner, char *buf, size_t size);

/*
 * Port slot @port of domain @domid (NULL with errno when @port is out of
 * range or the table cannot be mapped).  @create makes the table of a
 * domain that has none yet.
 */
struct simx_port *simx_evtchn_slot(const struct simx_env *env, struct simx_evtchn_cache *cache,
				   unsigned int domid, unsigned int port, bool create);

/*
 * Allocates a port of env->domid for handle @owner, unbound and waiting
 * for @remote_dom (-ESRCH when that domain does not exist).  Returns the
 * port or -errno.
 */
int simx_evtchn_alloc_unbound_locked(const struct simx_env *env, struct simx_evtchn_cache *cache,
				     uint64_t owner, unsigned int remote_dom);

/*
 * Connects a new port of env->domid, owned by @owner, to port @remote_port
 * of @remote_dom, which must be unbound and waiting for env->domid
 * (-EINVAL otherwise, -ESRCH for a domain that does not exist).  Like Xen,
 * raises the new port at once, for the events the remote end may have sent
 * before.  Returns the port or -errno.
 */
int simx_evtchn_bind_interdomain_locked(const struct simx_env *env, struct simx_evtchn_cache *cache,
					uint64_t owner, unsigned int remote_dom,
					unsigned int remote_port);

/*
 * Closes port @port of @domid: an interdomain peer becomes unbound again,
 * waiting for @domid, as in Xen.
 */
void simx_evtchn_close_locked(const struct simx_env *env, struct simx_evtchn_cache *cache,
			      unsigned int domid, unsigned int port);

/* Closes every port of env->domid that @owner holds. */
void simx_evtchn_close_owner_locked(const struct simx_env *env, struct simx_evtchn_cache *cache,
				    uint64_t owner);

/* Closes every port of @domid (the domain is being destroyed). */
void simx_evtchn_close_domain_locked(const struct simx_env *env, struct simx_evtchn_cache *cache,
				     unsigned int domid);

/*
 * Sends an event on port @port of env->domid, whoever owns it, as the
 * kernel does for an unmap notification: raises the remote port when both
 * ends are still connected, and does nothing otherwise.  No lock needed.
 */
void simx_evtchn_send(const struct simx_env *env, struct simx_evtchn_cache *cache,
		      unsigned int port);

/* Unmasks @port of env->domid; delivers it again when it is pending. */
void simx_evtchn_unmask(const struct simx_env *env, struct simx_port *slot, unsigned int port);

#endif
