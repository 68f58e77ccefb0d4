// SPDX-License-Identifier: GPL-2.0-only
/*
 * Device-level verbs: device attributes, user contexts, protection domains,
 * and the ib_device_ops table that ties the module's files together.
 */

#include <linux/idr.h>
#include <linux/minmax.h>
#include <rdma/ib_user_verbs.h>
#include <uapi/rdma/metaroce-abi.h>

#include "metaroce.h"
#include "objects.h"

struct mr_ucontext {
	struct ib_ucontext ibuc;
};

struct mr_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

static inline struct mr_pd *to_mr_pd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct mr_pd, ibpd);
}

/*
 * The device limits that no allocator of ours enforces by itself: PDs and
 * MRs take their numbers from allocators bounded by METAROCE_MAX_PD and
 * METAROCE_MAX_MR, which say ENOMEM when they run out. The GSI QP counts
 * too: a device always has one.
 */
static const u32 mr_limit_max[MR_LIM_NR] = {
	[MR_LIM_QP] = METAROCE_MAX_QP,
	[MR_LIM_CQ] = METAROCE_MAX_CQ,
	[MR_LIM_SRQ] = METAROCE_MAX_SRQ,
	[MR_LIM_AH] = METAROCE_MAX_AH,
};

int mr_limit_take(struct mr_dev *dev, enum mr_limited res)
{
	if (atomic_inc_return(&dev->limited[res]) <= mr_limit_max[res])
		return 0;
	atomic_dec(&dev->limited[res]);
	return -ENOMEM;
}

void mr_limit_drop(struct mr_dev *dev, enum mr_limited res)
{
	atomic_dec(&dev->limited[res]);
}

static int mr_query_device(struct ib_device *ibdev,
			   struct ib_device_attr *attr, struct ib_udata *udata)
{
	/* No driver-specific request is defined: accept only zeroes. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->sys_image_guid = ibdev->node_guid;
	attr->vendor_id = METAROCE_VENDOR_ID;
	attr->vendor_part_id = METAROCE_VENDOR_PART_ID;
	attr->max_mr_size = METAROCE_MAX_MR_SIZE;
	attr->page_size_cap = METAROCE_PAGE_SIZE_CAP;
	attr->max_qp = METAROCE_MAX_QP;
	attr->max_qp_wr = METAROCE_MAX_QP_WR;
	attr->device_cap_flags = IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_PORT_ACTIVE_EVENT |
				 IB_DEVICE_SRQ_RESIZE |
				 IB_DEVICE_RC_RNR_NAK_GEN |
				 IB_DEVICE_CURR_QP_STATE_MOD |
				 IB_DEVICE_MEM_MGT_EXTENSIONS;
	/* "rdma link delete" may remove the device. */
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	attr->max_send_sge = METAROCE_MAX_SGE;
	attr->max_recv_sge = METAROCE_MAX_SGE;
	attr->max_sge_rd = METAROCE_MAX_SGE_RD;
	attr->max_cq = METAROCE_MAX_CQ;
	attr->max_cqe = METAROCE_MAX_CQE;
	attr->max_mr = METAROCE_MAX_MR;
	attr->max_pd = METAROCE_MAX_PD;
	attr->max_qp_rd_atom = METAROCE_MAX_QP_RD_ATOM;
	attr->max_qp_init_rd_atom = METAROCE_MAX_QP_INIT_RD_ATOM;
	attr->max_res_rd_atom = METAROCE_MAX_RES_RD_ATOM;
	/* Atomic against each other on this device, not against the CPU. */
	attr->atomic_cap = IB_ATOMIC_HCA;
	attr->max_ah = METAROCE_MAX_AH;
	attr->max_mcast_grp = METAROCE_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = METAROCE_MAX_MCAST_QP_ATTACH;
	attr->max_total_mcast_qp_attach = METAROCE_MAX_TOTAL_MCAST_QP_ATTACH;
	attr->max_srq = METAROCE_MAX_SRQ;
	attr->max_srq_wr = METAROCE_MAX_SRQ_WR;
	attr->max_srq_sge = METAROCE_MAX_SRQ_SGE;
	attr->max_fast_reg_page_list_len = METAROCE_MAX_FAST_REG_PAGES;
	attr->max_pkeys = METAROCE_PKEY_TBL_LEN;
	attr->local_ca_ack_delay = METAROCE_LOCAL_CA_ACK_DELAY;
	return 0;
}

static enum rdma_link_layer mr_get_link_layer(struct ib_device *ibdev,
					      u32 port_num)
{
	return IB_LINK_LAYER_ETHERNET;
}

