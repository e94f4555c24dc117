/*
 * truth-check: verifies a xensim truth file and prints per-hop latencies.
 *
 *   truth-check [--guests N] [--exclude-guest N]... [--min-msgs N] [--min-blk N]
 *               [--tsv] FILE
 *
 * Checks that every message segment and block request passed every stage of
 * its path exactly once and in order (sim/stage.c), that every segment of a
 * message arrived, and that each guest's message and request numbers have no
 * gaps: nothing was lost.  With --min-msgs/--min-blk, each of guests 1..N
 * (--guests) must have sent at least that many messages/requests.  Guests named by --exclude-guest (killed during the
 * run) are not checked.  Then prints, for each hop between consecutive
 * stages and end to end, the count and the p50/p99/max latency.
 *
 * Exit status: 0 verified, 1 the truth shows a problem, 2 usage or I/O error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/knobs.h"
#include "sim/stage.h"

#define MAX_REPORTED 10

struct unit {
	bool used;
	uint8_t path;
	uint16_t guest;
	uint32_t msg;
	uint16_t seg, nseg;
	int64_t t[ST_COUNT];
};

struct table {
	struct unit *u;
	size_t cap, n;
};

struct hop {
	int from, to; /* stage ids; from == -1: end to end */
	int64_t *v;
	size_t n, cap;
};

static uint64_t hash_key(int path, unsigned guest, uint32_t msg, unsigned seg)
{
	uint64_t h = ((uint64_t)path << 60) ^ ((uint64_t)guest << 44) ^ ((uint64_t)seg << 32) ^ msg;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

static struct unit *lookup(struct table *t, int path, unsigned guest, uint32_t msg, unsigned seg);

/* The unit, or NULL: never inserts (safe while iterating). */
static struct unit *find(const struct table *t, int path, unsigned guest, uint32_t msg, unsigned seg)
{
	for (size_t i = hash_key(path, guest, msg, seg) & (t->cap - 1); t->u[i].used;
	     i = (i + 1) & (t->cap - 1)) {
		struct unit *u = &t->u[i];

		if (u->path == path && u->guest == guest && u->msg == msg && u->seg == seg)
			return u;
	}
	return NULL;
}

static void grow(struct table *t)
{
	struct table n = { calloc(t->cap * 2, sizeof(struct unit)), t->cap * 2, 0 };

	if (!n.u) {
		fprintf(stderr, "truth-check: out of memory\n");
		exit(2);
	}
	for (size_t i = 0; i < t->cap; i++)
		if (t->u[i].used) {
			struct unit *d = lookup(&n, t->u[i].path, t->u[i].guest, t->u[i].msg, t->u[i].seg);

			*d = t->u[i];
		}
	free(t->u);
	*t = n;
}

static struct unit *lookup(struct table *t, int path, unsigned guest, uint32_t msg, unsigned seg)
{
	size_t i;

	if ((t->n + 1) * 2 > t->cap)
		grow(t);
	for (i = hash_key(path, guest, msg, seg) & (t->cap - 1); t->u[i].used;
	     i = (i + 1) & (t->cap - 1)) {
		struct unit *u = &t->u[i];

		if (u->path == path && u->guest == guest && u->msg == msg && u->seg == seg)
			return u;
	}
	t->u[i] = (struct unit){ .used = true, .path = (uint8_t)path, .guest = (uint16_t)guest,
				 .msg = msg, .seg = (uint16_t)seg };
	for (int s = 0; s < ST_COUNT; s++)
		t->u[i].t[s] = -1;
	t->n++;
	return &t->u[i];
}

static void hop_add(struct hop *h, int64_t v)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 1024;
		h->v = realloc(h->v, h->cap * sizeof(*h->v));
		if (!h->v) {
			fprintf(stderr, "truth-check: out of memory\n");
			exit(2);
		}
	}
	h->v[h->n++] = v;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int64_t pct(const struct hop *h, double p)
{
	size_t i = (size_t)(p * (double)(h->n - 1) + 0.5);

	return h->v[i];
}

static int problems;

