#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 1200
#
# Sixteen hosts on one shared fabric (mr_star: fifteen hosts and mrsr,
# each on its own link into one router namespace), a metaroce device on
# each: one MPI rank per host, and mr_coll's all-to-all and all-reduce
# among all sixteen, 8 B to 4 KiB, every element of every result checked,
# over the device (collectives.sh's "mpi" subtest): every device carried
# data segments and no error counter moved. Sixteen ranks busy-poll two
# emulated CPUs: the run checks correctness, its times mean little.
export MR_COLL_HOSTS=16 MR_COLL_MAX=4096 MR_COLL_ITERS=3
MR_TEST_ONLY=mpi exec "$(dirname "$0")/collectives.sh"
