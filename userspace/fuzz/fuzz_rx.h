/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Input format of the receive state machine fuzzer (fuzz_rx.c), shared
 * with the seed corpus generator (gen_corpus.c).
 *
 * An input is a 4-byte setup block followed by records; each record is a
 * kind byte and kind-specific bytes (missing bytes read as zero, so every
 * input is valid). Packets can be raw bytes (they exercise the decoder in
 * front of the engine) or "structured": fields chosen relative to the
 * state of the engine and of a model of the peer, then encoded by the real
 * encoder, so that most of them pass the stateless checks and reach the
 * state machine.
 */
#ifndef MR_FUZZ_RX_H
#define MR_FUZZ_RX_H

/* Setup block */
#define FZ_SETUP_LEN	4
/*
 * byte 0: npaths - 1 (mod 16), bit 7 FZ_SET0_ANNOUNCE, bit 6
 * FZ_SET0_HELLO; byte 1: the bits below; byte 2: reorder_thresh - 1
 * (mod 4); byte 3: seg_wnd = 16 << (b % 4)
 */
#define FZ_SET0_ANNOUNCE	0x80	/* cfg.announce */
#define FZ_SET0_HELLO		0x40	/* no cookie yet: only the hello */
#define FZ_SET_OUR_WRAP		0x01	/* our epoch just below 2^32 */
#define FZ_SET_PEER_WRAP	0x02	/* peer's epoch just below 2^32 */
#define FZ_SET_MSN_WRAP		0x04	/* QP message numbers near 2^24 */
#define FZ_SET_PACING		0x08
#define FZ_SET_SMALL_MTU	0x10	/* QP mtu 256 */
#define FZ_SET_RD1		0x20	/* max_rd_atomic 1, max_dest 1 */
#define FZ_SET_RNR_RETRY	0x40	/* rnr_retry 1 instead of 7 */
#define FZ_SET_TIMEOUT		0x80	/* QP timeout 1 ms, retry_cnt 1 */

/* Record kinds (low 3 bits of the kind byte; bit 7 = CE for packets) */
enum {
	FZ_RAW = 0,	/* u16 len, then len bytes of datagram */
	FZ_DATA,	/* FZ_DATA_LEN bytes: a structured peer packet */
	FZ_ACK,		/* a structured ACK (variable, see below) */
	FZ_TIME,	/* u16: advance the clock by v * 500 ns, run timers */
	FZ_TX,		/* u8: mr_conn_tx() budget */
	FZ_FLUSH,	/* mr_conn_rx_flush() */
	FZ_POST,	/* 3 bytes: post a work request or a receive */
	FZ_ADMIN,	/* 2 bytes: error/detach/reconfigure/fair share */
};

#define FZ_CE		0x80

/*
 * FZ_DATA bytes:
 *  0 opcode selector (fz_ops[b % FZ_NOPS])
 *  1 flags (masked with the opcode's allowed flags unless b2 & 0x80)
 *  2 path (low 4 bits); bit 7: keep invalid flags
 *  3 epoch selector (b % 4): 0 peer, 1 a stranger, 2 ours, 3 peer + SYN
 *    off; a SYN carries the cookie for its epoch (bit 2: a wrong one;
 *    bit 3: the one under the previous secret)
 *  4 psn offset from the model's next psn on the path (signed)
 *  5 dsn offset from the model's next DSN (signed; 0x7f: far ahead)
 *  6 destination QP selector (0..3 our QPs, else a bad QPN)
 *  7 source QP: 0 the QP's peer, else another QPN
 *  8 msn offset from the QP's rq_msn (requests) or sq_una (responses)
 *  9 gen (0: the QP's current generation)
 * 10 message length selector
 * 11 offset selector (in MTUs: b % 8; with bit 7, up to 255)
 * 12 payload length selector
 * 13 raddr/rkey selector
 * 14 ssn
 * 15 imm / misc
 */
#define FZ_DATA_LEN	16

/*
 * FZ_ACK bytes: 0 npath (mod 17), 1 nqp (mod 5), 2 dsn_cum offset from our
 * dsn_una (signed), 3 rate hint selector, 4 epoch selector (0 ours); then
 * per path block 5 bytes: path id, base offset from una (signed), ack
 * pattern (0 all sent, 1 none, else a pattern seed), 2 CE/RX increments;
 * then per QP block 4 bytes: status, QP selector, msn offset from sq_una
 * (signed), gen/aux.
 */
#define FZ_ACK_HDR	5
#define FZ_ACK_PATH	5
#define FZ_ACK_QP	4

/*
 * FZ_POST bytes: 0 QP selector (bit 7: post a receive instead), 1 opcode
 * selector, 2 length selector.
 * FZ_ADMIN bytes: 0 action (mod 8): set_error, detach, reconfigure,
 * fair share run, reconnect a detached QP, mr_conn_rx_rate, the peer's
 * challenge (a RESET: bit 0 of byte 1 names another epoch, bit 1 repeats
 * the cookie we have), xmit busy on/off; 1 QP (or the RESET's bits).
 */

#endif
