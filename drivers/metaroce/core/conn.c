// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Connections: the unified transport between two endpoints.
 *
 * Send half: segments of every attached QP get a connection-wide data
 * sequence number (DSN) on first transmission and are sprayed over the
 * paths; a lost transmission is retransmitted under the same DSN on
 * whichever path has room. Congestion control keeps one window for the
 * connection (ECN-driven AIMD, capped by the receiver's fair-share hint)
 * and splits it over the paths by their weights.
 *
 * Receive half: per-path SACK state, the DSN window that makes processing
 * exactly-once whatever arrives twice, and ACK coalescing.
 *
 * The top of the engine's files: it drives the paths (path.c), the QPs
 * (resp.c, msg.c) and the window (cc.c). A packet goes out through emit.c, and a
 * processed segment leaves the segment table through segtab.c; both sit
 * below the paths, which use them too.
 */
#include "internal.h"

void mr_conn_cfg_default(struct mr_conn_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->npaths = 8;
	cfg->seg_wnd = 1024;
	cfg->mtu = 1024;
	cfg->init_window = 64 * 1024;
	cfg->min_window = 2 * (1024 + MR_DATA_HLEN_MAX);
	cfg->max_window = 16 * 1024 * 1024;
	cfg->ai_bytes = 4 * 1024;
	cfg->ecn_shift = 4;
	cfg->rto_min_ns = 1000000;
	cfg->rto_max_ns = 100000000;
	cfg->rto_init_ns = 5000000;
	cfg->ack_delay_ns = 20000;
	cfg->ack_every = 16;
	cfg->reorder_thresh = 3;
	cfg->dead_after = 3;
	cfg->probe_ns = 1000000;
	cfg->msg_ack_ns = 1000000;
	cfg->epoch_quiet_ns = 10000000;
	cfg->repick_alpha = 512;
	cfg->pacing = 0;
	cfg->pace_burst = 64 * 1024;
	cfg->sport_min = 49152;
	cfg->sport_max = 65535;
}

int mr_conn_cfg_check(const struct mr_conn_cfg *cfg)
{
	if (!cfg->npaths || cfg->npaths > MR_MAX_PATHS)
		return -1;
	if (cfg->seg_wnd < 16 || cfg->seg_wnd > MR_DSN_WND ||
	    (cfg->seg_wnd & (cfg->seg_wnd - 1)))
		return -1;
	if (cfg->mtu < 256 || cfg->mtu > MR_MAX_PAYLOAD)
		return -1;
	/* 1 GiB: the window arithmetic (doubling, + a round) stays in u32. */
	if (!cfg->min_window || cfg->min_window > cfg->max_window ||
	    cfg->max_window > (1u << 30) ||
	    cfg->init_window < cfg->min_window ||
	    cfg->init_window > cfg->max_window)
		return -1;
	if (cfg->ecn_shift < 1 || cfg->ecn_shift > 10)
		return -1;
	if (!cfg->rto_min_ns || cfg->rto_min_ns > cfg->rto_max_ns ||
	    !cfg->rto_init_ns)
		return -1;
	if (!cfg->ack_every || !cfg->reorder_thresh ||
	    cfg->reorder_thresh >= MR_PATH_WND || !cfg->dead_after ||
	    !cfg->probe_ns || !cfg->msg_ack_ns)
		return -1;
	/* A path counts its consecutive timeouts up to 255. */
	if (cfg->dead_after > 255 || cfg->pacing > 1 || cfg->announce > 1)
		return -1;
	if (cfg->repick_alpha > 1024)
		return -1;
	if (!cfg->sport_min || cfg->sport_min > cfg->sport_max)
		return -1;
	return 0;
}

int mr_conn_init(struct mr_conn *c, const struct mr_conn_cfg *cfg,
		 struct mr_seg *segs, const struct mr_env_ops *ops, void *env,
		 u32 epoch, u64 seed, u64 now)
{
	u32 i;

	if (mr_conn_cfg_check(cfg) || !epoch || !segs || !ops || !ops->cookie)
		return -1;
	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	c->ops = ops;
	c->env = env;
	c->rng = seed | 1;
	c->epoch = epoch;
	c->syn = 1;
	c->announce = (u8)cfg->announce;
	c->slow_start = 1;
	c->npaths = (u8)cfg->npaths;
	c->dsn_nxt = epoch;
	c->dsn_una = epoch;
	c->rtx_scan = epoch;
	c->segs = segs;
	c->seg_mask = cfg->seg_wnd - 1;
	memset(segs, 0, cfg->seg_wnd * sizeof(*segs));
	c->wnd = cfg->init_window;
	c->round_target = c->wnd;
	c->next_sweep = now;
	c->idle_since = now;
	c->ack_deadline = MR_U64_MAX;
	c->rx_meter_start = now;
	c->rx_arrival_at = now;
	mr_list_init(&c->active);
	mr_list_init(&c->busy);
	mr_list_init(&c->waitq);
	mr_list_init(&c->rnrq);
	mr_list_init(&c->dirty);
	for (i = 0; i < MR_MAX_PATHS; i++)
		mr_path_init(c, &c->path[i], i, now);
	mr_paths_rebalance(c);
	return 0;
}

int mr_conn_reconfigure(struct mr_conn *c, const struct mr_conn_cfg *cfg)
{
	if (mr_conn_cfg_check(cfg) || cfg->npaths != c->cfg.npaths ||
	    cfg->seg_wnd != c->cfg.seg_wnd)
		return -1;
	c->cfg = *cfg;
	if (c->wnd > cfg->max_window)
		c->wnd = cfg->max_window;
	if (c->wnd < cfg->min_window)
		c->wnd = cfg->min_window;
	if (c->round_target > c->wnd)
		c->round_target = c->wnd;
	mr_paths_rebalance(c);
	return 0;
}

/* Segments */

static struct mr_seg *mr_rtx_pop(struct mr_conn *c)
{
	u32 d;

	if (!c->rtx_cnt)
		return NULL;
	if (mr_seq_lt(c->rtx_scan, c->dsn_una))
		c->rtx_scan = c->dsn_una;
	for (d = c->rtx_scan; d != c->dsn_nxt; d++) {
		struct mr_seg *s = mr_seg_of(c, d);

		if (s && s->state == MR_SEGS_QUEUED) {
			c->rtx_scan = d;
			return s;
		}
	}
	c->rtx_cnt = 0;		/* cannot happen; keep going if it does */
	return NULL;
}

static struct mr_seg *mr_new_seg(struct mr_conn *c, u64 now)
{
	u32 used = c->dsn_nxt - c->dsn_una;
	struct mr_seg *s;

	if (used >= c->cfg.seg_wnd || used >= MR_DSN_WND)
		return NULL;
	s = &c->segs[c->dsn_nxt & c->seg_mask];
	while (!mr_list_empty(&c->active)) {
		struct mr_qp *qp = mr_container_of(c->active.next,
						   struct mr_qp, active_node);

		memset(s, 0, sizeof(*s));
		if (mr_qp_next_seg(qp, s, now)) {
			/* Round robin: one segment per QP per turn. */
			mr_list_move_tail(&qp->active_node, &c->active);
			s->dsn = c->dsn_nxt++;
			s->state = MR_SEGS_QUEUED;
			c->rtx_cnt++;	/* popped right away by the caller */
			mr_stat(c, MR_ST_TX_DATA, 1);
			return s;
		}
		mr_list_del(&qp->active_node);
	}
	return NULL;
}

/*
 * The sending host's shared window (protocol.rst, section 7.25): report the
 * change in our bytes in flight and learn the host's room.
 */
static void mr_conn_host_sync(struct mr_conn *c)
{
	s64 delta = (s64)c->inflight - (s64)c->host_acct;
	u64 room;

	if (!c->ops->host_window)
		return;
	room = c->ops->host_window(c->env, c, delta);
	c->host_acct = c->inflight;
	c->host_room = (u32)mr_min64(room, MR_U32_MAX);
}

void mr_conn_host_detach(struct mr_conn *c)
{
	if (c->ops && c->ops->host_window && c->host_acct)
		c->ops->host_window(c->env, c, -(s64)c->host_acct);
	c->host_acct = 0;
	c->host_room = 0;
}

/*
 * What the window may borrow from the host's room: at most the window
 * again, less what this connection sent since it learnt the room.
 */
static u32 mr_conn_borrow(const struct mr_conn *c)
{
	u32 used = c->inflight > c->host_acct ? c->inflight - c->host_acct : 0;

	if (c->host_room <= used)
		return 0;
	return mr_min32(c->host_room - used, c->wnd);
}

/*
 * The usable path with the most room relative to its share of the window.
 * A retransmission avoids @avoid, the path that lost it, while another path
 * has room: a failed path must not keep the segment (protocol.rst, 7.22).
 */
static int mr_pick_path(struct mr_conn *c, int avoid)
{
	u64 best_load = MR_U64_MAX;
	int best = -1, fallback = -1;
	u32 i, borrow = mr_conn_borrow(c);

	for (i = 0; i < c->npaths; i++) {
		struct mr_path *p = &c->path[i];
		u64 load, lim;

		if (!mr_path_usable(p) || !p->cwnd ||
		    p->nxt - p->una >= MR_PATH_WND)
			continue;
		/* A path borrows in proportion to its share of the window. */
		lim = p->cwnd;
		if (borrow && c->wnd)
			lim += mr_div64((u64)p->cwnd * borrow, c->wnd);
		if (p->inflight >= lim)
			continue;
		if ((int)i == avoid) {
			fallback = avoid;
			continue;
		}
		load = mr_div64((u64)p->inflight << 16, p->cwnd);
		if (load < best_load) {
			best_load = load;
			best = (int)i;
		}
	}
	return best >= 0 ? best : fallback;
}

static int mr_seg_xmit(struct mr_conn *c, struct mr_seg *s, int path, u64 now)
{
	struct mr_hdr h;
	int ret;

again:
	memset(&h, 0, sizeof(h));
	if (s->kind != MR_SEG_NOP && (!s->qp || mr_qp_fill_hdr(s->qp, s, &h))) {
		/* Its message is gone: the DSN still has to be delivered. */
		if (s->qp)
			mr_qp_seg_gone(s->qp, s);
		s->kind = MR_SEG_NOP;
		s->qp = NULL;
	}
	if (s->kind == MR_SEG_NOP) {
		memset(&h, 0, sizeof(h));
		h.opcode = MR_OP_NOP;
		mr_stat(c, MR_ST_TX_NOPS, 1);
	}
	h.dsn = s->dsn;
	if (s->ntx)
		h.flags |= MR_F_RETX;
	ret = mr_conn_emit(c, &h, path, s, now);
	if (ret == MR_XMIT_GONE && s->kind != MR_SEG_NOP) {
		struct mr_qp *qp = s->qp;

		if (qp)
			mr_qp_seg_gone(qp, s);
		s->kind = MR_SEG_NOP;
		s->qp = NULL;
		if (qp)
			mr_qp_source_gone(qp, now);
		goto again;
	}
	if (ret)
		return -1;
	c->rtx_cnt--;
	s->state = MR_SEGS_INFLIGHT;
	s->path = (u8)path;
	s->psn = c->path[path].nxt - 1;
	s->sent = (u32)now;
	if (s->ntx < 255)
		s->ntx++;
	if (s->ntx > 1)
		c->path[path].retx++;
	return 0;
}

static u64 mr_pace_ns(const struct mr_conn *c, u32 bytes)
{
	return mr_div64((u64)bytes * 8000, c->rate_hint);
}

/* The window, with what it may borrow from the host, is full. */
static int mr_conn_over(const struct mr_conn *c)
{
	return c->inflight >= c->wnd + mr_conn_borrow(c);
}

/*
 * The window stops the sender: it is full and no timeout credit lets a
 * queued retransmission past it (protocol.rst, section 7.22).
 */
static int mr_conn_wnd_shut(const struct mr_conn *c)
{
	return mr_conn_over(c) && (!c->rto_credit || !c->rtx_cnt);
}

/*
 * A PROBE with SYN on @path: the hello of a sender without a cookie, or
 * its announcement to the receiver's fair share (section 7.20). It goes in
 * the control class, ahead of any data. Returns the packets sent: 1, or 0
 * if it has to wait.
 */
static int mr_conn_syn_probe(struct mr_conn *c, int path, u64 now)
{
	struct mr_hdr h;

	if (path < 0)
		return 0;
	memset(&h, 0, sizeof(h));
	h.opcode = MR_OP_PROBE;
	h.flags = MR_F_ACKREQ;
	if (mr_conn_send_ctrl(c, &h, path, now))
		return 0;
	/* Its round trip skipped the data's queues: not an RTT sample. */
	c->path[path].ann = 1;
	c->path[path].ann_psn = c->path[path].nxt - 1;
	mr_stat(c, MR_ST_TX_ANNOUNCE, 1);
	return 1;
}

/*
 * Before the first data of its epoch (and again after a RESET), a sender
 * announces itself to the receiver's fair share.
 */
static int mr_conn_announce(struct mr_conn *c, u64 now)
{
	if (mr_conn_wnd_shut(c) || !mr_conn_syn_probe(c, mr_pick_path(c, -1),
						      now))
		return 0;
	c->announce = 0;
	return 1;
}

/*
 * A sender that has no cookie for its epoch yet (a new connection) sends
 * nothing but its hello, a PROBE with SYN whose cookie is 0, until the
 * receiver's challenge arrives (section 7.2): anything else would be
 * dropped. One hello at a time: the next goes when its path declares it
 * lost (a timeout, so with the path's backoff), on the next path in the
 * rotation of control packets, so that a failed route does not keep it.
 */
static int mr_conn_hello(struct mr_conn *c, u64 now)
{
	u32 i;

	for (i = 0; i < c->npaths; i++)
		if (c->path[i].una != c->path[i].nxt)
			return 0;
	return mr_conn_syn_probe(c, mr_ctrl_path(c), now);
}

int mr_conn_tx(struct mr_conn *c, u64 now, int budget)
{
	int sent = 0, over;

	mr_conn_host_sync(c);
	if (c->syn && !c->cookie) {
		if (budget > 0 && (c->rtx_cnt || !mr_list_empty(&c->active)))
			sent = mr_conn_hello(c, now);
		budget = 0;
	} else if (c->announce && c->syn && budget > 0 &&
		   (c->rtx_cnt || !mr_list_empty(&c->active))) {
		sent += mr_conn_announce(c, now);
	}
	while (sent < budget) {
		struct mr_seg *s;
		int path;
		u32 before;

		if (c->cfg.pacing && c->rate_hint && now < c->next_tx)
			break;
		over = mr_conn_over(c);
		if (!over)
			c->rto_credit = 0;
		if (mr_conn_wnd_shut(c))
			break;
		s = mr_rtx_pop(c);
		path = mr_pick_path(c, s && s->ntx ? s->path : -1);
		if (path < 0)
			break;
		if (!s && !over)
			s = mr_new_seg(c, now);
		if (!s)
			break;
		before = c->path[path].inflight;
		if (mr_seg_xmit(c, s, path, now))
			break;
		if (over)
			c->rto_credit--;
		sent++;
		if (c->cfg.pacing && c->rate_hint) {
			u64 burst = mr_pace_ns(c, c->cfg.pace_burst);
			u64 base = mr_max64(c->next_tx, now > burst ?
					    now - burst : 0);

			c->next_tx = base + mr_pace_ns(c, c->path[path].inflight -
						       before);
		}
	}
	if (sent) {
		c->idle_since = now;
		if (c->inflight > c->round_peak)
			c->round_peak = c->inflight;
		mr_conn_host_sync(c);
	}
	return sent;
}

int mr_conn_tx_pending(const struct mr_conn *c)
{
	return c->rtx_cnt || !mr_list_empty(&c->active);
}

/* Receive half */

/*
 * Adopt @epoch, whose sender's lowest unfinished DSN is @base. A displaced
 * epoch's DSN window is remembered (one slot, kept for the epoch that had
 * processed more packets): if that sender comes back (its view was pushed
 * out by a forged SYN, say), the window is restored and what was already
 * processed is recognised as duplicate when it is resent, instead of
 * being processed twice.
 */
static void mr_rx_reset(struct mr_conn *c, u32 epoch, u32 base)
{
	u32 d;

	if (epoch == c->old_epoch && (base - c->old_cum < MR_DSN_WND ||
				      c->old_cum - base <= MR_DSN_WND)) {
		c->dsn_cum = c->old_cum;
		memcpy(c->dsn_bits, c->old_bits, sizeof(c->dsn_bits));
		/* Every DSN before @base is finished: none comes again. */
		for (d = c->dsn_cum; mr_seq_lt(d, base); d++)
			mr_bit_clear(c->dsn_bits, d % MR_DSN_WND);
		if (mr_seq_lt(c->dsn_cum, base))
			c->dsn_cum = base;
		c->old_epoch = 0;
		mr_stat(c, MR_ST_RX_EPOCH_RESTORED, 1);
	} else {
		if (c->rx_epoch && (!c->old_epoch ||
				    c->rx_epoch_pkts >= c->old_pkts)) {
			c->old_epoch = c->rx_epoch;
			c->old_pkts = c->rx_epoch_pkts;
			c->old_cum = c->dsn_cum;
			memcpy(c->old_bits, c->dsn_bits, sizeof(c->old_bits));
		}
		c->dsn_cum = base;
		memset(c->dsn_bits, 0, sizeof(c->dsn_bits));
	}
	mr_trace(c, MR_TRACE_EPOCH, -1, c->rx_epoch, epoch);
	c->rx_epoch = epoch;
	c->rx_epoch_pkts = 0;
	c->hint_sent = 0;
	memset(c->rpath, 0, sizeof(c->rpath));
	c->ack_pending = 0;
	c->ack_now = 0;
	c->ack_again = 0;
	c->ack_deadline = MR_U64_MAX;
}

/*
 * The DSN window is a ring: DSN d is bit d % MR_DSN_WND, meaningful for
 * dsn_cum <= d < dsn_cum + MR_DSN_WND. Settling the oldest DSNs clears
 * their bits as dsn_cum passes them, so nothing is ever shifted.
 */
static int mr_dsn_seen(const struct mr_conn *c, u32 dsn)
{
	return mr_bit_test(c->dsn_bits, dsn % MR_DSN_WND);
}

static void mr_dsn_done(struct mr_conn *c, u32 dsn)
{
	if (dsn - c->dsn_cum >= MR_DSN_WND)
		return;
	mr_bit_set(c->dsn_bits, dsn % MR_DSN_WND);
	while (mr_dsn_seen(c, c->dsn_cum)) {
		mr_bit_clear(c->dsn_bits, c->dsn_cum % MR_DSN_WND);
		c->dsn_cum++;
	}
}

static void mr_conn_rx_ack(struct mr_conn *c, const struct mr_hdr *h,
			   const struct mr_ack *ack, u64 now, struct mr_rx *rx)
{
	u32 i, d;

	if (ack->ack_epoch != c->epoch) {
		mr_drop(c, rx, MR_DROP_EPOCH);
		return;
	}
	mr_stat(c, MR_ST_RX_ACKS, 1);
	c->ack_last = now;
	c->syn = 0;
	if (ack->rate_hint != c->rate_hint) {
		c->rate_hint = ack->rate_hint;
		mr_conn_clamp(c);
		mr_paths_rebalance(c);
	}
	for (i = 0; i < ack->npath; i++)
		mr_path_on_ack(c, &ack->path[i], now);
	mr_paths_overdue(c, now);
	/* Everything below dsn_cum was processed, whatever the blocks said. */
	if (mr_seq_le(ack->dsn_cum, c->dsn_nxt)) {
		for (d = c->dsn_una; mr_seq_lt(d, ack->dsn_cum); d++) {
			struct mr_seg *s = mr_seg_of(c, d);

			if (s)
				mr_seg_release(c, s, now);
		}
	}
	for (i = 0; i < ack->nqp; i++) {
		struct mr_qp *qp = c->ops->lookup_qp(c->env, c,
						     ack->qp[i].qpn);

		if (qp && qp->conn == c)
			mr_qp_on_ack_block(qp, &ack->qp[i], now);
	}
	mr_conn_host_sync(c);
	rx->action = MR_RXA_NONE;
}

/*
 * The peer's challenge for our epoch: it does not know the epoch (we are
 * new, or it restarted or dropped its state) and asks us to prove that we
 * receive at our address and port. Announce the data window again with
 * SYN, now with the cookie, and resend what is in flight, which it
 * dropped. The same cookie again while SYN is set changes nothing.
 */
static void mr_conn_rx_reset_req(struct mr_conn *c, const struct mr_hdr *h,
				 u64 now, struct mr_rx *rx)
{
	if (h->reset_epoch != c->epoch) {
		mr_drop(c, rx, MR_DROP_EPOCH);
		return;
	}
	mr_stat(c, MR_ST_RX_RESETS, 1);
	if (!c->syn || c->cookie != h->cookie) {
		c->syn = 1;
		c->announce = (u8)c->cfg.announce;
		c->cookie = h->cookie;
		mr_paths_requeue(c);
	}
	rx->action = MR_RXA_NONE;
}

/* Did we mint @cookie for @epoch, under the current or the last secret? */
static int mr_cookie_valid(struct mr_conn *c, u32 epoch, u64 cookie)
{
	u64 prev;

	if (!cookie)
		return 0;
	if (cookie == c->ops->cookie(c->env, c, epoch, 0))
		return 1;
	prev = c->ops->cookie(c->env, c, epoch, 1);
	return prev && cookie == prev;
}

/*
 * Challenge the sender of @h's epoch: a RESET naming the epoch, with the
 * cookie for it, sent like every packet to the peer's MetaRoCE port, so
 * that only the peer's device learns it. Not for a packet shorter than the
 * RESET (a PROBE without SYN: nothing is amplified), and at most once per
 * rto_min_ns / 2 for the same epoch in a row (the rest of a window in
 * flight needs none).
 */
static void mr_challenge(struct mr_conn *c, const struct mr_hdr *h, u64 now)
{
	struct mr_hdr r;

	if ((u32)h->hlen + h->plen < MR_BASE_HLEN + MR_RESET_LEN)
		return;
	if (h->epoch == c->chal_epoch &&
	    now - c->chal_at < c->cfg.rto_min_ns / 2)
		return;
	memset(&r, 0, sizeof(r));
	r.opcode = MR_OP_RESET;
	r.reset_epoch = h->epoch;
	r.cookie = c->ops->cookie(c->env, c, h->epoch, 0);
	if (!r.cookie || mr_conn_send_ctrl(c, &r, -1, now))
		return;
	mr_stat(c, MR_ST_TX_RESETS, 1);
	c->chal_epoch = h->epoch;
	c->chal_at = now;
}

/*
 * May @h, whose epoch is not the current one, make its epoch current
 * (section 7.2)? Only a sequenced packet with SYN whose cookie proves
 * that its sender receives at the peer's address and port, and only once
 * the current epoch, if any, has been quiet for epoch_quiet_ns. A
 * sequenced packet without that proof draws a challenge.
 */
static int mr_epoch_adoptable(struct mr_conn *c, const struct mr_hdr *h,
			      u64 now)
{
	int seq = mr_op_sequenced(h->opcode);

	if (seq && (h->flags & MR_F_SYN) &&
	    mr_cookie_valid(c, h->epoch, h->cookie))
		return !c->rx_epoch ||
		       now - c->rx_last >= c->cfg.epoch_quiet_ns;
	if (seq)
		mr_challenge(c, h, now);
	return 0;
}

/*
 * A packet of an epoch that is not ours to take. A hello (a PROBE with SYN
 * and no cookie) is how every sender starts: challenged, counted, not an
 * error. Anything else is dropped as one.
 */
static void mr_rx_unproven(struct mr_conn *c, const struct mr_hdr *h,
			   struct mr_rx *rx)
{
	if (h->opcode == MR_OP_PROBE && (h->flags & MR_F_SYN) && !h->cookie) {
		mr_stat(c, MR_ST_RX_HELLOS, 1);
		rx->action = MR_RXA_NONE;
		return;
	}
	mr_drop(c, rx, MR_DROP_EPOCH);
}

void mr_conn_rx(struct mr_conn *c, struct mr_qp *qp, const struct mr_hdr *h,
		const struct mr_ack *ack, int ce, u64 now, struct mr_rx *rx)
{
	u32 d;

	memset(rx, 0, sizeof(*rx));
	mr_stat(c, MR_ST_RX_PKTS, 1);
	mr_stat(c, MR_ST_RX_BYTES, (u64)h->hlen + h->plen);

	if (h->opcode == MR_OP_ACK) {
		if (!ack) {
			mr_drop(c, rx, MR_DROP_BAD_ACK);
			return;
		}
		mr_conn_rx_ack(c, h, ack, now, rx);
		return;
	}

	if (h->opcode == MR_OP_RESET) {
		mr_conn_rx_reset_req(c, h, now, rx);
		return;
	}
	if (h->epoch != c->rx_epoch) {
		if (!mr_epoch_adoptable(c, h, now)) {
			mr_rx_unproven(c, h, rx);
			return;
		}
		/* PROBE has no DSN: its syn_dsn is the sender's dsn_una too. */
		mr_rx_reset(c, h->epoch, h->syn_dsn);
	}
	c->rx_last = now;
	if (c->rx_epoch_pkts != ~0u)
		c->rx_epoch_pkts++;
	/*
	 * An announcement came in the control class: a mark on it says
	 * nothing about the queues the data waits in (section 5.3).
	 */
	if (mr_hdr_announces(h))
		ce = 0;
	c->rx_meter_bytes += (u64)h->hlen + h->plen;
	c->rx_meter_pkts++;
	if (ce)
		c->rx_meter_ce++;

	if (h->opcode == MR_OP_ACK_REQ) {
		if (qp && qp->conn == c)
			mr_conn_mark_dirty(c, qp);
		c->ack_now = 1;
		rx->action = MR_RXA_NONE;
		return;
	}
	if (!mr_op_sequenced(h->opcode)) {
		mr_drop(c, rx, MR_DROP_BAD_OPCODE);
		return;
	}

	mr_rpath_rx(c, h, ce, now);
	c->ack_pending++;
	if (c->ack_deadline == MR_U64_MAX)
		c->ack_deadline = now + c->cfg.ack_delay_ns;
	if (h->flags & MR_F_ACKREQ)
		c->ack_now = 1;
	if (h->opcode == MR_OP_PROBE) {
		/* A sender's announcement: count it before its data. */
		if (mr_hdr_announces(h) && !c->rx_demand) {
			c->rx_demand = MR_FS_DEMAND_NEW;
			c->rx_fresh = 1;
			c->fs_new = 1;
			mr_stat(c, MR_ST_RX_ANNOUNCE, 1);
		}
		rx->action = MR_RXA_NONE;
		return;
	}

	d = h->dsn - c->dsn_cum;
	if ((s32)d < 0 || (d < MR_DSN_WND && mr_dsn_seen(c, h->dsn))) {
		mr_drop(c, rx, MR_DROP_DUP);
		return;
	}
	if (d >= MR_DSN_WND) {
		mr_drop(c, rx, MR_DROP_DSN_WINDOW);
		return;
	}
	if (h->opcode == MR_OP_NOP) {
		mr_dsn_done(c, h->dsn);
		rx->action = MR_RXA_NONE;
		return;
	}
	mr_qp_rx(c, qp, h, now, rx);
	/* Refused segments are settled too: the window must move on. */
	if (rx->action == MR_RXA_DROP || rx->action == MR_RXA_NONE)
		mr_dsn_done(c, h->dsn);
}

void mr_conn_rx_done(struct mr_conn *c, const struct mr_hdr *h,
		     struct mr_rx *rx, int status, u64 result, u64 now)
{
	mr_qp_rx_done(c, rx->qp, h, rx, status, result, now);
	mr_dsn_done(c, h->dsn);
}

static void mr_send_acks(struct mr_conn *c, u64 now)
{
	/* In the connection, not on the stack: kernel stacks are small. */
	struct mr_ack *ack = &c->ack_scratch;
	u32 i;
	int more;

	do {
		memset(ack, 0, sizeof(*ack));
		ack->ack_epoch = c->rx_epoch;
		ack->dsn_cum = c->dsn_cum;
		ack->rate_hint = c->hint_out;
		for (i = 0; i < MR_MAX_PATHS; i++) {
			struct mr_rpath *rp = &c->rpath[i];
			struct mr_ack_path *ap;

			if (!rp->active || (!rp->dirty && !rp->resend))
				continue;
			ap = &ack->path[ack->npath++];
			ap->path = (u8)i;
			ap->ce_cnt = rp->ce_cnt;
			ap->rx_cnt = rp->rx_cnt;
			ap->base = rp->base;
			ap->tsecr = rp->tsval;
			memcpy(ap->bitmap, rp->bitmap, sizeof(ap->bitmap));
			/*
			 * New state goes out twice, the second time in the
			 * next ACK, on another path: one lost ACK (a failed
			 * plane on the way back) then costs the sender no
			 * timeout.
			 */
			rp->resend = rp->dirty;
			rp->dirty = 0;
		}
		while (ack->nqp < MR_ACK_MAX_QP && !mr_list_empty(&c->dirty)) {
			struct mr_qp *qp = mr_container_of(c->dirty.next,
							   struct mr_qp,
							   dirty_node);

			mr_list_del(&qp->dirty_node);
			mr_qp_fill_ack_block(qp, &ack->qp[ack->nqp++]);
		}
		more = !mr_list_empty(&c->dirty);
		if (mr_conn_send_ack(c, ack, now))
			return;
		c->hint_sent = ack->rate_hint;
	} while (more);
}

void mr_conn_rx_flush(struct mr_conn *c, u64 now)
{
	u32 i;

	if (!c->rx_epoch)
		return;
	if (!c->ack_now && c->ack_pending < c->cfg.ack_every &&
	    mr_list_empty(&c->dirty) &&
	    ((!c->ack_pending && !c->ack_again) || now < c->ack_deadline))
		return;
	mr_send_acks(c, now);
	c->ack_pending = 0;
	c->ack_now = 0;
	c->ack_again = 0;
	for (i = 0; i < MR_MAX_PATHS; i++)
		if (c->rpath[i].active && c->rpath[i].resend)
			c->ack_again = 1;
	c->ack_deadline = c->ack_again ? now + c->cfg.ack_delay_ns : MR_U64_MAX;
}

/*
 * Could mr_conn_tx() send now, pacing aside? Only then is the pacing time a
 * deadline: a sender blocked by its segment table or its paths' windows
 * waits for an ACK, and a pacing time in the past would fire forever.
 */
static int mr_conn_can_send(const struct mr_conn *c)
{
	u32 i;

	if (mr_conn_wnd_shut(c))
		return 0;
	if (!c->rtx_cnt && (mr_list_empty(&c->active) ||
			    c->dsn_nxt - c->dsn_una >= c->cfg.seg_wnd))
		return 0;
	for (i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];

		if (mr_path_usable(p) && p->cwnd &&
		    p->nxt - p->una < MR_PATH_WND && p->inflight < p->cwnd)
			return 1;
	}
	return 0;
}

