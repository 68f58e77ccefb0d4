// SPDX-License-Identifier: GPL-2.0-only
/*
 * UD multicast. A multicast GID is an IP multicast address (IPv4-mapped or
 * IPv6); a UD QP attached to it receives every datagram sent to that
 * address's QPN 0xffffff with the QP's Q_Key. The first attachment to a
 * group makes the device's netdev a member of the IP group (IGMP or MLD
 * reports, the link-layer filter), the last detachment leaves it: whether
 * rdma_cm joined for the application or it called ibv_attach_mcast() by
 * itself, the datagrams reach the host.
 *
 * Groups are hashed by address. A group's QPNs are changed by copy: the
 * receive path (NAPI, under RCU) copies a group's QPNs out of a group that
 * never changes under it and takes each QP by number as for unicast.
 */

#include <linux/igmp.h>
#include <linux/inetdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jhash.h>
#include <linux/rtnetlink.h>
#include <linux/udp.h>
#include <net/addrconf.h>
#include <net/ipv6.h>

#include "metaroce.h"
#include "objects.h"

struct mr_mcg {
	struct hlist_node node;		/* in dev->mcgs[], RCU */
	struct rcu_head rcu;
	struct in6_addr addr;
	u32 nqp;
	u32 qpn[];
};

static struct hlist_head *mr_mcg_bucket(struct mr_dev *dev,
					const struct in6_addr *addr)
{
	return &dev->mcgs[hash_32(jhash2((const u32 *)addr, 4, 0),
				  MR_MCG_HASH_BITS)];
}

/* Under RCU or mcast_lock. */
static struct mr_mcg *mr_mcg_find(struct mr_dev *dev,
				  const struct in6_addr *addr)
{
	struct mr_mcg *g;

	hlist_for_each_entry_rcu(g, mr_mcg_bucket(dev, addr), node,
				 lockdep_is_held(&dev->mcast_lock))
		if (ipv6_addr_equal(&g->addr, addr))
			return g;
	return NULL;
}

/*
 * The device's netdev joins (@join) or leaves the IP group of @addr, under
 * RTNL as both families' group calls have wanted on some kernels.
 */
static int mr_mcg_ip(struct mr_dev *dev, const struct in6_addr *addr,
		     bool join)
{
	struct in_device *in_dev;
	int err = 0;

	if (!ipv6_addr_v4mapped(addr) && !IS_ENABLED(CONFIG_IPV6))
		return -EAFNOSUPPORT;
	rtnl_lock();
	if (!ipv6_addr_v4mapped(addr)) {
		if (join)
			err = ipv6_dev_mc_inc(dev->ndev, addr);
		else
			err = ipv6_dev_mc_dec(dev->ndev, addr);
	} else {
		in_dev = __in_dev_get_rtnl(dev->ndev);
		if (!in_dev)
			err = -ENODEV;
		else if (join)
			ip_mc_inc_group(in_dev, addr->s6_addr32[3]);
		else
			ip_mc_dec_group(in_dev, addr->s6_addr32[3]);
	}
	rtnl_unlock();
	return err;
}

/* @old's QPNs, with @qpn added (@add) or taken out, as a new group. */
static struct mr_mcg *mr_mcg_copy(const struct mr_mcg *old,
				  const struct in6_addr *addr, u32 qpn,
				  bool add)
{
	u32 n = old ? old->nqp : 0, i, k = 0;
	struct mr_mcg *g;

	g = kzalloc(struct_size(g, qpn, add ? n + 1 : n - 1),
		    GFP_KERNEL_ACCOUNT);
	if (!g)
		return NULL;
	g->nqp = add ? n + 1 : n - 1;
	g->addr = *addr;
	for (i = 0; i < n; i++)
		if (old->qpn[i] != qpn)
			g->qpn[k++] = old->qpn[i];
	if (add)
		g->qpn[k] = qpn;
	return g;
}

int mr_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct mr_dev *dev = to_mr_dev(ibqp->device);
	const struct in6_addr *addr = (const struct in6_addr *)gid->raw;
	struct mr_mcg *old, *g;
	int err = 0;
	u32 i;

	/* ib_attach_mcast() lets only UD QPs and multicast GIDs through. */
	if (ibqp->qp_type != IB_QPT_UD)
		return -EINVAL;
	mutex_lock(&dev->mcast_lock);
	old = mr_mcg_find(dev, addr);
	for (i = 0; old && i < old->nqp; i++)
		if (old->qpn[i] == ibqp->qp_num)
			goto out;		/* attached already */
	if ((!old && dev->nmcg >= METAROCE_MAX_MCAST_GRP) ||
	    (old && old->nqp >= METAROCE_MAX_MCAST_QP_ATTACH) ||
	    dev->nmcattach >= METAROCE_MAX_TOTAL_MCAST_QP_ATTACH) {
		err = -ENOMEM;
		goto out;
	}
	g = mr_mcg_copy(old, addr, ibqp->qp_num, true);
	if (!g) {
		err = -ENOMEM;
		goto out;
	}
	if (!old) {
		err = mr_mcg_ip(dev, addr, true);
		if (err) {
			kfree(g);
			goto out;
		}
		hlist_add_head_rcu(&g->node, mr_mcg_bucket(dev, addr));
		dev->nmcg++;
	} else {
		hlist_replace_rcu(&old->node, &g->node);
		kfree_rcu(old, rcu);
	}
	dev->nmcattach++;
out:
	mutex_unlock(&dev->mcast_lock);
	return err;
}

