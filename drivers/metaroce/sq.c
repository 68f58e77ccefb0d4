// SPDX-License-Identifier: GPL-2.0-only
/*
 * The send queue: posting, the user send ring, feeding the engine, and
 * retiring finished work requests in order.
 *
 * Work requests are copied into the QP's send queue at post time (any
 * context) and the device's NAPI context is kicked; there mr_qp_feed() hands
 * them to the transport engine (RC) or ud.c sends them (UD/GSI). A user QP
 * may instead have a send ring in memory its process maps
 * (uapi/rdma/metaroce-abi.h): its work requests are copied into the send
 * queue when the process rings the doorbell, and whenever the QP's
 * completions bring the kernel back to it (mr_qp_sq_pull()). Finished work
 * requests are retired in posting order (mr_qp_sq_retire()).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <uapi/rdma/metaroce-abi.h>

#include "metaroce.h"
#include "qp.h"

/*
 * A send ring whose QP has nothing outstanding is looked at every
 * MR_SQ_POLL_NS for MR_SQ_IDLE_NS after work requests were last taken
 * from it, before the kernel asks for a doorbell (mr_qp_sq_pull()).
 */
#define MR_SQ_POLL_NS		(20 * NSEC_PER_USEC)
#define MR_SQ_IDLE_NS		(1000 * NSEC_PER_USEC)

int mr_sring_init(struct mr_sring *r, u32 size, u32 max_sge,
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

/* ------------------------------------------------------ retiring in order */

/*
 * Report finished send WQEs in order; called with no ring lock held, from
 * NAPI and from process context. One context retires at a time (completions
 * stay in posting order); a call meanwhile has the retiring one look again.
 * What a completion needs is copied out under sq_lock, before the slot is
 * given back to mr_post_send().
 */

/* Under sq_lock: tell the process that slots up to sq.head are free. */
static void mr_sq_ring_retired(struct mr_ibqp *qp)
{
	/* After our last read of them; pairs with the provider's acquire. */
	smp_store_release(&qp->sq_ring->retired, qp->sq.head);
}

void mr_qp_sq_retire(struct mr_ibqp *qp)
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
void mr_qp_flush_sq(struct mr_ibqp *qp)
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

/* ----------------------------------------------------- feeding the engine */

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
void mr_qp_feed(struct mr_ibqp *qp, u64 now)
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

/* ----------------------------------------------------------------- posting */

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
bool mr_qp_sq_pull(struct mr_ibqp *qp)
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

/* The send ring's doorbell work and poll timer (mr_qp_rings_create()). */
void mr_qp_sq_ring_init(struct mr_ibqp *qp)
{
	hrtimer_setup(&qp->sq_linger, mr_qp_sq_linger, CLOCK_MONOTONIC,
		      HRTIMER_MODE_REL_SOFT);
	INIT_WORK(&qp->sq_doorbell, mr_qp_sq_doorbell);
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
