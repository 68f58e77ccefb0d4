#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# selftests/bench/compare.sh OLD_KO [ROUNDS]: is today's metaroce.ko slower
# than another build of it? In one boot of the test VM (make bench-compare
# builds OLD_KO from another commit and boots it): ROUNDS rounds (default
# 3), each running run.sh once with the installed module (metaroce, rxe and
# TCP: their ratios tell whether the guest's speed drifted) and once with
# OLD_KO in its place (metaroce only), lossless and at 1 % loss
# (MR_BENCH_LOSSES), 64 KiB ib_write_bw and ib_send_bw. Prints one line per
# figure: the new module's median over the rounds, the old one's, and the
# median and spread of the per-round ratios new/old. The userspace
# provider is today's for both: OLD_KO must speak the same uverbs ABI.
# Runs, logs: build/bench-compare/. Exits 1 if a run failed.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
OLD_KO=${1:?usage: compare.sh OLD_KO [ROUNDS]}
ROUNDS=${2:-3}
OUT=$TOP/build/bench-compare
export MR_BENCH_REPS=1 MR_BENCH_DOCS=0
export MR_BENCH_LOSSES=${MR_BENCH_LOSSES:-0 1}

[[ -f $OLD_KO ]] || { echo "compare: no $OLD_KO" >&2; exit 2; }
rm -rf "$OUT"
mkdir -p "$OUT"
fails=0

unload() {
	local i
	for ((i = 0; i < 50; i++)); do
		lsmod | grep -qw '^metaroce' || return 0
		rmmod metaroce 2>/dev/null || sleep 0.2
	done
	echo "compare: metaroce does not unload" >&2
	exit 1
}

for ((r = 1; r <= ROUNDS; r++)); do
	unload
	modprobe metaroce
	echo "compare: round $r, new module $(modinfo -F srcversion metaroce)"
	MR_BENCH_TRANSPORTS="metaroce rxe tcp" "$HERE/run.sh" >"$OUT/new-$r.log" 2>&1 ||
		fails=$((fails + 1))
	cp "$TOP/build/bench/runs.tsv" "$OUT/new-$r.tsv"
	unload
	insmod "$OLD_KO"
	echo "compare: round $r, old module $(cat /sys/module/metaroce/srcversion)"
	MR_BENCH_TRANSPORTS="metaroce" "$HERE/run.sh" >"$OUT/old-$r.log" 2>&1 ||
		fails=$((fails + 1))
	cp "$TOP/build/bench/runs.tsv" "$OUT/old-$r.tsv"
done
unload

python3 - "$OUT" "$ROUNDS" <<'PY'
import csv, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def load(path):
    with open(path) as f:
        return list(csv.DictReader(f, delimiter='\t'))
fig = {}
for r in range(1, rounds + 1):
    for side in ('new', 'old'):
        for row in load(f'{out}/{side}-{r}.tsv'):
            if row['status'] != 'ok':
                continue
            t = row['transport'] if side == 'new' or row['transport'] != 'metaroce' else 'metaroce'
            key = (t if side == 'new' else 'metaroce-old', row['test'],
                   row['variant'], row['loss_pct'])
            fig.setdefault(key, {})[r] = float(row['gbps'])
def med(v):
    return statistics.median(v) if v else float('nan')
print('COMPARE figure new_gbps old_gbps ratio_median ratio_min ratio_max rounds')
for (t, test, var, loss), runs in sorted(fig.items()):
    if t != 'metaroce':
        continue
    old = fig.get(('metaroce-old', test, var, loss), {})
    ratios = [runs[r] / old[r] for r in runs if r in old and old[r] > 0]
    print(f'COMPARE {test} loss={loss}% {med(list(runs.values())):.3f} '
          f'{med(list(old.values())):.3f} {med(ratios):.3f} '
          f'{min(ratios, default=float("nan")):.3f} '
          f'{max(ratios, default=float("nan")):.3f} {len(ratios)}')
for (t, test, var, loss), runs in sorted(fig.items()):
    if t in ('rxe', 'tcp'):
        print(f'CONTROL {t} {test} {var or "-"} loss={loss}% '
              + ' '.join(f'{runs.get(r, float("nan")):.3f}'
                         for r in range(1, rounds + 1)))
PY
if ((fails)); then
	echo "compare: FAIL: $fails run.sh invocations failed (logs in $OUT)"
	exit 1
fi
