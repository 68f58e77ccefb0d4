// SPDX-License-Identifier: GPL-2.0-only
/*
 * RoCEv2 baseline, as deployed on a lossy (no PFC) fabric:
 *
 *  - one path per QP: the UDP source port is chosen once per QP, so ECMP
 *    keeps the whole QP on one route (one plane);
 *  - go-back-N: the responder accepts only the expected PSN; the first
 *    out-of-sequence packet triggers one NAK (sequence error) and the
 *    requester resends from the NAK's PSN; otherwise a retransmit timeout
 *    (no ACK progress for rto_ns) resends from the oldest unacknowledged
 *    packet. ACKs are coalesced (every ack_every packets and at the end
 *    of each message), duplicates are re-acknowledged;
 *  - DCQCN-like rate control (structure of Zhu et al., SIGCOMM 2015):
 *    the notification point sends a CNP when a CE-marked packet arrives,
 *    at most one per QP per cnp_interval; the reaction point cuts
 *    Rt = Rc, Rc *= 1 - alpha/2, alpha = (1-g) alpha + g; alpha decays by
 *    (1-g) every alpha_timer without CNP; rate increase events come from a
 *    timer (every rate_timer) and a byte counter (every byte_counter bytes
 *    sent): fast recovery Rc = (Rt + Rc)/2 for the first F events, then
 *    additive increase Rt += R_AI, then hyper increase Rt += i * R_HAI once
 *    both counters passed F. Flows start at line rate.
 *
 * Written from the published descriptions; it is a model, not a NIC.
 */
#include <string.h>
#include <assert.h>
#include "sim.h"

enum {
	R_DATA = 1,
	R_ACK,
	R_NAK,
	R_CNP,
};

struct rqp {
	struct flow *f;
	u16 sport;
	u64 line_bps;
	u32 npkts;
	u32 ppm;		/* packets per full message */
	/* requester */
	u32 una, nxt;
	u64 last_progress;
	u64 next_send;
	u64 tx_at;		/* live EV_ROCE_TX time, or MAX */
	u64 timer_at;		/* live EV_ROCE_TIMER time, or MAX */
	double rc, rt, alpha;
	u64 last_cnp;
	u64 next_alpha, next_rate;
	u64 bytes_acc;
	u32 t_cnt, b_cnt;
	/* responder */
	u32 epsn;
	u8 nak_sent;
	u32 ack_pending;
	u64 last_cnp_tx;
};

void roce_default_cfg(struct roce_cfg *rc)
{
	memset(rc, 0, sizeof(*rc));
	rc->mtu = 4096;
	rc->ack_every = 16;
	rc->max_out = 1024;
	rc->rto_ns = 1048576;		/* IB timeout code 8: 4.096 us * 2^8 */
	rc->cnp_interval_ns = 50000;	/* N */
	rc->alpha_timer_ns = 55000;	/* K */
	rc->rate_timer_ns = 55000;	/* T */
	rc->byte_counter = 10 << 20;	/* B */
	rc->fast_steps = 5;		/* F */
	rc->rai_bps = 100000000;	/* 0.1% of 100G */
	rc->rhai_bps = 1000000000;
	rc->min_rate_bps = 100000000;
	rc->g_shift = 8;		/* g = 1/256 */
}

u64 roce_rate(const struct rqp *q)
{
	return (u64)q->rc;
}

/* Payload bytes of packets [0, psn). */
static u64 bytes_before(const struct rqp *q, u32 psn)
{
	const struct flow *f = q->f;
	u32 mtu = S->cfg.roce.mtu;
	u64 full = psn / q->ppm, b;
	u32 rem = psn % q->ppm;

	b = full * f->msg;
	if (b >= f->bytes)
		return f->bytes;
	b += (u64)rem * mtu;
	return b < f->bytes ? b : f->bytes;
}

static u32 psn_len(const struct rqp *q, u32 psn, int *first, int *last)
{
	const struct flow *f = q->f;
	u32 mtu = S->cfg.roce.mtu, k = psn % q->ppm;
	u64 mstart = (u64)(psn / q->ppm) * f->msg;
	u64 mlen = f->bytes - mstart < f->msg ? f->bytes - mstart : f->msg;
	u64 off = (u64)k * mtu;
	u32 len = (u32)(mlen - off < mtu ? mlen - off : mtu);

	*first = k == 0;
	*last = off + len >= mlen;
	return len;
}

