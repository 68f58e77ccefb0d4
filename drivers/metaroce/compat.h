/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel version differences. This is the only file that knows about them:
 * the .c files use the newest API and this header provides it on older
 * kernels. Supported: Linux 6.1 and newer (Debian 12's 6.1 and 6.12). The
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
 *    rdma_nl_put_driver_*() helpers are the same on 6.1 and 6.12.
 */
#ifndef _METAROCE_COMPAT_H
#define _METAROCE_COMPAT_H

#include <linux/mm.h>
#include <linux/netdevice.h>
#include <linux/slab.h>
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

#endif /* _METAROCE_COMPAT_H */
