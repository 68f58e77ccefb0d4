#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# What `ibv_devinfo -v` reports for a metaroce device: a RoCE-style port on
# Ethernet, the node GUID derived from the netdev's MAC, an active port, the
# active MTU of the documented mapping and the documented device limits.
. "$(dirname "$0")/lib.sh"
mr_require_module

MAC=00:1b:21:0a:0b:0c

setup() {
	mr_veth mrt0 mrt1
	ip link set mrt0 address "$MAC"
	mr_link_add mrinfo mrt0
}

port() {
	setup
	assert_match transport "^InfiniBand" "$(mr_devinfo mrinfo transport)"
	assert_eq link_layer Ethernet "$(mr_devinfo mrinfo link_layer)"
	assert_eq phys_port_cnt 1 "$(mr_devinfo mrinfo phys_port_cnt)"
	assert_eq state "PORT_ACTIVE (4)" "$(mr_devinfo mrinfo state)"
	assert_eq active_mtu "1024 (3)" "$(mr_devinfo mrinfo active_mtu)"
	assert_eq max_mtu "4096 (5)" "$(mr_devinfo mrinfo max_mtu)"
}

guid() {
	setup
	local want
	want=$(mr_mac_to_guid "$MAC")
	assert_eq "EUI-64 of $MAC" 021b:21ff:fe0a:0b0c "$want"
	assert_eq node_guid "$want" "$(mr_devinfo mrinfo node_guid)"
	assert_eq "sysfs node_guid" "$want" "$(cat /sys/class/infiniband/mrinfo/node_guid)"
}

limits() {
	setup
	local f want got info bad=()
	info=$(ibv_devinfo -v -d mrinfo) # once: it is slow under emulation
	for f in max_mr_size max_qp max_qp_wr max_sge max_cq max_cqe max_mr \
		max_pd max_qp_rd_atom max_qp_init_rd_atom max_srq max_srq_wr \
		max_srq_sge max_pkeys; do
		case $f in
		max_pkeys) want=$(mr_doc_value "$f" pkey_tbl_len) ;;
		*) want=$(mr_doc_value "$f") ;;
		esac
		got=$(awk -v f="$f:" '$1 == f { print $2; exit }' <<<"$info")
		# Values may be written in hex (max_mr_size): compare as numbers.
		[[ $got =~ ^(0x[0-9a-fA-F]+|[0-9]+)$ ]] && (( got == want )) ||
			bad+=("$f: documented $want, device reports '$got'")
	done
	((${#bad[@]} == 0)) || mr_fail "$(printf '%s; ' "${bad[@]}")"
}

mr_run port port
mr_run guid guid
mr_run limits limits
mr_done
