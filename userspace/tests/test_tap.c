// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_tap: the one TAP implementation (userspace/include/tap.h) that every
 * C test program prints with does what it documents. Each case runs in a
 * child process, its output into a pipe: what it printed and its exit
 * status must be exactly what tap.h promises. A failed test is "not ok" and
 * fails the program, the plan is checked, a TODO is reported but neither a
 * pass nor a failure, a bail-out fails, a program without a plan fails.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tap.h"

struct tap_case {
	const char *name;
	void (*run)(void);
	const char *out;	/* exactly what it prints */
	int status;		/* its exit status */
};

static void plan_pass(void)
{
	tap_plan(2);
	tap_ok(1, "a");
	tap_ok(2 > 1, "b %d", 2);
	exit(tap_done());
}

static void plan_fail(void)
{
	tap_plan(2);
	tap_ok(1, "a");
	tap_ok(0, "b");
	exit(tap_done());
}

static void start_done(void)
{
	tap_start();
	tap_ok(1, "a");
	tap_diag("note %s", "x");
	tap_ok(1, "b");
	exit(tap_done());
}

static void short_plan(void)
{
	tap_plan(3);
	tap_ok(1, "a");
	exit(tap_done());
}

static void todo(void)
{
	tap_start();
	tap_todo(0, "bug 1", "known");
	tap_todo(1, "bug 2", "fixed");
	exit(tap_done());
}

static void bail(void)
{
	tap_plan(2);
	tap_ok(1, "a");
	tap_bail("cannot %s", "go on");
}

static void no_plan(void)
{
	tap_ok(1, "a");
	exit(tap_done());
}

static void cmp(void)
{
	int x = 3, y = 4;

	tap_start();
	TAP_CMP(x, <, y, "less");
	TAP_CMP(x, ==, y, "equal");
	exit(tap_done());
}

static const struct tap_case cases[] = {
	{ "a plan, every test passes", plan_pass,
	  "TAP version 13\n1..2\nok 1 - a\nok 2 - b 2\n"
	  "# 2 tests, 0 failed, 0 TODO\n", 0 },
	{ "a failed test: not ok, the program fails", plan_fail,
	  "TAP version 13\n1..2\nok 1 - a\nnot ok 2 - b\n"
	  "# 2 tests, 1 failed, 0 TODO\n", 1 },
	{ "tap_start: the plan comes at the end", start_done,
	  "TAP version 13\nok 1 - a\n# note x\nok 2 - b\n1..2\n"
	  "# 2 tests, 0 failed, 0 TODO\n", 0 },
	{ "fewer tests than planned fail the program", short_plan,
	  "TAP version 13\n1..3\nok 1 - a\n# planned 3 tests, ran 1\n"
	  "# 1 tests, 1 failed, 0 TODO\n", 1 },
	{ "a TODO is reported, neither a pass nor a failure", todo,
	  "TAP version 13\nnot ok 1 - known # TODO bug 1\n"
	  "ok 2 - fixed # TODO bug 2\n1..2\n# 2 tests, 0 failed, 2 TODO\n", 0 },
	{ "a bail-out fails the program", bail,
	  "TAP version 13\n1..2\nok 1 - a\nBail out! cannot go on\n", 1 },
	{ "a program that announced no plan fails", no_plan,
	  "ok 1 - a\n# planned 0 tests, ran 1\n# 1 tests, 1 failed, 0 TODO\n",
	  1 },
	{ "TAP_CMP shows both sides", cmp,
	  "TAP version 13\nok 1 - less (x=3, y=4)\n"
	  "not ok 2 - equal (x=3, y=4)\n1..2\n# 2 tests, 1 failed, 0 TODO\n",
	  1 },
};

/* Runs @c in a child; what it printed goes to @out, its status is returned. */
static int run_case(const struct tap_case *c, char *out, size_t size)
{
	size_t got = 0;
	int p[2], ws;
	ssize_t n;
	pid_t pid;

	if (pipe(p))
		tap_bail("pipe");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		tap_bail("fork");
	if (!pid) {
		close(p[0]);
		if (dup2(p[1], STDOUT_FILENO) < 0)
			_exit(99);
		tap_n = tap_fail = tap_planned = tap_todo_n = 0;
		c->run();
		_exit(98);
	}
	close(p[1]);
	while (got < size - 1 &&
	       (n = read(p[0], out + got, size - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = 0;
	close(p[0]);
	if (waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws))
		return -1;
	return WEXITSTATUS(ws);
}

int main(void)
{
	char out[1024], *line;
	int st, good, bad = 0;
	size_t i;

	tap_start();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		st = run_case(&cases[i], out, sizeof(out));
		good = st == cases[i].status && !strcmp(out, cases[i].out);
		tap_ok(good, "%s (exit %d)", cases[i].name, st);
		if (good)
			continue;
		bad++;
		for (line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
			tap_diag("printed: %s", line);
	}
	/*
	 * The verdict does not rest on the code under test alone: a tap_ok()
	 * that passed everything would still fail this program.
	 */
	if (bad)
		tap_diag("%d cases printed or exited otherwise", bad);
	return tap_done() || bad ? 1 : 0;
}
