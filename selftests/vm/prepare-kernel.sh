#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# prepare-kernel.sh RELEASE
#
# Makes build/vm/RELEASE/ hold the unpacked unsigned Debian kernel image
# package for RELEASE (boot/vmlinuz-RELEASE and lib/modules/RELEASE with a
# modules.dep), downloading the .deb into build/vm/debs/ with `apt-get
# download` when it is not there yet. The package is never installed: its
# maintainer scripts (update-initramfs) are slow and the VM does not need them.
# Idempotent and safe to run from several processes at once.
set -euo pipefail

REL=${1:?usage: prepare-kernel.sh RELEASE}
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VM=$TOP/build/vm
DEBS=$VM/debs
DEST=$VM/$REL
PKG=linux-image-$REL-unsigned

die() { echo "prepare-kernel: $*" >&2; exit 1; }

# Which variable of scripts/kernels.env names this release (for messages).
kver_var() {
	local var
	var=$(grep -E "^MR_KVER_[0-9_]+=${REL//+/\\+}\$" "$TOP/scripts/kernels.env" | cut -d= -f1 || true)
	echo "${var:-the MR_KVER_* variable}"
}

[[ -f $DEST/.prepared && -f $DEST/boot/vmlinuz-$REL ]] && exit 0

mkdir -p "$DEBS"
exec 9>"$VM/.lock-$REL"
flock 9
# Another process may have finished the job while we waited for the lock.
[[ -f $DEST/.prepared && -f $DEST/boot/vmlinuz-$REL ]] && exit 0

find_deb() { compgen -G "$DEBS/${PKG}_*_amd64.deb" | sort -V | tail -n 1 || true; }

deb=$(find_deb)
if [[ -z $deb ]]; then
	echo "prepare-kernel: downloading $PKG" >&2
	if ! (cd "$DEBS" && apt-get download -q "$PKG" >/dev/null 2>&1); then
		# The package lists may be stale or absent: refresh once.
		apt-get update -q >/dev/null 2>&1 || true
		(cd "$DEBS" && apt-get download -q "$PKG" >&2) ||
			die "$PKG is not in the apt archive; bump $(kver_var) in scripts/kernels.env to a release the archive has (apt-cache search linux-image-.*-amd64-unsigned)"
	fi
	deb=$(find_deb)
	[[ -n $deb ]] || die "apt-get download left no $PKG .deb in $DEBS"
fi

echo "prepare-kernel: unpacking $(basename "$deb")" >&2
tmp=$(mktemp -d "$VM/.unpack-$REL.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -x "$deb" "$tmp"
[[ -f $tmp/boot/vmlinuz-$REL && -d $tmp/lib/modules/$REL ]] ||
	die "$deb does not contain boot/vmlinuz-$REL and lib/modules/$REL"
depmod -b "$tmp" "$REL"
rm -rf "$DEST"
mv "$tmp" "$DEST"
trap - EXIT
touch "$DEST/.prepared"
