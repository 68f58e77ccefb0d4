#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 1200
#
# Sixteen hosts on one shared fabric (mr_star: fifteen hosts and mrsr,
# each on its own link into one router namespace), a metaroce device on
# each: one MPI rank per host, and mr_coll's all-to-all and all-reduce
# among all sixteen, 8 B to 4 KiB, every element of every result checked,
# over the device (collectives.sh's "mpi" subtest): every device carried
# data segments and no error counter moved. The run checks correctness,
# its times mean little.
#
# Each rank thinks it has a host to itself, so Open MPI would let it
# busy-poll; sixteen busy-polling ranks on two emulated CPUs starve the
# kernel's softirq thread (ksoftirqd) that forwards and acknowledges the
# packets, and round trips grow to seconds. That used to kill every path
# of every connection but one and flood the VM with probes (about 200,000
# per device), and UCX's QPs failed with "transport retry counter
# exceeded" in about one run in three; a path now dies only while another
# gets through and probes back off (protocol section 7.9), and
# collectives.sh checks that no device sends more probes than data. The
# ranks yield when idle, as Open MPI has them do when it knows a host is
# oversubscribed (MR_COLL_YIELD=0 makes them spin: it passes as well).
export MR_COLL_HOSTS=16 MR_COLL_MAX=4096 MR_COLL_ITERS=3 MR_COLL_YIELD=1
MR_TEST_ONLY=mpi exec "$(dirname "$0")/collectives.sh"
