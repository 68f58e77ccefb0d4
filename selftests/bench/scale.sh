#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# selftests/bench/scale.sh: many RC QPs between two hosts, metaroce against
# rxe in one VM boot (issue #7). mr_scale (build/userspace/tools) connects
# MR_SCALE_BENCH_QPS RC QPs (4000) on each side over one veth pair (MTU
# 1500); in each of 2 rounds every QP carries a 4 KiB RDMA WRITE and a SEND
# with immediate at once, and the server verifies every byte. Then both
# sides destroy everything. Per transport:
#
#   setup_us_per_qp     create + connect (RESET->INIT, then ->RTR->RTS),
#                       per QP, on the slower side (mr_scale's own timings)
#   data_mbps           the data phase's payload rate, Mbit/s (the client's)
#   teardown_us_per_qp  ibv_destroy_qp per QP, on the slower side
#   mem_bytes_per_qp    kernel memory (SUnreclaim + VmallocUsed, after
#                       drop_caches and shrinking the slab caches) with
#                       every QP connected, minus the same before, over
#                       2 * QPS (both sides' QPs)
#   mem_back            kernel memory, the vmap_area cache left out, back
#                       within 2 MiB of its level before within 30 s of the
#                       end (metaroce collects its idle connection 5 s after
#                       the last QP went)
#
# metaroce runs between two network namespaces. Debian 6.12's rxe carries
# no traffic between namespaces, so it runs with both veth ends in the
# initial namespace and policy routing that sends its packets over the
# veth pair; the veth transmit counters must show they did. Should rxe fail
# at QPS (or take the guest near its memory limit, which stops the run
# before the OOM killer would), it is run again at QPS/2, then QPS/4
# (MR_SCALE_BENCH_RXE_LADDER overrides the ladder), and the largest count
# that worked is compared, per QP, with metaroce's; the output and the
# report say so.
#
# Output: "SCALE transport=... qps=... status=ok|fail ..." per run and one
# "RATIO setup_us_per_qp=... mem_bytes_per_qp=... ..." line (metaroce /
# rxe).
#
# Then the verbs mix (issue #24): mr_mixed with MR_MIXED_BENCH_QPS RC QPs
# (4000; a list runs each count) per side, both sides initiating, 4
# requests outstanding per QP of WRITE, SEND (both with and without
# immediate), READ, fetch-and-add, compare-and-swap and READ followed by
# a fenced WRITE, 1 B to 4 KiB, MR_MIXED_BENCH_OPS (10) per QP and side,
# every byte and wr_id checked; lossless and at 1 % loss (netem on both
# veth ends), MR_MIXED_BENCH_REPEAT (1) times each, metaroce then rxe.
# Per run: the operations per second, the data phase's time, create +
# connect and destroy per QP, and the kernel memory per QP while all are
# connected. Output: "MIXED transport=... qps=... loss=... status=..."
# per run; Documentation/bench/mixed.tsv and the section of
# Documentation/benchmarks.rst between the mixed-generated markers. When every needed run succeeded (metaroce at QPS, rxe at some
# count), Documentation/bench/scale.tsv and the section of
# Documentation/benchmarks.rst between the scale-generated markers are
# rewritten (MR_SCALE_BENCH_DOCS: auto, 0 never, 1 even after a failure).
# Exit status: 0, 1 when a run failed, 4 when a tool or module is missing.

set -u
KSFT_SKIP=4
TOP=$(cd "$(dirname "$0")/../.." && pwd)
TOOL=$TOP/build/userspace/tools/mr_scale
MIXED=$TOP/build/userspace/tools/mr_mixed
MIXED_QPS=${MR_MIXED_BENCH_QPS:-4000}
MIXED_OPS=${MR_MIXED_BENCH_OPS:-10}
MIXED_REPEAT=${MR_MIXED_BENCH_REPEAT:-1}
QPS=${MR_SCALE_BENCH_QPS:-4000}
LADDER=${MR_SCALE_BENCH_RXE_LADDER:-"$QPS $((QPS / 2)) $((QPS / 4))"}
DOCS=${MR_SCALE_BENCH_DOCS:-auto}
# No run starts after this many seconds (the VM's timeout is 1800).
BUDGET=${MR_SCALE_BENCH_BUDGET:-1650}
SIZE=4096
ROUNDS=2
# Kernel memory may stay this far (KiB) above its level before a run.
SLACK_KB=2048
# A run is stopped when the guest's MemAvailable falls below this (KiB):
# an allocation failure or the OOM killer would end the whole VM run.
MEM_FLOOR_KB=$((160 * 1024))
WORK=$(mktemp -d /tmp/mr-scale-bench.XXXXXX)
RESULTS=$WORK/results.tsv
MRESULTS=$WORK/mixed.tsv

