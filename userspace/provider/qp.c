// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Queue pairs: RC and UD.
 *
 * Sending on an RC QP: the provider asks the kernel for a send ring
 * (<rdma/metaroce-abi.h>), writes work requests there and issues the
 * POST_SEND command, with no work request, only when the kernel says it
 * will not look at the ring on its own (METAROCE_SQ_NEED_WAKEUP): while
 * work requests are outstanding, their completions bring the kernel back
 * to the ring.  The work requests are checked here as the kernel checks
 * them, so that a bad one fails the post with its errno.
 *
 * Otherwise (UD, receives, a kernel without rings), libibverbs'
 * ibv_cmd_post_* build the whole work request list
 * into one command on the stack and read every SGE and address handle the
 * list names.  So the list is checked here first (SGE counts against what
 * the kernel granted, address handles present and of this context) and
 * handed over in batches of MRV_POST_BATCH.  As with any provider, the work
 * requests before *bad_wr are posted and the rest are not.
 *
 * The ibv_wr_* send API (IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) collects work
 * requests between ibv_wr_start() and ibv_wr_complete() and posts them the
 * same way.  Should the kernel refuse one of them, those before it are
 * posted: ibv_wr_complete() returns the error.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "libmetaroce.h"

/* Work requests per POST_* command. */
#define MRV_POST_BATCH 32

/* Starting size of a QP's ibv_wr_* list. */
#define MRV_WR_LIST_MIN 16

/* --- posting ------------------------------------------------------------ */

static int mrv_send_wr_check(const struct mrv_qp *qp,
			     const struct ibv_send_wr *wr)
{
	const struct ibv_qp *ibqp = &qp->vqp.qp;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_send_sge ||
	    (wr->num_sge && !wr->sg_list))
		return EINVAL;
	/* AH handles are per context: another context's could alias ours. */
	if (ibqp->qp_type == IBV_QPT_UD &&
	    (!wr->wr.ud.ah || wr->wr.ud.ah->context != ibqp->context))
		return EINVAL;
	return 0;
}

static int mrv_post_send_batch(struct ibv_qp *ibqp, struct ibv_send_wr *copy,
			       struct ibv_send_wr **orig, unsigned int n,
			       struct ibv_send_wr **bad_wr)
{
	struct ibv_send_wr *bad = NULL;
	int ret;

	ret = ibv_cmd_post_send(ibqp, copy, &bad);
	if (ret)
		*bad_wr = bad >= copy && bad < copy + n ? orig[bad - copy] :
							  orig[0];
	return ret;
}

/* --- the send ring ------------------------------------------------------- */

/* Largest message (the device's max_msg_sz). */
#define MRV_MAX_MSG_SIZE (1ULL << 31)

static bool mrv_ring_inline(const struct ibv_send_wr *wr)
{
	if (!(wr->send_flags & IBV_SEND_INLINE))
		return false;
	switch (wr->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return true;
	default:
		return false;
	}
}

/*
 * Writes @wr into ring slot @idx, checked as the kernel checks it.
 * Returns 0 or EINVAL (the slot may be half written: it is not published).
 */
static int mrv_ring_write(struct mrv_qp *qp, const struct ibv_send_wr *wr,
			  uint32_t idx)
{
	uint8_t *slot = (uint8_t *)qp->sq_ring + METAROCE_SQ_RING_ENTRIES +
			(size_t)(idx & (qp->sq_slots - 1)) * qp->sq_stride;
	struct metaroce_swqe *w = (struct metaroce_swqe *)slot;
	struct metaroce_sge *sge = (struct metaroce_sge *)(w + 1);
	bool atomic = false, ud = qp->vqp.qp.qp_type == IBV_QPT_UD;
	uint64_t len = 0;
	int i;

	/* UD: sends only, to an AH of this context. */
	if (ud && ((wr->opcode != IBV_WR_SEND &&
		    wr->opcode != IBV_WR_SEND_WITH_IMM) ||
		   !wr->wr.ud.ah || wr->wr.ud.ah->context != qp->vqp.qp.context))
		return EINVAL;
	switch (wr->opcode) {
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		atomic = true;
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_READ:
		break;
	default:
		return EINVAL;
	}
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_send_sge ||
	    (wr->num_sge && !wr->sg_list))
		return EINVAL;

	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	/* IP checksum offload means nothing to RC: dropped, as before. */
	w->send_flags = wr->send_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED |
					  IBV_SEND_SOLICITED |
					  IBV_SEND_INLINE);
	w->num_sge = 0;
	w->inline_len = 0;
	w->rkey = 0;
	w->remote_addr = 0;
	w->compare_add = 0;
	w->swap = 0;
	w->imm = wr->opcode == IBV_WR_SEND_WITH_INV ? wr->invalidate_rkey :
						       wr->imm_data;
	w->reserved[0] = 0;
	w->reserved[1] = 0;

	if (mrv_ring_inline(wr)) {
		uint8_t *data = (uint8_t *)(w + 1);

		for (i = 0; i < wr->num_sge; i++) {
			uint32_t n = wr->sg_list[i].length;

			if (n > qp->max_inline - len)
				return EINVAL;
			memcpy(data + len,
			       (const void *)(uintptr_t)wr->sg_list[i].addr, n);
			len += n;
		}
		w->inline_len = len;
	} else {
		for (i = 0; i < wr->num_sge; i++) {
			sge[i].addr = wr->sg_list[i].addr;
			sge[i].length = wr->sg_list[i].length;
			sge[i].lkey = wr->sg_list[i].lkey;
			len += wr->sg_list[i].length;
		}
		if (len > MRV_MAX_MSG_SIZE)
			return EINVAL;
		w->num_sge = wr->num_sge;
	}

	if (atomic) {
		if (len != 8 || (wr->wr.atomic.remote_addr & 7))
			return EINVAL;
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
	} else if (wr->opcode == IBV_WR_RDMA_WRITE ||
		   wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
		   wr->opcode == IBV_WR_RDMA_READ) {
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	} else if (ud) {
		/* A datagram fits in one packet (the MTU at creation). */
		if (qp->ud_max_msg && len > qp->ud_max_msg)
			return EINVAL;
		w->ud.ahn = to_mrv_ah(wr->wr.ud.ah)->ahn;
		w->ud.remote_qpn = wr->wr.ud.remote_qpn;
		w->ud.remote_qkey = wr->wr.ud.remote_qkey;
	}
	return 0;
}

