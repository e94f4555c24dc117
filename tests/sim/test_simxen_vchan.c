/*
 * Debian's real, unmodified libxenvchan on the simulated toolstack: a
 * server in domain 7 and a client in domain 0, two processes, move a few
 * MB each way through the vchan with the event fd and libxenvchan_wait(),
 * every byte checked; when one end closes, the other sees it closed.
 */
#include <libxenvchan.h>
#include <xenstore.h>

#include "tests/lib/testlib.h"
#include "tests/sim/simxen_test.h"

TestSuite(simxen_vchan, .init = simxen_setup, .fini = simxen_teardown, .timeout = 120);

#define XS_PATH "/local/domain/7/data/t"
#define TO_CLIENT (3u << 20)
#define TO_SERVER (2u << 20) + 12345u

/* The byte at @off of the stream seeded @seed. */
static unsigned char stream_byte(uint64_t seed, size_t off)
{
	uint64_t s = seed + off / 8;

	return (unsigned char)(test_rand_next(&s) >> (8 * (off % 8)));
}

/*
 * Sends @out bytes and receives @in bytes at once, never blocking in
 * libxenvchan: waits for the event fd, acknowledges with libxenvchan_wait,
 * moves what fits.  0, or the line of the failed check.
 */
static int pump(struct libxenvchan *v, uint64_t out_seed, size_t out, uint64_t in_seed, size_t in)
{
	unsigned char buf[8192];
	size_t sent = 0, got = 0;
	int idle = 0;

	v->blocking = 0;
	while (sent < out || got < in) {
		bool progress = false;

		while (sent < out) {
			size_t n = out - sent < sizeof(buf) ? out - sent : sizeof(buf);
			int w;

			for (size_t i = 0; i < n; i++)
				buf[i] = stream_byte(out_seed, sent + i);
			w = libxenvchan_write(v, buf, n);
			if (w < 0)
				return __LINE__;
			if (w == 0)
				break;
			sent += (size_t)w;
			progress = true;
		}
		while (got < in) {
			int r = libxenvchan_read(v, buf, sizeof(buf));

			if (r < 0)
				return __LINE__;
			if (r == 0)
				break;
			if (got + (size_t)r > in)
				return __LINE__;
			for (int i = 0; i < r; i++)
				if (buf[i] != stream_byte(in_seed, got + (size_t)i))
					return __LINE__;
			got += (size_t)r;
			progress = true;
		}
		if (progress) {
			idle = 0;
			continue;
		}
		if (!simxen_readable(libxenvchan_fd_for_select(v), 100)) {
			if (++idle > 100)
				return __LINE__;   /* 10 s without an event */
			continue;
		}
		if (libxenvchan_wait(v) < 0)
			return __LINE__;
	}
	return 0;
}

struct sync {
	int up[2];     /* server -> parent: listening */
	int done[2];   /* parent -> server: client has read everything */
};

static int server(void *arg)
{
	struct sync *s = arg;
	struct libxenvchan *v;
	int rc;
	char c;

	v = libxenvchan_server_init(NULL, 0, XS_PATH, 4096, 1 << 20);
	CHILD_CHECK(v);
	CHILD_CHECK(write(s->up[1], "u", 1) == 1);
	rc = pump(v, 1, TO_CLIENT, 2, TO_SERVER);
	if (rc)
		fprintf(stderr, "server: pump failed at line %d\n", rc);
	CHILD_CHECK(rc == 0);
	CHILD_CHECK(libxenvchan_is_open(v));
	CHILD_CHECK(read(s->done[0], &c, 1) == 1);
	libxenvchan_close(v);
	return 0;
}

Test(simxen_vchan, real_libxenvchan_moves_megabytes_both_ways)
{
	struct libxenvchan *v;
	struct sync s;
	struct xs_handle *xs;
	char **ev, *ref;
	pid_t pid;
	unsigned int num;
	int rc, waits = 0;

	simxen_domain_create(7, "guest");
	cr_assert_eq(pipe(s.up), 0);
	cr_assert_eq(pipe(s.done), 0);
	pid = simxen_spawn(7, server, &s);
	cr_assert_eq(read(s.up[0], &rc, 1), 1, "the server did not start");

	xs = xs_open(0);
	cr_assert_not_null(xs);
	ref = xs_read(xs, XBT_NULL, XS_PATH "/ring-ref", NULL);
	cr_assert_not_null(ref);
	free(ref);

	v = libxenvchan_client_init(NULL, 7, XS_PATH);
	cr_assert_not_null(v, "client_init: %s", strerror(errno));
	rc = pump(v, 2, TO_SERVER, 1, TO_CLIENT);
	cr_assert_eq(rc, 0, "client: pump failed at line %d", rc);
	cr_assert(libxenvchan_is_open(v));

	/* The server closes: its end says so through the ring and the event. */
	cr_assert(xs_watch(xs, XS_PATH, "gone"));
	cr_assert_eq(write(s.done[1], "d", 1), 1);
	while (libxenvchan_is_open(v)) {
		cr_assert(simxen_readable(libxenvchan_fd_for_select(v), 10000),
			  "no event after the server closed");
		cr_assert_eq(libxenvchan_wait(v), 0);
		cr_assert_lt(++waits, 100);
	}
	cr_assert_eq(simxen_wait(pid), 0);
	/* And it removed its xenstore nodes. */
	do {
		ev = xs_read_watch(xs, &num);
		cr_assert_not_null(ev);
		free(ev);
		ref = xs_read(xs, XBT_NULL, XS_PATH, NULL);
		free(ref);
	} while (ref);
	cr_assert_eq(errno, ENOENT);
	libxenvchan_close(v);
	xs_close(xs);
}

static int client_that_leaves(void *arg)
{
	struct libxenvchan *v = libxenvchan_client_init(NULL, 7, XS_PATH);

	(void)arg;
	CHILD_CHECK(v);
	CHILD_CHECK(libxenvchan_write(v, "bye", 3) == 3);
	libxenvchan_close(v);
	return 0;
}

Test(simxen_vchan, the_server_sees_the_client_leave)
{
	struct libxenvchan *v;
	char buf[8];
	pid_t pid;
	int waits = 0;

	simxen_domain_create(7, "guest");
	simxen_use_domid(7);
	v = libxenvchan_server_init(NULL, 0, XS_PATH, 4096, 4096);
	simxen_use_domid(0);
	cr_assert_not_null(v, "server_init: %s", strerror(errno));
	v->blocking = 0;
	pid = simxen_spawn(0, client_that_leaves, NULL);
	cr_assert_eq(simxen_wait(pid), 0);
	/* It connected (cli_live 2 -> 1) and left (-> 0) while we slept. */
	while (libxenvchan_is_open(v)) {
		cr_assert(simxen_readable(libxenvchan_fd_for_select(v), 10000));
		cr_assert_eq(libxenvchan_wait(v), 0);
		cr_assert_lt(++waits, 100);
	}
	cr_assert_eq(libxenvchan_is_open(v), 0);
	cr_assert_eq(libxenvchan_read(v, buf, sizeof(buf)), 3);
	cr_assert_eq(memcmp(buf, "bye", 3), 0);
	libxenvchan_close(v);
}
