// SPDX-License-Identifier: GPL-2.0-only
/*
 * The receive side's invariants against a peer that breaks the rules
 * (core/resp.c; protocol.rst, section 7.13), with the test playing the peer
 * (endpoint.c): receives are consumed in SSN order, each by one message,
 * whatever SSNs arrive, and a peer that breaks that fails its QP (only
 * that one) with a counter that says why; a message completes when each
 * of its segments has landed, once, whatever duplicates arrive under other
 * DSNs, whether it is a SEND, a WRITE or a READ's response; the segment
 * maps' overflow stays within its bounds and is given back. Honest senders,
 * in any order, are never refused.
 */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "endpoint.h"
#include "harness.h"
#include "internal.h"

#define PEER	0xabc00000u
#define MS	1000000ull
#define SEC	1000000000ull

/* The DSN and the path 0 PSN of the next packet the peer sends. */
static u32 g_dsn, g_psn;

static struct ep *responder(u32 nqps)
{
	struct ep *e = ep_new(NULL, 0x1234, PEER, 1);
	u32 i;

	for (i = 0; i < nqps; i++) {
		ep_qp(e, i, NULL);
		e->recv_posted[i] = 1000;
	}
	e->recv_len = 1 << 20;
	g_dsn = PEER;
	g_psn = PEER;
	return e;
}

#define WRITE_IMM	0x101	/* a WRITE with immediate: consumes a receive */

/* A request segment from the peer with DSN @dsn; @ssn if it has one. */
static int seg_at(struct ep *e, u16 op, u32 qp, u32 msn, u32 len, u32 off,
		  u32 plen, u32 ssn, u32 dsn)
{
	struct mr_hdr h;

	ep_hdr_req(e, &h, op == WRITE_IMM ? MR_OP_WRITE : (u8)op, qp, msn, 0,
		   g_psn++, dsn, len, off, plen);
	if (op == WRITE_IMM) {
		h.flags |= MR_F_IMM;
		h.imm = 0xfeed;
	}
	if (op == MR_OP_SEND || op == WRITE_IMM)
		h.ssn = ssn;
	return ep_rx(e, &h, 0);
}

/* The same with the next DSN. */
static int seg(struct ep *e, u16 op, u32 qp, u32 msn, u32 len, u32 off,
	       u32 plen, u32 ssn)
{
	return seg_at(e, op, qp, msn, len, off, plen, ssn, g_dsn++);
}

/* Receive completions of QP @i since completion @from. */
static u32 nrecv(const struct ep *e, u32 i, u32 from)
{
	u32 k, n = 0;

	for (k = from; k < e->ncqe; k++)
		if (e->cqe[k].qp == &e->qp[i] &&
		    (e->cqe[k].cqe.opcode == MR_WC_RECV ||
		     e->cqe[k].cqe.opcode == MR_WC_RECV_WRITE_IMM))
			n++;
	return n;
}

static u64 cookie_of(u32 i, u32 ssn)
{
	return 0x10000000ull * (i + 1) + ssn;
}

/*
 * QP @i's receive completions are for SSNs 0, 1, 2, ... in that order,
 * each once, successful ones first; returns how many, or -1.
 */
static int recv_in_order(const struct ep *e, u32 i)
{
	u32 k, n = 0;

	for (k = 0; k < e->ncqe; k++) {
		const struct mr_cqe *c = &e->cqe[k].cqe;

		if (e->cqe[k].qp != &e->qp[i] ||
		    (c->opcode != MR_WC_RECV &&
		     c->opcode != MR_WC_RECV_WRITE_IMM))
			continue;
		if (c->cookie != cookie_of(i, n))
			return -1;
		n++;
	}
	return (int)n;
}

