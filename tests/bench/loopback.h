/*
 * tests/bench/loopback.h — a TCP connection to a server on this host, for
 * the load clients of the real-server benchmarks (mc_client.c,
 * http_client.c).  Header-only: each client is built alone by its script.
 */
#ifndef XFLOW_TESTS_BENCH_LOOPBACK_H
#define XFLOW_TESTS_BENCH_LOOPBACK_H

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

/* A connected socket to 127.0.0.1:@port, or a negative errno. */
static inline int loopback_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1;
	/* Small requests and answers: without this Nagle holds the
	 * pipelined ones back and the client measures its own delays. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

#endif
