// SPDX-License-Identifier: GPL-2.0-only
/*
 * Queue pairs: creation, the verbs state machine, posting, completions.
 *
 * Work requests are copied into the QP's send ring at post time (any
 * context) and the device's NAPI context is kicked; there they are handed
 * to the transport engine (RC) or sent (UD/GSI). The engine reports
 * completions in posting order through mr_qp_eng_complete(), which retires
 * ring entries and writes CQEs. Receive WQEs sit in the QP's receive ring
 * (or an SRQ) until the engine binds one to an incoming SEND.
 *
 * An RC QP is attached to a peer (the engine connection to the remote
 * address of its address vector) from RTR until reset or destroy.
 *
 * A user RC QP may instead have a send ring in memory its process maps
 * (uapi/rdma/metaroce-abi.h): its work requests are copied into the send
 * queue when the process rings the doorbell, and whenever the QP's
 * completions bring the kernel back to it (mr_qp_sq_pull()).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/etherdevice.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/log2.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <rdma/ib_pack.h>
#include <uapi/rdma/metaroce-abi.h>

#include "metaroce.h"

/* Largest inline send: payload copied into the work request itself. */
#define MR_MAX_INLINE		256
#define MR_GRH_LEN		40
/* Send budget of one NAPI service of a QP (UD) */
#define MR_UD_BUDGET		64
/*
 * A send ring whose QP has nothing outstanding is looked at every
 * MR_SQ_POLL_NS for MR_SQ_IDLE_NS after work requests were last taken
 * from it, before the kernel asks for a doorbell (mr_qp_sq_pull()).
 */
#define MR_SQ_POLL_NS		(20 * NSEC_PER_USEC)
#define MR_SQ_IDLE_NS		(1000 * NSEC_PER_USEC)

/* --------------------------------------------------------------- helpers */

int mr_sges_read(struct mr_dev *dev, struct ib_pd *pd,
		 const struct ib_sge *sge, u32 num_sge, u32 offset, void *to,
		 u32 len)
{
	u32 i;

	for (i = 0; i < num_sge && len; i++) {
		struct mr_mem *mem;
		u32 n;

		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - offset);
		mem = mr_mem_get(dev, pd, sge[i].lkey, 0, sge[i].addr + offset,
				 n);
		if (!mem)
			return -EACCES;
		mr_mem_read(mem, sge[i].addr + offset, to, n);
		mr_mem_put(mem);
		to += n;
		len -= n;
		offset = 0;
	}
	return len ? -EINVAL : 0;
}

int mr_sges_write(struct mr_dev *dev, struct ib_pd *pd,
		  const struct ib_sge *sge, u32 num_sge, u32 offset,
		  const void *from, const struct sk_buff *skb, int skb_off,
		  u32 len)
{
	u32 i;

	for (i = 0; i < num_sge && len; i++) {
		struct mr_mem *mem;
		u64 at;
		u32 n;

		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - offset);
		at = sge[i].addr + offset;
		mem = mr_mem_get(dev, pd, sge[i].lkey, IB_ACCESS_LOCAL_WRITE,
				 at, n);
		if (!mem)
			return -EACCES;
		if (from) {
			mr_mem_write(mem, at, from, n);
			from += n;
		} else if (mr_mem_write_skb(mem, at, skb, skb_off, n)) {
			mr_mem_put(mem);
			return -EFAULT;
		}
		mr_mem_put(mem);
		skb_off += n;
		len -= n;
		offset = 0;
	}
	return len ? -EINVAL : 0;
}

static int mr_sring_init(struct mr_sring *r, u32 size, u32 max_sge,
			 u32 max_inline)
{
	u32 payload = max(max_sge * (u32)sizeof(struct ib_sge), max_inline);

	/* Free-running u32 indices map onto slots only for a power of two. */
	r->size = roundup_pow_of_two(max(size, 1U));
	r->stride = ALIGN(sizeof(struct mr_swqe) + payload, 8);
	/* The process's memory: charged to it (as are all its rings). */
	r->buf = kvcalloc(r->size, r->stride, GFP_KERNEL_ACCOUNT);
	r->head = 0;
	r->eng = 0;
	r->tail = 0;
	return r->buf ? 0 : -ENOMEM;
}

static enum ib_wc_status mr_wc_status(u8 st)
{
	switch (st) {
	case MR_WC_OK:
		return IB_WC_SUCCESS;
	case MR_WC_LOC_LEN_ERR:
		return IB_WC_LOC_LEN_ERR;
	case MR_WC_REM_ACCESS_ERR:
		return IB_WC_REM_ACCESS_ERR;
	case MR_WC_REM_INV_REQ_ERR:
		return IB_WC_REM_INV_REQ_ERR;
	case MR_WC_REM_OP_ERR:
		return IB_WC_REM_OP_ERR;
	case MR_WC_RETRY_EXC_ERR:
		return IB_WC_RETRY_EXC_ERR;
	case MR_WC_RNR_RETRY_EXC_ERR:
		return IB_WC_RNR_RETRY_EXC_ERR;
	case MR_WC_LOC_PROT_ERR:
		return IB_WC_LOC_PROT_ERR;
	case MR_WC_LOC_QP_OP_ERR:
		return IB_WC_LOC_QP_OP_ERR;
	default:
		return IB_WC_WR_FLUSH_ERR;
	}
}

static enum ib_wc_opcode mr_wc_opcode(u32 wr_opcode)
{
	switch (wr_opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case IB_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case IB_WR_REG_MR:
		return IB_WC_REG_MR;
	default:
		return IB_WC_SEND;
	}
}

static bool mr_qp_is_rc(const struct mr_ibqp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_RC;
}

struct mr_ibqp *mr_qp_get(struct mr_dev *dev, u32 qpn)
{
	struct mr_ibqp *qp;

	xa_lock(&dev->qps);
	qp = xa_load(&dev->qps, qpn);
	if (qp && !refcount_inc_not_zero(&qp->ref))
		qp = NULL;
	xa_unlock(&dev->qps);
	return qp;
}

void mr_qp_put(struct mr_ibqp *qp)
{
	if (refcount_dec_and_test(&qp->ref))
		complete(&qp->released);
}

/* ------------------------------------------------------- send completion */

/*
 * Report finished send WQEs in order; called with no ring lock held, from
 * NAPI and from process context. One context retires at a time (completions
 * stay in posting order); a call meanwhile has the retiring one look again.
 * What a completion needs is copied out under sq_lock, before the slot is
 * given back to mr_post_send().
 */
static bool mr_qp_sq_pull(struct mr_ibqp *qp);

/* Under sq_lock: tell the process that slots up to sq.head are free. */
static void mr_sq_ring_retired(struct mr_ibqp *qp)
{
	/* After our last read of them; pairs with the provider's acquire. */
	smp_store_release(&qp->sq_ring->retired, qp->sq.head);
}

static void mr_qp_sq_retire(struct mr_ibqp *qp)
{
	struct mr_cq *cq = to_mr_cq(qp->ibqp.send_cq);
	unsigned long flags;
	bool drained = false;

	/* Order the caller's wqe->done before the flag. */
	smp_mb__before_atomic();
	set_bit(MR_QP_RETIRE_AGAIN, &qp->retire);
	if (test_and_set_bit(MR_QP_RETIRING, &qp->retire))
		return;
again:
	clear_bit(MR_QP_RETIRE_AGAIN, &qp->retire);
	/* Callers that set the flag before this are seen by the scan. */
	smp_mb__after_atomic();
	for (;;) {
		struct mr_swqe *wqe;
		struct ib_wc wc = {};
		u32 opcode, flags_wr, ex;
		bool report;

		spin_lock_irqsave(&qp->sq_lock, flags);
		if (qp->sq.head == qp->sq.eng) {
			drained = qp->sq_draining;
			spin_unlock_irqrestore(&qp->sq_lock, flags);
			break;
		}
		wqe = mr_sring_slot(&qp->sq, qp->sq.head);
		if (!wqe->done) {
			spin_unlock_irqrestore(&qp->sq_lock, flags);
			break;
		}
		opcode = wqe->opcode;
		flags_wr = wqe->send_flags;
		ex = wqe->ex;
		wc.wr_id = wqe->wr_id;
		wc.status = wqe->status;
		wc.byte_len = wqe->length;
		qp->sq.head++;
		if (qp->sq_ring)
			mr_sq_ring_retired(qp);
		spin_unlock_irqrestore(&qp->sq_lock, flags);
		/*
		 * A local invalidate takes effect when everything posted
		 * before it is done: now, as it is retired in order.
		 */
		if (opcode == IB_WR_LOCAL_INV && wc.status == IB_WC_SUCCESS) {
			if (mr_mem_invalidate(qp->dev, qp->ibqp.pd, ex))
				wc.status = IB_WC_LOC_PROT_ERR;
			else
				mr_counter_add(qp->dev->counters,
					       MR_CNT_LOCAL_INV, 1);
		}
		wc.opcode = mr_wc_opcode(opcode);
		wc.qp = &qp->ibqp;
		wc.port_num = 1;
		report = wc.status != IB_WC_SUCCESS || qp->sq_sig_all ||
			 (flags_wr & IB_SEND_SIGNALED);
		if (report)
			mr_qp_cq_push(qp, cq, &wc, false);
	}
	clear_bit(MR_QP_RETIRING, &qp->retire);
	/* Pairs with the callers' set_bit(AGAIN) before test_and_set_bit(). */
	smp_mb__after_atomic();
	/* Another caller came while the slots were being looked at. */
	if (test_bit(MR_QP_RETIRE_AGAIN, &qp->retire) &&
	    !test_and_set_bit(MR_QP_RETIRING, &qp->retire))
		goto again;
	if (drained && qp->attr.en_sqd_async_notify && qp->ibqp.event_handler &&
	    !xchg(&qp->sqd_notified, true)) {
		struct ib_event ev = {
			.device = qp->ibqp.device,
			.element.qp = &qp->ibqp,
			.event = IB_EVENT_SQ_DRAINED,
		};

		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
	}
	/* Completions bring the kernel back to a send ring. */
	if (qp->sq_ring && mr_qp_sq_pull(qp))
		mr_napi_kick_qp(qp);
}

