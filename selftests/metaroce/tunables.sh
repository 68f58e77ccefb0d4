#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 600
#
# Transport tunables, module parameters and telemetry, as
# Documentation/admin-guide.rst describes them:
#
#   module_params   modprobe with a combination the transport refuses
#                   (dead_after=256; min_window above max_window; max_peers
#                   0; max_peer_mem_mb past 1 TiB) fails
#                   with EINVAL and loads nothing; with valid ones, a new
#                   device starts with them, and with the defaults of the
#                   others
#   defaults        each tunable in /sys/class/infiniband/DEV/metaroce/
#                   reads the default of the admin guide's table
#   invalid         non-numbers, out-of-range values and values invalid
#                   together with the others are refused with EINVAL, and
#                   the file keeps its value
#   live            while ib_write_bw runs: paths is refused with EBUSY;
#                   ack_every, dead_after, ai_bytes, pacing and host_window
#                   change and read back; the debugfs peers table shows the
#                   connection and one row per path with a known state;
#                   rdma statistic has per-path counters; "rdma resource
#                   show qp -dd" shows A's RC QP with its connection's
#                   attributes: one "pathN" per path of the paths tunable,
#                   each with a known state and a source port of the
#                   transport's range, and packets sent on one at least;
#                   the run completes;
#                   afterwards the device's shared-window count (debugfs
#                   "host ... inflight") is back to 0
#   dscp            during ib_write_bw runs, counted by a prio qdisc on each
#                   end: with dscp 10 and ctrl_dscp 48, A's data packets
#                   carry DSCP 10 and B's ACKs DSCP 48; with both 0, B's
#                   ACKs go out at TC_PRIO_CONTROL and A's data does not
#   capacity        the fair share's capacity (debugfs "capacity"): with
#                   rx_capacity_mbps 0, a tap device's link speed as
#                   ethtool sets it (100000), again after a change and a
#                   link down/up (25000), 10000 on a dummy device, which
#                   reports no speed; a value written overrides the link,
#                   0 returns to it
#   qp_tclass       the device's data DSCP 0, ctrl_dscp 48: an RC QP's
#                   traffic class 40 (perftest --tclass, then rdma_cm's ToS
#                   with -R -T) puts A's data packets in DSCP 10, while
#                   B's ACKs stay in DSCP 48
#   capability      writing a tunable takes CAP_NET_ADMIN, not only the
#                   file's mode: root of a user namespace of its own
#                   (unshare -U -r), and root without the capability
#                   (setpriv), both get EPERM, and the value stays
. "$(dirname "$0")/lib.sh"
mr_require_module

DOC=$MR_TOP/Documentation/admin-guide.rst
# The tunables as drivers/metaroce/tunables.h lists them.
mapfile -t TUNABLES < <("$MR_TOP/scripts/tunables-list.sh" | awk '{ print $1 }')
PORT=18620

# doc_default NAME: the default in the tunables table ("``NAME``  VALUE").
doc_default() {
	awk -v k="$1" '{ gsub(/`/, "") } $1 == k && $2 ~ /^[0-9]+$/ { print $2; exit }' "$DOC"
}

tun() { echo "/sys/class/infiniband/$1/metaroce/$2"; }
tun_set() { echo "$3" >"$(tun "$1" "$2")"; }

# write_errno FILE VALUE: writes VALUE, prints the error ("ok" if none).
write_errno() {
	local out
	if out=$( { printf '%s' "$2" >"$1"; } 2>&1); then
		echo ok
	else
		case $out in
		*"Invalid argument"*) echo EINVAL ;;
		*"Device or resource busy"*) echo EBUSY ;;
		*"Operation not permitted"*) echo EPERM ;;
		*) echo "other: $out" ;;
		esac
	fi
}

