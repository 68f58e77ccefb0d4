#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 1500
#
# rdma-core's pyverbs test suite (Debian's python3-pyverbs ships it in
# /usr/share/doc/rdma-core/tests) against one metaroce device.
#
# The suite runs both ends of every test on one device: a QP talks to
# another QP of the same device through the device's own GID, and the
# rdma_cm tests connect to the netdev's own address. The device sits on one
# end of a veth pair in the initial namespace (where rxe, run the same way
# for comparison, must be), and the suite is given its IPv4 GID.
#
# The first subtest sets that up and runs the suite, one test at a time
# with a time limit (pyverbs_run.py). Then one subtest per test module of
# the suite: it fails when one of its tests failed, erred, hung or was not
# run, unless pyverbs-expected.txt lists the test as a failure the device
# is allowed (a feature it does not offer, with the reason); it is a skip
# when all of its tests skipped. Skips are counted apart from passes, and
# the totals are printed as a TAP diagnostic.
#
# The tests of vendor modules (test_mlx5_*, test_efa*: about 100 tests that
# open the device with that vendor's direct verbs and skip on anything else)
# are left out, which halves the run time under QEMU.
#
# Knobs:
#   MR_PYVERBS_SUITE    the suite (default /usr/share/doc/rdma-core/tests;
#                       run from a temporary copy with *.py.gz unpacked)
#   MR_PYVERBS_MATCH    only the tests whose id matches this regex
#   MR_PYVERBS_EXCLUDE  leave out the tests whose id matches this regex
#                       (default: the vendor modules, see above)
#   MR_PYVERBS_TIMEOUT  seconds per test (default 90)
#   MR_PYVERBS_BUDGET   seconds for the whole suite, 0 = no limit (default
#                       900); tests not started within it fail as "notrun"
#   MR_PYVERBS_OUT      keep results.txt and log.txt in this directory
#   MR_TEST_LINK_TYPE=rxe MR_TEST_MODULE=rdma_rxe: run against rxe instead
#                       (the allow-list then does not apply)
#   MR_PYVERBS_RXE=0    leave out the comparison with rxe (below)
#
# For comparison, the last subtest runs the same suite, set up the same
# way, against rxe in the same boot and prints rxe's totals beside the
# device's. rxe's own failures are reported, not judged: the subtest fails
# only when the run could not be made (no rdma_rxe, no test ran, a test
# process stuck in the kernel).
. "$(dirname "$0")/lib.sh"
mr_require_module

PY=/usr/bin/python3
HERE=$MR_TOP/selftests/metaroce
SUITE=${MR_PYVERBS_SUITE:-/usr/share/doc/rdma-core/tests}
EXCLUDE=${MR_PYVERBS_EXCLUDE-'^tests\.test_(mlx5|efa)'}
EXPECTED=
[[ $MR_TYPE == metaroce ]] && EXPECTED=$HERE/pyverbs-expected.txt
DEV=pyv_$MR_TYPE
ADDR=198.18.7.1 PEER_ADDR=198.18.7.2 # RFC 2544 benchmarking range

[[ -x $PY ]] || mr_skip_all "no $PY"
"$PY" -c 'import pyverbs.device' 2>/dev/null ||
	mr_skip_all "pyverbs is not installed (Debian: python3-pyverbs)"
[[ -f $SUITE/run_tests.py && -f $SUITE/__init__.py ]] ||
	mr_skip_all "no pyverbs test suite in $SUITE"

