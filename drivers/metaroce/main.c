// SPDX-License-Identifier: GPL-2.0-only
/*
 * Module entry points: the module's workqueues, then the socket layer, the
 * netdev notifier and the rdma link type; undone in reverse at unload.
 * The module parameters are config.c's.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/workqueue.h>
#include <rdma/rdma_netlink.h>

#include "metaroce.h"

/* Deferred device unregistration; drained before the module goes away. */
struct workqueue_struct *mr_wq;
/* Doorbells of the send rings: see mr_qp_sq_doorbell(). */
struct workqueue_struct *mr_db_wq;

static int __init mr_init(void)
{
	int err;

	err = mr_params_check();
	if (err)
		return err;

	mr_wq = alloc_workqueue(METAROCE_NAME, WQ_UNBOUND, 0);
	if (!mr_wq)
		return -ENOMEM;
	mr_db_wq = alloc_workqueue(METAROCE_NAME "_db", WQ_UNBOUND | WQ_HIGHPRI, 0);
	if (!mr_db_wq) {
		err = -ENOMEM;
		goto err_wq;
	}
	mr_debugfs_init();

	err = mr_net_init();
	if (err)
		goto err_debugfs;

	err = mr_netdev_init();
	if (err)
		goto err_net;

	rdma_link_register(&mr_link_ops);

	pr_info("version " METAROCE_VERSION " loaded, UDP port %u\n",
		mr_udp_port);
	return 0;

err_net:
	mr_net_exit();
err_debugfs:
	mr_debugfs_exit();
	destroy_workqueue(mr_db_wq);
err_wq:
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
	destroy_workqueue(mr_db_wq);
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
