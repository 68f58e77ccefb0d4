// SPDX-License-Identifier: GPL-2.0-only
/*
 * Device lifecycle: "rdma link add" (newlink), the table of devices by
 * netdev, and the three ways a device goes away: "rdma link delete", the
 * netdev's unregistration (deferred to mr_wq, since the notifier runs under
 * RTNL) and module unload. All end in ib_core calling mr_dealloc_driver().
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hashtable.h>
#include <linux/if_arp.h>
#include <linux/lockdep.h>
#include <linux/random.h>
#include <linux/rtnetlink.h>
#include <net/addrconf.h>
#include <net/net_namespace.h>
#include <rdma/rdma_netlink.h>

#include "metaroce.h"
#include "objects.h"

/* Serialises device creation and removal: see "Locking" in metaroce.h. */
DEFINE_MUTEX(mr_lock);

/* Devices by netdev: written under mr_lock, read under mr_lock or RCU. */
static DEFINE_HASHTABLE(mr_devs, 6);
/* The lock class of every device's QP table (mr_dev_setup()). */
static struct lock_class_key mr_qps_lock_key;

struct mr_dev *mr_dev_find(const struct net_device *ndev)
{
	struct mr_dev *dev;

	lockdep_assert_held(&mr_lock);
	hash_for_each_possible(mr_devs, dev, node, (unsigned long)ndev)
		if (dev->ndev == ndev)
			return dev;
	return NULL;
}

struct mr_dev *mr_dev_find_rcu(const struct net_device *ndev)
{
	struct mr_dev *dev;

	hash_for_each_possible_rcu(mr_devs, dev, node, (unsigned long)ndev)
		if (dev->ndev == ndev)
			return dev;
	return NULL;
}

static struct mr_dev *mr_dev_first(void)
{
	struct mr_dev *dev;
	unsigned int bkt;

	lockdep_assert_held(&mr_lock);
	hash_for_each(mr_devs, bkt, dev, node)
		return dev;
	return NULL;
}

static void mr_dev_unreg_work(struct work_struct *work)
{
	struct mr_dev *dev = container_of(work, struct mr_dev, unreg_work);

	/* A no-op if the device is already gone or not registered yet. */
	ib_unregister_device(&dev->ibdev);
	put_device(&dev->ibdev.dev);
}

/*
 * Unregisters @dev from mr_wq. The queued work holds a reference on the
 * device's memory, so it may run after the device has been unregistered by
 * other means.
 */
void mr_dev_queue_unregister(struct mr_dev *dev)
{
	lockdep_assert_held(&mr_lock);
	dev->unregistering = true;
	get_device(&dev->ibdev.dev);
	if (!queue_work(mr_wq, &dev->unreg_work))
		put_device(&dev->ibdev.dev);
}

/*
 * Everything that does not need the netdev's state (so no RTNL). From the
 * first line on, ib_dealloc_device() undoes whatever was done, through
 * mr_dealloc_driver().
 */
static int mr_dev_setup(struct mr_dev *dev, struct net_device *ndev)
{
	struct ib_device *ibdev = &dev->ibdev;

	ib_set_device_ops(ibdev, &mr_dev_ops);
	/*
	 * uverbs commands that ib_core leaves disabled unless the driver
	 * asks: the provider polls CQs and posts work requests through the
	 * kernel (for now).
	 */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POLL_CQ) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_SRQ_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV);
	spin_lock_init(&dev->lock);
	INIT_HLIST_NODE(&dev->node);
	INIT_WORK(&dev->unreg_work, mr_dev_unreg_work);
	ida_init(&dev->pd_ida);
	mr_mem_table_init(dev);
	xa_init_flags(&dev->qps, XA_FLAGS_ALLOC);
	/*
	 * Both xarrays are initialised here, so lockdep would give their
	 * locks one class: the QP table's is taken from NAPI, the AH table's
	 * only in process context, which it would take for a deadlock.
	 */
	lockdep_set_class(&dev->qps.xa_lock, &mr_qps_lock_key);
	xa_init_flags(&dev->ahs, XA_FLAGS_ALLOC1);
	mr_mcast_init(dev);
	mr_peers_init(dev);
	netdev_hold(ndev, &dev->ndev_tracker, GFP_KERNEL);
	dev->ndev = ndev;

	if (mr_dev_config(dev))
		return -EINVAL;
	do {
		dev->ud_epoch = get_random_u32();
	} while (!dev->ud_epoch);
	atomic64_set(&dev->tx_inflight, 0);

	dev->counters = alloc_percpu(struct mr_counters);
	if (!dev->counters)
		return -ENOMEM;
	if (mr_napi_init(dev))
		return -ENOMEM;

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = METAROCE_NUM_COMP_VECTORS;
	strscpy(ibdev->node_desc, "MetaRoCE", sizeof(ibdev->node_desc));
	ib_mark_name_assigned_by_user(ibdev);

	/* ib_core builds the RoCE GID table from this netdev's addresses. */
	return ib_device_set_netdev(ibdev, ndev, 1);
}

/*
 * Takes a socket reference in @net and enters @dev in the device table,
 * unless the netdev is going away or already has a device. The port state is
 * sampled under RTNL here, so the notifier sees every later change.
 */
