// SPDX-License-Identifier: GPL-2.0-only
/*
 * Completion queues, filled by the data path (mr_cq_push()):
 *  - kernel CQs (and user CQs of a provider that asks for no ring) queue
 *    struct ib_wc in kernel memory, drained by poll_cq, which kernel ULPs
 *    call through ib_core's CQ API (from softirq, a workqueue or their own
 *    context) and userspace through the uverbs poll command;
 *  - user CQs with a ring queue struct metaroce_cqe in memory the process
 *    maps and polls without a system call (uapi/rdma/metaroce-abi.h).
 * cq->lock (spin, irqsave) protects the queue or the kernel's side of the
 * ring, and the notification state; the completion and event handlers are
 * called outside it.
 */

#include <linux/log2.h>
#include <linux/slab.h>
#include <uapi/rdma/metaroce-abi.h>

#include "metaroce.h"
#include "objects.h"

static_assert(sizeof(struct metaroce_cq_ring) <= METAROCE_CQ_RING_ENTRIES);
static_assert(sizeof(struct metaroce_cqe) == 48);

static struct ib_wc *mr_cq_alloc_queue(u32 cqe)
{
	/* Charged to the process that creates the CQ, if any. */
	return kvcalloc(cqe, sizeof(struct ib_wc), GFP_KERNEL_ACCOUNT);
}

static struct metaroce_cqe *mr_cq_ring_entry(struct metaroce_cq_ring *ring,
					     u32 slots, u32 index)
{
	return (struct metaroce_cqe *)((u8 *)ring + METAROCE_CQ_RING_ENTRIES) +
	       (index & (slots - 1));
}

/*
 * A ring for @cqe completions, mapped by the process of @udata; its place
 * goes into @resp, which is copied to @udata. Process context.
 */
static int mr_cq_ring_alloc(struct ib_udata *udata, u32 cqe,
			    struct metaroce_cq_ring **ring,
			    struct mr_umap **umap, u32 *slots)
{
	struct metaroce_create_cq_resp resp = { .comp_mask = METAROCE_CQ_RING };
	struct ib_ucontext *uctx;
	void *buf;
	int err;

	/* The provider asked for a ring: it must take the answer whole. */
	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	uctx = rdma_udata_to_uverbs_attr_bundle(udata)->context;
	resp.slots = roundup_pow_of_two(cqe);
	resp.mmap_size = PAGE_ALIGN(METAROCE_CQ_RING_ENTRIES +
				    (size_t)resp.slots *
				    sizeof(struct metaroce_cqe));
	buf = mr_umap_alloc(uctx, resp.mmap_size, umap, &resp.mmap_offset);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err) {
		mr_umap_remove(*umap);
		return err;
	}
	*ring = buf;
	*slots = resp.slots;
	return 0;
}

/*
 * Completions in the ring that the process has not taken, or more than
 * cq->size if it wrote a consumer index that cannot be. Under cq->lock.
 */
static u32 mr_cq_ring_used(struct mr_cq *cq)
{
	/* Pairs with the provider's release: it is done with those slots. */
	return cq->producer - smp_load_acquire(&cq->ring->consumer);
}

/* Completions queued that poll_cq or the process has not taken. */
static u32 mr_cq_queued(struct mr_cq *cq)
{
	return cq->ring ? mr_cq_ring_used(cq) : cq->count;
}

/**
 * mr_create_cq() - create a completion queue
 * @ibcq: the CQ, allocated by ib_core
 * @attr: cqe (1..METAROCE_MAX_CQE), comp_vector, flags (none supported)
 * @arg: the udata, or the uverbs bundle that holds it (see compat.h): a
 *	struct metaroce_create_cq_req may ask for a ring
 *
 * Return: 0, -EINVAL for a bad size, vector or request, -EOPNOTSUPP for
 * flags or a request of a newer provider, or -ENOMEM (also when the device
 * has METAROCE_MAX_CQ CQs).
 */
int mr_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		 mr_create_cq_arg *arg)
{
	struct ib_udata *udata = mr_create_cq_udata(arg);
	struct mr_cq *cq = to_mr_cq(ibcq);
	u32 comp_mask;
	int err;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (!attr->cqe || attr->cqe > METAROCE_MAX_CQE ||
	    attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;
	err = mr_udata_request(udata, METAROCE_CQ_RING, &comp_mask);
	if (err)
		return err;
	err = mr_limit_take(to_mr_dev(ibcq->device), MR_LIM_CQ);
	if (err)
		return err;

	if (comp_mask & METAROCE_CQ_RING) {
		err = mr_cq_ring_alloc(udata, attr->cqe, &cq->ring, &cq->umap,
				       &cq->slots);
	} else {
		cq->queue = mr_cq_alloc_queue(attr->cqe);
		if (!cq->queue)
			err = -ENOMEM;
	}
	if (err) {
		mr_limit_drop(to_mr_dev(ibcq->device), MR_LIM_CQ);
		return err;
	}
	spin_lock_init(&cq->lock);
	cq->producer = 0;
	cq->size = attr->cqe;
	cq->head = 0;
	cq->count = 0;
	cq->notify = 0;
	cq->overflow = false;
	ibcq->cqe = attr->cqe;
	return 0;
}

int mr_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct mr_cq *cq = to_mr_cq(ibcq);

	kvfree(cq->queue);
	cq->queue = NULL;
	/* No QP uses the CQ any more: the ring is not written again. */
	mr_umap_remove(cq->umap);
	cq->umap = NULL;
	cq->ring = NULL;
	mr_limit_drop(to_mr_dev(ibcq->device), MR_LIM_CQ);
	return 0;
}

