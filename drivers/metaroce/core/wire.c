// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * MetaRoCE wire format v2: encode and validating decode.
 *
 * Everything here is stateless: a packet that fails these checks is
 * malformed whatever the receiver knows, and is dropped with the reason.
 */
#include <metaroce/mr_wire.h>

#define F_SEQ	(MR_F_SYN | MR_F_ACKREQ | MR_F_RETX)

/* Flags each opcode may carry. */
static u16 mr_flags_allowed(u8 op)
{
	switch (op) {
	case MR_OP_WRITE:
		return F_SEQ | MR_F_IMM | MR_F_SOLICIT;
	case MR_OP_SEND:
		return F_SEQ | MR_F_IMM | MR_F_INV | MR_F_SOLICIT;
	case MR_OP_READ_REQ:
	case MR_OP_READ_RESP:
	case MR_OP_CMP_SWAP:
	case MR_OP_FETCH_ADD:
	case MR_OP_ATOMIC_RESP:
	case MR_OP_NOP:
		return F_SEQ;
	case MR_OP_PROBE:
		return MR_F_SYN | MR_F_ACKREQ;
	case MR_OP_UD_SEND:
		return MR_F_IMM | MR_F_SOLICIT;
	default:
		return 0;	/* ACK, ACK_REQ */
	}
}

/* Fixed header length of an opcode, without the optional words. */
static u32 mr_wire_fixed_hlen(u8 op)
{
	switch (op) {
	case MR_OP_WRITE:
	case MR_OP_READ_REQ:
		return MR_BASE_HLEN + MR_RC_HLEN + MR_RETH_LEN;
	case MR_OP_SEND:
		return MR_BASE_HLEN + MR_RC_HLEN + 4;
	case MR_OP_READ_RESP:
	case MR_OP_NOP:
		return MR_BASE_HLEN + MR_RC_HLEN;
	case MR_OP_CMP_SWAP:
	case MR_OP_FETCH_ADD:
		return MR_BASE_HLEN + MR_RC_HLEN + MR_RETH_LEN +
		       MR_ATOMIC_ETH_LEN;
	case MR_OP_ATOMIC_RESP:
		return MR_BASE_HLEN + MR_RC_HLEN + 8;
	case MR_OP_PROBE:
		return MR_BASE_HLEN;
	case MR_OP_ACK:
		return MR_BASE_HLEN + MR_ACKH_LEN;	/* without blocks */
	case MR_OP_ACK_REQ:
		return MR_BASE_HLEN + MR_ACKREQ_HLEN;
	case MR_OP_RESET:
		return MR_BASE_HLEN + MR_RESET_LEN;
	case MR_OP_UD_SEND:
		return MR_BASE_HLEN + MR_UD_HLEN;
	default:
		return 0;
	}
}

u32 mr_wire_hlen(u8 op, u16 flags)
{
	u32 len = mr_wire_fixed_hlen(op);

	if (!len)
		return 0;
	/* Optional words, in this order: IMM or INV, then SYN's DSN and cookie. */
	if (flags & (MR_F_IMM | MR_F_INV))
		len += 4;
	if (flags & MR_F_SYN)
		len += MR_SYN_LEN;
	return len;
}

static int mr_op_has_payload(u8 op)
{
	return op == MR_OP_WRITE || op == MR_OP_SEND ||
	       op == MR_OP_READ_RESP || op == MR_OP_UD_SEND;
}

static int mr_op_has_rc(u8 op)
{
	return mr_op_has_dsn(op);
}