int mr_udata_request(struct ib_udata *udata, u32 known, u32 *comp_mask)
{
	struct {
		u32 comp_mask;
		u32 reserved;
	} req = {};
	int err;

	*comp_mask = 0;
	if (!udata || !udata->inlen)
		return 0;
	err = ib_copy_from_udata(&req, udata, min(sizeof(req), udata->inlen));
	if (err)
		return err;
	if ((req.comp_mask & ~known) ||
	    (udata->inlen > sizeof(req) &&
	     !ib_is_udata_cleared(udata, sizeof(req),
				  udata->inlen - sizeof(req))))
		return -EOPNOTSUPP;
	if (req.reserved)
		return -EINVAL;
	*comp_mask = req.comp_mask;
	return 0;
}

static void mr_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	/* No firmware: report the module version. */
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%s", METAROCE_VERSION);
}

static int mr_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata)
{
	struct metaroce_alloc_ucontext_resp resp = {};
	u32 comp_mask;
	int err;

	/* No request bits are defined (struct metaroce_alloc_ucontext_req). */
	err = mr_udata_request(udata, 0, &comp_mask);
	if (err)
		return err;

	return ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
}

static void mr_dealloc_ucontext(struct ib_ucontext *ibuc)
{
}

static int mr_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct mr_dev *dev = to_mr_dev(ibpd->device);
	struct metaroce_alloc_pd_resp resp = {};
	struct mr_pd *pd = to_mr_pd(ibpd);
	int id, err;

	/* No request is defined: accept only zeroes. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;

	id = ida_alloc_max(&dev->pd_ida, METAROCE_MAX_PD - 1, GFP_KERNEL);
	if (id < 0)
		return id == -ENOSPC ? -ENOMEM : id;
	pd->pdn = id;

	if (udata) {
		resp.pdn = pd->pdn;
		err = ib_copy_to_udata(udata, &resp,
				       min(sizeof(resp), udata->outlen));
		if (err) {
			ida_free(&dev->pd_ida, pd->pdn);
			return err;
		}
	}
	return 0;
}

static int mr_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct mr_dev *dev = to_mr_dev(ibpd->device);

	ida_free(&dev->pd_ida, to_mr_pd(ibpd)->pdn);
	return 0;
}

const struct ib_device_ops mr_dev_ops = {
	.owner = THIS_MODULE,
	/* Out of tree: no driver id of our own. */
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = METAROCE_UVERBS_ABI_VERSION,
	/* /sys/class/infiniband/<dev>/metaroce/, which the provider needs. */
	.device_group = &mr_attr_group,

	.alloc_hw_port_stats = mr_alloc_hw_port_stats,
	.alloc_mr = mr_alloc_mr,
	.alloc_pd = mr_alloc_pd,
	.alloc_ucontext = mr_alloc_ucontext,
	.attach_mcast = mr_attach_mcast,
	.create_ah = mr_create_ah,
	.create_cq = mr_create_cq,
	.create_qp = mr_create_qp,
	.create_srq = mr_create_srq,
	.create_user_ah = mr_create_ah,
	.dealloc_driver = mr_dealloc_driver,
	.dealloc_pd = mr_dealloc_pd,
	.dealloc_ucontext = mr_dealloc_ucontext,
	.dereg_mr = mr_dereg_mr,
	.destroy_ah = mr_destroy_ah,
	.destroy_cq = mr_destroy_cq,
	.destroy_qp = mr_destroy_qp,
	.destroy_srq = mr_destroy_srq,
	.detach_mcast = mr_detach_mcast,
	.fill_res_qp_entry = mr_fill_res_qp_entry,
	.get_dev_fw_str = mr_get_dev_fw_str,
	.get_dma_mr = mr_get_dma_mr,
	.get_hw_stats = mr_get_hw_stats,
	.get_link_layer = mr_get_link_layer,
	.get_port_immutable = mr_get_port_immutable,
	.map_mr_sg = mr_map_mr_sg,
	.modify_qp = mr_modify_qp,
	.modify_srq = mr_modify_srq,
	.mmap = mr_mmap,
	.mmap_free = mr_mmap_free,
	.poll_cq = mr_poll_cq,
	.post_recv = mr_post_recv,
	.post_send = mr_post_send,
	.post_srq_recv = mr_post_srq_recv,
	.query_ah = mr_query_ah,
	.query_device = mr_query_device,
	.query_pkey = mr_query_pkey,
	.query_port = mr_query_port,
	.query_qp = mr_query_qp,
	.query_srq = mr_query_srq,
	.reg_user_mr = mr_reg_user_mr_op,
	.req_notify_cq = mr_req_notify_cq,
	.rereg_user_mr = mr_rereg_user_mr,
	.resize_user_cq = mr_resize_cq_op,

	INIT_RDMA_OBJ_SIZE(ib_ah, mr_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, mr_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, mr_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, mr_ibqp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, mr_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, mr_ucontext, ibuc),
};
