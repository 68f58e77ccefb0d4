/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * MetaRoCE transport engine API.
 *
 * The engine is a set of state machines with no allocation, locking, clock
 * or I/O of its own: the caller (the kernel glue, the simulator, a unit test)
 * owns the memory of every object, passes the current time (ns) into every
 * call, and receives packets to send, completions and errors through
 * struct mr_env_ops callbacks. All calls on one connection, and on the QPs
 * attached to it, must be serialized by the caller (one lock per connection).
 *
 * Objects:
 *  - struct mr_conn: one per (local device, remote address). Its send half
 *    owns the paths (UDP source ports), the segment table of data in flight,
 *    congestion control and pacing; its receive half tracks the peer's paths
 *    (SACK state), the data window and ACK coalescing.
 *  - struct mr_qp: the verbs-visible ordered message streams of one RC QP
 *    (requester and responder). Many QPs share one connection.
 */
#ifndef METAROCE_MR_ENGINE_H
#define METAROCE_MR_ENGINE_H

#include "mr_wire.h"

#define MR_MAX_RD_ATOMIC	16	/* outstanding READ/atomic per QP */
/*
 * Chunks of 64 segments a connection keeps for the messages whose segments
 * landed 64 or more beyond their first missing one: what a conforming
 * sender can have in flight needs at most 127 (protocol.rst, section 7.13);
 * twice that covers a sender's epoch change too.
 */
#define MR_SEGX_NR		256
/* A segment this far or further beyond the first missing one is refused. */
#define MR_SEG_SPAN		MR_DSN_WND
#define MR_WEIGHT_ONE		1024
#define MR_DSN_NONE		0xffffffffu	/* path slot carries a probe */

struct mr_conn;
struct mr_qp;

/* Intrusive doubly linked list. */
struct mr_list {
	struct mr_list *next, *prev;
};

/* Per-connection tunables; see Documentation/protocol.rst. */
struct mr_conn_cfg {
	u32 npaths;		/* paths (UDP source ports), 1..MR_MAX_PATHS */
	u32 seg_wnd;		/* segment table entries, power of 2 */
	u32 mtu;		/* largest payload per packet (QPs may use less) */
	u32 init_window;	/* bytes in flight before any feedback */
	u32 min_window;		/* bytes; floor of the connection window */
	u32 max_window;		/* bytes; ceiling of the connection window */
	u32 ai_bytes;		/* additive increase per round trip, bytes */
	u32 ecn_shift;		/* ECN fraction EWMA gain is 1/2^ecn_shift */
	u32 rto_min_ns;
	u32 rto_max_ns;
	u32 rto_init_ns;	/* before the first RTT sample */
	u32 ack_delay_ns;	/* longest an ACK may be held back */
	u32 ack_every;		/* ACK at least every this many packets */
	u32 reorder_thresh;	/* later packets SACKed before a hole is lost */
	u32 dead_after;		/* consecutive path timeouts: path is dead */
	u32 probe_ns;		/* dead-path probe interval */
	u32 msg_ack_ns;		/* wait for a message ACK before ACK_REQ */
	u32 epoch_quiet_ns;	/* quiet time before a new peer epoch is taken */
	u32 repick_alpha;	/* ECN fraction (/1024) that moves a path's port */
	u32 pacing;		/* pace at the receiver's hint rate */
	u32 pace_burst;		/* bytes a paced sender may send back to back */
	u32 announce;		/* PROBE ahead of the first data (7.20) */
	u16 sport_min;		/* UDP source port range of the paths */
	u16 sport_max;
};

/* Path states, as reported in telemetry. */
enum mr_path_state {
	MR_PATH_GOOD = 0,
	MR_PATH_CONGESTED,	/* ECN fraction above the repick threshold/2 */
	MR_PATH_DEAD,		/* carries only probes */
};

