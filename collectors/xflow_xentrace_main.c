/*
 * xflow-xentrace: an interim tool over the xentrace collector — the summary
 * (comparable with `xenalyze --summary`) or a record dump of a trace file.
 * It will be folded into xflowtop's `--xentrace FILE` batch mode.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectors/xentrace.h"
#include "common/crash.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xflow-xentrace --cpu-hz HZ [--summary] [--extras] [--dump] FILE|-\n"
		"\n"
		"Interim tool (to be folded into `xflowtop --xentrace FILE`): reads a file\n"
		"written by xentrace and prints the summary that `xenalyze --summary` prints,\n"
		"line for line, or every record in time order.  FILE may be a pipe, or - for\n"
		"standard input: `xentrace -e all - | xflow-xentrace --cpu-hz 2.4G -`.\n"
		"\n"
		"  --cpu-hz HZ   TSC frequency of the traced host, e.g. 2.4G, 2400M or\n"
		"                2400000000; required: xentrace files do not record it\n"
		"  --summary     the summary `xenalyze --summary` prints, byte for byte\n"
		"                (its percentiles over its own samples; the default)\n"
		"  --extras      also skips, unknown events, lost records, migrations,\n"
		"                wake-to-run latency in ns, domain lifetimes\n"
		"  --dump        one line per record: time, cpu, event, extra words\n"
		"  -h, --help    this text\n");
}

static int parse_hz(const char *s, uint64_t *hz)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || v <= 0)
		return -EINVAL;
	switch (*end) {
	case 'G': case 'g': v *= 1e9; end++; break;
	case 'M': case 'm': v *= 1e6; end++; break;
	case 'K': case 'k': v *= 1e3; end++; break;
	}
	if (*end || v < 1e3 || v > 1e12)
		return -EINVAL;
	*hz = (uint64_t)(v + 0.5);
	return 0;
}

static void print_diags(const struct xentrace_reader *r, const char *path)
{
	for (unsigned i = 0; i < xentrace_reader_ndiags(r); i++) {
		const struct xentrace_diag *d = xentrace_reader_diag(r, i);
		fprintf(stderr, "%s: offset %" PRIu64 ": %s: %s\n", path, d->offset, xentrace_diag_kind_name(d->kind),
			d->what);
	}
	const struct xentrace_reader_stats *st = xentrace_reader_stats(r);
	if (st->diags_dropped)
		fprintf(stderr, "%s: %" PRIu64 " more diagnostics not shown\n", path, st->diags_dropped);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cpu-hz", required_argument, NULL, 'z' }, { "summary", no_argument, NULL, 's' },
		{ "extras", no_argument, NULL, 'e' },       { "dump", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },         { NULL, 0, NULL, 0 },
	};
	uint64_t hz = 0;
	bool extras = false, dump = false;
	xflow_crash_install("xflow-xentrace");
	int c, rc = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'z':
			if (parse_hz(optarg, &hz) < 0) {
				fprintf(stderr, "xflow-xentrace: bad --cpu-hz '%s' (e.g. 2.4G)\n", optarg);
				return 2;
			}
			break;
		case 's': break;
		case 'e': extras = true; break;
		case 'd': dump = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	if (!hz) {
		fprintf(stderr, "xflow-xentrace: --cpu-hz is required: xentrace files do not record the TSC rate\n");
		return 2;
	}
	const char *path = argv[optind];
	struct xentrace_source src;
	struct xentrace_reader *r = NULL;
	struct xentrace_state *s = NULL;
	int fd = strcmp(path, "-") == 0 ? dup(STDIN_FILENO) : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "xflow-xentrace: %s: %s\n", path, strerror(errno));
		return 1;
	}
	int err = xentrace_source_init_fd(&src, fd);
	if (err == 0)
		err = xentrace_reader_open(&r, &src, NULL);
	else if (err == -ESPIPE) /* live from xentrace, through a pipe */
		err = xentrace_reader_open_stream(&r, fd, NULL);
	if (err < 0)
		goto bad_input;
	if ((err = xentrace_state_new(&s, hz)) < 0)
		goto out;
	/* The summary is compared with xenalyze's byte for byte: its own
	 * percentiles over its own samples. */
	if (!dump)
		xentrace_state_keep_samples(s);
	const struct xentrace_record *rec;
	uint64_t first = 0;
	while ((err = xentrace_reader_next(r, &rec)) == 1) {
		xentrace_state_feed(s, rec);
		if (!dump)
			continue;
		if (!first && rec->tsc)
			first = rec->order_tsc;
		double t = rec->order_tsc >= first ? (double)(rec->order_tsc - first) / (double)hz : 0;
		printf("%14.9f cpu%-3u %07x%s", t, rec->cpu, rec->event,
		       rec->flags & XENTRACE_REC_LOST_END ? " (lost-end)" : "");
		for (unsigned i = 0; i < rec->nextra; i++)
			printf(" %08x", rec->extra[i]);
		printf("\n");
	}
	xentrace_state_finish(s);
	if (err < 0)
		goto bad_input;
	if (!dump)
		xentrace_state_print_summary(s, stdout);
	if (extras)
		xentrace_state_print_extras(s, stdout);
	print_diags(r, path);
	rc = 0;
	goto out;
bad_input:
	/* One verdict whether the input is a file or a pipe: the reader's
	 * diagnostics, then why nothing can be summarized. */
	if (r)
		print_diags(r, path);
	fprintf(stderr, "xflow-xentrace: %s: %s\n", path,
		err == -EBADMSG ? "not xentrace output (no trace window found)" : strerror(-err));
out:
	xentrace_state_free(s);
	xentrace_reader_free(r);
	close(fd);
	return rc;
}
