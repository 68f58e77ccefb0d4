#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 900
#
# The driver layer under fuzzed packets (issue 25): napi.c, peer.c, the QP
# files, mem.c and the skb handling get mutated copies of real packets while they
# have live QPs, MRs and SRQs. Host A (10.9.2.1, plus 10.9.2.20) and host B
# (10.9.2.2), B's device the target (pktfuzz.py does the fuzzing):
#
#   fuzz_own_connection    B carries verified transfers from A's address
#                          (mr_mixed on SRQs, mr_integrity, in turn, one
#                          after the other) while pktfuzz.py, on a
#                          connection of its own (from .20, four QP pairs
#                          of its own, two on an SRQ, MRs with every
#                          remote right), captures its pairs' first
#                          contact and every operation each way to a
#                          pcap, then for MR_PKTFUZZ_SECONDS (default 75)
#                          sends B mutated copies: some in B's epoch for
#                          .20 at the next DSNs, some in epochs of its own
#                          that it opens by answering B's challenge, the
#                          rest as they come. Every transfer must pass,
#                          the capture must hold every opcode, the drops
#                          must show in B's counters (malformed, epoch,
#                          the QPs' own), and B must have adopted an epoch
#                          of the fuzzer's at least once (its packets
#                          reached the QPs).
#   replay_live_connection the live connection itself (from A's address):
#                          captured, then its packets sent again while the
#                          transfers go on, as they were (stale
#                          duplicates), in another epoch, and made
#                          malformed. The transfers must pass; B counts
#                          every malformed copy under rx_drop_malformed
#                          and the others under drop_epoch (hellos_rx
#                          for a copy of a hello).
#   device_works_after     a fresh mr_integrity from A's address and one
#                          over the fuzzed connection (.20) pass
#   module_unloads         the devices go and the module unloads (nothing
#                          the fuzzing left holds a reference), and the
#                          kernel's unreclaimable memory is back within
#                          4 MiB of where it was before the program
#                          (an skb leaked per fuzzed packet would be tens
#                          of MiB)
#
# Seeded: MR_PKTFUZZ_SEED=N repeats a run's mutations (the seed is
# printed). The kernel must stay quiet (the runner fails the program on any
# warning). `make fuzz-vm` runs this program for hours
# (MR_PKTFUZZ_SECONDS, default 3 h there).
. "$(dirname "$0")/lib.sh"
mr_require_module

INTEGRITY=$MR_TOP/build/userspace/tools/mr_integrity
MIXED=$MR_TOP/build/userspace/tools/mr_mixed
FUZZ=$(dirname "$(readlink -f "$0")")/pktfuzz.py
PYTHON=/usr/bin/python3
PORT=18660
FUZZ_IP=10.9.2.20
SECONDS_FUZZ=${MR_PKTFUZZ_SECONDS:-75}
SEED=${MR_PKTFUZZ_SEED:-}
# KiB of kernel memory the program may leave behind: what a first run in
# a boot keeps (ib_core, uverbs and rdma_cm modules loaded, worker
# threads): 2.7 MiB when pktfuzz.sh ran alone in a fresh boot.
SLACK_KB=4096

[[ -x $INTEGRITY && -x $MIXED ]] ||
	mr_skip_all "$INTEGRITY or $MIXED is missing: run make userspace"
"$PYTHON" -c 'import pyverbs.qp' 2>/dev/null ||
	mr_skip_all "python3-pyverbs is not installed"

setup() {
	KMEM0=$(mr_kmem)
	mr_two_hosts
	ip -n "$MR_A_NS" addr add "$FUZZ_IP/24" dev "$MR_A_IF"
	assert_wait "$MR_A_DEV has a GID for $FUZZ_IP" 10 \
		mr_gid_index "$MR_A_DEV" "$FUZZ_IP"
	FUZZ_GIDX=$(mr_gid_index "$MR_A_DEV" "$FUZZ_IP")
	[[ -r /sys/kernel/debug/metaroce/$MR_B_DEV/peers ]] ||
		mr_fail "no debugfs telemetry (/sys/kernel/debug/metaroce)"
	STATE=$MR_TMP
}

