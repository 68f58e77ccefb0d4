#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 600
#
# Hostile input while a real transfer runs. Host A (10.9.2.1, plus .3 and
# .4) and host B (10.9.2.2) run mr_integrity; meanwhile hostile.py sends B's
# device, from A's namespace:
#
#   malformed   every kind of malformed packet, from A's real address
#   valid       well-formed packets of every opcode from .4, which has no
#               connection to B
#   ud          UD datagrams to QPNs without a UD QP
#   epoch       well-formed packets from A's address with epochs B does not
#               know (what an off-path attacker can do)
#   dsn         packets in B's epoch for A whose DSN is far outside the
#               window, ahead or behind (what an on-path attacker can do)
#   victim      on a second connection (.3 to B) with live QPs of its own:
#               WRITEs to QPs that are not its own (including the running
#               transfer's), from a wrong source QP, and with a wrong R_Key
#
# Then, on a connection of their own (from 10.9.2.5), two QP pairs of
# hostile.py's own: a bad R_Key fails one pair, the other must carry on (a
# QP error is the QP's alone, not its connection's).
#
# Then first contact under attack (protocol.rst 7.2 and 11), each on a
# connection of its own: B connects a QP to A's address, a forger strikes
# before A sends anything (an epoch of its own, a SEND that matches B's
# posted receive, and more of both every 5 ms for 4 s), then A connects and
# SENDs. The forger is an unprivileged process on host A (uid 65534 in A's
# namespace, from .6; after B's connection was collected by the idle
# clean-up, from .8), or an off-path host in a third namespace, joined to
# B only, that spoofs A's address (.7). A's SEND must complete, B must
# receive exactly A's bytes and hold A's epoch, and no forged SEND may
# complete.
# Then the receive side's rules (issue 25), each on a connection of its own
# whose QP pairs hostile.py opens with a real WRITE before it forges SENDs
# in B's epoch with the DSNs A would use next:
#
#   ssn_out_of_place    two SENDs with SSN 0, one receive posted: the first
#                       completes on it, the second fails the QP (invalid
#                       request, drop_ssn), no receive is retired twice
#   duplicate_segment   a SEND's first segment twice, under two DSNs: no
#                       completion until its second segment comes
#   srq_receives_once   QPs on an SRQ: an RNR rewind re-binds the receive a
#                       later message took; the receives QPs hold when they
#                       are destroyed or reset go back to the SRQ, and one
#                       held when the QP fails completes flushed: each of
#                       the SRQ's receives completes exactly once
#
# Then the attacks from first contact on (issue 25), against a second
# verified transfer: mr_mixed on an SRQ (WRITE, SEND, READ, atomics, every
# byte, READ and atomic result checked), run after run from A's address
# .12 until the attacks are over:
#
#   syn_flood_before_pair   SYNs of fresh epochs from new source ports,
#                           from before B knows .12 until the transfer is
#                           well under way: an unprivileged process on A
#                           and an off-path host spoofing .12 towards B,
#                           an unprivileged process on B towards A; every
#                           one dropped (no_conn, then epoch with a
#                           challenge each), no epoch ever adopted
#   forged_sends_dropped    SENDs to B's transfer QPs, MSNs brute-forced:
#                           off-path (fresh epochs: drop_epoch), on-path
#                           (B's epoch, DSNs far ahead: drop_dsn_window,
#                           long settled: drop_duplicate)
#   forged_responses_dropped  the same with READ and atomic responses to
#                           A's QPs, which always have READs and atomics
#                           outstanding
#   rate_hints_forged       ACKs to A with Rate Hints 1 Mbit/s, 2^32 - 1
#                           and 0: off-path ones dropped (epoch), on-path
#                           ones count (protocol.rst, section 11) and A
#                           keeps completing messages under them
#   junk_flood_dropped      10000 datagrams back to back from 256 sources
#                           nobody has: each is no_conn or lost to a full
#                           receive queue (rx_drop_backlog), none makes a
#                           connection
#   attacks_leave_nothing   every connection is collected once idle, no RC
#                           QP is left, the module unloads
#
# The first subtest runs the transfer and the attacks; the others check
# what B counted for each kind. The transfer must pass (every byte checked,
# no failed completion), each kind must be dropped and counted under its
# documented reason, no forged WRITE may land, and the kernel must stay quiet
# (the runner fails the program on any warning).
. "$(dirname "$0")/lib.sh"
mr_require_module

TOOL=$MR_TOP/build/userspace/tools/mr_integrity
HOSTILE=$(dirname "$(readlink -f "$0")")/hostile.py
PYTHON=/usr/bin/python3
PORT=18580
VICTIM_IP=10.9.2.3
STRANGER_IP=10.9.2.4
# A connection of its own for the isolation subtest: the victim's forged
# WRITEs took DSNs of the victim's connection in B's epoch, so that
# connection's next real packets are duplicates to B until it is
# collected (what an on-path attacker who sees the epoch can do).
ISOLATION_IP=10.9.2.5
# First contact under attack: a connection of its own each.
LOCAL_FORGER_IP=10.9.2.6
SPOOFED_IP=10.9.2.7
CLEANUP_IP=10.9.2.8
# The off-path host: its own namespace, linked to B only.
SPOOF_NS=mrdpc SPOOF_IF=mrdpc0 SPOOF_B_IF=mrdpb1
SPOOF_IP=10.9.3.1 SPOOF_B_IP=10.9.3.2
NOBODY=65534
# Connections of their own for the receive-side attacks.
SSN_IP=10.9.2.9
SEGMENTS_IP=10.9.2.10
SRQ_IP=10.9.2.11
# From first contact on: a second transfer, mr_mixed on an SRQ (every
# READ, atomic result and received byte checked), from an address of A's
# that B has never heard of when the floods start.
MIXED=$MR_TOP/build/userspace/tools/mr_mixed
MIXED_IP=10.9.2.12
MIXED_PORT=18581
# One run: a few seconds under TCG; they follow each other until the
# attacks are over.
MIXED_ARGS=(-q 8 -n 500 -D 8 -m 4096 --srq -S 25 -t "$(mr_secs 250)")

