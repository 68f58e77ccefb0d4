// SPDX-License-Identifier: GPL-2.0-only
/*
 * End-to-end engine tests over the two-host harness: every verbs operation,
 * with and without loss, verifying every byte.
 */
#include <string.h>
#include "harness.h"
#include "tap.h"

#define MEM (8u << 20)
#define SEC 1000000000ull

static void fill(struct h_net *n, int h, u64 off, u32 len, u32 seed)
{
	u32 i;

	for (i = 0; i < len; i++)
		n->host[h].mem[off + i] = (u8)(seed * 131 + i * 7 + (i >> 8));
}

static int same(struct h_net *n, int ha, u64 a, int hb, u64 b, u32 len)
{
	return !memcmp(n->host[ha].mem + a, n->host[hb].mem + b, len);
}

static struct h_net *net(u32 loss_ppm, u32 ea, u32 eb)
{
	struct h_net *n = h_net_new(NULL, MEM, 42 + loss_ppm + ea, ea, eb);

	n->link[0].loss_ppm = loss_ppm;
	n->link[1].loss_ppm = loss_ppm;
	return n;
}

static void write_test(u32 loss_ppm, u32 len, const char *name)
{
	struct h_net *n = net(loss_ppm, 0x1234, 0x9876);
	int ok;

	h_connect(n, 0, 100, 200);
	fill(n, 0, 0, len, 1);
	h_post(n, 0, 0, MR_WR_WRITE, 0, len, 4u << 20, 0);
	ok = h_run(n, 60 * SEC) == 0;
	tap_ok(ok && n->host[0].wrs[0].cqe.status == MR_WC_OK,
	       "%s: completes (t=%llu us, retx sack=%llu rto=%llu)", name,
	       (unsigned long long)n->now / 1000,
	       (unsigned long long)n->host[0].conn.stats[MR_ST_RETX_SACK],
	       (unsigned long long)n->host[0].conn.stats[MR_ST_RETX_RTO]);
	tap_ok(same(n, 0, 0, 1, 4u << 20, len), "%s: data intact", name);
	h_net_free(n);
}

static void send_test(u32 loss_ppm, const char *name)
{
	struct h_net *n = net(loss_ppm, 0xfffffff0, 7);
	u32 i, cnt = 200, ok = 1, nrecv = 0;

	h_connect(n, 0, 0xfffff0, 5);
	for (i = 0; i < cnt; i++)
		h_post_recv(n, 1, 0, (1u << 20) + i * 8192, 8192);
	for (i = 0; i < cnt; i++) {
		u32 len = (i * 977) % 8193;

		fill(n, 0, i * 8192, len, i);
		h_post(n, 0, 0, i % 3 ? MR_WR_SEND : MR_WR_SEND_IMM,
		       i * 8192, len, 0, 0xabc00000 + i);
	}
	if (h_run(n, 60 * SEC))
		ok = 0;
	for (i = 0; i < cnt; i++) {
		u32 len = (i * 977) % 8193;

		if (!same(n, 0, i * 8192, 1, (1u << 20) + i * 8192, len))
			ok = 0;
	}
	for (i = 0; i < n->host[1].ncqe; i++) {
		struct mr_cqe *c = &n->host[1].cqes[i];

		if (c->opcode != MR_WC_RECV)
			continue;
		/* receives complete in order, with the right length/imm */
		if (H_COOKIE_SSN(c->cookie) != nrecv || c->byte_len !=
		    (nrecv * 977) % 8193 ||
		    c->imm_valid != !!(nrecv % 3 == 0) ||
		    (c->imm_valid && c->imm != 0xabc00000 + nrecv))
			ok = 0;
		nrecv++;
	}
	tap_ok(ok && nrecv == cnt, "%s: %u sends land in order, intact (recv %u)",
	       name, cnt, nrecv);
	h_net_free(n);
}

static void read_atomic_test(u32 loss_ppm, const char *name)
{
	struct h_net *n = net(loss_ppm, 1, 2);
	u64 v, *ctr;
	int ok = 1;
	u32 i;

	h_connect(n, 0, 0xfffffe, 0);
	fill(n, 1, 0, 3u << 20, 9);
	h_post(n, 0, 0, MR_WR_READ, 4u << 20, 3u << 20, 0, 0);
	ctr = (u64 *)(n->host[1].mem + (7u << 20));
	*ctr = 1000;
	for (i = 0; i < 50; i++)
		h_post_atomic(n, 0, 0, MR_WR_FETCH_ADD, 0x780000 + 8 * i,
			      7u << 20, 3, 0);
	h_post_atomic(n, 0, 0, MR_WR_CMP_SWAP, 0x7f0000, 7u << 20, 42,
		      1000 + 150);
	if (h_run(n, 60 * SEC))
		ok = 0;
	tap_ok(ok && same(n, 1, 0, 0, 4u << 20, 3u << 20),
	       "%s: READ 3MiB intact", name);
	memcpy(&v, n->host[0].mem + 0x7f0000, 8);
	tap_ok(*ctr == 42 && v == 1150,
	       "%s: 50 fetch-add then cmp-swap exactly once (ctr=%llu old=%llu)",
	       name, (unsigned long long)*ctr, (unsigned long long)v);
	h_net_free(n);
}

