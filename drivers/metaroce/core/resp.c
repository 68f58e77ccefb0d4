// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The responder side of an RC QP: the peer's messages to us.
 *
 * Every request segment carries its message number (msn) and offset, so it
 * is placed where it belongs on arrival, in any order. A tracker per
 * in-flight message (64 per QP, by msn) records which of its segments
 * landed (a segment map, segmap.c: exactly, whatever duplicates arrive
 * under other DSNs) and which receive it consumes (its SSN, checked
 * against the message order). Messages complete in msn order; READ and
 * atomic requests execute then, and their responses queue for the
 * requester side's transmit path. A fatal error is reported to the peer
 * in the QP's ACK block (NAK), an RNR NAK when no receive is posted.
 *
 * Also the receive dispatch of a QP: a response to one of our own READs or
 * atomics goes to the requester side (msg.c), which this file calls and
 * which never calls back.
 */
#include "internal.h"

enum mr_rmsg_state {
	MR_RMSG_FREE = 0,
	MR_RMSG_ACTIVE,
	MR_RMSG_DONE,
};

static int mr_op_consumes_recv(u8 opcode, u16 flags)
{
	return opcode == MR_OP_SEND ||
	       (opcode == MR_OP_WRITE && (flags & MR_F_IMM));
}

/*
 * A responder's failure as the requester sees it: a request outside what
 * the key grants is a remote access error; a receive buffer the responder
 * itself cannot write (its own lkey or bounds) a remote operational error.
 */
static u8 mr_status_from_rx(int status)
{
	switch (status) {
	case MR_RXS_ACCESS:
		return MR_QPS_REM_ACCESS;
	case MR_RXS_LOCAL:
		return MR_QPS_REM_OP;
	default:
		return MR_QPS_INV_REQ;
	}
}

/* Record a fatal error at @msn; it is reported once older ones complete. */
static void mr_qp_fatal(struct mr_conn *c, struct mr_qp *qp, u32 msn,
			u8 status)
{
	if (qp->fatal && !mr_msn_lt(msn, qp->nak_msn))
		return;
	qp->fatal = 1;
	qp->nak_msn = msn;
	qp->nak_status = status;
	mr_stat(c, MR_ST_NAK_TX, 1);
	mr_conn_mark_dirty(c, qp);
}

static void mr_rq_emit(struct mr_qp *qp, struct mr_rmsg *r, u8 status)
{
	struct mr_cqe cqe;

	if (!mr_op_consumes_recv(r->opcode, r->flags))
		return;
	memset(&cqe, 0, sizeof(cqe));
	cqe.cookie = r->cookie;
	cqe.status = status;
	cqe.byte_len = r->len;
	cqe.opcode = r->opcode == MR_OP_SEND ? MR_WC_RECV :
					       MR_WC_RECV_WRITE_IMM;
	cqe.solicited = !!(r->flags & MR_F_SOLICIT);
	if (r->flags & MR_F_IMM) {
		cqe.imm = r->imm;
		cqe.imm_valid = 1;
	} else if (r->flags & MR_F_INV) {
		cqe.imm = r->imm;
		cqe.inv_valid = 1;
	}
	/* Receives complete in SSN order: this one was rq_ssn. */
	qp->rq_ssn++;
	qp->conn->ops->complete(qp->conn->env, qp, &cqe);
}

/* A tracker is done with: its chunks go back to the connection. */
static void mr_rmsg_free(struct mr_conn *c, struct mr_rmsg *r)
{
	if (r->seg.ext)
		mr_segmap_reset(c, &r->seg);
	r->state = MR_RMSG_FREE;
}

/* The responder's window moved on by one message. */
static void mr_rq_next(struct mr_qp *qp)
{
	qp->rq_msn = (qp->rq_msn + 1) & MR_MSN_MASK;
	if (qp->rq_hi)
		qp->rq_hi--;
}

/* The tracker of @msn (within the window), or NULL if it has none. */
static struct mr_rmsg *mr_rq_known(struct mr_qp *qp, u32 msn)
{
	struct mr_rmsg *r = &qp->rq[msn % MR_MSG_WND];

