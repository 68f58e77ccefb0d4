#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 900
#
# Two hosts joined by a 4-plane fabric (fabric.sh): each host's address,
# and its device's GID, on a dummy interface; one multipath route per host
# over the planes, hashed on the UDP ports. mr_integrity (every byte
# checked on both sides, no failed completion) runs over it:
#
#   spread          the traffic of one connection crosses every plane
#                   evenly: the device spreads its 8 paths over the planes
#                   (it asks the routing table which next hop each
#                   candidate port takes), so the plane that carried the
#                   fewest bytes carried at least 85 % of what the busiest
#                   did (within 15 % of each other; the shares are logged)
#   mixed           mr_mixed (mixed.sh's verbs mix: WRITE, SEND, READ,
#                   atomics, READ then fenced WRITE, both sides initiating,
#                   every byte and wr_id checked) on 400 QPs sprayed over
#                   the planes passes
#   plane_failure   while a transfer runs, the busiest plane drops every
#                   packet in both directions for up to 3 s (timed by
#                   the transfer's progress, see FAIL_AT): the
#                   transfer still passes, paths on that plane time out
#                   and are declared dead, and the plane carries data
#                   again after it returns
#
# Then every plane is rate-limited (tbf, RATE towards B) and perftest's
# ib_write_bw runs over one QP for a fixed time:
#
#   scaling         over 4 planes it must reach 3.5x or more of what it
#                   reaches over one (A's route narrowed to plane 0);
#                   over N planes, 0.875 N times (planes8.sh: 7x)
#   recovery        plane 1 is blackholed for 4 s while it runs (from
#                   3 s after B has received its first MB): the run
#                   completes without error; B's bytes are sampled every
#                   20 ms or so. The recovery time is where the last
#                   100 ms window (from a sample) under 70 % of the
#                   surviving planes' capacity ends, among the windows
#                   that start in the first 500 ms after the failure (0
#                   if there is none); it must be 100 ms at most. From
#                   100 ms after the failure until the plane returns, the
#                   data rate is at least 70 % of that capacity on
#                   average, and at least 50 % over every 500 ms window
#                   in that time (a dip that long is a stall of recovery,
#                   not the emulator's noise, which took single windows
#                   to 67 % in CI); after the plane returns it carries
#                   its share again. Logged: the recovery time, every
#                   sampling interval of the first 400 ms, the first dip
#                   under 70 % and when it ended, the lowest single
#                   interval, and the rate before the failure.
#   congestion      plane 0 becomes an ECN-marking bottleneck of the same
#                   rate (mr_ecn_bottleneck) that a UDP flow of 2/3 of
#                   its rate also crosses, while ib_write_bw runs: the
#                   sender sees CE marks and trims the paths there: what
#                   it sends into plane 0 is at most 60 % of what it sends
#                   into a clear plane (a fair third of the rate would be
#                   33 %), at most 2 % of it is lost there, and the queue
#                   stays bounded: the median sampled backlog is inside
#                   RED's marking band (under its 45 kB max threshold,
#                   far from the 400 kB limit). Most of that queue is the
#                   UDP flow's, which does not back off (RED drops 10-30 %
#                   of it): medians of 6-27 kB were seen in the VM, so
#                   the 15 kB min threshold is not asserted.
#   rxe_planes      for comparison, rxe's single QP over the same planes,
#                   shaped the same way (mr_rxe_fabric: Debian 6.12's rxe
#                   carries traffic only in the initial namespace, so its
#                   hosts are there, A's links into the planes and the
#                   planes into a leaf router in front of B): RoCEv2 puts
#                   all of a QP's packets on one UDP source port, so one
#                   plane carries at least 95 % of its bytes and it gets
#                   at most one plane's rate (115 % of it, for tbf's
#                   burst). Logged: the plane, the bytes per plane and
#                   metaroce's 4-plane rate over rxe's (scaling's run).
#   loss_sweep      random loss on every plane towards B (issue #6): netem
#                   on A's end of each plane's link drops 0, 0.1, 1, 5 or
#                   10 % of what A sends into the planes, in front of the
#                   planes' tbf (see sweep_loss), while one ib_write_bw QP
#                   runs 6 s (the middle 4 s measured, as in the 8 s runs
#                   above). metaroce runs lossless between the lossy runs
#                   (0, 0.1, 1, 0, 5, 10, 0 %): the emulated guest's speed
#                   drifts when the host is busy (by a third within a
#                   minute, seen), so a lossy run is compared with the
#                   lossless bandwidth interpolated between the lossless
#                   runs before and after it. Then rxe (one run per rate,
#                   ascending) over mr_rxe_fabric, shaped and lossy the
#                   same way (netem on A's links into the planes).
#                   Logged: per run, netem's drops (and metaroce's
#                   retransmissions); then one line per rate: metaroce's
#                   MB/s and ratio to lossless, rxe's, and metaroce's over
#                   rxe's. metaroce must keep 0.90 of its lossless
#                   bandwidth at 1 % loss and 0.50 at 10 %, and netem must
#                   have dropped 5 % or more at 10 %. rxe is reported,
#                   never judged: a failed rxe run is logged and counted
#                   as 0 MB/s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fabric.sh"
mr_require_module

