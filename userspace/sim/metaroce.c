// SPDX-License-Identifier: GPL-2.0-only
/*
 * MetaRoCE hosts: the glue between the simulated fabric and real engine
 * instances. Like the kernel glue it owns every engine object, passes the
 * clock in, decodes each arriving packet with mr_wire_decode() and drives
 * mr_conn_rx()/mr_conn_tx()/mr_conn_timer() and the receiver fair share.
 * Payload bytes do not exist: a packet carries its encoded MetaRoCE header
 * and a payload length; WRITE placement only counts bytes.
 *
 * One connection per (host, peer), created when a flow first needs it; a
 * flow is one RC QP pair streaming WRITE messages. With cfg.gc, a pair of
 * connections (both ends) is freed once neither has a QP attached and both
 * have been idle for a while, which keeps memory bounded in all-to-all.
 */
#include <string.h>
#include <assert.h>
#include "sim.h"

#define GC_PERIOD_NS	20000
#define GC_QUIET_NS	50000
#define QP_TIMEOUT_NS	4194304ull	/* IB timeout code 10 */

static struct flow *post_list[1 << 16];
static u32 post_n;

static void post_later(struct flow *f)
{
	if (post_n < ARRAY_SIZE(post_list))
		post_list[post_n++] = f;
}

static struct sconn *env_conn(void *env)
{
	return env;
}

static int sx_xmit(void *env, struct mr_conn *c, const struct mr_txpkt *t)
{
	struct sconn *sc = env_conn(env);
	struct pkt *p = pkt_alloc();

	(void)c;
	p->proto = PROTO_MR;
	p->src = sc->h->id;
	p->dst = sc->peer;
	p->sport = t->sport;
	p->path = t->path;
	p->hlen = (u16)t->hlen;
	p->plen = t->plen;
	if (t->hlen <= sizeof(p->inl))
		p->hdr = p->inl;
	else
		pkt_bighdr(p);
	memcpy(p->hdr, t->hdr, t->hlen);
	p->wire = t->hlen + t->plen + SIM_L1_L4;
	/* Every packet is ECT(0) (protocol section 5.3)... */
	p->ect = 1;
	/*
	 * ...and the unsequenced ones and announcements carry the control
	 * DSCP, which a fabric with cfg.ctrl_prio serves ahead of queued data.
	 */
	p->prio = t->ctrl;
	host_send(sc->h, p);
	return 0;
}

static void sx_complete(void *env, struct mr_qp *qp, const struct mr_cqe *cqe)
{
	struct sqp *q = (struct sqp *)qp;
	struct flow *f = q->f;

	(void)env;
	if (!f || q != f->sq)
		return;
	if (cqe->status != MR_WC_OK)
		return;
	f->out--;
	flow_completed(f, cqe->byte_len);
	post_later(f);
}

static void sx_qp_error(void *env, struct mr_qp *qp, int status)
{
	(void)env;
	S->qp_errors++;
	fprintf(stderr, "# mrsim: qp %u error %d at %llu ns\n", qp->qpn, status,
		(unsigned long long)S->now);
}

static int sx_bind_recv(void *env, struct mr_qp *qp, u32 ssn, u64 *cookie,
			u32 *len)
{
	(void)env;
	(void)qp;
	(void)ssn;
	(void)cookie;
	(void)len;
	return -1;	/* flows only WRITE */
}

static int sx_execute(void *env, struct mr_qp *qp, const struct mr_hdr *req,
		      u64 *result)
{
	(void)env;
	(void)qp;
	(void)req;
	(void)result;
	return MR_RXS_INVALID;
}

static struct mr_qp *sx_lookup(void *env, struct mr_conn *c, u32 qpn)
{
	struct sqp *q;

	(void)env;
	if (qpn >= S->qpn_cap)
		return NULL;
	q = S->qp_by_qpn[qpn];
	return q && &q->sc->c == c ? &q->qp : NULL;
}

/* The host's shared window (protocol.rst, section 7.25). */
static u64 sx_host_window(void *env, struct mr_conn *c, s64 delta)
{
	struct host *h = env_conn(env)->h;

	(void)c;
	h->tx_inflight += delta;
	if (h->tx_inflight >= (s64)S->cfg.host_window)
		return 0;
	return S->cfg.host_window - (u64)h->tx_inflight;
}

