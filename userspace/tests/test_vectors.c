// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_vectors: the test vectors of Documentation/protocol.rst, section 13,
 * are what the engine's codec makes of them.
 *
 * In the document a vector is an rst comment ".. vector: NAME", then a
 * literal block of hex (lines "OFFS  xx xx ...", OFFS the offset of the
 * line's first byte), then a simple table of the packet's fields (Field,
 * Offset, Bytes, Value). For every vector this test
 *
 *   (a) encodes the fields it defines below with mr_wire_encode() (an ACK
 *       with mr_wire_encode_ack()), appends the payload, and compares the
 *       bytes with the document's hex;
 *   (b) decodes the document's hex with mr_wire_decode() and compares the
 *       table, row by row, with the fields as decoded: name, offset, size
 *       and value. Each row's value must also be the bytes at its offset,
 *       and the rows must cover the packet, every byte once.
 *
 * The document must hold exactly the vectors defined here, every opcode
 * must have one, and section 13 must be what "test_vectors --print"
 * prints: that is how the section is written (replace it, from its
 * heading to the end of the file, with the output).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include "tap.h"
#include <metaroce/mr_wire.h>

#define BUFSZ		(MR_ACK_MAX_LEN + MR_MAX_PAYLOAD)
#define MAXROWS		96

/* The connection the vectors come from: A sends, B receives. */
#define EA		0x2f6b9a41u	/* A's epoch */
#define EB		0x71c3e5d2u	/* B's epoch */
#define QA		0x0000a7u	/* A's QP */
#define QB		0x0000b3u	/* B's QP */
#define MSN0		0x3c2d1eu	/* first MSN of A's QP: its sq_psn */
#define COOKIE		0x9e3779b97f4a7c15ull	/* B's cookie for EA */

struct vec {
	const char *name;
	const char *title;
	const char *about;		/* rst paragraph */
	struct mr_hdr h;
	const struct mr_ack *ack;
	const char *payload;		/* NULL: byte i is i & 0xff */
	const char *payload_about;
};

static const struct mr_ack ack_sack = {
	.ack_epoch = EA,
	.dsn_cum = EA + 4,
	.rate_hint = 25000,
	.npath = 1,
	.nqp = 1,
	.path = { {
		.path = 2,
		.ce_cnt = 3,
		.rx_cnt = 18,
		.base = EA + 14,
		.tsecr = 0x1a2c0410,
		.bitmap = { 0x0000000e },
	} },
	.qp = { {
		.status = MR_QPS_OK,
		.qpn = QA,
		.gen = 0,
		.msn = MSN0 + 1,
		.aux = 0,
	} },
};

static const struct vec vecs[] = {
	{
		.name = "hello",
		.title = "PROBE: a new sender's hello",
		.about =
"A's first packet to B (section 7.2): a PROBE with SYN and ACKREQ on\n"
"path 0, whose first PSN is A's epoch. The SYN DSN is the epoch too (no\n"
"segment is finished yet) and the SYN Cookie is 0: A has no cookie yet.",
		.h = {
			.opcode = MR_OP_PROBE, .flags = MR_F_SYN | MR_F_ACKREQ,
			.epoch = EA, .psn = EA, .path = 0,
			.tsval = 0x1a2b3c00, .syn_dsn = EA, .cookie = 0,
		},
	},
	{
		.name = "reset",
		.title = "RESET: the challenge",
		.about =
"B's answer to the hello (sections 6.15, 7.2): a RESET naming A's epoch,\n"
"with B's cookie for it. Its Epoch is B's own sending epoch.",
		.h = {
			.opcode = MR_OP_RESET, .epoch = EB,
			.tsval = 0x55aa0010, .reset_epoch = EA,
			.cookie = COOKIE,
		},
	},
	{
		.name = "announce",
		.title = "PROBE: the announcement, with the cookie",
		.about =
"A's announcement to B's fair share (section 7.20), the first packet\n"
"after the challenge: a PROBE with SYN and ACKREQ that echoes B's cookie\n"
"in its SYN Cookie. It takes the next PSN of path 0, after the hello's.",
		.h = {
			.opcode = MR_OP_PROBE, .flags = MR_F_SYN | MR_F_ACKREQ,
			.epoch = EA, .psn = EA + 1, .path = 0,
			.tsval = 0x1a2b9e40, .syn_dsn = EA, .cookie = COOKIE,
		},
	},
	{
		.name = "send-first",
		.title = "SEND: the first segment of a message, with SYN",
		.about =
"The first segment of A's first message: a 300-byte SEND with immediate\n"
"data, cut at a segment size of 256 (section 7.12), sent while A's epoch is\n"
"not yet acknowledged: SYN, with the SYN DSN and B's cookie. Its DSN is\n"
"the direction's first, the epoch; its SSN is 0, the QP's first\n"
"receive-consuming message. ACKREQ is clear: this is not the message's\n"
"last segment. IMM is set on every segment of the message.",
		.h = {
			.opcode = MR_OP_SEND, .flags = MR_F_SYN | MR_F_IMM,
			.epoch = EA, .psn = EA, .path = 1,
			.tsval = 0x1a2ba0c8, .plen = 256,
			.dst_qpn = QB, .src_qpn = QA, .dsn = EA, .gen = 0,
			.msn = MSN0, .msg_len = 300, .offset = 0, .ssn = 0,
			.imm = 0xcafef00d, .syn_dsn = EA, .cookie = COOKIE,
		},
		.payload_about = "256 bytes: 0x00, 0x01 ... 0xff",
	},
	{
		.name = "write-reth",
		.title = "WRITE: a segment with its RETH",
		.about =
"The last segment of a 1040-byte RDMA WRITE cut at 256 bytes, after A's\n"
"epoch was acknowledged (no SYN): Offset 1024, the last 16 bytes, and\n"
"ACKREQ, set on a message's last segment. The RETH carries the message's\n"
"Remote Address, not the segment's (section 6.6), and an SSN word of 0:\n"
"the WRITE has no immediate data.",
		.h = {
			.opcode = MR_OP_WRITE, .flags = MR_F_ACKREQ,
			.epoch = EA, .psn = EA + 17, .path = 2,
			.tsval = 0x1a2c0410, .plen = 16,
			.dst_qpn = QB, .src_qpn = QA, .dsn = EA + 6, .gen = 0,
			.msn = MSN0 + 1, .msg_len = 1040, .offset = 1024,
			.raddr = 0x00007f3a12340000ull, .rkey = 0x00001a2b,
		},
		.payload = "WRITE tail bytes",
		.payload_about = "16 bytes: \"WRITE tail bytes\"",
	},
	{
		.name = "read-req",
		.title = "READ_REQ: an RDMA READ request",
		.about =
"A asks for 300 bytes at a remote address (section 6.11): one packet,\n"
"no payload, Offset 0, ACKREQ as on every READ request.",
		.h = {
			.opcode = MR_OP_READ_REQ, .flags = MR_F_ACKREQ,
			.epoch = EA, .psn = EA + 9, .path = 3,
			.tsval = 0x1a2c1a00,
			.dst_qpn = QB, .src_qpn = QA, .dsn = EA + 7, .gen = 0,
			.msn = MSN0 + 2, .msg_len = 300, .offset = 0,
			.raddr = 0x00007f3a12350000ull, .rkey = 0x00002b3c,
		},
	},
	{
		.name = "read-resp",
		.title = "READ_RESP: a READ response segment",
		.about =
"The second and last segment of B's response to that READ, in B's\n"
"direction (B's epoch, B's DSNs): Destination QPN is A's QP, MSN and Gen\n"
"are the request's, Message Length the READ's, and Offset 256 is where\n"
"the 44 bytes land in A's buffer. Responses carry no ACKREQ.",
		.h = {
			.opcode = MR_OP_READ_RESP, .flags = 0,
			.epoch = EB, .psn = EB + 3, .path = 0,
			.tsval = 0x55ab2200, .plen = 44,
			.dst_qpn = QA, .src_qpn = QB, .dsn = EB + 2, .gen = 0,
			.msn = MSN0 + 2, .msg_len = 300, .offset = 256,
		},
		.payload_about = "44 bytes: 0x00, 0x01 ... 0x2b",
	},
	{
		.name = "cmp-swap",
		.title = "CMP_SWAP: a compare-and-swap request",
		.about =
"If the 8 bytes at the (8-byte aligned) remote address hold Compare,\n"
"they become Swap (section 6.8). Message Length 8, Offset 0.",
		.h = {
			.opcode = MR_OP_CMP_SWAP, .flags = MR_F_ACKREQ,
			.epoch = EA, .psn = EA + 5, .path = 4,
			.tsval = 0x1a2c2b00,
			.dst_qpn = QB, .src_qpn = QA, .dsn = EA + 8, .gen = 0,
			.msn = MSN0 + 3, .msg_len = 8, .offset = 0,
			.raddr = 0x00007f3a12360008ull, .rkey = 0x00003c4d,
			.swap_add = 0x1111222233334444ull, .compare = 0,
		},
	},
	{
		.name = "fetch-add",
		.title = "FETCH_ADD: a fetch-and-add request",
		.about =
"Adds 1 to the 8 bytes at the remote address; Compare is carried as\n"
"posted and ignored (section 6.8).",
		.h = {
			.opcode = MR_OP_FETCH_ADD, .flags = MR_F_ACKREQ,
			.epoch = EA, .psn = EA + 4, .path = 5,
			.tsval = 0x1a2c3c00,
			.dst_qpn = QB, .src_qpn = QA, .dsn = EA + 9, .gen = 0,
			.msn = MSN0 + 4, .msg_len = 8, .offset = 0,
			.raddr = 0x00007f3a12360010ull, .rkey = 0x00003c4d,
			.swap_add = 1, .compare = 0,
		},
	},
	{
		.name = "atomic-resp",
		.title = "ATOMIC_RESP: the original value",
		.about =
"B's response to the compare-and-swap: the 8 bytes held 0, so the swap\n"
"took place. Message Length 8, Offset 0, the request's MSN.",
		.h = {
			.opcode = MR_OP_ATOMIC_RESP, .flags = 0,
			.epoch = EB, .psn = EB + 8, .path = 1,
			.tsval = 0x55ab3000,
			.dst_qpn = QA, .src_qpn = QB, .dsn = EB + 3, .gen = 0,
			.msn = MSN0 + 3, .msg_len = 8, .offset = 0, .orig = 0,
		},
	},
	{
		.name = "nop",
		.title = "NOP: a DSN whose message is gone",
		.about =
"A retransmission (RETX) of a DSN whose message no longer exists\n"
"(section 7.10): every RC field but the DSN is 0.",
		.h = {
			.opcode = MR_OP_NOP, .flags = MR_F_RETX,
			.epoch = EA, .psn = EA + 30, .path = 6,
			.tsval = 0x1a2d0000, .dsn = EA + 10,
		},
	},
	{
		.name = "ack-sack",
		.title = "ACK: a path block with a hole, and a QP block",
		.about =
"B's ACK for A's direction (section 6.13), in B's epoch; ACK Epoch is\n"
"A's. Every DSN before A's epoch + 4 is processed; B grants A 25,000\n"
"Mbit/s. The path block is about A's path 2: PSN Base (A's epoch + 14)\n"
"has not arrived and the three after it have (bits 1 to 3 of word 0),\n"
"the latest being the WRITE above (TSecr is its TSval), so a sender with\n"
"``reorder_thresh`` 3 declares Base lost (section 7.5). Of the 18 packets\n"
"path 2 delivered, 3 were CE-marked. The QP block says that A's QP has\n"
"its message MSN0 + 1, the WRITE, not yet complete at B, and every\n"
"message before it complete.",
		.h = {
			.opcode = MR_OP_ACK, .epoch = EB, .tsval = 0x55ab4000,
		},
		.ack = &ack_sack,
	},
	{
		.name = "ack-req",
		.title = "ACK_REQ",
		.about =
"A asks B for a QP block about A's QP (section 7.15).",
		.h = {
			.opcode = MR_OP_ACK_REQ, .epoch = EA, .tsval = 0x1a2e0000,
			.dst_qpn = QB, .src_qpn = QA,
		},
	},
	{
		.name = "ud-send",
		.title = "UD_SEND: a datagram with immediate data",
		.about =
"A datagram from UD QP 0x0000d6 to UD QP 0x0000c5 (section 7.24), with\n"
"immediate data and the solicited flag. Its Epoch is any non-zero value.",
		.h = {
			.opcode = MR_OP_UD_SEND, .flags = MR_F_IMM | MR_F_SOLICIT,
			.epoch = 0x00000001, .tsval = 0x1a2f0000, .plen = 12,
			.dst_qpn = 0x0000c5, .src_qpn = 0x0000d6,
			.qkey = 0x11223344, .imm = 0x01020304,
		},
		.payload = "UD datagram!",
		.payload_about = "12 bytes: \"UD datagram!\"",
	},
};

#define NVECS	(sizeof(vecs) / sizeof(vecs[0]))

static const char intro[] =
"13. Test vectors\n"
"================\n"
"\n"
"Complete packets of version 2, at least one per opcode, in hex, with\n"
"every field decoded. ``userspace/tests/test_vectors.c`` checks them\n"
"(``make check-core``): it encodes each packet with the engine's encoder\n"
"(``mr_wire_encode()``, ``mr_wire_encode_ack()``) and compares the bytes\n"
"with the hex below, and it decodes the hex with ``mr_wire_decode()`` and\n"
"compares every row of the table with the decoded field and with the\n"
"bytes at its offset. ``test_vectors --print`` prints this section.\n"
"\n"
"The packets belong to one connection between endpoints A and B. A's\n"
"epoch is 0x2f6b9a41 and B's 0x71c3e5d2; A's QP is 0x0000a7 and B's\n"
"0x0000b3; the first MSN of A's QP (MSN0) is 0x3c2d1e. A packet is the\n"
"payload of a UDP datagram; the IP and UDP headers are not shown. Each\n"
"hex line starts with the offset of its first byte, in hexadecimal. In\n"
"the tables, offsets and sizes are in bytes (decimal) from the start of\n"
"the packet, as in section 6; a value is the field as it is on the wire\n"
"(HLen in 4-byte words, QPN and MSN as their 24 bits), in decimal or,\n"
"with ``0x``, in hexadecimal.\n";

/* --- the fields of a decoded packet, in wire order ---------------------- */

enum { DEC, HEX, TXT };

struct row {
	char name[40];
	u32 off, size;
	u64 val;
	int fmt;
	char note[64];
};

struct rows {
	struct row r[MAXROWS];
	int n;
	u32 off;
};

static void add(struct rows *t, const char *name, u32 size, u64 val,
		int fmt, const char *note)
{
	struct row *r;

	if (t->n >= MAXROWS)
		return;
	r = &t->r[t->n++];
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->off = t->off;
	r->size = size;
	r->val = val;
	r->fmt = fmt;
	snprintf(r->note, sizeof(r->note), "%s", note ? note : "");
	t->off += size;
}

static void flag_names(u16 f, char *buf, size_t len)
{
	static const struct {
		u16 bit;
		const char *name;
	} names[] = {
		{ MR_F_SYN, "SYN" }, { MR_F_ACKREQ, "ACKREQ" },
		{ MR_F_RETX, "RETX" }, { MR_F_IMM, "IMM" },
		{ MR_F_INV, "INV" }, { MR_F_SOLICIT, "SOLICIT" },
	};
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (f & names[i].bit)
			n += snprintf(buf + n, n < len ? len - n : 0, "%s%s",
				      n ? ", " : "", names[i].name);
}

static const char *status_name(u8 s)
{
	static const char * const names[] = {
		"OK", "RNR", "REM_ACCESS", "INV_REQ", "REM_OP",
	};

	return s <= MR_QPS_MAX ? names[s] : "?";
}

static void rc_qpns(struct rows *t, u32 dst, u32 src)
{
	add(t, "reserved", 1, 0, DEC, NULL);
	add(t, "Destination QPN", 3, dst, HEX, NULL);
	add(t, "reserved", 1, 0, DEC, NULL);
	add(t, "Source QPN", 3, src, HEX, NULL);
}

/*
 * The rows of a packet that mr_wire_decode() returned @h (and @a) for:
 * what the document's table must say, from the decoded fields only
 * (reserved fields are 0, or the decoder would have refused the packet).
 */
static void fields(const struct mr_hdr *h, const struct mr_ack *a,
		   const char *payload_about, struct rows *t)
{
	char note[64];
	u8 op = h->opcode;
	u32 i, w;

	memset(t, 0, sizeof(*t));
	add(t, "Version", 1, MR_WIRE_VERSION, DEC, NULL);
	add(t, "Opcode", 1, op, HEX, mr_op_name(op));
	flag_names(h->flags, note, sizeof(note));
	add(t, "Flags", 2, h->flags, HEX, note);
	add(t, "Epoch", 4, h->epoch, HEX, NULL);
	add(t, "PSN", 4, h->psn, HEX, NULL);
	add(t, "Path", 1, h->path, DEC, NULL);
	snprintf(note, sizeof(note), "%u bytes", h->hlen);
	add(t, "HLen", 1, h->hlen / 4, DEC, note);
	add(t, "PLen", 2, h->plen, DEC, NULL);
	add(t, "TSval", 4, h->tsval, HEX, NULL);

	if (mr_op_has_dsn(op)) {
		rc_qpns(t, h->dst_qpn, h->src_qpn);
		add(t, "DSN", 4, h->dsn, HEX, NULL);
		add(t, "Gen", 1, h->gen, DEC, NULL);
		add(t, "MSN", 3, h->msn, HEX, NULL);
		add(t, "Message Length", 4, h->msg_len, DEC, NULL);
		add(t, "Offset", 4, h->offset, DEC, NULL);
		switch (op) {
		case MR_OP_WRITE:
		case MR_OP_READ_REQ:
		case MR_OP_CMP_SWAP:
		case MR_OP_FETCH_ADD:
			add(t, "Remote Address", 8, h->raddr, HEX, NULL);
			add(t, "Rkey", 4, h->rkey, HEX, NULL);
			add(t, "SSN", 4, h->ssn, DEC, NULL);
			if (op == MR_OP_CMP_SWAP || op == MR_OP_FETCH_ADD) {
				add(t, op == MR_OP_CMP_SWAP ? "Swap" : "Add", 8,
				    h->swap_add, HEX, NULL);
				add(t, "Compare", 8, h->compare, HEX, NULL);
			}
			break;
		case MR_OP_SEND:
			add(t, "SSN", 4, h->ssn, DEC, NULL);
			break;
		case MR_OP_ATOMIC_RESP:
			add(t, "Original Value", 8, h->orig, HEX, NULL);
			break;
		}
	} else if (op == MR_OP_ACK && a) {
		add(t, "ACK Epoch", 4, a->ack_epoch, HEX, NULL);
		add(t, "DSN Cumulative", 4, a->dsn_cum, HEX, NULL);
		add(t, "Rate Hint", 4, a->rate_hint, DEC, "Mbit/s");
		add(t, "NPath", 1, a->npath, DEC, NULL);
		add(t, "NQP", 1, a->nqp, DEC, NULL);
		add(t, "reserved", 2, 0, DEC, NULL);
		for (i = 0; i < a->npath; i++) {
			const struct mr_ack_path *p = &a->path[i];
			char n[40];

#define P(s) (snprintf(n, sizeof(n), "Path block %u: %s", i, s), n)
			add(t, P("Path"), 1, p->path, DEC, NULL);
			add(t, P("reserved"), 1, 0, DEC, NULL);
			add(t, P("CE Count"), 2, p->ce_cnt, DEC, NULL);
			add(t, P("RX Count"), 2, p->rx_cnt, DEC, NULL);
			add(t, P("reserved"), 2, 0, DEC, NULL);
			add(t, P("Base"), 4, p->base, HEX, NULL);
			add(t, P("TSecr"), 4, p->tsecr, HEX, NULL);
			for (w = 0; w < MR_PATH_WND / 32; w++) {
				char b[24];

				snprintf(b, sizeof(b), "Bitmap word %u", w);
				add(t, P(b), 4, p->bitmap[w], HEX, NULL);
			}
#undef P
		}
		for (i = 0; i < a->nqp; i++) {
			const struct mr_ack_qp *q = &a->qp[i];
			char n[40];

#define Q(s) (snprintf(n, sizeof(n), "QP block %u: %s", i, s), n)
			add(t, Q("Status"), 1, q->status, DEC,
			    status_name(q->status));
			add(t, Q("QPN"), 3, q->qpn, HEX, NULL);
			add(t, Q("Gen"), 1, q->gen, DEC, NULL);
			add(t, Q("MSN"), 3, q->msn, HEX, NULL);
			add(t, Q("Aux"), 4, q->aux, DEC, NULL);
#undef Q
		}
	} else if (op == MR_OP_ACK_REQ) {
		rc_qpns(t, h->dst_qpn, h->src_qpn);
	} else if (op == MR_OP_RESET) {
		add(t, "Unknown Epoch", 4, h->reset_epoch, HEX, NULL);
		add(t, "Cookie", 8, h->cookie, HEX, NULL);
	} else if (op == MR_OP_UD_SEND) {
		rc_qpns(t, h->dst_qpn, h->src_qpn);
		add(t, "Q_Key", 4, h->qkey, HEX, NULL);
		add(t, "reserved", 4, 0, DEC, NULL);
	}
	if (h->flags & MR_F_IMM)
		add(t, "Immediate Data", 4, h->imm, HEX, NULL);
	if (h->flags & MR_F_INV)
		add(t, "Rkey to Invalidate", 4, h->inv_rkey, HEX, NULL);
	if (h->flags & MR_F_SYN) {
		add(t, "SYN DSN", 4, h->syn_dsn, HEX, NULL);
		add(t, "SYN Cookie", 8, h->cookie, HEX, NULL);
	}
	if (h->plen)
		add(t, "Payload", h->plen, 0, TXT, payload_about);
}

/* The Value column of a row. */
static void cell(const struct row *r, char *buf, size_t len)
{
	char num[32];

	if (r->fmt == TXT) {
		snprintf(buf, len, "%s", r->note);
		return;
	}
	if (r->fmt == DEC)
		snprintf(num, sizeof(num), "%llu", (unsigned long long)r->val);
	else
		snprintf(num, sizeof(num), "0x%0*llx", (int)r->size * 2,
			 (unsigned long long)r->val);
	if (r->note[0])
		snprintf(buf, len, "%s (%s)", num, r->note);
	else
		snprintf(buf, len, "%s", num);
}

/* --- encoding ------------------------------------------------------------ */

static void payload_of(const struct vec *v, u8 *buf, u32 len)
{
	u32 i;

	for (i = 0; i < len; i++)
		buf[i] = v->payload ? (u8)v->payload[i] : (u8)i;
}

/* The packet the engine's encoder makes of @v; its length, or < 0. */
static int encode(const struct vec *v, u8 *buf, u32 size)
{
	int n;

	if (v->ack)
		n = mr_wire_encode_ack(buf, size, &v->h, v->ack);
	else
		n = mr_wire_encode(buf, size, &v->h);
	if (n < 0 || (u32)n + v->h.plen > size)
		return n < 0 ? n : -1;
	payload_of(v, buf + n, v->h.plen);
	return n + v->h.plen;
}

/* --- the section as --print prints it ---------------------------------- */

static void print_table(FILE *f, const struct rows *t)
{
	size_t wn = strlen("Field"), wv = strlen("Value");
	char v[128], bar[256];
	int i;

	for (i = 0; i < t->n; i++) {
		cell(&t->r[i], v, sizeof(v));
		if (strlen(t->r[i].name) > wn)
			wn = strlen(t->r[i].name);
		if (strlen(v) > wv)
			wv = strlen(v);
	}
	/* Field, Offset (6), Bytes (5), Value: four runs of '='. */
	memset(bar, '=', sizeof(bar));
	memset(bar + wn, ' ', 2);
	memset(bar + wn + 8, ' ', 2);
	memset(bar + wn + 15, ' ', 2);
	bar[wn + 17 + wv] = '\0';
	fprintf(f, "%s\n%-*s  %-6s  %-5s  %s\n%s\n", bar, (int)wn, "Field",
		"Offset", "Bytes", "Value", bar);
	for (i = 0; i < t->n; i++) {
		cell(&t->r[i], v, sizeof(v));
		fprintf(f, "%-*s  %-6u  %-5u  %s\n", (int)wn, t->r[i].name,
			t->r[i].off, t->r[i].size, v);
	}
	fprintf(f, "%s\n", bar);
}

static int print_vec(FILE *f, const struct vec *v, int idx)
{
	u8 buf[BUFSZ];
	struct mr_hdr h;
	struct mr_ack a;
	struct rows t;
	char head[96];
	int n, i;

	n = encode(v, buf, sizeof(buf));
	if (n < 0 || mr_wire_decode(buf, (u32)n, &h, &a) < 0)
		return -1;
	fields(&h, &a, v->payload_about, &t);
	snprintf(head, sizeof(head), "13.%d %s", idx + 1, v->title);
	fprintf(f, "\n%s\n%.*s\n\n%s\n\n.. vector: %s\n\n::\n\n", head,
		(int)strlen(head),
		"------------------------------------------------------------",
		v->about, v->name);
	for (i = 0; i < n; i++) {
		if (i % 16 == 0)
			fprintf(f, "    %04x ", i);
		fprintf(f, "%s%02x", i % 16 == 8 ? "  " : " ", buf[i]);
		if (i % 16 == 15 || i == n - 1)
			fprintf(f, "\n");
	}
	fprintf(f, "\n");
	print_table(f, &t);
	return 0;
}

/* The whole section 13, as the document must hold it. NULL on failure. */
static char *section(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	size_t i;
	int bad = 0;

	if (!f)
		return NULL;
	fputs(intro, f);
	for (i = 0; i < NVECS; i++)
		bad |= print_vec(f, &vecs[i], (int)i);
	fclose(f);
	if (bad) {
		free(text);
		return NULL;
	}
	return text;
}

/* --- reading the document ----------------------------------------------- */

struct doc {
	char *text;
	char **line;
	int n;
};

static int doc_load(struct doc *d, const char *path)
{
	FILE *f = fopen(path, "r");
	long size;
	char *p;
	int cap = 0;

	memset(d, 0, sizeof(*d));
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, 0, SEEK_SET);
	d->text = malloc((size_t)size + 1);
	if (!d->text || fread(d->text, 1, (size_t)size, f) != (size_t)size) {
		fclose(f);
		return -1;
	}
	fclose(f);
	d->text[size] = '\0';
	for (p = d->text; p && *p; ) {
		char *nl = strchr(p, '\n');

		if (d->n == cap) {
			cap = cap ? 2 * cap : 1024;
			d->line = realloc(d->line, (size_t)cap * sizeof(char *));
			if (!d->line)
				return -1;
		}
		d->line[d->n++] = p;
		if (nl)
			*nl = '\0';
		p = nl ? nl + 1 : NULL;
	}
	return 0;
}