static int mr_dev_link(struct mr_dev *dev, struct net *net)
{
	struct net_device *ndev = dev->ndev;
	struct mr_net *mrn;
	int err = 0;

	/* Opening sockets takes no RTNL: do it before taking RTNL. */
	mutex_lock(&mr_lock);
	mrn = mr_net_get(net);
	mutex_unlock(&mr_lock);
	if (IS_ERR(mrn))
		return PTR_ERR(mrn);

	rtnl_lock();
	mutex_lock(&mr_lock);
	if (ndev->reg_state != NETREG_REGISTERED ||
	    !net_eq(dev_net(ndev), net))
		err = -ENODEV;
	else if (mr_dev_find(ndev))
		err = -EEXIST;
	if (err) {
		mr_net_put(mrn);
		goto out;
	}

	dev->mrn = mrn;
	/* EUI-64 from the MAC: U/L bit flipped, ff:fe inserted. */
	addrconf_addr_eui48((u8 *)&dev->ibdev.node_guid, ndev->dev_addr);
	mr_port_update(dev, false);
	hash_add_rcu(mr_devs, &dev->node, (unsigned long)ndev);
out:
	mutex_unlock(&mr_lock);
	rtnl_unlock();
	return err;
}

/*
 * Registration failed: take the device out of the notifier's sight and
 * cancel an unregistration it may have queued; mr_dealloc_driver() does
 * the rest.
 */
static void mr_dev_unlink_unregistered(struct mr_dev *dev)
{
	mutex_lock(&mr_lock);
	hash_del_rcu(&dev->node);
	mutex_unlock(&mr_lock);
	if (cancel_work_sync(&dev->unreg_work))
		put_device(&dev->ibdev.dev);
}

/*
 * The device is registered (and may already be unregistered again by a
 * racing "rdma link delete": the caller holds its memory). Replays what the
 * notifier could not act on while ib_core did not know the device yet.
 */
static void mr_dev_registered(struct mr_dev *dev)
{
	mutex_lock(&mr_lock);
	/* Not for a device whose teardown already removed it. */
	if (!dev->torn_down)
		mr_debugfs_add(dev);
	if (dev->unregistering)
		mr_dev_queue_unregister(dev);
	else
		mr_port_flush_event(dev);
	mutex_unlock(&mr_lock);
}

static int mr_newlink(const char *ibdev_name, struct net_device *ndev)
{
	struct mr_dev *dev;
	struct net *net;
	int err;

	if (ndev->type != ARPHRD_ETHER)
		return -EINVAL;

	/*
	 * The namespace the device will send and receive in. The reference
	 * keeps it alive until the device is registered; from then on the
	 * netdev notifier removes the device before the namespace can go.
	 */
	rtnl_lock();
	net = maybe_get_net(dev_net(ndev));
	rtnl_unlock();
	if (!net)
		return -ENODEV;

	dev = ib_alloc_device(mr_dev, ibdev);
	if (!dev) {
		err = -ENOMEM;
		goto out_net;
	}

	err = mr_dev_setup(dev, ndev);
	if (err)
		goto err_dealloc;

	err = mr_dev_link(dev, net);
	if (err)
		goto err_dealloc;

	/* A racing unregistration may free the device once registered. */
	get_device(&dev->ibdev.dev);
	err = ib_register_device(&dev->ibdev, ibdev_name, NULL);
	if (err) {
		mr_dev_unlink_unregistered(dev);
		put_device(&dev->ibdev.dev);
		/*
		 * ib_core says ENFILE for a name in use: say what it is (the
		 * core stopped exporting its lookup by name in 7.x, so this is
		 * where a taken name is found).
		 */
		if (err == -ENFILE && !strchr(ibdev_name, '%'))
			err = -EEXIST;
		goto err_dealloc;
	}
	mr_dev_registered(dev);
	put_device(&dev->ibdev.dev);
	put_net(net);
	return 0;

err_dealloc:
	ib_dealloc_device(&dev->ibdev);
out_net:
	put_net(net);
	return err;
}

struct rdma_link_ops mr_link_ops = {
	.type = METAROCE_NAME,
	.newlink = mr_newlink,
};

/*
 * The single teardown path, called by ib_dealloc_device(): at the end of
 * every unregistration, and when newlink fails at any stage after
 * ib_alloc_device(). Undoes mr_dev_setup() and mr_dev_link(); ib_core frees
 * the structure itself.
 */
void mr_dealloc_driver(struct ib_device *ibdev)
{
	struct mr_dev *dev = to_mr_dev(ibdev);

	mutex_lock(&mr_lock);
	dev->torn_down = true;
	if (dev->mrn)
		hash_del_rcu(&dev->node);
	mutex_unlock(&mr_lock);
	/* The receive path can no longer find the device. */
	if (dev->mrn)
		synchronize_rcu();
	/* Every QP is gone: stop the transport before the sockets go. */
	mr_debugfs_remove(dev);
	mr_peers_destroy(dev);
	mr_napi_destroy(dev);
	WARN_ON(!xa_empty(&dev->qps));
	xa_destroy(&dev->qps);
	WARN_ON(!xa_empty(&dev->ahs));
	xa_destroy(&dev->ahs);
	mr_mcast_destroy(dev);
	if (dev->mrn) {
		mutex_lock(&mr_lock);
		mr_net_put(dev->mrn);
		dev->mrn = NULL;
		mutex_unlock(&mr_lock);
	}
	ida_destroy(&dev->pd_ida);
	mr_mem_table_destroy(dev);
	free_percpu(dev->counters);
	netdev_put(dev->ndev, &dev->ndev_tracker);
}

/*
 * Module unload: unregister every device. Not ib_unregister_driver(), whose
 * RDMA_DRIVER_UNKNOWN would also match other out-of-tree drivers.
 */
void mr_dev_remove_all(void)
{
	struct mr_dev *dev;

	mutex_lock(&mr_lock);
	while ((dev = mr_dev_first())) {
		get_device(&dev->ibdev.dev);
		mutex_unlock(&mr_lock);
		/* Waits for a racing unregistration of the same device. */
		ib_unregister_device(&dev->ibdev);
		put_device(&dev->ibdev.dev);
		mutex_lock(&mr_lock);
	}
	mutex_unlock(&mr_lock);
}
