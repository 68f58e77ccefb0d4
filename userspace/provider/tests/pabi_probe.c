// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * pabi_probe: check pabi.h's private struct layouts against the installed
 * libibverbs binary, without any RDMA device.
 *
 * The static asserts in pabi.h can only compare against public headers.  This
 * program hands the real library fake objects built with pabi.h's layouts and
 * checks that the library reads and writes the fields where pabi.h says they
 * are:
 *
 *  - public libibverbs calls that read a verbs_device / verbs_sysfs_dev
 *    (ibv_get_device_index, ibv_get_device_guid, ibv_read_ibdev_sysfs_file);
 *  - _verbs_init_and_alloc_context / verbs_uninit_context on a fake device,
 *    which take and drop a reference and finally call ops->uninit_device;
 *  - verbs_set_ops with a table whose every entry is a distinct sentinel:
 *    libibverbs mirrors most entries into public fields of struct
 *    verbs_context / ibv_context_ops (installed header), so each mirrored
 *    entry's position in our table is confirmed, and the table length is
 *    confirmed from the library's private copy;
 *  - public calls that read the private parts of verbs objects:
 *    ibv_qp_to_qp_ex (verbs_qp.comp_mask), ibv_rereg_mr and ibv_dereg_mr
 *    (verbs_mr.mr_type, and the verbs_mr handed to the provider's ops).
 *
 * Usage: pabi_probe PROVIDER.so      (prints TAP)
 */
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pabi.h"
#include "tap.h"

#define NO_MIRROR SIZE_MAX

struct op_mirror {
	const char *name;
	size_t ops_off;		/* in struct verbs_context_ops */
	size_t pub_off;		/* where libibverbs mirrors it, or NO_MIRROR */
};

#define OPS_OFF(op) offsetof(struct verbs_context_ops, op)
#define VCTX(op) { #op, OPS_OFF(op), offsetof(struct verbs_context, op) }
#define VCTX_AS(field, op) \
	{ #op, OPS_OFF(op), offsetof(struct verbs_context, field) }
#define CTX(op) \
	{ #op, OPS_OFF(op), offsetof(struct verbs_context, context.ops.op) }
#define COMPAT(op) { #op, OPS_OFF(op), \
	offsetof(struct verbs_context, context.ops._compat_##op) }
#define PRIV(op) { #op, OPS_OFF(op), NO_MIRROR }

/*
 * Where verbs_set_ops() puts each entry besides its own copy (rdma-core's
 * libibverbs/dummy_ops.c), per generation of pabi.h.
 */
static const struct op_mirror mirrors[] = {
	VCTX(advise_mr),
#if MRV_PABI_GEN >= 65
	VCTX(alloc_buf),
#endif
	VCTX(alloc_dm),
#if MRV_PABI_GEN >= 65
	VCTX(alloc_dmah),
#endif
	CTX(alloc_mw), VCTX(alloc_null_mr),
	VCTX(alloc_parent_domain), COMPAT(alloc_pd), VCTX(alloc_td),
	COMPAT(async_event), VCTX(attach_counters_point_flow),
	COMPAT(attach_mcast), CTX(bind_mw), VCTX(close_xrcd),
	COMPAT(cq_event), COMPAT(create_ah),
#if MRV_PABI_GEN >= 65
	PRIV(create_comp_cntr),
#endif
	VCTX(create_counters),
	COMPAT(create_cq), PRIV(create_cq_ex),
	VCTX_AS(ibv_create_flow, create_flow), VCTX(create_flow_action_esp),
	COMPAT(create_qp), VCTX(create_qp_ex), VCTX(create_rwq_ind_table),
	COMPAT(create_srq), VCTX(create_srq_ex), VCTX(create_wq),
#if MRV_PABI_GEN >= 65
	VCTX(dealloc_dmah),
#endif
	CTX(dealloc_mw), COMPAT(dealloc_pd), VCTX(dealloc_td),
	COMPAT(dereg_mr), COMPAT(destroy_ah),
#if MRV_PABI_GEN >= 65
	PRIV(destroy_comp_cntr),
#endif
	VCTX(destroy_counters),
	COMPAT(destroy_cq), VCTX_AS(ibv_destroy_flow, destroy_flow),
	VCTX(destroy_flow_action), COMPAT(destroy_qp),
	VCTX(destroy_rwq_ind_table), COMPAT(destroy_srq), VCTX(destroy_wq),
	COMPAT(detach_mcast),
#if MRV_PABI_GEN >= 65
	VCTX(dm_export_dmabuf_fd), VCTX(free_buf),
#endif
	PRIV(free_context), VCTX(free_dm),
	VCTX(get_srq_num), PRIV(import_dm), PRIV(import_mr), PRIV(import_pd),
#if MRV_PABI_GEN >= 65
	PRIV(inc_comp_cntr), PRIV(inc_err_comp_cntr),
#endif
	VCTX(modify_cq), VCTX(modify_flow_action_esp), COMPAT(modify_qp),
	VCTX(modify_qp_rate_limit), COMPAT(modify_srq), VCTX(modify_wq),
	VCTX(open_qp), VCTX(open_xrcd), CTX(poll_cq), CTX(post_recv),
	CTX(post_send), VCTX(post_srq_ops), CTX(post_srq_recv),
#if MRV_PABI_GEN >= 65
	PRIV(qp_attach_comp_cntr), PRIV(query_comp_cntr_caps),
#endif
	VCTX(query_device_ex), PRIV(query_ece), PRIV(query_port),
#if MRV_PABI_GEN >= 65
	PRIV(query_port_speed),
#endif
	COMPAT(query_qp), PRIV(query_qp_data_in_order), VCTX(query_rt_values),
	COMPAT(query_srq),
#if MRV_PABI_GEN >= 65
	PRIV(read_comp_cntr),
#endif
	VCTX(read_counters),
#if MRV_PABI_GEN >= 65
	PRIV(read_err_comp_cntr),
#endif
	VCTX(reg_dm_mr),
	PRIV(reg_dmabuf_mr), COMPAT(reg_mr),
#if MRV_PABI_GEN >= 65
	VCTX(reg_mr_ex),
#endif
	CTX(req_notify_cq),
	COMPAT(rereg_mr), COMPAT(resize_cq),
#if MRV_PABI_GEN >= 65
	PRIV(set_comp_cntr),
#endif
	PRIV(set_ece),
#if MRV_PABI_GEN >= 65
	PRIV(set_err_comp_cntr),
#endif
	PRIV(unimport_dm), PRIV(unimport_mr), PRIV(unimport_pd),
};

#define NUM_MIRRORS (sizeof(mirrors) / sizeof(mirrors[0]))
#define NUM_OPS MRV_PABI_NUM_CONTEXT_OPS

/* The table above covers every slot of our verbs_context_ops exactly once. */
static int mirrors_cover_ops(void)
{
	unsigned char seen[NUM_OPS] = { 0 };
	size_t i, slot;

	if (NUM_MIRRORS != NUM_OPS)
		return 0;
	for (i = 0; i < NUM_MIRRORS; i++) {
		slot = mirrors[i].ops_off / sizeof(void *);
		if (slot >= NUM_OPS || seen[slot]++)
			return 0;
	}
	return 1;
}

static size_t num_public_mirrors(void)
{
	size_t i, n = 0;

	for (i = 0; i < NUM_MIRRORS; i++)
		n += mirrors[i].pub_off != NO_MIRROR;
	return n;
}

/* --- a fake device ----------------------------------------------------- */

static struct verbs_device *uninit_called_with;

static void probe_uninit_device(struct verbs_device *vdev)
{
	uninit_called_with = vdev;
}

static const struct verbs_device_ops probe_dev_ops = {
	.name = "pabi_probe",
	.uninit_device = probe_uninit_device,
};

#define PROBE_IDX	4242
#define PROBE_GUID	0x0123456789abcdefULL
#define PROBE_TEXT	"metaroce-pabi-probe"
#define CANARY		0x5a5aa5a55a5aa5a5ULL

/* The driver context: something before the verbs_context, as a provider may. */
struct probe_ctx {
	uint64_t canary;
	struct verbs_context vctx;
};

/* Our sentinel op table, followed by canaries the library must not read. */
struct probe_ops {
	struct verbs_context_ops ops;
	void *after[4];
};

static char sentinel_base[NUM_OPS];

static void *sentinel(size_t slot)
{
	return &sentinel_base[slot];
}

static void check_sysfs_readers(struct verbs_device *vdev, const char *dir)
{
	char buf[64] = "";
	int len;

	tap_ok(ibv_get_device_index(&vdev->device) == PROBE_IDX,
	       "ibv_get_device_index reads verbs_device.sysfs->ibdev_idx");
	tap_ok(ibv_get_device_guid(&vdev->device) == htobe64(PROBE_GUID),
	       "ibv_get_device_guid reads verbs_sysfs_dev.flags and .node_guid");
	len = ibv_read_ibdev_sysfs_file(buf, sizeof(buf), vdev->sysfs, "%s",
					"probe");
	tap_ok(len == (int)strlen(PROBE_TEXT) && !strcmp(buf, PROBE_TEXT),
	       "ibv_read_ibdev_sysfs_file reads verbs_sysfs_dev.ibdev_path (%s)",
	       dir);
	if (tap_fail)
		tap_bail("verbs_device / verbs_sysfs_dev layout is wrong");
}

static void check_set_ops(struct verbs_context *vctx)
{
	struct probe_ops *pops;
	void **priv = (void **)vctx->priv;
	size_t i, slot, base;
	void *got;

	pops = calloc(1, sizeof(*pops));
	if (!pops)
		tap_bail("out of memory");
	for (i = 0; i < NUM_OPS; i++) {
		void *s = sentinel(i);

		memcpy((char *)&pops->ops + i * sizeof(void *), &s, sizeof(s));
	}
	for (i = 0; i < 4; i++)
		pops->after[i] = (void *)(uintptr_t)CANARY;

	verbs_set_ops(vctx, &pops->ops);

	for (i = 0; i < NUM_MIRRORS; i++) {
		if (mirrors[i].pub_off == NO_MIRROR)
			continue;
		slot = mirrors[i].ops_off / sizeof(void *);
		memcpy(&got, (char *)vctx + mirrors[i].pub_off, sizeof(got));
		tap_ok(got == sentinel(slot),
		       "verbs_context_ops.%s is entry %zu as libibverbs sees it",
		       mirrors[i].name, slot);
	}

	/*
	 * libibverbs keeps its own copy of the table in the context's private
	 * data, a few words in.  Ours must be exactly as long as its copy: no
	 * missing entry at the end, and no canary read past our end.
	 */
	for (base = 0; base < 8 && priv[base] != sentinel(0); base++)
		;
	for (i = 0; base < 8 && i < NUM_OPS && priv[base + i] == sentinel(i); i++)
		;
	tap_ok(base < 8 && i == NUM_OPS &&
	       priv[base + NUM_OPS] != (void *)(uintptr_t)CANARY,
	       "libibverbs copies exactly %u ops entries (matched %zu)",
	       NUM_OPS, base < 8 ? i : 0);
	free(pops);
}

/* --- private parts of verbs objects ----------------------------------- */

/* Each object is followed by words the library must not read as its own. */
struct probe_qp {
	struct verbs_qp vqp;
	uint32_t after[4];
};

static void check_qp_to_qp_ex(void)
{
	struct probe_qp *pq;

	pq = malloc(sizeof(*pq));
	if (!pq)
		tap_bail("out of memory");

	/* Only comp_mask says "extended"; everything around it says not. */
	memset(pq, 0, sizeof(*pq));
	pq->vqp.comp_mask = VERBS_QP_EX;
	tap_ok(ibv_qp_to_qp_ex(&pq->vqp.qp) == &pq->vqp.qp_ex,
	       "ibv_qp_to_qp_ex reads verbs_qp.comp_mask (VERBS_QP_EX set)");

	/* And the other way round. */
	memset(pq, 0xff, sizeof(*pq));
	pq->vqp.comp_mask = VERBS_QP_XRCD;
	tap_ok(ibv_qp_to_qp_ex(&pq->vqp.qp) == NULL,
	       "ibv_qp_to_qp_ex reads verbs_qp.comp_mask (VERBS_QP_EX clear)");
	free(pq);
}

struct probe_mr {
	struct verbs_mr vmr;
	uint32_t after[4];
};

static struct verbs_mr *rereg_called_with, *dereg_called_with;

static int probe_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			  void *addr, size_t length, int access)
{
	rereg_called_with = vmr;
	return 0;
}

static int probe_dereg_mr(struct verbs_mr *vmr)
{
	dereg_called_with = vmr;
	return 0;
}

static void check_mr(struct verbs_context *vctx)
{
	static const struct verbs_context_ops mrv_ops = {
		.dereg_mr = probe_dereg_mr,
		.rereg_mr = probe_rereg_mr,
	};
	struct probe_mr *pm;
	int ret;

	pm = malloc(sizeof(*pm));
	if (!pm)
		tap_bail("out of memory");
	verbs_set_ops(vctx, &mrv_ops);

	/*
	 * ibv_rereg_mr() refuses anything but an IBV_MR_TYPE_MR before
	 * calling the provider: a NULL MR, surrounded by words that read as
	 * IBV_MR_TYPE_MR (0), is refused.
	 */
	memset(pm, 0, sizeof(*pm));
	pm->vmr.ibv_mr.context = &vctx->context;
	pm->vmr.mr_type = IBV_MR_TYPE_NULL_MR;
	errno = 0;
	ret = ibv_rereg_mr(&pm->vmr.ibv_mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
			   NULL, 0, IBV_ACCESS_LOCAL_WRITE);
	tap_ok(ret == IBV_REREG_MR_ERR_INPUT && errno == EINVAL &&
	       !rereg_called_with,
	       "ibv_rereg_mr reads verbs_mr.mr_type (IBV_MR_TYPE_NULL_MR refused: %d)",
	       ret);

	/* A plain MR surrounded by words that do not read as one is taken. */
	memset(pm, 0x5a, sizeof(*pm));
	pm->vmr.ibv_mr.context = &vctx->context;
	pm->vmr.mr_type = IBV_MR_TYPE_MR;
	pm->vmr.access = IBV_ACCESS_ON_DEMAND;	/* no fork bookkeeping */
	ret = ibv_rereg_mr(&pm->vmr.ibv_mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
			   NULL, 0, IBV_ACCESS_LOCAL_WRITE);
	tap_ok(ret == 0 && rereg_called_with == &pm->vmr,
	       "ibv_rereg_mr reads verbs_mr.mr_type and hands ops->rereg_mr the verbs_mr");

	ret = ibv_dereg_mr(&pm->vmr.ibv_mr);
	tap_ok(ret == 0 && dereg_called_with == &pm->vmr,
	       "ibv_dereg_mr hands ops->dereg_mr the verbs_mr");
	free(pm);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/pabi_probe.XXXXXX";
	char path[sizeof(dir) + 16];
	struct verbs_device *vdev;
	struct probe_ctx *pctx;
	struct verbs_context *vctx;
	void *handle;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PROVIDER.so\n", argv[0]);
		return 2;
	}

	tap_plan((int)(14 + num_public_mirrors()));

	/* 1: the provider resolves against this library (symbol versions). */
	handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	tap_ok(handle != NULL, "dlopen(%s, RTLD_NOW) %s", argv[1],
	       handle ? "" : dlerror());

	tap_ok(mirrors_cover_ops(),
	       "the probe's table covers all %u verbs_context_ops entries",
	       NUM_OPS);

	/* A fake device with a fake sysfs record. */
	if (!mkdtemp(dir))
		tap_bail("mkdtemp failed");
	snprintf(path, sizeof(path), "%s/probe", dir);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%s\n", PROBE_TEXT) < 0 || fclose(f))
		tap_bail("cannot write the probe file");

	vdev = calloc(1, sizeof(*vdev));
	if (!vdev)
		tap_bail("out of memory");
	vdev->sysfs = calloc(1, sizeof(*vdev->sysfs));
	if (!vdev->sysfs)
		tap_bail("out of memory");
	vdev->ops = &probe_dev_ops;
	atomic_init(&vdev->refcount, 0);
	vdev->sysfs->ibdev_idx = PROBE_IDX;
	vdev->sysfs->flags = VSYSFS_READ_NODE_GUID;
	vdev->sysfs->node_guid = PROBE_GUID;
	snprintf(vdev->sysfs->ibdev_path, sizeof(vdev->sysfs->ibdev_path),
		 "%s", dir);
	snprintf(vdev->device.name, sizeof(vdev->device.name), "probe0");

	check_sysfs_readers(vdev, dir);

	/* A context at a non-zero offset inside the driver's struct. */
	pctx = _verbs_init_and_alloc_context(&vdev->device, -1, sizeof(*pctx),
		(struct verbs_context *)offsetof(struct probe_ctx, vctx),
		RDMA_DRIVER_UNKNOWN);
	if (!pctx)
		tap_bail("_verbs_init_and_alloc_context failed");
	vctx = &pctx->vctx;
	tap_ok(pctx->canary == 0 && vctx->sz == sizeof(*vctx) && vctx->priv &&
	       vctx->context.device == &vdev->device &&
	       vctx->context.cmd_fd == -1 && vctx->context.async_fd == -1 &&
	       vctx->context.abi_compat == __VERBS_ABI_IS_EXTENDED,
	       "_verbs_init_and_alloc_context initialises the verbs_context at context_offset");
	tap_ok(atomic_load(&vdev->refcount) == 1,
	       "_verbs_init_and_alloc_context takes a reference in verbs_device.refcount");
	if (tap_fail)
		tap_bail("verbs_context / verbs_device layout is wrong");

	check_set_ops(vctx);
	check_qp_to_qp_ex();
	check_mr(vctx);

	/* Dropping the last reference frees sysfs and calls uninit_device. */
	verbs_uninit_context(vctx);
	tap_ok(uninit_called_with == vdev && atomic_load(&vdev->refcount) == 0,
	       "verbs_uninit_context drops the reference and calls verbs_device.ops->uninit_device");
	free(pctx);
	free(vdev);

	unlink(path);
	rmdir(dir);
	/* The provider stays loaded: libibverbs keeps a pointer to its ops. */

	return tap_done();
}
