// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * verbs_pair: the data path between two hosts, one instance on each
 * (prints TAP):
 *
 *   verbs_pair server DEVICE TCP_PORT
 *   verbs_pair client DEVICE SERVER_ADDRESS TCP_PORT
 *
 * The two exchange their QP numbers, GIDs and memory keys over TCP, then
 * both run the same steps in lock step (a TCP barrier between steps): RC
 * SEND/RECV (with immediate data, inline, several packets), RDMA WRITE (and
 * with immediate), RDMA READ, atomics, an SRQ and its limit event, UD SEND,
 * completion events, the ibv_wr_* API with an extended CQ, and a remote
 * access error.  Then the rules of the verbs the transport must keep: a
 * fenced WRITE waits for the READ before it, at most max_rd_atomic READs
 * are outstanding, unsignaled work requests complete silently, a CQ armed
 * for solicited completions ignores the others, RNR retries (exhausted, and
 * waited out until a receive is posted) and the rights of a memory region
 * (WRITE, READ and atomic each refused by an MR without that right); a QP
 * on an SRQ moved to the error state reaches its last WQE, and a full CQ
 * fails the QP whose completion it lost.  Every received byte is checked.
 */
#include <ctype.h>
#include <unistd.h>

#include "verbs_conn.h"

#define TIMEOUT 10.0	/* seconds to wait for any one completion */

/* Layout of each side's registered buffer. */
enum {
	OFF_SEND_RX = 0,		/* receives of rc1: 4 x 16 KiB */
	OFF_SEND_TX = 64 << 10,		/* what rc1 sends */
	OFF_WRITE_DST = 128 << 10,	/* the peer RDMA WRITEs here */
	OFF_READ_SRC = 192 << 10,	/* the peer RDMA READs from here */
	OFF_READ_DST = 256 << 10,	/* our RDMA READs land here */
	OFF_ATOMIC = 320 << 10,		/* two 8-byte targets for the peer */
	OFF_ATOMIC_RES = (320 << 10) + 64,	/* our atomics' results */
	OFF_SRQ_RX = 384 << 10,		/* receives of the SRQ: 8 x 4 KiB */
	OFF_UD_RX = 448 << 10,		/* UD receive: GRH + 4 KiB */
	OFF_UD_TX = 464 << 10,
	OFF_WR_RX = 512 << 10,		/* receives of rc3: 2 x 4 KiB */
	OFF_WR_TX = 528 << 10,
	OFF_WR_DST = 544 << 10,		/* the peer's ibv_wr_rdma_write */
	OFF_FENCE_SRC = 1 << 20,	/* the peer READs this, 512 KiB */
	OFF_FENCE_LOCAL = 1536 << 10,	/* our READ's, our fenced WRITE's */
	OFF_FENCE_DST = 2 << 20,	/* the peer's fenced WRITE */
	OFF_RD1_SRC = 2560 << 10,	/* the peer's 32 READs, 512 KiB */
	OFF_RD1_DST = 3 << 20,		/* our 32 READs land here */
	OFF_UNSIG_DST = 3584 << 10,	/* the peer's unsignaled WRITEs */
	OFF_UNSIG_SRC = 3648 << 10,	/* what ours write */
	OFF_MISC_RX = 3712 << 10,	/* receives of the later steps */
	OFF_ACC_LOCAL = 3776 << 10,	/* our READs from the peer's MRs */
	BUF_SIZE = 4 << 20,
};

#define WRITE_LEN 20000
#define READ_LEN 20000
#define UD_LEN 1000
#define GRH_LEN 40
#define QKEY 0x11111111u
#define FENCE_LEN (512 << 10)	/* the READ takes many round trips */
#define RD1_NUM 32		/* READs posted at once, max_rd_atomic 1 */
#define RD1_LEN (16 << 10)
#define UNSIG_ROUNDS 4		/* of UNSIG_SQ WRITEs, the last signaled */
#define UNSIG_SQ 16
#define UNSIG_LEN 1024
#define UNSIG_MAX_WC (UNSIG_ROUNDS * UNSIG_SQ + 1)	/* room for too many */
#define RNR_DELAY_US 150000	/* before the receive the SEND waits for */
#define ACC_LEN 4096		/* each MR without one remote right */
#define SOL_QUIET_MS 300	/* how long no event must come */

/* The peer's MRs that each lack one remote right. */
enum { ACC_NO_WRITE, ACC_NO_READ, ACC_NO_ATOMIC, NUM_ACC };

/*
 * One QP per step, so that a step that breaks its QP does not take the
 * following ones down with it.
 */
enum {
	RC_SEND, RC_WRITE, RC_READ, RC_ATOMIC, RC_SRQ, RC_EVENT, RC_WR,
	RC_ERR_KEY, RC_ERR_RANGE, RC_FENCE, RC_RD1, RC_UNSIG, RC_SOLICIT,
	RC_RNR, RC_RNR_WAIT, RC_ACC_WRITE, RC_ACC_READ, RC_ACC_ATOMIC, UD,
	RC_CQ_OVF, NUM_QPS
};

#define CQ_OVF_CQE 4		/* the size of RC_CQ_OVF's CQ */
#define CQ_OVF_WRS 8		/* WRITEs it posts, unpolled */

struct info {
	uint32_t magic;
	uint32_t qpn[NUM_QPS];
	uint32_t rkey;
	uint64_t addr;
	union ibv_gid gid;
	uint32_t acc_rkey[NUM_ACC];
	uint64_t acc_addr[NUM_ACC];
};

#define INFO_MAGIC 0x6d72766bu

struct side {
	int me;				/* 1 server, 2 client */
	const char *name;		/* of the device */
	int sock;
	struct ibv_context *ctx;
	struct ibv_device_attr_ex dev;
	struct ibv_port_attr port;
	union ibv_gid gid;
	int gid_index;
	struct ibv_pd *pd;
	uint8_t *buf;
	struct ibv_mr *mr;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;		/* rc1 and ud, with the channel */
	struct ibv_cq *cq2;		/* rc2 */
	struct ibv_cq_ex *cqx;		/* rc3 */
	struct ibv_comp_channel *ch_sol;
	struct ibv_cq *cq_sol;		/* receives of RC_SOLICIT */
	struct ibv_cq *cq_unsig;	/* RC_UNSIG alone */
	struct ibv_cq *cq_ovf;		/* RC_CQ_OVF alone, CQ_OVF_CQE */
	uint8_t *acc_buf[NUM_ACC];
	struct ibv_mr *acc_mr[NUM_ACC];
	struct ibv_srq *srq;
	struct ibv_qp *qp[NUM_QPS];
	struct ibv_ah *ah;
	struct info peer;
};

/* --- helpers ------------------------------------------------------------ */

static uint8_t pattern_byte(int seed, size_t i)
{
	return (uint8_t)(seed * 37 + i * 131 + (i >> 8));
}

static void fill(uint8_t *p, size_t len, int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pattern_byte(seed, i);
}

/* Index of the first byte of @p that differs from the pattern, or -1. */
static long check_pattern(const uint8_t *p, size_t len, int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pattern_byte(seed, i))
			return (long)i;
	return -1;
}

/* Both sides reach the same step. */
static void barrier(struct side *s, uint8_t step)
{
	uint8_t got;

	sock_all(s->sock, &step, 1, true);
	sock_all(s->sock, &got, 1, false);
	if (got != step)
		tap_bail("out of step with the peer (%u, %u)", step, got);
}

static struct ibv_sge sge_at(struct side *s, size_t off, uint32_t len)
{
	return (struct ibv_sge){
		.addr = (uintptr_t)(s->buf + off),
		.length = len,
		.lkey = s->mr->lkey,
	};
}

static int post_recv_at(struct side *s, struct ibv_qp *qp, uint64_t wr_id,
			size_t off, uint32_t len)
{
	struct ibv_sge sge = sge_at(s, off, len);
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/* Posts one send work request; @sge may be NULL for no data. */
static int post_one(struct ibv_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_sge *sge, int num_sge)
{
	struct ibv_send_wr *bad;

	wr->sg_list = sge;
	wr->num_sge = num_sge;
	wr->send_flags |= IBV_SEND_SIGNALED;
	return ibv_post_send(qp, wr, &bad);
}

/*
 * Completions polled while waiting for another one: a CQ may deliver a
 * receive before the send the test waits for.
 */
static struct {
	struct ibv_cq *cq;
	struct ibv_wc wc;
} stash[64];
static unsigned int num_stashed;

static bool unstash(struct ibv_cq *cq, uint64_t wr_id, struct ibv_wc *out)
{
	unsigned int i;

	for (i = 0; i < num_stashed; i++) {
		if (stash[i].cq != cq || stash[i].wc.wr_id != wr_id)
			continue;
		*out = stash[i].wc;
		stash[i] = stash[--num_stashed];
		return true;
	}
	return false;
}

/* Waits for the completion with @wr_id on @cq; false on timeout. */
static bool wait_wc(struct ibv_cq *cq, uint64_t wr_id, struct ibv_wc *out)
{
	double deadline = now_sec() + TIMEOUT;
	struct ibv_wc wc;
	int n;

	if (unstash(cq, wr_id, out))
		return true;
	while (now_sec() < deadline) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			return false;
		if (!n) {
			usleep(100);
			continue;
		}
		if (wc.wr_id == wr_id) {
			*out = wc;
			return true;
		}
		if (num_stashed < sizeof(stash) / sizeof(stash[0])) {
			stash[num_stashed].cq = cq;
			stash[num_stashed++].wc = wc;
		} else {
			tap_diag("dropped completion wr_id %llu: %s, opcode %d",
				 (unsigned long long)wc.wr_id,
				 ibv_wc_status_str(wc.status), wc.opcode);
		}
	}
	return false;
}

/* A send-side completion arrived and succeeded. */
static void expect_send_wc(struct ibv_cq *cq, uint64_t wr_id,
			   enum ibv_wc_opcode op, const char *what)
{
	struct ibv_wc wc = {};
	bool got = wait_wc(cq, wr_id, &wc);

	tap_ok(got && wc.status == IBV_WC_SUCCESS && wc.opcode == op,
	       "%s completes (%s, opcode %d)", what,
	       got ? ibv_wc_status_str(wc.status) : "no completion", wc.opcode);
}

/* --- setup -------------------------------------------------------------- */

