#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# libmetaroce end to end, inside the test VM (prints TAP):
#
#   selftests/vm/run -- userspace/provider/tests/vm_provider.sh
#
# Creates metaroce devices with arbitrary names and an rxe device on veth
# pairs, and checks that libibverbs hands the metaroce ones (and only those)
# to libmetaroce, that ibv_devices / ibv_devinfo report them correctly, and
# that the verbs work (tests/mr_verbs_test.c).  Needs root, metaroce.ko and
# rdma_rxe, and the provider built in build/userspace/provider.

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../../.." && pwd)
build=${MR_PROVIDER_BUILD:-$top/build/userspace/provider}
verbs_test=$build/tests/mr_verbs_test

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() {	# check DESCRIPTION COMMAND...
	local desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}
diag() { sed 's/^/# /'; }
# Run a command, show its output as TAP diagnostics, return its status.
run_diag() {
	local out rc=0
	out=$("$@" 2>&1) || rc=$?
	printf '%s\n' "$out" | diag
	return "$rc"
}

cleanup() {
	local dev
	for dev in foo bar renamed0 r0; do
		rdma link delete "$dev" 2>/dev/null || true
	done
	ip link delete mrt-a0 2>/dev/null || true
	ip link delete mrt-b0 2>/dev/null || true
}
trap cleanup EXIT

# sysfs node_guid "0011:2233:4455:6677" -> ibv_devices' "0011223344556677"
guid_of() { tr -d ':' <"/sys/class/infiniband/$1/node_guid"; }
listed() { ibv_devices | awk -v d="$1" -v g="$2" '$1 == d && $2 == g { f = 1 } END { exit !f }'; }
devinfo_has() {	# DEVICE REGEX
	grep -Eq "$2" <<<"$(ibv_devinfo -v -d "$1" 2>&1)"
}

echo "1..26"

# The provider's name carries libibverbs' private ABI number (-rdmav34.so,
# -rdmav65.so, ...): whichever was built for this userland.
provider_lib=$(compgen -G "$build/libmetaroce-rdmav*.so" | head -n 1 || true)
for f in "${provider_lib:-$build/libmetaroce-rdmav<n>.so}" "$verbs_test"; do
	if [[ ! -x $f && ! -f $f ]]; then
		echo "Bail out! $f is missing: run make -C userspace first"
		exit 1
	fi
done
grep -H . /etc/libibverbs.d/metaroce.driver | diag

check "metaroce module loads" modprobe metaroce

ip link add mrt-a0 type veth peer name mrt-a1
ip link add mrt-b0 type veth peer name mrt-b1
for dev in mrt-a0 mrt-a1 mrt-b0 mrt-b1; do
	ip link set "$dev" up
done
ip addr add 192.0.2.1/24 dev mrt-a0
ip addr add 198.51.100.1/24 dev mrt-b0

check "rdma link add foo type metaroce netdev mrt-a0" \
	rdma link add foo type metaroce netdev mrt-a0
check "foo has metaroce/abi_version 1" \
	grep -qx 1 /sys/class/infiniband/foo/metaroce/abi_version

guid=$(guid_of foo)
check "ibv_devices lists foo with its node GUID $guid" listed foo "$guid"

ibv_devinfo -v -d foo 2>&1 | diag
check "ibv_devinfo -v -d foo: node_guid matches sysfs" \
	devinfo_has foo "node_guid:[[:space:]]+$(cat /sys/class/infiniband/foo/node_guid)\$"
check "ibv_devinfo -v -d foo: one port" \
	devinfo_has foo "phys_port_cnt:[[:space:]]+1\$"
check "ibv_devinfo -v -d foo: port ACTIVE" \
	devinfo_has foo "state:[[:space:]]+PORT_ACTIVE \(4\)"
check "ibv_devinfo -v -d foo: link layer Ethernet" \
	devinfo_has foo "link_layer:[[:space:]]+Ethernet"
check "ibv_devinfo -v -d foo: active MTU 1024 on a 1500-byte netdev" \
	devinfo_has foo "active_mtu:[[:space:]]+1024 \(3\)"
check "ibv_devinfo -v -d foo: GID of 192.0.2.1 as RoCE v2" \
	devinfo_has foo "GID\[ *[0-9]+\]:[[:space:]]+::ffff:192\.0\.2\.1, RoCE v2"

check "mr_verbs_test foo" run_diag "$verbs_test" foo

# An rxe device beside it stays with Debian's rxe provider.
check "rdma link add r0 type rxe netdev mrt-a1" \
	rdma link add r0 type rxe netdev mrt-a1
check "r0 is handled by rxe" run_diag "$verbs_test" --owner r0 rxe
check "foo is still handled by metaroce" \
	run_diag "$verbs_test" --owner foo metaroce
check "ibv_devinfo -d r0 works" run_diag ibv_devinfo -d r0
check "r0 has no metaroce/abi_version" \
	test ! -e /sys/class/infiniband/r0/metaroce/abi_version

# Any name, and renames, are matched through sysfs, not by name.
check "rdma link add bar type metaroce netdev mrt-b0" \
	rdma link add bar type metaroce netdev mrt-b0
check "bar is handled by metaroce" run_diag "$verbs_test" --owner bar metaroce
check "mr_verbs_test bar" run_diag "$verbs_test" bar
check "rdma dev set foo name renamed0" rdma dev set foo name renamed0
check "renamed0 is handled by metaroce" \
	run_diag "$verbs_test" --owner renamed0 metaroce
check "mr_verbs_test renamed0" run_diag "$verbs_test" renamed0

# Removal.
check "rdma link delete renamed0 bar" \
	bash -c 'rdma link delete renamed0 && rdma link delete bar'
check "ibv_devices no longer lists them" \
	bash -c '! ibv_devices | grep -Eq "^[[:space:]]+(renamed0|bar)[[:space:]]"'
check "rdma link delete r0" rdma link delete r0
check "metaroce module unloads" \
	bash -c 'rmmod metaroce && test ! -e /sys/module/metaroce'

if [[ $failed -ne 0 ]]; then
	echo "# $failed of $n tests failed"
	exit 1
fi
