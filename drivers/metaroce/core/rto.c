// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Retransmit timeouts: a path's RTO (its round-trip estimate, the floors,
 * the cap by the best live path, the backoff of a series), the pace of a
 * dead path's probes, and the connection's RTO that the message layer
 * paces its ACK_REQs by (protocol.rst, 7.5, 7.9 and 7.15).
 *
 * Arithmetic on the paths' state: nothing here changes it, and no other
 * file of the engine is called, so the paths (path.c) and the QPs (msg.c)
 * both ask here.
 */
#include "internal.h"

/*
 * Twice the smallest retransmit timeout any live path has measured. A
 * path's own estimate goes stale while it carries nothing (a window of a
 * packet or two uses the best path only), and the packets left on it then
 * wait out a timeout sized for a queue long gone. A path that really is
 * slower shows it by a spurious series, and its floor then holds.
 */
u64 mr_rto_cap(const struct mr_conn *c)
{
	u64 best = 0, r;
	u32 i;

	for (i = 0; i < c->npaths; i++) {
		const struct mr_path *q = &c->path[i];

		if (!q->srtt || q->state == MR_PATH_DEAD)
			continue;
		r = (u64)q->srtt + 4 * (u64)q->rttvar;
		if (!best || r < best)
			best = r;
	}
	return best ? 2 * best : MR_U64_MAX;
}

/* A path's RTO without backoff. */
u64 mr_path_rto_base(const struct mr_conn *c, const struct mr_path *p, u64 cap)
{
	u64 rto;

	if (!p->srtt)
		rto = c->cfg.rto_init_ns;
	else
		rto = (u64)p->srtt + 4 * (u64)p->rttvar;
	rto = mr_min64(rto, cap);
	return mr_max64(rto, mr_max32(c->cfg.rto_min_ns, p->rto_floor));
}

/*
 * How long a dead path's probe may go unanswered, and how often a dead path
 * is probed: probe_ns, or the smallest round trip of the live paths if that
 * is longer (at most rto_max). A path's round trip is its srtt, or its RTO
 * floor if that is longer: a stall stops the samples, and the floor is
 * what its late packets really took. No answer can come back sooner; while
 * the hosts were starved and round trips took seconds, a fixed probe_ns
 * sent dozens of probes per dead path before the first answer could
 * arrive.
 */
u64 mr_probe_pace(const struct mr_conn *c)
{
	u64 best = MR_U64_MAX;
	u32 i;

	for (i = 0; i < c->npaths; i++) {
		const struct mr_path *q = &c->path[i];

		if (q->srtt && q->state != MR_PATH_DEAD)
			best = mr_min64(best, mr_max32(q->srtt, q->rto_floor));
	}
	if (best == MR_U64_MAX)
		return c->cfg.probe_ns;
	best = mr_min64(best, c->cfg.rto_max_ns);
	return mr_max64(best, c->cfg.probe_ns);
}

u32 mr_path_rto_cap(const struct mr_conn *c, const struct mr_path *p, u64 cap)
{
	u64 rto;

	/* A dead path's outstanding packet is a probe: it has its own pace. */
	if (p->state == MR_PATH_DEAD)
		return (u32)mr_probe_pace(c);
	rto = mr_path_rto_base(c, p, cap) <<
	      mr_min32(p->timeouts, MR_RTO_BACKOFF_MAX);
	return (u32)mr_min64(rto, c->cfg.rto_max_ns);
}

u32 mr_path_rto(const struct mr_conn *c, const struct mr_path *p)
{
	return mr_path_rto_cap(c, p, mr_rto_cap(c));
}

/*
 * How long an answer may take on the connection's best live path: its
 * retransmit timeout without backoff (rto_init while no path has
 * measured a round trip), at most rto_max.
 */
u64 mr_conn_rto(const struct mr_conn *c)
{
	u64 best = MR_U64_MAX, cap = mr_rto_cap(c);
	u32 i;

	for (i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];

		if (mr_path_usable(p))
			best = mr_min64(best, mr_path_rto_base(c, p, cap));
	}
	if (best == MR_U64_MAX)
		best = c->cfg.rto_init_ns;
	return mr_min64(best, c->cfg.rto_max_ns);
}