TOOL=$MR_TOP/build/userspace/tools/mr_integrity
MIXED=$MR_TOP/build/userspace/tools/mr_mixed
PORT=18590
# planes8.sh runs spread and scaling over 8.
PLANES=${MR_MULTIPLANE_PLANES:-4}

[[ -x $TOOL && -x $MIXED ]] ||
	mr_skip_all "$TOOL or $MIXED is missing: run make userspace"

# integrity NAME SEED BATCHES: mr_integrity from A to B and back.
integrity() {
	MR_PAIR_TIMEOUT=600 mr_pair "$1" "tcp:$PORT" \
		"$TOOL" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$PORT" -q 4 \
		-n "$3" -b 16 -m 1048576 -s "$2" -t "$(mr_secs 120)" -- \
		"$TOOL" -d "$MR_A_DEV" -g "$MR_A_GIDX" -p "$PORT" -q 4 \
		-n "$3" -b 16 -m 1048576 -s "$2" -t "$(mr_secs 120)" "$MR_B_IP"
	grep -h "^mr_integrity: OK" "$MR_TMP/$1.client" "$MR_TMP/$1.server"
}

# planes WHAT BEFORE AFTER: the bytes each plane carried towards B between
# two mr_fabric_bytes samples, as WHAT: "shares" (percent per plane, one
# line), "busiest" (the plane that carried the most), "total" (all of
# them), or "even" (prints least/most and fails unless the least is 85 %
# of the most or more).
planes() {
	awk -v what="$1" -v a="$2" -v b="$3" 'BEGIN {
		n = split(a, x, " "); split(b, y, " ")
		for (i = 1; i <= n; i++) {
			d[i] = y[i] - x[i]; t += d[i]
			if (i == 1 || d[i] < lo) lo = d[i]
			if (i == 1 || d[i] > hi) { hi = d[i]; top = i - 1 }
		}
		if (what == "total") print t
		if (what == "busiest") print top
		if (what == "shares")
			for (i = 1; i <= n; i++) printf "%d%s", t ? 100 * d[i] / t : 0, i < n ? " " : "\n"
		if (what == "even") {
			printf "least/most bytes per plane: %d/%d = %.2f\n", lo, hi, hi ? lo / hi : 0
			exit !(hi > 0 && lo >= 0.85 * hi)
		}
	}'
}

spread() {
	local b0 b1 s
	b0=$(mr_fabric_bytes)
	integrity spread 11 8
	b1=$(mr_fabric_bytes)
	s=$(planes shares "$b0" "$b1")
	mr_log "bytes per plane towards B: $b0 -> $b1; shares (%): $s"
	mr_result planes="$PLANES" bytes_from="${b0// /,}" bytes_to="${b1// /,}" shares_pct="${s// /,}"
	planes even "$b0" "$b1" || mr_fail "the planes carried uneven shares: $s"
}

# The verbs mix on many QPs over the planes (issue #24).
mixed() {
	MR_PAIR_TIMEOUT=600 MR_PAIR_TRIES=1 mr_pair mixed "tcp:$PORT" \
		"$MIXED" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$PORT" -q 400 \
		-n 20 -S 21 -t "$(mr_secs 400)" -- \
		"$MIXED" -d "$MR_A_DEV" -g "$MR_A_GIDX" -p "$PORT" -q 400 \
		-n 20 -S 21 -t "$(mr_secs 400)" "$MR_B_IP"
	grep -h "^mr_mixed: OK" "$MR_TMP/mixed.client" "$MR_TMP/mixed.server"
}

# The failure follows the transfer's progress, not the clock, so that a
# slow or a fast run both see it fail, stay down long enough for paths to
# be declared dead, and come back with a good part of the data still to
# go: 128 batches of seed 12 put about 210 MB towards B (a fast run
# carries 65 MB/s, a slow one 15). The plane fails once FAIL_AT bytes are
# through and returns after 3 s, or earlier (but not before 1 s) once
# RESTORE_BY bytes are.
FAIL_AT=20000000 RESTORE_BY=100000000

