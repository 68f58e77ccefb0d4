#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 600
#
# ibverbs-utils' example programs between two hosts (network namespaces
# joined by a veth pair, one metaroce device each): RC SEND/RECV in polling
# and event mode, UD datagrams of a full MTU, and SRQ shared by several QPs
# (one topology for all).
# Both sides must exit 0, validate every received buffer (-c) and report
# the exact number of iterations and bytes they were asked to move.
. "$(dirname "$0")/lib.sh"
mr_require_module

PORT=18530

# check_report NAME SIDE SIZE ITERS: the "bytes in" and "iters in" lines of
# SIDE's output say SIZE * ITERS * 2 bytes and ITERS iterations.
check_report() {
	local out=$MR_TMP/$1.$2 bytes iters
	bytes=$(awk '$2 == "bytes" && $3 == "in" { print $1 }' "$out")
	iters=$(awk '$2 == "iters" && $3 == "in" { print $1 }' "$out")
	assert_eq "$1 $2: bytes transferred" "$(($3 * $4 * 2))" "$bytes"
	assert_eq "$1 $2: iterations" "$4" "$iters"
	mr_log "$1 $2: $(grep -E '^[0-9]+ bytes in' "$out")"
}

# pingpong KIND SIZE ITERS [OPTIONS...]: ibv_KIND_pingpong, server in B.
pingpong() {
	local kind=$1 size=$2 iters=$3 name=$1_pingpong
	shift 3
	mr_pair "$name" "tcp:$PORT" \
		"ibv_${kind}_pingpong" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$PORT" \
		-s "$size" -n "$iters" -c "$@" -- \
		"ibv_${kind}_pingpong" -d "$MR_A_DEV" -g "$MR_A_GIDX" -p "$PORT" \
		-s "$size" -n "$iters" -c "$@" "$MR_B_IP"
	check_report "$name" server "$size" "$iters"
	check_report "$name" client "$size" "$iters"
}

rc_pingpong() { pingpong rc 4096 500; }
# Several packets per message, on a CQ the program sleeps on.
rc_pingpong_events() { pingpong rc 16384 200 -e; }
# The largest datagram a 1500-byte veth carries (IB MTU 1024).
ud_pingpong() { pingpong ud 1024 500; }
ud_pingpong_events() { pingpong ud 512 200 -e; }
# srq_pingpong counts iterations over all QPs together.
srq_pingpong() { pingpong srq 4096 400 -q 8; }
srq_pingpong_events() { pingpong srq 2048 200 -q 4 -e; }

mr_setup two_hosts mr_two_hosts
mr_run rc_pingpong rc_pingpong
mr_run rc_pingpong_events rc_pingpong_events
mr_run ud_pingpong ud_pingpong
mr_run ud_pingpong_events ud_pingpong_events
mr_run srq_pingpong srq_pingpong
mr_run srq_pingpong_events srq_pingpong_events
mr_done
