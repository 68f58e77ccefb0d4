#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 1500
#
# The full verbs mix on many RC QPs at once (issue #24): mr_mixed between two
# hosts joined by a veth pair, both sides initiating on every QP, each QP
# keeping 4 requests outstanding of RDMA WRITE (with and without
# immediate), SEND (with and without immediate), RDMA READ, fetch-and-add,
# compare-and-swap and a READ followed by a fenced WRITE, of 1 B to 4 KiB,
# QPs with timeout 14, retry_cnt 7, rnr_retry 7. Every byte, every atomic
# result, every receive and every completion's wr_id is checked (see
# userspace/tools/mr_mixed.c).
#
#   lossless    400 QPs x 20 operations per side
#   loss_1pct   the same under 1 % loss on both veth ends
#   srq         200 QPs whose receives come from shared receive queues
#   rd_atomic_1 200 QPs with max_rd_atomic and max_dest_rd_atomic 1
#   big_reads   64 QPs, 4 of which also READ 1 MiB at a time among the
#               small operations of all
#   link_cut    400 QPs; once A completed 4 messages per QP, the link is
#               cut (netem 100 % loss both ways): on both sides every QP fails, its oldest request
#               with RETRY_EXC_ERR and everything else it had posted,
#               requests and receives, with WR_FLUSH_ERR, in order, each
#               wr_id once, within 10 s of the last success (the retry
#               time is 8 x 200 ms); no QP hangs
#
# Each run must end with exit status 0 on both sides, no error counted by
# either device (no NAK, no refused packet) and nothing about the devices
# in the kernel log. The time of each run is logged.
#
# MR_MIXED_QPS=N overrides the 400 QPs of lossless and loss_1pct;
# MR_TEST_LONG=1 runs 1000 QPs there and 4 times the operations.
. "$(dirname "$0")/lib.sh"
mr_require_module

TOOL=$MR_TOP/build/userspace/tools/mr_mixed
PORT=18640
QPS=${MR_MIXED_QPS:-400}
OPS=20
if [[ -n ${MR_TEST_LONG:-} ]]; then
	QPS=${MR_MIXED_QPS:-1000}
	OPS=80
fi

# Not drop_epoch: the runs are short, and a device that collected its idle
# connection to the other one while the other kept its own resynchronises
# through RESET when the next run starts (protocol.rst, section 7.2).
ERROR_COUNTERS="rx_drop_malformed rx_drop_no_qp rx_drop_no_conn
	drop_no_conn drop_dsn_window drop_no_qp drop_qp_state
	drop_wrong_peer drop_msn_window drop_stale_gen drop_inconsistent
	drop_access drop_invalid_request naks_tx naks_rx"

[[ -x $TOOL ]] || mr_skip_all "$TOOL is missing: run make userspace"

