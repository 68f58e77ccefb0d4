#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 600
#
# The provider's own verbs tests on live devices
# (userspace/provider/tests/vm_verbs.sh):
#
#   matching    libibverbs hands metaroce devices to libmetaroce by sysfs,
#               whatever their names, renames included (abi_version,
#               ibv_devices, ibv_devinfo's GID, mr_verbs_test's device,
#               port and PD tests on each); deleted, they are gone
#   rxe_beside  an rxe device beside one goes to rxe's provider, the
#               metaroce one stays with libmetaroce
#   objects     every verbs object, and the errno of every invalid call
#   pair        RC SEND/RECV, WRITE, READ, atomics, SRQ, UD, completion
#               events, the ibv_wr_* API and remote errors between two
#               hosts, data checked byte for byte; fence after a READ,
#               max_rd_atomic 1, unsignaled work requests, solicited-only
#               events, RNR (retries exhausted, and waited out), MRs
#               without one remote right each, the last WQE event of a
#               QP on an SRQ in error, and a CQ overflow that fails its QP
#   poll_syscalls  polling a CQ takes no system call (the CQ ring): the
#               uverbs commands of ibv_rc_pingpong's client, counted with
#               strace, are its posts
#   stream_syscalls  and while ib_write_bw streams, posting takes none
#               either (the send ring): under 0.15 per work request; the
#               ping-pong's doorbells send in the system call, the
#               stream's do not (doorbells_inline)
#   recv_syscalls  nor, while ib_send_bw streams, does its server's
#               posting of receives (the receive ring)
#   ring_fuzz   a process that scribbles on its own rings harms nobody
#   fork        ibv_fork_init() and fork() with RDMA outstanding: the child
#               has none of its parent's rings, its writes to its copy of
#               registered memory stay its own, every byte the peer sees
#               is the parent's
#   exit        a process killed or _exit()ing with QPs streaming: the
#               peer's QP fails in bounded time (retry exceeded, then
#               flushes), the device's resource counts come back, and a
#               new process streams correctly
#
# (its other ibverbs-utils pingpongs are verbs_apps' business).
# MR_TEST_ONLY, when set, names the subtests to run instead.
subtests=(matching rxe_beside objects pair poll_syscalls stream_syscalls
	recv_syscalls ring_fuzz fork exit)
[[ -z ${MR_TEST_ONLY:-} ]] || read -ra subtests <<<"$MR_TEST_ONLY"
exec "$(dirname "$0")/../../userspace/provider/tests/vm_verbs.sh" "${subtests[@]}"
