/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Verbs objects of metaroce.ko and the interfaces between their files.
 *
 *  mem.c    memory regions (struct mr_mem): user MRs pinned with ib_umem,
 *           kernel DMA MRs, fast-registration MRs; key table; bounds- and
 *           rights-checked copies to and from registered memory and
 *           scatter/gather lists.
 *  cq.c     completion queues (struct mr_cq).
 *  mmap.c   buffers shared with a process (struct mr_umap).
 *  srq.c    shared receive queues (struct mr_srq).
 *  ah.c     address handles (struct mr_ah).
 *  qp.c     queue pairs (struct mr_ibqp): creation, the state machine,
 *           the NAPI service; RC QPs run on a peer's engine connection, UD
 *           (and the GSI QP1) directly on the device (ud.c). Its send queue
 *           is sq.c's, its receive queue rq.c's, its completions comp.c's
 *           (qp.h: what those share).
 *  peer.c   peers (struct mr_peer): one transport engine connection per
 *           (device, local address, remote address), its timer and the
 *           engine callbacks (transmit, completion, placement).
 *  napi.c   the device's NAPI context: receive batches, ACK coalescing,
 *           transmission, timers, the fair-share runs.
 *  kick.c   the work lists NAPI serves, and the kicks that fill them.
 *  fair.c   the fair share's active senders and scratch.
 *  xmit.c   building and routing UDP packets.
 *
 * Locking (in order):
 *  - peer->lock (spin, BH) protects the engine connection and the engine
 *    state of every QP attached to it. Engine callbacks run under it.
 *  - qp->sq_lock, qp->rq_lock, srq->lock, cq->lock (spin, irqsave: kernel
 *    ULPs may post or poll from any context) protect the rings.
 *  - MRs are found by key under RCU and pinned by a reference for the time
 *    of one copy; dereg waits for those references to drop.
 */
#ifndef _METAROCE_OBJECTS_H
#define _METAROCE_OBJECTS_H

#include <linux/completion.h>
#include <linux/hrtimer.h>
#include <linux/in6.h>
#include <linux/list.h>
#include <linux/refcount.h>
#include <linux/rhashtable-types.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <net/dst_cache.h>

#include <metaroce/mr_engine.h>

#include "compat.h"

struct mr_dev;
struct sk_buff;

/* No driver-specific request is defined for @udata: true if none was sent. */
static inline bool mr_udata_no_request(struct ib_udata *udata)
{
	return !udata || !udata->inlen ||
	       ib_is_udata_cleared(udata, 0, udata->inlen);
}

/*
 * The optional driver request of create_cq, resize_cq, create_qp and
 * create_srq: { u32 comp_mask; u32 reserved; } (uapi/rdma/metaroce-abi.h).
 * Sets
 * @comp_mask (0 without a request). -EOPNOTSUPP for what a newer provider
 * may ask (bits outside @known, a longer request that is not zeroes),
 * -EINVAL for the reserved field set, -EFAULT.
 */
int mr_udata_request(struct ib_udata *udata, u32 known, u32 *comp_mask);

/* ----------------------------------------------------------------- mem.c */

enum mr_mem_type {
	MR_MEM_DMA,		/* ib_get_dma_mr(): kernel virtual addresses */
	MR_MEM_USER,		/* reg_user_mr(): pinned user pages */
	MR_MEM_FAST,		/* alloc_mr() + map_mr_sg() + IB_WR_REG_MR */
};

struct mr_mem {
	struct ib_mr ibmr;
	struct mr_dev *dev;
	enum mr_mem_type type;
	u32 index;		/* key >> 8: index in dev->mrs */
	u32 key;		/* lkey == rkey; low byte changes on REG_MR */
	refcount_t ref;		/* the table's, plus one per user */
	struct completion released;
	struct rcu_head rcu;	/* lookups may still see it after dereg */
	/* Fast-reg MRs: serialises REG_MR and invalidation. */
	spinlock_t lock;
	/* Fast-registration MRs are unusable until registered. */
	bool valid;
	int access;		/* IB_ACCESS_* */
	u64 iova;
	u64 length;
	struct ib_umem *umem;
	/* Pages: user MRs (PAGE_SIZE each) and fast-reg MRs (page_size). */
	struct page **pages;	/* MR_MEM_USER */
	u64 *addrs;		/* MR_MEM_FAST: kernel virtual addresses */
	u32 npages;
	u32 max_pages;
	u32 page_shift;
	u32 first_offset;	/* offset of iova in the first page */
};