# mixed NAME SEED NETEM -- MR_MIXED_ARGS...: one run; NETEM (a quoted,
# possibly empty, list) on both veth ends.
mixed() {
	local name=$1 seed=$2 netem=$3 dev moved bad="" log0 diag
	shift 4
	if [[ -n $netem ]]; then
		# shellcheck disable=SC2086 # a list of netem words
		mr_netem "$MR_A_NS" "$MR_A_IF" $netem
		mr_defer ip netns exec "$MR_A_NS" tc qdisc del dev "$MR_A_IF" root
		# shellcheck disable=SC2086
		mr_netem "$MR_B_NS" "$MR_B_IF" $netem
		mr_defer ip netns exec "$MR_B_NS" tc qdisc del dev "$MR_B_IF" root
	fi
	for dev in "$MR_A_DEV" "$MR_B_DEV"; do
		mr_stats "$dev" >"$MR_TMP/$name.$dev.before"
	done
	log0=$(dmesg | wc -l)
	# On a failure, while the QPs still exist: the engine's view of them.
	diag="mount -t debugfs none /sys/kernel/debug 2>/dev/null;"
	diag+=" cat /sys/kernel/debug/metaroce/*/peers"
	diag+=" /sys/kernel/debug/metaroce/*/qps 2>/dev/null | head -n 60"
	MR_MIXED_DIAG=$diag MR_PAIR_TIMEOUT=600 MR_PAIR_TRIES=1 \
		mr_pair "$name" "tcp:$PORT" \
		"$TOOL" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$PORT" -S "$seed" \
		-t "$(mr_secs 400)" "$@" -- \
		"$TOOL" -d "$MR_A_DEV" -g "$MR_A_GIDX" -p "$PORT" -S "$seed" \
		-t "$(mr_secs 400)" "$@" "$MR_B_IP"
	for dev in "$MR_A_DEV" "$MR_B_DEV"; do
		mr_stats "$dev" >"$MR_TMP/$name.$dev.after"
		# shellcheck disable=SC2086 # a list of names
		moved=$(mr_stat_moved "$MR_TMP/$name.$dev.before" \
			"$MR_TMP/$name.$dev.after" $ERROR_COUNTERS)
		[[ -z $moved ]] || bad+=" $dev:$moved"
		mr_log "$dev: ack_requests_tx=$(mr_stat_delta \
			"$MR_TMP/$name.$dev.before" "$MR_TMP/$name.$dev.after" \
			ack_requests_tx) data_segments_tx=$(mr_stat_delta \
			"$MR_TMP/$name.$dev.before" "$MR_TMP/$name.$dev.after" \
			data_segments_tx) rnr_naks_tx=$(mr_stat_delta \
			"$MR_TMP/$name.$dev.before" "$MR_TMP/$name.$dev.after" \
			rnr_naks_tx)"
	done
	grep -h "^mr_mixed: OK" "$MR_TMP/$name.client" "$MR_TMP/$name.server"
	[[ -z $bad ]] || { mr_diag "$MR_A_DEV" "$MR_B_DEV"; mr_fail "error counters moved:$bad"; }
	if dmesg | tail -n +"$((log0 + 1))" | grep -iE "metaroce|$MR_A_DEV|$MR_B_DEV"; then
		mr_fail "the kernel logged about the devices during the run"
	fi
}

lossless() { mixed lossless 1 "" -- -q "$QPS" -n "$OPS"; }
loss_1pct() { mixed loss_1pct 2 "loss 1%" -- -q "$QPS" -n "$OPS"; }
srq() { mixed srq 3 "" -- -q 200 -n "$OPS" --srq; }
rd_atomic_1() { mixed rd_atomic_1 4 "" -- -q 200 -n "$OPS" -R 1; }
big_reads() { mixed big_reads 5 "" -- -q 64 -n "$OPS" --big-qps 4; }

link_cut() {
	local f late
	mr_stats "$MR_A_DEV" >"$MR_TMP/link_cut.before"
	(
		# Once every QP has had time to get going.
		wait_for 120 mr_done_since "$MR_TMP/link_cut.before" \
			"$((QPS * 4))" || true
		ip netns exec "$MR_A_NS" tc qdisc replace dev "$MR_A_IF" root \
			netem loss 100%
		ip netns exec "$MR_B_NS" tc qdisc replace dev "$MR_B_IF" root \
			netem loss 100%
	) &
	mr_defer ip netns exec "$MR_A_NS" tc qdisc del dev "$MR_A_IF" root
	mr_defer ip netns exec "$MR_B_NS" tc qdisc del dev "$MR_B_IF" root
	MR_PAIR_TIMEOUT=120 MR_PAIR_TRIES=1 mr_pair link_cut "tcp:$PORT" \
		"$TOOL" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$PORT" -t "$(mr_secs 60)" \
		-q "$QPS" -n 1000000 --cut -- \
		"$TOOL" -d "$MR_A_DEV" -g "$MR_A_GIDX" -p "$PORT" -t "$(mr_secs 60)" \
		-q "$QPS" -n 1000000 --cut "$MR_B_IP"
	wait
	for f in "$MR_TMP/link_cut.client" "$MR_TMP/link_cut.server"; do
		grep -h "^mr_mixed: OK" "$f"
		late=$(sed -n 's/.*the last failure \([0-9.]*\) s after.*/\1/p' "$f")
		[[ -n $late ]] || mr_fail "no summary in $f"
		awk -v t="$late" 'BEGIN { exit !(t < 10) }' ||
			mr_fail "the last QP failed $late s after the last success"
	done
}

mr_setup two_hosts mr_two_hosts
mr_run lossless lossless
mr_run loss_1pct loss_1pct
mr_run srq srq
mr_run rd_atomic_1 rd_atomic_1
mr_run big_reads big_reads
mr_run link_cut link_cut
mr_done
