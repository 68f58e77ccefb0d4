// SPDX-License-Identifier: GPL-2.0-only
/*
 * Paths (core/path.c): bitmap helpers, per-path sequence and SACK, loss
 * after reorder_thresh, RTT, RTO with backoff, dead paths, probes and
 * revival, ECN weight AIMD and port re-pick (send half); the receiver's
 * per-path window (receive half).
 */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "endpoint.h"
#include "internal.h"

#define US 1000ull
#define MS 1000000ull
#define WIRE (1024 + 60)	/* WRITE segment with a 1024-byte payload */

/* Bitmap helpers against a bit-by-bit reference */

static int ref_bit(const u32 *m, u32 b)
{
	return (m[b / 32] >> (b % 32)) & 1;
}

static void test_bitmap(void)
{
	static const u32 shifts[] = { 0, 1, 5, 31, 32, 33, 63, 64, 100, 200,
				      255, 256, 257, 1000 };
	u32 i, s, b, bad = 0;
	u64 x = 88172645463325252ull;

	for (i = 0; i < 50; i++) {
		for (s = 0; s < sizeof(shifts) / sizeof(shifts[0]); s++) {
			u32 m[8], o[8];

			for (b = 0; b < 8; b++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				o[b] = m[b] = (u32)x;
			}
			mr_bitmap_shift(m, 8, shifts[s]);
			for (b = 0; b < 256; b++) {
				u32 src = b + shifts[s];
				int want = src < 256 ? ref_bit(o, src) : 0;

				if (ref_bit(m, b) != want)
					bad++;
			}
		}
	}
	tap_ok(!bad, "mr_bitmap_shift matches a bit-by-bit shift (700 random maps)");

	bad = 0;
	for (i = 0; i <= 256; i++) {
		u32 m[8];

		memset(m, 0, sizeof(m));
		for (b = 0; b < i; b++)
			mr_bit_set(m, b);
		/* noise after the first hole */
		if (i + 1 < 256)
			mr_bit_set(m, i + 1);
		if (mr_bitmap_ones(m, 8) != i)
			bad++;
	}
	tap_ok(!bad, "mr_bitmap_ones counts 0..256 leading ones");

	{
		u32 m[8] = { 0 };

		mr_bit_set(m, 37);
		mr_bit_set(m, 255);
		bad = !mr_bit_test(m, 37) || !mr_bit_test(m, 255) ||
		      mr_bit_test(m, 36) || m[1] != 1u << 5 ||
		      m[7] != 0x80000000u;
		mr_bit_clear(m, 37);
		bad |= mr_bit_test(m, 37) || m[1];
		tap_ok(!bad, "mr_bit_set/test/clear address the right word and bit");
	}
}

/* A sender with @npaths paths and QP 0 connected. */
static struct ep *sender(u32 npaths, u32 epoch, u32 thresh)
{
	struct mr_conn_cfg cfg;
	struct ep *e;

	mr_conn_cfg_default(&cfg);
	cfg.npaths = npaths;
	cfg.reorder_thresh = thresh;
	e = ep_new(&cfg, epoch, 0x77770001, 99);
	ep_qp(e, 0, NULL);
	/* As if the peer had acknowledged our epoch: no SYN words. */
	e->c.syn = 0;
	return e;
}

/* A sender over two paths with one QP attached; @cfg has its other tunables. */
static struct ep *two_paths(struct mr_conn_cfg *cfg, u32 id)
{
	struct ep *e;

	cfg->npaths = 2;
	e = ep_new(cfg, id, 0x77770001, 3);
	ep_qp(e, 0, NULL);
	return e;
}

/* Post a WRITE of @n full segments and send what the window allows. */
static void send_segs(struct ep *e, u32 n)
{
	static u64 cookie;

	if (ep_post(e, 0, MR_WR_WRITE, n * 1024, ++cookie))
		tap_diag("post failed");
	ep_tx(e);
}

/*
 * The bytes in flight, if every path's and the connection's agree with the
 * outstanding slots (an overdue slot counts in its path's only); else ~0.
 */
static u64 inflight_sum(const struct ep *e)
{
	u64 s = 0;
	u32 i, k;

	for (i = 0; i < e->c.npaths; i++) {
		const struct mr_path *p = &e->c.path[i];
		u64 ps = 0;

		for (k = 0; k < MR_PATH_WND; k++) {
			if (!mr_bit_test(p->out, k)) {
				if (mr_bit_test(p->overdue, k))
					return ~0ull;
				continue;
			}
			ps += p->len[k];
			if (!mr_bit_test(p->overdue, k))
				s += p->len[k];
		}
		if (ps != p->inflight)
			return ~0ull;
	}
	return s == e->c.inflight ? s : ~0ull;
}

static void test_wrap(void)
{
	struct ep *e = sender(1, 0xfffffff8, 3);
	struct mr_ack a;
	u32 i, ok = 1;

	send_segs(e, 20);
	for (i = 0; i < e->ntx; i++)
		if (e->tx[i].h.psn != 0xfffffff8 + i ||
		    e->tx[i].h.dsn != 0xfffffff8 + i)
			ok = 0;
	tap_ok(ok && e->ntx == 20 && e->c.path[0].nxt == 0xc,
	       "psn and DSN start at the epoch and wrap through 0 (%u sent)",
	       e->ntx);
	tap_ok(inflight_sum(e) == 20 * WIRE,
	       "inflight counts 20 wire lengths, per path and in total");
	ep_ack_init(e, &a);
	ep_ack_sent(e, &a, 0, 0, (u32)e->now);
	e->now += 50 * US;
	ep_rx_ack(e, &a);
	tap_ok(e->c.inflight == 0 && e->c.path[0].una == 0xc &&
	       e->c.dsn_una == e->c.dsn_nxt && !e->c.syn,
	       "one ACK across the wrap settles all 20 (una=%#x, dsn_una=%#x)",
	       e->c.path[0].una, e->c.dsn_una);
	ep_free(e);
}

static void test_sack_loss(u32 thresh)
{
	struct ep *e = sender(1, 1000, thresh);
	struct mr_ack a;
	struct mr_ack_path *ap;
	u32 b = 1000, i, lost_at = 3 + thresh;
	u64 rtx0;
	int first;

	send_segs(e, 12);
	/* psn 3 is missing; later packets arrive one ACK at a time */
	for (i = 0; i < 3 + thresh; i++) {
		if (i == 3)
			continue;
		ep_ack_init(e, &a);
		ap = ep_ack_path(&a, 0, b);
		ap->tsecr = (u32)e->now;
		ep_ack_set(ap, b + i);
		ep_rx_ack(e, &a);
	}
	tap_ok(e->c.path[0].una == b + 3 && !e->c.rtx_cnt &&
	       e->c.inflight == (12 - 2 - thresh) * WIRE &&
	       !e->c.stats[MR_ST_RETX_SACK],
	       "thresh %u: hole not lost while fewer than %u later packets are SACKed",
	       thresh, thresh);
	ep_ack_init(e, &a);
	ap = ep_ack_path(&a, 0, b);
	ep_ack_set(ap, b + lost_at);
	ep_rx_ack(e, &a);
	tap_ok(e->c.rtx_cnt == 1 && e->c.stats[MR_ST_RETX_SACK] == 1 &&
	       e->c.path[0].lost == 1 && e->c.path[0].una == b + 4 + thresh,
	       "thresh %u: psn+%u SACKed declares the hole lost", thresh,
	       thresh);
	first = (int)e->ntx;
	rtx0 = e->c.stats[MR_ST_TX_DATA];
	ep_tx(e);
	tap_ok((u32)first < e->ntx && e->tx[first].h.dsn == 1003 &&
	       (e->tx[first].h.flags & MR_F_RETX) && e->tx[first].h.psn == b + 12 &&
	       e->c.stats[MR_ST_TX_DATA] >= rtx0,
	       "thresh %u: the lost DSN goes out first, flagged RETX, under a new psn",
	       thresh);
	/* the original arrives after all: its ACK must not count twice */
	ep_ack_init(e, &a);
	ap = ep_ack_path(&a, 0, b);
	ep_ack_set(ap, b + 3);
	ep_rx_ack(e, &a);
	tap_ok(inflight_sum(e) != ~0ull && e->c.segs[1003 & e->c.seg_mask].state ==
	       MR_SEGS_INFLIGHT,
	       "thresh %u: late SACK of the lost original changes nothing", thresh);
	ep_free(e);
}

