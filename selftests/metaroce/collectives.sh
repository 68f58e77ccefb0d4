#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 900
#
# Collectives through an existing engine: UCX and Open MPI over the
# device. Four hosts (fabric.sh's mr_star: mrs0, mrs1, mrs2 and mrsr, each
# on its own link into one router namespace), a metaroce device on each:
#
#   ucx_rc          ucx_perftest tag-matching bandwidth (64 KiB) over UCX's
#                   rc_verbs between mrs0 and mrs1: both sides exit 0
#   ucx_ud          ucx_perftest tag-matching latency (8 B) over ud_verbs
#   ucx_tcp         the same two runs over UCX's tcp transport between the
#                   same namespaces, for comparison: all four sides exit 0
#                   and the devices carry nothing
#   ucx_rxe         the same two runs over rc_verbs and ud_verbs on rxe, for
#                   comparison: two hosts of fabric.sh's mr_rxe_star (see
#                   mpi_rxe), both sides of each exit 0, both rxe devices
#                   sent packets and the router forwarded all of them; the
#                   figures of the three transports are logged as a table
#   mpi             mpirun starts one rank per host (mpi_agent.sh enters
#                   the host's namespace; mpi_rank.sh points UCX at its
#                   device) and mr_coll runs MPI_Allreduce and
#                   MPI_Alltoall from 8 B to 256 KiB, every element of
#                   every result checked, over UCX rc_verbs (Open MPI's
#                   ucx PML); every device carried data segments, no
#                   error counter moved and no device sent more probes
#                   (to dead paths) than data segments
#   mpi_tcp         the same over UCX's tcp transport, for comparison; the
#                   devices carry nothing
#   mpi_loss        as mpi, with netem dropping 1 % of the packets the
#                   router forwards
#   mpi_tcp_loss    as mpi_tcp, with the same loss
#   mpi_rxe         the same collectives over UCX rc_verbs on rxe, for
#                   comparison: Debian 6.12's rxe carries traffic only in
#                   the initial network namespace, so its hosts are links
#                   there into a router of their own (fabric.sh's
#                   mr_rxe_star), one rxe device and one rank each; every
#                   device sent packets and the router forwarded all of
#                   them (none took the shortcut through lo)
#   mpi_rxe_loss    as mpi_rxe, with the router dropping 1 %
#
# Each MPI run's per-size times are logged, with the TCP/metaroce and
# rxe/metaroce ratios of each.
#
# MR_COLL_HOSTS=N runs N hosts (mrs0 .. mrs<N-2> and mrsr; default 4),
# MR_COLL_MAX the largest size in bytes (default 262144), MR_COLL_ITERS
# the calls per size (default 10), MR_COLL_YIELD=1 has idle ranks yield
# the CPU (Open MPI's mpi_yield_when_idle): hosts16.sh uses them.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fabric.sh"
mr_require_module

HERE=$(cd "$(dirname "$0")" && pwd)
COLL=$MR_TOP/build/userspace/tools/mr_coll
NHOSTS=${MR_COLL_HOSTS:-4}
ITERS=${MR_COLL_ITERS:-10}
MAX=${MR_COLL_MAX:-262144}
YIELD=${MR_COLL_YIELD:-0}
UCX_PORT=18700

ERROR_COUNTERS="rx_drop_malformed rx_drop_no_qp drop_no_conn drop_epoch
	drop_wrong_peer drop_inconsistent drop_access drop_invalid_request
	naks_tx naks_rx"

for t in mpirun ucx_perftest; do
	command -v "$t" >/dev/null || mr_skip_all "$t is missing: run make deps"
done
[[ -x $COLL ]] || mr_skip_all "$COLL is missing: run make userspace"

HOSTS_NS=()
for ((i = 0; i < NHOSTS - 1; i++)); do
	HOSTS_NS+=("mrs$i")
done
HOSTS_NS+=(mrsr)

devstats() { # WHEN: every host's device counters to $MR_TMP/NS.WHEN
	local ns
	for ns in "${HOSTS_NS[@]}"; do
		mr_stats "${ns}_dev" "$ns" >"$MR_TMP/$ns.$1"
	done
}

# listening NS PORT: something listens on TCP PORT in NS ("": the initial
# namespace).
listening() {
	local ns=()
	[[ -z $1 ]] || ns=(ip netns exec "$1")
	[[ -n $("${ns[@]}" ss -Htln "sport = :$2") ]]
}