/* Checks on the RC fields shared by decode and encode. */
static int mr_check_rc(const struct mr_hdr *h)
{
	u64 end = (u64)h->offset + h->plen;

	if (h->dst_qpn > MR_QPN_MASK || h->src_qpn > MR_QPN_MASK ||
	    h->msn > MR_MSN_MASK)
		return -MR_DROP_BAD_QPN;
	if (h->opcode == MR_OP_NOP) {
		if (h->dst_qpn || h->src_qpn || h->msn || h->gen ||
		    h->msg_len || h->offset)
			return -MR_DROP_BAD_FIELD;
		return 0;
	}
	/* QP0 and QP1 are management QPs: never reliable-connected. */
	if (h->dst_qpn < 2 || h->src_qpn < 2)
		return -MR_DROP_BAD_QPN;
	if (h->msg_len > MR_MAX_MSG_LEN)
		return -MR_DROP_BAD_LENGTH;

	switch (h->opcode) {
	case MR_OP_WRITE:
	case MR_OP_SEND:
	case MR_OP_READ_RESP:
		if (end > h->msg_len)
			return -MR_DROP_BAD_LENGTH;
		/* Only a zero-length message has an empty segment. */
		if (!h->plen && (h->msg_len || h->offset))
			return -MR_DROP_BAD_LENGTH;
		break;
	case MR_OP_READ_REQ:
		if (h->offset)
			return -MR_DROP_BAD_LENGTH;
		break;
	case MR_OP_CMP_SWAP:
	case MR_OP_FETCH_ADD:
		if (h->raddr & 7)
			return -MR_DROP_BAD_FIELD;
		fallthrough;
	case MR_OP_ATOMIC_RESP:
		if (h->msg_len != 8 || h->offset)
			return -MR_DROP_BAD_LENGTH;
		break;
	}
	return 0;
}

/* Checks on ACK blocks shared by decode and encode. */
static int mr_check_ack_qp(const struct mr_ack_qp *aq)
{
	if (aq->status > MR_QPS_MAX || aq->qpn < 2 ||
	    aq->qpn > MR_QPN_MASK || aq->msn > MR_MSN_MASK)
		return -MR_DROP_BAD_ACK;
	if (aq->status == MR_QPS_RNR ? aq->aux > 31 : aq->aux != 0)
		return -MR_DROP_BAD_ACK;
	return 0;
}

static int mr_check_ack_path(u8 path, u32 *seen)
{
	if (path >= MR_MAX_PATHS || (*seen & (1u << path)))
		return -MR_DROP_BAD_ACK;
	*seen |= 1u << path;
	return 0;
}

/* Validates every block whether or not @ack is given to receive them. */
static int mr_decode_ack(const u8 *p, u32 avail, struct mr_ack *ack,
			 u32 *hlen)
{
	struct mr_ack_path tmp_path;
	struct mr_ack_qp tmp_qp;
	u32 i, seen = 0, need;
	u8 npath, nqp;

	npath = p[12];
	nqp = p[13];
	if (npath > MR_MAX_PATHS || nqp > MR_ACK_MAX_QP || mr_get16(p + 14))
		return -MR_DROP_BAD_ACK;
	need = MR_ACKH_LEN + npath * MR_ACK_PATH_LEN + nqp * MR_ACK_QP_LEN;
	if (avail < need)
		return -MR_DROP_TRUNCATED;
	*hlen = MR_BASE_HLEN + need;
	if (!mr_get32(p))
		return -MR_DROP_BAD_ACK;
	if (ack) {
		ack->ack_epoch = mr_get32(p);
		ack->dsn_cum = mr_get32(p + 4);
		ack->rate_hint = mr_get32(p + 8);
		ack->npath = npath;
		ack->nqp = nqp;
	}
	p += MR_ACKH_LEN;
	for (i = 0; i < npath; i++, p += MR_ACK_PATH_LEN) {
		struct mr_ack_path *ap = ack ? &ack->path[i] : &tmp_path;
		u32 w;

		ap->path = p[0];
		if (mr_check_ack_path(ap->path, &seen) || p[1] ||
		    mr_get16(p + 6))
			return -MR_DROP_BAD_ACK;
		ap->ce_cnt = mr_get16(p + 2);
		ap->rx_cnt = mr_get16(p + 4);
		ap->base = mr_get32(p + 8);
		ap->tsecr = mr_get32(p + 12);
		for (w = 0; w < MR_PATH_WND / 32; w++)
			ap->bitmap[w] = mr_get32(p + 16 + 4 * w);
	}
	for (i = 0; i < nqp; i++, p += MR_ACK_QP_LEN) {
		struct mr_ack_qp *aq = ack ? &ack->qp[i] : &tmp_qp;
		u32 v = mr_get32(p);

		aq->status = v >> 24;
		aq->qpn = v & MR_QPN_MASK;
		v = mr_get32(p + 4);
		aq->gen = v >> 24;
		aq->msn = v & MR_MSN_MASK;
		aq->aux = mr_get32(p + 8);
		if (mr_check_ack_qp(aq))
			return -MR_DROP_BAD_ACK;
	}
	return 0;
}

