// SPDX-License-Identifier: GPL-2.0-only
/*
 * The netdev notifier: port state, MTU, speed and name follow the netdev;
 * a netdev that is unregistered (or leaves its namespace) takes its device
 * with it. Runs under RTNL, so device removal is deferred to mr_wq: ib_core's
 * unregistration must not run under RTNL.
 */

#include <linux/netdevice.h>
#include <linux/notifier.h>

#include "metaroce.h"

static int mr_netdev_event(struct notifier_block *nb, unsigned long event,
			   void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct mr_dev *dev;

	switch (event) {
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:		/* carrier, speed */
	case NETDEV_CHANGEMTU:
	case NETDEV_CHANGENAME:
	case NETDEV_UNREGISTER:
		break;
	default:
		return NOTIFY_DONE;
	}

	mutex_lock(&mr_lock);
	dev = mr_dev_find(ndev);
	if (dev) {
		if (event == NETDEV_UNREGISTER)
			mr_dev_queue_unregister(dev);
		else
			mr_port_update(dev, true);
	}
	mutex_unlock(&mr_lock);
	return NOTIFY_DONE;
}

static struct notifier_block mr_netdev_nb = {
	.notifier_call = mr_netdev_event,
};

int mr_netdev_init(void)
{
	return register_netdevice_notifier(&mr_netdev_nb);
}

void mr_netdev_exit(void)
{
	unregister_netdevice_notifier(&mr_netdev_nb);
}