	return r->state != MR_RMSG_FREE && r->msn == msn ? r : NULL;
}

/*
 * May the receive-consuming message @msn carry @ssn (protocol.rst, section
 * 7.13)? Receives are consumed in message order, so SSNs increase with
 * the MSN, by one per receive-consuming message in between: from the
 * nearest known receive-consuming message on each side (or, below, from
 * rq_msn, whose SSN is rq_ssn if it consumes one), @ssn may differ by at
 * most one plus the number of messages between them not seen yet, and must
 * differ. Two messages can then never bind the same receive, and the
 * oldest one's SSN is exactly rq_ssn. Looks at 64 trackers at most; in
 * order, at the one before.
 */
static int mr_rq_ssn_ok(struct mr_qp *qp, u32 msn, u32 ssn)
{
	u32 d = mr_msn_diff(msn, qp->rq_msn), i, unseen = 0, next;
	const struct mr_rmsg *r;

	next = qp->rq_ssn;
	for (i = d; i-- > 0;) {
		r = mr_rq_known(qp, (qp->rq_msn + i) & MR_MSN_MASK);
		if (!r) {
			unseen++;
		} else if (mr_op_consumes_recv(r->opcode, r->flags)) {
			next = r->ssn + 1;
			break;
		}
	}
	if (ssn - next > unseen)
		return 0;
	unseen = 0;
	for (i = d + 1; i < qp->rq_hi; i++) {
		r = mr_rq_known(qp, (qp->rq_msn + i) & MR_MSN_MASK);
		if (!r)
			unseen++;
		else if (mr_op_consumes_recv(r->opcode, r->flags))
			return r->ssn - (ssn + 1) <= unseen;
	}
	return 1;
}

static void mr_qp_queue_resp(struct mr_qp *qp, const struct mr_rmsg *r,
			     u64 cookie);

static int mr_op_deferred(u8 opcode)
{
	return opcode == MR_OP_READ_REQ || opcode == MR_OP_CMP_SWAP ||
	       opcode == MR_OP_FETCH_ADD;
}

/*
 * READ and atomic requests run when every older message of the QP is
 * complete, so they see the effect of earlier WRITEs and atomics, as on
 * an in-order transport.
 */
static void mr_rq_execute(struct mr_conn *c, struct mr_qp *qp,
			  struct mr_rmsg *r)
{
	struct mr_hdr req;
	u64 result = 0;
	int st;

	if (qp->resp_cnt >= mr_max32(qp->attr.max_dest_rd_atomic, 1)) {
		mr_qp_fatal(c, qp, r->msn, MR_QPS_INV_REQ);
		return;
	}
	memset(&req, 0, sizeof(req));
	req.opcode = r->opcode;
	req.dst_qpn = qp->qpn;
	req.src_qpn = qp->attr.dest_qpn;
	req.msn = r->msn;
	req.gen = r->gen;
	req.msg_len = r->len;
	req.raddr = r->raddr;
	req.rkey = r->rkey;
	req.swap_add = r->swap_add;
	req.compare = r->compare;
	st = c->ops->execute(c->env, qp, &req, &result);
	if (st != MR_RXS_OK) {
		c->drops[st == MR_RXS_ACCESS ? MR_DROP_ACCESS :
					       MR_DROP_INV_REQ]++;
		mr_qp_fatal(c, qp, r->msn, st == MR_RXS_ACCESS ?
			    MR_QPS_REM_ACCESS : MR_QPS_INV_REQ);
		return;
	}
	mr_qp_queue_resp(qp, r, r->opcode == MR_OP_READ_REQ ? r->raddr : result);
	r->state = MR_RMSG_DONE;
}

