// SPDX-License-Identifier: GPL-2.0-only
/*
 * QPs (core/msg.c, core/resp.c): every verbs operation end to end over the two-host
 * harness, completion order, msn wrap, the message window, fence and
 * max_rd_atomic, RNR, remote errors, retry exhaustion, flush, detach, the
 * responder's drop rules (white-box), READ-after-WRITE ordering, atomics
 * exactly once.
 */
#include <string.h>
#include "tap.h"
#include "harness.h"
#include "endpoint.h"
#include "internal.h"

#define MEM	(8u << 20)
#define US	1000ull
#define MS	1000000ull
#define SEC	1000000000ull
#define PEER	0xabc00000u

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

static struct h_net *net(u32 loss_ppm, u64 seed)
{
	struct h_net *n = h_net_new(NULL, MEM, seed, 0x1000 + (u32)seed,
				    0xfffff000 + (u32)seed);

	n->link[0].loss_ppm = loss_ppm;
	n->link[1].loss_ppm = loss_ppm;
	return n;
}

static struct mr_wr mkwr(u8 op, u32 len, u64 raddr, u32 rkey, u32 imm,
			 u8 flags)
{
	struct mr_wr w;

	memset(&w, 0, sizeof(w));
	w.opcode = op;
	w.len = len;
	w.raddr = raddr;
	w.rkey = rkey;
	w.imm = imm;
	w.flags = flags;
	return w;
}

/* Requester completions of host @h: in posting order, with @status. */
static int wr_status(struct h_net *n, int h, int k)
{
	return n->host[h].wrs[k].done ? n->host[h].wrs[k].cqe.status : -1;
}

/* Completions of work requests on host @h are in h_wr index order per QP. */
static int wr_cqes_in_order(struct h_net *n, int h)
{
	u64 last[H_MAX_QPS];
	u32 i;

	memset(last, 0xff, sizeof(last));
	for (i = 0; i < n->host[h].ncqe; i++) {
		const struct mr_cqe *c = &n->host[h].cqes[i];
		u16 q = n->host[h].cqe_qp[i];

		if (c->opcode == MR_WC_RECV || c->opcode == MR_WC_RECV_WRITE_IMM)
			continue;
		if (last[q] != ~0ull && c->cookie <= last[q])
			return 0;
		last[q] = c->cookie;
	}
	return 1;
}

/* The @k-th receive completion of QP @q on host @h, or NULL. */
static const struct mr_cqe *recv_cqe(struct h_net *n, int h, u32 q, u32 k)
{
	u32 i;

	for (i = 0; i < n->host[h].ncqe; i++) {
		const struct mr_cqe *c = &n->host[h].cqes[i];

		if (n->host[h].cqe_qp[i] != q ||
		    (c->opcode != MR_WC_RECV && c->opcode != MR_WC_RECV_WRITE_IMM))
			continue;
		if (!k--)
			return c;
	}
	return NULL;
}

static u32 nrecv_cqe(struct h_net *n, int h, u32 q)
{
	u32 k = 0;

	while (recv_cqe(n, h, q, k))
		k++;
	return k;
}

/* Every verbs operation, one QP, lossless and lossy */
static void test_all_ops(u32 loss_ppm, const char *name)
{
	struct h_net *n = net(loss_ppm, 3 + loss_ppm);
	u32 rk = n->host[1].rkey;
	struct mr_wr w;
	int k[16], i, ok, nk = 0;
	const struct mr_cqe *rc;
	u64 v;

	h_connect(n, 0, 0x10, 0x20);
	for (i = 0; i < 6; i++)
		h_post_recv(n, 1, 0, 0x600000 + i * 0x10000, 0x10000);
	fill(n, 0, 0x000000, 100, 1);
	fill(n, 0, 0x010000, 5000, 2);
	fill(n, 0, 0x020000, 3000, 3);
	fill(n, 0, 0x030000, 10000, 4);
	fill(n, 0, 0x040000, 2000, 5);
	fill(n, 1, 0x300000, 7000, 6);
	memset(n->host[1].mem + 0x380000, 0, 16);
	n->host[1].mem[0x380000] = 5;
	n->host[1].mem[0x380008] = 40;

	w = mkwr(MR_WR_SEND, 100, 0, 0, 0, 0);
	k[nk++] = h_post_wr(n, 0, 0, &w, 0x000000);
	w = mkwr(MR_WR_SEND_IMM, 5000, 0, 0, 0xfeed0001, MR_WRF_SOLICITED);
	k[nk++] = h_post_wr(n, 0, 0, &w, 0x010000);
	w = mkwr(MR_WR_SEND_INV, 3000, 0, 0, 0x777, 0);
	k[nk++] = h_post_wr(n, 0, 0, &w, 0x020000);
	w = mkwr(MR_WR_WRITE, 10000, 0x100000, rk, 0, MR_WRF_SOLICITED);
	k[nk++] = h_post_wr(n, 0, 0, &w, 0x030000);
	w = mkwr(MR_WR_WRITE_IMM, 2000, 0x200000, rk, 0xfeed0002, 0);
	k[nk++] = h_post_wr(n, 0, 0, &w, 0x040000);
	w = mkwr(MR_WR_READ, 7000, 0x300000, rk, 0, 0);
	k[nk++] = h_post_wr(n, 0, 0, &w, 0x050000);
	w = mkwr(MR_WR_CMP_SWAP, 8, 0x380000, rk, 0, 0);
	w.compare = 5;
	w.swap_add = 77;
	k[nk++] = h_post_wr(n, 0, 0, &w, 0x060000);
	w = mkwr(MR_WR_FETCH_ADD, 8, 0x380008, rk, 0, 0);
	w.swap_add = 2;
	k[nk++] = h_post_wr(n, 0, 0, &w, 0x060008);
	w = mkwr(MR_WR_SEND, 0, 0, 0, 0, 0);
	k[nk++] = h_post_wr(n, 0, 0, &w, 0);
	w = mkwr(MR_WR_WRITE, 0, 0x100000, rk, 0, 0);
	k[nk++] = h_post_wr(n, 0, 0, &w, 0);
	w = mkwr(MR_WR_READ, 0, 0x300000, rk, 0, 0);
	k[nk++] = h_post_wr(n, 0, 0, &w, 0);
	w = mkwr(MR_WR_WRITE_IMM, 0, 0x100000, rk, 0xfeed0003, 0);
	k[nk++] = h_post_wr(n, 0, 0, &w, 0);
	w = mkwr(MR_WR_CMP_SWAP, 8, 0x380000, rk, 0, 0);
	w.compare = 5;		/* no match now: no swap */
	w.swap_add = 99;
	k[nk++] = h_post_wr(n, 0, 0, &w, 0x060010);
	ok = h_run(n, 20 * SEC) == 0;

	for (i = 0; i < nk; i++) {
		const struct h_wr *x = &n->host[0].wrs[k[i]];

		if (!x->done || x->cqe.status != MR_WC_OK ||
		    x->cqe.opcode != x->wr.opcode ||
		    x->cqe.byte_len != x->wr.len) {
			ok = 0;
			tap_diag("%s: wr %d status %d opcode %u len %u", name, i,
				 x->done ? x->cqe.status : -1, x->cqe.opcode,
				 x->cqe.byte_len);
		}
	}
	tap_ok(ok && wr_cqes_in_order(n, 0) && n->host[0].ncqe == (u32)nk &&
	       !n->host[0].qp_errors && !n->host[1].qp_errors,
	       "%s: %d requests of every opcode complete OK, in posting order",
	       name, nk);
	tap_ok(same(n, 0, 0x000000, 1, 0x600000, 100) &&
	       same(n, 0, 0x010000, 1, 0x610000, 5000) &&
	       same(n, 0, 0x020000, 1, 0x620000, 3000) &&
	       same(n, 0, 0x030000, 1, 0x100000, 10000) &&
	       same(n, 0, 0x040000, 1, 0x200000, 2000) &&
	       same(n, 1, 0x300000, 0, 0x050000, 7000),
	       "%s: SEND, SEND_IMM, SEND_INV, WRITE, WRITE_IMM and READ data intact",
	       name);
	memcpy(&v, n->host[0].mem + 0x060000, 8);
	ok = v == 5;
	memcpy(&v, n->host[0].mem + 0x060008, 8);
	ok = ok && v == 40 && n->host[1].mem[0x380008] == 42;
	memcpy(&v, n->host[0].mem + 0x060010, 8);
	ok = ok && v == 77 && n->host[1].mem[0x380000] == 77;
	tap_ok(ok, "%s: CMP_SWAP swapped (old 5), FETCH_ADD added (old 40), a CMP_SWAP that does not match leaves it",
	       name);

	ok = nrecv_cqe(n, 1, 0) == 6;
	rc = recv_cqe(n, 1, 0, 0);
	ok = ok && rc->status == MR_WC_OK && rc->opcode == MR_WC_RECV &&
	     rc->byte_len == 100 && !rc->imm_valid && !rc->inv_valid &&
	     H_COOKIE_SSN(rc->cookie) == 0 && !rc->solicited;
	rc = recv_cqe(n, 1, 0, 1);
	ok = ok && rc->byte_len == 5000 && rc->imm_valid &&
	     rc->imm == 0xfeed0001 && rc->solicited && H_COOKIE_SSN(rc->cookie) == 1;
	rc = recv_cqe(n, 1, 0, 2);
	ok = ok && rc->byte_len == 3000 && rc->inv_valid && !rc->imm_valid &&
	     rc->imm == 0x777;
	rc = recv_cqe(n, 1, 0, 3);
	ok = ok && rc->opcode == MR_WC_RECV_WRITE_IMM && rc->imm_valid &&
	     rc->imm == 0xfeed0002 && rc->byte_len == 2000 &&
	     H_COOKIE_SSN(rc->cookie) == 3;
	rc = recv_cqe(n, 1, 0, 4);
	ok = ok && rc->opcode == MR_WC_RECV && rc->byte_len == 0 &&
	     H_COOKIE_SSN(rc->cookie) == 4;
	rc = recv_cqe(n, 1, 0, 5);
	ok = ok && rc->opcode == MR_WC_RECV_WRITE_IMM && rc->byte_len == 0 &&
	     rc->imm == 0xfeed0003 && H_COOKIE_SSN(rc->cookie) == 5;
	tap_ok(ok, "%s: 6 receive completions in order with length, imm, inv, solicited; WRITE consumes none",
	       name);
	h_net_free(n);
}

