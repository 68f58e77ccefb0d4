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

# mr_backlog_drops: packets the kernel dropped so far because a CPU's
# input backlog was full (netdev_max_backlog; the second column of
# /proc/net/softnet_stat, summed over CPUs). veth delivers through that
# backlog, so a rise means the host's CPUs, not the transport, lost them.
mr_backlog_drops() {
	local f sum=0
	while read -ra f; do
		sum=$((sum + 16#${f[1]}))
	done </proc/net/softnet_stat
	echo "$sum"
}

# mr_result KEY=VALUE...: hands figures the test measured to a benchmark
# (selftests/bench/multiplane.sh) without it repeating the test's logic.
# When MR_RESULTS names a directory, appends one line "test=PROGRAM
# sub=SUBTEST KEY=VALUE..." to $MR_RESULTS/results.txt (PROGRAM: the
# script's name without .sh, or MR_RESULT_PROG); does nothing otherwise.
# Values carry no spaces (lists are comma-separated).
mr_result() {
	[[ -n ${MR_RESULTS:-} ]] || return 0
	local prog=${MR_RESULT_PROG:-$(basename "$0" .sh)}
	echo "test=$prog sub=${_mr_subtest:-setup} $*" >>"$MR_RESULTS/results.txt"
}

# mr_result_file KEY FILE: with MR_RESULTS set, copies FILE (e.g. a sampler's
# output) under $MR_RESULTS/files/ and records KEY=<its path there>.
mr_result_file() {
	[[ -n ${MR_RESULTS:-} && -f $2 ]] || return 0
	local prog=${MR_RESULT_PROG:-$(basename "$0" .sh)} f
	f=files/$prog.${_mr_subtest:-setup}.$1.${EPOCHREALTIME/./}
	mkdir -p "$MR_RESULTS/files"
	cp "$2" "$MR_RESULTS/$f"
	mr_result "$1=$f"
}

# mr_run NAME FUNCTION [ARGS...]: one subtest, one TAP line. When
# MR_TEST_ONLY (space-separated subtest names) is set, others do not run.
mr_run() {
	local name=$1 rc
	shift
	[[ -z ${MR_TEST_ONLY:-} || " $MR_TEST_ONLY " == *" $name "* ]] || return 0
	_mr_n=$((_mr_n + 1))
	_mr_subtest=$name
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

# mr_setup NAME FUNCTION [ARGS...]: shared set-up for the subtests that
# follow, e.g. one topology for a program whose subtests all use it
# unchanged. Runs in the program's own shell (what it sets is seen by the
# subtests) and prints one TAP line; what it mr_defer-s runs when the
# program exits. If it fails, the program ends there, failed. Not counted
# as a passed subtest, so that a program whose real subtests all skip
# still skips. A later set-up (for the subtests after it) builds on the
# earlier ones: the program's exit undoes them all, the last first.
mr_setup() {
	local name=$1
	shift
	_mr_n=$((_mr_n + 1))
	_mr_setup_name=$name
	_mr_setup_log=$(mktemp)
	_mr_defers=("${_mr_defers[@]}")
	trap '_mr_setup_exit $?' EXIT
	# The program's output, for _mr_setup_exit: a set-up that fails
	# exits with its own output still going to the log.
	exec {_mr_setup_out}>&1
	_mr_in_setup=1
	"$@" >"$_mr_setup_log" 2>&1
	_mr_in_setup=0
	exec {_mr_setup_out}>&-
	sed 's/^/# /' "$_mr_setup_log"
	echo "ok $_mr_n $name"
}

_mr_setup_exit() {
	local rc=$1
	if ((${_mr_in_setup:-0})); then
		{
			sed 's/^/# /' "$_mr_setup_log"
			echo "not ok $_mr_n $_mr_setup_name"
			echo "1..$_mr_n"
		} >&"$_mr_setup_out"
		rc=$KSFT_FAIL
	fi
	rm -f "$_mr_setup_log"
	(exit "$rc")
	_mr_run_defers
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

# mr_secs SECONDS: SECONDS times MR_TEST_TIMEOUT_SCALE (run_tests.sh: a slow
# kernel, make check-debug's, multiplies every limit by it), for the hard
# limits (timeout(1)) a program puts on the tools it runs.
mr_secs() { echo $(($1 * ${MR_TEST_TIMEOUT_SCALE:-1})); }

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
# rmmod, not modprobe -r: that also removes the modules it depends on and
# fails when another user (rdma_ucm...) holds one of them.
mr_mod_unload() {
	mr_mod_loaded || return 0
	rmmod "$MR_MOD" && wait_for 10 mr_mod_gone
}
mr_mod_gone() { ! mr_mod_loaded; }

# mr_kmem [--no-vmap-area]: the kernel's unreclaimable memory
# (SUnreclaim plus VmallocUsed, KiB): what kernel objects, QPs and
# connections among them, take, and what leaked objects stay counted in.
# It is read once the caches have given back what they only keep for
# reuse, which is not a test's to count (read after drop_caches alone,
# 0.8-2.5 MiB more than the starting level was left after scale.sh's 4000
# QPs, nearly all of it in such caches):
# - reclaimable caches (dentries, inodes) are dropped, and left out;
# - every slab cache frees its empty slabs and flushes its per-CPU
#   partial lists (/sys/kernel/slab/*/shrink): unreclaimable slab counts
#   whole slabs, and a teardown leaves many slabs of the kmalloc and
#   skbuff caches empty or nearly so (1.5 MiB after 4000 QPs);
# - with --no-vmap-area, the vmap_area cache is left out: a freed vmalloc
#   area's pages are freed (VmallocUsed) at once, but its vmap_area waits
#   for the next lazy TLB purge, which comes only once lazy_max_pages of
#   address space (32 MiB times fls(CPUs): 64 MiB on two) has been freed:
#   after 8000 QPs, about 8000 of them (560 KiB). A leaked vmalloc area
#   still counts with its pages.
mr_kmem() {
	local f files=(/proc/meminfo)
	[[ ${1:-} != --no-vmap-area ]] || files+=(/proc/slabinfo)
	sync
	echo 3 >/proc/sys/vm/drop_caches
	for f in /sys/kernel/slab/*/shrink; do
		echo 1 >"$f" 2>/dev/null || true
	done
	awk -v kib="$(($(getconf PAGESIZE) / 1024))" '
		FILENAME == "/proc/meminfo" && /^(SUnreclaim|VmallocUsed):/ {
			s += $2
		}
		# name active num objsize objperslab pagesperslab ... num_slabs
		FILENAME == "/proc/slabinfo" && $1 == "vmap_area" {
			s -= $15 * $6 * kib
		}
		END { print s }' "${files[@]}"
}

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
	mr_stats "$1" | awk '
		$1 == "rx_packets" { p = $2; has = 1 }
		$1 ~ /^rx|rcv|recv/ { n += $2 }
		END { print has ? p : n + 0 }'
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

# --- two hosts and server/client pairs ----------------------------------------------

# The data-path tests' topology: two "hosts", network namespaces A and B,
# joined by a veth pair, one device on each end. mr_two_hosts also sets
# MR_A_GIDX and MR_B_GIDX, the devices' GID indexes of those addresses.
# shellcheck disable=SC2034 # used by the test programs
MR_A_NS=mrdpa MR_A_IF=mrdpa0 MR_A_IP=10.9.2.1 MR_A_DEV=mrdpa_dev
MR_B_NS=mrdpb MR_B_IF=mrdpb0 MR_B_IP=10.9.2.2 MR_B_DEV=mrdpb_dev

# mr_gid_index DEV ADDR: index of DEV's port-1 RoCE v2 GID for ADDR, an
# IPv4 address (GID ::ffff:ADDR) or an IPv6 one; non-zero status when it
# has none.
mr_gid_index() {
	local port=/sys/class/infiniband/$1/ports/1 want f t a b c d
	if [[ $2 == *:* ]]; then
		want=$(python3 -c 'import ipaddress, sys
print(ipaddress.ip_address(sys.argv[1]).exploded)' "$2") || return 1
	else
		IFS=. read -r a b c d <<<"$2"
		want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
			"$a" "$b" "$c" "$d")
	fi
	# One grep over the table (a process per entry is slow under TCG).
	for f in $(grep -lx -- "$want" "$port"/gids/* 2>/dev/null); do
		read -r t <"$port/gid_attrs/types/${f##*/}" 2>/dev/null ||
			continue
		[[ $t == "RoCE v2" ]] || continue
		echo "${f##*/}"
		return 0
	done
	return 1
}

# mr_wait_dev DEV ADDR [VAR]: waits until DEV has a RoCE v2 GID for ADDR
# (mr_gid_index) and its port is ACTIVE, 10 s for each, else fails the
# subtest; sets VAR (a variable or an array element), when given, to the
# GID's index. Every topology of the tests waits for its devices so.
mr_wait_dev() {
	assert_wait "$1 has a RoCE v2 GID for $2" 10 mr_gid_index "$1" "$2"
	[[ -z ${3:-} ]] || printf -v "$3" %s "$(mr_gid_index "$1" "$2")"
	assert_wait "port of $1 ACTIVE" 10 mr_port_active "$1"
}
mr_port_active() { [[ $(mr_port_state "$1") == ACTIVE ]]; }

# mr_two_hosts: builds the topology above (deleted at the end of the
# subtest), waits for the devices (mr_wait_dev) and sets MR_A_GIDX /
# MR_B_GIDX. Also makes the temporary directory $MR_TMP (see mr_tmpdir).
mr_two_hosts() {
	mr_tmpdir
	mr_debugfs
	mr_netns "$MR_A_NS" "$MR_B_NS"
	mr_veth "$MR_A_IF" "$MR_B_IF" "$MR_A_NS" "$MR_B_NS"
	ip -n "$MR_A_NS" addr add "$MR_A_IP/24" dev "$MR_A_IF"
	ip -n "$MR_B_NS" addr add "$MR_B_IP/24" dev "$MR_B_IF"
	mr_link_add "$MR_A_DEV" "$MR_A_IF" "$MR_A_NS"
	mr_link_add "$MR_B_DEV" "$MR_B_IF" "$MR_B_NS"
	# First of all cleanups: an application left running would hold its
	# device, and deleting a device waits for its applications.
	mr_defer mr_netns_kill "$MR_A_NS" "$MR_B_NS"
	mr_wait_dev "$MR_A_DEV" "$MR_A_IP" MR_A_GIDX
	mr_wait_dev "$MR_B_DEV" "$MR_B_IP" MR_B_GIDX
}

# mr_netns_kill NS...: ends every process running in the namespaces (the
# test's own servers and clients), waiting up to 10 s for them.
mr_netns_kill() {
	local ns pids=()
	for ns; do
		read -ra pids <<<"$(ip netns pids "$ns" 2>/dev/null | paste -sd' ')"
		((${#pids[@]})) || continue
		kill "${pids[@]}" 2>/dev/null || true
		wait_for 10 _mr_netns_empty "$ns" && continue
		read -ra pids <<<"$(ip netns pids "$ns" 2>/dev/null | paste -sd' ')"
		kill -KILL "${pids[@]}" 2>/dev/null || true
	done
}
_mr_netns_empty() { [[ -z $(ip netns pids "$1" 2>/dev/null) ]]; }

# mr_tmpdir: a temporary directory $MR_TMP for this subtest, removed at its end.
mr_tmpdir() {
	[[ -n ${MR_TMP:-} ]] && return 0
	MR_TMP=$(mktemp -d /tmp/mr-test.XXXXXX)
	mr_defer rm -rf "$MR_TMP"
}

# mr_netem NS IF ARGS...: replaces IF's root qdisc in NS with netem ARGS
# (with room for 10000 packets, so that netem itself drops nothing).
mr_netem() {
	local netns=$1 dev=$2
	shift 2
	assert_ok "tc qdisc netem $* on $dev" ip netns exec "$netns" \
		tc qdisc replace dev "$dev" root netem limit 10000 "$@"
}

# mr_tcp_listening NS PORT: something in NS listens on TCP PORT.
mr_tcp_listening() {
	[[ -n $(ip netns exec "$1" ss -Htln "sport = :$2") ]]
}

# mr_cm_listening PORT: an rdma_cm ID listens on PORT (any port space).
mr_cm_listening() {
	rdma resource show cm_id 2>/dev/null |
		grep -qE "state LISTEN .*src-addr [^ ]*:$1( |\$)"
}

# mr_pair NAME READY SERVER_CMD... -- CLIENT_CMD...
#
# Runs SERVER_CMD in $MR_B_NS in the background, waits until it is READY,
# then runs CLIENT_CMD in $MR_A_NS. READY is "tcp:PORT" (listens on TCP
# PORT), "cm:PORT" (has an rdma_cm listener on PORT) or "now". Each side is
# bounded by MR_PAIR_TIMEOUT seconds (default 120). Their output goes to
# $MR_TMP/NAME.server and $MR_TMP/NAME.client, their exit statuses to
# MR_PAIR_SRV_RC and MR_PAIR_CLI_RC. Fails the subtest, showing both
# outputs, unless both sides exit 0; a server still running 15 s after its
# client failed is killed.
#
# MR_PAIR_RETRY=REGEX: when the pair failed and one side printed a line
# matching REGEX (a known flaw of the tool, not of the device), it is run
# again, up to MR_PAIR_TRIES times in all (default 3), and each retry is
# logged. MR_PAIR_RETRY_CRASH=1: a side killed by SIGSEGV, SIGBUS or
# SIGABRT is run again too, and what the kernel logged of the crash is
# shown.
mr_pair() {
	local name=$1 ready=$2 srv=() cli=() ready_cmd=() pid wpid t0=$SECONDS
	local limit=${MR_PAIR_TIMEOUT:-120} try why tries=${MR_PAIR_TRIES:-3}
	shift 2
	while [[ $1 != -- ]]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	case $ready in
	tcp:*) ready_cmd=(mr_tcp_listening "$MR_B_NS" "${ready#tcp:}") ;;
	cm:*) ready_cmd=(mr_cm_listening "${ready#cm:}") ;;
	now) ready_cmd=(true) ;;
	*) mr_fail "mr_pair: bad READY '$ready'" ;;
	esac
	mr_tmpdir
	for ((try = 1; try <= tries; try++)); do
		MR_PAIR_SRV_RC=0 MR_PAIR_CLI_RC=0
		ip netns exec "$MR_B_NS" timeout -k 5 "$(mr_secs "$limit")" "${srv[@]}" \
			>"$MR_TMP/$name.server" 2>&1 </dev/null &
		pid=$!
		mr_defer kill "$pid"
		wait_for 60 _mr_ready_or_gone "$pid" "${ready_cmd[@]}" || true
		if ! "${ready_cmd[@]}" || ! kill -0 "$pid" 2>/dev/null; then
			kill "$pid" 2>/dev/null || true
			wait "$pid" || MR_PAIR_SRV_RC=$?
			_mr_pair_show "$name"
			mr_fail "$name: the server was not ready ($ready) after" \
				"$((SECONDS - t0))s; exit status $MR_PAIR_SRV_RC"
		fi
		rm -f "$MR_TMP/$name.stuck"
		_mr_pair_watch "$name" "$(mr_secs "$limit")" "${srv[0]##*/}" \
			"${cli[0]##*/}" &
		wpid=$!
		ip netns exec "$MR_A_NS" timeout -k 5 "$(mr_secs "$limit")" "${cli[@]}" \
			>"$MR_TMP/$name.client" 2>&1 </dev/null || MR_PAIR_CLI_RC=$?
		if ((MR_PAIR_CLI_RC != 0)) && ! wait_for 15 _mr_gone "$pid"; then
			kill "$pid" 2>/dev/null || true
		fi
		wait "$pid" || MR_PAIR_SRV_RC=$?
		kill "$wpid" 2>/dev/null || true
		wait "$wpid" 2>/dev/null || true
		((MR_PAIR_SRV_RC != 0 || MR_PAIR_CLI_RC != 0)) || break
		((try < tries)) || break
		why=$(_mr_pair_crash) ||
			why=$([[ -n ${MR_PAIR_RETRY:-} ]] && grep -hE \
				"$MR_PAIR_RETRY" "$MR_TMP/$name.client" \
				"$MR_TMP/$name.server" | head -n 1) || break
		mr_log "$name: failed (server $MR_PAIR_SRV_RC, client" \
			"$MR_PAIR_CLI_RC) after '$why': again"
	done
	if ((MR_PAIR_SRV_RC != 0 || MR_PAIR_CLI_RC != 0)); then
		_mr_pair_show "$name"
		mr_fail "$name: server exited with $MR_PAIR_SRV_RC, client with" \
			"$MR_PAIR_CLI_RC (124: timed out after ${limit}s)"
	fi
	mr_log "$name: both sides exited 0 in $((SECONDS - t0))s"
}

# _mr_pair_crash: with MR_PAIR_RETRY_CRASH set, a side of the pair was
# killed by SIGSEGV, SIGBUS or SIGABRT (a crash of the user-space tool);
# prints what the kernel logged of it.
_mr_pair_crash() {
	local rc
	[[ -n ${MR_PAIR_RETRY_CRASH:-} ]] || return 1
	for rc in "$MR_PAIR_CLI_RC" "$MR_PAIR_SRV_RC"; do
		case $rc in
		134 | 135 | 139)
			echo "signal $((rc - 128)); kernel:" \
				"$(dmesg | grep -E 'segfault at|traps:' | tail -n 1)"
			return 0
			;;
		esac
	done
	return 1
}

# _mr_pair_watch NAME SECS COMM...: a pair still running 3 s before its
# time limit (SECS) is about to be killed: record where the processes named
# COMM are (state, wait channel and kernel stack of each thread) and the
# devices' counters and peers, in $MR_TMP/NAME.stuck, which _mr_pair_show
# prints. Once the pair is killed, its connections may be gone.
_mr_pair_watch() {
	local name=$1 secs=$2 comm p t s
	shift 2
	# Killed when the pair ends: its sleep goes with it.
	sleep "$((secs > 5 ? secs - 3 : secs))" &
	s=$!
	trap 'kill "$s" 2>/dev/null; exit 0' TERM
	wait "$s"
	trap - TERM
	{
		echo "--- $name: still running 3 s before its ${secs}s limit:"
		for comm; do
			for p in $(pgrep -x "${comm:0:15}"); do
				echo "pid $p ($comm): $(grep '^State:' "/proc/$p/status" 2>/dev/null)"
				for t in /proc/"$p"/task/*; do
					echo "  thread ${t##*/}: wchan $(cat "$t/wchan" 2>/dev/null)"
					sed 's/^/    /' "$t/stack" 2>/dev/null
				done
			done
		done
		mr_diag "$MR_A_DEV" "$MR_B_DEV"
	} >"$MR_TMP/$name.stuck" 2>&1
}