/* Complete responder messages in order. */
static void mr_rq_advance(struct mr_conn *c, struct mr_qp *qp)
{
	int moved = 0;

	for (;;) {
		struct mr_rmsg *r = &qp->rq[qp->rq_msn % MR_MSG_WND];

		if (qp->fatal && qp->rq_msn == qp->nak_msn)
			break;
		if (r->state == MR_RMSG_FREE || r->msn != qp->rq_msn)
			break;
		if (r->state == MR_RMSG_ACTIVE && mr_op_deferred(r->opcode))
			mr_rq_execute(c, qp, r);
		if (r->state != MR_RMSG_DONE)
			break;
		if (mr_op_consumes_recv(r->opcode, r->flags) &&
		    r->ssn != qp->rq_ssn) {
			/*
			 * Messages seen since it bound its receive leave it
			 * another SSN than its place: it consumes none.
			 */
			c->drops[MR_DROP_SSN]++;
			mr_rmsg_free(c, r);
			mr_qp_fatal(c, qp, qp->rq_msn, MR_QPS_INV_REQ);
			break;
		}
		mr_rq_emit(qp, r, MR_WC_OK);
		mr_stat(c, MR_ST_MSG_DONE_RX, 1);
		mr_rmsg_free(c, r);
		mr_rq_next(qp);
		moved = 1;
	}
	if (moved)
		mr_conn_mark_dirty(c, qp);
	if (qp->fatal && qp->rq_msn == qp->nak_msn && qp->state != MR_QP_ERR &&
	    !qp->fatal_drain) {
		struct mr_rmsg *r = &qp->rq[qp->rq_msn % MR_MSG_WND];

		/*
		 * A receive the failed message consumed completes in error
		 * (unless its SSN was not the receive's: then it has none).
		 */
		if (r->state != MR_RMSG_FREE && r->msn == qp->rq_msn &&
		    (!mr_op_consumes_recv(r->opcode, r->flags) ||
		     r->ssn == qp->rq_ssn))
			mr_rq_emit(qp, r, qp->nak_status == MR_QPS_INV_REQ ?
				   MR_WC_LOC_LEN_ERR : MR_WC_LOC_PROT_ERR);
		mr_conn_mark_dirty(c, qp);
		c->ack_now = 1;
		/*
		 * Responses to older READs and atomics go out first, as on an
		 * in-order link: the QP fails once they are all sent.
		 */
		qp->fatal_drain = 1;
		if (!qp->resp_cnt)
			mr_qp_fatal_fail(qp);
	}
}

static void mr_rq_reset_from(struct mr_conn *c, struct mr_qp *qp, u32 msn)
{
	u32 i, d = mr_msn_diff(msn, qp->rq_msn);

	for (i = 0; i < MR_MSG_WND; i++) {
		struct mr_rmsg *r = &qp->rq[i];

		if (r->state != MR_RMSG_FREE && !mr_msn_lt(r->msn, msn))
			mr_rmsg_free(c, r);
	}
	if (d < MR_MSG_WND && qp->rq_hi > d)
		qp->rq_hi = (u8)d;
}

