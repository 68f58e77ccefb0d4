#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A metaroce device goes away with its netdev: deleting the veth, or the
# network namespace holding it, removes the device.
. "$(dirname "$0")/lib.sh"
mr_require_module

link_gone() { ! rdma link show 2>/dev/null | grep -qw "$1/1"; }

veth_deleted() {
	mr_veth mrt0 mrt1
	mr_link_add mrunreg mrt0
	ip link del mrt0
	assert_wait "device removed with its netdev" 5 mr_dev_gone mrunreg
	assert_ok "rdma link no longer lists it" link_gone mrunreg
}

netns_deleted() {
	mr_netns mrns1
	mr_veth mrt0 mrt1 mrns1
	mr_link_add mrunreg mrt0 mrns1
	ip netns del mrns1
	assert_wait "device removed with the namespace" 10 mr_dev_gone mrunreg
	assert_ok "rdma link no longer lists it" link_gone mrunreg
}

mr_run veth_deleted veth_deleted
mr_run netns_deleted netns_deleted
mr_done
