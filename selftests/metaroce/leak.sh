#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 600
#
# ROUNDS x CYCLES add/delete cycles leave nothing behind: module refcount,
# devices and sockets are back to where they started, and so is kernel
# memory.
#
# Memory: slab object counts are taken before the first round and after
# each round of CYCLES cycles, once caches are dropped and per-CPU slabs
# flushed, with shell builtins only (a process started between the flush and
# the read would refill per-CPU slabs, which count as fully used). A cache
# that grew by CYCLES/2 objects or more in EVERY round is a leak: leaking one
# object per cycle grows it by CYCLES each round, while the noise left
# (background kernel work refilling a per-CPU slab) does not repeat round
# after round. vmap_area is left out: freed vmalloc areas (process kernel
# stacks) are purged lazily, so it grows with any workload; so are the
# debug kernel's own bookkeeping caches (debug_objects_cache, whose pool is
# refilled and trimmed by deferred work, and kmemleak's, freed after an RCU
# grace period), where kmemleak's scan is the leak check. Slab must also
# end within 2 MiB, and MemAvailable within 16 MiB, of the start (large
# allocations bypass the slab caches).
. "$(dirname "$0")/lib.sh"
mr_require_module

CYCLES=${MR_TEST_LEAK_CYCLES:-60}
ROUNDS=3
SNAP=/tmp/mr-leak.$$

cycle() {
	local i
	for ((i = 0; i < $1; i++)); do
		rdma link add mrleak type "$MR_TYPE" netdev mrt0 ||
			mr_fail "rdma link add failed in cycle $i"
		rdma link delete mrleak || mr_fail "rdma link delete failed in cycle $i"
	done
}

# snapshot N: "cache active_objects" lines into $SNAP.N, sorted.
snapshot() {
	local f name active _
	sync
	echo 3 >/proc/sys/vm/drop_caches
	sleep 1 # RCU-deferred frees
	{
		# Builtins only from here to the end of the read.
		for f in /sys/kernel/slab/*/shrink; do
			echo 1 >"$f" 2>/dev/null || true
		done
		while read -r name active _; do
			[[ $active =~ ^[0-9]+$ ]] && echo "$name $active"
		done </proc/slabinfo
	} >"$SNAP.raw"
	sort "$SNAP.raw" >"$SNAP.$1"
}

meminfo() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }

add_delete_cycles() {
	local port ref0 slab0 avail0 r grown
	mr_veth mrt0 mrt1
	mr_defer rdma link delete mrleak
	mr_defer rm -f "$SNAP".*
	modprobe "$MR_MOD"
	cycle 5 # warm up: first-use allocations are not leaks
	port=$(mr_udp_port)
	ref0=$(cat "/sys/module/$MR_MOD/refcnt")
	snapshot 0
	slab0=$(meminfo Slab) avail0=$(meminfo MemAvailable)
	for ((r = 1; r <= ROUNDS; r++)); do
		cycle "$CYCLES"
		snapshot "$r"
	done

	assert_eq "module refcount" "$ref0" "$(cat "/sys/module/$MR_MOD/refcnt")"
	assert_ok "no device left" mr_dev_gone mrleak
	assert_eq "rdma link" "" "$(rdma link show 2>/dev/null | grep -w mrleak || true)"
	if mr_udp_listening "" "$port"; then
		mr_fail "UDP :$port still bound after the last device went"
	fi
	# Columns: cache, count after round 0..3.
	grown=$(join "$SNAP.0" "$SNAP.1" | join - "$SNAP.2" | join - "$SNAP.3" |
		awk -v lim=$((CYCLES / 2)) '$1 !~ /^(vmap_area|debug_objects_cache|kmemleak_.*)$/ &&
			$3 - $2 >= lim &&
			$4 - $3 >= lim && $5 - $4 >= lim {
			print $1 " +" ($3 - $2) " +" ($4 - $3) " +" ($5 - $4) }')
	[[ -z $grown ]] || mr_fail "slab caches grew by >= $((CYCLES / 2)) objects in each" \
		"of $ROUNDS rounds of $CYCLES cycles: $(echo $grown)"
	mr_log "Slab ${slab0} -> $(meminfo Slab) kB," \
		"MemAvailable ${avail0} -> $(meminfo MemAvailable) kB"
	(($(meminfo Slab) - slab0 < 2048)) || mr_fail "Slab grew by 2 MiB or more"
	((avail0 - $(meminfo MemAvailable) < 16384)) ||
		mr_fail "MemAvailable dropped by 16 MiB or more"
}

mr_run add_delete_cycles add_delete_cycles
mr_done
