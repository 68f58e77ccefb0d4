#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Many senders into one receiver, for selftests/metaroce/incast.sh.

  many_senders.py --rx DEV:IPV4 --tx DEV:IPV4 [--tx DEV:IPV4 ...]
                  [--seconds S]

One RC QP pair per --tx (a device and the address it sends from; each
address is a peer of its own at the receiver, so each pair is a
connection of its own), connected to --rx's device and address. For S
seconds each sender posts a 1 KiB RDMA WRITE every PERIOD (0.2 s; the
senders take turns, a twentieth of them every 10 ms): a light load, one
packet per sender every PERIOD, the pattern of many senders that each
send little, which the emulated CPUs carry without loss. Meanwhile it
reads, every half second, how many senders the receiver's fair share
counts as active (from its debugfs); at the end, each of the receiver's
peers' hint (hint_tx, what it grants) and each sender's (hint_rx, what it
was granted); then the first sender goes on alone, a WRITE every 5 ms,
for two seconds, and the active senders are read again. Prints
"KEY VALUE" lines, and the devices' transport counters as comments.
"""

import argparse
import os
import sys
import time

from mr_pyverbs import verbs_enums
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR

e = verbs_enums()

SIZE = 1024
DEPTH = 1
PERIOD = 0.2
TURNS = 20
ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE


class Dev:
    """A device's context, PD, CQ and MR, shared by its QPs."""

    def __init__(self, name, nqp):
        self.name = name
        self.ctx = Context(name=name)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, max(64, nqp * DEPTH * 2))
        self.mr = MR(self.pd, SIZE, ACCESS)

    def close(self):
        for obj in (self.mr, self.cq, self.pd, self.ctx):
            obj.close()


def new_qp(dev):
    cap = QPCap(max_send_wr=DEPTH * 2, max_recv_wr=1, max_send_sge=1,
                max_recv_sge=1)
    return QP(dev.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=dev.cq,
                                 rcq=dev.cq, cap=cap))


def connect(qp, gidx, peer_dev, peer_qp, peer_gidx):
    attr = QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1)
    attr.pkey_index = 0
    attr.qp_access_flags = ACCESS
    qp.to_init(attr)
    gr = GlobalRoute(dgid=peer_dev.ctx.query_gid(1, peer_gidx),
                     sgid_index=gidx)
    attr = QPAttr(qp_state=e.IBV_QPS_RTR)
    attr.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
    attr.dest_qp_num = peer_qp.qp_num
    attr.path_mtu = e.IBV_MTU_1024
    attr.rq_psn = 0
    attr.max_dest_rd_atomic = 1
    attr.min_rnr_timer = 12
    qp.to_rtr(attr)
    attr = QPAttr(qp_state=e.IBV_QPS_RTS)
    attr.sq_psn = 0
    attr.timeout = 14
    attr.retry_cnt = 7
    attr.rnr_retry = 7
    attr.max_rd_atomic = 1
    qp.to_rts(attr)


def gid_indices(dev, want, timeout=60):
    """DEV's RoCE v2 GID index of each IPv4 address of WANT, waiting for
    the GID table to have them all."""
    port = f"/sys/class/infiniband/{dev}/ports/1"
    deadline = time.monotonic() + timeout
    while True:
        found = {}
        for name in os.listdir(f"{port}/gids"):
            try:
                with open(f"{port}/gids/{name}", encoding="ascii") as f:
                    gid = f.read().strip()
                with open(f"{port}/gid_attrs/types/{name}",
                          encoding="ascii") as f:
                    kind = f.read().strip()
            except OSError:
                continue
            if kind != "RoCE v2" or not gid.startswith(
                    "0000:0000:0000:0000:0000:ffff:"):
                continue
            h = gid.replace(":", "")[-8:]
            ip = ".".join(str(int(h[i:i + 2], 16)) for i in range(0, 8, 2))
            found[ip] = int(name)
        missing = [ip for ip in want if ip not in found]
        if not missing:
            return found
        if time.monotonic() > deadline:
            sys.exit(f"many_senders.py: {dev} has no GID for {missing[:4]}")
        time.sleep(0.5)


