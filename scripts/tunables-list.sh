#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/tunables-list.sh [TUNABLES_H]: the transport tunables, as
# drivers/metaroce/tunables.h lists them, one per line: "NAME KIND DEFAULT".
# What the documentation checks (check-man.sh, check-docs.sh) and the
# kselftests (tunables.sh) read, so that none of them keeps a list of its
# own.
set -euo pipefail

h=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/drivers/metaroce/tunables.h}
# MR_TUNABLE(name, default, KIND, ...): one line each.
sed -nE 's/^MR_TUNABLE\(([a-z0-9_]+), ([0-9]+), ([A-Z]+),.*/\1 \3 \2/p' "$h"
