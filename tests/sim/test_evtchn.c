/*
 * The event channel stand-in, alone and as the ring macros drive it: one
 * upcall per 0->1 pending transition, masking, unmask re-raising, and
 * RING_PUSH_*_AND_CHECK_NOTIFY deciding when a notification is needed.
 * The code under test is not in a project library (the simulated domains
 * link no xflowtop code), so it is compiled in here.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/evtchn.c"
#include "sim/linux/include/xen/interface.h"

static struct evtchn_shared *sh;
static struct evtchn front, back;
static int fds[2];

static void setup(void)
{
	sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(sh, MAP_FAILED);
	fds[0] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	fds[1] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	cr_assert_eq(evtchn_bind(&front, sh, 0, fds[0], fds[1]), 0);
	cr_assert_eq(evtchn_bind(&back, sh, 1, fds[1], fds[0]), 0);
}

static void teardown(void)
{
	close(fds[0]);
	close(fds[1]);
	munmap(sh, 4096);
}

/* The eventfd counter: how many upcalls were raised since the last read. */
static uint64_t upcalls(const struct evtchn *ch)
{
	uint64_t n = 0;

	if (read(evtchn_fd(ch), &n, sizeof(n)) < 0)
		return 0;
	/* Put the count back so that evtchn_ack() sees the same state. */
	if (n)
		cr_assert_eq(write(evtchn_fd(ch), &n, sizeof(n)), (ssize_t)sizeof(n));
	return n;
}

TestSuite(evtchn, .init = setup, .fini = teardown);

Test(evtchn, bind_rejects_bad_arguments)
{
	struct evtchn ch;

	cr_assert_eq(evtchn_bind(&ch, NULL, 0, 1, 2), -EINVAL);
	cr_assert_eq(evtchn_bind(&ch, sh, 2, 1, 2), -EINVAL);
	cr_assert_eq(evtchn_bind(&ch, sh, 0, -1, 2), -EINVAL);
}

Test(evtchn, notifications_coalesce_until_the_receiver_acks)
{
	for (int i = 0; i < 10; i++)
		notify_remote_via_evtchn(&front);
	cr_assert_eq(upcalls(&back), 1);
	cr_assert_eq(upcalls(&front), 0, "the sender is not notified");
	cr_assert(evtchn_ack(&back));
	cr_assert_not(evtchn_ack(&back), "ack clears the pending bit");
	cr_assert_eq(upcalls(&back), 0, "ack drains the upcall");
	notify_remote_via_evtchn(&front);
	cr_assert_eq(upcalls(&back), 1, "a new notification after the ack raises a new upcall");
}

Test(evtchn, masked_port_keeps_pending_and_unmask_reraises)
{
	evtchn_mask(&back);
	notify_remote_via_evtchn(&front);
	notify_remote_via_evtchn(&front);
	cr_assert_eq(upcalls(&back), 0, "no upcall while masked");
	cr_assert_eq(atomic_load(&sh->pending[1]), 1u);
	evtchn_unmask(&back);
	cr_assert_eq(upcalls(&back), 1, "unmask delivers the pending event once");
	cr_assert(evtchn_ack(&back));
	evtchn_unmask(&back);
	cr_assert_eq(upcalls(&back), 0, "unmask with nothing pending is silent");
}

Test(evtchn, both_directions_are_independent)
{
	notify_remote_via_evtchn(&back);
	cr_assert_eq(upcalls(&front), 1);
	cr_assert_eq(upcalls(&back), 0);
	cr_assert(evtchn_ack(&front));
}

DEFINE_RING_TYPES(test, uint32_t, uint32_t);

/* The notification hold-off of ring.h, with our barriers, as netfront uses it. */
Test(evtchn, ring_push_notifies_only_when_the_consumer_asked)
{
	struct test_sring *sring = malloc(4096);
	struct test_front_ring fr;
	struct test_back_ring br;
	int notify, work;

	cr_assert_not_null(sring);
	SHARED_RING_INIT(sring);
	FRONT_RING_INIT(&fr, sring, 4096);
	BACK_RING_INIT(&br, sring, 4096);

	/* The first request after init notifies (req_event starts at 1). */
	*RING_GET_REQUEST(&fr, fr.req_prod_pvt++) = 1;
	RING_PUSH_REQUESTS_AND_CHECK_NOTIFY(&fr, notify);
	cr_assert(notify);
	/* The consumer has not re-armed: more requests need no notification. */
	for (uint32_t i = 2; i <= 5; i++) {
		*RING_GET_REQUEST(&fr, fr.req_prod_pvt++) = i;
		RING_PUSH_REQUESTS_AND_CHECK_NOTIFY(&fr, notify);
		cr_assert_not(notify, "request %u", i);
	}
	/* The consumer drains and re-arms; the next push notifies again. */
	RING_FINAL_CHECK_FOR_REQUESTS(&br, work);
	cr_assert(work);
	while (RING_HAS_UNCONSUMED_REQUESTS(&br))
		br.req_cons++;
	RING_FINAL_CHECK_FOR_REQUESTS(&br, work);
	cr_assert_not(work);
	*RING_GET_REQUEST(&fr, fr.req_prod_pvt++) = 6;
	RING_PUSH_REQUESTS_AND_CHECK_NOTIFY(&fr, notify);
	cr_assert(notify);
	free(sring);
}

/* Across processes, as between a guest and dom0. */
Test(evtchn, notifies_another_process)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct pollfd p = { .fd = evtchn_fd(&back), .events = POLLIN };

		_exit(poll(&p, 1, 5000) == 1 && evtchn_ack(&back) ? 0 : 1);
	}
	notify_remote_via_evtchn(&front);
	int status;

	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert_eq(atomic_load(&sh->pending[1]), 0u, "the other process cleared the bit");
}