static inline struct mr_mem *to_mr_mem(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct mr_mem, ibmr);
}

/*
 * Look up an MR by lkey (local) or rkey (remote) and take a reference.
 * Checks the key's low byte, validity (fast-reg), that the PD matches (when
 * @pd is not NULL; DMA MRs, which reach all kernel memory, are never found
 * with a NULL @pd), that every bit of @access is granted (0 for a local
 * read), and that [iova, iova + len) lies inside the MR. Returns NULL
 * otherwise. Safe in any context. Release with mr_mem_put().
 */
struct mr_mem *mr_mem_get(struct mr_dev *dev, struct ib_pd *pd, u32 key,
			  int access, u64 iova, u64 len);
void mr_mem_put(struct mr_mem *mem);
/* Copy to/from registered memory; the range must have been checked. */
void mr_mem_write(struct mr_mem *mem, u64 iova, const void *src, u32 len);
void mr_mem_read(struct mr_mem *mem, u64 iova, void *dst, u32 len);
/* Copy @len bytes at @offset of @skb into registered memory. */
int mr_mem_write_skb(struct mr_mem *mem, u64 iova, const struct sk_buff *skb,
		     int offset, u32 len);
/* Atomically (per device) execute an 8-byte atomic at @iova. */
u64 mr_mem_atomic(struct mr_mem *mem, u64 iova, bool cmp_swap, u64 swap_add,
		  u64 compare);
/* Invalidate the MR named by @key (SEND_WITH_INV, LOCAL_INV). */
int mr_mem_invalidate(struct mr_dev *dev, struct ib_pd *pd, u32 key);
/* IB_WR_REG_MR */
int mr_mem_fast_reg(struct mr_dev *dev, struct ib_pd *pd,
		    const struct ib_reg_wr *wr);

struct ib_mr *mr_get_dma_mr(struct ib_pd *pd, int access);
struct ib_mr *mr_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
			     u64 iova, int access, struct ib_dmah *dmah,
			     struct ib_udata *udata);
struct ib_mr *mr_alloc_mr(struct ib_pd *pd, enum ib_mr_type type,
			  u32 max_num_sg);
int mr_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		 unsigned int *sg_offset);
struct ib_mr *mr_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				u64 length, u64 iova, int access,
				struct ib_pd *pd, struct ib_udata *udata);
int mr_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
void mr_mem_table_init(struct mr_dev *dev);
void mr_mem_table_destroy(struct mr_dev *dev);

/* ------------------------------------------------------------------ cq.c */

struct mr_umap;
void *mr_umap_alloc(struct ib_ucontext *uctx, size_t size,
		    struct mr_umap **umap, u64 *offset);
void mr_umap_remove(struct mr_umap *umap);
int mr_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma);
void mr_mmap_free(struct rdma_user_mmap_entry *entry);

struct metaroce_cq_ring;
struct metaroce_sq_ring;

struct mr_cq {
	struct ib_cq ibcq;
	spinlock_t lock;
	/* Kernel CQs, and user CQs of providers that asked for no ring. */
	struct ib_wc *queue;	/* ring of entries */
	u32 head;		/* next to poll */
	u32 count;		/* entries queued */
	/* User CQs with a ring (uapi/rdma/metaroce-abi.h) instead. */
	struct metaroce_cq_ring *ring;
	struct mr_umap *umap;
	u32 slots;		/* entries in the ring, a power of two */
	u32 producer;		/* the kernel's copy, never read back */
	/* Both. */
	u32 size;		/* completions it holds (== ibcq.cqe) */
	u8 notify;		/* 0, IB_CQ_NEXT_COMP or IB_CQ_SOLICITED */
	bool overflow;
};

