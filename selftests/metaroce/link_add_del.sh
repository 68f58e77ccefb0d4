#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Adding and deleting links: user-chosen names are honoured (in sysfs, in
# rdma link and in ibv_devices, i.e. the provider matches them), and bad
# requests are refused with a clear error and leave nothing behind.
. "$(dirname "$0")/lib.sh"
mr_require_module

names() {
	local n
	mr_veth mrt0 mrt1
	for n in mr0 foo x_1-2 z; do
		mr_link_add "$n" mrt0
		assert_ok "$n in sysfs" mr_dev_exists "$n"
		assert_match "$n in rdma link" "^link $n/1 .* netdev mrt0" \
			"$(rdma link show "$n/1")"
		assert_ok "$n in ibv_devices" mr_ibv_has "$n"
		assert_ok "rdma link delete $n" rdma link delete "$n"
		assert_wait "$n removed" 5 mr_dev_gone "$n"
	done
}

duplicate_name() {
	mr_veth mrt0 mrt1
	mr_veth mrt2 mrt3
	mr_link_add mrdup mrt0
	assert_fails "same name, other netdev" "File exists" \
		rdma link add mrdup type "$MR_TYPE" netdev mrt2
	assert_match "first device intact" "^link mrdup/1 .* netdev mrt0" \
		"$(rdma link show mrdup/1)"
}

no_such_netdev() {
	ip link del mrnosuch 2>/dev/null || true
	mr_defer rdma link delete mrbad
	assert_fails "nonexistent netdev" "No such device" \
		rdma link add mrbad type "$MR_TYPE" netdev mrnosuch
	assert_ok "no device left" mr_dev_gone mrbad
}

not_ethernet() {
	mr_defer rdma link delete mrbad
	assert_fails "loopback netdev" "error" \
		rdma link add mrbad type "$MR_TYPE" netdev lo
	assert_ok "no device on lo" mr_dev_gone mrbad
	mr_defer ip link del mrtun0
	modprobe tun # creates /dev/net/tun (no udev here)
	ip tuntap add mode tun name mrtun0
	ip link set mrtun0 up
	assert_fails "tun netdev" "error" \
		rdma link add mrbad type "$MR_TYPE" netdev mrtun0
	assert_ok "no device on tun" mr_dev_gone mrbad
}

same_netdev_twice() {
	mr_veth mrt0 mrt1
	mr_link_add mrone mrt0
	mr_defer rdma link delete mrtwo
	assert_fails "second device on mrt0" "File exists" \
		rdma link add mrtwo type "$MR_TYPE" netdev mrt0
	assert_ok "no second device" mr_dev_gone mrtwo
}

mr_run names names
mr_run duplicate_name duplicate_name
mr_run no_such_netdev no_such_netdev
mr_run not_ethernet not_ethernet
mr_run same_netdev_twice same_netdev_twice
mr_done
