// SPDX-License-Identifier: GPL-2.0-only
/*
 * The module parameters, and the one path by which they reach a device:
 * mr_params_check() refuses a module load whose parameters are invalid,
 * mr_dev_config() gives a new device its configuration from them. Each
 * device's own values are then tunable in /sys/class/infiniband/DEV/metaroce/
 * (sysfs.c; Documentation/admin-guide.rst). Calls no other file of the
 * driver.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>

#include "metaroce.h"

unsigned short mr_udp_port = METAROCE_DEFAULT_UDP_PORT;
module_param_named(udp_port, mr_udp_port, ushort, 0444);
MODULE_PARM_DESC(udp_port,
		 "UDP port of the MetaRoCE transport (default 4797; 0, 4791 and 4793 are refused)");

/*
 * Defaults for new devices; each device's own values are tunable in
 * /sys/class/infiniband/DEV/metaroce/ (Documentation/admin-guide.rst).
 */
static unsigned int mr_param_paths = 8;
module_param_named(paths, mr_param_paths, uint, 0444);
MODULE_PARM_DESC(paths, "Paths (UDP source ports) per connection, 1-16 (default 8)");

static unsigned int mr_param_rto_min_us = 4000;
module_param_named(rto_min_us, mr_param_rto_min_us, uint, 0444);
MODULE_PARM_DESC(rto_min_us, "Floor of a path's retransmission timeout in microseconds (default 4000)");

static unsigned int mr_param_rx_capacity_mbps = METAROCE_DEFAULT_RX_MBPS;
module_param_named(rx_capacity_mbps, mr_param_rx_capacity_mbps, uint, 0444);
MODULE_PARM_DESC(rx_capacity_mbps, "Receive capacity the fair share divides among senders, Mbit/s (default 10000)");

static unsigned int mr_param_host_window;
module_param_named(host_window, mr_param_host_window, uint, 0444);
MODULE_PARM_DESC(host_window, "Bytes a device's connections may have in flight together before none borrows past its own window, up to 1 GiB (default 0: no sharing)");

static unsigned int mr_param_dscp;
module_param_named(dscp, mr_param_dscp, uint, 0444);
MODULE_PARM_DESC(dscp, "DSCP of the packets that connections send, 0-63 (default 0)");

static unsigned int mr_param_ctrl_dscp = METAROCE_DEFAULT_CTRL_DSCP;
module_param_named(ctrl_dscp, mr_param_ctrl_dscp, uint, 0444);
MODULE_PARM_DESC(ctrl_dscp, "DSCP of the acknowledgements and other unsequenced control packets, 0-63 (default 48)");

static unsigned int mr_param_max_peers = METAROCE_DEFAULT_MAX_PEERS;
module_param_named(max_peers, mr_param_max_peers, uint, 0444);
MODULE_PARM_DESC(max_peers, "Peers (connections) a device may hold, 1-1048576 (default 4096)");

static unsigned int mr_param_max_peer_mem_mb = METAROCE_DEFAULT_MAX_PEER_MEM_MB;
module_param_named(max_peer_mem_mb, mr_param_max_peer_mem_mb, uint, 0444);
MODULE_PARM_DESC(max_peer_mem_mb, "Memory a device's peers may hold together, MiB, 1-1048576 (default 256)");

/*
 * The other tunables: 0 keeps the built-in default. Each is a u32 of
 * struct mr_conn_cfg, given in user units (microseconds for times).
 */
struct mr_cfg_param {
	const unsigned int *val;
	size_t off;
	u32 unit;
};

