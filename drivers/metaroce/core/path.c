// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Paths: per-path sequence, SACK, loss detection, RTT, ECN, weights,
 * failure and revival (send half), and per-path SACK state (receive half).
 *
 * A path is a UDP source port: the fabric's ECMP hash keeps every packet of
 * a path on one route, so a path delivers in order and a hole in its SACK
 * bitmap followed by received packets is a loss, not reordering.
 *
 * Below the connection (conn.c). A packet takes its PSN and its slot in
 * its path's window as it goes out (emit.c), and the retransmit timeouts
 * are computed in rto.c; what the paths ask of the rest of the engine goes
 * down too: a processed segment is released (segtab.c), a dead path's
 * probe sent (emit.c), the window told of ACKs and timeouts (cc.c).
 */
#include "internal.h"

#define MR_WEIGHT_MIN		(MR_WEIGHT_ONE / 32)
#define MR_PORT_TRIES		64	/* ports tried per pick with route_key */
/* A path's RTO floor (set by a spurious timeout) halves this often. */
#define MR_RTO_FLOOR_HALVE_NS	1000000000ull

void mr_bitmap_shift(u32 *map, u32 words, u32 n)
{
	u32 w = n / 32, b = n % 32, i;

	if (w >= words) {
		memset(map, 0, words * sizeof(*map));
		return;
	}
	for (i = 0; i < words; i++) {
		u32 lo = i + w < words ? map[i + w] : 0;
		u32 hi = i + w + 1 < words ? map[i + w + 1] : 0;

		map[i] = b ? (lo >> b) | (hi << (32 - b)) : lo;
	}
}

u32 mr_bitmap_ones(const u32 *map, u32 words)
{
	u32 i, n = 0;

	for (i = 0; i < words; i++) {
		u32 v = ~map[i];

		if (!v) {
			n += 32;
			continue;
		}
		return n + (u32)__builtin_ctz(v);
	}
	return n;
}

/* Other paths whose port takes next hop @key. */
static u32 mr_route_load(const struct mr_conn *c, const struct mr_path *self,
			 u64 key)
{
	u32 i, n = 0;

	for (i = 0; i < c->npaths; i++)
		if (&c->path[i] != self && c->path[i].route == key)
			n++;
	return n;
}

/*
 * A UDP source port for @self, never @avoid (its current port on a
 * re-pick). Without a route_key callback, one random port. With it, up to
 * MR_PORT_TRIES random ports: the first whose next hop no other path
 * takes, else the first of those whose next hop the fewest take; on a
 * re-pick, self's current next hop counts as fully taken, so the path
 * moves to another one if any of the tries reaches one. The chosen port's
 * key is kept in self->route.
 */
static u16 mr_pick_port(struct mr_conn *c, struct mr_path *self, u16 avoid)
{
	u32 span = (u32)c->cfg.sport_max - c->cfg.sport_min + 1;
	u32 t, load, best_load = ~0u;
	/* Paths beyond npaths are never used: no lookups for them. */
	int routed = c->ops->route_key && self - c->path < c->npaths;
	u16 port, best = 0;
	u64 key, best_key = 0;

	for (t = 0; t < MR_PORT_TRIES; t++) {
		do {
			port = c->cfg.sport_min + (u16)(mr_rand(c) % span);
		} while (port == avoid && span > 1);
		key = routed ? c->ops->route_key(c->env, c, port) : 0;
		if (!key) {
			best = port;
			best_key = 0;
			break;
		}
		load = mr_route_load(c, self, key);
		if (avoid && key == self->route)
			load += MR_MAX_PATHS;
		if (load < best_load) {
			best_load = load;
			best = port;
			best_key = key;
			if (!load)
				break;
		}
	}
	self->route = best_key;
	return best;
}

void mr_path_init(struct mr_conn *c, struct mr_path *p, u32 id, u64 now)
{
	memset(p, 0, sizeof(*p));
	p->una = c->epoch;
	p->nxt = c->epoch;
	p->sack_hi = c->epoch;
	p->overdue_psn = c->epoch;
	p->last_progress = now;
	p->weight = MR_WEIGHT_ONE;
	p->state = MR_PATH_GOOD;
	p->sport = mr_pick_port(c, p, 0);
	(void)id;
}

