// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * verbs_objects DEVICE: every verbs object libmetaroce offers, created,
 * used as far as one device allows, and destroyed; and the errors of
 * invalid calls (prints TAP).  DEVICE's netdev must be up with an IPv4
 * address (for a RoCE v2 GID).
 */
#include <sys/mman.h>
#include <unistd.h>

#include "verbs_conn.h"

#define BUF_SIZE 65536

struct env {
	struct ibv_context *ctx;
	struct ibv_context *ctx2;	/* a second context of the device */
	struct ibv_device_attr_ex dev;
	struct ibv_port_attr port;
	struct ibv_pd *pd;
	union ibv_gid gid;
	int gid_index;
	void *buf;
};

/* --- PDs and MRs ------------------------------------------------------- */

static void test_mr(struct env *e)
{
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		       IBV_ACCESS_REMOTE_READ;
	struct ibv_pd *pd2, *pd_other;
	struct ibv_mr *mr, *bad;
	void *hole, *buf2;
	int ret, err;

	mr = ibv_reg_mr(e->pd, e->buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE);
	tap_ok(mr && mr->pd == e->pd && mr->context == e->ctx &&
	       mr->addr == e->buf && mr->length == BUF_SIZE,
	       "ibv_reg_mr of 64 KiB, local write (%s)",
	       mr ? "ok" : errname(errno));
	if (!mr) {
		tap_diag("no MR: skipping the rest of the MR tests");
		return;
	}

	bad = ibv_reg_mr(e->pd, e->buf, BUF_SIZE, IBV_ACCESS_REMOTE_WRITE);
	if (!expect_null(bad, errno, EINVAL,
			 "ibv_reg_mr remote write without local write"))
		ibv_dereg_mr(bad);
	/* ib_core refuses it: EINVAL on 6.1, EOPNOTSUPP on 6.12. */
	bad = ibv_reg_mr(e->pd, e->buf, BUF_SIZE,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	err = errno;
	tap_ok(!bad && (err == EOPNOTSUPP || err == EINVAL),
	       "ibv_reg_mr on-demand paging: %s (expected EOPNOTSUPP or EINVAL)",
	       bad ? "succeeded" : errname(err));
	if (bad)
		ibv_dereg_mr(bad);

	hole = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (hole == MAP_FAILED)
		tap_bail("mmap failed");
	munmap(hole, 4096);
	bad = ibv_reg_mr(e->pd, hole, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!expect_null(bad, errno, EFAULT, "ibv_reg_mr of unmapped memory"))
		ibv_dereg_mr(bad);

	/* Rereg: access, translation, PD. */
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, rw);
	tap_ok(!ret, "ibv_rereg_mr: new access flags (%d, %s)", ret,
	       ret ? errname(errno) : "ok");

	buf2 = calloc(1, BUF_SIZE);
	if (!buf2)
		tap_bail("out of memory");
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, buf2,
			   BUF_SIZE, 0);
	tap_ok(!ret && mr->addr == buf2 && mr->length == BUF_SIZE,
	       "ibv_rereg_mr: new address range (%d, %s)", ret,
	       ret ? errname(errno) : "ok");

	pd2 = ibv_alloc_pd(e->ctx);
	if (!pd2)
		tap_bail("ibv_alloc_pd: %s", errname(errno));
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	tap_ok(!ret && mr->pd == pd2, "ibv_rereg_mr: new PD (%d, %s)", ret,
	       ret ? errname(errno) : "ok");

	expect_ret(ibv_dealloc_pd(pd2), EBUSY,
		   "ibv_dealloc_pd of a PD with an MR");

	pd_other = ibv_alloc_pd(e->ctx2);
	if (!pd_other)
		tap_bail("ibv_alloc_pd: %s", errname(errno));
	errno = 0;
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd_other, NULL, 0, 0);
	tap_ok(ret == IBV_REREG_MR_ERR_CMD && errno == EINVAL && mr->pd == pd2,
	       "ibv_rereg_mr to another context's PD: %d, %s (expected %d, EINVAL)",
	       ret, errname(errno), IBV_REREG_MR_ERR_CMD);
	ibv_dealloc_pd(pd_other);

	expect_ret(ibv_dereg_mr(mr), 0, "ibv_dereg_mr");
	expect_ret(ibv_dealloc_pd(pd2), 0, "ibv_dealloc_pd once the MR is gone");
	free(buf2);
}

/* --- CQs ----------------------------------------------------------------- */

