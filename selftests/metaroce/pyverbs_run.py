#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Runs rdma-core's pyverbs test suite one test at a time, with a time limit.

    pyverbs_run.py --tests DIR --results FILE [--timeout S] [--budget S]
                   [--match REGEX] [--exclude REGEX] [--expected FILE]
                   -- SUITE-ARGS (e.g. --dev mr0 --gid 1)

DIR is the suite's directory (rdma-core's tests/, with __init__.py). Each test
runs in a forked child, in its own process group, so that a test that hangs
(a completion that never comes, a blocking event read) is killed after
--timeout seconds and reported as "timeout" instead of stopping the suite.
Tests not started within --budget seconds of the start are reported as
"notrun". FILE gets one line per test, tab-separated:

    STATUS  TEST-ID  SECONDS  MESSAGE

STATUS is pass, fail, error, skip, timeout, notrun or allowed (a failure or
error of a test that --expected lists); MESSAGE is the skip reason, the last
line of the failure, or the allow-list's reason. Full tracebacks go to
stderr.

Soft RDMA devices (rxe, metaroce) have no parent device, so the suite's
lookup of the device's netdev in /sys/class/infiniband/DEV/device/net/
finds nothing and every rdma_cm test skips. For such devices the lookup
is redirected to the netdev that owns the selected GID
(ports/N/gid_attrs/ndevs/IDX), which is what the suite wants to know.
"""

import argparse
import fnmatch
import importlib.util
import json
import os
import re
import select
import signal
import sys
import time
import traceback
import unittest


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--tests', required=True, help='the suite directory')
    ap.add_argument('--results', required=True, help='results file')
    ap.add_argument('--timeout', type=float, default=60,
                    help='seconds per test (default 60)')
    ap.add_argument('--budget', type=float, default=0,
                    help='seconds for the whole run, 0: no limit')
    ap.add_argument('--match', default='',
                    help='run only the tests whose id matches this regex')
    ap.add_argument('--exclude', default='',
                    help='leave out the tests whose id matches this regex')
    ap.add_argument('--expected', default='',
                    help='allow-list: failures and errors of the tests it '
                         'names are reported as "allowed"')
    ap.add_argument('--list', action='store_true',
                    help='print the test ids and exit')
    ap.add_argument('suite_args', nargs=argparse.REMAINDER,
                    help='-- and the arguments of the suite (--dev, --gid...)')
    args = ap.parse_args()
    if args.suite_args[:1] == ['--']:
        args.suite_args = args.suite_args[1:]
    return args


def load_suite(tests_dir, suite_args):
    """Imports DIR as the package "tests", as run_tests.py does."""
    tests_dir = os.path.abspath(tests_dir)
    sys.path.insert(0, tests_dir)
    spec = importlib.util.spec_from_file_location(
        'tests', os.path.join(tests_dir, '__init__.py'),
        submodule_search_locations=[tests_dir])
    pkg = importlib.util.module_from_spec(spec)
    sys.modules['tests'] = pkg
    spec.loader.exec_module(pkg)
    # The suite reads its options from sys.argv through args_parser.
    from args_parser import parser
    sys.argv[1:] = suite_args
    parser.parse_args()
    return pkg


def soft_device_netdev_lookup():
    """Finds a soft device's netdev through its GID table (see above)."""
    from tests.base import RDMATestCase
    orig = RDMATestCase._get_ip_mac

    def get_ip_mac(self, dev, port, idx):
        sysdev = f'/sys/class/infiniband/{dev}'
        if os.path.exists(f'{sysdev}/device/net/'):
            return orig(self, dev, port, idx)
        try:
            with open(f'{sysdev}/ports/{port}/gid_attrs/ndevs/'
                      f'{0 if idx is None else idx}') as f:
                ndev = f.read().strip()
            ip_addr, mac = self.get_ip_mac_address(ndev)
        except (OSError, KeyError, IndexError, ValueError):
            self.args.append([dev, port, idx, None, None])
        else:
            self.args.append([dev, port, idx, ip_addr, mac])

    RDMATestCase._get_ip_mac = get_ip_mac


def load_expected(path):
    """The allow-list: [(glob, reason)], see pyverbs-expected.txt."""
    entries = []
    if not path:
        return entries
    with open(path, encoding='utf-8') as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            pat, *reason = line.split(None, 1)
            if not reason:
                sys.exit(f'{path}: {pat}: an entry needs a reason')
            entries.append((pat, reason[0]))
    return entries


def allowed(entries, tid):
    for pat, reason in entries:
        if fnmatch.fnmatchcase(tid, pat):
            return reason
    return None


def all_tests(pkg):
    loader = unittest.TestLoader()
    out = []

    def flatten(suite):
        for t in suite:
            if isinstance(t, unittest.TestSuite):
                flatten(t)
            else:
                out.append(t)

    for mod in pkg.__test_modules__:
        flatten(loader.loadTestsFromModule(mod))
    return out


