/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A two-host network in one process for engine tests: real engine
 * instances, a link per direction with delay, loss, duplication and
 * reordering, host memory with one registered region per host, and a
 * clock driven by the events.
 */
#ifndef MR_TEST_HARNESS_H
#define MR_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <metaroce/mr_engine.h>

#define H_MAX_QPS	512
#define H_MAX_WR	8192
#define H_MAX_RECV	4096
#define H_MAX_CQE	65536
#define H_SEGS		1024

/* A bound receive's cookie: its SSN and the QP's index on the host. */
#define H_RECV_COOKIE(ssn, qi)	(((u64)(ssn) << 16) | (u64)(qi))
#define H_COOKIE_SSN(c)		((u32)((c) >> 16))
#define H_COOKIE_QP(c)		((u32)((c) & 0xffff))

struct h_wr {
	u64 laddr;		/* local buffer (host memory offset) */
	struct mr_wr wr;
	int done;
	u64 done_at;
	struct mr_cqe cqe;
};

struct h_recv {
	u64 addr;
	u32 len;
	int used;		/* 1 bound, 2 completed */
};

struct h_host;

struct h_qp {
	struct mr_qp qp;
	struct mr_qp_slots slots;
	struct h_host *host;
	struct h_recv recv[H_MAX_RECV];
	u32 nrecv;
};

struct h_link {
	u32 loss_ppm;		/* random loss, parts per million */
	u32 dup_ppm;
	u32 reorder_ppm;	/* extra delay of reorder_ns for this share */
	u64 delay_ns;
	u64 reorder_ns;
	u64 rate_bps;		/* 0: infinite */
	u64 busy_until;
	int down;		/* drop everything */
	int ce_ppm;		/* mark CE on this share */
	u64 sent, dropped;
};

struct h_host {
	int id;
	struct h_net *net;
	struct mr_conn conn;
	struct mr_seg segs[H_SEGS];
	struct h_qp qps[H_MAX_QPS];
	u32 nqps;
	u8 *mem;
	u64 memlen;
	u32 rkey;
	struct h_wr wrs[H_MAX_WR];
	u32 nwr;
	u32 nposted;		/* wrs before this are all posted */
	struct mr_cqe cqes[H_MAX_CQE];
	u16 cqe_qp[H_MAX_CQE];	/* QP index of each completion */
	u32 ncqe;
	int qp_errors;
	int qp_err_status[H_MAX_QPS];	/* last qp_error() status, or 0 */
	u64 drops[MR_DROP_NR_REASONS];
	u64 decode_drops;
	/* the device's cookie secrets: [0] current, [1] previous (0: none) */
	u64 cookie_key[2];
};

struct h_pkt {
	u64 at;
	u64 seq;
	int dst;
	int ce;
	u32 len;
	struct h_pkt *next;
	u8 data[];
};

/*
 * Per-packet hook: return nonzero to drop the packet; may add to *delay.
 * @from is the sending host; @pkt/@len the datagram.
 */
typedef int (*h_filter_fn)(struct h_net *n, int from, const u8 *pkt, u32 len,
			   u64 *delay);

struct h_net {
	u64 now;
	u64 rng;
	u64 seq;
	struct h_host host[2];
	struct h_link link[2];	/* link[i]: from host i to host 1-i */
	struct h_pkt *q;	/* sorted by (at, seq) */
	u64 delivered;
	int trace;
	h_filter_fn filter;
	void *filter_arg;
};

extern const struct mr_env_ops h_ops;

/* Create two hosts with @memlen bytes each; @cfg may be NULL (defaults). */
struct h_net *h_net_new(const struct mr_conn_cfg *cfg, u64 memlen, u64 seed,
			u32 epoch_a, u32 epoch_b);
void h_net_free(struct h_net *n);
/* Connect QP pair index @i on both hosts (RTR+RTS). */
void h_connect(struct h_net *n, u32 i, u32 psn_a, u32 psn_b);
/* The same with attributes from @tmpl (dest_qpn, psns and mtu are set). */
void h_connect_attr(struct h_net *n, u32 i, u32 psn_a, u32 psn_b,
		    const struct mr_qp_attr *tmpl);
/* The default attributes h_connect() uses. */
void h_attr_default(struct h_net *n, struct mr_qp_attr *a);
/*
 * Queue a full work request (cookie is set to the h_wr index) on host @h
 * QP @i with local buffer @laddr; returns the h_wr index or -1.
 */
int h_post_wr(struct h_net *n, int h, u32 i, const struct mr_wr *wr,
	      u64 laddr);
/* Post a work request on host @h QP @i; returns the h_wr index or -1. */
int h_post(struct h_net *n, int h, u32 i, u8 op, u64 laddr, u32 len,
	   u64 raddr, u32 imm);
int h_post_atomic(struct h_net *n, int h, u32 i, u8 op, u64 laddr,
		  u64 raddr, u64 swap_add, u64 compare);
void h_post_recv(struct h_net *n, int h, u32 i, u64 addr, u32 len);
/* Run until all work requests completed or @deadline_ns of simulated time. */
int h_run(struct h_net *n, u64 deadline_ns);
/* Run for @ns of simulated time. */
void h_run_for(struct h_net *n, u64 ns);
int h_all_done(struct h_net *n);
/*
 * Deliver a datagram of @len bytes to host @dst at the current time, as if
 * it came from the other host's address: what an attacker who can send
 * from (or spoof) that address does. It is not sent by an engine.
 */
void h_inject(struct h_net *n, int dst, const u8 *buf, u32 len);
u64 h_rand(struct h_net *n);
/* Replace host @h's cookie secret (the previous one stays valid). */
void h_cookie_rotate(struct h_net *n, int h);
/* The cookie host @h mints for @epoch (ops->cookie). */
u64 h_cookie(struct h_host *h, u32 epoch, int prev);

#endif /* MR_TEST_HARNESS_H */