/* DSN 0xffffffff is an ordinary DSN, not the probe marker. */
static void test_dsn_ffffffff(void)
{
	struct ep *e = sender(1, 0xfffffffc, 3);
	struct mr_ack a;
	struct mr_ack_path *ap;
	u32 i;
	int first;

	send_segs(e, 8);
	ep_ack_init(e, &a);
	ap = ep_ack_path(&a, 0, 0xfffffffc);
	for (i = 0; i < 8; i++)
		if (i != 3)
			ep_ack_set(ap, 0xfffffffc + i);
	ep_rx_ack(e, &a);
	tap_ok(e->c.rtx_cnt == 1 && e->c.stats[MR_ST_RETX_SACK] == 1,
	       "the lost segment with DSN 0xffffffff is queued for retransmission");
	first = (int)e->ntx;
	ep_tx(e);
	tap_ok((int)e->ntx == first + 1 && e->tx[first].h.dsn == 0xffffffff,
	       "and retransmitted");
	ep_ack_init(e, &a);
	ep_ack_sent(e, &a, 0, (u32)first, (u32)e->now);
	ep_rx_ack(e, &a);
	tap_ok(e->c.dsn_una == e->c.dsn_nxt && !e->c.inflight,
	       "its SACK releases it and dsn_una moves past it");
	ep_free(e);
}

static void test_dup_and_unsent_acks(void)
{
	struct ep *e = sender(2, 5, 3);
	struct mr_ack a;
	struct mr_ack_path *ap;
	u64 inflight;
	u32 una;

	send_segs(e, 8);	/* 4 per path */
	inflight = e->c.inflight;
	ep_ack_init(e, &a);
	ap = ep_ack_path(&a, 0, 5);
	ep_ack_set(ap, 5 + 4);	/* path 0 sent 5..8 only */
	ep_ack_set(ap, 5);
	ep_rx_ack(e, &a);
	tap_ok(e->c.inflight == inflight && e->c.path[0].una == 5,
	       "a block SACKing a psn never sent is ignored entirely");
	ep_ack_init(e, &a);
	ep_ack_path(&a, 0, 5 + 5);
	ep_rx_ack(e, &a);
	tap_ok(e->c.inflight == inflight && e->c.path[0].una == 5,
	       "a block whose base is beyond what was sent is ignored");
	ep_ack_init(e, &a);
	ap = ep_ack_path(&a, 3, 5);
	ep_ack_set(ap, 5);
	ep_rx_ack(e, &a);
	tap_ok(e->c.inflight == inflight, "a block for a path beyond npaths is ignored");

	ep_ack_init(e, &a);
	ap = ep_ack_path(&a, 1, 5);
	ep_ack_set(ap, 5);
	ep_ack_set(ap, 6);
	ep_rx_ack(e, &a);
	una = e->c.path[1].una;
	inflight = e->c.inflight;
	ep_rx_ack(e, &a);
	ep_rx_ack(e, &a);
	tap_ok(una == 7 && e->c.inflight == inflight &&
	       e->c.inflight == 6 * WIRE && inflight_sum(e) == e->c.inflight,
	       "a duplicated ACK is idempotent (una=%u)", una);
	ep_free(e);
}

static void test_rtt(void)
{
	struct ep *e = sender(1, 1, 3);
	struct mr_ack a;
	u32 ts;

	send_segs(e, 2);
	ts = (u32)e->tx[0].h.tsval;
	e->now += 100 * US;
	ep_ack_init(e, &a);
	ep_ack_path(&a, 0, 1)->tsecr = ts;
	ep_ack_set(&a.path[0], 1);
	ep_rx_ack(e, &a);
	tap_ok(e->c.path[0].srtt == 100000 && e->c.path[0].rttvar == 50000 &&
	       e->c.path[0].min_rtt == 100000,
	       "first RTT sample: srtt=rtt, rttvar=rtt/2 (srtt=%u)",
	       e->c.path[0].srtt);
	e->now += 100 * US;
	ep_ack_init(e, &a);
	ep_ack_path(&a, 0, 1)->tsecr = ts;
	ep_ack_set(&a.path[0], 2);
	ep_rx_ack(e, &a);
	tap_ok(e->c.path[0].srtt == 112500 && e->c.path[0].rttvar == 62500 &&
	       e->c.path[0].min_rtt == 100000,
	       "second sample 200us: RFC 6298 gains (srtt=%u rttvar=%u)",
	       e->c.path[0].srtt, e->c.path[0].rttvar);
	tap_ok(mr_path_rto(&e->c, &e->c.path[0]) == e->c.cfg.rto_min_ns,
	       "RTO of a fast path is clamped to rto_min");
	ep_free(e);
}

static void test_rto_backoff(void)
{
	struct mr_conn_cfg cfg;
	struct ep *e;
	struct mr_path *p;
	u64 t, t0;
	u32 k, ok = 1;

	mr_conn_cfg_default(&cfg);
	cfg.npaths = 1;
	cfg.rto_max_ns = 40 * MS;
	e = ep_new(&cfg, 7, 0x77770001, 5);
	ep_qp(e, 0, NULL);
	p = &e->c.path[0];
	send_segs(e, 5);
	t0 = e->now;
	t = mr_path_next_timer(&e->c);
	tap_ok(t == t0 + cfg.rto_init_ns,
	       "first RTO armed rto_init after the first send (%llu)",
	       (unsigned long long)(t - t0));
	e->now = t - 1;
	mr_conn_timer(&e->c, e->now);
	/* Fresh connection: its packets carry the SYN word. */
	tap_ok(p->timeouts == 0 && e->c.inflight == 5 * (WIRE + MR_SYN_LEN),
	       "nothing happens 1ns before the RTO");
	e->now = t;
	mr_conn_timer(&e->c, e->now);
	tap_ok(p->timeouts == 1 && e->c.inflight == 0 && e->c.rtx_cnt == 5 &&
	       e->c.stats[MR_ST_RETX_RTO] == 5 && p->una == p->nxt &&
	       p->weight == MR_WEIGHT_ONE / 2,
	       "RTO declares all 5 outstanding lost, halves the weight");
	/* backoff: 5, 10, 20, 40 (max), 40 ms */
	for (k = 1; k <= 5; k++) {
		u64 want = mr_min64(cfg.rto_init_ns << k, cfg.rto_max_ns);

		ep_tx(e);	/* retransmit: the path has outstanding data */
		t = mr_path_next_timer(&e->c);
		if (t - e->now != want) {
			ok = 0;
			tap_diag("timeout %u: next RTO in %llu, want %llu", k,
				 (unsigned long long)(t - e->now),
				 (unsigned long long)want);
		}
		e->now = t;
		mr_conn_timer(&e->c, e->now);
	}
	tap_ok(ok && p->timeouts == 6,
	       "RTO doubles per consecutive timeout, capped at rto_max");
	tap_ok(p->state != MR_PATH_DEAD && p->weight >= 1,
	       "the only path is never declared dead (timeouts=%u)",
	       p->timeouts);
	/* ACK progress resets the backoff */
	{
		struct mr_ack a;

		ep_tx(e);
		ep_ack_init(e, &a);
		ep_ack_sent(e, &a, 0, e->ntx - 1, (u32)e->now);
		e->now += 10 * US;
		ep_rx_ack(e, &a);
		/*
		 * The ACK proves the packets of the series arrived: the
		 * timeouts were spurious and leave the RTO at least as long
		 * as the series lasted (capped at rto_max).
		 */
		tap_ok(p->timeouts == 0 && p->rto_floor == cfg.rto_max_ns &&
		       mr_path_rto(&e->c, p) == cfg.rto_max_ns,
		       "ACK progress resets the backoff (rto=%u)",
		       mr_path_rto(&e->c, p));
	}
	ep_free(e);
}