module_params() {
	local out
	mr_mod_unload || mr_fail "cannot unload $MR_MOD"
	mr_defer modprobe "$MR_MOD"
	mr_defer mr_mod_unload
	out=$(modprobe "$MR_MOD" dead_after=256 2>&1) &&
		mr_fail "modprobe dead_after=256 succeeded"
	assert_match "dead_after=256: EINVAL" "Invalid argument" "$out"
	if mr_mod_loaded; then mr_fail "the module loaded anyway"; fi
	out=$(modprobe "$MR_MOD" min_window=70000 max_window=65536 2>&1) &&
		mr_fail "modprobe min_window above max_window succeeded"
	assert_match "min_window > max_window: EINVAL" "Invalid argument" "$out"
	dmesg | grep -F "transport parameters are invalid" | tail -n 1
	out=$(modprobe "$MR_MOD" max_peers=0 2>&1) &&
		mr_fail "modprobe max_peers=0 succeeded"
	assert_match "max_peers=0: EINVAL" "Invalid argument" "$out"
	out=$(modprobe "$MR_MOD" max_peer_mem_mb=1048577 2>&1) &&
		mr_fail "modprobe max_peer_mem_mb=1048577 succeeded"
	assert_match "max_peer_mem_mb=1048577: EINVAL" "Invalid argument" "$out"
	assert_ok "modprobe with valid parameters" \
		modprobe "$MR_MOD" dead_after=5 ack_every=8 pacing=1 ai_bytes=0 paths=4 \
		max_peers=100 max_peer_mem_mb=64
	ip link del mrtun0 2>/dev/null || true
	mr_defer ip link del mrtun0
	ip link add mrtun0 type dummy
	mr_link_add mrtun_dev mrtun0
	assert_eq "dead_after from the module" 5 "$(cat "$(tun mrtun_dev dead_after)")"
	assert_eq "ack_every from the module" 8 "$(cat "$(tun mrtun_dev ack_every)")"
	assert_eq "pacing from the module" 1 "$(cat "$(tun mrtun_dev pacing)")"
	assert_eq "paths from the module" 4 "$(cat "$(tun mrtun_dev paths)")"
	assert_eq "max_peers from the module" 100 "$(cat "$(tun mrtun_dev max_peers)")"
	assert_eq "max_peer_mem_mb from the module" 64 \
		"$(cat "$(tun mrtun_dev max_peer_mem_mb)")"
	assert_eq "ai_bytes=0 as given" 0 "$(cat "$(tun mrtun_dev ai_bytes)")"
	assert_eq "rto_max_us at its default" "$(doc_default rto_max_us)" \
		"$(cat "$(tun mrtun_dev rto_max_us)")"
}

