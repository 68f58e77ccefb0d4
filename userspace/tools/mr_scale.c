// SPDX-License-Identifier: GPL-2.0-only
/*
 * mr_scale: many RC QPs between two hosts, all connected and all moving
 * data at once, every byte verified.
 *
 * Each side creates --qps RC QPs (default 4000) on one PD and CQ, and the
 * two exchange QP numbers, PSNs, GID, rkey and buffer address over TCP.
 * Then, for each of --rounds rounds, the client posts on every QP an RDMA
 * WRITE of --size bytes into that QP's slot of the server's buffer,
 * followed by a SEND with immediate (the QP's index and the round) that
 * tells the server the slot is complete (RC keeps the two in order). The
 * client posts all QPs' work before it polls anything, so all of them are
 * in flight together. The server waits for every QP's SEND, checks that it
 * came on the QP it names, and checks every slot byte for byte against the
 * pattern both sides derive from the seed, the round and the QP.
 *
 * The phases are timed on each side and reported on one line:
 *
 *   mr_scale: OK client: 4000 QPs, 2 rounds of 4096 B, create 312 us/QP,
 *   connect 455 us/QP, data 3.1 s (5.2 MB/s), destroy 120 us/QP
 *
 * Any failed verbs call or completion, a mismatch or a timeout ends the run
 * with exit status 1 and a message saying what went wrong. Between phases
 * the two sides synchronise over TCP; with --pause-file F, both sides
 * write "connected" to F when every QP is connected and wait for F to be
 * removed before moving data (so a test can measure memory then).
 *
 *   server: mr_scale -d DEV [-g GIDX] [options]
 *   client: mr_scale -d DEV [-g GIDX] [options] SERVER_ADDRESS
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

#define MAX_QPS		16384
#define MAX_ROUNDS	1000
#define POLL_BATCH	64

struct peerinfo {
	uint8_t gid[16];
	uint32_t rkey;
	uint32_t nqps;
	uint64_t addr;
	uint64_t seed;
};

static struct {
	const char *dev;
	int gidx;
	int port;
	unsigned int nqps;
	unsigned int rounds;
	uint32_t size;
	uint64_t seed;
	int timeout;
	const char *pause_file;
} opt = {
	.gidx = 0, .port = 18600, .nqps = 4000, .rounds = 2, .size = 4096,
	.seed = 1, .timeout = 600,
};

static const char *role = "client";
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp **qps;
static struct ibv_mr *mr;
static uint8_t *mem;
static size_t mem_bytes;
static uint32_t *lqpn, *lpsn, *rqpn, *rpsn;
static struct peerinfo local, remote;
static int sock = -1;
static double deadline;

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mr_scale: FAIL %s: ", role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* The 64-bit word @w of QP @qp's slot in round @r. */
static uint64_t pattern(unsigned int r, unsigned int qp, uint64_t w)
{
	uint64_t x = opt.seed * 0x9e3779b97f4a7c15ULL ^
		     ((uint64_t)r << 48 | (uint64_t)qp << 24) ^
		     w * 0xbf58476d1ce4e5b9ULL;

	x ^= x >> 31;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 29;
	return x;
}

static uint8_t pattern_byte(unsigned int r, unsigned int qp, uint64_t i)
{
	return (uint8_t)(pattern(r, qp, i / 8) >> (8 * (i % 8)));
}

static uint8_t *slot(unsigned int qp)
{
	return mem + (size_t)qp * opt.size;
}

/* Both sides reach the same point; @what names it in a failure. */
static void sync_point(uint32_t what)
{
	vt_sync(sock, what, deadline);
}

/* Verbs */