/*
 * A process that posts one work request at a time and waits for the answer
 * (a latency test, a request/response protocol) would wait for the
 * kernel's next look at the ring (every 20 us, for 1 ms after the last
 * work request it took), which under load comes much later: its posts,
 * when they find nothing outstanding, ring the doorbell anyway.  Such a
 * process is told from a streaming one by the mean time between its posts
 * (a moving average with gain 1/8, starting high): MRV_RING_PAUSE_NS or
 * more.  A streaming process posts faster and leaves it to the kernel.  A
 * gap counts from the end of the previous post: the doorbell's own system
 * call (slow under strace, say) must not make a process look slow.  On a
 * UD QP, that doorbell asks the kernel to send before it returns
 * (METAROCE_SQ_HINT_WAIT); on an RC QP it does not: after a wait for
 * completions a streaming process looks slow for a few posts, and sending
 * those in the system call cut its message rate. The kernel sends an RC
 * doorbell's work in the call by itself when the peer has sent the QP
 * data since the previous one (Documentation/uapi.rst).
 */
#define MRV_RING_PAUSE_NS 40000ULL
#define MRV_RING_GAP_MAX 1000000ULL

static uint64_t mrv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The doorbell: POST_SEND with no work request. */
static int mrv_ring_doorbell(struct mrv_qp *qp)
{
	struct ibv_send_wr *bad = NULL;

	return ibv_cmd_post_send(&qp->vqp.qp, NULL, &bad);
}

static int mrv_ring_post_send(struct mrv_qp *qp, struct ibv_send_wr *wr,
			      struct ibv_send_wr **bad_wr)
{
	uint32_t retired, posted = 0;
	bool kick = false, idle, wait;
	uint64_t now = mrv_now_ns(), gap;
	int ret = 0;

	pthread_spin_lock(&qp->sq_lock);
	/* The kernel refuses posts before RTS (its flushes come after). */
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD &&
	    qp->state != IBV_QPS_ERR)
		ret = EINVAL;
	retired = __atomic_load_n(&qp->sq_ring->retired, __ATOMIC_ACQUIRE);
	gap = now - qp->sq_last_post;
	if (gap > MRV_RING_GAP_MAX)
		gap = MRV_RING_GAP_MAX;
	idle = retired == qp->sq_prod;
	for (; wr && !ret; wr = wr->next) {
		if (qp->sq_prod - retired >= qp->max_send_wr) {
			retired = __atomic_load_n(&qp->sq_ring->retired,
						  __ATOMIC_ACQUIRE);
			if (qp->sq_prod - retired >= qp->max_send_wr) {
				ret = ENOMEM;
				break;
			}
		}
		ret = mrv_ring_write(qp, wr, qp->sq_prod);
		if (ret)
			break;
		qp->sq_prod++;
		posted++;
	}
	if (posted) {
		/* The slots before the index that shows them. */
		__atomic_store_n(&qp->sq_ring->producer, qp->sq_prod,
				 __ATOMIC_RELEASE);
		/* The index before the flag: see mrv_qp_sq_pull() (kernel). */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		qp->sq_gap = qp->sq_gap - qp->sq_gap / 8 + gap / 8;
		qp->sq_last_post = now;
		kick = idle && qp->sq_gap >= MRV_RING_PAUSE_NS;
		/*
		 * A UD send completes when it leaves: sent in the system
		 * call, it is complete when ibv_post_send() returns, as on a
		 * NIC.  RC work requests go from the kernel's workqueue (see
		 * above).
		 */
		wait = kick && qp->vqp.qp.qp_type == IBV_QPT_UD;
		kick = kick || (__atomic_load_n(&qp->sq_ring->flags,
						__ATOMIC_RELAXED) &
				METAROCE_SQ_NEED_WAKEUP);
		/* Ask the doorbell to send at once when we will wait. */
		if (kick && wait != (qp->sq_hint == METAROCE_SQ_HINT_WAIT)) {
			qp->sq_hint = wait ? METAROCE_SQ_HINT_WAIT : 0;
			__atomic_store_n(&qp->sq_ring->hint, qp->sq_hint,
					 __ATOMIC_RELAXED);
		}
	}
	pthread_spin_unlock(&qp->sq_lock);

	if (kick) {
		int err = mrv_ring_doorbell(qp);

		/* The gap to the next post does not count the call. */
		pthread_spin_lock(&qp->sq_lock);
		qp->sq_last_post = mrv_now_ns();
		pthread_spin_unlock(&qp->sq_lock);

		/* Published but maybe never taken: say so. */
		if (err && !ret) {
			*bad_wr = NULL;
			return err;
		}
	}
	if (ret)
		*bad_wr = wr;
	return ret;
}

