#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 1200
#
# Many QPs over one unified connection: mr_scale connects QPS RC QPs
# (default 4000) between two hosts joined by a veth pair, and in each of
# two rounds every QP carries a 4 KiB RDMA WRITE and a SEND with immediate
# at once; the server verifies every byte and that every SEND came on the
# QP it names. Then both sides destroy everything.
#
#   qps         both sides exit 0 (every QP connected, every byte
#               verified, no failed completion); while all are
#               connected, each device has one peer connection carrying
#               all QPS QPs (debugfs); no error counter moved
#   memory      kernel memory (unreclaimable slab plus vmalloc, see
#               kmem) returns to within 1.5 MiB of where it was before the
#               QPs were created, once the idle connection is collected
#   churn       while mr_integrity moves verified data over 8 QPs for
#               about 150 s, mr_scale creates, connects, uses and
#               destroys 64 more QPs over the same connection again and
#               again: every run on both sides exits 0, at least 5 cycles
#               overlap the traffic, and kernel memory comes back as above
#   fairness    ib_write_lat (8 B) alone, then on the same connection while
#               an ib_write_bw QP streams 1 MiB WRITEs (perftest keeps
#               128 of them, 128 MiB, posted): the latency QP is served in
#               turn with the bulk one, not behind its queue, so its 99th
#               percentile stays under 100 ms (behind the queue it would
#               take seconds); the bulk transfer covers the whole latency
#               run and both exit 0
#   connections conn_mem.py connects CONN_PAIRS QP pairs over one
#               connection, then each over a connection of its own (A
#               gets CONN_PAIRS addresses): each device holds 1, then
#               CONN_PAIRS peers, every pair's WRITE completes, and the
#               memory per connection (the second run's extra kernel
#               memory, per connection and host) lies between 32 KiB and
#               1 MiB; then kernel memory comes back as above
#
# Logged: the time per QP to create, connect and destroy, the data phase's
# rate, the kernel memory per QP while all are connected, and the kernel
# memory per connection.
#
# MR_SCALE_QPS=N overrides the number of QPs; MR_TEST_LONG=1 churns four
# times as long (about 10 minutes).
. "$(dirname "$0")/lib.sh"
mr_require_module

TOOL=$MR_TOP/build/userspace/tools/mr_scale
ITOOL=$MR_TOP/build/userspace/tools/mr_integrity
PYTHON=/usr/bin/python3
PORT=18600
IPORT=18601
LPORT=18602
BPORT=18603
LAT_ITERS=1000
BULK_SECONDS=30
# perftest's cycle-counter calibration fails now and then on the emulated
# CPU: a run that says so is run again.
CALIBRATION='Correlation coefficient r\^2: .* < 0\.9'
CHURN_QPS=64
CONN_PAIRS=32
CONN_MEM=$(dirname "$(readlink -f "$0")")/conn_mem.py
# mr_integrity batches of the churn's background traffic (544 took
# 150-174 s).
CHURN_BATCHES=544
[[ -z ${MR_TEST_LONG:-} ]] || CHURN_BATCHES=2176
QPS=${MR_SCALE_QPS:-4000}
SIZE=4096
ROUNDS=2
# Kernel memory (kmem) may sit this far (KiB) above its starting level at
# the end: what the kernel keeps of a first run in a boot (modules loaded,
# worker threads started: 0.46-0.66 MiB seen; 0.2 MiB or less later).
# 4000 QPs leaked would leave 60 MiB or more; 200 bytes leaked by each of
# the 8000 QPs (both sides) already exceed this.
SLACK_KB=1536

ERROR_COUNTERS="rx_drop_malformed rx_drop_no_qp rx_drop_no_conn
	drop_no_conn drop_epoch drop_dsn_window drop_no_qp drop_qp_state
	drop_wrong_peer drop_msn_window drop_stale_gen drop_inconsistent
	drop_access drop_invalid_request naks_tx naks_rx"

[[ -x $TOOL && -x $ITOOL ]] ||
	mr_skip_all "$TOOL or $ITOOL is missing: run make userspace"