/* Send half of one path. */
struct mr_path {
	u32 una;		/* oldest psn that may be outstanding */
	u32 nxt;		/* next psn to send */
	u32 sack_hi;		/* highest psn known received, +1 */
	u32 inflight;		/* bytes outstanding */
	u32 cwnd;		/* bytes: this path's share of the window */
	u32 srtt;		/* ns, 0 until the first sample */
	u32 rttvar;
	u32 min_rtt;
	u64 last_progress;	/* last ACK progress (or first send) */
	u64 acked_at;		/* last ACK progress only, 0 before any */
	u64 next_probe;
	u64 probe_at;		/* last probe sent, 0 before any */
	u64 last_cut;		/* last ECN weight reduction */
	u64 route;		/* route_key() of sport; 0 unknown */
	u16 sport;
	u16 weight;		/* 0..MR_WEIGHT_ONE */
	u16 alpha;		/* ECN fraction EWMA, 0..1024 */
	u16 ce_seen;		/* receiver's counters at the last ACK */
	u16 rx_seen;
	u8 state;		/* enum mr_path_state */
	u8 timeouts;		/* consecutive RTOs */
	u8 echo_valid;		/* ce_seen/rx_seen are initialised */
	u8 hot;			/* rounds above the repick threshold */
	/*
	 * Spurious timeout detection: psns [rto_lo, rto_hi) were declared
	 * lost by the current series of timeouts, rto_lo being the oldest;
	 * undo_* is the path's state before the series.
	 */
	u8 undo;		/* a series is armed */
	u8 undo_timeouts;
	u16 undo_weight;
	u8 overtaken;		/* another path got through since the series began */
	u8 series_cut;		/* a timeout of this series cut the window */
	u8 ann;			/* the announcement is outstanding at ann_psn */
	u32 ann_psn;
	u32 dead_psn;		/* nxt when it died: later psns are probes */
	u32 rto_lo;
	u32 rto_hi;
	u64 undo_since;		/* last progress before the series */
	/*
	 * The path's RTO is at least rto_floor (ns): how long an undone
	 * series' packet really took. Halved every MR_RTO_FLOOR_HALVE_NS.
	 */
	u32 rto_floor;
	u64 floor_at;
	u32 dsn[MR_PATH_WND];	/* slot psn % MR_PATH_WND: DSN sent there */
	u16 len[MR_PATH_WND];	/* and its wire length */
	u32 out[MR_PATH_WND / 32];	/* slot outstanding */
	/*
	 * Slot overdue (protocol.rst, 7.5): its segment was queued again
	 * and its bytes left the connection's inflight, but it stays
	 * outstanding, and in the path's inflight, until acknowledged or
	 * timed out. overdue_psn: no slot before it is still to be judged.
	 */
	u32 overdue[MR_PATH_WND / 32];
	u32 overdue_psn;
	/* telemetry */
	u64 tx_pkts;
	u64 tx_bytes;
	u64 retx;
	u64 lost;
	u64 ce;
	u64 timeouts_total;
	u64 repicks;
	u64 probes;
};

/* Receive half of one of the peer's paths. */
struct mr_rpath {
	u32 base;		/* every psn before base received/abandoned */
	u32 bitmap[MR_PATH_WND / 32];	/* bit i: psn base + i received */
	u32 tsval;		/* newest tsval seen */
	u32 hi;			/* highest psn seen + 1 */
	u16 ce_cnt;
	u16 rx_cnt;
	u8 active;
	u8 dirty;		/* changed since the last ACK */
	u8 resend;		/* sent in one ACK: goes in the next one too */
};

enum mr_seg_kind {
	MR_SEG_REQ = 1,		/* a requester message segment */
	MR_SEG_RESP,		/* READ response data */
	MR_SEG_ARESP,		/* atomic response; cookie = original value */
	MR_SEG_NOP,		/* abandoned: carries only its DSN */
};

enum mr_seg_state {
	MR_SEGS_FREE = 0,
	MR_SEGS_QUEUED,		/* waiting for (re)transmission */
	MR_SEGS_INFLIGHT,
};

/* One data segment in flight (indexed by dsn & seg_mask). */
struct mr_seg {
	struct mr_qp *qp;
	u64 cookie;
	u32 dsn;
	u32 msn;
	u32 offset;
	u32 len;		/* payload bytes */
	u32 total;		/* message length (responses) */
	u32 psn;		/* latest transmission */
	u32 key;		/* READ response: the source rkey */
	u32 sent;		/* latest transmission, ns (low 32 bits) */
	u8 path;
	u8 kind;
	u8 state;
	u8 gen;
	u8 ntx;
	u8 opcode;
};

/* Counters of a connection (summed by the caller into device counters). */
enum mr_stat {
	MR_ST_TX_PKTS,
	MR_ST_TX_BYTES,
	MR_ST_RX_PKTS,
	MR_ST_RX_BYTES,
	MR_ST_TX_DATA,		/* data segments, first transmissions */
	MR_ST_RETX_SACK,	/* retransmits after a SACK gap */
	MR_ST_RETX_RTO,		/* retransmits after a path timeout */
	MR_ST_TX_ACKS,
	MR_ST_RX_ACKS,
	MR_ST_TX_NOPS,
	MR_ST_TX_PROBES,
	MR_ST_TX_ACKREQ,
	MR_ST_RX_CE,		/* CE-marked packets received */
	MR_ST_ECN_ECHO,		/* CE marks reported back to us */
	MR_ST_PATH_DEAD,
	MR_ST_PATH_REVIVED,
	MR_ST_PATH_REPICK,
	MR_ST_RNR_NAK_TX,
	MR_ST_RNR_NAK_RX,
	MR_ST_NAK_TX,
	MR_ST_NAK_RX,
	MR_ST_RX_PLACED,	/* data segments placed */
	MR_ST_MSG_DONE_TX,	/* requester messages completed */
	MR_ST_MSG_DONE_RX,	/* responder messages completed */
	MR_ST_TX_RESETS,	/* RESETs sent (a sender's epoch unknown) */
	MR_ST_RX_RESETS,	/* RESETs received: epoch announced again */
	MR_ST_RX_EPOCH_RESTORED, /* a displaced epoch came back: window restored */
	MR_ST_RTO_SPURIOUS,	/* timeout series undone: the packet came late */
	MR_ST_RTX_CANCELLED,	/* queued retransmits dropped: the original came */
	MR_ST_RETX_OVERDUE,	/* retransmits of packets a later one overtook */
	MR_ST_TX_ANNOUNCE,	/* announcements sent (PROBE with SYN first) */
	MR_ST_RX_ANNOUNCE,	/* announcements that made a sender active */
	MR_ST_RX_HELLOS,	/* hellos of epochs not proven yet: challenged */
	MR_ST_MAX
};

