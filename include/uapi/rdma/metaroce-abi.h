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

/* ibv_alloc_pd(): kernel -> provider. */
struct metaroce_alloc_pd_resp {
	__u32 pdn;		/* protection domain number, unique per device */
	__u32 reserved;
};

#endif /* METAROCE_ABI_USER_H */
