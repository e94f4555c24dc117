/* Knob parsing shared by xensim and the domains: see knobs.h. */
#include "sim/knobs.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const sim_knob_names[] = {
	"rate", "size", "guests", "delay", "jitter", "seed", "duration",
	"block-rate", "block-service", "truth", "hold", "xentrace", "pcpus",
	"wake-delay", "notify-delay", "xen-irq", NULL,
};

void sim_knobs_init(struct sim_knobs *k)
{
	memset(k, 0, sizeof(*k));
	k->rate = 1000;
	k->size = 1000;
	k->guests = 1;
	k->seed = 1;
	k->duration_s = 5;
	k->block_rate = 100;
	k->block_service_ns = 200000;
}

static int parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(*out))
		return -1;
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (*s == '-' || *s == '\0')
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || *end ? -1 : 0;
}

int sim_parse_duration(const char *s, int64_t *ns)
{
	static const struct { const char *unit; double mult; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
	};
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit) == 0) {
			v *= units[i].mult;
			if (v > 3600e9)
				return -1;
			*ns = (int64_t)llround(v);
			return 0;
		}
	}
	return -1;
}

static void list_delayable(FILE *err)
{
	fprintf(err, "  stages that can be delayed:");
	for (int i = 0; i < ST_COUNT; i++)
		if (sim_stages[i].delayable)
			fprintf(err, " %s%s",
				strcmp(sim_stages[i].name, "dev_queue_xmit") == 0 ?
					(sim_stages[i].dom0 ? "dom0:" : "domU:") : "",
				sim_stages[i].name);
	fprintf(err, "\n");
}

/* Splits --@name's "KEY=VALUE": copies KEY to @key and returns VALUE, or
 * says that @value is not @form and returns NULL when there is no '=' or
 * no key, or the key does not fit. */
static const char *split_key(const char *name, const char *value, const char *form, char *key, size_t size,
			     FILE *err)
{
	const char *eq = strchr(value, '=');

	if (!eq || eq == value || (size_t)(eq - value) >= size) {
		fprintf(err, "xensim: --%s: '%s' is not %s\n", name, value, form);
		return NULL;
	}
	memcpy(key, value, (size_t)(eq - value));
	key[eq - value] = '\0';
	return eq + 1;
}

static int set_delay(struct sim_knobs *k, const char *value, FILE *err)
{
	char stage[64];
	const char *dur = split_key("delay", value, "STAGE=DURATION (e.g. netif_receive_skb=2ms)", stage,
				    sizeof(stage), err);
	int64_t ns;
	int st;

	if (!dur)
		return -1;
	st = sim_stage_by_delay_name(stage);
	if (st == -2) {
		fprintf(err, "xensim: --delay: stage '%s' runs in both domains; write domU:%s or dom0:%s\n",
			stage, stage, stage);
		return -1;
	}
	if (st < 0) {
		bool known = false;

		for (int i = 0; i < ST_COUNT; i++)
			known |= strcmp(sim_stages[i].name, stage) == 0;
		if (known)
			fprintf(err, "xensim: --delay: stage '%s' cannot be delayed (its caller needs its result at once)\n",
				stage);
		else
			fprintf(err, "xensim: --delay: no stage '%s'\n", stage);
		list_delayable(err);
		return -1;
	}
	if (sim_parse_duration(dur, &ns) < 0) {
		fprintf(err, "xensim: --delay: bad duration '%s' for %s (write e.g. 2ms, 150us, 1s; at most 3600s)\n",
			dur, stage);
		return -1;
	}
	k->delay_ns[st] = ns;
	return 0;
}

/* --wake-delay DOM=DURATION */
static int set_wake_delay(struct sim_knobs *k, const char *value, FILE *err)
{
	char dom[16];
	const char *dur = split_key("wake-delay", value, "DOM=DURATION (e.g. 0=1ms)", dom, sizeof(dom), err);
	uint64_t d;
	int64_t ns;

	if (!dur)
		return -1;
	if (parse_u64(dom, &d) < 0 || d > KNOBS_MAX_GUESTS) {
		fprintf(err, "xensim: --wake-delay: '%s' is not a domain id between 0 and %d\n", dom,
			KNOBS_MAX_GUESTS);
		return -1;
	}
	if (sim_parse_duration(dur, &ns) < 0 || ns > (int64_t)1e9) {
		fprintf(err, "xensim: --wake-delay: bad duration '%s' for domain %s (write e.g. 1ms, 150us; at most 1s)\n",
			dur, dom);
		return -1;
	}
	k->wake_delay_ns[d] = ns;
	return 0;
}

