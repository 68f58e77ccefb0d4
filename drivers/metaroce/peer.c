// SPDX-License-Identifier: GPL-2.0-only
/*
 * Peers: one transport engine connection per (device, local address,
 * remote address), shared by every RC QP between the two endpoints (the
 * "unified connection" of the protocol).
 *
 * A peer is created when the first QP is connected to the remote address
 * (modify_qp to RTR) and outlives its last QP by metaroce's peer_idle time,
 * so that data in flight drains and a new QP to the same peer reuses the
 * connection. The engine runs under peer->lock, from the device's NAPI
 * context (packets, timers) and from verbs calls (connect, destroy).
 *
 * A device holds at most max_peers peers, and they at most max_peer_mem_mb
 * of memory together (tunables). A new peer first frees the peers that no
 * QP uses, longest unused first (dev->peers_idle); if that is not enough,
 * the RTR that wanted it fails with ENOMEM. A peer's memory is charged to
 * the process whose RTR created it.
 *
 * This file also implements the engine's callbacks: building packets
 * (payload copied once, from registered memory into the skb), completions,
 * receive matching and READ/atomic execution.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hash.h>
#include <linux/pkt_sched.h>
#include <linux/random.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <net/inet_ecn.h>

#include "metaroce.h"
#include "trace.h"

/* How long an unused, idle peer is kept (ns). */
#define MR_PEER_IDLE_NS		(5ULL * NSEC_PER_SEC)
#define MR_PEER_GC_PERIOD	(2 * HZ)
/*
 * How long a challenge's secret stays current: a cookie is accepted until
 * the secret after next takes over, 60 to 120 s after it was minted.
 */
#define MR_COOKIE_ROTATE_NS	(60ULL * NSEC_PER_SEC)

static u32 mr_peer_hash(const struct in6_addr *local,
			const struct in6_addr *remote)
{
	u32 h = jhash2((const u32 *)remote, 4, 0);

	return hash_32(jhash2((const u32 *)local, 4, h), MR_PEER_HASH_BITS);
}

struct mr_peer *mr_peer_lookup_rcu(struct mr_dev *dev,
				   const struct in6_addr *local,
				   const struct in6_addr *remote)
{
	struct mr_peer *peer;

	hlist_for_each_entry_rcu(peer, &dev->peers[mr_peer_hash(local, remote)],
				 node)
		if (ipv6_addr_equal(&peer->addr.remote, remote) &&
		    ipv6_addr_equal(&peer->addr.local, local))
			return peer;
	return NULL;
}

/* Build the payload of @pkt into @to. */
static int mr_peer_payload(struct mr_peer *peer, const struct mr_txpkt *pkt,
			   u8 *to)
{
	struct mr_ibqp *qp = mr_ibqp_of_eng(pkt->qp);
	struct ib_pd *pd = qp->ibqp.pd;
	struct mr_mem *mem;

	if (pkt->kind == MR_TX_REQ) {
		struct mr_swqe *wqe = mr_sring_slot(&qp->sq, (u32)pkt->cookie);

		if (wqe->inlined) {
			if (pkt->offset > wqe->length ||
			    pkt->plen > wqe->length - pkt->offset)
				return -EINVAL;
			memcpy(to, wqe->data + pkt->offset, pkt->plen);
			return 0;
		}
		return mr_sges_read(peer->dev, pd, wqe->sge, wqe->num_sge,
				    pkt->offset, to, pkt->plen);
	}
	/* READ response: the source is checked again for every packet. */
	mem = mr_mem_get(peer->dev, pd, pkt->key, IB_ACCESS_REMOTE_READ,
			 pkt->cookie + pkt->offset, pkt->plen);
	if (!mem)
		return -EACCES;
	mr_mem_read(mem, pkt->cookie + pkt->offset, to, pkt->plen);
	mr_mem_put(mem);
	return 0;
}

