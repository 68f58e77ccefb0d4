// SPDX-License-Identifier: GPL-2.0-only
/*
 * Receive WQE rings (struct mr_rring, used by RQs and SRQs) and shared
 * receive queues. A ring holds fixed-size slots, each a struct mr_rwqe
 * with room for max_sge SGEs, copied in at post time; head and tail are
 * free-running u32 counters, so the ring size is a power of two. The
 * owner's lock (qp->rq_lock, srq->lock) protects a ring.
 */

#include <linux/bitops.h>
#include <linux/log2.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <rdma/uverbs_ioctl.h>
#include <uapi/rdma/metaroce-abi.h>

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
	r->buf = kvcalloc(r->size, r->stride, GFP_KERNEL_ACCOUNT);
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

/**
 * mr_urq_create() - a receive ring shared with the process
 * @u: the ring
 * @udata: the create command's, for its ucontext
 * @slots: work requests, a power of two
 * @max_sge: SGEs per work request
 * @stride: set to the bytes per work request
 * @offset: set to the mmap offset
 * @size: set to the bytes to map
 *
 * Process context.
 *
 * Return: 0 or -ENOMEM.
 */
int mr_urq_create(struct mr_urq *u, struct ib_udata *udata, u32 slots,
		  u32 max_sge, u32 *stride, u64 *offset, u64 *size)
{
	void *buf;

	*size = PAGE_ALIGN(mr_urq_bytes(slots, max_sge));
	buf = mr_umap_alloc(rdma_udata_to_uverbs_attr_bundle(udata)->context,
			    *size, &u->umap, offset);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	mr_urq_place(u, buf, slots, max_sge);
	*stride = u->stride;
	return 0;
}

/* Bytes a receive ring of @slots work requests of @max_sge SGEs takes. */
size_t mr_urq_bytes(u32 slots, u32 max_sge)
{
	return METAROCE_RQ_RING_ENTRIES + (size_t)slots *
	       (sizeof(struct metaroce_rwqe) +
		max_sge * sizeof(struct metaroce_sge));
}

/*
 * A receive ring at @ring, in a mapping another object owns (the send
 * ring's, METAROCE_QP_ONE_MAP): u->umap stays NULL.
 */
void mr_urq_place(struct mr_urq *u, void *ring, u32 slots, u32 max_sge)
{
	u->ring = ring;
	u->slots = slots;
	u->stride = sizeof(struct metaroce_rwqe) +
		    max_sge * sizeof(struct metaroce_sge);
}

/* No new mappings; the buffer goes with the last one. */
void mr_urq_remove(struct mr_urq *u)
{
	mr_umap_remove(u->umap);
	u->umap = NULL;
	u->ring = NULL;
}

/**
 * mr_urq_copy() - take a copy of a work request the process wrote
 * @u: the ring
 * @idx: the work request's index
 * @out: room for @max_sge SGEs
 * @max_sge: SGEs the queue allows
 *
 * The process may change the slot at any time: every field is read once,
 * and checked in the copy. A work request with too many SGEs, or with
 * lengths whose sum overflows, becomes one without a buffer. Any context.
 */
