/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel version differences. This is the only file that knows about them:
 * the .c files use the newest API and this header provides it on older
 * kernels. Supported: Linux 6.1 and newer (tested: Debian 12's 6.1 and
 * 6.12, Debian 13's 6.12, and 7.2 from Debian unstable). The
 * MR_HAVE_* macros come from the API probes in Kbuild, which test what the
 * kernel's headers declare rather than its version number, so distribution
 * backports are handled too.
 *
 * Differences that need no code here, for the record:
 *  - DMA: passing a NULL dma_device to ib_register_device() gives a software
 *    device the core's "virtual DMA" mode (addresses are kernel virtual
 *    addresses) on every supported kernel; no dma_virt_ops setup is needed.
 *  - sysfs: rdma_set_device_sysfs_group() is gone by 6.1; drivers set
 *    ib_device_ops.device_group instead.
 *  - restrack: ib_device_ops.fill_res_qp_entry(msg, ibqp) and the
 *    rdma_nl_put_driver_*() helpers are the same on 6.1 to 7.2.
 *  - ib_device_get_by_name() is no longer exported in 7.2: a device name
 *    in use is found by ib_register_device() (-ENFILE), on every kernel.
 *  - IPv6 routes: ip6_dst_lookup_flow() is exported on every supported
 *    kernel (7.2 dropped the ipv6_stub indirection older ones also had).
 */
#ifndef _METAROCE_COMPAT_H
#define _METAROCE_COMPAT_H

#include <linux/hrtimer.h>
#include <linux/mm.h>
#include <linux/netdevice.h>
#include <linux/slab.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

/*
 * Since 6.11 ib_core records whether a device's name was chosen by the user
 * (reported over netlink, so that udev's rdma_rename leaves it alone).
 * Older kernels do not record it.
 */
#ifndef MR_HAVE_IB_MARK_NAME_ASSIGNED_BY_USER
static inline void ib_mark_name_assigned_by_user(struct ib_device *ibdev)
{
}
#endif

/*
 * Since 6.10 the last argument of ib_device_ops.create_cq is the uverbs
 * attribute bundle (NULL for kernel CQs), which carries the driver's udata;
 * before, it was the udata itself. mr_create_cq() takes an mr_create_cq_arg
 * and gets its udata (NULL for kernel CQs) from mr_create_cq_udata().
 */
#ifdef MR_HAVE_CREATE_CQ_ATTRS
#define mr_create_cq_arg struct uverbs_attr_bundle

static inline struct ib_udata *
mr_create_cq_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
#define mr_create_cq_arg struct ib_udata

static inline struct ib_udata *mr_create_cq_udata(struct ib_udata *udata)
{
	return udata;
}
#endif

/*
 * A dummy netdev to hang a NAPI context on: allocated by the core since
 * 6.10 (which no longer lets drivers embed a struct net_device), by hand
 * before.
 */
#ifdef MR_HAVE_ALLOC_NETDEV_DUMMY
static inline struct net_device *mr_alloc_dummy_netdev(void)
{
	return alloc_netdev_dummy(0);
}

static inline void mr_free_dummy_netdev(struct net_device *ndev)
{
	free_netdev(ndev);
}
#else
static inline struct net_device *mr_alloc_dummy_netdev(void)
{
	struct net_device *ndev = kzalloc(sizeof(*ndev), GFP_KERNEL);

	if (ndev)
		init_dummy_netdev(ndev);
	return ndev;
}

static inline void mr_free_dummy_netdev(struct net_device *ndev)
{
	kfree(ndev);
}
#endif

/*
 * Since 6.3 a VMA's flags change through helpers that take the mmap lock
 * into account; before, drivers wrote vm_flags directly.
 */
#ifndef MR_HAVE_VM_FLAGS_SET
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_mod(struct vm_area_struct *vma, vm_flags_t set,
				vm_flags_t clear)
{
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
}
#endif

/*
 * Newer kernels (7.2; not 6.12) pass ib_device_ops.reg_user_mr a DMA handle
 * (processing hints for PCI devices), NULL unless the device implements
 * alloc_dmah, which metaroce does not. mr_reg_user_mr() takes it; the ops
 * table points at mr_reg_user_mr_op, which older kernels call without it.
 */
#ifdef MR_HAVE_REG_USER_MR_DMAH
#define mr_reg_user_mr_op mr_reg_user_mr
#else
struct ib_dmah;
struct ib_mr *mr_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
			     u64 iova, int access, struct ib_dmah *dmah,
			     struct ib_udata *udata);

static inline struct ib_mr *mr_reg_user_mr_op(struct ib_pd *pd, u64 start,
					      u64 length, u64 iova,
					      int access,
					      struct ib_udata *udata)
{
	return mr_reg_user_mr(pd, start, length, iova, access, NULL, udata);
}
#endif

