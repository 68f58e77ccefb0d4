#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The port's active MTU follows the netdev MTU: the largest IB MTU (256, 512,
# 1024, 2048, 4096) that fits in the netdev MTU minus the IP/UDP/MetaRoCE
# header overhead documented in Documentation/admin-guide.rst
# (mtu_overhead). 1500 must give 1024 and 9000 must give 4096.
#
# RC data segments are not held to that IB MTU: they carry what the netdev
# MTU leaves after the IP, UDP and largest MetaRoCE data header of the
# connection's address family (protocol.rst 5.5), at most 4096 bytes.
# Between two hosts over IPv4 and IPv6, at MTU 1500 and 9000,
# ibv_rc_pingpong's client sends its SENDs: its data segment counter must
# grow by exactly iterations x ceil(size / that segment size), and the
# transfer must succeed (a segment too big for the MTU would not arrive).
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

PORT=18521
A_IP6=fd00:9:2::1 B_IP6=fd00:9:2::2

# pingpong NAME GID_A GID_B SEG: 20 SENDs of 64 KiB from A, counted.
pingpong() {
	local name=$1 ga=$2 gb=$3 seg=$4 n=20 size=65536 before=$MR_TMP/$1.before
	local want got
	mr_stats "$MR_A_DEV" >"$before"
	mr_pair "$name" "tcp:$PORT" \
		ibv_rc_pingpong -d "$MR_B_DEV" -g "$gb" -p "$PORT" -s "$size" -n "$n" -- \
		ibv_rc_pingpong -d "$MR_A_DEV" -g "$ga" -p "$PORT" -s "$size" -n "$n" "$MR_B_IP"
	mr_stats "$MR_A_DEV" >"$MR_TMP/$name.after"
	want=$((n * ((size + seg - 1) / seg)))
	got=$(mr_stat_delta "$before" "$MR_TMP/$name.after" data_segments_tx) ||
		mr_fail "no data_segments_tx counter"
	assert_eq "$name: data segments of $n x $size bytes at $seg bytes each" \
		"$want" "$got"
}

rc_segments() {
	local ovh4 ovh6 mtu seg4 seg6 g6a g6b
	ovh4=$(mr_doc_value mtu_overhead_ipv4)
	ovh6=$(mr_doc_value mtu_overhead)
	assert_eq "IPv4 segment at 1500" 1396 $((1500 - ovh4))
	assert_eq "IPv6 segment at 1500" 1376 $((1500 - ovh6))
	mr_two_hosts
	ip -n "$MR_A_NS" addr add "$A_IP6/64" dev "$MR_A_IF" nodad
	ip -n "$MR_B_NS" addr add "$B_IP6/64" dev "$MR_B_IF" nodad
	mr_wait_dev "$MR_A_DEV" "$A_IP6" g6a
	mr_wait_dev "$MR_B_DEV" "$B_IP6" g6b
	for mtu in 1500 9000; do
		ip -n "$MR_A_NS" link set "$MR_A_IF" mtu "$mtu"
		ip -n "$MR_B_NS" link set "$MR_B_IF" mtu "$mtu"
		seg4=$((mtu - ovh4 < 4096 ? mtu - ovh4 : 4096))
		seg6=$((mtu - ovh6 < 4096 ? mtu - ovh6 : 4096))
		pingpong "ipv4_$mtu" "$MR_A_GIDX" "$MR_B_GIDX" "$seg4"
		pingpong "ipv6_$mtu" "$g6a" "$g6b" "$seg6"
	done
}

mr_run follows_netdev follows_netdev
mr_run rc_segments rc_segments
mr_done