/* Mark every WQE not yet handed on as flushed (QP in error). */
static void mr_qp_flush_sq(struct mr_ibqp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	while (qp->sq.eng != qp->sq.tail) {
		struct mr_swqe *wqe = mr_sring_slot(&qp->sq, qp->sq.eng++);

		wqe->status = IB_WC_WR_FLUSH_ERR;
		wqe->done = true;
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	mr_qp_sq_retire(qp);
}

/*
 * mr_qp_rq_pull() - copy what the process wrote to the QP's receive ring
 * into qp->rq, whose indices are the ring's; rq_lock held. Returns the
 * number of receive WQEs qp->rq then holds. A producer index more than
 * the ring's size ahead of the receives completed, or behind those taken,
 * is ignored.
 */
static u32 mr_qp_rq_pull(struct mr_ibqp *qp)
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
static void mr_qp_rq_retire(struct mr_ibqp *qp)
{
	qp->rq.head++;
	qp->rq_ssn++;
	if (!qp->rq_user.ring)
		return;
	/* The slot's copy was taken before: the process may write it now. */
	smp_store_release(&qp->rq_user.ring->consumer, qp->rq.head);
}

static void mr_qp_event(struct mr_ibqp *qp, enum ib_event_type type);

/*
 * In the error state, a QP on an SRQ completes the receives it took, in
 * SSN order, flushed; then it will take no more: the last WQE is reached.
 */
static void mr_qp_flush_srq(struct mr_ibqp *qp)
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
static void mr_qp_flush_rq(struct mr_ibqp *qp)
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

static void mr_qp_event(struct mr_ibqp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = type,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/* -------------------------------------------------------- engine callbacks */

struct mr_rwqe *mr_qp_recv_wqe(struct mr_ibqp *qp, u64 cookie)
{
	if (qp->ibqp.srq)
		return mr_srq_bound_slot(qp->srq_bound, (u32)cookie);
	return mr_rring_slot(&qp->rq, (u32)cookie);
}

/*
 * A completion of @qp cannot be reported (its CQ is full, or the engine
 * named a receive the QP does not hold): the QP fails, from the NAPI
 * context, where it may take its peer's lock. Any context.
 */
static void mr_qp_break(struct mr_ibqp *qp)
{
	enum ib_qp_state st = READ_ONCE(qp->state);

	if (st == IB_QPS_RESET || st == IB_QPS_ERR ||
	    test_and_set_bit(MR_QP_BROKEN, &qp->retire))
		return;
	mr_napi_kick_qp(qp);
}

void mr_qp_cq_push(struct mr_ibqp *qp, struct mr_cq *cq,
		   const struct ib_wc *wc, bool solicited)
{
	if (mr_cq_push(cq, wc, solicited))
		mr_qp_break(qp);
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
static void mr_qp_recv_complete(struct mr_ibqp *qp, const struct mr_cqe *cqe)
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

void mr_qp_eng_complete(struct mr_ibqp *qp, const struct mr_cqe *cqe)
{
	struct mr_swqe *wqe;

	if (cqe->opcode == MR_WC_RECV || cqe->opcode == MR_WC_RECV_WRITE_IMM) {
		mr_qp_recv_complete(qp, cqe);
		return;
	}
	wqe = mr_sring_slot(&qp->sq, (u32)cqe->cookie);
	wqe->status = mr_wc_status(cqe->status);
	WRITE_ONCE(wqe->done, true);
	mr_qp_sq_retire(qp);
	/* The engine's window may have room for more now. */
	if (READ_ONCE(qp->sq.eng) != READ_ONCE(qp->sq.tail))
		mr_napi_kick_qp(qp);
}

void mr_qp_eng_error(struct mr_ibqp *qp, int status)
{
	WRITE_ONCE(qp->state, IB_QPS_ERR);
	mr_qp_flush_sq(qp);
	mr_qp_flush_rq(qp);
	/*
	 * These affiliated errors are the responder's, which refused a
	 * request (eng.fatal). A requester NAKed with the same status learns
	 * of it from its completion, and gets no event.
	 */
	if (!qp->eng.fatal)
		return;
	if (status == MR_WC_REM_ACCESS_ERR)
		mr_qp_event(qp, IB_EVENT_QP_ACCESS_ERR);
	else if (status == MR_WC_REM_INV_REQ_ERR)
		mr_qp_event(qp, IB_EVENT_QP_REQ_ERR);
}

/* ------------------------------------------------------------- NAPI side */

static u8 mr_wr_opcode(const struct mr_swqe *wqe)
{
	switch (wqe->opcode) {
	case IB_WR_SEND:
		return MR_WR_SEND;
	case IB_WR_SEND_WITH_IMM:
		return MR_WR_SEND_IMM;
	case IB_WR_SEND_WITH_INV:
		return MR_WR_SEND_INV;
	case IB_WR_RDMA_WRITE:
		return MR_WR_WRITE;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return MR_WR_WRITE_IMM;
	case IB_WR_RDMA_READ:
		return MR_WR_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return MR_WR_CMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return MR_WR_FETCH_ADD;
	default:
		return MR_WR_LOCAL;	/* not for the engine, see mr_qp_feed() */
	}
}

/*
 * A local work request (fast registration, local invalidate) has no wire
 * effect and is not the engine's: it would take a message number the
 * responder never sees. A registration takes effect in posting order, here;
 * an invalidation when it is retired (mr_qp_sq_retire()). Both complete in
 * order with the other work requests.
 */
static void mr_qp_local(struct mr_ibqp *qp, struct mr_swqe *wqe)
{
	wqe->status = IB_WC_SUCCESS;
	if (wqe->refused) {
		wqe->status = IB_WC_LOC_QP_OP_ERR;
	} else if (wqe->opcode == IB_WR_REG_MR) {
		struct ib_reg_wr reg = {
			.mr = wqe->reg_mr,
			.key = wqe->reg_key,
			.access = wqe->reg_access,
		};

		if (mr_mem_fast_reg(qp->dev, qp->ibqp.pd, &reg))
			wqe->status = IB_WC_MW_BIND_ERR;
		else
			mr_counter_add(qp->dev->counters, MR_CNT_FAST_REG, 1);
	}
	WRITE_ONCE(wqe->done, true);
}

/* Hand queued WQEs to the engine; peer->lock held. */
static void mr_qp_feed(struct mr_ibqp *qp, u64 now)
{
	bool local = false;

	for (;;) {
		struct mr_swqe *wqe;
		struct mr_wr wr = {};
		unsigned long flags;
		u32 idx;

		if (!mr_qp_can_post(&qp->eng))
			break;
		spin_lock_irqsave(&qp->sq_lock, flags);
		idx = qp->sq.eng;
		if (idx == qp->sq.tail || qp->sq_draining) {
			spin_unlock_irqrestore(&qp->sq_lock, flags);
			break;
		}
		spin_unlock_irqrestore(&qp->sq_lock, flags);

		wqe = mr_sring_slot(&qp->sq, idx);
		if (wqe->opcode == IB_WR_REG_MR ||
		    wqe->opcode == IB_WR_LOCAL_INV || wqe->refused) {
			mr_qp_local(qp, wqe);
			spin_lock_irqsave(&qp->sq_lock, flags);
			qp->sq.eng++;
			spin_unlock_irqrestore(&qp->sq_lock, flags);
			local = true;
			continue;
		}
		wr.cookie = idx;
		wr.opcode = mr_wr_opcode(wqe);
		wr.len = wqe->length;
		wr.raddr = wqe->remote_addr;
		wr.rkey = wqe->rkey;
		wr.imm = wqe->ex;
		if (wqe->send_flags & IB_SEND_FENCE)
			wr.flags |= MR_WRF_FENCE;
		if (wqe->send_flags & IB_SEND_SOLICITED)
			wr.flags |= MR_WRF_SOLICITED;
		if (wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP) {
			wr.swap_add = wqe->swap;
			wr.compare = wqe->compare_add;
		} else {
			wr.swap_add = wqe->compare_add;
		}
		if (mr_qp_post(&qp->eng, &wr, now))
			break;
		spin_lock_irqsave(&qp->sq_lock, flags);
		qp->sq.eng++;
		spin_unlock_irqrestore(&qp->sq_lock, flags);
	}
	if (local)
		mr_qp_sq_retire(qp);
}

/*
 * Send the UD work request in @wqe; returns its completion status. The
 * slot stays the service's until it advances sq.eng, unless a flush or a
 * reset takes the ring meanwhile: then the slot may be posted again, so
 * every field is read once and nothing is written to it here.
 */
static u8 mr_qp_ud_send(struct mr_ibqp *qp, const struct mr_swqe *wqe)
{
	struct mr_dev *dev = qp->dev;
	u32 len = READ_ONCE(wqe->length);
	struct mr_addr addr = wqe->addr;
	u8 tclass = READ_ONCE(wqe->tclass);
	struct mr_hdr h = {};
	struct sk_buff *skb;
	u8 buf[MR_HLEN_MAX];
	int hlen;
	u16 sport;

	if (READ_ONCE(wqe->refused))
		return IB_WC_LOC_QP_OP_ERR;
	h.opcode = MR_OP_UD_SEND;
	h.epoch = dev->ud_epoch;
	h.tsval = (u32)ktime_get_ns();
	h.dst_qpn = READ_ONCE(wqe->remote_qpn);
	h.src_qpn = qp->ibqp.qp_num;
	h.qkey = READ_ONCE(wqe->remote_qkey);
	h.plen = len;
	if (READ_ONCE(wqe->opcode) == IB_WR_SEND_WITH_IMM) {
		h.flags |= MR_F_IMM;
		h.imm = READ_ONCE(wqe->ex);
	}
	if (READ_ONCE(wqe->send_flags) & IB_SEND_SOLICITED)
		h.flags |= MR_F_SOLICIT;
	hlen = mr_wire_encode(buf, sizeof(buf), &h);
	if (hlen < 0)
		return IB_WC_LOC_QP_OP_ERR;
	skb = mr_xmit_alloc(hlen + len, GFP_ATOMIC);
	if (!skb)
		return IB_WC_LOC_QP_OP_ERR;
	skb_put_data(skb, buf, hlen);
	if (READ_ONCE(wqe->inlined)) {
		/* Posting checked the length against the inline room. */
		skb_put_data(skb, wqe->data, min(len, qp->max_inline));
	} else if (mr_sges_read(dev, qp->ibqp.pd, wqe->sge,
				min_t(u32, READ_ONCE(wqe->num_sge),
				      qp->max_send_sge),
				0, skb_put(skb, len), len)) {
		kfree_skb(skb);
		return IB_WC_LOC_PROT_ERR;
	}
	/* A fixed source port per QP pair: UD keeps its order on one route. */
	sport = dev->conn_cfg.sport_min +
		(u16)(jhash_2words(h.src_qpn, h.dst_qpn, 0) %
		      (dev->conn_cfg.sport_max - dev->conn_cfg.sport_min + 1));
	mr_xmit(dev, skb, &addr, sport, tclass, NULL, NULL);
	return IB_WC_SUCCESS;
}

static void mr_qp_service_ud(struct mr_ibqp *qp)
{
	int n;

	for (n = 0; n < MR_UD_BUDGET; n++) {
		struct mr_swqe *wqe;
		unsigned long flags;
		u32 gen, idx;
		u8 status;

		spin_lock_irqsave(&qp->sq_lock, flags);
		if (qp->sq.eng == qp->sq.tail || qp->sq_draining) {
			spin_unlock_irqrestore(&qp->sq_lock, flags);
			break;
		}
		idx = qp->sq.eng;
		gen = qp->sq_gen;
		wqe = mr_sring_slot(&qp->sq, idx);
		spin_unlock_irqrestore(&qp->sq_lock, flags);

		status = mr_qp_ud_send(qp, wqe);
		spin_lock_irqsave(&qp->sq_lock, flags);
		/* Unless a reset or a flush took the ring meanwhile. */
		if (qp->sq_gen == gen && qp->sq.eng == idx) {
			wqe->status = status;
			wqe->done = true;
			qp->sq.eng = idx + 1;
		}
		spin_unlock_irqrestore(&qp->sq_lock, flags);
	}
	mr_qp_sq_retire(qp);
	if (n == MR_UD_BUDGET)
		mr_napi_kick_qp(qp);
}

/*
 * A completion of the QP was lost or refused (mr_qp_break()): it fails,
 * as if the application had moved it to the error state.
 */
static void mr_qp_broken(struct mr_ibqp *qp)
{
	enum ib_qp_state st = READ_ONCE(qp->state);
	struct mr_peer *peer;

	clear_bit(MR_QP_BROKEN, &qp->retire);
	if (st == IB_QPS_RESET || st == IB_QPS_ERR)
		return;
	WRITE_ONCE(qp->state, IB_QPS_ERR);
	peer = READ_ONCE(qp->peer);
	if (peer) {
		spin_lock_bh(&peer->lock);
		if (qp->peer == peer)
			mr_qp_set_error(&qp->eng, ktime_get_ns());
		spin_unlock_bh(&peer->lock);
	}
	mr_qp_flush_sq(qp);
	mr_qp_flush_rq(qp);
}

void mr_qp_service(struct mr_ibqp *qp)
{
	struct mr_peer *peer;
	int sent;

	if (test_bit(MR_QP_BROKEN, &qp->retire))
		mr_qp_broken(qp);
	mr_qp_sq_pull(qp);
	if (READ_ONCE(qp->state) == IB_QPS_ERR) {
		mr_qp_flush_sq(qp);
		return;
	}
	if (!mr_qp_is_rc(qp)) {
		if (READ_ONCE(qp->state) == IB_QPS_RTS)
			mr_qp_service_ud(qp);
		return;
	}
	peer = READ_ONCE(qp->peer);
	if (!peer)
		return;
	spin_lock_bh(&peer->lock);
	/* Re-check under the lock: reset/destroy detach under it too. */
	if (qp->peer == peer && qp->eng.state == MR_QP_RTS) {
		mr_qp_feed(qp, ktime_get_ns());
		sent = mr_peer_tx(peer, MR_PEER_TX_BUDGET);
		mr_peer_settle(peer, sent, MR_PEER_TX_BUDGET);
	}
	spin_unlock_bh(&peer->lock);
}

/* A UD receive completion's sl: how the packet came (see below). */
#define MR_WC_SL_IPV6		0x1
#define MR_WC_SL_IPV4		0x2
#define MR_WC_SL_UDP		0x8

/* UD and GSI receive. Called from NAPI with a reference on @qp. */
void mr_qp_ud_recv(struct mr_ibqp *qp, const struct mr_hdr *h,
		   struct sk_buff *skb, int hlen)
{
	struct mr_dev *dev = qp->dev;
	u8 grh[MR_GRH_LEN] = {};
	struct {
		struct mr_rwqe w;
		struct ib_sge sge[METAROCE_MAX_SGE];
	} rw;
	struct mr_rwqe *w = &rw.w;
	struct ib_wc wc = {};
	unsigned long flags;
	bool ipv4 = skb->protocol == htons(ETH_P_IP);
	/* An SRQ's WQE is copied into rw whole (mr_srq_take()). */
	static_assert(ARRAY_SIZE(rw.sge) >= METAROCE_MAX_SRQ_SGE);

	if (READ_ONCE(qp->state) < IB_QPS_RTR ||
	    READ_ONCE(qp->state) > IB_QPS_SQD || h->qkey != qp->attr.qkey) {
		mr_counter_add(dev->counters, MR_CNT_RX_DROP_NO_QP, 1);
		return;
	}
	if (qp->ibqp.srq) {
		if (mr_srq_take(to_mr_srq(qp->ibqp.srq), w)) {
			mr_counter_add(dev->counters, MR_CNT_RX_DROP_NO_RECV, 1);
			return;
		}
	} else {
		struct mr_rwqe *slot;

		spin_lock_irqsave(&qp->rq_lock, flags);
		if (!mr_rring_count(&qp->rq) && !mr_qp_rq_pull(qp)) {
			spin_unlock_irqrestore(&qp->rq_lock, flags);
			mr_counter_add(dev->counters, MR_CNT_RX_DROP_NO_RECV, 1);
			return;
		}
		slot = mr_rring_slot(&qp->rq, qp->rq.head);
		memcpy(&rw, slot, sizeof(*slot) +
		       slot->num_sge * sizeof(struct ib_sge));
		mr_qp_rq_retire(qp);
		spin_unlock_irqrestore(&qp->rq_lock, flags);
	}

	/* RoCE convention: the first 40 bytes carry the IP header (GRH). */
	if (ipv4)
		memcpy(grh + 20, ip_hdr(skb), sizeof(struct iphdr));
	else
		memcpy(grh, ipv6_hdr(skb), sizeof(struct ipv6hdr));

	wc.wr_id = w->wr_id;
	wc.opcode = IB_WC_RECV;
	wc.qp = &qp->ibqp;
	wc.src_qp = h->src_qpn;
	wc.port_num = 1;
	wc.byte_len = MR_GRH_LEN + h->plen;
	wc.wc_flags = IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE;
	wc.network_hdr_type = ipv4 ? RDMA_NETWORK_IPV4 : RDMA_NETWORK_IPV6;
	/*
	 * RoCE has no service level; the uverbs completion has no network
	 * header type. Report the header type in sl as RoCE NICs do (bit 3:
	 * UDP-encapsulated, bits 2:0: 1 IPv6, 2 IPv4): UCX up to 1.16 reads
	 * it there to find the destination address in the 40 bytes above.
	 */
	wc.sl = MR_WC_SL_UDP | (ipv4 ? MR_WC_SL_IPV4 : MR_WC_SL_IPV6);
	if (h->flags & MR_F_IMM) {
		wc.ex.imm_data = cpu_to_be32(h->imm);
		wc.wc_flags |= IB_WC_WITH_IMM;
	}
	if (skb_mac_header_was_set(skb) &&
	    skb_mac_header_len(skb) >= ETH_HLEN) {
		ether_addr_copy(wc.smac, eth_hdr(skb)->h_source);
		wc.wc_flags |= IB_WC_WITH_SMAC;
	}
	if (wc.byte_len > w->length)
		wc.status = IB_WC_LOC_LEN_ERR;
	else if (mr_sges_write(dev, qp->ibqp.pd, w->sge, w->num_sge, 0, grh,
			       NULL, 0, MR_GRH_LEN) ||
		 mr_sges_write(dev, qp->ibqp.pd, w->sge, w->num_sge,
			       MR_GRH_LEN, NULL, skb, hlen, h->plen))
		wc.status = IB_WC_LOC_PROT_ERR;
	mr_qp_cq_push(qp, to_mr_cq(qp->ibqp.recv_cq), &wc,
		      !!(h->flags & MR_F_SOLICIT));
}

/* ------------------------------------------------------------ post verbs */

/* Whether @wr's payload is to be copied into the work request. */
static bool mr_wr_inline(const struct ib_send_wr *wr)
{
	return (wr->send_flags & IB_SEND_INLINE) &&
	       (wr->opcode == IB_WR_SEND || wr->opcode == IB_WR_SEND_WITH_IMM ||
		wr->opcode == IB_WR_SEND_WITH_INV ||
		wr->opcode == IB_WR_RDMA_WRITE ||
		wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM);
}

/*
 * Gather an inline payload into @buf, before the send queue is locked: a
 * user buffer may fault. Returns its length or a negative errno.
 */
static int mr_gather_inline(struct mr_ibqp *qp, const struct ib_send_wr *wr,
			    u8 *buf)
{
	u32 i, off = 0;

	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *sge = &wr->sg_list[i];

		if (sge->length > qp->max_inline - off)
			return -EINVAL;
		if (qp->ibqp.uobject) {
			if (copy_from_user(buf + off,
					   u64_to_user_ptr(sge->addr),
					   sge->length))
				return -EFAULT;
		} else {
			memcpy(buf + off, (void *)(uintptr_t)sge->addr,
			       sge->length);
		}
		off += sge->length;
	}
	return off;
}

static bool mr_opcode_ok(const struct mr_ibqp *qp, enum ib_wr_opcode op)
{
	if (!mr_qp_is_rc(qp))
		return op == IB_WR_SEND || op == IB_WR_SEND_WITH_IMM;
	switch (op) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_SEND_WITH_INV:
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
	case IB_WR_LOCAL_INV:
	case IB_WR_REG_MR:
		return true;
	default:
		return false;
	}
}

/* Validate @wr and copy it into @wqe; @inl holds a gathered inline payload. */
static int mr_build_swqe(struct mr_ibqp *qp, struct mr_swqe *wqe,
			 const struct ib_send_wr *wr, const u8 *inl, int inl_len)
{
	bool atomic = wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
		      wr->opcode == IB_WR_ATOMIC_FETCH_AND_ADD;
	u64 len = 0;
	u32 i;

	if (!mr_opcode_ok(qp, wr->opcode))
		return -EINVAL;
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->send_flags = wr->send_flags;

	switch (wr->opcode) {
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		wqe->ex = be32_to_cpu(wr->ex.imm_data);
		break;
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		wqe->ex = wr->ex.invalidate_rkey;
		break;
	default:
		break;
	}
	if (wr->opcode == IB_WR_REG_MR) {
		const struct ib_reg_wr *reg = reg_wr(wr);

		wqe->reg_mr = reg->mr;
		wqe->reg_key = reg->key;
		wqe->reg_access = reg->access;
		return 0;
	}
	if (wr->opcode == IB_WR_LOCAL_INV)
		return 0;

	if (inl) {
		memcpy(wqe->data, inl, inl_len);
		wqe->inlined = true;
		len = inl_len;
	} else {
		if (wr->num_sge > qp->max_send_sge)
			return -EINVAL;
		for (i = 0; i < wr->num_sge; i++) {
			wqe->sge[i] = wr->sg_list[i];
			len += wr->sg_list[i].length;
		}
		if (len > METAROCE_MAX_MSG_SIZE)
			return -EINVAL;
		wqe->num_sge = wr->num_sge;
	}
	wqe->length = len;

	if (atomic) {
		const struct ib_atomic_wr *a = atomic_wr(wr);

		if (len != 8 || (a->remote_addr & 7))
			return -EINVAL;
		wqe->remote_addr = a->remote_addr;
		wqe->rkey = a->rkey;
		wqe->compare_add = a->compare_add;
		wqe->swap = a->swap;
	} else if (wr->opcode == IB_WR_RDMA_WRITE ||
		   wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM ||
		   wr->opcode == IB_WR_RDMA_READ) {
		wqe->remote_addr = rdma_wr(wr)->remote_addr;
		wqe->rkey = rdma_wr(wr)->rkey;
	}
	if (!mr_qp_is_rc(qp)) {
		const struct ib_ud_wr *ud = ud_wr(wr);
		struct mr_ah *ah = to_mr_ah(ud->ah);

		if (len > ib_mtu_enum_to_int(qp->dev->port.active_mtu))
			return -EINVAL;
		wqe->addr = ah->addr;
		wqe->tclass = ah->tclass;
		wqe->remote_qpn = ud->remote_qpn;
		/* A qkey with the high bit set means "use the QP's qkey". */
		wqe->remote_qkey = ud->remote_qkey & 0x80000000 ?
				   qp->attr.qkey : ud->remote_qkey;
	}
	return 0;
}

/* ------------------------------------------------------------ send rings */

static const u8 *mr_sq_ring_slot(struct mr_ibqp *qp, u32 idx)
{
	return (const u8 *)qp->sq_ring + METAROCE_SQ_RING_ENTRIES +
	       (size_t)(idx & (qp->sq.size - 1)) * qp->sq_ring_stride;
}

/* What POST_SEND takes from a process for an RC (or UD) QP. */
static bool mr_sq_ring_opcode_ok(struct mr_ibqp *qp, u32 opcode)
{
	if (!mr_qp_is_rc(qp))
		return opcode == IB_UVERBS_WR_SEND ||
		       opcode == IB_UVERBS_WR_SEND_WITH_IMM;
	switch (opcode) {
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
	case IB_UVERBS_WR_SEND:
	case IB_UVERBS_WR_SEND_WITH_IMM:
	case IB_UVERBS_WR_SEND_WITH_INV:
	case IB_UVERBS_WR_RDMA_READ:
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
		return true;
	default:
		return false;
	}
}

/* libibverbs' IBV_SEND_* are the kernel's IB_SEND_* */
#define MR_SQ_RING_SEND_FLAGS	(IB_SEND_FENCE | IB_SEND_SIGNALED | \
				 IB_SEND_SOLICITED | IB_SEND_INLINE)

