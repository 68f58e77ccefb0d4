/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The part of libibverbs' private provider ABI that libmetaroce uses.
 *
 * rdma-core does not install its provider headers (infiniband/driver.h,
 * kern-abi.h, ...), so this file declares, from reading rdma-core's
 * libibverbs/driver.h, exactly the private types and functions the provider
 * needs.  The private ABI is versioned as a whole: every function below
 * lives in libibverbs under the ELF version IBVERBS_PRIVATE_<n>, and the
 * provider must be named libmetaroce-rdmav<n>.so for libibverbs to load
 * it.  rdma-core is meant to change <n> whenever a layout changes, but
 * did not always: the public struct ibv_qp_ex, which struct verbs_qp
 * embeds, grew in rdma-core 45 while <n> stayed 34 until 57.
 *
 * The declarations therefore come in generations, one per layout, and the
 * build picks the generation of the libibverbs it links against: the
 * Makefile passes MRV_RDMA_CORE (the release, from the library's file name
 * libibverbs.so.1.<abi>.<release>.<patch>) and MRV_PABI (<n>, from the
 * library's version definitions).
 *
 *   generation  rdma-core  <n>  checked against     what changed
 *   44          44         34   44.0 (Debian 12)    -
 *   45          45 - 56    34   56.1 (Debian 13)    ibv_qp_ex +wr_flush
 *   65          65         65   65.0 (Debian sid)   17 more ops (93),
 *                                                   verbs_context +6 ops,
 *                                                   ibv_cmd_get_context()
 *                                                   and ibv_cmd_create_cq_ex()
 *                                                   take one more argument
 *
 * (45-56 also covers Ubuntu 24.04's rdma-core 50: nothing this file
 * declares changed between 45 and 56.)  rdma-core 57 to 64 (<n> 57, 59, 64)
 * and anything after 65 are refused at compile time: their layouts are not
 * declared here and no library of theirs was at hand to check them against.
 * Everything else, checked below, was the same from 44 to 65.
 *
 * The layouts are checked three ways:
 *
 *  - at compile time, below: every place where a private struct embeds or
 *    mirrors a type of the installed public <infiniband/verbs.h> or of the
 *    kernel uAPI is pinned with static asserts, with the sizes of the
 *    generation's release;
 *  - at build time ("make check"): scripts/check-pabi.sh verifies that every
 *    function declared here is exported by the libibverbs built against with
 *    version IBVERBS_PRIVATE_<n> and used by the provider, bound to exactly
 *    that version, and tests/pabi_probe.c drives the real library with fake
 *    objects to confirm the struct offsets it reads and writes;
 *  - at load time: the dynamic linker refuses the provider unless the loaded
 *    libibverbs defines IBVERBS_PRIVATE_<n>; the provider refuses to
 *    register with a library of another generation (same <n>, other
 *    layouts: 44 against 45-56), and re-checks the objects libibverbs hands
 *    it (see provider.c and context.c).
 *
 * Only LP64 targets are supported for now: the numeric size and offset
 * asserts below are the values there.
 */
#ifndef METAROCE_PABI_H
#define METAROCE_PABI_H

#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#if !defined(MRV_RDMA_CORE) || !defined(MRV_PABI)
#error "build with -DMRV_RDMA_CORE=<rdma-core release> -DMRV_PABI=<n> (the Makefile reads both from libibverbs)"
#endif

/*
 * MRV_PABI_GEN: the generation.  MRV_PABI_RDMA_CORE_FIRST/_LAST: the
 * releases it covers; MRV_PABI_RDMA_CORE: the one it was checked against.
 */
#if MRV_RDMA_CORE == 44 && MRV_PABI == 34
#define MRV_PABI_GEN			44
#define MRV_PABI_RDMA_CORE_FIRST		44
#define MRV_PABI_RDMA_CORE_LAST		44
#define MRV_PABI_RDMA_CORE		44
#elif MRV_RDMA_CORE >= 45 && MRV_RDMA_CORE <= 56 && MRV_PABI == 34
#define MRV_PABI_GEN			45
#define MRV_PABI_RDMA_CORE_FIRST		45
#define MRV_PABI_RDMA_CORE_LAST		56
#define MRV_PABI_RDMA_CORE		56
#elif MRV_RDMA_CORE == 65 && MRV_PABI == 65
#define MRV_PABI_GEN			65
#define MRV_PABI_RDMA_CORE_FIRST		65
#define MRV_PABI_RDMA_CORE_LAST		65
#define MRV_PABI_RDMA_CORE		65
#else
#error "libmetaroce declares the private libibverbs ABI of rdma-core 44 (IBVERBS_PRIVATE_34), 45-56 (34) and 65 (65) only: see pabi.h"
#endif

#define MRV_PABI_STR_(x)		#x
#define MRV_PABI_STR(x)		MRV_PABI_STR_(x)
#define MRV_PABI_PASTE_(a, b)	a##b
#define MRV_PABI_PASTE(a, b)	MRV_PABI_PASTE_(a, b)

#define MRV_PABI_VERSION_NAME	"IBVERBS_PRIVATE_" MRV_PABI_STR(MRV_PABI)

/*
 * The generation's numbers: sizes of public structs the private ones embed
 * and, derived from them, the private offsets libibverbs uses.
 */
#if MRV_PABI_GEN >= 65
#define MRV_PABI_VERBS_CONTEXT_SIZE	696	/* + 6 ops */
#else
#define MRV_PABI_VERBS_CONTEXT_SIZE	648
#endif
#if MRV_PABI_GEN >= 45
#define MRV_PABI_QP_EX_SIZE		360	/* + wr_flush */
#else
#define MRV_PABI_QP_EX_SIZE		352
#endif

#if UINTPTR_MAX != UINT64_MAX
#error "libmetaroce: only LP64 targets are supported"
#endif

/*
 * Public types the private structs below are built from.  If the installed
 * public header ever disagrees with the one the generation's release was
 * built with, the private layouts (which libibverbs compiled against its own
 * copy) are wrong.
 */
static_assert(IBV_SYSFS_NAME_MAX == 64, "IBV_SYSFS_NAME_MAX changed");
static_assert(IBV_SYSFS_PATH_MAX == 256, "IBV_SYSFS_PATH_MAX changed");
static_assert(sizeof(struct ibv_device) == 664, "struct ibv_device changed");
static_assert(sizeof(struct ibv_context) == 328, "struct ibv_context changed");
static_assert(sizeof(struct verbs_context) == MRV_PABI_VERBS_CONTEXT_SIZE,
	      "struct verbs_context changed");
static_assert(offsetof(struct verbs_context, context) +
		      sizeof(struct ibv_context) == sizeof(struct verbs_context),
	      "struct ibv_context must be the last member of verbs_context");
static_assert(offsetof(struct verbs_context, sz) + sizeof(size_t) ==
		      offsetof(struct verbs_context, context),
	      "verbs_context.sz must sit right before the ibv_context");

/* libibverbs links its own objects with a two-pointer list node. */
struct mrv_pabi_list_node {
	struct mrv_pabi_list_node *next;
	struct mrv_pabi_list_node *prev;
};

/*
 * Device matching table entry.  libmetaroce matches with a match_device
 * callback, but libibverbs walks match_table unconditionally whenever a
 * device reports a known driver_id, so a provider must supply at least an
 * empty (sentinel-only) table.
 */
enum {
	VERBS_MATCH_SENTINEL = 0,
};

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

static_assert(sizeof(struct verbs_match_ent) == 24,
	      "verbs_match_ent layout");

/* verbs_sysfs_dev.flags: which lazily read fields are valid. */
enum {
	VSYSFS_READ_MODALIAS = 1 << 0,
	VSYSFS_READ_NODE_GUID = 1 << 1,
};

/* One uverbs device as libibverbs found it in sysfs / netlink. */
struct verbs_sysfs_dev {
	struct mrv_pabi_list_node entry;
	void *provider_data;
	const struct verbs_match_ent *match;
	unsigned int flags;
	char sysfs_name[IBV_SYSFS_NAME_MAX];	/* "uverbsN" */
	dev_t sysfs_cdev;
	char ibdev_name[IBV_SYSFS_NAME_MAX];	/* e.g. "mr0" */
	char ibdev_path[IBV_SYSFS_PATH_MAX];	/* /sys/class/infiniband/mr0 */
	char modalias[512];
	uint64_t node_guid;			/* host order */
	uint32_t driver_id;			/* enum rdma_driver_id */
	enum ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver;			/* uverbs ABI of the device */
	struct timespec time_created;
};

static_assert(offsetof(struct verbs_sysfs_dev, sysfs_name) == 36,
	      "verbs_sysfs_dev layout");
static_assert(offsetof(struct verbs_sysfs_dev, ibdev_path) == 176,
	      "verbs_sysfs_dev layout");
static_assert(offsetof(struct verbs_sysfs_dev, node_guid) == 944,
	      "verbs_sysfs_dev layout");
static_assert(sizeof(struct verbs_sysfs_dev) == 992,
	      "verbs_sysfs_dev layout");

struct verbs_device;
struct verbs_mr;

/* What a provider hands to verbs_register_driver_<n>(). */
struct verbs_device_ops {
	const char *name;

	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;

	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);

	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);

	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

