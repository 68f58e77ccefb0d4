/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One engine connection with a recording environment, for white-box tests:
 * the test plays the peer, crafting the packets the connection receives
 * (through the real encoder and decoder) and inspecting every packet it
 * sends, every completion and every callback.
 */
#ifndef MR_TEST_ENDPOINT_H
#define MR_TEST_ENDPOINT_H

#include <metaroce/mr_engine.h>

#define EP_QPS		20
#define EP_SEGS		4096
#define EP_MAX_CQE	8192
#define EP_PEER_QPN(i)	(0x200 + (i))
#define EP_QPN(i)	(0x100 + (i))
#define EP_RKEY		0x5151
/*
 * In a SYN packet ep_rx() delivers: replaced by the cookie the connection
 * minted for the packet's epoch (the peer answered our challenge).
 */
#define EP_COOKIE	1ull
/* The cookie ep_new() gives the connection, as if the peer had sent it. */
#define EP_PEER_COOKIE	0xc0c0a5a5deadbeefull

/* A packet the connection sent, decoded. */
struct ep_tx {
	struct mr_hdr h;
	struct mr_ack ack;	/* valid for ACKs */
	u64 at;
	u64 cookie;
	u32 key;
	u32 offset;
	u16 sport;
	u8 path;		/* mr_txpkt.path */
	u8 kind;
	u8 ctrl;		/* mr_txpkt.ctrl: the control class */
};

struct ep_cqe {
	struct mr_qp *qp;
	struct mr_cqe cqe;
};

/* A sending host's shared window (ops->host_window), shared by endpoints. */
struct ep_host {
	s64 inflight;
	u64 target;
	u32 calls;
};

struct ep {
	struct mr_conn c;
	struct mr_seg segs[EP_SEGS];
	struct mr_qp qp[EP_QPS];
	struct mr_qp_slots slots[EP_QPS];
	u64 now;
	u32 peer_epoch;		/* epoch of the packets ep_rx() builds */

	struct ep_tx *tx;	/* everything sent, in order */
	u32 ntx, txcap;
	int xmit_ret;		/* what xmit() returns (0: accept) */
	int xmit_gone;		/* payload packets fail with MR_XMIT_GONE */
	u32 xmit_calls;

	struct ep_cqe cqe[EP_MAX_CQE];
	u32 ncqe;
	u32 nerr;		/* qp_error() calls */
	int err_status[EP_QPS];	/* last qp_error() status per QP, or -1 */

	/* responder behaviour */
	u32 recv_posted[EP_QPS];	/* receives with ssn < this exist */
	u32 recv_len;		/* their length */
	u32 nbind;
	int exec_status;	/* execute() result */
	u64 exec_result;
	u32 nexec;
	struct mr_hdr exec_req[64];	/* the first 64 execute() requests */

	int rx_status;		/* status ep_rx() passes to rx_done */
	u64 rx_result;
	struct mr_rx last_rx;
	u32 rx_done_calls;
	struct ep_host *host;	/* NULL: no shared window */
	u64 cookie_key[2];	/* our cookie secrets: current, previous */
	u32 cookie_calls;	/* ops->cookie() calls */
};

struct ep *ep_new(const struct mr_conn_cfg *cfg, u32 epoch, u32 peer_epoch,
		  u64 seed);
void ep_free(struct ep *e);
/* Default QP attributes: the QP's peer is EP_PEER_QPN(i). */
void ep_qp_attr_default(struct mr_qp_attr *a, u32 i);
/* Connect QP @i (RTR and RTS) with @a (NULL: defaults). */
struct mr_qp *ep_qp(struct ep *e, u32 i, const struct mr_qp_attr *a);

/* Post a work request on QP @i. Returns mr_qp_post()'s result. */
int ep_post(struct ep *e, u32 i, u8 op, u32 len, u64 cookie);
/* mr_conn_tx() with a large budget; returns packets sent. */
int ep_tx(struct ep *e);
void ep_tx_clear(struct ep *e);
/* Number of packets sent with @opcode since index @from. */
u32 ep_count(const struct ep *e, u32 from, u8 opcode);
/* Index of the last packet with @opcode, or -1. */
int ep_last(const struct ep *e, u8 opcode);

/*
 * Deliver a packet from the peer: encode @h (with h->plen payload bytes)
 * or the ACK @ack, decode it, and hand it to mr_conn_rx() (and
 * mr_conn_rx_done() with e->rx_status when the engine asks for it).
 * Returns the rx action, or -reason if the packet does not decode.
 */
int ep_rx(struct ep *e, const struct mr_hdr *h, int ce);
int ep_rx_ack(struct ep *e, const struct mr_ack *ack);

/* The cookie the connection mints for @epoch (ops->cookie). */
u64 ep_cookie(struct ep *e, u32 epoch, int prev);

/* Peer packet builders (SYN, with the cookie EP_COOKIE). */
void ep_hdr_nop(struct ep *e, struct mr_hdr *h, u32 path, u32 psn, u32 dsn);
void ep_hdr_req(struct ep *e, struct mr_hdr *h, u8 opcode, u32 qp, u32 msn,
		u32 path, u32 psn, u32 dsn, u32 msg_len, u32 offset, u32 plen);
/*
 * An empty ACK for our epoch: dsn_cum releases nothing, the rate hint is
 * the one in force.
 */
void ep_ack_init(struct ep *e, struct mr_ack *a);
/* Add a path block: base, and the psns at or above base received. */
struct mr_ack_path *ep_ack_path(struct mr_ack *a, u32 path, u32 base);
void ep_ack_set(struct mr_ack_path *ap, u32 psn);
/* A block acknowledging exactly the psns of packets ep sent on @path. */
void ep_ack_sent(struct ep *e, struct mr_ack *a, u32 path, u32 from_tx,
		 u32 echo_tsval);
void ep_ack_qp(struct mr_ack *a, u8 status, u32 qpn, u8 gen, u32 msn,
	       u32 aux);

/* Completions on QP @i (or any QP if @qp is NULL) since index @from. */
u32 ep_ncqe(const struct ep *e, const struct mr_qp *qp, u32 from);

/* Segments of a message that landed, as its segment map says. */
u32 ep_landed(const struct ep *e, const struct mr_segmap *m);

/* Every path's srtt well above its min_rtt: a timeout then cuts the window. */
void ep_standing_queue(struct mr_conn *c);

#endif