int mr_wire_decode(const u8 *buf, u32 len, struct mr_hdr *h,
		   struct mr_ack *ack)
{
	const u8 *p;
	u32 hlen, expect;
	int ret;

	if (len < MR_BASE_HLEN)
		return -MR_DROP_TRUNCATED;
	if (buf[0] != MR_WIRE_VERSION)
		return -MR_DROP_BAD_VERSION;

	memset(h, 0, sizeof(*h));
	h->opcode = buf[1];
	h->flags = mr_get16(buf + 2);
	h->epoch = mr_get32(buf + 4);
	h->psn = mr_get32(buf + 8);
	h->path = buf[12];
	hlen = (u32)buf[13] * 4;
	h->plen = mr_get16(buf + 14);
	h->tsval = mr_get32(buf + 16);

	expect = mr_wire_hlen(h->opcode, h->flags);
	if (!expect)
		return -MR_DROP_BAD_OPCODE;
	if (h->flags & ~mr_flags_allowed(h->opcode))
		return -MR_DROP_BAD_FLAGS;
	if ((h->flags & MR_F_IMM) && (h->flags & MR_F_INV))
		return -MR_DROP_BAD_FLAGS;
	if (!h->epoch)
		return -MR_DROP_BAD_FIELD;
	if (mr_op_sequenced(h->opcode)) {
		if (h->path >= MR_MAX_PATHS)
			return -MR_DROP_BAD_FIELD;
	} else if (h->psn || h->path) {
		return -MR_DROP_BAD_FIELD;
	}
	if (!mr_op_has_payload(h->opcode) && h->plen)
		return -MR_DROP_BAD_PLEN;
	if (h->plen > MR_MAX_PAYLOAD)
		return -MR_DROP_BAD_PLEN;

	p = buf + MR_BASE_HLEN;
	if (h->opcode == MR_OP_ACK) {
		if (len < MR_BASE_HLEN + MR_ACKH_LEN)
			return -MR_DROP_TRUNCATED;
		ret = mr_decode_ack(p, len - MR_BASE_HLEN, ack, &expect);
		if (ret)
			return ret;
	}
	if (hlen != expect)
		return -MR_DROP_BAD_HLEN;
	if (len < hlen)
		return -MR_DROP_TRUNCATED;
	if (len != hlen + h->plen)
		return -MR_DROP_BAD_PLEN;
	h->hlen = hlen;

