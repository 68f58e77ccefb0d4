// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Device contexts: ibv_open_device() / ibv_close_device().
 *
 * The context is created through the kernel's GET_CONTEXT command, with
 * the metaroce request/response of <rdma/metaroce-abi.h> after the core
 * parts.  No feature bits are defined yet; the shared-ring fast path will
 * negotiate through comp_mask.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libmetaroce.h"

static void mrv_free_context(struct ibv_context *ibctx)
{
	struct mrv_context *ctx = to_mrv_ctx(ibctx);

	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

/*
 * Operations left out fall back to libibverbs' stubs, which fail with
 * EOPNOTSUPP: memory windows, XRC, flow steering, work queues,
 * device memory, counters, parent and thread domains, imports, ECE.
 */
static const struct verbs_context_ops mrv_context_ops = {
	.alloc_pd = mrv_alloc_pd,
	.attach_mcast = ibv_cmd_attach_mcast,
	.create_ah = mrv_create_ah,
	.create_cq = mrv_create_cq,
	.create_cq_ex = mrv_create_cq_ex,
	.create_qp = mrv_create_qp,
	.create_qp_ex = mrv_create_qp_ex,
	.create_srq = mrv_create_srq,
	.create_srq_ex = mrv_create_srq_ex,
	.dealloc_pd = mrv_dealloc_pd,
	.dereg_mr = mrv_dereg_mr,
	.destroy_ah = mrv_destroy_ah,
	.destroy_cq = mrv_destroy_cq,
	.destroy_qp = mrv_destroy_qp,
	.destroy_srq = mrv_destroy_srq,
	.detach_mcast = ibv_cmd_detach_mcast,
	.free_context = mrv_free_context,
	.modify_qp = mrv_modify_qp,
	.modify_srq = mrv_modify_srq,
	.poll_cq = mrv_poll_cq,
	.post_recv = mrv_post_recv,
	.post_send = mrv_post_send,
	.post_srq_recv = mrv_post_srq_recv,
	.query_device_ex = mrv_query_device_ex,
	.query_port = mrv_query_port,
	.query_qp = mrv_query_qp,
	.query_srq = mrv_query_srq,
	.reg_mr = mrv_reg_mr,
	.req_notify_cq = mrv_req_notify_cq,
	.rereg_mr = mrv_rereg_mr,
	.resize_cq = mrv_resize_cq,
};

/*
 * libibverbs wrote ops and sysfs into our verbs_device after alloc_device()
 * returned; finding them where pabi.h declares them confirms the layout.
 */
static bool mrv_device_layout_ok(struct ibv_device *ibdev)
{
	struct mrv_device *dev = to_mrv_dev(ibdev);
	const struct verbs_sysfs_dev *sd = dev->vdev.sysfs;

	return dev->vdev.ops == &mrv_device_ops && sd && sd == dev->sysfs &&
	       !strncmp(ibdev->name, sd->ibdev_name, sizeof(ibdev->name)) &&
	       !strncmp(ibdev->ibdev_path, sd->ibdev_path,
			sizeof(ibdev->ibdev_path));
}

/* What _verbs_init_and_alloc_context() must have set up. */
static bool mrv_context_layout_ok(const struct mrv_context *ctx,
				  const struct ibv_device *ibdev, int cmd_fd)
{
	const struct verbs_context *vctx = &ctx->vctx;

	return vctx->sz == sizeof(*vctx) && vctx->priv &&
	       vctx->context.device == ibdev &&
	       vctx->context.cmd_fd == cmd_fd &&
	       vctx->context.abi_compat == __VERBS_ABI_IS_EXTENDED;
}

struct verbs_context *mrv_alloc_context(struct ibv_device *ibdev, int cmd_fd,
					void *private_data)
{
	struct mrv_get_context_resp resp = {};
	struct mrv_get_context_cmd cmd = {};
	struct mrv_context *ctx;
	int ret;

	/* We own cmd_fd from here on and must close it on failure. */
	if (private_data) {
		/* Some other provider's open-device extension: not ours. */
		close(cmd_fd);
		errno = EOPNOTSUPP;
		return NULL;
	}

	if (!mrv_device_layout_ok(ibdev)) {
		mrv_warn("%s: libibverbs' device object does not match %s as declared by this provider; refusing to open\n",
			 ibdev->name, MRV_PABI_VERSION_NAME);
		close(cmd_fd);
		errno = EPROTO;
		return NULL;
	}

	ctx = _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(*ctx),
		(struct verbs_context *)offsetof(struct mrv_context, vctx),
		RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;	/* errno set, cmd_fd closed */

	if (!mrv_context_layout_ok(ctx, ibdev, cmd_fd)) {
		mrv_warn("%s: libibverbs' context does not match %s as declared by this provider; refusing to open\n",
			 ibdev->name, MRV_PABI_VERSION_NAME);
		ret = EPROTO;
		goto err;
	}

	/* cmd.drv: comp_mask and reserved stay zero (no features requested) */
	ret = mrv_cmd_get_context(&ctx->vctx, &cmd.ibv, sizeof(cmd), &resp.ibv,
				  sizeof(resp));
	if (ret)
		goto err;
	/* Bits this provider does not know are features it will not use. */
	ctx->comp_mask = resp.drv.comp_mask;

	verbs_set_ops(&ctx->vctx, &mrv_context_ops);
	return &ctx->vctx;

err:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	errno = ret;
	return NULL;
}
