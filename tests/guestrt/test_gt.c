/*
 * The helpers of gt.h that feed the fixtures' stdin.  A fixture may be gone
 * before a line meant for it is written (it died, or it never reads and was
 * quick): that must fail the test with a message, never end it with
 * SIGPIPE, which Criterion reports as a bare CRASH.
 */
#include "tests/guestrt/gt.h"

/* fx_loop without w, e or j reads nothing; here it is reaped before the
 * line is written, so the write meets a pipe nobody reads. */
Test(gt, a_line_for_a_fixture_that_is_gone)
{
	const char *bin = gt_build("fx_loop", "-O0");
	struct gt_proc p;
	char out[256];
	sigset_t pending;

	gt_start(&p, bin, "1", "0", "");
	cr_assert_not_null(fgets(out, sizeof(out), p.out));
	while (fgets(out, sizeof(out), p.out))
		;
	int st;
	cr_assert_eq(waitpid(p.pid, &st, 0), p.pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %x", st);
	cr_expect_eq(gt_write_in(&p, "go\n"), -EPIPE);
	cr_assert_eq(sigpending(&pending), 0);
	cr_expect(!sigismember(&pending, SIGPIPE), "SIGPIPE left pending");
	fclose(p.in);
	fclose(p.out);
}

/* The same with the line before the start: it waits in the pipe, and the
 * fixture's exit costs nothing. */
Test(gt, input_before_the_start)
{
	const char *bin = gt_build("fx_loop", "-O0");
	struct gt_proc p;
	char out[256];
	gt_start_fed(&p, bin, "1", "0", "", "go\ngo\n");
	int st = gt_finish(&p, out, sizeof(out));
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %x", st);
	cr_expect_str_eq(out, "out: probe 42024 value 7\nout: sum=0\n");
}