static int mr_slot_out(const struct mr_path *p, u32 psn)
{
	return mr_bit_test(p->out, psn % MR_PATH_WND);
}

/* Advance una past slots that are no longer outstanding. */
static void mr_path_advance(struct mr_path *p)
{
	while (p->una != p->nxt && !mr_slot_out(p, p->una))
		p->una++;
}

static u32 mr_slot_clear(struct mr_conn *c, struct mr_path *p, u32 psn)
{
	u32 slot = psn % MR_PATH_WND;
	u32 len = p->len[slot];

	mr_bit_clear(p->out, slot);
	p->inflight -= len;
	/* An overdue slot's bytes already left the connection's inflight. */
	if (mr_bit_test(p->overdue, slot))
		mr_bit_clear(p->overdue, slot);
	else
		c->inflight -= len;
	return len;
}

/*
 * The segment transmitted as (path id, psn), if that is its latest
 * transmission. A probe's slot records MR_DSN_NONE, which is also a valid
 * DSN (DSNs wrap): the (path, psn) match, not the DSN, tells them apart.
 */
static struct mr_seg *mr_slot_seg(const struct mr_conn *c,
				  const struct mr_path *p, u32 id, u32 psn)
{
	struct mr_seg *s = mr_seg_of(c, p->dsn[psn % MR_PATH_WND]);

	return s && s->path == id && s->psn == psn ? s : NULL;
}

/*
 * When @s was last sent. A segment keeps the low 32 bits of the time (4.29
 * s); idle_since, the time of the latest transmission, completes them.
 */
static u64 mr_seg_sent(const struct mr_conn *c, const struct mr_seg *s)
{
	return c->idle_since - (u32)((u32)c->idle_since - s->sent);
}

/* The transmission (p, psn) arrived: its segment was processed. */
static void mr_slot_acked(struct mr_conn *c, struct mr_path *p, u32 id,
			  u32 psn, u64 now)
{
	struct mr_seg *s = mr_slot_seg(c, p, id, psn);
	u64 sent;

	mr_slot_clear(c, p, psn);
	if (!s)
		return;
	/* The latest send time of a packet known to have arrived. */
	sent = mr_seg_sent(c, s);
	if (sent >= c->rack_ts) {
		c->rack_ts = sent;
		c->rack_rtt = (u32)mr_min64(now - sent, MR_U32_MAX);
	}
	/* An overdue packet that arrived after all: no duplicate. */
	if (s->state == MR_SEGS_QUEUED)
		mr_stat(c, MR_ST_RTX_CANCELLED, 1);
	mr_seg_release(c, s, now);
}

/* The transmission (p, psn) is lost: queue its segment again. */
static void mr_slot_lost(struct mr_conn *c, struct mr_path *p, u32 id,
			 u32 psn, int rto)
{
	struct mr_seg *s = mr_slot_seg(c, p, id, psn);

	/* An overdue slot was counted lost when it became overdue. */
	if (!mr_bit_test(p->overdue, psn % MR_PATH_WND))
		p->lost++;
	mr_slot_clear(c, p, psn);
	/* Only the segment's latest transmission decides. */
	if (!s || s->state != MR_SEGS_INFLIGHT)
		return;
	mr_seg_queue_rtx(c, s);
	mr_stat(c, rto ? MR_ST_RETX_RTO : MR_ST_RETX_SACK, 1);
	mr_trace(c, MR_TRACE_RETRANSMIT, (int)id, s->dsn,
		 rto ? MR_RETX_RTO : MR_RETX_SACK);
}

/*
 * The first slot of @p still to be judged from @psn on, and its segment;
 * 0 if none: slots acknowledged, already overdue, or whose segment went
 * out again elsewhere (or is queued to) are judged.
 */
static int mr_overdue_next(const struct mr_conn *c, const struct mr_path *p,
			   u32 id, u32 *psn, struct mr_seg **seg)
{
	u32 q = *psn;

	if (q - p->una > p->nxt - p->una)
		q = p->una;
	for (; q != p->nxt; q++) {
		u32 slot = q % MR_PATH_WND;
		struct mr_seg *s;

		if (!mr_bit_test(p->out, slot) ||
		    mr_bit_test(p->overdue, slot))
			continue;
		s = mr_slot_seg(c, p, id, q);
		if (!s || s->state != MR_SEGS_INFLIGHT)
			continue;
		*psn = q;
		*seg = s;
		return 1;
	}
	*psn = q;
	return 0;
}