static inline struct mr_cq *to_mr_cq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct mr_cq, ibcq);
}

/*
 * Queue a completion; calls the completion handler if the CQ is armed for
 * it. On overflow the entry is lost, IB_EVENT_CQ_ERR is raised once, and
 * -ENOSPC returned: QPs push through mr_qp_cq_push(), which then fails the
 * QP. Any context.
 */
int mr_cq_push(struct mr_cq *cq, const struct ib_wc *wc, bool solicited);
void mr_cq_clean(struct mr_cq *cq, struct ib_qp *qp);

int mr_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		 mr_create_cq_arg *arg);
int mr_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int mr_resize_cq(struct ib_cq *ibcq, unsigned int cqe, struct ib_udata *udata);
int mr_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int mr_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);

/* ------------------------------------------------- receive WQEs, srq.c */

struct mr_rwqe {
	u64 wr_id;
	u32 num_sge;
	u32 length;		/* sum of the SGE lengths */
	struct ib_sge sge[];
};

/*
 * A ring of receive WQEs, used by RQs and SRQs. head and tail run free
 * (u32), so size is a power of two: mr_rring_init() rounds it up.
 */
struct mr_rring {
	void *buf;
	u32 size;		/* slots, a power of two */
	u32 stride;		/* bytes per slot */
	u32 max_sge;
	u32 head;		/* oldest (next to consume) */
	u32 tail;		/* next free */
};

static inline struct mr_rwqe *mr_rring_slot(struct mr_rring *r, u32 idx)
{
	return r->buf + (size_t)(idx % r->size) * r->stride;
}

static inline u32 mr_rring_count(const struct mr_rring *r)
{
	return r->tail - r->head;
}

/* At least @size slots of @max_sge SGEs (process context). */
int mr_rring_init(struct mr_rring *r, u32 size, u32 max_sge);
void mr_rring_free(struct mr_rring *r);
/*
 * Append @wr (caller holds the ring's lock); -ENOMEM when full, -EINVAL for
 * a bad SGE count or SGE lengths whose sum overflows a u32.
 */
int mr_rring_post(struct mr_rring *r, const struct ib_recv_wr *wr);

/*
 * A receive ring shared with a process (uapi/rdma/metaroce-abi.h): the
 * process writes receive work requests into it, the kernel copies them
 * out (a QP's into its struct mr_rring, an SRQ's into the QP that takes
 * one).
 */
struct mr_urq {
	struct metaroce_rq_ring *ring;	/* NULL: no ring */
	struct mr_umap *umap;
	u32 slots;			/* a power of two */
	u32 stride;
};

/*
 * Create a ring of @slots (a power of two) for work requests of up to
 * @max_sge SGEs and fill in the response fields (process context).
 */
int mr_urq_create(struct mr_urq *u, struct ib_udata *udata, u32 slots,
		  u32 max_sge, u32 *stride, u64 *offset, u64 *size);
size_t mr_urq_bytes(u32 slots, u32 max_sge);
void mr_urq_place(struct mr_urq *u, void *ring, u32 slots, u32 max_sge);
void mr_urq_remove(struct mr_urq *u);
/* Copy work request @idx to @out and check it, once. */
void mr_urq_copy(const struct mr_urq *u, u32 idx, struct mr_rwqe *out,
		 u32 max_sge);

struct mr_srq {
	struct ib_srq ibsrq;
	spinlock_t lock;
	struct mr_rring ring;	/* without a buffer when there is a user ring */
	u32 limit;		/* armed SRQ limit, 0 if not armed */
	struct mr_urq user;
	u32 taken;		/* work requests taken from the user ring */
	/*
	 * Work requests a QP took and gave back unused (reset, destroy):
	 * struct mr_srq_bound blocks, taken again before the ring's.
	 */
	struct list_head given;
	u32 given_cnt;
};

