// SPDX-License-Identifier: GPL-2.0-only
/*
 * Receiver fair share (core/fairshare.c): the max-min water level over
 * the active senders, and the device's CE-driven capacity estimate.
 */
#include <string.h>
#include "tap.h"
#include "endpoint.h"

#define MS 1000000ull

static int all_eq(const u32 *share, u32 n, u32 v)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (share[i] != v)
			return 0;
	return 1;
}

static void test_level(void)
{
	u32 share[8];

	{
		const u32 d[4] = { 500, 500, 500, 500 };

		mr_fairshare(1000, d, 4, share);
		tap_ok(all_eq(share, 4, 250), "4 equal demands above the fair share: 250 each");
	}
	{
		const u32 d[4] = { 100, 50, 800, 900 };

		mr_fairshare(1000, d, 4, share);
		tap_ok(all_eq(share, 4, 425),
		       "two small demands are served, the other two share the rest: level 425 (got %u)",
		       share[0]);
	}
	{
		const u32 d[3] = { 0, 0, 600 };

		mr_fairshare(1000, d, 3, share);
		tap_ok(all_eq(share, 3, 1000),
		       "senders with zero demand do not count: one active sender gets all");
	}
	{
		const u32 d[1] = { 300 };

		mr_fairshare(1000, d, 1, share);
		tap_ok(share[0] == 1000, "one sender: the whole capacity");
	}
	{
		const u32 d[3] = { 400, 100, 0 };

		mr_fairshare(1000, d, 3, share);
		tap_ok(all_eq(share, 3, 650),
		       "everyone below the level: the largest may grow by an equal part of the spare (400 + 500 / 2, got %u)",
		       share[0]);
	}
	{
		const u32 d[3] = { 0, 0, 0 };

		mr_fairshare(1000, d, 3, share);
		tap_ok(all_eq(share, 3, 1000), "nobody sending: everyone may take the capacity");
	}
	{
		const u32 d[3] = { 280, 300, 300 };
		const u32 e[3] = { 260, 300, 300 };

		mr_fairshare(900, d, 3, share);
		tap_ok(all_eq(share, 3, 300),
		       "a demand within 1/8 of the level counts as held at it (300)");
		mr_fairshare(900, e, 3, share);
		tap_ok(all_eq(share, 3, 320),
		       "a demand 1/8 below the level is served, the others split the rest (320)");
	}
	{
		const u32 d[2] = { 10, 10 };

		mr_fairshare(0, d, 2, share);
		tap_ok(all_eq(share, 2, 1), "a zero capacity still grants 1 Mbit/s");
	}
}

/* Max-min properties on random inputs. */
static void test_level_random(void)
{
	u64 x = 0x9e3779b97f4a7c15ull;
	u32 t, bad = 0;

	for (t = 0; t < 2000; t++) {
		u32 d[16], share[16], n, i, cap, level;
		u64 used = 0;
		u32 below = 0;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		n = 1 + (u32)(x % 16);
		cap = 1 + (u32)((x >> 8) % 400000);
		for (i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			d[i] = (x & 3) ? (u32)((x >> 16) % (2 * cap / n + 2)) : 0;
		}
		mr_fairshare(cap, d, n, share);
		level = share[0];
		for (i = 0; i < n; i++) {
			if (share[i] != level)
				bad++;
			if (d[i] && (u64)d[i] + d[i] / 8 < level) {
				used += d[i];	/* served below the level */
				below++;
			}
		}
		/* the level fills what the senders at it can use */
		{
			u32 at = 0, active = 0, top = 0;
			u64 sum = 0, step;

			for (i = 0; i < n; i++) {
				if (d[i] && (u64)d[i] + d[i] / 8 >= level)
					at++;
				active += !!d[i];
				sum += d[i];
				top = d[i] > top ? d[i] : top;
			}
			/* all served: the largest demand plus its part */
			step = (cap - sum) / (active ? active : 1);
			if (step < top / 8 + 1)
				step = top / 8 + 1;
			if (step > cap - sum)
				step = cap - sum;
			if (active && !at && level != top + step)
				bad++;
			if (at && used + (u64)at * level > cap)
				bad++;
			if (at && used + (u64)at * (level + 1) <= cap &&
			    level < cap)
				bad++;
		}
	}
	tap_ok(!bad, "2000 random demand sets: one level, never over capacity, no slack left");
}

