// SPDX-License-Identifier: GPL-2.0-only
/*
 * Simulator core: event queue, packet pool, fabric topology, links and
 * forwarding.
 *
 * Time is in nanoseconds; a link keeps its transmitter's busy time in
 * picoseconds so serialization delays do not accumulate rounding errors.
 * A link is an output-queued egress port: a packet queued at time t starts
 * when the bytes ahead of it are gone, the queue depth seen at enqueue is
 * (busy - t) * rate, and its arrival at the far end is one event.
 */
#include <string.h>
#include <assert.h>
#include "sim.h"

struct sim *S;
/* Packets outlive a simulation (the pool is reused by the next one). */
static struct pkt *pkt_pool;

#define BIG_HDR	1024

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n, sz);

	if (!p) {
		fprintf(stderr, "mrsim: out of memory\n");
		exit(2);
	}
	return p;
}

u64 sim_rand(void)
{
	u64 x = S->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	S->rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static u64 mix64(u64 x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/* Event queue: binary min-heap on (time, insertion order). */

static int ev_less(const struct ev *a, const struct ev *b)
{
	return a->t < b->t || (a->t == b->t && a->key < b->key);
}

void ev_push(u64 t, int type, void *p)
{
	struct ev e = { t, S->seq++ << 4 | (u64)type, p };
	u32 i;

	if (S->nev == S->cap) {
		S->cap = S->cap ? S->cap * 2 : 4096;
		S->heap = realloc(S->heap, S->cap * sizeof(*S->heap));
		if (!S->heap) {
			fprintf(stderr, "mrsim: out of memory\n");
			exit(2);
		}
	}
	i = S->nev++;
	while (i) {
		u32 up = (i - 1) / 2;

		if (!ev_less(&e, &S->heap[up]))
			break;
		S->heap[i] = S->heap[up];
		i = up;
	}
	S->heap[i] = e;
}

static struct ev ev_pop(void)
{
	struct ev top = S->heap[0], last = S->heap[--S->nev];
	u32 i = 0, n = S->nev;

	for (;;) {
		u32 l = 2 * i + 1, m;

		if (l >= n)
			break;
		m = l + 1 < n && ev_less(&S->heap[l + 1], &S->heap[l]) ? l + 1 : l;
		if (!ev_less(&S->heap[m], &last))
			break;
		S->heap[i] = S->heap[m];
		i = m;
	}
	if (n)
		S->heap[i] = last;
	return top;
}

void sim_at(u64 t, void (*fn)(void *arg), void *arg)
{
	struct sim_call *c = xcalloc(1, sizeof(*c));

	c->fn = fn;
	c->arg = arg;
	ev_push(t, EV_CALL, c);
}

/* Packets */

struct pkt *pkt_alloc(void)
{
	struct pkt *p = pkt_pool;

	if (!p) {
		u32 i, n = 4096;
		struct pkt *blk = xcalloc(n, sizeof(*blk));

		for (i = 0; i < n; i++) {
			blk[i].next = pkt_pool;
			pkt_pool = &blk[i];
		}
		S->pkts_alloc += n;
		p = pkt_pool;
	}
	pkt_pool = p->next;
	memset(p, 0, offsetof(struct pkt, inl));
	return p;
}

u8 *pkt_bighdr(struct pkt *p)
{
	u8 *b;

	if (S->nbig)
		b = S->bigfree[--S->nbig];
	else
		b = xcalloc(1, BIG_HDR);
	p->hdr = b;
	return b;
}

void pkt_free(struct pkt *p)
{
	if (p->hdr && p->hdr != p->inl) {
		if (S->nbig == S->bigcap) {
			S->bigcap = S->bigcap ? S->bigcap * 2 : 1024;
			S->bigfree = realloc(S->bigfree,
					     S->bigcap * sizeof(*S->bigfree));
			assert(S->bigfree);
		}
		S->bigfree[S->nbig++] = p->hdr;
	}
	p->next = pkt_pool;
	pkt_pool = p;
}

/* Links */

u64 link_qbytes(const struct link *l)
{
	u64 now_ps = S->now * 1000;

	return l->busy_ps > now_ps ? (l->busy_ps - now_ps) / l->ps_per_byte : 0;
}

/* link_enqueue() is queueing into a host's own uplink (its NIC). */
static int enq_host;

static void link_enqueue(struct link *l, struct pkt *p)
{
	u64 now_ps = S->now * 1000, q, start, arr;

	if (l->down) {
		l->drop_down++;
		pkt_free(p);
		return;
	}
	if (l->loss_ppm && sim_rand() % 1000000 < l->loss_ppm) {
		l->drop_loss++;
		pkt_free(p);
		return;
	}
	q = l->busy_ps > now_ps ? (l->busy_ps - now_ps) / l->ps_per_byte : 0;
	if (q + p->wire > l->buf) {
		l->drop_buf++;
		pkt_free(p);
		return;
	}
	if (p->ect && q > l->ecn_k) {
		p->ce = 1;
		l->marks++;
	}
	if (q > l->qmax)
		l->qmax = q;
	if (l->qhist) {
		u64 b = q / 1024;

		l->qhist[b < l->qhist_n ? b : l->qhist_n - 1]++;
	}
	start = l->busy_ps > now_ps ? l->busy_ps : now_ps;
	l->busy_ps = start + (u64)p->wire * l->ps_per_byte;
	arr = (l->busy_ps + 999) / 1000 + l->prop_ns;
	/*
	 * Strict priority for control packets (cfg.ctrl_prio 1: at the
	 * sending host's NIC only, 2: at every link): the packet does not wait
	 * behind queued data; its bytes still delay the data queued after it
	 * (the data already queued is not moved back: an approximation of
	 * one control packet's serialization, ~20 ns).
	 */
	if (p->prio && (S->cfg.ctrl_prio >= 2 || (S->cfg.ctrl_prio && enq_host))) {
		/*
		 * Conservatively, the data packet in service has just begun
		 * (a full-size one, or what is queued if less); control
		 * packets queue behind each other.
		 */
		u64 ps = now_ps + mr_min64(q, 4096 + MR_DATA_HLEN_MAX +
					   SIM_L1_L4) * l->ps_per_byte;

		if (l->prio_busy_ps > ps)
			ps = l->prio_busy_ps;
		l->prio_busy_ps = ps + (u64)p->wire * l->ps_per_byte;
		arr = (l->prio_busy_ps + 999) / 1000 + l->prop_ns;
	}
	l->tx_bytes += p->wire;
	l->tx_data_bytes += p->plen;
	l->tx_pkts++;
	p->link = l;
	p->gen = l->gen;
	ev_push(arr, EV_PKT, p);
}

void link_set_down(struct link *l, int down)
{
	if (down && !l->down) {
		l->gen++;	/* whatever is on the wire is lost */
		l->busy_ps = S->now * 1000;
		l->prio_busy_ps = S->now * 1000;
	}
	l->down = (u8)!!down;
}

void plane_set_down(u32 plane, int down)
{
	u32 i;

	for (i = 0; i < S->nlinks; i++)
		if (S->links[i].plane == plane)
			link_set_down(&S->links[i], down);
}

static u64 ecmp_hash(const struct pkt *p, u64 salt)
{
	return mix64(((u64)p->src << 32 | p->dst) ^
		     mix64((u64)p->sport << 8 ^ p->proto ^ salt));
}

void host_send(struct host *h, struct pkt *p)
{
	u32 pl = 0, np = S->cfg.planes;

	if (np > 1) {
		if (S->cfg.planesel == PSEL_PIN && p->proto == PROTO_MR)
			pl = p->path % np;
		else
			pl = (u32)(ecmp_hash(p, 0x1000 + h->id) % np);
	}
	enq_host = 1;
	link_enqueue(h->up[pl], p);
	enq_host = 0;
}

static void pkt_arrive(struct pkt *p)
{
	struct link *l = p->link, *out;
	const struct sim_cfg *c = &S->cfg;
	u32 pl = l->plane, H = c->hosts_per_leaf, dl = p->dst / H;

	if (l->gen != p->gen || l->down) {
		l->drop_down++;
		pkt_free(p);
		return;
	}
	switch (l->to_kind) {
	case NODE_HOST: {
		struct host *h = &S->hosts[l->to_idx];

		if (p->proto == PROTO_MR)
			mr_deliver(h, p);
		else
			roce_deliver(h, p);
		pkt_free(p);
		return;
	}
	case NODE_LEAF:
		if (dl == l->to_idx) {
			out = S->leaf_down[pl][p->dst];
		} else {
			u64 salt = ((u64)pl << 40) | ((u64)l->to_idx << 8) | 1;
			u32 s = (u32)(ecmp_hash(p, salt) % c->spines);

			out = S->leaf_up[pl][l->to_idx * c->spines + s];
		}
		break;
	default:
		out = S->spine_down[pl][l->to_idx * c->leaves + dl];
		break;
	}
	link_enqueue(out, p);
}

/* Topology */

static struct link *link_new(u32 plane, u8 kind, u32 idx, u32 prop, u32 buf)
{
	struct link *l = &S->links[S->nlinks++];

	l->ps_per_byte = 8000000000000ull / S->cfg.port_bps;
	l->prop_ns = prop;
	l->buf = buf;
	l->ecn_k = S->cfg.ecn_k;
	l->loss_ppm = S->cfg.loss_ppm;
	l->plane = (u8)plane;
	l->to_kind = kind;
	l->to_idx = idx;
	return l;
}

void sim_default_cfg(struct sim_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->planes = 1;
	c->leaves = 1;
	c->hosts_per_leaf = 2;
	c->port_bps = 100000000000ull;
	c->host_prop_ns = 500;
	c->fab_prop_ns = 1000;
	c->buf = 2 << 20;
	c->host_buf = 8 << 20;
	c->ecn_k = 64 << 10;
	c->seed = 1;
	c->fs_period_ns = 4000;
	c->fs_enable = 1;
	mr_conn_cfg_default(&c->mr);
	roce_default_cfg(&c->roce);
}

struct sim *sim_new(const struct sim_cfg *cfg)
{
	struct sim *s = xcalloc(1, sizeof(*s));
	u32 P, L, H, Sp, N, p, i, j;

	S = s;
	s->cfg = *cfg;
	P = cfg->planes;
	L = cfg->leaves;
	H = cfg->hosts_per_leaf;
	Sp = L > 1 ? cfg->spines : 0;
	s->cfg.spines = Sp;
	N = L * H;
	assert(P >= 1 && P <= SIM_MAX_PLANES && N >= 2 && N <= SIM_MAX_HOSTS);
	assert(L == 1 || Sp >= 1);
	s->rng = cfg->seed * 0x9e3779b97f4a7c15ULL | 1;
	s->nhosts = N;
	s->hosts = xcalloc(N, sizeof(*s->hosts));
	s->links = xcalloc((size_t)P * (2 * N + 2 * L * Sp), sizeof(*s->links));
	s->leaf_down = xcalloc(P, sizeof(*s->leaf_down));
	s->leaf_up = xcalloc(P, sizeof(*s->leaf_up));
	s->spine_down = xcalloc(P, sizeof(*s->spine_down));
	for (i = 0; i < N; i++) {
		s->hosts[i].id = i;
		s->hosts[i].conn_of = xcalloc(N, sizeof(struct sconn *));
		mr_fs_init(&s->hosts[i].fs,
			   (u32)(P * cfg->port_bps / 1000000));
	}
	for (p = 0; p < P; p++) {
		s->leaf_down[p] = xcalloc(N, sizeof(struct link *));
		for (i = 0; i < N; i++) {
			s->hosts[i].up[p] = link_new(p, NODE_LEAF, i / H,
						     cfg->host_prop_ns,
						     cfg->host_buf);
			s->leaf_down[p][i] = link_new(p, NODE_HOST, i,
						      cfg->host_prop_ns,
						      cfg->buf);
		}
		if (!Sp)
			continue;
		s->leaf_up[p] = xcalloc((size_t)L * Sp, sizeof(struct link *));
		s->spine_down[p] = xcalloc((size_t)L * Sp,
					   sizeof(struct link *));
		for (i = 0; i < L; i++)
			for (j = 0; j < Sp; j++) {
				s->leaf_up[p][i * Sp + j] =
					link_new(p, NODE_SPINE, j,
						 cfg->fab_prop_ns, cfg->buf);
				s->spine_down[p][j * L + i] =
					link_new(p, NODE_LEAF, i,
						 cfg->fab_prop_ns, cfg->buf);
			}
	}
	mr_sim_init();
	return s;
}

void sim_free(struct sim *s)
{
	u32 i;

	/* Return what is still on the wire to the pool. */
	for (i = 0; i < s->nev; i++) {
		if ((s->heap[i].key & 15) == EV_PKT)
			pkt_free(s->heap[i].p);
		else if ((s->heap[i].key & 15) == EV_CALL)
			free(s->heap[i].p);
	}
	mr_sim_fini();
	for (i = 0; i < s->nhosts; i++) {
		free(s->hosts[i].conn_of);
		free(s->hosts[i].fs_conns);
		free(s->hosts[i].fs_demand);
		free(s->hosts[i].fs_share);
	}
	for (i = 0; i < s->cfg.planes; i++) {
		free(s->leaf_down[i]);
		free(s->leaf_up[i]);
		free(s->spine_down[i]);
	}
	for (i = 0; i < s->nlinks; i++)
		free(s->links[i].qhist);
	free(s->leaf_down);
	free(s->leaf_up);
	free(s->spine_down);
	free(s->links);
	free(s->hosts);
	free(s->heap);
	for (i = 0; i < s->nbig; i++)
		free(s->bigfree[i]);
	free(s->bigfree);
	for (i = 0; i < s->nflows; i++) {
		roce_flow_free(s->flows[i]);
		free(s->flows[i]);
	}
	free(s->flows);
	free(s);
	S = NULL;
}

int sim_run(u64 until)
{
	while (S->nev && S->heap[0].t <= until) {
		struct ev e = ev_pop();

		S->now = e.t;
		S->events++;
		switch (e.key & 15) {
		case EV_PKT:
			pkt_arrive(e.p);
			break;
		case EV_CONN_TIMER:
			mr_conn_timer_ev(e.p);
			break;
		case EV_FS:
			mr_fs_ev(e.p);
			break;
		case EV_FS_KICK:
			mr_fs_kick_ev(e.p);
			break;
		case EV_FLOW: {
			struct flow *f = e.p;

			if (f->proto == PROTO_MR)
				mr_flow_start(f);
			else
				roce_flow_start(f);
			break;
		}
		case EV_ROCE_TX:
			roce_tx_ev(e.p);
			break;
		case EV_ROCE_TIMER:
			roce_timer_ev(e.p);
			break;
		case EV_GC:
			mr_gc_ev();
			break;
		case EV_CALL: {
			struct sim_call *c = e.p;

			c->fn(c->arg);
			free(c);
			break;
		}
		}
	}
	if (until != MR_U64_MAX && S->now < until)
		S->now = until;
	return 0;
}
