// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Completion queues, through the kernel's uverbs commands.
 *
 * POLL_CQ hands back the kernel's struct ib_wc as it is.  Its wc_flags are
 * the kernel's IB_WC_* bits (include/rdma/ib_verbs.h), which uverbs does not
 * translate and which differ from libibverbs' IBV_WC_* from bit 2 on, so
 * every polled completion goes through mr_wc_flags().
 *
 * Extended CQs (ibv_create_cq_ex) implement ibv_start_poll() and friends on
 * top of POLL_CQ: the CQ fetches a batch of completions and hands them out
 * one at a time.  Only the standard work completion fields are offered.
 */
#include <errno.h>
#include <stdlib.h>

#include "libmetaroce.h"

/* Completions asked for per POLL_CQ command (libibverbs mallocs for it). */
#define MR_POLL_CHUNK 64

/* The kernel's enum ib_wc_flags, as POLL_CQ reports them. */
enum {
	MR_KWC_GRH = 1 << 0,
	MR_KWC_WITH_IMM = 1 << 1,
	MR_KWC_WITH_INVALIDATE = 1 << 2,
	MR_KWC_IP_CSUM_OK = 1 << 3,
	/* WITH_SMAC, WITH_VLAN, WITH_NETWORK_HDR_TYPE: not in struct ibv_wc */
};

static unsigned int mr_wc_flags(unsigned int kflags)
{
	unsigned int flags = 0;

	if (kflags & MR_KWC_GRH)
		flags |= IBV_WC_GRH;
	if (kflags & MR_KWC_WITH_IMM)
		flags |= IBV_WC_WITH_IMM;
	if (kflags & MR_KWC_WITH_INVALIDATE)
		flags |= IBV_WC_WITH_INV;
	if (kflags & MR_KWC_IP_CSUM_OK)
		flags |= IBV_WC_IP_CSUM_OK;
	return flags;
}

/*
 * Up to @ne completions from the kernel.  Returns how many, or -1 with errno
 * set if the first command failed: completions already taken from the
 * kernel are never dropped.
 */
static int mr_kernel_poll(struct mr_cq *cq, int ne, struct ibv_wc *wc)
{
	int total = 0;

	while (total < ne) {
		int want = ne - total < MR_POLL_CHUNK ? ne - total :
							MR_POLL_CHUNK;
		int i, n;

		n = ibv_cmd_poll_cq(&cq->vcq.cq, want, wc + total);
		if (n < 0 || n > want)
			return total ? total : -1;
		for (i = 0; i < n; i++)
			wc[total + i].wc_flags =
				mr_wc_flags(wc[total + i].wc_flags);
		total += n;
		if (n < want)
			break;
	}
	return total;
}

int mr_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct mr_cq *cq = to_mr_cq(ibcq);
	int n = 0, ret;

	if (ne < 0) {
		errno = EINVAL;
		return -1;
	}
	if (!cq->ex)
		return mr_kernel_poll(cq, ne, wc);

	/* Completions fetched by the extended API come first. */
	pthread_mutex_lock(&cq->lock);
	while (n < ne && cq->count) {
		wc[n++] = cq->batch[cq->head++];
		cq->count--;
	}
	if (n < ne) {
		ret = mr_kernel_poll(cq, ne - n, wc + n);
		if (ret > 0)
			n += ret;
		else if (ret < 0 && !n)
			n = -1;
	}
	pthread_mutex_unlock(&cq->lock);
	return n;
}

/* --- the extended poll API (lock held from start_poll to end_poll) --- */

static int mr_refill(struct mr_cq *cq)
{
	int n;

	n = mr_kernel_poll(cq, MR_CQ_BATCH, cq->batch);
	if (n < 0)
		return errno ? errno : EIO;
	cq->head = 0;
	cq->count = n;
	return n ? 0 : ENOENT;
}

static void mr_set_current(struct mr_cq *cq)
{
	const struct ibv_wc *wc = &cq->batch[cq->head];

	cq->vcq.cq_ex.status = wc->status;
	cq->vcq.cq_ex.wr_id = wc->wr_id;
	cq->cur_valid = true;
}

static void mr_consume_current(struct mr_cq *cq)
{
	if (!cq->cur_valid)
		return;
	cq->head++;
	cq->count--;
	cq->cur_valid = false;
}

static int mr_start_poll(struct ibv_cq_ex *cq_ex,
			 struct ibv_poll_cq_attr *attr)
{
	struct mr_cq *cq = ex_to_mr_cq(cq_ex);
	int ret;

	if (attr->comp_mask)
		return EINVAL;

	pthread_mutex_lock(&cq->lock);
	if (!cq->count) {
		ret = mr_refill(cq);
		if (ret) {
			/* No end_poll() follows a failed start_poll(). */
			pthread_mutex_unlock(&cq->lock);
			return ret;
		}
	}
	mr_set_current(cq);
	return 0;
}

static int mr_next_poll(struct ibv_cq_ex *cq_ex)
{
	struct mr_cq *cq = ex_to_mr_cq(cq_ex);
	int ret;

	mr_consume_current(cq);
	if (!cq->count) {
		ret = mr_refill(cq);
		if (ret)
			return ret;
	}
	mr_set_current(cq);
	return 0;
}

static void mr_end_poll(struct ibv_cq_ex *cq_ex)
{
	struct mr_cq *cq = ex_to_mr_cq(cq_ex);

	mr_consume_current(cq);
	pthread_mutex_unlock(&cq->lock);
}