/* A packet for the caller to send. */
enum mr_tx_kind {
	MR_TX_CTRL = 0,		/* header only */
	MR_TX_REQ,		/* payload: requester message @cookie+offset */
	MR_TX_RESP,		/* payload: READ source (@key, @cookie)+offset */
};

/* xmit() results other than 0 */
enum {
	MR_XMIT_BUSY = -1,	/* no buffer now: retry later */
	MR_XMIT_GONE = -2,	/* the payload's source is gone for good */
};

struct mr_txpkt {
	const u8 *hdr;
	u32 hlen;
	u32 plen;
	u32 offset;
	u32 key;		/* MR_TX_RESP: rkey of the source */
	u64 cookie;		/* REQ: work request; RESP: source address */
	struct mr_qp *qp;	/* a QP's data segment (payload or not) */
	u16 sport;		/* UDP source port (the path) */
	u8 kind;		/* enum mr_tx_kind */
	u8 path;
	u8 ctrl;		/* the control class (protocol section 5.3) */
};

/* Work request opcodes (requester) and completion opcodes. */
enum mr_wr_opcode {
	MR_WR_SEND = 1,
	MR_WR_SEND_IMM,
	MR_WR_SEND_INV,
	MR_WR_WRITE,
	MR_WR_WRITE_IMM,
	MR_WR_READ,
	MR_WR_CMP_SWAP,
	MR_WR_FETCH_ADD,
	MR_WR_LOCAL,		/* refused by mr_qp_post(): the glue's */
	/* responder completions */
	MR_WC_RECV,
	MR_WC_RECV_WRITE_IMM,
};

enum mr_wr_flags {
	MR_WRF_FENCE = 0x01,
	MR_WRF_SOLICITED = 0x02,
};

struct mr_wr {
	u64 cookie;		/* caller's handle of the work request */
	u64 raddr;
	u64 swap_add;
	u64 compare;
	u32 len;
	u32 rkey;
	u32 imm;		/* immediate data, or rkey to invalidate */
	u8 opcode;		/* enum mr_wr_opcode */
	u8 flags;		/* enum mr_wr_flags */
};

enum mr_wc_status {
	MR_WC_OK = 0,
	MR_WC_LOC_LEN_ERR,
	MR_WC_REM_ACCESS_ERR,
	MR_WC_REM_INV_REQ_ERR,
	MR_WC_REM_OP_ERR,
	MR_WC_RETRY_EXC_ERR,
	MR_WC_RNR_RETRY_EXC_ERR,
	MR_WC_WR_FLUSH_ERR,
	MR_WC_LOC_PROT_ERR,
	MR_WC_LOC_QP_OP_ERR,
};

struct mr_cqe {
	u64 cookie;		/* work request or receive cookie */
	u32 byte_len;
	u32 imm;		/* immediate data or invalidated rkey */
	u8 opcode;		/* enum mr_wr_opcode */
	u8 status;		/* enum mr_wc_status */
	u8 imm_valid;
	u8 inv_valid;
	u8 solicited;
};

/* What the caller must do with a received packet (mr_conn_rx()). */
enum mr_rx_action {
	MR_RXA_NONE = 0,	/* consumed by the engine */
	MR_RXA_DROP,		/* dropped: rx->reason says why */
	MR_RXA_WRITE,		/* check rkey/REMOTE_WRITE, copy payload */
	MR_RXA_SEND,		/* copy payload into receive rx->cookie */
	MR_RXA_READ_RESP,	/* copy payload into READ WQE rx->cookie */
	MR_RXA_ATOMIC_RESP,	/* store h->orig into atomic WQE rx->cookie */
};

/* Result codes for mr_conn_rx_done(). */
enum mr_rx_status {
	MR_RXS_OK = 0,
	MR_RXS_ACCESS,		/* bad key, rights or bounds */
	MR_RXS_LENGTH,		/* receive buffer too small */
	MR_RXS_INVALID,		/* request cannot be served */
	MR_RXS_LOCAL,		/* our buffer failed (response, receive) */
};

struct mr_rx {
	u8 action;		/* enum mr_rx_action */
	u8 reason;		/* enum mr_drop_reason for MR_RXA_DROP */
	struct mr_qp *qp;
	u64 cookie;
	u32 recv_len;		/* SEND: length of the receive buffer */
	/* engine private */
	u32 slot;
	u32 seg;
};

