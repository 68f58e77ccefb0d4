#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Summarise the runs of selftests/bench/multiplane.sh.

Reads DIR/runs.tsv (one row per run of a test program), DIR/meta.env and
each run's results.txt: the "test=... sub=... key=value..." lines that the
kselftests write with mr_result (selftests/metaroce/lib.sh) when MR_RESULTS
is set. The figures are the tests' own; this script only gathers them over
the runs (median, min, max) and derives ratios and shares from them. Prints
one MULTIPLANE line per figure and writes:

  DOCS/bench/multiplane.tsv        one row per figure
  DOCS/bench/multiplane_*.png      the plots (gnuplot)
  DOCS/benchmarks.rst              the section between the
                                   multiplane-generated markers

    multiplane_report.py --dir build/bench/multiplane --docs DIR
"""

import argparse
import csv
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import (fmt, generated_section, med, read_meta,  # noqa: E402
                    rst_table, run_gnuplot)

BEGIN = ".. multiplane-generated-begin"
END = ".. multiplane-generated-end"


def floats(v):
    return [float(x) for x in v.split(",")] if v else []


def deltas(rec, a="bytes_from", b="bytes_to"):
    """Per-plane byte counts between the two comma-separated samples."""
    x, y = floats(rec.get(a, "")), floats(rec.get(b, ""))
    if not x or len(x) != len(y):
        return None
    return [q - p for p, q in zip(x, y)]


def shares(d):
    t = sum(d) if d else 0
    return [100.0 * v / t for v in d] if t else None


def least_most(d):
    return min(d) / max(d) if d and max(d) > 0 else None


def num(rec, key):
    try:
        return float(rec[key])
    except (KeyError, ValueError):
        return None


def ratio(a, b):
    return a / b if a is not None and b else None


def pct_of_rate(rec, key, planes):
    """MB/s in key as a percentage of `planes` shaped planes' rate."""
    v, r = num(rec, key), num(rec, "rate_bps")
    return 100.0 * v * 8e6 / (planes * r) if v is not None and r else None


def top_share(rec):
    s = shares(deltas(rec))
    return max(s) if s else None


def incast_load(rec):
    r = num(rec, "rate_bps")
    mb = floats(rec.get("mbps", ""))
    return sum(mb) * 8e6 / r if mb and r else None


def retx_pct(rec):
    return ratio(num(rec, "timeout_retx"), num(rec, "data_segments")) * 100 \
        if num(rec, "data_segments") else None


