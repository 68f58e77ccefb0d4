// SPDX-License-Identifier: GPL-2.0-only
/*
 * Connections (core/conn.c): the DSN window (exactly-once processing,
 * window limits, NOPs), epoch rules, ACK coalescing, congestion window
 * (slow start, ECN cut, additive increase, receiver hint), pacing, the
 * segment table, configuration checks and reconfiguration.
 */
#include <string.h>
#include "tap.h"
#include "endpoint.h"
#include "harness.h"
#include "internal.h"

#define US 1000ull
#define MS 1000000ull
#define WIRE (1024 + 60)
#define PEER 0xabc00000u

static struct ep *receiver(const struct mr_conn_cfg *cfg)
{
	struct ep *e = ep_new(cfg, 0x1234, PEER, 1);

	ep_qp(e, 0, NULL);
	return e;
}

static struct ep *sender(u32 npaths)
{
	struct mr_conn_cfg cfg;
	struct ep *e;

	mr_conn_cfg_default(&cfg);
	cfg.npaths = npaths;
	e = ep_new(&cfg, 1000, PEER, 7);
	ep_qp(e, 0, NULL);
	/* As if the peer had acknowledged our epoch: no SYN words. */
	e->c.syn = 0;
	return e;
}

/* DSN window */

static void test_exactly_once(void)
{
	struct ep *e = receiver(NULL);
	struct mr_hdr h;
	int r1, r2, r3;
	u32 calls;

	/* one 2-segment WRITE; the first segment arrives twice */
	ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x200, 0, PEER, PEER, 2048, 0, 1024);
	r1 = ep_rx(e, &h, 0);
	calls = e->rx_done_calls;
	h.path = 3;		/* the retransmission, elsewhere */
	h.psn = PEER + 7;
	h.flags |= MR_F_RETX;
	r2 = ep_rx(e, &h, 0);
	tap_ok(r1 == MR_RXA_WRITE && r2 == MR_RXA_DROP &&
	       e->last_rx.reason == MR_DROP_DUP && e->rx_done_calls == calls &&
	       e->c.drops[MR_DROP_DUP] == 1,
	       "a segment arriving twice is placed once, the copy dropped as duplicate");
	tap_ok(ep_landed(e, &e->qp[0].rq[0x200 % MR_MSG_WND].seg) == 1 &&
	       e->c.stats[MR_ST_RX_PLACED] == 1,
	       "its bytes are counted once");
	ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x200, 1, PEER, PEER + 1, 2048, 1024,
		   1024);
	r3 = ep_rx(e, &h, 0);
	tap_ok(r3 == MR_RXA_WRITE && e->qp[0].rq_msn == 0x201 &&
	       e->c.dsn_cum == PEER + 2,
	       "the second segment completes the message exactly (rq_msn=%#x)",
	       e->qp[0].rq_msn);
	ep_free(e);
}

static void test_dsn_window(void)
{
	struct ep *e = receiver(NULL);
	struct mr_hdr h;
	int r;

	ep_hdr_nop(e, &h, 0, PEER, PEER);
	ep_rx(e, &h, 0);
	ep_hdr_nop(e, &h, 0, PEER + 1, PEER + 1 + MR_DSN_WND);
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_DSN_WINDOW &&
	       e->c.drops[MR_DROP_DSN_WINDOW] == 1 && e->c.dsn_cum == PEER + 1,
	       "DSN dsn_cum+4096 -> dsn_window, not settled");
	ep_hdr_nop(e, &h, 0, PEER + 2, PEER + MR_DSN_WND);
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_NONE &&
	       mr_bit_test(e->c.dsn_bits, (PEER + MR_DSN_WND) % MR_DSN_WND) &&
	       e->c.dsn_cum == PEER + 1,
	       "DSN dsn_cum+4095 (last in the window) is processed");
	ep_hdr_nop(e, &h, 0, PEER + 3, PEER + 1 + 0x80000000u);
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_DUP,
	       "DSN half the space away counts as old -> duplicate");
	ep_hdr_nop(e, &h, 0, PEER + 4, PEER - 1);
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_DUP,
	       "DSN dsn_cum-1 -> duplicate");
	ep_free(e);
}

/* Abandoned segments go out as NOPs and still advance the peer. */
static void test_nop(void)
{
	struct ep *e = sender(1);
	struct mr_ack a;
	u32 from, i, ok = 1;

	ep_post(e, 0, MR_WR_WRITE, 3 * 1024, 1);
	ep_tx(e);
	mr_qp_set_error(&e->qp[0], e->now);
	/* all three time out and are resent */
	e->now = mr_path_next_timer(&e->c);
	mr_conn_timer(&e->c, e->now);
	from = e->ntx;
	ep_tx(e);
	for (i = from; i < e->ntx; i++)
		if (e->tx[i].h.opcode != MR_OP_NOP ||
		    e->tx[i].h.dsn != 1000 + i - from || e->tx[i].h.plen)
			ok = 0;
	tap_ok(ok && e->ntx - from == 3 && e->c.stats[MR_ST_TX_NOPS] == 3,
	       "segments of a failed QP are resent as NOPs with their DSNs");
	ep_ack_init(e, &a);
	ep_ack_sent(e, &a, 0, from, (u32)e->now);
	ep_rx_ack(e, &a);
	tap_ok(e->c.dsn_una == e->c.dsn_nxt && mr_conn_idle(&e->c),
	       "acknowledged NOPs free the segment table; the connection is idle");
	ep_free(e);
}

/* Epochs */

