// SPDX-License-Identifier: GPL-2.0-only
/*
 * Wire format v1 (core/wire.c): every opcode and flag combination round
 * trips through encode and decode; every malformed field is rejected with
 * its -MR_DROP_* reason; the encoders refuse what the decoder would reject.
 */
#include <string.h>
#include "tap.h"
#include <metaroce/mr_wire.h>

#define BUFSZ	(MR_HLEN_MAX + MR_MAX_PAYLOAD + 64)
#define ACKMAX	(MR_BASE_HLEN + MR_ACKH_LEN + MR_MAX_PATHS * MR_ACK_PATH_LEN + \
		 MR_ACK_MAX_QP * MR_ACK_QP_LEN)

/* Byte offsets in an encoded packet. */
#define O_VER		0
#define O_OP		1
#define O_FLAGS		2
#define O_EPOCH		4
#define O_PSN		8
#define O_PATH		12
#define O_HLEN		13
#define O_PLEN		14
#define O_RC		20
#define O_DST		(O_RC + 0)
#define O_SRC		(O_RC + 4)
#define O_DSN		(O_RC + 8)
#define O_GENMSN	(O_RC + 12)
#define O_MSGLEN	(O_RC + 16)
#define O_OFFSET	(O_RC + 20)
#define O_EXT		(O_RC + MR_RC_HLEN)	/* RETH, ssn or orig */
#define O_RETH_RSVD	(O_EXT + 12)
#define O_ACK		20
#define O_ACK_PATH(i)	(O_ACK + MR_ACKH_LEN + (i) * MR_ACK_PATH_LEN)

static const u8 all_ops[] = {
	MR_OP_WRITE, MR_OP_SEND, MR_OP_READ_REQ, MR_OP_READ_RESP,
	MR_OP_CMP_SWAP, MR_OP_FETCH_ADD, MR_OP_ATOMIC_RESP, MR_OP_NOP,
	MR_OP_PROBE, MR_OP_ACK, MR_OP_ACK_REQ, MR_OP_RESET, MR_OP_UD_SEND,
};

#define NOPS (sizeof(all_ops) / sizeof(all_ops[0]))

/* The flags the format allows per opcode (the spec's table, restated). */
static u16 allowed(u8 op)
{
	u16 seq = MR_F_SYN | MR_F_ACKREQ | MR_F_RETX;

	switch (op) {
	case MR_OP_WRITE:
		return seq | MR_F_IMM | MR_F_SOLICIT;
	case MR_OP_SEND:
		return seq | MR_F_IMM | MR_F_INV | MR_F_SOLICIT;
	case MR_OP_READ_REQ:
	case MR_OP_READ_RESP:
	case MR_OP_CMP_SWAP:
	case MR_OP_FETCH_ADD:
	case MR_OP_ATOMIC_RESP:
	case MR_OP_NOP:
		return seq;
	case MR_OP_PROBE:
		return MR_F_SYN | MR_F_ACKREQ;
	case MR_OP_UD_SEND:
		return MR_F_IMM | MR_F_SOLICIT;
	default:
		return 0;
	}
}

static int has_payload(u8 op)
{
	return op == MR_OP_WRITE || op == MR_OP_SEND ||
	       op == MR_OP_READ_RESP || op == MR_OP_UD_SEND;
}

static int is_rc(u8 op)
{
	return op >= MR_OP_WRITE && op <= MR_OP_NOP;
}

/* A valid header for @op/@flags with every field it uses non-trivial. */
static void mk(struct mr_hdr *h, u8 op, u16 flags)
{
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	h->flags = flags;
	h->epoch = 0x12345678;
	h->tsval = 0xdeadbeef;
	if (mr_op_sequenced(op)) {
		h->psn = 0xfffffff0;
		h->path = MR_MAX_PATHS - 1;
	}
	if (is_rc(op) && op != MR_OP_NOP) {
		h->dst_qpn = 0xabcdef;
		h->src_qpn = 0x123456;
		h->msn = 0xfedcba;
		h->gen = 0x5a;
	}
	if (is_rc(op))
		h->dsn = 0x89abcdef;
	switch (op) {
	case MR_OP_WRITE:
	case MR_OP_SEND:
	case MR_OP_READ_RESP:
		h->msg_len = 10000;
		h->offset = 4096;
		h->plen = 1024;
		break;
	case MR_OP_READ_REQ:
		h->msg_len = MR_MAX_MSG_LEN;
		break;
	case MR_OP_CMP_SWAP:
	case MR_OP_FETCH_ADD:
		h->msg_len = 8;
		h->swap_add = 0x0102030405060708ull;
		h->compare = 0x1112131415161718ull;
		break;
	case MR_OP_ATOMIC_RESP:
		h->msg_len = 8;
		h->orig = 0xa1a2a3a4a5a6a7a8ull;
		break;
	case MR_OP_ACK_REQ:
		h->dst_qpn = 0xffffff;
		h->src_qpn = 2;
		break;
	case MR_OP_UD_SEND:
		h->dst_qpn = 1;		/* QP1 (CM) is fine on UD */
		h->src_qpn = 0;
		h->qkey = 0x80010000;
		h->plen = 256;
		break;
	}
	if (op == MR_OP_WRITE || op == MR_OP_READ_REQ || op == MR_OP_CMP_SWAP ||
	    op == MR_OP_FETCH_ADD) {
		h->raddr = op == MR_OP_WRITE || op == MR_OP_READ_REQ ?
			   0x1122334455667789ull : 0x1122334455667780ull;
		h->rkey = 0x99aabbcc;
	}
	/* SEND, and WRITE with immediate (RETH's last word) */
	if (op == MR_OP_SEND || (op == MR_OP_WRITE && (flags & MR_F_IMM)))
		h->ssn = 0xcafebabe;
	if (flags & MR_F_IMM)
		h->imm = 0x01020304;
	if (flags & MR_F_INV)
		h->inv_rkey = 0x05060708;
	if (flags & MR_F_SYN) {
		h->syn_dsn = 0x0badf00d;
		h->cookie = 0xc00c1e00ec40ec40ull;
	}
	if (op == MR_OP_RESET) {
		h->reset_epoch = 0x55667788;
		h->cookie = 0x0102030405060708ull;
	}
}