static void doc_free(struct doc *d)
{
	free(d->line);
	free(d->text);
}

static int blank(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return !*s;
}

/* A line that underlines the one before it with @c alone. */
static int underline(const struct doc *d, int i, char c)
{
	const char *s = d->line[i];
	size_t n = strlen(s);

	if (i == 0 || !n || blank(d->line[i - 1]) || n < strlen(d->line[i - 1]))
		return 0;
	while (*s == c)
		s++;
	return !*s;
}

struct docvec {
	char name[40];
	u8 bytes[BUFSZ];
	u32 len;
	int hex_ok;
	char hex_err[96];
	struct rows t;		/* the table, as written */
	char value[MAXROWS][128];
	int table_ok;
	char table_err[96];
};

/* The next blank-separated token of @s (at most @max characters). */
static const char *token(const char *s, char *tok, size_t max)
{
	size_t n = 0;

	while (*s == ' ')
		s++;
	while (*s && *s != ' ') {
		if (n + 1 < max)
			tok[n] = *s;
		n++;
		s++;
	}
	tok[n < max ? n : max - 1] = '\0';
	if (n >= max)
		tok[0] = '!';	/* too long: no valid token */
	return s;
}

static int hex_token(const char *tok, size_t digits)
{
	size_t i;

	for (i = 0; tok[i]; i++)
		if (!isxdigit((unsigned char)tok[i]))
			return 0;
	return i == digits;
}

