#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 300
#
# metaroce.ko's tracepoints (drivers/metaroce/trace.h; admin-guide.rst,
# "Tracepoints") fire when what they name happens, and say it right:
#
#   events      tracefs lists the six events of the metaroce system
#   lossy       mr_mixed on 8 QPs at 5 % loss both ways, every event of the
#               system enabled: metaroce_epoch (the first contact, peer
#               epoch 0 -> another, on both devices) and metaroce_retransmit
#               (dsn and cause), each naming one of the two devices and the
#               other's address
#   path_dead   mr_mixed while A's packets from path 0's source port are
#               dropped (a u32 filter on A's veth) until path 0 is traced
#               dead (at most 10 s): path 0 goes dead
#               and comes back (metaroce_path_state "-> dead" and
#               "dead -> good", path=0, on A)
#   link_cut    the same, then the link cut (netem 100 %): the paths time
#               out (metaroce_timeout, next_rto_ns set) and every QP fails
#               (metaroce_qp_error, "transport retry counter exceeded");
#               no path is declared dead, as none gets through (protocol.rst
#               7.9: never the last usable one)
#
# Port re-picks (metaroce_path_repick) need a path whose ECN fraction stays
# above repick_alpha while another's does not: not made here (the
# multiplane tests make it; this test only checks the event exists).
. "$(dirname "$0")/lib.sh"
mr_require_module

TOOL=$MR_TOP/build/userspace/tools/mr_mixed
PORT=18650
# IPv4 peers are v4-mapped IPv6 addresses in the device (%pI6c).
V4='(::ffff:)?'
TR=/sys/kernel/tracing
EVENTS=(metaroce_path_state metaroce_path_repick metaroce_timeout
	metaroce_retransmit metaroce_epoch metaroce_qp_error)

[[ -x $TOOL ]] || mr_skip_all "$TOOL is missing: run make userspace"
[[ -d $TR/events ]] || mount -t tracefs nodev "$TR" 2>/dev/null || true
[[ -d $TR/events ]] || mr_skip_all "no tracefs in this kernel"

events() {
	local e
	modprobe "$MR_MOD"
	for e in "${EVENTS[@]}"; do
		assert_ok "$e exists" test -d "$TR/events/metaroce/$e"
	done
}

# trace_on: the metaroce events only, into an empty buffer.
trace_on() {
	echo 0 >"$TR/tracing_on"
	echo >"$TR/set_event"
	echo 4096 >"$TR/buffer_size_kb"
	echo 1 >"$TR/events/metaroce/enable"
	echo >"$TR/trace"
	echo 1 >"$TR/tracing_on"
	mr_defer sh -c "echo 0 >$TR/events/metaroce/enable; echo >$TR/trace"
}

# lines EVENT: the trace's lines of EVENT.
lines() { grep -E " $1: " "$MR_TMP/trace" || true; }

# names_devices EVENT: every line of EVENT names one device and the
# other's address.
names_devices() {
	local bad
	bad=$(lines "$1" |
		grep -vE "dev=($MR_A_DEV remote=$V4$MR_B_IP|$MR_B_DEV remote=$V4$MR_A_IP) " |
		head -n 3 || true)
	[[ -z $bad ]] || mr_fail "$1 lines that name no device and peer: $bad"
}

lossy() {
	local n
	trace_on
	mr_netem "$MR_A_NS" "$MR_A_IF" loss 5%
	mr_defer ip netns exec "$MR_A_NS" tc qdisc del dev "$MR_A_IF" root
	mr_netem "$MR_B_NS" "$MR_B_IF" loss 5%
	mr_defer ip netns exec "$MR_B_NS" tc qdisc del dev "$MR_B_IF" root
	MR_PAIR_TIMEOUT=240 MR_PAIR_TRIES=1 mr_pair lossy "tcp:$PORT" \
		"$TOOL" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$PORT" -S 7 -q 8 -n 40 -- \
		"$TOOL" -d "$MR_A_DEV" -g "$MR_A_GIDX" -p "$PORT" -S 7 -q 8 -n 40 "$MR_B_IP"
	cp "$TR/trace" "$MR_TMP/trace"
	n=$(lines metaroce_retransmit | wc -l)
	mr_log "$n metaroce_retransmit lines; $(lines metaroce_epoch | wc -l) metaroce_epoch"
	((n > 0)) || mr_fail "no metaroce_retransmit at 5 % loss"
	lines metaroce_retransmit | grep -qE 'path=[0-9]+ dsn=[0-9]+ cause=(sack|rto|overdue)$' ||
		mr_fail "metaroce_retransmit without dsn and cause: $(lines metaroce_retransmit | head -n 1)"
	names_devices metaroce_retransmit
	lines metaroce_epoch | grep -qE "dev=$MR_A_DEV remote=$V4$MR_B_IP peer epoch 0(x0)? -> 0x[0-9a-f]+" ||
		mr_fail "$MR_A_DEV did not trace its first contact: $(lines metaroce_epoch | head -n 2)"
	lines metaroce_epoch | grep -qE "dev=$MR_B_DEV remote=$V4$MR_A_IP peer epoch 0(x0)? -> 0x[0-9a-f]+" ||
		mr_fail "$MR_B_DEV did not trace its first contact"
	names_devices metaroce_epoch
}

