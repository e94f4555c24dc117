/*
 * The simulated libxenevtchn (sim/xenlibs/evtchn.c, simx_evtchn.c):
 * binding as Xen allows it, events reaching the peer's handle with the
 * peer's port, masking and coalescing as Linux's evtchn driver does, and
 * closed channels going quiet, within and across processes.
 */
#include <xenevtchn.h>

#include "tests/sim/simxen_test.h"

TestSuite(simxen_evtchn, .init = simxen_setup, .fini = simxen_teardown, .timeout = 60);

static xenevtchn_handle *open_as(unsigned int domid)
{
	xenevtchn_handle *x;

	simxen_use_domid(domid);
	x = xenevtchn_open(NULL, 0);
	simxen_use_domid(0);
	cr_assert_not_null(x, "xenevtchn_open as dom%u: %s", domid, strerror(errno));
	return x;
}

/* The one port pending on @x (within 2 s); -1 when none. */
static int take(xenevtchn_handle *x)
{
	if (!simxen_readable(xenevtchn_fd(x), 2000))
		return -1;
	return xenevtchn_pending(x);
}

static void assert_quiet(xenevtchn_handle *x)
{
	cr_assert_not(simxen_readable(xenevtchn_fd(x), 100), "an event nobody sent");
}

/* A channel between dom7 (unbound side) and dom0 (binding side). */
struct chan {
	xenevtchn_handle *g, *d;
	int gport, dport;
};

static void connect(struct chan *c)
{
	simxen_domain_create(7, "guest");
	c->g = open_as(7);
	c->d = open_as(0);
	c->gport = xenevtchn_bind_unbound_port(c->g, 0);
	cr_assert_gt(c->gport, 0, "bind_unbound_port: %s", strerror(errno));
	c->dport = xenevtchn_bind_interdomain(c->d, 7, (evtchn_port_t)c->gport);
	cr_assert_gt(c->dport, 0, "bind_interdomain: %s", strerror(errno));
	/* Xen raises the new port once, for what the peer may have sent before. */
	cr_assert_eq(take(c->d), c->dport);
	cr_assert_eq(xenevtchn_unmask(c->d, (evtchn_port_t)c->dport), 0);
	assert_quiet(c->g);
	assert_quiet(c->d);
}

Test(simxen_evtchn, notify_reaches_the_peer_with_its_port)
{
	struct chan c;

	connect(&c);
	cr_assert_eq(xenevtchn_notify(c.g, (evtchn_port_t)c.gport), 0);
	cr_assert_eq(take(c.d), c.dport);
	assert_quiet(c.g);
	cr_assert_eq(xenevtchn_unmask(c.d, (evtchn_port_t)c.dport), 0);
	cr_assert_eq(xenevtchn_notify(c.d, (evtchn_port_t)c.dport), 0);
	cr_assert_eq(take(c.g), c.gport);
	cr_assert_eq(xenevtchn_unmask(c.g, (evtchn_port_t)c.gport), 0);
	assert_quiet(c.d);
	xenevtchn_close(c.g);
	xenevtchn_close(c.d);
}

Test(simxen_evtchn, events_coalesce_while_masked_and_unmask_redelivers)
{
	struct chan c;

	connect(&c);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(xenevtchn_notify(c.g, (evtchn_port_t)c.gport), 0);
	cr_assert_eq(take(c.d), c.dport);
	/* Masked since delivery: the other four set the pending bit only. */
	assert_quiet(c.d);
	cr_assert_eq(xenevtchn_unmask(c.d, (evtchn_port_t)c.dport), 0);
	cr_assert_eq(take(c.d), c.dport);
	cr_assert_eq(xenevtchn_unmask(c.d, (evtchn_port_t)c.dport), 0);
	assert_quiet(c.d);
	xenevtchn_close(c.g);
	xenevtchn_close(c.d);
}