/* WRITE with immediate: data at raddr, the immediate in a receive. */
static void test_write_imm(void)
{
	struct h_net *n = net(0, 4);
	u32 rk = n->host[1].rkey;
	const struct mr_cqe *rc;
	struct mr_wr w;
	int ok;

	h_connect(n, 0, 0x10, 0x20);
	h_post_recv(n, 1, 0, 0x600000, 0x1000);
	h_post_recv(n, 1, 0, 0x610000, 0x1000);
	h_post_recv(n, 1, 0, 0x620000, 0x1000);
	fill(n, 0, 0, 3000, 3);
	w = mkwr(MR_WR_WRITE_IMM, 3000, 0x100000, rk, 0xfeed0002, 0);
	h_post_wr(n, 0, 0, &w, 0);
	ok = h_run(n, 10 * SEC) == 0;
	rc = recv_cqe(n, 1, 0, 0);
	tap_ok(ok && wr_status(n, 0, 0) == MR_WC_OK && rc &&
	       rc->opcode == MR_WC_RECV_WRITE_IMM && rc->imm_valid &&
	       rc->imm == 0xfeed0002 && rc->byte_len == 3000 &&
	       H_COOKIE_SSN(rc->cookie) == 0 && same(n, 0, 0, 1, 0x100000, 3000),
	       "WRITE_IMM: data placed at the remote address, RECV_WRITE_IMM with the immediate");
	h_post(n, 0, 0, MR_WR_SEND, 0, 10, 0, 0);
	w = mkwr(MR_WR_WRITE_IMM, 0, 0x100000, rk, 0xfeed0003, 0);
	h_post_wr(n, 0, 0, &w, 0);
	ok = h_run(n, 100 * MS) == 0;
	rc = recv_cqe(n, 1, 0, 2);
	tap_ok(ok && wr_status(n, 0, 2) == MR_WC_OK && rc &&
	       rc->imm == 0xfeed0003 && H_COOKIE_SSN(rc->cookie) == 2 &&
	       rc->opcode == MR_WC_RECV_WRITE_IMM && !rc->byte_len,
	       "a WRITE_IMM after other receive-consuming messages binds its own receive");
	h_net_free(n);
}

/*
 * A segment size that is not a power of two, as a device filling a
 * 1500-byte IPv4 MTU uses (protocol.rst 5.5): messages are cut at it, the
 * receiver learns it from the segments, and a READ response is cut at the
 * responder's own size.
 */
static void test_seg_size(u32 loss_ppm, const char *name)
{
	u32 rk, seg = 1396;
	struct mr_conn_cfg cfg;
	struct mr_qp_attr a;
	struct h_net *n;
	struct mr_wr w;
	u64 d0, d1;
	int ok;

	mr_conn_cfg_default(&cfg);
	cfg.mtu = MR_MAX_PAYLOAD;	/* as the kernel's devices have it */
	n = h_net_new(&cfg, MEM, 40 + loss_ppm, 0x1040, 0xfffff040);
	n->link[0].loss_ppm = loss_ppm;
	n->link[1].loss_ppm = loss_ppm;
	rk = n->host[1].rkey;
	h_attr_default(n, &a);
	a.seg_size = seg;
	h_connect_attr(n, 0, 0x10, 0x20, &a);
	h_post_recv(n, 1, 0, 0x600000, 0x10000);
	fill(n, 0, 0x000000, 100000, 7);
	fill(n, 0, 0x020000, 50000, 8);
	fill(n, 1, 0x300000, 70000, 9);
	d0 = n->host[0].conn.stats[MR_ST_TX_DATA];
	d1 = n->host[1].conn.stats[MR_ST_TX_DATA];
	w = mkwr(MR_WR_WRITE, 100000, 0x100000, rk, 0, 0);
	h_post_wr(n, 0, 0, &w, 0x000000);
	w = mkwr(MR_WR_SEND, 50000, 0, 0, 0, 0);
	h_post_wr(n, 0, 0, &w, 0x020000);
	w = mkwr(MR_WR_READ, 70000, 0x300000, rk, 0, 0);
	h_post_wr(n, 0, 0, &w, 0x040000);
	ok = h_run(n, 20 * SEC) == 0;
	tap_ok(ok && wr_status(n, 0, 0) == MR_WC_OK &&
	       wr_status(n, 0, 1) == MR_WC_OK && wr_status(n, 0, 2) == MR_WC_OK &&
	       same(n, 0, 0x000000, 1, 0x100000, 100000) &&
	       same(n, 0, 0x020000, 1, 0x600000, 50000) &&
	       same(n, 1, 0x300000, 0, 0x040000, 70000),
	       "%s: %u-byte segments: WRITE, SEND and READ complete with their data intact",
	       name, seg);
	d0 = n->host[0].conn.stats[MR_ST_TX_DATA] - d0;
	d1 = n->host[1].conn.stats[MR_ST_TX_DATA] - d1;
	tap_ok(d0 == (100000 + seg - 1) / seg + (50000 + seg - 1) / seg + 1 &&
	       d1 == (70000 + seg - 1) / seg,
	       "%s: cut at %u bytes: %llu request segments, %llu response segments",
	       name, seg, (unsigned long long)d0, (unsigned long long)d1);
	h_net_free(n);
}

/* Many messages, several QPs sharing one connection, msn wrap */
static void test_many_qps(u32 loss_ppm, const char *name)
{
	struct h_net *n = net(loss_ppm, 11 + loss_ppm);
	u32 rk = n->host[1].rkey, q, i, per = 150, nrecv[4] = { 0 };
	int ok;

	n->link[0].reorder_ppm = 50000;
	n->link[0].reorder_ns = 20000;
	for (q = 0; q < 4; q++)
		h_connect(n, q, 0xffffff - 40 * q, 0xffffc0 + q);
	for (q = 0; q < 4; q++)
		for (i = 0; i < per; i++)
			h_post_recv(n, 1, q, 0x400000 + q * 0x100000 + i * 0x1000,
				    0x1000);
	fill(n, 0, 0, 0x200000, 77);
	for (i = 0; i < per; i++) {
		for (q = 0; q < 4; q++) {
			u32 len = (i * 331 + q * 97) % 0x1001;
			u64 src = (q * per + i) * 0x800u % 0x1ff000;
			struct mr_wr w;

			if ((i + q) % 3 == 0) {
				w = mkwr(MR_WR_WRITE, len, 0x100000 * q + i * 0x1000 % 0xff000, rk, 0, 0);
			} else {
				w = mkwr(MR_WR_SEND, len, 0, 0, 0, 0);
				nrecv[q]++;
			}
			h_post_wr(n, 0, q, &w, src);
		}
	}
	ok = h_run(n, 60 * SEC) == 0;
	for (i = 0; i < n->host[0].nwr; i++) {
		const struct h_wr *x = &n->host[0].wrs[i];

		if (x->cqe.status != MR_WC_OK)
			ok = 0;
	}
	tap_ok(ok && wr_cqes_in_order(n, 0) && !n->host[0].qp_errors &&
	       !n->host[1].qp_errors,
	       "%s: 4 QPs x %u messages over one connection complete OK in order",
	       name, per);
	ok = 1;
	for (q = 0; q < 4; q++) {
		u32 k = 0;

		for (i = 0; i < per; i++) {
			u32 len = (i * 331 + q * 97) % 0x1001;
			u64 src = (q * per + i) * 0x800u % 0x1ff000;

			if ((i + q) % 3 == 0)
				continue;
			{
				const struct mr_cqe *c = recv_cqe(n, 1, q, k);

				if (!c || c->byte_len != len ||
				    H_COOKIE_SSN(c->cookie) != k ||
				    !same(n, 0, src, 1, 0x400000 + q * 0x100000 +
					  k * 0x1000, len))
					ok = 0;
			}
			k++;
		}
		if (k != nrecv[q] || nrecv_cqe(n, 1, q) != nrecv[q])
			ok = 0;
	}
	tap_ok(ok, "%s: every SEND lands intact in its receive, in order per QP", name);
	tap_ok(n->host[1].qps[0].qp.rq_msn == ((0xffffff + per) & MR_MSN_MASK) &&
	       n->host[0].qps[0].qp.sq_una == ((0xffffff + per) & MR_MSN_MASK),
	       "%s: message numbers wrapped through 0 (rq_msn=%#x)", name,
	       n->host[1].qps[0].qp.rq_msn);
	h_net_free(n);
}

/* The message window, fence, max_rd_atomic (white-box) */

static void resp(struct ep *e, u8 op, u32 msn, u32 dsn, u32 len, u32 off,
		 u32 plen)
{
	struct mr_hdr h;

	ep_hdr_req(e, &h, op, 0, msn, 0, dsn, dsn, len, off, plen);
	ep_rx(e, &h, 0);
}

/* Send what is queued; the peer acknowledges QP 0's messages before @msn. */
static void ack_qp0_before(struct ep *e, u32 msn)
{
	struct mr_ack a;

	ep_tx(e);
	ep_ack_init(e, &a);
	ep_ack_sent(e, &a, 0, 0, (u32)e->now);
	ep_ack_qp(&a, MR_QPS_OK, EP_QPN(0), 0, msn, 0);
	ep_rx_ack(e, &a);
}