# path0_sport: the UDP source port of path 0 of A's connection to B, once
# QPs use it.
path0_sport() {
	awk '$1 == "peer" { for (i = 2; i < NF; i++) if ($i == "qps") q = $(i + 1) }
		q > 0 && $1 == 0 && $2 ~ /^[0-9]+$/ && $3 ~ /^(good|congested|dead)$/ {
			print $2; f = 1; exit }
		END { exit !f }' "/sys/kernel/debug/metaroce/$MR_A_DEV/peers" 2>/dev/null
}

path_dead() {
	trace_on
	mr_debugfs
	mr_defer ip netns exec "$MR_A_NS" tc qdisc del dev "$MR_A_IF" root
	(
		wait_for 60 path0_sport || exit 0
		sp=$(path0_sport)
		ip netns exec "$MR_A_NS" tc qdisc replace dev "$MR_A_IF" root \
			handle 1: prio
		ip netns exec "$MR_A_NS" tc filter add dev "$MR_A_IF" parent 1: \
			protocol ip prio 1 u32 match ip protocol 17 0xff \
			match ip sport "$sp" 0xffff action drop
		echo "dropping A's packets from port $sp" >"$MR_TMP/path_dead.cut"
		# Until the path is dead (3 timeouts while the others deliver).
		wait_for 10 grep -qE "$MR_A_DEV .*path=0 .*-> dead" "$TR/trace" || true
		sleep 0.5
		ip netns exec "$MR_A_NS" tc qdisc del dev "$MR_A_IF" root
	) &
	MR_PAIR_TIMEOUT=240 MR_PAIR_TRIES=1 mr_pair path_dead "tcp:$PORT" \
		"$TOOL" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$PORT" -S 9 -q 8 -n 6000 -- \
		"$TOOL" -d "$MR_A_DEV" -g "$MR_A_GIDX" -p "$PORT" -S 9 -q 8 -n 6000 "$MR_B_IP"
	wait
	cp "$TR/trace" "$MR_TMP/trace"
	[[ -s $MR_TMP/path_dead.cut ]] || mr_fail "path 0 never showed in debugfs"
	mr_log "$(cat "$MR_TMP/path_dead.cut");" \
		"$(lines metaroce_path_state | wc -l) metaroce_path_state lines"
	lines metaroce_path_state | grep -E "dev=$MR_A_DEV .*path=0 " | head -n 4
	lines metaroce_path_state |
		grep -qE "dev=$MR_A_DEV remote=$V4$MR_B_IP path=0 (good|congested) -> dead$" ||
		mr_fail "path 0 of $MR_A_DEV was not traced going dead"
	lines metaroce_path_state |
		grep -qE "dev=$MR_A_DEV remote=$V4$MR_B_IP path=0 dead -> good$" ||
		mr_fail "path 0 of $MR_A_DEV was not traced coming back"
	names_devices metaroce_path_state
}

link_cut() {
	local nqp
	trace_on
	mr_stats "$MR_A_DEV" >"$MR_TMP/link_cut.before"
	(
		# Once the QPs carry traffic: a cut before the tools have
		# connected (their TCP exchange) only makes them wait.
		wait_for "$(mr_secs 120)" mr_done_since \
			"$MR_TMP/link_cut.before" 32 || true
		ip netns exec "$MR_A_NS" tc qdisc replace dev "$MR_A_IF" root \
			netem loss 100%
		ip netns exec "$MR_B_NS" tc qdisc replace dev "$MR_B_IF" root \
			netem loss 100%
	) &
	mr_defer ip netns exec "$MR_A_NS" tc qdisc del dev "$MR_A_IF" root
	mr_defer ip netns exec "$MR_B_NS" tc qdisc del dev "$MR_B_IF" root
	MR_PAIR_TIMEOUT=120 MR_PAIR_TRIES=1 mr_pair link_cut "tcp:$PORT" \
		"$TOOL" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$PORT" -t "$(mr_secs 60)" \
		-q 8 -n 1000000 --cut -- \
		"$TOOL" -d "$MR_A_DEV" -g "$MR_A_GIDX" -p "$PORT" -t "$(mr_secs 60)" \
		-q 8 -n 1000000 --cut "$MR_B_IP"
	wait
	cp "$TR/trace" "$MR_TMP/trace"
	mr_log "$(lines metaroce_timeout | wc -l) metaroce_timeout," \
		"$(lines metaroce_path_state | grep -c -- '-> dead') paths dead," \
		"$(lines metaroce_qp_error | wc -l) metaroce_qp_error"
	lines metaroce_timeout | grep -qE 'path=[0-9]+ timeouts=[1-9][0-9]* next_rto_ns=[1-9][0-9]*$' ||
		mr_fail "no metaroce_timeout after the cut"
	names_devices metaroce_timeout
	# 8 QPs on each side; the RC QPs of both fail.
	nqp=$(lines metaroce_qp_error | grep -cE "dev=($MR_A_DEV|$MR_B_DEV) qpn=[0-9]+ status=transport retry counter exceeded$" || true)
	((nqp >= 8)) || mr_fail "$nqp QPs traced failing with retry exceeded (8 at least): $(lines metaroce_qp_error | head -n 3)"
}

mr_run events events
mr_setup two_hosts mr_two_hosts
mr_run lossy lossy
mr_run path_dead path_dead
mr_run link_cut link_cut
mr_done