static void open_device(void)
{
	ctx = vt_open_device(opt.dev);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd: %s", strerror(errno));
	/* A SEND completion per QP per round, on either side. */
	cq = ibv_create_cq(ctx, (int)opt.nqps + POLL_BATCH, NULL, NULL, 0);
	if (!cq)
		die("ibv_create_cq %u: %s", opt.nqps + POLL_BATCH,
		    strerror(errno));
	mem_bytes = ((size_t)opt.nqps * opt.size + 4095) & ~(size_t)4095;
	mem = aligned_alloc(4096, mem_bytes);
	if (!mem)
		die("out of memory");
	memset(mem, 0, mem_bytes);
	mr = ibv_reg_mr(pd, mem, mem_bytes, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		die("ibv_reg_mr: %s", strerror(errno));
	vt_gid(ctx, opt.gidx, local.gid);
	local.rkey = mr->rkey;
	local.addr = (uintptr_t)mem;
	local.nqps = opt.nqps;
	local.seed = opt.seed;
}

static void create_qps(void)
{
	for (unsigned int i = 0; i < opt.nqps; i++) {
		struct ibv_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 2, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qps[i] = vt_rc_qp(pd, &qa, IBV_ACCESS_REMOTE_WRITE, i);
		lqpn[i] = qps[i]->qp_num;
		lpsn[i] = vt_psn();
	}
}

static void connect_qps(void)
{
	struct vt_path p = {
		.mtu = vt_active_mtu(ctx), .sgid_index = opt.gidx,
		.dgid = remote.gid, .min_rnr_timer = 1, .timeout = 14,
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

static void post_recvs(void)
{
	for (unsigned int i = 0; i < opt.nqps; i++) {
		struct ibv_recv_wr wr = { .wr_id = i }, *bad;

		if (ibv_post_recv(qps[i], &wr, &bad))
			die("ibv_post_recv #%u: %s", i, strerror(errno));
	}
}

/* Wait for @n completions; @seen counts them per QP (server: receives). */
static void reap(unsigned int n, unsigned int round, uint8_t *seen)
{
	struct ibv_wc wc[POLL_BATCH];

	while (n) {
		int got = ibv_poll_cq(cq, POLL_BATCH, wc);

		if (got < 0)
			die("ibv_poll_cq: %d", got);
		if (!got) {
			if (now_s() > deadline)
				die("round %u: timed out with %u completions missing",
				    round, n);
			continue;
		}
		for (int k = 0; k < got; k++) {
			int64_t qp = qp_index(wc[k].qp_num);

			if (wc[k].status != IBV_WC_SUCCESS)
				die("round %u: QP %" PRIu64 " completion %s (%d)",
				    round, wc[k].wr_id,
				    ibv_wc_status_str(wc[k].status),
				    wc[k].status);
			if (qp < 0 || (uint64_t)qp != wc[k].wr_id)
				die("round %u: completion for wr_id %" PRIu64
				    " came on QP number %u (index %" PRId64 ")",
				    round, wc[k].wr_id, wc[k].qp_num, qp);
			if (seen) {
				uint32_t want = (uint32_t)qp << 10 | round;

				if (wc[k].opcode != IBV_WC_RECV ||
				    !(wc[k].wc_flags & IBV_WC_WITH_IMM) ||
				    ntohl(wc[k].imm_data) != want)
					die("round %u: QP %" PRId64 ": opcode %d, flags 0x%x, imm 0x%x, expected a SEND with imm 0x%x",
					    round, qp, wc[k].opcode,
					    wc[k].wc_flags,
					    ntohl(wc[k].imm_data), want);
				if (seen[qp]++)
					die("round %u: QP %" PRId64 " received twice",
					    round, qp);
			}
		}
		n -= (unsigned int)got;
	}
}

static void client_round(unsigned int r)
{
	for (unsigned int i = 0; i < opt.nqps; i++) {
		uint64_t *w = (uint64_t *)slot(i);

		for (uint64_t k = 0; k < opt.size / 8; k++)
			w[k] = pattern(r, i, k);
		for (uint64_t k = opt.size & ~7u; k < opt.size; k++)
			slot(i)[k] = pattern_byte(r, i, k);
	}
	for (unsigned int i = 0; i < opt.nqps; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)slot(i), .length = opt.size,
			.lkey = mr->lkey,
		};
		struct ibv_send_wr send = {
			.wr_id = i, .opcode = IBV_WR_SEND_WITH_IMM,
			.send_flags = IBV_SEND_SIGNALED,
			.imm_data = htonl(i << 10 | r),
		};
		struct ibv_send_wr write = {
			.wr_id = i, .next = &send, .sg_list = &sge,
			.num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.wr.rdma = {
				.remote_addr = remote.addr + (uint64_t)i * opt.size,
				.rkey = remote.rkey,
			},
		}, *bad;

		if (ibv_post_send(qps[i], &write, &bad))
			die("round %u: ibv_post_send on QP %u: %s", r, i,
			    strerror(errno));
	}
	reap(opt.nqps, r, NULL);
}

static void server_round(unsigned int r, uint8_t *seen)
{
	memset(seen, 0, opt.nqps);
	reap(opt.nqps, r, seen);
	for (unsigned int i = 0; i < opt.nqps; i++)
		for (uint64_t k = 0; k < opt.size; k++)
			if (slot(i)[k] != pattern_byte(r, i, k))
				die("round %u: QP %u: byte %" PRIu64
				    " of %u is 0x%02x, expected 0x%02x", r, i,
				    k, opt.size, slot(i)[k],
				    pattern_byte(r, i, k));
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ib-dev", 1, NULL, 'd' }, { "gid-index", 1, NULL, 'g' },
		{ "port", 1, NULL, 'p' }, { "qps", 1, NULL, 'q' },
		{ "rounds", 1, NULL, 'r' }, { "size", 1, NULL, 's' },
		{ "seed", 1, NULL, 'S' }, { "timeout", 1, NULL, 't' },
		{ "pause-file", 1, NULL, 'P' }, { NULL, 0, NULL, 0 }
	};
	double t0, t_create, t_connect, t_data, t_destroy;
	const char *server = NULL;
	uint8_t *seen = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "d:g:p:q:r:s:S:t:P:", lo,
				NULL)) != -1) {
		switch (c) {
		case 'd': opt.dev = optarg; break;
		case 'g': opt.gidx = atoi(optarg); break;
		case 'p': opt.port = atoi(optarg); break;
		case 'q': opt.nqps = (unsigned int)atoi(optarg); break;
		case 'r': opt.rounds = (unsigned int)atoi(optarg); break;
		case 's': opt.size = (uint32_t)atoi(optarg); break;
		case 'S': opt.seed = strtoull(optarg, NULL, 0); break;
		case 't': opt.timeout = atoi(optarg); break;
		case 'P': opt.pause_file = optarg; break;
		default:
			fprintf(stderr, "usage: %s [-d dev] [-g gidx] [-p port] [-q qps] [-r rounds] [-s size] [-S seed] [-t timeout] [-P pause-file] [server]\n",
				argv[0]);
			return 2;
		}
	}
	if (optind < argc)
		server = argv[optind];
	else
		role = "server";
	if (!opt.nqps || opt.nqps > MAX_QPS || !opt.rounds ||
	    opt.rounds > MAX_ROUNDS || !opt.size || opt.size > 1u << 20)
		die("bad --qps (1..%d), --rounds (1..%d) or --size (1..1 MiB)",
		    MAX_QPS, MAX_ROUNDS);
	deadline = now_s() + opt.timeout;

	qps = calloc(opt.nqps, sizeof(*qps));
	lqpn = calloc(opt.nqps, sizeof(*lqpn));
	lpsn = calloc(opt.nqps, sizeof(*lpsn));
	rqpn = calloc(opt.nqps, sizeof(*rqpn));
	rpsn = calloc(opt.nqps, sizeof(*rpsn));
	seen = calloc(opt.nqps, 1);
	if (!qps || !lqpn || !lpsn || !rqpn || !rpsn || !seen)
		die("out of memory");

	open_device();
	sock = vt_link(server, opt.port, 300);
	t0 = now_s();
	create_qps();
	t_create = now_s() - t0;
	vt_qpn_index(&qpn_index, lqpn, opt.nqps);

	vt_send(sock, &local, sizeof(local));
	vt_recv(sock, &remote, sizeof(remote), deadline);
	if (remote.nqps != opt.nqps || remote.seed != opt.seed)
		die("the other side runs %u QPs with seed %" PRIu64
		    ", this one %u with seed %" PRIu64, remote.nqps,
		    remote.seed, opt.nqps, opt.seed);
	vt_swap_qps(sock, lqpn, lpsn, rqpn, rpsn, opt.nqps, deadline);

	t0 = now_s();
	connect_qps();
	t_connect = now_s() - t0;
	sync_point(1);
	vt_pause(opt.pause_file, "connected", deadline);
	sync_point(2);

	t0 = now_s();
	for (unsigned int r = 0; r < opt.rounds; r++) {
		if (server) {
			sync_point(100 + r);	/* the server's receives are up */
			client_round(r);
		} else {
			post_recvs();
			sync_point(100 + r);
			server_round(r, seen);
		}
		sync_point(10000 + r);		/* verified: the next may go */
	}
	t_data = now_s() - t0;

	t0 = now_s();
	for (unsigned int i = 0; i < opt.nqps; i++)
		if (ibv_destroy_qp(qps[i]))
			die("ibv_destroy_qp #%u: %s", i, strerror(errno));
	t_destroy = now_s() - t0;
	if (ibv_dereg_mr(mr) || ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) ||
	    ibv_close_device(ctx))
		die("teardown: %s", strerror(errno));
	sync_point(3);

	printf("mr_scale: OK %s: %u QPs, %u rounds of %u B, create %.0f us/QP, connect %.0f us/QP, data %.2f s (%.2f MB/s), destroy %.0f us/QP\n",
	       role, opt.nqps, opt.rounds, opt.size,
	       t_create * 1e6 / opt.nqps, t_connect * 1e6 / opt.nqps, t_data,
	       (double)opt.nqps * opt.rounds * opt.size / t_data / 1e6,
	       t_destroy * 1e6 / opt.nqps);
	vt_qpn_index_free(&qpn_index);
	free(seen);
	free(qps);
	free(mem);
	return 0;
}