/*
 * The receives a QP attached to an SRQ took from it, by SSN: slot
 * ssn % MR_MSG_WND, for the SSNs from the QP's rq_ssn (the next to
 * complete) on. Under the QP's rq_lock; given back to the SRQ whole.
 */
struct mr_srq_bound {
	struct list_head node;	/* srq->given, once given back */
	u64 valid;		/* bit i: slot i holds a receive */
	u32 stride;		/* bytes per slot */
	u8 slots[];		/* MR_MSG_WND struct mr_rwqe */
};

static inline struct mr_rwqe *mr_srq_bound_slot(struct mr_srq_bound *b,
						u32 i)
{
	return (struct mr_rwqe *)(b->slots + (size_t)(i % MR_MSG_WND) *
				  b->stride);
}

/* An SRQ's receives for @qp: room for MR_MSG_WND (process context). */
struct mr_srq_bound *mr_srq_bound_alloc(struct mr_srq *srq);
/* Give the receives in @b back to @srq, which then owns @b. Any context. */
void mr_srq_give_back(struct mr_srq *srq, struct mr_srq_bound *b);

static inline struct mr_srq *to_mr_srq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct mr_srq, ibsrq);
}

/*
 * Take the oldest receive WQE into @out (which has max_sge SGEs room).
 * Returns 0, or -ENOENT when the SRQ is empty. Any context.
 */
int mr_srq_take(struct mr_srq *srq, struct mr_rwqe *out);

int mr_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		  struct ib_udata *udata);
int mr_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		  enum ib_srq_attr_mask mask, struct ib_udata *udata);
int mr_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int mr_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int mr_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		     const struct ib_recv_wr **bad_wr);

/* ------------------------------------------------------------------ ah.c */

/* Where packets for a GID go: IPv4 or IPv6, both as in6_addr (v4-mapped). */
struct mr_addr {
	struct in6_addr local;
	struct in6_addr remote;
	bool ipv4;
};

/*
 * What a UD send ring's work request gets from a user AH, by number: freed
 * after an RCU grace period, as ib_core frees the AH itself at once.
 */
struct mr_ah_ref {
	struct mr_addr addr;
	struct ib_pd *pd;
	u8 tclass;
	struct rcu_head rcu;
};

struct mr_ah {
	struct ib_ah ibah;
	struct mr_addr addr;
	u8 tclass;		/* GRH traffic class: DSCP << 2, ECN bits unused */
	u8 hop_limit;
	struct rdma_ah_attr attr;	/* for query_ah; no sgid_attr */
	struct mr_ah_ref *ref;	/* user AHs, in dev->ahs at ahn */
	u32 ahn;
};

/*
 * The address of user AH @ahn if it exists and belongs to @pd (for a send
 * ring's work request): 0 or -EINVAL. Any context.
 */
int mr_ah_lookup(struct mr_dev *dev, u32 ahn, struct ib_pd *pd,
		 struct mr_addr *addr, u8 *tclass);

static inline struct mr_ah *to_mr_ah(struct ib_ah *ibah)
{
	return container_of(ibah, struct mr_ah, ibah);
}

/* Fill @addr from an address vector (needs a GRH with a valid sgid_attr). */
int mr_addr_from_ah_attr(const struct rdma_ah_attr *attr,
			 struct mr_addr *addr);

int mr_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		 struct ib_udata *udata);
int mr_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr);
int mr_destroy_ah(struct ib_ah *ibah, u32 flags);

/* --------------------------------------------------------------- mcast.c */

int mr_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int mr_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
void mr_mcast_loop(struct mr_dev *dev, const struct sk_buff *skb,
		   const struct mr_addr *addr, u16 sport, u8 tos);
void mr_mcast_init(struct mr_dev *dev);
void mr_mcast_destroy(struct mr_dev *dev);


/* ------------------------------------------------------------------ qp.c */