int mrv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr)
{
	struct ibv_send_wr copy[MRV_POST_BATCH], *orig[MRV_POST_BATCH];
	struct mrv_qp *qp = to_mrv_qp(ibqp);
	unsigned int n = 0;
	int ret = 0;

	if (qp->sq_ring)
		return mrv_ring_post_send(qp, wr, bad_wr);

	for (; wr; wr = wr->next) {
		ret = mrv_send_wr_check(qp, wr);
		if (ret)
			break;
		copy[n] = *wr;
		copy[n].next = NULL;
		if (n)
			copy[n - 1].next = &copy[n];
		orig[n++] = wr;
		if (n == MRV_POST_BATCH) {
			ret = mrv_post_send_batch(ibqp, copy, orig, n, bad_wr);
			if (ret)
				return ret;
			n = 0;
		}
	}
	if (n) {
		int err = mrv_post_send_batch(ibqp, copy, orig, n, bad_wr);

		if (err)
			return err;
	}
	if (ret)
		*bad_wr = wr;
	return ret;
}

static int mrv_post_recv_batch(mrv_post_recv_fn post, void *obj,
			       struct ibv_recv_wr *copy,
			       struct ibv_recv_wr **orig, unsigned int n,
			       struct ibv_recv_wr **bad_wr)
{
	struct ibv_recv_wr *bad = NULL;
	int ret;

	ret = post(obj, copy, &bad);
	if (ret)
		*bad_wr = bad >= copy && bad < copy + n ? orig[bad - copy] :
							  orig[0];
	return ret;
}

/* The receive side, for QPs and SRQs alike. */
int mrv_post_recv_list(mrv_post_recv_fn post, void *obj, uint32_t max_sge,
		       struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct ibv_recv_wr copy[MRV_POST_BATCH], *orig[MRV_POST_BATCH];
	unsigned int n = 0;
	int ret = 0;

	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			ret = EINVAL;
			break;
		}
		copy[n] = *wr;
		copy[n].next = NULL;
		if (n)
			copy[n - 1].next = &copy[n];
		orig[n++] = wr;
		if (n == MRV_POST_BATCH) {
			ret = mrv_post_recv_batch(post, obj, copy, orig, n,
						  bad_wr);
			if (ret)
				return ret;
			n = 0;
		}
	}
	if (n) {
		int err = mrv_post_recv_batch(post, obj, copy, orig, n, bad_wr);

		if (err)
			return err;
	}
	if (ret)
		*bad_wr = wr;
	return ret;
}

static int mrv_cmd_post_recv(void *obj, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr)
{
	return ibv_cmd_post_recv(obj, wr, bad_wr);
}

int mrv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr)
{
	struct mrv_qp *qp = to_mrv_qp(ibqp);

	/* Receives of a QP with an SRQ go to the SRQ. */
	if (ibqp->srq && wr) {
		*bad_wr = wr;
		return EINVAL;
	}
	if (qp->rq.ring) {
		struct ibv_recv_wr *bad = NULL;
		bool kick;
		int ret;

		/* The kernel refuses receives before INIT. */
		if (__atomic_load_n(&qp->state, __ATOMIC_RELAXED) ==
		    IBV_QPS_RESET) {
			*bad_wr = wr;
			return EINVAL;
		}
		ret = mrv_rq_post(&qp->rq, wr, bad_wr, &kick);
		/* In the error state: the kernel flushes them now. */
		if (kick) {
			int err = ibv_cmd_post_recv(ibqp, NULL, &bad);

			if (err && !ret) {
				*bad_wr = NULL;
				return err;
			}
		}
		return ret;
	}
	return mrv_post_recv_list(mrv_cmd_post_recv, ibqp, qp->max_recv_sge,
				  wr, bad_wr);
}

/* --- the ibv_wr_* send API ------------------------------------------------ */

static uint64_t mrv_send_ops_supported(enum ibv_qp_type type)
{
	if (type == IBV_QPT_UD)
		return IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	return IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
	       IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE |
	       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
	       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
}