/* Two paths; only path 1's packets are acknowledged. */
static void test_dead_probe_revive(void)
{
	struct mr_conn_cfg cfg;
	struct ep *e;
	struct mr_path *p0, *p1;
	u32 round, from, probes;
	int pi;
	struct mr_ack a;

	mr_conn_cfg_default(&cfg);
	e = two_paths(&cfg, 0x10);
	p0 = &e->c.path[0];
	p1 = &e->c.path[1];
	send_segs(e, 200);
	for (round = 0; round < 3; round++) {
		from = 0;
		/* ack path 1 now, then let path 0 time out */
		ep_ack_init(e, &a);
		ep_ack_sent(e, &a, 1, from, (u32)e->now);
		e->now += 20 * US;
		ep_rx_ack(e, &a);
		e->now = p0->last_progress + mr_path_rto(&e->c, p0);
		p1->last_progress = e->now;	/* path 1 is fine */
		mr_conn_timer(&e->c, e->now);
		if (round < 2 && p0->state == MR_PATH_DEAD)
			break;
		ep_tx(e);
	}
	tap_ok(round == 3 && p0->state == MR_PATH_DEAD && p0->weight == 0 &&
	       p0->cwnd == 0 && e->c.stats[MR_ST_PATH_DEAD] == 1 &&
	       p0->timeouts == cfg.dead_after,
	       "dead after dead_after=%u consecutive RTOs (timeouts=%u state=%u)",
	       cfg.dead_after, p0->timeouts, p0->state);
	ep_ack_init(e, &a);
	ep_ack_sent(e, &a, 1, 0, (u32)e->now);
	ep_rx_ack(e, &a);
	from = e->ntx;
	send_segs(e, 50);
	{
		u32 i, on0 = 0;

		for (i = from; i < e->ntx; i++)
			on0 += e->tx[i].h.path == 0;
		tap_ok(ep_count(e, from, MR_OP_WRITE) > 0 && !on0 &&
		       p0->inflight == 0,
		       "a dead path carries no data; the other path does (%u sent)",
		       e->ntx - from);
	}
	/* probes every probe_ns while dead */
	from = e->ntx;
	e->now = p0->next_probe;
	p1->last_progress = e->now;
	mr_conn_timer(&e->c, e->now);
	pi = ep_last(e, MR_OP_PROBE);
	tap_ok(pi >= (int)from && e->tx[pi].h.path == 0 &&
	       (e->tx[pi].h.flags & MR_F_ACKREQ) && p0->probes == 1 &&
	       e->c.stats[MR_ST_TX_PROBES] == 1,
	       "a dead path sends a PROBE with ACKREQ after probe_ns");
	probes = p0->probes;
	e->now += cfg.probe_ns / 2;
	p1->last_progress = e->now;
	mr_conn_timer(&e->c, e->now);
	tap_ok(p0->probes == probes, "no second probe while one is outstanding or before probe_ns");
	/* the probe is SACKed: revived with a low weight */
	/*
	 * What a receiver sends: nothing sent on path 0 before the probe
	 * arrived, so its base is still path 0's first psn.
	 */
	ep_ack_init(e, &a);
	ep_ack_path(&a, 0, e->c.epoch);
	ep_ack_set(&a.path[0], e->tx[pi].h.psn);
	a.path[0].tsecr = e->tx[pi].h.tsval;
	e->now += 10 * US;
	ep_rx_ack(e, &a);
	tap_ok(p0->state != MR_PATH_DEAD && p0->weight == MR_WEIGHT_ONE / 8 &&
	       p0->timeouts == 0 && e->c.stats[MR_ST_PATH_REVIVED] == 1,
	       "a SACKed probe revives the path with weight 1/8 (w=%u)",
	       p0->weight);
	tap_ok(p0->cwnd > 0, "the revived path gets its share of the window at once (cwnd=%u)",
	       p0->cwnd);
	ep_free(e);

	/* CE echoed for a dead path: no weight to cut, no re-pick */
	mr_conn_cfg_default(&cfg);
	e = two_paths(&cfg, 0x10);
	p0 = &e->c.path[0];
	send_segs(e, 4);
	ep_ack_init(e, &a);
	ep_ack_path(&a, 0, p0->una)->rx_cnt = 0;
	ep_rx_ack(e, &a);		/* echo counters known */
	p0->state = MR_PATH_DEAD;
	p0->dead_psn = p0->nxt;
	p0->weight = 0;
	mr_paths_rebalance(&e->c);
	for (round = 0; round < 5; round++) {
		e->now += 1 * MS;
		ep_ack_init(e, &a);
		ep_ack_path(&a, 0, p0->una);
		a.path[0].ce_cnt = (u16)(10 * (round + 1));
		a.path[0].rx_cnt = (u16)(10 * (round + 1));
		ep_rx_ack(e, &a);
	}
	tap_ok(p0->weight == 0 && p0->state == MR_PATH_DEAD && !p0->repicks &&
	       p0->cwnd == 0,
	       "CE echoed for a dead path leaves its weight 0 (w=%u)", p0->weight);
	ep_free(e);
}

/*
 * Both paths silent: a stall (the peer or the hosts), not a path failure.
 * Neither dies, both back off; once path 1 gets through again, path 0,
 * still silent, dies at its next timeout.
 */
static void test_stall_no_death(void)
{
	struct mr_conn_cfg cfg;
	struct ep *e;
	struct mr_path *p0, *p1;
	struct mr_ack a;
	u32 i;

	mr_conn_cfg_default(&cfg);
	cfg.dead_after = 1;
	e = two_paths(&cfg, 0x10);
	p0 = &e->c.path[0];
	p1 = &e->c.path[1];
	send_segs(e, 4);
	/* Timer events (the QPs' too) until the paths timed out 10 times. */
	for (i = 0; i < 1000 && p0->timeouts + p1->timeouts < 10; i++) {
		e->now = mr_conn_next_timer(&e->c);
		mr_conn_timer(&e->c, e->now);
		ep_tx(e);
	}
	tap_ok(p0->state != MR_PATH_DEAD && p1->state != MR_PATH_DEAD &&
	       !e->c.stats[MR_ST_PATH_DEAD] && !e->c.stats[MR_ST_TX_PROBES] &&
	       p0->timeouts + p1->timeouts >= 10,
	       "two silent paths: neither dies, both back off (timeouts %u + %u)",
	       p0->timeouts, p1->timeouts);
	tap_ok(mr_path_rto(&e->c, p0) == cfg.rto_max_ns &&
	       mr_path_rto(&e->c, p1) == cfg.rto_max_ns,
	       "their timeouts reach rto_max (%u, %u)",
	       mr_path_rto(&e->c, p0), mr_path_rto(&e->c, p1));
	/* Path 1 gets through; path 0 stays silent. */
	if (p1->una == p1->nxt)
		send_segs(e, 8);
	ep_ack_init(e, &a);
	ep_ack_sent(e, &a, 1, 0, (u32)e->now);
	e->now += 10 * US;
	ep_rx_ack(e, &a);
	for (i = 0; i < 4 && p0->state != MR_PATH_DEAD; i++) {
		if (p0->una == p0->nxt)
			send_segs(e, 8);
		e->now = p0->last_progress + mr_path_rto(&e->c, p0);
		p1->last_progress = e->now;
		p1->acked_at = e->now;
		mr_conn_timer(&e->c, e->now);
	}
	tap_ok(p0->state == MR_PATH_DEAD && p1->state != MR_PATH_DEAD &&
	       e->c.stats[MR_ST_PATH_DEAD] == 1,
	       "once the other path gets through, the silent one dies (after %u more timeouts)",
	       i);
	ep_free(e);
}

/*
 * Path 0 times out; then path 1 gets through (the retransmission, say);
 * then path 0's later packets time out while path 1 carries nothing: path
 * 1 got through during path 0's series, so path 0 dies at dead_after.
 */
static void test_overtaken(void)
{
	struct mr_conn_cfg cfg;
	struct ep *e;
	struct mr_path *p0, *p1;
	struct mr_ack a;
	u32 k, from;
	u64 since = 0;

	mr_conn_cfg_default(&cfg);
	e = two_paths(&cfg, 0x11);
	p0 = &e->c.path[0];
	p1 = &e->c.path[1];
	send_segs(e, 4);
	e->now = p0->last_progress + mr_path_rto(&e->c, p0);
	mr_conn_timer(&e->c, e->now);
	tap_ok(p0->timeouts == 1 && !p0->overtaken,
	       "a first timeout: the series begins, no other path through yet");
	from = e->ntx;
	ep_tx(e);
	ep_ack_init(e, &a);
	ep_ack_sent(e, &a, 1, 0, (u32)e->now);
	e->now += 10 * US;
	ep_rx_ack(e, &a);
	tap_ok(p0->overtaken && !p1->overtaken && p1->una == p1->nxt &&
	       e->ntx > from,
	       "path 1's progress marks path 0 overtaken, and only it");
	for (k = 1; k < cfg.dead_after && p0->state != MR_PATH_DEAD; k++) {
		if (p0->una == p0->nxt)
			send_segs(e, 2);
		since = p0->last_progress;
		e->now = since + mr_path_rto(&e->c, p0);
		mr_conn_timer(&e->c, e->now);
	}
	tap_ok(p0->state == MR_PATH_DEAD && p0->timeouts == cfg.dead_after &&
	       p1->acked_at < since,
	       "path 0 dies at timeout %u, though nothing got through after the one before",
	       cfg.dead_after);
	ep_free(e);
}

