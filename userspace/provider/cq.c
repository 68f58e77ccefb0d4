// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Completion queues.
 *
 * The provider asks the kernel for a ring in shared memory
 * (<rdma/metaroce-abi.h>) and polls it without a system call.  A kernel
 * that offers no ring (an older metaroce.ko) is polled through the uverbs
 * POLL_CQ command instead, as follows.
 *
 * POLL_CQ hands back the kernel's struct ib_wc as it is.  Its wc_flags are
 * the kernel's IB_WC_* bits (include/rdma/ib_verbs.h), which uverbs does not
 * translate and which differ from libibverbs' IBV_WC_* from bit 2 on, so
 * every polled completion goes through mrv_wc_flags().
 *
 * Extended CQs (ibv_create_cq_ex) implement ibv_start_poll() and friends on
 * top of either: the CQ fetches a batch of completions and hands them out
 * one at a time.  Only the standard work completion fields are offered.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "libmetaroce.h"

/* Completions asked for per POLL_CQ command (libibverbs mallocs for it). */
#define MRV_POLL_CHUNK 64

/* The kernel's enum ib_wc_flags, as POLL_CQ reports them. */
enum {
	MRV_KWC_GRH = 1 << 0,
	MRV_KWC_WITH_IMM = 1 << 1,
	MRV_KWC_WITH_INVALIDATE = 1 << 2,
	MRV_KWC_IP_CSUM_OK = 1 << 3,
	/* WITH_SMAC, WITH_VLAN, WITH_NETWORK_HDR_TYPE: not in struct ibv_wc */
};

static unsigned int mrv_wc_flags(unsigned int kflags)
{
	unsigned int flags = 0;

	if (kflags & MRV_KWC_GRH)
		flags |= IBV_WC_GRH;
	if (kflags & MRV_KWC_WITH_IMM)
		flags |= IBV_WC_WITH_IMM;
	if (kflags & MRV_KWC_WITH_INVALIDATE)
		flags |= IBV_WC_WITH_INV;
	if (kflags & MRV_KWC_IP_CSUM_OK)
		flags |= IBV_WC_IP_CSUM_OK;
	return flags;
}

/*
 * Up to @ne completions from the kernel.  Returns how many, or -1 with errno
 * set if the first command failed: completions already taken from the
 * kernel are never dropped.
 */
static int mrv_kernel_poll(struct mrv_cq *cq, int ne, struct ibv_wc *wc)
{
	int total = 0;

	while (total < ne) {
		int want = ne - total < MRV_POLL_CHUNK ? ne - total :
							MRV_POLL_CHUNK;
		int i, n;

		n = ibv_cmd_poll_cq(&cq->vcq.cq, want, wc + total);
		if (n < 0 || n > want)
			return total ? total : -1;
		for (i = 0; i < n; i++)
			wc[total + i].wc_flags =
				mrv_wc_flags(wc[total + i].wc_flags);
		total += n;
		if (n < want)
			break;
	}
	return total;
}

/* --- the ring ------------------------------------------------------------ */

static struct metaroce_cqe *mrv_ring_entry(const struct mrv_cq *cq,
					   uint32_t index)
{
	return (struct metaroce_cqe *)((char *)cq->ring +
				       METAROCE_CQ_RING_ENTRIES) +
	       (index & (cq->slots - 1));
}

static void mrv_cqe_to_wc(const struct metaroce_cqe *e, struct ibv_wc *wc)
{
	unsigned int flags = 0;

	if (e->flags & METAROCE_CQE_GRH)
		flags |= IBV_WC_GRH;
	if (e->flags & METAROCE_CQE_WITH_IMM)
		flags |= IBV_WC_WITH_IMM;
	if (e->flags & METAROCE_CQE_WITH_INV)
		flags |= IBV_WC_WITH_INV;
	if (e->flags & METAROCE_CQE_IP_CSUM_OK)
		flags |= IBV_WC_IP_CSUM_OK;

	wc->wr_id = e->wr_id;
	wc->status = e->status;
	wc->opcode = e->opcode;
	wc->vendor_err = e->vendor_err;
	wc->byte_len = e->byte_len;
	/* Immediate data stays in network order; an rkey is in host order. */
	wc->imm_data = e->imm;
	wc->qp_num = e->qp_num;
	wc->src_qp = e->src_qp;
	wc->wc_flags = flags;
	wc->pkey_index = e->pkey_index;
	wc->slid = e->slid;
	wc->sl = e->sl;
	wc->dlid_path_bits = e->dlid_path_bits;
}