plane_failure() {
	local b0 b1 b2 b3 p before after dead pid
	mr_stats "$MR_A_DEV" "$MR_A_NS" >"$MR_TMP/a.before"
	b0=$(mr_fabric_bytes)
	(
		b1=$b0
		until (($(planes total "$b0" "$b1") >= FAIL_AT)); do
			sleep 0.2
			b1=$(mr_fabric_bytes)
		done
		p=$(planes busiest "$b0" "$b1")
		echo "$p $b1" >"$MR_TMP/failed"
		mr_fabric_blackhole "$p" on
		t=$SECONDS
		sleep 1
		while ((SECONDS - t < 3)); do
			b2=$(mr_fabric_bytes)
			(($(planes total "$b0" "$b2") >= RESTORE_BY)) && break
			sleep 0.2
		done
		mr_fabric_bytes >"$MR_TMP/restoring"
		mr_fabric_blackhole "$p" off
		mv "$MR_TMP/restoring" "$MR_TMP/restored"
	) &
	pid=$!
	mr_defer kill "$pid"
	integrity plane_failure 12 128
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	# The plane is back even if the transfer ended while it was down.
	if [[ -s $MR_TMP/failed ]]; then
		mr_fabric_blackhole "$(cut -d" " -f1 "$MR_TMP/failed")" off
	fi
	mr_stats "$MR_A_DEV" "$MR_A_NS" >"$MR_TMP/a.after"
	[[ -s $MR_TMP/failed ]] || mr_fail "the transfer ended before the plane failed"
	[[ -s $MR_TMP/restored ]] || mr_fail "the transfer ended before the plane came back"
	read -r p b1 <"$MR_TMP/failed"
	b2=$(<"$MR_TMP/restored")
	b3=$(mr_fabric_bytes)
	dead=$(mr_stat_delta "$MR_TMP/a.before" "$MR_TMP/a.after" path_dead)
	mr_log "plane $p failed; bytes per plane: start $b0, failure $b1," \
		"restored $b2, end $b3; paths declared dead: $dead;" \
		"bytes towards B after the restore: $(planes total "$b2" "$b3")"
	before=$(awk -v p="$p" '{ print $(p + 1) }' <<<"$b2")
	after=$(awk -v p="$p" '{ print $(p + 1) }' <<<"$b3")
	mr_result planes="$PLANES" plane="$p" paths_dead="$dead"
	((dead >= 1)) || mr_fail "no path was declared dead while plane $p was down"
	((after > before + 100000)) ||
		mr_fail "plane $p carried $((after - before)) bytes after it came back"
}

# Per plane, in tc's and in bits per second: 120 Mbit/s over all the
# planes (30 each of 4, 15 each of 8), what the emulated guest can carry.
RATE_BPS=$((120000000 / PLANES)) RATE=$((120 / PLANES))mbit

shape_all() {
	local p
	for ((p = 0; p < PLANES; p++)); do
		mr_fabric_shape "$p" tbf rate "$RATE" burst 16kb latency 20ms
	done
}

# write_bw NAME SECONDS [ARG...]: one ib_write_bw QP from A to B (ARGs
# added on both sides); sets BW (MB/s).
# perftest gives up without a report when its cycle counter calibration
# fails on the emulated CPU ("Correlation coefficient r^2 ... < 0.9",
# see perftest.sh): such a run is tried again.
write_bw() {
	MR_PAIR_RETRY='Correlation coefficient r\^2: .* < 0\.9' \
	MR_PAIR_TIMEOUT=$(($2 + 60)) mr_pair "$1" "tcp:$PORT" \
		ib_write_bw -d "$MR_B_DEV" -x "$MR_B_GIDX" -p "$PORT" -s 65536 -D "$2" "${@:3}" -- \
		ib_write_bw -d "$MR_A_DEV" -x "$MR_A_GIDX" -p "$PORT" -s 65536 -D "$2" "${@:3}" "$MR_B_IP"
	BW=$(awk '$1 == 65536 && $2 ~ /^[0-9]+$/ && NF >= 5 { print $4; exit }' \
		"$MR_TMP/$1.client")
	[[ $BW =~ ^[0-9]+(\.[0-9]+)?$ ]] || mr_fail "$1: no bandwidth figure in its report"
}

scaling() {
	local one four b0 b1
	shape_all
	# All planes first: the connection picks its paths' ports once, by
	# the next hops the route offers then (it does not re-spread them
	# when the route later gains next hops).
	b0=$(mr_fabric_bytes)
	write_bw all_planes 8
	four=$BW
	echo "$four" >"$MR_TMP/scaling.bw"
	b1=$(mr_fabric_bytes)
	mr_log "$PLANES planes: $four MB/s; bytes per plane $b0 -> $b1"
	mr_fabric_planes 1
	mr_defer mr_fabric_planes "$PLANES"
	b0=$(mr_fabric_bytes)
	write_bw one_plane 8
	one=$BW
	b1=$(mr_fabric_bytes)
	mr_log "1 plane: $one MB/s; bytes per plane $b0 -> $b1"
	mr_fabric_planes "$PLANES"
	mr_result planes="$PLANES" rate_bps="$RATE_BPS" mbps_one="$one" mbps_all="$four"
	awk -v a="$one" -v b="$four" -v r="$RATE_BPS" -v n="$PLANES" 'BEGIN {
		printf "scaling: %.2fx; one plane at %.0f %% of its rate, %d at %.0f %% of theirs\n",
			b / a, 100 * a * 8e6 / r, n, 100 * b * 8e6 / (n * r) }'
	awk -v a="$one" -v b="$four" -v n="$PLANES" 'BEGIN { exit !(a > 0 && b >= 0.875 * n * a) }' ||
		mr_fail "$PLANES planes gave $four MB/s, not $PLANES x 0.875 times the $one MB/s of one"
}