/* A count between @lo and @hi for --@name, described as @what (and @unit). */
static int set_count(const char *name, const char *value, uint64_t lo, uint64_t hi, const char *what,
		     const char *unit, uint32_t *out, FILE *err)
{
	uint64_t u;

	if (parse_u64(value, &u) < 0 || u < lo || u > hi) {
		fprintf(err, "xensim: --%s: '%s' is not %s between %" PRIu64 " and %" PRIu64 "%s\n", name, value,
			what, lo, hi, unit);
		return -1;
	}
	*out = (uint32_t)u;
	return 0;
}

/* A file name for --@name. */
static int set_path(const char *name, const char *value, const char **out, FILE *err)
{
	if (!*value) {
		fprintf(err, "xensim: --%s: empty file name\n", name);
		return -1;
	}
	*out = value;
	return 0;
}

bool sim_knobs_sched(const struct sim_knobs *k)
{
	if (k->xentrace || k->pcpus || k->notify_delay_ns || k->xen_irq_ns)
		return true;
	for (int i = 0; i <= KNOBS_MAX_GUESTS; i++)
		if (k->wake_delay_ns[i])
			return true;
	return false;
}

int sim_knobs_check(const struct sim_knobs *k, FILE *err)
{
	for (uint32_t i = k->guests + 1; i <= KNOBS_MAX_GUESTS; i++) {
		if (k->wake_delay_ns[i]) {
			fprintf(err, "xensim: --wake-delay: no domain %u (the host has domains 0..%u)\n", i,
				k->guests);
			return -1;
		}
	}
	return 0;
}

int sim_knobs_set(struct sim_knobs *k, const char *name, const char *value, FILE *err)
{
	uint64_t u;
	double d;

	if (strcmp(name, "rate") == 0 || strcmp(name, "block-rate") == 0) {
		if (parse_double(value, &d) < 0 || d < 0 || d > 1e7) {
			fprintf(err, "xensim: --%s: '%s' is not a rate between 0 and 10000000 per second\n",
				name, value);
			return -1;
		}
		*(name[0] == 'r' ? &k->rate : &k->block_rate) = d;
	} else if (strcmp(name, "size") == 0) {
		return set_count(name, value, 1, KNOBS_MAX_SIZE, "a message size", " bytes", &k->size, err);
	} else if (strcmp(name, "guests") == 0) {
		return set_count(name, value, 1, KNOBS_MAX_GUESTS, "a number of guests", "", &k->guests, err);
	} else if (strcmp(name, "delay") == 0) {
		return set_delay(k, value, err);
	} else if (strcmp(name, "jitter") == 0) {
		if (parse_double(value, &d) < 0 || d < 0 || d > 100) {
			fprintf(err, "xensim: --jitter: '%s' is not a percentage between 0 and 100\n", value);
			return -1;
		}
		k->jitter_pct = d;
	} else if (strcmp(name, "seed") == 0) {
		if (parse_u64(value, &u) < 0) {
			fprintf(err, "xensim: --seed: '%s' is not an unsigned 64-bit number\n", value);
			return -1;
		}
		k->seed = u;
	} else if (strcmp(name, "duration") == 0) {
		int64_t ns;

		if (parse_double(value, &d) == 0)
			ns = (int64_t)(d * 1e9);
		else if (sim_parse_duration(value, &ns) < 0)
			ns = -1;
		if (ns <= 0 || ns > (int64_t)86400e9) {
			fprintf(err, "xensim: --duration: '%s' is not a duration between 0 and 86400 seconds (e.g. 10 or 1.5s)\n",
				value);
			return -1;
		}
		k->duration_s = (double)ns / 1e9;
	} else if (strcmp(name, "block-service") == 0) {
		int64_t ns;

		if (sim_parse_duration(value, &ns) < 0 || ns > (int64_t)10e9) {
			fprintf(err, "xensim: --block-service: bad duration '%s' (write e.g. 200us; at most 10s)\n",
				value);
			return -1;
		}
		k->block_service_ns = ns;
	} else if (strcmp(name, "hold") == 0) {
		if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0) {
			fprintf(err, "xensim: --hold: '%s' is not 0 or 1\n", value);
			return -1;
		}
		k->hold = value[0] == '1';
	} else if (strcmp(name, "xentrace") == 0) {
		return set_path(name, value, &k->xentrace, err);
	} else if (strcmp(name, "pcpus") == 0) {
		return set_count(name, value, 1, KNOBS_MAX_PCPUS, "a number of physical CPUs", "", &k->pcpus, err);
	} else if (strcmp(name, "wake-delay") == 0) {
		return set_wake_delay(k, value, err);
	} else if (strcmp(name, "notify-delay") == 0) {
		int64_t ns;

		if (sim_parse_duration(value, &ns) < 0 || ns > (int64_t)1e9) {
			fprintf(err, "xensim: --notify-delay: bad duration '%s' (write e.g. 500us, 2ms; at most 1s)\n",
				value);
			return -1;
		}
		k->notify_delay_ns = ns;
	} else if (strcmp(name, "xen-irq") == 0) {
		int64_t ns;

		if (sim_parse_duration(value, &ns) < 0 || ns > KNOBS_MAX_XEN_IRQ_NS) {
			fprintf(err, "xensim: --xen-irq: bad duration '%s' (write e.g. 300us, 1ms; at most 100ms)\n",
				value);
			return -1;
		}
		k->xen_irq_ns = ns;
	} else if (strcmp(name, "truth") == 0) {
		return set_path(name, value, &k->truth, err);
	} else {
		return 1;
	}
	return 0;
}

