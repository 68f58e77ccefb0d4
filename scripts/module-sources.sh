#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/module-sources.sh [--dkms | --stage DIR]
#
# The files that building metaroce.ko out of tree reads (`make -C <kdir>
# M=<tree> modules` with the top-level Kbuild): Kbuild, and the C sources,
# headers and Kbuild files under drivers/ and include/. Prints them one per
# line, relative to the top of the source tree, sorted. The one list of
# them: scripts/build-module.sh mirrors these into its shadow tree, and the
# DKMS source tree (make dkms-source, the metaroce-dkms package) is these
# plus dkms.conf.
#
#   --dkms        the DKMS source tree's files: the list plus dkms.conf
#   --stage DIR   copies the DKMS source tree's files into
#                 DIR/<name>-<version>/ (PACKAGE_NAME and PACKAGE_VERSION of
#                 dkms.conf), replacing what was there, and prints that
#                 directory; refuses when PACKAGE_VERSION differs from
#                 METAROCE_VERSION in drivers/metaroce/version.h
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() {
	echo "module-sources: $*" >&2
	exit 1
}

module_sources() {
	(cd "$TOP" && {
		echo Kbuild
		find drivers include -type f \
			\( -name '*.c' -o -name '*.h' -o -name '*.S' -o -name Kbuild \) \
			-not -name '.*' -print
	}) | LC_ALL=C sort
}

dkms_sources() {
	{ module_sources; echo dkms.conf; } | LC_ALL=C sort
}

conf_value() { # NAME: its value in dkms.conf
	sed -n "s/^$1=\"\\{0,1\\}\\([^\"]*\\)\"\\{0,1\\}\$/\\1/p" "$TOP/dkms.conf"
}

stage() { # DIR
	local name ver ver_h dest

	name=$(conf_value PACKAGE_NAME)
	ver=$(conf_value PACKAGE_VERSION)
	[[ -n $name && -n $ver ]] || die "dkms.conf lacks PACKAGE_NAME or PACKAGE_VERSION"
	ver_h=$(sed -n 's/^#define METAROCE_VERSION[[:space:]]*"\(.*\)"$/\1/p' \
		"$TOP/drivers/metaroce/version.h")
	[[ $ver == "$ver_h" ]] ||
		die "version mismatch: drivers/metaroce/version.h says '$ver_h', dkms.conf says '$ver'"
	dest=$1/$name-$ver
	rm -rf "$dest"
	mkdir -p "$dest"
	dkms_sources | (cd "$TOP" && tar --no-recursion -T - -cf -) |
		tar -xf - -C "$dest" --no-same-owner
	echo "$dest"
}

case ${1:-} in
"") [[ $# -eq 0 ]] || die "usage: $0 [--dkms | --stage DIR]"; module_sources ;;
--dkms) [[ $# -eq 1 ]] || die "usage: $0 [--dkms | --stage DIR]"; dkms_sources ;;
--stage) [[ $# -eq 2 && -n $2 ]] || die "usage: $0 --stage DIR"; stage "$2" ;;
*) die "usage: $0 [--dkms | --stage DIR]" ;;
esac
