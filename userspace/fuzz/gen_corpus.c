// SPDX-License-Identifier: GPL-2.0-only
/*
 * Writes the seed corpora of the two fuzz targets:
 *
 *   gen_corpus DIR    ->  DIR/wire/<name>  valid packets of every opcode and
 *                                          flag set, ACKs, edge cases
 *                         DIR/rx/<name>    scripts for fuzz_rx (fuzz_rx.h)
 *
 * The output is deterministic; `make -f core.mk fuzz-corpus` regenerates
 * userspace/fuzz/corpus/ with it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <metaroce/mr_wire.h>
#include "fuzz_rx.h"

static const char *outdir;

static void put(const char *sub, const char *name, const u8 *b, u32 n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, sub);
	if (mkdir(path, 0755) && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, sub, name);
	f = fopen(path, "wb");
	if (!f || fwrite(b, 1, n, f) != n || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/* wire corpus */

static void wire_pkt(const char *name, struct mr_hdr *h)
{
	u8 buf[MR_HLEN_MAX + MR_MAX_PAYLOAD];
	int hl = mr_wire_encode(buf, sizeof(buf), h);
	u32 i;

	if (hl < 0) {
		fprintf(stderr, "%s: encode failed (%d)\n", name, hl);
		exit(1);
	}
	for (i = 0; i < h->plen; i++)
		buf[hl + i] = (u8)(i * 7);
	put("wire", name, buf, (u32)hl + h->plen);
}

static void base(struct mr_hdr *h, u8 op, u16 flags)
{
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	h->flags = flags;
	h->epoch = 0x1a2b3c4d;
	h->tsval = 12345;
	if (mr_op_sequenced(op)) {
		h->psn = 0xfffffffe;
		h->path = 3;
	}
	if (mr_op_has_dsn(op) && op != MR_OP_NOP) {
		h->dst_qpn = 0x100;
		h->src_qpn = 0x200;
		h->msn = 0xfffffe;
		h->gen = 1;
	}
	if (mr_op_has_dsn(op))
		h->dsn = 0x10;
}

