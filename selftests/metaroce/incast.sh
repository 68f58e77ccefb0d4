#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 600
#
# Incast: four senders, one receiver, one bottleneck (fabric.sh's mr_star:
# every host on its own link into one router; the router's link to the
# receiver is a RATE bottleneck whose queue marks ECN, mr_ecn_bottleneck).
# Each sender runs one ib_write_bw QP of 64 KiB WRITEs to the receiver for
# the same DURATION, all started together:
#
#   fair            every run completes; Jain's index of what the four
#                   senders put into the router over one common window
#                   (WINDOW seconds, from a second after all four are
#                   sending) is 0.9 or more; together, by perftest's
#                   reports, their payload is half the bottleneck's rate
#                   or more (a sanity check: headers, slow start and
#                   perftest's start-up take some). perftest's own
#                   figures are logged, with their Jain's index, but not
#                   asserted: each covers its own process's window,
#                   timed by a cycle counter calibrated on an emulated
#                   CPU, and CI saw one sender at 0.30 MB/s against
#                   0.84-0.93 while the transport's counters had it send
#                   62 % of the others' mean over the whole run
#   no_storm        timeout retransmissions, summed over the senders, are
#                   at most 5 % of the data segments they sent
#   queue           the bottleneck's queue stays bounded: its median
#                   sampled backlog is below RED's marking ceiling (45 kB)
#
# The figures (bandwidths, index, retransmissions, CE marks, queue
# samples) are logged.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fabric.sh"
mr_require_module

SENDERS=4
RATE=40mbit RATE_BPS=40000000
DURATION=12 WINDOW=5
PORT=18800

# perftest's cycle-counter calibration fails now and then on the emulated
# CPU ("Correlation coefficient r^2 ... < 0.9"): a run where a side said so
# is run again, at most TRIES times in all, and the retry is logged.
CALIBRATION='Correlation coefficient r\^2: .* < 0\.9'
TRIES=3

# sender_bytes: the bytes each sender has put into the router (the
# router's receive counters of the senders' links), all read at once.
sender_bytes() {
	local i f=()
	for ((i = 0; i < SENDERS; i++)); do
		f+=("/sys/class/net/w$i/statistics/rx_bytes")
	done
	ip netns exec mrsw cat "${f[@]}" | paste -sd' '
}

# window_sampler FILE: once every sender has put 200 kB or more into the
# router, waits a second, then writes to FILE the bytes each sender puts in
# over the next WINDOW seconds (nothing if they never all sent).
window_sampler() {
	local b0 a b deadline=$((SECONDS + DURATION))
	b0=$(sender_bytes)
	until awk -v a="$b0" -v b="$(sender_bytes)" 'BEGIN {
		n = split(a, x, " "); split(b, y, " ")
		for (i = 1; i <= n; i++) if (y[i] - x[i] < 200000) exit 1 }'; do
		((SECONDS < deadline)) || return 0
		sleep 0.2
	done
	sleep 1
	a=$(sender_bytes)
	sleep "$WINDOW"
	b=$(sender_bytes)
	awk -v a="$a" -v b="$b" 'BEGIN {
		n = split(a, x, " "); split(b, y, " ")
		for (i = 1; i <= n; i++) printf "%d%s", y[i] - x[i], i < n ? " " : "\n" }' >"$1"
}

