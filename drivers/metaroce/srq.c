// SPDX-License-Identifier: GPL-2.0-only
/*
 * Receive WQE rings (struct mr_rring, used by RQs and SRQs) and shared
 * receive queues. A ring holds fixed-size slots, each a struct mr_rwqe
 * with room for max_sge SGEs, copied in at post time; head and tail are
 * free-running u32 counters, so the ring size is a power of two. The
 * owner's lock (qp->rq_lock, srq->lock) protects a ring.
 */

#include <linux/log2.h>
#include <linux/overflow.h>
#include <linux/slab.h>

#include "metaroce.h"
#include "objects.h"

/* Big enough for any queue this device allows, small enough to be sane. */
#define MR_RRING_MAX_SIZE	BIT(20)
#define MR_RRING_MAX_SGE	256

/**
 * mr_rring_init() - allocate a ring of receive WQEs
 * @r: the ring
 * @size: slots wanted, rounded up to a power of two (r->size is the result)
 * @max_sge: SGEs per WQE
 *
 * Process context.
 *
 * Return: 0, -EINVAL for a size or SGE count out of range, or -ENOMEM.
 */
int mr_rring_init(struct mr_rring *r, u32 size, u32 max_sge)
{
	if (!size || size > MR_RRING_MAX_SIZE || max_sge > MR_RRING_MAX_SGE)
		return -EINVAL;

	r->size = roundup_pow_of_two(size);
	r->max_sge = max_sge;
	r->stride = ALIGN(struct_size_t(struct mr_rwqe, sge, max_sge),
			  sizeof(u64));
	r->head = 0;
	r->tail = 0;
	r->buf = kvcalloc(r->size, r->stride, GFP_KERNEL);
	return r->buf ? 0 : -ENOMEM;
}

void mr_rring_free(struct mr_rring *r)
{
	kvfree(r->buf);
	r->buf = NULL;
}

int mr_rring_post(struct mr_rring *r, const struct ib_recv_wr *wr)
{
	struct mr_rwqe *wqe;
	u32 length = 0;
	int i;

	if (wr->num_sge < 0 || (u32)wr->num_sge > r->max_sge)
		return -EINVAL;
	if (mr_rring_count(r) == r->size)
		return -ENOMEM;
	for (i = 0; i < wr->num_sge; i++)
		if (check_add_overflow(length, wr->sg_list[i].length, &length))
			return -EINVAL;

	wqe = mr_rring_slot(r, r->tail);
	wqe->wr_id = wr->wr_id;
	wqe->num_sge = wr->num_sge;
	wqe->length = length;
	memcpy(wqe->sge, wr->sg_list, flex_array_size(wqe, sge, wr->num_sge));
	r->tail++;
	return 0;
}

/* Moves the WQEs of @src to the start of the empty ring @dst, in order. */
static void mr_rring_move(struct mr_rring *dst, struct mr_rring *src)
{
	u32 n = mr_rring_count(src), i;

	for (i = 0; i < n; i++)
		memcpy(mr_rring_slot(dst, i), mr_rring_slot(src, src->head + i),
		       src->stride);
	dst->head = 0;
	dst->tail = n;
}

static void mr_srq_event(struct mr_srq *srq, enum ib_event_type type)
{
	struct ib_srq *ibsrq = &srq->ibsrq;
	struct ib_event ev = {
		.device = ibsrq->device,
		.element.srq = ibsrq,
		.event = type,
	};

	if (ibsrq->event_handler)
		ibsrq->event_handler(&ev, ibsrq->srq_context);
}

/*
 * Raises IB_EVENT_SRQ_LIMIT_REACHED, once, when the number of WQEs drops
 * below an armed limit; the limit is then disarmed.
 */
int mr_srq_take(struct mr_srq *srq, struct mr_rwqe *out)
{
	struct mr_rring *r = &srq->ring;
	const struct mr_rwqe *wqe;
	unsigned long flags;
	bool limit = false;

	spin_lock_irqsave(&srq->lock, flags);
	if (!mr_rring_count(r)) {
		spin_unlock_irqrestore(&srq->lock, flags);
		return -ENOENT;
	}
	wqe = mr_rring_slot(r, r->head);
	memcpy(out, wqe, struct_size(wqe, sge, wqe->num_sge));
	r->head++;
	if (srq->limit && mr_rring_count(r) < srq->limit) {
		srq->limit = 0;
		limit = true;
	}
	spin_unlock_irqrestore(&srq->lock, flags);

	if (limit)
		mr_srq_event(srq, IB_EVENT_SRQ_LIMIT_REACHED);
	return 0;
}