struct mr_env_ops {
	/*
	 * Send one packet; returns 0, MR_XMIT_BUSY if it could not be queued
	 * now, or MR_XMIT_GONE if the payload's memory is no longer valid (the
	 * segment is then abandoned and, for a request, the QP fails with a
	 * local protection error).
	 */
	int (*xmit)(void *env, struct mr_conn *c, const struct mr_txpkt *pkt);
	/* A work request or receive completed (in verbs order per QP). */
	void (*complete)(void *env, struct mr_qp *qp, const struct mr_cqe *cqe);
	/* The QP entered the error state; @status is the cause. */
	void (*qp_error)(void *env, struct mr_qp *qp, int status);
	/* Responder: the receive buffer matched by @ssn, or <0 if none. */
	int (*bind_recv)(void *env, struct mr_qp *qp, u32 ssn, u64 *cookie,
			 u32 *len);
	/*
	 * Responder: execute a READ or atomic request (@req: opcode, raddr,
	 * rkey, msg_len, swap_add, compare) now that every older message of
	 * the QP is complete. READ: check the rkey, REMOTE_READ and bounds
	 * (MR_TX_RESP packets then name req->rkey and req->raddr + offset).
	 * Atomic: check and execute, *result = the original value. Returns
	 * enum mr_rx_status.
	 */
	int (*execute)(void *env, struct mr_qp *qp, const struct mr_hdr *req,
		       u64 *result);
	/* QP @qpn of this connection, for ACK QP blocks; NULL if none. */
	struct mr_qp *(*lookup_qp)(void *env, struct mr_conn *c, u32 qpn);
	/*
	 * Optional (may be NULL): the next hop (plane) a packet with UDP
	 * source port @sport takes, as a non-zero key equal for ports that
	 * share it; 0 if unknown. Lets paths spread over next hops instead of
	 * landing where random ports hash. Called while choosing a path's
	 * port (mr_conn_init() and port re-picks), under the connection's
	 * lock.
	 */
	u64 (*route_key)(void *env, struct mr_conn *c, u16 sport);
	/*
	 * Optional (may be NULL): the sending host's shared window
	 * (protocol.rst, section 7.25). Adds @delta, the change in this
	 * connection's bytes in flight since its last call, to the host's
	 * count, and returns how many more bytes the host may put in flight
	 * before it reaches its target: 0 when it has, or has no target.
	 * Called under the connection's lock, for different connections
	 * concurrently; the count must be updated atomically.
	 */
	u64 (*host_window)(void *env, struct mr_conn *c, s64 delta);
	/*
	 * The challenge for a sender of @epoch on @c (protocol.rst, 7.2): a
	 * MAC of the two endpoints' addresses and MetaRoCE ports and @epoch,
	 * keyed with a secret of the local device that the peer never learns
	 * (random, and replaced from time to time). @prev 0: under the
	 * current secret, never 0. @prev 1: under the secret before it, or 0
	 * if there is none. The same arguments give the same value until the
	 * secret is replaced. Called under the connection's lock, only while
	 * an epoch is unknown: never for a packet of the current epoch.
	 */
	u64 (*cookie)(void *env, struct mr_conn *c, u32 epoch, int prev);
	/*
	 * Optional (may be NULL): an event of @c worth tracing (enum
	 * mr_trace_event), on path @path (-1: the connection's); @a and @b as
	 * the event's comment says. Called under the connection's lock; it
	 * must not call back into the engine.
	 */
	void (*trace)(void *env, struct mr_conn *c, int event, int path, u64 a,
		      u64 b);
};

/* What mr_env_ops.trace reports. */
enum mr_trace_event {
	MR_TRACE_PATH_STATE,	/* a: old enum mr_path_state, b: new */
	MR_TRACE_PATH_REPICK,	/* a: old UDP source port, b: new */
	MR_TRACE_TIMEOUT,	/* a: consecutive timeouts, b: the next RTO, ns */
	MR_TRACE_RETRANSMIT,	/* a: DSN, b: enum mr_retx_cause */
	MR_TRACE_EPOCH,		/* a: the peer's old epoch (0: none), b: new */
};

enum mr_retx_cause {
	MR_RETX_SACK,		/* a hole the path's SACK showed */
	MR_RETX_RTO,		/* the path's retransmission timeout */
	MR_RETX_OVERDUE,	/* overdue next to a faster path (7.7) */
};

/*
 * Which segments of a message have landed (protocol.rst, section 7.13), for
 * the responder's SEND and WRITE trackers and the requester's READs. A
 * sender cuts a message at a fixed segment size, in offset order: segment k
 * is at offset k * size, and every segment but the last is size bytes long.
 * The size is learnt from the first segment that is not the last. Segments
 * before lo have all landed; bit i of bits is segment lo + i (bit 0, lo
 * itself, is never set: lo would have moved on); segments from lo + 64 on
 * are in chunks of the connection's overflow (struct mr_conn, segx_*), a
 * list of 1-based chunk ids from ext to tail in increasing order. While
 * the size is unknown, bits[0] holds the offset of a last segment that
 * landed first (0: none).
 */
