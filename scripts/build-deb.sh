#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/build-deb.sh: make deb. Builds the Debian packages metaroce-dkms
# and ibverbs-provider-metaroce (debian/) with dpkg-buildpackage, unsigned,
# binary only, in a copy of the source tree without build/
# (build/deb/src/metaroce-<version>/: what git tracks plus new files it does
# not ignore, or every file outside build/ and .git when this is not a git
# work tree), so the build reads nothing of earlier builds and writes nothing
# outside build/. The .deb, .buildinfo and .changes files end up in
# build/deb/; the copy is removed once the build succeeded. Refuses to build
# when debian/changelog, dkms.conf and drivers/metaroce/version.h disagree on
# the version. Needs dpkg-dev, debhelper, dh-dkms and libibverbs-dev (make
# deps); never the kernel headers.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$TOP"
OUT=$TOP/build/deb

die() {
	echo "build-deb: $*" >&2
	exit 1
}

command -v dpkg-buildpackage >/dev/null ||
	die "dpkg-buildpackage is missing (make deps)"
ver=$(dpkg-parsechangelog -S Version)
ver_conf=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' dkms.conf)
ver_h=$(sed -n 's/^#define METAROCE_VERSION[[:space:]]*"\(.*\)"$/\1/p' \
	drivers/metaroce/version.h)
[[ $ver == "$ver_conf" && $ver == "$ver_h" ]] ||
	die "version mismatch: debian/changelog says '$ver', dkms.conf '$ver_conf', drivers/metaroce/version.h '$ver_h'"

tree_files() {
	local f
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		while IFS= read -r -d '' f; do
			[[ $f == build/* || ! -e $f ]] || printf '%s\0' "$f"
		done < <(git ls-files -z --cached --others --exclude-standard)
	else
		find . -path ./build -prune -o -path ./.git -prune -o \
			\( -type f -o -type l \) -printf '%P\0'
	fi
}

rm -rf "$OUT"
src=$OUT/src/metaroce-$ver
mkdir -p "$src"
tree_files | tar --null --no-recursion -T - -cf - | tar -xf - -C "$src"

# The package build is make's business alone: nothing of a calling make's
# flags or variables (make deb V=1, PREFIX=...) reaches it.
(cd "$src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
	dpkg-buildpackage -us -uc -b) || die "dpkg-buildpackage failed (in $src)"

shopt -s nullglob
built=("$OUT"/src/*.deb "$OUT"/src/*.buildinfo "$OUT"/src/*.changes)
((${#built[@]})) || die "dpkg-buildpackage left no packages in $OUT/src"
mv "${built[@]}" "$OUT"/
rm -rf "$OUT/src"
echo "build-deb: built in ${OUT#"$TOP"/}/:"
printf '  %s\n' "${built[@]##*/}"