static_assert(sizeof(struct verbs_device_ops) == 72,
	      "verbs_device_ops layout");

/* The provider's device object; the provider allocates it (alloc_device). */
struct verbs_device {
	struct ibv_device device;		/* must be first */
	const struct verbs_device_ops *ops;	/* set by libibverbs */
	atomic_int refcount;			/* owned by libibverbs */
	struct mrv_pabi_list_node entry;	/* owned by libibverbs */
	struct verbs_sysfs_dev *sysfs;		/* set by libibverbs */
	uint64_t core_support;			/* IB_UVERBS_CORE_SUPPORT_* */
};

static_assert(offsetof(struct verbs_device, device) == 0,
	      "ibv_device must be the first member of verbs_device");
static_assert(offsetof(struct verbs_device, ops) ==
		      sizeof(struct ibv_device),
	      "verbs_device layout");
static_assert(offsetof(struct verbs_device, sysfs) == 696,
	      "verbs_device layout");
static_assert(sizeof(struct verbs_device) == 712, "verbs_device layout");

static inline struct verbs_device *mrv_verbs_device(struct ibv_device *dev)
{
	return (struct verbs_device *)((char *)dev -
				       offsetof(struct verbs_device, device));
}

/*
 * Every operation a provider may implement.  libibverbs copies the non-NULL
 * entries into its per-context table (verbs_set_ops) and falls back to
 * EOPNOTSUPP stubs for the rest.  The member order is the ABI; upstream keeps
 * it sorted by name, which "make check" verifies, and tests/pabi_probe.c
 * checks the position of every member libibverbs mirrors into the public
 * struct verbs_context / ibv_context_ops.
 */
struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
#if MRV_PABI_GEN >= 65
	void *(*alloc_buf)(struct ibv_pd *pd, size_t size, struct ibv_buf **buf);
#endif
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
#if MRV_PABI_GEN >= 65
	struct ibv_dmah *(*alloc_dmah)(struct ibv_context *context,
				       struct ibv_dmah_init_attr *attr);
#endif
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	struct ibv_pd *(*alloc_parent_domain)(struct ibv_context *context,
			struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	struct ibv_td *(*alloc_td)(struct ibv_context *context,
				   struct ibv_td_init_attr *init_attr);
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	int (*attach_counters_point_flow)(struct ibv_counters *counters,
					  struct ibv_counter_attach_attr *attr,
					  struct ibv_flow *flow);
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
#if MRV_PABI_GEN >= 65
	struct ibv_comp_cntr *(*create_comp_cntr)(struct ibv_context *context,
			struct ibv_comp_cntr_init_attr *attr);
#endif
	struct ibv_counters *(*create_counters)(struct ibv_context *context,
			struct ibv_counters_init_attr *init_attr);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp,
					struct ibv_flow_attr *flow_attr);
	struct ibv_flow_action *(*create_flow_action_esp)(
			struct ibv_context *context,
			struct ibv_flow_action_esp_attr *attr);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *attr);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(
			struct ibv_context *context,
			struct ibv_rwq_ind_table_init_attr *init_attr);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *attr);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *attr);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *attr);
#if MRV_PABI_GEN >= 65
	int (*dealloc_dmah)(struct ibv_dmah *dmah);
#endif
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*dealloc_td)(struct ibv_td *td);
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
#if MRV_PABI_GEN >= 65
	int (*destroy_comp_cntr)(struct ibv_comp_cntr *comp_cntr);
#endif
	int (*destroy_counters)(struct ibv_counters *counters);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_flow)(struct ibv_flow *flow);
	int (*destroy_flow_action)(struct ibv_flow_action *action);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *table);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