static void test_epoch(void)
{
	struct mr_conn_cfg cfg;
	struct ep *e;
	struct mr_hdr h;
	u32 from, i, resets;
	int r;

	mr_conn_cfg_default(&cfg);
	e = receiver(&cfg);
	ep_hdr_nop(e, &h, 0, PEER, PEER);
	h.flags = 0;
	r = ep_rx(e, &h, 0);
	i = (u32)ep_last(e, MR_OP_RESET);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_EPOCH &&
	       e->c.rx_epoch == 0, "no SYN: an unknown epoch is not adopted");
	tap_ok(e->ntx == 1 && i == 0 && e->tx[0].h.reset_epoch == PEER &&
	       e->tx[0].h.cookie == ep_cookie(e, PEER, 0) && e->tx[0].ctrl &&
	       e->c.stats[MR_ST_TX_RESETS] == 1,
	       "it draws a challenge at once: a RESET naming the epoch, with our cookie for it, in the control class");
	mr_conn_rx_flush(&e->c, e->now + 1 * MS);
	tap_ok(ep_count(e, 0, MR_OP_ACK) == 0, "no ACK before the peer's epoch is known");
	/* a hello: SYN, no cookie yet */
	ep_hdr_nop(e, &h, 0, PEER + 1, PEER);
	h.cookie = 0;
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_DROP && !e->c.rx_epoch && e->ntx == 1,
	       "a SYN without a cookie is not adopted; the same epoch is not challenged again within rto_min / 2");
	e->now += cfg.rto_min_ns / 2;
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_DROP && !e->c.rx_epoch && e->ntx == 2 &&
	       e->tx[1].h.opcode == MR_OP_RESET &&
	       e->tx[1].h.cookie == e->tx[0].h.cookie,
	       "rto_min / 2 later it is challenged again, with the same cookie");
	h.cookie = ep_cookie(e, PEER, 0) ^ 1;
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_DROP && !e->c.rx_epoch,
	       "a SYN with a wrong cookie is not adopted");
	h.epoch = 0x6666;
	h.cookie = ep_cookie(e, PEER, 0);
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_DROP && !e->c.rx_epoch && e->ntx == 3 &&
	       e->tx[2].h.reset_epoch == 0x6666 &&
	       e->tx[2].h.cookie == ep_cookie(e, 0x6666, 0) &&
	       e->tx[2].h.cookie != ep_cookie(e, PEER, 0),
	       "a cookie is good for its epoch only: another epoch is challenged for its own");
	/* a PROBE without SYN is smaller than a RESET: no challenge */
	memset(&h, 0, sizeof(h));
	h.opcode = MR_OP_PROBE;
	h.epoch = 0x7001;
	h.psn = 0x7001;
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_DROP && e->ntx == 3,
	       "a 20-byte PROBE of an unknown epoch draws no 32-byte challenge");
	ep_hdr_nop(e, &h, 0, PEER + 1, PEER);
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_NONE && e->c.rx_epoch == PEER &&
	       e->c.dsn_cum == PEER + 1,
	       "a SYN with our cookie for its epoch is adopted");
	/* a new epoch (peer restarted) while the old one is live */
	from = e->ntx;
	e->now += cfg.epoch_quiet_ns / 2;
	ep_hdr_nop(e, &h, 1, 0x5555, 0x5555);
	h.epoch = 0x5555;
	h.syn_dsn = 0x5555;
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_EPOCH &&
	       e->c.rx_epoch == PEER,
	       "a new epoch's proven SYN within epoch_quiet_ns of live traffic is dropped");
	ep_hdr_nop(e, &h, 0, PEER + 2, PEER + 1);
	ep_rx(e, &h, 0);
	e->now += cfg.epoch_quiet_ns - 1;
	ep_hdr_nop(e, &h, 1, 0x5555, 0x5555);
	h.epoch = 0x5555;
	h.syn_dsn = 0x5555;
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_DROP && e->c.rx_epoch == PEER,
	       "live traffic restarts the quiet time");
	mr_conn_rx_flush(&e->c, e->now);
	tap_ok(ep_count(e, from, MR_OP_RESET) == 0,
	       "a proven SYN held back by the quiet time draws no challenge");
	e->now += 1;
	h.cookie = 0;
	from = e->ntx;
	r = ep_rx(e, &h, 0);
	i = (u32)ep_last(e, MR_OP_RESET);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_EPOCH &&
	       e->c.rx_epoch == PEER && i >= from &&
	       e->tx[i].h.reset_epoch == 0x5555 &&
	       e->tx[i].h.cookie == ep_cookie(e, 0x5555, 0) &&
	       e->tx[i].h.epoch == e->c.epoch,
	       "after the quiet time, an unproven SYN is refused and challenged");
	h.cookie = EP_COOKIE;
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_NONE && e->c.rx_epoch == 0x5555 &&
	       e->c.dsn_cum == 0x5556 && !e->c.rpath[0].active &&
	       e->c.rpath[1].base == 0x5556,
	       "after epoch_quiet_ns of silence a proven new epoch replaces it, receive state reset");
	/* the old epoch is stale now */
	ep_hdr_nop(e, &h, 0, PEER + 3, PEER + 2);
	h.flags = 0;
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_EPOCH &&
	       e->c.rx_epoch == 0x5555, "packets of the replaced epoch are dropped");
	ep_hdr_nop(e, &h, 0, PEER + 4, PEER + 2);
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_DROP && e->c.rx_epoch == 0x5555,
	       "even with SYN and its cookie, while the new epoch is live");
	/* the peer's epoch in an ACK_REQ: unsequenced packets never adopt */
	ep_free(e);

	e = receiver(NULL);
	memset(&h, 0, sizeof(h));
	h.opcode = MR_OP_ACK_REQ;
	h.dst_qpn = EP_QPN(0);
	h.src_qpn = EP_PEER_QPN(0);
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_EPOCH &&
	       !e->c.rx_epoch && !e->ntx,
	       "an ACK_REQ cannot establish an epoch, and draws no challenge");
	ep_free(e);

	/* secrets are replaced: the last one still counts, not the one before */
	e = receiver(&cfg);
	ep_hdr_nop(e, &h, 0, PEER, PEER);
	h.cookie = ep_cookie(e, PEER, 0);
	e->cookie_key[1] = e->cookie_key[0];
	e->cookie_key[0] ^= 0x1111;
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_NONE && e->c.rx_epoch == PEER,
	       "a cookie minted under the previous secret is still good");
	ep_free(e);
	e = receiver(&cfg);
	ep_hdr_nop(e, &h, 0, PEER, PEER);
	h.cookie = ep_cookie(e, PEER, 0);
	e->cookie_key[1] = e->cookie_key[0] ^ 0x2222;
	e->cookie_key[0] ^= 0x1111;
	resets = (u32)e->c.stats[MR_ST_TX_RESETS];
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_DROP && !e->c.rx_epoch &&
	       e->c.stats[MR_ST_TX_RESETS] == resets + 1 &&
	       e->tx[e->ntx - 1].h.cookie == ep_cookie(e, PEER, 0),
	       "one minted two secrets ago is refused, and a fresh one sent");
	ep_free(e);
}

/*
 * After a quiet time, a forged SYN in epoch 0x7777 from the peer's address,
 * with the cookie for it: an on-path attacker, who saw our challenge.
 */
static void forged_syn(struct ep *e, const struct mr_conn_cfg *cfg)
{
	struct mr_hdr h;

	e->now += cfg->epoch_quiet_ns;
	ep_hdr_nop(e, &h, 1, 0x7777, 0x7777);
	h.epoch = 0x7777;
	h.syn_dsn = 0x7777;
	ep_rx(e, &h, 0);
}

/* A forged SYN pushes the live epoch out; when it returns, nothing counts twice. */
static void test_epoch_restored(void)
{
	struct mr_conn_cfg cfg;
	struct ep *e;
	struct mr_hdr h;
	struct mr_rmsg *t;
	int r1, r2;

	mr_conn_cfg_default(&cfg);
	e = receiver(&cfg);
	t = &e->qp[0].rq[0x200 % MR_MSG_WND];
	/* segments 0 and 2 of a 3 KiB WRITE land, 1 is still on its way */
	ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x200, 0, PEER, PEER, 3072, 0, 1024);
	ep_rx(e, &h, 0);
	ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x200, 2, PEER, PEER + 2, 3072, 2048,
		   1024);
	ep_rx(e, &h, 0);
	forged_syn(e, &cfg);
	tap_ok(e->c.rx_epoch == 0x7777 && e->c.old_epoch == PEER &&
	       ep_landed(e, &t->seg) == 2,
	       "a forged SYN is adopted; the displaced epoch's window is kept");
	/* the real sender, RESET, resends what it has not seen acknowledged */
	e->now += cfg.epoch_quiet_ns;
	ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x200, 2, PEER + 9, PEER + 2, 3072,
		   2048, 1024);
	h.syn_dsn = PEER;
	h.flags |= MR_F_RETX;
	r1 = ep_rx(e, &h, 0);
	tap_ok(e->c.rx_epoch == PEER && r1 == MR_RXA_DROP &&
	       e->last_rx.reason == MR_DROP_DUP && ep_landed(e, &t->seg) == 2 &&
	       e->c.stats[MR_ST_RX_EPOCH_RESTORED] == 1 && !e->c.old_epoch,
	       "the returning epoch gets its window back: a re-sent segment is a duplicate (segments landed %u)",
	       ep_landed(e, &t->seg));
	ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x200, 1, PEER + 10, PEER + 1, 3072,
		   1024, 1024);
	h.syn_dsn = PEER;
	r2 = ep_rx(e, &h, 0);
	tap_ok(r2 == MR_RXA_WRITE && e->qp[0].rq_msn == 0x201 &&
	       e->c.dsn_cum == PEER + 3,
	       "the missing segment completes the message exactly once");
	ep_free(e);

	/* a SYN DSN past the remembered window's start advances it */
	e = receiver(&cfg);
	ep_hdr_nop(e, &h, 0, PEER, PEER);
	ep_rx(e, &h, 0);
	forged_syn(e, &cfg);
	e->now += cfg.epoch_quiet_ns;
	ep_hdr_nop(e, &h, 0, PEER + 5, PEER + 5);
	h.syn_dsn = PEER + 5;
	ep_rx(e, &h, 0);
	tap_ok(e->c.rx_epoch == PEER && e->c.dsn_cum == PEER + 6,
	       "a restored window starts at the SYN DSN when that is ahead (cum %#x)",
	       e->c.dsn_cum);
	ep_free(e);
}

