#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Network namespaces: each device's UDP socket lives in the namespace of its
# netdev, datagrams arriving there are counted by that device only, the
# socket goes with the last device of the namespace, and exclusive rdma
# netns mode behaves as documented in admin-guide.rst.
. "$(dirname "$0")/lib.sh"
mr_require_module

# Two "hosts" joined by a veth: mra (10.9.0.1, device mra_dev) and
# mrb (10.9.0.2, device mrb_dev).
two_hosts() {
	mr_netns mra mrb
	mr_veth mra0 mrb0 mra mrb
	ip -n mra addr add 10.9.0.1/24 dev mra0
	ip -n mrb addr add 10.9.0.2/24 dev mrb0
	mr_link_add mra_dev mra0 mra
	mr_link_add mrb_dev mrb0 mrb
}

socket_per_namespace() {
	local port
	two_hosts
	port=$(mr_udp_port)
	assert_ok "UDP :$port bound in mra" mr_udp_listening mra "$port"
	assert_ok "UDP :$port bound in mrb" mr_udp_listening mrb "$port"
	if mr_udp_listening "" "$port"; then
		mr_fail "UDP :$port bound in the initial namespace, which has no device"
	fi
}

# send NS ADDR PORT: one junk datagram.
send() {
	ip netns exec "$1" bash -c "echo mr-junk >/dev/udp/$2/$3"
}

rx_counted_by_owner() {
	local port a0 b0 a1 b1
	two_hosts
	port=$(mr_udp_port)
	a0=$(mr_rx_count mra_dev) b0=$(mr_rx_count mrb_dev)
	send mrb 10.9.0.1 "$port" # arrives in mra
	wait_for 5 test "$(mr_rx_count mra_dev)" -gt "$a0" || true
	a1=$(mr_rx_count mra_dev) b1=$(mr_rx_count mrb_dev)
	((a1 > a0)) || mr_fail "mra_dev rx counters did not move ($a0 -> $a1)"
	assert_eq "mrb_dev rx counters after a datagram to mra" "$b0" "$b1"
	send mra 10.9.0.2 "$port" # arrives in mrb
	wait_for 5 test "$(mr_rx_count mrb_dev)" -gt "$b1" ||
		mr_fail "mrb_dev rx counters did not move"
	assert_eq "mra_dev rx counters after a datagram to mrb" "$a1" "$(mr_rx_count mra_dev)"
}

not_listening() { ! mr_udp_listening "$1" "$2"; }

socket_follows_last_device() {
	local port
	two_hosts
	mr_veth mra1 mrb1 mra mrb
	mr_link_add mra_dev2 mra1 mra
	port=$(mr_udp_port)
	ip netns exec mra rdma link delete mra_dev
	assert_ok "socket kept while mra_dev2 lives" mr_udp_listening mra "$port"
	ip netns exec mra rdma link delete mra_dev2
	assert_wait "socket closed with the last device of mra" 5 not_listening mra "$port"
	assert_ok "mrb's socket untouched" mr_udp_listening mrb "$port"
}

# ib_core refuses to change the mode (EBUSY) while any namespace but the
# initial one exists, and namespaces die asynchronously: retry a while.
netns_mode() { wait_for 20 rdma system set netns "$1"; }

# Documentation/admin-guide.rst ("RDMA namespace modes"): moving a device
# to another namespace fails with EOPNOTSUPP (no disassociate_ucontext yet).
# A netns_exclusive entry ("supported"/"unsupported") in the guide's tables
# overrides this when that changes.
exclusive_mode() {
	local want=unsupported
	if grep -qE '^[`| ]*netns_exclusive' "$MR_TOP/Documentation/admin-guide.rst"; then
		want=$(mr_doc_value netns_exclusive)
	fi
	mr_defer netns_mode shared # runs last, after the namespace is gone
	netns_mode exclusive || mr_fail "rdma system set netns exclusive:" \
		"$(rdma system set netns exclusive 2>&1)"
	assert_match "rdma system show" "netns exclusive" "$(rdma system show)"
	mr_netns mrx
	mr_veth mrt0 mrt1
	mr_link_add mrexc mrt0
	case $want in
	supported)
		assert_ok "rdma dev set mrexc netns mrx" rdma dev set mrexc netns mrx
		assert_match "visible in mrx" "mrexc" "$(ip netns exec mrx rdma dev show)"
		;;
	unsupported)
		assert_fails "rdma dev set mrexc netns mrx" "not supported" \
			rdma dev set mrexc netns mrx
		assert_match "still in the initial namespace" "mrexc" "$(rdma dev show)"
		if ip netns exec mrx rdma dev show | grep -qw mrexc; then
			mr_fail "mrexc visible in mrx in exclusive mode"
		fi
		;;
	*) mr_fail "netns_exclusive is documented as '$want', not supported/unsupported" ;;
	esac
	rdma link delete mrexc
	ip netns del mrx
	netns_mode shared || mr_fail "cannot return to shared mode:" \
		"$(rdma system set netns shared 2>&1)"
}

mr_run socket_per_namespace socket_per_namespace
mr_run rx_counted_by_owner rx_counted_by_owner
mr_run socket_follows_last_device socket_follows_last_device
mr_run exclusive_mode exclusive_mode
mr_done
