// SPDX-License-Identifier: GPL-2.0-only
/*
 * Queue pairs: creation and destruction, the verbs state machine, the NAPI
 * service of a QP, and the engine's reports of completions and errors.
 *
 * An RC QP is attached to a peer (the engine connection to the remote
 * address of its address vector) from RTR until reset or destroy. The
 * engine reports completions in posting order through
 * mr_qp_eng_complete(), which hands them to the send queue (sq.c) or the
 * receive queue (rq.c); UD and GSI QPs have no engine (ud.c). The other QP
 * files call nothing here: this one is above them.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <uapi/rdma/metaroce-abi.h>

#include "metaroce.h"
#include "qp.h"
#include "trace.h"

/* ------------------------------------------------------------------ lookup */

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

/* ---------------------------------------------- the engine's reports, NAPI */

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
	trace_metaroce_qp_error(qp, mr_wc_status(status));
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
	/* A completion it could not report: its own operation failed. */
	trace_metaroce_qp_error(qp, IB_WC_LOC_QP_OP_ERR);
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

/* ------------------------------------------------------- create/destroy */

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
		mr_qp_sq_ring_init(qp);
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
	ea->seg_size = mr_rc_seg_size(qp->dev, qp->addr.ipv4);
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
		/* Read by the data path of the QP's connection. */
		WRITE_ONCE(qp->tclass,
			   rdma_ah_read_grh(&attr->ah_attr)->traffic_class);
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
