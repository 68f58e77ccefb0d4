// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The end of a segment in the connection's segment table: once the
 * receiver has processed it (a transmission of it acknowledged on its
 * path, or the connection's cumulative DSN past it), its entry is freed,
 * the oldest unfinished DSN (dsn_una) moves on, and its QP is told.
 *
 * The connection (conn.c) and the paths (path.c) release segments here;
 * the only file called is the message layer (msg.c).
 */
#include "internal.h"

void mr_seg_release(struct mr_conn *c, struct mr_seg *s, u64 now)
{
	if (s->state == MR_SEGS_QUEUED)
		c->rtx_cnt--;
	if (s->qp && s->kind != MR_SEG_NOP)
		mr_qp_seg_acked(s->qp, s, now);
	s->state = MR_SEGS_FREE;
	s->qp = NULL;
	while (c->dsn_una != c->dsn_nxt && !mr_seg_of(c, c->dsn_una))
		c->dsn_una++;
}
