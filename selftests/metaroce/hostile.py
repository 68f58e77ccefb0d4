#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Hostile MetaRoCE packets, for selftests/metaroce/hostile.sh.

Builds MetaRoCE packets as Documentation/protocol.rst and
include/metaroce/mr_wire.h describe them (the version, opcode and flag
values, and the words SYN and RESET carry, are read from mr_wire.h) and
sends them with ordinary UDP sockets, from an address of a given network
namespace, to a device's MetaRoCE port (or, with --raw, from a raw socket
with a forged source address). Each command prints "sent COUNT" (the
number of datagrams sent) on its last line.

  malformed   packets every receiver must drop as malformed, whatever its
              state (truncated, bad version, opcode, flags, lengths, ...)
  valid       well-formed packets of every opcode (from an address with no
              connection: the receiver drops them as "no connection")
  ud          UD datagrams to QPNs that have no UD QP
  epoch       well-formed packets with an epoch the receiver does not know
  dsn         packets in the receiver's epoch whose DSN is outside its data
              window (far ahead: --ahead, or long settled: --behind)
  victim      a QP pair of its own (pyverbs) between --a-dev and --b-dev,
              connected over --src; then forged WRITEs on that connection:
              to QPs that are not the connection's, from a wrong source
              QP, and with a wrong R_Key to the live QP. Checks that none
              of them wrote memory and prints what it sent as "KEY VALUE"
              lines.
  isolation   two QP pairs of its own on one connection (--src to --dst);
              a WRITE with a wrong R_Key fails the first pair while the
              second carries WRITEs before and after; prints the outcome
              as "KEY VALUE" lines.
  forge       what a forger who cannot receive at --src sends to take over
              a connection from --src: a SYN PROBE of an epoch of its own,
              a SEND to --dst-qpn (first message --msn, receive 0), then
              every --interval ms the PROBE again, a SYN with a fresh epoch
              and the SEND again, for --seconds. With --raw it spoofs --src
              from a raw socket (an off-path host); without, it sends from
              an ordinary socket bound to --src (an unprivileged process on
              that host).
  hijack      first contact under attack: a QP pair of its own between
              --b-dev and --a-dev (over --src); B's QP is connected first,
              then --forger (a command line that runs "forge", given the
              QPNs) strikes, then A's QP connects and SENDs. With
              --after-cleanup, a first pair carries a SEND, B's QP is
              destroyed and B's connection collected, and the forger
              strikes before the second pair's SEND. Prints the outcome as
              "KEY VALUE" lines.

