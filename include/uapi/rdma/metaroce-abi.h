/* SPDX-License-Identifier: ((GPL-2.0-only WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * MetaRoCE user/kernel ABI: the driver-specific parts of the uverbs commands
 * exchanged between metaroce.ko and the rdma-core provider (libmetaroce).
 *
 * Rules for changing this file:
 *  - every structure is a multiple of 8 bytes and has no implicit padding;
 *  - new fields are only ever appended; the kernel accepts shorter requests
 *    from older providers and writes only as much of a response as the
 *    provider asked for;
 *  - reserved fields and unknown comp_mask bits must be zero: the kernel
 *    rejects a request that sets them, so they can be given a meaning later;
 *  - an incompatible change bumps METAROCE_UVERBS_ABI_VERSION, which the
 *    provider reads from /sys/class/infiniband/<device>/metaroce/abi_version.
 */
#ifndef METAROCE_ABI_USER_H
#define METAROCE_ABI_USER_H

#include <linux/types.h>

#define METAROCE_UVERBS_ABI_VERSION 1

/* ibv_open_device(): provider -> kernel (optional, may be absent). */
struct metaroce_alloc_ucontext_req {
	__u32 comp_mask;	/* no bits defined yet: must be 0 */
	__u32 reserved;		/* must be 0 */
};

/* ibv_open_device(): kernel -> provider. */
struct metaroce_alloc_ucontext_resp {
	__u32 comp_mask;	/* no bits defined yet: 0 */
	__u32 reserved;
};

/*
 * ibv_create_ah(): kernel -> provider. ahn names the AH in the send work
 * requests of a UD QP's send ring (struct metaroce_swqe.ud); it is
 * valid until the AH is destroyed, and only on QPs of the AH's PD.
 */
struct metaroce_create_ah_resp {
	__u32 ahn;
	__u32 reserved;
};

/* ibv_alloc_pd(): kernel -> provider. */
struct metaroce_alloc_pd_resp {
	__u32 pdn;		/* protection domain number, unique per device */
	__u32 reserved;
};

/*
 * Completion queue rings (ibv_create_cq, ibv_create_cq_ex, ibv_resize_cq).
 *
 * A provider that sets METAROCE_CQ_RING in the request gets the CQ's
 * completions in memory it maps (mmap() of the uverbs file at
 * mmap_offset, mmap_size bytes, read and write) instead of through the
 * POLL_CQ command, which then fails with EINVAL. The mapping starts with
 * struct metaroce_cq_ring, followed at METAROCE_CQ_RING_ENTRIES by
 * @slots entries of struct metaroce_cqe; @slots is a power of two and
 * the CQ holds at most its cqe completions (ibv_cq.cqe).
 *
 * producer and consumer count completions written and taken, modulo
 * 2^32; entry i is at slot i & (slots - 1). The kernel writes an entry and
 * then publishes producer (release); the provider reads producer
 * (acquire), then the entries, and then publishes consumer (release). The
 * kernel never reads producer back, and checks consumer every time: a
 * ring whose consumer is ahead of producer, or more than cqe behind,
 * counts as full (the completion is lost, the CQ gets IB_EVENT_CQ_ERR and
 * the QP fails), which harms only the process that wrote it.
 *
 * Completions of a QP that is destroyed or reset stay in a ring; the
 * provider removes them (the kernel does for CQs without a ring).
 */
#define METAROCE_CQ_RING		(1U << 0)
#define METAROCE_CQ_RING_ENTRIES	128

struct metaroce_create_cq_req {
	__u32 comp_mask;	/* METAROCE_CQ_RING or 0 */
	__u32 reserved;		/* must be 0 */
};

struct metaroce_create_cq_resp {
	__u32 comp_mask;	/* METAROCE_CQ_RING if there is a ring */
	__u32 slots;		/* entries in the ring (power of two) */
	__aligned_u64 mmap_offset;
	__aligned_u64 mmap_size;
};

/*
 * With a ring, a resize moves the completions not taken yet to a new ring
 * (the provider must not take any meanwhile) and the response says where
 * it is; the old mapping stays valid until the provider unmaps it, but is
 * no longer written.
 */
#define metaroce_resize_cq_req metaroce_create_cq_req
#define metaroce_resize_cq_resp metaroce_create_cq_resp

struct metaroce_cq_ring {
	__u32 producer;		/* written by the kernel */
	__u32 reserved0[15];
	__u32 consumer;		/* written by the provider */
	__u32 reserved1[15];
};

/* struct metaroce_cqe.flags */
#define METAROCE_CQE_GRH		(1U << 0)	/* UD: a GRH precedes the data */
#define METAROCE_CQE_WITH_IMM		(1U << 1)	/* imm is immediate data */
#define METAROCE_CQE_WITH_INV		(1U << 2)	/* imm is the invalidated rkey */
#define METAROCE_CQE_IP_CSUM_OK		(1U << 3)

