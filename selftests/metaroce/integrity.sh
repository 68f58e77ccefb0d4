#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 1500
#
# Data integrity under an imperfect network: mr_integrity (random SENDs,
# SENDs with immediate, WRITEs, WRITEs with immediate, READs and atomics of
# 0 bytes to 1 MiB over several RC QPs, every byte checked on both sides)
# between two hosts joined by a veth pair, with netem on both directions:
# no loss, 1 % and 5 % loss, reordering, duplication and delay jitter.
# Every run must end with exit status 0 on both sides (every byte verified,
# no failed completion), no error counted by either device (no NAK, no
# refused packet: the counters of ERROR_COUNTERS do not move) and nothing
# about the device in the kernel log.
#
# MR_TEST_LONG=1 moves four times as much data per condition.
. "$(dirname "$0")/lib.sh"
mr_require_module

TOOL=$MR_TOP/build/userspace/tools/mr_integrity
PORT=18570
QPS=8
BATCH=16
BATCHES=16
[[ -z ${MR_TEST_LONG:-} ]] || BATCHES=64

# Counters that count protocol errors: any increase during a transfer
# between two correct endpoints is a bug (or a QP error). RNR NAKs are not
# among them: they are flow control (a control SEND of mr_integrity can
# arrive before the peer reposted its receive) and are logged. Nor is
# drop_epoch: each transfer opens new QPs between the same two devices, and
# one that collected its idle connection to the other (MR_PEER_IDLE_NS
# after the last transfer's QPs went) while the other kept its own drops
# that one's packets and challenges it (protocol.rst, section 7.2); the
# first-contact tests in hostile.sh count these drops.
ERROR_COUNTERS="rx_drop_malformed rx_drop_no_qp rx_drop_no_conn
	drop_no_conn drop_dsn_window drop_no_qp drop_qp_state
	drop_wrong_peer drop_msn_window drop_stale_gen drop_inconsistent
	drop_access drop_invalid_request naks_tx naks_rx"

[[ -x $TOOL ]] || mr_skip_all "$TOOL is missing: run make userspace"

# transfer NAME SEED NETEM...: mr_integrity with netem NETEM on both veth
# ends (none if NETEM is empty).
transfer() {
	local name=$1 seed=$2 dev moved bad="" log0
	shift 2
	if (($#)); then
		mr_netem "$MR_A_NS" "$MR_A_IF" "$@"
		mr_defer ip netns exec "$MR_A_NS" tc qdisc del dev "$MR_A_IF" root
		mr_netem "$MR_B_NS" "$MR_B_IF" "$@"
		mr_defer ip netns exec "$MR_B_NS" tc qdisc del dev "$MR_B_IF" root
	fi
	for dev in "$MR_A_DEV" "$MR_B_DEV"; do
		mr_stats "$dev" >"$MR_TMP/$name.$dev.before"
	done
	log0=$(dmesg | wc -l)
	MR_PAIR_TIMEOUT=600 mr_pair "$name" "tcp:$PORT" \
		"$TOOL" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$PORT" -q "$QPS" \
		-n "$BATCHES" -b "$BATCH" -m 1048576 -s "$seed" -t "$(mr_secs 120)" -- \
		"$TOOL" -d "$MR_A_DEV" -g "$MR_A_GIDX" -p "$PORT" -q "$QPS" \
		-n "$BATCHES" -b "$BATCH" -m 1048576 -s "$seed" -t "$(mr_secs 120)" "$MR_B_IP"
	for dev in "$MR_A_DEV" "$MR_B_DEV"; do
		mr_stats "$dev" >"$MR_TMP/$name.$dev.after"
		# shellcheck disable=SC2086 # a list of names
		moved=$(mr_stat_moved "$MR_TMP/$name.$dev.before" \
			"$MR_TMP/$name.$dev.after" $ERROR_COUNTERS)
		[[ -z $moved ]] || bad+=" $dev:$moved"
		mr_log "$dev: $(summary "$MR_TMP/$name.$dev.before" "$MR_TMP/$name.$dev.after")"
	done
	grep -h "^mr_integrity: OK" "$MR_TMP/$name.client" "$MR_TMP/$name.server"
	[[ -z $bad ]] || { mr_diag "$MR_A_DEV" "$MR_B_DEV"; mr_fail "error counters moved:$bad"; }
	if dmesg | tail -n +"$((log0 + 1))" | grep -iE "metaroce|$MR_A_DEV|$MR_B_DEV"; then
		mr_fail "the kernel logged about the devices during the transfer"
	fi
}

# summary BEFORE AFTER: what the transport did.
summary() {
	local c out=""
	for c in data_segments_tx retransmits_sack retransmits_timeout \
		retransmits_overdue retransmits_cancelled timeouts_spurious drop_duplicate \
		rx_drop_backlog path_dead rnr_naks_tx; do
		out+=" $c=$(mr_stat_delta "$1" "$2" "$c")"
	done
	echo "${out# }"
}

lossless() { transfer lossless 1; }
loss_1pct() { transfer loss_1pct 2 loss 1%; }
loss_5pct() { transfer loss_5pct 3 loss 5%; }
# A quarter of the packets (with 50 % correlation) skip the 1 ms queue.
reorder() { transfer reorder 4 delay 1ms reorder 25% 50%; }
duplicate() { transfer duplicate 5 duplicate 5%; }
jitter() { transfer jitter 6 delay 2ms 1ms; }

mr_setup two_hosts mr_two_hosts
mr_run lossless lossless
mr_run loss_1pct loss_1pct
mr_run loss_5pct loss_5pct
mr_run reorder reorder
mr_run duplicate duplicate
mr_run jitter jitter
mr_done
