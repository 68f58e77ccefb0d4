// SPDX-License-Identifier: GPL-2.0-only
/*
 * Per-path telemetry through "rdma resource show qp link DEV/1 -dd": the
 * driver attributes of a connected RC QP are the state of its connection
 * (its peer, shared by every QP to the same remote address), as in the
 * debugfs peers table (debugfs.c): the remote address, the window, bytes
 * in flight, the rate hint the receiver sent and the number of paths, then
 * one string per path, "path<N>", of "key=value" words
 * (Documentation/admin-guide.rst, Telemetry). A QP without a connection
 * (before RTR, after reset; UD and GSI QPs) has none.
 *
 * ib_core calls ->fill_res_qp_entry() in process context with no lock of
 * its own held, right after ib_query_qp() (which takes the QP's state_lock
 * too), holding a reference that keeps the QP allocated. Kernels without
 * rdma_restrack_begin_del() (6.1) may call it after destroy_qp, which
 * leaves qp->peer NULL. The attributes of one
 * QP must fit in a message alone: a dump fills a message of at least
 * NLMSG_GOODSIZE with as many QPs as fit and a query builds one of
 * NLMSG_DEFAULT_SIZE (about 3.7 KiB with 4 KiB pages, of which the core's
 * attributes take 300 bytes at most); at worst these take MR_RES_MAX_LEN.
 */

#include <linux/build_bug.h>
#include <linux/math.h>
#include <linux/slab.h>
#include <net/netlink.h>
#include <rdma/restrack.h>

#include "metaroce.h"

/* One path's string, at most 155 characters with every field at its max. */
#define MR_RES_PATH_LEN		160
/* The whole table: attribute headers, names, values. */
#define MR_RES_MAX_LEN		(4 + 12 + 44 + 4 * (20 + 8) + \
				 MR_MAX_PATHS * (4 + 8 + 4 + MR_RES_PATH_LEN))
static_assert(MR_RES_MAX_LEN <= 3072);

/* A connection's figures, taken under its peer's lock. */
struct mr_res_conn {
	struct in6_addr remote;
	u32 wnd;
	u32 inflight;
	u32 rate_hint;
	u32 npaths;
	struct mr_path_info path[MR_MAX_PATHS];
};

/* Take the figures of @qp's connection: false if it has none. */
static bool mr_res_snapshot(struct mr_ibqp *qp, struct mr_res_conn *rc)
{
	const struct mr_conn *c;
	struct mr_peer *peer;
	u32 i;

	/* state_lock: the QP stays attached, its peer is not freed. */
	mutex_lock(&qp->state_lock);
	peer = qp->peer;
	if (peer) {
		c = &peer->conn;
		spin_lock_bh(&peer->lock);
		rc->remote = peer->addr.remote;
		rc->wnd = c->wnd;
		rc->inflight = c->inflight;
		rc->rate_hint = c->rate_hint;
		rc->npaths = min_t(u32, c->npaths, MR_MAX_PATHS);
		for (i = 0; i < rc->npaths; i++)
			mr_path_info(&c->path[i], &rc->path[i]);
		spin_unlock_bh(&peer->lock);
	}
	mutex_unlock(&qp->state_lock);
	return peer != NULL;
}

static int mr_res_put_path(struct sk_buff *msg, u32 i,
			   const struct mr_path_info *pi)
{
	char name[sizeof("path") + 10], val[MR_RES_PATH_LEN];

	snprintf(name, sizeof(name), "path%u", i);
	snprintf(val, sizeof(val),
		 "sport=%u state=%s weight=%u srtt_us=%u ecn_pct=%u cwnd=%u inflight=%u tx=%llu retx=%llu",
		 pi->sport, pi->state, pi->weight, pi->srtt_us,
		 DIV_ROUND_CLOSEST(pi->alpha * 100U, 1024U), pi->cwnd,
		 pi->inflight, pi->tx_pkts, pi->retx);
	return rdma_nl_put_driver_string(msg, name, val);
}

static int mr_res_put(struct sk_buff *msg, const struct mr_res_conn *rc)
{
	struct nlattr *table;
	char addr[48];
	u32 i;

	table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	snprintf(addr, sizeof(addr), "%pI6c", &rc->remote);
	if (rdma_nl_put_driver_string(msg, "peer", addr) ||
	    rdma_nl_put_driver_u32(msg, "window", rc->wnd) ||
	    rdma_nl_put_driver_u32(msg, "inflight", rc->inflight) ||
	    rdma_nl_put_driver_u32(msg, "rate_hint_mbps", rc->rate_hint) ||
	    rdma_nl_put_driver_u32(msg, "paths", rc->npaths))
		goto cancel;
	for (i = 0; i < rc->npaths; i++)
		if (mr_res_put_path(msg, i, &rc->path[i]))
			goto cancel;
	nla_nest_end(msg, table);
	return 0;

cancel:
	nla_nest_cancel(msg, table);
	return -EMSGSIZE;
}

int mr_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct mr_ibqp *qp = to_mr_ibqp(ibqp);
	struct mr_res_conn *rc;
	int err = 0;

	/* Only RC QPs have a connection, from RTR on. */
	if (ibqp->qp_type != IB_QPT_RC || !READ_ONCE(qp->peer))
		return 0;
	rc = kmalloc(sizeof(*rc), GFP_KERNEL);
	if (!rc)
		return -ENOMEM;
	if (mr_res_snapshot(qp, rc))
		err = mr_res_put(msg, rc);
	kfree(rc);
	return err;
}
