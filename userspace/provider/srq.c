// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Shared receive queues: their receive rings (rq.c), or the kernel's
 * uverbs commands.  Basic SRQs only: XRC and tag-matching SRQs fail with
 * EOPNOTSUPP.
 */
#include <errno.h>
#include <stdlib.h>

#include "libmetaroce.h"

/* After a successful create: map the ring, if any (0 or an errno). */
static int mrv_srq_setup(struct ibv_context *ibctx, struct mrv_srq *srq,
			 const struct ibv_srq_attr *attr,
			 const struct metaroce_create_srq_resp *r)
{
	srq->vsrq.srq_type = IBV_SRQT_BASIC;
	srq->max_sge = attr->max_sge;
	if (!(r->comp_mask & METAROCE_SRQ_RING))
		return 0;
	srq->rq.max_wr = attr->max_wr;
	srq->rq.max_sge = attr->max_sge;
	return mrv_rq_map(ibctx, &srq->rq, r->slots, r->stride, r->mmap_offset,
			  r->mmap_size);
}

struct ibv_srq *mrv_create_srq(struct ibv_pd *ibpd,
			       struct ibv_srq_init_attr *attr)
{
	struct mrv_create_srq_resp resp = {};
	struct mrv_create_srq_cmd cmd = {};
	struct mrv_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;

	cmd.drv.comp_mask = METAROCE_SRQ_RING;
	ret = ibv_cmd_create_srq(ibpd, &srq->vsrq.srq, attr, &cmd.ibv,
				 sizeof(cmd), &resp.ibv, sizeof(resp));
	/* A kernel without SRQ rings refuses the request. */
	if (ret == EOPNOTSUPP) {
		cmd.drv.comp_mask = 0;
		ret = ibv_cmd_create_srq(ibpd, &srq->vsrq.srq, attr, &cmd.ibv,
					 sizeof(cmd), &resp.ibv, sizeof(resp));
	}
	if (ret) {
		free(srq);
		errno = ret;
		return NULL;
	}
	ret = mrv_srq_setup(ibpd->context, srq, &attr->attr, &resp.drv);
	if (ret) {
		ibv_cmd_destroy_srq(&srq->vsrq.srq);
		free(srq);
		errno = ret;
		return NULL;
	}
	return &srq->vsrq.srq;
}

/*
 * ibv_create_srq_ex() sends plain basic SRQs to create_srq; this sees the
 * rest.  Unlike ibv_create_srq(), nobody sets pd, srq_context and
 * events_completed after us.
 */
struct ibv_srq *mrv_create_srq_ex(struct ibv_context *ibctx,
				  struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t supported = IBV_SRQ_INIT_ATTR_PD |
				   IBV_SRQ_INIT_ATTR_TYPE |
				   IBV_SRQ_INIT_ATTR_CQ;
	struct ibv_srq_init_attr_ex a = *attr;
	struct mrv_create_srq_resp resp = {};
	struct mrv_create_xsrq_cmd cmd = {};
	struct mrv_srq *srq;
	int ret;

	if ((attr->comp_mask & ~supported) ||
	    ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	     attr->srq_type != IBV_SRQT_BASIC)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context != ibctx ||
	    ((attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) &&
	     (!attr->cq || attr->cq->context != ibctx))) {
		errno = EINVAL;
		return NULL;
	}

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;

	/* libibverbs' write() path reads srq_type whatever the mask says. */
	a.comp_mask |= IBV_SRQ_INIT_ATTR_TYPE;
	a.srq_type = IBV_SRQT_BASIC;
	cmd.drv.comp_mask = METAROCE_SRQ_RING;
	ret = ibv_cmd_create_srq_ex(ibctx, &srq->vsrq, &a, &cmd.ibv,
				    sizeof(cmd), &resp.ibv, sizeof(resp));
	/* A kernel without SRQ rings refuses the request. */
	if (ret == EOPNOTSUPP) {
		cmd.drv.comp_mask = 0;
		ret = ibv_cmd_create_srq_ex(ibctx, &srq->vsrq, &a, &cmd.ibv,
					    sizeof(cmd), &resp.ibv,
					    sizeof(resp));
	}
	if (ret) {
		free(srq);
		errno = ret;
		return NULL;
	}
	ret = mrv_srq_setup(ibctx, srq, &a.attr, &resp.drv);
	if (ret) {
		ibv_cmd_destroy_srq(&srq->vsrq.srq);
		free(srq);
		errno = ret;
		return NULL;
	}

	srq->vsrq.srq.pd = attr->pd;
	srq->vsrq.srq.srq_context = attr->srq_context;
	srq->vsrq.srq.events_completed = 0;
	srq->vsrq.cq = attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ ? attr->cq : NULL;
	attr->attr.max_wr = a.attr.max_wr;
	attr->attr.max_sge = a.attr.max_sge;
	return &srq->vsrq.srq;
}

int mrv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		   int attr_mask)
{
	struct mrv_srq *srq = to_mrv_srq(ibsrq);
	struct ibv_modify_srq cmd = {};
	struct ibv_query_srq qcmd = {};
	struct ibv_srq_attr now;
	int ret;

	ret = ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd, sizeof(cmd));
	if (ret || !srq->rq.ring || !(attr_mask & IBV_SRQ_MAX_WR))
		return ret;
	/* A ring keeps its slots; the kernel says how many may be used. */
	ret = ibv_cmd_query_srq(ibsrq, &now, &qcmd, sizeof(qcmd));
	if (ret)
		return ret;
	pthread_spin_lock(&srq->rq.lock);
	srq->rq.max_wr = now.max_wr;
	pthread_spin_unlock(&srq->rq.lock);
	return 0;
}

int mrv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

int mrv_destroy_srq(struct ibv_srq *ibsrq)
{
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;

	mrv_rq_unmap(&to_mrv_srq(ibsrq)->rq);
	free(to_mrv_srq(ibsrq));
	return 0;
}

static int mrv_cmd_post_srq_recv(void *obj, struct ibv_recv_wr *wr,
				 struct ibv_recv_wr **bad_wr)
{
	return ibv_cmd_post_srq_recv(obj, wr, bad_wr);
}

int mrv_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	struct mrv_srq *srq = to_mrv_srq(ibsrq);
	bool kick;

	/* SRQs never ask for a doorbell. */
	if (srq->rq.ring)
		return mrv_rq_post(&srq->rq, wr, bad_wr, &kick);
	return mrv_post_recv_list(mrv_cmd_post_srq_recv, ibsrq,
				  to_mrv_srq(ibsrq)->max_sge, wr, bad_wr);
}
