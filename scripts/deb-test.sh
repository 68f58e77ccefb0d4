#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/deb-test.sh: make check-deb. Builds the Debian packages (make deb)
# and checks what they hold, TAP:
#  - metaroce-dkms: exactly the DKMS source tree in /usr/src/<name>-<version>
#    (scripts/module-sources.sh --dkms; nothing of build/, selftests/,
#    userspace/ or .git), the top-level dkms.conf, Depends on dkms, and
#    maintainer scripts that register it with DKMS and remove it again;
#  - ibverbs-provider-metaroce: the provider named for the libibverbs built
#    against, /etc/libibverbs.d/metaroce.driver, metaroce(7) and the
#    Wireshark dissector, and a libibverbs1 dependency that is the range of
#    rdma-core releases pabi.h's generation covers;
#  - lintian (when installed) finds no error: its other tags are printed,
#    not counted;
#  - both unpack into a scratch root with dpkg --root (never onto the host
#    itself); the provider, which has no maintainer scripts, is configured
#    and purged there; DKMS, confined to the scratch root (--sourcetree,
#    --dkmstree), adds the unpacked sources and builds the module from them
#    for both pinned kernels of the host's release, as the package's
#    postinst would, without installing it. Nothing of the host's DKMS state
#    changes (DKMS may make its signing key, /var/lib/dkms/mok.key, if the
#    host has none yet, as any DKMS build does).
# Exits non-zero if any check failed. Takes about a minute.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$TOP"
# shellcheck source=kernels.env disable=SC1091
. scripts/kernels.env
# shellcheck source=tap.sh disable=SC1091
. scripts/tap.sh

OUT=$TOP/build/deb
WORK=$TOP/build/deb-test
ROOT=$WORK/root
t0=$SECONDS

diag() { printf '# %s\n' "$@"; }
# Every line of a multi-line text as its own diagnostic.
diag_lines() { sed 's/^/#   /'; }

# The logs stay in build/deb-test/.
cleanup() { rm -rf "$ROOT" "$WORK/dkms-x" "$WORK/dkms-ctl" "$WORK/prov-x"; }
trap cleanup EXIT
rm -rf "$WORK"
mkdir -p "$WORK"
stamp=$WORK/stamp
touch "$stamp"

name=$(sed -n 's/^PACKAGE_NAME="\(.*\)"$/\1/p' dkms.conf)
ver=$(sed -n 's/^#define METAROCE_VERSION[[:space:]]*"\(.*\)"$/\1/p' \
	drivers/metaroce/version.h)
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
dkms_deb=$OUT/$name-dkms_${ver}_all.deb
prov_deb=$OUT/ibverbs-provider-${name}_${ver}_$arch.deb

echo "TAP version 13"

# --- the build ---------------------------------------------------------------

start=$SECONDS
rc=0
make --no-print-directory -C "$TOP" deb >"$WORK/make-deb.log" 2>&1 || rc=$?
result "$rc" "make deb ($((SECONDS - start))s)" \
	"$(tail -n 5 "$WORK/make-deb.log" | paste -sd' ')"
if ((rc)); then
	tail -n 30 "$WORK/make-deb.log" | diag_lines
	tap_end
	exit 1
fi

missing=()
for f in "$dkms_deb" "$prov_deb" "$OUT/${name}_${ver}_$arch.changes" \
	"$OUT/${name}_${ver}_$arch.buildinfo"; do
	[[ -f $f ]] || missing+=("${f#"$TOP"/}")
done
result "${#missing[@]}" "make deb leaves the packages, .buildinfo and .changes in build/deb/" \
	"missing: ${missing[*]}"
stray=$(find "$(dirname "$TOP")" -maxdepth 1 -newer "$stamp" \
	\( -name '*.deb' -o -name '*.changes' -o -name '*.buildinfo' \) -print)
result "$([[ -z $stray ]]; echo $?)" "make deb writes nothing beside the source tree" \
	"$(paste -sd' ' <<<"$stray")"
[[ -f $dkms_deb && -f $prov_deb ]] || { tap_end; exit 1; }

