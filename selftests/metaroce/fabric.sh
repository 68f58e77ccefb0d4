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
	mr_wait_dev "$MR_A_DEV" "$MR_A_IP" MR_A_GIDX
	mr_wait_dev "$MR_B_DEV" "$MR_B_IP" MR_B_GIDX
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
# with shell built-ins only (it waits with read -t on a pipe nobody
# writes, not with sleep), so that it costs the emulated CPU little, and
# under SCHED_FIFO, so that a busy guest still runs it on time.
mr_fabric_sampler_start() {
	# shellcheck disable=SC2016 # the inner shell expands them
	ip netns exec "$MR_B_NS" chrt -f 10 bash -c '
		exec 9<> <(:)
		while :; do
			s=$EPOCHREALTIME
			for ((p = 0; p < '"$MR_PLANES"'; p++)); do
				read -r x <"/sys/class/net/fb$p/statistics/rx_bytes"
				s+=" $x"
			done
			echo "$s"
			read -rt 0.02 -u 9 || true
		done' >"$1" &
	_mr_fab_sampler=$!
	mr_defer kill "$_mr_fab_sampler" 2>/dev/null
}
mr_fabric_sampler_stop() {
	kill "$_mr_fab_sampler" 2>/dev/null || true
	wait "$_mr_fab_sampler" 2>/dev/null || true
}

# mr_star N builds N sending hosts and one receiving host joined by one
# router namespace (mrsw): sender i is namespace mrs<i> with link s<i>
# (10.60.i.1/24, router end w<i> 10.60.i.254) and device mrs<i>_dev; the
# receiver is mrsr with link sr (10.61.0.1/24, router end wr) and device
# mrsr_dev. Whatever the router sends into wr is the shared bottleneck
# (shape it with mr_star_shape). Sets MR_STAR_N, MR_STAR_RX_GIDX and
# MR_STAR_GIDX[i].
MR_STAR_RX_IP=10.61.0.1

mr_star() {
	local n=$1 i ns=()
	mr_tmpdir
	mr_debugfs
	# shellcheck disable=SC2034 # used by the tests
	MR_STAR_N=$n
	mr_netns mrsw mrsr
	ip netns exec mrsw sysctl -qw net.ipv4.ip_forward=1
	mr_veth sr wr mrsr mrsw
	ip -n mrsr addr add "$MR_STAR_RX_IP/24" dev sr
	ip -n mrsw addr add 10.61.0.254/24 dev wr
	ip -n mrsr route add default via 10.61.0.254
	mr_link_add mrsr_dev sr mrsr
	for ((i = 0; i < n; i++)); do
		mr_netns "mrs$i"
		ns+=("mrs$i")
		mr_veth "s$i" "w$i" "mrs$i" mrsw
		ip -n "mrs$i" addr add "10.60.$i.1/24" dev "s$i"
		ip -n mrsw addr add "10.60.$i.254/24" dev "w$i"
		ip -n "mrs$i" route add default via "10.60.$i.254"
		mr_link_add "mrs${i}_dev" "s$i" "mrs$i"
	done
	mr_defer mr_netns_kill mrsr mrsw "${ns[@]}"
	mr_wait_dev mrsr_dev "$MR_STAR_RX_IP" MR_STAR_RX_GIDX
	# shellcheck disable=SC2034 # used by the tests
	MR_STAR_GIDX=()
	for ((i = 0; i < n; i++)); do
		mr_wait_dev "mrs${i}_dev" "10.60.$i.1" "MR_STAR_GIDX[$i]"
	done
}

# mr_rxe_star N: N hosts for rxe, laid out as mr_star's hosts are (one
# link each into one router namespace), for comparisons in the same boot.
# Debian 6.12's rxe carries traffic only in the initial network namespace,
# so the hosts' ends of the links are all there: x<i> (10.62.i.1/24; the
# router mrxw's end y<i>, 10.62.i.254), an rxe device mrx<i> on each. Policy
# routing makes what x<i>'s address sends to another host's address leave
# through x<i> and the router, not lo: table MR_RXE_TABLE+i, a rule at
# MR_RXE_PREF+i, the local rule moved to MR_RXE_LOCAL_PREF below them.
# The subtest's defers undo it all. Skips the subtest without rdma_rxe.
# Sets MR_RXE_DEVS (device names) and MR_RXE_IPS.
MR_RXE_TABLE=3620 MR_RXE_PREF=3620 MR_RXE_LOCAL_PREF=3700