/**
 * mr_create_srq() - create a shared receive queue
 * @ibsrq: the SRQ, allocated by ib_core
 * @init: IB_SRQT_BASIC only; attr.max_wr (1..METAROCE_MAX_SRQ_WR) and
 *	attr.max_sge (up to METAROCE_MAX_SRQ_SGE) are updated to what the SRQ
 *	really has; attr.srq_limit is ignored, as the verbs say
 * @udata: no driver-specific request or response is defined
 *
 * Return: 0, -EOPNOTSUPP (other SRQ types, driver request), -EINVAL or
 * -ENOMEM.
 */
int mr_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		  struct ib_udata *udata)
{
	struct mr_srq *srq = to_mr_srq(ibsrq);
	struct ib_srq_attr *attr = &init->attr;
	int err;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (!attr->max_wr || attr->max_wr > METAROCE_MAX_SRQ_WR ||
	    attr->max_sge > METAROCE_MAX_SRQ_SGE)
		return -EINVAL;
	if (!mr_udata_no_request(udata))
		return -EOPNOTSUPP;

	/* An SRQ without SGEs could only take zero-length messages. */
	err = mr_rring_init(&srq->ring, attr->max_wr,
			    max_t(u32, attr->max_sge, 1));
	if (err)
		return err;
	spin_lock_init(&srq->lock);
	srq->limit = 0;

	attr->max_wr = srq->ring.size;
	attr->max_sge = srq->ring.max_sge;
	return 0;
}

/**
 * mr_modify_srq() - resize an SRQ or arm its limit event
 * @ibsrq: the SRQ
 * @attr: max_wr (IB_SRQ_MAX_WR), srq_limit (IB_SRQ_LIMIT)
 * @mask: IB_SRQ_MAX_WR and/or IB_SRQ_LIMIT
 * @udata: no driver-specific request or response is defined
 *
 * IB_SRQ_MAX_WR resizes the SRQ (rounded up as at creation), keeping the
 * posted WQEs; it cannot shrink below the number posted. IB_SRQ_LIMIT
 * arms IB_EVENT_SRQ_LIMIT_REACHED for when fewer than srq_limit WQEs remain
 * (0 disarms); srq_limit must be below the SRQ's size.
 *
 * Return: 0, or -EINVAL (bad mask or values; nothing changes), -EOPNOTSUPP
 * (driver request) or -ENOMEM.
 */
int mr_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		  enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct mr_srq *srq = to_mr_srq(ibsrq);
	struct mr_rring ring = {}, old = {};
	unsigned long flags;
	int err = 0;
	u32 size;

	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	if (!mr_udata_no_request(udata))
		return -EOPNOTSUPP;

	if (mask & IB_SRQ_MAX_WR) {
		if (!attr->max_wr || attr->max_wr > METAROCE_MAX_SRQ_WR)
			return -EINVAL;
		err = mr_rring_init(&ring, attr->max_wr, srq->ring.max_sge);
		if (err)
			return err;
	}

	spin_lock_irqsave(&srq->lock, flags);
	size = (mask & IB_SRQ_MAX_WR) ? ring.size : srq->ring.size;
	if (((mask & IB_SRQ_LIMIT) && attr->srq_limit >= size) ||
	    ((mask & IB_SRQ_MAX_WR) && mr_rring_count(&srq->ring) > size)) {
		err = -EINVAL;
		goto out;
	}
	if (mask & IB_SRQ_MAX_WR) {
		mr_rring_move(&ring, &srq->ring);
		old = srq->ring;
		srq->ring = ring;
		ring.buf = NULL;
	}
	if (mask & IB_SRQ_LIMIT)
		srq->limit = attr->srq_limit;
out:
	spin_unlock_irqrestore(&srq->lock, flags);
	/* The ring not in use: the old one, or the new one on error. */
	mr_rring_free(&ring);
	mr_rring_free(&old);
	return err;
}

int mr_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct mr_srq *srq = to_mr_srq(ibsrq);
	unsigned long flags;

	spin_lock_irqsave(&srq->lock, flags);
	attr->max_wr = srq->ring.size;
	attr->max_sge = srq->ring.max_sge;
	attr->srq_limit = srq->limit;
	spin_unlock_irqrestore(&srq->lock, flags);
	return 0;
}

int mr_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	mr_rring_free(&to_mr_srq(ibsrq)->ring);
	return 0;
}

/**
 * mr_post_srq_recv() - post receive WQEs to an SRQ
 * @ibsrq: the SRQ
 * @wr: a chain of work requests
 * @bad_wr: set to the first one not posted, on error
 *
 * Work requests before the one that failed are posted. Any context.
 *
 * Return: 0, -ENOMEM when the SRQ is full, or -EINVAL for a bad work
 * request.
 */
int mr_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		     const struct ib_recv_wr **bad_wr)
{
	struct mr_srq *srq = to_mr_srq(ibsrq);
	unsigned long flags;
	int err = 0;

	spin_lock_irqsave(&srq->lock, flags);
	for (; wr; wr = wr->next) {
		err = mr_rring_post(&srq->ring, wr);
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	return err;
}
