// SPDX-License-Identifier: GPL-2.0-only
/*
 * Integrity matrix: random mixes of every operation and size, in both
 * directions over several QPs, at 0/1/5/10/20% loss with duplication and
 * reordering. Every byte, every completion and every atomic result is
 * checked; no QP may fail.
 */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "harness.h"

#define MEM		(32u << 20)
#define SRC_BASE	0u		/* outgoing WRITE/SEND data */
#define DST_BASE	(8u << 20)	/* the peer WRITEs here */
#define RECV_BASE	(16u << 20)	/* receive buffers */
#define RSRC_BASE	(24u << 20)	/* READ sources (never written) */
#define RDST_BASE	(28u << 20)	/* READ destinations */
#define ATOM_BASE	(31u << 20)	/* counters and atomic results */
#define NQP		3
#define RECV_LEN	0x4000
#define MAX_RECV	150		/* per QP: 3 x 150 x 16 KiB < 8 MiB */
#define SEC		1000000000ull

struct op {
	int host, k;		/* requester and its h_wr index */
	u32 qp;
	u8 opcode;
	u32 len;
	u64 laddr, raddr;
	u32 ssn;		/* SEND: index of the receive it consumes */
	u64 expect;		/* atomics: the original value it must see */
};

struct mix {
	struct op ops[2000];
	u32 nops;
	u64 rng;
	u64 src_off[2], dst_off[2], rdst_off[2];
	u32 nsend[2][NQP];
	u64 ctr[2][NQP];	/* model of the counter each QP's atomics hit */
	u32 natom[2];
};

static u64 rnd(struct mix *m)
{
	u64 x = m->rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	m->rng = x;
	return x;
}

/* A size: mostly small, sometimes several MTUs, sometimes empty. */
static u32 rnd_len(struct mix *m, u32 max)
{
	u32 r = (u32)(rnd(m) % 100);

	if (r < 5)
		return 0;
	if (r < 50)
		return 1 + (u32)(rnd(m) % 1500);
	return 1 + (u32)(rnd(m) % max);
}

static u64 ctr_addr(u32 qp)
{
	return ATOM_BASE + 8 * qp;
}

static void post_one(struct h_net *n, struct mix *m, int h)
{
	struct op *o = &m->ops[m->nops];
	u32 q = (u32)(rnd(m) % NQP), kind = (u32)(rnd(m) % 100);
	u32 rkey = n->host[1 - h].rkey;
	struct mr_wr w;

	memset(o, 0, sizeof(*o));
	memset(&w, 0, sizeof(w));
	o->host = h;
	o->qp = q;
	w.rkey = rkey;
	if (kind < 35) {
		/* a tenth of them with immediate data, consuming a receive */
		o->opcode = MR_WR_WRITE;
		if (kind < 4 && m->nsend[h][q] < MAX_RECV) {
			o->opcode = MR_WR_WRITE_IMM;
			o->ssn = m->nsend[h][q]++;
			w.imm = 0x3e000000u + m->nops;
		}
		o->len = rnd_len(m, 64 * 1024);
		o->laddr = SRC_BASE + m->src_off[h];
		o->raddr = DST_BASE + m->dst_off[h];
		m->src_off[h] += o->len;
		m->dst_off[h] += o->len;
	} else if (kind < 65 && m->nsend[h][q] < MAX_RECV) {
		o->opcode = kind % 3 == 0 ? MR_WR_SEND :
			    kind % 3 == 1 ? MR_WR_SEND_IMM : MR_WR_SEND_INV;
		o->len = rnd_len(m, RECV_LEN);
		o->laddr = SRC_BASE + m->src_off[h];
		o->ssn = m->nsend[h][q]++;
		m->src_off[h] += o->len;
		w.imm = 0x5e000000u + m->nops;
	} else if (kind < 88) {
		o->opcode = MR_WR_READ;
		o->len = rnd_len(m, 64 * 1024);
		o->laddr = RDST_BASE + m->rdst_off[h];
		o->raddr = RSRC_BASE + (rnd(m) % (3u << 20));
		m->rdst_off[h] += o->len;
	} else {
		u64 *c = &m->ctr[h][q];

		o->len = 8;
		o->raddr = ctr_addr(q);
		o->laddr = ATOM_BASE + 0x1000 + 8 * m->natom[h]++;
		o->expect = *c;
		if (kind < 95) {
			o->opcode = MR_WR_FETCH_ADD;
			w.swap_add = 1 + rnd(m) % 1000;
			*c += w.swap_add;
		} else {
			o->opcode = MR_WR_CMP_SWAP;
			w.compare = (rnd(m) & 1) ? *c : *c + 1;
			w.swap_add = rnd(m);
			if (w.compare == *c)
				*c = w.swap_add;
		}
	}
	if (m->src_off[h] > DST_BASE - SRC_BASE ||
	    m->dst_off[h] > RECV_BASE - DST_BASE ||
	    m->rdst_off[h] > ATOM_BASE - RDST_BASE || m->natom[h] > 4000)
		abort();	/* the mix outgrew the memory layout */
	w.opcode = o->opcode;
	w.len = o->len;
	w.raddr = o->raddr;
	o->k = h_post_wr(n, h, q, &w, o->laddr);
	m->nops++;
}