# The two sides of ucx_pair: the commands that start each (the rest of the
# command line follows), the namespace where the server listens ("": the
# initial one) and its address. By default the server is mrs1 and the
# client mrs0, UCX pointed at their devices and netdevs by mpi_rank.sh.
UCX_SRV=(ip netns exec mrs1 "$HERE/mpi_rank.sh")
UCX_CLI=(ip netns exec mrs0 "$HERE/mpi_rank.sh")
UCX_SRV_NS=mrs1 UCX_SRV_IP=10.60.1.1

# ucx_pair NAME TLS TEST SIZE ITERS: ucx_perftest between the server and
# the client (UCX_SRV, UCX_CLI) over UCX's transports TLS; the client's
# output is in $MR_TMP/NAME.client, its Final line in $MR_TMP/NAME.final.
ucx_pair() {
	local name=$1 tls=$2 srv rc=0 cmd
	cmd=(timeout "$(mr_secs 120)" ucx_perftest -t "$3" -s "$4" -n "$5" -p "$UCX_PORT")
	UCX_TLS=$tls "${UCX_SRV[@]}" "${cmd[@]}" >"$MR_TMP/$name.server" \
		2>&1 </dev/null &
	srv=$!
	mr_defer kill "$srv"
	assert_wait "ucx_perftest listens" 30 listening "$UCX_SRV_NS" "$UCX_PORT"
	UCX_TLS=$tls "${UCX_CLI[@]}" "${cmd[@]}" "$UCX_SRV_IP" \
		>"$MR_TMP/$name.client" 2>&1 </dev/null || rc=$?
	wait "$srv" || rc=$((rc ? rc : $?))
	if ((rc)); then
		tail -n 15 "$MR_TMP/$name.client" "$MR_TMP/$name.server"
		mr_fail "$name: ucx_perftest exited $rc"
	fi
	grep -E "^Final:" "$MR_TMP/$name.client" >"$MR_TMP/$name.final" ||
		mr_fail "$name: no Final line"
}

# ucx_bw NAME LABEL / ucx_lat NAME LABEL: logs run NAME's bandwidth (MB/s)
# or latency (half a round trip, median and average, us). Final:
# iterations, latency 50%/average/overall, MB/s average/overall, msg/s.
ucx_bw() {
	mr_log "$2 tag_bw 64 KiB: $(awk '{ print $7 }' "$MR_TMP/$1.final") MB/s"
}
ucx_lat() {
	mr_log "$2 tag_lat 8 B: median $(awk '{ print $3 }' "$MR_TMP/$1.final") us," \
		"average $(awk '{ print $4 }' "$MR_TMP/$1.final") us"
}

# ucx_table: the ucx_perftest figures of the transports that ran, one row
# each: bandwidth of 64 KiB messages (MB/s), 8 B latency median and
# average (us), and bandwidth and median latency as a ratio of the
# device's.
ucx_table() {
	local row bw lat
	mr_log "ucx_perftest   tag_bw_MB/s  tag_lat_median_us  tag_lat_avg_us" \
		" bw/metaroce  lat/metaroce"
	for row in "metaroce ucx_rc ucx_ud" "rxe ucx_rxe_rc ucx_rxe_ud" \
		"tcp ucx_tcp_bw ucx_tcp_lat"; do
		read -r row bw lat <<<"$row"
		[[ -s $MR_TMP/$bw.final && -s $MR_TMP/$lat.final ]] || continue
		cat "$MR_TMP/$bw.final" "$MR_TMP/$lat.final" \
			"$MR_TMP/ucx_rc.final" "$MR_TMP/ucx_ud.final" 2>/dev/null |
			awk -v t="$row" '{ f[NR] = $0 } END {
				split(f[1], b); split(f[2], l); split(f[3], mb)
				split(f[4], ml)
				printf "%-14s %11s  %17s  %14s  %11s  %12s\n", t,
					b[7], l[3], l[4],
					NR == 4 ? sprintf("%.2f", b[7] / mb[7]) : "-",
					NR == 4 ? sprintf("%.2f", l[3] / ml[3]) : "-" }'
	done
}

ucx_rc() {
	ucx_pair ucx_rc rc_verbs,ud_verbs,self tag_bw 65536 500
	ucx_bw ucx_rc rc_verbs
}

ucx_ud() {
	ucx_pair ucx_ud ud_verbs,self tag_lat 8 2000
	ucx_lat ucx_ud ud_verbs
}

