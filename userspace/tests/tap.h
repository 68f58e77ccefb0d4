/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Minimal TAP (version 13) output for the userspace tests.
 *
 * A test either announces its plan first (tap_plan()) or lets tap_done()
 * print it at the end. tap_done() returns the process exit status: 1 if a
 * test failed or the planned count was not reached. There is no "skip": a
 * test that cannot run fails. A known engine defect that is not fixed yet is
 * a TODO test (TAP's "# TODO" directive): it is reported, it is not a pass,
 * and it does not fail the run; once it passes, the TODO must go.
 */
#ifndef MR_TAP_H
#define MR_TAP_H

#include <stdio.h>
#include <stdarg.h>

static int tap_n, tap_fail, tap_planned, tap_todo_n;

static inline void tap_plan(int n)
{
	printf("TAP version 13\n1..%d\n", n);
	tap_planned = n;
}

/* Start a test program whose plan is printed by tap_done(). */
static inline void tap_start(void)
{
	printf("TAP version 13\n");
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
	return tap_fail ? 1 : 0;
}

#define TAP_CMP(a, op, b, name) \
	tap_ok((a) op (b), "%s (%s=%lld, %s=%lld)", name, #a, \
	       (long long)(a), #b, (long long)(b))

#endif
