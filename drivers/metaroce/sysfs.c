// SPDX-License-Identifier: GPL-2.0-only
/*
 * /sys/class/infiniband/DEV/metaroce/: facts about the device (read-only)
 * and its transport tunables (read-write, documented in
 * Documentation/admin-guide.rst). The provider recognises MetaRoCE
 * devices by the presence of metaroce/abi_version, so these paths are a
 * stable interface.
 *
 * A tunable is validated as part of a whole engine configuration
 * (mr_conn_cfg_check()); invalid values are refused with EINVAL. Most
 * apply at once to every live connection of the device; "paths" changes
 * the shape of a connection and is refused with EBUSY while the device has
 * connections.
 *
 * Writing a tunable takes CAP_NET_ADMIN in the user namespace that owns the
 * network namespace the device sends in, whatever the file's mode lets the
 * writer open (root of another user namespace, a process that dropped the
 * capability): EPERM otherwise.
 */

#include <linux/capability.h>
#include <linux/device.h>
#include <linux/sysfs.h>
#include <net/net_namespace.h>
#include <uapi/rdma/metaroce-abi.h>

#include "metaroce.h"

/* May the caller change @dev's tunables? */
static bool mr_tunable_capable(struct mr_dev *dev)
{
	return ns_capable(dev_net(dev->ndev)->user_ns, CAP_NET_ADMIN);
}

static ssize_t abi_version_show(struct device *device,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", METAROCE_UVERBS_ABI_VERSION);
}
static DEVICE_ATTR_RO(abi_version);

static ssize_t udp_port_show(struct device *device,
			     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", mr_udp_port);
}
static DEVICE_ATTR_RO(udp_port);

static ssize_t netdev_show(struct device *device,
			   struct device_attribute *attr, char *buf)
{
	struct mr_dev *dev = to_mr_dev(rdma_device_to_ibdev(device));
	char name[IFNAMSIZ];

	spin_lock(&dev->lock);
	memcpy(name, dev->ifname, sizeof(name));
	spin_unlock(&dev->lock);
	return sysfs_emit(buf, "%s\n", name);
}
static DEVICE_ATTR_RO(netdev);

struct mr_tunable {
	struct device_attribute attr;
	size_t off;		/* of the u32 in struct mr_conn_cfg, or ~0 */
	u32 unit;		/* engine units per user unit (ns per us) */
	bool shape;		/* not changeable under live connections */
};

#define to_mr_tunable(a) container_of(a, struct mr_tunable, attr)
#define MR_CFG_NONE ((size_t)~0)

/* The value of a tunable in user units. */
static u32 mr_tunable_get(struct mr_dev *dev, const struct mr_tunable *t)
{
	if (t->off == MR_CFG_NONE)
		return dev->fs.capacity;
	return *(const u32 *)((const char *)&dev->conn_cfg + t->off) / t->unit;
}

static ssize_t mr_tunable_show(struct device *device,
			       struct device_attribute *attr, char *buf)
{
	struct mr_dev *dev = to_mr_dev(rdma_device_to_ibdev(device));
	const struct mr_tunable *t = to_mr_tunable(attr);
	u32 v;

	mutex_lock(&dev->peers_lock);
	v = mr_tunable_get(dev, t);
	mutex_unlock(&dev->peers_lock);
	return sysfs_emit(buf, "%u\n", v);
}

static ssize_t mr_tunable_store(struct device *device,
				struct device_attribute *attr,
				const char *buf, size_t count)
{
	struct mr_dev *dev = to_mr_dev(rdma_device_to_ibdev(device));
	const struct mr_tunable *t = to_mr_tunable(attr);
	struct mr_conn_cfg cfg;
	u32 v;
	int err;

	if (!mr_tunable_capable(dev))
		return -EPERM;
	err = kstrtou32(buf, 0, &v);
	if (err)
		return err;
	mutex_lock(&dev->peers_lock);
	if (t->off == MR_CFG_NONE) {
		/* rx_capacity_mbps: what the receiver fair share divides */
		err = v ? 0 : -EINVAL;
		if (!err) {
			dev->fs.capacity = v;
			dev->fs.estimate = v;
		}
		goto out;
	}
	cfg = dev->conn_cfg;
	err = -EINVAL;
	if (mr_cfg_set(&cfg, t->off, t->unit, v) || mr_conn_cfg_check(&cfg))
		goto out;
	err = mr_peers_reconfigure(dev, &cfg, t->shape);
out:
	mutex_unlock(&dev->peers_lock);
	return err ? err : count;
}

