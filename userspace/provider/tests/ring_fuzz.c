// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ring_fuzz: a process that scribbles on its own shared rings while its
 * QPs carry traffic (prints TAP):
 *
 *   ring_fuzz DEVICE_A DEVICE_B SECONDS [SEED]
 *
 * One RC QP pair between the two devices (both visible to this process)
 * streams RDMA WRITEs from A to B, and B sends to A now and then;
 * meanwhile, on A's side, the process writes random work requests and
 * random indices into the QP's send and receive rings, random consumer
 * indices into its CQ's ring, and rings the doorbells, as a
 * buggy or malicious program could. Every 200 rounds the pair is reset and
 * connected again, so that the scribbles meet a QP in RTS as well as one
 * the first bad work request put in the error state. The kernel must take it all without a
 * warning, a hang or a write outside this process's registered memory:
 * the harness runs a real transfer of another process alongside and checks
 * it byte for byte, and the VM runner fails on any kernel warning.
 *
 * What this program asserts: every verb it calls afterwards still answers
 * (the QPs can be moved to ERR and destroyed, the CQs destroyed, the
 * device closed), B's buffer outside the region A may write is untouched,
 * and a second QP pair of this process, whose rings are left alone,
 * carries data correctly after the scribbling.
 */
#include <stdint.h>
#include <unistd.h>

#include "libmetaroce.h"
#include "verbs_conn.h"

#define BUF_SIZE (1 << 20)
#define WIN_OFF (256 << 10)	/* A may write B's buffer here ... */
#define WIN_LEN (256 << 10)	/* ... and only here */
#define MSG 4096

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid;
	int gid_index;
	enum ibv_mtu mtu;
};

struct pair {
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *qa, *qb;
};

static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void open_side(struct side *s, const char *name)
{
	struct ibv_port_attr port;

	s->ctx = open_device_gid(name, &s->gid, &s->gid_index);
	if (ibv_query_port(s->ctx, 1, &port))
		tap_bail("cannot query %s", name);
	s->mtu = port.active_mtu;
	s->pd = ibv_alloc_pd(s->ctx);
	s->buf = aligned_alloc(4096, BUF_SIZE);
	if (!s->pd || !s->buf)
		tap_bail("no PD or memory");
	memset(s->buf, 0x5a, BUF_SIZE);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE);
	if (!s->mr)
		tap_bail("ibv_reg_mr: %s", errname(errno));
}

static int connect_qp(struct ibv_qp *qp, const struct side *local,
		      const struct side *remote, uint32_t dest_qpn)
{
	const struct rc_path p = {
		.mtu = local->mtu,
		.sgid_index = local->gid_index,
		.dgid = remote->gid,
		.dest_qpn = dest_qpn,
		.access = IBV_ACCESS_REMOTE_WRITE,
		.rd_atomic = 1,
		.timeout = 10,
		.retry_cnt = 3,
		.rnr_retry = 3,
		.min_rnr_timer = 12,
	};

	return rc_connect(qp, &p);
}

static void make_pair(struct pair *p, struct side *a, struct side *b)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { 64, 16, 4, 1, 64 },
	};

	p->cqa = ibv_create_cq(a->ctx, 256, NULL, NULL, 0);
	p->cqb = ibv_create_cq(b->ctx, 256, NULL, NULL, 0);
	if (!p->cqa || !p->cqb)
		tap_bail("ibv_create_cq: %s", errname(errno));
	ia.send_cq = ia.recv_cq = p->cqa;
	p->qa = ibv_create_qp(a->pd, &ia);
	ia.send_cq = ia.recv_cq = p->cqb;
	p->qb = ibv_create_qp(b->pd, &ia);
	if (!p->qa || !p->qb)
		tap_bail("ibv_create_qp: %s", errname(errno));
	if (connect_qp(p->qa, a, b, p->qb->qp_num) ||
	    connect_qp(p->qb, b, a, p->qa->qp_num))
		tap_bail("cannot connect the QPs: %s", errname(errno));
}

static int post_write(struct pair *p, struct side *a, struct side *b,
		      size_t src, size_t dst, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)a->buf + src, MSG, a->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {
			.remote_addr = (uintptr_t)b->buf + dst,
			.rkey = b->mr->rkey,
		},
	}, *bad;

	return ibv_post_send(p->qa, &wr, &bad);
}

/* A SEND from B to A, whose receive ring is scribbled on. */
static int post_send_to_a(struct pair *p, struct side *b, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)b->buf, MSG, b->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	return ibv_post_send(p->qb, &wr, &bad);
}

/* A receive into A's own memory, posted properly. */
static int post_recv_a(struct pair *p, struct side *a)
{
	struct ibv_sge sge = {
		(uintptr_t)a->buf + (rnd() % 16) * MSG, MSG, a->mr->lkey
	};
	struct ibv_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(p->qa, &wr, &bad);
}

/*
 * One scribble on QP @q's send or receive ring or CQ @cq's ring: random
 * slots, random indices, the doorbell. Only addresses inside B's window are
 * written with B's rkey, and receives name A's own memory (or beyond its
 * end, which the kernel must refuse); everything else is random, so the
 * kernel refuses it.
 */