/*
 * How long @p's transmissions may be out before they are overdue (@base:
 * its RTO without backoff): the RTO, or the round trip of the latest
 * packet acknowledged plus the RTO's margin over the path's round trip,
 * if that is longer. Time since the transmission alone is not enough: a
 * host that stalls finds every packet old when it resumes, and may apply
 * the ACK of a later packet before the ACK, queued behind it, of an
 * earlier one; that later packet's round trip then includes the stall.
 */
static u64 mr_overdue_after(const struct mr_conn *c, const struct mr_path *p,
			    u64 base)
{
	u64 margin = base > p->srtt ? base - p->srtt : 0;

	return mr_max64(base, (u64)c->rack_rtt + margin);
}

/*
 * When the first slot of @p at or after *@psn still to be judged becomes
 * overdue (the slot and its segment are left in *@psn and *@seg);
 * MR_U64_MAX if there is none, or no packet sent after it was acknowledged.
 */
static u64 mr_overdue_at(const struct mr_conn *c, const struct mr_path *p,
			 u32 id, u32 *psn, struct mr_seg **seg, u64 cap)
{
	u64 sent;

	/* (A dead path has no segment out: its timeout cleared them all.) */
	*seg = NULL;
	if (!p->srtt || !mr_overdue_next(c, p, id, psn, seg))
		return MR_U64_MAX;
	sent = mr_seg_sent(c, *seg);
	if (sent >= c->rack_ts)
		return MR_U64_MAX;
	return sent + mr_overdue_after(c, p, mr_path_rto_base(c, p, cap));
}

/*
 * Overdue packets (protocol.rst, 7.5). A path delivers in order, so a
 * hole in its own SACK bitmap is a loss; across paths, the evidence is
 * time. A packet is overdue when a packet sent after it, on any path, has
 * been acknowledged, and it has been out for longer than its path's RTO
 * without backoff (or than mr_overdue_after() allows after a stall). Its
 * segment is sent again on another path at once: the path's own timeout,
 * measured from its last progress and backed off, can be several times
 * longer (a failed plane's paths take three of them to die, and every
 * message sprayed over them waits). The slot stays outstanding: the
 * path's timer still runs on it and the path gets no new data in its
 * place, but its bytes leave the connection's window, which the
 * retransmission needs. Nothing else about the path changes, so a packet
 * that was only late costs one duplicate.
 */
void mr_paths_overdue(struct mr_conn *c, u64 now)
{
	u64 cap = mr_rto_cap(c);
	u32 i;

	for (i = 0; i < c->npaths; i++) {
		struct mr_path *p = &c->path[i];
		struct mr_seg *s;
		u32 psn = p->overdue_psn;

		/* Slots go out in psn order: the first not overdue ends it. */
		while (mr_overdue_at(c, p, i, &psn, &s, cap) <= now) {
			u32 slot = psn % MR_PATH_WND;

			mr_bit_set(p->overdue, slot);
			c->inflight -= p->len[slot];
			p->lost++;
			mr_seg_queue_rtx(c, s);
			mr_stat(c, MR_ST_RETX_OVERDUE, 1);
			mr_trace(c, MR_TRACE_RETRANSMIT, (int)i, s->dsn,
				 MR_RETX_OVERDUE);
			psn++;
		}
		p->overdue_psn = psn;
	}
}

static void mr_path_rtt_sample(struct mr_path *p, u32 rtt)
{
	if (!p->srtt) {
		p->srtt = rtt;
		p->rttvar = rtt / 2;
		p->min_rtt = rtt;
		return;
	}
	if (rtt < p->min_rtt)
		p->min_rtt = rtt;
	/* RFC 6298 gains: 1/4 for the variance, 1/8 for the mean. */
	if (rtt > p->srtt)
		p->rttvar = p->rttvar - p->rttvar / MR_RTTVAR_GAIN +
			    (rtt - p->srtt) / MR_RTTVAR_GAIN;
	else
		p->rttvar = p->rttvar - p->rttvar / MR_RTTVAR_GAIN +
			    (p->srtt - rtt) / MR_RTTVAR_GAIN;
	p->srtt = p->srtt - p->srtt / MR_SRTT_GAIN + rtt / MR_SRTT_GAIN;
}

