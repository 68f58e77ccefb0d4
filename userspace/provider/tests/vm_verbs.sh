#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# libmetaroce's verbs on live metaroce devices, inside the test VM (TAP):
#
#   selftests/vm/run -- userspace/provider/tests/vm_verbs.sh [SUBTEST...]
#
#   matching       libibverbs hands metaroce devices to libmetaroce
#                  whatever their names: foo (sysfs metaroce/abi_version
#                  1, listed by ibv_devices with its node GUID, its RoCE v2
#                  GID in ibv_devinfo) and bar, then foo renamed renamed0;
#                  tests/mr_verbs_test (device, port, GIDs, PDs, two
#                  contexts) passes on each; deleted, they are no longer
#                  listed
#   rxe_beside     an rxe device on the other end of foo's veth goes to
#                  rxe's provider (no metaroce/abi_version), foo stays with
#                  libmetaroce, ibv_devinfo works on both
#
# The other subtests run between two hosts, network namespaces mrva
# (10.77.0.1) and mrvb (10.77.0.2) joined by a veth pair, with a metaroce
# device on each end (mrva_dev, mrvb_dev):
#
#   objects        every verbs object and the errors of invalid calls
#                  (tests/verbs_objects.c), on one device
#   pair           RC SEND/RECV, RDMA WRITE/READ, atomics, SRQ, UD, events,
#                  the ibv_wr_* API, remote errors between the two hosts
#                  (tests/verbs_pair.c), data checked byte for byte; and
#                  the verbs' rules: a fenced WRITE after a 512 KiB READ
#                  carries the READ's data; 32 READs at max_rd_atomic 1
#                  (the responder, at 1 too, refuses any excess); only
#                  signaled WRITEs complete on a sq_sig_all=0 QP, all land;
#                  a CQ armed for solicited completions stays quiet for a
#                  plain SEND, wakes for a solicited one; RNR: rnr_retry 0
#                  fails (RNR_RETRY_EXC_ERR, QP in error, the rest flushed),
#                  rnr_retry 7 waits for a late receive (rnr_naks_rx/tx
#                  counted); an MR without remote write, read or atomic
#                  refuses that one (REM_ACCESS_ERR, nothing changed, the
#                  responder's QP in error with the access event, the
#                  requester's without); the SRQ's QP moved to the error
#                  state gets IBV_EVENT_QP_LAST_WQE_REACHED; a CQ of 4
#                  that 8 WRITEs overflow gets IBV_EVENT_CQ_ERR and their
#                  QP fails (4 completions kept, the rest lost, a later
#                  post flushed)
#   rc_pingpong, rc_pingpong_events, rc_pingpong_new_send, ud_pingpong,
#   srq_pingpong   ibverbs-utils' examples, server in mrva, client in mrvb,
#                  with received-buffer validation (-c)
#   poll_syscalls  ibv_rc_pingpong's client under strace: polling its CQ
#                  takes no system call (the CQ ring), so an iteration
#                  costs one uverbs command, its post; and most of those
#                  doorbells send in the system call (doorbells_inline)
#   stream_syscalls  ib_write_bw's client under strace: while it streams,
#                  posting takes no system call either (the send ring),
#                  under 0.15 per work request (the median of three
#                  measurements); none of its doorbells sends in the
#                  system call
#   recv_syscalls  the same for ib_send_bw's server, which posts a receive
#                  for every message (the receive ring)
#   ud_syscalls    the same for ib_send_bw's client over UD (the send ring
#                  of a UD QP, AHs named by number); not in provider.sh's
#                  list: under emulation a datagram is dropped now and
#                  then, and perftest's server then waits for it for two
#                  minutes and fails (MR_STREAM_SHORT=1000
#                  MR_STREAM_LONG=5000 make that rarer)
#   ring_fuzz      a process scribbles on its own send and CQ rings while
#                  its QPs carry traffic (tests/ring_fuzz.c) and another
#                  process's ibv_rc_pingpong runs with data validation:
#                  both must pass and the kernel stay quiet
#   fork           fork() with live QPs (tests/fork_exit.c): the client
#                  (mrvb) calls ibv_fork_init() and forks while its RDMA
#                  WRITEs and SENDs are outstanding; the child has none of
#                  its parent's ring mappings, scribbles on its copy of a
#                  page half registered, half heap, and uses QPs of its own;
#                  every byte the server (mrva) is written, sent or reads
#                  back is the parent's, and no work request fails
#   exit           a process of the server (mrva) streaming both ways with
#                  its queue full is killed (SIGKILL), then another calls
#                  _exit(0) with everything alive: the client's (mrvb) QP
#                  fails with a retry-exceeded completion in bounded time and
#                  flushes the rest, mrva_dev's counts in `rdma resource
#                  show` come back, and a new process streams with every
#                  byte checked
#
# Needs root, metaroce.ko and the provider built in build/userspace/provider
# (the VM's /etc/libibverbs.d points libibverbs at it). MR_VERBS_TIMEOUT sets
# the seconds each program may take (180), MR_VERBS_WRAPPER a command to run
# them under (e.g. "valgrind --error-exitcode=1").

