/*
 * Xen's system time against CLOCK_MONOTONIC (xflow/xen_time.h): the
 * arithmetic on a timekeeper's read, the lies it refuses, the address of
 * the timekeeper in a kallsyms listing, and the simulated Xen host's
 * value.  The BPF read itself needs a Xen clocksource: make xen-check
 * phase C runs it in both domains.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "xflow/xen_time.h"

/* A PV kernel's timekeeper, 100 s after its boot, 4000.5 s into Xen's
 * life; the sub-second part in xtime_nsec (<< shift), as the kernel
 * keeps it. */
static struct xen_time_sample pv_sample(void)
{
	struct xen_time_sample s = { .cycle_last = 4000500000123ull, .base = 100000000000ll, .mult = 1u << 23,
				     .shift = 23, .clocksource = "xen" };
	s.xtime_nsec = 250000000ull << 23;
	return s;
}

Test(xen_time, the_difference_of_the_two_clocks_at_the_update)
{
	struct xen_time_sample s = pv_sample();
	int64_t d = 0;
	char why[200] = "";
	cr_assert_eq(xen_time_offset(&s, 100250000000ull + 3000000, &d, why, sizeof(why)), 0, "%s", why);
	/* Xen 4000.500000123 s, CLOCK_MONOTONIC 100.25 s. */
	cr_expect_eq(d, 3900250000123ll);
	/* Under NTP mult moves, not the sample's meaning. */
	s.mult += 1000;
	cr_expect_eq(xen_time_offset(&s, 100250000000ull + 3000000, &d, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(d, 3900250000123ll);
}

Test(xen_time, another_clocksource_says_why)
{
	struct xen_time_sample s = pv_sample();
	int64_t d = 42;
	char why[200] = "";
	strcpy(s.clocksource, "tsc");
	cr_expect_eq(xen_time_offset(&s, 100300000000ull, &d, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "clocksource is tsc, not xen"), "%s", why);
	cr_expect_eq(d, 42, "nothing said on a refusal");
	/* Not terminated, or with control characters: read as far as it
	 * goes, printed safely. */
	memset(s.clocksource, 'x', sizeof(s.clocksource));
	s.clocksource[2] = '\033';
	cr_expect_eq(xen_time_offset(&s, 100300000000ull, &d, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "xx?xxx"), "%s", why);
	cr_expect_null(strchr(why, '\033'));
}

Test(xen_time, a_read_that_is_not_a_timekeeper_is_refused)
{
	int64_t d = 0;
	char why[200];
	struct xen_time_sample s = pv_sample();
	s.shift = 64;
	cr_expect_eq(xen_time_offset(&s, 100300000000ull, &d, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "not a timekeeper"), "%s", why);
	s = pv_sample();
	s.mult = 0;
	cr_expect_eq(xen_time_offset(&s, 100300000000ull, &d, why, sizeof(why)), -EINVAL);
	/* An update after now, or more than a minute before. */
	s = pv_sample();
	cr_expect_eq(xen_time_offset(&s, 100249999999ull, &d, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "not a timekeeper"), "%s", why);
	cr_expect_eq(xen_time_offset(&s, 100250000000ull + 61000000000ull, &d, why, sizeof(why)), -EINVAL);
	cr_expect_eq(xen_time_offset(&s, 100250000000ull + 59000000000ull, &d, why, sizeof(why)), 0, "%s", why);
	s = pv_sample();
	s.base = -1;
	cr_expect_eq(xen_time_offset(&s, 100300000000ull, &d, why, sizeof(why)), -EINVAL);
}

static char *listing(const char *text)
{
	static char path[64];
	snprintf(path, sizeof(path), "/tmp/xflow-kallsyms.XXXXXX");
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

Test(xen_time, the_timekeeper_in_kallsyms)
{
	uint64_t a = 0;
	char *p = listing("ffffffff81000000 T _stext\n"
			  "ffffffff82a0c0c0 t tk_core_helper\n"
			  "ffffffff8300c000 t tk_core\n" /* text: not the variable */
			  "ffffffff83a1b2c0 d tk_core\n"
			  "ffffffff83a1b400 d tk_fast_mono\n");
	cr_expect_eq(xen_time_core_addr(p, &a), 0);
	cr_expect_eq(a, 0xffffffff83a1b2c0ull);
	unlink(p);
	/* Kernels with auxiliary clocks keep it in timekeeper_data[0]. */
	p = listing("ffffffff83a1b2c0 b timekeeper_data\n");
	cr_expect_eq(xen_time_core_addr(p, &a), 0);
	cr_expect_eq(a, 0xffffffff83a1b2c0ull);
	unlink(p);
	/* Hidden addresses (kptr_restrict), or no such symbol. */
	p = listing("0000000000000000 d tk_core\n");
	cr_expect_eq(xen_time_core_addr(p, &a), -ENOENT);
	unlink(p);
	p = listing("ffffffff81000000 T _stext\ngarbage line\n\n");
	cr_expect_eq(xen_time_core_addr(p, &a), -ENOENT);
	unlink(p);
	cr_expect_eq(xen_time_core_addr("/nonexistent/kallsyms", &a), -ENOENT);
}

Test(xen_time, the_simulated_host_gives_its_own)
{
	struct xen_time_reader r = { 0 };
	int64_t d = 0;
	char why[200];
	setenv("XFLOW_SIMXEN_XEN_TIME_NS", "-1234567", 1);
	cr_assert_eq(xen_time_reader_open(&r, why, sizeof(why)), 0, "%s", why);
	cr_expect_null(r.bpf, "nothing loaded for the simulated host");
	cr_expect_eq(xen_time_reader_read(&r, &d, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(d, -1234567);
	xen_time_reader_close(&r);
	setenv("XFLOW_SIMXEN_XEN_TIME_NS", "12x", 1);
	r = (struct xen_time_reader){ 0 };
	cr_expect_eq(xen_time_reader_open(&r, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "'12x'"), "%s", why);
	unsetenv("XFLOW_SIMXEN_XEN_TIME_NS");
}

/* Is program @id loaded? */
static int loaded(uint32_t id)
{
	int fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/* On this machine: either its kernel keeps Xen's time (a PV domain), or
 * opening or reading says why not; a closed reader leaves nothing loaded. */
Test(xen_time, the_kernel_read_answers_or_says_why)
{
	struct xen_time_reader r = { 0 };
	int64_t d = 0;
	char why[240] = "";
	int rc = xen_time_reader_open(&r, why, sizeof(why));
	uint32_t id = xen_time_reader_prog_id(&r);
	if (rc == 0)
		rc = xen_time_reader_read(&r, &d, why, sizeof(why));
	cr_log_info("Xen time here: %d, %s", rc, rc ? why : "read");
	if (rc)
		cr_expect_neq(why[0], 0, "a refusal without a reason");
	xen_time_reader_close(&r);
	xen_time_reader_close(&r);
	cr_expect(!id || !loaded(id), "the reader left program %u loaded", id);
}

/* The BPF reader loads and runs on this kernel (the verifier takes it,
 * the CO-RE relocations resolve): pointed at the kernel's text, it reads
 * what is there, again and again, and finds no timekeeper in it; closed,
 * it leaves nothing loaded. */
Test(xen_time, the_bpf_reader_runs_and_refuses_what_is_not_a_timekeeper)
{
	if (geteuid() != 0)
		cr_skip_test("loading BPF needs root");
	FILE *f = fopen("/proc/kallsyms", "re");
	cr_assert_not_null(f);
	char line[256];
	unsigned long long text = 0;
	while (!text && fgets(line, sizeof(line), f))
		if (strstr(line, " T _stext\n"))
			text = strtoull(line, NULL, 16);
	fclose(f);
	if (!text)
		cr_skip_test("no _stext address in /proc/kallsyms");
	struct xen_time_reader r;
	int64_t d = 0;
	char why[240] = "";
	int rc = xen_time_reader_prepare_at(&r, text, why, sizeof(why));
	if (rc == -ENOTSUP)
		cr_skip_test("%s", why);
	cr_assert_eq(rc, 0, "no layout from this kernel's BTF: %s", why);
	cr_expect_neq(r.at.cycle_last, r.at.base);
	cr_expect_geq(r.at.tk, 4, "the timekeeper follows its seqcount");
	rc = xen_time_reader_open(&r, why, sizeof(why));
	cr_assert_eq(rc, 0, "the kernel did not take the reader: %s", why);
	uint32_t id = xen_time_reader_prog_id(&r);
	cr_assert_neq(id, 0);
	cr_expect(loaded(id));
	for (int i = 0; i < 3; i++) {
		rc = xen_time_reader_read(&r, &d, why, sizeof(why));
		cr_log_info("read at _stext: %d, %s", rc, why);
		cr_expect_neq(rc, 0, "the kernel's text read as a timekeeper");
		cr_expect_null(strstr(why, "cannot"), "%s", why);
		cr_expect(strstr(why, "not xen") || strstr(why, "not a timekeeper") || strstr(why, "could not be read"),
			  "%s", why);
	}
	xen_time_reader_close(&r);
	cr_expect_not(loaded(id), "the reader left program %u loaded", id);
}