/* The hex block after the ".. vector:" line @i; returns the next line. */
static int read_hex(const struct doc *d, int i, struct docvec *v)
{
	while (i < d->n && blank(d->line[i]))
		i++;
	if (i >= d->n || strcmp(d->line[i], "::")) {
		snprintf(v->hex_err, sizeof(v->hex_err),
			 "no \"::\" after the marker");
		return i;
	}
	for (i++; i < d->n && blank(d->line[i]); i++)
		;
	v->hex_ok = 1;
	for (; i < d->n && d->line[i][0] == ' '; i++) {
		const char *s = d->line[i];
		char tok[8];

		s = token(s, tok, sizeof(tok));
		if (!hex_token(tok, 4) || strtoul(tok, NULL, 16) != v->len) {
			snprintf(v->hex_err, sizeof(v->hex_err),
				 "line %d: \"%s\" is not the offset %04x",
				 i + 1, tok, v->len);
			v->hex_ok = 0;
			return i;
		}
		while (*(s = token(s, tok, sizeof(tok))) || tok[0]) {
			if (!hex_token(tok, 2) || v->len >= sizeof(v->bytes)) {
				snprintf(v->hex_err, sizeof(v->hex_err),
					 "line %d: \"%s\" is not a byte",
					 i + 1, tok);
				v->hex_ok = 0;
				return i;
			}
			v->bytes[v->len++] = (u8)strtoul(tok, NULL, 16);
		}
	}
	if (!v->len) {
		snprintf(v->hex_err, sizeof(v->hex_err), "no bytes");
		v->hex_ok = 0;
	}
	return i;
}