static int mr_peer_xmit(void *env, struct mr_conn *c, const struct mr_txpkt *pkt)
{
	struct mr_peer *peer = env;
	struct sk_buff *skb;
	int path = pkt->path;
	u8 tclass;

	skb = mr_xmit_alloc(pkt->hlen + pkt->plen, GFP_ATOMIC);
	if (!skb)
		return MR_XMIT_BUSY;
	skb_put_data(skb, pkt->hdr, pkt->hlen);
	if (pkt->plen &&
	    mr_peer_payload(peer, pkt, skb_put(skb, pkt->plen))) {
		kfree_skb(skb);
		return MR_XMIT_GONE;
	}
	/*
	 * A QP's data and responses go in its traffic class (its address
	 * vector's, as rdma_cm's ToS sets it), or the device's data class when
	 * its DSCP is 0. ACKs, ACK_REQs, RESETs and announcements go in the
	 * control class: their own DSCP, and TC_PRIO_CONTROL so that the
	 * host's queueing discipline (a priority band, or a VLAN's egress
	 * map) can send them ahead of data.
	 */
	if (!pkt->ctrl) {
		tclass = pkt->qp ?
			READ_ONCE(mr_ibqp_of_eng(pkt->qp)->tclass) &
			~INET_ECN_MASK : 0;
		if (!tclass)
			tclass = READ_ONCE(peer->dev->tclass);
	} else {
		tclass = READ_ONCE(peer->dev->ctrl_tclass);
		skb->priority = TC_PRIO_CONTROL;
	}
	/* A route failure drops the packet; the transport recovers. */
	mr_xmit(peer->dev, skb, &peer->addr, pkt->sport, tclass,
		&peer->dst[path], &peer->dst_sport[path]);
	return 0;
}

static void mr_peer_complete(void *env, struct mr_qp *qp,
			     const struct mr_cqe *cqe)
{
	mr_qp_eng_complete(mr_ibqp_of_eng(qp), cqe);
}

static void mr_peer_qp_error(void *env, struct mr_qp *qp, int status)
{
	mr_qp_eng_error(mr_ibqp_of_eng(qp), status);
}

static int mr_peer_bind_recv(void *env, struct mr_qp *qp, u32 ssn,
			     u64 *cookie, u32 *len)
{
	return mr_qp_eng_bind_recv(mr_ibqp_of_eng(qp), ssn, cookie, len);
}

static int mr_peer_execute(void *env, struct mr_qp *eqp,
			   const struct mr_hdr *req, u64 *result)
{
	struct mr_ibqp *qp = mr_ibqp_of_eng(eqp);
	struct mr_peer *peer = env;
	int want = req->opcode == MR_OP_READ_REQ ? IB_ACCESS_REMOTE_READ :
						   IB_ACCESS_REMOTE_ATOMIC;
	struct mr_mem *mem;
	u64 len = req->opcode == MR_OP_READ_REQ ? req->msg_len : 8;

	if (!(qp->attr.qp_access_flags & want))
		return MR_RXS_ACCESS;
	/* A zero-length READ names no memory. */
	if (!len)
		return MR_RXS_OK;
	mem = mr_mem_get(peer->dev, qp->ibqp.pd, req->rkey, want, req->raddr,
			 len);
	if (!mem)
		return MR_RXS_ACCESS;
	if (req->opcode != MR_OP_READ_REQ)
		*result = mr_mem_atomic(mem, req->raddr,
					req->opcode == MR_OP_CMP_SWAP,
					req->swap_add, req->compare);
	mr_mem_put(mem);
	return MR_RXS_OK;
}

static struct mr_qp *mr_peer_lookup_qp(void *env, struct mr_conn *c, u32 qpn)
{
	struct mr_peer *peer = env;
	struct mr_ibqp *qp;

	/*
	 * Under peer->lock a QP attached to this peer cannot go away; one
	 * that is not attached (any more) can, so it is only looked at
	 * under the xarray's lock, which its destruction must take first.
	 */
	xa_lock(&peer->dev->qps);
	qp = xa_load(&peer->dev->qps, qpn);
	if (qp && qp->peer != peer)
		qp = NULL;
	xa_unlock(&peer->dev->qps);
	return qp ? &qp->eng : NULL;
}

static u64 mr_peer_route_key(void *env, struct mr_conn *c, u16 sport)
{
	struct mr_peer *peer = env;

	return mr_route_key(peer->dev, &peer->addr, sport);
}

