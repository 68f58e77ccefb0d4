#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 600
#
# multiplane.sh's spread and scaling over an 8-plane fabric: one
# connection's 8 paths take one plane each (the device asks the routing
# table which next hop each candidate port takes) and the planes carry
# within 15 % of each other; over 8 planes shaped to 15 Mbit/s each, one
# ib_write_bw QP reaches 7x or more of what it reaches over one.
MR_MULTIPLANE_PLANES=8 MR_TEST_ONLY="fabric spread scaling" MR_RESULT_PROG=planes8 \
	exec "$(dirname "$0")/multiplane.sh"
