// SPDX-License-Identifier: GPL-2.0-only
/*
 * mrsim: the standard scenarios, their metrics and the smoke test.
 *
 *   mrsim [-o DIR] [-q] SCENARIO...   loss planes plane_fail incast alltoall
 *                                     many (1000 senders into one)
 *   mrsim smoke                       small versions as a TAP test
 *
 * Every scenario prints "SIM scenario=... transport=... key=value ..."
 * lines on stdout and, with -o, writes DIR/<scenario>.tsv (and time series
 * used by the plots).
 */
#include <stdint.h>
#include <string.h>
#include <stdarg.h>
#include <math.h>
#include <time.h>
#include <assert.h>
#include "sim.h"
#include "tap.h"

#define US	1000ull
#define MS	1000000ull
#define GBPS	1000000000ull

static const char *out_dir;
static int quick;

/*
 * MRSIM_SEED=k shifts every scenario's random seed by 1000 k: the same
 * runs with other random choices, to see how much a result owes to them.
 */
static u64 seed_shift(void)
{
	const char *v = getenv("MRSIM_SEED");

	return v ? 1000ull * strtoull(v, NULL, 10) : 0;
}

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *tname(int proto)
{
	return proto == PROTO_MR ? "metaroce" : "rocev2";
}

/* Flows */

struct flow *flow_new(u32 src, u32 dst, u64 bytes, u32 msg, u64 start,
		      int proto)
{
	struct flow *f = calloc(1, sizeof(*f));

	assert(f);
	if (S->nflows == S->flows_cap) {
		S->flows_cap = S->flows_cap ? S->flows_cap * 2 : 1024;
		S->flows = realloc(S->flows, S->flows_cap * sizeof(*S->flows));
		assert(S->flows);
	}
	f->id = S->nflows;
	S->flows[S->nflows++] = f;
	f->src = src;
	f->dst = dst;
	f->bytes = bytes;
	f->msg = msg;
	f->max_out = 8;
	f->start = start;
	f->proto = (u8)proto;
	ev_push(start, EV_FLOW, f);
	return f;
}

void flow_delivered(struct flow *f, u32 bytes)
{
	f->rcvd += bytes;
	if (!f->rdone && f->rcvd >= f->bytes) {
		f->rdone = 1;
		f->t_rdone = S->now;
	}
}

void flow_completed(struct flow *f, u32 bytes)
{
	f->acked += bytes;
	if (!f->done && f->acked >= f->bytes) {
		f->done = 1;
		f->t_done = S->now;
		S->flows_done++;
		if (f->on_done)
			f->on_done(f);
	}
}

/* Fabric and engine parameters shared by every scenario. */

static void fabric_cfg(struct sim_cfg *c, u32 planes, u32 leaves, u32 hpl,
		       u32 spines)
{
	struct mr_conn_cfg *m = &c->mr;

	sim_default_cfg(c);
	c->planes = planes;
	c->leaves = leaves;
	c->hosts_per_leaf = hpl;
	c->spines = spines;
	/*
	 * A MetaRoCE host pins path i to plane i % P; the planes scenario
	 * also shows plain ECMP hashing of the source port over the planes.
	 */
	c->planesel = PSEL_PIN;
	/*
	 * The control class (MetaRoCE's ACK, ACK_REQ and RESET, RoCEv2's
	 * CNP) goes ahead of queued data at every link, as a fabric serves
	 * DSCP 48 with strict priority. MRSIM_CTRL_PRIO: 0 turns that off,
	 * 1 keeps it at the sending host's NIC only (sim-results.rst,
	 * alltoall).
	 */
	c->ctrl_prio = 2;
	if (getenv("MRSIM_CTRL_PRIO"))
		c->ctrl_prio = (u8)atoi(getenv("MRSIM_CTRL_PRIO"));
	/*
	 * Senders announce themselves to the receivers' fair shares, as
	 * metaroce.ko's do; MRSIM_ANNOUNCE=0 turns that off (sim-results.rst,
	 * incast).
	 */
	m->announce = 1;
	if (getenv("MRSIM_ANNOUNCE"))
		m->announce = (u32)atoi(getenv("MRSIM_ANNOUNCE"));
	/* Engine tunables for a 100G, few-microsecond-RTT fabric. */
	m->npaths = 8;
	m->mtu = 4096;
	m->seg_wnd = 4096;
	m->init_window = 64 * 1024;
	m->min_window = 4096;
	m->max_window = 16 * 1024 * 1024;
	m->ai_bytes = 4096;
	m->rto_min_ns = 50 * US;
	m->rto_init_ns = 250 * US;
	m->rto_max_ns = 10 * MS;
	m->ack_delay_ns = 2 * US;
	m->ack_every = 16;
	/* MRSIM_DEAD_AFTER: the module's default is 3 (sim-results.rst) */
	m->dead_after = getenv("MRSIM_DEAD_AFTER") ?
			(u32)atoi(getenv("MRSIM_DEAD_AFTER")) : 1;
	m->probe_ns = 20 * US;
	m->msg_ack_ns = 100 * US;
	m->epoch_quiet_ns = 1 * MS;
}

/* Unloaded round trip of a full-size data packet and its ACK. */
static u64 base_rtt(const struct sim_cfg *c)
{
	u64 hops = c->leaves > 1 ? 4 : 2;
	u64 prop = c->leaves > 1 ? 2 * (c->host_prop_ns + c->fab_prop_ns) :
				   2 * c->host_prop_ns;
	u64 ser_data = (4096 + 60 + SIM_L1_L4) * 8 * GBPS / c->port_bps;
	u64 ser_ack = 200 * 8 * GBPS / c->port_bps;

	return 2 * prop + hops * (ser_data + ser_ack);
}

/* Output */

static FILE *tsv_open(const char *name, const char *header)
{
	char path[1024];
	FILE *f;

	if (!out_dir)
		return NULL;
	snprintf(path, sizeof(path), "%s/%s.tsv", out_dir, name);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(2);
	}
	fprintf(f, "%s\n", header);
	return f;
}

static void tsv(FILE *f, const char *fmt, ...)
{
	va_list ap;

	if (!f)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
}

static void perf_line(const char *scen, const char *tr, double t0)
{
	double dt = wall() - t0;

	printf("SIMPERF scenario=%s transport=%s events=%llu wall_s=%.2f ev_per_s=%.0f sim_ms=%.3f\n",
	       scen, tr, (unsigned long long)S->events, dt,
	       dt > 0 ? S->events / dt : 0, S->now / 1e6);
	fflush(stdout);
}

static double gbps(u64 bytes, u64 ns)
{
	return ns ? bytes * 8.0 / ns : 0;
}

static double jain(const double *x, u32 n)
{
	double s = 0, s2 = 0;
	u32 i;

	for (i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
	}
	return s2 > 0 ? s * s / (n * s2) : 0;
}

static u64 link_drops(void)
{
	u64 d = 0;
	u32 i;

	for (i = 0; i < S->nlinks; i++)
		d += S->links[i].drop_buf;
	return d;
}