struct mr_segmap {
	u32 bits[2];
	u32 lo;
	u16 size;		/* segment size, 0 until known */
	u16 ext;		/* first overflow chunk (1-based), 0 if none */
	u16 tail;		/* last overflow chunk */
	u16 reserved;
};

/* Requester message slot (one work request). */
struct mr_msg {
	u64 cookie;
	u64 raddr;
	union {
		struct {		/* all but READ */
			u64 swap_add;
			u64 compare;
			u32 imm;
		};
		struct mr_segmap seg;	/* READ: its response's segments */
	};
	u32 len;
	u32 rkey;
	u32 ssn;
	u32 sent;		/* bytes segmented */
	u32 segs_out;		/* segments not yet acknowledged */
	u8 opcode;		/* enum mr_wr_opcode */
	u8 flags;
	u8 state;		/* enum mr_msg_state */
	u8 gen;
};

/* Responder message tracker slot. */
struct mr_rmsg {
	u64 raddr;		/* WRITE, READ and atomic requests */
	union {
		struct {		/* atomic requests, executed in order */
			u64 swap_add;
			u64 compare;
		};
		struct {		/* receive-consuming messages */
			u64 cookie;	/* the bound receive buffer */
			u32 recv_len;
			u32 ssn;
		};
	};
	struct mr_segmap seg;	/* SEND and WRITE */
	u32 rkey;
	u32 msn;
	u32 len;
	u32 imm;
	u8 opcode;		/* wire opcode */
	u8 gen;
	u8 state;
	u8 flags;		/* wire flags of the message */
};

/* Queued READ response or atomic response. */
struct mr_resp {
	u64 cookie;		/* READ: source address; atomic: old value */
	u32 key;		/* READ: source rkey */
	u32 msn;
	u32 len;
	u32 sent;
	u8 gen;
	u8 opcode;		/* MR_OP_READ_RESP or MR_OP_ATOMIC_RESP */
};

enum mr_qp_state {
	MR_QP_RESET = 0,
	MR_QP_RTR,		/* responder active */
	MR_QP_RTS,		/* requester and responder active */
	MR_QP_ERR,
};

/*
 * Where a QP with outstanding work stands, and so how long it may go
 * without an answer (protocol.rst, section 7.15).
 */
enum mr_qp_sched {
	MR_QS_IDLE = 0,		/* nothing outstanding */
	MR_QS_WIRE,		/* on the wire, an answer from the peer due */
	MR_QS_WAIT,		/* waiting for a connection to serve it */
	MR_QS_RNR,		/* waiting out an RNR timer */
};

/* Connection-time attributes of an RC QP (from modify_qp). */
struct mr_qp_attr {
	u32 dest_qpn;
	u32 sq_psn;		/* first message number we send */
	u32 rq_psn;		/* first message number we expect */
	u32 seg_size;		/* payload of each data segment (256..cfg.mtu) */
	u64 timeout_ns;		/* local ACK timeout; 0 = infinite */
	u8 min_rnr_timer;	/* IB RNR timer code we send in RNR NAKs */
	u8 retry_cnt;
	u8 rnr_retry;		/* 7 = infinite */
	u8 max_rd_atomic;
	u8 max_dest_rd_atomic;
};

struct mr_qp {
	struct mr_conn *conn;
	struct mr_list active_node;	/* conn->active: has data to send */
	/*
	 * One of the connection's lists of QPs with work outstanding, as
	 * ->sched says: busy (an answer from the peer is due), waitq (it
	 * waits for a connection to serve it) or rnrq (an RNR timer).
	 */
	struct mr_list busy_node;
	struct mr_list dirty_node;	/* conn->dirty: state for an ACK */
	u32 qpn;
	u8 state;		/* enum mr_qp_state */
	u8 sched;		/* enum mr_qp_sched: the list busy_node is on */
	u8 ackreq_n;		/* ACK_REQs sent since the last progress */
	struct mr_qp_attr attr;

	/* requester */
	u32 sq_una;		/* oldest message not completed */
	u32 sq_cur;		/* message being segmented */
	u32 sq_nxt;		/* next message number to post */
	u32 ssn_nxt;		/* next receive-consuming message number */
	u8 gen;
	u8 rd_out;		/* READ/atomic not yet complete */
	u8 rnr_left;
	u8 rnr_wait;
	u8 nak_pend;		/* a NAK waits for older completions */
	u8 nak_pend_status;	/* enum mr_wc_status it delivers */
	u32 nak_pend_msn;
	u32 rnr_msn;		/* first message to resend after RNR */
	u64 rnr_until;
	u64 last_progress;	/* the last answer from the peer */
	u64 stamp;		/* put at the tail of its list */
	u64 next_ackreq;
	u32 wire_segs;		/* request segments not yet acknowledged */
	u32 blk_msn;		/* the peer completed or executed all before */
	struct mr_msg *sq;	/* sq_slots: message m in slot m % sq_slots */
	u32 sq_slots;		/* a power of two, 1 to MR_MSG_WND */