static void test_window_fence(void)
{
	struct ep *e = ep_new(NULL, 1, PEER, 1);
	struct mr_qp *qp = ep_qp(e, 0, NULL);
	u32 i, posted = 0;

	for (i = 0; i < 70; i++)
		if (!ep_post(e, 0, MR_WR_WRITE, 16, i))
			posted++;
	tap_ok(posted == MR_MSG_WND && !mr_qp_can_post(qp),
	       "64 messages in flight per QP: the 65th post fails, can_post says no");
	ack_qp0_before(e, 0x100 + 10);
	tap_ok(e->ncqe == 10 && mr_qp_can_post(qp) &&
	       !ep_post(e, 0, MR_WR_WRITE, 16, 99),
	       "10 completions open the window again");
	ep_free(e);

	/* a send queue of 3 work requests: 2 message slots */
	e = ep_new(NULL, 1, PEER, 1);
	mr_qp_init(&e->qp[0], EP_QPN(0), e->slots[0].sq, 3, e->slots[0].rq);
	qp = ep_qp(e, 0, NULL);
	posted = 0;
	for (i = 0; i < 3; i++)
		if (!ep_post(e, 0, MR_WR_WRITE, 16, i))
			posted++;
	tap_ok(qp->sq_slots == 2 && posted == 2 && !mr_qp_can_post(qp),
	       "3 slots given: 2 used, 2 messages in flight, the third waits");
	ack_qp0_before(e, 0x100 + 1);
	tap_ok(e->ncqe == 1 && !ep_post(e, 0, MR_WR_WRITE, 16, 7) &&
	       qp->sq[0].cookie == 7 && qp->sq[1].cookie == 1 &&
	       !mr_qp_can_post(qp),
	       "a completion frees its slot: message 2 takes slot 0 again");
	mr_qp_init(qp, EP_QPN(0), e->slots[0].sq, 1000, e->slots[0].rq);
	tap_ok(qp->sq_slots == MR_MSG_WND,
	       "more slots than MR_MSG_WND: MR_MSG_WND are used");
	ep_free(e);

	/* fence */
	e = ep_new(NULL, 1, PEER, 1);
	ep_qp(e, 0, NULL);
	ep_post(e, 0, MR_WR_READ, 100, 1);
	{
		struct mr_wr w;

		memset(&w, 0, sizeof(w));
		w.opcode = MR_WR_WRITE;
		w.len = 100;
		w.cookie = 2;
		w.flags = MR_WRF_FENCE;
		mr_qp_post(&e->qp[0], &w, e->now);
	}
	ep_tx(e);
	tap_ok(ep_count(e, 0, MR_OP_READ_REQ) == 1 &&
	       ep_count(e, 0, MR_OP_WRITE) == 0,
	       "a fenced WRITE waits behind an outstanding READ");
	resp(e, MR_OP_READ_RESP, 0x100, PEER, 100, 0, 100);
	ep_tx(e);
	tap_ok(e->ncqe == 1 && e->cqe[0].cqe.opcode == MR_WR_READ &&
	       ep_count(e, 0, MR_OP_WRITE) == 1,
	       "once the READ completes the fenced WRITE goes");
	ep_post(e, 0, MR_WR_READ, 100, 3);
	ep_post(e, 0, MR_WR_WRITE, 100, 4);
	ep_tx(e);
	tap_ok(ep_count(e, 0, MR_OP_WRITE) == 2,
	       "an unfenced WRITE does not wait for a READ");
	ep_free(e);

	/* max_rd_atomic */
	{
		struct mr_qp_attr at;

		e = ep_new(NULL, 1, PEER, 1);
		ep_qp_attr_default(&at, 0);
		at.max_rd_atomic = 2;
		ep_qp(e, 0, &at);
	}
	for (i = 0; i < 3; i++)
		ep_post(e, 0, MR_WR_READ, 64, i);
	ep_post(e, 0, MR_WR_FETCH_ADD, 8, 3);
	ep_post(e, 0, MR_WR_WRITE, 64, 4);
	ep_tx(e);
	tap_ok(ep_count(e, 0, MR_OP_READ_REQ) == 2 &&
	       ep_count(e, 0, MR_OP_FETCH_ADD) == 0 &&
	       ep_count(e, 0, MR_OP_WRITE) == 0,
	       "max_rd_atomic=2: the third READ waits, and everything behind it");
	resp(e, MR_OP_READ_RESP, 0x100, PEER, 64, 0, 64);
	ep_tx(e);
	tap_ok(ep_count(e, 0, MR_OP_READ_REQ) == 3 &&
	       ep_count(e, 0, MR_OP_FETCH_ADD) == 0,
	       "one response lets exactly one more READ go");
	resp(e, MR_OP_READ_RESP, 0x101, PEER + 1, 64, 0, 64);
	ep_tx(e);
	{
		struct mr_hdr h;

		ep_hdr_req(e, &h, MR_OP_ATOMIC_RESP, 0, 0x103, 0, PEER + 2,
			   PEER + 2, 8, 0, 0);
		h.orig = 5;
		ep_rx(e, &h, 0);
		tap_ok(ep_count(e, 0, MR_OP_FETCH_ADD) == 1 &&
		       ep_count(e, 0, MR_OP_WRITE) == 1 && e->ncqe == 2 &&
		       e->last_rx.action == MR_RXA_ATOMIC_RESP,
		       "the atomic follows; a response out of order is accepted, completions wait");
	}
	ep_free(e);
}

/* RNR */

/*
 * QP 0 of @e sends three messages of 100 bytes, a WRITE, an @op and a
 * SEND (wr_id 1 to 3); the peer acknowledges every packet and refuses the
 * second message (MSN 0x101) with an RNR NAK of timer code @timer.
 */
static void rnr_nak_second(struct ep *e, u8 op, u8 timer)
{
	struct mr_ack a;

	ep_post(e, 0, MR_WR_WRITE, 100, 1);
	ep_post(e, 0, op, 100, 2);
	ep_post(e, 0, MR_WR_SEND, 100, 3);
	ep_tx(e);
	ep_ack_init(e, &a);
	ep_ack_sent(e, &a, 0, 0, (u32)e->now);
	ep_ack_qp(&a, MR_QPS_RNR, EP_QPN(0), 0, 0x101, timer);
	ep_rx_ack(e, &a);
}

/*
 * Two hosts (seed @seed) whose QP 0 is connected (PSNs 5 and 6) with the
 * default attributes but these: the RNR NAKs a message may meet before it
 * fails (@rnr_retry; 7: no limit), the responder's RNR timer code
 * (@min_rnr_timer), the transport timeout (@timeout_ns; 0: the
 * connection's) and its retries (@retry_cnt). No receive is posted.
 */
static struct h_net *rnr_net(u64 seed, u8 rnr_retry, u8 min_rnr_timer,
			     u64 timeout_ns, u8 retry_cnt)
{
	struct h_net *n = net(0, seed);
	struct mr_qp_attr a;

	h_attr_default(n, &a);
	a.rnr_retry = rnr_retry;
	a.min_rnr_timer = min_rnr_timer;
	a.timeout_ns = timeout_ns;
	a.retry_cnt = retry_cnt;
	h_connect_attr(n, 0, 5, 6, &a);
	return n;
}

/* An OK block that arrives while waiting out an RNR NAK. */
static void test_rnr_then_ok(void)
{
	struct ep *e = ep_new(NULL, 1, PEER, 1);
	struct mr_qp *qp = ep_qp(e, 0, NULL);
	struct mr_ack a;
	u32 from;

	rnr_nak_second(e, MR_WR_SEND, 14);
	ep_ack_init(e, &a);
	ep_ack_qp(&a, MR_QPS_OK, EP_QPN(0), 0, 0x102, 0);
	ep_rx_ack(e, &a);	/* the SEND at 0x101 completed after all */
	from = e->ntx;
	while (qp->rnr_wait && e->now < 10 * MS) {
		e->now = mr_conn_next_timer(&e->c);
		mr_conn_timer(&e->c, e->now);
	}
	tap_ok(qp->rnr_wait == 0 && qp->sq_cur == 0x102 && qp->sq_una == 0x102,
	       "the rewind starts at the oldest incomplete message, not behind it (sq_cur=%#x)",
	       qp->sq_cur);
	ep_tx(e);
	tap_ok(e->ncqe == 2 && qp->sq_una == 0x102 &&
	       qp->sq_cur == 0x103 && ep_count(e, from, MR_OP_SEND) == 1 &&
	       ep_count(e, from, MR_OP_NOP) == 0 &&
	       e->tx[e->ntx - 1].h.msn == 0x102 && e->tx[e->ntx - 1].h.gen == 1,
	       "RNR NAK, then an OK block past it: the rewind resends only what is not complete");
	ep_free(e);
}

static void test_rnr(void)
{
	struct h_net *n = rnr_net(21, 7, 1, 0, 7);	/* the defaults */
	int ok, i;

	fill(n, 0, 0, 3000, 9);
	for (i = 0; i < 3; i++)
		h_post(n, 0, 0, MR_WR_SEND, i * 1000, 1000, 0, 0);
	h_run_for(n, 300 * US);
	tap_ok(!h_all_done(n) && n->host[1].conn.stats[MR_ST_RNR_NAK_TX] >= 1 &&
	       n->host[0].conn.stats[MR_ST_RNR_NAK_RX] >= 1 &&
	       n->host[0].qps[0].qp.gen >= 1 && !n->host[0].qp_errors,
	       "no receive posted: RNR NAKs, the requester rewinds with a new generation (gen=%u)",
	       n->host[0].qps[0].qp.gen);
	for (i = 0; i < 3; i++)
		h_post_recv(n, 1, 0, 0x100000 + i * 0x1000, 0x1000);
	ok = h_run(n, 10 * SEC) == 0;
	tap_ok(ok && wr_status(n, 0, 0) == MR_WC_OK &&
	       wr_status(n, 0, 2) == MR_WC_OK &&
	       same(n, 0, 0, 1, 0x100000, 1000) &&
	       same(n, 0, 2000, 1, 0x102000, 1000) && nrecv_cqe(n, 1, 0) == 3 &&
	       n->host[1].qps[0].qp.rq_gen == n->host[0].qps[0].qp.gen,
	       "receives posted: the SENDs complete, data intact, generations agree");
	h_net_free(n);

	/* exhaustion */
	n = rnr_net(22, 2, 1, 0, 7);
	h_post(n, 0, 0, MR_WR_SEND, 0, 100, 0, 0);
	h_post(n, 0, 0, MR_WR_WRITE, 0, 100, 0, 0);
	ok = h_run(n, 10 * SEC) == 0;
	tap_ok(ok && wr_status(n, 0, 0) == MR_WC_RNR_RETRY_EXC_ERR &&
	       wr_status(n, 0, 1) == MR_WC_WR_FLUSH_ERR &&
	       n->host[0].qp_err_status[0] == MR_WC_RNR_RETRY_EXC_ERR &&
	       n->host[0].conn.stats[MR_ST_RNR_NAK_RX] == 3 &&
	       n->host[0].qps[0].qp.state == MR_QP_ERR,
	       "rnr_retry=2: the third RNR NAK fails the SEND (RNR_RETRY_EXC), the rest flush");
	h_net_free(n);

	/* the count is per message: separate episodes each get rnr_retry */
	n = rnr_net(23, 1, 14, 0, 7);	/* 1.28 ms: one RNR NAK per episode */
	ok = 1;
	for (i = 0; i < 4; i++) {
		h_post(n, 0, 0, MR_WR_SEND, 0, 100, 0, 0);
		h_run_for(n, 50 * US);
		h_post_recv(n, 1, 0, 0x100000, 0x1000);
		if (h_run(n, 10 * SEC) || wr_status(n, 0, i) != MR_WC_OK)
			ok = 0;
	}
	tap_ok(ok && n->host[0].conn.stats[MR_ST_RNR_NAK_RX] >= 4 &&
	       !n->host[0].qp_errors,
	       "rnr_retry=1: four RNR episodes, each recovered, none exhausts the count");
	h_net_free(n);
}