/* The QP block of the last ACK that reported QP @i, or NULL. */
static const struct mr_ack_qp *last_block(struct ep *e, u32 i)
{
	int k, j;

	mr_conn_rx_flush(&e->c, e->now);
	for (k = (int)e->ntx - 1; k >= 0; k--) {
		const struct mr_ack *a = &e->tx[k].ack;

		if (e->tx[k].h.opcode != MR_OP_ACK)
			continue;
		for (j = a->nqp - 1; j >= 0; j--)
			if (a->qp[j].qpn == EP_PEER_QPN(i))
				return &a->qp[j];
	}
	return NULL;
}

/* ---------------------------------------------------------------- SSNs */

/*
 * The trigger: with one receive posted, the first segment of a
 * two-segment SEND (SSN 0), a one-segment SEND with SSN 0 too, then the
 * first SEND's second segment. Without the check both SENDs completed on
 * receive 0.
 */
static void test_ssn_duplicate(void)
{
	struct ep *e = responder(2);
	const struct mr_ack_qp *b;
	int r1, r2, r3, r4;

	e->recv_posted[0] = 1;
	r1 = seg(e, MR_OP_SEND, 0, 0x200, 2048, 0, 1024, 0);
	r2 = seg(e, MR_OP_SEND, 0, 0x201, 100, 0, 100, 0);
	tap_ok(r1 == MR_RXA_SEND && r2 == MR_RXA_DROP &&
	       e->last_rx.reason == MR_DROP_SSN && e->c.drops[MR_DROP_SSN] == 1,
	       "a second SEND with the SSN of one in progress is dropped as ssn");
	r3 = seg(e, MR_OP_SEND, 0, 0x200, 2048, 1024, 1024, 0);
	tap_ok(r3 == MR_RXA_SEND && nrecv(e, 0, 0) == 1 &&
	       recv_in_order(e, 0) == 1 && e->cqe[0].cqe.status == MR_WC_OK &&
	       e->cqe[0].cqe.byte_len == 2048,
	       "the first SEND completes on receive 0, alone (%u receive completions)",
	       nrecv(e, 0, 0));
	b = last_block(e, 0);
	tap_ok(e->qp[0].state == MR_QP_ERR &&
	       e->err_status[0] == MR_WC_REM_INV_REQ_ERR && b &&
	       b->status == MR_QPS_INV_REQ && b->msn == 0x201,
	       "then the QP fails: invalid request NAK at the second SEND (status %d, block %d at %#x)",
	       e->err_status[0], b ? b->status : -1, b ? b->msn : 0);
	r4 = seg(e, MR_OP_SEND, 1, 0x200, 100, 0, 100, 0);
	tap_ok(r4 == MR_RXA_SEND && e->qp[1].state == MR_QP_RTS &&
	       nrecv(e, 1, 0) == 1 && e->err_status[1] == -1,
	       "another QP of the connection carries on");
	ep_free(e);
}

/* SSNs behind the receives consumed, or ahead of what the order allows. */
static void test_ssn_out_of_place(void)
{
	struct ep *e = responder(3);
	int r;

	seg(e, MR_OP_SEND, 0, 0x200, 10, 0, 10, 0);
	r = seg(e, MR_OP_SEND, 0, 0x201, 10, 0, 10, 0);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_SSN &&
	       e->qp[0].state == MR_QP_ERR && recv_in_order(e, 0) == 1,
	       "an SSN already consumed fails the QP at once (its elders done)");
	r = seg(e, MR_OP_SEND, 1, 0x200, 10, 0, 10, 1);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_SSN &&
	       e->qp[1].state == MR_QP_ERR && !nrecv(e, 1, 0),
	       "SSN 1 on the first message fails the QP, no receive consumed");
	r = seg(e, WRITE_IMM, 2, 0x202, 10, 0, 10, 3);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_SSN,
	       "a WRITE with immediate 2 messages ahead cannot have SSN 3");
	tap_ok(e->c.drops[MR_DROP_SSN] == 3,
	       "each counted as ssn (%llu)",
	       (unsigned long long)e->c.drops[MR_DROP_SSN]);
	ep_free(e);
}