static void strip(char *s)
{
	size_t n = strlen(s);

	while (n && s[n - 1] == ' ')
		s[--n] = '\0';
}

#define TABLE_ERR(v, ...) \
	snprintf((v)->table_err, sizeof((v)->table_err), __VA_ARGS__)

/* The simple table that follows the hex block, from line @i. */
static void read_table(const struct doc *d, int i, struct docvec *v)
{
	int col[4], ncol = 0, bars = 0;
	const char *bar;
	char *e;

	while (i < d->n && blank(d->line[i]))
		i++;
	if (i >= d->n || d->line[i][0] != '=') {
		TABLE_ERR(v, "no table after the hex");
		return;
	}
	bar = d->line[i];
	for (int k = 0; bar[k] && ncol < 4; k++)
		if (bar[k] == '=' && (k == 0 || bar[k - 1] == ' '))
			col[ncol++] = k;
	if (ncol != 4) {
		TABLE_ERR(v, "%d columns, not 4", ncol);
		return;
	}
	for (; i < d->n && bars < 3; i++) {
		const char *s = d->line[i];
		struct row *r;
		char cellv[4][128];
		int k;

		if (!strcmp(s, bar)) {
			bars++;
			continue;
		}
		if (bars != 2)
			continue;	/* the header row */
		if (v->t.n >= MAXROWS) {
			TABLE_ERR(v, "too many rows");
			return;
		}
		for (k = 0; k < 4; k++) {
			size_t from = (size_t)col[k], n = strlen(s);
			size_t to = k < 3 ? (size_t)col[k + 1] : n;

			if (from > n)
				from = n;
			if (to > n)
				to = n;
			snprintf(cellv[k], sizeof(cellv[k]), "%.*s",
				 (int)(to - from), s + from);
			strip(cellv[k]);
		}
		r = &v->t.r[v->t.n];
		snprintf(r->name, sizeof(r->name), "%.*s",
			 (int)sizeof(r->name) - 1, cellv[0]);
		r->off = (u32)strtoul(cellv[1], &e, 10);
		if (e == cellv[1] || *e)
			r->off = ~0u;
		r->size = (u32)strtoul(cellv[2], &e, 10);
		if (e == cellv[2] || *e)
			r->size = 0;
		snprintf(v->value[v->t.n], sizeof(v->value[0]), "%s", cellv[3]);
		v->t.n++;
	}
	if (bars < 3)
		TABLE_ERR(v, "the table does not end");
	else
		v->table_ok = 1;
}

