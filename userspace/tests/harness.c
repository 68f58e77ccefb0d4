// SPDX-License-Identifier: GPL-2.0-only
/*
 * Two-host test network for the engine (see harness.h).
 */
#include <string.h>
#include <assert.h>
#include "harness.h"

#define H_RKEY_BASE	0x1000

struct h_wr_ext {
	u32 qp;
	int posted;
};

static struct h_wr_ext h_ext[2][H_MAX_WR];

u64 h_rand(struct h_net *n)
{
	u64 x = n->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	n->rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static int h_chance(struct h_net *n, u32 ppm)
{
	return ppm && (h_rand(n) % 1000000) < ppm;
}

static void h_enqueue(struct h_net *n, struct h_pkt *p)
{
	struct h_pkt **pp = &n->q;

	p->seq = n->seq++;
	while (*pp && ((*pp)->at < p->at ||
		       ((*pp)->at == p->at && (*pp)->seq < p->seq)))
		pp = &(*pp)->next;
	p->next = *pp;
	*pp = p;
}

static struct h_host *h_env(void *env)
{
	return env;
}

static int h_xmit(void *env, struct mr_conn *c, const struct mr_txpkt *t)
{
	struct h_host *h = h_env(env);
	struct h_net *n = h->net;
	struct h_link *l = &n->link[h->id];
	u32 len = t->hlen + t->plen;
	struct h_pkt *p = malloc(sizeof(*p) + len);
	u64 at;
	int copies = 1, i;

	assert(p);
	memcpy(p->data, t->hdr, t->hlen);
	if (t->plen) {
		u64 src;

		if (t->kind == MR_TX_REQ)
			src = h->wrs[t->cookie].laddr + t->offset;
		else
			src = t->cookie + t->offset;
		assert(src + t->plen <= h->memlen);
		memcpy(p->data + t->hlen, h->mem + src, t->plen);
	}
	p->len = len;
	p->dst = 1 - h->id;
	p->ce = h_chance(n, (u32)l->ce_ppm);
	l->sent++;
	if (l->down || h_chance(n, l->loss_ppm)) {
		l->dropped++;
		free(p);
		return 0;
	}
	at = n->now;
	if (n->filter && n->filter(n, h->id, p->data, len, &at)) {
		l->dropped++;
		free(p);
		return 0;
	}
	if (l->rate_bps) {
		u64 ser = (u64)(len + 42) * 8 * 1000000000ull / l->rate_bps;

		l->busy_until = (l->busy_until > at ? l->busy_until : at) + ser;
		at = l->busy_until;
	}
	at += l->delay_ns;
	if (h_chance(n, l->reorder_ppm))
		at += l->reorder_ns;
	if (h_chance(n, l->dup_ppm))
		copies = 2;
	for (i = 0; i < copies; i++) {
		struct h_pkt *q = p;

		if (i) {
			q = malloc(sizeof(*q) + len);
			assert(q);
			memcpy(q, p, sizeof(*q) + len);
			at += 1000;
		}
		q->at = at;
		h_enqueue(n, q);
	}
	(void)c;
	return 0;
}

static void h_complete(void *env, struct mr_qp *qp, const struct mr_cqe *cqe)
{
	struct h_host *h = h_env(env);

	assert(h->ncqe < H_MAX_CQE);
	h->cqe_qp[h->ncqe] = (u16)((struct h_qp *)qp - h->qps);
	h->cqes[h->ncqe++] = *cqe;
	if (cqe->opcode != MR_WC_RECV && cqe->opcode != MR_WC_RECV_WRITE_IMM) {
		struct h_wr *w = &h->wrs[cqe->cookie];

		assert(!w->done);
		w->done = 1;
		w->done_at = h->net->now;
		w->cqe = *cqe;
	} else {
		struct h_qp *hq = (struct h_qp *)qp;
		u32 ssn = H_COOKIE_SSN(cqe->cookie);

		/* Each receive completes once, in the order posted. */
		assert(ssn < hq->nrecv && hq->recv[ssn].used == 1);
		assert(!ssn || hq->recv[ssn - 1].used == 2);
		hq->recv[ssn].used = 2;
	}
}

static void h_qp_error(void *env, struct mr_qp *qp, int status)
{
	struct h_host *h = h_env(env);

	h->qp_errors++;
	h->qp_err_status[(struct h_qp *)qp - h->qps] = status;
	if (h->net->trace)
		fprintf(stderr, "# host %d qp %u error %d\n", h->id, qp->qpn,
			status);
}

static int h_bind_recv(void *env, struct mr_qp *qp, u32 ssn, u64 *cookie,
		       u32 *len)
{
	struct h_qp *hq = (struct h_qp *)qp;

	(void)env;
	/* Bound again only after an RNR rewind: the same receive. */
	if (ssn >= hq->nrecv || hq->recv[ssn].used > 1)
		return -1;
	hq->recv[ssn].used = 1;
	*cookie = H_RECV_COOKIE(ssn, hq - hq->host->qps);
	*len = hq->recv[ssn].len;
	return 0;
}

static int h_check(struct h_host *h, u32 rkey, u64 addr, u64 len)
{
	return rkey == h->rkey && addr <= h->memlen && len <= h->memlen - addr;
}

static int h_execute(void *env, struct mr_qp *qp, const struct mr_hdr *req,
		     u64 *result)
{
	struct h_host *h = h_env(env);
	u64 *v;

	(void)qp;
	if (req->opcode == MR_OP_READ_REQ) {
		if (!h_check(h, req->rkey, req->raddr, req->msg_len))
			return MR_RXS_ACCESS;
		*result = req->raddr;
		return MR_RXS_OK;
	}
	if (!h_check(h, req->rkey, req->raddr, 8))
		return MR_RXS_ACCESS;
	v = (u64 *)(h->mem + req->raddr);
	*result = *v;
	if (req->opcode == MR_OP_FETCH_ADD)
		*v += req->swap_add;
	else if (*v == req->compare)
		*v = req->swap_add;
	return MR_RXS_OK;
}

static struct mr_qp *h_lookup(void *env, struct mr_conn *c, u32 qpn)
{
	struct h_host *h = h_env(env);
	u32 i;

	(void)c;
	for (i = 0; i < h->nqps; i++)
		if (h->qps[i].qp.qpn == qpn)
			return &h->qps[i].qp;
	return NULL;
}

/*
 * A keyed mix of the two hosts (their addresses), the MetaRoCE port both
 * use and the epoch: a stand-in for the kernel's SipHash, which is all a
 * test needs (it is never 0 for the current key).
 */
u64 h_cookie(struct h_host *h, u32 epoch, int prev)
{
	u64 k = h->cookie_key[prev ? 1 : 0];
	u64 x;

	if (!k)
		return 0;
	x = k ^ ((u64)h->id << 48) ^ ((u64)(1 - h->id) << 40) ^
	    (4797ull << 24) ^ epoch;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x ? x : 1;
}

static u64 h_cookie_op(void *env, struct mr_conn *c, u32 epoch, int prev)
{
	(void)c;
	return h_cookie(h_env(env), epoch, prev);
}

void h_cookie_rotate(struct h_net *n, int hi)
{
	struct h_host *h = &n->host[hi];

	h->cookie_key[1] = h->cookie_key[0];
	h->cookie_key[0] = h_rand(n) | 1;
}

const struct mr_env_ops h_ops = {
	.xmit = h_xmit,
	.complete = h_complete,
	.qp_error = h_qp_error,
	.bind_recv = h_bind_recv,
	.execute = h_execute,
	.lookup_qp = h_lookup,
	.cookie = h_cookie_op,
};

struct h_net *h_net_new(const struct mr_conn_cfg *cfg, u64 memlen, u64 seed,
			u32 epoch_a, u32 epoch_b)
{
	struct h_net *n = calloc(1, sizeof(*n));
	struct mr_conn_cfg def;
	int i;

	assert(n);
	if (!cfg) {
		mr_conn_cfg_default(&def);
		cfg = &def;
	}
	assert(cfg->seg_wnd <= H_SEGS);
	n->rng = seed | 1;
	for (i = 0; i < 2; i++) {
		struct h_host *h = &n->host[i];

		h->id = i;
		h->net = n;
		h->memlen = memlen;
		h->mem = calloc(1, memlen);
		h->rkey = H_RKEY_BASE + i;
		/* Not from n->rng: the links' randomness stays as it was. */
		h->cookie_key[0] = (seed + i + 1) * 0x9e3779b97f4a7c15ull | 1;
		assert(h->mem);
		if (mr_conn_init(&h->conn, cfg, h->segs, &h_ops, h,
				 i ? epoch_b : epoch_a, seed + i, 0))
			abort();
		n->link[i].delay_ns = 5000;
	}
	memset(h_ext, 0, sizeof(h_ext));
	return n;
}

void h_net_free(struct h_net *n)
{
	while (n->q) {
		struct h_pkt *p = n->q;

		n->q = p->next;
		free(p);
	}
	free(n->host[0].mem);
	free(n->host[1].mem);
	free(n);
}

void h_attr_default(struct h_net *n, struct mr_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->seg_size = n->host[0].conn.cfg.mtu;
	a->timeout_ns = 0;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->min_rnr_timer = 1;
	a->max_rd_atomic = 16;
	a->max_dest_rd_atomic = 16;
}

void h_connect(struct h_net *n, u32 i, u32 psn_a, u32 psn_b)
{
	struct mr_qp_attr a;

	h_attr_default(n, &a);
	h_connect_attr(n, i, psn_a, psn_b, &a);
}

void h_connect_attr(struct h_net *n, u32 i, u32 psn_a, u32 psn_b,
		    const struct mr_qp_attr *tmpl)
{
	int k;

	assert(i < H_MAX_QPS);
	for (k = 0; k < 2; k++) {
		struct h_host *h = &n->host[k];
		struct h_qp *q = &h->qps[i];
		struct mr_qp_attr a = *tmpl;

		mr_qp_init_slots(&q->qp, 0x100 + 0x10 * k + i, &q->slots);
		q->host = h;
		q->nrecv = 0;
		a.dest_qpn = 0x100 + 0x10 * (1 - k) + i;
		a.rq_psn = k ? psn_a : psn_b;
		a.sq_psn = k ? psn_b : psn_a;
		if (!a.seg_size)
			a.seg_size = h->conn.cfg.mtu;
		if (mr_qp_connect(&q->qp, &h->conn, &a, n->now) ||
		    mr_qp_rts(&q->qp, &a, n->now))
			abort();
		if (h->nqps <= i)
			h->nqps = i + 1;
	}
}

static void h_pump(struct h_net *n, int hi)
{
	struct h_host *h = &n->host[hi];
	u32 i;

	while (h->nposted < h->nwr && h_ext[hi][h->nposted].posted)
		h->nposted++;
	for (i = h->nposted; i < h->nwr; i++) {
		struct h_wr_ext *e = &h_ext[hi][i];

		if (e->posted)
			continue;
		if (mr_qp_post(&h->qps[e->qp].qp, &h->wrs[i].wr, n->now))
			continue;
		e->posted = 1;
	}
}

static int h_add(struct h_net *n, int hi, u32 i, u8 op, u64 laddr, u32 len,
		 u64 raddr, u32 imm)
{
	struct h_host *h = &n->host[hi];
	struct h_wr *w;

	if (h->nwr >= H_MAX_WR)
		return -1;
	w = &h->wrs[h->nwr];
	memset(w, 0, sizeof(*w));
	w->laddr = laddr;
	w->wr.cookie = h->nwr;
	w->wr.opcode = op;
	w->wr.len = len;
	w->wr.raddr = raddr;
	w->wr.rkey = n->host[1 - hi].rkey;
	w->wr.imm = imm;
	h_ext[hi][h->nwr].qp = i;
	h->nwr++;
	return (int)h->nwr - 1;
}

int h_post_wr(struct h_net *n, int hi, u32 i, const struct mr_wr *wr,
	      u64 laddr)
{
	struct h_host *h = &n->host[hi];
	int k = h_add(n, hi, i, wr->opcode, laddr, wr->len, wr->raddr,
		      wr->imm);

	if (k < 0)
		return k;
	h->wrs[k].wr = *wr;
	h->wrs[k].wr.cookie = (u64)k;
	h_pump(n, hi);
	return k;
}

int h_post(struct h_net *n, int hi, u32 i, u8 op, u64 laddr, u32 len,
	   u64 raddr, u32 imm)
{
	int k = h_add(n, hi, i, op, laddr, len, raddr, imm);

	h_pump(n, hi);
	return k;
}

int h_post_atomic(struct h_net *n, int hi, u32 i, u8 op, u64 laddr,
		  u64 raddr, u64 swap_add, u64 compare)
{
	int k = h_add(n, hi, i, op, laddr, 8, raddr, 0);

	if (k < 0)
		return k;
	n->host[hi].wrs[k].wr.swap_add = swap_add;
	n->host[hi].wrs[k].wr.compare = compare;
	h_pump(n, hi);
	return k;
}

void h_post_recv(struct h_net *n, int hi, u32 i, u64 addr, u32 len)
{
	struct h_qp *q = &n->host[hi].qps[i];

	assert(q->nrecv < H_MAX_RECV);
	q->recv[q->nrecv].addr = addr;
	q->recv[q->nrecv].len = len;
	q->recv[q->nrecv].used = 0;
	q->nrecv++;
}

static void h_deliver(struct h_net *n, struct h_pkt *p)
{
	struct h_host *h = &n->host[p->dst];
	struct mr_hdr hd;
	struct mr_ack ack;
	struct mr_rx rx;
	struct mr_qp *qp = NULL;
	const u8 *pl;
	int hl, st = MR_RXS_OK;

	hl = mr_wire_decode(p->data, p->len, &hd, &ack);
	if (hl < 0) {
		h->decode_drops++;
		return;
	}
	pl = p->data + hl;
	if (hd.opcode != MR_OP_ACK)
		qp = h_lookup(h, &h->conn, hd.dst_qpn);
	mr_conn_rx(&h->conn, qp, &hd, &ack, p->ce, n->now, &rx);
	switch (rx.action) {
	case MR_RXA_NONE:
		return;
	case MR_RXA_DROP:
		h->drops[rx.reason]++;
		return;
	case MR_RXA_WRITE:
		if (!h_check(h, hd.rkey, hd.raddr + hd.offset, hd.plen)) {
			st = MR_RXS_ACCESS;
			break;
		}
		memcpy(h->mem + hd.raddr + hd.offset, pl, hd.plen);
		break;
	case MR_RXA_SEND: {
		struct h_qp *q = &h->qps[H_COOKIE_QP(rx.cookie)];
		struct h_recv *r = &q->recv[H_COOKIE_SSN(rx.cookie)];

		if (hd.offset + hd.plen > r->len) {
			st = MR_RXS_LENGTH;
			break;
		}
		/* A receive buffer outside memory models a bad lkey. */
		if (r->addr > h->memlen || r->len > h->memlen - r->addr) {
			st = MR_RXS_LOCAL;
			break;
		}
		memcpy(h->mem + r->addr + hd.offset, pl, hd.plen);
		break;
	}
	case MR_RXA_READ_RESP: {
		struct h_wr *w = &h->wrs[rx.cookie];

		assert(rx.cookie < h->nwr && hd.offset + hd.plen <= w->wr.len &&
		       w->laddr + w->wr.len <= h->memlen);
		memcpy(h->mem + w->laddr + hd.offset, pl, hd.plen);
		break;
	}
	case MR_RXA_ATOMIC_RESP: {
		struct h_wr *w = &h->wrs[rx.cookie];

		assert(rx.cookie < h->nwr && w->laddr + 8 <= h->memlen);
		memcpy(h->mem + w->laddr, &hd.orig, 8);
		break;
	}
	}
	mr_conn_rx_done(&h->conn, &hd, &rx, st, 0, n->now);
}

void h_inject(struct h_net *n, int dst, const u8 *buf, u32 len)
{
	struct h_pkt *p = malloc(sizeof(*p) + len);

	assert(p);
	memcpy(p->data, buf, len);
	p->len = len;
	p->dst = dst;
	p->ce = 0;
	p->at = n->now;
	h_enqueue(n, p);
}

static void h_kick(struct h_net *n, int hi)
{
	struct h_host *h = &n->host[hi];

	mr_conn_rx_flush(&h->conn, n->now);
	h_pump(n, hi);
	mr_conn_tx(&h->conn, n->now, 1 << 20);
}

int h_all_done(struct h_net *n)
{
	int k;
	u32 i;

	for (k = 0; k < 2; k++)
		for (i = 0; i < n->host[k].nwr; i++)
			if (!n->host[k].wrs[i].done)
				return 0;
	return 1;
}

static int h_step(struct h_net *n, u64 deadline)
{
	u64 t = MR_U64_MAX, t0, t1;
	int k;

	t0 = mr_conn_next_timer(&n->host[0].conn);
	t1 = mr_conn_next_timer(&n->host[1].conn);
	t = n->q ? n->q->at : MR_U64_MAX;
	t = t0 < t ? t0 : t;
	t = t1 < t ? t1 : t;
	if (t == MR_U64_MAX || t > deadline)
		return 0;
	if (t > n->now)
		n->now = t;
	if (n->q && n->q->at <= n->now) {
		struct h_pkt *p = n->q;

		n->q = p->next;
		h_deliver(n, p);
		n->delivered++;
		k = p->dst;
		free(p);
		/* Deliver everything due now before flushing, like NAPI. */
		while (n->q && n->q->at <= n->now && n->q->dst == k) {
			p = n->q;
			n->q = p->next;
			h_deliver(n, p);
			n->delivered++;
			free(p);
		}
		h_kick(n, k);
		return 1;
	}
	for (k = 0; k < 2; k++) {
		if (mr_conn_next_timer(&n->host[k].conn) <= n->now) {
			mr_conn_timer(&n->host[k].conn, n->now);
			h_kick(n, k);
		}
	}
	return 1;
}

int h_run(struct h_net *n, u64 deadline_ns)
{
	h_kick(n, 0);
	h_kick(n, 1);
	while (!h_all_done(n)) {
		if (!h_step(n, deadline_ns))
			return h_all_done(n) ? 0 : -1;
	}
	/* Let the final ACKs settle. */
	h_run_for(n, 1000000);
	return 0;
}

void h_run_for(struct h_net *n, u64 ns)
{
	u64 end = n->now + ns;

	h_kick(n, 0);
	h_kick(n, 1);
	while (h_step(n, end))
		;
	n->now = end;
}
