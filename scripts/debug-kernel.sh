#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/debug-kernel.sh [--check] [FLAVOUR]
#
# Builds the debug kernel of `make check-debug` from Debian's 6.12 source
# (the linux-source-6.12 package, /usr/src/linux-source-6.12.tar.xz) and
# metaroce.ko against it. FLAVOUR is "debug" (KASAN, UBSAN, lockdep,
# DEBUG_OBJECTS, kmemleak, DEBUG_LIST...: selftests/vm/debug.config) or
# "debug-kcsan" (the same with KCSAN instead of KASAN, which cannot be
# combined with it: selftests/vm/debug-kcsan.config on top). The config is
# x86_64_defconfig with the fragment(s) merged over it: a small kernel,
# about 40 minutes to build here (2 cores, nice -n 19).
#
# Everything lives under build/debug-kernel/: the unpacked source
# (linux-source-6.12/), one object tree per flavour (obj-FLAVOUR/) and
# FLAVOUR.release, the kernel's release (6.12.118-mrdebug). The kernel is
# installed where selftests/vm/run finds its kernels, build/vm/RELEASE/
# (boot/vmlinuz-RELEASE, lib/modules/RELEASE), so that `selftests/vm/run
# --kernel debug` boots it, and the module goes to build/kmod/RELEASE/ as
# for every kernel. The kernel is rebuilt only when the source package's
# version, the compiler or a config fragment changes; the module is brought
# up to date every time (make rebuilds what changed).
#
# --check only says (exit status) whether the kernel is built and current.
set -euo pipefail

# One compound command: bash reads it whole before running it, so editing
# this file cannot derail a run in progress.
{

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DK=$TOP/build/debug-kernel
TARBALL=/usr/src/linux-source-6.12.tar.xz
PKG=linux-source-6.12

check=0
if [[ ${1:-} == --check ]]; then
	check=1
	shift
fi
flavour=${1:-debug}
case $flavour in
debug) frags=("$TOP/selftests/vm/debug.config") ;;
debug-kcsan) frags=("$TOP/selftests/vm/debug.config" "$TOP/selftests/vm/debug-kcsan.config") ;;
*) echo "usage: $0 [--check] [debug|debug-kcsan]" >&2; exit 2 ;;
esac

die() { echo "debug-kernel: $*" >&2; exit 1; }
say() { echo "debug-kernel: $*" >&2; }

pkgver=$(dpkg-query -W -f='${Version}' "$PKG" 2>/dev/null || true)
if [[ -z $pkgver || ! -f $TARBALL ]]; then
	((check)) && exit 1
	die "$PKG is not installed (/usr/src/linux-source-6.12.tar.xz): make deps-debug"
fi

# The cache key: what the kernel is made of.
key=$( {
	echo "$pkgver"
	gcc --version | head -n 1
	cat "${frags[@]}"
} | sha256sum | cut -c1-16)

SRC=$DK/linux-source-6.12
OBJ=$DK/obj-$flavour
relfile=$DK/$flavour.release

current() {
	local rel
	[[ -f $relfile && -f $OBJ/.mr-key && $(<"$OBJ/.mr-key") == "$key" ]] || return 1
	rel=$(<"$relfile")
	[[ -f $TOP/build/vm/$rel/.prepared && -f $TOP/build/vm/$rel/boot/vmlinuz-$rel ]]
}

if ((check)); then
	current
	exit
fi

mkdir -p "$DK"
# One build per flavour at a time; the flavours share the source tree,
# which only an exclusive holder of .lock-src replaces.
exec 9>"$DK/.lock-$flavour"
flock 9
exec 8>"$DK/.lock-src"
flock -s 8

# Whatever we build, we build it slowly: the machine is shared.
renice -n 19 -p $$ >/dev/null 2>&1 || true
MAKE=(nice -n 19 make -j"$(nproc)")