# (id, program, subtest, label, unit, function of the subtest's record,
# digits). The program is the kselftest's name as mr_result gives it
# (planes8.sh runs multiplane.sh's subtests as "planes8").
FIGURES = [
    ("spread4.least_most", "multiplane", "spread",
     "4 planes, mr_integrity: least / most bytes per plane", "ratio",
     lambda r: least_most(deltas(r)), 3),
    ("scaling4.one", "multiplane", "scaling",
     "ib_write_bw over 1 plane of 30 Mbit/s", "MB/s", lambda r: num(r, "mbps_one"), 3),
    ("scaling4.all", "multiplane", "scaling",
     "ib_write_bw over 4 planes of 30 Mbit/s", "MB/s", lambda r: num(r, "mbps_all"), 3),
    ("scaling4.ratio", "multiplane", "scaling",
     "4 planes / 1 plane", "", lambda r: ratio(num(r, "mbps_all"), num(r, "mbps_one")), 3),
    ("scaling4.all_pct", "multiplane", "scaling",
     "4 planes, of their shaped rate", "%", lambda r: pct_of_rate(r, "mbps_all", 4), 3),
    ("recovery.before", "multiplane", "recovery",
     "plane failure: rate before it (last 3 s)", "Mbit/s", lambda r: num(r, "before_mbit"), 3),
    ("recovery.avg_pct", "multiplane", "recovery",
     "plane failure: mean rate from 100 ms after it, of the 3 surviving planes' capacity",
     "%", lambda r: num(r, "avg_pct"), 3),
    ("recovery.min_window_pct", "multiplane", "recovery",
     "plane failure: lowest 500 ms window, of the surviving capacity", "%",
     lambda r: num(r, "min_window_pct"), 3),
    ("recovery.dip_end_ms", "multiplane", "recovery",
     "plane failure: end of the first dip under 70 %, after the failure", "ms",
     lambda r: num(r, "dip_end_ms"), 3),
    ("recovery.recovery_ms", "multiplane", "recovery",
     "plane failure: recovery time (every later 100 ms window up to 500 ms at 70 % or more)",
     "ms", lambda r: num(r, "recovery_ms"), 3),
    ("recovery.lowest_interval_pct", "multiplane", "recovery",
     "plane failure: lowest sampling interval, of the surviving capacity", "%",
     lambda r: num(r, "lowest_interval_pct"), 3),
    ("recovery.back_share_pct", "multiplane", "recovery",
     "plane failure: the plane's share of the bytes after it returned", "%",
     lambda r: num(r, "back_share_pct"), 3),
    ("recovery.paths_dead", "multiplane", "recovery",
     "plane failure: paths declared dead", "", lambda r: num(r, "paths_dead"), 3),
    ("recovery.timeout_retx", "multiplane", "recovery",
     "plane failure: timeout retransmissions", "", lambda r: num(r, "timeout_retx"), 3),
    ("plane_failure.paths_dead", "multiplane", "plane_failure",
     "mr_integrity, busiest plane failed: paths declared dead", "",
     lambda r: num(r, "paths_dead"), 3),
    ("congestion.plane0_pct", "multiplane", "congestion",
     "ECN bottleneck on plane 0: bytes sent into it, of a clear plane's", "%",
     lambda r: num(r, "plane0_pct_of_clear"), 3),
    ("congestion.plane0_loss", "multiplane", "congestion",
     "ECN bottleneck on plane 0: of those, lost there", "%",
     lambda r: num(r, "plane0_loss_pct"), 2),
    ("congestion.backlog", "multiplane", "congestion",
     "ECN bottleneck on plane 0: median queue", "bytes",
     lambda r: num(r, "backlog_median"), 3),
    ("congestion.ce", "multiplane", "congestion",
     "ECN bottleneck on plane 0: CE marks echoed to the sender", "",
     lambda r: num(r, "ce_echoed"), 3),
    ("rxe.mbps", "multiplane", "rxe_planes",
     "rxe, one QP over the same 4 planes", "MB/s", lambda r: num(r, "mbps"), 3),
    ("rxe.top_share", "multiplane", "rxe_planes",
     "rxe: the busiest plane's share of its bytes", "%", top_share, 3),
    ("rxe.ratio", "multiplane", "rxe_planes",
     "metaroce / rxe, one QP over 4 planes", "",
     lambda r: ratio(num(r, "mbps_metaroce"), num(r, "mbps")), 3),
    ("spread8.least_most", "planes8", "spread",
     "8 planes, mr_integrity: least / most bytes per plane", "ratio",
     lambda r: least_most(deltas(r)), 3),
    ("scaling8.one", "planes8", "scaling",
     "ib_write_bw over 1 plane of 15 Mbit/s", "MB/s", lambda r: num(r, "mbps_one"), 3),
    ("scaling8.all", "planes8", "scaling",
     "ib_write_bw over 8 planes of 15 Mbit/s", "MB/s", lambda r: num(r, "mbps_all"), 3),
    ("scaling8.ratio", "planes8", "scaling",
     "8 planes / 1 plane", "", lambda r: ratio(num(r, "mbps_all"), num(r, "mbps_one")), 3),
    ("scaling8.all_pct", "planes8", "scaling",
     "8 planes, of their shaped rate", "%", lambda r: pct_of_rate(r, "mbps_all", 8), 3),
    ("incast.jain", "incast", "fair",
     "incast, 4 senders: Jain's index while all send", "", lambda r: num(r, "jain"), 3),
    ("incast.jain_perftest", "incast", "fair",
     "incast: Jain's index of perftest's own figures", "",
     lambda r: num(r, "jain_perftest"), 3),
    ("incast.load", "incast", "incast",
     "incast: payload together, of the 40 Mbit/s bottleneck", "ratio", incast_load, 3),
    ("incast.retx_pct", "incast", "no_storm",
     "incast: timeout retransmissions, of the data segments", "%", retx_pct, 2),
    ("incast.backlog", "incast", "queue",
     "incast: median queue at the bottleneck", "bytes",
     lambda r: num(r, "backlog_median"), 3),
    ("incast.ce", "incast", "incast",
     "incast: CE marks echoed, all senders", "", lambda r: num(r, "ce_echoed"), 3),
]

GROUPS = [
    ("multiplane", "multiplane.sh: 4 planes"),
    ("planes8", "planes8.sh: 8 planes"),
    ("incast", "incast.sh"),
]


