/* xflowc: the flow language checker.  The logic is in libxflow-weaver. */
#include <stdio.h>

#include "common/crash.h"
#include "xflow/flowlang.h"

int main(int argc, char **argv)
{
	xflow_crash_install("xflowc");
	return xflowc_run(argc, argv, stdout, stderr);
}