/*
 * Take a private copy of the work request the process wrote at @usw: each
 * field is read exactly once (READ_ONCE), so that what is checked is what
 * is used, whatever the process writes meanwhile. False if a reserved word
 * is not zero (those of a UD work request's address too): a newer provider
 * may give them a meaning, which this kernel would not honour.
 */
static bool mr_sq_ring_read(const struct mr_ibqp *qp,
			    const struct metaroce_swqe *usw,
			    struct metaroce_swqe *uw)
{
	uw->wr_id = READ_ONCE(usw->wr_id);
	uw->opcode = READ_ONCE(usw->opcode);
	uw->send_flags = READ_ONCE(usw->send_flags);
	uw->num_sge = READ_ONCE(usw->num_sge);
	uw->inline_len = READ_ONCE(usw->inline_len);
	uw->rkey = READ_ONCE(usw->rkey);
	uw->imm = READ_ONCE(usw->imm);
	uw->reserved[0] = READ_ONCE(usw->reserved[0]);
	uw->reserved[1] = READ_ONCE(usw->reserved[1]);
	if (!mr_qp_is_rc(qp)) {
		uw->ud.ahn = READ_ONCE(usw->ud.ahn);
		uw->ud.remote_qpn = READ_ONCE(usw->ud.remote_qpn);
		uw->ud.remote_qkey = READ_ONCE(usw->ud.remote_qkey);
		uw->ud.reserved[0] = READ_ONCE(usw->ud.reserved[0]);
		uw->ud.reserved[1] = READ_ONCE(usw->ud.reserved[1]);
		uw->ud.reserved[2] = READ_ONCE(usw->ud.reserved[2]);
		return !uw->reserved[0] && !uw->reserved[1] &&
		       !uw->ud.reserved[0] && !uw->ud.reserved[1] &&
		       !uw->ud.reserved[2];
	}
	uw->remote_addr = READ_ONCE(usw->remote_addr);
	uw->compare_add = READ_ONCE(usw->compare_add);
	uw->swap = READ_ONCE(usw->swap);
	return !uw->reserved[0] && !uw->reserved[1];
}