	/* responder */
	u32 rq_msn;		/* oldest message not complete */
	u32 gen_floor;		/* messages >= this need rq_gen */
	u8 rq_gen;
	u8 rnr_nak;		/* refusing messages >= nak_msn (RNR) */
	u8 fatal;		/* fatal NAK pending at nak_msn */
	u8 fatal_drain;		/* reported; failing once responses are out */
	u8 nak_status;		/* enum mr_qp_status */
	u8 rnr_timer;		/* code sent in RNR NAKs */
	u8 resp_head;
	u8 resp_cnt;
	u32 nak_msn;
	u32 rq_ssn;		/* SSN of the next receive to complete */
	u8 rq_hi;		/* no tracker at rq_msn + rq_hi or beyond */
	struct mr_resp resp[MR_MAX_RD_ATOMIC];
	struct mr_rmsg *rq;	/* MR_MSG_WND: message m in m % MR_MSG_WND */
};

/*
 * A QP's message slots, for an environment that keeps them with the QP.
 * The requester needs no more slots than its send queue can hold work
 * requests; the responder always needs MR_MSG_WND (a peer may have that
 * many messages outstanding).
 */
struct mr_qp_slots {
	struct mr_msg sq[MR_MSG_WND];
	struct mr_rmsg rq[MR_MSG_WND];
};

struct mr_conn {
	struct mr_conn_cfg cfg;
	const struct mr_env_ops *ops;
	void *env;
	u64 rng;

	/* send half */
	u32 epoch;
	u8 syn;			/* our epoch not acknowledged yet */
	u8 announce;		/* PROBE before the next data (section 7.20) */
	/*
	 * The receiver's challenge for our epoch, from the last RESET that
	 * named it; echoed with SYN. 0: none yet, and until one comes only
	 * the hello PROBE goes out (section 7.2).
	 */
	u64 cookie;
	u8 slow_start;
	u8 npaths;
	u8 ack_rr;
	u8 ctrl_last;		/* path of the last control packet */
	u32 dsn_nxt;
	u32 dsn_una;
	u32 seg_mask;
	struct mr_seg *segs;
	u32 rtx_cnt;		/* segments waiting for retransmission */
	u32 rto_credit;		/* retransmissions allowed past a full window */
	u32 rtx_scan;		/* no queued segment has a lower DSN */
	u64 rack_ts;		/* latest send time (ns) of a packet acked */
	u32 rack_rtt;		/* that packet's round trip, ns */
	u32 wnd;		/* connection window, bytes */
	u32 inflight;		/* bytes, all paths */
	u32 host_acct;		/* inflight as last told to ops->host_window */
	u32 host_room;		/* the host's room, as it then answered */
	u32 alpha;		/* connection ECN fraction EWMA, /1024 */
	u32 rate_hint;		/* peer's fair share for us, Mbit/s; 0 none */
	u32 round_target;
	u32 round_acked;
	u32 round_pkts;
	u32 round_ce;
	u32 clean_pkts;		/* packets acknowledged since the last CE */
	u32 round_peak;		/* most bytes in flight this round */
	u8 round_cut;		/* a timeout halved the window this round */
	u64 next_tx;		/* pacing: earliest next send */
	u64 next_sweep;
	u64 idle_since;
	struct mr_list active;
	struct mr_list busy;	/* QPs an answer is due to, by stamp */
	struct mr_list waitq;	/* QPs waiting to be served, by stamp */
	struct mr_list rnrq;	/* QPs waiting out RNR, by rnr_until */
	u64 ack_last;		/* last ACK for our epoch */
	struct mr_path path[MR_MAX_PATHS];

