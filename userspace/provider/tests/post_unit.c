// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * post_unit: qp.c's posting and ibv_wr_* code against a fake kernel, no
 * device needed (prints TAP).  ibv_cmd_post_send/recv are replaced by
 * recorders that can refuse the n-th work request, as the kernel does.
 * Posting to a send ring (RC, and UD with AH numbers): what each slot
 * holds, the doorbell only when the kernel asks, a full ring, the checks,
 * indices that wrap around, and the checks on the ring a create response
 * describes.  Posting to a receive
 * ring (rq.c): the slots, the checks, a full ring, wrap-around, and the
 * doorbell only when the kernel asks (a QP in the error state).
 */
#include "qp.c"
#include "rq.c"

#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>

#include "tap.h"

/* --- the fake kernel ---------------------------------------------------- */

#define MAX_REC 256

/* What one posted send work request looked like to the kernel. */
struct rec {
	struct ibv_send_wr wr;
	struct ibv_sge sge[4];
	uint8_t inl[256];
};

static struct {
	unsigned int calls;
	unsigned int per_call[64];
	unsigned int n;			/* work requests taken */
	struct rec r[MAX_REC];
	uint64_t recv_ids[MAX_REC];
	unsigned int nrecv;
	int refuse_at;			/* index (in n) to refuse, or -1 */
	int refuse_err;
} k;

static void k_reset(void)
{
	memset(&k, 0, sizeof(k));
	k.refuse_at = -1;
}

int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr)
{
	unsigned int in_call = 0;

	k.calls++;
	for (; wr; wr = wr->next) {
		struct rec *r = &k.r[k.n];
		int i;

		if ((int)k.n == k.refuse_at || k.n == MAX_REC) {
			k.per_call[k.calls - 1] = in_call;
			*bad_wr = wr;
			return k.refuse_err ? k.refuse_err : ENOMEM;
		}
		r->wr = *wr;
		for (i = 0; i < wr->num_sge && i < 4; i++)
			r->sge[i] = wr->sg_list[i];
		if ((wr->send_flags & IBV_SEND_INLINE) && wr->num_sge &&
		    wr->sg_list[0].length <= sizeof(r->inl))
			memcpy(r->inl,
			       (void *)(uintptr_t)wr->sg_list[0].addr,
			       wr->sg_list[0].length);
		k.n++;
		in_call++;
	}
	k.per_call[k.calls - 1] = in_call;
	return 0;
}

static int fake_post_recv(void *obj, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr)
{
	k.calls++;
	for (; wr; wr = wr->next) {
		if ((int)k.nrecv == k.refuse_at || k.nrecv == MAX_REC) {
			*bad_wr = wr;
			return ENOMEM;
		}
		k.recv_ids[k.nrecv++] = wr->wr_id;
	}
	return 0;
}

int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	return fake_post_recv(ibqp, wr, bad_wr);
}

/*
 * An older kernel: it refuses the request bits in @k_unknown_rings with
 * EOPNOTSUPP, and offers no ring.
 */
static uint32_t k_unknown_rings, k_masks[4];
static unsigned int k_creates;

int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
		      struct ibv_qp_init_attr *attr,
		      struct ibv_create_qp *cmd, size_t cmd_size,
		      struct ib_uverbs_create_qp_resp *resp, size_t resp_size)
{
	uint32_t mask = ((struct mrv_create_qp_cmd *)cmd)->drv.comp_mask;

	if (k_creates < 4)
		k_masks[k_creates] = mask;
	k_creates++;
	if (mask & k_unknown_rings)
		return EOPNOTSUPP;
	qp->context = pd->context;
	qp->qp_type = attr->qp_type;
	return 0;
}

int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size)
{
	return ENOSYS;
}

int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size)
{
	return ENOSYS;
}

int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd,
		      size_t cmd_size)
{
	return ENOSYS;
}

int ibv_cmd_modify_qp_ex(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask, struct ibv_modify_qp_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_modify_qp_resp *resp,
			 size_t resp_size)
{
	return ENOSYS;
}

int ibv_cmd_destroy_qp(struct ibv_qp *qp)
{
	return ENOSYS;
}

void mrv_layout_warn(struct ibv_context *ibctx, const char *what)
{
}

/* --- fixtures ------------------------------------------------------------- */

static struct ibv_context ctx, other_ctx;
static struct ibv_ah ah = { .context = &ctx }, other_ah = {
	.context = &other_ctx };
static uint8_t mem[1 << 16];

static struct mrv_qp *make_qp(enum ibv_qp_type type, uint64_t send_ops)
{
	struct mrv_qp *qp = mrv_qp_alloc();

	if (!qp)
		abort();
	qp->vqp.qp.context = &ctx;
	qp->vqp.qp.qp_type = type;
	qp->max_send_wr = 64;
	qp->max_send_sge = 2;
	qp->max_recv_sge = 2;
	qp->max_inline = 64;
	if (send_ops) {
		qp->send_ops_flags = send_ops;
		mrv_init_qp_ex_ops(&qp->vqp.qp_ex);
		qp->vqp.comp_mask = VERBS_QP_EX;
	}
	return qp;
}

static struct ibv_sge sges[200];

/* @n linked sends with wr_id i and one SGE each. */
static void make_sends(struct ibv_send_wr *wr, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		sges[i] = (struct ibv_sge){ (uintptr_t)&mem[i], 1, 7 };
		wr[i] = (struct ibv_send_wr){
			.wr_id = (uint64_t)i,
			.next = i + 1 < n ? &wr[i + 1] : NULL,
			.sg_list = &sges[i],
			.num_sge = 1,
			.opcode = IBV_WR_SEND,
			.wr.ud.ah = &ah,
		};
	}
}

