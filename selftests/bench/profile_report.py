#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
#
# selftests/bench/profile_report.py RUNS_TSV PROFILE_DIR [HZ]: where the
# guest's CPU time goes per byte moved, for each run that run.sh profiled
# (MR_BENCH_PROFILE=1; profile.sh). For every run: its goodput, the CPU
# time the guest spent busy (cpu-clock samples on every CPU, idle loops
# excluded) per gigabyte that left the sender's veth end while perf
# sampled (IDX.bytes: headers included, so TCP's and metaroce's bytes
# compare as the wire sees them), and how that time divides between
# what the samples fall in: the transport engine (functions defined in
# drivers/metaroce/core/), the rest of metaroce.ko, copies, checksums, the
# UDP, TCP and IP layers, the network device layer (veth, skbs, qdiscs,
# GRO/GSO), memory allocation, scheduling and interrupts, system calls,
# user space, other kernel code. Then the busiest symbols, and the ratio of
# each transport's CPU time per gigabyte to TCP's of the same round, all
# of it and the kernel's alone: perftest polls its completion queue
# without sleeping, so its user time says little about the transport.
#
# A sample's category is decided by its module and symbol name (the tables
# below, first match wins), a reading good enough to tell where the bulk
# of the time goes, not to the last percent.
import csv
import glob
import importlib.util
import os
import re
import statistics
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))

IDLE = re.compile(r'(default_idle|native_safe_halt|acpi_idle|cpuidle|do_idle|'
                  r'mwait|intel_idle|arch_cpu_idle|poll_idle|cpu_startup_entry)')
CATEGORIES = [
    ('copy', r'(memcpy|memmove|memset|copy_user|copy_to_user|'
             r'copy_from_user|rep_movs|copy_to_iter|copy_from_iter|'
             r'copy_page|skb_copy|csum_partial_copy|copyout|copyin)'),
    ('checksum', r'(csum|checksum)'),
    ('udp', r'^(__)?udp|^udpv6|^udp6|^udp4'),
    ('tcp', r'^(__)?tcp|^inet_csk'),
    ('ip', r'^(__)?(ip_|ip6_|ipv6_|ip6t|ipt_|inet|fib|rt_|rt6|dst_|raw_|nf_|'
           r'icmp|l3mdev|neigh)'),
    ('netdev', r'(veth|netif|^(__)?dev_|napi|net_rx|net_tx|skb|gro|gso|'
               r'qdisc|sch_|netem|pfifo|^eth_|validate_xmit|'
               r'process_backlog|xmit)'),
    ('memory', r'(kmem_cache|kmalloc|kfree|slab|page_frag|free_pages|'
               r'clear_page|'
               r'get_page|put_page|alloc_pages|rmqueue|folio|memcg|'
               r'free_unref|__free_page|page_pool|vmalloc)'),
    ('sched/irq', r'(schedule|pick_next|enqueue|dequeue|update_|hrtimer|'
                  r'timer|irq|softirq|spin_|finish_task|wake|ttwu|rcu|'
                  r'ktime|tick|clockevent|lapic|sysvec|_raw_|lock|'
                  r'native_write_msr|native_read_msr|__switch_to|'
                  r'context_switch|futex|cpuacct|psi_)'),
    ('syscall', r'(entry_SYSCALL|syscall|__x64_sys|ep_poll|epoll|^sock_|'
                r'__sock|^sys_|fput|fget|fdget|security_|apparmor|'
                r'ioctl|poll|select|vfs_|rw_verify|do_iter)'),
]
CAT_RE = [(n, re.compile(r)) for n, r in CATEGORIES]
ORDER = ['engine', 'metaroce.ko'] + [n for n, _ in CATEGORIES] + \
    ['user', 'other']


def defined_functions(pattern):
    """Names of the functions the C files PATTERN (under TOP) define,
    read as scripts/check-layers.py reads them."""
    spec = importlib.util.spec_from_file_location(
        'check_layers', os.path.join(TOP, 'scripts', 'check-layers.py'))
    layers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layers)
    names = set()
    for path in glob.glob(os.path.join(TOP, pattern)):
        with open(path) as f:
            names.update(fn for fn, _, _ in layers.functions(
                layers.strip(f.read())))
    return names


ENGINE = defined_functions('drivers/metaroce/core/*.c')
GLUE = defined_functions('drivers/metaroce/*.c')