#if MRV_PABI_GEN >= 65
	int (*dm_export_dmabuf_fd)(struct ibv_dm *dm);
	void (*free_buf)(struct ibv_buf *buf);
#endif
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_dm *(*import_dm)(struct ibv_context *context,
				    uint32_t dm_handle);
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
#if MRV_PABI_GEN >= 65
	int (*inc_comp_cntr)(struct ibv_comp_cntr *comp_cntr, uint64_t amount);
	int (*inc_err_comp_cntr)(struct ibv_comp_cntr *comp_cntr,
				 uint64_t amount);
#endif
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	int (*modify_flow_action_esp)(struct ibv_flow_action *action,
				      struct ibv_flow_action_esp_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	int (*modify_qp_rate_limit)(struct ibv_qp *qp,
				    struct ibv_qp_rate_limit_attr *attr);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			  int attr_mask);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *attr);
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr);
#if MRV_PABI_GEN >= 65
	int (*qp_attach_comp_cntr)(struct ibv_qp *qp,
				   struct ibv_comp_cntr *comp_cntr,
				   struct ibv_qp_attach_comp_cntr_attr *attr);
	int (*query_comp_cntr_caps)(struct ibv_context *context,
				    struct ibv_comp_cntr_caps *caps,
				    size_t caps_size);
#endif
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
#if MRV_PABI_GEN >= 65
	int (*query_port_speed)(struct ibv_context *context, uint32_t port_num,
				uint64_t *speed);
#endif
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(struct ibv_qp *qp,
				      enum ibv_wr_opcode op, uint32_t flags);
	int (*query_rt_values)(struct ibv_context *context,
			       struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr);
#if MRV_PABI_GEN >= 65
	int (*read_comp_cntr)(struct ibv_comp_cntr *comp_cntr, uint64_t *value);
#endif
	int (*read_counters)(struct ibv_counters *counters,
			     uint64_t *counters_value, uint32_t ncounters,
			     uint32_t flags);
#if MRV_PABI_GEN >= 65
	int (*read_err_comp_cntr)(struct ibv_comp_cntr *comp_cntr,
				  uint64_t *value);
#endif
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
#if MRV_PABI_GEN >= 65
	struct ibv_mr *(*reg_mr_ex)(struct ibv_pd *pd,
				    struct ibv_mr_init_attr *mr_init_attr);
#endif
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
#if MRV_PABI_GEN >= 65
	int (*set_comp_cntr)(struct ibv_comp_cntr *comp_cntr, uint64_t value);
#endif
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
#if MRV_PABI_GEN >= 65
	int (*set_err_comp_cntr)(struct ibv_comp_cntr *comp_cntr,
				 uint64_t value);
#endif
	void (*unimport_dm)(struct ibv_dm *dm);
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};

#if MRV_PABI_GEN >= 65
#define MRV_PABI_NUM_CONTEXT_OPS	93
#else
#define MRV_PABI_NUM_CONTEXT_OPS	76
#endif
static_assert(sizeof(struct verbs_context_ops) ==
		      MRV_PABI_NUM_CONTEXT_OPS * sizeof(void *),
	      "verbs_context_ops must be MRV_PABI_NUM_CONTEXT_OPS function pointers");

/*
 * Verbs objects.  libibverbs' public calls and its ibv_cmd_* helpers treat
 * the public object a provider returns as the first member of one of these
 * wrappers, and read or write the private fields after it, so the provider
 * must embed exactly these.  Public sizes are the generation's on LP64.
 */
static_assert(sizeof(struct ibv_mr) == 48, "struct ibv_mr changed");
static_assert(sizeof(struct ibv_cq) == 128, "struct ibv_cq changed");
static_assert(sizeof(struct ibv_cq_ex) == 288, "struct ibv_cq_ex changed");
static_assert(sizeof(struct ibv_qp) == 160, "struct ibv_qp changed");
static_assert(sizeof(struct ibv_qp_ex) == MRV_PABI_QP_EX_SIZE,
	      "struct ibv_qp_ex changed");
static_assert(sizeof(struct ibv_srq) == 128, "struct ibv_srq changed");

/* verbs_mr.mr_type; libibverbs refuses ibv_rereg_mr() unless it is _MR. */
enum ibv_mr_type {
	IBV_MR_TYPE_MR,
	IBV_MR_TYPE_NULL_MR,
	IBV_MR_TYPE_IMPORTED_MR,
	IBV_MR_TYPE_DMABUF_MR,
};