	/* receive half */
	u32 rx_epoch;		/* 0 until the peer's first proven SYN */
	u32 chal_epoch;		/* the last epoch challenged (RESET) */
	u64 chal_at;		/* and when */
	u32 dsn_cum;		/* every DSN before this was processed */
	u32 dsn_bits[MR_DSN_WND / 32];	/* ring: bit dsn % MR_DSN_WND */
	u64 rx_last;
	u32 rx_epoch_pkts;	/* packets processed since rx_epoch's adoption */
	/* the last epoch displaced by another, to restore if it returns */
	u32 old_epoch;		/* 0: none */
	u32 old_pkts;
	u32 old_cum;
	u32 old_bits[MR_DSN_WND / 32];
	u32 ack_pending;	/* packets not yet acknowledged */
	u8 ack_now;
	u8 ack_again;		/* path state to repeat at ack_deadline */
	u64 ack_deadline;
	u32 hint_out;		/* fair share granted to the peer, Mbit/s */
	u32 hint_sent;		/* hint_out in the last ACK sent; 0 none */
	u8 rx_fresh;		/* announced in the current meter period */
	u8 rx_first;		/* one reading since it became active */
	u8 fs_new;		/* announced: for the caller to clear */
	u64 rx_meter_bytes;	/* bytes since mr_conn_rx_rate() */
	u64 rx_meter_ce;
	u64 rx_meter_pkts;
	u64 rx_meter_start;
	u32 rx_demand;		/* smoothed arrival rate, Mbit/s; 0: inactive */
	u32 rx_quiet;		/* meter readings since the last arrival */
	u32 rx_gap;		/* ns per packet, at the last reading with some */
	u64 rx_arrival_at;	/* that reading */
	struct mr_list dirty;
	struct mr_rpath rpath[MR_MAX_PATHS];
	/*
	 * The segment maps' overflow (struct mr_segmap): chunk id i (1-based)
	 * holds segments 64 * segx_blk[i - 1] .. + 63 of one message, and
	 * segx_next[i - 1] is the message's next chunk or, free, the next
	 * free one. Ids above segx_top have never been used.
	 */
	u64 segx_bits[MR_SEGX_NR];
	u32 segx_blk[MR_SEGX_NR];
	u16 segx_next[MR_SEGX_NR];
	u16 segx_free;		/* first free chunk id, 0 if none */
	u16 segx_top;		/* chunk ids above this never used */
	u16 segx_used;		/* chunks in use */

	struct mr_ack ack_scratch;	/* ACK being built */

	u64 stats[MR_ST_MAX];
	u64 drops[MR_DROP_NR_REASONS];
};

/* Connection */
void mr_conn_cfg_default(struct mr_conn_cfg *cfg);
int mr_conn_cfg_check(const struct mr_conn_cfg *cfg);
/*
 * @segs: cfg->seg_wnd entries owned by the caller. @epoch: random, non-zero,
 * fresh for every connection object. @seed: randomness for path ports.
 */
int mr_conn_init(struct mr_conn *c, const struct mr_conn_cfg *cfg,
		 struct mr_seg *segs, const struct mr_env_ops *ops, void *env,
		 u32 epoch, u64 seed, u64 now);
/* Apply new tunables to a live connection (npaths/seg_wnd excluded). */
int mr_conn_reconfigure(struct mr_conn *c, const struct mr_conn_cfg *cfg);
/* Send what windows and pacing allow; at most @budget packets. */
int mr_conn_tx(struct mr_conn *c, u64 now, int budget);
/* Has data waiting that only a window opening or a timer will release. */
int mr_conn_tx_pending(const struct mr_conn *c);
/*
 * Process a decoded packet from this connection's peer. @qp is the
 * destination QP looked up by the caller (NULL if none); @ack the ACK blocks
 * for an ACK; @ce whether the IP header carried Congestion Experienced.
 * Returns the action in @rx; every action other than NONE and DROP must be
 * followed by mr_conn_rx_done().
 */
void mr_conn_rx(struct mr_conn *c, struct mr_qp *qp, const struct mr_hdr *h,
		const struct mr_ack *ack, int ce, u64 now, struct mr_rx *rx);
/* Finish a packet: @status enum mr_rx_status, @result per action. */
void mr_conn_rx_done(struct mr_conn *c, const struct mr_hdr *h,
		     struct mr_rx *rx, int status, u64 result, u64 now);
/* After a batch of received packets: send the ACKs that are due. */
void mr_conn_rx_flush(struct mr_conn *c, u64 now);
/* Earliest time mr_conn_timer() has work, or MR_U64_MAX. */
u64 mr_conn_next_timer(const struct mr_conn *c);
void mr_conn_timer(struct mr_conn *c, u64 now);
/* Nothing in flight, nothing queued, no QP attached. */
int mr_conn_idle(const struct mr_conn *c);
/* Whether the remote end ever answered: an ACK, a challenge or its epoch. */
int mr_conn_answered(const struct mr_conn *c);
/*
 * Take this connection's bytes in flight off the host's count
 * (ops->host_window), before the environment frees it.
 */
void mr_conn_host_detach(struct mr_conn *c);
/*
 * Receive-side arrival rate since the previous reading with arrivals
 * (Mbit/s; 0 if nothing arrived since), and CE fraction in @ce_permille.
 * Each call also updates c->rx_demand, the demand the fair-share allocator
 * sees: the rates of the readings with arrivals (at least 1: a sender that
 * sent anything is active), smoothed (gain 1/MR_FS_GAIN); it stands through readings without arrivals and drops to
 * 0 once nothing has arrived for MR_FS_HOLD readings and MR_FS_HOLD_GAPS
 * times the sender's spacing (c->rx_gap: the time between its two last
 * readings with arrivals, per packet, at most MR_FS_GAP_MAX_NS), so that a
 * sender with a packet every several readings (one of many) keeps its
 * demand, at its rate (protocol.rst, 7.20).
 */