static int hdr_eq(const struct mr_hdr *a, const struct mr_hdr *b)
{
	return a->opcode == b->opcode && a->path == b->path &&
	       a->flags == b->flags && a->epoch == b->epoch &&
	       a->psn == b->psn && a->tsval == b->tsval &&
	       a->plen == b->plen && a->dst_qpn == b->dst_qpn &&
	       a->src_qpn == b->src_qpn && a->dsn == b->dsn &&
	       a->msn == b->msn && a->gen == b->gen &&
	       a->msg_len == b->msg_len && a->offset == b->offset &&
	       a->raddr == b->raddr && a->rkey == b->rkey &&
	       a->ssn == b->ssn && a->imm == b->imm &&
	       a->inv_rkey == b->inv_rkey && a->swap_add == b->swap_add &&
	       a->compare == b->compare && a->orig == b->orig &&
	       a->syn_dsn == b->syn_dsn && a->cookie == b->cookie &&
	       a->reset_epoch == b->reset_epoch &&
	       a->qkey == b->qkey;
}

/* Encode @h plus h->plen payload bytes; returns the datagram length. */
static int enc(u8 *buf, const struct mr_hdr *h)
{
	int hl = mr_wire_encode(buf, BUFSZ, h);
	u32 i;

	if (hl < 0)
		return hl;
	for (i = 0; i < h->plen; i++)
		buf[hl + i] = (u8)(i * 13 + 1);
	return hl + h->plen;
}

static void mk_ack(struct mr_hdr *h, struct mr_ack *a, u32 npath, u32 nqp)
{
	u32 i, w;

	memset(h, 0, sizeof(*h));
	h->opcode = MR_OP_ACK;
	h->epoch = 0x0badcafe;
	h->tsval = 77;
	memset(a, 0, sizeof(*a));
	a->ack_epoch = 0xfeedf00d;
	a->dsn_cum = 0xfffffffe;
	a->rate_hint = 100000;
	a->npath = (u8)npath;
	a->nqp = (u8)nqp;
	for (i = 0; i < npath; i++) {
		struct mr_ack_path *p = &a->path[i];

		p->path = (u8)(MR_MAX_PATHS - 1 - i);
		p->ce_cnt = (u16)(0xfff0 + i);
		p->rx_cnt = (u16)(i * 1000);
		p->base = 0xffffff00 + i;
		p->tsecr = i * 7;
		for (w = 0; w < MR_PATH_WND / 32; w++)
			p->bitmap[w] = 0x80000001u * (i + w);
	}
	for (i = 0; i < nqp; i++) {
		struct mr_ack_qp *q = &a->qp[i];

		q->status = (u8)(i % (MR_QPS_MAX + 1));
		q->qpn = 2 + i * 0x10101;
		q->gen = (u8)(i * 17);
		q->msn = 0xffffff - i;
		q->aux = q->status == MR_QPS_RNR ? 31 - i % 32 : 0;
	}
}

static int ack_eq(const struct mr_ack *a, const struct mr_ack *b)
{
	u32 i;

	if (a->ack_epoch != b->ack_epoch || a->dsn_cum != b->dsn_cum ||
	    a->rate_hint != b->rate_hint || a->npath != b->npath ||
	    a->nqp != b->nqp)
		return 0;
	for (i = 0; i < a->npath; i++) {
		const struct mr_ack_path *p = &a->path[i], *q = &b->path[i];

		if (p->path != q->path || p->ce_cnt != q->ce_cnt ||
		    p->rx_cnt != q->rx_cnt || p->base != q->base ||
		    p->tsecr != q->tsecr ||
		    memcmp(p->bitmap, q->bitmap, sizeof(p->bitmap)))
			return 0;
	}
	for (i = 0; i < a->nqp; i++) {
		const struct mr_ack_qp *p = &a->qp[i], *q = &b->qp[i];

		if (p->status != q->status || p->qpn != q->qpn ||
		    p->gen != q->gen || p->msn != q->msn || p->aux != q->aux)
			return 0;
	}
	return 1;
}

static int enc_ack(u8 *buf, const struct mr_hdr *h, const struct mr_ack *a)
{
	return mr_wire_encode_ack(buf, ACKMAX, h, a);
}

static int dec(const u8 *buf, u32 len)
{
	struct mr_hdr h;
	struct mr_ack a;

	return mr_wire_decode(buf, len, &h, &a);
}

/* Round trips */

static void test_roundtrip(void)
{
	static u8 buf[BUFSZ];
	u32 i, cases = 0, bad = 0;
	char first[160] = "";

	for (i = 0; i < NOPS; i++) {
		u8 op = all_ops[i];
		u16 al = allowed(op), f;

		if (op == MR_OP_ACK)
			continue;
		/* every subset of the allowed flags */
		for (f = 0;; f = (u16)((f - al) & al)) {
			struct mr_hdr h, d;
			int len, hl;

			if ((f & MR_F_IMM) && (f & MR_F_INV))
				goto next;
			mk(&h, op, f);
			cases++;
			len = enc(buf, &h);
			hl = len < 0 ? len : mr_wire_decode(buf, (u32)len, &d,
							    NULL);
			if (len < 0 || hl < 0 || (u32)hl != mr_wire_hlen(op, f) ||
			    d.hlen != hl || (u32)len != (u32)hl + h.plen ||
			    !hdr_eq(&h, &d)) {
				if (!bad++)
					snprintf(first, sizeof(first),
						 "%s flags %#x: enc %d dec %d",
						 mr_op_name(op), f, len, hl);
			}
next:
			if (f == al)
				break;
		}
	}
	tap_ok(!bad && cases > 100,
	       "every opcode x allowed flag subset round trips (%u cases) %s",
	       cases, first);
}

static void test_roundtrip_payload_bytes(void)
{
	static u8 buf[BUFSZ];
	struct mr_hdr h, d;
	int len, hl;
	u32 i, ok = 1;

	mk(&h, MR_OP_SEND, MR_F_IMM);
	h.plen = MR_MAX_PAYLOAD;
	h.msg_len = MR_MAX_MSG_LEN;
	h.offset = MR_MAX_MSG_LEN - MR_MAX_PAYLOAD;
	len = enc(buf, &h);
	hl = mr_wire_decode(buf, (u32)len, &d, NULL);
	for (i = 0; hl > 0 && i < h.plen; i++)
		if (buf[hl + i] != (u8)(i * 13 + 1))
			ok = 0;
	tap_ok(hl == (int)mr_wire_hlen(MR_OP_SEND, MR_F_IMM) && ok &&
	       hdr_eq(&h, &d) && len == hl + MR_MAX_PAYLOAD,
	       "largest payload at the end of a 2 GiB message round trips");
}