static void retx_counts(int proto, u64 *retx, u64 *rto)
{
	if (proto == PROTO_MR) {
		u64 st[MR_ST_MAX];

		mr_stats_total(st);
		*retx = st[MR_ST_RETX_SACK] + st[MR_ST_RETX_RTO] +
			st[MR_ST_RETX_OVERDUE];
		*rto = st[MR_ST_RETX_RTO];
	} else {
		*retx = S->roce_retx;
		*rto = S->roce_timeouts;
	}
}

void sim_debug_flow(struct flow *f)
{
	u32 p, i;

	for (p = 0; p < S->cfg.planes; p++)
		fprintf(stderr, "# plane %u: up %.1f Gb/s data, marks %llu drops %llu qmax %llu\n",
			p, S->hosts[f->src].up[p]->tx_data_bytes * 8.0 / S->now,
			(unsigned long long)S->hosts[f->src].up[p]->marks,
			(unsigned long long)(S->hosts[f->src].up[p]->drop_buf),
			(unsigned long long)S->hosts[f->src].up[p]->qmax);
	if (f->proto == PROTO_MR) {
		struct sconn *sc = S->hosts[f->src].conn_of[f->dst];
		struct mr_conn *c = &sc->c;

		fprintf(stderr, "# conn wnd %u inflight %u hint %u alpha %u ss %u segs_used %u\n",
			c->wnd, c->inflight, c->rate_hint, c->alpha,
			c->slow_start, c->dsn_nxt - c->dsn_una);
		for (i = 0; i < c->npaths; i++) {
			struct mr_path *pa = &c->path[i];

			fprintf(stderr, "#  path %u sport %u w %u cwnd %u infl %u srtt %u minrtt %u alpha %u st %u to %u tx %llu\n",
				i, pa->sport, pa->weight, pa->cwnd, pa->inflight,
				pa->srtt, pa->min_rtt, pa->alpha, pa->state,
				(u32)pa->timeouts_total,
				(unsigned long long)pa->tx_pkts);
		}
	}
}

/* Scenario: random loss on every link ------------------------------------ */

struct loss_res {
	double gbps;
	u64 retx, rto;
	u64 qp_errors;
};

static void run_loss(int proto, u32 loss_ppm, struct loss_res *r)
{
	struct sim_cfg c;
	struct flow *f;
	u64 warm = quick ? 200 * US : 500 * US, end = quick ? 1200 * US : 3 * MS;
	u64 b0;
	double t0 = wall();
	char tr[64];

	fabric_cfg(&c, 8, 1, 2, 0);
	c.loss_ppm = loss_ppm;
	c.seed = 11 + loss_ppm + seed_shift();
	sim_new(&c);
	f = flow_new(0, 1, 1ull << 40, 1 << 20, 0, proto);
	sim_run(warm);
	b0 = f->rcvd;
	sim_run(end);
	r->gbps = gbps(f->rcvd - b0, end - warm);
	retx_counts(proto, &r->retx, &r->rto);
	r->qp_errors = S->qp_errors;
	if (getenv("MRSIM_DEBUG"))
		sim_debug_flow(f);
	snprintf(tr, sizeof(tr), "%s", tname(proto));
	if (!quick)
		perf_line("loss", tr, t0);
	sim_free(S);
}

static const u32 loss_ppms[] = { 0, 1000, 10000, 50000, 100000 };

static void scen_loss(void)
{
	FILE *t = tsv_open("loss", "transport\tloss_pct\tgoodput_gbps\tratio\tretx\trto\tqp_errors");
	int proto;
	u32 i;

	for (proto = PROTO_MR; proto <= PROTO_ROCE; proto++) {
		double base = 0;

		for (i = 0; i < 5; i++) {
			struct loss_res r;
			double ratio;

			run_loss(proto, loss_ppms[i], &r);
			if (!i)
				base = r.gbps;
			ratio = base > 0 ? r.gbps / base : 0;
			printf("SIM scenario=loss transport=%s loss_pct=%g paths=8 goodput_gbps=%.2f ratio=%.3f retx=%llu rto=%llu qp_errors=%llu\n",
			       tname(proto), loss_ppms[i] / 10000.0, r.gbps,
			       ratio, (unsigned long long)r.retx,
			       (unsigned long long)r.rto,
			       (unsigned long long)r.qp_errors);
			tsv(t, "%s\t%g\t%.3f\t%.4f\t%llu\t%llu\t%llu\n",
			    tname(proto), loss_ppms[i] / 10000.0, r.gbps, ratio,
			    (unsigned long long)r.retx,
			    (unsigned long long)r.rto,
			    (unsigned long long)r.qp_errors);
			fflush(stdout);
		}
	}
	if (t)
		fclose(t);
}

/* Scenario: one connection over P planes --------------------------------- */

struct planes_res {
	double gbps, util, spread, cv;
	double plane_gbps[SIM_MAX_PLANES];
};

static void multiplane_cfg(struct sim_cfg *c, u32 planes)
{
	/*
	 * Per plane: 4 leaves x 4 hosts, 4 spines (non-blocking).
	 */
	fabric_cfg(c, planes, 4, 4, 4);
}

static void run_planes(int proto, u32 P, int psel, u32 npaths,
		       struct planes_res *r)
{
	struct sim_cfg c;
	struct flow *f;
	u64 warm = quick ? 200 * US : 500 * US, end = quick ? 1000 * US : 3 * MS;
	u64 b0, pb0[SIM_MAX_PLANES];
	double mx = 0, mn = 1e30, sum = 0, sum2 = 0, t0 = wall();
	u32 p;

	multiplane_cfg(&c, P);
	c.planesel = (u8)psel;
	c.mr.npaths = npaths;
	c.seed = 21 + P + seed_shift();
	sim_new(&c);
	f = flow_new(0, S->nhosts - 1, 1ull << 40, 1 << 20, 0, proto);
	sim_run(warm);
	b0 = f->rcvd;
	for (p = 0; p < P; p++)
		pb0[p] = S->hosts[0].up[p]->tx_data_bytes;
	sim_run(end);
	r->gbps = gbps(f->rcvd - b0, end - warm);
	r->util = r->gbps / (P * c.port_bps / 1e9);
	for (p = 0; p < P; p++) {
		double g = gbps(S->hosts[0].up[p]->tx_data_bytes - pb0[p],
				end - warm);

		r->plane_gbps[p] = g;
		mx = g > mx ? g : mx;
		mn = g < mn ? g : mn;
		sum += g;
		sum2 += g * g;
	}
	r->spread = mn > 0 ? mx / mn : INFINITY;
	r->cv = sum > 0 ? sqrt(sum2 / P - (sum / P) * (sum / P)) / (sum / P) : 0;
	if (!quick)
		perf_line("planes", tname(proto), t0);
	sim_free(S);
}

