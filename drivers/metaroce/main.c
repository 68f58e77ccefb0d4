// SPDX-License-Identifier: GPL-2.0-only
/*
 * Module entry points and parameters.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/workqueue.h>
#include <rdma/rdma_netlink.h>

#include "metaroce.h"

unsigned short mr_udp_port = METAROCE_DEFAULT_UDP_PORT;
module_param_named(udp_port, mr_udp_port, ushort, 0444);
MODULE_PARM_DESC(udp_port,
		 "UDP port of the MetaRoCE transport (default 4797; 0, 4791 and 4793 are refused)");

/*
 * Defaults for new devices; each device's own values are tunable in
 * /sys/class/infiniband/DEV/metaroce/ (Documentation/admin-guide.rst).
 */
unsigned int mr_param_paths = 8;
module_param_named(paths, mr_param_paths, uint, 0444);
MODULE_PARM_DESC(paths, "Paths (UDP source ports) per connection, 1-16 (default 8)");

unsigned int mr_param_rto_min_us = 4000;
module_param_named(rto_min_us, mr_param_rto_min_us, uint, 0444);
MODULE_PARM_DESC(rto_min_us, "Floor of a path's retransmission timeout in microseconds (default 4000)");

unsigned int mr_param_rx_capacity_mbps = METAROCE_DEFAULT_RX_MBPS;
module_param_named(rx_capacity_mbps, mr_param_rx_capacity_mbps, uint, 0444);
MODULE_PARM_DESC(rx_capacity_mbps, "Receive capacity the fair share divides among senders, Mbit/s (default 10000)");

/* Deferred device unregistration; drained before the module goes away. */
struct workqueue_struct *mr_wq;

static bool mr_udp_port_valid(unsigned short port)
{
	/* Unset, RoCEv2 and Ultra Ethernet: we must run beside both. */
	return port != 0 && port != 4791 && port != 4793;
}

static int __init mr_init(void)
{
	int err;

	if (!mr_udp_port_valid(mr_udp_port)) {
		pr_err("udp_port=%u is not allowed (0, 4791 and 4793 are refused)\n",
		       mr_udp_port);
		return -EINVAL;
	}
	if (!mr_param_paths || mr_param_paths > MR_MAX_PATHS ||
	    !mr_param_rto_min_us || !mr_param_rx_capacity_mbps) {
		pr_err("paths must be 1-%u; rto_min_us and rx_capacity_mbps non-zero\n",
		       MR_MAX_PATHS);
		return -EINVAL;
	}

	mr_wq = alloc_workqueue(METAROCE_NAME, WQ_UNBOUND, 0);
	if (!mr_wq)
		return -ENOMEM;
	mr_debugfs_init();

	err = mr_net_init();
	if (err)
		goto err_wq;

	err = mr_netdev_init();
	if (err)
		goto err_net;

	rdma_link_register(&mr_link_ops);

	pr_info("version " METAROCE_VERSION " loaded, UDP port %u\n",
		mr_udp_port);
	return 0;

err_net:
	mr_net_exit();
err_wq:
	mr_debugfs_exit();
	destroy_workqueue(mr_wq);
	return err;
}

static void __exit mr_exit(void)
{
	/* No new devices from here on... */
	rdma_link_unregister(&mr_link_ops);
	/* ...no new deferred unregistrations... */
	mr_netdev_exit();
	/* ...and every existing device goes, closing the last sockets. */
	mr_dev_remove_all();
	mr_net_exit();
	mr_debugfs_exit();
	destroy_workqueue(mr_wq);
	/* Let receive callbacks that raced with the socket close finish. */
	synchronize_rcu();
	pr_info("unloaded\n");
}

module_init(mr_init);
module_exit(mr_exit);

MODULE_DESCRIPTION("MetaRoCE soft RDMA device (multipath transport over UDP)");
MODULE_AUTHOR("The MetaRoCE authors");
MODULE_LICENSE("GPL");
MODULE_VERSION(METAROCE_VERSION);
MODULE_ALIAS_RDMA_LINK("metaroce");
/* Verbs applications reach the device through ib_uverbs. */
MODULE_SOFTDEP("pre: ib_uverbs");