static void problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void problem(const char *fmt, ...)
{
	va_list ap;

	if (problems++ >= MAX_REPORTED)
		return;
	va_start(ap, fmt);
	fputs("truth-check: ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
}

/* Stages of @path in rank order. */
static int path_stages(int path, int *out)
{
	int n = 0;

	for (int r = 1; r < 64; r++)
		for (int s = 0; s < ST_COUNT; s++)
			if ((int)sim_stages[s].path == path && sim_stages[s].rank == r)
				out[n++] = s;
	return n;
}

static void usage(FILE *out)
{
	fputs("usage: truth-check [--guests N] [--exclude-guest N]... [--min-msgs N] [--min-blk N]\n"
	      "                   [--tsv] FILE\n", out);
}

int main(int argc, char **argv)
{
	bool excluded[KNOBS_MAX_GUESTS + 1] = { false }, tsv = false;
	unsigned long min_msgs = 0, min_blk = 0, nguests = 0;
	struct table t = { calloc(1024, sizeof(struct unit)), 1024, 0 };
	uint32_t max_msg[2][KNOBS_MAX_GUESTS + 1];
	bool seen[2][KNOBS_MAX_GUESTS + 1] = { { false } };
	const char *path = NULL;
	char line[512];
	unsigned long lineno = 0;
	FILE *in;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--exclude-guest") == 0 && i + 1 < argc) {
			unsigned long g = strtoul(argv[++i], NULL, 10);

			if (g < 1 || g > KNOBS_MAX_GUESTS) {
				fprintf(stderr, "truth-check: --exclude-guest: '%s' is not a guest id\n", argv[i]);
				return 2;
			}
			excluded[g] = true;
		} else if (strcmp(argv[i], "--min-msgs") == 0 && i + 1 < argc) {
			min_msgs = strtoul(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--min-blk") == 0 && i + 1 < argc) {
			min_blk = strtoul(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--guests") == 0 && i + 1 < argc) {
			nguests = strtoul(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--tsv") == 0) {
			tsv = true;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (argv[i][0] == '-' || path) {
			usage(stderr);
			return 2;
		} else {
			path = argv[i];
		}
	}
	if (!path || !t.u) {
		usage(stderr);
		return 2;
	}
	in = fopen(path, "r");
	if (!in) {
		fprintf(stderr, "truth-check: %s: %s\n", path, strerror(errno));
		return 2;
	}
	memset(max_msg, 0, sizeof(max_msg));
	while (fgets(line, sizeof(line), in)) {
		char pathname[8], stage[64];
		unsigned dom, guest, seg, nseg;
		uint32_t msg;
		int64_t ns;
		int p, st;
		struct unit *u;

		lineno++;
		if (line[0] == '#') {
			if (lineno == 1 && strcmp(line, "#time_ns\tdom\tguest\tpath\tmsg\tseg\tnseg\tstage\taddr\n") != 0) {
				fprintf(stderr, "truth-check: %s:1: not a xensim truth file (header)\n", path);
				return 2;
			}
			continue;
		}
		if (sscanf(line, "%" SCNd64 "\t%u\t%u\t%7[a-z]\t%" SCNu32 "\t%u\t%u\t%63s\t", &ns, &dom,
			   &guest, pathname, &msg, &seg, &nseg, stage) != 8 ||
		    guest < 1 || guest > KNOBS_MAX_GUESTS || nseg == 0 || seg >= nseg) {
			problem("%s:%lu: malformed line", path, lineno);
			continue;
		}
		p = strcmp(pathname, "net") == 0 ? SIM_PATH_NET : strcmp(pathname, "blk") == 0 ? SIM_PATH_BLK : -1;
		st = p < 0 ? -1 : sim_stage_lookup((enum sim_path)p, dom == 0, stage);
		if (st < 0) {
			problem("%s:%lu: unknown stage '%s' for path %s in dom%u", path, lineno, stage, pathname, dom);
			continue;
		}
		if (excluded[guest])
			continue;
		if (!sim_stages[st].dom0 && dom != guest)
			problem("%s:%lu: guest %u's stage %s recorded by dom%u", path, lineno, guest, stage, dom);
		u = lookup(&t, p, guest, msg, seg);
		if (u->t[st] >= 0)
			problem("%s %u/%u seg %u passed %s twice", pathname, guest, msg, seg, stage);
		u->t[st] = ns;
		u->nseg = (uint16_t)nseg;
		if (!seen[p][guest] || msg > max_msg[p][guest])
			max_msg[p][guest] = msg;
		seen[p][guest] = true;
	}
	fclose(in);

	/* Every unit: all stages, in rank order. */
	struct hop hops[2][ST_COUNT + 1];
	int order[2][ST_COUNT], nst[2];
	unsigned long units[2] = { 0, 0 };

	memset(hops, 0, sizeof(hops));
	for (int p = 0; p < 2; p++) {
		nst[p] = path_stages(p, order[p]);
		for (int i = 0; i < nst[p]; i++) {
			int prev_rank_last = -1;

			/* The hop into stage i comes from the last stage of the previous rank. */
			for (int j = i - 1; j >= 0; j--)
				if (sim_stages[order[p][j]].rank < sim_stages[order[p][i]].rank) {
					prev_rank_last = order[p][j];
					break;
				}
			hops[p][i] = (struct hop){ .from = prev_rank_last, .to = order[p][i] };
		}
		hops[p][nst[p]] = (struct hop){ .from = order[p][0], .to = -1 };
	}
	for (size_t i = 0; i < t.cap; i++) {
		struct unit *u = &t.u[i];
		int p, missing = -1;
		int64_t first, last = 0;

		if (!u->used)
			continue;
		p = u->path;
		units[p]++;
		for (int s = 0; s < nst[p]; s++)
			if (u->t[order[p][s]] < 0) {
				missing = order[p][s];
				break;
			}
		if (missing >= 0) {
			problem("%s guest %u msg %" PRIu32 " seg %u never passed %s%s (lost)",
				sim_path_name((enum sim_path)p), u->guest, u->msg, u->seg,
				sim_stages[missing].dom0 ? "dom0:" : "", sim_stages[missing].name);
			continue;
		}
		for (int s = 1; s < nst[p]; s++) {
			struct hop *h = &hops[p][s];

			if (u->t[h->to] < u->t[h->from])
				problem("%s guest %u msg %" PRIu32 " seg %u passed %s before %s",
					sim_path_name((enum sim_path)p), u->guest, u->msg, u->seg,
					sim_stages[h->to].name, sim_stages[h->from].name);
			hop_add(h, u->t[h->to] - u->t[h->from]);
		}
		first = u->t[order[p][0]];
		for (int s = 0; s < nst[p]; s++)
			if (u->t[order[p][s]] > last)
				last = u->t[order[p][s]];
		hop_add(&hops[p][nst[p]], last - first);
		/* Every segment of the message is here. */
		if (u->seg == 0)
			for (unsigned s = 1; s < u->nseg; s++) {
				if (!find(&t, p, u->guest, u->msg, s))
					problem("net guest %u msg %" PRIu32 " lost segment %u of %u",
						u->guest, u->msg, s, u->nseg);
			}
	}
	/* No gaps in each guest's numbering. */
	for (int p = 0; p < 2; p++)
		for (unsigned g = 1; g <= KNOBS_MAX_GUESTS; g++) {
			unsigned long count;

			if (!seen[p][g]) {
				if (g <= nguests && !excluded[g] && (p == SIM_PATH_NET ? min_msgs : min_blk))
					problem("%s guest %u: no messages at all", sim_path_name((enum sim_path)p), g);
				continue;
			}
			for (uint32_t m = 0; m <= max_msg[p][g]; m++)
				if (!find(&t, p, g, m, 0)) {
					problem("%s guest %u: message %" PRIu32 " never seen (lost)",
						sim_path_name((enum sim_path)p), g, m);
				}
			count = (unsigned long)max_msg[p][g] + 1;
			if (count < (p == SIM_PATH_NET ? min_msgs : min_blk))
				problem("%s guest %u: only %lu messages, expected at least %lu",
					sim_path_name((enum sim_path)p), g, count,
					p == SIM_PATH_NET ? min_msgs : min_blk);
		}
	/* The latencies. */
	if (!tsv)
		printf("%-4s %-47s %9s %11s %11s %11s\n", "path", "hop", "count", "p50_us", "p99_us", "max_us");
	for (int p = 0; p < 2; p++)
		for (int i = 1; i <= nst[p]; i++) {
			struct hop *h = &hops[p][i];
			char name[96];

			if (!h->n)
				continue;
			qsort(h->v, h->n, sizeof(*h->v), cmp_i64);
			if (h->to < 0)
				snprintf(name, sizeof(name), "end_to_end");
			else
				snprintf(name, sizeof(name), "%s%s->%s%s",
					 sim_stages[h->from].dom0 ? "0:" : "U:", sim_stages[h->from].name,
					 sim_stages[h->to].dom0 ? "0:" : "U:", sim_stages[h->to].name);
			if (tsv)
				printf("hop\t%s\t%s\t%zu\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\n",
				       sim_path_name((enum sim_path)p), name, h->n, pct(h, 0.5),
				       pct(h, 0.99), h->v[h->n - 1]);
			else
				printf("%-4s %-47s %9zu %11.1f %11.1f %11.1f\n",
				       sim_path_name((enum sim_path)p), name, h->n, pct(h, 0.5) / 1e3,
				       pct(h, 0.99) / 1e3, (double)h->v[h->n - 1] / 1e3);
			free(h->v);
		}
	if (problems > MAX_REPORTED)
		printf("truth-check: ... and %d more problems\n", problems - MAX_REPORTED);
	printf("%s: %lu segments, %lu block requests: %s\n", path, units[0], units[1],
	       problems ? "FAILED" : "ok, every one passed every stage in order");
	free(t.u);
	return problems ? 1 : 0;
}
