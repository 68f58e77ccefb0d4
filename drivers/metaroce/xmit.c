// SPDX-License-Identifier: GPL-2.0-only
/*
 * Transmission: MetaRoCE packets leave as UDP datagrams from the device's
 * namespace socket, to the module's UDP port, with the path's UDP source
 * port. The route lookup includes the ports, so with an L4 multipath hash
 * policy every path may take a different next hop (plane); routes are
 * cached per path and re-resolved when the path's port changes.
 */

#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/dst_cache.h>
#include <net/inet_ecn.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/route.h>
#include <net/udp_tunnel.h>

#include "metaroce.h"

#define MR_XMIT_HEADROOM \
	(LL_MAX_HEADER + sizeof(struct ipv6hdr) + sizeof(struct udphdr))

struct sk_buff *mr_xmit_alloc(u32 len, gfp_t gfp)
{
	struct sk_buff *skb = alloc_skb(MR_XMIT_HEADROOM + len, gfp);

	if (skb)
		skb_reserve(skb, MR_XMIT_HEADROOM);
	return skb;
}

/*
 * A multicast or limited-broadcast destination leaves through the device's
 * own netdev (the one that joined the group), not where a route goes.
 */
static int mr_flow4_oif(const struct mr_dev *dev, __be32 daddr)
{
	return ipv4_is_multicast(daddr) || ipv4_is_lbcast(daddr) ?
	       dev->ndev->ifindex : 0;
}

static int mr_xmit4(struct mr_dev *dev, struct sock *sk, struct sk_buff *skb,
		    const struct mr_addr *addr, u16 sport, u8 tos,
		    struct dst_cache *cache)
{
	__be32 saddr = addr->local.s6_addr32[3];
	__be32 daddr = addr->remote.s6_addr32[3];
	struct rtable *rt = NULL;

	if (cache)
		rt = dst_cache_get_ip4(cache, &saddr);
	if (!rt) {
		struct flowi4 fl4 = {
			.daddr = daddr,
			.saddr = saddr,
			.flowi4_oif = mr_flow4_oif(dev, daddr),
			.flowi4_proto = IPPROTO_UDP,
			.fl4_sport = htons(sport),
			.fl4_dport = htons(mr_udp_port),
		};

		rt = ip_route_output_key(sock_net(sk), &fl4);
		if (IS_ERR(rt))
			return PTR_ERR(rt);
		if (cache)
			dst_cache_set_ip4(cache, &rt->dst, fl4.saddr);
	}
	udp_tunnel_xmit_skb(rt, sk, skb, saddr, daddr, tos,
			    ip4_dst_hoplimit(&rt->dst), htons(IP_DF),
			    htons(sport), htons(mr_udp_port), false, false, 0);
	return 0;
}

/*
 * A link-local (or other scoped) IPv6 destination names an address on a
 * link, not in a network: the link is the device's own netdev, whatever
 * other interface of the namespace has a route to that prefix. So does a
 * multicast one.
 */
static int mr_flow6_oif(const struct mr_dev *dev, const struct in6_addr *daddr)
{
	return rt6_need_strict(daddr) ? dev->ndev->ifindex : 0;
}

static int mr_xmit6(struct mr_dev *dev, struct sock *sk, struct sk_buff *skb,
		    const struct mr_addr *addr, u16 sport, u8 tos,
		    struct dst_cache *cache)
{
	struct in6_addr saddr = addr->local;
	struct in6_addr daddr = addr->remote;
	struct dst_entry *dst = NULL;

	if (!IS_ENABLED(CONFIG_IPV6))
		return -EAFNOSUPPORT;
	if (cache)
		dst = dst_cache_get_ip6(cache, &saddr);
	if (!dst) {
		struct flowi6 fl6 = {
			.daddr = addr->remote,
			.saddr = addr->local,
			.flowi6_oif = mr_flow6_oif(dev, &addr->remote),
			.flowi6_proto = IPPROTO_UDP,
			.fl6_sport = htons(sport),
			.fl6_dport = htons(mr_udp_port),
		};

		dst = ip6_dst_lookup_flow(sock_net(sk), sk, &fl6, NULL);
		if (IS_ERR(dst))
			return PTR_ERR(dst);
		if (cache)
			dst_cache_set_ip6(cache, dst, &fl6.saddr);
	}
	udp_tunnel6_xmit_skb(dst, sk, skb, NULL, &saddr, &daddr, tos,
			     ip6_dst_hoplimit(dst), 0, htons(sport),
			     htons(mr_udp_port), false, 0);
	return 0;
}