/*
 * The receiver's challenge (protocol.rst, 7.2): a keyed mix of both hosts,
 * the port and the epoch, a stand-in for the kernel's SipHash. The key is
 * the host's, from the seed: the simulator's random stream is untouched.
 */
static u64 sx_cookie(void *env, struct mr_conn *c, u32 epoch, int prev)
{
	struct sconn *sc = env_conn(env);
	u64 x;

	(void)c;
	if (prev)
		return 0;
	x = (S->cfg.seed + 1) * 0x9e3779b97f4a7c15ull ^
	    ((u64)sc->h->id << 40) ^ ((u64)sc->peer << 20) ^ epoch;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x ? x : 1;
}

static const struct mr_env_ops sx_ops = {
	.xmit = sx_xmit,
	.complete = sx_complete,
	.qp_error = sx_qp_error,
	.bind_recv = sx_bind_recv,
	.execute = sx_execute,
	.lookup_qp = sx_lookup,
	.host_window = sx_host_window,
	.cookie = sx_cookie,
};

/* Timers: one live event per connection (older ones are ignored). */
static void conn_resched(struct sconn *sc)
{
	u64 t = mr_conn_next_timer(&sc->c);

	if (t == MR_U64_MAX || t >= sc->timer_at)
		return;
	if (t < S->now)
		t = S->now;
	sc->timer_at = t;
	ev_push(t, EV_CONN_TIMER, sc);
}

static void conn_kick(struct sconn *sc)
{
	mr_conn_rx_flush(&sc->c, S->now);
	mr_conn_tx(&sc->c, S->now, 1 << 20);
	conn_resched(sc);
}

/* @sc's peer has become an active sender to @h: it joins the fair share. */
static void fs_add(struct host *h, struct sconn *sc)
{
	if (h->fs_n == h->fs_cap) {
		h->fs_cap = h->fs_cap ? h->fs_cap * 2 : 16;
		h->fs_conns = realloc(h->fs_conns,
				      h->fs_cap * sizeof(*h->fs_conns));
		h->fs_demand = realloc(h->fs_demand,
				       h->fs_cap * sizeof(*h->fs_demand));
		h->fs_share = realloc(h->fs_share,
				      h->fs_cap * sizeof(*h->fs_share));
		assert(h->fs_conns && h->fs_demand && h->fs_share);
	}
	sc->fs_idx = h->fs_n;
	sc->fs_on = 1;
	h->fs_conns[h->fs_n++] = &sc->c;
	mr_fs_join(&h->fs, &sc->c, h->fs_full_at);
}

static void fs_del(struct host *h, struct sconn *sc)
{
	struct sconn *last;

	if (!sc->fs_on)
		return;
	last = (struct sconn *)h->fs_conns[--h->fs_n];
	h->fs_conns[sc->fs_idx] = &last->c;
	last->fs_idx = sc->fs_idx;
	sc->fs_on = 0;
}

/* The host's fair share runs while it has a connection. */
static void fs_arm(struct host *h)
{
	if (S->cfg.fs_enable && !h->fs_armed) {
		h->fs_armed = 1;
		ev_push(S->now + S->cfg.fs_period_ns, EV_FS, h);
	}
}

static u32 rand_epoch(void)
{
	u32 e;

	do {
		e = (u32)sim_rand();
	} while (!e);
	return e;
}

static struct sconn *conn_get(struct host *h, u32 peer)
{
	struct sconn *sc = h->conn_of[peer];

	if (sc)
		return sc;
	sc = S->cfree;
	if (sc) {
		S->cfree = sc->next_free;
	} else {
		sc = calloc(1, sizeof(*sc));
		assert(sc);
		sc->segs = calloc(S->cfg.mr.seg_wnd, sizeof(*sc->segs));
		assert(sc->segs);
	}
	sc->h = h;
	sc->peer = peer;
	sc->nqp = 0;
	sc->timer_at = MR_U64_MAX;
	sc->gc_queued = 0;
	sc->live = 1;
	sc->fs_on = 0;
	if (mr_conn_init(&sc->c, &S->cfg.mr, sc->segs, &sx_ops, sc,
			 rand_epoch(), sim_rand(), S->now)) {
		fprintf(stderr, "mrsim: bad engine configuration\n");
		exit(2);
	}
	h->conn_of[peer] = sc;
	h->nconns++;
	fs_arm(h);
	if (++S->conns_live > S->conns_peak)
		S->conns_peak = S->conns_live;
	return sc;
}