static struct ibv_qp *create_qp_wr_api(struct side *s)
{
	struct ibv_qp_init_attr_ex xa = {
		.qp_type = IBV_QPT_RC,
		.send_cq = ibv_cq_ex_to_cq(s->cqx),
		.recv_cq = ibv_cq_ex_to_cq(s->cqx),
		.cap = { 16, 16, 2, 2, 128 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = s->pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND |
				  IBV_QP_EX_WITH_SEND_WITH_IMM |
				  IBV_QP_EX_WITH_RDMA_WRITE,
	};

	return ibv_create_qp_ex(s->ctx, &xa);
}

/* sq_sig_all is 0: only the work requests posted signaled complete. */
static struct ibv_qp *create_qp(struct side *s, enum ibv_qp_type type,
				struct ibv_cq *scq, struct ibv_cq *rcq,
				struct ibv_srq *srq, uint32_t max_send_wr)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = scq,
		.recv_cq = rcq,
		.srq = srq,
		.qp_type = type,
		.cap = { max_send_wr, srq ? 0 : 64, 4, 4, 128 },
		.sq_sig_all = 0,
	};

	return ibv_create_qp(s->pd, &ia);
}

static struct ibv_qp *create_step_qp(struct side *s, int i)
{
	switch (i) {
	case RC_SRQ:
		return create_qp(s, IBV_QPT_RC, s->cq2, s->cq2, s->srq, 64);
	case RC_WR:
		return create_qp_wr_api(s);
	case RC_SOLICIT:
		/* Its sends complete elsewhere: cq_sol sees receives only. */
		return create_qp(s, IBV_QPT_RC, s->cq2, s->cq_sol, NULL, 64);
	case RC_UNSIG:
		return create_qp(s, IBV_QPT_RC, s->cq_unsig, s->cq_unsig, NULL,
				 UNSIG_SQ);
	case UD:
		return create_qp(s, IBV_QPT_UD, s->cq, s->cq, NULL, 64);
	case RC_CQ_OVF:
		return create_qp(s, IBV_QPT_RC, s->cq_ovf, s->cq_ovf, NULL,
				 CQ_OVF_WRS);
	default:
		return create_qp(s, IBV_QPT_RC, s->cq, s->cq, NULL, 64);
	}
}

/* Memory the peer may reach with all the remote rights but @missing. */
static void setup_acc_mrs(struct side *s)
{
	static const int missing[NUM_ACC] = {
		[ACC_NO_WRITE] = IBV_ACCESS_REMOTE_WRITE,
		[ACC_NO_READ] = IBV_ACCESS_REMOTE_READ,
		[ACC_NO_ATOMIC] = IBV_ACCESS_REMOTE_ATOMIC,
	};
	const int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	int i, n = 0;

	for (i = 0; i < NUM_ACC; i++) {
		s->acc_buf[i] = aligned_alloc(4096, ACC_LEN);
		if (!s->acc_buf[i])
			tap_bail("no memory");
		fill(s->acc_buf[i], ACC_LEN, s->me + 100 + i);
		s->acc_mr[i] = ibv_reg_mr(s->pd, s->acc_buf[i], ACC_LEN,
					  all & ~missing[i]);
		n += s->acc_mr[i] != NULL;
	}
	tap_ok(n == NUM_ACC,
	       "ibv_reg_mr without remote write, without remote read, without remote atomic (%s)",
	       n == NUM_ACC ? "ok" : errname(errno));
	if (n != NUM_ACC)
		tap_bail("cannot register memory");
}

static void setup(struct side *s, const char *name)
{
	struct ibv_cq_init_attr_ex cxa = {
		.cqe = 64,
		.wc_flags = IBV_WC_STANDARD_FLAGS,
	};
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16,
						  .max_sge = 1 } };
	int i;

	s->name = name;
	s->ctx = open_device_gid(name, &s->gid, &s->gid_index);
	if (ibv_query_device_ex(s->ctx, NULL, &s->dev) ||
	    ibv_query_port(s->ctx, 1, &s->port))
		tap_bail("cannot query %s", name);

	s->pd = ibv_alloc_pd(s->ctx);
	s->buf = aligned_alloc(4096, BUF_SIZE);
	if (!s->pd || !s->buf)
		tap_bail("no PD or memory");
	memset(s->buf, 0, BUF_SIZE);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF_SIZE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	tap_ok(s->mr != NULL, "ibv_reg_mr with remote write, read, atomic (%s)",
	       s->mr ? "ok" : errname(errno));
	if (!s->mr)
		tap_bail("cannot register memory");

	s->ch = ibv_create_comp_channel(s->ctx);
	s->cq = s->ch ? ibv_create_cq(s->ctx, 256, s, s->ch, 0) : NULL;
	s->cq2 = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
	s->cqx = ibv_create_cq_ex(s->ctx, &cxa);
	s->ch_sol = ibv_create_comp_channel(s->ctx);
	s->cq_sol = s->ch_sol ? ibv_create_cq(s->ctx, 16, s, s->ch_sol, 0) :
				NULL;
	s->cq_unsig = ibv_create_cq(s->ctx, 2 * UNSIG_SQ, NULL, NULL, 0);
	s->cq_ovf = ibv_create_cq(s->ctx, CQ_OVF_CQE, NULL, NULL, 0);
	tap_ok(s->cq && s->cq2 && s->cqx && s->cq_sol && s->cq_unsig &&
	       s->cq_ovf, "six CQs, one extended, two with a channel (%s)",
	       s->cq && s->cq2 && s->cqx && s->cq_sol && s->cq_unsig &&
	       s->cq_ovf ? "ok" : errname(errno));
	s->srq = ibv_create_srq(s->pd, &sa);
	tap_ok(s->srq != NULL, "ibv_create_srq (%s)",
	       s->srq ? "ok" : errname(errno));
	if (!s->cq || !s->cq2 || !s->cqx || !s->cq_sol || !s->cq_unsig ||
	    !s->cq_ovf || !s->srq)
		tap_bail("cannot create CQs or the SRQ");
	setup_acc_mrs(s);

	for (i = 0; i < NUM_QPS; i++) {
		s->qp[i] = create_step_qp(s, i);
		if (!s->qp[i])
			break;
	}
	tap_ok(i == NUM_QPS,
	       "%d QPs: RC, RC with an SRQ, RC with ibv_wr_*, UD (%s)", NUM_QPS,
	       i == NUM_QPS ? "ok" : errname(errno));
	if (i != NUM_QPS)
		tap_bail("cannot create the QPs");
	tap_diag("%s: GID index %d, QPs %u..%u", name, s->gid_index,
		 s->qp[0]->qp_num, s->qp[NUM_QPS - 1]->qp_num);
}

static void exchange(struct side *s)
{
	struct info mine = {
		.magic = INFO_MAGIC,
		.rkey = s->mr->rkey,
		.addr = (uintptr_t)s->buf,
		.gid = s->gid,
	};
	int i;

	for (i = 0; i < NUM_QPS; i++)
		mine.qpn[i] = s->qp[i]->qp_num;
	for (i = 0; i < NUM_ACC; i++) {
		mine.acc_rkey[i] = s->acc_mr[i]->rkey;
		mine.acc_addr[i] = (uintptr_t)s->acc_buf[i];
	}
	sock_all(s->sock, &mine, sizeof(mine), true);
	sock_all(s->sock, &s->peer, sizeof(s->peer), false);
	if (s->peer.magic != INFO_MAGIC)
		tap_bail("the peer speaks another protocol");
}

/*
 * RC QP @i to its peer: RC_RNR gives up at the first RNR NAK, RC_RD1 has
 * one READ or atomic outstanding each way; the others retry RNR for ever
 * and have 4 outstanding.
 */
static int connect_rc(struct side *s, int i)
{
	const struct rc_path p = {
		.mtu = s->port.active_mtu,
		.sgid_index = s->gid_index,
		.dgid = s->peer.gid,
		.dest_qpn = s->peer.qpn[i],
		.psn = 0x1234,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
		.rd_atomic = i == RC_RD1 ? 1 : 4,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = i == RC_RNR ? 0 : 7,
		.min_rnr_timer = 12,
	};

	return rc_connect(s->qp[i], &p);
}

static int connect_ud(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qkey = QKEY,
	};
	int ret;

	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_QKEY);
	if (ret)
		return ret;
	a.qp_state = IBV_QPS_RTR;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (ret)
		return ret;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static void connect_all(struct side *s)
{
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.port_num = 1,
		.grh = {
			.dgid = s->peer.gid,
			.sgid_index = (uint8_t)s->gid_index,
			.hop_limit = 64,
		},
	};
	int i, ret;

	for (i = 0; i < NUM_QPS; i++) {
		if (i == UD)
			continue;
		ret = connect_rc(s, i);
		tap_ok(!ret && s->qp[i]->state == IBV_QPS_RTS,
		       "RC QP %u: RESET -> INIT -> RTR -> RTS towards QP %u (%s)",
		       s->qp[i]->qp_num, s->peer.qpn[i], errname(ret));
		if (ret)
			tap_bail("cannot connect the RC QPs");
	}
	ret = connect_ud(s->qp[UD]);
	tap_ok(!ret, "UD QP: RESET -> INIT -> RTR -> RTS (%s)", errname(ret));
	s->ah = ibv_create_ah(s->pd, &aa);
	tap_ok(s->ah != NULL, "ibv_create_ah towards the peer (%s)",
	       s->ah ? "ok" : errname(errno));
	if (ret || !s->ah)
		tap_bail("cannot set up UD");
}

/* --- the steps ------------------------------------------------------------ */

/* Sizes of the four messages each side sends in the SEND step. */
static const uint32_t send_len[4] = { 3000, 1, 100, 64 };

