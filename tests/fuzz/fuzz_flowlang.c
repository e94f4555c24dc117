/*
 * libFuzzer target over the whole flow language front end: XML, pointcuts,
 * advice code, xflow expansion, checks, code generation and the verifier,
 * then the dump and the diagnostics printer.  Includes are refused, so an
 * input can name no file; nothing is written but to /dev/null.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "xflow/flowlang.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	if (!sink)
		sink = fopen("/dev/null", "w");
	struct xflow_unit *u;
	struct xflow_unit_opts opts = { .no_include = true, .max_errors = 50 };
	if (xflow_unit_new(&u, &opts) < 0)
		return 0;
	xflow_unit_set_warning(u, "all");
	xflow_unit_add_buffer(u, "fuzz.xml", data, size);
	xflow_unit_compile(u);
	if (sink) {
		xflow_unit_print_diags(u, sink);
		if (xflow_unit_errors(u) == 0)
			xflow_unit_dump(u, sink, true);
	}
	for (size_t i = 0; i < xflow_unit_advice_count(u); i++) {
		struct xflow_advice_info a;
		if (xflow_unit_advice(u, i, &a) == 0 && a.prog &&
		    xflow_bc_verify((struct xflow_bc_prog *)a.prog, NULL, NULL) != 0)
			abort();   /* the emitter produced code its verifier refuses */
	}
	xflow_unit_free(u);
	return 0;
}
