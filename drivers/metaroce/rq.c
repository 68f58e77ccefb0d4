// SPDX-License-Identifier: GPL-2.0-only
/*
 * The receive queue: posting receives, the user receive ring, binding a
 * receive to an incoming SEND, and completing or flushing receives.
 *
 * Receive WQEs sit in the QP's receive queue (or an SRQ) until the engine
 * binds one to an incoming SEND (mr_qp_eng_bind_recv(), the ssn-th posted)
 * and completes it (mr_qp_recv_complete()). A user QP's receives are copied
 * from the ring its process maps when they are needed (mr_qp_rq_pull()).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/uaccess.h>
#include <uapi/rdma/metaroce-abi.h>

#include "metaroce.h"
#include "qp.h"

/*
 * mr_qp_rq_pull() - copy what the process wrote to the QP's receive ring
 * into qp->rq, whose indices are the ring's; rq_lock held. Returns the
 * number of receive WQEs qp->rq then holds. A producer index more than
 * the ring's size ahead of the receives completed, or behind those taken,
 * is ignored.
 */
u32 mr_qp_rq_pull(struct mr_ibqp *qp)
{
	struct mr_rring *rq = &qp->rq;
	u32 prod;

	if (qp->rq_user.ring) {
		/* The slots before the index that shows them. */
		prod = smp_load_acquire(&qp->rq_user.ring->producer);
		if (prod - rq->head <= rq->size &&
		    prod - rq->tail <= prod - rq->head)
			for (; rq->tail != prod; rq->tail++)
				mr_urq_copy(&qp->rq_user, rq->tail,
					    mr_rring_slot(rq, rq->tail),
					    rq->max_sge);
	}
	return mr_rring_count(rq);
}

/* The receive WQE at qp->rq.head (one is queued) is done with; rq_lock held. */
void mr_qp_rq_retire(struct mr_ibqp *qp)
{
	qp->rq.head++;
	qp->rq_ssn++;
	if (!qp->rq_user.ring)
		return;
	/* The slot's copy was taken before: the process may write it now. */
	smp_store_release(&qp->rq_user.ring->consumer, qp->rq.head);
}

/*
 * In the error state, a QP on an SRQ completes the receives it took, in
 * SSN order, flushed; then it will take no more: the last WQE is reached.
 */
void mr_qp_flush_srq(struct mr_ibqp *qp)
{
	struct mr_cq *cq = to_mr_cq(qp->ibqp.recv_cq);
	struct mr_srq_bound *b = qp->srq_bound;
	unsigned long flags;

	for (;;) {
		struct ib_wc wc = {};
		u32 n, i = 0;

		spin_lock_irqsave(&qp->rq_lock, flags);
		/* The lowest SSN held, from rq_ssn on. */
		for (n = 0; n < MR_MSG_WND; n++) {
			i = (qp->rq_ssn + n) % MR_MSG_WND;
			if (b->valid & BIT_ULL(i))
				break;
		}
		if (n == MR_MSG_WND) {
			spin_unlock_irqrestore(&qp->rq_lock, flags);
			break;
		}
		wc.wr_id = mr_srq_bound_slot(b, i)->wr_id;
		b->valid &= ~BIT_ULL(i);
		qp->rq_ssn += n + 1;
		spin_unlock_irqrestore(&qp->rq_lock, flags);
		wc.status = IB_WC_WR_FLUSH_ERR;
		wc.opcode = IB_WC_RECV;
		wc.qp = &qp->ibqp;
		mr_qp_cq_push(qp, cq, &wc, false);
	}
	if (READ_ONCE(qp->state) == IB_QPS_ERR &&
	    !test_and_set_bit(MR_QP_LAST_WQE, &qp->retire))
		mr_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
}

/*
 * In the error state: flush the receive WQEs, those the process writes to
 * its ring later included (it rings the doorbell for them: see
 * uapi/rdma/metaroce-abi.h).
 */
void mr_qp_flush_rq(struct mr_ibqp *qp)
{
	struct mr_cq *cq = to_mr_cq(qp->ibqp.recv_cq);
	unsigned long flags;

	if (qp->ibqp.srq) {
		mr_qp_flush_srq(qp);
		return;
	}
	if (qp->rq_user.ring) {
		WRITE_ONCE(qp->rq_user.ring->flags, METAROCE_RQ_NEED_WAKEUP);
		/* The flag before the index: one of us sees the other. */
		smp_mb();
	}
	for (;;) {
		struct ib_wc wc = {};

		spin_lock_irqsave(&qp->rq_lock, flags);
		if (!mr_qp_rq_pull(qp)) {
			spin_unlock_irqrestore(&qp->rq_lock, flags);
			break;
		}
		wc.wr_id = mr_rring_slot(&qp->rq, qp->rq.head)->wr_id;
		mr_qp_rq_retire(qp);
		spin_unlock_irqrestore(&qp->rq_lock, flags);
		wc.status = IB_WC_WR_FLUSH_ERR;
		wc.opcode = IB_WC_RECV;
		wc.qp = &qp->ibqp;
		mr_qp_cq_push(qp, cq, &wc, false);
	}
}

/* --------------------------------------- binding and completing receives */

struct mr_rwqe *mr_qp_recv_wqe(struct mr_ibqp *qp, u64 cookie)
{
	if (qp->ibqp.srq)
		return mr_srq_bound_slot(qp->srq_bound, (u32)cookie);
	return mr_rring_slot(&qp->rq, (u32)cookie);
}

