#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The port's active MTU follows the netdev MTU: the largest IB MTU (256, 512,
# 1024, 2048, 4096) that fits in the netdev MTU minus the IP/UDP/MetaRoCE
# header overhead documented in Documentation/admin-guide.rst
# (mtu_overhead). 1500 must give 1024 and 9000 must give 4096.
. "$(dirname "$0")/lib.sh"
mr_require_module

# ib_mtu NETDEV_MTU OVERHEAD: what ibv_devinfo should print.
ib_mtu() {
	local m code=5
	for m in 4096 2048 1024 512 256; do
		if ((m <= $1 - $2)); then
			echo "$m ($code)"
			return
		fi
		code=$((code - 1))
	done
	echo "none"
}

mtu_is() { [[ $(mr_devinfo mrmtu active_mtu) == "$1" ]]; }

follows_netdev() {
	local ovh mtu want
	ovh=$(mr_doc_value mtu_overhead)
	assert_eq "mapping of 1500" "1024 (3)" "$(ib_mtu 1500 "$ovh")"
	assert_eq "mapping of 9000" "4096 (5)" "$(ib_mtu 9000 "$ovh")"
	mr_veth mrt0 mrt1
	mr_link_add mrmtu mrt0
	for mtu in 9000 1500 4200 2200 1200 9000 1500; do
		ip link set mrt0 mtu "$mtu"
		want=$(ib_mtu "$mtu" "$ovh")
		wait_for 5 mtu_is "$want" ||
			assert_eq "active_mtu at netdev mtu $mtu" "$want" \
				"$(mr_devinfo mrmtu active_mtu)"
	done
}

mr_run follows_netdev follows_netdev
mr_done