static void scen_planes(void)
{
	FILE *t = tsv_open("planes", "transport\tplanes\tplanesel\tnpaths\tgoodput_gbps\tutil\tspread_max_min\tcv\tplane_gbps");
	static const struct {
		int proto, psel;
		u32 npaths;
	} v[] = {
		{ PROTO_MR, PSEL_HASH, 8 },
		{ PROTO_MR, PSEL_HASH, 16 },
		{ PROTO_MR, PSEL_PIN, 8 },
		{ PROTO_ROCE, PSEL_HASH, 1 },
	};
	u32 P, i, p;

	for (P = 4; P <= 8; P += 4)
		for (i = 0; i < ARRAY_SIZE(v); i++) {
			struct planes_res r;
			char pg[256];
			int n = 0;

			run_planes(v[i].proto, P, v[i].psel, v[i].npaths, &r);
			for (p = 0; p < P; p++)
				n += snprintf(pg + n, sizeof(pg) - n, "%s%.1f",
					      p ? "," : "", r.plane_gbps[p]);
			printf("SIM scenario=planes transport=%s planes=%u planesel=%s npaths=%u goodput_gbps=%.2f util=%.3f spread_max_min=%.2f cv=%.3f plane_gbps=%s\n",
			       tname(v[i].proto), P,
			       v[i].psel == PSEL_PIN ? "pin" : "hash",
			       v[i].npaths, r.gbps, r.util, r.spread, r.cv, pg);
			tsv(t, "%s\t%u\t%s\t%u\t%.3f\t%.4f\t%.3f\t%.4f\t%s\n",
			    tname(v[i].proto), P,
			    v[i].psel == PSEL_PIN ? "pin" : "hash",
			    v[i].npaths, r.gbps, r.util, r.spread, r.cv, pg);
			fflush(stdout);
		}
	if (t)
		fclose(t);
}

/* Scenario: a plane fails and comes back --------------------------------- */

#define PF_BIN	(2 * US)

struct pf_state {
	struct flow *f;
	u32 P;
	u64 *rcvd;		/* cumulative, per bin */
	u64 *plane;		/* [bin][P] cumulative data bytes on uplinks */
	u32 nbins, n;
	u32 fail_plane;
	u64 t_fail, t_back;
};

static struct pf_state pf;

static void pf_sample(void *arg)
{
	u32 p;

	(void)arg;
	if (pf.n >= pf.nbins)
		return;
	pf.rcvd[pf.n] = pf.f->rcvd;
	for (p = 0; p < pf.P; p++)
		pf.plane[pf.n * pf.P + p] =
			S->hosts[pf.f->src].up[p]->tx_data_bytes;
	pf.n++;
	sim_at(S->now + PF_BIN, pf_sample, NULL);
}

static void pf_fail(void *arg)
{
	(void)arg;
	plane_set_down(pf.fail_plane, 1);
}

static void pf_back(void *arg)
{
	(void)arg;
	plane_set_down(pf.fail_plane, 0);
}

struct pf_res {
	double pre_gbps, during_gbps, after_gbps, surv_ratio;
	double rec_us, rec_rtts, back_ratio, min_gbps, below;
	u64 qp_errors;
	u32 fail_plane;
};

static double pf_rate(u32 b0, u32 b1)
{
	if (b1 <= b0 || b1 >= pf.n)
		return 0;
	return gbps(pf.rcvd[b1] - pf.rcvd[b0], (u64)(b1 - b0) * PF_BIN);
}

static void run_plane_fail(int proto, u32 P, struct pf_res *r, FILE *ts)
{
	struct sim_cfg c;
	u64 warm = 300 * US, end;
	u32 bf, bb, b, p, win = 5;	/* 10 us windows */
	double target, t0 = wall();
	u64 rtt;

	memset(&pf, 0, sizeof(pf));
	pf.t_fail = quick ? 500 * US : 1 * MS;
	pf.t_back = quick ? 1000 * US : 2500 * US;
	end = quick ? 1500 * US : 4 * MS;
	multiplane_cfg(&c, P);
	c.seed = 31 + P + seed_shift();
	rtt = base_rtt(&c);
	sim_new(&c);
	pf.P = P;
	pf.nbins = (u32)(end / PF_BIN) + 2;
	pf.rcvd = calloc(pf.nbins, sizeof(u64));
	pf.plane = calloc((size_t)pf.nbins * P, sizeof(u64));
	pf.n = 0;
	pf.f = flow_new(0, S->nhosts - 1, 1ull << 40, 1 << 20, 0, proto);
	sim_at(0, pf_sample, NULL);
	sim_run(warm);
	/* Fail a plane the flow uses: the busiest one for a single-path QP. */
	pf.fail_plane = 3 % P;
	if (proto == PROTO_ROCE) {
		u64 best = 0;

		for (p = 0; p < P; p++)
			if (S->hosts[0].up[p]->tx_data_bytes > best) {
				best = S->hosts[0].up[p]->tx_data_bytes;
				pf.fail_plane = p;
			}
	}
	sim_at(pf.t_fail, pf_fail, NULL);
	sim_at(pf.t_back, pf_back, NULL);
	sim_run(end);
	r->qp_errors = S->qp_errors;
	r->fail_plane = pf.fail_plane;

	bf = (u32)(pf.t_fail / PF_BIN);
	bb = (u32)(pf.t_back / PF_BIN);
	r->pre_gbps = pf_rate((u32)(warm / PF_BIN), bf);
	r->during_gbps = pf_rate(bf + 100, bb);		/* from +200 us */
	r->after_gbps = pf_rate(bb + 100, pf.n - 1);
	r->surv_ratio = r->pre_gbps > 0 ?
		r->during_gbps / (r->pre_gbps * (P - 1) / P) : 0;
	/*
	 * Recovery: the end of the first 10 us window from which goodput
	 * stays >= 90% of the surviving capacity for 200 us (sustained); the
	 * share of failure time spent below that is reported too.
	 */
	target = 0.9 * r->pre_gbps * (P - 1) / P;
	r->rec_us = -1;
	r->min_gbps = 1e30;
	r->below = 0;
	for (b = bf; b + win <= bb; b++) {
		double g = pf_rate(b, b + win);
		u32 k, ok = 1;

		if (g < r->min_gbps)
			r->min_gbps = g;
		if (g < target)
			r->below++;
		if (r->rec_us >= 0 || b + win + 100 > bb)
			continue;
		for (k = b; k + win <= b + win + 100 && ok; k += win)
			ok = pf_rate(k, k + win) >= target;
		if (ok)
			r->rec_us = (double)((b + win) * PF_BIN - pf.t_fail) / US;
	}
	r->below /= bb - bf - win + 1;
	r->rec_rtts = r->rec_us >= 0 ? r->rec_us * US / rtt : -1;
	/* Traffic back on the failed plane: its share vs. the others'. */
	{
		u32 b0 = bb + 100, b1 = pf.n - 1;
		double mine = 0, others = 0;

		if (b1 > b0) {
			for (p = 0; p < P; p++) {
				double d = (double)(pf.plane[b1 * P + p] -
						    pf.plane[b0 * P + p]);

				if (p == pf.fail_plane)
					mine = d;
				else
					others += d;
			}
			others /= P - 1;
		}
		r->back_ratio = others > 0 ? mine / others : 0;
	}
	if (ts) {
		/* 10 us bins */
		for (b = 0; b + win < pf.n; b += win) {
			fprintf(ts, "%s\t%u\t%.1f\t%.2f", tname(proto), P,
				(double)(b + win) * PF_BIN / US,
				pf_rate(b, b + win));
			for (p = 0; p < P; p++)
				fprintf(ts, "\t%.2f",
					gbps(pf.plane[(b + win) * P + p] -
					     pf.plane[b * P + p],
					     win * PF_BIN));
			fprintf(ts, "\n");
		}
		fprintf(ts, "\n\n");
	}
	if (!quick)
		perf_line("plane_fail", tname(proto), t0);
	free(pf.rcvd);
	free(pf.plane);
	sim_free(S);
}

