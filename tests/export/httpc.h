/*
 * tests/export/httpc.h — a minimal HTTP/1.0 client over loopback for the
 * server tests: one request, read to the end, status and body split.
 * Header-only.
 */
#ifndef XFLOW_TESTS_HTTPC_H
#define XFLOW_TESTS_HTTPC_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct http_resp {
	int status;       /* 0: no answer */
	char *raw;        /* head and body, NUL-terminated */
	size_t len;
	const char *body; /* in raw */
	size_t body_len;
};

/* "A.B.C.D:PORT" as a socket address; 0 or -1. */
static int http_addr(const char *addr, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(addr, ':');
	if (!colon || (size_t)(colon - addr) >= sizeof(host))
		return -1;
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)atoi(colon + 1));
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

/* A connected socket to "A.B.C.D:PORT", or -1. */
static int http_connect(const char *addr)
{
	struct sockaddr_in sa;
	if (http_addr(addr, &sa))
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Read until the peer closes or @timeout_ms passes without data.
 * Returns bytes read, -1 on error; *out is malloc'd and NUL-terminated. */
static long http_read_all(int fd, int timeout_ms, char **out)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	if (!buf)
		return -1;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, timeout_ms) <= 0)
			break;
		if (n + 4096 > cap) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb) {
				free(buf);
				return -1;
			}
			buf = nb;
		}
		ssize_t r = recv(fd, buf + n, cap - n - 1, 0);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*out = buf;
	return (long)n;
}

static int http_do(const char *addr, const char *request, struct http_resp *r)
{
	memset(r, 0, sizeof(*r));
	int fd = http_connect(addr);
	if (fd < 0)
		return -1;
	size_t len = strlen(request);
	if (send(fd, request, len, MSG_NOSIGNAL) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	long n = http_read_all(fd, 5000, &r->raw);
	close(fd);
	if (n < 0)
		return -1;
	r->len = (size_t)n;
	if (sscanf(r->raw, "HTTP/1.%*d %d", &r->status) != 1)
		r->status = 0;
	char *sep = strstr(r->raw, "\r\n\r\n");
	r->body = sep ? sep + 4 : r->raw + r->len;
	r->body_len = (size_t)(r->raw + r->len - r->body);
	return 0;
}

static int http_get(const char *addr, const char *method, const char *path, struct http_resp *r)
{
	char req[512];
	snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: test\r\n\r\n", method, path);
	return http_do(addr, req, r);
}

static void http_resp_free(struct http_resp *r)
{
	free(r->raw);
	r->raw = NULL;
}

#endif
