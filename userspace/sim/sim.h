/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * MetaRoCE fabric simulator: a discrete-event packet-level model of a
 * (multiplane) leaf-spine fabric whose hosts run real instances of the
 * transport engine (drivers/metaroce/core via libmrcore.a), or a RoCEv2
 * baseline model (go-back-N, DCQCN-like rate control). See
 * Documentation/sim-results.rst for the model and its parameters.
 */
#ifndef MR_SIM_H
#define MR_SIM_H

#include <stdio.h>
#include <stdlib.h>
#include <metaroce/mr_engine.h>

#define SIM_MAX_PLANES	8
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define SIM_MAX_HOSTS	4096
/* Ethernet header+FCS, IPv4, UDP, preamble and inter-frame gap. */
#define SIM_L1_L4	66
/* RoCEv2 BTH + ICRC (+ RETH on a message's first packet). */
#define SIM_ROCE_HDR	16
#define SIM_ROCE_RETH	16

enum sim_proto {
	PROTO_MR = 1,
	PROTO_ROCE,
};

enum sim_node {
	NODE_HOST = 0,
	NODE_LEAF,
	NODE_SPINE,
};

/* How a host picks its uplink (plane) for a packet. */
enum sim_planesel {
	PSEL_HASH = 0,		/* ECMP hash of the 5-tuple (kernel multipath route) */
	PSEL_PIN,		/* MetaRoCE path i -> plane i % P (plane pinning) */
};

enum sim_ev {
	EV_PKT = 1,		/* packet arrives at the far end of pkt->link */
	EV_CONN_TIMER,		/* MetaRoCE connection timer */
	EV_FS,			/* receiver fair share of one host */
	EV_FS_KICK,		/* its reshare after an announcement */
	EV_FLOW,		/* flow starts */
	EV_ROCE_TX,		/* RoCE QP may send */
	EV_ROCE_TIMER,		/* RoCE QP timers (RTO, DCQCN) */
	EV_CALL,		/* scenario callback */
	EV_GC,			/* free idle connections */
};

struct ev {
	u64 t;
	u64 key;		/* insertion order << 4 | type */
	void *p;
};

struct link {
	u64 ps_per_byte;	/* serialization time, picoseconds per byte */
	u64 busy_ps;		/* transmitter busy until (ps) */
	u64 prio_busy_ps;	/* control packets (cfg.ctrl_prio) until (ps) */
	u32 prop_ns;
	u32 buf;		/* bytes of egress buffer */
	u32 ecn_k;		/* mark ECT packets when the queue exceeds K */
	u32 loss_ppm;		/* random loss, parts per million */
	u32 gen;		/* bumped when the link goes down */
	u8 down;
	u8 to_kind;		/* enum sim_node */
	u8 plane;
	u32 to_idx;		/* host id, or leaf/spine index in the plane */
	/* statistics */
	u64 tx_bytes;
	u64 tx_data_bytes;	/* payload bytes */
	u64 tx_pkts;
	u64 drop_buf;
	u64 drop_loss;
	u64 drop_down;
	u64 marks;
	u64 qmax;
	u64 *qhist;		/* queue depth histogram (KiB bins), optional */
	u32 qhist_n;
};

struct pkt {
	struct pkt *next;
	struct link *link;	/* link being traversed */
	u32 gen;		/* link->gen when it was queued */
	u32 src, dst;		/* hosts */
	u32 wire;		/* bytes on the wire */
	u32 plen;		/* payload bytes */
	u16 sport;
	u8 proto;
	u8 ect, ce;
	u8 prio;		/* control packet: ahead of data (cfg.ctrl_prio) */
	u8 path;		/* MetaRoCE path id (plane pinning) */
	u16 hlen;
	u8 *hdr;		/* MetaRoCE header (inline or big buffer) */
	/* RoCE baseline */
	u32 flow;
	u32 psn;
	u8 rtype;
	u8 last;
	u8 inl[MR_HLEN_MAX + 4];
};