/*
 * An SSN that fitted when it arrived but not the messages that came
 * between: found when the message is the oldest; it consumes no receive.
 */
static void test_ssn_at_completion(void)
{
	struct ep *e = responder(1);
	int r1, r2, r3;

	r1 = seg(e, MR_OP_SEND, 0, 0x202, 10, 0, 10, 2);
	r2 = seg(e, MR_OP_WRITE, 0, 0x200, 10, 0, 10, 0);
	r3 = seg(e, MR_OP_WRITE, 0, 0x201, 10, 0, 10, 0);
	tap_ok(r1 == MR_RXA_SEND && r2 == MR_RXA_WRITE && r3 == MR_RXA_WRITE &&
	       !nrecv(e, 0, 0) && e->qp[0].state == MR_QP_ERR &&
	       e->err_status[0] == MR_WC_REM_INV_REQ_ERR &&
	       e->c.drops[MR_DROP_SSN] == 1 && e->qp[0].rq_msn == 0x202,
	       "a SEND with SSN 2 after two WRITEs fails its QP when it is the oldest, consuming nothing");
	ep_free(e);
}

/* A duplicate SSN far from the first one, in either order. */
static void test_ssn_far_duplicate(void)
{
	struct ep *e = responder(2);
	int r;

	seg(e, MR_OP_SEND, 0, 0x200, 2048, 0, 1024, 0);
	r = seg(e, MR_OP_SEND, 0, 0x203, 10, 0, 10, 0);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_SSN,
	       "SSN 0 again three messages later");
	seg(e, MR_OP_SEND, 1, 0x203, 10, 0, 10, 0);
	r = seg(e, MR_OP_SEND, 1, 0x200, 2048, 0, 1024, 0);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_SSN,
	       "SSN 0 again three messages earlier");
	r = seg(e, MR_OP_SEND, 1, 0x202, 10, 0, 10, 0);
	tap_ok(r == MR_RXA_DROP && e->qp[1].fatal && e->qp[1].nak_msn == 0x200,
	       "and the lowest message that broke the rule is the one NAKed");
	ep_free(e);
}

struct hmsg {
	u16 op;
	u32 len;
	u32 ssn;
	u32 nseg;
};

/*
 * Honest senders in any order: 16 messages (SEND, WRITE, WRITE with
 * immediate, 1 to 3 segments each) whose segments arrive shuffled. Every
 * message completes, every receive once, in SSN order; nothing refused.
 */
