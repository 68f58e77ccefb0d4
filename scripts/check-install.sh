#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/check-install.sh: `make install` and `make uninstall` with DESTDIR
# set to a scratch root, for each pinned kernel (scripts/kernels.env), TAP.
# install must put exactly the module (where modules_install puts it:
# updates/drivers/metaroce/, compressed as the kernel's configuration says),
# the provider and its driver file, metaroce(7) and the Wireshark dissector;
# uninstall must leave no file and none of the module's directories.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=kernels.env
. "$TOP/scripts/kernels.env"
STAGE=$TOP/build/check-install
MULTIARCH=$(${CC:-cc} -print-multiarch)
n=0 failed=0

result() { # RC NAME [DIAG...]
	local rc=$1 name=$2
	shift 2
	n=$((n + 1))
	if ((rc == 0)); then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name"
		printf '# %s\n' "$@"
		failed=$((failed + 1))
	fi
}

echo "TAP version 13"
for krel in "$MR_KVER_6_12" "$MR_KVER_6_1"; do
	kdir=/usr/src/linux-headers-$krel
	if [[ ! -d $kdir ]]; then
		result 1 "$krel: headers in $kdir (make deps)"
		continue
	fi
	# The suffix modules_install gives the module on this kernel.
	suffix=
	if grep -q '^CONFIG_MODULE_COMPRESS_ALL=y' "$kdir/.config" ||
	   ! grep -q '^CONFIG_MODULE_COMPRESS_ALL' "$kdir/.config"; then
		for c in XZ:.xz ZSTD:.zst GZIP:.gz; do
			grep -q "^CONFIG_MODULE_COMPRESS_${c%%:*}=y" "$kdir/.config" &&
				suffix=${c#*:}
		done
	fi
	want=(
		"etc/libibverbs.d/metaroce.driver"
		"lib/modules/$krel/updates/drivers/metaroce/metaroce.ko$suffix"
		"usr/lib/$MULTIARCH/libibverbs/$(basename "$(compgen -G \
			"$TOP/build/userspace/provider/libmetaroce-rdmav*.so" |
			head -n 1)")"
		"usr/lib/$MULTIARCH/wireshark/plugins/metaroce.lua"
		"usr/local/share/man/man7/metaroce.7"
	)
	rm -rf "$STAGE"
	mkdir -p "$STAGE"
	log=$STAGE.log
	if ! make -C "$TOP" -s install KDIR="$kdir" DESTDIR="$STAGE" >"$log" 2>&1; then
		result 1 "$krel: make install" "$(tail -n 5 "$log")"
		continue
	fi
	got=$(cd "$STAGE" && find . \( -type f -o -type l \) -printf '%P\n' | sort)
	expect=$(printf '%s\n' "${want[@]}" | sort)
	result "$([[ $got == "$expect" ]]; echo $?)" \
		"$krel: make install installs the module, provider, man page, dissector" \
		"expected: $(paste -sd' ' <<<"$expect")" "got: $(paste -sd' ' <<<"$got")"
	if ! make -C "$TOP" -s uninstall KDIR="$kdir" DESTDIR="$STAGE" >"$log" 2>&1; then
		result 1 "$krel: make uninstall" "$(tail -n 5 "$log")"
		continue
	fi
	left=$(cd "$STAGE" && find . \( -type f -o -type l \) -printf '%P\n')
	leftdirs=$(cd "$STAGE" && find "lib/modules/$krel" -mindepth 1 -printf '%P\n' 2>/dev/null || true)
	result "$([[ -z $left && -z $leftdirs ]]; echo $?)" \
		"$krel: make uninstall removes all of it" \
		"files left: $(paste -sd' ' <<<"$left")" \
		"under lib/modules/$krel: $(paste -sd' ' <<<"$leftdirs")"
done
rm -rf "$STAGE" "$STAGE.log"
echo "1..$n"
((failed == 0))