/*
 * A memory region.  ibv_cmd_reg_mr() sets mr_type and access, which
 * ibv_dereg_mr() reads back; ops->rereg_mr and ops->dereg_mr receive it.
 */
struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum ibv_mr_type mr_type;
	int access;				/* IBV_ACCESS_* at registration */
};

static_assert(offsetof(struct verbs_mr, ibv_mr) == 0, "verbs_mr layout");
static_assert(offsetof(struct verbs_mr, mr_type) == 48, "verbs_mr layout");
static_assert(offsetof(struct verbs_mr, access) == 52, "verbs_mr layout");
static_assert(sizeof(struct verbs_mr) == 56, "verbs_mr layout");

/* XRC domains are not supported: only pointers to them appear below. */
struct verbs_xrcd;

/*
 * A completion queue.  An ibv_cq_ex starts with the members of an ibv_cq
 * (public: ibv_cq_ex_to_cq() is a cast), so one allocation serves both.
 */
struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

static_assert(sizeof(struct verbs_cq) == 288, "verbs_cq layout");
static_assert(offsetof(struct ibv_cq_ex, handle) ==
		      offsetof(struct ibv_cq, handle) &&
	      offsetof(struct ibv_cq_ex, async_events_completed) ==
		      offsetof(struct ibv_cq, async_events_completed),
	      "ibv_cq_ex must start with the members of ibv_cq");

/* verbs_qp.comp_mask */
enum verbs_qp_mask {
	VERBS_QP_XRCD = 1 << 0,
	/* qp_ex is valid: ibv_qp_to_qp_ex() returns it (ibv_wr_* API) */
	VERBS_QP_EX = 1 << 1,
};

/*
 * A queue pair.  ibv_cmd_create_qp_ex() zeroes comp_mask (setting only
 * VERBS_QP_XRCD for XRC), ibv_qp_to_qp_ex() reads it.
 */
struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;			/* enum verbs_qp_mask */
	struct verbs_xrcd *xrcd;
};

static_assert(offsetof(struct ibv_qp_ex, qp_base) == 0, "ibv_qp_ex layout");
static_assert(offsetof(struct verbs_qp, comp_mask) == MRV_PABI_QP_EX_SIZE,
	      "verbs_qp layout");
static_assert(offsetof(struct verbs_qp, xrcd) == MRV_PABI_QP_EX_SIZE + 8,
	      "verbs_qp layout");
static_assert(sizeof(struct verbs_qp) == MRV_PABI_QP_EX_SIZE + 16,
	      "verbs_qp layout");

/*
 * A shared receive queue as ibv_cmd_create_srq_ex() sees it; it sets
 * srq_type and cq (and srq_num, xrcd for XRC) on its ioctl() path only.
 */
struct verbs_srq {
	struct ibv_srq srq;
	enum ibv_srq_type srq_type;
	struct verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};

static_assert(offsetof(struct verbs_srq, srq_type) == 128, "verbs_srq layout");
static_assert(offsetof(struct verbs_srq, xrcd) == 136, "verbs_srq layout");
static_assert(offsetof(struct verbs_srq, cq) == 144, "verbs_srq layout");
static_assert(offsetof(struct verbs_srq, srq_num) == 152, "verbs_srq layout");
static_assert(sizeof(struct verbs_srq) == 160, "verbs_srq layout");

/*
 * uverbs write() command layouts.  libibverbs declares every command as the
 * uverbs header followed by the kernel's request from <rdma/ib_user_verbs.h>
 * (its "core payload"), optionally followed by provider data.  The ibv_cmd_*
 * helpers fill the header and the core payload themselves, and take
 * everything between sizeof(their command) and cmd_size as provider data, so
 * what the provider needs is the exact size and alignment.  The kernel
 * structs end in flexible arrays and cannot be embedded, hence a byte array
 * of the kernel struct's size and alignment.  The sizes are rdma-core's
 * (its kernel-headers/rdma/ib_user_verbs.h, which libibverbs was compiled
 * with): a smaller command would be overrun.
 */
struct mrv_pabi_ex_hdr {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex_hdr;
};

static_assert(sizeof(struct ib_uverbs_cmd_hdr) == 8, "uverbs header changed");
static_assert(sizeof(struct mrv_pabi_ex_hdr) == 24, "uverbs header changed");