static void test_ack_roundtrip(void)
{
	static const u32 np[] = { 0, 1, 7, MR_MAX_PATHS };
	static const u32 nq[] = { 0, 1, 5, MR_ACK_MAX_QP };
	static u8 buf[ACKMAX];
	u32 i, j, bad = 0, cases = 0;

	for (i = 0; i < 4; i++) {
		for (j = 0; j < 4; j++) {
			struct mr_hdr h, d;
			struct mr_ack a, b;
			int len, hl;

			mk_ack(&h, &a, np[i], nq[j]);
			len = enc_ack(buf, &h, &a);
			memset(&b, 0xa5, sizeof(b));
			hl = len < 0 ? len : mr_wire_decode(buf, (u32)len, &d,
							    &b);
			cases++;
			if (len != (int)(MR_BASE_HLEN + MR_ACKH_LEN +
					 np[i] * MR_ACK_PATH_LEN +
					 nq[j] * MR_ACK_QP_LEN) ||
			    hl != len || d.opcode != MR_OP_ACK ||
			    d.epoch != h.epoch || d.tsval != h.tsval ||
			    d.hlen != len || d.plen || d.flags || d.psn ||
			    d.path || !ack_eq(&a, &b)) {
				bad++;
				tap_diag("ack %u paths %u qps: enc %d dec %d",
					 np[i], nq[j], len, hl);
			}
		}
	}
	tap_ok(!bad, "ACK with 0..16 path blocks and 0..16 QP blocks round trips (%u cases)",
	       cases);
}

/* Truncation and trailing bytes */

static void test_truncation(void)
{
	static u8 buf[BUFSZ];
	u32 i, k, bad = 0, cases = 0;

	for (i = 0; i < NOPS; i++) {
		u8 op = all_ops[i];
		struct mr_hdr h;
		struct mr_ack a;
		u32 hl;
		int len;

		if (op == MR_OP_ACK) {
			mk_ack(&h, &a, MR_MAX_PATHS, MR_ACK_MAX_QP);
			len = enc_ack(buf, &h, &a);
		} else {
			mk(&h, op, allowed(op) & ~MR_F_INV);
			len = enc(buf, &h);
		}
		hl = (u32)len - h.plen;
		for (k = 0; k < (u32)len; k++) {
			int want = k < hl ? -MR_DROP_TRUNCATED :
				   -MR_DROP_BAD_PLEN;
			int got = dec(buf, k);

			cases++;
			if (got != want) {
				if (!bad++)
					tap_diag("%s cut to %u of %d: %d, want %d",
						 mr_op_name(op), k, len, got,
						 want);
			}
		}
		/* and one trailing byte too many */
		cases++;
		if (dec(buf, (u32)len + 1) != -MR_DROP_BAD_PLEN && !bad++)
			tap_diag("%s with a trailing byte accepted",
				 mr_op_name(op));
		cases++;
		if (dec(buf, (u32)len) != (int)hl && !bad++)
			tap_diag("%s intact copy rejected", mr_op_name(op));
	}
	tap_ok(!bad, "truncation at every length and a trailing byte: TRUNCATED/BAD_PLEN (%u cases)",
	       cases);
}

/* Field checks, by mutation of a valid packet */

struct mut {
	u8 buf[BUFSZ];
	u32 len;
};

static void mut_from(struct mut *m, const struct mr_hdr *h)
{
	int len = enc(m->buf, h);

	m->len = len < 0 ? 0 : (u32)len;
}

static int mut_dec(const struct mut *m)
{
	return dec(m->buf, m->len);
}

static void expect(int got, int want, const char *what)
{
	tap_ok(got == want, "%s -> %s (got %s)", what, mr_drop_name(want),
	       got < 0 ? mr_drop_name(got) : "accepted");
}

static void test_version_opcode(void)
{
	struct mr_hdr h;
	struct mut m;
	u32 op, bad = 0, known = 0;

	mk(&h, MR_OP_PROBE, 0);
	mut_from(&m, &h);
	m.buf[O_VER] = 0;
	expect(mut_dec(&m), -MR_DROP_BAD_VERSION, "version 0");
	m.buf[O_VER] = 1;
	expect(mut_dec(&m), -MR_DROP_BAD_VERSION,
	       "version 1 (SYNs prove nothing: not spoken any more)");
	m.buf[O_VER] = 3;
	expect(mut_dec(&m), -MR_DROP_BAD_VERSION, "version 3");
	m.buf[O_VER] = MR_WIRE_VERSION;
	for (op = 0; op < 256; op++) {
		int got, is_known = 0;
		u32 i;

		for (i = 0; i < NOPS; i++)
			if (all_ops[i] == op)
				is_known = 1;
		m.buf[O_OP] = (u8)op;
		got = mut_dec(&m);
		if (is_known) {
			known++;
			if (got == -MR_DROP_BAD_OPCODE)
				bad++;
		} else if (got != -MR_DROP_BAD_OPCODE ||
			   mr_wire_hlen((u8)op, 0)) {
			bad++;
		}
	}
	tap_ok(!bad && known == NOPS,
	       "the 243 unknown opcodes are BAD_OPCODE, the 13 known are not");
}

static void test_flags(void)
{
	u32 i, bit, bad = 0, cases = 0;

	for (i = 0; i < NOPS; i++) {
		u8 op = all_ops[i];

		for (bit = 0; bit < 16; bit++) {
			u16 f = (u16)(1u << bit);
			struct mr_hdr h;
			struct mut m;
			u16 old;

			if (allowed(op) & f)
				continue;
			if (op == MR_OP_ACK) {
				struct mr_ack a;
				int len;

				mk_ack(&h, &a, 1, 1);
				len = enc_ack(m.buf, &h, &a);
				m.len = (u32)len;
			} else {
				mk(&h, op, 0);
				mut_from(&m, &h);
			}
			old = mr_get16(m.buf + O_FLAGS);
			mr_put16(m.buf + O_FLAGS, old | f);
			cases++;
			if (mut_dec(&m) != -MR_DROP_BAD_FLAGS)
				bad++;
			/* the encoder refuses it too */
			if (op != MR_OP_ACK) {
				h.flags |= f;
				if (mr_wire_encode(m.buf, BUFSZ, &h) !=
				    -MR_DROP_BAD_FLAGS)
					bad++;
			}
		}
	}
	tap_ok(!bad && cases > 100,
	       "each flag not allowed for an opcode: decode and encode BAD_FLAGS (%u cases)",
	       cases);
}

