/* SPDX-License-Identifier: GPL-2.0-only */
/* Minimal TAP output for the userspace tests. */
#ifndef MR_TAP_H
#define MR_TAP_H

#include <stdio.h>
#include <stdarg.h>

static int tap_n, tap_fail;

static inline void tap_plan(int n)
{
	printf("TAP version 13\n1..%d\n", n);
}

static inline int tap_ok(int cond, const char *fmt, ...)
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

static inline int tap_done(void)
{
	printf("# %d tests, %d failed\n", tap_n, tap_fail);
	return tap_fail ? 1 : 0;
}

#define TAP_CMP(a, op, b, name) \
	tap_ok((a) op (b), "%s (%s=%lld, %s=%lld)", name, #a, \
	       (long long)(a), #b, (long long)(b))

#endif