/* A send work request as queued (copied at post time). */
struct mr_swqe {
	u64 wr_id;
	u64 remote_addr;
	u64 compare_add;
	u64 swap;
	u32 opcode;		/* enum ib_wr_opcode */
	u32 send_flags;
	u32 num_sge;
	u32 length;		/* bytes of payload */
	u32 rkey;
	u32 ex;			/* imm_data (host order) or rkey to invalidate */
	/* UD */
	u32 remote_qpn;
	u32 remote_qkey;
	struct mr_addr addr;
	u8 tclass;
	/* REG_MR */
	struct ib_mr *reg_mr;
	u32 reg_key;
	int reg_access;
	/* completion */
	u8 status;		/* enum ib_wc_status once done */
	bool done;
	bool inlined;		/* payload is in data[], not sge[] */
	bool refused;		/* from a send ring, and invalid */
	union {
		DECLARE_FLEX_ARRAY(struct ib_sge, sge);
		DECLARE_FLEX_ARRAY(u8, data);
	};
};

/* Send queue ring: head <= eng <= tail (free-running u32 indices). */
struct mr_sring {
	void *buf;
	u32 size;		/* slots */
	u32 stride;
	u32 head;		/* oldest not completed */
	u32 eng;		/* next to hand to the engine (or send, UD) */
	u32 tail;		/* next free */
};

static inline struct mr_swqe *mr_sring_slot(struct mr_sring *r, u32 idx)
{
	return r->buf + (size_t)(idx % r->size) * r->stride;
}

struct mr_peer;

/*
 * mr_ibqp.retire bits: one context reports send completions at a time
 * (RETIRING, RETIRE_AGAIN); a completion was lost or refused, the QP
 * fails in the NAPI context (BROKEN); IB_EVENT_QP_LAST_WQE_REACHED was
 * raised for this error state (LAST_WQE).
 */
enum {
	MR_QP_RETIRING,
	MR_QP_RETIRE_AGAIN,
	MR_QP_BROKEN,
	MR_QP_LAST_WQE,
};

struct mr_ibqp {
	struct ib_qp ibqp;
	struct mr_qp eng;		/* RC: engine state, under peer->lock */
	struct mr_dev *dev;
	struct mr_peer *peer;		/* RC, from RTR on */
	refcount_t ref;			/* table's + lookups by the data path */
	struct completion released;
	struct mutex state_lock;	/* modify/query/destroy */
	enum ib_qp_state state;		/* written under state_lock + locks */
	enum ib_qp_state last_state;	/* for ib_modify_qp_is_ok */

	spinlock_t sq_lock;
	struct mr_sring sq;
	u32 sq_gen;			/* resets of sq, under sq_lock */
	u32 max_inline;
	u32 max_send_sge;
	bool sq_sig_all;
	bool sq_draining;		/* SQD */
	bool sqd_notified;		/* IB_EVENT_SQ_DRAINED sent */
	unsigned long retire;		/* MR_QP_RETIRING, MR_QP_RETIRE_AGAIN */
	struct list_head work_node;	/* dev->qp_work: has new send WQEs */
	bool on_work;			/* under dev->work_lock */
	/* User RC and UD QPs with a send ring (uapi/rdma/metaroce-abi.h). */
	struct metaroce_sq_ring *sq_ring;	/* its slots: sq.size */
	bool sq_answered;		/* peer data since the last doorbell */
	struct mr_umap *sq_umap;
	u32 sq_ring_stride;
	u64 sq_active;			/* ns: work requests last taken */
	struct hrtimer sq_linger;	/* looks at the ring while idle */
	struct work_struct sq_doorbell;	/* takes them for the doorbell */

	spinlock_t rq_lock;
	struct mr_rring rq;		/* unless ibqp.srq */
	struct mr_urq rq_user;		/* user QPs: rq's slots, mirrored */
	u32 rq_ssn;			/* SSN of the next receive to complete */
	struct mr_srq_bound *srq_bound;	/* receives taken from the SRQ */

	/* attributes (query_qp) */
	struct ib_qp_attr attr;
	struct mr_addr addr;		/* RC: from the RTR address vector */
	u8 tclass;			/* RC: its traffic class (DSCP << 2) */
};