static void test_imm_inv(void)
{
	struct mr_hdr h;
	struct mut m;

	mk(&h, MR_OP_SEND, MR_F_IMM);
	mut_from(&m, &h);
	mr_put16(m.buf + O_FLAGS, MR_F_IMM | MR_F_INV);
	expect(mut_dec(&m), -MR_DROP_BAD_FLAGS, "SEND with IMM and INV");
	h.flags |= MR_F_INV;
	expect(mr_wire_encode(m.buf, BUFSZ, &h), -MR_DROP_BAD_FLAGS,
	       "encode SEND with IMM and INV");
}

static void test_base_fields(void)
{
	struct mr_hdr h;
	struct mut m;
	u32 i, bad;

	mk(&h, MR_OP_WRITE, 0);
	mut_from(&m, &h);
	mr_put32(m.buf + O_EPOCH, 0);
	expect(mut_dec(&m), -MR_DROP_BAD_FIELD, "zero epoch");

	bad = 0;
	for (i = 0; i < NOPS; i++) {
		u8 op = all_ops[i];

		if (!mr_op_sequenced(op))
			continue;
		mk(&h, op, 0);
		mut_from(&m, &h);
		m.buf[O_PATH] = MR_MAX_PATHS;
		if (mut_dec(&m) != -MR_DROP_BAD_FIELD)
			bad++;
		m.buf[O_PATH] = 0xff;
		if (mut_dec(&m) != -MR_DROP_BAD_FIELD)
			bad++;
	}
	tap_ok(!bad, "path >= MR_MAX_PATHS on every sequenced opcode -> bad_field");

	bad = 0;
	for (i = 0; i < NOPS; i++) {
		u8 op = all_ops[i];

		if (mr_op_sequenced(op))
			continue;
		if (op == MR_OP_ACK) {
			struct mr_ack a;

			mk_ack(&h, &a, 2, 2);
			m.len = (u32)enc_ack(m.buf, &h, &a);
		} else {
			mk(&h, op, 0);
			mut_from(&m, &h);
		}
		mr_put32(m.buf + O_PSN, 1);
		if (mut_dec(&m) != -MR_DROP_BAD_FIELD)
			bad++;
		mr_put32(m.buf + O_PSN, 0);
		m.buf[O_PATH] = 1;
		if (mut_dec(&m) != -MR_DROP_BAD_FIELD)
			bad++;
	}
	tap_ok(!bad, "psn or path nonzero on ACK, ACK_REQ, UD_SEND -> bad_field");

	/* hlen one word off either way, every opcode */
	bad = 0;
	for (i = 0; i < NOPS; i++) {
		u8 op = all_ops[i];

		if (op == MR_OP_ACK) {
			struct mr_ack a;

			mk_ack(&h, &a, 3, 3);
			m.len = (u32)enc_ack(m.buf, &h, &a);
		} else {
			mk(&h, op, 0);
			mut_from(&m, &h);
		}
		m.buf[O_HLEN]++;
		if (mut_dec(&m) != -MR_DROP_BAD_HLEN)
			bad++;
		m.buf[O_HLEN] -= 2;
		if (mut_dec(&m) != -MR_DROP_BAD_HLEN)
			bad++;
		m.buf[O_HLEN] = 0;
		if (mut_dec(&m) != -MR_DROP_BAD_HLEN)
			bad++;
	}
	tap_ok(!bad, "hlen one word short, one long, or zero on every opcode -> bad_hlen");

	/* plen disagreeing with the datagram */
	mk(&h, MR_OP_WRITE, MR_F_IMM);
	mut_from(&m, &h);
	mr_put16(m.buf + O_PLEN, h.plen + 1);
	expect(mut_dec(&m), -MR_DROP_BAD_PLEN, "plen one more than the datagram");
	mr_put16(m.buf + O_PLEN, h.plen - 1);
	expect(mut_dec(&m), -MR_DROP_BAD_PLEN, "plen one less than the datagram");

	/* payload on opcodes that have none */
	bad = 0;
	for (i = 0; i < NOPS; i++) {
		u8 op = all_ops[i];

		if (has_payload(op))
			continue;
		if (op == MR_OP_ACK) {
			struct mr_ack a;

			mk_ack(&h, &a, 1, 0);
			m.len = (u32)enc_ack(m.buf, &h, &a);
		} else {
			mk(&h, op, 0);
			mut_from(&m, &h);
		}
		mr_put16(m.buf + O_PLEN, 4);
		m.len += 4;
		if (mut_dec(&m) != -MR_DROP_BAD_PLEN)
			bad++;
		/* and the encoder will not produce it */
		if (op != MR_OP_ACK) {
			h.plen = 4;
			if (mr_wire_encode(m.buf, BUFSZ, &h) >= 0)
				bad++;
		}
	}
	tap_ok(!bad, "payload on READ_REQ, atomics, ATOMIC_RESP, NOP, PROBE, ACK, ACK_REQ -> bad_plen");

	/* plen above MR_MAX_PAYLOAD, even with a datagram that long */
	mk(&h, MR_OP_UD_SEND, 0);
	mut_from(&m, &h);
	mr_put16(m.buf + O_PLEN, MR_MAX_PAYLOAD + 1);
	m.len = mr_wire_hlen(MR_OP_UD_SEND, 0) + MR_MAX_PAYLOAD + 1;
	expect(mut_dec(&m), -MR_DROP_BAD_PLEN, "plen MR_MAX_PAYLOAD+1");
	h.plen = MR_MAX_PAYLOAD + 1;
	tap_ok(mr_wire_encode(m.buf, BUFSZ, &h) < 0,
	       "encoder refuses plen MR_MAX_PAYLOAD+1");
}

