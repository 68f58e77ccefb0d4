// SPDX-License-Identifier: GPL-2.0-only
/*
 * The device's NAPI context, where the transport runs.
 *
 * The UDP socket's encap_rcv queues packets here; one poll processes up to
 * its budget of them: each is validated by the engine's parser, matched to
 * a peer and QP, run through the engine, and its payload placed straight
 * into the registered memory it names. After the batch every peer that
 * received something coalesces its ACKs into one round and sends what its
 * windows now allow. The same poll then serves send queues with new work
 * requests and peers whose timer fired: nothing in the data path sleeps.
 */

#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/log2.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <net/inet_ecn.h>

#include "metaroce.h"

/* Received packets waiting for the poll, at most. */
#define MR_RXQ_MAX		1024
/*
 * Above this many waiting packets the receiving host itself is the
 * bottleneck: packets are marked Congestion Experienced as a switch queue
 * would mark them, so senders back off before the queue grows into
 * milliseconds of delay (and before it overflows).
 */
#define MR_RXQ_MARK		64
/* Send queues and peers served per poll before yielding. */
#define MR_SERVICE_BUDGET	64

struct mr_skb_cb {
	bool ce;
};

#define MR_SKB_CB(skb) ((struct mr_skb_cb *)(skb)->cb)

void mr_napi_rx(struct mr_dev *dev, struct sk_buff *skb, bool ce)
{
	if (skb_queue_len(&dev->rxq) >= MR_RXQ_MAX) {
		mr_counter_add(dev->counters, MR_CNT_RX_DROP_BACKLOG, 1);
		kfree_skb(skb);
		return;
	}
	if (skb_queue_len(&dev->rxq) >= MR_RXQ_MARK && !ce) {
		ce = true;
		mr_counter_add(dev->counters, MR_CNT_RX_CE_MARKED, 1);
	}
	MR_SKB_CB(skb)->ce = ce;
	skb_queue_tail(&dev->rxq, skb);
	napi_schedule(&dev->napi);
}

static void mr_addr_v4mapped(struct in6_addr *a, __be32 v4)
{
	ipv6_addr_set_v4mapped(v4, a);
}

/*
 * A UD datagram to QPN 0xffffff: a copy for each UD QP attached to the
 * group of its destination address (each may still refuse it: Q_Key,
 * state, no receive posted).
 */
static void mr_rx_mcast(struct mr_dev *dev, const struct mr_hdr *h,
			struct sk_buff *skb, int hlen)
{
	u32 qpn[METAROCE_MAX_MCAST_QP_ATTACH];
	struct in6_addr daddr;
	int i, n, taken = 0;

	if (skb->protocol == htons(ETH_P_IP))
		mr_addr_v4mapped(&daddr, ip_hdr(skb)->daddr);
	else
		daddr = ipv6_hdr(skb)->daddr;
	n = mr_mcast_qpns(dev, &daddr, qpn, ARRAY_SIZE(qpn));
	for (i = 0; i < n; i++) {
		struct mr_ibqp *qp = mr_qp_get(dev, qpn[i]);

		if (!qp)
			continue;
		if (qp->ibqp.qp_type == IB_QPT_UD) {
			mr_qp_ud_recv(qp, h, skb, hlen);
			taken++;
		}
		mr_qp_put(qp);
	}
	if (!taken)
		mr_counter_add(dev->counters, MR_CNT_RX_DROP_NO_QP, 1);
}

/* Do what the engine asked with a data packet; returns enum mr_rx_status. */
static int mr_rx_place(struct mr_dev *dev, struct mr_ibqp *qp,
		       const struct mr_hdr *h, const struct mr_rx *rx,
		       struct sk_buff *skb, int hlen)
{
	struct ib_pd *pd = qp->ibqp.pd;
	struct mr_mem *mem;
	struct mr_swqe *wqe;
	struct mr_rwqe *w;
	u64 at;

