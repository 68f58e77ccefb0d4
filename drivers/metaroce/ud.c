// SPDX-License-Identifier: GPL-2.0-only
/*
 * UD and GSI QPs: datagrams sent from the NAPI context, one packet per work
 * request, and received into the next posted receive with the GRH the
 * verbs promise in front of the payload. No transport engine: no ACKs, no
 * retransmission.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/etherdevice.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <net/ipv6.h>
#include <rdma/ib_pack.h>

#include "metaroce.h"
#include "qp.h"

#define MR_GRH_LEN		40
/* Send budget of one NAPI service of a QP (UD) */
#define MR_UD_BUDGET		64

/*
 * Send the UD work request in @wqe; returns its completion status. The
 * slot stays the service's until it advances sq.eng, unless a flush or a
 * reset takes the ring meanwhile: then the slot may be posted again, so
 * every field is read once and nothing is written to it here.
 */
static u8 mr_qp_ud_send(struct mr_ibqp *qp, const struct mr_swqe *wqe)
{
	struct mr_dev *dev = qp->dev;
	u32 len = READ_ONCE(wqe->length);
	struct mr_addr addr = wqe->addr;
	u8 tclass = READ_ONCE(wqe->tclass);
	struct mr_hdr h = {};
	struct sk_buff *skb;
	u8 buf[MR_HLEN_MAX];
	int hlen;
	u16 sport;

	if (READ_ONCE(wqe->refused))
		return IB_WC_LOC_QP_OP_ERR;
	h.opcode = MR_OP_UD_SEND;
	h.epoch = dev->ud_epoch;
	h.tsval = (u32)ktime_get_ns();
	h.dst_qpn = READ_ONCE(wqe->remote_qpn);
	h.src_qpn = qp->ibqp.qp_num;
	h.qkey = READ_ONCE(wqe->remote_qkey);
	h.plen = len;
	if (READ_ONCE(wqe->opcode) == IB_WR_SEND_WITH_IMM) {
		h.flags |= MR_F_IMM;
		h.imm = READ_ONCE(wqe->ex);
	}
	if (READ_ONCE(wqe->send_flags) & IB_SEND_SOLICITED)
		h.flags |= MR_F_SOLICIT;
	hlen = mr_wire_encode(buf, sizeof(buf), &h);
	if (hlen < 0)
		return IB_WC_LOC_QP_OP_ERR;
	skb = mr_xmit_alloc(hlen + len, GFP_ATOMIC);
	if (!skb)
		return IB_WC_LOC_QP_OP_ERR;
	skb_put_data(skb, buf, hlen);
	if (READ_ONCE(wqe->inlined)) {
		/* Posting checked the length against the inline room. */
		skb_put_data(skb, wqe->data, min(len, qp->max_inline));
	} else if (mr_sges_read(dev, qp->ibqp.pd, wqe->sge,
				min_t(u32, READ_ONCE(wqe->num_sge),
				      qp->max_send_sge),
				0, skb_put(skb, len), len)) {
		kfree_skb(skb);
		return IB_WC_LOC_PROT_ERR;
	}
	/* A fixed source port per QP pair: UD keeps its order on one route. */
	sport = dev->conn_cfg.sport_min +
		(u16)(jhash_2words(h.src_qpn, h.dst_qpn, 0) %
		      (dev->conn_cfg.sport_max - dev->conn_cfg.sport_min + 1));
	if (ipv6_addr_is_multicast(&addr.remote) ||
	    (addr.ipv4 && ipv4_is_multicast(addr.remote.s6_addr32[3])))
		mr_mcast_loop(dev, skb, &addr, sport, tclass);
	mr_xmit(dev, skb, &addr, sport, tclass, NULL, NULL);
	return IB_WC_SUCCESS;
}

void mr_qp_service_ud(struct mr_ibqp *qp)
{
	int n;

	for (n = 0; n < MR_UD_BUDGET; n++) {
		struct mr_swqe *wqe;
		unsigned long flags;
		u32 gen, idx;
		u8 status;

		spin_lock_irqsave(&qp->sq_lock, flags);
		if (qp->sq.eng == qp->sq.tail || qp->sq_draining) {
			spin_unlock_irqrestore(&qp->sq_lock, flags);
			break;
		}
		idx = qp->sq.eng;
		gen = qp->sq_gen;
		wqe = mr_sring_slot(&qp->sq, idx);
		spin_unlock_irqrestore(&qp->sq_lock, flags);

		status = mr_qp_ud_send(qp, wqe);
		spin_lock_irqsave(&qp->sq_lock, flags);
		/* Unless a reset or a flush took the ring meanwhile. */
		if (qp->sq_gen == gen && qp->sq.eng == idx) {
			wqe->status = status;
			wqe->done = true;
			qp->sq.eng = idx + 1;
		}
		spin_unlock_irqrestore(&qp->sq_lock, flags);
	}
	mr_qp_sq_retire(qp);
	if (n == MR_UD_BUDGET)
		mr_napi_kick_qp(qp);
}

