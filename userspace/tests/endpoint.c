// SPDX-License-Identifier: GPL-2.0-only
/*
 * One engine connection with a recording environment (see endpoint.h).
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "endpoint.h"

static struct ep *ep_of(void *env)
{
	return env;
}

static int ep_xmit(void *env, struct mr_conn *c, const struct mr_txpkt *t)
{
	static u8 buf[MR_HLEN_MAX + MR_ACK_MAX_QP * MR_ACK_QP_LEN +
		      MR_MAX_PATHS * MR_ACK_PATH_LEN + MR_MAX_PAYLOAD];
	struct ep *e = ep_of(env);
	struct ep_tx *x;
	int hl;

	(void)c;
	e->xmit_calls++;
	if (e->xmit_ret)
		return e->xmit_ret;
	if (e->xmit_gone && t->plen)
		return MR_XMIT_GONE;
	if (e->ntx == e->txcap) {
		e->txcap = e->txcap ? 2 * e->txcap : 1024;
		e->tx = realloc(e->tx, e->txcap * sizeof(*e->tx));
		assert(e->tx);
	}
	assert(t->hlen + t->plen <= sizeof(buf));
	memcpy(buf, t->hdr, t->hlen);
	memset(buf + t->hlen, 0, t->plen);
	x = &e->tx[e->ntx];
	memset(x, 0, sizeof(*x));
	hl = mr_wire_decode(buf, t->hlen + t->plen, &x->h, &x->ack);
	/* The engine only sends packets its own decoder accepts. */
	assert(hl == (int)t->hlen);
	x->at = e->now;
	x->cookie = t->cookie;
	x->key = t->key;
	x->offset = t->offset;
	x->sport = t->sport;
	x->path = t->path;
	x->kind = t->kind;
	x->ctrl = t->ctrl;
	e->ntx++;
	return 0;
}

static void ep_complete(void *env, struct mr_qp *qp, const struct mr_cqe *cqe)
{
	struct ep *e = ep_of(env);

	assert(e->ncqe < EP_MAX_CQE);
	e->cqe[e->ncqe].qp = qp;
	e->cqe[e->ncqe].cqe = *cqe;
	e->ncqe++;
}

static void ep_qp_error(void *env, struct mr_qp *qp, int status)
{
	struct ep *e = ep_of(env);

	e->nerr++;
	e->err_status[qp - e->qp] = status;
}

static int ep_bind_recv(void *env, struct mr_qp *qp, u32 ssn, u64 *cookie,
			u32 *len)
{
	struct ep *e = ep_of(env);
	u32 i = (u32)(qp - e->qp);

	e->nbind++;
	if (ssn >= e->recv_posted[i])
		return -1;
	*cookie = 0x10000000ull * (i + 1) + ssn;
	*len = e->recv_len;
	return 0;
}

static int ep_execute(void *env, struct mr_qp *qp, const struct mr_hdr *req,
		      u64 *result)
{
	struct ep *e = ep_of(env);

	(void)qp;
	if (e->nexec < 64)
		e->exec_req[e->nexec] = *req;
	e->nexec++;
	*result = e->exec_result;
	return e->exec_status;
}

static struct mr_qp *ep_lookup(void *env, struct mr_conn *c, u32 qpn)
{
	struct ep *e = ep_of(env);
	u32 i;

	(void)c;
	for (i = 0; i < EP_QPS; i++)
		if (e->qp[i].conn && e->qp[i].qpn == qpn)
			return &e->qp[i];
	return NULL;
}

static u64 ep_host_window(void *env, struct mr_conn *c, s64 delta)
{
	struct ep_host *h = ep_of(env)->host;

	(void)c;
	if (!h)
		return 0;
	h->calls++;
	h->inflight += delta;
	return h->inflight < (s64)h->target ? h->target - (u64)h->inflight : 0;
}

u64 ep_cookie(struct ep *e, u32 epoch, int prev)
{
	u64 x = e->cookie_key[prev ? 1 : 0];

	if (!x)
		return 0;
	x ^= epoch;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	/* never 0, never EP_COOKIE */
	return (x ^ (x >> 31)) | 0x100;
}

static u64 ep_cookie_op(void *env, struct mr_conn *c, u32 epoch, int prev)
{
	struct ep *e = ep_of(env);

	(void)c;
	e->cookie_calls++;
	return ep_cookie(e, epoch, prev);
}

static const struct mr_env_ops ep_ops = {
	.xmit = ep_xmit,
	.complete = ep_complete,
	.qp_error = ep_qp_error,
	.bind_recv = ep_bind_recv,
	.execute = ep_execute,
	.lookup_qp = ep_lookup,
	.host_window = ep_host_window,
	.cookie = ep_cookie_op,
};