[[ -x $TOOL ]] || mr_skip_all "$TOOL is missing: run make userspace"
"$PYTHON" -c 'import pyverbs.qp' 2>/dev/null ||
	mr_skip_all "python3-pyverbs is not installed"

setup() {
	mr_two_hosts
	ip -n "$MR_A_NS" addr add "$VICTIM_IP/24" dev "$MR_A_IF"
	ip -n "$MR_A_NS" addr add "$STRANGER_IP/24" dev "$MR_A_IF"
	ip -n "$MR_A_NS" addr add "$ISOLATION_IP/24" dev "$MR_A_IF"
	for ip in "$LOCAL_FORGER_IP" "$SPOOFED_IP" "$CLEANUP_IP"; do
		ip -n "$MR_A_NS" addr add "$ip/24" dev "$MR_A_IF"
	done
	mr_netns "$SPOOF_NS"
	mr_veth "$SPOOF_IF" "$SPOOF_B_IF" "$SPOOF_NS" "$MR_B_NS"
	ip -n "$SPOOF_NS" addr add "$SPOOF_IP/24" dev "$SPOOF_IF"
	ip -n "$MR_B_NS" addr add "$SPOOF_B_IP/24" dev "$SPOOF_B_IF"
	ip -n "$SPOOF_NS" route add 10.9.2.0/24 via "$SPOOF_B_IP"
	# B takes what arrives from A's addresses on the wrong link.
	ip netns exec "$MR_B_NS" sysctl -qw net.ipv4.conf.all.rp_filter=0 \
		"net.ipv4.conf.$SPOOF_B_IF.rp_filter=0"
	ip -n "$MR_A_NS" addr add "$SSN_IP/24" dev "$MR_A_IF"
	ip -n "$MR_A_NS" addr add "$SEGMENTS_IP/24" dev "$MR_A_IF"
	ip -n "$MR_A_NS" addr add "$SRQ_IP/24" dev "$MR_A_IF"
	ip -n "$MR_A_NS" addr add "$MIXED_IP/24" dev "$MR_A_IF"
	assert_wait "$MR_A_DEV has a GID for $VICTIM_IP" 10 \
		mr_gid_index "$MR_A_DEV" "$VICTIM_IP"
	[[ -r /sys/kernel/debug/metaroce/$MR_B_DEV/peers ]] ||
		mr_fail "no debugfs telemetry (/sys/kernel/debug/metaroce)"
	STATE=$MR_TMP # what the attack records, for the subtests after it
}

# hostile CMD [ARGS...]: hostile.py CMD towards B's device from A's
# namespace; its output is logged, its "sent N" (and "KEY N") lines are
# kept in $STATE/CMD.
hostile() {
	local cmd=$1 out
	shift
	out=$("$PYTHON" "$HOSTILE" --wire "$MR_TOP/include/metaroce/mr_wire.h" \
		--netns "$MR_A_NS" --dst "$MR_B_IP" --port "$(mr_udp_port)" \
		"$@" "$cmd" 2>&1) || {
		echo "$out"
		mr_diag "$MR_A_DEV" "$MR_B_DEV"
		echo "--- the transfer so far:"
		tail -n 30 "$STATE/transfer"
		mr_fail "hostile.py $cmd failed"
	}
	sed "s/^/hostile.py $cmd: /" <<<"$out"
	grep -E '^[a-z_]+ [0-9]+$' <<<"$out" >"$STATE/$cmd"
}

no_peers() {
	! grep -q '^peer' "/sys/kernel/debug/metaroce/$MR_A_DEV/peers" \
		"/sys/kernel/debug/metaroce/$MR_B_DEV/peers"
}

# B's connection from A exists and carries QPs: the transfer is on.
transfer_on() {
	grep -qE "^peer ::ffff:$MR_A_IP local ::ffff:$MR_B_IP qps [1-9]" \
		"/sys/kernel/debug/metaroce/$MR_B_DEV/peers"
}