static u32 mr_congested_alpha(const struct mr_conn *c)
{
	return c->cfg.repick_alpha ? c->cfg.repick_alpha / 2 : 256;
}

/* Lowest ECN fraction among the usable paths other than @self. */
static u32 mr_best_alpha(const struct mr_conn *c, const struct mr_path *self)
{
	u32 i, best = MR_WEIGHT_ONE;

	for (i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];

		if (p != self && mr_path_usable(p) && p->alpha < best)
			best = p->alpha;
	}
	return best;
}

void mr_path_repick(struct mr_conn *c, struct mr_path *p)
{
	u16 old = p->sport;

	p->sport = mr_pick_port(c, p, p->sport);
	mr_trace(c, MR_TRACE_PATH_REPICK, (int)(p - c->path), old, p->sport);
	p->alpha = 0;
	p->hot = 0;
	p->weight = MR_WEIGHT_REPICK;
	p->repicks++;
	mr_stat(c, MR_ST_PATH_REPICK, 1);
}

/* ECN feedback of one ACK block: path weight AIMD and port re-pick. */
static void mr_path_ecn(struct mr_conn *c, struct mr_path *p, u32 dce,
			u32 drx, u32 acked_pkts, u64 now)
{
	u32 f;

	if (!drx)
		return;
	if (dce > drx)
		dce = drx;
	f = dce * MR_WEIGHT_ONE / drx;
	if (f > p->alpha)
		p->alpha += (f - p->alpha) >> c->cfg.ecn_shift ?: 1;
	else
		p->alpha -= (p->alpha - f) >> c->cfg.ecn_shift;
	if (dce) {
		p->ce += dce;
		mr_stat(c, MR_ST_ECN_ECHO, dce);
		/*
		 * Multiplicative decrease at most once per round trip; a dead
		 * path has no weight to cut (0) and is not re-picked.
		 */
		if (p->state != MR_PATH_DEAD &&
		    now - p->last_cut >= mr_max32(p->srtt, mr_rtt_floor(c))) {
			u32 cut = (u32)p->weight * p->alpha / MR_CUT_DIV;

			p->weight = (u16)mr_max32(p->weight - mr_max32(cut, 1),
						  MR_WEIGHT_MIN);
			p->last_cut = now;
			if (c->cfg.repick_alpha && p->alpha >= c->cfg.repick_alpha &&
			    mr_best_alpha(c, p) < c->cfg.repick_alpha / 2) {
				if (++p->hot >= MR_REPICK_CUTS)
					mr_path_repick(c, p);
			}
		}
	} else if (acked_pkts) {
		/*
		 * Additive increase of one 1/1024 per packet: slow enough that
		 * once-per-RTT cuts by alpha/2 can hold a congested path down.
		 */
		u32 w = p->weight + acked_pkts;

		p->weight = (u16)mr_min32(w, MR_WEIGHT_ONE);
		if (p->alpha < mr_congested_alpha(c) / 2)
			p->hot = 0;
	}
	if (p->state != MR_PATH_DEAD) {
		u8 st = p->alpha >= mr_congested_alpha(c) ? MR_PATH_CONGESTED :
							    MR_PATH_GOOD;

		if (st != p->state)
			mr_trace(c, MR_TRACE_PATH_STATE, (int)(p - c->path),
				 p->state, st);
		p->state = st;
	}
}

/*
 * Undo a timeout series whose oldest packet arrived after all: the path
 * was late (a stall somewhere), not broken. Its backoff, weight and state
 * return to what they were before the series. The connection window is
 * not given back: a packet that late sat in a queue, and a queue is what
 * the timeout response (mr_conn_cc_on_timeout) is there to drain.
 *
 * The timer fired too early: the path went without progress for as long
 * as the proof took to come, now - undo_since. Its RTO stays at least
 * that long (the floor, halved every MR_RTO_FLOOR_HALVE_NS), so that the
 * next stall of the kind is waited out rather than retransmitted: RTT
 * samples alone forget a stall within a few acknowledgements.
 */
