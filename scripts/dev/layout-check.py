#!/usr/bin/env python3
"""layout-check.py -- the measures of the source layout (docs/ARCHITECTURE.md): no source file
over 500 lines, cli/main.c at most 150, no dependency cycle between modules (a file's #include
of another module's header is an edge) nor between the files of one folder (by their includes, or by their calls: a
function defined in one file and called from another), the reference (ref/) depending on no variant or
attention code, no comment citing a file outside the repository, and every variant registered
by one line. Prints each measure; exits 1 if one fails."""
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
src = os.path.join(root, 'src')
MAX_LINES, MAX_MAIN = 500, 150
bad = 0


def report(ok, what):
    global bad
    print(('ok    ' if ok else 'FAIL  ') + what)
    bad += not ok


def module(path):
    """src/attn/variants/base.c -> attn/variants; src/num/fmt/fmt.h -> num/fmt (num's folders are modules)"""
    rel = os.path.relpath(path, src).split(os.sep)
    return '/'.join(rel[:2]) if rel[0] in ('attn', 'num') and len(rel) > 2 else rel[0]


files = []
for d, _, fs in os.walk(src):
    files += [os.path.join(d, f) for f in fs if f.endswith(('.c', '.h'))]
files.sort()

long_files = [(os.path.relpath(f, root), n) for f in files
              for n in [sum(1 for _ in open(f))] if n > MAX_LINES]
report(not long_files, 'source files over %d lines: %s' % (MAX_LINES, long_files or 'none'))
n_main = sum(1 for _ in open(os.path.join(src, 'cli', 'main.c')))
report(n_main <= MAX_MAIN, 'src/cli/main.c: %d lines (at most %d)' % (n_main, MAX_MAIN))

edges = {}
for f in files:
    m = module(f)
    for inc in re.findall(r'^#include "([^"]+)"', open(f).read(), re.M):
        target = module(os.path.join(src, inc))
        if target != m:
            edges.setdefault(m, set()).add(target)
print('module dependencies:')
for m in sorted(edges):
    print('      %-14s -> %s' % (m, ', '.join(sorted(edges[m]))))


def cycle():
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for t in sorted(edges.get(m, ())):
            if state.get(t) == 1:
                return stack[stack.index(t):] + [t]
            if not state.get(t):
                c = visit(t)
                if c:
                    return c
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if not state.get(m):
            c = visit(m)
            if c:
                return c
    return None


c = cycle()
report(c is None, 'dependency cycles between modules: %s' % (' -> '.join(c) if c else 'none'))


def reaches(a, b, seen=None):
    seen = seen or set()
    for t in edges.get(a, ()):
        if t == b or (t not in seen and reaches(t, b, seen | {t})):
            return True
    return False


report(not reaches('ref', 'attn') and not reaches('ref', 'attn/variants'),
       'the reference (ref/) depends on no attention variant code')

# circles of files inside one folder: a file is its .c and .h together, and an edge is an #include of
# another file of the same folder; a folder's internal header (NAME_int.h: what its files share) is the
# shared layer a circle is broken with, so it is no node
units = {}
for f in files:
    u = os.path.relpath(f, src)[:-2]
    units.setdefault(u, set())
    for inc in re.findall(r'^#include "([^"]+)\.h"', open(f).read(), re.M):
        if inc != u and os.path.dirname(inc) == os.path.dirname(u) and not inc.endswith('_int'):
            units[u].add(inc)


def unit_reaches(a, b, seen):
    return any(t == b or (t not in seen and unit_reaches(t, b, seen | {t})) for t in units.get(a, ()))


circles = sorted({tuple(sorted((a, b))) for a in units for b in units[a] if unit_reaches(b, a, {b})})
report(not circles, 'circles of files within a folder: %s' % (', '.join(' <-> '.join(c) for c in circles) or 'none'))

# circles of calls inside one folder: an edge runs from a .c file to another .c file of its folder that defines
# (not static) a function it calls; a circle of such edges is a circle however the includes look (a function of a
# shared header's static inline code is no file's, and no edge)
def code_of(path):
    t = re.sub(r'/\*.*?\*/', ' ', open(path).read(), flags=re.S)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', re.sub(r'//[^\n]*', ' ', t))


cfiles = [f for f in files if f.endswith('.c')]
code = {f: code_of(f) for f in cfiles}
defined = {}
for f in cfiles:
    for m in re.finditer(r'^(?!static\b)[A-Za-z_][\w \*]*?\b([a-z]\w*)\s*\([^;{]*\)\s*\{', code[f], re.M):
        defined.setdefault(m.group(1), set()).add(f)
calls = {f: {g for name in set(re.findall(r'\b([a-z]\w*)\s*\(', code[f])) for g in defined.get(name, ())
             if g != f and os.path.dirname(g) == os.path.dirname(f)} for f in cfiles}


def call_reaches(a, b, seen):
    return any(t == b or (t not in seen and call_reaches(t, b, seen | {t})) for t in calls.get(a, ()))


rel = lambda f: os.path.relpath(f, src)[:-2]
call_circles = sorted({tuple(sorted((rel(a), rel(b)))) for a in calls for b in calls[a] if call_reaches(b, a, {b})})
report(not call_circles, 'circles of calls within a folder: %s' % (
    ', '.join(' <-> '.join(c) for c in call_circles) or 'none'))

# scripts/ holds its kinds in folders (results, checks against hardware, device captures and probes, development
# tools): no script loose at the top, and scripts/README.md names every one under its folder
sdir = os.path.join(root, 'scripts')
readme = open(os.path.join(sdir, 'README.md')).read()
loose = sorted(f for f in os.listdir(sdir) if f != 'README.md' and os.path.isfile(os.path.join(sdir, f)))
report(not loose, 'scripts loose in scripts/ (not in a folder of its kind): %s' % (loose or 'none'))
sections = {part.split('`')[1].rstrip('/'): part for part in readme.split('\n## ')[1:] if part.startswith('`')}
unlisted = sorted('%s/%s' % (k, f) for k in sorted(os.listdir(sdir)) if os.path.isdir(os.path.join(sdir, k))
                  for f in os.listdir(os.path.join(sdir, k)) if not f.startswith('.') and f != '__pycache__'
                  and '`' + f not in sections.get(k, ''))
report(not unlisted, 'scripts/ files missing from scripts/README.md under their folder: %s' % (unlisted or 'none'))

outside = []
for f in files:
    for i, line in enumerate(open(f), 1):
        if re.search(r'\bshared/|\.\./shared|seeds/', line):
            outside.append('%s:%d' % (os.path.relpath(f, root), i))
report(not outside, 'comments citing files outside the repository: %s' % (outside or 'none'))

# adding a variant: its own file and one registry line (no other list names variants)
reg = open(os.path.join(src, 'attn', 'variants', 'registry.c')).read()
n_reg = len(re.findall(r'^    X\("', reg, re.M))
decl = [f for f in files if f.endswith('.h') and re.search(r'^void attn_\w+\(double \*o, const attn_group_t \*g, attn_ctx_t \*ctx\);', open(f).read(), re.M)]
report(not decl, 'variants registered by one line each (%d in attn/variants/registry.c); headers listing '
       'entry points: %s' % (n_reg, decl or 'none'))
sys.exit(1 if bad else 0)