/* An RNR NAK names a message that is done by the time of the rewind. */
static void test_rnr_done_msg(void)
{
	struct ep *e = ep_new(NULL, 1, PEER, 1);
	struct mr_qp *qp = ep_qp(e, 0, NULL);
	struct mr_ack a;
	u32 from;

	rnr_nak_second(e, MR_WR_READ, 1);
	resp(e, MR_OP_READ_RESP, 0x101, PEER, 100, 0, 100);	/* lands */
	from = e->ntx;
	e->now += 20 * US;
	mr_conn_timer(&e->c, e->now);
	e->now = mr_conn_next_timer(&e->c);
	mr_conn_timer(&e->c, e->now);
	ep_tx(e);
	tap_ok(!qp->rnr_wait && ep_count(e, from, MR_OP_SEND) == 1 &&
	       ep_count(e, from, MR_OP_READ_REQ) == 0 &&
	       ep_count(e, from, MR_OP_NOP) == 0 &&
	       e->tx[ep_last(e, MR_OP_SEND)].h.msn == 0x102 &&
	       e->tx[ep_last(e, MR_OP_SEND)].h.gen == 1 &&
	       !mr_conn_tx_pending(&e->c) && qp->sq_cur == 0x103,
	       "a rewind skips a message that is already done (no empty segment, no stall)");
	ep_ack_init(e, &a);
	ep_ack_sent(e, &a, 0, from, (u32)e->now);
	ep_ack_qp(&a, MR_QPS_OK, EP_QPN(0), 1, 0x103, 0);
	ep_rx_ack(e, &a);
	tap_ok(e->ncqe == 3 && e->cqe[1].cqe.opcode == MR_WR_READ &&
	       e->cqe[2].cqe.status == MR_WC_OK, "and all three complete in order");
	ep_free(e);
}

/* Waiting out a long RNR timer is not a transport timeout. */
static void test_rnr_vs_timeout(void)
{
	/*
	 * RNR timer 7.68 ms; a transport timeout of 1 ms retried once:
	 * fails after 2 ms without progress.
	 */
	struct h_net *n = rnr_net(24, 7, 20, 1 * MS, 1);
	int ok;

	h_connect(n, 1, 7, 8);
	h_post(n, 0, 0, MR_WR_SEND, 0, 100, 0, 0);
	{
		u32 i;

		/*
		 * Traffic the other way, and host 0's timer firing for other
		 * reasons (the glue may run it at any time).
		 */
		for (i = 0; i < 40; i++) {
			h_post(n, 1, 1, MR_WR_WRITE, 0, 0x1000, 0x200000, 0);
			h_run_for(n, 500 * US);
			mr_conn_timer(&n->host[0].conn, n->now);
		}
	}
	h_post_recv(n, 1, 0, 0x100000, 0x1000);
	ok = h_run(n, 1 * SEC) == 0;
	tap_ok(ok && wr_status(n, 0, 0) == MR_WC_OK && !n->host[0].qp_errors &&
	       n->host[0].conn.stats[MR_ST_RNR_NAK_RX] >= 2,
	       "RNR timer 7.68 ms > retry budget 2 ms: the SEND still completes (status %d)",
	       wr_status(n, 0, 0));
	h_net_free(n);
}

/* A QP stuck in an RNR loop must not starve its neighbours' timers. */
static int g_qp1_blocks;

static int drop_qp1_ok(struct h_net *n, int from, const u8 *pkt, u32 len,
		       u64 *at)
{
	struct mr_hdr h;
	struct mr_ack a;
	u32 i;

	(void)n;
	(void)at;
	if (from != 1 || mr_wire_decode(pkt, len, &h, &a) < 0 ||
	    h.opcode != MR_OP_ACK)
		return 0;
	for (i = 0; i < a.nqp; i++)
		if (a.qp[i].qpn == 0x101 && !g_qp1_blocks++)
			return 1;	/* the first block of QP 1 is lost */
	return 0;
}

static void test_rnr_neighbour(void)
{
	struct h_net *n = net(0, 25);
	int ok;

	h_connect(n, 0, 5, 6);
	h_connect(n, 1, 7, 8);
	n->filter = drop_qp1_ok;
	g_qp1_blocks = 0;
	h_post(n, 0, 0, MR_WR_SEND, 0, 100, 0, 0);	/* never received */
	h_post(n, 0, 1, MR_WR_WRITE, 0, 100, 0x1000, 0);
	n->host[0].wrs[0].done = 1;	/* not waited for */
	ok = h_run(n, 100 * MS) == 0;
	tap_ok(ok && wr_status(n, 0, 1) == MR_WC_OK && g_qp1_blocks >= 2 &&
	       n->host[0].conn.stats[MR_ST_TX_ACKREQ] >= 1 &&
	       n->host[0].conn.stats[MR_ST_RNR_NAK_RX] >= 2 &&
	       n->host[0].qps[0].qp.state == MR_QP_RTS,
	       "QP 1's lost completion is recovered by ACK_REQ while QP 0 loops on RNR");
	h_net_free(n);
}

/* Delay the packets of one message so that later ones arrive first. */
static u32 g_delay_msn;
static u64 g_delay_ns;

static int delay_msn(struct h_net *n, int from, const u8 *pkt, u32 len,
		     u64 *at)
{
	struct mr_hdr h;

	(void)n;
	if (from == 0 && mr_wire_decode(pkt, len, &h, NULL) > 0 &&
	    h.opcode == MR_OP_SEND && h.msn == g_delay_msn && !h.gen)
		*at += g_delay_ns;
	return 0;
}

/* Two SENDs refused out of order (the second is seen first). */
static void test_rnr_reordered(void)
{
	static const u64 delays[] = { 20, 40, 60, 80, 120, 200, 400 };
	u32 d, stuck = 0, ok_all = 1;

	for (d = 0; d < sizeof(delays) / sizeof(delays[0]); d++) {
		struct h_net *n = net(0, 30 + d);
		int ok, i;

		h_connect(n, 0, 0x50, 0x60);
		n->filter = delay_msn;
		g_delay_msn = 0x50;
		g_delay_ns = delays[d] * US;
		fill(n, 0, 0, 4000, 3);
		for (i = 0; i < 4; i++)
			h_post(n, 0, 0, MR_WR_SEND, i * 1000, 1000, 0, 0);
		h_run_for(n, 1 * MS);
		for (i = 0; i < 4; i++)
			h_post_recv(n, 1, 0, 0x100000 + i * 0x1000, 0x1000);
		ok = h_run(n, 2 * SEC) == 0 && nrecv_cqe(n, 1, 0) == 4;
		for (i = 0; ok && i < 4; i++)
			if (wr_status(n, 0, i) != MR_WC_OK ||
			    !same(n, 0, i * 1000, 1, 0x100000 + i * 0x1000, 1000))
				ok = 0;
		if (!ok) {
			ok_all = 0;
			stuck++;
			tap_diag("first SEND delayed %llu us: stuck (rq_msn %#x nak %#x rnr %u gen %u/%u)",
				 (unsigned long long)delays[d],
				 n->host[1].qps[0].qp.rq_msn,
				 n->host[1].qps[0].qp.nak_msn,
				 n->host[1].qps[0].qp.rnr_nak,
				 n->host[0].qps[0].qp.gen,
				 n->host[1].qps[0].qp.rq_gen);
		}
		h_net_free(n);
	}
	tap_ok(ok_all, "RNR for a later SEND seen before an earlier one: all complete (%u of 7 timings stuck)",
	       stuck);
}

/* Remote errors */