static uint64_t mrv_send_op_flag(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
		return IBV_QP_EX_WITH_SEND;
	case IBV_WR_SEND_WITH_IMM:
		return IBV_QP_EX_WITH_SEND_WITH_IMM;
	case IBV_WR_SEND_WITH_INV:
		return IBV_QP_EX_WITH_SEND_WITH_INV;
	case IBV_WR_RDMA_WRITE:
		return IBV_QP_EX_WITH_RDMA_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	case IBV_WR_RDMA_READ:
		return IBV_QP_EX_WITH_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	default:
		return 0;
	}
}

static void mrv_wrl_fail(struct mrv_wr_list *l, int err)
{
	if (!l->err)
		l->err = err;
}

static int mrv_wrl_grow(struct mrv_qp *qp)
{
	struct mrv_wr_list *l = &qp->wrl;
	uint32_t cap = l->cap ? l->cap * 2 : MRV_WR_LIST_MIN;
	struct ibv_send_wr *wr;
	struct ibv_sge *sge;
	uint8_t *inl;

	if (cap > qp->max_send_wr)
		cap = qp->max_send_wr;
	wr = reallocarray(l->wr, cap, sizeof(*wr));
	if (!wr)
		return ENOMEM;
	l->wr = wr;
	sge = reallocarray(l->sge, (size_t)cap * qp->max_send_sge,
			   sizeof(*sge));
	if (!sge)
		return ENOMEM;
	l->sge = sge;
	if (qp->max_inline) {
		inl = reallocarray(l->inl, cap, qp->max_inline);
		if (!inl)
			return ENOMEM;
		l->inl = inl;
	}
	l->cap = cap;
	return 0;
}

/* Start a work request of type @op from qp_ex->wr_id and wr_flags. */
static struct ibv_send_wr *mrv_wr_begin(struct ibv_qp_ex *qpx,
					enum ibv_wr_opcode op)
{
	struct mrv_qp *qp = ex_to_mrv_qp(qpx);
	struct mrv_wr_list *l = &qp->wrl;
	struct ibv_send_wr *wr;

	if (l->err)
		return NULL;
	if (!(qp->send_ops_flags & mrv_send_op_flag(op))) {
		mrv_wrl_fail(l, EINVAL);
		return NULL;
	}
	if (l->num == qp->max_send_wr) {
		mrv_wrl_fail(l, ENOMEM);
		return NULL;
	}
	if (l->num == l->cap) {
		int err = mrv_wrl_grow(qp);

		if (err) {
			mrv_wrl_fail(l, err);
			return NULL;
		}
	}

	wr = &l->wr[l->num++];
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = qpx->wr_id;
	wr->send_flags = qpx->wr_flags & ~(unsigned int)IBV_SEND_INLINE;
	wr->opcode = op;
	return wr;
}

/* The work request the ibv_wr_set_* calls apply to, if any. */
static struct ibv_send_wr *mrv_wr_cur(struct mrv_wr_list *l)
{
	if (l->err)
		return NULL;
	if (!l->num) {
		mrv_wrl_fail(l, EINVAL);
		return NULL;
	}
	return &l->wr[l->num - 1];
}

static void mrv_wr_send(struct ibv_qp_ex *qpx)
{
	mrv_wr_begin(qpx, IBV_WR_SEND);
}

static void mrv_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct ibv_send_wr *wr = mrv_wr_begin(qpx, IBV_WR_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm_data;
}

static void mrv_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = mrv_wr_begin(qpx, IBV_WR_SEND_WITH_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
}

static void mrv_wr_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
			uint32_t rkey, uint64_t remote_addr, __be32 imm_data)
{
	struct ibv_send_wr *wr = mrv_wr_begin(qpx, op);

	if (!wr)
		return;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = remote_addr;
	wr->imm_data = imm_data;
}

static void mrv_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t remote_addr)
{
	mrv_wr_rdma(qpx, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void mrv_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr, __be32 imm_data)
{
	mrv_wr_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr,
		    imm_data);
}

static void mrv_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			     uint64_t remote_addr)
{
	mrv_wr_rdma(qpx, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void mrv_wr_atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
			  uint32_t rkey, uint64_t remote_addr,
			  uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *wr = mrv_wr_begin(qpx, op);

	if (!wr)
		return;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = remote_addr;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
}

static void mrv_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr, uint64_t compare,
				  uint64_t swap)
{
	mrv_wr_atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr,
		      compare, swap);
}

static void mrv_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr, uint64_t add)
{
	mrv_wr_atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr, add,
		      0);
}

/* Builders this device cannot offer: the list fails at ibv_wr_complete(). */
static void mrv_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			   uint32_t rkey,
			   const struct ibv_mw_bind_info *bind_info)
{
	mrv_wrl_fail(&ex_to_mrv_qp(qpx)->wrl, EOPNOTSUPP);
}

static void mrv_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	mrv_wrl_fail(&ex_to_mrv_qp(qpx)->wrl, EOPNOTSUPP);
}

static void mrv_wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz,
			    uint16_t mss)
{
	mrv_wrl_fail(&ex_to_mrv_qp(qpx)->wrl, EOPNOTSUPP);
}