if ! current; then
	# --- source --------------------------------------------------------
	if [[ ! -f $SRC/.mr-version || $(<"$SRC/.mr-version") != "$pkgver" ]]; then
		flock 8 # exclusive, once the other flavours' builds are done
		if [[ ! -f $SRC/.mr-version || $(<"$SRC/.mr-version") != "$pkgver" ]]; then
			say "unpacking $PKG $pkgver"
			rm -rf "$SRC" "$DK"/obj-*
			tar -C "$DK" -xf "$TARBALL"
			echo "$pkgver" >"$SRC/.mr-version"
		fi
		flock -s 8
	fi

	# --- config --------------------------------------------------------
	say "configuring $flavour: x86_64_defconfig + ${frags[*]##*/}"
	mkdir -p "$OBJ"
	rm -f "$OBJ/.mr-key"
	"${MAKE[@]}" -s -C "$SRC" O="$OBJ" x86_64_defconfig >/dev/null
	(cd "$OBJ" && "$SRC/scripts/kconfig/merge_config.sh" -m -O "$OBJ" \
		"$OBJ/.config" "${frags[@]}" >/dev/null)
	"${MAKE[@]}" -s -C "$SRC" O="$OBJ" olddefconfig >/dev/null
	# Every line of the fragments must have made it (the last fragment
	# to name an option wins).
	declare -A want=()
	while IFS= read -r line; do
		if [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)=(.*)$ ]]; then
			want[${BASH_REMATCH[1]}]=${BASH_REMATCH[1]}=${BASH_REMATCH[2]}
		elif [[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
			want[${BASH_REMATCH[1]}]=$line
		fi
	done < <(cat "${frags[@]}")
	bad=0
	for opt in "${!want[@]}"; do
		line=${want[$opt]}
		if [[ $line == "# "* ]]; then
			# Unset: absent (dependency off) or "is not set".
			! grep -q "^$opt=" "$OBJ/.config" && continue
		else
			grep -qxF -- "$line" "$OBJ/.config" && continue
		fi
		say "config: wanted '$line', got '$(grep -E "^(# )?${opt}[= ]" "$OBJ/.config" || echo unset)'"
		bad=1
	done
	((bad == 0)) || die "the config fragments do not apply to $PKG $pkgver (fix ${frags[*]#"$TOP"/})"

	# --- build ---------------------------------------------------------
	say "building $flavour kernel ($(nproc) jobs, nice 19); this takes a while"
	start=$SECONDS
	"${MAKE[@]}" -s -C "$SRC" O="$OBJ" bzImage modules
	rel=$("${MAKE[@]}" -s -C "$SRC" O="$OBJ" kernelrelease)
	say "built $rel in $(((SECONDS - start) / 60)) min"

	# --- install where selftests/vm/run boots kernels from -------------
	dest=$TOP/build/vm/$rel
	tmp=$(mktemp -d "$TOP/build/vm/.unpack-$rel.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	"${MAKE[@]}" -s -C "$SRC" O="$OBJ" INSTALL_MOD_PATH="$tmp" \
		INSTALL_MOD_STRIP=1 DEPMOD=true modules_install
	rm -f "$tmp/lib/modules/$rel/build" "$tmp/lib/modules/$rel/source"
	mkdir -p "$tmp/boot"
	cp "$OBJ/arch/x86/boot/bzImage" "$tmp/boot/vmlinuz-$rel"
	cp "$OBJ/.config" "$tmp/boot/config-$rel"
	cp "$OBJ/System.map" "$tmp/boot/System.map-$rel"
	depmod -b "$tmp" "$rel"
	rm -rf "$dest"
	mv "$tmp" "$dest"
	trap - EXIT
	touch "$dest/.prepared"
	echo "$rel" >"$relfile"
	echo "$key" >"$OBJ/.mr-key"
fi
rel=$(<"$relfile")

# --- metaroce.ko against this tree (build/kmod/RELEASE/) --------------------
say "building metaroce.ko for $rel"
nice -n 19 "$TOP/scripts/build-module.sh" "$OBJ" >/dev/null
echo "$rel"
exit
}