static const struct ibv_wc *mr_cur(struct ibv_cq_ex *cq_ex)
{
	const struct mr_cq *cq = ex_to_mr_cq(cq_ex);

	return &cq->batch[cq->head];
}

static enum ibv_wc_opcode mr_read_opcode(struct ibv_cq_ex *cq_ex)
{
	return mr_cur(cq_ex)->opcode;
}

static uint32_t mr_read_vendor_err(struct ibv_cq_ex *cq_ex)
{
	return mr_cur(cq_ex)->vendor_err;
}

static uint32_t mr_read_byte_len(struct ibv_cq_ex *cq_ex)
{
	return mr_cur(cq_ex)->byte_len;
}

/* Also the invalidated rkey (ibv_wc_read_invalidated_rkey). */
static __be32 mr_read_imm_data(struct ibv_cq_ex *cq_ex)
{
	return mr_cur(cq_ex)->imm_data;
}

static uint32_t mr_read_qp_num(struct ibv_cq_ex *cq_ex)
{
	return mr_cur(cq_ex)->qp_num;
}

static uint32_t mr_read_src_qp(struct ibv_cq_ex *cq_ex)
{
	return mr_cur(cq_ex)->src_qp;
}

static unsigned int mr_read_wc_flags(struct ibv_cq_ex *cq_ex)
{
	return mr_cur(cq_ex)->wc_flags;
}

static uint32_t mr_read_slid(struct ibv_cq_ex *cq_ex)
{
	return mr_cur(cq_ex)->slid;
}

static uint8_t mr_read_sl(struct ibv_cq_ex *cq_ex)
{
	return mr_cur(cq_ex)->sl;
}

static uint8_t mr_read_dlid_path_bits(struct ibv_cq_ex *cq_ex)
{
	return mr_cur(cq_ex)->dlid_path_bits;
}

static void mr_init_cq_ex_ops(struct ibv_cq_ex *cq_ex)
{
	cq_ex->start_poll = mr_start_poll;
	cq_ex->next_poll = mr_next_poll;
	cq_ex->end_poll = mr_end_poll;
	cq_ex->read_opcode = mr_read_opcode;
	cq_ex->read_vendor_err = mr_read_vendor_err;
	cq_ex->read_byte_len = mr_read_byte_len;
	cq_ex->read_imm_data = mr_read_imm_data;
	cq_ex->read_qp_num = mr_read_qp_num;
	cq_ex->read_src_qp = mr_read_src_qp;
	cq_ex->read_wc_flags = mr_read_wc_flags;
	cq_ex->read_slid = mr_read_slid;
	cq_ex->read_sl = mr_read_sl;
	cq_ex->read_dlid_path_bits = mr_read_dlid_path_bits;
	/*
	 * Completion timestamps, cvlan, flow tag and tag matching cannot be
	 * requested (create fails with EOPNOTSUPP): their readers stay NULL.
	 */
}

/* --- create / resize / destroy ------------------------------------------ */

static struct mr_cq *mr_cq_alloc(void)
{
	struct mr_cq *cq;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	if (pthread_mutex_init(&cq->lock, NULL)) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	return cq;
}

static void mr_cq_free(struct mr_cq *cq)
{
	pthread_mutex_destroy(&cq->lock);
	free(cq);
}

struct ibv_cq *mr_create_cq(struct ibv_context *ibctx, int cqe,
			    struct ibv_comp_channel *channel, int comp_vector)
{
	struct ib_uverbs_create_cq_resp resp = {};
	struct ibv_create_cq cmd = {};
	struct mr_cq *cq;
	int ret;

	/* A channel of another context is another file's descriptor. */
	if (channel && channel->context != ibctx) {
		errno = EINVAL;
		return NULL;
	}

	cq = mr_cq_alloc();
	if (!cq)
		return NULL;

	ret = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector, &cq->vcq.cq,
				&cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		mr_cq_free(cq);
		errno = ret;
		return NULL;
	}
	return &cq->vcq.cq;
}

struct ibv_cq_ex *mr_create_cq_ex(struct ibv_context *ibctx,
				  struct ibv_cq_init_attr_ex *attr)
{
	struct ib_uverbs_ex_create_cq_resp resp = {};
	struct ibv_create_cq_ex cmd = {};
	struct mr_cq *cq;
	int ret;

	/* Parent domains, overrun-ignoring CQs, timestamps, ...: not yet. */
	if ((attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					   IBV_CQ_INIT_ATTR_MASK_PD)) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	     attr->parent_domain) ||
	    (attr->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->channel && attr->channel->context != ibctx) {
		errno = EINVAL;
		return NULL;
	}

	cq = mr_cq_alloc();
	if (!cq)
		return NULL;
	cq->ex = true;

	ret = ibv_cmd_create_cq_ex(ibctx, attr, &cq->vcq, &cmd, sizeof(cmd),
				   &resp, sizeof(resp), 0);
	if (ret) {
		mr_cq_free(cq);
		errno = ret;
		return NULL;
	}

	mr_init_cq_ex_ops(&cq->vcq.cq_ex);
	return &cq->vcq.cq_ex;
}

int mr_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	return ibv_cmd_req_notify_cq(ibcq, solicited_only);
}

int mr_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct ib_uverbs_resize_cq_resp resp = {};
	struct ibv_resize_cq cmd = {};

	return ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), &resp,
				 sizeof(resp));
}

int mr_destroy_cq(struct ibv_cq *ibcq)
{
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;

	mr_cq_free(to_mr_cq(ibcq));
	return 0;
}