static void ack_ecn(struct ep *e, u32 path, u16 ce, u16 rx, u32 from)
{
	struct mr_ack a;
	struct mr_ack_path *ap;

	ep_ack_init(e, &a);
	ep_ack_sent(e, &a, path, from, (u32)e->now - 20000);
	ap = &a.path[0];
	ap->ce_cnt = ce;
	ap->rx_cnt = rx;
	ep_rx_ack(e, &a);
}

static void test_ecn_weight(void)
{
	struct ep *e = sender(2, 0x100, 3);
	struct mr_path *p = &e->c.path[0];
	u16 w1, w2;

	send_segs(e, 40);
	ack_ecn(e, 0, 0, 0, 0);		/* baseline of the counters */
	tap_ok(p->echo_valid && p->alpha == 0 && p->weight == MR_WEIGHT_ONE,
	       "first ACK only records the echo counters");
	e->now += 1 * MS;
	ack_ecn(e, 0, 10, 10, 0);
	w1 = p->weight;
	tap_ok(p->alpha == 64 && w1 == MR_WEIGHT_ONE - 32 && p->ce == 10 &&
	       e->c.stats[MR_ST_ECN_ECHO] == 10,
	       "all-CE ACK: alpha += 1024>>ecn_shift, weight cut by alpha/2 (alpha=%u w=%u)",
	       p->alpha, w1);
	e->now += 10 * US;
	ack_ecn(e, 0, 20, 20, 0);
	tap_ok(p->weight == w1 && p->alpha > 64,
	       "a second CE ACK within the same RTT does not cut again (w=%u)",
	       p->weight);
	e->now += 1 * MS;
	ep_tx(e);
	w2 = p->weight;
	{
		u32 from = e->ntx;
		u16 a0 = p->alpha;

		send_segs(e, 10);
		ack_ecn(e, 0, 20, 30, from);
		tap_ok(p->weight > w2 && p->alpha < a0,
		       "clean ACK: weight grows additively, alpha decays (w %u->%u, alpha %u->%u)",
		       w2, p->weight, a0, p->alpha);
	}
	tap_ok(e->c.path[1].weight == MR_WEIGHT_ONE && e->c.path[1].alpha == 0,
	       "the other path is untouched");
	ep_free(e);
}

static void test_repick(void)
{
	struct mr_conn_cfg cfg;
	struct ep *e;
	struct mr_path *p0, *p1;
	u16 port0, port1;
	u16 ce = 0, rx = 0;
	u32 i, hot_max = 0;

	mr_conn_cfg_default(&cfg);
	cfg.npaths = 2;
	cfg.sport_min = 50000;
	cfg.sport_max = 50100;
	e = ep_new(&cfg, 0x100, 0x77770001, 11);
	ep_qp(e, 0, NULL);
	p0 = &e->c.path[0];
	p1 = &e->c.path[1];
	port0 = p0->sport;
	port1 = p1->sport;
	tap_ok(port0 >= 50000 && port0 <= 50100 && port1 >= 50000 &&
	       port1 <= 50100, "path ports are drawn from [sport_min, sport_max]");
	send_segs(e, 8);
	ack_ecn(e, 0, 0, 0, 0);
	ack_ecn(e, 1, 0, 0, 0);
	for (i = 0; i < 60 && !p0->repicks; i++) {
		e->now += 1 * MS;
		ce += 10;
		rx += 10;
		ack_ecn(e, 0, ce, rx, 0);
		ack_ecn(e, 1, 0, rx, 0);
		if (p0->hot > hot_max)
			hot_max = p0->hot;
	}
	tap_ok(p0->repicks == 1 && p0->sport != port0 && p0->sport >= 50000 &&
	       p0->sport <= 50100 && e->c.stats[MR_ST_PATH_REPICK] == 1,
	       "a path CE-marked while another is clean moves to a new port (after %u ACKs)",
	       i);
	tap_ok(hot_max == 2 && p0->alpha == 0 && p0->hot == 0 &&
	       p0->weight == MR_WEIGHT_ONE / 4,
	       "re-pick after the third consecutive cut above repick_alpha; alpha reset, weight 1/4");
	tap_ok(p1->repicks == 0 && p1->sport == port1, "the clean path keeps its port");
	ep_free(e);

	/* every path congested: moving would not help */
	e = ep_new(&cfg, 0x100, 0x77770001, 11);
	ep_qp(e, 0, NULL);
	send_segs(e, 8);
	ce = rx = 0;
	ack_ecn(e, 0, 0, 0, 0);
	ack_ecn(e, 1, 0, 0, 0);
	for (i = 0; i < 60; i++) {
		e->now += 1 * MS;
		ce += 10;
		rx += 10;
		ack_ecn(e, 0, ce, rx, 0);
		ack_ecn(e, 1, ce, rx, 0);
	}
	tap_ok(!e->c.path[0].repicks && !e->c.path[1].repicks &&
	       e->c.path[0].state == MR_PATH_CONGESTED,
	       "no re-pick when every path is congested (state congested)");
	ep_free(e);
}

/* Receive half */

static struct ep *receiver(void)
{
	struct ep *e = ep_new(NULL, 0x1234, 0xabc00000, 1);

	ep_qp(e, 0, NULL);
	return e;
}

static const struct mr_ack_path *last_ack_path(struct ep *e, u32 path)
{
	int i = ep_last(e, MR_OP_ACK);
	u32 k;

	if (i < 0)
		return NULL;
	for (k = 0; k < e->tx[i].ack.npath; k++)
		if (e->tx[i].ack.path[k].path == path)
			return &e->tx[i].ack.path[k];
	return NULL;
}

static void test_rpath(void)
{
	struct ep *e = receiver();
	const u32 b = 0xabc00000;
	const struct mr_ack_path *ap;
	struct mr_hdr h;
	u32 i, ok;
	int r;

	/* in order */
	for (i = 0; i < 3; i++) {
		ep_hdr_nop(e, &h, 2, b + i, b + i);
		ep_rx(e, &h, 0);
	}
	tap_ok(e->c.rx_epoch == b && e->c.rpath[2].base == b + 3 &&
	       !e->c.rpath[2].bitmap[0] && !e->c.ack_now,
	       "in-order packets move base, leave no bits, no urgent ACK");
	/* a hole: immediate ACK */
	ep_hdr_nop(e, &h, 2, b + 5, b + 5);
	ep_rx(e, &h, 0);
	tap_ok(e->c.ack_now && e->c.rpath[2].base == b + 3 &&
	       e->c.rpath[2].bitmap[0] == 4,
	       "a packet after a hole sets bit 2 and asks for an immediate ACK");
	mr_conn_rx_flush(&e->c, e->now);
	ap = last_ack_path(e, 2);
	tap_ok(ap && ap->base == b + 3 && ap->bitmap[0] == 4 &&
	       e->c.rpath[2].dirty == 0 && !last_ack_path(e, 1),
	       "the ACK reports base and bitmap of the dirty path only");
	/* fill the hole */
	ep_hdr_nop(e, &h, 2, b + 3, b + 3);
	ep_rx(e, &h, 0);
	ep_hdr_nop(e, &h, 2, b + 4, b + 4);
	ep_rx(e, &h, 0);
	tap_ok(e->c.rpath[2].base == b + 6 && !e->c.rpath[2].bitmap[0],
	       "filling the hole moves base past the received run");
	/* a duplicate psn: counted, not recorded twice; DSN is a dup */
	ep_hdr_nop(e, &h, 2, b + 4, b + 4);
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_DUP &&
	       e->c.rpath[2].base == b + 6,
	       "a duplicate packet is dropped as duplicate");
	/* far ahead: shift */
	ep_hdr_nop(e, &h, 2, b + 6 + 300, b + 6);
	ep_rx(e, &h, 0);
	ok = e->c.rpath[2].base == b + 6 + 300 - 255;
	for (i = 0; i < 7; i++)
		if (e->c.rpath[2].bitmap[i])
			ok = 0;
	tap_ok(ok && e->c.rpath[2].bitmap[7] == 0x80000000u,
	       "psn >= base+256 shifts the window; the skipped holes are not reported received (base=+%u)",
	       e->c.rpath[2].base - b);
	/* very late: psn behind the window, DSN never processed */
	ep_hdr_nop(e, &h, 2, b + 7, b + 7);
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_NONE && e->c.dsn_cum == b + 8 &&
	       e->c.rpath[2].base == b + 6 + 300 - 255,
	       "a very late packet behind the window is still processed by DSN (dsn_cum=+%u)",
	       e->c.dsn_cum - b);
	/* counters */
	ep_hdr_nop(e, &h, 2, b + 400, b + 8);
	ep_rx(e, &h, 1);
	tap_ok(e->c.rpath[2].rx_cnt == 10 && e->c.rpath[2].ce_cnt == 1 &&
	       e->c.stats[MR_ST_RX_CE] == 1,
	       "rx and CE counters per path (rx=%u ce=%u)", e->c.rpath[2].rx_cnt,
	       e->c.rpath[2].ce_cnt);
	/* wrap of the peer's psn space */
	ep_free(e);
	e = ep_new(NULL, 0x1234, 0xfffffffe, 1);
	ep_qp(e, 0, NULL);
	for (i = 0; i < 4; i++) {
		ep_hdr_nop(e, &h, 0, 0xfffffffe + i, 0xfffffffe + i);
		ep_rx(e, &h, 0);
	}
	tap_ok(e->c.rpath[0].base == 2 && e->c.dsn_cum == 2,
	       "peer psn and DSN wrap through 0");
	ep_free(e);
}