/*
 * The water level as the definition has it: mark every demand below the
 * level (with the 1/8 margin) as served, recompute the level over the
 * rest, until nothing changes; O(n^2) at worst. mr_fairshare() must agree
 * with it exactly.
 */
static u32 ref_level(u32 capacity, const u32 *demand, u32 n, u8 *served)
{
	u64 remaining = capacity, step;
	u32 i, k = 0, active, level = 0, top = 0;
	int changed;

	for (i = 0; i < n; i++) {
		served[i] = !demand[i];
		k += !!demand[i];
		top = demand[i] > top ? demand[i] : top;
	}
	active = k;
	do {
		changed = 0;
		if (!k)
			break;
		level = (u32)(remaining / k);
		for (i = 0; i < n; i++) {
			if (served[i] || (u64)demand[i] + demand[i] / 8 >= level)
				continue;
			served[i] = 1;
			remaining -= demand[i];
			k--;
			changed = 1;
		}
	} while (changed);
	if (k)
		level = (u32)(remaining / k);
	else if (active) {
		step = remaining / active;
		if (step < top / 8 + 1)
			step = top / 8 + 1;
		level = (u32)(top + (step < remaining ? step : remaining));
	} else {
		level = capacity;
	}
	return level ? level : 1;
}

/* Sizes past any fixed table, against the definition. */
static void test_level_large(void)
{
	static u32 d[4000], share[4000];
	static u8 served[4000];
	static const u32 sizes[] = { 1, 2, 127, 128, 129, 1000, 4000 };
	u64 x = 0x2545f4914f6cdd1dull;
	u32 s, t, i, bad = 0, runs = 0;

	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (t = 0; t < 50; t++) {
			u32 n = sizes[s], cap, want;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			cap = 1 + (u32)(x % 1000000);
			for (i = 0; i < n; i++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				/* zeros, small, around the fair share, huge */
				switch (x & 3) {
				case 0:
					d[i] = 0;
					break;
				case 1:
					d[i] = (u32)((x >> 8) % (cap / n + 1));
					break;
				case 2:
					d[i] = (u32)((x >> 8) % (3 * (cap / n) + 2));
					break;
				default:
					d[i] = t & 1 ? MR_FS_DEMAND_NEW :
					       (u32)(x >> 32);
					break;
				}
			}
			want = ref_level(cap, d, n, served);
			mr_fairshare(cap, d, n, share);
			runs++;
			if (!all_eq(share, n, want)) {
				if (bad++ < 3)
					tap_diag("n %u cap %u: %u, the definition %u",
						 n, cap, share[0], want);
			}
		}
	}
	tap_ok(!bad,
	       "%u demand sets of 1 to 4000 senders: the sorted water level is the definition's, exactly",
	       runs);
}

/*
 * A connection whose receive meter saw @mbps (CE share @ce_pm) over 1 ms;
 * nothing at all for 0.
 */
static void meter(struct ep *e, u32 mbps, u32 ce_pm)
{
	e->c.rx_meter_start = e->now - 1 * MS;
	e->c.rx_meter_bytes = (u64)mbps * 1000000 / 8000;
	e->c.rx_meter_pkts = mbps ? 1000 : 0;
	e->c.rx_meter_ce = ce_pm;
	/* a demand of exactly this rate: no history to smooth with */
	e->c.rx_demand = 0;
	e->c.rx_quiet = 0;
}