static void test_rc_fields(void)
{
	struct mr_hdr h;
	struct mut m;
	u32 i, bad;

	/* QPN top bits, on each RC opcode, both QPNs */
	bad = 0;
	for (i = 0; i < NOPS; i++) {
		u8 op = all_ops[i];

		if (!is_rc(op) || op == MR_OP_NOP)
			continue;
		mk(&h, op, 0);
		mut_from(&m, &h);
		mr_put32(m.buf + O_DST, 0x01000002);
		if (mut_dec(&m) != -MR_DROP_BAD_QPN)
			bad++;
		mr_put32(m.buf + O_DST, h.dst_qpn);
		mr_put32(m.buf + O_SRC, 0x80000002);
		if (mut_dec(&m) != -MR_DROP_BAD_QPN)
			bad++;
		mr_put32(m.buf + O_SRC, 1);
		if (mut_dec(&m) != -MR_DROP_BAD_QPN)
			bad++;
		mr_put32(m.buf + O_SRC, h.src_qpn);
		mr_put32(m.buf + O_DST, 0);
		if (mut_dec(&m) != -MR_DROP_BAD_QPN)
			bad++;
		mr_put32(m.buf + O_DST, 1);
		if (mut_dec(&m) != -MR_DROP_BAD_QPN)
			bad++;
		mr_put32(m.buf + O_DST, 2);
		if (mut_dec(&m) < 0)
			bad++;
		/* encoder */
		h.dst_qpn = 1;
		if (mr_wire_encode(m.buf, BUFSZ, &h) != -MR_DROP_BAD_QPN)
			bad++;
		h.dst_qpn = 0x1000000;
		if (mr_wire_encode(m.buf, BUFSZ, &h) != -MR_DROP_BAD_QPN)
			bad++;
	}
	tap_ok(!bad, "RC: QPN top bits, QP0 and QP1 (dst or src) -> bad_qpn; QPN 2 accepted; encoder refuses");

	/* ACK_REQ and UD QPNs */
	mk(&h, MR_OP_ACK_REQ, 0);
	mut_from(&m, &h);
	mr_put32(m.buf + O_DST, 1);
	expect(mut_dec(&m), -MR_DROP_BAD_QPN, "ACK_REQ to QP1");
	mr_put32(m.buf + O_DST, 0x1000000);
	expect(mut_dec(&m), -MR_DROP_BAD_QPN, "ACK_REQ QPN top bits");
	h.src_qpn = 0;
	expect(mr_wire_encode(m.buf, BUFSZ, &h), -MR_DROP_BAD_QPN,
	       "encode ACK_REQ from QP0");
	mk(&h, MR_OP_UD_SEND, 0);
	mut_from(&m, &h);
	mr_put32(m.buf + O_SRC, 0x1000000);
	expect(mut_dec(&m), -MR_DROP_BAD_QPN, "UD_SEND QPN top bits");
	mr_put32(m.buf + O_SRC, 0);
	mr_put32(m.buf + O_RC + 12, 1);
	expect(mut_dec(&m), -MR_DROP_BAD_FIELD, "UD_SEND reserved word");
	h.dst_qpn = 0x1000000;
	expect(mr_wire_encode(m.buf, BUFSZ, &h), -MR_DROP_BAD_QPN,
	       "encode UD_SEND QPN top bits");

	/* msg_len above 2 GiB */
	mk(&h, MR_OP_READ_REQ, 0);
	mut_from(&m, &h);
	mr_put32(m.buf + O_MSGLEN, MR_MAX_MSG_LEN + 1);
	expect(mut_dec(&m), -MR_DROP_BAD_LENGTH, "READ_REQ msg_len 2 GiB + 1");
	mk(&h, MR_OP_WRITE, 0);
	mut_from(&m, &h);
	mr_put32(m.buf + O_MSGLEN, 0xffffffff);
	expect(mut_dec(&m), -MR_DROP_BAD_LENGTH, "WRITE msg_len 4 GiB - 1");

	/* offset + plen beyond the message, each payload RC opcode */
	bad = 0;
	for (i = 0; i < NOPS; i++) {
		u8 op = all_ops[i];

		if (!is_rc(op) || !has_payload(op))
			continue;
		mk(&h, op, 0);
		mut_from(&m, &h);
		mr_put32(m.buf + O_OFFSET, h.msg_len - h.plen + 1);
		if (mut_dec(&m) != -MR_DROP_BAD_LENGTH)
			bad++;
		mr_put32(m.buf + O_OFFSET, h.msg_len - h.plen);
		if (mut_dec(&m) < 0)
			bad++;
		mr_put32(m.buf + O_OFFSET, 0xfffffe00);	/* wraps in u32 */
		if (mut_dec(&m) != -MR_DROP_BAD_LENGTH)
			bad++;
		h.offset = h.msg_len;
		if (mr_wire_encode(m.buf, BUFSZ, &h) != -MR_DROP_BAD_LENGTH)
			bad++;
	}
	tap_ok(!bad, "WRITE/SEND/READ_RESP: offset+plen > msg_len (also wrapping) -> bad_length, = accepted");

	/* empty segment */
	bad = 0;
	for (i = 0; i < NOPS; i++) {
		u8 op = all_ops[i];
		struct mr_hdr d;

		if (!is_rc(op) || !has_payload(op))
			continue;
		mk(&h, op, 0);
		h.plen = 0;
		h.offset = 0;
		if (mr_wire_encode(m.buf, BUFSZ, &h) != -MR_DROP_BAD_LENGTH)
			bad++;
		h.msg_len = 0;
		if (mr_wire_encode(m.buf, BUFSZ, &h) < 0)
			bad++;
		mut_from(&m, &h);
		if (mut_dec(&m) < 0)
			bad++;
		/* zero-length message but a nonzero offset */
		mr_put32(m.buf + O_OFFSET, 1);
		if (mut_dec(&m) != -MR_DROP_BAD_LENGTH)
			bad++;
		mr_put32(m.buf + O_OFFSET, 0);
		mr_put32(m.buf + O_MSGLEN, 5);
		if (mr_wire_decode(m.buf, m.len, &d, NULL) !=
		    -MR_DROP_BAD_LENGTH)
			bad++;
	}
	tap_ok(!bad, "empty segment only for a zero-length message at offset 0");

	mk(&h, MR_OP_READ_REQ, 0);
	mut_from(&m, &h);
	mr_put32(m.buf + O_OFFSET, 8);
	expect(mut_dec(&m), -MR_DROP_BAD_LENGTH, "READ_REQ offset 8");
	h.offset = 8;
	expect(mr_wire_encode(m.buf, BUFSZ, &h), -MR_DROP_BAD_LENGTH,
	       "encode READ_REQ offset 8");

	bad = 0;
	for (i = 0; i < 3; i++) {
		u8 op = i == 0 ? MR_OP_CMP_SWAP : i == 1 ? MR_OP_FETCH_ADD :
			MR_OP_ATOMIC_RESP;
		u32 l;

		for (l = 0; l < 17; l++) {
			mk(&h, op, 0);
			mut_from(&m, &h);
			mr_put32(m.buf + O_MSGLEN, l);
			if ((mut_dec(&m) == -MR_DROP_BAD_LENGTH) != (l != 8))
				bad++;
		}
		mr_put32(m.buf + O_MSGLEN, 8);
		mr_put32(m.buf + O_OFFSET, 8);
		if (mut_dec(&m) != -MR_DROP_BAD_LENGTH)
			bad++;
	}
	tap_ok(!bad, "atomics and ATOMIC_RESP: msg_len != 8 or offset != 0 -> bad_length");

	bad = 0;
	for (i = 0; i < 2; i++) {
		u8 op = i ? MR_OP_FETCH_ADD : MR_OP_CMP_SWAP;
		u32 k;

		for (k = 1; k < 8; k++) {
			mk(&h, op, 0);
			mut_from(&m, &h);
			mr_put64(m.buf + O_EXT, h.raddr + k);
			if (mut_dec(&m) != -MR_DROP_BAD_FIELD)
				bad++;
			h.raddr += k;
			if (mr_wire_encode(m.buf, BUFSZ, &h) !=
			    -MR_DROP_BAD_FIELD)
				bad++;
		}
	}
	tap_ok(!bad, "atomics with raddr not 8-byte aligned -> bad_field (decode and encode)");

	/* reserved RETH word */
	bad = 0;
	for (i = 0; i < NOPS; i++) {
		u8 op = all_ops[i];

		if (op != MR_OP_WRITE && op != MR_OP_READ_REQ &&
		    op != MR_OP_CMP_SWAP && op != MR_OP_FETCH_ADD)
			continue;
		mk(&h, op, 0);
		mut_from(&m, &h);
		mr_put32(m.buf + O_RETH_RSVD, 0x100);
		if (mut_dec(&m) != -MR_DROP_BAD_FIELD)
			bad++;
	}
	tap_ok(!bad, "RETH reserved word nonzero (WRITE without IMM, READ, atomics) -> bad_field");
	mk(&h, MR_OP_WRITE, MR_F_IMM);
	h.ssn = 0;
	mut_from(&m, &h);
	mr_put32(m.buf + O_RETH_RSVD, 0xffffffff);
	{
		struct mr_hdr d;

		tap_ok(mr_wire_decode(m.buf, m.len, &d, NULL) > 0 &&
		       d.ssn == 0xffffffff,
		       "WRITE with IMM: the RETH's last word is its SSN, any value");
	}
	mk(&h, MR_OP_WRITE, 0);
	h.ssn = 7;
	mut_from(&m, &h);
	tap_ok(m.len && mr_get32(m.buf + O_RETH_RSVD) == 0 && mut_dec(&m) > 0,
	       "WRITE without IMM: the encoder leaves the word zero whatever ssn says");

	/* NOP carries nothing but its DSN */
	bad = 0;
	for (i = 0; i < 6; i++) {
		static const u32 off[] = { O_DST, O_SRC, O_GENMSN, O_GENMSN,
					   O_MSGLEN, O_OFFSET };
		static const u32 val[] = { 2, 2, 1, 0x01000000, 1, 1 };

		mk(&h, MR_OP_NOP, 0);
		mut_from(&m, &h);
		mr_put32(m.buf + off[i], val[i]);
		if (mut_dec(&m) != -MR_DROP_BAD_FIELD)
			bad++;
	}
	mk(&h, MR_OP_NOP, 0);
	h.dst_qpn = 5;
	if (mr_wire_encode(m.buf, BUFSZ, &h) != -MR_DROP_BAD_FIELD)
		bad++;
	tap_ok(!bad, "NOP with a QPN, msn, gen, msg_len or offset -> bad_field");
}