# The same two runs over UCX's tcp transport (over the namespaces' netdevs:
# mpi_rank.sh names them in UCX_NET_DEVICES); the devices carry nothing.
ucx_tcp() {
	local d
	devstats ucx_tcp.before
	ucx_pair ucx_tcp_bw tcp,self tag_bw 65536 500
	ucx_bw ucx_tcp_bw tcp
	ucx_pair ucx_tcp_lat tcp,self tag_lat 8 2000
	ucx_lat ucx_tcp_lat tcp
	devstats ucx_tcp.after
	for d in $(segments ucx_tcp); do
		((d == 0)) || mr_fail "a device carried $d segments of a TCP run"
	done
}

# The same two runs over rc_verbs and ud_verbs on rxe: mrx1 (server) and
# mrx0 (client) of mr_rxe_star, both in the initial namespace (see
# coll_rxe), UCX pointed at each device and its GID for its address.
ucx_rxe() {
	local i gidx=()
	mr_rxe_star 2
	for i in 0 1; do
		gidx[i]=$(mr_gid_index "mrx$i" "${MR_RXE_IPS[i]}")
	done
	UCX_SRV=(env UCX_NET_DEVICES=mrx1:1 UCX_IB_GID_INDEX="${gidx[1]}"
		UCX_UD_ETH_DGID_CHECK=n)
	UCX_CLI=(env UCX_NET_DEVICES=mrx0:1 UCX_IB_GID_INDEX="${gidx[0]}"
		UCX_UD_ETH_DGID_CHECK=n)
	UCX_SRV_NS="" UCX_SRV_IP=${MR_RXE_IPS[1]}
	rxe_mark ucx_rxe
	ucx_pair ucx_rxe_rc rc_verbs,ud_verbs,self tag_bw 65536 500
	ucx_bw ucx_rxe_rc "rxe rc_verbs"
	ucx_pair ucx_rxe_ud ud_verbs,self tag_lat 8 2000
	ucx_lat ucx_rxe_ud "rxe ud_verbs"
	rxe_check ucx_rxe
	ucx_table
}

# coll_diag NAME: after a failed run NAME, the errors the ranks reported
# (UCX prints the failed completion before it aborts) and what moved on
# each device: error counters, retransmits, dead paths, RNR NAKs.
coll_diag() {
	local ns moved
	echo "--- errors reported by the ranks:"
	grep -m 20 -E "UCX +(ERROR|FATAL)|[Ee]rror|retry|Assertion" \
		"$MR_TMP/$1.out" || true
	devstats "$1.after"
	echo "--- counters moved during the run:"
	for ns in "${HOSTS_NS[@]}"; do
		# shellcheck disable=SC2086 # a list of names
		moved=$(mr_stat_moved "$MR_TMP/$ns.$1.before" \
			"$MR_TMP/$ns.$1.after" $ERROR_COUNTERS retransmits_timeout \
			timeouts_spurious path_dead probes_tx rx_drop_backlog \
			rnr_naks_tx rnr_naks_rx)
		echo "${ns}_dev:${moved:- nothing}"
	done
}

# Open MPI over UCX, as every run uses it: the UCX PML for any transport,
# none of Open MPI's own byte transfer layers.
MPI_OPTS="--mca pml ucx --mca btl ^openib,vader,uct,tcp \
	--mca pml_ucx_tls any --mca pml_ucx_devices any \
	--mca mpi_yield_when_idle $YIELD"
# The program each rank runs.
RANK_CMD="$HERE/mpi_rank.sh $COLL --iters $ITERS --max $MAX"

# coll_result NAME: mr_coll's verdict in $MR_TMP/NAME.out; its per-size
# lines to $MR_TMP/NAME.result.
coll_result() {
	grep "^mr_coll: OK" "$MR_TMP/$1.out" ||
		{ tail -n 30 "$MR_TMP/$1.out"; mr_fail "$1: no OK from mr_coll"; }
	# "mr_coll: COLL SIZE B x N: US us per call, ..." -> "COLL SIZE US"
	awk '/^mr_coll: (allreduce|alltoall) / { print $2, $3, $7 }' \
		"$MR_TMP/$1.out" >"$MR_TMP/$1.result"
}

