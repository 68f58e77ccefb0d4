/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Internal interfaces between the engine's files. Not used by callers.
 */
#ifndef METAROCE_CORE_INTERNAL_H
#define METAROCE_CORE_INTERNAL_H

#include <metaroce/mr_engine.h>

/* Lists */
static inline void mr_list_init(struct mr_list *l)
{
	l->next = l;
	l->prev = l;
}

static inline int mr_list_empty(const struct mr_list *l)
{
	return l->next == l;
}

/* A node that is not on any list points to itself. */
static inline int mr_list_linked(const struct mr_list *n)
{
	return n->next != n;
}

static inline void mr_list_del(struct mr_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	mr_list_init(n);
}

static inline void mr_list_add_tail(struct mr_list *n, struct mr_list *head)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline void mr_list_move_tail(struct mr_list *n, struct mr_list *head)
{
	if (mr_list_linked(n))
		mr_list_del(n);
	mr_list_add_tail(n, head);
}

#define mr_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* Bitmaps of u32 words */
static inline int mr_bit_test(const u32 *map, u32 bit)
{
	return (map[bit / 32] >> (bit % 32)) & 1;
}

static inline void mr_bit_set(u32 *map, u32 bit)
{
	map[bit / 32] |= 1u << (bit % 32);
}

static inline void mr_bit_clear(u32 *map, u32 bit)
{
	map[bit / 32] &= ~(1u << (bit % 32));
}

/* Shift a bitmap of @words words down by @n bits (bit n becomes bit 0). */
void mr_bitmap_shift(u32 *map, u32 words, u32 n);
/* Number of consecutive set bits starting at bit 0. */
u32 mr_bitmap_ones(const u32 *map, u32 words);

