#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 600
#
# Verbs misuse from userspace: mr_misuse (userspace/tools) talks to the
# device's /dev/infiniband/uverbsN with raw write() commands, so that
# every argument can be wrong, and checks the errno of each misuse; the
# kernel must stay quiet throughout (run_tests.sh fails the program on
# any warning or oops in the kernel log). One device on a veth end; its
# QPs connect to themselves through its own address. A subtest per group
# (see the top of mr_misuse.c):
#
#   commands    every write() command number, with the wrong sizes,
#               unwritable responses, unknown bits, lying extended headers
#   requests    the driver's requests and every size and count out of
#               range (CQ entries, queue depths, SGEs, inline data, work
#               request counts and sizes, opcodes, QP attributes, MRs)
#   handles     wrong types, destroyed, in use, never created; another
#               process's handles, keys, AH numbers, mmap offsets; a child
#               of fork() on the inherited file, before and after its
#               credentials change
#   mmap        ring mappings of the wrong size, offset, sharing, rights;
#               mprotect(PROT_EXEC), mremap(), use after destroy, a child
#               touching the parent's ring
#   rings       send-ring work requests the kernel must refuse, each
#               completing with LOC_QP_OP_ERR between good ones
#   scribble    MISUSE_SECONDS (default 10) of streams through the rings
#               while other threads scribble over them and modify, reset,
#               resize and destroy what the streams use
#   fork        fork() while threads are inside commands; a child's
#               write() on the inherited file is refused (EACCES)
#   reset       MISUSE_SECONDS of a UD QP without rings reset again and
#               again while it takes a flood of datagrams: once the reset
#               returned, its CQ holds none of its completions
#   kill        busy processes killed, or exiting, with commands in flight
#   nothing_left  afterwards the device has the objects it had before
#               (rdma resource show)
. "$(dirname "$0")/lib.sh"
mr_require_module

TOOL=$MR_TOP/build/userspace/tools/mr_misuse
DEV=mrmis_dev
IP=10.9.8.1
SECONDS_SCRIBBLE=${MISUSE_SECONDS:-10}

[[ -x $TOOL ]] || mr_skip_all "$TOOL is missing: run make userspace"

# counts: the device's objects as rdma resource counts them.
counts() {
	rdma resource show | awk -v d="$DEV:" '$2 == d { $1 = $2 = ""; print }'
}

setup() {
	mr_veth mrmis0 mrmis1
	ip addr add "$IP/24" dev mrmis0
	mr_link_add "$DEV" mrmis0
	mr_wait_dev "$DEV" "$IP" GIDX
	BEFORE=$(counts)
	mr_log "$DEV: GID index $GIDX; objects: $BEFORE"
}

group() {
	timeout -k 5 "$(mr_secs 300)" "$TOOL" "$1" "$DEV" "$GIDX" "${@:2}" ||
		mr_fail "mr_misuse $1 failed"
}

counts_back() { [[ $(counts) == "$BEFORE" ]]; }

nothing_left() {
	# A killed process's file is released once its last user goes.
	wait_for 20 counts_back || true
	assert_eq "objects of $DEV" "$BEFORE" "$(counts)"
}

mr_setup device setup
mr_run commands group commands
mr_run requests group requests
mr_run handles group handles
mr_run mmap group mmap
mr_run rings group rings
mr_run scribble group scribble "$SECONDS_SCRIBBLE"
mr_run fork group fork
mr_run reset group reset "$SECONDS_SCRIBBLE"
mr_run kill group kill
mr_run nothing_left nothing_left
mr_done
