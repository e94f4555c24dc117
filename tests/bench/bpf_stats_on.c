/*
 * Keeps the kernel's BPF run-time statistics on while it runs, for
 * tests/bench/kernel_cost.sh.  The sysctl kernel.bpf_stats_enabled is one
 * switch for the whole host, which another process may turn off in the
 * middle of a measurement; the statistics stay on while any process holds
 * the fd of BPF_ENABLE_STATS, whatever the sysctl says.  Prints "on" once
 * it holds it, then waits until its standard input closes.
 *   bpf_stats_on < FIFO
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

int main(void)
{
	int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (fd < 0) {
		fprintf(stderr, "bpf_stats_on: BPF_ENABLE_STATS: %s\n", strerror(errno));
		return 1;
	}
	printf("on\n");
	fflush(stdout);
	char buf[64];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	close(fd);
	return 0;
}