# _mr_ready_or_gone PID CMD...: CMD succeeds, or PID has ended.
_mr_ready_or_gone() {
	local pid=$1
	shift
	"$@" || ! kill -0 "$pid" 2>/dev/null
}
_mr_gone() { ! kill -0 "$1" 2>/dev/null; }

_mr_pair_show() {
	local side
	for side in server client; do
		[[ -f $MR_TMP/$1.$side ]] || continue
		echo "--- $1 $side (last 40 lines):"
		tail -n 40 "$MR_TMP/$1.$side" | cut -c 1-200
	done
	[[ ! -s $MR_TMP/$1.stuck ]] || cut -c 1-200 "$MR_TMP/$1.stuck"
	mr_diag "$MR_A_DEV" "$MR_B_DEV"
}

# mr_diag DEV...: what helps to understand a failure: the devices' non-zero
# counters but the per-path ones, and their peers (debugfs).
mr_diag() {
	local dev
	for dev; do
		echo "--- $dev counters (non-zero):"
		mr_stats "$dev" 2>/dev/null | awk '$2 != 0 && $1 !~ /^path/' |
			paste -sd' ' | fold -s -w 100
		if [[ -r /sys/kernel/debug/metaroce/$dev/peers ]]; then
			echo "--- $dev peers:"
			cat "/sys/kernel/debug/metaroce/$dev/peers"
		fi
	done
}

