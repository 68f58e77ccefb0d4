# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Shared helpers of the MetaRoCE kselftests. A test program sources this file,
# defines one function per subtest and calls `mr_run NAME FUNCTION` for each,
# then `mr_done`. Each subtest runs in a subshell with errexit: the first
# failed assertion ends it (printing expected vs actual) and its deferred
# cleanups run whatever happened. The program prints TAP and exits 0 (all
# passed), 1 (something failed) or 4 (KSFT_SKIP: nothing could run).
#
# MR_TEST_LINK_TYPE / MR_TEST_MODULE select another rdma link type (e.g.
# rxe / rdma_rxe) to exercise the generic tests against a known-good driver.

set -euo pipefail

readonly KSFT_PASS=0 KSFT_FAIL=1 KSFT_SKIP=4

MR_TYPE=${MR_TEST_LINK_TYPE:-metaroce}
MR_MOD=${MR_TEST_MODULE:-metaroce}
MR_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

_mr_n=0 _mr_fail=0 _mr_skip=0 _mr_pass=0
echo "TAP version 13"

# --- results -----------------------------------------------------------------

# Inside a subtest everything printed becomes a TAP comment ("# ...").
mr_log() { echo "$*"; }

# Ends the current subtest as failed / skipped.
mr_fail() { echo "FAIL: $*" >&2; exit "$KSFT_FAIL"; }
mr_skip() { echo "$*" >"$_mr_skipfile"; echo "SKIP: $*"; exit "$KSFT_SKIP"; }

# Ends the whole program as skipped (before any subtest ran).
mr_skip_all() {
	echo "1..0 # SKIP $*"
	exit "$KSFT_SKIP"
}

# mr_run NAME FUNCTION [ARGS...]: one subtest, one TAP line. When
# MR_TEST_ONLY (space-separated subtest names) is set, others do not run.
mr_run() {
	local name=$1 rc
	shift
	[[ -z ${MR_TEST_ONLY:-} || " $MR_TEST_ONLY " == *" $name "* ]] || return 0
	_mr_n=$((_mr_n + 1))
	_mr_skipfile=$(mktemp)
	set +e
	(
		set -e
		_mr_defers=()
		trap _mr_run_defers EXIT
		"$@"
	) 2>&1 | sed -u 's/^/# /' # keep the subtest's chatter TAP-neutral
	rc=${PIPESTATUS[0]}
	set -e
	case $rc in
	0) echo "ok $_mr_n $name"; _mr_pass=$((_mr_pass + 1)) ;;
	"$KSFT_SKIP")
		echo "ok $_mr_n $name # SKIP $(<"$_mr_skipfile")"
		_mr_skip=$((_mr_skip + 1))
		;;
	*) echo "not ok $_mr_n $name"; _mr_fail=$((_mr_fail + 1)) ;;
	esac
	rm -f "$_mr_skipfile"
}

# Prints the plan and the totals, exits with the program's verdict.
# Nothing passed (all skipped, or none selected by MR_TEST_ONLY) is a skip.
mr_done() {
	((_mr_n > 0)) || mr_skip_all "no subtest selected (MR_TEST_ONLY)"
	echo "1..$_mr_n"
	echo "# pass:$_mr_pass fail:$_mr_fail skip:$_mr_skip"
	((_mr_fail == 0)) || exit "$KSFT_FAIL"
	((_mr_pass > 0)) || exit "$KSFT_SKIP"
	exit "$KSFT_PASS"
}

# --- cleanup -------------------------------------------------------------------

# mr_defer CMD [ARGS...]: run at the end of the subtest, last deferred first,
# whether it passed or not. Cleanups are best effort: their errors (often
# "already gone") are ignored.
mr_defer() {
	_mr_defers+=("$(printf '%q ' "$@")")
}

