#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# mpirun's remote shell for hosts that are network namespaces: called as
# "mpi_agent.sh HOST COMMAND...", runs COMMAND in the namespace that owns
# the IPv4 address HOST, with a hostname of its own (the namespace's name:
# Open MPI tells nodes apart by hostname).
host=$1
shift
for ns in $(ip netns list | awk '{ print $1 }'); do
	if ip -n "$ns" -4 -o addr show | grep -q " inet $host/"; then
		exec ip netns exec "$ns" unshare --uts sh -c "hostname $ns; $*"
	fi
done
echo "mpi_agent: no network namespace has $host" >&2
exit 1
