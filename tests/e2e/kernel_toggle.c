/*
 * kernel_toggle SOCKET FLOWS COMMAND: the kernel backend's aspects switched
 * off and on again while it runs, through the agent collector as xflowtop's
 * space key does.  COMMAND (a shell command: tests/e2e/kernel_veth.sh gives
 * pings across its veth pair) is run three times: with every aspect on,
 * all off, then on again.  Off, no record may come, whatever the traffic
 * (the host's too); on again, records come back, as many as the first
 * time (half, at least: the host adds its own).  Exit 0, or 1 with what
 * went wrong.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "collectors/agent_collector.h"
#include "tests/e2e/collector_pump.h"
#include "xflow/clock.h"
#include "xflow/collector.h"

static const struct xflow_collector_ops *ops = &xflow_collector_agent;
static struct xflow_collector *coll;
static uint64_t records;

static void emit(void *ctx, const struct xflow_record *r, uint64_t t)
{
	(void)ctx;
	(void)r;
	(void)t;
	records++;
}

/* Read for @ms: what the agent drains reaches us within 10 ms. */
static void pump(int ms)
{
	e2e_pump(ops, coll, emit, NULL, ms);
}

/* Switch every aspect; how many there are. */
static uint32_t set_all(int on)
{
	struct xflow_aspect_info ai;
	uint32_t n = 0;
	for (; ops->aspect_info(coll, n, &ai) == 0; n++)
		if (ops->aspect_set(coll, n, on)) {
			printf("FAIL: cannot switch aspect %s %s: %s\n", ai.name, on ? "on" : "off",
			       ops->last_error(coll) ? ops->last_error(coll) : "?");
			exit(1);
		}
	return n;
}

/* Records that came while @cmd ran, and a little after. */
static uint64_t during(const char *cmd)
{
	pump(300);
	uint64_t before = records;
	if (system(cmd) != 0) {
		printf("FAIL: %s failed\n", cmd);
		exit(1);
	}
	pump(700);
	return records - before;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: kernel_toggle SOCKET FLOWS COMMAND\n");
		return 2;
	}
	char opts[1024], err[1024];
	snprintf(opts, sizeof(opts), "socket=%s,flows=%s", argv[1], argv[2]);
	if (ops->open(opts, &coll, err, sizeof(err))) {
		printf("FAIL: cannot open the agent collector: %s\n", err);
		return 1;
	}
	uint64_t on1 = during(argv[3]);
	uint32_t n = set_all(0);
	/* What was in flight when they went off drains first. */
	pump(500);
	uint64_t off = during(argv[3]);
	set_all(1);
	uint64_t on2 = during(argv[3]);
	printf("toggle: %u aspects; records with them on %" PRIu64 ", off %" PRIu64 ", on again %" PRIu64 "\n", n,
	       on1, off, on2);
	ops->close(coll);
	if (n == 0 || on1 == 0) {
		printf("FAIL: no aspect, or no record with them on\n");
		return 1;
	}
	if (off != 0) {
		printf("FAIL: %" PRIu64 " records came with every aspect off\n", off);
		return 1;
	}
	if (on2 < on1 / 2) {
		printf("FAIL: switched on again, %" PRIu64 " records where the first run had %" PRIu64 "\n", on2, on1);
		return 1;
	}
	return 0;
}