/*
 * Host B restarts (a new connection object, new epoch, new QP) while host
 * A's connection lives on with its SYN long cleared: B answers A's
 * packets with a challenge (RESET), A announces its epoch again (SYN with
 * its data base and B's cookie) and the transfer completes.
 */
static void restart_test(u32 loss_ppm, const char *name)
{
	struct h_net *n = net(loss_ppm, 0x7000, 0x9000);
	struct h_host *b = &n->host[1];
	struct mr_qp_attr a;
	struct mr_conn_cfg cfg;
	struct mr_qp *qa = &n->host[0].qps[0].qp, *qb = &b->qps[0].qp;
	int k, ok;

	h_connect(n, 0, 100, 200);
	fill(n, 0, 0, 65536, 3);
	h_post(n, 0, 0, MR_WR_WRITE, 0, 65536, 4u << 20, 0);
	ok = h_run(n, 10 * SEC) == 0 && !n->host[0].conn.syn;
	/* B comes back with nothing: new epoch, its QP connected afresh. */
	mr_qp_detach(qb);
	cfg = b->conn.cfg;
	if (mr_conn_init(&b->conn, &cfg, b->segs, &h_ops, b, 0xb0b0, 77,
			 n->now))
		abort();
	a = qb->attr;
	a.rq_psn = qa->sq_nxt;
	a.sq_psn = qa->attr.rq_psn + 0;
	mr_qp_init(qb, qb->qpn, qb->sq, qb->sq_slots, qb->rq);
	if (mr_qp_connect(qb, &b->conn, &a, n->now) ||
	    mr_qp_rts(qb, &a, n->now))
		abort();
	fill(n, 0, 65536, 65536, 4);
	k = h_post(n, 0, 0, MR_WR_WRITE, 65536, 65536, (4u << 20) + 65536, 0);
	ok = ok && h_run(n, 10 * SEC) == 0 &&
	     n->host[0].wrs[k].cqe.status == MR_WC_OK;
	tap_ok(ok && b->conn.stats[MR_ST_TX_RESETS] &&
	       n->host[0].conn.stats[MR_ST_RX_RESETS] &&
	       b->conn.rx_epoch == n->host[0].conn.epoch,
	       "%s: a restarted receiver resynchronises the sender (RESETs %llu/%llu)",
	       name, (unsigned long long)b->conn.stats[MR_ST_TX_RESETS],
	       (unsigned long long)n->host[0].conn.stats[MR_ST_RX_RESETS]);
	tap_ok(same(n, 0, 65536, 1, (4u << 20) + 65536, 65536),
	       "%s: data after the restart intact", name);
	h_net_free(n);
}

/*
 * Host A (the sender) restarts while B's view of A's old epoch is live: A's
 * new epoch has no cookie yet, so A sends its hello, B refuses it and
 * challenges A; A's SYNs then carry B's cookie and B adopts the new epoch
 * once the old one has been quiet for epoch_quiet_ns.
 */
