// SPDX-License-Identifier: GPL-2.0-only
/*
 * First contact cannot be hijacked (protocol.rst, sections 7.2 and 11).
 *
 * The two-host harness with a third party that can send from host A's
 * address but does not receive what is sent to it: an off-path host that
 * spoofs A's address, or an unprivileged process on A (which sends from
 * A's address but cannot receive at A's MetaRoCE port). It knows the QP
 * numbers and the first message numbers (a local user reads them with
 * "rdma resource show qp"), not the epochs. It strikes first: before A
 * sends anything to B, and again after B freed its connection and made a
 * new one (the idle clean-up). It announces an epoch of its own, sends a
 * SEND that matches B's posted receive, keeps its epoch alive with a
 * PROBE every 5 ms, sprays SYNs with fresh epochs and sends A RESETs in
 * B's name. The real peer must win, and no forged SEND may complete.
 */
#include <string.h>
#include "harness.h"
#include "tap.h"

#define MEM		(1u << 20)
#define MS		1000000ull
#define EA		0x1a2b3c4du
#define EB		0x5e6f7081u
#define EB2		0x92a3b4c5u
#define FORGED		0x0badf00du
#define PSN_A		0x1000u
#define PSN_B		0x2000u
#define RECV_AT		0x80000u
#define RECV_LEN	4096u
#define SEND_LEN	1000u
#define FORGED_LEN	64u

/* host k's QP i, as harness.c numbers them */
#define QPN(k, i)	(0x100u + 0x10u * (k) + (i))

struct forger {
	u32 epoch;		/* the epoch it announces */
	u32 psn;		/* next PSN on its path 0 */
	u32 dsn;		/* next DSN */
	u32 sent;		/* packets injected */
	u64 rng;
};

static u32 fg_rand(struct forger *f)
{
	f->rng ^= f->rng << 13;
	f->rng ^= f->rng >> 7;
	f->rng ^= f->rng << 17;
	return (u32)(f->rng >> 16);
}

/* What it puts where a SYN proves its sender: a guess. */
static void fg_proof(struct forger *f, struct mr_hdr *h)
{
	h->cookie = (u64)fg_rand(f) << 32 | fg_rand(f);
}

static void fg_inject(struct h_net *n, struct forger *f, int dst,
		      const struct mr_hdr *h)
{
	u8 buf[MR_HLEN_MAX + MR_MAX_PAYLOAD];
	int hl = mr_wire_encode(buf, sizeof(buf), h);

	if (hl < 0)
		abort();
	memset(buf + hl, 0xee, h->plen);
	h_inject(n, dst, buf, (u32)hl + h->plen);
	f->sent++;
}

/* A sequenced packet of @epoch with SYN, to host B. */
static void fg_seq(struct forger *f, struct mr_hdr *h, u8 op, u32 epoch)
{
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	h->flags = MR_F_SYN | MR_F_ACKREQ;
	h->epoch = epoch;
	h->path = 0;
	h->psn = f->psn++;
	h->syn_dsn = f->epoch;
	fg_proof(f, h);
}

static void fg_probe(struct h_net *n, struct forger *f, u32 epoch)
{
	struct mr_hdr h;

	fg_seq(f, &h, MR_OP_PROBE, epoch);
	fg_inject(n, f, 1, &h);
}

/* A SEND that matches B's first receive on QP @i, first message @msn. */
static void fg_send(struct h_net *n, struct forger *f, u32 i, u32 msn)
{
	struct mr_hdr h;

	fg_seq(f, &h, MR_OP_SEND, f->epoch);
	h.dst_qpn = QPN(1, i);
	h.src_qpn = QPN(0, i);
	h.dsn = f->dsn++;
	h.msn = msn;
	h.ssn = 0;
	h.msg_len = FORGED_LEN;
	h.plen = FORGED_LEN;
	fg_inject(n, f, 1, &h);
}

/* A RESET to A in B's name, naming an epoch it guesses. */
static void fg_reset(struct h_net *n, struct forger *f)
{
	struct mr_hdr h;

	memset(&h, 0, sizeof(h));
	h.opcode = MR_OP_RESET;
	h.epoch = EB;
	h.reset_epoch = fg_rand(f) | 1;
	h.cookie = (u64)fg_rand(f) << 32 | 1;
	fg_inject(n, f, 0, &h);
}

/*
 * Strike first (the forged epoch and SEND), then keep at it for @ms
 * milliseconds while the real peer's traffic runs.
 */
static void fg_attack(struct h_net *n, struct forger *f, u32 qp, u32 msn,
		      u32 ms)
{
	u32 t;

	fg_probe(n, f, f->epoch);
	fg_send(n, f, qp, msn);
	for (t = 0; t < ms; t += 5) {
		h_run_for(n, 5 * MS);
		fg_probe(n, f, f->epoch);	/* keep the forged epoch alive */
		fg_probe(n, f, fg_rand(f) | 1);	/* and try fresh ones */
		fg_send(n, f, qp, msn);
		fg_reset(n, f);
	}
}