mr_rxe_star() {
	local n=$1 i rpf
	modprobe rdma_rxe 2>/dev/null || mr_skip "rdma_rxe is not available"
	MR_RXE_DEVS=() MR_RXE_IPS=()
	mr_netns mrxw
	ip netns exec mrxw sysctl -qw net.ipv4.ip_forward=1
	rpf=$(sysctl -n net.ipv4.conf.all.rp_filter)
	mr_defer sysctl -qw "net.ipv4.conf.all.rp_filter=$rpf"
	sysctl -qw net.ipv4.conf.all.rp_filter=0
	for ((i = 0; i < n; i++)); do
		mr_veth "x$i" "y$i" "" mrxw
		# Packets from another host arrive from a local address.
		sysctl -qw "net.ipv4.conf.x$i.rp_filter=0" \
			"net.ipv4.conf.x$i.accept_local=1"
		ip addr add "10.62.$i.1/24" dev "x$i"
		ip -n mrxw addr add "10.62.$i.254/24" dev "y$i"
		ip route add 10.62.0.0/16 via "10.62.$i.254" dev "x$i" \
			src "10.62.$i.1" table $((MR_RXE_TABLE + i))
		mr_defer ip rule del pref $((MR_RXE_PREF + i))
		ip rule add pref $((MR_RXE_PREF + i)) iif lo from "10.62.$i.1" \
			to 10.62.0.0/16 lookup $((MR_RXE_TABLE + i))
		MR_RXE_IPS+=("10.62.$i.1")
	done
	mr_defer ip rule del pref "$MR_RXE_LOCAL_PREF" lookup local
	ip rule add pref "$MR_RXE_LOCAL_PREF" lookup local
	mr_defer ip rule add pref 0 lookup local
	ip rule del pref 0 lookup local
	# Neighbours resolved up front: under load an ARP exchange can take
	# longer than ib_core waits when it resolves an address handle.
	for ((i = 0; i < n; i++)); do
		ip neigh replace "10.62.$i.254" dev "x$i" nud permanent \
			lladdr "$(ip netns exec mrxw cat "/sys/class/net/y$i/address")"
		ip -n mrxw neigh replace "10.62.$i.1" dev "y$i" nud permanent \
			lladdr "$(<"/sys/class/net/x$i/address")"
	done
	[[ $(ip -o route get 10.62.1.1 from 10.62.0.1) == *" dev x0 "* ]] ||
		mr_fail "policy routing: 10.62.0.1 -> 10.62.1.1 does not leave through x0"
	for ((i = 0; i < n; i++)); do
		mr_defer rdma link delete "mrx$i"
		assert_ok "rdma link add mrx$i" rdma link add "mrx$i" type rxe \
			netdev "x$i"
		MR_RXE_DEVS+=("mrx$i")
	done
	for ((i = 0; i < n; i++)); do
		mr_wait_dev "mrx$i" "10.62.$i.1"
	done
}

# mr_ecn_bottleneck NS DEV RATE: DEV's egress becomes a RATE bottleneck
# (htb) whose queue marks ECN-capable packets CE (RED: from 15 kB of
# average queue, every packet from 45 kB) and drops the others; the queue
# holds at most 400 kB.
mr_ecn_bottleneck() {
	assert_ok "$2: htb $3" ip netns exec "$1" \
		tc qdisc replace dev "$2" root handle 1: htb default 1
	assert_ok "$2: htb class" ip netns exec "$1" \
		tc class replace dev "$2" parent 1: classid 1:1 htb rate "$3"
	assert_ok "$2: red ecn" ip netns exec "$1" \
		tc qdisc replace dev "$2" parent 1:1 handle 10: red limit 400000 \
		min 15000 max 45000 avpkt 1100 burst 20 probability 0.2 \
		bandwidth "$3" ecn
}