/* Up to @ne completions from the ring, with cq->lock held. */
static int mrv_ring_poll(struct mrv_cq *cq, int ne, struct ibv_wc *wc)
{
	uint32_t avail, i;

	/* The entries are complete once the index shows them. */
	avail = __atomic_load_n(&cq->ring->producer, __ATOMIC_ACQUIRE) -
		cq->consumer;
	if (avail > (uint32_t)ne)
		avail = ne;
	for (i = 0; i < avail; i++)
		mrv_cqe_to_wc(mrv_ring_entry(cq, cq->consumer + i), &wc[i]);
	if (avail) {
		cq->consumer += avail;
		/* The kernel may reuse the slots once this is seen. */
		__atomic_store_n(&cq->ring->consumer, cq->consumer,
				 __ATOMIC_RELEASE);
	}
	return avail;
}

/* Up to @ne completions, from the ring or the kernel (-1 and errno). */
static int mrv_fetch(struct mrv_cq *cq, int ne, struct ibv_wc *wc)
{
	return cq->ring ? mrv_ring_poll(cq, ne, wc) :
			  mrv_kernel_poll(cq, ne, wc);
}

int mrv_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct mrv_cq *cq = to_mrv_cq(ibcq);
	int n = 0, ret;

	if (ne < 0) {
		errno = EINVAL;
		return -1;
	}
	if (!cq->ex && !cq->ring)
		return mrv_kernel_poll(cq, ne, wc);

	/* Completions fetched by the extended API come first. */
	pthread_mutex_lock(&cq->lock);
	while (n < ne && cq->count) {
		wc[n++] = cq->batch[cq->head++];
		cq->count--;
	}
	if (n < ne) {
		ret = mrv_fetch(cq, ne - n, wc + n);
		if (ret > 0)
			n += ret;
		else if (ret < 0 && !n)
			n = -1;
	}
	pthread_mutex_unlock(&cq->lock);
	return n;
}

/* --- the extended poll API (lock held from start_poll to end_poll) --- */

static int mrv_refill(struct mrv_cq *cq)
{
	int n;

	n = mrv_fetch(cq, MRV_CQ_BATCH, cq->batch);
	if (n < 0)
		return errno ? errno : EIO;
	cq->head = 0;
	cq->count = n;
	return n ? 0 : ENOENT;
}

static void mrv_set_current(struct mrv_cq *cq)
{
	const struct ibv_wc *wc = &cq->batch[cq->head];

	cq->vcq.cq_ex.status = wc->status;
	cq->vcq.cq_ex.wr_id = wc->wr_id;
	cq->cur_valid = true;
}

static void mrv_consume_current(struct mrv_cq *cq)
{
	if (!cq->cur_valid)
		return;
	cq->head++;
	cq->count--;
	cq->cur_valid = false;
}

static int mrv_start_poll(struct ibv_cq_ex *cq_ex,
			  struct ibv_poll_cq_attr *attr)
{
	struct mrv_cq *cq = ex_to_mrv_cq(cq_ex);
	int ret;

	if (attr->comp_mask)
		return EINVAL;

	pthread_mutex_lock(&cq->lock);
	if (!cq->count) {
		ret = mrv_refill(cq);
		if (ret) {
			/* No end_poll() follows a failed start_poll(). */
			pthread_mutex_unlock(&cq->lock);
			return ret;
		}
	}
	mrv_set_current(cq);
	return 0;
}

static int mrv_next_poll(struct ibv_cq_ex *cq_ex)
{
	struct mrv_cq *cq = ex_to_mrv_cq(cq_ex);
	int ret;

	mrv_consume_current(cq);
	if (!cq->count) {
		ret = mrv_refill(cq);
		if (ret)
			return ret;
	}
	mrv_set_current(cq);
	return 0;
}

static void mrv_end_poll(struct ibv_cq_ex *cq_ex)
{
	struct mrv_cq *cq = ex_to_mrv_cq(cq_ex);

	mrv_consume_current(cq);
	pthread_mutex_unlock(&cq->lock);
}

static const struct ibv_wc *mrv_cur(struct ibv_cq_ex *cq_ex)
{
	const struct mrv_cq *cq = ex_to_mrv_cq(cq_ex);

	return &cq->batch[cq->head];
}

static enum ibv_wc_opcode mrv_read_opcode(struct ibv_cq_ex *cq_ex)
{
	return mrv_cur(cq_ex)->opcode;
}

static uint32_t mrv_read_vendor_err(struct ibv_cq_ex *cq_ex)
{
	return mrv_cur(cq_ex)->vendor_err;
}

static uint32_t mrv_read_byte_len(struct ibv_cq_ex *cq_ex)
{
	return mrv_cur(cq_ex)->byte_len;
}

