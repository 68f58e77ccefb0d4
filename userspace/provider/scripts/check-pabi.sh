#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Build-time checks that libmetaroce's own declarations of the private
# libibverbs ABI (pabi.h) match the libibverbs it was built against, at the
# symbol level. Prints TAP; exits non-zero if any check fails.
#
#   check-pabi.sh PROVIDER.so PABI_H LIBIBVERBS.so.1 "CPPFLAGS"
#
# CPPFLAGS are the provider's (they select pabi.h's generation, see there):
# the private ABI version and the ops table are read from pabi.h as the
# compiler sees it with them. The struct layouts are checked by static
# asserts (pabi.h) and by tests/pabi_probe.c, which drives the real library.

set -euo pipefail

if [[ $# -ne 4 ]]; then
	echo "usage: $0 PROVIDER.so PABI_H LIBIBVERBS.so.1 CPPFLAGS" >&2
	exit 2
fi
provider=$1
pabi_h=$2
libibverbs=$3
cppflags=$4

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# pabi.h's macros and declarations for this generation.
echo '#include "pabi.h"' >"$tmp/decls.c"
# shellcheck disable=SC2086 # CPPFLAGS is a list of words
gcc $cppflags -I"$(dirname "$pabi_h")" -dM -E "$tmp/decls.c" >"$tmp/macros"
macro() { # NAME: its value, quotes and parentheses removed
	sed -n "s/^#define $1 //p" "$tmp/macros" | tr -d '"()'
}
PABI_VERSION=IBVERBS_PRIVATE_$(macro MRV_PABI)
NUM_CONTEXT_OPS=$(macro MRV_PABI_NUM_CONTEXT_OPS)
GEN=$(macro MRV_PABI_GEN)

n=0
failed=0
ok() {
	n=$((n + 1))
	echo "ok $n - $1"
}
not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
}
check() {	# check DESCRIPTION COMMAND...
	local desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}

for f in "$provider" "$pabi_h" "$libibverbs"; do
	if [[ ! -r $f ]]; then
		echo "1..0 # SKIP cannot read $f"
		echo "Bail out! missing input $f"
		exit 1
	fi
done

# Symbols libibverbs defines, as "name@VERSION" (default or not).
readelf --dyn-syms -W "$libibverbs" |
	awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && $8 ~ /@/ { sub(/@@/, "@", $8); print $8 }' |
	sort -u >"$tmp/lib-defined"

# Undefined symbols of the provider: "name@VERSION" or "name BINDING".
readelf --dyn-syms -W "$provider" |
	awk '$1 ~ /^[0-9]+:$/ && $7 == "UND" && $8 != "" { print $8, $5 }' | sort -u >"$tmp/prov-undef"
# The ones that must resolve in libibverbs, or are unversioned but required.
awk '$1 ~ /@IBVERBS_/ { print $1 } $1 !~ /@/ && $2 != "WEAK" { print $1 }' \
	"$tmp/prov-undef" >"$tmp/prov-verbs"

# Symbols the provider itself exports (the version node's marker excepted).
readelf --dyn-syms -W "$provider" |
	awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && $5 != "LOCAL" && $8 != "" &&
	     !($4 == "OBJECT" && $7 == "ABS") { print $8 }' >"$tmp/prov-exports"

# Function declarations of pabi.h, taken from the compiler itself (GCC's
# -aux-info lists every prototype with the file it came from).
# shellcheck disable=SC2086 # CPPFLAGS is a list of words
gcc $cppflags -I"$(dirname "$pabi_h")" -fsyntax-only \
	-aux-info "$tmp/aux" "$tmp/decls.c"
grep -F "$(basename "$pabi_h"):" "$tmp/aux" | grep -F ' extern ' |
	sed -E 's/^.*[ *]([A-Za-z_][A-Za-z0-9_]*) \(.*$/\1/' |
	sort -u >"$tmp/pabi-decls"

release=$(basename "$(readlink -f "$libibverbs")")
echo "# provider:   $provider"
echo "# libibverbs: $libibverbs ($release)"
echo "# pabi.h:     generation $GEN, $PABI_VERSION, $NUM_CONTEXT_OPS ops"

ndecls=$(wc -l <"$tmp/pabi-decls")
nverbs=$(wc -l <"$tmp/prov-verbs")
nexports=$(wc -l <"$tmp/prov-exports")
echo "1..$((5 + 2 * ndecls + nverbs))"

check "libibverbs defines version $PABI_VERSION" \
	grep -qx "$PABI_VERSION" <(readelf -V "$libibverbs" |
		awk '/Version definition/ { d = 1 } /Version needs/ { d = 0 }
		     d && /Name:/ { print $NF }')

check "provider needs libibverbs.so.1" \
	grep -q 'Shared library: \[libibverbs\.so\.1\]' \
	<(readelf -d "$provider")

check "provider exports no symbols ($nexports found)" \
	test "$nexports" -eq 0

# The provider may only bind to symbol versions the library defines.
while read -r sym; do
	check "libibverbs defines $sym (used by the provider)" \
		grep -qxF "$sym" "$tmp/lib-defined"
done <"$tmp/prov-verbs"

# Every private function we declare must exist at exactly PABI_VERSION, and
# the provider must use it (pabi.h declares only what the provider needs),
# bound to that version.
while read -r fn; do
	check "libibverbs exports $fn@$PABI_VERSION" \
		grep -qxF "$fn@$PABI_VERSION" "$tmp/lib-defined"
	check "provider uses $fn@$PABI_VERSION" \
		grep -qxF "$fn@$PABI_VERSION" "$tmp/prov-verbs"
done <"$tmp/pabi-decls"

# libibverbs copies ops by name into its own table, so our member order must
# be upstream's, which is kept sorted by name. The table as compiled for
# this generation: pabi.h preprocessed.
# shellcheck disable=SC2086 # CPPFLAGS is a list of words
gcc $cppflags -I"$(dirname "$pabi_h")" -E -P "$tmp/decls.c" |
	awk '/^struct verbs_context_ops \{/ { in_ops = 1; next }
	     in_ops && /^\};/ { in_ops = 0 }
	     in_ops { while (match($0, /\(\*[a-z_0-9]+\)/)) {
			print substr($0, RSTART + 2, RLENGTH - 3)
			$0 = substr($0, RSTART + RLENGTH) } }' >"$tmp/ops"
check "verbs_context_ops members are sorted by name" \
	sort -c "$tmp/ops"
check "verbs_context_ops has $NUM_CONTEXT_OPS members ($(wc -l <"$tmp/ops") found)" \
	test "$(wc -l <"$tmp/ops")" -eq "$NUM_CONTEXT_OPS"

if [[ $failed -ne 0 ]]; then
	echo "# $failed of $n checks failed"
	exit 1
fi
