/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * libmetaroce: rdma-core provider for the metaroce soft RDMA device.
 *
 * provider.c  registration with libibverbs, device matching, load checks
 * context.c   device contexts (open/close) and the verbs ops table
 * verbs.c     device, port, PD, MR and AH verbs
 * cq.c        completion queues, extended (ibv_start_poll) polling included
 * qp.c        queue pairs and posting, the ibv_wr_* send API included
 * rq.c        receive rings, for QPs and SRQs alike
 * srq.c       shared receive queues
 *
 * Objects are created through the kernel's uverbs commands (ibv_cmd_*).
 * Posting and polling go through rings in memory shared with the kernel
 * (RC send rings, receive rings, CQ rings) where the kernel offers them,
 * else through the uverbs commands too.
 */
#ifndef LIBMETAROCE_H
#define LIBMETAROCE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/metaroce-abi.h>

#include "pabi.h"

#define MRV_PROVIDER_NAME "metaroce"

#define mrv_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* One metaroce ib_device, as found by libibverbs. */
struct mrv_device {
	struct verbs_device vdev;
	/* The sysfs record libibverbs passed to alloc_device (load check). */
	const struct verbs_sysfs_dev *sysfs;
	/* The kernel's firmware version string (sysfs fw_ver), may be "". */
	char fw_ver[64];
};

/* One open device (ibv_open_device()). */
struct mrv_context {
	struct verbs_context vctx;
	/* METAROCE_UCONTEXT_* features the kernel offered (none defined yet). */
	uint32_t comp_mask;
};

struct mrv_pd {
	struct ibv_pd ibv_pd;
	uint32_t pdn;		/* the kernel's PD number */
};

/* Completions fetched per POLL_CQ command by the extended poll API. */
#define MRV_CQ_BATCH 16

struct mrv_cq {
	struct verbs_cq vcq;
	/*
	 * Created by create_cq_ex: the ibv_start_poll() API is available and
	 * serialised by @lock, which is held from a successful start_poll()
	 * to end_poll().  It fetches completions in batches; ibv_poll_cq()
	 * on the same CQ returns those before fetching more (and, as with
	 * any provider, must not be called between start_poll() and
	 * end_poll()).
	 */
	bool ex;
	pthread_mutex_t lock;
	/*
	 * The ring the kernel writes completions to (metaroce-abi.h), NULL
	 * if it gave none: then POLL_CQ fetches them.  Taking completions
	 * from it, resizing and cleaning hold @lock.
	 */
	struct metaroce_cq_ring *ring;
	size_t ring_size;		/* bytes mapped */
	uint32_t slots;			/* entries, a power of two */
	uint32_t consumer;		/* completions taken */
	uint32_t head;		/* next entry of batch[] to return */
	uint32_t count;		/* entries of batch[] not returned yet */
	bool cur_valid;		/* batch[head] is the current entry */
	struct ibv_wc batch[MRV_CQ_BATCH];
};

/* Work requests of an ibv_wr_start() ... ibv_wr_complete() sequence. */
struct mrv_wr_list {
	struct ibv_send_wr *wr;		/* grown as needed */
	struct ibv_sge *sge;		/* max_send_sge per work request */
	uint8_t *inl;			/* max_inline bytes per work request */
	uint32_t num;			/* work requests started */
	uint32_t cap;			/* entries allocated */
	int err;			/* first error; the list is dropped */
};

/*
 * A receive ring shared with the kernel (metaroce-abi.h), a QP's or an
 * SRQ's: posting writes work requests there under @lock.  The kernel reads
 * it when a message arrives; only a QP in the error state asks for a
 * doorbell.
 */
struct mrv_rq {
	struct metaroce_rq_ring *ring;	/* NULL: POST_RECV */
	size_t size;			/* bytes mapped; 0: in another's */
	uint32_t slots;			/* a power of two */
	uint32_t stride;		/* bytes per slot */
	uint32_t max_wr;		/* granted by the kernel */
	uint32_t max_sge;
	uint32_t prod;			/* work requests written */
	pthread_spinlock_t lock;
};