/* route_key: paths spread over next hops; a re-pick leaves its next hop */

static u32 route_calls;
static u32 route_planes;	/* next hops the fake route table has */

static u64 fake_route(void *env, struct mr_conn *c, u16 sport)
{
	route_calls++;
	return route_planes ? 1 + sport % route_planes : 0;
}

static int fake_xmit(void *env, struct mr_conn *c, const struct mr_txpkt *pkt)
{
	return 0;
}

static u64 fake_cookie(void *env, struct mr_conn *c, u32 epoch, int prev)
{
	return prev ? 0 : epoch | 1ull << 40;
}

/*
 * @npaths paths over @hops next hops, for 100 connection seeds: in how
 * many is every next hop taken by npaths / hops paths exactly.
 */
static u32 route_even(u32 npaths, u32 hops)
{
	static struct mr_seg segs[1024];
	static struct mr_conn c;
	static const struct mr_env_ops ops = {
		.xmit = fake_xmit, .route_key = fake_route,
		.cookie = fake_cookie,
	};
	struct mr_conn_cfg cfg;
	u32 seed, i, even = 0;

	mr_conn_cfg_default(&cfg);
	cfg.npaths = npaths;
	route_planes = hops;
	for (seed = 1; seed <= 100; seed++) {
		u32 n[MR_MAX_PATHS + 1] = { 0 }, ok = 1;

		if (mr_conn_init(&c, &cfg, segs, &ops, NULL, 0x1234, seed, 0))
			abort();
		for (i = 0; i < npaths; i++)
			n[c.path[i].route]++;
		for (i = 1; i <= hops; i++)
			ok &= n[i] == npaths / hops;
		even += ok;
	}
	return even;
}

static void test_route_spread(void)
{
	static struct mr_seg segs[1024];
	static struct mr_conn c, plain;
	static const struct mr_env_ops ops = {
		.xmit = fake_xmit, .route_key = fake_route,
		.cookie = fake_cookie,
	};
	static const struct mr_env_ops ops_plain = {
		.xmit = fake_xmit, .cookie = fake_cookie,
	};
	struct mr_conn_cfg cfg;
	u32 n[5] = { 0 }, i, ok = 1, same = 0;
	u64 old;

	mr_conn_cfg_default(&cfg);
	route_planes = 4;
	route_calls = 0;
	if (mr_conn_init(&c, &cfg, segs, &ops, NULL, 0x1234, 99, 0))
		abort();
	for (i = 0; i < cfg.npaths; i++) {
		if (c.path[i].route != 1u + c.path[i].sport % 4)
			ok = 0;
		n[c.path[i].route % 5]++;
	}
	for (i = cfg.npaths; i < MR_MAX_PATHS; i++)
		if (c.path[i].route)
			ok = 0;
	tap_ok(ok && n[1] == 2 && n[2] == 2 && n[3] == 2 && n[4] == 2 &&
	       route_calls <= cfg.npaths * 64,
	       "route_key: 8 paths spread 2 per next hop over 4 (%u %u %u %u, %u lookups)",
	       n[1], n[2], n[3], n[4], route_calls);
	old = c.path[0].route;
	mr_path_repick(&c, &c.path[0]);
	tap_ok(c.path[0].route != old && c.path[0].route == 1u + c.path[0].sport % 4,
	       "a re-pick moves the path to another next hop (%llu -> %llu)",
	       (unsigned long long)old, (unsigned long long)c.path[0].route);
	/* One next hop only: nothing to spread, every path still gets a port. */
	route_planes = 1;
	mr_path_repick(&c, &c.path[1]);
	tap_ok(c.path[1].route == 1, "with a single next hop a re-pick still picks a port");
	/* No route known (key 0): one random port, as without the callback. */
	route_planes = 0;
	if (mr_conn_init(&c, &cfg, segs, &ops, NULL, 0x1234, 7, 0) ||
	    mr_conn_init(&plain, &cfg, segs, &ops_plain, NULL, 0x1234, 7, 0))
		abort();
	for (i = 0; i < MR_MAX_PATHS; i++)
		same += c.path[i].sport == plain.path[i].sport && !c.path[i].route;
	tap_ok(same == MR_MAX_PATHS,
	       "no route known: the same random ports as without route_key (%u/16)",
	       same);
	{
		u32 e8 = route_even(8, 8), e16 = route_even(16, 8);

		tap_ok(e8 == 100 && e16 == 100,
		       "route_key: over 8 next hops, 8 paths take one each and 16 two each, for every one of 100 seeds (%u, %u)",
		       e8, e16);
	}
}

/* Time out path 0 while path 1 keeps making progress. */
static void timeout_path0(struct ep *e)
{
	struct mr_path *p0 = &e->c.path[0];

	e->now = p0->last_progress + mr_path_rto(&e->c, p0);
	e->c.path[1].last_progress = e->now;	/* path 1 gets through */
	e->c.path[1].acked_at = e->now;
	mr_conn_timer(&e->c, e->now);
}

/* An ACK block for path 0 with base @base and every psn in [lo, hi). */
static void ack_path0(struct ep *e, u32 base, u32 lo, u32 hi)
{
	struct mr_ack a;
	u32 psn;

	ep_ack_init(e, &a);
	ep_ack_path(&a, 0, base);
	for (psn = lo; psn != hi; psn++)
		ep_ack_set(&a.path[0], psn);
	e->now += 10 * US;
	ep_rx_ack(e, &a);
}

static void test_spurious_rto(void)
{
	struct ep *e = sender(2, 0x20, 3);
	struct mr_conn *c = &e->c;
	struct mr_path *p0 = &c->path[0];
	u32 first, hi, n0, w, from, i, resent = 0;

	send_segs(e, 8);
	first = p0->una;
	hi = p0->nxt;
	n0 = hi - first;
	ep_standing_queue(c);
	w = c->wnd;
	timeout_path0(e);
	tap_ok(n0 > 0 && p0->timeouts == 1 && p0->weight == MR_WEIGHT_ONE / 2 &&
	       c->wnd == w / 2 && c->rtx_cnt == n0,
	       "a stall: path 0 times out, %u segments queued again, window halved",
	       n0);
	/* The stalled packets arrive after all: the receiver's ACK shows them. */
	ack_path0(e, first, first, hi);
	tap_ok(c->stats[MR_ST_RTO_SPURIOUS] == 1 &&
	       c->stats[MR_ST_RTX_CANCELLED] == n0 && c->rtx_cnt == 0 &&
	       p0->timeouts == 0 && p0->weight == MR_WEIGHT_ONE &&
	       c->wnd == w / 2,
	       "they arrive late: path undone (timeouts=%u weight=%u), window left cut (%u of %u), %llu retransmits cancelled",
	       p0->timeouts, p0->weight, c->wnd, w,
	       (unsigned long long)c->stats[MR_ST_RTX_CANCELLED]);
	/* Send whatever is queued: none of path 0's segments goes again. */
	from = e->ntx;
	ep_tx(e);
	for (i = from; i < e->ntx; i++) {
		u32 k;

		if (e->tx[i].h.opcode != MR_OP_WRITE)
			continue;
		for (k = 0; k < from; k++)
			resent += e->tx[k].h.path == 0 &&
				  e->tx[k].h.opcode == MR_OP_WRITE &&
				  e->tx[k].h.dsn == e->tx[i].h.dsn;
	}
	tap_ok(!resent && c->inflight == c->path[1].inflight,
	       "nothing is sent twice (%u resent); only path 1's segments are outstanding",
	       resent);
	ep_free(e);
}

