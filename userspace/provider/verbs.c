// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Device, port, protection domain, memory region and address handle verbs,
 * through the kernel's uverbs commands.
 *
 * Convention (libibverbs'): calls returning int return 0 or a positive errno
 * value; calls returning a pointer return NULL and set errno.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "libmetaroce.h"

void mrv_layout_warn(struct ibv_context *ibctx, const char *what)
{
	static atomic_bool warned;

	if (!atomic_exchange(&warned, true))
		mrv_warn("%s: libibverbs filled a %s differently from %s as declared by this provider; refusing such objects\n",
			 ibctx->device->name, what, MRV_PABI_VERSION_NAME);
}

/*
 * The firmware version string: the kernel's own (sysfs fw_ver), else the
 * numeric one from QUERY_DEVICE read as major.minor.sub, 16 bits each.
 */
static void mrv_set_fw_ver(struct ibv_context *ibctx, char *buf, size_t size,
			   uint64_t fw_ver)
{
	const struct mrv_device *dev = to_mrv_dev(ibctx->device);

	if (dev->fw_ver[0])
		snprintf(buf, size, "%s", dev->fw_ver);
	else
		snprintf(buf, size, "%u.%u.%u",
			 (unsigned int)(fw_ver >> 32) & 0xffff,
			 (unsigned int)(fw_ver >> 16) & 0xffff,
			 (unsigned int)fw_ver & 0xffff);
}

int mrv_query_device_ex(struct ibv_context *ibctx,
			const struct ibv_query_device_ex_input *input,
			struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp = {};
	size_t resp_size = sizeof(resp);
	int ret;

	ret = ibv_cmd_query_device_any(ibctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	mrv_set_fw_ver(ibctx, attr->orig_attr.fw_ver,
		       sizeof(attr->orig_attr.fw_ver), resp.base.fw_ver);
	/*
	 * The kernel can resize its own SRQs, but an SRQ of this provider
	 * lives in a ring whose slots are fixed when it is created
	 * (ibv_modify_srq() cannot grow it beyond them: srq.c), so
	 * applications must not be told that SRQs resize.
	 */
	attr->orig_attr.device_cap_flags &= ~(unsigned int)IBV_DEVICE_SRQ_RESIZE;
	return 0;
}

int mrv_query_port(struct ibv_context *ibctx, uint8_t port_num,
		   struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(ibctx, port_num, attr, &cmd, sizeof(cmd));
}

struct ibv_pd *mrv_alloc_pd(struct ibv_context *ibctx)
{
	struct mrv_alloc_pd_resp resp = {};
	struct ibv_alloc_pd cmd = {};
	struct mrv_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;

	ret = ibv_cmd_alloc_pd(ibctx, &pd->ibv_pd, &cmd, sizeof(cmd), &resp.ibv,
			       sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	pd->pdn = resp.drv.pdn;

	return &pd->ibv_pd;
}

int mrv_dealloc_pd(struct ibv_pd *ibpd)
{
	int ret;

	ret = ibv_cmd_dealloc_pd(ibpd);
	if (ret)
		return ret;

	free(to_mrv_pd(ibpd));
	return 0;
}

struct ibv_mr *mrv_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			  uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd = {};
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;

	/* ibv_cmd_reg_mr() must overwrite both: checks pabi.h's verbs_mr. */
	vmr->mr_type = IBV_MR_TYPE_NULL_MR;
	vmr->access = ~access;
	ret = ibv_cmd_reg_mr(ibpd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}

	if (vmr->mr_type != IBV_MR_TYPE_MR || vmr->access != access ||
	    vmr->ibv_mr.context != ibpd->context) {
		mrv_layout_warn(ibpd->context, "verbs_mr");
		ibv_cmd_dereg_mr(vmr);
		free(vmr);
		errno = EPROTO;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/*
 * ibv_rereg_mr() has already checked the flags and that the MR is a plain
 * one; it reports any failure as IBV_REREG_MR_ERR_CMD with errno as we
 * leave it.
 */
int mrv_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *ibpd,
		 void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd = {};
	int ret;

	/* PD handles are per context: another context's could alias ours. */
	if ((flags & IBV_REREG_MR_CHANGE_PD) &&
	    (!ibpd || ibpd->context != vmr->ibv_mr.context)) {
		errno = EINVAL;
		return EINVAL;
	}

	ret = ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
			       access, ibpd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret)
		errno = ret;
	return ret;
}

int mrv_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;

	free(vmr);
	return 0;
}

struct ibv_ah *mrv_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
	struct mrv_create_ah_resp resp = {};
	struct mrv_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;

	ret = ibv_cmd_create_ah(ibpd, &ah->ibv_ah, attr, &resp.ibv,
				sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	/* Its name in a UD send ring (0 from a kernel that has none). */
	ah->ahn = resp.drv.ahn;
	return &ah->ibv_ah;
}

int mrv_destroy_ah(struct ibv_ah *ah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ah);
	if (ret)
		return ret;

	free(to_mrv_ah(ah));
	return 0;
}
