#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# selftests/bench/run.sh: metaroce, rxe and TCP side by side on one veth pair,
# lossless and lossy, in one boot of the test VM (the first part of `make
# bench`, see all.sh; alone: `selftests/vm/run --kernel 6.12 --timeout 3600
# -- selftests/bench/run.sh`).
#
#   metaroce  ib_write_bw, ib_send_bw   devices in two namespaces, one per veth end
#   rxe       ib_write_bw, ib_send_bw   both devices in the initial namespace,
#                                       policy routing forces traffic over the veth
#   tcp       iperf3                    two namespaces; the veth's GSO/GRO
#                                       defaults ("gso"), one MSS per packet ("mss")
#
# Every figure is measured MR_BENCH_REPS times, each round running every
# transport, and reported as median, min and max; a ratio (lossy / lossless,
# metaroce / rxe) is taken in each round and reported as the median over the
# rounds. One line per figure:
#
#   BENCH test=<tool> transport=<t> size=<bytes> loss_pct=<p> gbps=<median> ...
#
# Results: build/bench/ (runs.tsv: one row per run; logs/: every tool's
# output and the transport telemetry), and, when every run succeeded,
# Documentation/benchmarks.rst (generated section) and Documentation/bench/
# (TSV, BENCH lines, plots); see selftests/bench/README.md. Exits 0 when all
# runs succeeded, 1 when any failed (a failed run is never counted as a zero),
# 4 (KSFT_SKIP) when it cannot run here.
#
# Knobs (environment):
#   MR_BENCH_REPS=5           runs of every figure
#   MR_BENCH_DURATION=8       seconds per run; the first and the last
#   MR_BENCH_MARGIN=2           MARGIN seconds are not measured
#   MR_BENCH_LOSSES="0 0.1 1 5 10"  netem loss percentages
#   MR_BENCH_LOSS_DIR=data    data: netem on the sender's veth end only;
#                             both: on both ends (ACKs are lost too)
#   MR_BENCH_TRANSPORTS="metaroce rxe tcp"
#   MR_BENCH_SIZE=65536       message size (perftest -s, iperf3 -l)
#   MR_BENCH_DOCS=auto        auto: update Documentation/ when all runs
#                             passed; 0: never; 1: always
#   MR_BENCH_BUDGET=3300      seconds; runs not started by then fail
#   MR_BENCH_PROFILE=0        1: perf samples the whole guest (cpu-clock,
#                             every CPU) through each run's measured
#                             seconds; per run, build/bench/profile/IDX.txt
#                             is perf report's flat profile, IDX.bytes the
#                             bytes sent meanwhile (profile.sh)
#
# Under TCG every process started costs tens of milliseconds or more, so the
# per-run bookkeeping avoids them: counters come from /proc/<pid>/net/dev of
# a process parked in each namespace, waits use a timed `read`.

# Functions called from traps and through wait_for look unreachable to it.
# shellcheck disable=SC2317
set -euo pipefail