# The subtests are called through mr_run.
# shellcheck disable=SC2317

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../../.." && pwd)
# shellcheck source=../../../selftests/metaroce/lib.sh
. "$top/selftests/metaroce/lib.sh"

build=${MR_PROVIDER_BUILD:-$top/build/userspace/provider}
verbs_test=$build/tests/mr_verbs_test
objects_test=$build/tests/verbs_objects
pair_test=$build/tests/verbs_pair
fuzz_test=$build/tests/ring_fuzz
fork_exit_test=$build/tests/fork_exit
# Seconds any one program may take (TCG is slow).
prog_timeout=${MR_VERBS_TIMEOUT:-180}
# A command every program runs under, e.g. "valgrind --leak-check=full".
read -ra wrapper <<<"${MR_VERBS_WRAPPER:-}"

mr_require_module
# The provider's name carries libibverbs' private ABI number (-rdmav34.so,
# -rdmav65.so, ...): whichever was built for this userland.
provider_lib=$(compgen -G "$build/libmetaroce-rdmav*.so" | head -n 1 || true)
for f in "${provider_lib:-$build/libmetaroce-rdmav<n>.so}" "$verbs_test" \
	"$objects_test" "$pair_test" "$fuzz_test" "$fork_exit_test"; do
	[[ -e $f ]] || mr_skip_all "$f is missing: run make -C userspace first"