static bool ids_in_order(unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (k.r[i].wr.wr_id != i)
			return false;
	return k.n == n;
}

/* --- post_send / post_recv ------------------------------------------------ */

static void test_post_send(void)
{
	struct mrv_qp *qp = make_qp(IBV_QPT_RC, 0);
	struct ibv_send_wr wr[100], *bad = NULL;
	int ret;

	make_sends(wr, 100);
	k_reset();
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(!ret && k.calls == 4 && k.per_call[0] == 32 &&
	       k.per_call[3] == 4 && ids_in_order(100),
	       "100 sends go in 4 commands (32 + 32 + 32 + 4), in order (%d, %u calls)",
	       ret, k.calls);
	tap_ok(k.r[99].wr.sg_list == sges + 99 &&
	       k.r[99].sge[0].addr == (uintptr_t)&mem[99],
	       "the commands carry the caller's SGEs");
	tap_ok(wr[31].next == &wr[32] && wr[99].next == NULL,
	       "the caller's list is left as it was");

	make_sends(wr, 50);
	wr[40].num_sge = 3;
	k_reset();
	bad = NULL;
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(ret == EINVAL && bad == &wr[40] && ids_in_order(40),
	       "WR 40 with 3 SGEs of 2: EINVAL, bad_wr is it, 0..39 posted (%d, %u posted)",
	       ret, k.n);

	make_sends(wr, 50);
	wr[7].num_sge = -1;
	k_reset();
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(ret == EINVAL && bad == &wr[7] && ids_in_order(7),
	       "WR 7 with -1 SGEs: EINVAL, bad_wr is it (%d)", ret);

	make_sends(wr, 50);
	wr[0].sg_list = NULL;
	k_reset();
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(ret == EINVAL && bad == &wr[0] && k.calls == 0,
	       "WR 0 with SGEs but no sg_list: EINVAL, nothing sent (%d)", ret);

	make_sends(wr, 50);
	k_reset();
	k.refuse_at = 35;
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(ret == ENOMEM && bad == &wr[35] && ids_in_order(35),
	       "the kernel refuses WR 35: its error, bad_wr is WR 35, 0..34 posted (%d)",
	       ret);

	make_sends(wr, 50);
	k_reset();
	k.refuse_at = 32;
	k.refuse_err = EINVAL;
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(ret == EINVAL && bad == &wr[32] && ids_in_order(32) &&
	       k.calls == 2,
	       "the kernel refuses the first WR of the second command: bad_wr is WR 32 (%d)",
	       ret);

	k_reset();
	ret = mrv_post_send(&qp->vqp.qp, NULL, &bad);
	tap_ok(!ret && !k.calls, "an empty list: nothing to do");
	free(qp);

	/* UD: address handles. */
	qp = make_qp(IBV_QPT_UD, 0);
	make_sends(wr, 3);
	wr[1].wr.ud.ah = NULL;
	k_reset();
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(ret == EINVAL && bad == &wr[1] && ids_in_order(1),
	       "UD: a WR without an AH: EINVAL, bad_wr is it (%d)", ret);
	make_sends(wr, 3);
	wr[2].wr.ud.ah = &other_ah;
	k_reset();
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(ret == EINVAL && bad == &wr[2] && ids_in_order(2),
	       "UD: an AH of another context: EINVAL, bad_wr is it (%d)", ret);
	free(qp);
}

static void test_post_recv(void)
{
	struct mrv_qp *qp = make_qp(IBV_QPT_RC, 0);
	struct ibv_srq srq = {};
	struct ibv_recv_wr wr[70], *bad = NULL;
	unsigned int i;
	bool order = true;
	int ret;

	for (i = 0; i < 70; i++)
		wr[i] = (struct ibv_recv_wr){
			.wr_id = i,
			.next = i + 1 < 70 ? &wr[i + 1] : NULL,
			.sg_list = sges,
			.num_sge = 2,
		};
	k_reset();
	ret = mrv_post_recv(&qp->vqp.qp, wr, &bad);
	for (i = 0; i < k.nrecv; i++)
		order &= k.recv_ids[i] == i;
	tap_ok(!ret && k.calls == 3 && k.nrecv == 70 && order,
	       "70 receives go in 3 commands, in order (%d)", ret);

	wr[65].num_sge = 3;
	k_reset();
	ret = mrv_post_recv(&qp->vqp.qp, wr, &bad);
	tap_ok(ret == EINVAL && bad == &wr[65] && k.nrecv == 65,
	       "receive 65 with 3 SGEs of 2: EINVAL, bad_wr is it, 65 posted (%d, %u)",
	       ret, k.nrecv);
	wr[65].num_sge = 2;

	k_reset();
	k.refuse_at = 10;
	ret = mrv_post_recv(&qp->vqp.qp, wr, &bad);
	tap_ok(ret == ENOMEM && bad == &wr[10] && k.nrecv == 10,
	       "the kernel refuses receive 10: bad_wr is it (%d)", ret);

	qp->vqp.qp.srq = &srq;
	k_reset();
	ret = mrv_post_recv(&qp->vqp.qp, wr, &bad);
	tap_ok(ret == EINVAL && bad == &wr[0] && !k.calls,
	       "a QP with an SRQ takes no receives (%d)", ret);

	k_reset();
	ret = mrv_post_recv_list(fake_post_recv, NULL, 1, wr, &bad);
	tap_ok(ret == EINVAL && bad == &wr[0] && !k.calls,
	       "the SRQ path checks against the SRQ's max_sge (%d)", ret);
	free(qp);
}

