// SPDX-License-Identifier: GPL-2.0-only
/*
 * How a QP reports: work completions into its CQs, and asynchronous events.
 *
 * The engine's completion status and the kernel's work request opcodes are
 * translated into struct ib_wc here. A completion that a full CQ refuses
 * breaks the QP (mr_qp_break()): it fails from the NAPI context, as if the
 * application had moved it to the error state, and the CQ raises
 * IB_EVENT_CQ_ERR (cq.c). Lowest of the QP files: it calls none of them.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "metaroce.h"
#include "qp.h"

enum ib_wc_status mr_wc_status(u8 st)
{
	switch (st) {
	case MR_WC_OK:
		return IB_WC_SUCCESS;
	case MR_WC_LOC_LEN_ERR:
		return IB_WC_LOC_LEN_ERR;
	case MR_WC_REM_ACCESS_ERR:
		return IB_WC_REM_ACCESS_ERR;
	case MR_WC_REM_INV_REQ_ERR:
		return IB_WC_REM_INV_REQ_ERR;
	case MR_WC_REM_OP_ERR:
		return IB_WC_REM_OP_ERR;
	case MR_WC_RETRY_EXC_ERR:
		return IB_WC_RETRY_EXC_ERR;
	case MR_WC_RNR_RETRY_EXC_ERR:
		return IB_WC_RNR_RETRY_EXC_ERR;
	case MR_WC_LOC_PROT_ERR:
		return IB_WC_LOC_PROT_ERR;
	case MR_WC_LOC_QP_OP_ERR:
		return IB_WC_LOC_QP_OP_ERR;
	default:
		return IB_WC_WR_FLUSH_ERR;
	}
}

enum ib_wc_opcode mr_wc_opcode(u32 wr_opcode)
{
	switch (wr_opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case IB_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case IB_WR_REG_MR:
		return IB_WC_REG_MR;
	default:
		return IB_WC_SEND;
	}
}

void mr_qp_event(struct mr_ibqp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = type,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/*
 * A completion of @qp cannot be reported (its CQ is full, or the engine
 * named a receive the QP does not hold): the QP fails, from the NAPI
 * context, where it may take its peer's lock. Any context.
 */
void mr_qp_break(struct mr_ibqp *qp)
{
	enum ib_qp_state st = READ_ONCE(qp->state);

	if (st == IB_QPS_RESET || st == IB_QPS_ERR ||
	    test_and_set_bit(MR_QP_BROKEN, &qp->retire))
		return;
	mr_napi_kick_qp(qp);
}

void mr_qp_cq_push(struct mr_ibqp *qp, struct mr_cq *cq,
		   const struct ib_wc *wc, bool solicited)
{
	if (mr_cq_push(cq, wc, solicited))
		mr_qp_break(qp);
}

/* A work request posted to a QP in error completes at once, flushed. */
void mr_flush_now(struct mr_cq *cq, struct ib_qp *ibqp, u64 wr_id,
		  enum ib_wc_opcode op)
{
	struct ib_wc wc = {
		.wr_id = wr_id,
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = op,
		.qp = ibqp,
	};

	mr_qp_cq_push(to_mr_ibqp(ibqp), cq, &wc, false);
}
