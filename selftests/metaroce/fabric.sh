# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Multiplane fabric for the kselftests; source it after lib.sh.
#
# mr_fabric PLANES builds two hosts, A and B, joined by PLANES independent
# planes. Each plane is a router namespace with one veth link to each host:
#
#             +-- fa0 == ra0 [plane 0: mrfr0] rb0 == fb0 --+
#   A: mrfa --+-- fa1 == ra1 [plane 1: mrfr1] rb1 == fb1 --+-- B: mrfb
#   10.9.40.1 +-- ...                                      + 10.9.40.2
#    on mrlo                                                  on mrlo
#
# Link addresses: A-side 10.40.P.1 (host) / .254 (router), B-side
# 10.41.P.1 / .254. Each host's address, and so its device's GID, lives on
# a dummy interface (mrlo) and is reached over all planes: the hosts route
# the other host's address over one nexthop per plane with layer-4 hashing
# (net.ipv4.fib_multipath_hash_policy=1), so a packet's UDP source port
# picks its plane, as on multiplane hosts in practice. The metaroce
# devices are bound to mrlo.
#
# Sets, for mr_pair and the tests: MR_A_NS MR_B_NS MR_A_DEV MR_B_DEV
# MR_A_IP MR_B_IP MR_A_GIDX MR_B_GIDX, and MR_PLANES.

MR_FAB_A_IP=10.9.40.1 MR_FAB_B_IP=10.9.40.2

_mr_fab_router() { echo "mrfr$1"; }

# mr_fabric PLANES
mr_fabric() {
	local planes=$1 p r hops_a=() hops_b=() ns
	mr_tmpdir
	mr_debugfs
	# shellcheck disable=SC2034 # used by the test programs and mr_pair
	{
		MR_PLANES=$planes
		MR_A_NS=mrfa MR_B_NS=mrfb MR_A_DEV=mrfa_dev MR_B_DEV=mrfb_dev
		MR_A_IP=$MR_FAB_A_IP MR_B_IP=$MR_FAB_B_IP
	}
	mr_netns "$MR_A_NS" "$MR_B_NS"
	for ((p = 0; p < planes; p++)); do
		r=$(_mr_fab_router "$p")
		mr_netns "$r"
		ip netns exec "$r" sysctl -qw net.ipv4.ip_forward=1
		mr_veth "fa$p" "ra$p" "$MR_A_NS" "$r"
		mr_veth "fb$p" "rb$p" "$MR_B_NS" "$r"
		ip -n "$MR_A_NS" addr add "10.40.$p.1/24" dev "fa$p"
		ip -n "$r" addr add "10.40.$p.254/24" dev "ra$p"
		ip -n "$MR_B_NS" addr add "10.41.$p.1/24" dev "fb$p"
		ip -n "$r" addr add "10.41.$p.254/24" dev "rb$p"
		ip -n "$r" route add "$MR_FAB_A_IP/32" via "10.40.$p.1"
		ip -n "$r" route add "$MR_FAB_B_IP/32" via "10.41.$p.1"
		hops_a+=(nexthop via "10.40.$p.254" dev "fa$p")
		hops_b+=(nexthop via "10.41.$p.254" dev "fb$p")
	done
	for ns in "$MR_A_NS" "$MR_B_NS"; do
		ip netns exec "$ns" sysctl -qw net.ipv4.fib_multipath_hash_policy=1
		ip -n "$ns" link add mrlo type dummy
		ip -n "$ns" link set mrlo up
	done
	ip -n "$MR_A_NS" addr add "$MR_FAB_A_IP/32" dev mrlo
	ip -n "$MR_B_NS" addr add "$MR_FAB_B_IP/32" dev mrlo
	# src: a connection (perftest's TCP exchange, rdma_cm) must come from
	# the host address too, not from the first plane's link address.
	ip -n "$MR_A_NS" route add "$MR_FAB_B_IP/32" src "$MR_FAB_A_IP" "${hops_a[@]}"
	ip -n "$MR_B_NS" route add "$MR_FAB_A_IP/32" src "$MR_FAB_B_IP" "${hops_b[@]}"
	mr_link_add "$MR_A_DEV" mrlo "$MR_A_NS"
	mr_link_add "$MR_B_DEV" mrlo "$MR_B_NS"
	mr_defer mr_netns_kill "$MR_A_NS" "$MR_B_NS"
	assert_wait "$MR_A_DEV has a RoCE v2 GID for $MR_A_IP" 10 \
		mr_gid_index "$MR_A_DEV" "$MR_A_IP"
	assert_wait "$MR_B_DEV has a RoCE v2 GID for $MR_B_IP" 10 \
		mr_gid_index "$MR_B_DEV" "$MR_B_IP"
	# shellcheck disable=SC2034 # used by the test programs
	{
		MR_A_GIDX=$(mr_gid_index "$MR_A_DEV" "$MR_A_IP")
		MR_B_GIDX=$(mr_gid_index "$MR_B_DEV" "$MR_B_IP")
	}
	assert_wait "port of $MR_A_DEV ACTIVE" 10 mr_port_active "$MR_A_DEV"
	assert_wait "port of $MR_B_DEV ACTIVE" 10 mr_port_active "$MR_B_DEV"
	assert_ok "$MR_A_NS reaches $MR_B_IP over the planes" \
		ip netns exec "$MR_A_NS" ping -c 1 -W 5 "$MR_B_IP"
}