static void test_ack_fields(void)
{
	struct mr_hdr h;
	struct mr_ack a;
	struct mut m;
	u32 qb = O_ACK_PATH(2);		/* QP blocks after 2 path blocks */

	mk_ack(&h, &a, 2, 3);
	m.len = (u32)enc_ack(m.buf, &h, &a);
	tap_ok(mut_dec(&m) == (int)m.len, "reference ACK decodes");

	mr_put32(m.buf + O_ACK, 0);
	expect(mut_dec(&m), -MR_DROP_BAD_ACK, "zero ack_epoch");
	m.len = (u32)enc_ack(m.buf, &h, &a);
	m.buf[O_ACK + 12] = MR_MAX_PATHS + 1;
	expect(mut_dec(&m), -MR_DROP_BAD_ACK, "npath 17");
	m.len = (u32)enc_ack(m.buf, &h, &a);
	m.buf[O_ACK + 13] = MR_ACK_MAX_QP + 1;
	expect(mut_dec(&m), -MR_DROP_BAD_ACK, "nqp 17");
	m.len = (u32)enc_ack(m.buf, &h, &a);
	m.buf[O_ACK + 13] = 4;
	expect(mut_dec(&m), -MR_DROP_TRUNCATED, "nqp one more than present");
	m.len = (u32)enc_ack(m.buf, &h, &a);
	m.buf[O_ACK + 15] = 1;
	expect(mut_dec(&m), -MR_DROP_BAD_ACK, "ACK header reserved bits");

	m.len = (u32)enc_ack(m.buf, &h, &a);
	m.buf[O_ACK_PATH(1)] = m.buf[O_ACK_PATH(0)];
	expect(mut_dec(&m), -MR_DROP_BAD_ACK, "duplicate path id");
	m.len = (u32)enc_ack(m.buf, &h, &a);
	m.buf[O_ACK_PATH(0)] = MR_MAX_PATHS;
	expect(mut_dec(&m), -MR_DROP_BAD_ACK, "path id 16 in an ACK block");
	m.len = (u32)enc_ack(m.buf, &h, &a);
	m.buf[O_ACK_PATH(1) + 1] = 1;
	expect(mut_dec(&m), -MR_DROP_BAD_ACK, "path block reserved byte");
	m.len = (u32)enc_ack(m.buf, &h, &a);
	m.buf[O_ACK_PATH(1) + 7] = 1;
	expect(mut_dec(&m), -MR_DROP_BAD_ACK, "path block reserved half-word");

	/* QP block 0 has status OK, 1 RNR, 2 REM_ACCESS (mk_ack) */
	m.len = (u32)enc_ack(m.buf, &h, &a);
	m.buf[qb] = MR_QPS_MAX + 1;
	expect(mut_dec(&m), -MR_DROP_BAD_ACK, "QP block status above MAX");
	m.len = (u32)enc_ack(m.buf, &h, &a);
	mr_put32(m.buf + qb, 1);
	expect(mut_dec(&m), -MR_DROP_BAD_ACK, "QP block for QP1");
	m.len = (u32)enc_ack(m.buf, &h, &a);
	mr_put32(m.buf + qb + 8, 1);
	expect(mut_dec(&m), -MR_DROP_BAD_ACK, "aux on an OK QP block");
	m.len = (u32)enc_ack(m.buf, &h, &a);
	mr_put32(m.buf + qb + 2 * MR_ACK_QP_LEN + 8, 3);
	expect(mut_dec(&m), -MR_DROP_BAD_ACK, "aux on a NAK QP block");
	m.len = (u32)enc_ack(m.buf, &h, &a);
	mr_put32(m.buf + qb + MR_ACK_QP_LEN + 8, 32);
	expect(mut_dec(&m), -MR_DROP_BAD_ACK, "RNR timer code 32");
	mr_put32(m.buf + qb + MR_ACK_QP_LEN + 8, 0);
	tap_ok(mut_dec(&m) == (int)m.len, "RNR timer code 0 accepted");
}