static void test_cq(struct env *e)
{
	struct ibv_cq_init_attr_ex cxa = {};
	struct ibv_poll_cq_attr pa = {};
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq, *bad;
	struct ibv_cq_ex *cqx;
	int max_cqe = e->dev.orig_attr.max_cqe;
	struct ibv_wc wc[4];
	int ret;

	cq = ibv_create_cq(e->ctx, 1, NULL, NULL, 0);
	tap_ok(cq && cq->cqe >= 1 && cq->context == e->ctx,
	       "ibv_create_cq with 1 entry (%s, cqe %d)",
	       cq ? "ok" : errname(errno), cq ? cq->cqe : 0);
	if (!cq)
		tap_bail("cannot create a CQ");

	ret = ibv_poll_cq(cq, 4, wc);
	tap_ok(ret == 0, "an empty CQ polls 0 completions (%d)", ret);
	tap_ok(ibv_poll_cq(cq, -1, wc) < 0, "ibv_poll_cq with -1 entries fails");
	expect_ret(ibv_req_notify_cq(cq, 0), 0, "ibv_req_notify_cq");
	expect_ret(ibv_req_notify_cq(cq, 1), 0,
		   "ibv_req_notify_cq, solicited only");

	ret = ibv_resize_cq(cq, 100);
	tap_ok(!ret && cq->cqe >= 100, "ibv_resize_cq to 100 (%s, cqe %d)",
	       errname(ret), cq->cqe);
	ret = ibv_resize_cq(cq, 10);
	tap_ok(!ret && cq->cqe >= 10, "ibv_resize_cq down to 10 (%s, cqe %d)",
	       errname(ret), cq->cqe);
	expect_ret(ibv_resize_cq(cq, 0), EINVAL, "ibv_resize_cq to 0");
	expect_ret(ibv_resize_cq(cq, max_cqe + 1), EINVAL,
		   "ibv_resize_cq beyond max_cqe");
	expect_ret(ibv_destroy_cq(cq), 0, "ibv_destroy_cq");

	cq = ibv_create_cq(e->ctx, max_cqe, NULL, NULL, 0);
	tap_ok(cq != NULL, "ibv_create_cq with max_cqe (%d) entries (%s)",
	       max_cqe, cq ? "ok" : errname(errno));
	if (cq)
		ibv_destroy_cq(cq);

	bad = ibv_create_cq(e->ctx, max_cqe + 1, NULL, NULL, 0);
	if (!expect_null(bad, errno, EINVAL, "ibv_create_cq beyond max_cqe"))
		ibv_destroy_cq(bad);
	bad = ibv_create_cq(e->ctx, 0, NULL, NULL, 0);
	if (!expect_null(bad, errno, EINVAL, "ibv_create_cq with 0 entries"))
		ibv_destroy_cq(bad);
	bad = ibv_create_cq(e->ctx, 16, NULL, NULL, e->ctx->num_comp_vectors);
	if (!expect_null(bad, errno, EINVAL,
			 "ibv_create_cq on comp_vector num_comp_vectors"))
		ibv_destroy_cq(bad);

	ch = ibv_create_comp_channel(e->ctx);
	if (!ch)
		tap_bail("ibv_create_comp_channel: %s", errname(errno));
	cq = ibv_create_cq(e->ctx, 16, e, ch, 0);
	tap_ok(cq && cq->channel == ch && cq->cq_context == e,
	       "ibv_create_cq with a completion channel (%s)",
	       cq ? "ok" : errname(errno));
	if (cq) {
		expect_ret(ibv_req_notify_cq(cq, 0), 0,
			   "ibv_req_notify_cq with a channel");
		expect_ret(ibv_destroy_cq(cq), 0,
			   "ibv_destroy_cq with a channel");
	}
	expect_ret(ibv_destroy_comp_channel(ch), 0,
		   "ibv_destroy_comp_channel");

	ch = ibv_create_comp_channel(e->ctx2);
	if (!ch)
		tap_bail("ibv_create_comp_channel: %s", errname(errno));
	bad = ibv_create_cq(e->ctx, 16, NULL, ch, 0);
	if (!expect_null(bad, errno, EINVAL,
			 "ibv_create_cq with another context's channel"))
		ibv_destroy_cq(bad);
	ibv_destroy_comp_channel(ch);

	/* Extended CQs. */
	cxa.cqe = 16;
	cxa.wc_flags = IBV_WC_STANDARD_FLAGS;
	cqx = ibv_create_cq_ex(e->ctx, &cxa);
	tap_ok(cqx != NULL, "ibv_create_cq_ex with the standard wc_flags (%s)",
	       cqx ? "ok" : errname(errno));
	if (cqx) {
		expect_ret(ibv_start_poll(cqx, &pa), ENOENT,
			   "ibv_start_poll on an empty CQ");
		ret = ibv_poll_cq(ibv_cq_ex_to_cq(cqx), 4, wc);
		tap_ok(ret == 0, "ibv_poll_cq on an empty extended CQ (%d)",
		       ret);
		expect_ret(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0,
			   "ibv_destroy_cq of an extended CQ");
	}

	cxa.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	cqx = ibv_create_cq_ex(e->ctx, &cxa);
	if (!expect_null(cqx, errno, EOPNOTSUPP,
			 "ibv_create_cq_ex with completion timestamps"))
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
	cxa.wc_flags = IBV_WC_STANDARD_FLAGS;
	cxa.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	cxa.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	cqx = ibv_create_cq_ex(e->ctx, &cxa);
	if (!expect_null(cqx, errno, EOPNOTSUPP,
			 "ibv_create_cq_ex ignoring overruns"))
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
	cxa.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	cqx = ibv_create_cq_ex(e->ctx, &cxa);
	tap_ok(cqx != NULL, "ibv_create_cq_ex single-threaded (%s)",
	       cqx ? "ok" : errname(errno));
	if (cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
}

/* --- SRQs ---------------------------------------------------------------- */

static void test_srq(struct env *e, struct ibv_mr *mr)
{
	struct ibv_srq_init_attr_ex xa = {};
	struct ibv_srq_init_attr sa = {};
	struct ibv_srq_attr attr = {};
	struct ibv_sge sge[8];
	struct ibv_recv_wr wr[2], *bad_wr;
	struct ibv_srq *srq, *bad;
	uint32_t max_sge;
	int i, ret;

	sa.attr.max_wr = 16;
	sa.attr.max_sge = 2;
	srq = ibv_create_srq(e->pd, &sa);
	tap_ok(srq && srq->pd == e->pd && srq->context == e->ctx &&
	       sa.attr.max_wr >= 16 && sa.attr.max_sge >= 2,
	       "ibv_create_srq, 16 WRs of 2 SGEs (%s; got %u, %u)",
	       srq ? "ok" : errname(errno), sa.attr.max_wr, sa.attr.max_sge);
	if (!srq)
		tap_bail("cannot create an SRQ");
	max_sge = sa.attr.max_sge;

	expect_ret(ibv_query_srq(srq, &attr), 0, "ibv_query_srq");
	tap_ok(attr.max_wr >= 16 && attr.srq_limit == 0,
	       "ibv_query_srq: max_wr %u, srq_limit %u", attr.max_wr,
	       attr.srq_limit);

	attr.srq_limit = 4;
	expect_ret(ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT), 0,
		   "ibv_modify_srq: limit 4");
	memset(&attr, 0, sizeof(attr));
	ret = ibv_query_srq(srq, &attr);
	tap_ok(!ret && attr.srq_limit == 4, "ibv_query_srq: the limit is 4 (%u)",
	       attr.srq_limit);
	attr.srq_limit = 1000000;
	expect_ret(ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT), EINVAL,
		   "ibv_modify_srq: limit beyond max_wr");

	for (i = 0; i < 8; i++)
		sge[i] = (struct ibv_sge){
			.addr = (uintptr_t)mr->addr + i * 64,
			.length = 64,
			.lkey = mr->lkey,
		};
	wr[0] = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = sge,
				      .num_sge = 1, .next = &wr[1] };
	wr[1] = (struct ibv_recv_wr){ .wr_id = 2, .sg_list = sge,
				      .num_sge = max_sge + 1 };
	bad_wr = NULL;
	expect_ret(ibv_post_srq_recv(srq, wr, &bad_wr), EINVAL,
		   "ibv_post_srq_recv with more SGEs than max_sge");
	tap_ok(bad_wr == &wr[1], "... and bad_wr is that work request");
	wr[0].next = NULL;
	expect_ret(ibv_post_srq_recv(srq, wr, &bad_wr), 0,
		   "ibv_post_srq_recv");
	/*
	 * Fill it: max_wr receives fit, no more (two are there: the one
	 * before the bad work request, and the last one).
	 */
	for (i = 2; i < (int)sa.attr.max_wr; i++) {
		ret = ibv_post_srq_recv(srq, wr, &bad_wr);
		if (ret)
			break;
	}
	tap_ok(i == (int)sa.attr.max_wr, "ibv_post_srq_recv: %u receives fit (%d)",
	       sa.attr.max_wr, i);
	expect_ret(ibv_post_srq_recv(srq, wr, &bad_wr), ENOMEM,
		   "ibv_post_srq_recv on a full SRQ");

	/* Its ring has a fixed size: a resize cannot grow it. */
	attr.max_wr = sa.attr.max_wr;
	expect_ret(ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR), 0,
		   "ibv_modify_srq: max_wr as it is");
	attr.max_wr = sa.attr.max_wr * 2;
	expect_ret(ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR), EINVAL,
		   "ibv_modify_srq: max_wr beyond its ring");
	memset(&attr, 0, sizeof(attr));
	ret = ibv_query_srq(srq, &attr);
	tap_ok(!ret && attr.max_wr == sa.attr.max_wr,
	       "ibv_query_srq: max_wr still %u (%u)", sa.attr.max_wr,
	       attr.max_wr);

	expect_ret(ibv_destroy_srq(srq), 0, "ibv_destroy_srq");

	sa.attr.max_wr = e->dev.orig_attr.max_srq_wr + 1;
	sa.attr.max_sge = 1;
	bad = ibv_create_srq(e->pd, &sa);
	if (!expect_null(bad, errno, EINVAL,
			 "ibv_create_srq beyond max_srq_wr"))
		ibv_destroy_srq(bad);
	sa.attr.max_wr = 16;
	sa.attr.max_sge = e->dev.orig_attr.max_srq_sge + 1;
	bad = ibv_create_srq(e->pd, &sa);
	if (!expect_null(bad, errno, EINVAL,
			 "ibv_create_srq beyond max_srq_sge"))
		ibv_destroy_srq(bad);

	/* Extended creation: basic with a CQ is fine, XRC and TM are not. */
	xa.attr.max_wr = 8;
	xa.attr.max_sge = 1;
	xa.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE |
		       IBV_SRQ_INIT_ATTR_CQ;
	xa.pd = e->pd;
	xa.srq_type = IBV_SRQT_BASIC;
	xa.cq = ibv_create_cq(e->ctx, 4, NULL, NULL, 0);
	xa.srq_context = e;
	srq = ibv_create_srq_ex(e->ctx, &xa);
	tap_ok(srq && srq->pd == e->pd && srq->srq_context == e &&
	       srq->context == e->ctx,
	       "ibv_create_srq_ex, basic, with a CQ (%s)",
	       srq ? "ok" : errname(errno));
	if (srq)
		expect_ret(ibv_destroy_srq(srq), 0,
			   "ibv_destroy_srq (extended)");
	xa.srq_type = IBV_SRQT_XRC;
	bad = ibv_create_srq_ex(e->ctx, &xa);
	if (!expect_null(bad, errno, EOPNOTSUPP, "ibv_create_srq_ex, XRC"))
		ibv_destroy_srq(bad);
	xa.srq_type = IBV_SRQT_TM;
	xa.comp_mask |= IBV_SRQ_INIT_ATTR_TM;
	xa.tm_cap.max_num_tags = 4;
	xa.tm_cap.max_ops = 4;
	bad = ibv_create_srq_ex(e->ctx, &xa);
	if (!expect_null(bad, errno, EOPNOTSUPP,
			 "ibv_create_srq_ex, tag matching"))
		ibv_destroy_srq(bad);
	if (xa.cq)
		ibv_destroy_cq(xa.cq);
}

