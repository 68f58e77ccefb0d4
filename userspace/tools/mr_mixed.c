// SPDX-License-Identifier: GPL-2.0-only
/*
 * mr_mixed: the full verbs mix on many RC QPs at once, from both sides,
 * every byte, every result and every completion's wr_id checked.
 *
 * Two hosts connect --qps RC QPs. Each side is requester and responder on
 * every QP: it keeps --depth work requests outstanding per QP, drawn from
 * RDMA WRITE (with and without immediate), SEND (with and without
 * immediate), RDMA READ, fetch-and-add, compare-and-swap and a READ
 * followed by a fenced WRITE to the same bytes, of 1 B to --max-size, until
 * it has posted --ops per QP. Optionally, the first --big-qps QPs also read
 * --big-size bytes at a time (READs of 1 MiB among small WRITEs).
 *
 * Every operation of a QP's stream is a pure function of the seed, the side
 * and the QP (what may be outstanding when it is posted is bounded by the
 * depth, not by timing), so the responder replays its peer's stream to
 * check what it receives, and both check memory without shipping it:
 *
 *   - each side writes into a window of the peer's memory per QP, in
 *     slots no outstanding WRITE of the QP touches; a WRITE over bytes an
 *     earlier READ may still be reading is fenced (IBV_SEND_FENCE);
 *   - a READ must return what the QP's earlier WRITEs left there (RC: a
 *     READ sees every earlier WRITE of its QP; a fenced WRITE after it does
 *     not change what it returns);
 *   - fetch-and-add and compare-and-swap act on a word per QP and must
 *     return the value the QP's earlier atomics left;
 *   - the responder checks each receive: the right QP, receive wr_id,
 *     opcode, length, immediate and (SEND) every byte;
 *   - send completions come in posting order with the wr_id of the oldest
 *     outstanding request of the QP, the right opcode and status SUCCESS;
 *   - at the end each side replays its peer's stream and compares its
 *     whole window and atomic word per QP.
 *
 * Any failed completion, unknown wr_id, mismatch or timeout ends the run
 * with exit status 1 and a message saying which QP, operation and time; on
 * a timeout, the QPs still waiting are listed. On success both sides print
 * one line with the phase times and the operation rate.
 *
 * With --cut, a test cuts the link under the traffic (give --ops enough for
 * every QP to be busy then): every QP must fail, its oldest outstanding
 * request with RETRY_EXC_ERR, every later request and every receive it had
 * posted with WR_FLUSH_ERR, in order, each with its own wr_id and exactly
 * once, before --timeout; the tool then exits 0 without the final checks.
 * With --pause-file F, both sides write "connected" to F once every QP is
 * connected and wait for F to be removed before moving data.
 *
 *   server: mr_mixed -d DEV [-g GIDX] [options]
 *   client: mr_mixed -d DEV [-g GIDX] [options] SERVER_ADDRESS
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "verbs_tool.h"

#define MAX_QPS		16384
#define MAX_DEPTH	16
#define QPS_PER_CQ	1024
#define POLL_BATCH	64
#define BIG_MAX		(16u << 20)
#define RECV_ID		((uint64_t)1 << 63)	/* in the wr_id of a receive */

enum op_type {
	T_WRITE, T_WRITE_IMM, T_SEND, T_SEND_IMM, T_READ, T_FADD, T_CSWAP,
	T_READ_FENCE,	/* a READ, then (next op) a fenced WRITE there */
	T_BIG_READ, T_NR
};

static const char *const type_names[T_NR] = {
	"WRITE", "WRITE_IMM", "SEND", "SEND_IMM", "READ", "FETCH_ADD",
	"CMP_SWAP", "READ+FENCE", "BIG_READ",
};

/* One operation of a QP's stream. */
struct op {
	uint8_t type;		/* enum op_type; T_WRITE for a fenced one */
	uint8_t fence;
	uint16_t slot;
	uint32_t off, len;
	uint32_t imm;
	uint64_t swap_add, compare;
	uint64_t expect;	/* atomics: the original value */
};

/* The generator of one QP's stream, on the side that posts it. */
struct gen {
	uint64_t rng;
	uint32_t seq;		/* next operation */
	uint64_t atom;		/* the atomic word after the ops so far */
	struct op recent[MAX_DEPTH];	/* ops seq-depth .. seq-1 */
	bool pair;		/* the previous op was a READ+FENCE's READ */
};

/* Requester state of one QP. */
struct rq_state {
	struct gen g;
	uint32_t done;		/* ops completed (--cut: or failed) */
	bool failed;		/* --cut: the QP failed */
	uint64_t hash[MAX_DEPTH];	/* READ: hash of the expected bytes */
	uint64_t expect[MAX_DEPTH];	/* atomics: expected original */
};

/* Responder state of one QP: the peer's stream as receives see it. */
struct rs_state {
	struct gen g;		/* replays the peer's stream */
	uint32_t nrecv_ops;	/* receive-consuming ops the peer will post */
	uint32_t recvd;		/* receives completed */
	uint32_t posted;	/* receives posted */
	uint32_t flushed;	/* --cut: receives flushed */
};

struct conninfo {
	uint8_t gid[16];
	uint32_t rkey;
	uint32_t nqps, depth, ops, max_size, big_qps, big_size;
	uint64_t seed;
	uint64_t win, atom, big;	/* addresses in the peer's memory */
};

static struct {
	const char *dev;
	int gidx, port, timeout;
	unsigned int nqps, depth, ops, rd_atomic, qp_timeout, big_qps;
	uint32_t max_size, big_size;
	uint64_t seed;
	bool srq, cut;
	const char *pause_file;
} opt = {
	.gidx = 0, .port = 18640, .timeout = 300, .nqps = 400, .depth = 4,
	.ops = 20, .rd_atomic = 16, .qp_timeout = 14, .max_size = 4096,
	.big_qps = 0, .big_size = 1u << 20, .seed = 1,
};

