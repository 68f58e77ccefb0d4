#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Kernel memory per unified connection, for selftests/metaroce/scale.sh.

Connects one RC QP pair (pyverbs) per --a-gidx between --a-dev and
--b-dev, twice, with one context, PD, CQ and MR per device: first all over
one connection (every A-side QP uses the first of --a-gidx), then each
over a connection of its own (A-side QP i uses the i-th --a-gidx, a
different local address). Every pair carries one WRITE.
Both runs hold the same QPs, CQs, MRs and contexts, so what the second
takes beyond the first is what its extra connections take, on both hosts
(each connection is a peer object on A's device and one on B's). Kernel
memory is unreclaimable slab (which includes large kmallocs) plus vmalloc,
read after dropping the caches and shrinking the slab caches, as scale.sh
reads it.

Prints "KEY VALUE" lines: the memory each run added (KiB), the peers each
device had, and conn_bytes, the memory per connection per host.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import Side, peer_entries  # noqa: E402


def kmem():
    """Unreclaimable slab plus vmalloc, KiB, after dropping the caches and
    shrinking every slab cache (empty slabs freed, per-CPU partial lists
    flushed), as scale.sh reads it: otherwise the first run pays for the
    slabs that the second then fills, and the difference is off by
    several kB per connection."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w", encoding="ascii") as f:
        f.write("3\n")
    for name in os.listdir("/sys/kernel/slab"):
        try:
            with open(f"/sys/kernel/slab/{name}/shrink", "w",
                      encoding="ascii") as f:
                f.write("1\n")
        except OSError:
            pass
    total = 0
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            key, val = line.split(":", 1)
            if key in ("SUnreclaim", "VmallocUsed"):
                total += int(val.split()[0])
    return total


def npeers(dev):
    return len(peer_entries(dev))


def wait_no_peers(args, timeout=40):
    """Idle connections are collected 5 s after their last QP went."""
    deadline = time.monotonic() + timeout
    while npeers(args.a_dev) or npeers(args.b_dev):
        if time.monotonic() > deadline:
            sys.exit(f"conn_mem.py: peers left after {timeout} s: "
                     f"{npeers(args.a_dev)} on {args.a_dev}, "
                     f"{npeers(args.b_dev)} on {args.b_dev}")
        time.sleep(0.5)


def run(args, gidxs):
    """Connect the pairs with A-side GIDs GIDXS (round robin); returns the
    memory they added (KiB) and each device's peer count."""
    from mr_pyverbs import verbs_enums
    e = verbs_enums()

    wait_no_peers(args)
    base = kmem()
    pairs = []
    a0 = b0 = None
    for i in range(args.pairs):
        # One context, PD, CQ and MR per device, shared by its QPs.
        a = Side(args.a_dev, gidxs[i % len(gidxs)], a0)
        b = Side(args.b_dev, args.b_gidx, b0)
        a0, b0 = a0 or a, b0 or b
        a.connect(b)
        b.connect(a)
        pairs.append((a, b))
    for i, (a, b) in enumerate(pairs):
        a.post_write(b, 64 * i, 64, wr_id=i)
    for wr_id, status in a0.completions(len(pairs)):
        if status != e.IBV_WC_SUCCESS:
            sys.exit(f"conn_mem.py: WRITE {wr_id} failed with status "
                     f"{status}")
    during = kmem()
    peers = (npeers(args.a_dev), npeers(args.b_dev))
    # The QPs first, then what they shared.
    for a, b in reversed(pairs):
        a.close()
        b.close()
    return during - base, peers


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--a-dev", required=True)
    p.add_argument("--a-gidx", required=True,
                   help="comma-separated GID indices, one per address")
    p.add_argument("--b-dev", required=True)
    p.add_argument("--b-gidx", type=int, required=True)
    args = p.parse_args()
    gidxs = [int(g) for g in args.a_gidx.split(",")]
    args.pairs = len(gidxs)
    if args.pairs < 2:
        sys.exit("conn_mem.py: needs two A-side GIDs at least")

    one, peers_one = run(args, gidxs[:1])
    many, peers_many = run(args, gidxs)
    wait_no_peers(args)
    print(f"pairs {args.pairs}")
    print(f"one_kib {one}")
    print(f"many_kib {many}")
    print(f"peers_one_a {peers_one[0]}")
    print(f"peers_one_b {peers_one[1]}")
    print(f"peers_many_a {peers_many[0]}")
    print(f"peers_many_b {peers_many[1]}")
    extra = args.pairs - 1
    print(f"conn_bytes {(many - one) * 1024 // (2 * extra)}")


if __name__ == "__main__":
    main()
