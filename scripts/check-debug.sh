#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/check-debug.sh [PROG...]: make check-debug. Builds what is
# missing of the debug kernel (scripts/debug-kernel.sh: KASAN, UBSAN,
# lockdep, DEBUG_OBJECTS, kmemleak...; with KCSAN=1 its KCSAN flavour) and
# metaroce.ko for it, then runs every kselftest (or the PROGs named), each
# in a boot of its own, so that one program's report is not charged to the
# next and a long run can share the machine between boots. A program fails
# on its own failure, on any report of the kernel's checkers in its boot
# (run_tests.sh and selftests/vm/run look for them in the kernel log), and
# on any leak kmemleak suspects after it (run_tests.sh scans after each
# program). Prints TAP, one line per program, and the reports found, with
# each boot's whole output in build/debug-kernel/results/FLAVOUR/PROG.log.
#
# Knobs: KCSAN=1 (the KCSAN flavour); MR_DEBUG_SCALE (default 4) multiplies
# each program's time limit (the checkers and TCG make the guest several
# times slower); MR_VM_LOCK=FILE takes flock FILE around each boot (on a
# machine whose VM runs are serialised by such a lock).
set -euo pipefail

# One compound command: bash reads it whole before running it, so editing
# this file cannot derail a run in progress.
{

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$TOP"
flavour=debug
[[ ${KCSAN:-0} == 0 || -z ${KCSAN:-} ]] || flavour=debug-kcsan
scale=${MR_DEBUG_SCALE:-4}
[[ $scale =~ ^[1-9][0-9]*$ ]] || { echo "check-debug: bad MR_DEBUG_SCALE '$scale'" >&2; exit 2; }

rel=$(scripts/debug-kernel.sh "$flavour")
echo "# debug kernel $rel ($flavour), time limits x$scale"

if (($#)); then
	progs=("$@")
else
	read -ra progs <<<"$(make -s --no-print-directory -C selftests/metaroce list-progs)"
fi

results=$TOP/build/debug-kernel/results/$flavour
mkdir -p "$results"

# The program's own limit, as run_tests.sh reads it (unscaled).
prog_limit() {
	env -u MR_TEST_TIMEOUT MR_TEST_TIMEOUT_SCALE=1 \
		selftests/metaroce/run_tests.sh --timeout "$1"
}

# What the checkers print first in a report (the lines of the summary).
reports='BUG:|WARNING:|UBSAN:|ODEBUG:|KCSAN:|unreferenced object|suspected memory leak'
reports+='|possible circular locking|inconsistent lock state|suspicious RCU usage'
reports+='|general protection fault|Kernel panic|INFO: task .* blocked|refcount_t:'

lock=()
[[ -z ${MR_VM_LOCK:-} ]] || lock=(flock "$MR_VM_LOCK")

export MR_TEST_TIMEOUT_SCALE=$scale
echo "TAP version 13"
echo "1..${#progs[@]}"
n=0 fail=0
for p in "${progs[@]}"; do
	n=$((n + 1))
	[[ $p == *.sh ]] || p=$p.sh
	log=$results/${p%.sh}.log
	limit=$(($(prog_limit "$p") * scale + 900))
	start=$SECONDS
	echo "# RUN ${p%.sh} (boot limit ${limit}s, log $log)"
	set +e
	"${lock[@]}" selftests/vm/run --kernel "$flavour" --mem 3G \
		--timeout "$limit" -- selftests/metaroce/run_tests.sh "$p" >"$log" 2>&1
	rc=$?
	set -e
	# The time includes the wait for the lock and the boot; the program's
	# own is on run_tests.sh's line.
	took=$((SECONDS - start))
	ran=$(sed -nE 's/^(not )?ok 1 [^ ]+ # (.* )?([0-9]+)s$/\3/p' "$log" | tail -n 1)
	took+="s${ran:+, the program ${ran}s}"
	if ((rc == 0)); then
		echo "ok $n ${p%.sh} # ${took}"
	else
		echo "not ok $n ${p%.sh} # exit $rc after ${took}"
		fail=$((fail + 1))
	fi
	# The reports of this boot, once each (the runner prints the guest's
	# log when it found one; run_tests.sh prints what kmemleak suspects).
	grep -E "$reports" "$log" | sed -E 's/^(vm: {3}|#   |    )//; s/^\[ *[0-9.]+\] //' |
		awk '!seen[$0]++' | head -n 20 | sed 's/^/#   /' || true
done
echo "# totals: pass:$((n - fail)) fail:$fail"
((fail == 0))
exit
}