static void step_send(struct side *s)
{
	struct ibv_qp *qp = s->qp[RC_SEND];
	uint8_t ref[3200];
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	size_t off = 0;
	int i, ret = 0;
	bool got;

	for (i = 0; i < 4 && !ret; i++)
		ret = post_recv_at(s, qp, 100 + i, OFF_SEND_RX + i * 16384,
				   16384);
	expect_ret(ret, 0, "RC: ibv_post_recv x 4");
	fill(s->buf + OFF_SEND_TX, 16384, s->me);
	barrier(s, 1);

	for (i = 0; i < 4; i++) {
		wr = (struct ibv_send_wr){ .wr_id = 200 + i };
		sge = sge_at(s, OFF_SEND_TX + off, send_len[i]);
		wr.opcode = IBV_WR_SEND;
		if (i == 2) {
			wr.opcode = IBV_WR_SEND_WITH_IMM;
			wr.imm_data = htonl(0xc0ffee00u + s->me);
		}
		if (i == 3)
			wr.send_flags = IBV_SEND_INLINE;
		ret = post_one(qp, &wr, &sge, 1);
		off += send_len[i];
		if (ret)
			break;
	}
	expect_ret(ret, 0, "RC: ibv_post_send SEND 3000 B, 1 B, 100 B with immediate, 64 B inline");
	for (i = 0; i < 4; i++)
		expect_send_wc(s->cq, 200 + i, IBV_WC_SEND, "RC: SEND");

	/* Message i is the peer's pattern from the sum of the lengths before. */
	fill(ref, sizeof(ref), 3 - s->me);
	off = 0;
	for (i = 0; i < 4; i++) {
		uint32_t want_flags = i == 2 ? IBV_WC_WITH_IMM : 0;
		bool data_ok;

		memset(&wc, 0, sizeof(wc));
		got = wait_wc(s->cq, 100 + i, &wc);
		data_ok = got && !memcmp(ref + off, s->buf + OFF_SEND_RX +
					 i * 16384, send_len[i]);
		tap_ok(got && wc.status == IBV_WC_SUCCESS &&
		       wc.opcode == IBV_WC_RECV && wc.byte_len == send_len[i] &&
		       wc.qp_num == qp->qp_num &&
		       (wc.wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV)) ==
		       want_flags &&
		       (i != 2 || wc.imm_data == htonl(0xc0ffee00u + 3 - s->me)) &&
		       data_ok,
		       "RC: receive %d: %s, opcode %d, %u bytes, flags 0x%x, imm 0x%x, data %s",
		       i, got ? ibv_wc_status_str(wc.status) : "no completion",
		       wc.opcode, wc.byte_len, wc.wc_flags, ntohl(wc.imm_data),
		       data_ok ? "ok" : "corrupt");
		off += send_len[i];
	}
}

static void step_write(struct side *s)
{
	uint8_t inl[64];
	struct ibv_qp *qp = s->qp[RC_WRITE];
	struct ibv_send_wr wr = { .wr_id = 300, .opcode = IBV_WR_RDMA_WRITE };
	struct ibv_sge sge[2];
	struct ibv_wc wc = {};
	long bad;
	bool got;
	int ret;

	ret = post_recv_at(s, qp, 301, OFF_SEND_RX, 16);
	fill(s->buf + OFF_SEND_TX, WRITE_LEN, s->me + 10);
	barrier(s, 2);

	/* Two SGEs, several packets. */
	sge[0] = sge_at(s, OFF_SEND_TX, 7000);
	sge[1] = sge_at(s, OFF_SEND_TX + 7000, WRITE_LEN - 7000);
	wr.wr.rdma.remote_addr = s->peer.addr + OFF_WRITE_DST;
	wr.wr.rdma.rkey = s->peer.rkey;
	ret = ret ? ret : post_one(qp, &wr, sge, 2);
	expect_ret(ret, 0, "RC: ibv_post_send RDMA WRITE 20000 B from 2 SGEs");
	expect_send_wc(s->cq, 300, IBV_WC_RDMA_WRITE, "RC: RDMA WRITE");

	/* Then a WRITE with immediate, which consumes a receive. */
	wr = (struct ibv_send_wr){ .wr_id = 302,
				   .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				   .imm_data = htonl(0xabcd0000u + s->me) };
	wr.wr.rdma.remote_addr = s->peer.addr + OFF_WRITE_DST + WRITE_LEN;
	wr.wr.rdma.rkey = s->peer.rkey;
	sge[0] = sge_at(s, OFF_SEND_TX, 512);
	expect_ret(post_one(qp, &wr, sge, 1), 0,
		   "RC: ibv_post_send RDMA WRITE with immediate, 512 B");
	expect_send_wc(s->cq, 302, IBV_WC_RDMA_WRITE,
		       "RC: RDMA WRITE with immediate");

	got = wait_wc(s->cq, 301, &wc);
	tap_ok(got && wc.status == IBV_WC_SUCCESS &&
	       wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	       (wc.wc_flags & IBV_WC_WITH_IMM) &&
	       wc.imm_data == htonl(0xabcd0000u + 3 - s->me) &&
	       wc.byte_len == 512,
	       "RC: the peer's WRITE with immediate completes a receive (%s, opcode %d, %u bytes, imm 0x%x)",
	       got ? ibv_wc_status_str(wc.status) : "no completion", wc.opcode,
	       wc.byte_len, ntohl(wc.imm_data));
	bad = check_pattern(s->buf + OFF_WRITE_DST, WRITE_LEN, 3 - s->me + 10);
	tap_ok(bad < 0, "RC: the peer's RDMA WRITE placed its 20000 bytes (first bad byte %ld)",
	       bad);
	bad = check_pattern(s->buf + OFF_WRITE_DST + WRITE_LEN, 512,
			    3 - s->me + 10);
	tap_ok(bad < 0, "RC: ... and the 512 bytes with immediate (first bad byte %ld)",
	       bad);

	/* An inline WRITE: the data is taken at posting time. */
	fill(inl, sizeof(inl), s->me + 70);
	wr = (struct ibv_send_wr){ .wr_id = 303, .opcode = IBV_WR_RDMA_WRITE,
				   .send_flags = IBV_SEND_INLINE };
	wr.wr.rdma.remote_addr = s->peer.addr + OFF_WRITE_DST + WRITE_LEN +
				 1024;
	wr.wr.rdma.rkey = s->peer.rkey;
	sge[0] = (struct ibv_sge){ .addr = (uintptr_t)inl,
				   .length = sizeof(inl) };
	expect_ret(post_one(qp, &wr, sge, 1), 0,
		   "RC: ibv_post_send RDMA WRITE, 64 B inline");
	memset(inl, 0, sizeof(inl));
	expect_send_wc(s->cq, 303, IBV_WC_RDMA_WRITE, "RC: inline RDMA WRITE");
	barrier(s, 20);
	bad = check_pattern(s->buf + OFF_WRITE_DST + WRITE_LEN + 1024,
			    sizeof(inl), 3 - s->me + 70);
	tap_ok(bad < 0, "RC: the peer's inline RDMA WRITE placed its 64 bytes (first bad byte %ld)",
	       bad);
}

static void step_read(struct side *s)
{
	struct ibv_send_wr wr = { .wr_id = 400, .opcode = IBV_WR_RDMA_READ };
	struct ibv_sge sge[2];
	long bad;

	fill(s->buf + OFF_READ_SRC, READ_LEN, s->me + 20);
	barrier(s, 3);

	sge[0] = sge_at(s, OFF_READ_DST, 5000);
	sge[1] = sge_at(s, OFF_READ_DST + 5000, READ_LEN - 5000);
	wr.wr.rdma.remote_addr = s->peer.addr + OFF_READ_SRC;
	wr.wr.rdma.rkey = s->peer.rkey;
	expect_ret(post_one(s->qp[RC_READ], &wr, sge, 2), 0,
		   "RC: ibv_post_send RDMA READ 20000 B into 2 SGEs");
	expect_send_wc(s->cq, 400, IBV_WC_RDMA_READ, "RC: RDMA READ");
	bad = check_pattern(s->buf + OFF_READ_DST, READ_LEN, 3 - s->me + 20);
	tap_ok(bad < 0, "RC: RDMA READ brought the peer's bytes (first bad byte %ld)",
	       bad);
	/* The peer must not read our READ_SRC after we move on. */
	barrier(s, 4);
}

static void step_atomic(struct side *s)
{
	uint64_t *target = (uint64_t *)(s->buf + OFF_ATOMIC);
	uint64_t *res = (uint64_t *)(s->buf + OFF_ATOMIC_RES);
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	tap_ok(s->dev.orig_attr.atomic_cap != IBV_ATOMIC_NONE,
	       "the device advertises atomics (atomic_cap %d)",
	       s->dev.orig_attr.atomic_cap);

	target[0] = 100 * s->me;
	target[1] = 1000 * s->me;
	res[0] = res[1] = ~0ULL;
	barrier(s, 5);

	wr = (struct ibv_send_wr){ .wr_id = 500,
				   .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD };
	wr.wr.atomic.remote_addr = s->peer.addr + OFF_ATOMIC;
	wr.wr.atomic.rkey = s->peer.rkey;
	wr.wr.atomic.compare_add = 5;
	sge = sge_at(s, OFF_ATOMIC_RES, 8);
	expect_ret(post_one(s->qp[RC_ATOMIC], &wr, &sge, 1), 0,
		   "RC: ibv_post_send FETCH_AND_ADD");
	expect_send_wc(s->cq, 500, IBV_WC_FETCH_ADD, "RC: FETCH_AND_ADD");
	tap_ok(res[0] == 100ULL * (3 - s->me),
	       "RC: FETCH_AND_ADD returned the old value %llu (got %llu)",
	       100ULL * (3 - s->me), (unsigned long long)res[0]);

	wr = (struct ibv_send_wr){ .wr_id = 501,
				   .opcode = IBV_WR_ATOMIC_CMP_AND_SWP };
	wr.wr.atomic.remote_addr = s->peer.addr + OFF_ATOMIC + 8;
	wr.wr.atomic.rkey = s->peer.rkey;
	wr.wr.atomic.compare_add = 1000ULL * (3 - s->me);
	wr.wr.atomic.swap = 7;
	sge = sge_at(s, OFF_ATOMIC_RES + 8, 8);
	expect_ret(post_one(s->qp[RC_ATOMIC], &wr, &sge, 1), 0,
		   "RC: ibv_post_send CMP_AND_SWP");
	expect_send_wc(s->cq, 501, IBV_WC_COMP_SWAP, "RC: CMP_AND_SWP");
	tap_ok(res[1] == 1000ULL * (3 - s->me),
	       "RC: CMP_AND_SWP returned the old value %llu (got %llu)",
	       1000ULL * (3 - s->me), (unsigned long long)res[1]);

	barrier(s, 6);
	tap_ok(target[0] == 100ULL * s->me + 5 && target[1] == 7,
	       "RC: the peer's atomics left %llu and %llu here (expected %llu and 7)",
	       (unsigned long long)target[0], (unsigned long long)target[1],
	       100ULL * s->me + 5);
}