static void test_syn_cleared(void)
{
	struct ep *e = sender(1);
	struct mr_ack a;
	int r, i;

	e->c.syn = 1;	/* a fresh connection */
	ep_post(e, 0, MR_WR_WRITE, 4 * 1024, 1);
	ep_tx(e);
	tap_ok(e->c.syn && (e->tx[0].h.flags & MR_F_SYN) &&
	       (e->tx[3].h.flags & MR_F_SYN), "data carries SYN before any ACK");
	ep_ack_init(e, &a);
	a.ack_epoch = 999;
	r = ep_rx_ack(e, &a);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_EPOCH &&
	       e->c.syn, "an ACK for another epoch is dropped and does not clear SYN");
	ep_ack_init(e, &a);
	ep_ack_sent(e, &a, 0, 0, (u32)e->now);
	r = ep_rx_ack(e, &a);
	ep_post(e, 0, MR_WR_WRITE, 1024, 2);
	ep_tx(e);
	i = ep_last(e, MR_OP_WRITE);
	tap_ok(r == MR_RXA_NONE && !e->c.syn && i == 4 &&
	       !(e->tx[i].h.flags & MR_F_SYN),
	       "the first ACK for our epoch clears SYN on later packets");
	/* ACK without blocks handed in directly */
	{
		struct mr_hdr h;
		struct mr_rx rx;

		memset(&h, 0, sizeof(h));
		h.opcode = MR_OP_ACK;
		h.epoch = PEER;
		mr_conn_rx(&e->c, NULL, &h, NULL, 0, e->now, &rx);
		tap_ok(rx.action == MR_RXA_DROP && rx.reason == MR_DROP_BAD_ACK,
		       "an ACK header without its blocks is dropped (bad_ack)");
	}
	ep_free(e);
}

/*
 * A new sender sends only its hello until the receiver's challenge comes;
 * then its SYNs carry the cookie (protocol.rst, 7.2).
 */
static void test_challenge(void)
{
	struct ep *e = sender(2);
	struct mr_hdr h;
	struct mr_ack a;
	u32 from, i, ok = 1;
	int r;

	e->c.syn = 1;	/* a fresh connection: no cookie yet */
	e->c.cookie = 0;
	ep_post(e, 0, MR_WR_WRITE, 4 * 1024, 1);
	ep_tx(e);
	tap_ok(e->ntx == 1 && e->tx[0].h.opcode == MR_OP_PROBE &&
	       (e->tx[0].h.flags & MR_F_SYN) && !e->tx[0].h.cookie &&
	       e->tx[0].h.syn_dsn == e->c.epoch && e->tx[0].ctrl,
	       "without a cookie, a sender sends only its hello: a PROBE with SYN and cookie 0, in the control class");
	ep_tx(e);
	tap_ok(e->ntx == 1, "one hello at a time");
	/* the timers until the hello's path times out (the QP's come first) */
	for (i = 0; i < 20 && e->c.path[e->tx[0].path].una == e->tx[0].h.psn;
	     i++) {
		e->now = mr_conn_next_timer(&e->c);
		mr_conn_timer(&e->c, e->now);
	}
	ep_tx(e);
	tap_ok(e->ntx == 2 && e->tx[1].h.opcode == MR_OP_PROBE &&
	       (e->tx[1].h.flags & MR_F_SYN) && !e->tx[1].h.cookie,
	       "a hello lost to a timeout is sent again");
	memset(&h, 0, sizeof(h));
	h.opcode = MR_OP_RESET;
	h.epoch = 0xbeef0001;
	h.reset_epoch = e->c.epoch + 1;
	h.cookie = 0xabcdef0123456789ull;
	r = ep_rx(e, &h, 0);
	ep_tx(e);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_EPOCH &&
	       !e->c.cookie && e->ntx == 2,
	       "a challenge naming another epoch is dropped and teaches nothing");
	h.reset_epoch = e->c.epoch;
	r = ep_rx(e, &h, 0);
	from = e->ntx;
	ep_tx(e);
	for (i = from; i < e->ntx; i++)
		if (e->tx[i].h.opcode != MR_OP_WRITE ||
		    !(e->tx[i].h.flags & MR_F_SYN) ||
		    e->tx[i].h.cookie != 0xabcdef0123456789ull)
			ok = 0;
	tap_ok(r == MR_RXA_NONE && ok && e->ntx - from == 4 &&
	       e->c.cookie == 0xabcdef0123456789ull &&
	       e->c.inflight == 4 * (WIRE + MR_SYN_LEN),
	       "the challenge for our epoch: the data goes out with SYN and its cookie, the hello is forgotten (%u sent, inflight %u)",
	       e->ntx - from, e->c.inflight);
	ep_rx(e, &h, 0);
	from = e->ntx;
	ep_tx(e);
	tap_ok(e->ntx == from && e->c.stats[MR_ST_RX_RESETS] == 2,
	       "the same challenge again while SYN is set resends nothing");
	h.cookie = 0x1122334455667788ull;
	ep_rx(e, &h, 0);
	ok = 1;
	from = e->ntx;
	ep_tx(e);
	for (i = from; i < e->ntx; i++)
		if (e->tx[i].h.cookie != 0x1122334455667788ull)
			ok = 0;
	tap_ok(ok && e->ntx - from == 4,
	       "a new cookie (the receiver replaced its secret): everything in flight is resent with it");
	ep_ack_init(e, &a);
	ep_ack_sent(e, &a, 0, from, (u32)e->now);
	ep_ack_sent(e, &a, 1, from, (u32)e->now);
	ep_rx_ack(e, &a);
	ep_post(e, 0, MR_WR_WRITE, 1024, 2);
	from = e->ntx;
	ep_tx(e);
	tap_ok(!e->c.syn && e->ntx == from + 1 &&
	       !(e->tx[from].h.flags & MR_F_SYN),
	       "an ACK for our epoch clears SYN: no cookie on later packets");
	ep_rx(e, &h, 0);
	from = e->ntx;
	ep_tx(e);
	tap_ok(e->c.syn && e->ntx == from + 1 &&
	       (e->tx[from].h.flags & MR_F_SYN) &&
	       e->tx[from].h.cookie == 0x1122334455667788ull,
	       "a challenge after that (the receiver lost its state) sets SYN again and resends");
	ep_free(e);
}

/* ACK coalescing */

static u32 nacks(const struct ep *e)
{
	return ep_count(e, 0, MR_OP_ACK);
}

