// SPDX-License-Identifier: GPL-2.0-only
/*
 * Port counters: "rdma statistic show link DEV/1" and
 * /sys/class/infiniband/DEV/ports/1/hw_counters/. Three groups, in this
 * order: the device's own packet counters (per CPU, counters.h), the
 * transport engine's counters summed over the device's peers, and per-path
 * packet counts (path N of every peer added together). The names are a
 * stable interface documented in Documentation/admin-guide.rst: counters
 * are only ever appended.
 *
 * All of them, names and values, must fit in one netlink message of
 * NLMSG_DEFAULT_SIZE, or "rdma statistic" fails with EMSGSIZE: the 93 here
 * take about 3.5 KiB of the 3.7 available with 4 KiB pages (140, with three
 * more per path, did not fit). Per-path health is per connection instead,
 * in debugfs and in each RC QP's driver attributes ("rdma resource show qp
 * -dd", restrack.c): see Telemetry in Documentation/admin-guide.rst.
 */

#include <linux/build_bug.h>
#include <linux/cpumask.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "metaroce.h"

/* Engine drop reasons reported as counters: the stateful ones. */
static const u8 mr_drop_counted[] = {
	MR_DROP_NO_CONN, MR_DROP_EPOCH, MR_DROP_PSN_WINDOW,
	MR_DROP_DSN_WINDOW, MR_DROP_DUP, MR_DROP_NO_QP, MR_DROP_QP_STATE,
	MR_DROP_WRONG_PEER, MR_DROP_MSN_WINDOW, MR_DROP_STALE_GEN,
	MR_DROP_INCONSISTENT, MR_DROP_RNR, MR_DROP_ACCESS, MR_DROP_INV_REQ,
};

/*
 * Drop reasons counted since the path counters were added: after them, as
 * names are only ever appended.
 */
static const u8 mr_drop_late[] = {
	MR_DROP_SSN,
};