rxe_planes() {
	local p b0 b1 mr
	mr_rxe_fabric "$PLANES"
	for ((p = 0; p < PLANES; p++)); do
		mr_rxe_fabric_shape "$p" tbf rate "$RATE" burst 16kb latency 20ms
	done
	b0=$(mr_rxe_fabric_bytes)
	write_bw rxe_planes 8
	b1=$(mr_rxe_fabric_bytes)
	mr=$(cat "$MR_TMP/scaling.bw" 2>/dev/null || echo 0)
	mr_result planes="$PLANES" rate_bps="$RATE_BPS" mbps="$BW" mbps_metaroce="$mr" \
		bytes_from="${b0// /,}" bytes_to="${b1// /,}"
	awk -v b0="$b0" -v b1="$b1" -v bw="$BW" -v r="$RATE_BPS" -v n="$PLANES" -v mr="$mr" 'BEGIN {
		split(b0, x); split(b1, y)
		for (p = 1; p <= n; p++) { d[p] = y[p] - x[p]; t += d[p]; if (d[p] > d[m]) m = p }
		if (!m) m = 1
		printf "rxe, one QP: %.1f MB/s = %.0f %% of one plane; plane %d carried %.1f %% of its %d bytes (per plane:", bw, 100 * bw * 8e6 / r, m - 1, t ? 100 * d[m] / t : 0, t
		for (p = 1; p <= n; p++) printf " %d", d[p]
		printf ")"
		if (mr > 0) printf "; metaroce, one QP over %d planes: %.1f MB/s = %.2fx rxe", n, mr, mr / bw
		printf "\n"
		if (t < 1e6) { print "rxe moved less than 1 MB over the planes"; exit 1 }
		if (d[m] < 0.95 * t) { print "rxe spread its QP over planes"; exit 1 }
		if (bw * 8e6 > 1.15 * r) { print "rxe got more than the rate of one plane"; exit 1 }
	}' || mr_fail "rxe's QP did not stay on one plane (above)"
}

