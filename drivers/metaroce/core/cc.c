// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Congestion control of a connection: one window for all its paths,
 * updated once per round trip of data from the ECN marks of the round
 * (DCTCP-like AIMD), halved by a timeout while a queue builds or by a
 * deep queue that does not mark, and capped by the receiver's fair-share
 * hint (protocol.rst section 9). What it reads of the paths is their round
 * trips; what the window means for each path (its share) is path.c's: the
 * functions here return whether the window changed, and the caller
 * rebalances the paths. Calls no other file of the engine.
 */
#include "internal.h"

/* Connection-level congestion control, once per round trip of data. */
static u32 mr_conn_rtt(const struct mr_conn *c)
{
	u32 i, rtt = 0;

	for (i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];

		if (mr_path_usable(p) && p->srtt && (!rtt || p->srtt < rtt))
			rtt = p->srtt;
	}
	return rtt ? rtt : mr_rtt_floor(c);
}

/*
 * Evidence that a queue is building: on some usable path the smoothed
 * round trip is more than twice its minimum (plus a floor for jitter).
 */
static int mr_conn_queueing(const struct mr_conn *c)
{
	u32 i;

	for (i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];

		if (mr_path_usable(p) && p->srtt && p->min_rtt &&
		    p->srtt > 2 * p->min_rtt + c->cfg.rto_min_ns / 8)
			return 1;
	}
	return 0;
}

/*
 * Packets that must have been acknowledged without a single CE mark before
 * a deep queue is judged not to mark. A queue that marks one packet in four
 * leaves a 2-packet round unmarked more often than not, but 16 packets in a
 * row only once in a hundred.
 */
#define MR_UNMARKED_MIN_PKTS	16

/*
 * A standing queue that does not mark, in front of every path (a host's
 * receive backlog): no CE for MR_UNMARKED_MIN_PKTS packets, and even the
 * fastest usable path's smoothed round trip is over eight times the
 * smallest minimum plus half the minimum RTO.
 */
static int mr_conn_unmarked_queue(const struct mr_conn *c)
{
	u32 i, rtt = 0, base = 0;

	if (c->clean_pkts < MR_UNMARKED_MIN_PKTS)
		return 0;

	for (i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];

		if (!mr_path_usable(p) || !p->srtt || !p->min_rtt)
			continue;
		if (!rtt || p->srtt < rtt)
			rtt = p->srtt;
		if (!base || p->min_rtt < base)
			base = p->min_rtt;
	}
	return rtt && rtt > 8 * (u64)base + c->cfg.rto_min_ns / 2;
}

static u32 mr_hint_cap(const struct mr_conn *c)
{
	/* bytes = Mbit/s * ns / 8000, plus a quarter of headroom */
	u64 cap = mr_div64((u64)c->rate_hint * mr_conn_rtt(c), 8000);

	cap += cap / 4;
	return (u32)mr_min64(cap, c->cfg.max_window);
}

void mr_conn_clamp(struct mr_conn *c)
{
	if (c->rate_hint) {
		u32 cap = mr_max32(mr_hint_cap(c), c->cfg.min_window);

		if (c->wnd > cap)
			c->wnd = cap;
	}
	c->wnd = mr_max32(c->wnd, c->cfg.min_window);
	c->wnd = mr_min32(c->wnd, c->cfg.max_window);
	/* A shrunk window ends its round sooner, not after the old size. */
	if (c->round_target > c->wnd)
		c->round_target = c->wnd;
}

int mr_conn_cc_on_ack(struct mr_conn *c, u32 acked, u32 pkts, u32 ce,
		      u64 now)
{
	u32 f, cut;
	int limited;

	(void)now;
	c->round_acked += acked;
	c->round_pkts += pkts;
	c->round_ce += ce;
	/* pkts counts one ACK block's packets: at most a path's window */
	c->clean_pkts = ce ? 0 : mr_min32(c->clean_pkts + pkts,
					  MR_UNMARKED_MIN_PKTS);
	if (c->round_acked < c->round_target)
		return 0;
	/*
	 * A round is about one round trip: the data in flight when it began.
	 * The window only grows if the sender used at least half of it in
	 * the round (RFC 7661): otherwise an application- or table-limited
	 * sender would grow a window it never tests.
	 */
	limited = c->round_peak >= c->wnd / 2;

	f = c->round_pkts ? mr_min32(c->round_ce, c->round_pkts) * MR_WEIGHT_ONE /
			    c->round_pkts : 0;
	if (f > c->alpha)
		c->alpha += ((f - c->alpha) >> c->cfg.ecn_shift) ?: 1;
	else
		c->alpha -= (c->alpha - f) >> c->cfg.ecn_shift;

	if (c->round_ce) {
		cut = (u32)((u64)c->wnd *
			    mr_max32(c->alpha, MR_CONN_CUT_ALPHA_MIN) / MR_CUT_DIV);
		c->wnd -= cut;
		c->slow_start = 0;
	} else if (mr_conn_unmarked_queue(c)) {
		/* Not one mark, yet a queue many round trips deep: halve. */
		c->wnd /= 2;
		c->slow_start = 0;
	} else if (!limited) {
		/* Not window-limited: keep the window. */
	} else if (c->slow_start) {
		c->wnd += c->round_acked;
	} else if (c->rate_hint && c->wnd < mr_hint_cap(c)) {
		/* Below the receiver's grant: double back up to it. */
		c->wnd = mr_min32(c->wnd * 2, mr_hint_cap(c));
	} else {
		c->wnd += c->cfg.ai_bytes;
	}
	mr_conn_clamp(c);
	c->round_target = c->wnd;
	c->round_peak = c->inflight;
	c->round_cut = 0;
	c->round_acked = 0;
	c->round_pkts = 0;
	c->round_ce = 0;
	return 1;
}

/*
 * A path timed out while a queue is building: the queue overflowed without
 * marks (a host backlog, a switch without ECN) and took a whole tail with
 * it. Halve the window, once per round (the timeouts of one episode on
 * several paths count once), and leave slow start. Other losses, and a
 * timeout without a queue, leave the window alone. Returns 1 if it cut:
 * the caller then rebalances the paths (mr_paths_rebalance()).
 */
int mr_conn_cc_on_timeout(struct mr_conn *c, u64 now)
{
	(void)now;
	if (c->round_cut || !mr_conn_queueing(c))
		return 0;
	c->round_cut = 1;
	c->slow_start = 0;
	c->wnd /= 2;
	mr_conn_clamp(c);
	return 1;
}