/* --- AHs ----------------------------------------------------------------- */

static void test_ah(struct env *e)
{
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.port_num = 1,
		.grh = {
			.dgid = e->gid,
			.sgid_index = (uint8_t)e->gid_index,
			.hop_limit = 64,
		},
	};
	struct ibv_ah *ah, *bad;

	ah = ibv_create_ah(e->pd, &aa);
	tap_ok(ah && ah->pd == e->pd && ah->context == e->ctx,
	       "ibv_create_ah to our own RoCE v2 GID (%s)",
	       ah ? "ok" : errname(errno));
	if (ah)
		expect_ret(ibv_destroy_ah(ah), 0, "ibv_destroy_ah");

	aa.port_num = 2;
	bad = ibv_create_ah(e->pd, &aa);
	if (!expect_null(bad, errno, EINVAL, "ibv_create_ah on port 2"))
		ibv_destroy_ah(bad);
	aa.port_num = 1;
	aa.is_global = 0;
	bad = ibv_create_ah(e->pd, &aa);
	if (!expect_null(bad, errno, EINVAL,
			 "ibv_create_ah without a GRH (RoCE needs one)"))
		ibv_destroy_ah(bad);
	aa.is_global = 1;
	aa.grh.sgid_index = (uint8_t)(e->port.gid_tbl_len > 255 ? 255 :
				      e->port.gid_tbl_len);
	bad = ibv_create_ah(e->pd, &aa);
	if (!expect_null(bad, errno, EINVAL,
			 "ibv_create_ah with an sgid_index past the table"))
		ibv_destroy_ah(bad);
}