/* Every peer of the device counts into one shared window. */
static u64 mr_peer_host_window(void *env, struct mr_conn *c, s64 delta)
{
	struct mr_peer *peer = env;
	struct mr_dev *dev = peer->dev;
	u32 target = READ_ONCE(dev->host_window);
	s64 v;

	v = delta ? atomic64_add_return(delta, &dev->tx_inflight) :
		    atomic64_read(&dev->tx_inflight);
	return v < target ? target - v : 0;
}

/*
 * The challenge for a sender of @epoch (protocol.rst, 7.2): SipHash-2-4,
 * keyed with the device's secret, of both addresses, both MetaRoCE ports
 * (the module's: the peer's port is where the challenge goes) and the
 * epoch. Only the peer's device, which receives at that address and port,
 * learns it.
 */
static u64 mr_peer_cookie(void *env, struct mr_conn *c, u32 epoch, int prev)
{
	struct mr_peer *peer = env;
	struct mr_dev *dev = peer->dev;
	struct {
		struct in6_addr local;
		struct in6_addr remote;
		__be16 local_port;
		__be16 remote_port;
		__be32 epoch;
	} in;
	siphash_key_t key;
	unsigned int seq;
	bool have;
	u64 v;

	static_assert(sizeof(in) == 40);
	in.local = peer->addr.local;
	in.remote = peer->addr.remote;
	in.local_port = htons(mr_udp_port);
	in.remote_port = htons(mr_udp_port);
	in.epoch = cpu_to_be32(epoch);
	do {
		seq = read_seqbegin(&dev->cookie_lock);
		have = !prev || dev->cookie_prev;
		key = dev->cookie_key[prev ? 1 : 0];
	} while (read_seqretry(&dev->cookie_lock, seq));
	if (!have)
		return 0;
	v = siphash(&in, sizeof(in), &key);
	memzero_explicit(&key, sizeof(key));
	/* Never 0 under the current secret: 0 means "no cookie". */
	return v || prev ? v : 1;
}

/* A new secret for the device's cookies; the current one becomes the last. */
static void mr_cookie_rotate(struct mr_dev *dev, u64 now)
{
	siphash_key_t key;

	get_random_bytes(&key, sizeof(key));
	write_seqlock_bh(&dev->cookie_lock);
	dev->cookie_key[1] = dev->cookie_key[0];
	dev->cookie_prev = dev->cookie_next != 0;
	dev->cookie_key[0] = key;
	write_sequnlock_bh(&dev->cookie_lock);
	memzero_explicit(&key, sizeof(key));
	dev->cookie_next = now + MR_COOKIE_ROTATE_NS;
}

/* The engine's events, as tracepoints (trace.h). */
static void mr_peer_trace(void *env, struct mr_conn *c, int event, int path,
			  u64 a, u64 b)
{
	const struct mr_peer *peer = container_of(c, struct mr_peer, conn);

	switch (event) {
	case MR_TRACE_PATH_STATE:
		trace_metaroce_path_state(peer, path, a, b);
		break;
	case MR_TRACE_PATH_REPICK:
		trace_metaroce_path_repick(peer, path, a, b);
		break;
	case MR_TRACE_TIMEOUT:
		trace_metaroce_timeout(peer, path, a, b);
		break;
	case MR_TRACE_RETRANSMIT:
		trace_metaroce_retransmit(peer, path, a, b);
		break;
	case MR_TRACE_EPOCH:
		trace_metaroce_epoch(peer, path, a, b);
		break;
	}
}

static const struct mr_env_ops mr_peer_ops = {
	.xmit = mr_peer_xmit,
	.complete = mr_peer_complete,
	.qp_error = mr_peer_qp_error,
	.bind_recv = mr_peer_bind_recv,
	.execute = mr_peer_execute,
	.lookup_qp = mr_peer_lookup_qp,
	.route_key = mr_peer_route_key,
	.host_window = mr_peer_host_window,
	.cookie = mr_peer_cookie,
	.trace = mr_peer_trace,
};

static enum hrtimer_restart mr_peer_timer_fn(struct hrtimer *t)
{
	struct mr_peer *peer = container_of(t, struct mr_peer, timer);