	if (mr_op_has_rc(h->opcode)) {
		u32 v;

		h->dst_qpn = mr_get32(p);
		h->src_qpn = mr_get32(p + 4);
		h->dsn = mr_get32(p + 8);
		v = mr_get32(p + 12);
		h->gen = v >> 24;
		h->msn = v & MR_MSN_MASK;
		h->msg_len = mr_get32(p + 16);
		h->offset = mr_get32(p + 20);
		p += MR_RC_HLEN;
		switch (h->opcode) {
		case MR_OP_WRITE:
		case MR_OP_READ_REQ:
		case MR_OP_CMP_SWAP:
		case MR_OP_FETCH_ADD:
			h->raddr = mr_get64(p);
			h->rkey = mr_get32(p + 8);
			/*
			 * The RETH's last word is the receive-match number of
			 * a WRITE with immediate (it consumes a receive); zero
			 * otherwise.
			 */
			if (h->opcode == MR_OP_WRITE && (h->flags & MR_F_IMM))
				h->ssn = mr_get32(p + 12);
			else if (mr_get32(p + 12))
				return -MR_DROP_BAD_FIELD;
			p += MR_RETH_LEN;
			if (h->opcode == MR_OP_CMP_SWAP ||
			    h->opcode == MR_OP_FETCH_ADD) {
				h->swap_add = mr_get64(p);
				h->compare = mr_get64(p + 8);
				p += MR_ATOMIC_ETH_LEN;
			}
			break;
		case MR_OP_SEND:
			h->ssn = mr_get32(p);
			p += 4;
			break;
		case MR_OP_ATOMIC_RESP:
			h->orig = mr_get64(p);
			p += 8;
			break;
		}
		ret = mr_check_rc(h);
		if (ret)
			return ret;
	} else if (h->opcode == MR_OP_ACK_REQ) {
		h->dst_qpn = mr_get32(p);
		h->src_qpn = mr_get32(p + 4);
		if (h->dst_qpn > MR_QPN_MASK || h->src_qpn > MR_QPN_MASK ||
		    h->dst_qpn < 2 || h->src_qpn < 2)
			return -MR_DROP_BAD_QPN;
	} else if (h->opcode == MR_OP_UD_SEND) {
		h->dst_qpn = mr_get32(p);
		h->src_qpn = mr_get32(p + 4);
		h->qkey = mr_get32(p + 8);
		if (h->dst_qpn > MR_QPN_MASK || h->src_qpn > MR_QPN_MASK)
			return -MR_DROP_BAD_QPN;
		if (mr_get32(p + 12))
			return -MR_DROP_BAD_FIELD;
		p += MR_UD_HLEN;
	} else if (h->opcode == MR_OP_RESET) {
		h->reset_epoch = mr_get32(p);
		h->cookie = mr_get64(p + 4);
		if (!h->reset_epoch || !h->cookie)
			return -MR_DROP_BAD_FIELD;
	}
	if (h->flags & MR_F_IMM)
		h->imm = mr_get32(p);
	else if (h->flags & MR_F_INV)
		h->inv_rkey = mr_get32(p);
	if (h->flags & (MR_F_IMM | MR_F_INV))
		p += 4;
	if (h->flags & MR_F_SYN) {
		h->syn_dsn = mr_get32(p);
		h->cookie = mr_get64(p + 4);
	}
	return (int)hlen;
}

static void mr_encode_base(u8 *buf, const struct mr_hdr *h, u32 hlen)
{
	buf[0] = MR_WIRE_VERSION;
	buf[1] = h->opcode;
	mr_put16(buf + 2, h->flags);
	mr_put32(buf + 4, h->epoch);
	mr_put32(buf + 8, h->psn);
	buf[12] = h->path;
	buf[13] = hlen / 4;
	mr_put16(buf + 14, h->plen);
	mr_put32(buf + 16, h->tsval);
}