# recovery_check SAMPLES ON BACK: see the header. Prints the verdict
# line and exits non-zero when the rate fell short.
recovery_check() {
	awk -v on="$2" -v back="$3" -v r="$RATE_BPS" -v n="$PLANES" -v fp=1 -v w=0.5 \
		-v res="$MR_TMP/recovery.res" '
	{ t[NR] = $1; tot[NR] = 0; for (i = 2; i <= NF; i++) tot[NR] += $i; pb[NR] = $(fp + 2) }
	function rate(a, b) { return (tot[b] - tot[a]) * 8 / (t[b] - t[a]) }
	END {
		cap = (n - 1) * r; min = -1; k = 0; back70 = 0; maxdt = 0; lo = -1
		# before the failure: the last 3 s of it
		for (j = 1; j <= NR && t[j] < on; j++) if (!a0 && t[j] >= on - 3) a0 = j
		pre = a0 && j - 1 > a0 ? rate(a0, j - 1) : 0
		for (i = 1; i <= NR; i++) {
			if (t[i] < on || t[i] > back) continue
			if (i > 1 && t[i - 1] >= on) {
				dt = t[i] - t[i - 1]
				if (dt > maxdt) maxdt = dt
				if (lo < 0 || rate(i - 1, i) < lo) lo = rate(i - 1, i)
				# the first dip after the failure, and its end
				if (!done && rate(i - 1, i) < 0.7 * cap) dip = 1
				else if (!done && dip) { back70 = t[i] - on; done = 1 }
				# the first 400 ms, interval by interval
				if (t[i - 1] < on + 0.4)
					early = early sprintf(" %.0f:%.0f", (t[i] - on) * 1000, 100 * rate(i - 1, i) / cap)
			}
			# recovery: 100 ms windows from samples in the first 500 ms;
			# it ends where the last one under 70 % ends
			if (t[i] < on + 0.5) {
				for (j = i + 1; j <= NR && t[j] - t[i] < 0.1; j++) ;
				if (j <= NR && rate(i, j) < 0.7 * cap && t[j] - on > rec)
					rec = t[j] - on
			}
			# the window from sample i: to the first sample w later
			for (j = i + 1; j <= NR && t[j] - t[i] < w; j++) ;
			if (j > NR || t[j] > back) continue
			x = rate(i, j)
			if (t[i] < on + 0.1) continue
			k++
			if (min < 0 || x < min) min = x
			if (!m0) m0 = i
			m1 = j
		}
		# after the plane returned (allowing it 0.5 s): its share
		for (j = 2; j <= NR; j++) {
			if (t[j - 1] < back + 0.5) continue
			pd += pb[j] - pb[j - 1]; td += tot[j] - tot[j - 1]
		}
		mean = m0 && m1 > m0 ? rate(m0, m1) : 0
		printf "before the failure: %.1f Mb/s = %.0f %% of the %d planes; from 100 ms after it: %.1f Mb/s = %.0f %% of the surviving %.0f Mb/s on average; %d windows of %.0f ms: lowest %.1f Mb/s = %.0f %%; the first dip under 70 %% ended %.0f ms after it; lowest interval %.0f %% (longest interval %.0f ms); plane back: %.0f %% of the bytes after it returned\n",
			pre / 1e6, 100 * pre / (n * r), n, mean / 1e6, 100 * mean / cap, cap / 1e6,
			k, w * 1000, min / 1e6, 100 * min / cap,
			back70 * 1000, 100 * lo / cap, maxdt * 1000, td ? 100 * pd / td : 0
		printf "recovery time %.0f ms: every 100 ms window that starts later, up to 500 ms after the failure, carried at least 70 %% of the surviving capacity; each interval of the first 400 ms (ms after the failure: %% of it):%s\n",
			rec * 1000, early
		printf "before_mbit=%.2f before_pct=%.1f avg_mbit=%.2f avg_pct=%.1f windows=%d min_window_mbit=%.2f min_window_pct=%.1f dip_end_ms=%.0f recovery_ms=%.0f lowest_interval_pct=%.1f longest_interval_ms=%.0f back_share_pct=%.1f\n",
			pre / 1e6, 100 * pre / (n * r), mean / 1e6, 100 * mean / cap, k, min / 1e6,
			100 * min / cap, back70 * 1000, rec * 1000, 100 * lo / cap, maxdt * 1000,
			(td ? 100 * pd / td : 0) >res
		if (k < 5) { print "too few samples during the failure"; exit 1 }
		if (rec > 0.1) { print "recovery took longer than 100 ms"; exit 1 }
		if (mean < 0.7 * cap || min < 0.5 * cap) exit 1
		if (!td || pd < 0.15 * td) exit 1
	}' "$1"
}

recovery() {
	local on back dead rto od bh rc=0 i
	shape_all
	mr_fabric_planes "$PLANES"
	mr_stats "$MR_A_DEV" "$MR_A_NS" >"$MR_TMP/a.before"
	mr_fabric_sampler_start "$MR_TMP/samples"
	(
		# 3 s into the transfer: once B has received 1 MB (a starved
		# guest can take seconds to connect the QP).
		exec 9<> <(:)
		for ((i = 0; i < 400; i++)); do
			awk '{ t = 0; for (p = 2; p <= NF; p++) t += $p; if (NR == 1) t0 = t }
			     END { exit !(t - t0 >= 1e6) }' \
				"$MR_TMP/samples" 2>/dev/null && break
			read -rt 0.1 -u 9 || true
		done
		sleep 3
		mr_fabric_blackhole 1 on
		echo "$EPOCHREALTIME" >"$MR_TMP/on"
		sleep 4
		mr_fabric_blackhole 1 off
		echo "$EPOCHREALTIME" >"$MR_TMP/back"
	) &
	bh=$!
	mr_defer kill "$bh" 2>/dev/null
	write_bw recovery 16
	wait "$bh" || true
	mr_fabric_sampler_stop
	mr_stats "$MR_A_DEV" "$MR_A_NS" >"$MR_TMP/a.after"
	[[ -s $MR_TMP/back ]] || mr_fail "the run ended before plane 1 came back"
	on=$(<"$MR_TMP/on") back=$(<"$MR_TMP/back")
	dead=$(mr_stat_delta "$MR_TMP/a.before" "$MR_TMP/a.after" path_dead)
	rto=$(mr_stat_delta "$MR_TMP/a.before" "$MR_TMP/a.after" retransmits_timeout)
	od=$(mr_stat_delta "$MR_TMP/a.before" "$MR_TMP/a.after" retransmits_overdue)
	mr_log "$(wc -l <"$MR_TMP/samples") samples; paths declared dead: $dead;" \
		"timeout retransmits: $rto; overdue retransmits: $od"
	mr_result_file samples "$MR_TMP/samples"
	recovery_check "$MR_TMP/samples" "$on" "$back" || rc=$?
	mr_result planes="$PLANES" rate_bps="$RATE_BPS" plane=1 on="$on" back="$back" \
		mbps="$BW" paths_dead="$dead" overdue_retx="$od" timeout_retx="$rto" \
		"$(cat "$MR_TMP/recovery.res" 2>/dev/null)"
	((rc == 0)) || mr_fail "the surviving planes were not used well enough, or not within 100 ms (above)"
}

