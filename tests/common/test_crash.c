/*
 * common/crash.c: a process that dies of a fatal signal first says which,
 * where and its stack (issue 30, item 5: an abort is never silent), then
 * dies of that very signal.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/crash.h"

/* Run @how in a child with the handlers installed: its wait status, and
 * what it wrote on standard error in @err. */
static int crash(void (*how)(void), char *err, size_t len)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t c = fork();
	cr_assert(c >= 0);
	if (c == 0) {
		dup2(p[1], 2);
		close(p[0]);
		xflow_crash_install("crashtest");
		how();
		_exit(0);
	}
	close(p[1]);
	size_t n = 0;
	ssize_t k;
	while (n < len - 1 && (k = read(p[0], err + n, len - 1 - n)) > 0)
		n += (size_t)k;
	err[n] = 0;
	close(p[0]);
	int st;
	cr_assert_eq(waitpid(c, &st, 0), c);
	return st;
}

static void do_abort(void)
{
	abort();
}

Test(crash, abort_says_so_and_dies_of_it)
{
	char err[8192];
	int st = crash(do_abort, err, sizeof(err));
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %x", st);
	cr_expect(strstr(err, "crashtest: fatal signal 6 (SIGABRT, aborted"), "%s", err);
	cr_expect(strstr(err, "; the stack:\n"), "%s", err);
	/* The stack names the function that aborted (the test's symbols are
	 * not exported: a module+offset, or abort itself in libc). */
	cr_expect(strstr(err, "abort") || strstr(err, "common.test"), "%s", err);
}

#ifndef __SANITIZE_ADDRESS__
/* ASan handles faults itself: the fault cases are for plain builds. */
/* An address no process maps, from a variable the compiler cannot see
 * through. */
static volatile uintptr_t bad_address = 16;

static void do_segv(void)
{
	*(volatile int *)bad_address = 1;
}

static void do_fpe(void)
{
	raise(SIGFPE);
}

Test(crash, fault_says_the_address_and_where)
{
	char err[8192];
	int st = crash(do_segv, err, sizeof(err));
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status %x", st);
	cr_expect(strstr(err, "crashtest: fatal signal 11 (SIGSEGV, a bad memory access) at address 0x10, "
			      "instruction pointer 0x"),
		  "%s", err);
	st = crash(do_fpe, err, sizeof(err));
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGFPE, "status %x", st);
	cr_expect(strstr(err, "crashtest: fatal signal 8 (SIGFPE"), "%s", err);
}
#endif