static void test_ack_coalescing(void)
{
	struct mr_conn_cfg cfg;
	struct ep *e;
	struct mr_hdr h;
	u32 i, ok = 1;

	mr_conn_cfg_default(&cfg);
	cfg.ack_every = 4;
	cfg.ack_delay_ns = 50000;
	e = receiver(&cfg);
	for (i = 0; i < 3; i++) {
		ep_hdr_nop(e, &h, 0, PEER + i, PEER + i);
		ep_rx(e, &h, 0);
		mr_conn_rx_flush(&e->c, e->now);
		if (nacks(e))
			ok = 0;
	}
	tap_ok(ok, "3 in-order packets (ack_every=4) are not acknowledged at once");
	ep_hdr_nop(e, &h, 0, PEER + 3, PEER + 3);
	ep_rx(e, &h, 0);
	mr_conn_rx_flush(&e->c, e->now);
	tap_ok(nacks(e) == 1 && e->tx[0].ack.npath == 1 &&
	       e->tx[0].ack.path[0].base == PEER + 4 &&
	       e->tx[0].ack.dsn_cum == PEER + 4 &&
	       e->tx[0].ack.ack_epoch == PEER && e->tx[0].h.epoch == 0x1234 &&
	       e->c.stats[MR_ST_TX_ACKS] == 1,
	       "the 4th packet triggers one ACK with base, dsn_cum and both epochs");
	/* delay */
	ep_hdr_nop(e, &h, 0, PEER + 4, PEER + 4);
	ep_rx(e, &h, 0);
	mr_conn_rx_flush(&e->c, e->now);
	tap_ok(nacks(e) == 1 &&
	       mr_conn_next_timer(&e->c) == e->now + cfg.ack_delay_ns,
	       "one packet: the ACK waits, timer armed at ack_delay_ns");
	mr_conn_timer(&e->c, e->now + cfg.ack_delay_ns - 1);
	tap_ok(nacks(e) == 1, "nothing 1ns before the deadline");
	mr_conn_timer(&e->c, e->now + cfg.ack_delay_ns);
	tap_ok(nacks(e) == 2 && e->tx[1].ack.npath == 1 &&
	       e->tx[1].ack.path[0].base == PEER + 5 &&
	       mr_conn_next_timer(&e->c) == e->now + 2 * cfg.ack_delay_ns,
	       "the ACK goes at the deadline; its repetition is due ack_delay_ns later");
	mr_conn_timer(&e->c, e->now + 2 * cfg.ack_delay_ns - 1);
	tap_ok(nacks(e) == 2, "no repetition 1ns before its deadline");
	mr_conn_timer(&e->c, e->now + 2 * cfg.ack_delay_ns);
	tap_ok(nacks(e) == 3 && e->tx[2].ack.npath == 1 &&
	       e->tx[2].ack.path[0].base == PEER + 5 &&
	       !memcmp(&e->tx[2].ack.path[0], &e->tx[1].ack.path[0],
		       sizeof(e->tx[1].ack.path[0])) &&
	       e->tx[2].path != e->tx[1].path &&
	       mr_conn_next_timer(&e->c) == MR_U64_MAX,
	       "the repetition: the same path block, on another path; no timer left");
	/* ACKREQ */
	ep_hdr_nop(e, &h, 0, PEER + 5, PEER + 5);
	h.flags |= MR_F_ACKREQ;
	ep_rx(e, &h, 0);
	mr_conn_rx_flush(&e->c, e->now);
	tap_ok(nacks(e) == 4, "ACKREQ: acknowledged at the next flush");
	/* a hole */
	ep_hdr_nop(e, &h, 0, PEER + 7, PEER + 7);
	ep_rx(e, &h, 0);
	mr_conn_rx_flush(&e->c, e->now);
	tap_ok(nacks(e) == 5 && e->tx[e->ntx - 1].ack.path[0].bitmap[0] == 2,
	       "a hole: acknowledged at once, bitmap shows the packet after it");
	/* a duplicate: counted, no hole, no urgency */
	ep_hdr_nop(e, &h, 0, PEER + 7, PEER + 7);
	ep_rx(e, &h, 0);
	mr_conn_rx_flush(&e->c, e->now);
	tap_ok(nacks(e) == 5, "a duplicate of a SACKed packet does not force an ACK");
	/* a probe asks for an ACK */
	memset(&h, 0, sizeof(h));
	h.opcode = MR_OP_PROBE;
	h.flags = MR_F_ACKREQ;
	h.path = 9;
	h.psn = PEER;
	ep_rx(e, &h, 0);
	mr_conn_rx_flush(&e->c, e->now);
	{
		const struct mr_ack *a = &e->tx[e->ntx - 1].ack;

		ok = 0;
		for (i = 0; i < a->npath; i++)
			if (a->path[i].path == 9 && a->path[i].base == PEER + 1)
				ok = 1;
	}
	tap_ok(nacks(e) == 6 && ok && e->c.dsn_cum == PEER + 6,
	       "a PROBE is acknowledged at once on its path and consumes no DSN");
	ep_free(e);
}

/* More than MR_ACK_MAX_QP QPs with state to report: several ACKs. */
static void test_ack_qp_blocks(void)
{
	struct ep *e = ep_new(NULL, 0x1234, PEER, 1);
	struct mr_hdr h;
	u32 i, nq = 0, ok = 1;

	for (i = 0; i < 17; i++)
		ep_qp(e, i, NULL);
	for (i = 0; i < 17; i++) {
		ep_hdr_req(e, &h, MR_OP_WRITE, i, 0x200, 0, PEER + i, PEER + i,
			   0, 0, 0);
		ep_rx(e, &h, 0);
	}
	mr_conn_rx_flush(&e->c, e->now);
	for (i = 0; i < e->ntx; i++) {
		const struct mr_ack *a = &e->tx[i].ack;
		u32 k;

		for (k = 0; k < a->nqp; k++) {
			if (a->qp[k].status != MR_QPS_OK ||
			    a->qp[k].msn != 0x201 ||
			    a->qp[k].qpn != EP_PEER_QPN(nq))
				ok = 0;
			nq++;
		}
	}
	tap_ok(ok && nacks(e) == 2 && e->tx[0].ack.nqp == MR_ACK_MAX_QP &&
	       e->tx[1].ack.nqp == 1 && e->tx[0].ack.npath == 1 &&
	       e->tx[1].ack.npath == 1 && !e->c.ack_again,
	       "17 completed QPs: an ACK with 16 QP blocks, then one with 1 repeating the path block (%u ACKs)",
	       nacks(e));
	ep_free(e);
}

/* ACKs rotate over the usable paths' source ports. */
static void test_ack_ports(void)
{
	struct mr_conn_cfg cfg;
	struct ep *e;
	struct mr_hdr h;
	u32 i, ok = 1;

	mr_conn_cfg_default(&cfg);
	cfg.npaths = 3;
	e = receiver(&cfg);
	e->c.path[1].state = MR_PATH_DEAD;
	for (i = 0; i < 6; i++) {
		ep_hdr_nop(e, &h, 0, PEER + i, PEER + i);
		h.flags |= MR_F_ACKREQ;
		ep_rx(e, &h, 0);
		mr_conn_rx_flush(&e->c, e->now);
	}
	for (i = 0; i < e->ntx; i++) {
		u32 want = i % 2 ? 2 : 0;

		if (e->tx[i].path != want ||
		    e->tx[i].sport != e->c.path[want].sport)
			ok = 0;
	}
	tap_ok(ok && e->ntx == 6,
	       "ACKs alternate over the usable paths' ports, skipping a dead one");
	ep_free(e);
}

/*
 * With routes known, consecutive control packets take different next hops
 * even where neighbouring paths share one, so that an ACK and its
 * repetition never cross the same failed plane.
 */