static const char *role = "client";
static int side;		/* 0: server, 1: client (in every pattern) */
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq **cqs;
static unsigned int ncq;
static struct ibv_srq **srqs;
static struct ibv_qp **qps;
static struct ibv_mr *mr;
static uint8_t *mem, *shadow;
static size_t mem_bytes;
static uint32_t slot_size, nslots, nrbufs;
static size_t win_off, atom_off, big_off, lbuf_off, rbuf_off, bigdst_off;
static uint32_t *lqpn, *lpsn, *rqpn, *rpsn;
static struct rq_state *req;
static struct rs_state *rsp;
static struct conninfo local, remote;
static int sock = -1;
static double t_start, deadline;
static unsigned long long ops_done, bytes_done, recvs_done;
static unsigned long long cut_failed, cut_flushed, cut_req_flushed; /* --cut */
static double last_ok, last_fail;			/* --cut */

void die(const char *fmt, ...)
{
	const char *diag = getenv("MR_MIXED_DIAG");
	struct timespec ts;
	va_list ap;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	fprintf(stderr, "mr_mixed: FAIL %s", role);
	if (t_start > 0)
		fprintf(stderr, " at %.3f s",
			(double)ts.tv_sec + ts.tv_nsec / 1e9 - t_start);
	fprintf(stderr, ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	/* A test's diagnostics, while the QPs still exist. */
	if (diag && *diag && system(diag) == -1)
		perror("mr_mixed: MR_MIXED_DIAG");
	exit(1);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 32;
	return x;
}

static uint64_t next_rand(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ULL;
	return mix(*s);
}

/* Payload of operation (@s, @qp, @seq): word @w. */
static uint64_t pat_word(int s, unsigned int qp, uint32_t seq, uint64_t w)
{
	return mix(opt.seed * 0x9e3779b97f4a7c15ULL ^ (uint64_t)s << 62 ^
		   (uint64_t)qp << 36 ^ (uint64_t)seq << 8 ^
		   w * 0xd1342543de82ef95ULL);
}

static void pat_fill(uint8_t *p, int s, unsigned int qp, uint32_t seq,
		     uint32_t len)
{
	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t x = pat_word(s, qp, seq, i / 8);
		uint32_t n = len - i < 8 ? len - i : 8;

		memcpy(p + i, &x, n);
	}
}

/* Byte @i of the peer-readable big area of side @s. */
static void big_fill(uint8_t *p, int s, uint32_t off, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++) {
		uint32_t at = off + i;

		p[i] = (uint8_t)(pat_word(s, 0xfffff, 0xffffff, at / 8) >>
				 (8 * (at % 8)));
	}
}

