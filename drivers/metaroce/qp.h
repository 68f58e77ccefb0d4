/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the QP files share, and nothing else includes: qp.c (lifecycle and
 * state machine) is above sq.c (send queue), rq.c (receive queue) and ud.c
 * (datagrams), which are above comp.c (completions and events). A file
 * calls only those below it.
 */
#ifndef MR_QP_H
#define MR_QP_H

#include "metaroce.h"

/* Largest inline send: payload copied into the work request itself. */
#define MR_MAX_INLINE		256

static inline bool mr_qp_is_rc(const struct mr_ibqp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_RC;
}

/* comp.c */
enum ib_wc_status mr_wc_status(u8 st);
enum ib_wc_opcode mr_wc_opcode(u32 wr_opcode);
void mr_qp_event(struct mr_ibqp *qp, enum ib_event_type type);
void mr_qp_break(struct mr_ibqp *qp);
void mr_flush_now(struct mr_cq *cq, struct ib_qp *ibqp, u64 wr_id,
		  enum ib_wc_opcode op);

/* sq.c */
int mr_sring_init(struct mr_sring *r, u32 size, u32 max_sge, u32 max_inline);
void mr_qp_sq_ring_init(struct mr_ibqp *qp);
bool mr_qp_sq_pull(struct mr_ibqp *qp);
void mr_qp_feed(struct mr_ibqp *qp, u64 now);
void mr_qp_sq_retire(struct mr_ibqp *qp);
void mr_qp_flush_sq(struct mr_ibqp *qp);

/* rq.c */
u32 mr_qp_rq_pull(struct mr_ibqp *qp);
void mr_qp_rq_retire(struct mr_ibqp *qp);
void mr_qp_recv_complete(struct mr_ibqp *qp, const struct mr_cqe *cqe);
void mr_qp_flush_rq(struct mr_ibqp *qp);
void mr_qp_flush_srq(struct mr_ibqp *qp);

/* ud.c */
void mr_qp_service_ud(struct mr_ibqp *qp);

#endif /* MR_QP_H */