	mr_napi_kick_peer(peer, MR_PEER_WORK_TIMER);
	return HRTIMER_NORESTART;
}

int mr_peer_tx(struct mr_peer *peer, int budget)
{
	lockdep_assert_held(&peer->lock);
	return mr_conn_tx(&peer->conn, ktime_get_ns(), budget);
}

void mr_peer_settle(struct mr_peer *peer, int sent, int budget)
{
	u64 t;

	lockdep_assert_held(&peer->lock);
	if (peer->dead)
		return;
	t = mr_conn_next_timer(&peer->conn);
	if (t != MR_U64_MAX &&
	    (t < peer->timer_at || !hrtimer_is_queued(&peer->timer))) {
		peer->timer_at = t;
		hrtimer_start(&peer->timer, ns_to_ktime(t),
			      HRTIMER_MODE_ABS_SOFT);
	}
	if (sent >= budget)
		mr_napi_kick_peer(peer, MR_PEER_WORK_TX);
}

void mr_peer_timer_run(struct mr_peer *peer)
{
	u64 now = ktime_get_ns();
	int sent;

	spin_lock_bh(&peer->lock);
	peer->timer_at = MR_U64_MAX;
	mr_conn_timer(&peer->conn, now);
	sent = mr_peer_tx(peer, MR_PEER_TX_BUDGET);
	mr_peer_settle(peer, sent, MR_PEER_TX_BUDGET);
	spin_unlock_bh(&peer->lock);
}

static void mr_peer_free(struct mr_peer *peer)
{
	int i;

	mr_conn_host_detach(&peer->conn);
	for (i = 0; i < MR_MAX_PATHS; i++)
		dst_cache_destroy(&peer->dst[i]);
	kvfree(peer->segs);
	kfree(peer);
}

static void mr_peer_free_rcu(struct rcu_head *rcu)
{
	mr_peer_free(container_of(rcu, struct mr_peer, rcu));
}

/* The memory a new peer of @dev holds: its structure and segment table. */
static u64 mr_peer_mem(const struct mr_dev *dev)
{
	return kmalloc_size_roundup(sizeof(struct mr_peer)) +
	       kmalloc_size_roundup(array_size(dev->conn_cfg.seg_wnd,
					       sizeof(struct mr_seg)));
}

/* Called by an RTR, so the process that asked pays for the memory. */
static struct mr_peer *mr_peer_create(struct mr_dev *dev,
				      const struct mr_addr *addr)
{
	struct mr_peer *peer;
	u32 epoch;
	int i;

	peer = kzalloc(sizeof(*peer), GFP_KERNEL_ACCOUNT);
	if (!peer)
		return NULL;
	peer->segs = kvcalloc(dev->conn_cfg.seg_wnd, sizeof(*peer->segs),
			      GFP_KERNEL_ACCOUNT);
	if (!peer->segs)
		goto err;
	for (i = 0; i < MR_MAX_PATHS; i++)
		if (dst_cache_init(&peer->dst[i], GFP_KERNEL_ACCOUNT))
			goto err;
	spin_lock_init(&peer->lock);
	peer->dev = dev;
	peer->addr = *addr;
	peer->mem = mr_peer_mem(dev);
	peer->timer_at = MR_U64_MAX;
	INIT_LIST_HEAD(&peer->work_node);
	INIT_LIST_HEAD(&peer->rx_node);
	INIT_LIST_HEAD(&peer->fs_node);
	INIT_LIST_HEAD(&peer->idle_node);
	hrtimer_setup(&peer->timer, mr_peer_timer_fn, CLOCK_MONOTONIC,
		      HRTIMER_MODE_ABS_SOFT);
	do {
		epoch = get_random_u32();
	} while (!epoch);
	if (mr_conn_init(&peer->conn, &dev->conn_cfg, peer->segs,
			 &mr_peer_ops, peer, epoch, get_random_u64(),
			 ktime_get_ns()))
		goto err;
	return peer;
err:
	mr_peer_free(peer);
	return NULL;
}

