/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * MetaRoCE wire format, version 2.
 *
 * This header and drivers/metaroce/core/wire.c are the only places that know
 * the byte layout of a MetaRoCE packet; Documentation/protocol.rst is the
 * normative description. A MetaRoCE packet is the payload of a UDP datagram
 * sent to the receiver's MetaRoCE port. All fields are big-endian, every
 * header is a multiple of 4 bytes, and every reserved bit is zero on send and
 * checked on receive.
 *
 * Base header (20 bytes, every packet):
 *
 *   0  version:8   MR_WIRE_VERSION
 *   1  opcode:8    enum mr_opcode
 *   2  flags:16    MR_F_*; a flag not allowed for the opcode is an error
 *   4  epoch:32    sender's epoch for this direction of the connection; != 0
 *   8  psn:32      per-path sequence number (sequenced opcodes), else 0
 *  12  path:8      path id < MR_MAX_PATHS (sequenced opcodes), else 0
 *  13  hlen:8      header length in 4-byte words, base included
 *  14  plen:16     payload length in bytes
 *  16  tsval:32    sender clock (ns, truncated to 32 bits) for RTT
 *
 * RC header (24 bytes; every RC request/response opcode and NOP):
 *
 *   0  dst_qpn:32  receiver's QPN (24 bits used)
 *   4  src_qpn:32  sender's QPN (24 bits used)
 *   8  dsn:32      connection data sequence number of this segment
 *  12  gen:8 msn:24  QP generation (bumped on RNR rewind), message number
 *  16  msg_len:32  total length of the message (READ: bytes to read)
 *  20  offset:32   offset of this segment's payload in the message
 *
 * followed by, per opcode: WRITE and READ_REQ: RETH (raddr:64 rkey:32
 * ssn:32, the receive-match number of a WRITE with immediate, else zero);
 * SEND: ssn:32 (receive-queue match number); CMP_SWAP and
 * FETCH_ADD: RETH + swap_add:64 + compare:64; ATOMIC_RESP: orig:64; then the
 * optional IMM (imm:32) or INV (rkey:32) word, and, when SYN is set, the
 * syn_dsn:32 word (the sender's lowest unacknowledged DSN, from which a
 * receiver that does not know the epoch yet starts its data window) and the
 * syn_cookie:64 word (the receiver's challenge for this epoch, as the last
 * RESET naming the epoch carried it; 0 before one arrived). A receiver
 * adopts a new epoch only from a SYN packet whose cookie it minted for that
 * epoch and the two endpoints: proof that the epoch's sender receives what
 * is sent to the peer's address and MetaRoCE port.
 *
 * RESET (unsequenced): unknown_epoch:32 cookie:64, the challenge a receiver
 * sends to the peer's MetaRoCE port when sequenced packets carry an epoch
 * it does not know and cannot adopt yet (no valid cookie); the sender of
 * that epoch then sets SYN (with syn_dsn and the cookie) until
 * acknowledged. Versions 1 and 2 differ only in these words.
 */
#ifndef METAROCE_MR_WIRE_H
#define METAROCE_MR_WIRE_H

#include "mr_types.h"

#define MR_WIRE_VERSION		2

#define MR_MAX_PATHS		16	/* paths per connection */
#define MR_PATH_WND		256	/* per-path SACK bitmap, in packets */
#define MR_DSN_WND		4096	/* receiver's data window, in segments */
#define MR_MSG_WND		64	/* in-flight messages per QP */
#define MR_ACK_MAX_QP		16	/* QP blocks per ACK */
#define MR_MAX_PAYLOAD		4096	/* bytes of payload per packet */
#define MR_MAX_MSG_LEN		0x80000000u	/* 2 GiB, as InfiniBand */
#define MR_QPN_MASK		0xffffffu

#define MR_BASE_HLEN		20
#define MR_RC_HLEN		24
#define MR_RETH_LEN		16
#define MR_ATOMIC_ETH_LEN	16
#define MR_ACKH_LEN		16
#define MR_ACK_PATH_LEN		48
#define MR_ACK_QP_LEN		12
#define MR_UD_HLEN		16
#define MR_ACKREQ_HLEN		8
#define MR_SYN_LEN		12	/* syn_dsn + syn_cookie */
#define MR_RESET_LEN		12	/* unknown_epoch + cookie */
/* Largest header of a packet that carries payload (WRITE, IMM, SYN). */
#define MR_DATA_HLEN_MAX	(MR_BASE_HLEN + MR_RC_HLEN + MR_RETH_LEN + 4 + \
				 MR_SYN_LEN)
