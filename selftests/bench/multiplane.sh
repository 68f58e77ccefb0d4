#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# selftests/bench/multiplane.sh: the multiplane figures of the kselftests
# as a benchmark, in one boot of the test VM (part of `make bench`, see
# all.sh). It runs, MR_BENCH_REPS times (3), each in turn:
#
#   multiplane.sh  4 planes: spread (bytes per plane of one connection),
#                  scaling (1 plane against 4, shaped), recovery (one plane
#                  blackholed for 4 s: the rate over time), congestion (one
#                  plane an ECN-marking bottleneck), rxe_planes (rxe's QP
#                  over the same planes)
#   planes8.sh     spread and scaling over 8 planes
#   incast.sh      four senders into one ECN-marking bottleneck: Jain's
#                  index, timeout retransmissions, the queue
#
# with MR_RESULTS set, so that each test hands over the figures it measured
# (mr_result in selftests/metaroce/lib.sh) rather than this script measuring
# them again; the tests assert what they always do. multiplane_report.py
# then writes the median, min and max of every figure over the runs, and
# the plots.
#
# Results: build/bench/multiplane/ (runs.tsv: one row per test program run;
# runs/: each run's results.txt and sample files; logs/: each run's TAP
# output) and, when every run passed, Documentation/bench/multiplane.tsv,
# Documentation/bench/multiplane_*.png and the section of
# Documentation/benchmarks.rst between the multiplane-generated markers
# (otherwise the same files go to build/bench/multiplane/docs/). Exit
# status: 0 when every run passed, 1 when one failed, 4 when it cannot run.
#
# Knobs (environment):
#   MR_MP_BENCH_REPS (else MR_BENCH_REPS, else 3)   runs of each program
#   MR_MP_BENCH_SUBTESTS="spread scaling recovery congestion rxe_planes"
#                                the subtests of multiplane.sh that run
#   MR_MP_BENCH_PROGS="multiplane planes8 incast"   the programs that run
#   MR_MP_BENCH_DOCS (else MR_BENCH_DOCS, else auto) auto: update
#                                Documentation/ when all runs passed; 0: never;
#                                1: always
#   MR_MP_BENCH_BUDGET=3000      seconds; no run starts after that (those
#                                left fail)

set -uo pipefail