static void roce_send(struct rqp *q, u32 src, u32 dst, int type, u32 psn,
		      u32 plen, int first, int last)
{
	struct pkt *p = pkt_alloc();

	p->proto = PROTO_ROCE;
	p->src = src;
	p->dst = dst;
	p->sport = q->sport;
	p->flow = q->f->id;
	p->psn = psn;
	p->rtype = (u8)type;
	p->last = (u8)last;
	p->plen = plen;
	p->wire = SIM_L1_L4 + SIM_ROCE_HDR + plen;
	if (type == R_DATA) {
		p->ect = 1;
		if (first)
			p->wire += SIM_ROCE_RETH;
	} else if (type == R_CNP) {
		/* CNPs have their own class (DSCP 48) in deployed fabrics. */
		p->prio = 1;
		p->wire += 16;
	} else {
		p->wire += 4;	/* AETH */
	}
	host_send(&S->hosts[src], p);
}

static void timer_arm(struct rqp *q)
{
	const struct roce_cfg *rc = &S->cfg.roce;
	u64 t = MR_U64_MAX;

	if (q->una != q->nxt)
		t = q->last_progress + rc->rto_ns;
	if (q->alpha > 1.0 / 1024 || q->rc < q->line_bps)
		t = t < q->next_alpha ? t : q->next_alpha;
	if (q->rc < q->line_bps)
		t = t < q->next_rate ? t : q->next_rate;
	if (q->f->done || t == MR_U64_MAX || t >= q->timer_at)
		return;
	if (t < S->now)
		t = S->now;
	q->timer_at = t;
	ev_push(t, EV_ROCE_TIMER, q);
}

static void tx_arm(struct rqp *q)
{
	u64 t;

	if (q->f->done || q->nxt >= q->npkts ||
	    q->nxt - q->una >= S->cfg.roce.max_out)
		return;
	t = q->next_send > S->now ? q->next_send : S->now;
	if (t >= q->tx_at)
		return;
	q->tx_at = t;
	ev_push(t, EV_ROCE_TX, q);
}

static void rate_increase(struct rqp *q)
{
	const struct roce_cfg *rc = &S->cfg.roce;
	u32 F = rc->fast_steps;
	u32 mx = q->t_cnt > q->b_cnt ? q->t_cnt : q->b_cnt;
	u32 mn = q->t_cnt < q->b_cnt ? q->t_cnt : q->b_cnt;

	if (mx < F)
		;			/* fast recovery */
	else if (mn > F)
		q->rt += (double)(mn - F) * rc->rhai_bps;
	else
		q->rt += rc->rai_bps;
	if (q->rt > q->line_bps)
		q->rt = q->line_bps;
	q->rc = (q->rt + q->rc) / 2;
	if (q->rc > q->line_bps)
		q->rc = q->line_bps;
}

void roce_tx_ev(struct rqp *q)
{
	const struct roce_cfg *rc = &S->cfg.roce;
	int first, last;
	u32 len, psn;

	if (S->now != q->tx_at)
		return;
	q->tx_at = MR_U64_MAX;
	if (q->f->done || q->nxt >= q->npkts || q->nxt - q->una >= rc->max_out)
		return;
	psn = q->nxt++;
	len = psn_len(q, psn, &first, &last);
	if (q->una == psn)
		q->last_progress = S->now;	/* RTO runs from the oldest send */
	roce_send(q, q->f->src, q->f->dst, R_DATA, psn, len, first, last);
	q->next_send = S->now +
		(u64)((double)(len + SIM_L1_L4 + SIM_ROCE_HDR) * 8e9 / q->rc);
	if (q->rc < q->line_bps) {
		q->bytes_acc += len;
		if (q->bytes_acc >= rc->byte_counter) {
			q->bytes_acc = 0;
			q->b_cnt++;
			rate_increase(q);
		}
	}
	tx_arm(q);
	timer_arm(q);
}

void roce_timer_ev(struct rqp *q)
{
	const struct roce_cfg *rc = &S->cfg.roce;
	double g = 1.0 / (1u << rc->g_shift);

	if (S->now != q->timer_at)
		return;
	q->timer_at = MR_U64_MAX;
	if (q->f->done)
		return;
	if (q->una != q->nxt && S->now >= q->last_progress + rc->rto_ns) {
		S->roce_timeouts++;
		S->roce_retx += q->nxt - q->una;
		q->nxt = q->una;
		q->last_progress = S->now;
	}
	if (S->now >= q->next_alpha) {
		if (q->last_cnp + rc->alpha_timer_ns <= S->now)
			q->alpha *= 1 - g;
		q->next_alpha = S->now + rc->alpha_timer_ns;
	}
	if (S->now >= q->next_rate) {
		q->next_rate = S->now + rc->rate_timer_ns;
		if (q->rc < q->line_bps) {
			q->t_cnt++;
			rate_increase(q);
		}
	}
	tx_arm(q);
	timer_arm(q);
}