static void test_ssn_honest_shuffled(void)
{
	u32 trial, bad = 0, refused = 0;
	u64 rng = 7;

	for (trial = 0; trial < 300; trial++) {
		struct ep *e = responder(1);
		struct hmsg m[16];
		u32 order[48], n = 0, i, j, ssn = 0;

		for (i = 0; i < 16; i++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			m[i].op = (rng >> 33) % 3 == 0 ? MR_OP_WRITE :
				  (rng >> 33) % 3 == 1 ? MR_OP_SEND : WRITE_IMM;
			m[i].nseg = 1 + (u32)(rng >> 40) % 3;
			m[i].len = (m[i].nseg - 1) * 1024 + 1 + (u32)(rng >> 50) % 1024;
			m[i].ssn = m[i].op == MR_OP_WRITE ? 0 : ssn++;
			for (j = 0; j < m[i].nseg; j++)
				order[n++] = i << 8 | j;
		}
		for (i = n - 1; i > 0; i--) {
			u32 t;

			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			j = (u32)(rng >> 33) % (i + 1);
			t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		for (i = 0; i < n; i++) {
			const struct hmsg *x = &m[order[i] >> 8];
			u32 k = order[i] & 0xff, off = k * 1024;
			int r;

			r = seg(e, x->op, 0, 0x200 + (order[i] >> 8), x->len,
				off, k + 1 < x->nseg ? 1024 : x->len - off,
				x->ssn);
			if (r == MR_RXA_DROP)
				refused++;
		}
		if (e->qp[0].rq_msn != 0x210 || e->qp[0].state != MR_QP_RTS ||
		    recv_in_order(e, 0) != (int)ssn || e->c.segx_used)
			bad++;
		ep_free(e);
	}
	tap_ok(!bad && !refused,
	       "300 x 16 honest messages in shuffled order: all complete, every receive once in SSN order (%u wrong, %u segments refused)",
	       bad, refused);
}

/*
 * The same with one SSN off by 1 to 3: whatever the order, no receive is
 * consumed twice or out of order, and the QP fails with the reason counted.
 */
static void test_ssn_hostile_shuffled(void)
{
	u32 trial, bad = 0;
	u64 rng = 11;

	for (trial = 0; trial < 300; trial++) {
		struct ep *e = responder(1);
		struct hmsg m[16];
		u32 order[48], n = 0, i, j, ssn = 0, victim;
		int got;

		for (i = 0; i < 16; i++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			m[i].op = (rng >> 33) % 2 ? MR_OP_SEND : WRITE_IMM;
			m[i].nseg = 1 + (u32)(rng >> 40) % 3;
			m[i].len = m[i].nseg * 1024;
			m[i].ssn = ssn++;
			for (j = 0; j < m[i].nseg; j++)
				order[n++] = i << 8 | j;
		}
		victim = (u32)(rng >> 20) % 16;
		m[victim].ssn += (rng >> 30) & 1 ? 1 + (u32)(rng >> 31) % 3 :
						   -(1 + (u32)(rng >> 31) % 3);
		for (i = n - 1; i > 0; i--) {
			u32 t;

			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			j = (u32)(rng >> 33) % (i + 1);
			t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		for (i = 0; i < n; i++) {
			const struct hmsg *x = &m[order[i] >> 8];
			u32 k = order[i] & 0xff;

			seg(e, x->op, 0, 0x200 + (order[i] >> 8), x->len,
			    k * 1024, 1024, x->ssn);
		}
		got = recv_in_order(e, 0);
		if (got < 0 || got > (int)victim ||
		    e->qp[0].state != MR_QP_ERR || !e->c.drops[MR_DROP_SSN] ||
		    e->err_status[0] != MR_WC_REM_INV_REQ_ERR || e->c.segx_used)
			bad++;
		ep_free(e);
	}
	tap_ok(!bad,
	       "300 x 16 messages, one SSN off by 1 to 3, shuffled: receives only in SSN order before it, the QP fails, counted (%u wrong)",
	       bad);
}

/* ------------------------------------------------------- segment maps */

/* A duplicate offset under another DSN completes nothing (WRITE). */
static void test_dup_offset_write(void)
{
	struct ep *e = responder(1);
	int r1, r2, r3;

	r1 = seg(e, MR_OP_WRITE, 0, 0x200, 2048, 0, 1024, 0);
	r2 = seg(e, MR_OP_WRITE, 0, 0x200, 2048, 0, 1024, 0);
	tap_ok(r1 == MR_RXA_WRITE && r2 == MR_RXA_DROP &&
	       e->last_rx.reason == MR_DROP_DUP && e->qp[0].rq_msn == 0x200,
	       "WRITE: segment 0 again under a new DSN is a duplicate, the message stays incomplete (rq_msn %#x)",
	       e->qp[0].rq_msn);
	r3 = seg(e, MR_OP_WRITE, 0, 0x200, 2048, 1024, 1024, 0);
	tap_ok(r3 == MR_RXA_WRITE && e->qp[0].rq_msn == 0x201,
	       "segment 1 completes it");
	ep_free(e);
}

/* The same for a SEND: no receive completes with a segment missing. */
static void test_dup_offset_send(void)
{
	struct ep *e = responder(1);
	int r;

	seg(e, MR_OP_SEND, 0, 0x200, 3072, 0, 1024, 0);
	r = seg(e, MR_OP_SEND, 0, 0x200, 3072, 0, 1024, 0);
	seg(e, MR_OP_SEND, 0, 0x200, 3072, 2048, 1024, 0);
	tap_ok(r == MR_RXA_DROP && !nrecv(e, 0, 0),
	       "SEND: segments 0, 0 (another DSN) and 2 of 3: no receive completion (%u)",
	       nrecv(e, 0, 0));
	seg(e, MR_OP_SEND, 0, 0x200, 3072, 1024, 1024, 0);
	tap_ok(nrecv(e, 0, 0) == 1 && e->cqe[0].cqe.status == MR_WC_OK,
	       "segment 1 completes the receive");
	ep_free(e);
}

/* And a READ's response at the requester. */
static void test_dup_offset_read(void)
{
	struct ep *e = responder(1);
	struct mr_hdr h;
	u32 n0;
	int r;

	ep_post(e, 0, MR_WR_READ, 2048, 77);
	ep_tx(e);
	n0 = e->ncqe;
	ep_hdr_req(e, &h, MR_OP_READ_RESP, 0, 0x100, 0, g_dsn, g_dsn, 2048, 0,
		   1024);
	g_dsn++;
	ep_rx(e, &h, 0);
	ep_hdr_req(e, &h, MR_OP_READ_RESP, 0, 0x100, 0, g_dsn, g_dsn, 2048, 0,
		   1024);
	g_dsn++;
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_DUP &&
	       e->ncqe == n0,
	       "READ: response segment 0 again under a new DSN completes nothing");
	ep_hdr_req(e, &h, MR_OP_READ_RESP, 0, 0x100, 0, g_dsn, g_dsn, 2048,
		   1024, 1024);
	g_dsn++;
	ep_rx(e, &h, 0);
	tap_ok(e->ncqe == n0 + 1 && e->cqe[n0].cqe.cookie == 77 &&
	       e->cqe[n0].cqe.status == MR_WC_OK,
	       "segment 1 completes the READ");
	ep_free(e);
}

/* Segments not cut as the message's others are refused. */
static void test_segment_shape(void)
{
	struct ep *e = responder(1);
	int r;

	seg(e, MR_OP_WRITE, 0, 0x200, 4000, 0, 1024, 0);
	r = seg(e, MR_OP_WRITE, 0, 0x200, 4000, 1000, 1024, 0);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_INCONSISTENT,
	       "an offset not a multiple of the segment size");
	r = seg(e, MR_OP_WRITE, 0, 0x200, 4000, 1024, 512, 0);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_INCONSISTENT,
	       "a segment shorter than the size, not the last");
	r = seg(e, MR_OP_WRITE, 0, 0x200, 4000, 2048, 1952, 0);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_INCONSISTENT,
	       "a last segment longer than the size");
	seg(e, MR_OP_WRITE, 0, 0x200, 4000, 1024, 1024, 0);
	seg(e, MR_OP_WRITE, 0, 0x200, 4000, 2048, 1024, 0);
	r = seg(e, MR_OP_WRITE, 0, 0x200, 4000, 3072, 928, 0);
	tap_ok(r == MR_RXA_WRITE && e->qp[0].rq_msn == 0x201,
	       "the right ones complete it");

	/* the last segment first: kept aside until the size is known */
	seg(e, MR_OP_WRITE, 0, 0x201, 2500, 2048, 452, 0);
	r = seg(e, MR_OP_WRITE, 0, 0x201, 2500, 2048, 452, 0);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_DUP &&
	       e->qp[0].rq_msn == 0x201,
	       "the last segment first, then again: a duplicate");
	seg(e, MR_OP_WRITE, 0, 0x201, 2500, 1024, 1024, 0);
	r = seg(e, MR_OP_WRITE, 0, 0x201, 2500, 0, 1024, 0);
	tap_ok(r == MR_RXA_WRITE && e->qp[0].rq_msn == 0x202,
	       "the size learnt from the middle one places it: complete");
	/* a "last" segment at an offset the size does not allow is forgotten */
	seg(e, MR_OP_WRITE, 0, 0x202, 2500, 1500, 1000, 0);
	seg(e, MR_OP_WRITE, 0, 0x202, 2500, 0, 1024, 0);
	seg(e, MR_OP_WRITE, 0, 0x202, 2500, 1024, 1024, 0);
	tap_ok(e->qp[0].rq_msn == 0x202,
	       "a last segment at offset 1500 of 1024-byte segments does not count");
	r = seg(e, MR_OP_WRITE, 0, 0x202, 2500, 2048, 452, 0);
	tap_ok(r == MR_RXA_WRITE && e->qp[0].rq_msn == 0x203,
	       "the real one does");
	ep_free(e);
}