# One compound command: bash reads it whole before running it, so editing
# this file cannot derail a run in progress.
{

readonly KSFT_SKIP=4
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
TESTS=$TOP/selftests/metaroce
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

REPS=${MR_MP_BENCH_REPS:-${MR_BENCH_REPS:-3}}
SUBTESTS=${MR_MP_BENCH_SUBTESTS:-spread scaling recovery congestion rxe_planes}
read -ra PROGS <<<"${MR_MP_BENCH_PROGS:-multiplane planes8 incast}"
DOCS=${MR_MP_BENCH_DOCS:-${MR_BENCH_DOCS:-auto}}
BUDGET=${MR_MP_BENCH_BUDGET:-3000}
OUT=$TOP/build/bench/multiplane

die() { echo "multiplane-bench: $*" >&2; exit 1; }
skip() { echo "multiplane-bench: SKIP: $*" >&2; exit "$KSFT_SKIP"; }
log() { echo "multiplane-bench: $*"; }

[[ $REPS =~ ^[1-9][0-9]*$ && $BUDGET =~ ^[1-9][0-9]*$ ]] ||
	die "MR_MP_BENCH_REPS / MR_MP_BENCH_BUDGET must be positive integers"
[[ $DOCS == auto || $DOCS == 0 || $DOCS == 1 ]] || die "MR_MP_BENCH_DOCS: auto, 0 or 1"
for p in "${PROGS[@]}"; do
	[[ -x $TESTS/$p.sh ]] || die "no test program $TESTS/$p.sh"
done
((${#PROGS[@]})) || die "nothing to run"
[[ $(id -u) == 0 ]] || skip "must run as root (make bench runs it in the VM)"
for tool in ib_write_bw iperf3 tc ip python3; do
	command -v "$tool" >/dev/null || skip "$tool is not installed (make deps)"
done
modinfo metaroce >/dev/null 2>&1 || skip "metaroce.ko is not built for $(uname -r) (make modules-vm)"

rm -rf "$OUT"
mkdir -p "$OUT/runs" "$OUT/logs"
RUNS=$OUT/runs.tsv
printf 'rep\tprog\tstatus\texit\tseconds\tpassed\tfailed\tskipped\tdir\n' >"$RUNS"

# run_prog REP PROG: one run of a test program with MR_RESULTS set; a row
# of runs.tsv. A run passes when the program exits 0 (KSFT_SKIP counts as
# a failure here: a figure it should have measured is missing).
fails=0 runs=0
run_prog() {
	local rep=$1 prog=$2 dir rel t0=$SECONDS rc=0 tap pass fail skipped status
	rel=runs/$rep-$prog
	dir=$OUT/$rel
	tap=$OUT/logs/$rep-$prog.tap
	mkdir -p "$dir"
	runs=$((runs + 1))
	if ((SECONDS > BUDGET)); then
		echo "time budget of $BUDGET s exhausted" >"$tap"
		rc=124
	elif [[ $prog == multiplane ]]; then
		(cd "$TESTS" && MR_RESULTS=$dir MR_TEST_ONLY="fabric $SUBTESTS" \
			"./$prog.sh") >"$tap" 2>&1 || rc=$?
	else
		(cd "$TESTS" && MR_RESULTS=$dir "./$prog.sh") >"$tap" 2>&1 || rc=$?
	fi
	pass=$(grep -c '^ok ' "$tap")
	skipped=$(grep -c '^ok .* # SKIP' "$tap")
	fail=$(grep -c '^not ok ' "$tap")
	status=ok
	if ((rc)); then
		status=fail
		fails=$((fails + 1))
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$prog" "$status" "$rc" \
		"$((SECONDS - t0))" "$((pass - skipped))" "$fail" "$skipped" "$rel" >>"$RUNS"
	log "[$runs/$((REPS * ${#PROGS[@]}))] $prog rep $rep: $status (exit $rc," \
		"$((SECONDS - t0)) s; $(grep -E '^not ok ' "$tap" | cut -d' ' -f4- | paste -sd' ' -))"
}

started=$(date -u '+%Y-%m-%d %H:%M UTC')
log "$(uname -r), $(nproc) CPUs; $REPS rounds of: ${PROGS[*]} (multiplane.sh: $SUBTESTS)"
for ((rep = 1; rep <= REPS; rep++)); do
	for prog in "${PROGS[@]}"; do
		run_prog "$rep" "$prog"
	done
done
log "$runs runs, $fails failed, $SECONDS s"

{
	echo "date=$started"
	echo "kernel=$(uname -r)"
	echo "cpus=$(nproc)"
	echo "mem_mib=$(awk '$1 == "MemTotal:" { printf "%d", $2 / 1024 }' /proc/meminfo)"
	# The module the tests used (it stays loaded after them).
	echo "metaroce=$(modinfo -F version metaroce 2>/dev/null)" \
		"$(cat /sys/module/metaroce/srcversion 2>/dev/null || modinfo -F srcversion metaroce 2>/dev/null)"
	echo "tree=$(git -C "$TOP" describe --always --dirty 2>/dev/null || echo unknown)"
	echo "reps=$REPS"
	echo "subtests=$SUBTESTS"
	echo "progs=${PROGS[*]}"
	echo "runtime_s=$SECONDS"
	echo "runs=$runs"
	echo "failed=$fails"
} >"$OUT/meta.env"

docs_dir=$OUT/docs
if [[ $DOCS == 1 ]] || [[ $DOCS == auto && $fails == 0 ]]; then
	docs_dir=$TOP/Documentation
fi
python3 "$HERE/multiplane_report.py" --dir "$OUT" --docs "$docs_dir" ||
	die "multiplane_report.py failed"
[[ $docs_dir == "$TOP/Documentation" ]] ||
	log "Documentation/ left as it was; report in $docs_dir"
if ((fails)); then
	log "FAIL: $fails of $runs runs failed (see $OUT/runs.tsv and $OUT/logs/)"
	exit 1
fi
log "PASS: all $runs runs passed"
exit 0
}