static void test_remote_access(void)
{
	struct h_net *n = net(0, 41);
	u32 rk = n->host[1].rkey;
	struct mr_wr w;
	int k[6], ok;

	h_connect(n, 0, 1, 2);
	h_post_recv(n, 1, 0, 0x500000, 0x1000);
	fill(n, 0, 0, 0x10000, 5);
	w = mkwr(MR_WR_WRITE, 4096, 0x100000, rk, 0, 0);
	k[0] = h_post_wr(n, 0, 0, &w, 0);
	w = mkwr(MR_WR_WRITE, 4096, 0x101000, rk, 0, 0);
	k[1] = h_post_wr(n, 0, 0, &w, 0x1000);
	w = mkwr(MR_WR_WRITE, 4096, 0x102000, rk + 1, 0, 0);
	k[2] = h_post_wr(n, 0, 0, &w, 0x2000);
	w = mkwr(MR_WR_WRITE, 4096, 0x103000, rk, 0, 0);
	k[3] = h_post_wr(n, 0, 0, &w, 0x3000);
	w = mkwr(MR_WR_SEND, 100, 0, 0, 0, 0);
	k[4] = h_post_wr(n, 0, 0, &w, 0x4000);
	ok = h_run(n, 10 * SEC) == 0;
	tap_ok(ok && wr_status(n, 0, k[0]) == MR_WC_OK &&
	       wr_status(n, 0, k[1]) == MR_WC_OK &&
	       wr_status(n, 0, k[2]) == MR_WC_REM_ACCESS_ERR &&
	       wr_status(n, 0, k[3]) == MR_WC_WR_FLUSH_ERR &&
	       wr_status(n, 0, k[4]) == MR_WC_WR_FLUSH_ERR &&
	       wr_cqes_in_order(n, 0),
	       "bad rkey: older WRITEs complete OK, it fails REM_ACCESS, the rest flush, in order");
	tap_ok(same(n, 0, 0, 1, 0x100000, 0x2000) &&
	       n->host[0].qps[0].qp.state == MR_QP_ERR &&
	       n->host[0].qp_err_status[0] == MR_WC_REM_ACCESS_ERR &&
	       n->host[1].qps[0].qp.state == MR_QP_ERR &&
	       n->host[1].qp_errors == 1 && nrecv_cqe(n, 1, 0) == 0,
	       "both QPs in error, the older data landed, the later SEND consumed no receive");
	tap_ok(mr_qp_post(&n->host[0].qps[0].qp, &n->host[0].wrs[0].wr,
			  n->now) < 0, "posting on a QP in error fails");
	h_net_free(n);

	/* out of bounds WRITE, READ with a bad key, atomic out of bounds */
	{
		static const u8 ops[] = { MR_WR_WRITE, MR_WR_READ,
					  MR_WR_FETCH_ADD };
		u32 i;

		ok = 1;
		for (i = 0; i < 3; i++) {
			n = net(i == 1 ? 30000 : 0, 42 + i);
			rk = n->host[1].rkey;
			h_connect(n, 0, 1, 2);
			w = mkwr(MR_WR_WRITE, 64, 0x1000, rk, 0, 0);
			h_post_wr(n, 0, 0, &w, 0);
			if (ops[i] == MR_WR_WRITE)
				w = mkwr(MR_WR_WRITE, 200, MEM - 100, rk, 0, 0);
			else if (ops[i] == MR_WR_READ)
				w = mkwr(MR_WR_READ, 200, 0x1000, rk ^ 0x40, 0, 0);
			else
				w = mkwr(MR_WR_FETCH_ADD, 8, MEM, rk, 0, 0);
			h_post_wr(n, 0, 0, &w, 0x100);
			h_post(n, 0, 0, MR_WR_WRITE, 0, 10, 0x2000, 0);
			if (h_run(n, 10 * SEC) || wr_status(n, 0, 0) != MR_WC_OK ||
			    wr_status(n, 0, 1) != MR_WC_REM_ACCESS_ERR ||
			    wr_status(n, 0, 2) != MR_WC_WR_FLUSH_ERR) {
				ok = 0;
				tap_diag("case %u: %d %d %d", i, wr_status(n, 0, 0),
					 wr_status(n, 0, 1), wr_status(n, 0, 2));
			}
			h_net_free(n);
		}
		tap_ok(ok, "WRITE out of bounds, READ with a bad rkey (3%% loss), atomic out of bounds: REM_ACCESS_ERR");
	}
}

/*
 * A READ whose response is still on its way when a later message fails:
 * IB would complete the READ with its data and fail the later message.
 */
static void test_read_before_nak(void)
{
	struct h_net *n = net(0, 45);
	u32 rk = n->host[1].rkey;
	struct mr_wr w;
	int ok;

	n->link[1].rate_bps = 1000000000ull;	/* the 1 MiB response takes 8 ms */
	h_connect(n, 0, 1, 2);
	fill(n, 1, 0x100000, 1u << 20, 3);
	w = mkwr(MR_WR_READ, 1u << 20, 0x100000, rk, 0, 0);
	h_post_wr(n, 0, 0, &w, 0x400000);
	w = mkwr(MR_WR_WRITE, 8, 0x1000, rk + 1, 0, 0);
	h_post_wr(n, 0, 0, &w, 0);
	ok = h_run(n, 1 * SEC) == 0;
	tap_ok(ok && wr_status(n, 0, 0) == MR_WC_OK &&
	       wr_status(n, 0, 1) == MR_WC_REM_ACCESS_ERR &&
	       same(n, 1, 0x100000, 0, 0x400000, 1u << 20),
	       "READ before a failing WRITE completes OK with its data (got %d, %d)",
	       wr_status(n, 0, 0), wr_status(n, 0, 1));
	h_net_free(n);
}

/* The NAK of a failed READ is lost: the requester must still learn. */
static int g_nak_drops;

static int drop_nak(struct h_net *n, int from, const u8 *pkt, u32 len,
		    u64 *at)
{
	struct mr_hdr h;
	struct mr_ack a;
	u32 i;

	(void)n;
	(void)at;
	if (from != 1 || g_nak_drops >= 2 || mr_wire_decode(pkt, len, &h, &a) < 0 ||
	    h.opcode != MR_OP_ACK)
		return 0;
	for (i = 0; i < a.nqp; i++) {
		if (a.qp[i].status == MR_QPS_REM_ACCESS) {
			g_nak_drops++;
			return 1;
		}
	}
	return 0;
}

static void test_lost_nak(void)
{
	static const u8 ops[] = { MR_WR_WRITE, MR_WR_READ, MR_WR_CMP_SWAP };
	u32 i, ok = 1;

	for (i = 0; i < 3; i++) {
		struct h_net *n = net(0, 50 + i);
		struct mr_wr w = mkwr(ops[i], 8, 0x1000, n->host[1].rkey + 1,
				      0, 0);

		h_connect(n, 0, 1, 2);
		n->filter = drop_nak;
		g_nak_drops = 0;
		h_post_wr(n, 0, 0, &w, 0);
		if (h_run(n, 1 * SEC) || g_nak_drops != 2 ||
		    wr_status(n, 0, 0) != MR_WC_REM_ACCESS_ERR) {
			ok = 0;
			tap_diag("%s: status %d after %d NAKs dropped",
				 i ? (i == 1 ? "READ" : "CMP_SWAP") : "WRITE",
				 wr_status(n, 0, 0), g_nak_drops);
		}
		h_net_free(n);
	}
	tap_ok(ok, "the first two NAKs lost: WRITE, READ and atomic still fail REM_ACCESS (ACK_REQ)");
}

static void test_recv_too_small(void)
{
	struct h_net *n = net(0, 61);
	int ok;
	const struct mr_cqe *rc;

	h_connect(n, 0, 1, 2);
	h_post_recv(n, 1, 0, 0x100000, 100);
	h_post_recv(n, 1, 0, 0x200000, 5000);
	h_post(n, 0, 0, MR_WR_SEND, 0, 1000, 0, 0);
	h_post(n, 0, 0, MR_WR_SEND, 0, 1000, 0, 0);
	ok = h_run(n, 10 * SEC) == 0;
	rc = recv_cqe(n, 1, 0, 0);
	tap_ok(ok && wr_status(n, 0, 0) == MR_WC_REM_INV_REQ_ERR &&
	       wr_status(n, 0, 1) == MR_WC_WR_FLUSH_ERR &&
	       n->host[0].qp_err_status[0] == MR_WC_REM_INV_REQ_ERR,
	       "SEND larger than the receive: REM_INV_REQ_ERR, the next flushes");
	tap_ok(rc && rc->status == MR_WC_LOC_LEN_ERR && H_COOKIE_SSN(rc->cookie) == 0 &&
	       nrecv_cqe(n, 1, 0) == 1 && n->host[1].qps[0].qp.state == MR_QP_ERR,
	       "the responder's receive completes with LOC_LEN_ERR, its QP in error");
	h_net_free(n);
}

/* The peer is gone: retry exhaustion */
static void test_retry_exceeded(void)
{
	struct h_net *n = net(0, 71);
	struct mr_qp_attr a;
	u64 t0;
	int ok;

	h_attr_default(n, &a);
	a.timeout_ns = 1 * MS;
	a.retry_cnt = 3;
	h_connect_attr(n, 0, 1, 2, &a);
	h_post(n, 0, 0, MR_WR_WRITE, 0, 100, 0x1000, 0);
	ok = h_run(n, 1 * SEC) == 0;
	tap_ok(ok && wr_status(n, 0, 0) == MR_WC_OK, "link up: the WRITE completes");
	n->link[0].down = 1;
	n->link[1].down = 1;
	t0 = n->now;
	h_post(n, 0, 0, MR_WR_WRITE, 0, 100, 0x1000, 0);
	h_post(n, 0, 0, MR_WR_SEND, 0, 100, 0, 0);
	ok = h_run(n, 1 * SEC) == 0;
	tap_ok(ok && wr_status(n, 0, 1) == MR_WC_RETRY_EXC_ERR &&
	       wr_status(n, 0, 2) == MR_WC_WR_FLUSH_ERR &&
	       n->host[0].qp_err_status[0] == MR_WC_RETRY_EXC_ERR,
	       "link down: RETRY_EXC_ERR, then FLUSH");
	{
		u64 dt = n->host[0].wrs[1].done ?
			 n->host[0].wrs[1].done_at - t0 : 0;

		/* a timeout counts at least 2 x rto_max_ns (100 ms) */
		u64 lim = 4 * 2 * (u64)n->host[0].conn.cfg.rto_max_ns;

		tap_ok(dt >= lim && dt <= lim + 20 * MS,
		       "after (retry_cnt+1) x max(timeout, 2 x rto_max) without progress (%llu us)",
		       (unsigned long long)dt / 1000);
	}
	h_net_free(n);
}

