#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Run the libFuzzer targets for a bounded time and report TAP.
#
#   run-fuzz.sh BUILD_DIR SECONDS MODE
#
# The targets run in parallel. MODE "smoke": each starts from a scratch copy
# of the committed seed corpus (userspace/fuzz/corpus/<target>/) under
# BUILD_DIR/fuzz/smoke/<target>/, so nothing is written into the source
# tree. MODE "long": the working corpus under BUILD_DIR/fuzz/work/<target>/
# is kept between runs (seeded from the committed one) and grows. A crash,
# leak, timeout or sanitizer
# report fails the run; the reproducer is kept under
# BUILD_DIR/fuzz/artifacts/<target>/.
set -euo pipefail

build=$1
secs=$2
mode=$3
here=$(cd "$(dirname "$0")" && pwd)
targets=(wire rx)

echo "TAP version 13"
echo "1..${#targets[@]}"

pids=()
for t in "${targets[@]}"; do
	bin="$build/fuzz/fuzz_$t"
	work="$build/fuzz/work/$t"
	art="$build/fuzz/artifacts/$t"
	log="$build/fuzz/$t.log"
	if [ "$mode" = smoke ]; then
		work="$build/fuzz/smoke/$t"
		rm -rf "$work"
	fi
	mkdir -p "$work" "$art"
	cp -n "$here/corpus/$t/"* "$work/" 2>/dev/null || true
	"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-max_len=4096 -print_final_stats=1 \
		-artifact_prefix="$art/" "$work" >"$log" 2>&1 &
	pids+=($!)
done

corpus=work
if [ "$mode" = smoke ]; then
	corpus=smoke
fi
fail=0
i=0
for t in "${targets[@]}"; do
	log="$build/fuzz/$t.log"
	rc=0
	wait "${pids[$i]}" || rc=$?
	i=$((i + 1))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n 1 || true)
	units=$(find "$build/fuzz/$corpus/$t" -type f | wc -l)
	if [ "$rc" -eq 0 ] && [ -n "$execs" ] && ! grep -q '^==[0-9]*==ERROR' "$log"; then
		echo "ok $i - fuzz_$t: ${secs}s, $execs runs (${rate}/s), $cov, corpus $units, no crash"
	else
		echo "not ok $i - fuzz_$t: exit $rc after ${execs:-?} runs; log $log"
		grep -m 20 -E 'ERROR|invariant|check failed|SUMMARY|Test unit written' "$log" | sed 's/^/# /' || true
		fail=1
	fi
done
exit "$fail"