/* A UD receive completion's sl: how the packet came (see below). */
#define MR_WC_SL_IPV6		0x1
#define MR_WC_SL_IPV4		0x2
#define MR_WC_SL_UDP		0x8

/* UD and GSI receive. Called from NAPI with a reference on @qp. */
void mr_qp_ud_recv(struct mr_ibqp *qp, const struct mr_hdr *h,
		   struct sk_buff *skb, int hlen)
{
	struct mr_dev *dev = qp->dev;
	u8 grh[MR_GRH_LEN] = {};
	struct {
		struct mr_rwqe w;
		struct ib_sge sge[METAROCE_MAX_SGE];
	} rw;
	struct mr_rwqe *w = &rw.w;
	struct ib_wc wc = {};
	unsigned long flags;
	bool ipv4 = skb->protocol == htons(ETH_P_IP);
	/* An SRQ's WQE is copied into rw whole (mr_srq_take()). */
	static_assert(ARRAY_SIZE(rw.sge) >= METAROCE_MAX_SRQ_SGE);

	if (READ_ONCE(qp->state) < IB_QPS_RTR ||
	    READ_ONCE(qp->state) > IB_QPS_SQD || h->qkey != qp->attr.qkey) {
		mr_counter_add(dev->counters, MR_CNT_RX_DROP_NO_QP, 1);
		return;
	}
	if (qp->ibqp.srq) {
		if (mr_srq_take(to_mr_srq(qp->ibqp.srq), w)) {
			mr_counter_add(dev->counters, MR_CNT_RX_DROP_NO_RECV, 1);
			return;
		}
	} else {
		struct mr_rwqe *slot;

		spin_lock_irqsave(&qp->rq_lock, flags);
		if (!mr_rring_count(&qp->rq) && !mr_qp_rq_pull(qp)) {
			spin_unlock_irqrestore(&qp->rq_lock, flags);
			mr_counter_add(dev->counters, MR_CNT_RX_DROP_NO_RECV, 1);
			return;
		}
		slot = mr_rring_slot(&qp->rq, qp->rq.head);
		memcpy(&rw, slot, sizeof(*slot) +
		       slot->num_sge * sizeof(struct ib_sge));
		mr_qp_rq_retire(qp);
		spin_unlock_irqrestore(&qp->rq_lock, flags);
	}

	/* RoCE convention: the first 40 bytes carry the IP header (GRH). */
	if (ipv4)
		memcpy(grh + 20, ip_hdr(skb), sizeof(struct iphdr));
	else
		memcpy(grh, ipv6_hdr(skb), sizeof(struct ipv6hdr));

	wc.wr_id = w->wr_id;
	wc.opcode = IB_WC_RECV;
	wc.qp = &qp->ibqp;
	wc.src_qp = h->src_qpn;
	wc.port_num = 1;
	wc.byte_len = MR_GRH_LEN + h->plen;
	wc.wc_flags = IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE;
	wc.network_hdr_type = ipv4 ? RDMA_NETWORK_IPV4 : RDMA_NETWORK_IPV6;
	/*
	 * RoCE has no service level; the uverbs completion has no network
	 * header type. Report the header type in sl as RoCE NICs do (bit 3:
	 * UDP-encapsulated, bits 2:0: 1 IPv6, 2 IPv4): UCX up to 1.16 reads
	 * it there to find the destination address in the 40 bytes above.
	 */
	wc.sl = MR_WC_SL_UDP | (ipv4 ? MR_WC_SL_IPV4 : MR_WC_SL_IPV6);
	if (h->flags & MR_F_IMM) {
		wc.ex.imm_data = cpu_to_be32(h->imm);
		wc.wc_flags |= IB_WC_WITH_IMM;
	}
	if (skb_mac_header_was_set(skb) &&
	    skb_mac_header_len(skb) >= ETH_HLEN) {
		ether_addr_copy(wc.smac, eth_hdr(skb)->h_source);
		wc.wc_flags |= IB_WC_WITH_SMAC;
	}
	if (wc.byte_len > w->length)
		wc.status = IB_WC_LOC_LEN_ERR;
	else if (mr_sges_write(dev, qp->ibqp.pd, w->sge, w->num_sge, 0, grh,
			       NULL, 0, MR_GRH_LEN) ||
		 mr_sges_write(dev, qp->ibqp.pd, w->sge, w->num_sge,
			       MR_GRH_LEN, NULL, skb, hlen, h->plen))
		wc.status = IB_WC_LOC_PROT_ERR;
	mr_qp_cq_push(qp, to_mr_cq(qp->ibqp.recv_cq), &wc,
		      !!(h->flags & MR_F_SOLICIT));
}