/*
 * A 2 MiB WRITE whose first segment comes after the next 1023, every one
 * of those once and many twice (new DSNs): the overflow holds what the
 * window cannot, nothing completes early, the first segment gives every
 * chunk back as the window passes them, and the message completes with
 * its last segment, exactly.
 */
static void test_far_ahead(void)
{
	struct ep *e = responder(1);
	u32 k, order[1023], first = g_dsn, peak = 0, dups = 0, early = 0;
	u64 rng = 3;
	int r;

	g_dsn++;		/* segment 0's DSN: it comes later */
	for (k = 0; k < 1023; k++)
		order[k] = k + 1;
	for (k = 1022; k > 0; k--) {
		u32 j, t;

		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		j = (u32)(rng >> 33) % (k + 1);
		t = order[k];
		order[k] = order[j];
		order[j] = t;
	}
	for (k = 0; k < 1023; k++) {
		seg(e, MR_OP_WRITE, 0, 0x200, 2 << 20, order[k] * 1024, 1024,
		    0);
		if (k % 3 == 0) {
			r = seg(e, MR_OP_WRITE, 0, 0x200, 2 << 20,
				order[k / 2] * 1024, 1024, 0);
			dups += r == MR_RXA_DROP &&
				e->last_rx.reason == MR_DROP_DUP;
		}
		if (e->c.segx_used > peak)
			peak = e->c.segx_used;
		early += e->qp[0].rq_msn != 0x200;
	}
	tap_ok(!early && dups == 341 && peak == 15,
	       "2 MiB WRITE, segment 0 missing: 1023 segments shuffled, 341 again: all duplicates, nothing completes (%u chunks at most)",
	       peak);
	r = seg_at(e, MR_OP_WRITE, 0, 0x200, 2 << 20, 0, 1024, 0, first);
	tap_ok(r == MR_RXA_WRITE && e->qp[0].rq_msn == 0x200 &&
	       ep_landed(e, &e->qp[0].rq[0].seg) == 1024 && !e->c.segx_used,
	       "segment 0: 1024 of 2048 landed, every chunk given back (%u in use)",
	       e->c.segx_used);
	for (k = 1024; k < 2047; k++)
		seg(e, MR_OP_WRITE, 0, 0x200, 2 << 20, k * 1024, 1024, 0);
	early = e->qp[0].rq_msn != 0x200;
	r = seg(e, MR_OP_WRITE, 0, 0x200, 2 << 20, 2047 * 1024, 1024, 0);
	tap_ok(!early && r == MR_RXA_WRITE && e->qp[0].rq_msn == 0x201 &&
	       !e->c.segx_used,
	       "the rest in order: the last one completes it, no chunk used");
	ep_free(e);
}