# mr_fabric_shape PLANE ARGS...: replaces the root qdisc of plane PLANE's
# router egress towards B (rb<PLANE>) with ARGS (a tc qdisc spec: tbf,
# netem, red...), so that A->B data meets it.
mr_fabric_shape() {
	local p=$1
	shift
	assert_ok "plane $p: tc qdisc $*" ip netns exec "$(_mr_fab_router "$p")" \
		tc qdisc replace dev "rb$p" root "$@"
}

# mr_fabric_bytes: bytes each plane carried towards B so far, one number
# per plane on one line.
mr_fabric_bytes() {
	local p out=()
	for ((p = 0; p < MR_PLANES; p++)); do
		out+=("$(ip netns exec "$(_mr_fab_router "$p")" \
			cat "/sys/class/net/rb$p/statistics/tx_bytes")")
	done
	echo "${out[*]}"
}

# mr_fabric_blackhole PLANE on|off: plane PLANE drops every packet between
# the hosts, in both directions (its router's routes to the two host
# addresses become blackhole routes), or stops doing so. The hosts' links
# stay up and their routes keep using the plane: a silent failure, which
# only the transport can detect. The plane's qdiscs (mr_fabric_shape) are
# left alone, so a restored plane keeps its shape.
mr_fabric_blackhole() {
	local r ip via
	r=$(_mr_fab_router "$1")
	for ip in "$MR_FAB_A_IP 10.40.$1.1" "$MR_FAB_B_IP 10.41.$1.1"; do
		read -r ip via <<<"$ip"
		if [[ $2 == on ]]; then
			assert_ok "plane $1: blackhole $ip" \
				ip -n "$r" route replace blackhole "$ip/32"
		else
			assert_ok "plane $1: route $ip again" \
				ip -n "$r" route replace "$ip/32" via "$via"
		fi
	done
}

# mr_fabric_planes N: A reaches B over the first N planes only (N >= 1),
# as if the others were not there; the route back is left alone.
mr_fabric_planes() {
	local p hops=()
	for ((p = 0; p < $1; p++)); do
		hops+=(nexthop via "10.40.$p.254" dev "fa$p")
	done
	if (($1 == 1)); then
		hops=(via 10.40.0.254 dev fa0)
	fi
	assert_ok "A reaches B over $1 plane(s)" ip -n "$MR_A_NS" route replace \
		"$MR_FAB_B_IP/32" src "$MR_FAB_A_IP" "${hops[@]}"
}

# mr_fabric_sampler_start FILE / mr_fabric_sampler_stop: while running,
# appends to FILE, about every 20 ms, a line "TIME BYTES_0 ... BYTES_N-1":
# the wall clock (seconds, EPOCHREALTIME) and the bytes B has received
# from each plane so far. The loop runs in B's namespace and reads sysfs
# with shell built-ins only, so that it costs the emulated CPU little.
mr_fabric_sampler_start() {
	# shellcheck disable=SC2016 # the inner shell expands them
	ip netns exec "$MR_B_NS" bash -c '
		while :; do
			s=$EPOCHREALTIME
			for ((p = 0; p < '"$MR_PLANES"'; p++)); do
				read -r x <"/sys/class/net/fb$p/statistics/rx_bytes"
				s+=" $x"
			done
			echo "$s"
			sleep 0.02
		done' >"$1" &
	_mr_fab_sampler=$!
	mr_defer kill "$_mr_fab_sampler" 2>/dev/null
}
mr_fabric_sampler_stop() {
	kill "$_mr_fab_sampler" 2>/dev/null || true
	wait "$_mr_fab_sampler" 2>/dev/null || true
}