/* --- the checks ---------------------------------------------------------- */

static const struct vec *find_vec(const char *name)
{
	size_t i;

	for (i = 0; i < NVECS; i++)
		if (!strcmp(vecs[i].name, name))
			return &vecs[i];
	return NULL;
}

static u64 be(const u8 *p, u32 n)
{
	u64 v = 0;

	while (n--)
		v = v << 8 | *p++;
	return v;
}

/* (a): the engine's encoder makes the document's bytes. */
static void check_encode(const struct vec *v, const struct docvec *dv)
{
	u8 buf[BUFSZ];
	int n = encode(v, buf, sizeof(buf));
	u32 i, len = n > 0 ? (u32)n : 0;

	for (i = 0; i < len && i < dv->len && buf[i] == dv->bytes[i]; i++)
		;
	if (!tap_ok(n > 0 && len == dv->len && i == len,
		    "%s: the encoder makes the document's %u bytes", v->name,
		    dv->len))
		tap_diag("encoder: %d bytes; first difference at offset %u "
			 "(encoder 0x%02x, document 0x%02x)", n, i,
			 i < len ? buf[i] : 0, i < dv->len ? dv->bytes[i] : 0);
}

/* (b): the decoder reads the document's table out of its bytes. */
static void check_decode(const struct vec *v, const struct docvec *dv)
{
	struct mr_hdr h;
	struct mr_ack a;
	struct rows t;
	char want[128], why[640] = "";
	int ret, i, ok = 1;
	u32 next = 0;

	memset(&a, 0, sizeof(a));
	ret = mr_wire_decode(dv->bytes, dv->len, &h, &a);
	if (!tap_ok(ret > 0 && (u32)ret + h.plen == dv->len,
		    "%s: mr_wire_decode() accepts the bytes (%s)", v->name,
		    ret > 0 ? mr_op_name(h.opcode) : mr_drop_name(ret))) {
		tap_ok(0, "%s: the table is the decoded packet", v->name);
		tap_ok(0, "%s: the table's values are the bytes at their offsets",
		       v->name);
		return;
	}
	fields(&h, &a, v->payload_about, &t);
	if (!dv->table_ok) {
		ok = 0;
		snprintf(why, sizeof(why), "%s", dv->table_err);
	} else if (dv->t.n != t.n) {
		ok = 0;
		snprintf(why, sizeof(why), "%d rows, the packet has %d fields",
			 dv->t.n, t.n);
	}
	for (i = 0; ok && i < t.n; i++) {
		const struct row *d = &dv->t.r[i], *r = &t.r[i];

		cell(r, want, sizeof(want));
		if (strcmp(d->name, r->name) || d->off != r->off ||
		    d->size != r->size || strcmp(dv->value[i], want)) {
			ok = 0;
			snprintf(why, sizeof(why),
				 "row %d: \"%s\" %u %u \"%s\", "
				 "decoded: \"%s\" %u %u \"%s\"",
				 i + 1, d->name, d->off, d->size, dv->value[i],
				 r->name, r->off, r->size, want);
		}
	}
	if (!tap_ok(ok, "%s: the table is the decoded packet (%d fields)",
		    v->name, t.n))
		tap_diag("%s", why);

	/* Independently of the decoder: the bytes say what the table says. */
	ok = dv->table_ok && dv->t.n > 0;
	why[0] = '\0';
	for (i = 0; ok && i < dv->t.n; i++) {
		const struct row *d = &dv->t.r[i];
		const char *s = dv->value[i];
		unsigned long long val;
		u64 real;
		char *e;

		if (d->off != next || d->size == 0 ||
		    d->off + d->size > dv->len) {
			ok = 0;
			snprintf(why, sizeof(why),
				 "row %d (%s): offset %u size %u, expected offset %u",
				 i + 1, d->name, d->off, d->size, next);
			break;
		}
		next = d->off + d->size;
		if (!strcmp(d->name, "Payload"))
			continue;	/* its bytes are checked by (a) */
		val = strtoull(s, &e, 0);
		real = d->size <= 8 ? be(dv->bytes + d->off, d->size) : 0;
		if (e == s || d->size > 8 || val != real) {
			ok = 0;
			snprintf(why, sizeof(why),
				 "row %d (%s): value \"%s\", bytes at %u: 0x%llx",
				 i + 1, d->name, s, d->off,
				 (unsigned long long)real);
		}
	}
	if (ok && next != dv->len) {
		ok = 0;
		snprintf(why, sizeof(why), "the rows end at %u, the packet at %u",
			 next, dv->len);
	}
	if (!tap_ok(ok, "%s: the table's values are the bytes at their offsets, "
		    "every byte once", v->name))
		tap_diag("%s", why);
}