static uint64_t hash_bytes(const uint8_t *p, uint32_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (uint32_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

/* ------------------------------------------------------------ the stream */

static uint32_t pick_len(uint64_t *r, uint32_t max)
{
	uint64_t x = next_rand(r);

	switch (x % 4) {
	case 0:
		return 1 + (uint32_t)(next_rand(r) % (max < 16 ? max : 16));
	case 1:
		return 1 + (uint32_t)(next_rand(r) % (max < 256 ? max : 256));
	default:
		return 1 + (uint32_t)(next_rand(r) % max);
	}
}

/* Whether op @o writes into the window (the peer's memory). */
static bool op_writes(const struct op *o)
{
	return o->type == T_WRITE || o->type == T_WRITE_IMM;
}

static bool op_reads(const struct op *o)
{
	return o->type == T_READ || o->type == T_READ_FENCE;
}

static bool overlaps(const struct op *a, const struct op *b)
{
	return a->slot == b->slot && a->off < b->off + b->len &&
	       b->off < a->off + a->len;
}

static void gen_init(struct gen *g, int s, unsigned int qp)
{
	memset(g, 0, sizeof(*g));
	g->rng = mix(opt.seed ^ (uint64_t)s << 40 ^ (uint64_t)qp << 8 ^ 0x5a);
}

/*
 * The next op of the stream of side @s on QP @qp. What may be outstanding
 * when an op is posted is ops seq-depth+1 .. seq-1, whatever completed: a
 * WRITE picks a slot none of them writes, and is fenced when one of them
 * reads bytes it overwrites.
 */
static void gen_next(struct gen *g, unsigned int qp, struct op *o)
{
	unsigned int depth = opt.depth, n = depth - 1, k;
	uint32_t seq = g->seq;
	uint64_t r;

	memset(o, 0, sizeof(*o));
	if (g->pair) {
		/* The fenced WRITE over what the READ just before reads. */
		*o = g->recent[(seq - 1) % depth];
		o->type = T_WRITE;
		o->fence = 1;
		g->pair = false;
		goto out;
	}
	r = next_rand(&g->rng);
	if (qp < opt.big_qps && r % 5 == 0)
		o->type = T_BIG_READ;
	else
		o->type = (uint8_t)(next_rand(&g->rng) % T_BIG_READ);
	/* A pair needs two ops of the stream. */
	if (o->type == T_READ_FENCE && seq + 1 >= opt.ops)
		o->type = T_READ;
	switch (o->type) {
	case T_FADD:
	case T_CSWAP:
		o->len = 8;
		o->swap_add = next_rand(&g->rng) % 1000 + 1;
		o->expect = g->atom;
		if (o->type == T_FADD) {
			g->atom += o->swap_add;
		} else {
			/* Three times in four the compare matches. */
			o->compare = next_rand(&g->rng) % 4 ? g->atom :
							      g->atom ^ 1;
			o->swap_add = next_rand(&g->rng);
			if (o->compare == g->atom)
				g->atom = o->swap_add;
		}
		break;
	case T_BIG_READ:
		o->len = opt.big_size;
		break;
	default: {
		uint32_t busy = 0;	/* slots an outstanding WRITE uses */
		uint32_t slot;

		o->len = pick_len(&g->rng, opt.max_size);
		o->off = (uint32_t)(next_rand(&g->rng) %
				    (slot_size - o->len + 1));
		o->imm = (uint32_t)next_rand(&g->rng);
		for (k = 1; k <= n && k <= seq; k++) {
			const struct op *p = &g->recent[(seq - k) % depth];

			if (op_writes(p))
				busy |= 1u << p->slot;
		}
		slot = (uint32_t)(next_rand(&g->rng) % nslots);
		if (op_writes(o) || o->type == T_READ_FENCE)
			while (busy & (1u << slot))
				slot = (slot + 1) % nslots;
		o->slot = (uint16_t)slot;
		if (o->type == T_READ_FENCE)
			g->pair = true;
		break;
	}
	}
	if (op_writes(o))
		for (k = 1; k <= n && k <= seq; k++)
			if (op_reads(&g->recent[(seq - k) % depth]) &&
			    overlaps(o, &g->recent[(seq - k) % depth]))
				o->fence = 1;
out:
	g->recent[seq % depth] = *o;
	g->seq++;
}

static bool op_consumes_recv(const struct op *o)
{
	return o->type == T_SEND || o->type == T_SEND_IMM ||
	       o->type == T_WRITE_IMM;
}

/* ----------------------------------------------------------------- TCP */

static void sync_point(uint32_t what)
{
	vt_sync(sock, what, deadline);
}

/* --------------------------------------------------------------- verbs */

static uint8_t *win(unsigned int qp, uint32_t slot)
{
	return mem + win_off + ((size_t)qp * nslots + slot) * slot_size;
}

static uint8_t *shadow_at(unsigned int qp, uint32_t slot)
{
	return shadow + ((size_t)qp * nslots + slot) * slot_size;
}

static uint8_t *lbuf(unsigned int qp, uint32_t seq)
{
	if (qp < opt.big_qps && req[qp].g.recent[seq % opt.depth].type ==
	    T_BIG_READ)
		return mem + bigdst_off +
		       ((size_t)qp * opt.depth + seq % opt.depth) * opt.big_size;
	return mem + lbuf_off +
	       ((size_t)qp * opt.depth + seq % opt.depth) * slot_size;
}

static uint8_t *rbuf(uint32_t i)
{
	return mem + rbuf_off + (size_t)i * slot_size;
}

static void setup(void)
{
	unsigned int rdepth = opt.depth + 2;
	size_t win_bytes;

	ctx = vt_open_device(opt.dev);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd: %s", strerror(errno));

	slot_size = (opt.max_size + 63) & ~63u;
	nslots = opt.depth + 1;
	nrbufs = opt.nqps * rdepth;
	win_bytes = (size_t)opt.nqps * nslots * slot_size;
	win_off = 0;
	atom_off = win_bytes;
	big_off = (atom_off + (size_t)opt.nqps * 8 + 4095) & ~(size_t)4095;
	lbuf_off = big_off + (opt.big_qps ? opt.big_size : 0);
	rbuf_off = lbuf_off + (size_t)opt.nqps * opt.depth * slot_size;
	bigdst_off = rbuf_off + (size_t)nrbufs * slot_size;
	mem_bytes = bigdst_off + (size_t)opt.big_qps * opt.depth * opt.big_size;
	mem_bytes = (mem_bytes + 4095) & ~(size_t)4095;
	mem = aligned_alloc(4096, mem_bytes);
	shadow = calloc(win_bytes, 1);
	if (!mem || !shadow)
		die("out of memory (%zu bytes)", mem_bytes + win_bytes);
	memset(mem, 0, mem_bytes);
	if (opt.big_qps)
		big_fill(mem + big_off, side, 0, opt.big_size);
	mr = ibv_reg_mr(pd, mem, mem_bytes, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC);
	if (!mr)
		die("ibv_reg_mr %zu bytes: %s", mem_bytes, strerror(errno));

	ncq = (opt.nqps + QPS_PER_CQ - 1) / QPS_PER_CQ;
	cqs = calloc(ncq, sizeof(*cqs));
	srqs = calloc(ncq, sizeof(*srqs));
	if (!cqs || !srqs)
		die("out of memory");
	for (unsigned int c = 0; c < ncq; c++) {
		int n = QPS_PER_CQ * (int)(opt.depth + rdepth) + POLL_BATCH;

		cqs[c] = ibv_create_cq(ctx, n, NULL, NULL, 0);
		if (!cqs[c])
			die("ibv_create_cq %d: %s", n, strerror(errno));
		if (opt.srq) {
			struct ibv_srq_init_attr sa = {
				.attr = { .max_wr = QPS_PER_CQ * rdepth,
					  .max_sge = 1 },
			};

			srqs[c] = ibv_create_srq(pd, &sa);
			if (!srqs[c])
				die("ibv_create_srq: %s", strerror(errno));
		}
	}
	vt_gid(ctx, opt.gidx, local.gid);
	local.rkey = mr->rkey;
	local.nqps = opt.nqps;
	local.depth = opt.depth;
	local.ops = opt.ops;
	local.max_size = opt.max_size;
	local.big_qps = opt.big_qps;
	local.big_size = opt.big_size;
	local.seed = opt.seed;
	local.win = (uintptr_t)mem + win_off;
	local.atom = (uintptr_t)mem + atom_off;
	local.big = (uintptr_t)mem + big_off;
}

static void create_qps(void)
{
	for (unsigned int i = 0; i < opt.nqps; i++) {
		struct ibv_cq *cq = cqs[i / QPS_PER_CQ];
		struct ibv_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.srq = opt.srq ? srqs[i / QPS_PER_CQ] : NULL,
			.cap = { .max_send_wr = opt.depth,
				 .max_recv_wr = opt.srq ? 0 : opt.depth + 2,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qps[i] = vt_rc_qp(pd, &qa, IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_ATOMIC, i);
		lqpn[i] = qps[i]->qp_num;
		lpsn[i] = vt_psn();
	}
}

static void connect_qps(void)
{
	struct vt_path p = {
		.mtu = vt_active_mtu(ctx), .sgid_index = opt.gidx,
		.dgid = remote.gid, .rd_atomic = (uint8_t)opt.rd_atomic,
		.min_rnr_timer = 12, .timeout = (uint8_t)opt.qp_timeout,
	};

	for (unsigned int i = 0; i < opt.nqps; i++)
		vt_rc_connect(qps[i], &p, rqpn[i], rpsn[i], lpsn[i], i);
}

/* Our QPs by their numbers. */
static struct vt_qpn_index qpn_index;

static int64_t qp_index(uint32_t qpn)
{
	return vt_qpn_find(&qpn_index, qpn);
}

/* ------------------------------------------------------------- receives */

/* Receive wr_id: QP index << 32 | buffer; SRQ: the buffer alone. */
static void post_recv(unsigned int qp, uint32_t buf)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)rbuf(buf), .length = slot_size,
		.lkey = mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = RECV_ID | (opt.srq ? buf : (uint64_t)qp << 32 | buf),
		.sg_list = &sge, .num_sge = 1,
	}, *bad;
	int rc;

	if (opt.srq)
		rc = ibv_post_srq_recv(srqs[qp / QPS_PER_CQ], &wr, &bad);
	else
		rc = ibv_post_recv(qps[qp], &wr, &bad);
	if (rc)
		die("post_recv QP %u: %s", qp, strerror(rc));
}