u64 mr_conn_next_timer(const struct mr_conn *c)
{
	u64 t = mr_path_next_timer(c);

	if (c->ack_pending || c->ack_again)
		t = mr_min64(t, c->ack_deadline);
	if (c->cfg.pacing && c->rate_hint && mr_conn_can_send(c))
		t = mr_min64(t, c->next_tx);
	return mr_min64(t, mr_qp_next_timer(c));
}

void mr_conn_timer(struct mr_conn *c, u64 now)
{
	mr_path_timeouts(c, now);
	mr_qp_sweep(c, now);
	mr_conn_rx_flush(c, now);
}

int mr_conn_idle(const struct mr_conn *c)
{
	return c->dsn_una == c->dsn_nxt && !c->rtx_cnt &&
	       mr_list_empty(&c->active) && mr_list_empty(&c->busy) &&
	       mr_list_empty(&c->waitq) && mr_list_empty(&c->rnrq) &&
	       mr_list_empty(&c->dirty);
}

int mr_conn_answered(const struct mr_conn *c)
{
	return c->ack_last || c->cookie || c->rx_epoch;
}

void mr_conn_set_hint(struct mr_conn *c, u32 mbps)
{
	c->hint_out = mbps;
	/*
	 * Told much more than it may now take: tell it at once rather than
	 * with the next ACK its data draws, which may be queued behind the
	 * very excess the hint is there to stop.
	 */
	if (c->rx_epoch && mbps &&
	    (!c->hint_sent || (u64)mbps + mbps / 4 < c->hint_sent))
		c->ack_now = 1;
}