static void mr_path_undo(struct mr_conn *c, struct mr_path *p, u64 now)
{
	u64 late = now - p->undo_since;

	if (late > p->rto_floor) {
		p->rto_floor = (u32)mr_min64(late, c->cfg.rto_max_ns);
		p->floor_at = now;
	}
	p->timeouts = p->undo_timeouts;
	p->overtaken = 0;
	p->series_cut = 0;
	/*
	 * A path the series declared dead is not revived here: packets that
	 * late sat in a deep queue, and a sender whose dead paths all came
	 * back at once would push into the queue its competitors back off
	 * from (64 senders into one port: Jain's index 0.61 instead of 0.94
	 * in the simulator). It is probed at once instead, and the probe's
	 * answer revives it as any revival, at weight 1/8.
	 */
	if (p->state == MR_PATH_DEAD)
		p->next_probe = now;
	else
		p->weight = (u16)mr_max32(p->weight, p->undo_weight);
	p->last_progress = now;
	p->undo = 0;
	mr_stat(c, MR_ST_RTO_SPURIOUS, 1);
	mr_paths_rebalance(c);
}

/*
 * Path @p made progress: every other live path in a series of timeouts has
 * now seen another path get through since its series began.
 */
static void mr_paths_overtake(struct mr_conn *c, const struct mr_path *p)
{
	u32 i;

	for (i = 0; i < c->npaths; i++) {
		struct mr_path *q = &c->path[i];

		if (q != p && q->timeouts && q->state != MR_PATH_DEAD)
			q->overtaken = 1;
	}
}

/* A dead path's probe was answered: back with a low weight. */
static void mr_path_revive(struct mr_conn *c, struct mr_path *p)
{
	mr_trace(c, MR_TRACE_PATH_STATE, (int)(p - c->path), p->state,
		 MR_PATH_GOOD);
	p->state = MR_PATH_GOOD;
	p->weight = MR_WEIGHT_REVIVE;
	p->alpha = 0;
	mr_stat(c, MR_ST_PATH_REVIVED, 1);
	/* Give it its share of the window now. */
	mr_paths_rebalance(c);
}

/* Does path block @ap prove @psn received (below Base, or its bit set)? */
static int mr_ack_has(const struct mr_ack_path *ap, u32 psn)
{
	u32 d = psn - ap->base;

	return mr_seq_lt(psn, ap->base) ||
	       (d < MR_PATH_WND && mr_bit_test(ap->bitmap, d));
}

/*
 * Packets that timeouts declared lost, proven received by @ap. A segment
 * still waiting for its retransmission is done (it is not sent twice); if
 * the oldest packet of the series (rto_lo) arrived, the series is undone.
 * Proof needs the receiver not to have abandoned the psn: it cannot have
 * while nothing MR_PATH_WND or more after it was sent.
 */
static void mr_path_late(struct mr_conn *c, struct mr_path *p, u32 id,
			 const struct mr_ack_path *ap, u64 now)
{
	u32 psn;

	if (p->nxt - p->rto_lo >= MR_PATH_WND) {
		p->undo = 0;
		return;
	}
	for (psn = p->rto_lo; psn != p->rto_hi; psn++) {
		struct mr_seg *s;

		if (!mr_ack_has(ap, psn))
			continue;
		s = mr_slot_seg(c, p, id, psn);
		if (s && s->state == MR_SEGS_QUEUED) {
			mr_seg_release(c, s, now);
			mr_stat(c, MR_ST_RTX_CANCELLED, 1);
		}
	}
	if (mr_ack_has(ap, p->rto_lo))
		mr_path_undo(c, p, now);
}