def parse_results(path):
    """results.txt -> {(test, sub): record}; a later line adds to (and may
    override) the keys of an earlier one of the same subtest."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            rec = {}
            for tok in line.split():
                k, sep, v = tok.partition("=")
                if sep:
                    rec[k] = v
            if "test" in rec and "sub" in rec:
                out.setdefault((rec["test"], rec["sub"]), {}).update(rec)
    return out


class Run:
    def __init__(self, row, base):
        self.rep, self.prog, self.status = int(row["rep"]), row["prog"], row["status"]
        self.dir = os.path.join(base, row["dir"])
        self.records = parse_results(os.path.join(self.dir, "results.txt"))


def load(base):
    with open(os.path.join(base, "runs.tsv"), newline="") as f:
        return [Run(r, base) for r in csv.DictReader(f, delimiter="\t")]


def gather(runs):
    """{figure id: [(rep, value), ...]} over every run that recorded it."""
    vals = {}
    for fid, prog, sub, _, _, fn, _ in FIGURES:
        for run in runs:
            rec = run.records.get((prog, sub))
            if rec is None:
                continue
            try:
                v = fn(rec)
            except (TypeError, ValueError, ZeroDivisionError):
                v = None
            if v is not None:
                vals.setdefault(fid, []).append((run.rep, v))
    return vals


def cell(v, digits):
    if v is not None and abs(v) >= 10 ** (digits + 1):
        return f"{v:.0f}"
    return "-" if v is None else fmt(v, digits)


def recovery_series(run, step=0.1):
    """The recovery run's samples as (seconds after the failure, total
    Mbit/s, per-plane Mbit/s...) every `step` seconds, and the failure's
    length; None when it recorded none."""
    rec = run.records.get(("multiplane", "recovery"))
    if not rec or "samples" not in rec or "on" not in rec or "back" not in rec:
        return None
    path = os.path.join(run.dir, rec["samples"])
    if not os.path.exists(path):
        return None
    rows = []
    with open(path) as f:
        for line in f:
            p = line.split()
            try:
                rows.append([float(x) for x in p])
            except ValueError:
                continue
    rows = [r for r in rows if len(r) == len(rows[0])] if rows else []
    if len(rows) < 3:
        return None
    on, back = float(rec["on"]), float(rec["back"])
    out, last = [], rows[0]
    nxt = rows[0][0] + step
    for r in rows[1:]:
        if r[0] < nxt:
            continue
        dt = r[0] - last[0]
        if dt > 0:
            planes = [(b - a) * 8 / dt / 1e6 for a, b in zip(last[1:], r[1:])]
            out.append([(last[0] + r[0]) / 2 - on, sum(planes)] + planes)
        last, nxt = r, r[0] + step
    return out, back - on, float(rec.get("rate_bps", 0) or 0), int(rec.get("planes", 4))


def pick_recovery_run(runs, vals):
    """The run whose mean rate during the failure is the median one."""
    rv = dict(vals.get("recovery.avg_pct", []))
    cand = [r for r in runs if r.prog == "multiplane" and r.rep in rv
            and recovery_series(r)]
    if not cand:
        return None
    cand.sort(key=lambda r: rv[r.rep])
    return cand[(len(cand) - 1) // 2]


def share_sets(runs):
    """(title, [(median, min, max) per plane]) for the shares plot."""
    sets = [
        ("metaroce, 4 planes (spread)", "multiplane", "spread", "bytes_from", "bytes_to"),
        ("metaroce, 8 planes (spread)", "planes8", "spread", "bytes_from", "bytes_to"),
        ("rxe, one QP, 4 planes", "multiplane", "rxe_planes", "bytes_from", "bytes_to"),
        ("metaroce, plane 0 an ECN bottleneck", "multiplane", "congestion", "in_from", "in_to"),
    ]
    out = []
    for title, prog, sub, a, b in sets:
        per = []
        for run in runs:
            rec = run.records.get((prog, sub))
            s = shares(deltas(rec, a, b)) if rec else None
            if s:
                per.append(s)
        if not per:
            continue
        n = min(len(s) for s in per)
        out.append((title, [(med([s[i] for s in per]), min(s[i] for s in per),
                             max(s[i] for s in per)) for i in range(n)], len(per)))
    return out


def make_plots(runs, vals, bench_dir, scratch):
    if not shutil.which("gnuplot"):
        print("multiplane_report.py: gnuplot not found, no plots", file=sys.stderr)
        return []
    pdir = os.path.join(scratch, "plot")
    os.makedirs(pdir, exist_ok=True)
    script, outs = ["set terminal pngcairo size 1000,520 font ',10' noenhanced"], []

    run = pick_recovery_run(runs, vals)
    if run:
        series, length, rate, n = recovery_series(run)
        dat = os.path.join(pdir, "recovery.dat")
        with open(dat, "w") as f:
            for r in series:
                f.write(" ".join(f"{x:.4f}" for x in r) + "\n")
        out = "multiplane_recovery.png"
        cap = (n - 1) * rate / 1e6
        lines = [f"'{dat}' using 1:2 with lines lw 2 lc rgb '#000000' title 'all planes'"]
        colors = ["#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377",
                  "#bbbbbb", "#994411"]
        for p in range(n):
            lines.append(f"'{dat}' using 1:{3 + p} with lines lw 1 lc rgb "
                         f"'{colors[p % len(colors)]}' title 'plane {p}'")
        script += [
            f"set output '{os.path.join(bench_dir, out)}'",
            f"set title 'Plane 1 blackholed for {length:.1f} s under one ib_write_bw QP, "
            f"{n} planes of {rate / 1e6:.0f} Mbit/s (rep {run.rep}; received by B, 100 ms bins)'",
            "set xlabel 'seconds after the failure'",
            "set ylabel 'Mbit/s'",
            "set yrange [0:*]",
            "set grid",
            "set key outside right",
            "unset arrow",
            "set arrow from 0, graph 0 to 0, graph 1 nohead lw 2 lc rgb '#cc0000'",
            f"set arrow from {length:.3f}, graph 0 to {length:.3f}, graph 1 nohead lw 2 "
            "lc rgb '#228833'",
            f"set arrow from graph 0, first {cap:.3f} to graph 1, first {cap:.3f} nohead dt 2 "
            "lc rgb '#555555'",
            "set label 1 'plane 1 fails' at 0.05, graph 0.96 left textcolor rgb '#cc0000'",
            f"set label 2 'returns' at {length + 0.05:.3f}, graph 0.96 left "
            "textcolor rgb '#228833'",
            f"set label 3 'surviving capacity' at graph 0.01, first {cap * 1.03:.3f} left",
            "plot " + ", ".join(lines),
            "unset label 1", "unset label 2", "unset label 3", "unset arrow",
            "unset xlabel", "set key default",
        ]
        outs.append(out)

    sets = share_sets(runs)
    if sets:
        out = "multiplane_shares.png"
        script += [f"set output '{os.path.join(bench_dir, out)}'",
                   "set multiplot layout 2,2 title 'Share of the bytes per plane "
                   "(median of the runs; bars: min-max)'",
                   "set style fill solid 0.8 border -1", "set boxwidth 0.7",
                   "set yrange [0:105]", "set ylabel '%'", "set xlabel 'plane'",
                   "set grid ytics", "unset key"]
        for i, (title, per, count) in enumerate(sets):
            dat = os.path.join(pdir, f"shares{i}.dat")
            with open(dat, "w") as f:
                for p, (m, lo, hi) in enumerate(per):
                    f.write(f"{p} {m:.3f} {lo:.3f} {hi:.3f}\n")
            script += [f"set title '{title} ({count} runs)'",
                       f"set xrange [-0.6:{len(per) - 0.4}]", "set xtics 1",
                       f"plot '{dat}' using 1:2:3:4:(0.35) with boxerrorbars lc rgb '#4477aa', "
                       f"{100.0 / len(per):.3f} with lines dt 2 lc rgb '#000000'"]
        script += ["unset multiplot", "set autoscale x", "unset xrange"]
        outs.append(out)

    bars = [("1 of 4 planes", "scaling4.one"), ("4 planes", "scaling4.all"),
            ("rxe, 4 planes", "rxe.mbps"), ("1 of 8 planes", "scaling8.one"),
            ("8 planes", "scaling8.all")]
    rows = [(lbl, [v for _, v in vals[f]]) for lbl, f in bars if vals.get(f)]
    if rows:
        dat = os.path.join(pdir, "scaling.dat")
        with open(dat, "w") as f:
            for i, (lbl, v) in enumerate(rows):
                f.write(f'{i} "{lbl}" {med(v):.4f} {min(v):.4f} {max(v):.4f}\n')
        out = "multiplane_scaling.png"
        script += [f"set output '{os.path.join(bench_dir, out)}'",
                   "set title 'One ib_write_bw QP over shaped planes (120 Mbit/s in all; "
                   "median, bars: min-max)'",
                   "set ylabel 'MB/s'", "unset xlabel", "set yrange [0:*]",
                   "set style fill solid 0.8 border -1", "set boxwidth 0.6",
                   f"set xrange [-0.6:{len(rows) - 0.4}]", "unset key",
                   f"set yrange [0:{max(16.5, 1.1 * max(max(v) for _, v in rows)):.2f}]",
                   "set arrow 9 from graph 0, first 15 to graph 1, first 15 nohead dt 2",
                   "set label 9 '120 Mbit/s' at graph 0.01, first 15.3 left",
                   f"plot '{dat}' using 1:3:4:5:(0.3):xtic(2) with boxerrorbars "
                   "lc rgb '#4477aa'"]
        outs.append(out)

    gp = os.path.join(pdir, "multiplane.gp")
    with open(gp, "w") as f:
        f.write("\n".join(script) + "\n")
    run_gnuplot(gp, "multiplane_report.py")
    return outs


def write_rst(docs, top, meta, runs, vals, plots):
    path, head, tail = generated_section(docs, top, BEGIN, END,
                                         "multiplane_report.py")
    m = meta.get
    failed = [r for r in runs if r.status != "ok"]
    out = [BEGIN + " (selftests/bench/multiplane_report.py writes everything up to "
           "the end marker)", "",
           f"Measured {m('date')} by ``selftests/bench/multiplane.sh`` (part of "
           f"``make bench``; runtime {m('runtime_s')} s, {m('runs')} test program runs, "
           f"{m('failed')} failed): kernel {m('kernel')}, {m('cpus')} vCPUs, "
           f"{m('mem_mib')} MiB; metaroce.ko {m('metaroce')} (tree {m('tree')}); "
           f"{m('reps')} runs of each program (multiplane.sh: {m('subtests')}).", ""]
    if failed:
        out += ["Runs that failed: " + ", ".join(f"{r.prog} (rep {r.rep})" for r in failed)
                + "; their figures are included.", ""]
    out += ["Median, min and max over the runs (``Runs``: how many recorded the figure):", ""]
    rows = []
    for prog, title in GROUPS:
        first = True
        for fid, fprog, _, label, unit, _, digits in FIGURES:
            if fprog != prog or fid not in vals:
                continue
            if first:
                rows.append([f"*{title}*", "", "", ""])
                first = False
            v = [x for _, x in vals[fid]]
            rows.append([label + (f" ({unit})" if unit else ""), cell(med(v), digits),
                         f"{cell(min(v), digits)} - {cell(max(v), digits)}", str(len(v))])
    out += rst_table(["Figure", "Median", "Range", "Runs"], rows)
    out.append("")
    for p in plots:
        out += [f".. image:: bench/{p}", f"   :alt: {p}", ""]
    out += ["Data: ``bench/multiplane.tsv`` (one row per figure, with every run's "
            "value).", "", ""]
    with open(path, "w") as f:
        f.write(head + "\n".join(out) + END + tail)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True, help="multiplane.sh's output directory")
    ap.add_argument("--docs", required=True)
    args = ap.parse_args()
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    runs = load(args.dir)
    if not runs:
        sys.exit("multiplane_report.py: no runs in " + args.dir)
    meta = read_meta(os.path.join(args.dir, "meta.env"))
    vals = gather(runs)

    bench_dir = os.path.join(args.docs, "bench")
    os.makedirs(bench_dir, exist_ok=True)
    with open(os.path.join(bench_dir, "multiplane.tsv"), "w") as f:
        f.write("figure\tprogram\tsubtest\tunit\tmedian\tmin\tmax\truns\tvalues\tlabel\n")
        for fid, prog, sub, label, unit, _, _ in FIGURES:
            if fid not in vals:
                continue
            v = [x for _, x in vals[fid]]
            line = (f"MULTIPLANE figure={fid} median={med(v):.4g} min={min(v):.4g} "
                    f"max={max(v):.4g} runs={len(v)}")
            print(line)
            f.write("\t".join([fid, prog, sub, unit or "-", f"{med(v):.4g}",
                               f"{min(v):.4g}", f"{max(v):.4g}", str(len(v)),
                               ",".join(f"{x:.4g}" for _, x in sorted(vals[fid])),
                               label]) + "\n")
    plots = make_plots(runs, vals, bench_dir, args.dir)
    write_rst(args.docs, top, meta, runs, vals, plots)
    return 0


if __name__ == "__main__":
    sys.exit(main())
