#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `rdma link add NAME type metaroce` loads the module on demand (through its
# rdma-link alias and the kernel's request_module) and creates the device;
# `rdma link delete` removes it.
. "$(dirname "$0")/lib.sh"
mr_require_module

autoload() {
	mr_mod_unload || mr_fail "cannot unload $MR_MOD before the test"
	mr_veth mrt0 mrt1
	mr_link_add mrauto mrt0
	assert_ok "module loaded by rdma link add" mr_mod_loaded
	assert_ok "device created" mr_dev_exists mrauto
	assert_match "rdma link show" "^link mrauto/1 .* netdev mrt0" \
		"$(rdma link show mrauto/1)"
	assert_ok "rdma link delete" rdma link delete mrauto
	assert_wait "device removed" 5 mr_dev_gone mrauto
	assert_eq "rdma link lists it" "" "$(rdma link show | grep -w mrauto || true)"
}

mr_run autoload autoload
mr_done