u32 mr_conn_rx_rate(struct mr_conn *c, u64 now, u32 *ce_permille)
{
	u64 dt = now - c->rx_meter_start, since = now - c->rx_arrival_at;
	u32 rate, want;

	if (ce_permille)
		*ce_permille = c->rx_meter_pkts ?
			(u32)mr_div64(c->rx_meter_ce * 1000, c->rx_meter_pkts) : 0;
	if (!c->rx_meter_pkts) {
		/*
		 * Nothing arrived: the meter keeps running from the last
		 * reading with arrivals and the demand stands, until the
		 * sender has been silent for MR_FS_HOLD readings and for
		 * MR_FS_HOLD_GAPS of its spacing. A sender whose share is a
		 * packet every several readings (one of many) stays counted,
		 * and its next packet is measured over the time since its
		 * last one: its rate, not a burst.
		 */
		if (c->rx_quiet < MR_FS_HOLD)
			c->rx_quiet++;
		if (c->rx_demand == MR_FS_DEMAND_NEW && c->rx_fresh)
			c->rx_fresh = 0;
		else if (c->rx_quiet >= MR_FS_HOLD &&
			 since >= (u64)MR_FS_HOLD_GAPS * c->rx_gap)
			c->rx_demand = 0;
		return 0;
	}
	rate = dt ? (u32)mr_min64(mr_div64(c->rx_meter_bytes * 8000, dt),
				  0xffffffffu) : 0;
	c->rx_gap = (u32)mr_div64(mr_min64(since, MR_FS_GAP_MAX_NS),
				  c->rx_meter_pkts);
	c->rx_arrival_at = now;
	c->rx_quiet = 0;
	/*
	 * A sender that sent anything is active, however slow: its demand is
	 * at least 1 Mbit/s, so that it is counted and its connection told
	 * the level (a demand of 0 would mean it left).
	 */
	want = mr_max32(rate, 1);
	/*
	 * A newly active sender starts at its measured rate, and the next
	 * reading with arrivals replaces it: the first one's span started
	 * wherever its meter did, the second spans the time since the first
	 * (a slow sender's rate, not one packet over a period). After that,
	 * the readings pull its demand towards what they measure. An
	 * announced sender keeps wanting everything through the reading of
	 * its announcement, and starts at the rate of the next one with
	 * arrivals.
	 */
	if (c->rx_demand == MR_FS_DEMAND_NEW) {
		if (c->rx_fresh) {
			c->rx_fresh = 0;
		} else {
			c->rx_demand = want;
			c->rx_first = 1;
		}
	} else if (!c->rx_demand || c->rx_first) {
		c->rx_first = !c->rx_demand;
		c->rx_demand = want;
	} else if (want >= c->rx_demand) {
		c->rx_demand += (want - c->rx_demand) / MR_FS_GAIN;
	} else {
		c->rx_demand -= (c->rx_demand - want) / MR_FS_GAIN;
	}
	c->rx_meter_bytes = 0;
	c->rx_meter_ce = 0;
	c->rx_meter_pkts = 0;
	c->rx_meter_start = now;
	return rate;
}