/*
 * A completion. status and opcode take the values of enum ib_uverbs_wc_status
 * and ib_uverbs_wc_opcode (libibverbs' IBV_WC_*); imm is in network byte order
 * as immediate data, in host order as an rkey.
 */
struct metaroce_cqe {
	__aligned_u64 wr_id;
	__u32 status;
	__u32 opcode;
	__u32 vendor_err;
	__u32 byte_len;
	__u32 imm;
	__u32 qp_num;
	__u32 src_qp;		/* UD */
	__u32 flags;		/* METAROCE_CQE_* */
	__u16 pkey_index;
	__u16 slid;
	__u8 sl;
	__u8 dlid_path_bits;
	__u8 reserved[2];
};

/*
 * Send queue rings (ibv_create_qp, ibv_create_qp_ex; RC and UD QPs).
 *
 * A provider that sets METAROCE_QP_SQ_RING in the request of a QP
 * posts its send work requests into memory it maps (mmap() of the uverbs
 * file at sq_mmap_offset, sq_mmap_size bytes, read and write) instead of
 * through the POST_SEND command. The mapping starts with struct
 * metaroce_sq_ring, followed at METAROCE_SQ_RING_ENTRIES by sq_slots
 * (a power of two, at least the QP's max_send_wr) work requests of
 * sq_stride bytes each: a struct metaroce_swqe, then its num_sge struct
 * metaroce_sge or, with IBV_SEND_INLINE, inline_len bytes of data.
 *
 * producer counts the work requests written, retired those the kernel has
 * completed (whether or not a completion was asked for), modulo 2^32; work
 * request i is at slot i & (sq_slots - 1). The provider writes work
 * requests only while producer - retired is below the QP's max_send_wr,
 * then publishes producer (release) and, after a full barrier, reads
 * flags: with METAROCE_SQ_NEED_WAKEUP set, the kernel will not look at the
 * ring on its own and the provider issues POST_SEND with no work request
 * (the doorbell). The kernel sets the flag only when the QP has nothing
 * outstanding, then reads producer again, so a work request published
 * before the flag was seen is never left behind.
 *
 * When it rings the doorbell, the provider may set METAROCE_SQ_HINT_WAIT in
 * hint (it will wait for the outcome). The kernel then sends what was
 * posted before POST_SEND returns, on the caller's CPU; it does the same
 * on its own for an RC QP whose peer sent it data since its previous
 * doorbell (a request/response exchange). Otherwise it sends from a
 * workqueue, and the call returns at once.
 *
 * The kernel copies each work request once and checks it as POST_SEND
 * would, and that its reserved words (those of ud included, on a UD QP)
 * are zero; one it refuses completes, in its place, with
 * IB_WC_LOC_QP_OP_ERR.
 * A producer index more than sq_slots ahead of retired, or behind the work
 * requests already taken, is ignored until it is not. The ring is reset
 * with the QP: retired is then set to producer. POST_SEND with work
 * requests fails with EINVAL on a QP that has a ring.
 */
#define METAROCE_QP_SQ_RING		(1U << 0)
#define METAROCE_SQ_RING_ENTRIES	128
#define METAROCE_SQ_NEED_WAKEUP		(1U << 0)
#define METAROCE_SQ_HINT_WAIT		(1U << 0)

/*
 * Receive queue rings (ibv_create_qp: RC and UD QPs without an SRQ) and SRQ
 * rings (ibv_create_srq).
 *
 * With METAROCE_QP_RQ_RING in the create_qp request (or METAROCE_SRQ_RING in
 * the create_srq one), the provider posts receive work requests into
 * memory it maps (offset and size in the response) instead of through
 * POST_RECV (POST_SRQ_RECV), which then fails with EINVAL when given work
 * requests. The mapping starts with struct metaroce_rq_ring, followed at
 * METAROCE_RQ_RING_ENTRIES by slots (a power of two, at least max_wr)
 * entries of stride bytes each: a struct metaroce_rwqe and its num_sge
 * struct metaroce_sge.
 *
 * producer counts the work requests written, consumer those whose slot
 * the kernel no longer needs, modulo 2^32: for a QP, the receives
 * completed (flushed ones included), which happens in order; for an SRQ,
 * those a QP took (the kernel copies a work request when it takes it). The
 * provider writes only while producer - consumer is below max_wr, then
 * publishes producer (release). The kernel reads the ring when a message
 * needs a receive, so no doorbell is needed, with one exception: a QP in
 * the error state flushes its receives, and new ones are flushed only on
 * the doorbell, POST_RECV with no work request. While the QP is in error
 * the kernel sets METAROCE_RQ_NEED_WAKEUP, then flushes what the ring
 * holds; the provider publishes producer, issues a full barrier and reads
 * flags, so one of them sees the other's write.
 *
 * Each work request is copied once and checked as POST_RECV would; one
 * with more SGEs than max_sge, or SGE lengths whose sum does not fit in 32
 * bits, is taken as a receive without a buffer (a message with a payload
 * completes on it with IB_WC_LOC_LEN_ERR). An impossible producer index is
 * ignored until it is not. A QP's ring is reset with the QP (consumer is
 * then set to producer). An SRQ with a ring can be resized only within its
 * slots (EINVAL beyond); its limit event counts the work requests in the
 * ring.
 */
