// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_docs: what Documentation/engine.rst says of the engine's memory is
 * what the compiler lays out. Every row of section 7.1's table that names
 * a structure ("* - ``struct NAME``", the next line "- BYTES", several of
 * each separated by ", ") must give its sizeof; the message slots' row
 * gives struct mr_msg's and struct mr_rmsg's; section 7.2's "A connection
 * costs ``N + M * seg_wnd``" gives struct mr_conn's and struct mr_seg's.
 * A structure the table names that this test does not know fails too, so
 * a new row is checked from the day it is written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "internal.h"

static const struct {
	const char *name;
	size_t size;
} mr_sizes[] = {
	{ "mr_conn", sizeof(struct mr_conn) },
	{ "mr_path", sizeof(struct mr_path) },
	{ "mr_rpath", sizeof(struct mr_rpath) },
	{ "mr_seg", sizeof(struct mr_seg) },
	{ "mr_qp", sizeof(struct mr_qp) },
	{ "mr_fs_dev", sizeof(struct mr_fs_dev) },
	{ "mr_hdr", sizeof(struct mr_hdr) },
	{ "mr_ack", sizeof(struct mr_ack) },
};

static long mr_size_of(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(mr_sizes) / sizeof(mr_sizes[0]); i++)
		if (!strcmp(mr_sizes[i].name, name))
			return (long)mr_sizes[i].size;
	return -1;
}

/* "36,504" -> 36504; -1 if @s does not start with such a number. */
static long mr_number(const char *s, const char **end)
{
	long v = 0;
	int digits = 0;

	for (; *s; s++) {
		if (*s >= '0' && *s <= '9') {
			v = v * 10 + (*s - '0');
			digits++;
		} else if (*s == ',' && s[1] >= '0' && s[1] <= '9' &&
			   s[2] >= '0' && s[2] <= '9' && s[3] >= '0' &&
			   s[3] <= '9') {
			continue;
		} else {
			break;
		}
	}
	if (end)
		*end = s;
	return digits ? v : -1;
}

/* The repository's top directory, from this file's path. */
static void mr_doc_path(char *buf, size_t len)
{
	const char *me = __FILE__, *tail = strstr(me, "/userspace/tests/");

	snprintf(buf, len, "%.*s/Documentation/engine.rst",
		 tail ? (int)(tail - me) : 1, tail ? me : ".");
}

static void check_row(const char *names, const char *values)
{
	char name[64];
	const char *p = names, *v = values;

	while ((p = strstr(p, "``struct "))) {
		const char *e;
		long doc, real;
		size_t n;

		p += strlen("``struct ");
		e = strstr(p, "``");
		n = e ? (size_t)(e - p) : 0;
		if (!n || n >= sizeof(name))
			break;
		memcpy(name, p, n);
		name[n] = '\0';
		p = e + 2;
		while (*v == ' ' || *v == ',')
			v++;
		doc = mr_number(v, &v);
		real = mr_size_of(name);
		tap_ok(doc >= 0 && doc == real,
		       "engine.rst 7.1: struct %s is %ld bytes (sizeof: %ld)",
		       name, doc, real);
	}
}

int main(void)
{
	char path[4096], line[512], prev[512] = "";
	int rows = 0, slots = 0, costs = 0;
	FILE *f;

	tap_start();
	mr_doc_path(path, sizeof(path));
	f = fopen(path, "r");
	if (!tap_ok(f != NULL, "%s opens", path))
		return tap_done();
	while (fgets(line, sizeof(line), f)) {
		const char *dash = strstr(line, "   - ");
		const char *c;

		if (strstr(prev, "* - ``struct ") && dash && !strstr(line, "* -")) {
			check_row(prev, dash + 5);
			rows++;
		}
		if (strstr(prev, "* - message slots") && dash) {
			long doc = mr_number(dash + 5, NULL);

			tap_ok(doc == (long)sizeof(struct mr_msg) &&
			       doc == (long)sizeof(struct mr_rmsg),
			       "engine.rst 7.1: message slots are %ld bytes (mr_msg %zu, mr_rmsg %zu)",
			       doc, sizeof(struct mr_msg),
			       sizeof(struct mr_rmsg));
			slots++;
		}
		c = strstr(line, "A connection costs ``");
		if (c) {
			const char *e;
			long conn = mr_number(c + strlen("A connection costs ``"), &e);
			long seg = -1;

			if (!strncmp(e, " + ", 3))
				seg = mr_number(e + 3, NULL);
			tap_ok(conn == (long)sizeof(struct mr_conn) &&
			       seg == (long)sizeof(struct mr_seg),
			       "engine.rst 7.2: a connection costs %ld + %ld * seg_wnd (sizeof: %zu, %zu)",
			       conn, seg, sizeof(struct mr_conn),
			       sizeof(struct mr_seg));
			costs++;
		}
		snprintf(prev, sizeof(prev), "%s", line);
	}
	fclose(f);
	tap_ok(rows >= 7 && slots == 1 && costs == 1,
	       "engine.rst: %d structure rows, %d slot row, %d cost line found",
	       rows, slots, costs);
	return tap_done();
}
