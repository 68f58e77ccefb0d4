#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# selftests/bench/all.sh: the whole benchmark set in one boot of the test VM
# (`make bench` runs `selftests/vm/run --kernel 6.12 --timeout ... --
# selftests/bench/all.sh`). Runs, in turn, each benchmark script of this
# directory, each of which still works on its own:
#
#   run.sh         metaroce vs rxe vs TCP on one veth pair, loss sweep
#   fastpath.sh    the userspace fast path against rxe's (latency, rate,
#                  system calls per work request)
#   scale.sh       4000 RC QPs: setup time, memory, teardown per QP
#   multiplane.sh  the multiplane kselftests' figures: planes scaling,
#                  per-plane spread, plane failure, ECN congestion, incast
#
# Each rewrites its own part of Documentation/ (benchmarks.rst's generated
# sections, Documentation/bench/) when all of its runs succeeded, and leaves
# it alone otherwise; one that fails does not stop the others.
#
# Knobs (environment; each script's own MR_* knobs pass through):
#   MR_BENCH_STEPS="run fastpath scale multiplane"   the scripts, in order
#   MR_BENCH_DRY=1     print what would run and exit (works on the host)
#
# Exit status: 0 when every script succeeded, 4 (KSFT_SKIP) when every one
# skipped, 1 otherwise (a failure, or a script that skipped while others ran).

set -uo pipefail

# One compound command: bash reads it whole before running it, so editing
# this file cannot derail a run in progress.
{

readonly KSFT_SKIP=4
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
read -ra STEPS <<<"${MR_BENCH_STEPS:-run fastpath scale multiplane}"
DRY=${MR_BENCH_DRY:-0}

log() { echo "bench-all: $*"; }

((${#STEPS[@]})) || { log "MR_BENCH_STEPS is empty"; exit 1; }
for s in "${STEPS[@]}"; do
	[[ $s =~ ^[a-z0-9_]+$ && -f $HERE/$s.sh ]] ||
		{ log "no benchmark script $HERE/$s.sh"; exit 1; }
done

if [[ $DRY == 1 ]]; then
	for s in "${STEPS[@]}"; do
		log "would run: bash $HERE/$s.sh"
	done
	env | grep -E '^MR_' | sort | sed 's/^/bench-all: with /'
	exit 0
fi

declare -A RC SECS
for s in "${STEPS[@]}"; do
	log "=== $s.sh: start ($SECONDS s into the set)"
	t0=$SECONDS
	rc=0
	bash "$HERE/$s.sh" || rc=$?
	RC[$s]=$rc SECS[$s]=$((SECONDS - t0))
	log "=== $s.sh: exit $rc after ${SECS[$s]} s"
done

fails=0 skips=0
for s in "${STEPS[@]}"; do
	case ${RC[$s]} in
	0) what=ok ;;
	"$KSFT_SKIP") what=skipped; skips=$((skips + 1)) ;;
	*) what="FAILED (exit ${RC[$s]})"; fails=$((fails + 1)) ;;
	esac
	log "$s.sh: $what, ${SECS[$s]} s"
done
log "total: $SECONDS s"
((fails == 0 && skips == 0)) && exit 0
((skips == ${#STEPS[@]})) && exit "$KSFT_SKIP"
exit 1
}