/* Decoding without an ACK buffer must validate exactly as much. */
static void test_ack_null(void)
{
	struct mr_hdr h, d;
	struct mr_ack a;
	struct mut m;
	int bad = 0;

	mk_ack(&h, &a, 2, 3);
	m.len = (u32)enc_ack(m.buf, &h, &a);
	if (mr_wire_decode(m.buf, m.len, &d, NULL) != (int)m.len)
		bad++;
	mr_put32(m.buf + O_ACK, 0);
	if (mr_wire_decode(m.buf, m.len, &d, NULL) != -MR_DROP_BAD_ACK)
		bad++;
	m.len = (u32)enc_ack(m.buf, &h, &a);
	m.buf[O_ACK_PATH(1)] = m.buf[O_ACK_PATH(0)];
	if (mr_wire_decode(m.buf, m.len, &d, NULL) != -MR_DROP_BAD_ACK)
		bad++;
	m.len = (u32)enc_ack(m.buf, &h, &a);
	m.buf[O_ACK_PATH(2)] = MR_QPS_MAX + 1;
	if (mr_wire_decode(m.buf, m.len, &d, NULL) != -MR_DROP_BAD_ACK)
		bad++;
	tap_ok(!bad, "decode without an ACK buffer validates the blocks too");
}

static void test_encoder_refuses(void)
{
	static u8 buf[BUFSZ];
	struct mr_hdr h;
	struct mr_ack a;
	int bad = 0;
	u32 i;

	mk(&h, MR_OP_WRITE, 0);
	h.opcode = 0;
	expect(mr_wire_encode(buf, BUFSZ, &h), -MR_DROP_BAD_OPCODE,
	       "encode opcode 0");
	h.opcode = 0x0a;
	expect(mr_wire_encode(buf, BUFSZ, &h), -MR_DROP_BAD_OPCODE,
	       "encode opcode 0x0a");
	mk_ack(&h, &a, 0, 0);
	expect(mr_wire_encode(buf, BUFSZ, &h), -MR_DROP_BAD_OPCODE,
	       "mr_wire_encode of an ACK (mr_wire_encode_ack's job)");
	mk(&h, MR_OP_WRITE, 0);
	h.epoch = 0;
	expect(mr_wire_encode(buf, BUFSZ, &h), -MR_DROP_BAD_FIELD,
	       "encode zero epoch");
	mk(&h, MR_OP_NOP, 0);
	h.path = MR_MAX_PATHS;
	expect(mr_wire_encode(buf, BUFSZ, &h), -MR_DROP_BAD_FIELD,
	       "encode path 16");
	mk(&h, MR_OP_ACK_REQ, 0);
	h.psn = 1;
	expect(mr_wire_encode(buf, BUFSZ, &h), -MR_DROP_BAD_FIELD,
	       "encode ACK_REQ with a psn");
	mk(&h, MR_OP_WRITE, 0);
	h.msg_len = MR_MAX_MSG_LEN + 1;
	expect(mr_wire_encode(buf, BUFSZ, &h), -MR_DROP_BAD_LENGTH,
	       "encode msg_len 2 GiB + 1");
	mk(&h, MR_OP_SEND, 0);
	h.msn = MR_MSN_MASK + 1;
	tap_ok(mr_wire_encode(buf, BUFSZ, &h) < 0, "encode msn above 24 bits");

	/* every header size: one byte short of the buffer is refused */
	for (i = 0; i < NOPS; i++) {
		u8 op = all_ops[i];
		u32 hl;

		if (op == MR_OP_ACK)
			continue;
		mk(&h, op, allowed(op) & ~MR_F_INV);
		hl = mr_wire_hlen(op, h.flags);
		if (mr_wire_encode(buf, hl - 1, &h) != -MR_DROP_TRUNCATED ||
		    mr_wire_encode(buf, hl, &h) != (int)hl)
			bad++;
	}
	tap_ok(!bad, "encode into a buffer one byte short of the header -> truncated; exact fits");

	/* ACK encoder */
	mk_ack(&h, &a, 2, 2);
	a.npath = MR_MAX_PATHS + 1;
	expect(enc_ack(buf, &h, &a), -MR_DROP_BAD_ACK, "encode ACK npath 17");
	mk_ack(&h, &a, 2, 2);
	a.nqp = MR_ACK_MAX_QP + 1;
	expect(enc_ack(buf, &h, &a), -MR_DROP_BAD_ACK, "encode ACK nqp 17");
	mk_ack(&h, &a, 2, 2);
	a.ack_epoch = 0;
	expect(enc_ack(buf, &h, &a), -MR_DROP_BAD_ACK, "encode ACK ack_epoch 0");
	mk_ack(&h, &a, 2, 2);
	h.epoch = 0;
	expect(enc_ack(buf, &h, &a), -MR_DROP_BAD_ACK, "encode ACK epoch 0");
	mk_ack(&h, &a, 2, 2);
	expect(mr_wire_encode_ack(buf, MR_BASE_HLEN + MR_ACKH_LEN +
				  2 * MR_ACK_PATH_LEN + 2 * MR_ACK_QP_LEN - 1,
				  &h, &a),
	       -MR_DROP_TRUNCATED, "encode ACK one byte short");
	mk_ack(&h, &a, 2, 2);
	a.path[1].path = a.path[0].path;
	expect(enc_ack(buf, &h, &a), -MR_DROP_BAD_ACK,
	       "encode ACK with a duplicate path id");
	mk_ack(&h, &a, 2, 2);
	a.path[0].path = MR_MAX_PATHS;
	expect(enc_ack(buf, &h, &a), -MR_DROP_BAD_ACK,
	       "encode ACK with path id 16");
	mk_ack(&h, &a, 2, 2);
	a.qp[0].qpn = 1;
	expect(enc_ack(buf, &h, &a), -MR_DROP_BAD_ACK,
	       "encode ACK QP block for QP1");
	mk_ack(&h, &a, 2, 2);
	a.qp[0].qpn = 0x1000002;
	expect(enc_ack(buf, &h, &a), -MR_DROP_BAD_ACK,
	       "encode ACK QP block QPN above 24 bits");
	mk_ack(&h, &a, 2, 2);
	a.qp[0].msn = 0x1000000;
	expect(enc_ack(buf, &h, &a), -MR_DROP_BAD_ACK,
	       "encode ACK QP block msn above 24 bits");
	mk_ack(&h, &a, 2, 2);
	a.qp[0].status = MR_QPS_MAX + 1;
	expect(enc_ack(buf, &h, &a), -MR_DROP_BAD_ACK,
	       "encode ACK QP block bad status");
	mk_ack(&h, &a, 2, 2);
	a.qp[0].aux = 1;
	expect(enc_ack(buf, &h, &a), -MR_DROP_BAD_ACK,
	       "encode ACK OK block with aux");
	mk_ack(&h, &a, 2, 2);
	a.qp[1].aux = 32;
	expect(enc_ack(buf, &h, &a), -MR_DROP_BAD_ACK,
	       "encode ACK RNR block with timer code 32");
}