static bool wait_async(struct side *s, enum ibv_event_type type,
		       struct ibv_async_event *ev)
{
	double deadline = now_sec() + TIMEOUT;
	struct pollfd pfd = { .fd = s->ctx->async_fd, .events = POLLIN };

	while (now_sec() < deadline) {
		if (poll(&pfd, 1, 100) != 1)
			continue;
		if (ibv_get_async_event(s->ctx, ev))
			return false;
		ibv_ack_async_event(ev);
		if (ev->event_type == type)
			return true;
		tap_diag("async event %s", ibv_event_type_str(ev->event_type));
	}
	return false;
}

static void step_srq(struct side *s)
{
	struct ibv_srq_attr sattr = { .srq_limit = 3 };
	struct ibv_async_event ev = {};
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr[6], *bad;
	struct ibv_sge rsge[6];
	uint8_t ref[4000];
	int i, ret, ok = 0;

	for (i = 0; i < 6; i++) {
		rsge[i] = sge_at(s, OFF_SRQ_RX + i * 4096, 4096);
		rwr[i] = (struct ibv_recv_wr){ .wr_id = 600 + i,
					       .sg_list = &rsge[i],
					       .num_sge = 1,
					       .next = i < 5 ? &rwr[i + 1] :
						       NULL };
	}
	expect_ret(ibv_post_srq_recv(s->srq, rwr, &bad), 0,
		   "SRQ: ibv_post_srq_recv x 6");
	expect_ret(ibv_modify_srq(s->srq, &sattr, IBV_SRQ_LIMIT), 0,
		   "SRQ: arm the limit at 3");
	fill(s->buf + OFF_SEND_TX, 4 * 1000, s->me + 30);
	barrier(s, 7);

	for (i = 0; i < 4; i++) {
		wr = (struct ibv_send_wr){ .wr_id = 610 + i,
					   .opcode = IBV_WR_SEND };
		sge = sge_at(s, OFF_SEND_TX + i * 1000, 1000);
		if (post_one(s->qp[RC_SRQ], &wr, &sge, 1))
			break;
	}
	expect_ret(i == 4 ? 0 : EINVAL, 0,
		   "SRQ: ibv_post_send 4 x 1000 B to the peer's SRQ QP");
	for (i = 0; i < 4; i++)
		expect_send_wc(s->cq2, 610 + i, IBV_WC_SEND, "SRQ: SEND");

	/* Receives are consumed in order: message i lands in WR 600 + i. */
	fill(ref, sizeof(ref), 3 - s->me + 30);
	for (i = 0; i < 4; i++) {
		struct ibv_wc wc = {};
		bool got = wait_wc(s->cq2, 600 + i, &wc);

		if (got && wc.status == IBV_WC_SUCCESS &&
		    wc.opcode == IBV_WC_RECV && wc.byte_len == 1000 &&
		    !memcmp(ref + i * 1000, s->buf + OFF_SRQ_RX + i * 4096,
			    1000))
			ok++;
		else
			tap_diag("SRQ receive %d: %s, %u bytes, data %s", i,
				 got ? ibv_wc_status_str(wc.status) :
				   "no completion", wc.byte_len,
				 got ? "compared" : "-");
	}
	tap_ok(ok == 4, "SRQ: 4 messages received in order, data intact (%d)",
	       ok);
	tap_ok(wait_async(s, IBV_EVENT_SRQ_LIMIT_REACHED, &ev) &&
	       ev.element.srq == s->srq,
	       "SRQ: IBV_EVENT_SRQ_LIMIT_REACHED once fewer than 3 are left");
	memset(&sattr, 0, sizeof(sattr));
	ret = ibv_query_srq(s->srq, &sattr);
	tap_ok(!ret && sattr.srq_limit == 0,
	       "SRQ: the limit is disarmed after the event (%u)",
	       sattr.srq_limit);
	barrier(s, 8);
}

static void step_ud(struct side *s)
{
	struct ibv_send_wr wr = { .wr_id = 700, .opcode = IBV_WR_SEND };
	uint8_t inl[100];
	struct ibv_sge sge;
	struct ibv_wc wc = {};
	long bad = 0;
	bool got;
	int ret;

	ret = post_recv_at(s, s->qp[UD], 701, OFF_UD_RX, GRH_LEN + 4096);
	if (!ret)
		ret = post_recv_at(s, s->qp[UD], 702, OFF_UD_RX + 8192,
				   GRH_LEN + 4096);
	expect_ret(ret, 0, "UD: ibv_post_recv x 2");
	fill(s->buf + OFF_UD_TX, UD_LEN, s->me + 40);
	barrier(s, 9);

	wr.wr.ud.ah = s->ah;
	wr.wr.ud.remote_qpn = s->peer.qpn[UD];
	wr.wr.ud.remote_qkey = QKEY;
	sge = sge_at(s, OFF_UD_TX, UD_LEN);
	expect_ret(post_one(s->qp[UD], &wr, &sge, 1), 0,
		   "UD: ibv_post_send 1000 B");
	expect_send_wc(s->cq, 700, IBV_WC_SEND, "UD: SEND");

	got = wait_wc(s->cq, 701, &wc);
	if (got)
		bad = check_pattern(s->buf + OFF_UD_RX + GRH_LEN, UD_LEN,
				    3 - s->me + 40);
	tap_ok(got && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
	       wc.byte_len == GRH_LEN + UD_LEN &&
	       wc.src_qp == s->peer.qpn[UD] && (wc.wc_flags & IBV_WC_GRH) &&
	       bad < 0,
	       "UD: received %u bytes from QP %u, flags 0x%x (GRH), data %s (%s)",
	       wc.byte_len, wc.src_qp, wc.wc_flags, bad < 0 ? "ok" : "corrupt",
	       got ? ibv_wc_status_str(wc.status) : "no completion");
	/* The hosts talk IPv4: a UDP-encapsulated IPv4 packet, as NICs say. */
	tap_ok(got && wc.sl == 0xa,
	       "UD: the completion's sl gives the packet type (0x%x: IPv4, UDP)",
	       got ? wc.sl : 0);
	barrier(s, 10);

	/* Inline, the data taken at posting time. */
	fill(inl, sizeof(inl), s->me + 45);
	wr.wr_id = 703;
	wr.send_flags = IBV_SEND_INLINE;
	sge = (struct ibv_sge){ .addr = (uintptr_t)inl,
				.length = sizeof(inl) };
	expect_ret(post_one(s->qp[UD], &wr, &sge, 1), 0,
		   "UD: ibv_post_send 100 B inline");
	memset(inl, 0, sizeof(inl));
	expect_send_wc(s->cq, 703, IBV_WC_SEND, "UD: inline SEND");
	memset(&wc, 0, sizeof(wc));
	bad = 0;
	got = wait_wc(s->cq, 702, &wc);
	if (got)
		bad = check_pattern(s->buf + OFF_UD_RX + 8192 + GRH_LEN,
				    sizeof(inl), 3 - s->me + 45);
	tap_ok(got && wc.status == IBV_WC_SUCCESS &&
	       wc.byte_len == GRH_LEN + sizeof(inl) && bad < 0,
	       "UD: received the peer's inline SEND, %u bytes, data %s (%s)",
	       wc.byte_len, bad < 0 ? "ok" : "corrupt",
	       got ? ibv_wc_status_str(wc.status) : "no completion");
	barrier(s, 21);
}

static void step_event(struct side *s)
{
	struct pollfd pfd = { .fd = s->ch->fd, .events = POLLIN };
	struct ibv_send_wr wr = { .wr_id = 800, .opcode = IBV_WR_SEND };
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx = NULL;
	struct ibv_sge sge;
	struct ibv_wc wc = {};
	bool got;

	expect_ret(post_recv_at(s, s->qp[RC_EVENT], 801, OFF_SEND_RX, 64), 0,
		   "events: ibv_post_recv");
	expect_ret(ibv_req_notify_cq(s->cq, 0), 0,
		   "events: ibv_req_notify_cq");
	barrier(s, 11);

	sge = sge_at(s, OFF_SEND_TX, 64);
	wr.send_flags = IBV_SEND_SOLICITED;
	expect_ret(post_one(s->qp[RC_EVENT], &wr, &sge, 1), 0,
		   "events: ibv_post_send a solicited SEND");
	tap_ok(poll(&pfd, 1, (int)(TIMEOUT * 1000)) == 1 &&
	       !ibv_get_cq_event(s->ch, &ev_cq, &ev_ctx) && ev_cq == s->cq &&
	       ev_ctx == s,
	       "events: ibv_get_cq_event reports our CQ");
	if (ev_cq)
		ibv_ack_cq_events(ev_cq, 1);
	got = wait_wc(s->cq, 801, &wc);
	tap_ok(got && wc.status == IBV_WC_SUCCESS && wc.byte_len == 64,
	       "events: ... and the receive is there (%s)",
	       got ? ibv_wc_status_str(wc.status) : "no completion");
	got = wait_wc(s->cq, 800, &wc);
	tap_ok(got && wc.status == IBV_WC_SUCCESS,
	       "events: the solicited SEND completes (%s)",
	       got ? ibv_wc_status_str(wc.status) : "no completion");
	barrier(s, 12);
}

/* One completion of the extended CQ through ibv_start_poll & co. */
struct xwc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len;
	unsigned int flags;
	__be32 imm;
	uint32_t qp_num;
};

static int poll_ex(struct ibv_cq_ex *cqx, struct xwc *out, int n)
{
	struct ibv_poll_cq_attr pa = {};
	double deadline = now_sec() + TIMEOUT;
	int got = 0, ret;

	while (got < n && now_sec() < deadline) {
		ret = ibv_start_poll(cqx, &pa);
		if (ret == ENOENT) {
			usleep(100);
			continue;
		}
		if (ret)
			return got;
		do {
			struct xwc *x = &out[got++];

			x->wr_id = cqx->wr_id;
			x->status = cqx->status;
			x->opcode = ibv_wc_read_opcode(cqx);
			x->byte_len = ibv_wc_read_byte_len(cqx);
			x->flags = ibv_wc_read_wc_flags(cqx);
			x->imm = ibv_wc_read_imm_data(cqx);
			x->qp_num = ibv_wc_read_qp_num(cqx);
		} while (got < n && !ibv_next_poll(cqx));
		ibv_end_poll(cqx);
	}
	return got;
}

