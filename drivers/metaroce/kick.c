// SPDX-License-Identifier: GPL-2.0-only
/*
 * What the device's NAPI context is asked to do besides receiving: a QP
 * with new work requests or completions to report, a peer whose timer fired
 * or whose window opened. Each is put once on the device's work list and
 * the poll is scheduled; napi.c serves the lists. Any context. Called by
 * the QP and peer files, calls none of them.
 */

#include <linux/netdevice.h>

#include "metaroce.h"

static void mr_napi_schedule(struct mr_dev *dev)
{
	/*
	 * From process context, run the poll at once on local_bh_enable()
	 * rather than at the next interrupt.
	 */
	if (irqs_disabled() || in_hardirq()) {
		napi_schedule(&dev->napi);
	} else {
		local_bh_disable();
		napi_schedule(&dev->napi);
		local_bh_enable();
	}
}

void mr_napi_kick_qp(struct mr_ibqp *qp)
{
	struct mr_dev *dev = qp->dev;
	unsigned long flags;

	spin_lock_irqsave(&dev->work_lock, flags);
	if (!qp->on_work) {
		qp->on_work = true;
		list_add_tail(&qp->work_node, &dev->qp_work);
	}
	spin_unlock_irqrestore(&dev->work_lock, flags);
	mr_napi_schedule(dev);
}

void mr_napi_kick_peer(struct mr_peer *peer, int work_bit)
{
	struct mr_dev *dev = peer->dev;
	unsigned long flags;

	set_bit(work_bit, &peer->work);
	spin_lock_irqsave(&dev->work_lock, flags);
	if (!peer->dead && list_empty(&peer->work_node))
		list_add_tail(&peer->work_node, &dev->peer_work);
	spin_unlock_irqrestore(&dev->work_lock, flags);
	mr_napi_schedule(dev);
}
