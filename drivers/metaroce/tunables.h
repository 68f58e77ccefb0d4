/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The transport tunables, once each. From this list come the module
 * parameters and their defaults (config.c), the sysfs files of every
 * device (sysfs.c), the range checks of the device's own tunables, and
 * the checks that Documentation/admin-guide.rst's table, metaroce(7) and
 * the kselftests name them all with these defaults (scripts/check-docs.sh,
 * check-man.sh). Adding a tunable is a line here, its module parameter's
 * description in config.c, and its use.
 *
 * MR_TUNABLE(name, default, kind, field, unit, min, max), one line each,
 * no include guard: a file defines MR_TUNABLE() to make what it needs of
 * each entry, includes this one, and undefines it (as kernel/sched/
 * features.h is used). The description of each is its module parameter's
 * (config.c, in the same order).
 *
 *  kind     CFG: a u32 of struct mr_conn_cfg, in engine units (unit of
 *                them per user unit: ns per us), checked with the whole
 *                configuration by mr_conn_cfg_check(); min and max unused
 *           SHAPE: the same, but it sets the shape of a connection: not
 *                changeable while the device has connections (EBUSY)
 *           DEV: a u32 of struct mr_dev, min..max
 *           DSCP: a DSCP (min..max) kept in a u8 traffic class of
 *                struct mr_dev (shifted by 2: ECN bits clear)
 *           CAP: the fair share's receive capacity, a u32 of struct
 *                mr_dev, min..max Mbit/s, 0 for the link's speed
 *                (mr_fs_capacity())
 *  default  what a device starts with (a number: the documentation
 *           checks read it), and the module parameter's default; the
 *           module parameter of the same name sets it for devices
 *           created afterwards.
 */
MR_TUNABLE(paths, 8, SHAPE, npaths, 1, 0, 0)
MR_TUNABLE(rto_min_us, 4000, CFG, rto_min_ns, NSEC_PER_USEC, 0, 0)
MR_TUNABLE(rto_max_us, 100000, CFG, rto_max_ns, NSEC_PER_USEC, 0, 0)
MR_TUNABLE(rto_init_us, 20000, CFG, rto_init_ns, NSEC_PER_USEC, 0, 0)
MR_TUNABLE(probe_us, 10000, CFG, probe_ns, NSEC_PER_USEC, 0, 0)
MR_TUNABLE(dead_after, 3, CFG, dead_after, 1, 0, 0)
MR_TUNABLE(reorder_thresh, 3, CFG, reorder_thresh, 1, 0, 0)
MR_TUNABLE(ack_delay_us, 20, CFG, ack_delay_ns, NSEC_PER_USEC, 0, 0)
MR_TUNABLE(ack_every, 16, CFG, ack_every, 1, 0, 0)
MR_TUNABLE(msg_ack_us, 1000, CFG, msg_ack_ns, NSEC_PER_USEC, 0, 0)
MR_TUNABLE(init_window, 65536, CFG, init_window, 1, 0, 0)
MR_TUNABLE(min_window, 2200, CFG, min_window, 1, 0, 0)
MR_TUNABLE(max_window, 16777216, CFG, max_window, 1, 0, 0)
MR_TUNABLE(ai_bytes, 4096, CFG, ai_bytes, 1, 0, 0)
MR_TUNABLE(ecn_shift, 4, CFG, ecn_shift, 1, 0, 0)
MR_TUNABLE(repick_alpha, 512, CFG, repick_alpha, 1, 0, 0)
MR_TUNABLE(pacing, 0, CFG, pacing, 1, 0, 0)
MR_TUNABLE(announce, 1, CFG, announce, 1, 0, 0)
MR_TUNABLE(rx_capacity_mbps, 0, CAP, rx_capacity, 1, 0, U32_MAX)
MR_TUNABLE(host_window, 0, DEV, host_window, 1, 0, MR_HOST_WINDOW_MAX)
MR_TUNABLE(dscp, 0, DSCP, tclass, 1, 0, MR_DSCP_MAX)
MR_TUNABLE(ctrl_dscp, 48, DSCP, ctrl_tclass, 1, 0, MR_DSCP_MAX)
MR_TUNABLE(max_peers, 4096, DEV, max_peers, 1, 1, MR_MAX_PEERS_MAX)
MR_TUNABLE(max_peer_mem_mb, 256, DEV, max_peer_mem_mb, 1, 1, MR_MAX_PEER_MEM_MB_MAX)
