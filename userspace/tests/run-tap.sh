#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Run TAP test programs and check what they print, not only how they exit:
# a program passes when it exits 0, prints a plan, runs exactly the planned
# number of tests and none of them is "not ok" (a "not ok ... # TODO" is a
# known, documented defect: reported, not a pass, not a failure).
#
#   run-tap.sh PROGRAM...
set -euo pipefail

total=0
failed=0
todo=0
bad=()
for t in "$@"; do
	name=$(basename "$t")
	echo "# $name"
	out=$(mktemp)
	start=$(date +%s%N)
	rc=0
	"$t" >"$out" 2>&1 || rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	cat "$out"
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$out" | tail -n 1)
	ran=$(grep -cE '^(not )?ok [0-9]+' "$out" || true)
	nok=$(grep -E '^not ok [0-9]+' "$out" | grep -vc '# TODO' || true)
	ntodo=$(grep -cE '^(not )?ok [0-9]+.*# TODO' "$out" || true)
	rm -f "$out"
	total=$((total + ran))
	todo=$((todo + ntodo))
	if [ "$rc" -ne 0 ] || [ -z "$plan" ] || [ "$plan" -ne "$ran" ] ||
	   [ "$nok" -ne 0 ]; then
		failed=$((failed + 1))
		bad+=("$name (exit $rc, plan ${plan:-none}, ran $ran, failed $nok)")
	fi
	printf '# %s: %d tests in %d.%03ds\n' "$name" "$ran" $((ms / 1000)) $((ms % 1000))
done
echo "# $# programs, $total tests, $todo TODO, ${#bad[@]} programs failed"
for b in "${bad[@]}"; do
	echo "# FAILED: $b"
done
[ "$failed" -eq 0 ]
