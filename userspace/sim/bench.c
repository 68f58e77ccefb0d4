// SPDX-License-Identifier: GPL-2.0-only
/*
 * mrbench: engine memory and CPU cost per packet.
 *
 * Two connections back to back (no fabric, no loss), one RC QP pair
 * streaming 64 KiB WRITEs with 4 KiB packets. bench_loop() runs the whole
 * data path of both ends: segmenting, header encoding, path choice, wire
 * decoding, SACK/DSN bookkeeping, placement accounting, ACK coalescing and
 * encoding, ACK processing, congestion control and completions. The glue
 * copies only headers. Run it under `valgrind --tool=callgrind
 * --toggle-collect=bench_loop` to count instructions; it also prints its
 * own wall-clock time per packet.
 *
 *   mrbench [packets]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <metaroce/mr_engine.h>

#define QLEN	65536
#define HMAX	1024

struct bpkt {
	u32 hlen, plen;
	u8 hdr[HMAX];
};

struct bend {
	struct mr_conn c;
	struct mr_seg segs[4096];
	struct mr_qp qp;
	struct mr_qp_slots slots;
	struct bend *peer;
	struct bpkt *q;		/* packets in flight to this end */
	u32 head, tail;
	u64 done_bytes;
	u32 out;
};

static struct bend A, B;
static u64 now, data_pkts, ack_pkts;

static int b_xmit(void *env, struct mr_conn *c, const struct mr_txpkt *t)
{
	struct bend *e = env, *to = e->peer;
	struct bpkt *p;

	(void)c;
	if (to->tail - to->head >= QLEN || t->hlen > HMAX)
		return -1;
	p = &to->q[to->tail++ % QLEN];
	p->hlen = t->hlen;
	p->plen = t->plen;
	memcpy(p->hdr, t->hdr, t->hlen);
	return 0;
}

static void b_complete(void *env, struct mr_qp *qp, const struct mr_cqe *cqe)
{
	struct bend *e = env;

	(void)qp;
	if (cqe->opcode == MR_WR_WRITE) {
		e->done_bytes += cqe->byte_len;
		e->out--;
	}
}

static void b_qp_error(void *env, struct mr_qp *qp, int status)
{
	(void)env;
	(void)qp;
	fprintf(stderr, "mrbench: qp error %d\n", status);
	exit(1);
}

static int b_bind(void *env, struct mr_qp *qp, u32 ssn, u64 *cookie, u32 *len)
{
	(void)env;
	(void)qp;
	(void)ssn;
	(void)cookie;
	(void)len;
	return -1;
}

static int b_exec(void *env, struct mr_qp *qp, const struct mr_hdr *req,
		  u64 *res)
{
	(void)env;
	(void)qp;
	(void)req;
	(void)res;
	return MR_RXS_INVALID;
}

static struct mr_qp *b_lookup(void *env, struct mr_conn *c, u32 qpn)
{
	struct bend *e = env;

	(void)c;
	return e->qp.qpn == qpn ? &e->qp : NULL;
}

/* The receiver's challenge (a fixed mix: nothing here is hostile). */
static u64 b_cookie(void *env, struct mr_conn *c, u32 epoch, int prev)
{
	u64 x = 0x9e3779b97f4a7c15ull ^ ((u64)(uintptr_t)env << 16) ^ epoch;

	(void)c;
	if (prev)
		return 0;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x ? x : 1;
}

static const struct mr_env_ops ops = {
	.xmit = b_xmit,
	.complete = b_complete,
	.qp_error = b_qp_error,
	.bind_recv = b_bind,
	.execute = b_exec,
	.lookup_qp = b_lookup,
	.cookie = b_cookie,
};

static void post(struct bend *e)
{
	struct mr_wr wr;

	while (e->out < 16 && mr_qp_can_post(&e->qp)) {
		memset(&wr, 0, sizeof(wr));
		wr.opcode = MR_WR_WRITE;
		wr.len = 64 << 10;
		wr.rkey = 1;
		if (mr_qp_post(&e->qp, &wr, now))
			break;
		e->out++;
	}
}

