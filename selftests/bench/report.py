#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Summarise the runs of selftests/bench/run.sh.

Reads runs.tsv (one row per run) and meta.env (how the runs were made),
prints one BENCH line per figure and one RATIO line per ratio, and writes:

  DOCS/bench/bench.tsv         one row per figure (median, min, max, ...)
  DOCS/bench/runs.tsv          the runs themselves
  DOCS/bench/bench-lines.txt   the BENCH and RATIO lines
  DOCS/bench/*.png             the plots (gnuplot)
  DOCS/benchmarks.rst          the generated section between the markers

DOCS is Documentation/ or a scratch directory (run.sh passes build/bench/docs
when a run failed; benchmarks.rst is then copied from Documentation/ first).

    report.py --runs RUNS.tsv --meta META.env --docs DIR [--out SCRATCH]
"""

import argparse
import csv
import math
import os
import shutil
import statistics
import subprocess
import sys

BEGIN = ".. bench-generated-begin"
END = ".. bench-generated-end"
# metaroce's goodput at a loss rate / its lossless goodput, by loss rate.
TARGET_RETENTION = {1.0: 0.90, 10.0: 0.50}


def retention_target(loss):
    return TARGET_RETENTION.get(float(loss))

TEST_ORDER = ["ib_write_bw", "ib_send_bw", "iperf3"]
TRANSPORT_ORDER = ["metaroce", "rxe", "tcp"]
VARIANT_ORDER = ["", "gso", "mss"]


def num(v):
    """A float from a TSV cell, None for '-' or empty."""
    if v in ("", "-", None):
        return None
    try:
        return float(v)
    except ValueError:
        return None


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def paired(a, b):
    """The ratio of figure a to figure b, round by round: every round runs
    each figure once, a few minutes apart at most, while the emulated CPU's
    speed drifts more than that between rounds. Returns (median, min, max)
    over the rounds in which both runs succeeded, or None."""
    if a is None or b is None:
        return None
    rb = {r["rep"]: num(r["gbps"]) for r in b.ok}
    vals = []
    for r in a.ok:
        x, y = num(r["gbps"]), rb.get(r["rep"])
        if x is not None and y:
            vals.append(x / y)
    if not vals:
        return None
    return statistics.median(vals), min(vals), max(vals)


def fmt(v, digits=3):
    """Significant-digit formatting for Gb/s and ratios."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "nan"
    if v == 0:
        return "0"
    return f"{v:.{digits}g}" if abs(v) < 1 else f"{v:.{digits + 1}g}"


def fmt_int(v):
    return "-" if v is None else str(int(round(v)))


class Figure:
    """All runs of one (test, transport, variant, size, loss)."""

    def __init__(self, test, transport, variant, size, loss):
        self.test, self.transport, self.variant = test, transport, variant
        self.size, self.loss = size, loss
        self.runs = []

    @property
    def ok(self):
        return [r for r in self.runs if r["status"] == "ok"]

    @property
    def failed(self):
        return len(self.runs) - len(self.ok)

    def vals(self, col):
        return [num(r[col]) for r in self.ok]

    @property
    def gbps(self):
        return med(self.vals("gbps"))

    @property
    def gmin(self):
        v = [x for x in self.vals("gbps") if x is not None]
        return min(v) if v else None

    @property
    def gmax(self):
        v = [x for x in self.vals("gbps") if x is not None]
        return max(v) if v else None

    def wire_pkt_bytes(self):
        b = sum(x for x in self.vals("wire_tx_bytes") if x is not None)
        p = sum(x for x in self.vals("wire_tx_pkts") if x is not None)
        return b / p if p else None

    def drop_pct(self):
        """netem's drops per packet offered to it. Its own "sent" counts
        GSO segments, while it drops whole skbs: veth's tx_packets (skbs)
        is the right denominator."""
        s = sum(x for x in self.vals("wire_tx_pkts") if x is not None)
        d = sum(x for x in self.vals("netem_drops") if x is not None)
        return 100.0 * d / (s + d) if s + d else None

    def bench_line(self):
        g = self.gbps
        parts = [
            "BENCH",
            f"test={self.test}",
            f"transport={self.transport}",
            f"size={self.size}",
            f"loss_pct={self.loss}",
            f"gbps={'nan' if g is None else f'{g:.4f}'}",
        ]
        if self.variant:
            parts.append(f"variant={self.variant}")
        parts += [
            f"min={'nan' if self.gmin is None else f'{self.gmin:.4f}'}",
            f"max={'nan' if self.gmax is None else f'{self.gmax:.4f}'}",
            f"runs={len(self.runs)}",
            f"failed={self.failed}",
        ]
        w = self.wire_pkt_bytes()
        if w is not None:
            parts.append(f"wire_pkt_bytes={w:.0f}")
        d = self.drop_pct()
        if d is not None:
            parts.append(f"netem_drop_pct={d:.2f}")
        r = med(self.vals("retx"))
        if r is not None:
            parts.append(f"retx={r:.0f}")
        if self.failed:
            parts.append("status=fail")
        return " ".join(parts)

    @property
    def label(self):
        name = f"{self.transport} {self.test}"
        return f"{name} ({self.variant})" if self.variant else name


def order_key(key):
    test, transport, variant = key

    def idx(lst, v):
        return lst.index(v) if v in lst else len(lst)

    return (idx(TEST_ORDER, test), idx(TRANSPORT_ORDER, transport),
            idx(VARIANT_ORDER, variant), test, transport, variant)


def load(runs_path):
    with open(runs_path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    figs = {}
    for r in rows:
        variant = "" if r["variant"] in ("-", "") else r["variant"]
        loss = r["loss_pct"]
        k = (r["test"], r["transport"], variant, r["size"], loss)
        if k not in figs:
            figs[k] = Figure(r["test"], r["transport"], variant, r["size"], loss)
        figs[k].runs.append(r)
    return rows, figs


def read_meta(path):
    meta = {}
    with open(path) as f:
        for line in f:
            k, sep, v = line.rstrip("\n").partition("=")
            if sep:
                meta[k] = v
    return meta


def rst_table(header, rows):
    """A reStructuredText simple table."""
    cols = len(header)
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(cols)]
    rule = "  ".join("=" * w for w in widths)

    def line(r):
        return "  ".join(str(r[i]).ljust(widths[i]) for i in range(cols)).rstrip()

    out = [rule, line(header), rule]
    out += [line(r) for r in rows]
    out.append(rule)
    return out


def run_gnuplot(gp, who):
    """Runs gnuplot on script @gp; exits with its errors, named @who."""
    res = subprocess.run(["gnuplot", gp], capture_output=True, text=True)
    if res.returncode:
        sys.exit(f"{who}: gnuplot failed:\n" + res.stderr)


def generated_section(docs, top, begin, end, who):
    """Path of benchmarks.rst under @docs (a copy of the repository's if it is
    not there yet), and its text before @begin and after @end."""
    path = os.path.join(docs, "benchmarks.rst")
    if not os.path.exists(path):
        shutil.copyfile(os.path.join(top, "Documentation", "benchmarks.rst"), path)
    with open(path) as f:
        text = f.read()
    if begin not in text or end not in text:
        sys.exit(f"{who}: {path} lacks the '{begin}' / '{end}' markers")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return path, head, tail


def loss_label(loss):
    return f"{loss} % loss"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--docs", required=True)
    ap.add_argument("--out", default=None, help="scratch directory for plot data")
    args = ap.parse_args()

    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    rows, figs = load(args.runs)
    meta = read_meta(args.meta)
    if not figs:
        sys.exit("report.py: no runs in " + args.runs)

    losses = sorted({k[4] for k in figs}, key=float)
    base = losses[0]
    lossy = [lo for lo in losses if lo != base]
    keys = sorted({k[:3] for k in figs}, key=order_key)
    size = rows[0]["size"]

    def fig(key, loss):
        return figs.get(key + (size, loss))

    # --- BENCH and RATIO lines -------------------------------------------
    lines = []
    for key in keys:
        for loss in losses:
            f = fig(key, loss)
            if f:
                lines.append(f.bench_line())

    ratios = []  # (name, test, loss, (median, min, max) or None, target)

    for key in keys:
        test, transport, variant = key
        for loss in lossy:
            v = paired(fig(key, loss), fig(key, base))
            name = f"{transport}_loss_retention" + (f"_{variant}" if variant else "")
            ratios.append((name, test, loss, v,
                           retention_target(loss) if transport == "metaroce" else None))
    for test in TEST_ORDER:
        for other, oname in (("rxe", "metaroce_vs_rxe"),):
            for loss in losses:
                v = paired(fig((test, "metaroce", ""), loss), fig((test, other, ""), loss))
                if fig((test, "metaroce", ""), loss) and fig((test, other, ""), loss):
                    ratios.append((oname, test, loss, v, None))
        for loss in losses:
            m = fig((test, "metaroce", ""), loss)
            t = fig(("iperf3", "tcp", "mss"), loss)
            if m and t:
                ratios.append(("metaroce_vs_tcp_mss", test, loss, paired(m, t), None))

    for name, test, loss, pr, target in ratios:
        v = pr[0] if pr else None
        s = f"RATIO name={name} test={test} loss_pct={loss} value={'nan' if v is None else f'{v:.3f}'}"
        if pr:
            s += f" min={pr[1]:.3f} max={pr[2]:.3f}"
        if target is not None:
            verdict = "unknown" if v is None else ("met" if v >= target else "missed")
            s += f" target={target:.2f} verdict={verdict}"
        lines.append(s)
    for s in lines:
        print(s)

    # --- files -------------------------------------------------------------
    bench_dir = os.path.join(args.docs, "bench")
    os.makedirs(bench_dir, exist_ok=True)
    with open(os.path.join(bench_dir, "bench-lines.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    shutil.copyfile(args.runs, os.path.join(bench_dir, "runs.tsv"))

    summary_cols = ["test", "transport", "variant", "size", "loss_pct", "gbps_median",
                    "gbps_min", "gbps_max", "runs", "failed", "wire_pkt_bytes",
                    "netem_drop_pct", "retx_median", "rto_median", "timeouts_median",
                    "srtt_us_median"]
    with open(os.path.join(bench_dir, "bench.tsv"), "w") as f:
        f.write("\t".join(summary_cols) + "\n")
        for key in keys:
            for loss in losses:
                fg = fig(key, loss)
                if not fg:
                    continue

                def g(v, spec=".4f"):
                    return "-" if v is None else format(v, spec)

                f.write("\t".join([
                    fg.test, fg.transport, fg.variant or "-", fg.size, fg.loss,
                    g(fg.gbps), g(fg.gmin), g(fg.gmax), str(len(fg.runs)),
                    str(fg.failed), g(fg.wire_pkt_bytes(), ".0f"), g(fg.drop_pct(), ".2f"),
                    g(med(fg.vals("retx")), ".0f"), g(med(fg.vals("rto")), ".0f"),
                    g(med(fg.vals("timeouts")), ".0f"), g(med(fg.vals("srtt_us")), ".0f"),
                ]) + "\n")

    plots = make_plots(keys, losses, base, lossy, fig, args.out or bench_dir, bench_dir)
    write_rst(args.docs, top, meta, keys, losses, lossy, fig, ratios, plots)
    return 0


def make_plots(keys, losses, base, lossy, fig, scratch, bench_dir):
    """Gnuplot PNGs; returns their file names (relative to bench_dir)."""
    if not shutil.which("gnuplot"):
        print("report.py: gnuplot not found, no plots", file=sys.stderr)
        return []
    pdir = os.path.join(scratch, "plot")
    os.makedirs(pdir, exist_ok=True)
    gb = os.path.join(pdir, "gbps.dat")
    with open(gb, "w") as f:
        for key in keys:
            cells = []
            for loss in losses:
                fg = fig(key, loss)
                vals = (fg.gbps, fg.gmin, fg.gmax) if fg and fg.gbps is not None else (None,) * 3
                cells += ["NaN" if v is None else f"{v:.5f}" for v in vals]
            label = fig(key, base).label if fig(key, base) else " ".join(key)
            f.write('"%s" %s\n' % (label.replace(" (", "\\n("), " ".join(cells)))
    rt = os.path.join(pdir, "retention.dat")
    with open(rt, "w") as f:
        for key in keys:
            b = fig(key, base)
            cells = []
            for loss in lossy:
                pr = paired(fig(key, loss), b)
                v = pr[0] if pr else None
                cells.append("NaN" if v is None else f"{v:.4f}")
            label = b.label if b else " ".join(key)
            f.write('"%s" %s\n' % (label.replace(" (", "\\n("), " ".join(cells)))

    # Figures with no successful run at some loss: say so where the bar would be.
    labels = []
    for i, key in enumerate(keys):
        for j, lo in enumerate(losses):
            if fig(key, lo) and fig(key, lo).gbps is None:
                x = i + (j - (len(losses) - 1) / 2) / (len(losses) + 1)
                labels.append(f"set label 'failed' at {x:.3f}, graph 0.03 left rotate by 90 "
                              "textcolor rgb '#cc0000'")
    labels = "\n".join(labels)
    colors = ["#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee"]
    out1 = "bench_gbps.png"
    plot1 = ", ".join(
        f"'{gb}' using {2 + 3 * i}:{3 + 3 * i}:{4 + 3 * i}:xtic(1) "
        f"title '{loss_label(lo)}' lc rgb '{colors[i % len(colors)]}'"
        for i, lo in enumerate(losses))
    script = f"""
set terminal pngcairo size 1000,520 font ',10'
set output '{os.path.join(bench_dir, out1)}'
set title 'Goodput, 64 KiB messages, veth MTU 1500 (median; bars: min-max)'
set ylabel 'Gb/s'
set yrange [0:*]
set grid ytics
set key top right
set style data histogram
set style histogram errorbars gap 1 lw 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics noenhanced font ',9'
set bmargin 4
{labels}
plot {plot1}
"""
    outs = [out1]
    if lossy:
        out2 = "bench_loss_retention.png"
        plot2 = ", ".join(
            f"'{rt}' using {2 + i}:xtic(1) title '{loss_label(lo)} / {loss_label(base)}' "
            f"lc rgb '{colors[(i + 1) % len(colors)]}'"
            for i, lo in enumerate(lossy))
        script += f"""
set output '{os.path.join(bench_dir, out2)}'
set title 'Goodput kept under loss (median of per-round ratios; dashed: metaroce target at 1 % loss)'
set ylabel 'ratio'
set yrange [0:1.2]
set style histogram clustered gap 1
unset arrow
set arrow from graph 0, first {TARGET_RETENTION[1.0]} to graph 1, first {TARGET_RETENTION[1.0]} nohead dt 2 lw 2 lc rgb '#000000'
plot {plot2}
"""
        outs.append(out2)
    gp = os.path.join(pdir, "bench.gp")
    with open(gp, "w") as f:
        f.write(script)
    run_gnuplot(gp, "report.py")
    return outs


def write_rst(docs, top, meta, keys, losses, lossy, fig, ratios, plots):
    path, head, tail = generated_section(docs, top, BEGIN, END, "report.py")

    m = meta.get
    window = int(m("duration_s", "0")) - 2 * int(m("margin_s", "0"))
    direction = ("the sender's veth end only (data packets; ACKs and responses are not dropped)"
                 if m("loss_dir") == "data" else "both veth ends (data and ACKs)")
    out = [BEGIN + " (selftests/bench/report.py writes everything up to the end marker)", ""]
    out += [
        "Latest results",
        "==============",
        "",
        f"Measured {m('date')} by ``make bench`` (runtime {m('runtime_s')} s, "
        f"{m('runs')} runs, {m('failed')} failed).",
        "",
        f"- Kernel {m('kernel')}; {m('virt')}: {m('cpus')} vCPUs, {m('mem_mib')} MiB, "
        f"CPU model \"{m('cpu_model')}\".",
        f"- Guest copy speed (64 KiB reads from /dev/zero, MB/s, one per round; it falls "
        f"when other load on the host takes CPU from the VM): {m('copy_mbps')}.",
        f"- metaroce.ko {m('metaroce')} (tree {m('tree')}); perftest {m('perftest')}; "
        f"iperf3 {m('iperf3')}.",
        f"- Veth defaults ({m('veth_defaults')}) for every run but TCP's \"mss\" runs.",
        f"- Veth MTU {m('mtu')}, messages of {m('size')} bytes; {m('reps')} runs per figure, "
        f"each {m('duration_s')} s of which the middle {window} s are measured; netem loss on "
        f"{direction}.",
        "",
        "Goodput in Gb/s, median (min - max) of the runs; a failed run is counted as a failure, "
        "never as a zero.",
        "",
    ]
    header = ["Transport", "Test"] + [loss_label(lo) for lo in losses] + \
        [f"{lo} % / {losses[0]} %" for lo in lossy]
    rows = []
    for key in keys:
        test, transport, variant = key
        cells = [transport + (f" ({variant})" if variant else ""), test]
        for loss in losses:
            f = fig(key, loss)
            if not f or f.gbps is None:
                cells.append("FAILED" if f else "-")
                continue
            c = f"{fmt(f.gbps)} ({fmt(f.gmin)} - {fmt(f.gmax)})"
            if f.failed:
                c += f" [{f.failed} failed]"
            cells.append(c)
        for loss in lossy:
            pr = paired(fig(key, loss), fig(key, losses[0]))
            cells.append(fmt(pr[0], 2) if pr else "-")
        rows.append(cells)
    out += rst_table(header, rows)
    out += ["", "Ratios: each round's own ratio of the two runs, then the median (and the "
            "range) over the rounds; every round runs every figure once, so the speed of the "
            "emulated CPU, which drifts between rounds, cancels out of each ratio:", ""]
    rrows = []
    for name, test, loss, pr, target in ratios:
        v = pr[0] if pr else None
        what = {
            "metaroce_vs_rxe": "metaroce / rxe",
            "metaroce_vs_tcp_mss": "metaroce / tcp (mss)",
        }.get(name)
        if what is None:
            tr = name.replace("_loss_retention", "").replace("_", " (", 1)
            tr += ")" if "(" in tr else ""
            what = f"{tr}: {loss} % loss / {losses[0]} % loss"
        verdict = ""
        if target is not None:
            verdict = f"target >= {target:.2f}: " + (
                "unknown" if v is None else ("met" if v >= target else "MISSED"))
        rrows.append([what, test, f"{loss} %", fmt(v, 2) if v is not None else "-",
                      f"{fmt(pr[1], 2)} - {fmt(pr[2], 2)}" if pr else "-", verdict])
    out += rst_table(["Ratio", "Test", "At", "Value", "Range", "Target"], rrows)

    # Telemetry: what crossed the wire, what netem dropped, how each transport
    # recovered (medians per run).
    out += ["", "What crossed the veth and how each transport recovered (medians per run; "
            "retransmissions: metaroce ``retransmits`` / ``retransmits_timeout`` of "
            "``rdma statistic``, rxe ``rcvd_seq_err`` / ``completer_retry_err``, TCP the "
            "sender's retransmitted segments; timeouts and srtt from metaroce's debugfs "
            "``peers`` table, summed / median over its paths):", ""]
    trows = []
    for key in keys:
        for loss in losses:
            f = fig(key, loss)
            if not f or not f.ok:
                continue
            w = f.wire_pkt_bytes()
            d = f.drop_pct()
            trows.append([
                f.label, f"{loss} %",
                fmt_int(med(f.vals("wire_tx_bytes")) / 1e6) if med(f.vals("wire_tx_bytes")) else "-",
                fmt_int(med(f.vals("wire_tx_pkts"))),
                fmt_int(w) if w is not None else "-",
                f"{d:.2f}" if d is not None else "-",
                fmt_int(med(f.vals("retx"))),
                fmt_int(med(f.vals("rto"))),
                fmt_int(med(f.vals("timeouts"))),
                fmt_int(med(f.vals("srtt_us"))),
            ])
    out += rst_table(["Figure", "Loss", "MB out", "Packets out", "Bytes/pkt", "Dropped %",
                      "Retx", "Of which RTO", "Timeouts", "srtt us"], trows)
    out.append("")
    for p in plots:
        out += [f".. image:: bench/{p}", f"   :alt: {p}", ""]
    out += ["Data: ``bench/bench.tsv`` (one row per figure), ``bench/runs.tsv`` (one row per "
            "run), ``bench/bench-lines.txt`` (the BENCH and RATIO lines).", "", ""]
    with open(path, "w") as f:
        f.write(head + "\n".join(out) + END + tail)


if __name__ == "__main__":
    sys.exit(main())