void mr_path_on_ack(struct mr_conn *c, const struct mr_ack_path *ap, u64 now)
{
	struct mr_path *p;
	u32 psn, hi, acked = 0, bytes = 0, dce = 0, drx = 0, i;
	int progress = 0, ann = 0;

	if (ap->path >= c->npaths)
		return;
	p = &c->path[ap->path];

	/* Highest psn the block proves received, +1. */
	hi = ap->base;
	for (i = MR_PATH_WND; i > 0; i--) {
		if (mr_bit_test(ap->bitmap, i - 1)) {
			hi = ap->base + i;
			break;
		}
	}
	/* A block cannot acknowledge what was never sent. */
	if (mr_seq_lt(p->nxt, hi))
		return;

	if (p->undo)
		mr_path_late(c, p, ap->path, ap, now);

	for (psn = p->una; psn != p->nxt; psn++) {
		if (!mr_slot_out(p, psn) || !mr_ack_has(ap, psn))
			continue;
		bytes += p->len[psn % MR_PATH_WND];
		acked++;
		if (p->ann && psn == p->ann_psn)
			ann = 1;
		mr_slot_acked(c, p, ap->path, psn, now);
	}
	if (mr_seq_lt(p->sack_hi, hi))
		p->sack_hi = hi;

	/* Anything a later packet overtook by reorder_thresh is lost. */
	for (psn = p->una; psn != p->nxt; psn++) {
		if (!mr_seq_lt(psn, p->sack_hi))
			break;
		if (!mr_slot_out(p, psn))
			continue;
		if (p->sack_hi - psn - 1 >= c->cfg.reorder_thresh)
			mr_slot_lost(c, p, ap->path, psn, 0);
	}
	mr_path_advance(p);

	/* Acknowledged, or lost: it can no longer be what an ACK samples. */
	if (p->ann && (ann || mr_seq_lt(p->ann_psn, p->una)))
		p->ann = 0;

	if (acked) {
		u32 rtt = (u32)now - ap->tsecr;

		progress = 1;
		/* Not the announcement alone: its class has no queue. */
		if ((s32)rtt > 0 && acked > (u32)ann)
			mr_path_rtt_sample(p, rtt);
		p->last_progress = now;
		p->acked_at = now;
		p->timeouts = 0;
		p->overtaken = 0;
		p->series_cut = 0;
		mr_paths_overtake(c, p);
		/* Newer packets got through without the oldest: a real loss. */
		p->undo = 0;
		if (p->rto_floor && now - p->floor_at >= MR_RTO_FLOOR_HALVE_NS) {
			p->rto_floor /= 2;
			p->floor_at = now;
			if (p->rto_floor < c->cfg.rto_min_ns)
				p->rto_floor = 0;
		}
		if (p->state == MR_PATH_DEAD)
			mr_path_revive(c, p);
	} else if (p->state == MR_PATH_DEAD && mr_seq_lt(p->dead_psn, hi)) {
		/*
		 * A probe declared lost arrived after all: the route works,
		 * only slower than probe_ns. Its round trip is a sample.
		 */
		u32 rtt = (u32)now - ap->tsecr;

		if ((s32)rtt > 0)
			mr_path_rtt_sample(p, rtt);
		p->last_progress = now;
		p->timeouts = 0;
		p->overtaken = 0;
		p->series_cut = 0;
		mr_path_revive(c, p);
	}

	if (p->echo_valid) {
		dce = (u16)(ap->ce_cnt - p->ce_seen);
		drx = (u16)(ap->rx_cnt - p->rx_seen);
	}
	/* A block older than one already seen (ACKs reorder) says nothing. */
	if (!p->echo_valid || (s16)(ap->rx_cnt - p->rx_seen) >= 0) {
		p->ce_seen = ap->ce_cnt;
		p->rx_seen = ap->rx_cnt;
		p->echo_valid = 1;
		mr_path_ecn(c, p, dce, drx, acked, now);
	} else {
		dce = 0;
	}

	if ((progress || dce) && mr_conn_cc_on_ack(c, bytes, acked, dce, now))
		mr_paths_rebalance(c);
}

/* Has a usable path other than @self been acknowledged after @since? */
static int mr_others_acked_since(const struct mr_conn *c,
				 const struct mr_path *self, u64 since)
{
	u32 i;

	for (i = 0; i < c->npaths; i++) {
		const struct mr_path *q = &c->path[i];

		if (q != self && mr_path_usable(q) && q->acked_at > since)
			return 1;
	}
	return 0;
}

/*
 * Can path @self, silent since @since, be declared dead? Only if another
 * usable path has made progress since then, or since the path's first
 * timeout of the series: a path fails on its own. (The second case is a
 * connection whose only packet in flight was the one the path lost: its
 * retransmission got through elsewhere before the path's next packet.)
 * When no path gets through, the peer or the hosts have stalled (a starved
 * CPU, a paused machine), not a route; every path then backs off, and none
 * dies, since probing dead paths would add packets to the stall.
 */
static int mr_path_may_die(const struct mr_conn *c, const struct mr_path *self,
			   u64 since)
{
	return self->overtaken || mr_others_acked_since(c, self, since);
}