/* --- QPs ----------------------------------------------------------------- */

static struct ibv_qp *make_qp(struct env *e, enum ibv_qp_type type,
			      struct ibv_cq *cq, struct ibv_srq *srq,
			      struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.srq = srq,
		.qp_type = type,
		.cap = *cap,
	};
	struct ibv_qp *qp;

	qp = ibv_create_qp(e->pd, &ia);
	if (qp)
		*cap = ia.cap;
	return qp;
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
		.qkey = 0x11111111,
	};

	if (qp->qp_type == IBV_QPT_UD)
		return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				     IBV_QP_PORT | IBV_QP_QKEY);
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/* An RC QP of ours towards @dest_qpn at our own GID. */
static struct rc_path self_path(const struct env *e, uint32_t dest_qpn)
{
	return (struct rc_path){
		.mtu = e->port.active_mtu,
		.sgid_index = e->gid_index,
		.dgid = e->gid,
		.dest_qpn = dest_qpn,
		.rd_atomic = 1,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.min_rnr_timer = 12,
	};
}

static void test_qp_create(struct env *e, struct ibv_cq *cq)
{
	struct ibv_qp_cap cap = { 16, 16, 2, 2, 64 };
	struct ibv_qp_init_attr_ex xa = {};
	struct ibv_cq *cq_other;
	struct ibv_qp *qp;
	enum ibv_qp_type t;

	static const struct {
		enum ibv_qp_type type;
		const char *name;
	} unsupported[] = {
		{ IBV_QPT_UC, "UC" },
		{ IBV_QPT_RAW_PACKET, "RAW_PACKET" },
		{ IBV_QPT_XRC_SEND, "XRC_SEND" },
		{ IBV_QPT_XRC_RECV, "XRC_RECV" },
	};
	size_t i;

	for (i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
		char what[64];

		cap = (struct ibv_qp_cap){ 16, 16, 2, 2, 0 };
		qp = make_qp(e, unsupported[i].type, cq, NULL, &cap);
		snprintf(what, sizeof(what), "ibv_create_qp %s",
			 unsupported[i].name);
		if (!expect_null(qp, errno, EOPNOTSUPP, what))
			ibv_destroy_qp(qp);
	}
	t = (enum ibv_qp_type)99;
	cap = (struct ibv_qp_cap){ 16, 16, 2, 2, 0 };
	qp = make_qp(e, t, cq, NULL, &cap);
	if (!expect_null(qp, errno, EINVAL, "ibv_create_qp of type 99"))
		ibv_destroy_qp(qp);

	cap = (struct ibv_qp_cap){ 16, 16, e->dev.orig_attr.max_sge + 1, 2, 0 };
	qp = make_qp(e, IBV_QPT_RC, cq, NULL, &cap);
	if (!expect_null(qp, errno, EINVAL, "ibv_create_qp beyond max_sge"))
		ibv_destroy_qp(qp);
	cap = (struct ibv_qp_cap){ e->dev.orig_attr.max_qp_wr + 1, 16, 1, 1, 0 };
	qp = make_qp(e, IBV_QPT_RC, cq, NULL, &cap);
	if (!expect_null(qp, errno, EINVAL, "ibv_create_qp beyond max_qp_wr"))
		ibv_destroy_qp(qp);
	cap = (struct ibv_qp_cap){ 16, 16, 1, 1, 1 << 20 };
	qp = make_qp(e, IBV_QPT_RC, cq, NULL, &cap);
	if (!expect_null(qp, errno, EINVAL,
			 "ibv_create_qp with 1 MiB of inline data"))
		ibv_destroy_qp(qp);
	cap = (struct ibv_qp_cap){ 16, 16, 1, 1, 0 };
	qp = make_qp(e, IBV_QPT_RC, NULL, NULL, &cap);
	if (!expect_null(qp, errno, EINVAL, "ibv_create_qp without CQs"))
		ibv_destroy_qp(qp);
	/* A QP that only sends needs no receive queue. */
	cap = (struct ibv_qp_cap){ 16, 0, 1, 0, 0 };
	qp = make_qp(e, IBV_QPT_RC, cq, NULL, &cap);
	tap_ok(qp && cap.max_send_wr >= 16,
	       "ibv_create_qp RC with max_recv_wr 0 (%s)",
	       qp ? "ok" : errname(errno));
	if (qp)
		expect_ret(ibv_destroy_qp(qp), 0, "ibv_destroy_qp (no RQ)");

	cq_other = ibv_create_cq(e->ctx2, 4, NULL, NULL, 0);
	if (!cq_other)
		tap_bail("ibv_create_cq: %s", errname(errno));
	qp = make_qp(e, IBV_QPT_RC, cq_other, NULL, &cap);
	if (!expect_null(qp, errno, EINVAL,
			 "ibv_create_qp with another context's CQ"))
		ibv_destroy_qp(qp);
	ibv_destroy_cq(cq_other);

	/* Extended creation. */
	xa.qp_type = IBV_QPT_RC;
	xa.send_cq = cq;
	xa.recv_cq = cq;
	xa.cap = (struct ibv_qp_cap){ 16, 16, 1, 1, 0 };
	xa.pd = e->pd;
	xa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	xa.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	qp = ibv_create_qp_ex(e->ctx, &xa);
	if (!expect_null(qp, errno, EOPNOTSUPP,
			 "ibv_create_qp_ex with creation flags"))
		ibv_destroy_qp(qp);

	xa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	xa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO;
	qp = ibv_create_qp_ex(e->ctx, &xa);
	if (!expect_null(qp, errno, EOPNOTSUPP,
			 "ibv_create_qp_ex with the TSO send op"))
		ibv_destroy_qp(qp);

	xa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
			    IBV_QP_EX_WITH_RDMA_READ |
			    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	qp = ibv_create_qp_ex(e->ctx, &xa);
	tap_ok(qp && ibv_qp_to_qp_ex(qp) && qp->state == IBV_QPS_RESET &&
	       qp->pd == e->pd,
	       "ibv_create_qp_ex RC with send ops: ibv_qp_to_qp_ex works (%s)",
	       qp ? "ok" : errname(errno));
	if (qp)
		expect_ret(ibv_destroy_qp(qp), 0, "ibv_destroy_qp (extended)");

	xa.qp_type = IBV_QPT_UD;
	qp = ibv_create_qp_ex(e->ctx, &xa);
	if (!expect_null(qp, errno, EOPNOTSUPP,
			 "ibv_create_qp_ex UD with RDMA send ops"))
		ibv_destroy_qp(qp);
	xa.send_ops_flags = IBV_QP_EX_WITH_SEND;
	xa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD;
	qp = ibv_create_qp_ex(e->ctx, &xa);
	if (!expect_null(qp, errno, EOPNOTSUPP,
			 "ibv_create_qp_ex with an XRC domain"))
		ibv_destroy_qp(qp);
}