static void step_wr_api(struct side *s)
{
	struct ibv_qp *qp = s->qp[RC_WR];
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);
	uint8_t inl[100], ref[100];
	struct ibv_data_buf bufs[2];
	struct xwc x[5] = {};
	int i, n, ret, sends = 0, recvs = 0;
	bool data_ok = true;

	tap_ok(qpx != NULL, "wr API: ibv_qp_to_qp_ex");
	if (!qpx)
		return;
	ret = post_recv_at(s, qp, 900, OFF_WR_RX, 4096);
	if (!ret)
		ret = post_recv_at(s, qp, 901, OFF_WR_RX + 4096, 4096);
	expect_ret(ret, 0, "wr API: ibv_post_recv x 2");
	fill(s->buf + OFF_WR_TX, 2000, s->me + 50);
	fill(inl, sizeof(inl), s->me + 60);
	memcpy(s->buf + OFF_WR_TX + 2048, inl, sizeof(inl));
	barrier(s, 13);

	ibv_wr_start(qpx);
	qpx->wr_id = 910;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, s->mr->lkey, (uintptr_t)(s->buf + OFF_WR_TX),
		       2000);
	qpx->wr_id = 911;
	ibv_wr_rdma_write(qpx, s->peer.rkey, s->peer.addr + OFF_WR_DST);
	ibv_wr_set_sge(qpx, s->mr->lkey, (uintptr_t)(s->buf + OFF_WR_TX + 2048),
		       sizeof(inl));
	qpx->wr_id = 912;
	ibv_wr_send_imm(qpx, htonl(0x5eed0000u + s->me));
	bufs[0] = (struct ibv_data_buf){ inl, 30 };
	bufs[1] = (struct ibv_data_buf){ inl + 30, 20 };
	ibv_wr_set_inline_data_list(qpx, 2, bufs);
	memset(inl, 0, sizeof(inl));	/* inline data was copied */
	expect_ret(ibv_wr_complete(qpx), 0,
		   "wr API: ibv_wr_complete of SEND, RDMA WRITE, inline SEND with immediate");

	n = poll_ex(s->cqx, x, 5);
	fill(ref, sizeof(ref), 3 - s->me + 60);
	for (i = 0; i < n; i++) {
		if (x[i].status != IBV_WC_SUCCESS) {
			tap_diag("wr API: wr_id %llu: %s",
				 (unsigned long long)x[i].wr_id,
				 ibv_wc_status_str(x[i].status));
			continue;
		}
		if (x[i].wr_id >= 910 && x[i].wr_id <= 912) {
			sends += x[i].opcode == (x[i].wr_id == 911 ?
				 IBV_WC_RDMA_WRITE : IBV_WC_SEND);
		} else if (x[i].wr_id == 900) {
			recvs += x[i].opcode == IBV_WC_RECV &&
				 x[i].byte_len == 2000 &&
				 !(x[i].flags & IBV_WC_WITH_IMM) &&
				 x[i].qp_num == qp->qp_num &&
				 check_pattern(s->buf + OFF_WR_RX, 2000,
					       3 - s->me + 50) < 0;
		} else if (x[i].wr_id == 901) {
			recvs += x[i].opcode == IBV_WC_RECV &&
				 x[i].byte_len == 50 &&
				 (x[i].flags & IBV_WC_WITH_IMM) &&
				 x[i].imm == htonl(0x5eed0000u + 3 - s->me) &&
				 !memcmp(s->buf + OFF_WR_RX + 4096, ref, 50);
		}
	}
	tap_ok(n == 5 && sends == 3 && recvs == 2,
	       "wr API: ibv_start_poll/next_poll saw 3 sends and 2 receives, correct (%d: %d, %d)",
	       n, sends, recvs);
	barrier(s, 14);
	data_ok = !memcmp(s->buf + OFF_WR_DST, ref, sizeof(ref));
	tap_ok(data_ok, "wr API: the peer's RDMA WRITE placed its 100 bytes");
}

/*
 * The client breaks the rules; the server's device must refuse and say so.
 * One side only: a responder may move its QP to the error state, which
 * would flush a request of its own in flight on the same QP.
 */
static void step_remote_error(struct side *s)
{
	struct ibv_send_wr wr = { .wr_id = 1000, .opcode = IBV_WR_RDMA_WRITE };
	struct ibv_sge sge = sge_at(s, OFF_SEND_TX, 64);
	struct ibv_wc wc = {};
	bool got;

	barrier(s, 15);
	if (s->me == 2) {
		wr.wr.rdma.remote_addr = s->peer.addr + OFF_WRITE_DST;
		wr.wr.rdma.rkey = s->peer.rkey ^ 0x5a5a5a00;
		expect_ret(post_one(s->qp[RC_ERR_KEY], &wr, &sge, 1), 0,
			   "errors: ibv_post_send RDMA WRITE with a bad rkey");
		got = wait_wc(s->cq, 1000, &wc);
		tap_ok(got && wc.status == IBV_WC_REM_ACCESS_ERR,
		       "errors: ... completes with a remote access error (%s)",
		       got ? ibv_wc_status_str(wc.status) : "no completion");

		wr.wr.rdma.rkey = s->peer.rkey;
		wr.wr.rdma.remote_addr = s->peer.addr + BUF_SIZE - 32;
		wr.wr_id = 1001;
		expect_ret(post_one(s->qp[RC_ERR_RANGE], &wr, &sge, 1), 0,
			   "errors: ibv_post_send RDMA WRITE past the end of the peer's MR");
		got = wait_wc(s->cq, 1001, &wc);
		tap_ok(got && wc.status == IBV_WC_REM_ACCESS_ERR,
		       "errors: ... completes with a remote access error (%s)",
		       got ? ibv_wc_status_str(wc.status) : "no completion");
	}
	barrier(s, 16);
	if (s->me == 1) {
		static const uint8_t zero[32];

		tap_ok(check_pattern(s->buf + OFF_WRITE_DST, WRITE_LEN,
				  3 - s->me + 10) < 0 &&
		       !memcmp(s->buf + BUF_SIZE - 32, zero, sizeof(zero)),
		       "errors: the refused WRITEs changed nothing here");
	}
}

/* --- the rules of the verbs ----------------------------------------------- */

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a = {};

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &init))
		return (enum ibv_qp_state)-1;
	return a.qp_state;
}

/*
 * Port counter @name of our device, -1 if it cannot be read. Outside the
 * initial network namespace sysfs has no hw_counters: from `rdma
 * statistic` then ("link DEV/1 name value name value ...").
 */
static long long hw_counter(struct side *s, const char *name)
{
	char path[256], word[64];
	long long v = -1;
	size_t i;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", s->name,
		 name);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
		return v;
	}
	for (i = 0; s->name[i]; i++)
		if (!isalnum((unsigned char)s->name[i]) &&
		    !strchr("_-.", s->name[i]))
			return -1;
	snprintf(path, sizeof(path),
		 "rdma statistic show link %s/1 2>/dev/null", s->name);
	f = popen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s", word) == 1) {
		if (strcmp(word, name))
			continue;
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		break;
	}
	pclose(f);
	return v;
}

/*
 * Counter @name grew past @before within 2 s (the values are cached for a
 * few milliseconds); its value then, or -1.
 */
static long long counter_grew(struct side *s, const char *name,
			      long long before)
{
	double deadline = now_sec() + 2;
	long long v;

	for (;;) {
		v = hw_counter(s, name);
		if (before >= 0 && v > before)
			return v;
		if (now_sec() > deadline)
			return -1;
		usleep(20000);
	}
}

/* An RDMA work request of @op at @raddr (rkey @rkey) from or into @sge. */
static struct ibv_send_wr rdma_wr(uint64_t wr_id, enum ibv_wr_opcode op,
				  uint64_t raddr, uint32_t rkey,
				  struct ibv_sge *sge, unsigned int flags)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = flags,
	};

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return wr;
}

/*
 * A READ and then, fenced, a WRITE of what it read: the WRITE must not
 * start before the READ's data landed. Unfenced, it would go out at once
 * with what the buffer held before (the READ takes many round trips).
 * Each side READs the peer's FENCE_SRC and WRITEs it back to the peer's
 * FENCE_DST, so each finds its own bytes in its FENCE_DST.
 */
static void step_fence(struct side *s)
{
	struct ibv_sge sge[2];
	struct ibv_send_wr wr[2], *bad;
	long badr, badw;
	bool stale;

	fill(s->buf + OFF_FENCE_SRC, FENCE_LEN, s->me + 80);
	fill(s->buf + OFF_FENCE_LOCAL, FENCE_LEN, s->me + 90);
	memset(s->buf + OFF_FENCE_DST, 0, FENCE_LEN);
	barrier(s, 30);

	sge[0] = sge_at(s, OFF_FENCE_LOCAL, FENCE_LEN);
	sge[1] = sge[0];
	wr[0] = rdma_wr(1500, IBV_WR_RDMA_READ, s->peer.addr + OFF_FENCE_SRC,
			s->peer.rkey, &sge[0], IBV_SEND_SIGNALED);
	wr[1] = rdma_wr(1501, IBV_WR_RDMA_WRITE, s->peer.addr + OFF_FENCE_DST,
			s->peer.rkey, &sge[1],
			IBV_SEND_SIGNALED | IBV_SEND_FENCE);
	wr[0].next = &wr[1];
	expect_ret(ibv_post_send(s->qp[RC_FENCE], wr, &bad), 0,
		   "fence: ibv_post_send RDMA READ 512 KiB, then a fenced RDMA WRITE of the same buffer");
	expect_send_wc(s->cq, 1500, IBV_WC_RDMA_READ, "fence: RDMA READ");
	expect_send_wc(s->cq, 1501, IBV_WC_RDMA_WRITE,
		       "fence: fenced RDMA WRITE");
	badr = check_pattern(s->buf + OFF_FENCE_LOCAL, FENCE_LEN,
			     3 - s->me + 80);
	tap_ok(badr < 0, "fence: the READ brought the peer's bytes (first bad byte %ld)",
	       badr);
	barrier(s, 31);

	badw = check_pattern(s->buf + OFF_FENCE_DST, FENCE_LEN, s->me + 80);
	stale = badw >= 0 && s->buf[OFF_FENCE_DST + badw] ==
			     pattern_byte(3 - s->me + 90, badw);
	tap_ok(badw < 0,
	       "fence: the peer's fenced WRITE carried what its READ had brought (first bad byte %ld%s)",
	       badw, stale ? ", from the stale buffer" : "");
	barrier(s, 32);
}