static void mr_totals_add(struct mr_totals *t, const struct mr_conn *c)
{
	int i;

	for (i = 0; i < MR_ST_MAX; i++)
		t->stats[i] += c->stats[i];
	for (i = 0; i < MR_DROP_NR_REASONS; i++)
		t->drops[i] += c->drops[i];
	for (i = 0; i < MR_MAX_PATHS; i++) {
		t->path_tx[i] += c->path[i].tx_pkts;
		t->path_retx[i] += c->path[i].retx;
	}
}

static void mr_peer_retire(struct mr_dev *dev, struct mr_peer *peer)
{
	lockdep_assert_held(&dev->peers_lock);
	hlist_del_rcu(&peer->node);
	list_del_init(&peer->idle_node);
	dev->npeers--;
	dev->peers_mem -= peer->mem;
	spin_lock_bh(&peer->lock);
	peer->dead = true;
	mr_fs_leave(peer);
	mr_totals_add(&dev->retired, &peer->conn);
	spin_unlock_bh(&peer->lock);
	hrtimer_cancel(&peer->timer);
	spin_lock_irq(&dev->work_lock);
	list_del_init(&peer->work_node);
	spin_unlock_irq(&dev->work_lock);
}

/*
 * Room for a peer that holds @mem bytes, within the device's limits, made by
 * freeing peers that no QP uses, longest unused first: 0, or -ENOMEM when
 * they are not enough. peers_lock held.
 */
static int mr_peers_make_room(struct mr_dev *dev, u64 mem)
{
	u64 max_mem = (u64)dev->max_peer_mem_mb << 20;
	struct mr_peer *peer;

	lockdep_assert_held(&dev->peers_lock);
	while (dev->npeers >= dev->max_peers ||
	       dev->peers_mem + mem > max_mem) {
		peer = list_first_entry_or_null(&dev->peers_idle,
						struct mr_peer, idle_node);
		if (!peer) {
			dev->peers_refused++;
			return -ENOMEM;
		}
		mr_peer_retire(dev, peer);
		dev->peers_evicted++;
		/* Freed once NAPI polls that may hold it are done. */
		call_rcu(&peer->rcu, mr_peer_free_rcu);
	}
	return 0;
}

struct mr_peer *mr_peer_attach(struct mr_dev *dev, const struct mr_addr *addr)
{
	struct mr_peer *peer;

	mutex_lock(&dev->peers_lock);
	rcu_read_lock();
	peer = mr_peer_lookup_rcu(dev, &addr->local, &addr->remote);
	rcu_read_unlock();
	if (!peer && !mr_peers_make_room(dev, mr_peer_mem(dev)) &&
	    !mr_fs_reserve(dev, dev->npeers + 1)) {
		peer = mr_peer_create(dev, addr);
		if (peer) {
			hlist_add_head_rcu(&peer->node,
					   &dev->peers[mr_peer_hash(&addr->local,
								    &addr->remote)]);
			dev->npeers++;
			dev->peers_mem += peer->mem;
		}
	}
	/* In use again: not a candidate for freeing. */
	if (peer && !peer->nqps++)
		list_del_init(&peer->idle_node);
	mutex_unlock(&dev->peers_lock);
	return peer;
}

void mr_peer_detach(struct mr_peer *peer)
{
	struct mr_dev *dev = peer->dev;

	mutex_lock(&dev->peers_lock);
	if (!--peer->nqps) {
		peer->idle_since = ktime_get_ns();
		list_add_tail(&peer->idle_node, &dev->peers_idle);
	}
	mutex_unlock(&dev->peers_lock);
}

/*
 * Free peers that have had no QP for MR_PEER_IDLE_NS and are idle, or that
 * never had an answer from their remote end: nothing of theirs can still
 * reach it, and keeping them would only send into nothing.
 */