field() { dpkg-deb -f "$1" "$2"; }
# The paths a package holds, without "./" and directories.
files() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ { sub(/^\.\//, "", $6); print $6 }' | LC_ALL=C sort; }

# --- metaroce-dkms -------------------------------------------------------------

src=usr/src/$name-$ver
got=$(files "$dkms_deb")
want=$({ scripts/module-sources.sh --dkms | sed "s|^|$src/|"
	printf '%s\n' "usr/share/doc/$name-dkms/changelog.gz" \
		"usr/share/doc/$name-dkms/copyright"; } | LC_ALL=C sort)
result "$([[ $got == "$want" ]]; echo $?)" \
	"$name-dkms holds exactly $src/ (module-sources.sh --dkms) and its doc files" \
	"extra: $(comm -23 <(echo "$got") <(echo "$want") | paste -sd' ') missing: $(comm -13 <(echo "$got") <(echo "$want") | paste -sd' ')"
bad=$(grep -E "^$src/(build|selftests|userspace|\.git)(/|$)" <<<"$got" || true)
result "$([[ -z $bad ]]; echo $?)" \
	"$name-dkms holds nothing of build/, selftests/, userspace/, .git" \
	"$(head -n 5 <<<"$bad" | paste -sd' ')"
dpkg-deb -x "$dkms_deb" "$WORK/dkms-x"
cmp -s dkms.conf "$WORK/dkms-x/$src/dkms.conf"
result $? "$name-dkms's dkms.conf is the top-level one (PACKAGE_VERSION $ver)"
deps=$(field "$dkms_deb" Depends)
[[ $(field "$dkms_deb" Architecture) == all && $deps =~ (^|,\ *)dkms( |,|$) ]]
result $? "$name-dkms is Architecture: all and depends on dkms" "Depends: $deps"
dpkg-deb -e "$dkms_deb" "$WORK/dkms-ctl"
# shellcheck disable=SC2016 # the prerm's own text, unexpanded
prerm_remove='dkms remove -m $DKMS_NAME -v $DKMS_VERSION --all'
grep -qx "DKMS_NAME=$name" "$WORK/dkms-ctl/postinst" 2>/dev/null &&
	grep -qx "DKMS_VERSION=$ver" "$WORK/dkms-ctl/postinst" &&
	grep -q 'common.postinst' "$WORK/dkms-ctl/postinst" &&
	grep -qx "DKMS_NAME=$name" "$WORK/dkms-ctl/prerm" 2>/dev/null &&
	grep -qF "$prerm_remove" "$WORK/dkms-ctl/prerm"
result $? "$name-dkms's postinst adds, builds and installs $name/$ver with DKMS; its prerm removes it"

# --- ibverbs-provider-metaroce -------------------------------------------------

prov=ibverbs-provider-$name
libibverbs=$(readlink -f "/usr/lib/$multiarch/libibverbs.so.1")
pabi=$(readelf -V --wide "$libibverbs" |
	sed -n 's/.*Name: IBVERBS_PRIVATE_\([0-9][0-9]*\)$/\1/p' | head -n 1)
got=$(files "$prov_deb")
want=$(printf '%s\n' "etc/libibverbs.d/$name.driver" \
	"usr/lib/$multiarch/libibverbs/lib$name-rdmav$pabi.so" \
	"usr/lib/$multiarch/wireshark/plugins/$name.lua" \
	"usr/share/doc/$prov/changelog.gz" "usr/share/doc/$prov/copyright" \
	"usr/share/man/man7/$name.7.gz" | LC_ALL=C sort)
result "$([[ $got == "$want" ]]; echo $?)" \
	"$prov holds the provider (rdmav$pabi), its .driver file, $name(7), the dissector" \
	"extra: $(comm -23 <(echo "$got") <(echo "$want") | paste -sd' ') missing: $(comm -13 <(echo "$got") <(echo "$want") | paste -sd' ')"
[[ $(field "$prov_deb" Architecture) == "$arch" &&
	$(field "$prov_deb" Multi-Arch) == same ]]
result $? "$prov is Architecture: $arch, Multi-Arch: same"
dpkg-deb -x "$prov_deb" "$WORK/prov-x"
[[ $(cat "$WORK/prov-x/etc/libibverbs.d/$name.driver" 2>/dev/null) == "driver $name" ]] &&
	dpkg-deb --ctrl-tarfile "$prov_deb" | tar -xOf - ./conffiles 2>/dev/null |
	grep -qx "/etc/libibverbs.d/$name.driver"
result $? "/etc/libibverbs.d/$name.driver says 'driver $name' and is a conffile"

read -r first last < <(make -s --no-print-directory -C userspace/provider rdma-core-range)
deps=$(field "$prov_deb" Depends)
want="libibverbs1 (>= $first), libibverbs1 (<< $((last + 1)))"
result "$([[ $deps == *"$want"* ]]; echo $?)" \
	"$prov depends on $want (pabi.h: rdma-core $first to $last)" "Depends: $deps"
have=$(dpkg-query -W -f='${Version}' libibverbs1)
dpkg --compare-versions "$have" ge "$first" &&
	dpkg --compare-versions "$have" lt "$((last + 1))"
result $? "the libibverbs1 built against ($have) meets that dependency"

# --- lintian -------------------------------------------------------------------

# The maintainer address is a placeholder in the reserved .invalid domain
# until the project has a real one: lintian calls that an error.
if command -v lintian >/dev/null; then
	lintian --display-level '>=pedantic' \
		--suppress-tags bogus-mail-host,bogus-mail-host-in-debian-changelog \
		"$OUT/${name}_${ver}_$arch.changes" >"$WORK/lintian.log" 2>&1 || true
	tags=$(grep -v '^running with root privileges' "$WORK/lintian.log" || true)
	if [[ -n $tags ]]; then
		diag "lintian:"
		diag_lines <<<"$tags"
	else
		diag "lintian: no tag, pedantic ones included"
	fi
	errors=$(grep -c '^E:' "$WORK/lintian.log" || true)
	result "$((errors > 0))" "lintian finds no error ($errors)"
else
	skip "lintian finds no error" "lintian is not installed"
fi

# --- a scratch root --------------------------------------------------------------

rm -rf "$ROOT"
mkdir -p "$ROOT/var/lib/dpkg/info" "$ROOT/var/lib/dpkg/updates" \
	"$ROOT/var/lib/dpkg/triggers"
touch "$ROOT/var/lib/dpkg/status" "$ROOT/var/lib/dpkg/available"
# --force-depends: the scratch root has none of the dependencies; --unpack
# runs no maintainer script (neither package has a preinst).
dpkg_root() { dpkg --root="$ROOT" --force-depends "$@" >>"$WORK/dpkg.log" 2>&1; }
rc=0
dpkg_root --unpack "$dkms_deb" "$prov_deb" || rc=$?
result "$rc" "both packages unpack into a scratch root (dpkg --root)" \
	"$(tail -n 3 "$WORK/dpkg.log" | paste -sd' ')"
if ((rc == 0)); then
	rc=0
	dpkg_root --verify || rc=$?
	listed=$(dpkg --root="$ROOT" -L "$name-dkms" "$prov" | sort -u)
	while IFS= read -r f; do
		# A conffile waits as .dpkg-new until the package is configured.
		if ! [[ -f $ROOT/$f || ($f == etc/* && -f $ROOT/$f.dpkg-new) ]] ||
			! grep -qxF "/$f" <<<"$listed"; then
			rc=1
			diag "not unpacked or not listed: /$f"
		fi
	done < <(files "$dkms_deb"; files "$prov_deb")
	result "$rc" "dpkg lists and verifies every file it unpacked"

	rc=0
	dpkg_root --configure "$prov" &&
		[[ -f $ROOT/etc/libibverbs.d/$name.driver ]] &&
		dpkg_root --purge "$prov" || rc=$?
	left=$(find "$ROOT" -path "$ROOT/var" -prune -o -type f -printf '%P\n' |
		grep -v "^usr/src/\|^usr/share/doc/$name-dkms/" || true)
	result "$([[ $rc == 0 && -z $left ]]; echo $?)" \
		"$prov configures and purges in the scratch root, leaving nothing" \
		"$(tail -n 3 "$WORK/dpkg.log" | paste -sd' ') left: $(paste -sd' ' <<<"$left")"

	# What the postinst does, but confined to the scratch root and without
	# the install: dkms add and dkms build.
	host_dkms() { # what the host's DKMS knows of $name
		dkms status -m "$name" 2>/dev/null || true
		ls -d "/var/lib/dkms/$name" "/usr/src/$name-$ver" 2>/dev/null || true
	}
	host_before=$(host_dkms)
	dkms_root=(--sourcetree "$ROOT/usr/src" --dkmstree "$ROOT/var/lib/dkms")
	mkdir -p "$ROOT/var/lib/dkms"
	if ! command -v dkms >/dev/null; then
		skip "dkms builds the packaged sources" "dkms is not installed (make deps)"
	elif ! dkms add -m "$name" -v "$ver" "${dkms_root[@]}" >"$WORK/dkms.log" 2>&1; then
		result 1 "dkms add $name/$ver from the scratch root" \
			"$(tail -n 3 "$WORK/dkms.log" | paste -sd' ')"
	else
		for rel in "$MR_KVER_6_12" "$MR_KVER_6_1"; do
			start=$SECONDS
			if [[ ! -e /lib/modules/$rel/build ]]; then
				result 1 "dkms builds $name/$ver for $rel" \
					"no /lib/modules/$rel/build: install linux-headers-$rel (make deps)"
				continue
			fi
			rc=0
			dkms build -m "$name" -v "$ver" -k "$rel" "${dkms_root[@]}" \
				>>"$WORK/dkms.log" 2>&1 || rc=$?
			ko=$(find "$ROOT/var/lib/dkms/$name/$ver/$rel" -name "$name.ko*" 2>/dev/null | head -n 1)
			result "$([[ $rc == 0 && -n $ko ]]; echo $?)" \
				"dkms builds $name/$ver for $rel from the unpacked package ($((SECONDS - start))s)" \
				"dkms build exit $rc; see ${WORK#"$TOP"/}/dkms.log"
			((rc == 0)) || tail -n 20 "$ROOT/var/lib/dkms/$name/$ver/build/make.log" 2>/dev/null |
				diag_lines || true
		done
	fi
	host_after=$(host_dkms)
	[[ $host_after == "$host_before" ]]
	result $? "the host's DKMS state of $name is as it was" \
		"before: $(paste -sd' ' <<<"$host_before") after: $(paste -sd' ' <<<"$host_after")"
fi

diag "deb-test: $((SECONDS - t0))s"
tap_end