def debugfs(dev):
    """DEV's debugfs peers file: the fair share's line, and per peer its
    address and the words that follow it."""
    fs, peers, cur = {}, [], None
    with open(f"/sys/kernel/debug/metaroce/{dev}/peers",
              encoding="ascii") as f:
        for line in f:
            w = line.split()
            if w[:2] == ["fair", "share"]:
                fs = dict(zip(w[2::2], w[3::2]))
            elif w and w[0] == "peer":
                cur = dict(zip(w[0::2], w[1::2]))
                peers.append(cur)
            elif cur is not None and w and w[0] == "window":
                cur.update(zip(w[0::2], w[1::2]))
    return fs, peers


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rx", required=True)
    p.add_argument("--tx", action="append", required=True)
    p.add_argument("--seconds", type=float, default=6)
    args = p.parse_args()

    rx_name, rx_ip = args.rx.split(":")
    rx_gidx = gid_indices(rx_name, [rx_ip])[rx_ip]
    wanted = {}
    for d, ip in (t.split(":") for t in args.tx):
        wanted.setdefault(d, []).append(ip)
    senders = []
    for d, ips in wanted.items():
        idx = gid_indices(d, ips)
        senders += [(d, idx[ip]) for ip in ips]
    devs = {d: len(ips) for d, ips in wanted.items()}
    tx = {d: Dev(d, n) for d, n in devs.items()}
    rx = Dev(rx_name, len(senders))
    pairs = []
    for d, g in senders:
        a, b = new_qp(tx[d]), new_qp(rx)
        connect(b, rx_gidx, tx[d], a, g)
        connect(a, g, rx, b, rx_gidx)
        pairs.append((tx[d], a, b))
    print(f"pairs {len(pairs)}")

    def post(i):
        dev, qp, _ = pairs[i]
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                    sg=[SGE(dev.mr.buf, SIZE, dev.mr.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(rx.mr.rkey, rx.mr.buf)
        qp.post_send(wr)

    out = [0] * len(pairs)
    done = errors = 0
    statuses = {}
    t0 = time.monotonic()
    next_look = t0 + 0.5
    next_turn, turn = t0, 0
    active = []
    peers_rx, hints_tx, fs_end = [], {}, {}

    def look_at_stop():
        """The receiver's fair share and peers, the senders' hints."""
        fs, prx = debugfs(rx_name)
        hints = {}
        for d in tx:
            for pe in debugfs(d)[1]:
                hints[(d, pe["local"])] = int(pe.get("hint_rx", 0))
        return fs, prx, hints

    while time.monotonic() - t0 < args.seconds or any(out):
        now = time.monotonic()
        stop = now - t0 >= args.seconds
        if now >= next_turn and not stop:
            next_turn += PERIOD / TURNS
            for i in range(turn, len(pairs), TURNS):
                if out[i] < DEPTH:
                    post(i)
                    out[i] += 1
            turn = (turn + 1) % TURNS
        if now >= next_look and not stop:
            next_look = now + 0.5
            active.append(int(debugfs(rx_name)[0].get("active", -1)))
        if stop and not fs_end:
            fs_end, peers_rx, hints_tx = look_at_stop()
        for dev in tx.values():
            got, wcs = dev.cq.poll(num_entries=64)
            for wc in wcs[:got]:
                out[wc.wr_id] -= 1
                if wc.status != e.IBV_WC_SUCCESS:
                    errors += 1
                    statuses[wc.status] = statuses.get(wc.status, 0) + 1
                    continue
                done += 1
        if time.monotonic() - t0 > args.seconds + 60:
            print("stuck 1")
            break
        time.sleep(0.002)
    # Nothing was outstanding when the time ran out: the loop ended before
    # an iteration saw it.
    if not fs_end:
        fs_end, peers_rx, hints_tx = look_at_stop()
    # The first sender goes on alone for two seconds: the receiver's full
    # runs go on with it, and the others' demands run out.
    t1 = time.monotonic()
    while time.monotonic() - t1 < 2 or out[0]:
        if not out[0] and time.monotonic() - t1 < 2:
            post(0)
            out[0] += 1
        got, wcs = pairs[0][0].cq.poll(num_entries=64)
        for wc in wcs[:got]:
            out[wc.wr_id] -= 1
            if wc.status != e.IBV_WC_SUCCESS:
                errors += 1
                statuses[wc.status] = statuses.get(wc.status, 0) + 1
        if time.monotonic() - t1 > 60:
            print("stuck 2")
            break
        time.sleep(0.005)
    fs_after, _ = debugfs(rx_name)
    ours = [pe for pe in peers_rx if int(pe.get("qps", 0)) > 0]
    print(f"writes_done {done}")
    print(f"errors {errors}")
    for st, n in sorted(statuses.items()):
        print(f"status_{st} {n}")
    print(f"rx_peers {len(ours)}")
    print(f"rx_hinted {sum(1 for pe in ours if int(pe.get('hint_tx', 0)) > 0)}")
    print(f"tx_hinted {sum(1 for v in hints_tx.values() if v > 0)}")
    print(f"tx_peers {len(hints_tx)}")
    print(f"active_max {max(active, default=-1)}")
    print(f"active_samples {','.join(str(a) for a in active)}")
    print(f"level_end {fs_end.get('level', -1)}")
    print(f"active_after {fs_after.get('active', -1)}")
    for d in [rx_name] + sorted(tx):
        hw = f"/sys/class/infiniband/{d}/ports/1/hw_counters"
        vals = []
        for name in sorted(os.listdir(hw)):
            try:
                with open(f"{hw}/{name}", encoding="ascii") as f:
                    val = f.read().strip()
            except OSError:
                continue
            if val != "0":
                vals.append(f"{name}={val}")
        print(f"# counters {d}: {' '.join(vals)}")
    for _, a, b in pairs:
        a.close()
        b.close()
    for dev in list(tx.values()) + [rx]:
        dev.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
