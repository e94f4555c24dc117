/* xflowc: the flow language checker.  The logic is in libxflow-weaver. */
#include <stdio.h>

#include "xflow/flowlang.h"

int main(int argc, char **argv)
{
	return xflowc_run(argc, argv, stdout, stderr);
}