int mr_wire_encode(u8 *buf, u32 size, const struct mr_hdr *h)
{
	u32 hlen = mr_wire_hlen(h->opcode, h->flags);
	u8 *p;
	int ret;

	if (!hlen || h->opcode == MR_OP_ACK)
		return -MR_DROP_BAD_OPCODE;
	if ((h->flags & ~mr_flags_allowed(h->opcode)) ||
	    ((h->flags & MR_F_IMM) && (h->flags & MR_F_INV)))
		return -MR_DROP_BAD_FLAGS;
	if (size < hlen)
		return -MR_DROP_TRUNCATED;
	if (!h->epoch || h->plen > MR_MAX_PAYLOAD ||
	    (h->plen && !mr_op_has_payload(h->opcode)))
		return -MR_DROP_BAD_FIELD;
	if (mr_op_sequenced(h->opcode) ? h->path >= MR_MAX_PATHS :
					 (h->psn || h->path))
		return -MR_DROP_BAD_FIELD;

	mr_encode_base(buf, h, hlen);
	p = buf + MR_BASE_HLEN;
	if (mr_op_has_rc(h->opcode)) {
		ret = mr_check_rc(h);
		if (ret)
			return ret;
		mr_put32(p, h->dst_qpn);
		mr_put32(p + 4, h->src_qpn);
		mr_put32(p + 8, h->dsn);
		mr_put32(p + 12, (u32)h->gen << 24 | h->msn);
		mr_put32(p + 16, h->msg_len);
		mr_put32(p + 20, h->offset);
		p += MR_RC_HLEN;
		switch (h->opcode) {
		case MR_OP_WRITE:
		case MR_OP_READ_REQ:
		case MR_OP_CMP_SWAP:
		case MR_OP_FETCH_ADD:
			mr_put64(p, h->raddr);
			mr_put32(p + 8, h->rkey);
			mr_put32(p + 12, h->opcode == MR_OP_WRITE &&
				 (h->flags & MR_F_IMM) ? h->ssn : 0);
			p += MR_RETH_LEN;
			if (h->opcode == MR_OP_CMP_SWAP ||
			    h->opcode == MR_OP_FETCH_ADD) {
				mr_put64(p, h->swap_add);
				mr_put64(p + 8, h->compare);
				p += MR_ATOMIC_ETH_LEN;
			}
			break;
		case MR_OP_SEND:
			mr_put32(p, h->ssn);
			p += 4;
			break;
		case MR_OP_ATOMIC_RESP:
			mr_put64(p, h->orig);
			p += 8;
			break;
		}
	} else if (h->opcode == MR_OP_ACK_REQ) {
		if (h->dst_qpn > MR_QPN_MASK || h->src_qpn > MR_QPN_MASK ||
		    h->dst_qpn < 2 || h->src_qpn < 2)
			return -MR_DROP_BAD_QPN;
		mr_put32(p, h->dst_qpn);
		mr_put32(p + 4, h->src_qpn);
	} else if (h->opcode == MR_OP_UD_SEND) {
		if (h->dst_qpn > MR_QPN_MASK || h->src_qpn > MR_QPN_MASK)
			return -MR_DROP_BAD_QPN;
		mr_put32(p, h->dst_qpn);
		mr_put32(p + 4, h->src_qpn);
		mr_put32(p + 8, h->qkey);
		mr_put32(p + 12, 0);
		p += MR_UD_HLEN;
	} else if (h->opcode == MR_OP_RESET) {
		if (!h->reset_epoch || !h->cookie)
			return -MR_DROP_BAD_FIELD;
		mr_put32(p, h->reset_epoch);
		mr_put64(p + 4, h->cookie);
	}
	if (h->flags & MR_F_IMM)
		mr_put32(p, h->imm);
	else if (h->flags & MR_F_INV)
		mr_put32(p, h->inv_rkey);
	if (h->flags & (MR_F_IMM | MR_F_INV))
		p += 4;
	if (h->flags & MR_F_SYN) {
		mr_put32(p, h->syn_dsn);
		mr_put64(p + 4, h->cookie);
	}
	return (int)hlen;
}

int mr_wire_encode_ack(u8 *buf, u32 size, const struct mr_hdr *h,
		       const struct mr_ack *ack)
{
	u32 hlen, i, w, seen = 0;
	u8 *p;

	if (ack->npath > MR_MAX_PATHS || ack->nqp > MR_ACK_MAX_QP ||
	    !h->epoch || !ack->ack_epoch)
		return -MR_DROP_BAD_ACK;
	for (i = 0; i < ack->npath; i++)
		if (mr_check_ack_path(ack->path[i].path, &seen))
			return -MR_DROP_BAD_ACK;
	for (i = 0; i < ack->nqp; i++)
		if (mr_check_ack_qp(&ack->qp[i]))
			return -MR_DROP_BAD_ACK;
	hlen = MR_BASE_HLEN + MR_ACKH_LEN + ack->npath * MR_ACK_PATH_LEN +
	       ack->nqp * MR_ACK_QP_LEN;
	if (size < hlen)
		return -MR_DROP_TRUNCATED;

	mr_encode_base(buf, h, hlen);
	buf[1] = MR_OP_ACK;
	mr_put16(buf + 2, 0);
	mr_put32(buf + 8, 0);
	buf[12] = 0;
	mr_put16(buf + 14, 0);
	p = buf + MR_BASE_HLEN;
	mr_put32(p, ack->ack_epoch);
	mr_put32(p + 4, ack->dsn_cum);
	mr_put32(p + 8, ack->rate_hint);
	p[12] = ack->npath;
	p[13] = ack->nqp;
	mr_put16(p + 14, 0);
	p += MR_ACKH_LEN;
	for (i = 0; i < ack->npath; i++, p += MR_ACK_PATH_LEN) {
		const struct mr_ack_path *ap = &ack->path[i];

		p[0] = ap->path;
		p[1] = 0;
		mr_put16(p + 2, ap->ce_cnt);
		mr_put16(p + 4, ap->rx_cnt);
		mr_put16(p + 6, 0);
		mr_put32(p + 8, ap->base);
		mr_put32(p + 12, ap->tsecr);
		for (w = 0; w < MR_PATH_WND / 32; w++)
			mr_put32(p + 16 + 4 * w, ap->bitmap[w]);
	}
	for (i = 0; i < ack->nqp; i++, p += MR_ACK_QP_LEN) {
		const struct mr_ack_qp *aq = &ack->qp[i];

		mr_put32(p, (u32)aq->status << 24 | (aq->qpn & MR_QPN_MASK));
		mr_put32(p + 4, (u32)aq->gen << 24 | (aq->msn & MR_MSN_MASK));
		mr_put32(p + 8, aq->aux);
	}
	return (int)hlen;
}

