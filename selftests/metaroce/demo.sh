#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Two hosts (network namespaces hosta and hostb, joined by a veth pair),
# a metaroce device on each end, and what the RDMA tools see.
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
show ip netns exec hosta rdma link delete mra
show ip netns exec hostb rdma link delete mrb