static inline u64 mr_rand(struct mr_conn *c)
{
	/* xorshift64*: deterministic for a given seed (the simulator). */
	u64 x = c->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	c->rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/*
 * A PROBE with SYN: a sender's announcement to the receiver's fair share
 * (or a dead path's probe after a RESET); it travels in the control class
 * (protocol.rst, 5.3 and 7.20).
 */
static inline int mr_hdr_announces(const struct mr_hdr *h)
{
	return h->opcode == MR_OP_PROBE && (h->flags & MR_F_SYN);
}

static inline struct mr_seg *mr_seg_of(const struct mr_conn *c, u32 dsn)
{
	struct mr_seg *s = &c->segs[dsn & c->seg_mask];

	return (s->state != MR_SEGS_FREE && s->dsn == dsn) ? s : NULL;
}

static inline void mr_stat(struct mr_conn *c, enum mr_stat st, u64 n)
{
	c->stats[st] += n;
}

static inline void mr_drop(struct mr_conn *c, struct mr_rx *rx, int reason)
{
	rx->action = MR_RXA_DROP;
	rx->reason = reason;
	c->drops[reason]++;
}

/*
 * Constants of the path and connection control (protocol.rst section 9,
 * where each has its row). Fractions (alpha, weights) are in
 * 1/MR_WEIGHT_ONE.
 */
#define MR_SRTT_GAIN		8	/* RFC 6298: srtt += (rtt - srtt) / 8 */
#define MR_RTTVAR_GAIN		4	/* rttvar += (|d| - rttvar) / 4 */
#define MR_RTO_BACKOFF_MAX	10	/* "RTO backoff cap": 2^10 */
#define MR_REPICK_CUTS		3	/* "Re-pick count" */
#define MR_WEIGHT_REPICK	(MR_WEIGHT_ONE / 4)	/* "re-pick weight" */
#define MR_WEIGHT_REVIVE	(MR_WEIGHT_ONE / 8)	/* "revival weight" */
/* A cut by alpha removes alpha / 2 of the weight or window. */
#define MR_CUT_DIV		(2 * MR_WEIGHT_ONE)
#define MR_CONN_CUT_ALPHA_MIN	64	/* "Connection cut floor" */

/* Report @event to the environment if it traces (mr_env_ops.trace). */
static inline void mr_trace(struct mr_conn *c, int event, int path, u64 a,
			    u64 b)
{
	if (c->ops->trace)
		c->ops->trace(c->env, c, event, path, a, b);
}

/* The round trip assumed where none is measured, and cuts' least spacing. */
static inline u32 mr_rtt_floor(const struct mr_conn *c)
{
	return c->cfg.rto_min_ns / 4;
}

static inline int mr_path_usable(const struct mr_path *p)
{
	return p->state != MR_PATH_DEAD;
}

/* Has @p transmissions outstanding? */
static inline int mr_path_has_out(const struct mr_path *p)
{
	return p->una != p->nxt;
}

/* Queue @s for retransmission (once; the scan starts at the oldest). */
static inline void mr_seg_queue_rtx(struct mr_conn *c, struct mr_seg *s)
{
	if (s->state == MR_SEGS_QUEUED)
		return;
	s->state = MR_SEGS_QUEUED;
	c->rtx_cnt++;
	if (mr_seq_lt(s->dsn, c->rtx_scan))
		c->rtx_scan = s->dsn;
}

/* @qp has something to say in the next ACK (its block). */
static inline void mr_conn_mark_dirty(struct mr_conn *c, struct mr_qp *qp)
{
	if (!mr_list_linked(&qp->dirty_node))
		mr_list_add_tail(&qp->dirty_node, &c->dirty);
}

/*
 * rto.c: retransmit timeouts, from the paths' state (which they leave as
 * it is). @cap is mr_rto_cap()'s, the limit the best live path sets.
 */
u64 mr_rto_cap(const struct mr_conn *c);
/* A path's RTO without backoff. */
u64 mr_path_rto_base(const struct mr_conn *c, const struct mr_path *p, u64 cap);
/* How long a dead path's probe may go unanswered; how often one is sent. */
u64 mr_probe_pace(const struct mr_conn *c);
/* A path's RTO, backed off (a dead path's: the probe pace). */
u32 mr_path_rto_cap(const struct mr_conn *c, const struct mr_path *p, u64 cap);
u32 mr_path_rto(const struct mr_conn *c, const struct mr_path *p);
/* The best live path's RTO without backoff. */
u64 mr_conn_rto(const struct mr_conn *c);

/* path.c */
void mr_path_init(struct mr_conn *c, struct mr_path *p, u32 id, u64 now);
void mr_path_on_ack(struct mr_conn *c, const struct mr_ack_path *ap,
		    u64 now);
void mr_path_timeouts(struct mr_conn *c, u64 now);
void mr_paths_overdue(struct mr_conn *c, u64 now);
u64 mr_path_next_timer(const struct mr_conn *c);
void mr_path_repick(struct mr_conn *c, struct mr_path *p);
void mr_paths_rebalance(struct mr_conn *c);
/* Queue everything in flight for retransmission (peer lost it). */
void mr_paths_requeue(struct mr_conn *c);
/* receive side */
int mr_rpath_rx(struct mr_conn *c, const struct mr_hdr *h, int ce, u64 now);

/*
 * cc.c: the connection's window. The first two return 1 when the window
 * changed in a way the paths' shares must follow (mr_paths_rebalance()).
 */
int mr_conn_cc_on_ack(struct mr_conn *c, u32 acked, u32 pkts, u32 ce,
		      u64 now);
int mr_conn_cc_on_timeout(struct mr_conn *c, u64 now);
void mr_conn_clamp(struct mr_conn *c);

/*
 * emit.c: send a packet the engine built on @path (and record it in the
 * path's window if it is sequenced); 0 or an MR_XMIT_* code.
 */
int mr_conn_emit(struct mr_conn *c, struct mr_hdr *h, int path,
		 const struct mr_seg *s, u64 now);
/* The next path in the rotation of control packets. */
int mr_ctrl_path(struct mr_conn *c);
/* A control packet (probe, ACK_REQ, RESET); @path < 0: mr_ctrl_path(). */
int mr_conn_send_ctrl(struct mr_conn *c, struct mr_hdr *h, int path,
		      u64 now);
/* An ACK to the peer, on the next control path. */
int mr_conn_send_ack(struct mr_conn *c, const struct mr_ack *ack, u64 now);

/* segtab.c: @s was processed; free its entry and tell its QP. */
void mr_seg_release(struct mr_conn *c, struct mr_seg *s, u64 now);

/* segmap.c: which segments of a message have landed (section 7.13) */
void mr_segmap_reset(struct mr_conn *c, struct mr_segmap *m);
int mr_segmap_check(struct mr_conn *c, struct mr_segmap *m, u32 len,
		    u32 off, u32 plen, u32 *k);
int mr_segmap_land(struct mr_conn *c, struct mr_segmap *m, u32 len,
		   u32 off, u32 k);

/* resp.c: the responder side, and a QP's receive dispatch */
void mr_qp_fill_ack_block(struct mr_qp *qp, struct mr_ack_qp *aq);
void mr_qp_rx(struct mr_conn *c, struct mr_qp *qp, const struct mr_hdr *h,
	      u64 now, struct mr_rx *rx);
void mr_qp_rx_done(struct mr_conn *c, struct mr_qp *qp,
		   const struct mr_hdr *h, struct mr_rx *rx, int status,
		   u64 result, u64 now);

/* msg.c: the requester side, a QP's state and timers */
int mr_qp_next_seg(struct mr_qp *qp, struct mr_seg *s, u64 now);
int mr_qp_fill_hdr(struct mr_qp *qp, const struct mr_seg *s,
		   struct mr_hdr *h);
void mr_qp_seg_acked(struct mr_qp *qp, struct mr_seg *s, u64 now);
void mr_qp_on_ack_block(struct mr_qp *qp, const struct mr_ack_qp *aq,
			u64 now);
void mr_qp_sweep(struct mr_conn *c, u64 now);
void mr_qp_seg_gone(struct mr_qp *qp, const struct mr_seg *s);
u64 mr_qp_next_timer(const struct mr_conn *c);
int mr_qp_has_tx(const struct mr_qp *qp, u64 now);
void mr_qp_source_gone(struct mr_qp *qp, u64 now);
/* For resp.c: a response to one of our messages, and its placement. */
void mr_qp_rx_response(struct mr_conn *c, struct mr_qp *qp,
		       const struct mr_hdr *h, struct mr_rx *rx);
void mr_qp_response_done(struct mr_conn *c, struct mr_qp *qp,
			 const struct mr_hdr *h, const struct mr_rx *rx,
			 int status, u64 now);
/* For resp.c: the QP has something to send (a READ or atomic response). */
void mr_qp_activate(struct mr_qp *qp);
/* For resp.c: the responder's fatal error, once its responses are out. */
void mr_qp_fatal_fail(struct mr_qp *qp);

#endif /* METAROCE_CORE_INTERNAL_H */
