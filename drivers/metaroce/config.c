// SPDX-License-Identifier: GPL-2.0-only
/*
 * The module parameters, and the one path by which they reach a device:
 * mr_params_check() refuses a module load whose parameters are invalid,
 * mr_dev_config() gives a new device its configuration from them. Every
 * tunable has a module parameter of its name (tunables.h); each device's
 * own values are then tunable in /sys/class/infiniband/DEV/metaroce/
 * (sysfs.c; Documentation/admin-guide.rst). Calls no other file of the
 * driver.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/stringify.h>

#include "metaroce.h"

unsigned short mr_udp_port = METAROCE_DEFAULT_UDP_PORT;
module_param_named(udp_port, mr_udp_port, ushort, 0444);
MODULE_PARM_DESC(udp_port,
		 "UDP port of the MetaRoCE transport (default " __stringify(METAROCE_DEFAULT_UDP_PORT) "; 0, 4791 and 4793 are refused)");

#define MR_TUN_OFF_CFG(f)	offsetof(struct mr_conn_cfg, f)
#define MR_TUN_OFF_SHAPE(f)	offsetof(struct mr_conn_cfg, f)
#define MR_TUN_OFF_DEV(f)	offsetof(struct mr_dev, f)
#define MR_TUN_OFF_DSCP(f)	offsetof(struct mr_dev, f)
#define MR_TUN_OFF_CAP(f)	offsetof(struct mr_dev, f)
/* Each tunable's field is as wide as its kind says. */
#define MR_TUN_WIDTH_CFG(f)	(sizeof_field(struct mr_conn_cfg, f) == 4)
#define MR_TUN_WIDTH_SHAPE(f)	(sizeof_field(struct mr_conn_cfg, f) == 4)
#define MR_TUN_WIDTH_DEV(f)	(sizeof_field(struct mr_dev, f) == 4)
#define MR_TUN_WIDTH_DSCP(f)	(sizeof_field(struct mr_dev, f) == 1)
#define MR_TUN_WIDTH_CAP(f)	(sizeof_field(struct mr_dev, f) == 4)