static void scribble(struct mrv_qp *q, struct mrv_cq *cq, const struct side *a,
		     const struct side *b, unsigned int *doorbells)
{
	struct ibv_send_wr *bad = NULL;
	struct ibv_recv_wr *rbad = NULL;
	struct mrv_rq *r = &q->rq;
	uint32_t idx, i;
	uint8_t *slot;

	switch (rnd() % 8) {
	case 0:	/* random bytes in a few slots, then publish them */
	case 1:
		for (i = 0; i < 1 + rnd() % 8; i++) {
			idx = q->sq_prod + i;
			slot = (uint8_t *)q->sq_ring + METAROCE_SQ_RING_ENTRIES +
			       (size_t)(idx & (q->sq_slots - 1)) * q->sq_stride;
			for (size_t o = 0; o < q->sq_stride; o += 8)
				*(uint64_t *)(slot + o) = rnd();
			/* Often a plausible opcode, flags, counts. */
			if (rnd() % 2) {
				struct metaroce_swqe *w = (void *)slot;

				w->opcode = rnd() % 12;
				w->send_flags = rnd() % 16;
				w->num_sge = rnd() % 6;
				w->inline_len = rnd() % 128;
				if (rnd() % 2) {
					w->rkey = b->mr->rkey;
					w->remote_addr = (uintptr_t)b->buf +
							 WIN_OFF +
							 rnd() % (WIN_LEN / 2);
				}
			}
		}
		q->sq_prod += i;
		__atomic_store_n(&q->sq_ring->producer, q->sq_prod,
				 __ATOMIC_RELEASE);
		break;
	case 2:	/* an index that cannot be, then back */
		__atomic_store_n(&q->sq_ring->producer, (uint32_t)rnd(),
				 __ATOMIC_RELEASE);
		ibv_cmd_post_send(&q->vqp.qp, NULL, &bad);
		(*doorbells)++;
		__atomic_store_n(&q->sq_ring->producer, q->sq_prod,
				 __ATOMIC_RELEASE);
		break;
	case 3:	/* the kernel's own words, overwritten */
		q->sq_ring->retired = (uint32_t)rnd();
		q->sq_ring->flags = (uint32_t)rnd();
		break;
	case 4:	/* the CQ's consumer index, anywhere, for a while */
		__atomic_store_n(&cq->ring->consumer, (uint32_t)rnd(),
				 __ATOMIC_RELEASE);
		ibv_cmd_post_send(&q->vqp.qp, NULL, &bad);
		(*doorbells)++;
		usleep(rnd() % 200);
		__atomic_store_n(&cq->ring->consumer, cq->consumer,
				 __ATOMIC_RELEASE);
		break;
	case 5:	/* receive work requests: random bytes, or plausible */
		for (i = 0; i < 1 + rnd() % 4; i++) {
			idx = r->prod + i;
			slot = (uint8_t *)r->ring + METAROCE_RQ_RING_ENTRIES +
			       (size_t)(idx & (r->slots - 1)) * r->stride;
			for (size_t o = 0; o < r->stride; o += 8)
				*(uint64_t *)(slot + o) = rnd();
			if (rnd() % 2) {
				struct metaroce_rwqe *w = (void *)slot;
				struct metaroce_sge *sg = (void *)(w + 1);

				w->num_sge = rnd() % 3;
				sg->lkey = a->mr->lkey;
				sg->addr = (uintptr_t)a->buf +
					   rnd() % (BUF_SIZE + MSG);
				sg->length = rnd() % (2 * MSG);
			}
		}
		r->prod += i;
		__atomic_store_n(&r->ring->producer, r->prod,
				 __ATOMIC_RELEASE);
		break;
	case 6:	/* the receive ring's indices and flags */
		__atomic_store_n(&r->ring->producer, (uint32_t)rnd(),
				 __ATOMIC_RELEASE);
		ibv_cmd_post_recv(&q->vqp.qp, NULL, &rbad);
		(*doorbells)++;
		__atomic_store_n(&r->ring->producer, r->prod,
				 __ATOMIC_RELEASE);
		r->ring->consumer = (uint32_t)rnd();
		r->ring->flags = (uint32_t)rnd();
		break;
	default:
		break;
	}
	if (rnd() % 2) {
		ibv_cmd_post_send(&q->vqp.qp, NULL, &bad);
		(*doorbells)++;
	}
}

static bool pair_works(struct pair *p, struct side *a, struct side *b)
{
	struct ibv_wc wc[4];
	int n, i;

	for (i = 0; i < MSG; i++)
		a->buf[i] = (uint8_t)(i * 7 + 3);
	if (post_write(p, a, b, 0, WIN_OFF + WIN_LEN - MSG, 42))
		return false;
	n = poll_n(p->cqa, wc, 1, 10);
	if (n != 1 || wc[0].status != IBV_WC_SUCCESS || wc[0].wr_id != 42)
		return false;
	return !memcmp(a->buf, b->buf + WIN_OFF + WIN_LEN - MSG, MSG);
}