static void sender_restart_test(const char *name)
{
	struct h_net *n = net(0, 0x7100, 0x9100);
	struct h_host *a = &n->host[0], *b = &n->host[1];
	struct mr_qp *qa = &a->qps[0].qp, *qb = &b->qps[0].qp;
	struct mr_qp_attr at;
	struct mr_conn_cfg cfg;
	int k, ok;

	h_connect(n, 0, 100, 200);
	fill(n, 0, 0, 65536, 5);
	h_post(n, 0, 0, MR_WR_WRITE, 0, 65536, 4u << 20, 0);
	ok = h_run(n, 10 * SEC) == 0 && b->conn.rx_epoch == 0x7100;
	mr_qp_detach(qa);
	cfg = a->conn.cfg;
	if (mr_conn_init(&a->conn, &cfg, a->segs, &h_ops, a, 0xa0a0, 78,
			 n->now))
		abort();
	at = qa->attr;
	at.rq_psn = qb->sq_nxt;
	at.sq_psn = qb->rq_msn;
	mr_qp_init(qa, qa->qpn, qa->sq, qa->sq_slots, qa->rq);
	if (mr_qp_connect(qa, &a->conn, &at, n->now) ||
	    mr_qp_rts(qa, &at, n->now))
		abort();
	fill(n, 0, 65536, 65536, 6);
	k = h_post(n, 0, 0, MR_WR_WRITE, 65536, 65536, (4u << 20) + 65536, 0);
	ok = ok && h_run(n, 10 * SEC) == 0 &&
	     a->wrs[k].cqe.status == MR_WC_OK;
	tap_ok(ok && b->conn.rx_epoch == 0xa0a0 &&
	       b->conn.stats[MR_ST_TX_RESETS] &&
	       a->conn.stats[MR_ST_RX_RESETS] &&
	       a->conn.cookie == h_cookie(b, 0xa0a0, 0),
	       "%s: B takes A's new epoch once A answers B's challenge (RESETs %llu/%llu)",
	       name, (unsigned long long)b->conn.stats[MR_ST_TX_RESETS],
	       (unsigned long long)a->conn.stats[MR_ST_RX_RESETS]);
	tap_ok(same(n, 0, 65536, 1, (4u << 20) + 65536, 65536),
	       "%s: data after the restart intact", name);
	h_net_free(n);
}

/*
 * A SEND is half placed at B when B's ACKs stop reaching A, then nothing
 * flows for longer than epoch_quiet_ns and a forged SYN with another epoch
 * arrives at B from A's address.
 *
 * Off path (@knows_epoch 0), the forger cannot answer B's challenge: B
 * refuses the SYN and the transfer goes on untouched. On path
 * (@knows_epoch 1), it sees the challenge for its epoch and echoes the
 * cookie, and B adopts the forged epoch. A's next packets draw a RESET, A
 * announces its epoch again and resends everything B has not
 * acknowledged, much of which B had placed. B must take its old window
 * back so that nothing counts twice. Either way the receive completes once,
 * with every byte.
 */
static void forged_syn_test(int knows_epoch, const char *name)
{
	struct h_net *n = net(0, 0x3000, 0x5000);
	struct h_host *b = &n->host[1];
	u32 len = 4u << 20, i, nrecv = 0, got = 0;
	u64 resets;
	struct mr_hdr h;
	struct mr_rx rx;
	int k, ok;

	n->link[0].rate_bps = 10000000000ull;
	n->link[1].rate_bps = 10000000000ull;
	h_connect(n, 0, 100, 200);
	fill(n, 0, 0, len, 6);
	h_post_recv(n, 1, 0, 2u << 20, len);
	k = h_post(n, 0, 0, MR_WR_SEND, 0, len, 0, 0);
	h_run_for(n, 200000);
	ok = !n->host[0].conn.syn;
	n->link[1].down = 1;
	h_run_for(n, 50000);
	n->link[0].down = 1;
	h_run_for(n, b->conn.cfg.epoch_quiet_ns + 1000000);
	resets = n->host[0].conn.stats[MR_ST_RX_RESETS];
	memset(&h, 0, sizeof(h));
	h.opcode = MR_OP_NOP;
	h.flags = MR_F_SYN;
	h.epoch = 0x7e7e7e7e;
	h.syn_dsn = h.epoch;
	h.cookie = knows_epoch ? h_cookie(b, h.epoch, 0) : 0x5eed5eed5eed5eedull;
	h.dsn = h.epoch;
	h.psn = h.epoch;
	mr_conn_rx(&b->conn, NULL, &h, NULL, 0, n->now, &rx);
	ok = ok && b->conn.rx_epoch == (knows_epoch ? 0x7e7e7e7e : 0x3000);
	n->link[0].down = 0;
	n->link[1].down = 0;
	ok = ok && h_run(n, 20 * SEC) == 0 &&
	     n->host[0].wrs[k].cqe.status == MR_WC_OK;
	for (i = 0; i < b->ncqe; i++) {
		if (b->cqes[i].opcode != MR_WC_RECV)
			continue;
		nrecv++;
		got = b->cqes[i].status == MR_WC_OK ? b->cqes[i].byte_len : 0;
	}
	tap_ok(ok && nrecv == 1 && got == len && same(n, 0, 0, 1, 2u << 20, len),
	       "%s: the SEND completes once, intact, after a forged SYN (recv %u, %u bytes)",
	       name, nrecv, got);
	resets = n->host[0].conn.stats[MR_ST_RX_RESETS] - resets;
	if (knows_epoch)
		tap_ok(b->conn.stats[MR_ST_RX_EPOCH_RESTORED] == 1 &&
		       b->conn.rx_epoch == n->host[0].conn.epoch && resets,
		       "%s: A was asked to resynchronise and B restored A's window (restored %llu, RESETs %llu)",
		       name,
		       (unsigned long long)b->conn.stats[MR_ST_RX_EPOCH_RESTORED],
		       (unsigned long long)resets);
	else
		tap_ok(!b->conn.stats[MR_ST_RX_EPOCH_RESTORED] &&
		       b->conn.rx_epoch == n->host[0].conn.epoch && !resets &&
		       b->conn.drops[MR_DROP_EPOCH] == 1 &&
		       b->conn.stats[MR_ST_RX_HELLOS] == 1,
		       "%s: B refused the SYN and challenged A's hello (a hello, not a drop), A never had to resynchronise (RESETs %llu, epoch drops %llu)",
		       name, (unsigned long long)resets,
		       (unsigned long long)b->conn.drops[MR_DROP_EPOCH]);
	h_net_free(n);
}