static void post_recvs(void)
{
	unsigned int rdepth = opt.depth + 2;

	for (unsigned int i = 0; i < opt.nqps; i++) {
		struct rs_state *s = &rsp[i];
		struct gen g;
		struct op o;

		gen_init(&s->g, !side, i);
		gen_init(&g, !side, i);
		/* --cut: the run ends with the link, not the stream. */
		if (opt.cut)
			s->nrecv_ops = UINT32_MAX;
		for (uint32_t k = 0; k < opt.ops && !opt.cut; k++) {
			gen_next(&g, i, &o);
			s->nrecv_ops += op_consumes_recv(&o);
		}
		/* SRQ: each QP's share of buffers goes to its group's SRQ. */
		for (uint32_t k = 0; k < rdepth; k++) {
			post_recv(i, i * rdepth + k);
			s->posted++;
		}
	}
}

static void on_recv(const struct ibv_wc *wc)
{
	int64_t qi = qp_index(wc->qp_num);
	struct rs_state *s;
	uint32_t buf;
	struct op o;
	uint32_t seq;

	if (qi < 0)
		die("receive completion on unknown QP number %u (wr_id 0x%" PRIx64 ")",
		    wc->qp_num, wc->wr_id);
	s = &rsp[qi];
	if (opt.srq) {
		buf = (uint32_t)wc->wr_id;
		if ((wc->wr_id & ~RECV_ID) >= nrbufs)
			die("QP %" PRId64 ": receive wr_id 0x%" PRIx64 " was never posted",
			    qi, wc->wr_id);
	} else {
		uint32_t want = (uint32_t)qi * (opt.depth + 2) +
				s->recvd % (opt.depth + 2);

		buf = (uint32_t)wc->wr_id;
		if ((wc->wr_id & ~RECV_ID) >> 32 != (uint64_t)qi || buf != want)
			die("QP %" PRId64 ": receive %u completed with wr_id 0x%" PRIx64 ", expected 0x%" PRIx64,
			    qi, s->recvd, wc->wr_id,
			    (uint64_t)(RECV_ID | (uint64_t)qi << 32 | want));
	}
	if (s->recvd >= s->nrecv_ops)
		die("QP %" PRId64 ": receive %u, but the peer posts only %u",
		    qi, s->recvd, s->nrecv_ops);
	do {
		seq = s->g.seq;
		gen_next(&s->g, (unsigned int)qi, &o);
	} while (!op_consumes_recv(&o));
	if (o.type == T_WRITE_IMM ? wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM :
				    wc->opcode != IBV_WC_RECV)
		die("QP %" PRId64 ": receive for op %u (%s) has opcode %d",
		    qi, seq, type_names[o.type], wc->opcode);
	if (wc->byte_len != o.len)
		die("QP %" PRId64 ": receive for op %u (%s) has %u bytes, expected %u",
		    qi, seq, type_names[o.type], wc->byte_len, o.len);
	if ((o.type == T_SEND) == !!(wc->wc_flags & IBV_WC_WITH_IMM) ||
	    (o.type != T_SEND && ntohl(wc->imm_data) != o.imm))
		die("QP %" PRId64 ": receive for op %u (%s): flags 0x%x imm 0x%x, expected imm 0x%x",
		    qi, seq, type_names[o.type], wc->wc_flags,
		    ntohl(wc->imm_data), o.imm);
	if (o.type != T_WRITE_IMM) {
		uint8_t *p = rbuf(buf);

		for (uint32_t i = 0; i < o.len; i += 8) {
			uint64_t x = pat_word(!side, (unsigned int)qi, seq,
					      i / 8);
			uint32_t n = o.len - i < 8 ? o.len - i : 8;

			if (memcmp(p + i, &x, n))
				die("QP %" PRId64 ": SEND op %u: bytes %u..%u of %u differ",
				    qi, seq, i, i + n - 1, o.len);
		}
	}
	s->recvd++;
	recvs_done++;
	/* Keep rdepth receives posted while the peer may still send. */
	if (s->posted < s->nrecv_ops) {
		post_recv((unsigned int)qi, buf);
		s->posted++;
	}
}

