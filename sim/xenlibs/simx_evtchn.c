/*
 * The simulated event channels' port tables (a simulation for tests, not
 * Xen; see simx_evtchn.h).
 */
#include "simx_evtchn.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define TABLE_SIZE (SIMX_EVTCHN_PORTS * sizeof(struct simx_port))

struct simx_ports_map {
	struct simx_ports_map *next;
	unsigned int domid;
	struct simx_port *ports;
};

_Static_assert(sizeof(struct simx_port) == 32, "port slots are 32 bytes in the table file");

void simx_evtchn_cache_fini(struct simx_evtchn_cache *cache)
{
	while (cache->maps) {
		struct simx_ports_map *m = cache->maps;

		cache->maps = m->next;
		munmap(m->ports, TABLE_SIZE);
		free(m);
	}
}

void simx_evtchn_mailbox(uint64_t owner, char *buf, size_t size)
{
	snprintf(buf, size, "evtchn/h/%016" PRIx64, owner);
}

static struct simx_port *table(const struct simx_env *env, struct simx_evtchn_cache *cache,
			       unsigned int domid, bool create)
{
	struct simx_ports_map *m;
	char path[32];
	struct stat st;
	void *p;
	int fd;

	for (m = cache->maps; m; m = m->next)
		if (m->domid == domid)
			return m->ports;
	snprintf(path, sizeof(path), "evtchn/%u", domid);
	fd = openat(env->dirfd, path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);
	if (fd < 0)
		return NULL;
	/* A new file is all zeroes: every slot free. */
	if (fstat(fd, &st) < 0 || (st.st_size < (off_t)TABLE_SIZE && ftruncate(fd, TABLE_SIZE) < 0)) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, TABLE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	m = malloc(sizeof(*m));
	if (!m) {
		munmap(p, TABLE_SIZE);
		errno = ENOMEM;
		return NULL;
	}
	m->domid = domid;
	m->ports = p;
	m->next = cache->maps;
	cache->maps = m;
	return p;
}

struct simx_port *simx_evtchn_slot(const struct simx_env *env, struct simx_evtchn_cache *cache,
				   unsigned int domid, unsigned int port, bool create)
{
	struct simx_port *t;

	if (port == 0 || port >= SIMX_EVTCHN_PORTS || domid >= SIMX_DOMID_LIMIT) {
		errno = EINVAL;
		return NULL;
	}
	t = table(env, cache, domid, create);
	return t ? &t[port] : NULL;
}

static void deliver(const struct simx_env *env, uint64_t owner, unsigned int port)
{
	char box[40];
	uint32_t rec = port;

	simx_evtchn_mailbox(owner, box, sizeof(box));
	/* A full or vanished mailbox drops it, as a closed evtchn fd would. */
	simx_mailbox_post(env->dirfd, box, &rec, sizeof(rec));
}

/* Raises @slot (port @port): delivers it unless it is masked. */
static void raise_port(const struct simx_env *env, struct simx_port *slot, unsigned int port)
{
	uint32_t f = atomic_load(&slot->flags), want;

	do
		want = (f & SIMX_PORT_MASKED) ? (f | SIMX_PORT_PENDING) : (f | SIMX_PORT_MASKED);
	while (!atomic_compare_exchange_weak(&slot->flags, &f, want));
	if (!(f & SIMX_PORT_MASKED))
		deliver(env, atomic_load(&slot->owner), port);
}

void simx_evtchn_unmask(const struct simx_env *env, struct simx_port *slot, unsigned int port)
{
	uint32_t f = atomic_load(&slot->flags), want;

	do
		want = (f & SIMX_PORT_PENDING) ? ((f & ~SIMX_PORT_PENDING) | SIMX_PORT_MASKED)
					       : (f & ~SIMX_PORT_MASKED);
	while (!atomic_compare_exchange_weak(&slot->flags, &f, want));
	if (f & SIMX_PORT_PENDING)
		deliver(env, atomic_load(&slot->owner), port);
}

static bool owner_alive(const struct simx_env *env, uint64_t owner)
{
	char box[40];

	simx_evtchn_mailbox(owner, box, sizeof(box));
	return owner && simx_mailbox_alive(env->dirfd, box);
}

void simx_evtchn_close_locked(const struct simx_env *env, struct simx_evtchn_cache *cache,
			      unsigned int domid, unsigned int port)
{
	struct simx_port *s = simx_evtchn_slot(env, cache, domid, port, false);
	struct simx_port *r;

	if (!s)
		return;
	if (atomic_load(&s->state) == SIMX_PORT_INTERDOMAIN) {
		r = simx_evtchn_slot(env, cache, atomic_load(&s->remote_dom),
				     atomic_load(&s->remote_port), false);
		if (r && atomic_load(&r->state) == SIMX_PORT_INTERDOMAIN &&
		    atomic_load(&r->remote_dom) == domid && atomic_load(&r->remote_port) == port) {
			/* The peer waits for us again, as after EVTCHNOP_close. */
			atomic_store(&r->remote_port, 0);
			atomic_store(&r->state, SIMX_PORT_UNBOUND);
		}
	}
	atomic_store(&s->state, SIMX_PORT_FREE);
	atomic_store(&s->owner, 0);
	atomic_store(&s->flags, 0);
	atomic_store(&s->remote_dom, 0);
	atomic_store(&s->remote_port, 0);
}