static void test_device(void)
{
	struct mr_fs_dev d;
	struct ep *e[3];
	struct mr_conn *c[3];
	u32 demand[3], share[3], i, est, ok;

	for (i = 0; i < 3; i++) {
		e[i] = ep_new(NULL, 1 + i, 100 + i, i);
		c[i] = &e[i]->c;
	}
	mr_fs_init(&d, 1000);
	tap_ok(d.capacity == 1000 && d.estimate == 1000 && d.ce_thresh == 50,
	       "a device starts at its configured capacity, CE threshold 5%%");
	meter(e[0], 400, 0);
	meter(e[1], 100, 0);
	meter(e[2], 0, 0);
	mr_fs_run(&d, c, 3, demand, share, e[0]->now);
	tap_ok(demand[0] == 400 && demand[1] == 100 && demand[2] == 0 &&
	       c[0]->hint_out == 650 && c[1]->hint_out == 650 &&
	       c[2]->hint_out == 650,
	       "demands measured from the receive meters; all below the level: each told 400 + 500 / 2");
	/* one 1 KiB packet in 1 ms is 8 Mbit/s; in 100 ms, 0.08 */
	e[2]->c.rx_demand = 0;
	e[2]->c.rx_meter_start = e[2]->now - 100 * MS;
	e[2]->c.rx_meter_bytes = 1024;
	e[2]->c.rx_meter_pkts = 1;
	tap_ok(mr_conn_rx_rate(c[2], e[2]->now, NULL) == 0 &&
	       c[2]->rx_demand == 1,
	       "a sender of 0.08 Mbit/s reads as rate 0 but is active: demand 1 (%u)",
	       c[2]->rx_demand);
	c[2]->rx_demand = 0;
	meter(e[0], 400, 0);
	mr_fs_run(&d, c, 1, demand, share, e[0]->now);
	tap_ok(c[0]->hint_out == 1000, "a lone sender is told the capacity estimate");

	/* congestion upstream: arrivals CE-marked */
	meter(e[0], 300, 100);
	meter(e[1], 200, 0);
	meter(e[2], 0, 0);
	mr_fs_run(&d, c, 3, demand, share, e[0]->now);
	est = 500 - 500 / 16;
	tap_ok(d.estimate == est && c[0]->hint_out == est - 200 &&
	       c[1]->hint_out == est - 200 && c[2]->hint_out == est - 200,
	       "10%% CE on one sender: capacity = 15/16 of the arrival rate (%u), shared",
	       d.estimate);
	meter(e[0], 300, 49);
	meter(e[1], 200, 0);
	mr_fs_run(&d, c, 3, demand, share, e[0]->now);
	tap_ok(d.estimate == est + 1000 / 32,
	       "4.9%% CE is below the threshold: the estimate recovers by capacity/32");
	meter(e[0], 1, 500);
	meter(e[1], 0, 0);
	mr_fs_run(&d, c, 3, demand, share, e[0]->now);
	tap_ok(d.estimate == 1000 / 64, "the estimate never drops below capacity/64 (%u)",
	       d.estimate);
	ok = 1;
	for (i = 0; i < 100 && d.estimate < 1000; i++) {
		u32 before = d.estimate;

		meter(e[0], 100, 0);
		mr_fs_run(&d, c, 3, demand, share, e[0]->now);
		if (d.estimate != (before + 31 < 1000 ? before + 31 : 1000))
			ok = 0;
	}
	tap_ok(ok && d.estimate == 1000 && i == 32,
	       "clean runs raise it additively back to the capacity (%u runs)", i);
	for (i = 0; i < 3; i++)
		ep_free(e[i]);
}

/* The same computation for callers that measure the rates themselves. */
static void test_update(void)
{
	struct mr_fs_dev d;
	const u32 dem[3] = { 300, 200, 0 }, ce[3] = { 100, 0, 0 };
	const u32 clean[3] = { 0, 0, 0 };
	u32 share[3], one;

	mr_fs_init(&d, 1000);
	mr_fs_update(&d, dem, clean, dem, 3, share);
	tap_ok(d.estimate == 1000 && all_eq(share, 3, 550),
	       "mr_fs_update: clean arrivals below capacity, everyone told 300 + 500 / 2");
	mr_fs_update(&d, dem, ce, dem, 3, share);
	tap_ok(d.estimate == 469 && all_eq(share, 3, 269),
	       "mr_fs_update: 10%% CE lowers the estimate to 15/16 of the arrivals (469), level 269");
	mr_fs_update(&d, dem, clean, dem, 1, &one);
	tap_ok(one == d.estimate && d.estimate == 500,
	       "mr_fs_update: one connection is told the (recovering) estimate (%u)", one);
	{
		const u32 rate[2] = { 300, 0 }, mark[2] = { 100, 0 };
		const u32 want[2] = { 100, 200 };

		mr_fs_init(&d, 1000);
		mr_fs_update(&d, rate, mark, want, 2, share);
		tap_ok(d.estimate == 469 && all_eq(share, 2, 284),
		       "mr_fs_update: the estimate counts max(rate, demand) (300 + 200 -> 469), the level the demands (200 + 169 / 2 = %u)",
		       share[0]);
	}
}