defaults() {
	local t want
	((${#TUNABLES[@]} >= 20)) ||
		mr_fail "${#TUNABLES[@]} tunables read from tunables.h"
	for t in "${TUNABLES[@]}"; do
		want=$(doc_default "$t")
		[[ -n $want ]] || mr_fail "$t has no default in $DOC"
		assert_eq "$t default" "$want" "$(cat "$(tun "$MR_A_DEV" "$t")")"
	done
	mr_log "${#TUNABLES[@]} tunables read their documented defaults"
}

# refused NAME VALUE: EINVAL, value unchanged.
refused() {
	local f before
	f=$(tun "$MR_A_DEV" "$1")
	before=$(cat "$f")
	assert_eq "$1=$2 refused" EINVAL "$(write_errno "$f" "$2")"
	assert_eq "$1 unchanged after $2" "$before" "$(cat "$f")"
}

invalid() {
	local max
	refused ack_every abc
	refused ack_every -1
	refused ack_every 0
	refused paths 0
	refused paths 17
	refused dead_after 256
	refused pacing 2
	refused announce 2
	refused ecn_shift 11
	refused repick_alpha 1025
	refused reorder_thresh 256
	refused rto_min_us 4294967295
	max=$(cat "$(tun "$MR_A_DEV" rto_max_us)")
	refused rto_min_us $((max + 1))
	max=$(cat "$(tun "$MR_A_DEV" max_window)")
	refused min_window $((max + 1))
	refused init_window $((max + 1))
	refused max_window $(((1 << 30) + 1))
	refused host_window $(((1 << 30) + 1))
	refused host_window -5
	refused dscp 64
	refused ctrl_dscp 64
	refused ctrl_dscp abc
	refused max_peers 0
	refused max_peers 1048577
	refused max_peer_mem_mb 0
	refused max_peer_mem_mb 1048577
}

# unprivileged WRAPPER... NAME VALUE: writing VALUE to tunable NAME under
# WRAPPER (a command that runs the rest) is refused with EPERM, and the
# tunable keeps its value.
unprivileged() {
	local f before out n=$(($# - 2))
	f=$(tun "$MR_A_DEV" "${@: -2:1}")
	before=$(cat "$f")
	# bash, whose error message names the errno (dash's does not).
	# shellcheck disable=SC2016 # $1 and $2 are the inner shell's
	if out=$("${@:1:n}" bash -c 'printf %s "$1" >"$2"' bash "${@: -1}" "$f" 2>&1); then
		mr_fail "${*:1:n}: writing ${*: -2} succeeded"
	fi
	[[ $out == *"Operation not permitted"* ]] ||
		mr_fail "${*:1:n}: writing ${*: -2} failed with '$out', expected EPERM"
	assert_eq "${*: -2:1} unchanged" "$before" "$(cat "$f")"
}

capability() {
	local t nocap=(setpriv --inh-caps=-net_admin --bounding-set=-net_admin)
	# The wrappers work: they can write a file of their own.
	assert_ok "unshare -U -r runs" unshare -U -r true
	assert_ok "setpriv runs" "${nocap[@]}" true
	for t in ack_every paths rx_capacity_mbps host_window dscp ctrl_dscp \
		max_peers max_peer_mem_mb; do
		unprivileged unshare -U -r "$t" 7
		unprivileged "${nocap[@]}" "$t" 7
	done
	# With the capability, root writes as before.
	set_ok ack_every 8
	set_ok ack_every "$(doc_default ack_every)"
}

# set_ok NAME VALUE: accepted and read back.
set_ok() {
	local f
	f=$(tun "$MR_A_DEV" "$1")
	assert_eq "$1=$2 accepted" ok "$(write_errno "$f" "$2")"
	assert_eq "$1 reads $2" "$2" "$(cat "$f")"
}

live_checks() {
	local peers paths rows
	wait_for 30 grep -q "^peer" "/sys/kernel/debug/metaroce/$MR_A_DEV/peers" ||
		mr_fail "no connection in $MR_A_DEV's debugfs peers table"
	assert_eq "paths refused while connected" EBUSY \
		"$(write_errno "$(tun "$MR_A_DEV" paths)" 4)"
	set_ok ack_every 8
	set_ok dead_after 5
	set_ok ai_bytes 8192
	set_ok pacing 1
	set_ok pacing 0
	set_ok host_window 1048576
	peers=$(cat "/sys/kernel/debug/metaroce/$MR_A_DEV/peers")
	printf '%s\n' "$peers" | head -n 12
	paths=$(cat "$(tun "$MR_A_DEV" paths)")
	rows=$(awk '$1 ~ /^[0-9]+$/ && $3 ~ /^(good|congested|dead|probing)$/' <<<"$peers" | wc -l)
	((rows >= paths)) || mr_fail "$rows path rows with a known state, want $paths"
	rdma statistic show link "$MR_A_DEV/1" | grep -qE 'path0_[a-z_]+ [0-9]+' ||
		mr_fail "rdma statistic has no per-path counter"
	res_checks "$paths"
	echo 'done' >"$MR_TMP/live"
}

# res_checks PATHS: the driver attributes of A's RC QP in `rdma resource
# show qp -dd` (Documentation/admin-guide.rst, Telemetry): its connection
# with PATHS paths, each with a known state and a source port of the range
# the transport picks from (49152-65535), and packets sent on one at least.
res_checks() {
	local res qp rows row sent=0
	# One line per QP: iproute2 6.15 continues a QP's driver attributes on
	# indented lines, 6.1 printed them on the QP's line.
	res=$(ip netns exec "$MR_A_NS" rdma resource show qp link "$MR_A_DEV/1" -dd |
		awk '/^[^ \t]/ { if (r != "") print r; r = $0; next }
		     { sub(/^[ \t]+/, " "); r = r $0 }
		     END { if (r != "") print r }')
	qp=$(grep -m 1 -E ' type RC .* (drv_)?path0 ' <<<"$res") || {
		printf '%s\n' "$res"
		ip netns exec "$MR_A_NS" rdma resource show qp link "$MR_A_DEV/1" -dd
		rdma resource show qp -dd
		cat "/sys/kernel/debug/metaroce/$MR_A_DEV/qps" 2>/dev/null | head -5
		mr_fail "no RC QP with path attributes in rdma resource show qp -dd"
	}
	mr_log "rdma resource: $qp"
	assert_match "connection attributes" \
		" (drv_)?window [0-9]+ (drv_)?inflight [0-9]+ (drv_)?rate_hint_mbps [0-9]+ (drv_)?paths $1 " "$qp"
	mapfile -t rows < <(grep -oE '(drv_)?path[0-9]+ sport=[0-9]+ state=[a-z]+ weight=[0-9]+ srtt_us=[0-9]+ ecn_pct=[0-9]+ cwnd=[0-9]+ inflight=[0-9]+ tx=[0-9]+ retx=[0-9]+' <<<"$qp")
	((${#rows[@]} == $1)) || mr_fail "${#rows[@]} path attributes, want $1"
	for row in "${rows[@]}"; do
		[[ $row =~ sport=([0-9]+)\ state=(good|congested|dead|probing)\ .*\ tx=([0-9]+) ]] ||
			mr_fail "path with an unknown state: $row"
		((BASH_REMATCH[1] >= 49152 && BASH_REMATCH[1] <= 65535)) ||
			mr_fail "source port out of range: $row"
		((BASH_REMATCH[3] == 0)) || sent=1
	done
	((sent)) || mr_fail "no packet sent on any of the ${#rows[@]} paths"
}

live() {
	(
		sleep 4
		live_checks
	) >"$MR_TMP/live.log" 2>&1 &
	local checker=$!
	mr_defer kill "$checker" 2>/dev/null
	MR_PAIR_TIMEOUT=90 mr_pair live "tcp:$PORT" \
		ib_write_bw -d "$MR_B_DEV" -x "$MR_B_GIDX" -p "$PORT" -s 65536 -D 10 -- \
		ib_write_bw -d "$MR_A_DEV" -x "$MR_A_GIDX" -p "$PORT" -s 65536 -D 10 "$MR_B_IP"
	wait "$checker" || { cat "$MR_TMP/live.log"; mr_fail "the checks during the run failed"; }
	cat "$MR_TMP/live.log"
	[[ -s $MR_TMP/live ]] || mr_fail "the checks during the run did not finish"
	# Everything sent was acknowledged: nothing stays counted.
	wait_for 10 grep -q "^host window 1048576 inflight 0$" \
		"/sys/kernel/debug/metaroce/$MR_A_DEV/peers" ||
		mr_fail "shared-window count after the run: $(grep '^host' \
			"/sys/kernel/debug/metaroce/$MR_A_DEV/peers")"
	echo 0 >"$(tun "$MR_A_DEV" host_window)"
}

# classes_setup IF: a 4-band prio qdisc on IF: DSCP 48 (CS6) to 1:1, DSCP 10
# (AF11) to 1:2, other packets by skb->priority: TC_PRIO_CONTROL (7) to 1:3,
# the rest to 1:4.
classes_setup() {
	local ns=$1 dev=$2
	ip netns exec "$ns" tc qdisc replace dev "$dev" root handle 1: prio \
		bands 4 priomap 3 3 3 3 3 3 3 2 3 3 3 3 3 3 3 3
	mr_defer ip netns exec "$ns" tc qdisc del dev "$dev" root
	ip netns exec "$ns" tc filter add dev "$dev" parent 1: protocol ip \
		prio 1 u32 match ip dsfield 0xc0 0xfc flowid 1:1
	ip netns exec "$ns" tc filter add dev "$dev" parent 1: protocol ip \
		prio 2 u32 match ip dsfield 0x28 0xfc flowid 1:2
}

# class_pkts NS IF CLASS: packets sent through CLASS of IF's prio qdisc.
class_pkts() {
	ip netns exec "$1" tc -s class show dev "$2" | awk -v c="$3" '
		$1 == "class" && $3 == c { f = 1; next }
		f && $1 == "Sent" { print $4; exit }'
}

# classes_run TAG [ARGS...]: a 2 s ib_write_bw from A to B, ARGS given to
# both ends (with -R, connected through rdma_cm); prints the packets of
# each class, A's sent then B's, as "a1 a2 a3 a4 b1 b2 b3 b4" (deltas).
classes_run() {
	local tag=$1 before after c i ready=tcp
	shift
	[[ " $* " != *" -R "* ]] || ready=cm
	before=()
	for c in 1:1 1:2 1:3 1:4; do before+=("$(class_pkts "$MR_A_NS" "$MR_A_IF" "$c")"); done
	for c in 1:1 1:2 1:3 1:4; do before+=("$(class_pkts "$MR_B_NS" "$MR_B_IF" "$c")"); done
	MR_PAIR_TIMEOUT=60 mr_pair "dscp_$tag" "$ready:$PORT" \
		ib_write_bw -d "$MR_B_DEV" -x "$MR_B_GIDX" -p "$PORT" -s 65536 -D 2 "$@" -- \
		ib_write_bw -d "$MR_A_DEV" -x "$MR_A_GIDX" -p "$PORT" -s 65536 -D 2 "$@" \
		"$MR_B_IP" >&2
	after=()
	for c in 1:1 1:2 1:3 1:4; do after+=("$(class_pkts "$MR_A_NS" "$MR_A_IF" "$c")"); done
	for c in 1:1 1:2 1:3 1:4; do after+=("$(class_pkts "$MR_B_NS" "$MR_B_IF" "$c")"); done
	for i in "${!after[@]}"; do printf '%s ' $((after[i] - before[i])); done
	echo
}

# set_dscp DATA CTRL: both devices' dscp and ctrl_dscp.
set_dscp() {
	local d
	for d in "$MR_A_DEV" "$MR_B_DEV"; do
		tun_set "$d" dscp "$1"
		tun_set "$d" ctrl_dscp "$2"
	done
}

# classes_prepare: both devices' DSCPs restored at the end of the subtest,
# and the prio qdisc that counts packets by class on both veth ends.
classes_prepare() {
	local d
	for d in "$MR_A_DEV" "$MR_B_DEV"; do
		mr_defer tun_set "$d" dscp "$(cat "$(tun "$d" dscp)")"
		mr_defer tun_set "$d" ctrl_dscp "$(cat "$(tun "$d" ctrl_dscp)")"
	done
	classes_setup "$MR_A_NS" "$MR_A_IF"
	classes_setup "$MR_B_NS" "$MR_B_IF"
}

# The traffic classes on the wire: sequenced packets carry "dscp", ACKs
# "ctrl_dscp" and TC_PRIO_CONTROL, on both ends of a write.
dscp() {
	local n
	classes_prepare
	# A writes, B acknowledges: data in AF11, ACKs in CS6.
	set_dscp 10 48
	read -ra n < <(classes_run marked)
	mr_log "packets per class, dscp 10 / ctrl_dscp 48 (A: CS6 AF11 prio7 other; B: same): ${n[*]}"
	((n[1] >= 1000)) || mr_fail "A sent ${n[1]} packets with DSCP 10, want >= 1000 data packets"
	((n[4] >= 100)) || mr_fail "B sent ${n[4]} packets with DSCP 48, want >= 100 ACKs"
	((n[5] <= n[4] / 10)) ||
		mr_fail "B sent ${n[5]} DSCP 10 packets next to ${n[4]} ACKs: ACKs in the data class"
	# Both 0: no filter matches, the priority map sorts: ACKs go in band 3.
	set_dscp 0 0
	read -ra n < <(classes_run unmarked)
	mr_log "packets per class, dscp 0 / ctrl_dscp 0: ${n[*]}"
	((n[0] + n[1] + n[4] + n[5] == 0)) ||
		mr_fail "packets matched a DSCP filter with both DSCPs 0"
	((n[6] >= 100)) || mr_fail "B sent ${n[6]} packets at TC_PRIO_CONTROL, want >= 100 ACKs"
	((n[3] >= 1000)) || mr_fail "A sent ${n[3]} packets at other priorities, want >= 1000 data packets"
	((n[7] <= n[6] / 10)) ||
		mr_fail "B sent ${n[7]} packets at other priorities next to ${n[6]} ACKs"
}

mr_run module_params module_params
# fs_capacity DEV: the capacity DEV's fair share divides, Mbit/s.
fs_capacity() {
	awk '$1 == "fair" && $2 == "share" { print $10 }' \
		"/sys/kernel/debug/metaroce/$1/peers"
}

# The fair share divides the link's speed unless rx_capacity_mbps says.
capacity() {
	local f
	mr_debugfs
	modprobe tun
	[[ -c /dev/net/tun ]] || { mkdir -p /dev/net && mknod /dev/net/tun c 10 200; }
	assert_ok "a tap device" ip tuntap add dev mrcap0 mode tap
	mr_defer ip link del mrcap0
	assert_ok "ethtool sets its speed" \
		ethtool -s mrcap0 speed 100000 duplex full autoneg off
	ip link set mrcap0 up
	mr_link_add mrcap mrcap0
	f=$(tun mrcap rx_capacity_mbps)
	assert_eq "rx_capacity_mbps" 0 "$(cat "$f")"
	assert_eq "capacity from the link" 100000 "$(fs_capacity mrcap)"
	# A new speed comes with the link going down and up again.
	ethtool -s mrcap0 speed 25000 duplex full autoneg off
	ip link set mrcap0 down
	ip link set mrcap0 up
	assert_eq "capacity after a speed change" 25000 "$(fs_capacity mrcap)"
	echo 5000 >"$f"
	assert_eq "capacity set" 5000 "$(fs_capacity mrcap)"
	echo 0 >"$f"
	assert_eq "capacity back to the link" 25000 "$(fs_capacity mrcap)"
	# A device that reports no speed.
	assert_ok "a dummy device" ip link add mrcap1 type dummy
	mr_defer ip link del mrcap1
	ip link set mrcap1 up
	mr_link_add mrcapd mrcap1
	assert_eq "capacity without a link speed" 10000 "$(fs_capacity mrcapd)"
}

# A QP's own traffic class: its address vector's (perftest --tclass sets
# the GRH's), or rdma_cm's ToS (perftest -R -T) for its data; the control
# class stays the device's. The device's data DSCP is 0 throughout.
qp_tclass() {
	local n how
	classes_prepare
	set_dscp 0 48
	for how in "--tclass=40" "-R -T 40"; do
		# shellcheck disable=SC2086 # two words for "-R -T 40"
		read -ra n < <(classes_run "qp_tclass" $how)
		mr_log "packets per class, QP traffic class 40 ($how), device dscp 0 / ctrl_dscp 48 (A: CS6 AF11 prio7 other; B: same): ${n[*]}"
		((n[1] >= 1000)) ||
			mr_fail "$how: A sent ${n[1]} packets with DSCP 10, want >= 1000 data packets"
		((n[3] <= n[1] / 10)) ||
			mr_fail "$how: A sent ${n[3]} unmarked packets next to ${n[1]} in its QP's class"
		((n[4] >= 100)) || mr_fail "$how: B sent ${n[4]} packets with DSCP 48, want >= 100 ACKs"
		((n[5] <= n[4] / 10)) ||
			mr_fail "$how: B sent ${n[5]} DSCP 10 packets next to ${n[4]} ACKs: ACKs in the QP's class"
	done
}

mr_setup two_hosts mr_two_hosts
mr_run defaults defaults
mr_run invalid invalid
mr_run live live
mr_run dscp dscp
mr_run qp_tclass qp_tclass
mr_run capacity capacity
mr_run capability capability
mr_done
