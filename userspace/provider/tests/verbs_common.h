/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Helpers shared by the live-device verbs tests: device and GID lookup,
 * errno checks; TAP output comes from userspace/include/tap.h.
 */
#ifndef VERBS_COMMON_H
#define VERBS_COMMON_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "tap.h"

static inline const char *errname(int err)
{
	static char buf[32];

	switch (err) {
	case 0:
		return "success";
	case EINVAL:
		return "EINVAL";
	case EOPNOTSUPP:
		return "EOPNOTSUPP";
	case ENOMEM:
		return "ENOMEM";
	case EFAULT:
		return "EFAULT";
	case EBUSY:
		return "EBUSY";
	case ENOENT:
		return "ENOENT";
	case EPERM:
		return "EPERM";
	case EACCES:
		return "EACCES";
	case ENOSYS:
		return "ENOSYS";
	case EPROTO:
		return "EPROTO";
	default:
		snprintf(buf, sizeof(buf), "errno %d", err);
		return buf;
	}
}

/* A verb returning an errno value (0 on success) returned @want. */
static inline void expect_ret(int got, int want, const char *what)
{
	tap_ok(got == want, "%s: %s (expected %s)", what, errname(got),
	       errname(want));
}

/*
 * A verb returning a pointer failed with errno @want.  Returns true if it
 * did fail (a surprise object is released by the caller through @obj).
 */
static inline bool expect_null(const void *obj, int err, int want,
			       const char *what)
{
	tap_ok(!obj && err == want, "%s: %s (expected %s)", what,
	       obj ? "succeeded" : errname(err), errname(want));
	return !obj;
}

static inline struct ibv_device *find_device(struct ibv_device **list,
					     const char *name)
{
	for (; *list; list++)
		if (!strcmp(ibv_get_device_name(*list), name))
			return *list;
	return NULL;
}

static inline bool gid_is_v4mapped(const union ibv_gid *gid)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(gid->raw, prefix, sizeof(prefix));
}

/*
 * The port's RoCE v2 GID with an IPv4 address (the one the tests' veth
 * addresses give), else its first RoCE v2 GID.  Returns the index or -1.
 */
static inline int find_roce_v2_gid(struct ibv_context *ctx,
				   union ibv_gid *gid)
{
	struct ibv_port_attr pa;
	struct ibv_gid_entry e;
	int i, first = -1;

	if (ibv_query_port(ctx, 1, &pa))
		return -1;
	for (i = 0; i < pa.gid_tbl_len; i++) {
		if (ibv_query_gid_ex(ctx, 1, i, &e, 0) ||
		    e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (gid_is_v4mapped(&e.gid)) {
			*gid = e.gid;
			return i;
		}
		if (first < 0) {
			first = i;
			*gid = e.gid;
		}
	}
	return first;
}

/*
 * Opens device @name and finds its RoCE v2 GID (find_roce_v2_gid()): the
 * GID goes to @gid, its index to @gid_index. Bails out on any failure.
 */
static inline struct ibv_context *open_device_gid(const char *name,
						  union ibv_gid *gid,
						  int *gid_index)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev;
	struct ibv_context *ctx;

	if (!list)
		tap_bail("ibv_get_device_list: %s", strerror(errno));
	dev = find_device(list, name);
	if (!dev)
		tap_bail("no device %s", name);
	ctx = ibv_open_device(dev);
	ibv_free_device_list(list);
	if (!ctx)
		tap_bail("cannot open %s: %s", name, strerror(errno));
	*gid_index = find_roce_v2_gid(ctx, gid);
	if (*gid_index < 0)
		tap_bail("%s has no RoCE v2 GID", name);
	return ctx;
}

static inline double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Polls @cq until @n completions arrived or @timeout seconds passed.
 * Returns how many arrived, or -1 if polling failed.
 */
static inline int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n,
			 double timeout)
{
	double deadline = now_sec() + timeout;
	int got = 0, ret;

	while (got < n) {
		ret = ibv_poll_cq(cq, n - got, wc + got);
		if (ret < 0)
			return -1;
		got += ret;
		if (got < n) {
			if (now_sec() > deadline)
				break;
			if (!ret) {
				struct timespec ts = { 0, 200000 };

				nanosleep(&ts, NULL);
			}
		}
	}
	return got;
}

#endif /* VERBS_COMMON_H */
