#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 600
#
# The Wireshark dissector (tools/wireshark/metaroce.lua) on real traffic:
# dumpcap captures host A's side of the two-host veth while mr_integrity
# runs every RC operation (SEND, WRITE, READ, atomics, with and without
# immediate) with 2 % loss on A's egress, then rping connects through
# rdma_cm (UD datagrams on QP1). tshark dissects the capture with the
# dissector on the module's UDP port (its udp_port parameter). Every
# MetaRoCE datagram must be dissected, none as malformed or with a
# dissector error; the opcodes seen must include data (WRITE, SEND,
# READ_REQ/READ_RESP, atomics and their responses), ACK, the connection's
# announcement (PROBE), UD_SEND, and retransmissions (the RETX flag) which
# A's retransmits counter must confirm. The per-opcode counts are logged.
. "$(dirname "$0")/lib.sh"
mr_require_module

TOOL=$MR_TOP/build/userspace/tools/mr_integrity
LUA=$MR_TOP/tools/wireshark/metaroce.lua
CHECK=$MR_TOP/tools/wireshark/test/check.py
PORT=18575

[[ -x $TOOL ]] || mr_skip_all "$TOOL is missing: run make userspace"
command -v tshark >/dev/null && command -v dumpcap >/dev/null ||
	mr_skip_all "tshark/dumpcap are not installed (make deps)"

capture() {
	local udp cap=$MR_TMP/a.pcapng pid n all out before after retx
	udp=$(mr_udp_port)
	mr_netem "$MR_A_NS" "$MR_A_IF" loss 2%
	mr_defer ip netns exec "$MR_A_NS" tc qdisc del dev "$MR_A_IF" root
	mr_stats "$MR_A_DEV" >"$MR_TMP/before"

	ip netns exec "$MR_A_NS" dumpcap -q -i "$MR_A_IF" -f "udp port $udp" \
		-w "$cap" >"$MR_TMP/dumpcap.log" 2>&1 &
	pid=$!
	mr_defer kill "$pid"
	assert_wait "dumpcap is capturing" 20 grep -q "File:" "$MR_TMP/dumpcap.log"

	MR_PAIR_TIMEOUT=300 mr_pair integrity "tcp:$PORT" \
		"$TOOL" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$PORT" -q 2 \
		-n 4 -b 16 -m 262144 -s 27 -t 120 -- \
		"$TOOL" -d "$MR_A_DEV" -g "$MR_A_GIDX" -p "$PORT" -q 2 \
		-n 4 -b 16 -m 262144 -s 27 -t 120 "$MR_B_IP"
	mr_pair rping "cm:$PORT" \
		rping -s -a "$MR_B_IP" -p "$PORT" -C 3 -S 64 -- \
		rping -c -a "$MR_B_IP" -p "$PORT" -C 3 -S 64
	mr_stats "$MR_A_DEV" >"$MR_TMP/after"
	sleep 1
	kill -INT "$pid"
	wait "$pid" || true
	[[ -s $cap ]] || { cat "$MR_TMP/dumpcap.log"; mr_fail "nothing captured"; }

	# Every UDP datagram on the port, and what the dissector made of them.
	all=$(tshark -n -r "$cap" -Y "udp.port == $udp" -T fields \
		-e frame.number 2>/dev/null | grep -c . || true)
	tshark -n -r "$cap" -X "lua_script:$LUA" -o "metaroce.udp_port:$udp" \
		-T pdml >"$MR_TMP/a.pdml" 2>"$MR_TMP/tshark.err" ||
		{ cat "$MR_TMP/tshark.err"; mr_fail "tshark failed"; }
	if grep -i 'lua' "$MR_TMP/tshark.err"; then
		mr_fail "the dissector did not load"
	fi
	out=$(python3 "$CHECK" live "$MR_TMP/a.pdml") || true
	mr_log "$(grep -v '^bad ' <<<"$out" | paste -sd' ')"
	n=$(awk '$1 == "packets" { print $2 }' <<<"$out")
	assert_eq "MetaRoCE packets dissected (all UDP datagrams on port $udp)" \
		"$all" "$n"
	((n > 100)) || mr_fail "only $n packets captured"
	if grep '^bad ' <<<"$out"; then
		mr_fail "$(awk '$1 == "bad_total" { print $2 }' <<<"$out") packets malformed or not dissected cleanly"
	fi
	for op in WRITE SEND READ_REQ READ_RESP CMP_SWAP FETCH_ADD \
		ATOMIC_RESP ACK PROBE UD_SEND; do
		grep -q "^opcode $op [1-9]" <<<"$out" ||
			mr_fail "no $op packet in the capture"
	done
	retx=$(awk '$1 == "retx" { print $2 }' <<<"$out")
	before=$(mr_stat "$MR_TMP/before" retransmits)
	after=$(mr_stat "$MR_TMP/after" retransmits)
	mr_log "A's retransmits counter: +$((after - before)); RETX packets captured: $retx"
	((after > before)) || mr_fail "2 % loss and no retransmission counted"
	((retx > 0)) || mr_fail "no packet with the RETX flag in the capture"
}

mr_setup two_hosts mr_two_hosts
mr_run capture capture
mr_done
