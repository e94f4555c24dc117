/*
 * The simulated libxengnttab (sim/xenlibs/gnttab.c, simx_grant.c): pages
 * granted by one domain and mapped by another are the same memory; only
 * the grantee may map a grant, only as the grant allows, and only while it
 * lasts; unmap notifications clear their byte and send their event.
 */
#include <sys/mman.h>
#include <xenevtchn.h>
#include <xengnttab.h>

#include "tests/sim/simxen_test.h"

TestSuite(simxen_gnttab, .init = simxen_setup, .fini = simxen_teardown, .timeout = 60);

static xengntshr_handle *shr_as(unsigned int domid)
{
	xengntshr_handle *s;

	simxen_use_domid(domid);
	s = xengntshr_open(NULL, 0);
	simxen_use_domid(0);
	cr_assert_not_null(s, "xengntshr_open: %s", strerror(errno));
	return s;
}

static xengnttab_handle *tab_as(unsigned int domid)
{
	xengnttab_handle *t;

	simxen_use_domid(domid);
	t = xengnttab_open(NULL, 0);
	simxen_use_domid(0);
	cr_assert_not_null(t, "xengnttab_open: %s", strerror(errno));
	return t;
}

Test(simxen_gnttab, granted_pages_are_shared_memory)
{
	xengntshr_handle *s;
	xengnttab_handle *t;
	uint32_t refs[3];
	char *mine, *theirs;

	simxen_domain_create(7, "guest");
	s = shr_as(7);
	t = tab_as(0);
	mine = xengntshr_share_pages(s, 0, 3, refs, 1);
	cr_assert_not_null(mine, "share: %s", strerror(errno));
	for (int i = 0; i < 3; i++)
		cr_assert_geq(refs[i], 8);
	cr_assert_neq(refs[0], refs[1]);
	for (int i = 0; i < 3 * 4096; i++)
		cr_assert_eq(mine[i], 0);
	for (int i = 0; i < 3 * 4096; i++)
		mine[i] = (char)(i * 7 + 1);
	theirs = xengnttab_map_domain_grant_refs(t, 3, 7, refs, PROT_READ | PROT_WRITE);
	cr_assert_not_null(theirs, "map: %s", strerror(errno));
	cr_assert_neq(theirs, mine);
	cr_assert_eq(memcmp(mine, theirs, 3 * 4096), 0);
	theirs[5000] = 'Z';
	cr_assert_eq(mine[5000], 'Z');
	cr_assert_eq(xengnttab_unmap(t, theirs, 2), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(xengnttab_unmap(t, theirs, 3), 0);
	cr_assert_eq(xengntshr_unshare(s, mine, 3), 0);
	/* Ended with the granter's mapping. */
	cr_assert_null(xengnttab_map_grant_ref(t, 7, refs[0], PROT_READ));
	cr_assert_eq(errno, EINVAL);
	xengnttab_close(t);
	xengntshr_close(s);
}

Test(simxen_gnttab, only_the_grantee_may_map_and_only_as_granted)
{
	xengntshr_handle *s;
	xengnttab_handle *t0, *t3;
	uint32_t to3, ro;
	void *p3, *pro, *m;

	simxen_domain_create(7, "guest");
	simxen_domain_create(3, "other");
	s = shr_as(7);
	t0 = tab_as(0);
	t3 = tab_as(3);
	p3 = xengntshr_share_pages(s, 3, 1, &to3, 1);
	pro = xengntshr_share_pages(s, 0, 1, &ro, 0);
	cr_assert_not_null(p3);
	cr_assert_not_null(pro);
	/* Granted to dom3: not even dom0 may map it. */
	cr_assert_null(xengnttab_map_grant_ref(t0, 7, to3, PROT_READ));
	cr_assert_eq(errno, EINVAL);
	m = xengnttab_map_grant_ref(t3, 7, to3, PROT_READ | PROT_WRITE);
	cr_assert_not_null(m);
	cr_assert_eq(xengnttab_unmap(t3, m, 1), 0);
	/* Never granted, or granted by another domain. */
	cr_assert_null(xengnttab_map_grant_ref(t0, 7, to3 + 1000, PROT_READ));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(xengnttab_map_grant_ref(t0, 3, ro, PROT_READ));
	cr_assert_eq(errno, EINVAL);
	/* Read-only grants map read-only. */
	cr_assert_null(xengnttab_map_grant_ref(t0, 7, ro, PROT_READ | PROT_WRITE));
	cr_assert_eq(errno, EINVAL);
	m = xengnttab_map_grant_ref(t0, 7, ro, PROT_READ);
	cr_assert_not_null(m);
	cr_assert_eq(xengnttab_unmap(t0, m, 1), 0);
	/* One bad ref fails the whole mapping. */
	uint32_t mixed[2] = { ro, to3 };
	cr_assert_null(xengnttab_map_domain_grant_refs(t0, 2, 7, mixed, PROT_READ));
	cr_assert_eq(errno, EINVAL);
	xengntshr_unshare(s, p3, 1);
	xengntshr_unshare(s, pro, 1);
	xengnttab_close(t3);
	xengnttab_close(t0);
	xengntshr_close(s);
}

/* A channel between dom7 and dom0 for the notifications. */
static void channel(xenevtchn_handle **g, xenevtchn_handle **d, int *gport, int *dport)
{
	simxen_use_domid(7);
	*g = xenevtchn_open(NULL, 0);
	simxen_use_domid(0);
	*d = xenevtchn_open(NULL, 0);
	cr_assert(*g && *d);
	*gport = xenevtchn_bind_unbound_port(*g, 0);
	*dport = xenevtchn_bind_interdomain(*d, 7, (evtchn_port_t)*gport);
	cr_assert_gt(*dport, 0);
	cr_assert(simxen_readable(xenevtchn_fd(*d), 2000));
	cr_assert_eq(xenevtchn_pending(*d), *dport);
	xenevtchn_unmask(*d, (evtchn_port_t)*dport);
}

Test(simxen_gnttab, unmap_notifications_clear_the_byte_and_send_the_event)
{
	xenevtchn_handle *g, *d;
	xengntshr_handle *s;
	xengnttab_handle *t;
	int gport, dport;
	uint32_t ref;
	char *mine, *theirs;

	simxen_domain_create(7, "guest");
	channel(&g, &d, &gport, &dport);
	s = shr_as(7);
	t = tab_as(0);
	mine = xengntshr_share_page_notify(s, 0, &ref, 1, 100, (evtchn_port_t)gport);
	cr_assert_not_null(mine);
	theirs = xengnttab_map_grant_ref_notify(t, 7, ref, PROT_READ | PROT_WRITE, 200,
						(evtchn_port_t)dport);
	cr_assert_not_null(theirs);
	mine[100] = 1;
	mine[200] = 1;
	cr_assert_null(xengnttab_map_grant_ref_notify(t, 7, ref, PROT_READ | PROT_WRITE, 4096,
						      (evtchn_port_t)dport));
	cr_assert_eq(errno, EINVAL);

	/* The mapper goes: its byte is cleared, the granter hears of it. */
	cr_assert_eq(xengnttab_unmap(t, theirs, 1), 0);
	cr_assert_eq(mine[200], 0);
	cr_assert(simxen_readable(xenevtchn_fd(g), 2000));
	cr_assert_eq(xenevtchn_pending(g), gport);
	xenevtchn_unmask(g, (evtchn_port_t)gport);

	/* The granter goes (by closing its handle here): the same the other way. */
	theirs = xengnttab_map_grant_ref(t, 7, ref, PROT_READ);
	cr_assert_not_null(theirs);
	cr_assert_eq(theirs[100], 1);
	cr_assert_eq(xengntshr_close(s), 0);
	cr_assert_eq(theirs[100], 0);
	cr_assert(simxen_readable(xenevtchn_fd(d), 2000));
	cr_assert_eq(xenevtchn_pending(d), dport);
	munmap(mine, 4096);
	xengnttab_unmap(t, theirs, 1);
	xengnttab_close(t);
	xenevtchn_close(g);
	xenevtchn_close(d);
}

struct granted {
	int pipefd[2];   /* child -> parent: the refs */
	int go[2];       /* parent -> child: done mapping */
};

static int grant_in_child(void *arg)
{
	struct granted *x = arg;
	xengntshr_handle *s = xengntshr_open(NULL, 0);
	uint32_t refs[4];
	char *p, c;

	CHILD_CHECK(s);
	p = xengntshr_share_pages(s, 0, 4, refs, 1);
	CHILD_CHECK(p);
	for (int i = 0; i < 4 * 4096; i++)
		p[i] = (char)(i % 251);
	CHILD_CHECK(write(x->pipefd[1], refs, sizeof(refs)) == sizeof(refs));
	CHILD_CHECK(read(x->go[0], &c, 1) == 1);
	/* What the parent wrote is here. */
	CHILD_CHECK(p[3 * 4096 + 7] == 'P');
	return 0;   /* exits without unsharing: the grants end with the process */
}

Test(simxen_gnttab, grants_cross_processes_and_end_with_the_granter)
{
	xengnttab_handle *t;
	struct granted x;
	uint32_t refs[4];
	char *m;
	pid_t pid;

	simxen_domain_create(7, "guest");
	cr_assert_eq(pipe(x.pipefd), 0);
	cr_assert_eq(pipe(x.go), 0);
	pid = simxen_spawn(7, grant_in_child, &x);
	cr_assert_eq(read(x.pipefd[0], refs, sizeof(refs)), (ssize_t)sizeof(refs));
	t = tab_as(0);
	m = xengnttab_map_domain_grant_refs(t, 4, 7, refs, PROT_READ | PROT_WRITE);
	cr_assert_not_null(m, "map: %s", strerror(errno));
	for (int i = 0; i < 4 * 4096; i++)
		cr_assert_eq(m[i], (char)(i % 251));
	m[3 * 4096 + 7] = 'P';
	cr_assert_eq(write(x.go[1], "g", 1), 1);
	cr_assert_eq(simxen_wait(pid), 0);
	/* Our mapping survives; the grant does not. */
	cr_assert_eq(m[0], 0);
	cr_assert_null(xengnttab_map_grant_ref(t, 7, refs[1], PROT_READ));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(xengnttab_unmap(t, m, 4), 0);
	xengnttab_close(t);
}

Test(simxen_gnttab, domain_destroy_ends_its_grants)
{
	xengntshr_handle *s;
	xengnttab_handle *t;
	uint32_t ref;
	void *p;

	simxen_domain_create(7, "guest");
	s = shr_as(7);
	t = tab_as(0);
	p = xengntshr_share_pages(s, 0, 1, &ref, 1);
	cr_assert_not_null(p);
	cr_assert_eq(simxen_tool("domain-destroy", "7", NULL), 0);
	cr_assert_null(xengnttab_map_grant_ref(t, 7, ref, PROT_READ));
	cr_assert_eq(errno, EINVAL);
	xengntshr_unshare(s, p, 1);
	xengntshr_close(s);
	xengnttab_close(t);
}
