#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# build-module.sh KDIR [W] [V]
# build-module.sh --kernel NAME [W] [V]
#
# Builds metaroce.ko against the kernel build tree KDIR, out of tree, in a
# shadow tree build/kmod/<release>/ (the release the module is built for,
# as in /lib/modules/<release>) that mirrors the module's sources
# (Kbuild, drivers/, include/) as symlinks, so object files never land in the
# source tree and builds for several kernels never clobber each other. The
# shadow tree is brought in sync before every build: new source files are
# linked, links to deleted ones are removed; make then rebuilds only what
# changed. W is passed to kbuild (W=1 for extra warnings), V to make.
# Prints the path of the built module on stdout.
#
# --kernel NAME builds for a kernel of scripts/kernels.env (6.12, 6.1,
# 6.12-trixie, 7.2): against its headers in /usr/src on the host for the
# host's Debian release, else inside the root filesystem of its release
# (build/rootfs/SUITE, scripts/rootfs.sh), with that release's compiler
# and kbuild tools, which the host's cannot stand in for (newer gcc flags,
# a newer glibc); for the debug kernels (debug, debug-kcsan: make
# check-debug) against their build tree under build/debug-kernel/.
set -euo pipefail

usage() {
	echo "usage: $0 KDIR|--kernel NAME [W] [V]" >&2
	exit 2
}

die() {
	echo "build-module: $*" >&2
	exit 1
}

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if [[ ${1:-} == --kernel ]]; then
	[[ $# -ge 2 && $# -le 4 ]] || usage
	MR_TOP=$TOP
	# shellcheck source=platform.sh
	. "$TOP/scripts/platform.sh"
	mr_kernel "$2" || exit 2
	shift 2
	if [[ -n $MR_SUITE && -z ${MR_IN_ROOTFS:-} ]]; then
		mr_in_rootfs "$MR_SUITE" "$TOP/scripts/build-module.sh" \
			"/usr/src/linux-headers-$MR_REL" "$@"
		exit
	fi
	set -- "${MR_KDIR:-/usr/src/linux-headers-$MR_REL}" "$@"
fi

[[ $# -ge 1 && $# -le 3 ]] || usage
KDIR=$1
W=${2:-}
V=${3:-0}

[[ -d $KDIR ]] || die "no kernel build tree at $KDIR"

# The release the module is built for: UTS_RELEASE, which goes into the
# module's vermagic and names /lib/modules/<release>. It usually equals
# include/config/kernel.release, but not always: Debian's 6.1.0-57 headers
# say 6.1.192 there while their modules live in 6.1.0-57-amd64.
kernel_release() {
	local uts=$KDIR/include/generated/utsrelease.h
	local cfg=$KDIR/include/config/kernel.release

	if [[ -r $uts ]]; then
		sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$uts"
	elif [[ -r $cfg ]]; then
		cat "$cfg"
	fi
}
KREL=$(kernel_release)
[[ -n $KREL ]] ||
	die "$KDIR has neither include/generated/utsrelease.h nor include/config/kernel.release (not a prepared kernel build tree)"
[[ $KREL != */* && $KREL != .* ]] || die "bad kernel release '$KREL' in $KDIR"

# The DKMS package version and the module's MODULE_VERSION must agree.
ver_h=$(sed -n 's/^#define METAROCE_VERSION[[:space:]]*"\(.*\)"$/\1/p' \
	"$TOP/drivers/metaroce/version.h")
ver_dkms=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$TOP/dkms.conf")
[[ -n $ver_h && $ver_h == "$ver_dkms" ]] ||
	die "version mismatch: drivers/metaroce/version.h says '$ver_h', dkms.conf says '$ver_dkms'"

SHADOW=$TOP/build/kmod/$KREL
mkdir -p "$SHADOW"

# Source files that make up the module, relative to $TOP (the same list
# the DKMS source tree is made of).
list_sources() {
	"$TOP/scripts/module-sources.sh"
}

sync_shadow() {
	local f link

	# Link every source file (recreating links that point elsewhere).
	while IFS= read -r f; do
		link=$SHADOW/$f
		if [[ ! -L $link || $(readlink "$link") != "$TOP/$f" ]]; then
			mkdir -p "$(dirname "$link")"
			ln -sfn "$TOP/$f" "$link"
		fi
	done < <(list_sources)

	# Unlink files that are no longer sources, with the objects built from
	# them, so that a deleted source cannot be linked into the module.
	while IFS= read -r link; do
		f=${link#"$SHADOW"/}
		if ! grep -qxF -- "$f" <<<"$sources"; then
			rm -f -- "$link"
			case $f in
			*.c | *.S)
				rm -f -- "$SHADOW/${f%.*}.o" \
					"$(dirname "$SHADOW/$f")/.$(basename "${f%.*}").o.cmd"
				;;
			esac
		fi
	done < <(find "$SHADOW" -type l)
}

sources=$(list_sources)
sync_shadow

make_args=(-C "$KDIR" M="$SHADOW" V="$V")
[[ -n $W ]] && make_args+=(W="$W")

make -j"$(nproc)" "${make_args[@]}" modules >&2

KO=$SHADOW/drivers/metaroce/metaroce.ko
[[ -f $KO ]] || die "make succeeded but $KO is missing"
echo "$KO"