struct sconn;
struct rqp;

/* An application transfer: @bytes from src to dst, in messages of @msg. */
struct flow {
	u32 id;
	u32 src, dst;
	u8 proto;
	u8 done;
	u8 rdone;
	u64 bytes;
	u32 msg;
	u32 max_out;		/* messages in flight */
	u64 start;
	u64 posted;		/* bytes posted */
	u64 acked;		/* bytes completed at the sender */
	u64 rcvd;		/* bytes placed at the receiver (first copy) */
	u64 t_done;		/* sender completion of the last message */
	u64 t_rdone;		/* last byte placed at the receiver */
	u32 out;		/* messages in flight */
	u8 paced;		/* the application hands over bytes in time: */
	u64 allow;		/* what it has handed over so far */
	u64 bin_rcvd;		/* for samplers */
	/* MetaRoCE */
	struct sqp *sq, *rq;
	/* RoCE */
	struct rqp *r;
	void (*on_done)(struct flow *f);
	void *arg;
};

/* MetaRoCE QP wrapper (one per flow and side). */
struct sqp {
	struct mr_qp qp;
	struct mr_qp_slots slots;
	struct flow *f;
	struct sconn *sc;
	struct sqp *next_free;
};

/* MetaRoCE connection wrapper: one per (host, peer). */
struct sconn {
	struct mr_conn c;
	struct mr_seg *segs;
	struct host *h;
	u32 peer;
	u32 nqp;		/* attached QPs */
	u32 fs_idx;		/* index in the host's fair-share list */
	u8 fs_on;		/* in it: an active sender to the host */
	u64 timer_at;		/* time of the live timer event */
	u8 gc_queued;
	u8 live;
	struct sconn *next_free;
	struct sconn *gc_next;
};

struct host {
	u32 id;
	struct link *up[SIM_MAX_PLANES];
	struct sconn **conn_of;	/* peer -> connection, NULL if none */
	/*
	 * Receiver fair share, over the active senders only (protocol.rst
	 * 7.20): those with arrivals since their demand was last 0.
	 */
	struct mr_fs_dev fs;
	struct mr_conn **fs_conns;	/* each the first member of a sconn */
	u32 fs_n, fs_cap;
	u32 *fs_demand, *fs_share;
	u32 nconns;		/* live connections: the runs go on while any */
	u8 fs_armed;
	u8 fs_kicked;		/* an EV_FS_KICK is pending */
	u64 fs_last;		/* last run or reshare */
	u64 fs_full_at;		/* last run that read the meters */
	u64 fs_runs;		/* runs that read the meters */
	u64 fs_visits;		/* connections they read */
	u64 rx_data;		/* payload bytes placed */
	u64 drop_noconn;
	u64 decode_drops;
	u64 eng_drops;
	s64 tx_inflight;	/* its connections' bytes in flight */
};

/* RoCEv2 baseline parameters (see roce.c). */
struct roce_cfg {
	u32 mtu;
	u32 ack_every;
	u32 max_out;		/* packets outstanding per QP */
	u64 rto_ns;
	u64 cnp_interval_ns;	/* NP: at most one CNP per QP per interval */
	u64 alpha_timer_ns;	/* K */
	u64 rate_timer_ns;	/* T */
	u64 byte_counter;	/* B */
	u32 fast_steps;		/* F */
	u64 rai_bps;
	u64 rhai_bps;
	u64 min_rate_bps;
	u32 g_shift;		/* g = 1/2^g_shift */
};