static void print_pf(int proto, u32 P, const struct pf_res *r, FILE *t)
{
	printf("SIM scenario=plane_fail transport=%s planes=%u fail_plane=%u pre_gbps=%.1f during_gbps=%.1f surviving_ratio=%.3f recovery_us=%.1f recovery_rtts=%.1f below_frac=%.3f min_gbps=%.1f after_gbps=%.1f back_share=%.2f qp_errors=%llu\n",
	       tname(proto), P, r->fail_plane, r->pre_gbps, r->during_gbps,
	       r->surv_ratio, r->rec_us, r->rec_rtts, r->below, r->min_gbps,
	       r->after_gbps, r->back_ratio,
	       (unsigned long long)r->qp_errors);
	tsv(t, "%s\t%u\t%u\t%.2f\t%.2f\t%.4f\t%.1f\t%.1f\t%.4f\t%.2f\t%.2f\t%.3f\t%llu\n",
	    tname(proto), P, r->fail_plane, r->pre_gbps, r->during_gbps,
	    r->surv_ratio, r->rec_us, r->rec_rtts, r->below, r->min_gbps,
	    r->after_gbps,
	    r->back_ratio, (unsigned long long)r->qp_errors);
	fflush(stdout);
}

static void scen_plane_fail(void)
{
	FILE *t = tsv_open("plane_fail", "transport\tplanes\tfail_plane\tpre_gbps\tduring_gbps\tsurviving_ratio\trecovery_us\trecovery_rtts\tbelow_frac\tmin_gbps\tafter_gbps\tback_share\tqp_errors");
	FILE *ts = tsv_open("plane_fail_ts", "# transport\tplanes\tt_us\tgoodput_gbps\tplane0..planeP-1 tx gbps");
	static const u32 Ps[] = { 8, 4 };
	u32 i;
	int proto;

	for (i = 0; i < 2; i++)
		for (proto = PROTO_MR; proto <= PROTO_ROCE; proto++) {
			struct pf_res r;

			run_plane_fail(proto, Ps[i], &r, ts);
			print_pf(proto, Ps[i], &r, t);
		}
	if (t)
		fclose(t);
	if (ts)
		fclose(ts);
}

/* Scenario: incast N -> 1 ------------------------------------------------- */

#define IC_BIN	(1 * US)

struct ic_state {
	u32 n, nb, nbins;
	struct flow **f;
	u64 *rcvd;		/* [bin][n] */
	u64 t_hint;		/* first time all senders were told <= 1.25 x fair */
	double fair_mbps;
	int proto;
};

static struct ic_state ic;

static void ic_sample(void *arg)
{
	u32 i, ok = 1;

	(void)arg;
	if (ic.nb >= ic.nbins)
		return;
	for (i = 0; i < ic.n; i++) {
		struct flow *f = ic.f[i];

		ic.rcvd[(size_t)ic.nb * ic.n + i] = f->rcvd;
		if (ic.proto == PROTO_MR) {
			struct sconn *sc = S->hosts[f->src].conn_of[f->dst];

			if (!sc || !sc->c.rate_hint ||
			    sc->c.rate_hint > 1.25 * ic.fair_mbps)
				ok = 0;
		} else {
			if (!f->r || roce_rate(f->r) > 1.25 * ic.fair_mbps * 1e6)
				ok = 0;
		}
	}
	if (ok && !ic.t_hint)
		ic.t_hint = S->now ? S->now : 1;
	ic.nb++;
	sim_at(S->now + IC_BIN, ic_sample, NULL);
}

struct ic_res {
	double jain, util, tfair_us, tfair_rtts, thint_us, thint_rtts;
	double win_us, qmax_kb, qp99_kb;
	u64 drops, marks, retx, rto;
	u64 qp_errors;
};