/*
 * May dead path @p send a probe now? Only once another path has got
 * through since its previous probe (true of the first one after a death,
 * which needs such progress), or rto_max after it. While no path gets
 * through, the hosts have stalled, not the route, and probes would only
 * add to the stall.
 */
static int mr_probe_due(const struct mr_conn *c, const struct mr_path *p,
			u64 now)
{
	return !p->probe_at || now - p->probe_at >= c->cfg.rto_max_ns ||
	       mr_others_acked_since(c, p, p->probe_at);
}

static void mr_path_send_probe(struct mr_conn *c, u32 id, u64 now)
{
	struct mr_path *p = &c->path[id];
	struct mr_hdr h;

	if (p->nxt - p->una >= MR_PATH_WND)
		return;
	memset(&h, 0, sizeof(h));
	h.opcode = MR_OP_PROBE;
	h.flags = MR_F_ACKREQ;
	if (mr_conn_send_ctrl(c, &h, (int)id, now) == 0) {
		p->probe_at = now;
		p->probes++;
		mr_stat(c, MR_ST_TX_PROBES, 1);
	}
}

/*
 * A timeout on a live path is about to declare [una, nxt) lost: remember
 * that range, and the state before the first timeout of the series, so
 * that mr_path_late() can undo it if the packets arrive after all.
 */
static void mr_path_arm_undo(struct mr_path *p)
{
	if (!p->undo) {
		p->undo = 1;
		p->undo_timeouts = p->timeouts;
		p->undo_weight = p->weight;
		p->undo_since = p->last_progress;
		p->rto_lo = p->una;
	}
	p->rto_hi = p->nxt;
}

void mr_path_timeouts(struct mr_conn *c, u64 now)
{
	u64 cap = mr_rto_cap(c);
	u32 i;
	int changed = 0;

	for (i = 0; i < c->npaths; i++) {
		struct mr_path *p = &c->path[i];
		u64 since = p->last_progress;
		u32 psn;

		if (mr_path_has_out(p) &&
		    now - since >= mr_path_rto_cap(c, p, cap)) {
			if (p->state != MR_PATH_DEAD)
				mr_path_arm_undo(p);
			for (psn = p->una; psn != p->nxt; psn++)
				if (mr_slot_out(p, psn))
					mr_slot_lost(c, p, i, psn, 1);
			mr_path_advance(p);
			if (p->state == MR_PATH_DEAD) {
				/* A lost probe: the next one may go at once. */
				p->next_probe = now;
				goto probe;
			}
			p->timeouts_total++;
			if (p->timeouts < 255)
				p->timeouts++;
			mr_trace(c, MR_TRACE_TIMEOUT, (int)i, p->timeouts,
				 mr_path_rto_cap(c, p, cap));
			/*
			 * As after a TCP timeout, one retransmission may go
			 * even if packets the other paths have not yet timed
			 * out (and probably lost too) fill the window.
			 */
			c->rto_credit = mr_min32(c->rto_credit + 1, c->npaths);
			p->last_progress = now;
			/*
			 * At most once per series of the path: the backed-off
			 * timeouts repeat what the first one found (a silent
			 * path loses its later packets too), and halving for
			 * each of them starves the paths that deliver.
			 */
			if (!p->series_cut && mr_conn_cc_on_timeout(c, now)) {
				mr_paths_rebalance(c);
				p->series_cut = 1;
			}
			if (p->state != MR_PATH_DEAD) {
				p->weight = (u16)mr_max32(p->weight / 2,
							  MR_WEIGHT_MIN);
				if (p->timeouts >= c->cfg.dead_after &&
				    mr_path_may_die(c, p, since)) {
					mr_trace(c, MR_TRACE_PATH_STATE, (int)i,
						 p->state, MR_PATH_DEAD);
					p->state = MR_PATH_DEAD;
					p->dead_psn = p->nxt;
					p->weight = 0;
					p->next_probe = now +
						mr_probe_pace(c);
					mr_stat(c, MR_ST_PATH_DEAD, 1);
				}
			}
			changed = 1;
		}
probe:
		if (p->state == MR_PATH_DEAD && now >= p->next_probe) {
			p->next_probe = now + mr_probe_pace(c);
			if (!mr_path_has_out(p) && mr_probe_due(c, p, now))
				mr_path_send_probe(c, i, now);
		}
	}
	if (changed)
		mr_paths_rebalance(c);
	mr_paths_overdue(c, now);
}

