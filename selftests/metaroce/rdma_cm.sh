#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 600
#
# librdmacm's example programs between two hosts (network namespaces joined
# by a veth pair, one metaroce device each), connected by rdma_cm over the
# devices' RoCE GIDs: rping (RDMA READ and WRITE of a known pattern, checked
# line by line on both sides), ucmatose (RC SEND/RECV both ways over several
# connections) and udaddy (UD datagrams both ways), over IPv4, then over
# IPv6 with global and with link-local addresses (ipv6_hosts).
. "$(dirname "$0")/lib.sh"
mr_require_module

PORT=18560
UDADDY_PORT=7174 # udaddy has no port option

# rping_expect COUNT SIZE: the lines "rdma-ping-N: TEXT" rping's client
# sends, N = 0..COUNT-1: TEXT runs through the characters 65..122 starting
# at 65 + N (mod 58), and the whole line plus its NUL is SIZE bytes.
rping_expect() {
	awk -v count="$1" -v size="$2" 'BEGIN {
		for (c = 65; c <= 122; c++)
			cycle = cycle sprintf("%c", c)
		rep = cycle
		while (length(rep) < size + 58)
			rep = rep rep
		for (n = 0; n < count; n++) {
			s = "rdma-ping-" n ": "
			print s substr(rep, 1 + n % 58, size - 1 - length(s))
		}
	}'
}

# rping COUNT SIZE [SERVER_ADDR [CLIENT_DEST]]: client in A, server in B
# (at SERVER_ADDR, by default MR_B_IP; the client connects to CLIENT_DEST,
# by default SERVER_ADDR), both printing (-v) and validating (-V) the data;
# the lines must be exactly the expected ones.
rping() {
	local count=$1 size=$2 srv=${3:-$MR_B_IP} name=rping_$2 side prefix
	local dst=${4:-$srv}
	mr_pair "$name" "cm:$PORT" \
		rping -s -a "$srv" -p "$PORT" -C "$count" -S "$size" -v -V -- \
		rping -c -a "$dst" -p "$PORT" -C "$count" -S "$size" -v -V
	rping_expect "$count" "$size" | cut -c 1-1000 >"$MR_TMP/$name.expect"
	for side in client server; do
		prefix="ping data: "
		[[ $side == client ]] || prefix="server ping data: "
		# rping's threads share stdout: its disconnect message can cut
		# into the last data line. rping -V checked every byte itself;
		# here each line's first 1000 characters are compared.
		grep -F "$prefix" "$MR_TMP/$name.$side" | sed -e "s/^$prefix//" |
			cut -c 1-1000 >"$MR_TMP/$name.$side.data" || true
		if ! cmp -s "$MR_TMP/$name.expect" "$MR_TMP/$name.$side.data"; then
			diff "$MR_TMP/$name.expect" "$MR_TMP/$name.$side.data" |
				head -n 10 | cut -c 1-160
			mr_fail "rping $side: the ping data differ from the" \
				"$count expected lines of $size bytes"
		fi
	done
	mr_log "rping: $count pings of $size bytes, data checked on both sides"
}

rping_small() { rping 20 64; }
rping_large() { rping 10 65000; }

# check_cma NAME: ucmatose/udaddy's report on both sides.
check_cma() {
	local side out
	for side in client server; do
		out=$MR_TMP/$1.$side
		grep -qx "data transfers complete" "$out" ||
			mr_fail "$1 $side: no 'data transfers complete'"
		grep -qx "return status 0" "$out" ||
			mr_fail "$1 $side: no 'return status 0'"
	done
}

# ucmatose CONNECTIONS MESSAGES SIZE [SERVER_ADDR [CLIENT_DEST]]: the
# server listens on SERVER_ADDR (by default on every IPv4 address), the
# client connects to CLIENT_DEST (by default SERVER_ADDR, or MR_B_IP).
ucmatose() {
	local name=ucmatose_$1x$2x$3 bind=()
	local dst=${5:-${4:-$MR_B_IP}}
	[[ -z ${4:-} ]] || bind=(-b "$4")
	mr_pair "$name" "cm:$PORT" \
		ucmatose "${bind[@]}" -p "$PORT" -c "$1" -C "$2" -S "$3" -- \
		ucmatose -s "$dst" -p "$PORT" -c "$1" -C "$2" -S "$3"
	check_cma "$name"
	mr_log "ucmatose: $1 connections x $2 messages of $3 bytes each way"
}