static int check(struct h_net *n, struct mix *m, char *why, size_t wl)
{
	u32 i, h, q;

	for (h = 0; h < 2; h++) {
		if (n->host[h].qp_errors) {
			snprintf(why, wl, "host %u: %d QP errors", h,
				 n->host[h].qp_errors);
			return 0;
		}
	}
	for (i = 0; i < m->nops; i++) {
		const struct op *o = &m->ops[i];
		struct h_host *me = &n->host[o->host];
		struct h_host *peer = &n->host[1 - o->host];
		const struct h_wr *x = &me->wrs[o->k];
		int ok = x->done && x->cqe.status == MR_WC_OK &&
			 x->cqe.opcode == o->opcode && x->cqe.byte_len == o->len;

		switch (o->opcode) {
		case MR_WR_WRITE_IMM:
			ok = ok && peer->qps[o->qp].recv[o->ssn].used;
			fallthrough;
		case MR_WR_WRITE:
			ok = ok && !memcmp(me->mem + o->laddr,
					   peer->mem + o->raddr, o->len);
			break;
		case MR_WR_SEND:
		case MR_WR_SEND_IMM:
		case MR_WR_SEND_INV: {
			const struct h_qp *pq = &peer->qps[o->qp];
			u64 at = pq->recv[o->ssn].addr;

			ok = ok && pq->recv[o->ssn].used &&
			     !memcmp(me->mem + o->laddr, peer->mem + at, o->len);
			break;
		}
		case MR_WR_READ:
			ok = ok && !memcmp(me->mem + o->laddr,
					   peer->mem + o->raddr, o->len);
			break;
		default:
			ok = ok && !memcmp(me->mem + o->laddr, &o->expect, 8);
			break;
		}
		if (!ok) {
			snprintf(why, wl, "op %u (host %d qp %u %u len %u): done %d status %d",
				 i, o->host, o->qp, o->opcode, o->len, x->done,
				 x->cqe.status);
			return 0;
		}
	}
	/* receive completions: in order, right length and immediate */
	for (h = 0; h < 2; h++) {
		struct h_host *r = &n->host[h];
		u32 seen[NQP] = { 0 };

		for (i = 0; i < r->ncqe; i++) {
			const struct mr_cqe *c = &r->cqes[i];

			if (c->opcode != MR_WC_RECV &&
			    c->opcode != MR_WC_RECV_WRITE_IMM)
				continue;
			q = r->cqe_qp[i];
			if (c->status != MR_WC_OK || H_COOKIE_SSN(c->cookie) != seen[q]) {
				snprintf(why, wl, "host %u qp %u: receive %u out of order or failed",
					 h, q, seen[q]);
				return 0;
			}
			seen[q]++;
		}
		for (q = 0; q < NQP; q++) {
			if (seen[q] != m->nsend[1 - h][q]) {
				snprintf(why, wl, "host %u qp %u: %u receives completed, %u sent",
					 h, q, seen[q], m->nsend[1 - h][q]);
				return 0;
			}
			{
				u64 v;

				memcpy(&v, r->mem + ctr_addr(q), 8);
				if (v != m->ctr[1 - h][q]) {
					snprintf(why, wl, "host %u counter %u: %llu, want %llu",
						 h, q, (unsigned long long)v,
						 (unsigned long long)m->ctr[1 - h][q]);
					return 0;
				}
			}
		}
	}
	return 1;
}

