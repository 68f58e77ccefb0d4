#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 600
#
# NVMe over Fabrics (RDMA) over metaroce: an in-kernel initiator and target,
# each on its own metaroce device, joined by a veth pair. The target
# (nvmet, nvmet-rdma) exports a loop device backed by a file; the host
# (nvme-rdma) connects, data is written through the host's block device
# with direct I/O in several block sizes, read back, and compared with what
# was written, on the host and in the target's backing file. Then the host
# disconnects and the target goes away, as does every trace of both.
#
# This exercises the kernel verbs of the device as no userspace tool does:
# rdma_cm from the kernel, fast-registration MRs (IB_WR_REG_MR), RDMA READ
# (the target fetching write data), RDMA WRITE (read data), SEND with
# invalidate (responses), local invalidation.
#
# Namespaces: nvme-rdma and nvmet-rdma create their rdma_cm IDs in the
# initial network namespace whatever the caller's (rdma_create_id(&init_net,
# ...) in drivers/nvme/{host,target}/rdma.c), so both devices must be there.
# Policy routing makes each end reach the other's address through the veth
# instead of the loopback device (see "two ends in one namespace" below),
# and the veth counters prove the data crossed it.
#
# Knobs: MR_NVME_MIB (MiB written and read back, default 8, at least 4).
. "$(dirname "$0")/lib.sh"
mr_require_module

T_IF=nvt0 T_IP=198.18.9.1 T_DEV=nvt_dev
H_IF=nvh0 H_IP=198.18.9.2 H_DEV=nvh_dev
NQN=nqn.2026-12.org.metaroce:nvme-rdma-selftest
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:4d52e0a4-6d65-7461-726f-636500000001
HOSTID=4d52e0a4-6d65-7461-726f-636500000001
PORT=4420 PORT_ID=9
CFS=/sys/kernel/config/nvmet
MIB=${MR_NVME_MIB:-8}
STATE=/tmp/mr-nvme-rdma.state # backing file and pattern live here

if [[ ! $MIB =~ ^[0-9]+$ ]] || ((MIB < 4)); then
	mr_skip_all "MR_NVME_MIB must be a number >= 4"
fi
for m in nvmet nvmet-rdma nvme-rdma loop; do
	modinfo "$m" >/dev/null 2>&1 || mr_skip_all "kernel module $m is not available"
done
for t in nvme losetup dd cmp; do
	command -v "$t" >/dev/null || mr_skip_all "$t is not installed"
done

# --- two ends in one namespace -------------------------------------------------

# Locally generated packets to the other end's address are routed through
# our own veth end (rules for "iif lo" ahead of the local table), the
# receiving end accepts packets whose source is a local address
# (accept_local, no reverse-path filter), and the neighbours are static.
RULE_T=9101 RULE_H=9102 LOCAL_PREF=9190

routing_up() {
	local v
	for v in all "$T_IF" "$H_IF"; do
		sysctl -qw "net.ipv4.conf.$v.rp_filter=0"
	done
	for v in "$T_IF" "$H_IF"; do
		sysctl -qw "net.ipv4.conf.$v.accept_local=1"
	done
	routing_down # what a killed run may have left
	assert_ok "route to $T_IP via $H_IF" \
		ip route replace "$T_IP" dev "$H_IF" src "$H_IP" table "$RULE_H"
	assert_ok "route to $H_IP via $T_IF" \
		ip route replace "$H_IP" dev "$T_IF" src "$T_IP" table "$RULE_T"
	assert_ok "rule for $T_IP" \
		ip rule add pref "$RULE_H" iif lo to "$T_IP" lookup "$RULE_H"
	assert_ok "rule for $H_IP" \
		ip rule add pref "$RULE_T" iif lo to "$H_IP" lookup "$RULE_T"
	if ip rule show pref 0 | grep -q 'lookup local'; then
		ip rule show pref "$LOCAL_PREF" | grep -q 'lookup local' ||
			assert_ok "local table at $LOCAL_PREF" \
				ip rule add pref "$LOCAL_PREF" lookup local
		mr_defer routing_restore_local
		assert_ok "local table not at 0" ip rule del pref 0 lookup local
	fi
	assert_ok "neighbour $T_IP" ip neigh replace "$T_IP" \
		lladdr "$(cat "/sys/class/net/$T_IF/address")" dev "$H_IF" nud permanent
	assert_ok "neighbour $H_IP" ip neigh replace "$H_IP" \
		lladdr "$(cat "/sys/class/net/$H_IF/address")" dev "$T_IF" nud permanent
}