/*
 * Newer kernels (7.2; not 6.12) resize user CQs through
 * ib_device_ops.resize_user_cq, with the new size unsigned; older ones have
 * resize_cq, with an int. mr_resize_cq() takes the unsigned size; the ops
 * table sets resize_user_cq to mr_resize_cq_op, which on older kernels is
 * resize_cq and a wrapper that refuses a negative size.
 */
#ifdef MR_HAVE_RESIZE_USER_CQ
#define mr_resize_cq_op mr_resize_cq
#else
int mr_resize_cq(struct ib_cq *ibcq, unsigned int cqe, struct ib_udata *udata);

static inline int mr_resize_cq_op(struct ib_cq *ibcq, int cqe,
				  struct ib_udata *udata)
{
	return cqe < 0 ? -EINVAL : mr_resize_cq(ibcq, cqe, udata);
}

#define resize_user_cq resize_cq
#endif

/*
 * Since 6.13 a timer's callback is set when it is initialised, by
 * hrtimer_setup(); newer kernels (7.2) no longer have hrtimer_init().
 */
#ifndef MR_HAVE_HRTIMER_SETUP
static inline void hrtimer_setup(struct hrtimer *timer,
				 enum hrtimer_restart (*function)(struct hrtimer *),
				 clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
}
#endif

/*
 * Newer kernels (7.2; not 6.12) pin user memory at a virtual address with
 * ib_umem_get_va(), the ib_umem_get() of older ones (other ib_umem_get_*()
 * take the buffer from uverbs attributes).
 */
#ifndef MR_HAVE_IB_UMEM_GET_VA
static inline struct ib_umem *ib_umem_get_va(struct ib_device *device,
					     unsigned long addr, size_t size,
					     int access)
{
	return ib_umem_get(device, addr, size, access);
}
#endif

/*
 * Newer kernels (7.2; not 6.12) set up and release UDP tunnel sockets by
 * their struct sock; older ones took the struct socket.
 */
#ifndef MR_HAVE_UDP_TUNNEL_SK
static inline void mr_setup_udp_tunnel_sk(struct net *net, struct sock *sk,
					  struct udp_tunnel_sock_cfg *cfg)
{
	setup_udp_tunnel_sock(net, sk->sk_socket, cfg);
}

static inline void mr_udp_tunnel_sk_release(struct sock *sk)
{
	udp_tunnel_sock_release(sk->sk_socket);
}

#define setup_udp_tunnel_sock mr_setup_udp_tunnel_sk
#define udp_tunnel_sock_release mr_udp_tunnel_sk_release
#endif

/*
 * Newer kernels (7.2; not 6.12) take the IP control block flags of a UDP
 * tunnel packet as the last argument of udp_tunnel{,6}_xmit_skb(); older
 * ones had no such argument. metaroce passes 0, which is what older
 * kernels did.
 */
#ifndef MR_HAVE_UDP_TUNNEL_XMIT_IPCB
static inline void mr_udp_tunnel_xmit_skb(struct rtable *rt, struct sock *sk,
					  struct sk_buff *skb, __be32 src,
					  __be32 dst, __u8 tos, __u8 ttl,
					  __be16 df, __be16 src_port,
					  __be16 dst_port, bool xnet,
					  bool nocheck, u16 ipcb_flags)
{
	udp_tunnel_xmit_skb(rt, sk, skb, src, dst, tos, ttl, df, src_port,
			    dst_port, xnet, nocheck);
}

#define udp_tunnel_xmit_skb mr_udp_tunnel_xmit_skb
#endif

#ifndef MR_HAVE_UDP_TUNNEL6_XMIT_IPCB
static inline void mr_udp_tunnel6_xmit_skb(struct dst_entry *dst,
					   struct sock *sk,
					   struct sk_buff *skb,
					   struct net_device *dev,
					   struct in6_addr *saddr,
					   struct in6_addr *daddr,
					   __u8 prio, __u8 ttl, __be32 label,
					   __be16 src_port, __be16 dst_port,
					   bool nocheck, u16 ip6cb_flags)
{
	udp_tunnel6_xmit_skb(dst, sk, skb, dev, saddr, daddr, prio, ttl,
			     label, src_port, dst_port, nocheck);
}

#define udp_tunnel6_xmit_skb mr_udp_tunnel6_xmit_skb
#endif

/*
 * Tracepoints: __assign_str() takes the source string again before 6.10;
 * since, only the field (the source given to __string()).
 */
#ifdef MR_HAVE_ASSIGN_STR_DST
#define mr_assign_str(dst, ...)	__assign_str(dst)
#else
#define mr_assign_str(dst, ...)	__assign_str(dst, __VA_ARGS__)
#endif

#endif /* _METAROCE_COMPAT_H */