/* A free port of env->domid; ports of handles that have gone are reclaimed. */
static int alloc_port(const struct simx_env *env, struct simx_evtchn_cache *cache)
{
	struct simx_port *t = table(env, cache, env->domid, true);

	if (!t)
		return -errno;
	for (unsigned int p = 1; p < SIMX_EVTCHN_PORTS; p++)
		if (atomic_load(&t[p].state) == SIMX_PORT_FREE)
			return (int)p;
	for (unsigned int p = 1; p < SIMX_EVTCHN_PORTS; p++) {
		if (!owner_alive(env, atomic_load(&t[p].owner))) {
			simx_evtchn_close_locked(env, cache, env->domid, p);
			return (int)p;
		}
	}
	return -ENOSPC;
}

/* Resolves DOMID_SELF; -ESRCH for a domain that does not exist. */
static int remote_domain(const struct simx_env *env, unsigned int *domid)
{
	if (*domid == SIMX_DOMID_SELF)
		*domid = env->domid;
	if (*domid >= SIMX_DOMID_LIMIT || !simx_domain_exists(env, *domid))
		return -ESRCH;
	return 0;
}

/* Takes a free port of env->domid for @owner, in @state towards the remote end. */
static int claim_port(const struct simx_env *env, struct simx_evtchn_cache *cache, uint64_t owner,
		      uint32_t state, unsigned int remote_dom, unsigned int remote_port)
{
	int port = alloc_port(env, cache);
	struct simx_port *s;

	if (port < 0)
		return port;
	s = simx_evtchn_slot(env, cache, env->domid, (unsigned int)port, true);
	atomic_store(&s->owner, owner);
	atomic_store(&s->flags, 0);
	atomic_store(&s->remote_dom, remote_dom);
	atomic_store(&s->remote_port, remote_port);
	/* Last: senders only look at slots in a bound state. */
	atomic_store(&s->state, state);
	return port;
}

int simx_evtchn_alloc_unbound_locked(const struct simx_env *env, struct simx_evtchn_cache *cache,
				     uint64_t owner, unsigned int remote_dom)
{
	int rc = remote_domain(env, &remote_dom);

	return rc ? rc : claim_port(env, cache, owner, SIMX_PORT_UNBOUND, remote_dom, 0);
}

int simx_evtchn_bind_interdomain_locked(const struct simx_env *env, struct simx_evtchn_cache *cache,
					uint64_t owner, unsigned int remote_dom,
					unsigned int remote_port)
{
	struct simx_port *r;
	int port = remote_domain(env, &remote_dom);

	if (port)
		return port;
	r = simx_evtchn_slot(env, cache, remote_dom, remote_port, true);
	if (!r)
		return -EINVAL;
	if (atomic_load(&r->state) != SIMX_PORT_UNBOUND ||
	    atomic_load(&r->remote_dom) != env->domid)
		return -EINVAL;
	if (!owner_alive(env, atomic_load(&r->owner))) {
		/* Its process has gone; the kernel would have closed it. */
		simx_evtchn_close_locked(env, cache, remote_dom, remote_port);
		return -EINVAL;
	}
	port = claim_port(env, cache, owner, SIMX_PORT_INTERDOMAIN, remote_dom, remote_port);
	if (port < 0)
		return port;
	atomic_store(&r->remote_port, (uint32_t)port);
	atomic_store(&r->state, SIMX_PORT_INTERDOMAIN);
	raise_port(env, simx_evtchn_slot(env, cache, env->domid, (unsigned int)port, false),
		   (unsigned int)port);
	return port;
}

void simx_evtchn_close_owner_locked(const struct simx_env *env, struct simx_evtchn_cache *cache,
				    uint64_t owner)
{
	struct simx_port *t = table(env, cache, env->domid, false);

	for (unsigned int p = 1; t && p < SIMX_EVTCHN_PORTS; p++)
		if (atomic_load(&t[p].state) != SIMX_PORT_FREE && atomic_load(&t[p].owner) == owner)
			simx_evtchn_close_locked(env, cache, env->domid, p);
}

void simx_evtchn_close_domain_locked(const struct simx_env *env, struct simx_evtchn_cache *cache,
				     unsigned int domid)
{
	struct simx_port *t = table(env, cache, domid, false);

	for (unsigned int p = 1; t && p < SIMX_EVTCHN_PORTS; p++)
		if (atomic_load(&t[p].state) != SIMX_PORT_FREE)
			simx_evtchn_close_locked(env, cache, domid, p);
}

void simx_evtchn_send(const struct simx_env *env, struct simx_evtchn_cache *cache,
		      unsigned int port)
{
	struct simx_port *s = simx_evtchn_slot(env, cache, env->domid, port, false);
	struct simx_port *r;
	unsigned int rd, rp;

	if (!s || atomic_load(&s->state) != SIMX_PORT_INTERDOMAIN)
		return;
	rd = atomic_load(&s->remote_dom);
	rp = atomic_load(&s->remote_port);
	r = simx_evtchn_slot(env, cache, rd, rp, false);
	if (r && atomic_load(&r->state) == SIMX_PORT_INTERDOMAIN &&
	    atomic_load(&r->remote_dom) == env->domid && atomic_load(&r->remote_port) == port)
		raise_port(env, r, rp);
}
