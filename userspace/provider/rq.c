// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Receive rings, for QPs and SRQs alike (struct mrv_rq): ibv_post_recv()
 * and ibv_post_srq_recv() write work requests into memory shared with the
 * kernel, which reads them when messages arrive.
 */
#include <errno.h>
#include <sys/mman.h>

#include "libmetaroce.h"

/*
 * Map the ring a create response describes; rq->max_wr and rq->max_sge are
 * set.  Returns 0 or an errno.
 */
int mrv_rq_map(struct ibv_context *ibctx, struct mrv_rq *rq, uint32_t slots,
	       uint32_t stride, uint64_t offset, uint64_t size)
{
	uint64_t need = sizeof(struct metaroce_rwqe) +
			(uint64_t)rq->max_sge * sizeof(struct metaroce_sge);
	void *map;

	/* The kernel's word, but a bad one must not make us scribble. */
	if (!slots || (slots & (slots - 1)) || slots < rq->max_wr ||
	    stride < need || stride % 8 ||
	    size < METAROCE_RQ_RING_ENTRIES + (uint64_t)slots * stride ||
	    size > SIZE_MAX)
		return EPROTO;
	if (pthread_spin_init(&rq->lock, PTHREAD_PROCESS_PRIVATE))
		return ENOMEM;
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   ibctx->cmd_fd, offset);
	if (map == MAP_FAILED) {
		int err = errno;

		pthread_spin_destroy(&rq->lock);
		return err;
	}
	rq->ring = map;
	rq->size = size;
	rq->slots = slots;
	rq->stride = stride;
	rq->prod = __atomic_load_n(&rq->ring->producer, __ATOMIC_RELAXED);
	return 0;
}

/*
 * A QP's receive ring in its send ring's mapping (METAROCE_QP_ONE_MAP), at
 * @ring with @avail bytes of the mapping left: nothing to unmap of its
 * own. Returns 0 or an errno.
 */
int mrv_rq_place(struct mrv_rq *rq, void *ring, uint64_t avail, uint32_t slots,
		 uint32_t stride)
{
	uint64_t need = sizeof(struct metaroce_rwqe) +
			(uint64_t)rq->max_sge * sizeof(struct metaroce_sge);

	if (!slots || (slots & (slots - 1)) || slots < rq->max_wr ||
	    stride < need || stride % 8 ||
	    avail < METAROCE_RQ_RING_ENTRIES + (uint64_t)slots * stride)
		return EPROTO;
	if (pthread_spin_init(&rq->lock, PTHREAD_PROCESS_PRIVATE))
		return ENOMEM;
	rq->ring = ring;
	rq->size = 0;
	rq->slots = slots;
	rq->stride = stride;
	rq->prod = __atomic_load_n(&rq->ring->producer, __ATOMIC_RELAXED);
	return 0;
}

void mrv_rq_unmap(struct mrv_rq *rq)
{
	if (!rq->ring)
		return;
	/* Placed in a mapping another ring owns: that one unmaps it. */
	if (rq->size)
		munmap(rq->ring, rq->size);
	pthread_spin_destroy(&rq->lock);
	rq->ring = NULL;
}

int mrv_rq_post(struct mrv_rq *rq, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad_wr, bool *kick)
{
	uint32_t consumer, posted = 0;
	int ret = 0, i;

	*kick = false;
	pthread_spin_lock(&rq->lock);
	consumer = __atomic_load_n(&rq->ring->consumer, __ATOMIC_ACQUIRE);
	for (; wr; wr = wr->next) {
		struct metaroce_sge *sge;
		struct metaroce_rwqe *w;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			ret = EINVAL;
			break;
		}
		if (rq->prod - consumer >= rq->max_wr) {
			consumer = __atomic_load_n(&rq->ring->consumer,
						   __ATOMIC_ACQUIRE);
			if (rq->prod - consumer >= rq->max_wr) {
				ret = ENOMEM;
				break;
			}
		}
		w = (struct metaroce_rwqe *)((uint8_t *)rq->ring +
					     METAROCE_RQ_RING_ENTRIES +
					     (size_t)(rq->prod &
						      (rq->slots - 1)) *
					     rq->stride);
		sge = (struct metaroce_sge *)(w + 1);
		w->wr_id = wr->wr_id;
		w->num_sge = wr->num_sge;
		w->reserved = 0;
		for (i = 0; i < wr->num_sge; i++) {
			sge[i].addr = wr->sg_list[i].addr;
			sge[i].length = wr->sg_list[i].length;
			sge[i].lkey = wr->sg_list[i].lkey;
		}
		rq->prod++;
		posted++;
	}
	if (posted) {
		/* The slots before the index that shows them. */
		__atomic_store_n(&rq->ring->producer, rq->prod,
				 __ATOMIC_RELEASE);
		/* The index before the flag: see mrv_qp_flush_rq() (kernel). */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		*kick = __atomic_load_n(&rq->ring->flags, __ATOMIC_RELAXED) &
			METAROCE_RQ_NEED_WAKEUP;
	}
	pthread_spin_unlock(&rq->lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}