	switch (rx->action) {
	case MR_RXA_WRITE:
		if (!(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_WRITE))
			return MR_RXS_ACCESS;
		if (!h->plen)
			return MR_RXS_OK;
		at = h->raddr + h->offset;
		if (at < h->raddr)
			return MR_RXS_ACCESS;
		mem = mr_mem_get(dev, pd, h->rkey, IB_ACCESS_REMOTE_WRITE, at,
				 h->plen);
		if (!mem)
			return MR_RXS_ACCESS;
		if (mr_mem_write_skb(mem, at, skb, hlen, h->plen)) {
			mr_mem_put(mem);
			return MR_RXS_ACCESS;
		}
		mr_mem_put(mem);
		return MR_RXS_OK;
	case MR_RXA_SEND:
		w = mr_qp_recv_wqe(qp, rx->cookie);
		if (h->offset > w->length || h->plen > w->length - h->offset)
			return MR_RXS_LENGTH;
		/* The receive buffer is ours: its failure is not the peer's. */
		if (mr_sges_write(dev, pd, w->sge, w->num_sge, h->offset, NULL,
				  skb, hlen, h->plen))
			return MR_RXS_LOCAL;
		return MR_RXS_OK;
	case MR_RXA_READ_RESP:
		wqe = mr_sring_slot(&qp->sq, (u32)rx->cookie);
		if (mr_sges_write(dev, pd, wqe->sge, wqe->num_sge, h->offset,
				  NULL, skb, hlen, h->plen))
			return MR_RXS_LOCAL;
		return MR_RXS_OK;
	case MR_RXA_ATOMIC_RESP:
		wqe = mr_sring_slot(&qp->sq, (u32)rx->cookie);
		if (mr_sges_write(dev, pd, wqe->sge, wqe->num_sge, 0, &h->orig,
				  NULL, 0, sizeof(h->orig)))
			return MR_RXS_LOCAL;
		return MR_RXS_OK;
	default:
		return MR_RXS_INVALID;
	}
}

static void mr_rx_one(struct mr_dev *dev, struct sk_buff *skb,
		      struct list_head *touched)
{
	struct in6_addr local, remote;
	struct mr_ibqp *qp = NULL;
	struct mr_ack *ack = &dev->rx_ack;
	struct mr_peer *peer;
	struct mr_hdr h;
	struct mr_rx rx;
	u32 pull;
	int hlen;

	pull = min_t(u32, skb->len, MR_HLEN_MAX);
	if (skb->len >= 2 && pskb_may_pull(skb, 2) &&
	    skb->data[1] == MR_OP_ACK)
		pull = min_t(u32, skb->len, MR_ACK_MAX_LEN);
	if (!pskb_may_pull(skb, pull)) {
		mr_counter_add(dev->counters, MR_CNT_RX_DROP_MALFORMED, 1);
		return;
	}
	hlen = mr_wire_decode(skb->data, skb->len, &h, ack);
	if (hlen < 0) {
		mr_counter_add(dev->counters, MR_CNT_RX_DROP_MALFORMED, 1);
		return;
	}

	if (h.opcode == MR_OP_UD_SEND && h.dst_qpn == IB_MULTICAST_QPN) {
		mr_rx_mcast(dev, &h, skb, hlen);
		return;
	}
	if (h.opcode == MR_OP_UD_SEND) {
		qp = mr_qp_get(dev, h.dst_qpn);
		if (!qp || qp->ibqp.qp_type == IB_QPT_RC)
			mr_counter_add(dev->counters, MR_CNT_RX_DROP_NO_QP, 1);
		else
			mr_qp_ud_recv(qp, &h, skb, hlen);
		if (qp)
			mr_qp_put(qp);
		return;
	}

	if (skb->protocol == htons(ETH_P_IP)) {
		mr_addr_v4mapped(&local, ip_hdr(skb)->daddr);
		mr_addr_v4mapped(&remote, ip_hdr(skb)->saddr);
	} else {
		local = ipv6_hdr(skb)->daddr;
		remote = ipv6_hdr(skb)->saddr;
	}
	peer = mr_peer_lookup_rcu(dev, &local, &remote);
	if (!peer) {
		mr_counter_add(dev->counters, MR_CNT_RX_DROP_NO_CONN, 1);
		return;
	}
	if (h.opcode != MR_OP_ACK)
		qp = mr_qp_get(dev, h.dst_qpn);