done
[[ $# -eq 0 ]] || MR_TEST_ONLY="$*"

two_hosts() {
	mr_netns mrva mrvb
	mr_veth mrva0 mrvb0 mrva mrvb
	ip -n mrva addr add 10.77.0.1/24 dev mrva0
	ip -n mrvb addr add 10.77.0.2/24 dev mrvb0
	mr_link_add mrva_dev mrva0 mrva
	mr_link_add mrvb_dev mrvb0 mrvb
	mr_wait_dev mrva_dev 10.77.0.1
	mr_wait_dev mrvb_dev 10.77.0.2
}

# in_ns NS CMD...: CMD in namespace NS, bounded by the program timeout.
in_ns() {
	local netns=$1
	shift
	ip netns exec "$netns" timeout --kill-after=5 "$prog_timeout" \
		"${wrapper[@]}" "$@"
}

# tcp_listening NS PORT: a TCP socket listens on PORT in NS.
tcp_listening() {
	[[ -n $(ip netns exec "$1" ss -Htln "sport = :$2") ]]
}

# server_client PORT SERVER_CMD... -- CLIENT_CMD...: the server in mrva in
# the background, then, once it listens on TCP PORT, the client in mrvb;
# both must succeed. Their output is shown (as TAP comments).
server_client() {
	local port=$1 srv=() cli=() out rc_s=0 rc_c=0
	shift
	while [[ $1 != -- ]]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	out=$(mktemp)
	mr_defer rm -f "$out"
	in_ns mrva "${srv[@]}" >"$out" 2>&1 &
	local pid=$!
	mr_defer kill "$pid"
	if ! wait_for 60 tcp_listening mrva "$port"; then
		cat "$out"
		mr_fail "the server does not listen on TCP port $port"
	fi
	echo "--- client (mrvb): ${cli[*]}"
	in_ns mrvb "${cli[@]}" 2>&1 || rc_c=$?
	wait "$pid" || rc_s=$?
	echo "--- server (mrva): ${srv[*]}"
	cat "$out"
	((rc_s == 0)) || mr_fail "server exited with $rc_s"
	((rc_c == 0)) || mr_fail "client exited with $rc_c"
}

# owner DEV PROVIDER: libibverbs hands DEV to PROVIDER (mr_verbs_test --owner).
owner() {
	"$verbs_test" --owner "$1" "$2" || mr_fail "$1 is not handled by $2"
}

# verbs DEV: mr_verbs_test's device, port, GID and PD tests pass on DEV.
verbs() {
	"$verbs_test" "$1" || mr_fail "mr_verbs_test $1 failed"
}

# listed DEV GUID: ibv_devices lists DEV with node GUID GUID (no colons).
listed() {
	ibv_devices | awk -v d="$1" -v g="$2" '$1 == d && $2 == g { f = 1 }
		END { exit !f }'
}

# Devices in the initial namespace, on veth pairs mrt-a0/mrt-a1 (192.0.2.1
# on mrt-a0) and mrt-b0/mrt-b1 (198.51.100.1 on mrt-b0).
matching_links() {
	mr_veth mrt-a0 mrt-a1
	mr_veth mrt-b0 mrt-b1
	ip addr add 192.0.2.1/24 dev mrt-a0
	ip addr add 198.51.100.1/24 dev mrt-b0
	mr_link_add foo mrt-a0
}

matching() {
	local guid
	matching_links
	assert_eq "foo's metaroce/abi_version" 1 \
		"$(cat /sys/class/infiniband/foo/metaroce/abi_version)"
	guid=$(tr -d : </sys/class/infiniband/foo/node_guid)
	assert_ok "ibv_devices lists foo with its node GUID $guid" \
		listed foo "$guid"
	mr_wait_dev foo 192.0.2.1
	assert_match "ibv_devinfo -v -d foo: the RoCE v2 GID of 192.0.2.1" \
		"GID\[ *[0-9]+\]:[[:space:]]+::ffff:192\.0\.2\.1, RoCE v2" \
		"$(ibv_devinfo -v -d foo 2>&1)"
	verbs foo
	# Any name, and renames, are matched through sysfs, not by name.
	mr_link_add bar mrt-b0
	owner bar metaroce
	verbs bar
	mr_defer rdma link delete renamed0
	assert_ok "rdma dev set foo name renamed0" rdma dev set foo name renamed0
	owner renamed0 metaroce
	verbs renamed0
	assert_ok "rdma link delete renamed0" rdma link delete renamed0
	assert_ok "rdma link delete bar" rdma link delete bar
	! mr_ibv_has renamed0 || mr_fail "ibv_devices still lists renamed0"
	! mr_ibv_has bar || mr_fail "ibv_devices still lists bar"
}

rxe_beside() {
	modprobe rdma_rxe 2>/dev/null || mr_skip "rdma_rxe is not available"
	matching_links
	mr_defer rdma link delete r0
	assert_ok "rdma link add r0 type rxe netdev mrt-a1" \
		rdma link add r0 type rxe netdev mrt-a1
	owner r0 rxe
	owner foo metaroce
	assert_ok "ibv_devinfo -d r0" ibv_devinfo -d r0
	assert_ok "ibv_devinfo -d foo" ibv_devinfo -d foo
	[[ ! -e /sys/class/infiniband/r0/metaroce/abi_version ]] ||
		mr_fail "r0 has a metaroce/abi_version"
}

objects() {
	two_hosts
	in_ns mrva "$objects_test" mrva_dev || mr_fail "verbs_objects failed"
}

pair() {
	two_hosts
	server_client 18600 "$pair_test" server mrva_dev 18600 -- \
		"$pair_test" client mrvb_dev 10.77.0.1 18600
}

# pingpong NAME SERVER_OPTIONS: ibv_NAME_pingpong between the hosts.
pingpong() {
	local prog=ibv_$1_pingpong ga gb
	shift
	two_hosts
	ga=$(mr_gid_index mrva_dev 10.77.0.1)
	gb=$(mr_gid_index mrvb_dev 10.77.0.2)
	server_client 18601 "$prog" -d mrva_dev -g "$ga" -p 18601 -c "$@" -- \
		"$prog" -d mrvb_dev -g "$gb" -p 18601 -c "$@" 10.77.0.1
}

rc_pingpong() { pingpong rc -n 200; }
rc_pingpong_events() { pingpong rc -n 100 -e; }
rc_pingpong_new_send() { pingpong rc -n 100 -N; }
ud_pingpong() { pingpong ud -n 200 -s 512; }
srq_pingpong() { pingpong srq -n 20 -q 4; }

# pingpong_calls N: the ioctl() and write() calls of ibv_rc_pingpong's
# client for N iterations (ibv_rc_pingpong and ibv_rc_pingpong -n N on two
# hosts, counted with strace), in $calls.
pingpong_calls() {
	local ga gb trace
	ga=$(mr_gid_index mrva_dev 10.77.0.1)
	gb=$(mr_gid_index mrvb_dev 10.77.0.2)
	trace=$(mktemp)
	mr_defer rm -f "$trace"
	server_client 18602 ibv_rc_pingpong -d mrva_dev -g "$ga" -p 18602 \
		-r 500 -n "$1" -- \
		strace -f -qq --seccomp-bpf -c -e trace=ioctl,write -o "$trace" \
		ibv_rc_pingpong -d mrvb_dev -g "$gb" -p 18602 -r 500 -n "$1" \
		10.77.0.1
	cat "$trace"
	calls=$(awk '$NF == "total" { print $4 }' "$trace")
	[[ $calls =~ ^[0-9]+$ ]] || mr_fail "no system call count from strace"
}

# Every uverbs command is an ioctl() (or a write()) on the command file:
# creating an object, a post, or, without a ring, a poll. ibv_rc_pingpong
# posts its 500 receives (-r) up front and reposts only when they run low,
# so an iteration of a run of fewer posts one send and takes two
# completions: with POLL_CQ that is at least one more command (and more
# when a poll comes back empty), with the ring none. Setting up costs the
# same in two runs of different lengths, so the difference counts the
# iterations' commands.
poll_syscalls() {
	local short=100 long=400 c1 per inl
	two_hosts
	doorbells mrvb_dev
	pingpong_calls "$short"
	c1=$calls
	pingpong_calls "$long"
	per=$(awk -v a="$c1" -v b="$calls" -v n=$((long - short)) \
		'BEGIN { printf "%.2f", (b - a) / n }')
	mr_log "ioctl() and write() calls of the client: $c1 for $short" \
		"iterations, $calls for $long: $per per iteration"
	awk -v p="$per" 'BEGIN { exit !(p < 1.5) }' ||
		mr_fail "more system calls than the posts need: polling is not on the ring"
	# A request/response exchange: the peer's message came in before
	# each send, so its doorbell sends in the system call.
	inl=$db_inline
	doorbells mrvb_dev
	inl=$((db_inline - inl))
	mr_log "doorbells of the client sent in the system call: $inl" \
		"for $((short + long)) iterations"
	((inl >= (short + long) / 2)) ||
		mr_fail "a ping-pong's doorbells do not send in the system call"
}

# doorbells DEV: DEV's doorbells_inline and doorbells_deferred counters, in
# $db_inline and $db_deferred.
doorbells() {
	local f
	f=$(mktemp)
	mr_defer rm -f "$f"
	mr_stats "$1" >"$f"
	db_inline=$(mr_stat "$f" doorbells_inline)
	db_deferred=$(mr_stat "$f" doorbells_deferred)
}

# stream_calls N SIDE TOOL OPTION...: perftest's TOOL with OPTION... and -n
# N between the hosts; the ioctl() and write() calls of its SIDE (client or
# server) in $calls. perftest gives up now and then when it cannot
# calibrate its clock on the emulated CPU: such a run is tried again, three
# times in all. Each side writes its own file: in one shared file, the
# server's writes (at its own offset) overwrote what the client appended,
# "Correlation coefficient" included, and a calibration failure of the
# client went unrecognised.
stream_calls() {
	local n=$1 side=$2 tool=$3 ga gb trace out try pid
	local -a tracer st=() ct=()
	shift 3
	ga=$(mr_gid_index mrva_dev 10.77.0.1)
	gb=$(mr_gid_index mrvb_dev 10.77.0.2)
	trace=$(mktemp)
	out=$(mktemp)
	mr_defer rm -f "$trace" "$out" "$out.cli"
	tracer=(strace -f -qq --seccomp-bpf -c -e "trace=ioctl,write" -o "$trace")
	if [[ $side == server ]]; then
		st=("${tracer[@]}")
	else
		ct=("${tracer[@]}")
	fi
	for ((try = 1; try <= 3; try++)); do
		in_ns mrva "${st[@]}" "$tool" -d mrva_dev -x "$ga" -p 18603 \
			"$@" -n "$n" >"$out" 2>&1 &
		pid=$!
		wait_for 60 tcp_listening mrva 18603 ||
			mr_fail "$tool does not listen"
		if in_ns mrvb "${ct[@]}" "$tool" -d mrvb_dev -x "$gb" \
			-p 18603 "$@" -n "$n" 10.77.0.1 >"$out.cli" 2>&1 &&
			wait "$pid"; then
			calls=$(awk '$NF == "total" { print $4 }' "$trace")
			[[ $calls =~ ^[0-9]+$ ]] ||
				mr_fail "no system call count from strace"
			return 0
		fi
		wait "$pid" || true
		grep -q 'Correlation coefficient' "$out" "$out.cli" || break
		echo "# perftest could not calibrate its clock: again"
	done
	echo "# --- server (mrva):"
	cat "$out"
	echo "# --- client (mrvb):"
	cat "$out.cli"
	mr_fail "$tool $* -n $n failed"
}

# stream_per_wr SIDE TOOL OPTION...: the uverbs commands of SIDE per work
# request while TOOL streams must stay under 0.15. The difference between
# two runs counts the commands of the work requests alone (setting up
# costs the same). The figure is the median of three such pairs: under
# emulation, one pair in several comes out two to five times the others
# (0.06-0.1 against 0.01-0.04), with the same code, and medians went up
# to 0.063. A post that takes a system call costs 1 per work
# request (a send ring without its timer measured 1.00).
stream_per_wr() {
	local short=${MR_STREAM_SHORT:-2000} long=${MR_STREAM_LONG:-20000}
	local c1 per i all=()
	for ((i = 0; i < 3; i++)); do
		stream_calls "$short" "$@"
		c1=$calls
		stream_calls "$long" "$@"
		per=$(awk -v a="$c1" -v b="$calls" -v n=$((long - short)) \
			'BEGIN { printf "%.4f", (b - a) / n }')
		mr_log "${*:2}: ioctl() and write() calls of the $1: $c1 for" \
			"$short work requests, $calls for $long: $per per work request"
		all+=("$per")
	done
	per=$(printf '%s\n' "${all[@]}" | sort -g | sed -n 2p)
	mr_log "median: $per per work request"
	awk -v p="$per" 'BEGIN { exit !(p < 0.15) }' ||
		mr_fail "posting or polling takes system calls while streaming"
}

# The sender of RDMA WRITEs (send ring, CQ ring). Its peer sends it no
# data, so none of its doorbells sends in the system call.
stream_syscalls() {
	local inl def
	two_hosts
	doorbells mrvb_dev
	inl=$db_inline def=$db_deferred
	stream_per_wr client ib_write_bw -s 64
	doorbells mrvb_dev
	mr_log "doorbells of the client: $((db_deferred - def)) deferred," \
		"$((db_inline - inl)) sent in the system call"
	((db_inline == inl)) ||
		mr_fail "a streaming sender's doorbells sent in the system call"
}

# The receiver of SENDs, which posts a receive for each (receive ring).
recv_syscalls() {
	two_hosts
	stream_per_wr server ib_send_bw -s 64
}

# The sender of UD datagrams (send ring, AHs by number).
ud_syscalls() {
	two_hosts
	stream_per_wr client ib_send_bw -c UD -s 64
}

# The pingpong is the bystander: another process, with its own QPs on the
# same devices, whose every received buffer is checked (-c).
ring_fuzz() {
	local ga gb out pid rc=0
	two_hosts
	ga=$(mr_gid_index mrva_dev 10.77.0.1)
	gb=$(mr_gid_index mrvb_dev 10.77.0.2)
	out=$(mktemp)
	mr_defer rm -f "$out" "$out.cli"
	in_ns mrva ibv_rc_pingpong -d mrva_dev -g "$ga" -p 18604 -c -n 3000 \
		>"$out" 2>&1 &
	pid=$!
	mr_defer kill "$pid"
	wait_for 60 tcp_listening mrva 18604 ||
		mr_fail "the bystander does not listen"
	in_ns mrvb ibv_rc_pingpong -d mrvb_dev -g "$gb" -p 18604 -c -n 3000 \
		10.77.0.1 >"$out.cli" 2>&1 &
	local cpid=$!
	mr_defer kill "$cpid"
	in_ns mrva "$fuzz_test" mrva_dev mrvb_dev 20 "${MR_FUZZ_SEED:-$RANDOM}" ||
		rc=$?
	wait "$cpid" || { cat "$out.cli"; mr_fail "the bystander's client failed"; }
	wait "$pid" || { cat "$out"; mr_fail "the bystander's server failed"; }
	sed -n 's/^/# bystander: /p' "$out" "$out.cli" | grep iters
	((rc == 0)) || mr_fail "ring_fuzz failed ($rc)"
}

fork_() {
	two_hosts
	server_client 18605 "$fork_exit_test" fork server mrva_dev 18605 -- \
		"$fork_exit_test" fork client mrvb_dev 10.77.0.1 18605
}

exit_() {
	two_hosts
	server_client 18606 "$fork_exit_test" exit server mrva_dev 18606 -- \
		"$fork_exit_test" exit client mrvb_dev 10.77.0.1 18606
}

mr_run matching matching
mr_run rxe_beside rxe_beside
mr_run objects objects
mr_run pair pair
mr_run rc_pingpong rc_pingpong
mr_run rc_pingpong_events rc_pingpong_events
mr_run rc_pingpong_new_send rc_pingpong_new_send
mr_run ud_pingpong ud_pingpong
mr_run srq_pingpong srq_pingpong
mr_run poll_syscalls poll_syscalls
mr_run stream_syscalls stream_syscalls
mr_run recv_syscalls recv_syscalls
mr_run ud_syscalls ud_syscalls
mr_run ring_fuzz ring_fuzz
mr_run fork fork_
mr_run exit exit_
mr_done
