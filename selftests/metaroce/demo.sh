#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Two hosts (network namespaces hosta and hostb, joined by a veth pair),
# a metaroce device on each end, what the RDMA tools see, and data moved
# between the hosts: ibv_rc_pingpong (checked) and ib_write_bw.
# Run in the VM: make demo  (selftests/vm/run -- selftests/metaroce/demo.sh)
set -euo pipefail

cleanup() {
	ip netns del hosta 2>/dev/null || true
	ip netns del hostb 2>/dev/null || true
}
trap cleanup EXIT
cleanup

# show CMD...: print a command, then run it.
show() {
	echo
	echo "\$ $*"
	"$@"
}

ip netns add hosta
ip netns add hostb
ip link add vetha netns hosta type veth peer name vethb netns hostb
ip -n hosta addr add 10.0.0.1/24 dev vetha
ip -n hostb addr add 10.0.0.2/24 dev vethb
ip -n hosta link set vetha up
ip -n hostb link set vethb up

show ip netns exec hosta rdma link add mra type metaroce netdev vetha
show ip netns exec hostb rdma link add mrb type metaroce netdev vethb
show rdma link
show ibv_devices
show ibv_devinfo -d mra
show ibv_devinfo -d mrb
show ip netns exec hosta ping -c 1 -W 2 10.0.0.2 || true

# gid_index DEV IPV4: DEV's GID index for IPV4 (an IPv4-mapped RoCE v2 GID).
gid_index() {
	local want f
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
		${2//./ })
	for _ in $(seq 50); do
		for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
			if [[ $(cat "$f" 2>/dev/null) == "$want" ]]; then
				echo "${f##*/}"
				return
			fi
		done
		sleep 0.2
	done
	echo "no GID for $2 on $1" >&2
	return 1
}
ga=$(gid_index mra 10.0.0.1)
gb=$(gid_index mrb 10.0.0.2)

# wait_tcp NS PORT: until something listens on TCP PORT in NS.
wait_tcp() {
	for _ in $(seq 100); do
		ip netns exec "$1" ss -Htln "sport = :$2" | grep -q . && return
		sleep 0.1
	done
}

echo
echo "# RC SEND/RECV between the hosts, every buffer checked (-c)"
ip netns exec hostb ibv_rc_pingpong -d mrb -g "$gb" -n 200 -s 4096 -c \
	>/tmp/demo-pp.srv 2>&1 &
wait_tcp hostb 18515
show ip netns exec hosta ibv_rc_pingpong -d mra -g "$ga" -n 200 -s 4096 -c 10.0.0.2
wait $!

echo
echo "# RDMA WRITE bandwidth, 64 KiB messages"
ip netns exec hostb ib_write_bw -d mrb -x "$gb" -s 65536 -n 200 \
	>/tmp/demo-bw.srv 2>&1 &
wait_tcp hostb 18515
show ip netns exec hosta ib_write_bw -d mra -x "$ga" -s 65536 -n 200 10.0.0.2
wait $!

echo
echo "# What the transport did (non-zero counters of mra)"
echo "\$ rdma statistic show link mra/1"
ip netns exec hosta rdma statistic show link mra/1 |
	awk '{ for (i = 3; i < NF; i += 2) if ($(i + 1) != 0 && $i !~ /^path/)
		print "  " $i, $(i + 1) }'

show ip netns exec hosta rdma link delete mra
show ip netns exec hostb rdma link delete mrb