static void test_rto_real_loss(void)
{
	struct ep *e = sender(2, 0x30, 3);
	struct mr_conn *c = &e->c;
	struct mr_path *p0 = &c->path[0];
	u32 first, hi, n0;

	send_segs(e, 8);
	first = p0->una;
	hi = p0->nxt;
	n0 = hi - first;
	timeout_path0(e);
	/* The oldest is lost; the ones after it arrived. */
	ack_path0(e, first, first + 1, hi);
	tap_ok(n0 >= 2 && c->stats[MR_ST_RTO_SPURIOUS] == 0 &&
	       c->stats[MR_ST_RTX_CANCELLED] == n0 - 1 && c->rtx_cnt == 1 &&
	       p0->timeouts == 1 && p0->weight == MR_WEIGHT_ONE / 2,
	       "the oldest packet lost: no undo, only the others' retransmits cancelled (%llu)",
	       (unsigned long long)c->stats[MR_ST_RTX_CANCELLED]);
	/*
	 * A packet sent after the timeout gets through: the series is over.
	 * (The retransmission takes path 1; new data takes both.)
	 */
	send_segs(e, 8);
	if (p0->nxt == hi)
		tap_diag("path 0 sent nothing after its timeout");
	ack_path0(e, first, first + 1, p0->nxt);
	ack_path0(e, first, first, first + 1);
	tap_ok(p0->nxt != hi && c->stats[MR_ST_RTO_SPURIOUS] == 0 &&
	       p0->timeouts == 0,
	       "after newer packets got through, the oldest arriving undoes nothing");
	ep_free(e);
}

static void test_rto_dead_undo(void)
{
	struct ep *e = sender(2, 0x40, 3);
	struct mr_conn *c = &e->c;
	struct mr_path *p0 = &c->path[0];
	u32 first, hi, k, from;
	struct mr_ack a;
	int pi;

	send_segs(e, 8);
	first = p0->una;
	for (k = 0; k < c->cfg.dead_after && p0->state != MR_PATH_DEAD; k++) {
		timeout_path0(e);
		send_segs(e, 8);	/* new packets for path 0 */
	}
	hi = p0->nxt;
	tap_ok(p0->state == MR_PATH_DEAD && c->stats[MR_ST_PATH_DEAD] == 1,
	       "%u timeouts in a row: path 0 dead", k);
	/* Everything it was sent arrives after a long stall. */
	ack_path0(e, first, first, hi);
	tap_ok(p0->state == MR_PATH_DEAD && p0->timeouts == 0 &&
	       p0->next_probe <= e->now && c->stats[MR_ST_PATH_REVIVED] == 0 &&
	       c->stats[MR_ST_RTO_SPURIOUS] == 1,
	       "the stalled packets arrive: the series is undone, the path is probed at once (state %u)",
	       p0->state);
	from = e->ntx;
	c->path[1].last_progress = e->now;
	mr_conn_timer(c, e->now);
	pi = ep_last(e, MR_OP_PROBE);
	tap_ok(pi >= (int)from && e->tx[pi].h.path == 0,
	       "the probe goes without waiting for probe_ns");
	if (pi >= (int)from) {
		ep_ack_init(e, &a);
		ep_ack_path(&a, 0, hi);
		ep_ack_set(&a.path[0], e->tx[pi].h.psn);
		a.path[0].tsecr = e->tx[pi].h.tsval;
		e->now += 10 * US;
		ep_rx_ack(e, &a);
	}
	tap_ok(p0->state == MR_PATH_GOOD && p0->weight == MR_WEIGHT_ONE / 8 &&
	       p0->cwnd > 0 && c->stats[MR_ST_PATH_REVIVED] == 1,
	       "its answer revives it as any revival, at weight 1/8 (state %u weight %u)",
	       p0->state, p0->weight);
	ep_free(e);
}

/* Kill path 0 of @e while path 1 gets through; the time it died. */
static u64 kill_path0(struct ep *e)
{
	struct mr_path *p0 = &e->c.path[0];
	u32 k;

	send_segs(e, 8);
	for (k = 0; k < e->c.cfg.dead_after && p0->state != MR_PATH_DEAD;
	     k++) {
		timeout_path0(e);
		send_segs(e, 8);
	}
	return e->now;
}

/* mr_conn_timer() at @t, path 1 getting through; path 0's probe count. */
static u32 probe_at(struct ep *e, u64 t)
{
	e->now = t;
	e->c.path[1].last_progress = t;
	e->c.path[1].acked_at = t;
	mr_conn_timer(&e->c, t);
	return e->c.path[0].probes;
}

/*
 * A route slower than probe_ns: every probe is declared lost before its
 * answer comes. The late answer still revives the path, and its round
 * trip is taken as a sample.
 */
static void test_late_probe(void)
{
	struct ep *e = sender(2, 0x60, 3);
	struct mr_conn *c = &e->c;
	struct mr_path *p0 = &c->path[0];
	u32 first, srtt;
	int pi, pi2;
	struct mr_ack a;
	u64 sent;

	first = p0->una;
	kill_path0(e);
	e->now = p0->next_probe;
	mr_conn_timer(c, e->now);
	pi = ep_last(e, MR_OP_PROBE);
	sent = e->now;
	probe_at(e, e->now + c->cfg.probe_ns);
	pi2 = ep_last(e, MR_OP_PROBE);
	tap_ok(p0->state == MR_PATH_DEAD && pi >= 0 && pi2 > pi &&
	       p0->probes == 2 && !c->stats[MR_ST_PATH_REVIVED],
	       "a probe unanswered within probe_ns is lost; the next one goes");
	srtt = p0->srtt;
	ep_ack_init(e, &a);
	ep_ack_path(&a, 0, first);
	ep_ack_set(&a.path[0], e->tx[pi].h.psn);
	a.path[0].tsecr = e->tx[pi].h.tsval;
	e->now = sent + 3 * c->cfg.probe_ns / 2;
	ep_rx_ack(e, &a);
	tap_ok(p0->state == MR_PATH_GOOD && p0->weight == MR_WEIGHT_ONE / 8 &&
	       p0->cwnd > 0 && c->stats[MR_ST_PATH_REVIVED] == 1 &&
	       p0->srtt > srtt,
	       "the lost probe's late answer revives the path (state %u, srtt %u -> %u ns)",
	       p0->state, srtt, p0->srtt);
	ep_free(e);
}

/*
 * Probes are paced by the round trip the live paths measure: while it is
 * longer than probe_ns, a probe waits for the smallest smoothed RTT of the
 * live paths before it is declared lost and the next one goes.
 */
static void test_probe_pace(void)
{
	struct ep *e = sender(2, 0x62, 3);
	struct mr_conn *c = &e->c;
	struct mr_path *p0 = &c->path[0], *p1 = &c->path[1];
	u64 died, rtt;
	u32 n1, n2, n3;

	/* path 1 measured a 20 ms round trip (and its RTO is longer) */
	p1->srtt = 20 * MS;
	p1->rttvar = 5 * MS;
	rtt = 20 * MS;
	died = kill_path0(e);
	tap_ok(p0->state == MR_PATH_DEAD && p0->next_probe == died + rtt,
	       "the first probe waits for the live path's round trip, not probe_ns (%llu us)",
	       (unsigned long long)(p0->next_probe - died) / US);
	tap_ok(probe_at(e, died + c->cfg.probe_ns) == 0,
	       "no probe after probe_ns alone");
	n1 = probe_at(e, died + rtt);
	n2 = probe_at(e, died + rtt + 5 * c->cfg.probe_ns);
	tap_ok(n1 == 1 && n2 == 1 && mr_path_rto(c, p0) == rtt,
	       "a probe is not declared lost before the live path's round trip (%u, %u probes)",
	       n1, n2);
	n3 = probe_at(e, died + 2 * rtt);
	tap_ok(n3 == 2 && c->stats[MR_ST_TX_PROBES] == 2,
	       "the next probe goes one round trip later (%u probes)", n3);
	/* a round trip longer than rto_max: probed every rto_max */
	p1->srtt = 2 * (u32)c->cfg.rto_max_ns;
	p1->rttvar = 0;
	tap_ok(mr_path_rto(c, p0) == c->cfg.rto_max_ns,
	       "the pace is at most rto_max (%u ns)", mr_path_rto(c, p0));
	/* a fast live path: probe_ns again */
	p1->srtt = 100 * US;
	p1->rttvar = 10 * US;
	tap_ok(mr_path_rto(c, p0) == c->cfg.probe_ns,
	       "with a round trip shorter than probe_ns the pace is probe_ns (%u ns)",
	       mr_path_rto(c, p0));
	/* ... unless a stall just showed that round trips take far longer */
	p1->rto_floor = 30 * MS;
	tap_ok(mr_path_rto(c, p0) == 30 * MS,
	       "a live path's RTO floor (a stall measured) paces probes too (%u ns)",
	       mr_path_rto(c, p0));
	ep_free(e);
}