#define MRV_PABI_CMD_LAYOUT(name, hdr_type, kabi, kabi_size, align)	\
	struct name {							\
		struct hdr_type hdr;					\
		_Alignas(struct kabi)					\
		unsigned char core_payload[sizeof(struct kabi)];	\
	};								\
	static_assert(sizeof(struct kabi) == (kabi_size),		\
		      "struct " #kabi " changed");			\
	static_assert(offsetof(struct name, core_payload) ==		\
			      sizeof(struct hdr_type) &&		\
		      sizeof(struct name) == sizeof(struct hdr_type) +	\
					     sizeof(struct kabi) &&	\
		      _Alignof(struct name) == _Alignof(struct kabi) &&	\
		      sizeof(struct name) % (align) == 0,		\
		      "struct " #name " layout")

/* A write() command: 4-byte units. */
#define MRV_PABI_CMD(name, kabi, kabi_size) \
	MRV_PABI_CMD_LAYOUT(name, ib_uverbs_cmd_hdr, kabi, kabi_size, 4)
/* An extended write() command: 8-byte units. */
#define MRV_PABI_CMD_EX(name, kabi, kabi_size) \
	MRV_PABI_CMD_LAYOUT(name, mrv_pabi_ex_hdr, kabi, kabi_size, 8)

MRV_PABI_CMD(ibv_get_context, ib_uverbs_get_context, 8);
MRV_PABI_CMD(ibv_query_port, ib_uverbs_query_port, 16);
MRV_PABI_CMD(ibv_alloc_pd, ib_uverbs_alloc_pd, 8);
MRV_PABI_CMD(ibv_reg_mr, ib_uverbs_reg_mr, 40);
MRV_PABI_CMD(ibv_rereg_mr, ib_uverbs_rereg_mr, 48);
MRV_PABI_CMD(ibv_create_cq, ib_uverbs_create_cq, 32);
MRV_PABI_CMD(ibv_resize_cq, ib_uverbs_resize_cq, 16);
MRV_PABI_CMD(ibv_create_srq, ib_uverbs_create_srq, 32);
MRV_PABI_CMD(ibv_create_xsrq, ib_uverbs_create_xsrq, 48);
MRV_PABI_CMD(ibv_modify_srq, ib_uverbs_modify_srq, 16);
MRV_PABI_CMD(ibv_query_srq, ib_uverbs_query_srq, 16);
MRV_PABI_CMD(ibv_create_qp, ib_uverbs_create_qp, 56);
MRV_PABI_CMD(ibv_query_qp, ib_uverbs_query_qp, 16);
MRV_PABI_CMD(ibv_modify_qp, ib_uverbs_modify_qp, 112);
MRV_PABI_CMD_EX(ibv_create_cq_ex, ib_uverbs_ex_create_cq, 32);
MRV_PABI_CMD_EX(ibv_modify_qp_ex, ib_uverbs_ex_modify_qp, 120);

/*
 * Responses.  Where the kernel may append metaroce data, the core part is
 * spelled out so that the metaroce part can follow it in one struct;
 * elsewhere the provider passes the uAPI struct itself, whose size
 * libibverbs (compiled with rdma-core's copy) takes as the core part.
 */
struct ibv_get_context_resp {
	__u32 async_fd;
	__u32 num_comp_vectors;
};

struct ibv_alloc_pd_resp {
	__u32 pd_handle;
};

static_assert(sizeof(struct ibv_get_context_resp) ==
		      sizeof(struct ib_uverbs_get_context_resp) &&
	      offsetof(struct ibv_get_context_resp, async_fd) ==
		      offsetof(struct ib_uverbs_get_context_resp, async_fd) &&
	      offsetof(struct ibv_get_context_resp, num_comp_vectors) ==
		      offsetof(struct ib_uverbs_get_context_resp,
			       num_comp_vectors),
	      "ibv_get_context_resp layout");
static_assert(sizeof(struct ibv_alloc_pd_resp) ==
		      sizeof(struct ib_uverbs_alloc_pd_resp) &&
	      offsetof(struct ibv_alloc_pd_resp, pd_handle) ==
		      offsetof(struct ib_uverbs_alloc_pd_resp, pd_handle),
	      "ibv_alloc_pd_resp layout");

#define MRV_PABI_RESP_SIZE(kabi, size)					\
	static_assert(sizeof(struct kabi) == (size) &&			\
		      sizeof(struct kabi) % 4 == 0,			\
		      "struct " #kabi " changed")

MRV_PABI_RESP_SIZE(ib_uverbs_get_context_resp, 8);
MRV_PABI_RESP_SIZE(ib_uverbs_alloc_pd_resp, 4);
MRV_PABI_RESP_SIZE(ib_uverbs_reg_mr_resp, 12);
MRV_PABI_RESP_SIZE(ib_uverbs_rereg_mr_resp, 8);
MRV_PABI_RESP_SIZE(ib_uverbs_create_cq_resp, 8);
MRV_PABI_RESP_SIZE(ib_uverbs_ex_create_cq_resp, 16);
MRV_PABI_RESP_SIZE(ib_uverbs_resize_cq_resp, 8);
MRV_PABI_RESP_SIZE(ib_uverbs_create_srq_resp, 16);
MRV_PABI_RESP_SIZE(ib_uverbs_create_qp_resp, 32);
MRV_PABI_RESP_SIZE(ib_uverbs_ex_modify_qp_resp, 8);
MRV_PABI_RESP_SIZE(ib_uverbs_create_ah_resp, 4);

/*
 * Functions exported by libibverbs with version IBVERBS_PRIVATE_<n>.  Unless
 * stated otherwise the ibv_cmd_* calls return 0 or a positive errno value
 * and do not touch errno.  cmd_size and resp_size are the full lengths,
 * provider data included, and must be multiples of 4 (8 for the extended
 * commands).
 */

/*
 * Adds a provider to libibverbs' driver list; called from a constructor.
 * Its name carries <n>: verbs_register_driver_34(), _65(), ...
 */
#define mrv_verbs_register_driver \
	MRV_PABI_PASTE(verbs_register_driver_, MRV_PABI)
void mrv_verbs_register_driver(const struct verbs_device_ops *ops);

/*
 * calloc()s alloc_size bytes, initialises the verbs_context found
 * context_offset bytes into it (takes ownership of cmd_fd, installs the
 * EOPNOTSUPP stubs) and returns the block; NULL with errno set on failure,
 * in which case cmd_fd has been closed.
 */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
/* Releases what the above set up (closes the fds); does not free memory. */
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);

/*
 * GET_CONTEXT: fills async_fd / num_comp_vectors (and core_support).  From
 * rdma-core 65 on it also takes file descriptors to hand the kernel
 * (fd_arr, NULL for none); mrv_cmd_get_context() is the call for every
 * generation.
 */
#if MRV_PABI_GEN >= 65
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ibv_fd_arr *fd_arr,
			struct ibv_get_context_resp *resp, size_t resp_size);

static inline int mrv_cmd_get_context(struct verbs_context *context,
				      struct ibv_get_context *cmd,
				      size_t cmd_size,
				      struct ibv_get_context_resp *resp,
				      size_t resp_size)
{
	return ibv_cmd_get_context(context, cmd, cmd_size, NULL, resp,
				   resp_size);
}
#else
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ibv_get_context_resp *resp, size_t resp_size);
#define mrv_cmd_get_context ibv_cmd_get_context
#endif
/* QUERY_DEVICE(_EX); resp/resp_size may be NULL. */
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ibv_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);

