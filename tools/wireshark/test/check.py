#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Checks tshark's PDML dissection of pcapgen's captures (TAP on stdout).

  check.py decode  PDML EXPECT   every field pcapgen expects, with its value,
                                 in order for repeated fields; no other
                                 metaroce field; no error; one TAP line per
                                 opcode and wire version
  check.py verdict PDML EXPECT   the dissector's verdict (no error, or the
                                 drop reason in metaroce.drop_reason) is
                                 mr_wire_decode()'s for every frame
  check.py live    PDML          a real capture (selftests/metaroce/
                                 wireshark.sh): every MetaRoCE packet
                                 dissected without error; prints the opcode
                                 counts as "opcode NAME N" and "retx N"

Exit status 0 when everything checked passed.
"""
import sys
import xml.etree.ElementTree as ET
from collections import Counter, OrderedDict, defaultdict

OPS = {0x01: "WRITE", 0x02: "SEND", 0x03: "READ_REQ", 0x04: "READ_RESP",
       0x05: "CMP_SWAP", 0x06: "FETCH_ADD", 0x07: "ATOMIC_RESP", 0x08: "NOP",
       0x09: "PROBE", 0x10: "ACK", 0x11: "ACK_REQ", 0x12: "RESET",
       0x20: "UD_SEND"}

# Fields that are not header values: checked separately.
NOT_VALUES = {"metaroce.reserved", "metaroce.retransmission",
              "metaroce.malformed", "metaroce.drop_reason",
              "metaroce.qpn_reserved", "metaroce.version.unknown"}


def packets(path):
    """Yields (frame number, [field elements in document order], problems)."""
    for _, pkt in ET.iterparse(path):
        if pkt.tag != "packet":
            continue
        num = None
        fields = []
        problems = []
        for el in pkt.iter():
            if el.tag != "field" and el.tag != "proto":
                continue
            name = el.get("name", "")
            if name == "frame.number":
                num = int(el.get("show"))
            # A dissector exception shows "[Malformed Packet: ...]"; the
            # dissector's own Malformed experts add a hidden item of
            # the same name, which is not a problem here.
            if name.startswith("_ws.malformed") and el.get("hide") != "yes":
                problems.append(el.get("showname") or name)
            text = el.get("showname") or ""
            if "Lua Error" in text:
                problems.append(text)
            if el.tag == "field" and name.startswith("metaroce."):
                fields.append(el)
        pkt.clear()
        yield num, fields, problems


def value(el):
    if el.get("name") == "metaroce.payload":
        return int(el.get("size"))
    return int(el.get("show"), 0)


def read_expect(path):
    exp = defaultdict(lambda: defaultdict(list))
    with open(path) as f:
        for line in f:
            fr, name, v = line.split()
            exp[int(fr)][name].append(int(v))
    return exp


class Tap:
    """TAP result lines without numbers or plan: run.sh numbers them."""

    def __init__(self):
        self.failed = 0

    def result(self, ok, name, diag=()):
        print("%s - %s" % ("ok" if ok else "not ok", name))
        if not ok:
            self.failed += 1
            for d in list(diag)[:20]:
                print("# " + d)

    def done(self):
        return 1 if self.failed else 0


def check_decode(pdml, expect):
    exp = read_expect(expect)
    groups = OrderedDict()      # (opcode name, version) -> [problems]
    seen = set()
    for num, fields, problems in packets(pdml):
        got = defaultdict(list)
        for el in fields:
            name = el.get("name")
            if name == "metaroce.reserved":
                if set(el.get("value", "")) - {"0"}:
                    problems.append("reserved bytes not zero: %s" %
                                    el.get("value"))
                continue
            if name in NOT_VALUES:
                if name != "metaroce.retransmission":
                    problems.append("%s: %s" % (name, el.get("showname")))
                continue
            got[name].append(value(el))
        want = exp.get(num, {})
        op = OPS.get(want.get("metaroce.opcode", [None])[0], "?")
        ver = want.get("metaroce.version", ["?"])[0]
        key = (op, ver)
        groups.setdefault(key, [])
        seen.add(num)
        for name in sorted(set(want) | set(got)):
            if want.get(name) != got.get(name):
                problems.append("%s: expected %s, dissected %s" %
                                (name, want.get(name, "nothing"),
                                 got.get(name, "nothing")))
        groups[key] += ["frame %d: %s" % (num, p) for p in problems]
    tap = Tap()
    missing = sorted(set(exp) - seen)
    tap.result(not missing, "every frame of the capture was dissected",
               ["frames missing: %s" % missing])
    ops_seen = set()
    for (op, ver), problems in groups.items():
        ops_seen.add(op)
        tap.result(not problems, "%s, wire version %s: every field" %
                   (op, ver), problems)
    absent = sorted(set(OPS.values()) - ops_seen)
    tap.result(not absent, "the capture has every opcode",
               ["no %s" % " ".join(absent)])
    return tap.done()


def check_verdict(pdml, expect):
    exp = {}
    with open(expect) as f:
        for line in f:
            fr, v = line.split()
            exp[int(fr)] = v
    tap = Tap()
    wrong = []
    errors = []
    counts = Counter()
    for num, fields, problems in packets(pdml):
        reasons = [el.get("show") for el in fields
                   if el.get("name") == "metaroce.drop_reason"]
        got = reasons[0] if reasons else "ok"
        counts[exp.get(num)] += 1
        if got != exp.get(num):
            wrong.append("frame %d: decoder says %s, dissector %s" %
                         (num, exp.get(num), got))
        if problems:
            errors.append("frame %d: %s" % (num, "; ".join(problems)))
    print("# verdicts: " + ", ".join("%s %d" % kv for kv in
                                       sorted(counts.items())))
    tap.result(len(counts) > 5 and counts["ok"] > 0,
               "the mutations reach several drop reasons")
    tap.result(not wrong, "the dissector's verdict is mr_wire_decode()'s "
               "on %d frames" % sum(counts.values()), wrong)
    tap.result(not errors, "no dissector exception or Lua error", errors)
    return tap.done()


def check_live(pdml):
    ops = Counter()
    retx = 0
    bad = []
    n = 0
    for num, fields, problems in packets(pdml):
        if not fields:
            continue
        n += 1
        for el in fields:
            name = el.get("name")
            if name == "metaroce.opcode":
                ops[OPS.get(value(el), "0x%02x" % value(el))] += 1
            elif name == "metaroce.flags.retx" and value(el):
                retx += 1
            elif name == "metaroce.drop_reason":
                problems.append("malformed: " + el.get("show"))
        if problems:
            bad.append("frame %d: %s" % (num, "; ".join(problems)))
    print("packets %d" % n)
    for op, c in sorted(ops.items()):
        print("opcode %s %d" % (op, c))
    print("retx %d" % retx)
    for b in bad[:20]:
        print("bad " + b)
    print("bad_total %d" % len(bad))
    return 1 if bad or not n else 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "decode":
        return check_decode(sys.argv[2], sys.argv[3])
    if len(sys.argv) == 4 and sys.argv[1] == "verdict":
        return check_verdict(sys.argv[2], sys.argv[3])
    if len(sys.argv) == 3 and sys.argv[1] == "live":
        return check_live(sys.argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
