// SPDX-License-Identifier: GPL-2.0-only
/*
 * mr_integrity: a data-integrity exerciser for RC verbs.
 *
 * A client and a server connected by N RC QPs run batches of random
 * operations (SEND, SEND with immediate, RDMA WRITE, WRITE with immediate,
 * RDMA READ, fetch-and-add, compare-and-swap) of random sizes, from 0 bytes
 * to --max-size. Both sides derive every operation, size, offset and byte
 * of payload from the shared seed, so each verifies everything it can see
 * byte for byte without shipping data around:
 *
 *   server: fills the batch's READ sources, posts its receives, sends READY
 *   client: posts the batch on all QPs, waits for every completion, checks
 *           READ data and atomic results, sends DONE
 *   server: checks every WRITE destination, every received SEND (length,
 *           immediate, bytes) and the atomic counter
 *
 * Any failed completion, mismatch or timeout ends the run with exit
 * status 1 and a message saying what differed. QP numbers, PSNs, GIDs,
 * rkeys and addresses are exchanged over TCP (--port).
 *
 *   server: mr_integrity -d DEV [-g GIDX] [options]
 *   client: mr_integrity -d DEV [-g GIDX] [options] SERVER_ADDRESS
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "verbs_tool.h"

#define MAX_QPS		64
#define MAX_BATCH	256
#define CTRL_SIZE	64
#define SQ_DEPTH	512
#define NEVER		0xfedcba9876543211ULL

enum op { OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_FADD,
	  OP_CSWAP, OP_NR };

static const char *op_names[OP_NR] = {
	"SEND", "SEND_IMM", "WRITE", "WRITE_IMM", "READ", "FETCH_ADD",
	"CMP_SWAP"
};

struct opdesc {
	enum op op;
	uint32_t qp;
	uint32_t len;
	uint64_t slot;		/* byte offset of this op's slot */
	uint32_t imm;
	uint64_t add;		/* FETCH_ADD operand / CMP_SWAP swap value */
};

struct conninfo {
	uint32_t qpn[MAX_QPS];
	uint32_t psn[MAX_QPS];
	uint8_t gid[16];
	uint32_t rkey;
	uint64_t addr;
	uint64_t atomic_addr;
};

static struct {
	const char *dev;
	int gidx;
	int port;
	unsigned int nqps;
	unsigned int batches;
	unsigned int batch;
	uint32_t max_size;
	uint64_t seed;
	int timeout;
	bool verbose;
} opt = {
	.dev = NULL, .gidx = 0, .port = 18515, .nqps = 4, .batches = 50,
	.batch = 32, .max_size = 1 << 20, .seed = 1, .timeout = 120,
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qps[MAX_QPS];
static struct ibv_mr *mr;
static uint8_t *mem;		/* [data slots][read scratch][ctrl][atomic] */
static size_t slot_bytes, data_bytes, mem_bytes;
static uint64_t *atomic_word;	/* server: the counter; client: results */
static struct conninfo local, remote;
static int sock = -1;
static uint64_t rng;
static unsigned long long ops_done, bytes_done;
static uint64_t max_counter;	/* sum of every FETCH_ADD of the run */

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mr_integrity: FAIL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t next_rand(void)
{
	uint64_t x = rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* The byte at offset @i of operation @id's payload. */
static uint8_t pattern(uint64_t id, uint64_t i)
{
	uint64_t x = (id + 1) * 0x9e3779b97f4a7c15ULL ^ (i / 8) * 0xbf58476d1ce4e5b9ULL;

	x ^= x >> 31;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 29;
	return (uint8_t)(x >> (8 * (i % 8)));
}

static void fill(uint8_t *p, uint64_t id, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = pattern(id, i);
}

static void check(const uint8_t *p, uint64_t id, uint32_t len,
		  const char *what, unsigned int batch, unsigned int k)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != pattern(id, i))
			die("%s: batch %u op %u: byte %u of %u is 0x%02x, expected 0x%02x",
			    what, batch, k, i, len, p[i], pattern(id, i));
}