static void test_set_error_detach(void)
{
	struct h_net *n = net(0, 81);
	u32 i, nops;
	int ok;

	h_connect(n, 0, 1, 2);
	for (i = 0; i < 3; i++)
		h_post(n, 0, 0, MR_WR_WRITE, 0, 100000, 0x100000, 0);
	/* the first contact's round trip, then a window sent, nothing acked */
	h_run_for(n, 13 * US);
	mr_qp_set_error(&n->host[0].qps[0].qp, n->now);
	ok = 1;
	for (i = 0; i < 3; i++)
		if (wr_status(n, 0, i) != MR_WC_WR_FLUSH_ERR)
			ok = 0;
	tap_ok(ok && n->host[0].ncqe == 3 && !n->host[0].qp_errors &&
	       n->host[0].qps[0].qp.state == MR_QP_ERR,
	       "set_error: every request completes WR_FLUSH_ERR, no error callback");
	h_run_for(n, 10 * MS);
	tap_ok(n->host[0].conn.dsn_nxt != 0x1000 + 81 &&
	       n->host[0].conn.dsn_una == n->host[0].conn.dsn_nxt &&
	       n->host[1].conn.dsn_cum == n->host[0].conn.dsn_nxt,
	       "its segments already numbered still settle at the peer (%u)",
	       n->host[0].conn.dsn_nxt - (0x1000 + 81));
	h_net_free(n);

	/* detach with segments in flight; another QP goes on */
	n = net(50000, 82);
	h_connect(n, 0, 1, 2);
	h_connect(n, 1, 3, 4);
	fill(n, 0, 0x100000, 0x10000, 8);
	h_post(n, 0, 0, MR_WR_WRITE, 0, 2u << 20, 0x200000, 0);
	h_run_for(n, 20 * US);
	/*
	 * What is sent in the last 20 us before the detach is lost: it must
	 * be resent after it, as NOPs (random loss alone may leave nothing
	 * to resend by then).
	 */
	n->link[0].down = 1;
	h_run_for(n, 20 * US);
	n->link[0].down = 0;
	mr_qp_detach(&n->host[0].qps[0].qp);
	mr_qp_detach(&n->host[0].qps[0].qp);	/* idempotent */
	n->host[0].wrs[0].done = 1;
	h_post(n, 0, 1, MR_WR_WRITE, 0x100000, 0x10000, 0x600000, 0);
	ok = h_run(n, 10 * SEC) == 0;
	h_run_for(n, 50 * MS);
	nops = (u32)n->host[0].conn.stats[MR_ST_TX_NOPS];
	tap_ok(ok && wr_status(n, 0, 1) == MR_WC_OK &&
	       same(n, 0, 0x100000, 1, 0x600000, 0x10000) &&
	       n->host[0].qps[0].qp.state == MR_QP_RESET &&
	       !n->host[0].qps[0].qp.conn,
	       "detach a QP mid-transfer: the other QP's WRITE completes intact");
	tap_ok(nops > 0 && n->host[0].conn.dsn_una == n->host[0].conn.dsn_nxt &&
	       n->host[1].conn.dsn_cum == n->host[0].conn.dsn_nxt &&
	       mr_conn_idle(&n->host[0].conn),
	       "the detached QP's lost segments went as %u NOPs; the peer's DSN window caught up",
	       nops);
	h_net_free(n);
}

/* Responder drop rules, white-box */
static void test_drops(void)
{
	struct ep *e = ep_new(NULL, 1, PEER, 1);
	struct mr_hdr h;
	u32 d = PEER;
	int r;

	ep_qp(e, 0, NULL);
	ep_qp(e, 1, NULL);
	e->recv_posted[0] = 100;
#define RX(expect_reason, what) do { \
		r = ep_rx(e, &h, 0); \
		tap_ok(r == MR_RXA_DROP && e->last_rx.reason == expect_reason, \
		       "%s -> %s (got %d/%s)", what, mr_drop_name(expect_reason), \
		       r, mr_drop_name(e->last_rx.reason)); \
	} while (0)
	ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x200, 0, d, d, 8, 0, 8);
	h.dst_qpn = 0x999;
	d++;
	RX(MR_DROP_NO_QP, "unknown destination QP");
	ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x200, 0, d, d, 8, 0, 8);
	h.src_qpn = EP_PEER_QPN(1);
	d++;
	RX(MR_DROP_WRONG_PEER, "source QP not the QP's peer");
	ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x200 + MR_MSG_WND, 0, d, d, 8, 0, 8);
	d++;
	RX(MR_DROP_MSN_WINDOW, "msn = rq_msn + 64");
	ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x1ff, 0, d, d, 8, 0, 8);
	d++;
	RX(MR_DROP_DUP, "msn older than rq_msn");
	ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x200, 0, d, d, 16, 0, 8);
	d++;
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_WRITE, "first segment of a 16-byte WRITE placed");
	ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x200, 0, d, d, 24, 8, 8);
	d++;
	RX(MR_DROP_INCONSISTENT, "same msn, different msg_len");
	ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x200, 0, d, d, 16, 8, 8);
	h.rkey ^= 1;
	d++;
	RX(MR_DROP_INCONSISTENT, "same msn, different rkey");
	ep_hdr_req(e, &h, MR_OP_SEND, 0, 0x200, 0, d, d, 16, 8, 8);
	d++;
	RX(MR_DROP_INCONSISTENT, "same msn, different opcode");
	ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x200, 0, d, d, 16, 8, 8);
	h.gen = 1;
	d++;
	RX(MR_DROP_STALE_GEN, "a generation the responder never started");
	ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x200, 0, d, d, 16, 8, 8);
	d++;
	r = ep_rx(e, &h, 0);
	tap_ok(r == MR_RXA_WRITE && e->qp[0].rq_msn == 0x201,
	       "the second segment completes the message");
	/* responses the requester did not ask for */
	ep_hdr_req(e, &h, MR_OP_READ_RESP, 0, 0x100, 0, d, d, 8, 0, 8);
	d++;
	RX(MR_DROP_MSN_WINDOW, "READ response for a message never posted");
	ep_post(e, 0, MR_WR_WRITE, 8, 1);
	ep_post(e, 0, MR_WR_READ, 8, 2);
	ep_tx(e);
	ep_hdr_req(e, &h, MR_OP_READ_RESP, 0, 0x100, 0, d, d, 8, 0, 8);
	d++;
	RX(MR_DROP_INCONSISTENT, "READ response for a WRITE");
	ep_hdr_req(e, &h, MR_OP_READ_RESP, 0, 0x101, 0, d, d, 16, 0, 8);
	d++;
	RX(MR_DROP_INCONSISTENT, "READ response with another length");
	ep_hdr_req(e, &h, MR_OP_ATOMIC_RESP, 0, 0x101, 0, d, d, 8, 0, 0);
	d++;
	RX(MR_DROP_INCONSISTENT, "atomic response for a READ");
	ep_hdr_req(e, &h, MR_OP_READ_RESP, 0, 0x101, 0, d, d, 8, 0, 8);
	h.gen = 3;
	d++;
	RX(MR_DROP_STALE_GEN, "READ response of another generation");
	ep_hdr_req(e, &h, MR_OP_READ_RESP, 0, 0x101, 0, d, d, 8, 0, 8);
	d++;
	r = ep_rx(e, &h, 0);
	ep_hdr_req(e, &h, MR_OP_READ_RESP, 0, 0x101, 0, d, d, 8, 0, 8);
	d++;
	RX(MR_DROP_DUP, "READ response after the READ completed locally");
	/* a QP in error */
	mr_qp_set_error(&e->qp[1], e->now);
	ep_hdr_req(e, &h, MR_OP_WRITE, 1, 0x200, 0, d, d, 8, 0, 8);
	d++;
	RX(MR_DROP_QP_STATE, "request to a QP in error");
	tap_ok(e->c.dsn_cum == d, "every refused segment is settled in the DSN window");
	memset(&h, 0, sizeof(h));
	h.opcode = MR_OP_UD_SEND;
	h.dst_qpn = 1;
	h.src_qpn = 1;
	RX(MR_DROP_BAD_OPCODE, "a UD datagram handed to the RC engine");
	/* an RTR-only QP refuses responses */
	{
		struct mr_qp_attr at;

		ep_qp_attr_default(&at, 2);
		mr_qp_connect(&e->qp[2], &e->c, &at, e->now);
		ep_hdr_req(e, &h, MR_OP_READ_RESP, 2, 0x100, 0, d, d, 8, 0, 8);
		d++;
		RX(MR_DROP_QP_STATE, "response to a QP that is only RTR");
		ep_hdr_req(e, &h, MR_OP_WRITE, 2, 0x200, 0, d, d, 0, 0, 0);
		d++;
		r = ep_rx(e, &h, 0);
		tap_ok(r == MR_RXA_WRITE && e->qp[2].rq_msn == 0x201,
		       "an RTR QP accepts requests");
	}
#undef RX
	ep_free(e);
}

/* Responder: more READ/atomic responses pending than max_dest_rd_atomic */
static void test_rd_atomic_limit(void)
{
	struct ep *e = ep_new(NULL, 1, PEER, 1);
	struct mr_qp_attr at;
	struct mr_hdr h;
	int ai;

	ep_qp_attr_default(&at, 0);
	at.max_dest_rd_atomic = 1;
	ep_qp(e, 0, &at);
	ep_hdr_req(e, &h, MR_OP_READ_REQ, 0, 0x200, 0, PEER, PEER, 4096, 0, 0);
	ep_rx(e, &h, 0);
	ep_hdr_req(e, &h, MR_OP_READ_REQ, 0, 0x201, 1, PEER + 1, PEER + 1, 4096,
		   0, 0);
	ep_rx(e, &h, 0);	/* the first response is not sent yet */
	mr_conn_rx_flush(&e->c, e->now);
	ai = ep_last(e, MR_OP_ACK);
	tap_ok(e->nexec == 1 && e->exec_req[0].msn == 0x200 &&
	       e->exec_req[0].rkey == EP_RKEY && e->exec_req[0].msg_len == 4096 &&
	       ai >= 0 && e->tx[ai].ack.nqp == 1 &&
	       e->tx[ai].ack.qp[0].status == MR_QPS_INV_REQ &&
	       e->tx[ai].ack.qp[0].msn == 0x201 && e->qp[0].state != MR_QP_ERR,
	       "a second READ while max_dest_rd_atomic=1 response is pending: INV_REQ NAK at it");
	ep_tx(e);
	tap_ok(ep_count(e, 0, MR_OP_READ_RESP) == 4 &&
	       e->qp[0].state == MR_QP_ERR,
	       "the older READ's response still goes out, then the QP fails");
	ep_free(e);
}

