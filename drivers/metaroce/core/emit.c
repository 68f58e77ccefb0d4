// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Emission: a packet the engine built goes out on a path. The connection
 * fills the base header fields it owns (epoch, timestamp; for a sequenced
 * packet the path, the path's next PSN and, while SYN is set, the SYN
 * fields), the packet is encoded and handed to the environment
 * (mr_env_ops.xmit), and a sequenced packet takes its slot in its path's
 * window. Control packets (probes, ACK_REQs, RESETs) come through
 * mr_conn_send_ctrl(), which rotates them over the usable paths when the
 * caller names none, ACKs through mr_conn_send_ack().
 *
 * Below the paths (path.c sends its probes here), the QPs (msg.c, its
 * ACK_REQs) and the connection; calls no file of the engine but the codec
 * (wire.c).
 */
#include "internal.h"

/* Record the transmission in @id's window: its PSN is the path's nxt. */
static void mr_path_sent(struct mr_conn *c, u32 id, u32 dsn, u32 wire_len,
			 u64 now)
{
	struct mr_path *p = &c->path[id];
	u32 slot = p->nxt % MR_PATH_WND;

	if (!mr_path_has_out(p))
		p->last_progress = now;
	p->dsn[slot] = dsn;
	p->len[slot] = (u16)wire_len;
	mr_bit_set(p->out, slot);
	p->nxt++;
	p->inflight += wire_len;
	c->inflight += wire_len;
	p->tx_pkts++;
	p->tx_bytes += wire_len;
}

/*
 * Hand an encoded packet to the environment on @path and count it. Returns
 * the environment's verdict (0: sent).
 */
static int mr_emit_pkt(struct mr_conn *c, struct mr_txpkt *pkt, int path)
{
	int ret;

	pkt->path = (u8)path;
	pkt->sport = c->path[path].sport;
	ret = c->ops->xmit(c->env, c, pkt);
	if (ret)
		return ret;
	mr_stat(c, MR_ST_TX_PKTS, 1);
	mr_stat(c, MR_ST_TX_BYTES, (u64)pkt->hlen + pkt->plen);
	return 0;
}

/* Fill the base header fields the connection owns and send. */
int mr_conn_emit(struct mr_conn *c, struct mr_hdr *h, int path,
		 const struct mr_seg *s, u64 now)
{
	u8 buf[MR_HLEN_MAX];
	struct mr_txpkt pkt;
	int hlen, ret;

	h->epoch = c->epoch;
	h->tsval = (u32)now;
	if (mr_op_sequenced(h->opcode)) {
		h->path = (u8)path;
		h->psn = c->path[path].nxt;
		if (c->syn) {
			h->flags |= MR_F_SYN;
			h->syn_dsn = c->dsn_una;
			h->cookie = c->cookie;
		}
	}
	hlen = mr_wire_encode(buf, sizeof(buf), h);
	/* Cannot happen for what the engine builds; never retry it. */
	if (hlen < 0)
		return MR_XMIT_GONE;
	memset(&pkt, 0, sizeof(pkt));
	pkt.hdr = buf;
	pkt.hlen = (u32)hlen;
	pkt.plen = h->plen;
	if (s)
		pkt.qp = s->qp;
	if (s && h->plen) {
		pkt.kind = s->kind == MR_SEG_REQ ? MR_TX_REQ : MR_TX_RESP;
		pkt.cookie = s->cookie;
		pkt.key = s->key;
		pkt.offset = s->offset;
	}
	/* The announcement goes ahead of queued data (section 7.20). */
	pkt.ctrl = !mr_op_sequenced(h->opcode) || mr_hdr_announces(h);
	ret = mr_emit_pkt(c, &pkt, path);
	if (ret)
		return ret == MR_XMIT_GONE ? MR_XMIT_GONE : MR_XMIT_BUSY;
	if (mr_op_sequenced(h->opcode))
		mr_path_sent(c, (u32)path,
			     mr_op_has_dsn(h->opcode) ? h->dsn : MR_DSN_NONE,
			     (u32)hlen + h->plen, now);
	return 0;
}

/*
 * Control packets (ACKs above all) rotate over the usable paths. When the
 * environment tells routes apart, the next one also avoids the next hop
 * the previous one took if another usable path has a different one: an
 * ACK and its repetition (mr_send_acks()) then never share a failed plane.
 */
int mr_ctrl_path(struct mr_conn *c)
{
	u64 last = c->path[c->ctrl_last % c->npaths].route;
	int first = -1;
	u32 i;

	for (i = 0; i < c->npaths; i++) {
		u32 id = (c->ack_rr + i) % c->npaths;
		const struct mr_path *p = &c->path[id];

		if (!mr_path_usable(p))
			continue;
		if (first < 0)
			first = (int)id;
		if (!last || !p->route || p->route != last) {
			first = (int)id;
			break;
		}
	}
	if (first < 0) {
		c->ack_rr++;
		first = c->ack_rr % c->npaths;
	} else {
		c->ack_rr = (u8)(first + 1);
	}
	c->ctrl_last = (u8)first;
	return first;
}

int mr_conn_send_ctrl(struct mr_conn *c, struct mr_hdr *h, int path, u64 now)
{
	if (path < 0)
		path = mr_ctrl_path(c);
	return mr_conn_emit(c, h, path, NULL, now);
}

/*
 * An ACK (protocol.rst, section 6.2) for the peer's epoch: on the next
 * control path, ahead of queued data. Returns 0 when sent.
 */
int mr_conn_send_ack(struct mr_conn *c, const struct mr_ack *ack, u64 now)
{
	u8 buf[MR_ACK_MAX_LEN];
	struct mr_txpkt pkt;
	struct mr_hdr h;
	int len;

	memset(&h, 0, sizeof(h));
	h.opcode = MR_OP_ACK;
	h.epoch = c->epoch;
	h.tsval = (u32)now;
	len = mr_wire_encode_ack(buf, sizeof(buf), &h, ack);
	if (len < 0)
		return MR_XMIT_GONE;
	memset(&pkt, 0, sizeof(pkt));
	pkt.hdr = buf;
	pkt.hlen = (u32)len;
	pkt.kind = MR_TX_CTRL;
	pkt.ctrl = 1;
	if (mr_emit_pkt(c, &pkt, mr_ctrl_path(c)))
		return MR_XMIT_BUSY;
	mr_stat(c, MR_ST_TX_ACKS, 1);
	return 0;
}
