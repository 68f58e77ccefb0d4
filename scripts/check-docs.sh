#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/check-docs.sh: what Documentation/ states of the code, checked
# against the code (TAP), so that a change to one without the other fails:
#   - every entry of drivers/metaroce/tunables.h is read by
#     tunables-list.sh (which the other checks and the kselftests use);
#   - config.c declares a module parameter for each, in the same order;
#   - the admin guide's table of transport tunables has a row for each
#     tunable, with its default, and no row for anything else;
#   - engine.rst's table of source files names each file of the engine
#     (drivers/metaroce/core/*.[ch]) and no file that does not exist;
#   - every Documentation/*.rst is valid reStructuredText (docutils: no
#     error, such as a table whose text runs into a column's margin).
# The sizes of engine.rst's memory table are checked by the engine's unit
# tests (userspace/tests/test_docs.c), the man page by check-man.sh.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
H=$TOP/drivers/metaroce/tunables.h
GUIDE=${1:-$TOP/Documentation/admin-guide.rst}

# shellcheck source=tap.sh
. "$TOP/scripts/tap.sh"

echo "TAP version 13"
mapfile -t list < <("$TOP/scripts/tunables-list.sh" "$H")
entries=$(grep -cE '^MR_TUNABLE\(' "$H")
result "$((entries != ${#list[@]} || entries == 0))" \
	"tunables-list.sh reads all $entries entries of tunables.h" \
	"it read ${#list[@]}"

# config.c's module parameters: one MR_TUNABLE_PARAM() per tunable, in order.
params=$(sed -nE 's/^MR_TUNABLE_PARAM\(([a-z0-9_]+),.*/\1/p' \
	"$TOP/drivers/metaroce/config.c" | paste -sd' ')
want=$(printf '%s\n' "${list[@]%% *}" | paste -sd' ')
result "$([[ $params == "$want" ]]; echo $?)" \
	"config.c: a module parameter for each tunable, in the order of tunables.h" \
	"config.c: $params"

# The rows of the table whose header is "file  default  meaning": the
# first two words of each line that starts with ``name``.
rows=$(awk '
	/^=+ +=+ +=+/ { if (in_table) { bar++ } ; next }
	/^file +default +meaning/ { in_table = 1; bar = 0; next }
	in_table && bar >= 2 { exit }
	in_table && /^``[a-z0-9_]+``/ { gsub(/`/, "", $1); print $1, $2 }
' "$GUIDE")
wrong=()
for e in "${list[@]}"; do
	read -r name _ def <<<"$e"
	got=$(awk -v k="$name" '$1 == k { print $2 }' <<<"$rows")
	[[ $got == "$def" ]] || wrong+=("$name: ${got:-no row} (tunables.h: $def)")
done
extra=$(awk '{ print $1 }' <<<"$rows" | grep -vxF -f <(printf '%s\n' "${list[@]%% *}") || true)
[[ -z $extra ]] || wrong+=("rows for no tunable: $(echo $extra)")
result "$((${#wrong[@]} > 0))" \
	"admin guide's tunables table: ${#list[@]} rows, the defaults of tunables.h" \
	"$(printf '%s; ' "${wrong[@]}")"

# engine.rst, section 2: "* - ``drivers/metaroce/core/FILE``" rows.
ENGINE=${2:-$TOP/Documentation/engine.rst}
listed=$(sed -nE 's|^ +\* - ``(drivers/metaroce/core/[^`]+)``$|\1|p' "$ENGINE" | sort)
present=$(cd "$TOP" && ls drivers/metaroce/core/*.[ch] | sort)
diffs=$(diff <(echo "$listed") <(echo "$present") | sed -nE \
	-e 's|^< (.*)|\1 listed, not in the tree;|p' \
	-e 's|^> (.*)|\1 not listed;|p' | paste -sd' ' || true)
result "$([[ -z $diffs ]]; echo $?)" \
	"engine.rst lists the $(wc -l <<<"$present") source files of the engine" \
	"$diffs"

# reStructuredText that does not parse renders as garbage, silently. The
# Debian python3-docutils of make deps, whatever python3 PATH finds first.
bad=()
for f in "$TOP"/Documentation/*.rst; do
	out=$(/usr/bin/python3 -m docutils --report=3 --halt=5 "$f" /dev/null 2>&1) ||
		bad+=("${f##*/}: docutils failed")
	[[ -z $out ]] || bad+=("$(head -n 1 <<<"$out")")
done
result "$((${#bad[@]} > 0))" \
	"every Documentation/*.rst parses as reStructuredText without an error" \
	"$(printf '%s; ' "${bad[@]}")"

echo "1..$n"
((failed == 0))
