#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/check-build.sh [--checkpatch-only]
#
# Static checks of the kernel module:
#   - W=1 builds against the headers of every kernel of kernels.env (those
#     of another Debian release inside its root filesystem, with its
#     compiler); any compiler warning fails (the build leaves the modules in
#     build/kmod/<release>/);
#   - checkpatch.pl --no-tree -f (taken from linux-source-6.12 into
#     build/tools/) on drivers/metaroce/**/*.[ch] and include/**/*.h; any
#     ERROR or WARNING fails;
#   - sparse (C=2) against 6.12; any sparse warning in our files fails;
#   - static assertions bite: with a limit of limits.h raised past what
#     the code that depends on it can hold, the file must fail to compile
#     on that assertion (a copy of the sources, built against 6.12);
#   - the driver's files call each other one way only (check-layers.py:
#     no call loop but through the engine's callbacks), and a loop made on
#     purpose is caught;
#   - the transport engine's files (drivers/metaroce/core) call each other
#     one way only too (check-layers.py on that directory).
# Prints TAP; exits non-zero if any check failed.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$TOP"
MR_TOP=$TOP
# shellcheck source=platform.sh
. scripts/platform.sh
mapfile -t kernels < <(mr_kernel_names)
TOOLS=$TOP/build/tools
LOGS=$TOP/build/check-build
mkdir -p "$TOOLS" "$LOGS"

only_checkpatch=0
[[ ${1:-} == --checkpatch-only ]] && only_checkpatch=1

n=0 fail=0
result() { # RC NAME
	n=$((n + 1))
	if (($1 == 0)); then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
		fail=$((fail + 1))
	fi
}