int mr_xmit(struct mr_dev *dev, struct sk_buff *skb, const struct mr_addr *addr,
	    u16 sport, u8 tclass, struct dst_cache *cache, u16 *cache_sport)
{
	/* Every MetaRoCE packet is ECN-capable: marks, not drops. */
	u8 tos = (tclass & ~INET_ECN_MASK) | INET_ECN_ECT_0;
	unsigned int len = skb->len;
	struct sock *sk;
	int err;

	if (cache && *cache_sport != sport) {
		dst_cache_reset(cache);
		*cache_sport = sport;
	}
	sk = mr_net_sock(dev->mrn, addr->ipv4 ? AF_INET : AF_INET6);
	if (!sk) {
		err = -EAFNOSUPPORT;
		goto drop;
	}
	if (addr->ipv4)
		err = mr_xmit4(dev, sk, skb, addr, sport, tos, cache);
	else
		err = mr_xmit6(dev, sk, skb, addr, sport, tos, cache);
	if (err)
		goto drop;
	mr_counter_add(dev->counters, MR_CNT_TX_PACKETS, 1);
	mr_counter_add(dev->counters, MR_CNT_TX_BYTES, len);
	return 0;
drop:
	mr_counter_add(dev->counters, MR_CNT_TX_DROP_NO_ROUTE, 1);
	kfree_skb(skb);
	return err;
}

/*
 * The next hop a packet to @addr with UDP source port @sport takes, as a
 * non-zero key (output interface and gateway); 0 if there is no route.
 * With an L4 multipath route, ports that hash to different next hops
 * (planes) get different keys: the engine spreads its paths over them.
 */
u64 mr_route_key(struct mr_dev *dev, const struct mr_addr *addr, u16 sport)
{
	struct sock *sk = mr_net_sock(dev->mrn, addr->ipv4 ? AF_INET : AF_INET6);
	u64 key;

	if (!sk)
		return 0;
	if (addr->ipv4) {
		struct flowi4 fl4 = {
			.daddr = addr->remote.s6_addr32[3],
			.saddr = addr->local.s6_addr32[3],
			.flowi4_oif = mr_flow4_oif(dev, addr->remote.s6_addr32[3]),
			.flowi4_proto = IPPROTO_UDP,
			.fl4_sport = htons(sport),
			.fl4_dport = htons(mr_udp_port),
		};
		struct rtable *rt = ip_route_output_key(sock_net(sk), &fl4);

		if (IS_ERR(rt))
			return 0;
		key = (u64)rt->dst.dev->ifindex << 32;
		if (rt->rt_gw_family == AF_INET)
			key |= (__force u32)rt->rt_gw4;
		ip_rt_put(rt);
	} else {
		struct flowi6 fl6 = {
			.daddr = addr->remote,
			.saddr = addr->local,
			.flowi6_oif = mr_flow6_oif(dev, &addr->remote),
			.flowi6_proto = IPPROTO_UDP,
			.fl6_sport = htons(sport),
			.fl6_dport = htons(mr_udp_port),
		};
		struct dst_entry *dst;

		if (!IS_ENABLED(CONFIG_IPV6))
			return 0;
		dst = ip6_dst_lookup_flow(sock_net(sk), sk, &fl6, NULL);
		if (IS_ERR(dst))
			return 0;
		key = (u64)dst->dev->ifindex << 32 |
		      ipv6_addr_hash(&container_of(dst, struct rt6_info,
						   dst)->rt6i_gateway);
		dst_release(dst);
	}
	return key | 1ull << 63;
}
