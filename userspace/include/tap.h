/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * TAP (version 13) output for every C test program of the project: the
 * engine's unit tests (userspace/tests), the simulator's smoke test, the
 * provider's tests (userspace/provider/tests) and the TAP-printing verbs
 * tools (userspace/tools/mr_limits, mr_misuse).
 *
 * A test program either announces its plan first (tap_plan()) or starts
 * with tap_start() and lets tap_done() print the plan at the end.
 * tap_done() returns the process exit status: 1 if a test failed or the
 * planned count was not reached. There is no "skip": a test that cannot
 * run fails. A known engine defect that is not fixed yet is a TODO test
 * (TAP's "# TODO" directive): it is reported, it is not a pass, and it does
 * not fail the run; once it passes, the TODO must go. tap_bail() ends the
 * program at once ("Bail out!"), for a failure the rest cannot run after.
 *
 * Every line is flushed as it is printed, so that output stays in order
 * across fork() and when a test program is killed.
 *
 * The state is static: one TAP stream per translation unit, so a program's
 * tests live in the file that includes this header.
 */
#ifndef MR_TAP_H
#define MR_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_n, tap_fail, tap_planned, tap_todo_n;

static inline void tap_plan(int n)
{
	printf("TAP version 13\n1..%d\n", n);
	fflush(stdout);
	tap_planned = n;
}

/* Start a test program whose plan is printed by tap_done(). */
static inline void tap_start(void)
{
	printf("TAP version 13\n");
	fflush(stdout);
	tap_planned = -1;
}

static inline __attribute__((format(printf, 2, 3)))
int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		tap_fail++;
	fflush(stdout);
	return cond;
}

/* A test of a documented, not yet fixed defect (@why: where it is noted). */
static inline __attribute__((format(printf, 3, 4)))
int tap_todo(int cond, const char *why, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" # TODO %s\n", why);
	tap_todo_n++;
	fflush(stdout);
	return cond;
}

static inline __attribute__((format(printf, 1, 2)))
void tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* Ends the program, failed: what follows cannot run. */
static inline __attribute__((format(printf, 1, 2), noreturn))
void tap_bail(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

static inline int tap_done(void)
{
	if (tap_planned < 0)
		printf("1..%d\n", tap_n);
	else if (tap_planned != tap_n) {
		printf("# planned %d tests, ran %d\n", tap_planned, tap_n);
		tap_fail++;
	}
	printf("# %d tests, %d failed, %d TODO\n", tap_n, tap_fail, tap_todo_n);
	fflush(stdout);
	return tap_fail ? 1 : 0;
}

#define TAP_CMP(a, op, b, name) \
	tap_ok((a) op (b), "%s (%s=%lld, %s=%lld)", name, #a, \
	       (long long)(a), #b, (long long)(b))

#endif