# live_loop NAME: verified transfers from A's address to B, one after the
# other, until $STATE/NAME.stop exists: mr_mixed (16 QPs on SRQs, every
# operation) and mr_integrity (4 QPs, up to 256 KiB) in turn. Exits
# non-zero at the first that fails; the number that passed goes to
# $STATE/NAME.runs.
live_loop() {
	local name=$1 n=0
	echo 0 >"$STATE/$name.runs"
	while [[ ! -e $STATE/$name.stop ]]; do
		if ((n % 2 == 0)); then
			MR_PAIR_TIMEOUT=300 MR_PAIR_TRIES=1 mr_pair "$name.$n" \
				"tcp:$PORT" \
				"$MIXED" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$PORT" \
				-S "$((n + 1))" -q 16 -n 40 -Q -t "$(mr_secs 240)" -- \
				"$MIXED" -d "$MR_A_DEV" -g "$MR_A_GIDX" -p "$PORT" \
				-S "$((n + 1))" -q 16 -n 40 -Q -t "$(mr_secs 240)" "$MR_B_IP"
		else
			MR_PAIR_TIMEOUT=300 MR_PAIR_TRIES=1 mr_pair "$name.$n" \
				"tcp:$PORT" \
				"$INTEGRITY" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$PORT" \
				-q 4 -n 8 -b 8 -m 262144 -s "$((n + 1))" -t "$(mr_secs 240)" -- \
				"$INTEGRITY" -d "$MR_A_DEV" -g "$MR_A_GIDX" -p "$PORT" \
				-q 4 -n 8 -b 8 -m 262144 -s "$((n + 1))" -t "$(mr_secs 240)" \
				"$MR_B_IP"
		fi
		n=$((n + 1))
		echo "$n" >"$STATE/$name.runs"
	done
}

# live_start NAME: live_loop NAME in the background, once its first
# transfer's connection carries QPs; LIVE_PID is its process.
live_start() {
	rm -f "$STATE/$1.stop"
	live_loop "$1" >"$STATE/$1.log" 2>&1 &
	LIVE_PID=$!
	mr_defer kill "$LIVE_PID"
	assert_wait "the live transfer's connection is up" 120 transfer_on
}

# live_stop NAME: ends the loop after its current transfer; fails the
# subtest if a transfer failed or none ran.
live_stop() {
	local rc=0 runs
	touch "$STATE/$1.stop"
	wait "$LIVE_PID" || rc=$?
	runs=$(<"$STATE/$1.runs")
	grep -hE "^mr_(integrity|mixed)" "$STATE/$1".*.client 2>/dev/null |
		tail -n 4 || true
	if ((rc != 0)); then
		tail -n 60 "$STATE/$1.log"
		mr_fail "a live transfer failed under fuzzing (after $runs passed)"
	fi
	((runs >= 1)) || mr_fail "no live transfer ran"
	mr_log "live transfers: $runs passed"
}

# B's connection from A's address carries QPs: a transfer is on.
transfer_on() {
	grep -qE "^peer ::ffff:$MR_A_IP local ::ffff:$MR_B_IP qps [1-9]" \
		"/sys/kernel/debug/metaroce/$MR_B_DEV/peers"
}

# fuzzer CMD OUT [ARGS...]: pktfuzz.py CMD, its output to $STATE/OUT.
fuzzer() {
	local cmd=$1 out=$2 rc=0
	shift 2
	"$PYTHON" "$FUZZ" --wire "$MR_TOP/include/metaroce/mr_wire.h" \
		--netns "$MR_A_NS" --iface "$MR_A_IF" --dst "$MR_B_IP" \
		--port "$(mr_udp_port)" ${SEED:+--seed "$SEED"} "$@" "$cmd" \
		>"$STATE/$out" 2>&1 || rc=$?
	sed "s/^/pktfuzz.py $cmd: /" "$STATE/$out"
	if ((rc != 0)); then
		mr_diag "$MR_A_DEV" "$MR_B_DEV"
		mr_fail "pktfuzz.py $cmd failed (exit status $rc)"
	fi
}

