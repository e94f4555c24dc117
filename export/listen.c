/*
 * Where /metrics is served: parsing --listen and opening the socket, each
 * with an error that says what to write or do instead.  See
 * export/export.h.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "export/export.h"

#define EXAMPLES "e.g. 9464 or 127.0.0.1:9464 (this host only), 0.0.0.0:9464 (every interface), [::1]:9464"

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

static int parse_port(const char *p, size_t n, uint16_t *out)
{
	if (!n || n > 5)
		return -1;
	unsigned v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)p[i]))
			return -1;
		v = v * 10 + (unsigned)(p[i] - '0');
	}
	if (v > 65535)
		return -1;
	*out = (uint16_t)v;
	return 0;
}

static void describe(struct xfx_listen *l)
{
	char a[INET6_ADDRSTRLEN];
	if (l->sa.ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&l->sa;
		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(l->text, sizeof(l->text), "[%s]:%u", a, (unsigned)ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)&l->sa;
		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		snprintf(l->text, sizeof(l->text), "%s:%u", a, (unsigned)ntohs(s4->sin_port));
	}
}

int xfx_listen_parse(const char *spec, struct xfx_listen *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	size_t n = strlen(spec);
	if (!n)
		return fail(err, errlen, -EINVAL, "empty address: expected [ADDR:]PORT, " EXAMPLES);
	if (n > 80)
		return fail(err, errlen, -EINVAL, "address too long: expected [ADDR:]PORT, " EXAMPLES);
	const char *host = NULL, *port = spec;
	size_t hostlen = 0;
	int v6 = 0;
	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');
		if (!close || close[1] != ':')
			return fail(err, errlen, -EINVAL, "expected [IPV6]:PORT, e.g. [::1]:9464");
		host = spec + 1;
		hostlen = (size_t)(close - host);
		port = close + 2;
		v6 = 1;
	} else {
		const char *colon = strrchr(spec, ':');
		if (colon && memchr(spec, ':', (size_t)(colon - spec)))
			return fail(err, errlen, -EINVAL,
				    "an IPv6 address goes in brackets, e.g. [::1]:9464 or [::]:9464");
		if (colon) {
			host = spec;
			hostlen = (size_t)(colon - spec);
			port = colon + 1;
		}
	}
	uint16_t p;
	if (parse_port(port, strlen(port), &p))
		return fail(err, errlen, -EINVAL, "the port must be a number, 0 to 65535; " EXAMPLES);
	if (host && !hostlen)
		return fail(err, errlen, -EINVAL,
			    "give the address: 127.0.0.1:%u for this host only, 0.0.0.0:%u for every interface",
			    (unsigned)p, (unsigned)p);
	char h[INET6_ADDRSTRLEN + 1];
	if (hostlen >= sizeof(h))
		return fail(err, errlen, -EINVAL, "'%.*s' is not a numeric address; " EXAMPLES, (int)hostlen, host);
	if (host)
		memcpy(h, host, hostlen);
	h[host ? hostlen : 0] = '\0';
	if (!host || !strcmp(h, "localhost"))
		snprintf(h, sizeof(h), "127.0.0.1");
	if (v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&out->sa;
		if (inet_pton(AF_INET6, h, &s6->sin6_addr) != 1)
			return fail(err, errlen, -EINVAL, "'%s' is not an IPv6 address; e.g. [::1]:9464", h);
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(p);
		out->len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&out->sa;
		if (inet_pton(AF_INET, h, &s4->sin_addr) != 1)
			return fail(err, errlen, -EINVAL,
				    "'%s' is not a numeric IPv4 address (names are not looked up, so that "
				    "xflowtop binds where you expect); " EXAMPLES, h);
		s4->sin_family = AF_INET;
		s4->sin_port = htons(p);
		out->len = sizeof(*s4);
	}
	describe(out);
	return 0;
}

int xfx_listen_open(struct xfx_listen *l, int backlog, int *fdp, char *err, size_t errlen)
{
	int fd = socket(l->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(err, errlen, -errno, "%s: cannot create a socket: %s", l->text, strerror(errno));
	int one = 1;
	/* A restarted xflowtop can bind while its old connections linger. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&l->sa, l->len) < 0) {
		int e = errno;
		close(fd);
		switch (e) {
		case EADDRINUSE:
			return fail(err, errlen, -e,
				    "%s: address already in use: another program (perhaps another xflowtop) "
				    "listens there; choose another port with --listen", l->text);
		case EACCES:
			return fail(err, errlen, -e,
				    "%s: permission denied: ports below 1024 need root or CAP_NET_BIND_SERVICE; "
				    "choose a port above 1023", l->text);
		case EADDRNOTAVAIL:
			return fail(err, errlen, -e,
				    "%s: no interface of this host has that address; use 127.0.0.1, 0.0.0.0 "
				    "or one of this host's addresses", l->text);
		default:
			return fail(err, errlen, -e, "%s: cannot bind: %s", l->text, strerror(e));
		}
	}
	if (listen(fd, backlog) < 0) {
		int e = errno;
		close(fd);
		return fail(err, errlen, -e, "%s: cannot listen: %s", l->text, strerror(e));
	}
	/* Port 0 asked for any free port: say which one. */
	socklen_t len = sizeof(l->sa);
	if (getsockname(fd, (struct sockaddr *)&l->sa, &len) == 0) {
		l->len = len;
		describe(l);
	}
	*fdp = fd;
	return 0;
}