static void test_ack_routes(void)
{
	struct mr_conn_cfg cfg;
	struct ep *e;
	struct mr_hdr h;
	u32 i, ok = 1, first_path;

	mr_conn_cfg_default(&cfg);
	cfg.npaths = 8;
	e = receiver(&cfg);
	for (i = 0; i < 8; i++)		/* paths 0,1 on hop 1; 2,3 on 2 ... */
		e->c.path[i].route = 1 + i / 2;
	for (i = 0; i < 8; i++) {
		ep_hdr_nop(e, &h, 0, PEER + i, PEER + i);
		h.flags |= MR_F_ACKREQ;
		ep_rx(e, &h, 0);
		mr_conn_rx_flush(&e->c, e->now);
	}
	for (i = 1; i < e->ntx; i++)
		if (e->c.path[e->tx[i].path].route ==
		    e->c.path[e->tx[i - 1].path].route)
			ok = 0;
	tap_ok(ok && e->ntx == 8,
	       "routes known: no two consecutive ACKs on the same next hop");
	/* The repetition of the last ACK, too. */
	mr_conn_timer(&e->c, e->now + cfg.ack_delay_ns);
	tap_ok(e->ntx == 9 &&
	       e->c.path[e->tx[8].path].route != e->c.path[e->tx[7].path].route,
	       "the repetition leaves the next hop of the ACK it repeats");
	/* A single usable next hop: ACKs still go. */
	for (i = 0; i < 8; i++)
		e->c.path[i].route = 5;
	first_path = e->ntx;
	for (i = 8; i < 10; i++) {
		ep_hdr_nop(e, &h, 0, PEER + i, PEER + i);
		h.flags |= MR_F_ACKREQ;
		ep_rx(e, &h, 0);
		mr_conn_rx_flush(&e->c, e->now);
	}
	tap_ok(e->ntx == first_path + 2 &&
	       e->tx[first_path].path != e->tx[first_path + 1].path,
	       "one next hop for all: ACKs still rotate over the paths");
	ep_free(e);
}

/* Congestion control */

/* Send what the window allows and acknowledge all of it after @rtt. */
static u32 round_trip(struct ep *e, u64 rtt, u16 *ce, u16 *rx, u32 ce_pkts)
{
	struct mr_ack a;
	u32 from = e->ntx, n;

	ep_tx(e);
	n = e->ntx - from;
	e->now += rtt;
	ep_ack_init(e, &a);
	ep_ack_sent(e, &a, 0, from, (u32)(e->now - rtt));
	*rx += (u16)n;
	*ce += (u16)mr_min32(ce_pkts, n);
	a.path[0].ce_cnt = *ce;
	a.path[0].rx_cnt = *rx;
	ep_rx_ack(e, &a);
	return n;
}

static void test_cc(void)
{
	struct ep *e = sender(1);
	struct mr_conn *c = &e->c;
	u16 ce = 0, rx = 0;
	u32 w0, w1, n;

	ep_post(e, 0, MR_WR_WRITE, 64u << 20, 1);
	w0 = c->wnd;
	n = round_trip(e, 20 * US, &ce, &rx, 0);
	tap_ok(w0 == c->cfg.init_window && n == 61 &&
	       c->wnd == w0 + n * WIRE && c->slow_start,
	       "slow start: a clean round adds the bytes acknowledged (%u -> %u)",
	       w0, c->wnd);
	w1 = c->wnd;
	n = round_trip(e, 20 * US, &ce, &rx, 1000);
	tap_ok(!c->slow_start && c->alpha == 64 &&
	       c->wnd == w1 - w1 / 32,
	       "a round with CE ends slow start, cuts by alpha/2 (alpha=%u, %u -> %u)",
	       c->alpha, w1, c->wnd);
	w1 = c->wnd;
	round_trip(e, 20 * US, &ce, &rx, 0);
	tap_ok(c->wnd == w1 + c->cfg.ai_bytes && c->alpha == 60,
	       "a clean round after slow start adds ai_bytes; alpha decays (%u -> %u)",
	       w1, c->wnd);
	/* a whole window times out, the round trip at its minimum */
	w1 = c->wnd;
	ep_tx(e);
	e->now = mr_path_next_timer(c);
	mr_conn_timer(c, e->now);
	tap_ok(c->wnd == w1 && c->stats[MR_ST_RETX_RTO] > 0,
	       "an RTO without a grown round trip (random loss) keeps the window (%u)",
	       c->wnd);
	ep_standing_queue(c);
	ep_tx(e);
	e->now = mr_path_next_timer(c);
	mr_conn_timer(c, e->now);
	tap_ok(c->wnd == w1 / 2,
	       "an RTO with a standing queue halves the window (%u -> %u)", w1,
	       c->wnd);
	w1 = c->wnd;
	ep_tx(e);
	e->now = mr_path_next_timer(c);
	mr_conn_timer(c, e->now);
	tap_ok(c->wnd == w1,
	       "a second timeout in the same round does not cut again");
	/* the round ends; the same path backs off and times out again */
	c->round_cut = 0;
	ep_tx(e);
	e->now = mr_path_next_timer(c);
	mr_conn_timer(c, e->now);
	tap_ok(c->wnd == w1 && c->path[0].timeouts == 4,
	       "a backed-off timeout of the same series does not cut, even in a new round (%u, timeouts %u)",
	       c->wnd, c->path[0].timeouts);
	/* the path delivers again: its next series may cut */
	round_trip(e, 20 * US, &ce, &rx, 0);
	w1 = c->wnd;
	ep_standing_queue(c);
	ep_tx(e);
	e->now = mr_path_next_timer(c);
	mr_conn_timer(c, e->now);
	tap_ok(c->path[0].timeouts == 1 && c->wnd == mr_max32(w1 / 2, c->cfg.min_window),
	       "after progress, the path's next series cuts again (%u -> %u)",
	       w1, c->wnd);
	ep_free(e);
}

/* One round of @c's window ends, no CE, with these smoothed round trips. */
static void unmarked_round(struct mr_conn *c, u32 srtt0, u32 srtt1)
{
	c->path[0].min_rtt = 20 * US;
	c->path[1].min_rtt = 25 * US;
	c->path[0].srtt = srtt0;
	c->path[1].srtt = srtt1;
	c->round_peak = c->wnd;
	mr_conn_cc_on_ack(c, c->round_target, 16, 0, 0);
}

static void test_unmarked_queue(void)
{
	struct ep *e = sender(2);
	struct mr_conn *c = &e->c;
	u32 deep = 8 * 20 * US + c->cfg.rto_min_ns / 2, w;

	w = c->wnd;
	unmarked_round(c, deep + 1, deep + 1);
	tap_ok(c->wnd == w / 2 && !c->slow_start,
	       "no CE, every path's srtt > 8 x min + rto_min/2: halve, end slow start (%u -> %u)",
	       w, c->wnd);
	w = c->wnd;
	unmarked_round(c, deep, 2 * deep);
	tap_ok(c->wnd == w + c->cfg.ai_bytes,
	       "the fastest path at the threshold: no cut (%u -> %u)", w, c->wnd);
	w = c->wnd;
	unmarked_round(c, 30 * US, 4 * deep);
	tap_ok(c->wnd == w + c->cfg.ai_bytes,
	       "a queue on one path only leaves the window to the paths (%u -> %u)",
	       w, c->wnd);
	c->path[0].state = MR_PATH_DEAD;
	w = c->wnd;
	unmarked_round(c, 30 * US, 4 * deep);
	tap_ok(c->wnd == w / 2,
	       "a dead path's short round trip does not count (%u -> %u)", w,
	       c->wnd);
	ep_free(e);
}

/*
 * A deep queue that marks, a window at its minimum: rounds of two packets
 * often draw no mark by chance. Such a round is not evidence of a queue
 * that does not mark; only 16 packets in a row without CE are.
 */
static void test_unmarked_small_rounds(void)
{
	struct ep *e = sender(2);
	struct mr_conn *c = &e->c;
	u32 deep = 8 * 20 * US + c->cfg.rto_min_ns / 2, w, i;
	int grew = 1;

	c->path[0].min_rtt = 20 * US;
	c->path[1].min_rtt = 25 * US;
	c->path[0].srtt = 2 * deep;
	c->path[1].srtt = 2 * deep;
	c->slow_start = 0;
	c->wnd = c->cfg.min_window;
	c->round_target = c->wnd;
	for (i = 0; i < 4; i++) {
		/* a marked round, then a clean one */
		c->round_peak = c->wnd;
		mr_conn_cc_on_ack(c, c->round_target, 2, 1, 0);
		w = c->wnd;
		c->round_peak = c->wnd;
		mr_conn_cc_on_ack(c, c->round_target, 2, 0, 0);
		if (c->wnd <= w)
			grew = 0;
	}
	tap_ok(grew && c->clean_pkts == 2,
	       "a deep marking queue: a clean 2-packet round grows the window (%u)",
	       c->wnd);
	c->wnd = 4 * c->cfg.min_window;
	c->round_target = c->wnd;
	for (i = 0; i < 6; i++) {
		c->round_peak = c->wnd;
		mr_conn_cc_on_ack(c, c->round_target, 2, 0, 0);
	}
	w = c->wnd;
	tap_ok(c->clean_pkts == 14 && w > 4 * c->cfg.min_window,
	       "14 clean packets after a mark are not enough to judge (%u)", w);
	c->round_peak = c->wnd;
	mr_conn_cc_on_ack(c, c->round_target, 2, 0, 0);
	tap_ok(c->wnd == mr_max32(w / 2, c->cfg.min_window),
	       "16 packets without CE behind a deep queue: halve (%u -> %u)", w,
	       c->wnd);
	ep_free(e);
}