static void test_qp_states(struct env *e, struct ibv_cq *cq, struct ibv_mr *mr)
{
	struct ibv_qp_cap cap = { 16, 16, 2, 2, 64 };
	struct ibv_qp_attr qa = {}, a = {};
	struct ibv_qp_init_attr qia = {};
	struct ibv_send_wr swr[2], *bad_swr;
	struct ibv_recv_wr rwr[2], *bad_rwr;
	struct ibv_sge sge[20];
	struct ibv_qp *qp, *qp2;
	struct rc_path path;
	struct ibv_wc wc[4];
	int i, n, ret;

	for (i = 0; i < 20; i++)
		sge[i] = (struct ibv_sge){
			.addr = (uintptr_t)mr->addr + i * 64,
			.length = 64,
			.lkey = mr->lkey,
		};

	qp = make_qp(e, IBV_QPT_RC, cq, NULL, &cap);
	tap_ok(qp && qp->qp_num > 1 && qp->state == IBV_QPS_RESET &&
	       qp->qp_type == IBV_QPT_RC && qp->send_cq == cq &&
	       cap.max_send_wr >= 16 && cap.max_recv_wr >= 16 &&
	       cap.max_send_sge >= 2 && cap.max_recv_sge >= 2 &&
	       cap.max_inline_data >= 64,
	       "ibv_create_qp RC (%s; qpn %u, caps %u/%u/%u/%u/%u)",
	       qp ? "ok" : errname(errno), qp ? qp->qp_num : 0,
	       cap.max_send_wr, cap.max_recv_wr, cap.max_send_sge,
	       cap.max_recv_sge, cap.max_inline_data);
	if (!qp) {
		tap_diag("no RC QP: skipping the rest of the QP tests");
		return;
	}

	ret = ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_CAP, &qia);
	tap_ok(!ret && qa.qp_state == IBV_QPS_RESET && qia.qp_type == IBV_QPT_RC &&
	       qa.cap.max_send_wr == cap.max_send_wr &&
	       qa.cap.max_recv_sge == cap.max_recv_sge &&
	       qia.send_cq == cq,
	       "ibv_query_qp in RESET (state %d, send_wr %u)", qa.qp_state,
	       qa.cap.max_send_wr);

	expect_ret(ibv_destroy_cq(cq), EBUSY,
		   "ibv_destroy_cq of a CQ a QP uses");

	rwr[0] = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = sge,
				       .num_sge = 1 };
	bad_rwr = NULL;
	expect_ret(ibv_post_recv(qp, rwr, &bad_rwr), EINVAL,
		   "ibv_post_recv in RESET");
	tap_ok(bad_rwr == rwr, "... and bad_wr is the first work request");

	a.qp_state = IBV_QPS_RTR;
	expect_ret(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL,
		   "ibv_modify_qp RESET -> RTR");
	a.qp_state = IBV_QPS_INIT;
	expect_ret(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL,
		   "ibv_modify_qp RESET -> INIT without its attributes");
	expect_ret(to_init(qp), 0, "ibv_modify_qp RESET -> INIT");
	tap_ok(qp->state == IBV_QPS_INIT, "qp->state is INIT");
	memset(&qa, 0, sizeof(qa));
	ret = ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PORT |
			   IBV_QP_ACCESS_FLAGS, &qia);
	tap_ok(!ret && qa.qp_state == IBV_QPS_INIT && qa.port_num == 1 &&
	       qa.qp_access_flags == (IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ),
	       "ibv_query_qp in INIT: port %u, access 0x%x", qa.port_num,
	       qa.qp_access_flags);

	a.qp_state = IBV_QPS_RTS;
	expect_ret(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL,
		   "ibv_modify_qp INIT -> RTS");

	/* Receives may be posted from INIT on. */
	rwr[0] = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = sge,
				       .num_sge = 1, .next = &rwr[1] };
	rwr[1] = (struct ibv_recv_wr){ .wr_id = 2, .sg_list = sge,
				       .num_sge = (int)cap.max_recv_sge + 1 };
	bad_rwr = NULL;
	expect_ret(ibv_post_recv(qp, rwr, &bad_rwr), EINVAL,
		   "ibv_post_recv with more SGEs than max_recv_sge");
	tap_ok(bad_rwr == &rwr[1], "... and bad_wr is that work request");
	rwr[1].num_sge = 1;
	expect_ret(ibv_post_recv(qp, &rwr[1], &bad_rwr), 0,
		   "ibv_post_recv in INIT");

	swr[0] = (struct ibv_send_wr){ .wr_id = 3, .sg_list = sge,
				       .num_sge = 1, .opcode = IBV_WR_SEND,
				       .send_flags = IBV_SEND_SIGNALED };
	bad_swr = NULL;
	expect_ret(ibv_post_send(qp, swr, &bad_swr), EINVAL,
		   "ibv_post_send in INIT");
	tap_ok(bad_swr == swr, "... and bad_wr is the first work request");

	/* A loop: the QP talks to itself. */
	path = self_path(e, qp->qp_num);
	expect_ret(rc_path_rtr(qp, &path), 0,
		   "ibv_modify_qp INIT -> RTR (to itself)");
	expect_ret(rc_path_rts(qp, &path), 0, "ibv_modify_qp RTR -> RTS");
	tap_ok(qp->state == IBV_QPS_RTS, "qp->state is RTS");

	/* Only the extended MODIFY_QP carries it; the device has none. */
	memset(&a, 0, sizeof(a));
	a.rate_limit = 1000;
	expect_ret(ibv_modify_qp(qp, &a, IBV_QP_RATE_LIMIT), EOPNOTSUPP,
		   "ibv_modify_qp with a rate limit");
	a.qp_state = IBV_QPS_RTS;
	a.min_rnr_timer = 14;
	expect_ret(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER), 0,
		   "ibv_modify_qp RTS -> RTS, new min_rnr_timer");
	memset(&qa, 0, sizeof(qa));
	ret = ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER, &qia);
	tap_ok(!ret && qa.qp_state == IBV_QPS_RTS && qa.min_rnr_timer == 14,
	       "ibv_query_qp in RTS: min_rnr_timer %u", qa.min_rnr_timer);

	swr[0].next = &swr[1];
	swr[1] = swr[0];
	swr[1].next = NULL;
	swr[1].num_sge = (int)cap.max_send_sge + 1;
	bad_swr = NULL;
	expect_ret(ibv_post_send(qp, swr, &bad_swr), EINVAL,
		   "ibv_post_send with more SGEs than max_send_sge");
	tap_ok(bad_swr == &swr[1], "... and bad_wr is that work request");
	/* Its completion, and the receive it consumed (wr_id 1). */
	n = poll_n(cq, wc, 2, 5);
	for (i = 0; i < n && wc[i].wr_id != 3; i++)
		;
	tap_ok(i < n && wc[i].status == IBV_WC_SUCCESS,
	       "the work request before it was posted and completed (%s)",
	       i < n ? ibv_wc_status_str(wc[i].status) : "no completion");

	/* Error: everything outstanding and new is flushed. */
	a.qp_state = IBV_QPS_ERR;
	expect_ret(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0,
		   "ibv_modify_qp -> ERR");
	swr[0].next = NULL;
	swr[0].wr_id = 4;
	expect_ret(ibv_post_send(qp, swr, &bad_swr), 0,
		   "ibv_post_send in ERR is accepted");
	n = poll_n(cq, wc, 1, 5);
	while (n == 1 && wc[0].wr_id != 4)
		n = poll_n(cq, wc, 1, 5);
	tap_ok(n == 1 && wc[0].status == IBV_WC_WR_FLUSH_ERR,
	       "... and completes flushed (%s)",
	       n == 1 ? ibv_wc_status_str(wc[0].status) : "no completion");
	while (ibv_poll_cq(cq, 4, wc) > 0)
		;

	expect_ret(ibv_destroy_qp(qp), 0, "ibv_destroy_qp RC");

	/* UD */
	cap = (struct ibv_qp_cap){ 16, 16, 1, 1, 0 };
	qp2 = make_qp(e, IBV_QPT_UD, cq, NULL, &cap);
	tap_ok(qp2 && qp2->qp_type == IBV_QPT_UD, "ibv_create_qp UD (%s)",
	       qp2 ? "ok" : errname(errno));
	if (!qp2)
		return;
	expect_ret(to_init(qp2), 0, "UD: ibv_modify_qp RESET -> INIT");
	a.qp_state = IBV_QPS_RTR;
	expect_ret(ibv_modify_qp(qp2, &a, IBV_QP_STATE), 0,
		   "UD: ibv_modify_qp INIT -> RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	expect_ret(ibv_modify_qp(qp2, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0,
		   "UD: ibv_modify_qp RTR -> RTS");
	swr[0] = (struct ibv_send_wr){ .wr_id = 5, .sg_list = sge,
				       .num_sge = 1, .opcode = IBV_WR_SEND };
	bad_swr = NULL;
	expect_ret(ibv_post_send(qp2, swr, &bad_swr), EINVAL,
		   "UD: ibv_post_send without an address handle");
	swr[0].opcode = IBV_WR_RDMA_WRITE;
	expect_ret(ibv_post_send(qp2, swr, &bad_swr), EINVAL,
		   "UD: ibv_post_send RDMA WRITE");
	expect_ret(ibv_destroy_qp(qp2), 0, "ibv_destroy_qp UD");
}

