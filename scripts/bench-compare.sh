#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/bench-compare.sh REV [ROUNDS]: make bench-compare. Builds
# metaroce.ko as it was at commit REV (git archive into build/, its own
# build scripts, against the 6.12 test kernel), then boots the test VM once
# and runs selftests/bench/compare.sh: today's module against REV's, side
# by side, with rxe and TCP as the control of the guest's speed.
# MR_VM_LOCK=FILE: flock FILE around the boot (as make check-debug).
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rev=${1:?usage: bench-compare.sh REV [ROUNDS] (make bench-compare OLD=REV)}
rounds=${2:-3}
src=$TOP/build/bench-compare-src
sha=$(git -C "$TOP" rev-parse --verify "$rev^{commit}")

rm -rf "$src"
mkdir -p "$src"
git -C "$TOP" archive "$sha" | tar -x -C "$src"
# The kernels and root filesystems this tree already has.
mkdir -p "$src/build"
ln -s "$TOP/build/vm" "$src/build/vm"
[[ ! -d $TOP/build/rootfs ]] || ln -s "$TOP/build/rootfs" "$src/build/rootfs"
# Today's build scripts (older ones may not know the kernel names) on REV's
# sources.
cp "$TOP"/scripts/{build-module.sh,module-sources.sh,platform.sh,kernels.env} \
	"$src/scripts/"
ko=$("$src/scripts/build-module.sh" --kernel 6.12 | tail -n 1)
mkdir -p "$TOP/build/bench-compare"
cp "$ko" "$TOP/build/bench-compare-old.ko"
echo "bench-compare: old module from ${sha:0:12}, built at $ko"
lock=()
[[ -z ${MR_VM_LOCK:-} ]] || lock=(flock "$MR_VM_LOCK")
exec "${lock[@]}" "$TOP/selftests/vm/run" --kernel 6.12 --mem 4G --timeout 5400 -- \
	"$TOP/selftests/bench/compare.sh" "$TOP/build/bench-compare-old.ko" "$rounds"
