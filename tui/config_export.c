/*
 * The exporter's configuration keys: listen, host, metrics-max-hops,
 * metrics-max-connections, metrics-max-connections-per-address and
 * metrics-request-timeout (xflowtop.conf(5)); headless is a plain boolean
 * in config.c.  config.c routes them here so that the file and --set
 * accept the same words.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "tui/config.h"

/* Defaults: 64 hops of 123 series each is about 7,900 series and 850 KiB
 * a scrape per host; at most 1,024 (126,000 series, 13 MiB a scrape, which
 * is already more than a fleet's Prometheus wants from one host).
 * Prometheus itself needs one connection per target, so an address needs
 * few: a few Prometheus servers behind one address still fit in 8, and
 * four addresses are needed to fill the server.  A scraper sends its
 * request at once; 5 seconds is more than any needs on a working network.
 */
#define DEFAULT_MAX_HOPS 64
#define MAX_MAX_HOPS 1024
#define DEFAULT_MAX_CONNECTIONS 32
#define MAX_MAX_CONNECTIONS 1024
#define DEFAULT_MAX_PER_ADDRESS 8
#define DEFAULT_REQUEST_TIMEOUT_S 5
#define MAX_REQUEST_TIMEOUT_S 300

/* Every error is -EINVAL with what was expected in @err. */
#define BAD(...) (snprintf(err, errlen, __VA_ARGS__), -EINVAL)

void xft_config_export_defaults(struct xft_config *c)
{
	c->listen[0] = '\0';
	c->host[0] = '\0';
	c->metrics_max_hops = DEFAULT_MAX_HOPS;
	c->metrics_max_connections = DEFAULT_MAX_CONNECTIONS;
	c->metrics_max_per_address = DEFAULT_MAX_PER_ADDRESS;
	c->metrics_request_timeout_s = DEFAULT_REQUEST_TIMEOUT_S;
	c->headless = 0;
}

static int parse_u32(const char *v, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	if (!isdigit((unsigned char)*v))
		return -1;
	errno = 0;
	unsigned long x = strtoul(v, &end, 10);
	if (errno || *end || x < lo || x > hi)
		return -1;
	*out = (uint32_t)x;
	return 0;
}

/* The keys that are a number from 1 to a maximum. */
static const struct count_key {
	const char *key;
	uint32_t max;
	size_t offset; /* of its field in struct xft_config */
	const char *what; /* before "1 to max" in the error */
} counts[] = {
	{ "metrics-max-hops", MAX_MAX_HOPS, offsetof(struct xft_config, metrics_max_hops),
	  "hops with series of their own, " },
	{ "metrics-max-connections", MAX_MAX_CONNECTIONS, offsetof(struct xft_config, metrics_max_connections), "" },
	{ "metrics-max-connections-per-address", MAX_MAX_CONNECTIONS,
	  offsetof(struct xft_config, metrics_max_per_address), "" },
	{ "metrics-request-timeout", MAX_REQUEST_TIMEOUT_S, offsetof(struct xft_config, metrics_request_timeout_s),
	  "whole seconds, " },
};

int xft_config_export_set(struct xft_config *c, const char *key, const char *v, char *err, size_t errlen)
{
	if (!strcmp(key, "listen")) {
		struct xfx_listen l;
		char why[256];
		if (xfx_listen_parse(v, &l, why, sizeof(why)))
			return BAD("bad value '%s' for 'listen': %s", v, why);
		snprintf(c->listen, sizeof(c->listen), "%s", v);
		return 0;
	}
	if (!strcmp(key, "host")) {
		size_t n = strlen(v);
		int ok = n > 0 && n < sizeof(c->host);
		for (size_t i = 0; ok && i < n; i++)
			ok = (unsigned char)v[i] >= 0x20 && v[i] != 0x7f;
		if (!ok)
			return BAD("bad value '%s' for 'host': expected the host label, 1 to %zu "
						 "printable characters", v, sizeof(c->host) - 1);
		memcpy(c->host, v, n + 1);
		return 0;
	}
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		const struct count_key *k = &counts[i];
		if (strcmp(key, k->key))
			continue;
		if (parse_u32(v, 1, k->max, (uint32_t *)((char *)c + k->offset)))
			return BAD("bad value '%s' for '%s': expected %s1 to %u", v, key, k->what, (unsigned)k->max);
		return 0;
	}
	return BAD("unknown key '%s'", key);
}

int xft_config_export_check(const struct xft_config *c, char *err, size_t errlen)
{
	if (c->headless && !c->listen[0])
		return BAD("--headless shows nothing and only serves /metrics: give --listen "
					 "ADDR:PORT too (e.g. --listen 127.0.0.1:9464)");
	if (c->headless && c->batch > 0)
		return BAD("--headless prints nothing, while -b and --json print tables: "
					 "choose one");
	return 0;
}