static void test_hint(void)
{
	struct ep *e = sender(1);
	struct mr_conn *c = &e->c;
	struct mr_ack a;
	u16 ce = 0, rx = 0;
	u32 cap;

	ep_post(e, 0, MR_WR_WRITE, 64u << 20, 1);
	round_trip(e, 20 * US, &ce, &rx, 0);	/* srtt = 20 us */
	ep_ack_init(e, &a);
	a.rate_hint = 1000;			/* 1 Gbit/s */
	ep_rx_ack(e, &a);
	cap = 1000 * 20000 / 8000;
	cap += cap / 4;
	tap_ok(c->rate_hint == 1000 && c->wnd == cap,
	       "the receiver's hint caps the window at hint x RTT x 1.25 (wnd=%u)",
	       c->wnd);
	ep_ack_init(e, &a);
	a.rate_hint = 10;
	ep_rx_ack(e, &a);
	tap_ok(c->wnd == c->cfg.min_window,
	       "never below min_window (wnd=%u)", c->wnd);
	ep_ack_init(e, &a);
	a.rate_hint = 2000;
	ep_rx_ack(e, &a);
	c->slow_start = 0;
	while (c->inflight)	/* settle what is in flight */
		round_trip(e, 20 * US, &ce, &rx, 0);
	{
		u32 w = c->wnd, want;

		round_trip(e, 20 * US, &ce, &rx, 0);
		want = 2000 * 20000 / 8000;
		want += want / 4;
		tap_ok(c->wnd == mr_min32(2 * w, want),
		       "below a grown hint a clean round doubles toward it (%u -> %u)",
		       w, c->wnd);
	}
	ep_ack_init(e, &a);
	a.rate_hint = 0;
	ep_rx_ack(e, &a);
	tap_ok(c->rate_hint == 0, "hint 0 removes the cap");
	ep_free(e);
}

static void test_pacing(void)
{
	struct mr_conn_cfg cfg;
	struct ep *e;
	struct mr_ack a;
	u32 n1, n2;
	u64 gap = (u64)WIRE * 8000 / 1000;	/* ns per packet at 1 Gbit/s */

	mr_conn_cfg_default(&cfg);
	cfg.npaths = 1;
	cfg.pacing = 1;
	cfg.pace_burst = 10 * WIRE;
	e = ep_new(&cfg, 1000, PEER, 7);
	ep_qp(e, 0, NULL);
	ep_ack_init(e, &a);
	a.rate_hint = 1000;
	ep_rx_ack(e, &a);
	ep_post(e, 0, MR_WR_WRITE, 1u << 20, 1);
	n1 = (u32)ep_tx(e);
	tap_ok(n1 == 11, "paced: a burst of pace_burst (+1 packet) goes back to back (%u)",
	       n1);
	tap_ok(mr_conn_next_timer(&e->c) == e->c.next_tx &&
	       e->c.next_tx == e->now + gap,
	       "the timer is armed for the next packet, bytes x 8000 / Mbit/s later");
	e->now += gap - 1;
	n2 = (u32)ep_tx(e);
	e->now += 1;
	tap_ok(n2 == 0 && ep_tx(e) == 1, "one more packet exactly one gap later");
	e->now += 3 * gap;
	tap_ok(ep_tx(e) == 3, "three gaps later, three packets");
	ep_free(e);

	/* blocked by the segment table, not by pacing: no timer in the past */
	cfg.seg_wnd = 16;
	cfg.pace_burst = 64 * 1024;
	e = ep_new(&cfg, 1000, PEER, 7);
	ep_qp(e, 0, NULL);
	ep_ack_init(e, &a);
	a.rate_hint = 100000;
	ep_rx_ack(e, &a);
	ep_post(e, 0, MR_WR_WRITE, 1u << 20, 1);
	ep_tx(e);
	tap_ok(e->ntx == 16 && mr_conn_tx_pending(&e->c) &&
	       mr_conn_next_timer(&e->c) > e->now,
	       "a paced sender waiting for its segment table arms no timer in the past");
	ep_free(e);
}

/* Windows, segment table, xmit failures */

static void test_path_split(void)
{
	struct ep *e = sender(4);
	u64 sum = 0;
	u32 i;

	e->c.path[1].weight = MR_WEIGHT_ONE / 4;
	e->c.path[2].state = MR_PATH_DEAD;
	mr_paths_rebalance(&e->c);
	for (i = 0; i < 4; i++)
		sum += e->c.path[i].cwnd;
	tap_ok(e->c.path[2].cwnd == 0 &&
	       e->c.path[1].cwnd * 4 + 4 >= e->c.path[0].cwnd &&
	       e->c.path[1].cwnd * 4 <= e->c.path[0].cwnd &&
	       e->c.path[0].cwnd == e->c.path[3].cwnd && sum <= e->c.wnd &&
	       sum > e->c.wnd - 4,
	       "the window splits over usable paths by weight (%u/%u/%u/%u)",
	       e->c.path[0].cwnd, e->c.path[1].cwnd, e->c.path[2].cwnd,
	       e->c.path[3].cwnd);
	ep_free(e);
}

/*
 * Which path a packet takes: a retransmission leaves the path that lost it
 * while another path has room, and goes back to it only when none has.
 */
static void test_pick_path(void)
{
	struct ep *e = sender(4);
	struct mr_path *p0 = &e->c.path[0];

	ep_post(e, 0, MR_WR_WRITE, 100, 1);
	ep_tx(e);
	tap_ok(e->ntx == 1 && e->tx[0].h.path == 0,
	       "all paths idle and equal: the lowest id (path %u)",
	       e->tx[0].h.path);
	/* The packet on path 0 times out: path 0 loses half its weight. */
	e->now = p0->last_progress + mr_path_rto(&e->c, p0);
	mr_conn_timer(&e->c, e->now);
	ep_tx(e);
	tap_ok(p0->timeouts == 1 && e->ntx == 2 &&
	       (e->tx[1].h.flags & MR_F_RETX) && e->tx[1].h.path != 0,
	       "a timed-out packet is retransmitted on another path (path %u)",
	       e->tx[1].h.path);
	ep_free(e);

	/* Only the path that lost it has room: it goes there. */
	e = sender(2);
	ep_post(e, 0, MR_WR_WRITE, 100, 1);
	ep_tx(e);
	p0 = &e->c.path[0];
	e->now = p0->last_progress + mr_path_rto(&e->c, p0);
	mr_conn_timer(&e->c, e->now);
	e->c.path[1].nxt += MR_PATH_WND;	/* path 1's PSN window is full */
	ep_tx(e);
	tap_ok(e->ntx == 2 && e->tx[1].h.path == 0 &&
	       (e->tx[1].h.flags & MR_F_RETX),
	       "with no other path open, it goes back on the path that lost it");
	ep_free(e);
}