static void run_incast(int proto, u32 N, int pacing, struct ic_res *r,
		       FILE *ts)
{
	struct sim_cfg c;
	struct link *bl;
	u64 warm = 100 * US, end = quick ? 600 * US : 2 * MS, rtt;
	double *x = calloc(N, sizeof(double)), tot = 0, t0 = wall();
	u64 ser, w, hsum = 0, acc = 0;
	u32 i, b, wb;

	fabric_cfg(&c, 1, 1, N + 1, 0);
	c.seed = 41 + N + seed_shift();
	c.mr.pacing = (u32)pacing;
	c.mr.pace_burst = 2 * 4096;	/* two packets back to back */
	rtt = base_rtt(&c);
	sim_new(&c);
	bl = S->leaf_down[0][N];
	bl->qhist_n = 4096;
	bl->qhist = calloc(bl->qhist_n, sizeof(u64));
	memset(&ic, 0, sizeof(ic));
	ic.n = N;
	ic.proto = proto;
	ic.fair_mbps = (double)c.port_bps / 1e6 / N;
	ic.nbins = (u32)(end / IC_BIN) + 2;
	ic.rcvd = calloc((size_t)ic.nbins * N, sizeof(u64));
	ic.f = calloc(N, sizeof(*ic.f));
	for (i = 0; i < N; i++)
		ic.f[i] = flow_new(i, N, 1ull << 40, 64 << 10,
				   sim_rand() % 1000, proto);
	sim_at(0, ic_sample, NULL);
	sim_run(warm);
	/* Queue depth percentiles: after the initial burst. */
	memset(bl->qhist, 0, bl->qhist_n * sizeof(u64));
	sim_run(end);

	/* Jain's index over each sender's goodput after warm-up. */
	{
		u32 bw = (u32)(warm / IC_BIN), be = ic.nb - 1;

		for (i = 0; i < N; i++) {
			x[i] = (double)(ic.rcvd[(size_t)be * N + i] -
					ic.rcvd[(size_t)bw * N + i]);
			tot += x[i];
		}
		r->jain = jain(x, N);
		if (getenv("MRSIM_DEBUG")) {
			for (i = 0; i < N; i++) {
				fprintf(stderr, "# incast sender %u: %.2f Gb/s\n",
					i, gbps((u64)x[i], (u64)(be - bw) * IC_BIN));
				if (proto == PROTO_MR)
					sim_debug_flow(ic.f[i]);
			}
		}
		r->util = gbps((u64)tot, (u64)(be - bw) * IC_BIN) /
			  (c.port_bps / 1e9);
	}
	/*
	 * Time to fair share: per-sender goodput over sliding windows long
	 * enough for each sender to get ~20 packets through at its fair share
	 * (shorter windows measure packet granularity, not fairness); the
	 * first window end from which every window has Jain >= 0.95. Its
	 * resolution is the window length, reported with it.
	 */
	ser = (4096 + 60 + SIM_L1_L4) * 8 * GBPS / c.port_bps;
	w = 20 * N * ser;
	if (w < 2 * rtt)
		w = 2 * rtt;
	wb = (u32)((w + IC_BIN - 1) / IC_BIN);
	r->win_us = (double)wb * IC_BIN / US;
	r->tfair_us = -1;
	for (b = ic.nb - 1; b >= wb; b--) {
		for (i = 0; i < N; i++)
			x[i] = (double)(ic.rcvd[(size_t)b * N + i] -
					ic.rcvd[(size_t)(b - wb) * N + i]);
		if (jain(x, N) < 0.95)
			break;
		r->tfair_us = (double)b * IC_BIN / US;
	}
	r->tfair_rtts = r->tfair_us >= 0 ? r->tfair_us * US / rtt : -1;
	r->thint_us = ic.t_hint ? (double)ic.t_hint / US : -1;
	r->thint_rtts = ic.t_hint ? (double)ic.t_hint / rtt : -1;
	r->qmax_kb = bl->qmax / 1024.0;
	for (i = 0; i < bl->qhist_n; i++)
		hsum += bl->qhist[i];
	for (i = 0; i < bl->qhist_n; i++) {
		acc += bl->qhist[i];
		if (acc * 100 >= hsum * 99)
			break;
	}
	r->qp99_kb = i;
	r->drops = link_drops();
	r->marks = bl->marks;
	retx_counts(proto, &r->retx, &r->rto);
	r->qp_errors = S->qp_errors;
	if (ts) {
		/* per-sender goodput in 10 us bins, first 4 senders */
		for (b = 10; b < ic.nb; b += 10) {
			u64 all = 0;

			fprintf(ts, "%s\t%u\t%u\t%.0f", tname(proto), N, pacing,
				(double)b * IC_BIN / US);
			for (i = 0; i < N; i++)
				all += ic.rcvd[(size_t)b * N + i] -
				       ic.rcvd[(size_t)(b - 10) * N + i];
			for (i = 0; i < 4 && i < N; i++)
				fprintf(ts, "\t%.3f",
					gbps(ic.rcvd[(size_t)b * N + i] -
					     ic.rcvd[(size_t)(b - 10) * N + i],
					     10 * IC_BIN));
			fprintf(ts, "\t%.2f\n", gbps(all, 10 * IC_BIN));
		}
		fprintf(ts, "\n\n");
	}
	if (!quick)
		perf_line("incast", tname(proto), t0);
	free(x);
	free(ic.rcvd);
	free(ic.f);
	sim_free(S);
}

static void print_ic(int proto, u32 N, int pacing, const struct ic_res *r,
		     FILE *t)
{
	printf("SIM scenario=incast transport=%s senders=%u pacing=%d jain=%.4f util=%.3f t_fair_us=%.1f t_fair_rtts=%.1f fair_window_us=%.1f t_hint_us=%.1f t_hint_rtts=%.1f qmax_kb=%.1f qp99_kb=%.0f drops=%llu marks=%llu retx=%llu rto=%llu qp_errors=%llu\n",
	       tname(proto), N, pacing, r->jain, r->util, r->tfair_us,
	       r->tfair_rtts, r->win_us, r->thint_us, r->thint_rtts,
	       r->qmax_kb, r->qp99_kb, (unsigned long long)r->drops,
	       (unsigned long long)r->marks, (unsigned long long)r->retx,
	       (unsigned long long)r->rto, (unsigned long long)r->qp_errors);
	tsv(t, "%s\t%u\t%d\t%.4f\t%.4f\t%.1f\t%.2f\t%.1f\t%.1f\t%.2f\t%.1f\t%.0f\t%llu\t%llu\t%llu\t%llu\n",
	    tname(proto), N, pacing, r->jain, r->util, r->tfair_us,
	    r->tfair_rtts, r->win_us, r->thint_us, r->thint_rtts, r->qmax_kb,
	    r->qp99_kb, (unsigned long long)r->drops,
	    (unsigned long long)r->marks, (unsigned long long)r->retx,
	    (unsigned long long)r->rto);
	fflush(stdout);
}

static void scen_incast(void)
{
	FILE *t = tsv_open("incast", "transport\tsenders\tpacing\tjain\tutil\tt_fair_us\tt_fair_rtts\tfair_window_us\tt_hint_us\tt_hint_rtts\tqmax_kb\tqp99_kb\tdrops\tmarks\tretx\trto");
	FILE *ts = tsv_open("incast_ts", "# transport\tsenders\tpacing\tt_us\tsender0..3 gbps\tall senders gbps");
	static const u32 Ns[] = { 16, 64 };
	u32 i;

	for (i = 0; i < 2; i++) {
		struct ic_res r;

		run_incast(PROTO_MR, Ns[i], 0, &r, ts);
		print_ic(PROTO_MR, Ns[i], 0, &r, t);
		run_incast(PROTO_MR, Ns[i], 1, &r, ts);
		print_ic(PROTO_MR, Ns[i], 1, &r, t);
		run_incast(PROTO_ROCE, Ns[i], 0, &r, ts);
		print_ic(PROTO_ROCE, Ns[i], 0, &r, t);
	}
	if (t)
		fclose(t);
	if (ts)
		fclose(ts);
}

/* Scenario: all-to-all over a multiplane fabric --------------------------- */

struct a2a_state {
	u32 n, win;
	u64 bytes;
	u32 *next_k;		/* per source: next destination offset */
	int proto;
};

static struct a2a_state a2a;

static void a2a_next(struct flow *done);

static void a2a_start(u32 src)
{
	u32 k = a2a.next_k[src];
	struct flow *f;

	if (k >= a2a.n)
		return;
	a2a.next_k[src] = k + 1;
	f = flow_new(src, (src + k) % a2a.n, a2a.bytes, 64 << 10, S->now,
		     a2a.proto);
	f->on_done = a2a_next;
}

static void a2a_next(struct flow *done)
{
	a2a_start(done->src);
}

struct a2a_res {
	double t_us, ideal_us, ratio;
	u32 done, total;
	u64 drops, retx, rto;
	u32 conns_peak, qps_peak;
	u64 qp_errors;
	double wall_s;
	u64 events;
};

static u32 a2a_seed;

