/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Internal interfaces of metaroce.ko.
 *
 * Objects and lifetimes:
 *  - struct mr_dev is one RDMA device ("rdma link add NAME type metaroce
 *    netdev DEV"), bound to one Ethernet netdev for its whole life. It is
 *    freed by ib_core after mr_dealloc_driver(), whichever way it goes away:
 *    rdma link delete, the netdev's unregistration (or move to another
 *    namespace), or module unload.
 *  - struct mr_net is the per-network-namespace state: the UDP sockets
 *    shared by every device whose netdev lives in that namespace. The
 *    sockets are opened with the first such device and closed with the last.
 *
 * Locking:
 *  - mr_lock (a mutex) serialises device creation and removal, the device
 *    table's writers and each mr_net's socket refcount. Lock order: RTNL
 *    before mr_lock. Nothing calls ib_register_device() or
 *    ib_unregister_device() with mr_lock held.
 *  - The device table is read under RCU by the receive path.
 *  - mr_dev::lock (a spinlock) protects the port attributes and the cached
 *    netdev name, written under RTNL by the netdev notifier.
 */
#ifndef _METAROCE_H
#define _METAROCE_H

#include <linux/hashtable.h>
#include <linux/idr.h>
#include <linux/if.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/percpu.h>
#include <linux/seqlock.h>
#include <linux/siphash.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>

#include <metaroce/mr_engine.h>

#include "compat.h"
#include "counters.h"
#include "limits.h"
#include "version.h"
#include "objects.h"

#define METAROCE_NAME "metaroce"

#define MR_PEER_HASH_BITS	6
#define MR_PEER_HASH		(1 << MR_PEER_HASH_BITS)
/* Buckets of the multicast groups (mcast.c). */
#define MR_MCG_HASH_BITS	4
/* Multicast copies for the device's own members waiting for NAPI, at most. */
#define MR_MC_LOOP_MAX		256
/* Packets one engine transmission round may send before yielding. */
#define MR_PEER_TX_BUDGET	64

/*
 * Receive capacity the fair share divides (Mbit/s) when neither the
 * rx_capacity_mbps tunable nor the netdev's link speed says.
 */
#define METAROCE_DEFAULT_RX_MBPS 10000

/*
 * Default DSCP of ACKs, ACK_REQs and RESETs: CS6, the class that RoCE
 * fabrics commonly give strict priority for congestion notifications
 * (protocol.rst, 5.3). Data keeps DSCP 0 unless configured.
 */
#define METAROCE_DEFAULT_CTRL_DSCP 48
#define MR_DSCP_MAX 63

/* Default UDP port; never RoCEv2's 4791 nor UET's 4793. */
#define METAROCE_DEFAULT_UDP_PORT 4797

/*
 * Default limits on a device's peers (connections) and on the memory they
 * hold: tunables max_peers and max_peer_mem_mb (Documentation/admin-guide.rst).
 */
#define METAROCE_DEFAULT_MAX_PEERS	4096
#define METAROCE_DEFAULT_MAX_PEER_MEM_MB 256
#define MR_MAX_PEERS_MAX		(1U << 20)
#define MR_MAX_PEER_MEM_MB_MAX		(1U << 20)	/* 1 TiB */

/* Verbs objects counted against the device limits they are reported with. */
enum mr_limited {
	MR_LIM_QP,
	MR_LIM_CQ,
	MR_LIM_SRQ,
	MR_LIM_AH,
	MR_LIM_NR
};

struct mr_port {
	enum ib_port_state state;
	enum ib_port_phys_state phys_state;
	enum ib_mtu active_mtu;
	unsigned int netdev_mtu;
	u16 active_speed;
	u8 active_width;
	u32 link_mbps;			/* the netdev's speed, 0: unknown */
	/* A state change could not be reported while registering. */
	bool event_pending;
};

struct mr_net;

/* Fair-share recomputation interval. */
#define MR_FS_PERIOD_NS		(100 * NSEC_PER_USEC)
/* Between runs, an announcement reshares at most this often. */
#define MR_FS_KICK_NS		(MR_FS_PERIOD_NS / 8)

/*
 * What a fair-share run works on (napi.c, fair.c): room for every peer of the
 * device (the active ones are among them), grown as peers are created.
 */
struct mr_fs_scratch {
	u32 cap;
	struct mr_peer **peer;
	u32 *rate;
	u32 *demand;
	u32 *ce;
	u32 *share;
};

struct mr_dev {
	struct ib_device ibdev;		/* first: see ib_alloc_device() */

	struct net_device *ndev;	/* held until mr_dealloc_driver() */
	netdevice_tracker ndev_tracker;
	struct mr_net *mrn;		/* ndev's namespace, socket ref held */