/*
 * Copy the work request in ring slot @idx into send queue slot @idx, once,
 * and check it as POST_SEND would (sq_lock held, any context). One that
 * fails becomes a refused WQE, which completes with IB_WC_LOC_QP_OP_ERR.
 */
static void mr_sq_ring_take(struct mr_ibqp *qp, u32 idx)
{
	struct mr_swqe *wqe = mr_sring_slot(&qp->sq, idx);
	const u8 *slot = mr_sq_ring_slot(qp, idx);
	struct metaroce_swqe uw;
	union {
		struct ib_rdma_wr rdma;
		struct ib_atomic_wr atomic;
		struct ib_ud_wr ud;
	} u = {};
	struct ib_send_wr *wr = &u.rdma.wr;
	struct mr_ah ah;
	union {
		struct ib_sge sge[METAROCE_MAX_SGE];
		u8 data[MR_MAX_INLINE];
	} p;
	bool inl;
	u32 i;

	if (!mr_sq_ring_read(qp, (const struct metaroce_swqe *)slot, &uw))
		goto refuse;
	slot += sizeof(uw);
	if (!mr_sq_ring_opcode_ok(qp, uw.opcode) ||
	    (uw.send_flags & ~MR_SQ_RING_SEND_FLAGS))
		goto refuse;
	wr->wr_id = uw.wr_id;
	wr->opcode = uw.opcode;
	wr->send_flags = uw.send_flags;
	if (uw.opcode == IB_UVERBS_WR_SEND_WITH_INV)
		wr->ex.invalidate_rkey = uw.imm;
	else
		wr->ex.imm_data = (__force __be32)uw.imm;
	if (!mr_qp_is_rc(qp)) {
		/* The AH by number: the process's, of the QP's PD. */
		if (mr_ah_lookup(qp->dev, uw.ud.ahn, qp->ibqp.pd, &ah.addr,
				 &ah.tclass))
			goto refuse;
		u.ud.ah = &ah.ibah;
		u.ud.remote_qpn = uw.ud.remote_qpn;
		u.ud.remote_qkey = uw.ud.remote_qkey;
	} else if (uw.opcode == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP ||
		   uw.opcode == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD) {
		u.atomic.remote_addr = uw.remote_addr;
		u.atomic.rkey = uw.rkey;
		u.atomic.compare_add = uw.compare_add;
		u.atomic.swap = uw.swap;
	} else {
		u.rdma.remote_addr = uw.remote_addr;
		u.rdma.rkey = uw.rkey;
	}

	inl = mr_wr_inline(wr);
	if (inl) {
		if (uw.inline_len > qp->max_inline)
			goto refuse;
		memcpy(p.data, slot, uw.inline_len);
	} else {
		if (uw.num_sge > qp->max_send_sge)
			goto refuse;
		for (i = 0; i < uw.num_sge; i++) {
			const struct metaroce_sge *sge =
				(const struct metaroce_sge *)slot + i;

			p.sge[i].addr = READ_ONCE(sge->addr);
			p.sge[i].length = READ_ONCE(sge->length);
			p.sge[i].lkey = READ_ONCE(sge->lkey);
		}
		wr->sg_list = p.sge;
		wr->num_sge = uw.num_sge;
	}
	if (!mr_build_swqe(qp, wqe, wr, inl ? p.data : NULL, uw.inline_len))
		return;
refuse:
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = uw.wr_id;
	wqe->opcode = IB_WR_SEND;
	wqe->refused = true;
}