# got OUT KEY: the value of "KEY VALUE" in $STATE/OUT.
got() {
	local v
	v=$(awk -v k="$2" '$1 == k { print $2; exit }' "$STATE/$1")
	[[ -n $v ]] || mr_fail "pktfuzz.py reported no '$2' in $1"
	echo "$v"
}

delta() { mr_stat_delta "$STATE/$1.before" "$STATE/$1.after" "$2"; }

# Counters that show where B dropped the fuzzed packets.
DROPS="rx_drop_malformed rx_drop_no_qp rx_drop_no_conn rx_drop_backlog
	drop_epoch drop_psn_window drop_dsn_window drop_duplicate drop_no_qp
	drop_qp_state drop_wrong_peer drop_msn_window drop_stale_gen
	drop_inconsistent drop_rnr drop_access drop_invalid_request drop_ssn
	hellos_rx resets_tx naks_tx segments_placed messages_done_rx
	epoch_restored"

own_connection() {
	local corpus op moved qp_drops=0 c
	mr_stats "$MR_B_DEV" >"$STATE/fuzz.before"
	live_start live
	fuzzer fuzz fuzz.out --src "$FUZZ_IP" --pcap "$STATE/fuzz.pcap" \
		--seconds "$SECONDS_FUZZ" --a-dev "$MR_A_DEV" \
		--a-gidx "$FUZZ_GIDX" --b-dev "$MR_B_DEV" --b-gidx "$MR_B_GIDX"
	live_stop live
	mr_stats "$MR_B_DEV" >"$STATE/fuzz.after"
	# shellcheck disable=SC2086 # a list of names
	moved=$(mr_stat_moved "$STATE/fuzz.before" "$STATE/fuzz.after" $DROPS)
	mr_log "B's counters:$moved"
	mr_log "seed $(got fuzz.out seed) (MR_PKTFUZZ_SEED reproduces it)"

	# Before any fuzzing (later rounds' pairs use the connection the
	# previous round fuzzed: their failures are legitimate, and logged).
	assert_eq "the fuzzer's first pairs' real operations that failed" 0 \
		"$(got fuzz.out real_failed_first)"
	corpus=$(grep '^corpus ' "$STATE/fuzz.out")
	for op in WRITE SEND READ_REQ READ_RESP CMP_SWAP FETCH_ADD \
		ATOMIC_RESP ACK PROBE RESET; do
		[[ $corpus == *" $op="* ]] ||
			mr_fail "the capture has no $op packet: $corpus"
	done
	(($(got fuzz.out sent) >= 1000)) ||
		mr_fail "the fuzzer sent only $(got fuzz.out sent) packets"
	(($(delta fuzz rx_drop_malformed) > 0)) ||
		mr_fail "rx_drop_malformed did not move"
	(($(delta fuzz drop_epoch) > 0)) || mr_fail "drop_epoch did not move"
	(($(got fuzz.out cookies) >= 1)) ||
		mr_fail "the fuzzer never got B's challenge for its epochs"
	(($(got fuzz.out adopted) >= 1)) ||
		mr_fail "B never took an epoch of the fuzzer's"
	for c in drop_no_qp drop_wrong_peer drop_msn_window drop_qp_state \
		drop_access drop_invalid_request drop_inconsistent drop_ssn \
		drop_stale_gen; do
		qp_drops=$((qp_drops + $(delta fuzz "$c")))
	done
	((qp_drops > 0)) || mr_fail "no packet was dropped at a QP"
}