	spin_lock(&peer->lock);
	mr_conn_rx(&peer->conn, qp ? &qp->eng : NULL, &h,
		   h.opcode == MR_OP_ACK ? ack : NULL,
		   MR_SKB_CB(skb)->ce, ktime_get_ns(), &rx);
	if (rx.action != MR_RXA_NONE && rx.action != MR_RXA_DROP) {
		int st = qp ? mr_rx_place(dev, qp, &h, &rx, skb, hlen) :
			      MR_RXS_INVALID;

		mr_conn_rx_done(&peer->conn, &h, &rx, st, 0, ktime_get_ns());
		/* The peer answered: the next doorbell sends at once. */
		if (qp && qp->sq_ring && !READ_ONCE(qp->sq_answered))
			WRITE_ONCE(qp->sq_answered, true);
	}
	mr_fs_join_peer(dev, peer);
	spin_unlock(&peer->lock);
	if (qp)
		mr_qp_put(qp);
	if (list_empty(&peer->rx_node))
		list_add_tail(&peer->rx_node, touched);
}

/* ACKs and transmission for every peer the batch touched. */
static void mr_rx_finish(struct list_head *touched)
{
	struct mr_peer *peer, *tmp;

	list_for_each_entry_safe(peer, tmp, touched, rx_node) {
		int sent;

		list_del_init(&peer->rx_node);
		spin_lock(&peer->lock);
		mr_conn_rx_flush(&peer->conn, ktime_get_ns());
		sent = mr_peer_tx(peer, MR_PEER_TX_BUDGET);
		mr_peer_settle(peer, sent, MR_PEER_TX_BUDGET);
		spin_unlock(&peer->lock);
	}
}

/* Serve queued send queues and peers; returns true if work remains. */
static bool mr_service(struct mr_dev *dev)
{
	int n;

	for (n = 0; n < MR_SERVICE_BUDGET; n++) {
		struct mr_ibqp *qp;

		spin_lock_irq(&dev->work_lock);
		qp = list_first_entry_or_null(&dev->qp_work, struct mr_ibqp,
					      work_node);
		if (qp) {
			list_del_init(&qp->work_node);
			qp->on_work = false;
			if (!refcount_inc_not_zero(&qp->ref))
				qp = NULL;
		}
		spin_unlock_irq(&dev->work_lock);
		if (!qp)
			break;
		mr_qp_service(qp);
		mr_qp_put(qp);
	}
	for (n = 0; n < MR_SERVICE_BUDGET; n++) {
		struct mr_peer *peer;
		unsigned long work;

		spin_lock_irq(&dev->work_lock);
		peer = list_first_entry_or_null(&dev->peer_work,
						struct mr_peer, work_node);
		if (peer)
			list_del_init(&peer->work_node);
		spin_unlock_irq(&dev->work_lock);
		if (!peer)
			break;
		work = xchg(&peer->work, 0);
		if (work & BIT(MR_PEER_WORK_TIMER)) {
			mr_peer_timer_run(peer);
		} else if (work & BIT(MR_PEER_WORK_TX)) {
			int sent;

			spin_lock(&peer->lock);
			sent = mr_peer_tx(peer, MR_PEER_TX_BUDGET);
			mr_peer_settle(peer, sent, MR_PEER_TX_BUDGET);
			spin_unlock(&peer->lock);
		}
	}
	return !list_empty(&dev->qp_work) || !list_empty(&dev->peer_work);
}

/*
 * Recompute the fair-share hints the device grants its active senders:
 * every MR_FS_PERIOD_NS from the meters, and in between, when a sender
 * announced itself, from the demands as they are (protocol section 7.20).
 * A hint that fell well below what a peer was last told goes out at once.
 * A full run lets the peers whose demand is gone leave the active set.
 */