# mr_backlog_sampler_start NS DEV FILE / mr_backlog_sampler_stop: while
# running, appends DEV's qdisc backlog in bytes (the deepest of the
# qdiscs tc lists) to FILE about every 200 ms. Starting programs is slow
# in the emulated guest, the more so while the senders under test
# busy-poll: one tc runs in batch mode for the whole time, answering each
# command with one line of JSON, which bash parses.
mr_backlog_sampler_start() {
	# shellcheck disable=SC2016 # the inner shell expands them
	ip netns exec "$1" bash -c '
		exec {nap}<> <(:)
		coproc TC { exec tc -s -j -batch - 2>/dev/null; }
		while echo "qdisc show dev $0" >&"${TC[1]}" &&
		      read -r line <&"${TC[0]}"; do
			m=0
			while [[ $line =~ \"backlog\":([0-9]+)(.*) ]]; do
				((BASH_REMATCH[1] > m)) && m=${BASH_REMATCH[1]}
				line=${BASH_REMATCH[2]}
			done
			echo "$m"
			read -rt 0.2 -u "$nap" || true
		done' "$2" >"$3" &
	_mr_backlog_sampler=$!
	mr_defer kill "$_mr_backlog_sampler" 2>/dev/null
}
mr_backlog_sampler_stop() {
	kill "$_mr_backlog_sampler" 2>/dev/null || true
	wait "$_mr_backlog_sampler" 2>/dev/null || true
}

# mr_fabric_count_udp PORT: counts, per plane, the UDP packets to PORT
# (MetaRoCE's) that enter the plane from A (router ingress of ra<P>) and
# that reach B (ingress of fb<P>), with tc filters whose action keeps
# statistics. mr_fabric_udp_bytes in|out prints those byte counts, one
# number per plane on one line.
mr_fabric_count_udp() {
	local p r
	for ((p = 0; p < MR_PLANES; p++)); do
		r=$(_mr_fab_router "$p")
		_mr_fab_count "$r" "ra$p" "$1"
		_mr_fab_count "$MR_B_NS" "fb$p" "$1"
	done
}
_mr_fab_count() {
	ip netns exec "$1" tc qdisc del dev "$2" ingress 2>/dev/null || true
	assert_ok "$2: ingress qdisc" ip netns exec "$1" tc qdisc add dev "$2" ingress
	assert_ok "$2: count UDP to port $3" ip netns exec "$1" \
		tc filter add dev "$2" parent ffff: protocol ip u32 \
		match ip protocol 17 0xff match ip dport "$3" 0xffff action pass
}
mr_fabric_udp_bytes() {
	local p ns dev out=()
	for ((p = 0; p < MR_PLANES; p++)); do
		if [[ $1 == in ]]; then
			ns=$(_mr_fab_router "$p") dev=ra$p
		else
			ns=$MR_B_NS dev=fb$p
		fi
		out+=("$(ip netns exec "$ns" tc -s filter show dev "$dev" ingress |
			awk '/Sent/ { print $2; exit }')")
	done
	echo "${out[*]}"
}

# mr_rxe_fabric PLANES: two rxe hosts for comparisons with the fabric
# above, in the same boot. Debian 6.12's rxe carries traffic only in the
# initial network namespace and takes packets only from the netdev it is
# bound to, so both hosts' links are there and the planes lead from A's
# links to one leaf router in front of B:
#
#   A: xa0 (10.64.0.1, rxe mrxa) -- plane 0: mrxp0 --+
#      xa1 ...                   -- plane 1: mrxp1 --+-- leaf mrxl -- xb: B
#      ...                                           |   (10.66.0.1, rxe mrxb)
#
# What A's address sends to B's leaves by a multipath route over the
# planes, hashed on the UDP ports as in mr_fabric (policy routing: table
# MR_RXE_TABLE, rules from MR_RXE_PREF, the local rule moved below them);
# what comes back takes plane 0. Plane p's egress towards the leaf is
# pl<p> (mr_rxe_fabric_shape, mr_rxe_fabric_bytes). The initial namespace
# is given the name mrinit, so that mr_pair can run both ends there: the
# function sets MR_A_NS=MR_B_NS=mrinit, MR_A_DEV=mrxa, MR_B_DEV=mrxb,
# MR_A_IP, MR_B_IP, MR_A_GIDX, MR_B_GIDX and MR_PLANES, for the rest of
# the subtest (run it in its own subtest). Skips without rdma_rxe.
mr_rxe_fabric() {
	local planes=$1 p r dev hops=() rpf hash
	modprobe rdma_rxe 2>/dev/null || mr_skip "rdma_rxe is not available"
	mr_tmpdir
	ip netns del mrinit 2>/dev/null || true
	ip netns attach mrinit 1
	mr_defer ip netns del mrinit
	rpf=$(sysctl -n net.ipv4.conf.all.rp_filter)
	mr_defer sysctl -qw "net.ipv4.conf.all.rp_filter=$rpf"
	sysctl -qw net.ipv4.conf.all.rp_filter=0
	hash=$(sysctl -n net.ipv4.fib_multipath_hash_policy)
	mr_defer sysctl -qw "net.ipv4.fib_multipath_hash_policy=$hash"
	sysctl -qw net.ipv4.fib_multipath_hash_policy=1
	mr_netns mrxl
	ip netns exec mrxl sysctl -qw net.ipv4.ip_forward=1 \
		net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
	mr_veth xb lb "" mrxl
	ip addr add 10.66.0.1/24 dev xb
	ip -n mrxl addr add 10.66.0.254/24 dev lb
	for ((p = 0; p < planes; p++)); do
		r=mrxp$p
		mr_netns "$r"
		ip netns exec "$r" sysctl -qw net.ipv4.ip_forward=1
		mr_veth "xa$p" "pa$p" "" "$r"
		mr_veth "pl$p" "lp$p" "$r" mrxl
		ip addr add "10.64.$p.1/24" dev "xa$p"
		ip -n "$r" addr add "10.64.$p.254/24" dev "pa$p"
		ip -n "$r" addr add "10.65.$p.1/24" dev "pl$p"
		ip -n mrxl addr add "10.65.$p.254/24" dev "lp$p"
		ip -n "$r" route add 10.66.0.1/32 via "10.65.$p.254"
		ip -n "$r" route add 10.64.0.1/32 via "10.64.$p.1"
		hops+=(nexthop via "10.64.$p.254" dev "xa$p")
	done
	ip -n mrxl route add 10.64.0.1/32 via 10.65.0.1
	for dev in xb $(for ((p = 0; p < planes; p++)); do echo "xa$p"; done); do
		# Packets from the other host arrive from a local address.
		sysctl -qw "net.ipv4.conf.$dev.rp_filter=0" \
			"net.ipv4.conf.$dev.accept_local=1"
	done
	ip route add table "$MR_RXE_TABLE" 10.66.0.1/32 src 10.64.0.1 "${hops[@]}"
	ip route add 10.64.0.1/32 via 10.66.0.254 dev xb src 10.66.0.1 \
		table $((MR_RXE_TABLE + 1))
	mr_defer ip rule del pref "$MR_RXE_PREF"
	ip rule add pref "$MR_RXE_PREF" iif lo from 10.64.0.1 to 10.66.0.1 \
		lookup "$MR_RXE_TABLE"
	mr_defer ip rule del pref $((MR_RXE_PREF + 1))
	ip rule add pref $((MR_RXE_PREF + 1)) iif lo from 10.66.0.1 to 10.64.0.1 \
		lookup $((MR_RXE_TABLE + 1))
	mr_defer ip rule del pref "$MR_RXE_LOCAL_PREF" lookup local
	ip rule add pref "$MR_RXE_LOCAL_PREF" lookup local
	mr_defer ip rule add pref 0 lookup local
	ip rule del pref 0 lookup local
	# Neighbours resolved up front, as in mr_rxe_star.
	for ((p = 0; p < planes; p++)); do
		ip neigh replace "10.64.$p.254" dev "xa$p" nud permanent \
			lladdr "$(ip netns exec "mrxp$p" cat "/sys/class/net/pa$p/address")"
	done
	ip neigh replace 10.66.0.254 dev xb nud permanent \
		lladdr "$(ip netns exec mrxl cat /sys/class/net/lb/address)"
	[[ $(ip -o route get 10.66.0.1 from 10.64.0.1 ipproto udp sport 49152 dport 4791) == *" dev xa"* ]] ||
		mr_fail "policy routing: 10.64.0.1 -> 10.66.0.1 does not take a plane"
	mr_defer rdma link delete mrxa
	assert_ok "rdma link add mrxa" rdma link add mrxa type rxe netdev xa0
	mr_defer rdma link delete mrxb
	assert_ok "rdma link add mrxb" rdma link add mrxb type rxe netdev xb
	mr_wait_dev mrxa 10.64.0.1 MR_A_GIDX
	mr_wait_dev mrxb 10.66.0.1 MR_B_GIDX
	# shellcheck disable=SC2034 # used by the test programs and mr_pair
	{
		MR_PLANES=$planes MR_A_NS=mrinit MR_B_NS=mrinit
		MR_A_DEV=mrxa MR_B_DEV=mrxb MR_A_IP=10.64.0.1 MR_B_IP=10.66.0.1
	}
}

# mr_rxe_fabric_shape PLANE ARGS...: as mr_fabric_shape, for the rxe
# fabric: the root qdisc of plane PLANE's egress towards the leaf.
mr_rxe_fabric_shape() {
	local p=$1
	shift
	assert_ok "rxe plane $p: tc qdisc $*" ip netns exec "mrxp$p" \
		tc qdisc replace dev "pl$p" root "$@"
}

# mr_rxe_fabric_bytes: bytes each plane of the rxe fabric carried towards
# B so far, one number per plane on one line.
mr_rxe_fabric_bytes() {
	local p out=()
	for ((p = 0; p < MR_PLANES; p++)); do
		out+=("$(ip netns exec "mrxp$p" cat "/sys/class/net/pl$p/statistics/tx_bytes")")
	done
	echo "${out[*]}"
}
