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

# ucx_pair NAME TLS TEST SIZE ITERS: ucx_perftest between mrs1 (server)
# and mrs0 over TLS; the client's output is in $MR_TMP/NAME.client.
ucx_pair() {
	local name=$1 tls=$2 test=$3 size=$4 iters=$5 srv rc=0
	ip netns exec mrs1 env UCX_TLS="$tls" "$HERE/mpi_rank.sh" \
		timeout 120 ucx_perftest -t "$test" -s "$size" -n "$iters" \
		-p "$UCX_PORT" >"$MR_TMP/$name.server" 2>&1 </dev/null &
	srv=$!
	mr_defer kill "$srv"
	assert_wait "ucx_perftest listens" 30 mr_tcp_listening mrs1 "$UCX_PORT"
	ip netns exec mrs0 env UCX_TLS="$tls" "$HERE/mpi_rank.sh" \
		timeout 120 ucx_perftest -t "$test" -s "$size" -n "$iters" \
		-p "$UCX_PORT" 10.60.1.1 >"$MR_TMP/$name.client" 2>&1 </dev/null ||
		rc=$?
	wait "$srv" || rc=$((rc ? rc : $?))
	if ((rc)); then
		tail -n 15 "$MR_TMP/$name.client" "$MR_TMP/$name.server"
		mr_fail "$name: ucx_perftest exited $rc"
	fi
	grep -E "^Final:" "$MR_TMP/$name.client" >"$MR_TMP/$name.final" ||
		mr_fail "$name: no Final line"
}

ucx_rc() {
	ucx_pair ucx_rc rc_verbs,ud_verbs,self tag_bw 65536 500
	# Final: iterations, latency 50%/avg/overall, MB/s avg/overall, msg/s
	mr_log "rc_verbs tag_bw 64 KiB: $(awk '{ print $7 }' "$MR_TMP/ucx_rc.final") MB/s"
}

ucx_ud() {
	ucx_pair ucx_ud ud_verbs,self tag_lat 8 2000
	mr_log "ud_verbs tag_lat 8 B: median $(awk '{ print $3 }' "$MR_TMP/ucx_ud.final") us," \
		"average $(awk '{ print $4 }' "$MR_TMP/ucx_ud.final") us"
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
		timeout 600 mpirun -np $NHOSTS --host $hosts \
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
		"$(segments "$1" retransmits_timeout) after timeouts;" \
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
	for ((i = 0; i < NHOSTS; i++)); do
		c=$(ip netns exec mrxw cat "/sys/class/net/y$i/statistics/rx_packets")
		n=$((n + c))
	done
	echo "$n"
}

# coll_rxe NAME [LOSS]: mr_coll as coll runs it, over rc_verbs on rxe
# (mr_rxe_star: all ranks in the initial namespace, rank i on mrx<i>), the
# router dropping LOSS of what it forwards. rxe's UD completions do not
# carry the packet type in sl as a RoCE NIC's do, so UCX 1.13 would take
# the destination address at the wrong offset and drop every UD packet
# (its wireup among them): UCX_UD_ETH_DGID_CHECK=n turns that check off.
coll_rxe() {
	local name=$1 loss=${2:-} d i fwd sent=0 s bad=""
	mr_rxe_star "$NHOSTS"
	if [[ -n $loss ]]; then
		for ((i = 0; i < NHOSTS; i++)); do
			mr_netem mrxw "y$i" loss "$loss"
		done
	fi
	for d in "${MR_RXE_DEVS[@]}"; do
		mr_stats "$d" >"$MR_TMP/$d.$name.before"
	done
	fwd=$(rxe_router_pkts)
	# shellcheck disable=SC2086 # MPI_OPTS and RANK_CMD are word lists
	if ! MR_RANK_DEVS="${MR_RXE_DEVS[*]}" OMPI_ALLOW_RUN_AS_ROOT=1 \
		OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 600 \
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
	fwd=$(($(rxe_router_pkts) - fwd))
	for d in "${MR_RXE_DEVS[@]}"; do
		mr_stats "$d" >"$MR_TMP/$d.$name.after"
		s=$(mr_stat_delta "$MR_TMP/$d.$name.before" \
			"$MR_TMP/$d.$name.after" sent_pkts)
		((s > 0)) || bad+=" $d"
		sent=$((sent + s))
	done
	mr_log "rxe packets sent: $sent; received by the router: $fwd"
	[[ -z $bad ]] || mr_fail "sent nothing:$bad (UCX did not use it)"
	# Every packet crossed the router (ARP adds a few).
	((fwd >= sent)) ||
		mr_fail "the router saw $fwd of the $sent packets rxe sent"
}

# router_loss PCT: netem on every router interface towards a host.
router_loss() {
	local dev
	for dev in w0 w1 w2 wr; do
		mr_netem mrsw "$dev" loss "$1"
		mr_defer ip netns exec mrsw tc qdisc del dev "$dev" root
	done
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
mr_run mpi mpi
mr_run mpi_tcp mpi_tcp
mr_run mpi_loss mpi_loss
mr_run mpi_tcp_loss mpi_tcp_loss
mr_run mpi_rxe mpi_rxe
mr_run mpi_rxe_loss mpi_rxe_loss
mr_done
