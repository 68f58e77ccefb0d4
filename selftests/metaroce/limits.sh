#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 900
#
# The device's limits, enforced (Documentation/admin-guide.rst, "Device
# limits" and "Transport tunables"), by mr_limits (userspace/tools):
#
#   objects     every object count ibv_devinfo reports (max_pd, max_mr,
#               max_cq, max_srq, max_qp, max_ah) is what the device takes,
#               counting what it already has (rdma resource show), and the
#               next object is refused with ENOMEM; attributes past their
#               limits are refused with EINVAL
#   memcg       a process in a memory cgroup creating deep QPs, CQs, SRQs
#               and connections to 16 addresses: 80 % or more of the kernel
#               memory they take is charged to its cgroup
#   peers       max_peers and max_peer_mem_mb: at either limit a connection
#               to a new address is refused with ENOMEM, a QP to a known
#               one is not, and a peer that lost its last QP makes room
#   churn       CHURN times (default 2000): an RC QP created, connected to
#               a new address that nobody answers, a SEND posted, the QP
#               destroyed; with max_peers 64 the device never holds more,
#               kernel memory stays within 64 peers' worth of its start and
#               stops growing, every peer is gone within 30 s of the end and
#               kernel memory comes back within 1.5 MiB
#
# A's addresses 10.200.x.y are routed to B, which does not forward them:
# the device resolves them and nothing ever answers.
. "$(dirname "$0")/lib.sh"
mr_require_module

TOOL=$MR_TOP/build/userspace/tools/mr_limits
PREFIX=10.200
CHURN=${MR_LIMITS_CHURN:-2000}
CHURN_PEERS=64

[[ -x $TOOL ]] || mr_skip_all "$TOOL is missing: run make userspace"

setup() {
	mr_two_hosts
	ip -n "$MR_A_NS" route add "$PREFIX.0.0/16" via "$MR_B_IP"
}

# run CMD...: CMD bounded in time. In the initial namespace, where it sees
# debugfs and the cgroup tree: A's device sends in A's namespace whatever
# the caller's (ib_core resolves addresses in the namespace of the GID's
# netdev).
run() {
	timeout -k 5 "$(mr_secs 600)" "$@"
}

# no_peers: A's device holds no peer (debugfs).
no_peers() {
	! grep -q '^peer ' "/sys/kernel/debug/metaroce/$MR_A_DEV/peers"
}

# have DEV: DEV's objects as rdma resource counts them, "pd=1,cq=2,...".
have() {
	rdma resource show | awk -v d="$1:" '$2 == d {
		for (i = 3; i < NF; i += 2) s = s (s ? "," : "") $i "=" $(i + 1)
		print s }'
}

objects() {
	local h
	h=$(have "$MR_A_DEV")
	[[ -n $h ]] || mr_fail "no rdma resource line for $MR_A_DEV"
	run "$TOOL" objects "$MR_A_DEV" "$h" || mr_fail "mr_limits objects failed"
}

memcg() {
	local root=/sys/fs/cgroup cg
	if [[ $(stat -fc %T "$root" 2>/dev/null) != cgroup2fs ]]; then
		mount -t cgroup2 none "$root" || mr_skip "cannot mount cgroup2"
		mr_defer umount "$root"
	fi
	grep -qw memory "$root/cgroup.controllers" ||
		mr_skip "no memory controller"
	echo +memory >"$root/cgroup.subtree_control"
	cg=$root/mrlimits.$$
	mkdir "$cg"
	mr_defer rmdir "$cg"
	assert_wait "no peer left" 30 no_peers
	run "$TOOL" memcg "$MR_A_DEV" "$MR_A_GIDX" "$cg" "$PREFIX" ||
		mr_fail "mr_limits memcg failed"
}

peers() {
	assert_wait "no peer left" 30 no_peers
	run "$TOOL" peers "$MR_A_DEV" "$MR_A_GIDX" "$PREFIX" ||
		mr_fail "mr_limits peers failed"
}

churn() {
	assert_wait "no peer left" 30 no_peers
	run "$TOOL" churn "$MR_A_DEV" "$MR_A_GIDX" "$PREFIX" "$CHURN" \
		"$CHURN_PEERS" || mr_fail "mr_limits churn failed"
}

mr_setup two_hosts setup
mr_run objects objects
mr_run memcg memcg
mr_run peers peers
mr_run churn churn
mr_done