/*
 * mr_qp_sq_pull() - take what the process wrote to the QP's send ring
 * @qp: the QP (with or without a ring)
 *
 * Copies the work requests published since the last call into the send
 * queue. While work requests are outstanding, their completions bring the
 * kernel back. When the QP has nothing outstanding and the ring nothing
 * new, nothing will: for MR_SQ_IDLE_NS after it last
 * took work requests, a timer looks at the ring every MR_SQ_POLL_NS (so a
 * process that streams faster than one request at a time reaches the
 * kernel without a system call, even when each completes before the next
 * is posted); after that, it sets METAROCE_SQ_NEED_WAKEUP and reads the
 * producer index once more, so that a work request the process published
 * without seeing the flag is taken now. Any context.
 *
 * A producer index that cannot be (more than the ring's size ahead of the
 * work requests retired, or behind those taken) is ignored until it can.
 *
 * Return: true if work requests were taken: the caller kicks the QP.
 */
static bool mr_qp_sq_pull(struct mr_ibqp *qp)
{
	struct metaroce_sq_ring *ring = qp->sq_ring;
	bool took = false, linger = false;
	unsigned long flags;
	u64 now;
	u32 prod;

	if (!ring)
		return false;
	now = ktime_get_ns();
	spin_lock_irqsave(&qp->sq_lock, flags);
	for (;;) {
		/* The slots are written once the index shows them. */
		prod = smp_load_acquire(&ring->producer);
		if (prod - qp->sq.head > qp->sq.size ||
		    qp->sq.tail - qp->sq.head > prod - qp->sq.head)
			break;
		for (; qp->sq.tail != prod; qp->sq.tail++) {
			mr_sq_ring_take(qp, qp->sq.tail);
			took = true;
		}
		if (took)
			qp->sq_active = now;
		/*
		 * Recently active and nothing outstanding: the timer looks
		 * again soon. With work requests outstanding, their
		 * completions bring the kernel back (mr_qp_sq_retire()): a
		 * timer per streaming QP would fire 50,000 times a second
		 * for each of them, thousands of QPs at once.
		 */
		if (now - qp->sq_active < MR_SQ_IDLE_NS && qp->sq.head == qp->sq.tail)
			linger = true;
		if (took || linger || qp->sq.head != qp->sq.tail) {
			if (READ_ONCE(ring->flags))
				WRITE_ONCE(ring->flags, 0);
			break;
		}
		WRITE_ONCE(ring->flags, METAROCE_SQ_NEED_WAKEUP);
		/*
		 * The flag before the index, as the provider publishes its
		 * index before it reads the flag: one of the two sees the
		 * other's write.
		 */
		smp_mb();
		if (READ_ONCE(ring->producer) == qp->sq.tail)
			break;
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	/* Also from the timer's own callback, which then does not restart. */
	if (linger && !hrtimer_is_queued(&qp->sq_linger))
		hrtimer_start(&qp->sq_linger, ns_to_ktime(MR_SQ_POLL_NS),
			      HRTIMER_MODE_REL_SOFT);
	return took;
}

/*
 * The doorbell's work, on the module's unbound high-priority workqueue:
 * the system call returns at once and the work requests go out from
 * another CPU, as they would from a device. Taken inline, each doorbell
 * carried its work request to completion before the process could post
 * the next, which only pays when the process waits for an answer anyway
 * (mr_post_send() does it then). High priority because the worker must
 * usually preempt a process that busy-polls its CQ: a worker of normal
 * priority waited for the end of that process's time slice (see
 * Documentation/uapi.rst).
 */
static void mr_qp_sq_doorbell(struct work_struct *work)
{
	struct mr_ibqp *qp = container_of(work, struct mr_ibqp, sq_doorbell);

	local_bh_disable();
	if (mr_qp_sq_pull(qp))
		mr_napi_kick_qp(qp);
	local_bh_enable();
}

static enum hrtimer_restart mr_qp_sq_linger(struct hrtimer *timer)
{
	struct mr_ibqp *qp = container_of(timer, struct mr_ibqp, sq_linger);

	if (mr_qp_sq_pull(qp))
		mr_napi_kick_qp(qp);
	return HRTIMER_NORESTART;
}

/*
 * Create the rings the process asked for: a send ring (RC and UD) and a
 * receive ring (RC and UD, without an SRQ).
 */
static int mr_qp_rings_create(struct mr_ibqp *qp, struct ib_qp_init_attr *init,
			      struct ib_udata *udata)
{
	struct metaroce_create_qp_resp resp = {};
	u32 comp_mask, payload;
	size_t sq_bytes, rq_at = 0;
	void *buf = NULL;
	bool rq_ring;
	int err;

	err = mr_udata_request(udata, METAROCE_QP_SQ_RING | METAROCE_QP_RQ_RING |
			       METAROCE_QP_ONE_MAP, &comp_mask);
	if (err)
		return err;
	if (!udata)
		return 0;
	if (((comp_mask & METAROCE_QP_SQ_RING) &&
	     udata->outlen < offsetofend(typeof(resp), sq_mmap_size)) ||
	    ((comp_mask & METAROCE_QP_RQ_RING) && udata->outlen < sizeof(resp)))
		return -EINVAL;
	rq_ring = (comp_mask & METAROCE_QP_RQ_RING) && !init->srq;
	/* Not the GSI QP's (kernel only anyway). */
	if ((comp_mask & METAROCE_QP_SQ_RING) &&
	    (init->qp_type == IB_QPT_RC || init->qp_type == IB_QPT_UD)) {
		payload = max(qp->max_send_sge *
			      (u32)sizeof(struct metaroce_sge), qp->max_inline);
		qp->sq_ring_stride = ALIGN(sizeof(struct metaroce_swqe) +
					   payload, 64);
		resp.comp_mask |= METAROCE_QP_SQ_RING;
		resp.sq_slots = qp->sq.size;
		resp.sq_stride = qp->sq_ring_stride;
		sq_bytes = METAROCE_SQ_RING_ENTRIES +
			   (size_t)qp->sq.size * qp->sq_ring_stride;
		/* The receive ring after it, in the same pages. */
		if (rq_ring && (comp_mask & METAROCE_QP_ONE_MAP)) {
			rq_at = ALIGN(sq_bytes, 64);
			sq_bytes = rq_at + mr_urq_bytes(qp->rq.size,
							qp->rq.max_sge);
		}
		resp.sq_mmap_size = PAGE_ALIGN(sq_bytes);
		buf = mr_umap_alloc(rdma_udata_to_uverbs_attr_bundle(udata)->context,
				    resp.sq_mmap_size, &qp->sq_umap,
				    &resp.sq_mmap_offset);
		if (IS_ERR(buf))
			return PTR_ERR(buf);
		qp->sq_ring = buf;
		qp->sq_ring->flags = METAROCE_SQ_NEED_WAKEUP;
		hrtimer_setup(&qp->sq_linger, mr_qp_sq_linger, CLOCK_MONOTONIC,
			      HRTIMER_MODE_REL_SOFT);
		INIT_WORK(&qp->sq_doorbell, mr_qp_sq_doorbell);
	}
	if (rq_at) {
		mr_urq_place(&qp->rq_user, buf + rq_at, qp->rq.size,
			     qp->rq.max_sge);
		resp.comp_mask |= METAROCE_QP_RQ_RING | METAROCE_QP_ONE_MAP;
		resp.rq_ring_offset = rq_at;
		resp.rq_stride = qp->rq_user.stride;
		resp.rq_slots = qp->rq.size;
		resp.rq_mmap_offset = resp.sq_mmap_offset;
		resp.rq_mmap_size = resp.sq_mmap_size;
	} else if (rq_ring) {
		err = mr_urq_create(&qp->rq_user, udata, qp->rq.size,
				    qp->rq.max_sge, &resp.rq_stride,
				    &resp.rq_mmap_offset, &resp.rq_mmap_size);
		if (err)
			goto err;
		resp.comp_mask |= METAROCE_QP_RQ_RING;
		resp.rq_slots = qp->rq.size;
	}
	err = ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
	if (!err)
		return 0;
	mr_urq_remove(&qp->rq_user);
err:
	mr_umap_remove(qp->sq_umap);
	qp->sq_umap = NULL;
	qp->sq_ring = NULL;
	return err;
}

/* A work request posted to a QP in error completes at once, flushed. */
static void mr_flush_now(struct mr_cq *cq, struct ib_qp *ibqp, u64 wr_id,
			 enum ib_wc_opcode op)
{
	struct ib_wc wc = {
		.wr_id = wr_id,
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = op,
		.qp = ibqp,
	};

	mr_qp_cq_push(to_mr_ibqp(ibqp), cq, &wc, false);
}

int mr_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		 const struct ib_send_wr **bad_wr)
{
	struct mr_ibqp *qp = to_mr_ibqp(ibqp);
	enum ib_qp_state state = READ_ONCE(qp->state);
	unsigned long flags;
	int err = 0;

	/* A QP with a send ring posts there; POST_SEND is its doorbell. */
	if (qp->sq_ring) {
		bool answered;

		if (wr) {
			*bad_wr = wr;
			return -EINVAL;
		}
		/*
		 * Send now, in the caller's system call, for a process that
		 * waits for the outcome: one that asks (a UD sender), or one
		 * whose peer sent this QP data since its last doorbell (a
		 * request/response exchange; see Documentation/uapi.rst).
		 */
		answered = READ_ONCE(qp->sq_answered);
		if (answered)
			WRITE_ONCE(qp->sq_answered, false);
		if (answered ||
		    (READ_ONCE(qp->sq_ring->hint) & METAROCE_SQ_HINT_WAIT)) {
			mr_counter_add(qp->dev->counters, MR_CNT_DB_INLINE, 1);
			local_bh_disable();
			if (mr_qp_sq_pull(qp))
				mr_napi_kick_qp(qp);
			local_bh_enable();
		} else {
			mr_counter_add(qp->dev->counters, MR_CNT_DB_DEFERRED,
				       1);
			queue_work(mr_db_wq, &qp->sq_doorbell);
		}
		return 0;
	}
	if (state == IB_QPS_ERR) {
		for (; wr; wr = wr->next)
			mr_flush_now(to_mr_cq(ibqp->send_cq), ibqp, wr->wr_id,
				     mr_wc_opcode(wr->opcode));
		return 0;
	}
	if (state != IB_QPS_RTS && state != IB_QPS_SQD) {
		*bad_wr = wr;
		return -EINVAL;
	}
	for (; wr; wr = wr->next) {
		u8 inl[MR_MAX_INLINE];
		int inl_len = 0;
		struct mr_swqe *wqe;

		if (mr_wr_inline(wr)) {
			inl_len = mr_gather_inline(qp, wr, inl);
			if (inl_len < 0) {
				err = inl_len;
				break;
			}
		}
		spin_lock_irqsave(&qp->sq_lock, flags);
		if (qp->sq.tail - qp->sq.head >= qp->sq.size) {
			err = -ENOMEM;
		} else {
			wqe = mr_sring_slot(&qp->sq, qp->sq.tail);
			err = mr_build_swqe(qp, wqe, wr,
					    mr_wr_inline(wr) ? inl : NULL,
					    inl_len);
			if (!err)
				qp->sq.tail++;
		}
		spin_unlock_irqrestore(&qp->sq_lock, flags);
		if (err)
			break;
	}
	if (err)
		*bad_wr = wr;
	mr_napi_kick_qp(qp);
	return err;
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

/* ------------------------------------------------------- create/destroy */

int mr_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		 struct ib_udata *udata)
{
	struct mr_dev *dev = to_mr_dev(ibqp->device);
	struct mr_ibqp *qp = to_mr_ibqp(ibqp);
	struct ib_qp_cap *cap = &init->cap;
	struct mr_msg *msgs = NULL;
	struct mr_rmsg *rmsgs = NULL;
	u32 qpn, slots;
	int err;

	if (init->qp_type != IB_QPT_RC && init->qp_type != IB_QPT_UD &&
	    init->qp_type != IB_QPT_GSI)
		return -EOPNOTSUPP;
	if (init->create_flags)
		return -EOPNOTSUPP;
	if (cap->max_send_wr > METAROCE_MAX_QP_WR ||
	    cap->max_send_sge > METAROCE_MAX_SGE ||
	    cap->max_inline_data > MR_MAX_INLINE)
		return -EINVAL;
	if (!init->srq && (cap->max_recv_wr > METAROCE_MAX_QP_WR ||
			   cap->max_recv_sge > METAROCE_MAX_SGE))
		return -EINVAL;

	err = mr_limit_take(dev, MR_LIM_QP);
	if (err)
		return err;
	qp->dev = dev;
	refcount_set(&qp->ref, 1);
	init_completion(&qp->released);
	mutex_init(&qp->state_lock);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	INIT_LIST_HEAD(&qp->work_node);
	qp->state = IB_QPS_RESET;
	qp->last_state = IB_QPS_RESET;
	qp->sq_sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->max_send_sge = max(cap->max_send_sge, 1U);
	qp->max_inline = cap->max_inline_data;

	err = mr_sring_init(&qp->sq, cap->max_send_wr, qp->max_send_sge,
			    qp->max_inline);
	if (err)
		goto err_sq;
	/*
	 * The engine's message slots: a work request holds its send slot
	 * until it is retired, so no more messages than the send queue holds
	 * are ever in flight. Separate allocations keep struct mr_ibqp small;
	 * mr_qp_init() hands them to qp->eng, which owns them from then on.
	 */
	slots = min_t(u32, roundup_pow_of_two(max(qp->sq.size, 1U)), MR_MSG_WND);
	msgs = kcalloc(slots, sizeof(*msgs), GFP_KERNEL_ACCOUNT);
	rmsgs = kcalloc(MR_MSG_WND, sizeof(*rmsgs), GFP_KERNEL_ACCOUNT);
	if (!msgs || !rmsgs) {
		err = -ENOMEM;
		goto err_sq;
	}
	if (init->srq) {
		qp->srq_bound = mr_srq_bound_alloc(to_mr_srq(init->srq));
		if (!qp->srq_bound) {
			err = -ENOMEM;
			goto err_sq;
		}
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	} else {
		/* A QP that only sends may ask for no receive queue. */
		err = mr_rring_init(&qp->rq, max(cap->max_recv_wr, 1U),
				    max(cap->max_recv_sge, 1U));
		if (err)
			goto err_sq;
	}

	err = mr_qp_rings_create(qp, init, udata);
	if (err)
		goto err_rq;

	if (init->qp_type == IB_QPT_GSI) {
		qpn = 1;
		err = xa_insert_bh(&dev->qps, qpn, qp, GFP_KERNEL);
		if (err == -EBUSY)
			err = -EEXIST;
	} else {
		err = xa_alloc_cyclic_bh(&dev->qps, &qpn, qp,
					 XA_LIMIT(2, MR_QPN_MASK),
					 &dev->next_qpn, GFP_KERNEL);
		err = err < 0 ? err : 0;
	}
	if (err)
		goto err_ring;
	ibqp->qp_num = qpn;
	mr_qp_init(&qp->eng, qpn, msgs, slots, rmsgs);

	cap->max_send_wr = qp->sq.size;
	cap->max_send_sge = qp->max_send_sge;
	cap->max_inline_data = qp->max_inline;
	if (!init->srq) {
		cap->max_recv_wr = qp->rq.size;
		cap->max_recv_sge = qp->rq.max_sge;
	}
	qp->attr.cap = *cap;
	qp->attr.port_num = 1;
	qp->attr.sq_draining = 0;
	return 0;

err_ring:
	mr_umap_remove(qp->sq_umap);
	mr_urq_remove(&qp->rq_user);
err_rq:
	if (init->srq)
		kfree(qp->srq_bound);
	else
		mr_rring_free(&qp->rq);
err_sq:
	kfree(rmsgs);
	kfree(msgs);
	kvfree(qp->sq.buf);
	mr_limit_drop(dev, MR_LIM_QP);
	return err;
}