#define MR_PATH_DESCS(n) \
	[MR_NDEV + MR_NENG + MR_NDROP + 2 * (n)] = { .name = "path" #n "_tx_packets" }, \
	[MR_NDEV + MR_NENG + MR_NDROP + 2 * (n) + 1] = { .name = "path" #n "_retransmits" }

enum {
	MR_NDEV = MR_NUM_COUNTERS,
	MR_NENG = MR_ST_MAX + 1,	/* + "retransmits" */
	MR_NDROP = ARRAY_SIZE(mr_drop_counted),
	MR_NPATH = 2 * MR_MAX_PATHS,
	MR_NLATE = ARRAY_SIZE(mr_drop_late),
	MR_NALL = MR_NDEV + MR_NENG + MR_NDROP + MR_NPATH + MR_NLATE,
};

#define E(st) (MR_NDEV + (st))
#define D(i) (MR_NDEV + MR_NENG + (i))
#define L(i) (MR_NDEV + MR_NENG + MR_NDROP + MR_NPATH + (i))

static const struct rdma_stat_desc mr_counter_descs[MR_NALL] = {
	[MR_CNT_TX_PACKETS]		= { .name = "tx_packets" },
	[MR_CNT_TX_BYTES]		= { .name = "tx_bytes" },
	[MR_CNT_RX_PACKETS]		= { .name = "rx_packets" },
	[MR_CNT_RX_BYTES]		= { .name = "rx_bytes" },
	[MR_CNT_RX_DROP_MALFORMED]	= { .name = "rx_drop_malformed" },
	[MR_CNT_RX_DROP_NO_QP]		= { .name = "rx_drop_no_qp" },
	[MR_CNT_RX_DROP_NO_CONN]	= { .name = "rx_drop_no_conn" },
	[MR_CNT_RX_DROP_NO_RECV]	= { .name = "rx_drop_no_recv" },
	[MR_CNT_RX_DROP_BACKLOG]	= { .name = "rx_drop_backlog" },
	[MR_CNT_TX_DROP_NO_ROUTE]	= { .name = "tx_drop_no_route" },
	[MR_CNT_RX_CE_MARKED]		= { .name = "rx_ce_marked" },
	[MR_CNT_DB_INLINE]		= { .name = "doorbells_inline" },
	[MR_CNT_DB_DEFERRED]		= { .name = "doorbells_deferred" },
	[MR_CNT_FAST_REG]		= { .name = "fast_registrations" },
	[MR_CNT_LOCAL_INV]		= { .name = "local_invalidations" },
	[MR_CNT_REMOTE_INV]		= { .name = "remote_invalidations" },

	[E(MR_ST_TX_PKTS)]		= { .name = "transport_tx_packets" },
	[E(MR_ST_TX_BYTES)]		= { .name = "transport_tx_bytes" },
	[E(MR_ST_RX_PKTS)]		= { .name = "transport_rx_packets" },
	[E(MR_ST_RX_BYTES)]		= { .name = "transport_rx_bytes" },
	[E(MR_ST_TX_DATA)]		= { .name = "data_segments_tx" },
	[E(MR_ST_RETX_SACK)]		= { .name = "retransmits_sack" },
	[E(MR_ST_RETX_RTO)]		= { .name = "retransmits_timeout" },
	[E(MR_ST_TX_ACKS)]		= { .name = "acks_tx" },
	[E(MR_ST_RX_ACKS)]		= { .name = "acks_rx" },
	[E(MR_ST_TX_NOPS)]		= { .name = "nops_tx" },
	[E(MR_ST_TX_PROBES)]		= { .name = "probes_tx" },
	[E(MR_ST_TX_ACKREQ)]		= { .name = "ack_requests_tx" },
	[E(MR_ST_RX_CE)]		= { .name = "ecn_ce_rx" },
	[E(MR_ST_ECN_ECHO)]		= { .name = "ecn_ce_echoed" },
	[E(MR_ST_PATH_DEAD)]		= { .name = "path_dead" },
	[E(MR_ST_PATH_REVIVED)]		= { .name = "path_revived" },
	[E(MR_ST_PATH_REPICK)]		= { .name = "path_repick" },
	[E(MR_ST_RNR_NAK_TX)]		= { .name = "rnr_naks_tx" },
	[E(MR_ST_RNR_NAK_RX)]		= { .name = "rnr_naks_rx" },
	[E(MR_ST_NAK_TX)]		= { .name = "naks_tx" },
	[E(MR_ST_NAK_RX)]		= { .name = "naks_rx" },
	[E(MR_ST_RX_PLACED)]		= { .name = "segments_placed" },
	[E(MR_ST_MSG_DONE_TX)]		= { .name = "messages_done_tx" },
	[E(MR_ST_MSG_DONE_RX)]		= { .name = "messages_done_rx" },
	[E(MR_ST_TX_RESETS)]		= { .name = "resets_tx" },
	[E(MR_ST_RX_RESETS)]		= { .name = "resets_rx" },
	[E(MR_ST_RX_EPOCH_RESTORED)]	= { .name = "epoch_restored" },
	[E(MR_ST_RTO_SPURIOUS)]		= { .name = "timeouts_spurious" },
	[E(MR_ST_RTX_CANCELLED)]	= { .name = "retransmits_cancelled" },
	[E(MR_ST_RETX_OVERDUE)]		= { .name = "retransmits_overdue" },
	[E(MR_ST_TX_ANNOUNCE)]		= { .name = "announcements_tx" },
	[E(MR_ST_RX_ANNOUNCE)]		= { .name = "announcements_rx" },
	[E(MR_ST_RX_HELLOS)]		= { .name = "hellos_rx" },
	[E(MR_ST_MAX)]			= { .name = "retransmits" },

	[D(0)]	= { .name = "drop_no_conn" },
	[D(1)]	= { .name = "drop_epoch" },
	[D(2)]	= { .name = "drop_psn_window" },
	[D(3)]	= { .name = "drop_dsn_window" },
	[D(4)]	= { .name = "drop_duplicate" },
	[D(5)]	= { .name = "drop_no_qp" },
	[D(6)]	= { .name = "drop_qp_state" },
	[D(7)]	= { .name = "drop_wrong_peer" },
	[D(8)]	= { .name = "drop_msn_window" },
	[D(9)]	= { .name = "drop_stale_gen" },
	[D(10)]	= { .name = "drop_inconsistent" },
	[D(11)]	= { .name = "drop_rnr" },
	[D(12)]	= { .name = "drop_access" },
	[D(13)]	= { .name = "drop_invalid_request" },

	MR_PATH_DESCS(0), MR_PATH_DESCS(1), MR_PATH_DESCS(2),
	MR_PATH_DESCS(3), MR_PATH_DESCS(4), MR_PATH_DESCS(5),
	MR_PATH_DESCS(6), MR_PATH_DESCS(7), MR_PATH_DESCS(8),
	MR_PATH_DESCS(9), MR_PATH_DESCS(10), MR_PATH_DESCS(11),
	MR_PATH_DESCS(12), MR_PATH_DESCS(13), MR_PATH_DESCS(14),
	MR_PATH_DESCS(15),

	[L(0)]	= { .name = "drop_ssn" },
};

static_assert(MR_ST_MAX == 33, "name every engine counter");
static_assert(MR_NDROP == 14, "name every counted drop reason");
static_assert(MR_NLATE == 1 && MR_DROP_NR_REASONS == MR_DROP_SSN + 1,
	      "name every drop reason added later");
static_assert(MR_MAX_PATHS == 16, "name every path");

struct rdma_hw_stats *mr_alloc_hw_port_stats(struct ib_device *ibdev,
					     u32 port_num)
{
	return rdma_alloc_hw_stats_struct(mr_counter_descs, MR_NALL,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int mr_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		    u32 port_num, int index)
{
	struct mr_dev *dev = to_mr_dev(ibdev);
	struct mr_totals *t;
	u64 *v = stats->value;
	int cpu, i;

	if (stats->num_counters < MR_NALL)
		return -EINVAL;
	t = kmalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	memset(v, 0, MR_NALL * sizeof(*v));
	for_each_possible_cpu(cpu) {
		const struct mr_counters *c = per_cpu_ptr(dev->counters, cpu);

		for (i = 0; i < MR_NDEV; i++)
			v[i] += READ_ONCE(c->val[i]);
	}
	mr_peers_totals(dev, t);
	for (i = 0; i < MR_ST_MAX; i++)
		v[E(i)] = t->stats[i];
	v[E(MR_ST_MAX)] = t->stats[MR_ST_RETX_SACK] + t->stats[MR_ST_RETX_RTO] +
			  t->stats[MR_ST_RETX_OVERDUE];
	for (i = 0; i < MR_NDROP; i++)
		v[D(i)] = t->drops[mr_drop_counted[i]];
	for (i = 0; i < MR_MAX_PATHS; i++) {
		v[D(MR_NDROP) + 2 * i] = t->path_tx[i];
		v[D(MR_NDROP) + 2 * i + 1] = t->path_retx[i];
	}
	for (i = 0; i < MR_NLATE; i++)
		v[L(i)] = t->drops[mr_drop_late[i]];
	kfree(t);
	return MR_NALL;
}
