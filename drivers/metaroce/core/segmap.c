// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Segment maps (struct mr_segmap): exactly which segments of a message
 * have landed, so that a message completes when each of them has, once
 * (protocol.rst, section 7.13). A conforming sender has every segment
 * between a message's first missing one and its last sent one in flight,
 * each with its own DSN inside the receiver's window: a message needs a
 * chunk of the connection's overflow only for segments 64 or more ahead
 * of its first missing one, and all of them together at most
 * MR_DSN_WND / 64 + one or two per such message (MR_SEGX_NR).
 */
#include "internal.h"

#define MR_SEG_LAST	0xffffffffu	/* the last segment, size unknown */

static u64 mr_segmap_win(const struct mr_segmap *m)
{
	return (u64)m->bits[1] << 32 | m->bits[0];
}

static void mr_segmap_set_win(struct mr_segmap *m, u64 w)
{
	m->bits[0] = (u32)w;
	m->bits[1] = (u32)(w >> 32);
}

static u16 mr_segx_alloc(struct mr_conn *c, u32 blk)
{
	u16 id = c->segx_free;

	if (id)
		c->segx_free = c->segx_next[id - 1];
	else if (c->segx_top < MR_SEGX_NR)
		id = ++c->segx_top;
	else
		return 0;
	c->segx_bits[id - 1] = 0;
	c->segx_blk[id - 1] = blk;
	c->segx_next[id - 1] = 0;
	c->segx_used++;
	return id;
}

static void mr_segx_free(struct mr_conn *c, u16 id)
{
	c->segx_next[id - 1] = c->segx_free;
	c->segx_free = id;
	c->segx_used--;
}

/* Forget what @m recorded; its chunks go back to the connection. */
void mr_segmap_reset(struct mr_conn *c, struct mr_segmap *m)
{
	u16 id = m->ext;

	while (id) {
		u16 next = c->segx_next[id - 1];

		mr_segx_free(c, id);
		id = next;
	}
	memset(m, 0, sizeof(*m));
}

/* The chunk of @m for segments 64 * @blk on; a new one if @create. */
static u16 mr_segx_find(struct mr_conn *c, struct mr_segmap *m, u32 blk,
			int create)
{
	u16 id, prev = 0, nid;

	if (m->tail && c->segx_blk[m->tail - 1] <= blk) {
		/* The usual case: in order, at or after the last chunk. */
		if (c->segx_blk[m->tail - 1] == blk)
			return m->tail;
		prev = m->tail;
		id = 0;
	} else {
		for (id = m->ext; id && c->segx_blk[id - 1] < blk;
		     id = c->segx_next[id - 1])
			prev = id;
		if (id && c->segx_blk[id - 1] == blk)
			return id;
	}
	if (!create)
		return 0;
	nid = mr_segx_alloc(c, blk);
	if (!nid)
		return 0;
	c->segx_next[nid - 1] = id;
	if (prev)
		c->segx_next[prev - 1] = nid;
	else
		m->ext = nid;
	if (!id)
		m->tail = nid;
	return nid;
}

/*
 * Set segment @k of @m (at or after lo, before lo + MR_SEG_SPAN); 0, or
 * -1 if it needed a chunk and none was left.
 */
static int mr_segmap_set(struct mr_conn *c, struct mr_segmap *m, u32 k)
{
	u32 d = k - m->lo;
	u16 id;

	if (d < 64) {
		m->bits[d / 32] |= 1u << (d % 32);
		return 0;
	}
	id = mr_segx_find(c, m, k / 64, 1);
	if (!id)
		return -1;
	c->segx_bits[id - 1] |= 1ull << (k % 64);
	return 0;
}

/*
 * Move lo past the segments that landed. The window takes the chunks'
 * segments as it moves over them; a chunk all of whose segments are in
 * the window or before it is freed (every chunk starts after lo).
 */