# coll NAME TLS: mr_coll on the four hosts over UCX TLS; per-size lines
# in $MR_TMP/NAME.result.
coll() {
	local name=$1 tls=$2 hosts="" i
	for ((i = 0; i < NHOSTS - 1; i++)); do
		hosts+=10.60.$i.1,
	done
	hosts+=$MR_STAR_RX_IP
	devstats "$name.before"
	if ! ip netns exec mrs0 unshare --uts sh -c "hostname mrs0; exec \
		env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		timeout "$(mr_secs 600)" mpirun -np $NHOSTS --host $hosts \
		--mca plm_rsh_agent $HERE/mpi_agent.sh \
		--mca plm_rsh_no_tree_spawn 1 --mca oob_tcp_if_exclude lo \
		$MPI_OPTS -x UCX_TLS=$tls $RANK_CMD" \
		>"$MR_TMP/$name.out" 2>&1 </dev/null; then
		coll_diag "$name"
		tail -n 30 "$MR_TMP/$name.out"
		mr_fail "$name: mpirun failed"
	fi
	devstats "$name.after"
	coll_result "$name"
}

# segments NAME [COUNTER]: how far COUNTER (data segments sent) moved on
# each device during run NAME.
segments() {
	local ns counts=()
	for ns in "${HOSTS_NS[@]}"; do
		counts+=("$(mr_stat_delta "$MR_TMP/$ns.$1.before" \
			"$MR_TMP/$ns.$1.after" "${2:-data_segments_tx}")")
	done
	echo "${counts[*]}"
}

coll_metaroce() {
	local ns d moved bad="" seg probes segs
	coll "$1" rc_verbs,ud_verbs,self
	seg=$(segments "$1")
	mr_log "data segments sent per device (${HOSTS_NS[*]}): $seg;" \
		"retransmitted: $(segments "$1" retransmits_sack) after SACK," \
		"$(segments "$1" retransmits_timeout) after timeouts," \
		"$(segments "$1" retransmits_overdue) overdue;" \
		"paths declared dead: $(segments "$1" path_dead);" \
		"probes sent: $(segments "$1" probes_tx)"
	for d in $seg; do
		((d > 0)) || mr_fail "a device carried nothing: UCX did not use it"
	done
	# Probes go only to dead paths: fewer than the data, never a storm
	# (a stall once killed paths and probed them 300 times as often).
	read -ra probes <<<"$(segments "$1" probes_tx)"
	read -ra segs <<<"$seg"
	for d in "${!segs[@]}"; do
		((probes[d] <= segs[d])) ||
			mr_fail "${HOSTS_NS[d]}_dev sent ${probes[d]} probes for ${segs[d]} data segments"
	done
	for ns in "${HOSTS_NS[@]}"; do
		# shellcheck disable=SC2086 # a list of names
		moved=$(mr_stat_moved "$MR_TMP/$ns.$1.before" \
			"$MR_TMP/$ns.$1.after" $ERROR_COUNTERS)
		[[ -z $moved ]] || bad+=" ${ns}_dev:$moved"
	done
	[[ -z $bad ]] || mr_fail "error counters moved:$bad"
}

coll_tcp() {
	local d
	coll "$1" tcp,self
	for d in $(segments "$1"); do
		((d == 0)) || mr_fail "a device carried $d segments of a TCP run"
	done
}

# compare METAROCE OTHER [LABEL]: the two runs' times side by side, with
# the ratio (LABEL names the other transport: tcp by default).
compare() {
	local l=${3:-tcp}
	mr_log "collective size  metaroce_us  ${l}_us  $l/metaroce"
	paste -d' ' "$MR_TMP/$1.result" "$MR_TMP/$2.result" | awk '{
		printf "%-10s %7s  %11s  %6s  %12.2f\n", $1, $2, $3, $6, $6 / $3
	}'
}

# rxe_router_pkts: packets the rxe hosts' router received from them.
rxe_router_pkts() {
	local i n=0 c
	for i in "${!MR_RXE_DEVS[@]}"; do
		c=$(ip netns exec mrxw cat "/sys/class/net/y$i/statistics/rx_packets")
		n=$((n + c))
	done
	echo "$n"
}

# rxe_mark NAME / rxe_check NAME: before and after run NAME on the rxe
# hosts: every rxe device sent packets, and the router received at least
# as many from them as they sent (none took the shortcut through lo).
rxe_mark() {
	local d
	for d in "${MR_RXE_DEVS[@]}"; do
		mr_stats "$d" >"$MR_TMP/$d.$1.before"
	done
	rxe_router_pkts >"$MR_TMP/$1.fwd"
}
rxe_check() {
	local d fwd sent=0 s bad=""
	fwd=$(($(rxe_router_pkts) - $(<"$MR_TMP/$1.fwd")))
	for d in "${MR_RXE_DEVS[@]}"; do
		mr_stats "$d" >"$MR_TMP/$d.$1.after"
		s=$(mr_stat_delta "$MR_TMP/$d.$1.before" \
			"$MR_TMP/$d.$1.after" sent_pkts)
		((s > 0)) || bad+=" $d"
		sent=$((sent + s))
	done
	mr_log "rxe packets sent: $sent; received by the router: $fwd"
	[[ -z $bad ]] || mr_fail "sent nothing:$bad (UCX did not use it)"
	# Every packet crossed the router (ARP adds a few).
	((fwd >= sent)) ||
		mr_fail "the router saw $fwd of the $sent packets rxe sent"
}