# checkpatch.pl with the data files it reads from its own directory.
get_checkpatch() {
	local tarball files=() f
	for f in checkpatch.pl spelling.txt const_structs.checkpatch; do
		[[ -f $TOOLS/$f ]] || files+=("linux-source-6.12/scripts/$f")
	done
	((${#files[@]})) || return 0
	tarball=$(compgen -G '/usr/src/linux-source-6.12.tar.*' | head -n 1 || true)
	[[ -n $tarball ]] || {
		echo "# no /usr/src/linux-source-6.12.tar.*: run make deps" >&2
		return 1
	}
	tar -xf "$tarball" -C "$TOOLS" --strip-components=2 "${files[@]}"
	chmod +x "$TOOLS/checkpatch.pl"
}

checkpatch() {
	local files out cp
	get_checkpatch || return 1
	mapfile -t files < <(find drivers/metaroce -name '*.[ch]' ! -path '*/compat.h'
		find include -name '*.h')
	((${#files[@]})) || { echo "# no kernel sources to check"; return 1; }
	cp=("$TOOLS/checkpatch.pl" --no-tree --no-summary --show-types --terse)
	out=$("${cp[@]}" -f "${files[@]}" 2>&1) || true
	# compat.h is the one place that tests kernel versions; checkpatch
	# reads "LINUX_VERSION_CODE < KERNEL_VERSION(...)" as a misplaced
	# constant besides. Only those two types are waived, only there.
	if [[ -f drivers/metaroce/compat.h ]]; then
		out+=$'\n'$("${cp[@]}" --ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON \
			-f drivers/metaroce/compat.h 2>&1) || true
	fi
	# checkpatch exits 0 on warnings: look at what it said.
	if grep -qE ': (ERROR|WARNING|CHECK):' <<<"$out"; then
		grep -v '^$' <<<"$out" | sed 's/^/# /'
		return 1
	fi
	echo "# checkpatch: ${#files[@]} files clean"
}

# build NAME LOG: W=1 module build for kernel NAME; fails on any warning.
build() {
	local name=$1 log=$2 rc=0
	scripts/build-module.sh --kernel "$name" 1 >"$log.out" 2>"$log" || rc=$?
	if ((rc)) || grep -qE 'warning:|error:' "$log"; then
		sed 's/^/# /' "$log"
		return 1
	fi
}

# Sparse reports on kernel headers are not ours: keep lines about files of
# this repository (absolute paths: the module is built out of tree).
sparse() {
	local log=$LOGS/sparse-6.12.log ours
	command -v sparse >/dev/null || { echo "# sparse not installed: make deps"; return 1; }
	# C=2 checks every file, even those already compiled. Not silent,
	# even under `make -s` (its CHECK lines prove that sparse ran).
	env -u MAKEFLAGS -u MFLAGS KBUILD_CHECKSRC=2 CHECK=sparse \
		scripts/build-module.sh "/usr/src/linux-headers-$MR_KVER_6_12" 1 \
		>"$log.out" 2>"$log" || { sed 's/^/# /' "$log"; return 1; }
	ours=$(grep -E '^/[^:]+:[0-9]+:[0-9]+: (warning|error):' "$log" |
		grep -v '^/usr/src/' || true)
	[[ -z $ours ]] || { sed 's/^/# /' <<<"$ours"; return 1; }
	# Prove sparse really ran (a silent no-op would pass everything).
	grep -qE '^ +CHECK ' "$log" || { echo "# sparse did not run (no CHECK lines)"; return 1; }
}

# assertion_bites OBJ SED REGEX: in a copy of the module's sources with
# SED applied to drivers/metaroce/limits.h, OBJ (e.g. drivers/metaroce/ud.o)
# must fail to build with an error matching REGEX.
assertion_bites() {
	local obj=$1 expr=$2 re=$3 tree=$LOGS/assert-tree log=$LOGS/assert.log
	rm -rf "$tree"
	mkdir -p "$tree"
	cp -r Kbuild drivers include "$tree/"
	sed -i "$expr" "$tree/drivers/metaroce/limits.h"
	if cmp -s drivers/metaroce/limits.h "$tree/drivers/metaroce/limits.h"; then
		echo "# '$expr' changed nothing in limits.h"
		return 1
	fi
	if make -C "/usr/src/linux-headers-$MR_KVER_6_12" M="$tree" "$obj" \
		>"$log" 2>&1; then
		echo "# $obj compiled with '$expr': no assertion guards it"
		return 1
	fi
	grep -qE "$re" "$log" || { sed 's/^/# /' "$log" | tail -n 20; return 1; }
	echo "# $obj refused '$expr': $(grep -m 1 -oE 'static assertion failed: .*' "$log")"
	rm -rf "$tree"
}

static_assertions() {
	# mr_qp_ud_recv() copies an SRQ's WQE into a stack array of
	# METAROCE_MAX_SGE SGEs.
	assertion_bites drivers/metaroce/ud.o \
		's/^\(#define METAROCE_MAX_SRQ_SGE[[:space:]]*\)16$/\117/' \
		'static assertion failed: .*METAROCE_MAX_SRQ_SGE'
}

echo "TAP version 13"
if ((only_checkpatch)); then
	echo "1..1"
	rc=0; checkpatch || rc=$?; result "$rc" checkpatch
	((fail == 0))
	exit
fi

echo "1..$((${#kernels[@]} + 5))"
for k in "${kernels[@]}"; do
	mr_kernel "$k"
	rc=0; build "$k" "$LOGS/w1-$k.log" || rc=$?
	result "$rc" "W=1 build against $MR_REL${MR_SUITE:+ (in a $MR_SUITE root filesystem)}"
done
rc=0; checkpatch || rc=$?; result "$rc" checkpatch
rc=0; sparse || rc=$?; result "$rc" "sparse against $MR_KVER_6_12"
rc=0; static_assertions || rc=$?; result "$rc" "static assertions bite"
rc=0; python3 scripts/check-layers.py --self-test || rc=$?
result "$rc" "no call loop between the driver's files"
rc=0; python3 scripts/check-layers.py --self-test drivers/metaroce/core || rc=$?
result "$rc" "no call loop between the engine's files"
echo "# check-build: $((n - fail))/$n passed"
((fail == 0))
