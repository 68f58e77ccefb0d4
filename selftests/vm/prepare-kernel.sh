#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# prepare-kernel.sh NAME|RELEASE
#
# Makes build/vm/RELEASE/ hold the unpacked Debian kernel for the kernel
# NAME of scripts/kernels.env (6.12, 6.1, 6.12-trixie, 7.2) or the release
# RELEASE: boot/vmlinuz-RELEASE and lib/modules/RELEASE with a modules.dep.
# The packages are downloaded into build/vm/debs/ with `apt-get download`
# when they are not there yet: from the host's apt sources for a kernel of
# the host's release, through the private apt configuration of
# scripts/platform.sh (build/apt/SUITE/) for one of another Debian release.
# Debian ships a kernel as linux-image-RELEASE-unsigned (Debian 12 and 13),
# or split into linux-binary-unsigned-RELEASE, linux-modules-RELEASE and
# linux-base-RELEASE (unstable, from 7.x on), or only as the signed
# linux-image-RELEASE; the first of these the archive has is taken. The
# packages are never installed: their maintainer scripts (update-initramfs)
# are slow and the VM does not need them. Idempotent and safe to run from
# several processes at once.
set -euo pipefail

MR_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TOP=$MR_TOP
# shellcheck source=../../scripts/platform.sh
. "$TOP/scripts/platform.sh"
mr_kernel "${1:?usage: prepare-kernel.sh NAME|RELEASE}"
REL=$MR_REL SUITE=$MR_SUITE
VM=$TOP/build/vm
DEBS=$VM/debs
DEST=$VM/$REL
# The package sets, in order of preference.
SETS=("linux-image-$REL-unsigned"
	"linux-binary-unsigned-$REL linux-modules-$REL linux-base-$REL"
	"linux-image-$REL")

die() { echo "prepare-kernel: $*" >&2; exit 1; }

# Which variable of scripts/kernels.env names this release (for messages).
kver_var() {
	local var
	var=$(grep -E "^MR_KVER_[0-9A-Z_]+=${REL//+/\\+}\$" "$TOP/scripts/kernels.env" | cut -d= -f1 || true)
	echo "${var:-the MR_KVER_* variable}"
}

[[ -f $DEST/.prepared && -f $DEST/boot/vmlinuz-$REL ]] && exit 0

mkdir -p "$DEBS"
exec 9>"$VM/.lock-$REL"
flock 9
# Another process may have finished the job while we waited for the lock.
[[ -f $DEST/.prepared && -f $DEST/boot/vmlinuz-$REL ]] && exit 0

# cached_deb PKG: the newest .deb of PKG in build/vm/debs, or nothing.
cached_deb() {
	compgen -G "$DEBS/${1}_*_amd64.deb" | sort -V | tail -n 1 || true
}

# cached_set: the first set whose packages are all in build/vm/debs.
cached_set() {
	local set p
	for set in "${SETS[@]}"; do
		for p in $set; do
			[[ -n $(cached_deb "$p") ]] || continue 2
		done
		echo "$set"
		return
	done
}

# The kernel's release's apt, for apt-cache and apt-get.
kapt_cache() { if [[ -n $SUITE ]]; then mr_apt_cache "$SUITE" "$@"; else apt-cache "$@"; fi; }
kapt_get() { if [[ -n $SUITE ]]; then mr_apt "$SUITE" "$@"; else apt-get "$@"; fi; }

# archive_set: the first set whose packages are all in the archive.
archive_set() {
	local set p
	for set in "${SETS[@]}"; do
		for p in $set; do
			kapt_cache show "$p" >/dev/null 2>&1 || continue 2
		done
		echo "$set"
		return
	done
}

set=$(cached_set)
if [[ -z $set ]]; then
	[[ -z $SUITE ]] || mr_apt_setup "$SUITE"
	set=$(archive_set)
	if [[ -z $set ]]; then
		# The package lists may be stale or absent: refresh once.
		kapt_get update -q >/dev/null 2>&1 || true
		set=$(archive_set)
	fi
	[[ -n $set ]] ||
		die "no kernel package for $REL in the apt archive${SUITE:+ ($SUITE)}; bump $(kver_var) in scripts/kernels.env to a release the archive has (apt-cache search linux-image-.*-amd64)"
	echo "prepare-kernel: downloading $set${SUITE:+ ($SUITE)}" >&2
	# shellcheck disable=SC2086 # the set is a list of package names
	(cd "$DEBS" && kapt_get download -q $set >&2) ||
		die "apt-get download $set failed"
	[[ $(cached_set) == "$set" ]] || die "apt-get download left no .deb of $set in $DEBS"
fi

echo "prepare-kernel: unpacking $set" >&2
tmp=$(mktemp -d "$VM/.unpack-$REL.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for p in $set; do
	dpkg-deb -x "$(cached_deb "$p")" "$tmp"
done
# Merged /usr (Debian 13 on) puts the modules in usr/lib/modules, and the
# split packages the image beside them: build/vm/RELEASE has boot/ and
# lib/modules/ whatever the packages' layout.
if [[ ! -d $tmp/lib/modules/$REL && -d $tmp/usr/lib/modules/$REL ]]; then
	mkdir -p "$tmp/lib/modules"
	mv "$tmp/usr/lib/modules/$REL" "$tmp/lib/modules/$REL"
fi
if [[ ! -f $tmp/boot/vmlinuz-$REL ]]; then
	for p in vmlinuz vmlinuz.unsigned; do
		[[ -f $tmp/lib/modules/$REL/$p ]] || continue
		mkdir -p "$tmp/boot"
		mv "$tmp/lib/modules/$REL/$p" "$tmp/boot/vmlinuz-$REL"
		break
	done
fi
rm -rf "${tmp:?}/usr"
[[ -f $tmp/boot/vmlinuz-$REL && -f $tmp/lib/modules/$REL/modules.order ]] ||
	die "$set does not contain a kernel image and the modules of $REL"
depmod -b "$tmp" "$REL"
rm -rf "$DEST"
mv "$tmp" "$DEST"
trap - EXIT
touch "$DEST/.prepared"