static inline struct mr_ibqp *to_mr_ibqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct mr_ibqp, ibqp);
}

static inline struct mr_ibqp *mr_ibqp_of_eng(struct mr_qp *eqp)
{
	return container_of(eqp, struct mr_ibqp, eng);
}

int mr_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		 struct ib_udata *udata);
int mr_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_udata *udata);
int mr_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		struct ib_qp_init_attr *init);
int mr_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
/* sq.c, rq.c */
int mr_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		 const struct ib_send_wr **bad_wr);
int mr_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		 const struct ib_recv_wr **bad_wr);

/* Copy between an SGE list (lkeys, checked per SGE) and a buffer/skb (mem.c). */
int mr_sges_read(struct mr_dev *dev, struct ib_pd *pd,
		 const struct ib_sge *sge, u32 num_sge, u32 offset, void *to,
		 u32 len);
int mr_sges_write(struct mr_dev *dev, struct ib_pd *pd,
		  const struct ib_sge *sge, u32 num_sge, u32 offset,
		  const void *from, const struct sk_buff *skb, int skb_off,
		  u32 len);

/* Data path entry points (napi.c, peer.c); qp.c unless named. */
struct mr_ibqp *mr_qp_get(struct mr_dev *dev, u32 qpn);
void mr_qp_put(struct mr_ibqp *qp);
/* Hand queued send WQEs to the engine (RC) or send them (UD). */
void mr_qp_service(struct mr_ibqp *qp);
/* UD/GSI receive of a decoded UD_SEND packet (ud.c). */
void mr_qp_ud_recv(struct mr_ibqp *qp, const struct mr_hdr *h,
		   struct sk_buff *skb, int hlen);
/* The QPs attached to a multicast group, by number (mcast.c). */
int mr_mcast_qpns(struct mr_dev *dev, const struct in6_addr *addr, u32 *qpn,
		  int max);
/* Engine callbacks for a QP (called under its peer's lock). */
void mr_qp_eng_complete(struct mr_ibqp *qp, const struct mr_cqe *cqe);
void mr_qp_eng_error(struct mr_ibqp *qp, int status);
int mr_qp_eng_bind_recv(struct mr_ibqp *qp, u32 ssn, u64 *cookie,
			u32 *len);	/* rq.c */
/*
 * Queue @wc of @qp on @cq; if the CQ is full (the completion is lost),
 * the QP fails (in the NAPI context). Any context. comp.c.
 */
void mr_qp_cq_push(struct mr_ibqp *qp, struct mr_cq *cq,
		   const struct ib_wc *wc, bool solicited);
/* The receive WQE an engine receive cookie names (rq.c). */
struct mr_rwqe *mr_qp_recv_wqe(struct mr_ibqp *qp, u64 cookie);

/* ---------------------------------------------------------------- peer.c */

enum {
	MR_PEER_WORK_TIMER,	/* engine timer expired */
	MR_PEER_WORK_TX,	/* more to send */
};

struct mr_peer {
	spinlock_t lock;		/* the engine connection */
	struct mr_conn conn;
	struct mr_seg *segs;
	struct mr_dev *dev;
	struct mr_addr addr;
	struct hlist_node node;		/* dev->peers, RCU */
	unsigned int nqps;		/* attached QPs, under dev->peers_lock */
	u64 idle_since;			/* ns; when nqps became 0 */
	/* In dev->peers_idle while nqps is 0, under dev->peers_lock. */
	struct list_head idle_node;
	u64 mem;			/* bytes it holds (dev->peers_mem) */
	struct rcu_head rcu;		/* freed to make room: mr_peer_attach() */
	struct hrtimer timer;
	u64 timer_at;			/* armed expiry, U64_MAX if none */
	bool dead;			/* retired: no timer, no work */
	unsigned long work;		/* MR_PEER_WORK_* bits */
	struct list_head work_node;	/* dev->peer_work */
	struct list_head rx_node;	/* NAPI-private: touched this poll */
	struct mr_peer *gc_next;	/* retired, waiting for RCU; GC-private */
	/* On dev->fs_active (a sender with a demand); fs_on under lock. */
	struct list_head fs_node;
	bool fs_on;
	struct dst_cache dst[MR_MAX_PATHS];
	u16 dst_sport[MR_MAX_PATHS];
};