static void fill(struct h_net *n, u64 off, u32 len, u32 seed)
{
	u32 i;

	for (i = 0; i < len; i++)
		n->host[0].mem[off + i] = (u8)(seed * 131 + i * 7 + 1);
}

/* B's receive completions on QP @i, and whether they hold A's data. */
static void check_b(struct h_net *n, u32 i, int wr, u64 src, const char *name)
{
	struct h_host *b = &n->host[1];
	u32 k, recvs = 0, len = 0;

	for (k = 0; k < b->ncqe; k++) {
		if (b->cqes[k].opcode != MR_WC_RECV || b->cqe_qp[k] != i)
			continue;
		recvs++;
		len = b->cqes[k].byte_len;
	}
	tap_ok(n->host[0].wrs[wr].done &&
	       n->host[0].wrs[wr].cqe.status == MR_WC_OK,
	       "%s: the real peer's SEND completes (done %d, status %d)", name,
	       n->host[0].wrs[wr].done, n->host[0].wrs[wr].cqe.status);
	tap_ok(recvs == 1 && len == SEND_LEN &&
	       !memcmp(b->mem + RECV_AT, n->host[0].mem + src, SEND_LEN),
	       "%s: B completed one receive, with the real peer's %u bytes (%u receives, last %u bytes)",
	       name, SEND_LEN, recvs, len);
	tap_ok(b->conn.rx_epoch == n->host[0].conn.epoch,
	       "%s: B holds the real peer's epoch (%#x, forged %#x)", name,
	       b->conn.rx_epoch, FORGED);
}

static void first_contact(void)
{
	struct h_net *n = h_net_new(NULL, MEM, 5, EA, EB);
	struct forger f = { .epoch = FORGED, .psn = FORGED, .dsn = FORGED,
			    .rng = 77 };
	int wr;

	h_connect(n, 0, PSN_A, PSN_B);
	h_post_recv(n, 1, 0, RECV_AT, RECV_LEN);
	fill(n, 0, SEND_LEN, 1);
	wr = h_post(n, 0, 0, MR_WR_SEND, 0, SEND_LEN, 0, 0);
	fg_attack(n, &f, 0, PSN_A, 2000);
	tap_diag("first contact: %u forged packets, B dropped %llu (epoch)",
		 f.sent,
		 (unsigned long long)n->host[1].conn.drops[MR_DROP_EPOCH]);
	check_b(n, 0, wr, 0, "first contact");
	h_net_free(n);
}

/*
 * The idle clean-up: B frees its connection (its QPs are gone) and a new
 * QP makes a new one, while A's connection, acknowledged long ago, lives
 * on. The forger strikes before A's next packet.
 */
static void after_cleanup(void)
{
	struct h_net *n = h_net_new(NULL, MEM, 6, EA, EB);
	struct forger f = { .epoch = FORGED, .psn = FORGED, .dsn = FORGED,
			    .rng = 99 };
	struct h_host *b = &n->host[1];
	struct mr_conn_cfg cfg = b->conn.cfg;
	int wr;

	h_connect(n, 0, PSN_A, PSN_B);
	h_post_recv(n, 1, 0, RECV_AT, RECV_LEN);
	fill(n, 0, SEND_LEN, 2);
	wr = h_post(n, 0, 0, MR_WR_SEND, 0, SEND_LEN, 0, 0);
	tap_ok(h_run(n, 100 * MS) == 0 && n->host[0].wrs[wr].done &&
	       !n->host[0].conn.syn,
	       "after clean-up: a first SEND establishes the connection");
	h_run_for(n, 20 * MS);

	mr_qp_detach(&b->qps[0].qp);
	if (mr_conn_init(&b->conn, &cfg, b->segs, &h_ops, b, EB2, 8,
			 n->now))
		abort();
	b->ncqe = 0;
	memset(b->mem + RECV_AT, 0, RECV_LEN);
	h_connect(n, 1, PSN_A + 7, PSN_B + 7);
	h_post_recv(n, 1, 1, RECV_AT, RECV_LEN);
	fill(n, 4096, SEND_LEN, 3);
	wr = h_post(n, 0, 1, MR_WR_SEND, 4096, SEND_LEN, 0, 0);
	fg_attack(n, &f, 1, PSN_A + 7, 2000);
	tap_diag("after clean-up: %u forged packets, B dropped %llu (epoch)",
		 f.sent, (unsigned long long)b->conn.drops[MR_DROP_EPOCH]);
	check_b(n, 1, wr, 4096, "after clean-up");
	h_net_free(n);
}

int main(void)
{
	tap_start();
	first_contact();
	after_cleanup();
	return tap_done();
}