/* Largest ACK (every path block and every QP block). */
#define MR_ACK_MAX_LEN		(MR_BASE_HLEN + MR_ACKH_LEN + \
				 MR_MAX_PATHS * MR_ACK_PATH_LEN + \
				 MR_ACK_MAX_QP * MR_ACK_QP_LEN)
/* Largest header of any packet (atomic request with SYN). */
#define MR_HLEN_MAX		(MR_BASE_HLEN + MR_RC_HLEN + MR_RETH_LEN + \
				 MR_ATOMIC_ETH_LEN + MR_SYN_LEN)

enum mr_opcode {
	MR_OP_WRITE		= 0x01,
	MR_OP_SEND		= 0x02,
	MR_OP_READ_REQ		= 0x03,
	MR_OP_READ_RESP		= 0x04,
	MR_OP_CMP_SWAP		= 0x05,
	MR_OP_FETCH_ADD		= 0x06,
	MR_OP_ATOMIC_RESP	= 0x07,
	MR_OP_NOP		= 0x08,	/* consumes a DSN, no effect */
	MR_OP_PROBE		= 0x09,	/* path probe: sequenced, no DSN */
	MR_OP_ACK		= 0x10,
	MR_OP_ACK_REQ		= 0x11,	/* ask for a QP's state in an ACK */
	MR_OP_RESET		= 0x12,	/* "your epoch is unknown here" */
	MR_OP_UD_SEND		= 0x20,
};

enum mr_flags {
	MR_F_SYN	= 0x0001,	/* epoch not yet acknowledged; +syn words */
	MR_F_ACKREQ	= 0x0002,	/* acknowledge without delay */
	MR_F_RETX	= 0x0004,	/* retransmission (informational) */
	MR_F_IMM	= 0x0008,	/* immediate data word present */
	MR_F_INV	= 0x0010,	/* invalidate-rkey word present */
	MR_F_SOLICIT	= 0x0020,	/* solicited event */
};

/* Status of a QP block in an ACK. */
enum mr_qp_status {
	MR_QPS_OK		= 0,	/* msn = first message not complete */
	MR_QPS_RNR		= 1,	/* msn = message refused; aux = timer */
	MR_QPS_REM_ACCESS	= 2,	/* msn = failed message */
	MR_QPS_INV_REQ		= 3,
	MR_QPS_REM_OP		= 4,
	MR_QPS_MAX		= MR_QPS_REM_OP,
};

/*
 * Why a packet was dropped. Values below MR_DROP_STATELESS_MAX come from
 * mr_wire_decode() (the packet is malformed whatever the receiver's state);
 * the others from the engine's state checks.
 */
enum mr_drop_reason {
	MR_DROP_NONE = 0,
	MR_DROP_TRUNCATED,	/* shorter than its headers say */
	MR_DROP_BAD_VERSION,
	MR_DROP_BAD_OPCODE,
	MR_DROP_BAD_FLAGS,	/* unknown flag, or flag not valid for opcode */
	MR_DROP_BAD_HLEN,	/* hlen disagrees with opcode and flags */
	MR_DROP_BAD_PLEN,	/* plen disagrees with datagram or opcode */
	MR_DROP_BAD_FIELD,	/* reserved bits set, zero epoch, bad path... */
	MR_DROP_BAD_QPN,
	MR_DROP_BAD_LENGTH,	/* msg_len/offset/plen inconsistent */
	MR_DROP_BAD_ACK,	/* ACK block counts or contents invalid */
	MR_DROP_STATELESS_MAX,
	MR_DROP_NO_CONN = MR_DROP_STATELESS_MAX, /* no connection to sender */
	MR_DROP_EPOCH,		/* epoch not the connection's */
	MR_DROP_PSN_WINDOW,	/* path sequence far outside the window */
	MR_DROP_DSN_WINDOW,	/* data sequence outside the window */
	MR_DROP_DUP,		/* segment already processed */
	MR_DROP_NO_QP,		/* unknown destination QP */
	MR_DROP_QP_STATE,	/* QP cannot accept this packet now */
	MR_DROP_WRONG_PEER,	/* source QP/connection not the QP's peer */
	MR_DROP_MSN_WINDOW,	/* message number outside the QP's window */
	MR_DROP_STALE_GEN,	/* from before an RNR rewind */
	MR_DROP_INCONSISTENT,	/* contradicts earlier segments of message */
	MR_DROP_RNR,		/* no receive posted */
	MR_DROP_ACCESS,		/* key, rights or bounds check failed */
	MR_DROP_INV_REQ,	/* request the QP cannot serve */
	MR_DROP_SSN,		/* SSN not the receive its MSN allows */
	MR_DROP_NR_REASONS
};