/*
 * The demand behind a receive meter: the first rate as is, then smoothed
 * over calls with periods that saw nothing included, and dropped after
 * MR_FS_HOLD empty calls.
 */
static void test_demand(void)
{
	struct ep *e = ep_new(NULL, 1, 100, 0);
	u32 i, ok = 1, lo = ~0u, hi = 0, sum = 0;

	meter(e, 800, 0);
	tap_ok(mr_conn_rx_rate(&e->c, e->now, NULL) == 800 &&
	       e->c.rx_demand == 800, "a new sender's demand is its first rate");
	for (i = 1; i < MR_FS_HOLD; i++) {
		e->now += 1 * MS;
		if (mr_conn_rx_rate(&e->c, e->now, NULL) ||
		    e->c.rx_demand != 800)
			ok = 0;
	}
	tap_ok(ok, "it stands, unchanged, through %u empty periods",
	       MR_FS_HOLD - 1);
	e->now += 1 * MS;
	mr_conn_rx_rate(&e->c, e->now, NULL);
	tap_ok(!e->c.rx_demand && e->c.rx_quiet == MR_FS_HOLD,
	       "and is dropped at the %uth (its spacing, 1 ms / 1000, is long past)",
	       MR_FS_HOLD);

	/*
	 * 400 kB every 5 periods of 1 ms: each reading with arrivals spans
	 * the 5 ms since the last one: 640 Mbit/s, not 3200 in one period
	 */
	for (i = 0; i < 100; i++) {
		e->now += 1 * MS;
		if (i % 5 == 0) {
			e->c.rx_meter_bytes += 400000;
			e->c.rx_meter_pkts += 1;
		}
		mr_conn_rx_rate(&e->c, e->now, NULL);
		if (i >= 50) {
			lo = e->c.rx_demand < lo ? e->c.rx_demand : lo;
			hi = e->c.rx_demand > hi ? e->c.rx_demand : hi;
			sum += e->c.rx_demand;
		}
	}
	tap_ok(lo >= 600 && hi <= 680 && e->c.rx_gap == 5 * MS,
	       "arrivals in one period of 5: never inactive, at the true rate (%u..%u, mean %u of 640; spacing %u us)",
	       lo, hi, sum / 50, e->c.rx_gap / 1000);
	/* it stops: gone after 4 of its spacings (20 ms), not 8 periods */
	for (i = 0; e->c.rx_demand && i < 100; i++) {
		e->now += 1 * MS;
		mr_conn_rx_rate(&e->c, e->now, NULL);
	}
	tap_ok(!e->c.rx_demand && i >= 15 && i <= 20,
	       "when it stops, it is dropped after %u x its spacing (%u ms)",
	       MR_FS_HOLD_GAPS, i);
	ep_free(e);
}

/*
 * A PROBE from the peer on path 0, its @n-th packet there: with SYN in
 * @flags, its announcement. @ce: it arrives CE-marked.
 */
static int rx_probe(struct ep *e, u32 flags, u32 n, int ce)
{
	struct mr_hdr h;

	memset(&h, 0, sizeof(h));
	h.opcode = MR_OP_PROBE;
	h.flags = (u16)(MR_F_ACKREQ | flags);
	h.epoch = e->peer_epoch;
	h.syn_dsn = e->peer_epoch;
	h.cookie = EP_COOKIE;
	h.psn = e->peer_epoch + n;
	h.tsval = (u32)e->now;
	return ep_rx(e, &h, ce);
}