static void test_qp_srq(struct env *e, struct ibv_cq *cq, struct ibv_mr *mr)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_qp_cap cap = { 8, 0, 1, 0, 0 };
	struct ibv_sge sge = { (uintptr_t)mr->addr, 64, mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_srq *srq;
	struct ibv_qp *qp;

	srq = ibv_create_srq(e->pd, &sa);
	if (!srq)
		tap_bail("ibv_create_srq: %s", errname(errno));
	qp = make_qp(e, IBV_QPT_RC, cq, srq, &cap);
	tap_ok(qp && qp->srq == srq, "ibv_create_qp RC with an SRQ (%s)",
	       qp ? "ok" : errname(errno));
	if (qp) {
		expect_ret(ibv_destroy_srq(srq), EBUSY,
			   "ibv_destroy_srq of an SRQ a QP uses");
		to_init(qp);
		bad = NULL;
		expect_ret(ibv_post_recv(qp, &rwr, &bad), EINVAL,
			   "ibv_post_recv on a QP with an SRQ");
		ibv_destroy_qp(qp);
	}
	expect_ret(ibv_destroy_srq(srq), 0, "ibv_destroy_srq");
}

/* @n receives of one 64-byte SGE, wr_id @first on. */
static int post_recvs(struct ibv_qp *qp, struct ibv_mr *mr, uint64_t first,
		      int n)
{
	struct ibv_sge sge = { (uintptr_t)mr->addr, 64, mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	int i, ret = 0;

	for (i = 0; i < n && !ret; i++) {
		wr.wr_id = first + i;
		ret = ibv_post_recv(qp, &wr, &bad);
	}
	return ret;
}

/* @n flushed receives, wr_id @first on, next in @wc[0..n). */
static bool flushed_in_order(const struct ibv_wc *wc, int got, int n,
			     uint64_t first, uint32_t qp_num)
{
	int i;

	if (got != n)
		return false;
	for (i = 0; i < n; i++)
		if (wc[i].wr_id != first + i || wc[i].qp_num != qp_num ||
		    wc[i].status != IBV_WC_WR_FLUSH_ERR)
			return false;
	return true;
}

/*
 * Completions that wait in a CQ's ring (user CQs have one): flushed
 * receives of two QPs, queued while nobody polls, survive a resize in
 * order, block a resize below their number, and go away with their QP
 * when it is destroyed or reset (the provider cleans the ring).
 */
static void test_cq_ring(struct env *e, struct ibv_mr *mr)
{
	struct ibv_qp_cap cap = { 4, 16, 1, 1, 0 };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_qp *qa, *qb;
	struct ibv_wc wc[32];
	struct ibv_cq *cq;
	int n;

	cq = ibv_create_cq(e->ctx, 32, NULL, NULL, 0);
	qa = cq ? make_qp(e, IBV_QPT_RC, cq, NULL, &cap) : NULL;
	qb = qa ? make_qp(e, IBV_QPT_RC, cq, NULL, &cap) : NULL;
	if (!qb || to_init(qa) || to_init(qb) ||
	    post_recvs(qa, mr, 100, 10) || post_recvs(qb, mr, 200, 10) ||
	    ibv_modify_qp(qa, &a, IBV_QP_STATE) ||
	    ibv_modify_qp(qb, &a, IBV_QP_STATE)) {
		tap_ok(false, "ring: two QPs with 10 receives each, flushed (%s)",
		       errname(errno));
		return;
	}

	expect_ret(ibv_resize_cq(cq, 64), 0,
		   "ring: resize to 64 with up to 20 completions waiting");
	/* All 20 must be in by now: a smaller resize must fail. */
	n = poll_n(cq, wc, 1, 5);
	tap_ok(n == 1 && wc[0].wr_id == 100,
	       "ring: the first completion after the resize is the first flushed");
	expect_ret(ibv_resize_cq(cq, 8), EINVAL,
		   "ring: resize to 8 with 19 completions waiting");

	expect_ret(ibv_destroy_qp(qa), 0, "ring: destroy the first QP");
	n = poll_n(cq, wc, 3, 5);
	tap_ok(flushed_in_order(wc, n, 3, 200, qb->qp_num),
	       "ring: its 9 others are gone, the other QP's come in order (%d)",
	       n);
	a.qp_state = IBV_QPS_RESET;
	expect_ret(ibv_modify_qp(qb, &a, IBV_QP_STATE), 0,
		   "ring: reset the other QP");
	tap_ok(ibv_poll_cq(cq, 32, wc) == 0,
	       "ring: its 7 completions not polled are gone");
	expect_ret(to_init(qb), 0, "ring: the reset QP back to INIT");
	a.qp_state = IBV_QPS_ERR;
	n = post_recvs(qb, mr, 300, 2) ||
	    ibv_modify_qp(qb, &a, IBV_QP_STATE) ? -1 : poll_n(cq, wc, 2, 5);
	tap_ok(flushed_in_order(wc, n, 2, 300, qb->qp_num),
	       "ring: its new receives complete (flushed), in order (%d)", n);
	expect_ret(ibv_destroy_qp(qb), 0, "ring: destroy the other QP");
	expect_ret(ibv_destroy_cq(cq), 0, "ring: destroy the CQ");
}

static void test_unsupported(struct env *e)
{
	struct ibv_mw *mw;

	mw = ibv_alloc_mw(e->pd, IBV_MW_TYPE_1);
	if (!expect_null(mw, errno, EOPNOTSUPP, "ibv_alloc_mw"))
		ibv_dealloc_mw(mw);
}

/* --- multicast attachments ------------------------------------------------ */

/* The multicast GID ::ffff:239.9.9.@n (an IPv4 group). */
static union ibv_gid mgid(unsigned int n)
{
	union ibv_gid g = { .raw = { [10] = 0xff, [11] = 0xff, [12] = 239,
				     [13] = 9, [14] = 9, [15] = n } };

	return g;
}

static void test_mcast(struct env *e, struct ibv_cq *cq)
{
	unsigned int max = e->dev.orig_attr.max_mcast_qp_attach, i, made = 0;
	struct ibv_qp_cap cap = { 4, 4, 1, 1, 0 };
	union ibv_gid g = mgid(1), g2 = mgid(2);
	struct ibv_qp **qps, *rc;
	int ret = 0;

	tap_ok(max > 0 && e->dev.orig_attr.max_mcast_grp > 0 &&
	       (unsigned int)e->dev.orig_attr.max_total_mcast_qp_attach >= max,
	       "multicast limits: %d groups, %u QPs each, %d attachments",
	       e->dev.orig_attr.max_mcast_grp, max,
	       e->dev.orig_attr.max_total_mcast_qp_attach);
	qps = calloc(max + 1, sizeof(*qps));
	if (!qps)
		return;
	for (i = 0; i <= max; i++) {
		qps[i] = make_qp(e, IBV_QPT_UD, cq, NULL, &cap);
		if (!qps[i])
			break;
		made++;
	}
	tap_ok(made == max + 1, "%u UD QPs made (%u wanted)", made, max + 1);
	if (made < 2)
		goto out;
	expect_ret(ibv_attach_mcast(qps[0], &e->gid, 0), EINVAL,
		   "attach to a unicast GID");
	expect_ret(ibv_attach_mcast(qps[0], &g, 0), 0, "attach to a group");
	expect_ret(ibv_attach_mcast(qps[0], &g, 0), 0,
		   "attach to it again (nothing changes)");
	expect_ret(ibv_attach_mcast(qps[1], &g, 0), 0,
		   "a second QP attaches to it");
	expect_ret(ibv_attach_mcast(qps[0], &g2, 0), 0,
		   "the first QP attaches to a second group");
	expect_ret(ibv_detach_mcast(qps[0], &g, 0), 0, "detach from a group");
	expect_ret(ibv_detach_mcast(qps[0], &g, 0), EINVAL,
		   "detach from it again");
	expect_ret(ibv_detach_mcast(qps[1], &g2, 0), EINVAL,
		   "detach from a group not attached to");
	expect_ret(ibv_detach_mcast(qps[0], &g2, 0), 0,
		   "detach from the second group");
	expect_ret(ibv_detach_mcast(qps[1], &g, 0), 0,
		   "the last QP leaves the first group");
	if (made == max + 1) {
		for (i = 0; i < max && !ret; i++)
			ret = ibv_attach_mcast(qps[i], &g, 0);
		tap_ok(!ret, "%u QPs attach to one group (%s)", max,
		       errname(ret));
		expect_ret(ibv_attach_mcast(qps[max], &g, 0), ENOMEM,
			   "one QP more than max_mcast_qp_attach");
		for (i = 0, ret = 0; i < max && !ret; i++)
			ret = ibv_detach_mcast(qps[i], &g, 0);
		tap_ok(!ret, "they all detach (%s)", errname(ret));
	}
	rc = make_qp(e, IBV_QPT_RC, cq, NULL, &cap);
	if (rc) {
		expect_ret(ibv_attach_mcast(rc, &g, 0), EINVAL,
			   "an RC QP cannot attach");
		ibv_destroy_qp(rc);
	}
	/* uverbs refuses to destroy a QP its process left attached. */
	expect_ret(ibv_attach_mcast(qps[0], &g, 0), 0, "attach again");
	expect_ret(ibv_destroy_qp(qps[0]), EBUSY,
		   "ibv_destroy_qp of an attached QP");
	expect_ret(ibv_detach_mcast(qps[0], &g, 0), 0,
		   "detach it (then it goes)");
out:
	for (i = 0; i < made; i++)
		ibv_destroy_qp(qps[i]);
	free(qps);
}

int main(int argc, char **argv)
{
	struct ibv_device **list, *dev;
	struct ibv_mr *mr, fake_mr;
	struct ibv_cq *cq;
	struct env e = {};

	if (argc != 2) {
		fprintf(stderr, "usage: %s DEVICE\n", argv[0]);
		return 2;
	}

	tap_start();
	list = ibv_get_device_list(NULL);
	if (!list)
		tap_bail("ibv_get_device_list: %s", strerror(errno));
	dev = find_device(list, argv[1]);
	if (!dev)
		tap_bail("no device %s", argv[1]);
	e.ctx = ibv_open_device(dev);
	e.ctx2 = ibv_open_device(dev);
	if (!e.ctx || !e.ctx2)
		tap_bail("cannot open %s: %s", argv[1], strerror(errno));
	if (ibv_query_device_ex(e.ctx, NULL, &e.dev) ||
	    ibv_query_port(e.ctx, 1, &e.port))
		tap_bail("cannot query %s", argv[1]);
	e.gid_index = find_roce_v2_gid(e.ctx, &e.gid);
	if (e.gid_index < 0)
		tap_bail("%s has no RoCE v2 GID", argv[1]);
	tap_diag("%s: GID index %d, active MTU %d", argv[1], e.gid_index,
		 128 << e.port.active_mtu);
	tap_ok(e.ctx->async_fd >= 0, "the context has an async event fd (%d)",
	       e.ctx->async_fd);

	e.pd = ibv_alloc_pd(e.ctx);
	e.buf = calloc(1, BUF_SIZE);
	if (!e.pd || !e.buf)
		tap_bail("no PD or memory");

	test_mr(&e);

	/*
	 * Without an MR the posting tests still run, with a made-up lkey:
	 * keys are checked when the work requests execute.
	 */
	mr = ibv_reg_mr(e.pd, e.buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE);
	if (!mr) {
		tap_diag("no MR (%s): posting with a made-up lkey",
			 errname(errno));
		fake_mr = (struct ibv_mr){ .addr = e.buf, .lkey = 0x4242 };
	}
	cq = ibv_create_cq(e.ctx, 64, NULL, NULL, 0);
	if (!cq)
		tap_bail("no CQ: %s", errname(errno));

	test_cq(&e);
	test_srq(&e, mr ? mr : &fake_mr);
	test_ah(&e);
	test_qp_create(&e, cq);
	test_qp_states(&e, cq, mr ? mr : &fake_mr);
	test_qp_srq(&e, cq, mr ? mr : &fake_mr);
	if (mr)
		test_cq_ring(&e, mr);
	else
		tap_ok(false, "ring: no MR to post receives with");
	test_unsupported(&e);
	test_mcast(&e, cq);

	expect_ret(ibv_destroy_cq(cq), 0, "ibv_destroy_cq once its QPs are gone");
	if (mr) {
		expect_ret(ibv_dealloc_pd(e.pd), EBUSY,
			   "ibv_dealloc_pd of a PD with an MR");
		expect_ret(ibv_dereg_mr(mr), 0, "ibv_dereg_mr");
	}
	expect_ret(ibv_dealloc_pd(e.pd), 0, "ibv_dealloc_pd");
	expect_ret(ibv_close_device(e.ctx2), 0, "ibv_close_device (second)");
	expect_ret(ibv_close_device(e.ctx), 0, "ibv_close_device");
	ibv_free_device_list(list);
	free(e.buf);
	return tap_done();
}