/*
 * RD1_NUM READs posted at once on a QP with max_rd_atomic and
 * max_dest_rd_atomic 1. The peer's responder refuses a READ that comes
 * while it still sends an older one's response (IBV_WC_REM_INV_REQ_ERR
 * here), so a requester that let a second one out early would fail.
 */
static void step_rd_atomic(struct side *s)
{
	struct ibv_qp *qp = s->qp[RC_RD1];
	struct ibv_send_wr wr[RD1_NUM], *bad;
	struct ibv_sge sge[RD1_NUM];
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a = {};
	int i, ret, ok = 0;
	long badb;

	ret = ibv_query_qp(qp, &a, IBV_QP_MAX_QP_RD_ATOMIC |
			   IBV_QP_MAX_DEST_RD_ATOMIC, &init);
	tap_ok(!ret && a.max_rd_atomic == 1 && a.max_dest_rd_atomic == 1,
	       "rd_atomic: the QP has max_rd_atomic %u, max_dest_rd_atomic %u (expected 1, 1)",
	       a.max_rd_atomic, a.max_dest_rd_atomic);
	fill(s->buf + OFF_RD1_SRC, RD1_NUM * RD1_LEN, s->me + 110);
	memset(s->buf + OFF_RD1_DST, 0xee, RD1_NUM * RD1_LEN);
	barrier(s, 33);

	for (i = 0; i < RD1_NUM; i++) {
		sge[i] = sge_at(s, OFF_RD1_DST + i * RD1_LEN, RD1_LEN);
		wr[i] = rdma_wr(1600 + i, IBV_WR_RDMA_READ,
				s->peer.addr + OFF_RD1_SRC + i * RD1_LEN,
				s->peer.rkey, &sge[i], IBV_SEND_SIGNALED);
		wr[i].next = i + 1 < RD1_NUM ? &wr[i + 1] : NULL;
	}
	expect_ret(ibv_post_send(qp, wr, &bad), 0,
		   "rd_atomic: ibv_post_send 32 RDMA READs of 16 KiB at once");
	for (i = 0; i < RD1_NUM; i++) {
		struct ibv_wc wc = {};
		bool got = wait_wc(s->cq, 1600 + i, &wc);

		if (got && wc.status == IBV_WC_SUCCESS &&
		    wc.opcode == IBV_WC_RDMA_READ)
			ok++;
		else
			tap_diag("rd_atomic: READ %d: %s", i,
				 got ? ibv_wc_status_str(wc.status) :
				   "no completion");
	}
	tap_ok(ok == RD1_NUM, "rd_atomic: all 32 READs complete (%d)", ok);
	badb = check_pattern(s->buf + OFF_RD1_DST, RD1_NUM * RD1_LEN,
			     3 - s->me + 110);
	tap_ok(badb < 0, "rd_atomic: the 32 READs brought the peer's 512 KiB (first bad byte %ld)",
	       badb);
	barrier(s, 34);
}

/*
 * UNSIG_ROUNDS rounds of a full send queue of WRITEs, only the last of
 * each signaled: one completion per round, and the slots of the silent
 * ones free for the next (four times the queue's depth in all).
 */
static void step_unsignaled(struct side *s)
{
	struct ibv_qp *qp = s->qp[RC_UNSIG];
	struct ibv_send_wr wr[UNSIG_SQ], *bad;
	struct ibv_sge sge[UNSIG_SQ];
	struct ibv_wc wc[UNSIG_MAX_WC];
	struct ibv_qp_init_attr init = {};
	struct ibv_qp_attr a;
	int r, i, n = 0, got, ret = 0, ok = 0;
	double deadline;
	long badb;

	tap_ok(!ibv_query_qp(qp, &a, IBV_QP_CAP, &init) && !init.sq_sig_all,
	       "unsignaled: the QP signals only the work requests that ask (sq_sig_all %d)",
	       init.sq_sig_all);
	fill(s->buf + OFF_UNSIG_SRC, UNSIG_ROUNDS * UNSIG_SQ * UNSIG_LEN,
	     s->me + 120);
	memset(s->buf + OFF_UNSIG_DST, 0, UNSIG_ROUNDS * UNSIG_SQ * UNSIG_LEN);
	barrier(s, 35);

	for (r = 0; r < UNSIG_ROUNDS && !ret; r++) {
		for (i = 0; i < UNSIG_SQ; i++) {
			size_t off = (r * UNSIG_SQ + i) * UNSIG_LEN;

			sge[i] = sge_at(s, OFF_UNSIG_SRC + off, UNSIG_LEN);
			wr[i] = rdma_wr(1700 + r * UNSIG_SQ + i,
					IBV_WR_RDMA_WRITE,
					s->peer.addr + OFF_UNSIG_DST + off,
					s->peer.rkey, &sge[i],
					i == UNSIG_SQ - 1 ? IBV_SEND_SIGNALED :
							    0);
			wr[i].next = i + 1 < UNSIG_SQ ? &wr[i + 1] : NULL;
		}
		ret = ibv_post_send(qp, wr, &bad);
		if (ret)
			break;
		/* This round's completion, before the queue is posted again. */
		got = poll_n(s->cq_unsig, wc + n, 1, TIMEOUT);
		if (got < 1)
			break;
		n++;
	}
	expect_ret(ret, 0,
		   "unsignaled: ibv_post_send 4 x (15 unsignaled RDMA WRITEs and a signaled one) on a 16-deep send queue");
	/* Nothing else may come. */
	deadline = now_sec() + 0.2;
	while (now_sec() < deadline && n < UNSIG_MAX_WC) {
		got = ibv_poll_cq(s->cq_unsig, 1, wc + n);
		if (got > 0)
			n++;
		else
			usleep(1000);
	}
	for (i = 0; i < n; i++) {
		if (i < UNSIG_ROUNDS && wc[i].status == IBV_WC_SUCCESS &&
		    wc[i].opcode == IBV_WC_RDMA_WRITE &&
		    wc[i].wr_id == 1700 + (uint64_t)i * UNSIG_SQ + UNSIG_SQ - 1)
			ok++;
		else
			tap_diag("unsignaled: completion %d: wr_id %llu, %s", i,
				 (unsigned long long)wc[i].wr_id,
				 ibv_wc_status_str(wc[i].status));
	}
	tap_ok(n == UNSIG_ROUNDS && ok == UNSIG_ROUNDS,
	       "unsignaled: exactly the 4 signaled WRITEs completed (%d completions, %d of them right)",
	       n, ok);
	barrier(s, 36);
	badb = check_pattern(s->buf + OFF_UNSIG_DST,
			     UNSIG_ROUNDS * UNSIG_SQ * UNSIG_LEN,
			     3 - s->me + 120);
	tap_ok(badb < 0, "unsignaled: the peer's 64 WRITEs all landed (first bad byte %ld)",
	       badb);
}

/*
 * A CQ armed for solicited completions: the peer's plain SEND completes a
 * receive but raises no event; its solicited SEND does.
 */
static void step_solicited(struct side *s)
{
	struct pollfd pfd = { .fd = s->ch_sol->fd, .events = POLLIN };
	struct ibv_qp *qp = s->qp[RC_SOLICIT];
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND };
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx = NULL;
	struct ibv_sge sge;
	struct ibv_wc wc = {};
	uint8_t ref[2000];
	int ret, ev;
	bool got;

	ret = post_recv_at(s, qp, 1800, OFF_MISC_RX, 4096);
	if (!ret)
		ret = post_recv_at(s, qp, 1801, OFF_MISC_RX + 4096, 4096);
	expect_ret(ret, 0, "solicited: ibv_post_recv x 2");
	expect_ret(ibv_req_notify_cq(s->cq_sol, 1), 0,
		   "solicited: ibv_req_notify_cq for solicited completions only");
	fill(s->buf + OFF_SEND_TX, 2 * 1000, s->me + 130);
	barrier(s, 37);

	wr.wr_id = 1810;
	sge = sge_at(s, OFF_SEND_TX, 1000);
	expect_ret(post_one(qp, &wr, &sge, 1), 0,
		   "solicited: ibv_post_send a SEND without IBV_SEND_SOLICITED");
	expect_send_wc(s->cq2, 1810, IBV_WC_SEND, "solicited: plain SEND");
	/* The peer's SEND completed too: its receive is in our CQ. */
	barrier(s, 38);
	ev = poll(&pfd, 1, SOL_QUIET_MS);
	tap_ok(ev == 0, "solicited: no completion event within %d ms of the peer's plain SEND (poll %d)",
	       SOL_QUIET_MS, ev);
	got = wait_wc(s->cq_sol, 1800, &wc);
	tap_ok(got && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
	       wc.byte_len == 1000 &&
	       check_pattern(s->buf + OFF_MISC_RX, 1000, 3 - s->me + 130) < 0,
	       "solicited: ... though its receive completed (%s, %u bytes)",
	       got ? ibv_wc_status_str(wc.status) : "no completion",
	       wc.byte_len);
	if (ev == 1 && !ibv_get_cq_event(s->ch_sol, &ev_cq, &ev_ctx))
		ibv_ack_cq_events(ev_cq, 1);
	barrier(s, 39);

	wr = (struct ibv_send_wr){ .wr_id = 1811, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SOLICITED };
	sge = sge_at(s, OFF_SEND_TX + 1000, 1000);
	expect_ret(post_one(qp, &wr, &sge, 1), 0,
		   "solicited: ibv_post_send a SEND with IBV_SEND_SOLICITED");
	ev_cq = NULL;
	tap_ok(poll(&pfd, 1, (int)(TIMEOUT * 1000)) == 1 &&
	       !ibv_get_cq_event(s->ch_sol, &ev_cq, &ev_ctx) &&
	       ev_cq == s->cq_sol && ev_ctx == s,
	       "solicited: the peer's solicited SEND raises the event");
	if (ev_cq)
		ibv_ack_cq_events(ev_cq, 1);
	memset(&wc, 0, sizeof(wc));
	got = wait_wc(s->cq_sol, 1801, &wc);
	fill(ref, sizeof(ref), 3 - s->me + 130);
	tap_ok(got && wc.status == IBV_WC_SUCCESS && wc.byte_len == 1000 &&
	       !memcmp(s->buf + OFF_MISC_RX + 4096, ref + 1000, 1000),
	       "solicited: ... and its receive is there (%s, %u bytes)",
	       got ? ibv_wc_status_str(wc.status) : "no completion",
	       wc.byte_len);
	expect_send_wc(s->cq2, 1811, IBV_WC_SEND, "solicited: solicited SEND");
	barrier(s, 40);
}