static void mrv_wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	mrv_wrl_fail(&ex_to_mrv_qp(qpx)->wrl, EOPNOTSUPP);
}

static void mrv_wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t remote_addr, const void *atomic_wr)
{
	mrv_wrl_fail(&ex_to_mrv_qp(qpx)->wrl, EOPNOTSUPP);
}

static void mrv_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
			       uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct mrv_qp *qp = ex_to_mrv_qp(qpx);
	struct ibv_send_wr *wr = mrv_wr_cur(&qp->wrl);

	if (!wr)
		return;
	if (qp->vqp.qp.qp_type != IBV_QPT_UD) {
		mrv_wrl_fail(&qp->wrl, EINVAL);
		return;
	}
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = remote_qpn;
	wr->wr.ud.remote_qkey = remote_qkey;
}

/*
 * SGEs live in the list's sge[] array at max_send_sge per work request; the
 * sg_list pointers are set by ibv_wr_complete(), when the arrays stop
 * moving.
 */
static void mrv_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
				const struct ibv_sge *sg_list)
{
	struct mrv_qp *qp = ex_to_mrv_qp(qpx);
	struct mrv_wr_list *l = &qp->wrl;
	struct ibv_send_wr *wr = mrv_wr_cur(l);

	if (!wr)
		return;
	if (num_sge > qp->max_send_sge || (num_sge && !sg_list)) {
		mrv_wrl_fail(l, EINVAL);
		return;
	}
	if (num_sge)
		memcpy(&l->sge[(size_t)(l->num - 1) * qp->max_send_sge],
		       sg_list, num_sge * sizeof(*sg_list));
	wr->num_sge = (int)num_sge;
	wr->send_flags &= ~(unsigned int)IBV_SEND_INLINE;
}

static void mrv_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
			   uint64_t addr, uint32_t length)
{
	const struct ibv_sge sge = {
		.addr = addr,
		.length = length,
		.lkey = lkey,
	};

	mrv_wr_set_sge_list(qpx, 1, &sge);
}

/*
 * Inline data is copied now (the caller may reuse its buffers at once) into
 * the work request's max_inline bytes of inl[], described by one SGE.
 */
static void mrv_wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
					const struct ibv_data_buf *buf_list)
{
	struct mrv_qp *qp = ex_to_mrv_qp(qpx);
	struct mrv_wr_list *l = &qp->wrl;
	struct ibv_send_wr *wr = mrv_wr_cur(l);
	size_t i, len = 0;
	uint8_t *dst;

	if (!wr)
		return;
	if (num_buf && !buf_list) {
		mrv_wrl_fail(l, EINVAL);
		return;
	}
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > qp->max_inline - len ||
		    (buf_list[i].length && !buf_list[i].addr)) {
			mrv_wrl_fail(l, EINVAL);
			return;
		}
		len += buf_list[i].length;
	}

	if (len) {
		dst = l->inl + (size_t)(l->num - 1) * qp->max_inline;
		for (i = 0; i < num_buf; i++) {
			memcpy(dst, buf_list[i].addr, buf_list[i].length);
			dst += buf_list[i].length;
		}
	}
	l->sge[(size_t)(l->num - 1) * qp->max_send_sge] = (struct ibv_sge){
		.length = (uint32_t)len,
	};
	wr->num_sge = 1;
	wr->send_flags |= IBV_SEND_INLINE;
}

static void mrv_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				   size_t length)
{
	const struct ibv_data_buf buf = {
		.addr = addr,
		.length = length,
	};

	mrv_wr_set_inline_data_list(qpx, 1, &buf);
}

static void mrv_wr_start(struct ibv_qp_ex *qpx)
{
	struct mrv_wr_list *l = &ex_to_mrv_qp(qpx)->wrl;

	l->num = 0;
	l->err = 0;
}

static void mrv_wr_abort(struct ibv_qp_ex *qpx)
{
	mrv_wr_start(qpx);
}

static int mrv_wr_complete(struct ibv_qp_ex *qpx)
{
	struct mrv_qp *qp = ex_to_mrv_qp(qpx);
	struct mrv_wr_list *l = &qp->wrl;
	struct ibv_send_wr *bad;
	uint32_t i;
	int ret;

	ret = l->err;
	if (!ret && l->num) {
		for (i = 0; i < l->num; i++) {
			struct ibv_send_wr *wr = &l->wr[i];

			wr->sg_list = &l->sge[(size_t)i * qp->max_send_sge];
			if ((wr->send_flags & IBV_SEND_INLINE) &&
			    wr->sg_list->length)
				wr->sg_list->addr = (uintptr_t)(l->inl +
					(size_t)i * qp->max_inline);
			wr->next = i + 1 < l->num ? wr + 1 : NULL;
		}
		ret = mrv_post_send(&qp->vqp.qp, l->wr, &bad);
	}
	l->num = 0;
	l->err = 0;
	return ret;
}