ucmatose_default() { ucmatose 1 10 100; }
ucmatose_many() { ucmatose 8 50 16384; }

# udaddy CONNECTIONS MESSAGES SIZE [SERVER_ADDR [CLIENT_DEST]] (a datagram
# fits the IB MTU of 1024), addressed as ucmatose's.
udaddy() {
	local name=udaddy_$1x$2x$3 bind=()
	local dst=${5:-${4:-$MR_B_IP}}
	[[ -z ${4:-} ]] || bind=(-b "$4")
	mr_pair "$name" "cm:$UDADDY_PORT" \
		udaddy "${bind[@]}" -c "$1" -C "$2" -S "$3" -- \
		udaddy -s "$dst" -c "$1" -C "$2" -S "$3"
	check_cma "$name"
	mr_log "udaddy: $1 connections x $2 datagrams of $3 bytes each way"
}

udaddy_default() { udaddy 1 10 100; }
udaddy_many() { udaddy 8 50 1024; }

# IPv6 (the subtests after it): a global (unique local) and a link-local
# address at each end, both
# without duplicate address detection (its delay). A also gets a second
# link, a dummy interface whose route to fe80::/64 comes before its veth's:
# only a device that sends to a link-local address out of its own netdev,
# not where the routing table's first fe80::/64 route goes, reaches B.
MR_A_IP6=fd00:9:2::1 MR_B_IP6=fd00:9:2::2
MR_A_LL=fe80::9:2:1 MR_B_LL=fe80::9:2:2

ipv6_hosts() {
	ip -n "$MR_A_NS" addr add "$MR_A_IP6/64" dev "$MR_A_IF" nodad
	ip -n "$MR_B_NS" addr add "$MR_B_IP6/64" dev "$MR_B_IF" nodad
	ip -n "$MR_A_NS" addr add "$MR_A_LL/64" dev "$MR_A_IF" nodad
	ip -n "$MR_B_NS" addr add "$MR_B_LL/64" dev "$MR_B_IF" nodad
	ip -n "$MR_A_NS" link add mrdpa_ll type dummy
	ip -n "$MR_A_NS" link set mrdpa_ll up
	ip -n "$MR_A_NS" -6 route add fe80::/64 dev mrdpa_ll metric 1
	mr_wait_dev "$MR_A_DEV" "$MR_A_IP6"
	mr_wait_dev "$MR_B_DEV" "$MR_B_IP6"
	mr_wait_dev "$MR_A_DEV" "$MR_A_LL"
	mr_wait_dev "$MR_B_DEV" "$MR_B_LL"
}

rping_ipv6() { rping 20 64 "$MR_B_IP6"; }
ucmatose_ipv6() { ucmatose 4 20 4096 "$MR_B_IP6"; }
udaddy_ipv6() { udaddy 2 10 1024 "$MR_B_IP6"; }
# A link-local address takes its link (zone) with it: B's own at the
# server, A's at the client.
rping_link_local() {
	rping 20 64 "$MR_B_LL%$MR_B_IF" "$MR_B_LL%$MR_A_IF"
}
ucmatose_link_local() {
	ucmatose 2 20 4096 "$MR_B_LL%$MR_B_IF" "$MR_B_LL%$MR_A_IF"
}
udaddy_link_local() {
	udaddy 2 10 1024 "$MR_B_LL%$MR_B_IF" "$MR_B_LL%$MR_A_IF"
}

mr_setup two_hosts mr_two_hosts
mr_run rping_small rping_small
mr_run rping_large rping_large
mr_run ucmatose ucmatose_default
mr_run ucmatose_many ucmatose_many
mr_run udaddy udaddy_default
mr_run udaddy_many udaddy_many
mr_setup ipv6 ipv6_hosts
mr_run rping_ipv6 rping_ipv6
mr_run ucmatose_ipv6 ucmatose_ipv6
mr_run udaddy_ipv6 udaddy_ipv6
mr_run rping_link_local rping_link_local
mr_run ucmatose_link_local ucmatose_link_local
mr_run udaddy_link_local udaddy_link_local
mr_done
