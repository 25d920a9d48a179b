#!/usr/bin/env python3
"""Turns the plain `//` comments of C++ headers into Doxygen doc comments, in place.

A one-off, mechanical conversion (issue 26); its output was reviewed and edited by hand.
  - the file's header comment (the `//` lines before `#pragma once`) becomes a `/// @file` block;
  - a block of full-line `//` comments directly above a declaration (no blank line between), at
    namespace or class scope (never inside a function body), becomes `///`;
  - a trailing `// ...` after a complete declaration (ending in `;` or `,`, or a one-line inline
    function) becomes `///< ...`, and so do the `//` lines that continue it at the same column.
Section rules (`// ---- views ----`), tool directives (clang-format, NOLINT) and comments above
`namespace`, `#include`, `#if`, `}` or a blank line are left alone.
usage: doc_comments.py HEADER...
"""
import re
import sys

SCOPE_RE = re.compile(r'^\s*(?:(?:inline\s+)?namespace\b|class\b|struct\b|union\b|enum\b|extern\s+"C")')
DIRECTIVE_RE = re.compile(r'^\s*//\s*(clang-format|NOLINT|IWYU|namespace\b)')
RULE_RE = re.compile(r'^\s*//\s*-{2,}.*-{2,}\s*$')


def strip_code(line):
    """The code of a line without strings, chars and // comments; and the // column (or -1)."""
    out = []
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c in '"\'':
            q = c
            out.append(q)
            i += 1
            while i < n and line[i] != q:
                i += 2 if line[i] == '\\' else 1
            out.append(q)
            i += 1
        elif line.startswith('//', i):
            return ''.join(out), i
        elif line.startswith('/*', i):
            j = line.find('*/', i + 2)
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return ''.join(out), -1


def strip_template(text):
    """text without a leading template<...> (balanced)."""
    m = re.match(r'\s*template\s*<', text)
    if not m:
        return text
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {'<': 1, '>': -1}.get(text[i], 0)
        i += 1
    return text[i:]


def convert(lines):
    out = list(lines)
    # 1. the header comment
    i = 0
    while i < len(lines) and lines[i].startswith('//') and not lines[i].startswith('///'):
        i += 1
    if i > 0 and i < len(lines) and lines[i].startswith('#pragma once'):
        out[:i] = ['/// @file\n'] + ['///' + l[2:] for l in lines[:i]]
        offset = 1
    else:
        offset = 0
        i = 0
    start = i
    # 2. scan with a stack of brace kinds ('scope' or 'body')
    stack = []
    stmt = ''  # code since the last ; { or }
    pending = []  # indices of a full-line comment block
    cont_col = -1  # column of a trailing ///< that the next comment lines may continue
    in_block_comment = False
    in_macro = False
    for k in range(start, len(lines)):
        line = lines[k]
        o = k + offset
        stripped = line.strip()
        if in_macro:  # a continuation line of a #define
            in_macro = stripped.endswith('\\')
            continue
        if stripped.startswith('#'):
            in_macro = stripped.endswith('\\')
        if in_block_comment:
            if '*/' in line:
                in_block_comment = False
            continue
        in_scope = all(s == 'scope' for s in stack)
        if stripped.startswith('//'):
            col = line.index('//')
            if cont_col >= 0 and col == cont_col and in_scope:
                out[o] = line[:col] + '///<' + line[col + 2:]
                continue
            cont_col = -1
            pending.append(k)
            continue
        cont_col = -1
        if stripped.startswith('/*') and '*/' not in stripped:
            in_block_comment = True
            pending = []
            continue
        block, pending = pending, []
        if not stripped or stripped.startswith('#') and not stripped.startswith('#define'):
            continue
        code, ccol = strip_code(line)
        code_s = code.strip()
        is_decl_start = (in_scope and code_s and not code_s.startswith('}')
                         and not re.match(r'^(public|private|protected)\s*:', code_s)
                         and not re.match(r'^(inline\s+)?namespace\b', code_s))
        if block and is_decl_start:
            if not any(DIRECTIVE_RE.match(lines[b]) for b in block) and not (
                    len(block) == 1 and RULE_RE.match(lines[block[0]])):
                for b in block:
                    c = lines[b].index('//')
                    if lines[b].startswith('///', c):
                        continue
                    out[b + offset] = lines[b][:c] + '///' + lines[b][c + 2:]
        # trailing comment
        if ccol >= 0 and in_scope and not DIRECTIVE_RE.match(line[ccol:]):
            ends = code.rstrip()
            one_line_fn = ends.endswith('}') and '{' in ends and not SCOPE_RE.match(ends)
            if (ends.endswith(';') or ends.endswith(',') or one_line_fn) and not re.match(
                    r'^\s*}', ends) and not line[ccol:].startswith('///'):
                out[o] = line[:ccol] + '///<' + line[ccol + 2:]
                cont_col = ccol
        if stripped.startswith('#'):  # a #define: no braces to follow
            stmt = ''
            continue
        # braces
        for ch in code:
            if ch == '{':
                head = re.sub(r'^(\s*(public|private|protected)\s*:)+', '', strip_template(stmt))
                kind = 'scope' if SCOPE_RE.match(head) and '(' not in head else 'body'
                if kind == 'scope' and re.search(r'=\s*$', head):
                    kind = 'body'
                stack.append(kind)
                stmt = ''
            elif ch == '}':
                if stack:
                    stack.pop()
                stmt = ''
            elif ch == ';':
                stmt = ''
            else:
                stmt += ch
        stmt += ' '
    return out


def main():
    for path in sys.argv[1:]:
        with open(path) as f:
            lines = f.readlines()
        new = convert(lines)
        if new != lines:
            with open(path, 'w') as f:
                f.writelines(new)


if __name__ == '__main__':
    main()
