#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `rmmod metaroce` with devices present removes them cleanly (run_tests.sh and
# the VM runner fail the test on any kernel warning) and the module loads and
# works again afterwards.
. "$(dirname "$0")/lib.sh"
mr_require_module

with_devices() {
	mr_veth mrt0 mrt1
	mr_veth mrt2 mrt3
	mr_link_add mrul0 mrt0
	mr_link_add mrul1 mrt2
	assert_ok "rmmod with two devices" rmmod "$MR_MOD"
	assert_wait "module gone" 10 mr_mod_gone
	assert_ok "mrul0 removed" mr_dev_gone mrul0
	assert_ok "mrul1 removed" mr_dev_gone mrul1
	assert_eq "rdma link" "" "$(rdma link show 2>/dev/null | grep -E 'mrul[01]/' || true)"
	# And it comes back.
	mr_link_add mrul0 mrt0
	assert_ok "device again after reload" mr_dev_exists mrul0
	assert_ok "rdma link delete" rdma link delete mrul0
	assert_ok "rmmod without devices" rmmod "$MR_MOD"
}

mr_run with_devices with_devices
mr_done
