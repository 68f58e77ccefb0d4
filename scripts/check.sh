#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/check.sh: everything `make check` promises, as TAP.
#   1. check-build: W=1 module builds for every pinned kernel, checkpatch,
#      sparse (scripts/check-build.sh); leaves the modules built
#   2. userspace: the core library, tools and the rdma-core provider
#      install: make install / make uninstall into a staging root
#   3. check-core: the man page's and the documentation's checks, the
#      userspace unit tests, the dissector's decode test, short fuzz and
#      simulator runs
#   4. userland-SUITE for each other Debian release of kernels.env (trixie,
#      sid): the provider and tools built inside its root filesystem against
#      its rdma-core, and the provider's build-time checks against its
#      libibverbs (make check-userland-SUITE)
#   5. the kselftests in the VM on each kernel of MR_CHECK_KERNELS (default:
#      every kernel of kernels.env, "6.12 6.1 6.12-trixie 7.2"): all of them
#      on the first, the device's own (DEVICE_PROGS) on the others, and on
#      those of another release, with that release's userland, one verified
#      data transfer too (integrity.sh's lossless subtest: mr_integrity
#      through the provider built for that rdma-core)
# Each step's own output is indented under its TAP line. Exits non-zero if
# any step failed.
set -euo pipefail

# One compound command: bash reads it whole before running it, so editing
# this file cannot derail a run in progress.
{

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$TOP"
MR_TOP=$TOP
# shellcheck source=platform.sh
. scripts/platform.sh
read -ra kernels <<<"${MR_CHECK_KERNELS:-$(mr_kernel_names | tr '\n' ' ')}"
mapfile -t suites < <(mr_suites)

steps=("check-build" "userspace" "install" "check-core")
for u in "${suites[@]}"; do
	steps+=("userland-$u")
done
for k in "${kernels[@]}"; do
	steps+=("kselftests-$k")
done

n=0 pass=0 fail=0
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

fail_step() { # NAME REASON
	n=$((n + 1))
	echo "not ok $n $1 # $2"
	fail=$((fail + 1))
}

step check-build scripts/check-build.sh
step userspace make --no-print-directory userspace test-tools
step install make --no-print-directory check-install
step check-core make --no-print-directory check-core

for u in "${suites[@]}"; do
	step "userland-$u" make --no-print-directory "check-userland-$u"
done

# device_and_transfer PROG...: in the guest, the programs, then one verified
# data transfer; fails if either failed.
# shellcheck disable=SC2016 # expanded in the guest
device_and_transfer='rc=0
selftests/metaroce/run_tests.sh "$@" || rc=1
echo "# verified data transfer: integrity.sh lossless"
MR_TEST_ONLY=lossless selftests/metaroce/run_tests.sh integrity.sh || rc=1
exit $rc'

for k in "${kernels[@]}"; do
	mr_kernel "$k"
	rel=$MR_REL
	if [[ ! -f build/kmod/$rel/drivers/metaroce/metaroce.ko ]]; then
		fail_step "kselftests-$k" "no metaroce.ko built for $rel"
		continue
	fi
	# The first kernel runs every program; the others the device's own
	# (the data path is the same code on each, and takes most of the time),
	# plus, on another release's kernel and userland, one verified data
	# transfer through that release's rdma-core.
	if [[ $k == "${kernels[0]}" ]]; then
		step "kselftests-$k" selftests/vm/run --kernel "$k" --timeout 4200 -- \
			selftests/metaroce/run_tests.sh
		continue
	fi
	read -ra progs <<<"$(make -s --no-print-directory -C \
		selftests/metaroce list-device-progs)"
	if [[ -n $MR_SUITE ]]; then
		step "kselftests-$k" selftests/vm/run --kernel "$k" --timeout 4200 -- \
			bash -c "$device_and_transfer" device-and-transfer "${progs[@]}"
	else
		step "kselftests-$k" selftests/vm/run --kernel "$k" --timeout 4200 -- \
			selftests/metaroce/run_tests.sh "${progs[@]}"
	fi
done

echo "# totals: pass:$pass fail:$fail"
((fail == 0))
exit
}