static void mrv_init_qp_ex_ops(struct ibv_qp_ex *qpx)
{
	qpx->wr_atomic_cmp_swp = mrv_wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = mrv_wr_atomic_fetch_add;
	qpx->wr_bind_mw = mrv_wr_bind_mw;
	qpx->wr_local_inv = mrv_wr_local_inv;
	qpx->wr_rdma_read = mrv_wr_rdma_read;
	qpx->wr_rdma_write = mrv_wr_rdma_write;
	qpx->wr_rdma_write_imm = mrv_wr_rdma_write_imm;
	qpx->wr_send = mrv_wr_send;
	qpx->wr_send_imm = mrv_wr_send_imm;
	qpx->wr_send_inv = mrv_wr_send_inv;
	qpx->wr_send_tso = mrv_wr_send_tso;
	qpx->wr_set_ud_addr = mrv_wr_set_ud_addr;
	qpx->wr_set_xrc_srqn = mrv_wr_set_xrc_srqn;
	qpx->wr_set_inline_data = mrv_wr_set_inline_data;
	qpx->wr_set_inline_data_list = mrv_wr_set_inline_data_list;
	qpx->wr_set_sge = mrv_wr_set_sge;
	qpx->wr_set_sge_list = mrv_wr_set_sge_list;
	qpx->wr_start = mrv_wr_start;
	qpx->wr_complete = mrv_wr_complete;
	qpx->wr_abort = mrv_wr_abort;
	qpx->wr_atomic_write = mrv_wr_atomic_write;
}

/* --- create / query / modify / destroy ----------------------------------- */

/* What the provider can take before handing the attributes to libibverbs. */
static int mrv_check_qp_init(struct ibv_context *ibctx,
			     enum ibv_qp_type type, struct ibv_pd *pd,
			     struct ibv_cq *send_cq, struct ibv_cq *recv_cq,
			     struct ibv_srq *srq)
{
	switch (type) {
	case IBV_QPT_RC:
	case IBV_QPT_UD:
		break;
	case IBV_QPT_UC:
	case IBV_QPT_RAW_PACKET:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
	case IBV_QPT_DRIVER:
		return EOPNOTSUPP;
	default:
		return EINVAL;
	}
	/* libibverbs dereferences all of them; handles are per context. */
	if (!pd || !send_cq || !recv_cq || pd->context != ibctx ||
	    send_cq->context != ibctx || recv_cq->context != ibctx ||
	    (srq && srq->context != ibctx))
		return EINVAL;
	return 0;
}

static void mrv_qp_set_caps(struct mrv_qp *qp, const struct ibv_qp_cap *cap)
{
	qp->max_send_wr = cap->max_send_wr;
	qp->max_send_sge = cap->max_send_sge;
	qp->max_recv_sge = cap->max_recv_sge;
	qp->max_inline = cap->max_inline_data;
}

static void mrv_qp_free(struct mrv_qp *qp)
{
	if (qp->sq_ring)
		munmap(qp->sq_ring, qp->sq_ring_size);
	mrv_rq_unmap(&qp->rq);
	pthread_spin_destroy(&qp->sq_lock);
	free(qp->wrl.wr);
	free(qp->wrl.sge);
	free(qp->wrl.inl);
	free(qp);
}

static struct mrv_qp *mrv_qp_alloc(void)
{
	struct mrv_qp *qp = calloc(1, sizeof(*qp));

	if (!qp)
		return NULL;
	if (pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE)) {
		free(qp);
		errno = ENOMEM;
		return NULL;
	}
	qp->state = IBV_QPS_RESET;
	qp->sq_gap = MRV_RING_GAP_MAX;
	return qp;
}

/*
 * After a successful create: map the send ring the response describes, if
 * any.  Returns 0 or an errno (the caller destroys the QP).
 */
static int mrv_qp_setup_ring(struct ibv_context *ibctx, struct mrv_qp *qp,
			     const struct metaroce_create_qp_resp *r,
			     const struct ibv_qp_cap *cap)
{
	bool one = (r->comp_mask & METAROCE_QP_ONE_MAP) &&
		   (r->comp_mask & METAROCE_QP_SQ_RING) &&
		   (r->comp_mask & METAROCE_QP_RQ_RING);
	uint64_t need;
	void *map;

	qp->rq.max_wr = cap->max_recv_wr;
	qp->rq.max_sge = cap->max_recv_sge;
	if ((r->comp_mask & METAROCE_QP_RQ_RING) && !one) {
		int ret = mrv_rq_map(ibctx, &qp->rq, r->rq_slots, r->rq_stride,
				     r->rq_mmap_offset, r->rq_mmap_size);

		if (ret)
			return ret;
	}
	if (!(r->comp_mask & METAROCE_QP_SQ_RING))
		return 0;
	/* The kernel's word, but a bad one must not make us scribble. */
	need = sizeof(struct metaroce_swqe) +
	       (qp->max_send_sge * sizeof(struct metaroce_sge) >
		qp->max_inline ? qp->max_send_sge * sizeof(struct metaroce_sge) :
				 qp->max_inline);
	if (!r->sq_slots || (r->sq_slots & (r->sq_slots - 1)) ||
	    r->sq_slots < qp->max_send_wr || r->sq_stride < need ||
	    r->sq_stride % 8 ||
	    r->sq_mmap_size < METAROCE_SQ_RING_ENTRIES +
			      (uint64_t)r->sq_slots * r->sq_stride ||
	    r->sq_mmap_size > SIZE_MAX)
		return EPROTO;
	map = mmap(NULL, r->sq_mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   ibctx->cmd_fd, r->sq_mmap_offset);
	if (map == MAP_FAILED)
		return errno;
	qp->sq_ring = map;
	qp->sq_ring_size = r->sq_mmap_size;
	qp->sq_slots = r->sq_slots;
	qp->sq_stride = r->sq_stride;
	qp->sq_prod = __atomic_load_n(&qp->sq_ring->producer, __ATOMIC_RELAXED);
	/* The receive ring after the send ring's slots, in its mapping. */
	if (one) {
		uint64_t at = r->rq_ring_offset;

		if (at % 64 || at < METAROCE_SQ_RING_ENTRIES +
				    (uint64_t)r->sq_slots * r->sq_stride ||
		    at >= r->sq_mmap_size)
			return EPROTO;
		return mrv_rq_place(&qp->rq, (uint8_t *)map + at,
				    r->sq_mmap_size - at, r->rq_slots,
				    r->rq_stride);
	}
	return 0;
}