Test(simxen_evtchn, binding_to_a_wrong_port_fails)
{
	xenevtchn_handle *g, *d, *o;
	int gport, free_port, other;

	simxen_domain_create(7, "guest");
	simxen_domain_create(3, "other");
	g = open_as(7);
	d = open_as(0);
	o = open_as(3);
	gport = xenevtchn_bind_unbound_port(g, 0);
	other = xenevtchn_bind_unbound_port(g, 3);   /* waits for dom3, not us */
	cr_assert_gt(gport, 0);
	cr_assert_gt(other, 0);
	free_port = other + 1;
	cr_assert_eq(xenevtchn_bind_interdomain(d, 7, (evtchn_port_t)other), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(xenevtchn_bind_interdomain(d, 7, (evtchn_port_t)free_port), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(xenevtchn_bind_interdomain(d, 7, 0), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(xenevtchn_bind_interdomain(d, 7, 100000), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(xenevtchn_bind_interdomain(d, 12, 1), -1);
	cr_assert_eq(errno, ESRCH);
	cr_assert_eq(xenevtchn_bind_unbound_port(d, 12), -1);
	cr_assert_eq(errno, ESRCH);
	/* Once bound, a port is not unbound any more. */
	cr_assert_gt(xenevtchn_bind_interdomain(d, 7, (evtchn_port_t)gport), 0);
	cr_assert_eq(xenevtchn_bind_interdomain(d, 7, (evtchn_port_t)gport), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_gt(xenevtchn_bind_interdomain(o, 7, (evtchn_port_t)other), 0);
	/* Ports of other handles, even of our domain, are not ours to use. */
	xenevtchn_handle *d2 = open_as(0);
	int p2 = xenevtchn_bind_unbound_port(d2, 7);

	cr_assert_gt(p2, 0);
	cr_assert_eq(xenevtchn_notify(d, (evtchn_port_t)p2), -1);
	cr_assert_eq(errno, ENOTCONN);
	cr_assert_eq(xenevtchn_unbind(d, (evtchn_port_t)p2), -1);
	cr_assert_eq(errno, ENOTCONN);
	cr_assert_eq(xenevtchn_unbind(d2, (evtchn_port_t)p2), 0);
	xenevtchn_close(d2);
	xenevtchn_close(o);
	xenevtchn_close(g);
	xenevtchn_close(d);
}

Test(simxen_evtchn, restrict_limits_the_peer)
{
	xenevtchn_handle *g;

	simxen_domain_create(7, "guest");
	g = open_as(7);
	cr_assert_eq(xenevtchn_restrict(g, 5), 0);
	cr_assert_eq(xenevtchn_bind_unbound_port(g, 0), -1);
	cr_assert_eq(errno, EPERM);
	xenevtchn_close(g);
}

Test(simxen_evtchn, closing_one_end_makes_notifies_no_ops)
{
	struct chan c;

	connect(&c);
	cr_assert_eq(xenevtchn_unbind(c.d, (evtchn_port_t)c.dport), 0);
	cr_assert_eq(xenevtchn_notify(c.g, (evtchn_port_t)c.gport), 0);
	assert_quiet(c.d);
	/* The guest's port waits for dom0 again, as after EVTCHNOP_close. */
	c.dport = xenevtchn_bind_interdomain(c.d, 7, (evtchn_port_t)c.gport);
	cr_assert_gt(c.dport, 0);
	cr_assert_eq(take(c.d), c.dport);
	cr_assert_eq(xenevtchn_unmask(c.d, (evtchn_port_t)c.dport), 0);
	xenevtchn_close(c.g);
	cr_assert_eq(xenevtchn_notify(c.d, (evtchn_port_t)c.dport), 0);
	assert_quiet(c.d);
	xenevtchn_close(c.d);
}

struct cross {
	int gport;
	int ready[2];   /* child -> parent: the port */
	int go[2];      /* parent -> child: bound */
};

static int guest_side(void *arg)
{
	struct cross *x = arg;
	xenevtchn_handle *g = xenevtchn_open(NULL, 0);
	int port, got;
	char c;

	CHILD_CHECK(g);
	port = xenevtchn_bind_unbound_port(g, 0);
	CHILD_CHECK(port > 0);
	CHILD_CHECK(write(x->ready[1], &port, sizeof(port)) == sizeof(port));
	CHILD_CHECK(read(x->go[0], &c, 1) == 1);
	CHILD_CHECK(xenevtchn_notify(g, (evtchn_port_t)port) == 0);
	got = xenevtchn_pending(g);   /* blocks until dom0 answers */
	CHILD_CHECK(got == port);
	xenevtchn_close(g);
	return 0;
}

Test(simxen_evtchn, events_cross_processes)
{
	struct cross x;
	xenevtchn_handle *d;
	int dport;
	pid_t pid;

	simxen_domain_create(7, "guest");
	cr_assert_eq(pipe(x.ready), 0);
	cr_assert_eq(pipe(x.go), 0);
	pid = simxen_spawn(7, guest_side, &x);
	cr_assert_eq(read(x.ready[0], &x.gport, sizeof(x.gport)), (ssize_t)sizeof(x.gport));
	d = open_as(0);
	dport = xenevtchn_bind_interdomain(d, 7, (evtchn_port_t)x.gport);
	cr_assert_gt(dport, 0);
	cr_assert_eq(take(d), dport);
	cr_assert_eq(xenevtchn_unmask(d, (evtchn_port_t)dport), 0);
	cr_assert_eq(write(x.go[1], "g", 1), 1);
	cr_assert_eq(take(d), dport);
	cr_assert_eq(xenevtchn_notify(d, (evtchn_port_t)dport), 0);
	cr_assert_eq(simxen_wait(pid), 0);
	/* The guest's handle has gone: notifying it does nothing. */
	cr_assert_eq(xenevtchn_unmask(d, (evtchn_port_t)dport), 0);
	cr_assert_eq(xenevtchn_notify(d, (evtchn_port_t)dport), 0);
	xenevtchn_close(d);
}

Test(simxen_evtchn, domain_destroy_closes_its_ports)
{
	struct chan c;

	connect(&c);
	cr_assert_eq(simxen_tool("domain-destroy", "7", NULL), 0);
	cr_assert_eq(xenevtchn_notify(c.d, (evtchn_port_t)c.dport), 0);
	assert_quiet(c.g);
	cr_assert_eq(xenevtchn_bind_unbound_port(c.d, 7), -1);
	cr_assert_eq(errno, ESRCH);
	xenevtchn_close(c.g);
	xenevtchn_close(c.d);
}
