#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The Wireshark dissector's decode test (make check-core), TAP:
#
#   run.sh PCAPGEN OUTDIR
#
# PCAPGEN (pcapgen.c, linked with the engine) writes captures of packets made
# by the real encoder in both wire versions, with the field values a correct
# dissection shows, and mutated packets with mr_wire_decode()'s verdict;
# tshark dissects them with tools/wireshark/metaroce.lua and check.py
# compares. Also: the dissector loads without a Lua error, follows its UDP
# port preference, and works as an installed plugin (no -X). Skips (exit 0)
# when tshark is not installed: `make deps` installs it.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
LUA=$TOP/tools/wireshark/metaroce.lua
CHECK=$TOP/tools/wireshark/test/check.py
PCAPGEN=$1
OUT=$2

echo "TAP version 13"
if ! command -v tshark >/dev/null; then
	echo "1..0 # SKIP tshark is not installed (make deps installs it)"
	exit 0
fi

rm -rf "$OUT"
mkdir -p "$OUT"
n=0
failed=0
# tap CMD...: CMD's "ok - NAME" / "not ok - NAME" lines, numbered; other
# lines as comments. Fails when CMD fails or printed a "not ok".
tap() {
	local out rc=0 line
	out=$("$@" 2>&1) || rc=$?
	while IFS= read -r line; do
		case $line in
		"ok - "* | "not ok - "*)
			n=$((n + 1))
			[[ $line == not* ]] && failed=$((failed + 1))
			echo "${line%% - *} $n - ${line#* - }"
			;;
		"") ;;
		"# "*) echo "$line" ;;
		*) echo "# $line" ;;
		esac
	done <<<"$out"
	if ((rc != 0)) && ! grep -q '^not ok' <<<"$out"; then
		n=$((n + 1))
		failed=$((failed + 1))
		echo "not ok $n - $* exited with $rc"
	fi
}
result() { # RC NAME
	n=$((n + 1))
	if (($1 == 0)); then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
	fi
}

tshark_version=$(tshark --version 2>/dev/null | head -n 1)
echo "# $tshark_version"
"$PCAPGEN" "$OUT" "$TOP/userspace/fuzz/corpus/wire" | sed 's/^/# /'

# dissect NAME [TSHARK OPTIONS...]: NAME.pcap -> NAME.pdml, NAME.err
dissect() {
	local name=$1
	shift
	tshark -n -r "$OUT/$name.pcap" "$@" -T pdml >"$OUT/$name.pdml" \
		2>"$OUT/$name.err"
}

# Lua errors go to stderr when the script does not load or a field is
# wrongly declared.
dissect decode -X "lua_script:$LUA"
lua_err=$(grep -i 'lua' "$OUT/decode.err" || true)
while IFS= read -r line; do
	[[ -z $line ]] || echo "# $line"
done <<<"$lua_err"
result "$([[ -z $lua_err ]]; echo $?)" "metaroce.lua loads without a Lua error"

tap python3 "$CHECK" decode "$OUT/decode.pdml" "$OUT/decode.expect"

dissect verdict -X "lua_script:$LUA"
tap python3 "$CHECK" verdict "$OUT/verdict.pdml" "$OUT/verdict.expect"

# The UDP port preference: port.pcap's two packets go to port 5000.
ops() {
	tshark -n -r "$OUT/port.pcap" "$@" -T fields -e metaroce.opcode \
		2>/dev/null | paste -sd' '
}
got=$(ops -X "lua_script:$LUA")
echo "# port 5000, default preference: '$got'"
result "$([[ -z ${got// /} ]]; echo $?)" "nothing dissected on another port by default"
got=$(ops -X "lua_script:$LUA" -o metaroce.udp_port:5000)
echo "# port 5000, -o metaroce.udp_port:5000: '$got'"
result "$([[ $got == "0x09 0x11" ]]; echo $?)" "the udp_port preference moves the dissector"

# As an installed plugin: in the personal Lua plugin folder of a scratch
# HOME, no -X.
home=$OUT/home
mkdir -p "$home"
plugdir=$(HOME=$home tshark -G folders 2>/dev/null |
	awk -F'\t+' '/^Personal Lua Plugins:/ { print $2 }')
if [[ -n $plugdir && $plugdir == "$home"/* ]]; then
	mkdir -p "$plugdir"
	cp "$LUA" "$plugdir/"
	got=$(HOME=$home tshark -n -r "$OUT/decode.pcap" -T fields \
		-e metaroce.opcode 2>/dev/null | grep -c . || true)
	want=$(cut -d' ' -f1 "$OUT/decode.expect" | sort -u | wc -l)
	echo "# installed in $plugdir: $got of $want frames dissected"
	result "$([[ $got == "$want" ]]; echo $?)" "works as an installed plugin"
else
	echo "# tshark -G folders names no personal Lua plugin folder: '$plugdir'"
	result 1 "works as an installed plugin"
fi

echo "1..$n"
((failed == 0))
