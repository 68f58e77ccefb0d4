// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Shared receive queues, through the kernel's uverbs commands.  Basic SRQs
 * only: XRC and tag-matching SRQs fail with EOPNOTSUPP.
 */
#include <errno.h>
#include <stdlib.h>

#include "libmetaroce.h"

struct ibv_srq *mr_create_srq(struct ibv_pd *ibpd,
			      struct ibv_srq_init_attr *attr)
{
	struct ib_uverbs_create_srq_resp resp = {};
	struct ibv_create_srq cmd = {};
	struct mr_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;

	ret = ibv_cmd_create_srq(ibpd, &srq->vsrq.srq, attr, &cmd, sizeof(cmd),
				 &resp, sizeof(resp));
	if (ret) {
		free(srq);
		errno = ret;
		return NULL;
	}
	srq->vsrq.srq_type = IBV_SRQT_BASIC;
	srq->max_sge = attr->attr.max_sge;
	return &srq->vsrq.srq;
}

/*
 * ibv_create_srq_ex() sends plain basic SRQs to create_srq; this sees the
 * rest.  Unlike ibv_create_srq(), nobody sets pd, srq_context and
 * events_completed after us.
 */
struct ibv_srq *mr_create_srq_ex(struct ibv_context *ibctx,
				 struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t supported = IBV_SRQ_INIT_ATTR_PD |
				   IBV_SRQ_INIT_ATTR_TYPE |
				   IBV_SRQ_INIT_ATTR_CQ;
	struct ib_uverbs_create_srq_resp resp = {};
	struct ibv_srq_init_attr_ex a = *attr;
	struct ibv_create_xsrq cmd = {};
	struct mr_srq *srq;
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
	ret = ibv_cmd_create_srq_ex(ibctx, &srq->vsrq, &a, &cmd, sizeof(cmd),
				    &resp, sizeof(resp));
	if (ret) {
		free(srq);
		errno = ret;
		return NULL;
	}

	srq->vsrq.srq.pd = attr->pd;
	srq->vsrq.srq.srq_context = attr->srq_context;
	srq->vsrq.srq.events_completed = 0;
	srq->vsrq.srq_type = IBV_SRQT_BASIC;
	srq->vsrq.cq = attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ ? attr->cq : NULL;
	attr->attr.max_wr = a.attr.max_wr;
	attr->attr.max_sge = a.attr.max_sge;
	srq->max_sge = a.attr.max_sge;
	return &srq->vsrq.srq;
}

int mr_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		  int attr_mask)
{
	struct ibv_modify_srq cmd = {};

	return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd, sizeof(cmd));
}

int mr_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

int mr_destroy_srq(struct ibv_srq *ibsrq)
{
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;

	free(to_mr_srq(ibsrq));
	return 0;
}

static int mr_cmd_post_srq_recv(void *obj, struct ibv_recv_wr *wr,
				struct ibv_recv_wr **bad_wr)
{
	return ibv_cmd_post_srq_recv(obj, wr, bad_wr);
}

int mr_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr)
{
	return mr_post_recv_list(mr_cmd_post_srq_recv, ibsrq,
				 to_mr_srq(ibsrq)->max_sge, wr, bad_wr);
}
