#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/in-rootfs.sh SUITE CMD [ARGS...]
#
# Runs CMD as root inside build/rootfs/SUITE (the root filesystem of the
# Debian release SUITE that scripts/rootfs.sh makes), with this source tree
# mounted at its own path and the current directory kept when it is inside
# the tree: builds against that release's compiler, kernel headers and
# libibverbs, e.g.
#
#   scripts/in-rootfs.sh sid make -C userspace/provider BUILD=$PWD/build/x
#   scripts/in-rootfs.sh trixie bash
#
# The environment is a clean one (PATH, HOME, LANG, TERM, MR_IN_ROOTFS=1).
# Exits with CMD's status.
set -euo pipefail

MR_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=platform.sh
. "$MR_TOP/scripts/platform.sh"

(($# >= 2)) || { echo "usage: $0 SUITE CMD [ARGS...]" >&2; exit 2; }
mr_in_rootfs "$@"