struct ep *ep_new(const struct mr_conn_cfg *cfg, u32 epoch, u32 peer_epoch,
		  u64 seed)
{
	struct ep *e = calloc(1, sizeof(*e));
	struct mr_conn_cfg def;
	u32 i;

	assert(e);
	if (!cfg) {
		mr_conn_cfg_default(&def);
		cfg = &def;
	}
	assert(cfg->seg_wnd <= EP_SEGS);
	e->now = 1000000;
	e->peer_epoch = peer_epoch;
	e->recv_len = 1 << 20;
	e->cookie_key[0] = 0x5eed0000c0c0ull ^ (seed << 20);
	for (i = 0; i < EP_QPS; i++) {
		mr_qp_init_slots(&e->qp[i], EP_QPN(i), &e->slots[i]);
		e->err_status[i] = -1;
	}
	if (mr_conn_init(&e->c, cfg, e->segs, &ep_ops, e, epoch, seed, e->now))
		abort();
	/* Our sender has been challenged already: data goes out at once. */
	e->c.cookie = EP_PEER_COOKIE;
	return e;
}

void ep_free(struct ep *e)
{
	free(e->tx);
	free(e);
}

void ep_qp_attr_default(struct mr_qp_attr *a, u32 i)
{
	memset(a, 0, sizeof(*a));
	a->dest_qpn = EP_PEER_QPN(i);
	a->sq_psn = 0x100;
	a->rq_psn = 0x200;
	a->seg_size = 1024;
	a->timeout_ns = 0;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->min_rnr_timer = 1;
	a->max_rd_atomic = 16;
	a->max_dest_rd_atomic = 16;
}

struct mr_qp *ep_qp(struct ep *e, u32 i, const struct mr_qp_attr *a)
{
	struct mr_qp_attr def;
	struct mr_qp *qp = &e->qp[i];

	if (!a) {
		ep_qp_attr_default(&def, i);
		a = &def;
	}
	if (mr_qp_connect(qp, &e->c, a, e->now) || mr_qp_rts(qp, a, e->now))
		abort();
	return qp;
}

int ep_post(struct ep *e, u32 i, u8 op, u32 len, u64 cookie)
{
	struct mr_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.cookie = cookie;
	wr.opcode = op;
	wr.len = len;
	wr.rkey = EP_RKEY;
	wr.raddr = 0x10000;
	return mr_qp_post(&e->qp[i], &wr, e->now);
}

int ep_tx(struct ep *e)
{
	return mr_conn_tx(&e->c, e->now, 1 << 20);
}

void ep_tx_clear(struct ep *e)
{
	e->ntx = 0;
}

u32 ep_count(const struct ep *e, u32 from, u8 opcode)
{
	u32 i, n = 0;

	for (i = from; i < e->ntx; i++)
		if (e->tx[i].h.opcode == opcode)
			n++;
	return n;
}

int ep_last(const struct ep *e, u8 opcode)
{
	int i;

	for (i = (int)e->ntx - 1; i >= 0; i--)
		if (e->tx[i].h.opcode == opcode)
			return i;
	return -1;
}

static int ep_deliver(struct ep *e, const u8 *buf, u32 len, int ce)
{
	struct mr_hdr h;
	struct mr_ack ack;
	struct mr_qp *qp = NULL;
	struct mr_rx *rx = &e->last_rx;
	int hl;

	hl = mr_wire_decode(buf, len, &h, &ack);
	if (hl < 0)
		return hl;
	if (h.opcode != MR_OP_ACK)
		qp = ep_lookup(e, &e->c, h.dst_qpn);
	mr_conn_rx(&e->c, qp, &h, &ack, ce, e->now, rx);
	if (rx->action != MR_RXA_NONE && rx->action != MR_RXA_DROP) {
		e->rx_done_calls++;
		mr_conn_rx_done(&e->c, &h, rx, e->rx_status, e->rx_result,
				e->now);
	}
	return rx->action;
}

int ep_rx(struct ep *e, const struct mr_hdr *h, int ce)
{
	static u8 buf[MR_HLEN_MAX + MR_MAX_PAYLOAD];
	struct mr_hdr x = *h;
	int hl;

	x.epoch = x.epoch ? x.epoch : e->peer_epoch;
	if ((x.flags & MR_F_SYN) && x.cookie == EP_COOKIE)
		x.cookie = ep_cookie(e, x.epoch, 0);
	hl = mr_wire_encode(buf, sizeof(buf), &x);
	if (hl < 0)
		return hl;
	memset(buf + hl, 0x5a, x.plen);
	return ep_deliver(e, buf, (u32)hl + x.plen, ce);
}

int ep_rx_ack(struct ep *e, const struct mr_ack *ack)
{
	static u8 buf[MR_BASE_HLEN + MR_ACKH_LEN +
		      MR_MAX_PATHS * MR_ACK_PATH_LEN +
		      MR_ACK_MAX_QP * MR_ACK_QP_LEN];
	struct mr_hdr h;
	int len;

	memset(&h, 0, sizeof(h));
	h.opcode = MR_OP_ACK;
	h.epoch = e->peer_epoch;
	h.tsval = (u32)e->now;
	len = mr_wire_encode_ack(buf, sizeof(buf), &h, ack);
	if (len < 0)
		return len;
	return ep_deliver(e, buf, (u32)len, 0);
}

