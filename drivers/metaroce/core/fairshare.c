// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Receiver fair share: how much of its inbound capacity a receiver grants
 * each sender, carried as the rate hint of every ACK.
 *
 * The grant is the max-min "water level" L over the active senders: the
 * level at which the senders that want less than L take what they want and
 * every other sender gets L, filling the capacity exactly. Every sender is
 * told L (a sender below it may grow up to it). Capacity is the configured
 * link rate, lowered while arriving traffic carries CE marks (the
 * bottleneck is then upstream of us, and the arrival rate is what it
 * passes) and raised again additively once the marks stop.
 */
#include "internal.h"

/* Sift a[i] down the max-heap of a[0..n). */
static void mr_heap_sift(u32 *a, u32 i, u32 n)
{
	for (;;) {
		u32 l = 2 * i + 1, m = i, t;

		if (l < n && a[l] > a[m])
			m = l;
		if (l + 1 < n && a[l + 1] > a[m])
			m = l + 1;
		if (m == i)
			return;
		t = a[i];
		a[i] = a[m];
		a[m] = t;
		i = m;
	}
}

/* Sort a[0..n) in ascending order, in place: heap sort, O(n log n). */
static void mr_sort_u32(u32 *a, u32 n)
{
	u32 i, t;

	for (i = n / 2; i-- > 0;)
		mr_heap_sift(a, i, n);
	for (i = n; i-- > 1;) {
		t = a[0];
		a[0] = a[i];
		a[i] = t;
		mr_heap_sift(a, 0, i);
	}
}

/*
 * The water level is found from the demands in ascending order (sorted in
 * @share, which is scratch until the end): the smallest demands are
 * satisfied one by one while each, with the 1/8 margin, stays below the
 * level the rest would get; the first that does not is held at the level,
 * and so is every larger one. Taking them one at a time raises the level
 * after each, and a demand that passes this test passes it for every
 * later level too, so this is the fixed point of marking every demand
 * below the level and recomputing it until nothing changes, at O(n log n)
 * instead of up to O(n^2).
 */
void mr_fairshare(u32 capacity, const u32 *demand, u32 n, u32 *share)
{
	u64 remaining = capacity;
	u32 i, k, active, level, top;

	for (i = 0; i < n; i++)
		share[i] = demand[i];
	mr_sort_u32(share, n);
	for (i = 0; i < n && !share[i]; i++)
		;
	k = n - i;
	active = k;
	top = n ? share[n - 1] : 0;
	for (; i < n; i++) {
		level = (u32)mr_div64(remaining, k);
		/* 1/8 margin: a sender held at the level is not "below" */
		if ((u64)share[i] + share[i] / 8 >= level)
			break;
		remaining -= share[i];
		k--;
	}
	if (k) {
		level = (u32)mr_div64(remaining, k);
	} else if (active) {
		/*
		 * Every sender takes less than it could: the largest may grow
		 * by an equal part of the spare capacity, and by at least the
		 * 1/8 margin (the spare always covers it), so that it does not
		 * look held at the level. Telling all of them the whole
		 * capacity would let them all jump at once. top + remaining
		 * is at most the capacity: top is one of the served demands.
		 */
		u64 step = mr_max64(mr_div64(remaining, active), top / 8 + 1);

		level = (u32)(top + mr_min64(step, remaining));
	} else {
		level = capacity;
	}
	for (i = 0; i < n; i++)
		share[i] = mr_max32(level, 1);
}

void mr_fs_init(struct mr_fs_dev *d, u32 capacity_mbps)
{
	d->capacity = capacity_mbps;
	d->estimate = capacity_mbps;
	d->level = capacity_mbps;
	d->ce_thresh = 50;	/* 5% of packets marked */
}

/*
 * The capacity estimate follows what arrived (@total, Mbit/s): a
 * bottleneck upstream passes exactly that. Each connection counts with the
 * larger of its last period's rate and its smoothed demand, so that a
 * period without its packets does not read as a collapse and a rise
 * counts at once.
 */
static void mr_fs_estimate(struct mr_fs_dev *d, u64 total, int marked)
{
	if (marked && total) {
		u64 est = total - total / 16;

		d->estimate = (u32)mr_min64(mr_min64(est, d->estimate),
					    d->capacity);
		d->estimate = mr_max32(d->estimate, d->capacity / 64);
	} else {
		d->estimate = mr_min32(d->estimate +
				       mr_max32(d->capacity / 32, 1),
				       d->capacity);
	}
}

void mr_fs_share(struct mr_fs_dev *d, const u32 *demand, u32 n, u32 *share)
{
	mr_fairshare(d->estimate, demand, n, share);
	if (n == 1)
		share[0] = d->estimate;
	/* What a connection that joins the active set is told. */
	d->level = n ? share[0] : d->estimate;
}

/*
 * What one connection adds to the arrivals behind the estimate, and
 * whether its CE fraction means congestion. An announced sender's demand
 * is not a rate yet.
 */
static void mr_fs_count(const struct mr_fs_dev *d, u32 rate, u32 ce,
			u32 demand, u64 *total, int *marked)
{
	*total += demand == MR_FS_DEMAND_NEW ? rate : mr_max32(rate, demand);
	if (ce >= d->ce_thresh)
		*marked = 1;
}

void mr_fs_update(struct mr_fs_dev *d, const u32 *rate, const u32 *ce,
		  const u32 *demand, u32 n, u32 *share)
{
	u64 total = 0;
	u32 i;
	int marked = 0;

	for (i = 0; i < n; i++)
		mr_fs_count(d, rate[i], ce[i], demand[i], &total, &marked);
	mr_fs_estimate(d, total, marked);
	mr_fs_share(d, demand, n, share);
}

void mr_fs_run(struct mr_fs_dev *d, struct mr_conn **conns, u32 n,
	       u32 *demand, u32 *share, u64 now)
{
	u64 total = 0;
	u32 i, ce;
	int marked = 0;

	for (i = 0; i < n; i++) {
		u32 rate = mr_conn_rx_rate(conns[i], now, &ce);

		demand[i] = conns[i]->rx_demand;
		conns[i]->fs_new = 0;
		mr_fs_count(d, rate, ce, demand[i], &total, &marked);
	}
	mr_fs_estimate(d, total, marked);
	mr_fs_share(d, demand, n, share);
	for (i = 0; i < n; i++)
		mr_conn_set_hint(conns[i], share[i]);
}

void mr_fs_reshare(struct mr_fs_dev *d, struct mr_conn **conns, u32 n,
		   u32 *demand, u32 *share)
{
	u32 i;

	for (i = 0; i < n; i++) {
		demand[i] = conns[i]->rx_demand;
		conns[i]->fs_new = 0;
	}
	mr_fs_share(d, demand, n, share);
	for (i = 0; i < n; i++)
		mr_conn_set_hint(conns[i], share[i]);
}

void mr_fs_join(const struct mr_fs_dev *d, struct mr_conn *c, u64 since)
{
	if (since > c->rx_meter_start)
		c->rx_meter_start = since;
	mr_conn_set_hint(c, d->level);
}