DEVS=sc
NA=mrsc-a NB=mrsc-b VA=mrsc-a0 VB=mrsc-b0
IPA=10.79.0.1 IPB=10.79.0.2
TBL_A=7901 TBL_B=7902 RULE_PREF=120 LOCAL_PREF=1000
PORT=18700

log() { echo "scale: $*"; }
die() { echo "scale: $*" >&2; exit 1; }
skip() { echo "scale: SKIP: $*" >&2; exit "$KSFT_SKIP"; }

[[ $QPS =~ ^[1-9][0-9]*$ ]] || die "bad MR_SCALE_BENCH_QPS '$QPS'"
[[ -x $TOOL && -x $MIXED ]] || skip "$TOOL or $MIXED is missing: run make userspace"
command -v rdma >/dev/null || skip "rdma (iproute2) is not installed"
modprobe metaroce 2>/dev/null || skip "metaroce.ko is not available"
modprobe rdma_rxe 2>/dev/null || skip "rdma_rxe is not available"

# wait_for SECONDS CMD...: CMD succeeds within SECONDS (by the clock: a
# check may itself take a while under emulation).
wait_for() {
	local end=$((SECONDS + $1))
	shift
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		((SECONDS < end)) || return 1
		sleep 0.1
	done
}

# kmem [back]: unreclaimable slab plus vmalloc, KiB. With "back", less
# the vmap_area cache's slabs: a freed vmalloc area's pages go at once,
# its vmap_area only at the next lazy TLB purge (selftests/metaroce/scale.sh).
kmem() {
	awk -v back="${1:-}" -v kib="$(($(getconf PAGESIZE) / 1024))" '
		FILENAME == "/proc/meminfo" && /^(SUnreclaim|VmallocUsed):/ {
			s += $2
		}
		FILENAME == "/proc/slabinfo" && $1 == "vmap_area" && back != "" {
			s -= $15 * $6 * kib
		}
		END { print s }' /proc/meminfo /proc/slabinfo
}
mem_available() { awk '/^MemAvailable:/ { print $2 }' /proc/meminfo; }
# drop_caches: the reclaimable caches dropped and every slab cache shrunk
# (its empty slabs freed, its per-CPU partial lists flushed), so that
# memory kept only for reuse is not counted.
drop_caches() {
	local f
	sync
	echo 3 >/proc/sys/vm/drop_caches
	for f in /sys/kernel/slab/*/shrink; do
		echo 1 >"$f" 2>/dev/null || true
	done
}

# shellcheck source=selftests/bench/veth_pair.sh
. "$TOP/selftests/bench/veth_pair.sh"

cleanup() {
	set +e
	local p
	for p in $(jobs -p); do
		kill "$p" 2>/dev/null
	done
	veth_pair_cleanup
	rm -rf "$WORK"
}
trap cleanup EXIT

tcp_listening() {
	if [[ -n $1 ]]; then
		[[ -n $(ip netns exec "$1" ss -Htln "sport = :$2") ]]
	else
		[[ -n $(ss -Htln "sport = :$2") ]]
	fi
}

# tx_packets NS DEV: DEV's transmitted packets (DEV in namespace NS, or in
# the initial one when NS is empty).
tx_packets() {
	if [[ -n $1 ]]; then
		ip netns exec "$1" cat "/sys/class/net/$2/statistics/tx_packets"
	else
		cat "/sys/class/net/$2/statistics/tx_packets"
	fi
}

# ok_field FILE KEY: a figure from mr_scale's "mr_scale: OK" line, e.g.
# "create 312 us/QP" -> ok_field F create gives 312; "data" gives the
# seconds and "rate" the MB/s.
ok_field() {
	awk -v k="$2" '/^mr_scale: OK / {
		for (i = 1; i <= NF; i++) {
			f = $i; sub(/,$/, "", f)
			if (k == "rate" && f == "MB/s)") { v = $(i - 1); sub(/^\(/, "", v); print v; exit }
			if ($i == k) { v = $(i + 1); print v; exit }
		}
	}' "$1"
}

gone() { ! kill -0 "$1" 2>/dev/null; }
listening_or_gone() { gone "$1" || tcp_listening "$2" "$3"; }

# record TRANSPORT QPS STATUS FIELDS...: one row of the results.
record() {
	local IFS=$'\t'
	echo "$*" >>"$RESULTS"
}

failed=0
START=$SECONDS

# run_scale TRANSPORT N: one mr_scale pair of N QPs. Prints the SCALE line
# and records it; returns 0 when both sides exited 0 and every figure was
# measured.
run_scale() {
	local tr=$1 n=$2 tag=$1.$2 pre_s=() pre_c=() sns="" cns="" sdev cdev
	local sx cx srv cli rc_s=0 rc_c=0 why="" tlim left t0 t1 va vb
	local before before_back during=0 after back=no avail lowest ca cb sa sb setup teardown
	local tx0_a tx0_b tx1_a tx1_b mbps mem i
	if [[ $tr == metaroce ]]; then
		sns=$NB cns=$NA sdev=${DEVS}_mrb cdev=${DEVS}_mra
		pre_s=(ip netns exec "$NB") pre_c=(ip netns exec "$NA")
	else
		sdev=${DEVS}_rxb cdev=${DEVS}_rxa
	fi
	sx=$(gid_index "$sdev" "$IPB") cx=$(gid_index "$cdev" "$IPA")
	left=$((BUDGET - (SECONDS - START)))
	# A whole run took about 10 ms per QP under TCG: room for ten times.
	tlim=$((120 + n / 10))
	((tlim <= left - 40)) || tlim=$((left - 40))
	if ((tlim < 60)); then
		why="no time left in the budget of ${BUDGET}s"
		echo "SCALE transport=$tr qps=$n status=fail reason=\"$why\""
		record "$tr" "$n" fail "$why" - - - - - - - - - -
		return 1
	fi
	PORT=$((PORT + 1))
	rm -f "$WORK/pause.a" "$WORK/pause.b"
	drop_caches
	before=$(kmem) before_back=$(kmem back)
	tx0_a=$(tx_packets "$cns" "$VA") tx0_b=$(tx_packets "$sns" "$VB")
	log "$tr, $n QPs: kernel memory $before KiB, MemAvailable" \
		"$(mem_available) KiB, mr_scale timeout ${tlim}s"
	t0=$SECONDS
	"${pre_s[@]}" timeout -k 5 "$((tlim + 20))" "$TOOL" -d "$sdev" \
		-g "$sx" -p "$PORT" -q "$n" -r "$ROUNDS" -s "$SIZE" -t "$tlim" \
		-P "$WORK/pause.b" >"$WORK/$tag.server" 2>&1 </dev/null &
	srv=$!
	wait_for 60 listening_or_gone "$srv" "$sns" "$PORT" ||
		kill "$srv" 2>/dev/null
	"${pre_c[@]}" timeout -k 5 "$((tlim + 20))" "$TOOL" -d "$cdev" \
		-g "$cx" -p "$PORT" -q "$n" -r "$ROUNDS" -s "$SIZE" -t "$tlim" \
		-P "$WORK/pause.a" "$IPB" >"$WORK/$tag.client" 2>&1 </dev/null &
	cli=$!
	# Until both sides have connected every QP (their pause files): watch
	# that both still run and that the guest keeps memory to spare.
	lowest=$(mem_available)
	while :; do
		[[ -e $WORK/pause.a && -e $WORK/pause.b ]] && break
		kill -0 "$srv" 2>/dev/null && kill -0 "$cli" 2>/dev/null || break
		avail=$(mem_available)
		((avail < lowest)) && lowest=$avail
		if ((avail < MEM_FLOOR_KB)); then
			why="stopped: MemAvailable fell to $avail KiB while creating and connecting"
			kill "$cli" "$srv" 2>/dev/null
			break
		fi
		sleep 0.2
	done
	if [[ -e $WORK/pause.a && -e $WORK/pause.b ]]; then
		during=$(kmem)
		log "$tr, $n QPs connected on each side after $((SECONDS - t0))s:" \
			"kernel memory $during KiB, MemAvailable $(mem_available) KiB" \
			"(lowest seen $lowest KiB)"
		rm -f "$WORK/pause.a" "$WORK/pause.b"
	fi
	wait "$cli" || rc_c=$?
	((rc_c == 0)) || wait_for 15 gone "$srv" || kill "$srv" 2>/dev/null
	wait "$srv" || rc_s=$?
	t1=$SECONDS
	tx1_a=$(tx_packets "$cns" "$VA") tx1_b=$(tx_packets "$sns" "$VB")
	va=$((tx1_a - tx0_a)) vb=$((tx1_b - tx0_b))
	# Memory back: metaroce drops its idle connection 5 s after the last QP.
	for ((i = 0; i < 30; i++)); do
		drop_caches
		after=$(kmem back)
		((after <= before_back + SLACK_KB)) && { back=yes; break; }
		sleep 1
	done
	log "$tr, $n QPs: exit status client $rc_c, server $rc_s after" \
		"$((t1 - t0))s; veth tx packets $VA $va, $VB $vb; kernel memory" \
		"$after KiB after (was $before_back KiB; the vmap_area cache left out of both)"
	grep -h "^mr_scale: " "$WORK/$tag.client" "$WORK/$tag.server" |
		sed 's/^/scale:   /'
	if [[ -z $why ]] && ((rc_c != 0 || rc_s != 0)); then
		why=$(grep -h "^mr_scale: FAIL" "$WORK/$tag.client" \
			"$WORK/$tag.server" | head -n 1)
		if [[ -z $why ]]; then
			why="exit status client $rc_c, server $rc_s (124: timed out)"
			tail -n 5 "$WORK/$tag.client" "$WORK/$tag.server" |
				sed 's/^/scale:   /'
		fi
	fi
	if [[ -z $why ]] && ((during == 0)); then
		why="no memory measured while connected"
	fi
	# rxe must have crossed the wire: each QP's WRITE and SEND go A -> B,
	# their acknowledgements B -> A.
	if [[ -z $why && $tr == rxe ]] && ((va < n * ROUNDS || vb < n)); then
		why="traffic did not cross the veth pair ($VA sent $va packets, $VB $vb)"
	fi
	ca=$(ok_field "$WORK/$tag.client" create) cb=$(ok_field "$WORK/$tag.client" connect)
	sa=$(ok_field "$WORK/$tag.server" create) sb=$(ok_field "$WORK/$tag.server" connect)
	mbps=$(ok_field "$WORK/$tag.client" rate)
	if [[ -z $why ]] && ! [[ $ca =~ ^[0-9]+$ && $cb =~ ^[0-9]+$ &&
		$sa =~ ^[0-9]+$ && $sb =~ ^[0-9]+$ && $mbps =~ ^[0-9.]+$ ]]; then
		why="mr_scale printed no timings"
	fi
	if [[ -n $why ]]; then
		echo "SCALE transport=$tr qps=$n status=fail reason=\"$why\""
		record "$tr" "$n" fail "$why" - - - - - - - - - -
		return 1
	fi
	# The slower side: the two run side by side, so it sets the pace.
	if ((ca + cb >= sa + sb)); then
		setup=$((ca + cb))
	else
		setup=$((sa + sb)) ca=$sa cb=$sb
	fi
	teardown=$(ok_field "$WORK/$tag.client" destroy)
	sa=$(ok_field "$WORK/$tag.server" destroy)
	((sa > teardown)) && teardown=$sa
	mbps=$(awk -v m="$mbps" 'BEGIN { printf "%.2f", m * 8 }')
	mem=$(((during - before) * 1024 / (2 * n)))
	echo "SCALE transport=$tr qps=$n status=ok setup_us_per_qp=$setup" \
		"create_us_per_qp=$ca connect_us_per_qp=$cb" \
		"data_mbps=$mbps teardown_us_per_qp=$teardown" \
		"mem_bytes_per_qp=$mem mem_back=$back" \
		"mem_left_kib=$((after - before_back)) veth_tx_pkts=$((va + vb))" \
		"wall_s=$((t1 - t0))"
	record "$tr" "$n" ok - "$setup" "$ca" "$cb" "$mbps" "$teardown" \
		"$mem" "$back" "$((after - before_back))" "$((va + vb))" "$((t1 - t0))"
	return 0
}

# mixed_field FILE KEY: from mr_mixed's "mr_mixed: OK" line: "ops" (per
# second), "secs" (data phase), "create", "connect", "destroy" (us/QP).
mixed_field() {
	awk -v k="$2" '/^mr_mixed: OK / {
		for (i = 1; i <= NF; i++) {
			if (k == "ops" && $i == "ops/s),") { v = $(i - 1); sub(/^\(/, "", v); print v; exit }
			if (k == "secs" && $i == "in") { print $(i + 1); exit }
			if (k != "ops" && k != "secs" && $i == k) { print $(i + 1); exit }
		}
	}' "$1"
}

# netem_both TRANSPORT LOSS: LOSS % random loss on both veth ends (none
# when 0).
netem_both() {
	local ns dev pre
	for dev in "$VA" "$VB"; do
		pre=()
		if [[ $1 == metaroce ]]; then
			ns=$NA
			[[ $dev == "$VB" ]] && ns=$NB
			pre=(ip netns exec "$ns")
		fi
		"${pre[@]}" tc qdisc del dev "$dev" root 2>/dev/null
		[[ $2 == 0 ]] || "${pre[@]}" tc qdisc replace dev "$dev" root \
			netem limit 10000 loss "$2%"
	done
	return 0
}

# run_mixed TRANSPORT N LOSS TRY: one mr_mixed pair of N QPs.
run_mixed() {
	local tr=$1 n=$2 loss=$3 try=$4 tag=mixed.$1.$2.$3.$4 pre_s=() pre_c=()
	local sns="" cns="" sdev cdev sx cx srv cli rc_s=0 rc_c=0 why="" tlim
	local before during=0 ops secs ca cb sa sb setup teardown mem left
	if [[ $tr == metaroce ]]; then
		sns=$NB cns=$NA sdev=${DEVS}_mrb cdev=${DEVS}_mra
		pre_s=(ip netns exec "$NB") pre_c=(ip netns exec "$NA")
	else
		sdev=${DEVS}_rxb cdev=${DEVS}_rxa
	fi
	sx=$(gid_index "$sdev" "$IPB") cx=$(gid_index "$cdev" "$IPA")
	left=$((BUDGET - (SECONDS - START)))
	tlim=$((120 + n / 20))
	((tlim <= left - 40)) || tlim=$((left - 40))
	if ((tlim < 60)); then
		why="no time left in the budget of ${BUDGET}s"
		echo "MIXED transport=$tr qps=$n loss=$loss status=fail reason=\"$why\""
		record_mixed "$tr" "$n" "$loss" fail "$why" - - - - - -
		return 1
	fi
	PORT=$((PORT + 1))
	netem_both "$tr" "$loss"
	rm -f "$WORK/pause.a" "$WORK/pause.b"
	drop_caches
	before=$(kmem)
	"${pre_s[@]}" timeout -k 5 "$((tlim + 20))" "$MIXED" -d "$sdev" \
		-g "$sx" -p "$PORT" -q "$n" -n "$MIXED_OPS" -S "$try" -t "$tlim" \
		-P "$WORK/pause.b" >"$WORK/$tag.server" 2>&1 </dev/null &
	srv=$!
	wait_for 60 listening_or_gone "$srv" "$sns" "$PORT" ||
		kill "$srv" 2>/dev/null
	"${pre_c[@]}" timeout -k 5 "$((tlim + 20))" "$MIXED" -d "$cdev" \
		-g "$cx" -p "$PORT" -q "$n" -n "$MIXED_OPS" -S "$try" -t "$tlim" \
		-P "$WORK/pause.a" "$IPB" >"$WORK/$tag.client" 2>&1 </dev/null &
	cli=$!
	while :; do
		[[ -e $WORK/pause.a && -e $WORK/pause.b ]] && break
		kill -0 "$srv" 2>/dev/null && kill -0 "$cli" 2>/dev/null || break
		if (($(mem_available) < MEM_FLOOR_KB)); then
			why="stopped: MemAvailable fell under $MEM_FLOOR_KB KiB while connecting"
			kill "$cli" "$srv" 2>/dev/null
			break
		fi
		sleep 0.2
	done
	if [[ -e $WORK/pause.a && -e $WORK/pause.b ]]; then
		during=$(kmem)
		rm -f "$WORK/pause.a" "$WORK/pause.b"
	fi
	wait "$cli" || rc_c=$?
	((rc_c == 0)) || wait_for 15 gone "$srv" || kill "$srv" 2>/dev/null
	wait "$srv" || rc_s=$?
	netem_both "$tr" 0
	grep -h "^mr_mixed: " "$WORK/$tag.client" "$WORK/$tag.server" |
		head -n 8 | sed 's/^/scale:   /'
	if [[ -z $why ]] && ((rc_c != 0 || rc_s != 0)); then
		why=$(grep -h "^mr_mixed: FAIL" "$WORK/$tag.client" \
			"$WORK/$tag.server" | head -n 1)
		[[ -n $why ]] || why="exit status client $rc_c, server $rc_s (124: timed out)"
	fi
	ops=$(mixed_field "$WORK/$tag.client" ops)
	secs=$(mixed_field "$WORK/$tag.client" secs)
	ca=$(mixed_field "$WORK/$tag.client" create) cb=$(mixed_field "$WORK/$tag.client" connect)
	sa=$(mixed_field "$WORK/$tag.server" create) sb=$(mixed_field "$WORK/$tag.server" connect)
	if [[ -z $why ]] && ! [[ $ops =~ ^[0-9]+$ && $ca =~ ^[0-9]+$ &&
		$cb =~ ^[0-9]+$ && $sa =~ ^[0-9]+$ && $sb =~ ^[0-9]+$ ]]; then
		why="mr_mixed printed no figures"
	fi
	[[ -n $why ]] || ((during)) || why="no memory measured while connected"
	if [[ -n $why ]]; then
		why=${why//$'\t'/ }
		echo "MIXED transport=$tr qps=$n loss=$loss status=fail reason=\"$why\""
		record_mixed "$tr" "$n" "$loss" fail "$why" - - - - - -
		return 1
	fi
	setup=$((ca + cb))
	((sa + sb > setup)) && setup=$((sa + sb))
	teardown=$(mixed_field "$WORK/$tag.client" destroy)
	sa=$(mixed_field "$WORK/$tag.server" destroy)
	((sa > teardown)) && teardown=$sa
	mem=$(((during - before) * 1024 / (2 * n)))
	echo "MIXED transport=$tr qps=$n loss=$loss status=ok ops_per_s=$ops" \
		"data_s=$secs setup_us_per_qp=$setup teardown_us_per_qp=$teardown" \
		"mem_bytes_per_qp=$mem"
	record_mixed "$tr" "$n" "$loss" ok - "$ops" "$secs" "$setup" \
		"$teardown" "$mem"
	return 0
}

record_mixed() {
	local IFS=$'\t'
	echo "$*" >>"$MRESULTS"
}

# mixed_all TRANSPORT: every count, lossless and 1 %, MIXED_REPEAT times.
mixed_all() {
	local n loss try
	for n in $MIXED_QPS; do
		for loss in 0 1; do
			for ((try = 1; try <= MIXED_REPEAT; try++)); do
				run_mixed "$1" "$n" "$loss" "$try" || failed=1
			done
		done
	done
}

: >"$RESULTS"
: >"$MRESULTS"
log "kernel $(uname -r), $(nproc) CPUs, MemTotal" \
	"$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) KiB;" \
	"$QPS QPS, $ROUNDS rounds of $SIZE B"
topo_metaroce
run_scale metaroce "$QPS" || failed=1
mixed_all metaroce
topo_rxe
rxe_ok=0
for n in $LADDER; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || continue
	if run_scale rxe "$n"; then
		rxe_ok=1
		break
	fi
	log "rxe failed at $n QPs: trying the next count of the ladder ($LADDER)"
done
((rxe_ok)) || failed=1
mixed_all rxe

# Ratios: metaroce / rxe, per QP (rxe possibly at fewer QPs).
awk -F'\t' '$3 == "ok" { for (i = 5; i <= 10; i++) v[$1, i] = $i; q[$1] = $2 }
	END {
		if (!(("metaroce", 5) in v) || !(("rxe", 5) in v))
			exit
		split("setup_us_per_qp create_us_per_qp connect_us_per_qp data_mbps teardown_us_per_qp mem_bytes_per_qp", name, " ")
		line = "RATIO"
		for (i = 5; i <= 10; i++)
			line = line " " name[i - 4] "=" \
				(v["rxe", i] > 0 ? sprintf("%.3f", v["metaroce", i] / v["rxe", i]) : "-")
		print line " metaroce_qps=" q["metaroce"] " rxe_qps=" q["rxe"]
	}' "$RESULTS"

if ((failed)); then
	echo "scale: a run failed" >&2
	[[ $DOCS == 1 ]] || { echo "scale: Documentation/ left alone" >&2; exit 1; }
fi
[[ $DOCS == 0 ]] && exit "$failed"

# The report: Documentation/bench/scale.tsv and the generated section.
tsv=$TOP/Documentation/bench/scale.tsv
rst=$TOP/Documentation/benchmarks.rst
grep -qx '.. scale-generated-begin' "$rst" && grep -qx '.. scale-generated-end' "$rst" ||
	die "no scale-generated markers in $rst"
{
	printf 'transport\tqps\tstatus\treason\tsetup_us_per_qp\tcreate_us_per_qp'
	printf '\tconnect_us_per_qp\tdata_mbps\tteardown_us_per_qp'
	printf '\tmem_bytes_per_qp\tmem_back\tmem_left_kib\tveth_tx_pkts\twall_s\n'
	cat "$RESULTS"
} >"$tsv"
section=$WORK/section.rst
awk -F'\t' -v kernel="$(uname -r)" -v want="$QPS" -v rounds="$ROUNDS" \
	-v size="$SIZE" '
	function row(a, b, c, d) { r[++nr, 1] = a; r[nr, 2] = b; r[nr, 3] = c; r[nr, 4] = d }
	function ratio(i) {
		if (ok["metaroce"] && ok["rxe"] && v["rxe", i] > 0)
			return sprintf("%.2f", v["metaroce", i] / v["rxe", i])
		return "-"
	}
	function val(t, i) { return ok[t] ? v[t, i] : "-" }
	$3 == "fail" { fails = fails sprintf("%s at %s QPs failed (%s). ", $1, $2, $4) }
	$3 == "ok" { ok[$1] = 1; for (i = 2; i <= NF; i++) v[$1, i] = $i }
	END {
		print ".. scale-generated-begin"
		print ""
		printf "Kernel %s, %s rounds of %s B per QP (make bench-scale).", kernel, rounds, size
		if (ok["rxe"] && v["rxe", 2] != want)
			printf " rxe ran at %s QPs per side, not %s: the figures per QP are compared.", v["rxe", 2], want
		if (fails != "")
			printf " %s", substr(fails, 1, length(fails) - 1)
		print ""
		print ""
		row("figure", "metaroce", "rxe", "metaroce / rxe")
		row("RC QPs per side", val("metaroce", 2), val("rxe", 2), "-")
		row("create + connect, per QP (us)", val("metaroce", 5), val("rxe", 5), ratio(5))
		row("create alone, per QP (us)", val("metaroce", 6), val("rxe", 6), ratio(6))
		row("connect alone, per QP (us)", val("metaroce", 7), val("rxe", 7), ratio(7))
		row("data phase, all QPs at once (Mbit/s)", val("metaroce", 8), val("rxe", 8), ratio(8))
		row("destroy, per QP (us)", val("metaroce", 9), val("rxe", 9), ratio(9))
		row("kernel memory per QP, all connected (B)", val("metaroce", 10), val("rxe", 10), ratio(10))
		row("kernel memory back after teardown", val("metaroce", 11), val("rxe", 11), "-")
		for (j = 1; j <= 4; j++) {
			w[j] = 0
			for (i = 1; i <= nr; i++)
				if (length(r[i, j]) > w[j])
					w[j] = length(r[i, j])
			bar = sprintf("%" w[j] "s", "")
			gsub(/ /, "=", bar)
			sep = sep (j > 1 ? "  " : "") bar
		}
		print sep
		for (i = 1; i <= nr; i++) {
			line = ""
			for (j = 1; j <= 4; j++)
				line = line (j > 1 ? "  " : "") sprintf("%-" w[j] "s", r[i, j])
			sub(/ +$/, "", line)
			print line
			if (i == 1)
				print sep
		}
		print sep
		print ""
		print "Data: ``bench/scale.tsv``."
		print ""
		print ".. scale-generated-end"
	}' "$RESULTS" >"$section"
awk -v sec="$section" '
	$0 == ".. scale-generated-begin" { while ((getline l < sec) > 0) print l; skip = 1; next }
	$0 == ".. scale-generated-end" { skip = 0; next }
	!skip' "$rst" >"$WORK/benchmarks.rst" && cat "$WORK/benchmarks.rst" >"$rst"
log "wrote $tsv and the scale section of $rst"

# The verbs mix: Documentation/bench/mixed.tsv and its section.
mtsv=$TOP/Documentation/bench/mixed.tsv
if grep -qx '.. mixed-generated-begin' "$rst" &&
	grep -qx '.. mixed-generated-end' "$rst"; then
	{
		printf 'transport\tqps\tloss_pct\tstatus\treason\tops_per_s'
		printf '\tdata_s\tsetup_us_per_qp\tteardown_us_per_qp'
		printf '\tmem_bytes_per_qp\n'
		cat "$MRESULTS"
	} >"$mtsv"
	awk -F'\t' -v kernel="$(uname -r)" -v ops="$MIXED_OPS" '
		function med(list,   a, n, i, j, t) {
			n = split(list, a, " ")
			for (i = 1; i <= n; i++)
				for (j = i + 1; j <= n; j++)
					if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
			if (!n) return "-"
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		function span(list,   a, n, i, lo, hi) {
			n = split(list, a, " ")
			if (n < 2) return ""
			lo = hi = a[1] + 0
			for (i = 2; i <= n; i++) { if (a[i] + 0 < lo) lo = a[i] + 0; if (a[i] + 0 > hi) hi = a[i] + 0 }
			return " (" lo "-" hi ")"
		}
		{ k = $2 SUBSEP $3; keys[k] = 1; tot[$1, k]++ }
		$4 == "ok" {
			okn[$1, k]++
			o[$1, k] = o[$1, k] " " $6; d[$1, k] = d[$1, k] " " $7
			su[$1, k] = su[$1, k] " " $8; td[$1, k] = td[$1, k] " " $9
			m[$1, k] = m[$1, k] " " $10
		}
		END {
			print ".. mixed-generated-begin"
			print ""
			printf "Kernel %s, %s operations per QP and side (make bench-scale).\n", kernel, ops
			print ""
			h = "QPs   loss  transport  runs ok  ops/s (median, range)   data s  setup us/QP  destroy us/QP  kernel B/QP"
			print "====  ====  =========  =======  ======================  ======  ===========  =============  ==========="
			print h
			print "====  ====  =========  =======  ======================  ======  ===========  =============  ==========="
			n = 0
			for (k in keys) sk[++n] = k
			for (i = 1; i <= n; i++)
				for (j = i + 1; j <= n; j++) {
					split(sk[i], x, SUBSEP); split(sk[j], y, SUBSEP)
					if (y[1] + 0 < x[1] + 0 || (y[1] == x[1] && y[2] + 0 < x[2] + 0)) {
						t = sk[i]; sk[i] = sk[j]; sk[j] = t
					}
				}
			for (i = 1; i <= n; i++) {
				split(sk[i], kv, SUBSEP)
				for (t = 1; t <= 2; t++) {
					tr = t == 1 ? "metaroce" : "rxe"
					if (!((tr, sk[i]) in tot)) continue
					printf "%-4s  %-4s  %-9s  %-7s  %-22s  %-6s  %-11s  %-13s  %s\n", kv[1], kv[2] "%", tr, \
						okn[tr, sk[i]] + 0 "/" tot[tr, sk[i]], med(o[tr, sk[i]]) span(o[tr, sk[i]]), \
						med(d[tr, sk[i]]), med(su[tr, sk[i]]), med(td[tr, sk[i]]), med(m[tr, sk[i]])
				}
			}
			print "====  ====  =========  =======  ======================  ======  ===========  =============  ==========="
			print ""
			print "Data: ``bench/mixed.tsv``."
			print ""
			print ".. mixed-generated-end"
		}' "$MRESULTS" >"$WORK/mixed.rst"
	awk -v sec="$WORK/mixed.rst" '
		$0 == ".. mixed-generated-begin" { while ((getline l < sec) > 0) print l; skip = 1; next }
		$0 == ".. mixed-generated-end" { skip = 0; next }
		!skip' "$rst" >"$WORK/benchmarks.rst" && cat "$WORK/benchmarks.rst" >"$rst"
	log "wrote $mtsv and the mixed section of $rst"
fi
exit "$failed"