int mrv_rq_map(struct ibv_context *ibctx, struct mrv_rq *rq, uint32_t slots,
	       uint32_t stride, uint64_t offset, uint64_t size);
int mrv_rq_place(struct mrv_rq *rq, void *ring, uint64_t avail, uint32_t slots,
		 uint32_t stride);
void mrv_rq_unmap(struct mrv_rq *rq);
/*
 * Write @wr's chain to the ring; *kick says whether the doorbell must
 * ring.  Returns 0 or an errno (*bad_wr set).
 */
int mrv_rq_post(struct mrv_rq *rq, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad_wr, bool *kick);

struct mrv_qp {
	struct verbs_qp vqp;
	/* What the kernel granted: posting checks against it. */
	uint32_t max_send_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline;
	uint64_t send_ops_flags;	/* IBV_QP_EX_WITH_*, ibv_wr_* API */
	struct mrv_wr_list wrl;
	/*
	 * The send ring (RC QPs, when the kernel gave one): posting writes
	 * work requests there, under @sq_lock, and rings the doorbell only
	 * when the kernel asks for it.  @state is what modify_qp last set:
	 * posting checks it as the kernel's POST_SEND would.
	 */
	struct metaroce_sq_ring *sq_ring;
	size_t sq_ring_size;		/* bytes mapped */
	uint32_t sq_slots;		/* a power of two */
	uint32_t sq_stride;		/* bytes per slot */
	uint32_t sq_prod;		/* work requests written */
	uint64_t sq_last_post;		/* ns (CLOCK_MONOTONIC) */
	uint64_t sq_gap;		/* ns: mean time between posts */
	uint32_t sq_hint;		/* what sq_ring->hint holds */
	uint32_t ud_max_msg;		/* UD: bytes a datagram may carry, 0: ? */
	pthread_spinlock_t sq_lock;
	enum ibv_qp_state state;
	struct mrv_rq rq;		/* RC and UD QPs without an SRQ */
};

/* An AH and its number, which a UD send ring's work requests carry. */
struct mrv_ah {
	struct ibv_ah ibv_ah;
	uint32_t ahn;
};

struct mrv_srq {
	struct verbs_srq vsrq;
	uint32_t max_sge;		/* granted by the kernel */
	struct mrv_rq rq;
};

/*
 * Command layouts: the core uverbs part (pabi.h) followed by the metaroce
 * part from <rdma/metaroce-abi.h>, with no padding in between.
 */
struct mrv_get_context_cmd {
	struct ibv_get_context ibv;
	struct metaroce_alloc_ucontext_req drv;
};

struct mrv_get_context_resp {
	struct ibv_get_context_resp ibv;
	struct metaroce_alloc_ucontext_resp drv;
};

struct mrv_alloc_pd_resp {
	struct ibv_alloc_pd_resp ibv;
	struct metaroce_alloc_pd_resp drv;
};