def category(dso, sym):
    # perf names the module's symbols [metaroce], or [kernel.kallsyms]
    # when it finds no metaroce.ko of the running kernel to read: the
    # functions our sources define tell them apart either way. Static
    # functions may be inlined into others: a sample counts for the
    # engine only in a function the engine defines.
    name = sym.split('.')[0]
    if dso.startswith('['):
        if name in ENGINE:
            return 'engine'
        if name in GLUE or dso == '[metaroce]':
            return 'metaroce.ko'
    if not dso.startswith('['):
        return 'user'
    for cat, rx in CAT_RE:
        if rx.search(sym):
            return cat
    return 'other'


def parse(path):
    """(busy samples by category, idle samples, busiest symbols)."""
    cats, idle, syms = defaultdict(int), 0, []
    line_re = re.compile(r'^\s*([\d.]+)%\s+(\d+)\s+(\S+)\s+\[(.)\]\s+(.*\S)\s*$')
    with open(path) as f:
        for line in f:
            m = line_re.match(line)
            if not m:
                continue
            n, dso, sym = int(m.group(2)), m.group(3), m.group(5)
            if IDLE.search(sym):
                idle += n
                continue
            c = category(dso, sym)
            cats[c] += n
            syms.append((n, dso, sym, c))
    syms.sort(reverse=True)
    return cats, idle, syms


def main():
    runs_tsv, prof_dir = sys.argv[1], sys.argv[2]
    hz = float(sys.argv[3]) if len(sys.argv) > 3 else 499.0
    with open(runs_tsv) as f:
        rows = [r for r in csv.DictReader(f, delimiter='\t')
                if r['status'] == 'ok']
    results = []
    for r in rows:
        path = os.path.join(prof_dir, '%03d.txt' % int(r['idx']))
        if not os.path.exists(path):
            continue
        cats, idle, syms = parse(path)
        busy = sum(cats.values())
        # The bytes that left the sender's veth end while perf sampled.
        try:
            with open(path[:-4] + '.bytes') as f:
                gbytes = int(f.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            continue
        if not busy or gbytes < 0.01:
            continue
        name = r['transport'] + (' ' + r['test'] if r['transport'] != 'tcp'
                                 else ' (%s)' % r['variant'])
        kern = busy - cats.get('user', 0)
        results.append(dict(name=name, rep=r['rep'], gbps=float(r['gbps']),
                            busy=busy, idle=idle, cats=cats, syms=syms,
                            cpu_s_per_gb=busy / hz / gbytes,
                            kern_s_per_gb=kern / hz / gbytes,
                            util=busy / (busy + idle)))
    if not results:
        print('profile: no profiled run')
        return 1

    print('CPU time per gigabyte sent (cpu-clock at %d Hz on every CPU of '
          'the guest, idle excluded)\n' % hz)
    head = '%-22s %4s %7s %6s %9s %9s' % ('run', 'rep', 'Gb/s', 'busy',
                                           'CPU-s/GB', 'kernel')
    print(head + ''.join(' %7s' % c[:7] for c in ORDER))
    for x in results:
        line = '%-22s %4s %7.3f %5.0f%% %9.2f %9.2f' % (
            x['name'], x['rep'], x['gbps'], 100 * x['util'],
            x['cpu_s_per_gb'], x['kern_s_per_gb'])
        line += ''.join(' %6.1f%%' % (100 * x['cats'].get(c, 0) / x['busy'])
                        for c in ORDER)
        print(line)

    # Each transport against TCP with GSO of the same round.
    base = {x['rep']: x for x in results if x['name'] == 'tcp (gso)'}
    for key, what in (('cpu_s_per_gb', 'all CPU time'),
                      ('kern_s_per_gb', 'kernel time')):
        ratios = defaultdict(list)
        for x in results:
            b = base.get(x['rep'])
            if b and x is not b:
                ratios[x['name']].append(x[key] / b[key])
        if not ratios:
            continue
        print('\n%s per GB against TCP (gso) of the same round '
              '(median, range):' % (what[0].upper() + what[1:]))
        for name, v in ratios.items():
            print('  %-22s %.2f (%.2f - %.2f)' % (name, statistics.median(v),
                                                 min(v), max(v)))

    for x in results:
        print('\nBusiest symbols: %s, round %s (%% of busy samples)'
              % (x['name'], x['rep']))
        for n, dso, sym, c in x['syms'][:15]:
            print('  %5.1f%%  %-12s %-22s %s' % (100 * n / x['busy'], c,
                                                 dso[:22], sym))
    return 0


if __name__ == '__main__':
    sys.exit(main())