/*
 * While no path gets through, a lost probe is not followed by another
 * until one does, or until rto_max has passed.
 */
static void test_probe_stall(void)
{
	struct ep *e = sender(2, 0x63, 3);
	struct mr_conn *c = &e->c;
	struct mr_path *p0 = &c->path[0];
	u64 died, t;
	u32 n1, n2, n3, n4;

	died = kill_path0(e);
	/* the hosts stall from here: path 1 is acknowledged no more */
	t = died + c->cfg.probe_ns;
	e->now = t;
	mr_conn_timer(c, t);
	n1 = p0->probes;
	e->now = t + 5 * c->cfg.probe_ns;
	mr_conn_timer(c, e->now);
	n2 = p0->probes;
	tap_ok(n1 == 1 && n2 == 1 && c->stats[MR_ST_TX_PROBES] == 1,
	       "in a stall the first probe goes, later ones wait (%u, %u probes)",
	       n1, n2);
	/* path 1 gets through again: the next probe goes within probe_ns */
	c->path[1].acked_at = e->now;
	e->now += c->cfg.probe_ns;
	mr_conn_timer(c, e->now);
	n3 = p0->probes;
	tap_ok(n3 == 2, "once another path gets through, the next probe goes (%u probes)",
	       n3);
	/* a stall longer than rto_max: one probe per rto_max */
	t = e->now;
	e->now = t + c->cfg.rto_max_ns - c->cfg.probe_ns;
	mr_conn_timer(c, e->now);
	n3 = p0->probes;
	e->now = t + c->cfg.rto_max_ns;
	mr_conn_timer(c, e->now);
	n4 = p0->probes;
	tap_ok(n3 == 2 && n4 == 3,
	       "without progress anywhere, a probe every rto_max (%u, %u probes)",
	       n3, n4);
	ep_free(e);
}

/*
 * A spurious timeout leaves the path's RTO at least as long as the stall
 * it took for loss; the floor halves each second of acknowledged progress
 * and goes once under rto_min.
 */
static void test_rto_floor(void)
{
	struct ep *e = sender(2, 0x50, 3);
	struct mr_conn *c = &e->c;
	struct mr_path *p0 = &c->path[0];
	u32 first, hi, rto0, floor, k;
	u64 since;

	send_segs(e, 8);
	first = p0->una;
	hi = p0->nxt;
	rto0 = mr_path_rto(c, p0);
	since = p0->last_progress;
	timeout_path0(e);
	/* The proof comes long after the timer fired. */
	e->now += 5 * (u64)rto0;
	ack_path0(e, first, first, hi);
	floor = (u32)(e->now - since);
	tap_ok(c->stats[MR_ST_RTO_SPURIOUS] == 1 && p0->rto_floor == floor &&
	       floor > 5 * rto0 && mr_path_rto(c, p0) >= floor,
	       "a spurious timeout: the RTO grows from %u to the stall's %u ns",
	       rto0, mr_path_rto(c, p0));
	for (k = 0; k < 20 && p0->rto_floor; k++) {
		u32 before = p0->rto_floor;

		e->now += 1000000000ull;
		send_segs(e, 2);
		ack_path0(e, p0->una, p0->una, p0->nxt);
		if (p0->rto_floor && p0->rto_floor != before / 2)
			break;
	}
	tap_ok(!p0->rto_floor && k > 1,
	       "halved each second of progress, gone after %u s", k);
	ep_free(e);
}

/*
 * A path's RTO is at most twice the best live path's: its own estimate
 * may be stale. A floor learnt from a spurious series still holds, and a
 * dead path's estimate does not count.
 */
static void test_rto_cap(void)
{
	struct mr_conn_cfg cfg;
	struct ep *e;
	struct mr_path *p0, *p1;

	mr_conn_cfg_default(&cfg);
	cfg.npaths = 2;
	cfg.rto_min_ns = 10 * US;
	e = ep_new(&cfg, 0x21, 0x77770001, 3);
	p0 = &e->c.path[0];
	p1 = &e->c.path[1];
	p0->srtt = 20 * US;
	p0->rttvar = 5 * US;
	p1->srtt = 400 * US;
	p1->rttvar = 100 * US;
	tap_ok(mr_path_rto(&e->c, p0) == 40 * US &&
	       mr_path_rto(&e->c, p1) == 80 * US,
	       "a stale 400 us path waits 2 x the best path's RTO (%u ns), the best its own",
	       mr_path_rto(&e->c, p1));
	p1->rto_floor = 300 * US;
	tap_ok(mr_path_rto(&e->c, p1) == 300 * US,
	       "a floor from a spurious series holds above the cap");
	p1->rto_floor = 0;
	p1->timeouts = 2;
	tap_ok(mr_path_rto(&e->c, p1) == 320 * US,
	       "backoff applies to the capped RTO (%u ns)", mr_path_rto(&e->c, p1));
	p1->timeouts = 0;
	p0->state = MR_PATH_DEAD;
	tap_ok(mr_path_rto(&e->c, p1) == 800 * US,
	       "a dead path's estimate caps nothing: its own 800 us");
	ep_free(e);
}

/*
 * A path timeout may retransmit past a window filled by the packets the
 * other paths have not timed out yet: one packet per timed-out path.
 */
static void test_rto_credit(void)
{
	struct mr_conn_cfg cfg;
	struct ep *e;
	struct mr_path *p0, *p1;
	u32 before, infl;

	mr_conn_cfg_default(&cfg);
	e = two_paths(&cfg, 0x22);
	p0 = &e->c.path[0];
	p1 = &e->c.path[1];
	send_segs(e, 4);
	tap_ok(p0->nxt - p0->una == 2 && p1->nxt - p1->una == 2,
	       "4 packets, 2 on each path");
	infl = p1->inflight;
	e->c.wnd = infl;	/* path 1's two packets fill the window */
	e->now = p0->last_progress + mr_path_rto(&e->c, p0);
	p1->last_progress = e->now;
	mr_conn_timer(&e->c, e->now);
	tap_ok(e->c.rtx_cnt == 2 && e->c.inflight == infl &&
	       e->c.rto_credit == 1,
	       "path 0 times out: 2 to resend, the window is full (credit %u)",
	       e->c.rto_credit);
	before = e->ntx;
	ep_tx(e);
	tap_ok(e->ntx == before + 1 && e->c.rtx_cnt == 1 &&
	       e->c.rto_credit == 0,
	       "one retransmission goes past the window (%u sent)",
	       e->ntx - before);
	before = e->ntx;
	ep_tx(e);
	tap_ok(e->ntx == before, "and no more until the window opens");
	e->c.wnd = e->c.inflight + 4096;
	ep_tx(e);
	tap_ok(e->c.rtx_cnt == 0, "an open window sends the rest");
	ep_free(e);
}

/* Two paths with 20 us round trips; path 0 backed off once (RTO 2 ms). */
static struct ep *overdue_ep(struct mr_conn_cfg *cfg, u32 id)
{
	struct ep *e;
	u32 i;

	mr_conn_cfg_default(cfg);
	e = two_paths(cfg, id);
	for (i = 0; i < 2; i++) {
		e->c.path[i].srtt = 20 * US;
		e->c.path[i].rttvar = 5 * US;
	}
	e->c.path[0].timeouts = 1;
	return e;
}

/* Apply an ACK of what @e sent on @path from tx[@from] on, echoing @tsval. */
static void ack_from(struct ep *e, u32 path, u32 from, u32 tsval)
{
	struct mr_ack a;

	ep_ack_init(e, &a);
	ep_ack_sent(e, &a, path, from, tsval);
	ep_rx_ack(e, &a);
}