def last_line(text):
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ''


def child(test, wfd):
    """Runs one test; writes {status, msg, detail} to wfd and exits."""
    result = unittest.TestResult()
    try:
        unittest.TestSuite([test]).run(result)
        if result.errors:
            status, detail = 'error', result.errors[0][1]
        elif result.failures:
            status, detail = 'fail', result.failures[0][1]
        elif result.unexpectedSuccesses:
            status, detail = 'fail', 'unexpected success'
        elif result.skipped:
            status, detail = 'skip', result.skipped[0][1]
        elif result.testsRun:
            status, detail = 'pass', ''
        else:
            status, detail = 'error', 'the test did not run'
    except BaseException:  # pylint: disable=broad-except
        status, detail = 'error', traceback.format_exc()
    msg = detail if status == 'skip' else last_line(detail)
    data = json.dumps({'status': status, 'msg': msg, 'detail': detail})
    view = memoryview(data.encode())
    while view:
        view = view[os.write(wfd, view):]
    os.close(wfd)


def kill_group(pid):
    """SIGKILLs the test's process group; False if the child would not die."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return True
        time.sleep(0.1)
    return False


def run_one(test, timeout):
    """Returns (status, msg, detail, alive): alive is False when a killed
    test's process could not be reaped (stuck in the kernel)."""
    rfd, wfd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        code = 0
        try:
            os.setpgid(0, 0)
            child(test, wfd)
        except BaseException:  # pylint: disable=broad-except
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)  # pylint: disable=protected-access
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # the child did it first, or is gone
    os.close(wfd)
    buf = b''
    deadline = time.monotonic() + timeout
    eof = False
    while not eof:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select([rfd], [], [], left)
        if ready:
            chunk = os.read(rfd, 65536)
            eof = not chunk
            buf += chunk
    os.close(rfd)
    if not eof:
        alive = kill_group(pid)
        return ('timeout', f'no result after {timeout:g}s, killed',
                '', alive)
    # The test is over; its helpers (rdma_cm's processes) must go too.
    alive = True
    done, _ = os.waitpid(pid, os.WNOHANG)
    if not done:
        deadline = time.monotonic() + 10
        while not done and time.monotonic() < deadline:
            time.sleep(0.05)
            done, _ = os.waitpid(pid, os.WNOHANG)
        if not done:
            alive = kill_group(pid)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        res = json.loads(buf.decode())
    except ValueError:
        return 'error', 'the test process died without a result', '', alive
    return res['status'], res['msg'], res['detail'], alive


def main():
    t_load = time.monotonic()
    args = parse_args()
    pkg = load_suite(args.tests, args.suite_args)
    soft_device_netdev_lookup()
    tests = all_tests(pkg)
    if args.match:
        rx = re.compile(args.match)
        tests = [t for t in tests if rx.search(t.id())]
    if args.exclude:
        rx = re.compile(args.exclude)
        tests = [t for t in tests if not rx.search(t.id())]
    expected = load_expected(args.expected)
    if args.list:
        for t in tests:
            print(t.id())
        return 0
    start = time.monotonic()
    print(f'loaded {len(tests)} tests in {start - t_load:.1f}s',
          file=sys.stderr, flush=True)
    stuck = None
    with open(args.results, 'w', encoding='utf-8') as out:
        for i, test in enumerate(tests, 1):
            tid = test.id()
            if stuck:
                status, msg, detail, secs = ('notrun',
                                             f'a process of {stuck} is stuck',
                                             '', 0.0)
            elif args.budget and time.monotonic() - start > args.budget:
                status, msg, detail, secs = ('notrun',
                                             f'over the {args.budget:g}s budget',
                                             '', 0.0)
            else:
                t0 = time.monotonic()
                status, msg, detail, alive = run_one(test, args.timeout)
                secs = time.monotonic() - t0
                if not alive:
                    stuck = tid
                    msg += ' (unkillable: the run stops here)'
            msg = ' '.join(msg.split())
            reason = allowed(expected, tid)
            if reason and status in ('fail', 'error'):
                msg = f'{reason} [{status}: {msg}]'
                status = 'allowed'
            elif reason and status == 'pass':
                print(f'note: {tid} passes but is in the allow-list',
                      file=sys.stderr, flush=True)
            print(f'[{i}/{len(tests)}] {status} {tid} {secs:.1f}s {msg}',
                  file=sys.stderr, flush=True)
            if detail and status in ('fail', 'error', 'allowed'):
                print(detail.rstrip(), file=sys.stderr, flush=True)
            out.write(f'{status}\t{tid}\t{secs:.1f}\t{msg}\n')
            out.flush()
    print(f'ran {len(tests)} tests in {time.monotonic() - start:.1f}s',
          file=sys.stderr, flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