#define MRV_CHECK_CMD_LAYOUT(type, core_type, drv_type)			\
	static_assert(offsetof(struct type, drv) == sizeof(struct core_type) && \
		      sizeof(struct type) == sizeof(struct core_type) +	\
					     sizeof(struct drv_type) &&	\
		      sizeof(struct type) % 4 == 0,				\
		      #type " has padding or an odd size")

struct mrv_create_cq_cmd {
	struct ibv_create_cq ibv;
	struct metaroce_create_cq_req drv;
};

struct mrv_create_cq_resp {
	struct ib_uverbs_create_cq_resp ibv;
	struct metaroce_create_cq_resp drv;
};

struct mrv_create_cq_ex_cmd {
	struct ibv_create_cq_ex ibv;
	struct metaroce_create_cq_req drv;
};

struct mrv_create_cq_ex_resp {
	struct ib_uverbs_ex_create_cq_resp ibv;
	struct metaroce_create_cq_resp drv;
};

struct mrv_resize_cq_cmd {
	struct ibv_resize_cq ibv;
	struct metaroce_resize_cq_req drv;
};

struct mrv_resize_cq_resp {
	struct ib_uverbs_resize_cq_resp ibv;
	struct metaroce_resize_cq_resp drv;
};

struct mrv_create_qp_cmd {
	struct ibv_create_qp ibv;
	struct metaroce_create_qp_req drv;
};

struct mrv_create_qp_resp {
	struct ib_uverbs_create_qp_resp ibv;
	struct metaroce_create_qp_resp drv;
};

struct mrv_create_ah_resp {
	struct ib_uverbs_create_ah_resp ibv;
	struct metaroce_create_ah_resp drv;
};

MRV_CHECK_CMD_LAYOUT(mrv_create_ah_resp, ib_uverbs_create_ah_resp,
		     metaroce_create_ah_resp);

struct mrv_create_srq_cmd {
	struct ibv_create_srq ibv;
	struct metaroce_create_srq_req drv;
};

struct mrv_create_srq_resp {
	struct ib_uverbs_create_srq_resp ibv;
	struct metaroce_create_srq_resp drv;
};

struct mrv_create_xsrq_cmd {
	struct ibv_create_xsrq ibv;
	struct metaroce_create_srq_req drv;
};

MRV_CHECK_CMD_LAYOUT(mrv_create_srq_cmd, ibv_create_srq,
		     metaroce_create_srq_req);
MRV_CHECK_CMD_LAYOUT(mrv_create_srq_resp, ib_uverbs_create_srq_resp,
		     metaroce_create_srq_resp);
MRV_CHECK_CMD_LAYOUT(mrv_create_xsrq_cmd, ibv_create_xsrq,
		     metaroce_create_srq_req);
MRV_CHECK_CMD_LAYOUT(mrv_create_qp_cmd, ibv_create_qp, metaroce_create_qp_req);
MRV_CHECK_CMD_LAYOUT(mrv_create_qp_resp, ib_uverbs_create_qp_resp,
		     metaroce_create_qp_resp);
MRV_CHECK_CMD_LAYOUT(mrv_create_cq_cmd, ibv_create_cq, metaroce_create_cq_req);
MRV_CHECK_CMD_LAYOUT(mrv_create_cq_resp, ib_uverbs_create_cq_resp,
		     metaroce_create_cq_resp);
MRV_CHECK_CMD_LAYOUT(mrv_create_cq_ex_cmd, ibv_create_cq_ex,
		     metaroce_create_cq_req);
MRV_CHECK_CMD_LAYOUT(mrv_create_cq_ex_resp, ib_uverbs_ex_create_cq_resp,
		     metaroce_create_cq_resp);
MRV_CHECK_CMD_LAYOUT(mrv_resize_cq_cmd, ibv_resize_cq, metaroce_resize_cq_req);
MRV_CHECK_CMD_LAYOUT(mrv_resize_cq_resp, ib_uverbs_resize_cq_resp,
		     metaroce_resize_cq_resp);

MRV_CHECK_CMD_LAYOUT(mrv_get_context_cmd, ibv_get_context,
		     metaroce_alloc_ucontext_req);
MRV_CHECK_CMD_LAYOUT(mrv_get_context_resp, ibv_get_context_resp,
		     metaroce_alloc_ucontext_resp);
MRV_CHECK_CMD_LAYOUT(mrv_alloc_pd_resp, ibv_alloc_pd_resp,
		     metaroce_alloc_pd_resp);

static inline struct mrv_device *to_mrv_dev(struct ibv_device *ibdev)
{
	return mrv_container_of(mrv_verbs_device(ibdev), struct mrv_device,
				vdev);
}

static inline struct mrv_context *to_mrv_ctx(struct ibv_context *ibctx)
{
	return mrv_container_of(ibctx, struct mrv_context, vctx.context);
}

static inline struct mrv_pd *to_mrv_pd(struct ibv_pd *ibpd)
{
	return mrv_container_of(ibpd, struct mrv_pd, ibv_pd);
}

static inline struct mrv_ah *to_mrv_ah(struct ibv_ah *ibah)
{
	return mrv_container_of(ibah, struct mrv_ah, ibv_ah);
}

static inline struct mrv_cq *to_mrv_cq(struct ibv_cq *ibcq)
{
	return mrv_container_of(ibcq, struct mrv_cq, vcq.cq);
}

static inline struct mrv_cq *ex_to_mrv_cq(struct ibv_cq_ex *cq_ex)
{
	return mrv_container_of(cq_ex, struct mrv_cq, vcq.cq_ex);
}

static inline struct mrv_qp *to_mrv_qp(struct ibv_qp *ibqp)
{
	return mrv_container_of(ibqp, struct mrv_qp, vqp.qp);
}

static inline struct mrv_qp *ex_to_mrv_qp(struct ibv_qp_ex *qp_ex)
{
	return mrv_container_of(qp_ex, struct mrv_qp, vqp.qp_ex);
}

static inline struct mrv_srq *to_mrv_srq(struct ibv_srq *ibsrq)
{
	return mrv_container_of(ibsrq, struct mrv_srq, vsrq.srq);
}

static inline struct verbs_mr *to_verbs_mr(struct ibv_mr *ibmr)
{
	return mrv_container_of(ibmr, struct verbs_mr, ibv_mr);
}

/* provider.c */
extern const struct verbs_device_ops mrv_device_ops;
void mrv_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* context.c */
struct verbs_context *mrv_alloc_context(struct ibv_device *ibdev, int cmd_fd,
					void *private_data);

/* verbs.c */
int mrv_query_device_ex(struct ibv_context *ibctx,
			const struct ibv_query_device_ex_input *input,
			struct ibv_device_attr_ex *attr, size_t attr_size);
int mrv_query_port(struct ibv_context *ibctx, uint8_t port_num,
		   struct ibv_port_attr *attr);
struct ibv_pd *mrv_alloc_pd(struct ibv_context *ibctx);
int mrv_dealloc_pd(struct ibv_pd *ibpd);
struct ibv_mr *mrv_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			  uint64_t hca_va, int access);
int mrv_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *ibpd,
		 void *addr, size_t length, int access);