/* resize_cq of a CQ with a ring: the completions move to a new one. */
static int mr_resize_cq_ring(struct mr_cq *cq, u32 cqe, struct ib_udata *udata)
{
	struct metaroce_cq_ring *ring;
	struct mr_umap *umap, *old_umap;
	unsigned long flags;
	u32 slots, used, i;
	int err;

	err = mr_cq_ring_alloc(udata, cqe, &ring, &umap, &slots);
	if (err)
		return err;

	spin_lock_irqsave(&cq->lock, flags);
	used = mr_cq_ring_used(cq);
	if (used > cqe || used > cq->size) {
		spin_unlock_irqrestore(&cq->lock, flags);
		mr_umap_remove(umap);
		return -EINVAL;
	}
	for (i = 0; i < used; i++)
		*mr_cq_ring_entry(ring, slots, i) =
			*mr_cq_ring_entry(cq->ring, cq->slots,
					  cq->producer - used + i);
	ring->producer = used;
	old_umap = cq->umap;
	cq->ring = ring;
	cq->umap = umap;
	cq->slots = slots;
	cq->producer = used;
	cq->size = cqe;
	cq->overflow = false;
	cq->ibcq.cqe = cqe;
	spin_unlock_irqrestore(&cq->lock, flags);

	mr_umap_remove(old_umap);
	return 0;
}

/**
 * mr_resize_cq() - change the number of entries of a CQ
 * @ibcq: the CQ
 * @cqe: new size, 1..METAROCE_MAX_CQE, and no smaller than the number of
 *	completions queued now (-EINVAL)
 * @udata: a struct metaroce_resize_cq_req, which asks for a ring exactly
 *	when the CQ has one (-EINVAL otherwise)
 *
 * Queued completions are kept, in order. An overflow can be reported again
 * after a resize.
 *
 * Return: 0, -EINVAL, -EOPNOTSUPP (request of a newer provider) or -ENOMEM.
 */
int mr_resize_cq(struct ib_cq *ibcq, unsigned int cqe, struct ib_udata *udata)
{
	struct mr_cq *cq = to_mr_cq(ibcq);
	struct ib_wc *queue, *old;
	u32 comp_mask;
	unsigned long flags;
	int err;
	u32 i;

	if (!cqe || cqe > METAROCE_MAX_CQE)
		return -EINVAL;
	err = mr_udata_request(udata, METAROCE_CQ_RING, &comp_mask);
	if (err)
		return err;
	if (!(comp_mask & METAROCE_CQ_RING) != !cq->ring)
		return -EINVAL;
	if (cq->ring)
		return mr_resize_cq_ring(cq, cqe, udata);

	queue = mr_cq_alloc_queue(cqe);
	if (!queue)
		return -ENOMEM;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->count > cqe) {
		spin_unlock_irqrestore(&cq->lock, flags);
		kvfree(queue);
		return -EINVAL;
	}
	for (i = 0; i < cq->count; i++)
		queue[i] = cq->queue[(cq->head + i) % cq->size];
	old = cq->queue;
	cq->queue = queue;
	cq->head = 0;
	cq->size = cqe;
	cq->overflow = false;
	ibcq->cqe = cqe;
	spin_unlock_irqrestore(&cq->lock, flags);

	kvfree(old);
	return 0;
}

/**
 * mr_cq_clean() - remove a QP's completions from a CQ
 * @cq: the CQ
 * @qp: the QP, going to RESET or destroyed
 *
 * As hardware devices do: the completions (flushed work requests mostly)
 * of a QP that is reset are not reported to its next incarnation, and
 * none can point to a destroyed QP. The other QPs' completions keep their
 * order. In a ring, the provider does it.
 */
void mr_cq_clean(struct mr_cq *cq, struct ib_qp *qp)
{
	unsigned long flags;
	u32 i, n = 0;

	if (cq->ring)
		return;
	spin_lock_irqsave(&cq->lock, flags);
	for (i = 0; i < cq->count; i++) {
		struct ib_wc *wc = &cq->queue[(cq->head + i) % cq->size];

		if (wc->qp == qp)
			continue;
		if (n != i)
			cq->queue[(cq->head + n) % cq->size] = *wc;
		n++;
	}
	cq->count = n;
	spin_unlock_irqrestore(&cq->lock, flags);
}