/* Responder: a SEND whose receive buffer the responder cannot write */
static void test_recv_buffer_error(void)
{
	struct h_net *n = net(0, 43);
	const struct mr_cqe *rc;
	struct mr_wr w;
	int k[2];

	h_connect(n, 0, 1, 2);
	h_post_recv(n, 1, 0, n->host[1].memlen + 0x1000, 0x1000);
	w = mkwr(MR_WR_SEND, 100, 0, 0, 0, 0);
	k[0] = h_post_wr(n, 0, 0, &w, 0);
	k[1] = h_post_wr(n, 0, 0, &w, 0x100);
	h_run(n, 10 * SEC);
	rc = recv_cqe(n, 1, 0, 0);
	tap_ok(wr_status(n, 0, k[0]) == MR_WC_REM_OP_ERR &&
	       wr_status(n, 0, k[1]) == MR_WC_WR_FLUSH_ERR &&
	       n->host[0].qp_err_status[0] == MR_WC_REM_OP_ERR &&
	       rc && rc->status == MR_WC_LOC_PROT_ERR &&
	       n->host[1].qps[0].qp.state == MR_QP_ERR,
	       "a receive buffer the responder cannot write: REM_OP_ERR at the requester, LOC_PROT_ERR on the receive (%d, %d)",
	       wr_status(n, 0, k[0]), rc ? rc->status : -1);

	/*
	 * Both QPs back to RESET and up again with the same PSNs (as
	 * pyverbs' rereg tests do): the next SEND goes through.
	 */
	mr_qp_detach(&n->host[0].qps[0].qp);
	mr_qp_detach(&n->host[1].qps[0].qp);
	h_connect(n, 0, 1, 2);
	h_post_recv(n, 1, 0, 0x500000, 0x1000);
	k[0] = h_post_wr(n, 0, 0, &w, 0x200);
	h_run(n, 10 * SEC);
	rc = recv_cqe(n, 1, 0, 1);
	tap_ok(wr_status(n, 0, k[0]) == MR_WC_OK && rc &&
	       rc->status == MR_WC_OK && rc->byte_len == 100,
	       "after RESET and reconnection with the same PSNs, a SEND completes (%d, %d)",
	       wr_status(n, 0, k[0]), rc ? rc->status : -1);
	h_net_free(n);
}

/* Local work requests are the glue's: the engine refuses them. */
static void test_local_refused(void)
{
	struct h_net *n = net(0, 44);
	struct mr_wr w = mkwr(MR_WR_LOCAL, 0, 0, 0, 0, 0);
	u32 nxt;

	h_connect(n, 0, 1, 2);
	nxt = n->host[0].qps[0].qp.sq_nxt;
	tap_ok(mr_qp_post(&n->host[0].qps[0].qp, &w, n->now) < 0 &&
	       n->host[0].qps[0].qp.sq_nxt == nxt,
	       "MR_WR_LOCAL is refused and takes no message number");
	h_net_free(n);
}

/* Requester: the glue could not place a READ response */
static void test_local_placement_error(void)
{
	struct ep *e = ep_new(NULL, 1, PEER, 1);

	ep_qp(e, 0, NULL);
	ep_post(e, 0, MR_WR_READ, 100, 1);
	ep_post(e, 0, MR_WR_WRITE, 100, 2);
	ep_tx(e);
	e->rx_status = MR_RXS_LOCAL;
	resp(e, MR_OP_READ_RESP, 0x100, PEER, 100, 0, 100);
	tap_ok(e->qp[0].state == MR_QP_ERR && e->ncqe == 2 &&
	       e->cqe[0].cqe.status == MR_WC_LOC_PROT_ERR &&
	       e->cqe[1].cqe.status == MR_WC_WR_FLUSH_ERR &&
	       e->err_status[0] == MR_WC_LOC_PROT_ERR,
	       "a READ response the glue cannot place fails the READ with LOC_PROT_ERR, flushes the rest");
	ep_free(e);
}

/* Connect and RTS argument checks */
static void test_connect_checks(void)
{
	struct ep *e = ep_new(NULL, 1, PEER, 1);
	struct mr_qp_attr a;
	struct mr_qp *qp = &e->qp[0];
	int bad = 0;

#define BADC(stmt) do { \
		ep_qp_attr_default(&a, 0); \
		stmt; \
		if (!mr_qp_connect(qp, &e->c, &a, e->now)) { \
			bad++; \
			tap_diag("accepted: %s", #stmt); \
			mr_qp_detach(qp); \
		} \
	} while (0)
	BADC(a.dest_qpn = 1);
	BADC(a.dest_qpn = 0x1000000);
	BADC(a.seg_size = 255);
	BADC(a.seg_size = e->c.cfg.mtu + 1);
	BADC(a.max_rd_atomic = MR_MAX_RD_ATOMIC + 1);
	BADC(a.max_dest_rd_atomic = MR_MAX_RD_ATOMIC + 1);
	mr_qp_init(qp, 1, qp->sq, qp->sq_slots, qp->rq);
	BADC((void)0);
	mr_qp_init(qp, EP_QPN(0), qp->sq, qp->sq_slots, qp->rq);
#undef BADC
	tap_ok(!bad, "mr_qp_connect rejects bad dest_qpn, mtu, rd_atomic, and QPN 0/1");
	ep_qp_attr_default(&a, 0);
	tap_ok(mr_qp_rts(qp, &a, e->now) < 0 &&
	       mr_qp_connect(qp, &e->c, &a, e->now) == 0 &&
	       mr_qp_connect(qp, &e->c, &a, e->now) < 0 &&
	       mr_qp_post(qp, &(struct mr_wr){ .opcode = MR_WR_SEND }, e->now) < 0 &&
	       mr_qp_rts(qp, &a, e->now) == 0 && mr_qp_rts(qp, &a, e->now) < 0,
	       "RTS only from RTR; connect only from RESET; no posting before RTS");
	tap_ok(ep_post(e, 0, MR_WR_CMP_SWAP, 4, 1) < 0 &&
	       ep_post(e, 0, 0, 8, 1) < 0 && ep_post(e, 0, MR_WC_RECV, 8, 1) < 0 &&
	       ep_post(e, 0, MR_WR_WRITE, MR_MAX_MSG_LEN + 1, 1) < 0 &&
	       ep_post(e, 0, MR_WR_WRITE, MR_MAX_MSG_LEN, 1) == 0,
	       "post rejects an atomic of 4 bytes, unknown opcodes, > 2 GiB");
	{
		struct mr_wr w = { .opcode = MR_WR_FETCH_ADD, .len = 8,
				   .raddr = 0x1004 };

		tap_ok(mr_qp_post(qp, &w, e->now) < 0,
		       "post rejects an unaligned atomic");
	}
	ep_free(e);
}

/*
 * READ and atomic after WRITE: they see the WRITE even if its packets lag.
 * (The READ comes last: a READ's data is sampled when its response is
 * sent, so a later unfenced atomic could show in it, as IB allows.)
 */
static int delay_writes(struct h_net *n, int from, const u8 *pkt, u32 len,
			u64 *at)
{
	struct mr_hdr h;

	(void)n;
	if (from == 0 && mr_wire_decode(pkt, len, &h, NULL) > 0 &&
	    h.opcode == MR_OP_WRITE)
		*at += 300 * US;
	return 0;
}

static void test_read_after_write(void)
{
	u32 round, ok = 1;

	for (round = 0; round < 2; round++) {
		struct h_net *n = net(round ? 50000 : 0, 91 + round);
		u32 rk = n->host[1].rkey;
		struct mr_wr w;
		u64 v0, v1;

		h_connect(n, 0, 1, 2);
		n->filter = delay_writes;
		fill(n, 0, 0, 0x10000, 13);
		w = mkwr(MR_WR_WRITE, 0x10000, 0x300000, rk, 0, 0);
		h_post_wr(n, 0, 0, &w, 0);
		w = mkwr(MR_WR_FETCH_ADD, 8, 0x300000, rk, 0, 0);
		w.swap_add = 1;
		h_post_wr(n, 0, 0, &w, 0x200000);
		w = mkwr(MR_WR_READ, 0x10000, 0x300000, rk, 0, 0);
		h_post_wr(n, 0, 0, &w, 0x100000);
		memcpy(&v0, n->host[0].mem, 8);
		if (h_run(n, 10 * SEC) || wr_status(n, 0, 2) != MR_WC_OK ||
		    !same(n, 0, 8, 0, 0x100008, 0x10000 - 8) ||
		    memcmp(n->host[0].mem + 0x200000, &v0, 8))
			ok = 0;
		memcpy(&v1, n->host[0].mem + 0x100000, 8);
		if (v1 != v0 + 1)
			ok = 0;
		h_net_free(n);
	}
	tap_ok(ok, "atomic and READ after a WRITE whose packets lag 300us see its data, in order (0%% and 5%% loss)");
}

/* Atomics exactly once, in order, under loss and duplication */
static void test_atomics_once(void)
{
	struct h_net *n = net(100000, 101);
	u32 rk = n->host[1].rkey, i, ok = 1;
	u64 v, sim = 1000, *ctr = (u64 *)(n->host[1].mem + 0x700000);

	n->link[0].dup_ppm = 100000;
	n->link[1].dup_ppm = 100000;
	n->link[0].reorder_ppm = 100000;
	n->link[0].reorder_ns = 20000;
	h_connect(n, 0, 0xfffff0, 7);
	*ctr = sim;
	/* every tenth is a CMP_SWAP that matches (if executed in order) */
	for (i = 0; i < 300; i++) {
		struct mr_wr w = mkwr(i % 10 == 9 ? MR_WR_CMP_SWAP :
				      MR_WR_FETCH_ADD, 8, 0x700000, rk, 0, 0);

		if (i % 10 == 9) {
			w.compare = sim;
			w.swap_add = 5000000 + i;
			sim = w.swap_add;
		} else {
			w.swap_add = 3;
			sim += 3;
		}
		h_post_wr(n, 0, 0, &w, 8 * i);
	}
	if (h_run(n, 60 * SEC))
		ok = 0;
	sim = 1000;
	for (i = 0; i < 300; i++) {
		memcpy(&v, n->host[0].mem + 8 * i, 8);
		if (v != sim || wr_status(n, 0, i) != MR_WC_OK) {
			if (ok)
				tap_diag("atomic %u returned %llu, want %llu", i,
					 (unsigned long long)v,
					 (unsigned long long)sim);
			ok = 0;
		}
		sim = i % 10 == 9 ? 5000000 + i : sim + 3;
	}
	tap_ok(ok && *ctr == sim && n->host[1].conn.drops[MR_DROP_DUP] > 0,
	       "300 atomics at 10%% loss + 10%% duplication: each executed once, in order (ctr=%llu)",
	       (unsigned long long)*ctr);
	h_net_free(n);
}


/*
 * Many QPs, all of them busy, over a connection that serves them in turn:
 * every QP of both hosts keeps a mix of WRITEs, READs, atomics, SENDs and
 * WRITEs with immediate outstanding, on a 50 Mbit/s link whose window
 * holds far fewer segments than there are QPs. A QP waits several of its
 * own timeouts for its turn; that is the connection serving others, not
 * the peer failing to answer, and must not count against its retries
 * (issue #24). Nor may a QP whose request the peer has received and is
 * answering in its turn ask the peer again and again (ACK_REQ).
 */