/* --- the ibv_wr_* API --------------------------------------------------- */

static void test_wr_api(void)
{
	const uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			     IBV_QP_EX_WITH_RDMA_WRITE |
			     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	struct mrv_qp *qp = make_qp(IBV_QPT_RC, ops);
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;
	uint8_t data[64], want[64];
	struct ibv_data_buf bufs[2];
	struct ibv_sge two[2] = { { 1, 2, 3 }, { 4, 5, 6 } };
	int i, ret;

	for (i = 0; i < 64; i++)
		data[i] = want[i] = (uint8_t)(i * 3 + 1);

	k_reset();
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_sge_list(qpx, 2, two);
	qpx->wr_id = 2;
	qpx->wr_flags = IBV_SEND_INLINE;	/* meaningless here: dropped */
	ibv_wr_rdma_write(qpx, 0x55, 0x1000);
	ibv_wr_set_inline_data(qpx, data, 40);
	qpx->wr_id = 3;
	qpx->wr_flags = 0;
	ibv_wr_send_imm(qpx, htobe32(0xabcd));
	bufs[0] = (struct ibv_data_buf){ data, 10 };
	bufs[1] = (struct ibv_data_buf){ data + 10, 20 };
	ibv_wr_set_inline_data_list(qpx, 2, bufs);
	qpx->wr_id = 4;
	ibv_wr_atomic_fetch_add(qpx, 0x66, 0x2000, 9);
	ibv_wr_set_sge(qpx, 0x77, 0x3000, 8);
	memset(data, 0, sizeof(data));
	ret = ibv_wr_complete(qpx);

	tap_ok(!ret && k.calls == 1 && k.n == 4, "4 work requests, one command (%d)",
	       ret);
	tap_ok(k.r[0].wr.opcode == IBV_WR_SEND && k.r[0].wr.wr_id == 1 &&
	       k.r[0].wr.send_flags == IBV_SEND_SIGNALED &&
	       k.r[0].wr.num_sge == 2 && k.r[0].sge[1].addr == 4 &&
	       k.r[0].sge[1].length == 5 && k.r[0].sge[1].lkey == 6,
	       "wr_send + wr_set_sge_list");
	tap_ok(k.r[1].wr.opcode == IBV_WR_RDMA_WRITE && k.r[1].wr.wr_id == 2 &&
	       k.r[1].wr.wr.rdma.rkey == 0x55 &&
	       k.r[1].wr.wr.rdma.remote_addr == 0x1000 &&
	       k.r[1].wr.send_flags == IBV_SEND_INLINE &&
	       k.r[1].wr.num_sge == 1 && k.r[1].sge[0].length == 40 &&
	       !memcmp(k.r[1].inl, want, 40),
	       "wr_rdma_write + wr_set_inline_data: copied at the call");
	tap_ok(k.r[2].wr.opcode == IBV_WR_SEND_WITH_IMM &&
	       k.r[2].wr.imm_data == htobe32(0xabcd) &&
	       k.r[2].wr.send_flags == IBV_SEND_INLINE &&
	       k.r[2].sge[0].length == 30 && !memcmp(k.r[2].inl, want, 30),
	       "wr_send_imm + wr_set_inline_data_list");
	tap_ok(k.r[3].wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD &&
	       k.r[3].wr.wr.atomic.rkey == 0x66 &&
	       k.r[3].wr.wr.atomic.remote_addr == 0x2000 &&
	       k.r[3].wr.wr.atomic.compare_add == 9 && k.r[3].wr.num_sge == 1 &&
	       k.r[3].sge[0].lkey == 0x77 && k.r[3].sge[0].addr == 0x3000,
	       "wr_atomic_fetch_add + wr_set_sge");

	/* An op the QP was not created with fails the whole list. */
	k_reset();
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	ibv_wr_rdma_read(qpx, 1, 2);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	ret = ibv_wr_complete(qpx);
	tap_ok(ret == EINVAL && !k.calls,
	       "an op outside send_ops_flags: EINVAL, nothing posted (%d)", ret);

	k_reset();
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	ret = ibv_wr_complete(qpx);
	tap_ok(!ret && k.n == 1, "... and the next list is fine (%d)", ret);

	k_reset();
	ibv_wr_start(qpx);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	ret = ibv_wr_complete(qpx);
	tap_ok(ret == EINVAL && !k.calls,
	       "wr_set_sge before any work request: EINVAL (%d)", ret);

	k_reset();
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_inline_data(qpx, data, 65);
	ret = ibv_wr_complete(qpx);
	tap_ok(ret == EINVAL && !k.calls,
	       "65 bytes of inline data with max_inline 64: EINVAL (%d)", ret);

	k_reset();
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge_list(qpx, 3, sges);
	ret = ibv_wr_complete(qpx);
	tap_ok(ret == EINVAL && !k.calls,
	       "3 SGEs with max_send_sge 2: EINVAL (%d)", ret);

	k_reset();
	ibv_wr_start(qpx);
	ibv_wr_bind_mw(qpx, NULL, 0, NULL);
	ret = ibv_wr_complete(qpx);
	tap_ok(ret == EOPNOTSUPP && !k.calls,
	       "wr_bind_mw: EOPNOTSUPP at wr_complete (%d)", ret);

	k_reset();
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	ibv_wr_abort(qpx);
	ibv_wr_start(qpx);
	ret = ibv_wr_complete(qpx);
	tap_ok(!ret && !k.calls, "wr_abort drops the list (%d)", ret);

	/* Growth: 64 work requests of distinct data move the arrays. */
	k_reset();
	ibv_wr_start(qpx);
	for (i = 0; i < 64; i++) {
		qpx->wr_id = (uint64_t)i;
		ibv_wr_send(qpx);
		if (i % 2) {
			ibv_wr_set_sge(qpx, (uint32_t)i, (uint64_t)i, 1);
		} else {
			data[0] = (uint8_t)i;
			ibv_wr_set_inline_data(qpx, data, 1);
		}
	}
	ret = ibv_wr_complete(qpx);
	for (i = 0; !ret && i < 64; i++)
		if (k.r[i].wr.wr_id != (uint64_t)i ||
		    (i % 2 ? k.r[i].sge[0].lkey != (uint32_t)i :
			     k.r[i].inl[0] != (uint8_t)i))
			break;
	tap_ok(!ret && k.n == 64 && i == 64,
	       "64 work requests (max_send_wr) across array growth (%d, %u, %d)",
	       ret, k.n, i);

	k_reset();
	ibv_wr_start(qpx);
	for (i = 0; i < 65; i++) {
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, 1, 2, 3);
	}
	ret = ibv_wr_complete(qpx);
	tap_ok(ret == ENOMEM && !k.calls,
	       "65 work requests with max_send_wr 64: ENOMEM (%d)", ret);

	k_reset();
	k.refuse_at = 2;
	ibv_wr_start(qpx);
	for (i = 0; i < 4; i++) {
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, 1, 2, 3);
	}
	ret = ibv_wr_complete(qpx);
	tap_ok(ret == ENOMEM && k.n == 2,
	       "the kernel refuses WR 2 of 4: wr_complete returns its error (%d)",
	       ret);
	mrv_qp_free(qp);

	qp = make_qp(IBV_QPT_UD, IBV_QP_EX_WITH_SEND);
	qpx = &qp->vqp.qp_ex;
	k_reset();
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_ud_addr(qpx, &ah, 77, 0x1234);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	ret = ibv_wr_complete(qpx);
	tap_ok(!ret && k.n == 1 && k.r[0].wr.wr.ud.ah == &ah &&
	       k.r[0].wr.wr.ud.remote_qpn == 77 &&
	       k.r[0].wr.wr.ud.remote_qkey == 0x1234,
	       "UD: wr_set_ud_addr (%d)", ret);
	k_reset();
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	ret = ibv_wr_complete(qpx);
	tap_ok(ret == EINVAL && !k.calls,
	       "UD: a send without wr_set_ud_addr: EINVAL (%d)", ret);
	mrv_qp_free(qp);
}

