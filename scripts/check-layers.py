#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/check-layers.py [DIR]: the files of the kernel driver
# (drivers/metaroce/*.c, or DIR's) call each other in one direction only.
#
# A file "calls" another when a function defined in it names a function
# the other defines (not static). Calls made by the engine's callbacks (the
# functions a struct mr_env_ops initialiser names: the transport engine
# calls them, and they deliver its reports to the QPs above) are the one
# way up, and do not count. Any cycle left among the files is printed with
# the calls that make it, and fails the check (exit 1). --self-test also
# shows, on a copy of the files, that a call added from a low file back up
# to one that calls it is caught.
#
# A reading of the C text, not a compiler: a definition is an identifier
# followed by "(" at the start of a line whose parameter list is followed
# by "{"; comments and strings are removed first. Enough for code in
# kernel style, which checkpatch keeps this one in.
import os
import re
import shutil
import sys
import tempfile
from collections import defaultdict

DEF = re.compile(r'^(static\s+)?(?:[A-Za-z_][\w \t*]*?[\s*])?([A-Za-z_]\w*)\s*\(',
                 re.M)


def strip(src):
    src = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), src,
                 flags=re.S)
    src = re.sub(r'//[^\n]*', '', src)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', src)


def functions(src):
    """(name, static, body) of each function defined at file scope."""
    out = []
    for m in DEF.finditer(src):
        if m.group(0).startswith(('#', 'return', 'if', 'while', 'for')):
            continue
        # The parameter list, then "{" (a definition) or ";" (not).
        depth, i = 0, m.end() - 1
        while i < len(src):
            if src[i] == '(':
                depth += 1
            elif src[i] == ')':
                depth -= 1
                if depth == 0:
                    break
            i += 1
        rest = src[i + 1:].lstrip()
        if not rest.startswith('{'):
            continue
        start = src.index('{', i)
        depth, j = 0, start
        while j < len(src):
            if src[j] == '{':
                depth += 1
            elif src[j] == '}':
                depth -= 1
                if depth == 0:
                    break
            j += 1
        out.append((m.group(2), bool(m.group(1)), src[start:j + 1]))
    return out


def env_callbacks(sources):
    """Names of the functions struct mr_env_ops initialisers point to."""
    names = set()
    for src in sources.values():
        for m in re.finditer(r'struct\s+mr_env_ops\s+\w+\s*=\s*\{(.*?)\};',
                             src, re.S):
            names.update(re.findall(r'\.\w+\s*=\s*(\w+)', m.group(1)))
    return names


def graph(directory):
    sources = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith('.c'):
            with open(os.path.join(directory, name)) as f:
                sources[name] = strip(f.read())
    defs, funcs = {}, {}
    for name, src in sources.items():
        funcs[name] = functions(src)
        for fn, static, _ in funcs[name]:
            if not static:
                defs[fn] = name
    callbacks = env_callbacks(sources)
    edges = defaultdict(lambda: defaultdict(set))
    for name, fl in funcs.items():
        for fn, _, body in fl:
            if fn in callbacks:
                continue
            for callee in set(re.findall(r'\b([A-Za-z_]\w*)\s*\(', body)):
                where = defs.get(callee)
                if where and where != name:
                    edges[name][where].add(f'{fn}() -> {callee}()')
    return edges


def cycles(edges):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def check(directory, quiet=False):
    edges = graph(directory)
    found = cycles(edges)
    for comp in [] if quiet else found:
        print(f'# call loop among {", ".join(comp)}:')
        for a in comp:
            for b in comp:
                for call in sorted(edges[a].get(b, ())):
                    print(f'#   {a}: {call} ({b})')
    if not found and not quiet:
        files = {f for f in edges} | {g for f in edges for g in edges[f]}
        print(f'# {len(files)} files, {sum(len(v) for v in edges.values())}'
              ' file-to-file dependencies, no loop')
    return not found


def self_test(directory):
    """A call back up an existing dependency (b -> a for a -> b) is a loop."""
    edges = graph(directory)
    pairs = sorted((a, b) for a in edges for b in edges[a])
    if not pairs:
        print(f'# self-test: no dependency between files in {directory}')
        return False
    caller, callee = pairs[0]
    with open(os.path.join(directory, caller)) as f:
        up = next(fn for fn, static, _ in functions(strip(f.read()))
                  if not static)
    with tempfile.TemporaryDirectory() as tmp:
        for name in os.listdir(directory):
            if name.endswith('.c'):
                shutil.copy(os.path.join(directory, name), tmp)
        with open(os.path.join(tmp, callee), 'a') as f:
            f.write(f'\nvoid mr_layers_probe(void)\n{{\n\t{up}();\n}}\n')
        if check(tmp, quiet=True):
            print(f'# self-test: a call from {callee} up to {caller} '
                  f'({up}()) went unseen')
            return False
    print(f'# self-test: a call from {callee} up to {caller} ({up}()) '
          'is a loop, as it must be')
    return True


def main():
    args = [a for a in sys.argv[1:] if a != '--self-test']
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    directory = args[0] if args else os.path.join(top, 'drivers', 'metaroce')
    ok = check(directory)
    if '--self-test' in sys.argv[1:]:
        ok = self_test(directory) and ok
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