static void conn_put(struct sconn *sc)
{
	u32 i;

	mr_conn_host_detach(&sc->c);
	for (i = 0; i < MR_ST_MAX; i++)
		S->mr_stats[i] += sc->c.stats[i];
	sc->h->conn_of[sc->peer] = NULL;
	sc->h->nconns--;
	fs_del(sc->h, sc);
	sc->live = 0;
	sc->next_free = S->cfree;
	S->cfree = sc;
	S->conns_live--;
}

static struct sqp *qp_new(struct flow *f, struct sconn *sc, u32 qpn)
{
	struct sqp *q = S->qfree;

	if (q)
		S->qfree = q->next_free;
	else
		q = malloc(sizeof(*q));
	assert(q);
	memset(q, 0, sizeof(*q));
	mr_qp_init_slots(&q->qp, qpn, &q->slots);
	q->f = f;
	q->sc = sc;
	if (qpn >= S->qpn_cap) {
		u32 n = S->qpn_cap ? S->qpn_cap : 1024;

		while (n <= qpn)
			n *= 2;
		S->qp_by_qpn = realloc(S->qp_by_qpn, n * sizeof(*S->qp_by_qpn));
		assert(S->qp_by_qpn);
		memset(S->qp_by_qpn + S->qpn_cap, 0,
		       (n - S->qpn_cap) * sizeof(*S->qp_by_qpn));
		S->qpn_cap = n;
	}
	S->qp_by_qpn[qpn] = q;
	sc->nqp++;
	if (++S->qps_live > S->qps_peak)
		S->qps_peak = S->qps_live;
	return q;
}

static void qp_put(struct sqp *q)
{
	mr_qp_detach(&q->qp);
	S->qp_by_qpn[q->qp.qpn] = NULL;
	q->sc->nqp--;
	q->next_free = S->qfree;
	S->qfree = q;
	S->qps_live--;
}

static void gc_queue(struct sconn *sc)
{
	if (!S->cfg.gc || sc->gc_queued)
		return;
	sc->gc_queued = 1;
	sc->gc_next = S->gc_list;
	S->gc_list = sc;
	if (!S->gc_armed) {
		S->gc_armed = 1;
		ev_push(S->now + GC_PERIOD_NS, EV_GC, NULL);
	}
}

static int conn_quiet(const struct sconn *sc)
{
	const struct mr_conn *c = &sc->c;

	return !sc->nqp && mr_conn_idle(c) && !c->ack_pending &&
	       S->now - c->idle_since >= GC_QUIET_NS &&
	       S->now - c->rx_last >= GC_QUIET_NS;
}

void mr_gc_ev(void)
{
	struct sconn **pp = &S->gc_list;

	S->gc_armed = 0;
	while (*pp) {
		struct sconn *sc = *pp, *peer;

		if (!sc->live || sc->nqp) {
			sc->gc_queued = 0;
			*pp = sc->gc_next;
			continue;
		}
		peer = S->hosts[sc->peer].conn_of[sc->h->id];
		if (conn_quiet(sc) && (!peer || conn_quiet(peer))) {
			/* Both ends go together: a fresh epoch on each side. */
			*pp = sc->gc_next;
			sc->gc_queued = 0;
			conn_put(sc);
			if (peer) {
				peer->gc_queued = 0;	/* unlinked below */
				conn_put(peer);
			}
			continue;
		}
		pp = &sc->gc_next;
	}
	/* Drop freed entries that were still linked (peers). */
	pp = &S->gc_list;
	while (*pp) {
		if (!(*pp)->live)
			*pp = (*pp)->gc_next;
		else
			pp = &(*pp)->gc_next;
	}
	if (S->gc_list) {
		S->gc_armed = 1;
		ev_push(S->now + GC_PERIOD_NS, EV_GC, NULL);
	}
}