#define METAROCE_QP_RQ_RING		(1U << 1)
#define METAROCE_SRQ_RING		(1U << 0)

/*
 * One mapping for both rings of a QP. With METAROCE_QP_ONE_MAP beside
 * METAROCE_QP_SQ_RING and METAROCE_QP_RQ_RING in the create_qp request, the
 * kernel may put the receive ring in the send ring's mapping, after the
 * send ring, and says so by METAROCE_QP_ONE_MAP in the response: the
 * receive ring then starts rq_ring_offset bytes (a multiple of 64) into the
 * mapping at sq_mmap_offset, which is sq_mmap_size bytes long, and
 * rq_mmap_offset and rq_mmap_size repeat sq_mmap_offset and sq_mmap_size.
 * A QP's two small rings then share a page instead of taking one each.
 */
#define METAROCE_QP_ONE_MAP		(1U << 2)
#define METAROCE_RQ_RING_ENTRIES	128
#define METAROCE_RQ_NEED_WAKEUP		(1U << 0)

struct metaroce_create_qp_req {
	__u32 comp_mask;	/* METAROCE_QP_SQ_RING, _RQ_RING, _ONE_MAP */
	__u32 reserved;		/* must be 0 */
};

struct metaroce_create_qp_resp {
	__u32 comp_mask;	/* the METAROCE_QP_* given */
	__u32 sq_slots;		/* work requests in the ring (power of two) */
	__u32 sq_stride;	/* bytes per work request, a multiple of 64 */
	__u32 rq_ring_offset;	/* with METAROCE_QP_ONE_MAP, else 0 */
	__aligned_u64 sq_mmap_offset;
	__aligned_u64 sq_mmap_size;
	/* Since METAROCE_QP_RQ_RING (a shorter response lacks them). */
	__u32 rq_slots;
	__u32 rq_stride;	/* a multiple of 16 */
	__aligned_u64 rq_mmap_offset;
	__aligned_u64 rq_mmap_size;
};

struct metaroce_create_srq_req {
	__u32 comp_mask;	/* METAROCE_SRQ_RING or 0 */
	__u32 reserved;		/* must be 0 */
};

struct metaroce_create_srq_resp {
	__u32 comp_mask;	/* METAROCE_SRQ_RING if there is a ring */
	__u32 slots;
	__u32 stride;		/* a multiple of 16 */
	__u32 reserved;
	__aligned_u64 mmap_offset;
	__aligned_u64 mmap_size;
};

struct metaroce_rq_ring {
	__u32 producer;		/* written by the provider */
	__u32 reserved0[15];
	__u32 consumer;		/* written by the kernel */
	__u32 flags;		/* METAROCE_RQ_*, written by the kernel */
	__u32 reserved1[14];
};

struct metaroce_rwqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
};

struct metaroce_sq_ring {
	__u32 producer;		/* written by the provider */
	__u32 hint;		/* METAROCE_SQ_HINT_*, written by the provider */
	__u32 reserved0[14];
	__u32 retired;		/* written by the kernel */
	__u32 flags;		/* METAROCE_SQ_*, written by the kernel */
	__u32 reserved1[14];
};

/*
 * A send work request: opcode takes the values of enum ib_uverbs_wr_opcode
 * (libibverbs' IBV_WR_*) and send_flags those of libibverbs' IBV_SEND_*
 * (the kernel's IB_SEND_*); imm is immediate data in network byte order or
 * the rkey to invalidate in host order. On a UD QP, ud replaces the RDMA
 * and atomic fields: the AH (struct metaroce_create_ah_resp.ahn, of the
 * QP's PD; another work request completes with IB_WC_LOC_QP_OP_ERR), the
 * destination QP and its Q_Key (high bit set: the QP's own).
 */
struct metaroce_swqe {
	__aligned_u64 wr_id;
	union {
		struct {
			__aligned_u64 remote_addr;	/* RDMA and atomics */
			__aligned_u64 compare_add;	/* atomics */
			__aligned_u64 swap;		/* compare and swap */
		};
		struct {
			__u32 ahn;
			__u32 remote_qpn;
			__u32 remote_qkey;
			__u32 reserved[3];	/* must be 0 */
		} ud;
	};
	__u32 opcode;
	__u32 send_flags;
	__u32 num_sge;			/* without IBV_SEND_INLINE */
	__u32 inline_len;		/* with IBV_SEND_INLINE */
	__u32 rkey;
	__u32 imm;
	__u32 reserved[2];		/* must be 0 */
};

struct metaroce_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

#endif /* METAROCE_ABI_USER_H */