static void test_names(void)
{
	int r, bad = 0;
	u32 i;

	for (r = 0; r < MR_DROP_NR_REASONS; r++) {
		const char *n = mr_drop_name(r);

		if (!n || !strcmp(n, "unknown") || strcmp(n, mr_drop_name(-r)))
			bad++;
	}
	if (strcmp(mr_drop_name(MR_DROP_NR_REASONS), "unknown") ||
	    strcmp(mr_drop_name(-1000), "unknown"))
		bad++;
	for (i = 0; i < NOPS; i++)
		if (!strcmp(mr_op_name(all_ops[i]), "?"))
			bad++;
	if (strcmp(mr_op_name(0), "?"))
		bad++;
	tap_ok(!bad, "every drop reason and opcode has a name; others are unknown");
}

/*
 * The challenge words: a SYN's cookie is the last 8 bytes of its header
 * (0 is a hello's); a RESET carries its Unknown Epoch and a cookie that is
 * never 0.
 */
static void test_cookie_words(void)
{
	u8 buf[BUFSZ];
	struct mr_hdr h, d;
	int len, hl, bad = 0;
	u32 op;

	for (op = MR_OP_WRITE; op <= MR_OP_PROBE; op++) {
		mk(&h, (u8)op, MR_F_SYN);
		len = enc(buf, &h);
		hl = (int)mr_wire_hlen((u8)op, MR_F_SYN);
		bad += len < hl || mr_get64(buf + hl - 8) != h.cookie ||
		       mr_get32(buf + hl - 12) != h.syn_dsn;
		h.cookie = 0;
		len = enc(buf, &h);
		bad += mr_wire_decode(buf, (u32)len, &d, NULL) != hl ||
		       d.cookie != 0;
	}
	tap_ok(!bad, "SYN: the DSN word then the 8-byte cookie end the header; cookie 0 decodes");
	mk(&h, MR_OP_RESET, 0);
	len = enc(buf, &h);
	tap_ok(len == 32 && mr_get32(buf + 20) == h.reset_epoch &&
	       mr_get64(buf + 24) == h.cookie,
	       "RESET: Unknown Epoch at 20, cookie at 24, 32 bytes");
	memset(buf + 24, 0, 8);
	expect(dec(buf, (u32)len), -MR_DROP_BAD_FIELD, "RESET with cookie 0");
	h.cookie = 0;
	tap_ok(mr_wire_encode(buf, BUFSZ, &h) == -MR_DROP_BAD_FIELD,
	       "the encoder refuses a RESET without a cookie");
}

static void test_hlen_table(void)
{
	int bad = 0;

	bad += mr_wire_hlen(MR_OP_WRITE, 0) != 60;
	bad += mr_wire_hlen(MR_OP_WRITE, MR_F_IMM) != 64;
	bad += mr_wire_hlen(MR_OP_WRITE, MR_F_IMM | MR_F_SYN) !=
	       MR_DATA_HLEN_MAX;
	bad += MR_DATA_HLEN_MAX != 76 || MR_HLEN_MAX != 88;
	bad += MR_WIRE_VERSION != 2 || MR_SYN_LEN != 12;
	bad += mr_wire_hlen(MR_OP_READ_RESP, MR_F_SYN) != 56;
	bad += mr_wire_hlen(MR_OP_PROBE, MR_F_SYN) != 32;
	bad += mr_wire_hlen(MR_OP_SEND, MR_F_INV) != 52;
	bad += mr_wire_hlen(MR_OP_CMP_SWAP, 0) != 76;
	bad += mr_wire_hlen(MR_OP_CMP_SWAP, MR_F_SYN) != MR_HLEN_MAX;
	bad += mr_wire_hlen(MR_OP_RESET, 0) != 32;
	bad += mr_wire_hlen(MR_OP_NOP, 0) != 44;
	bad += mr_wire_hlen(MR_OP_PROBE, 0) != 20;
	bad += mr_wire_hlen(MR_OP_ACK, 0) != 36;
	bad += mr_wire_hlen(MR_OP_ACK_REQ, 0) != 28;
	bad += mr_wire_hlen(MR_OP_UD_SEND, MR_F_IMM) != 40;
	bad += mr_wire_hlen(0x7f, 0) != 0;
	tap_ok(!bad, "header lengths match the layout in mr_wire.h");
}

int main(void)
{
	tap_start();
	test_hlen_table();
	test_cookie_words();
	test_roundtrip();
	test_roundtrip_payload_bytes();
	test_ack_roundtrip();
	test_truncation();
	test_version_opcode();
	test_flags();
	test_imm_inv();
	test_base_fields();
	test_rc_fields();
	test_ack_fields();
	test_ack_null();
	test_encoder_refuses();
	test_names();
	return tap_done();
}
