# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# selftests/bench/veth_pair.sh: the two-host topology of the benchmarks that
# compare metaroce with rxe in one boot, sourced by fastpath.sh and
# scale.sh. One veth pair VA/VB (addresses IPA/IPB, MTU 1500):
#
#   topo_metaroce   VA in namespace NA, VB in NB, a metaroce device on each
#                   (${DEVS}_mra, ${DEVS}_mrb)
#   topo_rxe        the same pair moved to the initial namespace, where
#                   Debian 6.12's rxe works, with policy routing (tables
#                   TBL_A/TBL_B, rules at RULE_PREF, the local rule moved to
#                   LOCAL_PREF) so that IPA <-> IPB crosses the veth rather
#                   than lo; rxe devices ${DEVS}_rxa, ${DEVS}_rxb
#   veth_pair_cleanup   undoes both
#
# The caller sets those variables and defines die and wait_for SECONDS CMD.

# gid_index DEV IP: the GID table index of IP (IPv4-mapped, RoCE v2).
gid_index() {
	local want f i o
	IFS=. read -ra o <<<"$2"
	printf -v want '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "${o[@]}"
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		i=${f##*/}
		[[ $(<"$f") == "$want" ]] || continue
		[[ $(<"/sys/class/infiniband/$1/ports/1/gid_attrs/types/$i") == "RoCE v2" ]] ||
			continue
		echo "$i"
		return 0
	done
	return 1
}

veth_pair_cleanup() {
	local d
	for d in mra mrb rxa rxb; do
		rdma link delete "${DEVS}_$d" 2>/dev/null
	done
	ip link del "$VA" 2>/dev/null
	ip netns exec "$NA" ip link del "$VA" 2>/dev/null
	ip netns del "$NA" 2>/dev/null
	ip netns del "$NB" 2>/dev/null
	# The local rule back at 0, once (the kernel takes a duplicate).
	ip rule show | grep -q '^0:.*lookup local' ||
		ip rule add pref 0 lookup local 2>/dev/null
	ip rule del pref "$LOCAL_PREF" lookup local 2>/dev/null
	ip rule del pref "$RULE_PREF" 2>/dev/null
	ip rule del pref "$((RULE_PREF + 1))" 2>/dev/null
}

# link_up NS DEV IP: DEV (in NS, or the initial namespace if empty) up with
# IP/24 and MTU 1500.
link_up() {
	ip ${1:+-n "$1"} link set "$2" mtu 1500
	ip ${1:+-n "$1"} addr replace "$3/24" dev "$2"
	ip ${1:+-n "$1"} link set "$2" up
}

# add_dev TYPE NAME NS NETDEV IP: an RDMA link whose IPv4 GID is ready.
add_dev() {
	if [[ -n $3 ]]; then
		ip netns exec "$3" rdma link add "$2" type "$1" netdev "$4"
	else
		rdma link add "$2" type "$1" netdev "$4"
	fi || die "rdma link add $2 type $1 netdev $4 failed"
	wait_for 10 gid_index "$2" "$5" || die "$2 has no GID for $5"
}

# metaroce: VA in NA, VB in NB, a device on each.
topo_metaroce() {
	if ! ip netns add "$NA" || ! ip netns add "$NB"; then
		die "cannot create namespaces"
	fi
	ip -n "$NA" link set lo up
	ip -n "$NB" link set lo up
	ip link add "$VA" netns "$NA" type veth peer name "$VB" netns "$NB" ||
		die "cannot create the veth pair"
	link_up "$NA" "$VA" "$IPA"
	link_up "$NB" "$VB" "$IPB"
	add_dev metaroce "${DEVS}_mra" "$NA" "$VA" "$IPA"
	add_dev metaroce "${DEVS}_mrb" "$NB" "$VB" "$IPB"
}

# rxe: the same veth pair moved to the initial namespace; packets from IPA
# to IPB (and back) are routed over it rather than over lo.
topo_rxe() {
	local d
	rdma link delete "${DEVS}_mra"
	rdma link delete "${DEVS}_mrb"
	ip -n "$NA" link set "$VA" netns 1
	ip -n "$NB" link set "$VB" netns 1
	for d in all default "$VA" "$VB"; do
		sysctl -qw "net.ipv4.conf.$d.rp_filter=0"
	done
	sysctl -qw "net.ipv4.conf.$VA.accept_local=1" \
		"net.ipv4.conf.$VB.accept_local=1"
	link_up "" "$VA" "$IPA"
	link_up "" "$VB" "$IPB"
	ip rule add pref "$RULE_PREF" iif lo to "$IPB" lookup "$TBL_A"
	ip rule add pref "$((RULE_PREF + 1))" iif lo to "$IPA" lookup "$TBL_B"
	ip rule add pref "$LOCAL_PREF" lookup local
	ip rule del pref 0 lookup local
	ip route replace "$IPB" dev "$VA" src "$IPA" table "$TBL_A"
	ip route replace "$IPA" dev "$VB" src "$IPB" table "$TBL_B"
	ip neigh replace "$IPB" lladdr "$(<"/sys/class/net/$VB/address")" \
		dev "$VA" nud permanent
	ip neigh replace "$IPA" lladdr "$(<"/sys/class/net/$VA/address")" \
		dev "$VB" nud permanent
	[[ $(ip -o route get "$IPB" from "$IPA") == *" dev $VA "* ]] ||
		die "policy routing: $IPA -> $IPB does not leave through $VA"
	add_dev rxe "${DEVS}_rxa" "" "$VA" "$IPA"
	add_dev rxe "${DEVS}_rxb" "" "$VB" "$IPB"
}