static void test_window_limits(void)
{
	struct mr_conn_cfg cfg;
	struct ep *e;

	e = sender(2);
	ep_post(e, 0, MR_WR_WRITE, 1u << 20, 1);
	ep_tx(e);
	tap_ok(e->c.inflight >= e->c.wnd &&
	       e->c.inflight < e->c.wnd + WIRE && mr_conn_tx_pending(&e->c),
	       "sending stops once inflight reaches the window (%u/%u)",
	       e->c.inflight, e->c.wnd);
	ep_free(e);

	mr_conn_cfg_default(&cfg);
	cfg.seg_wnd = 16;
	cfg.npaths = 1;
	e = ep_new(&cfg, 1000, PEER, 7);
	ep_qp(e, 0, NULL);
	ep_post(e, 0, MR_WR_WRITE, 1u << 20, 1);
	ep_tx(e);
	tap_ok(e->ntx == 16 && e->c.dsn_nxt - e->c.dsn_una == 16,
	       "seg_wnd=16 bounds the DSNs in flight");
	ep_free(e);
}

/* The sending host's shared window (protocol.rst, section 7.25). */
static void test_host_window(void)
{
	struct ep_host host = { 0 };
	struct ep *a, *b;
	struct mr_ack ack;
	u32 wnd, ia;

	a = sender(2);
	a->host = &host;
	ep_post(a, 0, MR_WR_WRITE, 1u << 20, 1);
	ep_tx(a);
	wnd = a->c.wnd;
	tap_ok(a->c.inflight >= wnd && a->c.inflight < wnd + WIRE &&
	       host.inflight == a->c.inflight && host.calls,
	       "no target: the window alone limits, and the host's count follows (%u/%u, host %lld)",
	       a->c.inflight, wnd, (long long)host.inflight);

	host.target = 16u << 20;
	ep_tx(a);
	tap_ok(a->c.inflight >= 2 * wnd && a->c.inflight < 2 * wnd + WIRE &&
	       a->c.wnd == wnd && host.inflight == a->c.inflight,
	       "room on the host: the window borrows at most itself again (%u/%u)",
	       a->c.inflight, wnd);
	tap_ok(a->c.path[0].inflight > a->c.path[0].cwnd &&
	       a->c.path[1].inflight > a->c.path[1].cwnd,
	       "each path borrows in proportion to its share (%u/%u, %u/%u)",
	       a->c.path[0].inflight, a->c.path[0].cwnd,
	       a->c.path[1].inflight, a->c.path[1].cwnd);

	/* A second connection of the host finds only the room left. */
	host.target = (u64)a->c.inflight + wnd / 2;
	b = sender(2);
	b->host = &host;
	ep_post(b, 0, MR_WR_WRITE, 1u << 20, 1);
	ep_tx(b);
	tap_ok(b->c.inflight >= wnd && b->c.inflight < wnd + WIRE &&
	       host.inflight == (s64)a->c.inflight + b->c.inflight,
	       "its own bytes use up the room left on the host: the second connection stays within its window (%u/%u)",
	       b->c.inflight, b->c.wnd);

	/* Acknowledged bytes leave the host's count at once. */
	ia = a->c.inflight;
	ep_ack_init(a, &ack);
	ack.dsn_cum = a->c.dsn_nxt;
	ep_ack_path(&ack, 0, a->c.path[0].nxt);
	ep_ack_path(&ack, 1, a->c.path[1].nxt);
	ep_rx_ack(a, &ack);
	tap_ok(a->c.inflight < ia &&
	       host.inflight == (s64)a->c.inflight + b->c.inflight,
	       "an ACK takes its bytes off the host's count (%u -> %u, host %lld)",
	       ia, a->c.inflight, (long long)host.inflight);

	mr_conn_host_detach(&a->c);
	mr_conn_host_detach(&b->c);
	tap_ok(host.inflight == 0,
	       "detached connections leave nothing counted (%lld)",
	       (long long)host.inflight);
	ep_free(a);
	ep_free(b);
}

static void test_dsn_cum_releases(void)
{
	struct ep *e = sender(2);
	struct mr_ack a;

	ep_post(e, 0, MR_WR_WRITE, 10 * 1024, 1);
	ep_tx(e);
	ep_ack_init(e, &a);
	a.dsn_cum = 1005;
	ep_rx_ack(e, &a);
	tap_ok(e->c.dsn_una == 1005 && e->c.inflight == 10 * WIRE,
	       "ACK.dsn_cum releases the segments below it (slots stay until SACKed)");
	ep_ack_init(e, &a);
	a.dsn_cum = e->c.dsn_nxt + 1;
	ep_rx_ack(e, &a);
	tap_ok(e->c.dsn_una == 1005,
	       "a dsn_cum beyond anything sent is ignored");
	ep_free(e);
}

static void test_xmit_fail(void)
{
	struct ep *e = sender(1);
	u32 n;

	ep_post(e, 0, MR_WR_WRITE, 4 * 1024, 1);
	e->xmit_ret = MR_XMIT_BUSY;
	n = (u32)ep_tx(e);
	tap_ok(n == 0 && mr_conn_tx_pending(&e->c) &&
	       e->c.dsn_nxt - e->c.dsn_una == 1 && !e->c.inflight,
	       "xmit busy: nothing sent, the segment waits with its DSN");
	e->xmit_ret = 0;
	n = (u32)ep_tx(e);
	tap_ok(n == 4 && e->tx[0].h.dsn == 1000 && e->tx[3].h.dsn == 1003 &&
	       !(e->tx[0].h.flags & MR_F_RETX),
	       "once xmit accepts, the same DSNs go out in order");
	ep_free(e);

	e = sender(1);
	ep_post(e, 0, MR_WR_WRITE, 4 * 1024, 1);
	e->xmit_gone = 1;
	n = (u32)ep_tx(e);
	tap_ok(n == 1 && e->tx[0].h.opcode == MR_OP_NOP &&
	       e->qp[0].state == MR_QP_ERR &&
	       e->err_status[0] == MR_WC_LOC_PROT_ERR && e->ncqe == 1 &&
	       e->cqe[0].cqe.status == MR_WC_LOC_PROT_ERR,
	       "xmit gone: the segment becomes a NOP, the QP fails with LOC_PROT_ERR");
	ep_free(e);
}

/* Configuration */

