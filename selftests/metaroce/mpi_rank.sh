#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# mpi_rank.sh COMMAND...: runs an MPI rank with UCX pointed at the RDMA
# device of its own network namespace (the one whose netdev is here), at
# that device's RoCE v2 GID for the netdev's IPv4 address, and at the
# netdev (for UCX's tcp transport). In shared RDMA namespace mode every
# namespace sees every device: without this, UCX could pick another
# host's.
#
# With MR_RANK_DEVS set (device names, one per rank, for ranks that share
# a namespace: collectives.sh's rxe hosts), rank N uses the Nth device.
only=
if [[ -n ${MR_RANK_DEVS:-} ]]; then
	read -ra devs <<<"$MR_RANK_DEVS"
	only=${devs[${OMPI_COMM_WORLD_RANK:?not started by mpirun}]}
fi
for d in /sys/class/infiniband/*; do
	[[ -z $only || ${d##*/} == "$only" ]] || continue
	nd=$(cat "$d/ports/1/gid_attrs/ndevs/0" 2>/dev/null) || continue
	[[ -e /sys/class/net/$nd ]] || continue
	ip=$(ip -4 -o addr show dev "$nd" | awk '{ print $4; exit }')
	ip=${ip%/*}
	[[ -n $ip ]] || continue
	# shellcheck disable=SC2086 # the dotted quad splits into 4 numbers
	hex=$(printf '%02x%02x:%02x%02x' ${ip//./ })
	for g in "$d"/ports/1/gids/*; do
		if [[ $(<"$g") == "0000:0000:0000:0000:0000:ffff:$hex" ]]; then
			# The netdev too, for UCX's tcp transport.
			export UCX_NET_DEVICES=${d##*/}:1,$nd
			export UCX_IB_GID_INDEX=${g##*/}
		fi
	done
done
exec "$@"
