#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 600
#
# The provider's own verbs tests on live devices
# (userspace/provider/tests/vm_verbs.sh):
#
#   objects     every verbs object, and the errno of every invalid call
#   pair        RC SEND/RECV, WRITE, READ, atomics, SRQ, UD, completion
#               events, the ibv_wr_* API and remote errors between two
#               hosts, data checked byte for byte
#
# (its ibverbs-utils pingpongs are verbs_apps' business).
exec "$(dirname "$0")/../../userspace/provider/tests/vm_verbs.sh" objects pair
