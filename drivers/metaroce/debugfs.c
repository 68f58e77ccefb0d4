// SPDX-License-Identifier: GPL-2.0-only
/*
 * Live telemetry: /sys/kernel/debug/metaroce/<device>/peers shows the
 * device's shared window and bytes in flight, its peers and their memory
 * against the device's limits, then, for every peer of the
 * device, the connection's congestion state and, per
 * path, its UDP source port, state, weight, RTT, ECN fraction, window and
 * packet counts. Read while traffic runs; each peer is sampled under its
 * lock. mr_path_info() takes a path's figures for this table and for
 * "rdma resource show qp -dd" (restrack.c) alike.
 */

#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "metaroce.h"

static struct dentry *mr_debugfs_root;

static const char *mr_path_state_name(const struct mr_path *p)
{
	switch (p->state) {
	case MR_PATH_CONGESTED:
		return "congested";
	case MR_PATH_DEAD:
		return p->una != p->nxt ? "probing" : "dead";
	default:
		return "good";
	}
}

void mr_path_info(const struct mr_path *p, struct mr_path_info *pi)
{
	pi->state = mr_path_state_name(p);
	pi->sport = p->sport;
	pi->weight = p->weight;
	pi->alpha = p->alpha;
	pi->srtt_us = p->srtt / 1000;
	pi->rttvar_us = p->rttvar / 1000;
	pi->min_rtt_us = p->min_rtt / 1000;
	pi->cwnd = p->cwnd;
	pi->inflight = p->inflight;
	pi->tx_pkts = p->tx_pkts;
	pi->retx = p->retx;
	pi->lost = p->lost;
	pi->timeouts = p->timeouts_total;
}

static void mr_peer_show(struct seq_file *m, struct mr_peer *peer)
{
	const struct mr_conn *c = &peer->conn;
	struct mr_path_info pi;
	u32 i;

	spin_lock_bh(&peer->lock);
	seq_printf(m, "peer %pI6c local %pI6c qps %u epoch %08x rx_epoch %08x\n",
		   &peer->addr.remote, &peer->addr.local, peer->nqps, c->epoch,
		   c->rx_epoch);
	seq_printf(m, "  window %u inflight %u alpha %u hint_rx %u hint_tx %u slow_start %u dsn_una %08x dsn_nxt %08x rtx %u\n",
		   c->wnd, c->inflight, c->alpha, c->rate_hint, c->hint_out,
		   c->slow_start, c->dsn_una, c->dsn_nxt, c->rtx_cnt);
	seq_puts(m, "  path sport state     weight srtt_us rttvar_us minrtt_us ecn_alpha cwnd inflight tx_pkts retx lost timeouts\n");
	for (i = 0; i < c->npaths; i++) {
		mr_path_info(&c->path[i], &pi);
		seq_printf(m, "  %4u %5u %-9s %6u %7u %9u %9u %9u %4u %8u %7llu %4llu %4llu %8llu\n",
			   i, pi.sport, pi.state, pi.weight, pi.srtt_us,
			   pi.rttvar_us, pi.min_rtt_us, pi.alpha, pi.cwnd,
			   pi.inflight, pi.tx_pkts, pi.retx, pi.lost,
			   pi.timeouts);
	}
	spin_unlock_bh(&peer->lock);
}