static void gen_wire(void)
{
	struct mr_hdr h;
	struct mr_ack a;
	u8 buf[MR_BASE_HLEN + MR_ACKH_LEN + MR_MAX_PATHS * MR_ACK_PATH_LEN +
	       MR_ACK_MAX_QP * MR_ACK_QP_LEN];
	u32 i, np, nq;
	int len;

	base(&h, MR_OP_WRITE, MR_F_SYN | MR_F_ACKREQ);
	h.msg_len = 3000;
	h.offset = 2048;
	h.plen = 952;
	h.raddr = 0x10000;
	h.rkey = 0x1234;
	wire_pkt("write", &h);
	h.flags = MR_F_IMM | MR_F_SOLICIT | MR_F_RETX;
	h.imm = 0xdeadbeef;
	wire_pkt("write-imm", &h);
	h.flags = 0;
	h.msg_len = h.offset = h.plen = 0;
	wire_pkt("write-empty", &h);

	base(&h, MR_OP_SEND, MR_F_SYN);
	h.msg_len = 100;
	h.plen = 100;
	h.ssn = 7;
	wire_pkt("send", &h);
	h.flags = MR_F_INV | MR_F_ACKREQ;
	h.inv_rkey = 0x4321;
	wire_pkt("send-inv", &h);
	h.flags = MR_F_IMM;
	h.msg_len = MR_MAX_MSG_LEN;
	h.offset = MR_MAX_MSG_LEN - MR_MAX_PAYLOAD;
	h.plen = MR_MAX_PAYLOAD;
	wire_pkt("send-imm-last-4k", &h);

	base(&h, MR_OP_READ_REQ, MR_F_ACKREQ);
	h.msg_len = 65536;
	h.raddr = 0x10000;
	h.rkey = 0x1234;
	wire_pkt("read-req", &h);
	base(&h, MR_OP_READ_RESP, MR_F_RETX);
	h.msg_len = 65536;
	h.offset = 1024;
	h.plen = 1024;
	wire_pkt("read-resp", &h);
	base(&h, MR_OP_CMP_SWAP, 0);
	h.msg_len = 8;
	h.raddr = 0x10008;
	h.rkey = 0x1234;
	h.swap_add = 5;
	h.compare = 6;
	wire_pkt("cmp-swap", &h);
	h.opcode = MR_OP_FETCH_ADD;
	wire_pkt("fetch-add", &h);
	base(&h, MR_OP_ATOMIC_RESP, 0);
	h.msg_len = 8;
	h.orig = 0x0102030405060708ull;
	wire_pkt("atomic-resp", &h);
	base(&h, MR_OP_NOP, MR_F_SYN | MR_F_RETX);
	wire_pkt("nop", &h);
	base(&h, MR_OP_PROBE, MR_F_ACKREQ);
	wire_pkt("probe", &h);
	base(&h, MR_OP_PROBE, MR_F_ACKREQ | MR_F_SYN);
	wire_pkt("probe-hello", &h);
	h.syn_dsn = 0x1a2b3c4d;
	h.cookie = 0x0123456789abcdefull;
	wire_pkt("probe-syn-cookie", &h);
	base(&h, MR_OP_RESET, 0);
	h.reset_epoch = 0x5a5a5a5a;
	h.cookie = 0xfedcba9876543210ull;
	wire_pkt("reset", &h);
	base(&h, MR_OP_ACK_REQ, 0);
	h.dst_qpn = 0x100;
	h.src_qpn = 0x200;
	wire_pkt("ack-req", &h);
	base(&h, MR_OP_UD_SEND, MR_F_IMM);
	h.dst_qpn = 1;
	h.src_qpn = 1;
	h.qkey = 0x80010000;
	h.plen = 256;
	wire_pkt("ud-send", &h);

	for (np = 0; np <= MR_MAX_PATHS; np += 8) {
		for (nq = 0; nq <= MR_ACK_MAX_QP; nq += 8) {
			char name[64];

			memset(&h, 0, sizeof(h));
			h.opcode = MR_OP_ACK;
			h.epoch = 0x1a2b3c4d;
			memset(&a, 0, sizeof(a));
			a.ack_epoch = 0x5a5a5a5a;
			a.dsn_cum = 0xfffffff0;
			a.rate_hint = 25000;
			a.npath = (u8)np;
			a.nqp = (u8)nq;
			for (i = 0; i < np; i++) {
				a.path[i].path = (u8)i;
				a.path[i].base = 0xffffff00 + i;
				a.path[i].ce_cnt = (u16)i;
				a.path[i].rx_cnt = (u16)(100 * i);
				a.path[i].bitmap[i % 8] = 0x8000000f;
			}
			for (i = 0; i < nq; i++) {
				a.qp[i].status = (u8)(i % (MR_QPS_MAX + 1));
				a.qp[i].qpn = 0x100 + i;
				a.qp[i].msn = i;
				a.qp[i].aux = a.qp[i].status == MR_QPS_RNR ? 14 : 0;
			}
			len = mr_wire_encode_ack(buf, sizeof(buf), &h, &a);
			if (len < 0)
				exit(1);
			snprintf(name, sizeof(name), "ack-%up-%uq", np, nq);
			put("wire", name, buf, (u32)len);
		}
	}
	/* edge cases: short, bad version, bad hlen */
	put("wire", "empty", buf, 0);
	memset(buf, 0, sizeof(buf));
	buf[0] = MR_WIRE_VERSION;
	buf[1] = MR_OP_PROBE;
	put("wire", "probe-zero-epoch", buf, MR_BASE_HLEN);
	buf[0] = MR_WIRE_VERSION + 1;
	put("wire", "bad-version", buf, MR_BASE_HLEN);
	buf[0] = 1;		/* version 1: no cookies, not spoken any more */
	put("wire", "version-1", buf, MR_BASE_HLEN);
}

/* rx corpus: record writers */

struct out {
	u8 b[4096];
	u32 n;
};

static void o8(struct out *o, u32 v)
{
	if (o->n >= sizeof(o->b)) {
		fprintf(stderr, "script too long\n");
		exit(1);
	}
	o->b[o->n++] = (u8)v;
}

static void o16(struct out *o, u32 v)
{
	o8(o, v >> 8);
	o8(o, v);
}

static void setup(struct out *o, u32 npaths, u32 bits, u32 thresh, u32 segw)
{
	o->n = 0;
	o8(o, npaths - 1);
	o8(o, bits);
	o8(o, thresh - 1);
	o8(o, segw);
}

/* fz_ops_sel indices in fuzz_rx.c */
enum { W = 0, S, RQ, RR, CS, FA, AR, NOP, PRB, AQ, UD };

struct data {
	u8 op, flags, path, ep;
	s8 psn, dsn;
	u8 qp, src;
	s8 msn;
	u8 gen, mlen, off, plen, rsel, ssn, imm;
};