/* Leave the peer (reset or destroy); state_lock held. */
static void mr_qp_unpeer(struct mr_ibqp *qp)
{
	struct mr_peer *peer = qp->peer;

	if (!peer)
		return;
	spin_lock_bh(&peer->lock);
	mr_qp_detach(&qp->eng);
	WRITE_ONCE(qp->peer, NULL);
	spin_unlock_bh(&peer->lock);
	mr_peer_detach(peer);
}

/* Remove the QP's completions from its CQs (RESET, destroy). */
static void mr_qp_clean_cqs(struct mr_ibqp *qp)
{
	struct ib_qp *ibqp = &qp->ibqp;

	mr_cq_clean(to_mr_cq(ibqp->send_cq), ibqp);
	if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
		mr_cq_clean(to_mr_cq(ibqp->recv_cq), ibqp);
}

int mr_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct mr_ibqp *qp = to_mr_ibqp(ibqp);
	struct mr_dev *dev = qp->dev;

	mutex_lock(&qp->state_lock);
	WRITE_ONCE(qp->state, IB_QPS_RESET);
	mr_qp_unpeer(qp);
	mutex_unlock(&qp->state_lock);

	spin_lock_irq(&dev->work_lock);
	list_del_init(&qp->work_node);
	qp->on_work = false;
	spin_unlock_irq(&dev->work_lock);

	xa_erase_bh(&dev->qps, ibqp->qp_num);
	mr_qp_put(qp);
	wait_for_completion(&qp->released);
	/* What it took from its SRQ and did not complete goes back there. */
	if (ibqp->srq)
		mr_srq_give_back(to_mr_srq(ibqp->srq), qp->srq_bound);
	/* Nothing re-arms them now: no post, no NAPI service, no engine. */
	if (qp->sq_ring) {
		cancel_work_sync(&qp->sq_doorbell);
		hrtimer_cancel(&qp->sq_linger);
	}
	mr_qp_clean_cqs(qp);

	/* NAPI may have queued the QP again before it saw the erase. */
	spin_lock_irq(&dev->work_lock);
	list_del_init(&qp->work_node);
	qp->on_work = false;
	spin_unlock_irq(&dev->work_lock);

	if (!ibqp->srq)
		mr_rring_free(&qp->rq);
	kvfree(qp->sq.buf);
	kfree(qp->eng.rq);
	kfree(qp->eng.sq);
	/* Nothing uses the rings any more. */
	mr_umap_remove(qp->sq_umap);
	mr_urq_remove(&qp->rq_user);
	rdma_destroy_ah_attr(&qp->attr.ah_attr);
	mr_limit_drop(dev, MR_LIM_QP);
	return 0;
}