# incast_once: start the receivers and senders together and wait for all;
# returns 1, with BAD saying who, if any exited non-zero.
incast_once() {
	local i spids=() cpids=() rc wpid
	BAD=()
	for ((i = 0; i < SENDERS; i++)); do
		mr_stats "mrs${i}_dev" "mrs$i" >"$MR_TMP/s$i.before"
		ip netns exec mrsr timeout 90 ib_write_bw -d mrsr_dev \
			-x "$MR_STAR_RX_GIDX" -p $((PORT + i)) -s 65536 -D "$DURATION" \
			>"$MR_TMP/srv$i" 2>&1 </dev/null &
		spids+=($!)
	done
	for ((i = 0; i < SENDERS; i++)); do
		assert_wait "server $i listens" 30 mr_tcp_listening mrsr $((PORT + i))
	done
	mr_backlog_sampler_start mrsw wr "$MR_TMP/backlog"
	rm -f "$MR_TMP/window"
	window_sampler "$MR_TMP/window" &
	wpid=$!
	for ((i = 0; i < SENDERS; i++)); do
		ip netns exec "mrs$i" timeout 90 ib_write_bw -d "mrs${i}_dev" \
			-x "${MR_STAR_GIDX[i]}" -p $((PORT + i)) -s 65536 \
			-D "$DURATION" "$MR_STAR_RX_IP" >"$MR_TMP/cli$i" 2>&1 </dev/null &
		cpids+=($!)
	done
	for ((i = 0; i < SENDERS; i++)); do
		rc=0
		wait "${cpids[i]}" || rc=$?
		((rc == 0)) || BAD+=("sender $i exited $rc")
		rc=0
		wait "${spids[i]}" || rc=$?
		((rc == 0)) || BAD+=("server $i exited $rc")
	done
	wait "$wpid" || true
	mr_backlog_sampler_stop
	((${#BAD[@]} == 0))
}

incast() {
	local i try why bws=() tx=0 rto=0 ce=0 d per=()
	mr_ecn_bottleneck mrsw wr "$RATE"
	for ((try = 1; ; try++)); do
		incast_once && break
		why=$(grep -hE "$CALIBRATION" "$MR_TMP"/cli* "$MR_TMP"/srv* |
			head -n 1) || true
		if [[ -z $why ]] || ((try == TRIES)); then
			for ((i = 0; i < SENDERS; i++)); do
				tail -n 20 "$MR_TMP/cli$i" "$MR_TMP/srv$i"
			done
			mr_fail "${BAD[*]}"
		fi
		mr_log "${BAD[*]}, after '$why': again"
	done
	for ((i = 0; i < SENDERS; i++)); do
		mr_stats "mrs${i}_dev" "mrs$i" >"$MR_TMP/s$i.after"
		bws[i]=$(awk '$1 == 65536 && $2 ~ /^[0-9]+$/ && NF >= 5 { print $4; exit }' \
			"$MR_TMP/cli$i")
		[[ ${bws[i]} =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
			mr_fail "sender $i: no bandwidth figure in its report"
		d=(
			"$(mr_stat_delta "$MR_TMP/s$i.before" "$MR_TMP/s$i.after" data_segments_tx)"
			"$(mr_stat_delta "$MR_TMP/s$i.before" "$MR_TMP/s$i.after" retransmits_timeout)"
			"$(mr_stat_delta "$MR_TMP/s$i.before" "$MR_TMP/s$i.after" ecn_ce_echoed)"
		)
		per+=("${d[0]}/${d[1]}/${d[2]}")
		tx=$((tx + d[0]))
		rto=$((rto + d[1]))
		ce=$((ce + d[2]))
	done
	echo "${bws[*]}" >"$MR_TMP/bws"
	echo "$tx $rto" >"$MR_TMP/retx"
	mr_log "MB/s per sender: ${bws[*]}; data segments $tx, timeout" \
		"retransmissions $rto, CE marks echoed $ce"
	mr_log "per sender, data segments/timeout retransmissions/CE marks: ${per[*]}"
	mr_log "backlog samples (bytes): $(paste -sd' ' "$MR_TMP/backlog")"
}

# jain: Jain's index of the numbers on stdin's line.
jain() {
	awk '{ for (i = 1; i <= NF; i++) { s += $i; q += $i * $i }
		printf "%.3f\n", q ? s * s / (NF * q) : 0 }'
}

fair() {
	local j
	[[ -s $MR_TMP/window ]] ||
		mr_fail "the $SENDERS senders never all sent together"
	j=$(jain <"$MR_TMP/window")
	mr_log "bytes per sender over a common ${WINDOW}s window:" \
		"$(<"$MR_TMP/window"): Jain $j (perftest's figures: $(jain <"$MR_TMP/bws"))"
	awk -v r="$RATE_BPS" '{
		for (i = 1; i <= NF; i++) s += $i
		u = s * 8e6 / r
		printf "payload %.2f of the bottleneck rate by perftest\n", u
		exit !(u >= 0.5)
	}' "$MR_TMP/bws" || mr_fail "the bottleneck was underused (above)"
	awk -v j="$j" 'BEGIN { exit !(j >= 0.9) }' ||
		mr_fail "unfair: Jain $j over the common window"
}

no_storm() {
	local tx rto
	read -r tx rto <"$MR_TMP/retx"
	((tx > 0)) || mr_fail "no data segments counted"
	mr_log "timeout retransmissions: $rto of $tx data segments"
	((rto * 20 <= tx)) || mr_fail "$rto timeout retransmissions for $tx segments"
}

queue() {
	sort -n "$MR_TMP/backlog" | awk '{ v[NR] = $1 } END {
		m = v[int((NR + 1) / 2)]
		printf "%d samples, median %d bytes, max %d\n", NR, m, v[NR]
		exit !(NR >= 10 && m < 45000)
	}' || mr_fail "the bottleneck queue stood too high or was not sampled"
}

mr_setup star mr_star "$SENDERS"
mr_run incast incast
mr_run fair fair
mr_run no_storm no_storm
mr_run queue queue
mr_done