struct sim_cfg {
	/* topology */
	u32 planes;
	u32 leaves;		/* per plane */
	u32 hosts_per_leaf;
	u32 spines;		/* per plane; 0 if leaves == 1 */
	u64 port_bps;		/* every link */
	u32 host_prop_ns;	/* host <-> leaf */
	u32 fab_prop_ns;	/* leaf <-> spine */
	u32 buf;		/* egress buffer per port, bytes */
	u32 host_buf;		/* host NIC egress buffer */
	u32 ecn_k;
	u32 loss_ppm;		/* on every link */
	u8 planesel;
	u8 ctrl_prio;		/* 1: control packets first at hosts, 2: everywhere */
	u64 seed;
	/* transports */
	struct mr_conn_cfg mr;
	u32 fs_period_ns;	/* receiver fair-share run period */
	u8 fs_enable;
	u8 gc;			/* free idle connection pairs */
	u64 host_window;	/* MetaRoCE host's shared window, bytes; 0 none */
	struct roce_cfg roce;
};

struct sim {
	struct sim_cfg cfg;
	u64 now;
	u64 seq;
	struct ev *heap;
	u32 nev, cap;
	u64 events;
	u64 rng;
	/* fabric */
	u32 nhosts;
	struct host *hosts;
	struct link *links;
	u32 nlinks;
	struct link ***leaf_down;	/* [plane][host] */
	struct link ***leaf_up;		/* [plane][leaf * spines + spine] */
	struct link ***spine_down;	/* [plane][spine * leaves + leaf] */
	/* packets */
	u8 **bigfree;
	u32 nbig, bigcap;
	u64 pkts_alloc;
	/* MetaRoCE objects */
	struct sconn *cfree;
	u32 conns_live, conns_peak;
	struct sqp *qfree;
	struct sqp **qp_by_qpn;
	u32 qpn_cap;
	u32 qps_live, qps_peak;
	struct sconn *gc_list;
	u8 gc_armed;
	u64 qp_errors;
	/* flows */
	struct flow **flows;
	u32 nflows, flows_cap;
	u32 flows_done;
	/* counters */
	u64 mr_stats[MR_ST_MAX];
	u64 roce_retx, roce_timeouts, roce_naks, roce_cnps;
};

extern struct sim *S;

/* core.c */
struct sim *sim_new(const struct sim_cfg *cfg);
void sim_free(struct sim *s);
void sim_default_cfg(struct sim_cfg *cfg);
void ev_push(u64 t, int type, void *p);
int sim_run(u64 until);
u64 sim_rand(void);
struct pkt *pkt_alloc(void);
void pkt_free(struct pkt *p);
u8 *pkt_bighdr(struct pkt *p);
void host_send(struct host *h, struct pkt *p);
void link_set_down(struct link *l, int down);
void plane_set_down(u32 plane, int down);
u64 link_qbytes(const struct link *l);
struct sim_call {
	void (*fn)(void *arg);
	void *arg;
};
void sim_at(u64 t, void (*fn)(void *arg), void *arg);

/* flows (scen.c) */
struct flow *flow_new(u32 src, u32 dst, u64 bytes, u32 msg, u64 start,
		      int proto);
void flow_delivered(struct flow *f, u32 bytes);
void flow_completed(struct flow *f, u32 bytes);

void sim_debug_flow(struct flow *f);

/* metaroce.c */
void mr_flow_start(struct flow *f);
/* A paced application hands @bytes more over to flow @f. */
void mr_flow_allow(struct flow *f, u64 bytes);
void mr_deliver(struct host *h, struct pkt *p);
void mr_conn_timer_ev(struct sconn *sc);
void mr_fs_ev(struct host *h);
void mr_fs_kick_ev(struct host *h);
void mr_gc_ev(void);
void mr_sim_init(void);
void mr_sim_fini(void);
void mr_stats_total(u64 *st);

/* roce.c */
void roce_default_cfg(struct roce_cfg *rc);
void roce_flow_start(struct flow *f);
void roce_deliver(struct host *h, struct pkt *p);
void roce_tx_ev(struct rqp *q);
void roce_timer_ev(struct rqp *q);
u64 roce_rate(const struct rqp *q);
void roce_flow_free(struct flow *f);

#endif /* MR_SIM_H */