void mr_paths_requeue(struct mr_conn *c)
{
	u32 i, psn;

	for (i = 0; i < c->npaths; i++) {
		struct mr_path *p = &c->path[i];

		for (psn = p->una; psn != p->nxt; psn++)
			if (mr_slot_out(p, psn))
				mr_slot_lost(c, p, i, psn, 1);
		mr_path_advance(p);
		/* The receiver starts over: its ACKs prove nothing older. */
		p->undo = 0;
	}
}

u64 mr_path_next_timer(const struct mr_conn *c)
{
	u64 t = MR_U64_MAX, cap = mr_rto_cap(c);
	u32 i;

	for (i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];
		u32 psn = p->overdue_psn;
		struct mr_seg *s;

		if (mr_path_has_out(p))
			t = mr_min64(t, p->last_progress +
					mr_path_rto_cap(c, p, cap));
		if (p->state == MR_PATH_DEAD)
			t = mr_min64(t, p->next_probe);
		t = mr_min64(t, mr_overdue_at(c, p, i, &psn, &s, cap));
	}
	return t;
}

/* Split the connection window over the usable paths by weight. */
void mr_paths_rebalance(struct mr_conn *c)
{
	u64 sum = 0;
	u32 i, floor = c->cfg.mtu + MR_DATA_HLEN_MAX;

	for (i = 0; i < c->npaths; i++)
		if (mr_path_usable(&c->path[i]))
			sum += mr_max32(c->path[i].weight, MR_WEIGHT_MIN);
	for (i = 0; i < c->npaths; i++) {
		struct mr_path *p = &c->path[i];

		if (!mr_path_usable(p) || !sum) {
			p->cwnd = 0;
			continue;
		}
		p->cwnd = (u32)mr_div64((u64)c->wnd *
					mr_max32(p->weight, MR_WEIGHT_MIN), sum);
		p->cwnd = mr_max32(p->cwnd, floor);
	}
}

/*
 * Receive half: record psn on the peer's path. Returns 0 for a packet not
 * seen before, 1 for a duplicate or one older than the window.
 */
int mr_rpath_rx(struct mr_conn *c, const struct mr_hdr *h, int ce, u64 now)
{
	struct mr_rpath *rp = &c->rpath[h->path];
	u32 d, n;

	(void)now;
	if (!rp->active) {
		memset(rp, 0, sizeof(*rp));
		rp->active = 1;
		/*
		 * Paths start at the epoch; a receiver that adopted the epoch
		 * late (RESET) starts at what it first sees.
		 */
		rp->base = h->psn - c->rx_epoch < MR_PATH_WND ? c->rx_epoch :
								h->psn;
		rp->hi = rp->base;
	}
	rp->rx_cnt++;
	if (ce) {
		rp->ce_cnt++;
		mr_stat(c, MR_ST_RX_CE, 1);
	}
	rp->dirty = 1;
	rp->tsval = h->tsval;

	d = h->psn - rp->base;
	if ((s32)d < 0)
		return 1;
	if (d >= MR_PATH_WND) {
		/*
		 * A sender never has more than MR_PATH_WND packets outstanding
		 * on a path, so everything this far back is settled for it.
		 */
		n = d - (MR_PATH_WND - 1);
		mr_bitmap_shift(rp->bitmap, MR_PATH_WND / 32, n);
		rp->base += n;
		d = MR_PATH_WND - 1;
	}
	if (mr_bit_test(rp->bitmap, d))
		return 1;
	mr_bit_set(rp->bitmap, d);
	n = mr_bitmap_ones(rp->bitmap, MR_PATH_WND / 32);
	if (n) {
		mr_bitmap_shift(rp->bitmap, MR_PATH_WND / 32, n);
		rp->base += n;
	}
	/*
	 * A new hole (a packet beyond the highest seen + 1): tell the sender
	 * now. Not again for every later packet: the hole stays (its packet
	 * is resent under another psn) until the window moves past it.
	 */
	if (mr_seq_lt(rp->hi, h->psn))
		c->ack_now = 1;
	if (!mr_seq_lt(h->psn, rp->hi))
		rp->hi = h->psn + 1;
	return 0;
}