#define MR_TUNABLE(_name, _field, _unit, _shape)			\
	static struct mr_tunable mr_tun_##_name = {			\
		.attr = __ATTR(_name, 0644, mr_tunable_show,		\
			       mr_tunable_store),			\
		.off = offsetof(struct mr_conn_cfg, _field),		\
		.unit = (_unit),					\
		.shape = (_shape),					\
	}

MR_TUNABLE(paths, npaths, 1, true);
MR_TUNABLE(rto_min_us, rto_min_ns, NSEC_PER_USEC, false);
MR_TUNABLE(rto_max_us, rto_max_ns, NSEC_PER_USEC, false);
MR_TUNABLE(rto_init_us, rto_init_ns, NSEC_PER_USEC, false);
MR_TUNABLE(probe_us, probe_ns, NSEC_PER_USEC, false);
MR_TUNABLE(dead_after, dead_after, 1, false);
MR_TUNABLE(reorder_thresh, reorder_thresh, 1, false);
MR_TUNABLE(ack_delay_us, ack_delay_ns, NSEC_PER_USEC, false);
MR_TUNABLE(ack_every, ack_every, 1, false);
MR_TUNABLE(msg_ack_us, msg_ack_ns, NSEC_PER_USEC, false);
MR_TUNABLE(init_window, init_window, 1, false);
MR_TUNABLE(min_window, min_window, 1, false);
MR_TUNABLE(max_window, max_window, 1, false);
MR_TUNABLE(ai_bytes, ai_bytes, 1, false);
MR_TUNABLE(ecn_shift, ecn_shift, 1, false);
MR_TUNABLE(repick_alpha, repick_alpha, 1, false);
MR_TUNABLE(pacing, pacing, 1, false);
MR_TUNABLE(announce, announce, 1, false);

static struct mr_tunable mr_tun_rx_capacity_mbps = {
	.attr = __ATTR(rx_capacity_mbps, 0644, mr_tunable_show,
		       mr_tunable_store),
	.off = MR_CFG_NONE,
	.unit = 1,
};

/*
 * host_window: the bytes all connections of the device may have in flight
 * together before none may borrow past its own window (protocol.rst, 7.25);
 * 0 turns sharing off. A target, not a reservation: it applies to live
 * connections at their next transmission.
 */
static ssize_t host_window_show(struct device *device,
				struct device_attribute *attr, char *buf)
{
	struct mr_dev *dev = to_mr_dev(rdma_device_to_ibdev(device));

	return sysfs_emit(buf, "%u\n", READ_ONCE(dev->host_window));
}

static ssize_t host_window_store(struct device *device,
				 struct device_attribute *attr,
				 const char *buf, size_t count)
{
	struct mr_dev *dev = to_mr_dev(rdma_device_to_ibdev(device));
	u32 v;
	int err;

	if (!mr_tunable_capable(dev))
		return -EPERM;
	err = kstrtou32(buf, 0, &v);
	if (err)
		return err;
	if (v > MR_HOST_WINDOW_MAX)
		return -EINVAL;
	WRITE_ONCE(dev->host_window, v);
	return count;
}
static DEVICE_ATTR_RW(host_window);

/*
 * dscp, ctrl_dscp: the DSCP of what connections send, sequenced packets and
 * control packets (ACK, ACK_REQ, RESET) apart (protocol.rst, 5.3). They
 * apply to live connections from their next packet.
 */
static ssize_t mr_dscp_show(u8 *tclass, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(*tclass) >> 2);
}

static ssize_t mr_dscp_store(struct mr_dev *dev, u8 *tclass, const char *buf,
			     size_t count)
{
	u8 v;
	int err;

	if (!mr_tunable_capable(dev))
		return -EPERM;
	err = kstrtou8(buf, 0, &v);
	if (err)
		return err;
	if (v > MR_DSCP_MAX)
		return -EINVAL;
	WRITE_ONCE(*tclass, v << 2);
	return count;
}

static ssize_t dscp_show(struct device *device, struct device_attribute *attr,
			 char *buf)
{
	struct mr_dev *dev = to_mr_dev(rdma_device_to_ibdev(device));

	return mr_dscp_show(&dev->tclass, buf);
}

static ssize_t dscp_store(struct device *device, struct device_attribute *attr,
			  const char *buf, size_t count)
{
	struct mr_dev *dev = to_mr_dev(rdma_device_to_ibdev(device));

	return mr_dscp_store(dev, &dev->tclass, buf, count);
}
static DEVICE_ATTR_RW(dscp);

static ssize_t ctrl_dscp_show(struct device *device,
			      struct device_attribute *attr, char *buf)
{
	struct mr_dev *dev = to_mr_dev(rdma_device_to_ibdev(device));