/* Any context. A CQ with a ring is polled in the process: -EINVAL. */
int mr_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct mr_cq *cq = to_mr_cq(ibcq);
	unsigned long flags;
	int n = 0;

	if (cq->ring)
		return -EINVAL;

	spin_lock_irqsave(&cq->lock, flags);
	while (n < num_entries && cq->count) {
		wc[n++] = cq->queue[cq->head];
		if (++cq->head == cq->size)
			cq->head = 0;
		cq->count--;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

/**
 * mr_req_notify_cq() - arm a CQ's completion handler
 * @ibcq: the CQ
 * @flags: IB_CQ_SOLICITED or IB_CQ_NEXT_COMP, optionally with
 *	IB_CQ_REPORT_MISSED_EVENTS
 *
 * The handler is called once, for the next completion queued (of any
 * kind, or solicited or unsuccessful ones with IB_CQ_SOLICITED); arming
 * for the next completion overrides an arm for solicited ones. With
 * Arming and the check for missed events happen under the lock that
 * mr_cq_push() takes, so no completion can slip between them. Any context.
 *
 * Return: 1 with IB_CQ_REPORT_MISSED_EVENTS if completions are queued
 * already (the caller must poll again: the handler will not be called for
 * them), else 0; -EINVAL for bad flags.
 */
int mr_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct mr_cq *cq = to_mr_cq(ibcq);
	u8 want = flags & IB_CQ_SOLICITED_MASK;
	unsigned long irqflags;
	int ret = 0;

	if ((flags & ~(IB_CQ_SOLICITED_MASK | IB_CQ_REPORT_MISSED_EVENTS)) ||
	    (want != IB_CQ_SOLICITED && want != IB_CQ_NEXT_COMP))
		return -EINVAL;

	spin_lock_irqsave(&cq->lock, irqflags);
	if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = want;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && mr_cq_queued(cq))
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

static void mr_cq_overflow_event(struct mr_cq *cq)
{
	struct ib_cq *ibcq = &cq->ibcq;
	struct ib_event ev = {
		.device = ibcq->device,
		.element.cq = ibcq,
		.event = IB_EVENT_CQ_ERR,
	};

	if (ibcq->event_handler)
		ibcq->event_handler(&ev, ibcq->cq_context);
}

static u32 mr_cqe_flags(int wc_flags)
{
	u32 flags = 0;

	if (wc_flags & IB_WC_GRH)
		flags |= METAROCE_CQE_GRH;
	if (wc_flags & IB_WC_WITH_IMM)
		flags |= METAROCE_CQE_WITH_IMM;
	if (wc_flags & IB_WC_WITH_INVALIDATE)
		flags |= METAROCE_CQE_WITH_INV;
	if (wc_flags & IB_WC_IP_CSUM_OK)
		flags |= METAROCE_CQE_IP_CSUM_OK;
	return flags;
}

/* Under cq->lock, with room checked. */
static void mr_cq_ring_put(struct mr_cq *cq, const struct ib_wc *wc)
{
	struct metaroce_cqe *e = mr_cq_ring_entry(cq->ring, cq->slots,
						   cq->producer);

	e->wr_id = wc->wr_id;
	e->status = wc->status;
	e->opcode = wc->opcode;
	e->vendor_err = wc->vendor_err;
	e->byte_len = wc->byte_len;
	e->imm = (wc->wc_flags & IB_WC_WITH_INVALIDATE) ?
		 wc->ex.invalidate_rkey : (__force u32)wc->ex.imm_data;
	e->qp_num = wc->qp->qp_num;
	e->src_qp = wc->src_qp;
	e->flags = mr_cqe_flags(wc->wc_flags);
	e->pkey_index = wc->pkey_index;
	e->slid = wc->slid;
	e->sl = wc->sl;
	e->dlid_path_bits = wc->dlid_path_bits;
	e->reserved[0] = 0;
	e->reserved[1] = 0;
	/* The entry before the index that shows it. */
	smp_store_release(&cq->ring->producer, ++cq->producer);
}

/**
 * mr_cq_push() - queue a completion
 * @cq: the CQ
 * @wc: the completion
 * @solicited: the completion is for a solicited message
 *
 * Calls the completion handler (outside the lock) if the CQ is armed for
 * this completion, and disarms it. If the CQ is full, @wc is lost, the
 * CQ's event handler gets IB_EVENT_CQ_ERR (once, until a resize). Any
 * context.
 *
 * Return: 0, or -ENOSPC if the CQ was full (the caller then fails the QP).
 */
int mr_cq_push(struct mr_cq *cq, const struct ib_wc *wc, bool solicited)
{
	bool notify = false, overflow = false;
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	/* A ring's index from the process may be anything: >= too. */
	if (mr_cq_queued(cq) >= cq->size) {
		overflow = !cq->overflow;
		cq->overflow = true;
		spin_unlock_irqrestore(&cq->lock, flags);
		if (overflow)
			mr_cq_overflow_event(cq);
		return -ENOSPC;
	}

	if (cq->ring) {
		mr_cq_ring_put(cq, wc);
	} else {
		cq->queue[(cq->head + cq->count) % cq->size] = *wc;
		cq->count++;
	}
	if (cq->notify == IB_CQ_NEXT_COMP ||
	    (cq->notify == IB_CQ_SOLICITED &&
	     (solicited || wc->status != IB_WC_SUCCESS))) {
		cq->notify = 0;
		notify = true;
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (notify && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	return 0;
}