/* Everything host 0 sends on path 0 is lost: a failed route. */
static int drop_path0(struct h_net *n, int from, const u8 *pkt, u32 len,
		      u64 *at)
{
	struct mr_hdr h;

	(void)n;
	(void)at;
	return from == 0 && mr_wire_decode(pkt, len, &h, NULL) >= 0 &&
	       h.path == 0;
}

/*
 * One small WRITE at a time over a connection whose path 0 fails: the
 * only packet in flight is the one path 0 lost, so no other path gets
 * through while path 0 times out. Its retransmission must leave path 0
 * (a QP once retransmitted onto it forever and failed with
 * RETRY_EXC_ERR after the retry budget, in the multiplane selftest). Each
 * message waits at most one timeout (the first one also its hello's, lost
 * on path 0 too, whose timeout starts path 0's backoff); path 0, still the
 * first idle path, takes the next messages' packets until it has timed out
 * dead_after times, and dies, since path 1 gets through between its
 * timeouts.
 */
static void failed_path_sparse_test(const char *name)
{
	struct h_net *n = net(0, 0x4000, 0x6000);
	struct mr_qp_attr a;
	u64 worst = 0, t0;
	u32 i, cnt = 20, ok = 1;
	int k;

	h_attr_default(n, &a);
	a.timeout_ns = 67108864;	/* IB timeout 14, as mr_integrity */
	a.retry_cnt = 7;
	h_connect_attr(n, 0, 300, 400, &a);
	n->filter = drop_path0;
	fill(n, 0, 0, 100 * cnt, 9);
	for (i = 0; i < cnt && ok; i++) {
		t0 = n->now;
		k = h_post(n, 0, 0, MR_WR_WRITE, i * 100, 100,
			   (4u << 20) + i * 100, 0);
		ok = k >= 0 && h_run(n, n->now + 5 * SEC) == 0 &&
		     n->host[0].wrs[k].cqe.status == MR_WC_OK;
		if (ok && n->host[0].wrs[k].done_at - t0 > worst)
			worst = n->host[0].wrs[k].done_at - t0;
	}
	tap_ok(ok && !n->host[0].qp_errors &&
	       same(n, 0, 0, 1, 4u << 20, 100 * cnt),
	       "%s: %u WRITEs complete intact, one at a time (%u done)",
	       name, cnt, i - !ok);
	{
		const struct mr_conn *c = &n->host[0].conn;
		/* Its timeouts back off: rto_init << k for the k-th. */
		u64 bound = ((u64)c->cfg.rto_init_ns << (c->cfg.dead_after - 1)) +
			    c->cfg.rto_init_ns / 2;

		tap_ok(ok && worst < bound && c->path[0].state == MR_PATH_DEAD &&
		       c->stats[MR_ST_PATH_DEAD] == 1,
		       "%s: the slowest waited one timeout (%llu us), path 0 died after %u",
		       name, (unsigned long long)worst / 1000,
		       c->cfg.dead_after);
	}
	h_net_free(n);
}

int main(void)
{
	tap_plan(26);
	write_test(0, 1u << 20, "write 1MiB lossless");
	write_test(10000, 1u << 20, "write 1MiB 1% loss");
	write_test(100000, 1u << 20, "write 1MiB 10% loss");
	send_test(0, "send lossless");
	send_test(50000, "send 5% loss");
	read_atomic_test(0, "read/atomic lossless");
	read_atomic_test(50000, "read/atomic 5% loss");
	read_atomic_test(200000, "read/atomic 20% loss");
	restart_test(0, "restart");
	restart_test(50000, "restart 5% loss");
	sender_restart_test("sender restart");
	forged_syn_test(0, "forged SYN off path");
	forged_syn_test(1, "forged SYN on path");
	failed_path_sparse_test("failed path, sparse traffic");
	return tap_done();
}