	return mr_dscp_show(&dev->ctrl_tclass, buf);
}

static ssize_t ctrl_dscp_store(struct device *device,
			       struct device_attribute *attr,
			       const char *buf, size_t count)
{
	struct mr_dev *dev = to_mr_dev(rdma_device_to_ibdev(device));

	return mr_dscp_store(dev, &dev->ctrl_tclass, buf, count);
}
static DEVICE_ATTR_RW(ctrl_dscp);

/*
 * max_peers, max_peer_mem_mb: how many peers (connections) the device may
 * hold and how much memory they may hold together (MiB). A connection to
 * a new peer (an RC QP's RTR) first frees peers that have no QP left,
 * longest unused first; when none can go, it is refused with ENOMEM
 * (peer.c). Lowering a limit below what the device holds frees nothing at
 * once: it applies to the next connection.
 */
static ssize_t mr_peer_limit_show(struct mr_dev *dev, const u32 *limit,
				  char *buf)
{
	u32 v;

	mutex_lock(&dev->peers_lock);
	v = *limit;
	mutex_unlock(&dev->peers_lock);
	return sysfs_emit(buf, "%u\n", v);
}

static ssize_t mr_peer_limit_store(struct mr_dev *dev, u32 *limit, u32 max,
				   const char *buf, size_t count)
{
	u32 v;
	int err;

	if (!mr_tunable_capable(dev))
		return -EPERM;
	err = kstrtou32(buf, 0, &v);
	if (err)
		return err;
	if (!v || v > max)
		return -EINVAL;
	mutex_lock(&dev->peers_lock);
	*limit = v;
	mutex_unlock(&dev->peers_lock);
	return count;
}

static ssize_t max_peers_show(struct device *device,
			      struct device_attribute *attr, char *buf)
{
	struct mr_dev *dev = to_mr_dev(rdma_device_to_ibdev(device));

	return mr_peer_limit_show(dev, &dev->max_peers, buf);
}

static ssize_t max_peers_store(struct device *device,
			       struct device_attribute *attr, const char *buf,
			       size_t count)
{
	struct mr_dev *dev = to_mr_dev(rdma_device_to_ibdev(device));

	return mr_peer_limit_store(dev, &dev->max_peers, MR_MAX_PEERS_MAX, buf,
				   count);
}
static DEVICE_ATTR_RW(max_peers);

static ssize_t max_peer_mem_mb_show(struct device *device,
				    struct device_attribute *attr, char *buf)
{
	struct mr_dev *dev = to_mr_dev(rdma_device_to_ibdev(device));

	return mr_peer_limit_show(dev, &dev->max_peer_mem_mb, buf);
}

static ssize_t max_peer_mem_mb_store(struct device *device,
				     struct device_attribute *attr,
				     const char *buf, size_t count)
{
	struct mr_dev *dev = to_mr_dev(rdma_device_to_ibdev(device));

	return mr_peer_limit_store(dev, &dev->max_peer_mem_mb,
				   MR_MAX_PEER_MEM_MB_MAX, buf, count);
}
static DEVICE_ATTR_RW(max_peer_mem_mb);

static struct attribute *mr_attrs[] = {
	&dev_attr_abi_version.attr,
	&dev_attr_udp_port.attr,
	&dev_attr_netdev.attr,
	&mr_tun_paths.attr.attr,
	&mr_tun_rto_min_us.attr.attr,
	&mr_tun_rto_max_us.attr.attr,
	&mr_tun_rto_init_us.attr.attr,
	&mr_tun_probe_us.attr.attr,
	&mr_tun_dead_after.attr.attr,
	&mr_tun_reorder_thresh.attr.attr,
	&mr_tun_ack_delay_us.attr.attr,
	&mr_tun_ack_every.attr.attr,
	&mr_tun_msg_ack_us.attr.attr,
	&mr_tun_init_window.attr.attr,
	&mr_tun_min_window.attr.attr,
	&mr_tun_max_window.attr.attr,
	&mr_tun_ai_bytes.attr.attr,
	&mr_tun_ecn_shift.attr.attr,
	&mr_tun_repick_alpha.attr.attr,
	&mr_tun_pacing.attr.attr,
	&mr_tun_announce.attr.attr,
	&mr_tun_rx_capacity_mbps.attr.attr,
	&dev_attr_host_window.attr,
	&dev_attr_dscp.attr,
	&dev_attr_ctrl_dscp.attr,
	&dev_attr_max_peers.attr,
	&dev_attr_max_peer_mem_mb.attr,
	NULL
};

const struct attribute_group mr_attr_group = {
	.name = METAROCE_NAME,
	.attrs = mr_attrs,
};