/*
 * A UD QP with a send ring: the kernel refuses a datagram longer than the
 * port's MTU; posting checks it against the MTU now, so that the error
 * comes from ibv_post_send() as before (if the MTU changes later, the
 * kernel's check still holds: the work request completes in error).
 */
static void mrv_qp_ud_limit(struct ibv_context *ibctx, struct mrv_qp *qp)
{
	struct ibv_port_attr pa;

	if (qp->vqp.qp.qp_type == IBV_QPT_UD && qp->sq_ring &&
	    !ibv_query_port(ibctx, 1, &pa) && pa.active_mtu >= IBV_MTU_256 &&
	    pa.active_mtu <= IBV_MTU_4096)
		qp->ud_max_msg = 128U << pa.active_mtu;
}

static uint32_t mrv_qp_rings_wanted(enum ibv_qp_type type, struct ibv_srq *srq)
{
	return METAROCE_QP_SQ_RING |
	       (srq ? 0 : METAROCE_QP_RQ_RING | METAROCE_QP_ONE_MAP);
}

/*
 * A kernel refuses request bits it does not know (EOPNOTSUPP): an older
 * one knows both rings but not one mapping for them, an older still send
 * rings only, an older still neither.
 */
static uint32_t mrv_qp_rings_fewer(uint32_t want)
{
	if (want & METAROCE_QP_ONE_MAP)
		return want & ~METAROCE_QP_ONE_MAP;
	return want & METAROCE_QP_RQ_RING ? want & ~METAROCE_QP_RQ_RING : 0;
}

struct ibv_qp *mrv_create_qp(struct ibv_pd *ibpd, struct ibv_qp_init_attr *attr)
{
	struct mrv_create_qp_resp resp = {};
	struct mrv_create_qp_cmd cmd = {};
	struct mrv_qp *qp;
	int ret;

	ret = mrv_check_qp_init(ibpd->context, attr->qp_type, ibpd,
				attr->send_cq, attr->recv_cq, attr->srq);
	if (ret) {
		errno = ret;
		return NULL;
	}

	qp = mrv_qp_alloc();
	if (!qp)
		return NULL;

	cmd.drv.comp_mask = mrv_qp_rings_wanted(attr->qp_type, attr->srq);
	for (;;) {
		ret = ibv_cmd_create_qp(ibpd, &qp->vqp.qp, attr, &cmd.ibv,
					sizeof(cmd), &resp.ibv, sizeof(resp));
		if (ret != EOPNOTSUPP || !cmd.drv.comp_mask)
			break;
		cmd.drv.comp_mask = mrv_qp_rings_fewer(cmd.drv.comp_mask);
	}
	if (ret) {
		mrv_qp_free(qp);
		errno = ret;
		return NULL;
	}
	mrv_qp_set_caps(qp, &attr->cap);
	ret = mrv_qp_setup_ring(ibpd->context, qp, &resp.drv, &attr->cap);
	if (ret) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		mrv_qp_free(qp);
		errno = ret;
		return NULL;
	}
	mrv_qp_ud_limit(ibpd->context, qp);
	return &qp->vqp.qp;
}