static void roce_on_cnp(struct rqp *q)
{
	const struct roce_cfg *rc = &S->cfg.roce;
	double g = 1.0 / (1u << rc->g_shift);

	q->rt = q->rc;
	q->rc *= 1 - q->alpha / 2;
	if (q->rc < rc->min_rate_bps)
		q->rc = rc->min_rate_bps;
	q->alpha = (1 - g) * q->alpha + g;
	q->last_cnp = S->now;
	q->t_cnt = 0;
	q->b_cnt = 0;
	q->bytes_acc = 0;
	q->next_rate = S->now + rc->rate_timer_ns;
	q->next_alpha = S->now + rc->alpha_timer_ns;
	S->roce_cnps++;
}

static void roce_acked(struct rqp *q, u32 psn)
{
	struct flow *f = q->f;
	u64 b0, b1;

	if (psn <= q->una || psn > q->npkts)
		return;
	b0 = bytes_before(q, q->una);
	b1 = bytes_before(q, psn);
	q->una = psn;
	if (q->nxt < psn)
		q->nxt = psn;
	q->last_progress = S->now;
	flow_completed(f, (u32)(b1 - b0));
}

void roce_deliver(struct host *h, struct pkt *p)
{
	const struct roce_cfg *rc = &S->cfg.roce;
	struct flow *f;
	struct rqp *q;

	if (p->flow >= S->nflows)
		return;
	f = S->flows[p->flow];
	q = f->r;
	if (!q)
		return;
	if (p->rtype == R_DATA) {
		/* responder / notification point at f->dst */
		if (p->ce && (!q->last_cnp_tx ||
			      S->now - q->last_cnp_tx >= rc->cnp_interval_ns)) {
			q->last_cnp_tx = S->now;
			roce_send(q, f->dst, f->src, R_CNP, 0, 0, 0, 0);
		}
		if (p->psn == q->epsn) {
			q->epsn++;
			q->nak_sent = 0;
			flow_delivered(f, p->plen);
			h->rx_data += p->plen;
			if (++q->ack_pending >= rc->ack_every || p->last) {
				q->ack_pending = 0;
				roce_send(q, f->dst, f->src, R_ACK, q->epsn, 0,
					  0, 0);
			}
		} else if (p->psn > q->epsn) {
			if (!q->nak_sent) {
				q->nak_sent = 1;
				roce_send(q, f->dst, f->src, R_NAK, q->epsn, 0,
					  0, 0);
			}
		} else {
			roce_send(q, f->dst, f->src, R_ACK, q->epsn, 0, 0, 0);
		}
		return;
	}
	/* requester / reaction point at f->src */
	switch (p->rtype) {
	case R_ACK:
		roce_acked(q, p->psn);
		break;
	case R_NAK:
		roce_acked(q, p->psn);
		if (p->psn == q->una && q->nxt > p->psn) {
			S->roce_naks++;
			S->roce_retx += q->nxt - p->psn;
			q->nxt = p->psn;
			q->last_progress = S->now;
		}
		break;
	case R_CNP:
		roce_on_cnp(q);
		break;
	}
	if (!f->done) {
		tx_arm(q);
		timer_arm(q);
	}
}

void roce_flow_start(struct flow *f)
{
	const struct roce_cfg *rc = &S->cfg.roce;
	struct rqp *q = calloc(1, sizeof(*q));
	u64 full, rem;

	assert(q);
	f->r = q;
	q->f = f;
	q->sport = (u16)(49152 + sim_rand() % 16384);
	q->line_bps = S->cfg.port_bps;
	q->ppm = (f->msg + rc->mtu - 1) / rc->mtu;
	full = f->bytes / f->msg;
	rem = f->bytes % f->msg;
	q->npkts = (u32)(full * q->ppm + (rem + rc->mtu - 1) / rc->mtu);
	q->rc = q->rt = (double)q->line_bps;
	q->alpha = 1.0;
	q->tx_at = MR_U64_MAX;
	q->timer_at = MR_U64_MAX;
	q->next_alpha = S->now + rc->alpha_timer_ns;
	q->next_rate = S->now + rc->rate_timer_ns;
	q->last_progress = S->now;
	tx_arm(q);
	timer_arm(q);
}

void roce_flow_free(struct flow *f)
{
	free(f->r);
	f->r = NULL;
}