/*
 * REG_MR: sets vmr->ibv_mr.handle, lkey, rkey, context, vmr->mr_type
 * (IBV_MR_TYPE_MR) and vmr->access; ibv_reg_mr() sets pd, addr, length.
 */
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
/*
 * REREG_MR (flags: IBV_REREG_MR_CHANGE_*): sets lkey, rkey, and context when
 * the PD changes; ibv_rereg_mr() sets pd, addr, length.
 */
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp,
		     size_t resp_sz);
/*
 * The destroy calls return 0 once the kernel object is gone, also when the
 * device was disassociated meanwhile; the CQ, QP and SRQ ones first wait
 * until every event the kernel reported for the object has been acked.
 */
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);

/*
 * CREATE_CQ: sets cq->context, handle and cqe (the granted size); the
 * public wrappers initialise the rest (verbs_init_cq()).  The _ex variant
 * returns EOPNOTSUPP for comp_mask bits other than FLAGS and PD, and asks
 * the kernel for IB_UVERBS_CQ_FLAGS_* derived from the attributes.
 */
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
#if MRV_PABI_GEN >= 65
/*
 * From rdma-core 65 on, a provider may hand the kernel the CQ's buffer
 * (prov_attr, with CREATE_CQ_CMD_FLAGS_WITH_MEM_* in cmd_flags); metaroce
 * does not: mrv_cmd_create_cq_ex() passes NULL.
 */