#define MR_CFG_PARAM(_name, _desc)					\
	static unsigned int mr_param_##_name;				\
	module_param_named(_name, mr_param_##_name, uint, 0444);	\
	MODULE_PARM_DESC(_name, _desc " (0: the default)")

#define MR_CFG_PARAM_ENTRY(_name, _field, _unit)			\
	{ &mr_param_##_name, offsetof(struct mr_conn_cfg, _field), (_unit) }

MR_CFG_PARAM(rto_max_us,
	     "Ceiling of a path's retransmission timeout, us (100000)");
MR_CFG_PARAM(rto_init_us,
	     "Retransmission timeout before an RTT sample, us (20000)");
MR_CFG_PARAM(probe_us,
	     "Shortest interval of probes on a dead path, us (10000)");
MR_CFG_PARAM(dead_after,
	     "Consecutive timeouts that make a path dead, 1-255 (3)");
MR_CFG_PARAM(reorder_thresh,
	     "Packets acknowledged past a hole before it counts as lost (3)");
MR_CFG_PARAM(ack_delay_us,
	     "Longest an acknowledgement waits, us (20)");
MR_CFG_PARAM(ack_every,
	     "Acknowledge at least every N packets (16)");
MR_CFG_PARAM(msg_ack_us,
	     "Wait for a message acknowledgement before asking again, us (1000)");
MR_CFG_PARAM(init_window,
	     "Bytes in flight before any feedback (65536)");
MR_CFG_PARAM(min_window,
	     "Floor of the connection window, bytes (2192)");
MR_CFG_PARAM(max_window,
	     "Ceiling of the connection window, bytes (16777216)");
MR_CFG_PARAM(ai_bytes,
	     "Additive increase per round trip, bytes (4096)");
MR_CFG_PARAM(ecn_shift,
	     "ECN fraction gain 1/2^N, 1-10 (4)");
MR_CFG_PARAM(repick_alpha,
	     "ECN fraction (of 1024) at which a path re-picks its port (512)");
MR_CFG_PARAM(pacing,
	     "Pace at the receiver's rate hint, 1 to enable (off)");

static const struct mr_cfg_param mr_cfg_params[] = {
	MR_CFG_PARAM_ENTRY(rto_max_us, rto_max_ns, NSEC_PER_USEC),
	MR_CFG_PARAM_ENTRY(rto_init_us, rto_init_ns, NSEC_PER_USEC),
	MR_CFG_PARAM_ENTRY(probe_us, probe_ns, NSEC_PER_USEC),
	MR_CFG_PARAM_ENTRY(dead_after, dead_after, 1),
	MR_CFG_PARAM_ENTRY(reorder_thresh, reorder_thresh, 1),
	MR_CFG_PARAM_ENTRY(ack_delay_us, ack_delay_ns, NSEC_PER_USEC),
	MR_CFG_PARAM_ENTRY(ack_every, ack_every, 1),
	MR_CFG_PARAM_ENTRY(msg_ack_us, msg_ack_ns, NSEC_PER_USEC),
	MR_CFG_PARAM_ENTRY(init_window, init_window, 1),
	MR_CFG_PARAM_ENTRY(min_window, min_window, 1),
	MR_CFG_PARAM_ENTRY(max_window, max_window, 1),
	MR_CFG_PARAM_ENTRY(ai_bytes, ai_bytes, 1),
	MR_CFG_PARAM_ENTRY(ecn_shift, ecn_shift, 1),
	MR_CFG_PARAM_ENTRY(repick_alpha, repick_alpha, 1),
	MR_CFG_PARAM_ENTRY(pacing, pacing, 1),
};

/*
 * Sets the u32 field at byte offset @off of @cfg to @val user units of
 * @unit (1, or NSEC_PER_USEC for the microsecond tunables); -EINVAL if it
 * does not fit. The caller checks the whole configuration afterwards.
 */
int mr_cfg_set(struct mr_conn_cfg *cfg, size_t off, u32 unit, u32 val)
{
	u64 v = (u64)val * unit;

	if (v > U32_MAX)
		return -EINVAL;
	*(u32 *)((char *)cfg + off) = (u32)v;
	return 0;
}

/*
 * The transport configuration a new device starts with: the engine's
 * defaults, the device's timer defaults, then the module parameters.
 * -EINVAL if the parameters make it invalid.
 */
static int mr_dev_cfg_default(struct mr_conn_cfg *cfg)
{
	unsigned int i;

	mr_conn_cfg_default(cfg);
	cfg->mtu = MR_MAX_PAYLOAD;
	/*
	 * Timers for hosts whose scheduling can delay an ACK by milliseconds
	 * (busy-polling applications, virtual machines): a spurious timeout
	 * costs a duplicate, a late one only a tail loss's recovery.
	 */
	cfg->npaths = mr_param_paths;
	cfg->rto_min_ns = mr_param_rto_min_us * NSEC_PER_USEC;
	cfg->rto_init_ns = max_t(u32, 20 * NSEC_PER_MSEC, cfg->rto_min_ns);
	cfg->rto_max_ns = max_t(u32, cfg->rto_max_ns, cfg->rto_min_ns);
	cfg->probe_ns = 10 * NSEC_PER_MSEC;
	/* Senders announce themselves to receivers' fair shares. */
	cfg->announce = 1;
	for (i = 0; i < ARRAY_SIZE(mr_cfg_params); i++) {
		const struct mr_cfg_param *p = &mr_cfg_params[i];

		if (*p->val && mr_cfg_set(cfg, p->off, p->unit, *p->val))
			return -EINVAL;
	}
	return mr_conn_cfg_check(cfg) ? -EINVAL : 0;
}


static bool mr_udp_port_valid(unsigned short port)
{
	/* Unset, RoCEv2 and Ultra Ethernet: we must run beside both. */
	return port != 0 && port != 4791 && port != 4793;
}

/* Whether the module parameters are valid; at module load. */
int mr_params_check(void)
{
	struct mr_conn_cfg cfg;

	if (!mr_udp_port_valid(mr_udp_port)) {
		pr_err("udp_port=%u is not allowed (0, 4791 and 4793 are refused)\n",
		       mr_udp_port);
		return -EINVAL;
	}
	if (!mr_param_paths || mr_param_paths > MR_MAX_PATHS ||
	    !mr_param_rto_min_us || !mr_param_rx_capacity_mbps ||
	    mr_param_host_window > MR_HOST_WINDOW_MAX ||
	    mr_param_dscp > MR_DSCP_MAX || mr_param_ctrl_dscp > MR_DSCP_MAX ||
	    !mr_param_max_peers || mr_param_max_peers > MR_MAX_PEERS_MAX ||
	    !mr_param_max_peer_mem_mb ||
	    mr_param_max_peer_mem_mb > MR_MAX_PEER_MEM_MB_MAX) {
		pr_err("paths must be 1-%u; rto_min_us and rx_capacity_mbps non-zero; host_window at most 1 GiB; dscp and ctrl_dscp at most 63; max_peers and max_peer_mem_mb 1-%u\n",
		       MR_MAX_PATHS, MR_MAX_PEERS_MAX);
		return -EINVAL;
	}
	if (mr_dev_cfg_default(&cfg)) {
		pr_err("the transport parameters are invalid together (see Documentation/admin-guide.rst)\n");
		return -EINVAL;
	}
	return 0;
}

/*
 * A new device's configuration: its transport configuration
 * (mr_dev_cfg_default()), its fair share's capacity, its DSCPs, host
 * window and peer limits, from the module parameters (checked at module
 * load, read-only since). -EINVAL if they make it invalid.
 */
int mr_dev_config(struct mr_dev *dev)
{
	if (mr_dev_cfg_default(&dev->conn_cfg))
		return -EINVAL;
	mr_fs_init(&dev->fs, mr_param_rx_capacity_mbps);
	dev->host_window = mr_param_host_window;
	dev->tclass = mr_param_dscp << 2;
	dev->ctrl_tclass = mr_param_ctrl_dscp << 2;
	dev->max_peers = mr_param_max_peers;
	dev->max_peer_mem_mb = mr_param_max_peer_mem_mb;
	return 0;
}