/* The peer's announcement, its first packet. */
static int rx_announce(struct ep *e, u32 flags)
{
	return rx_probe(e, flags, 0, 0);
}

/* Sender: one announcement ahead of the first data, in the control class. */
static void test_announce_tx(void)
{
	struct mr_conn_cfg cfg;
	struct mr_ack a;
	struct mr_ack_path *ap;
	struct mr_hdr h;
	struct ep *e;
	u32 from, path, psn, tsval;
	int pi;

	mr_conn_cfg_default(&cfg);
	tap_ok(cfg.announce == 0, "the engine's default: no announcement");
	cfg.announce = 2;
	tap_ok(mr_conn_cfg_check(&cfg) == -1, "announce 2 is refused");
	cfg.announce = 1;
	e = ep_new(&cfg, 0x1000, 100, 0);
	ep_qp(e, 0, NULL);
	ep_post(e, 0, MR_WR_WRITE, 8192, 1);
	tap_ok(ep_tx(e) == 9, "mr_conn_tx() counts the announcement among the packets it sent");
	tap_ok(e->ntx == 9 && e->tx[0].h.opcode == MR_OP_PROBE &&
	       e->tx[0].h.flags == (MR_F_SYN | MR_F_ACKREQ) && e->tx[0].ctrl &&
	       e->tx[1].h.opcode == MR_OP_WRITE && !e->tx[1].ctrl &&
	       e->c.stats[MR_ST_TX_ANNOUNCE] == 1 &&
	       !e->c.stats[MR_ST_TX_PROBES],
	       "the first data is preceded by a PROBE with SYN and ACKREQ, in the control class; the data is not (%u packets)",
	       e->ntx);
	path = e->tx[0].path;
	psn = e->tx[0].h.psn;
	tsval = e->tx[0].h.tsval;
	from = e->ntx;
	ep_post(e, 0, MR_WR_WRITE, 4096, 2);
	ep_tx(e);
	tap_ok(e->ntx > from && ep_count(e, from, MR_OP_PROBE) == 0 &&
	       e->c.stats[MR_ST_TX_ANNOUNCE] == 1,
	       "once per epoch: later data goes without one");

	/* Its acknowledgement alone is no RTT sample... */
	e->now += 3000;
	ep_ack_init(e, &a);
	ap = ep_ack_path(&a, path, e->c.path[path].una);
	ep_ack_set(ap, psn);
	ap->tsecr = tsval;
	ep_rx_ack(e, &a);
	tap_ok(!e->c.path[path].srtt && !e->c.path[path].ann &&
	       e->c.path[path].una == psn + 1,
	       "the announcement's ACK alone releases its slot but is no RTT sample (srtt %u)",
	       e->c.path[path].srtt);
	/* ...the data's is. */
	e->now += 20000;
	ep_ack_init(e, &a);
	ep_ack_sent(e, &a, e->tx[1].path, 1, e->tx[1].h.tsval);
	ep_rx_ack(e, &a);
	tap_ok(e->c.path[e->tx[1].path].srtt == 23000,
	       "the data's ACK is (srtt %u)", e->c.path[e->tx[1].path].srtt);

	/* A RESET naming our epoch: the peer lost us, announce again. */
	memset(&h, 0, sizeof(h));
	h.opcode = MR_OP_RESET;
	h.epoch = 0xbeef0001;
	h.reset_epoch = e->c.epoch;
	h.cookie = 0xbeef0001beef0001ull;
	ep_rx(e, &h, 0);
	from = e->ntx;
	ep_tx(e);
	pi = ep_last(e, MR_OP_PROBE);
	tap_ok(pi == (int)from && e->tx[pi].ctrl &&
	       (e->tx[pi].h.flags & MR_F_SYN) &&
	       e->tx[pi].h.cookie == 0xbeef0001beef0001ull &&
	       e->c.stats[MR_ST_TX_ANNOUNCE] == 2,
	       "after a RESET naming our epoch, the resent data is announced again");
	ep_free(e);

	e = ep_new(NULL, 0x1000, 100, 0);
	ep_qp(e, 0, NULL);
	ep_post(e, 0, MR_WR_WRITE, 8192, 1);
	ep_tx(e);
	tap_ok(e->ntx == 8 && !ep_count(e, 0, MR_OP_PROBE) &&
	       !e->c.stats[MR_ST_TX_ANNOUNCE],
	       "with announce 0, the data goes alone");
	ep_free(e);
}

