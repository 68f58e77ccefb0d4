// SPDX-License-Identifier: GPL-2.0-only
/*
 * The device's side of the receiver-driven fair share (protocol.rst 7.20,
 * the computation itself in core/fairshare.c): the set of active senders,
 * which peers join and leave, and the scratch a run of the share works in.
 * napi.c runs the share (mr_fs_tick()); peer.c makes room for a new peer
 * and takes a retired one out; sysfs.c and port.c set its capacity.
 * Calls none of them.
 */

#include <linux/log2.h>
#include <linux/netdevice.h>
#include <linux/slab.h>

#include "metaroce.h"

/* The fair share's first scratch: peers it has room for. */
#define MR_FS_SCRATCH_MIN	16

/*
 * The fair share's active set (protocol.rst 7.20): a peer joins at the
 * first arrival the engine counted while it was out of the set (peer->lock
 * held), and learns the current level; a run lets it go once its demand
 * is gone. A run's cost follows the active senders, not the peers.
 */
void mr_fs_join_peer(struct mr_dev *dev, struct mr_peer *peer)
{
	struct mr_conn *c = &peer->conn;

	if (!peer->fs_on && !peer->dead && (c->rx_meter_pkts || c->fs_new)) {
		spin_lock(&dev->fs_lock);
		list_add_tail(&peer->fs_node, &dev->fs_active);
		dev->fs_nactive++;
		spin_unlock(&dev->fs_lock);
		peer->fs_on = true;
		mr_fs_join(&dev->fs, c, dev->fs_full_at);
	}
	/* A sender announced itself: one reshare before the next period. */
	if (c->fs_new) {
		c->fs_new = 0;
		if (!dev->fs_kick_at)
			dev->fs_kick_at = max(dev->fs_last + MR_FS_KICK_NS,
					      ktime_get_ns());
	}
}

void mr_fs_leave(struct mr_peer *peer)
{
	struct mr_dev *dev = peer->dev;

	lockdep_assert_held(&peer->lock);
	if (!peer->fs_on)
		return;
	spin_lock(&dev->fs_lock);
	list_del_init(&peer->fs_node);
	dev->fs_nactive--;
	spin_unlock(&dev->fs_lock);
	peer->fs_on = false;
}

static struct mr_fs_scratch *mr_fs_scratch_alloc(u32 cap)
{
	struct mr_fs_scratch *s;

	s = kvzalloc(sizeof(*s) + (size_t)cap *
		     (sizeof(*s->peer) + 4 * sizeof(u32)), GFP_KERNEL);
	if (!s)
		return NULL;
	s->cap = cap;
	s->peer = (struct mr_peer **)(s + 1);
	s->rate = (u32 *)(s->peer + cap);
	s->demand = s->rate + cap;
	s->ce = s->demand + cap;
	s->share = s->ce + cap;
	return s;
}

/*
 * Room for @peers peers in the fair share's scratch, before a new peer is
 * hashed: the active ones, which NAPI lists there, are never more.
 */
int mr_fs_reserve(struct mr_dev *dev, u32 peers)
{
	struct mr_fs_scratch *old, *s;

	lockdep_assert_held(&dev->peers_lock);
	old = rcu_dereference_protected(dev->fs_scratch,
					lockdep_is_held(&dev->peers_lock));
	if (old->cap >= peers)
		return 0;
	s = mr_fs_scratch_alloc(roundup_pow_of_two(peers));
	if (!s)
		return -ENOMEM;
	rcu_assign_pointer(dev->fs_scratch, s);
	/* NAPI polls that may still use the old one are done after this. */
	synchronize_net();
	kvfree(old);
	return 0;
}

int mr_fair_init(struct mr_dev *dev)
{
	struct mr_fs_scratch *s = mr_fs_scratch_alloc(MR_FS_SCRATCH_MIN);

	if (!s)
		return -ENOMEM;
	spin_lock_init(&dev->fs_lock);
	INIT_LIST_HEAD(&dev->fs_active);
	RCU_INIT_POINTER(dev->fs_scratch, s);
	return 0;
}

/*
 * The capacity the fair share divides: rx_capacity_mbps when it is set,
 * else the netdev's link speed when its driver reports one, else
 * METAROCE_DEFAULT_RX_MBPS. Called when either changes (sysfs.c, and
 * port.c on the netdev's events); NAPI's next run of the share takes it
 * up, its capacity estimate starting there.
 */
void mr_fs_capacity(struct mr_dev *dev)
{
	u32 cap = READ_ONCE(dev->rx_capacity);

	if (!cap)
		cap = READ_ONCE(dev->port.link_mbps);
	if (!cap)
		cap = METAROCE_DEFAULT_RX_MBPS;
	WRITE_ONCE(dev->fs_capacity, cap);
}

/* Once every peer is gone and no poll runs the share. */
void mr_fair_destroy(struct mr_dev *dev)
{
	kvfree(rcu_dereference_protected(dev->fs_scratch, true));
	RCU_INIT_POINTER(dev->fs_scratch, NULL);
}