#define SC_QPS		256
#define SC_OPS		8
#define SC_WIN(q, k)	((u64)(q) * 0x8000 + (u64)(k) * 0x1000)	/* peer writes */
#define SC_RO(q)	(0x800000 + (u64)(q) * 0x1000)	/* peer reads */
#define SC_ATOM(q)	(0x900000 + (u64)(q) * 8)
#define SC_LOC(q, k)	(0xa00000 + (u64)(q) * 0x8000 + (u64)(k) * 0x1000)
#define SC_RECV(q, k)	(0x1200000 + (u64)(q) * 0x8000 + (u64)(k) * 0x1000)
#define SC_MEM		0x1a00000

static const u8 sc_op[SC_OPS] = {
	MR_WR_WRITE, MR_WR_READ, MR_WR_FETCH_ADD, MR_WR_SEND,
	MR_WR_WRITE_IMM, MR_WR_READ, MR_WR_CMP_SWAP, MR_WR_WRITE,
};

static u32 sc_len(u32 q, u32 k)
{
	return sc_op[k] == MR_WR_FETCH_ADD || sc_op[k] == MR_WR_CMP_SWAP ?
	       8 : 1 + (q * 977 + k * 1311) % 4096;
}

static void test_scale_mix(u32 loss_ppm, u8 retry_cnt, const char *name)
{
	struct mr_conn_cfg cfg;
	struct mr_qp_attr a;
	struct h_net *n;
	u32 q, k, h, bad = 0, nerr = 0;
	u64 ackreq = 0, data = 0;
	int ok;

	mr_conn_cfg_default(&cfg);
	cfg.max_window = 32 * 1024;
	cfg.init_window = 32 * 1024;
	cfg.rto_max_ns = 10 * MS;
	n = h_net_new(&cfg, SC_MEM, 97 + loss_ppm, 0x2000, 0xfffff200);
	for (h = 0; h < 2; h++) {
		n->link[h].rate_bps = 50000000;
		n->link[h].loss_ppm = loss_ppm;
	}
	h_attr_default(n, &a);
	/* Each QP's retries end (retry_cnt + 1) x 20 ms without an answer. */
	a.timeout_ns = 1 * MS;
	a.retry_cnt = retry_cnt;
	for (q = 0; q < SC_QPS; q++)
		h_connect_attr(n, q, 0x10000 * q + 7, 0x10000 * q + 9, &a);
	for (h = 0; h < 2; h++) {
		fill(n, (int)h, SC_RO(0), SC_QPS * 0x1000, 31 + h);
		fill(n, (int)h, SC_LOC(0, 0), SC_QPS * 0x8000, 57 + h);
		for (q = 0; q < SC_QPS; q++)
			for (k = 0; k < 2; k++)
				h_post_recv(n, (int)h, q, SC_RECV(q, k), 0x1000);
	}
	for (k = 0; k < SC_OPS; k++) {
		for (q = 0; q < SC_QPS; q++) {
			for (h = 0; h < 2; h++) {
				u8 op = sc_op[k];
				u32 len = sc_len(q, k);
				u64 ra = op == MR_WR_READ ? SC_RO(q) :
					 op == MR_WR_FETCH_ADD ||
					 op == MR_WR_CMP_SWAP ? SC_ATOM(q) :
					 SC_WIN(q, k);

				if (op == MR_WR_FETCH_ADD)
					h_post_atomic(n, (int)h, q, op, SC_LOC(q, k),
						      ra, q + 1, 0);
				else if (op == MR_WR_CMP_SWAP)
					h_post_atomic(n, (int)h, q, op, SC_LOC(q, k),
						      ra, 0x5151, q + 1);
				else
					h_post(n, (int)h, q, op, SC_LOC(q, k), len,
					       ra, q << 8 | k);
			}
		}
	}
	ok = h_run(n, 20 * SEC) == 0;
	for (h = 0; h < 2; h++) {
		const struct h_host *x = &n->host[h];
		const struct h_host *y = &n->host[1 - h];
		u32 i;

		nerr += (u32)x->qp_errors;
		ackreq += x->conn.stats[MR_ST_TX_ACKREQ];
		data += x->conn.stats[MR_ST_TX_DATA];
		for (i = 0; i < x->nwr; i++) {
			const struct h_wr *w = &x->wrs[i];

			if (!w->done || w->cqe.status != MR_WC_OK)
				bad++;
		}
		/* What each op left, on both sides. */
		for (q = 0; q < SC_QPS && ok && !bad; q++) {
			u64 v;

			for (k = 0; k < SC_OPS; k++) {
				u32 len = sc_len(q, k);

				switch (sc_op[k]) {
				case MR_WR_WRITE:
				case MR_WR_WRITE_IMM:
					if (memcmp(y->mem + SC_WIN(q, k),
						   x->mem + SC_LOC(q, k), len))
						bad++;
					break;
				case MR_WR_READ:
					if (memcmp(x->mem + SC_LOC(q, k),
						   y->mem + SC_RO(q), len))
						bad++;
					break;
				case MR_WR_SEND:
					if (memcmp(y->mem + SC_RECV(q, 0),
						   x->mem + SC_LOC(q, k), len))
						bad++;
					break;
				}
			}
			/* FETCH_ADD saw 0, CMP_SWAP saw q + 1 and swapped. */
			memcpy(&v, x->mem + SC_LOC(q, 2), 8);
			bad += v != 0;
			memcpy(&v, x->mem + SC_LOC(q, 6), 8);
			bad += v != q + 1;
			memcpy(&v, y->mem + SC_ATOM(q), 8);
			bad += v != 0x5151;
		}
	}
	tap_ok(ok && !bad && !nerr,
	       "%s: %u QPs x %u mixed ops from each host, each QP waiting its turn for longer than its retries last: all complete, every byte right (%u wrong or failed, %u QP errors)",
	       name, SC_QPS, SC_OPS, bad, nerr);
	tap_ok(ackreq <= (loss_ppm ? data / 20 : SC_QPS / 8),
	       "%s: a request the peer is answering is not asked about again: %llu ACK_REQs for %llu data segments",
	       name, (unsigned long long)ackreq, (unsigned long long)data);
	h_net_free(n);
}

/*
 * The same busy QPs when the link goes down under them: every QP of both
 * hosts fails, those with something on the wire and those only waiting
 * for their turn alike, within one retry time of the last answer (plus
 * the sweep's period), and not twice that (issue #24).
 */
static void test_scale_cut(void)
{
	struct mr_conn_cfg cfg;
	struct mr_qp_attr a;
	struct h_net *n;
	u32 q, k, h, nfail = 0, bad = 0;
	u64 cut, retry, last = 0;

	mr_conn_cfg_default(&cfg);
	cfg.max_window = 32 * 1024;
	cfg.init_window = 32 * 1024;
	cfg.rto_max_ns = 10 * MS;
	n = h_net_new(&cfg, SC_MEM, 131, 0x3000, 0xfffff300);
	for (h = 0; h < 2; h++)
		n->link[h].rate_bps = 50000000;
	h_attr_default(n, &a);
	a.timeout_ns = 1 * MS;
	a.retry_cnt = 1;
	retry = 2 * 2 * cfg.rto_max_ns;	/* (retry_cnt + 1) x 2 rto_max */
	for (q = 0; q < SC_QPS; q++)
		h_connect_attr(n, q, 0x10000 * q + 7, 0x10000 * q + 9, &a);
	for (k = 0; k < 40; k++)
		for (q = 0; q < SC_QPS; q++)
			for (h = 0; h < 2; h++)
				h_post(n, (int)h, q, k % 2 ? MR_WR_READ :
				       MR_WR_WRITE, SC_LOC(q, k % 8), 3000,
				       k % 2 ? SC_RO(q) : SC_WIN(q, k % 8), 0);
	h_run_for(n, 100 * MS);
	cut = n->now;
	n->link[0].down = 1;
	n->link[1].down = 1;
	h_run(n, n->now + 2 * SEC);
	for (h = 0; h < 2; h++) {
		const struct h_host *x = &n->host[h];
		u32 i;

		for (i = 0; i < x->nwr; i++) {
			const struct h_wr *w = &x->wrs[i];

			if (!w->done) {
				bad++;
				continue;
			}
			if (w->cqe.status == MR_WC_RETRY_EXC_ERR) {
				nfail++;
				if (w->done_at > last)
					last = w->done_at;
			} else if (w->cqe.status != MR_WC_OK &&
				   w->cqe.status != MR_WC_WR_FLUSH_ERR) {
				bad++;
			}
		}
		if ((u32)x->qp_errors != SC_QPS)
			bad++;
	}
	tap_ok(!bad && nfail == 2 * SC_QPS,
	       "link cut under %u busy QPs per host: every QP fails, its oldest request with RETRY_EXC_ERR, the rest flushed (%u RETRY_EXC_ERR, %u wrong)",
	       SC_QPS, nfail, bad);
	tap_ok(last && last - cut <= retry + 2 * cfg.rto_max_ns,
	       "and within one retry time of the cut (%llu ms, retry time %llu ms)",
	       (unsigned long long)(last - cut) / MS,
	       (unsigned long long)retry / MS);
	h_net_free(n);
}

int main(void)
{
	tap_start();
	test_all_ops(0, "lossless");
	test_all_ops(100000, "10% loss");
	test_write_imm();
	test_seg_size(0, "lossless");
	test_seg_size(100000, "10% loss");
	test_many_qps(0, "lossless");
	test_many_qps(50000, "5% loss");
	test_window_fence();
	test_rnr();
	test_rnr_then_ok();
	test_rnr_done_msg();
	test_rnr_vs_timeout();
	test_rnr_neighbour();
	test_rnr_reordered();
	test_remote_access();
	test_recv_buffer_error();
	test_local_refused();
	test_read_before_nak();
	test_lost_nak();
	test_recv_too_small();
	test_retry_exceeded();
	test_set_error_detach();
	test_drops();
	test_rd_atomic_limit();
	test_local_placement_error();
	test_connect_checks();
	test_read_after_write();
	test_atomics_once();
	test_scale_mix(0, 0, "256 QPs, lossless");
	test_scale_mix(10000, 3, "256 QPs, 1% loss");
	test_scale_cut();
	return tap_done();
}