static const char * const mr_drop_names[MR_DROP_NR_REASONS] = {
	[MR_DROP_NONE] = "none",
	[MR_DROP_TRUNCATED] = "truncated",
	[MR_DROP_BAD_VERSION] = "bad_version",
	[MR_DROP_BAD_OPCODE] = "bad_opcode",
	[MR_DROP_BAD_FLAGS] = "bad_flags",
	[MR_DROP_BAD_HLEN] = "bad_hlen",
	[MR_DROP_BAD_PLEN] = "bad_plen",
	[MR_DROP_BAD_FIELD] = "bad_field",
	[MR_DROP_BAD_QPN] = "bad_qpn",
	[MR_DROP_BAD_LENGTH] = "bad_length",
	[MR_DROP_BAD_ACK] = "bad_ack",
	[MR_DROP_NO_CONN] = "no_conn",
	[MR_DROP_EPOCH] = "epoch",
	[MR_DROP_PSN_WINDOW] = "psn_window",
	[MR_DROP_DSN_WINDOW] = "dsn_window",
	[MR_DROP_DUP] = "duplicate",
	[MR_DROP_NO_QP] = "no_qp",
	[MR_DROP_QP_STATE] = "qp_state",
	[MR_DROP_WRONG_PEER] = "wrong_peer",
	[MR_DROP_MSN_WINDOW] = "msn_window",
	[MR_DROP_STALE_GEN] = "stale_gen",
	[MR_DROP_INCONSISTENT] = "inconsistent",
	[MR_DROP_RNR] = "rnr",
	[MR_DROP_ACCESS] = "access",
	[MR_DROP_INV_REQ] = "invalid_request",
	[MR_DROP_SSN] = "ssn",
};

const char *mr_drop_name(int reason)
{
	if (reason < 0)
		reason = -reason;
	if (reason >= MR_DROP_NR_REASONS)
		return "unknown";
	return mr_drop_names[reason];
}

const char *mr_op_name(u8 op)
{
	switch (op) {
	case MR_OP_WRITE: return "WRITE";
	case MR_OP_SEND: return "SEND";
	case MR_OP_READ_REQ: return "READ_REQ";
	case MR_OP_READ_RESP: return "READ_RESP";
	case MR_OP_CMP_SWAP: return "CMP_SWAP";
	case MR_OP_FETCH_ADD: return "FETCH_ADD";
	case MR_OP_ATOMIC_RESP: return "ATOMIC_RESP";
	case MR_OP_NOP: return "NOP";
	case MR_OP_PROBE: return "PROBE";
	case MR_OP_ACK: return "ACK";
	case MR_OP_ACK_REQ: return "ACK_REQ";
	case MR_OP_RESET: return "RESET";
	case MR_OP_UD_SEND: return "UD_SEND";
	default: return "?";
	}
}