static void run(u32 loss_pct, u32 dup_pct, u32 reorder_pct, u32 nops, u64 seed)
{
	struct h_net *n = h_net_new(NULL, MEM, seed, (u32)(seed * 0x9e3779b9u) | 1,
				    (u32)(seed * 0x85ebca6bu) | 1);
	static struct mix m;
	char why[200] = "";
	u32 i, h, q;
	int ok;

	memset(&m, 0, sizeof(m));
	m.rng = seed * 0x2545f4914f6cdd1dull + 1;
	for (i = 0; i < 2; i++) {
		n->link[i].loss_ppm = loss_pct * 10000;
		n->link[i].dup_ppm = dup_pct * 10000;
		n->link[i].reorder_ppm = reorder_pct * 10000;
		n->link[i].reorder_ns = 15000;
	}
	for (q = 0; q < NQP; q++)
		h_connect(n, q, (u32)(rnd(&m) & 0xffffff), (u32)(rnd(&m) & 0xffffff));
	for (h = 0; h < 2; h++) {
		for (i = 0; i < (8u << 20); i++)
			n->host[h].mem[SRC_BASE + i] = (u8)(rnd(&m) >> 24);
		for (i = 0; i < (4u << 20); i++)
			n->host[h].mem[RSRC_BASE + i] = (u8)(rnd(&m) >> 24);
		for (q = 0; q < NQP; q++) {
			u64 v = rnd(&m) >> 8;

			memcpy(n->host[h].mem + ctr_addr(q), &v, 8);
			m.ctr[1 - h][q] = v;	/* the peer's atomics hit it */
			for (i = 0; i < MAX_RECV; i++)
				h_post_recv(n, h, q, RECV_BASE +
					    (u64)(q * MAX_RECV + i) * RECV_LEN,
					    RECV_LEN);
		}
	}
	for (i = 0; i < nops; i++)
		post_one(n, &m, (int)(rnd(&m) & 1));
	ok = h_run(n, 120 * SEC) == 0;
	if (!ok)
		snprintf(why, sizeof(why), "did not finish");
	ok = ok && check(n, &m, why, sizeof(why));
	if (!ok)
		strcat(why, " ");
	tap_ok(ok, "%u%% loss, %u%% dup, %u%% reorder: %u random ops, both directions, %u QPs: all intact %s(%.1f ms, retx %llu+%llu)",
	       loss_pct, dup_pct, reorder_pct, nops, NQP, why,
	       n->now / 1e6,
	       (unsigned long long)(n->host[0].conn.stats[MR_ST_RETX_SACK] +
				    n->host[1].conn.stats[MR_ST_RETX_SACK]),
	       (unsigned long long)(n->host[0].conn.stats[MR_ST_RETX_RTO] +
				    n->host[1].conn.stats[MR_ST_RETX_RTO]));
	h_net_free(n);
}

int main(void)
{
	static const u32 loss[] = { 0, 1, 5, 10, 20 };
	u32 i;

	tap_start();
	for (i = 0; i < 5; i++)
		run(loss[i], 2, 5, 600, 1000 + i);
	run(0, 20, 20, 600, 2000);
	run(5, 10, 30, 600, 2001);
	return tap_done();
}