/*
 * Section 13 of the document, from its heading to the next top-level
 * heading or the end, without the blank lines that end it.
 */
static char *doc_section(const struct doc *d)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int i, from = -1, to;

	for (i = 1; i < d->n && from < 0; i++)
		if (!strcmp(d->line[i - 1], "13. Test vectors") &&
		    underline(d, i, '='))
			from = i - 1;
	if (from < 0)
		return NULL;
	for (to = from + 2; to + 1 < d->n; to++)
		if (!blank(d->line[to]) && underline(d, to + 1, '='))
			break;
	if (to + 1 >= d->n)
		to = d->n;
	while (to > from && blank(d->line[to - 1]))
		to--;
	f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	for (i = from; i < to; i++)
		fprintf(f, "%s\n", d->line[i]);
	fclose(f);
	return text;
}

static void mr_doc_path(char *buf, size_t len)
{
	const char *me = __FILE__, *tail = strstr(me, "/userspace/tests/");

	snprintf(buf, len, "%.*s/Documentation/protocol.rst",
		 tail ? (int)(tail - me) : 1, tail ? me : ".");
}

int main(int argc, char **argv)
{
	static struct docvec dv[NVECS + 8];
	static const u8 all_ops[] = {
		MR_OP_WRITE, MR_OP_SEND, MR_OP_READ_REQ, MR_OP_READ_RESP,
		MR_OP_CMP_SWAP, MR_OP_FETCH_ADD, MR_OP_ATOMIC_RESP, MR_OP_NOP,
		MR_OP_PROBE, MR_OP_ACK, MR_OP_ACK_REQ, MR_OP_RESET,
		MR_OP_UD_SEND,
	};
	char path[4096], *want, *have;
	int ndv = 0, i, missing = 0, unknown = 0;
	struct doc d;
	size_t k, o;

	if (argc > 1 && !strcmp(argv[1], "--print")) {
		want = section();
		if (!want) {
			fprintf(stderr, "test_vectors: a vector does not encode\n");
			return 1;
		}
		fputs(want, stdout);
		free(want);
		return 0;
	}

	tap_start();
	mr_doc_path(path, sizeof(path));
	if (!tap_ok(doc_load(&d, path) == 0, "%s opens", path))
		return tap_done();
	for (i = 0; i < d.n; i++) {
		const char *m = ".. vector: ";
		struct docvec *v;
		int next;

		if (strncmp(d.line[i], m, strlen(m)))
			continue;
		if (ndv == (int)(sizeof(dv) / sizeof(dv[0])))
			break;
		v = &dv[ndv++];
		snprintf(v->name, sizeof(v->name), "%s", d.line[i] + strlen(m));
		next = read_hex(&d, i + 1, v);
		if (v->hex_ok)
			read_table(&d, next, v);
	}
	tap_ok(ndv > 0, "protocol.rst has %d test vectors", ndv);

	for (i = 0; i < ndv; i++) {
		const struct vec *v = find_vec(dv[i].name);

		if (!v) {
			tap_diag("vector %s: not defined by this test", dv[i].name);
			unknown++;
			continue;
		}
		if (!tap_ok(dv[i].hex_ok, "%s: the hex block reads (%u bytes)",
			    v->name, dv[i].len)) {
			tap_diag("%s", dv[i].hex_err);
			continue;
		}
		check_encode(v, &dv[i]);
		check_decode(v, &dv[i]);
	}
	for (k = 0; k < NVECS; k++) {
		for (i = 0; i < ndv && strcmp(dv[i].name, vecs[k].name); i++)
			;
		if (i == ndv) {
			tap_diag("vector %s: not in protocol.rst", vecs[k].name);
			missing++;
		}
	}
	tap_ok(!missing && !unknown,
	       "protocol.rst has exactly the vectors this test defines "
	       "(%d missing, %d unknown)", missing, unknown);
	for (o = 0; o < sizeof(all_ops); o++) {
		for (k = 0; k < NVECS && vecs[k].h.opcode != all_ops[o]; k++)
			;
		tap_ok(k < NVECS, "opcode %s has a test vector",
		       mr_op_name(all_ops[o]));
	}

	want = section();
	have = doc_section(&d);
	for (k = 0; want && have && want[k] && want[k] == have[k]; k++)
		;
	if (!tap_ok(want && have && !strcmp(want, have),
		    "protocol.rst section 13 is what test_vectors --print prints"))
		tap_diag("%s", !have ? "no section \"13. Test vectors\"" :
			 !want ? "a vector does not encode" :
			 "they differ from the marked line on; regenerate it");
	if (want && have && strcmp(want, have)) {
		size_t l = k;

		while (l && want[l - 1] != '\n')
			l--;
		tap_diag("printed:  %.*s", (int)strcspn(want + l, "\n"), want + l);
		tap_diag("document: %.*s", (int)strcspn(have + l, "\n"), have + l);
	}
	free(want);
	free(have);
	doc_free(&d);
	return tap_done();
}