/* Also the invalidated rkey (ibv_wc_read_invalidated_rkey). */
static __be32 mrv_read_imm_data(struct ibv_cq_ex *cq_ex)
{
	return mrv_cur(cq_ex)->imm_data;
}

static uint32_t mrv_read_qp_num(struct ibv_cq_ex *cq_ex)
{
	return mrv_cur(cq_ex)->qp_num;
}

static uint32_t mrv_read_src_qp(struct ibv_cq_ex *cq_ex)
{
	return mrv_cur(cq_ex)->src_qp;
}

static unsigned int mrv_read_wc_flags(struct ibv_cq_ex *cq_ex)
{
	return mrv_cur(cq_ex)->wc_flags;
}

static uint32_t mrv_read_slid(struct ibv_cq_ex *cq_ex)
{
	return mrv_cur(cq_ex)->slid;
}

static uint8_t mrv_read_sl(struct ibv_cq_ex *cq_ex)
{
	return mrv_cur(cq_ex)->sl;
}

static uint8_t mrv_read_dlid_path_bits(struct ibv_cq_ex *cq_ex)
{
	return mrv_cur(cq_ex)->dlid_path_bits;
}

static void mrv_init_cq_ex_ops(struct ibv_cq_ex *cq_ex)
{
	cq_ex->start_poll = mrv_start_poll;
	cq_ex->next_poll = mrv_next_poll;
	cq_ex->end_poll = mrv_end_poll;
	cq_ex->read_opcode = mrv_read_opcode;
	cq_ex->read_vendor_err = mrv_read_vendor_err;
	cq_ex->read_byte_len = mrv_read_byte_len;
	cq_ex->read_imm_data = mrv_read_imm_data;
	cq_ex->read_qp_num = mrv_read_qp_num;
	cq_ex->read_src_qp = mrv_read_src_qp;
	cq_ex->read_wc_flags = mrv_read_wc_flags;
	cq_ex->read_slid = mrv_read_slid;
	cq_ex->read_sl = mrv_read_sl;
	cq_ex->read_dlid_path_bits = mrv_read_dlid_path_bits;
	/*
	 * Completion timestamps, cvlan, flow tag and tag matching cannot be
	 * requested (create fails with EOPNOTSUPP): their readers stay NULL.
	 */
}

/* --- create / resize / destroy ------------------------------------------ */

static struct mrv_cq *mrv_cq_alloc(void)
{
	struct mrv_cq *cq;

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

static void mrv_cq_free(struct mrv_cq *cq)
{
	if (cq->ring)
		munmap(cq->ring, cq->ring_size);
	pthread_mutex_destroy(&cq->lock);
	free(cq);
}

/*
 * Maps the ring a create or resize response describes.  Returns the
 * mapping, NULL if the kernel gave no ring, or MAP_FAILED with errno set.
 */
static struct metaroce_cq_ring *
mrv_ring_map(struct ibv_context *ibctx, const struct metaroce_create_cq_resp *r)
{
	if (!(r->comp_mask & METAROCE_CQ_RING))
		return NULL;
	/* The kernel's word, but a bad one must not make us scribble. */
	if (!r->slots || (r->slots & (r->slots - 1)) ||
	    r->mmap_size < METAROCE_CQ_RING_ENTRIES +
			   (uint64_t)r->slots * sizeof(struct metaroce_cqe) ||
	    r->mmap_size > SIZE_MAX) {
		errno = EPROTO;
		return MAP_FAILED;
	}
	return mmap(NULL, r->mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    ibctx->cmd_fd, r->mmap_offset);
}

/* After a successful create: map the ring, or undo the create. */
static int mrv_cq_setup_ring(struct ibv_context *ibctx, struct mrv_cq *cq,
			     const struct metaroce_create_cq_resp *r)
{
	struct metaroce_cq_ring *ring = mrv_ring_map(ibctx, r);
	int ret = errno;

	if (ring == MAP_FAILED) {
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		return ret ? ret : ENOMEM;
	}
	cq->ring = ring;
	if (ring) {
		cq->ring_size = r->mmap_size;
		cq->slots = r->slots;
		cq->consumer = 0;
	}
	return 0;
}

struct ibv_cq *mrv_create_cq(struct ibv_context *ibctx, int cqe,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct mrv_create_cq_resp resp = {};
	struct mrv_create_cq_cmd cmd = {};
	struct mrv_cq *cq;
	int ret;

	/* A channel of another context is another file's descriptor. */
	if (channel && channel->context != ibctx) {
		errno = EINVAL;
		return NULL;
	}

	cq = mrv_cq_alloc();
	if (!cq)
		return NULL;

	cmd.drv.comp_mask = METAROCE_CQ_RING;
	ret = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector, &cq->vcq.cq,
				&cmd.ibv, sizeof(cmd), &resp.ibv, sizeof(resp));
	if (!ret)
		ret = mrv_cq_setup_ring(ibctx, cq, &resp.drv);
	if (ret) {
		mrv_cq_free(cq);
		errno = ret;
		return NULL;
	}
	return &cq->vcq.cq;
}