# One compound command: bash reads it whole before running it, so editing
# this file cannot derail a run in progress.
{

readonly KSFT_SKIP=4
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

REPS=${MR_BENCH_REPS:-5}
DUR=${MR_BENCH_DURATION:-8}
MARGIN=${MR_BENCH_MARGIN:-2}
read -ra LOSSES <<<"${MR_BENCH_LOSSES:-0 0.1 1 5 10}"
LOSS_DIR=${MR_BENCH_LOSS_DIR:-data}
read -ra TRANSPORTS <<<"${MR_BENCH_TRANSPORTS:-metaroce rxe tcp}"
SIZE=${MR_BENCH_SIZE:-65536}
DOCS=${MR_BENCH_DOCS:-auto}
BUDGET=${MR_BENCH_BUDGET:-3300}
PROFILE=${MR_BENCH_PROFILE:-0}
PROFILE_HZ=499
OUT=$TOP/build/bench

die() { echo "bench: $*" >&2; exit 1; }
skip() { echo "bench: SKIP: $*" >&2; exit "$KSFT_SKIP"; }
log() { echo "bench: $*"; }

[[ $REPS =~ ^[1-9][0-9]*$ && $DUR =~ ^[1-9][0-9]*$ && $MARGIN =~ ^[0-9]+$ &&
	$SIZE =~ ^[1-9][0-9]*$ && $BUDGET =~ ^[1-9][0-9]*$ ]] ||
	die "MR_BENCH_REPS/DURATION/MARGIN/SIZE/BUDGET must be integers"
((DUR > 2 * MARGIN)) || die "MR_BENCH_DURATION must exceed 2 * MR_BENCH_MARGIN"
[[ $LOSS_DIR == data || $LOSS_DIR == both ]] || die "MR_BENCH_LOSS_DIR: data or both"
[[ $DOCS == auto || $DOCS == 0 || $DOCS == 1 ]] || die "MR_BENCH_DOCS: auto, 0 or 1"
[[ $PROFILE == 0 || $PROFILE == 1 ]] || die "MR_BENCH_PROFILE: 0 or 1"
for l in "${LOSSES[@]}"; do
	[[ $l =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "bad loss percentage '$l'"
done
for t in "${TRANSPORTS[@]}"; do
	[[ $t == metaroce || $t == rxe || $t == tcp ]] || die "unknown transport '$t'"
done
((${#LOSSES[@]} > 0 && ${#TRANSPORTS[@]} > 0)) || die "nothing to run"
has_transport() { [[ " ${TRANSPORTS[*]} " == *" $1 "* ]]; }

[[ $(id -u) == 0 ]] || skip "must run as root (make bench runs it in the VM)"
for tool in ib_write_bw ib_send_bw iperf3 rdma tc ip ethtool python3; do
	command -v "$tool" >/dev/null || skip "$tool is not installed (make deps)"
done
if ((PROFILE)); then
	command -v perf >/dev/null || skip "perf is not installed (make deps)"
fi
if has_transport metaroce; then
	modinfo metaroce >/dev/null 2>&1 ||
		skip "metaroce.ko is not built for $(uname -r) (make modules-vm)"
fi
if has_transport rxe; then
	modinfo rdma_rxe >/dev/null 2>&1 || skip "rdma_rxe is not available in $(uname -r)"
fi

# --- helpers ------------------------------------------------------------------

WORK=$(mktemp -d /tmp/mrbench.XXXXXX)
LOGS=$WORK/logs
mkdir -p "$LOGS"
PROF=$OUT/profile
if ((PROFILE)); then
	rm -rf "$PROF"
	mkdir -p "$PROF"
	sysctl -qw kernel.kptr_restrict=0 kernel.perf_event_paranoid=-1
fi
pids=()

# nap SECONDS: sleeps without starting a process (a timed read on a pipe
# nobody writes to).
exec {NAP_FD}<> <(:)
nap() { read -rt "$1" -u "$NAP_FD" _ || true; }

# stamp LABEL: when each step of a run ended (logs/NNN-*.times).
STAMPS=/dev/null
stamp() { echo "$EPOCHREALTIME $1" >>"$STAMPS"; }

# wait_for SECONDS CMD...: polls CMD every 0.1 s; non-zero on timeout.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || return 1
		nap 0.1
	done
}

# now_us: microseconds since the epoch; elapsed_since T0: sets R[elapsed_s].
now_us() { echo "${EPOCHREALTIME/./}"; }
elapsed_since() {
	local ds=$(((${EPOCHREALTIME/./} - $1) / 100000))
	R[elapsed_s]=$((ds / 10)).$((ds % 10))
}

# --- topology -----------------------------------------------------------------
#
# One veth pair, VA (sender, 10.77.0.1) and VB (receiver, 10.77.0.2), MTU 1500.
# Phase "two": VA in namespace NA, VB in NB (metaroce, tcp).
# Phase "one": both ends in the initial namespace (rxe, whose 6.12 version
# only works there), with policy routing so that 10.77.0.1 -> 10.77.0.2 leaves
# through VA and arrives on VB instead of taking the local route over lo.

NA=mrbench-a NB=mrbench-b VA=mrb-a VB=mrb-b
IPA=10.77.0.1 IPB=10.77.0.2
MTU=1500
TBL_A=7701 TBL_B=7702 RULE_PREF=100 LOCAL_PREF=1000
phase=none
CUR_A="" CUR_B="" # the namespaces VA and VB are in now ("" = initial)
declare -A ANCHOR  # namespace -> a process parked in it

# ipx NS ARGS: ip in namespace NS ("" = the initial one); tcx: tc.
# With MR_BENCH_PROFILE=1, perf samples every CPU of the guest through a
# run's measured seconds. perf takes seconds to start under TCG, so
# profile_start starts it, with its events off, before the run's server;
# profile_window (in the background, once the client started) turns them
# on MARGIN seconds in, or once perf is up if that is later, off again
# DUR - 2 MARGIN seconds later, and keeps the bytes that left through VA
# meanwhile (PROF/NAME.bytes); profile_wait stops perf and writes the flat
# profile (self samples by module and symbol) to PROF/NAME.txt.
prof_pid="" prof_win="" PCTL="" PACK=""
profile_start() {
	((PROFILE)) || return 0
	prof_name=$1
	# In the guest's own /tmp: the shared tree (9p) holds no FIFO, and
	# perf writes its samples faster there.
	rm -f "$WORK/ctl" "$WORK/ack"
	mkfifo "$WORK/ctl" "$WORK/ack"
	# Opened read-write, the FIFOs never block; perf inherits both.
	exec {PCTL}<>"$WORK/ctl" {PACK}<>"$WORK/ack"
	perf record -q -a -e cpu-clock -F "$PROFILE_HZ" -D -1 \
		--control "fd:$PCTL,$PACK" -o "$WORK/$1.data" \
		>"$PROF/$1.data.log" 2>&1 &
	prof_pid=$!
}
profile_window() {
	[[ -n $prof_pid ]] || return 0
	{
		local b0 t0
		nap "$MARGIN"
		echo enable >&"$PCTL"
		read -r -t 60 -u "$PACK" _ || exit 0
		dev_counters "$CUR_A" "$VA"
		b0=$TXB t0=$EPOCHREALTIME
		nap "$((DUR - 2 * MARGIN))"
		echo disable >&"$PCTL"
		read -r -t 60 -u "$PACK" _ || exit 0
		dev_counters "$CUR_A" "$VA"
		echo "$((TXB - b0)) $t0 $EPOCHREALTIME" >"$PROF/$prof_name.bytes"
	} &
	prof_win=$!
}
profile_wait() {
	[[ -n $prof_pid ]] || return 0
	[[ -z $prof_win ]] || wait "$prof_win" || true
	kill -INT "$prof_pid" 2>/dev/null || true
	wait "$prof_pid" || true
	exec {PCTL}>&- {PACK}>&-
	prof_pid="" prof_win=""
	perf report -i "$WORK/$prof_name.data" --stdio --no-children \
		--sort dso,sym -F overhead,sample,dso,sym --percent-limit 0 \
		>"$PROF/$prof_name.txt" 2>>"$PROF/$prof_name.data.log" || true
	rm -f "$WORK/$prof_name.data" "$WORK/ctl" "$WORK/ack"
}

ipx() {
	local ns=$1
	shift
	ip ${ns:+-n "$ns"} "$@"
}
tcx() {
	local ns=$1
	shift
	tc ${ns:+-n "$ns"} "$@"
}

# in_ns NS: sets NSX to the prefix that runs a command in NS. `ip netns exec`
# execs the command without forking, so $! of a background job is its pid.
in_ns() {
	NSX=()
	[[ -z $1 ]] || NSX=(ip netns exec "$1")
}

# net_dir NS: sets NETDIR to the /proc/net of namespace NS.
net_dir() {
	NETDIR=/proc/net
	[[ -z $1 ]] || NETDIR=/proc/${ANCHOR[$1]}/net
}

# dev_counters NS DEV: sets RXB TXB TXP from NS's /proc/net/dev.
dev_counters() {
	local line f
	net_dir "$1"
	while IFS= read -r line; do
		read -ra f <<<"${line//:/ }"
		if [[ ${f[0]} == "$2" ]]; then
			RXB=${f[1]} TXB=${f[9]} TXP=${f[10]}
			return 0
		fi
	done <"$NETDIR/dev"
	die "no device $2 in ${1:-the initial namespace}"
}

# tcp_listening NS PORT: something listens on TCP PORT in NS.
tcp_listening() {
	local hex st loc f
	printf -v hex '%04X' "$2"
	net_dir "$1"
	for f in "$NETDIR/tcp" "$NETDIR/tcp6"; do
		while read -r _ loc _ st _; do
			[[ $st == 0A && ${loc##*:} == "$hex" ]] && return 0
		done <"$f"
	done
	return 1
}

# The policy routing of phase "one" (rules stay; routes and neighbours go
# with the devices and are set again by topo_one).
rules_add() {
	ip rule add pref "$RULE_PREF" iif lo to "$IPB" lookup "$TBL_A"
	ip rule add pref "$((RULE_PREF + 1))" iif lo to "$IPA" lookup "$TBL_B"
	ip rule add pref "$LOCAL_PREF" lookup local
	ip rule del pref 0 lookup local
}

rules_del() {
	ip rule add pref 0 lookup local 2>/dev/null || true
	ip rule del pref "$LOCAL_PREF" lookup local 2>/dev/null || true
	ip rule del pref "$RULE_PREF" 2>/dev/null || true
	ip rule del pref "$((RULE_PREF + 1))" 2>/dev/null || true
}

# move_to NS_A NS_B: moves the veth ends ("" = initial namespace).
move_to() {
	[[ $CUR_A == "$1" ]] || ipx "$CUR_A" link set "$VA" netns "${1:-1}"
	CUR_A=$1
	[[ $CUR_B == "$2" ]] || ipx "$CUR_B" link set "$VB" netns "${2:-1}"
	CUR_B=$2
}

# link_up NS DEV IP
link_up() {
	ipx "$1" link set "$2" mtu "$MTU"
	ipx "$1" addr replace "$3/24" dev "$2"
	ipx "$1" link set "$2" up
}

topo_two() {
	[[ $phase == two ]] && return 0
	loss_clear
	move_to "$NA" "$NB"
	phase=two
	link_up "$NA" "$VA" "$IPA"
	link_up "$NB" "$VB" "$IPB"
	wait_for 10 ip netns exec "$NA" ping -c 1 -W 1 "$IPB" ||
		die "no IP connectivity over $VA-$VB"
}

topo_one() {
	[[ $phase == one ]] && return 0
	[[ $phase != two ]] || tcp_mode gso
	loss_clear
	move_to "" ""
	phase=one
	local d
	for d in all default "$VA" "$VB"; do
		sysctl -qw "net.ipv4.conf.$d.rp_filter=0"
	done
	sysctl -qw "net.ipv4.conf.$VA.accept_local=1" "net.ipv4.conf.$VB.accept_local=1"
	link_up "" "$VA" "$IPA"
	link_up "" "$VB" "$IPB"
	ip route replace "$IPB" dev "$VA" src "$IPA" table "$TBL_A"
	ip route replace "$IPA" dev "$VB" src "$IPB" table "$TBL_B"
	ip neigh replace "$IPB" lladdr "$(<"/sys/class/net/$VB/address")" dev "$VA" nud permanent
	ip neigh replace "$IPA" lladdr "$(<"/sys/class/net/$VA/address")" dev "$VB" nud permanent
	[[ $(ip -o route get "$IPB" from "$IPA") == *" dev $VA "* ]] ||
		die "policy routing: $IPA -> $IPB does not leave through $VA"
	wait_for 10 ping -c 1 -W 1 -I "$IPA" "$IPB" || die "no IP connectivity over $VA-$VB"
}

setup() {
	local ns
	for ns in "$NA" "$NB"; do
		ip netns del "$ns" 2>/dev/null || true
		ip netns add "$ns"
		ip -n "$ns" link set lo up
		ip netns exec "$ns" sleep infinity &
		ANCHOR[$ns]=$!
		pids+=("$!")
	done
	ip link del "$VA" 2>/dev/null || true
	ip link add "$VA" type veth peer name "$VB"
	DEF_GSO_SEGS=$(ip -d -o link show dev "$VA" | sed -n 's/.* gso_max_segs \([0-9]*\).*/\1/p')
	DEF_GRO=$(ethtool -k "$VA" | awk '$1 == "generic-receive-offload:" { print $2 }')
	[[ $DEF_GSO_SEGS =~ ^[0-9]+$ && $DEF_GRO =~ ^(on|off)$ ]] ||
		die "cannot read the veth's gso_max_segs / GRO setting"
	phase=one CUR_A="" CUR_B=""
	rules_add
	for ns in "$NA" "$NB"; do
		wait_for 5 test -r "/proc/${ANCHOR[$ns]}/net/dev" || die "cannot see into $ns"
	done
}

cleanup() {
	local rc=$? p d
	set +e
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	for d in "${mr_devs[@]}" "${rxe_devs[@]}"; do
		rdma link delete "$d" 2>/dev/null
	done
	ip link del "$VA" 2>/dev/null
	ip netns exec "$NA" ip link del "$VA" 2>/dev/null
	ip netns del "$NA" 2>/dev/null
	ip netns del "$NB" 2>/dev/null
	rules_del
	if [[ -d $WORK ]]; then
		mkdir -p "$OUT"
		rm -rf "$OUT/logs"
		cp -r "$LOGS" "$OUT/logs" 2>/dev/null
		rm -rf "$WORK"
	fi
	exit "$rc"
}
mr_devs=() rxe_devs=()
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- RDMA devices ----------------------------------------------------------------

# gid_index DEV IP: prints the GID table index of IP (IPv4-mapped, RoCE v2).
gid_index() {
	local want f i o t
	IFS=. read -ra o <<<"$2"
	printf -v want '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "${o[@]}"
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		i=${f##*/}
		[[ $(<"$f") == "$want" ]] || continue
		read -r t <"/sys/class/infiniband/$1/ports/1/gid_attrs/types/$i" 2>/dev/null || continue
		[[ $t == "RoCE v2" ]] || continue
		echo "$i"
		return 0
	done
	return 1
}

port_active() { [[ $(<"/sys/class/infiniband/$1/ports/1/state") == *ACTIVE ]]; }

# dev_add TYPE NAME NS NETDEV IP: creates an RDMA link, waits until its port
# is active and its IPv4 GID exists.
dev_add() {
	local type=$1 name=$2 ns=$3 netdev=$4 ip=$5
	in_ns "$ns"
	"${NSX[@]}" rdma link add "$name" type "$type" netdev "$netdev" ||
		{ echo "rdma link add $name type $type netdev $netdev failed"; return 1; }
	if [[ $type == rxe ]]; then rxe_devs+=("$name"); else mr_devs+=("$name"); fi
	wait_for 10 port_active "$name" || { echo "$name: port not ACTIVE"; return 1; }
	wait_for 10 gid_index "$name" "$ip" || { echo "$name: no GID for $ip"; return 1; }
}

devs_del() {
	local d
	for d in "${mr_devs[@]}" "${rxe_devs[@]}"; do
		rdma link delete "$d" || echo "bench: warning: rdma link delete $d failed" >&2
	done
	mr_devs=() rxe_devs=()
}

# --- loss -------------------------------------------------------------------------

# loss_set PCT: netem on the sender's end (and the receiver's: LOSS_DIR=both).
# A 0 % netem is installed too, so that every run has the same qdisc path.
# Runs replace it; it goes when the veth ends move (and after a failure).
loss_set() {
	tcx "$CUR_A" qdisc replace dev "$VA" root netem loss "$1%"
	if [[ $LOSS_DIR == both ]]; then
		tcx "$CUR_B" qdisc replace dev "$VB" root netem loss "$1%"
	fi
}

loss_clear() {
	tcx "$CUR_A" qdisc del dev "$VA" root 2>/dev/null || true
	tcx "$CUR_B" qdisc del dev "$VB" root 2>/dev/null || true
}

# netem_stats FILE: sets NE_SENT NE_DROP from VA's qdisc statistics, which
# are also saved in FILE.
netem_stats() {
	local s
	s=$(tcx "$CUR_A" -s qdisc show dev "$VA")
	echo "$s" >>"$1"
	NE_SENT=0 NE_DROP=0
	if [[ $s =~ Sent\ [0-9]+\ bytes\ ([0-9]+)\ pkt\ \(dropped\ ([0-9]+) ]]; then
		NE_SENT=${BASH_REMATCH[1]} NE_DROP=${BASH_REMATCH[2]}
	fi
}

# --- results ----------------------------------------------------------------------

# Columns of runs.tsv (report.py reads them by name).
COLS=(idx rep transport test variant size loss_pct status gbps tool_gbps count
	window_s wire_tx_bytes wire_tx_pkts wire_rx_bytes lo_tx_pkts netem_sent
	netem_drops retx rto timeouts srtt_us elapsed_s run_s reason)
RUNS=$WORK/runs.tsv
(
	IFS=$'\t'
	echo "${COLS[*]}"
) >"$RUNS"

run_idx=0 fails=0 total_runs=0
declare -A R

row_reset() {
	local c
	R=()
	for c in "${COLS[@]}"; do R[$c]=""; done
}

row_write() {
	local c v vals=()
	for c in "${COLS[@]}"; do
		v=${R[$c]:--}
		v=${v//$'\t'/ }
		vals+=("${v//$'\n'/ }")
	done
	(
		IFS=$'\t'
		echo "${vals[*]}"
	) >>"$RUNS"
}

# Counters before a run, and the wire check after it: the payload a run
# reports must have left through VA (its tx bytes), and not over lo
# (phase one: rxe could otherwise short-cut through the local route).
counters_before() {
	dev_counters "$CUR_A" "$VA"
	A_TXB=$TXB A_TXP=$TXP
	dev_counters "$CUR_B" "$VB"
	B_RXB=$RXB
	dev_counters "$CUR_A" lo
	LO_TXP=$TXP
	netem_stats "$1"
	NE_SENT0=$NE_SENT NE_DROP0=$NE_DROP
}

counters_after() {
	dev_counters "$CUR_A" "$VA"
	R[wire_tx_bytes]=$((TXB - A_TXB))
	R[wire_tx_pkts]=$((TXP - A_TXP))
	dev_counters "$CUR_B" "$VB"
	R[wire_rx_bytes]=$((RXB - B_RXB))
	dev_counters "$CUR_A" lo
	R[lo_tx_pkts]=$((TXP - LO_TXP))
	netem_stats "$1"
	R[netem_sent]=$((NE_SENT - NE_SENT0))
	R[netem_drops]=$((NE_DROP - NE_DROP0))
}

# wire_check PAYLOAD_BYTES: fails the run when the payload did not cross VA.
wire_check() {
	if ((R[wire_tx_bytes] < $1)); then
		R[reason]="only ${R[wire_tx_bytes]} bytes left $VA for $1 bytes of payload"
		return 1
	fi
	if ((R[lo_tx_pkts] * 100 > R[wire_tx_pkts] + 100)); then
		R[reason]="${R[lo_tx_pkts]} packets on lo vs ${R[wire_tx_pkts]} on $VA"
		return 1
	fi
}

# server_wait PID SECONDS: waits for a background server, killing it after
# SECONDS; returns its status (124 when it had to be killed).
server_wait() {
	local pid=$1 deadline=$((SECONDS + $2)) rc=0
	while kill -0 "$pid" 2>/dev/null; do
		if ((SECONDS >= deadline)); then
			kill "$pid" 2>/dev/null || true
			nap 1
			kill -9 "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
			return 124
		fi
		nap 0.2
	done
	wait "$pid" || rc=$?
	return "$rc"
}

# --- telemetry --------------------------------------------------------------------

# rdma_stat DEV FILE: saves `rdma statistic` of DEV's port (a fresh device:
# the run's own counters); prints "retx rto": metaroce's retransmits and
# retransmits_timeout, rxe's rcvd_seq_err and completer_retry_err.
rdma_stat() {
	rdma statistic show link "$1/1" >"$2" 2>&1 || true
	awk -v l="$1/1" '$1 == "link" && $2 == l {
		for (i = 3; i < NF; i += 2) v[$i] = $(i + 1); ok = 1
	} END {
		if (!ok) print "- -"
		else if ("retransmits" in v) print v["retransmits"] + 0, v["retransmits_timeout"] + 0
		else print v["rcvd_seq_err"] + 0, v["completer_retry_err"] + 0
	}' "$2"
}

# peers_sampler DEV FILE PID: while PID lives, copies metaroce's debugfs peer
# table of DEV to FILE once a second (the table empties when the QP goes,
# so the last sample is taken just before the client ends); a background job.
peers_sampler() {
	local src=/sys/kernel/debug/metaroce/$1/peers snap
	while kill -0 "$3" 2>/dev/null; do
		snap=""
		read -rd '' snap <"$src" 2>/dev/null || true
		if [[ $snap == *path* ]]; then
			printf '# %s\n%s\n' "$EPOCHREALTIME" "$snap" >"$2.tmp" && mv "$2.tmp" "$2"
		fi
		nap 1
	done
}

# peers_summary FILE: "timeouts srtt_us" of the last sample: the sum of the
# paths' timeouts and the median of their srtt_us.
peers_summary() {
	[[ -s $1 ]] || { echo "- -"; return 0; }
	awk '
		$1 == "path" && $2 == "sport" { for (i = 1; i <= NF; i++) col[$i] = i; inpaths = 1; next }
		$1 == "peer" { inpaths = 0 }
		inpaths && $1 ~ /^[0-9]+$/ && ("srtt_us" in col) {
			t += $col["timeouts"]; s[n++] = $col["srtt_us"] + 0
		}
		END {
			if (!n) { print "- -"; exit }
			for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
				if (s[j] < s[i]) { x = s[i]; s[i] = s[j]; s[j] = x }
			print t, (n % 2 ? s[int(n / 2)] : int((s[n / 2 - 1] + s[n / 2]) / 2))
		}' "$1"
}

# --- one run ----------------------------------------------------------------------

# perftest_errors LOG: its error messages, on one line.
perftest_errors() {
	grep -iE 'error|fail|unable|couldn|scnt=|exceeded|timeout' "$1" | head -n 4 |
		sed 's/^ *//' | paste -sd ';' -
}

# perftest_result LOG: its report line, "bytes iterations peak avg msgrate".
perftest_result() {
	awk -v s="$SIZE" '$1 == s && NF >= 5 && $2 ~ /^[0-9]+$/ { line = $0 } END { print line }' "$1"
}

# run_perftest TRANSPORT TOOL LOSS REP
run_perftest() {
	local transport=$1 tool=$2 loss=$3 rep=$4 dev_a dev_b port cli srv spid cpid
	local rc=0 src_rc=0 t0 gid_a gid_b line iters samplers=()
	port=$((18515 + run_idx))
	cli=$LOGS/$(printf '%03d' "$run_idx")-$transport-$tool-loss$loss-rep$rep
	srv=$cli.server
	STAMPS=$cli.times
	stamp start
	R[window_s]=$((DUR - 2 * MARGIN))
	if [[ $transport == metaroce ]]; then
		topo_two
		tcp_mode gso
		dev_a=mrbA dev_b=mrbB
	else
		topo_one
		dev_a=rxbA dev_b=rxbB
	fi
	if ! dev_add "$transport" "$dev_a" "$CUR_A" "$VA" "$IPA" >>"$cli.setup" 2>&1 ||
		! dev_add "$transport" "$dev_b" "$CUR_B" "$VB" "$IPB" >>"$cli.setup" 2>&1; then
		R[reason]="device setup: $(tail -n 1 "$cli.setup")"
		return 1
	fi
	gid_a=$(gid_index "$dev_a" "$IPA")
	gid_b=$(gid_index "$dev_b" "$IPB")
	loss_set "$loss"
	counters_before "$cli.netem"
	stamp setup
	local common=(-s "$SIZE" -D "$DUR" -f "$MARGIN" -Q 1 -F --report_gbits -p "$port")
	profile_start "$(printf '%03d' "$run_idx")"
	in_ns "$CUR_B"
	"${NSX[@]}" timeout -k 5 $((DUR + 90)) \
		"$tool" -d "$dev_b" -x "$gid_b" "${common[@]}" >"$srv" 2>&1 &
	spid=$!
	pids+=("$spid")
	if ! wait_for 30 tcp_listening "$CUR_B" "$port"; then
		server_wait "$spid" 0 || true
		R[reason]="$tool server did not listen on port $port"
		return 1
	fi
	stamp listening
	t0=$(now_us)
	in_ns "$CUR_A"
	"${NSX[@]}" timeout -k 5 $((DUR + 60)) \
		"$tool" -d "$dev_a" -x "$gid_a" "${common[@]}" "$IPB" >"$cli" 2>&1 &
	cpid=$!
	pids+=("$cpid")
	profile_window
	if [[ $transport == metaroce ]]; then
		peers_sampler "$dev_a" "$cli.peers" "$cpid" &
		samplers+=("$!")
		peers_sampler "$dev_b" "$srv.peers" "$cpid" &
		samplers+=("$!")
	fi
	wait "$cpid" || rc=$?
	elapsed_since "$t0"
	profile_wait
	stamp client
	server_wait "$spid" $((rc ? 5 : 30)) || src_rc=$?
	stamp server
	counters_after "$cli.netem"
	read -r "R[retx]" "R[rto]" < <(rdma_stat "$dev_a" "$cli.rdma-stat")
	rdma_stat "$dev_b" "$srv.rdma-stat" >/dev/null
	if ((${#samplers[@]})); then
		wait "${samplers[@]}" || true
		read -r "R[timeouts]" "R[srtt_us]" < <(peers_summary "$cli.peers")
	fi
	stamp telemetry
	devs_del >>"$cli.setup" 2>&1
	stamp cleared
	if ((rc)); then
		R[reason]="$tool client exit $rc: $(perftest_errors "$cli")"
		return 1
	fi
	if ((src_rc)); then
		R[reason]="$tool server exit $src_rc: $(perftest_errors "$srv")"
		return 1
	fi
	line=$(perftest_result "$cli")
	[[ -n $line ]] || { R[reason]="no $tool report"; return 1; }
	read -r _ iters _ "R[tool_gbps]" _ <<<"$line"
	((iters > 0)) || { R[reason]="no message completed in the ${R[window_s]} s window"; return 1; }
	R[count]=$iters
	# From the iterations perftest counted in its measured window (its own
	# figure depends on the TSC rate, unreliable under TCG).
	R[gbps]=$(awk -v n="$iters" -v s="$SIZE" -v w="${R[window_s]}" \
		'BEGIN { printf "%.4f", n * s * 8 / w / 1e9 }')
	wire_check $((iters * SIZE))
}

# tcp_mode VARIANT: gso = the veth's defaults (GSO super-packets of up to
# 64 KB; every other run uses them too); mss = one MSS per skb
# (gso_max_segs 1) and no GRO, so that netem drops single segments as it
# does for the RDMA transports. Changes only what differs (phase two).
tcp_mode() {
	local segs=$DEF_GSO_SEGS gro=$DEF_GRO
	[[ $1 != "$cur_tcp_mode" ]] || return 0
	if [[ $1 == mss ]]; then
		segs=1 gro=off
	fi
	ip -n "$NA" link set dev "$VA" gso_max_segs "$segs"
	ip -n "$NB" link set dev "$VB" gso_max_segs "$segs"
	if [[ $DEF_GRO == on ]]; then
		ip netns exec "$NA" ethtool -K "$VA" gro "$gro" >/dev/null
		ip netns exec "$NB" ethtool -K "$VB" gro "$gro" >/dev/null
	fi
	cur_tcp_mode=$1
}
cur_tcp_mode=gso

# run_iperf VARIANT LOSS REP
run_iperf() {
	local variant=$1 loss=$2 rep=$3 port cli srv spid rc=0 src_rc=0 t0 v
	port=$((5201 + run_idx))
	cli=$LOGS/$(printf '%03d' "$run_idx")-tcp-$variant-loss$loss-rep$rep
	srv=$cli.server
	STAMPS=$cli.times
	stamp start
	topo_two
	R[window_s]=$((DUR - 2 * MARGIN))
	tcp_mode "$variant"
	loss_set "$loss"
	counters_before "$cli.netem"
	stamp setup
	profile_start "$(printf '%03d' "$run_idx")"
	ip netns exec "$NB" timeout -k 5 $((DUR + 90)) iperf3 -s -1 -J -p "$port" >"$srv" 2>&1 &
	spid=$!
	pids+=("$spid")
	if ! wait_for 30 tcp_listening "$NB" "$port"; then
		server_wait "$spid" 0 || true
		R[reason]="iperf3 server did not listen on port $port"
		return 1
	fi
	stamp listening
	t0=$(now_us)
	profile_window
	ip netns exec "$NA" timeout -k 5 $((DUR + 60)) iperf3 -c "$IPB" -p "$port" -J \
		-l "$SIZE" -O "$MARGIN" -t "${R[window_s]}" --connect-timeout 10000 >"$cli" 2>&1 || rc=$?
	elapsed_since "$t0"
	profile_wait
	stamp client
	server_wait "$spid" $((rc ? 5 : 30)) || src_rc=$?
	stamp server
	counters_after "$cli.netem"
	stamp counters
	# Receiver goodput over the measured seconds (the -O seconds excluded).
	v=$(python3 - "$cli" <<-'EOF'
		import json, sys
		try:
		    d = json.load(open(sys.argv[1]))
		except ValueError:
		    print("error", "no JSON output"); sys.exit()
		if "error" in d:
		    print("error", d["error"]); sys.exit()
		r, s = d["end"]["sum_received"], d["end"].get("sum_sent", {})
		print("ok", r["bytes"], "%.4f" % (r["bits_per_second"] / 1e9),
		      "%.2f" % r["seconds"], s.get("retransmits", "-"))
	EOF
	)
	if ((rc)) || [[ $v != ok* ]]; then
		R[reason]="iperf3 client exit $rc: ${v#error }"
		return 1
	fi
	if ((src_rc)); then
		R[reason]="iperf3 server exit $src_rc"
		return 1
	fi
	read -r _ "R[count]" "R[gbps]" "R[window_s]" "R[retx]" <<<"$v"
	R[tool_gbps]=${R[gbps]}
	((R[count] > 0)) || { R[reason]="no byte received"; return 1; }
	wire_check "${R[count]}"
}

# run_one TRANSPORT TEST VARIANT LOSS REP
run_one() {
	local transport=$1 test=$2 variant=$3 loss=$4 rep=$5 ok=1 t0=$SECONDS what
	run_idx=$((run_idx + 1))
	row_reset
	R[idx]=$run_idx R[rep]=$rep R[transport]=$transport R[test]=$test
	R[variant]=$variant R[size]=$SIZE R[loss_pct]=$loss
	if ((SECONDS > BUDGET)); then
		R[reason]="time budget of $BUDGET s exhausted"
		ok=0
	elif [[ $transport == tcp ]]; then
		run_iperf "$variant" "$loss" "$rep" || ok=0
	else
		run_perftest "$transport" "$test" "$loss" "$rep" || ok=0
	fi
	profile_wait
	R[run_s]=$((SECONDS - t0))
	what="[$run_idx/$total_runs] $transport $test${variant:+ ($variant)} loss $loss% rep $rep:"
	if ((ok)); then
		R[status]=ok
		log "$what ${R[gbps]} Gb/s; $((R[wire_tx_bytes] / 1000000)) MB in" \
			"${R[wire_tx_pkts]} packets left $VA, netem dropped ${R[netem_drops]}"
	else
		R[status]=fail R[gbps]=""
		fails=$((fails + 1))
		log "$what FAILED: ${R[reason]}"
		# A clean slate for the next run, whatever state this one left.
		devs_del >/dev/null 2>&1 || true
		loss_clear
	fi
	row_write
}

# calibrate: the guest's copy speed (MB/s of 64 KiB reads from /dev/zero),
# once per round: under TCG it shows how much host CPU the VM got.
calibrate() {
	dd if=/dev/zero of=/dev/null bs=64k count=4096 2>&1 |
		awk '/copied/ { for (i = 2; i < NF; i++) if ($(i + 1) == "s,") printf "%.0f\n", $1 / $i / 1e6 }'
}

# --- main ------------------------------------------------------------------------

# The runs of one round, in order: the two-namespace phase, then phase one.
# A figure's loss rates run back to back, so that the ratios of a round
# (lossy / lossless, report.py) compare runs seconds apart: the emulated
# CPU's speed drifts over minutes.
plan=()
figures=()
if has_transport metaroce; then
	figures+=("metaroce ib_write_bw -" "metaroce ib_send_bw -")
fi
if has_transport tcp; then
	figures+=("tcp iperf3 gso" "tcp iperf3 mss")
fi
if has_transport rxe; then
	figures+=("rxe ib_write_bw -" "rxe ib_send_bw -")
fi
for f in "${figures[@]}"; do
	for loss in "${LOSSES[@]}"; do
		plan+=("$f $loss")
	done
done
total_runs=$((${#plan[@]} * REPS))

if has_transport metaroce; then
	modprobe metaroce
fi
if has_transport rxe; then
	modprobe rdma_rxe
fi
setup

log "$(uname -r), $(nproc) CPUs; loss on the ${LOSS_DIR} direction;" \
	"$REPS rounds of ${#plan[@]} runs of ${DUR} s (${MARGIN} s margins)"
started=$(date -u '+%Y-%m-%d %H:%M UTC')
calib=()
for ((rep = 1; rep <= REPS; rep++)); do
	calib+=("$(calibrate)")
	log "round $rep: guest copy speed ${calib[-1]} MB/s"
	for p in "${plan[@]}"; do
		read -r t tst var loss <<<"$p"
		[[ $var != - ]] || var=""
		run_one "$t" "$tst" "$var" "$loss" "$rep"
	done
done
log "$run_idx runs, $fails failed, $SECONDS s"

# --- report ------------------------------------------------------------------------

mkdir -p "$OUT"
cp "$RUNS" "$OUT/runs.tsv"
{
	echo "date=$started"
	echo "kernel=$(uname -r)"
	echo "cpus=$(nproc)"
	echo "mem_mib=$(awk '$1 == "MemTotal:" { printf "%d", $2 / 1024 }' /proc/meminfo)"
	echo "cpu_model=$(awk -F': ' '$1 ~ /^model name/ { print $2; exit }' /proc/cpuinfo)"
	if grep -qw hypervisor /proc/cpuinfo; then
		echo "virt=QEMU guest of selftests/vm/run"
	else
		echo "virt=no hypervisor"
	fi
	echo "metaroce=$(modinfo -F version metaroce 2>/dev/null) $(modinfo -F srcversion metaroce 2>/dev/null)"
	echo "tree=$(git -C "$TOP" describe --always --dirty 2>/dev/null || echo unknown)"
	echo "perftest=$(ib_write_bw --version 2>&1 | awk '{ print $NF; exit }')"
	echo "iperf3=$(iperf3 --version 2>&1 | awk '{ print $2; exit }')"
	echo "reps=$REPS"
	echo "duration_s=$DUR"
	echo "margin_s=$MARGIN"
	echo "loss_dir=$LOSS_DIR"
	echo "mtu=$MTU"
	echo "veth_defaults=gso_max_segs $DEF_GSO_SEGS, GRO $DEF_GRO"
	echo "size=$SIZE"
	echo "runtime_s=$SECONDS"
	echo "copy_mbps=${calib[*]}"
	echo "runs=$run_idx"
	echo "failed=$fails"
} >"$OUT/meta.env"

docs_dir=$OUT/docs
if [[ $DOCS == 1 ]] || [[ $DOCS == auto && $fails == 0 ]]; then
	docs_dir=$TOP/Documentation
fi
python3 "$HERE/report.py" --runs "$OUT/runs.tsv" --meta "$OUT/meta.env" \
	--docs "$docs_dir" --out "$OUT" || die "report.py failed"
[[ $docs_dir == "$TOP/Documentation" ]] || log "Documentation/ left as it was; report in $docs_dir"

if ((fails)); then
	log "FAIL: $fails of $run_idx runs failed (see $OUT/runs.tsv and $OUT/logs/)"
	exit 1
fi
log "PASS: all $run_idx runs succeeded"
exit 0
}