/* A decoded packet header (everything but the payload and ACK blocks). */
struct mr_hdr {
	u8 opcode;
	u8 path;
	u16 flags;
	u32 epoch;
	u32 psn;
	u32 tsval;
	u16 hlen;		/* bytes */
	u16 plen;		/* bytes */
	/* RC header and extensions; UD uses dst/src_qpn, qkey, imm */
	u32 dst_qpn;
	u32 src_qpn;
	u32 dsn;
	u32 msn;
	u8 gen;
	u32 msg_len;
	u32 offset;
	u64 raddr;
	u32 rkey;
	u32 ssn;
	u32 imm;
	u32 inv_rkey;
	u64 swap_add;
	u64 compare;
	u64 orig;
	u32 qkey;
	u32 syn_dsn;		/* SYN: sender's lowest unacknowledged DSN */
	u32 reset_epoch;	/* RESET: the epoch the receiver did not know */
	/*
	 * SYN: the receiver's challenge for this epoch, echoed (0: none yet).
	 * RESET: the challenge (never 0).
	 */
	u64 cookie;
};

struct mr_ack_path {
	u8 path;
	u16 ce_cnt;		/* CE-marked packets received (wrapping) */
	u16 rx_cnt;		/* packets received (wrapping) */
	u32 base;		/* every psn before base was received */
	u32 tsecr;		/* tsval of the newest packet on the path */
	u32 bitmap[MR_PATH_WND / 32];	/* bit i: psn base + i received */
};

struct mr_ack_qp {
	u8 status;		/* enum mr_qp_status */
	u8 gen;
	u32 qpn;
	u32 msn;
	u32 aux;
};

struct mr_ack {
	u32 ack_epoch;		/* the acknowledged direction's epoch */
	u32 dsn_cum;		/* every DSN before this was processed */
	u32 rate_hint;		/* receiver's fair share for us, Mbit/s; 0: none */
	u8 npath;
	u8 nqp;
	struct mr_ack_path path[MR_MAX_PATHS];
	struct mr_ack_qp qp[MR_ACK_MAX_QP];
};

/* Opcode properties. */
static inline int mr_op_sequenced(u8 op)
{
	return op >= MR_OP_WRITE && op <= MR_OP_PROBE;
}

static inline int mr_op_has_dsn(u8 op)
{
	return op >= MR_OP_WRITE && op <= MR_OP_NOP;
}

static inline int mr_op_is_response(u8 op)
{
	return op == MR_OP_READ_RESP || op == MR_OP_ATOMIC_RESP;
}

/*
 * Decode and validate a packet. @buf/@len is the UDP payload. On success
 * returns the header length in bytes (the payload follows it and is exactly
 * h->plen bytes long); @ack, if not NULL, receives the ACK blocks of an ACK.
 * On failure returns -(enum mr_drop_reason).
 */
int mr_wire_decode(const u8 *buf, u32 len, struct mr_hdr *h,
		   struct mr_ack *ack);

/*
 * Encode @h (opcode, flags and the fields the opcode uses; hlen is computed)
 * into @buf. Returns the header length or -MR_DROP_BAD_* if @h is invalid or
 * @size too small. plen must be set by the caller.
 */
int mr_wire_encode(u8 *buf, u32 size, const struct mr_hdr *h);

/* Encode an ACK: base header @h (opcode ACK) plus @ack. Returns length. */
int mr_wire_encode_ack(u8 *buf, u32 size, const struct mr_hdr *h,
		       const struct mr_ack *ack);

/* Header length the opcode and flags imply, or 0 for an unknown opcode. */
u32 mr_wire_hlen(u8 opcode, u16 flags);

/* Human-readable names (for counters, tracing and tests). */
const char *mr_drop_name(int reason);
const char *mr_op_name(u8 opcode);

#endif /* METAROCE_MR_WIRE_H */