# kmem [all]: unreclaimable slab plus vmalloc, in KiB: what QPs and
# connections take from the kernel (lib.sh's mr_kmem, which says how it is
# measured); without "all", the vmap_area cache is left out.
kmem() {
	if [[ ${1:-} == all ]]; then
		mr_kmem
	else
		mr_kmem --no-vmap-area
	fi
}

# vmap_kib: the vmap_area cache's slabs, KiB (after kmem).
vmap_kib() {
	awk -v kib="$(($(getconf PAGESIZE) / 1024))" \
		'$1 == "vmap_area" { print $15 * $6 * kib }' /proc/slabinfo
}

# kmem_parts: where kernel memory is (after kmem), one "KIND NAME KiB"
# line per slab cache (its slabs), vmalloc caller (address space, guard
# pages and "unpurged" areas included) and kernel stacks.
kmem_parts() {
	awk -v kib="$(($(getconf PAGESIZE) / 1024))" \
		'NR > 2 { print "slab", $1, $15 * $6 * kib }' /proc/slabinfo
	awk '{ n[$3] += $2 } END { for (c in n) print "vmalloc", c, int(n[c] / 1024) }' \
		/proc/vmallocinfo
	awk '$1 == "KernelStack:" { print "stacks", "-", $2 }' /proc/meminfo
}

# kmem_grew BEFORE AFTER: the parts (kmem_parts) that grew by 32 KiB or
# more between the two, most first.
kmem_grew() {
	awk 'NR == FNR { b[$1 " " $2] = $3; next }
		$3 - b[$1 " " $2] >= 32 { print $3 - b[$1 " " $2], "KiB:", $1, $2 }' \
		"$1" "$2" | sort -rn | head -n 15
}

# peers DEV: DEV's peer connections, one "REMOTE qps N" line each (debugfs).
peers() {
	awk '$1 == "peer" { print $2, $5, $6 }' \
		"/sys/kernel/debug/metaroce/$1/peers"
}

# watch_connected: once both sides have written their pause file, record
# kernel memory and the peer counts, then let both go on.
watch_connected() {
	local t
	for ((t = 0; t < 6000; t++)); do
		[[ -e $MR_TMP/pause.a && -e $MR_TMP/pause.b ]] && break
		sleep 0.1
	done
	kmem all >"$MR_TMP/kmem.connected"
	peers "$MR_A_DEV" >"$MR_TMP/peers.a"
	peers "$MR_B_DEV" >"$MR_TMP/peers.b"
	rm -f "$MR_TMP/pause.a" "$MR_TMP/pause.b"
}

qps() {
	local dev moved bad="" watcher before during want
	kmem_before
	kmem all >"$MR_TMP/kmem.before_all"
	for dev in "$MR_A_DEV" "$MR_B_DEV"; do
		mr_stats "$dev" >"$MR_TMP/$dev.before"
	done
	watch_connected &
	watcher=$!
	mr_defer kill "$watcher"
	MR_PAIR_TIMEOUT=800 mr_pair scale "tcp:$PORT" \
		"$TOOL" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$PORT" -q "$QPS" \
		-r "$ROUNDS" -s "$SIZE" -t 700 -P "$MR_TMP/pause.b" -- \
		"$TOOL" -d "$MR_A_DEV" -g "$MR_A_GIDX" -p "$PORT" -q "$QPS" \
		-r "$ROUNDS" -s "$SIZE" -t 700 -P "$MR_TMP/pause.a" "$MR_B_IP"
	wait "$watcher" || true
	grep -h "^mr_scale: OK" "$MR_TMP/scale.client" "$MR_TMP/scale.server"
	before=$(<"$MR_TMP/kmem.before_all")
	during=$(<"$MR_TMP/kmem.connected")
	mr_log "kernel memory: $before KiB before, $during KiB with $QPS QPs" \
		"connected on each side: $(((during - before) * 1024 / (2 * QPS)))" \
		"bytes per QP"
	mr_log "connections of $MR_A_DEV: $(paste -sd';' "$MR_TMP/peers.a");" \
		"of $MR_B_DEV: $(paste -sd';' "$MR_TMP/peers.b")"
	want="qps $QPS"
	[[ $(cut -d' ' -f2- "$MR_TMP/peers.a") == "$want" &&
		$(cut -d' ' -f2- "$MR_TMP/peers.b") == "$want" ]] ||
		mr_fail "each side's $QPS QPs should share one connection"
	for dev in "$MR_A_DEV" "$MR_B_DEV"; do
		mr_stats "$dev" >"$MR_TMP/$dev.after"
		# shellcheck disable=SC2086 # a list of names
		moved=$(mr_stat_moved "$MR_TMP/$dev.before" "$MR_TMP/$dev.after" \
			$ERROR_COUNTERS)
		[[ -z $moved ]] || bad+=" $dev:$moved"
	done
	[[ -z $bad ]] || { mr_diag "$MR_A_DEV" "$MR_B_DEV"; mr_fail "error counters moved:$bad"; }
}

