#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Writes fastpath.sh's medians into Documentation/benchmarks.rst.

fastpath_report.py SUMMARY_TSV BENCHMARKS_RST KERNEL REPS

SUMMARY_TSV has one "test<TAB>transport<TAB>median<TAB>runs" line per
figure. The table replaces what is between the ".. fastpath-generated-begin"
and ".. fastpath-generated-end" comments of BENCHMARKS_RST.
"""
import sys

TESTS = [
    ("lat_write.median_us", "ib_write_lat 8 B, median (us)", "lower"),
    ("lat_write.p99_us", "ib_write_lat 8 B, 99th percentile (us)", "lower"),
    ("lat_send.median_us", "ib_send_lat 8 B, median (us)", "lower"),
    ("lat_send.p99_us", "ib_send_lat 8 B, 99th percentile (us)", "lower"),
    ("rate_8.mpps", "ib_write_bw 8 B, message rate (Mpps)", "higher"),
    ("rate_64.mpps", "ib_write_bw 64 B, message rate (Mpps)", "higher"),
    ("syscalls.per_wr", "system calls per work request, streaming",
     "lower"),
]
BEGIN = ".. fastpath-generated-begin"
END = ".. fastpath-generated-end"


def main():
    summary, rst, kernel, reps = sys.argv[1:5]
    val = {}
    for line in open(summary):
        test, tr, median, runs = line.rstrip("\n").split("\t")
        val[test, tr] = (float(median), int(runs))
    rows = [("figure", "metaroce", "rxe", "metaroce / rxe", "better")]
    for key, label, better in TESTS:
        m = val.get((key, "metaroce"))
        r = val.get((key, "rxe"))
        ratio = "%.2f" % (m[0] / r[0]) if m and r and r[0] else "-"
        fmt = "%.4f" if key.startswith("syscalls") else "%.3f"
        rows.append((label, fmt % m[0] if m else "-",
                     fmt % r[0] if r else "-", ratio, better))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    sep = "  ".join("=" * w for w in widths)
    out = [BEGIN, "", "Kernel %s, median of %s runs each (make bench-fastpath)."
           % (kernel, reps), "", sep]
    for i, r in enumerate(rows):
        out.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        if i == 0:
            out.append(sep)
    out += [sep, "", END]
    text = open(rst).read()
    a, b = text.find(BEGIN), text.find(END)
    if a < 0 or b < 0:
        sys.exit("fastpath_report: no %s/%s markers in %s" % (BEGIN, END, rst))
    text = text[:a] + "\n".join(out) + text[b + len(END):]
    open(rst, "w").write(text)


if __name__ == "__main__":
    main()
