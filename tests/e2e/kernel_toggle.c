/*
 * kernel_toggle SOCKET FLOWS MIN COMMAND: the kernel backend's aspects
 * switched off and on again while it runs, through the agent collector as
 * xflowtop's space key does.  COMMAND (a shell command: tests/e2e/kernel_veth.sh
 * gives pings across its veth pair) is run three times: with every aspect
 * on, all off, then on again.  Off, no record may come, whatever the
 * traffic (the host's too); on again, at least MIN records come back or
 * are counted as dropped, MIN being what COMMAND's own traffic makes.  The
 * first run is no measure for the third: the host's own packets pass the
 * same tracepoints, as many as other programs send at that moment (8467
 * records against 2097 were seen while another test served HTTP on
 * loopback).  Exit 0, or 1 with what went wrong.
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

static uint64_t drops(void)
{
	struct xflow_collector_stats st;
	ops->stats(coll, &st);
	return st.drops;
}

/* Records that came while @cmd ran, and a little after; the drops counted
 * meanwhile added to *@dropped. */
static uint64_t during(const char *cmd, uint64_t *dropped)
{
	pump(300);
	uint64_t before = records, d0 = drops();
	if (system(cmd) != 0) {
		printf("FAIL: %s failed\n", cmd);
		exit(1);
	}
	pump(700);
	*dropped += drops() - d0;
	return records - before;
}

int main(int argc, char **argv)
{
	char *end;
	unsigned long long min = argc == 5 ? strtoull(argv[3], &end, 10) : 0;
	if (argc != 5 || !*argv[3] || *end) {
		fprintf(stderr, "usage: kernel_toggle SOCKET FLOWS MIN COMMAND\n");
		return 2;
	}
	char opts[1024], err[1024];
	snprintf(opts, sizeof(opts), "socket=%s,flows=%s", argv[1], argv[2]);
	if (ops->open(opts, &coll, err, sizeof(err))) {
		printf("FAIL: cannot open the agent collector: %s\n", err);
		return 1;
	}
	uint64_t d1 = 0, doff = 0, d2 = 0;
	uint64_t on1 = during(argv[4], &d1);
	uint32_t n = set_all(0);
	/* What was in flight when they went off drains first. */
	pump(500);
	uint64_t off = during(argv[4], &doff);
	set_all(1);
	uint64_t on2 = during(argv[4], &d2);
	printf("toggle: %u aspects; records with them on %" PRIu64 " (dropped %" PRIu64 "), off %" PRIu64
	       ", on again %" PRIu64 " (dropped %" PRIu64 "), the command's own at least %llu\n",
	       n, on1, d1, off, on2, d2, min);
	ops->close(coll);
	if (n == 0 || on1 + d1 < min) {
		printf("FAIL: no aspect, or fewer than %llu records with them on\n", min);
		return 1;
	}
	if (off != 0) {
		printf("FAIL: %" PRIu64 " records came with every aspect off\n", off);
		return 1;
	}
	if (on2 + d2 < min) {
		printf("FAIL: switched on again, %" PRIu64 " records and %" PRIu64
		       " dropped, fewer than the %llu the command's traffic makes\n",
		       on2, d2, min);
		return 1;
	}
	return 0;
}