The last three forge, on a connection of their own (--src) after one real
WRITE per QP pair opened it, SENDs in the receiver's epoch with the DSNs
the real sender would use next (an on-path attacker's view), and print
what the receiving QP reported as "KEY VALUE" lines:

  ssn         one receive posted; the first segment of a two-segment SEND
              (SSN 0), a one-segment SEND with SSN 0 too, then the first
              one's second segment
  segments    a two-segment SEND whose first segment comes twice (two
              DSNs, other bytes) before its second
  srq         QPs on a shared receive queue: an RNR rewind with a later
              message that took the SRQ's last receive first, receives
              held by QPs that are destroyed, reset, moved to the error
              state

Attacks on a live verified transfer (hostile.sh runs them while
mr_mixed runs), each printing what it sent as "KEY VALUE" lines:

  synflood    SYNs (a PROBE, a SEND and a WRITE) of fresh epochs from
              --src, a new source port each round (with --raw, forged
              from a raw socket), every --interval ms while --stop-file
              exists
  inject      --op SENDs, READ responses or atomic responses to --dev's
              RC QPs (rdma resource), MSNs brute-forced: off-path with
              fresh epochs, on-path in --dev's epoch for --src with DSNs
              outside its window
  acks        ACKs to --dst, a sender, with Rate Hints 1 Mbit/s, 2^32 - 1
              and 0, in its ACK Epoch (on-path) and in fresh ones
              (off-path), for --seconds
  junk        --count datagrams back to back from --sources forged
              addresses nobody has (raw socket in --netns)
"""

import argparse
import ctypes
import json
import os
import random
import re
import shlex
import socket
import struct
import subprocess
import sys
import time

CLONE_NEWNET = 0x40000000

BASE_HLEN = 20
MAX_PAYLOAD = 4096
QPN_MASK = 0xffffff

OP = {}
F = {}
VERSION = 1
SYN_WORD = False
SYN_ECHO = False	# version 1: SYN echoes the receiver's epoch (32 bits)
SYN_COOKIE = False	# version 2: SYN echoes the receiver's cookie (64 bits)
RESET_COOKIE = False	# version 2: a RESET carries a cookie


def load_wire(path):
    """Opcode and flag values, and which words SYN and RESET carry."""
    global VERSION, SYN_WORD, SYN_ECHO, SYN_COOKIE, RESET_COOKIE
    text = open(path, encoding="utf-8").read()
    for name, val in re.findall(r"\bMR_OP_(\w+)\s*=\s*(0x[0-9a-fA-F]+)", text):
        OP[name] = int(val, 16)
    for name, val in re.findall(r"\bMR_F_(\w+)\s*=\s*(0x[0-9a-fA-F]+)", text):
        F[name] = int(val, 16)
    m = re.search(r"#define\s+MR_WIRE_VERSION\s+(\d+)", text)
    if m:
        VERSION = int(m.group(1))
    SYN_WORD = "syn_dsn" in text
    SYN_ECHO = "syn_echo" in text
    SYN_COOKIE = "syn_cookie" in text
    RESET_COOKIE = "MR_RESET_LEN" in text
    for need in ("WRITE", "SEND", "READ_REQ", "READ_RESP", "CMP_SWAP",
                 "FETCH_ADD", "ATOMIC_RESP", "NOP", "PROBE", "ACK",
                 "ACK_REQ", "UD_SEND"):
        if need not in OP:
            sys.exit(f"hostile.py: MR_OP_{need} not found in {path}")
    for need in ("SYN", "ACKREQ", "RETX", "IMM", "INV", "SOLICIT"):
        if need not in F:
            sys.exit(f"hostile.py: MR_F_{need} not found in {path}")


# --- packet builders ---------------------------------------------------------


def base(op, hlen, plen, flags=0, epoch=1, psn=0, path=0, tsval=0,
         version=None, hlen_words=None):
    if hlen_words is None:
        hlen_words = hlen // 4
    return struct.pack(">BBHIIBBHI", VERSION if version is None else version,
                       op, flags, epoch, psn, path, hlen_words, plen, tsval)


def rc(dst=2, src=2, dsn=0, msn=0, gen=0, msg_len=0, offset=0):
    return struct.pack(">IIIIII", dst, src, dsn, (gen << 24) | msn, msg_len,
                       offset)


def now_tsval():
    """The sender clock a real sender would put in tsval (same kernel)."""
    return time.monotonic_ns() & 0xffffffff


def data_packet(op, *, flags=0, epoch=1, psn=0, path=0, dst=2, src=2, dsn=0,
                msn=0, gen=0, msg_len=None, offset=0, payload=b"",
                raddr=0x10000, rkey=0x1234, ssn=0, extra=b"", syn_dsn=None,
                syn_echo=None, cookie=None, tsval=None, version=None,
                hlen_delta=0, plen=None):
    """A sequenced RC packet; every field may be overridden."""
    if msg_len is None:
        msg_len = len(payload)
    ext = b""
    if op in (OP["WRITE"], OP["READ_REQ"], OP["CMP_SWAP"], OP["FETCH_ADD"]):
        ext = struct.pack(">QII", raddr, rkey, ssn)
        if op in (OP["CMP_SWAP"], OP["FETCH_ADD"]):
            ext += struct.pack(">QQ", 1, 0)
    elif op == OP["SEND"]:
        ext = struct.pack(">I", ssn)
    elif op == OP["ATOMIC_RESP"]:
        ext = struct.pack(">Q", 0)
    if flags & (F["IMM"] | F["INV"]):
        ext += struct.pack(">I", 0xfeedf00d)
    if SYN_WORD and flags & F["SYN"]:
        ext += struct.pack(">I", dsn if syn_dsn is None else syn_dsn)
    if SYN_ECHO and flags & F["SYN"]:
        ext += struct.pack(">I", guess_echo() if syn_echo is None else syn_echo)
    if SYN_COOKIE and flags & F["SYN"]:
        ext += struct.pack(">Q", guess_cookie() if cookie is None else cookie)
    ext += extra
    if op == OP["NOP"]:	# a NOP names nothing but its DSN
        dst = src = msn = gen = msg_len = offset = 0
    hdr = rc(dst, src, dsn, msn, gen, msg_len, offset) + ext
    hlen = BASE_HLEN + len(hdr)
    return base(op, hlen, len(payload) if plen is None else plen, flags,
                epoch, psn, path, now_tsval() if tsval is None else tsval,
                version, hlen // 4 + hlen_delta) + hdr + payload


def guess_echo():
    """The receiver's own epoch, as an off-path attacker can only guess it."""
    return random.getrandbits(32)


def guess_cookie():
    """The receiver's cookie, as one who does not receive it can only
    guess it."""
    return random.getrandbits(64)


def probe(epoch=1, psn=0, path=0, flags=0, syn_dsn=0):
    ext = b""
    if SYN_WORD and flags & F["SYN"]:
        ext = struct.pack(">I", syn_dsn)
    if SYN_ECHO and flags & F["SYN"]:
        ext += struct.pack(">I", guess_echo())
    if SYN_COOKIE and flags & F["SYN"]:
        ext += struct.pack(">Q", guess_cookie())
    hlen = BASE_HLEN + len(ext)
    return base(OP["PROBE"], hlen, 0, flags, epoch, psn, path,
                now_tsval()) + ext


def ack(epoch=1, ack_epoch=1, dsn_cum=0, paths=None, qps=None, npath=None,
        nqp=None, reserved=0, flags=0, rate=0):
    """An ACK with path blocks (path, base) and QP blocks (status, qpn, msn,
    aux)."""
    paths = paths or []
    qps = qps or []
    body = struct.pack(">IIIBBH", ack_epoch, dsn_cum, rate,
                       len(paths) if npath is None else npath,
                       len(qps) if nqp is None else nqp, reserved)
    for p, pbase in paths:
        body += struct.pack(">BBHHHII", p, 0, 0, 0, 0, pbase, 0)
        body += b"\0" * 32
    for status, qpn, msn, aux in qps:
        body += struct.pack(">III", (status << 24) | qpn, msn, aux)
    return base(OP["ACK"], BASE_HLEN + len(body), 0, flags, epoch) + body


def ack_req(epoch=1, dst=2, src=2, psn=0):
    body = struct.pack(">II", dst, src)
    return base(OP["ACK_REQ"], BASE_HLEN + len(body), 0, 0, epoch, psn) + body


def ud_send(dst, src=2, qkey=0, payload=b"x" * 64, reserved=0, flags=0):
    body = struct.pack(">IIII", dst, src, qkey, reserved)
    return base(OP["UD_SEND"], BASE_HLEN + len(body), len(payload),
                flags) + body + payload


def reset(epoch=1, unknown=1, cookie=None):
    body = struct.pack(">I", unknown)
    if RESET_COOKIE:
        body += struct.pack(">Q", guess_cookie() | 1 if cookie is None
                            else cookie)
    return base(OP["RESET"], BASE_HLEN + len(body), 0, 0, epoch) + body


# --- catalogues ----------------------------------------------------------------


def malformed():
    """(name, datagram): every one is malformed for any receiver."""
    w, s = OP["WRITE"], OP["SEND"]
    good = data_packet(w, payload=b"A" * 100)
    out = [("empty", b""), ("one byte", b"\x01"),
           ("base header minus one", good[:BASE_HLEN - 1]),
           ("base header only", good[:BASE_HLEN]),
           ("header cut short", good[:BASE_HLEN + 10]),
           ("payload cut short", good[:-1]),
           ("payload longer than plen", good + b"B")]
    for v in sorted({0, 1, VERSION + 1, 0xff} - {VERSION}):
        out.append((f"version {v}", data_packet(w, payload=b"A" * 8,
                                                version=v)))
    known = set(OP.values())
    for op in (0x00, 0x0a, 0x0f, 0x13, 0x1f, 0x21, 0x7f, 0x80, 0xff):
        if op not in known:
            out.append((f"opcode {op:#x}", base(op, BASE_HLEN, 0)))
    out += [
        ("unknown flag 0x8000", data_packet(w, flags=0x8000, payload=b"A")),
        ("unknown flag 0x0040", data_packet(w, flags=0x0040, payload=b"A")),
        ("IMM on READ_REQ", data_packet(OP["READ_REQ"], flags=F["IMM"],
                                        msg_len=64)),
        ("INV on WRITE", data_packet(w, flags=F["INV"], payload=b"A")),
        ("IMM and INV on SEND", data_packet(s, flags=F["IMM"] | F["INV"],
                                            payload=b"A")),
        ("SYN on ACK", ack(flags=F["SYN"])),
        ("ACKREQ on UD_SEND", ud_send(0x100, flags=F["ACKREQ"])),
        ("hlen one word too many", data_packet(w, payload=b"A", hlen_delta=1)),
        ("hlen one word short", data_packet(w, payload=b"A", hlen_delta=-1)),
        ("hlen 0", data_packet(w, payload=b"A", hlen_delta=-15)),
        ("plen beyond the datagram", data_packet(w, payload=b"A" * 50,
                                                 msg_len=100, plen=100)),
        ("plen on READ_REQ", data_packet(OP["READ_REQ"], msg_len=64,
                                         payload=b"12345678")),
        ("payload above 4096", data_packet(w, payload=b"P" * (MAX_PAYLOAD + 4))),
        ("epoch 0", data_packet(w, epoch=0, payload=b"A")),
        ("path 16", data_packet(w, path=16, payload=b"A")),
        ("path 255", data_packet(w, path=255, payload=b"A")),
        ("psn on ACK_REQ", ack_req(psn=5)),
        ("dst QPN above 24 bits", data_packet(w, dst=QPN_MASK + 1,
                                              payload=b"A")),
        ("src QPN above 24 bits", data_packet(w, src=0xffffffff,
                                              payload=b"A")),
        ("dst QPN 0", data_packet(w, dst=0, payload=b"A")),
        ("dst QPN 1", data_packet(s, dst=1, payload=b"A")),
        ("src QPN 1", data_packet(w, src=1, payload=b"A")),
        ("msg_len above 2 GiB", data_packet(w, payload=b"A",
                                            msg_len=0x80000001)),
        ("offset + plen beyond msg_len", data_packet(w, payload=b"A" * 10,
                                                     msg_len=100, offset=95)),
        ("empty segment of a non-empty message", data_packet(s, msg_len=10)),
        ("READ_REQ with an offset", data_packet(OP["READ_REQ"], msg_len=64,
                                                offset=8)),
        ("FETCH_ADD of 16 bytes", data_packet(OP["FETCH_ADD"], msg_len=16)),
        ("CMP_SWAP to an unaligned address", data_packet(
            OP["CMP_SWAP"], msg_len=8, raddr=0x10003)),
        ("ATOMIC_RESP of 4 bytes", data_packet(OP["ATOMIC_RESP"], msg_len=4)),
        ("RETH reserved word", data_packet(w, payload=b"A", ssn=7)),
        ("NOP naming a QP", data_packet(OP["NOP"])[:BASE_HLEN] +
         rc(dst=5, src=5)),
        ("SOLICIT on NOP", data_packet(OP["NOP"], flags=F["SOLICIT"])),
        ("ACK with 17 path blocks", ack(npath=17)),
        ("ACK with 17 QP blocks", ack(nqp=17)),
        ("ACK reserved field", ack(reserved=1)),
        ("ACK blocks cut short", ack(paths=[(0, 0)], npath=2)),
        ("ACK path block twice", ack(paths=[(1, 0), (1, 0)])),
        ("ACK path block 16", ack(paths=[(16, 0)])),
        ("ACK QP block status 9", ack(qps=[(9, 5, 0, 0)])),
        ("ACK QP block QPN 1", ack(qps=[(0, 1, 0, 0)])),
        ("ACK RNR timer 32", ack(qps=[(1, 5, 0, 32)])),
        ("ACK aux on an OK block", ack(qps=[(0, 5, 0, 1)])),
        ("ACK epoch 0", ack(ack_epoch=0)),
        ("ACK_REQ to QPN 1", ack_req(dst=1)),
        ("UD reserved word", ud_send(0x100, reserved=1)),
        ("UD QPN above 24 bits", ud_send(QPN_MASK + 1)),
    ]
    if "RESET" in OP:
        out.append(("RESET of epoch 0", reset(unknown=0)))
    if RESET_COOKIE:
        out.append(("RESET with cookie 0", reset(unknown=7, cookie=0)))
    return out


def valid():
    """Well-formed packets of every opcode, as a peer would send them."""
    w = OP["WRITE"]
    out = [
        ("WRITE", data_packet(w, payload=b"W" * 256, dst=0x10, src=0x11)),
        ("WRITE with IMM", data_packet(w, flags=F["IMM"], payload=b"W" * 8)),
        ("WRITE, SYN", data_packet(w, flags=F["SYN"], payload=b"W" * 8)),
        ("WRITE, full segment", data_packet(w, payload=b"F" * 1024,
                                            msg_len=8192, offset=1024)),
        ("SEND", data_packet(OP["SEND"], payload=b"S" * 64)),
        ("SEND with INV", data_packet(OP["SEND"], flags=F["INV"],
                                      payload=b"S")),
        ("empty SEND", data_packet(OP["SEND"])),
        ("READ_REQ", data_packet(OP["READ_REQ"], msg_len=4096)),
        ("READ_RESP", data_packet(OP["READ_RESP"], payload=b"R" * 64)),
        ("CMP_SWAP", data_packet(OP["CMP_SWAP"], msg_len=8)),
        ("FETCH_ADD", data_packet(OP["FETCH_ADD"], msg_len=8)),
        ("ATOMIC_RESP", data_packet(OP["ATOMIC_RESP"], msg_len=8)),
        ("NOP", data_packet(OP["NOP"])),
        ("PROBE", probe(flags=F["ACKREQ"])),
        ("ACK", ack(paths=[(0, 5), (3, 7)], qps=[(0, 5, 3, 0)])),
        ("ACK_REQ", ack_req(dst=5, src=6)),
    ]
    if "RESET" in OP:
        out.append(("RESET", reset(unknown=0x12345678)))
    return out


def wrong_epoch(epoch):
    """Well-formed packets whose epoch is not the receiver's."""
    w = OP["WRITE"]
    out = [
        ("WRITE", data_packet(w, epoch=epoch, payload=b"E" * 64)),
        ("WRITE, SYN", data_packet(w, flags=F["SYN"], epoch=epoch,
                                   payload=b"E" * 64)),
        ("SEND", data_packet(OP["SEND"], epoch=epoch, payload=b"E")),
        ("READ_REQ", data_packet(OP["READ_REQ"], epoch=epoch, msg_len=64)),
        ("NOP, SYN", data_packet(OP["NOP"], flags=F["SYN"], epoch=epoch)),
        ("PROBE", probe(epoch=epoch, flags=F["ACKREQ"])),
        ("PROBE, SYN", probe(epoch=epoch, flags=F["SYN"] | F["ACKREQ"])),
        ("ACK of another epoch", ack(epoch=epoch, ack_epoch=epoch,
                                     paths=[(0, 0)])),
    ]
    if "RESET" in OP:
        out.append(("RESET of another epoch", reset(epoch=epoch,
                                                    unknown=epoch)))
    return out


# --- sending -------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)


def netns_socket(netns, src, raw=False):
    """A UDP socket bound to (src, any port) in network namespace netns
    (with RAW, a raw IP socket there)."""
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{netns}", os.O_RDONLY)
    try:
        if _libc.setns(target, CLONE_NEWNET):
            raise OSError(ctypes.get_errno(), "setns " + netns)
        try:
            if raw:
                sock = socket.socket(socket.AF_INET, socket.SOCK_RAW,
                                     socket.IPPROTO_RAW)
            else:
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                sock.bind((src, 0))
        finally:
            if _libc.setns(own, CLONE_NEWNET):
                raise OSError(ctypes.get_errno(), "setns back")
    finally:
        os.close(own)
        os.close(target)
    return sock


def send_all(args, packets, repeat=1):
    if not args.netns:
        sys.exit("hostile.py: --netns is needed")
    sock = netns_socket(args.netns, args.src)
    n = 0
    for _ in range(repeat):
        for name, pkt in packets:
            if args.verbose:
                print(f"{name}: {len(pkt)} bytes")
            sock.sendto(pkt, (args.dst, args.port))
            n += 1
            time.sleep(0.002)	# no bursts: they would be counted as backlog drops
    sock.close()
    return n


# --- debugfs telemetry -------------------------------------------------------------


def peer_entries(dev):
    """DEV's debugfs peers: one dict per peer (its "key value" pairs and
    "paths", path id -> packets sent)."""
    entries = []
    col = None
    with open(f"/sys/kernel/debug/metaroce/{dev}/peers", encoding="ascii") as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "path":	# the path table's header names its columns
                col = w.index("tx_pkts")
                continue
            if w[0] == "peer":
                entries.append({"paths": {}})
            if not entries:
                continue
            if w[0].isdigit():
                if col is None:
                    sys.exit("hostile.py: a path line before its header")
                entries[-1]["paths"][int(w[0])] = int(w[col])
            else:
                entries[-1].update(zip(w[0::2], w[1::2]))
    return entries


def peer_entry(dev, remote, local=None):
    """DEV's debugfs entry for the peer REMOTE (with local address LOCAL)."""
    for e in peer_entries(dev):
        if e.get("peer") == f"::ffff:{remote}" and \
                (local is None or e.get("local") == f"::ffff:{local}"):
            return e
    return None


def wait_peer(dev, remote, local=None, quiet=False, timeout=30,
              receiving=True):
    """Waits for the entry: with receiving, one that has taken the peer's
    epoch (a pure sender never does: it only receives ACKs); with quiet,
    one with dsn_una == dsn_nxt too."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        e = peer_entry(dev, remote, local)
        if e and (not receiving or int(e.get("rx_epoch", "0"), 16)) and \
                (not quiet or e["dsn_una"] == e["dsn_nxt"]):
            return e
        time.sleep(0.2)
    sys.exit(f"hostile.py: no (settled) peer {remote} in {dev}'s debugfs")


# --- commands --------------------------------------------------------------------


def cmd_malformed(args):
    print(f"sent {send_all(args, malformed(), args.repeat)}")


def cmd_valid(args):
    print(f"sent {send_all(args, valid(), args.repeat)}")


def cmd_ud(args):
    pkts = [(f"UD to QPN {q:#x}", ud_send(q, qkey=0x11111111))
            for q in list(range(2, 66)) + [0x7ff, 0xabcdef, QPN_MASK]]
    print(f"sent {send_all(args, pkts, args.repeat)}")


def cmd_epoch(args):
    e = peer_entry(args.dev, args.src)
    live = int(e["rx_epoch"], 16) if e else 0
    pkts = []
    for _ in range(args.repeat):
        # One epoch per packet, as an attacker trying its luck would send.
        for name, _ in wrong_epoch(1):
            epoch = live
            while epoch in (live, 0):
                epoch = random.getrandbits(32)
            pkts += [p for p in wrong_epoch(epoch) if p[0] == name]
    print(f"syn {sum(1 for name, _ in pkts if 'SYN' in name)}")
    print(f"sent {send_all(args, pkts)}")


def cmd_dsn(args):
    """Forged data in the receiver's epoch, DSN outside its window: the
    epoch comes from the receiver's telemetry (an on-path attacker sees it),
    the DSN range from the sender's. PSNs are long settled, so that the
    receiver's path state does not move."""
    rx = wait_peer(args.dev, args.src)
    tx = wait_peer(args.peer_dev, args.dst, args.src, receiving=False)
    epoch = int(rx["rx_epoch"], 16)
    una, nxt = int(tx["dsn_una"], 16), int(tx["dsn_nxt"], 16)
    psn = (epoch - (1 << 20)) & 0xffffffff
    pkts = []
    for i in range(args.repeat):
        if args.ahead:
            dsn = (nxt + 100000 + i) & 0xffffffff
        else:
            dsn = (una - 100000 - i) & 0xffffffff
        pkts.append(("WRITE", data_packet(OP["WRITE"], epoch=epoch, psn=psn,
                                          path=0, dsn=dsn, dst=2, src=2,
                                          payload=b"D" * 64)))
    print(f"sent {send_all(args, pkts)}")


class Side:
    """One end of an RC QP pair (pyverbs): context, PD, CQ, QP and MR."""

    SIZE = 4096

    def __init__(self, dev, gidx, share=None, srq=False):
        """With SHARE (a Side of the same device), only the QP is new: it
        uses SHARE's context, PD, CQ and MR. With SRQ, the QP takes its
        receives from a shared receive queue (SHARE's, if given)."""
        from pyverbs.cq import CQ
        from pyverbs.device import Context
        from pyverbs.mr import MR
        from pyverbs.pd import PD
        from pyverbs.qp import QP, QPCap, QPInitAttr
        from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
        from mr_pyverbs import verbs_enums
        e = verbs_enums()

        self.e = e
        self.access = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
                       e.IBV_ACCESS_REMOTE_READ)
        self.gidx = gidx
        self.own = share is None
        if share:
            self.ctx, self.pd, self.cq = share.ctx, share.pd, share.cq
        else:
            self.ctx = Context(name=dev)
            self.pd = PD(self.ctx)
            self.cq = CQ(self.ctx, 64)
        self.srq = None
        if srq:
            self.srq = share.srq if share else \
                SRQ(self.pd, SrqInitAttr(SrqAttr(max_wr=16, max_sge=1)))
        cap = QPCap(max_send_wr=32, max_recv_wr=0 if srq else 8,
                    max_send_sge=1, max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC,
                                         scq=self.cq, rcq=self.cq, cap=cap,
                                         srq=self.srq))
        self.mr = share.mr if share else MR(self.pd, self.SIZE, self.access)

    def close(self):
        """Destroy the QP, and what it does not share."""
        self.qp.close()
        if self.own:
            for obj in (self.mr, self.srq, self.cq, self.pd, self.ctx):
                if obj:
                    obj.close()

    def post_recv(self, wr_id, offset, length):
        """A receive of our MR's [offset, +length), to the QP or its SRQ."""
        from pyverbs.wr import SGE, RecvWR

        wr = RecvWR(wr_id=wr_id, num_sge=1,
                    sg=[SGE(self.mr.buf + offset, length, self.mr.lkey)])
        (self.srq or self.qp).post_recv(wr)

    def to_state(self, state):
        """Move the QP to STATE (an IBV_QPS_* value)."""
        from pyverbs.qp import QPAttr

        self.qp.modify(QPAttr(qp_state=state), self.e.IBV_QP_STATE)

    def drain(self, quiet=1.0):
        """Every work completion on our CQ until none came for QUIET
        seconds, as (wr_id, status, byte_len) triples."""
        out = []
        last = time.monotonic()
        while time.monotonic() - last < quiet:
            got, wcs = self.cq.poll(num_entries=16)
            if got:
                out += [(wc.wr_id, wc.status, wc.byte_len)
                        for wc in wcs[:got]]
                last = time.monotonic()
            else:
                time.sleep(0.01)
        return out

    def connect(self, peer):
        """INIT, RTR and RTS towards PEER's QP."""
        from pyverbs.addr import AHAttr, GlobalRoute
        from pyverbs.qp import QPAttr
        e = self.e

        attr = QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1)
        attr.pkey_index = 0
        attr.qp_access_flags = self.access
        self.qp.to_init(attr)
        gr = GlobalRoute(dgid=peer.ctx.query_gid(1, peer.gidx),
                         sgid_index=self.gidx)
        attr = QPAttr(qp_state=e.IBV_QPS_RTR)
        attr.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
        attr.dest_qp_num = peer.qp.qp_num
        attr.path_mtu = e.IBV_MTU_1024
        attr.rq_psn = 0
        attr.max_dest_rd_atomic = 1
        attr.min_rnr_timer = 12
        self.qp.to_rtr(attr)
        attr = QPAttr(qp_state=e.IBV_QPS_RTS)
        attr.sq_psn = 0
        attr.timeout = 14
        attr.retry_cnt = 7
        attr.rnr_retry = 7
        attr.max_rd_atomic = 1
        self.qp.to_rts(attr)

    def state(self):
        attr, _ = self.qp.query(self.e.IBV_QP_STATE)
        return attr.qp_state

    def post_write(self, peer, offset, length, wr_id=0, rkey=None):
        """A signaled RDMA WRITE of our MR's [offset, +length) to the same
        place in PEER's MR (with RKEY instead of PEER's, if given)."""
        from pyverbs.wr import SGE, SendWR
        e = self.e

        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                    sg=[SGE(self.mr.buf + offset, length, self.mr.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(peer.mr.rkey if rkey is None else rkey,
                       peer.mr.buf + offset)
        self.qp.post_send(wr)

    def completions(self, n, timeout=30, must=True):
        """N work completions from our CQ, as (wr_id, status) pairs (fewer
        if they do not come within TIMEOUT seconds and not MUST)."""
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < n:
            got, wcs = self.cq.poll(num_entries=n - len(out))
            out += [(wc.wr_id, wc.status) for wc in wcs[:got]]
            if not got:
                if time.monotonic() > deadline:
                    if not must:
                        break
                    sys.exit(f"hostile.py: {len(out)} of {n} completions "
                             f"within {timeout} s")
                time.sleep(0.01)
        return out


def cmd_victim(args):
    from mr_pyverbs import verbs_enums
    e = verbs_enums()

    size = Side.SIZE
    a = Side(args.a_dev, args.a_gidx)
    b = Side(args.b_dev, args.b_gidx)
    a.connect(b)
    b.connect(a)

    # One real WRITE (MSN 0) opens the connection.
    pattern = bytes((i * 7) & 0xff for i in range(size))
    b.mr.write(b"\0" * size, size)
    a.mr.write(pattern, size)
    a.post_write(b, 0, 64)
    (_, status), = a.completions(1)
    if status != e.IBV_WC_SUCCESS:
        sys.exit(f"hostile.py: the real WRITE failed: {status}")
    expect = pattern[:64] + b"\0" * (size - 64)
    if b.mr.read(size, 0) != expect:
        sys.exit("hostile.py: the real WRITE did not land")

    rx = wait_peer(args.b_dev, args.src)
    tx = wait_peer(args.a_dev, args.dst, args.src, quiet=True,
                   receiving=False)
    epoch = int(rx["rx_epoch"], 16)
    dsn = int(tx["dsn_nxt"], 16)
    used = [p for p, n in tx["paths"].items() if n > 0]
    if not used:
        sys.exit("hostile.py: no path of the connection carried a packet")
    path = used[0]
    psn = (epoch - (1 << 20)) & 0xffffffff
    print(f"connection {args.src} -> {args.dst}: epoch {epoch:#010x}, "
          f"next DSN {dsn:#010x}, path {path}; QPs {a.qp.qp_num:#x} -> "
          f"{b.qp.qp_num:#x}; MR {b.mr.buf:#x} rkey {b.mr.rkey:#x}")

    def write(dst, src, rkey, payload=b"\xee" * 64):
        nonlocal dsn
        pkt = data_packet(OP["WRITE"], epoch=epoch, psn=psn, path=path,
                          dsn=dsn, dst=dst, src=src, msn=1, raddr=b.mr.buf,
                          rkey=rkey, payload=payload)
        dsn = (dsn + 1) & 0xffffffff
        return ("forged WRITE", pkt)

    # Not the connection's QPs (every other QPN nearby: unknown QPs and
    # the QPs of other connections, e.g. a transfer that runs meanwhile).
    others = [write(q, a.qp.qp_num, b.mr.rkey)
              for q in range(2, b.qp.qp_num + 64) if q != b.qp.qp_num]
    others.append(write(0xfedcba, a.qp.qp_num, b.mr.rkey))
    wrong_src = [write(b.qp.qp_num, (a.qp.qp_num + 0x1000) & QPN_MASK,
                       b.mr.rkey)]
    n = send_all(args, others + wrong_src)
    time.sleep(1)
    if b.mr.read(size, 0) != expect:
        sys.exit("hostile.py: FAIL: a WRITE not from the QP's peer landed")
    if b.state() != e.IBV_QPS_RTS:
        sys.exit(f"hostile.py: FAIL: the QP is in state {b.state()} after "
                 "WRITEs that were not its peer's")
    print(f"not_its_qp {len(others)}")
    print(f"wrong_source_qp {len(wrong_src)}")

    rkey = b.mr.rkey
    while rkey == b.mr.rkey:
        rkey = random.getrandbits(32)
    n += send_all(args, [write(b.qp.qp_num, a.qp.qp_num, rkey)])
    deadline = time.monotonic() + 10
    while b.state() == e.IBV_QPS_RTS and time.monotonic() < deadline:
        time.sleep(0.1)
    if b.mr.read(size, 0) != expect:
        sys.exit("hostile.py: FAIL: a WRITE with a wrong R_Key landed")
    print("bad_rkey 1")
    print(f"victim_state {b.state()}")
    print(f"requester_state {a.state()}")
    print(f"sent {n}")


def cmd_isolation(args):
    """Two QP pairs on one connection; a WRITE with a wrong R_Key on the
    first fails that pair only, while the second carries WRITEs before and
    after it."""
    from mr_pyverbs import verbs_enums
    e = verbs_enums()

    size, chunk = Side.SIZE, 128
    a1, b1 = Side(args.a_dev, args.a_gidx), Side(args.b_dev, args.b_gidx)
    a2, b2 = Side(args.a_dev, args.a_gidx), Side(args.b_dev, args.b_gidx)
    for x, y in ((a1, b1), (b1, a1), (a2, b2), (b2, a2)):
        x.connect(y)
    e_b = peer_entry(args.b_dev, args.src, args.dst)
    print(f"shared_qps {e_b['qps'] if e_b else 0}")

    pattern = bytes((i * 13 + 5) & 0xff for i in range(size))
    a2.mr.write(pattern, size)
    b2.mr.write(b"\0" * size, size)
    b1.mr.write(b"\0" * size, size)
    a1.mr.write(b"\x5a" * size, size)
    half = size // chunk // 2
    for i in range(half):
        a2.post_write(b2, i * chunk, chunk, wr_id=i)
    rkey = b1.mr.rkey
    while rkey == b1.mr.rkey:
        rkey = random.getrandbits(32)
    a1.post_write(b1, 0, 64, wr_id=1000, rkey=rkey)
    (_, status), = a1.completions(1)
    print(f"bad_write_status {status}")
    deadline = time.monotonic() + 10
    while b1.state() != e.IBV_QPS_ERR and time.monotonic() < deadline:
        time.sleep(0.1)
    for i in range(half, 2 * half):
        a2.post_write(b2, i * chunk, chunk, wr_id=i)
    done = a2.completions(2 * half)
    ok = sum(1 for _, st in done if st == e.IBV_WC_SUCCESS)
    print(f"healthy_ok {ok}")
    print(f"healthy_posted {2 * half}")
    print(f"healthy_data_ok {int(b2.mr.read(size, 0) == pattern)}")
    print(f"bad_data_landed {int(b1.mr.read(size, 0) != bytes(size))}")
    print(f"errored_state {b1.state()}")
    print(f"requester_errored_state {a1.state()}")
    print(f"healthy_state_a {a2.state()}")
    print(f"healthy_state_b {b2.state()}")


# --- first contact under attack ---------------------------------------------------


def csum16(data):
    """The Internet checksum of DATA."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f">{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def spoofed_udp(src, dst, sport, dport, payload):
    """An IPv4 datagram from SRC (any address) to DST, checksums right."""
    s, d = socket.inet_aton(src), socket.inet_aton(dst)
    ulen = 8 + len(payload)
    pseudo = s + d + struct.pack(">BBH", 0, socket.IPPROTO_UDP, ulen)
    udp = struct.pack(">HHHH", sport, dport, ulen, 0) + payload
    ucs = csum16(pseudo + udp) or 0xffff
    udp = udp[:6] + struct.pack(">H", ucs) + udp[8:]
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + ulen,
                     random.getrandbits(16), 0x4000, 64, socket.IPPROTO_UDP,
                     0, s, d)
    ip = ip[:10] + struct.pack(">H", csum16(ip)) + ip[12:]
    return ip + udp


class Forger:
    """Sends as --src: from an ordinary socket bound to it (in the current
    network namespace: an unprivileged process on that host), or, with
    --raw, from a raw socket that spoofs it (an off-path host)."""

    def __init__(self, args):
        self.args = args
        self.sent = 0
        if args.raw:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_RAW,
                                      socket.IPPROTO_RAW)
            self.sport = random.randrange(49152, 65536)
        else:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.sock.bind((args.src, 0))

    def send(self, pkt):
        a = self.args
        if a.raw:
            self.sock.sendto(spoofed_udp(a.src, a.dst, self.sport, a.port,
                                         pkt), (a.dst, 0))
        else:
            self.sock.sendto(pkt, (a.dst, a.port))
        self.sent += 1


def cmd_forge(args):
    f = Forger(args)
    print(f"uid {os.getuid()}")
    epoch = 0
    while epoch == 0:
        epoch = random.getrandbits(32)
    psn = epoch
    dsn = epoch
    syn = F["SYN"] | F["ACKREQ"]
    sends = 0

    def forged_probe(ep):
        nonlocal psn
        f.send(probe(epoch=ep, psn=psn, flags=syn, syn_dsn=epoch))
        psn = (psn + 1) & 0xffffffff

    def forged_send():
        nonlocal psn, dsn, sends
        f.send(data_packet(OP["SEND"], flags=syn, epoch=epoch, psn=psn,
                           dst=args.dst_qpn, src=args.src_qpn, dsn=dsn,
                           msn=args.msn, ssn=0, payload=b"F" * 64,
                           syn_dsn=epoch))
        psn = (psn + 1) & 0xffffffff
        dsn = (dsn + 1) & 0xffffffff
        sends += 1

    end = time.monotonic() + args.seconds
    forged_probe(epoch)
    forged_send()
    # The first strike is out: hijack waits for this line.
    print(f"forged_epoch {epoch}", flush=True)
    while time.monotonic() < end:
        time.sleep(args.interval / 1000)
        forged_probe(epoch)		# keep its epoch alive
        forged_probe(random.getrandbits(32) | 1)	# and try fresh ones
        forged_send()
    print(f"forged_sends {sends}")
    print(f"sent {f.sent}")


def no_peer(dev, remote):
    """Waits until DEV has no connection to REMOTE (the idle clean-up)."""
    deadline = time.monotonic() + 30
    while peer_entry(dev, remote) is not None:
        if time.monotonic() > deadline:
            sys.exit(f"hostile.py: {dev} kept its connection to {remote}")
        time.sleep(0.5)


def cmd_hijack(args):
    """First contact with a forger striking first; see the module doc."""
    from mr_pyverbs import verbs_enums
    e = verbs_enums()
    from pyverbs.wr import RecvWR, SGE, SendWR

    size = Side.SIZE
    pattern = bytes((i * 11 + 3) & 0xff for i in range(size))

    def post_recv(side):
        side.qp.post_recv(RecvWR(wr_id=7, num_sge=1,
                                 sg=[SGE(side.mr.buf, size, side.mr.lkey)]))

    def post_send(side, length):
        side.qp.post_send(SendWR(wr_id=9, opcode=e.IBV_WR_SEND, num_sge=1,
                                 sg=[SGE(side.mr.buf, length, side.mr.lkey)],
                                 send_flags=e.IBV_SEND_SIGNALED))

    a0 = None
    if args.after_cleanup:
        # A first pair: both connections up, A's acknowledged long since.
        a0, b0 = Side(args.a_dev, args.a_gidx), Side(args.b_dev, args.b_gidx)
        a0.connect(b0)
        b0.connect(a0)
        post_recv(b0)
        a0.mr.write(pattern, size)
        post_send(a0, 512)
        (_, st), = a0.completions(1)
        b0.completions(1)
        if st != e.IBV_WC_SUCCESS:
            sys.exit(f"hostile.py: the first pair's SEND failed: {st}")
        # B's QP goes, and with it, once idle, B's connection from A.
        b0.close()
        no_peer(args.b_dev, args.src)
        print("b_connection_collected 1")
    a = Side(args.a_dev, args.a_gidx, share=a0)
    b = Side(args.b_dev, args.b_gidx)
    b.mr.write(b"\0" * size, size)
    a.mr.write(pattern, size)
    b.connect(a)		# B's connection from A: no epoch known yet
    post_recv(b)
    cmd = shlex.split(args.forger) + [
        "--dst-qpn", str(b.qp.qp_num), "--src-qpn", str(a.qp.qp_num),
        "--msn", "0", "--seconds", str(args.seconds), "forge"]
    forger = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    # It strikes first: wait for its first packets, and see what B made
    # of them.
    head = []
    while True:
        line = forger.stdout.readline()
        if not line:
            sys.exit("hostile.py: the forger ended before striking:\n" +
                     "".join(head))
        head.append(line)
        if line.startswith("forged_epoch "):
            forged = int(line.split()[1])
            break
    time.sleep(0.2)
    rx = peer_entry(args.b_dev, args.src, args.dst)
    adopted = rx is not None and int(rx.get("rx_epoch", "0"), 16) == forged
    t0 = time.monotonic()
    a.connect(b)
    post_send(a, 1000)
    a_wc = a.completions(1, timeout=args.seconds + 20, must=False)
    took = time.monotonic() - t0
    out, _ = forger.communicate(timeout=args.seconds + 60)
    for line in "".join(head).splitlines() + out.splitlines():
        print(f"forger: {line}")
    if forger.returncode:
        sys.exit(f"hostile.py: the forger failed ({forger.returncode})")
    # Whatever B completed, within a second of the forger's last packet.
    got, wcs = b.cq.poll(num_entries=8)
    deadline = time.monotonic() + 1
    recvs = [w for w in wcs[:got]]
    while time.monotonic() < deadline:
        got, wcs = b.cq.poll(num_entries=8)
        recvs += wcs[:got]
        time.sleep(0.05)
    data = b.mr.read(size, 0)
    rx = peer_entry(args.b_dev, args.src, args.dst)
    tx = peer_entry(args.a_dev, args.dst, args.src)
    real = rx is not None and tx is not None and \
        int(rx.get("rx_epoch", "0"), 16) == int(tx.get("epoch", "1"), 16)
    print(f"b_adopted_forged {int(adopted)}")
    print(f"a_send_status {a_wc[0][1] if a_wc else -1}")
    print(f"a_send_ms {int(took * 1000)}")
    print(f"b_receives {len(recvs)}")
    print(f"b_receive_ok {int(len(recvs) == 1 and recvs[0].status == e.IBV_WC_SUCCESS and recvs[0].byte_len == 1000)}")
    print(f"b_data_real {int(data[:1000] == pattern[:1000])}")
    print(f"b_data_forged {int(data[:64] == b'F' * 64)}")
    print(f"b_epoch_real {int(real)}")
    if rx is not None:
        print(f"b_rx_epoch {int(rx.get('rx_epoch', '0'), 16)}")
    for side in (a, b) + ((a0,) if a0 else ()):
        side.close()
class Forge:
    """SENDs from the --src side of a live connection, in the receiver's
    epoch for it, with the DSNs that side would use next and a PSN long
    settled (so that the receiver's path state does not move): what an
    on-path attacker can send. Every real transfer on the connection must
    be over before: its next DSNs are taken."""

    def __init__(self, args):
        rx = wait_peer(args.b_dev, args.src)
        tx = wait_peer(args.a_dev, args.dst, args.src, quiet=True,
                       receiving=False)
        used = [p for p, n in tx["paths"].items() if n > 0]
        if not used:
            sys.exit("hostile.py: no path of the connection carried a packet")
        self.epoch = int(rx["rx_epoch"], 16)
        self.dsn = int(tx["dsn_nxt"], 16)
        self.path = used[0]
        self.psn = (self.epoch - (1 << 20)) & 0xffffffff
        self.dst = (args.dst, args.port)
        self.sock = netns_socket(args.netns, args.src)
        self.sent = 0

    def send(self, a, b, msn, msg_len, offset, payload, ssn, gen=0):
        """Segment (OFFSET, PAYLOAD) of SEND MSN of Side A's QP to Side
        B's."""
        pkt = data_packet(OP["SEND"], epoch=self.epoch, psn=self.psn,
                          path=self.path, dsn=self.dsn, dst=b.qp.qp_num,
                          src=a.qp.qp_num, msn=msn, gen=gen, msg_len=msg_len,
                          offset=offset, payload=payload, ssn=ssn)
        self.dsn = (self.dsn + 1) & 0xffffffff
        self.sock.sendto(pkt, self.dst)
        self.sent += 1
        time.sleep(0.005)


def open_pairs(args, n, srq=False):
    """N QP pairs between --a-dev and --b-dev on the --src connection (B's
    on one SRQ if asked), each opened with one real WRITE (MSN 0)."""
    from mr_pyverbs import verbs_enums
    e = verbs_enums()

    a = [Side(args.a_dev, args.a_gidx)]
    b = [Side(args.b_dev, args.b_gidx, srq=srq)]
    for _ in range(n - 1):
        a.append(Side(args.a_dev, args.a_gidx, share=a[0]))
        b.append(Side(args.b_dev, args.b_gidx, share=b[0], srq=srq))
    for x, y in zip(a, b):
        x.connect(y)
        y.connect(x)
    for i, (x, y) in enumerate(zip(a, b)):
        x.post_write(y, Side.SIZE - 64, 64, wr_id=900 + i)
        (_, status), = x.completions(1)
        if status != e.IBV_WC_SUCCESS:
            sys.exit(f"hostile.py: the real WRITE of pair {i} failed: {status}")
    return a, b


def recv_report(wcs, prefix):
    """Print what the receive completions WCS were."""
    print(f"{prefix}_completions {len(wcs)}")
    if wcs:
        print(f"{prefix}_status {wcs[0][1]}")
        print(f"{prefix}_len {wcs[0][2]}")


def cmd_ssn(args):
    """Two SENDs with SSN 0 and one receive: the first one completes on it,
    the second fails the QP (invalid request), which completes nothing
    else and never retires a receive twice."""
    (a,), (b,) = open_pairs(args, 1)
    b.mr.write(b"\0" * 4096, 4096)
    b.post_recv(1, 0, 4096)
    f = Forge(args)
    seg0, seg1 = b"\x11" * 1024, b"\x22" * 1024
    f.send(a, b, 1, 2048, 0, seg0, 0)
    f.send(a, b, 2, 100, 0, b"\x33" * 100, 0)
    f.send(a, b, 1, 2048, 1024, seg1, 0)
    wcs = b.drain()
    recv_report(wcs, "recv")
    print(f"recv_data_ok {int(b.mr.read(2048, 0) == seg0 + seg1)}")
    deadline = time.monotonic() + 10
    while b.state() != b.e.IBV_QPS_ERR and time.monotonic() < deadline:
        time.sleep(0.1)
    print(f"victim_state {b.state()}")
    print(f"sent {f.sent}")


def cmd_segments(args):
    """A SEND's first segment twice, under two DSNs: no completion until
    its second segment comes; the copy is dropped."""
    (a,), (b,) = open_pairs(args, 1)
    b.mr.write(b"\0" * 4096, 4096)
    b.post_recv(1, 0, 4096)
    f = Forge(args)
    seg0, again, seg1 = b"\x44" * 1024, b"\x55" * 1024, b"\x66" * 1024
    f.send(a, b, 1, 2048, 0, seg0, 0)
    f.send(a, b, 1, 2048, 0, again, 0)
    early = b.drain()
    print(f"early_completions {len(early)}")
    f.send(a, b, 1, 2048, 1024, seg1, 0)
    wcs = b.drain()
    recv_report(wcs, "recv")
    print(f"recv_data_ok {int(b.mr.read(2048, 0) == seg0 + seg1)}")
    print(f"victim_state {b.state()}")
    print(f"sent {f.sent}")


def cmd_srq(args):
    """Receives a QP takes from its SRQ: each completes exactly once."""
    from mr_pyverbs import verbs_enums
    e = verbs_enums()

    a, b = open_pairs(args, 3, srq=True)
    f = Forge(args)
    small = b"\x77" * 100
    got = []

    def post(wr_id):
        b[0].post_recv(wr_id, wr_id * 256, 256)

    # SEND 2 (SSN 1) overtakes SEND 1 and takes the SRQ's only receive;
    # SEND 1 finds none (RNR); the requester rewinds (generation 1).
    post(1)
    f.send(a[0], b[0], 2, 100, 0, small, 1)
    f.send(a[0], b[0], 1, 100, 0, small, 0)
    post(2)
    post(3)
    f.send(a[0], b[0], 1, 100, 0, small, 0, gen=1)
    f.send(a[0], b[0], 2, 100, 0, small, 1, gen=1)
    rewind = b[0].drain()
    got += rewind
    print(f"rewind_first {rewind[0][0] if rewind else 0}")
    print(f"rewind_second {rewind[1][0] if len(rewind) > 1 else 0}")
    f.send(a[0], b[0], 3, 100, 0, small, 2, gen=1)
    after = b[0].drain()
    got += after
    print(f"after_rewind {after[0][0] if after else 0}")
    # A QP destroyed (then one reset) while it holds a receive (half of a
    # message cut in 100-byte segments): the next message of the first QP
    # gets it.
    post(4)
    f.send(a[1], b[1], 1, 200, 0, b"\x88" * 100, 0)
    time.sleep(0.2)
    b[1].qp.close()
    f.send(a[0], b[0], 4, 100, 0, small, 3, gen=1)
    given = b[0].drain()
    got += given
    print(f"given_back_destroy {given[0][0] if given else 0}")
    post(5)
    f.send(a[2], b[2], 1, 200, 0, b"\x99" * 100, 0)
    time.sleep(0.2)
    b[2].to_state(e.IBV_QPS_RESET)
    f.send(a[0], b[0], 5, 100, 0, small, 4, gen=1)
    given = b[0].drain()
    got += given
    print(f"given_back_reset {given[0][0] if given else 0}")
    # The first QP to the error state while it holds one.
    post(6)
    f.send(a[0], b[0], 6, 200, 0, b"\xaa" * 100, 5, gen=1)
    time.sleep(0.2)
    b[0].to_state(e.IBV_QPS_ERR)
    flushed = b[0].drain()
    got += flushed
    print(f"flushed {flushed[0][0] if flushed else 0}")
    print(f"flushed_status {flushed[0][1] if flushed else -1}")
    ids = [w for w, _, _ in got]
    print("srq_posted 6")
    print(f"srq_completed {len(set(ids))}")
    print(f"srq_completions {len(ids)}")
    print(f"srq_ok {sum(1 for w, st, n in got if st == e.IBV_WC_SUCCESS and n == 100)}")
    print(f"sent {f.sent}")


# --- attacks on a live verified transfer -------------------------------------------


def fresh_epoch(avoid=()):
    """A random epoch: never 0, never one of AVOID."""
    epoch = 0
    while epoch == 0 or epoch in avoid:
        epoch = random.getrandbits(32)
    return epoch


def live_qps(dev, timeout=30):
    """DEV's RC QPs in RTS as (QPN, its peer's QPN) pairs, from rdma
    resource (what any local user of the PID namespace can read); waits
    for some (between two runs of a transfer there are none)."""
    deadline = time.monotonic() + timeout
    while True:
        out = subprocess.run(["rdma", "-j", "resource", "show", "qp",
                              "link", f"{dev}/1"], capture_output=True,
                             text=True, check=False).stdout
        try:
            rows = json.loads(out or "[]")
        except ValueError:
            rows = []
        qps = [(int(r["lqpn"]), int(r["rqpn"])) for r in rows
               if r.get("type") == "RC" and r.get("state") == "RTS" and
               "rqpn" in r]
        if qps:
            return qps
        if time.monotonic() > deadline:
            sys.exit(f"hostile.py: no RC QP in RTS on {dev}")
        time.sleep(0.2)


def keep_going(args, end):
    """The flood goes on: --stop-file exists (if given) and --seconds are
    not over."""
    return time.monotonic() < end and \
        (not args.stop_file or os.path.exists(args.stop_file))


def cmd_synflood(args):
    """SYNs of fresh epochs from --src (a PROBE, a SEND and a WRITE, each
    with SYN, a cookie guessed and an epoch of its own), from a new source
    port every round (a new socket, or with --raw a new forged port),
    every --interval ms, until --stop-file is removed or --seconds are
    over. Started before the connection exists, it goes on while the real
    peers connect and transfer."""
    f = Forger(args)
    print(f"uid {os.getuid()}", flush=True)
    syn = F["SYN"] | F["ACKREQ"]
    rounds = 0
    end = time.monotonic() + args.seconds
    while keep_going(args, end):
        if args.raw:
            f.sport = random.randrange(1024, 65536)
        else:
            f.sock.close()
            f.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            f.sock.bind((args.src, 0))
        e = fresh_epoch()
        f.send(probe(epoch=e, psn=e, flags=syn, syn_dsn=e))
        for op in ("SEND", "WRITE"):
            e = fresh_epoch()
            f.send(data_packet(OP[op], flags=syn, epoch=e, psn=e,
                               dst=random.randrange(2, 1 << 16),
                               src=random.randrange(2, 1 << 16), dsn=e,
                               msn=random.getrandbits(24),
                               raddr=random.getrandbits(48) & ~7,
                               rkey=random.getrandbits(32),
                               payload=b"S" * 64, syn_dsn=e))
        rounds += 1
        if rounds == 1:
            print("struck 1", flush=True)
        time.sleep(args.interval / 1000)
    print(f"ports {rounds}")
    print(f"sent {f.sent}")


def inject_packet(op, epoch, psn, dsn, dst, src, msn):
    """A forged segment of kind OP (send, read_resp or atomic_resp)."""
    if op == "send":
        return data_packet(OP["SEND"], epoch=epoch, psn=psn, dsn=dsn, dst=dst,
                           src=src, msn=msn, payload=b"F" * 64,
                           ssn=random.getrandbits(24))
    if op == "read_resp":
        return data_packet(OP["READ_RESP"], epoch=epoch, psn=psn, dsn=dsn,
                           dst=dst, src=src, msn=msn, msg_len=64,
                           payload=b"R" * 64)
    return data_packet(OP["ATOMIC_RESP"], epoch=epoch, psn=psn, dsn=dsn,
                       dst=dst, src=src, msn=msn, msg_len=8)


def cmd_inject(args):
    """Forged --op segments (SENDs, READ responses or atomic responses) to
    every QP of --dev that the transfer from --src uses, MSNs brute-forced
    (--msns of them per QP: the first ones and random ones): off-path,
    each with a fresh epoch; on-path, in --dev's epoch for --src (from its
    telemetry) but with DSNs outside its window, far ahead (--repeat) and
    long settled (--repeat)."""
    qps = live_qps(args.dev)[:16]
    rx = wait_peer(args.dev, args.src, args.dst)
    tx = wait_peer(args.peer_dev, args.dst, args.src, receiving=False)
    live = int(rx["rx_epoch"], 16)
    una, nxt = int(tx["dsn_una"], 16), int(tx["dsn_nxt"], 16)
    msns = list(range(args.msns // 2)) + \
        [random.getrandbits(24) for _ in range(args.msns - args.msns // 2)]
    off = []
    for qpn, peer in qps:
        for msn in msns:
            e = fresh_epoch((live,))
            off.append((f"{args.op} off-path", inject_packet(
                args.op, e, e, random.getrandbits(32), qpn, peer, msn)))
    psn = (live - (1 << 20)) & 0xffffffff
    ahead, behind = [], []
    for i in range(args.repeat):
        qpn, peer = qps[i % len(qps)]
        msn = msns[i % len(msns)]
        ahead.append((f"{args.op} ahead", inject_packet(
            args.op, live, psn, (nxt + 100000 + i) & 0xffffffff, qpn, peer,
            msn)))
        behind.append((f"{args.op} behind", inject_packet(
            args.op, live, psn, (una - 100000 - i) & 0xffffffff, qpn, peer,
            msn)))
    print(f"qps {len(qps)}")
    print(f"offpath {send_all(args, off)}")
    print(f"ahead {send_all(args, ahead)}")
    print(f"behind {send_all(args, behind)}")


def cmd_acks(args):
    """ACKs to --dst, the sender of a live connection from --src, that
    carry Rate Hints: 1 Mbit/s, 2^32 - 1 and 0 (no hint), in turn, for
    --seconds in all, one every --interval ms. On-path: in the ACK Epoch
    that sender uses (its telemetry), no blocks, a DSN Cumulative it has
    passed (it acknowledges nothing); off-path: as many with a fresh ACK
    Epoch each. Samples the sender's window and hint meanwhile."""
    if not args.netns:
        sys.exit("hostile.py: --netns is needed")
    tx = wait_peer(args.dev, args.src, args.dst, receiving=False)
    own = int(tx["epoch"], 16)
    their = int(tx["rx_epoch"], 16) or fresh_epoch()
    cum = int(tx["dsn_una"], 16)
    print(f"window_before {tx['window']}")
    sock = netns_socket(args.netns, args.src)
    hints = (1, 0xffffffff, 0)
    onpath = offpath = hint_one = 0
    windows = []
    end = time.monotonic() + args.seconds
    i = 0
    while time.monotonic() < end:
        hint = hints[min(int(3 * (1 - (end - time.monotonic()) /
                                  args.seconds)), 2)]
        sock.sendto(ack(epoch=their, ack_epoch=own, dsn_cum=cum,
                        rate=hint), (args.dst, args.port))
        onpath += 1
        sock.sendto(ack(epoch=their, ack_epoch=fresh_epoch((own,)),
                        dsn_cum=cum, rate=hint), (args.dst, args.port))
        offpath += 1
        i += 1
        if i % 10 == 0:
            e = peer_entry(args.dev, args.src, args.dst)
            if e:
                windows.append(int(e["window"]))
                hint_one += int(hint == 1 and e["hint_rx"] == "1")
        time.sleep(args.interval / 1000)
    sock.close()
    print(f"hint_one_seen {hint_one}")
    print(f"min_window {min(windows) if windows else 0}")
    print(f"max_window {max(windows) if windows else 0}")
    print(f"offpath {offpath}")
    print(f"sent {onpath}")


def junk_source():
    """A unicast IPv4 address no host of the test has: 11.0.0.0 to
    99.255.255.255."""
    return socket.inet_ntoa(struct.pack(">I", random.randrange(
        11 << 24, 100 << 24)))


def cmd_junk(args):
    """A flood from --sources addresses nobody has (raw socket, forged
    sources and ports): well-formed WRITEs of 1 KiB and PROBEs with SYN,
    --count datagrams sent back to back, more than the receiver's backlog
    holds."""
    sock = netns_socket(args.netns, None, raw=True)
    sources = [(junk_source(), random.randrange(1024, 65536))
               for _ in range(args.sources)]
    pkts = []
    for i, src in enumerate(sources):
        e = fresh_epoch()
        if i % 4 == 3:
            pkts.append(probe(epoch=e, psn=e, flags=F["SYN"] | F["ACKREQ"],
                              syn_dsn=e))
        else:
            pkts.append(data_packet(OP["WRITE"], epoch=e, psn=e, dsn=e,
                                    payload=b"J" * 1024))
    datagrams = [spoofed_udp(src, args.dst, sport, args.port, pkt)
                 for (src, sport), pkt in zip(sources, pkts)]
    n = 0
    while n < args.count:
        for d in datagrams:
            sock.sendto(d, (args.dst, 0))
        n += len(datagrams)
    sock.close()
    print(f"sources {len(sources)}")
    print(f"sent {n}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--wire", required=True, help="path of mr_wire.h")
    p.add_argument("--netns", help="namespace to send from (forge: the "
                   "current one)")
    p.add_argument("--src", required=True, help="source address")
    p.add_argument("--dst", required=True, help="destination address")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--dev", help="the receiving device")
    p.add_argument("--peer-dev", help="the sending device (dsn)")
    p.add_argument("--ahead", action="store_true")
    p.add_argument("--a-dev")
    p.add_argument("--a-gidx", type=int)
    p.add_argument("--b-dev")
    p.add_argument("--b-gidx", type=int)
    p.add_argument("--raw", action="store_true",
                   help="forge: spoof --src from a raw socket")
    p.add_argument("--dst-qpn", type=int, help="forge: the victim QP")
    p.add_argument("--src-qpn", type=int, help="forge: its peer QP")
    p.add_argument("--msn", type=int, default=0,
                   help="forge: the victim's first message number")
    p.add_argument("--seconds", type=float, default=4)
    p.add_argument("--interval", type=float, default=5,
                   help="forge: milliseconds between rounds")
    p.add_argument("--forger", help="hijack: the forge command line, "
                   "without the QPNs")
    p.add_argument("--after-cleanup", action="store_true")
    p.add_argument("--stop-file", help="synflood: flood while it exists")
    p.add_argument("--op", choices=("send", "read_resp", "atomic_resp"),
                   default="send", help="inject: what to forge")
    p.add_argument("--msns", type=int, default=32,
                   help="inject: MSNs per QP, off-path")
    p.add_argument("--sources", type=int, default=256,
                   help="junk: source addresses")
    p.add_argument("--count", type=int, default=10000,
                   help="junk: datagrams")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("command", choices=("malformed", "valid", "ud", "epoch",
                                       "dsn", "victim", "isolation", "forge",
                                       "hijack", "ssn", "segments", "srq",
                                       "synflood", "inject", "acks",
                                       "junk"))
    args = p.parse_args()
    load_wire(args.wire)
    globals()["cmd_" + args.command](args)


if __name__ == "__main__":
    main()
