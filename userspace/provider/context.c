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

static void mr_free_context(struct ibv_context *ibctx)
{
	struct mrv_context *ctx = to_mr_ctx(ibctx);

	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

/*
 * Operations left out fall back to libibverbs' stubs, which fail with
 * EOPNOTSUPP: memory windows, multicast, XRC, flow steering, work queues,
 * device memory, counters, parent and thread domains, imports, ECE.
 */
static const struct verbs_context_ops mr_context_ops = {
	.alloc_pd = mr_alloc_pd,
	.create_ah = mr_create_ah,
	.create_cq = mr_create_cq,
	.create_cq_ex = mr_create_cq_ex,
	.create_qp = mr_create_qp,
	.create_qp_ex = mr_create_qp_ex,
	.create_srq = mr_create_srq,
	.create_srq_ex = mr_create_srq_ex,
	.dealloc_pd = mr_dealloc_pd,
	.dereg_mr = mr_dereg_mr,
	.destroy_ah = mr_destroy_ah,
	.destroy_cq = mr_destroy_cq,
	.destroy_qp = mr_destroy_qp,
	.destroy_srq = mr_destroy_srq,
	.free_context = mr_free_context,
	.modify_qp = mr_modify_qp,
	.modify_srq = mr_modify_srq,
	.poll_cq = mr_poll_cq,
	.post_recv = mr_post_recv,
	.post_send = mr_post_send,
	.post_srq_recv = mr_post_srq_recv,
	.query_device_ex = mr_query_device_ex,
	.query_port = mr_query_port,
	.query_qp = mr_query_qp,
	.query_srq = mr_query_srq,
	.reg_mr = mr_reg_mr,
	.req_notify_cq = mr_req_notify_cq,
	.rereg_mr = mr_rereg_mr,
	.resize_cq = mr_resize_cq,
};

/*
 * libibverbs wrote ops and sysfs into our verbs_device after alloc_device()
 * returned; finding them where pabi.h declares them confirms the layout.
 */
static bool mr_device_layout_ok(struct ibv_device *ibdev)
{
	struct mrv_device *dev = to_mr_dev(ibdev);
	const struct verbs_sysfs_dev *sd = dev->vdev.sysfs;

	return dev->vdev.ops == &mr_device_ops && sd && sd == dev->sysfs &&
	       !strncmp(ibdev->name, sd->ibdev_name, sizeof(ibdev->name)) &&
	       !strncmp(ibdev->ibdev_path, sd->ibdev_path,
			sizeof(ibdev->ibdev_path));
}

/* What _verbs_init_and_alloc_context() must have set up. */
static bool mr_context_layout_ok(const struct mrv_context *ctx,
				 const struct ibv_device *ibdev, int cmd_fd)
{
	const struct verbs_context *vctx = &ctx->vctx;

	return vctx->sz == sizeof(*vctx) && vctx->priv &&
	       vctx->context.device == ibdev &&
	       vctx->context.cmd_fd == cmd_fd &&
	       vctx->context.abi_compat == __VERBS_ABI_IS_EXTENDED;
}

struct verbs_context *mr_alloc_context(struct ibv_device *ibdev, int cmd_fd,
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

	if (!mr_device_layout_ok(ibdev)) {
		mr_warn("%s: libibverbs' device object does not match %s as declared by this provider; refusing to open\n",
			ibdev->name, MR_PABI_VERSION_NAME);
		close(cmd_fd);
		errno = EPROTO;
		return NULL;
	}

	ctx = _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(*ctx),
		(struct verbs_context *)offsetof(struct mrv_context, vctx),
		RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;	/* errno set, cmd_fd closed */

	if (!mr_context_layout_ok(ctx, ibdev, cmd_fd)) {
		mr_warn("%s: libibverbs' context does not match %s as declared by this provider; refusing to open\n",
			ibdev->name, MR_PABI_VERSION_NAME);
		ret = EPROTO;
		goto err;
	}

	/* cmd.drv: comp_mask and reserved stay zero (no features requested) */
	ret = mr_cmd_get_context(&ctx->vctx, &cmd.ibv, sizeof(cmd), &resp.ibv,
				 sizeof(resp));
	if (ret)
		goto err;
	/* Bits this provider does not know are features it will not use. */
	ctx->comp_mask = resp.drv.comp_mask;

	verbs_set_ops(&ctx->vctx, &mr_context_ops);
	return &ctx->vctx;

err:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	errno = ret;
	return NULL;
}