_mr_run_defers() {
	local rc=$? i
	set +e
	for ((i = ${#_mr_defers[@]} - 1; i >= 0; i--)); do
		eval "${_mr_defers[i]}" >/dev/null 2>&1
	done
	exit "$rc"
}

# --- assertions ------------------------------------------------------------------

# assert_eq WHAT EXPECTED ACTUAL
assert_eq() {
	[[ $2 == "$3" ]] || mr_fail "$1: expected '$2', got '$3'"
}

assert_ne() {
	[[ $2 != "$3" ]] || mr_fail "$1: expected anything but '$2'"
}

# assert_match WHAT REGEX ACTUAL
assert_match() {
	[[ $3 =~ $2 ]] || mr_fail "$1: expected to match /$2/, got '$3'"
}

# assert_ok WHAT CMD...: CMD must succeed.
assert_ok() {
	local what=$1 out
	shift
	out=$("$@" 2>&1) || mr_fail "$what: '$*' failed: $out"
}

# assert_fails WHAT REGEX CMD...: CMD must fail and print something
# matching REGEX (case-insensitive) on stdout/stderr.
assert_fails() {
	local what=$1 re=$2 out
	shift 2
	if out=$("$@" 2>&1); then
		mr_fail "$what: '$*' succeeded, expected an error"
	fi
	shopt -s nocasematch
	[[ $out =~ $re ]] || {
		shopt -u nocasematch
		mr_fail "$what: '$*' failed with '$out', expected /$re/"
	}
	shopt -u nocasematch
}

# wait_for SECONDS CMD...: polls CMD every 0.1 s; non-zero on timeout.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || return 1
		sleep 0.1
	done
}

# assert_wait WHAT SECONDS CMD...
assert_wait() {
	local what=$1 t=$2
	shift 2
	wait_for "$t" "$@" || mr_fail "$what: '$*' still false after ${t}s"
}

# --- module --------------------------------------------------------------------

mr_mod_loaded() { [[ -d /sys/module/$MR_MOD ]]; }

# Skips the program when the module is not built for the running kernel.
mr_require_module() {
	[[ $(id -u) == 0 ]] || mr_skip_all "must run as root (use selftests/vm/run)"
	modinfo "$MR_MOD" >/dev/null 2>&1 ||
		mr_skip_all "module $MR_MOD is not built for $(uname -r) (make modules-vm)"
}

# Unloads the module (it must remove its devices itself); waits until gone.
mr_mod_unload() {
	mr_mod_loaded || return 0
	modprobe -r "$MR_MOD" && wait_for 10 mr_mod_gone
}
mr_mod_gone() { ! mr_mod_loaded; }

# --- devices and links -----------------------------------------------------------

mr_dev_exists() { [[ -e /sys/class/infiniband/$1 ]]; }
mr_dev_gone() { [[ ! -e /sys/class/infiniband/$1 ]]; }

# Names ibv_devices lists (the provider must match the device for that).
mr_ibv_devices() { ibv_devices 2>/dev/null | awk 'NR > 2 { print $1 }'; }
mr_ibv_has() { mr_ibv_devices | grep -qxF "$1"; }

# mr_port_state NAME: the sysfs port state ("ACTIVE", "DOWN", ...).
mr_port_state() {
	local s
	s=$(cat "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null) || return 0
	echo "${s#*: }"
}

# mr_link_add NAME NETDEV [NETNS]: adds a device and defers its deletion.
mr_link_add() {
	local ns=()
	[[ -z ${3:-} ]] || ns=(ip netns exec "$3")
	mr_defer "${ns[@]}" rdma link delete "$1"
	assert_ok "rdma link add $1" "${ns[@]}" rdma link add "$1" type "$MR_TYPE" netdev "$2"
}

# mr_devinfo NAME FIELD: first value of FIELD in `ibv_devinfo -v -d NAME`.
mr_devinfo() {
	ibv_devinfo -v -d "$1" 2>/dev/null |
		awk -v f="$2:" '$1 == f { $1 = ""; sub(/^ +/, ""); print; exit }'
}

# --- network -------------------------------------------------------------------

# mr_netns NAME...: creates namespaces (lo up), deferring their deletion.
mr_netns() {
	local ns
	for ns; do
		ip netns del "$ns" 2>/dev/null || true
		mr_defer ip netns del "$ns"
		ip netns add "$ns"
		ip -n "$ns" link set lo up
	done
}

# mr_veth A B [NS_A NS_B]: an up veth pair, ends optionally in namespaces.
mr_veth() {
	ip link del "$1" 2>/dev/null || true
	mr_defer ip link del "$1"
	ip link add "$1" type veth peer name "$2"
	if [[ -n ${3:-} ]]; then
		ip link set "$1" netns "$3"
		ip -n "$3" link set "$1" up
	else
		ip link set "$1" up
	fi
	if [[ -n ${4:-} ]]; then
		ip link set "$2" netns "$4"
		ip -n "$4" link set "$2" up
	else
		ip link set "$2" up
	fi
}

# MAC (aa:bb:cc:dd:ee:ff) -> modified EUI-64 as ibv_devinfo prints a GUID
# (a8bb:ccff:fedd:eeff): flip the universal/local bit, insert ff:fe.
mr_mac_to_guid() {
	local IFS=: b
	read -ra b <<<"$1"
	printf '%02x%s:%sff:fe%s:%s%s\n' $((0x${b[0]} ^ 2)) "${b[1]}" "${b[2]}" \
		"${b[3]}" "${b[4]}" "${b[5]}"
}

# mr_udp_port: the module's UDP port (its udp_port parameter when it has
# one, else the documented default; MR_TEST_UDP_PORT overrides).
mr_udp_port() {
	local p=/sys/module/$MR_MOD/parameters/udp_port
	if [[ -n ${MR_TEST_UDP_PORT:-} ]]; then
		echo "$MR_TEST_UDP_PORT"
	elif [[ -r $p ]]; then
		cat "$p"
	else
		mr_doc_value udp_port
	fi
}

# mr_udp_listening NS PORT: a UDP socket is bound to PORT in NS ("" = init).
mr_udp_listening() {
	local ns=()
	[[ -z $1 ]] || ns=(ip netns exec "$1")
	[[ -n $("${ns[@]}" ss -Hunl "sport = :$2") ]]
}

# mr_rx_count NAME: packets received by NAME's port: the documented
# rx_packets counter of `rdma statistic show link NAME/1` (for other drivers:
# the sum of the counters named rx*, *rcv*, *recv*).
mr_rx_count() {
	rdma statistic show link "$1/1" | awk '{
		for (i = 3; i < NF; i += 2) {
			if ($i == "rx_packets") { p = $(i + 1); has = 1 }
			if ($i ~ /^rx|rcv|recv/) n += $(i + 1)
		}
	} END { print has ? p : n + 0 }'
}

# --- documented values -------------------------------------------------------------

# mr_doc_value NAME: the value the module documents for NAME (a device limit
# as ibv_devinfo names it, e.g. max_qp; or mtu_overhead, netns_exclusive):
# from the table in Documentation/admin-guide.rst (the first line whose
# first two words, ignoring "|" and "`", are NAME VALUE), else from the
# module's limits header (#define METAROCE_<NAME> ...). Fails the subtest
# when neither has it.
mr_doc_value() { # NAME [ALIAS...]: aliases are tried when NAME is absent
	local doc=$MR_TOP/Documentation/admin-guide.rst v k
	for k; do
		# "1 TiB" means 2^40: binary units are expanded.
		v=$(awk -v k="$k" '{ gsub(/[|`]/, " ") } $1 == k && NF >= 2 {
			u = index("KMGT", substr($3, 1, 1))
			if ($2 ~ /^[0-9]+$/ && $3 ~ /^[KMGT]iB$/) printf "%.0f\n", $2 * 2 ^ (10 * u)
			else print $2
			exit }' "$doc" 2>/dev/null || true)
		[[ -n $v ]] || v=$(_mr_limits_h "METAROCE_${k^^}")
		[[ -z $v ]] || break
	done
	[[ -n $v ]] || mr_fail "$1 is documented neither in Documentation/admin-guide.rst" \
		"nor as METAROCE_${1^^} in drivers/metaroce/limits.h"
	echo "$v"
}

# _mr_limits_h MACRO: MACRO's value from limits.h, evaluated: numbers,
# BIT()/BIT_ULL(), other METAROCE_* macros and + - * << ( ).
_mr_limits_h() {
	local h=$MR_TOP/drivers/metaroce/limits.h e m
	e=$(sed -n "s/^#define[[:space:]]\+$1[[:space:]]\+//p" "$h" 2>/dev/null |
		sed 's|/\*.*||; s/[[:space:]]*$//')
	[[ -n $e ]] || return 0
	e=$(sed -E 's/BIT(_ULL)?\(([0-9]+)\)/(1 << \2)/g; s/([0-9]+)U?L{0,2}\b/\1/g' <<<"$e")
	# Longest names first: METAROCE_MAX_QP is a prefix of ..._QP_RD_ATOM.
	for m in $(grep -oE 'METAROCE_[A-Z0-9_]+' <<<"$e" |
		awk '{ print length($0), $0 }' | sort -rnu | cut -d' ' -f2); do
		e=${e//$m/($(_mr_limits_h "$m"))}
	done
	[[ $e =~ ^[0-9x()\ +*\<-]+$ ]] || return 0 # not plain arithmetic
	echo $((e))
}
