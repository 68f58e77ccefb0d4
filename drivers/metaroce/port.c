// SPDX-License-Identifier: GPL-2.0-only
/*
 * The device's single port: its state follows the netdev (kept up to date by
 * the netdev notifier, which calls mr_port_update() under RTNL), and it is
 * RoCE-like, so ib_core maintains its GID table from the netdev's IP
 * addresses (RoCE v2 GIDs) and rdma_cm can resolve addresses to it.
 */

#include <linux/ethtool.h>
#include <linux/kernel.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <rdma/ib_mad.h>

#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#include "metaroce.h"

static_assert(METAROCE_MTU_OVERHEAD ==
	      sizeof(struct ipv6hdr) + sizeof(struct udphdr) + MR_DATA_HLEN_MAX);
static_assert(METAROCE_MTU_OVERHEAD_IPV4 ==
	      sizeof(struct iphdr) + sizeof(struct udphdr) + MR_DATA_HLEN_MAX);

/* Largest IB MTU that leaves room for METAROCE_MTU_OVERHEAD. */
enum ib_mtu mr_mtu_from_netdev(unsigned int netdev_mtu)
{
	static const enum ib_mtu mtus[] = {
		IB_MTU_4096, IB_MTU_2048, IB_MTU_1024, IB_MTU_512,
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(mtus); i++)
		if (ib_mtu_enum_to_int(mtus[i]) + METAROCE_MTU_OVERHEAD <=
		    netdev_mtu)
			return mtus[i];
	/* The smallest IB MTU, even if the netdev cannot carry it. */
	return IB_MTU_256;
}

/*
 * Payload of an RC data segment on this device, for a connection over IPv4
 * or IPv6: as much as the netdev MTU carries (protocol.rst, section 5.5).
 * Unlike UD, RC is not held to the IB path MTU, because every segment
 * carries its own offset and a receiver accepts up to MR_MAX_PAYLOAD.
 */
u32 mr_rc_seg_size(struct mr_dev *dev, bool ipv4)
{
	u32 ovh = ipv4 ? METAROCE_MTU_OVERHEAD_IPV4 : METAROCE_MTU_OVERHEAD;
	u32 mtu;

	spin_lock(&dev->lock);
	mtu = dev->port.netdev_mtu;
	spin_unlock(&dev->lock);
	if (mtu < ovh + 256)
		return 256;
	return min_t(u32, mtu - ovh, MR_MAX_PAYLOAD);
}

/*
 * IB speed and width for an Ethernet link speed in Mb/s: the slowest
 * combination that is at least as fast as the link.
 */
static void mr_speed_from_ethtool(u32 mbps, u16 *speed, u8 *width)
{
	static const struct {
		u32 mbps;
		u8 width;
		u16 speed;
	} map[] = {
		{   2500, IB_WIDTH_1X, IB_SPEED_SDR },	/*   2.5 Gb/s */
		{   5000, IB_WIDTH_1X, IB_SPEED_DDR },	/*   5   Gb/s */
		{  10000, IB_WIDTH_1X, IB_SPEED_QDR },	/*  10   Gb/s */
		{  20000, IB_WIDTH_4X, IB_SPEED_DDR },	/*  20   Gb/s */
		{  25000, IB_WIDTH_1X, IB_SPEED_EDR },	/*  25   Gb/s */
		{  40000, IB_WIDTH_4X, IB_SPEED_QDR },	/*  40   Gb/s */
		{  50000, IB_WIDTH_1X, IB_SPEED_HDR },	/*  50   Gb/s */
		{ 100000, IB_WIDTH_4X, IB_SPEED_EDR },	/* 100   Gb/s */
		{ 200000, IB_WIDTH_4X, IB_SPEED_HDR },	/* 200   Gb/s */
		{ 400000, IB_WIDTH_4X, IB_SPEED_NDR },	/* 400   Gb/s */
		{ 800000, IB_WIDTH_8X, IB_SPEED_NDR },	/* 800   Gb/s */
	};
	unsigned int i;

	/* Unknown (e.g. dummy, no ethtool): report the slowest, 1X SDR. */
	if (mbps == 0 || mbps == (u32)SPEED_UNKNOWN)
		mbps = 1;
	for (i = 0; i < ARRAY_SIZE(map) - 1; i++)
		if (mbps <= map[i].mbps)
			break;
	*speed = map[i].speed;
	*width = map[i].width;
}