/* Receiver: an announced sender counts at once, wanting everything. */
static void test_announce_rx(void)
{
	struct ep *e = ep_new(NULL, 1, 100, 0);
	struct ep *f[4];
	struct mr_conn *c[4];
	struct mr_fs_dev d;
	u32 demand[4], share[4], i, ok;

	rx_announce(e, MR_F_SYN);
	tap_ok(e->c.rx_epoch == 100 && e->c.rx_demand == MR_FS_DEMAND_NEW &&
	       e->c.fs_new && e->c.stats[MR_ST_RX_ANNOUNCE] == 1,
	       "a PROBE with SYN from a silent sender: demand 'new', the caller told to reshare");
	e->c.fs_new = 0;
	e->now += 100;
	rx_announce(e, MR_F_SYN);
	tap_ok(!e->c.fs_new && e->c.stats[MR_ST_RX_ANNOUNCE] == 1,
	       "a second one from an active sender changes nothing");
	rx_probe(e, MR_F_SYN, 2, 1);
	tap_ok(!e->c.rx_meter_ce && !e->c.rpath[0].ce_cnt &&
	       e->c.rx_meter_pkts == 3,
	       "CE on a PROBE with SYN counts neither in the fair share's meter nor in the path's echo");
	rx_probe(e, 0, 3, 1);
	tap_ok(e->c.rx_meter_ce == 1 && e->c.rpath[0].ce_cnt == 1,
	       "CE on a PROBE without SYN counts in both");

	/* the demand through the periods that follow */
	mr_conn_rx_rate(&e->c, e->now, NULL);
	tap_ok(e->c.rx_demand == MR_FS_DEMAND_NEW,
	       "the period of the announcement keeps it");
	e->c.rx_meter_start = e->now - 1 * MS;
	mr_conn_rx_rate(&e->c, e->now, NULL);
	tap_ok(e->c.rx_demand == MR_FS_DEMAND_NEW && e->c.rx_quiet == 1,
	       "so does a period without arrivals");
	meter(e, 300, 0);
	e->c.rx_demand = MR_FS_DEMAND_NEW;
	mr_conn_rx_rate(&e->c, e->now, NULL);
	tap_ok(e->c.rx_demand == 300,
	       "the first period with arrivals sets the measured rate (%u)",
	       e->c.rx_demand);
	e->c.rx_demand = MR_FS_DEMAND_NEW;
	ok = 1;
	for (i = 1; i < MR_FS_HOLD; i++) {
		e->c.rx_meter_start = e->now - 1 * MS;
		mr_conn_rx_rate(&e->c, e->now, NULL);
		ok &= e->c.rx_demand == MR_FS_DEMAND_NEW;
	}
	e->c.rx_meter_start = e->now - 1 * MS;
	mr_conn_rx_rate(&e->c, e->now, NULL);
	tap_ok(ok && !e->c.rx_demand,
	       "an announced sender that sends nothing is dropped after %u empty periods",
	       MR_FS_HOLD);
	e->now += 100;
	rx_announce(e, 0);
	tap_ok(!e->c.rx_demand && !e->c.fs_new &&
	       e->c.stats[MR_ST_RX_ANNOUNCE] == 1,
	       "a PROBE without SYN (a path probe) is no announcement");
	ep_free(e);

	/* the level over announced senders */
	mr_fs_init(&d, 1000);
	{
		const u32 n4[4] = { MR_FS_DEMAND_NEW, MR_FS_DEMAND_NEW,
				    MR_FS_DEMAND_NEW, MR_FS_DEMAND_NEW };
		const u32 mix[4] = { MR_FS_DEMAND_NEW, 100, MR_FS_DEMAND_NEW,
				     MR_FS_DEMAND_NEW };

		mr_fs_share(&d, n4, 4, share);
		tap_ok(all_eq(share, 4, 250), "4 announced senders: 250 each");
		mr_fs_share(&d, mix, 4, share);
		tap_ok(all_eq(share, 4, 300),
		       "next to a sender of 100, 3 announced ones share the rest: 300 (got %u)",
		       share[0]);
	}
	{
		const u32 rate[2] = { 300, 200 }, mark[2] = { 100, 0 };
		const u32 want[2] = { MR_FS_DEMAND_NEW, 200 };

		mr_fs_update(&d, rate, mark, want, 2, share);
		tap_ok(d.estimate == 469,
		       "the estimate counts an announced sender's rate, not its demand (300 + 200 -> %u)",
		       d.estimate);
	}

	/* a reshare between periods: hints set, pushed, fs_new cleared */
	mr_fs_init(&d, 1000);
	for (i = 0; i < 4; i++) {
		f[i] = ep_new(NULL, 1 + i, 100 + i, i);
		c[i] = &f[i]->c;
		if (i < 2)
			rx_announce(f[i], MR_F_SYN);
	}
	mr_conn_rx_flush(c[0], f[0]->now);
	mr_conn_rx_flush(c[1], f[1]->now);
	mr_fs_reshare(&d, c, 4, demand, share);
	tap_ok(c[0]->hint_out == 500 && c[1]->hint_out == 500 &&
	       !c[0]->fs_new && !c[1]->fs_new && c[0]->ack_now &&
	       c[1]->ack_now && !c[2]->ack_now && !c[3]->ack_now,
	       "two announced senders of four connections: 500 each, an ACK due to each; none to the silent ones");
	mr_conn_rx_flush(c[0], f[0]->now);
	tap_ok(f[0]->tx[f[0]->ntx - 1].h.opcode == MR_OP_ACK &&
	       f[0]->tx[f[0]->ntx - 1].ack.rate_hint == 500 &&
	       c[0]->hint_sent == 500 && !c[0]->ack_now,
	       "the ACK carries the new share");
	for (i = 0; i < 4; i++)
		ep_free(f[i]);
}

