#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/check-matrix.sh: `make check-matrix`, every kselftest program on
# every kernel with every userland, as TAP, then a table of the counts.
#
#   1. the module for every kernel (W=1), the host's userspace, and the
#      provider and tools built for each other release's rdma-core (make
#      modules-all userspace userlands);
#   2. one VM run of selftests/metaroce/run_tests.sh per combination of
#      MR_MATRIX_KERNELS (default: every kernel of kernels.env) and
#      MR_MATRIX_USERLANDS (default: host and every other release there:
#      "host trixie sid"), with MR_MATRIX_PROGS (default: every program;
#      else run_tests.sh's PATTERNs) in it.
#
# A full matrix is 4 kernels x 3 userlands x the whole set (about 25
# minutes each under TCG here): hours. Each run's log is kept in
# build/check-matrix/KERNEL+USERLAND.log; the table (kernel, rdma-core,
# programs and subtests passed/failed/skipped, pyverbs' totals) goes to
# stdout and to build/check-matrix/table.txt, in the form of
# Documentation/platforms.rst's. Exits non-zero if any step failed.
set -euo pipefail

# One compound command: bash reads it whole before running it, so editing
# this file cannot derail a run in progress.
{

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$TOP"
MR_TOP=$TOP
# shellcheck source=platform.sh
. scripts/platform.sh
read -ra kernels <<<"${MR_MATRIX_KERNELS:-$(mr_kernel_names | tr '\n' ' ')}"
read -ra userlands <<<"${MR_MATRIX_USERLANDS:-host $(mr_suites | tr '\n' ' ')}"
read -ra progs <<<"${MR_MATRIX_PROGS:-}"
OUT=$TOP/build/check-matrix
mkdir -p "$OUT"

n=0 fail=0 total=$((3 + ${#kernels[@]} * ${#userlands[@]}))
echo "TAP version 13"
echo "1..$total"

step() { # NAME CMD...
	local name=$1 start=$SECONDS rc
	shift
	n=$((n + 1))
	echo "# RUN $name: $*"
	set +e
	"$@" 2>&1 | sed -u 's/^/    /'
	rc=${PIPESTATUS[0]}
	set -e
	if ((rc == 0)); then
		echo "ok $n $name # $((SECONDS - start))s"
	else
		echo "not ok $n $name # exit $rc after $((SECONDS - start))s"
		fail=$((fail + 1))
	fi
	return "$rc"
}

step modules-all make --no-print-directory modules-all W=1 || true
step userspace make --no-print-directory userspace || true
step userlands make --no-print-directory userlands || true

# rdma_core USERLAND: the rdma-core release of its libibverbs.
rdma_core() {
	local root=
	mr_userland "$1"
	[[ -z $MR_USERLAND ]] || root=$(mr_rootfs_dir "$MR_USERLAND")
	basename "$(readlink -f "$root/usr/lib/x86_64-linux-gnu/libibverbs.so.1")" |
		sed -n 's/^libibverbs\.so\.1\.[0-9]*\.\([0-9]*\.[0-9]*\)$/\1/p'
}

# counts LOG: programs and subtests passed/failed/skipped, pyverbs' totals.
counts() {
	local progs_line subtests pyverbs
	progs_line=$(sed -n 's/^# totals: pass:\([0-9]*\) fail:\([0-9]*\) skip:\([0-9]*\)$/\1 \2 \3/p' "$1" | tail -n 1)
	subtests=$(awk '/^    # pass:[0-9]+ fail:[0-9]+ skip:[0-9]+$/ {
			split($2, p, ":"); split($3, f, ":"); split($4, s, ":")
			P += p[2]; F += f[2]; S += s[2] }
		END { printf "%d/%d/%d", P, F, S }' "$1")
	pyverbs=$(sed -n 's/^ *# pyverbs on metaroce: pass:\([0-9]*\) .* total:\([0-9]*\)$/\1 of \2/p' "$1" | tail -n 1)
	# shellcheck disable=SC2086 # three words
	set -- ${progs_line:-- - -}
	printf '%s/%s/%s\t%s\t%s' "$1" "$2" "$3" "$subtests" "${pyverbs:--}"
}

table=$OUT/table.txt
printf '%s\t%s\t%s\t%s\t%s\t%s\n' kernel userland rdma-core \
	"programs pass/fail/skip" "subtests pass/fail/skip" pyverbs >"$table"
for k in "${kernels[@]}"; do
	mr_kernel "$k"
	rel=$MR_REL
	for u in "${userlands[@]}"; do
		log=$OUT/$k+$u.log
		if [[ ! -f build/kmod/$rel/drivers/metaroce/metaroce.ko ]]; then
			n=$((n + 1)) fail=$((fail + 1))
			echo "not ok $n kselftests-$k+$u # no metaroce.ko built for $rel"
			continue
		fi
		step "kselftests-$k+$u" bash -c '
			selftests/vm/run --kernel "$1" --userland "$2" --timeout 7200 -- \
				selftests/metaroce/run_tests.sh "${@:4}" 2>&1 | tee "$3"
			exit "${PIPESTATUS[0]}"' matrix "$k" "$u" "$log" "${progs[@]}" ||
			true
		printf '%s\t%s\t%s\t%s\n' "$k ($rel)" "$u" "$(rdma_core "$u")" \
			"$(counts "$log")" >>"$table"
	done
done

echo "# the matrix (build/check-matrix/table.txt):"
column -t -s $'\t' "$table" | sed 's/^/# /'
echo "# totals: $((n - fail)) of $n steps passed"
((fail == 0))
exit
}