static void test_cfg(void)
{
	struct mr_conn_cfg d, c;
	struct mr_env_ops no_cookie;
	struct mr_conn conn;
	struct mr_seg segs[16];
	int bad = 0, n = 0;

	mr_conn_cfg_default(&d);
	tap_ok(mr_conn_cfg_check(&d) == 0, "the default configuration is valid");
#define BAD(stmt) do { c = d; stmt; n++; if (!mr_conn_cfg_check(&c)) { \
		bad++; tap_diag("accepted: %s", #stmt); } } while (0)
#define GOOD(stmt) do { c = d; stmt; n++; if (mr_conn_cfg_check(&c)) { \
		bad++; tap_diag("rejected: %s", #stmt); } } while (0)
	BAD(c.npaths = 0);
	BAD(c.npaths = MR_MAX_PATHS + 1);
	GOOD(c.npaths = MR_MAX_PATHS);
	BAD(c.seg_wnd = 8);
	BAD(c.seg_wnd = 2 * MR_DSN_WND);
	BAD(c.seg_wnd = 100);
	GOOD(c.seg_wnd = MR_DSN_WND);
	GOOD(c.seg_wnd = 16);
	BAD(c.mtu = 255);
	BAD(c.mtu = MR_MAX_PAYLOAD + 1);
	GOOD(c.mtu = MR_MAX_PAYLOAD);
	BAD(c.min_window = 0);
	BAD(c.min_window = c.max_window + 1);
	BAD(c.init_window = c.min_window - 1);
	BAD(c.init_window = c.max_window + 1);
	BAD(c.max_window = 0xffffffffu);
	BAD(c.max_window = (1u << 30) + 1);
	GOOD(c.max_window = 1u << 30);
	BAD(c.ecn_shift = 0);
	BAD(c.ecn_shift = 11);
	BAD(c.rto_min_ns = 0);
	BAD(c.rto_min_ns = c.rto_max_ns + 1);
	BAD(c.rto_init_ns = 0);
	BAD(c.ack_every = 0);
	BAD(c.reorder_thresh = 0);
	BAD(c.reorder_thresh = MR_PATH_WND);
	GOOD(c.reorder_thresh = 1);
	BAD(c.dead_after = 0);
	BAD(c.dead_after = 256);
	GOOD(c.dead_after = 255);
	BAD(c.pacing = 2);
	GOOD(c.pacing = 1);
	BAD(c.probe_ns = 0);
	BAD(c.msg_ack_ns = 0);
	BAD(c.repick_alpha = 1025);
	GOOD(c.repick_alpha = 0);
	BAD(c.sport_min = 0);
	BAD(c.sport_min = 2000; c.sport_max = 1999);
	GOOD(c.sport_min = 2000; c.sport_max = 2000);
#undef BAD
#undef GOOD
	tap_ok(!bad, "mr_conn_cfg_check rejects each invalid field, accepts the edges (%d cases)",
	       n);

	c = d;
	c.seg_wnd = 16;
	no_cookie = h_ops;
	no_cookie.cookie = NULL;
	tap_ok(mr_conn_init(&conn, &c, segs, &h_ops, NULL, 0, 1, 0) < 0 &&
	       mr_conn_init(&conn, &c, NULL, &h_ops, NULL, 1, 1, 0) < 0 &&
	       mr_conn_init(&conn, &c, segs, NULL, NULL, 1, 1, 0) < 0 &&
	       mr_conn_init(&conn, &c, segs, &no_cookie, NULL, 1, 1, 0) < 0 &&
	       mr_conn_init(&conn, &c, segs, &h_ops, NULL, 1, 1, 0) == 0,
	       "mr_conn_init rejects epoch 0, no segment table, no ops, no cookie callback");
}

static void test_reconfigure(void)
{
	struct ep *e = sender(2);
	struct mr_conn_cfg c = e->c.cfg;

	c.max_window = 32 * 1024;
	c.init_window = 32 * 1024;
	tap_ok(mr_conn_reconfigure(&e->c, &c) == 0 && e->c.wnd == 32 * 1024 &&
	       e->c.path[0].cwnd == 16 * 1024 &&
	       e->c.round_target <= e->c.wnd,
	       "reconfigure lowers max_window: the window and path shares follow");
	c.min_window = 48 * 1024;
	c.max_window = 64 * 1024;
	c.init_window = 48 * 1024;
	tap_ok(mr_conn_reconfigure(&e->c, &c) == 0 && e->c.wnd == 48 * 1024,
	       "raising min_window raises the window");
	c = e->c.cfg;
	c.npaths = 3;
	tap_ok(mr_conn_reconfigure(&e->c, &c) < 0 && e->c.cfg.npaths == 2,
	       "npaths cannot change on a live connection");
	c = e->c.cfg;
	c.seg_wnd = 512;
	tap_ok(mr_conn_reconfigure(&e->c, &c) < 0, "nor seg_wnd");
	c = e->c.cfg;
	c.ack_every = 0;
	tap_ok(mr_conn_reconfigure(&e->c, &c) < 0 && e->c.cfg.ack_every,
	       "an invalid configuration is refused and changes nothing");
	c = e->c.cfg;
	c.reorder_thresh = 1;
	c.ack_every = 2;
	tap_ok(mr_conn_reconfigure(&e->c, &c) == 0 &&
	       e->c.cfg.reorder_thresh == 1 && e->c.cfg.ack_every == 2,
	       "tunables change on a live connection");
	ep_free(e);
}

static void test_rx_rate_idle(void)
{
	struct ep *e = receiver(NULL);
	struct mr_hdr h;
	u32 rate, ce, i;

	mr_conn_rx_rate(&e->c, e->now, NULL);
	for (i = 0; i < 10; i++) {
		u32 plen = 1000 - mr_wire_hlen(MR_OP_WRITE, MR_F_SYN);

		ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x200 + i, 0, PEER + i,
			   PEER + i, plen, 0, plen);
		ep_rx(e, &h, i < 3);
	}
	e->now += 80 * US;	/* 10 x 1000 bytes in 80 us = 1000 Mbit/s */
	rate = mr_conn_rx_rate(&e->c, e->now, &ce);
	tap_ok(rate == 1000 && ce == 300,
	       "arrival rate and CE share since the last call (%u Mbit/s, %u permille)",
	       rate, ce);
	rate = mr_conn_rx_rate(&e->c, e->now + 1 * MS, &ce);
	tap_ok(rate == 0 && ce == 0, "the meter restarts at each call");
	ep_free(e);

	e = sender(1);
	tap_ok(mr_conn_idle(&e->c), "a fresh connection is idle");
	ep_post(e, 0, MR_WR_WRITE, 1024, 1);
	tap_ok(!mr_conn_idle(&e->c), "a posted request makes it busy");
	ep_tx(e);
	{
		struct mr_ack a;

		ep_ack_init(e, &a);
		ep_ack_sent(e, &a, 0, 0, (u32)e->now);
		ep_ack_qp(&a, MR_QPS_OK, EP_QPN(0), 0, 0x101, 0);
		ep_rx_ack(e, &a);
	}
	tap_ok(mr_conn_idle(&e->c) && e->ncqe == 1 && e->cqe[0].cqe.status == MR_WC_OK,
	       "acknowledged and completed: idle again");
	ep_free(e);
}

/* Exactly-once over a link that duplicates and reorders. */
static void test_dup_link(void)
{
	struct h_net *n = h_net_new(NULL, 4u << 20, 5, 0x11, 0x22);
	u32 i;
	int ok;

	n->link[0].dup_ppm = 200000;
	n->link[0].reorder_ppm = 200000;
	n->link[0].reorder_ns = 30000;
	n->link[1].dup_ppm = 200000;
	h_connect(n, 0, 1, 2);
	for (i = 0; i < (1u << 20); i++)
		n->host[0].mem[i] = (u8)(i * 7 + (i >> 9));
	h_post(n, 0, 0, MR_WR_WRITE, 0, 1u << 20, 2u << 20, 0);
	ok = h_run(n, 10000 * MS) == 0;
	tap_ok(ok && !memcmp(n->host[0].mem, n->host[1].mem + (2u << 20),
			     1u << 20),
	       "1 MiB WRITE over a link duplicating and reordering 20%%: intact");
	tap_ok(n->host[1].conn.stats[MR_ST_RX_PLACED] == 1024 &&
	       n->host[1].conn.drops[MR_DROP_DUP] > 50,
	       "each of the 1024 segments placed exactly once (%llu placed, %llu duplicates dropped)",
	       (unsigned long long)n->host[1].conn.stats[MR_ST_RX_PLACED],
	       (unsigned long long)n->host[1].conn.drops[MR_DROP_DUP]);
	h_net_free(n);
}

int main(void)
{
	tap_start();
	test_exactly_once();
	test_dsn_window();
	test_nop();
	test_epoch();
	test_epoch_restored();
	test_syn_cleared();
	test_challenge();
	test_ack_coalescing();
	test_ack_qp_blocks();
	test_ack_ports();
	test_ack_routes();
	test_cc();
	test_unmarked_queue();
	test_unmarked_small_rounds();
	test_hint();
	test_pacing();
	test_path_split();
	test_pick_path();
	test_window_limits();
	test_host_window();
	test_dsn_cum_releases();
	test_xmit_fail();
	test_cfg();
	test_reconfigure();
	test_rx_rate_idle();
	test_dup_link();
	return tap_done();
}