struct verbs_create_cq_prov_attr;
int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 struct verbs_create_cq_prov_attr *prov_attr,
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags);

static inline int mrv_cmd_create_cq_ex(struct ibv_context *context,
				       const struct ibv_cq_init_attr_ex *cq_attr,
				       struct verbs_cq *cq,
				       struct ibv_create_cq_ex *cmd,
				       size_t cmd_size,
				       struct ib_uverbs_ex_create_cq_resp *resp,
				       size_t resp_size, uint32_t cmd_flags)
{
	return ibv_cmd_create_cq_ex(context, cq_attr, NULL, cq, cmd, cmd_size,
				    resp, resp_size, cmd_flags);
}
#else
int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags);
#define mrv_cmd_create_cq_ex ibv_cmd_create_cq_ex
#endif
/*
 * POLL_CQ: returns the number of completions (0..ne) or -1 (errno from the
 * failed malloc() or system call).  Allocates ne uverbs entries for the
 * response.  wc_flags are the kernel's raw IB_WC_* bits, untranslated.
 */
int ibv_cmd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only);
/* RESIZE_CQ: sets cq->cqe to the granted size. */
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe,
		      struct ibv_resize_cq *cmd, size_t cmd_size,
		      struct ib_uverbs_resize_cq_resp *resp, size_t resp_size);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);

/*
 * CREATE_SRQ: sets srq->context, handle, mutex and cond, and writes the
 * granted max_wr/max_sge back into the attributes.  ibv_create_srq() sets
 * pd, srq_context, events_completed; for the _ex variant (EOPNOTSUPP for
 * unknown comp_mask bits, EINVAL without IBV_SRQ_INIT_ATTR_PD) nobody does.
 */
int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr_ex,
			  struct ibv_create_xsrq *cmd, size_t cmd_size,
			  struct ib_uverbs_create_srq_resp *resp,
			  size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);

/*
 * CREATE_QP: sets qp->context, handle, qp_num, qp_context, pd, send_cq,
 * recv_cq, srq, qp_type, state (RESET), events_completed, mutex and cond,
 * and writes the granted capabilities back into attr->cap.  The _ex
 * variant takes the PD from the attributes (EINVAL for comp_mask bits other
 * than PD, XRCD and SEND_OPS_FLAGS, or without PD) and zeroes
 * vqp->comp_mask.  Both dereference the CQs, SRQ and PD they are given.
 */
int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
		      struct ibv_qp_init_attr *attr,
		      struct ibv_create_qp *cmd, size_t cmd_size,
		      struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size);
/* QUERY_QP: EOPNOTSUPP for attr_mask bits from IBV_QP_RATE_LIMIT on. */
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
/*
 * MODIFY_QP: EOPNOTSUPP for attr_mask bits from IBV_QP_RATE_LIMIT on, which
 * only the extended command carries.  Neither updates qp->state: the
 * public ibv_modify_qp() does.
 */
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_modify_qp_ex(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask, struct ibv_modify_qp_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_modify_qp_resp *resp,
			 size_t resp_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);

/*
 * POST_SEND / POST_RECV / POST_SRQ_RECV: copy the whole list, with every
 * wr->num_sge entries of wr->sg_list, into one command built with alloca();
 * for UD QPs wr->wr.ud.ah->handle is read.  On failure *bad_wr is the first
 * work request the kernel did not take.
 */
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);
int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);
int ibv_cmd_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr);

/*
 * CREATE_AH: sets ah->handle and ah->context; ibv_create_ah() sets pd.  On
 * RoCE the kernel resolves the destination MAC from the GID.
 */
int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);

/* ATTACH_MCAST / DETACH_MCAST: a UD QP joins or leaves a multicast GID. */
int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);

/*
 * Reads <sysfs_dev->ibdev_path>/<printf(fmt, ...)> into buf, strips one
 * trailing newline and NUL-terminates.  Returns the length, or -1 with
 * errno set (also when the contents would not fit).
 */
int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
			      struct verbs_sysfs_dev *sysfs_dev,
			      const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif /* METAROCE_PABI_H */