# coll_rxe NAME [LOSS]: mr_coll as coll runs it, over rc_verbs on rxe
# (mr_rxe_star: all ranks in the initial namespace, rank i on mrx<i>), the
# router dropping LOSS of what it forwards. rxe's UD completions do not
# carry the packet type in sl as a RoCE NIC's do, so UCX 1.13 would take
# the destination address at the wrong offset and drop every UD packet
# (its wireup among them): UCX_UD_ETH_DGID_CHECK=n turns that check off.
coll_rxe() {
	local name=$1 loss=${2:-} i
	mr_rxe_star "$NHOSTS"
	if [[ -n $loss ]]; then
		for ((i = 0; i < NHOSTS; i++)); do
			mr_netem mrxw "y$i" loss "$loss"
		done
	fi
	rxe_mark "$name"
	# shellcheck disable=SC2086 # MPI_OPTS and RANK_CMD are word lists
	if ! MR_RANK_DEVS="${MR_RXE_DEVS[*]}" OMPI_ALLOW_RUN_AS_ROOT=1 \
		OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout "$(mr_secs 600)" \
		mpirun -np "$NHOSTS" --oversubscribe $MPI_OPTS \
		-x UCX_TLS=rc_verbs,ud_verbs,self -x MR_RANK_DEVS \
		-x UCX_UD_ETH_DGID_CHECK=n $RANK_CMD \
		>"$MR_TMP/$name.out" 2>&1 </dev/null; then
		grep -m 20 -E "UCX +(ERROR|FATAL)|[Ee]rror|retry" \
			"$MR_TMP/$name.out" || true
		tail -n 30 "$MR_TMP/$name.out"
		mr_fail "$name: mpirun failed"
	fi
	coll_result "$name"
	rxe_check "$name"
}

# router_loss PCT: netem on every router interface towards a host (w<i>
# of each mrs<i>, wr of mrsr), however many hosts there are.
router_loss() {
	local dev i devs=(wr)
	for ((i = 0; i < NHOSTS - 1; i++)); do
		devs+=("w$i")
	done
	for dev in "${devs[@]}"; do
		mr_netem mrsw "$dev" loss "$1"
		mr_defer ip netns exec mrsw tc qdisc del dev "$dev" root
	done
	mr_log "the router drops $1 of what it sends into ${devs[*]}"
}

mpi() { coll_metaroce mpi; }
mpi_tcp() {
	coll_tcp mpi_tcp
	if [[ -s $MR_TMP/mpi.result ]]; then compare mpi mpi_tcp; fi
}
mpi_loss() {
	router_loss 1%
	coll_metaroce mpi_loss
}
mpi_tcp_loss() {
	router_loss 1%
	coll_tcp mpi_tcp_loss
	if [[ -s $MR_TMP/mpi_loss.result ]]; then
		compare mpi_loss mpi_tcp_loss
	fi
}

mpi_rxe() {
	coll_rxe mpi_rxe
	if [[ -s $MR_TMP/mpi.result ]]; then compare mpi mpi_rxe rxe; fi
}
mpi_rxe_loss() {
	coll_rxe mpi_rxe_loss 1%
	if [[ -s $MR_TMP/mpi_loss.result ]]; then
		compare mpi_loss mpi_rxe_loss rxe
	fi
}

mr_setup star mr_star $((NHOSTS - 1))
mr_run ucx_rc ucx_rc
mr_run ucx_ud ucx_ud
mr_run ucx_tcp ucx_tcp
mr_run ucx_rxe ucx_rxe
mr_run mpi mpi
mr_run mpi_tcp mpi_tcp
mr_run mpi_loss mpi_loss
mr_run mpi_tcp_loss mpi_tcp_loss
mr_run mpi_rxe mpi_rxe
mr_run mpi_rxe_loss mpi_rxe_loss
mr_done
