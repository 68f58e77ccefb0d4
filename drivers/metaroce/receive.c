// SPDX-License-Identifier: GPL-2.0-only
/*
 * Receive path: the UDP sockets' encap_rcv hook. Every datagram is hostile
 * until proven otherwise. Here a packet is only matched to a device,
 * counted, checked to hold a base header and queued, with its ECN mark, to
 * the device's NAPI context (napi.c), where the transport engine (core/)
 * validates all of it before anything is placed.
 *
 * Demultiplexing: a packet belongs to the device whose netdev owns the
 * packet's destination address. On multiplane hosts that address lives on a
 * dummy netdev while packets arrive on the plane interfaces. When no netdev
 * owns the destination (or it is IPv6 link-local, which names no netdev by
 * itself), the device on the receiving netdev takes it. Packets matching no
 * device are counted per namespace (rx_unmatched in /proc/net/metaroce).
 */

#include <linux/inetdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/addrconf.h>
#include <net/inet_ecn.h>
#include <net/ipv6.h>
#include <net/sock.h>
#include <metaroce/mr_wire.h>

#include "metaroce.h"

static struct mr_dev *mr_rx_demux(struct sock *sk, struct sk_buff *skb)
{
	struct net_device *ndev = NULL;
	struct mr_dev *dev;

	if (sk->sk_family == AF_INET) {
		ndev = __ip_dev_find(sock_net(sk), ip_hdr(skb)->daddr, false);
	} else if (IS_ENABLED(CONFIG_IPV6)) {
		const struct in6_addr *daddr = &ipv6_hdr(skb)->daddr;

		if (!(ipv6_addr_type(daddr) & IPV6_ADDR_LINKLOCAL))
			ndev = ipv6_dev_find(sock_net(sk), daddr, NULL);
	}

	if (ndev) {
		dev = mr_dev_find_rcu(ndev);
		if (dev)
			return dev;
	}
	return skb->dev ? mr_dev_find_rcu(skb->dev) : NULL;
}

/*
 * The packet is long enough for the base header, which is now linear. Only
 * a first check: the engine's parser (core/) validates the whole header.
 */
static bool mr_rx_header_ok(struct sk_buff *skb)
{
	return pskb_may_pull(skb, sizeof(struct udphdr) + MR_BASE_HLEN);
}

/*
 * Called by the UDP stack, in softirq context, with skb->data at the UDP
 * header and the UDP checksum verified. Always consumes the skb.
 */
int mr_udp_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	struct mr_net *mrn;
	struct mr_dev *dev;
	bool ce;

	rcu_read_lock();
	mrn = rcu_dereference_sk_user_data(sk);
	if (unlikely(!mrn))		/* the socket is closing */
		goto out;

	dev = mr_rx_demux(sk, skb);
	if (!dev) {
		mr_net_count_unmatched(mrn);
		goto out;
	}

	mr_counter_add(dev->counters, MR_CNT_RX_PACKETS, 1);
	mr_counter_add(dev->counters, MR_CNT_RX_BYTES,
		       skb->len - min_t(unsigned int, skb->len,
					sizeof(struct udphdr)));

	if (!mr_rx_header_ok(skb)) {
		mr_counter_add(dev->counters, MR_CNT_RX_DROP_MALFORMED, 1);
		goto out;
	}
	/* The data path takes it from the MetaRoCE header on. */
	ce = INET_ECN_is_ce(sk->sk_family == AF_INET ? ip_hdr(skb)->tos :
			    ipv6_get_dsfield(ipv6_hdr(skb)));
	__skb_pull(skb, sizeof(struct udphdr));
	/*
	 * The packet waits for the poll beyond this softirq: drop its
	 * route, which may not be reference-counted (the poll needs none).
	 */
	skb_dst_drop(skb);
	mr_napi_rx(dev, skb, ce);
	rcu_read_unlock();
	return 0;
out:
	rcu_read_unlock();
	kfree_skb(skb);
	return 0;
}