/* --------------------------------------------------------------- sends */

static void post_op(unsigned int qp)
{
	struct rq_state *s = &req[qp];
	uint32_t seq = s->g.seq;
	struct ibv_sge sge = { .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = (uint64_t)qp << 32 | seq,
		.sg_list = &sge, .num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	uint64_t slot_addr;
	struct op o;
	uint8_t *lb;
	int rc;

	gen_next(&s->g, qp, &o);
	lb = lbuf(qp, seq);
	sge.addr = (uintptr_t)lb;
	sge.length = o.len;
	slot_addr = remote.win + ((uint64_t)qp * nslots + o.slot) * slot_size +
		    o.off;
	if (o.fence)
		wr.send_flags |= IBV_SEND_FENCE;
	switch (o.type) {
	case T_WRITE:
	case T_WRITE_IMM:
		pat_fill(lb, side, qp, seq, o.len);
		memcpy(shadow_at(qp, o.slot) + o.off, lb, o.len);
		wr.opcode = o.type == T_WRITE ? IBV_WR_RDMA_WRITE :
						IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl(o.imm);
		wr.wr.rdma.remote_addr = slot_addr;
		wr.wr.rdma.rkey = remote.rkey;
		break;
	case T_SEND:
	case T_SEND_IMM:
		pat_fill(lb, side, qp, seq, o.len);
		wr.opcode = o.type == T_SEND ? IBV_WR_SEND :
					       IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htonl(o.imm);
		break;
	case T_READ:
	case T_READ_FENCE:
		memset(lb, 0xa5, o.len);
		s->hash[seq % opt.depth] =
			hash_bytes(shadow_at(qp, o.slot) + o.off, o.len);
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = slot_addr;
		wr.wr.rdma.rkey = remote.rkey;
		break;
	case T_BIG_READ:
		memset(lb, 0xa5, o.len);
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = remote.big;
		wr.wr.rdma.rkey = remote.rkey;
		break;
	case T_FADD:
	case T_CSWAP:
		memset(lb, 0xa5, 8);
		s->expect[seq % opt.depth] = o.expect;
		wr.opcode = o.type == T_FADD ? IBV_WR_ATOMIC_FETCH_AND_ADD :
					       IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.remote_addr = remote.atom + (uint64_t)qp * 8;
		wr.wr.atomic.rkey = remote.rkey;
		wr.wr.atomic.compare_add = o.type == T_FADD ? o.swap_add :
							      o.compare;
		wr.wr.atomic.swap = o.swap_add;
		break;
	}
	rc = ibv_post_send(qps[qp], &wr, &bad);
	if (rc)
		die("QP %u: post op %u (%s): %s", qp, seq, type_names[o.type],
		    strerror(rc));
}

static uint8_t *big_want;	/* what the peer's big area holds */

static void big_check(const uint8_t *p, unsigned int qp, uint32_t seq)
{
	if (!big_want) {
		big_want = malloc(opt.big_size);
		if (!big_want)
			die("out of memory");
		big_fill(big_want, !side, 0, opt.big_size);
	}
	for (uint32_t i = 0; i < opt.big_size; i += 4096) {
		uint32_t n = opt.big_size - i < 4096 ? opt.big_size - i : 4096;

		if (memcmp(p + i, big_want + i, n))
			die("QP %u: big READ op %u: bytes %u..%u differ", qp,
			    seq, i, i + n - 1);
	}
}

static void on_send(const struct ibv_wc *wc)
{
	uint64_t qi = wc->wr_id >> 32;
	uint32_t seq = (uint32_t)wc->wr_id;
	struct rq_state *s;
	const struct op *o;
	uint8_t *lb;

	if (qi >= opt.nqps || qp_index(wc->qp_num) != (int64_t)qi)
		die("send completion with wr_id 0x%" PRIx64 " on QP number %u (index %" PRId64 "): no such request",
		    wc->wr_id, wc->qp_num, qp_index(wc->qp_num));
	s = &req[qi];
	if (seq != s->done || seq >= s->g.seq)
		die("QP %" PRIu64 ": completion wr_id 0x%" PRIx64 " (op %u), expected op %u of %u posted",
		    qi, wc->wr_id, seq, s->done, s->g.seq);
	o = &s->g.recent[seq % opt.depth];
	if (wc->status != IBV_WC_SUCCESS)
		die("QP %" PRIu64 ": op %u (%s, %u B%s) completed with %s (%d), vendor error 0x%x",
		    qi, seq, type_names[o->type], o->len,
		    o->fence ? ", fenced" : "", ibv_wc_status_str(wc->status),
		    wc->status, wc->vendor_err);
	lb = lbuf((unsigned int)qi, seq);
	switch (o->type) {
	case T_WRITE:
	case T_WRITE_IMM:
		if (wc->opcode != IBV_WC_RDMA_WRITE)
			goto bad_opcode;
		break;
	case T_SEND:
	case T_SEND_IMM:
		if (wc->opcode != IBV_WC_SEND)
			goto bad_opcode;
		break;
	case T_READ:
	case T_READ_FENCE:
		if (wc->opcode != IBV_WC_RDMA_READ)
			goto bad_opcode;
		if (hash_bytes(lb, o->len) != s->hash[seq % opt.depth])
			die("QP %" PRIu64 ": READ op %u of %u B at slot %u+%u returned other bytes than the QP's earlier WRITEs left",
			    qi, seq, o->len, o->slot, o->off);
		break;
	case T_BIG_READ:
		if (wc->opcode != IBV_WC_RDMA_READ)
			goto bad_opcode;
		big_check(lb, (unsigned int)qi, seq);
		break;
	case T_FADD:
	case T_CSWAP: {
		uint64_t got;

		if (wc->opcode != (o->type == T_FADD ? IBV_WC_FETCH_ADD :
						       IBV_WC_COMP_SWAP))
			goto bad_opcode;
		memcpy(&got, lb, 8);
		if (got != s->expect[seq % opt.depth])
			die("QP %" PRIu64 ": %s op %u returned 0x%" PRIx64 ", expected 0x%" PRIx64,
			    qi, type_names[o->type], seq, got,
			    s->expect[seq % opt.depth]);
		break;
	}
	}
	s->done++;
	ops_done++;
	bytes_done += o->len;
	last_ok = now_s();
	if (s->g.seq < opt.ops)
		post_op((unsigned int)qi);
	return;
bad_opcode:
	die("QP %" PRIu64 ": op %u (%s) completed with opcode %d", qi, seq,
	    type_names[o->type], wc->opcode);
}

static void report_stuck(void)
{
	unsigned int shown = 0, stuck = 0;

	for (unsigned int i = 0; i < opt.nqps; i++) {
		struct rq_state *s = &req[i];
		struct rs_state *r = &rsp[i];

		if (opt.cut ? s->failed && s->done == s->g.seq &&
			      r->recvd + r->flushed == r->posted :
			      s->done == opt.ops && r->recvd == r->nrecv_ops)
			continue;
		stuck++;
		if (shown++ < 16)
			fprintf(stderr,
				"mr_mixed: %s: QP %u (qpn 0x%x): %u of %u ops completed, %u posted, oldest %s; %u of %u receives\n",
				role, i, lqpn[i], s->done, opt.ops, s->g.seq,
				s->done < s->g.seq ?
				type_names[s->g.recent[s->done % opt.depth].type] :
				"-", r->recvd, r->nrecv_ops);
	}
	fprintf(stderr, "mr_mixed: %s: %u QPs not finished\n", role, stuck);
}

/*
 * A completion in error: which request it names (an error completion's
 * opcode is undefined, its wr_id is not), whether that request was
 * outstanding at all.
 */
static void failed(const struct ibv_wc *wc)
{
	int64_t qi = qp_index(wc->qp_num);
	uint64_t id = wc->wr_id;

	if (id & RECV_ID)
		die("QP %" PRId64 " (qpn 0x%x): receive wr_id 0x%" PRIx64 " completed with %s (%d)",
		    qi, wc->qp_num, id, ibv_wc_status_str(wc->status),
		    wc->status);
	if (qi >= 0 && (id >> 32) == (uint64_t)qi) {
		const struct rq_state *s = &req[qi];
		uint32_t seq = (uint32_t)id;

		if (seq >= s->done && seq < s->g.seq) {
			const struct op *o = &s->g.recent[seq % opt.depth];

			die("QP %" PRId64 " (qpn 0x%x): op %u (%s, %u B%s) completed with %s (%d); %u ops completed, %u posted",
			    qi, wc->qp_num, seq, type_names[o->type], o->len,
			    o->fence ? ", fenced" : "",
			    ibv_wc_status_str(wc->status), wc->status,
			    s->done, s->g.seq);
		}
	}
	die("QP %" PRId64 " (qpn 0x%x): a completion with %s (%d) names wr_id 0x%" PRIx64 ", which is no outstanding request of the QP",
	    qi, wc->qp_num, ibv_wc_status_str(wc->status), wc->status, id);
}

/*
 * --cut: the link was cut under the traffic. Every QP must fail: its
 * oldest outstanding request with RETRY_EXC_ERR, every later one and every
 * receive it had posted with WR_FLUSH_ERR, in order, each exactly once.
 */
static void cut_completion(const struct ibv_wc *wc)
{
	int64_t qi = qp_index(wc->qp_num);
	uint64_t id = wc->wr_id;

	if (qi < 0)
		die("--cut: a completion on unknown QP number %u", wc->qp_num);
	if (id & RECV_ID) {
		struct rs_state *r = &rsp[qi];
		uint32_t n = r->recvd + r->flushed;
		uint64_t want = RECV_ID | (uint64_t)qi << 32 |
				((uint32_t)qi * (opt.depth + 2) +
				 n % (opt.depth + 2));

		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			die("--cut: QP %" PRId64 ": receive wr_id 0x%" PRIx64 " completed with %s, expected a flush",
			    qi, id, ibv_wc_status_str(wc->status));
		if (id != want || n >= r->posted)
			die("--cut: QP %" PRId64 ": flushed receive wr_id 0x%" PRIx64 ", expected 0x%" PRIx64 " (%u of %u posted receives completed)",
			    qi, id, want, n, r->posted);
		r->flushed++;
		cut_flushed++;
	} else {
		struct rq_state *s = &req[qi];
		uint32_t seq = (uint32_t)id;
		enum ibv_wc_status want = s->failed ? IBV_WC_WR_FLUSH_ERR :
					  IBV_WC_RETRY_EXC_ERR;

		if ((id >> 32) != (uint64_t)qi || seq != s->done ||
		    seq >= s->g.seq)
			die("--cut: QP %" PRId64 ": completion with %s names wr_id 0x%" PRIx64 ", expected op %u of %u posted",
			    qi, ibv_wc_status_str(wc->status), id, s->done,
			    s->g.seq);
		if (wc->status != want)
			die("--cut: QP %" PRId64 ": op %u completed with %s, expected %s",
			    qi, seq, ibv_wc_status_str(wc->status),
			    ibv_wc_status_str(want));
		if (!s->failed)
			cut_failed++;
		else
			cut_req_flushed++;
		s->failed = true;
		s->done++;
	}
	last_fail = now_s();
}

/* --cut: every QP failed, every request and receive accounted for. */
static bool cut_all_failed(void)
{
	for (unsigned int i = 0; i < opt.nqps; i++) {
		const struct rq_state *s = &req[i];
		const struct rs_state *r = &rsp[i];

		if (!s->failed || s->done != s->g.seq ||
		    r->recvd + r->flushed != r->posted)
			return false;
	}
	return true;
}

static void run(void)
{
	unsigned long long want_ops = (unsigned long long)opt.nqps * opt.ops;
	unsigned long long want_recvs = 0;
	struct ibv_wc wc[POLL_BATCH];

	for (unsigned int i = 0; i < opt.nqps; i++) {
		gen_init(&req[i].g, side, i);
		want_recvs += rsp[i].nrecv_ops;
	}
	for (unsigned int d = 0; d < opt.depth; d++)
		for (unsigned int i = 0; i < opt.nqps; i++)
			if (req[i].g.seq < opt.ops)
				post_op(i);
	while (opt.cut ? !cut_all_failed() :
	       ops_done < want_ops || recvs_done < want_recvs) {
		bool any = false;

		for (unsigned int c = 0; c < ncq; c++) {
			int got = ibv_poll_cq(cqs[c], POLL_BATCH, wc);

			if (got < 0)
				die("ibv_poll_cq: %d", got);
			for (int k = 0; k < got; k++) {
				if (wc[k].status != IBV_WC_SUCCESS && opt.cut) {
					cut_completion(&wc[k]);
					continue;
				}
				if (wc[k].status != IBV_WC_SUCCESS)
					failed(&wc[k]);
				if (wc[k].wr_id & RECV_ID)
					on_recv(&wc[k]);
				else
					on_send(&wc[k]);
			}
			any |= got > 0;
		}
		if (!any) {
			if (now_s() > deadline) {
				report_stuck();
				if (opt.cut)
					die("--cut: timed out with %llu of %u QPs failed, %llu receives flushed",
					    cut_failed, opt.nqps, cut_flushed);
				die("timed out: %llu of %llu ops and %llu of %llu receives completed",
				    ops_done, want_ops, recvs_done, want_recvs);
			}
			sched_yield();
		}
	}
}

/*
 * The end: replay the peer's stream of each QP and compare this side's
 * window and atomic word with what it must hold.
 */
static void final_check(void)
{
	uint8_t *want = malloc((size_t)nslots * slot_size);

	if (!want)
		die("out of memory");
	for (unsigned int i = 0; i < opt.nqps; i++) {
		struct gen g;
		struct op o;

		memset(want, 0, (size_t)nslots * slot_size);
		gen_init(&g, !side, i);
		for (uint32_t k = 0; k < opt.ops; k++) {
			gen_next(&g, i, &o);
			if (op_writes(&o))
				pat_fill(want + (size_t)o.slot * slot_size + o.off,
					 !side, i, k, o.len);
		}
		for (uint32_t sl = 0; sl < nslots; sl++)
			if (memcmp(win(i, sl), want + (size_t)sl * slot_size,
				   slot_size)) {
				uint32_t b = 0;

				while (win(i, sl)[b] == want[sl * slot_size + b])
					b++;
				die("QP %u: slot %u of the window differs at byte %u after the run",
				    i, sl, b);
			}
		if (memcmp(mem + atom_off + (size_t)i * 8, &g.atom, 8))
			die("QP %u: atomic word 0x%" PRIx64 ", expected 0x%" PRIx64,
			    i, *(uint64_t *)(mem + atom_off + (size_t)i * 8),
			    g.atom);
	}
	free(want);
}

/*
 * --pause-file: once every QP is connected and its receives posted, write
 * "connected" to the file and wait for it to go (a test measures memory).
 */
static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [-d dev] [-g gidx] [-p port] [-q qps] [-D depth] [-n ops-per-qp]\n"
		"          [-m max-size] [-S seed] [-t timeout] [-T qp-timeout] [-R rd-atomic]\n"
		"          [--srq] [--big-qps N] [--big-size BYTES] [--cut] [--pause-file F]\n"
		"          [server]\n",
		argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ib-dev", 1, NULL, 'd' }, { "gid-index", 1, NULL, 'g' },
		{ "port", 1, NULL, 'p' }, { "qps", 1, NULL, 'q' },
		{ "depth", 1, NULL, 'D' }, { "ops", 1, NULL, 'n' },
		{ "max-size", 1, NULL, 'm' }, { "seed", 1, NULL, 'S' },
		{ "timeout", 1, NULL, 't' }, { "qp-timeout", 1, NULL, 'T' },
		{ "rd-atomic", 1, NULL, 'R' }, { "srq", 0, NULL, 'Q' },
		{ "big-qps", 1, NULL, 'B' }, { "big-size", 1, NULL, 'Z' },
		{ "cut", 0, NULL, 'C' }, { "pause-file", 1, NULL, 'P' },
		{ NULL, 0, NULL, 0 }
	};
	double t0, t_create, t_connect, t_data, t_destroy;
	const char *server = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "d:g:p:q:D:n:m:S:t:T:R:QB:Z:CP:", lo,
				NULL)) != -1) {
		switch (c) {
		case 'd': opt.dev = optarg; break;
		case 'g': opt.gidx = atoi(optarg); break;
		case 'p': opt.port = atoi(optarg); break;
		case 'q': opt.nqps = (unsigned int)atoi(optarg); break;
		case 'D': opt.depth = (unsigned int)atoi(optarg); break;
		case 'n': opt.ops = (unsigned int)atoi(optarg); break;
		case 'm': opt.max_size = (uint32_t)atoi(optarg); break;
		case 'S': opt.seed = strtoull(optarg, NULL, 0); break;
		case 't': opt.timeout = atoi(optarg); break;
		case 'T': opt.qp_timeout = (unsigned int)atoi(optarg); break;
		case 'R': opt.rd_atomic = (unsigned int)atoi(optarg); break;
		case 'Q': opt.srq = true; break;
		case 'B': opt.big_qps = (unsigned int)atoi(optarg); break;
		case 'Z': opt.big_size = (uint32_t)atoi(optarg); break;
		case 'C': opt.cut = true; break;
		case 'P': opt.pause_file = optarg; break;
		default: usage(argv[0]);
		}
	}
	if (optind < argc) {
		server = argv[optind];
		side = 1;
	} else {
		role = "server";
		side = 0;
	}
	if (!opt.nqps || opt.nqps > MAX_QPS || opt.depth < 2 ||
	    opt.depth > MAX_DEPTH - 1 || !opt.ops || opt.max_size < 8 ||
	    opt.max_size > 1u << 20 || opt.big_qps > opt.nqps ||
	    !opt.big_size || opt.big_size > BIG_MAX || !opt.rd_atomic ||
	    opt.rd_atomic > 255 || opt.qp_timeout > 31 ||
	    (opt.cut && opt.srq))
		die("bad options: --qps 1..%d, --depth 2..%d, --max-size 8..1 MiB, --big-size 1..%u, --big-qps <= --qps",
		    MAX_QPS, MAX_DEPTH - 1, BIG_MAX);
	deadline = now_s() + opt.timeout;

	qps = calloc(opt.nqps, sizeof(*qps));
	lqpn = calloc(opt.nqps, sizeof(*lqpn));
	lpsn = calloc(opt.nqps, sizeof(*lpsn));
	rqpn = calloc(opt.nqps, sizeof(*rqpn));
	rpsn = calloc(opt.nqps, sizeof(*rpsn));
	req = calloc(opt.nqps, sizeof(*req));
	rsp = calloc(opt.nqps, sizeof(*rsp));
	if (!qps || !lqpn || !lpsn || !rqpn || !rpsn || !req || !rsp)
		die("out of memory");

	setup();
	sock = vt_link(server, opt.port, 300);
	t0 = now_s();
	create_qps();
	t_create = now_s() - t0;
	vt_qpn_index(&qpn_index, lqpn, opt.nqps);

	vt_send(sock, &local, sizeof(local));
	vt_recv(sock, &remote, sizeof(remote), deadline);
	if (remote.nqps != opt.nqps || remote.seed != opt.seed ||
	    remote.depth != opt.depth || remote.ops != opt.ops ||
	    remote.max_size != opt.max_size || remote.big_qps != opt.big_qps ||
	    remote.big_size != opt.big_size)
		die("the other side runs other options (QPs, seed, depth, ops, sizes)");
	vt_swap_qps(sock, lqpn, lpsn, rqpn, rpsn, opt.nqps, deadline);

	t0 = now_s();
	connect_qps();
	t_connect = now_s() - t0;
	post_recvs();
	sync_point(1);
	vt_pause(opt.pause_file, "connected", deadline);
	sync_point(5);

	t_start = t0 = now_s();
	run();
	t_data = now_s() - t0;
	if (opt.cut) {
		/* The side channel went with the link: no more syncs. */
		printf("mr_mixed: OK %s: the link was cut: all %u QPs failed, RETRY_EXC_ERR on the oldest request, then %llu requests and %llu receives flushed in order; %llu ops completed before; the last failure %.2f s after the last success\n",
		       role, opt.nqps, cut_req_flushed, cut_flushed,
		       ops_done, last_fail - last_ok);
		return 0;
	}
	sync_point(2);		/* both sides are done: memory is final */
	final_check();
	sync_point(3);

	t0 = now_s();
	for (unsigned int i = 0; i < opt.nqps; i++)
		if (ibv_destroy_qp(qps[i]))
			die("ibv_destroy_qp #%u: %s", i, strerror(errno));
	t_destroy = now_s() - t0;
	for (unsigned int i = 0; i < ncq; i++)
		if ((srqs[i] && ibv_destroy_srq(srqs[i])) ||
		    ibv_destroy_cq(cqs[i]))
			die("teardown: %s", strerror(errno));
	if (ibv_dereg_mr(mr) || ibv_dealloc_pd(pd) || ibv_close_device(ctx))
		die("teardown: %s", strerror(errno));
	sync_point(4);

	printf("mr_mixed: OK %s: %u QPs x %u ops (depth %u, 1..%u B%s), %llu ops and %llu receives verified in %.2f s (%.0f ops/s), create %.0f us/QP, connect %.0f us/QP, destroy %.0f us/QP\n",
	       role, opt.nqps, opt.ops, opt.depth, opt.max_size,
	       opt.srq ? ", SRQ" : "", ops_done, recvs_done, t_data,
	       (double)ops_done / t_data, t_create * 1e6 / opt.nqps,
	       t_connect * 1e6 / opt.nqps, t_destroy * 1e6 / opt.nqps);
	return 0;
}