#define MR_FS_GAIN		4
#define MR_FS_HOLD		8
#define MR_FS_HOLD_GAPS		4
#define MR_FS_GAP_MAX_NS	100000000
u32 mr_conn_rx_rate(struct mr_conn *c, u64 now, u32 *ce_permille);
/*
 * The demand of a connection whose sender announced itself (protocol
 * section 7.20) until its first measured period: it wants more than any
 * share.
 */
#define MR_FS_DEMAND_NEW 0xffffffffu
/*
 * Grant the peer @mbps. A share below 4/5 of the one the last ACK carried
 * (or the first share, if an ACK went out before it) sets ack_now: the
 * caller sends it with mr_conn_rx_flush().
 */
void mr_conn_set_hint(struct mr_conn *c, u32 mbps);

/* QP */
/*
 * @sq holds @sq_slots message slots (rounded down to a power of two, at
 * most MR_MSG_WND are used: the requester's limit of messages in flight),
 * @rq MR_MSG_WND. The caller owns both; they are cleared here.
 */
void mr_qp_init(struct mr_qp *qp, u32 qpn, struct mr_msg *sq, u32 sq_slots,
		struct mr_rmsg *rq);

static inline void mr_qp_init_slots(struct mr_qp *qp, u32 qpn,
				    struct mr_qp_slots *s)
{
	mr_qp_init(qp, qpn, s->sq, MR_MSG_WND, s->rq);
}
/* RTR (responder) and RTS (requester) transitions. */
int mr_qp_connect(struct mr_qp *qp, struct mr_conn *c,
		  const struct mr_qp_attr *attr, u64 now);
/* Requester attributes (sq_psn, timeout, retries, max_rd_atomic). */
int mr_qp_rts(struct mr_qp *qp, const struct mr_qp_attr *attr, u64 now);
/* Queue a work request; -1 if the message window is full. */
int mr_qp_post(struct mr_qp *qp, const struct mr_wr *wr, u64 now);
int mr_qp_can_post(const struct mr_qp *qp);
/* Move to the error state: in-flight requests complete with FLUSH_ERR. */
void mr_qp_set_error(struct mr_qp *qp, u64 now);
/* Detach from the connection (before destroy/reset); idempotent. */
void mr_qp_detach(struct mr_qp *qp);

/*
 * Receiver fair share (max-min water filling): the level over @n demands,
 * into every share[i]. O(n log n); connections with demand 0 do not count,
 * so a caller may leave them out (protocol.rst, 7.20).
 */
void mr_fairshare(u32 capacity, const u32 *demand, u32 n, u32 *share);

struct mr_fs_dev {
	u32 capacity;		/* configured receive capacity, Mbit/s */
	u32 estimate;		/* current capacity estimate, Mbit/s */
	u32 level;		/* the share of the last run, Mbit/s */
	u32 ce_thresh;		/* CE permille that means congestion */
};

void mr_fs_init(struct mr_fs_dev *d, u32 capacity_mbps);
/*
 * Update the capacity estimate from the connections' arrival rates @rate
 * (Mbit/s) and CE permille @ce in the last period and their demands
 * @demand (c->rx_demand), and compute their hints into @share. For
 * callers that read the meters themselves.
 */
void mr_fs_update(struct mr_fs_dev *d, const u32 *rate, const u32 *ce,
		  const u32 *demand, u32 n, u32 *share);
/*
 * Recompute the hints of @n connections of one device. @demand and @share
 * are caller-provided scratch arrays of @n entries.
 */
void mr_fs_run(struct mr_fs_dev *d, struct mr_conn **conns, u32 n,
	       u32 *demand, u32 *share, u64 now);
/*
 * Share the current estimate among @demand (MR_FS_DEMAND_NEW included)
 * without reading the meters: what a receiver runs between its periods
 * when a sender announced itself (c->fs_new).
 */
void mr_fs_share(struct mr_fs_dev *d, const u32 *demand, u32 n, u32 *share);
/* mr_fs_share() over @n connections' demands, and set their hints. */
void mr_fs_reshare(struct mr_fs_dev *d, struct mr_conn **conns, u32 n,
		   u32 *demand, u32 *share);
/*
 * The active set. A caller need only run the fair share over its active
 * connections: those with a demand. A connection joins when something
 * arrives while it is not in the set (mr_conn_rx() counted it: its
 * rx_meter_pkts is non-zero, or the arrival was an announcement and set
 * fs_new): mr_fs_join() restarts its meter at @since, the device's last
 * full run (as if it had been read there, as the others were), and gives
 * it the level of the last run. It leaves when a full run
 * (mr_conn_rx_rate()) leaves its rx_demand at 0: that takes MR_FS_HOLD
 * runs without an arrival. So a run costs O(a log a) for a active
 * senders, whatever the number of connections.
 */
void mr_fs_join(const struct mr_fs_dev *d, struct mr_conn *c, u64 since);

#endif /* METAROCE_MR_ENGINE_H */