/*
 * RNR, the client the requester: a SEND to a QP with no receive posted
 * fails at the first RNR NAK with rnr_retry 0, the QP goes to the error
 * state and flushes the rest, before and after; the responder's QP is not
 * hurt. With rnr_retry 7 the SEND waits until the receive is posted.
 */
static void step_rnr(struct side *s)
{
	struct ibv_send_wr wr[2], *bad;
	struct ibv_sge sge[2];
	struct ibv_wc wc = {};
	long long before, v;
	enum ibv_qp_state st;
	const char *counter = s->me == 1 ? "rnr_naks_tx" : "rnr_naks_rx";
	bool got;

	before = hw_counter(s, counter);
	fill(s->buf + OFF_SEND_TX, 3000, s->me + 140);
	barrier(s, 50);
	if (s->me == 2) {
		struct ibv_qp *qp = s->qp[RC_RNR];

		sge[0] = sge_at(s, OFF_SEND_TX, 100);
		sge[1] = sge_at(s, OFF_SEND_TX + 100, 100);
		wr[0] = (struct ibv_send_wr){ .wr_id = 1900, .sg_list = &sge[0],
					      .num_sge = 1, .next = &wr[1],
					      .opcode = IBV_WR_SEND,
					      .send_flags = IBV_SEND_SIGNALED };
		wr[1] = wr[0];
		wr[1].wr_id = 1901;
		wr[1].sg_list = &sge[1];
		wr[1].next = NULL;
		expect_ret(ibv_post_send(qp, wr, &bad), 0,
			   "rnr: ibv_post_send 2 SENDs to a QP with no receive posted, rnr_retry 0");
		got = wait_wc(s->cq, 1900, &wc);
		tap_ok(got && wc.status == IBV_WC_RNR_RETRY_EXC_ERR,
		       "rnr: the first completes with an RNR retry exceeded error (%s)",
		       got ? ibv_wc_status_str(wc.status) : "no completion");
		got = wait_wc(s->cq, 1901, &wc);
		tap_ok(got && wc.status == IBV_WC_WR_FLUSH_ERR,
		       "rnr: ... the second is flushed (%s)",
		       got ? ibv_wc_status_str(wc.status) : "no completion");
		st = qp_state(qp);
		tap_ok(st == IBV_QPS_ERR, "rnr: the QP is in the error state (%d)",
		       st);
		wr[0].wr_id = 1902;
		wr[0].next = NULL;
		expect_ret(ibv_post_send(qp, wr, &bad), 0,
			   "rnr: ibv_post_send a SEND on the QP in error");
		got = wait_wc(s->cq, 1902, &wc);
		tap_ok(got && wc.status == IBV_WC_WR_FLUSH_ERR,
		       "rnr: ... it is flushed (%s)",
		       got ? ibv_wc_status_str(wc.status) : "no completion");
	}
	barrier(s, 51);
	v = counter_grew(s, counter, before);
	tap_ok(v >= 0, "rnr: %s counted the RNR NAK (%lld before, %lld after)",
	       counter, before, v);
	if (s->me == 1) {
		st = qp_state(s->qp[RC_RNR]);
		tap_ok(st == IBV_QPS_RTS,
		       "rnr: the responder's QP stays ready to send (%d)", st);
	}

	/* The receive comes RNR_DELAY_US after the SEND. */
	before = hw_counter(s, counter);
	barrier(s, 52);
	if (s->me == 2) {
		double t0 = now_sec(), waited;

		wr[0] = (struct ibv_send_wr){ .wr_id = 1910,
					      .opcode = IBV_WR_SEND };
		sge[0] = sge_at(s, OFF_SEND_TX, 3000);
		expect_ret(post_one(s->qp[RC_RNR_WAIT], &wr[0], &sge[0], 1), 0,
			   "rnr: ibv_post_send a 3000 B SEND to a QP with no receive posted, rnr_retry 7");
		memset(&wc, 0, sizeof(wc));
		got = wait_wc(s->cq, 1910, &wc);
		waited = now_sec() - t0;
		tap_ok(got && wc.status == IBV_WC_SUCCESS &&
		       wc.opcode == IBV_WC_SEND,
		       "rnr: ... it completes once the receive is posted (%s)",
		       got ? ibv_wc_status_str(wc.status) : "no completion");
		tap_ok(waited >= RNR_DELAY_US / 2 / 1e6,
		       "rnr: ... after waiting for it (%.0f ms, the receive came after %d ms)",
		       waited * 1000, RNR_DELAY_US / 1000);
	} else {
		usleep(RNR_DELAY_US);
		expect_ret(post_recv_at(s, s->qp[RC_RNR_WAIT], 1911, OFF_MISC_RX,
					4096), 0,
			   "rnr: ibv_post_recv 150 ms after the peer's SEND");
		memset(&wc, 0, sizeof(wc));
		got = wait_wc(s->cq, 1911, &wc);
		tap_ok(got && wc.status == IBV_WC_SUCCESS && wc.byte_len == 3000 &&
		       check_pattern(s->buf + OFF_MISC_RX, 3000,
				  3 - s->me + 140) < 0,
		       "rnr: the SEND lands in the late receive (%s, %u bytes)",
		       got ? ibv_wc_status_str(wc.status) : "no completion",
		       wc.byte_len);
	}
	barrier(s, 53);
	v = counter_grew(s, counter, before);
	tap_ok(v >= 0, "rnr: %s counted RNR NAKs while the SEND waited (%lld before, %lld after)",
	       counter, before, v);
}

static bool qp_event(enum ibv_event_type type)
{
	switch (type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return true;
	default:
		return false;
	}
}

/*
 * The first async event of each of the @n QPs @qp (in @type, -1 for none)
 * within @timeout seconds; events of other QPs are skipped.
 */