static void data(struct out *o, const struct data *d, int ce)
{
	o8(o, FZ_DATA | (ce ? FZ_CE : 0));
	o8(o, d->op);
	o8(o, d->flags);
	o8(o, d->path);
	o8(o, d->ep);
	o8(o, (u8)d->psn);
	o8(o, (u8)d->dsn);
	o8(o, d->qp);
	o8(o, d->src);
	o8(o, (u8)d->msn);
	o8(o, d->gen);
	o8(o, d->mlen);
	o8(o, d->off);
	o8(o, d->plen);
	o8(o, d->rsel);
	o8(o, d->ssn);
	o8(o, d->imm);
}

/* An ACK acknowledging everything sent on @npath paths, with QP blocks. */
static void ack_all(struct out *o, u32 npath, u32 nqp, const u8 *qpb,
		    u32 hint)
{
	u32 i;

	o8(o, FZ_ACK);
	o8(o, npath);
	o8(o, nqp);
	o8(o, 0);
	o8(o, hint);
	o8(o, 0);
	for (i = 0; i < npath; i++) {
		o8(o, i);
		o8(o, 0);
		o8(o, 0);	/* every psn sent */
		o8(o, 0x02);	/* 2 more received, none CE */
		o8(o, 0);
	}
	for (i = 0; i < nqp * FZ_ACK_QP; i++)
		o8(o, qpb[i]);
}

static void rtime(struct out *o, u32 v)
{
	o8(o, FZ_TIME);
	o16(o, v);
}

static void tx(struct out *o)
{
	o8(o, FZ_TX);
	o8(o, 255);
}

static void flush(struct out *o)
{
	o8(o, FZ_FLUSH);
}

static void post(struct out *o, u32 q, u32 op, u32 len)
{
	o8(o, FZ_POST);
	o8(o, q);
	o8(o, op);
	o8(o, len);
}

static void admin(struct out *o, u32 act, u32 q)
{
	o8(o, FZ_ADMIN);
	o8(o, act);
	o8(o, q);
}

static void save(struct out *o, const char *name)
{
	put("rx", name, o->b, o->n);
}

