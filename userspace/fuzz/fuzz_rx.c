// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the engine's receive state machine.
 *
 * One connection with four QPs (two RTS with work requests and receives
 * posted, one RTR, one unconnected) is driven by the input: packets (raw,
 * or structured relative to the engine's state so that they get deep),
 * ACKs, clock steps, transmissions, posts and QP errors (see fuzz_rx.h).
 * The environment behaves like the kernel glue will, with strict bounds:
 * any placement or transmission the engine asks for outside the buffers it
 * was given aborts. After every step the engine's invariants are checked:
 * in-flight accounting, segment table and DSN window, message windows,
 * completions exactly once and in order (receives in SSN order), segment
 * maps and their overflow chunks, timers that make progress.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "fuzz_rx.h"

#define NQP		4
#define NSEGS		128
#define VA		0x10000ull
#define REGION		0x10000u
#define RKEY		0x1234u
#define LOCAL		0x20000u
#define MAX_WR		256
#define MAX_RECV	64
#define QPN(i)		(0x100u + (i))
#define PEER_QPN(i)	(0x200u + (i))

#define CHECK(cond) do { \
		if (!(cond)) { \
			fprintf(stderr, "invariant failed: %s (%s:%d)\n", \
				#cond, __FILE__, __LINE__); \
			abort(); \
		} \
	} while (0)

struct fz_wr {
	u64 laddr;
	u32 len;
	u8 op;
	u8 qp;
	u8 done;
};

struct fz_recv {
	u64 laddr;
	u32 len;
	u8 bound;
	u8 done;
};

struct fz_qp {
	struct mr_qp qp;
	struct mr_qp_slots slots;
	struct fz_recv recv[MAX_RECV];
	u32 nrecv;
	u32 recv_next;		/* SSN of the next receive to complete */
	int last_done;		/* h_wr index of the last completion, or -1 */
};

static struct fz_state {
	struct mr_conn c;
	struct mr_seg segs[NSEGS];
	struct fz_qp q[NQP];
	u8 region[REGION];
	u8 local[LOCAL];
	u8 scratch[MR_MAX_PAYLOAD];
	struct fz_wr wr[MAX_WR];
	u32 nwr;
	u32 local_off;
	u64 now;
	u32 peer_epoch;
	u32 peer_psn[MR_MAX_PATHS];
	u32 peer_dsn;
	u16 ack_ce[MR_MAX_PATHS], ack_rx[MR_MAX_PATHS];
	int xmit_busy;
	u8 setup[FZ_SETUP_LEN];
	const u8 *in;
	size_t left;
} S;

/* Input reading: missing bytes are zero. */
static u8 get8(void)
{
	if (!S.left)
		return 0;
	S.left--;
	return *S.in++;
}

static u16 get16(void)
{
	u16 v = (u16)(get8() << 8);

	return v | get8();
}

static struct fz_qp *fq(struct mr_qp *qp)
{
	return (struct fz_qp *)qp;
}

/* Environment */

/*
 * Our cookies (ops->cookie): a keyed mix; both secrets exist, so that a
 * cookie minted under the previous one is exercised too.
 */
static u64 fz_mint(u32 epoch, int prev)
{
	u64 x = (prev ? 0x1f2e3d4c5b6a7988ull : 0x8877665544332211ull) ^ epoch;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x ? x : 1;
}

static u64 fz_cookie(void *env, struct mr_conn *c, u32 epoch, int prev)
{
	(void)env;
	CHECK(c == &S.c && epoch != S.c.rx_epoch);
	return fz_mint(epoch, prev);
}

static int fz_xmit(void *env, struct mr_conn *c, const struct mr_txpkt *t)
{
	static u8 buf[MR_HLEN_MAX + MR_MAX_PATHS * MR_ACK_PATH_LEN +
		      MR_ACK_MAX_QP * MR_ACK_QP_LEN + MR_MAX_PAYLOAD];
	struct mr_hdr h;
	struct mr_ack a;

	(void)env;
	(void)c;
	if (S.xmit_busy)
		return MR_XMIT_BUSY;
	CHECK(t->hlen + t->plen <= sizeof(buf) && t->plen <= MR_MAX_PAYLOAD);
	memcpy(buf, t->hdr, t->hlen);
	memset(buf + t->hlen, 0, t->plen);
	/* everything the engine sends decodes */
	CHECK(mr_wire_decode(buf, t->hlen + t->plen, &h, &a) == (int)t->hlen);
	CHECK(h.epoch == S.c.epoch && h.plen == t->plen);
	/* without a cookie, only the hello (a PROBE with SYN) goes out */
	CHECK(!mr_op_sequenced(h.opcode) || S.c.cookie || !S.c.syn ||
	      (h.opcode == MR_OP_PROBE && (h.flags & MR_F_SYN)));
	/* a challenge carries our cookie for the epoch it names */
	CHECK(h.opcode != MR_OP_RESET ||
	      h.cookie == fz_mint(h.reset_epoch, 0));
	if (t->kind == MR_TX_REQ) {
		const struct fz_wr *w;

		CHECK(t->cookie < S.nwr);
		w = &S.wr[t->cookie];
		CHECK(t->qp && fq(t->qp) == &S.q[w->qp] && !w->done);
		CHECK((u64)t->offset + t->plen <= w->len);
		memcpy(S.scratch, S.local + w->laddr + t->offset, t->plen);
	} else if (t->kind == MR_TX_RESP) {
		/* only from a region a READ was checked against */
		CHECK(t->key == RKEY && t->cookie >= VA &&
		      t->cookie + t->offset + t->plen <= VA + REGION);
		memcpy(S.scratch, S.region + (t->cookie - VA) + t->offset,
		       t->plen);
	} else {
		CHECK(!t->plen);
	}
	CHECK(t->path < S.c.npaths || !mr_op_sequenced(h.opcode));
	CHECK(t->sport == S.c.path[t->path].sport);
	return 0;
}

static void fz_complete(void *env, struct mr_qp *qp, const struct mr_cqe *e)
{
	struct fz_qp *q = fq(qp);

	(void)env;
	CHECK(e->status <= MR_WC_LOC_QP_OP_ERR);
	if (e->opcode == MR_WC_RECV || e->opcode == MR_WC_RECV_WRITE_IMM) {
		u32 i = (u32)(e->cookie & 0xffff);

		CHECK((e->cookie >> 16) == (u64)(q - S.q) && i < q->nrecv);
		CHECK(q->recv[i].bound && !q->recv[i].done);
		/* receives complete in the order they were posted, once */
		CHECK(i == q->recv_next);
		q->recv_next++;
		CHECK(e->status != MR_WC_OK || e->byte_len <= q->recv[i].len ||
		      e->opcode == MR_WC_RECV_WRITE_IMM);
		q->recv[i].done = 1;
		return;
	}
	/* requester: once each, in posting order per QP */
	CHECK(e->cookie < S.nwr);
	CHECK(!S.wr[e->cookie].done && S.wr[e->cookie].qp == q - S.q);
	CHECK(q->last_done < (int)e->cookie);
	CHECK(e->opcode == S.wr[e->cookie].op);
	S.wr[e->cookie].done = 1;
	q->last_done = (int)e->cookie;
}

static void fz_qp_error(void *env, struct mr_qp *qp, int status)
{
	(void)env;
	CHECK(qp->state == MR_QP_ERR && status > 0 &&
	      status <= MR_WC_LOC_QP_OP_ERR);
}

static int fz_bind_recv(void *env, struct mr_qp *qp, u32 ssn, u64 *cookie,
			u32 *len)
{
	struct fz_qp *q = fq(qp);

	(void)env;
	if (ssn >= q->nrecv || q->recv[ssn].done)
		return -1;
	/* bound again only after an RNR rewind: the same receive */
	q->recv[ssn].bound = 1;
	*cookie = ((u64)(q - S.q) << 16) | ssn;
	*len = q->recv[ssn].len;
	return 0;
}

static int fz_in_region(u32 rkey, u64 addr, u64 len)
{
	return rkey == RKEY && addr >= VA && len <= REGION &&
	       addr - VA <= REGION - len;
}

static int fz_execute(void *env, struct mr_qp *qp, const struct mr_hdr *req,
		      u64 *result)
{
	u64 v;

	(void)env;
	CHECK(qp->conn == &S.c && qp->state != MR_QP_RESET);
	if (req->opcode == MR_OP_READ_REQ)
		return fz_in_region(req->rkey, req->raddr, req->msg_len) ?
		       MR_RXS_OK : MR_RXS_ACCESS;
	CHECK(req->opcode == MR_OP_CMP_SWAP || req->opcode == MR_OP_FETCH_ADD);
	if (!fz_in_region(req->rkey, req->raddr, 8))
		return MR_RXS_ACCESS;
	memcpy(&v, S.region + (req->raddr - VA), 8);
	*result = v;
	if (req->opcode == MR_OP_FETCH_ADD)
		v += req->swap_add;
	else if (v == req->compare)
		v = req->swap_add;
	memcpy(S.region + (req->raddr - VA), &v, 8);
	return MR_RXS_OK;
}

static struct mr_qp *fz_lookup(void *env, struct mr_conn *c, u32 qpn)
{
	u32 i;

	(void)env;
	for (i = 0; i < NQP; i++)
		if (S.q[i].qp.conn == c && S.q[i].qp.qpn == qpn)
			return &S.q[i].qp;
	return NULL;
}

static const struct mr_env_ops fz_ops = {
	.xmit = fz_xmit,
	.complete = fz_complete,
	.qp_error = fz_qp_error,
	.bind_recv = fz_bind_recv,
	.execute = fz_execute,
	.lookup_qp = fz_lookup,
	.cookie = fz_cookie,
};

/* Invariants */

/* One segment map: its chunks are sorted, after lo, and counted in @seen. */
static u32 check_segmap(const struct mr_segmap *m, u8 *seen)
{
	const struct mr_conn *c = &S.c;
	u32 n = 0, prev = 0;
	u16 id;

	if (!m->size) {
		CHECK(!m->ext && !m->tail && !m->bits[1]);
		return 0;
	}
	/* segment lo has not landed, or lo would have moved on */
	CHECK(!(m->bits[0] & 1));
	for (id = m->ext; id; id = c->segx_next[id - 1]) {
		u32 blk;

		CHECK(id <= c->segx_top && !seen[id - 1]);
		seen[id - 1] = 1;
		blk = c->segx_blk[id - 1];
		CHECK(!n || blk > prev);
		CHECK(blk * 64 > m->lo && blk * 64 - m->lo < MR_SEG_SPAN + 64);
		CHECK(!m->tail || id != m->tail || !c->segx_next[id - 1]);
		prev = blk;
		n++;
		if (!c->segx_next[id - 1])
			CHECK(id == m->tail);
	}
	CHECK(n || !m->tail);
	return n;
}

/* Every chunk is on exactly one message's list or the free list. */
static void check_segmaps(void)
{
	static u8 seen[MR_SEGX_NR];
	const struct mr_conn *c = &S.c;
	u32 i, k, used = 0;
	u16 id;

	memset(seen, 0, sizeof(seen));
	CHECK(c->segx_top <= MR_SEGX_NR && c->segx_used <= c->segx_top);
	for (i = 0; i < NQP; i++) {
		const struct mr_qp *qp = &S.q[i].qp;

		for (k = 0; k < MR_MSG_WND; k++) {
			const struct mr_rmsg *r = &qp->rq[k];

			if (r->state == 0 || !qp->conn) {
				CHECK(!r->seg.ext);
				continue;
			}
			used += check_segmap(&r->seg, seen);
		}
		for (k = 0; k < qp->sq_slots; k++) {
			const struct mr_msg *m = &qp->sq[k];

			if (m->opcode != MR_WR_READ)
				continue;
			if (m->state == 0 || !qp->conn) {
				CHECK(!m->seg.ext);
				continue;
			}
			used += check_segmap(&m->seg, seen);
		}
	}
	CHECK(used == c->segx_used);
	for (id = c->segx_free; id; id = c->segx_next[id - 1]) {
		CHECK(id <= c->segx_top && !seen[id - 1]);
		seen[id - 1] = 1;
		used++;
	}
	CHECK(used == c->segx_top);
}

static void check_invariants(void)
{
	struct mr_conn *c = &S.c;
	u64 total = 0;
	u32 i, k, queued = 0;

	for (i = 0; i < MR_MAX_PATHS; i++) {
		const struct mr_path *p = &c->path[i];
		u32 out = p->nxt - p->una, nbits = 0;
		u64 sum = 0, overdue = 0;

		CHECK(out <= MR_PATH_WND);
		CHECK(i < c->npaths || !out);
		for (k = 0; k < out; k++) {
			u32 slot = (p->una + k) % MR_PATH_WND;

			if (!mr_bit_test(p->out, slot))
				continue;
			sum += p->len[slot];
			if (mr_bit_test(p->overdue, slot))
				overdue += p->len[slot];
		}
		/* only an outstanding slot can be overdue */
		for (k = 0; k < MR_PATH_WND / 32; k++)
			CHECK(!(p->overdue[k] & ~p->out[k]));
		for (k = 0; k < MR_PATH_WND / 32; k++)
			nbits += (u32)__builtin_popcount(p->out[k]);
		/* no slot outstanding outside [una, nxt), una itself is */
		for (k = 0; k < out; k++)
			if (mr_bit_test(p->out, (p->una + k) % MR_PATH_WND))
				nbits--;
		CHECK(nbits == 0);
		CHECK(!out || mr_bit_test(p->out, p->una % MR_PATH_WND));
		CHECK(sum == p->inflight);
		CHECK(p->weight <= MR_WEIGHT_ONE && p->alpha <= 1024);
		CHECK(p->state != MR_PATH_DEAD || !p->weight);
		/* an overdue slot's bytes are in its path's inflight only */
		total += sum - overdue;
	}
	CHECK(total == c->inflight);
	{
		u32 usable = 0;

		for (i = 0; i < c->npaths; i++)
			usable += mr_path_usable(&c->path[i]);
		CHECK(usable >= 1);
	}
	CHECK(c->dsn_nxt - c->dsn_una <= c->cfg.seg_wnd);
	for (i = 0; i < c->cfg.seg_wnd; i++) {
		const struct mr_seg *s = &c->segs[i];

		if (s->state == MR_SEGS_FREE)
			continue;
		CHECK(s->dsn - c->dsn_una < c->dsn_nxt - c->dsn_una);
		CHECK((s->dsn & c->seg_mask) == i);
		CHECK(s->state == MR_SEGS_QUEUED || s->state == MR_SEGS_INFLIGHT);
		CHECK(!s->qp || s->qp->conn == c);
		if (s->state == MR_SEGS_QUEUED)
			queued++;
	}
	CHECK(c->dsn_una == c->dsn_nxt ||
	      c->segs[c->dsn_una & c->seg_mask].state != MR_SEGS_FREE);
	CHECK(queued == c->rtx_cnt);
	CHECK(c->wnd >= c->cfg.min_window && c->wnd <= c->cfg.max_window);
	for (i = 0; i < NQP; i++) {
		const struct mr_qp *qp = &S.q[i].qp;
		u32 posted = mr_msn_diff(qp->sq_nxt, qp->sq_una);

		if (!qp->conn)
			continue;
		CHECK(qp->state <= MR_QP_ERR);
		CHECK(posted <= MR_MSG_WND);
		CHECK(mr_msn_diff(qp->sq_cur, qp->sq_una) <= posted);
		CHECK(qp->rd_out <= MR_MAX_RD_ATOMIC &&
		      qp->resp_cnt <= MR_MAX_RD_ATOMIC);
		CHECK(qp->state != MR_QP_ERR || posted == 0);
		CHECK(qp->sq_una <= MR_MSN_MASK && qp->rq_msn <= MR_MSN_MASK);
		CHECK(qp->rq_hi <= MR_MSG_WND);
		CHECK(qp->rq_ssn == S.q[i].recv_next);
	}
	check_segmaps();
}

/* Setup */

static u32 fz_mtu(void)
{
	return (S.setup[1] & FZ_SET_SMALL_MTU) ? 256 : 1024;
}

static void fz_connect(u32 i, int rts)
{
	struct mr_qp_attr a;
	u32 msn0 = (S.setup[1] & FZ_SET_MSN_WRAP) ? 0xfffffc : 0x100;

	memset(&a, 0, sizeof(a));
	mr_qp_init_slots(&S.q[i].qp, QPN(i), &S.q[i].slots);
	S.q[i].last_done = -1;
	S.q[i].recv_next = 0;
	a.dest_qpn = PEER_QPN(i);
	a.sq_psn = msn0 + i;
	a.rq_psn = msn0 + 0x10 * i;
	a.seg_size = fz_mtu();
	a.timeout_ns = (S.setup[1] & FZ_SET_TIMEOUT) ? 1000000 : 0;
	a.retry_cnt = 1;
	a.rnr_retry = (S.setup[1] & FZ_SET_RNR_RETRY) ? 1 : 7;
	a.min_rnr_timer = 1;
	a.max_rd_atomic = (S.setup[1] & FZ_SET_RD1) ? 1 : 4;
	a.max_dest_rd_atomic = (S.setup[1] & FZ_SET_RD1) ? 1 : 4;
	CHECK(!mr_qp_connect(&S.q[i].qp, &S.c, &a, S.now));
	if (rts)
		CHECK(!mr_qp_rts(&S.q[i].qp, &a, S.now));
}

static const u32 len_sel[] = { 0, 1, 8, 100, 255, 256, 257, 1023, 1024, 1025,
			       3000, 5000, 12000, 65536 };
#define NLEN (sizeof(len_sel) / sizeof(len_sel[0]))

static void post_recv(u32 i, u32 len)
{
	struct fz_qp *q = &S.q[i];

	if (q->nrecv >= MAX_RECV || len > LOCAL)
		return;
	if (S.local_off + len > LOCAL)
		S.local_off = 0;
	q->recv[q->nrecv].laddr = S.local_off;
	q->recv[q->nrecv].len = len;
	S.local_off += len;
	q->nrecv++;
}

static void post_wr(u32 i, u8 opsel, u8 lensel)
{
	static const u8 ops[] = { MR_WR_WRITE, MR_WR_SEND, MR_WR_SEND_IMM,
				  MR_WR_SEND_INV, MR_WR_WRITE_IMM, MR_WR_READ,
				  MR_WR_CMP_SWAP, MR_WR_FETCH_ADD, MR_WR_LOCAL };
	struct mr_wr w;
	struct fz_wr *f;

	if (S.nwr >= MAX_WR)
		return;
	memset(&w, 0, sizeof(w));
	w.opcode = ops[opsel % sizeof(ops)];
	w.len = len_sel[lensel % NLEN];
	if (w.opcode == MR_WR_CMP_SWAP || w.opcode == MR_WR_FETCH_ADD)
		w.len = 8;
	w.raddr = VA + (lensel & 0x80 ? REGION - 4 : (u64)(opsel >> 4) * 256);
	w.raddr &= ~7ull;
	w.rkey = lensel & 0x40 ? RKEY + 1 : RKEY;
	w.swap_add = opsel;
	w.compare = lensel;
	w.imm = 0xab000000u | S.nwr;
	w.flags = (opsel & 0x10) ? MR_WRF_FENCE : 0;
	w.cookie = S.nwr;
	if (S.local_off + w.len > LOCAL)
		S.local_off = 0;
	f = &S.wr[S.nwr];
	f->laddr = S.local_off;
	f->len = w.len;
	f->op = w.opcode;
	f->qp = (u8)i;
	f->done = 0;
	S.nwr++;		/* a local request completes inside the post */
	if (mr_qp_post(&S.q[i].qp, &w, S.now)) {
		S.nwr--;
		return;
	}
	S.local_off += w.len;
}

static void setup(void)
{
	struct mr_conn_cfg cfg;
	u32 i, epoch;

	for (i = 0; i < FZ_SETUP_LEN; i++)
		S.setup[i] = get8();
	mr_conn_cfg_default(&cfg);
	cfg.npaths = 1 + S.setup[0] % MR_MAX_PATHS;
	cfg.reorder_thresh = 1 + S.setup[2] % 4;
	cfg.seg_wnd = 16u << (S.setup[3] % 4);
	cfg.pacing = !!(S.setup[1] & FZ_SET_PACING);
	cfg.announce = !!(S.setup[0] & FZ_SET0_ANNOUNCE);
	cfg.pace_burst = 8192;
	cfg.init_window = 32 * 1024;
	epoch = (S.setup[1] & FZ_SET_OUR_WRAP) ? 0xfffffff0u : 0x1000;
	S.peer_epoch = (S.setup[1] & FZ_SET_PEER_WRAP) ? 0xfffffff8u :
			0x7000000;
	S.now = 1000000;
	CHECK(!mr_conn_init(&S.c, &cfg, S.segs, &fz_ops, NULL, epoch, 7,
			    S.now));
	/* unless it starts with its hello, the peer has challenged us */
	if (!(S.setup[0] & FZ_SET0_HELLO))
		S.c.cookie = 0xc001c001c001c001ull;
	for (i = 0; i < MR_MAX_PATHS; i++)
		S.peer_psn[i] = S.peer_epoch;
	S.peer_dsn = S.peer_epoch;
	for (i = 0; i < NQP; i++) {
		mr_qp_init_slots(&S.q[i].qp, QPN(i), &S.q[i].slots);
		S.q[i].last_done = -1;
	}
	fz_connect(0, 1);
	fz_connect(1, 1);
	fz_connect(2, 0);	/* responder only; QP 3 stays unconnected */
	for (i = 0; i < 3; i++) {
		post_recv(i, 3000);
		post_recv(i, 100);
		post_recv(i, 70000);
	}
	post_wr(0, 0, 10);	/* WRITE 3000 */
	post_wr(0, 5, 9);	/* READ 1025 */
	post_wr(1, 1, 3);	/* SEND 100 */
	post_wr(1, 7, 0);	/* FETCH_ADD */
}

/* Delivery, as the glue does it */

static void deliver(const u8 *buf, u32 len, int ce)
{
	struct mr_hdr h;
	struct mr_ack a;
	struct mr_rx rx;
	struct mr_qp *qp = NULL;
	int hl, st = MR_RXS_OK;
	const u8 *pl;
	u32 epoch;

	hl = mr_wire_decode(buf, len, &h, &a);
	if (hl < 0) {
		CHECK(-hl > MR_DROP_NONE && -hl < MR_DROP_STATELESS_MAX);
		return;
	}
	if (h.opcode == MR_OP_UD_SEND)
		return;		/* UD is the glue's, not the engine's */
	pl = buf + hl;
	if (h.opcode != MR_OP_ACK)
		qp = fz_lookup(NULL, &S.c, h.dst_qpn);
	epoch = S.c.rx_epoch;
	mr_conn_rx(&S.c, qp, &h, h.opcode == MR_OP_ACK ? &a : NULL, ce, S.now,
		   &rx);
	/* a new epoch only from a SYN with a cookie we minted for it */
	CHECK(S.c.rx_epoch == epoch ||
	      (S.c.rx_epoch == h.epoch && mr_op_sequenced(h.opcode) &&
	       (h.flags & MR_F_SYN) &&
	       (h.cookie == fz_mint(h.epoch, 0) ||
		h.cookie == fz_mint(h.epoch, 1))));
	switch (rx.action) {
	case MR_RXA_NONE:
		return;
	case MR_RXA_DROP:
		CHECK(rx.reason >= MR_DROP_STATELESS_MAX &&
		      rx.reason < MR_DROP_NR_REASONS);
		return;
	case MR_RXA_WRITE:
		CHECK(rx.qp == qp && h.opcode == MR_OP_WRITE);
		if (!fz_in_region(h.rkey, h.raddr + h.offset, h.plen) ||
		    h.raddr + h.offset < h.raddr) {
			st = MR_RXS_ACCESS;
			break;
		}
		memcpy(S.region + (h.raddr + h.offset - VA), pl, h.plen);
		break;
	case MR_RXA_SEND: {
		struct fz_qp *q = fq(rx.qp);
		u32 i = (u32)(rx.cookie & 0xffff);

		CHECK(rx.qp == qp && h.opcode == MR_OP_SEND);
		CHECK((rx.cookie >> 16) == (u64)(q - S.q) && i < q->nrecv &&
		      q->recv[i].bound && !q->recv[i].done);
		CHECK(rx.recv_len == q->recv[i].len);
		/* the engine checked the message fits the receive */
		CHECK((u64)h.offset + h.plen <= q->recv[i].len);
		memcpy(S.local + q->recv[i].laddr + h.offset, pl, h.plen);
		break;
	}
	case MR_RXA_READ_RESP: {
		const struct fz_wr *w;

		CHECK(rx.cookie < S.nwr);
		w = &S.wr[rx.cookie];
		CHECK(w->op == MR_WR_READ && !w->done && rx.qp == qp &&
		      &S.q[w->qp].qp == qp);
		CHECK((u64)h.offset + h.plen <= w->len);
		memcpy(S.local + w->laddr + h.offset, pl, h.plen);
		break;
	}
	case MR_RXA_ATOMIC_RESP: {
		const struct fz_wr *w;

		CHECK(rx.cookie < S.nwr);
		w = &S.wr[rx.cookie];
		CHECK((w->op == MR_WR_CMP_SWAP || w->op == MR_WR_FETCH_ADD) &&
		      !w->done && &S.q[w->qp].qp == qp && w->len == 8);
		memcpy(S.local + w->laddr, &h.orig, 8);
		break;
	}
	default:
		CHECK(0);
	}
	mr_conn_rx_done(&S.c, &h, &rx, st, 0, S.now);
}

/* Structured packets */

static const u8 fz_ops_sel[] = {
	MR_OP_WRITE, MR_OP_SEND, MR_OP_READ_REQ, MR_OP_READ_RESP,
	MR_OP_CMP_SWAP, MR_OP_FETCH_ADD, MR_OP_ATOMIC_RESP, MR_OP_NOP,
	MR_OP_PROBE, MR_OP_ACK_REQ, MR_OP_UD_SEND,
};

static u16 allowed_flags(u8 op)
{
	u16 seq = MR_F_SYN | MR_F_ACKREQ | MR_F_RETX;

	switch (op) {
	case MR_OP_WRITE:
		return seq | MR_F_IMM | MR_F_SOLICIT;
	case MR_OP_SEND:
		return seq | MR_F_IMM | MR_F_SOLICIT;	/* INV: below */
	case MR_OP_PROBE:
		return MR_F_SYN | MR_F_ACKREQ;
	case MR_OP_UD_SEND:
		return MR_F_IMM | MR_F_SOLICIT;
	case MR_OP_ACK_REQ:
		return 0;
	default:
		return seq;
	}
}

static void struct_data(int ce)
{
	static const u32 mlen[] = { 0, 8, 1, 100, 1024, 1025, 3000, 5000,
				    65536, MR_MAX_MSG_LEN };
	u8 b[FZ_DATA_LEN];
	static u8 buf[MR_HLEN_MAX + MR_MAX_PAYLOAD];
	struct mr_hdr h;
	struct mr_qp *qp;
	u32 i, qi, mtu = fz_mtu();
	int hl;

	for (i = 0; i < FZ_DATA_LEN; i++)
		b[i] = get8();
	memset(&h, 0, sizeof(h));
	h.opcode = fz_ops_sel[b[0] % sizeof(fz_ops_sel)];
	h.flags = b[1];
	if (!(b[2] & 0x80)) {
		h.flags &= allowed_flags(h.opcode);
		if (h.opcode == MR_OP_SEND && (b[15] & 1) &&
		    !(h.flags & MR_F_IMM))
			h.flags |= MR_F_INV;
	}
	switch (b[3] % 4) {
	case 0:
		h.epoch = S.peer_epoch;
		if (mr_op_sequenced(h.opcode))
			h.flags |= MR_F_SYN;
		break;
	case 1:
		h.epoch = 0x5555;
		if (mr_op_sequenced(h.opcode))
			h.flags |= MR_F_SYN;
		break;
	case 2:
		h.epoch = S.c.epoch;
		break;
	default:
		h.epoch = S.peer_epoch;
		h.flags &= ~MR_F_SYN;
		break;
	}
	/*
	 * The peer's SYNs answer our challenge: with the cookie we minted
	 * for their epoch, under the current secret or (b3 bit 3) the last
	 * one; b3 bit 2: a wrong one, as a forger would send.
	 */
	if (h.flags & MR_F_SYN)
		h.cookie = (b[3] & 4) ? (u64)b[15] << 8 :
			   fz_mint(h.epoch, !!(b[3] & 8));
	h.tsval = (u32)S.now;
	/*
	 * A SYN names where the sender's data starts (the model's first
	 * DSN): without it the receiver's window would start at DSN 0 and
	 * refuse all the model's data as dsn_window.
	 */
	if (h.flags & MR_F_SYN)
		h.syn_dsn = S.peer_epoch;
	if (mr_op_sequenced(h.opcode)) {
		h.path = b[2] & 15;
		h.psn = S.peer_psn[h.path] + (u32)(s32)(s8)b[4];
		if (!b[4])
			S.peer_psn[h.path]++;
	}
	if (mr_op_has_dsn(h.opcode)) {
		h.dsn = S.peer_dsn + (b[5] == 0x7f ? 5000u : (u32)(s32)(s8)b[5]);
		if (!b[5])
			S.peer_dsn++;
	}
	qi = b[6] & 3;
	qp = &S.q[qi].qp;
	h.dst_qpn = b[6] < 0x80 ? QPN(qi) : 0x999;
	h.src_qpn = b[7] ? 0x300u + b[7] : PEER_QPN(qi);
	if (mr_op_is_response(h.opcode)) {
		u32 msn = (qp->sq_una + (u32)(s32)(s8)b[8]) & MR_MSN_MASK;
		const struct mr_msg *m = &qp->sq[msn & (qp->sq_slots - 1)];

		h.msn = msn;
		h.gen = b[9] ? b[9] : m->gen;
		h.msg_len = b[10] ? mlen[b[10] % 10] : m->len;
	} else {
		h.msn = (qp->rq_msn + (u32)(s32)(s8)b[8]) & MR_MSN_MASK;
		h.gen = b[9] ? b[9] : qp->rq_gen;
		h.msg_len = mlen[b[10] % 10];
	}
	/* bit 7: up to 255 segments in (the segment maps' overflow) */
	h.offset = (b[11] & 0x80 ? (b[11] & 0x7f) * 2u + (b[15] & 1) :
		    b[11] % 8u) * mtu;
	switch (b[12] % 6) {
	case 0:
		h.plen = 0;
		break;
	case 1:
		h.plen = 1;
		break;
	case 2:
		h.plen = (u16)mr_min32(mtu, h.msg_len > h.offset ?
				       h.msg_len - h.offset : 0);
		break;
	case 3:
		h.plen = (u16)(h.msg_len > h.offset ?
			       mr_min32(h.msg_len - h.offset, MR_MAX_PAYLOAD) : 0);
		break;
	default:
		h.plen = (u16)(b[12] * 16);
		break;
	}
	switch (h.opcode) {
	case MR_OP_READ_REQ:
	case MR_OP_CMP_SWAP:
	case MR_OP_FETCH_ADD:
	case MR_OP_ATOMIC_RESP:
	case MR_OP_NOP:
	case MR_OP_PROBE:
	case MR_OP_ACK_REQ:
		h.plen = 0;
		break;
	}
	if (h.opcode == MR_OP_READ_REQ)
		h.offset = 0;
	if (h.opcode == MR_OP_CMP_SWAP || h.opcode == MR_OP_FETCH_ADD ||
	    h.opcode == MR_OP_ATOMIC_RESP) {
		h.msg_len = 8;
		h.offset = 0;
	}
	if (h.opcode == MR_OP_NOP) {
		h.dst_qpn = h.src_qpn = h.msn = h.gen = 0;
		h.msg_len = h.offset = 0;
	}
	h.raddr = (b[13] & 0x80) ? VA + REGION - 4 : VA + (u64)(b[13] & 0x3f) * 512;
	if ((h.opcode == MR_OP_CMP_SWAP || h.opcode == MR_OP_FETCH_ADD) &&
	    !(b[13] & 0x20))
		h.raddr &= ~7ull;
	h.rkey = (b[13] & 0x40) ? RKEY ^ 1 : RKEY;
	h.ssn = b[14];
	h.imm = h.inv_rkey = b[15];
	h.swap_add = b[15];
	h.compare = b[14];
	h.orig = b[15];
	h.qkey = b[15];
	hl = mr_wire_encode(buf, sizeof(buf), &h);
	if (hl < 0)
		return;
	for (i = 0; i < h.plen; i++)
		buf[hl + i] = (u8)(i + b[15]);
	deliver(buf, (u32)hl + h.plen, ce);
}

static void struct_ack(void)
{
	static const u32 hints[] = { 0, 10, 1000, 25000, 100000, 0xffffffff };
	u8 hb[FZ_ACK_HDR];
	struct mr_ack a;
	struct mr_hdr h;
	static u8 buf[MR_BASE_HLEN + MR_ACKH_LEN +
		      MR_MAX_PATHS * MR_ACK_PATH_LEN +
		      MR_ACK_MAX_QP * MR_ACK_QP_LEN];
	u32 i, seen = 0;
	int len;

	for (i = 0; i < FZ_ACK_HDR; i++)
		hb[i] = get8();
	memset(&a, 0, sizeof(a));
	a.ack_epoch = hb[4] ? S.c.epoch + hb[4] : S.c.epoch;
	if (!a.ack_epoch)
		a.ack_epoch = 1;
	a.dsn_cum = S.c.dsn_una + (u32)(s32)(s8)hb[2];
	a.rate_hint = hints[hb[3] % 6];
	a.npath = (u8)(hb[0] % (MR_MAX_PATHS + 1));
	a.nqp = (u8)(hb[1] % 5);
	for (i = 0; i < a.npath; i++) {
		struct mr_ack_path *ap = &a.path[i];
		u8 id = get8(), off = get8(), pat = get8(), inc = get8();
		u8 inc2 = get8();
		const struct mr_path *p;
		u32 psn, k;
		u64 x;

		id %= MR_MAX_PATHS;
		while (seen & (1u << id))
			id = (id + 1) % MR_MAX_PATHS;
		seen |= 1u << id;
		p = &S.c.path[id];
		ap->path = id;
		ap->base = p->una + (u32)(s32)(s8)off;
		ap->tsecr = (u32)S.now - 20000 - inc2 * 1000u;
		x = pat * 0x9e3779b97f4a7c15ull + 1;
		for (psn = ap->base, k = 0; k < MR_PATH_WND; k++, psn++) {
			int set;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			if (pat == 0)
				set = mr_seq_lt(psn, p->nxt);
			else if (pat == 1)
				set = 0;
			else
				set = mr_seq_lt(psn, p->nxt) && (x & 1);
			if (set)
				ap->bitmap[k / 32] |= 1u << (k % 32);
		}
		S.ack_rx[id] += inc & 15;
		S.ack_ce[id] += mr_min32(inc >> 4, inc & 15);
		ap->rx_cnt = S.ack_rx[id];
		ap->ce_cnt = S.ack_ce[id];
	}
	for (i = 0; i < a.nqp; i++) {
		struct mr_ack_qp *aq = &a.qp[i];
		u8 st = get8(), qs = get8(), off = get8(), ga = get8();
		const struct mr_qp *qp = &S.q[qs & 3].qp;

		aq->status = st % (MR_QPS_MAX + 1);
		aq->qpn = qs & 0x80 ? 0x777 : QPN(qs & 3);
		aq->msn = (qp->sq_una + (u32)(s32)(s8)off) & MR_MSN_MASK;
		aq->gen = (qs & 0x40) ? ga : qp->gen;
		aq->aux = aq->status == MR_QPS_RNR ? (ga & 31u) : 0;
	}
	memset(&h, 0, sizeof(h));
	h.opcode = MR_OP_ACK;
	h.epoch = S.peer_epoch;
	h.tsval = (u32)S.now;
	len = mr_wire_encode_ack(buf, sizeof(buf), &h, &a);
	CHECK(len > 0);
	deliver(buf, (u32)len, 0);
}

/* Run the timers that are due, send, flush: no timer is left in the past. */
static void step_time(u16 v)
{
	u32 i;

	S.now += (u64)v * 500;
	for (i = 0; i < 4 && mr_conn_next_timer(&S.c) <= S.now; i++) {
		mr_conn_timer(&S.c, S.now);
		mr_conn_tx(&S.c, S.now, 1 << 20);
		mr_conn_rx_flush(&S.c, S.now);
	}
	if (!S.xmit_busy)
		CHECK(mr_conn_next_timer(&S.c) > S.now);
}

static void admin(void)
{
	u8 act = get8(), qs = get8();
	u32 i = qs & 3;
	struct mr_qp *qp = &S.q[i].qp;

	switch (act % 8) {
	case 0:
		mr_qp_set_error(qp, S.now);
		break;
	case 1:
		mr_qp_detach(qp);
		break;
	case 2: {
		struct mr_conn_cfg cfg = S.c.cfg;

		cfg.reorder_thresh = 1 + qs % 5;
		cfg.ack_every = 1 + qs % 32;
		cfg.max_window = 4096u << (qs % 12);
		cfg.min_window = mr_min32(cfg.min_window, cfg.max_window);
		cfg.init_window = cfg.min_window;
		cfg.pacing = !!(qs & 0x80);
		mr_conn_reconfigure(&S.c, &cfg);
		break;
	}
	case 3: {
		struct mr_fs_dev d;
		struct mr_conn *cs[1] = { &S.c };
		u32 dem[1], sh[1];

		mr_fs_init(&d, 1 + qs * 100);
		if (qs & 1)
			mr_fs_reshare(&d, cs, 1, dem, sh);
		else
			mr_fs_run(&d, cs, 1, dem, sh, S.now);
		mr_conn_rx_flush(&S.c, S.now);
		break;
	}
	case 4:
		if (!qp->conn) {
			u32 k;

			/* a fresh incarnation: old receives are gone */
			S.q[i].nrecv = 0;
			for (k = 0; k < S.nwr; k++)
				if (S.wr[k].qp == i)
					S.wr[k].done = 1;
			fz_connect(i, !(qs & 0x80));
		}
		break;
	case 5:
		mr_conn_rx_rate(&S.c, S.now, NULL);
		break;
	case 6: {
		/*
		 * The peer's challenge: a RESET naming our epoch (qs bit 0:
		 * another), with a cookie (qs bit 1: the same as before).
		 */
		static u8 buf[MR_BASE_HLEN + MR_RESET_LEN];
		struct mr_hdr h;
		int hl;

		memset(&h, 0, sizeof(h));
		h.opcode = MR_OP_RESET;
		h.epoch = S.peer_epoch;
		h.reset_epoch = S.c.epoch + (qs & 1);
		h.cookie = (qs & 2) && S.c.cookie ? S.c.cookie :
			   0x5000000000000000ull + qs + S.now;
		hl = mr_wire_encode(buf, sizeof(buf), &h);
		CHECK(hl == MR_BASE_HLEN + MR_RESET_LEN);
		deliver(buf, (u32)hl, 0);
		break;
	}
	default:
		S.xmit_busy = !S.xmit_busy;
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	u32 steps = 0;

	memset(&S, 0, sizeof(S));
	S.in = data;
	S.left = size;
	setup();
	check_invariants();
	while (S.left && steps++ < 2000) {
		u8 k = get8();

		switch (k & 7) {
		case FZ_RAW: {
			static u8 buf[2048];
			u32 len = get16() % sizeof(buf), i;

			for (i = 0; i < len && S.left; i++)
				buf[i] = get8();
			deliver(buf, i, k & FZ_CE);
			break;
		}
		case FZ_DATA:
			struct_data(k & FZ_CE);
			break;
		case FZ_ACK:
			struct_ack();
			break;
		case FZ_TIME:
			step_time(get16());
			break;
		case FZ_TX:
			mr_conn_tx(&S.c, S.now, get8());
			break;
		case FZ_FLUSH:
			mr_conn_rx_flush(&S.c, S.now);
			break;
		case FZ_POST: {
			u8 q = get8(), op = get8(), len = get8();

			if (q & 0x80)
				post_recv(q & 3, len_sel[len % NLEN]);
			else
				post_wr(q & 3, op, len);
			break;
		}
		default:
			admin();
			break;
		}
		check_invariants();
	}
	/* the engine never strands time: run it out */
	S.xmit_busy = 0;
	step_time(0);
	check_invariants();
	return 0;
}