void sim_knobs_to_argv(const struct sim_knobs *k, char **argv, int *argc, int max)
{
	char buf[256];

#define PUSH(...) do { \
		snprintf(buf, sizeof(buf), __VA_ARGS__); \
		if (*argc < max) argv[(*argc)++] = strdup(buf); \
	} while (0)
	PUSH("--rate=%.17g", k->rate);
	PUSH("--size=%" PRIu32, k->size);
	PUSH("--guests=%" PRIu32, k->guests);
	for (int i = 0; i < ST_COUNT; i++)
		if (k->delay_ns[i])
			PUSH("--delay=%s%s=%" PRId64 "ns",
			     strcmp(sim_stages[i].name, "dev_queue_xmit") == 0 ?
				     (sim_stages[i].dom0 ? "dom0:" : "domU:") : "",
			     sim_stages[i].name, k->delay_ns[i]);
	PUSH("--jitter=%.17g", k->jitter_pct);
	PUSH("--seed=%" PRIu64, k->seed);
	PUSH("--duration=%.17g", k->duration_s);
	PUSH("--block-rate=%.17g", k->block_rate);
	PUSH("--block-service=%" PRId64 "ns", k->block_service_ns);
	if (k->truth)
		PUSH("--truth=%s", k->truth);
	if (k->hold)
		PUSH("--hold=1");
	/* --xentrace is the launcher's; the domains learn the rest of the
	 * model from its shared memory, and get its knobs only to check them
	 * alike. */
	if (k->pcpus)
		PUSH("--pcpus=%" PRIu32, k->pcpus);
	for (int i = 0; i <= KNOBS_MAX_GUESTS; i++)
		if (k->wake_delay_ns[i])
			PUSH("--wake-delay=%d=%" PRId64 "ns", i, k->wake_delay_ns[i]);
	if (k->notify_delay_ns)
		PUSH("--notify-delay=%" PRId64 "ns", k->notify_delay_ns);
	if (k->xen_irq_ns)
		PUSH("--xen-irq=%" PRId64 "ns", k->xen_irq_ns);
#undef PUSH
}

void sim_knobs_usage(FILE *out)
{
	fputs("  --rate MSGS/S         messages per second each guest sends (default 1000; 0: none)\n"
	      "  --size BYTES          bytes per message; larger than one MSS (1448) is split\n"
	      "                        into segments (default 1000, at most 1048576)\n"
	      "  --guests N            number of guests, domain ids 1..N (default 1, at most 64)\n"
	      "  --delay STAGE=DUR     add DUR (ns, us, ms, s) to the hop into STAGE, as a\n"
	      "                        pipeline delay (repeatable; dom0:/domU: picks a side)\n"
	      "  --jitter PCT          vary delays and disk service times by +-PCT% (default 0)\n"
	      "  --seed N              seed of every random choice (default 1)\n"
	      "  --duration SECONDS    how long the guests send (default 5)\n"
	      "  --block-rate REQS/S   block requests per second each guest issues (default 100)\n"
	      "  --block-service DUR   the disk's service time per request (default 200us)\n"
	      "  --truth FILE          write when each message passed each stage to FILE\n"
	      "  --hold                boot, then wait for SIGUSR1 to xensim before sending\n"
	      "                        (time to attach tracers); --duration counts from then\n"
	      "  --xentrace FILE       model Xen's scheduler and write its records to FILE as\n"
	      "                        xentrace does (TSC at 2.4 GHz); see sim/README\n"
	      "  --pcpus N             physical CPUs of the scheduler model (default 2)\n"
	      "  --wake-delay DOM=DUR  after each wake, domain DOM's vCPU waits DUR for a\n"
	      "                        pCPU that a CPU hog holds (repeatable)\n"
	      "  --notify-delay DUR    an event channel notification wakes its receiver DUR\n"
	      "                        after the sender's hypercall\n"
	      "  --xen-irq DUR         Xen handles an interrupt of DUR (at most 100ms) on a\n"
	      "                        pCPU each time it switches to a guest's vCPU, which\n"
	      "                        runs once the interrupt is over\n",
	      out);
}