/* Sizes: zero, tiny, odd, page-ish and large, all up to max_size. */
static uint32_t pick_len(void)
{
	uint64_t r = next_rand();

	switch (r % 8) {
	case 0:
		return 0;
	case 1:
		return 1 + (uint32_t)(next_rand() % 64);
	case 2:
	case 3:
		return 1 + (uint32_t)(next_rand() % 4096);
	case 4:
	case 5:
		return (uint32_t)(next_rand() % (opt.max_size / 8 + 1));
	default:
		return (uint32_t)(next_rand() % (opt.max_size + 1));
	}
}

/* Both sides generate the same batch from the shared seed. */
static void gen_batch(unsigned int b, struct opdesc *ops)
{
	rng = opt.seed * 1000003 + b + 1;
	for (unsigned int k = 0; k < opt.batch; k++) {
		struct opdesc *o = &ops[k];

		o->op = (enum op)(next_rand() % OP_NR);
		o->qp = (uint32_t)(next_rand() % opt.nqps);
		o->slot = (uint64_t)k * slot_bytes;
		o->len = pick_len();
		o->imm = (uint32_t)next_rand();
		o->add = next_rand() % 1000;
		if (o->op == OP_FADD || o->op == OP_CSWAP)
			o->len = 8;
	}
}

static uint64_t op_id(unsigned int b, unsigned int k)
{
	return ((uint64_t)b << 16 | k) ^ (opt.seed << 40);
}

/* TCP exchange: ours out, theirs in (no time limit). */

static void xchg(void *out, void *in, size_t len)
{
	vt_send(sock, out, len);
	vt_recv(sock, in, len, 0);
}

/* Verbs setup */

static void setup_verbs(void)
{
	ctx = vt_open_device(opt.dev);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4 * SQ_DEPTH * (int)opt.nqps, NULL, NULL, 0);
	if (!pd || !cq)
		die("pd/cq: %s", strerror(errno));

	slot_bytes = (opt.max_size + 63) & ~63ULL;
	if (slot_bytes < CTRL_SIZE)
		slot_bytes = CTRL_SIZE;
	data_bytes = slot_bytes * opt.batch;
	/* data slots, READ scratch (client), ctrl (2 per QP 0), atomics */
	mem_bytes = 2 * data_bytes + 4 * CTRL_SIZE + 8 * MAX_BATCH;
	mem = aligned_alloc(4096, (mem_bytes + 4095) & ~4095ULL);
	if (!mem)
		die("out of memory");
	memset(mem, 0, mem_bytes);
	atomic_word = (uint64_t *)(mem + 2 * data_bytes + 4 * CTRL_SIZE);
	mr = ibv_reg_mr(pd, mem, mem_bytes, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC);
	if (!mr)
		die("ibv_reg_mr: %s", strerror(errno));

	vt_gid(ctx, opt.gidx, local.gid);
	local.rkey = mr->rkey;
	local.addr = (uintptr_t)mem;
	local.atomic_addr = (uintptr_t)atomic_word;
	for (unsigned int i = 0; i < opt.nqps; i++) {
		struct ibv_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = SQ_DEPTH,
				 .max_recv_wr = SQ_DEPTH,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qps[i] = vt_rc_qp(pd, &qa, IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_ATOMIC, i);
		local.qpn[i] = qps[i]->qp_num;
		local.psn[i] = vt_psn();
	}
}

static void connect_qps(void)
{
	struct vt_path p = {
		.mtu = vt_active_mtu(ctx), .sgid_index = opt.gidx,
		.dgid = remote.gid, .rd_atomic = 16, .min_rnr_timer = 1,
		.timeout = 14,
	};

	for (unsigned int i = 0; i < opt.nqps; i++)
		vt_rc_connect(qps[i], &p, remote.qpn[i], remote.psn[i],
			      local.psn[i], i);
}

/* Completions */