static void mr_qp_rx_request(struct mr_conn *c, struct mr_qp *qp,
			     const struct mr_hdr *h, struct mr_rx *rx)
{
	u32 d = mr_msn_diff(h->msn, qp->rq_msn);
	struct mr_rmsg *r;
	int st;

	if (d & 0x800000) {
		mr_drop(c, rx, MR_DROP_DUP);
		return;
	}
	if (d >= MR_MSG_WND) {
		mr_drop(c, rx, MR_DROP_MSN_WINDOW);
		return;
	}
	if (qp->fatal && !mr_msn_lt(h->msn, qp->nak_msn)) {
		mr_drop(c, rx, MR_DROP_QP_STATE);
		return;
	}
	if (!mr_msn_lt(h->msn, qp->gen_floor) && h->gen != qp->rq_gen) {
		/* The requester rewound after our RNR NAK: start over. */
		if (qp->rnr_nak && h->gen == (u8)(qp->rq_gen + 1) &&
		    !mr_msn_lt(h->msn, qp->nak_msn)) {
			qp->rq_gen++;
			qp->gen_floor = qp->nak_msn;
			qp->rnr_nak = 0;
			mr_rq_reset_from(c, qp, qp->nak_msn);
		} else {
			mr_drop(c, rx, MR_DROP_STALE_GEN);
			return;
		}
	}
	if (qp->rnr_nak && !mr_msn_lt(h->msn, qp->nak_msn)) {
		mr_conn_mark_dirty(c, qp);
		mr_drop(c, rx, MR_DROP_RNR);
		return;
	}

	r = &qp->rq[h->msn % MR_MSG_WND];
	if (r->state == MR_RMSG_FREE || r->msn != h->msn) {
		int consumes = mr_op_consumes_recv(h->opcode, h->flags);

		if (consumes && !mr_rq_ssn_ok(qp, h->msn, h->ssn)) {
			/* Not the receive its place allows: it fails. */
			mr_qp_fatal(c, qp, h->msn, MR_QPS_INV_REQ);
			mr_drop(c, rx, MR_DROP_SSN);
			mr_rq_advance(c, qp);
			return;
		}
		if (r->state != MR_RMSG_FREE)
			mr_rmsg_free(c, r);
		memset(r, 0, sizeof(*r));
		r->msn = h->msn;
		r->gen = h->gen;
		r->opcode = h->opcode;
		r->len = h->msg_len;
		r->flags = h->flags & (MR_F_IMM | MR_F_INV | MR_F_SOLICIT);
		r->imm = (h->flags & MR_F_INV) ? h->inv_rkey : h->imm;
		r->state = MR_RMSG_ACTIVE;
		if (consumes) {
			if (c->ops->bind_recv(c->env, qp, h->ssn, &r->cookie,
					      &r->recv_len) < 0) {
				r->state = MR_RMSG_FREE;
				qp->rnr_nak = 1;
				qp->nak_msn = h->msn;
				mr_stat(c, MR_ST_RNR_NAK_TX, 1);
				mr_conn_mark_dirty(c, qp);
				mr_drop(c, rx, MR_DROP_RNR);
				return;
			}
			r->ssn = h->ssn;
			if (h->opcode == MR_OP_SEND && r->len > r->recv_len) {
				mr_qp_fatal(c, qp, h->msn, MR_QPS_INV_REQ);
				mr_drop(c, rx, MR_DROP_INV_REQ);
				mr_rq_advance(c, qp);
				return;
			}
		} else if (h->opcode == MR_OP_CMP_SWAP ||
			   h->opcode == MR_OP_FETCH_ADD) {
			r->swap_add = h->swap_add;
			r->compare = h->compare;
		}
		r->raddr = h->raddr;
		r->rkey = h->rkey;
		if (mr_msn_diff(h->msn, qp->rq_msn) >= qp->rq_hi)
			qp->rq_hi = (u8)(mr_msn_diff(h->msn, qp->rq_msn) + 1);
		/* This may settle a pending RNR NAK: report it. */
		if (qp->rnr_nak)
			mr_conn_mark_dirty(c, qp);
	} else if (r->opcode != h->opcode || r->len != h->msg_len ||
		   r->gen != h->gen || r->raddr != h->raddr ||
		   r->rkey != h->rkey ||
		   r->flags != (h->flags & (MR_F_IMM | MR_F_INV |
					    MR_F_SOLICIT))) {
		mr_drop(c, rx, MR_DROP_INCONSISTENT);
		return;
	}
	if (r->state != MR_RMSG_ACTIVE) {
		mr_drop(c, rx, MR_DROP_DUP);
		return;
	}

	rx->qp = qp;
	rx->slot = h->msn;
	switch (h->opcode) {
	case MR_OP_WRITE:
	case MR_OP_SEND:
		st = mr_segmap_check(c, &r->seg, r->len, h->offset, h->plen,
				     &rx->seg);
		if (st) {
			mr_drop(c, rx, st);
			return;
		}
		rx->action = h->opcode == MR_OP_SEND ? MR_RXA_SEND :
						       MR_RXA_WRITE;
		if (mr_op_consumes_recv(h->opcode, h->flags)) {
			rx->cookie = r->cookie;
			rx->recv_len = r->recv_len;
		}
		break;
	default:
		/* READ/atomic: remembered, executed in order. */
		rx->action = MR_RXA_NONE;
		mr_rq_advance(c, qp);
		break;
	}
}