attack() {
	local pid a_gidx rc=0
	# Start from no state at all (peers of earlier programs are idle-freed).
	assert_wait "no peers left from earlier transfers" 30 no_peers
	mr_stats "$MR_B_DEV" >"$STATE/before"
	(MR_PAIR_TIMEOUT=600 mr_pair transfer "tcp:$PORT" \
		"$TOOL" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$PORT" -q 2 -n 2000 \
		-b 8 -m 65536 -s 11 -t "$(mr_secs 120)" -- \
		"$TOOL" -d "$MR_A_DEV" -g "$MR_A_GIDX" -p "$PORT" -q 2 -n 2000 \
		-b 8 -m 65536 -s 11 -t "$(mr_secs 120)" "$MR_B_IP") >"$STATE/transfer" 2>&1 &
	pid=$!
	mr_defer kill "$pid"
	assert_wait "the transfer's connection is up" 60 transfer_on

	hostile malformed --src "$MR_A_IP" --repeat 3
	hostile valid --src "$STRANGER_IP" --repeat 3
	hostile ud --src "$MR_A_IP"
	hostile epoch --src "$MR_A_IP" --dev "$MR_B_DEV" --repeat 3
	hostile dsn --src "$MR_A_IP" --dev "$MR_B_DEV" --peer-dev "$MR_A_DEV" \
		--ahead --repeat 20
	mv "$STATE/dsn" "$STATE/dsn_ahead"
	hostile dsn --src "$MR_A_IP" --dev "$MR_B_DEV" --peer-dev "$MR_A_DEV" \
		--repeat 20
	a_gidx=$(mr_gid_index "$MR_A_DEV" "$VICTIM_IP")
	hostile victim --src "$VICTIM_IP" --a-dev "$MR_A_DEV" --a-gidx "$a_gidx" \
		--b-dev "$MR_B_DEV" --b-gidx "$MR_B_GIDX"
	if kill -0 "$pid" 2>/dev/null; then
		mr_log "the attacks ended while the transfer was still running"
	else
		mr_log "NOTE: the transfer ended before the attacks did"
	fi

	wait "$pid" || rc=$?
	sed 's/^/transfer: /' "$STATE/transfer" | grep -v '^transfer: # ' || true
	((rc == 0)) || mr_fail "the transfer failed under attack (exit status $rc)"
	grep -h "^mr_integrity: OK" "$STATE/transfer" || true
	mr_stats "$MR_B_DEV" >"$STATE/after"
}

# attacked: the attack subtest ran to its end.
attacked() {
	[[ -f $STATE/after ]] || mr_fail "no counters after the attack (see attack_during_transfer)"
}

# sent KIND [KEY]: what hostile.py reported for KIND (key "sent").
sent() {
	local v
	v=$(awk -v k="${2:-sent}" '$1 == k { print $2 }' "$STATE/$1")
	[[ -n $v ]] || mr_fail "hostile.py $1 reported no '${2:-sent}'"
	echo "$v"
}

delta() {
	mr_stat_delta "$STATE/before" "$STATE/after" "$1"
}

# Datagrams can be lost before the device sees them only when its receive
# backlog overflows (rx_drop_backlog, counted before any check).
check_exact() { # WHAT COUNTER SENT
	local got lost
	got=$(delta "$2") lost=$(delta rx_drop_backlog)
	mr_log "$1: sent $3, $2 +$got (rx_drop_backlog +$lost)"
	((got <= $3 && got >= $3 - lost)) ||
		mr_fail "$1: $2 grew by $got, expected $3 (or up to $lost less)"
}

malformed() {
	attacked
	check_exact "malformed packets" rx_drop_malformed "$(sent malformed)"
}

# Well-formed but from an address without a connection: nothing malformed.
no_connection() {
	attacked
	check_exact "packets from $STRANGER_IP" rx_drop_no_conn "$(sent valid)"
}

ud_no_qp() {
	attacked
	check_exact "UD datagrams to no UD QP" rx_drop_no_qp "$(sent ud)"
}

# Every packet with an unknown epoch is dropped, a SYN among them too: it
# cannot answer B's challenge (protocol.rst 7.2), so B never adopts it and
# never has to restore A's window.
wrong_epoch() {
	local n syn got restored
	attacked
	n=$(sent epoch) syn=$(sent epoch syn)
	# A PROBE with SYN and no cookie is a hello: challenged and counted
	# as one (hellos_rx), not as a drop (protocol.rst 7.2).
	got=$(($(delta drop_epoch) + $(delta hellos_rx)))
	restored=$(delta epoch_restored)
	mr_log "wrong epochs: sent $n ($syn SYN), drop_epoch + hellos_rx +$got, epoch_restored +$restored"
	((got >= n)) || mr_fail "drop_epoch + hellos_rx grew by $got, expected $n at least"
	((restored == 0)) || mr_fail "B adopted a forged epoch ($restored restores)"
}

dsn_window() {
	local ahead behind got dup
	attacked
	ahead=$(sent dsn_ahead) behind=$(sent dsn)
	got=$(delta drop_dsn_window) dup=$(delta drop_duplicate)
	mr_log "DSN ahead of the window: sent $ahead, drop_dsn_window +$got;" \
		"behind: sent $behind, drop_duplicate +$dup"
	assert_eq "drop_dsn_window growth" "$ahead" "$got"
	((dup >= behind)) || mr_fail "drop_duplicate grew by $dup, expected $behind at least"
}

# On the victim's connection: WRITEs to QPs that are not its own are
# refused as no_qp / wrong_peer; the one with a wrong R_Key fails the QP
# (a NAK, as InfiniBand's remote access error) without writing (hostile.py
# checked the memory).
forged_writes() {
	local others wrong got nak state
	attacked
	others=$(sent victim not_its_qp) wrong=$(sent victim wrong_source_qp)
	got=$(($(delta drop_no_qp) + $(delta drop_wrong_peer)))
	mr_log "forged WRITEs to other QPs: $others, from a wrong QP: $wrong;" \
		"drop_no_qp + drop_wrong_peer +$got"
	assert_eq "drop_no_qp + drop_wrong_peer growth" "$((others + wrong))" "$got"
	nak=$(($(delta naks_tx) + $(delta drop_access)))
	((nak >= 1)) || mr_fail "the WRITE with a bad R_Key was neither NAKed nor counted as drop_access"
	state=$(sent victim victim_state)
	# enum ibv_qp_state: IBV_QPS_ERR is 6.
	assert_eq "state of the QP a bad R_Key was used on (IBV_QPS_ERR)" 6 "$state"
	mr_log "bad R_Key: naks_tx + drop_access +$nak, QP in error," \
		"requester QP state $(sent victim requester_state)"
}

# isolation: hostile.py's two QP pairs share B's connection from
# $ISOLATION_IP; the bad R_Key fails its pair (the requester with a remote
# access error), the other pair's WRITEs all complete and land, and both
# of its QPs stay in RTS.
isolation() {
	local a_gidx qps
	assert_wait "$MR_A_DEV has a GID for $ISOLATION_IP" 10 \
		mr_gid_index "$MR_A_DEV" "$ISOLATION_IP"
	a_gidx=$(mr_gid_index "$MR_A_DEV" "$ISOLATION_IP")
	hostile isolation --src "$ISOLATION_IP" --a-dev "$MR_A_DEV" \
		--a-gidx "$a_gidx" --b-dev "$MR_B_DEV" --b-gidx "$MR_B_GIDX"
	qps=$(sent isolation shared_qps)
	((qps >= 2)) ||
		mr_fail "the two QP pairs do not share B's connection (qps $qps)"
	# enum ibv_wc_status: IBV_WC_REM_ACCESS_ERR is 10; ibv_qp_state:
	# IBV_QPS_RTS 3, IBV_QPS_ERR 6.
	assert_eq "status of the WRITE with a bad R_Key" 10 \
		"$(sent isolation bad_write_status)"
	assert_eq "memory written by the bad WRITE" 0 \
		"$(sent isolation bad_data_landed)"
	assert_eq "state of its responder QP" 6 "$(sent isolation errored_state)"
	assert_eq "state of its requester QP" 6 \
		"$(sent isolation requester_errored_state)"
	assert_eq "WRITEs of the other pair that succeeded" \
		"$(sent isolation healthy_posted)" "$(sent isolation healthy_ok)"
	assert_eq "the other pair's data in place" 1 \
		"$(sent isolation healthy_data_ok)"
	assert_eq "state of the other pair's requester" 3 \
		"$(sent isolation healthy_state_a)"
	assert_eq "state of the other pair's responder" 3 \
		"$(sent isolation healthy_state_b)"
}

# first_contact NAME SRC FORGER [ARGS...]: hostile.py hijack over SRC, the
# forger started by the command line FORGER; its results in $STATE/NAME.
first_contact() {
	local name=$1 src=$2 forger=$3 a_gidx out port
	shift 3
	port=$(mr_udp_port)
	assert_wait "$MR_A_DEV has a GID for $src" 10 \
		mr_gid_index "$MR_A_DEV" "$src"
	a_gidx=$(mr_gid_index "$MR_A_DEV" "$src")
	mr_stats "$MR_B_DEV" >"$STATE/$name.before"
	out=$("$PYTHON" "$HOSTILE" --wire "$MR_TOP/include/metaroce/mr_wire.h" \
		--src "$src" --dst "$MR_B_IP" --port "$port" \
		--forger "$forger --wire $MR_TOP/include/metaroce/mr_wire.h --src $src --dst $MR_B_IP --port $port" \
		--a-dev "$MR_A_DEV" --a-gidx "$a_gidx" --b-dev "$MR_B_DEV" \
		--b-gidx "$MR_B_GIDX" "$@" hijack 2>&1) || {
		echo "$out"
		mr_diag "$MR_A_DEV" "$MR_B_DEV"
		mr_fail "hostile.py hijack ($name) failed"
	}
	sed "s/^/hostile.py hijack ($name): /" <<<"$out"
	sed -n 's/^forger: //p' <<<"$out" | grep -E '^[a-z_]+ [0-9]+$' \
		>"$STATE/$name.forger" || true
	grep -E '^[a-z_]+ [0-9]+$' <<<"$out" >"$STATE/$name"
	mr_stats "$MR_B_DEV" >"$STATE/$name.after"
}

# rec FILE KEY: KEY's value in $STATE/FILE.
rec() { awk -v k="$2" '$1 == k { print $2 }' "$STATE/$1"; }

# hijacked NAME: what first_contact NAME recorded, checked.
hijacked() {
	local name=$1 sent dropped resets
	sent=$(rec "$name.forger" sent)
	[[ -n $sent ]] || mr_fail "$name: the forger reported nothing"
	# Its hellos (PROBEs with SYN, no cookie) are counted apart.
	dropped=$(($(mr_stat_delta "$STATE/$name.before" "$STATE/$name.after" drop_epoch) +
		$(mr_stat_delta "$STATE/$name.before" "$STATE/$name.after" hellos_rx)))
	resets=$(mr_stat_delta "$STATE/$name.before" "$STATE/$name.after" resets_tx)
	mr_log "$name: forger sent $sent ($(rec "$name.forger" forged_sends) SENDs);" \
		"B: drop_epoch + hellos_rx +$dropped, challenges (resets_tx) +$resets;" \
		"A's SEND took $(rec "$name" a_send_ms) ms"
	assert_eq "$name: B took the forger's epoch at its first strike" 0 \
		"$(rec "$name" b_adopted_forged)"
	# enum ibv_wc_status: IBV_WC_SUCCESS is 0.
	assert_eq "$name: status of A's SEND" 0 "$(rec "$name" a_send_status)"
	assert_eq "$name: forged SEND landed in B's receive" 0 \
		"$(rec "$name" b_data_forged)"
	assert_eq "$name: receives B completed" 1 "$(rec "$name" b_receives)"
	assert_eq "$name: B's receive is A's SEND, complete" 1 \
		"$(rec "$name" b_receive_ok)"
	assert_eq "$name: B holds A's bytes" 1 "$(rec "$name" b_data_real)"
	assert_eq "$name: B holds A's epoch, not the forger's" 1 \
		"$(rec "$name" b_epoch_real)"
	((dropped >= sent)) ||
		mr_fail "$name: drop_epoch + hellos_rx grew by $dropped, less than the $sent forged packets"
	((resets >= 1)) || mr_fail "$name: B sent no challenge"
}

# An unprivileged process on host A: no spoofing needed, A's address is
# its own, but it cannot receive at A's MetaRoCE port.
local_forger() {
	first_contact local_forger "$LOCAL_FORGER_IP" \
		"ip netns exec $MR_A_NS setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups $PYTHON $HOSTILE"
	assert_eq "the forger's uid" "$NOBODY" "$(rec local_forger.forger uid)"
	hijacked local_forger
}

# An off-path host: root on its own machine, a raw socket spoofing A's
# address; it sees nothing B sends to A.
spoofing_host() {
	first_contact spoofing_host "$SPOOFED_IP" \
		"ip netns exec $SPOOF_NS $PYTHON $HOSTILE --raw"
	hijacked spoofing_host
}

# After the idle clean-up freed B's connection from A, while A's, long
# acknowledged, lives on.
after_cleanup() {
	first_contact after_cleanup "$CLEANUP_IP" \
		"ip netns exec $MR_A_NS setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups $PYTHON $HOSTILE" \
		--after-cleanup
	assert_eq "B's first connection was collected" 1 \
		"$(rec after_cleanup b_connection_collected)"
	hijacked after_cleanup
}

# own_pairs CMD IP: hostile.py CMD with QP pairs of its own on the
# connection from IP to B, B's counters before and after in
# $STATE/CMD.before and .after.
own_pairs() {
	local cmd=$1 ip=$2 a_gidx
	assert_wait "$MR_A_DEV has a GID for $ip" 10 \
		mr_gid_index "$MR_A_DEV" "$ip"
	a_gidx=$(mr_gid_index "$MR_A_DEV" "$ip")
	mr_stats "$MR_B_DEV" >"$STATE/$cmd.before"
	hostile "$cmd" --src "$ip" --a-dev "$MR_A_DEV" --a-gidx "$a_gidx" \
		--b-dev "$MR_B_DEV" --b-gidx "$MR_B_GIDX"
	mr_stats "$MR_B_DEV" >"$STATE/$cmd.after"
}

# ssn: the issue's trigger. Before the fix the second SEND also completed
# on receive 0 (a WARN, and the receive ring retired past its tail).
ssn_out_of_place() {
	local d
	own_pairs ssn "$SSN_IP"
	# enum ibv_wc_status: IBV_WC_SUCCESS 0; ibv_qp_state: IBV_QPS_ERR 6.
	assert_eq "receive completions" 1 "$(sent ssn recv_completions)"
	assert_eq "its status" 0 "$(sent ssn recv_status)"
	assert_eq "its length (the first SEND's)" 2048 "$(sent ssn recv_len)"
	assert_eq "its data, the first SEND's" 1 "$(sent ssn recv_data_ok)"
	assert_eq "the QP's state" 6 "$(sent ssn victim_state)"
	d=$(mr_stat_delta "$STATE/ssn.before" "$STATE/ssn.after" drop_ssn)
	((d >= 1)) || mr_fail "drop_ssn grew by $d, expected 1 at least"
	mr_log "two SENDs with SSN 0: one receive completion, QP in error, drop_ssn +$d"
}

# segments: before the fix the SEND completed on the copy (2048 bytes
# counted) with its second half never written.
duplicate_segment() {
	local d
	own_pairs segments "$SEGMENTS_IP"
	assert_eq "completions before the second segment" 0 \
		"$(sent segments early_completions)"
	assert_eq "receive completions" 1 "$(sent segments recv_completions)"
	assert_eq "its status" 0 "$(sent segments recv_status)"
	assert_eq "its length" 2048 "$(sent segments recv_len)"
	assert_eq "its data: the first copy, then the second segment" 1 \
		"$(sent segments recv_data_ok)"
	assert_eq "the QP's state (IBV_QPS_RTS)" 3 "$(sent segments victim_state)"
	d=$(mr_stat_delta "$STATE/segments.before" "$STATE/segments.after" \
		drop_duplicate)
	((d >= 1)) || mr_fail "drop_duplicate grew by $d, expected 1 at least"
}

# srq: receives are posted with wr_id 1 to 6, one at a time.
srq_receives_once() {
	own_pairs srq "$SRQ_IP"
	assert_eq "the rewound SEND 1's receive (the one posted next)" 2 \
		"$(sent srq rewind_first)"
	assert_eq "the rewound SEND 2's receive (the one it took first)" 1 \
		"$(sent srq rewind_second)"
	assert_eq "the next SEND's receive" 3 "$(sent srq after_rewind)"
	assert_eq "the receive a destroyed QP held, given back" 4 \
		"$(sent srq given_back_destroy)"
	assert_eq "the receive a reset QP held, given back" 5 \
		"$(sent srq given_back_reset)"
	# enum ibv_wc_status: IBV_WC_WR_FLUSH_ERR is 5.
	assert_eq "the receive a QP in error held, flushed" 6 \
		"$(sent srq flushed)"
	assert_eq "its status" 5 "$(sent srq flushed_status)"
	assert_eq "receives completed" 6 "$(sent srq srq_completed)"
	assert_eq "completions (each receive once)" 6 \
		"$(sent srq srq_completions)"
	assert_eq "successful ones" 5 "$(sent srq srq_ok)"
}

# --- from first contact on: a second verified transfer under attack ------------

# snap NAME: both devices' counters, as $STATE/NAME.A and $STATE/NAME.B.
snap() {
	mr_stats "$MR_A_DEV" >"$STATE/$1.A"
	mr_stats "$MR_B_DEV" >"$STATE/$1.B"
}

# d FROM TO SIDE COUNTER...: the sum of COUNTERs' growth on SIDE (A or B)
# between snapshots FROM and TO.
d() {
	local from=$1 to=$2 side=$3 c sum=0
	shift 3
	for c; do
		sum=$((sum + $(mr_stat_delta "$STATE/$from.$side" \
			"$STATE/$to.$side" "$c")))
	done
	echo "$sum"
}

# B's connection from $MIXED_IP, and A's to B from it.
mixed_peer_b() {
	grep -qE "^peer ::ffff:$MIXED_IP local ::ffff:$MR_B_IP " \
		"/sys/kernel/debug/metaroce/$MR_B_DEV/peers"
}
mixed_on() {
	grep -qE "^peer ::ffff:$MIXED_IP local ::ffff:$MR_B_IP qps [1-9].* rx_epoch 0*[1-9a-f]" \
		"/sys/kernel/debug/metaroce/$MR_B_DEV/peers" &&
		grep -qE "^peer ::ffff:$MR_B_IP local ::ffff:$MIXED_IP qps [1-9].* rx_epoch 0*[1-9a-f]" \
			"/sys/kernel/debug/metaroce/$MR_A_DEV/peers"
}

# connections DEV: how many connection objects DEV holds.
connections() {
	awk '$1 == "connections" { print $2 }' \
		"/sys/kernel/debug/metaroce/$1/peers"
}

# struck NAME...: each flood NAME has sent its first round.
struck() {
	local name
	for name; do
		grep -q '^struck 1$' "$STATE/$name" || return 1
	done
}

# flood NAME LAUNCHER ARGS...: hostile.py synflood in the background, run
# by the command line LAUNCHER, while $FLOODING exists; its output goes to
# $STATE/NAME.
flood() {
	local name=$1 launcher=$2
	shift 2
	# shellcheck disable=SC2086 # LAUNCHER is a command line
	$launcher --wire "$MR_TOP/include/metaroce/mr_wire.h" \
		--port "$(mr_udp_port)" --stop-file "$FLOODING" --seconds 400 \
		--interval 20 "$@" synflood >"$STATE/$name" 2>&1 &
	FLOOD_PIDS+=($!)
	mr_defer kill "$!"
}

# mixed_runs A_GIDX: mr_mixed between $MIXED_IP (GID index A_GIDX) and B,
# run after run while $ATTACKING exists, each checked (every byte, READ,
# atomic result and completion); non-zero at the first that fails.
mixed_runs() {
	local n=0
	while ((n == 0)) || [[ -e $ATTACKING ]]; do
		MR_PAIR_TIMEOUT=300 MR_PAIR_TRIES=1 mr_pair "mixed$n" \
			"tcp:$MIXED_PORT" \
			"$MIXED" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$MIXED_PORT" \
			"${MIXED_ARGS[@]}" -- \
			"$MIXED" -d "$MR_A_DEV" -g "$1" -p "$MIXED_PORT" \
			"${MIXED_ARGS[@]}" "$MR_B_IP" || return 1
		grep -h "^mr_mixed: OK" "$MR_TMP/mixed$n.client" \
			"$MR_TMP/mixed$n.server"
		n=$((n + 1))
	done
}

# The attacks run against mr_mixed between $MIXED_IP and B. SYN floods of
# fresh epochs start before it: an unprivileged process on A (from A's
# address) and an off-path host spoofing it, both towards B, and an
# unprivileged process on B towards A; they go on while the QPs connect
# and the data moves. Then, in the transfer, forged SENDs to B's QPs and
# forged READ and atomic responses to A's (which has READs and atomics
# outstanding all the time), MSNs brute-forced, off-path (fresh epochs)
# and on-path (the epoch, but DSNs outside the window). After the SYN
# floods, ACKs to A whose Rate Hints say 1 Mbit/s, 2^32 - 1 and nothing,
# on-path and off-path, then a flood from 256 junk sources, back to back.
attack_first_contact() {
	local pid p rc=0 nobody_a nobody_b a_gidx
	[[ -x $MIXED ]] || mr_fail "$MIXED is missing: run make userspace"
	assert_wait "$MR_A_DEV has a GID for $MIXED_IP" 10 \
		mr_gid_index "$MR_A_DEV" "$MIXED_IP"
	a_gidx=$(mr_gid_index "$MR_A_DEV" "$MIXED_IP")
	! mixed_peer_b || mr_fail "B knows $MIXED_IP before the attack"
	nobody_a="ip netns exec $MR_A_NS setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups $PYTHON $HOSTILE"
	nobody_b="ip netns exec $MR_B_NS setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups $PYTHON $HOSTILE"
	# Where the unprivileged floods can see it.
	FLOODING=$(mktemp /tmp/mr-flooding.XXXXXX)
	chmod 644 "$FLOODING"
	mr_defer rm -f "$FLOODING"
	FLOOD_PIDS=()
	snap start
	flood syn_local "$nobody_a" --src "$MIXED_IP" --dst "$MR_B_IP"
	flood syn_spoofed "ip netns exec $SPOOF_NS $PYTHON $HOSTILE --raw" \
		--src "$MIXED_IP" --dst "$MR_B_IP"
	flood syn_to_a "$nobody_b" --src "$MR_B_IP" --dst "$MIXED_IP"
	assert_wait "the floods strike" 60 struck syn_local syn_spoofed syn_to_a
	sleep 1
	! mixed_peer_b || mr_fail "B made a connection for the floods"
	# The transfer: mr_mixed runs, one after the other, until the attacks
	# are over (a run's QPs are new, its connection the same).
	ATTACKING=$FLOODING.attacking
	touch "$ATTACKING"
	mr_defer rm -f "$ATTACKING"
	snap paired
	mixed_runs "$a_gidx" >"$STATE/transfer2" 2>&1 &
	pid=$!
	mr_defer kill "$pid"
	assert_wait "the transfer's connections are up" 120 mixed_on
	snap inject

	hostile inject --src "$MIXED_IP" --dev "$MR_B_DEV" \
		--peer-dev "$MR_A_DEV" --op send --msns 24 --repeat 20
	mv "$STATE/inject" "$STATE/inject_send"
	hostile inject --netns "$MR_B_NS" --src "$MR_B_IP" --dst "$MIXED_IP" \
		--dev "$MR_A_DEV" --peer-dev "$MR_B_DEV" --op read_resp \
		--msns 24 --repeat 20
	mv "$STATE/inject" "$STATE/inject_read"
	hostile inject --netns "$MR_B_NS" --src "$MR_B_IP" --dst "$MIXED_IP" \
		--dev "$MR_A_DEV" --peer-dev "$MR_B_DEV" --op atomic_resp \
		--msns 24 --repeat 20
	mv "$STATE/inject" "$STATE/inject_atomic"
	snap floods
	rm -f "$FLOODING"
	for p in "${FLOOD_PIDS[@]}"; do
		wait "$p" || mr_fail "a SYN flood failed: $(cat "$STATE"/syn_*)"
	done
	# The ACKs after the floods: nothing else draws drop_epoch from A.
	snap acks
	hostile acks --netns "$MR_B_NS" --src "$MR_B_IP" --dst "$MIXED_IP" \
		--dev "$MR_A_DEV" --seconds 3 --interval 2
	snap junk
	connections "$MR_B_DEV" >"$STATE/connections.before"
	hostile junk --netns "$SPOOF_NS" --src "$SPOOF_IP" --count 10000
	connections "$MR_B_DEV" >"$STATE/connections.after"
	snap end_of_attacks
	if kill -0 "$pid" 2>/dev/null; then
		echo "transfer_outlasted 1" >"$STATE/outlasted"
	else
		echo "transfer_outlasted 0" >"$STATE/outlasted"
	fi
	rm -f "$ATTACKING"
	wait "$pid" || rc=$?
	sed 's/^/transfer: /' "$STATE/transfer2"
	((rc == 0)) || mr_fail "the transfer failed under attack (exit status $rc)"
	mr_log "mr_mixed ran $(($(grep -c "^mr_mixed: OK" "$STATE/transfer2") / 2))" \
		"times, client and server OK each time"
	snap after
}

# attacked2: attack_first_contact ran to its end.
attacked2() {
	[[ -f $STATE/after.B ]] ||
		mr_fail "no counters after the attack (see attack_first_contact)"
	assert_eq "the transfer was running until the attacks ended" 1 \
		"$(rec outlasted transfer_outlasted)"
}

# The floods' packets were all dropped, before B knew $MIXED_IP (no_conn)
# or after (epoch; each SYN of at least 32 bytes drew a challenge); none
# made B or A take its epoch (a real one is restored only after a forged
# one was adopted).
syn_flood() {
	local to_b to_a got lost name side n
	attacked2
	for name in syn_local syn_spoofed syn_to_a; do
		[[ -n $(rec "$name" sent) ]] || mr_fail "$name reported nothing"
		mr_log "$name: $(rec "$name" sent) SYNs from $(rec "$name" ports) source ports"
		(($(rec "$name" ports) >= 20)) ||
			mr_fail "$name: only $(rec "$name" ports) rounds before the transfer's end"
	done
	assert_eq "uid of the flood from A" "$NOBODY" "$(rec syn_local uid)"
	got=$(d start paired B drop_no_conn rx_drop_no_conn)
	mr_log "B: before the transfer began, $got of them dropped as from no connection"
	((got >= 1)) || mr_fail "the floods did not strike before the transfer began"
	to_b=$(($(rec syn_local sent) + $(rec syn_spoofed sent)))
	to_a=$(rec syn_to_a sent)
	for side in B A; do
		if [[ $side == B ]]; then n=$to_b; else n=$to_a; fi
		# hellos_rx: a PROBE with SYN and no cookie (the floods' carry a
		# random one, so are drop_epoch, but 0 is a cookie too).
		got=$(d start acks $side drop_epoch hellos_rx drop_no_conn \
			rx_drop_no_conn)
		lost=$(d start acks $side rx_drop_backlog)
		mr_log "$side: flooded with $n SYNs; drop_epoch + hellos_rx + no_conn +$got," \
			"challenges +$(d start acks $side resets_tx)," \
			"rx_drop_backlog +$lost"
		((got >= n - lost)) ||
			mr_fail "$side: $got drops for $n forged SYNs ($lost lost)"
		(($(d start acks $side resets_tx) >= 1)) ||
			mr_fail "$side: no challenge drawn (the flood missed the connection)"
		assert_eq "$side: epochs restored (a forged one was adopted)" 0 \
			"$(d start after $side epoch_restored)"
	done
}

# inj_check SIDE WHAT FILE...: what hostile.py inject's FILEs sent, against
# SIDE's drops between the snapshots inject and floods.
inj_check() {
	local side=$1 what=$2 f off=0 ahead=0 behind=0 lost got
	shift 2
	for f; do
		off=$((off + $(rec "$f" offpath)))
		ahead=$((ahead + $(rec "$f" ahead)))
		behind=$((behind + $(rec "$f" behind)))
	done
	lost=$(d inject floods "$side" rx_drop_backlog)
	mr_log "$what: off-path $off (drop_epoch +$(d inject floods "$side" drop_epoch))," \
		"ahead $ahead (drop_dsn_window +$(d inject floods "$side" drop_dsn_window))," \
		"behind $behind (drop_duplicate +$(d inject floods "$side" drop_duplicate))," \
		"rx_drop_backlog +$lost"
	(($(d inject floods "$side" drop_epoch) >= off - lost)) ||
		mr_fail "$what: off-path ones not all dropped for their epoch"
	got=$(d inject floods "$side" drop_dsn_window)
	((got <= ahead && got >= ahead - lost)) ||
		mr_fail "$what: drop_dsn_window +$got, expected $ahead"
	(($(d inject floods "$side" drop_duplicate) >= behind - lost)) ||
		mr_fail "$what: settled ones not all dropped as duplicates"
}

# SENDs to B's QPs; and READ and atomic responses to A's, which has READs
# and atomics outstanding: nothing lands (mr_mixed checked every receive,
# READ and atomic result) and each is dropped under its reason.
forged_sends() {
	attacked2
	inj_check B "forged SENDs" inject_send
}
forged_responses() {
	attacked2
	inj_check A "forged READ and atomic responses" inject_read inject_atomic
}

# The off-path ACKs are dropped; the on-path ones count (protocol.rst,
# section 11: whoever sees the epoch can set the Rate Hint until the next
# real ACK) but A kept completing messages under them.
rate_hints() {
	local on off
	attacked2
	on=$(rec acks sent) off=$(rec acks offpath)
	mr_log "ACKs with Rate Hints 1, 2^32-1, 0: on-path $on (acks_rx" \
		"+$(d acks junk A acks_rx)), off-path $off (drop_epoch" \
		"+$(d acks junk A drop_epoch)); A's window" \
		"$(rec acks window_before) before, then" \
		"$(rec acks min_window)..$(rec acks max_window), the forged hint 1" \
		"seen in force $(rec acks hint_one_seen) times; A completed" \
		"$(d acks junk A messages_done_tx) messages meanwhile"
	(($(d acks junk A acks_rx) >= on - $(d acks junk A rx_drop_backlog))) ||
		mr_fail "the on-path ACKs did not count"
	(($(d acks junk A drop_epoch) >= off - $(d acks junk A rx_drop_backlog))) ||
		mr_fail "the off-path ACKs were not all dropped"
	(($(d acks junk A messages_done_tx) > 0)) ||
		mr_fail "A's sender stalled under forged Rate Hints"
}

# Every junk datagram was dropped as from no connection, or lost when B's
# receive queue was full (rx_drop_backlog), and B made no connection for
# any of them. (Under TCG, a sender in Python does not outrun B: each
# datagram is received in the softirq that follows its sending, and the
# queue never fills; in the runs so far rx_drop_backlog stayed at 0.)
junk_flood() {
	local n got lost
	attacked2
	n=$(rec junk sent)
	got=$(d junk end_of_attacks B rx_drop_no_conn drop_no_conn)
	lost=$(d junk end_of_attacks B rx_drop_backlog)
	mr_log "junk from $(rec junk sources) sources: sent $n; no_conn +$got," \
		"rx_drop_backlog +$lost; B's connections" \
		"$(<"$STATE/connections.before") -> $(<"$STATE/connections.after")"
	((got <= n && got + lost >= n)) ||
		mr_fail "no_conn +$got and rx_drop_backlog +$lost for $n datagrams"
	(($(<"$STATE/connections.after") <= $(<"$STATE/connections.before"))) ||
		mr_fail "B made connections for junk sources"
}

# What the attacks leave: every connection is collected once idle, no QP
# is left, and the module unloads (its devices with it).
leaves_nothing() {
	local qps
	attacked2
	assert_wait "every connection collected" 60 no_peers
	qps=$(rdma resource show qp 2>/dev/null |
		grep -cE "link ($MR_A_DEV|$MR_B_DEV)/.* type RC" || true)
	assert_eq "RC QPs left" 0 "$qps"
	mr_netns_kill "$MR_A_NS" "$MR_B_NS" "$SPOOF_NS"
	mr_mod_unload || mr_fail "$MR_MOD does not unload after the attacks"
}

mr_setup two_hosts setup
mr_run attack_during_transfer attack
mr_run malformed_dropped malformed
mr_run stranger_dropped no_connection
mr_run ud_without_qp_dropped ud_no_qp
mr_run wrong_epoch_dropped wrong_epoch
mr_run dsn_outside_window_dropped dsn_window
mr_run forged_writes_refused forged_writes
mr_run qp_error_isolated isolation
mr_run first_contact_local_forger local_forger
mr_run first_contact_spoofing_host spoofing_host
mr_run first_contact_after_cleanup after_cleanup
mr_run ssn_out_of_place ssn_out_of_place
mr_run duplicate_segment duplicate_segment
mr_run srq_receives_once srq_receives_once
mr_run attack_from_first_contact attack_first_contact
mr_run syn_flood_before_pair syn_flood
mr_run forged_sends_dropped forged_sends
mr_run forged_responses_dropped forged_responses
mr_run rate_hints_forged rate_hints
mr_run junk_flood_dropped junk_flood
mr_run attacks_leave_nothing leaves_nothing
mr_done