int mrv_dereg_mr(struct verbs_mr *vmr);
struct ibv_ah *mrv_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr);
int mrv_destroy_ah(struct ibv_ah *ah);
/* Warns once per process that libibverbs broke a layout check. */
void mrv_layout_warn(struct ibv_context *ibctx, const char *what);

/* cq.c */
struct ibv_cq *mrv_create_cq(struct ibv_context *ibctx, int cqe,
			     struct ibv_comp_channel *channel, int comp_vector);
struct ibv_cq_ex *mrv_create_cq_ex(struct ibv_context *ibctx,
				   struct ibv_cq_init_attr_ex *attr);
int mrv_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc);
int mrv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
int mrv_resize_cq(struct ibv_cq *ibcq, int cqe);
int mrv_destroy_cq(struct ibv_cq *ibcq);
void mrv_cq_clean(struct ibv_cq *ibcq, uint32_t qp_num);

/* qp.c */
struct ibv_qp *mrv_create_qp(struct ibv_pd *ibpd,
			     struct ibv_qp_init_attr *attr);
struct ibv_qp *mrv_create_qp_ex(struct ibv_context *ibctx,
				struct ibv_qp_init_attr_ex *attr);
int mrv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr);
int mrv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		  int attr_mask);
int mrv_destroy_qp(struct ibv_qp *ibqp);
int mrv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr);
int mrv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr);
/*
 * Checks a receive list against @max_sge and posts it in batches through
 * @post: ibv_cmd_post_recv() or ibv_cmd_post_srq_recv() for @obj.
 */
typedef int (*mrv_post_recv_fn)(void *obj, struct ibv_recv_wr *wr,
				struct ibv_recv_wr **bad_wr);
int mrv_post_recv_list(mrv_post_recv_fn post, void *obj, uint32_t max_sge,
		       struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

/* srq.c */
struct ibv_srq *mrv_create_srq(struct ibv_pd *ibpd,
			       struct ibv_srq_init_attr *attr);
struct ibv_srq *mrv_create_srq_ex(struct ibv_context *ibctx,
				  struct ibv_srq_init_attr_ex *attr);
int mrv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		   int attr_mask);
int mrv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr);
int mrv_destroy_srq(struct ibv_srq *ibsrq);
int mrv_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);

#endif /* LIBMETAROCE_H */