congestion() {
	local port b0 b1 i0 i1 o0 o1 ce rc=0
	shape_all
	mr_ecn_bottleneck "$(_mr_fab_router 0)" rb0 "$RATE"
	port=$(mr_udp_port)
	mr_fabric_count_udp "$port"
	# The competing flow, between the plane-0 link addresses.
	ip -n "$MR_A_NS" route add 10.41.0.0/24 via 10.40.0.254 dev fa0
	ip -n "$MR_B_NS" route add 10.40.0.0/24 via 10.41.0.254 dev fb0
	ip netns exec "$MR_B_NS" timeout "$(mr_secs 60)" iperf3 -s -1 -B 10.41.0.1 -p 18591 \
		>"$MR_TMP/iperf.srv" 2>&1 </dev/null &
	assert_wait "iperf3 listens" 20 mr_tcp_listening "$MR_B_NS" 18591
	ip netns exec "$MR_A_NS" timeout "$(mr_secs 60)" iperf3 -c 10.41.0.1 -B 10.40.0.1 -p 18591 \
		-u -b $((RATE_BPS * 2 / 3)) -t 16 >"$MR_TMP/iperf.cli" 2>&1 </dev/null &
	sleep 2
	mr_stats "$MR_A_DEV" "$MR_A_NS" >"$MR_TMP/a.before"
	i0=$(mr_fabric_udp_bytes in) o0=$(mr_fabric_udp_bytes out)
	mr_backlog_sampler_start "$(_mr_fab_router 0)" rb0 "$MR_TMP/backlog"
	write_bw congestion 8
	mr_backlog_sampler_stop
	i1=$(mr_fabric_udp_bytes in) o1=$(mr_fabric_udp_bytes out)
	mr_stats "$MR_A_DEV" "$MR_A_NS" >"$MR_TMP/a.after"
	wait
	ce=$(mr_stat_delta "$MR_TMP/a.before" "$MR_TMP/a.after" ecn_ce_echoed)
	mr_log "ib_write_bw $BW MB/s; CE marks echoed to the sender: $ce"
	mr_log "metaroce bytes into the planes: $i0 -> $i1; out of them: $o0 -> $o1"
	mr_log "plane 0 backlog samples: $(paste -sd' ' "$MR_TMP/backlog")"
	mr_log "competing flow: $(grep -E 'receiver' "$MR_TMP/iperf.cli" | tail -n 1)"
	mr_result planes="$PLANES" mbps="$BW" ce_echoed="$ce" in_from="${i0// /,}" \
		in_to="${i1// /,}" out_from="${o0// /,}" out_to="${o1// /,}"
	((ce > 0)) || mr_fail "the sender saw no CE mark"
	awk -v i0="$i0" -v i1="$i1" -v o0="$o0" -v o1="$o1" -v res="$MR_TMP/congestion.res" 'BEGIN {
		n = split(i0, a, " "); split(i1, b, " "); split(o0, c, " "); split(o1, d, " ")
		for (p = 2; p <= n; p++) clear += b[p] - a[p]
		clear /= n - 1; in0 = b[1] - a[1]; out0 = d[1] - c[1]
		printf "plane 0 took %.0f %% of a clear plane'"'"'s bytes, and lost %.1f %% of them\n",
			clear ? 100 * in0 / clear : 0, in0 ? 100 * (in0 - out0) / in0 : 0
		printf "plane0_pct_of_clear=%.1f plane0_loss_pct=%.2f\n",
			clear ? 100 * in0 / clear : 0, (in0 ? 100 * (in0 - out0) / in0 : 0) >res
		exit !(clear > 0 && in0 <= 0.6 * clear && in0 - out0 <= 0.02 * in0)
	}' || rc=$?
	mr_result planes="$PLANES" "$(cat "$MR_TMP/congestion.res" 2>/dev/null)"
	((rc == 0)) || mr_fail "plane 0 was not trimmed (above)"
	sort -n "$MR_TMP/backlog" | awk -v res="$MR_TMP/backlog.res" '{ v[NR] = $1 } END {
		printf "backlog: %d samples, median %d bytes, max %d\n", NR, v[int((NR + 1) / 2)], v[NR]
		printf "backlog_samples=%d backlog_median=%d backlog_max=%d\n", NR, v[int((NR + 1) / 2)], v[NR] >res
		exit !(NR >= 5 && v[int((NR + 1) / 2)] < 45000)
	}' || rc=$?
	mr_result planes="$PLANES" "$(cat "$MR_TMP/backlog.res" 2>/dev/null)"
	((rc == 0)) || mr_fail "plane 0's queue stood too high or was not sampled"
}