/* Wait for @n completions; each must succeed. Receives go to @recv_cb. */
static void wait_cqes(unsigned int n, void (*recv_cb)(struct ibv_wc *))
{
	double deadline = now_s() + opt.timeout;
	struct ibv_wc wc[16];

	while (n) {
		int got = ibv_poll_cq(cq, 16, wc);

		if (got < 0)
			die("ibv_poll_cq: %d", got);
		for (int i = 0; i < got; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				die("completion wr_id %" PRIu64 " opcode %d: %s",
				    wc[i].wr_id, wc[i].opcode,
				    ibv_wc_status_str(wc[i].status));
			if (wc[i].opcode & IBV_WC_RECV) {
				if (recv_cb)
					recv_cb(&wc[i]);
			}
			n--;
		}
		if (!got && now_s() > deadline)
			die("timeout waiting for %u completions", n);
	}
}

static uint8_t *ctrl_buf(int which)
{
	return mem + 2 * data_bytes + which * CTRL_SIZE;
}

static void post_recv(unsigned int qp, uint64_t wr_id, void *addr,
		      uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len,
			       .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (ibv_post_recv(qps[qp], &wr, &bad))
		die("ibv_post_recv: %s", strerror(errno));
}

static void post_ctrl(uint32_t word)
{
	struct ibv_sge sge = { .addr = (uintptr_t)ctrl_buf(0), .length = 4,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = ~0ULL, .sg_list = &sge,
				  .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	memcpy(ctrl_buf(0), &word, 4);
	if (ibv_post_send(qps[0], &wr, &bad))
		die("ibv_post_send ctrl: %s", strerror(errno));
}

static uint32_t ctrl_word;
static struct ibv_wc recv_log[MAX_BATCH + 1];
static unsigned int recv_logged;

static void log_recv(struct ibv_wc *wc)
{
	if (wc->wr_id == ~0ULL) {
		memcpy(&ctrl_word, ctrl_buf(1), 4);
		return;
	}
	if (recv_logged <= MAX_BATCH)
		recv_log[recv_logged++] = *wc;
}

/* Server */

static void server_batch(unsigned int b)
{
	struct opdesc ops[MAX_BATCH];
	unsigned int nrecv = 1, k;

	gen_batch(b, ops);
	memset(mem, 0, data_bytes);
	recv_logged = 0;
	for (k = 0; k < opt.batch; k++) {
		struct opdesc *o = &ops[k];

		if (o->op == OP_READ)
			fill(mem + o->slot, op_id(b, k), o->len);
		if (o->op == OP_SEND || o->op == OP_SEND_IMM ||
		    o->op == OP_WRITE_IMM) {
			post_recv(o->qp, k, mem + o->slot,
				  (uint32_t)slot_bytes);
			nrecv++;
		}
	}
	/* DONE arrives on QP 0 after everything else was completed. */
	post_recv(0, ~0ULL, ctrl_buf(1), CTRL_SIZE);
	post_ctrl(b);			/* READY */
	wait_cqes(1 + nrecv, log_recv);
	if (ctrl_word != (b | 0x80000000u))
		die("server: expected DONE %u, got 0x%x", b, ctrl_word);

	for (unsigned int i = 0; i < recv_logged; i++) {
		struct ibv_wc *wc = &recv_log[i];
		struct opdesc *o = &ops[wc->wr_id];
		bool imm = o->op == OP_SEND_IMM || o->op == OP_WRITE_IMM;

		if (wc->qp_num != qps[o->qp]->qp_num)
			die("batch %u op %" PRIu64 ": receive on QP %u, expected %u",
			    b, wc->wr_id, wc->qp_num, qps[o->qp]->qp_num);
		if (o->op == OP_WRITE_IMM ?
		    wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM :
		    wc->opcode != IBV_WC_RECV)
			die("batch %u op %" PRIu64 ": receive opcode %d for %s",
			    b, wc->wr_id, wc->opcode, op_names[o->op]);
		if (o->op != OP_WRITE_IMM && wc->byte_len != o->len)
			die("batch %u op %" PRIu64 ": received %u bytes, sent %u",
			    b, wc->wr_id, wc->byte_len, o->len);
		if (!!(wc->wc_flags & IBV_WC_WITH_IMM) != imm ||
		    (imm && ntohl(wc->imm_data) != o->imm))
			die("batch %u op %" PRIu64 ": immediate data wrong",
			    b, wc->wr_id);
	}
	for (k = 0; k < opt.batch; k++) {
		struct opdesc *o = &ops[k];

		switch (o->op) {
		case OP_SEND:
		case OP_SEND_IMM:
		case OP_WRITE:
		case OP_WRITE_IMM:
			check(mem + o->slot, op_id(b, k), o->len, op_names[o->op],
			      b, k);
			break;
		default:
			break;
		}
	}
}

/* Client */

static void client_batch(unsigned int b)
{
	struct opdesc ops[MAX_BATCH];
	uint8_t *scratch = mem + data_bytes;
	uint64_t *res = atomic_word + 1;
	unsigned int k, posted = 0;

	gen_batch(b, ops);
	post_recv(0, ~0ULL, ctrl_buf(1), CTRL_SIZE);
	wait_cqes(1, log_recv);
	if (ctrl_word != b)
		die("client: expected READY %u, got 0x%x", b, ctrl_word);
	memset(scratch, 0, data_bytes);
	for (k = 0; k < opt.batch; k++)
		res[k] = ~0ULL;

	for (k = 0; k < opt.batch; k++) {
		struct opdesc *o = &ops[k];
		struct ibv_sge sge = { .lkey = mr->lkey, .length = o->len };
		struct ibv_send_wr wr = { .wr_id = k, .sg_list = &sge,
					  .num_sge = 1,
					  .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		switch (o->op) {
		case OP_SEND:
		case OP_SEND_IMM:
			fill(mem + o->slot, op_id(b, k), o->len);
			sge.addr = (uintptr_t)(mem + o->slot);
			wr.opcode = o->op == OP_SEND ? IBV_WR_SEND :
						       IBV_WR_SEND_WITH_IMM;
			wr.imm_data = htonl(o->imm);
			break;
		case OP_WRITE:
		case OP_WRITE_IMM:
			fill(mem + o->slot, op_id(b, k), o->len);
			sge.addr = (uintptr_t)(mem + o->slot);
			wr.opcode = o->op == OP_WRITE ? IBV_WR_RDMA_WRITE :
						IBV_WR_RDMA_WRITE_WITH_IMM;
			wr.imm_data = htonl(o->imm);
			wr.wr.rdma.remote_addr = remote.addr + o->slot;
			wr.wr.rdma.rkey = remote.rkey;
			break;
		case OP_READ:
			sge.addr = (uintptr_t)(scratch + o->slot);
			wr.opcode = IBV_WR_RDMA_READ;
			wr.wr.rdma.remote_addr = remote.addr + o->slot;
			wr.wr.rdma.rkey = remote.rkey;
			break;
		case OP_FADD:
		case OP_CSWAP:
			sge.addr = (uintptr_t)&res[k];
			wr.opcode = o->op == OP_FADD ?
				    IBV_WR_ATOMIC_FETCH_AND_ADD :
				    IBV_WR_ATOMIC_CMP_AND_SWP;
			wr.wr.atomic.remote_addr = remote.atomic_addr;
			wr.wr.atomic.rkey = remote.rkey;
			/*
			 * CMP_SWAP compares with a value the counter never
			 * holds: it must return the counter and leave it.
			 */
			wr.wr.atomic.compare_add = o->op == OP_FADD ?
						   o->add : NEVER;
			wr.wr.atomic.swap = o->add;
			break;
		default:
			break;
		}
		if (o->len == 0)
			sge.addr = (uintptr_t)mem;
		if (ibv_post_send(qps[o->qp], &wr, &bad))
			die("ibv_post_send %s: %s", op_names[o->op],
			    strerror(errno));
		posted++;
		ops_done++;
		bytes_done += o->len;
	}
	wait_cqes(posted, log_recv);

	for (k = 0; k < opt.batch; k++) {
		struct opdesc *o = &ops[k];

		if (o->op == OP_READ)
			check(scratch + o->slot, op_id(b, k), o->len, "READ",
			      b, k);
		/* Every atomic saw the counter somewhere in its history. */
		if ((o->op == OP_FADD || o->op == OP_CSWAP) &&
		    res[k] > max_counter)
			die("batch %u op %u: %s returned %" PRIu64
			    ", more than the counter can reach (%" PRIu64 ")",
			    b, k, op_names[o->op], res[k], max_counter);
		if (o->op == OP_FADD || o->op == OP_CSWAP)
			res[k] = ~0ULL;
	}
	post_ctrl(b | 0x80000000u);	/* DONE */
	wait_cqes(1, NULL);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "device", 1, NULL, 'd' }, { "gid-index", 1, NULL, 'g' },
		{ "port", 1, NULL, 'p' }, { "qps", 1, NULL, 'q' },
		{ "batches", 1, NULL, 'n' }, { "batch", 1, NULL, 'b' },
		{ "max-size", 1, NULL, 'm' }, { "seed", 1, NULL, 's' },
		{ "timeout", 1, NULL, 't' }, { "verbose", 0, NULL, 'v' },
		{ }
	};
	const char *server = NULL;
	double t0;
	int c;

	while ((c = getopt_long(argc, argv, "d:g:p:q:n:b:m:s:t:v", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'd': opt.dev = optarg; break;
		case 'g': opt.gidx = atoi(optarg); break;
		case 'p': opt.port = atoi(optarg); break;
		case 'q': opt.nqps = (unsigned int)atoi(optarg); break;
		case 'n': opt.batches = (unsigned int)atoi(optarg); break;
		case 'b': opt.batch = (unsigned int)atoi(optarg); break;
		case 'm': opt.max_size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 's': opt.seed = strtoull(optarg, NULL, 0); break;
		case 't': opt.timeout = atoi(optarg); break;
		case 'v': opt.verbose = true; break;
		default:
			fprintf(stderr, "usage: %s [-d dev] [-g gidx] [-p port] [-q qps] [-n batches] [-b batch] [-m max-size] [-s seed] [-t timeout] [server]\n",
				argv[0]);
			return 2;
		}
	}
	if (optind < argc)
		server = argv[optind];
	if (!opt.nqps || opt.nqps > MAX_QPS || !opt.batch ||
	    opt.batch > MAX_BATCH || opt.batch > SQ_DEPTH / 2)
		die("bad --qps or --batch");

	setup_verbs();
	sock = vt_link(server, opt.port, 100);
	xchg(&local, &remote, sizeof(local));
	connect_qps();
	{
		char go = 1, peer_go;

		xchg(&go, &peer_go, 1);
	}

	for (unsigned int b = 0; b < opt.batches; b++) {
		struct opdesc ops[MAX_BATCH];

		gen_batch(b, ops);
		for (unsigned int k = 0; k < opt.batch; k++)
			if (ops[k].op == OP_FADD)
				max_counter += ops[k].add;
	}
	t0 = now_s();
	for (unsigned int b = 0; b < opt.batches; b++) {
		if (server)
			client_batch(b);
		else
			server_batch(b);
		if (opt.verbose)
			fprintf(stderr, "batch %u ok\n", b);
	}
	/* Every FETCH_ADD exactly once, no CMP_SWAP took effect. */
	if (!server && *atomic_word != max_counter)
		die("atomic counter is %" PRIu64 ", expected %" PRIu64,
		    *atomic_word, max_counter);
	{
		char ok = 1, peer_ok = 0;

		xchg(&ok, &peer_ok, 1);
		if (peer_ok != 1)
			die("peer did not finish");
	}
	printf("mr_integrity: OK %s: %u batches, %llu ops, %llu bytes, %u QPs, %.1f s\n",
	       server ? "client" : "server", opt.batches, ops_done,
	       bytes_done, opt.nqps, now_s() - t0);
	return 0;
}