int mr_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct mr_dev *dev = to_mr_dev(ibqp->device);
	const struct in6_addr *addr = (const struct in6_addr *)gid->raw;
	struct mr_mcg *old, *g;
	int err = -EINVAL;
	u32 i;

	mutex_lock(&dev->mcast_lock);
	old = mr_mcg_find(dev, addr);
	for (i = 0; old && i < old->nqp; i++)
		if (old->qpn[i] == ibqp->qp_num)
			break;
	if (!old || i == old->nqp)
		goto out;			/* not attached */
	if (old->nqp == 1) {
		hlist_del_rcu(&old->node);
		dev->nmcg--;
		mr_mcg_ip(dev, addr, false);
	} else {
		g = mr_mcg_copy(old, addr, ibqp->qp_num, false);
		if (!g) {
			err = -ENOMEM;
			goto out;
		}
		hlist_replace_rcu(&old->node, &g->node);
	}
	kfree_rcu(old, rcu);
	dev->nmcattach--;
	err = 0;
out:
	mutex_unlock(&dev->mcast_lock);
	return err;
}

/*
 * Up to @max QPNs of the QPs attached to the group of @addr, into @qpn (for
 * NAPI's delivery of a datagram to QPN 0xffffff); returns how many.
 */
int mr_mcast_qpns(struct mr_dev *dev, const struct in6_addr *addr, u32 *qpn,
		  int max)
{
	struct mr_mcg *g;
	int n = 0;

	rcu_read_lock();
	g = mr_mcg_find(dev, addr);
	if (g) {
		n = min_t(int, g->nqp, max);
		memcpy(qpn, g->qpn, n * sizeof(*qpn));
	}
	rcu_read_unlock();
	return n;
}

/*
 * A host's own members of a group get what it sends there, as with any IP
 * multicast; but the kernel does not loop back what leaves through a UDP
 * tunnel socket (it counts as a nested transmission), so the sockets do
 * not loop back at all and the device gives its own members their copy
 * here: @skb's MetaRoCE header and payload, behind the UDP and IP headers
 * the packet leaves with, queued for NAPI (dev->mc_loop) as if it had come
 * in on the device's netdev. Called for a UD datagram to a multicast
 * address.
 */
void mr_mcast_loop(struct mr_dev *dev, const struct sk_buff *skb,
		   const struct mr_addr *addr, u16 sport, u8 tos)
{
	unsigned int iplen = addr->ipv4 ? sizeof(struct iphdr) :
					  sizeof(struct ipv6hdr);
	unsigned int len = skb->len + sizeof(struct udphdr);
	struct sk_buff *c;
	struct udphdr *uh;
	bool members;

	rcu_read_lock();
	members = mr_mcg_find(dev, &addr->remote);
	rcu_read_unlock();
	if (!members)
		return;
	c = skb_copy_expand(skb, iplen + sizeof(*uh), 0, GFP_ATOMIC);
	if (!c)
		return;
	uh = skb_push(c, sizeof(*uh));
	uh->source = htons(sport);
	uh->dest = htons(mr_udp_port);
	uh->len = htons(len);
	uh->check = 0;
	skb_reset_transport_header(c);
	if (addr->ipv4) {
		struct iphdr *iph = skb_push(c, sizeof(*iph));

		memset(iph, 0, sizeof(*iph));
		iph->version = 4;
		iph->ihl = sizeof(*iph) >> 2;
		iph->tos = tos;
		iph->tot_len = htons(len + sizeof(*iph));
		iph->ttl = 1;
		iph->protocol = IPPROTO_UDP;
		iph->saddr = addr->local.s6_addr32[3];
		iph->daddr = addr->remote.s6_addr32[3];
		c->protocol = htons(ETH_P_IP);
	} else {
		struct ipv6hdr *ip6h = skb_push(c, sizeof(*ip6h));

		ip6_flow_hdr(ip6h, tos, 0);
		ip6h->payload_len = htons(len);
		ip6h->nexthdr = IPPROTO_UDP;
		ip6h->hop_limit = 1;
		ip6h->saddr = addr->local;
		ip6h->daddr = addr->remote;
		c->protocol = htons(ETH_P_IPV6);
	}
	skb_reset_network_header(c);
	__skb_pull(c, iplen + sizeof(*uh));
	memset(c->cb, 0, sizeof(c->cb));	/* not marked CE */
	mr_counter_add(dev->counters, MR_CNT_RX_PACKETS, 1);
	mr_counter_add(dev->counters, MR_CNT_RX_BYTES, skb->len);
	if (skb_queue_len(&dev->mc_loop) >= MR_MC_LOOP_MAX) {
		mr_counter_add(dev->counters, MR_CNT_RX_DROP_BACKLOG, 1);
		kfree_skb(c);
		return;
	}
	skb_queue_tail(&dev->mc_loop, c);
	local_bh_disable();
	napi_schedule(&dev->napi);
	local_bh_enable();
}

void mr_mcast_init(struct mr_dev *dev)
{
	mutex_init(&dev->mcast_lock);
	skb_queue_head_init(&dev->mc_loop);
}

/*
 * At device teardown, with every QP gone and NAPI stopped: ib_core
 * detaches a QP from its groups before it destroys it, so none is left.
 */
void mr_mcast_destroy(struct mr_dev *dev)
{
	int b;

	skb_queue_purge(&dev->mc_loop);

	for (b = 0; b < ARRAY_SIZE(dev->mcgs); b++)
		WARN_ON(!hlist_empty(&dev->mcgs[b]));
	mutex_destroy(&dev->mcast_lock);
}
