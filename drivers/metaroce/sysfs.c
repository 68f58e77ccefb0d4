// SPDX-License-Identifier: GPL-2.0-only
/*
 * /sys/class/infiniband/DEV/metaroce/: facts about the device (read-only)
 * and its transport tunables (read-write, documented in
 * Documentation/admin-guide.rst). The provider recognises MetaRoCE
 * devices by the presence of metaroce/abi_version, so these paths are a
 * stable interface.
 *
 * The tunables are those of tunables.h, a file each. A tunable of the
 * transport configuration is validated as part of a whole engine
 * configuration (mr_conn_cfg_check()), the others against their range;
 * invalid values are refused with EINVAL. Most apply at once to every live
 * connection of the device; "paths" changes the shape of a connection and
 * is refused with EBUSY while the device has connections.
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

/*
 * The tunables (tunables.h). Those of the transport configuration are
 * validated as part of a whole configuration (mr_conn_cfg_check()) and
 * applied to the live connections (mr_peers_reconfigure()); the others
 * have a range of their own and apply from the next packet or connection
 * that reads them. All are read and written under peers_lock.
 */
struct mr_tunable_attr {
	struct device_attribute attr;
	unsigned int idx;		/* in mr_tunables[] */
};

#define to_mr_tunable_attr(a) container_of(a, struct mr_tunable_attr, attr)

/* The value of a tunable in user units; peers_lock held. */
static u32 mr_tunable_get(struct mr_dev *dev, const struct mr_tunable_def *t)
{
	switch (t->kind) {
	case MR_TUN_CFG:
	case MR_TUN_SHAPE:
		return *(const u32 *)((const char *)&dev->conn_cfg + t->off) /
		       t->unit;
	case MR_TUN_DEV:
	case MR_TUN_CAP:
		return READ_ONCE(*(const u32 *)((const char *)dev + t->off));
	case MR_TUN_DSCP:
		return READ_ONCE(*((const u8 *)dev + t->off)) >> 2;
	}
	return 0;
}

/* Set a tunable to @v user units; peers_lock held. */
static int mr_tunable_set(struct mr_dev *dev, const struct mr_tunable_def *t,
			  u32 v)
{
	struct mr_conn_cfg cfg;

	if (t->kind == MR_TUN_CFG || t->kind == MR_TUN_SHAPE) {
		cfg = dev->conn_cfg;
		if (mr_cfg_set(&cfg, t->off, t->unit, v) ||
		    mr_conn_cfg_check(&cfg))
			return -EINVAL;
		return mr_peers_reconfigure(dev, &cfg,
					    t->kind == MR_TUN_SHAPE);
	}
	if (v < t->min || v > t->max)
		return -EINVAL;
	switch (t->kind) {
	case MR_TUN_DEV:
		WRITE_ONCE(*(u32 *)((char *)dev + t->off), v);
		break;
	case MR_TUN_DSCP:
		WRITE_ONCE(*((u8 *)dev + t->off), v << 2);
		break;
	case MR_TUN_CAP:
		WRITE_ONCE(*(u32 *)((char *)dev + t->off), v);
		mr_fs_capacity(dev);
		break;
	default:
		break;
	}
	return 0;
}

static ssize_t mr_tunable_show(struct device *device,
			       struct device_attribute *attr, char *buf)
{
	struct mr_dev *dev = to_mr_dev(rdma_device_to_ibdev(device));
	const struct mr_tunable_def *t =
		&mr_tunables[to_mr_tunable_attr(attr)->idx];
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
	const struct mr_tunable_def *t =
		&mr_tunables[to_mr_tunable_attr(attr)->idx];
	u32 v;
	int err;

	if (!mr_tunable_capable(dev))
		return -EPERM;
	err = kstrtou32(buf, 0, &v);
	if (err)
		return err;
	mutex_lock(&dev->peers_lock);
	err = mr_tunable_set(dev, t, v);
	mutex_unlock(&dev->peers_lock);
	return err ? err : count;
}

#define MR_TUNABLE(_name, ...)						\
	[MR_TUN_##_name] = {						\
		.attr = __ATTR(_name, 0644, mr_tunable_show,		\
			       mr_tunable_store),			\
		.idx = MR_TUN_##_name,					\
	},
static struct mr_tunable_attr mr_tunable_attrs[MR_TUN_COUNT] = {
#include "tunables.h"
};
#undef MR_TUNABLE

/* The tunables' files, then the others. */
#define MR_TUNABLE(_name, ...)						\
	[MR_TUN_##_name] = &mr_tunable_attrs[MR_TUN_##_name].attr.attr,
static struct attribute *mr_attrs[MR_TUN_COUNT + 4] = {
#include "tunables.h"
	[MR_TUN_COUNT] = &dev_attr_abi_version.attr,
	&dev_attr_udp_port.attr,
	&dev_attr_netdev.attr,
	NULL
};
#undef MR_TUNABLE

const struct attribute_group mr_attr_group = {
	.name = METAROCE_NAME,
	.attrs = mr_attrs,
};