routing_restore_local() {
	ip rule show pref 0 | grep -q 'lookup local' || ip rule add pref 0 lookup local
	ip rule del pref "$LOCAL_PREF" lookup local
}

routing_down() {
	while ip rule del pref "$RULE_H" 2>/dev/null; do :; done
	while ip rule del pref "$RULE_T" 2>/dev/null; do :; done
	ip route flush table "$RULE_H" 2>/dev/null || true
	ip route flush table "$RULE_T" 2>/dev/null || true
	return 0
}

# route_dev DST SRC: the device the kernel picks for DST from SRC.
route_dev() {
	ip -o route get "$1" from "$2" | sed -n 's/.* dev \([^ ]*\).*/\1/p'
}

# --- target (configfs) ------------------------------------------------------------

SUBSYS=$CFS/subsystems/$NQN
PORTDIR=$CFS/ports/$PORT_ID

target_teardown() {
	rm -f "$PORTDIR/subsystems/$NQN"
	[[ -d $PORTDIR ]] && rmdir "$PORTDIR"
	if [[ -d $SUBSYS/namespaces/1 ]]; then
		echo 0 >"$SUBSYS/namespaces/1/enable"
		rmdir "$SUBSYS/namespaces/1"
	fi
	[[ -d $SUBSYS ]] && rmdir "$SUBSYS"
	if [[ -f $STATE/loopdev ]]; then
		losetup -d "$(<"$STATE/loopdev")"
		rm -f "$STATE/loopdev"
	fi
	return 0
}

# Best effort, idempotent: whatever the subtests left behind.
cleanup_all() {
	nvme disconnect -n "$NQN" >/dev/null 2>&1
	target_teardown 2>/dev/null
	modprobe -r nvme-rdma nvmet-rdma 2>/dev/null
	rm -rf "$STATE"
	return 0
}

# --- host --------------------------------------------------------------------

# host_ctrl: the nvme controller (nvmeN) connected to $NQN over rdma.
host_ctrl() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[[ -e $c/subsysnqn ]] || continue
		[[ $(<"$c/subsysnqn") == "$NQN" && $(<"$c/transport") == rdma ]] ||
			continue
		echo "${c##*/}"
		return 0
	done
	return 1
}