static void mr_port_event(struct mr_dev *dev, bool active)
{
	struct ib_event event = {
		.device = &dev->ibdev,
		.element.port_num = 1,
		.event = active ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR,
	};

	/* Not (or no longer) registered: ib_core cannot take events. */
	if (!ib_device_try_get(&dev->ibdev)) {
		spin_lock(&dev->lock);
		dev->port.event_pending = true;
		spin_unlock(&dev->lock);
		return;
	}
	ib_dispatch_event(&event);
	ib_device_put(&dev->ibdev);
}

/*
 * Recomputes the port attributes from the netdev. With @notify, a change of
 * ACTIVE-ness is reported to ib_core (IB_EVENT_PORT_ACTIVE/PORT_ERR).
 */
void mr_port_update(struct mr_dev *dev, bool notify)
{
	struct net_device *ndev = dev->ndev;
	struct ethtool_link_ksettings ks;
	struct mr_port port = {};
	u32 mbps = SPEED_UNKNOWN;
	bool was_active, active;

	ASSERT_RTNL();
	lockdep_assert_held(&mr_lock);

	if (!netif_running(ndev)) {
		port.state = IB_PORT_DOWN;
		port.phys_state = IB_PORT_PHYS_STATE_DISABLED;
	} else if (!netif_carrier_ok(ndev)) {
		port.state = IB_PORT_DOWN;
		port.phys_state = IB_PORT_PHYS_STATE_POLLING;
	} else {
		port.state = IB_PORT_ACTIVE;
		port.phys_state = IB_PORT_PHYS_STATE_LINK_UP;
	}
	port.active_mtu = mr_mtu_from_netdev(ndev->mtu);
	port.netdev_mtu = ndev->mtu;
	if (!__ethtool_get_link_ksettings(ndev, &ks))
		mbps = ks.base.speed;
	mr_speed_from_ethtool(mbps, &port.active_speed, &port.active_width);
	if (mbps && mbps != (u32)SPEED_UNKNOWN)
		port.link_mbps = mbps;

	spin_lock(&dev->lock);
	was_active = dev->port.state == IB_PORT_ACTIVE;
	port.event_pending = dev->port.event_pending;
	dev->port = port;
	strscpy(dev->ifname, ndev->name, sizeof(dev->ifname));
	spin_unlock(&dev->lock);
	mr_fs_capacity(dev);

	active = port.state == IB_PORT_ACTIVE;
	if (notify && was_active != active)
		mr_port_event(dev, active);
}

/* Reports a state change that happened while the device registered. */
void mr_port_flush_event(struct mr_dev *dev)
{
	bool pending, active;

	lockdep_assert_held(&mr_lock);
	spin_lock(&dev->lock);
	pending = dev->port.event_pending;
	dev->port.event_pending = false;
	active = dev->port.state == IB_PORT_ACTIVE;
	spin_unlock(&dev->lock);

	if (pending)
		mr_port_event(dev, active);
}

int mr_query_port(struct ib_device *ibdev, u32 port_num,
		  struct ib_port_attr *attr)
{
	struct mr_dev *dev = to_mr_dev(ibdev);

	if (port_num != 1)
		return -EINVAL;

	spin_lock(&dev->lock);
	attr->state = dev->port.state;
	attr->phys_state = dev->port.phys_state;
	attr->active_mtu = dev->port.active_mtu;
	attr->active_speed = dev->port.active_speed;
	attr->active_width = dev->port.active_width;
	spin_unlock(&dev->lock);

	attr->max_mtu = IB_MTU_4096;
	attr->gid_tbl_len = METAROCE_GID_TBL_LEN;
	attr->ip_gids = true;
	attr->port_cap_flags = IB_PORT_CM_SUP;
	attr->max_msg_sz = METAROCE_MAX_MSG_SIZE;
	attr->pkey_tbl_len = METAROCE_PKEY_TBL_LEN;
	attr->max_vl_num = 1;
	return 0;
}

int mr_get_port_immutable(struct ib_device *ibdev, u32 port_num,
			  struct ib_port_immutable *immutable)
{
	if (port_num != 1)
		return -EINVAL;

	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->gid_tbl_len = METAROCE_GID_TBL_LEN;
	immutable->pkey_tbl_len = METAROCE_PKEY_TBL_LEN;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

/* RoCE has a single, full-membership default P_Key. */
int mr_query_pkey(struct ib_device *ibdev, u32 port_num, u16 index, u16 *pkey)
{
	if (port_num != 1 || index >= METAROCE_PKEY_TBL_LEN)
		return -EINVAL;

	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}
