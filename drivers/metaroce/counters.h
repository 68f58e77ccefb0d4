/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-device counters, shown by "rdma statistic show link DEV/1" and in
 * /sys/class/infiniband/DEV/ports/1/hw_counters/. Their names are a stable
 * interface (documented in Documentation/admin-guide.rst): new counters are
 * appended, existing ones are never renamed or reordered.
 *
 * Each CPU updates its own copy with this_cpu_add(), which is safe against
 * preemption and interrupts without locks; readers sum the copies.
 */
#ifndef _METAROCE_COUNTERS_H
#define _METAROCE_COUNTERS_H

#include <linux/percpu.h>
#include <linux/types.h>

enum mr_counter {
	MR_CNT_TX_PACKETS,
	MR_CNT_TX_BYTES,
	MR_CNT_RX_PACKETS,
	MR_CNT_RX_BYTES,
	MR_CNT_RX_DROP_MALFORMED,
	MR_CNT_RX_DROP_NO_QP,
	MR_CNT_RX_DROP_NO_CONN,		/* no connection to the sender */
	MR_CNT_RX_DROP_NO_RECV,		/* UD: no receive posted */
	MR_CNT_RX_DROP_BACKLOG,		/* NAPI queue full */
	MR_CNT_TX_DROP_NO_ROUTE,
	MR_CNT_RX_CE_MARKED,		/* marked by our own receive queue */
	MR_CNT_DB_INLINE,		/* send-ring doorbells sent in the call */
	MR_CNT_DB_DEFERRED,		/* ... left to the doorbell workqueue */
	MR_CNT_FAST_REG,		/* IB_WR_REG_MR executed */
	MR_CNT_LOCAL_INV,		/* IB_WR_LOCAL_INV executed */
	MR_CNT_REMOTE_INV,		/* rkeys invalidated by SEND_WITH_INV */
	MR_NUM_COUNTERS
};

struct mr_counters {
	u64 val[MR_NUM_COUNTERS];
};

static inline void mr_counter_add(struct mr_counters __percpu *counters,
				  enum mr_counter idx, u64 n)
{
	this_cpu_add(counters->val[idx], n);
}

#endif /* _METAROCE_COUNTERS_H */