static void qp_events(struct side *s, struct ibv_qp *const *qp, int n,
		      int *type, double timeout)
{
	double deadline = now_sec() + timeout;
	struct pollfd pfd = { .fd = s->ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int i, left = n;

	for (i = 0; i < n; i++)
		type[i] = -1;
	while (left && now_sec() < deadline) {
		if (poll(&pfd, 1, 100) != 1)
			continue;
		if (ibv_get_async_event(s->ctx, &ev))
			return;
		ibv_ack_async_event(&ev);
		for (i = 0; i < n && qp_event(ev.event_type); i++) {
			if (ev.element.qp != qp[i] || type[i] >= 0)
				continue;
			type[i] = ev.event_type;
			left--;
		}
	}
}

/*
 * The client, with a valid rkey of each of the server's three MRs, does
 * what that MR does not allow (after something it does, which must
 * work): remote access errors, nothing changed on either side; the
 * server's QPs go to the error state with a local access violation event.
 * That event is the responder's: the requester learns of the error from
 * its completion and gets none.
 */
static void step_access(struct side *s)
{
	static const char *const what[NUM_ACC] = {
		[ACC_NO_WRITE] = "RDMA WRITE to the MR without remote write",
		[ACC_NO_READ] = "RDMA READ from the MR without remote read",
		[ACC_NO_ATOMIC] = "FETCH_AND_ADD on the MR without remote atomic",
	};
	static const char *const allowed[NUM_ACC] = {
		[ACC_NO_WRITE] = "RDMA READ from the MR without remote write",
		[ACC_NO_READ] = "FETCH_AND_ADD 0 on the MR without remote read",
		[ACC_NO_ATOMIC] = "RDMA READ from the MR without remote atomic",
	};
	char msg[128];
	static const int qpi[NUM_ACC] = { RC_ACC_WRITE, RC_ACC_READ,
					  RC_ACC_ATOMIC };
	uint64_t *res = (uint64_t *)(s->buf + OFF_ACC_LOCAL + 1024);
	uint8_t *local = s->buf + OFF_ACC_LOCAL;
	struct ibv_qp *qps[NUM_ACC];
	uint8_t ref[ACC_LEN];
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	int i, type[NUM_ACC];
	bool got;

	barrier(s, 55);
	for (i = 0; i < NUM_ACC && s->me == 2; i++) {
		struct ibv_qp *qp = s->qp[qpi[i]];
		uint64_t addr = s->peer.acc_addr[i];
		uint32_t rkey = s->peer.acc_rkey[i];

		fill(ref, sizeof(ref), 1 + 100 + i);
		/* What the MR allows: a READ, or an atomic adding 0. */
		memset(local, 0xee, 256);
		*res = ~0ULL;
		if (i == ACC_NO_READ) {
			sge = sge_at(s, OFF_ACC_LOCAL + 1024, 8);
			wr = (struct ibv_send_wr){
				.wr_id = 2000 + 10 * i,
				.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD };
			wr.wr.atomic.remote_addr = addr + 2048;
			wr.wr.atomic.rkey = rkey;
			wr.wr.atomic.compare_add = 0;
		} else {
			sge = sge_at(s, OFF_ACC_LOCAL, 256);
			wr = rdma_wr(2000 + 10 * i, IBV_WR_RDMA_READ, addr,
				     rkey, &sge, 0);
		}
		snprintf(msg, sizeof(msg), "access: ibv_post_send %s",
			 allowed[i]);
		expect_ret(post_one(qp, &wr, &sge, 1), 0, msg);
		memset(&wc, 0, sizeof(wc));
		got = wait_wc(s->cq, 2000 + 10 * i, &wc);
		tap_ok(got && wc.status == IBV_WC_SUCCESS &&
		       (i == ACC_NO_READ ? !memcmp(res, ref + 2048, 8) :
					!memcmp(local, ref, 256)),
		       "access: ... the rkey works for what the MR allows (%s)",
		       got ? ibv_wc_status_str(wc.status) : "no completion");

		/* And what it does not. */
		memset(local, 0xee, 256);
		*res = ~0ULL;
		if (i == ACC_NO_ATOMIC) {
			sge = sge_at(s, OFF_ACC_LOCAL + 1024, 8);
			wr = (struct ibv_send_wr){
				.wr_id = 2001 + 10 * i,
				.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD };
			wr.wr.atomic.remote_addr = addr;
			wr.wr.atomic.rkey = rkey;
			wr.wr.atomic.compare_add = 1;
		} else {
			sge = sge_at(s, i == ACC_NO_READ ? OFF_ACC_LOCAL :
						      OFF_SEND_TX, 256);
			wr = rdma_wr(2001 + 10 * i, i == ACC_NO_READ ?
				     IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
				     addr, rkey, &sge, 0);
		}
		snprintf(msg, sizeof(msg), "access: ibv_post_send %s", what[i]);
		expect_ret(post_one(qp, &wr, &sge, 1), 0, msg);
		memset(&wc, 0, sizeof(wc));
		got = wait_wc(s->cq, 2001 + 10 * i, &wc);
		tap_ok(got && wc.status == IBV_WC_REM_ACCESS_ERR,
		       "access: ... completes with a remote access error (%s)",
		       got ? ibv_wc_status_str(wc.status) : "no completion");
		if (i == ACC_NO_READ) {
			int j = 0;

			while (j < 256 && local[j] == 0xee)
				j++;
			tap_ok(j == 256,
			       "access: ... and brought nothing here (first changed byte %d)",
			       j < 256 ? j : -1);
		} else if (i == ACC_NO_ATOMIC) {
			tap_ok(*res == ~0ULL,
			       "access: ... and returned nothing here (0x%llx)",
			       (unsigned long long)*res);
		}
	}
	for (i = 0; i < NUM_ACC; i++)
		qps[i] = s->qp[qpi[i]];
	if (s->me == 2) {
		qp_events(s, qps, NUM_ACC, type, 0.3);
		tap_ok(type[0] < 0 && type[1] < 0 && type[2] < 0,
		       "access: no async event for the requester's QPs (%s, %s, %s)",
		       type[0] < 0 ? "none" : ibv_event_type_str(type[0]),
		       type[1] < 0 ? "none" : ibv_event_type_str(type[1]),
		       type[2] < 0 ? "none" : ibv_event_type_str(type[2]));
	}
	barrier(s, 56);
	if (s->me != 1)
		return;
	qp_events(s, qps, NUM_ACC, type, TIMEOUT);
	for (i = 0; i < NUM_ACC; i++) {
		long badb = check_pattern(s->acc_buf[i], ACC_LEN,
					  s->me + 100 + i);
		enum ibv_qp_state st;

		tap_ok(badb < 0, "access: the refused %s changed nothing (first bad byte %ld)",
		       what[i], badb);
		tap_ok(type[i] == IBV_EVENT_QP_ACCESS_ERR,
		       "access: ... and gave its QP here a local access violation event (%s)",
		       type[i] >= 0 ? ibv_event_type_str(type[i]) : "none");
		st = qp_state(qps[i]);
		tap_ok(st == IBV_QPS_ERR,
		       "access: ... and the error state (%d)", st);
	}
}

/*
 * The SRQ step's QP, moved to the error state with receives left in the
 * SRQ (two of the six): it gets IBV_EVENT_QP_LAST_WQE_REACHED, and the
 * receives stay in the SRQ, uncompleted.
 */
static void step_srq_error(struct side *s)
{
	struct ibv_qp *qp = s->qp[RC_SRQ];
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_qp *qps[1] = { qp };
	struct ibv_wc wc;
	int type[1], n;

	barrier(s, 40);
	expect_ret(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0,
		   "SRQ: the SRQ's QP to the error state");
	qp_events(s, qps, 1, type, TIMEOUT);
	tap_ok(type[0] == IBV_EVENT_QP_LAST_WQE_REACHED,
	       "SRQ: ... IBV_EVENT_QP_LAST_WQE_REACHED for it (%s)",
	       type[0] >= 0 ? ibv_event_type_str(type[0]) : "none");
	usleep(100000);
	n = ibv_poll_cq(s->cq2, 1, &wc);
	tap_ok(n == 0, "SRQ: the receives it never took stay in the SRQ (%d completed)",
	       n);
	barrier(s, 41);
}

/*
 * The client: a CQ of 4 and 8 signaled WRITEs that nobody polls: the 5th
 * completion does not fit, the CQ gets IBV_EVENT_CQ_ERR and the QP fails
 * (as the verbs say: no completion is lost in silence); the 4 that fit are there,
 * successful, and a work request posted after them is flushed.
 */
static void step_cq_overflow(struct side *s)
{
	struct ibv_qp *qp = s->qp[RC_CQ_OVF];
	struct ibv_async_event ev = {};
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc[CQ_OVF_WRS];
	int i, n, ok = 0, posted = 0;
	double deadline;
	bool got;

	barrier(s, 42);
	/*
	 * One side only: its QP fails, and the other side's WRITEs still in
	 * flight to it would then fail too (a QP in error answers nothing),
	 * which is right but not what this step checks.
	 */
	if (s->me != 2) {
		barrier(s, 43);
		return;
	}
	for (i = 0; i < CQ_OVF_WRS; i++) {
		wr = (struct ibv_send_wr){ .wr_id = 2000 + i,
					   .opcode = IBV_WR_RDMA_WRITE };
		wr.wr.rdma.remote_addr = s->peer.addr + OFF_UNSIG_DST + i * 64;
		wr.wr.rdma.rkey = s->peer.rkey;
		sge = sge_at(s, OFF_UNSIG_SRC + i * 64, 64);
		posted += !post_one(qp, &wr, &sge, 1);
	}
	tap_ok(posted == CQ_OVF_WRS, "cq overflow: %d signaled WRITEs posted (%d)",
	       CQ_OVF_WRS, posted);
	got = wait_async(s, IBV_EVENT_CQ_ERR, &ev);
	tap_ok(got && ev.element.cq == s->cq_ovf,
	       "cq overflow: IBV_EVENT_CQ_ERR on the CQ of %d", CQ_OVF_CQE);
	deadline = now_sec() + TIMEOUT;
	while (qp_state(qp) != IBV_QPS_ERR && now_sec() < deadline)
		usleep(1000);
	tap_ok(qp_state(qp) == IBV_QPS_ERR,
	       "cq overflow: the QP whose completion was lost is in the error state (%d)",
	       qp_state(qp));
	/* Its flushed work requests find the CQ full as well. */
	usleep(100000);
	n = ibv_poll_cq(s->cq_ovf, CQ_OVF_WRS, wc);
	for (i = 0; i < n; i++)
		ok += wc[i].status == IBV_WC_SUCCESS &&
		      wc[i].wr_id == 2000u + i;
	tap_ok(n == CQ_OVF_CQE && ok == CQ_OVF_CQE,
	       "cq overflow: the %d completions that fit, successful, in order (%d, %d ok)",
	       CQ_OVF_CQE, n, ok);
	if (ok != CQ_OVF_CQE)
		for (i = 0; i < n; i++)
			printf("# cq overflow: completion %d: wr_id %llu, %s\n", i,
			       (unsigned long long)wc[i].wr_id,
			       ibv_wc_status_str(wc[i].status));
	wr = (struct ibv_send_wr){ .wr_id = 2100,
				   .opcode = IBV_WR_RDMA_WRITE };
	wr.wr.rdma.remote_addr = s->peer.addr + OFF_UNSIG_DST;
	wr.wr.rdma.rkey = s->peer.rkey;
	sge = sge_at(s, OFF_UNSIG_SRC, 64);
	post_one(qp, &wr, &sge, 1);
	got = wait_wc(s->cq_ovf, 2100, &wc[0]);
	tap_ok(got && wc[0].status == IBV_WC_WR_FLUSH_ERR,
	       "cq overflow: a WRITE posted then is flushed (%s)",
	       got ? ibv_wc_status_str(wc[0].status) : "no completion");
	barrier(s, 43);
}

static void teardown(struct side *s)
{
	int i, ret = 0;

	ret |= ibv_destroy_ah(s->ah);
	for (i = 0; i < NUM_QPS; i++)
		ret |= ibv_destroy_qp(s->qp[i]);
	ret |= ibv_destroy_srq(s->srq);
	ret |= ibv_destroy_cq(s->cq);
	ret |= ibv_destroy_cq(s->cq2);
	ret |= ibv_destroy_cq(ibv_cq_ex_to_cq(s->cqx));
	ret |= ibv_destroy_cq(s->cq_sol);
	ret |= ibv_destroy_cq(s->cq_unsig);
	ret |= ibv_destroy_cq(s->cq_ovf);
	ret |= ibv_destroy_comp_channel(s->ch);
	ret |= ibv_destroy_comp_channel(s->ch_sol);
	for (i = 0; i < NUM_ACC; i++) {
		ret |= ibv_dereg_mr(s->acc_mr[i]);
		free(s->acc_buf[i]);
	}
	ret |= ibv_dereg_mr(s->mr);
	ret |= ibv_dealloc_pd(s->pd);
	ret |= ibv_close_device(s->ctx);
	tap_ok(!ret, "every object destroyed");
}

int main(int argc, char **argv)
{
	struct side s = {};

	tap_start();
	if (argc == 4 && !strcmp(argv[1], "server")) {
		s.me = 1;
		setup(&s, argv[2]);
		s.sock = tcp_server((uint16_t)atoi(argv[3]));
	} else if (argc == 5 && !strcmp(argv[1], "client")) {
		s.me = 2;
		setup(&s, argv[2]);
		s.sock = tcp_client(argv[3], (uint16_t)atoi(argv[4]));
	} else {
		fprintf(stderr,
			"usage: %s server DEVICE PORT\n       %s client DEVICE SERVER PORT\n",
			argv[0], argv[0]);
		return 2;
	}

	exchange(&s);
	connect_all(&s);
	barrier(&s, 0);

	step_send(&s);
	step_write(&s);
	step_read(&s);
	step_atomic(&s);
	step_srq(&s);
	step_ud(&s);
	step_event(&s);
	step_wr_api(&s);
	step_remote_error(&s);
	step_fence(&s);
	step_rd_atomic(&s);
	step_unsignaled(&s);
	step_solicited(&s);
	step_rnr(&s);
	step_access(&s);
	step_srq_error(&s);
	step_cq_overflow(&s);
	teardown(&s);
	close(s.sock);
	free(s.buf);
	return tap_done();
}