static void mr_fs_tick(struct mr_dev *dev)
{
	struct mr_fs_scratch *s = rcu_dereference(dev->fs_scratch);
	struct mr_peer *peer;
	u64 now = ktime_get_ns();
	bool full = now >= dev->fs_next;
	u32 n = 0, i, cap;

	if (!full && (!dev->fs_kick_at || now < dev->fs_kick_at))
		return;
	cap = READ_ONCE(dev->fs_capacity);
	if (cap != dev->fs.capacity) {
		/* A new capacity (mr_fs_capacity()): the estimate starts there. */
		dev->fs.capacity = cap;
		dev->fs.estimate = cap;
	}
	dev->fs_kick_at = 0;
	dev->fs_last = now;
	if (full) {
		dev->fs_next = now + MR_FS_PERIOD_NS;
		dev->fs_full_at = now;
	}
	/*
	 * The scratch has room for every peer; a peer retired since the list
	 * was read is still there until this poll ends (RCU).
	 */
	spin_lock(&dev->fs_lock);
	list_for_each_entry(peer, &dev->fs_active, fs_node) {
		if (WARN_ON_ONCE(n == s->cap))
			break;
		s->peer[n++] = peer;
	}
	spin_unlock(&dev->fs_lock);
	for (i = 0; i < n; i++) {
		peer = s->peer[i];
		spin_lock(&peer->lock);
		if (full)
			s->rate[i] = mr_conn_rx_rate(&peer->conn, now,
						     &s->ce[i]);
		s->demand[i] = peer->conn.rx_demand;
		peer->conn.fs_new = 0;
		spin_unlock(&peer->lock);
	}
	if (full)
		mr_fs_update(&dev->fs, s->rate, s->ce, s->demand, n, s->share);
	else
		mr_fs_share(&dev->fs, s->demand, n, s->share);
	for (i = 0; i < n; i++) {
		peer = s->peer[i];
		spin_lock(&peer->lock);
		mr_conn_set_hint(&peer->conn, s->share[i]);
		if (full && !peer->conn.rx_demand)
			mr_fs_leave(peer);
		if (peer->conn.ack_now && !peer->dead) {
			mr_conn_rx_flush(&peer->conn, now);
			mr_peer_settle(peer, 0, MR_PEER_TX_BUDGET);
		}
		spin_unlock(&peer->lock);
	}
}

static int mr_napi_poll(struct napi_struct *napi, int budget)
{
	struct mr_dev *dev = container_of(napi, struct mr_dev, napi);
	LIST_HEAD(touched);
	bool more;
	int done = 0;

	rcu_read_lock();
	while (done < budget) {
		struct sk_buff *skb = skb_dequeue(&dev->rxq);

		/* Then the device's own multicast, for its members. */
		if (!skb && !skb_queue_empty_lockless(&dev->mc_loop))
			skb = skb_dequeue(&dev->mc_loop);
		if (!skb)
			break;
		mr_rx_one(dev, skb, &touched);
		consume_skb(skb);
		done++;
	}
	mr_rx_finish(&touched);
	more = mr_service(dev);
	mr_fs_tick(dev);
	rcu_read_unlock();

	if (done == budget || more)
		return budget;
	napi_complete_done(napi, done);
	return done;
}

int mr_napi_init(struct mr_dev *dev)
{
	int err = mr_fair_init(dev);

	if (err)
		return err;
	dev->napi_dev = mr_alloc_dummy_netdev();
	if (!dev->napi_dev)
		return -ENOMEM;
	skb_queue_head_init(&dev->rxq);
	spin_lock_init(&dev->work_lock);
	INIT_LIST_HEAD(&dev->qp_work);
	INIT_LIST_HEAD(&dev->peer_work);
	netif_napi_add(dev->napi_dev, &dev->napi, mr_napi_poll);
	napi_enable(&dev->napi);
	return 0;
}

void mr_napi_destroy(struct mr_dev *dev)
{
	if (dev->napi_dev) {
		napi_disable(&dev->napi);
		netif_napi_del(&dev->napi);
		skb_queue_purge(&dev->rxq);
		mr_free_dummy_netdev(dev->napi_dev);
		dev->napi_dev = NULL;
	}
	/* Every peer is gone and the poll that ran the share has stopped. */
	mr_fair_destroy(dev);
}