/* ------------------------------------------------------------ modify/query */

static u64 mr_timeout_ns(u8 timeout)
{
	/* IBTA: 4.096 us * 2^timeout; 0 means infinite. */
	return timeout ? 4096ULL << min_t(u8, timeout, 31) : 0;
}

static int mr_check_attrs(struct mr_ibqp *qp, struct ib_qp_attr *attr,
			  int mask)
{
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index >= METAROCE_PKEY_TBL_LEN)
		return -EINVAL;
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~(IB_ACCESS_REMOTE_WRITE |
				       IB_ACCESS_REMOTE_READ |
				       IB_ACCESS_REMOTE_ATOMIC |
				       IB_ACCESS_LOCAL_WRITE)))
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096 ||
	     attr->path_mtu > qp->dev->port.active_mtu))
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > METAROCE_MAX_QP_INIT_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > METAROCE_MAX_QP_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > MR_QPN_MASK)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_CAP) &&
	    (attr->cap.max_send_wr > qp->sq.size ||
	     attr->cap.max_recv_wr > (qp->ibqp.srq ? 0 : qp->rq.size)))
		return -EINVAL;
	return 0;
}

static void mr_store_attrs(struct mr_ibqp *qp, const struct ib_qp_attr *attr,
			   int mask)
{
	struct ib_qp_attr *a = &qp->attr;

	if (mask & IB_QP_PKEY_INDEX)
		a->pkey_index = attr->pkey_index;
	if (mask & IB_QP_ACCESS_FLAGS)
		a->qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_QKEY)
		a->qkey = attr->qkey;
	if (mask & IB_QP_PATH_MTU)
		a->path_mtu = attr->path_mtu;
	if (mask & IB_QP_DEST_QPN)
		a->dest_qp_num = attr->dest_qp_num;
	if (mask & IB_QP_RQ_PSN)
		a->rq_psn = attr->rq_psn & MR_MSN_MASK;
	if (mask & IB_QP_SQ_PSN)
		a->sq_psn = attr->sq_psn & MR_MSN_MASK;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MIN_RNR_TIMER)
		a->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_TIMEOUT)
		a->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		a->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		a->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		a->en_sqd_async_notify = attr->en_sqd_async_notify;
	if (mask & IB_QP_AV)
		rdma_replace_ah_attr(&a->ah_attr, &attr->ah_attr);
}

static void mr_eng_attr(const struct mr_ibqp *qp, struct mr_qp_attr *ea)
{
	const struct ib_qp_attr *a = &qp->attr;

	memset(ea, 0, sizeof(*ea));
	ea->dest_qpn = a->dest_qp_num;
	ea->rq_psn = a->rq_psn;
	ea->sq_psn = a->sq_psn;
	ea->mtu = ib_mtu_enum_to_int(a->path_mtu ? a->path_mtu : IB_MTU_1024);
	ea->timeout_ns = mr_timeout_ns(a->timeout);
	ea->min_rnr_timer = a->min_rnr_timer;
	ea->retry_cnt = a->retry_cnt;
	ea->rnr_retry = a->rnr_retry;
	ea->max_rd_atomic = a->max_rd_atomic;
	ea->max_dest_rd_atomic = a->max_dest_rd_atomic;
}