/* Further ahead than any conforming sender can be; the overflow's bound. */
static void test_overflow_bounds(void)
{
	struct ep *e = responder(8);
	u32 q, j, refused = 0, used;
	int r;

	seg(e, MR_OP_WRITE, 0, 0x200, 1 << 21, 0, 256, 0);
	r = seg(e, MR_OP_WRITE, 0, 0x200, 1 << 21, (1 + MR_SEG_SPAN) * 256,
		256, 0);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_INCONSISTENT &&
	       !e->c.segx_used,
	       "a segment %u beyond the first missing one is refused",
	       MR_SEG_SPAN);
	/* one segment per chunk, 63 chunks a message, over 8 QPs */
	for (q = 0; q < 8; q++) {
		seg(e, MR_OP_WRITE, q, 0x201, 1 << 21, 256, 256, 0);
		for (j = 1; j < 64; j++) {
			r = seg(e, MR_OP_WRITE, q, 0x201, 1 << 21,
				j * 64 * 256, 256, 0);
			refused += r == MR_RXA_DROP;
		}
	}
	used = e->c.segx_used;
	tap_ok(used == MR_SEGX_NR && refused == 8 * 63 - MR_SEGX_NR &&
	       e->last_rx.reason == MR_DROP_INCONSISTENT,
	       "a peer that spreads segments over %u chunks gets %u, the rest refused (%u)",
	       8 * 63, used, refused);
	for (q = 0; q < 8; q++)
		mr_qp_set_error(&e->qp[q], e->now);
	tap_ok(!e->c.segx_used && e->c.segx_top == MR_SEGX_NR,
	       "QPs in error give every chunk back (%u in use)",
	       e->c.segx_used);
	ep_free(e);
}