# The loss sweep's rates: percent of the packets A sends into each plane.
LOSSES=(0 0.1 1 5 10)
# metaroce's runs, in this order: each asserted rate next to a lossless run.
SWEEP_ORDER=(0 0.1 1 0 5 10 0)
# Runs of 6 s with a margin of 1 s: perftest measures the middle 4 s, as
# in the 8 s runs above with its default margin of 2 s; the 2 s saved per
# run keep the sweep's 12 runs and the rxe fabric within about 2 minutes.
SWEEP_SECONDS=6 SWEEP_MARGIN=1

# sweep_loss NS PREFIX PCT: random loss of PCT % on every plane, towards B
# only: netem on A's end of its link into each plane (PREFIX<plane> in NS:
# fa<plane> in mr_fabric, xa<plane> in mr_rxe_fabric). The planes' tbf
# stays where shape_all puts it, the root qdisc of the plane's egress
# towards B, one hop later: a device has one root qdisc, so netem there
# would have to replace tbf or sit under it, while on a hop of its own the
# two do not interact (this netem only drops: it adds no delay and no
# rate, so nothing waits in it); what survives meets the plane's queue and
# rate as in scaling, as behind a lossy link in front of a switch. A's
# links carry nothing from B out of A (B's packets, acknowledgements and
# perftest's TCP, come in on them), so only A -> B is lossy. 0 % installs
# netem too, so that every run takes the same qdisc path. One tc for all
# planes: starting a program takes a good part of a second in the
# emulated guest.
sweep_loss() {
	local p
	for ((p = 0; p < MR_PLANES; p++)); do
		echo "qdisc replace dev $2$p root netem limit 10000 loss $3%"
	done >"$MR_TMP/netem.batch"
	assert_ok "netem loss $3 % on $2*" ip netns exec "$1" \
		tc -batch "$MR_TMP/netem.batch"
}

# sweep_drops NS PREFIX: "PASSED DROPPED", the packets netem on A's links
# into the planes has let through and dropped so far.
sweep_drops() {
	ip netns exec "$1" tc -s qdisc show | awk -v re="^$2[0-9]+\$" '
		$1 == "qdisc" { on = 0; for (i = 2; i < NF; i++) if ($i == "dev") on = $2 == "netem" && $(i + 1) ~ re }
		$1 == "Sent" && on { s += $4; d += $7 }
		END { print s + 0, d + 0 }'
}

# sweep WHO NS PREFIX LOSS...: WHO's one ib_write_bw QP at each LOSS in
# turn, on every plane (sweep_loss NS PREFIX); appends "WHO LOSS MB/s
# PASSED DROPPED" to $MR_TMP/sweep. A failed metaroce run fails the
# subtest; a failed rxe run is logged and counted as 0 MB/s. For metaroce,
# what A's transport counted during the run is logged too.
sweep() {
	local who=$1 ns=$2 dev=$3 l bw d0 d1 c=""
	shift 3
	for l; do
		sweep_loss "$ns" "$dev" "$l"
		d0=$(sweep_drops "$ns" "$dev")
		if [[ $who == metaroce ]]; then
			mr_stats "$MR_A_DEV" "$MR_A_NS" >"$MR_TMP/a.before"
			write_bw "sweep_${who}_$l" "$SWEEP_SECONDS" -f "$SWEEP_MARGIN"
			bw=$BW
			mr_stats "$MR_A_DEV" "$MR_A_NS" >"$MR_TMP/a.after"
			c="; A:$(mr_stat_moved "$MR_TMP/a.before" "$MR_TMP/a.after" \
				data_segments_tx retransmits_sack retransmits_timeout \
				timeouts_spurious path_dead)"
		elif (write_bw "sweep_${who}_$l" "$SWEEP_SECONDS" -f "$SWEEP_MARGIN" &&
			echo "$BW" >"$MR_TMP/sweep.bw"); then
			bw=$(<"$MR_TMP/sweep.bw")
		else
			mr_log "$who at $l % loss: ib_write_bw failed (above): 0 MB/s"
			bw=0
		fi
		d1=$(sweep_drops "$ns" "$dev")
		read -r d0 d1 <<<"$(awk -v a="$d0" -v b="$d1" 'BEGIN {
			split(a, x); split(b, y); print y[1] - x[1], y[2] - x[2] }')"
		mr_log "$who, $l % loss: $bw MB/s; netem passed $d0 packets, dropped $d1$c"
		echo "$who $l $bw $d0 $d1" >>"$MR_TMP/sweep"
	done
}