static int mr_peers_show(struct seq_file *m, void *unused)
{
	struct mr_dev *dev = m->private;
	struct mr_peer *peer;
	u32 active;
	int b;

	/* The shared window (protocol.rst 7.25): its target and count. */
	seq_printf(m, "host window %u inflight %lld\n",
		   READ_ONCE(dev->host_window),
		   (long long)atomic64_read(&dev->tx_inflight));
	/* The fair share (7.20): the senders it runs over, its last level. */
	spin_lock_bh(&dev->fs_lock);
	active = dev->fs_nactive;
	spin_unlock_bh(&dev->fs_lock);
	seq_printf(m, "fair share active %u level %u estimate %u capacity %u\n",
		   active, READ_ONCE(dev->fs.level), READ_ONCE(dev->fs.estimate),
		   READ_ONCE(dev->fs_capacity));
	mutex_lock(&dev->peers_lock);
	/* The peers against their limits (peer.c). */
	seq_printf(m, "connections %u max %u memory %llu max_memory %llu evicted %llu refused %llu\n",
		   dev->npeers, dev->max_peers, dev->peers_mem,
		   (u64)dev->max_peer_mem_mb << 20, dev->peers_evicted,
		   dev->peers_refused);
	for (b = 0; b < MR_PEER_HASH; b++)
		hlist_for_each_entry(peer, &dev->peers[b], node)
			mr_peer_show(m, peer);
	mutex_unlock(&dev->peers_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mr_peers);

/* One RC QP with work in the engine: both halves' message state. */
static void mr_qp_show(struct seq_file *m, struct mr_ibqp *qp, u64 now)
{
	const struct mr_qp *e = &qp->eng;
	const struct mr_msg *o = NULL;

	if (e->sq_una == e->sq_nxt && !e->resp_cnt && !e->fatal &&
	    !e->rnr_nak && !e->rnr_wait)
		return;
	if (e->sq_una != e->sq_nxt && e->sq_slots)
		o = &e->sq[e->sq_una & (e->sq_slots - 1)];
	seq_printf(m, "qp %u dest %u st %u sq %u/%u/%u rd_out %u rnr %u/%u nak_pend %u lists %d%d%d idle_us %llu",
		   e->qpn, e->attr.dest_qpn, e->state,
		   e->sq_una & 0xfff, e->sq_cur & 0xfff, e->sq_nxt & 0xfff,
		   e->rd_out, e->rnr_wait, e->rnr_left, e->nak_pend,
		   e->active_node.next != &e->active_node,
		   e->busy_node.next != &e->busy_node,
		   e->dirty_node.next != &e->dirty_node,
		   (now - e->last_progress) / NSEC_PER_USEC);
	if (o)
		seq_printf(m, " oldest op %u st %u len %u sent %u landed %u segs_out %u fl %u",
			   o->opcode, o->state, o->len, o->sent,
			   o->opcode == MR_WR_READ ? o->seg.lo : 0,
			   o->segs_out, o->flags);
	seq_printf(m, " | rq_msn %u fatal %u rnr_nak %u nak_msn %u resp %u ring %u/%u/%u\n",
		   e->rq_msn & 0xfff, e->fatal, e->rnr_nak, e->nak_msn & 0xfff,
		   e->resp_cnt, qp->sq.head, qp->sq.eng, qp->sq.tail);
}

static int mr_qps_show(struct seq_file *m, void *unused)
{
	struct mr_dev *dev = m->private;
	struct mr_ibqp *qp;
	unsigned long idx;

	xa_for_each(&dev->qps, idx, qp) {
		struct mr_peer *peer;

		if (!refcount_inc_not_zero(&qp->ref))
			continue;
		peer = READ_ONCE(qp->peer);
		if (peer) {
			spin_lock_bh(&peer->lock);
			if (qp->peer == peer)
				mr_qp_show(m, qp, ktime_get_ns());
			spin_unlock_bh(&peer->lock);
		}
		mr_qp_put(qp);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mr_qps);

void mr_debugfs_add(struct mr_dev *dev)
{
	if (!mr_debugfs_root)
		return;
	dev->debugfs = debugfs_create_dir(dev_name(&dev->ibdev.dev),
					  mr_debugfs_root);
	debugfs_create_file("peers", 0400, dev->debugfs, dev, &mr_peers_fops);
	debugfs_create_file("qps", 0400, dev->debugfs, dev, &mr_qps_fops);
}

void mr_debugfs_remove(struct mr_dev *dev)
{
	debugfs_remove_recursive(dev->debugfs);
	dev->debugfs = NULL;
}

void mr_debugfs_init(void)
{
	mr_debugfs_root = debugfs_create_dir(METAROCE_NAME, NULL);
}

void mr_debugfs_exit(void)
{
	debugfs_remove_recursive(mr_debugfs_root);
	mr_debugfs_root = NULL;
}
