#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The GID table follows the netdev's addresses: `ip addr add` makes an IPv4
# (::ffff:a.b.c.d) or IPv6 GID of type RoCE v2 appear, `ip addr del` makes it
# go away.
. "$(dirname "$0")/lib.sh"
mr_require_module

GIDS=/sys/class/infiniband/mrgid/ports/1/gids
TYPES=/sys/class/infiniband/mrgid/ports/1/gid_attrs/types

# mr_gid_index GID: index of GID in the table (fails if absent).
gid_index() {
	local f g
	for f in "$GIDS"/*; do
		# Builtin read, no fork per entry: the table has hundreds.
		g=$(<"$f") 2>/dev/null || continue
		[[ $g == "$1" ]] && { echo "${f##*/}"; return 0; }
	done
	return 1
}
gid_absent() { ! gid_index "$1" >/dev/null; }

# check_gid ADDR/PREFIX GID-AS-SYSFS-PRINTS-IT
check_gid() {
	local dad=()
	[[ $1 == *:* ]] && dad=(nodad) # no duplicate address detection delay
	ip addr add "$1" dev mrt0 "${dad[@]}"
	assert_wait "GID $2 for $1" 5 gid_index "$2"
	local idx
	idx=$(gid_index "$2")
	assert_eq "type of GID $idx" "RoCE v2" "$(cat "$TYPES/$idx")"
	ip addr del "$1" dev mrt0
	assert_wait "GID $2 removed after ip addr del" 5 gid_absent "$2"
}

ipv4() {
	mr_veth mrt0 mrt1
	mr_link_add mrgid mrt0
	check_gid 192.0.2.1/24 0000:0000:0000:0000:0000:ffff:c000:0201
}

ipv6() {
	mr_veth mrt0 mrt1
	mr_link_add mrgid mrt0
	check_gid 2001:db8::1/64 2001:0db8:0000:0000:0000:0000:0000:0001
}

ipv4_before_link() {
	mr_veth mrt0 mrt1
	ip addr add 198.51.100.7/24 dev mrt0
	mr_link_add mrgid mrt0
	assert_wait "GID of an address configured before the link" 5 \
		gid_index 0000:0000:0000:0000:0000:ffff:c633:6407
}

mr_run ipv4 ipv4
mr_run ipv6 ipv6
mr_run ipv4_before_link ipv4_before_link
mr_done
