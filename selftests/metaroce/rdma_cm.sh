#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 600
#
# librdmacm's example programs between two hosts (network namespaces joined
# by a veth pair, one metaroce device each), connected by rdma_cm over the
# devices' RoCE GIDs: rping (RDMA READ and WRITE of a known pattern, checked
# line by line on both sides), ucmatose (RC SEND/RECV both ways over several
# connections) and udaddy (UD datagrams both ways).
. "$(dirname "$0")/lib.sh"
mr_require_module

PORT=18560
UDADDY_PORT=7174 # udaddy has no port option

# rping_expect COUNT SIZE: the lines "rdma-ping-N: TEXT" rping's client
# sends, N = 0..COUNT-1: TEXT runs through the characters 65..122 starting
# at 65 + N (mod 58), and the whole line plus its NUL is SIZE bytes.
rping_expect() {
	awk -v count="$1" -v size="$2" 'BEGIN {
		for (c = 65; c <= 122; c++)
			cycle = cycle sprintf("%c", c)
		rep = cycle
		while (length(rep) < size + 58)
			rep = rep rep
		for (n = 0; n < count; n++) {
			s = "rdma-ping-" n ": "
			print s substr(rep, 1 + n % 58, size - 1 - length(s))
		}
	}'
}

# rping COUNT SIZE: client in A, server in B, both printing (-v) and
# validating (-V) the data; the lines must be exactly the expected ones.
rping() {
	local count=$1 size=$2 name=rping_$2 side prefix
	mr_pair "$name" "cm:$PORT" \
		rping -s -a "$MR_B_IP" -p "$PORT" -C "$count" -S "$size" -v -V -- \
		rping -c -a "$MR_B_IP" -p "$PORT" -C "$count" -S "$size" -v -V
	rping_expect "$count" "$size" | cut -c 1-1000 >"$MR_TMP/$name.expect"
	for side in client server; do
		prefix="ping data: "
		[[ $side == client ]] || prefix="server ping data: "
		# rping's threads share stdout: its disconnect message can cut
		# into the last data line. rping -V checked every byte itself;
		# here each line's first 1000 characters are compared.
		grep -F "$prefix" "$MR_TMP/$name.$side" | sed -e "s/^$prefix//" |
			cut -c 1-1000 >"$MR_TMP/$name.$side.data" || true
		if ! cmp -s "$MR_TMP/$name.expect" "$MR_TMP/$name.$side.data"; then
			diff "$MR_TMP/$name.expect" "$MR_TMP/$name.$side.data" |
				head -n 10 | cut -c 1-160
			mr_fail "rping $side: the ping data differ from the" \
				"$count expected lines of $size bytes"
		fi
	done
	mr_log "rping: $count pings of $size bytes, data checked on both sides"
}

rping_small() { rping 20 64; }
rping_large() { rping 10 65000; }

# check_cma NAME: ucmatose/udaddy's report on both sides.
check_cma() {
	local side out
	for side in client server; do
		out=$MR_TMP/$1.$side
		grep -qx "data transfers complete" "$out" ||
			mr_fail "$1 $side: no 'data transfers complete'"
		grep -qx "return status 0" "$out" ||
			mr_fail "$1 $side: no 'return status 0'"
	done
}

# ucmatose CONNECTIONS MESSAGES SIZE
ucmatose() {
	local name=ucmatose_$1x$2x$3
	mr_pair "$name" "cm:$PORT" \
		ucmatose -p "$PORT" -c "$1" -C "$2" -S "$3" -- \
		ucmatose -s "$MR_B_IP" -p "$PORT" -c "$1" -C "$2" -S "$3"
	check_cma "$name"
	mr_log "ucmatose: $1 connections x $2 messages of $3 bytes each way"
}

ucmatose_default() { ucmatose 1 10 100; }
ucmatose_many() { ucmatose 8 50 16384; }

# udaddy CONNECTIONS MESSAGES SIZE (a datagram fits the IB MTU of 1024).
udaddy() {
	local name=udaddy_$1x$2x$3
	mr_pair "$name" "cm:$UDADDY_PORT" \
		udaddy -c "$1" -C "$2" -S "$3" -- \
		udaddy -s "$MR_B_IP" -c "$1" -C "$2" -S "$3"
	check_cma "$name"
	mr_log "udaddy: $1 connections x $2 datagrams of $3 bytes each way"
}

udaddy_default() { udaddy 1 10 100; }
udaddy_many() { udaddy 8 50 1024; }

mr_setup two_hosts mr_two_hosts
mr_run rping_small rping_small
mr_run rping_large rping_large
mr_run ucmatose ucmatose_default
mr_run ucmatose_many ucmatose_many
mr_run udaddy udaddy_default
mr_run udaddy_many udaddy_many
mr_done