/* Trackers an RNR rewind discards, and a detached QP, give chunks back. */
static void test_rewind_gives_back(void)
{
	struct ep *e = responder(1);
	struct mr_hdr h;
	u32 k, held;
	int r;

	e->recv_posted[0] = 1;
	seg(e, MR_OP_SEND, 0, 0x200, 10, 0, 10, 0);
	seg(e, MR_OP_WRITE, 0, 0x202, 1 << 20, 1024, 1024, 0);
	for (k = 2; k < 300; k++)
		seg(e, MR_OP_WRITE, 0, 0x202, 1 << 20, k * 1024, 1024, 0);
	held = e->c.segx_used;
	r = seg(e, MR_OP_SEND, 0, 0x201, 100, 0, 100, 1);
	tap_ok(held == 4 && r == MR_RXA_DROP &&
	       e->last_rx.reason == MR_DROP_RNR,
	       "a WRITE holding chunks (%u), then an older SEND refused for RNR",
	       held);
	e->recv_posted[0] = 2;
	ep_hdr_req(e, &h, MR_OP_SEND, 0, 0x201, 0, g_psn++, g_dsn++, 100, 0,
		   100);
	h.gen = 1;
	h.ssn = 1;
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_SEND && !e->c.segx_used,
	       "the rewind discards the WRITE's tracker and its chunks (%u in use)",
	       e->c.segx_used);
	r = seg(e, MR_OP_WRITE, 0, 0x202, 1 << 20, 300 * 1024, 1024, 0);
	tap_ok(r == MR_RXA_DROP && e->last_rx.reason == MR_DROP_STALE_GEN,
	       "the WRITE's old segments are stale");
	for (k = 1; k < 200; k++) {
		ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x202, 0, g_psn++, g_dsn++,
			   1 << 20, k * 1024, 1024);
		h.gen = 1;
		ep_rx(e, &h, 0);
	}
	held = e->c.segx_used;
	mr_qp_detach(&e->qp[0]);
	tap_ok(held == 3 && !e->c.segx_used,
	       "its resent segments take chunks again (%u); detaching the QP gives them back",
	       held);
	ep_free(e);
}

int main(void)
{
	tap_start();
	test_ssn_duplicate();
	test_ssn_out_of_place();
	test_ssn_at_completion();
	test_ssn_far_duplicate();
	test_ssn_honest_shuffled();
	test_ssn_hostile_shuffled();
	test_dup_offset_write();
	test_dup_offset_send();
	test_dup_offset_read();
	test_segment_shape();
	test_far_ahead();
	test_overflow_bounds();
	test_rewind_gives_back();
	return tap_done();
}