# host_disk: the block device (nvmeXnY) of namespace 1 of $NQN.
host_disk() {
	local b n
	for b in /sys/block/nvme*; do
		n=${b##*/}
		[[ $n =~ ^nvme[0-9]+n[0-9]+$ && -e $b/device/subsysnqn ]] || continue
		[[ $(<"$b/device/subsysnqn") == "$NQN" ]] || continue
		echo "$n"
		return 0
	done
	return 1
}
ctrl_live() { [[ $(<"/sys/class/nvme/$1/state") == live ]]; }
host_disk_gone() { ! host_disk >/dev/null; }
host_ctrl_gone() { ! host_ctrl >/dev/null; }

tx_bytes() { cat "/sys/class/net/$1/statistics/tx_bytes"; }

# diag: what the devices saw, for a failed step: non-zero port counters,
# the transport's peers (metaroce's debugfs), QPs and the kernel log.
diag() {
	local d
	echo "--- diagnostics"
	for d in "$T_DEV" "$H_DEV"; do
		echo "$d counters:"
		mr_stats "$d" 2>/dev/null |
			awk '$2 != 0 { printf "  %s %s\n", $1, $2 }'
		[[ -r /sys/kernel/debug/metaroce/$d/peers ]] &&
			sed 's/^/  /' "/sys/kernel/debug/metaroce/$d/peers"
	done
	rdma resource show qp 2>/dev/null | grep -E "$T_DEV|$H_DEV"
	dmesg | tail -n 20
}

# step WHAT CMD...: as assert_ok, with the diagnostics when CMD fails.
step() {
	local what=$1 out
	shift
	out=$("$@" 2>&1) || { diag; mr_fail "$what: '$*' failed: $out"; }
}

# --- subtests ----------------------------------------------------------------

setup() {
	mr_defer cleanup_all
	mkdir -p "$STATE"
	modprobe configfs
	[[ -d /sys/kernel/config ]] && ! mountpoint -q /sys/kernel/config &&
		mount -t configfs configfs /sys/kernel/config
	assert_ok "modprobe nvmet nvmet-rdma" modprobe -a nvmet nvmet-rdma
	assert_ok "modprobe nvme-rdma" modprobe nvme-rdma
	assert_ok "modprobe loop" modprobe loop
	[[ -d $CFS ]] || mr_fail "no nvmet configfs tree at $CFS"

	mr_veth "$T_IF" "$H_IF"
	assert_ok "address of $T_IF" ip addr add "$T_IP/24" dev "$T_IF"
	assert_ok "address of $H_IF" ip addr add "$H_IP/24" dev "$H_IF"
	mr_defer routing_down
	routing_up
	assert_eq "route from $H_IP to $T_IP" "$H_IF" "$(route_dev "$T_IP" "$H_IP")"
	assert_eq "route from $T_IP to $H_IP" "$T_IF" "$(route_dev "$H_IP" "$T_IP")"

	mr_link_add "$T_DEV" "$T_IF"
	mr_link_add "$H_DEV" "$H_IF"
	assert_wait "port of $T_DEV ACTIVE" 10 mr_port_active "$T_DEV"
	assert_wait "port of $H_DEV ACTIVE" 10 mr_port_active "$H_DEV"
	assert_wait "$T_DEV has the GID of $T_IP" 10 mr_gid_index "$T_DEV" "$T_IP"
	assert_wait "$H_DEV has the GID of $H_IP" 10 mr_gid_index "$H_DEV" "$H_IP"
}

target() {
	local loopdev
	truncate -s "$((MIB * 2))M" "$STATE/backing"
	loopdev=$(losetup -f --show "$STATE/backing") || mr_fail "losetup failed"
	echo "$loopdev" >"$STATE/loopdev"

	mkdir "$SUBSYS"
	echo 1 >"$SUBSYS/attr_allow_any_host"
	mkdir "$SUBSYS/namespaces/1"
	echo -n "$loopdev" >"$SUBSYS/namespaces/1/device_path"
	echo 1 >"$SUBSYS/namespaces/1/enable"
	assert_eq "namespace enabled" 1 "$(<"$SUBSYS/namespaces/1/enable")"

	mkdir "$PORTDIR"
	echo rdma >"$PORTDIR/addr_trtype"
	echo ipv4 >"$PORTDIR/addr_adrfam"
	echo "$T_IP" >"$PORTDIR/addr_traddr"
	echo "$PORT" >"$PORTDIR/addr_trsvcid"
	# Enabling the port (the link) makes nvmet-rdma listen.
	ln -s "$SUBSYS" "$PORTDIR/subsystems/$NQN" ||
		mr_fail "nvmet-rdma could not listen on $T_IP:$PORT"
	assert_wait "an rdma_cm listener on port $PORT" 10 mr_cm_listening "$PORT"
	mr_log "target: $NQN on $loopdev, rdma $T_IP:$PORT"
}

connect() {
	local out ctrl
	[[ -L $PORTDIR/subsystems/$NQN ]] || mr_skip "the target is not set up"
	out=$(timeout "$(mr_secs 120)" nvme connect -t rdma -a "$T_IP" -s "$PORT" -n "$NQN" \
		-w "$H_IP" --hostnqn="$HOSTNQN" --hostid="$HOSTID" 2>&1) ||
		{ diag; mr_fail "nvme connect failed ($?): $out"; }
	mr_log "nvme connect: $out"
	assert_wait "a controller for $NQN" 10 host_ctrl
	ctrl=$(host_ctrl)
	assert_wait "$ctrl live" 30 ctrl_live "$ctrl"
	assert_match "$ctrl address" "^traddr=$T_IP,trsvcid=$PORT(,|\$)" \
		"$(tr -d '\n' <"/sys/class/nvme/$ctrl/address")"
	assert_wait "a block device for namespace 1" 30 host_disk
	assert_wait "/dev/$(host_disk)" 10 test -b "/dev/$(host_disk)"
	mr_log "host: $ctrl, /dev/$(host_disk), $(<"/sys/class/nvme/$ctrl/queue_count") queues"
}

# wr DISK BS OFFSET_MIB MIB: writes the pattern's [OFFSET, OFFSET+MIB) MiB
# at the same place on DISK, BS bytes per direct write.
wr() {
	local n=$(($4 * 1048576 / $2)) at=$(($3 * 1048576 / $2))
	step "dd write bs=$2 at $3 MiB" dd if="$STATE/pattern" of="/dev/$1" \
		bs="$2" count="$n" skip="$at" seek="$at" oflag=direct iflag=fullblock
}

# rd DISK BS MIB OUT: reads the first MIB MiB of DISK, BS bytes per direct read.
rd() {
	step "dd read bs=$2" dd if="/dev/$1" of="$4" bs="$2" \
		count="$(($3 * 1048576 / $2))" iflag=direct
}

write_read_verify() {
	local disk tx_h0 tx_t0 tx_h tx_t rest=$((MIB - 3)) want reg linv rinv
	disk=$(host_disk) || mr_skip "no connected namespace"
	head -c "$((MIB * 1048576))" /dev/urandom >"$STATE/pattern"
	tx_h0=$(tx_bytes "$H_IF") tx_t0=$(tx_bytes "$T_IF")
	mr_stats "$H_DEV" >"$STATE/h.before"

	# 4 KiB, 64 KiB and 1 MiB writes: one page, one fast-reg MR of many
	# pages, and commands the host splits.
	wr "$disk" 4096 0 1
	wr "$disk" 65536 1 2
	wr "$disk" 1048576 3 "$rest"
	rd "$disk" 1048576 "$MIB" "$STATE/read-1m"
	step "read back (1 MiB reads) equals what was written" \
		cmp "$STATE/pattern" "$STATE/read-1m"
	rd "$disk" 4096 1 "$STATE/read-4k"
	step "read back (4 KiB reads) equals what was written" \
		cmp -n 1048576 "$STATE/pattern" "$STATE/read-4k"
	rd "$disk" 131072 "$MIB" "$STATE/read-128k"
	step "read back (128 KiB reads) equals what was written" \
		cmp "$STATE/pattern" "$STATE/read-128k"
	# The target stored exactly that (the loop device is cached: flush it).
	blockdev --flushbufs "$(<"$STATE/loopdev")" 2>/dev/null || true
	step "the target's backing file holds the data" \
		cmp -n "$((MIB * 1048576))" "$STATE/pattern" "$STATE/backing"

	# The data crossed the veth: written data leaves the host (RDMA READ
	# responses), read data leaves the target (RDMA WRITEs), each at least
	# once ($MIB MiB written, 2 x $MIB + 1 MiB read).
	tx_h=$(($(tx_bytes "$H_IF") - tx_h0)) tx_t=$(($(tx_bytes "$T_IF") - tx_t0))
	want=$((MIB * 1048576))
	((tx_h >= want)) || mr_fail "$H_IF sent $tx_h bytes, less than the $want written"
	((tx_t >= 2 * want)) || mr_fail "$T_IF sent $tx_t bytes, less than the $((2 * want)) read"
	mr_log "veth bytes sent: host $tx_h, target $tx_t"

	# The host registered its buffers with IB_WR_REG_MR, and each
	# registration was undone: by the target's SEND_WITH_INV (nvmet-rdma
	# answers so when the command asks for it) or a LOCAL_INV of its own.
	mr_stats "$H_DEV" >"$STATE/h.after"
	reg=$(mr_stat_delta "$STATE/h.before" "$STATE/h.after" fast_registrations)
	linv=$(mr_stat_delta "$STATE/h.before" "$STATE/h.after" local_invalidations)
	rinv=$(mr_stat_delta "$STATE/h.before" "$STATE/h.after" remote_invalidations)
	mr_log "host: $reg fast registrations, $rinv remote and $linv local invalidations"
	((reg > 0)) || mr_fail "the host made no fast registration (IB_WR_REG_MR)"
	((linv + rinv > 0)) || mr_fail "no registration was invalidated"
	((linv + rinv <= reg)) || mr_fail "more invalidations than registrations"
}

disconnect() {
	local out
	host_ctrl >/dev/null || mr_skip "not connected"
	out=$(timeout "$(mr_secs 60)" nvme disconnect -n "$NQN" 2>&1) ||
		mr_fail "nvme disconnect failed ($?): $out"
	assert_match "nvme disconnect output" "disconnected 1 controller" "$out"
	assert_wait "block device gone" 10 host_disk_gone
	assert_wait "controller gone" 10 host_ctrl_gone
}

target_down() {
	[[ -d $SUBSYS ]] || mr_skip "no target"
	target_teardown
	assert_wait "the rdma_cm listener on port $PORT gone" 10 \
		not mr_cm_listening "$PORT"
	[[ ! -d $SUBSYS && ! -d $PORTDIR ]] || mr_fail "nvmet configfs entries left"
	# The ULPs let go of the devices: unloading them and deleting the
	# devices must not block.
	assert_ok "modprobe -r nvme-rdma nvmet-rdma" timeout "$(mr_secs 60)" \
		modprobe -r nvme-rdma nvmet-rdma
	assert_ok "rdma link delete $H_DEV" timeout "$(mr_secs 30)" rdma link delete "$H_DEV"
	assert_ok "rdma link delete $T_DEV" timeout "$(mr_secs 30)" rdma link delete "$T_DEV"
}
not() { ! "$@"; }

mr_setup setup setup
mr_run target target
mr_run connect connect
mr_run write_read_verify write_read_verify
mr_run disconnect disconnect
mr_run target_down target_down
mr_done
