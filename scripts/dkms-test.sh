#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/dkms-test.sh: the DKMS package builds, installed as the admin
# guide says. Stages the DKMS source tree with make dkms-source
# (build/dkms/<name>-<version>, name and version from dkms.conf), checks
# that it holds exactly scripts/module-sources.sh --dkms, `dkms add`s it
# (which copies it to /usr/src/<name>-<version>), `dkms build`s for both
# pinned kernels, then removes everything again (also on failure). Fails
# loudly on any error, printing DKMS's make.log.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$TOP"
# shellcheck source=kernels.env
. scripts/kernels.env

die() { echo "dkms-test: $*" >&2; exit 1; }

conf_value() { sed -n "s/^$1=\"\\{0,1\\}\\([^\"]*\\)\"\\{0,1\\}\$/\\1/p" dkms.conf; }
[[ -f dkms.conf ]] || die "no dkms.conf"
name=$(conf_value PACKAGE_NAME)
ver=$(conf_value PACKAGE_VERSION)
[[ -n $name && -n $ver ]] || die "dkms.conf lacks PACKAGE_NAME or PACKAGE_VERSION"
command -v dkms >/dev/null || die "dkms is not installed (make deps)"

src=/usr/src/$name-$ver
marker=.metaroce-dkms-test
# Never touch an installation that is not ours.
if [[ -e $src && ! -e $src/$marker ]]; then
	die "$src exists and was not made by this test; remove it (dkms remove $name/$ver --all) first"
fi
if dkms status -m "$name" -v "$ver" 2>/dev/null | grep -q . && [[ ! -e $src/$marker ]]; then
	die "$name/$ver is registered with DKMS already; refusing to touch it"
fi

cleanup() {
	dkms remove -m "$name" -v "$ver" --all >/dev/null 2>&1 || true
	rm -rf "$src" "/var/lib/dkms/$name/$ver"
	rmdir "/var/lib/dkms/$name" 2>/dev/null || true
}
cleanup
trap cleanup EXIT

echo "# make dkms-source"
staged=$(make -s --no-print-directory dkms-source)
[[ $staged == "$TOP/build/dkms/$name-$ver" ]] ||
	die "make dkms-source staged '$staged', not build/dkms/$name-$ver"
want=$(scripts/module-sources.sh --dkms)
got=$(cd "$staged" && find . -type f -printf '%P\n' | LC_ALL=C sort)
[[ $got == "$want" ]] ||
	die "$staged does not hold exactly module-sources.sh --dkms: $(diff <(echo "$want") <(echo "$got") | grep '^[<>]' | paste -sd' ')"

# The marker goes in first: dkms add copies into the directory as it is.
mkdir -p "$src"
touch "$src/$marker"
echo "# dkms add ${staged#"$TOP"/}"
dkms add "$staged"
got=$(cd "$src" && find . -type f -not -name "$marker" -printf '%P\n' | LC_ALL=C sort)
[[ $got == "$want" ]] ||
	die "$src does not hold exactly the staged tree: $(diff <(echo "$want") <(echo "$got") | grep '^[<>]' | paste -sd' ')"
dkms status -m "$name" -v "$ver" | grep -q added ||
	die "dkms status does not list $name/$ver as added"

rc=0
for rel in "$MR_KVER_6_12" "$MR_KVER_6_1"; do
	[[ -e /lib/modules/$rel/build ]] ||
		die "no /lib/modules/$rel/build: install linux-headers-$rel (make deps)"
	echo "# dkms build $name/$ver -k $rel"
	if ! dkms build -m "$name" -v "$ver" -k "$rel"; then
		echo "not ok: dkms build for $rel failed; make.log:" >&2
		cat "/var/lib/dkms/$name/$ver/build/make.log" >&2 || true
		rc=1
		continue
	fi
	ko=$(find "/var/lib/dkms/$name/$ver/$rel" -name "$name.ko*" | head -n 1)
	[[ -n $ko ]] || { echo "not ok: dkms build for $rel left no $name.ko" >&2; rc=1; continue; }
	echo "ok: $rel -> ${ko#/var/lib/dkms/}"
done

echo "# dkms remove $name/$ver --all"
dkms remove -m "$name" -v "$ver" --all
[[ -z $(dkms status -m "$name" -v "$ver" 2>/dev/null) ]] ||
	die "dkms still lists $name/$ver after remove"
((rc == 0)) || die "DKMS build failed"
echo "dkms-test: $name $ver builds for $MR_KVER_6_12 and $MR_KVER_6_1"