struct ibv_qp *mrv_create_qp_ex(struct ibv_context *ibctx,
				struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t supported = IBV_QP_INIT_ATTR_PD |
				   IBV_QP_INIT_ATTR_CREATE_FLAGS |
				   IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	struct ibv_qp_init_attr_ex a = *attr;
	struct mrv_create_qp_resp resp = {};
	struct mrv_create_qp_cmd cmd = {};
	struct mrv_qp *qp;
	int ret;

	/* XRC, RSS, TSO, creation flags: not supported by the device. */
	if ((attr->comp_mask & ~supported) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     (attr->send_ops_flags & ~mrv_send_ops_supported(attr->qp_type)))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	ret = mrv_check_qp_init(ibctx, attr->qp_type,
				attr->comp_mask & IBV_QP_INIT_ATTR_PD ?
				attr->pd : NULL, attr->send_cq, attr->recv_cq,
				attr->srq);
	if (ret) {
		errno = ret;
		return NULL;
	}

	qp = mrv_qp_alloc();
	if (!qp)
		return NULL;

	/* libibverbs must zero it: checks pabi.h's verbs_qp. */
	qp->vqp.comp_mask = ~0U;
	a.comp_mask &= ~(uint32_t)IBV_QP_INIT_ATTR_CREATE_FLAGS;
	cmd.drv.comp_mask = mrv_qp_rings_wanted(attr->qp_type, attr->srq);
	for (;;) {
		ret = ibv_cmd_create_qp_ex(ibctx, &qp->vqp, &a, &cmd.ibv,
					   sizeof(cmd), &resp.ibv,
					   sizeof(resp));
		if (ret != EOPNOTSUPP || !cmd.drv.comp_mask)
			break;
		cmd.drv.comp_mask = mrv_qp_rings_fewer(cmd.drv.comp_mask);
	}
	if (ret) {
		mrv_qp_free(qp);
		errno = ret;
		return NULL;
	}
	if (qp->vqp.comp_mask) {
		mrv_layout_warn(ibctx, "verbs_qp");
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		mrv_qp_free(qp);
		errno = EPROTO;
		return NULL;
	}
	attr->cap = a.cap;
	mrv_qp_set_caps(qp, &a.cap);
	ret = mrv_qp_setup_ring(ibctx, qp, &resp.drv, &a.cap);
	if (ret) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		mrv_qp_free(qp);
		errno = ret;
		return NULL;
	}
	mrv_qp_ud_limit(ibctx, qp);

	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		qp->send_ops_flags = attr->send_ops_flags;
		mrv_init_qp_ex_ops(&qp->vqp.qp_ex);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	return &qp->vqp.qp;
}

int mrv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

static void mrv_qp_clean_cqs(struct ibv_qp *ibqp)
{
	mrv_cq_clean(ibqp->send_cq, ibqp->qp_num);
	if (ibqp->recv_cq != ibqp->send_cq)
		mrv_cq_clean(ibqp->recv_cq, ibqp->qp_num);
}

/*
 * The right to receive FLUSH requests (IBV_ACCESS_FLUSH_*, rdma-core 45 on).
 * metaroce has no FLUSH operation (no IBV_DEVICE_FLUSH_* capability, no
 * such request on the wire: one would be refused as an invalid request),
 * so granting that right to a QP grants nothing, and mrv_modify_qp() drops
 * it rather than have the kernel refuse the whole call: applications that
 * ask for every right they know, as pyverbs' tests do from rdma-core 56 on,
 * still get their QP. MRs with FLUSH rights are refused (mr.c).
 */
#if MRV_PABI_GEN >= 45
#define MRV_QP_ACCESS_FLUSH (IBV_ACCESS_FLUSH_GLOBAL | IBV_ACCESS_FLUSH_PERSISTENT)
#else
#define MRV_QP_ACCESS_FLUSH 0
#endif

int mrv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct ib_uverbs_ex_modify_qp_resp resp = {};
	struct ibv_modify_qp_ex cmd_ex = {};
	struct ibv_modify_qp cmd = {};
	struct ibv_qp_attr granted;
	int ret;

	if ((attr_mask & IBV_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & MRV_QP_ACCESS_FLUSH)) {
		granted = *attr;
		granted.qp_access_flags &= ~(unsigned int)MRV_QP_ACCESS_FLUSH;
		attr = &granted;
	}

	/* Attributes from IBV_QP_RATE_LIMIT on need the extended command. */
	if (attr_mask & ~(IBV_QP_RATE_LIMIT - 1))
		ret = ibv_cmd_modify_qp_ex(ibqp, attr, attr_mask, &cmd_ex,
					   sizeof(cmd_ex), &resp, sizeof(resp));
	else
		ret = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd,
					sizeof(cmd));
	if (!ret && (attr_mask & IBV_QP_STATE)) {
		struct mrv_qp *qp = to_mrv_qp(ibqp);

		pthread_spin_lock(&qp->sq_lock);
		qp->state = attr->qp_state;
		pthread_spin_unlock(&qp->sq_lock);
		/* A reset QP's completions are not reported (as on destroy). */
		if (attr->qp_state == IBV_QPS_RESET)
			mrv_qp_clean_cqs(ibqp);
	}
	return ret;
}

int mrv_destroy_qp(struct ibv_qp *ibqp)
{
	struct ibv_cq *send_cq = ibqp->send_cq, *recv_cq = ibqp->recv_cq;
	uint32_t qp_num = ibqp->qp_num;
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;

	/* No completion can point to a destroyed QP. */
	mrv_cq_clean(send_cq, qp_num);
	if (recv_cq != send_cq)
		mrv_cq_clean(recv_cq, qp_num);
	mrv_qp_free(to_mrv_qp(ibqp));
	return 0;
}
