// SPDX-License-Identifier: GPL-2.0-only
/*
 * /sys/class/infiniband/DEV/metaroce/: read-only facts about the device.
 * The provider recognises MetaRoCE devices by the presence of
 * metaroce/abi_version, so these paths are a stable interface.
 */

#include <linux/device.h>
#include <linux/sysfs.h>
#include <uapi/rdma/metaroce-abi.h>

#include "metaroce.h"

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

static struct attribute *mr_attrs[] = {
	&dev_attr_abi_version.attr,
	&dev_attr_udp_port.attr,
	&dev_attr_netdev.attr,
	NULL
};

const struct attribute_group mr_attr_group = {
	.name = METAROCE_NAME,
	.attrs = mr_attrs,
};
