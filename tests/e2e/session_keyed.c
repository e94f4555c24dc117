/*
 * session_keyed SESSION: the keyed handoff records of a session saved by
 * xflowtop --save-session, one a line, "out KEY D2" or "in KEY D2" (KEY
 * and D2, data[0] and data[2], in hex; the line's ndata last), so that
 * tests/e2e/kernel_veth.sh can check the keys the kernel's BPF program
 * packed against what the devices it read say.  Exit 0, or 1 with the
 * reader's message.
 */
#include <stdio.h>

#include "xflow/session.h"
#include "xflow/record.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: session_keyed SESSION\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	char err[256];
	struct xflow_session_reader *r = NULL;
	int rc = xflow_session_reader_new(f, argv[1], &r, err, sizeof(err));
	struct xflow_session_chunk c;
	while (rc == 0 && (rc = xflow_session_reader_next(r, &c, err, sizeof(err))) == 1) {
		rc = 0;
		if (c.type != XFLOW_SESSION_RECORD || !(c.record.flags & XFLOW_REC_KEYED))
			continue;
		printf("%s %llx %llx %u\n", c.record.data[1] ? "in" : "out", (unsigned long long)c.record.data[0],
		       (unsigned long long)c.record.data[2], c.record.ndata);
	}
	if (rc < 0)
		fprintf(stderr, "%s\n", err);
	if (r)
		xflow_session_reader_free(r);
	fclose(f);
	return rc < 0 ? 1 : 0;
}