# sweep_report RXE: the sweep's table, one line per loss rate; fails
# unless metaroce kept 0.90 of its lossless bandwidth at 1 % and 0.50 at
# 10 %. A lossy run's lossless bandwidth is interpolated, by the order of
# the runs, between the lossless runs before and after it (the one
# there is when there is one); the 0 % line shows the mean of the
# lossless runs. RXE 0: rxe was not measured.
sweep_report() {
	awk -v rxe="$1" '
	{
		w[NR] = $1; x[NR] = $2; bw[NR] = $3; k = $1 SUBSEP $2
		pass[k] += $4; drop[k] += $5
		if ($1 == "metaroce" && !(($2) in seen)) { seen[$2]; l[++n] = $2 }
		if ($2 == 0) { s0[$1] += $3; n0[$1]++; v0[$1] = v0[$1] sprintf(" %.2f", $3) }
	}
	function lost(k) { return pass[k] + drop[k] ? 100 * drop[k] / (pass[k] + drop[k]) : 0 }
	# ref(i): the lossless bandwidth around run i
	function ref(i,   a, b) {
		for (a = i - 1; a > 0 && !(w[a] == w[i] && x[a] == 0); a--) ;
		for (b = i + 1; b <= NR && !(w[b] == w[i] && x[b] == 0); b++) ;
		if (a < 1) return b <= NR ? bw[b] : 0
		if (b > NR) return bw[a]
		return bw[a] + (bw[b] - bw[a]) * (i - a) / (b - a)
	}
	END {
		for (i = 1; i <= NR; i++) if (x[i] != 0) { r0[w[i], x[i]] = ref(i); at[w[i], x[i]] = i }
		for (j = 1; j <= n; j++) {
			y = l[j]; m = "metaroce" SUBSEP y; r = "rxe" SUBSEP y
			if (y == 0) {
				mb = s0["metaroce"] / n0["metaroce"]; rb = n0["rxe"] ? s0["rxe"] / n0["rxe"] : 0
				printf "loss 0 %%: metaroce %.2f MB/s (mean of%s)", mb, v0["metaroce"]
				if (rxe) printf "; rxe %.2f MB/s; metaroce/rxe %s", rb, rb ? sprintf("%.1f", mb / rb) : "-"
				printf "\n"
				continue
			}
			mb = bw[at[m]]; ratio[y] = r0[m] ? mb / r0[m] : 0
			printf "loss %s %%: metaroce %.2f MB/s = %.2f of lossless (%.2f around it; netem dropped %.2f %%)",
				y, mb, ratio[y], r0[m], lost(m)
			if (rxe) {
				rb = bw[at[r]]
				printf "; rxe %.2f MB/s = %.2f of lossless (%.2f %%); metaroce/rxe %s",
					rb, r0[r] ? rb / r0[r] : 0, lost(r), rb ? sprintf("%.1f", mb / rb) : "-"
			}
			printf "\n"
		}
		if (!(ratio[1] >= 0.9)) { print "metaroce kept less than 0.90 of its lossless bandwidth at 1 % loss"; bad = 1 }
		if (!(ratio[10] >= 0.5)) { print "metaroce kept less than 0.50 of its lossless bandwidth at 10 % loss"; bad = 1 }
		if (!(lost("metaroce" SUBSEP 10) >= 5)) { print "netem dropped under 5 % at 10 % loss"; bad = 1 }
		exit bad
	}' "$MR_TMP/sweep"
}

loss_sweep() {
	local t0=$SECONDS p rxe=1
	shape_all
	mr_fabric_planes "$PLANES"
	for ((p = 0; p < PLANES; p++)); do
		mr_defer ip netns exec "$MR_A_NS" tc qdisc del dev "fa$p" root
	done
	sweep metaroce "$MR_A_NS" fa "${SWEEP_ORDER[@]}"
	for ((p = 0; p < PLANES; p++)); do
		echo "qdisc del dev fa$p root"
	done >"$MR_TMP/netem.batch"
	ip netns exec "$MR_A_NS" tc -batch "$MR_TMP/netem.batch"
	if modprobe rdma_rxe 2>/dev/null; then
		mr_rxe_fabric "$PLANES"
		for ((p = 0; p < PLANES; p++)); do
			mr_rxe_fabric_shape "$p" tbf rate "$RATE" burst 16kb latency 20ms
		done
		sweep rxe mrinit xa "${LOSSES[@]}"
	else
		mr_log "rdma_rxe is not available: rxe not measured"
		rxe=0
	fi
	mr_log "loss sweep: $((SECONDS - t0)) s"
	sweep_report "$rxe" || mr_fail "metaroce under loss (above)"
}

mr_setup fabric mr_fabric "$PLANES"
mr_run spread spread
mr_run mixed mixed
mr_run plane_failure plane_failure
mr_run scaling scaling
mr_run recovery recovery
mr_run congestion congestion
mr_run rxe_planes rxe_planes
mr_run loss_sweep loss_sweep
mr_done