/* A data segment of @len bytes from the peer, its @n-th on path 0. */
static void rx_seg(struct ep *e, u32 n, u32 len)
{
	struct mr_hdr h;

	ep_hdr_req(e, &h, MR_OP_WRITE, 0, 0x200 + n, 0, 100 + n, 100 + n,
		   len, 0, len);
	if (n)
		h.flags = 0;
	ep_rx(e, &h, 0);
}

/*
 * A sender far below a packet per period (one of many, or a slow one):
 * the fair share still sees it, at its rate, for as long as it sends.
 */
static void test_slow_sender(void)
{
	struct ep *e = ep_new(NULL, 1, 100, 0);
	u32 n, k, left = 0, lo = ~0u, hi = 0;
	u64 quiet;

	ep_qp(e, 0, NULL);
	/* 1 KiB every 1 ms (8.4 Mbit/s with headers), read every 100 us */
	for (n = 0; n < 40; n++) {
		rx_seg(e, n, 1024);
		for (k = 0; k < 10; k++) {
			e->now += 100000;
			mr_conn_rx_rate(&e->c, e->now, NULL);
			left += !e->c.rx_demand;
			if (n >= 20 && e->c.rx_demand < lo)
				lo = e->c.rx_demand;
			if (n >= 20 && e->c.rx_demand > hi)
				hi = e->c.rx_demand;
		}
	}
	tap_ok(left <= MR_FS_HOLD - 1,
	       "a sender with a packet every 10 periods drops out of the fair share only before its second (%u periods out)",
	       left);
	tap_ok(lo >= 4 && hi <= 16,
	       "its demand follows its rate, 8.4 Mbit/s (%u to %u over the last 20 ms)",
	       lo, hi);
	/* then it stops: gone 4 of its spacings after its last packet */
	quiet = e->now;
	while (e->c.rx_demand && e->now - quiet < 1000 * MS) {
		e->now += 100000;
		mr_conn_rx_rate(&e->c, e->now, NULL);
	}
	quiet = e->now - quiet;
	tap_ok(!e->c.rx_demand && quiet >= 2 * MS && quiet <= 4 * MS,
	       "when it stops, it leaves %u of its spacings after its last packet (%llu us after the last reading)",
	       MR_FS_HOLD_GAPS,
	       (unsigned long long)quiet / 1000);
	ep_free(e);
}