void ep_hdr_nop(struct ep *e, struct mr_hdr *h, u32 path, u32 psn, u32 dsn)
{
	memset(h, 0, sizeof(*h));
	h->opcode = MR_OP_NOP;
	h->epoch = e->peer_epoch;
	h->flags = MR_F_SYN;
	/*
	 * The peer has nothing acknowledged yet: its data starts at its epoch.
	 * It has answered our challenge.
	 */
	h->syn_dsn = e->peer_epoch;
	h->cookie = EP_COOKIE;
	h->path = (u8)path;
	h->psn = psn;
	h->dsn = dsn;
	h->tsval = (u32)e->now;
}

void ep_hdr_req(struct ep *e, struct mr_hdr *h, u8 opcode, u32 qp, u32 msn,
		u32 path, u32 psn, u32 dsn, u32 msg_len, u32 offset, u32 plen)
{
	memset(h, 0, sizeof(*h));
	h->opcode = opcode;
	h->epoch = e->peer_epoch;
	h->flags = MR_F_SYN;
	/*
	 * The peer has nothing acknowledged yet: its data starts at its epoch.
	 * It has answered our challenge.
	 */
	h->syn_dsn = e->peer_epoch;
	h->cookie = EP_COOKIE;
	h->path = (u8)path;
	h->psn = psn;
	h->dsn = dsn;
	h->tsval = (u32)e->now;
	h->dst_qpn = EP_QPN(qp);
	h->src_qpn = EP_PEER_QPN(qp);
	h->msn = msn & MR_MSN_MASK;
	h->msg_len = msg_len;
	h->offset = offset;
	h->plen = (u16)plen;
	if (opcode == MR_OP_WRITE || opcode == MR_OP_READ_REQ ||
	    opcode == MR_OP_CMP_SWAP || opcode == MR_OP_FETCH_ADD) {
		h->raddr = 0x40000;
		h->rkey = EP_RKEY;
	}
}

void ep_ack_init(struct ep *e, struct mr_ack *a)
{
	memset(a, 0, sizeof(*a));
	a->ack_epoch = e->c.epoch;
	a->dsn_cum = e->c.dsn_una;
	a->rate_hint = e->c.rate_hint;	/* the peer's grant stays */
}

struct mr_ack_path *ep_ack_path(struct mr_ack *a, u32 path, u32 base)
{
	struct mr_ack_path *ap = &a->path[a->npath++];

	assert(a->npath <= MR_MAX_PATHS);
	memset(ap, 0, sizeof(*ap));
	ap->path = (u8)path;
	ap->base = base;
	return ap;
}

void ep_ack_set(struct mr_ack_path *ap, u32 psn)
{
	u32 d = psn - ap->base;

	assert(d < MR_PATH_WND);
	ap->bitmap[d / 32] |= 1u << (d % 32);
}

void ep_ack_sent(struct ep *e, struct mr_ack *a, u32 path, u32 from_tx,
		 u32 echo_tsval)
{
	struct mr_ack_path *ap = ep_ack_path(a, path, e->c.path[path].una);
	u32 i;

	ap->tsecr = echo_tsval;
	for (i = from_tx; i < e->ntx; i++) {
		const struct mr_hdr *h = &e->tx[i].h;

		if (mr_op_sequenced(h->opcode) && h->path == path &&
		    !mr_seq_lt(h->psn, ap->base))
			ep_ack_set(ap, h->psn);
	}
}

void ep_ack_qp(struct mr_ack *a, u8 status, u32 qpn, u8 gen, u32 msn,
	       u32 aux)
{
	struct mr_ack_qp *q = &a->qp[a->nqp++];

	assert(a->nqp <= MR_ACK_MAX_QP);
	q->status = status;
	q->qpn = qpn;
	q->gen = gen;
	q->msn = msn & MR_MSN_MASK;
	q->aux = aux;
}

u32 ep_ncqe(const struct ep *e, const struct mr_qp *qp, u32 from)
{
	u32 i, n = 0;

	for (i = from; i < e->ncqe; i++)
		if (!qp || e->cqe[i].qp == qp)
			n++;
	return n;
}

void ep_standing_queue(struct mr_conn *c)
{
	u32 i;

	for (i = 0; i < c->npaths; i++) {
		c->path[i].min_rtt = 20000;
		c->path[i].srtt = 80000 + c->cfg.rto_min_ns / 4;
	}
}

u32 ep_landed(const struct ep *e, const struct mr_segmap *m)
{
	u32 n = m->lo + (u32)__builtin_popcount(m->bits[0]) +
		(u32)__builtin_popcount(m->bits[1]);
	u16 id;

	if (!m->size)		/* a last segment kept aside, or none */
		return m->lo + !!m->bits[0];
	for (id = m->ext; id; id = e->c.segx_next[id - 1]) {
		u32 base = e->c.segx_blk[id - 1] * 64;
		u64 b = e->c.segx_bits[id - 1];

		/* the window's own segments count there */
		if (base < m->lo + 64)
			b &= ~0ull << (m->lo + 64 - base);
		n += (u32)__builtin_popcountll(b);
	}
	return n;
}
