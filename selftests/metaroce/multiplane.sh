#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 900
#
# Two hosts joined by a 4-plane fabric (fabric.sh): each host's address,
# and its device's GID, on a dummy interface; one multipath route per host
# over the planes, hashed on the UDP ports. mr_integrity (every byte
# checked on both sides, no failed completion) runs over it:
#
#   spread          the traffic of one connection crosses every plane:
#                   the device spreads its 8 paths over the planes (it asks
#                   the routing table which next hop each candidate port
#                   takes), so each plane must carry 15 % or more (25 %
#                   would be perfectly even; the shares are logged)
#   plane_failure   while a transfer runs, the busiest plane drops every
#                   packet in both directions for 3 s: the
#                   transfer still passes, paths on that plane time out
#                   and are declared dead, and the plane carries data
#                   again after it returns
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fabric.sh"
mr_require_module

TOOL=$MR_TOP/build/userspace/tools/mr_integrity
PORT=18590
PLANES=4

[[ -x $TOOL ]] || mr_skip_all "$TOOL is missing: run make userspace"

# integrity NAME SEED BATCHES: mr_integrity from A to B and back.
integrity() {
	MR_PAIR_TIMEOUT=600 mr_pair "$1" "tcp:$PORT" \
		"$TOOL" -d "$MR_B_DEV" -g "$MR_B_GIDX" -p "$PORT" -q 4 \
		-n "$3" -b 16 -m 1048576 -s "$2" -t 120 -- \
		"$TOOL" -d "$MR_A_DEV" -g "$MR_A_GIDX" -p "$PORT" -q 4 \
		-n "$3" -b 16 -m 1048576 -s "$2" -t 120 "$MR_B_IP"
	grep -h "^mr_integrity: OK" "$MR_TMP/$1.client" "$MR_TMP/$1.server"
}

# shares BEFORE AFTER: each plane's share of the bytes between two
# mr_fabric_bytes samples, in percent, one line.
shares() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		n = split(a, x, " "); split(b, y, " ")
		for (i = 1; i <= n; i++) { d[i] = y[i] - x[i]; t += d[i] }
		for (i = 1; i <= n; i++) printf "%d%s", t ? 100 * d[i] / t : 0, i < n ? " " : "\n"
	}'
}

spread() {
	local b0 b1 s p min=100 max=0
	b0=$(mr_fabric_bytes)
	integrity spread 11 8
	b1=$(mr_fabric_bytes)
	s=$(shares "$b0" "$b1")
	for p in $s; do
		((p < min)) && min=$p
		((p > max)) && max=$p
	done
	mr_log "bytes per plane towards B: $b0 -> $b1; shares (%): $s (max/min $max/$min)"
	((min >= 15)) || mr_fail "a plane carried only $min % of the data: $s"
}

# The plane with the most bytes towards B since BEFORE.
busiest() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		n = split(a, x, " "); split(b, y, " ")
		for (i = 1; i <= n; i++) if (y[i] - x[i] > m) { m = y[i] - x[i]; p = i - 1 }
		print p
	}'
}

plane_failure() {
	local b0 b1 b2 b3 p before after dead
	mr_stats "$MR_A_DEV" "$MR_A_NS" >"$MR_TMP/a.before"
	b0=$(mr_fabric_bytes)
	(
		sleep 3
		b1=$(mr_fabric_bytes)
		p=$(busiest "$b0" "$b1")
		echo "$p $b1" >"$MR_TMP/failed"
		mr_fabric_blackhole "$p" on
		sleep 3
		mr_fabric_bytes >"$MR_TMP/restored"
		mr_fabric_blackhole "$p" off
	) &
	mr_defer kill $! 2>/dev/null
	integrity plane_failure 12 64
	wait
	mr_stats "$MR_A_DEV" "$MR_A_NS" >"$MR_TMP/a.after"
	[[ -s $MR_TMP/restored ]] || mr_fail "the transfer ended before the plane came back"
	read -r p b1 <"$MR_TMP/failed"
	b2=$(<"$MR_TMP/restored")
	b3=$(mr_fabric_bytes)
	dead=$(mr_stat_delta "$MR_TMP/a.before" "$MR_TMP/a.after" path_dead)
	mr_log "plane $p failed for 3 s; bytes per plane: start $b0, failure $b1," \
		"restored $b2, end $b3; paths declared dead: $dead"
	before=$(awk -v p="$p" '{ print $(p + 1) }' <<<"$b2")
	after=$(awk -v p="$p" '{ print $(p + 1) }' <<<"$b3")
	((dead >= 1)) || mr_fail "no path was declared dead while plane $p was down"
	((after > before + 100000)) ||
		mr_fail "plane $p carried $((after - before)) bytes after it came back"
}

mr_setup fabric mr_fabric "$PLANES"
mr_run spread spread
mr_run plane_failure plane_failure
mr_done