/* Send C, then @gap later D; each one segment, on paths 0 and 1. */
static void overdue_pair(struct ep *e, u64 gap, u32 *c_tx, u32 *d_tx)
{
	send_segs(e, 1);
	*c_tx = e->ntx - 1;
	e->now += gap;
	send_segs(e, 1);
	*d_tx = e->ntx - 1;
	tap_ok(*d_tx == *c_tx + 1 && e->tx[*c_tx].h.path == 0 &&
	       e->tx[*d_tx].h.path == 1,
	       "overdue: C on path 0, D %llu us later on path 1",
	       (unsigned long long)(gap / US));
}

/*
 * Overdue transmissions (protocol section 7.5): out for longer than the
 * path's RTO without backoff (here rto_min_ns, 1 ms) while a packet sent
 * after it by at least that RTO's margin over the round trip (1 ms - 20
 * us) was acknowledged on another path, a packet is sent again at once;
 * its path keeps the slot until an ACK or its own timeout.
 */
static void test_overdue(void)
{
	struct mr_conn_cfg cfg;
	struct ep *e;
	struct mr_path *p0, *p1;
	u64 t0, infl0, cinfl;
	u32 c_tx, d_tx, before, una;

	e = overdue_ep(&cfg, 0x23);
	p0 = &e->c.path[0];
	p1 = &e->c.path[1];
	p0->timeouts = 2;	/* its RTO is 4 ms */
	t0 = e->now;
	overdue_pair(e, 10 * US, &c_tx, &d_tx);
	/* as if this host had stalled: D's ACK is applied 1.5 ms after C */
	e->now = t0 + 3 * cfg.rto_min_ns / 2;
	ack_from(e, 1, d_tx, (u32)(e->now - 20 * US));
	tap_ok(!e->c.stats[MR_ST_RETX_OVERDUE] && !e->c.rtx_cnt &&
	       p1->una == p1->nxt && e->c.rack_rtt == 1490 * US,
	       "D, sent 10 us after C, acknowledged when C is 1.5 ms old (D's round trip 1.49 ms): C is not overdue");
	e->now = t0 + 1490 * US + 980 * US;
	mr_conn_timer(&e->c, e->now);
	tap_ok(e->c.stats[MR_ST_RETX_OVERDUE] == 1 && !e->c.stats[MR_ST_RETX_RTO],
	       "it is at 1.49 ms + 980 us (the RTO's margin over the 20 us round trip), before path 0's 4 ms timeout");
	e->now = t0 + 4 * cfg.rto_min_ns;
	mr_conn_timer(&e->c, e->now);
	tap_ok(p0->una == p0->nxt && p0->lost == 1 && e->c.rtx_cnt == 1 &&
	       !e->c.stats[MR_ST_RETX_RTO] && inflight_sum(e) == 0,
	       "path 0's timeout clears the slot: counted lost once, the segment queued once (lost %llu)",
	       (unsigned long long)p0->lost);
	ep_free(e);

	e = overdue_ep(&cfg, 0x25);
	p0 = &e->c.path[0];
	p1 = &e->c.path[1];
	t0 = e->now;
	overdue_pair(e, 985 * US, &c_tx, &d_tx);
	e->now += 10 * US;
	ack_from(e, 1, d_tx, (u32)(e->now - 10 * US));
	tap_ok(!e->c.stats[MR_ST_RETX_OVERDUE] && !e->c.rtx_cnt &&
	       p1->una == p1->nxt &&
	       mr_path_next_timer(&e->c) == t0 + cfg.rto_min_ns,
	       "D acknowledged, C 995 us old: not overdue; the timer is set for 1 ms after C was sent (%lld ns off)",
	       (long long)(mr_path_next_timer(&e->c) - (t0 + cfg.rto_min_ns)));
	e->now = t0 + cfg.rto_min_ns;
	infl0 = p0->inflight;
	cinfl = e->c.inflight;
	una = p0->una;
	mr_conn_timer(&e->c, e->now);
	tap_ok(e->c.stats[MR_ST_RETX_OVERDUE] == 1 && e->c.rtx_cnt == 1 &&
	       !e->c.stats[MR_ST_RETX_RTO] && p0->timeouts == 1 &&
	       p0->una == una && p0->nxt == una + 1 && p0->inflight == infl0 &&
	       e->c.inflight + infl0 == cinfl && inflight_sum(e) != ~0ull &&
	       p0->lost == 1,
	       "at 1 ms C is overdue, before path 0's 2 ms timeout: queued again; its slot stays on path 0, its bytes leave only the connection's window");
	before = e->ntx;
	ep_tx(e);
	tap_ok(e->ntx == before + 1 && e->tx[before].h.path == 1 &&
	       e->tx[before].h.dsn == e->tx[c_tx].h.dsn &&
	       (e->tx[before].h.flags & MR_F_RETX),
	       "C goes again at once, on path 1, flagged RETX");
	mr_conn_timer(&e->c, e->now);
	tap_ok(e->c.stats[MR_ST_RETX_OVERDUE] == 1 && !e->c.rtx_cnt,
	       "an overdue slot is judged once");
	/* path 0's original arrives after all */
	e->now += 10 * US;
	ack_from(e, 0, c_tx, (u32)t0);
	tap_ok(p0->una == p0->nxt && !p0->inflight && inflight_sum(e) != ~0ull &&
	       p0->lost == 1 && !e->c.stats[MR_ST_RTX_CANCELLED] &&
	       e->c.segs[e->tx[c_tx].h.dsn & e->c.seg_mask].state ==
	       MR_SEGS_INFLIGHT,
	       "the late original clears path 0's slot; the retransmission stays in flight");
	ep_free(e);

	/* No packet sent after it acknowledged: the path's timeout decides. */
	e = overdue_ep(&cfg, 0x24);
	p0 = &e->c.path[0];
	t0 = e->now;
	send_segs(e, 1);
	c_tx = e->ntx - 1;
	e->now = t0 + 3 * cfg.rto_min_ns / 2;
	mr_conn_timer(&e->c, e->now);
	tap_ok(!e->c.stats[MR_ST_RETX_OVERDUE] && !e->c.rtx_cnt &&
	       p0->una != p0->nxt,
	       "overdue: with nothing later acknowledged, C is not overdue after 1.5 ms");
	send_segs(e, 1);
	d_tx = e->ntx - 1;
	e->now += 20 * US;
	ack_from(e, 1, d_tx, (u32)(e->now - 20 * US));
	tap_ok(e->tx[d_tx].h.path == 1 &&
	       e->c.stats[MR_ST_RETX_OVERDUE] == 1 && e->c.rtx_cnt == 1,
	       "the ACK of a packet sent after it makes it overdue at once");
	ack_from(e, 0, c_tx, (u32)t0);
	tap_ok(!e->c.rtx_cnt && e->c.stats[MR_ST_RTX_CANCELLED] == 1 &&
	       e->c.dsn_una == e->c.dsn_nxt && !e->c.inflight &&
	       inflight_sum(e) == 0,
	       "its original, acknowledged before the retransmission went, completes it: cancelled");
	/*
	 * 4.294 s later: the low 32 bits of the new packet's time (they wrap
	 * every 4.295 s) are below those of the last packet acknowledged, and
	 * their 32-bit difference is positive.
	 */
	e->now += 4294 * MS;
	send_segs(e, 1);
	e->c.path[0].timeouts = e->c.path[1].timeouts = 1;	/* RTO 2 ms */
	e->now += 3 * cfg.rto_min_ns / 2;
	mr_conn_timer(&e->c, e->now);
	tap_ok(e->c.stats[MR_ST_RETX_OVERDUE] == 1 &&
	       !e->c.stats[MR_ST_RETX_RTO] && !e->c.rtx_cnt,
	       "a packet sent 4.294 s after the last one acknowledged is not overdue 1.5 ms later (%llu overdue, %llu on timeouts)",
	       (unsigned long long)e->c.stats[MR_ST_RETX_OVERDUE],
	       (unsigned long long)e->c.stats[MR_ST_RETX_RTO]);
	ep_free(e);
}

int main(void)
{
	tap_start();
	test_bitmap();
	test_wrap();
	test_sack_loss(3);
	test_sack_loss(1);
	test_dsn_ffffffff();
	test_dup_and_unsent_acks();
	test_rtt();
	test_rto_backoff();
	test_dead_probe_revive();
	test_spurious_rto();
	test_rto_real_loss();
	test_rto_dead_undo();
	test_late_probe();
	test_probe_pace();
	test_probe_stall();
	test_rto_floor();
	test_rto_cap();
	test_rto_credit();
	test_overdue();
	test_stall_no_death();
	test_overtaken();
	test_ecn_weight();
	test_repick();
	test_route_spread();
	test_rpath();
	return tap_done();
}
