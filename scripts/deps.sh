#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/deps.sh [--if-missing] [--host] [--debug]
#
# Installs every Debian package MetaRoCE needs to build, test, benchmark and
# package itself, then fetches and unpacks the pinned kernels the VM tests
# boot (selftests/vm/prepare-kernel.sh), and builds the root filesystems of
# the other Debian releases of scripts/kernels.env (scripts/rootfs.sh: their
# compilers, kernel headers and rdma-core, under build/rootfs/; nothing of
# theirs is installed on the host). Idempotent and non-interactive. With
# --if-missing it only checks (cheaply) and does nothing when everything is
# present. --host leaves out the other releases (their kernels and root
# filesystems): what the host's own kernels and userland need. --debug adds
# what building the debug kernel of make check-debug from linux-source-6.12
# takes (scripts/debug-kernel.sh); make check does not need it.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MR_TOP=$TOP
# shellcheck source=platform.sh
. "$TOP/scripts/platform.sh"

if_missing=0 host_only=0 debug=0
for a; do
	case $a in
	--if-missing) if_missing=1 ;;
	--host) host_only=1 ;;
	--debug) debug=1 ;;
	*) echo "usage: $0 [--if-missing] [--host] [--debug]" >&2; exit 2 ;;
	esac
done

# The kernels to prepare (NAMEs of kernels.env) and the releases whose
# root filesystems they need.
kernels=() suites=()
for k in $(mr_kernel_names); do
	mr_kernel "$k"
	((host_only)) && [[ -n $MR_SUITE ]] && continue
	kernels+=("$k")
done
((host_only)) || mapfile -t suites < <(mr_suites)

pkgs=(
	# build: module for both pinned kernels, userspace, checks
	gcc make clang llvm libclang-rt-14-dev sparse linux-source-6.12
	dkms kmod xz-utils shellcheck
	linux-headers-"$MR_KVER_6_12" linux-headers-"$MR_KVER_6_1"
	# other Debian releases: root filesystems, kernels (dpkg-deb, depmod)
	mmdebstrap
	# rdma-core: libraries, provider build, tools, pyverbs
	rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest
	libibverbs-dev librdmacm-dev python3 python3-pyverbs
	# the documentation checks (scripts/check-docs.sh)
	python3-docutils
	# the Debian packages (make deb, debian/) and their test (make check-deb)
	build-essential dpkg-dev debhelper dh-dkms lintian
	# the VM and the tools the tests run in it (the guest uses the host's /usr)
	qemu-system-x86 busybox-static cpio gzip util-linux procps
	iproute2 iputils-ping iperf3 ethtool nvme-cli strace
	# make bench-profile: perf in the guest
	linux-perf
	# collectives: Open MPI over UCX (mpicc builds mr_coll)
	openmpi-bin libopenmpi-dev ucx-utils libucx0
	# benchmark plots
	gnuplot-nox
	# the Wireshark dissector's decode tests (tools/wireshark/)
	tshark
)

# The debug kernel (scripts/debug-kernel.sh): its source is
# linux-source-6.12, above (checkpatch comes from it too); building it takes
# these.
((debug == 0)) || pkgs+=(flex bison bc libelf-dev libssl-dev)

installed() { # PKG: true when dpkg has it fully installed
	[[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null) == ii* ]]
}

missing=()
for p in "${pkgs[@]}"; do
	installed "$p" || missing+=("$p")
done
kernels_ready() {
	local k
	for k in "${kernels[@]}"; do
		mr_kernel "$k"
		[[ -f $TOP/build/vm/$MR_REL/.prepared ]] || return 1
	done
}
rootfs_ready() {
	((${#suites[@]} == 0)) || "$TOP/scripts/rootfs.sh" --check "${suites[@]}"
}

if ((if_missing)) && ((${#missing[@]} == 0)) && kernels_ready && rootfs_ready; then
	exit 0
fi

if ((${#missing[@]})); then
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# wireshark-common (pulled in by tshark) asks whether non-root users
	# may capture; answer no, without asking.
	echo 'wireshark-common wireshark-common/install-setuid boolean false' |
		debconf-set-selections
	apt_install() {
		apt-get install -y -q --no-install-recommends \
			-o Dpkg::Options::=--force-confdef \
			-o Dpkg::Options::=--force-confold "${missing[@]}"
	}
	# Refresh the package lists only when they are absent or the install
	# cannot find something in them.
	if ! compgen -G '/var/lib/apt/lists/*_Packages' >/dev/null; then
		apt-get update -q
	fi
	if ! apt_install; then
		apt-get update -q
		if ! apt_install; then
			for k in "$MR_KVER_6_12" "$MR_KVER_6_1"; do
				if ! apt-cache show "linux-headers-$k" >/dev/null 2>&1; then
					var=$(grep -E "^MR_KVER_[0-9_]+=${k//+/\\+}\$" \
						"$TOP/scripts/kernels.env" | cut -d= -f1)
					echo "deps: linux-headers-$k is no longer in the apt archive;" \
						"bump $var in scripts/kernels.env" >&2
				fi
			done
			echo "deps: apt-get install failed" >&2
			exit 1
		fi
	fi
fi

for k in "${kernels[@]}"; do
	"$TOP/selftests/vm/prepare-kernel.sh" "$k"
done
if ((${#suites[@]})); then
	"$TOP/scripts/rootfs.sh" --if-missing "${suites[@]}"
fi
echo "deps: all present"