/*
 * The active set: a connection that comes back after runs it was not part
 * of is measured from the device's last run, and told the current level.
 */
static void test_join(void)
{
	struct ep *e = ep_new(NULL, 1, 100, 0);
	struct mr_fs_dev d;
	u32 rate, i;

	ep_qp(e, 0, NULL);
	mr_fs_init(&d, 1000);
	rx_seg(e, 0, 1024);
	for (i = 0; i < 1000 && (!i || e->c.rx_demand); i++) {
		e->now += 100000;
		mr_conn_rx_rate(&e->c, e->now, NULL);
	}
	tap_ok(!e->c.rx_demand && e->c.rx_quiet == MR_FS_HOLD,
	       "a sender that went quiet loses its demand: it leaves the set (after %u runs)",
	       i);
	/* other connections' runs, far later: the level moved */
	{
		const u32 r2[2] = { 300, 300 }, c2[2] = { 0, 0 };
		const u32 d2[2] = { 300, 300 };
		u32 s2[2];

		e->now += 50 * MS;
		mr_fs_update(&d, r2, c2, d2, 2, s2);
		tap_ok(d.level == s2[0] && d.level == 500,
		       "a run keeps its level for those that join (%u)", d.level);
	}
	rx_seg(e, 1, 1024);
	e->c.ack_now = 0;
	mr_fs_join(&d, &e->c, e->now - 20000);
	tap_ok(e->c.rx_meter_start == e->now - 20000 && e->c.hint_out == 500 &&
	       e->c.rx_meter_pkts == 1,
	       "joining: its meter starts at the last run, its arrival still counted, the level granted");
	e->now += 80000;
	rate = mr_conn_rx_rate(&e->c, e->now, NULL);
	tap_ok(rate == (1024 + 60) * 8000 / 100000 &&
	       e->c.rx_demand == rate,
	       "its first run measures over one period, not since it left (%u Mbit/s)",
	       rate);
	mr_fs_join(&d, &e->c, e->now - 5 * MS);
	tap_ok(e->c.rx_meter_start == e->now,
	       "a meter never restarts before its last reading");
	ep_free(e);
}

/* A share that fell well below the last one sent goes out at once. */
static void test_hint_push(void)
{
	struct ep *e = ep_new(NULL, 1, 100, 0);
	struct mr_hdr h;

	mr_conn_set_hint(&e->c, 800);
	tap_ok(!e->c.ack_now, "no peer epoch yet: nothing to send a hint to");
	ep_hdr_nop(e, &h, 0, 100, 100);
	ep_rx(e, &h, 0);
	e->c.ack_now = 0;
	mr_conn_set_hint(&e->c, 800);
	tap_ok(e->c.ack_now, "the first share is sent at once");
	mr_conn_rx_flush(&e->c, e->now);
	tap_ok(e->c.hint_sent == 800 && !e->c.ack_now,
	       "and remembered as sent (%u)", e->c.hint_sent);
	mr_conn_set_hint(&e->c, 641);
	tap_ok(!e->c.ack_now, "641 (1.25 x 641 > 800): waits for the next ACK");
	mr_conn_set_hint(&e->c, 639);
	tap_ok(e->c.ack_now, "639 (1.25 x 639 < 800): sent at once");
	mr_conn_rx_flush(&e->c, e->now);
	mr_conn_set_hint(&e->c, 5000);
	tap_ok(!e->c.ack_now && e->c.hint_sent == 639,
	       "a rise waits for the next ACK");
	ep_free(e);
}

int main(void)
{
	tap_start();
	test_level();
	test_demand();
	test_level_random();
	test_level_large();
	test_slow_sender();
	test_join();
	test_device();
	test_update();
	test_announce_tx();
	test_announce_rx();
	test_hint_push();
	return tap_done();
}
