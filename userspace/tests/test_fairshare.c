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

/* A connection whose receive meter saw @mbps (CE share @ce_pm) over 1 ms. */
static void meter(struct ep *e, u32 mbps, u32 ce_pm)
{
	e->c.rx_meter_start = e->now - 1 * MS;
	e->c.rx_meter_bytes = (u64)mbps * 1000000 / 8000;
	e->c.rx_meter_pkts = 1000;
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
	e->c.rx_meter_start = e->now - 1 * MS;
	tap_ok(mr_conn_rx_rate(&e->c, e->now, NULL) == 0 &&
	       e->c.rx_demand == 800 - 800 / MR_FS_GAIN,
	       "a period without arrivals pulls it down by 1/%u (%u)",
	       MR_FS_GAIN, e->c.rx_demand);
	for (i = 2; i < MR_FS_HOLD; i++) {
		e->c.rx_meter_start = e->now - 1 * MS;
		mr_conn_rx_rate(&e->c, e->now, NULL);
		if (!e->c.rx_demand)
			ok = 0;
	}
	tap_ok(ok, "it stays active for %u empty periods", MR_FS_HOLD - 1);
	e->c.rx_meter_start = e->now - 1 * MS;
	mr_conn_rx_rate(&e->c, e->now, NULL);
	tap_ok(!e->c.rx_demand && e->c.rx_quiet == MR_FS_HOLD,
	       "and is dropped at the %uth", MR_FS_HOLD);

	/* 400 kB every 5 periods of 1 ms: 3200 Mbit/s in one, 640 average */
	for (i = 0; i < 100; i++) {
		e->c.rx_meter_start = e->now - 1 * MS;
		if (i % 5 == 0) {
			e->c.rx_meter_bytes = 400000;
			e->c.rx_meter_pkts = 1;
		}
		mr_conn_rx_rate(&e->c, e->now, NULL);
		if (i >= 50) {
			lo = e->c.rx_demand < lo ? e->c.rx_demand : lo;
			hi = e->c.rx_demand > hi ? e->c.rx_demand : hi;
			sum += e->c.rx_demand;
		}
	}
	tap_ok(lo > 0 && hi < 3200 && sum / 50 >= 480 && sum / 50 <= 800,
	       "arrivals in one period of 5: never inactive, about the true rate (%u..%u, mean %u of 640)",
	       lo, hi, sum / 50);
	ep_free(e);
}

int main(void)
{
	tap_start();
	test_level();
	test_demand();
	test_level_random();
	test_device();
	test_update();
	return tap_done();
}