static int mr_qp_to_rtr(struct mr_ibqp *qp)
{
	struct mr_qp_attr ea;
	struct mr_peer *peer;
	int err = 0;

	if (!mr_qp_is_rc(qp))
		return 0;
	peer = mr_peer_attach(qp->dev, &qp->addr);
	if (!peer)
		return -ENOMEM;
	mr_eng_attr(qp, &ea);
	spin_lock_bh(&peer->lock);
	if (mr_qp_connect(&qp->eng, &peer->conn, &ea, ktime_get_ns()))
		err = -EINVAL;
	else
		WRITE_ONCE(qp->peer, peer);
	spin_unlock_bh(&peer->lock);
	if (err)
		mr_peer_detach(peer);
	return err;
}

static int mr_qp_to_rts(struct mr_ibqp *qp)
{
	struct mr_peer *peer = qp->peer;
	struct mr_qp_attr ea;
	int err = 0;

	if (!mr_qp_is_rc(qp))
		return 0;
	if (!peer)
		return -EINVAL;
	mr_eng_attr(qp, &ea);
	spin_lock_bh(&peer->lock);
	if (qp->eng.state == MR_QP_RTR &&
	    mr_qp_rts(&qp->eng, &ea, ktime_get_ns()))
		err = -EINVAL;
	spin_unlock_bh(&peer->lock);
	return err;
}

static void mr_qp_to_err(struct mr_ibqp *qp)
{
	struct mr_peer *peer = qp->peer;

	WRITE_ONCE(qp->state, IB_QPS_ERR);
	if (peer) {
		spin_lock_bh(&peer->lock);
		mr_qp_set_error(&qp->eng, ktime_get_ns());
		spin_unlock_bh(&peer->lock);
	}
	mr_qp_flush_sq(qp);
	mr_qp_flush_rq(qp);
}

/*
 * Take the QP out of the data path's sight: NAPI finds a QP by its number
 * (mr_qp_get(), mr_peer_lookup_qp()) and holds a reference while it handles
 * a packet or serves the QP. Once the number names no QP and those
 * references are gone, only the caller reads or writes the QP's engine
 * state, rings and completions, until mr_qp_unhide(). state_lock held.
 */
static void mr_qp_hide(struct mr_ibqp *qp)
{
	/* Stored as a reservation, which mr_qp_unhide() fills in place. */
	xa_store_bh(&qp->dev->qps, qp->ibqp.qp_num, NULL, GFP_KERNEL);
	mr_qp_put(qp);
	wait_for_completion(&qp->released);
}

static void mr_qp_unhide(struct mr_ibqp *qp)
{
	void *old;

	reinit_completion(&qp->released);
	refcount_set(&qp->ref, 1);
	old = xa_store_bh(&qp->dev->qps, qp->ibqp.qp_num, qp, GFP_KERNEL);
	WARN_ON_ONCE(xa_is_err(old));
}

/*
 * A QP on an SRQ that is reset gives the receives it took and did not
 * complete back to the SRQ, and takes fresh room for its next ones (if
 * there is no memory for that, they complete flushed instead).
 */
static void mr_qp_srq_reset(struct mr_ibqp *qp)
{
	struct mr_srq *srq = to_mr_srq(qp->ibqp.srq);
	struct mr_srq_bound *b = qp->srq_bound, *fresh;
	unsigned long flags;

	if (!b->valid)
		return;
	fresh = mr_srq_bound_alloc(srq);
	if (!fresh) {
		mr_qp_flush_srq(qp);
		return;
	}
	spin_lock_irqsave(&qp->rq_lock, flags);
	qp->srq_bound = fresh;
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	mr_srq_give_back(srq, b);
}

static void mr_qp_to_reset(struct mr_ibqp *qp)
{
	unsigned long flags;
	u32 start;

	WRITE_ONCE(qp->state, IB_QPS_RESET);
	mr_qp_unpeer(qp);
	/*
	 * No packet or service round of NAPI may run on the QP while it is
	 * cleared: one that took a receive before the reset could otherwise
	 * complete it after, and the engine state is rewritten without the
	 * lock of a peer.
	 */
	mr_qp_hide(qp);
	mr_qp_clean_cqs(qp);
	/* No engine callback, no NAPI service changes the rings now. */
	if (qp->ibqp.srq)
		mr_qp_srq_reset(qp);
	clear_bit(MR_QP_BROKEN, &qp->retire);
	clear_bit(MR_QP_LAST_WQE, &qp->retire);
	/* Same slots: mr_qp_init() clears them. */
	mr_qp_init(&qp->eng, qp->ibqp.qp_num, qp->eng.sq, qp->eng.sq_slots,
		   qp->eng.rq);
	spin_lock_irqsave(&qp->sq_lock, flags);
	/* A send ring starts again where the process's index stands. */
	start = 0;
	if (qp->sq_ring) {
		start = READ_ONCE(qp->sq_ring->producer);
		qp->sq_active = 0;
		/* Every slot is the process's again (its acquire pairs). */
		smp_store_release(&qp->sq_ring->retired, start);
		WRITE_ONCE(qp->sq_ring->flags, METAROCE_SQ_NEED_WAKEUP);
	}
	qp->sq.head = start;
	qp->sq.eng = start;
	qp->sq.tail = start;
	qp->sq_gen++;
	qp->sq_draining = false;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	spin_lock_irqsave(&qp->rq_lock, flags);
	/* A receive ring, too, starts again at the process's index. */
	start = 0;
	if (qp->rq_user.ring) {
		start = READ_ONCE(qp->rq_user.ring->producer);
		/* Every slot is the process's again (its acquire pairs). */
		smp_store_release(&qp->rq_user.ring->consumer, start);
		WRITE_ONCE(qp->rq_user.ring->flags, 0);
	}
	qp->rq.head = start;
	qp->rq.tail = start;
	qp->rq_ssn = 0;
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	mr_qp_unhide(qp);
}

int mr_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_udata *udata)
{
	struct mr_ibqp *qp = to_mr_ibqp(ibqp);
	enum ib_qp_state cur, new;
	struct mr_addr addr;
	int err;

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;

	mutex_lock(&qp->state_lock);
	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state :
					 READ_ONCE(qp->state);
	new = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	err = -EINVAL;
	if (!ib_modify_qp_is_ok(cur, new, ibqp->qp_type, mask))
		goto out;
	err = mr_check_attrs(qp, attr, mask);
	if (err)
		goto out;
	if ((mask & IB_QP_AV) && mr_qp_is_rc(qp)) {
		err = mr_addr_from_ah_attr(&attr->ah_attr, &addr);
		if (err)
			goto out;
	}
	mr_store_attrs(qp, attr, mask);
	if ((mask & IB_QP_AV) && mr_qp_is_rc(qp)) {
		qp->addr = addr;
		qp->tclass = rdma_ah_read_grh(&attr->ah_attr)->traffic_class;
	}

	if (mask & IB_QP_STATE) {
		switch (new) {
		case IB_QPS_RESET:
			mr_qp_to_reset(qp);
			break;
		case IB_QPS_RTR:
			if (cur == IB_QPS_INIT)
				err = mr_qp_to_rtr(qp);
			break;
		case IB_QPS_RTS:
			if (cur == IB_QPS_RTR)
				err = mr_qp_to_rts(qp);
			qp->sq_draining = false;
			break;
		case IB_QPS_SQD:
			qp->sq_draining = true;
			qp->sqd_notified = false;
			break;
		case IB_QPS_ERR:
			mr_qp_to_err(qp);
			break;
		default:
			break;
		}
		if (err)
			goto out;
		WRITE_ONCE(qp->state, new);
		if (new == IB_QPS_RTS)
			mr_napi_kick_qp(qp);
		if (new == IB_QPS_SQD)
			mr_qp_sq_retire(qp);
	}
	err = 0;
out:
	mutex_unlock(&qp->state_lock);
	return err;
}

int mr_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		struct ib_qp_init_attr *init)
{
	struct mr_ibqp *qp = to_mr_ibqp(ibqp);

	mutex_lock(&qp->state_lock);
	*attr = qp->attr;
	/* The caller gets the address vector without a GID reference. */
	attr->ah_attr.grh.sgid_attr = NULL;
	attr->qp_state = READ_ONCE(qp->state);
	attr->cur_qp_state = attr->qp_state;
	attr->sq_draining = qp->sq_draining && qp->sq.head != qp->sq.eng;
	attr->port_num = 1;
	memset(init, 0, sizeof(*init));
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->qp_type = ibqp->qp_type;
	init->cap = qp->attr.cap;
	init->sq_sig_type = qp->sq_sig_all ? IB_SIGNAL_ALL_WR :
					     IB_SIGNAL_REQ_WR;
	init->port_num = 1;
	mutex_unlock(&qp->state_lock);
	return 0;
}
