#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The port follows its netdev: `ip link set down/up` and loss of carrier
# (peer down) turn it DOWN/ACTIVE in sysfs and in ibv_devinfo, and verbs
# applications get IBV_EVENT_PORT_ERR / IBV_EVENT_PORT_ACTIVE.
. "$(dirname "$0")/lib.sh"
mr_require_module

state_is() { [[ $(mr_port_state mrport) == "$1" ]]; }

# expect_port STATE IBV_STATE
expect_port() {
	assert_wait "sysfs state $1" 5 state_is "$1"
	assert_eq "ibv_devinfo state" "$2" "$(mr_devinfo mrport state)"
}

admin_down_up() {
	mr_veth mrt0 mrt1
	mr_link_add mrport mrt0
	expect_port ACTIVE "PORT_ACTIVE (4)"
	ip link set mrt0 down
	expect_port DOWN "PORT_DOWN (1)"
	ip link set mrt0 up
	expect_port ACTIVE "PORT_ACTIVE (4)"
}

carrier() {
	mr_veth mrt0 mrt1
	mr_link_add mrport mrt0
	ip link set mrt1 down # mrt0 stays up but loses carrier
	expect_port DOWN "PORT_DOWN (1)"
	ip link set mrt1 up
	expect_port ACTIVE "PORT_ACTIVE (4)"
}

async_events() {
	local log=/tmp/mr-asyncwatch.$$ pid
	mr_veth mrt0 mrt1
	mr_link_add mrport mrt0
	ibv_asyncwatch -d mrport >"$log" 2>&1 &
	pid=$!
	mr_defer rm -f "$log"
	mr_defer kill "$pid"
	assert_wait "ibv_asyncwatch listening" 10 grep -q "async event FD" "$log"
	ip link set mrt0 down
	assert_wait "IBV_EVENT_PORT_ERR delivered" 5 grep -q "IBV_EVENT_PORT_ERR.*port 1" "$log"
	ip link set mrt0 up
	assert_wait "IBV_EVENT_PORT_ACTIVE delivered" 5 grep -q "IBV_EVENT_PORT_ACTIVE.*port 1" "$log"
}

mr_run admin_down_up admin_down_up
mr_run carrier carrier
mr_run async_events async_events
mr_done