static void drain(struct bend *e)
{
	struct mr_hdr h;
	struct mr_ack ack;
	struct mr_rx rx;

	while (e->head != e->tail) {
		struct bpkt *p = &e->q[e->head++ % QLEN];
		struct mr_qp *qp = NULL;

		if (mr_wire_decode(p->hdr, p->hlen + p->plen, &h, &ack) < 0)
			continue;
		if (h.opcode == MR_OP_ACK)
			ack_pkts++;
		else
			qp = b_lookup(e, &e->c, h.dst_qpn);
		mr_conn_rx(&e->c, qp, &h, &ack, 0, now, &rx);
		if (rx.action == MR_RXA_WRITE) {
			data_pkts++;
			mr_conn_rx_done(&e->c, &h, &rx, MR_RXS_OK, 0, now);
		} else if (rx.action != MR_RXA_NONE && rx.action != MR_RXA_DROP) {
			mr_conn_rx_done(&e->c, &h, &rx, MR_RXS_INVALID, 0, now);
		}
	}
	mr_conn_rx_flush(&e->c, now);
}

/* The measured region: everything both engines do for @n data packets. */
__attribute__((noinline)) void bench_loop(u64 n);
__attribute__((noinline)) void bench_loop(u64 n)
{
	while (data_pkts < n) {
		now += 1000;
		post(&A);
		mr_conn_tx(&A.c, now, 64);
		drain(&B);
		drain(&A);
		if (mr_conn_next_timer(&A.c) <= now)
			mr_conn_timer(&A.c, now);
		if (mr_conn_next_timer(&B.c) <= now)
			mr_conn_timer(&B.c, now);
	}
}

static void setup(struct bend *e, struct bend *peer, u32 epoch, u32 qpn,
		  u32 dqpn)
{
	struct mr_conn_cfg cfg;
	struct mr_qp_attr at;

	mr_conn_cfg_default(&cfg);
	cfg.mtu = 4096;
	cfg.seg_wnd = 4096;
	cfg.init_window = 4 << 20;
	cfg.max_window = 4 << 20;
	cfg.min_window = 4096;
	e->peer = peer;
	e->q = calloc(QLEN, sizeof(*e->q));
	if (!e->q || mr_conn_init(&e->c, &cfg, e->segs, &ops, e, epoch, epoch, 0))
		exit(1);
	mr_qp_init_slots(&e->qp, qpn, &e->slots);
	memset(&at, 0, sizeof(at));
	at.dest_qpn = dqpn;
	at.sq_psn = 1;
	at.rq_psn = 1;
	at.seg_size = 4096;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.max_rd_atomic = 1;
	at.max_dest_rd_atomic = 1;
	if (mr_qp_connect(&e->qp, &e->c, &at, 0) || mr_qp_rts(&e->qp, &at, 0))
		exit(1);
}

int main(int argc, char **argv)
{
	u64 n = argc > 1 ? strtoull(argv[1], NULL, 0) : 200000;
	struct timespec t0, t1;
	double ns;

	setup(&A, &B, 0x11111111, 0x100, 0x200);
	setup(&B, &A, 0x22222222, 0x200, 0x100);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	bench_loop(n);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
	printf("packets=%llu acks=%llu ns_per_pkt=%.1f\n",
	       (unsigned long long)data_pkts, (unsigned long long)ack_pkts,
	       ns / data_pkts);
	printf("sizeof_conn=%zu sizeof_path=%zu sizeof_rpath=%zu sizeof_seg=%zu sizeof_qp=%zu sizeof_msg=%zu sizeof_rmsg=%zu msg_wnd=%d\n",
	       sizeof(struct mr_conn), sizeof(struct mr_path),
	       sizeof(struct mr_rpath), sizeof(struct mr_seg),
	       sizeof(struct mr_qp), sizeof(struct mr_msg),
	       sizeof(struct mr_rmsg), MR_MSG_WND);
	free(A.q);
	free(B.q);
	return 0;
}