replay_live() {
	local malformed epoch lost got_m got_e
	mr_stats "$MR_B_DEV" >"$STATE/replay.before"
	live_start replay
	fuzzer replay replay.out --src "$MR_A_IP" --pcap "$STATE/replay.pcap" \
		--capture-seconds 3 --seconds 30
	live_stop replay
	mr_stats "$MR_B_DEV" >"$STATE/replay.after"
	# shellcheck disable=SC2086 # a list of names
	mr_log "B's counters:$(mr_stat_moved "$STATE/replay.before" \
		"$STATE/replay.after" $DROPS)"
	malformed=$(got replay.out malformed) epoch=$(got replay.out epoch)
	# A copy of a hello in another epoch is a hello again (hellos_rx).
	got_m=$(delta replay rx_drop_malformed)
	got_e=$(($(delta replay drop_epoch) + $(delta replay hellos_rx)))
	lost=$(delta replay rx_drop_backlog)
	mr_log "sent $(got replay.out replay) stale copies, $epoch in another" \
		"epoch (drop_epoch + hellos_rx +$got_e), $malformed malformed" \
		"(rx_drop_malformed +$got_m); rx_drop_backlog +$lost"
	((got_m <= malformed && got_m >= malformed - lost)) ||
		mr_fail "rx_drop_malformed grew by $got_m, expected $malformed (or up to $lost less)"
	((got_e >= epoch - lost)) ||
		mr_fail "drop_epoch + hellos_rx grew by $got_e, expected $epoch at least"
}

# fresh NAME GIDX: a short mr_integrity from A's address with A's GID
# GIDX to B.
fresh() {
	MR_PAIR_TIMEOUT=300 MR_PAIR_TRIES=1 mr_pair "$1" "tcp:$PORT" \
		"$INTEGRITY" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$PORT" -q 4 \
		-n 4 -b 8 -m 1048576 -s 77 -t "$(mr_secs 240)" -- \
		"$INTEGRITY" -d "$MR_A_DEV" -g "$2" -p "$PORT" -q 4 -n 4 -b 8 \
		-m 1048576 -s 77 -t "$(mr_secs 240)" "$MR_B_IP"
	grep -h "^mr_integrity: OK" "$MR_TMP/$1.client" "$MR_TMP/$1.server"
}

works_after() {
	fresh after_main "$MR_A_GIDX"
	fresh after_fuzzed "$FUZZ_GIDX"
}

unloads() {
	mr_netns_kill "$MR_A_NS" "$MR_B_NS"
	assert_ok "rdma link delete $MR_A_DEV" rdma link delete "$MR_A_DEV"
	assert_ok "rdma link delete $MR_B_DEV" rdma link delete "$MR_B_DEV"
	assert_wait "devices gone" 30 mr_dev_gone "$MR_B_DEV"
	assert_ok "rmmod $MR_MOD" rmmod "$MR_MOD"
	assert_wait "module gone" 10 mr_mod_gone
	# Namespaces and veths go at the end of the program: theirs first.
	netns_del "$MR_A_NS" "$MR_B_NS"
	wait_for 30 kmem_back || true
	mr_log "kernel memory: $KMEM0 KiB before, $(mr_kmem) KiB now"
	kmem_back || mr_fail "kernel memory did not come back within ${SLACK_KB} KiB"
}

kmem_back() { (($(mr_kmem) <= KMEM0 + SLACK_KB)); }

netns_del() {
	local ns
	for ns; do
		ip netns del "$ns" 2>/dev/null || true
	done
	wait_for 10 netns_gone "$@" || true
}
netns_gone() {
	local ns
	for ns; do
		[[ ! -e /run/netns/$ns ]] || return 1
	done
}

mr_setup two_hosts setup
mr_run fuzz_own_connection own_connection
mr_run replay_live_connection replay_live
mr_run device_works_after works_after
mr_run module_unloads unloads
mr_done
