#!/usr/bin/env python3
"""Adds Doxygen comments to headers from a list of `PATH:LINE: TEXT` lines (a helper of the
issue-26 documentation pass; see scripts/doc_comments.py).
  PATH:LINE: TEXT     inserts `/// TEXT` above the declaration at LINE (above its template<>);
  PATH:LINE:< TEXT    appends `  ///< TEXT` to LINE;
  PATH:A-B:cond       wraps lines A..B in `/// @cond` ... `/// @endcond` (left out of the docs).
All LINEs refer to the file before any edit; clang-format reflows the result.
usage: doc_insert.py SPEC
"""
import collections
import re
import sys

edits = collections.defaultdict(list)
for raw in open(sys.argv[1]):
    raw = raw.rstrip('\n')
    if not raw.strip() or raw.startswith('#'):
        continue
    m = re.match(r'^([^:]+):(\d+)(?:-(\d+))?:(<|cond)?\s?(.*)$', raw)
    if not m:
        sys.exit('bad spec line: ' + raw)
    path, a, b, kind, text = m.groups()
    edits[path].append((int(a), int(b) if b else None, kind, text))

for path, es in edits.items():
    lines = open(path).readlines()
    # bottom-up so that earlier line numbers stay valid
    for a, b, kind, text in sorted(es, key=lambda e: (e[0], e[1] or 0), reverse=True):
        i = a - 1
        if kind == '<':
            lines[i] = lines[i].rstrip('\n') + '  ///< ' + text + '\n'
        elif kind == 'cond':
            indent = re.match(r'\s*', lines[b - 1]).group(0)
            lines.insert(b, indent + '/// @endcond\n')
            indent = re.match(r'\s*', lines[i]).group(0)
            lines.insert(i, indent + '/// @cond\n')
        else:
            while i > 0 and lines[i - 1].strip().startswith('template'):
                i -= 1
            indent = re.match(r'\s*', lines[i]).group(0)
            lines.insert(i, ''.join(indent + '/// ' + t.strip() + '\n' for t in text.split(' \\n ')))
    open(path, 'w').writelines(lines)
