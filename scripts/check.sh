#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/check.sh: everything `make check` promises, as TAP.
#   1. check-build: W=1 module builds for both pinned kernels, checkpatch,
#      sparse (scripts/check-build.sh); leaves the modules built
#   2. userspace: the core library, tools and the rdma-core provider
#      install: make install / make uninstall into a staging root
#   3. check-core: the userspace unit tests (skipped, never passed, while
#      userspace/core.mk does not exist)
#   4. the kselftests in the VM on each kernel of MR_CHECK_KERNELS
#      (default "6.12 6.1"): all of them on the first, the device's own
#      (DEVICE_PROGS) on the others
# Each step's own output is indented under its TAP line. Exits non-zero if
# any step failed.
set -euo pipefail

# One compound command: bash reads it whole before running it, so editing
# this file cannot derail a run in progress.
{

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$TOP"
read -ra kernels <<<"${MR_CHECK_KERNELS:-6.12 6.1}"

steps=("check-build" "userspace" "install" "check-core")
for k in "${kernels[@]}"; do
	steps+=("kselftests-$k")
done

n=0 pass=0 fail=0 skip=0
echo "TAP version 13"
echo "1..${#steps[@]}"

# step NAME CMD...: runs CMD with its output indented, prints the TAP line.
step() {
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
		pass=$((pass + 1))
	else
		echo "not ok $n $name # exit $rc after $((SECONDS - start))s"
		fail=$((fail + 1))
	fi
}

skip_step() { # NAME REASON
	n=$((n + 1))
	echo "ok $n $1 # SKIP $2"
	skip=$((skip + 1))
}

fail_step() { # NAME REASON
	n=$((n + 1))
	echo "not ok $n $1 # $2"
	fail=$((fail + 1))
}

step check-build scripts/check-build.sh
step userspace make --no-print-directory userspace test-tools
step install make --no-print-directory check-install
if [[ -f userspace/core.mk ]]; then
	step check-core make --no-print-directory check-core
else
	skip_step check-core "userspace/core.mk does not exist yet"
fi

# shellcheck source=kernels.env
. scripts/kernels.env
for k in "${kernels[@]}"; do
	var=MR_KVER_${k//./_}
	rel=${!var:-$k}
	if [[ ! -f build/kmod/$rel/drivers/metaroce/metaroce.ko ]]; then
		fail_step "kselftests-$k" "no metaroce.ko built for $rel"
		continue
	fi
	# The first kernel runs every program; the others the device's own
	# (the data path is the same code on each, and takes most of the time).
	progs=()
	if [[ $k != "${kernels[0]}" ]]; then
		read -ra progs <<<"$(make -s --no-print-directory -C \
			selftests/metaroce list-device-progs)"
	fi
	step "kselftests-$k" selftests/vm/run --kernel "$k" --timeout 4200 -- \
		selftests/metaroce/run_tests.sh "${progs[@]}"
done

echo "# totals: pass:$pass fail:$fail skip:$skip"
((fail == 0))
exit
}