	struct hlist_node node;		/* in the device table, by ndev */
	struct work_struct unreg_work;	/* unregister on netdev removal */
	bool unregistering;		/* netdev going; under mr_lock */
	bool torn_down;			/* mr_dealloc_driver() ran; under mr_lock */

	spinlock_t lock;		/* protects port and ifname */
	struct mr_port port;
	char ifname[IFNAMSIZ];

	struct mr_counters __percpu *counters;
	struct ida pd_ida;
	/* Live QPs, CQs, SRQs and AHs (verbs.c: mr_limit_take()). */
	atomic_t limited[MR_LIM_NR];

	/*
	 * Memory regions by key >> 8 (mem.c). Written in process context
	 * under the xarray's lock; read under RCU from any context.
	 */
	struct xarray mrs;
	u32 mr_next;			/* xa_alloc_cyclic() cursor */
	/* Serialises the 8-byte atomics executed on this device's MRs. */
	spinlock_t atomic_lock;

	/*
	 * Data path (the QP files, peer.c, napi.c). QPs by number: written in process
	 * context with the _bh xarray calls, looked up from NAPI under the
	 * xarray lock, which pins a reference.
	 */
	struct xarray qps;
	u32 next_qpn;
	/* User AHs by number (send rings name them so), RCU readers. */
	struct xarray ahs;
	u32 next_ahn;
	/*
	 * Multicast groups (mcast.c): RCU readers, mcast_lock writers, who
	 * also count the groups and the attachments of all of them.
	 */
	struct mutex mcast_lock;
	struct hlist_head mcgs[1 << MR_MCG_HASH_BITS];
	u32 nmcg;
	u32 nmcattach;
	/* The device's own multicast datagrams, for its members (NAPI). */
	struct sk_buff_head mc_loop;
	struct mr_conn_cfg conn_cfg;	/* for new peers */
	/* The host's shared window (protocol.rst 7.25); 0: none. */
	u32 host_window;
	atomic64_t tx_inflight;		/* its peers' bytes in flight */
	u32 ud_epoch;			/* epoch field of UD packets */
	u8 tclass;			/* DSCP << 2 of sequenced packets */
	u8 ctrl_tclass;			/* DSCP << 2 of unsequenced ones */

	/*
	 * The secrets the challenge's cookies are keyed with (peer.c,
	 * protocol.rst 7.2): [0] current, [1] the one it replaced, if
	 * cookie_prev. From the kernel's RNG, replaced every
	 * MR_COOKIE_ROTATE_NS by the peer collector; read from NAPI.
	 */
	seqlock_t cookie_lock;
	siphash_key_t cookie_key[2];
	bool cookie_prev;
	u64 cookie_next;		/* ns: the next replacement */

	/* Peers by (local, remote) address: RCU readers, peers_lock writers. */
	struct mutex peers_lock;
	struct hlist_head peers[MR_PEER_HASH];
	unsigned int npeers;
	/* Under peers_lock: peers without QPs, longest unused first... */
	struct list_head peers_idle;
	u64 peers_mem;			/* ...bytes all peers hold... */
	u32 max_peers;			/* ...and the limits (tunables) */
	u32 max_peer_mem_mb;
	u64 peers_evicted;		/* idle peers freed to make room */
	u64 peers_refused;		/* RTRs refused at a limit */
	bool peers_stopping;
	struct delayed_work peer_gc;
	struct mr_totals retired;	/* counters of freed peers */

	/* NAPI context (a dummy netdev of its own) and its work lists. */
	struct net_device *napi_dev;
	struct napi_struct napi;
	struct sk_buff_head rxq;
	spinlock_t work_lock;		/* qp_work, peer_work */
	struct list_head qp_work;
	struct list_head peer_work;
	struct mr_ack rx_ack;		/* NAPI scratch */

	/*
	 * Receiver fair share, recomputed from NAPI over the active senders:
	 * the peers with a demand (protocol.rst 7.20), on fs_active from
	 * their first arrival until a run finds their demand gone.
	 * fs_active, fs_nactive and peer->fs_node are under fs_lock, taken
	 * inside peer->lock or alone; the other fields are NAPI's.
	 */
	struct mr_fs_dev fs;
	/*
	 * rx_capacity_mbps as set (0: the link's speed), and the capacity
	 * that makes (mr_fs_capacity()); NAPI's fair share takes it up.
	 */
	u32 rx_capacity;
	u32 fs_capacity;
	spinlock_t fs_lock;
	struct list_head fs_active;
	u32 fs_nactive;
	/* Written under peers_lock, read by NAPI under RCU. */
	struct mr_fs_scratch __rcu *fs_scratch;
	u64 fs_next;
	u64 fs_last;			/* last run, full or not */
	u64 fs_full_at;			/* last run that read the meters */
	u64 fs_kick_at;			/* earliest reshare; 0: none wanted */