/*
 * Find or create the peer for @addr and attach a QP to it (RTR). NULL when
 * it cannot be created (memory, or the device's peer limits: see peer.c).
 */
struct mr_peer *mr_peer_attach(struct mr_dev *dev, const struct mr_addr *addr);
void mr_peer_detach(struct mr_peer *peer);
/* Find under RCU (data path); no reference taken. */
struct mr_peer *mr_peer_lookup_rcu(struct mr_dev *dev,
				   const struct in6_addr *local,
				   const struct in6_addr *remote);
/* After engine work under peer->lock: re-arm the timer, queue more TX. */
void mr_peer_settle(struct mr_peer *peer, int sent, int budget);
/* Run the engine's sender (peer->lock held). */
int mr_peer_tx(struct mr_peer *peer, int budget);
void mr_peer_timer_run(struct mr_peer *peer);
int mr_peers_init(struct mr_dev *dev);
void mr_peers_destroy(struct mr_dev *dev);
/* Engine counters, summed over a device's peers. */
struct mr_totals {
	u64 stats[MR_ST_MAX];
	u64 drops[MR_DROP_NR_REASONS];
	u64 path_tx[MR_MAX_PATHS];
	u64 path_retx[MR_MAX_PATHS];
};

void mr_peers_totals(struct mr_dev *dev, struct mr_totals *t);
int mr_peers_reconfigure(struct mr_dev *dev, const struct mr_conn_cfg *cfg,
			 bool shape);

/* ---------------------------------------------------------------- napi.c */

int mr_napi_init(struct mr_dev *dev);
void mr_napi_destroy(struct mr_dev *dev);
/* Queue a received packet (skb->data at the MetaRoCE header). */
void mr_napi_rx(struct mr_dev *dev, struct sk_buff *skb, bool ce);

/* ---------------------------------------------------------------- kick.c */

/* Ask the NAPI context to service a QP's send queue / a peer. */
void mr_napi_kick_qp(struct mr_ibqp *qp);
void mr_napi_kick_peer(struct mr_peer *peer, int work_bit);

/* ---------------------------------------------------------------- fair.c */

int mr_fair_init(struct mr_dev *dev);
void mr_fair_destroy(struct mr_dev *dev);
/* Room in the fair share's scratch for @peers peers (peers_lock held). */
int mr_fs_reserve(struct mr_dev *dev, u32 peers);
/* A peer the engine counted an arrival of joins the active set (peer->lock). */
void mr_fs_join_peer(struct mr_dev *dev, struct mr_peer *peer);
/* A retired peer leaves the fair share's active set (peer->lock held). */
void mr_fs_leave(struct mr_peer *peer);
/* The tunable or the link speed changed: the capacity the share divides. */
void mr_fs_capacity(struct mr_dev *dev);

/* ---------------------------------------------------------------- xmit.c */

/* Allocate an skb with room for the IP/UDP headers and @len bytes. */
struct sk_buff *mr_xmit_alloc(u32 len, gfp_t gfp);
/*
 * Route and send @skb (data at the MetaRoCE header) from @addr->local to
 * @addr->remote with UDP source port @sport; @cache caches the route.
 * Consumes the skb. Returns 0 or a negative errno (packet dropped).
 */
int mr_xmit(struct mr_dev *dev, struct sk_buff *skb, const struct mr_addr *addr,
	    u16 sport, u8 tclass, struct dst_cache *cache, u16 *cache_sport);
u64 mr_route_key(struct mr_dev *dev, const struct mr_addr *addr, u16 sport);

#endif /* _METAROCE_OBJECTS_H */