/*
 * The engine's receive for @ssn: the ssn-th posted (engine.rst, 5.5). A QP
 * on an SRQ takes one into slot ssn % MR_MSG_WND of its block, and gives
 * the same one again for the same SSN (after an RNR rewind); the engine
 * keeps the SSNs it binds within MR_MSG_WND of the next to complete, and
 * so, without relying on it, does this.
 */
int mr_qp_eng_bind_recv(struct mr_ibqp *qp, u32 ssn, u64 *cookie, u32 *len)
{
	struct mr_rwqe *w;
	unsigned long flags;
	u32 idx;

	if (qp->ibqp.srq) {
		struct mr_srq_bound *b = qp->srq_bound;

		idx = ssn % MR_MSG_WND;
		w = mr_srq_bound_slot(b, idx);
		/*
		 * Only the engine's bind and completion (under the peer's
		 * lock) change the slots while the QP is attached.
		 */
		if (ssn - READ_ONCE(qp->rq_ssn) >= MR_MSG_WND)
			return -1;
		if (!(READ_ONCE(b->valid) & BIT_ULL(idx))) {
			if (mr_srq_take(to_mr_srq(qp->ibqp.srq), w))
				return -1;
			spin_lock_irqsave(&qp->rq_lock, flags);
			b->valid |= BIT_ULL(idx);
			spin_unlock_irqrestore(&qp->rq_lock, flags);
		}
		*cookie = idx;
		*len = w->length;
		return 0;
	}
	spin_lock_irqsave(&qp->rq_lock, flags);
	if (ssn - qp->rq_ssn >= mr_rring_count(&qp->rq) &&
	    ssn - qp->rq_ssn >= mr_qp_rq_pull(qp)) {
		spin_unlock_irqrestore(&qp->rq_lock, flags);
		return -1;
	}
	idx = qp->rq.head + (ssn - qp->rq_ssn);
	*cookie = idx;
	*len = mr_rring_slot(&qp->rq, idx)->length;
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	return 0;
}

/*
 * The engine completes receives in SSN order, each once: the one at the
 * head of the receive queue (of the SRQ slots). Anything else is refused
 * and fails the QP, counted as an SSN violation.
 */
void mr_qp_recv_complete(struct mr_ibqp *qp, const struct mr_cqe *cqe)
{
	struct ib_wc wc = {};
	unsigned long flags;
	bool ok;

	spin_lock_irqsave(&qp->rq_lock, flags);
	if (qp->ibqp.srq) {
		struct mr_srq_bound *b = qp->srq_bound;
		u32 idx = qp->rq_ssn % MR_MSG_WND;

		ok = cqe->cookie == idx && (b->valid & BIT_ULL(idx));
		if (ok) {
			wc.wr_id = mr_srq_bound_slot(b, idx)->wr_id;
			b->valid &= ~BIT_ULL(idx);
			qp->rq_ssn++;
		}
	} else {
		ok = qp->rq.head != qp->rq.tail &&
		     cqe->cookie == (u64)qp->rq.head;
		if (ok) {
			wc.wr_id = mr_rring_slot(&qp->rq, qp->rq.head)->wr_id;
			mr_qp_rq_retire(qp);
		}
	}
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	if (!ok) {
		/* Under the peer's lock (an engine callback). */
		if (qp->eng.conn)
			qp->eng.conn->drops[MR_DROP_SSN]++;
		mr_qp_break(qp);
		return;
	}
	wc.status = mr_wc_status(cqe->status);
	wc.opcode = cqe->opcode == MR_WC_RECV ? IB_WC_RECV :
						IB_WC_RECV_RDMA_WITH_IMM;
	wc.byte_len = cqe->byte_len;
	wc.qp = &qp->ibqp;
	wc.src_qp = qp->attr.dest_qp_num;
	wc.port_num = 1;
	if (cqe->imm_valid) {
		wc.ex.imm_data = cpu_to_be32(cqe->imm);
		wc.wc_flags |= IB_WC_WITH_IMM;
	} else if (cqe->inv_valid) {
		wc.ex.invalidate_rkey = cqe->imm;
		wc.wc_flags |= IB_WC_WITH_INVALIDATE;
		if (wc.status == IB_WC_SUCCESS) {
			if (mr_mem_invalidate(qp->dev, qp->ibqp.pd, cqe->imm))
				wc.status = IB_WC_REM_INV_REQ_ERR;
			else
				mr_counter_add(qp->dev->counters,
					       MR_CNT_REMOTE_INV, 1);
		}
	}
	mr_qp_cq_push(qp, to_mr_cq(qp->ibqp.recv_cq), &wc, cqe->solicited);
}

int mr_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		 const struct ib_recv_wr **bad_wr)
{
	struct mr_ibqp *qp = to_mr_ibqp(ibqp);
	enum ib_qp_state state = READ_ONCE(qp->state);
	unsigned long flags;
	int err = 0;

	if (ibqp->srq || state == IB_QPS_RESET) {
		*bad_wr = wr;
		return -EINVAL;
	}
	/* A QP with a receive ring posts there; this is its doorbell. */
	if (qp->rq_user.ring) {
		if (wr) {
			*bad_wr = wr;
			return -EINVAL;
		}
		if (state == IB_QPS_ERR)
			mr_qp_flush_rq(qp);
		return 0;
	}
	if (state == IB_QPS_ERR) {
		for (; wr; wr = wr->next)
			mr_flush_now(to_mr_cq(ibqp->recv_cq), ibqp, wr->wr_id,
				     IB_WC_RECV);
		return 0;
	}
	spin_lock_irqsave(&qp->rq_lock, flags);
	for (; wr; wr = wr->next) {
		err = mr_rring_post(&qp->rq, wr);
		if (err)
			break;
	}
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	if (err)
		*bad_wr = wr;
	return err;
}