# mr_debugfs: mounts debugfs (for /sys/kernel/debug/metaroce) if needed.
mr_debugfs() {
	mountpoint -q /sys/kernel/debug ||
		mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
}

# --- counters ----------------------------------------------------------------------

# mr_stats DEV [NS]: DEV's port counters, one "name value" per line.
# iproute2 prints "link DEV/1 NAME VALUE NAME VALUE ..." on one line (6.1)
# or one "NAME VALUE" per line after the first (6.15 on): the same words.
mr_stats() {
	local ns=()
	[[ -z ${2:-} ]] || ns=(ip netns exec "$2")
	"${ns[@]}" rdma statistic show link "$1/1" | tr '\n' ' ' |
		awk '{ for (i = 3; i < NF; i += 2) print $i, $(i + 1) }'
}

# mr_stat FILE NAME: the value of counter NAME in a mr_stats snapshot
# (fails the subtest when the counter does not exist).
mr_stat() {
	local v
	v=$(awk -v k="$2" '$1 == k { print $2; exit }' "$1")
	[[ -n $v ]] || mr_fail "no counter '$2' in $1"
	echo "$v"
}

# mr_stat_moved BEFORE AFTER NAME...: " NAME+DELTA" for each counter that
# grew between the two snapshots; nothing if none did. Fails (status 1)
# when a counter is missing, so that moved=$(mr_stat_moved ...) fails the
# subtest: mr_fail in a command substitution only ends that subshell.
mr_stat_moved() {
	local before=$1 after=$2 c d
	shift 2
	for c; do
		d=$(mr_stat_delta "$before" "$after" "$c") || return 1
		((d == 0)) || printf ' %s+%s' "$c" "$d"
	done
}

# mr_done_since BEFORE N: device A completed at least N more messages
# (messages_done_tx) than in the mr_stats snapshot BEFORE.
mr_done_since() {
	mr_stats "$MR_A_DEV" >"$1.now"
	(($(mr_stat_delta "$1" "$1.now" messages_done_tx) >= $2))
}

# mr_stat_delta BEFORE AFTER NAME: how much counter NAME grew.
mr_stat_delta() {
	local a b
	a=$(mr_stat "$1" "$3") && b=$(mr_stat "$2" "$3") && echo $((b - a))
}