/*
 * MRSIM_A2A_DIAG: where an all-to-all's time goes (stderr). Every 50 us:
 * the hosts' uplink utilisation (all bytes, payload only), the share of
 * uplinks with an empty queue and their mean queue, the connections with
 * data in flight and those whose window is full (per host), their mean
 * window and receiver hint, and the receivers' downlink queues.
 */
static void a2a_diag_sample(u32 N, u32 P, u64 *prev, u64 *prevd)
{
	double cap = 50.0 * US * N * P * S->cfg.port_bps / GBPS;
	double upq = 0, downq = 0, downq_max = 0, wsum = 0, hsum = 0;
	u64 b = 0, d = 0;
	u32 h, j, idle = 0, act = 0, lim = 0;

	for (h = 0; h < N; h++) {
		struct host *hs = &S->hosts[h];

		for (j = 0; j < P; j++) {
			u64 q = link_qbytes(hs->up[j]);
			double dq = (double)link_qbytes(S->leaf_down[j][h]);

			b += hs->up[j]->tx_bytes;
			d += hs->up[j]->tx_data_bytes;
			upq += (double)q;
			idle += !q;
			downq += dq;
			downq_max = dq > downq_max ? dq : downq_max;
		}
		for (j = 0; hs->conn_of && j < N; j++) {
			const struct mr_conn *c = hs->conn_of[j] ?
						  &hs->conn_of[j]->c : NULL;

			if (!c || !c->inflight)
				continue;
			act++;
			wsum += c->wnd;
			hsum += c->rate_hint;
			lim += c->inflight + c->cfg.mtu + MR_DATA_HLEN_MAX > c->wnd;
		}
	}
	fprintf(stderr, "A2AUTIL t_us=%llu up_util=%.3f data_util=%.3f up_idle=%.3f upq_kib=%.1f done=%llu sending=%.1f wnd_limited=%.1f wnd_kib=%.1f hint_gbps=%.1f downq_kib=%.1f downq_max_kib=%.0f\n",
		(unsigned long long)(S->now / US), (double)(b - *prev) * 8 / cap,
		(double)(d - *prevd) * 8 / cap, (double)idle / (N * P),
		upq / (N * P) / 1024, (unsigned long long)S->flows_done,
		(double)act / N, (double)lim / N, act ? wsum / act / 1024 : 0,
		act ? hsum / act / 1000 : 0, downq / (N * P) / 1024,
		downq_max / 1024);
	*prev = b;
	*prevd = d;
}

static u64 links_marks(struct link **l, u32 n)
{
	u64 m = 0;

	while (n--)
		m += l[n]->marks;
	return m;
}

/*
 * ...and at the end: each host's last send and receive completion over
 * the ideal, the mean flow duration against @win flows sharing an uplink
 * perfectly, how unevenly each host's bytes spread over its planes, and
 * the CE marks per kind of link.
 */
static void a2a_diag_end(u32 N, u32 P, u64 bytes, u32 win, u64 ideal)
{
	u64 *sd = calloc(N, sizeof(u64)), *rd = calloc(N, sizeof(u64));
	u64 up_marks = 0, leaf_up = 0, spine_down = 0, leaf_down = 0;
	u32 i, p, nf = 0, L = S->cfg.leaves * S->cfg.spines;
	double fl = 0, fr = 0, imb = 0;

	for (i = 0; i < S->nflows; i++) {
		struct flow *f = S->flows[i];

		if (!f->done)
			continue;
		if (f->t_done > sd[f->src])
			sd[f->src] = f->t_done;
		if (f->t_rdone > rd[f->dst])
			rd[f->dst] = f->t_rdone;
		fl += (double)(f->t_done - f->start);
		fr += (double)(f->t_rdone - f->start);
		nf++;
	}
	for (i = 0; i < N; i++) {
		u64 mx = 0, sum = 0;

		for (p = 0; p < P; p++) {
			u64 x = S->hosts[i].up[p]->tx_bytes;

			sum += x;
			mx = x > mx ? x : mx;
		}
		up_marks += links_marks(S->hosts[i].up, P);
		imb += sum ? (double)mx * P / sum : 1;
		fprintf(stderr, "A2ADIAG host=%u send_done=%.3f recv_done=%.3f\n",
			i, (double)sd[i] / ideal, (double)rd[i] / ideal);
	}
	for (p = 0; p < P; p++) {
		leaf_up += links_marks(S->leaf_up[p], L);
		spine_down += links_marks(S->spine_down[p], L);
		leaf_down += links_marks(S->leaf_down[p], N);
	}
	fprintf(stderr, "A2ADIAG flow_mean_us=%.1f rflow_mean_us=%.1f fair_us=%.1f\n",
		nf ? fl / nf / US : 0, nf ? fr / nf / US : 0,
		(double)bytes * 8 * GBPS * win / ((double)P * S->cfg.port_bps) / US);
	fprintf(stderr, "A2AIMB mean_max_over_mean_plane=%.3f\n", imb / N);
	fprintf(stderr, "A2AMARKS host_up=%llu leaf_up=%llu spine_down=%llu leaf_down=%llu\n",
		(unsigned long long)up_marks, (unsigned long long)leaf_up,
		(unsigned long long)spine_down, (unsigned long long)leaf_down);
	free(sd);
	free(rd);
}

/*
 * The hosts' shared window (protocol.rst, section 7.25) in the all-to-all:
 * MRSIM_A2A_HOST_WND times the host's bandwidth-delay product (a number,
 * 0 for none; 2.8 by default).
 */
static u64 a2a_host_window(const struct sim_cfg *c)
{
	const char *v = getenv("MRSIM_A2A_HOST_WND");
	double k = v ? atof(v) : 2.8;

	if (k <= 0)
		return 0;
	return (u64)(k * (double)c->planes * (double)c->port_bps *
		     (double)base_rtt(c) / 8 / GBPS);
}

static void run_alltoall(int proto, u32 N, u32 P, u64 bytes, u32 win,
			 struct a2a_res *r)
{
	struct sim_cfg c;
	u32 i, k;
	u64 ideal, deadline, t_end = 0, prev = 0, prevd = 0;
	int diag = getenv("MRSIM_A2A_DIAG") != NULL;
	double t0 = wall();