static void post_more(struct flow *f)
{
	struct sqp *q = f->sq;
	struct mr_wr wr;

	while (f->posted < f->bytes && f->out < f->max_out &&
	       (!f->paced || f->posted < f->allow) &&
	       mr_qp_can_post(&q->qp)) {
		memset(&wr, 0, sizeof(wr));
		wr.len = (u32)(f->bytes - f->posted < f->msg ?
			       f->bytes - f->posted : f->msg);
		if (f->paced && f->allow - f->posted < wr.len)
			wr.len = (u32)(f->allow - f->posted);
		wr.cookie = f->posted;
		wr.opcode = MR_WR_WRITE;
		wr.raddr = f->posted;
		wr.rkey = 1;
		if (mr_qp_post(&q->qp, &wr, S->now))
			break;
		f->posted += wr.len;
		f->out++;
	}
}

static void flow_finish(struct flow *f)
{
	struct sconn *a = f->sq->sc, *b = f->rq->sc;

	qp_put(f->sq);
	qp_put(f->rq);
	f->sq = NULL;
	f->rq = NULL;
	if (!a->nqp)
		gc_queue(a);
	if (!b->nqp)
		gc_queue(b);
}

/* Work deferred out of engine callbacks: post more, tear down. */
static void run_posts(void)
{
	while (post_n) {
		struct flow *f = post_list[--post_n];

		if (!f->sq)
			continue;
		if (f->done) {
			flow_finish(f);
			continue;
		}
		post_more(f);
		conn_kick(f->sq->sc);
	}
}

void mr_flow_allow(struct flow *f, u64 bytes)
{
	f->allow += bytes;
	if (!f->sq || f->done)
		return;
	post_more(f);
	conn_kick(f->sq->sc);
	run_posts();
}

void mr_flow_start(struct flow *f)
{
	struct host *hs = &S->hosts[f->src], *hd = &S->hosts[f->dst];
	struct sconn *a = conn_get(hs, f->dst), *b = conn_get(hd, f->src);
	u32 qa = 2 + 2 * f->id, qb = qa + 1;
	u32 pa = (u32)sim_rand() & MR_MSN_MASK, pb = (u32)sim_rand() & MR_MSN_MASK;
	struct mr_qp_attr at;

	f->sq = qp_new(f, a, qa);
	f->rq = qp_new(f, b, qb);
	memset(&at, 0, sizeof(at));
	at.seg_size = S->cfg.mr.mtu;
	at.timeout_ns = QP_TIMEOUT_NS;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.min_rnr_timer = 1;
	at.max_rd_atomic = 16;
	at.max_dest_rd_atomic = 16;
	at.dest_qpn = qb;
	at.sq_psn = pa;
	at.rq_psn = pb;
	if (mr_qp_connect(&f->sq->qp, &a->c, &at, S->now) ||
	    mr_qp_rts(&f->sq->qp, &at, S->now))
		abort();
	at.dest_qpn = qa;
	at.sq_psn = pb;
	at.rq_psn = pa;
	if (mr_qp_connect(&f->rq->qp, &b->c, &at, S->now) ||
	    mr_qp_rts(&f->rq->qp, &at, S->now))
		abort();
	post_more(f);
	conn_kick(a);
	run_posts();
}

void mr_deliver(struct host *h, struct pkt *p)
{
	struct sconn *sc = h->conn_of[p->src];
	struct mr_hdr hd;
	struct mr_ack ack;
	struct mr_rx rx;
	struct mr_qp *qp = NULL;
	int hl;

	if (!sc) {
		h->drop_noconn++;
		return;
	}
	/* The payload does not exist; the decoder only checks its length. */
	hl = mr_wire_decode(p->hdr, p->hlen + p->plen, &hd, &ack);
	if (hl < 0) {
		h->decode_drops++;
		return;
	}
	if (hd.opcode != MR_OP_ACK)
		qp = sx_lookup(sc, &sc->c, hd.dst_qpn);
	mr_conn_rx(&sc->c, qp, &hd, &ack, p->ce, S->now, &rx);
	/* Something arrived: the sender is active, if it was not. */
	if (!sc->fs_on && S->cfg.fs_enable &&
	    (sc->c.rx_meter_pkts || sc->c.fs_new))
		fs_add(h, sc);
	switch (rx.action) {
	case MR_RXA_NONE:
		break;
	case MR_RXA_DROP:
		h->eng_drops++;
		break;
	case MR_RXA_WRITE: {
		struct sqp *q = (struct sqp *)rx.qp;

		if (q && q->f) {
			flow_delivered(q->f, hd.plen);
			h->rx_data += hd.plen;
		}
		mr_conn_rx_done(&sc->c, &hd, &rx, MR_RXS_OK, 0, S->now);
		break;
	}
	default:
		mr_conn_rx_done(&sc->c, &hd, &rx, MR_RXS_INVALID, 0, S->now);
		break;
	}
	/*
	 * A sender announced itself: reshare at once, or 1/8 of a period
	 * after the previous run (protocol section 7.20).
	 */
	if (sc->c.fs_new && S->cfg.fs_enable && !h->fs_kicked) {
		u64 at = h->fs_last + S->cfg.fs_period_ns / 8;

		h->fs_kicked = 1;
		ev_push(at > S->now ? at : S->now, EV_FS_KICK, h);
	}
	conn_kick(sc);
	run_posts();
}