struct ibv_cq_ex *mrv_create_cq_ex(struct ibv_context *ibctx,
				   struct ibv_cq_init_attr_ex *attr)
{
	struct mrv_create_cq_ex_resp resp = {};
	struct mrv_create_cq_ex_cmd cmd = {};
	struct mrv_cq *cq;
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

	cq = mrv_cq_alloc();
	if (!cq)
		return NULL;
	cq->ex = true;

	cmd.drv.comp_mask = METAROCE_CQ_RING;
	ret = mrv_cmd_create_cq_ex(ibctx, attr, &cq->vcq, &cmd.ibv, sizeof(cmd),
				   &resp.ibv, sizeof(resp), 0);
	if (!ret)
		ret = mrv_cq_setup_ring(ibctx, cq, &resp.drv);
	if (ret) {
		mrv_cq_free(cq);
		errno = ret;
		return NULL;
	}

	mrv_init_cq_ex_ops(&cq->vcq.cq_ex);
	return &cq->vcq.cq_ex;
}

int mrv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	return ibv_cmd_req_notify_cq(ibcq, solicited_only);
}

int mrv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct mrv_cq *cq = to_mrv_cq(ibcq);
	struct mrv_resize_cq_resp resp = {};
	struct mrv_resize_cq_cmd cmd = {};
	struct metaroce_cq_ring *ring;
	int ret;

	if (!cq->ring)
		return ibv_cmd_resize_cq(ibcq, cqe, &cmd.ibv, sizeof(cmd.ibv),
					 &resp.ibv, sizeof(resp.ibv));

	/*
	 * The kernel moves the completions not taken to a new ring: none
	 * may be taken meanwhile.
	 */
	pthread_mutex_lock(&cq->lock);
	cmd.drv.comp_mask = METAROCE_CQ_RING;
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd.ibv, sizeof(cmd), &resp.ibv,
				sizeof(resp));
	if (!ret) {
		ring = mrv_ring_map(ibcq->context, &resp.drv);
		if (!ring || ring == MAP_FAILED) {
			/*
			 * The old ring is not written any more and the new
			 * one cannot be reached: the CQ is lost.
			 */
			ret = ring ? errno : EPROTO;
			munmap(cq->ring, cq->ring_size);
			cq->ring = NULL;
		} else {
			munmap(cq->ring, cq->ring_size);
			cq->ring = ring;
			cq->ring_size = resp.drv.mmap_size;
			cq->slots = resp.drv.slots;
			cq->consumer = 0;
		}
	}
	pthread_mutex_unlock(&cq->lock);
	return ret;
}

int mrv_destroy_cq(struct ibv_cq *ibcq)
{
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;

	mrv_cq_free(to_mrv_cq(ibcq));
	return 0;
}

/*
 * mrv_cq_clean: drops the completions of QP @qp_num, which was destroyed or
 * reset, from the CQ (the kernel does it for CQs without a ring).  The
 * others keep their order.  In the ring, the kept entries move towards the
 * producer end and the consumer index advances past the freed slots, so
 * the kernel, which writes only from its producer index on, never sees a
 * slot in use as free.
 */
void mrv_cq_clean(struct ibv_cq *ibcq, uint32_t qp_num)
{
	struct mrv_cq *cq = to_mrv_cq(ibcq);
	uint32_t i, n, drop = 0, prod;

	if (!cq->ring)
		return;
	pthread_mutex_lock(&cq->lock);
	for (i = n = 0; i < cq->count; i++) {
		const struct ibv_wc *wc = &cq->batch[cq->head + i];

		if (wc->qp_num != qp_num)
			cq->batch[cq->head + n++] = *wc;
	}
	cq->count = n;

	prod = __atomic_load_n(&cq->ring->producer, __ATOMIC_ACQUIRE);
	for (i = prod; i != cq->consumer; i--) {
		struct metaroce_cqe *e = mrv_ring_entry(cq, i - 1);

		if (e->qp_num == qp_num)
			drop++;
		else if (drop)
			*mrv_ring_entry(cq, i - 1 + drop) = *e;
	}
	if (drop) {
		cq->consumer += drop;
		__atomic_store_n(&cq->ring->consumer, cq->consumer,
				 __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&cq->lock);
}