	fabric_cfg(&c, P, N / 16, 16, 16);
	c.seed = 51 + N + 1000 * a2a_seed + seed_shift();
	c.gc = 1;
	c.mr.seg_wnd = 512;
	c.host_window = a2a_host_window(&c);
	sim_new(&c);
	memset(&a2a, 0, sizeof(a2a));
	a2a.n = N;
	a2a.win = win;
	a2a.bytes = bytes;
	a2a.proto = proto;
	a2a.next_k = calloc(N, sizeof(u32));
	for (i = 0; i < N; i++) {
		a2a.next_k[i] = 1;
		for (k = 0; k < win; k++)
			a2a_start(i);
	}
	ideal = (u64)((double)(N - 1) * bytes * 8 * GBPS /
		      ((double)P * c.port_bps));
	deadline = 20 * ideal;
	while (S->flows_done < (u64)N * (N - 1) && S->now < deadline) {
		sim_run(S->now + 50 * US);
		if (diag)
			a2a_diag_sample(N, P, &prev, &prevd);
	}
	for (i = 0; i < S->nflows; i++)
		if (S->flows[i]->done && S->flows[i]->t_done > t_end)
			t_end = S->flows[i]->t_done;
	if (diag)
		a2a_diag_end(N, P, bytes, win, ideal);
	r->done = S->flows_done;
	r->total = N * (N - 1);
	r->t_us = (double)t_end / US;
	r->ideal_us = (double)ideal / US;
	r->ratio = r->done == r->total ? (double)t_end / ideal : -1;
	r->drops = link_drops();
	retx_counts(proto, &r->retx, &r->rto);
	r->conns_peak = S->conns_peak;
	r->qps_peak = S->qps_peak;
	r->qp_errors = S->qp_errors;
	r->events = S->events;
	r->wall_s = wall() - t0;
	if (!quick)
		perf_line("alltoall", tname(proto), t0);
	free(a2a.next_k);
	sim_free(S);
}

static void scen_alltoall(void)
{
	FILE *t = tsv_open("alltoall", "transport\thosts\tplanes\tbytes_per_peer\twindow\tcompletion_us\tideal_us\tratio\tflows_done\tflows\tdrops\tretx\trto\tconns_peak\tqp_errors");
	const char *hosts = getenv("MRSIM_A2A_HOSTS");
	u32 N = quick ? 64 : 512, P = 4, win = 16;
	u64 bytes = quick ? 64 << 10 : 256 << 10;

	int proto;

	/* a smaller all-to-all for experiments: a multiple of 16 hosts */
	if (hosts && atoi(hosts) >= 32 && atoi(hosts) % 16 == 0)
		N = (u32)atoi(hosts);
	for (proto = PROTO_MR; proto <= PROTO_ROCE; proto++) {
		struct a2a_res r;

		run_alltoall(proto, N, P, bytes, win, &r);
		printf("SIM scenario=alltoall transport=%s hosts=%u planes=%u bytes_per_peer=%llu window=%u completion_us=%.1f ideal_us=%.1f ratio=%.3f flows_done=%u/%u drops=%llu retx=%llu rto=%llu conns_peak=%u qp_errors=%llu\n",
		       tname(proto), N, P, (unsigned long long)bytes, win,
		       r.t_us, r.ideal_us, r.ratio, r.done, r.total,
		       (unsigned long long)r.drops,
		       (unsigned long long)r.retx, (unsigned long long)r.rto,
		       r.conns_peak, (unsigned long long)r.qp_errors);
		tsv(t, "%s\t%u\t%u\t%llu\t%u\t%.1f\t%.1f\t%.4f\t%u\t%u\t%llu\t%llu\t%llu\t%u\t%llu\n",
		    tname(proto), N, P, (unsigned long long)bytes, win, r.t_us,
		    r.ideal_us, r.ratio, r.done, r.total,
		    (unsigned long long)r.drops, (unsigned long long)r.retx,
		    (unsigned long long)r.rto, r.conns_peak,
		    (unsigned long long)r.qp_errors);
		fflush(stdout);
	}
	if (t)
		fclose(t);
}

/*
 * Scenario: a receiver's fair share with many senders ----------------------
 *
 * N senders into one receiver (one leaf), each an application that hands
 * its flow a 4 KiB message every MANY_EVERY (50 Mbit/s, all of them 50 %
 * of the receiver's link: no queue, no loss), with random phases. The
 * receiver's fair share must count every one of them (each in its active
 * set and told its level), at the rate it sends, though each sends a
 * packet every 160 runs of the fair share; at T1 all but K stop, and soon
 * the receiver's runs must read only those K, not N (protocol.rst 7.20,
 * engine.rst).
 */
#define MANY_EVERY	(655 * US)

struct many_res {
	u32 active_t1;		/* the receiver's active set at T1 */
	u32 told_t1;		/* ... those told the current level */
	u32 dem_lo, dem_hi;	/* their demands, Mbit/s */
	double visits_t1;	/* connections read per run, last 1 ms to T1 */
	u32 active_end;		/* ... at the end */
	double visits_end;	/* ... per run, last 1 ms */
	u32 conns_end;		/* the receiver's connections at the end */
	u64 drops;
	u64 qp_errors;
};

static struct {
	u32 n, k;
	struct flow **f;
	u64 stop;
} many;

static void many_tick(void *arg)
{
	struct flow *f = arg;

	if (S->now >= many.stop && f->id >= many.k)
		return;
	mr_flow_allow(f, 4096);
	sim_at(S->now + MANY_EVERY, many_tick, f);
}

static void many_look(struct host *h, struct many_res *r)
{
	u32 i;

	r->active_t1 = h->fs_n;
	r->dem_lo = ~0u;
	r->dem_hi = 0;
	for (i = 0; i < h->fs_n; i++) {
		const struct mr_conn *c = h->fs_conns[i];

		r->told_t1 += c->hint_out == h->fs.level;
		r->dem_lo = c->rx_demand < r->dem_lo ? c->rx_demand : r->dem_lo;
		r->dem_hi = c->rx_demand > r->dem_hi ? c->rx_demand : r->dem_hi;
	}
}

static void run_many(u32 N, u32 K, struct many_res *r)
{
	struct sim_cfg c;
	struct host *h;
	u64 t1 = 8 * MS, end = 16 * MS, runs, visits;
	u32 i;

	memset(r, 0, sizeof(*r));
	fabric_cfg(&c, 1, 1, N + 1, 0);
	c.seed = 61 + N + seed_shift();
	sim_new(&c);
	h = &S->hosts[N];
	memset(&many, 0, sizeof(many));
	many.n = N;
	many.k = K;
	many.stop = t1;
	many.f = calloc(N, sizeof(*many.f));
	for (i = 0; i < N; i++) {
		u64 at = sim_rand() % MANY_EVERY;

		many.f[i] = flow_new(i, N, 1ull << 40, 4096, at, PROTO_MR);
		many.f[i]->paced = 1;
		sim_at(at, many_tick, many.f[i]);
	}
	sim_run(t1 - 1 * MS);
	runs = h->fs_runs;
	visits = h->fs_visits;
	sim_run(t1);
	many_look(h, r);
	r->visits_t1 = (double)(h->fs_visits - visits) /
		       (double)(h->fs_runs - runs ? h->fs_runs - runs : 1);
	sim_run(end - 1 * MS);
	runs = h->fs_runs;
	visits = h->fs_visits;
	sim_run(end);
	r->active_end = h->fs_n;
	r->visits_end = (double)(h->fs_visits - visits) /
			(double)(h->fs_runs - runs ? h->fs_runs - runs : 1);
	r->conns_end = h->nconns;
	r->drops = link_drops();
	r->qp_errors = S->qp_errors;
	free(many.f);
	sim_free(S);
}