# kmem_before: kernel memory's starting level, to $MR_TMP/kmem.before
# (and the vmap_area cache's size then to $MR_TMP/vmap.before).
kmem_before() {
	kmem >"$MR_TMP/kmem.before"
	vmap_kib >"$MR_TMP/vmap.before"
	kmem_parts >"$MR_TMP/kmem.parts.before"
}

# kmem_back: kernel memory is back within SLACK_KB of its starting level.
kmem_back() {
	(($(kmem) <= $(<"$MR_TMP/kmem.before") + SLACK_KB))
}

no_peers() {
	[[ -z $(peers "$MR_A_DEV") && -z $(peers "$MR_B_DEV") ]]
}

# memory_back WHEN: once both devices' idle connections are collected (5 s
# after their last QP went), kernel memory comes back within SLACK_KB of
# $MR_TMP/kmem.before, taken WHEN.
memory_back() {
	assert_wait "both devices' connections collected" 30 no_peers
	local now
	if ! wait_for 30 kmem_back; then
		now=$(kmem)
		kmem_parts >"$MR_TMP/kmem.parts.after"
		echo "--- what grew:"
		kmem_grew "$MR_TMP/kmem.parts.before" "$MR_TMP/kmem.parts.after"
		mr_fail "kernel memory $now KiB, was $(<"$MR_TMP/kmem.before") KiB $1"
	fi
	now=$(kmem)
	mr_log "kernel memory $now KiB, was $(<"$MR_TMP/kmem.before") KiB $1" \
		"($(printf %+d $((now - $(<"$MR_TMP/kmem.before")))) KiB; vmap_area," \
		"left out: $(vmap_kib) KiB, was $(<"$MR_TMP/vmap.before") KiB)"
	# What a third of the slack or more is made of, for the record.
	if ((now - $(<"$MR_TMP/kmem.before") >= SLACK_KB / 3)); then
		kmem_parts >"$MR_TMP/kmem.parts.after"
		echo "--- what grew:"
		kmem_grew "$MR_TMP/kmem.parts.before" "$MR_TMP/kmem.parts.after"
	fi
}

memory() {
	[[ -s $MR_TMP/kmem.before ]] || mr_skip "qps did not run"
	memory_back "before the QPs"
}

# integrity_side NS DEV GIDX [SERVER]: one side of the background traffic.
integrity_side() {
	ip netns exec "$1" timeout -k 5 "$(mr_secs $((300 + CHURN_BATCHES / 2)))" \
		"$ITOOL" -d "$2" -g "$3" \
		-p "$IPORT" -q 8 -n "$CHURN_BATCHES" -b 16 -m 1048576 -s 7 \
		-t 120 "${@:4}" </dev/null
}