WORK=$(mktemp -d /tmp/mr-pyverbs.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
OUT=${MR_PYVERBS_OUT:-$WORK}
mkdir -p "$OUT"
RESULTS=$OUT/results.txt LOG=$OUT/log.txt
rm -f "$RESULTS" "$LOG"

# The suite's copy: unpacked, in a scratch directory.
prepare_suite() {
	cp -r "$SUITE" "$WORK/tests"
	find "$WORK/tests" -name '*.py.gz' -exec gunzip -f {} +
	rm -rf "$WORK/tests/__pycache__"
}

# A few 2 MiB huge pages for the tests that want them (they skip without).
HUGE=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
huge_pages() {
	local n
	[[ -w $HUGE ]] || return 0
	n=$(<"$HUGE")
	((n >= 8)) && return 0
	mr_defer huge_pages_set "$n"
	huge_pages_set 8
}
huge_pages_set() { echo "$1" >"$HUGE" || true; }

run_suite() {
	local gid rc=0 t0=$SECONDS
	prepare_suite
	mr_netns pyvpeer
	mr_veth pyv0 pyv1 "" pyvpeer
	ip addr add "$ADDR/24" dev pyv0
	ip -n pyvpeer addr add "$PEER_ADDR/24" dev pyv1
	mr_link_add "$DEV" pyv0
	assert_wait "$DEV port ACTIVE" 10 mr_port_active "$DEV"
	assert_wait "$DEV has the GID of $ADDR" 10 mr_gid_index "$DEV" "$ADDR"
	gid=$(mr_gid_index "$DEV" "$ADDR")
	assert_ok "ibv_devices lists $DEV" mr_ibv_has "$DEV"
	huge_pages
	mr_log "device $DEV ($MR_TYPE) on pyv0 $ADDR, GID index $gid, $(uname -r)"

	(cd "$WORK/tests" && "$PY" "$HERE/pyverbs_run.py" --tests . \
		--results "$RESULTS" --timeout "${MR_PYVERBS_TIMEOUT:-90}" \
		--budget "${MR_PYVERBS_BUDGET:-900}" \
		--match "${MR_PYVERBS_MATCH:-}" --exclude "$EXCLUDE" \
		--expected "$EXPECTED" -- --dev "$DEV" --gid "$gid") \
		>"$LOG" 2>&1 || rc=$?
	((rc == 0)) || { tail -n 30 "$LOG"; mr_fail "pyverbs_run.py exited with $rc"; }
	[[ -s $RESULTS ]] || mr_fail "no test ran"
	grep -E '^(loaded|ran) [0-9]+ tests|^note: ' "$LOG" || true
	mr_log "suite and set-up took $((SECONDS - t0))s"
	if grep -q 'unkillable' "$RESULTS"; then
		mr_fail "a test process could not be killed (stuck in the kernel)"
	fi
}

# traceback_of TEST-ID: the traceback pyverbs_run.py logged for the test.
traceback_of() {
	awk -v id="$1" '/^\[[0-9]+\/[0-9]+\] / { on = ($3 == id); next }
		/^(ran|note:) / { on = 0 } on' "$LOG"
}

# check_module MOD: the verdict on one test module of the suite.
check_module() {
	local status id secs msg bad=0 pass=0 n=0
	while IFS=$'\t' read -r status id secs msg; do
		n=$((n + 1))
		case $status in
		pass) pass=$((pass + 1)); mr_log "ok ${id#tests.} (${secs}s)" ;;
		skip) mr_log "skip ${id#tests.}: $msg" ;;
		allowed) mr_log "allowed failure ${id#tests.}: $msg" ;;
		fail | error)
			mr_log "$status ${id#tests.} (${secs}s): $msg"
			traceback_of "$id" | sed 's/^/    /'
			bad=$((bad + 1))
			;;
		*) mr_log "$status ${id#tests.}: $msg"; bad=$((bad + 1)) ;;
		esac
	done < <(awk -F'\t' -v p="tests.$1." 'index($2, p) == 1' "$RESULTS")
	((n > 0)) || mr_skip "no test selected"
	((bad == 0)) || mr_fail "$bad of $n tests failed"
	((pass > 0)) || mr_skip "all $n tests skipped"
}

# summary: the totals by status.
summary() {
	awk -F'\t' -v type="$MR_TYPE" '{ n[$1]++ } END {
		printf "pyverbs on %s: pass:%d fail:%d error:%d timeout:%d", type,
			n["pass"], n["fail"], n["error"], n["timeout"]
		printf " notrun:%d skip:%d allowed:%d total:%d\n", n["notrun"],
			n["skip"], n["allowed"], NR }' "$RESULTS"
}

# rxe_comparison: the suite against rxe, by a second run of this program.
rxe_comparison() {
	local out=$WORK/rxe line rc=0
	modinfo rdma_rxe >/dev/null 2>&1 || mr_fail "no rdma_rxe module"
	mkdir -p "$out"
	MR_TEST_LINK_TYPE=rxe MR_TEST_MODULE=rdma_rxe MR_TEST_ONLY=run_suite_rxe \
		MR_PYVERBS_OUT=$out MR_PYVERBS_RXE=0 \
		bash "$HERE/pyverbs.sh" >"$out/tap.txt" 2>&1 || rc=$?
	line=$(grep -m1 '^# pyverbs on rxe: ' "$out/tap.txt" || true)
	if [[ -z $line ]]; then
		tail -n 30 "$out/tap.txt"
		mr_fail "the run against rxe gave no totals (exit $rc)"
	fi
	grep -q '^ok 1 run_suite_rxe' "$out/tap.txt" || {
		tail -n 30 "$out/tap.txt"
		mr_fail "the run against rxe did not complete (exit $rc)"
	}
	# rxe's failures, by test, for the reader; they do not fail this test
	awk -F'\t' '$1 != "pass" && $1 != "skip" { print "rxe", $1, $2 }' \
		"$out/results.txt"
	# the tests that pass on one and not on the other, with the reason
	awk -F'\t' 'NR == FNR { mr[$2] = $1; why[$2] = $4; next }
		($2 in mr) && ($1 == "pass") != (mr[$2] == "pass") {
			printf "rxe %s, metaroce %s: %s (%s)\n", $1, mr[$2], $2,
				mr[$2] == "pass" ? $4 : why[$2] }' \
		"$RESULTS" "$out/results.txt"
	echo "${line#\# }"
	echo "${RXE_CMP_MR:-}"
}

mr_run "run_suite_$MR_TYPE" run_suite
if [[ -s $RESULTS ]]; then
	for mod in $(cut -f2 "$RESULTS" | cut -d. -f2 | uniq); do
		mr_run "$mod" check_module "$mod"
	done
	echo "# $(summary)"
	if [[ $MR_TYPE == metaroce && ${MR_PYVERBS_RXE:-1} != 0 ]]; then
		RXE_CMP_MR=$(summary)
		mr_run rxe_comparison rxe_comparison
	fi
fi
mr_done
