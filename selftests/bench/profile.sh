#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# selftests/bench/profile.sh: where the CPU goes, per byte moved, for
# metaroce and TCP on the same veth pair in one boot (make bench-profile).
# Runs run.sh with MR_BENCH_PROFILE=1 (perf samples every CPU of the guest
# through each run's measured seconds), lossless, MR_BENCH_REPS rounds
# (default 2) of metaroce's ib_write_bw and ib_send_bw and TCP's iperf3
# (with GSO, and one MSS per packet), 12 s each, then profile_report.py:
# the CPU time per gigabyte sent, divided by where it was spent, against
# TCP's of the same round. Documentation/ is left as it is.
#
# Output: build/bench/profile/report.txt (and each run's flat profile,
# IDX.txt, IDX being the run's row in build/bench/runs.tsv). Exits as
# run.sh does.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)

export MR_BENCH_PROFILE=1 MR_BENCH_DOCS=0
export MR_BENCH_REPS=${MR_BENCH_REPS:-2}
# Longer runs than make bench's: perf takes seconds to start under TCG.
export MR_BENCH_DURATION=${MR_BENCH_DURATION:-12} MR_BENCH_MARGIN=${MR_BENCH_MARGIN:-3}
export MR_BENCH_LOSSES=${MR_BENCH_LOSSES:-0}
export MR_BENCH_TRANSPORTS=${MR_BENCH_TRANSPORTS:-metaroce tcp}

rc=0
"$HERE/run.sh" || rc=$?
if [[ -d $TOP/build/bench/profile ]]; then
	python3 "$HERE/profile_report.py" "$TOP/build/bench/runs.tsv" \
		"$TOP/build/bench/profile" >"$TOP/build/bench/profile/report.txt" ||
		rc=1
	cat "$TOP/build/bench/profile/report.txt"
fi
exit "$rc"
