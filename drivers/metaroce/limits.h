/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Device limits: what query_device and query_port report, and what the verbs
 * code enforces. They are sized for a software device, whose queues live in
 * host memory shared with userspace, so every value here is one the driver can
 * honour on any host that can load it. Documented in
 * Documentation/admin-guide.rst ("Device limits"): keep that table in sync.
 */
#ifndef _METAROCE_LIMITS_H
#define _METAROCE_LIMITS_H

#include <linux/bits.h>

/* Queue pairs and their work queues. */
#define METAROCE_MAX_QP			16384
#define METAROCE_MAX_QP_WR		16384
#define METAROCE_MAX_SGE		16
#define METAROCE_MAX_SGE_RD		16

/* Outstanding RDMA READs per QP, as responder and as initiator. */
#define METAROCE_MAX_QP_RD_ATOM		16
#define METAROCE_MAX_QP_INIT_RD_ATOM	16
#define METAROCE_MAX_RES_RD_ATOM	(METAROCE_MAX_QP * METAROCE_MAX_QP_RD_ATOM)

/* Completion queues. */
#define METAROCE_MAX_CQ			16384
#define METAROCE_MAX_CQE		65535

/* Shared receive queues. */
#define METAROCE_MAX_SRQ		16384
#define METAROCE_MAX_SRQ_WR		16384
#define METAROCE_MAX_SRQ_SGE		16

/*
 * Identity. The project holds no IEEE OUI: the vendor id is the all-ones
 * OUI, which no company is assigned, as software devices use.
 */
#define METAROCE_VENDOR_ID		0xffffff
#define METAROCE_VENDOR_PART_ID		1

/* Memory registration. */
#define METAROCE_MAX_MR			65536
#define METAROCE_MAX_MR_SIZE		BIT_ULL(40)	/* 1 TiB per MR */
#define METAROCE_PAGE_SIZE_CAP		GENMASK_ULL(63, 12) /* 4 KiB and up */
#define METAROCE_MAX_FAST_REG_PAGES	512

/* Protection domains, address handles, user contexts. */
#define METAROCE_MAX_PD			65536
#define METAROCE_MAX_AH			65536

/*
 * UD multicast: groups, QPs attached to one group, attachments of all
 * groups together.
 */
#define METAROCE_MAX_MCAST_GRP		1024
#define METAROCE_MAX_MCAST_QP_ATTACH	64
#define METAROCE_MAX_TOTAL_MCAST_QP_ATTACH	4096

/* Largest message (the verbs byte counts are 32-bit). */
#define METAROCE_MAX_MSG_SIZE		BIT(31)

/* Completion vectors (one; the CQ engine may raise this). */
#define METAROCE_NUM_COMP_VECTORS	1

/* Local CA ACK delay, as the IBTA exponent: 4.096 us * 2^15 = 134 ms. */
#define METAROCE_LOCAL_CA_ACK_DELAY	15

/* Port tables: RoCE-style, GIDs from the netdev's IP addresses. */
#define METAROCE_GID_TBL_LEN		128
#define METAROCE_PKEY_TBL_LEN		1

/*
 * Bytes of each packet that are not RDMA payload: IPv6 header (40) + UDP
 * header (8) + the largest MetaRoCE header of a packet with payload
 * (MR_DATA_HLEN_MAX, 76). The port's active MTU is the largest IB MTU
 * (256..4096) that fits in the netdev MTU minus this: 1500 -> 1024,
 * 4200 -> 2048, 9000 -> 4096.
 */
#define METAROCE_MTU_OVERHEAD		124

/*
 * The same over IPv4 (20-byte header, no options): 104. RC data segments
 * carry what the netdev MTU leaves after the overhead of the connection's
 * address family, at most 4096 bytes (MR_MAX_PAYLOAD) and at least 256:
 * 1396 bytes at 1500 over IPv4, 1376 over IPv6, 4096 at 9000.
 */
#define METAROCE_MTU_OVERHEAD_IPV4	104

#endif /* _METAROCE_LIMITS_H */
