#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Driver-layer packet fuzzer, for selftests/metaroce/pktfuzz.sh.

Mutates MetaRoCE packets captured from real traffic and sends them to a
device that has live QPs, MRs and an SRQ. Packet layout and builders come
from hostile.py (which reads include/metaroce/mr_wire.h).

  fuzz    QP pairs of its own between --a-dev (over --src, an address of
          host A no other test uses) and --b-dev: plain RC QPs and QPs on
          an SRQ, MRs with every remote right. It captures (AF_PACKET on
          --iface in --netns) their first contact and a real WRITE, WRITE
          with immediate, SEND, SEND with immediate, READ, fetch-and-add
          and compare-and-swap each way, writes the capture to --pcap,
          reads it back and, for --seconds, sends mutated copies of its
          packets from --src to --dst: bit flips, bytes and header fields
          set to boundary values (lengths, opcodes in and out of the enum,
          flags, live QPNs, live R_Keys, addresses at the edges of the
          MRs, DSNs/PSNs/MSNs near the windows), truncation, extension,
          header splicing between packets, duplicates. A share of them is
          put in the receiver's current epoch for --src and at the next
          DSNs (so that they reach the QPs), and now and then the fuzzer
          opens an epoch of its own: it sends a hello, reads the
          receiver's challenge (the RESET to --src, seen on --iface) and
          puts the cookie in SYN packets of that epoch. Meanwhile its
          pairs keep moving data (their errors are legitimate: the packets
          are in their connection). Every --round-seconds the pairs are
          destroyed (under the fuzzing) and new ones made, captured and
          fuzzed in turn. Seeded: --seed (printed) reproduces the
          sequence of mutations (not the timing, nor what the capture
          holds).
  replay  captures --capture-seconds of a live connection (--src to --dst,
          another test's transfer), then for --seconds sends, from --src,
          exact copies of its packets from --src (stale: every one is a
          duplicate by then), copies in another epoch, and copies made
          malformed (truncated, bad version, unknown opcode, hlen off):
          none may disturb the transfer. Prints how many of each kind.

Both print "KEY VALUE" lines of what they did ("sent N" last).
"""

import argparse
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile as H  # noqa: E402

ETH_P_ALL = 0x0003
SO_RCVBUFFORCE = 33
ETH_P_IP = 0x0800

# --- namespaces and capture -----------------------------------------------------


def in_netns(netns, fn):
    """fn() run with this thread in network namespace NETNS (sockets it
    creates stay there)."""
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{netns}", os.O_RDONLY)
    try:
        if H._libc.setns(target, H.CLONE_NEWNET):
            raise OSError(H.ctypes.get_errno(), "setns " + netns)
        try:
            return fn()
        finally:
            if H._libc.setns(own, H.CLONE_NEWNET):
                raise OSError(H.ctypes.get_errno(), "setns back")
    finally:
        os.close(own)
        os.close(target)


def udp_of(frame):
    """(src, dst, sport, dport, payload) of an Ethernet/IPv4/UDP frame."""
    if len(frame) < 42 or struct.unpack_from(">H", frame, 12)[0] != ETH_P_IP:
        return None
    ihl = (frame[14] & 0x0f) * 4
    if frame[23] != socket.IPPROTO_UDP or len(frame) < 14 + ihl + 8:
        return None
    total = struct.unpack_from(">H", frame, 16)[0]
    src = socket.inet_ntoa(frame[26:30])
    dst = socket.inet_ntoa(frame[30:34])
    u = 14 + ihl
    sport, dport, ulen = struct.unpack_from(">HHH", frame, u)
    end = min(len(frame), 14 + total, u + ulen)
    return src, dst, sport, dport, bytes(frame[u + 8:end])


class Sniffer(threading.Thread):
    """AF_PACKET on IFACE in NETNS: keeps the frames to or from PORT while
    recording, and the cookies of the RESETs sent to WATCH (an address)."""

    def __init__(self, netns, iface, port, watch):
        super().__init__(daemon=True)

        def make():
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                              socket.htons(ETH_P_ALL))
            # Room for the frames of a fast transfer while this thread
            # waits for the interpreter: a frame lost here (the first
            # contact's RESET, a cookie) is missing from the corpus.
            try:
                s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
            except OSError:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
            s.bind((iface, 0))
            s.settimeout(0.1)
            return s
        self.sock = in_netns(netns, make)
        self.port, self.watch = port, watch
        self.frames = []
        self.recording = False
        self.cookies = {}	# unknown epoch -> cookie, RESETs to WATCH
        # What the real sender at WATCH sends (not the fuzzer, whose
        # source port is ignore): its latest DSN, the latest MSN to each
        # QPN.
        self.ignore = None
        self.dsn = None
        self.msns = {}
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def run(self):
        while not self.stop.is_set():
            try:
                frame = self.sock.recv(65536)
            except socket.timeout:
                continue
            u = udp_of(frame)
            if not u or self.port not in (u[2], u[3]):
                continue
            with self.lock:
                if self.recording:
                    self.frames.append((time.time(), frame))
                p = u[4]
                if u[1] == self.watch and len(p) >= 32 and \
                        p[1] == H.OP.get("RESET"):
                    ep, ck = struct.unpack_from(">IQ", p, 20)
                    self.cookies[ep] = ck
                if u[0] == self.watch and u[2] != self.ignore and \
                        len(p) >= 36 and H.OP["WRITE"] <= p[1] <= H.OP["NOP"]:
                    self.track(p)

    def track(self, p):
        dst, _, dsn, msn = struct.unpack_from(">IIII", p, 20)
        if self.dsn is None or (dsn - self.dsn) & M32 < 1 << 31:
            self.dsn = dsn
        msn &= 0xffffff
        old = self.msns.get(dst)
        if p[1] in (H.OP["READ_RESP"], H.OP["ATOMIC_RESP"], H.OP["NOP"]):
            return	# a response's MSN is the requester's
        if old is None or (msn - old) & 0xffffff < 1 << 23:
            self.msns[dst] = msn

    def cookie(self, epoch, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if epoch in self.cookies:
                    return self.cookies[epoch]
            time.sleep(0.01)
        return None

    def close(self):
        self.stop.set()
        self.join()
        self.sock.close()


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for t, fr in frames:
            f.write(struct.pack("<IIII", int(t), int((t % 1) * 1e6),
                                len(fr), len(fr)))
            f.write(fr)


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack_from("<I", data, 0)
    if magic != 0xa1b2c3d4:
        sys.exit(f"pktfuzz.py: {path}: not a little-endian pcap")
    out, off = [], 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack_from("<IIII", data, off)
        off += 16
        out.append(data[off:off + incl])
        off += incl
    return out


def corpus_from(frames, port, src=None):
    """The MetaRoCE payloads of FRAMES (those sent from SRC, if given)."""
    out = []
    for fr in frames:
        u = udp_of(fr)
        if u and u[3] == port and len(u[4]) >= H.BASE_HLEN and \
                (src is None or u[0] == src):
            out.append(u[4])
    return out


# --- what the receiver has now ------------------------------------------------------


def live_qpns(dev):
    """QPNs of DEV's QPs (rdma resource), whoever owns them."""
    try:
        out = subprocess.run(["rdma", "resource", "show", "qp", "link",
                              f"{dev}/1"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    w = out.split()
    return [int(w[i + 1]) for i in range(len(w) - 1) if w[i] == "lqpn"]


class View:
    """The receiver's epoch for --src and the sender's next DSN, from
    debugfs, refreshed at most every half second."""

    def __init__(self, args):
        self.args = args
        self.t = 0
        self.epoch = self.dsn = self.una = 0

    def refresh(self):
        if time.monotonic() - self.t < 0.5:
            return
        self.t = time.monotonic()
        a = self.args
        try:
            rx = H.peer_entry(a.b_dev, a.src, a.dst)
            tx = H.peer_entry(a.a_dev, a.dst, a.src)
        except OSError:
            return
        if rx:
            self.epoch = int(rx.get("rx_epoch", "0"), 16)
        if tx:
            self.dsn = int(tx.get("dsn_nxt", "0"), 16)
            self.una = int(tx.get("dsn_una", "0"), 16)


# --- mutation -------------------------------------------------------------------

M32 = 0xffffffff
DELTAS = (0, 1, 2, 3, -1, -2, 63, 64, 65, 255, 256, 257, 4095, 4096, 4097,
          -4096, -4097, 1 << 20, 1 << 31, (1 << 31) - 1, -(1 << 31))
LENGTHS = (0, 1, 7, 8, 9, 1023, 1024, 1025, 4095, 4096, 4097, 65535, 65536,
           0x7fffffff, 0x80000000, 0x80000001, M32)
BYTES = (0, 1, 2, 0x0f, 0x10, 0x7f, 0x80, 0xfe, 0xff)
OUTSIDE_OPS = (0x00, 0x0a, 0x0f, 0x13, 0x1f, 0x21, 0x7f, 0x80, 0xff)


class Mutator:
    """Mutations of MetaRoCE packets, every choice from one seeded RNG."""

    def __init__(self, seed, corpus, qpns, keys, regions):
        self.r = random.Random(seed)
        self.corpus = corpus
        self.qpns = sorted(set(qpns)) or [2]
        self.keys = sorted(set(keys)) or [0]
        self.regions = regions or [(0x10000, 4096)]
        self.epochs = sorted({struct.unpack_from(">I", p, 4)[0]
                              for p in corpus})
        seqs = [struct.unpack_from(">I", p, o)[0] for p in corpus
                for o in (8, 28) if len(p) >= o + 4]
        self.seqs = seqs or [1]
        self.msns = sorted({struct.unpack_from(">I", p, 32)[0] & 0xffffff
                            for p in corpus if len(p) >= 36 and
                            H.OP["WRITE"] <= p[1] <= H.OP["NOP"]})
        self.ops = sorted(set(H.OP.values())) + list(OUTSIDE_OPS)
        self.flags = sorted(set(H.F.values()))
        self.stats = {}

    def count(self, what):
        self.stats[what] = self.stats.get(what, 0) + 1

    def pick(self):
        return bytearray(self.r.choice(self.corpus))

    def near(self, v, bits=32):
        return (v + self.r.choice(DELTAS)) & ((1 << bits) - 1)

    def value(self, kind, old, size):
        r = self.r
        if kind == "opcode":
            return r.choice(self.ops)
        if kind == "flags":
            f = 0
            for b in r.sample(self.flags, r.randint(0, 3)):
                f |= b
            return r.choice((f, f | 0x0040, f | 0x8000, 0xffff, old ^ f))
        if kind == "version":
            return r.choice((0, 1, H.VERSION, H.VERSION + 1, 0xff))
        if kind == "path":
            return r.choice((0, 1, 7, 15, 16, 17, 255))
        if kind == "hlen":
            return r.choice((0, 1, 4, 5, old - 1, old + 1, old + 2, 255)) \
                & 0xff
        if kind == "qpn":
            q = r.choice(self.qpns)
            return r.choice((q, q, q + 1, q - 1, 0, 1, 2, 0xffffff,
                             0x1000000, M32, q | 0x1000000)) & M32
        if kind == "epoch":
            return r.choice(self.epochs + [0, 1, M32, r.getrandbits(32),
                                           self.near(old)])
        if kind == "seq":
            return self.near(r.choice((old, old, r.choice(self.seqs))))
        if kind == "msn":
            m = r.choice(self.msns or [0])
            return (r.choice((m, old & 0xffffff)) + r.choice(
                (0, 1, 2, 3, -1, 63, 64, 65, 1 << 23))) & 0xffffff | \
                (old & 0xff000000)
        if kind == "gen":
            return r.choice((0, 1, 2, old + 1, old - 1, 0x7f, 0xff)) & 0xff
        if kind == "len":
            return r.choice(LENGTHS + (self.near(old),)) & M32
        if kind == "addr":
            base, size = r.choice(self.regions)
            return r.choice((base, base + 1, base - 1, base - 8,
                             base + size - 1, base + size - 8, base + size,
                             base + size + 1, base + size - 4096,
                             base + (1 << 32), 0, 8, (1 << 64) - 1,
                             (1 << 64) - 8, (1 << 63))) & ((1 << 64) - 1)
        if kind == "rkey":
            k = r.choice(self.keys)
            return r.choice((k, k, k + 1, k - 1, k ^ 0xff, k + 0x100, 0,
                             M32)) & M32
        if kind == "tsval":
            return r.choice((0, M32, old + 1, old - (1 << 31))) & M32
        v = r.choice(BYTES)
        return int.from_bytes(bytes([v]) * size, "big")

    def fields(self, p):
        """(offset, size, kind) of the header fields P has."""
        if len(p) < 2:
            return []
        op = p[1]
        out = [(0, 1, "version"), (1, 1, "opcode"), (2, 2, "flags"),
               (4, 4, "epoch"), (8, 4, "seq"), (12, 1, "path"),
               (13, 1, "hlen"), (14, 2, "len"), (16, 4, "tsval")]
        if H.OP["WRITE"] <= op <= H.OP["NOP"] or op == H.OP["ACK_REQ"]:
            out += [(20, 4, "qpn"), (24, 4, "qpn")]
        if H.OP["WRITE"] <= op <= H.OP["NOP"]:
            out += [(28, 4, "seq"), (32, 1, "gen"), (32, 4, "msn"),
                    (36, 4, "len"), (40, 4, "len")]
            if op in (H.OP["WRITE"], H.OP["READ_REQ"], H.OP["CMP_SWAP"],
                      H.OP["FETCH_ADD"]):
                out += [(44, 8, "addr"), (52, 4, "rkey"), (56, 4, "len")]
            if op == H.OP["SEND"]:
                out += [(44, 4, "msn")]
            if op in (H.OP["CMP_SWAP"], H.OP["FETCH_ADD"]):
                out += [(60, 8, "byte"), (68, 8, "byte")]
        elif op == H.OP["ACK"]:
            out += [(20, 4, "epoch"), (24, 4, "seq"), (28, 4, "len"),
                    (32, 1, "byte"), (33, 1, "byte"), (34, 2, "byte")]
            # Path blocks (48 bytes: path, ce, rx, base, tsecr, bitmap),
            # then QP blocks (12 bytes: status+qpn, msn, aux).
            for o in range(36, len(p), 4):
                out.append((o, 4, self.r.choice(("seq", "qpn", "byte",
                                                 "len"))))
        elif op == H.OP["UD_SEND"]:
            out += [(20, 4, "qpn"), (24, 4, "qpn"), (28, 4, "rkey"),
                    (32, 4, "byte")]
        elif op == H.OP.get("RESET"):
            out += [(20, 4, "epoch"), (24, 8, "byte")]
        return [f for f in out if f[0] + f[1] <= len(p)]

    def set_field(self, p):
        fs = self.fields(p)
        if not fs:
            return
        off, size, kind = self.r.choice(fs)
        old = int.from_bytes(p[off:off + size], "big")
        v = self.value(kind, old, size) & ((1 << (8 * size)) - 1)
        p[off:off + size] = v.to_bytes(size, "big")
        self.count("field_" + kind)

    def mutate_once(self, p):
        r = self.r
        k = r.random()
        if k < 0.45:
            self.set_field(p)
        elif k < 0.55:
            for _ in range(r.randint(1, 8)):
                if p:
                    i = r.randrange(len(p) * 8)
                    p[i // 8] ^= 1 << (i % 8)
            self.count("bitflip")
        elif k < 0.62:
            if p:
                i = r.randrange(len(p))
                n = r.randint(1, 4)
                p[i:i + n] = bytes([r.choice(BYTES)]) * len(p[i:i + n])
            self.count("byteset")
        elif k < 0.72:
            cut = r.choice((0, 1, 19, 20, 21, 43, 44, 48, 60, 76,
                            len(p) - 1, len(p) - 4, r.randrange(len(p) + 1)))
            del p[max(0, cut):]
            self.count("truncate")
        elif k < 0.80:
            n = r.choice((1, 3, 4, 8, 12, 64, 1024, 4096))
            p += bytes(r.getrandbits(8) for _ in range(min(n, 64))) * \
                (n // 64 if n > 64 else 1)
            self.count("extend")
        elif k < 0.90:
            q = self.pick()
            cut = r.choice((20, 44, 48, 60, 76, r.randrange(max(1, len(p)))))
            p[cut:] = q[cut:]
            self.count("splice")
        else:
            # Header of one packet, payload of another.
            q = self.pick()
            hl = p[13] * 4 if len(p) > 13 else 0
            ql = q[13] * 4 if len(q) > 13 else 0
            p[hl:] = q[ql:]
            self.count("splice_payload")

    def fix_plen(self, p):
        """PLen made to match the datagram (so that the packet gets past
        the length checks to the deeper ones)."""
        if len(p) >= H.BASE_HLEN and p[13] * 4 <= len(p):
            pl = len(p) - p[13] * 4
            if pl <= 0xffff:
                p[14:16] = struct.pack(">H", pl)

    def mutant(self, p=None):
        if p is None:
            p = self.pick()
        for _ in range(self.r.choice((1, 1, 1, 2, 2, 3, 4))):
            self.mutate_once(p)
        if self.r.random() < 0.5:
            self.fix_plen(p)
        return p


def retarget(p, epoch, dsn, psn, syn=None):
    """P (a bytearray) put in EPOCH at DSN (if it has one) and PSN (if
    sequenced); with SYN = (syn_dsn, cookie), with SYN set and those words
    (appended to its header if it had none)."""
    if len(p) < H.BASE_HLEN:
        return p
    op = p[1]
    p[4:8] = struct.pack(">I", epoch)
    if not H.OP["WRITE"] <= op <= H.OP["PROBE"]:	# not sequenced
        return p
    p[8:12] = struct.pack(">I", psn)
    if op <= H.OP["NOP"] and len(p) >= 32:
        p[28:32] = struct.pack(">I", dsn)
    if syn is None:
        return p
    flags, = struct.unpack_from(">H", p, 2)
    hl = p[13] * 4
    if hl > len(p) or hl < H.BASE_HLEN:
        return p
    words = struct.pack(">IQ", syn[0], syn[1])
    if flags & H.F["SYN"]:
        p[hl - 12:hl] = words
    elif p[13] + 3 > 0xff:	# a mutated HLen with no room for the words
        return p
    else:
        p[hl:hl] = words
        p[13] += 3
        p[2:4] = struct.pack(">H", flags | H.F["SYN"])
    return p


def fresh_msn(p, sn, r):
    """A request's MSN made one its QP has not seen yet (just above what
    the real sender sent it last), so that it gets past the duplicate
    check to the QP."""
    if len(p) < 36 or not H.OP["WRITE"] <= p[1] <= H.OP["FETCH_ADD"] or \
            p[1] == H.OP["READ_RESP"]:
        return
    q = struct.unpack_from(">I", p, 20)[0]
    with sn.lock:
        m = sn.msns.get(q)
    if m is None:
        return
    m = (m + r.randrange(1, 8)) & 0xffffff
    p[33:36] = m.to_bytes(3, "big")


def hello(epoch):
    """A new sender's first packet: PROBE, SYN, ACKREQ, cookie 0."""
    words = struct.pack(">IQ", epoch, 0)
    return H.base(H.OP["PROBE"], H.BASE_HLEN + len(words), 0,
                  H.F["SYN"] | H.F["ACKREQ"], epoch, epoch, 0,
                  H.now_tsval()) + words


# --- the fuzz command ---------------------------------------------------------------


class Target(H.Side):
    """A Side whose MR is larger and allows remote atomics too."""

    SIZE = 65536

    def __init__(self, dev, gidx, share=None, srq=False):
        from pyverbs.mr import MR
        super().__init__(dev, gidx, share, srq)
        self.access |= self.e.IBV_ACCESS_REMOTE_ATOMIC
        if self.own:
            self.mr.close()
            self.mr = MR(self.pd, self.SIZE, self.access)
        self.out = 0		# our signaled requests not completed
        self.failed = 0

    def post(self, peer, opcode, offset, length, imm=0, wr_id=0):
        from pyverbs.wr import SGE, SendWR
        e = self.e
        wr = SendWR(wr_id=wr_id, opcode=opcode, num_sge=1, imm_data=imm,
                    sg=[SGE(self.mr.buf + offset, length, self.mr.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED)
        if opcode in (e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_WRITE_WITH_IMM,
                      e.IBV_WR_RDMA_READ):
            wr.set_wr_rdma(peer.mr.rkey, peer.mr.buf + offset)
        elif opcode in (e.IBV_WR_ATOMIC_FETCH_AND_ADD,
                        e.IBV_WR_ATOMIC_CMP_AND_SWP):
            wr.set_wr_atomic(peer.mr.rkey, peer.mr.buf + offset, 1, 2)
        self.qp.post_send(wr)
        self.out += 1

    def poll(self):
        """Completions on our CQ: (wr_id, status, opcode) triples."""
        got, wcs = self.cq.poll(num_entries=32)
        return [(w.wr_id, w.status, w.opcode) for w in wcs[:got]]


def make_pairs(args):
    """Four QP pairs over --src: 0 and 1 plain, 2 and 3 with B's QP on an
    SRQ. A's QPs share one context, B's plain and SRQ QPs one each."""
    a = [Target(args.a_dev, args.a_gidx)]
    for _ in range(3):
        a.append(Target(args.a_dev, args.a_gidx, share=a[0]))
    b = [Target(args.b_dev, args.b_gidx)]
    b.append(Target(args.b_dev, args.b_gidx, share=b[0]))
    b.append(Target(args.b_dev, args.b_gidx, srq=True))
    b.append(Target(args.b_dev, args.b_gidx, share=b[2], srq=True))
    for x, y in zip(a, b):
        x.connect(y)
        y.connect(x)
    return a, b


def wait_all(sides, n, timeout=20):
    """N completions on the CQs of SIDES (one CQ may serve several)."""
    cqs = {id(s.cq): s for s in sides}
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        for s in cqs.values():
            got += s.poll()
        time.sleep(0.005)
    return got


def real_traffic(a, b):
    """Every operation once each way on every pair; returns the
    completions' statuses."""
    e = a[0].e
    for i, y in enumerate(b):
        for j in range(6):
            y.post_recv(100 + j, 32768 + 4096 * (j % 4), 4096)
    a[0].post_recv(200, 32768, 4096)
    st = []
    for i, (x, y) in enumerate(zip(a, b)):
        ops = [(e.IBV_WR_RDMA_WRITE, 0, 64), (e.IBV_WR_RDMA_WRITE, 4096, 4000),
               (e.IBV_WR_RDMA_WRITE_WITH_IMM, 8192, 100),
               (e.IBV_WR_SEND, 0, 100), (e.IBV_WR_SEND, 4096, 3000),
               (e.IBV_WR_SEND_WITH_IMM, 8192, 8),
               (e.IBV_WR_RDMA_READ, 12288, 2500),
               (e.IBV_WR_ATOMIC_FETCH_AND_ADD, 16384, 8),
               (e.IBV_WR_ATOMIC_CMP_AND_SWP, 16392, 8)]
        for op, off, ln in ops:
            x.post(y, op, off, ln, imm=0x1234 + i, wr_id=i)
        # And B's requester: a READ, an atomic and a SEND (or a WRITE)
        # towards A.
        back = [(e.IBV_WR_RDMA_READ, 20480, 3000),
                (e.IBV_WR_ATOMIC_FETCH_AND_ADD, 24576, 8),
                (e.IBV_WR_SEND, 0, 200) if i == 0 else
                (e.IBV_WR_RDMA_WRITE, 28672, 300)]
        for op, off, ln in back:
            y.post(x, op, off, ln, wr_id=i)
        # A: its 9 requests (and B's SEND's receive); B: 3 receives and
        # its 3 requests.
        want = len(ops) + 3 + len(back) + (1 if i == 0 else 0)
        st += [w[1] for w in wait_all([x, y], want)]
        x.out = y.out = 0
    return st


def capture_round(args, sn, tot, pcap):
    """New QP pairs; their real traffic captured to PCAP and read back.
    Returns the pairs and the corpus."""
    with sn.lock:
        sn.frames = []
        sn.msns = {}
        sn.recording = True
    a, b = make_pairs(args)
    st = real_traffic(a, b)
    e = a[0].e
    tot["real_completions"] += len(st)
    bad = [s for s in st if s != e.IBV_WC_SUCCESS]
    tot["real_failed"] += len(bad)
    if not tot["rounds_done"]:
        tot["real_failed_first"] = len(bad)
    if bad:
        # Later rounds: the connection the last round fuzzed may still be
        # damaged (nothing protects it from forged ACKs in its epoch,
        # protocol.rst 11); show how.
        hist = {}
        for s in bad:
            hist[int(s)] = hist.get(int(s), 0) + 1
        print(f"round {tot['rounds_done'] + 1}: {len(bad)} of {len(st)} "
              "real operations failed, statuses " +
              " ".join(f"{k}:{v}" for k, v in sorted(hist.items())))
        for dev, remote in ((args.b_dev, args.src), (args.a_dev, args.dst)):
            try:
                with open(f"/sys/kernel/debug/metaroce/{dev}/peers",
                          encoding="ascii") as f:
                    text = f.read()
            except OSError:
                continue
            keep = False
            for line in text.splitlines():
                if line.startswith("peer "):
                    keep = f"::ffff:{remote} " in line
                if keep:
                    print(f"{dev}: {line}")
    time.sleep(0.5)
    with sn.lock:
        sn.recording = False
        frames = list(sn.frames)
    write_pcap(pcap, frames)
    corpus = corpus_from(read_pcap(pcap), args.port)
    for p in corpus:
        name = next((k for k, v in H.OP.items() if v == p[1]), hex(p[1]))
        tot["ops"][name] = tot["ops"].get(name, 0) + 1
    tot["corpus_packets"] += len(corpus)
    if not corpus:
        sys.exit("pktfuzz.py: nothing captured")
    return a, b, corpus


def fuzz_round(args, sn, sock, a, b, mut, seconds, tot):
    """Mutants of MUT's corpus to --dst for SECONDS, while the pairs A, B
    move data."""
    e = a[0].e
    view = View(args)
    dst = (args.dst, args.port)
    own_epoch = own_cookie = None
    own_dsn = own_psn = 0
    own_until = 0
    k = 0
    next_real = 0
    end = time.monotonic() + seconds
    next_takeover = time.monotonic() + 3
    while time.monotonic() < end:
        view.refresh()
        if own_epoch is not None and view.epoch == own_epoch:
            tot["adopted_epochs"].add(own_epoch)
        now = time.monotonic()
        if now >= next_takeover:
            # An epoch of our own: hello, challenge, SYN with the cookie.
            next_takeover = now + mut.r.uniform(3, 8)
            ep = mut.r.getrandbits(32) | 1
            sock.sendto(hello(ep), dst)
            tot["sent"] += 1
            tot["takeovers"] += 1
            ck = sn.cookie(ep, 1.0)
            if ck is not None:
                tot["cookies"] += 1
                own_epoch, own_cookie = ep, ck
                own_dsn, own_psn = ep, ep
                own_until = now + mut.r.uniform(1, 3)
        for _ in range(16):
            p = mut.pick()
            x = mut.r.random()
            if x < 0.6:
                fresh_msn(p, sn, mut.r)
            if own_epoch is not None and now < own_until and x < 0.6:
                retarget(p, own_epoch, own_dsn, own_psn,
                         syn=(own_epoch, own_cookie))
                own_dsn = (own_dsn + 1) & M32
                own_psn = (own_psn + 1) & M32
                tot["own_epoch"] += 1
            elif view.epoch and x < 0.5:
                k = (k + 1) % 64
                with sn.lock:
                    base = view.dsn if sn.dsn is None else sn.dsn + 1
                retarget(p, view.epoch, (base + k) & M32,
                         (view.epoch - (1 << 20) + mut.r.randrange(64))
                         & M32)
                tot["in_epoch"] += 1
            mut.mutant(p)
            try:
                sock.sendto(bytes(p), dst)
                tot["sent"] += 1
                if mut.r.random() < 0.05:	# a duplicate, at once
                    sock.sendto(bytes(p), dst)
                    tot["sent"] += 1
                    mut.count("duplicate")
            except OSError as err:	# e.g. longer than the MTU allows
                mut.count(f"send_{err.errno}")
        if now >= next_real:
            # The pairs keep moving data (their errors are legitimate).
            next_real = now + 0.2
            for i, (x, y) in enumerate(zip(a, b)):
                for _, status, _ in x.poll():
                    x.out -= 1
                    tot["pair_failed"] += status != e.IBV_WC_SUCCESS
                y.poll()
                if x.out < 2 and x.state() == e.IBV_QPS_RTS:
                    try:
                        x.post(y, mut.r.choice((e.IBV_WR_RDMA_WRITE,
                                                e.IBV_WR_RDMA_READ)),
                               mut.r.randrange(0, 32768, 8), 512, wr_id=i)
                        tot["pair_ops"] += 1
                    except Exception:	# pyverbs: QP went to error
                        pass
        time.sleep(0.004)
    for k_, v in mut.stats.items():
        tot["mutations"][k_] = tot["mutations"].get(k_, 0) + v


def cmd_fuzz(args):
    """Rounds of --round-seconds: new QP pairs, their traffic captured,
    then mutants of it; the pairs are destroyed under the fuzzing."""
    seed = args.seed if args.seed is not None else random.getrandbits(32)
    print(f"seed {seed}", flush=True)
    sn = Sniffer(args.netns, args.iface, args.port, args.src)
    sn.start()
    sock = H.netns_socket(args.netns, args.src)
    sn.ignore = sock.getsockname()[1]
    tot = {"real_completions": 0, "real_failed": 0, "corpus_packets": 0,
           "ops": {}, "mutations": {}, "takeovers": 0, "cookies": 0,
           "in_epoch": 0, "own_epoch": 0, "adopted_epochs": set(),
           "pair_ops": 0, "pair_failed": 0, "qps_in_error": 0, "sent": 0,
           "rounds_done": 0, "real_failed_first": 0}
    end = time.monotonic() + args.seconds
    rounds = 0
    while rounds == 0 or end - time.monotonic() > 5:
        rounds += 1
        # The first round's capture, and the latest one's (a long run
        # must not fill the VM's memory with them).
        pcap = args.pcap if rounds == 1 else \
            f"{args.pcap.removesuffix('.pcap')}.latest.pcap"
        a, b, corpus = capture_round(args, sn, tot, pcap)
        qpns = live_qpns(args.b_dev) + [s.qp.qp_num for s in a + b]
        keys = [s.mr.rkey for s in a + b] + [s.mr.lkey for s in a + b]
        regions = [(s.mr.buf, s.SIZE) for s in (a[0], b[0], b[2])]
        mut = Mutator(f"{seed}.{rounds}", corpus, qpns, keys, regions)
        fuzz_round(args, sn, sock, a, b, mut,
                   min(args.round_seconds, end - time.monotonic()), tot)
        e = a[0].e
        tot["qps_in_error"] += sum(1 for s in a + b
                                   if s.state() == e.IBV_QPS_ERR)
        for s in b[::-1] + a[::-1]:
            s.close()
        tot["rounds_done"] = rounds
        if rounds > 1 and rounds % 10 == 0:
            print(f"round {rounds}: sent {tot['sent']}", flush=True)
    sock.close()
    sn.close()
    print(f"rounds {rounds}")
    for key in ("real_completions", "real_failed", "real_failed_first"):
        print(f"{key} {tot[key]}")
    print("corpus " + " ".join(f"{k}={v}"
                               for k, v in sorted(tot["ops"].items())))
    print(f"corpus_packets {tot['corpus_packets']}")
    print("mutations " + " ".join(f"{k}={v}" for k, v in
                                  sorted(tot["mutations"].items())))
    for key in ("takeovers", "cookies", "in_epoch", "own_epoch"):
        print(f"{key} {tot[key]}")
    print(f"adopted {len(tot['adopted_epochs'])}")
    for key in ("pair_ops", "pair_failed", "qps_in_error", "sent"):
        print(f"{key} {tot[key]}")


# --- the replay command ---------------------------------------------------------------


def cmd_replay(args):
    """Stale copies of a live connection's packets: none may disturb it."""
    sn = Sniffer(args.netns, args.iface, args.port, args.src)
    sn.start()
    sn.recording = True
    time.sleep(args.capture_seconds)
    with sn.lock:
        sn.recording = False
        frames = list(sn.frames)
    sn.close()
    write_pcap(args.pcap, frames)
    corpus = corpus_from(read_pcap(args.pcap), args.port, args.src)
    print(f"corpus_packets {len(corpus)}")
    if len(corpus) < 10:
        sys.exit("pktfuzz.py: the live connection sent almost nothing")
    seed = args.seed if args.seed is not None else random.getrandbits(32)
    print(f"seed {seed}", flush=True)
    r = random.Random(seed)
    time.sleep(1)	# every captured packet is long processed now
    sock = H.netns_socket(args.netns, args.src)
    dst = (args.dst, args.port)
    sent = {"replay": 0, "epoch": 0, "malformed": 0}
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        for _ in range(8):
            p = bytearray(r.choice(corpus))
            k = r.random()
            if k < 0.4:
                kind = "replay"
            elif k < 0.7:
                # Another epoch: the receiver's challenge names it, and
                # the live sender ignores a RESET for an epoch not its own.
                kind = "epoch"
                ep = struct.unpack_from(">I", p, 4)[0]
                new = ep
                while new in (ep, 0):
                    new = r.getrandbits(32)
                p[4:8] = struct.pack(">I", new)
                if p[1] == H.OP["ACK"] and len(p) >= 24:
                    p[20:24] = struct.pack(">I", new)
            else:
                kind = "malformed"
                m = r.randrange(4)
                if m == 0:
                    del p[r.randrange(H.BASE_HLEN):]
                elif m == 1:
                    p[0] = r.choice([v for v in (0, 1, 3, 0xff)
                                     if v != H.VERSION])
                elif m == 2:
                    p[1] = r.choice([o for o in OUTSIDE_OPS
                                     if o not in H.OP.values()])
                else:
                    p[13] = (p[13] + r.choice((1, 2, 255))) & 0xff
            sock.sendto(bytes(p), dst)
            sent[kind] += 1
        time.sleep(0.01)
    sock.close()
    for k, v in sent.items():
        print(f"{k} {v}")
    print(f"sent {sum(sent.values())}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--wire", required=True, help="path of mr_wire.h")
    p.add_argument("--netns", required=True, help="host A's namespace")
    p.add_argument("--iface", required=True, help="host A's interface")
    p.add_argument("--src", required=True, help="the fuzzer's address")
    p.add_argument("--dst", required=True, help="the target's address")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pcap", required=True, help="where the capture goes")
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--round-seconds", type=float, default=40,
                   help="fuzz: seconds of fuzzing per set of QP pairs")
    p.add_argument("--capture-seconds", type=float, default=3)
    p.add_argument("--seed", type=int)
    p.add_argument("--a-dev")
    p.add_argument("--a-gidx", type=int)
    p.add_argument("--b-dev")
    p.add_argument("--b-gidx", type=int)
    p.add_argument("command", choices=("fuzz", "replay"))
    args = p.parse_args()
    H.load_wire(args.wire)
    globals()["cmd_" + args.command](args)


if __name__ == "__main__":
    main()