int main(int argc, char **argv)
{
	unsigned int doorbells = 0, writes = 0, errors = 0, posted = 0;
	unsigned int good = 0, recvs = 0;
	unsigned int rounds = 0, resets = 0;
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct ibv_qp_attr err_attr = { .qp_state = IBV_QPS_ERR };
	struct side a = {}, b = {};
	struct pair fz, ok;
	struct ibv_wc wc[32];
	double end;
	size_t i;
	int n;

	if (argc < 4) {
		fprintf(stderr,
			"usage: %s DEVICE_A DEVICE_B SECONDS [SEED]\n",
			argv[0]);
		return 2;
	}
	tap_start();
	rng = argc > 4 ? strtoull(argv[4], NULL, 0) : (uint64_t)time(NULL);
	rng |= 1;
	tap_diag("seed %llu", (unsigned long long)rng);

	open_side(&a, argv[1]);
	open_side(&b, argv[2]);
	make_pair(&fz, &a, &b);
	make_pair(&ok, &a, &b);
	if (!to_mrv_qp(fz.qa)->sq_ring || !to_mrv_qp(fz.qa)->rq.ring ||
	    !to_mrv_cq(fz.cqa)->ring)
		tap_bail("no send, receive or CQ ring: nothing to fuzz");

	tap_ok(pair_works(&ok, &a, &b), "before: the other pair carries data");

	end = now_sec() + atof(argv[3]);
	while (now_sec() < end) {
		/* Real traffic into B's window, and the scribbles. */
		if (!post_write(&fz, &a, &b, (rnd() % 16) * MSG,
				WIN_OFF + (rnd() % (WIN_LEN / MSG - 1)) * MSG,
				posted))
			posted++;
		/* Half the rounds: some traffic between the scribbles. */
		if (rnd() % 2)
			scribble(to_mrv_qp(fz.qa), to_mrv_cq(fz.cqa), &a, &b,
				 &doorbells);
		/* SENDs into A's receive ring, some with a real receive. */
		if (rnd() % 4 == 0) {
			if (rnd() % 2)
				post_recv_a(&fz, &a);
			post_send_to_a(&fz, &b, posted);
		}
		n = ibv_poll_cq(fz.cqa, 32, wc);
		for (int j = 0; j < n; j++) {
			writes++;
			recvs += wc[j].opcode == IBV_WC_RECV;
			errors += wc[j].status != IBV_WC_SUCCESS;
			good += wc[j].status == IBV_WC_SUCCESS;
		}
		while (ibv_poll_cq(fz.cqb, 32, wc) > 0)
			;
		if (rnd() % 64 == 0)
			usleep(1000);
		if (++rounds % 200 == 0) {
			if (ibv_modify_qp(fz.qa, &reset, IBV_QP_STATE) ||
			    ibv_modify_qp(fz.qb, &reset, IBV_QP_STATE) ||
			    connect_qp(fz.qa, &a, &b, fz.qb->qp_num) ||
			    connect_qp(fz.qb, &b, &a, fz.qa->qp_num))
				tap_bail("cannot reset and connect the pair: %s",
					 errname(errno));
			resets++;
		}
	}
	tap_diag("%u rounds, %u resets, %u posts, %u doorbells, %u completions (%u with an error, %u of receives)",
		 rounds, resets, posted, doorbells, writes, errors, recvs);
	tap_ok(recvs > 0, "receives completed on the scribbled QP (%u)", recvs);
	tap_ok(resets > 0, "the scribbled pair was reset and connected again %u times",
	       resets);
	tap_ok(good > 0 && errors > 0,
	       "between the scribbles, work requests completed, well (%u) and in error (%u)",
	       good, errors);

	tap_ok(!ibv_modify_qp(fz.qa, &err_attr, IBV_QP_STATE),
	       "the scribbled QP moves to ERR");
	usleep(100000);
	while (ibv_poll_cq(fz.cqa, 32, wc) > 0)
		;
	/* B outside the window: still the fill pattern. */
	for (i = 0; i < BUF_SIZE; i++)
		if ((i < WIN_OFF || i >= WIN_OFF + WIN_LEN) &&
		    b.buf[i] != 0x5a)
			break;
	tap_ok(i == BUF_SIZE,
	       "nothing was written to B outside the window it was given (%zu)",
	       i);
	tap_ok(pair_works(&ok, &a, &b),
	       "after: the other pair of this process carries data");
	tap_ok(!ibv_destroy_qp(fz.qa) && !ibv_destroy_qp(fz.qb) &&
	       !ibv_destroy_qp(ok.qa) && !ibv_destroy_qp(ok.qb) &&
	       !ibv_destroy_cq(fz.cqa) && !ibv_destroy_cq(fz.cqb) &&
	       !ibv_destroy_cq(ok.cqa) && !ibv_destroy_cq(ok.cqb),
	       "every QP and CQ destroyed");
	tap_ok(!ibv_dereg_mr(a.mr) && !ibv_dereg_mr(b.mr) &&
	       !ibv_dealloc_pd(a.pd) && !ibv_dealloc_pd(b.pd) &&
	       !ibv_close_device(a.ctx) && !ibv_close_device(b.ctx),
	       "MRs, PDs and devices released");
	return tap_done();
}