churn() {
	local isrv icli cycles=0 rc t0=$SECONDS
	kmem_before
	integrity_side "$MR_B_NS" "$MR_B_DEV" "$MR_B_GIDX" \
		>"$MR_TMP/churn.iserver" 2>&1 &
	isrv=$!
	mr_defer kill "$isrv"
	assert_wait "mr_integrity listens" 30 mr_tcp_listening "$MR_B_NS" "$IPORT"
	integrity_side "$MR_A_NS" "$MR_A_DEV" "$MR_A_GIDX" "$MR_B_IP" \
		>"$MR_TMP/churn.iclient" 2>&1 &
	icli=$!
	mr_defer kill "$icli"
	while kill -0 "$icli" 2>/dev/null; do
		if ! (MR_PAIR_TIMEOUT=120 mr_pair churn "tcp:$PORT" \
			"$TOOL" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$PORT" \
			-q "$CHURN_QPS" -r 1 -S "$cycles" -t 100 -- \
			"$TOOL" -d "$MR_A_DEV" -g "$MR_A_GIDX" -p "$PORT" \
			-q "$CHURN_QPS" -r 1 -S "$cycles" -t 100 "$MR_B_IP") \
			>"$MR_TMP/churn.cycle" 2>&1; then
			cat "$MR_TMP/churn.cycle"
			mr_fail "churn cycle $cycles failed"
		fi
		cycles=$((cycles + 1))
	done
	rc=0
	wait "$icli" || rc=$?
	((rc == 0)) || { tail -n 20 "$MR_TMP/churn.iclient"; mr_fail "mr_integrity client exited $rc"; }
	wait "$isrv" || rc=$?
	((rc == 0)) || { tail -n 20 "$MR_TMP/churn.iserver"; mr_fail "mr_integrity server exited $rc"; }
	grep -h "^mr_integrity: OK" "$MR_TMP/churn.iclient" "$MR_TMP/churn.iserver"
	mr_log "$cycles cycles of $CHURN_QPS QPs in $((SECONDS - t0))s; the last:"
	grep -h "^mr_scale: OK" "$MR_TMP/churn.server" "$MR_TMP/churn.client"
	((cycles >= 5)) || mr_fail "only $cycles cycles overlapped the traffic"
	memory_back "before the churn"
}

# lat_run NAME: ib_write_lat, 8 B x LAT_ITERS from A to B; its "#bytes
# #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%" line (us) is
# left in $MR_TMP/NAME.result.
lat_run() {
	MR_PAIR_RETRY=$CALIBRATION mr_pair "$1" "tcp:$LPORT" \
		ib_write_lat -d "$MR_B_DEV" -x "$MR_B_GIDX" -p "$LPORT" -s 8 \
		-n "$LAT_ITERS" -- \
		ib_write_lat -d "$MR_A_DEV" -x "$MR_A_GIDX" -p "$LPORT" -s 8 \
		-n "$LAT_ITERS" "$MR_B_IP"
	awk -v n="$LAT_ITERS" '$1 == 8 && $2 == n && NF >= 9' \
		"$MR_TMP/$1.client" >"$MR_TMP/$1.result"
	[[ -s $MR_TMP/$1.result ]] ||
		{ tail -n 20 "$MR_TMP/$1.client"; mr_fail "$1: no result line"; }
}

# bulk_start: one ib_write_bw QP of 1 MiB WRITEs from A to B for
# BULK_SECONDS, in the background (pids in BULK_PIDS).
bulk_start() {
	ip netns exec "$MR_B_NS" timeout "$(mr_secs 120)" ib_write_bw -d "$MR_B_DEV" \
		-x "$MR_B_GIDX" -p "$BPORT" -s 1048576 -D "$BULK_SECONDS" \
		>"$MR_TMP/bulk.server" 2>&1 </dev/null &
	BULK_PIDS=($!)
	mr_defer kill "${BULK_PIDS[0]}"
	assert_wait "ib_write_bw listens" 30 mr_tcp_listening "$MR_B_NS" "$BPORT"
	ip netns exec "$MR_A_NS" timeout "$(mr_secs 120)" ib_write_bw -d "$MR_A_DEV" \
		-x "$MR_A_GIDX" -p "$BPORT" -s 1048576 -D "$BULK_SECONDS" "$MR_B_IP" \
		>"$MR_TMP/bulk.client" 2>&1 </dev/null &
	BULK_PIDS+=($!)
	mr_defer kill "${BULK_PIDS[1]}"
}

# bulk_wait: both sides of the bulk transfer exited 0 (1 otherwise).
bulk_wait() {
	local rc=0
	wait "${BULK_PIDS[1]}" || rc=1
	wait "${BULK_PIDS[0]}" || rc=1
	return "$rc"
}

fairness() {
	local idle loaded try overlapped bw
	lat_run lat_idle
	read -ra idle <"$MR_TMP/lat_idle.result"
	for ((try = 1; ; try++)); do
		bulk_start
		# In full swing once its connection is set up.
		sleep 4
		kill -0 "${BULK_PIDS[1]}" 2>/dev/null ||
			{ tail -n 20 "$MR_TMP/bulk.client"; mr_fail "ib_write_bw ended early"; }
		lat_run lat_loaded
		overlapped=0
		kill -0 "${BULK_PIDS[1]}" 2>/dev/null && overlapped=1
		bulk_wait && break
		if ((try == 3)) || ! grep -qE "$CALIBRATION" "$MR_TMP"/bulk.*; then
			tail -n 20 "$MR_TMP/bulk.client" "$MR_TMP/bulk.server"
			mr_fail "the bulk ib_write_bw failed"
		fi
		mr_log "the bulk ib_write_bw failed its calibration: again"
	done
	read -ra loaded <"$MR_TMP/lat_loaded.result"
	bw=$(awk '$1 == 1048576 && $2 ~ /^[0-9]+$/ && NF >= 5 { print $4; exit }' \
		"$MR_TMP/bulk.client")
	mr_log "8 B WRITE latency alone: median ${idle[4]} us, 99 % ${idle[7]} us;" \
		"beside a 1 MiB WRITE stream of ${bw:-?} MB/s: median" \
		"${loaded[4]} us, 99 % ${loaded[7]} us"
	((overlapped)) || mr_fail "the bulk transfer ended before the latency run"
	awk -v p="${loaded[7]}" 'BEGIN { exit !(p < 100000) }' ||
		mr_fail "99th percentile ${loaded[7]} us under load: starved"
}

# conn_addr I: A's I-th extra address, for a connection of its own.
conn_addr() { echo "${MR_A_IP%.*}.$((100 + $1))"; }

connections() {
	local i gidxs="" out conn one many t0=$SECONDS
	"$PYTHON" -c 'import pyverbs.qp' 2>/dev/null ||
		mr_skip "python3-pyverbs is not installed"
	kmem_before
	for ((i = 0; i < CONN_PAIRS; i++)); do
		ip -n "$MR_A_NS" addr add "$(conn_addr "$i")/24" dev "$MR_A_IF"
		mr_defer ip -n "$MR_A_NS" addr del "$(conn_addr "$i")/24" \
			dev "$MR_A_IF"
	done
	for ((i = 0; i < CONN_PAIRS; i++)); do
		assert_wait "$MR_A_DEV has a GID for $(conn_addr "$i")" 10 \
			mr_gid_index "$MR_A_DEV" "$(conn_addr "$i")"
		gidxs+=${gidxs:+,}$(mr_gid_index "$MR_A_DEV" "$(conn_addr "$i")")
	done
	out=$("$PYTHON" "$CONN_MEM" --a-dev "$MR_A_DEV" --a-gidx "$gidxs" \
		--b-dev "$MR_B_DEV" --b-gidx "$MR_B_GIDX" 2>&1) ||
		{ echo "$out"; mr_fail "conn_mem.py failed"; }
	sed 's/^/conn_mem.py: /' <<<"$out"
	conn_val() { awk -v k="$1" '$1 == k { print $2 }' <<<"$out"; }
	assert_eq "peers of $MR_A_DEV, pairs over one address" 1 \
		"$(conn_val peers_one_a)"
	assert_eq "peers of $MR_B_DEV, pairs over one address" 1 \
		"$(conn_val peers_one_b)"
	assert_eq "peers of $MR_A_DEV, one address per pair" "$CONN_PAIRS" \
		"$(conn_val peers_many_a)"
	assert_eq "peers of $MR_B_DEV, one address per pair" "$CONN_PAIRS" \
		"$(conn_val peers_many_b)"
	conn=$(conn_val conn_bytes) one=$(conn_val one_kib)
	many=$(conn_val many_kib)
	mr_log "$CONN_PAIRS QP pairs: $one KiB over one connection, $many KiB" \
		"over $CONN_PAIRS; per connection and host: $conn bytes"
	((conn >= 32768 && conn <= 1048576)) ||
		mr_fail "$conn bytes per connection: not between 32 KiB and 1 MiB"
	memory_back "before the connections"
	mr_log "connections took $((SECONDS - t0)) s"
}

mr_setup two_hosts mr_two_hosts
mr_run qps qps
mr_run memory memory
mr_run churn churn
mr_run fairness fairness
mr_run connections connections
mr_done
