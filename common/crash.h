/*
 * A fatal signal says what failed and where before the process dies of it
 * (issue 30, item 5: an abort is never silent): one line on standard error
 * with the program, the signal, the faulting address and the instruction
 * pointer, then the stack, written with async-signal-safe calls only; then
 * the signal's default action, as if it had not been caught.
 */
#ifndef XFLOW_COMMON_CRASH_H
#define XFLOW_COMMON_CRASH_H

#include <signal.h>

/* Catch SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT for program @prog (the
 * name the line starts with; kept, not copied).  A later handler of one of
 * them (the curses screen's, the hook engine's) replaces this one and
 * calls xflow_crash_say() itself. */
void xflow_crash_install(const char *prog);
/* Say what the fatal signal @sig was and where (@si and @uc from an
 * SA_SIGINFO handler, or NULL): async-signal-safe. */
void xflow_crash_say(int sig, const siginfo_t *si, const void *uc);

#endif
