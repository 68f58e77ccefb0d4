#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/rootfs.sh [--if-missing|--check] SUITE...
#
# Makes build/rootfs/SUITE/ a root filesystem of the Debian release SUITE
# (trixie, sid, ...), built with mmdebstrap from the host's archive, with:
#   - what builds metaroce for that release: gcc, make, the headers of each
#     kernel of scripts/kernels.env that comes from SUITE, and libibverbs-dev
#     (the provider is built against that release's rdma-core);
#   - the userland the VM tests need, which selftests/vm/run --userland
#     SUITE mounts as the guest's /usr: rdma-core, perftest, pyverbs,
#     iproute2, Open MPI, ... (the same tools make deps installs on the host).
# Nothing is installed on the host. The result is cached: it is rebuilt only
# when its inputs change (the package list, the archive, this script), which
# a stamp file records. The new tree is built beside the old one and
# replaces it in one rename. With --if-missing, SUITEs whose tree is up to
# date are left alone silently (the default prints that they are); with
# --check nothing is built: the exit status says whether all are up to date.
set -euo pipefail

MR_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=platform.sh
. "$MR_TOP/scripts/platform.sh"

quiet=0 check=0
case ${1:-} in
--if-missing) quiet=1; shift ;;
--check) check=1; shift ;;
esac
(($#)) || { echo "usage: $0 [--if-missing|--check] SUITE..." >&2; exit 2; }

die() { echo "rootfs: $*" >&2; exit 1; }

# The release's packages: the build tools, the rdma-core userland and the
# tools the kselftests run (as deps.sh's host list).
base_pkgs=(
	# build: the module (kbuild) and the provider, tools and tests
	gcc make libc6-dev libibverbs-dev librdmacm-dev pkgconf kmod
	xz-utils zstd bzip2 bc bison flex libelf-dev
	# rdma-core
	rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest
	python3 python3-pyverbs
	# what the kselftests run in the guest
	bash coreutils procps util-linux iproute2 iputils-ping iperf3 ethtool
	nvme-cli strace gzip
	# collectives: Open MPI over UCX
	openmpi-bin libopenmpi-dev ucx-utils
)

build_one() { # SUITE
	local suite=$1 root pkgs=() n key var svar stamp tmp t0=$SECONDS
	[[ $suite =~ ^[a-z][a-z0-9-]*$ ]] || die "bad suite '$suite'"
	[[ $suite != "$(mr_host_suite)" ]] ||
		die "$suite is the host's release: its userland is the host's own"
	root=$(mr_rootfs_dir "$suite")
	pkgs=("${base_pkgs[@]}")
	for n in $(mr_kernel_names); do
		key=$(mr_kernel_var "$n")
		var=MR_KVER_$key svar=MR_KSUITE_$key
		[[ ${!svar:-} == "$suite" ]] && pkgs+=("linux-headers-${!var}")
	done
	mr_archive
	stamp=$( {
		printf '%s\n' "$suite" "$MR_ARCHIVE_URI" "${pkgs[@]}"
		cat "$(mr_apt_acquire_conf)"
		cat "${BASH_SOURCE[0]}"
		mmdebstrap --version 2>/dev/null || echo "no mmdebstrap"
	} | sha256sum | cut -c1-16)
	if [[ -f $root/.mr-stamp && $(<"$root/.mr-stamp") == "$stamp" ]]; then
		((quiet || check)) || echo "rootfs: $root is up to date" >&2
		return 0
	fi
	((check == 0)) || return 1
	command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (make deps)"
	((EUID == 0)) || die "building a root filesystem needs root"

	# The package lists of the private apt configuration tell missing
	# (unpinned) kernel headers apart from other failures.
	mr_apt_setup "$suite"
	for n in "${pkgs[@]}"; do
		[[ $n == linux-headers-* ]] || continue
		mr_apt_cache "$suite" show "$n" >/dev/null 2>&1 && continue
		mr_apt "$suite" update -q >&2
		mr_apt_cache "$suite" show "$n" >/dev/null 2>&1 ||
			die "$n is not in $suite any more: pin one that is in scripts/kernels.env ($(mr_apt_cache "$suite" search --names-only '^linux-headers-[0-9.]+.*-amd64$' | cut -d' ' -f1 | tr '\n' ' '))"
	done

	echo "rootfs: building $root (${#pkgs[@]} packages from $suite)" >&2
	mkdir -p "$(dirname "$root")"
	tmp=$(mktemp -d "$root.new.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	# --mode=root: we are root; the tree belongs to root as the guest's
	# /usr must. Documentation stays: pyverbs' test suite is in
	# /usr/share/doc/rdma-core/tests. Debian 13's kernel headers depend on
	# the kernel image, which nothing here boots: its modules are not
	# unpacked and no initramfs is made (INITRD=No, which the kernel's
	# initramfs hook honours).
	INITRD=No mmdebstrap --mode=root --variant=essential --format=directory \
		--dpkgopt='path-exclude=/usr/lib/modules/*/kernel/*' \
		--include="$(IFS=,; echo "${pkgs[*]}")" \
		--aptopt='Acquire::Retries "3"' --aptopt='APT::Sandbox::User "root"' \
		--aptopt="$(mr_apt_acquire_conf)" \
		--customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*_Packages*' \
		"$suite" "$tmp" \
		"deb [signed-by=$MR_ARCHIVE_KEYRING] $MR_ARCHIVE_URI $suite main" >&2 ||
		die "mmdebstrap $suite failed"
	# The guest mounts this /usr and takes /etc from here: check the parts
	# it cannot do without.
	for n in bash python3 ib_write_bw rdma ip; do
		[[ -x $tmp/usr/bin/$n || -x $tmp/usr/sbin/$n ]] ||
			die "the $suite tree has no $n in /usr/bin or /usr/sbin"
	done
	for n in etc/ld.so.cache usr/share/doc/rdma-core/tests/run_tests.py; do
		[[ -e $tmp/$n ]] || die "the $suite tree has no /$n"
	done
	echo "$stamp" >"$tmp/.mr-stamp"
	rm -rf "$root.old"
	[[ -d $root ]] && mv "$root" "$root.old"
	mv "$tmp" "$root"
	trap - EXIT
	rm -rf "$root.old"
	echo "rootfs: $root ready in $((SECONDS - t0))s ($(du -sh "$root" | cut -f1))" >&2
}

if ((check)); then
	for s; do
		build_one "$s" || exit 1
	done
	exit 0
fi
for s; do
	mkdir -p "$MR_TOP/build/rootfs"
	# One builder per suite at a time.
	(
		exec 9>"$MR_TOP/build/rootfs/.lock-$s"
		flock 9
		build_one "$s"
	)
done