static void mr_peer_gc(struct work_struct *work)
{
	struct mr_dev *dev = container_of(to_delayed_work(work), struct mr_dev,
					  peer_gc);
	struct mr_peer *peer, *dead = NULL;
	struct hlist_node *tmp;
	u64 now;
	int b;

	mutex_lock(&dev->peers_lock);
	/* After the lock: no detach stamps idle_since later than now. */
	now = ktime_get_ns();
	if (now >= dev->cookie_next)
		mr_cookie_rotate(dev, now);
	for (b = 0; b < MR_PEER_HASH; b++) {
		hlist_for_each_entry_safe(peer, tmp, &dev->peers[b], node) {
			bool idle;

			if (peer->nqps || now - peer->idle_since < MR_PEER_IDLE_NS)
				continue;
			spin_lock_bh(&peer->lock);
			idle = mr_conn_idle(&peer->conn) ||
			       !mr_conn_answered(&peer->conn);
			spin_unlock_bh(&peer->lock);
			if (!idle && now - peer->idle_since < 30 * MR_PEER_IDLE_NS)
				continue;
			mr_peer_retire(dev, peer);
			/*
			 * Not through rx_node: a NAPI poll that found the
			 * peer before it was unhashed may have it on its
			 * touched list until the grace period ends.
			 */
			peer->gc_next = dead;
			dead = peer;
		}
	}
	mutex_unlock(&dev->peers_lock);
	if (dead) {
		/* NAPI polls that may still hold a pointer are done after this. */
		synchronize_net();
		while (dead) {
			peer = dead;
			dead = peer->gc_next;
			mr_peer_free(peer);
		}
	}
	if (!dev->peers_stopping)
		queue_delayed_work(mr_wq, &dev->peer_gc, MR_PEER_GC_PERIOD);
}

int mr_peers_init(struct mr_dev *dev)
{
	int i;

	mutex_init(&dev->peers_lock);
	for (i = 0; i < MR_PEER_HASH; i++)
		INIT_HLIST_HEAD(&dev->peers[i]);
	seqlock_init(&dev->cookie_lock);
	mr_cookie_rotate(dev, ktime_get_ns());
	INIT_LIST_HEAD(&dev->peers_idle);
	INIT_DELAYED_WORK(&dev->peer_gc, mr_peer_gc);
	queue_delayed_work(mr_wq, &dev->peer_gc, MR_PEER_GC_PERIOD);
	return 0;
}

/* Device teardown: every QP is gone; free every peer. */
void mr_peers_destroy(struct mr_dev *dev)
{
	struct mr_peer *peer;
	struct hlist_node *tmp;
	int b;

	dev->peers_stopping = true;
	cancel_delayed_work_sync(&dev->peer_gc);
	/* Peers freed to make room are freed before the device. */
	rcu_barrier();
	mutex_lock(&dev->peers_lock);
	for (b = 0; b < MR_PEER_HASH; b++) {
		hlist_for_each_entry_safe(peer, tmp, &dev->peers[b], node) {
			WARN_ON_ONCE(peer->nqps);
			mr_peer_retire(dev, peer);
			synchronize_net();
			mr_peer_free(peer);
		}
	}
	mutex_unlock(&dev->peers_lock);
	memzero_explicit(dev->cookie_key, sizeof(dev->cookie_key));
}

/*
 * Make @cfg the device's engine configuration (peers_lock held): applied to
 * every live connection, or, for a change of @shape (the number of paths),
 * refused while there are connections.
 */
int mr_peers_reconfigure(struct mr_dev *dev, const struct mr_conn_cfg *cfg,
			 bool shape)
{
	struct mr_peer *peer;
	int b, err = 0;

	lockdep_assert_held(&dev->peers_lock);
	if (shape && dev->npeers)
		return -EBUSY;
	for (b = 0; b < MR_PEER_HASH && !err; b++) {
		hlist_for_each_entry(peer, &dev->peers[b], node) {
			spin_lock_bh(&peer->lock);
			if (mr_conn_reconfigure(&peer->conn, cfg))
				err = -EINVAL;
			spin_unlock_bh(&peer->lock);
			if (err)
				break;
		}
	}
	if (!err)
		dev->conn_cfg = *cfg;
	return err;
}

void mr_peers_totals(struct mr_dev *dev, struct mr_totals *t)
{
	struct mr_peer *peer;
	int b;

	mutex_lock(&dev->peers_lock);
	*t = dev->retired;
	for (b = 0; b < MR_PEER_HASH; b++) {
		hlist_for_each_entry(peer, &dev->peers[b], node) {
			spin_lock_bh(&peer->lock);
			mr_totals_add(t, &peer->conn);
			spin_unlock_bh(&peer->lock);
		}
	}
	mutex_unlock(&dev->peers_lock);
}
