// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcapgen: captures of MetaRoCE packets made by the real encoder
 * (drivers/metaroce/core/wire.c), with what a correct dissector must show,
 * for tools/wireshark/test/run.sh.
 *
 *   pcapgen DIR [CORPUS_DIR]
 *
 * writes, in DIR:
 *
 *   decode.pcap, decode.expect  every opcode with its flag combinations,
 *        ACKs from no block to 16 path and 16 QP blocks, in both wire
 *        versions; one line per field the dissector must show, in order:
 *        "FRAME FIELD VALUE" (VALUE decimal; repeated fields repeat)
 *   verdict.pcap, verdict.expect  those packets, the fuzzers' seed corpus
 *        (CORPUS_DIR, the files of this wire version) and deterministic
 *        mutations of them: "FRAME VERDICT", VERDICT being "ok" or the
 *        drop reason mr_wire_decode() returns (mr_drop_name())
 *   port.pcap  two packets to UDP port 5000 (the port preference)
 *
 * The packets of this tree's wire version (MR_WIRE_VERSION) come straight
 * from mr_wire_encode()/mr_wire_encode_ack(); those of the other version
 * (1 or 2) are the same packets with the version byte changed and the
 * words in which the versions differ rewritten: the SYN words (SYN DSN and
 * a 32-bit SYN Echo in version 1, SYN DSN and a 64-bit SYN Cookie in
 * version 2) and the RESET body (Unknown Epoch, and in version 2 a 64-bit
 * Cookie). The pcap format (the classic libpcap file, Ethernet link type)
 * is written here; nothing else is needed.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <metaroce/mr_wire.h>

#define PORT		4797
#define PKT_MAX		(MR_ACK_MAX_LEN + MR_MAX_PAYLOAD + 64)
#define SYN_LEN(v)	((v) == 1 ? 8u : 12u)
#define RESET_LEN(v)	((v) == 1 ? 4u : 12u)
#define OTHER_VERSION	(MR_WIRE_VERSION == 1 ? 2 : 1)