	struct dentry *debugfs;		/* debugfs.c */
};

static inline struct mr_dev *to_mr_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct mr_dev, ibdev);
}

/* config.c: the transport tunables (tunables.h lists them) */
enum mr_tunable_kind {
	MR_TUN_CFG,
	MR_TUN_SHAPE,
	MR_TUN_DEV,
	MR_TUN_DSCP,
	MR_TUN_CAP,
};

/* What config.c and sysfs.c know of a tunable. */
struct mr_tunable_def {
	const char *name;
	enum mr_tunable_kind kind;
	size_t off;		/* in struct mr_conn_cfg or mr_dev */
	u32 unit;		/* stored units per user unit */
	u32 def;
	u32 min, max;		/* DEV, DSCP, CAP */
};

enum {
#define MR_TUNABLE(_name, ...) MR_TUN_##_name,
#include "tunables.h"
#undef MR_TUNABLE
	MR_TUN_COUNT
};

extern const struct mr_tunable_def mr_tunables[MR_TUN_COUNT];
extern unsigned short mr_udp_port;
#define MR_HOST_WINDOW_MAX (1U << 30)
int mr_cfg_set(struct mr_conn_cfg *cfg, size_t off, u32 unit, u32 val);
int mr_params_check(void);
int mr_dev_config(struct mr_dev *dev);

/* main.c */
extern struct workqueue_struct *mr_wq;
extern struct workqueue_struct *mr_db_wq;

/* device.c */
extern struct mutex mr_lock;
struct mr_dev *mr_dev_find(const struct net_device *ndev);
struct mr_dev *mr_dev_find_rcu(const struct net_device *ndev);
void mr_dev_queue_unregister(struct mr_dev *dev);
void mr_dev_remove_all(void);
void mr_dealloc_driver(struct ib_device *ibdev);
extern struct rdma_link_ops mr_link_ops;

/* verbs.c */
extern const struct ib_device_ops mr_dev_ops;
/*
 * Count one more object of kind @res against the device's limit: 0, or
 * -ENOMEM when the limit is reached. mr_limit_drop() when it goes. Any context.
 */
int mr_limit_take(struct mr_dev *dev, enum mr_limited res);
void mr_limit_drop(struct mr_dev *dev, enum mr_limited res);

/* port.c */
void mr_port_update(struct mr_dev *dev, bool notify);
void mr_port_flush_event(struct mr_dev *dev);
int mr_query_pkey(struct ib_device *ibdev, u32 port_num, u16 index,
		  u16 *pkey);
int mr_query_port(struct ib_device *ibdev, u32 port_num,
		  struct ib_port_attr *attr);
int mr_get_port_immutable(struct ib_device *ibdev, u32 port_num,
			  struct ib_port_immutable *immutable);
enum ib_mtu mr_mtu_from_netdev(unsigned int netdev_mtu);
u32 mr_rc_seg_size(struct mr_dev *dev, bool ipv4);

/* netdev.c */
int mr_netdev_init(void);
void mr_netdev_exit(void);

/* socket.c */
int mr_net_init(void);
void mr_net_exit(void);
struct mr_net *mr_net_get(struct net *net);
void mr_net_put(struct mr_net *mrn);
void mr_net_count_unmatched(struct mr_net *mrn);

/* socket.c: the namespace socket for @family, or NULL */
struct sock *mr_net_sock(struct mr_net *mrn, int family);

/* receive.c */
int mr_udp_encap_recv(struct sock *sk, struct sk_buff *skb);

/* counters.c */
struct rdma_hw_stats *mr_alloc_hw_port_stats(struct ib_device *ibdev,
					     u32 port_num);
int mr_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		    u32 port_num, int index);

/* debugfs.c */
void mr_debugfs_init(void);
void mr_debugfs_exit(void);
void mr_debugfs_add(struct mr_dev *dev);
void mr_debugfs_remove(struct mr_dev *dev);

/* One path's telemetry, as debugfs and "rdma resource" report it. */
struct mr_path_info {
	const char *state;	/* good, congested, dead or probing */
	u16 sport;
	u16 weight;		/* of MR_WEIGHT_ONE */
	u16 alpha;		/* ECN fraction, of 1024 */
	u32 srtt_us;
	u32 rttvar_us;
	u32 min_rtt_us;
	u32 cwnd;		/* bytes: its share of the window */
	u32 inflight;		/* bytes */
	u64 tx_pkts;
	u64 retx;
	u64 lost;
	u64 timeouts;
};

/* Take @p's figures (its peer's lock held). */
void mr_path_info(const struct mr_path *p, struct mr_path_info *pi);

/* restrack.c */
int mr_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);

/* sysfs.c */
extern const struct attribute_group mr_attr_group;

#endif /* _METAROCE_H */
