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

void mr_fairshare(u32 capacity, const u32 *demand, u32 n, u32 *share)
{
	u64 remaining = capacity;
	u32 i, k = 0, active, level, top = 0;
	int changed;

	/* share[i] is used as "satisfied" marker until the end. */
	for (i = 0; i < n; i++) {
		share[i] = demand[i] ? 0 : 1;
		if (demand[i])
			k++;
		top = mr_max32(top, demand[i]);
	}
	active = k;
	do {
		changed = 0;
		if (!k)
			break;
		level = (u32)mr_div64(remaining, k);
		for (i = 0; i < n; i++) {
			/* 1/8 margin: a sender held at the level is not "below" */
			if (share[i] || (u64)demand[i] + demand[i] / 8 >= level)
				continue;
			share[i] = 1;
			remaining -= demand[i];
			k--;
			changed = 1;
		}
	} while (changed);
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

void mr_fs_share(const struct mr_fs_dev *d, const u32 *demand, u32 n,
		 u32 *share)
{
	mr_fairshare(d->estimate, demand, n, share);
	if (n == 1)
		share[0] = d->estimate;
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

void mr_fs_reshare(const struct mr_fs_dev *d, struct mr_conn **conns, u32 n,
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