#define MR_TUNABLE(_name, _def, _kind, _field, _unit, _min, _max)	\
	[MR_TUN_##_name] = {						\
		.name = #_name,						\
		.kind = MR_TUN_##_kind,					\
		.off = MR_TUN_OFF_##_kind(_field) +			\
		       BUILD_BUG_ON_ZERO(!MR_TUN_WIDTH_##_kind(_field)),	\
		.unit = (_unit),					\
		.def = (_def),						\
		.min = (_min),						\
		.max = (_max),						\
	},
const struct mr_tunable_def mr_tunables[MR_TUN_COUNT] = {
#include "tunables.h"
};
#undef MR_TUNABLE

#define MR_TUNABLE(_name, _def, ...)					\
	[MR_TUN_##_name] = (_def),
static unsigned int mr_tunable_params[MR_TUN_COUNT] = {
#include "tunables.h"
};
#undef MR_TUNABLE

/*
 * The module parameter of each tunable, with its description: one line
 * each, in the order of tunables.h (scripts/check-docs.sh checks that they
 * match). Its default is the tunable's, which the parameter's file in
 * /sys/module/metaroce/parameters/ shows.
 */
#define MR_TUNABLE_PARAM(_name, _desc)					\
	module_param_named(_name, mr_tunable_params[MR_TUN_##_name], uint, \
			   0444);					\
	MODULE_PARM_DESC(_name, _desc)

MR_TUNABLE_PARAM(paths, "Paths (UDP source ports) per connection, 1-16");
MR_TUNABLE_PARAM(rto_min_us, "Floor of a path's retransmission timeout, us");
MR_TUNABLE_PARAM(rto_max_us, "Ceiling of a path's retransmission timeout, us");
MR_TUNABLE_PARAM(rto_init_us,
		 "Retransmission timeout before an RTT sample, us");
MR_TUNABLE_PARAM(probe_us, "Shortest interval of probes on a dead path, us");
MR_TUNABLE_PARAM(dead_after,
		 "Consecutive timeouts that make a path dead, 1-255");
MR_TUNABLE_PARAM(reorder_thresh,
		 "Packets acknowledged past a hole before it counts as lost");
MR_TUNABLE_PARAM(ack_delay_us, "Longest an acknowledgement waits, us");
MR_TUNABLE_PARAM(ack_every, "Acknowledge at least every N packets");
MR_TUNABLE_PARAM(msg_ack_us,
		 "Wait for a message acknowledgement before asking again, us");
MR_TUNABLE_PARAM(init_window, "Bytes in flight before any feedback");
MR_TUNABLE_PARAM(min_window, "Floor of the connection window, bytes");
MR_TUNABLE_PARAM(max_window, "Ceiling of the connection window, bytes");
MR_TUNABLE_PARAM(ai_bytes, "Additive increase per round trip, bytes");
MR_TUNABLE_PARAM(ecn_shift, "ECN fraction gain 1/2^N, 1-10");
MR_TUNABLE_PARAM(repick_alpha,
		 "ECN fraction (of 1024) at which a path re-picks its port");
MR_TUNABLE_PARAM(pacing, "Pace at the receiver's rate hint, 0 or 1");
MR_TUNABLE_PARAM(announce,
		 "Announce a connection to the receiver's fair share, 0 or 1");
MR_TUNABLE_PARAM(rx_capacity_mbps,
		 "Receive capacity the fair share divides among senders, Mbit/s (0: the link's speed)");
MR_TUNABLE_PARAM(host_window,
		 "Bytes a device's connections may have in flight together before none borrows past its own window, up to 1 GiB (0: no sharing)");
MR_TUNABLE_PARAM(dscp, "DSCP of the packets that connections send, 0-63");
MR_TUNABLE_PARAM(ctrl_dscp,
		 "DSCP of acknowledgements and other control packets, 0-63");
MR_TUNABLE_PARAM(max_peers, "Peers (connections) a device may hold, 1-1048576");
MR_TUNABLE_PARAM(max_peer_mem_mb,
		 "Memory a device's peers may hold together, MiB, 1-1048576");

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

static bool mr_tunable_is_cfg(const struct mr_tunable_def *t)
{
	return t->kind == MR_TUN_CFG || t->kind == MR_TUN_SHAPE;
}

/*
 * The transport configuration a new device starts with: the engine's
 * defaults, then the tunables' module parameters (whose defaults are the
 * tunables'). The device's timers suit hosts whose scheduling can delay an
 * ACK by milliseconds (busy-polling applications, virtual machines): a
 * spurious timeout costs a duplicate, a late one only a tail loss's
 * recovery. -EINVAL if the parameters make it invalid.
 */
static int mr_dev_cfg_default(struct mr_conn_cfg *cfg)
{
	const unsigned int *p = mr_tunable_params;
	unsigned int i;

	mr_conn_cfg_default(cfg);
	cfg->mtu = MR_MAX_PAYLOAD;
	for (i = 0; i < MR_TUN_COUNT; i++) {
		const struct mr_tunable_def *t = &mr_tunables[i];

		if (mr_tunable_is_cfg(t) && mr_cfg_set(cfg, t->off, t->unit, p[i]))
			return -EINVAL;
	}
	/* Timeouts left at their defaults are at least the floor given. */
	if (p[MR_TUN_rto_init_us] == mr_tunables[MR_TUN_rto_init_us].def)
		cfg->rto_init_ns = max(cfg->rto_init_ns, cfg->rto_min_ns);
	if (p[MR_TUN_rto_max_us] == mr_tunables[MR_TUN_rto_max_us].def)
		cfg->rto_max_ns = max(cfg->rto_max_ns, cfg->rto_min_ns);
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
	unsigned int i;

	if (!mr_udp_port_valid(mr_udp_port)) {
		pr_err("udp_port=%u is not allowed (0, 4791 and 4793 are refused)\n",
		       mr_udp_port);
		return -EINVAL;
	}
	for (i = 0; i < MR_TUN_COUNT; i++) {
		const struct mr_tunable_def *t = &mr_tunables[i];
		unsigned int v = mr_tunable_params[i];

		if (!mr_tunable_is_cfg(t) && (v < t->min || v > t->max)) {
			pr_err("%s=%u is out of range (%u-%u)\n", t->name, v,
			       t->min, t->max);
			return -EINVAL;
		}
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
	unsigned int i;

	if (mr_dev_cfg_default(&dev->conn_cfg))
		return -EINVAL;
	for (i = 0; i < MR_TUN_COUNT; i++) {
		const struct mr_tunable_def *t = &mr_tunables[i];
		u32 v = mr_tunable_params[i];

		switch (t->kind) {
		case MR_TUN_DEV:
			*(u32 *)((char *)dev + t->off) = v;
			break;
		case MR_TUN_DSCP:
			*((u8 *)dev + t->off) = v << 2;
			break;
		case MR_TUN_CAP:
			/* mr_port_update() brings the link's speed later. */
			dev->rx_capacity = v;
			mr_fs_capacity(dev);
			mr_fs_init(&dev->fs, dev->fs_capacity);
			break;
		default:
			break;
		}
	}
	return 0;
}