void mr_urq_copy(const struct mr_urq *u, u32 idx, struct mr_rwqe *out,
		 u32 max_sge)
{
	const void *slot = (const void *)u->ring + METAROCE_RQ_RING_ENTRIES +
			   (size_t)(idx & (u->slots - 1)) * u->stride;
	const struct metaroce_sge *usge = slot + sizeof(struct metaroce_rwqe);
	const struct metaroce_rwqe *uw = slot;
	u32 i, n, length = 0;

	out->wr_id = READ_ONCE(uw->wr_id);
	n = READ_ONCE(uw->num_sge);
	if (n > max_sge)
		n = 0;
	for (i = 0; i < n; i++) {
		out->sge[i].addr = READ_ONCE(usge[i].addr);
		out->sge[i].length = READ_ONCE(usge[i].length);
		out->sge[i].lkey = READ_ONCE(usge[i].lkey);
		if (check_add_overflow(length, out->sge[i].length, &length)) {
			n = 0;
			length = 0;
			break;
		}
	}
	out->num_sge = n;
	out->length = length;
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

/**
 * mr_srq_bound_alloc() - room for the receives a QP takes from @srq
 * @srq: the SRQ
 *
 * Process context.
 *
 * Return: the block, empty, or NULL.
 */
struct mr_srq_bound *mr_srq_bound_alloc(struct mr_srq *srq)
{
	u32 stride = struct_size_t(struct mr_rwqe, sge, srq->ring.max_sge);
	struct mr_srq_bound *b;

	b = kzalloc(struct_size(b, slots, (size_t)MR_MSG_WND * stride),
		    GFP_KERNEL_ACCOUNT);
	if (b) {
		INIT_LIST_HEAD(&b->node);
		b->stride = stride;
	}
	return b;
}

/**
 * mr_srq_give_back() - return receives a QP took and did not use
 * @srq: their SRQ
 * @b: the QP's block; @srq owns it from now on (freed when empty)
 *
 * A QP that is reset or destroyed hands its receives back: the next QPs
 * to take receives from @srq get them first. Any context.
 */
void mr_srq_give_back(struct mr_srq *srq, struct mr_srq_bound *b)
{
	unsigned long flags;

	if (!b->valid) {
		kfree(b);
		return;
	}
	spin_lock_irqsave(&srq->lock, flags);
	list_add_tail(&b->node, &srq->given);
	srq->given_cnt += hweight64(b->valid);
	spin_unlock_irqrestore(&srq->lock, flags);
}

/* Under srq->lock: a receive given back, into @out; false if none. */
static bool mr_srq_take_given(struct mr_srq *srq, struct mr_rwqe *out)
{
	struct mr_srq_bound *b;
	const struct mr_rwqe *w;
	u32 i;

	b = list_first_entry_or_null(&srq->given, struct mr_srq_bound, node);
	if (!b)
		return false;
	i = __ffs64(b->valid);
	w = mr_srq_bound_slot(b, i);
	memcpy(out, w, struct_size(w, sge, w->num_sge));
	b->valid &= ~BIT_ULL(i);
	srq->given_cnt--;
	if (!b->valid) {
		list_del(&b->node);
		kfree(b);
	}
	return true;
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

	u32 left;

	spin_lock_irqsave(&srq->lock, flags);
	if (mr_srq_take_given(srq, out)) {
		left = srq->given_cnt;
		if (!srq->user.ring) {
			left += mr_rring_count(r);
		} else {
			/* Pairs with the provider's release, as below. */
			u32 prod = smp_load_acquire(&srq->user.ring->producer);

			if (prod - srq->taken <= srq->user.slots)
				left += prod - srq->taken;
		}
	} else if (srq->user.ring) {
		/* The slots before the index that shows them. */
		u32 prod = smp_load_acquire(&srq->user.ring->producer);

		left = prod - srq->taken;
		if (!left || left > srq->user.slots) {
			spin_unlock_irqrestore(&srq->lock, flags);
			return -ENOENT;
		}
		mr_urq_copy(&srq->user, srq->taken, out, r->max_sge);
		srq->taken++;
		left--;
		/* Copied: the slot is the process's again. */
		smp_store_release(&srq->user.ring->consumer, srq->taken);
	} else {
		if (!mr_rring_count(r)) {
			spin_unlock_irqrestore(&srq->lock, flags);
			return -ENOENT;
		}
		wqe = mr_rring_slot(r, r->head);
		memcpy(out, wqe, struct_size(wqe, sge, wqe->num_sge));
		r->head++;
		left = mr_rring_count(r);
	}
	if (srq->limit && left < srq->limit) {
		srq->limit = 0;
		limit = true;
	}
	spin_unlock_irqrestore(&srq->lock, flags);

	if (limit)
		mr_srq_event(srq, IB_EVENT_SRQ_LIMIT_REACHED);
	return 0;
}

/* Create a user ring for @srq if the process asked for one. */
static int mr_srq_ring_create(struct mr_srq *srq, struct ib_srq_attr *attr,
			      struct ib_udata *udata)
{
	struct metaroce_create_srq_resp resp = {};
	u32 comp_mask;
	int err;

	err = mr_udata_request(udata, METAROCE_SRQ_RING, &comp_mask);
	if (err || !udata)
		return err;
	if (comp_mask & METAROCE_SRQ_RING) {
		if (udata->outlen < sizeof(resp))
			return -EINVAL;
		srq->ring.size = roundup_pow_of_two(attr->max_wr);
		srq->ring.max_sge = max_t(u32, attr->max_sge, 1);
		err = mr_urq_create(&srq->user, udata, srq->ring.size,
				    srq->ring.max_sge, &resp.stride,
				    &resp.mmap_offset, &resp.mmap_size);
		if (err)
			return err;
		resp.comp_mask = METAROCE_SRQ_RING;
		resp.slots = srq->ring.size;
	}
	err = ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
	if (err)
		mr_urq_remove(&srq->user);
	return err;
}

/**
 * mr_create_srq() - create a shared receive queue
 * @ibsrq: the SRQ, allocated by ib_core
 * @init: IB_SRQT_BASIC only; attr.max_wr (1..METAROCE_MAX_SRQ_WR) and
 *	attr.max_sge (up to METAROCE_MAX_SRQ_SGE) are updated to what the SRQ
 *	really has; attr.srq_limit is ignored, as the verbs say
 * @udata: struct metaroce_create_srq_req/resp: a ring, if asked for
 *
 * Return: 0, -EOPNOTSUPP (other SRQ types, unknown request bits), -EINVAL
 * or -ENOMEM (also when the device has METAROCE_MAX_SRQ SRQs).
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

	err = mr_limit_take(to_mr_dev(ibsrq->device), MR_LIM_SRQ);
	if (err)
		return err;
	spin_lock_init(&srq->lock);
	srq->limit = 0;
	INIT_LIST_HEAD(&srq->given);
	srq->given_cnt = 0;
	err = mr_srq_ring_create(srq, attr, udata);
	/* An SRQ without SGEs could only take zero-length messages. */
	if (!err && !srq->user.ring)
		err = mr_rring_init(&srq->ring, attr->max_wr,
				    max_t(u32, attr->max_sge, 1));
	if (err) {
		mr_urq_remove(&srq->user);
		mr_limit_drop(to_mr_dev(ibsrq->device), MR_LIM_SRQ);
		return err;
	}

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
 * posted WQEs; it cannot shrink below the number posted. An SRQ with a
 * user ring keeps its slots: a max_wr up to them changes nothing, beyond
 * them it is -EINVAL. IB_SRQ_LIMIT
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

	if (srq->user.ring && (mask & IB_SRQ_MAX_WR)) {
		if (!attr->max_wr || attr->max_wr > srq->ring.size)
			return -EINVAL;
		mask &= ~IB_SRQ_MAX_WR;
	}
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
	struct mr_srq *srq = to_mr_srq(ibsrq);
	struct mr_srq_bound *b, *tmp;

	/* No QP uses the SRQ any more. */
	list_for_each_entry_safe(b, tmp, &srq->given, node)
		kfree(b);
	mr_urq_remove(&srq->user);
	mr_rring_free(&srq->ring);
	mr_limit_drop(to_mr_dev(ibsrq->device), MR_LIM_SRQ);
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
 * request (or any, when the SRQ has a user ring).
 */
int mr_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		     const struct ib_recv_wr **bad_wr)
{
	struct mr_srq *srq = to_mr_srq(ibsrq);
	unsigned long flags;
	int err = 0;

	if (srq->user.ring) {
		*bad_wr = wr;
		return wr ? -EINVAL : 0;
	}

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