void mr_qp_rx(struct mr_conn *c, struct mr_qp *qp, const struct mr_hdr *h,
	      u64 now, struct mr_rx *rx)
{
	(void)now;
	if (!qp) {
		mr_drop(c, rx, MR_DROP_NO_QP);
		return;
	}
	if (qp->conn != c || h->src_qpn != qp->attr.dest_qpn) {
		mr_drop(c, rx, MR_DROP_WRONG_PEER);
		return;
	}
	if (qp->state != MR_QP_RTR && qp->state != MR_QP_RTS) {
		mr_drop(c, rx, MR_DROP_QP_STATE);
		return;
	}
	if (mr_op_is_response(h->opcode))
		mr_qp_rx_response(c, qp, h, rx);
	else
		mr_qp_rx_request(c, qp, h, rx);
}

static void mr_qp_queue_resp(struct mr_qp *qp, const struct mr_rmsg *m,
			     u64 cookie)
{
	struct mr_resp *r;

	r = &qp->resp[(qp->resp_head + qp->resp_cnt) % MR_MAX_RD_ATOMIC];
	r->cookie = cookie;
	r->key = m->rkey;
	r->msn = m->msn;
	r->gen = m->gen;
	r->opcode = m->opcode == MR_OP_READ_REQ ? MR_OP_READ_RESP :
						  MR_OP_ATOMIC_RESP;
	r->len = r->opcode == MR_OP_ATOMIC_RESP ? 8 : m->len;
	r->sent = 0;
	qp->resp_cnt++;
	mr_qp_activate(qp);
}

void mr_qp_rx_done(struct mr_conn *c, struct mr_qp *qp,
		   const struct mr_hdr *h, struct mr_rx *rx, int status,
		   u64 result, u64 now)
{
	struct mr_rmsg *r;

	if (!qp || qp->conn != c)
		return;
	if (rx->action == MR_RXA_READ_RESP || rx->action == MR_RXA_ATOMIC_RESP) {
		mr_qp_response_done(c, qp, h, rx, status, now);
		return;
	}

	if (qp->state != MR_QP_RTR && qp->state != MR_QP_RTS)
		return;
	r = &qp->rq[rx->slot % MR_MSG_WND];
	if (r->state != MR_RMSG_ACTIVE || r->msn != rx->slot)
		return;
	if (status != MR_RXS_OK) {
		c->drops[status == MR_RXS_ACCESS || status == MR_RXS_LOCAL ?
			 MR_DROP_ACCESS : MR_DROP_INV_REQ]++;
		mr_qp_fatal(c, qp, rx->slot, mr_status_from_rx(status));
		mr_rq_advance(c, qp);
		return;
	}
	mr_stat(c, MR_ST_RX_PLACED, 1);
	switch (rx->action) {
	case MR_RXA_WRITE:
	case MR_RXA_SEND:
		if (mr_segmap_land(c, &r->seg, r->len, h->offset, rx->seg))
			r->state = MR_RMSG_DONE;
		break;
	}
	mr_rq_advance(c, qp);
}

/*
 * An RNR NAK for nak_msn is reported only once every older message has
 * been seen (has a tracker): until then an older one may still be refused
 * too, and the requester must rewind from the oldest refused message. Once
 * reported, nak_msn can no longer move back.
 */
static int mr_rnr_settled(const struct mr_qp *qp)
{
	u32 msn;

	for (msn = qp->rq_msn; msn != qp->nak_msn;
	     msn = (msn + 1) & MR_MSN_MASK) {
		const struct mr_rmsg *r = &qp->rq[msn % MR_MSG_WND];

		if (r->state == MR_RMSG_FREE || r->msn != msn)
			return 0;
	}
	return 1;
}

void mr_qp_fill_ack_block(struct mr_qp *qp, struct mr_ack_qp *aq)
{
	memset(aq, 0, sizeof(*aq));
	aq->qpn = qp->attr.dest_qpn;
	aq->gen = qp->rq_gen;
	if (qp->fatal && qp->rq_msn == qp->nak_msn) {
		aq->status = qp->nak_status;
		aq->msn = qp->nak_msn;
	} else if (qp->rnr_nak && mr_rnr_settled(qp)) {
		aq->status = MR_QPS_RNR;
		aq->msn = qp->nak_msn;
		aq->aux = qp->rnr_timer;
	} else {
		aq->status = MR_QPS_OK;
		aq->msn = qp->rq_msn;
	}
}