#if MR_WIRE_VERSION != 1 && MR_WIRE_VERSION != 2
#error "pcapgen knows wire versions 1 and 2: teach it (and metaroce.lua) the new one"
#endif

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("pcapgen: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* --- pcap ----------------------------------------------------------------- */

struct pcap {
	FILE *f;
	u32 frames;
};

static void le32(u8 *p, u32 v)
{
	p[0] = (u8)v;
	p[1] = (u8)(v >> 8);
	p[2] = (u8)(v >> 16);
	p[3] = (u8)(v >> 24);
}

static void pcap_open(struct pcap *pc, const char *dir, const char *name)
{
	char path[1024];
	u8 hdr[24];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	pc->f = fopen(path, "wb");
	if (!pc->f)
		die("%s: %s", path, strerror(errno));
	pc->frames = 0;
	le32(hdr, 0xa1b2c3d4);		/* microsecond timestamps */
	hdr[4] = 2;			/* version 2.4 */
	hdr[5] = 0;
	hdr[6] = 4;
	hdr[7] = 0;
	le32(hdr + 8, 0);		/* thiszone */
	le32(hdr + 12, 0);		/* sigfigs */
	le32(hdr + 16, 65535);		/* snaplen */
	le32(hdr + 20, 1);		/* LINKTYPE_ETHERNET */
	if (fwrite(hdr, sizeof(hdr), 1, pc->f) != 1)
		die("%s: write failed", path);
}

static void pcap_close(struct pcap *pc)
{
	if (fclose(pc->f))
		die("close: %s", strerror(errno));
}

static u16 ip_csum(const u8 *p, u32 n)
{
	u32 sum = 0, i;

	for (i = 0; i < n; i += 2)
		sum += (u32)p[i] << 8 | p[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (u16)~sum;
}

/*
 * One Ethernet/IPv4/UDP frame from 10.0.0.1:sport to 10.0.0.2:dport
 * carrying @len bytes of @data. Returns the frame number (from 1).
 */
static u32 pcap_udp(struct pcap *pc, u16 sport, u16 dport, const u8 *data,
		    u32 len)
{
	static u8 frame[14 + 20 + 8 + PKT_MAX];
	u8 rec[16], *ip = frame + 14, *udp = ip + 20;
	u32 n = 14 + 20 + 8 + len;

	if (len > PKT_MAX)
		die("packet of %u bytes", len);
	memset(frame, 0, 14 + 20 + 8);
	memcpy(frame, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
	frame[12] = 0x08;		/* IPv4 */
	ip[0] = 0x45;
	ip[1] = 0x02;			/* ECT(0), as MetaRoCE sends */
	mr_put16(ip + 2, (u16)(20 + 8 + len));
	mr_put16(ip + 4, (u16)pc->frames);
	ip[6] = 0x40;			/* DF */
	ip[8] = 64;
	ip[9] = 17;			/* UDP */
	memcpy(ip + 12, "\x0a\x00\x00\x01\x0a\x00\x00\x02", 8);
	mr_put16(ip + 10, ip_csum(ip, 20));
	mr_put16(udp, sport);
	mr_put16(udp + 2, dport);
	mr_put16(udp + 4, (u16)(8 + len));
	/* UDP checksum 0: none (IPv4) */
	memcpy(udp + 8, data, len);

	pc->frames++;
	le32(rec, 1700000000 + pc->frames);
	le32(rec + 4, 0);
	le32(rec + 8, n);
	le32(rec + 12, n);
	if (fwrite(rec, sizeof(rec), 1, pc->f) != 1 ||
	    fwrite(frame, n, 1, pc->f) != 1)
		die("pcap write failed");
	return pc->frames;
}

/* --- deterministic values ------------------------------------------------- */

static u64 rng_state = 0x9e3779b97f4a7c15ull;

static u32 rnd32(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (u32)(rng_state >> 16);
}

static u64 rnd64(void)
{
	return (u64)rnd32() << 32 | rnd32();
}

/* In [lo, hi]. */
static u32 rnd_range(u32 lo, u32 hi)
{
	return lo + rnd32() % (hi - lo + 1);
}

/* --- the decode capture ---------------------------------------------------- */

static struct pcap decode_pc, verdict_pc;
static FILE *decode_ex, *verdict_ex;

/* Packets kept for the verdict capture: every native packet. */
#define MAX_KEPT	256
static struct kept {
	u8 b[PKT_MAX];
	u32 len;
} kept[MAX_KEPT];
static u32 nkept;

static void keep(const u8 *b, u32 len)
{
	if (nkept == MAX_KEPT)
		die("more than %d packets", MAX_KEPT);
	memcpy(kept[nkept].b, b, len);
	kept[nkept].len = len;
	nkept++;
}

static void ex(u32 frame, const char *field, u64 v)
{
	fprintf(decode_ex, "%u metaroce.%s %llu\n", frame, field,
		(unsigned long long)v);
}

/* The words in which the versions differ, as a packet carries them. */
struct vwords {
	u32 syn_echo;		/* version 1 */
	u64 syn_cookie;		/* version 2 */
	u64 reset_cookie;	/* version 2 */
};

static void expect_base(u32 fr, int ver, const struct mr_hdr *h, u32 hlen)
{
	ex(fr, "version", ver);
	ex(fr, "opcode", h->opcode);
	ex(fr, "flags", h->flags);
	ex(fr, "flags.syn", !!(h->flags & MR_F_SYN));
	ex(fr, "flags.ackreq", !!(h->flags & MR_F_ACKREQ));
	ex(fr, "flags.retx", !!(h->flags & MR_F_RETX));
	ex(fr, "flags.imm", !!(h->flags & MR_F_IMM));
	ex(fr, "flags.inv", !!(h->flags & MR_F_INV));
	ex(fr, "flags.solicit", !!(h->flags & MR_F_SOLICIT));
	ex(fr, "flags.reserved", 0);
	ex(fr, "epoch", h->epoch);
	ex(fr, "psn", h->psn);
	ex(fr, "path", h->path);
	ex(fr, "hlen", hlen / 4);
	ex(fr, "plen", h->plen);
	ex(fr, "tsval", h->tsval);
}

/* Expectations of a non-ACK packet, in the dissector's tree order. */
static void expect_pkt(u32 fr, int ver, const struct mr_hdr *h, u32 hlen,
		       const struct vwords *w)
{
	u8 op = h->opcode;

	expect_base(fr, ver, h, hlen);
	if (mr_op_has_dsn(op)) {
		ex(fr, "dst_qpn", h->dst_qpn);
		ex(fr, "src_qpn", h->src_qpn);
		ex(fr, "dsn", h->dsn);
		ex(fr, "gen", h->gen);
		ex(fr, "msn", h->msn);
		ex(fr, "msg_len", h->msg_len);
		ex(fr, "offset", h->offset);
		if (op == MR_OP_WRITE || op == MR_OP_READ_REQ ||
		    op == MR_OP_CMP_SWAP || op == MR_OP_FETCH_ADD) {
			ex(fr, "reth.raddr", h->raddr);
			ex(fr, "reth.rkey", h->rkey);
			ex(fr, "reth.ssn", op == MR_OP_WRITE &&
			   (h->flags & MR_F_IMM) ? h->ssn : 0);
		}
		if (op == MR_OP_CMP_SWAP || op == MR_OP_FETCH_ADD) {
			ex(fr, "atomic.swap_add", h->swap_add);
			ex(fr, "atomic.compare", h->compare);
		}
		if (op == MR_OP_SEND)
			ex(fr, "ssn", h->ssn);
		if (op == MR_OP_ATOMIC_RESP)
			ex(fr, "atomic.orig", h->orig);
	} else if (op == MR_OP_ACK_REQ) {
		ex(fr, "dst_qpn", h->dst_qpn);
		ex(fr, "src_qpn", h->src_qpn);
	} else if (op == MR_OP_UD_SEND) {
		ex(fr, "dst_qpn", h->dst_qpn);
		ex(fr, "src_qpn", h->src_qpn);
		ex(fr, "ud.qkey", h->qkey);
	} else if (op == MR_OP_RESET) {
		ex(fr, "reset.unknown_epoch", h->reset_epoch);
		if (ver == 2)
			ex(fr, "reset.cookie", w->reset_cookie);
	}
	if (h->flags & MR_F_IMM)
		ex(fr, "imm", h->imm);
	else if (h->flags & MR_F_INV)
		ex(fr, "inv_rkey", h->inv_rkey);
	if (h->flags & MR_F_SYN) {
		ex(fr, "syn.dsn", h->syn_dsn);
		if (ver == 1)
			ex(fr, "syn.echo", w->syn_echo);
		else
			ex(fr, "syn.cookie", w->syn_cookie);
	}
	if (h->plen)
		ex(fr, "payload", h->plen);
}

/*
 * Rewrites the native packet @in (@hl header bytes, then the payload) as
 * the other version's, into @out; returns its length and sets *@ohl.
 */
static u32 to_other(const u8 *in, u32 len, u32 hl, const struct mr_hdr *h,
		    const struct vwords *w, u8 *out, u32 *ohl)
{
	int v = OTHER_VERSION;
	u32 keep_len = hl, n;

	if (h->flags & MR_F_SYN)
		keep_len = hl - SYN_LEN(MR_WIRE_VERSION);
	else if (h->opcode == MR_OP_RESET)
		keep_len = hl - RESET_LEN(MR_WIRE_VERSION);
	memcpy(out, in, keep_len);
	n = keep_len;
	if (h->flags & MR_F_SYN) {
		mr_put32(out + n, h->syn_dsn);
		if (v == 1) {
			mr_put32(out + n + 4, w->syn_echo);
		} else {
			mr_put64(out + n + 4, w->syn_cookie);
		}
		n += SYN_LEN(v);
	} else if (h->opcode == MR_OP_RESET) {
		mr_put32(out + n, h->reset_epoch);
		if (v == 2)
			mr_put64(out + n + 4, w->reset_cookie);
		n += RESET_LEN(v);
	}
	*ohl = n;
	out[0] = (u8)v;
	out[13] = (u8)(n / 4);
	memcpy(out + n, in + hl, len - hl);
	return n + (len - hl);
}

static u32 npackets;

/* Encodes @h (payload: plen bytes), in both versions, with expectations. */
static void emit(struct mr_hdr *h)
{
	u8 b[PKT_MAX], o[PKT_MAX];
	struct vwords w;
	u32 i, len, fr, ohl, olen;
	int hl;

	w.syn_echo = rnd32();
	w.syn_cookie = rnd64() | 1;
	w.reset_cookie = rnd64() | 1;
#if MR_WIRE_VERSION == 1
	h->syn_echo = w.syn_echo;
#else
	h->cookie = h->opcode == MR_OP_RESET ? w.reset_cookie : w.syn_cookie;
#endif
	hl = mr_wire_encode(b, sizeof(b), h);
	if (hl < 0)
		die("encode of %s (flags 0x%x) failed: %s",
		    mr_op_name(h->opcode), h->flags, mr_drop_name(hl));
	for (i = 0; i < h->plen; i++)
		b[hl + i] = (u8)rnd32();
	len = (u32)hl + h->plen;
	fr = pcap_udp(&decode_pc, (u16)(49152 + h->path), PORT, b, len);
	expect_pkt(fr, MR_WIRE_VERSION, h, (u32)hl, &w);
	keep(b, len);

	olen = to_other(b, len, (u32)hl, h, &w, o, &ohl);
	fr = pcap_udp(&decode_pc, (u16)(49152 + h->path), PORT, o, olen);
	expect_pkt(fr, OTHER_VERSION, h, ohl, &w);
	npackets += 2;
}

static void emit_ack(struct mr_hdr *h, struct mr_ack *a)
{
	u8 b[PKT_MAX];
	u32 fr, i, w, n;
	int hl, v;

	hl = mr_wire_encode_ack(b, sizeof(b), h, a);
	if (hl < 0)
		die("ACK encode failed: %s", mr_drop_name(hl));
	keep(b, (u32)hl);
	/* ACKs are the same in both versions. */
	for (v = 1; v <= 2; v++) {
		b[0] = (u8)v;
		fr = pcap_udp(&decode_pc, 49152, PORT, b, (u32)hl);
		expect_base(fr, v, h, (u32)hl);
		ex(fr, "ack.epoch", a->ack_epoch);
		ex(fr, "ack.dsn_cum", a->dsn_cum);
		ex(fr, "ack.rate_hint", a->rate_hint);
		ex(fr, "ack.npath", a->npath);
		ex(fr, "ack.nqp", a->nqp);
		for (i = 0; i < a->npath; i++) {
			const struct mr_ack_path *p = &a->path[i];

			ex(fr, "ack.path.id", p->path);
			ex(fr, "ack.path.ce_cnt", p->ce_cnt);
			ex(fr, "ack.path.rx_cnt", p->rx_cnt);
			ex(fr, "ack.path.base", p->base);
			ex(fr, "ack.path.tsecr", p->tsecr);
			n = 0;
			for (w = 0; w < MR_PATH_WND / 32; w++) {
				ex(fr, "ack.path.bitmap", p->bitmap[w]);
				n += (u32)__builtin_popcount(p->bitmap[w]);
			}
			ex(fr, "ack.path.sacked", n);
		}
		for (i = 0; i < a->nqp; i++) {
			const struct mr_ack_qp *q = &a->qp[i];

			ex(fr, "ack.qp.status", q->status);
			ex(fr, "ack.qp.qpn", q->qpn);
			ex(fr, "ack.qp.gen", q->gen);
			ex(fr, "ack.qp.msn", q->msn);
			ex(fr, "ack.qp.aux", q->aux);
		}
		npackets++;
	}
	b[0] = MR_WIRE_VERSION;
}

static void hdr(struct mr_hdr *h, u8 op, u16 flags)
{
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	h->flags = flags;
	h->epoch = rnd32() | 1;
	h->tsval = rnd32();
	if (mr_op_sequenced(op)) {
		h->psn = rnd32();
		h->path = (u8)rnd_range(0, MR_MAX_PATHS - 1);
	}
	if (mr_op_has_dsn(op)) {
		h->dsn = rnd32();
		if (op != MR_OP_NOP) {
			h->dst_qpn = rnd_range(2, MR_QPN_MASK);
			h->src_qpn = rnd_range(2, MR_QPN_MASK);
			h->msn = rnd32() & MR_MSN_MASK;
			h->gen = (u8)rnd32();
		}
	}
	if (flags & MR_F_SYN)
		h->syn_dsn = rnd32();
	if (flags & MR_F_IMM)
		h->imm = rnd32();
	if (flags & MR_F_INV)
		h->inv_rkey = rnd32();
}

/* A data segment: @plen bytes at a random offset of a longer message. */
static void segment(struct mr_hdr *h, u16 plen)
{
	h->plen = plen;
	h->msg_len = plen ? rnd_range(plen, 1u << 20) : 0;
	h->offset = plen ? rnd_range(0, h->msg_len - plen) : 0;
}

static void gen_decode(void)
{
	static const u16 write_flags[] = {
		0, MR_F_IMM, MR_F_SYN, MR_F_ACKREQ | MR_F_SOLICIT,
		MR_F_IMM | MR_F_SYN | MR_F_ACKREQ | MR_F_RETX | MR_F_SOLICIT,
	};
	static const u16 send_flags[] = {
		0, MR_F_IMM, MR_F_INV, MR_F_SYN | MR_F_RETX,
		MR_F_INV | MR_F_SYN | MR_F_ACKREQ | MR_F_SOLICIT,
		MR_F_IMM | MR_F_SYN | MR_F_RETX | MR_F_SOLICIT,
	};
	static const u16 seq_flags[] = {
		0, MR_F_ACKREQ, MR_F_RETX, MR_F_SYN | MR_F_ACKREQ | MR_F_RETX,
	};
	static const u8 seq_ops[] = {
		MR_OP_READ_REQ, MR_OP_READ_RESP, MR_OP_CMP_SWAP,
		MR_OP_FETCH_ADD, MR_OP_ATOMIC_RESP, MR_OP_NOP,
	};
	struct mr_hdr h;
	struct mr_ack a;
	u32 i, j, k;

	for (i = 0; i < sizeof(write_flags) / sizeof(write_flags[0]); i++) {
		hdr(&h, MR_OP_WRITE, write_flags[i]);
		segment(&h, (u16)rnd_range(1, 64));
		h.raddr = rnd64();
		h.rkey = rnd32();
		if (h.flags & MR_F_IMM)
			h.ssn = rnd32();
		emit(&h);
	}
	hdr(&h, MR_OP_WRITE, MR_F_ACKREQ);	/* a zero-length WRITE */
	segment(&h, 0);
	emit(&h);
	hdr(&h, MR_OP_WRITE, 0);		/* a full 4 KiB segment */
	segment(&h, MR_MAX_PAYLOAD);
	h.raddr = rnd64();
	h.rkey = rnd32();
	emit(&h);

	for (i = 0; i < sizeof(send_flags) / sizeof(send_flags[0]); i++) {
		hdr(&h, MR_OP_SEND, send_flags[i]);
		segment(&h, (u16)rnd_range(1, 64));
		h.ssn = rnd32();
		emit(&h);
	}

	for (i = 0; i < sizeof(seq_ops); i++) {
		for (j = 0; j < sizeof(seq_flags) / sizeof(seq_flags[0]); j++) {
			u8 op = seq_ops[i];

			hdr(&h, op, seq_flags[j]);
			switch (op) {
			case MR_OP_READ_REQ:
				h.msg_len = rnd_range(0, MR_MAX_MSG_LEN);
				h.raddr = rnd64();
				h.rkey = rnd32();
				break;
			case MR_OP_READ_RESP:
				segment(&h, (u16)rnd_range(1, 64));
				break;
			case MR_OP_CMP_SWAP:
			case MR_OP_FETCH_ADD:
				h.msg_len = 8;
				h.raddr = rnd64() & ~7ull;
				h.rkey = rnd32();
				h.swap_add = rnd64();
				h.compare = rnd64();
				break;
			case MR_OP_ATOMIC_RESP:
				h.msg_len = 8;
				h.orig = rnd64();
				break;
			}
			emit(&h);
		}
	}

	hdr(&h, MR_OP_PROBE, MR_F_ACKREQ);
	emit(&h);
	hdr(&h, MR_OP_PROBE, MR_F_SYN | MR_F_ACKREQ);
	emit(&h);

	hdr(&h, MR_OP_ACK_REQ, 0);
	h.dst_qpn = rnd_range(2, MR_QPN_MASK);
	h.src_qpn = rnd_range(2, MR_QPN_MASK);
	emit(&h);

	hdr(&h, MR_OP_RESET, 0);
	h.reset_epoch = rnd32() | 1;
	emit(&h);

	hdr(&h, MR_OP_UD_SEND, 0);
	h.dst_qpn = 1;				/* QP1: connection management */
	h.src_qpn = rnd_range(0, MR_QPN_MASK);
	h.qkey = 0x80010000;
	h.plen = (u16)rnd_range(1, 256);
	emit(&h);
	hdr(&h, MR_OP_UD_SEND, MR_F_IMM | MR_F_SOLICIT);
	h.dst_qpn = rnd_range(0, MR_QPN_MASK);
	h.src_qpn = rnd_range(0, MR_QPN_MASK);
	h.qkey = rnd32();
	h.plen = (u16)rnd_range(1, 64);
	emit(&h);

	/* ACKs: (path blocks, QP blocks) */
	{
		static const u8 shapes[][2] = {
			{ 0, 0 }, { 1, 0 }, { 0, 1 }, { 3, 2 }, { 8, 5 },
			{ MR_MAX_PATHS, MR_ACK_MAX_QP },
		};

		for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
			hdr(&h, MR_OP_ACK, 0);
			memset(&a, 0, sizeof(a));
			a.ack_epoch = rnd32() | 1;
			a.dsn_cum = rnd32();
			a.rate_hint = i ? rnd32() : 0;
			a.npath = shapes[i][0];
			a.nqp = shapes[i][1];
			for (j = 0; j < a.npath; j++) {
				struct mr_ack_path *p = &a.path[j];

				/* paths in a shuffled order, each once */
				p->path = (u8)((j * 7 + i) % MR_MAX_PATHS);
				p->ce_cnt = (u16)rnd32();
				p->rx_cnt = (u16)rnd32();
				p->base = rnd32();
				p->tsecr = rnd32();
				for (k = 0; k < MR_PATH_WND / 32; k++)
					p->bitmap[k] = rnd32() >> (j % 32);
				p->bitmap[0] &= ~1u;	/* Base not received */
			}
			for (j = 0; j < a.nqp; j++) {
				struct mr_ack_qp *q = &a.qp[j];

				q->status = (u8)(j % (MR_QPS_MAX + 1));
				q->qpn = rnd_range(2, MR_QPN_MASK);
				q->gen = (u8)rnd32();
				q->msn = rnd32() & MR_MSN_MASK;
				q->aux = q->status == MR_QPS_RNR ?
					 rnd_range(0, 31) : 0;
			}
			emit_ack(&h, &a);
		}
	}
}

/* --- the verdict capture -------------------------------------------------- */

static void verdict(const u8 *b, u32 len)
{
	struct mr_hdr h;
	struct mr_ack a;
	int ret = mr_wire_decode(b, len, &h, &a);
	u32 fr = pcap_udp(&verdict_pc, 49152, PORT, b, len);

	fprintf(verdict_ex, "%u %s\n", fr, ret >= 0 ? "ok" : mr_drop_name(ret));
}

static void add_corpus(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	u8 b[PKT_MAX];
	char path[1024];
	FILE *f;
	size_t n;

	if (!d)
		die("%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "rb");
		if (!f)
			die("%s: %s", path, strerror(errno));
		n = fread(b, 1, sizeof(b), f);
		fclose(f);
		/* Another version's corpus would only say bad_version. */
		if (n && b[0] == MR_WIRE_VERSION)
			keep(b, (u32)n);
	}
	closedir(d);
}

/*
 * Each kept packet as it is, then mutated: a byte or a 32-bit word set to
 * a random or boundary value (never the version byte: the dissector knows
 * both versions, a receiver one), cut short, or grown.
 */
static void gen_verdict(void)
{
	static const u32 words[] = { 0, 1, 2, 15, 16, 31, 32, 0xff, 0x100,
		0xffffff, 0x1000000, 0x7fffffff, 0x80000000, 0x80000001,
		0xffffffff };
	u8 b[PKT_MAX];
	u32 i, m, len, at;

	for (i = 0; i < nkept; i++)
		verdict(kept[i].b, kept[i].len);
	for (i = 0; i < nkept; i++) {
		for (m = 0; m < 24; m++) {
			len = kept[i].len;
			memcpy(b, kept[i].b, len);
			at = rnd_range(1, len - 1);
			switch (m % 6) {
			case 0:
				b[at] = (u8)rnd32();
				break;
			case 1:		/* within the headers, most of the time */
				at = rnd_range(1, len < 100 ? len - 1 : 99);
				b[at] = (u8)words[rnd32() % 15];
				break;
			case 2:
			case 3:
				at = rnd_range(1, len < 100 ? len - 4 : 96);
				at &= ~3u;
				if (!at)
					at = 4;
				if (at + 4 > len)
					break;
				mr_put32(b + at, words[rnd32() % 15]);
				break;
			case 4:	/* (Wireshark's UDP hands no empty datagram on) */
				len = rnd_range(1, len - 1);
				break;
			case 5:
				if (len + 4 > PKT_MAX)
					break;
				len += rnd_range(1, 4);
				break;
			}
			verdict(b, len);
		}
	}
}

int main(int argc, char **argv)
{
	struct pcap pc;
	struct mr_hdr h;
	u8 b[PKT_MAX];
	int hl;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: pcapgen DIR [CORPUS_DIR]\n");
		return 2;
	}
	pcap_open(&decode_pc, argv[1], "decode.pcap");
	snprintf((char *)b, sizeof(b), "%s/decode.expect", argv[1]);
	decode_ex = fopen((char *)b, "w");
	if (!decode_ex)
		die("%s: %s", (char *)b, strerror(errno));
	gen_decode();
	pcap_close(&decode_pc);
	if (fclose(decode_ex))
		die("decode.expect: %s", strerror(errno));

	if (argc == 3)
		add_corpus(argv[2]);
	pcap_open(&verdict_pc, argv[1], "verdict.pcap");
	snprintf((char *)b, sizeof(b), "%s/verdict.expect", argv[1]);
	verdict_ex = fopen((char *)b, "w");
	if (!verdict_ex)
		die("%s: %s", (char *)b, strerror(errno));
	gen_verdict();
	pcap_close(&verdict_pc);
	if (fclose(verdict_ex))
		die("verdict.expect: %s", strerror(errno));

	/* The port preference: a PROBE and an ACK_REQ to port 5000. */
	pcap_open(&pc, argv[1], "port.pcap");
	hdr(&h, MR_OP_PROBE, MR_F_ACKREQ);
	hl = mr_wire_encode(b, sizeof(b), &h);
	if (hl < 0)
		die("PROBE encode failed");
	pcap_udp(&pc, 49152, 5000, b, (u32)hl);
	hdr(&h, MR_OP_ACK_REQ, 0);
	h.dst_qpn = 0x11;
	h.src_qpn = 0x12;
	hl = mr_wire_encode(b, sizeof(b), &h);
	if (hl < 0)
		die("ACK_REQ encode failed");
	pcap_udp(&pc, 49152, 5000, b, (u32)hl);
	pcap_close(&pc);

	printf("pcapgen: wire version %d encoder: %u decode frames, %u verdict frames\n",
	       MR_WIRE_VERSION, decode_pc.frames, verdict_pc.frames);
	return 0;
}