static void gen_rx(void)
{
	struct out o;
	struct data d;
	u8 qpb[16];
	u32 i;

	/* WRITE to the RTR-only QP 2, three segments, one duplicated */
	setup(&o, 4, 0, 3, 2);
	memset(&d, 0, sizeof(d));
	d.op = W;
	d.qp = 2;
	d.mlen = 6;		/* 3000 */
	d.plen = 2;		/* an MTU or the rest */
	d.rsel = 1;
	for (i = 0; i < 3; i++) {
		d.off = (u8)i;
		d.path = (u8)i;
		data(&o, &d, i == 1);
	}
	d.dsn = -1;		/* the last one again */
	d.psn = 1;
	data(&o, &d, 0);
	flush(&o);
	rtime(&o, 100);
	save(&o, "write-in");

	/* SENDs into posted receives, out of order, one with IMM, one INV */
	setup(&o, 8, 0, 3, 1);
	memset(&d, 0, sizeof(d));
	d.op = S;
	d.qp = 0;
	d.mlen = 3;		/* 100 */
	d.plen = 2;
	d.msn = 1;
	d.ssn = 1;
	d.flags = MR_F_IMM | MR_F_ACKREQ;
	data(&o, &d, 0);
	d.msn = 0;
	d.ssn = 0;
	d.flags = 0;
	d.imm = 1;		/* INV */
	d.path = 1;
	data(&o, &d, 0);
	flush(&o);
	d.msn = 2;
	d.ssn = 2;
	d.mlen = 6;
	d.imm = 0;
	for (i = 0; i < 3; i++) {
		d.off = (u8)i;
		d.path = (u8)(2 + i);
		data(&o, &d, 0);
	}
	flush(&o);
	save(&o, "send-in");

	/* a READ and atomics to QP 1; the responses go out and are acked */
	setup(&o, 2, 0, 3, 1);
	memset(&d, 0, sizeof(d));
	d.op = RQ;
	d.qp = 1;
	d.mlen = 6;
	d.flags = MR_F_ACKREQ;
	data(&o, &d, 0);
	d.op = FA;
	d.msn = 1;
	d.path = 1;
	data(&o, &d, 0);
	d.op = CS;
	d.msn = 2;
	data(&o, &d, 0);
	flush(&o);
	tx(&o);
	ack_all(&o, 2, 0, NULL, 2);
	rtime(&o, 10);
	tx(&o);
	ack_all(&o, 2, 0, NULL, 2);
	save(&o, "read-atomic-in");

	/* our WRITE/READ/SEND/FETCH_ADD go out and complete */
	setup(&o, 4, 0, 3, 2);
	tx(&o);
	qpb[0] = MR_QPS_OK;
	qpb[1] = 0;
	qpb[2] = 1;
	qpb[3] = 0;
	qpb[4] = MR_QPS_OK;
	qpb[5] = 1;
	qpb[6] = 1;
	qpb[7] = 0;
	ack_all(&o, 4, 2, qpb, 0);
	memset(&d, 0, sizeof(d));
	d.op = RR;
	d.qp = 0;
	d.msn = 1;
	d.plen = 2;
	for (i = 0; i < 2; i++) {
		d.off = (u8)i;
		data(&o, &d, 0);
	}
	d.op = AR;
	d.qp = 1;
	d.msn = 1;
	d.imm = 42;
	data(&o, &d, 0);
	rtime(&o, 4000);
	tx(&o);
	save(&o, "ours-complete");

	/* losses: nothing acknowledged, timeouts, retransmissions */
	setup(&o, 3, FZ_SET_TIMEOUT, 1, 0);
	tx(&o);
	for (i = 0; i < 6; i++) {
		rtime(&o, 12000);
		tx(&o);
	}
	ack_all(&o, 3, 0, NULL, 0);
	rtime(&o, 100);
	save(&o, "timeouts");

	/*
	 * RNR: a SEND with no receive (the fourth, three are posted; its SSN
	 * fits three messages not seen yet), then receives, then the new gen
	 */
	setup(&o, 2, FZ_SET_RNR_RETRY, 3, 1);
	memset(&d, 0, sizeof(d));
	d.op = S;
	d.qp = 1;
	d.mlen = 3;
	d.plen = 2;
	d.msn = 3;
	d.ssn = 3;
	data(&o, &d, 0);
	flush(&o);
	for (i = 0; i < 4; i++)
		post(&o, 0x81, 0, 3);
	d.gen = 1;
	data(&o, &d, 0);
	flush(&o);
	save(&o, "rnr");

	/* RNR of ours: a block says RNR, we wait and rewind */
	setup(&o, 1, FZ_SET_RNR_RETRY, 3, 0);
	tx(&o);
	qpb[0] = MR_QPS_RNR;
	qpb[1] = 1;
	qpb[2] = 0;
	qpb[3] = 1;
	ack_all(&o, 1, 1, qpb, 0);
	rtime(&o, 100);
	tx(&o);
	ack_all(&o, 1, 1, qpb, 0);
	rtime(&o, 100);
	tx(&o);
	save(&o, "rnr-ours");

	/* NAK for our QP 0 */
	setup(&o, 2, 0, 3, 0);
	tx(&o);
	qpb[0] = MR_QPS_REM_ACCESS;
	qpb[1] = 0;
	qpb[2] = 0;
	qpb[3] = 0;
	ack_all(&o, 2, 1, qpb, 0);
	tx(&o);
	save(&o, "nak");

	/*
	 * epochs: a stranger with a wrong cookie, then with the right one,
	 * silence, the stranger again, one under the previous secret
	 */
	setup(&o, 2, 0, 3, 0);
	memset(&d, 0, sizeof(d));
	d.op = NOP;
	data(&o, &d, 0);
	d.ep = 1 | 4;
	data(&o, &d, 0);
	d.ep = 1;
	data(&o, &d, 0);
	rtime(&o, 30000);
	data(&o, &d, 0);
	d.ep = 3;
	data(&o, &d, 0);
	rtime(&o, 30000);
	d.ep = 8;
	data(&o, &d, 0);
	flush(&o);
	save(&o, "epoch");

	/*
	 * first contact: our hello, the peer's challenge, our data with the
	 * cookie, a forged challenge and a repeated one
	 */
	setup(&o, 0x40 + 0x80 + 2, 0, 3, 1);
	post(&o, 0, 0, 11);
	tx(&o);
	rtime(&o, 12000);
	tx(&o);
	admin(&o, 6, 0);
	tx(&o);
	admin(&o, 6, 1);
	admin(&o, 6, 2);
	ack_all(&o, 2, 0, NULL, 2);
	admin(&o, 6, 0);
	tx(&o);
	save(&o, "hello");

	/* wrap everything, pacing, a rate hint, probes */
	setup(&o, 16, FZ_SET_OUR_WRAP | FZ_SET_PEER_WRAP | FZ_SET_MSN_WRAP |
	      FZ_SET_PACING | FZ_SET_SMALL_MTU, 2, 3);
	ack_all(&o, 0, 0, NULL, 2);
	for (i = 0; i < 8; i++)
		post(&o, i & 1, i, 11);
	for (i = 0; i < 6; i++) {
		tx(&o);
		rtime(&o, 20);
		ack_all(&o, 16, 0, NULL, 2);
	}
	memset(&d, 0, sizeof(d));
	d.op = PRB;
	d.flags = MR_F_ACKREQ;
	data(&o, &d, 1);
	flush(&o);
	save(&o, "wrap-pacing");

	/*
	 * announcements: ours ahead of our first data, the peer's (a PROBE
	 * with SYN), a reshare, a full run, ACKs
	 */
	setup(&o, 0x80 + 4, 0, 3, 2);
	post(&o, 0, 0, 11);
	tx(&o);
	memset(&d, 0, sizeof(d));
	d.op = PRB;
	d.flags = MR_F_ACKREQ | MR_F_SYN;
	data(&o, &d, 0);
	flush(&o);
	admin(&o, 3, 1);
	rtime(&o, 20);
	ack_all(&o, 16, 0, NULL, 2);
	admin(&o, 3, 2);
	tx(&o);
	save(&o, "announce");

	/* admin: errors, detach, reconnect, reconfigure, fair share, busy */
	setup(&o, 4, FZ_SET_RD1, 3, 1);
	tx(&o);
	admin(&o, 7, 0);
	post(&o, 0, 5, 12);
	tx(&o);
	admin(&o, 7, 0);
	admin(&o, 1, 0);
	admin(&o, 4, 0);
	post(&o, 0, 1, 3);
	admin(&o, 0, 1);
	admin(&o, 2, 0x83);
	admin(&o, 3, 5);
	admin(&o, 5, 0);
	tx(&o);
	rtime(&o, 5000);
	save(&o, "admin");

	/* raw bytes: a NOP, then garbage */
	setup(&o, 1, 0, 3, 0);
	{
		struct mr_hdr h;
		u8 buf[MR_HLEN_MAX];
		int hl;

		memset(&h, 0, sizeof(h));
		h.opcode = MR_OP_NOP;
		h.flags = MR_F_SYN;
		h.epoch = 0x7000000;	/* the default peer epoch */
		h.cookie = 0x0123456789abcdefull;	/* a guess */
		h.psn = 0x7000000;
		h.dsn = 0x7000000;
		hl = mr_wire_encode(buf, sizeof(buf), &h);
		o8(&o, FZ_RAW);
		o16(&o, (u32)hl);
		for (i = 0; i < (u32)hl; i++)
			o8(&o, buf[i]);
		o8(&o, FZ_RAW | FZ_CE);
		o16(&o, 40);
		for (i = 0; i < 40; i++)
			o8(&o, i == 0 ? 1 : i * 37);
	}
	flush(&o);
	save(&o, "raw");

	/*
	 * Two SENDs with SSN 0: the first segment of a two-segment one, a
	 * one-segment one, then the first one's second segment.
	 */
	setup(&o, 2, 0, 3, 1);
	memset(&d, 0, sizeof(d));
	d.op = S;
	d.qp = 0;
	d.mlen = 5;		/* 1025: a 1024-byte segment and 1 byte */
	d.plen = 2;
	data(&o, &d, 0);
	d.msn = 1;
	d.mlen = 3;		/* 100 */
	data(&o, &d, 0);
	d.msn = 0;
	d.mlen = 5;
	d.off = 1;
	data(&o, &d, 0);
	flush(&o);
	save(&o, "ssn-dup");

	/*
	 * A 64 KiB WRITE in 256-byte segments to the RTR-only QP 2: segments
	 * far beyond the first missing one (the segment maps' overflow), some
	 * twice under new DSNs, then the first.
	 */
	setup(&o, 4, FZ_SET_SMALL_MTU, 3, 2);
	memset(&d, 0, sizeof(d));
	d.op = W;
	d.qp = 2;
	d.mlen = 8;		/* 65536 */
	d.plen = 2;
	d.rsel = 1;
	for (i = 0; i < 12; i++) {
		d.off = (u8)(0x80 | (i * 10));	/* segment 20 * i (+ 1) */
		d.imm = (u8)i;
		d.path = (u8)(i % 4);
		data(&o, &d, 0);
		if (i % 3 == 2)
			data(&o, &d, 0);
	}
	d.off = 0;
	data(&o, &d, 0);
	flush(&o);
	save(&o, "segments-far");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
		return 2;
	}
	outdir = argv[1];
	if (mkdir(outdir, 0755) && errno != EEXIST) {
		perror(outdir);
		return 1;
	}
	gen_wire();
	gen_rx();
	return 0;
}