void mr_conn_timer_ev(struct sconn *sc)
{
	if (!sc->live || S->now != sc->timer_at)
		return;
	sc->timer_at = MR_U64_MAX;
	if (mr_conn_next_timer(&sc->c) <= S->now)
		mr_conn_timer(&sc->c, S->now);
	conn_kick(sc);
	run_posts();
}

/* After a run: send the hints that fell (mr_conn_set_hint()). */
static void fs_push(struct host *h)
{
	u32 i;

	h->fs_last = S->now;
	for (i = 0; i < h->fs_n; i++)
		if (h->fs_conns[i]->ack_now)
			conn_kick((struct sconn *)h->fs_conns[i]);
}

void mr_fs_ev(struct host *h)
{
	u32 i;

	if (!h->nconns || !S->cfg.fs_enable) {
		h->fs_armed = 0;
		return;
	}
	mr_fs_run(&h->fs, h->fs_conns, h->fs_n,
		  h->fs_demand, h->fs_share, S->now);
	h->fs_full_at = S->now;
	h->fs_runs++;
	h->fs_visits += h->fs_n;
	fs_push(h);
	/* Senders without a demand any more leave until they send again. */
	for (i = h->fs_n; i-- > 0;) {
		struct sconn *sc = (struct sconn *)h->fs_conns[i];

		if (!sc->c.rx_demand)
			fs_del(h, sc);
	}
	ev_push(S->now + S->cfg.fs_period_ns, EV_FS, h);
}

void mr_fs_kick_ev(struct host *h)
{
	h->fs_kicked = 0;
	if (!h->fs_n)
		return;
	mr_fs_reshare(&h->fs, h->fs_conns, h->fs_n, h->fs_demand,
		      h->fs_share);
	fs_push(h);
}

/* Engine counters of every connection, freed or live. */
void mr_stats_total(u64 *st)
{
	u32 i, j, k;

	memcpy(st, S->mr_stats, sizeof(S->mr_stats));
	for (i = 0; i < S->nhosts; i++)
		for (j = 0; j < S->nhosts; j++) {
			const struct sconn *sc = S->hosts[i].conn_of[j];

			if (!sc)
				continue;
			for (k = 0; k < MR_ST_MAX; k++)
				st[k] += sc->c.stats[k];
		}
}

void mr_sim_init(void)
{
	post_n = 0;
}

void mr_sim_fini(void)
{
	u32 i, j;
	struct sconn *sc;
	struct sqp *q;

	for (i = 0; i < S->qpn_cap; i++) {
		q = S->qp_by_qpn[i];
		if (q) {
			mr_qp_detach(&q->qp);
			free(q);
		}
	}
	free(S->qp_by_qpn);
	while ((q = S->qfree)) {
		S->qfree = q->next_free;
		free(q);
	}
	for (i = 0; i < S->nhosts; i++)
		for (j = 0; j < S->nhosts; j++) {
			sc = S->hosts[i].conn_of[j];
			if (sc) {
				free(sc->segs);
				free(sc);
			}
		}
	while ((sc = S->cfree)) {
		S->cfree = sc->next_free;
		free(sc->segs);
		free(sc);
	}
}