/* --- the send ring -------------------------------------------------------- */

#define RING_SLOTS 64
#define RING_STRIDE 128

static struct mrv_qp *make_ring_qp(uint32_t start)
{
	struct mrv_qp *qp = make_qp(IBV_QPT_RC, 0);

	qp->sq_slots = RING_SLOTS;
	qp->sq_stride = RING_STRIDE;
	qp->sq_ring_size = METAROCE_SQ_RING_ENTRIES + RING_SLOTS * RING_STRIDE;
	qp->sq_ring = mmap(NULL, qp->sq_ring_size, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (qp->sq_ring == MAP_FAILED)
		abort();
	qp->sq_ring->producer = start;
	qp->sq_ring->retired = start;
	qp->sq_prod = start;
	qp->state = IBV_QPS_RTS;
	qp->sq_gap = 0;		/* a streaming process */
	return qp;
}

static const struct metaroce_swqe *slot_of(const struct mrv_qp *qp,
					   uint32_t idx)
{
	return (const void *)((const uint8_t *)qp->sq_ring +
			      METAROCE_SQ_RING_ENTRIES +
			      (idx & (RING_SLOTS - 1)) * RING_STRIDE);
}

static void test_ring_post(void)
{
	struct mrv_qp *qp = make_ring_qp(0);
	struct ibv_send_wr wr[100], *bad = NULL;
	const struct metaroce_swqe *w;
	const struct metaroce_sge *sge;
	bool ok = true;
	int ret, i;

	k_reset();
	make_sends(wr, 5);
	qp->sq_last_post = mrv_now_ns();	/* back to back: no pause */
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	for (i = 0; i < 5; i++) {
		w = slot_of(qp, i);
		sge = (const void *)(w + 1);
		ok &= w->wr_id == (uint64_t)i && w->opcode == IBV_WR_SEND &&
		      w->num_sge == 1 && sge->addr == (uintptr_t)&mem[i] &&
		      sge->length == 1 && sge->lkey == 7;
	}
	tap_ok(!ret && ok && qp->sq_ring->producer == 5 && k.calls == 0,
	       "ring: 5 sends in their slots, producer 5, no command (%u)",
	       k.calls);

	qp->sq_ring->flags = METAROCE_SQ_NEED_WAKEUP;
	make_sends(wr, 3);
	qp->sq_last_post = mrv_now_ns();
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(!ret && k.calls == 1 && k.per_call[0] == 0 &&
	       qp->sq_ring->producer == 8,
	       "ring: the kernel asks for a wakeup: one doorbell, with no work request");
	qp->sq_ring->flags = 0;

	/*
	 * A process that posts one at a time, slowly: a doorbell if nothing
	 * is outstanding, else none.
	 */
	make_sends(wr, 1);
	qp->sq_gap = 2 * MRV_RING_PAUSE_NS;
	qp->sq_last_post = mrv_now_ns() - 2 * MRV_RING_PAUSE_NS;
	mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(k.calls == 1, "ring: 8 outstanding, a slow poster: no doorbell (%u)",
	       k.calls - 1);
	qp->sq_ring->retired = qp->sq_ring->producer;
	qp->sq_last_post = mrv_now_ns() - 2 * MRV_RING_PAUSE_NS;
	mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(k.calls == 2, "ring: none outstanding, a slow poster: a doorbell (%u)",
	       k.calls - 1);
	qp->sq_gap = 0;
	qp->sq_ring->retired = 0;

	/* Full: max_send_wr (64) outstanding. */
	make_sends(wr, 60);
	bad = NULL;
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(ret == ENOMEM && bad == &wr[54] && qp->sq_ring->producer == 64,
	       "ring: 64 outstanding, the 55th of 60 gets ENOMEM (%d, bad %ld)",
	       ret, bad ? (long)(bad - wr) : -1L);
	qp->sq_ring->retired = 10;
	make_sends(wr, 10);
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(!ret && qp->sq_ring->producer == 74 && slot_of(qp, 73)->wr_id == 9,
	       "ring: 10 retired, 10 more fit");

	/* Checks: the WRs before a bad one are published. */
	qp->sq_ring->retired = 74;
	make_sends(wr, 3);
	wr[1].num_sge = 3;
	bad = NULL;
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(ret == EINVAL && bad == &wr[1] && qp->sq_ring->producer == 75,
	       "ring: 3 SGEs over max_send_sge 2: EINVAL, the one before posted");
	make_sends(wr, 1);
	wr[0].opcode = IBV_WR_LOCAL_INV;
	tap_ok(mrv_post_send(&qp->vqp.qp, wr, &bad) == EINVAL && bad == wr,
	       "ring: LOCAL_INV (not taken from userspace): EINVAL");
	wr[0].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr[0].wr.atomic.remote_addr = 0x1000;
	tap_ok(mrv_post_send(&qp->vqp.qp, wr, &bad) == EINVAL,
	       "ring: an atomic of 1 byte: EINVAL");
	sges[0].length = 8;
	wr[0].wr.atomic.remote_addr = 0x1004;
	tap_ok(mrv_post_send(&qp->vqp.qp, wr, &bad) == EINVAL,
	       "ring: an atomic at a misaligned address: EINVAL");
	wr[0].wr.atomic.remote_addr = 0x1008;
	wr[0].wr.atomic.rkey = 0x55;
	wr[0].wr.atomic.compare_add = 3;
	wr[0].wr.atomic.swap = 4;
	wr[0].opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	w = slot_of(qp, 75);
	tap_ok(!ret && w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP &&
	       w->remote_addr == 0x1008 && w->rkey == 0x55 &&
	       w->compare_add == 3 && w->swap == 4,
	       "ring: compare and swap: every field");

	/* RDMA WRITE with immediate, inline. */
	memcpy(mem, "0123456789abcdef", 16);
	make_sends(wr, 1);
	sges[0].length = 16;
	wr[0].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr[0].send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED |
			   IBV_SEND_IP_CSUM;
	wr[0].imm_data = htobe32(0xabcd);
	wr[0].wr.rdma.remote_addr = 0x7000;
	wr[0].wr.rdma.rkey = 0x99;
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	w = slot_of(qp, 76);
	tap_ok(!ret && w->inline_len == 16 && w->num_sge == 0 &&
	       !memcmp(w + 1, "0123456789abcdef", 16) &&
	       w->imm == htobe32(0xabcd) && w->remote_addr == 0x7000 &&
	       w->rkey == 0x99 &&
	       w->send_flags == (IBV_SEND_INLINE | IBV_SEND_SIGNALED),
	       "ring: inline RDMA WRITE with immediate: data and fields, no IP_CSUM");
	sges[0].length = 65;
	tap_ok(mrv_post_send(&qp->vqp.qp, wr, &bad) == EINVAL,
	       "ring: 65 inline bytes over max_inline 64: EINVAL");

	make_sends(wr, 1);
	wr[0].opcode = IBV_WR_SEND_WITH_INV;
	wr[0].invalidate_rkey = 0x1234;
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(!ret && slot_of(qp, 77)->imm == 0x1234,
	       "ring: SEND with invalidate carries the rkey");

	/* States. */
	qp->state = IBV_QPS_INIT;
	make_sends(wr, 1);
	bad = NULL;
	tap_ok(mrv_post_send(&qp->vqp.qp, wr, &bad) == EINVAL && bad == wr &&
	       qp->sq_ring->producer == 78,
	       "ring: posting in INIT: EINVAL, nothing written");
	qp->state = IBV_QPS_ERR;
	tap_ok(!mrv_post_send(&qp->vqp.qp, wr, &bad) &&
	       qp->sq_ring->producer == 79,
	       "ring: posting in ERR is accepted (the kernel flushes it)");
	mrv_qp_free(qp);

	/* Indices that wrap around 2^32. */
	qp = make_ring_qp(UINT32_MAX - 20);
	k_reset();
	for (i = 0; i < 10 && ok; i++) {
		make_sends(wr, 50);
		qp->sq_last_post = mrv_now_ns();
		ok &= !mrv_post_send(&qp->vqp.qp, wr, &bad);
		qp->sq_ring->retired = qp->sq_ring->producer;
	}
	tap_ok(ok && qp->sq_ring->producer == (uint32_t)(UINT32_MAX - 20 + 500) &&
	       slot_of(qp, qp->sq_ring->producer - 1)->wr_id == 49 && !k.calls,
	       "ring: 500 work requests across 2^32, in their slots");
	mrv_qp_free(qp);
}

static void test_ud_ring(void)
{
	struct mrv_qp *qp = make_ring_qp(5);
	struct mrv_ah mah = { .ibv_ah = { .context = &ctx }, .ahn = 77 };
	struct mrv_ah oah = { .ibv_ah = { .context = &other_ctx }, .ahn = 78 };
	struct ibv_send_wr wr[1], *bad = NULL;
	const struct metaroce_swqe *w;
	int ret;

	qp->vqp.qp.qp_type = IBV_QPT_UD;
	qp->ud_max_msg = 1024;
	k_reset();
	make_sends(wr, 1);
	wr[0].opcode = IBV_WR_SEND_WITH_IMM;
	wr[0].imm_data = 0x12345678;
	wr[0].wr.ud.ah = &mah.ibv_ah;
	wr[0].wr.ud.remote_qpn = 0x4242;
	wr[0].wr.ud.remote_qkey = 0x11111111;
	qp->sq_last_post = mrv_now_ns();
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	w = slot_of(qp, 5);
	tap_ok(!ret && qp->sq_ring->producer == 6 && w->ud.ahn == 77 &&
	       w->ud.remote_qpn == 0x4242 && w->ud.remote_qkey == 0x11111111 &&
	       w->opcode == IBV_WR_SEND_WITH_IMM && w->imm == 0x12345678 &&
	       !w->ud.reserved[0] && !w->ud.reserved[2],
	       "UD ring: a send names its AH by number, the QP and the Q_Key");

	wr[0].wr.ud.ah = &oah.ibv_ah;
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(ret == EINVAL && bad == wr && qp->sq_ring->producer == 6,
	       "UD ring: an AH of another context: EINVAL");
	wr[0].wr.ud.ah = NULL;
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(ret == EINVAL && qp->sq_ring->producer == 6,
	       "UD ring: no AH: EINVAL");
	wr[0].wr.ud.ah = &mah.ibv_ah;
	wr[0].opcode = IBV_WR_RDMA_WRITE;
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(ret == EINVAL && qp->sq_ring->producer == 6,
	       "UD ring: an RDMA write: EINVAL");
	wr[0].opcode = IBV_WR_SEND;
	sges[0].length = 1025;
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(ret == EINVAL && qp->sq_ring->producer == 6,
	       "UD ring: a datagram longer than the MTU: EINVAL");
	sges[0].length = 1024;
	ret = mrv_post_send(&qp->vqp.qp, wr, &bad);
	tap_ok(!ret && qp->sq_ring->producer == 7,
	       "UD ring: one of the MTU exactly is posted");
	mrv_qp_free(qp);
}

static void test_old_kernel(void)
{
	struct ibv_cq cq = { .context = &ctx };
	struct ibv_pd pd = { .context = &ctx };
	struct ibv_qp_init_attr ia = {
		.send_cq = &cq,
		.recv_cq = &cq,
		.qp_type = IBV_QPT_RC,
		.cap = { 8, 8, 1, 1, 0 },
	};
	struct ibv_qp *qp;

	k_creates = 0;
	k_unknown_rings = METAROCE_QP_ONE_MAP;
	qp = mrv_create_qp(&pd, &ia);
	tap_ok(qp && k_creates == 2 &&
	       k_masks[0] == (METAROCE_QP_SQ_RING | METAROCE_QP_RQ_RING |
			   METAROCE_QP_ONE_MAP) &&
	       k_masks[1] == (METAROCE_QP_SQ_RING | METAROCE_QP_RQ_RING),
	       "a kernel without one mapping for both rings: asked again for two");
	if (qp)
		mrv_qp_free(to_mrv_qp(qp));
	k_creates = 0;
	k_unknown_rings = METAROCE_QP_RQ_RING | METAROCE_QP_ONE_MAP;
	qp = mrv_create_qp(&pd, &ia);
	tap_ok(qp && k_creates == 3 &&
	       k_masks[2] == METAROCE_QP_SQ_RING && !to_mrv_qp(qp)->rq.ring,
	       "a kernel without receive rings: asked again for the send ring only");
	if (qp)
		mrv_qp_free(to_mrv_qp(qp));
	k_creates = 0;
	k_unknown_rings = METAROCE_QP_RQ_RING | METAROCE_QP_SQ_RING |
			  METAROCE_QP_ONE_MAP;
	qp = mrv_create_qp(&pd, &ia);
	tap_ok(qp && k_creates == 4 && k_masks[3] == 0,
	       "a kernel without rings: asked again for none (commands)");
	if (qp)
		mrv_qp_free(to_mrv_qp(qp));
	k_unknown_rings = 0;
}

static void test_ring_setup(void)
{
	struct mrv_qp *qp = make_qp(IBV_QPT_RC, 0);
	struct metaroce_create_qp_resp r = {
		.comp_mask = METAROCE_QP_SQ_RING,
		.sq_slots = 64,
		.sq_stride = 128,
		.sq_mmap_size = METAROCE_SQ_RING_ENTRIES + 64 * 128,
	}, bad;
	struct ibv_context c = { .cmd_fd = -1 };
	struct ibv_qp_cap cap = { .max_recv_wr = 16, .max_recv_sge = 2 };

	r.comp_mask = 0;
	tap_ok(!mrv_qp_setup_ring(&c, qp, &r, &cap) && !qp->sq_ring && !qp->rq.ring,
	       "setup: no ring offered: posting takes commands");
	r.comp_mask = METAROCE_QP_SQ_RING;
	bad = r;
	bad.sq_slots = 32;
	tap_ok(mrv_qp_setup_ring(&c, qp, &bad, &cap) == EPROTO,
	       "setup: fewer slots than max_send_wr: EPROTO");
	bad = r;
	bad.sq_slots = 96;
	tap_ok(mrv_qp_setup_ring(&c, qp, &bad, &cap) == EPROTO,
	       "setup: slots not a power of two: EPROTO");
	bad = r;
	bad.sq_stride = 64 + 32;
	tap_ok(mrv_qp_setup_ring(&c, qp, &bad, &cap) == EPROTO,
	       "setup: a slot too small for 64 inline bytes: EPROTO");
	bad = r;
	bad.sq_mmap_size -= 8;
	tap_ok(mrv_qp_setup_ring(&c, qp, &bad, &cap) == EPROTO,
	       "setup: a mapping too small for its slots: EPROTO");
	tap_ok(mrv_qp_setup_ring(&c, qp, &r, &cap) == EBADF && !qp->sq_ring,
	       "setup: a good response is mapped from the command file");

	r.comp_mask = METAROCE_QP_RQ_RING;
	r.rq_slots = 16;
	r.rq_stride = sizeof(struct metaroce_rwqe) +
		      2 * sizeof(struct metaroce_sge);
	r.rq_mmap_size = METAROCE_RQ_RING_ENTRIES + 16 * r.rq_stride;
	bad = r;
	bad.rq_slots = 8;
	tap_ok(mrv_qp_setup_ring(&c, qp, &bad, &cap) == EPROTO && !qp->rq.ring,
	       "setup: a receive ring with fewer slots than max_recv_wr: EPROTO");
	bad = r;
	bad.rq_stride -= 8;
	tap_ok(mrv_qp_setup_ring(&c, qp, &bad, &cap) == EPROTO && !qp->rq.ring,
	       "setup: a receive slot too small for 2 SGEs: EPROTO");
	bad = r;
	bad.rq_mmap_size -= 8;
	tap_ok(mrv_qp_setup_ring(&c, qp, &bad, &cap) == EPROTO && !qp->rq.ring,
	       "setup: a receive mapping too small for its slots: EPROTO");
	tap_ok(mrv_qp_setup_ring(&c, qp, &r, &cap) == EBADF && !qp->rq.ring,
	       "setup: a good receive ring is mapped from the command file");
	mrv_qp_free(qp);
}

/* Both rings in one mapping (METAROCE_QP_ONE_MAP), from a real file. */
static void test_ring_one_map(void)
{
	uint32_t rq_stride = sizeof(struct metaroce_rwqe) +
			     2 * sizeof(struct metaroce_sge);
	struct metaroce_create_qp_resp r = {
		.comp_mask = METAROCE_QP_SQ_RING | METAROCE_QP_RQ_RING |
			     METAROCE_QP_ONE_MAP,
		.sq_slots = 16,
		.sq_stride = 128,
		.rq_slots = 16,
		.rq_stride = rq_stride,
		.rq_ring_offset = METAROCE_SQ_RING_ENTRIES + 16 * 128,
		.sq_mmap_size = 4096,
	}, bad;
	struct ibv_qp_cap cap = { .max_recv_wr = 16, .max_recv_sge = 2 };
	int fd = memfd_create("rings", 0);
	struct ibv_context c = { .cmd_fd = fd };
	struct mrv_qp *qp;

	if (fd < 0 || ftruncate(fd, 4096))
		abort();
	r.rq_mmap_offset = r.sq_mmap_offset;
	r.rq_mmap_size = r.sq_mmap_size;
	qp = make_qp(IBV_QPT_RC, 0);
	qp->max_send_wr = 16;
	tap_ok(!mrv_qp_setup_ring(&c, qp, &r, &cap) && qp->sq_ring &&
	       (uint8_t *)qp->rq.ring == (uint8_t *)qp->sq_ring + r.rq_ring_offset &&
	       !qp->rq.size && qp->rq.slots == 16,
	       "one map: the receive ring at rq_ring_offset of the send ring's mapping, not mapped again");
	mrv_qp_free(qp);
	bad = r;
	bad.rq_ring_offset -= 64;
	qp = make_qp(IBV_QPT_RC, 0);
	qp->max_send_wr = 16;
	tap_ok(mrv_qp_setup_ring(&c, qp, &bad, &cap) == EPROTO,
	       "one map: a receive ring over the send ring's slots: EPROTO");
	mrv_qp_free(qp);
	bad = r;
	bad.rq_ring_offset += 8;
	qp = make_qp(IBV_QPT_RC, 0);
	qp->max_send_wr = 16;
	tap_ok(mrv_qp_setup_ring(&c, qp, &bad, &cap) == EPROTO,
	       "one map: an offset that is not a multiple of 64: EPROTO");
	mrv_qp_free(qp);
	bad = r;
	bad.rq_ring_offset = 4096 - METAROCE_RQ_RING_ENTRIES;
	qp = make_qp(IBV_QPT_RC, 0);
	qp->max_send_wr = 16;
	tap_ok(mrv_qp_setup_ring(&c, qp, &bad, &cap) == EPROTO,
	       "one map: a receive ring that does not fit in the mapping: EPROTO");
	mrv_qp_free(qp);
	close(fd);
}

#define RQ_SLOTS 8
#define RQ_STRIDE (sizeof(struct metaroce_rwqe) + 2 * sizeof(struct metaroce_sge))

static void make_rq_ring(struct mrv_qp *qp, uint32_t start)
{
	qp->rq.size = METAROCE_RQ_RING_ENTRIES + RQ_SLOTS * RQ_STRIDE;
	qp->rq.ring = mmap(NULL, qp->rq.size, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (qp->rq.ring == MAP_FAILED || pthread_spin_init(&qp->rq.lock, 0))
		abort();
	qp->rq.slots = RQ_SLOTS;
	qp->rq.stride = RQ_STRIDE;
	qp->rq.max_wr = RQ_SLOTS - 2;	/* rounded up by the kernel */
	qp->rq.max_sge = 2;
	qp->rq.prod = start;
	qp->rq.ring->producer = start;
	qp->rq.ring->consumer = start;
}

static const struct metaroce_rwqe *rslot(const struct mrv_qp *qp, uint32_t idx)
{
	return (const void *)((const uint8_t *)qp->rq.ring +
			      METAROCE_RQ_RING_ENTRIES +
			      (idx & (RQ_SLOTS - 1)) * RQ_STRIDE);
}

static void test_rq_ring(void)
{
	struct mrv_qp *qp = make_qp(IBV_QPT_RC, 0);
	struct ibv_recv_wr wr[10], *bad = NULL;
	const struct metaroce_sge *sge;
	struct ibv_sge s[2] = {
		{ .addr = 0x1000, .length = 100, .lkey = 5 },
		{ .addr = 0x2000, .length = 200, .lkey = 6 },
	};
	uint32_t start = UINT32_MAX - 3;
	int ret, i;
	bool ok = true;

	make_rq_ring(qp, start);
	for (i = 0; i < 10; i++)
		wr[i] = (struct ibv_recv_wr){
			.wr_id = 100 + i,
			.next = i + 1 < 10 ? &wr[i + 1] : NULL,
			.sg_list = s,
			.num_sge = i % 3,
		};
	k_reset();
	qp->state = IBV_QPS_RESET;
	ret = mrv_post_recv(&qp->vqp.qp, wr, &bad);
	tap_ok(ret == EINVAL && bad == wr && qp->rq.ring->producer == start,
	       "receive ring: posting in RESET: EINVAL, nothing written");

	qp->state = IBV_QPS_INIT;
	wr[3].next = NULL;
	ret = mrv_post_recv(&qp->vqp.qp, wr, &bad);
	for (i = 0; i < 4; i++) {
		const struct metaroce_rwqe *w = rslot(qp, start + i);
		int j;

		sge = (const void *)(w + 1);
		ok &= w->wr_id == (uint64_t)(100 + i) &&
		      w->num_sge == (uint32_t)(i % 3);
		for (j = 0; j < i % 3; j++)
			ok &= sge[j].addr == s[j].addr &&
			      sge[j].length == s[j].length &&
			      sge[j].lkey == s[j].lkey;
	}
	tap_ok(!ret && ok && qp->rq.ring->producer == start + 4 && !k.calls,
	       "receive ring: 4 receives across 2^32 in their slots, no command");

	wr[3].next = &wr[4];
	wr[5].num_sge = 3;
	ret = mrv_post_recv(&qp->vqp.qp, &wr[4], &bad);
	tap_ok(ret == EINVAL && bad == &wr[5] && qp->rq.ring->producer == start + 5,
	       "receive ring: 3 SGEs of 2: EINVAL, bad_wr is it, the one before posted");
	wr[5].num_sge = 2;

	ret = mrv_post_recv(&qp->vqp.qp, &wr[5], &bad);
	tap_ok(ret == ENOMEM && bad == &wr[6] &&
	       qp->rq.ring->producer == start + 6 && !k.calls,
	       "receive ring: full at max_recv_wr (6): ENOMEM, bad_wr the 7th");

	qp->rq.ring->consumer = start + 2;
	ret = mrv_post_recv(&qp->vqp.qp, &wr[6], &bad);
	tap_ok(ret == ENOMEM && bad == &wr[8] && qp->rq.ring->producer == start + 8,
	       "receive ring: 2 completed, 2 more fit");

	qp->rq.ring->consumer = start + 8;
	qp->rq.ring->flags = METAROCE_RQ_NEED_WAKEUP;
	qp->state = IBV_QPS_ERR;
	wr[8].next = NULL;
	ret = mrv_post_recv(&qp->vqp.qp, &wr[8], &bad);
	tap_ok(!ret && k.calls == 1 && !k.nrecv &&
	       qp->rq.ring->producer == start + 9,
	       "receive ring: the kernel asks (error state): one doorbell, no work request in it");

	qp->rq.ring->flags = 0;
	qp->state = IBV_QPS_RTS;
	ret = mrv_post_recv(&qp->vqp.qp, &wr[9], &bad);
	tap_ok(!ret && k.calls == 1 && qp->rq.ring->producer == start + 10,
	       "receive ring: without the flag, no doorbell");
	mrv_qp_free(qp);
}

int main(void)
{
	tap_plan(80);
	test_post_send();
	test_post_recv();
	test_wr_api();
	test_ring_post();
	test_ring_setup();
	test_ring_one_map();
	test_ud_ring();
	test_rq_ring();
	test_old_kernel();
	return tap_done();
}
