// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The requester side of an RC QP: our messages to the peer.
 *
 * Work requests become messages numbered by a 24-bit message
 * sequence number (msn, starting at the QP's sq_psn); messages are cut into
 * segments that the connection sprays over its paths. A SEND/WRITE completes
 * when the responder reports it complete (QP block in an ACK), a READ or
 * atomic when its response has landed; completions are reported in order.
 *
 * Also a QP's state (connect, RTS, error, detach) and its timers: the
 * lists of QPs by what they wait for (protocol.rst, section 7.18), retry
 * and RNR rewinds, and the sending of the READ and atomic responses the
 * responder side (resp.c) queues.
 *
 * Below the connection, the segment table (segtab.c) and the responder
 * side, which call in with segments to fill, segments processed and
 * responses received. An ACK_REQ goes out through emit.c, paced by the
 * connection's RTO (rto.c); the segment maps are segmap.c's.
 */
#include "internal.h"

enum mr_msg_state {
	MR_MSG_FREE = 0,
	MR_MSG_QUEUED,		/* posted, no segment sent yet */
	MR_MSG_SENDING,		/* partly segmented */
	MR_MSG_SENT,		/* every segment handed to the connection */
	MR_MSG_DONE,		/* complete, waiting for older messages */
};

static int mr_wr_is_read_atomic(u8 op)
{
	return op == MR_WR_READ || op == MR_WR_CMP_SWAP ||
	       op == MR_WR_FETCH_ADD;
}

static int mr_wr_consumes_recv(u8 op)
{
	return op == MR_WR_SEND || op == MR_WR_SEND_IMM ||
	       op == MR_WR_SEND_INV || op == MR_WR_WRITE_IMM;
}

static u8 mr_wr_wire_op(u8 op)
{
	switch (op) {
	case MR_WR_SEND:
	case MR_WR_SEND_IMM:
	case MR_WR_SEND_INV:
		return MR_OP_SEND;
	case MR_WR_WRITE:
	case MR_WR_WRITE_IMM:
		return MR_OP_WRITE;
	case MR_WR_READ:
		return MR_OP_READ_REQ;
	case MR_WR_CMP_SWAP:
		return MR_OP_CMP_SWAP;
	case MR_WR_FETCH_ADD:
		return MR_OP_FETCH_ADD;
	default:
		return 0;
	}
}

static struct mr_msg *mr_sq_msg(struct mr_qp *qp, u32 msn)
{
	return &qp->sq[msn & (qp->sq_slots - 1)];
}

/* Is msn among the messages posted and not completed? */
static int mr_sq_live(const struct mr_qp *qp, u32 msn)
{
	return mr_msn_diff(msn, qp->sq_una) < mr_msn_diff(qp->sq_nxt,
							   qp->sq_una);
}

/*
 * Where a requester stands (protocol.rst, section 7.15): an answer from the
 * peer is due while a segment of it is unacknowledged or a message it has
 * fully sent is not yet reported complete or executed (WIRE); otherwise it
 * only waits for a connection to serve it, ours to send its next segment
 * or the peer's to send a response (WAIT).
 */
static u8 mr_qp_sched_of(const struct mr_qp *qp)
{
	if (qp->state != MR_QP_RTS || qp->sq_una == qp->sq_nxt)
		return MR_QS_IDLE;
	if (qp->rnr_wait)
		return MR_QS_RNR;
	if (qp->wire_segs || mr_msn_lt(qp->blk_msn, qp->sq_cur))
		return MR_QS_WIRE;
	return MR_QS_WAIT;
}

/* Put @qp at the tail of the list for @sched (rnrq: by rnr_until). */
static void mr_qp_enlist(struct mr_qp *qp, u8 sched, u64 now)
{
	struct mr_conn *c = qp->conn;
	struct mr_list *at;

	if (mr_list_linked(&qp->busy_node))
		mr_list_del(&qp->busy_node);
	qp->sched = sched;
	qp->stamp = now;
	if (!c)
		return;
	switch (sched) {
	case MR_QS_WIRE:
		mr_list_add_tail(&qp->busy_node, &c->busy);
		break;
	case MR_QS_WAIT:
		mr_list_add_tail(&qp->busy_node, &c->waitq);
		break;
	case MR_QS_RNR:
		/* Timers of one responder are equal: this walk is short. */
		at = c->rnrq.prev;
		while (at != &c->rnrq &&
		       mr_container_of(at, struct mr_qp,
				       busy_node)->rnr_until > qp->rnr_until)
			at = at->prev;
		mr_list_add_tail(&qp->busy_node, at->next);
		break;
	default:
		break;
	}
}

/* The last sign of life from the peer: an ACK for us, or its data. */
static u64 mr_conn_alive_at(const struct mr_conn *c)
{
	return mr_max64(c->ack_last, c->rx_epoch ? c->rx_last : 0);
}

/*
 * After anything that may change where @qp stands. A QP that puts
 * something on the wire again starts its clock from the connection's last
 * sign of life: while it was waiting, the peer owed it nothing, but a peer
 * that has been silent since is no fresher for it.
 */
static void mr_qp_resched(struct mr_qp *qp, u64 now)
{
	u8 s = mr_qp_sched_of(qp);

	if (s == qp->sched)
		return;
	if (s == MR_QS_WIRE && qp->conn)
		qp->last_progress = mr_max64(qp->last_progress,
					     mr_conn_alive_at(qp->conn));
	mr_qp_enlist(qp, s, now);
}

/* An answer from the peer: the QP's clock and ACK_REQ back-off restart. */
static void mr_qp_progress(struct mr_qp *qp, u64 now)
{
	qp->last_progress = now;
	qp->ackreq_n = 0;
	qp->next_ackreq = 0;
	mr_qp_enlist(qp, mr_qp_sched_of(qp), now);
}

void mr_qp_activate(struct mr_qp *qp)
{
	if (qp->conn && !mr_list_linked(&qp->active_node))
		mr_list_add_tail(&qp->active_node, &qp->conn->active);
}

void mr_qp_init(struct mr_qp *qp, u32 qpn, struct mr_msg *sq, u32 sq_slots,
		struct mr_rmsg *rq)
{
	memset(qp, 0, sizeof(*qp));
	if (sq_slots > MR_MSG_WND)
		sq_slots = MR_MSG_WND;
	while (sq_slots & (sq_slots - 1))
		sq_slots &= sq_slots - 1;
	qp->sq = sq;
	qp->sq_slots = sq_slots;
	qp->rq = rq;
	memset(sq, 0, sq_slots * sizeof(*sq));
	memset(rq, 0, MR_MSG_WND * sizeof(*rq));
	mr_list_init(&qp->active_node);
	mr_list_init(&qp->busy_node);
	mr_list_init(&qp->dirty_node);
	qp->qpn = qpn & MR_QPN_MASK;
	qp->state = MR_QP_RESET;
}

int mr_qp_connect(struct mr_qp *qp, struct mr_conn *c,
		  const struct mr_qp_attr *a, u64 now)
{
	if (qp->state != MR_QP_RESET || qp->conn)
		return -1;
	if (qp->qpn < 2 || a->dest_qpn < 2 || a->dest_qpn > MR_QPN_MASK ||
	    a->seg_size < 256 || a->seg_size > c->cfg.mtu ||
	    a->max_dest_rd_atomic > MR_MAX_RD_ATOMIC ||
	    a->max_rd_atomic > MR_MAX_RD_ATOMIC)
		return -1;
	qp->conn = c;
	qp->attr = *a;
	qp->rq_msn = a->rq_psn & MR_MSN_MASK;
	qp->gen_floor = qp->rq_msn;
	qp->rq_gen = 0;
	qp->rnr_timer = a->min_rnr_timer & 31;
	qp->state = MR_QP_RTR;
	qp->last_progress = now;
	return 0;
}

int mr_qp_rts(struct mr_qp *qp, const struct mr_qp_attr *a, u64 now)
{
	if (qp->state != MR_QP_RTR || !qp->conn)
		return -1;
	if (a->max_rd_atomic > MR_MAX_RD_ATOMIC)
		return -1;
	qp->attr.sq_psn = a->sq_psn;
	qp->attr.timeout_ns = a->timeout_ns;
	qp->attr.retry_cnt = a->retry_cnt;
	qp->attr.rnr_retry = a->rnr_retry;
	qp->attr.max_rd_atomic = a->max_rd_atomic ? a->max_rd_atomic : 1;
	qp->sq_una = a->sq_psn & MR_MSN_MASK;
	qp->sq_cur = qp->sq_una;
	qp->sq_nxt = qp->sq_una;
	qp->blk_msn = qp->sq_una;
	qp->rnr_left = a->rnr_retry;
	qp->state = MR_QP_RTS;
	qp->last_progress = now;
	return 0;
}

int mr_qp_can_post(const struct mr_qp *qp)
{
	return qp->state == MR_QP_RTS &&
	       mr_msn_diff(qp->sq_nxt, qp->sq_una) < qp->sq_slots;
}

static void mr_qp_complete(struct mr_qp *qp, u64 now);

/*
 * Local work requests (memory registration, local invalidate) have no wire
 * effect: once every older request is segmented they are done, and they
 * complete in order with the others. A message already done when an RNR
 * rewind comes back to it is passed too (it must not be cut again).
 * Returns whether any was passed.
 */
static int mr_qp_skip_local(struct mr_qp *qp)
{
	int any = 0;

	if (qp->rnr_wait)
		return 0;
	while (qp->sq_cur != qp->sq_nxt) {
		struct mr_msg *m = mr_sq_msg(qp, qp->sq_cur);

		if (m->opcode != MR_WR_LOCAL && m->state != MR_MSG_DONE)
			break;
		m->state = MR_MSG_DONE;
		qp->sq_cur = (qp->sq_cur + 1) & MR_MSN_MASK;
		any = 1;
	}
	return any;
}

int mr_qp_post(struct mr_qp *qp, const struct mr_wr *wr, u64 now)
{
	struct mr_msg *m;

	/*
	 * Local operations (MR_WR_LOCAL) are refused: the message numbers
	 * are the responder's too, and one it never sees would stall it.
	 * The glue completes them in order itself.
	 */
	if (!mr_qp_can_post(qp) || !mr_wr_wire_op(wr->opcode))
		return -1;
	if (wr->len > MR_MAX_MSG_LEN)
		return -1;
	if ((wr->opcode == MR_WR_CMP_SWAP || wr->opcode == MR_WR_FETCH_ADD) &&
	    (wr->len != 8 || (wr->raddr & 7)))
		return -1;
	m = mr_sq_msg(qp, qp->sq_nxt);
	memset(m, 0, sizeof(*m));
	m->cookie = wr->cookie;
	m->raddr = wr->raddr;
	if (wr->opcode != MR_WR_READ) {	/* a READ has its segment map */
		m->swap_add = wr->swap_add;
		m->compare = wr->compare;
		m->imm = wr->imm;
	}
	m->len = wr->len;
	m->rkey = wr->rkey;
	m->opcode = wr->opcode;
	m->flags = wr->flags;
	m->gen = qp->gen;
	m->state = MR_MSG_QUEUED;
	if (mr_wr_consumes_recv(wr->opcode))
		m->ssn = qp->ssn_nxt++;
	if (qp->sq_una == qp->sq_nxt)
		qp->last_progress = now;
	qp->sq_nxt = (qp->sq_nxt + 1) & MR_MSN_MASK;
	if (mr_qp_skip_local(qp))
		mr_qp_complete(qp, now);
	if (!qp->rnr_wait)
		mr_qp_activate(qp);
	mr_qp_resched(qp, now);
	return 0;
}

/* Produce the QP's next segment for the connection; 0 if it has none. */
int mr_qp_next_seg(struct mr_qp *qp, struct mr_seg *s, u64 now)
{
	struct mr_msg *m;
	u32 seg = qp->attr.seg_size;

	if (qp->state != MR_QP_RTR && qp->state != MR_QP_RTS)
		return 0;
	if (qp->resp_cnt) {
		struct mr_resp *r = &qp->resp[qp->resp_head];

		s->qp = qp;
		s->msn = r->msn;
		s->gen = r->gen;
		s->cookie = r->cookie;
		s->key = r->key;
		s->total = r->len;
		s->offset = r->sent;
		s->opcode = r->opcode;
		if (r->opcode == MR_OP_ATOMIC_RESP) {
			s->kind = MR_SEG_ARESP;
			r->sent = r->len;
		} else {
			s->kind = MR_SEG_RESP;
			s->len = mr_min32(seg, r->len - r->sent);
			r->sent += s->len;
		}
		if (r->sent >= r->len) {
			qp->resp_head = (qp->resp_head + 1) % MR_MAX_RD_ATOMIC;
			qp->resp_cnt--;
			if (!qp->resp_cnt && qp->fatal_drain &&
			    qp->state != MR_QP_ERR)
				mr_qp_fatal_fail(qp);
		}
		return 1;
	}
	if (qp->state != MR_QP_RTS || qp->rnr_wait)
		return 0;
	if (mr_qp_skip_local(qp))
		mr_qp_complete(qp, now);
	if (qp->sq_cur == qp->sq_nxt)
		return 0;

	m = mr_sq_msg(qp, qp->sq_cur);
	if (m->state == MR_MSG_QUEUED) {
		if ((m->flags & MR_WRF_FENCE) && qp->rd_out)
			return 0;
		if (mr_wr_is_read_atomic(m->opcode)) {
			if (qp->rd_out >= qp->attr.max_rd_atomic)
				return 0;
			qp->rd_out++;
		}
		m->state = MR_MSG_SENDING;
	}
	s->kind = MR_SEG_REQ;
	s->qp = qp;
	s->cookie = m->cookie;
	s->msn = qp->sq_cur;
	s->gen = m->gen;
	s->offset = m->sent;
	s->total = m->len;
	s->opcode = mr_wr_wire_op(m->opcode);
	if (!mr_wr_is_read_atomic(m->opcode))
		s->len = mr_min32(seg, m->len - m->sent);
	m->sent += s->len;
	m->segs_out++;
	qp->wire_segs++;
	if (mr_wr_is_read_atomic(m->opcode) || m->sent >= m->len) {
		m->state = MR_MSG_SENT;
		qp->sq_cur = (qp->sq_cur + 1) & MR_MSN_MASK;
	}
	mr_qp_resched(qp, now);
	return 1;
}

int mr_qp_fill_hdr(struct mr_qp *qp, const struct mr_seg *s, struct mr_hdr *h)
{
	struct mr_msg *m;

	h->dst_qpn = qp->attr.dest_qpn;
	h->src_qpn = qp->qpn;
	h->msn = s->msn;
	h->gen = s->gen;
	h->offset = s->offset;
	h->plen = (u16)s->len;
	if (s->kind == MR_SEG_RESP || s->kind == MR_SEG_ARESP) {
		/* After a fatal error only responses older than it still go. */
		if (qp->state == MR_QP_ERR &&
		    !(qp->fatal && mr_msn_lt(s->msn, qp->nak_msn)))
			return -1;
		h->opcode = s->opcode;
		h->msg_len = s->total;
		if (s->kind == MR_SEG_ARESP) {
			h->msg_len = 8;
			h->orig = s->cookie;
		}
		return 0;
	}
	if (qp->state != MR_QP_RTS || !mr_sq_live(qp, s->msn))
		return -1;
	m = mr_sq_msg(qp, s->msn);
	if (m->gen != s->gen || (m->state != MR_MSG_SENDING &&
				 m->state != MR_MSG_SENT))
		return -1;
	h->opcode = mr_wr_wire_op(m->opcode);
	h->msg_len = m->len;
	h->raddr = m->raddr;
	h->rkey = m->rkey;
	h->ssn = m->ssn;
	if (m->opcode == MR_WR_CMP_SWAP || m->opcode == MR_WR_FETCH_ADD) {
		h->swap_add = m->swap_add;
		h->compare = m->compare;
	}
	if (m->opcode == MR_WR_SEND_IMM || m->opcode == MR_WR_WRITE_IMM) {
		h->flags |= MR_F_IMM;
		h->imm = m->imm;
	} else if (m->opcode == MR_WR_SEND_INV) {
		h->flags |= MR_F_INV;
		h->inv_rkey = m->imm;
	}
	if ((m->flags & MR_WRF_SOLICITED) && mr_wr_consumes_recv(m->opcode))
		h->flags |= MR_F_SOLICIT;
	/* The last segment of a message asks for a prompt ACK. */
	if (mr_wr_is_read_atomic(m->opcode) || s->offset + s->len >= m->len)
		h->flags |= MR_F_ACKREQ;
	return 0;
}

void mr_qp_seg_acked(struct mr_qp *qp, struct mr_seg *s, u64 now)
{
	if (s->kind == MR_SEG_REQ) {
		mr_qp_seg_gone(qp, s);
		if (mr_sq_live(qp, s->msn)) {
			struct mr_msg *m = mr_sq_msg(qp, s->msn);

			if (m->gen == s->gen && m->segs_out)
				m->segs_out--;
		}
	}
	mr_qp_progress(qp, now);
}

/* A request segment of @qp left the connection's table, or became a NOP. */
void mr_qp_seg_gone(struct mr_qp *qp, const struct mr_seg *s)
{
	if (s->kind == MR_SEG_REQ && qp->wire_segs)
		qp->wire_segs--;
}

static void mr_qp_emit(struct mr_qp *qp, struct mr_msg *m, u8 status)
{
	struct mr_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.cookie = m->cookie;
	cqe.opcode = m->opcode;
	cqe.status = status;
	cqe.byte_len = m->len;
	qp->conn->ops->complete(qp->conn->env, qp, &cqe);
}

/* Report completed messages in order, oldest first. */
static void mr_qp_fail(struct mr_qp *qp, u8 status, u64 now);
static void mr_qp_complete_ok(struct mr_qp *qp, u64 now, int *anyp);

static void mr_qp_complete(struct mr_qp *qp, u64 now)
{
	int any = 0;

	mr_qp_complete_ok(qp, now, &any);
	/* A NAK reported for a message is delivered when it is the oldest. */
	if (qp->nak_pend && qp->sq_una == qp->nak_pend_msn &&
	    qp->state != MR_QP_ERR)
		mr_qp_fail(qp, qp->nak_pend_status, now);
}

static void mr_qp_complete_ok(struct mr_qp *qp, u64 now, int *anyp)
{
	int any = 0;

	while (qp->sq_una != qp->sq_cur) {
		struct mr_msg *m = mr_sq_msg(qp, qp->sq_una);

		if (m->state != MR_MSG_DONE)
			break;
		if (mr_wr_is_read_atomic(m->opcode) && qp->rd_out)
			qp->rd_out--;
		mr_qp_emit(qp, m, MR_WC_OK);
		mr_stat(qp->conn, MR_ST_MSG_DONE_TX, 1);
		m->state = MR_MSG_FREE;
		qp->sq_una = (qp->sq_una + 1) & MR_MSN_MASK;
		any = 1;
		/* Nothing completes past a message a NAK failed. */
		if (qp->nak_pend && qp->sq_una == qp->nak_pend_msn)
			break;
	}
	*anyp = any;
	if (!any)
		return;
	if (mr_msn_lt(qp->blk_msn, qp->sq_una))
		qp->blk_msn = qp->sq_una;
	/* As IB: the RNR retry count is per request, not per QP life. */
	qp->rnr_left = qp->attr.rnr_retry;
	mr_qp_progress(qp, now);
	if (qp->sq_cur != qp->sq_nxt && !qp->rnr_wait)
		mr_qp_activate(qp);
}

/* Give back the chunks of the connection that @qp's messages hold. */
static void mr_qp_release_segs(struct mr_qp *qp)
{
	struct mr_conn *c = qp->conn;
	u32 i;

	if (!c)
		return;
	for (i = 0; i < MR_MSG_WND; i++)
		if (qp->rq[i].seg.ext)
			mr_segmap_reset(c, &qp->rq[i].seg);
	for (i = 0; i < qp->sq_slots; i++) {
		struct mr_msg *m = &qp->sq[i];

		if (m->state != MR_MSG_FREE && m->opcode == MR_WR_READ &&
		    m->seg.ext)
			mr_segmap_reset(c, &m->seg);
	}
}

/*
 * Enter the error state: flush everything the engine holds, the oldest
 * incomplete request with @status, and tell the caller (@cause, an
 * enum mr_wc_status) unless the caller asked for it.
 */
static void mr_qp_fail_cause(struct mr_qp *qp, u8 status, u8 cause, u64 now)
{
	struct mr_conn *c = qp->conn;
	u8 st = status;
	int any;

	qp->nak_pend = 0;
	mr_qp_complete_ok(qp, now, &any);
	mr_qp_release_segs(qp);
	while (qp->sq_una != qp->sq_nxt) {
		struct mr_msg *m = mr_sq_msg(qp, qp->sq_una);

		mr_qp_emit(qp, m, st);
		st = MR_WC_WR_FLUSH_ERR;
		m->state = MR_MSG_FREE;
		qp->sq_una = (qp->sq_una + 1) & MR_MSN_MASK;
	}
	qp->sq_cur = qp->sq_nxt;
	qp->rd_out = 0;
	qp->resp_cnt = 0;
	qp->state = MR_QP_ERR;
	mr_qp_enlist(qp, MR_QS_IDLE, now);
	if (c) {
		if (mr_list_linked(&qp->active_node))
			mr_list_del(&qp->active_node);
		if (cause != MR_WC_OK)
			c->ops->qp_error(c->env, qp, cause);
	}
}

static void mr_qp_fail(struct mr_qp *qp, u8 status, u64 now)
{
	mr_qp_fail_cause(qp, status, status, now);
}

/* The memory a request or response was sent from is no longer valid. */
void mr_qp_source_gone(struct mr_qp *qp, u64 now)
{
	if (qp->state != MR_QP_ERR)
		mr_qp_fail(qp, MR_WC_LOC_PROT_ERR, now);
}

void mr_qp_set_error(struct mr_qp *qp, u64 now)
{
	if (qp->state == MR_QP_ERR)
		return;
	if (!qp->conn) {
		qp->state = MR_QP_ERR;
		return;
	}
	mr_qp_fail_cause(qp, MR_WC_WR_FLUSH_ERR, MR_WC_OK, now);
}

void mr_qp_detach(struct mr_qp *qp)
{
	struct mr_conn *c = qp->conn;
	u32 d;

	if (!c)
		return;
	mr_qp_release_segs(qp);
	for (d = c->dsn_una; d != c->dsn_nxt; d++) {
		struct mr_seg *s = mr_seg_of(c, d);

		if (s && s->qp == qp) {
			s->qp = NULL;
			s->kind = MR_SEG_NOP;
		}
	}
	if (mr_list_linked(&qp->active_node))
		mr_list_del(&qp->active_node);
	if (mr_list_linked(&qp->busy_node))
		mr_list_del(&qp->busy_node);
	qp->sched = MR_QS_IDLE;
	qp->wire_segs = 0;
	if (mr_list_linked(&qp->dirty_node))
		mr_list_del(&qp->dirty_node);
	qp->conn = NULL;
	qp->state = MR_QP_RESET;
}

/* The responder's fatal error, once its older responses are out. */
void mr_qp_fatal_fail(struct mr_qp *qp)
{
	mr_qp_fail_cause(qp, MR_WC_WR_FLUSH_ERR,
			 qp->nak_status == MR_QPS_REM_ACCESS ?
			 MR_WC_REM_ACCESS_ERR :
			 qp->nak_status == MR_QPS_REM_OP ?
			 MR_WC_REM_OP_ERR : MR_WC_REM_INV_REQ_ERR,
			 qp->last_progress);
}

/*
 * A READ or atomic response for one of our messages: is it the one the
 * message awaits? On success @rx says where it goes (its placement is the
 * caller's, reported back through mr_qp_response_done()).
 */
void mr_qp_rx_response(struct mr_conn *c, struct mr_qp *qp,
		       const struct mr_hdr *h, struct mr_rx *rx)
{
	struct mr_msg *m;

	if (qp->state != MR_QP_RTS) {
		mr_drop(c, rx, MR_DROP_QP_STATE);
		return;
	}
	if (!mr_sq_live(qp, h->msn) ||
	    !mr_msn_lt(h->msn, qp->sq_cur)) {
		mr_drop(c, rx, MR_DROP_MSN_WINDOW);
		return;
	}
	m = mr_sq_msg(qp, h->msn);
	if (m->gen != h->gen) {
		mr_drop(c, rx, MR_DROP_STALE_GEN);
		return;
	}
	if (m->state != MR_MSG_SENT) {
		mr_drop(c, rx, MR_DROP_DUP);
		return;
	}
	if (h->opcode == MR_OP_READ_RESP ? m->opcode != MR_WR_READ ||
					   h->msg_len != m->len :
					   m->opcode == MR_WR_READ ||
					   !mr_wr_is_read_atomic(m->opcode)) {
		mr_drop(c, rx, MR_DROP_INCONSISTENT);
		return;
	}
	if (h->opcode == MR_OP_READ_RESP) {
		int st = mr_segmap_check(c, &m->seg, m->len, h->offset,
					 h->plen, &rx->seg);

		if (st) {
			mr_drop(c, rx, st);
			return;
		}
	}
	rx->qp = qp;
	rx->slot = h->msn;
	rx->cookie = m->cookie;
	rx->action = h->opcode == MR_OP_READ_RESP ? MR_RXA_READ_RESP :
						    MR_RXA_ATOMIC_RESP;
}

/* The response of mr_qp_rx_response() was placed, or failed (@status). */
void mr_qp_response_done(struct mr_conn *c, struct mr_qp *qp,
			 const struct mr_hdr *h, const struct mr_rx *rx,
			 int status, u64 now)
{
	struct mr_msg *m;

	if (qp->state != MR_QP_RTS)
		return;
	m = mr_sq_msg(qp, rx->slot);
	if (status != MR_RXS_OK) {
		mr_qp_fail(qp, MR_WC_LOC_PROT_ERR, now);
		return;
	}
	mr_stat(c, MR_ST_RX_PLACED, 1);
	if (rx->action == MR_RXA_ATOMIC_RESP ||
	    mr_segmap_land(c, &m->seg, m->len, h->offset, rx->seg))
		m->state = MR_MSG_DONE;
	mr_qp_progress(qp, now);
	mr_qp_complete(qp, now);
}

/* IB's RNR timer encoding (5 bits) to nanoseconds. */
static u64 mr_rnr_ns(u32 code)
{
	static const u32 us[32] = {
		655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480,
		640, 960, 1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360,
		20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760,
		327680, 491520
	};

	return (u64)us[code & 31] * 1000;
}

static void mr_qp_rewind(struct mr_qp *qp, u64 now)
{
	u32 msn;

	/* A block received while waiting may have completed some. */
	if (mr_msn_lt(qp->rnr_msn, qp->sq_una))
		qp->rnr_msn = qp->sq_una;
	qp->gen++;
	for (msn = qp->rnr_msn; msn != qp->sq_nxt;
	     msn = (msn + 1) & MR_MSN_MASK) {
		struct mr_msg *m = mr_sq_msg(qp, msn);

		if (m->state == MR_MSG_DONE)
			continue;
		if (m->state != MR_MSG_QUEUED && mr_wr_is_read_atomic(m->opcode) &&
		    qp->rd_out)
			qp->rd_out--;
		m->state = MR_MSG_QUEUED;
		m->sent = 0;
		if (m->opcode == MR_WR_READ)
			mr_segmap_reset(qp->conn, &m->seg);
		m->segs_out = 0;
		m->gen = qp->gen;
	}
	qp->sq_cur = qp->rnr_msn;
	if (mr_msn_lt(qp->sq_cur, qp->blk_msn))
		qp->blk_msn = qp->sq_cur;
	qp->rnr_wait = 0;
	mr_qp_activate(qp);
	mr_qp_progress(qp, now);
}

void mr_qp_on_ack_block(struct mr_qp *qp, const struct mr_ack_qp *aq, u64 now)
{
	u32 span, d, msn;

	if (qp->state != MR_QP_RTS)
		return;
	span = mr_msn_diff(qp->sq_cur, qp->sq_una);
	d = mr_msn_diff(aq->msn, qp->sq_una);
	switch (aq->status) {
	case MR_QPS_OK:
		if (!d || d > span)
			return;
		/* News of the messages before aq->msn is an answer. */
		if (mr_msn_lt(qp->blk_msn, aq->msn)) {
			qp->blk_msn = aq->msn;
			mr_qp_progress(qp, now);
		}
		for (msn = qp->sq_una; msn != aq->msn;
		     msn = (msn + 1) & MR_MSN_MASK) {
			struct mr_msg *m = mr_sq_msg(qp, msn);

			if (!mr_wr_is_read_atomic(m->opcode) &&
			    m->state == MR_MSG_SENT)
				m->state = MR_MSG_DONE;
		}
		mr_qp_complete(qp, now);
		return;
	case MR_QPS_RNR:
		if (aq->gen != qp->gen || d >= span || qp->rnr_wait)
			return;
		mr_stat(qp->conn, MR_ST_RNR_NAK_RX, 1);
		if (qp->attr.rnr_retry != 7) {
			if (!qp->rnr_left) {
				mr_qp_fail(qp, MR_WC_RNR_RETRY_EXC_ERR, now);
				return;
			}
			qp->rnr_left--;
		}
		qp->rnr_wait = 1;
		qp->rnr_msn = aq->msn;
		qp->rnr_until = now + mr_rnr_ns(aq->aux);
		if (mr_list_linked(&qp->active_node))
			mr_list_del(&qp->active_node);
		mr_qp_resched(qp, now);
		return;
	default:
		if (d > span)
			return;
		mr_stat(qp->conn, MR_ST_NAK_RX, 1);
		/* Everything before the failed message completed or executed. */
		if (mr_msn_lt(qp->blk_msn, aq->msn))
			qp->blk_msn = aq->msn;
		for (msn = qp->sq_una; msn != aq->msn;
		     msn = (msn + 1) & MR_MSN_MASK) {
			struct mr_msg *m = mr_sq_msg(qp, msn);

			if (!mr_wr_is_read_atomic(m->opcode) &&
			    m->state == MR_MSG_SENT)
				m->state = MR_MSG_DONE;
		}
		/*
		 * Everything older completed at the responder; READ and atomic
		 * responses may still be on their way: complete in order and
		 * fail the QP when the failed message is the oldest.
		 */
		if (qp->nak_pend && !mr_msn_lt(aq->msn, qp->nak_pend_msn))
			return;
		qp->nak_pend = 1;
		qp->nak_pend_msn = aq->msn;
		qp->nak_pend_status = aq->status == MR_QPS_REM_ACCESS ?
			MR_WC_REM_ACCESS_ERR : aq->status == MR_QPS_REM_OP ?
			MR_WC_REM_OP_ERR : MR_WC_REM_INV_REQ_ERR;
		mr_qp_complete(qp, now);
		return;
	}
}

static void mr_qp_send_ackreq(struct mr_conn *c, struct mr_qp *qp, u64 now)
{
	struct mr_hdr h;

	memset(&h, 0, sizeof(h));
	h.opcode = MR_OP_ACK_REQ;
	h.dst_qpn = qp->attr.dest_qpn;
	h.src_qpn = qp->qpn;
	if (!mr_conn_send_ctrl(c, &h, -1, now))
		mr_stat(c, MR_ST_TX_ACKREQ, 1);
}

/*
 * Retry exhaustion: no answer for retry_cnt + 1 timeouts. A timeout is at
 * least two maximal path timeouts, so that paths backing off, dying and
 * being probed back (a plane failure) never count as the peer being gone.
 */
static u64 mr_qp_retry_ns(const struct mr_qp *qp, const struct mr_conn *c)
{
	if (!qp->attr.timeout_ns)
		return MR_U64_MAX;
	return ((u64)qp->attr.retry_cnt + 1) *
	       mr_max64(qp->attr.timeout_ns, 2 * (u64)c->cfg.rto_max_ns);
}

/*
 * How often a QP an answer is due to is looked at: the ACK_REQ interval
 * (msg_ack_ns, or a round trip's timeout if that is longer).
 */
static u64 mr_qp_wire_visit(const struct mr_conn *c)
{
	return mr_max64(c->cfg.msg_ack_ns, mr_conn_rto(c));
}

/*
 * How often a waiting QP is looked at: it can only fail, and only once the
 * connection itself went quiet for its retry time (at least 2 rto_max).
 */
static u64 mr_qp_wait_visit(const struct mr_conn *c)
{
	return mr_max64(c->cfg.msg_ack_ns, c->cfg.rto_max_ns / 4);
}

/*
 * A QP an answer is due to: fail it once its retries are exhausted; ask
 * again (ACK_REQ) when its oldest message not yet reported is delivered,
 * and nothing came back for a round trip's timeout, backing off while the
 * questions go unanswered (a QP block is lost only with its ACK).
 */
static void mr_qp_visit_wire(struct mr_conn *c, struct mr_qp *qp, u64 now)
{
	u64 idle = now - qp->last_progress, base;
	struct mr_msg *m;

	if (idle >= mr_qp_retry_ns(qp, c)) {
		mr_qp_fail(qp, MR_WC_RETRY_EXC_ERR, now);
		return;
	}
	base = mr_qp_wire_visit(c);
	m = mr_sq_msg(qp, qp->blk_msn);
	if (mr_msn_lt(qp->blk_msn, qp->sq_cur) && mr_sq_live(qp, qp->blk_msn) &&
	    m->state == MR_MSG_SENT && !m->segs_out && idle >= base &&
	    now >= qp->next_ackreq) {
		qp->next_ackreq = now + (base << mr_min32(qp->ackreq_n, 4));
		if (qp->ackreq_n < 255)
			qp->ackreq_n++;
		mr_qp_send_ackreq(c, qp, now);
	}
	mr_qp_enlist(qp, MR_QS_WIRE, now);
}

/*
 * A QP waiting to be served: it owes its wait to the connection, so it
 * fails only when the connection has heard nothing from the peer for its
 * retry time.
 */
static void mr_qp_visit_wait(struct mr_conn *c, struct mr_qp *qp, u64 now)
{
	u64 since = mr_max64(qp->last_progress, mr_conn_alive_at(c));

	if (now - since >= mr_qp_retry_ns(qp, c)) {
		mr_qp_fail(qp, MR_WC_RETRY_EXC_ERR, now);
		return;
	}
	mr_qp_enlist(qp, MR_QS_WAIT, now);
}

void mr_qp_sweep(struct mr_conn *c, u64 now)
{
	u64 wire = mr_qp_wire_visit(c), wait = mr_qp_wait_visit(c);
	struct mr_qp *qp;

	if (now < c->next_sweep)
		return;
	c->next_sweep = now + c->cfg.msg_ack_ns / 2;
	/* RNR timers ran out: resend from the refused message. */
	while (!mr_list_empty(&c->rnrq)) {
		qp = mr_container_of(c->rnrq.next, struct mr_qp, busy_node);
		if (now < qp->rnr_until)
			break;
		mr_qp_rewind(qp, now);
	}
	/*
	 * Each list is in the order its QPs were last looked at or made
	 * progress; a visited QP goes to the tail, so each QP is looked at
	 * once per period, however many there are.
	 */
	while (!mr_list_empty(&c->busy)) {
		qp = mr_container_of(c->busy.next, struct mr_qp, busy_node);
		if (now - qp->stamp < wire)
			break;
		mr_qp_visit_wire(c, qp, now);
	}
	while (!mr_list_empty(&c->waitq)) {
		qp = mr_container_of(c->waitq.next, struct mr_qp, busy_node);
		if (now - qp->stamp < wait)
			break;
		mr_qp_visit_wait(c, qp, now);
	}
}

u64 mr_qp_next_timer(const struct mr_conn *c)
{
	u64 t = MR_U64_MAX;
	const struct mr_qp *qp;

	if (!mr_list_empty(&c->rnrq)) {
		qp = mr_container_of(c->rnrq.next, struct mr_qp, busy_node);
		t = qp->rnr_until;
	}
	if (!mr_list_empty(&c->busy)) {
		qp = mr_container_of(c->busy.next, struct mr_qp, busy_node);
		t = mr_min64(t, qp->stamp + mr_qp_wire_visit(c));
	}
	if (!mr_list_empty(&c->waitq)) {
		qp = mr_container_of(c->waitq.next, struct mr_qp, busy_node);
		t = mr_min64(t, qp->stamp + mr_qp_wait_visit(c));
	}
	return t == MR_U64_MAX ? t : mr_max64(c->next_sweep, t);
}

int mr_qp_has_tx(const struct mr_qp *qp, u64 now)
{
	(void)now;
	return qp->resp_cnt || (qp->state == MR_QP_RTS && !qp->rnr_wait &&
				qp->sq_cur != qp->sq_nxt);
}
