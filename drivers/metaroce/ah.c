// SPDX-License-Identifier: GPL-2.0-only
/*
 * Address handles. The port is RoCE-like, so an address vector names its
 * source by a RoCE v2 GID (an IPv6 address, or a v4-mapped IPv4 address,
 * from the netdev) and its destination by the GRH's destination GID: from
 * them comes the struct mr_addr the transport routes UDP packets by.
 * Creating an AH allocates nothing, so it never sleeps, whatever
 * RDMA_CREATE_AH_SLEEPABLE says.
 */

#include <net/ipv6.h>
#include <rdma/uverbs_ioctl.h>
#include <uapi/rdma/metaroce-abi.h>

#include "metaroce.h"
#include "objects.h"

/**
 * mr_addr_from_ah_attr() - where packets for an address vector go
 * @attr: the address vector (of an AH, or of an RC QP's RTR transition)
 * @addr: filled in on success
 *
 * The address vector must be a RoCE one with a GRH whose source GID
 * attribute is a RoCE v2 GID (RoCE v1 is not supported), and the source
 * and destination must be of one family.
 *
 * Return: 0 or -EINVAL.
 */
int mr_addr_from_ah_attr(const struct rdma_ah_attr *attr,
			 struct mr_addr *addr)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(attr);
	const struct ib_gid_attr *sgid_attr;
	bool local4, remote4;

	if (attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(attr) & IB_AH_GRH))
		return -EINVAL;
	sgid_attr = grh->sgid_attr;
	if (!sgid_attr || sgid_attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;

	BUILD_BUG_ON(sizeof(addr->local) != sizeof(sgid_attr->gid));
	memcpy(&addr->local, &sgid_attr->gid, sizeof(addr->local));
	memcpy(&addr->remote, &grh->dgid, sizeof(addr->remote));
	local4 = ipv6_addr_v4mapped(&addr->local);
	remote4 = ipv6_addr_v4mapped(&addr->remote);
	if (local4 != remote4)
		return -EINVAL;
	addr->ipv4 = local4;
	return 0;
}

/* Give a user AH a number, for send rings, and tell the process. */
static int mr_ah_number(struct mr_ah *ah, gfp_t gfp, struct ib_udata *udata)
{
	struct mr_dev *dev = to_mr_dev(ah->ibah.device);
	struct metaroce_create_ah_resp resp = {};
	struct mr_ah_ref *ref;
	int err;

	ref = kzalloc(sizeof(*ref), gfp);
	if (!ref)
		return -ENOMEM;
	ref->addr = ah->addr;
	ref->pd = ah->ibah.pd;
	ref->tclass = ah->tclass;
	err = xa_alloc_cyclic(&dev->ahs, &ah->ahn, ref, xa_limit_32b,
			      &dev->next_ahn, gfp);
	if (err < 0) {
		kfree(ref);
		return err;
	}
	ah->ref = ref;
	resp.ahn = ah->ahn;
	err = ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
	if (err) {
		xa_erase(&dev->ahs, ah->ahn);
		kfree_rcu(ref, rcu);
		ah->ref = NULL;
	}
	return err;
}

int mr_ah_lookup(struct mr_dev *dev, u32 ahn, struct ib_pd *pd,
		 struct mr_addr *addr, u8 *tclass)
{
	const struct mr_ah_ref *ref;
	int err = -EINVAL;

	rcu_read_lock();
	ref = xa_load(&dev->ahs, ahn);
	if (ref && ref->pd == pd) {
		*addr = ref->addr;
		*tclass = ref->tclass;
		err = 0;
	}
	rcu_read_unlock();
	return err;
}

/**
 * mr_create_ah() - create an address handle (kernel and user)
 * @ibah: the AH, allocated by ib_core, which holds the sgid_attr
 * @init: the address vector and RDMA_CREATE_AH_* flags
 * @udata: no driver-specific request; the response (struct
 *	metaroce_create_ah_resp) gives a user AH's number
 *
 * Return: 0, -EINVAL (see mr_addr_from_ah_attr()), -EOPNOTSUPP (a driver
 * request), -ENOMEM (also when the device has METAROCE_MAX_AH AHs) or
 * -EFAULT.
 */
int mr_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		 struct ib_udata *udata)
{
	const struct rdma_ah_attr *attr = init->ah_attr;
	struct mr_ah *ah = to_mr_ah(ibah);
	int err;

	if (!mr_udata_no_request(udata))
		return -EOPNOTSUPP;

	err = mr_addr_from_ah_attr(attr, &ah->addr);
	if (err)
		return err;
	err = mr_limit_take(to_mr_dev(ibah->device), MR_LIM_AH);
	if (err)
		return err;
	ah->tclass = attr->grh.traffic_class;
	ah->hop_limit = attr->grh.hop_limit;
	/* ib_core holds the GID attribute in ibah->sgid_attr. */
	ah->attr = *attr;
	ah->attr.grh.sgid_attr = NULL;
	ah->ref = NULL;
	if (!udata)
		return 0;
	/* A process's AH is charged to it. */
	err = mr_ah_number(ah, init->flags & RDMA_CREATE_AH_SLEEPABLE ?
			   GFP_KERNEL_ACCOUNT : GFP_ATOMIC, udata);
	if (err)
		mr_limit_drop(to_mr_dev(ibah->device), MR_LIM_AH);
	return err;
}

/* grh.sgid_attr stays NULL, as rdma_query_ah() set it: see ibah->sgid_attr. */
int mr_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	*attr = to_mr_ah(ibah)->attr;
	return 0;
}

int mr_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct mr_ah *ah = to_mr_ah(ibah);

	if (ah->ref) {
		xa_erase(&to_mr_dev(ibah->device)->ahs, ah->ahn);
		/* A send ring's reader may be copying it. */
		kfree_rcu(ah->ref, rcu);
	}
	mr_limit_drop(to_mr_dev(ibah->device), MR_LIM_AH);
	return 0;
}