static void scen_many(void)
{
	struct many_res r;

	run_many(1000, 10, &r);
	printf("SIM scenario=many_senders transport=metaroce senders=1000 kept=10 active_t1=%u told_t1=%u demand_mbps=%u..%u visits_per_run_t1=%.1f active_end=%u visits_per_run_end=%.1f conns=%u drops=%llu qp_errors=%llu\n",
	       r.active_t1, r.told_t1, r.dem_lo, r.dem_hi, r.visits_t1,
	       r.active_end, r.visits_end, r.conns_end,
	       (unsigned long long)r.drops, (unsigned long long)r.qp_errors);
}

/* Smoke test -------------------------------------------------------------- */

static int smoke(void)
{
	struct loss_res l0, l1, l10, rl0, rl1;
	struct pf_res pr;
	struct ic_res ir;
	struct a2a_res ar;
	struct planes_res pl;
	double cap = 8 * 100.0 * 4096 / (4096 + 60 + SIM_L1_L4);

	quick = 1;
	tap_start();
	run_loss(PROTO_MR, 0, &l0);
	tap_ok(l0.gbps >= 0.85 * cap && !l0.retx,
	       "loss: lossless goodput %.1f Gb/s >= 85%% of %.1f, no retransmission",
	       l0.gbps, cap);
	run_loss(PROTO_MR, 10000, &l1);
	tap_ok(l1.gbps >= 0.9 * l0.gbps && !l1.qp_errors,
	       "loss: 1%% per-link loss keeps %.3f of lossless goodput (>= 0.9)",
	       l1.gbps / l0.gbps);
	run_loss(PROTO_MR, 100000, &l10);
	tap_ok(l10.gbps >= 0.5 * l0.gbps && !l10.qp_errors,
	       "loss: 10%% per-link loss keeps %.3f of lossless goodput (>= 0.5)",
	       l10.gbps / l0.gbps);
	run_loss(PROTO_ROCE, 0, &rl0);
	run_loss(PROTO_ROCE, 10000, &rl1);
	tap_ok(rl0.gbps >= 0.85 * 100 && rl1.gbps / rl0.gbps < l1.gbps / l0.gbps,
	       "baseline: lossless %.1f Gb/s on one plane, 1%% loss ratio %.3f below metaroce's",
	       rl0.gbps, rl1.gbps / rl0.gbps);
	run_planes(PROTO_MR, 4, PSEL_PIN, 8, &pl);
	tap_ok(pl.util >= 0.85, "planes: 4 planes pinned, goodput %.3f of capacity",
	       pl.util);
	run_plane_fail(PROTO_MR, 8, &pr, NULL);
	tap_ok(!pr.qp_errors, "plane_fail: no QP error");
	tap_ok(pr.rec_us >= 0 && pr.surv_ratio >= 0.8,
	       "plane_fail: recovered in %.1f us, %.3f of surviving capacity",
	       pr.rec_us, pr.surv_ratio);
	tap_ok(pr.back_ratio >= 0.5,
	       "plane_fail: traffic returns to the plane (share %.2f of others)",
	       pr.back_ratio);
	run_incast(PROTO_MR, 16, 0, &ir, NULL);
	tap_ok(ir.jain >= 0.9 && ir.util >= 0.8,
	       "incast 16->1: Jain %.4f, utilization %.3f", ir.jain, ir.util);
	tap_ok(!ir.qp_errors, "incast 16->1: no QP error");
	/* First contact costs a round trip: the hello and its challenge. */
	tap_ok(ir.thint_rtts > 0 && ir.thint_rtts <= 3,
	       "incast 16->1: every sender told a share <= 1.25 x fair within 3 RTTs (%.1f)",
	       ir.thint_rtts);
	/*
	 * A 32-host all-to-all's completion time moves by several percent
	 * with the seed alone: guard the mean of three seeds. Every flow
	 * opens a new connection, whose first data waits a round trip for
	 * the receiver's challenge (protocol.rst 7.2): 1.36 x ideal before
	 * the challenge, 1.67 with it, since the flows are short (64 KiB,
	 * an ideal of 40 us for 31 of them per host).
	 */
	{
		double sum = 0;
		int s, ok = 1;

		for (s = 0; s < 3; s++) {
			a2a_seed = s;
			run_alltoall(PROTO_MR, 32, 4, 64 << 10, 8, &ar);
			ok &= ar.done == ar.total && ar.ratio > 0 &&
			      !ar.qp_errors;
			sum += ar.ratio;
		}
		a2a_seed = 0;
		tap_ok(ok && sum / 3 <= 1.85,
		       "alltoall 32 hosts, 3 seeds: every flow done, mean %.3f x ideal",
		       sum / 3);
	}
	{
		struct many_res mr;

		run_many(1000, 10, &mr);
		tap_ok(mr.active_t1 == 1000 && mr.told_t1 == 1000 &&
		       mr.dem_lo >= 25 && mr.dem_hi <= 100 && !mr.drops &&
		       !mr.qp_errors,
		       "1000 senders -> 1, a packet each every 160 runs: all 1000 counted and told the level, at their rate (%u told; demands %u..%u Mbit/s of 51)",
		       mr.told_t1, mr.dem_lo, mr.dem_hi);
		tap_ok(mr.visits_t1 >= 990,
		       "1000 senders -> 1: the receiver's runs read all of them (%.1f per run)",
		       mr.visits_t1);
		tap_ok(mr.conns_end == 1000 && mr.active_end == 10 &&
		       mr.visits_end <= 10.5,
		       "990 of them stop: the runs read the 10 that go on, not the %u connections (%u active, %.1f per run)",
		       mr.conns_end, mr.active_end, mr.visits_end);
	}
	return tap_done();
}

static void usage(void)
{
	fprintf(stderr,
		"usage: mrsim [-o DIR] [-q] loss|planes|plane_fail|incast|alltoall|many|all...\n"
		"       mrsim smoke\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int i, any = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-o") && i + 1 < argc) {
			out_dir = argv[++i];
		} else if (!strcmp(a, "-q")) {
			quick = 1;
		} else if (!strcmp(a, "smoke")) {
			return smoke();
		} else if (!strcmp(a, "loss") || !strcmp(a, "all")) {
			scen_loss();
			any = 1;
			if (strcmp(a, "all"))
				continue;
			scen_planes();
			scen_plane_fail();
			scen_incast();
			scen_alltoall();
		} else if (!strcmp(a, "planes")) {
			scen_planes();
			any = 1;
		} else if (!strcmp(a, "plane_fail")) {
			scen_plane_fail();
			any = 1;
		} else if (!strcmp(a, "incast")) {
			scen_incast();
			any = 1;
		} else if (!strcmp(a, "alltoall")) {
			scen_alltoall();
			any = 1;
		} else if (!strcmp(a, "many")) {
			scen_many();
			any = 1;
		} else {
			usage();
		}
	}
	if (!any)
		usage();
	return 0;
}
