// SPDX-License-Identifier: GPL-2.0-only
/*
 * Completion queues: a ring of struct ib_wc in kernel memory, filled by the
 * data path (mr_cq_push()) and drained by poll_cq, which kernel ULPs call
 * through ib_core's CQ API (from softirq, a workqueue or their own
 * context) and userspace through the uverbs poll command. cq->lock (spin,
 * irqsave) protects the ring and the notification state; the completion
 * and event handlers are called outside it.
 */

#include <linux/slab.h>

#include "metaroce.h"
#include "objects.h"

static struct ib_wc *mr_cq_alloc_queue(u32 cqe)
{
	return kvcalloc(cqe, sizeof(struct ib_wc), GFP_KERNEL);
}

/**
 * mr_create_cq() - create a completion queue
 * @ibcq: the CQ, allocated by ib_core
 * @attr: cqe (1..METAROCE_MAX_CQE), comp_vector, flags (none supported)
 * @arg: the udata, or the uverbs bundle that holds it (see compat.h); no
 *	driver-specific request or response is defined
 *
 * Return: 0, -EINVAL for a bad size or vector, -EOPNOTSUPP for flags or a
 * driver request, or -ENOMEM.
 */
int mr_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		 mr_create_cq_arg *arg)
{
	struct ib_udata *udata = mr_create_cq_udata(arg);
	struct mr_cq *cq = to_mr_cq(ibcq);

	if (attr->flags)
		return -EOPNOTSUPP;
	if (!attr->cqe || attr->cqe > METAROCE_MAX_CQE ||
	    attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;
	if (!mr_udata_no_request(udata))
		return -EOPNOTSUPP;

	cq->queue = mr_cq_alloc_queue(attr->cqe);
	if (!cq->queue)
		return -ENOMEM;
	spin_lock_init(&cq->lock);
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
	return 0;
}

/**
 * mr_resize_cq() - change the number of entries of a CQ
 * @ibcq: the CQ
 * @cqe: new size, 1..METAROCE_MAX_CQE, and no smaller than the number of
 *	completions queued now (-EINVAL)
 * @udata: no driver-specific request or response is defined
 *
 * Queued completions are kept, in order. An overflow can be reported again
 * after a resize.
 *
 * Return: 0, -EINVAL, -EOPNOTSUPP (driver request) or -ENOMEM.
 */
int mr_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct mr_cq *cq = to_mr_cq(ibcq);
	struct ib_wc *queue, *old;
	unsigned long flags;
	u32 i;

	if (cqe < 1 || cqe > METAROCE_MAX_CQE)
		return -EINVAL;
	if (!mr_udata_no_request(udata))
		return -EOPNOTSUPP;

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
 * order.
 */
void mr_cq_clean(struct mr_cq *cq, struct ib_qp *qp)
{
	unsigned long flags;
	u32 i, n = 0;

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

/* Any context. */
int mr_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct mr_cq *cq = to_mr_cq(ibcq);
	unsigned long flags;
	int n = 0;

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
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && cq->count)
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
	if (cq->count == cq->size) {
		overflow = !cq->overflow;
		cq->overflow = true;
		spin_unlock_irqrestore(&cq->lock, flags);
		if (overflow)
			mr_cq_overflow_event(cq);
		return -ENOSPC;
	}

	cq->queue[(cq->head + cq->count) % cq->size] = *wc;
	cq->count++;
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
