#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 600
#
# librdmacm's example programs between two hosts (network namespaces joined
# by a veth pair, one metaroce device each), connected by rdma_cm over the
# devices' RoCE GIDs: rping (RDMA READ and WRITE of a known pattern, checked
# line by line on both sides), ucmatose (RC SEND/RECV both ways over several
# connections), udaddy (UD datagrams both ways) and mckey (UD multicast),
# over IPv4, then over IPv6 with global and with link-local addresses
# (ipv6_hosts); and UD multicast through the verbs alone (mr_mcast), over
# IPv4 and IPv6.
. "$(dirname "$0")/lib.sh"
mr_require_module

PORT=18560
MCAST_PORT=18561
MCAST_TOOL=$MR_TOP/build/userspace/tools/mr_mcast
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

# mckey GROUP B_ADDR A_ADDR: rdma_cm's UD multicast. B joins GROUP (bound
# to B_ADDR) and waits for 20 datagrams; A joins it too and sends them to
# the group. Each side waits 3 s after its join before it sends or polls;
# B starts first.
mckey() {
	local name=mckey_${1//[:.%]/_} n=20 size=100
	mr_pair "$name" now \
		mckey -m "$1" -b "$2" -C "$n" -S "$size" -- \
		mckey -m "$1" -b "$3" -s -C "$n" -S "$size"
	check_cma "$name"
	mr_log "mckey: $n datagrams of $size bytes to $1, from A to B"
}

# IPv4 only: rdma_cm refuses to join an IPv6 group on a RoCE v2 port
# (ENOTSUPP, in ib_core, for every device).
mckey_ipv4() { mckey 239.9.2.1 "$MR_B_IP" "$MR_A_IP"; }

# mcast_verbs GROUP A_ADDR [loopback]: the same through the verbs alone
# (mr_mcast): B attaches 3 UD QPs to GROUP with ibv_attach_mcast, A sends
# 20 numbered datagrams to it (with "loopback", another process on B's
# device sends them, from B's address); each QP takes all 20, in order,
# from the group's address; once B's QPs detached, 20 more reach none. The
# host takes a multicast datagram in only for a group its netdev is a
# member of: the device joined it for the QPs, and left it after them (ip
# maddr).
mcast_verbs() {
	local name=mcast_${1//[:.]/_} sender=("$MCAST_TOOL" -d "$MR_A_DEV")
	[[ ${3:-} != loopback ]] ||
		sender=(ip netns exec "$MR_B_NS" "$MCAST_TOOL" -d "$MR_B_DEV")
	mr_pair "$name" "tcp:$MCAST_PORT" \
		"$MCAST_TOOL" -d "$MR_B_DEV" -p "$MCAST_PORT" -q 3 "$1" -- \
		"${sender[@]}" -a "$2" -s "$MR_B_IP" -p "$MCAST_PORT" "$1"
	grep -h "^mr_mcast: OK receiver" "$MR_TMP/$name.server" ||
		mr_fail "mr_mcast's receiver did not report OK"
	grep -h "^mr_mcast: OK sender" "$MR_TMP/$name.client" ||
		mr_fail "mr_mcast's sender did not report OK"
	! ip -n "$MR_B_NS" maddr show dev "$MR_B_IF" | grep -qw "$1" ||
		mr_fail "$MR_B_IF is still a member of $1 with no QP attached"
}

mcast_verbs_ipv4() { mcast_verbs 239.9.2.2 "$MR_A_IP"; }
mcast_verbs_loopback() { mcast_verbs 239.9.2.3 "$MR_B_IP" loopback; }

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
# A site-local IPv6 group: the device joins it with MLD.
mcast_verbs_ipv6() { mcast_verbs ff05::9:2:2 "$MR_A_IP6"; }
mcast_verbs_ipv6_loopback() { mcast_verbs ff05::9:2:3 "$MR_B_IP6" loopback; }

mr_setup two_hosts mr_two_hosts
mr_run rping_small rping_small
mr_run rping_large rping_large
mr_run ucmatose ucmatose_default
mr_run ucmatose_many ucmatose_many
mr_run udaddy udaddy_default
mr_run udaddy_many udaddy_many
mr_run mckey mckey_ipv4
mr_run mcast_verbs mcast_verbs_ipv4
mr_run mcast_verbs_loopback mcast_verbs_loopback
mr_setup ipv6 ipv6_hosts
mr_run rping_ipv6 rping_ipv6
mr_run ucmatose_ipv6 ucmatose_ipv6
mr_run udaddy_ipv6 udaddy_ipv6
mr_run rping_link_local rping_link_local
mr_run ucmatose_link_local ucmatose_link_local
mr_run udaddy_link_local udaddy_link_local
mr_run mcast_verbs_ipv6 mcast_verbs_ipv6
mr_run mcast_verbs_ipv6_loopback mcast_verbs_ipv6_loopback
mr_done