static void mr_segmap_advance(struct mr_conn *c, struct mr_segmap *m)
{
	u64 w = mr_segmap_win(m);

	while (w & 1) {
		u32 n = ~w ? (u32)__builtin_ctzll(~w) : 64;
		u16 id;

		m->lo += n;
		w = n < 64 ? w >> n : 0;
		for (id = m->ext; id; id = c->segx_next[id - 1]) {
			u32 base = c->segx_blk[id - 1] * 64;
			u64 b = c->segx_bits[id - 1];

			if (base - m->lo >= 64 && base - m->lo < 0x80000000u)
				break;
			w |= mr_seq_lt(base, m->lo) ? b >> (m->lo - base) :
						      b << (base - m->lo);
		}
		while (m->ext && !mr_seq_lt(m->lo,
					    c->segx_blk[m->ext - 1] * 64)) {
			id = c->segx_next[m->ext - 1];
			mr_segx_free(c, m->ext);
			m->ext = id;
		}
		if (!m->ext)
			m->tail = 0;
	}
	mr_segmap_set_win(m, w);
}

/* Segments of a message of @len bytes whose size is known. */
static u32 mr_segmap_nsegs(const struct mr_segmap *m, u32 len)
{
	return len ? (len - 1) / m->size + 1 : 1;
}

/*
 * Segment (@off, @plen) of a message of @len bytes (the decoder checked
 * off + plen <= len, and that only an empty message has an empty
 * segment): 0 if it is new, with its index in *@k (MR_SEG_LAST for the
 * last segment while the size is unknown), or why it is refused:
 * duplicate (it landed already), inconsistent (not cut as the message's
 * segments are, or further ahead than a conforming sender can be, or the
 * connection has no chunk left for it).
 */
int mr_segmap_check(struct mr_conn *c, struct mr_segmap *m, u32 len,
		    u32 off, u32 plen, u32 *k)
{
	u32 d;
	u16 id;

	if (!len) {
		*k = 0;
		return m->lo ? MR_DROP_DUP : 0;
	}
	if (!m->size) {
		u32 last = m->bits[0];

		if (off + plen == len && off) {
			/* The last segment, first: kept aside. */
			if (last)
				return last == off ? MR_DROP_DUP :
						     MR_DROP_INCONSISTENT;
			*k = MR_SEG_LAST;
			return 0;
		}
		if (off % plen || (last && off + plen == len))
			return MR_DROP_INCONSISTENT;
		/* This one tells the size: the last one, if any, is placed. */
		m->size = (u16)plen;
		m->bits[0] = 0;
		if (last && !(last % plen) && len - last <= plen &&
		    last / plen < MR_SEG_SPAN)
			mr_segmap_set(c, m, last / plen);
	}
	if (off % m->size ||
	    (off + plen < len ? plen != m->size : plen > m->size))
		return MR_DROP_INCONSISTENT;
	*k = off / m->size;
	d = *k - m->lo;
	if (mr_seq_lt(*k, m->lo))
		return MR_DROP_DUP;
	if (d >= MR_SEG_SPAN)
		return MR_DROP_INCONSISTENT;
	if (d < 64)
		return (mr_segmap_win(m) >> d) & 1 ? MR_DROP_DUP : 0;
	id = mr_segx_find(c, m, *k / 64, 1);
	if (!id)
		return MR_DROP_INCONSISTENT;
	return (c->segx_bits[id - 1] >> (*k % 64)) & 1 ? MR_DROP_DUP : 0;
}

/*
 * Segment @k (from mr_segmap_check()) at @off of a message of @len bytes
 * landed: returns whether every segment of the message has.
 */
int mr_segmap_land(struct mr_conn *c, struct mr_segmap *m, u32 len,
		   u32 off, u32 k)
{
	if (k == MR_SEG_LAST) {
		m->bits[0] = off;
		return 0;
	}
	if (mr_segmap_set(c, m, k))
		return 0;
	if (k == m->lo)
		mr_segmap_advance(c, m);
	return m->lo >= mr_segmap_nsegs(m, len);
}
